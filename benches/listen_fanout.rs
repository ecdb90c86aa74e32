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
//! connection per stream, as an SSE client holds; the request is
//! `tests/it/mcp_request.rs`'s, shared with the tests), so its own cost per
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
//! bound of what a remote client would see. Each level's row is printed
//! as soon as the level is measured; the table is printed again, whole,
//! at the end.
//!
//! For comparison, idle keep-alive connections (one `GET /healthz` each)
//! are then opened on top of the streams; their count is what fits (see
//! Limits).
//!
//! Finally, the whole vendored corpus (tests/fixtures/corpus, unpacked) is copied to a
//! temporary folder and rescanned: untouched (hashing only), then after
//! one small file changed, checking by `Arc` pointer identity that only
//! that file was parsed again, and timing the rebuild both as its parts
//! (`Sources::scan`, `Catalog::build`) and as `Reloader::rescan` does it.
//!
//! # Limits
//! Each process needs one descriptor per connection plus about
//! [`SPARE_FDS`], and the child one local port per connection (the
//! ephemeral range, `/proc/sys/net/ipv4/ip_local_port_range`). A level
//! that does not fit `ulimit -n` (e.g. `ulimit -n 20000`; the hard limit
//! caps what a shell may set) or the ports is skipped with the reason.
//! The idle connections come on top of the largest level's streams, in
//! both processes and under the gateway's connection cap: their count
//! (at most [`IDLE_MOST`]) is cut to what fits the descriptors left in
//! each process (the child reports its own), the ports left and the cap,
//! with the reason printed, and skipped when fewer than 100 fit.
//!
//! The gateway's caps are raised for this benchmark: `max_streams` (1,024
//! by default) and `max_streams_per_caller` (16 by default; all loopback
//! listeners are one caller) to the largest level, and `max_connections`
//! (by default half the open-files limit) to the largest level plus
//! [`IDLE_MOST`]. With the default cap, 10,000 streams at `ulimit -n
//! 20000` filled it: the idle connections then waited in the listen
//! backlog, never answered, and the bench hung in "idle 5000" until
//! interrupted (Ctrl-C kills the child, while the gateway in this process
//! takes SIGINT for a graceful shutdown), then died with "the listener
//! process exited", its figures unprinted.
//!
//! # Failing fast
//! Every wait has a deadline: each command to the child (its answer line
//! is read by a thread and waited for with a timeout), the child's opening
//! of streams and idle connections (`FANOUT_OPEN_TIMEOUT_MS`), each edit's
//! notifications and swap (`FANOUT_TIMEOUT_MS`), the warm-up reloads, the
//! child's exit, and each `Reloader::rescan` of the real folder. When one
//! passes, or the child exits, the bench says which step it was in and
//! what it was waiting for, kills the child, prints the summary of what it
//! measured, and exits with status 1.
//!
//! # Configuration (env)
//! - `FANOUT_LEVELS` (default `1,100,1000,10000`): listener counts;
//! - `FANOUT_EDITS` (default 5): edits per level;
//! - `FANOUT_TIMEOUT_MS` (default 10000): wait per edit for every listener
//!   (and for the swap, and for each warm-up reload);
//! - `FANOUT_OPEN_TIMEOUT_MS` (default 30000): wait for a level's new
//!   streams, or the idle connections, to be open;
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
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::Arc;
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// The real documents these benchmarks name: the repository's own corpus
/// (tests/it/corpus.rs; unpacked once into cargo's temporary folder).
#[path = "../tests/it/corpus.rs"]
mod corpus;
/// The listeners' request: a correct 2026-07-28 `subscriptions/listen`
/// (shared with the tests).
#[path = "../tests/it/mcp_request.rs"]
mod mcp_request;

const CHILD_ENV: &str = "SEZZLEE_FANOUT_CHILD";
const SHIPPED: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/catalogs");
/// The line of `orders.yaml` each edit rewrites.
const SUMMARY: &str = "summary: Lists orders, newest first.";
/// Catalog reloads done before the empty RSS reading (see `parent`).
const WARM_UP_EDITS: usize = 3;
/// The small real document edited in the rebuild part.
const SMALL_DOC: &str = "xkcd.com_xkcd_1.0.0.json";
/// Descriptors each process needs besides its connections: stdio and the
/// pipes, the runtimes, the watcher, the catalog files a reload reads.
const SPARE_FDS: u64 = 128;
/// Ephemeral ports left free beside the child's connections.
const SPARE_PORTS: u64 = 1_024;
/// Idle keep-alive connections opened for comparison, at most.
const IDLE_MOST: usize = 5_000;
/// Fewer idle connections than this are not worth a reading.
const IDLE_LEAST: usize = 100;
/// The wait for an answer to a command that waits on nothing (`hello`,
/// `arm`, `fds`, `quit`), and for the child's exit.
const QUICK: Duration = Duration::from_secs(10);
/// How much longer than the child's own deadline for a command the parent
/// waits for its answer.
const GRACE: Duration = Duration::from_secs(5);
/// The wait for one `Reloader::rescan` of the real folder (a build takes
/// about 5 s).
const RESCAN_DEADLINE: Duration = Duration::from_secs(120);

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

fn open_fds() -> u64 {
    std::fs::read_dir("/proc/self/fd").map_or(0, |d| d.count() as u64)
}

