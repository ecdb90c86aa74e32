//! The flood guard (`[limits] requests_per_second_per_address`), end to
//! end: a client sending as fast as it can gets the rate through and `429`
//! with `Retry-After` for the rest, the probes and `server/discover` keep
//! answering meanwhile, the wait it is told works, and without the setting
//! nothing is refused. Figures are printed (`cargo test --test it
//! flood_guard -- --nocapture`).

use crate::support::*;
use futures_util::future::join_all;
use serde_json::{Value, json};
use sezzlee_gateway::settings::Settings;
use std::time::{Duration, Instant};

async fn gateway(per_second: Option<u32>) -> TestGateway {
    TestGateway::with_files(&[], |s: &mut Settings| {
        s.limits.requests_per_second_per_address = per_second;
    })
    .await
}

/// What one request of the flood got: its status, `Retry-After` and body.
struct Answer {
    status: u16,
    retry_after: Option<String>,
    body: Value,
}

async fn send(request: reqwest::RequestBuilder) -> Answer {
    let response = request.send().await.expect("request sent");
    let status = response.status().as_u16();
    let retry_after = response
        .headers()
        .get("retry-after")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    let text = response.text().await.unwrap_or_default();
    Answer {
        status,
        retry_after,
        body: serde_json::from_str(&text).unwrap_or(Value::Null),
    }
}

/// `n` `tools/list` requests at once, with `probes` `/healthz` and
/// `server/discover` requests among them; the flood's answers, the
/// probes' statuses and how long it all took.
async fn flood(gw: &TestGateway, n: usize, probes: usize) -> (Vec<Answer>, Vec<u16>, Duration) {
    let list = modern_request(1, "tools/list", json!({}));
    let discover = modern_request(2, "server/discover", json!({}));
    let started = Instant::now();
    let requests = (0..n).map(|_| send(modern_post(&gw.client, &gw.url, &list)));
    let probes = (0..probes).flat_map(|_| {
        [
            send(gw.client.get(format!("{}/healthz", gw.base))),
            send(modern_post(&gw.client, &gw.url, &discover)),
        ]
    });
    let (answers, probes) = tokio::join!(join_all(requests), join_all(probes));
    let took = started.elapsed();
    (answers, probes.iter().map(|a| a.status).collect(), took)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_gets_the_rate_through_and_429_with_retry_after_for_the_rest() {
    let gw = gateway(Some(10)).await;
    let (answers, probes, took) = flood(&gw, 100, 10).await;
    let passed = answers.iter().filter(|a| a.status == 200).count();
    let refused: Vec<&Answer> = answers.iter().filter(|a| a.status == 429).collect();
    println!(
        "flood guard: 100 requests at once in {} ms: {passed} answered 200, {} refused 429",
        took.as_millis(),
        refused.len()
    );
    assert_eq!(passed + refused.len(), 100, "only 200 or 429");
    // One second's worth at once, then 10 a second for as long as the
    // flood lasted.
    let accrued = (took.as_secs_f64() * 10.0).floor() as usize;
    assert!(
        (10..=11 + accrued).contains(&passed),
        "{passed} through in {} ms",
        took.as_millis()
    );
    for answer in &refused {
        let seconds: u64 = answer
            .retry_after
            .as_deref()
            .expect("a 429 says when to retry")
            .parse()
            .expect("Retry-After in whole seconds");
        assert!(seconds >= 1, "Retry-After {seconds}");
        assert_eq!(answer.body["jsonrpc"], "2.0", "{}", answer.body);
        assert!(answer.body.get("id").is_none(), "{}", answer.body);
        assert_eq!(answer.body["error"]["code"], -32000, "{}", answer.body);
        let message = answer.body["error"]["message"].as_str().unwrap_or("");
        assert!(
            message.contains("127.0.0.1") && message.contains("retry after"),
            "{message}"
        );
    }
    // The probes and the load balancer's discover answered throughout.
    assert!(probes.iter().all(|s| *s == 200), "{probes:?}");
    assert_eq!(gw.get("/healthz", &[]).await.status, 200);
    assert_eq!(gw.get("/readyz", &[]).await.status, 200);
    assert_eq!(gw.modern("server/discover", json!({})).await.status, 200);

    // Counted: /status and /metrics, which are not limited either.
    let status = gw.status().await;
    assert_eq!(
        status["limits"]["floodRefused"],
        json!(refused.len()),
        "{}",
        status["limits"]
    );
    assert_eq!(status["limits"]["requestsPerSecondPerAddress"], 10);
    let metrics = gw.metrics().await;
    assert_eq!(
        metric(&metrics, "sezzlee_flood_refused_total"),
        Some(refused.len() as f64)
    );

    // Waiting what the last refusal said gets a request through.
    let wait: u64 = refused
        .iter()
        .filter_map(|a| a.retry_after.as_deref()?.parse().ok())
        .max()
        .unwrap_or(1);
    tokio::time::sleep(Duration::from_secs(wait)).await;
    let after = gw.modern("tools/list", json!({})).await;
    assert_eq!(after.status, 200, "after {wait} s: {}", after.text);

    // GET and DELETE of the endpoint spend the same allowance (405 while
    // it lasts, then 429).
    let mut statuses = Vec::new();
    for n in 0..15 {
        let method = if n % 2 == 0 {
            reqwest::Method::GET
        } else {
            reqwest::Method::DELETE
        };
        statuses.push(gw.request(method).await.status);
    }
    assert!(
        statuses.iter().all(|s| [405, 429].contains(s)),
        "{statuses:?}"
    );
    assert!(statuses.contains(&429), "{statuses:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_the_setting_nothing_is_refused() {
    let gw = gateway(None).await;
    let (answers, probes, took) = flood(&gw, 100, 5).await;
    let passed = answers.iter().filter(|a| a.status == 200).count();
    println!(
        "no flood guard: 100 requests at once in {} ms: {passed} answered 200",
        took.as_millis()
    );
    assert_eq!(passed, 100);
    assert!(probes.iter().all(|s| *s == 200), "{probes:?}");
    let status = gw.status().await;
    assert_eq!(status["limits"]["floodRefused"], 0);
    assert_eq!(
        metric(&gw.metrics().await, "sezzlee_flood_refused_total"),
        Some(0.0)
    );
}

#[test]
fn a_rate_of_zero_is_refused_naming_the_setting() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sezzlee.toml");
    std::fs::write(&path, "[limits]\nrequests_per_second_per_address = 0\n").unwrap();
    let refused = Settings::resolve(&Default::default(), Some(&path)).expect_err("0 is refused");
    assert!(
        refused
            .to_string()
            .contains("limits.requests_per_second_per_address"),
        "{refused}"
    );
    std::fs::write(&path, "[limits]\nrequests_per_second_per_address = 5\n").unwrap();
    let settings = Settings::resolve(&Default::default(), Some(&path)).expect("5 is fine");
    assert_eq!(settings.limits.requests_per_second_per_address, Some(5));
}
