//! Upstream MCP servers that misbehave (docs/contract.md §2.10): each test
//! starts a hostile Streamable HTTP server of its own on loopback (axum,
//! speaking just enough JSON-RPC of the `initialize` era: `initialize`,
//! `notifications/initialized`, `tools/list`, `tools/call`), names it in a
//! `NAME.mcp.yaml` of a fresh catalogs folder and serves that folder with a
//! real gateway (its reloader and upstream supervisors running, as `sezzlee
//! serve` runs them). The server lists 10,000 tools, a tool whose
//! description is 5 MB, schemas that do not convert, a listing that never
//! comes, a listing answered by an endless event stream, calls that take
//! 30 s. Each test asserts what the gateway serves, what it says about the
//! rest (diagnostics, `/status`), and that it stays bounded in time and
//! memory while everything else keeps being served.
//!
//! The helpers marked `pub(crate)` are shared with `upstream_lifecycle.rs`
//! and `upstream_rmcp.rs`.

use crate::support::*;
use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::{Value, json};
use sezzlee_gateway::reload::Reloader;
use std::convert::Infallible;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::time::{Duration, Instant};

// ------------------------------------------------------------ shared helpers

/// Polls `probe` every 25 ms until it answers `Some`, for at most
/// `within`; panics naming `what` (and the last state `probe` saw, through
/// its own messages) when the deadline passes.
pub(crate) async fn wait_for<T>(
    what: &str,
    within: Duration,
    mut probe: impl AsyncFnMut() -> Option<T>,
) -> T {
    let deadline = Instant::now() + within;
    loop {
        if let Some(found) = probe().await {
            return found;
        }
        assert!(
            Instant::now() < deadline,
            "waited {within:?} for {what}, in vain"
        );
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

/// The `/status` entry of the upstream file `file` (`null` when the
/// gateway supervises no such file).
pub(crate) async fn upstream_status(gw: &TestGateway, file: &str) -> Value {
    let status = gw.status().await;
    status["upstreams"]
        .as_array()
        .unwrap_or_else(|| panic!("/status lists upstreams: {status}"))
        .iter()
        .find(|entry| entry["file"] == file)
        .cloned()
        .unwrap_or(Value::Null)
}

/// The names of the tools the gateway serves now, sorted.
pub(crate) fn served(gw: &TestGateway) -> Vec<String> {
    let snapshot = gw.gateway.store.current();
    let mut names: Vec<String> = snapshot
        .catalog
        .tools()
        .iter()
        .map(|tool| tool.name.clone())
        .collect();
    names.sort();
    names
}

/// The served catalog's diagnostics of `file`, as `/status` shows them
/// (`code`, `severity`, `file`, `pointer`, `message`).
pub(crate) fn diagnostics_of(gw: &TestGateway, file: &str) -> Vec<Value> {
    let snapshot = gw.gateway.store.current();
    snapshot
        .catalog
        .diagnostics
        .iter()
        .filter(|diagnostic| diagnostic.file == file)
        .map(|diagnostic| serde_json::to_value(diagnostic).expect("a diagnostic serialises"))
        .collect()
}

/// invoke_tool of `tool` with `arguments` at 2026-07-28: the whole
/// `CallToolResult` (an upstream tool's answer is the server's content
/// blocks as they came, not the one JSON block of an API operation's).
pub(crate) async fn invoke(gw: &TestGateway, tool: &str, arguments: Value) -> Value {
    gw.modern_ok(
        "tools/call",
        json!({"name": "invoke_tool", "arguments": {"name": tool, "arguments": arguments}}),
        "CallToolResult",
    )
    .await
}

/// The failure envelope of a `CallToolResult`, when it is one.
pub(crate) fn envelope(result: &Value) -> Option<Value> {
    if result["isError"] != true {
        return None;
    }
    let text = result["content"][0]["text"].as_str()?;
    let payload: Value = serde_json::from_str(text).ok()?;
    payload.get("error")?;
    assert_envelope(&payload);
    Some(payload)
}

/// The text of the first content block (panics when there is none).
pub(crate) fn first_text(result: &Value) -> &str {
    result["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("a first text block: {result}"))
}

/// A gateway on a fresh catalogs folder holding `files`, with its
/// reloader and upstream supervisors running (no file watcher: a test
/// rescans by hand after editing). Returns the folder's path too.
pub(crate) async fn live_gateway(
    files: &[(&str, String)],
) -> (TestGateway, Arc<Reloader>, std::path::PathBuf) {
    let folder = tempfile::tempdir().expect("temporary catalogs folder");
    for (name, content) in files {
        std::fs::write(folder.path().join(name), content).expect("write a catalog file");
    }
    let path = folder.path().to_path_buf();
    let mut settings = test_settings(&path);
    settings.deletion_grace = Duration::from_millis(100);
    let (gw, reloader, _watcher) = TestGateway::start_reloading(settings, Some(folder)).await;
    (gw, reloader, path)
}

/// The tool names of a search for `query` (at most 50).
pub(crate) async fn found(gw: &TestGateway, query: &str) -> Vec<String> {
    names(&gw.search(json!({"query": query, "limit": 50})).await)
}

// ------------------------------------------------------------ the hostile server

/// What the server answers to `tools/list`.
#[derive(Clone)]
enum Listing {
    /// These tools, `page` to a page (the cursor is the next index).
    Pages { tools: Arc<Vec<Value>>, page: usize },
    /// Nothing, ever: the request hangs until the client gives up.
    Never,
    /// `200 text/event-stream`, then a JSON-RPC notification carrying
    /// 16 KiB of junk every 2 ms, forever; never the response.
    Chatter,
    /// `200 text/event-stream`, then one `data:` line that never ends:
    /// 1 MiB more of it every millisecond.
    Unterminated,
    /// `200 text/event-stream`, then events whose data is not JSON.
    Garbage,
}

/// A hostile MCP server and what it saw.
struct Hostile {
    listing: Listing,
    /// How long a call of the tool `sleepy` takes.
    sleepy: Duration,
    /// `tools/list` requests received.
    lists: AtomicU64,
    /// `tools/call` requests received.
    calls: AtomicU64,
    /// Hung requests and endless streams alive now, and the most at once.
    alive: AtomicI64,
    most_alive: AtomicI64,
    /// Endless answers started, and those the client hung up on.
    started: AtomicU64,
    dropped: AtomicU64,
    /// Bytes written on endless streams.
    streamed: AtomicU64,
    /// `notifications/cancelled` received.
    cancelled: AtomicU64,
}

/// Counts one hung request or endless stream while it lives: dropped when
/// the client hangs up (hyper drops the answer's future or body).
struct Alive(Arc<Hostile>);

impl Alive {
    fn new(server: &Arc<Hostile>) -> Alive {
        server.started.fetch_add(1, Ordering::SeqCst);
        let now = server.alive.fetch_add(1, Ordering::SeqCst) + 1;
        server.most_alive.fetch_max(now, Ordering::SeqCst);
        Alive(server.clone())
    }
}

impl Drop for Alive {
    fn drop(&mut self) {
        self.0.alive.fetch_sub(1, Ordering::SeqCst);
        self.0.dropped.fetch_add(1, Ordering::SeqCst);
    }
}

/// A running hostile server: its MCP endpoint and its API base (an
/// ordinary JSON API at `/api`, for an OpenAPI document served beside it).
struct Running {
    mcp: String,
    api: String,
    server: Arc<Hostile>,
}

impl Hostile {
    async fn start(listing: Listing, sleepy: Duration) -> Running {
        let server = Arc::new(Hostile {
            listing,
            sleepy,
            lists: AtomicU64::new(0),
            calls: AtomicU64::new(0),
            alive: AtomicI64::new(0),
            most_alive: AtomicI64::new(0),
            started: AtomicU64::new(0),
            dropped: AtomicU64::new(0),
            streamed: AtomicU64::new(0),
            cancelled: AtomicU64::new(0),
        });
        let app = Router::new()
            .route("/mcp", post(answer))
            .route(
                "/api/pets",
                get(|| async { axum::Json(json!(["rex", "tom"])) }),
            )
            .with_state(server.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await });
        Running {
            mcp: format!("http://{address}/mcp"),
            api: format!("http://{address}/api"),
            server,
        }
    }

    fn alive_now(&self) -> i64 {
        self.alive.load(Ordering::SeqCst)
    }
}

fn result(id: Value, result: Value) -> Response {
    axum::Json(json!({"jsonrpc": "2.0", "id": id, "result": result})).into_response()
}

async fn answer(State(server): State<Arc<Hostile>>, body: Bytes) -> Response {
    let Ok(message) = serde_json::from_slice::<Value>(&body) else {
        return (StatusCode::BAD_REQUEST, "not JSON").into_response();
    };
    let Some(id) = message.get("id").cloned() else {
        // notifications/initialized, notifications/cancelled.
        if message["method"] == "notifications/cancelled" && message["params"]["requestId"].is_i64()
        {
            server.cancelled.fetch_add(1, Ordering::SeqCst);
        }
        return StatusCode::ACCEPTED.into_response();
    };
    let params = &message["params"];
    match message["method"].as_str().unwrap_or_default() {
        "initialize" => result(
            id,
            json!({
                "protocolVersion": "2025-11-25",
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "hostile", "version": "0.0.0"}
            }),
        ),
        "ping" => result(id, json!({})),
        "tools/list" => {
            server.lists.fetch_add(1, Ordering::SeqCst);
            list(&server, id, params).await
        }
        "tools/call" => {
            server.calls.fetch_add(1, Ordering::SeqCst);
            call(&server, id, params).await
        }
        _ => axum::Json(json!({
            "jsonrpc": "2.0", "id": id,
            "error": {"code": -32601, "message": "method not found"}
        }))
        .into_response(),
    }
}

async fn list(server: &Arc<Hostile>, id: Value, params: &Value) -> Response {
    match &server.listing {
        Listing::Pages { tools, page } => {
            let from: usize = params["cursor"]
                .as_str()
                .and_then(|cursor| cursor.parse().ok())
                .unwrap_or(0);
            let to = (from + page).min(tools.len());
            let mut page = json!({"tools": tools[from.min(to)..to]});
            if to < tools.len() {
                page["nextCursor"] = json!(to.to_string());
            }
            result(id, page)
        }
        Listing::Never => {
            let _alive = Alive::new(server);
            std::future::pending::<Response>().await
        }
        Listing::Chatter => {
            let junk = "junk ".repeat(16 * 1024 / 5);
            endless(server, Duration::from_millis(2), move |n| {
                let note = json!({
                    "jsonrpc": "2.0",
                    "method": "notifications/message",
                    "params": {"level": "info", "data": {"n": n, "junk": junk}}
                });
                format!("event: message\ndata: {note}\n\n").into_bytes()
            })
        }
        Listing::Unterminated => {
            let mebibyte = vec![b'x'; 1024 * 1024];
            endless(server, Duration::from_millis(1), move |n| {
                if n == 0 {
                    b"data: ".to_vec()
                } else {
                    mebibyte.clone()
                }
            })
        }
        Listing::Garbage => endless(server, Duration::from_millis(2), |n| {
            format!("data: {{not json at all #{n}\n\n").into_bytes()
        }),
    }
}

/// A `200 text/event-stream` answer whose body is `chunk(n)` every
/// `every`, forever (until the client hangs up).
fn endless(
    server: &Arc<Hostile>,
    every: Duration,
    chunk: impl Fn(u64) -> Vec<u8> + Send + Sync + 'static,
) -> Response {
    let alive = Alive::new(server);
    let chunk = Arc::new(chunk);
    let stream = futures_util::stream::unfold((alive, 0u64), move |(alive, n)| {
        let chunk = chunk.clone();
        async move {
            if n > 0 {
                tokio::time::sleep(every).await;
            }
            let bytes = chunk(n);
            alive
                .0
                .streamed
                .fetch_add(bytes.len() as u64, Ordering::Relaxed);
            Some((Ok::<_, Infallible>(Bytes::from(bytes)), (alive, n + 1)))
        }
    });
    Response::builder()
        .status(200)
        .header(header::CONTENT_TYPE, "text/event-stream")
        .body(Body::from_stream(stream))
        .unwrap()
}

async fn call(server: &Arc<Hostile>, id: Value, params: &Value) -> Response {
    let name = params["name"].as_str().unwrap_or_default();
    if name == "sleepy" {
        let _alive = Alive::new(server);
        tokio::time::sleep(server.sleepy).await;
    }
    let arguments = params["arguments"].clone();
    result(
        id,
        json!({
            "content": [{"type": "text", "text": format!("{name} got {arguments}")}],
            "structuredContent": {"tool": name, "arguments": arguments}
        }),
    )
}

/// A tool definition with an object input schema.
fn tool(name: &str, description: &str) -> Value {
    json!({
        "name": name,
        "description": description,
        "inputSchema": {"type": "object", "properties": {"n": {"type": "integer"}}}
    })
}

/// An upstream file naming `url` in the `initialize` era, with `extra`
/// YAML lines.
fn mcp_file(url: &str, timeout_ms: u64, extra: &str) -> String {
    format!("url: {url}\nera: legacy\nbackend: {{timeoutMs: {timeout_ms}}}\n{extra}")
}

/// An OpenAPI document of one operation (`GET /pets`) on `api`.
fn pets_document(api: &str) -> String {
    format!(
        "openapi: 3.0.3\ninfo: {{title: Pet shelter, version: '1'}}\nservers: [{{url: '{api}'}}]\npaths:\n  /pets:\n    get:\n      operationId: listShelterPets\n      summary: Lists the pets of the shelter\n      responses:\n        '200':\n          description: the pets\n          content:\n            application/json:\n              schema: {{type: array, items: {{type: string}}}}\n"
    )
}

/// Waits until `file`'s server is listed and the catalog serves `tools`
/// tools in all; returns the time it took from `since`.
async fn wait_listed(gw: &TestGateway, file: &str, tools: usize, since: Instant) -> Duration {
    wait_for(
        &format!("{file} listed and {tools} tools served"),
        Duration::from_secs(30),
        async || {
            let entry = upstream_status(gw, file).await;
            (entry["state"] == "up" && served(gw).len() == tools).then(|| since.elapsed())
        },
    )
    .await
}

// ------------------------------------------------------------ (a) 10,000 tools

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_thousand_tools_are_cut_at_max_tools_unless_the_file_allows_them_all() {
    let tools: Vec<Value> = (0..10_000)
        .map(|i| {
            tool(
                &format!("tool_{i:05}"),
                &format!("Reads shelf {i} of the archive."),
            )
        })
        .collect();
    let hostile = Hostile::start(
        Listing::Pages {
            tools: Arc::new(tools),
            page: 1_000,
        },
        Duration::ZERO,
    )
    .await;
    let started = Instant::now();
    let (gw, _reloader, _dir) = live_gateway(&[
        (
            "many.mcp.yaml",
            mcp_file(&hostile.mcp, 10_000, "namespace: many\n"),
        ),
        (
            "all.mcp.yaml",
            mcp_file(&hostile.mcp, 10_000, "namespace: all\nmaxTools: 10000\n"),
        ),
    ])
    .await;
    let took = wait_for(
        "both files listed and 11,000 tools served",
        Duration::from_secs(60),
        async || {
            // The count first: /status lists 9,000 diagnostics by then.
            if gw.gateway.store.current().catalog.tools().len() != 11_000 {
                return None;
            }
            let many = upstream_status(&gw, "many.mcp.yaml").await;
            let all = upstream_status(&gw, "all.mcp.yaml").await;
            (many["tools"] == 10_000 && all["tools"] == 10_000).then(|| started.elapsed())
        },
    )
    .await;
    eprintln!("10,000 tools listed twice and 11,000 served in {took:?}");
    // Ten pages each, read whole.
    assert!(hostile.server.lists.load(Ordering::SeqCst) >= 20);

    let names = served(&gw);
    assert_eq!(
        names.iter().filter(|n| n.starts_with("many_")).count(),
        1_000
    );
    assert_eq!(
        names.iter().filter(|n| n.starts_with("all_")).count(),
        10_000
    );
    assert!(names.contains(&"many_tool_00999".to_string()));
    assert!(!names.contains(&"many_tool_01000".to_string()));
    assert!(names.contains(&"all_tool_09999".to_string()));

    // The cut is said: the tools past maxTools, by name.
    let left_out: Vec<Value> = diagnostics_of(&gw, "many.mcp.yaml")
        .into_iter()
        .filter(|d| d["code"] == "upstream_tool_left_out")
        .collect();
    assert!(!left_out.is_empty(), "the cut at maxTools is said");
    let first = left_out[0]["message"].as_str().unwrap();
    assert!(first.contains("'tool_01000'"), "{first}");
    assert!(first.contains("maxTools"), "{first}");
    assert!(
        diagnostics_of(&gw, "all.mcp.yaml")
            .iter()
            .all(|d| d["code"] != "upstream_tool_left_out"),
        "nothing is left out of the file allowing 10,000"
    );
    let status = gw.get("/status", &[]).await;
    assert_eq!(status.status, 200);
    eprintln!(
        "maxTools 1000: {} upstream_tool_left_out diagnostics for the 9,000 tools cut; /status is {} bytes",
        left_out.len(),
        status.text.len()
    );

    // Search still answers, by name and by description, and quickly.
    let asked = Instant::now();
    let everything = gw.search(json!({"query": "", "limit": 5})).await;
    assert_eq!(everything["total"], 11_000, "{everything}");
    let hits = found(&gw, "tool_07777").await;
    assert_eq!(
        hits.first().map(String::as_str),
        Some("all_tool_07777"),
        "{hits:?}"
    );
    let hits = found(&gw, "shelf 42 archive").await;
    assert!(hits.contains(&"many_tool_00042".to_string()), "{hits:?}");
    assert!(hits.contains(&"all_tool_00042".to_string()), "{hits:?}");
    let searched = asked.elapsed();
    eprintln!("three searches over 11,000 upstream tools: {searched:?}");
    assert!(searched < Duration::from_secs(5), "{searched:?}");

    // And the last tool of the listing is loaded and called.
    let loaded = gw
        .tool_ok("load_tool", json!({"name": "all_tool_09999"}))
        .await;
    assert_eq!(loaded["description"], "Reads shelf 9999 of the archive.");
    let called = invoke(&gw, "all_tool_09999", json!({"n": 7})).await;
    assert_eq!(first_text(&called), r#"tool_09999 got {"n":7}"#, "{called}");
}

// ------------------------------------------------------------ (b) a 5 MB description

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_with_a_five_megabyte_description_is_left_out_and_its_siblings_served() {
    let five_mb = "lorem ipsum ".repeat(5 * 1024 * 1024 / 12);
    let long = format!(
        "Files a claim.\u{1b}[31m red\u{7}{}",
        "word ".repeat(20_000)
    );
    let tools = vec![
        tool("sibling_before", "Counts the beans in the first jar."),
        tool("huge", &five_mb),
        tool("long_story", &long),
        tool("sibling_after", "Counts the beans in the last jar."),
    ];
    let hostile = Hostile::start(
        Listing::Pages {
            tools: Arc::new(tools),
            page: 10,
        },
        Duration::ZERO,
    )
    .await;
    let (gw, _reloader, _dir) =
        live_gateway(&[("big.mcp.yaml", mcp_file(&hostile.mcp, 10_000, ""))]).await;
    wait_listed(&gw, "big.mcp.yaml", 3, Instant::now()).await;
    assert_eq!(
        served(&gw),
        ["long_story", "sibling_after", "sibling_before"]
    );

    let said = diagnostics_of(&gw, "big.mcp.yaml");
    let huge = said
        .iter()
        .find(|d| d["code"] == "upstream_tool_left_out")
        .unwrap_or_else(|| panic!("the huge tool is said: {said:?}"));
    let message = huge["message"].as_str().unwrap();
    assert!(message.contains("'huge'"), "{message}");
    assert!(message.contains("larger than 262144"), "{message}");
    assert!(message.len() < 1_000, "the diagnostic quotes nothing of it");
    assert_eq!(said.len(), 1, "{said:?}");

    // The 100 KB description (under the definition bound) is served cut
    // to 4,000 characters, its control characters dropped.
    let loaded = gw.tool_ok("load_tool", json!({"name": "long_story"})).await;
    let description = loaded["description"].as_str().unwrap();
    assert!(
        description.starts_with("Files a claim.[31m red"),
        "{description:.60}"
    );
    assert!(
        description.chars().count() <= 4_000,
        "{}",
        description.len()
    );
    assert!(
        !description.chars().any(|c| c.is_control()),
        "{description:.60}"
    );

    // Nothing of the 5 MB reaches /status or search.
    let status = gw.get("/status", &[]).await;
    assert_eq!(status.status, 200);
    assert!(status.text.len() < 200_000, "{} bytes", status.text.len());
    assert!(!status.text.contains("lorem ipsum lorem ipsum"));
    let hits = found(&gw, "beans jar").await;
    assert_eq!(hits.len(), 3, "{hits:?}");
    assert!(
        hits[..2].contains(&"sibling_before".to_string()),
        "{hits:?}"
    );
    assert!(hits[..2].contains(&"sibling_after".to_string()), "{hits:?}");
    let called = invoke(&gw, "sibling_after", json!({})).await;
    assert_eq!(first_text(&called), "sibling_after got {}");
    let unknown = envelope(&invoke(&gw, "huge", json!({})).await).expect("an envelope");
    assert_eq!(unknown["error"], "unknown_tool", "{unknown}");
}

// ------------------------------------------------------------ (c) schemas that do not convert

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tools_whose_schemas_do_not_convert_are_not_served_and_said_at_their_pointer() {
    // Not an ECMA-262 pattern: a possessive quantifier.
    let possessive = "^[a-z]++$";
    assert!(
        regress::Regex::new(possessive).is_err(),
        "the pattern must not compile as ECMA-262 for this test to mean anything"
    );
    let tools = vec![
        json!({
            "name": "missing_ref",
            "description": "Points at a definition that is not there.",
            "inputSchema": {"type": "object", "properties": {"x": {"$ref": "#/$defs/missing"}}}
        }),
        json!({
            "name": "bad/pattern~x",
            "description": "Has a pattern no client can compile.",
            "inputSchema": {"type": "object", "properties": {"code": {"type": "string", "pattern": possessive}}}
        }),
        json!({
            "name": "good",
            "description": "Converts fine.",
            "inputSchema": {
                "type": "object",
                "properties": {"who": {"$ref": "#/$defs/person"}, "code": {"type": "string", "pattern": "^[a-z]+$"}},
                "$defs": {"person": {"type": "object", "properties": {"name": {"type": "string"}}}}
            }
        }),
    ];
    let hostile = Hostile::start(
        Listing::Pages {
            tools: Arc::new(tools),
            page: 10,
        },
        Duration::ZERO,
    )
    .await;
    let (gw, _reloader, _dir) =
        live_gateway(&[("schemas.mcp.yaml", mcp_file(&hostile.mcp, 10_000, ""))]).await;
    wait_listed(&gw, "schemas.mcp.yaml", 1, Instant::now()).await;
    assert_eq!(served(&gw), ["good"]);

    let said = diagnostics_of(&gw, "schemas.mcp.yaml");
    for (pointer, name) in [
        ("/tools/missing_ref", "missing_ref"),
        ("/tools/bad~1pattern~0x", "bad/pattern~x"),
    ] {
        let diagnostic = said
            .iter()
            .find(|d| d["pointer"] == pointer)
            .unwrap_or_else(|| panic!("a diagnostic at {pointer}: {said:?}"));
        assert_eq!(diagnostic["code"], "invalid_operation", "{diagnostic}");
        assert_eq!(diagnostic["severity"], "error", "{diagnostic}");
        let message = diagnostic["message"].as_str().unwrap();
        assert!(message.contains(&format!("'{name}'")), "{message}");
        assert!(message.contains("inputSchema"), "{message}");
    }
    let pattern = said
        .iter()
        .find(|d| d["pointer"] == "/tools/bad~1pattern~0x")
        .unwrap();
    assert!(
        pattern["message"].as_str().unwrap().contains(possessive),
        "{pattern}"
    );
    assert_eq!(said.len(), 2, "{said:?}");
    // /status shows the same.
    let status = gw.status().await;
    let shown: Vec<&Value> = status["diagnostics"]
        .as_array()
        .unwrap_or_else(|| panic!("/status lists diagnostics: {status}"))
        .iter()
        .filter(|d| d["file"] == "schemas.mcp.yaml")
        .collect();
    assert_eq!(shown.len(), 2, "{shown:?}");
    assert!(
        shown
            .iter()
            .any(|d| d["pointer"] == "/tools/bad~1pattern~0x")
    );

    let good = gw.tool_ok("load_tool", json!({"name": "good"})).await;
    assert_eq!(
        good["inputSchema"]["properties"]["code"]["pattern"],
        "^[a-z]+$"
    );
    let refused = envelope(&invoke(&gw, "missing_ref", json!({})).await).expect("an envelope");
    assert_eq!(refused["error"], "unknown_tool", "{refused}");
    let called = invoke(&gw, "good", json!({"code": "abc"})).await;
    assert_eq!(first_text(&called), r#"good got {"code":"abc"}"#);
}

// ------------------------------------------------------------ (d) a listing that never comes

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_listing_that_never_comes_times_out_and_everything_else_is_served() {
    const TIMEOUT_MS: u64 = 800;
    let hostile = Hostile::start(Listing::Never, Duration::ZERO).await;
    let started = Instant::now();
    let (gw, _reloader, _dir) = live_gateway(&[
        ("stuck.mcp.yaml", mcp_file(&hostile.mcp, TIMEOUT_MS, "")),
        ("pets.yaml", pets_document(&hostile.api)),
    ])
    .await;
    let pets = found(&gw, "pets shelter").await;
    let pets = pets.first().cloned().expect("the pets operation is served");
    // The document is searched and called at full speed, throughout.
    let mut slowest = Duration::ZERO;
    let mut served_throughout = async || {
        let asked = Instant::now();
        assert_eq!(found(&gw, "pets shelter").await.first(), Some(&pets));
        let called = invoke(&gw, &pets, json!({})).await;
        let payload = tool_reply(&called).payload;
        assert_eq!(payload["body"], json!(["rex", "tom"]), "{payload}");
        slowest = slowest.max(asked.elapsed());
        assert!(hostile.server.alive_now() <= 1, "hung requests pile up");
    };

    // The supervisor gives up on the listing after timeoutMs and says so.
    let (down_after, entry) = wait_for(
        "the stuck server reported down",
        Duration::from_secs(10),
        async || {
            served_throughout().await;
            let entry = upstream_status(&gw, "stuck.mcp.yaml").await;
            entry["lastError"]
                .is_string()
                .then(|| (started.elapsed(), entry))
        },
    )
    .await;
    eprintln!("tools/list never answering: down after {down_after:?}: {entry}");
    assert!(
        down_after < Duration::from_millis(TIMEOUT_MS + 1_500),
        "{down_after:?}"
    );
    assert!(
        entry["state"] == "down" || entry["state"] == "connecting",
        "{entry}"
    );
    assert!(entry["tools"].is_null(), "never listed: {entry}");
    let last_error = entry["lastError"].as_str().unwrap();
    assert!(last_error.contains("tools/list"), "{last_error}");
    assert!(
        last_error.contains(&format!("{TIMEOUT_MS} ms")),
        "{last_error}"
    );
    let said = wait_for(
        "the upstream_unavailable diagnostic",
        Duration::from_secs(5),
        async || {
            diagnostics_of(&gw, "stuck.mcp.yaml")
                .into_iter()
                .find(|d| d["code"] == "upstream_unavailable")
        },
    )
    .await;
    assert!(
        said["message"]
            .as_str()
            .unwrap()
            .contains("not been listed yet"),
        "{said}"
    );

    // For three seconds more (several attempts), the document keeps
    // being served at full speed, and no hung request piles up.
    let until = Instant::now() + Duration::from_secs(3);
    while Instant::now() < until {
        served_throughout().await;
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    eprintln!("slowest search + invoke beside the stuck server: {slowest:?}");
    assert!(slowest < Duration::from_secs(1), "{slowest:?}");
    let attempts = hostile.server.lists.load(Ordering::SeqCst);
    assert!(attempts >= 2, "the supervisor tries again: {attempts}");
    assert_eq!(hostile.server.most_alive.load(Ordering::SeqCst), 1);
    assert!(
        hostile.server.dropped.load(Ordering::SeqCst) >= attempts - 1,
        "each timed-out listing's request is dropped"
    );
    assert!(served(&gw).iter().all(|name| name == &pets));
}

// ------------------------------------------------------------ (e) an endless event stream

/// Resident memory of process `pid`, in KiB.
fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

/// The gateway runs as its own process (`sezzlee serve`), so its resident
/// memory is its own and not the test binary's (where other tests run).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_listing_answered_by_an_endless_stream_times_out_bounded_and_the_stream_is_dropped() {
    const TIMEOUT_MS: u64 = 1_000;
    let chatter = Hostile::start(Listing::Chatter, Duration::ZERO).await;
    let unterminated = Hostile::start(Listing::Unterminated, Duration::ZERO).await;
    let garbage = Hostile::start(Listing::Garbage, Duration::ZERO).await;
    let folder = tempfile::tempdir().unwrap();
    for (name, url) in [
        ("chatter.mcp.yaml", &chatter.mcp),
        ("unterminated.mcp.yaml", &unterminated.mcp),
        ("garbage.mcp.yaml", &garbage.mcp),
    ] {
        std::fs::write(folder.path().join(name), mcp_file(url, TIMEOUT_MS, "")).unwrap();
    }
    std::fs::write(folder.path().join("pets.yaml"), pets_document(&chatter.api)).unwrap();
    let mut child = serve_command(folder.path())
        .spawn()
        .expect("sezzlee serve starts");
    let pid = child.id();
    let (url, logs) = listening_url(&mut child);
    let base = url.trim_end_matches("/mcp").to_string();
    let baseline = rss_kib(pid);
    let client = reqwest::Client::new();
    let status = async || {
        client
            .get(format!("{base}/status"))
            .send()
            .await
            .expect("/status answers")
            .json::<Value>()
            .await
            .expect("/status is JSON")
    };
    let entry_of = |status: &Value, file: &str| -> Value {
        status["upstreams"]
            .as_array()
            .and_then(|all| all.iter().find(|e| e["file"] == file).cloned())
            .unwrap_or(Value::Null)
    };

    // Five seconds: several attempts per server, memory sampled.
    let started = Instant::now();
    let mut samples = Vec::new();
    let mut errors: std::collections::BTreeMap<&str, (Duration, String)> = Default::default();
    while started.elapsed() < Duration::from_secs(5) {
        let now = status().await;
        for file in [
            "chatter.mcp.yaml",
            "unterminated.mcp.yaml",
            "garbage.mcp.yaml",
        ] {
            if let Some(error) = entry_of(&now, file)["lastError"].as_str() {
                errors
                    .entry(file)
                    .or_insert_with(|| (started.elapsed(), error.to_string()));
            }
        }
        samples.push(rss_kib(pid));
        // The document beside them keeps answering.
        let body = modern_request(
            1,
            "tools/call",
            json!({"name": "search_tools", "arguments": {"query": "pets shelter"}}),
        );
        let asked = Instant::now();
        let answer: Value = modern_post(&client, &url, &body)
            .send()
            .await
            .expect("the gateway answers")
            .json()
            .await
            .expect("JSON");
        assert!(
            asked.elapsed() < Duration::from_secs(2),
            "search took {:?}",
            asked.elapsed()
        );
        let found = names(&tool_reply(&answer["result"]).payload);
        assert_eq!(found.len(), 1, "{found:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let most = samples.iter().copied().max().unwrap_or(0);
    let half = samples.len() / 2;
    let late_most = samples[half..].iter().copied().max().unwrap_or(0);
    let early_most = samples[..half].iter().copied().max().unwrap_or(0);
    // The floors: a stream's buffer (up to the client's 64 MiB per event,
    // two streams alive at once) makes the peaks depend on timing; a leak
    // raises what remains between them.
    let late_least = samples[half..].iter().copied().min().unwrap_or(0);
    let early_least = samples[..half].iter().copied().min().unwrap_or(0);
    eprintln!(
        "RSS of the gateway: {} MiB at start, at most {} MiB (first half {} MiB, second half {} MiB); streamed: chatter {} MiB in {} streams, unterminated {} MiB in {} streams, garbage {} streams",
        baseline / 1024,
        most / 1024,
        early_most / 1024,
        late_most / 1024,
        chatter.server.streamed.load(Ordering::Relaxed) >> 20,
        chatter.server.started.load(Ordering::SeqCst),
        unterminated.server.streamed.load(Ordering::Relaxed) >> 20,
        unterminated.server.started.load(Ordering::SeqCst),
        garbage.server.started.load(Ordering::SeqCst),
    );
    for (file, (after, error)) in &errors {
        eprintln!("{file}: first lastError after {after:?}: {error}");
    }
    let _ = child.kill();
    let _ = child.wait();
    let logs = logs.lock().unwrap().clone();

    // Each failed, and as it should: the chatter by the timeout, the
    // unterminated event at the client's bound, the garbage at once.
    let (after, error) = errors
        .get("chatter.mcp.yaml")
        .unwrap_or_else(|| panic!("the chatter server reported: {logs}"));
    assert!(error.contains(&format!("{TIMEOUT_MS} ms")), "{error}");
    assert!(
        *after < Duration::from_millis(TIMEOUT_MS + 2_000),
        "{after:?}"
    );
    let (_, error) = errors
        .get("unterminated.mcp.yaml")
        .unwrap_or_else(|| panic!("the unterminated server reported: {logs}"));
    assert!(
        error.contains("larger than") || error.contains(&format!("{TIMEOUT_MS} ms")),
        "{error}"
    );
    let (after, error) = errors
        .get("garbage.mcp.yaml")
        .unwrap_or_else(|| panic!("the garbage server reported: {logs}"));
    assert!(error.contains("not JSON"), "{error}");
    assert!(*after < Duration::from_millis(TIMEOUT_MS), "{after:?}");

    // Memory stays bounded: no more than 200 MiB above the start, and
    // its floor not rising from the first half of the run to the second.
    assert!(
        most.saturating_sub(baseline) < 200 * 1024,
        "the gateway grew from {baseline} KiB to {most} KiB"
    );
    assert!(
        late_least < early_least + 32 * 1024,
        "the gateway keeps growing: its floor {early_least} KiB then {late_least} KiB (peaks {early_most} KiB, {late_most} KiB)"
    );
    // Every stream was dropped once its attempt failed (the gateway is
    // gone now: the last ones too), and each server was tried again.
    for (name, running) in [
        ("chatter", &chatter),
        ("unterminated", &unterminated),
        ("garbage", &garbage),
    ] {
        let server = &running.server;
        assert!(
            server.started.load(Ordering::SeqCst) >= 2,
            "{name} tried again"
        );
        assert!(
            server.most_alive.load(Ordering::SeqCst) <= 2,
            "{name}: streams pile up ({} at once)",
            server.most_alive.load(Ordering::SeqCst)
        );
        wait_for(
            &format!("{name}'s streams dropped"),
            Duration::from_secs(5),
            async || (server.alive_now() == 0).then_some(()),
        )
        .await;
    }
}

// ------------------------------------------------------------ (f) calls that take 30 s

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_the_server_answers_after_30_s_times_out_and_other_calls_are_served_meanwhile() {
    const TIMEOUT_MS: u64 = 1_000;
    let tools = vec![
        tool("sleepy", "Answers after thirty seconds."),
        tool("quick", "Answers at once."),
    ];
    let hostile = Hostile::start(
        Listing::Pages {
            tools: Arc::new(tools),
            page: 10,
        },
        Duration::from_secs(30),
    )
    .await;
    let (gw, _reloader, _dir) = live_gateway(&[
        ("slow.mcp.yaml", mcp_file(&hostile.mcp, TIMEOUT_MS, "")),
        ("pets.yaml", pets_document(&hostile.api)),
    ])
    .await;
    wait_listed(&gw, "slow.mcp.yaml", 3, Instant::now()).await;
    let gw = Arc::new(gw);

    // Two sleepy calls at once, while quick calls and the document go on.
    let sleepers: Vec<_> = (0..2)
        .map(|i| {
            let gw = gw.clone();
            tokio::spawn(async move {
                let asked = Instant::now();
                let answer = invoke(&gw, "sleepy", json!({"n": i})).await;
                (asked.elapsed(), answer)
            })
        })
        .collect();
    wait_for(
        "both sleepy calls at the server",
        Duration::from_secs(2),
        async || (hostile.server.alive_now() == 2).then_some(()),
    )
    .await;
    let pets = found(&gw, "pets shelter").await;
    let pets = pets
        .iter()
        .find(|n| n.contains("pets"))
        .cloned()
        .expect("the pets tool");
    let mut quick: u64 = 0;
    while sleepers.iter().any(|s| !s.is_finished()) {
        let asked = Instant::now();
        let called = invoke(&gw, "quick", json!({"n": quick})).await;
        assert_eq!(first_text(&called), format!(r#"quick got {{"n":{quick}}}"#));
        let payload = tool_reply(&invoke(&gw, &pets, json!({})).await).payload;
        assert_eq!(payload["status"], 200, "{payload}");
        assert!(
            asked.elapsed() < Duration::from_millis(500),
            "{:?}",
            asked.elapsed()
        );
        quick += 1;
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(
        quick >= 5,
        "only {quick} quick calls while the sleepy ones waited"
    );
    for sleeper in sleepers {
        let (took, answer) = sleeper.await.unwrap();
        eprintln!("sleepy call answered after {took:?}");
        let payload = envelope(&answer).unwrap_or_else(|| panic!("an envelope: {answer}"));
        assert_eq!(payload["error"], "backend_timeout", "{payload}");
        assert_eq!(payload["retryable"], true, "{payload}");
        assert!(
            payload["message"]
                .as_str()
                .unwrap()
                .contains(&format!("{TIMEOUT_MS} ms")),
            "{payload}"
        );
        assert!(took >= Duration::from_millis(TIMEOUT_MS), "{took:?}");
        assert!(took < Duration::from_millis(TIMEOUT_MS + 1_000), "{took:?}");
    }
    // The gateway hung up on both (the server's handlers were dropped),
    // and the server is still up and listed.
    wait_for(
        "the sleepy requests dropped",
        Duration::from_secs(5),
        async || (hostile.server.alive_now() == 0).then_some(()),
    )
    .await;
    assert_eq!(upstream_status(&gw, "slow.mcp.yaml").await["state"], "up");
    assert_eq!(hostile.server.calls.load(Ordering::SeqCst), 2 + quick);
    // Each call given up was cancelled at the server, by its request id.
    wait_for(
        "two notifications/cancelled at the server",
        Duration::from_secs(5),
        async || (hostile.server.cancelled.load(Ordering::SeqCst) == 2).then_some(()),
    )
    .await;
}

// ------------------------------------------------------------ the cut, said in bounded words

/// 200,000 tools of 50 bytes each: a listing of 10 MB, far inside the
/// client's bounds (64 MiB, 1,000 pages). The cut at maxTools is said in a
/// bounded number of diagnostics (it was one per tool cut: 199,000, a 39 MB
/// `/status` and a log line each).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_listing_far_past_max_tools_is_cut_in_a_bounded_number_of_diagnostics() {
    let tools: Vec<Value> = (0..200_000)
        .map(|i| json!({"name": format!("t{i}"), "inputSchema": {"type": "object"}}))
        .collect();
    let hostile = Hostile::start(
        Listing::Pages {
            tools: Arc::new(tools),
            page: 1_000,
        },
        Duration::ZERO,
    )
    .await;
    let started = Instant::now();
    let (gw, _reloader, _dir) =
        live_gateway(&[("amp.mcp.yaml", mcp_file(&hostile.mcp, 30_000, ""))]).await;
    let took = wait_for(
        "1,000 of the 200,000 tools served",
        Duration::from_secs(120),
        async || {
            (gw.gateway.store.current().catalog.tools().len() == 1_000).then(|| started.elapsed())
        },
    )
    .await;
    let said = diagnostics_of(&gw, "amp.mcp.yaml");
    let asked = Instant::now();
    let status = gw.get("/status", &[]).await;
    eprintln!(
        "200,000 tools listed, 1,000 served in {took:?}: {} diagnostics; /status {} bytes in {:?}",
        said.len(),
        status.text.len(),
        asked.elapsed()
    );
    assert_eq!(status.status, 200);
    assert!(
        said.iter().any(|d| d["code"] == "upstream_tool_left_out"
            && d["message"]
                .as_str()
                .is_some_and(|m| m.contains("maxTools"))),
        "the cut is said: {:?}",
        said.first()
    );
    assert!(said.len() <= 100, "{} diagnostics for one cut", said.len());
    assert!(
        status.text.len() < 1_000_000,
        "/status is {} bytes",
        status.text.len()
    );
}