/// How many local ports a connection to one address may take: the size
/// of the ephemeral range.
fn ephemeral_ports() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range").ok()?;
    let mut bounds = text.split_whitespace().map(|v| v.parse::<u64>().ok());
    let (low, high) = (bounds.next()??, bounds.next()??);
    Some(high.saturating_sub(low) + 1)
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

/// Why the bench stopped before the end: the step it was in and what it
/// was waiting for.
struct Stop(String);

impl std::fmt::Display for Stop {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// Word `at` of an answer, parsed.
fn word<T: std::str::FromStr>(answer: &[String], at: usize, step: &str) -> Result<T, Stop> {
    answer.get(at).and_then(|w| w.parse().ok()).ok_or_else(|| {
        Stop(format!(
            "{step}: the listener process answered something unexpected: {}",
            answer.join(" ")
        ))
    })
}

/// The child process holding the listeners, driven line by line; its
/// answers are read by a thread, so every wait for one has a deadline.
/// Killed when dropped, unless it has exited.
struct Listeners {
    process: Child,
    stdin: ChildStdin,
    answers: Receiver<String>,
}

impl Listeners {
    fn spawn(
        address: std::net::SocketAddr,
        endpoint: &str,
        capacity: usize,
    ) -> Result<Listeners, Stop> {
        let threads = env_u64("FANOUT_CLIENT_THREADS", 1);
        let executable = std::env::current_exe().map_err(|e| {
            Stop(format!(
                "starting the listener process: own executable: {e}"
            ))
        })?;
        let mut process = Command::new(executable)
            .env(CHILD_ENV, "1")
            .env("FANOUT_CHILD_ADDRESS", address.to_string())
            .env("FANOUT_CHILD_ENDPOINT", endpoint)
            .env("FANOUT_CHILD_CAPACITY", capacity.to_string())
            .env("FANOUT_CLIENT_THREADS", threads.to_string())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| Stop(format!("starting the listener process: {e}")))?;
        let (Some(stdin), Some(stdout)) = (process.stdin.take(), process.stdout.take()) else {
            let _ = process.kill();
            let _ = process.wait();
            return Err(Stop("starting the listener process: no pipes".to_string()));
        };
        let (sender, answers) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if sender.send(line).is_err() {
                    break;
                }
            }
        });
        Ok(Listeners {
            process,
            stdin,
            answers,
        })
    }

    /// Sends `command` in `step`; the answer line's words, if it comes
    /// within `wait` and its first word is `first`.
    fn ask(
        &mut self,
        step: &str,
        command: &str,
        first: &str,
        wait: Duration,
    ) -> Result<Vec<String>, Stop> {
        let sent = writeln!(self.stdin, "{command}").and_then(|()| self.stdin.flush());
        if let Err(err) = sent {
            return Err(Stop(format!(
                "{step}: the listener process took no command '{command}' ({err}); it {}",
                self.exit_status()
            )));
        }
        match self.answers.recv_timeout(wait) {
            Ok(line) if line.split_whitespace().next() == Some(first) => {
                Ok(line.split_whitespace().map(str::to_string).collect())
            }
            Ok(line) => Err(Stop(format!(
                "{step}: the listener process answered '{line}' to '{command}', not '{first} …'"
            ))),
            Err(RecvTimeoutError::Timeout) => Err(Stop(format!(
                "{step}: timed out after {:.1} s waiting for the listener process to answer '{command}'",
                wait.as_secs_f64()
            ))),
            Err(RecvTimeoutError::Disconnected) => Err(Stop(format!(
                "{step}: the listener process {} before answering '{command}'",
                self.exit_status()
            ))),
        }
    }

    /// How the child ended ("exited (signal: 2 (SIGINT))"), waiting a
    /// little for it; or that it is still running.
    fn exit_status(&mut self) -> String {
        let deadline = Instant::now() + Duration::from_secs(1);
        loop {
            match self.process.try_wait() {
                Ok(Some(status)) => return format!("exited ({status})"),
                Ok(None) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(10))
                }
                Ok(None) => return "stopped answering (still running)".to_string(),
                Err(err) => return format!("cannot be waited for ({err})"),
            }
        }
    }

    /// Asks the child to quit and waits, at most [`QUICK`], for its exit.
    fn quit(mut self) -> Result<(), Stop> {
        self.ask("quitting", "quit", "bye", QUICK)?;
        let deadline = Instant::now() + QUICK;
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.process.try_wait() {
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        Err(Stop(format!(
            "quitting: timed out after {:.0} s waiting for the listener process to exit after 'bye' (killed)",
            QUICK.as_secs_f64()
        )))
    }

    fn rss_kib(&self) -> u64 {
        status_kib(&self.process.id().to_string(), "VmRSS:")
    }
}

