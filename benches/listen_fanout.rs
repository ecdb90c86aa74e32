//! Live-reload fan-out: how long `subscriptions/listen` streams wait for
//! `notifications/tools/list_changed` after a catalog file is written, what
//! an idle stream costs the gateway in memory, and how long the real
//! catalogs folder takes to rebuild after a one-file change.
//!
//! Run by hand: `cargo bench --bench listen_fanout`.
//!
//! # Method
//! The gateway runs in this process (`sezzlee_gateway::server::serve` on
//! 127.0.0.1:0, the reloader started with `reload::start`: file-system
//! events, default 50 ms debounce) on a temporary folder holding the
//! shipped demo catalog. The listeners run in a **child process** (this
//! same executable, started with `SEZZLEE_FANOUT_CHILD=1`), for two
//! reasons:
//! - memory: this process's VmRSS (from `/proc/self/status`) then holds
//!   only the gateway, so (RSS with N streams open − RSS with none) / N is
//!   the gateway's cost per idle stream, with no client memory to subtract;
//! - file descriptors: each loopback connection is two descriptors, one
//!   per end; in one process 10,000 streams need over 20,000, in two
//!   processes about 10,000 each.
//!
//! The child speaks raw HTTP/1.1 over `tokio::net::TcpStream` (one
//! connection per stream, as an SSE client holds), so its own cost per
//! stream stays small and its reading is cheap. Streams are opened
//! cumulatively (1, then 99 more, …) so each level's RSS is measured
//! against the same empty baseline and memory freed by an earlier level
//! cannot hide a later level's cost.
//! The empty reading is taken after a few
//! warm-up reloads with no stream open, so the allocator growth of the
//! first catalog rebuilds is not charged to the streams.
//!
//! Per edit, the parent takes the wall-clock time (`SystemTime`, the same
//! clock in both processes), then rewrites `orders.yaml` with a new
//! summary (the tool's version changes, so the generation goes up and
//! every listener must be told once). The child stamps each stream's first
//! `list_changed` after the edit and reports (stamp − write time). A
//! separate thread in the parent stamps when the store swapped in the new
//! generation, which splits the latency into "write → swap" (events,
//! debounce, rescan, build) and "swap → delivered" (fan-out through the
//! gateway, the kernel and the child). Both processes share the same two
//! cores, so the child's reading is part of the figure: it is an upper
//! bound of what a remote client would see.
//!
//! Finally, the whole vendored corpus (tests/fixtures/corpus, unpacked) is copied to a
//! temporary folder and rescanned: untouched (hashing only), then after
//! one small file changed, checking by `Arc` pointer identity that only
//! that file was parsed again, and timing the rebuild both as its parts
//! (`Sources::scan`, `Catalog::build`) and as `Reloader::rescan` does it.
//!
//! # Limits
//! `ulimit -n` must exceed the largest level plus ~100 in each process
//! (e.g. `ulimit -n 20000`; the hard limit caps what a shell may set).
//! Levels that do not fit are skipped with the reason. The gateway's
//! stream caps (`max_streams`, 1024 by default, and
//! `max_streams_per_caller`, 16 by default, all loopback listeners being
//! one caller) are raised for this benchmark.
//!
//! # Configuration (env)
//! - `FANOUT_LEVELS` (default `1,100,1000,10000`): listener counts;
//! - `FANOUT_EDITS` (default 5): edits per level;
//! - `FANOUT_TIMEOUT_MS` (default 10000): wait per edit for every listener;
//! - `FANOUT_SETTLE_MS` (default 500): pause before reading RSS;
//! - `FANOUT_SERVER_THREADS` (default: cores), `FANOUT_CLIENT_THREADS`
//!   (default 1): runtime worker threads of the gateway and of the child;
//! - `FANOUT_REBUILD_EDITS` (default 3; 0 skips the real-folder part).

use serde_json::{Value, json};
use sezzlee_catalog::source::{Parsed, is_catalog_file};
use sezzlee_catalog::{Catalog, Sources};
use sezzlee_gateway::gateway::Gateway;
use sezzlee_gateway::reload::{self, Outcome, Reloader};
use sezzlee_gateway::settings::{DemoBackend, Settings, WatchMode};
use sezzlee_gateway::store::Snapshot;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// The real documents these benchmarks name: the repository's own corpus
/// (tests/it/corpus.rs; unpacked once into cargo's temporary folder).
#[path = "../tests/it/corpus.rs"]
mod corpus;

const CHILD_ENV: &str = "SEZZLEE_FANOUT_CHILD";
const SHIPPED: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/catalogs");
const MODERN: &str = "2026-07-28";
/// The line of `orders.yaml` each edit rewrites.
const SUMMARY: &str = "summary: Lists orders, newest first.";
/// Catalog reloads done before the empty RSS reading (see `parent`).
const WARM_UP_EDITS: usize = 3;
/// The small real document edited in the rebuild part.
const SMALL_DOC: &str = "xkcd.com_xkcd_1.0.0.json";

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(default)
}

