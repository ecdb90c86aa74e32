//! The soak: the real gateway binary under a mixed load for
//! minutes, a reload every second, its resources sampled from outside, and
//! a verdict that they stayed flat with no unexpected error. It exists
//! because a leak (memory, descriptors, tasks, listen-stream slots) hides
//! from every short test and shows only over time under churn.
//!
//! Run by hand with `scripts/soak.sh [MINUTES]`, or directly:
//! `cargo run --example soak -- --sezzlee target/release/sezzlee --seconds 600`.
//! `.ci/run` runs a short one (75 s) on the debug binary its `cargo test`
//! built; `scripts/soak.sh` uses a release build.
//!
//! # What it does
//! 1. Copies the catalogs folder (`--catalogs`, the shipped `catalogs/`)
//!    to a temporary folder and starts `sezzlee serve` on it, on a free
//!    loopback port, watching it (file-system events, default debounce).
//!    The shipped catalog's demo backend is built in, so invoke works end
//!    to end (the gateway calls its own `/demo`).
//! 2. Opens `--listeners` `subscriptions/listen` streams
//!    (`toolsListChanged`), each its own client and connection; none may
//!    reconnect: a stream that drops is an error.
//! 3. Runs `--callers` concurrent callers, half in the 2026-07-28 era and
//!    half in the `initialize` era, each repeating: `search_tools` (a
//!    query whose tool must be among the results), `load_tool` (always
//!    sent, never from a cache) and `invoke_tool` pinned to the version
//!    loaded, on read-only demo tools (so the backend's state, and with it
//!    the gateway's memory, has no reason to grow). A pinned call refused
//!    with `tool_changed` (the catalog changed between load and invoke) is
//!    loaded again and retried once, as the client library does: that is
//!    the contract, counted, not an error.
//! 4. Every second rewrites `--edit-file` by rename (as editors save):
//!    on odd ticks with a new text on the first operation's `summary`
//!    (its tool's version changes, the generation rises, every listener
//!    must be told), on even ticks with the same bytes (a reload that
//!    changes nothing and must notify no one).
//! 5. Every second samples the process from outside: VmRSS and Threads
//!    (`/proc/PID/status`), open descriptors (`/proc/PID/fd`), CPU time
//!    (`/proc/PID/stat`), and from `/status` the open listen streams, the
//!    alive tokio tasks (`runtime.aliveTasks`: summed over the runtimes
//!    the gateway counts, `runtime.runtimes`, printed at the end) and the
//!    generation.
//! 6. At the end: the generation must equal the content edits made; every
//!    listener must have received exactly each generation in turn; the
//!    gateway's `/metrics` tool-call counts must equal the calls sent; the
//!    listen streams must be released once their clients go; the gateway
//!    must stop on SIGTERM with status 0; its log must hold no `ERROR` and
//!    no panic.
//!
//! # Verdict
//! The first 20 % of the samples are warm-up (allocator and pools
//! growing to their working size) and are not judged. Of the rest, the
//! first window is the next 20 % of all samples and the last window the
//! last 20 %. Flat means:
//! - RSS: last-window median ≤ first-window median × 1.10 + 4 MiB;
//! - open descriptors and tokio tasks: last-window median ≤ first-window
//!   median + 4, and max − min after warm-up ≤ 2 × callers + 16 (what may
//!   come and go with the load: the gateway's pooled connections to its
//!   own demo backend, at most one per caller's invoke in flight, each two
//!   descriptors and two tasks, one per end; measured, the series are
//!   flat to within 1). Tasks are those of the runtimes `/status` counts;
//!   a leak of one descriptor or task per reload fails this in 75 s;
//! - threads: last-window median ≤ first-window median + 2, max − min ≤ 8
//!   (tokio's blocking pool starts threads for file work and ends them
//!   after 10 s idle);
//! - listen streams: exactly `--listeners` in every sample (max − min = 0);
//! - zero unexpected errors (any transport or protocol error, any tool
//!   failure other than a `tool_changed` the retry answered, a wrong
//!   answer, a lost stream, a missed or extra notification).
//!
//! Exit status: 0 flat and clean, 1 the verdict failed, 2 the soak could
//! not run. The samples go to `--csv` (default `target/soak-samples.csv`)
//! and the gateway's log to `--log` (default `target/soak-sezzlee.log`).

use clap::Parser;
use serde_json::{Value, json};
use sezzlee_client::listen::ListenOptions;
use sezzlee_client::{
    Client, ClientConfig, EraChoice, EraMemory, GatewayClient, ListenEvent, LoadOutcome, Search,
};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitCode, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

