//! A connection flood and slow listen readers (hostile callers).
//!
//! Why this exists: a gateway shared by many agents meets callers that
//! open connections and never finish a request, and listeners that stop
//! reading their `subscriptions/listen` stream while the catalog keeps
//! changing. Neither may cost the other callers their service, and
//! neither may hold the gateway's memory without bound. One test drives
//! the real server (`server::serve` on loopback, its reloader rescanning a
//! real folder) with, at once:
//! - 2,000 flood connections: a third idle (nothing sent), a third with
//!   half a request head, a third with a whole head and part of the body
//!   it announced;
//! - 1,024 listen streams (the default `max_streams`), 16 from each of 64
//!   loopback addresses (the default `max_streams_per_caller`), on sockets
//!   with a small receive buffer that stop reading after the response
//!   head: one more from a full address is refused with the per-caller
//!   error, one more from a new address with the global one (`429`,
//!   `-31001`, "Too many listen streams");
//! - a reload storm: 150 edits of the folder, each rescanned, so
//!   notifications pile up in front of the readers that do not read.
//!
//! Meanwhile a caller searches, loads and invokes (each answered in under
//! 2 s, new connections included), every reload completes without waiting
//! on a listener, and the one listener that does read receives the latest
//! generation. Memory is printed, not asserted: the test binary runs
//! other tests in the same process (alone, the storm grew it by about
//! 2 MiB with 1,023 readers not reading: a listener slower than the
//! changes holds the latest generation, never a backlog). After
//! `header_read_timeout` (1.5 s here) every flood
//! connection has been closed by the gateway: the idle and half-head ones
//! by hyper's header timeout, the half-body ones by the request-body
//! deadline of `server.rs` (without it they were held open, with the body
//! received so far in memory, for as long as the caller liked).
//!
//! Sizes fit the process's open-files limit (about 2 descriptors per
//! connection: both ends live in this process): the soft limit is raised
//! to the hard one with `prlimit` when needed, and the test says what it
//! scaled down or skipped when even that is too low. Figures (latencies,
//! reload times, memory) are printed; `cargo test --test it flood --
//! --nocapture` shows them.

use crate::support::*;
use serde_json::{Value, json};
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream};

/// Flood connections and listen streams wanted (the documented defaults
/// of `max_streams` and `max_streams_per_caller` are what is exercised).
const FLOOD: usize = 2_000;
const STREAMS: usize = 1_024;
const PER_CALLER: usize = 16;
const RELOADS: usize = 150;
/// The bound each search, load and invoke must be answered within.
const BOUND: Duration = Duration::from_secs(2);
/// `header_read_timeout` in this test (the request-body deadline too).
const HEAD_TIMEOUT: Duration = Duration::from_millis(1_500);

// ------------------------------------------------------------ the process

fn limits_line() -> Option<(u64, u64)> {
    let text = std::fs::read_to_string("/proc/self/limits").ok()?;
    let line = text.lines().find(|l| l.starts_with("Max open files"))?;
    let mut words = line.split_whitespace().skip(3);
    let soft = words.next()?.parse().ok()?;
    let hard = words
        .next()
        .and_then(|w| w.parse().ok())
        .unwrap_or(u64::MAX);
    Some((soft, hard))
}

fn open_fds() -> u64 {
    std::fs::read_dir("/proc/self/fd").map_or(0, |d| d.count() as u64)
}

/// The soft open-files limit, raised towards `wanted` (at most the hard
/// limit) with `prlimit` when it is lower.
fn open_files_limit(wanted: u64) -> u64 {
    let Some((soft, hard)) = limits_line() else {
        return 1024;
    };
    if soft >= wanted {
        return soft;
    }
    let target = wanted.min(hard);
    let raised = std::process::Command::new("prlimit")
        .arg(format!("--pid={}", std::process::id()))
        .arg(format!("--nofile={target}:{hard}"))
        .status()
        .is_ok_and(|s| s.success());
    let now = limits_line().map_or(soft, |(soft, _)| soft);
    eprintln!("open-files limit {soft} (hard {hard}); raising to {target}: {raised}, now {now}");
    now
}