fn env_levels() -> Vec<usize> {
    let default = vec![1, 100, 1000, 10_000];
    let Ok(v) = std::env::var("FANOUT_LEVELS") else {
        return default;
    };
    let mut levels: Vec<usize> = v
        .split(',')
        .filter_map(|x| x.trim().parse().ok())
        .filter(|&x| x > 0)
        .collect();
    levels.sort_unstable();
    levels.dedup();
    if levels.is_empty() { default } else { levels }
}

fn now_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

/// A `/proc/<pid>/status` field in KiB (`VmRSS`, `VmHWM`, …).
fn status_kib(pid: &str, field: &str) -> u64 {
    let text = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    text.lines()
        .find(|l| l.starts_with(field))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// The soft limit on open files.
fn open_files_limit() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/self/limits").ok()?;
    let line = text.lines().find(|l| l.starts_with("Max open files"))?;
    line.split_whitespace().nth(3)?.parse().ok()
}

fn open_fds() -> usize {
    std::fs::read_dir("/proc/self/fd").map_or(0, |d| d.count())
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[rank.min(sorted.len() - 1)]
}

fn main() {
    if std::env::var_os(CHILD_ENV).is_some() {
        child::run();
    } else {
        parent();
    }
}

// ---------------------------------------------------------------- parent

/// The child process holding the listeners, driven line by line.
struct Listeners {
    process: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

impl Listeners {
    fn spawn(address: std::net::SocketAddr, endpoint: &str, capacity: usize) -> Listeners {
        let threads = env_u64("FANOUT_CLIENT_THREADS", 1);
        let mut process = Command::new(std::env::current_exe().expect("own executable"))
            .env(CHILD_ENV, "1")
            .env("FANOUT_CHILD_ADDRESS", address.to_string())
            .env("FANOUT_CHILD_ENDPOINT", endpoint)
            .env("FANOUT_CHILD_CAPACITY", capacity.to_string())
            .env("FANOUT_CLIENT_THREADS", threads.to_string())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("listener process");
        let stdin = process.stdin.take().unwrap();
        let stdout = BufReader::new(process.stdout.take().unwrap());
        Listeners {
            process,
            stdin,
            stdout,
        }
    }

    /// Sends one command; returns the answer line's words.
    fn ask(&mut self, command: &str) -> Vec<String> {
        writeln!(self.stdin, "{command}").expect("child alive");
        self.stdin.flush().unwrap();
        let mut line = String::new();
        self.stdout.read_line(&mut line).expect("child answers");
        if line.is_empty() {
            panic!("the listener process exited during '{command}'");
        }
        line.split_whitespace().map(str::to_string).collect()
    }

