//! Live catalogs over real HTTP (docs/contract.md §5 subscriptions/listen,
//! §6 hot reload): a real gateway on `127.0.0.1:0` with its
//! reloader watching a temporary catalogs folder, real files changed the
//! ways editors, shells and Kubernetes change them, and real listening
//! clients reading the SSE body of `subscriptions/listen` with reqwest.
//!
//! Every change is checked end to end: the listener receives exactly one
//! `notifications/tools/list_changed` carrying its subscription id and the
//! next `sezzlee/catalogGeneration`, nothing follows it (a quiet window
//! longer than the debounce plus a rescan), the store, `/status` and the
//! `tools/list` stamps agree on the generation, and the tools the catalog
//! serves (through `load_tool`) are those of the files on disk. No-op saves
//! must produce no message at all in a quiet window.
//!
//! `SIGHUP` is tested on the real binary (`sezzlee serve --watch off` as a
//! child process), so no signal is ever sent to the test process; the same
//! test ends the child with `SIGTERM` and checks the graceful closure.
//! `Reloader::rescan` is also driven directly.

use crate::support::*;
use futures_util::{Stream, StreamExt};
use serde_json::{Value, json};
use sezzlee_catalog::{Catalog, Sources};
use sezzlee_gateway::settings::{Settings, WatchMode};
use sezzlee_gateway::store::Snapshot;
use std::collections::{BTreeSet, VecDeque};
use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;

/// The watcher's quiet period in these tests.
const DEBOUNCE: Duration = Duration::from_millis(40);
/// Longest wait for something that must happen (only reached on failure).
const PATIENCE: Duration = Duration::from_secs(10);
/// A window in which nothing may happen: several debounces and rescans.
const QUIET: Duration = Duration::from_millis(350);
/// The window the no-op saves must stay silent in.
const NO_OP_QUIET: Duration = Duration::from_millis(500);

// ------------------------------------------------------------ documents

/// An OpenAPI 3.0 document with one `GET` per `(path, operationId,
/// description)`; tool names are the operationIds.
fn document(operations: &[(&str, &str, &str)]) -> Value {
    let mut paths = serde_json::Map::new();
    for (path, id, description) in operations {
        paths.insert(
            path.to_string(),
            json!({"get": {
                "operationId": id,
                "description": description,
                "responses": {"200": {"description": "ok"}}
            }}),
        );
    }
    json!({
        "openapi": "3.0.3",
        "info": {"title": "live", "version": "1"},
        "servers": [{"url": "http://127.0.0.1:9/api"}],
        "paths": paths
    })
}

fn yaml(value: &Value) -> String {
    serde_yaml_ng::to_string(value).expect("YAML")
}

fn orders_yaml(description: &str) -> String {
    yaml(&document(&[("/orders", "list_orders", description)]))
}

fn orders_json(description: &str) -> String {
    document(&[("/orders", "list_orders", description)]).to_string()
}

// ------------------------------------------------------------ gateway

/// Test settings watching `dir` with file-system events.
fn watched(dir: &Path) -> Settings {
    Settings {
        watch: WatchMode::Events,
        debounce: DEBOUNCE,
        ..test_settings(dir)
    }
}

/// A running gateway with its reloader, on files written to a fresh folder.
struct Live {
    gw: TestGateway,
    reloader: Arc<sezzlee_gateway::reload::Reloader>,
    dir: PathBuf,
    _watcher: Option<notify::RecommendedWatcher>,
}

impl Live {
    async fn start(files: &[(&str, String)], configure: impl FnOnce(&mut Settings)) -> Live {
        let folder = tempfile::tempdir().expect("temporary catalogs folder");
        for (name, content) in files {
            write(&folder.path().join(name), content);
        }
        let dir = folder.path().to_path_buf();
        let mut settings = watched(&dir);
        configure(&mut settings);
        let events = settings.watch == WatchMode::Events;
        let (gw, reloader, watcher) = TestGateway::start_reloading(settings, Some(folder)).await;
        assert_eq!(
            watcher.is_some(),
            events,
            "a watcher exactly in events mode"
        );
        Live {
            gw,
            reloader,
            dir,
            _watcher: watcher,
        }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    fn generation(&self) -> u64 {
        self.gw.gateway.store.current().generation
    }

    async fn listen(&self, id: Value) -> Listener {
        Listener::open(&self.gw.client, &self.gw.url, id).await
    }

    /// Exactly one `list_changed` with generation `expected`, then nothing
    /// for [`QUIET`]; the store, `/status` and `tools/list` agree.
    async fn expect_bump(&self, listener: &mut Listener, expected: u64) {
        let generation = listener.expect_list_changed(PATIENCE).await;
        assert_eq!(
            generation, expected,
            "one change, one generation (saw {:?})",
            listener.generations
        );
        listener.assert_quiet(QUIET).await;
        self.assert_generation(expected).await;
    }

    /// Nothing for `window`; the generation is still `expected`.
    async fn expect_no_bump(&self, listener: &mut Listener, expected: u64, window: Duration) {
        listener.assert_quiet(window).await;
        self.assert_generation(expected).await;
    }

    async fn assert_generation(&self, expected: u64) {
        assert_eq!(self.generation(), expected, "the store's generation");
        assert_eq!(self.gw.status().await["generation"], expected, "/status");
        assert_stamps(&self.gw, expected).await;
    }

    /// The tool's description, or `None` when load_tool says unknown_tool.
    async fn description(&self, name: &str) -> Option<String> {
        self.load(name)
            .await
            .map(|d| d["description"].as_str().expect("description").to_string())
    }

    async fn version(&self, name: &str) -> String {
        let definition = self
            .load(name)
            .await
            .unwrap_or_else(|| panic!("{name} is served"));
        definition["version"].as_str().expect("version").to_string()
    }

    async fn load(&self, name: &str) -> Option<Value> {
        let reply = self.gw.tool("load_tool", json!({"name": name})).await;
        if reply.is_error {
            assert_eq!(reply.payload["error"], "unknown_tool", "{}", reply.payload);
            None
        } else {
            Some(reply.payload)
        }
    }

    /// Every tool name search_tools lists.
    async fn names(&self) -> BTreeSet<String> {
        let found = self.gw.search(json!({"query": "", "limit": 50})).await;
        names(&found).into_iter().collect()
    }

    /// The search cache on `/status`: answers held, hits, misses.
    async fn search_cache(&self) -> (u64, u64, u64) {
        let cache = &self.gw.status().await["searchCache"];
        let figure = |name: &str| {
            cache[name]
                .as_u64()
                .unwrap_or_else(|| panic!("{name}: {cache}"))
        };
        (figure("answers"), figure("hits"), figure("misses"))
    }

    /// Diagnostics on `/status` with `code` for `file`.
    async fn diagnostics(&self, code: &str, file: &str) -> Vec<Value> {
        let status = self.gw.status().await;
        status["diagnostics"]
            .as_array()
            .expect("diagnostics array")
            .iter()
            .filter(|d| d["code"] == code && d["file"] == file)
            .cloned()
            .collect()
    }

    /// Waits until `/status` shows (or no longer shows) such a diagnostic.
    async fn await_diagnostic(&self, code: &str, file: &str, present: bool) -> Vec<Value> {
        let deadline = Instant::now() + PATIENCE;
        loop {
            let found = self.diagnostics(code, file).await;
            if found.is_empty() != present {
                return found;
            }
            assert!(
                Instant::now() < deadline,
                "{code} on {file} never became present={present}: {}",
                self.gw.status().await
            );
            tokio::time::sleep(Duration::from_millis(15)).await;
        }
    }

    /// Waits until a rescan swapped in a new snapshot (even one with the
    /// same generation): proves a rebuild ran.
    async fn await_swap(&self, before: &Arc<Snapshot>) {
        let deadline = Instant::now() + PATIENCE;
        while Arc::ptr_eq(before, &self.gw.gateway.store.current()) {
            assert!(Instant::now() < deadline, "no rescan swapped the catalog");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    /// The served catalog is exactly what a fresh build of the folder gives.
    fn assert_matches_folder(&self) {
        let fresh = Catalog::load_dir(&self.dir).expect("folder readable");
        let served = self.gw.gateway.store.current();
        let definitions = |catalog: &Catalog| -> Vec<Value> {
            catalog.tools().iter().map(|t| t.definition()).collect()
        };
        assert_eq!(definitions(&served.catalog), definitions(&fresh));
        assert_eq!(served.catalog.fingerprint(), fresh.fingerprint());
    }
}

/// Every tool of `tools/list` (modern and legacy) carries the generation.
async fn assert_stamps(gw: &TestGateway, expected: u64) {
    let modern = gw
        .modern_ok("tools/list", json!({}), "ListToolsResult")
        .await;
    let legacy = gw
        .legacy_ok(LEGACY[0], "tools/list", json!({}), "ListToolsResult")
        .await;
    for result in [modern, legacy] {
        let tools = result["tools"].as_array().expect("tools");
        assert_eq!(tools.len(), 3, "{result}");
        for tool in tools {
            assert_eq!(tool["_meta"][GENERATION], expected, "stamp of {tool}");
        }
    }
}

fn write(path: &Path, content: &str) {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).unwrap();
    }
    std::fs::write(path, content).unwrap();
}

// ------------------------------------------------------------ SSE client

/// One server-sent event.
#[derive(Debug)]
enum Sse {
    /// A `:` line (keep-alive).
    Comment(String),
    Message(Value),
}

enum Next {
    Event(Sse),
    Timeout,
    Ended,
}

type Body = Pin<Box<dyn Stream<Item = reqwest::Result<Vec<u8>>> + Send>>;

/// A client reading one `subscriptions/listen` stream.
struct Listener {
    id: Value,
    headers: reqwest::header::HeaderMap,
    body: Body,
    buffer: Vec<u8>,
    events: VecDeque<Sse>,
    ended: bool,
    /// The generation of every `list_changed` received, in order.
    generations: Vec<u64>,
    comments: usize,
}

fn listen_body(id: &Value, notifications: Value) -> Value {
    let mut body = modern_request(
        1,
        "subscriptions/listen",
        json!({"notifications": notifications}),
    );
    body["id"] = id.clone();
    body
}

impl Listener {
    /// Opens a stream asking for `toolsListChanged`; checks the response
    /// headers and that the acknowledgement comes first and honours it.
    async fn open(client: &reqwest::Client, url: &str, id: Value) -> Listener {
        let mut listener = Listener::try_open(client, url, id, json!({"toolsListChanged": true}))
            .await
            .unwrap_or_else(|reply| panic!("listen refused: {} {}", reply.status, reply.text));
        let honoured = listener.expect_ack().await;
        assert_eq!(honoured, json!({"toolsListChanged": true}));
        listener
    }

