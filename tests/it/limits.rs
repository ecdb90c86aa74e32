//! Limits between callers and backends (`[limits]`), end to end: a real
//! gateway, a scripted backend written here that counts what reaches it
//! and answers what each test asks (a status, a `Retry-After`), and a
//! caller flooding at ten times its rate.

use crate::support::*;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use sezzlee_gateway::settings::{LimitsSettings, Settings};
use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A backend that answers from a script (then 200), counting requests.
#[derive(Default)]
struct Scripted {
    hits: AtomicU64,
    script: Mutex<VecDeque<(u16, Option<&'static str>)>>,
}

async fn scripted(State(backend): State<Arc<Scripted>>, uri: axum::http::Uri) -> Response {
    backend.hits.fetch_add(1, Ordering::SeqCst);
    if uri.path() == "/slow" {
        tokio::time::sleep(Duration::from_millis(400)).await;
    }
    let next = backend.script.lock().unwrap().pop_front();
    let (status, retry_after) = next.unwrap_or((200, None));
    let mut response = axum::Json(json!({"status": status})).into_response();
    *response.status_mut() = axum::http::StatusCode::from_u16(status).unwrap();
    if let Some(value) = retry_after {
        response
            .headers_mut()
            .insert("retry-after", value.parse().unwrap());
    }
    response
}

async fn backend() -> (String, Arc<Scripted>) {
    let state = Arc::new(Scripted::default());
    let app = axum::Router::new()
        .fallback(scripted)
        .with_state(state.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    (format!("http://{address}"), state)
}

fn document(base: &str) -> String {
    json!({
        "openapi": "3.1.0",
        "info": {"title": "Things", "version": "1"},
        "servers": [{"url": base}],
        "paths": {
            "/thing": {"get": {
                "operationId": "get_thing",
                "summary": "Gets the thing.",
                "responses": {"200": {"description": "ok"}}
            }},
            "/slow": {"get": {
                "operationId": "get_slow",
                "summary": "Gets the slow thing.",
                "responses": {"200": {"description": "ok"}}
            }}
        }
    })
    .to_string()
}

async fn gateway(base: &str, limits: LimitsSettings) -> TestGateway {
    TestGateway::with_files(&[("things.json", document(base))], |s: &mut Settings| {
        s.limits = limits;
    })
    .await
}

/// invoke_tool get_thing as `subject` (an unverified caller without auth:
/// the test gateways have none, so every caller is anonymous unless a
/// header says otherwise: here they are told apart by address, per
/// `per_address`, or share the anonymous allowance).
async fn invoke(gw: &TestGateway) -> ToolReply {
    gw.tool("invoke_tool", json!({"name": "get_thing"})).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_caller_at_ten_times_its_rate_gets_its_rate_through_and_the_wait_it_is_told_works() {
    let (base, backend) = backend().await;
    // 300 a minute (5 a second), one second's worth at once.
    let limits = LimitsSettings {
        invoke_per_minute: Some(300),
        burst_seconds: 1,
        ..LimitsSettings::default()
    };
    let gw = gateway(&base, limits).await;
    let started = Instant::now();
    let seconds = 10;
    let (mut passed, mut limited) = (0u64, 0u64);
    let mut retry_after_ms = 0;
    // 50 calls a second, ten times the rate, for ten seconds.
    for call in 0..(50 * seconds) {
        let due = started + Duration::from_millis(call * 20);
        tokio::time::sleep_until(due.into()).await;
        let reply = invoke(&gw).await;
        if reply.is_error {
            assert_eq!(reply.payload["error"], "rate_limited", "{}", reply.payload);
            assert_eq!(reply.payload["retryable"], true);
            assert_eq!(reply.payload["limit"], "invoke_per_minute");
            assert_eq!(reply.payload["mayHaveReachedBackend"], false);
            retry_after_ms = reply.payload["retryAfterMs"]
                .as_u64()
                .expect("retryAfterMs");
            limited += 1;
        } else {
            passed += 1;
        }
    }
    let elapsed = started.elapsed().as_secs_f64();
    // The burst (5) plus 5 a second for the time the flood lasted.
    let expected = 5.0 + 5.0 * elapsed;
    eprintln!("{passed} passed, {limited} limited in {elapsed:.2} s; expected {expected:.0}");
    assert!(
        (passed as f64 - expected).abs() <= expected * 0.05,
        "{passed} passed, expected {expected:.0} ± 5 %"
    );
    assert_eq!(
        backend.hits.load(Ordering::SeqCst),
        passed,
        "limited calls sent nothing"
    );
    // Waiting what the last refusal said is enough.
    assert!(
        retry_after_ms > 0 && retry_after_ms <= 200,
        "{retry_after_ms}"
    );
    tokio::time::sleep(Duration::from_millis(retry_after_ms)).await;
    let reply = invoke(&gw).await;
    assert!(!reply.is_error, "{}", reply.payload);
    // Search has its own allowance: it is not spent by the flood.
    gw.search(json!({"query": "thing"})).await;
    let status = gw.status().await;
    assert!(
        status["limits"]["limited"]["invoke_per_minute/anonymous"]
            .as_u64()
            .is_some_and(|n| n == limited),
        "{}",
        status["limits"]
    );
    let metrics = gw.metrics().await;
    assert_eq!(
        metric(
            &metrics,
            "sezzlee_rate_limited_total{limit=\"invoke_per_minute\",key=\"anonymous\"}"
        ),
        Some(limited as f64)
    );
}

#[tokio::test]
async fn a_backend_s_retry_after_is_honoured_locally_then_calls_go_again() {
    let (base, backend) = backend().await;
    backend.script.lock().unwrap().push_back((429, Some("2")));
    let gw = gateway(&base, LimitsSettings::default()).await;
    let first = invoke(&gw).await;
    assert_eq!(first.payload["status"], 429, "{}", first.payload);
    let held = invoke(&gw).await;
    // The wait was measured when the gateway refused: counted from now,
    // after its answer, it is enough.
    let answered = Instant::now();
    assert_eq!(held.payload["error"], "rate_limited", "{}", held.payload);
    assert_eq!(held.payload["limit"], "backend_retry_after");
    let wait = held.payload["retryAfterMs"].as_u64().unwrap();
    assert!((1_000..=2_000).contains(&wait), "{wait}");
    assert_eq!(
        backend.hits.load(Ordering::SeqCst),
        1,
        "the held call sent nothing"
    );
    tokio::time::sleep_until((answered + Duration::from_millis(wait)).into()).await;
    let again = invoke(&gw).await;
    assert!(!again.is_error, "{}", again.payload);
    assert_eq!(backend.hits.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn the_breaker_opens_after_failures_sends_nothing_then_one_probe_closes_it() {
    let (base, backend) = backend().await;
    {
        let mut script = backend.script.lock().unwrap();
        script.push_back((503, None));
        script.push_back((500, None));
        // A 503 that names a time is honoured too, and counts.
        script.push_back((503, Some("0")));
    }
    let limits = LimitsSettings {
        breaker_failures: 3,
        breaker_cooldown_ms: 500,
        ..LimitsSettings::default()
    };
    let gw = gateway(&base, limits).await;
    for expected in [503, 500, 503] {
        let reply = invoke(&gw).await;
        assert_eq!(reply.payload["status"], expected, "{}", reply.payload);
    }
    let opened = Instant::now();
    for _ in 0..5 {
        let reply = invoke(&gw).await;
        assert_eq!(reply.payload["error"], "rate_limited", "{}", reply.payload);
        assert_eq!(reply.payload["limit"], "backend_breaker");
    }
    assert_eq!(
        backend.hits.load(Ordering::SeqCst),
        3,
        "nothing sent while open"
    );
    let status = gw.status().await;
    assert_eq!(
        status["limits"]["breakers"][0]["state"], "open",
        "{}",
        status["limits"]
    );
    tokio::time::sleep_until((opened + Duration::from_millis(550)).into()).await;
    // One probe goes (the script is empty: it succeeds) and closes it.
    let probe = invoke(&gw).await;
    assert!(!probe.is_error, "{}", probe.payload);
    let after = invoke(&gw).await;
    assert!(!after.is_error, "{}", after.payload);
    assert_eq!(backend.hits.load(Ordering::SeqCst), 5);
    let status = gw.status().await;
    assert_eq!(
        status["limits"]["breakers"],
        json!([]),
        "{}",
        status["limits"]
    );
}

const BOT_KEY: (&str, &str) = ("SEZZLEE_LIMITS_BOT_KEY_7F31", "limits-bot-key-4a9c2e");

/// `tool` with `arguments` as the API key's caller (`key`) or
/// anonymously: the answer's JSON.
async fn call_as(gw: &TestGateway, key: Option<&str>, tool: &str, arguments: Value) -> Value {
    let reply = gw
        .modern_custom(
            "tools/call",
            json!({"name": tool, "arguments": arguments}),
            |_, headers| {
                if let Some(key) = key {
                    headers.push(("x-api-key", key.to_string()));
                }
            },
        )
        .await;
    let text = reply.json()["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    serde_json::from_str(&text).unwrap_or(Value::Null)
}

/// search_tools as the API key's caller (`key`) or anonymously.
async fn search_as(gw: &TestGateway, key: Option<&str>) -> Value {
    call_as(gw, key, "search_tools", json!({"query": "thing"})).await
}

/// `[auth]` with one API key (`BOT_KEY`, subject `bot`; its variable is
/// set by the test before the gateway's settings are made).
fn bot_auth() -> sezzlee_gateway::settings::AuthSettings {
    use sezzlee_gateway::settings::{ApiKeySettings, AuthSettings};
    AuthSettings {
        api_keys: vec![ApiKeySettings {
            header: "x-api-key".to_string(),
            key_env: BOT_KEY.0.to_string(),
            subject: "bot".to_string(),
            ..ApiKeySettings::default()
        }],
        ..AuthSettings::default()
    }
}

#[tokio::test]
async fn a_group_s_rate_replaces_the_default_for_its_callers_and_each_caller_has_its_own() {
    use sezzlee_gateway::settings::LimitGroup;
    set_test_variable(BOT_KEY.0, BOT_KEY.1);
    let (base, _backend) = backend().await;
    let gw = TestGateway::with_files(&[("things.json", document(&base))], |s: &mut Settings| {
        s.limits = LimitsSettings {
            search_per_minute: Some(60),
            burst_seconds: 1,
            groups: vec![LimitGroup {
                subject: Some("bot".to_string()),
                search_per_minute: Some(6_000),
                ..LimitGroup::default()
            }],
            ..LimitsSettings::default()
        };
        s.auth = Some(bot_auth());
    })
    .await;
    // The anonymous caller is in no group: one search a second.
    assert!(search_as(&gw, None).await.get("error").is_none());
    let second = search_as(&gw, None).await;
    assert_eq!(second["limit"], "search_per_minute", "{second}");
    // load_tool spends the same allowance.
    let load = gw.tool("load_tool", json!({"name": "get_thing"})).await;
    assert_eq!(load.payload["error"], "rate_limited", "{}", load.payload);
    // The bot has its group's rate (100 a second, as many at once), and
    // an allowance of its own: the anonymous one is spent, not the bot's.
    for n in 0..20 {
        let found = search_as(&gw, Some(BOT_KEY.1)).await;
        assert!(found.get("error").is_none(), "search {n}: {found}");
    }
}

#[test]
fn bad_limits_are_refused_naming_the_setting() {
    let cases = [
        (
            "[limits]\ninvoke_per_minute = 0\n",
            "limits.invoke_per_minute",
        ),
        ("[limits]\nsearch_per_minute = -5\n", "search_per_minute"),
        ("[limits]\nburst_seconds = 0\n", "limits.burst_seconds"),
        (
            "[limits]\nbreaker_cooldown_ms = 0\n",
            "limits.breaker_cooldown_ms",
        ),
        (
            "[[limits.groups]]\ninvoke_per_minute = 5\n",
            "limits.groups",
        ),
        ("[limits]\ninvoke_per_minit = 5\n", "invoke_per_minit"),
    ];
    for (text, named) in cases {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sezzlee.toml");
        std::fs::write(&path, text).unwrap();
        let refused = Settings::resolve(&Default::default(), Some(&path))
            .expect_err(&format!("{text} is refused"));
        assert!(refused.to_string().contains(named), "{text}: {refused}");
    }
}

/// A sidecar's quotas: the document's calls per interval for everyone
/// together, an operation's calls in flight; a call over either answers
/// `rate_limited` and sends nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sidecar_quotas_hold_calls_per_interval_and_calls_in_flight() {
    let (base, backend) = backend().await;
    let sidecar = "backend:\n  quota: {requests: 3, perSeconds: 3600}\ntools:\n  GET /slow: {quota: {concurrent: 1}}\n";
    let gw = TestGateway::with_files(
        &[
            ("things.json", document(&base)),
            ("things.sezzlee.yaml", sidecar.to_string()),
        ],
        |_| {},
    )
    .await;
    // One slow call holds the operation's only slot: a second at the same
    // time is refused; the document's quota counts both that went.
    let gw = Arc::new(gw);
    let slow = {
        let gw = gw.clone();
        tokio::spawn(async move { gw.tool("invoke_tool", json!({"name": "get_slow"})).await })
    };
    tokio::time::sleep(Duration::from_millis(100)).await;
    let second = gw.tool("invoke_tool", json!({"name": "get_slow"})).await;
    assert_eq!(
        second.payload["limit"], "quota_concurrent",
        "{}",
        second.payload
    );
    assert_eq!(second.payload["retryable"], true);
    let first = slow.await.unwrap();
    assert!(!first.is_error, "{}", first.payload);
    // Its slot is free again.
    let third = gw.tool("invoke_tool", json!({"name": "get_slow"})).await;
    assert!(!third.is_error, "{}", third.payload);
    // Three calls an hour for the whole document: one more goes, then none.
    let fourth = invoke(&gw).await;
    assert!(!fourth.is_error, "{}", fourth.payload);
    let refused = invoke(&gw).await;
    assert_eq!(
        refused.payload["limit"], "quota_requests",
        "{}",
        refused.payload
    );
    assert!(refused.payload["retryAfterMs"].as_u64().unwrap() > 60_000);
    assert_eq!(
        backend.hits.load(Ordering::SeqCst),
        3,
        "refused calls sent nothing"
    );
}

#[test]
fn a_quota_that_cannot_be_meant_refuses_the_sidecar_at_its_key() {
    use sezzlee_catalog::{Catalog, Sources};
    for (quota, pointer) in [
        ("{requests: 0}", "/backend/quota/requests"),
        ("{concurrent: 0}", "/backend/quota/concurrent"),
        ("{requests: 5, perSeconds: 0}", "/backend/quota/perSeconds"),
        ("{perSeconds: 60}", "/backend/quota/perSeconds"),
        ("{}", "/backend/quota"),
        ("{requests: 5, per: everyone}", "/backend/quota/per"),
    ] {
        let sources = Sources::from_files(
            [
                (
                    "things.json".to_string(),
                    document("http://127.0.0.1:9").into_bytes(),
                ),
                (
                    "things.sezzlee.yaml".to_string(),
                    format!("backend:\n  quota: {quota}\n").into_bytes(),
                ),
            ],
            None,
        );
        let catalog = Catalog::build(&sources);
        let refused = catalog
            .diagnostics
            .iter()
            .find(|d| d.code == "invalid_configuration")
            .unwrap_or_else(|| panic!("{quota} is refused"));
        assert_eq!(refused.pointer, pointer, "{quota}: {}", refused.message);
    }
}

/// A quota `per: caller` counts each caller's calls on their own.
#[tokio::test]
async fn a_quota_per_caller_gives_each_caller_its_own() {
    set_test_variable(BOT_KEY.0, BOT_KEY.1);
    let (base, backend) = backend().await;
    let sidecar = "backend:\n  quota: {requests: 1, perSeconds: 3600, per: caller}\n";
    let gw = TestGateway::with_files(
        &[
            ("things.json", document(&base)),
            ("things.sezzlee.yaml", sidecar.to_string()),
        ],
        |s: &mut Settings| s.auth = Some(bot_auth()),
    )
    .await;
    let invoke_as = async |key: Option<&str>| {
        call_as(&gw, key, "invoke_tool", json!({"name": "get_thing"})).await
    };
    assert!(invoke_as(None).await.get("error").is_none());
    assert_eq!(invoke_as(None).await["limit"], "quota_requests");
    // The bot's own allowance is untouched by the anonymous caller's.
    assert!(invoke_as(Some(BOT_KEY.1)).await.get("error").is_none());
    assert_eq!(invoke_as(Some(BOT_KEY.1)).await["limit"], "quota_requests");
    assert_eq!(backend.hits.load(Ordering::SeqCst), 2);
}

/// Connection failures and time-outs trip the breaker as `5xx` do, and
/// nothing is sent while it is open.
#[tokio::test]
async fn refused_connections_and_time_outs_trip_the_breaker_too() {
    let limits = LimitsSettings {
        breaker_failures: 2,
        breaker_cooldown_ms: 60_000,
        ..LimitsSettings::default()
    };
    // A port nothing listens on: every call is refused at connect.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let nowhere = format!("http://{}", closed.local_addr().unwrap());
    drop(closed);
    let gw = gateway(&nowhere, limits.clone()).await;
    for _ in 0..2 {
        let reply = invoke(&gw).await;
        assert_eq!(
            reply.payload["error"], "backend_unavailable",
            "{}",
            reply.payload
        );
    }
    let open = invoke(&gw).await;
    assert_eq!(open.payload["limit"], "backend_breaker", "{}", open.payload);

    // A backend slower than the call's time-out.
    let (base, backend) = backend().await;
    let sidecar = "backend:\n  timeoutMs: 100\n";
    let gw = TestGateway::with_files(
        &[
            ("things.json", document(&base)),
            ("things.sezzlee.yaml", sidecar.to_string()),
        ],
        |s: &mut Settings| s.limits = limits,
    )
    .await;
    for _ in 0..2 {
        let reply = gw.tool("invoke_tool", json!({"name": "get_slow"})).await;
        assert_eq!(
            reply.payload["error"], "backend_timeout",
            "{}",
            reply.payload
        );
    }
    let open = gw.tool("invoke_tool", json!({"name": "get_slow"})).await;
    assert_eq!(open.payload["limit"], "backend_breaker", "{}", open.payload);
    assert_eq!(
        backend.hits.load(Ordering::SeqCst),
        2,
        "nothing sent while open"
    );
}