/// Resident memory of this process (gateway and clients), in MiB.
fn rss_mib() -> f64 {
    let text = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    text.lines()
        .find(|l| l.starts_with("VmRSS:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|kb| kb.parse::<f64>().ok())
        .map_or(0.0, |kb| kb / 1024.0)
}

// ------------------------------------------------------------ raw HTTP

/// A connection from `local` with, when given, a small receive buffer.
async fn connect(local: IpAddr, server: SocketAddr, receive: Option<u32>) -> TcpStream {
    let socket = TcpSocket::new_v4().expect("a socket");
    if let Some(size) = receive {
        socket.set_recv_buffer_size(size).expect("SO_RCVBUF");
    }
    socket.bind(SocketAddr::new(local, 0)).expect("bind");
    socket.connect(server).await.expect("connect")
}

/// A whole `subscriptions/listen` POST to `/mcp`, with id `id`.
fn listen_request(id: &str) -> Vec<u8> {
    let body = modern_request(
        id,
        "subscriptions/listen",
        json!({"notifications": {"toolsListChanged": true}}),
    );
    Post::of(&body).http1("127.0.0.1", "/mcp")
}

/// Reads a response head (and, for a JSON answer, its body): the status
/// and whatever body bytes came.
async fn read_response(stream: &mut TcpStream) -> (u16, String) {
    let mut buffer = Vec::new();
    let mut chunk = [0u8; 4096];
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let text = String::from_utf8_lossy(&buffer).into_owned();
        if let Some(end) = text.find("\r\n\r\n") {
            let status: u16 = text.get(9..12).and_then(|s| s.parse().ok()).unwrap_or(0);
            let length = text[..end]
                .lines()
                .find_map(|l| {
                    l.to_ascii_lowercase()
                        .strip_prefix("content-length:")
                        .map(|n| n.trim().parse::<usize>().unwrap_or(0))
                })
                .unwrap_or(0);
            if buffer.len() >= end + 4 + length || status == 200 {
                return (status, text[end + 4..].to_string());
            }
        }
        let left = deadline.saturating_duration_since(Instant::now());
        match tokio::time::timeout(left, stream.read(&mut chunk)).await {
            Ok(Ok(0)) | Ok(Err(_)) | Err(_) => {
                return (0, text);
            }
            Ok(Ok(n)) => buffer.extend_from_slice(&chunk[..n]),
        }
    }
}

/// Whether the gateway has closed `stream` (end of file or reset) by
/// `deadline`, reading past whatever answer it wrote first.
async fn closed_by_server(stream: &mut TcpStream, deadline: Instant) -> bool {
    let mut chunk = [0u8; 4096];
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match tokio::time::timeout(left, stream.read(&mut chunk)).await {
            Ok(Ok(0)) | Ok(Err(_)) => return true,
            Ok(Ok(_)) => continue,
            Err(_) => return false,
        }
    }
}

// ------------------------------------------------------------ the callers

#[derive(Default)]
struct Latencies {
    search: Vec<Duration>,
    load: Vec<Duration>,
    invoke: Vec<Duration>,
}

fn summary(name: &str, samples: &[Duration]) -> String {
    let mut ms: Vec<f64> = samples.iter().map(|d| d.as_secs_f64() * 1e3).collect();
    ms.sort_by(f64::total_cmp);
    let at = |p: f64| ms[((ms.len() - 1) as f64 * p).round() as usize];
    format!(
        "{name}: {} calls, p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms",
        ms.len(),
        at(0.5),
        at(0.99),
        at(1.0)
    )
}

/// One `tools/call` over `client`; its payload and how long it took.
async fn call(
    client: &reqwest::Client,
    url: &str,
    tool: &str,
    arguments: Value,
) -> (Value, Duration) {
    let body = modern_request(
        7,
        "tools/call",
        json!({"name": tool, "arguments": arguments}),
    );
    let started = Instant::now();
    let response = modern_post(client, url, &body)
        .send()
        .await
        .unwrap_or_else(|e| panic!("{tool}: no answer under the flood: {e}"));
    assert_eq!(response.status(), 200, "{tool}");
    let answer: Value = response.json().await.expect("a JSON answer");
    let elapsed = started.elapsed();
    (tool_reply(&answer["result"]).payload, elapsed)
}