    /// Sends the listen request; `Err` with the answer when it is not a
    /// 200 event stream.
    async fn try_open(
        client: &reqwest::Client,
        url: &str,
        id: Value,
        notifications: Value,
    ) -> Result<Listener, Reply> {
        let body = listen_body(&id, notifications);
        let response = modern_post(client, url, &body)
            .send()
            .await
            .expect("listen request sent");
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        if status != 200 {
            let text = response.text().await.unwrap_or_default();
            return Err(Reply {
                status,
                headers,
                text,
            });
        }
        let get = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
        assert_eq!(get("content-type"), Some("text/event-stream"));
        assert_eq!(get("x-accel-buffering"), Some("no"));
        let body: Body = Box::pin(
            response
                .bytes_stream()
                .map(|chunk| chunk.map(|b| b.to_vec())),
        );
        Ok(Listener {
            id,
            headers,
            body,
            buffer: Vec::new(),
            events: VecDeque::new(),
            ended: false,
            generations: Vec::new(),
            comments: 0,
        })
    }

    /// The next event within `within`.
    async fn next(&mut self, within: Duration) -> Next {
        let deadline = Instant::now() + within;
        loop {
            if let Some(event) = self.events.pop_front() {
                if matches!(event, Sse::Comment(_)) {
                    self.comments += 1;
                }
                return Next::Event(event);
            }
            if self.ended {
                return Next::Ended;
            }
            match tokio::time::timeout_at(deadline, self.body.next()).await {
                Err(_) => return Next::Timeout,
                Ok(None) => {
                    assert!(
                        self.buffer.iter().all(u8::is_ascii_whitespace),
                        "the stream ended inside an event: {:?}",
                        String::from_utf8_lossy(&self.buffer)
                    );
                    self.ended = true;
                }
                Ok(Some(Err(err))) => panic!("listen stream {} broke: {err}", self.id),
                Ok(Some(Ok(bytes))) => {
                    self.buffer.extend_from_slice(&bytes);
                    self.parse();
                }
            }
        }
    }

    /// Moves every complete event of the buffer to `events`.
    fn parse(&mut self) {
        while let Some(end) = self.buffer.windows(2).position(|w| w == b"\n\n") {
            let block: Vec<u8> = self.buffer.drain(..end + 2).collect();
            let text = String::from_utf8(block).expect("SSE is UTF-8");
            let mut data = Vec::new();
            for line in text.lines() {
                if let Some(comment) = line.strip_prefix(':') {
                    self.events
                        .push_back(Sse::Comment(comment.trim().to_string()));
                } else if let Some(value) = line.strip_prefix("data:") {
                    data.push(value.strip_prefix(' ').unwrap_or(value));
                } else if let Some(kind) = line.strip_prefix("event:") {
                    assert_eq!(kind.trim(), "message", "{text:?}");
                } else {
                    assert!(line.is_empty(), "unexpected SSE line {line:?}");
                }
            }
            if !data.is_empty() {
                let message = serde_json::from_str(&data.join("\n"))
                    .unwrap_or_else(|err| panic!("data is not JSON ({err}): {text:?}"));
                self.events.push_back(Sse::Message(message));
            }
        }
    }

    /// The next message (comments skipped); `None` on timeout.
    async fn next_message(&mut self, within: Duration) -> Option<Value> {
        let deadline = Instant::now() + within;
        loop {
            match self
                .next(deadline.saturating_duration_since(Instant::now()))
                .await
            {
                Next::Event(Sse::Message(message)) => return Some(message),
                Next::Event(Sse::Comment(_)) => continue,
                Next::Timeout => return None,
                Next::Ended => panic!("listen stream {} ended unexpectedly", self.id),
            }
        }
    }

    /// The very first event is the acknowledgement for this id; returns the
    /// honoured filter.
    async fn expect_ack(&mut self) -> Value {
        let Next::Event(Sse::Message(ack)) = self.next(PATIENCE).await else {
            panic!("the first event of a listen stream is the acknowledgement message");
        };
        assert_eq!(
            ack["method"], "notifications/subscriptions/acknowledged",
            "{ack}"
        );
        assert_eq!(ack["params"]["_meta"][SUBSCRIPTION], self.id, "{ack}");
        assert!(ack.get("id").is_none(), "a notification has no id: {ack}");
        assert_valid(MODERN, "SubscriptionsAcknowledgedNotification", &ack);
        ack["params"]["notifications"].clone()
    }

    /// Checks one `list_changed` message and records its generation, which
    /// must be higher than any before.
    fn take_list_changed(&mut self, message: &Value) -> u64 {
        record_list_changed(&self.id, message, &mut self.generations)
    }

    /// The next message is a `list_changed`: its generation.
    async fn expect_list_changed(&mut self, within: Duration) -> u64 {
        let message = self
            .next_message(within)
            .await
            .unwrap_or_else(|| panic!("no list_changed on stream {} within {within:?}", self.id));
        self.take_list_changed(&message)
    }

    /// Reads `list_changed` messages until one carries `target`.
    async fn await_generation(&mut self, target: u64, within: Duration) {
        let deadline = Instant::now() + within;
        while self.generations.last() != Some(&target) {
            let left = deadline.saturating_duration_since(Instant::now());
            let generation = self.expect_list_changed(left).await;
            assert!(generation <= target, "{generation} is past {target}");
        }
    }

    /// No message (keep-alive comments are fine) for `window`.
    async fn assert_quiet(&mut self, window: Duration) {
        let deadline = Instant::now() + window;
        loop {
            match self
                .next(deadline.saturating_duration_since(Instant::now()))
                .await
            {
                Next::Timeout => return,
                Next::Event(Sse::Comment(_)) => continue,
                Next::Event(Sse::Message(message)) => panic!(
                    "stream {} expected nothing, received {message} (generations so far {:?})",
                    self.id, self.generations
                ),
                Next::Ended => panic!("listen stream {} ended unexpectedly", self.id),
            }
        }
    }

