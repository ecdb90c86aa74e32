//! invoke_tool against backends that misbehave on the wire
//! (docs/contract.md §3.3, §3.4): a real gateway on loopback calls a raw
//! TCP "HTTP server" on loopback that writes its answers byte by byte, so
//! it can do what no well-behaved server does: stall mid-body, reset the
//! connection, lie in `Content-Length`, never end a chunked body, send a
//! megabyte of headers, redirect to itself, send a gzip bomb, invalid
//! UTF-8, or plain HTTP where TLS was expected.
//!
//! Each test asserts the documented envelope, that the call ends within a
//! (generous) bound, and that the same gateway then still answers a normal
//! invoke against the same backend.

use crate::support::*;
use serde_json::{Value, json};
use std::io::Write;
use std::path::Path;
use std::process::Child;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// The backend timeout of the main document (sidecar `timeoutMs`): far
/// above every bound asserted below, so a hang shows as a failed bound or
/// a `backend_timeout`, never as a pass.
const TIMEOUT_MS: u64 = 10_000;
/// The backend timeout of the slow document.
const SLOW_TIMEOUT_MS: u64 = 1_000;
/// The body the well-behaved path answers.
const OK_BODY: &str = r#"{"ok":true}"#;
/// What a desynchronised connection would hand the next call.
const SMUGGLED: &str = "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 17\r\n\r\n{\"smuggled\":true}";
/// The size of the gzip bomb once inflated.
const BOMB_INFLATED: usize = 100 * 1024 * 1024;

// ------------------------------------------------------------ the backend

/// The raw backend: answers by path, records which paths were asked for
/// and which answers the gateway hung up on.
struct Faulty {
    /// `http://127.0.0.1:PORT`
    base: String,
    port: u16,
    /// Request paths in arrival order (`<not http>` for a TLS hello).
    hits: Arc<Mutex<Vec<String>>>,
    /// Paths whose endless answer stopped because the gateway hung up.
    hung_up: Arc<Mutex<Vec<String>>>,
}

