//! Limits shared by replicas through a real Redis (`redis-server` from
//! Debian, started here on a loopback port; `SEZZLEE_TEST_REDIS` names it,
//! else it is looked up on the PATH; missing, the tests say SKIPPED, and
//! fail under CI). Two gateways share one Redis: a caller spread over both
//! gets its rate once; Redis stopped, both go on with local limits and say
//! so; Redis back, sharing resumes.

use crate::support::*;
use serde_json::json;
use sezzlee_gateway::settings::{LimitsSettings, Settings};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

fn redis_server() -> Option<String> {
    if let Ok(path) = std::env::var("SEZZLEE_TEST_REDIS") {
        return Some(path);
    }
    ["/usr/bin/redis-server", "/usr/local/bin/redis-server"]
        .iter()
        .find(|path| std::path::Path::new(path).exists())
        .map(|path| path.to_string())
}

macro_rules! redis_or_skip {
    () => {
        match redis_server() {
            Some(path) => path,
            None => {
                assert!(
                    std::env::var("CI").is_err(),
                    "redis-server is missing under CI (.ci/run installs it)"
                );
                println!("SKIPPED: redis-server not found (set SEZZLEE_TEST_REDIS)");
                return;
            }
        }
    };
}

/// A redis-server on `port`, without persistence; killed when dropped.
struct Redis(Child);

impl Redis {
    fn start(binary: &str, port: u16) -> Redis {
        let child = Command::new(binary)
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
            .args(["--save", "", "--appendonly", "no"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("redis-server starts");
        let deadline = Instant::now() + Duration::from_secs(10);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(Instant::now() < deadline, "redis-server never listened");
            std::thread::sleep(Duration::from_millis(20));
        }
        Redis(child)
    }
}

impl Drop for Redis {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

async fn replica(url: &str, limits: &LimitsSettings) -> TestGateway {
    let limits = LimitsSettings {
        redis_url: Some(url.to_string()),
        ..limits.clone()
    };
    let gw = TestGateway::start(&shipped_catalogs(), |s: &mut Settings| s.limits = limits).await;
    gw.gateway
        .limits
        .connect_shared()
        .await
        .expect("Redis answers");
    gw
}

/// search_tools: whether it was allowed.
async fn allowed(gw: &TestGateway) -> bool {
    let reply = gw.tool("search_tools", json!({"query": "orders"})).await;
    if reply.is_error {
        assert_eq!(reply.payload["error"], "rate_limited", "{}", reply.payload);
    }
    !reply.is_error
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_replicas_share_one_rate_fall_back_when_redis_stops_and_share_again() {
    let binary = redis_or_skip!();
    let port = free_port();
    let url = format!("redis://127.0.0.1:{port}/0");
    let redis = Redis::start(&binary, port);
    // 600 a minute (10 a second), one second's worth at once.
    let limits = LimitsSettings {
        search_per_minute: Some(600),
        burst_seconds: 1,
        ..LimitsSettings::default()
    };
    let a = replica(&url, &limits).await;
    let b = replica(&url, &limits).await;

    // 100 calls a second, alternating replicas, for 5 s: the rate once.
    let started = Instant::now();
    let mut passed = 0u64;
    for call in 0..500u64 {
        tokio::time::sleep_until((started + Duration::from_millis(call * 10)).into()).await;
        let gw = if call % 2 == 0 { &a } else { &b };
        passed += u64::from(allowed(gw).await);
    }
    let elapsed = started.elapsed().as_secs_f64();
    let expected = 10.0 + 10.0 * elapsed;
    eprintln!(
        "shared: {passed} passed in {elapsed:.2} s over two replicas; expected {expected:.0}"
    );
    assert!(
        (passed as f64 - expected).abs() <= expected * 0.05,
        "{passed} passed, expected {expected:.0} ± 5 % (twice that: not shared)"
    );
    let status = a.status().await;
    assert_eq!(status["limits"]["shared"], true, "{}", status["limits"]);
    assert_eq!(status["limits"]["redis"]["up"], true);
    assert!(
        !status["limits"]["redis"]["url"]
            .as_str()
            .unwrap()
            .contains('@')
    );

    // Redis stops: both replicas keep serving, each on its own.
    drop(redis);
    tokio::time::sleep(Duration::from_millis(1_200)).await;
    let mut served = [0u64; 2];
    for (n, gw) in [&a, &b].into_iter().enumerate() {
        for _ in 0..5 {
            served[n] += u64::from(allowed(gw).await);
        }
    }
    assert!(
        served[0] > 0 && served[1] > 0,
        "both serve without Redis: {served:?}"
    );
    for gw in [&a, &b] {
        let status = gw.status().await;
        assert_eq!(status["limits"]["shared"], false, "{}", status["limits"]);
        assert_eq!(status["limits"]["redis"]["up"], false);
        assert!(status["limits"]["redis"]["lastError"].is_string());
    }
    let metrics = a.metrics().await;
    assert_eq!(metric(&metrics, "sezzlee_limits_redis_up"), Some(0.0));

    // Redis back on the same port: sharing resumes (after the retry pause).
    let _redis = Redis::start(&binary, port);
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let _ = allowed(&a).await;
        let status = a.status().await;
        if status["limits"]["shared"] == true {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "sharing never resumed: {}",
            status["limits"]
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test]
async fn a_redis_that_does_not_answer_at_start_is_refused_naming_the_setting() {
    let port = free_port();
    let limits = LimitsSettings {
        redis_url: Some(format!("redis://127.0.0.1:{port}/0")),
        ..LimitsSettings::default()
    };
    let gw = TestGateway::start(&shipped_catalogs(), |s: &mut Settings| s.limits = limits).await;
    let refused = gw
        .gateway
        .limits
        .connect_shared()
        .await
        .expect_err("nothing listens there");
    assert!(!refused.is_empty());
    // `sezzlee serve` exits 2 naming limits.redis_url.
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("sezzlee.toml");
    std::fs::write(
        &config,
        format!("[limits]\nredis_url = \"redis://127.0.0.1:{port}/0\"\n"),
    )
    .unwrap();
    let output = serve_command(&shipped_catalogs())
        .arg("--config")
        .arg(&config)
        .output()
        .expect("sezzlee runs");
    assert_eq!(output.status.code(), Some(2), "{output:?}");
    let log = String::from_utf8_lossy(&output.stdout).to_string()
        + &String::from_utf8_lossy(&output.stderr);
    assert!(log.contains("limits.redis_url"), "{log}");
    // A malformed URL is refused before anything runs.
    std::fs::write(&config, "[limits]\nredis_url = \"http://nowhere\"\n").unwrap();
    let refused = Settings::resolve(&Default::default(), Some(&config)).expect_err("refused");
    assert!(
        refused.to_string().contains("limits.redis_url"),
        "{refused}"
    );
}