    /// The stream ends (after any keep-alive comments) within `within`.
    async fn expect_end(&mut self, within: Duration) {
        let deadline = Instant::now() + within;
        loop {
            match self
                .next(deadline.saturating_duration_since(Instant::now()))
                .await
            {
                Next::Ended => return,
                Next::Event(Sse::Comment(_)) => continue,
                Next::Event(Sse::Message(message)) => {
                    panic!("nothing may follow the closing result: {message}")
                }
                Next::Timeout => panic!("stream {} did not end", self.id),
            }
        }
    }

    /// The next message is the graceful-closure result for this stream.
    async fn expect_closure(&mut self) {
        let message = self
            .next_message(PATIENCE)
            .await
            .unwrap_or_else(|| panic!("no closing result on stream {}", self.id));
        assert_eq!(
            message,
            json!({
                "jsonrpc": "2.0",
                "id": self.id,
                "result": {"resultType": "complete", "_meta": {SUBSCRIPTION: self.id}}
            })
        );
        assert_result(MODERN, "SubscriptionsListenResult", &message);
    }
}

/// Polls `condition` every 10 ms until it holds (panics after [`PATIENCE`]).
async fn eventually(what: &str, mut condition: impl FnMut() -> bool) {
    let deadline = Instant::now() + PATIENCE;
    while !condition() {
        assert!(Instant::now() < deadline, "never happened: {what}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

// ------------------------------------------------------------ the stream itself

#[tokio::test]
async fn the_acknowledgement_comes_first_with_the_id_and_the_honoured_subset() {
    let live = Live::start(&[("orders.yaml", orders_yaml("All orders."))], |_| {}).await;
    // A string id and a number id are echoed with their JSON type.
    let mut by_string = live.listen(json!("listen-α")).await;
    let mut by_number = live.listen(json!(42)).await;

    // Types this server does not serve are left out of the acknowledgement.
    let mut wider = Listener::try_open(
        &live.gw.client,
        &live.gw.url,
        json!("wider"),
        json!({
            "toolsListChanged": true,
            "promptsListChanged": true,
            "resourcesListChanged": true,
            "resourceSubscriptions": ["file:///project/config.json"]
        }),
    )
    .await
    .unwrap_or_else(|reply| panic!("{}", reply.text));
    assert_eq!(wider.expect_ack().await, json!({"toolsListChanged": true}));

    // Asking only for what is not served: an empty acknowledged filter, and
    // no tools notification ever (not requested, so never sent).
    let mut prompts_only = Listener::try_open(
        &live.gw.client,
        &live.gw.url,
        json!(7),
        json!({"promptsListChanged": true, "toolsListChanged": false}),
    )
    .await
    .unwrap_or_else(|reply| panic!("{}", reply.text));
    assert_eq!(prompts_only.expect_ack().await, json!({}));

    write(&live.path("orders.yaml"), &orders_yaml("Every order."));
    for listener in [&mut by_string, &mut by_number, &mut wider] {
        assert_eq!(listener.expect_list_changed(PATIENCE).await, 1);
    }
    prompts_only.assert_quiet(QUIET).await;
    assert!(prompts_only.generations.is_empty());
    assert_eq!(
        by_string.headers.get("cache-control").map(|v| v.as_bytes()),
        Some(&b"no-cache"[..])
    );
}

/// A client that never finishes its request head is disconnected after
/// `header_read_timeout`; a listen stream, whose head arrived, outlives it
/// and still carries the next change.
#[tokio::test]
async fn half_sent_requests_are_cut_off_but_idle_listen_streams_are_not() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let live = Live::start(&[("orders.yaml", orders_yaml("All orders."))], |s| {
        s.header_read_timeout = Duration::from_millis(300);
    })
    .await;
    let mut listener = live.listen(json!("patient")).await;

    let address = live.gw.base.trim_start_matches("http://").to_string();
    let mut socket = tokio::net::TcpStream::connect(&address)
        .await
        .expect("connect");
    socket
        .write_all(b"POST /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n")
        .await
        .expect("half a request head");
    let started = Instant::now();
    let mut answer = Vec::new();
    let closed =
        tokio::time::timeout(Duration::from_secs(5), socket.read_to_end(&mut answer)).await;
    assert!(
        closed.is_ok(),
        "the half-sent request still holds its socket after 5 s"
    );
    assert!(
        started.elapsed() >= Duration::from_millis(250),
        "cut off before the timeout: {:?}",
        started.elapsed()
    );
    let text = String::from_utf8_lossy(&answer);
    assert!(!text.contains(" 200 "), "{text}");

    // Well past the timeout, the listen stream is open and still delivers.
    tokio::time::sleep(Duration::from_millis(600)).await;
    assert_eq!(live.gw.gateway.streams.count(), 1);
    write(&live.path("orders.yaml"), &orders_yaml("Every order."));
    live.expect_bump(&mut listener, 1).await;
}

#[tokio::test]
async fn keep_alive_comments_arrive_while_idle() {
    let live = Live::start(&[("orders.yaml", orders_yaml("All orders."))], |s| {
        s.keepalive = Duration::from_millis(100);
    })
    .await;
    let mut listener = live.listen(json!("idle")).await;
    // One idle second at a 100 ms interval: comments, paced (not a flood),
    // and no message.
    let window = Instant::now() + Duration::from_secs(1);
    let mut comments = 0;
    loop {
        match listener
            .next(window.saturating_duration_since(Instant::now()))
            .await
        {
            Next::Event(Sse::Comment(text)) => {
                assert_eq!(text, "keep-alive");
                comments += 1;
            }
            Next::Event(Sse::Message(message)) => panic!("idle, yet {message}"),
            Next::Timeout => break,
            Next::Ended => panic!("the stream ended"),
        }
    }
    assert!(
        (3..=12).contains(&comments),
        "{comments} keep-alives in one second"
    );

    // The default interval (15 s) sends none in a short idle period.
    let calm = Live::start(&[("orders.yaml", orders_yaml("All orders."))], |_| {}).await;
    let mut listener = calm.listen(json!("calm")).await;
    listener.assert_quiet(QUIET).await;
    assert_eq!(listener.comments, 0);
}

#[tokio::test]
async fn listen_is_not_available_in_the_legacy_era() {
    let gw = TestGateway::with_files(&[("orders.yaml", orders_yaml("All orders."))], |_| {}).await;
    for version in LEGACY {
        let reply = gw
            .legacy(
                version,
                "subscriptions/listen",
                json!({"notifications": {"toolsListChanged": true}}),
            )
            .await;
        assert_eq!(reply.header("content-type"), Some("application/json"));
        assert_eq!(reply.error_code(), -32601, "{version}: {}", reply.text);
        assert_eq!(reply.json()["id"], 1);
        assert_error(version, &reply.json());
    }
}

// ------------------------------------------------------------ ways files change

#[tokio::test]
async fn editing_a_document_in_place() {
    let live = Live::start(&[("orders.yaml", orders_yaml("Orders, alpha."))], |_| {}).await;
    let mut listener = live.listen(json!("in-place")).await;
    live.assert_generation(0).await;
    let before = live.version("list_orders").await;

    // Same length, written over the old bytes without truncating.
    let edited = orders_yaml("Orders, omega.");
    assert_eq!(edited.len(), orders_yaml("Orders, alpha.").len());
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .open(live.path("orders.yaml"))
        .unwrap();
    file.write_all(edited.as_bytes()).unwrap();
    drop(file);

    live.expect_bump(&mut listener, 1).await;
    assert_eq!(
        live.description("list_orders").await.as_deref(),
        Some("Orders, omega.")
    );
    assert_ne!(live.version("list_orders").await, before);
    live.assert_matches_folder();
}

#[tokio::test]
async fn editor_saves_by_temp_file_and_rename() {
    let live = Live::start(&[("orders.yaml", orders_yaml("First."))], |_| {}).await;
    let mut listener = live.listen(json!(1)).await;

    // Atomic save: a hidden temp file renamed over the document.
    let temp = live.path(".orders.yaml.tmp-4411");
    write(&temp, &orders_yaml("Second."));
    std::fs::rename(&temp, live.path("orders.yaml")).unwrap();
    live.expect_bump(&mut listener, 1).await;
    assert_eq!(
        live.description("list_orders").await.as_deref(),
        Some("Second.")
    );

    // Backup-style save (vim): the original moved to `~`, a new file
    // written, the backup removed.
    let backup = live.path("orders.yaml~");
    std::fs::rename(live.path("orders.yaml"), &backup).unwrap();
    write(&live.path("orders.yaml"), &orders_yaml("Third."));
    std::fs::remove_file(&backup).unwrap();
    live.expect_bump(&mut listener, 2).await;
    assert_eq!(
        live.description("list_orders").await.as_deref(),
        Some("Third.")
    );
    live.assert_matches_folder();
}

#[tokio::test]
async fn truncate_then_write() {
    let live = Live::start(
        &[("orders.yaml", orders_yaml("Before truncation."))],
        |_| {},
    )
    .await;
    let mut listener = live.listen(json!("truncate")).await;
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .open(live.path("orders.yaml"))
        .unwrap();
    file.set_len(0).unwrap();
    file.write_all(orders_yaml("After truncation.").as_bytes())
        .unwrap();
    drop(file);
    live.expect_bump(&mut listener, 1).await;
    assert_eq!(
        live.description("list_orders").await.as_deref(),
        Some("After truncation.")
    );
    live.assert_matches_folder();
}

#[tokio::test]
async fn a_write_in_several_chunks_reloads_once() {
    let live = Live::start(&[("orders.json", orders_json("Whole."))], |_| {}).await;
    let mut listener = live.listen(json!("chunks")).await;
    let content = document(&[
        ("/orders", "list_orders", "Written in chunks."),
        ("/invoices", "list_invoices", "Invoices, also in chunks."),
    ])
    .to_string();
    let bytes = content.as_bytes();
    let mut file = std::fs::File::create(live.path("orders.json")).unwrap();
    for chunk in bytes.chunks(bytes.len().div_ceil(4)) {
        file.write_all(chunk).unwrap();
        file.flush().unwrap();
        // Pauses shorter than the debounce.
        tokio::time::sleep(DEBOUNCE / 4).await;
    }
    drop(file);
    live.expect_bump(&mut listener, 1).await;
    assert_eq!(
        live.description("list_orders").await.as_deref(),
        Some("Written in chunks.")
    );
    assert_eq!(
        live.description("list_invoices").await.as_deref(),
        Some("Invoices, also in chunks.")
    );
    assert!(
        live.diagnostics("parse_error", "orders.json")
            .await
            .is_empty()
    );
    live.assert_matches_folder();
}

#[tokio::test]
async fn adding_then_deleting_a_document() {
    let live = Live::start(&[("orders.yaml", orders_yaml("Orders."))], |_| {}).await;
    let mut listener = live.listen(json!("add-delete")).await;
    assert_eq!(live.description("list_invoices").await, None);
    // The same search three times: ranked twice (kept the second time),
    // then answered from the cache.
    let only_orders = BTreeSet::from(["list_orders".to_string()]);
    for _ in 0..3 {
        assert_eq!(live.names().await, only_orders);
    }
    assert_eq!(
        live.search_cache().await,
        (1, 1, 2),
        "answers, hits, misses"
    );

    let invoices = yaml(&document(&[("/invoices", "list_invoices", "Invoices.")]));
    write(&live.path("invoices.yaml"), &invoices);
    live.expect_bump(&mut listener, 1).await;
    assert_eq!(
        live.description("list_invoices").await.as_deref(),
        Some("Invoices.")
    );
    // The new catalog has its own, empty cache: no answer of the old one
    // is served.
    assert_eq!(
        live.search_cache().await,
        (0, 0, 0),
        "answers, hits, misses"
    );
    assert_eq!(
        live.names().await,
        BTreeSet::from(["list_invoices".to_string(), "list_orders".to_string()])
    );

    std::fs::remove_file(live.path("invoices.yaml")).unwrap();
    live.expect_bump(&mut listener, 2).await;
    assert_eq!(
        live.description("list_invoices").await,
        None,
        "unknown_tool"
    );
    let invoke = live
        .gw
        .tool_err(
            "invoke_tool",
            json!({"name": "list_invoices", "arguments": {}}),
        )
        .await;
    assert_eq!(invoke["error"], "unknown_tool");
    assert_eq!(
        live.names().await,
        BTreeSet::from(["list_orders".to_string()])
    );
    assert_eq!(
        live.description("list_orders").await.as_deref(),
        Some("Orders.")
    );
    live.assert_matches_folder();
}

#[tokio::test]
async fn moving_a_whole_folder_in_and_out() {
    let live = Live::start(&[("orders.yaml", orders_yaml("Orders."))], |_| {}).await;
    let mut listener = live.listen(json!("mv")).await;
    // Staged beside the catalogs folder (same file system), then moved.
    let outside = tempfile::tempdir_in(live.dir.parent().unwrap()).unwrap();
    let staged = outside.path().join("billing");
    write(
        &staged.join("invoices.yaml"),
        &yaml(&document(&[("/invoices", "list_invoices", "Invoices.")])),
    );
    write(
        &staged.join("v2/refunds.yaml"),
        &yaml(&document(&[("/refunds", "list_refunds", "Refunds.")])),
    );

    std::fs::rename(&staged, live.path("billing")).unwrap();
    live.expect_bump(&mut listener, 1).await;
    assert_eq!(
        live.description("list_invoices").await.as_deref(),
        Some("Invoices.")
    );
    assert_eq!(
        live.description("list_refunds").await.as_deref(),
        Some("Refunds.")
    );

    // The moved-in folders are watched too.
    write(
        &live.path("billing/v2/refunds.yaml"),
        &yaml(&document(&[(
            "/refunds",
            "list_refunds",
            "Refunds, edited.",
        )])),
    );
    live.expect_bump(&mut listener, 2).await;
    assert_eq!(
        live.description("list_refunds").await.as_deref(),
        Some("Refunds, edited.")
    );

    std::fs::rename(live.path("billing"), &staged).unwrap();
    live.expect_bump(&mut listener, 3).await;
    assert_eq!(live.description("list_invoices").await, None);
    assert_eq!(live.description("list_refunds").await, None);
    assert_eq!(
        live.names().await,
        BTreeSet::from(["list_orders".to_string()])
    );
    live.assert_matches_folder();
}

#[cfg(unix)]
#[tokio::test]
async fn kubernetes_configmap_symlink_swap() {
    use std::os::unix::fs::symlink;
    let folder = tempfile::tempdir().unwrap();
    let dir = folder.path();
    // kubelet's layout: timestamped folder, `..data` link to it, and one
    // link per key through `..data`.
    write(
        &dir.join("..2026_12_02_v1/orders.yaml"),
        &orders_yaml("Version one."),
    );
    symlink("..2026_12_02_v1", dir.join("..data")).unwrap();
    symlink("..data/orders.yaml", dir.join("orders.yaml")).unwrap();
    let (gw, reloader, watcher) = TestGateway::start_reloading(watched(dir), None).await;
    let live = Live {
        gw,
        reloader,
        dir: dir.to_path_buf(),
        _watcher: watcher,
    };
    assert_eq!(
        live.description("list_orders").await.as_deref(),
        Some("Version one."),
        "hidden `..` folders are not read twice, the link is followed"
    );
    assert_eq!(live.names().await.len(), 1);
    let mut listener = live.listen(json!("configmap")).await;

    // An update: a new timestamped folder, a temporary link to it renamed
    // over `..data` (atomic), the old folder removed.
    for (version, description) in [(2, "Version two."), (3, "Version three.")] {
        let previous = format!("..2026_12_02_v{}", version - 1);
        let next = format!("..2026_12_02_v{version}");
        write(
            &dir.join(&next).join("orders.yaml"),
            &orders_yaml(description),
        );
        symlink(&next, dir.join("..data_tmp")).unwrap();
        std::fs::rename(dir.join("..data_tmp"), dir.join("..data")).unwrap();
        std::fs::remove_dir_all(dir.join(&previous)).unwrap();
        live.expect_bump(&mut listener, version - 1).await;
        assert_eq!(
            live.description("list_orders").await.as_deref(),
            Some(description)
        );
        live.assert_matches_folder();
    }
    assert_eq!(live.names().await.len(), 1);
}

#[tokio::test]
async fn polling_mode_picks_up_a_change() {
    let live = Live::start(&[("orders.yaml", orders_yaml("Polled."))], |s| {
        s.watch = WatchMode::Poll;
        s.poll_interval = Duration::from_millis(100);
    })
    .await;
    let mut listener = live.listen(json!("poll")).await;
    write(&live.path("orders.yaml"), &orders_yaml("Polled again."));
    live.expect_bump(&mut listener, 1).await;
    assert_eq!(
        live.description("list_orders").await.as_deref(),
        Some("Polled again.")
    );
    // Polling rescans unchanged files without bumping.
    live.expect_no_bump(&mut listener, 1, Duration::from_millis(400))
        .await;
}

#[tokio::test]
async fn with_watching_off_only_a_rescan_reloads() {
    let live = Live::start(&[("orders.json", orders_json("Rescanned."))], |s| {
        s.watch = WatchMode::Off;
    })
    .await;
    let mut listener = live.listen(json!("rescan")).await;
    use sezzlee_gateway::reload::Outcome;
    assert_eq!(live.reloader.rescan().await, Outcome::Unchanged);

    // Not watched: nothing happens until a rescan is asked for.
    write(&live.path("orders.json"), &orders_json("Rescanned again."));
    live.expect_no_bump(&mut listener, 0, QUIET).await;
    assert_eq!(
        live.description("list_orders").await.as_deref(),
        Some("Rescanned.")
    );
    assert_eq!(live.reloader.rescan().await, Outcome::Bumped(1));
    live.expect_bump(&mut listener, 1).await;
    assert_eq!(
        live.description("list_orders").await.as_deref(),
        Some("Rescanned again.")
    );

    // Whitespace only: swapped, no new generation, nothing sent.
    let pretty = serde_json::to_string_pretty(
        &serde_json::from_str::<Value>(&orders_json("Rescanned again.")).unwrap(),
    )
    .unwrap();
    write(&live.path("orders.json"), &pretty);
    assert_eq!(live.reloader.rescan().await, Outcome::Swapped);
    assert_eq!(live.reloader.rescan().await, Outcome::Unchanged);
    live.expect_no_bump(&mut listener, 1, QUIET).await;

    // A deletion is held until a rescan after the grace still misses the
    // file (the watcher schedules that rescan; here it is asked for).
    std::fs::remove_file(live.path("orders.json")).unwrap();
    assert_eq!(live.reloader.rescan().await, Outcome::Held);
    assert_eq!(
        live.description("list_orders").await.as_deref(),
        Some("Rescanned again.")
    );
    tokio::time::sleep(live.gw.gateway.settings.deletion_grace).await;
    assert_eq!(live.reloader.rescan().await, Outcome::Bumped(2));
    live.expect_bump(&mut listener, 2).await;
    assert_eq!(live.description("list_orders").await, None);
}

// ------------------------------------------------------------ bad files

#[tokio::test]
async fn a_broken_document_keeps_its_last_good_version_until_fixed() {
    let good = orders_json("Good.");
    let live = Live::start(&[("orders.json", good.clone())], |_| {}).await;
    let mut listener = live.listen(json!("broken")).await;
    let version = live.version("list_orders").await;
    assert!(
        live.diagnostics("parse_error", "orders.json")
            .await
            .is_empty()
    );

    // Broken: the last good version serves, a diagnostic says so, no bump.
    write(
        &live.path("orders.json"),
        "{ \"openapi\": \"3.0.3\", broken",
    );
    let found = live
        .await_diagnostic("parse_error", "orders.json", true)
        .await;
    assert_eq!(found[0]["severity"], "error", "{found:?}");
    assert!(
        found[0]["message"]
            .as_str()
            .unwrap()
            .contains("last good version keeps serving"),
        "{found:?}"
    );
    live.expect_no_bump(&mut listener, 0, QUIET).await;
    assert_eq!(live.version("list_orders").await, version, "still served");
    assert_eq!(
        live.description("list_orders").await.as_deref(),
        Some("Good.")
    );

    // Fixed with the same content as the last good one: no bump.
    write(&live.path("orders.json"), &good);
    live.await_diagnostic("parse_error", "orders.json", false)
        .await;
    live.expect_no_bump(&mut listener, 0, QUIET).await;
    assert_eq!(live.version("list_orders").await, version);

    // Broken again, then fixed with different content: one bump.
    write(&live.path("orders.json"), "{ broken again");
    live.await_diagnostic("parse_error", "orders.json", true)
        .await;
    live.expect_no_bump(&mut listener, 0, QUIET).await;
    write(&live.path("orders.json"), &orders_json("Better."));
    live.expect_bump(&mut listener, 1).await;
    assert!(
        live.diagnostics("parse_error", "orders.json")
            .await
            .is_empty()
    );
    assert_eq!(
        live.description("list_orders").await.as_deref(),
        Some("Better.")
    );
    assert_ne!(live.version("list_orders").await, version);
}

#[tokio::test]
async fn a_sidecar_revision_below_one_is_refused_on_reload() {
    let sidecar = |catalog: i64, name: &str| {
        json!({"revision": {"catalog": catalog}, "tools": {"GET /orders": {"name": name}}})
            .to_string()
    };
    let live = Live::start(
        &[
            ("orders.yaml", orders_yaml("Orders.")),
            ("orders.sezzlee.json", sidecar(2, "all_orders")),
        ],
        |_| {},
    )
    .await;
    let mut listener = live.listen(json!("sidecar")).await;
    let version = live.version("all_orders").await;

    write(
        &live.path("orders.sezzlee.json"),
        &sidecar(0, "renamed_orders"),
    );
    let found = live
        .await_diagnostic("invalid_configuration", "orders.sezzlee.json", true)
        .await;
    assert_eq!(found[0]["severity"], "error", "{found:?}");
    assert_eq!(found[0]["pointer"], "/revision/catalog", "{found:?}");
    live.expect_no_bump(&mut listener, 0, QUIET).await;
    // The last good sidecar keeps serving: its name, its revision.
    assert_eq!(live.version("all_orders").await, version);
    assert_eq!(live.description("renamed_orders").await, None);
    assert_eq!(live.description("list_orders").await, None);

    write(&live.path("orders.sezzlee.json"), &sidecar(3, "all_orders"));
    live.expect_bump(&mut listener, 1).await;
    assert!(
        live.diagnostics("invalid_configuration", "orders.sezzlee.json")
            .await
            .is_empty()
    );
    assert_ne!(
        live.version("all_orders").await,
        version,
        "revision 3 is carried"
    );
    live.assert_matches_folder();
}

/// `/metrics` counts `refused` reloads that refused a changed file and
/// `unreadable` that could not read the folder (none whose rebuild
/// failed), and `/status` their sum.
async fn assert_reload_failures(gw: &TestGateway, refused: f64, unreadable: f64) {
    let text = gw.metrics().await;
    let failures = |reason: &str| {
        metric(
            &text,
            &format!("sezzlee_reload_failures_total{{reason=\"{reason}\"}}"),
        )
        .unwrap_or_else(|| panic!("no {reason} count:\n{text}"))
    };
    assert_eq!(failures("file_refused"), refused, "{text}");
    assert_eq!(failures("folder_unreadable"), unreadable, "{text}");
    assert_eq!(failures("rebuild_failed"), 0.0, "{text}");
    assert_eq!(gw.status().await["reloadFailures"], refused + unreadable);
}

#[tokio::test]
async fn failed_and_refused_reloads_are_counted() {
    use sezzlee_gateway::reload::Outcome;
    let sidecar = |catalog: i64| json!({"revision": {"catalog": catalog}}).to_string();
    let live = Live::start(
        &[
            ("orders.yaml", orders_yaml("Counted.")),
            ("orders.sezzlee.json", sidecar(2)),
        ],
        |s| s.watch = WatchMode::Off,
    )
    .await;
    assert_reload_failures(&live.gw, 0.0, 0.0).await;

    // A sidecar refused: counted once, not again while it stays so.
    write(&live.path("orders.sezzlee.json"), &sidecar(0));
    assert_eq!(live.reloader.rescan().await, Outcome::Swapped);
    assert_reload_failures(&live.gw, 1.0, 0.0).await;
    assert_eq!(live.reloader.rescan().await, Outcome::Unchanged);
    assert_reload_failures(&live.gw, 1.0, 0.0).await;

    // A document that no longer parses; then both fixed: no failure.
    write(&live.path("orders.yaml"), "openapi: [broken");
    assert_eq!(live.reloader.rescan().await, Outcome::Swapped);
    assert_reload_failures(&live.gw, 2.0, 0.0).await;
    write(&live.path("orders.yaml"), &orders_yaml("Counted again."));
    write(&live.path("orders.sezzlee.json"), &sidecar(3));
    assert_eq!(live.reloader.rescan().await, Outcome::Bumped(1));
    assert_reload_failures(&live.gw, 2.0, 0.0).await;

    // The folder gone: the reload fails, the catalog stays.
    std::fs::remove_dir_all(&live.dir).unwrap();
    assert_eq!(live.reloader.rescan().await, Outcome::Failed);
    assert_reload_failures(&live.gw, 2.0, 1.0).await;
    assert_eq!(
        live.description("list_orders").await.as_deref(),
        Some("Counted again.")
    );
}

// ------------------------------------------------------------ no-op saves

#[tokio::test]
async fn no_op_saves_send_nothing_and_bump_nothing() {
    let compact = orders_json("Unchanged.");
    let live = Live::start(
        &[
            ("orders.json", compact.clone()),
            (
                "notes.yaml",
                orders_yaml("Notes.").replace("list_orders", "list_notes"),
            ),
        ],
        |_| {},
    )
    .await;
    let mut listener = live.listen(json!("no-op")).await;
    let versions = (
        live.version("list_orders").await,
        live.version("list_notes").await,
    );

    // touch: only the modification time changes.
    let file = std::fs::File::options()
        .write(true)
        .open(live.path("notes.yaml"))
        .unwrap();
    file.set_modified(std::time::SystemTime::now() + Duration::from_secs(60))
        .unwrap();
    drop(file);
    live.expect_no_bump(&mut listener, 0, NO_OP_QUIET).await;

    // The same bytes saved again.
    write(&live.path("orders.json"), &compact);
    live.expect_no_bump(&mut listener, 0, NO_OP_QUIET).await;

    // Reformatted JSON (whitespace, then key order): a rebuild runs and
    // is swapped in, but no definition changed.
    let value: Value = serde_json::from_str(&compact).unwrap();
    for content in [
        serde_json::to_string_pretty(&value).unwrap(),
        reorder_keys(&value).to_string(),
    ] {
        let before = live.gw.gateway.store.current();
        write(&live.path("orders.json"), &content);
        live.await_swap(&before).await;
        live.expect_no_bump(&mut listener, 0, NO_OP_QUIET).await;
    }
    assert_eq!(
        (
            live.version("list_orders").await,
            live.version("list_notes").await
        ),
        versions
    );

    // The stream was live all along: a real change arrives as generation 1.
    write(&live.path("orders.json"), &orders_json("Changed."));
    live.expect_bump(&mut listener, 1).await;
}

/// The same JSON with every object's keys in reverse order.
fn reorder_keys(value: &Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .rev()
                .map(|(k, v)| (k.clone(), reorder_keys(v)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(reorder_keys).collect()),
        other => other.clone(),
    }
}

// ------------------------------------------------------------ bursts and slow readers

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_burst_of_one_hundred_edits() {
    let live = Live::start(&[("orders.json", orders_json("Burst start."))], |_| {}).await;
    // Readers that keep reading during the burst, with different ids.
    let (target, _) = tokio::sync::watch::channel(u64::MAX);
    let mut readers = Vec::new();
    for id in [json!("reader-a"), json!(2), json!("reader-c")] {
        let mut listener = live.listen(id).await;
        let target = target.subscribe();
        readers.push(tokio::spawn(async move {
            loop {
                if listener.generations.last() == Some(&*target.borrow()) {
                    return listener;
                }
                if let Some(message) = listener.next_message(Duration::from_millis(50)).await {
                    listener.take_list_changed(&message);
                }
            }
        }));
    }
    // A reader that reads nothing until the burst is over.
    let mut slow = live.listen(json!(99)).await;
    // The store's own generation, watched: it never goes backwards.
    let mut store = live.gw.gateway.store.subscribe();
    let seen = Arc::new(std::sync::Mutex::new(vec![*store.borrow_and_update()]));
    let recorder = {
        let seen = seen.clone();
        tokio::spawn(async move {
            while store.changed().await.is_ok() {
                let generation = *store.borrow_and_update();
                seen.lock().unwrap().push(generation);
            }
        })
    };

    for i in 0..100 {
        write(
            &live.path("orders.json"),
            &orders_json(&format!("Burst edit {i}.")),
        );
        // Mostly faster than the debounce, with a pause now and then so
        // several rebuilds happen during the burst.
        let pause = if i % 10 == 9 {
            DEBOUNCE * 3
        } else {
            Duration::from_millis(1)
        };
        tokio::time::sleep(pause).await;
    }

    // Settled: the served catalog is the final file's, and stays so.
    let fresh = Catalog::load_dir(&live.dir).unwrap().fingerprint();
    let store_now = live.gw.gateway.store.clone();
    eventually("the final file is served", || {
        store_now.current().catalog.fingerprint() == fresh
    })
    .await;
    let last = live.generation();
    tokio::time::sleep(QUIET).await;
    assert_eq!(live.generation(), last, "settled");
    assert!(
        (2..=100).contains(&last),
        "several rebuilds, at most one per edit: {last}"
    );
    assert_eq!(
        live.description("list_orders").await.as_deref(),
        Some("Burst edit 99.")
    );
    live.assert_matches_folder();
    live.assert_generation(last).await;

    target.send_replace(last);
    for reader in readers {
        let mut listener = tokio::time::timeout(PATIENCE, reader)
            .await
            .expect("every reader reaches the last generation")
            .expect("reader task");
        assert_eq!(
            listener.generations.last(),
            Some(&last),
            "{:?}",
            listener.generations
        );
        listener.assert_quiet(Duration::from_millis(100)).await;
    }
    slow.await_generation(last, PATIENCE).await;
    assert!(slow.generations.len() < 100, "{:?}", slow.generations);
    slow.assert_quiet(Duration::from_millis(100)).await;

    recorder.abort();
    let seen = seen.lock().unwrap().clone();
    assert!(
        seen.windows(2).all(|w| w[0] < w[1]),
        "generations only rise: {seen:?}"
    );
    assert_eq!(seen.last(), Some(&last));
}

#[tokio::test]
async fn a_listener_slower_than_the_changes_gets_the_latest_generation_not_a_backlog() {
    // Connections served on this test's own single-threaded runtime
    // (`serve_threads = 0`), so the stream cannot run while the swaps
    // below are made.
    let live = Live::start(&[("orders.json", orders_json("Slow 0."))], |s| {
        s.watch = WatchMode::Off;
        s.serve_threads = 0;
    })
    .await;
    let mut slow = live.listen(json!("slow")).await;
    // 100 new catalogs swapped in back to back while the listener reads
    // nothing (and, on this single-threaded runtime, before the stream can
    // even run): a queue would deliver 100 notifications.
    for generation in 1..=100u64 {
        let sources = Sources::from_files(
            [(
                "orders.json".to_string(),
                orders_json(&format!("Slow {generation}.")).into_bytes(),
            )],
            None,
        );
        let catalog = Catalog::build(&sources);
        live.gw
            .gateway
            .store
            .swap(Snapshot::new(catalog, generation, Duration::ZERO));
    }
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(slow.expect_list_changed(PATIENCE).await, 100);
    slow.assert_quiet(QUIET).await;
    assert_eq!(slow.generations, vec![100]);
    assert_eq!(
        live.description("list_orders").await.as_deref(),
        Some("Slow 100.")
    );
}

// ------------------------------------------------------------ stream limits

/// A listen that must be refused because a cap is reached.
async fn assert_refused(client: &reqwest::Client, url: &str, id: Value) {
    let reply = match Listener::try_open(client, url, id.clone(), json!({"toolsListChanged": true}))
        .await
    {
        Ok(_) => panic!("listen {id} was accepted over the cap"),
        Err(reply) => reply,
    };
    assert_eq!(reply.status, 429, "{}", reply.text);
    assert_eq!(reply.header("content-type"), Some("application/json"));
    let body = reply.json();
    assert_eq!(body["id"], id, "{body}");
    assert_eq!(reply.error_code(), -31001, "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("Too many listen streams"),
        "{body}"
    );
    assert_error(MODERN, &body);
}

/// Opens a listen, retrying while the cap is still held by a closed stream.
async fn open_when_freed(client: &reqwest::Client, url: &str, id: Value) -> Listener {
    let deadline = Instant::now() + PATIENCE;
    loop {
        match Listener::try_open(client, url, id.clone(), json!({"toolsListChanged": true})).await {
            Ok(mut listener) => {
                listener.expect_ack().await;
                return listener;
            }
            Err(reply) => {
                assert_eq!(reply.status, 429, "{}", reply.text);
                assert!(
                    Instant::now() < deadline,
                    "the closed stream's slot was never freed"
                );
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
    }
}

fn client_from(address: &str) -> reqwest::Client {
    reqwest::Client::builder()
        .local_address(address.parse::<std::net::IpAddr>().unwrap())
        .build()
        .unwrap()
}

#[tokio::test]
async fn the_per_caller_cap_and_closing_a_stream_frees_its_slot() {
    let live = Live::start(&[("orders.yaml", orders_yaml("Capped."))], |s| {
        s.max_streams_per_caller = 1;
    })
    .await;
    let (url, streams) = (&live.gw.url, &live.gw.gateway.streams);
    let first = live.listen(json!("first")).await;
    assert_eq!(streams.count(), 1);
    assert_eq!(live.gw.status().await["listenStreams"], 1);
    assert_refused(&live.gw.client, url, json!("second")).await;

    // Another caller (another peer address) has a slot of its own.
    let other = client_from("127.0.0.2");
    let mut elsewhere = Listener::open(&other, url, json!("elsewhere")).await;
    assert_refused(&other, url, json!(5)).await;
    assert_eq!(streams.count(), 2);

    // Closing the first stream frees its slot.
    drop(first);
    let streams_now = streams.clone();
    eventually("the closed stream's slot is released", || {
        streams_now.count() == 1
    })
    .await;
    let mut again = open_when_freed(&live.gw.client, url, json!("again")).await;
    assert_refused(&live.gw.client, url, json!("third")).await;
    // Each refusal counted by its status (and any open_when_freed met).
    let text = live.gw.metrics().await;
    let refused = metric(&text, "sezzlee_http_responses_total{status=\"429\"}");
    assert!(refused.is_some_and(|n| n >= 3.0), "{text}");

    // Both open streams still work.
    write(&live.path("orders.yaml"), &orders_yaml("Capped, edited."));
    assert_eq!(again.expect_list_changed(PATIENCE).await, 1);
    assert_eq!(elsewhere.expect_list_changed(PATIENCE).await, 1);
}

#[tokio::test]
async fn the_global_cap_and_closing_a_stream_frees_its_slot() {
    let live = Live::start(&[("orders.yaml", orders_yaml("Capped."))], |s| {
        s.max_streams = 2;
    })
    .await;
    let url = &live.gw.url;
    let first = live.listen(json!(1)).await;
    let other = client_from("127.0.0.3");
    let mut second = Listener::open(&other, url, json!(2)).await;
    assert_refused(&live.gw.client, url, json!(3)).await;
    assert_refused(&client_from("127.0.0.4"), url, json!(4)).await;

    drop(first);
    let mut third = open_when_freed(&live.gw.client, url, json!(3)).await;
    assert_eq!(live.gw.gateway.streams.count(), 2);
    assert_refused(&other, url, json!(5)).await;

    write(&live.path("orders.yaml"), &orders_yaml("Capped, edited."));
    assert_eq!(second.expect_list_changed(PATIENCE).await, 1);
    assert_eq!(third.expect_list_changed(PATIENCE).await, 1);
}

// ------------------------------------------------------------ shutdown

#[tokio::test]
async fn shutdown_closes_every_stream_with_the_graceful_result() {
    let live = Live::start(&[("orders.yaml", orders_yaml("Closing."))], |_| {}).await;
    let mut by_string = live.listen(json!("closing")).await;
    let mut by_number = live.listen(json!(7)).await;
    write(&live.path("orders.yaml"), &orders_yaml("Closing, edited."));
    assert_eq!(by_string.expect_list_changed(PATIENCE).await, 1);
    assert_eq!(by_number.expect_list_changed(PATIENCE).await, 1);
    assert_eq!(live.gw.gateway.streams.count(), 2);

    live.gw.gateway.begin_shutdown();
    for listener in [&mut by_string, &mut by_number] {
        listener.expect_closure().await;
        listener.expect_end(PATIENCE).await;
    }
    let streams = live.gw.gateway.streams.clone();
    eventually("closed streams release their slots", || {
        streams.count() == 0
    })
    .await;
}

// ------------------------------------------------------------ the real binary: SIGHUP, SIGTERM

/// A `sezzlee serve` child process, killed if the test fails.
struct ServeProcess {
    child: std::process::Child,
    lines: std::sync::mpsc::Receiver<String>,
}

impl Drop for ServeProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[cfg(unix)]
fn signal(pid: u32, name: &str) {
    let status = std::process::Command::new("kill")
        .arg(format!("-{name}"))
        .arg(pid.to_string())
        .status()
        .expect("run kill");
    assert!(status.success(), "kill -{name} {pid}");
}

/// Starts the binary on `dir` with `--watch off`; returns it and its base URL.
fn serve_binary(dir: &Path) -> (ServeProcess, String) {
    serve_binary_with(dir, &[])
}

/// [`serve_binary`] with more arguments.
fn serve_binary_with(dir: &Path, more: &[&str]) -> (ServeProcess, String) {
    let mut command = sezzlee_binary(None);
    command
        .arg("serve")
        .arg("--catalogs")
        .arg(dir)
        .args(["--listen", "127.0.0.1:0", "--watch", "off"])
        .args(["--log-format", "json", "--demo-backend", "false"])
        .args(more)
        .current_dir(dir)
        .env("RUST_LOG", "info")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped());
    let mut child = command.spawn().expect("start sezzlee serve");
    let stderr = child.stderr.take().unwrap();
    let (sender, lines) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stderr).lines() {
            let Ok(line) = line else { break };
            let _ = sender.send(line);
        }
    });
    let served = ServeProcess { child, lines };
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        let line = served
            .lines
            .recv_timeout(left)
            .expect("sezzlee serve logs its address");
        let Ok(log) = serde_json::from_str::<Value>(&line) else {
            continue;
        };
        let message = log["fields"]["message"].as_str().unwrap_or_default();
        if let Some(rest) = message.strip_prefix("sezzlee listening on ") {
            let base = rest.trim_end_matches("/mcp").to_string();
            return (served, base);
        }
    }
}