#[derive(Parser, Debug)]
#[command(about = "Soak the real gateway: mixed load, a reload a second, resources sampled")]
struct Args {
    /// The gateway binary (build it with `cargo build --release`).
    #[arg(long, default_value = "target/release/sezzlee")]
    sezzlee: PathBuf,
    /// The catalogs folder to serve (copied; the copy is edited).
    #[arg(long, default_value = "catalogs")]
    catalogs: PathBuf,
    /// The file (in the folder) rewritten every second.
    #[arg(long, default_value = "orders.yaml")]
    edit_file: String,
    /// How long to run, in seconds.
    #[arg(long, default_value_t = 600)]
    seconds: u64,
    /// Concurrent callers (half in each era).
    #[arg(long, default_value_t = 8)]
    callers: usize,
    /// Listen streams kept open (at most the gateway's per-caller cap, 16).
    #[arg(long, default_value_t = 8)]
    listeners: usize,
    /// Pause of each caller after each search/load/invoke round, in ms.
    #[arg(long, default_value_t = 2)]
    pause_ms: u64,
    /// Print every Nth sample (0: about 40 rows whatever the duration).
    #[arg(long, default_value_t = 0)]
    print_every: usize,
    /// Where the samples are written as CSV.
    #[arg(long, default_value = "target/soak-samples.csv")]
    csv: PathBuf,
    /// Where the gateway's log is written.
    #[arg(long, default_value = "target/soak-sezzlee.log")]
    log: PathBuf,
}

/// Queries and a tool each must find.
const QUERIES: [(&str, &str); 6] = [
    ("cancel an order", "cancel_order"),
    ("invoice of an order", "get_invoice"),
    ("open orders", "list_open_orders"),
    ("notes written on an order", "list_order_notes"),
    ("fetch one order by id", "get_order"),
    ("buy something", "create_order"),
];

/// The read-only demo tools invoked: name, and arguments for round `n`.
const TARGETS: [&str; 5] = [
    "get_order",
    "list_orders",
    "list_open_orders",
    "get_invoice",
    "list_order_notes",
];

fn target_arguments(name: &str, n: u64) -> Value {
    let id = 1 + n % 3;
    match name {
        "get_order" | "list_order_notes" => json!({"id": id}),
        "get_invoice" => json!({"orderId": id}),
        "list_orders" => json!({"limit": 5}),
        _ => json!({}),
    }
}

/// Whether an invoke's payload is the answer the demo backend gives.
fn invoke_answer_ok(name: &str, arguments: &Value, payload: &Value) -> bool {
    if payload.get("status").and_then(Value::as_u64) != Some(200) {
        return false;
    }
    let body = &payload["body"];
    match name {
        "get_order" => body.get("id") == arguments.get("id"),
        "get_invoice" => body.get("orderId") == arguments.get("orderId"),
        "list_open_orders" => body.as_array().is_some_and(|orders| {
            !orders.is_empty() && orders.iter().all(|o| o["status"] == "open")
        }),
        _ => body.is_array(),
    }
}

/// One tool's figures on the caller side.
#[derive(Default)]
struct ToolFigures {
    /// Calls sent (a retry counts again).
    sent: AtomicU64,
    /// Latencies of the rounds' calls, in microseconds.
    latencies: Mutex<Vec<u32>>,
}

impl ToolFigures {
    fn observe(&self, calls: u64, elapsed: Duration) {
        self.sent.fetch_add(calls, Ordering::Relaxed);
        let micros = u32::try_from(elapsed.as_micros()).unwrap_or(u32::MAX);
        lock(&self.latencies).push(micros);
    }
}

/// Everything the callers count.
#[derive(Default)]
struct Figures {
    tools: [ToolFigures; 3],
    /// Pinned invokes refused with `tool_changed`, loaded again and retried.
    retried: AtomicU64,
    /// Retries refused with `tool_changed` again (the catalog changed twice).
    changed_twice: AtomicU64,
    errors: AtomicU64,
    /// The first error messages.
    first_errors: Mutex<Vec<String>>,
}

impl Figures {
    fn error(&self, what: String) {
        self.errors.fetch_add(1, Ordering::Relaxed);
        let mut first = lock(&self.first_errors);
        if first.len() < 20 {
            first.push(what);
        }
    }

    fn requests(&self) -> u64 {
        self.tools
            .iter()
            .map(|t| t.sent.load(Ordering::Relaxed))
            .sum()
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|p| p.into_inner())
}

