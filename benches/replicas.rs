//! Three replicas behind nginx against one replica behind the same nginx,
//! in one run: requests per second of `tools/call search_tools`
//! and of a pinned `tools/call invoke_tool` at 16 concurrent callers.
//!
//! Three `sezzlee serve` processes (this build's binary) serve the shipped
//! demo catalog, each with its built-in demo backend (so `get_order` is
//! answered by the replica that invoked it, one more loopback hop). One
//! nginx (a child process, `master_process on`, one worker per core)
//! listens twice: one port proxies to an upstream of the three replicas
//! (round robin), the other to an upstream of the first replica alone; both
//! with HTTP/1.1 keep-alive to the replicas, the configuration of
//! `tests/it/rolling_update.rs` without the retries. The client is a
//! keep-alive reqwest client on a single-threaded tokio runtime, sending
//! requests as a correct 2026-07-28 client does (`_meta`,
//! `MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name`).
//!
//! The two targets alternate in rounds (three then one, then one then
//! three, …) so a noisy machine's noise hits both; each figure is the
//! median of its rounds. On one machine the replicas share its cores: the
//! ratio says what more processes cost or give there, not what replicas on
//! machines of their own give.
//!
//! Run by hand (never in CI; needs nginx, `apt-get install nginx-light`):
//! `cargo bench --bench replicas`. Configuration (env):
//! - `REPLICAS_BENCH_ROUNDS` (default 6): rounds per workload;
//! - `REPLICAS_BENCH_MILLIS` (default 2000): how long each target is
//!   driven in a round;
//! - `REPLICAS_BENCH_CONCURRENCY` (default 16): concurrent callers;
//! - `SEZZLEE_TEST_NGINX`: the nginx binary (else `nginx` on `PATH` or in
//!   `/usr/sbin`).

/// A correct 2026-07-28 request (shared with the tests).
#[path = "../tests/it/mcp_request.rs"]
mod mcp_request;
#[path = "support/nginx.rs"]
mod nginx;

use futures_util::future::join_all;
use mcp_request::Post;
use serde_json::{Value, json};
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

const SHIPPED: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/catalogs");
const REPLICAS: usize = 3;

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .filter(|&v| v > 0)
        .unwrap_or(default)
}

/// `sezzlee serve` on the shipped catalog and an ephemeral port; returns
/// the process and its port.
fn replica() -> (nginx::Stopped, u16) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_sezzlee"))
        .current_dir(std::env::temp_dir())
        .args(["serve", "--catalogs", SHIPPED, "--listen", "127.0.0.1:0"])
        .args(["--watch", "off", "--log-format", "text"])
        .env("RUST_LOG", "info")
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("sezzlee serve starts");
    let stderr = child.stderr.take().unwrap();
    let (sender, listening) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if let Some(at) = line.find("listening on http://127.0.0.1:") {
                let port: String = line[at + "listening on http://127.0.0.1:".len()..]
                    .chars()
                    .take_while(char::is_ascii_digit)
                    .collect();
                let _ = sender.send(port.parse::<u16>().unwrap());
            }
        }
    });
    let port = listening
        .recv_timeout(Duration::from_secs(60))
        .expect("sezzlee serve says where it listens");
    (nginx::Stopped(child), port)
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn nginx_conf(three: u16, one: u16, replicas: &[u16]) -> String {
    let servers = |ports: &[u16]| -> String {
        ports
            .iter()
            .map(|port| format!("        server 127.0.0.1:{port};\n"))
            .collect()
    };
    format!(
        r#"{}    upstream three {{
{}        keepalive 64;
        keepalive_timeout 15s;
    }}
    upstream one {{
{}        keepalive 64;
        keepalive_timeout 15s;
    }}
    proxy_http_version 1.1;
    proxy_set_header Connection "";
    proxy_buffering off;
    server {{
        listen 127.0.0.1:{three};
        location / {{ proxy_pass http://three; }}
    }}
    server {{
        listen 127.0.0.1:{one};
        location / {{ proxy_pass http://one; }}
    }}
}}
"#,
        nginx::conf_head("benches/replicas.rs"),
        servers(replicas),
        servers(&replicas[..1]),
    )
}

/// A 2026-07-28 `tools/call` with the `_meta` and headers a correct
/// client sends (`mcp_request.rs`).
fn tool_call(name: &str, arguments: Value) -> Post {
    Post::new("tools/call", json!({"name": name, "arguments": arguments}))
}

async fn send(client: &reqwest::Client, url: &str, post: &Post) -> Value {
    let response = post
        .builder(client, url)
        .send()
        .await
        .expect("request sent");
    assert_eq!(response.status(), 200, "{url}");
    response.json().await.expect("a JSON answer")
}