#[cfg(unix)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sighup_forces_a_rescan_and_sigterm_closes_streams_gracefully() {
    let folder = tempfile::tempdir().unwrap();
    write(&folder.path().join("orders.yaml"), &orders_yaml("Hang up."));
    let (mut served, base) = serve_binary(folder.path());
    let pid = served.child.id();
    // A SIGHUP as soon as the server says it listens: it must not kill it
    // (and, nothing having changed, it bumps nothing).
    signal(pid, "HUP");

    let client = reqwest::Client::new();
    let url = format!("{base}/mcp");
    let status = || async {
        let reply = client.get(format!("{base}/status")).send().await.unwrap();
        reply.json::<Value>().await.unwrap()
    };
    let mut listener = Listener::open(&client, &url, json!("hup")).await;
    listener.assert_quiet(QUIET).await;
    assert!(
        served.child.try_wait().unwrap().is_none(),
        "SIGHUP did not kill the server"
    );
    assert_eq!(status().await["generation"], 0);

    // Watching is off: an edit alone changes nothing.
    write(&folder.path().join("orders.yaml"), &orders_yaml("Hung up."));
    listener.assert_quiet(QUIET).await;
    assert_eq!(status().await["generation"], 0);

    signal(pid, "HUP");
    assert_eq!(listener.expect_list_changed(PATIENCE).await, 1);
    listener.assert_quiet(QUIET).await;
    assert_eq!(status().await["generation"], 1);
    let body = modern_request(
        1,
        "tools/call",
        json!({"name": "load_tool", "arguments": {"name": "list_orders"}}),
    );
    let mut request = client
        .post(&url)
        .json(&body)
        .header("accept", "application/json, text/event-stream");
    for (name, value) in modern_headers(&body) {
        request = request.header(name, value);
    }
    let answer: Value = request.send().await.unwrap().json().await.unwrap();
    let definition = tool_reply(&answer["result"]).payload;
    assert_eq!(definition["description"], "Hung up.");

    // SIGHUP with nothing changed: no bump.
    signal(pid, "HUP");
    listener.assert_quiet(QUIET).await;
    assert_eq!(status().await["generation"], 1);

    // SIGTERM: the stream gets the graceful result, ends, the process exits 0.
    signal(pid, "TERM");
    listener.expect_closure().await;
    listener.expect_end(PATIENCE).await;
    let deadline = Instant::now() + PATIENCE;
    let exit = loop {
        if let Some(exit) = served.child.try_wait().unwrap() {
            break exit;
        }
        assert!(
            Instant::now() < deadline,
            "sezzlee serve did not exit on SIGTERM"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert!(exit.success(), "{exit}");
}

/// One HTTP/1.1 request on a connection the test holds: the status code,
/// the lower-cased headers and the body (the gateway sends a length).
async fn exchange(
    stream: &mut tokio::net::TcpStream,
    path: &str,
) -> std::io::Result<(u16, Vec<(String, String)>, String)> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let request = format!("GET {path} HTTP/1.1\r\nhost: gateway\r\n\r\n");
    stream.write_all(request.as_bytes()).await?;
    let mut bytes = Vec::new();
    let mut chunk = [0u8; 4096];
    let head_end = loop {
        if let Some(at) = bytes.windows(4).position(|w| w == b"\r\n\r\n") {
            break at + 4;
        }
        let read = stream.read(&mut chunk).await?;
        if read == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        bytes.extend_from_slice(&chunk[..read]);
    };
    let head = String::from_utf8_lossy(&bytes[..head_end]).to_string();
    let mut lines = head.split("\r\n");
    let status = lines
        .next()
        .unwrap_or_default()
        .split(' ')
        .nth(1)
        .unwrap_or_default();
    let headers: Vec<(String, String)> = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(name, value)| (name.trim().to_ascii_lowercase(), value.trim().to_string()))
        .collect();
    let length: usize = headers
        .iter()
        .find(|(name, _)| name == "content-length")
        .and_then(|(_, value)| value.parse().ok())
        .unwrap_or(0);
    while bytes.len() < head_end + length {
        let read = stream.read(&mut chunk).await?;
        if read == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        bytes.extend_from_slice(&chunk[..read]);
    }
    let body = String::from_utf8_lossy(&bytes[head_end..head_end + length]).to_string();
    Ok((status.parse().unwrap_or(0), headers, body))
}