/// One caller's loop until `stop`.
async fn caller(
    index: usize,
    url: String,
    pause: Duration,
    stop: Arc<AtomicBool>,
    figures: Arc<Figures>,
) {
    let era = if index.is_multiple_of(2) {
        EraChoice::Modern
    } else {
        EraChoice::Legacy
    };
    let config = ClientConfig::new(url)
        .era(era)
        .timeout(Duration::from_secs(10))
        .memory(Arc::new(EraMemory::default()));
    let client = match Client::new(config) {
        Ok(client) => client,
        Err(err) => return figures.error(format!("caller {index}: {err}")),
    };
    let gateway = GatewayClient::new(client);
    let mut round = index as u64;
    while !stop.load(Ordering::Relaxed) {
        round += 1;
        let (query, wanted) = QUERIES[(round % QUERIES.len() as u64) as usize];
        let started = Instant::now();
        let searched = gateway.search(Search::new(query)).await;
        figures.tools[0].observe(1, started.elapsed());
        match searched {
            Ok(result) if !result.is_error => {
                let found = result.json().is_some_and(|answer| {
                    answer["results"]
                        .as_array()
                        .is_some_and(|results| results.iter().any(|r| r["name"] == wanted))
                });
                if !found {
                    figures.error(format!(
                        "search '{query}' did not find {wanted}: {}",
                        result.text()
                    ));
                }
            }
            Ok(result) => figures.error(format!("search '{query}' failed: {}", result.text())),
            Err(err) => figures.error(format!("search '{query}': {err}")),
        }

        let name = TARGETS[(round % TARGETS.len() as u64) as usize];
        let arguments = target_arguments(name, round);
        let started = Instant::now();
        let loaded = gateway.reload(name).await;
        figures.tools[1].observe(1, started.elapsed());
        let version = match loaded {
            Ok(LoadOutcome::Loaded { tool, .. }) => tool.version.clone(),
            Ok(LoadOutcome::Failed(result)) => {
                figures.error(format!("load {name} failed: {}", result.text()));
                continue;
            }
            Err(err) => {
                figures.error(format!("load {name}: {err}"));
                continue;
            }
        };
        let started = Instant::now();
        let invoked = gateway
            .invoke(name, arguments.clone(), Some(&version))
            .await;
        let elapsed = started.elapsed();
        match invoked {
            Ok(outcome) => {
                let retried = outcome.retried_from.is_some();
                if retried {
                    figures.retried.fetch_add(1, Ordering::Relaxed);
                    // The retry loaded again, and invoked again if that load
                    // succeeded.
                    figures.tools[1].sent.fetch_add(1, Ordering::Relaxed);
                }
                let invokes = if retried && outcome.version.is_some() {
                    2
                } else {
                    1
                };
                figures.tools[2].observe(invokes, elapsed);
                let code = sezzlee_client::gateway::error_code(&outcome.result);
                match (outcome.result.is_error, code.as_deref()) {
                    (false, _) => {
                        let right = outcome
                            .result
                            .json()
                            .is_some_and(|payload| invoke_answer_ok(name, &arguments, &payload));
                        if !right {
                            figures.error(format!(
                                "invoke {name} {arguments}: unexpected answer {}",
                                outcome.result.text()
                            ));
                        }
                        if let Some(warning) = outcome.result.warnings.first() {
                            figures.error(format!("invoke {name}: {warning}"));
                        }
                    }
                    (true, Some("tool_changed")) if retried => {
                        figures.changed_twice.fetch_add(1, Ordering::Relaxed);
                    }
                    (true, _) => figures.error(format!(
                        "invoke {name} {arguments} failed: {}",
                        outcome.result.text()
                    )),
                }
            }
            Err(err) => {
                figures.tools[2].observe(1, elapsed);
                figures.error(format!("invoke {name}: {err}"));
            }
        }
        if !pause.is_zero() {
            tokio::time::sleep(pause).await;
        }
    }
    let _ = gateway.client().close().await;
}

/// What one listen stream received.
#[derive(Default)]
struct Heard {
    acknowledged: bool,
    generations: Vec<u64>,
    problems: Vec<String>,
}

/// One listen stream, read until aborted; `ready` once acknowledged.
async fn listener(url: String, heard: Arc<Mutex<Heard>>, ready: tokio::sync::mpsc::Sender<()>) {
    let config = ClientConfig::new(url)
        .era(EraChoice::Modern)
        .timeout(Duration::from_secs(10))
        .memory(Arc::new(EraMemory::default()));
    let problem = |why: String| lock(&heard).problems.push(why);
    let client = match Client::new(config) {
        Ok(client) => client,
        Err(err) => return problem(err.to_string()),
    };
    let options = ListenOptions {
        max_reconnects: 0,
        ..ListenOptions::default()
    };
    let mut stream = match client.listen(options).await {
        Ok(stream) => stream,
        Err(err) => return problem(format!("could not listen: {err}")),
    };
    while let Some(event) = stream.next().await {
        match event {
            Ok(ListenEvent::Acknowledged { not_honoured, .. }) => {
                if !not_honoured.is_empty() {
                    problem(format!("not honoured: {not_honoured:?}"));
                }
                lock(&heard).acknowledged = true;
                let _ = ready.send(()).await;
            }
            Ok(ListenEvent::Notification { method, params }) => {
                let generation = params["_meta"][sezzlee_client::gateway::GENERATION_KEY].as_u64();
                match generation {
                    Some(g) if method == "notifications/tools/list_changed" => {
                        lock(&heard).generations.push(g)
                    }
                    _ => problem(format!("unexpected notification {method} {params}")),
                }
            }
            Ok(ListenEvent::Reconnecting { reason, .. }) => {
                problem(format!("the stream dropped: {reason}"))
            }
            Ok(ListenEvent::Closed) => problem("the server closed the stream".to_string()),
            Err(err) => problem(format!("the stream failed: {err}")),
        }
    }
}

/// One sample of the gateway.
#[derive(Clone, Debug, Default)]
struct Sample {
    t: f64,
    rss_kib: u64,
    fds: u64,
    threads: u64,
    cpu_ticks: u64,
    tasks: Option<u64>,
    /// The runtimes the task count covers.
    runtimes: Option<u64>,
    streams: Option<u64>,
    generation: Option<u64>,
    requests: u64,
    errors: u64,
}