    fn rss_kib(&self) -> u64 {
        status_kib(&self.process.id().to_string(), "VmRSS:")
    }
}

/// One level's figures.
struct Level {
    listeners: usize,
    open_secs: f64,
    server_kib_per_stream: f64,
    client_kib_per_stream: f64,
    /// Per-listener latencies of every edit, ms.
    latencies: Vec<f64>,
    /// Write → swap, per edit, ms.
    swaps: Vec<f64>,
    /// Swap → last listener, per edit, ms.
    spreads: Vec<f64>,
    missing: usize,
    duplicates: usize,
}

fn parent() {
    let levels = env_levels();
    let edits = env_u64("FANOUT_EDITS", 5).max(1) as usize;
    let timeout_ms = env_u64("FANOUT_TIMEOUT_MS", 10_000);
    let settle = Duration::from_millis(env_u64("FANOUT_SETTLE_MS", 500));
    let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
    let server_threads = env_u64("FANOUT_SERVER_THREADS", cores as u64).max(1) as usize;
    let rebuild_edits = env_u64("FANOUT_REBUILD_EDITS", 3) as usize;

    // Levels that fit the open-files limit (each process needs one
    // descriptor per stream plus its runtime's and the watcher's).
    let limit = open_files_limit().unwrap_or(1024);
    let (fit, skipped): (Vec<usize>, Vec<usize>) = levels
        .iter()
        .partition(|&&n| n as u64 + 128 + open_fds() as u64 <= limit);
    for n in &skipped {
        eprintln!(
            "skipping {n} listeners: the open-files limit is {limit} per process and each process needs about {} descriptors; raise it with `ulimit -n {}` (up to the hard limit)",
            n + 128,
            n + 256
        );
    }
    let largest = fit.last().copied().unwrap_or(0);

    let server = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(server_threads)
        .thread_name("gateway")
        .enable_all()
        .build()
        .unwrap();

    let dir = tempfile::tempdir().expect("temporary catalogs folder");
    for name in ["orders.yaml", "orders.sezzlee.yaml"] {
        std::fs::copy(Path::new(SHIPPED).join(name), dir.path().join(name)).unwrap();
    }
    let orders = dir.path().join("orders.yaml");
    let original = std::fs::read_to_string(&orders).unwrap();
    assert_eq!(
        original.matches(SUMMARY).count(),
        1,
        "orders.yaml has the summary line the edits rewrite"
    );
    let settings = Settings {
        catalogs: dir.path().to_path_buf(),
        listen: "127.0.0.1:0".parse().unwrap(),
        watch: WatchMode::Events,
        demo_backend: DemoBackend::Off,
        max_streams: largest + 16,
        max_streams_per_caller: largest + 16,
        ..Settings::default()
    };
    let debounce = settings.debounce;
    let (gateway, sources) = Gateway::load(settings).expect("catalogs folder readable");
    let reloader = Reloader::new(gateway.clone(), sources);
    let watcher = {
        let _runtime = server.enter();
        reload::start(reloader)
    };
    assert!(watcher.is_some(), "the file-system watcher started");
    let listener = server
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .unwrap();
    let address = listener.local_addr().unwrap();
    let served = gateway.clone();
    server.spawn(async move {
        if let Err(err) = sezzlee_gateway::server::serve(served, listener).await {
            eprintln!("gateway stopped: {err}");
        }
    });

    let mut results: Vec<Level> = Vec::new();
    let mut idle_connections: Option<(usize, f64)> = None;
    if largest > 0 {
        let mut child = Listeners::spawn(address, &gateway.settings.endpoint, largest);
        let hello = child.ask("hello");
        assert_eq!(
            hello.first().map(String::as_str),
            Some("hello"),
            "{hello:?}"
        );
        // Warm-up reloads before the empty reading: the first rebuilds grow
        // the allocator's arenas once, and that growth belongs to reloading,
        // not to the streams measured against this baseline.
        for warm_up in 1..=WARM_UP_EDITS {
            let before = gateway.store.current().generation;
            let text = original.replace(
                SUMMARY,
                &format!("summary: Lists orders, newest first (warm-up {warm_up})."),
            );
            std::fs::write(&orders, text).unwrap();
            let deadline = Instant::now() + Duration::from_millis(timeout_ms);
            while gateway.store.current().generation == before {
                assert!(
                    Instant::now() < deadline,
                    "warm-up edit {warm_up}: no reload"
                );
                std::thread::sleep(Duration::from_millis(5));
            }
            std::thread::sleep(debounce * 4);
        }
        std::thread::sleep(settle);
        let server_base = status_kib("self", "VmRSS:");
        let client_base = child.rss_kib();
        let mut open = 0usize;
        let mut edit = 0usize;
        for &n in &fit {
            let started = Instant::now();
            let answer = child.ask(&format!("open {}", n - open));
            let open_secs = started.elapsed().as_secs_f64();
            // "opened <total> failed <count> <first error…>"
            let failed: usize = answer.get(3).and_then(|v| v.parse().ok()).unwrap_or(0);
            if failed > 0 {
                eprintln!(
                    "{n} listeners: {failed} streams failed to open: {}",
                    answer[4..].join(" ")
                );
                break;
            }
            open = n;
            std::thread::sleep(settle);
            let count = gateway.streams.count();
            assert_eq!(count, n, "the gateway counts every open stream");
            let server_kib = status_kib("self", "VmRSS:");
            let client_kib = child.rss_kib();
            let mut level = Level {
                listeners: n,
                open_secs,
                server_kib_per_stream: server_kib.saturating_sub(server_base) as f64 / n as f64,
                client_kib_per_stream: client_kib.saturating_sub(client_base) as f64 / n as f64,
                latencies: Vec::with_capacity(n * edits),
                swaps: Vec::new(),
                spreads: Vec::new(),
                missing: 0,
                duplicates: 0,
            };
            for _ in 0..edits {
                edit += 1;
                let before = gateway.store.current().generation;
                let armed = child.ask("arm");
                assert_eq!(armed.first().map(String::as_str), Some("armed"));
                let swapped = swap_stamp(&gateway);
                let written = now_ns();
                let text = original.replace(
                    SUMMARY,
                    &format!("summary: Lists orders, newest first (edit {edit})."),
                );
                std::fs::write(&orders, text).unwrap();
                // "latencies <missing> <duplicates> <last_ns> <µs>…"
                let answer = child.ask(&format!("collect {written} {timeout_ms}"));
                assert_eq!(answer[0], "latencies", "{answer:?}");
                let missing: usize = answer[1].parse().unwrap();
                let duplicates: usize = answer[2].parse().unwrap();
                let last_ns: u64 = answer[3].parse().unwrap();
                let swap_ns = swapped
                    .join()
                    .unwrap()
                    .unwrap_or_else(|| panic!("edit {edit}: no new generation"));
                let after = gateway.store.current().generation;
                assert_eq!(after, before + 1, "edit {edit}: one generation per edit");
                level.missing += missing;
                level.duplicates += duplicates;
                level
                    .swaps
                    .push(swap_ns.saturating_sub(written) as f64 / 1e6);
                if last_ns > 0 {
                    level
                        .spreads
                        .push(last_ns.saturating_sub(swap_ns) as f64 / 1e6);
                }
                level
                    .latencies
                    .extend(answer[4..].iter().map(|v| v.parse::<f64>().unwrap() / 1e3));
                // Let the streams and the watcher settle before the next edit.
                std::thread::sleep(debounce * 4);
            }
            eprintln!(
                "{n} listeners: opened in {open_secs:.2} s, {} edits measured",
                edits
            );
            results.push(level);
        }
        // For comparison: idle keep-alive connections (one GET /healthz
        // each), opened on top of the streams so no freed memory is reused.
        let room = limit.saturating_sub(open_fds() as u64 + 256) as usize;
        let idle = room.min(largest.max(100)).min(5_000);
        if open > 0 && idle >= 100 {
            std::thread::sleep(settle);
            let before = status_kib("self", "VmRSS:");
            let answer = child.ask(&format!("idle {idle}"));
            let failed: usize = answer.get(3).and_then(|v| v.parse().ok()).unwrap_or(0);
            std::thread::sleep(settle);
            let after = status_kib("self", "VmRSS:");
            if failed == 0 {
                idle_connections = Some((idle, after.saturating_sub(before) as f64 / idle as f64));
            } else {
                eprintln!(
                    "idle connections: {failed} failed: {}",
                    answer[4..].join(" ")
                );
            }
        }
        let bye = child.ask("quit");
        assert_eq!(bye.first().map(String::as_str), Some("bye"));
        let _ = child.process.wait();
    }
    drop(watcher);
    gateway.begin_shutdown();

    println!();
    println!(
        "subscriptions/listen fan-out: write of orders.yaml → notifications/tools/list_changed per listener \
         (debounce {} ms, {edits} edits per level, gateway {server_threads} worker thread(s), listeners in a child process, {cores} cores)",
        debounce.as_millis()
    );
    println!(
        "{:>9} {:>8} {:>9} {:>9} {:>9} {:>11} {:>12} {:>10} {:>10} {:>9}",
        "listeners",
        "open s",
        "p50 ms",
        "p99 ms",
        "max ms",
        "write→swap",
        "swap→last",
        "KiB/stream",
        "client KiB",
        "missing"
    );
    for level in &results {
        let mut sorted = level.latencies.clone();
        sorted.sort_by(f64::total_cmp);
        let mut swaps = level.swaps.clone();
        swaps.sort_by(f64::total_cmp);
        let mut spreads = level.spreads.clone();
        spreads.sort_by(f64::total_cmp);
        println!(
            "{:>9} {:>8.2} {:>9.1} {:>9.1} {:>9.1} {:>8.1} ms {:>9.1} ms {:>10.1} {:>10.1} {:>9}",
            level.listeners,
            level.open_secs,
            percentile(&sorted, 0.5),
            percentile(&sorted, 0.99),
            sorted.last().copied().unwrap_or(f64::NAN),
            percentile(&swaps, 0.5),
            percentile(&spreads, 0.5),
            level.server_kib_per_stream,
            level.client_kib_per_stream,
            level.missing + level.duplicates,
        );
    }
    println!(
        "(write→swap and swap→last: medians over the edits; KiB/stream: gateway VmRSS growth over the empty baseline / listeners; \
         missing counts listeners without exactly one list_changed per edit)"
    );
    if let Some((count, kib)) = idle_connections {
        println!(
            "for comparison, an idle keep-alive HTTP/1.1 connection (one GET /healthz, then idle; {count} opened on top of the streams): {kib:.1} KiB in the gateway"
        );
    }
    for n in skipped {
        println!("{n} listeners: skipped, open-files limit {limit} per process");
    }
    for level in &results {
        let mut sorted = level.latencies.clone();
        sorted.sort_by(f64::total_cmp);
        let p50 = percentile(&sorted, 0.5);
        let target = match level.listeners {
            1000 => Some(150.0),
            10_000 => Some(300.0),
            _ => None,
        };
        if let Some(target) = target {
            println!(
                "target p50 ≤ {target} ms at {} listeners: {:.1} ms, {}",
                level.listeners,
                p50,
                if p50 <= target { "met" } else { "NOT met" }
            );
        }
        if level.listeners >= 1000 {
            println!(
                "target ≤ 16 KiB per idle stream at {} listeners: {:.1} KiB, {}",
                level.listeners,
                level.server_kib_per_stream,
                if level.server_kib_per_stream <= 16.0 {
                    "met"
                } else {
                    "NOT met"
                }
            );
        }
    }
    println!();
    server.shutdown_timeout(Duration::from_secs(2));

    if rebuild_edits > 0 {
        rebuild_real_folder(rebuild_edits);
    }
}

/// A thread (with its own small runtime, so no gateway worker queue stands
/// between the swap and the stamp) that returns when the store's
/// generation changes.
fn swap_stamp(gateway: &Arc<Gateway>) -> std::thread::JoinHandle<Option<u64>> {
    let mut generations = gateway.store.subscribe();
    generations.borrow_and_update();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap();
        runtime.block_on(async {
            match tokio::time::timeout(Duration::from_secs(30), generations.changed()).await {
                Ok(Ok(())) => Some(now_ns()),
                _ => None,
            }
        })
    })
}