impl Faulty {
    async fn start() -> Faulty {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let base = format!("http://127.0.0.1:{port}");
        let hits = Arc::new(Mutex::new(Vec::new()));
        let hung_up = Arc::new(Mutex::new(Vec::new()));
        let (h, u, b) = (hits.clone(), hung_up.clone(), base.clone());
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                tokio::spawn(connection(stream, h.clone(), u.clone(), b.clone()));
            }
        });
        Faulty {
            base,
            port,
            hits,
            hung_up,
        }
    }

    fn hits(&self, path: &str) -> usize {
        self.hits
            .lock()
            .unwrap()
            .iter()
            .filter(|p| *p == path)
            .count()
    }

    /// Waits (up to 10 s) until the gateway has hung up on `path`.
    async fn wait_hung_up(&self, path: &str) {
        let deadline = Instant::now() + Duration::from_secs(10);
        while !self.hung_up.lock().unwrap().iter().any(|p| p == path) {
            assert!(
                Instant::now() < deadline,
                "the gateway still holds the connection of {path}"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

/// Serves one connection: request heads (GET only, no bodies) answered in
/// turn while the answer leaves the connection usable.
async fn connection(
    mut stream: TcpStream,
    hits: Arc<Mutex<Vec<String>>>,
    hung_up: Arc<Mutex<Vec<String>>>,
    base: String,
) {
    let mut buffer = Vec::new();
    loop {
        let head_end = loop {
            if let Some(at) = find(&buffer, b"\r\n\r\n") {
                break at + 4;
            }
            // Not HTTP (a TLS ClientHello starts with 0x16): answer as a
            // plain HTTP server does, 400 and close.
            if buffer.first().is_some_and(|b| !b.is_ascii_uppercase()) {
                hits.lock().unwrap().push("<not http>".to_string());
                let _ = stream
                    .write_all(b"HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\nconnection: close\r\n\r\n")
                    .await;
                return;
            }
            let mut chunk = [0u8; 4096];
            match stream.read(&mut chunk).await {
                Ok(0) | Err(_) => return,
                Ok(n) => buffer.extend_from_slice(&chunk[..n]),
            }
        };
        let head = String::from_utf8_lossy(&buffer[..head_end]).to_string();
        buffer.drain(..head_end);
        let target = head.split(' ').nth(1).unwrap_or_default();
        let path = target.split('?').next().unwrap_or_default().to_string();
        hits.lock().unwrap().push(path.clone());
        match answer(&mut stream, &path, &base).await {
            Ok(Next::KeepAlive) => {}
            Ok(Next::Close) => return,
            Err(_) => {
                hung_up.lock().unwrap().push(path);
                return;
            }
        }
    }
}

enum Next {
    KeepAlive,
    Close,
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

fn head(status: &str, headers: &[(&str, String)]) -> Vec<u8> {
    let mut out = format!("HTTP/1.1 {status}\r\n");
    for (name, value) in headers {
        out.push_str(&format!("{name}: {value}\r\n"));
    }
    out.push_str("\r\n");
    out.into_bytes()
}

/// A complete answer with a true `Content-Length`.
fn whole(status: &str, content_type: &str, body: &[u8]) -> Vec<u8> {
    let mut out = head(
        status,
        &[
            ("content-type", content_type.to_string()),
            ("content-length", body.len().to_string()),
        ],
    );
    out.extend_from_slice(body);
    out
}

/// What the backend does on each path.
async fn answer(stream: &mut TcpStream, path: &str, base: &str) -> std::io::Result<Next> {
    match path {
        "/ok" => {
            stream
                .write_all(&whole("200 OK", "application/json", OK_BODY.as_bytes()))
                .await?;
            Ok(Next::KeepAlive)
        }
        // 1. Headers at once, then one byte a second, forever.
        "/slow-body" => {
            let declared = ("content-length", "1000000".to_string());
            stream
                .write_all(&head(
                    "200 OK",
                    &[("content-type", "text/plain".to_string()), declared],
                ))
                .await?;
            loop {
                stream.write_all(b"x").await?;
                stream.flush().await?;
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
        }
        // 1. A status line, then one header line a second, forever.
        "/slow-head" => {
            stream.write_all(b"HTTP/1.1 200 OK\r\n").await?;
            loop {
                stream.write_all(b"x-slow: 1\r\n").await?;
                stream.flush().await?;
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
        }
        // 2. Half of a declared body, then a reset (RST) or a close (FIN).
        "/reset-mid-body" | "/close-mid-body" => {
            let mut out = head(
                "200 OK",
                &[
                    ("content-type", "application/json".to_string()),
                    ("content-length", "1000".to_string()),
                ],
            );
            out.extend_from_slice(&[b' '; 500]);
            stream.write_all(&out).await?;
            stream.flush().await?;
            if path == "/reset-mid-body" {
                stream.set_zero_linger()?;
            } else {
                stream.shutdown().await?;
            }
            Ok(Next::Close)
        }
        // 3. Content-Length longer than the body, then close.
        "/long-length" => {
            let mut out = head(
                "200 OK",
                &[
                    ("content-type", "text/plain".to_string()),
                    ("content-length", "100".to_string()),
                ],
            );
            out.extend_from_slice(b"0123456789");
            stream.write_all(&out).await?;
            stream.shutdown().await?;
            Ok(Next::Close)
        }
        // 3. Content-Length shorter than the body; what follows is a whole
        // second answer, which a connection reused as is would hand the
        // next call. The connection is kept open.
        "/short-length" => {
            let mut out = head(
                "200 OK",
                &[
                    ("content-type", "text/plain".to_string()),
                    ("content-length", "5".to_string()),
                ],
            );
            out.extend_from_slice(b"hello");
            out.extend_from_slice(SMUGGLED.as_bytes());
            stream.write_all(&out).await?;
            Ok(Next::KeepAlive)
        }
        // 4. A chunked body that never ends.
        "/endless" => {
            stream
                .write_all(&head(
                    "200 OK",
                    &[
                        ("content-type", "application/json".to_string()),
                        ("transfer-encoding", "chunked".to_string()),
                    ],
                ))
                .await?;
            stream.write_all(b"1\r\n[\r\n").await?;
            let mut chunk = format!("{:x}\r\n", 16 * 1024).into_bytes();
            chunk.extend(b"0,".repeat(8 * 1024));
            chunk.extend_from_slice(b"\r\n");
            loop {
                stream.write_all(&chunk).await?;
            }
        }
        // 5. One header of 1 MiB, or 1 MiB of small headers.
        "/huge-header" | "/many-headers" => {
            let mut out = b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n".to_vec();
            if path == "/huge-header" {
                out.extend_from_slice(b"x-huge: ");
                out.extend(std::iter::repeat_n(b'a', 1024 * 1024));
                out.extend_from_slice(b"\r\n");
            } else {
                let mut i = 0;
                while out.len() < 1024 * 1024 {
                    out.extend_from_slice(
                        format!("x-filler-{i}: {}\r\n", "b".repeat(40)).as_bytes(),
                    );
                    i += 1;
                }
            }
            out.extend_from_slice(format!("content-length: {}\r\n\r\n", OK_BODY.len()).as_bytes());
            out.extend_from_slice(OK_BODY.as_bytes());
            // The gateway may hang up before all of it is written.
            let _ = stream.write_all(&out).await;
            Ok(Next::Close)
        }
        // 6. A redirect to itself.
        "/loop" => {
            stream
                .write_all(&head(
                    "302 Found",
                    &[
                        ("location", format!("{base}/loop")),
                        ("content-length", "0".to_string()),
                    ],
                ))
                .await?;
            Ok(Next::KeepAlive)
        }
        // 7. 100 MiB of zeros, gzip-compressed, declared as JSON.
        "/bomb" => {
            let bomb = bomb();
            let mut out = head(
                "200 OK",
                &[
                    ("content-type", "application/json".to_string()),
                    ("content-encoding", "gzip".to_string()),
                    ("content-length", bomb.len().to_string()),
                ],
            );
            out.extend_from_slice(bomb);
            stream.write_all(&out).await?;
            Ok(Next::KeepAlive)
        }
        // 8. Invalid UTF-8 declared as JSON or as UTF-8 text.
        "/bad-json" => {
            stream
                .write_all(&whole("200 OK", "application/json", BAD_JSON))
                .await?;
            Ok(Next::KeepAlive)
        }
        "/bad-text" => {
            stream
                .write_all(&whole("200 OK", "text/plain; charset=utf-8", BAD_TEXT))
                .await?;
            Ok(Next::KeepAlive)
        }
        _ => {
            stream
                .write_all(&whole("404 Not Found", "text/plain", b"no such fault"))
                .await?;
            Ok(Next::KeepAlive)
        }
    }
}

/// `{"name": "café"}` with the é in Latin-1.
const BAD_JSON: &[u8] = b"{\"name\": \"caf\xe9\"}";
/// Text with a Latin-1 byte and two bytes never valid in UTF-8.
const BAD_TEXT: &[u8] = b"caf\xe9 \xff\xfe ok";

/// The gzip bomb, compressed once per test binary.
fn bomb() -> &'static [u8] {
    static BOMB: OnceLock<Vec<u8>> = OnceLock::new();
    BOMB.get_or_init(|| {
        let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        let zeros = vec![0u8; 1024 * 1024];
        for _ in 0..BOMB_INFLATED / zeros.len() {
            encoder.write_all(&zeros).unwrap();
        }
        encoder.finish().unwrap()
    })
}

// ------------------------------------------------------------ the catalogs

/// One `GET /{path}` per fault, named after its operationId.
const OPERATIONS: [(&str, &str); 15] = [
    ("ok", "getOk"),
    ("reset-mid-body", "resetMidBody"),
    ("close-mid-body", "closeMidBody"),
    ("long-length", "longLength"),
    ("short-length", "shortLength"),
    ("endless", "endless"),
    ("huge-header", "hugeHeader"),
    ("many-headers", "manyHeaders"),
    ("loop", "redirectLoop"),
    ("bomb", "gzipBomb"),
    ("bad-json", "badJson"),
    ("bad-text", "badText"),
    ("slow-body", "slowBody"),
    ("slow-head", "slowHead"),
    ("ok", "tlsOk"),
];

fn document(title: &str, operations: &[(&str, &str)]) -> Value {
    let mut paths = serde_json::Map::new();
    for (path, operation_id) in operations {
        paths.insert(
            format!("/{path}"),
            json!({"get": {"operationId": operation_id, "responses": {"200": {"description": "ok"}}}}),
        );
    }
    json!({"openapi": "3.0.3", "info": {"title": title, "version": "1"}, "paths": paths})
}

/// `faulty` (every fault but the slow one), `slow` (a short timeout) and
/// `tls` (https:// to the same plain-HTTP port).
fn write_catalogs(dir: &Path, backend: &Faulty) {
    let write = |name: &str, value: &Value| {
        std::fs::write(dir.join(name), serde_json::to_string_pretty(value).unwrap()).unwrap()
    };
    write("faulty.json", &document("Faulty", &OPERATIONS[..12]));
    write(
        "faulty.sezzlee.json",
        &json!({"backend": {"baseUrl": backend.base, "timeoutMs": TIMEOUT_MS}}),
    );
    write("slow.json", &document("Slow", &OPERATIONS[12..14]));
    write(
        "slow.sezzlee.json",
        &json!({"backend": {"baseUrl": backend.base, "timeoutMs": SLOW_TIMEOUT_MS}}),
    );
    write("tls.json", &document("Tls", &OPERATIONS[14..]));
    write(
        "tls.sezzlee.json",
        &json!({"backend": {"baseUrl": format!("https://127.0.0.1:{}", backend.port), "timeoutMs": TIMEOUT_MS}}),
    );
}

/// A faulty backend, a catalogs folder pointing at it, and a gateway.
struct Setup {
    backend: Faulty,
    _dir: tempfile::TempDir,
    gateway: TestGateway,
}

impl Setup {
    async fn start() -> Setup {
        Self::with(|_| {}).await
    }

    async fn with(configure: impl FnOnce(&mut sezzlee_gateway::settings::Settings)) -> Setup {
        let backend = Faulty::start().await;
        let dir = tempfile::tempdir().unwrap();
        write_catalogs(dir.path(), &backend);
        let gateway = TestGateway::start(dir.path(), configure).await;
        let catalog = gateway.gateway.store.current();
        assert_eq!(
            catalog.catalog.errors(),
            0,
            "{:?}",
            catalog.catalog.diagnostics
        );
        drop(catalog);
        Setup {
            backend,
            _dir: dir,
            gateway,
        }
    }

    /// invoke_tool of `name` (no arguments), timed; the call must end
    /// within `bound`.
    async fn invoke(&self, name: &str, bound: Duration) -> (ToolReply, Duration) {
        let started = Instant::now();
        let reply = tokio::time::timeout(
            bound,
            self.gateway.tool("invoke_tool", json!({"name": name})),
        )
        .await
        .unwrap_or_else(|_| panic!("invoke_tool {name} did not end within {bound:?}"));
        (reply, started.elapsed())
    }

    /// A failed invoke: the envelope, checked for shape.
    async fn err(&self, name: &str, bound: Duration) -> Value {
        let (reply, _) = self.invoke(name, bound).await;
        assert!(reply.is_error, "{name} succeeded: {}", reply.payload);
        assert_envelope(&reply.payload);
        reply.payload
    }

    /// A successful invoke's payload.
    async fn ok(&self, name: &str, bound: Duration) -> Value {
        let (reply, _) = self.invoke(name, bound).await;
        assert!(!reply.is_error, "{name} failed: {}", reply.payload);
        reply.payload
    }

    /// The gateway still serves: a normal invoke of the same backend
    /// answers the well-behaved body (three times, so a pooled connection
    /// left in a bad state would be handed out).
    async fn still_serves(&self) {
        for _ in 0..3 {
            let payload = self.ok("get_ok", Duration::from_secs(5)).await;
            assert_eq!(payload["status"], 200, "{payload}");
            assert_eq!(payload["body"], json!({"ok": true}), "{payload}");
        }
    }
}

/// The message of a `backend_unavailable` for a request that was sent.
fn assert_broke_off_after_sending(payload: &Value) {
    assert_eq!(payload["error"], "backend_unavailable", "{payload}");
    assert_eq!(payload["retryable"], true, "{payload}");
    assert_eq!(payload["mayHaveReachedBackend"], true, "{payload}");
    let message = payload["message"].as_str().unwrap();
    assert!(message.contains("may have reached"), "{message}");
}

// ------------------------------------------------------------ the faults

#[tokio::test]
async fn a_body_or_head_that_trickles_forever_ends_at_the_backend_timeout() {
    let s = Setup::start().await;
    for (name, path) in [("slow_body", "/slow-body"), ("slow_head", "/slow-head")] {
        let (reply, elapsed) = s.invoke(name, Duration::from_secs(10)).await;
        let payload = reply.payload;
        assert!(reply.is_error, "{payload}");
        assert_envelope(&payload);
        assert_eq!(payload["error"], "backend_timeout", "{payload}");
        assert_eq!(payload["retryable"], true, "{payload}");
        assert_eq!(payload["mayHaveReachedBackend"], true, "{payload}");
        let message = payload["message"].as_str().unwrap();
        assert!(message.contains("may have reached"), "{message}");
        assert!(
            message.contains(&format!("{SLOW_TIMEOUT_MS} ms")),
            "{message}"
        );
        assert!(
            elapsed >= Duration::from_millis(SLOW_TIMEOUT_MS),
            "ended before the timeout: {elapsed:?}"
        );
        assert_eq!(s.backend.hits(path), 1);
        // The gateway let go of the connection (a later write fails).
        s.backend.wait_hung_up(path).await;
        s.still_serves().await;
    }
}

#[tokio::test]
async fn a_connection_reset_or_closed_mid_body_is_unavailable_after_sending() {
    let s = Setup::start().await;
    for (name, path) in [
        ("reset_mid_body", "/reset-mid-body"),
        ("close_mid_body", "/close-mid-body"),
    ] {
        let payload = s.err(name, Duration::from_secs(5)).await;
        assert_broke_off_after_sending(&payload);
        assert!(
            payload["message"].as_str().unwrap().contains("broke off"),
            "{payload}"
        );
        assert_eq!(s.backend.hits(path), 1, "sent once, never retried");
        s.still_serves().await;
    }
}

#[tokio::test]
async fn a_content_length_that_lies_never_yields_a_wrong_answer() {
    let s = Setup::start().await;
    // Longer than what is sent, then closed: the body is incomplete.
    let payload = s.err("long_length", Duration::from_secs(5)).await;
    assert_broke_off_after_sending(&payload);
    assert_eq!(s.backend.hits("/long-length"), 1);
    s.still_serves().await;

    // Shorter than what is sent: the declared bytes are the body, and what
    // follows (a whole second answer) never reaches another call.
    let payload = s.ok("short_length", Duration::from_secs(5)).await;
    assert_eq!(payload["status"], 200, "{payload}");
    assert_eq!(payload["body"], "hello", "{payload}");
    assert_eq!(s.backend.hits("/short-length"), 1);
    s.still_serves().await;
    let payload = s.ok("short_length", Duration::from_secs(5)).await;
    assert_eq!(payload["body"], "hello", "{payload}");
    s.still_serves().await;
}

#[tokio::test]
async fn an_endless_chunked_body_is_cut_at_the_response_cap() {
    const CAP: usize = 1024 * 1024;
    let s = Setup::with(|settings| settings.max_response_bytes = CAP).await;
    let payload = s.ok("endless", Duration::from_secs(8)).await;
    assert_eq!(payload["status"], 200, "{payload}");
    assert_eq!(payload["body"], Value::Null, "{payload}");
    assert_eq!(payload["omitted"]["reason"], "over_budget", "{payload}");
    let bytes = payload["omitted"]["bytes"].as_u64().unwrap() as usize;
    // At least the cap (it was exceeded), at most one more read beyond it.
    assert!(bytes > CAP && bytes <= 2 * CAP, "{payload}");
    assert_eq!(payload["headers"]["content-type"], "application/json");
    assert_eq!(s.backend.hits("/endless"), 1);
    // Nothing keeps reading once the cap is reached.
    s.backend.wait_hung_up("/endless").await;
    s.still_serves().await;
}

/// The real binary's peak resident memory stays bounded while a backend
/// streams without end (default 8 MiB cap: an unbounded read would grow
/// by hundreds of megabytes a second on loopback).
#[tokio::test]
async fn an_endless_chunked_body_keeps_the_binary_memory_bounded() {
    let backend = Faulty::start().await;
    let dir = tempfile::tempdir().unwrap();
    write_catalogs(dir.path(), &backend);
    let mut serve = Served::start(dir.path());
    let client = reqwest::Client::new();
    // Warm up (the first call builds what every later call shares).
    let payload = serve.invoke(&client, "get_ok").await;
    assert_eq!(payload["body"], json!({"ok": true}), "{payload}");
    let before = serve.peak_rss_kib();
    let started = Instant::now();
    let payload = serve.invoke(&client, "endless").await;
    let after = serve.peak_rss_kib();
    assert!(
        after.saturating_sub(before) < 96 * 1024,
        "peak RSS grew from {before} KiB to {after} KiB"
    );
    assert!(started.elapsed() < Duration::from_secs(20), "{payload}");
    assert_eq!(payload["omitted"]["reason"], "over_budget", "{payload}");
    backend.wait_hung_up("/endless").await;
    let payload = serve.invoke(&client, "get_ok").await;
    assert_eq!(payload["body"], json!({"ok": true}), "{payload}");
    serve.stop();
}

#[tokio::test]
async fn huge_response_headers_are_a_clean_error() {
    let s = Setup::start().await;
    for (name, path) in [
        ("huge_header", "/huge-header"),
        ("many_headers", "/many-headers"),
    ] {
        let payload = s.err(name, Duration::from_secs(5)).await;
        assert_broke_off_after_sending(&payload);
        assert_eq!(s.backend.hits(path), 1);
        s.still_serves().await;
    }
}

#[tokio::test]
async fn a_redirect_to_itself_is_reported_and_never_followed() {
    let s = Setup::start().await;
    let payload = s.err("redirect_loop", Duration::from_secs(5)).await;
    assert_eq!(payload["error"], "backend_status", "{payload}");
    assert_eq!(payload["status"], 302, "{payload}");
    assert_eq!(payload["retryable"], false, "{payload}");
    assert_eq!(
        payload["headers"]["location"],
        format!("{}/loop", s.backend.base)
    );
    assert!(
        payload["message"]
            .as_str()
            .unwrap()
            .contains("not followed"),
        "{payload}"
    );
    assert_eq!(s.backend.hits("/loop"), 1, "the redirect was followed");
    s.still_serves().await;
    assert_eq!(s.backend.hits("/loop"), 1);
}

#[tokio::test]
async fn a_gzip_bomb_is_never_inflated() {
    // The gateway's HTTP client has no decompression (reqwest without its
    // `gzip` feature) and sends no Accept-Encoding: the compressed bytes
    // are what the backend sent, not JSON, not UTF-8, so binary.
    let s = Setup::start().await;
    let compressed = bomb().len();
    assert!(compressed < 1024 * 1024, "{compressed}");
    let payload = s.ok("gzip_bomb", Duration::from_secs(10)).await;
    assert_eq!(payload["status"], 200, "{payload}");
    assert_eq!(payload["body"], Value::Null, "{payload}");
    assert_eq!(
        payload["omitted"],
        json!({"reason": "binary", "bytes": compressed}),
        "{payload}"
    );
    assert_eq!(s.backend.hits("/bomb"), 1);
    s.still_serves().await;

    // Under a cap smaller than the compressed body: left out unread, with
    // the declared (compressed) size.
    let capped = Setup::with(|settings| settings.max_response_bytes = 16 * 1024).await;
    let payload = capped.ok("gzip_bomb", Duration::from_secs(10)).await;
    assert_eq!(
        payload["omitted"],
        json!({"reason": "over_budget", "bytes": compressed}),
        "{payload}"
    );
    capped.still_serves().await;
}

#[tokio::test]
async fn invalid_utf8_declared_as_json_or_text_is_left_out_as_binary() {
    let s = Setup::start().await;
    for (name, bytes, content_type) in [
        ("bad_json", BAD_JSON, "application/json"),
        ("bad_text", BAD_TEXT, "text/plain; charset=utf-8"),
    ] {
        let payload = s.ok(name, Duration::from_secs(5)).await;
        assert_eq!(payload["status"], 200, "{payload}");
        assert_eq!(payload["body"], Value::Null, "{payload}");
        assert_eq!(
            payload["omitted"],
            json!({"reason": "binary", "bytes": bytes.len()}),
            "{payload}"
        );
        assert_eq!(payload["headers"]["content-type"], content_type);
        s.still_serves().await;
    }
}

#[tokio::test]
async fn https_to_a_plain_http_port_is_unavailable_and_says_tls() {
    let s = Setup::start().await;
    let payload = s.err("tls_ok", Duration::from_secs(8)).await;
    assert_eq!(payload["error"], "backend_unavailable", "{payload}");
    assert_eq!(payload["retryable"], true, "{payload}");
    // The handshake failed: no request was sent.
    assert_eq!(payload["mayHaveReachedBackend"], false, "{payload}");
    let message = payload["message"].as_str().unwrap();
    assert!(message.contains("did not reach"), "{message}");
    assert!(message.contains("TLS"), "{message}");
    assert_eq!(s.backend.hits("<not http>"), 1);
    assert_eq!(s.backend.hits("/ok"), 0, "no request went in clear text");
    s.still_serves().await;
}

// ------------------------------------------------------------ the binary

/// `sezzlee serve` on the catalogs folder, as a child process.
struct Served {
    child: Child,
    url: String,
}

impl Served {
    fn start(catalogs: &Path) -> Served {
        let mut child = serve_command(catalogs)
            .spawn()
            .expect("sezzlee serve starts");
        let (url, _logs) = crate::support::listening_url(&mut child);
        Served { child, url }
    }

    /// invoke_tool `name` at 2026-07-28: the payload.
    async fn invoke(&self, client: &reqwest::Client, name: &str) -> Value {
        let body = modern_request(
            1,
            "tools/call",
            json!({"name": "invoke_tool", "arguments": {"name": name}}),
        );
        let mut request = client
            .post(&self.url)
            .header("accept", "application/json, text/event-stream")
            .json(&body);
        for (header, value) in modern_headers(&body) {
            request = request.header(header, value);
        }
        let response = request
            .timeout(Duration::from_secs(30))
            .send()
            .await
            .expect("the gateway answers");
        let body: Value = response.json().await.expect("a JSON answer");
        tool_reply(&body["result"]).payload
    }

    /// VmHWM (peak resident set) of the child, in KiB.
    fn peak_rss_kib(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))
            .expect("/proc/PID/status");
        status
            .lines()
            .find_map(|line| line.strip_prefix("VmHWM:"))
            .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
            .expect("VmHWM in /proc/PID/status")
    }

    fn stop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        self.stop();
    }
}