fn proc_status(pid: u32) -> Option<(u64, u64)> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let field = |name: &str| {
        text.lines()
            .find_map(|line| line.strip_prefix(name))
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|n| n.parse::<u64>().ok())
    };
    Some((field("VmRSS:")?, field("Threads:")?))
}

fn proc_fds(pid: u32) -> Option<u64> {
    Some(std::fs::read_dir(format!("/proc/{pid}/fd")).ok()?.count() as u64)
}

/// utime + stime, in clock ticks.
fn proc_cpu_ticks(pid: u32) -> Option<u64> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the command name (which may hold spaces) in parentheses.
    let rest = &text[text.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let utime: u64 = fields.get(11)?.parse().ok()?;
    let stime: u64 = fields.get(12)?.parse().ok()?;
    Some(utime + stime)
}

async fn get_json(http: &reqwest::Client, url: &str) -> Result<Value, String> {
    let response = http.get(url).send().await.map_err(|e| e.to_string())?;
    if !response.status().is_success() {
        return Err(format!("{url}: HTTP {}", response.status()));
    }
    response.json().await.map_err(|e| e.to_string())
}

async fn get_text(http: &reqwest::Client, url: &str) -> Result<String, String> {
    let response = http.get(url).send().await.map_err(|e| e.to_string())?;
    response.text().await.map_err(|e| e.to_string())
}

/// `sezzlee_tool_calls_total` summed per tool, and per (tool, outcome).
fn tool_calls(metrics: &str) -> BTreeMap<(String, String), u64> {
    let mut calls = BTreeMap::new();
    for line in metrics.lines() {
        let Some(rest) = line.strip_prefix("sezzlee_tool_calls_total{tool=\"") else {
            continue;
        };
        let Some((tool, rest)) = rest.split_once("\",outcome=\"") else {
            continue;
        };
        let Some((outcome, value)) = rest.split_once("\"} ") else {
            continue;
        };
        if let Ok(value) = value.trim().parse::<u64>() {
            calls.insert((tool.to_string(), outcome.to_string()), value);
        }
    }
    calls
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    match values.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => values[n / 2],
        n => (values[n / 2 - 1] + values[n / 2]) / 2.0,
    }
}

fn percentile(sorted: &[u32], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    f64::from(sorted[rank]) / 1000.0
}

/// A series' judgement.
struct Judged {
    name: &'static str,
    first: f64,
    last: f64,
    min: f64,
    max: f64,
    tolerance: String,
    pass: bool,
}

/// Judges a series (values after warm-up); `allowed_growth(first)` is the
/// most the last window's median may exceed the first's by, `spread` the
/// largest max − min.
fn judge(
    name: &'static str,
    series: &[f64],
    window: usize,
    allowed: impl Fn(f64) -> f64,
    spread: Option<f64>,
    tolerance: String,
) -> Judged {
    let first = median(&mut series[..window].to_vec());
    let last = median(&mut series[series.len() - window..].to_vec());
    let min = series.iter().copied().fold(f64::INFINITY, f64::min);
    let max = series.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let pass = last <= allowed(first) && spread.is_none_or(|s| max - min <= s);
    Judged {
        name,
        first,
        last,
        min,
        max,
        tolerance,
        pass,
    }
}

/// Sends SIGTERM and waits for the exit status.
fn terminate(child: &mut Child, within: Duration) -> Result<std::process::ExitStatus, String> {
    // The shell's own `kill`: no procps needed on a bare machine.
    let _ = Command::new("sh")
        .args(["-c", &format!("kill -TERM {}", child.id())])
        .status();
    let deadline = Instant::now() + within;
    loop {
        match child.try_wait() {
            Ok(Some(status)) => return Ok(status),
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(50)),
            Ok(None) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!(
                    "the gateway did not stop within {} s of SIGTERM",
                    within.as_secs()
                ));
            }
            Err(err) => return Err(err.to_string()),
        }
    }
}

/// Stops the gateway when the soak ends early.
struct Running(Option<Child>);

impl Drop for Running {
    fn drop(&mut self) {
        if let Some(child) = self.0.as_mut() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

fn copy_folder(from: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let target = to.join(entry.file_name());
        if entry.file_type()?.is_dir() {
            copy_folder(&entry.path(), &target)?;
        } else {
            std::fs::copy(entry.path(), target)?;
        }
    }
    Ok(())
}

/// The edit: `(soak edit N)` after the first `summary:`'s text.
fn edited(original: &str, n: u64) -> Option<String> {
    let start = original.find("summary: ")?;
    let end = start + original[start..].find('\n')?;
    Some(format!(
        "{} (soak edit {n}){}",
        &original[..end],
        &original[end..]
    ))
}

fn main() -> ExitCode {
    let args = Args::parse();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(err) => {
            eprintln!("soak: no runtime: {err}");
            return ExitCode::from(2);
        }
    };
    match runtime.block_on(soak(args)) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(why) => {
            eprintln!("soak: could not run: {why}");
            ExitCode::from(2)
        }
    }
}