fn closes(headers: &[(String, String)]) -> bool {
    headers
        .iter()
        .any(|(name, value)| name == "connection" && value.eq_ignore_ascii_case("close"))
}

/// Waits for the child to exit; its status and when.
async fn exited(
    served: &mut ServeProcess,
    within: Duration,
) -> (std::process::ExitStatus, Instant) {
    let deadline = Instant::now() + within;
    loop {
        if let Some(exit) = served.child.try_wait().unwrap() {
            return (exit, Instant::now());
        }
        assert!(Instant::now() < deadline, "sezzlee serve did not exit");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// SIGTERM starts a drain (README "Settings", `shutdown_drain_ms`): for its
/// length the gateway still accepts and serves, keep-alive as usual, and
/// `/readyz` says 503; a keep-alive connection idle at the signal is still
/// served (closing it at once loses the request a proxy sends on it at
/// that instant, the LOST AT SIGTERM of `rolling_update.rs`). Then new
/// connections are refused, every answer closes its connection, and the
/// process exits 0 once its connections are closed.
#[cfg(unix)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_drains_before_anything_is_closed() {
    let drain = Duration::from_millis(3000);
    let folder = tempfile::tempdir().unwrap();
    write(&folder.path().join("orders.yaml"), &orders_yaml("Drain."));
    let (mut served, base) = serve_binary_with(
        folder.path(),
        &["--shutdown-drain-ms", &drain.as_millis().to_string()],
    );
    let address = base.trim_start_matches("http://").to_string();
    let connect = || tokio::net::TcpStream::connect(address.clone());

    // A keep-alive connection, used once and then idle at the signal.
    let mut idle = connect().await.unwrap();
    let (status, headers, _) = exchange(&mut idle, "/readyz").await.unwrap();
    assert_eq!(status, 200);
    assert!(!closes(&headers), "{headers:?}");

    signal(served.child.id(), "TERM");
    let signalled = Instant::now();
    // Draining: new connections are still accepted and kept alive;
    // readiness turns 503 as soon as the signal is handled (asynchronously:
    // a loaded machine may answer one more 200 first, on the same
    // keep-alive connection).
    let mut fresh = connect().await.unwrap();
    loop {
        let (status, headers, body) = exchange(&mut fresh, "/readyz").await.unwrap();
        assert!(!closes(&headers), "{headers:?}");
        if status == 503 {
            break;
        }
        assert_eq!(status, 200, "{body}");
        assert!(
            signalled.elapsed() < drain,
            "readiness never turned 503 during the drain"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // The connection idle at the signal is served.
    let (status, headers, body) = exchange(&mut idle, "/healthz").await.unwrap();
    assert_eq!(status, 200, "{body}");
    assert!(!closes(&headers), "{headers:?}");
    assert!(
        signalled.elapsed() < drain,
        "too slow to tell the drain: {:?}",
        signalled.elapsed()
    );

    // After the drain: new connections refused; the open ones are served
    // once more, with Connection: close, and closed.
    tokio::time::sleep_until(signalled + drain + Duration::from_millis(200)).await;
    assert!(connect().await.is_err(), "still accepting after the drain");
    assert!(
        served.child.try_wait().unwrap().is_none(),
        "exited with connections open"
    );
    let (status, headers, body) = exchange(&mut idle, "/healthz").await.unwrap();
    assert_eq!(status, 200, "{body}");
    assert!(closes(&headers), "{headers:?}");
    let after = exchange(&mut idle, "/healthz").await;
    assert!(after.is_err(), "served after Connection: close: {after:?}");

    // The client closes its last connection: the process exits 0.
    drop(fresh);
    let (exit, _) = exited(&mut served, PATIENCE).await;
    assert!(exit.success(), "{exit}");
}

/// A second signal ends the drain at once (an operator's second Ctrl-C).
#[cfg(unix)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_signal_ends_the_drain() {
    let folder = tempfile::tempdir().unwrap();
    write(&folder.path().join("orders.yaml"), &orders_yaml("Twice."));
    let (mut served, base) = serve_binary_with(folder.path(), &["--shutdown-drain-ms", "60000"]);
    let address = base.trim_start_matches("http://").to_string();
    signal(served.child.id(), "TERM");
    // Draining: still served, not ready.
    let deadline = Instant::now() + PATIENCE;
    loop {
        let mut stream = tokio::net::TcpStream::connect(address.clone())
            .await
            .unwrap();
        let (status, _, _) = exchange(&mut stream, "/readyz").await.unwrap();
        if status == 503 {
            break;
        }
        assert!(Instant::now() < deadline, "readyz never said 503");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    signal(served.child.id(), "INT");
    let (exit, _) = exited(&mut served, PATIENCE).await;
    assert!(exit.success(), "{exit}");
}

/// A rescan reads every file, and inotify reports reads as events: woken
/// by its own reads, the watcher rescanned every debounce, forever, after
/// the first edit (a large folder's files all hashed again 20 times a
/// second). One edit is one rescan, then the folder is quiet; the reload
/// history counts them.
#[tokio::test]
async fn the_watcher_is_not_woken_by_the_gateway_reading_its_own_files() {
    let live = Live::start(&[("orders.yaml", orders_yaml("Lists orders."))], |_| {}).await;
    let rescans = || live.gw.gateway.reloads.newest_first().len();
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(
        rescans(),
        1,
        "only the start: {:?}",
        live.gw.gateway.reloads.newest_first()
    );
    let mut listener = live.listen(json!(1)).await;
    write(
        &live.path("orders.yaml"),
        &orders_yaml("Lists the orders, newest first."),
    );
    live.expect_bump(&mut listener, 1).await;
    // Twenty debounces of quiet: at most the edit's own events again.
    tokio::time::sleep(DEBOUNCE * 20).await;
    let history = live.gw.gateway.reloads.newest_first();
    assert!(
        history.len() <= 3,
        "one edit, {} rescans: {:?}",
        history.len() - 1,
        history
            .iter()
            .map(|r| (r.trigger.as_str(), r.result))
            .collect::<Vec<_>>()
    );
    // Reading the files (as a rescan, a backup or an editor does) wakes
    // nothing.
    for _ in 0..5 {
        let _ = std::fs::read(live.path("orders.yaml")).unwrap();
    }
    let before = live.gw.gateway.reloads.newest_first().len();
    tokio::time::sleep(DEBOUNCE * 10).await;
    assert_eq!(
        live.gw.gateway.reloads.newest_first().len(),
        before,
        "reads woke the watcher"
    );
}