/// Search, load and invoke once each, on `client`.
async fn round(client: &reqwest::Client, url: &str, latencies: &mut Latencies) {
    let (found, took) = call(client, url, "search_tools", json!({"query": "orders"})).await;
    assert!(!names(&found).is_empty(), "{found}");
    latencies.search.push(took);
    let (loaded, took) = call(client, url, "load_tool", json!({"name": "list_orders"})).await;
    assert!(loaded["version"].is_string(), "{loaded}");
    latencies.load.push(took);
    let (invoked, took) = call(
        client,
        url,
        "invoke_tool",
        json!({"name": "list_orders", "arguments": {}}),
    )
    .await;
    assert_eq!(invoked["status"], 200, "{invoked}");
    latencies.invoke.push(took);
}

// ------------------------------------------------------------ the test

#[test]
#[ignore = "slow campaign: `cargo test -- --include-ignored` runs it, as CI does"]
fn a_connection_flood_and_slow_listen_readers_leave_other_callers_served() {
    // Both ends of every connection live in this process.
    let wanted = 2 * (FLOOD + STREAMS) as u64 + open_fds() + 512;
    let limit = open_files_limit(wanted);
    let spare = limit.saturating_sub(open_fds() + 512) / 2;
    let (flood, streams) = if spare >= (FLOOD + STREAMS) as u64 {
        (FLOOD, STREAMS)
    } else {
        let scale = spare as f64 / (FLOOD + STREAMS) as f64;
        (
            (FLOOD as f64 * scale) as usize,
            ((STREAMS as f64 * scale) as usize / PER_CALLER).max(2) * PER_CALLER,
        )
    };
    if flood < 150 {
        eprintln!(
            "skipped: the open-files limit ({limit}) leaves room for {spare} connections; raise it with `ulimit -n {wanted}`"
        );
        return;
    }
    if flood < FLOOD {
        eprintln!(
            "scaled down to {flood} flood connections and {streams} streams by the open-files limit ({limit}); `ulimit -n {wanted}` runs the full size"
        );
    }

    let server = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("gateway")
        .enable_all()
        .build()
        .unwrap();
    let folder = copy_of_shipped_catalogs();
    let dir = folder.path().to_path_buf();
    let mut settings = test_settings(&dir);
    settings.demo_backend = DemoBackend::On;
    settings.header_read_timeout = HEAD_TIMEOUT;
    settings.max_streams = streams;
    let (gw, reloader, _watcher) =
        server.block_on(TestGateway::start_reloading(settings, Some(folder)));
    assert_eq!(gw.gateway.settings.max_streams_per_caller, PER_CALLER);
    let address: SocketAddr = gw.base.trim_start_matches("http://").parse().unwrap();
    let url = gw.url.clone();

    let client = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let rss_before = rss_mib();
    let localhost = IpAddr::V4(Ipv4Addr::LOCALHOST);
    let pooled = reqwest::Client::new();
    // A new connection per call: the accept path under the flood.
    let fresh = reqwest::Client::builder()
        .pool_max_idle_per_host(0)
        .build()
        .unwrap();
    let mut quiet = Latencies::default();
    client.block_on(async {
        for _ in 0..5 {
            round(&pooled, &url, &mut quiet).await;
        }
    });

    // ---- the flood: idle, half a head, a head and part of its body
    let started = Instant::now();
    let mut flooding: Vec<(usize, TcpStream)> = client.block_on(async {
        let mut open = Vec::with_capacity(flood);
        for i in 0..flood {
            let mut stream = connect(localhost, address, None).await;
            let kind = i % 3;
            match kind {
                0 => {}
                1 => stream
                    .write_all(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Ty")
                    .await
                    .unwrap(),
                _ => {
                    let head = "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 1048576\r\n\r\n";
                    let mut bytes = head.as_bytes().to_vec();
                    bytes.extend_from_slice(br#"{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":""#);
                    bytes.resize(bytes.len() + 16 * 1024, b'a');
                    stream.write_all(&bytes).await.unwrap();
                }
            }
            open.push((kind, stream));
        }
        open
    });
    let flood_took = started.elapsed();

    // ---- listen streams that stop reading after the response head
    let started = Instant::now();
    let callers = streams / PER_CALLER;
    let caller = |i: usize| {
        IpAddr::V4(Ipv4Addr::new(
            127,
            0,
            (1 + i / 250) as u8,
            (2 + i % 250) as u8,
        ))
    };
    let (mut slow, mut reader, refusals) = client.block_on(async {
        let mut slow = Vec::with_capacity(streams);
        let mut refusals = Vec::new();
        // One listener that reads, from an address of its own.
        let mut reader = connect(caller(callers), address, None).await;
        reader.write_all(&listen_request("reader")).await.unwrap();
        let (status, _) = read_response(&mut reader).await;
        assert_eq!(status, 200, "the reading listener is accepted");
        for c in 0..callers {
            let from = caller(c);
            let mine = if c + 1 == callers {
                PER_CALLER - 1
            } else {
                PER_CALLER
            };
            for s in 0..mine {
                let mut stream = connect(from, address, Some(4096)).await;
                stream
                    .write_all(&listen_request(&format!("slow-{c}-{s}")))
                    .await
                    .unwrap();
                let (status, text) = read_response(&mut stream).await;
                assert_eq!(status, 200, "listen {c}/{s} accepted: {text}");
                slow.push(stream);
            }
            if c == 0 {
                // The caller's 17th stream: the per-caller cap.
                let mut extra = connect(from, address, None).await;
                extra
                    .write_all(&listen_request("over-caller"))
                    .await
                    .unwrap();
                refusals.push(read_response(&mut extra).await);
            }
        }
        // A new caller once every slot is taken: the global cap.
        let mut extra = connect(caller(callers + 1), address, None).await;
        extra.write_all(&listen_request("over-all")).await.unwrap();
        refusals.push(read_response(&mut extra).await);
        (slow, reader, refusals)
    });
    let listen_took = started.elapsed();
    assert_eq!(gw.gateway.streams.count(), streams, "every slot is taken");
    for ((status, body), cap) in refusals.iter().zip(["the limit per caller", "its limit"]) {
        assert_eq!(*status, 429, "{body}");
        let body: Value = serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {body}"));
        assert_eq!(body["error"]["code"], -31001, "{body}");
        let message = body["error"]["message"].as_str().unwrap();
        assert!(
            message.contains("Too many listen streams") && message.contains(cap),
            "{message}"
        );
        assert_error(MODERN, &body);
    }
    let rss_loaded = rss_mib();

    // ---- a reload storm while a caller searches, loads and invokes
    let storm = server.spawn({
        let dir = dir.clone();
        let reloader = reloader.clone();
        async move {
            let orders = dir.join("orders.yaml");
            let original = std::fs::read_to_string(&orders).unwrap();
            let mut took = Vec::with_capacity(RELOADS);
            for i in 1..=RELOADS {
                let edited = original.replace(
                    "summary: Lists orders, newest first.",
                    &format!("summary: Lists orders, newest first (edit {i})."),
                );
                std::fs::write(&orders, edited).unwrap();
                let started = Instant::now();
                let _ = reloader.rescan().await;
                took.push(started.elapsed());
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            took
        }
    });
    let mut busy = Latencies::default();
    client.block_on(async {
        while !storm.is_finished() {
            round(&pooled, &url, &mut busy).await;
            round(&fresh, &url, &mut busy).await;
        }
    });
    let reload_times = server.block_on(storm).expect("the reload storm ran");
    let generation = *gw.gateway.store.subscribe().borrow();
    assert_eq!(
        generation, RELOADS as u64,
        "every edit became a generation, none waited on a listener"
    );

    // The listener that reads sees the latest generation.
    client.block_on(async {
        let deadline = Instant::now() + Duration::from_secs(10);
        let mut seen = String::new();
        let mut chunk = [0u8; 8192];
        let last = format!("\"sezzlee/catalogGeneration\":{RELOADS}");
        while !seen.contains(&last) {
            let left = deadline.saturating_duration_since(Instant::now());
            match tokio::time::timeout(left, reader.read(&mut chunk)).await {
                Ok(Ok(n)) if n > 0 => seen.push_str(&String::from_utf8_lossy(&chunk[..n])),
                other => panic!(
                    "the reading listener stopped before generation {RELOADS}: {other:?}; {seen}"
                ),
            }
        }
    });
    let rss_storm = rss_mib();

    // ---- every flood connection is closed by the gateway after the
    // header timeout (idle, half head) or the body deadline (half body).
    let closed = client.block_on(async {
        tokio::time::sleep(HEAD_TIMEOUT).await;
        let mut still_open = [0usize; 3];
        let deadline = Instant::now() + HEAD_TIMEOUT * 2;
        for (kind, stream) in &mut flooding {
            if !closed_by_server(stream, deadline).await {
                still_open[*kind] += 1;
            }
        }
        still_open
    });

    // ---- figures
    let median = |times: &[Duration]| {
        let mut ms: Vec<f64> = times.iter().map(|d| d.as_secs_f64() * 1e3).collect();
        ms.sort_by(f64::total_cmp);
        (ms[ms.len() / 2], ms[ms.len() - 1])
    };
    let (reload_median, reload_max) = median(&reload_times);
    eprintln!(
        "flood: {flood} connections opened in {:.2} s; {} listen streams (+1 reading) in {:.2} s; {RELOADS} reloads (median {reload_median:.1} ms, max {reload_max:.1} ms)",
        flood_took.as_secs_f64(),
        slow.len(),
        listen_took.as_secs_f64()
    );
    for (label, latencies) in [("quiet", &quiet), ("under flood and storm", &busy)] {
        eprintln!(
            "{label}: {}; {}; {}",
            summary("search", &latencies.search),
            summary("load", &latencies.load),
            summary("invoke", &latencies.invoke)
        );
    }
    eprintln!(
        "memory (this process, gateway and clients): {rss_before:.0} MiB before, {rss_loaded:.0} MiB with the flood and streams, {rss_storm:.0} MiB after the storm"
    );
    eprintln!(
        "still open after the timeouts: idle {}, half head {}, half body {}",
        closed[0], closed[1], closed[2]
    );

    // ---- the bounds
    for (name, samples) in [
        ("search", &busy.search),
        ("load", &busy.load),
        ("invoke", &busy.invoke),
    ] {
        assert!(samples.len() >= 2, "{name} ran during the storm");
        let worst = samples.iter().max().unwrap();
        assert!(*worst < BOUND, "{name} took {worst:?} under the flood");
    }
    assert_eq!(
        closed,
        [0, 0, 0],
        "flood connections the gateway never closed: idle, half head, half body"
    );

    // Closing the slow streams frees their slots.
    slow.clear();
    drop(reader);
    let deadline = Instant::now() + Duration::from_secs(10);
    while gw.gateway.streams.count() > 0 {
        assert!(
            Instant::now() < deadline,
            "{} slots still held after their streams closed",
            gw.gateway.streams.count()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    drop(flooding);
    drop(client);
    drop(gw);
    drop(server);
}

/// `/status` counts the serving threads' runtimes with the main one, and
/// a task per open connection whichever thread serves it (the soak,
/// `examples/soak.rs`, judges leaks by these figures): 24 keep-alive
/// connections add at least 24 alive tasks, and closing them gives the
/// tasks back.
///
/// Every reading goes over one raw keep-alive connection of its own, open
/// throughout: an HTTP client in the test's runtime (which is counted too)
/// would start and end pool tasks between two readings (hyper's client
/// hands a connection back to its pool on a task of its own), and a
/// connection per reading would end its server task some time after its
/// answer. Either made the count drift by one on a loaded machine.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_counts_a_task_per_connection_on_every_serving_thread() {
    const OPEN: usize = 24;
    let gw = TestGateway::start(&shipped_catalogs(), |s| s.serve_threads = 2).await;
    let server: SocketAddr = gw.base.trim_start_matches("http://").parse().unwrap();
    let mut probe = TcpStream::connect(server).await.unwrap();
    let (runtimes, before) = runtime_figures(&mut probe).await;
    assert_eq!(runtimes, 3, "the test's runtime and 2 serving threads");

    let mut open = Vec::new();
    for _ in 0..OPEN {
        let mut stream = TcpStream::connect(server).await.unwrap();
        stream
            .write_all(b"GET /healthz HTTP/1.1\r\nhost: gateway\r\n\r\n")
            .await
            .unwrap();
        let (status, _) = read_response(&mut stream).await;
        assert_eq!(status, 200);
        open.push(stream);
    }
    let (_, during) = runtime_figures(&mut probe).await;
    assert!(
        during >= before + OPEN as u64,
        "{OPEN} connections open: {before} → {during} alive tasks"
    );

    drop(open);
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let (_, after) = runtime_figures(&mut probe).await;
        if after <= before {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "tasks not given back: {before} before, {after} after closing"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// `/status`'s runtimes and alive tasks, asked on `probe`, a keep-alive
/// connection that stays open for the next reading.
async fn runtime_figures(probe: &mut TcpStream) -> (u64, u64) {
    probe
        .write_all(b"GET /status HTTP/1.1\r\nhost: gateway\r\n\r\n")
        .await
        .unwrap();
    let mut buffer = Vec::new();
    let mut chunk = [0u8; 8192];
    let deadline = Instant::now() + Duration::from_secs(10);
    let body = loop {
        let text = String::from_utf8_lossy(&buffer).into_owned();
        if let Some(end) = text.find("\r\n\r\n") {
            let length = text[..end].lines().find_map(|line| {
                let line = line.to_ascii_lowercase();
                line.strip_prefix("content-length:")?
                    .trim()
                    .parse::<usize>()
                    .ok()
            });
            let length = length.expect("/status answers with a content length");
            if buffer.len() >= end + 4 + length {
                assert!(text.starts_with("HTTP/1.1 200"), "{text}");
                break buffer[end + 4..end + 4 + length].to_vec();
            }
        }
        let left = deadline.saturating_duration_since(Instant::now());
        match tokio::time::timeout(left, probe.read(&mut chunk)).await {
            Ok(Ok(n)) if n > 0 => buffer.extend_from_slice(&chunk[..n]),
            other => panic!("/status not answered: {other:?} after {text:?}"),
        }
    };
    let status: Value = serde_json::from_slice(&body).unwrap();
    let figures = &status["runtime"];
    (
        figures["runtimes"].as_u64().unwrap(),
        figures["aliveTasks"].as_u64().unwrap(),
    )
}

/// `max_connections` (README "Settings"): at the cap the gateway accepts
/// no more connections, so the caller beyond it waits in the listen
/// backlog, unanswered, instead of taking descriptors the served callers'
/// backend calls need; when one closes, the waiting caller is accepted
/// and answered. `/status` shows the count and the cap.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn at_max_connections_the_next_caller_waits_for_a_slot() {
    const MAX: usize = 3;
    let gw = TestGateway::start(&shipped_catalogs(), |s| s.max_connections = MAX).await;
    let server: SocketAddr = gw.base.trim_start_matches("http://").parse().unwrap();
    let health = b"GET /healthz HTTP/1.1\r\nhost: gateway\r\n\r\n";
    // `MAX` keep-alive connections, each answered once and left open; the
    // last asks for /status, which counts them.
    let mut open = Vec::new();
    for _ in 0..MAX - 1 {
        let mut stream = TcpStream::connect(server).await.unwrap();
        stream.write_all(health).await.unwrap();
        assert_eq!(read_response(&mut stream).await.0, 200);
        open.push(stream);
    }
    let mut last = TcpStream::connect(server).await.unwrap();
    last.write_all(health).await.unwrap();
    assert_eq!(read_response(&mut last).await.0, 200);
    open.push(last);
    assert_eq!(*gw.gateway.connections.borrow(), MAX);

    // One more: the kernel completes the handshake (the backlog), but the
    // gateway does not take it while the cap is reached.
    let mut waiting = TcpStream::connect(server).await.unwrap();
    waiting.write_all(health).await.unwrap();
    let mut byte = [0u8; 1];
    let early = tokio::time::timeout(Duration::from_millis(500), waiting.read(&mut byte)).await;
    assert!(early.is_err(), "answered beyond max_connections: {early:?}");

    // A slot frees: the waiting caller is served.
    drop(open.pop());
    let started = Instant::now();
    let (status, _) = read_response(&mut waiting).await;
    assert_eq!(
        status, 200,
        "the waiting caller is answered once a slot frees"
    );
    assert!(started.elapsed() < BOUND, "{:?}", started.elapsed());

    // `/status` shows the count and the cap.
    drop(open);
    drop(waiting);
    let deadline = Instant::now() + BOUND;
    while *gw.gateway.connections.borrow() > 0 {
        assert!(Instant::now() < deadline, "connections not counted closed");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(
        gw.status().await["connections"],
        json!({"open": 1, "max": MAX}),
        "the status request's own connection"
    );
}