async fn soak(args: Args) -> Result<bool, String> {
    if args.listeners == 0 || args.callers == 0 || args.seconds < 10 {
        return Err("needs at least one listener, one caller and 10 seconds".to_string());
    }
    let folder = tempfile::tempdir().map_err(|e| e.to_string())?;
    let catalogs = folder.path().join("catalogs");
    copy_folder(&args.catalogs, &catalogs)
        .map_err(|e| format!("copying {}: {e}", args.catalogs.display()))?;
    let edit_path = catalogs.join(&args.edit_file);
    let original =
        std::fs::read_to_string(&edit_path).map_err(|e| format!("{}: {e}", edit_path.display()))?;
    if edited(&original, 0).is_none() {
        return Err(format!("{} has no summary: to edit", args.edit_file));
    }

    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map_err(|e| e.to_string())?
        .port();
    if let Some(parent) = args.log.parent() {
        let _ = std::fs::create_dir_all(parent);
    }
    let log =
        std::fs::File::create(&args.log).map_err(|e| format!("{}: {e}", args.log.display()))?;
    let child = Command::new(&args.sezzlee)
        .arg("serve")
        .arg("--catalogs")
        .arg(&catalogs)
        .args(["--listen", &format!("127.0.0.1:{port}")])
        .args(["--watch", "events"])
        .env_remove("SEZZLEE_CONFIG")
        .env_remove("RUST_LOG")
        .env("SEZZLEE_LOG_FORMAT", "json")
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .map_err(|e| format!("{}: {e}", args.sezzlee.display()))?;
    let pid = child.id();
    let mut running = Running(Some(child));
    let base = format!("http://127.0.0.1:{port}");
    let url = format!("{base}/mcp");
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(5))
        .pool_max_idle_per_host(1)
        .build()
        .map_err(|e| e.to_string())?;
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let ready = http.get(format!("{base}/readyz")).send().await;
        if ready.is_ok_and(|r| r.status().is_success()) {
            break;
        }
        if Instant::now() > deadline {
            return Err(format!(
                "the gateway was not ready within 30 s (log: {})",
                args.log.display()
            ));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let status_url = format!("{base}/status");
    let generation_at_start = get_json(&http, &status_url).await?["generation"]
        .as_u64()
        .ok_or("no generation in /status")?;

    // The listen streams, all acknowledged before anything changes.
    let (ready_tx, mut ready_rx) = tokio::sync::mpsc::channel(args.listeners);
    let mut listeners = Vec::new();
    for _ in 0..args.listeners {
        let heard = Arc::new(Mutex::new(Heard::default()));
        let task = tokio::spawn(listener(url.clone(), heard.clone(), ready_tx.clone()));
        listeners.push((heard, task));
    }
    for _ in 0..args.listeners {
        tokio::time::timeout(Duration::from_secs(10), ready_rx.recv())
            .await
            .map_err(|_| {
                let problems: Vec<String> = listeners
                    .iter()
                    .flat_map(|(heard, _)| lock(heard).problems.clone())
                    .collect();
                format!("listen streams not acknowledged within 10 s: {problems:?}")
            })?;
    }

    let figures = Arc::new(Figures::default());
    let stop = Arc::new(AtomicBool::new(false));
    let started = Instant::now();
    let callers: Vec<_> = (0..args.callers)
        .map(|index| {
            tokio::spawn(caller(
                index,
                url.clone(),
                Duration::from_millis(args.pause_ms),
                stop.clone(),
                figures.clone(),
            ))
        })
        .collect();

    // The editor: a reload every second, a content change every other.
    let content_edits = Arc::new(AtomicU64::new(0));
    let rewrites = Arc::new(AtomicU64::new(0));
    let editor = {
        let stop = stop.clone();
        let content_edits = content_edits.clone();
        let rewrites = rewrites.clone();
        let figures = figures.clone();
        let staging = folder.path().join("staging");
        let edit_path = edit_path.clone();
        let mut current = original.clone();
        tokio::spawn(async move {
            let mut ticks = tokio::time::interval(Duration::from_secs(1));
            ticks.tick().await;
            let mut tick = 0u64;
            while !stop.load(Ordering::Relaxed) {
                ticks.tick().await;
                tick += 1;
                if tick % 2 == 1 {
                    match edited(&original, tick) {
                        Some(text) => current = text,
                        None => continue,
                    }
                    content_edits.fetch_add(1, Ordering::Relaxed);
                }
                let written = std::fs::write(&staging, &current)
                    .and_then(|()| std::fs::rename(&staging, &edit_path));
                match written {
                    Ok(()) => {
                        rewrites.fetch_add(1, Ordering::Relaxed);
                    }
                    Err(err) => figures.error(format!("editing {}: {err}", edit_path.display())),
                }
            }
        })
    };

    // The sampler, from outside the process and from /status.
    let samples: Arc<Mutex<Vec<Sample>>> = Arc::default();
    let sampler = {
        let samples = samples.clone();
        let figures = figures.clone();
        let http = http.clone();
        let status_url = status_url.clone();
        let seconds = args.seconds;
        tokio::spawn(async move {
            let mut ticks = tokio::time::interval(Duration::from_secs(1));
            ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            ticks.tick().await;
            for _ in 0..seconds {
                ticks.tick().await;
                let mut sample = Sample {
                    t: started.elapsed().as_secs_f64(),
                    ..Sample::default()
                };
                match (proc_status(pid), proc_fds(pid), proc_cpu_ticks(pid)) {
                    (Some((rss, threads)), Some(fds), Some(cpu)) => {
                        sample.rss_kib = rss;
                        sample.threads = threads;
                        sample.fds = fds;
                        sample.cpu_ticks = cpu;
                    }
                    _ => figures.error("the gateway process is gone".to_string()),
                }
                match get_json(&http, &status_url).await {
                    Ok(status) => {
                        sample.tasks = status["runtime"]["aliveTasks"].as_u64();
                        sample.runtimes = status["runtime"]["runtimes"].as_u64();
                        sample.streams = status["listenStreams"].as_u64();
                        sample.generation = status["generation"].as_u64();
                    }
                    Err(err) => figures.error(format!("/status: {err}")),
                }
                sample.requests = figures.requests();
                sample.errors = figures.errors.load(Ordering::Relaxed);
                lock(&samples).push(sample);
            }
        })
    };
    let _ = sampler.await;
    stop.store(true, Ordering::Relaxed);
    for task in callers {
        let _ = task.await;
    }
    let _ = editor.await;
    let duration = started.elapsed();

    // The last edit reloaded; every listener told of every generation.
    let expected_generation = generation_at_start + content_edits.load(Ordering::Relaxed);
    let mut final_generation = None;
    let settle = Instant::now() + Duration::from_secs(10);
    while Instant::now() < settle {
        let generation = get_json(&http, &status_url).await?["generation"].as_u64();
        let told = listeners
            .iter()
            .all(|(heard, _)| lock(heard).generations.last().copied() == generation);
        final_generation = generation;
        if generation == Some(expected_generation) && told {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let mut problems = Vec::new();
    if final_generation != Some(expected_generation) {
        problems.push(format!(
            "generation {final_generation:?} after {} content edits from {generation_at_start}: expected {expected_generation}",
            content_edits.load(Ordering::Relaxed)
        ));
    }
    let expected: Vec<u64> = (generation_at_start + 1..=expected_generation).collect();
    let mut notifications = 0;
    for (index, (heard, _)) in listeners.iter().enumerate() {
        let heard = lock(heard);
        notifications += heard.generations.len();
        if !heard.acknowledged {
            problems.push(format!("listener {index} was never acknowledged"));
        }
        for problem in &heard.problems {
            problems.push(format!("listener {index}: {problem}"));
        }
        if heard.generations != expected {
            let missing: Vec<_> = expected
                .iter()
                .filter(|g| !heard.generations.contains(g))
                .collect();
            problems.push(format!(
                "listener {index} received {} notifications, expected {} (missing {missing:?}, received {:?}…)",
                heard.generations.len(),
                expected.len(),
                &heard.generations[..heard.generations.len().min(10)]
            ));
        }
    }

    // The gateway counted the calls that were sent.
    let metrics = get_text(&http, &format!("{base}/metrics")).await?;
    let counted = tool_calls(&metrics);
    let sent: Vec<u64> = figures
        .tools
        .iter()
        .map(|t| t.sent.load(Ordering::Relaxed))
        .collect();
    for (index, tool) in ["search_tools", "load_tool", "invoke_tool"]
        .into_iter()
        .enumerate()
    {
        let server: u64 = counted
            .iter()
            .filter(|((t, _), _)| t == tool)
            .map(|(_, n)| n)
            .sum();
        if server != sent[index] {
            problems.push(format!(
                "{tool}: {} sent, the gateway counted {server}",
                sent[index]
            ));
        }
    }
    let refused_changed = counted
        .get(&("invoke_tool".to_string(), "tool_changed".to_string()))
        .copied()
        .unwrap_or(0);
    let retried = figures.retried.load(Ordering::Relaxed);
    if refused_changed != retried + figures.changed_twice.load(Ordering::Relaxed) {
        problems.push(format!(
            "the gateway refused {refused_changed} invokes with tool_changed, the callers saw {retried} (+{} twice)",
            figures.changed_twice.load(Ordering::Relaxed)
        ));
    }
    let server_outcomes: Vec<String> = counted
        .iter()
        .filter(|(_, n)| **n > 0)
        .map(|((tool, outcome), n)| format!("{tool}/{outcome}={n}"))
        .collect();

    // Clients gone, their streams released.
    for (_, task) in &listeners {
        task.abort();
    }
    let mut streams_after = None;
    let release = Instant::now() + Duration::from_secs(5);
    while Instant::now() < release {
        streams_after = get_json(&http, &status_url).await?["listenStreams"].as_u64();
        if streams_after == Some(0) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    if streams_after != Some(0) {
        problems.push(format!(
            "{streams_after:?} listen streams still open 5 s after their clients went"
        ));
    }
    drop(http);

    // A clean stop, and a clean log.
    let mut child = running.0.take().ok_or("no gateway")?;
    match terminate(&mut child, Duration::from_secs(20)) {
        Ok(status) if status.success() => {}
        Ok(status) => problems.push(format!("the gateway exited with {status} on SIGTERM")),
        Err(why) => problems.push(why),
    }
    let log_text = std::fs::read_to_string(&args.log).unwrap_or_default();
    let bad_lines: Vec<&str> = log_text
        .lines()
        .filter(|line| line.contains("\"level\":\"ERROR\"") || line.contains("panicked"))
        .collect();
    let warnings: Vec<&str> = log_text
        .lines()
        .filter(|line| line.contains("\"level\":\"WARN\""))
        .collect();
    if !bad_lines.is_empty() {
        problems.push(format!(
            "{} ERROR or panic lines in the gateway's log, first: {}",
            bad_lines.len(),
            bad_lines[0]
        ));
    }
    // A rescan that changed nothing swaps nothing and logs nothing.
    let swaps = log_text
        .lines()
        .filter(|line| line.contains("catalog reloaded"))
        .count();

    let samples = lock(&samples).clone();
    write_csv(&args.csv, &samples);
    print_samples(&samples, args.print_every);

    // The verdict.
    let n = samples.len();
    let warm = n.div_ceil(5);
    let window = (n / 5).max(1);
    let judged_samples = &samples[warm..];
    if judged_samples.len() < 2 * window {
        return Err(format!("too few samples ({n}) to judge"));
    }
    let series = |f: &dyn Fn(&Sample) -> Option<f64>| -> Option<Vec<f64>> {
        judged_samples.iter().map(f).collect()
    };
    let callers = args.callers as f64;
    let spread = 2.0 * callers + 16.0;
    let mut verdicts = Vec::new();
    if let Some(rss) = series(&|s| Some(s.rss_kib as f64 / 1024.0)) {
        verdicts.push(judge(
            "RSS (MiB)",
            &rss,
            window,
            |first| first * 1.10 + 4.0,
            None,
            "last ≤ first × 1.10 + 4 MiB".to_string(),
        ));
    }
    if let Some(fds) = series(&|s| Some(s.fds as f64)) {
        verdicts.push(judge(
            "open fds",
            &fds,
            window,
            |first| first + 4.0,
            Some(spread),
            format!("last ≤ first + 4, max − min ≤ {spread}"),
        ));
    }
    if let Some(threads) = series(&|s| Some(s.threads as f64)) {
        verdicts.push(judge(
            "threads",
            &threads,
            window,
            |first| first + 2.0,
            Some(8.0),
            "last ≤ first + 2, max − min ≤ 8".to_string(),
        ));
    }
    match series(&|s| s.tasks.map(|t| t as f64)) {
        Some(tasks) => verdicts.push(judge(
            "tokio tasks",
            &tasks,
            window,
            |first| first + 4.0,
            Some(spread),
            format!("last ≤ first + 4, max − min ≤ {spread}"),
        )),
        None => problems.push("/status did not say runtime.aliveTasks in every sample".to_string()),
    }
    let k = args.listeners as f64;
    match series(&|s| s.streams.map(|t| t as f64)) {
        Some(streams) => verdicts.push(judge(
            "listen streams",
            &streams,
            window,
            |_| k,
            Some(0.0),
            format!("= {k} in every sample"),
        )),
        None => problems.push("/status did not say listenStreams in every sample".to_string()),
    }
    // Streams during warm-up too: none may be lost at any time.
    if samples
        .iter()
        .any(|s| s.streams != Some(args.listeners as u64))
    {
        problems.push("a sample showed fewer or more listen streams than opened".to_string());
    }
    let streams_verdict = verdicts.iter_mut().find(|j| j.name == "listen streams");
    if let Some(j) = streams_verdict {
        j.pass = j.pass && j.min == k;
    }

    let cpu_seconds = samples.last().map_or(0.0, |s| s.cpu_ticks as f64) / clock_ticks();
    println!();
    println!(
        "soak: {:.0} s, {} callers (half 2026-07-28, half initialize era), {} listen streams, pause {} ms",
        duration.as_secs_f64(),
        args.callers,
        args.listeners,
        args.pause_ms
    );
    println!(
        "samples: {n} (warm-up {warm} not judged; windows of {window}); gateway CPU {cpu_seconds:.0} s ({:.0} % of one core); tokio tasks counted over {} runtime(s)",
        100.0 * cpu_seconds / duration.as_secs_f64(),
        samples
            .last()
            .and_then(|s| s.runtimes)
            .map_or("?".to_string(), |r| r.to_string())
    );
    println!();
    println!(
        "{:<16} {:>12} {:>12} {:>10} {:>10} {:>9}  {:<34} verdict",
        "series", "first median", "last median", "min", "max", "max−min", "tolerance"
    );
    for j in &verdicts {
        println!(
            "{:<16} {:>12.1} {:>12.1} {:>10.1} {:>10.1} {:>9.1}  {:<34} {}",
            j.name,
            j.first,
            j.last,
            j.min,
            j.max,
            j.max - j.min,
            j.tolerance,
            if j.pass { "flat" } else { "NOT FLAT" }
        );
    }
    println!();
    let names = ["search_tools", "load_tool", "invoke_tool"];
    let total = figures.requests();
    println!(
        "requests: {total} ({:.0}/s)",
        total as f64 / duration.as_secs_f64()
    );
    for (index, name) in names.iter().enumerate() {
        let mut latencies = lock(&figures.tools[index].latencies).clone();
        latencies.sort_unstable();
        println!(
            "  {name:<13} {:>9} sent   p50 {:>6.2} ms   p99 {:>6.2} ms   max {:>7.2} ms",
            sent[index],
            percentile(&latencies, 0.5),
            percentile(&latencies, 0.99),
            percentile(&latencies, 1.0),
        );
    }
    println!(
        "  pinned invokes refused with tool_changed and retried: {retried} (refused again: {})",
        figures.changed_twice.load(Ordering::Relaxed)
    );
    println!("  gateway's counts: {}", server_outcomes.join(" "));
    println!(
        "reloads: {} rewrites ({} with new content), {swaps} catalogs swapped in; generation {generation_at_start} → {}",
        rewrites.load(Ordering::Relaxed),
        content_edits.load(Ordering::Relaxed),
        final_generation.map_or("?".to_string(), |g| g.to_string())
    );
    println!(
        "gateway log: {} warnings{}",
        warnings.len(),
        warnings
            .first()
            .map(|w| format!(", first: {w}"))
            .unwrap_or_default()
    );
    println!(
        "notifications: {notifications} received over {} streams ({} expected each)",
        args.listeners,
        expected.len()
    );
    let errors = figures.errors.load(Ordering::Relaxed);
    println!("unexpected errors: {}", errors + problems.len() as u64);
    for error in lock(&figures.first_errors).iter() {
        println!("  call: {error}");
    }
    for problem in &problems {
        println!("  {problem}");
    }
    println!(
        "samples: {}; gateway log: {}",
        args.csv.display(),
        args.log.display()
    );
    let flat = verdicts.iter().all(|j| j.pass);
    let clean = errors == 0 && problems.is_empty();
    println!(
        "VERDICT: {}",
        match (flat, clean) {
            (true, true) => "PASS (flat, no unexpected error)",
            (false, true) => "FAIL (not flat)",
            (true, false) => "FAIL (unexpected errors)",
            (false, false) => "FAIL (not flat, unexpected errors)",
        }
    );
    Ok(flat && clean)
}

fn write_csv(path: &Path, samples: &[Sample]) {
    let mut text = String::from(
        "t_s,rss_kib,fds,threads,cpu_ticks,tasks,streams,generation,requests,errors\n",
    );
    let opt = |v: Option<u64>| v.map(|v| v.to_string()).unwrap_or_default();
    for s in samples {
        text.push_str(&format!(
            "{:.1},{},{},{},{},{},{},{},{},{}\n",
            s.t,
            s.rss_kib,
            s.fds,
            s.threads,
            s.cpu_ticks,
            opt(s.tasks),
            opt(s.streams),
            opt(s.generation),
            s.requests,
            s.errors
        ));
    }
    if let Some(parent) = path.parent() {
        let _ = std::fs::create_dir_all(parent);
    }
    if let Err(err) = std::fs::write(path, text) {
        eprintln!("soak: cannot write {}: {err}", path.display());
    }
}

/// Clock ticks per second (`getconf CLK_TCK`, 100 on Linux).
fn clock_ticks() -> f64 {
    Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .ok()
        .and_then(|out| String::from_utf8(out.stdout).ok())
        .and_then(|text| text.trim().parse::<f64>().ok())
        .filter(|ticks| *ticks > 0.0)
        .unwrap_or(100.0)
}

fn print_samples(samples: &[Sample], every: usize) {
    let ticks = clock_ticks();
    let every = if every == 0 {
        samples.len().div_ceil(40).max(1)
    } else {
        every
    };
    println!(
        "{:>6} {:>9} {:>5} {:>7} {:>6} {:>7} {:>5} {:>6} {:>8} {:>6}",
        "t (s)", "RSS MiB", "fds", "threads", "tasks", "streams", "gen", "cpu %", "req/s", "errors"
    );
    let opt = |v: Option<u64>| v.map(|v| v.to_string()).unwrap_or_else(|| "-".to_string());
    for (index, s) in samples.iter().enumerate() {
        if index % every != 0 && index + 1 != samples.len() {
            continue;
        }
        let previous = index.checked_sub(every.min(index)).map(|i| &samples[i]);
        let (rate, cpu) = match previous {
            Some(p) if s.t > p.t => (
                (s.requests - p.requests) as f64 / (s.t - p.t),
                100.0 * (s.cpu_ticks - p.cpu_ticks) as f64 / ticks / (s.t - p.t),
            ),
            _ => (
                s.requests as f64 / s.t,
                100.0 * s.cpu_ticks as f64 / ticks / s.t,
            ),
        };
        println!(
            "{:>6.0} {:>9.1} {:>5} {:>7} {:>6} {:>7} {:>5} {:>6.0} {:>8.0} {:>6}",
            s.t,
            s.rss_kib as f64 / 1024.0,
            s.fds,
            s.threads,
            opt(s.tasks),
            opt(s.streams),
            opt(s.generation),
            cpu,
            rate,
            s.errors
        );
    }
}