/// Drives `url` with `concurrency` callers for `length`; returns requests
/// per second and the p50 latency.
async fn drive(
    client: &reqwest::Client,
    url: &str,
    request: &Post,
    concurrency: usize,
    length: Duration,
) -> (f64, Duration) {
    let answer = send(client, url, request).await;
    assert!(
        answer["result"]["isError"].is_null(),
        "{url} answered an error: {answer}"
    );
    let stop = Arc::new(AtomicBool::new(false));
    let started = Instant::now();
    let callers = (0..concurrency).map(|_| {
        let stop = stop.clone();
        async move {
            let mut latencies = Vec::new();
            while !stop.load(Ordering::Relaxed) {
                let sent = Instant::now();
                send(client, url, request).await;
                latencies.push(sent.elapsed());
            }
            latencies
        }
    });
    let timer = async {
        tokio::time::sleep(length).await;
        stop.store(true, Ordering::Relaxed);
    };
    let (results, ()) = tokio::join!(join_all(callers), timer);
    let took = started.elapsed();
    let mut latencies: Vec<Duration> = results.into_iter().flatten().collect();
    latencies.sort();
    let p50 = latencies[latencies.len() / 2];
    (latencies.len() as f64 / took.as_secs_f64(), p50)
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(|a, b| a.total_cmp(b));
    values[values.len() / 2]
}

fn main() {
    let Some(nginx) = nginx::binary() else {
        println!("SKIPPED replicas: no nginx here (apt-get install -y nginx-light)");
        return;
    };
    let rounds = env_usize("REPLICAS_BENCH_ROUNDS", 6);
    let length = Duration::from_millis(env_usize("REPLICAS_BENCH_MILLIS", 2000) as u64);
    let concurrency = env_usize("REPLICAS_BENCH_CONCURRENCY", 16);

    let mut processes = Vec::new();
    let mut ports = Vec::new();
    for _ in 0..REPLICAS {
        let (process, port) = replica();
        processes.push(process);
        ports.push(port);
    }
    let prefix = tempfile::tempdir().unwrap();
    let (three, one) = (free_port(), free_port());
    std::fs::write(
        prefix.path().join("nginx.conf"),
        nginx_conf(three, one, &ports),
    )
    .unwrap();
    let _nginx = nginx::Stopped(
        Command::new(&nginx)
            .arg("-p")
            .arg(prefix.path())
            .args(["-c", "nginx.conf", "-e", "stderr", "-g", "daemon off;"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .spawn()
            .expect("nginx starts"),
    );

    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let client = reqwest::Client::new();
        let urls = [
            ("3 replicas", format!("http://127.0.0.1:{three}/mcp")),
            ("1 replica", format!("http://127.0.0.1:{one}/mcp")),
        ];
        wait_for(&client, &urls[0].1).await;
        wait_for(&client, &urls[1].1).await;
        let loaded = send(&client, &urls[1].1, &tool_call("load_tool", json!({"name": "get_order"}))).await;
        let definition: Value =
            serde_json::from_str(loaded["result"]["content"][0]["text"].as_str().unwrap()).unwrap();
        let version = definition["version"].as_str().unwrap().to_string();
        let workloads = [
            (
                "search_tools",
                tool_call("search_tools", json!({"query": "cancel order"})),
            ),
            (
                "invoke_tool",
                tool_call(
                    "invoke_tool",
                    json!({"name": "get_order", "arguments": {"id": 1}, "version": version}),
                ),
            ),
        ];
        println!(
            "replicas: {REPLICAS} sezzlee processes vs 1 behind nginx ({}), {concurrency} callers, \
             {rounds} rounds of {} ms per target, {} cores",
            nginx.display(),
            length.as_millis(),
            std::thread::available_parallelism().map_or(0, |n| n.get())
        );
        println!("| workload | target | requests/s (median) | p50 (median) |");
        println!("|---|---|---|---|");
        for (workload, request) in &workloads {
            let mut rps = [Vec::new(), Vec::new()];
            let mut p50s = [Vec::new(), Vec::new()];
            for round in 0..rounds {
                let order = if round % 2 == 0 { [0, 1] } else { [1, 0] };
                for target in order {
                    let (per_second, p50) =
                        drive(&client, &urls[target].1, request, concurrency, length).await;
                    rps[target].push(per_second);
                    p50s[target].push(p50.as_secs_f64() * 1000.0);
                }
            }
            let medians: Vec<(f64, f64)> = (0..2)
                .map(|t| (median(&mut rps[t]), median(&mut p50s[t])))
                .collect();
            for (target, (per_second, p50)) in medians.iter().enumerate() {
                println!(
                    "| {workload} | {} | {per_second:.0} | {p50:.2} ms |",
                    urls[target].0
                );
            }
            println!(
                "replicas figure: {workload} at {concurrency} callers: 3 replicas / 1 replica = {:.2} \
                 (requests/s {:.0} vs {:.0})",
                medians[0].0 / medians[1].0,
                medians[0].0,
                medians[1].0
            );
        }
    });
    drop(processes);
}

/// Waits until nginx answers on `url` through a replica.
async fn wait_for(client: &reqwest::Client, url: &str) {
    let health = url.replace("/mcp", "/healthz");
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if client
            .get(&health)
            .send()
            .await
            .is_ok_and(|r| r.status().is_success())
        {
            return;
        }
        assert!(Instant::now() < deadline, "nginx does not answer on {url}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