impl Drop for Listeners {
    fn drop(&mut self) {
        if let Ok(None) = self.process.try_wait() {
            let _ = self.process.kill();
            let _ = self.process.wait();
        }
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

impl Level {
    fn row(&self) -> String {
        let mut sorted = self.latencies.clone();
        sorted.sort_by(f64::total_cmp);
        let mut swaps = self.swaps.clone();
        swaps.sort_by(f64::total_cmp);
        let mut spreads = self.spreads.clone();
        spreads.sort_by(f64::total_cmp);
        format!(
            "{:>9} {:>8.2} {:>9.1} {:>9.1} {:>9.1} {:>8.1} ms {:>9.1} ms {:>10.1} {:>10.1} {:>9}",
            self.listeners,
            self.open_secs,
            percentile(&sorted, 0.5),
            percentile(&sorted, 0.99),
            sorted.last().copied().unwrap_or(f64::NAN),
            percentile(&swaps, 0.5),
            percentile(&spreads, 0.5),
            self.server_kib_per_stream,
            self.client_kib_per_stream,
            self.missing + self.duplicates,
        )
    }

    fn p50(&self) -> f64 {
        let mut sorted = self.latencies.clone();
        sorted.sort_by(f64::total_cmp);
        percentile(&sorted, 0.5)
    }
}

/// The idle keep-alive connections' reading, or why there is none.
enum Idle {
    Measured { count: usize, kib: f64 },
    Skipped(String),
}

/// What the fan-out part measured, printed as it comes and summed up at
/// the end.
#[derive(Default)]
struct Figures {
    /// The table's title, once the gateway's settings are known.
    title: String,
    /// Whether the table's head has been printed.
    head_printed: bool,
    levels: Vec<Level>,
    idle: Option<Idle>,
    skipped: Vec<String>,
}

const TABLE_HEAD: [&str; 10] = [
    "listeners",
    "open s",
    "p50 ms",
    "p99 ms",
    "max ms",
    "write→swap",
    "swap→last",
    "KiB/stream",
    "client KiB",
    "missing",
];

fn print_head(title: &str) {
    println!("{title}");
    let h = TABLE_HEAD;
    println!(
        "{:>9} {:>8} {:>9} {:>9} {:>9} {:>11} {:>12} {:>10} {:>10} {:>9}",
        h[0], h[1], h[2], h[3], h[4], h[5], h[6], h[7], h[8], h[9]
    );
}

impl Figures {
    /// Prints a level's row now (the table's head before the first).
    fn measured(&mut self, level: Level) {
        if !self.head_printed {
            println!();
            print_head(&self.title);
            self.head_printed = true;
        }
        println!("{}", level.row());
        self.levels.push(level);
    }

    fn idle(&mut self, idle: Idle) {
        match &idle {
            Idle::Measured { count, kib } => println!("{}", idle_line(*count, *kib)),
            Idle::Skipped(why) => eprintln!("{why}"),
        }
        self.idle = Some(idle);
    }

    fn summary(&self) {
        println!();
        if !self.levels.is_empty() {
            print_head(&self.title);
            for level in &self.levels {
                println!("{}", level.row());
            }
            println!(
                "(write→swap and swap→last: medians over the edits; KiB/stream: gateway VmRSS growth over the empty baseline / listeners; \
                 missing counts listeners without exactly one list_changed per edit)"
            );
        }
        match &self.idle {
            Some(Idle::Measured { count, kib }) => println!("{}", idle_line(*count, *kib)),
            Some(Idle::Skipped(why)) => println!("{why}"),
            None => {}
        }
        for skipped in &self.skipped {
            println!("{skipped}");
        }
        for level in &self.levels {
            let p50 = level.p50();
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
    }
}

fn idle_line(count: usize, kib: f64) -> String {
    format!(
        "for comparison, an idle keep-alive HTTP/1.1 connection (one GET /healthz, then idle; {count} opened on top of the streams): {kib:.1} KiB in the gateway"
    )
}

/// The fan-out part's settings (env).
struct Config {
    levels: Vec<usize>,
    edits: usize,
    /// Per edit: every listener's notification, and the swap.
    timeout: Duration,
    /// Per `open` or `idle` command: the connections open.
    open_timeout: Duration,
    settle: Duration,
    server_threads: usize,
    cores: usize,
}

impl Config {
    fn from_env() -> Config {
        let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
        Config {
            levels: env_levels(),
            edits: env_u64("FANOUT_EDITS", 5).max(1) as usize,
            timeout: Duration::from_millis(env_u64("FANOUT_TIMEOUT_MS", 10_000)),
            open_timeout: Duration::from_millis(env_u64("FANOUT_OPEN_TIMEOUT_MS", 30_000)),
            settle: Duration::from_millis(env_u64("FANOUT_SETTLE_MS", 500)),
            server_threads: env_u64("FANOUT_SERVER_THREADS", cores as u64).max(1) as usize,
            cores,
        }
    }
}

fn parent() {
    let config = Config::from_env();
    let rebuild_edits = env_u64("FANOUT_REBUILD_EDITS", 3) as usize;
    let mut figures = Figures::default();
    let fanned_out = fan_out(&config, &mut figures);
    figures.summary();
    if let Err(stop) = fanned_out {
        eprintln!("listen_fanout stopped: {stop}");
        eprintln!("(the figures above are all that was measured before it stopped)");
        std::process::exit(1);
    }
    if rebuild_edits > 0
        && let Err(stop) = rebuild_real_folder(rebuild_edits)
    {
        eprintln!("listen_fanout stopped: {stop}");
        std::process::exit(1);
    }
}

/// The levels that fit the open-files limit and the ephemeral ports; the
/// others are reported in `figures.skipped` (and printed now).
fn levels_that_fit(config: &Config, limit: u64, figures: &mut Figures) -> Vec<usize> {
    let ports = ephemeral_ports();
    let base = open_fds();
    let mut fit = Vec::new();
    for &n in &config.levels {
        let needs = n as u64 + base + SPARE_FDS;
        let why = if needs > limit {
            Some(format!(
                "each process needs about {needs} descriptors (one per stream, {} more) and the open-files limit is {limit}; \
                 raise it with `ulimit -n {}` (up to the hard limit)",
                base + SPARE_FDS,
                needs + SPARE_FDS
            ))
        } else {
            ports
                .filter(|&ports| n as u64 + SPARE_PORTS > ports)
                .map(|ports| {
                    format!(
                        "the listeners need a local port per stream (and {SPARE_PORTS} to spare) and the ephemeral range \
                         (/proc/sys/net/ipv4/ip_local_port_range) holds {ports}"
                    )
                })
        };
        match why {
            Some(why) => {
                let skipped = format!("{n} listeners: skipped: {why}");
                eprintln!("{skipped}");
                figures.skipped.push(skipped);
            }
            None => fit.push(n),
        }
    }
    fit
}

fn fan_out(config: &Config, figures: &mut Figures) -> Result<(), Stop> {
    let limit = open_files_limit().unwrap_or(1024);
    let fit = levels_that_fit(config, limit, figures);
    let Some(&largest) = fit.last() else {
        return Ok(());
    };

    let server = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(config.server_threads)
        .thread_name("gateway")
        .enable_all()
        .build()
        .expect("the gateway's runtime");

    let dir = tempfile::tempdir().expect("temporary catalogs folder");
    for name in ["orders.yaml", "orders.sezzlee.yaml"] {
        std::fs::copy(Path::new(SHIPPED).join(name), dir.path().join(name))
            .expect("the shipped catalog copied");
    }
    let orders = dir.path().join("orders.yaml");
    let original = std::fs::read_to_string(&orders).expect("orders.yaml read");
    assert_eq!(
        original.matches(SUMMARY).count(),
        1,
        "orders.yaml has the summary line the edits rewrite"
    );
    let settings = Settings {
        catalogs: dir.path().to_path_buf(),
        listen: "127.0.0.1:0".parse().expect("an address"),
        watch: WatchMode::Events,
        demo_backend: DemoBackend::Off,
        max_streams: largest + 16,
        max_streams_per_caller: largest + 16,
        // The default (half the open-files limit) is what the idle
        // connections once waited behind; the descriptors are counted
        // here instead (`levels_that_fit`, `open_idle_connections`).
        max_connections: largest + IDLE_MOST + 64,
        ..Settings::default()
    };
    let debounce = settings.debounce;
    figures.title = format!(
        "subscriptions/listen fan-out: write of orders.yaml → notifications/tools/list_changed per listener \
         (debounce {} ms, {} edits per level, gateway {} worker thread(s), listeners in a child process, {} cores)",
        debounce.as_millis(),
        config.edits,
        config.server_threads,
        config.cores
    );
    let (gateway, sources) = Gateway::load(settings).expect("catalogs folder readable");
    let reloader = Reloader::new(gateway.clone(), sources);
    let watcher = {
        let _runtime = server.enter();
        reload::start(reloader)
    };
    assert!(watcher.is_some(), "the file-system watcher started");
    let listener = server
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .expect("a loopback port");
    let address = listener.local_addr().expect("the bound address");
    let served = gateway.clone();
    server.spawn(async move {
        if let Err(err) = sezzlee_gateway::server::serve(served, listener).await {
            eprintln!("gateway stopped: {err}");
        }
    });

    let edits = Edits {
        gateway: &gateway,
        orders: &orders,
        original: &original,
        debounce,
        timeout: config.timeout,
    };
    let measured = Listeners::spawn(address, &gateway.settings.endpoint, largest)
        .and_then(|child| measure(config, &edits, child, &fit, limit, figures));
    drop(watcher);
    gateway.begin_shutdown();
    server.shutdown_timeout(Duration::from_secs(2));
    measured
}

/// Writes `orders.yaml` for the gateway to reload.
struct Edits<'a> {
    gateway: &'a Arc<Gateway>,
    orders: &'a Path,
    original: &'a str,
    debounce: Duration,
    timeout: Duration,
}

impl Edits<'_> {
    fn write(&self, summary: &str, step: &str) -> Result<(), Stop> {
        let text = self
            .original
            .replace(SUMMARY, &format!("summary: {summary}"));
        std::fs::write(self.orders, text)
            .map_err(|e| Stop(format!("{step}: writing {}: {e}", self.orders.display())))
    }

    fn generation(&self) -> u64 {
        self.gateway.store.current().generation
    }
}

/// The levels, then the idle connections, with the child `child`.
fn measure(
    config: &Config,
    edits: &Edits,
    mut child: Listeners,
    fit: &[usize],
    limit: u64,
    figures: &mut Figures,
) -> Result<(), Stop> {
    child.ask("starting the listener process", "hello", "hello", QUICK)?;
    // Warm-up reloads before the empty reading: the first rebuilds grow
    // the allocator's arenas once, and that growth belongs to reloading,
    // not to the streams measured against this baseline.
    for warm_up in 1..=WARM_UP_EDITS {
        let step = format!("warm-up edit {warm_up}");
        let before = edits.generation();
        edits.write(
            &format!("Lists orders, newest first (warm-up {warm_up})."),
            &step,
        )?;
        let deadline = Instant::now() + edits.timeout;
        while edits.generation() == before {
            if Instant::now() >= deadline {
                return Err(Stop(format!(
                    "{step}: timed out after {:.1} s waiting for the gateway to reload orders.yaml \
                     (its generation stayed {before}: no file-system event, or the rescan did not finish)",
                    edits.timeout.as_secs_f64()
                )));
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        std::thread::sleep(edits.debounce * 4);
    }
    std::thread::sleep(config.settle);
    let server_base = status_kib("self", "VmRSS:");
    let client_base = child.rss_kib();
    let mut open = 0usize;
    let mut edit = 0usize;
    for &n in fit {
        let step = format!("opening {n} listeners");
        eprintln!("{step} ({} more)…", n - open);
        let started = Instant::now();
        let answer = child.ask(
            &step,
            &format!("open {} {}", n - open, config.open_timeout.as_millis()),
            "opened",
            config.open_timeout + GRACE,
        )?;
        let open_secs = started.elapsed().as_secs_f64();
        // "opened <total> failed <count> <why…>"
        let failed: usize = word(&answer, 3, &step)?;
        if failed > 0 {
            return Err(Stop(format!(
                "{step}: {failed} of {} streams did not open: {}",
                n - open,
                answer.get(4..).unwrap_or_default().join(" ")
            )));
        }
        open = n;
        std::thread::sleep(config.settle);
        let deadline = Instant::now() + QUICK;
        while edits.gateway.streams.count() != n {
            if Instant::now() >= deadline {
                return Err(Stop(format!(
                    "{step}: the gateway counts {} open streams after {:.0} s, not {n}",
                    edits.gateway.streams.count(),
                    QUICK.as_secs_f64()
                )));
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let server_kib = status_kib("self", "VmRSS:");
        let client_kib = child.rss_kib();
        let mut level = Level {
            listeners: n,
            open_secs,
            server_kib_per_stream: server_kib.saturating_sub(server_base) as f64 / n as f64,
            client_kib_per_stream: client_kib.saturating_sub(client_base) as f64 / n as f64,
            latencies: Vec::with_capacity(n * config.edits),
            swaps: Vec::new(),
            spreads: Vec::new(),
            missing: 0,
            duplicates: 0,
        };
        for _ in 0..config.edits {
            edit += 1;
            measure_edit(edits, &mut child, n, edit, &mut level)?;
            // Let the streams and the watcher settle before the next edit.
            std::thread::sleep(edits.debounce * 4);
        }
        figures.measured(level);
    }
    let idle = open_idle_connections(config, edits.gateway, &mut child, limit, open)?;
    figures.idle(idle);
    child.quit()
}

/// One edit with `n` listeners open: write, then the child's stamps and
/// the swap's.
fn measure_edit(
    edits: &Edits,
    child: &mut Listeners,
    n: usize,
    edit: usize,
    level: &mut Level,
) -> Result<(), Stop> {
    let step = format!("edit {edit} ({n} listeners)");
    let before = edits.generation();
    child.ask(&step, "arm", "armed", QUICK)?;
    let swapped = swap_stamp(edits.gateway, edits.timeout);
    let written = now_ns();
    edits.write(&format!("Lists orders, newest first (edit {edit})."), &step)?;
    // "latencies <missing> <duplicates> <last_ns> <µs>…"; the child
    // waits `timeout` for every listener, then 20 ms for duplicates.
    let answer = child.ask(
        &step,
        &format!("collect {written} {}", edits.timeout.as_millis()),
        "latencies",
        edits.timeout + GRACE,
    )?;
    let missing: usize = word(&answer, 1, &step)?;
    let duplicates: usize = word(&answer, 2, &step)?;
    let last_ns: u64 = word(&answer, 3, &step)?;
    // The stamping thread gives up after `timeout` itself.
    let swap_ns = swapped.join().ok().flatten().ok_or_else(|| {
        Stop(format!(
            "{step}: timed out after {:.1} s waiting for the gateway to swap in a new generation \
             (still {before}: no file-system event, or the rescan did not finish)",
            edits.timeout.as_secs_f64()
        ))
    })?;
    let after = edits.generation();
    if after != before + 1 {
        return Err(Stop(format!(
            "{step}: the generation went from {before} to {after}, not up by one"
        )));
    }
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
    for at in 4..answer.len() {
        let micros: f64 = word(&answer, at, &step)?;
        level.latencies.push(micros / 1e3);
    }
    Ok(())
}

/// For comparison: idle keep-alive connections (one GET /healthz each),
/// opened on top of the `streams` so no freed memory is reused, as many
/// as fit (at most [`IDLE_MOST`]): each takes a descriptor in both
/// processes, a local port in the child and a connection under the
/// gateway's cap.
fn open_idle_connections(
    config: &Config,
    gateway: &Arc<Gateway>,
    child: &mut Listeners,
    limit: u64,
    streams: usize,
) -> Result<Idle, Stop> {
    let step = "idle connections";
    let wanted = streams.clamp(IDLE_LEAST, IDLE_MOST);
    // "fds <open> <limit>"
    let answer = child.ask(step, "fds", "fds", QUICK)?;
    let child_fds: u64 = word(&answer, 1, step)?;
    let child_limit: u64 = word(&answer, 2, step)?;
    let connections = *gateway.connections.borrow();
    let mut rooms = vec![
        (
            limit.saturating_sub(open_fds() + SPARE_FDS),
            format!(
                "the open-files limit of this process (the gateway: {} descriptors open of {limit}, {SPARE_FDS} kept spare)",
                open_fds()
            ),
        ),
        (
            child_limit.saturating_sub(child_fds + SPARE_FDS),
            format!(
                "the open-files limit of the listener process ({child_fds} descriptors open of {child_limit}, {SPARE_FDS} kept spare)"
            ),
        ),
        (
            (gateway.settings.max_connections as u64).saturating_sub(connections as u64 + 16),
            format!(
                "the gateway's max_connections ({connections} connections open of {})",
                gateway.settings.max_connections
            ),
        ),
    ];
    if let Some(ports) = ephemeral_ports() {
        rooms.push((
            ports.saturating_sub(streams as u64 + SPARE_PORTS),
            format!(
                "the ephemeral ports ({ports} in /proc/sys/net/ipv4/ip_local_port_range, {streams} taken by the streams, {SPARE_PORTS} kept spare)"
            ),
        ));
    }
    let (room, why) = rooms
        .into_iter()
        .min_by_key(|(room, _)| *room)
        .unwrap_or((wanted as u64, String::new()));
    let count = wanted.min(usize::try_from(room).unwrap_or(usize::MAX));
    if count < IDLE_LEAST {
        return Ok(Idle::Skipped(format!(
            "idle connections: skipped: room for {count} of the {wanted} wanted (fewer than {IDLE_LEAST}), limited by {why}"
        )));
    }
    if count < wanted {
        eprintln!("idle connections: {count} of the {wanted} wanted, limited by {why}");
    }
    eprintln!("opening {count} idle connections…");
    std::thread::sleep(config.settle);
    let before = status_kib("self", "VmRSS:");
    let step = format!("opening {count} idle connections");
    let answer = child.ask(
        &step,
        &format!("idle {count} {}", config.open_timeout.as_millis()),
        "idle",
        config.open_timeout + GRACE,
    )?;
    // "idle <opened> failed <count> <why…>"
    let failed: usize = word(&answer, 3, &step)?;
    if failed > 0 {
        return Err(Stop(format!(
            "{step}: {failed} did not open: {}",
            answer.get(4..).unwrap_or_default().join(" ")
        )));
    }
    std::thread::sleep(config.settle);
    let after = status_kib("self", "VmRSS:");
    Ok(Idle::Measured {
        count,
        kib: after.saturating_sub(before) as f64 / count as f64,
    })
}

/// A thread (with its own small runtime, so no gateway worker queue stands
/// between the swap and the stamp) that returns when the store's
/// generation changes, or `None` after `timeout`.
fn swap_stamp(gateway: &Arc<Gateway>, timeout: Duration) -> std::thread::JoinHandle<Option<u64>> {
    let mut generations = gateway.store.subscribe();
    generations.borrow_and_update();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .ok()?;
        runtime.block_on(async {
            match tokio::time::timeout(timeout, generations.changed()).await {
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

/// A runtime shut down, without waiting more than a second for its
/// blocking tasks, when dropped (a rescan given up on may still be
/// building).
struct Background(Option<tokio::runtime::Runtime>);

impl Drop for Background {
    fn drop(&mut self) {
        if let Some(runtime) = self.0.take() {
            runtime.shutdown_timeout(Duration::from_secs(1));
        }
    }
}

/// `reloader.rescan()` within [`RESCAN_DEADLINE`]: its outcome and how
/// long it took.
fn rescan(
    runtime: &Background,
    reloader: &Reloader,
    step: &str,
) -> Result<(Outcome, Duration), Stop> {
    let runtime = runtime
        .0
        .as_ref()
        .ok_or_else(|| Stop(format!("{step}: no runtime")))?;
    let started = Instant::now();
    let outcome = runtime
        .block_on(async { tokio::time::timeout(RESCAN_DEADLINE, reloader.rescan()).await })
        .map_err(|_| {
            Stop(format!(
                "{step}: timed out after {:.0} s waiting for the gateway's Reloader::rescan of the real folder",
                RESCAN_DEADLINE.as_secs_f64()
            ))
        })?;
    Ok((outcome, started.elapsed()))
}

fn rebuild_real_folder(edits: usize) -> Result<(), Stop> {
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

    let runtime = Background(Some(
        tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
            .expect("a runtime"),
    ));
    let settings = Settings {
        catalogs: dir.path().to_path_buf(),
        listen: "127.0.0.1:0".parse().unwrap(),
        watch: WatchMode::Off,
        demo_backend: DemoBackend::Off,
        ..Settings::default()
    };
    let gateway = Gateway::new(settings, catalog, cold_scan + cold_build).expect("a gateway");
    let reloader = Reloader::new(gateway.clone(), sources.clone());
    let (outcome, untouched_rescan) =
        rescan(&runtime, &reloader, "rescan of the untouched real folder")?;
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
        let (outcome, took) = rescan(&runtime, &reloader, &format!("real-folder edit {k}"))?;
        rescans.push(ms(took));
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
    Ok(())
}

// ----------------------------------------------------------------- child

mod child {
    //! The listeners: raw HTTP/1.1 `subscriptions/listen` streams, driven
    //! by commands on stdin, one answer line each on stdout. A command
    //! that waits (`open`, `idle`, `collect`) is given its deadline and
    //! answers by then, saying what it was still waiting for.

    use super::mcp_request::{Post, modern_request};
    use super::{now_ns, open_fds, open_files_limit};
    use std::io::{BufRead, Write};
    use std::net::SocketAddr;
    use std::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering};
    use std::sync::{Arc, Mutex};
    use std::time::{Duration, Instant};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpStream;
    use tokio::sync::{OwnedSemaphorePermit, Semaphore, oneshot};

    const ACK: &[u8] = b"notifications/subscriptions/acknowledged";
    const CHANGED: &[u8] = b"notifications/tools/list_changed";
    /// Connections being opened at once (the accept backlog is finite).
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

    /// Where a batch of connections being opened stands.
    #[derive(Default)]
    struct Tally {
        /// Tasks started (at most [`OPENING`] are opening at once).
        started: AtomicUsize,
        /// Started, waiting for the TCP connection.
        connecting: AtomicUsize,
        /// Connected, request sent, waiting for the gateway's answer.
        answering: AtomicUsize,
        /// Open (answered).
        opened: AtomicUsize,
        /// Refused or broken.
        failed: AtomicUsize,
        first_error: Mutex<Option<String>>,
    }

    impl Tally {
        fn fail(&self, why: String) {
            self.failed.fetch_add(1, Ordering::SeqCst);
            if let Ok(mut first) = self.first_error.lock() {
                first.get_or_insert(why);
            }
        }

        /// "<failed> <why…>" for `total` connections, after `timed_out`
        /// when the deadline passed: what they were still waiting for.
        fn outcome(&self, total: usize, timed_out: Option<Duration>, answer: &str) -> String {
            let opened = self.opened.load(Ordering::SeqCst);
            let failed = self.failed.load(Ordering::SeqCst);
            let first = self.first_error.lock().ok().and_then(|first| first.clone());
            let Some(after) = timed_out else {
                return format!("{failed} {}", first.unwrap_or_default());
            };
            let first = first
                .map(|why| format!("; first error: {why}"))
                .unwrap_or_default();
            format!(
                "{} timed out after {} ms with {opened} of {total} open and {failed} refused or broken: \
                 {} sent their request and were waiting for {answer}, {} were waiting for the TCP connection, \
                 {} not started (at most {OPENING} open at once){first}",
                total - opened,
                after.as_millis(),
                self.answering.load(Ordering::SeqCst),
                self.connecting.load(Ordering::SeqCst),
                total.saturating_sub(self.started.load(Ordering::SeqCst)),
            )
        }
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
        let millis = |text: &str| Duration::from_millis(text.parse().unwrap());
        for line in std::io::stdin().lock().lines() {
            let Ok(line) = line else { break };
            let words: Vec<&str> = line.split_whitespace().collect();
            let answer = match words.as_slice() {
                ["hello"] => "hello".to_string(),
                ["fds"] => format!("fds {} {}", open_fds(), open_files_limit().unwrap_or(0)),
                ["open", more, within] => {
                    let more: usize = more.parse().unwrap();
                    let range = open..(open + more).min(capacity);
                    let (opened, outcome) = runtime.block_on(open_streams(
                        address,
                        &endpoint,
                        range,
                        marks.clone(),
                        millis(within),
                    ));
                    open += opened;
                    format!("opened {open} failed {outcome}")
                }
                ["idle", more, within] => {
                    let more: usize = more.parse().unwrap();
                    let (opened, outcome) =
                        runtime.block_on(open_idle(address, more, millis(within)));
                    format!("idle {opened} failed {outcome}")
                }
                ["arm"] => {
                    for i in 0..open {
                        marks.first[i].store(0, Ordering::SeqCst);
                        marks.count[i].store(0, Ordering::SeqCst);
                    }
                    marks.received.store(0, Ordering::SeqCst);
                    "armed".to_string()
                }
                ["collect", written, within] => {
                    let written: u64 = written.parse().unwrap();
                    let timeout = millis(within);
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

    /// Opens `count` connections with `open_one` (given each its index
    /// and its permit, to drop once open), [`OPENING`] at a time, for at
    /// most `within`: how many opened, and "<failed> <why…>".
    async fn open_batch<F, O>(
        count: usize,
        within: Duration,
        answer: &str,
        open_one: F,
    ) -> (usize, String)
    where
        F: Fn(usize, Arc<Tally>, OwnedSemaphorePermit, oneshot::Sender<()>) -> O,
        O: Future<Output = ()> + Send + 'static,
    {
        let tally = Arc::new(Tally::default());
        let work = async {
            let gate = Arc::new(Semaphore::new(OPENING));
            let mut pending = Vec::with_capacity(count);
            for index in 0..count {
                let Ok(permit) = gate.clone().acquire_owned().await else {
                    break;
                };
                tally.started.fetch_add(1, Ordering::SeqCst);
                // Until its task has its TCP connection (or none).
                tally.connecting.fetch_add(1, Ordering::SeqCst);
                let (done, finished) = oneshot::channel();
                tokio::spawn(open_one(index, tally.clone(), permit, done));
                pending.push(finished);
            }
            for finished in pending {
                let _ = finished.await;
            }
        };
        let timed_out = tokio::time::timeout(within, work)
            .await
            .err()
            .map(|_| within);
        let opened = tally.opened.load(Ordering::SeqCst);
        (opened, tally.outcome(count, timed_out, answer))
    }

    async fn open_streams(
        address: SocketAddr,
        endpoint: &str,
        range: std::ops::Range<usize>,
        marks: Arc<Marks>,
        within: Duration,
    ) -> (usize, String) {
        let first = range.start;
        open_batch(
            range.len(),
            within,
            "the gateway's acknowledgement",
            |offset, tally, permit, done| {
                let index = first + offset;
                let request = request(address, endpoint, index);
                listen(address, request, index, marks.clone(), tally, permit, done)
            },
        )
        .await
    }

    /// `count` keep-alive connections that each made one `GET /healthz`
    /// and then sit idle: what any idle HTTP/1.1 connection costs.
    async fn open_idle(address: SocketAddr, count: usize, within: Duration) -> (usize, String) {
        open_batch(
            count,
            within,
            "the gateway's answer to GET /healthz",
            |_, tally, permit, done| idle(address, tally, permit, done),
        )
        .await
    }

    /// Opens one connection of a batch: connects (the batch counted it as
    /// connecting), then awaits `answer` (counted as waiting for the
    /// gateway's answer), then counts it open or failed and tells the
    /// batch; the connection if it opened.
    async fn open_one(
        address: SocketAddr,
        tally: &Tally,
        done: oneshot::Sender<()>,
        answer: impl AsyncFnOnce(&mut TcpStream) -> Result<(), String>,
    ) -> Option<TcpStream> {
        let connected = TcpStream::connect(address).await;
        tally.connecting.fetch_sub(1, Ordering::SeqCst);
        let opened = match connected {
            Ok(mut stream) => {
                stream.set_nodelay(true).ok();
                tally.answering.fetch_add(1, Ordering::SeqCst);
                let answered = answer(&mut stream).await;
                tally.answering.fetch_sub(1, Ordering::SeqCst);
                answered.map(|()| stream)
            }
            Err(err) => Err(format!("connect: {err}")),
        };
        let opened = match opened {
            Ok(stream) => {
                tally.opened.fetch_add(1, Ordering::SeqCst);
                Some(stream)
            }
            Err(why) => {
                tally.fail(why);
                None
            }
        };
        let _ = done.send(());
        opened
    }

    /// Sends `GET /healthz` and reads until its answer.
    async fn healthz(stream: &mut TcpStream, address: SocketAddr) -> Result<(), String> {
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
        Ok(())
    }

    /// One idle connection: connect, `GET /healthz`, then read until the
    /// gateway closes it.
    async fn idle(
        address: SocketAddr,
        tally: Arc<Tally>,
        permit: OwnedSemaphorePermit,
        done: oneshot::Sender<()>,
    ) {
        let healthz = async |stream: &mut TcpStream| healthz(stream, address).await;
        let Some(mut stream) = open_one(address, &tally, done, healthz).await else {
            return;
        };
        drop(permit);
        let mut buffer = [0u8; 64];
        while let Ok(n) = stream.read(&mut buffer).await {
            if n == 0 {
                break;
            }
        }
    }

    /// The listen request of stream `index` (its JSON-RPC id).
    fn request(address: SocketAddr, endpoint: &str, index: usize) -> Vec<u8> {
        let body = modern_request(
            index,
            "subscriptions/listen",
            serde_json::json!({"notifications": {"toolsListChanged": true}}),
        );
        Post::of(&body).http1(&address.to_string(), endpoint)
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

    /// Reads the answer to a listen request up to its acknowledgement;
    /// what came after it stays in `pending`.
    async fn acknowledged(
        stream: &mut TcpStream,
        request: &[u8],
        pending: &mut Vec<u8>,
    ) -> Result<(), String> {
        let mut buffer = [0u8; 2048];
        stream
            .write_all(request)
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
                    String::from_utf8_lossy(pending)
                ));
            }
            pending.extend_from_slice(&buffer[..n]);
            if pending.len() >= 12 && !pending.starts_with(b"HTTP/1.1 200") {
                // Read the rest of a refusal for the report.
                tokio::time::sleep(Duration::from_millis(50)).await;
                if let Ok(n) = stream.try_read(&mut buffer) {
                    pending.extend_from_slice(&buffer[..n]);
                }
                let text = String::from_utf8_lossy(pending).replace(['\r', '\n'], " ");
                return Err(format!("refused: {text}"));
            }
            if let Some(at) = find(pending, ACK) {
                pending.drain(..at + ACK.len());
                return Ok(());
            }
        }
    }

    /// One stream: open, wait for the acknowledgement, then stamp every
    /// list_changed until the gateway closes it.
    async fn listen(
        address: SocketAddr,
        request: Vec<u8>,
        index: usize,
        marks: Arc<Marks>,
        tally: Arc<Tally>,
        permit: OwnedSemaphorePermit,
        done: oneshot::Sender<()>,
    ) {
        let mut pending: Vec<u8> = Vec::new();
        let acknowledged =
            async |stream: &mut TcpStream| acknowledged(stream, &request, &mut pending).await;
        let Some(mut stream) = open_one(address, &tally, done, acknowledged).await else {
            return;
        };
        drop(permit);
        let mut buffer = [0u8; 2048];
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