/// Whether two versions of a file share their parse (not parsed again).
fn same_parse(a: &Option<Parsed>, b: &Option<Parsed>) -> bool {
    match (a, b) {
        (Some(Parsed::Json(a, _)), Some(Parsed::Json(b, _))) => Arc::ptr_eq(a, b),
        (Some(Parsed::Sidecar(a)), Some(Parsed::Sidecar(b))) => Arc::ptr_eq(a, b),
        (Some(Parsed::Packed(a)), Some(Parsed::Packed(b))) => Arc::ptr_eq(a, b),
        (None, None) => true,
        _ => false,
    }
}

/// Files of `next` whose parse is not `previous`'s.
fn reparsed(previous: &Sources, next: &Sources) -> Vec<String> {
    next.files
        .iter()
        .filter(|(rel, file)| {
            previous
                .files
                .get(*rel)
                .is_none_or(|before| !same_parse(&before.serving, &file.serving))
        })
        .map(|(rel, _)| rel.to_string())
        .collect()
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    percentile(&values, 0.5)
}

fn rebuild_real_folder(edits: usize) {
    let real = corpus::vendored().dir.as_path();
    let dir = tempfile::tempdir().expect("temporary catalogs folder");
    let mut bytes = 0u64;
    let mut files = 0usize;
    for entry in std::fs::read_dir(real).expect("the real catalogs folder") {
        let entry = entry.unwrap();
        let name = entry.file_name().into_string().unwrap();
        if is_catalog_file(&name) {
            bytes += std::fs::copy(entry.path(), dir.path().join(&name)).unwrap();
            files += 1;
        }
    }
    let small = dir.path().join(SMALL_DOC);
    let mut document: Value =
        serde_json::from_slice(&std::fs::read(&small).expect("the small document")).unwrap();

    let started = Instant::now();
    let sources = Sources::scan(dir.path(), None).unwrap();
    let cold_scan = started.elapsed();
    let started = Instant::now();
    let catalog = Catalog::build(&sources);
    let cold_build = started.elapsed();
    let tools = catalog.tools().len();

    let started = Instant::now();
    let untouched = Sources::scan(dir.path(), Some(&sources)).unwrap();
    let untouched_scan = started.elapsed();
    let untouched_reparsed = reparsed(&sources, &untouched);
    assert!(
        untouched_reparsed.is_empty(),
        "an untouched folder parses nothing again: {untouched_reparsed:?}"
    );

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let settings = Settings {
        catalogs: dir.path().to_path_buf(),
        listen: "127.0.0.1:0".parse().unwrap(),
        watch: WatchMode::Off,
        demo_backend: DemoBackend::Off,
        ..Settings::default()
    };
    let gateway = Gateway::new(settings, catalog, cold_scan + cold_build).expect("a gateway");
    let reloader = Reloader::new(gateway.clone(), sources.clone());
    let started = Instant::now();
    let outcome = runtime.block_on(reloader.rescan());
    let untouched_rescan = started.elapsed();
    assert_eq!(outcome, Outcome::Unchanged);

    let mut previous = sources;
    let (mut scans, mut builds, mut rescans) = (Vec::new(), Vec::new(), Vec::new());
    let (mut prepares, mut drops) = (Vec::new(), Vec::new());
    for k in 1..=edits {
        document["paths"]["/info.0.json"]["get"]["description"] =
            json!(format!("Fetch current comic and metadata (edit {k}).\n"));
        std::fs::write(&small, serde_json::to_vec(&document).unwrap()).unwrap();

        let started = Instant::now();
        let next = Sources::scan(dir.path(), Some(&previous)).unwrap();
        scans.push(ms(started.elapsed()));
        let again = reparsed(&previous, &next);
        assert_eq!(again, [SMALL_DOC], "only the edited file is parsed again");
        let started = Instant::now();
        let rebuilt = Catalog::build(&next);
        builds.push(ms(started.elapsed()));
        assert_eq!(rebuilt.tools().len(), tools);
        // What Reloader::rescan does after the build, on the async thread:
        // prepare the snapshot (cards for every tool), and drop the old one.
        let started = Instant::now();
        let snapshot = Snapshot::new(rebuilt, 0, Duration::ZERO);
        prepares.push(ms(started.elapsed()));
        let started = Instant::now();
        drop(snapshot);
        drops.push(ms(started.elapsed()));
        previous = next;

        let before = gateway.store.current().generation;
        let started = Instant::now();
        let outcome = runtime.block_on(reloader.rescan());
        rescans.push(ms(started.elapsed()));
        assert_eq!(outcome, Outcome::Bumped(before + 1), "edit {k}");
    }

    println!(
        "rebuild of the vendored corpus ({files} files, {:.1} MB, {tools} tools) after a one-file change ({SMALL_DOC})",
        bytes as f64 / 1e6
    );
    println!(
        "  cold: scan+parse {:.0} ms, build {:.0} ms",
        ms(cold_scan),
        ms(cold_build)
    );
    println!(
        "  untouched folder: Sources::scan {:.0} ms (hashing only; 0 files parsed again), Reloader::rescan {:.0} ms (Unchanged, no build)",
        ms(untouched_scan),
        ms(untouched_rescan)
    );
    println!(
        "  one file changed (median of {edits}): Sources::scan {:.0} ms (1 file parsed again: {SMALL_DOC}, {} others shared by Arc), \
         Catalog::build {:.0} ms, Reloader::rescan end to end {:.0} ms",
        median(scans),
        files - 1,
        median(builds),
        median(rescans)
    );
    println!(
        "  parts Reloader::rescan runs in spawn_blocking, off the async workers: preparing cards/tags/rules for every tool {:.0} ms, dropping the old snapshot {:.0} ms",
        median(prepares),
        median(drops)
    );
    println!();
    runtime.shutdown_timeout(Duration::from_secs(1));
}

// ----------------------------------------------------------------- child

mod child {
    //! The listeners: raw HTTP/1.1 `subscriptions/listen` streams, driven
    //! by commands on stdin, one answer line each on stdout.

    use super::{MODERN, now_ns};
    use std::io::{BufRead, Write};
    use std::net::SocketAddr;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering};
    use std::time::{Duration, Instant};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpStream;
    use tokio::sync::Semaphore;

    const ACK: &[u8] = b"notifications/subscriptions/acknowledged";
    const CHANGED: &[u8] = b"notifications/tools/list_changed";
    /// Streams being opened at once (the accept backlog is finite).
    const OPENING: usize = 64;

    /// What the streams report, by stream index.
    struct Marks {
        /// Wall-clock ns of the first list_changed since the last arm; 0: none.
        first: Vec<AtomicU64>,
        /// list_changed seen since the last arm.
        count: Vec<AtomicU32>,
        received: AtomicUsize,
        closed: AtomicUsize,
    }

    pub fn run() {
        let address: SocketAddr = std::env::var("FANOUT_CHILD_ADDRESS")
            .unwrap()
            .parse()
            .unwrap();
        let endpoint = std::env::var("FANOUT_CHILD_ENDPOINT").unwrap();
        let capacity: usize = std::env::var("FANOUT_CHILD_CAPACITY")
            .unwrap()
            .parse()
            .unwrap();
        let threads: usize = std::env::var("FANOUT_CLIENT_THREADS")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(1);
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(threads.max(1))
            .enable_all()
            .build()
            .unwrap();
        let marks = Arc::new(Marks {
            first: (0..capacity).map(|_| AtomicU64::new(0)).collect(),
            count: (0..capacity).map(|_| AtomicU32::new(0)).collect(),
            received: AtomicUsize::new(0),
            closed: AtomicUsize::new(0),
        });
        let mut open = 0usize;
        let stdout = std::io::stdout();
        for line in std::io::stdin().lock().lines() {
            let Ok(line) = line else { break };
            let words: Vec<&str> = line.split_whitespace().collect();
            let answer = match words.as_slice() {
                ["hello"] => "hello".to_string(),
                ["open", more] => {
                    let more: usize = more.parse().unwrap();
                    let range = open..(open + more).min(capacity);
                    let (opened, errors) = runtime.block_on(open_streams(
                        address,
                        &endpoint,
                        range.clone(),
                        marks.clone(),
                    ));
                    open += opened;
                    let first = errors.first().cloned().unwrap_or_default();
                    format!("opened {open} failed {} {first}", errors.len())
                }
                ["idle", more] => {
                    let more: usize = more.parse().unwrap();
                    let (opened, errors) = runtime.block_on(open_idle(address, more));
                    let first = errors.first().cloned().unwrap_or_default();
                    format!("idle {opened} failed {} {first}", errors.len())
                }
                ["arm"] => {
                    for i in 0..open {
                        marks.first[i].store(0, Ordering::SeqCst);
                        marks.count[i].store(0, Ordering::SeqCst);
                    }
                    marks.received.store(0, Ordering::SeqCst);
                    "armed".to_string()
                }
                ["collect", written, timeout_ms] => {
                    let written: u64 = written.parse().unwrap();
                    let timeout = Duration::from_millis(timeout_ms.parse().unwrap());
                    let started = Instant::now();
                    while marks.received.load(Ordering::SeqCst) < open
                        && started.elapsed() < timeout
                    {
                        std::thread::sleep(Duration::from_millis(1));
                    }
                    // Late duplicates would arrive right after the first.
                    std::thread::sleep(Duration::from_millis(20));
                    collect(&marks, open, written)
                }
                ["quit"] => {
                    let _ = writeln!(stdout.lock(), "bye");
                    break;
                }
                other => format!("error unknown command {other:?}"),
            };
            let mut out = stdout.lock();
            let _ = writeln!(out, "{answer}");
            let _ = out.flush();
        }
        runtime.shutdown_background();
    }

    /// "latencies <missing> <duplicates> <last_ns> <µs per listener>…"
    fn collect(marks: &Marks, open: usize, written: u64) -> String {
        let mut missing = 0;
        let mut duplicates = 0;
        let mut last = 0u64;
        let mut latencies = Vec::with_capacity(open);
        for i in 0..open {
            let first = marks.first[i].load(Ordering::SeqCst);
            match marks.count[i].load(Ordering::SeqCst) {
                0 => missing += 1,
                1 => {}
                _ => duplicates += 1,
            }
            if first > 0 {
                last = last.max(first);
                latencies.push(first.saturating_sub(written) / 1000);
            }
        }
        let mut out = format!("latencies {missing} {duplicates} {last}");
        for latency in latencies {
            out.push(' ');
            out.push_str(&latency.to_string());
        }
        out
    }

    async fn open_streams(
        address: SocketAddr,
        endpoint: &str,
        range: std::ops::Range<usize>,
        marks: Arc<Marks>,
    ) -> (usize, Vec<String>) {
        let gate = Arc::new(Semaphore::new(OPENING));
        let mut pending = Vec::with_capacity(range.len());
        for index in range {
            let permit = gate.clone().acquire_owned().await.unwrap();
            let (ready, answer) = tokio::sync::oneshot::channel();
            let request = request(address, endpoint, index);
            let marks = marks.clone();
            tokio::spawn(async move {
                listen(address, request, index, marks, ready, permit).await;
            });
            pending.push(answer);
        }
        let mut opened = 0;
        let mut errors = Vec::new();
        for answer in pending {
            match answer.await {
                Ok(Ok(())) => opened += 1,
                Ok(Err(why)) => errors.push(why),
                Err(_) => errors.push("stream task ended".to_string()),
            }
        }
        (opened, errors)
    }

    /// `count` keep-alive connections that each made one `GET /healthz`
    /// and then sit idle: what any idle HTTP/1.1 connection costs.
    async fn open_idle(address: SocketAddr, count: usize) -> (usize, Vec<String>) {
        let gate = Arc::new(Semaphore::new(OPENING));
        let mut pending = Vec::with_capacity(count);
        for _ in 0..count {
            let permit = gate.clone().acquire_owned().await.unwrap();
            let (ready, answer) = tokio::sync::oneshot::channel::<Result<(), String>>();
            tokio::spawn(async move {
                let opened = async {
                    let mut stream = TcpStream::connect(address)
                        .await
                        .map_err(|e| format!("connect: {e}"))?;
                    stream.set_nodelay(true).ok();
                    let request = format!("GET /healthz HTTP/1.1\r\nHost: {address}\r\n\r\n");
                    stream
                        .write_all(request.as_bytes())
                        .await
                        .map_err(|e| format!("write: {e}"))?;
                    let mut buffer = [0u8; 512];
                    let mut seen = Vec::new();
                    while find(&seen, b"\"ok\"").is_none() {
                        let n = stream
                            .read(&mut buffer)
                            .await
                            .map_err(|e| format!("read: {e}"))?;
                        if n == 0 {
                            return Err("closed".to_string());
                        }
                        seen.extend_from_slice(&buffer[..n]);
                    }
                    Ok(stream)
                };
                match opened.await {
                    Ok(mut stream) => {
                        let _ = ready.send(Ok(()));
                        drop(permit);
                        let mut buffer = [0u8; 64];
                        while let Ok(n) = stream.read(&mut buffer).await {
                            if n == 0 {
                                break;
                            }
                        }
                    }
                    Err(why) => {
                        let _ = ready.send(Err(why));
                    }
                }
            });
            pending.push(answer);
        }
        let mut opened = 0;
        let mut errors = Vec::new();
        for answer in pending {
            match answer.await {
                Ok(Ok(())) => opened += 1,
                Ok(Err(why)) => errors.push(why),
                Err(_) => errors.push("connection task ended".to_string()),
            }
        }
        (opened, errors)
    }

    fn request(address: SocketAddr, endpoint: &str, index: usize) -> Vec<u8> {
        let body = serde_json::json!({
            "jsonrpc": "2.0",
            "id": index,
            "method": "subscriptions/listen",
            "params": {
                "notifications": {"toolsListChanged": true},
                "_meta": {
                    "io.modelcontextprotocol/protocolVersion": MODERN,
                    "io.modelcontextprotocol/clientCapabilities": {},
                    "io.modelcontextprotocol/clientInfo": {"name": "sezzlee-fanout", "version": "0.0.0"}
                }
            }
        })
        .to_string();
        format!(
            "POST {endpoint} HTTP/1.1\r\nHost: {address}\r\nContent-Type: application/json\r\n\
             Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: {MODERN}\r\n\
             Mcp-Method: subscriptions/listen\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        )
        .into_bytes()
    }

    fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
        haystack.windows(needle.len()).position(|w| w == needle)
    }

    fn count(haystack: &[u8], needle: &[u8]) -> u32 {
        haystack
            .windows(needle.len())
            .filter(|w| *w == needle)
            .count() as u32
    }

    /// One stream: open, wait for the acknowledgement, then stamp every
    /// list_changed until the gateway closes it.
    async fn listen(
        address: SocketAddr,
        request: Vec<u8>,
        index: usize,
        marks: Arc<Marks>,
        ready: tokio::sync::oneshot::Sender<Result<(), String>>,
        permit: tokio::sync::OwnedSemaphorePermit,
    ) {
        let mut buffer = [0u8; 2048];
        let mut pending: Vec<u8> = Vec::new();
        let opened = async {
            let mut stream = TcpStream::connect(address)
                .await
                .map_err(|e| format!("connect: {e}"))?;
            stream.set_nodelay(true).ok();
            stream
                .write_all(&request)
                .await
                .map_err(|e| format!("write: {e}"))?;
            loop {
                let n = stream
                    .read(&mut buffer)
                    .await
                    .map_err(|e| format!("read: {e}"))?;
                if n == 0 {
                    return Err(format!(
                        "closed before the acknowledgement: {}",
                        String::from_utf8_lossy(&pending)
                    ));
                }
                pending.extend_from_slice(&buffer[..n]);
                if pending.len() >= 12 && !pending.starts_with(b"HTTP/1.1 200") {
                    // Read the rest of a refusal for the report.
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    if let Ok(n) = stream.try_read(&mut buffer) {
                        pending.extend_from_slice(&buffer[..n]);
                    }
                    let text = String::from_utf8_lossy(&pending).replace(['\r', '\n'], " ");
                    return Err(format!("refused: {text}"));
                }
                if let Some(at) = find(&pending, ACK) {
                    pending.drain(..at + ACK.len());
                    return Ok(stream);
                }
            }
        };
        let mut stream = match opened.await {
            Ok(stream) => {
                let _ = ready.send(Ok(()));
                stream
            }
            Err(why) => {
                let _ = ready.send(Err(why));
                return;
            }
        };
        drop(permit);
        loop {
            let n = match stream.read(&mut buffer).await {
                Ok(0) | Err(_) => break,
                Ok(n) => n,
            };
            pending.extend_from_slice(&buffer[..n]);
            // Only whole events: each ends with a blank line.
            let Some(end) = pending.windows(2).rposition(|w| w == b"\n\n") else {
                continue;
            };
            let hits = count(&pending[..end], CHANGED);
            if hits > 0 {
                let stamp = now_ns();
                if marks.first[index]
                    .compare_exchange(0, stamp, Ordering::SeqCst, Ordering::SeqCst)
                    .is_ok()
                {
                    marks.received.fetch_add(1, Ordering::SeqCst);
                }
                marks.count[index].fetch_add(hits, Ordering::SeqCst);
            }
            pending.drain(..end + 2);
        }
        marks.closed.fetch_add(1, Ordering::SeqCst);
    }
}
