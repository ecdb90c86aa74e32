//! Shared helpers for tests that talk to a real gateway over HTTP.
//!
//! [`TestGateway::start`] serves a catalogs folder on `127.0.0.1:0` in the
//! test's own tokio runtime (through `sezzlee_gateway::server::serve`, exactly as
//! `sezzlee serve` does); the request helpers send well-formed messages of
//! either protocol era (the 2026-07-28 request itself is built by
//! `mcp_request.rs`, shared with the benches, and re-exported here), and
//! [`assert_valid`] checks a message against the official JSON schema of
//! the MCP revision it belongs to.
//!
//! Each test binary uses a different subset of these helpers.
#![allow(dead_code)]

use reqwest::header::HeaderMap;
use serde_json::{Value, json};
use sezzlee_gateway::environment::Environment;
use sezzlee_gateway::gateway::Gateway;
pub use sezzlee_gateway::settings::DemoBackend;
use sezzlee_gateway::settings::{Settings, WatchMode};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use tempfile::TempDir;

/// The stateless revision and a correct request of it, shared with the
/// benches (`mcp_request.rs`).
pub use crate::mcp_request::{MODERN, Post, modern_headers, modern_request};
/// The `initialize`-era revisions, newest first.
pub const LEGACY: [&str; 3] = ["2025-11-25", "2025-06-18", "2025-03-26"];

/// The official MCP schemas, vendored (tests/fixtures/mcp-schema/README.md).
const SCHEMA_DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/mcp-schema");

/// The `sezzlee` binary of this build, as the tests run it: without the
/// `SEZZLEE_*` variables of the environment the tests run in (a
/// developer's own settings never leak into a test), except those whose
/// names start with `keep` (variables a test sets for itself).
pub fn sezzlee_binary(keep: Option<&str>) -> std::process::Command {
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_sezzlee"));
    for (name, _) in std::env::vars_os() {
        let text = name.to_string_lossy();
        if text.starts_with("SEZZLEE_") && !keep.is_some_and(|keep| text.starts_with(keep)) {
            command.env_remove(&name);
        }
    }
    command
}

/// Waits for a `sezzlee serve` child (stderr piped) to log where it
/// listens: its endpoint URL (`http://…/mcp`), and every line it logs,
/// kept as they come. Fails if the child exits first or says nothing
/// within 30 s.
pub fn listening_url(child: &mut std::process::Child) -> (String, Arc<Mutex<String>>) {
    use std::io::{BufRead, BufReader};
    use std::time::{Duration, Instant};
    let stderr = child.stderr.take().expect("stderr piped");
    let logs = Arc::new(Mutex::new(String::new()));
    let (sender, receiver) = std::sync::mpsc::channel();
    let sink = logs.clone();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if let Some(at) = line.find("listening on http://") {
                let url: String = line[at + "listening on ".len()..]
                    .chars()
                    .take_while(|c| !c.is_whitespace() && *c != '\x1b')
                    .collect();
                let _ = sender.send(url);
            }
            let mut logs = sink.lock().unwrap();
            logs.push_str(&line);
            logs.push('\n');
        }
    });
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Ok(url) = receiver.recv_timeout(Duration::from_millis(50)) {
            return (url, logs);
        }
        if let Some(status) = child.try_wait().unwrap() {
            panic!("sezzlee serve exited ({status}): {}", logs.lock().unwrap());
        }
        assert!(Instant::now() < deadline, "sezzlee serve did not start");
    }
}

/// The demo catalog shipped in `catalogs/`.
pub fn shipped_catalogs() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("catalogs")
}

/// A temporary folder holding a copy of the shipped catalogs, for tests
/// that edit them.
pub fn copy_of_shipped_catalogs() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temporary catalogs folder");
    for entry in std::fs::read_dir(shipped_catalogs()).expect("catalogs/ is readable") {
        let path = entry.expect("a catalogs/ entry").path();
        let name = path.file_name().expect("a file name");
        std::fs::copy(&path, dir.path().join(name)).expect("copy a shipped catalog file");
    }
    dir
}

/// A gateway serving on an ephemeral port for the duration of one test.
pub struct TestGateway {
    /// `http://127.0.0.1:PORT`
    pub base: String,
    /// The MCP endpoint URL.
    pub url: String,
    pub client: reqwest::Client,
    pub gateway: Arc<Gateway>,
    /// The header (name, value) [`TestGateway::status`] and
    /// [`TestGateway::metrics`] send: the admin credential of a gateway
    /// with `[auth]`, which answers them only to the admin scope.
    pub admin: Option<(String, String)>,
    /// Keeps a generated catalogs folder alive.
    _dir: Option<TempDir>,
}

/// One HTTP answer.
#[derive(Debug)]
pub struct Reply {
    pub status: u16,
    pub headers: HeaderMap,
    pub text: String,
}

impl Reply {
    /// The body as JSON; panics (with the body) when it is not.
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.text).unwrap_or_else(|err| {
            panic!(
                "status {}: body is not JSON ({err}): {:?}",
                self.status, self.text
            )
        })
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    /// The JSON-RPC error code, panicking when the body is not an error.
    pub fn error_code(&self) -> i64 {
        let body = self.json();
        assert!(
            body.get("result").is_none(),
            "an error response carries no result: {body}"
        );
        body["error"]["code"]
            .as_i64()
            .unwrap_or_else(|| panic!("not a JSON-RPC error: {body}"))
    }
}

/// The variables the tests' in-process gateways read (their
/// `Settings::environment`): a test module sets its secrets here before it
/// starts a gateway. The process environment is never changed: other
/// tests' threads read it meanwhile, and changing it under them is
/// undefined behaviour. Names are unique per module (their prefixes), so
/// one module's variables never stand for another's.
static TEST_VARIABLES: Mutex<Vec<(String, String)>> = Mutex::new(Vec::new());

/// Sets `name` to `value` for every test gateway started after.
pub fn set_test_variable(name: &str, value: &str) {
    let mut variables = TEST_VARIABLES.lock().unwrap_or_else(|e| e.into_inner());
    variables.retain(|(known, _)| known != name);
    variables.push((name.to_string(), value.to_string()));
}

/// The variables set so far, as a gateway's environment.
pub fn test_environment() -> Environment {
    let variables = TEST_VARIABLES.lock().unwrap_or_else(|e| e.into_inner());
    Environment::fixed(variables.iter().cloned())
}

/// Settings for a test gateway on `catalogs`: no watcher, no demo backend,
/// the test variables for an environment.
pub fn test_settings(catalogs: &Path) -> Settings {
    Settings {
        catalogs: catalogs.to_path_buf(),
        environment: test_environment(),
        listen: "127.0.0.1:0".parse().unwrap(),
        watch: WatchMode::Off,
        demo_backend: DemoBackend::Off,
        // Tests name their own vector cache; none writes under $HOME.
        vector_cache: None,
        ..Settings::default()
    }
}

impl TestGateway {
    /// Serves `catalogs` with the test settings adjusted by `configure`.
    pub async fn start(catalogs: &Path, configure: impl FnOnce(&mut Settings)) -> TestGateway {
        let mut settings = test_settings(catalogs);
        configure(&mut settings);
        Self::start_with(settings, None).await
    }

    /// Serves the shipped demo catalog with default test settings.
    pub async fn shipped() -> TestGateway {
        Self::start(&shipped_catalogs(), |_| {}).await
    }

    /// Writes `files` (relative path → content) into a fresh temporary
    /// catalogs folder and serves it.
    pub async fn with_files(
        files: &[(&str, String)],
        configure: impl FnOnce(&mut Settings),
    ) -> TestGateway {
        let dir = tempfile::tempdir().expect("temporary catalogs folder");
        for (name, content) in files {
            let path = dir.path().join(name);
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent).unwrap();
            }
            std::fs::write(&path, content).unwrap();
        }
        let mut settings = test_settings(dir.path());
        configure(&mut settings);
        Self::start_with(settings, Some(dir)).await
    }

    /// Serves a gateway built with `Gateway::load(settings)`.
    pub async fn start_with(settings: Settings, dir: Option<TempDir>) -> TestGateway {
        let (gateway, _sources) = Gateway::load(settings).expect("catalogs folder readable");
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        let endpoint = gateway.settings.endpoint.clone();
        tokio::spawn(sezzlee_gateway::server::serve(gateway.clone(), listener));
        let base = format!("http://{address}");
        TestGateway {
            url: format!("{base}{endpoint}"),
            base,
            client: reqwest::Client::builder()
                .redirect(reqwest::redirect::Policy::none())
                .build()
                .unwrap(),
            gateway,
            admin: None,
            _dir: dir,
        }
    }

    /// POSTs raw bytes to the endpoint with `headers` (and nothing else
    /// but what reqwest adds: Host, Content-Length, Accept: */* when unset).
    pub async fn post_raw(
        &self,
        body: impl Into<reqwest::Body>,
        headers: &[(&str, &str)],
    ) -> Reply {
        let mut request = self.client.post(&self.url).body(body);
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        into_reply(request.send().await.expect("request sent")).await
    }

    /// POSTs a JSON value with the JSON content type, the Accept header a
    /// Streamable HTTP client sends, and `headers`.
    pub async fn post_json(&self, body: &Value, headers: &[(&str, &str)]) -> Reply {
        let mut all = vec![
            ("content-type", "application/json"),
            ("accept", "application/json, text/event-stream"),
        ];
        all.extend_from_slice(headers);
        self.post_raw(serde_json::to_vec(body).unwrap(), &all).await
    }

    /// Any HTTP method on the endpoint, no body.
    pub async fn request(&self, method: reqwest::Method) -> Reply {
        let response = self
            .client
            .request(method, &self.url)
            .header("accept", "application/json, text/event-stream")
            .send()
            .await
            .expect("request sent");
        into_reply(response).await
    }

    /// A 2026-07-28 request with the `_meta` and the headers a correct
    /// client sends (`Mcp-Name` for `tools/call`).
    pub async fn modern(&self, method: &str, params: Value) -> Reply {
        let body = modern_request(1, method, params);
        let headers = modern_headers(&body);
        let refs: Vec<(&str, &str)> = headers.iter().map(|(n, v)| (*n, v.as_str())).collect();
        self.post_json(&body, &refs).await
    }

    /// A modern request after `edit` has changed its body or headers (to
    /// send what a broken client would).
    pub async fn modern_custom(
        &self,
        method: &str,
        params: Value,
        edit: impl FnOnce(&mut Value, &mut Vec<(&'static str, String)>),
    ) -> Reply {
        let mut body = modern_request(1, method, params);
        let mut headers = modern_headers(&body);
        edit(&mut body, &mut headers);
        let refs: Vec<(&str, &str)> = headers.iter().map(|(n, v)| (*n, v.as_str())).collect();
        self.post_json(&body, &refs).await
    }

    /// A modern request whose result must validate as `result_def`:
    /// returns the result.
    pub async fn modern_ok(&self, method: &str, params: Value, result_def: &str) -> Value {
        let reply = self.modern(method, params).await;
        assert_eq!(reply.status, 200, "{method}: {}", reply.text);
        assert_eq!(reply.header("content-type"), Some("application/json"));
        let body = reply.json();
        assert_result(MODERN, result_def, &body);
        let result = &body["result"];
        assert_eq!(result["resultType"], "complete", "{method}: {result}");
        assert_eq!(
            result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"], "sezzlee",
            "{method}: {result}"
        );
        result.clone()
    }

    /// A legacy request at `version` (sent in `MCP-Protocol-Version` except
    /// for 2025-03-26, which predates the header).
    pub async fn legacy(&self, version: &str, method: &str, params: Value) -> Reply {
        let body = legacy_request(1, method, params);
        let headers = legacy_headers(version);
        let reply = self.post_json(&body, &headers).await;
        assert!(
            reply.header("mcp-session-id").is_none(),
            "no session is minted: {:?}",
            reply.headers
        );
        reply
    }

    /// A legacy request whose result must validate as `result_def` of
    /// `version`'s schema: returns the result.
    pub async fn legacy_ok(
        &self,
        version: &str,
        method: &str,
        params: Value,
        result_def: &str,
    ) -> Value {
        let reply = self.legacy(version, method, params).await;
        assert_eq!(reply.status, 200, "{method}@{version}: {}", reply.text);
        assert_eq!(reply.header("content-type"), Some("application/json"));
        let body = reply.json();
        assert_result(version, result_def, &body);
        body["result"].clone()
    }

    /// `tools/call` in the era of `version`: the payload (the JSON in the
    /// single text block) and whether `isError` was set.
    pub async fn call_tool(&self, version: &str, name: &str, arguments: Value) -> ToolReply {
        let params = json!({"name": name, "arguments": arguments});
        let result = if version == MODERN {
            self.modern_ok("tools/call", params, "CallToolResult").await
        } else {
            self.legacy_ok(version, "tools/call", params, "CallToolResult")
                .await
        };
        tool_reply(&result)
    }

    /// `tools/call` at 2026-07-28.
    pub async fn tool(&self, name: &str, arguments: Value) -> ToolReply {
        self.call_tool(MODERN, name, arguments).await
    }

    /// A successful tool answer's payload (panics on `isError`).
    pub async fn tool_ok(&self, name: &str, arguments: Value) -> Value {
        let reply = self.tool(name, arguments.clone()).await;
        assert!(
            !reply.is_error,
            "{name}({arguments}) failed: {}",
            reply.payload
        );
        reply.payload
    }

    /// A failed tool answer's payload (panics on success); checks the
    /// envelope's shape.
    pub async fn tool_err(&self, name: &str, arguments: Value) -> Value {
        let reply = self.tool(name, arguments.clone()).await;
        assert!(
            reply.is_error,
            "{name}({arguments}) succeeded: {}",
            reply.payload
        );
        assert_envelope(&reply.payload);
        reply.payload
    }

    /// search_tools at 2026-07-28, successful.
    pub async fn search(&self, arguments: Value) -> Value {
        self.tool_ok("search_tools", arguments).await
    }
}

/// A tool's answer unwrapped from its `CallToolResult`.
#[derive(Debug, Clone)]
pub struct ToolReply {
    pub payload: Value,
    pub is_error: bool,
}

/// Unwraps a `CallToolResult`: exactly one text block holding JSON, no
/// `structuredContent`, `isError` true or absent (never false).
pub fn tool_reply(result: &Value) -> ToolReply {
    assert!(
        result.get("structuredContent").is_none(),
        "never structuredContent: {result}"
    );
    let content = result["content"]
        .as_array()
        .unwrap_or_else(|| panic!("content is an array: {result}"));
    assert_eq!(content.len(), 1, "exactly one content block: {result}");
    assert_eq!(content[0]["type"], "text", "{result}");
    let text = content[0]["text"].as_str().expect("text block");
    let payload: Value = serde_json::from_str(text)
        .unwrap_or_else(|err| panic!("the text block holds JSON ({err}): {text}"));
    let is_error = match result.get("isError") {
        None => false,
        Some(Value::Bool(true)) => true,
        Some(other) => panic!("isError is true or absent, never {other}"),
    };
    ToolReply { payload, is_error }
}

/// The failure envelope: `error`, `message` (non-empty) and `retryable`.
pub fn assert_envelope(payload: &Value) {
    assert!(
        payload["error"].as_str().is_some_and(|c| !c.is_empty()),
        "{payload}"
    );
    assert!(
        payload["message"].as_str().is_some_and(|m| !m.is_empty()),
        "{payload}"
    );
    assert!(payload["retryable"].is_boolean(), "{payload}");
}

/// The names of a search answer's results, in order.
pub fn names(search: &Value) -> Vec<String> {
    search["results"]
        .as_array()
        .unwrap_or_else(|| panic!("results is an array: {search}"))
        .iter()
        .map(|r| r["name"].as_str().expect("result name").to_string())
        .collect()
}

/// A JSON-RPC request of the `initialize` era.
pub fn legacy_request(id: i64, method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

/// An `initialize` request at `version`.
pub fn initialize_params(version: &str) -> Value {
    json!({
        "protocolVersion": version,
        "capabilities": {},
        "clientInfo": {"name": "sezzlee-tests", "version": "0.0.0"}
    })
}

/// The headers a legacy client sends after `initialize`.
pub fn legacy_headers(version: &str) -> Vec<(&'static str, &str)> {
    if version == "2025-03-26" {
        Vec::new()
    } else {
        vec![("mcp-protocol-version", version)]
    }
}

/// Base64 sentinel form of a header value: `=?base64?…?=`.
pub fn sentinel(value: &str) -> String {
    use base64::Engine;
    format!(
        "=?base64?{}?=",
        base64::engine::general_purpose::STANDARD.encode(value)
    )
}

async fn into_reply(response: reqwest::Response) -> Reply {
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    let text = response.text().await.expect("response body");
    Reply {
        status,
        headers,
        text,
    }
}

// ------------------------------------------------------------ schemas

/// The official schema of one MCP revision, parsed once.
fn schema_document(version: &str) -> Arc<Value> {
    static DOCUMENTS: OnceLock<Mutex<HashMap<String, Arc<Value>>>> = OnceLock::new();
    let documents = DOCUMENTS.get_or_init(Default::default);
    let mut documents = documents.lock().unwrap();
    documents
        .entry(version.to_string())
        .or_insert_with(|| {
            let path = Path::new(SCHEMA_DIR).join(version).join("schema.json");
            let text = std::fs::read_to_string(&path)
                .unwrap_or_else(|err| panic!("cannot read {}: {err}", path.display()));
            Arc::new(serde_json::from_str(&text).expect("schema is JSON"))
        })
        .clone()
}

/// Where a revision keeps its definitions: `$defs` (2020-12) or
/// `definitions` (draft-07, before 2025-11-25).
fn definitions_key(document: &Value) -> &'static str {
    if document.get("$defs").is_some() {
        "$defs"
    } else {
        "definitions"
    }
}

/// Whether `version`'s schema defines `def`.
pub fn has_def(version: &str, def: &str) -> bool {
    let document = schema_document(version);
    document[definitions_key(&document)].get(def).is_some()
}

/// A validator for definition `def` of `version`'s schema: the schema
/// document itself with `$ref: #/$defs/DEF` at its root, so the internal
/// `$ref`s of every definition resolve against the document.
fn validator(version: &str, def: &str) -> Arc<jsonschema::Validator> {
    type Cache = Mutex<HashMap<(String, String), Arc<jsonschema::Validator>>>;
    static VALIDATORS: OnceLock<Cache> = OnceLock::new();
    let key = (version.to_string(), def.to_string());
    if let Some(found) = VALIDATORS
        .get_or_init(Default::default)
        .lock()
        .unwrap()
        .get(&key)
    {
        return found.clone();
    }
    let document = schema_document(version);
    let defs = definitions_key(&document);
    assert!(
        document[defs].get(def).is_some(),
        "the {version} schema has no definition {def}"
    );
    let mut root = (*document).clone();
    root.as_object_mut()
        .unwrap()
        .insert("$ref".to_string(), json!(format!("#/{defs}/{def}")));
    let compiled = Arc::new(
        jsonschema::validator_for(&root)
            .unwrap_or_else(|err| panic!("the {version} schema does not compile: {err}")),
    );
    VALIDATORS
        .get()
        .unwrap()
        .lock()
        .unwrap()
        .insert(key, compiled.clone());
    compiled
}

/// The schema errors of `instance` against `def` of `version` (empty when
/// valid).
pub fn schema_errors(version: &str, def: &str, instance: &Value) -> Vec<String> {
    validator(version, def)
        .iter_errors(instance)
        .map(|err| format!("{} at '{}'", err, err.instance_path()))
        .collect()
}

/// Panics with every error when `instance` is not a valid `def` of
/// `version`.
pub fn assert_valid(version: &str, def: &str, instance: &Value) {
    let errors = schema_errors(version, def, instance);
    assert!(
        errors.is_empty(),
        "not a valid {def} of MCP {version}:\n  {}\ninstance: {instance}",
        errors.join("\n  ")
    );
}

/// A successful JSON-RPC response of `version` whose result is a valid
/// `result_def` (validated through the `…ResultResponse` definition when
/// the revision has one, so the response as a whole is checked too).
pub fn assert_result(version: &str, result_def: &str, body: &Value) {
    assert!(
        body.get("error").is_none(),
        "a result response carries no error: {body}"
    );
    let response_def = format!("{result_def}Response");
    if has_def(version, &response_def) {
        assert_valid(version, &response_def, body);
    }
    let envelope = if has_def(version, "JSONRPCResultResponse") {
        "JSONRPCResultResponse"
    } else {
        "JSONRPCResponse"
    };
    assert_valid(version, envelope, body);
    assert_valid(version, result_def, &body["result"]);
}

/// A JSON-RPC error response of `version` (and, for 2026-07-28, the
/// specific error definition when one is named).
pub fn assert_error(version: &str, body: &Value) {
    assert!(
        body.get("result").is_none(),
        "an error response carries no result: {body}"
    );
    let envelope = if has_def(version, "JSONRPCErrorResponse") {
        "JSONRPCErrorResponse"
    } else {
        "JSONRPCError"
    };
    assert_valid(version, envelope, body);
    let specific = match body["error"]["code"].as_i64() {
        Some(-32020) => Some(("HeaderMismatchError", false)),
        Some(-32022) => Some(("UnsupportedProtocolVersionError", false)),
        Some(-32700) => Some(("ParseError", true)),
        Some(-32600) => Some(("InvalidRequestError", true)),
        Some(-32601) => Some(("MethodNotFoundError", true)),
        Some(-32602) => Some(("InvalidParamsError", true)),
        _ => None,
    };
    if let Some((def, error_object)) = specific
        && has_def(version, def)
    {
        let instance = if error_object { &body["error"] } else { body };
        assert_valid(version, def, instance);
    }
}

// ------------------------------------------------------------ live reload

impl TestGateway {
    /// Serves `settings` the way `sezzlee serve` does: the catalog loaded
    /// with its sources, the reloader built on them and started per
    /// `settings.watch`. Returns the reloader (for direct rescans) and the
    /// watcher guard, which must live as long as the test watches.
    pub async fn start_reloading(
        settings: Settings,
        dir: Option<TempDir>,
    ) -> (
        TestGateway,
        Arc<sezzlee_gateway::reload::Reloader>,
        Option<notify::RecommendedWatcher>,
    ) {
        let (gateway, sources) = Gateway::load(settings).expect("catalogs folder readable");
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        let endpoint = gateway.settings.endpoint.clone();
        let reloader = sezzlee_gateway::reload::Reloader::new(gateway.clone(), sources);
        let watcher = sezzlee_gateway::reload::start(reloader.clone());
        tokio::spawn(sezzlee_gateway::server::serve(gateway.clone(), listener));
        let base = format!("http://{address}");
        let server = TestGateway {
            url: format!("{base}{endpoint}"),
            base,
            client: reqwest::Client::builder()
                .redirect(reqwest::redirect::Policy::none())
                .build()
                .unwrap(),
            gateway,
            admin: None,
            _dir: dir,
        };
        (server, reloader, watcher)
    }

    /// `GET path` with `headers`, nothing else.
    pub async fn get(&self, path: &str, headers: &[(&str, &str)]) -> Reply {
        let mut request = self.client.get(format!("{}{path}", self.base));
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        into_reply(request.send().await.expect("request sent")).await
    }

    /// `GET path` with the [`TestGateway::admin`] header, if any.
    async fn get_as_admin(&self, path: &str) -> Reply {
        match &self.admin {
            Some((name, value)) => self.get(path, &[(name, value)]).await,
            None => self.get(path, &[]).await,
        }
    }

    /// `GET /metrics`, the Prometheus text.
    pub async fn metrics(&self) -> String {
        let reply = self.get_as_admin("/metrics").await;
        assert_eq!(reply.status, 200, "{}", reply.text);
        reply.text
    }

    /// `GET /status`, which must answer 200 with JSON.
    pub async fn status(&self) -> Value {
        let reply = self.get_as_admin("/status").await;
        assert_eq!(reply.status, 200, "{}", reply.text);
        reply.json()
    }
}

/// The value of one series (`name{labels}` exactly as written) in the
/// Prometheus text of `/metrics`, if it is there.
pub fn metric(text: &str, series: &str) -> Option<f64> {
    text.lines().find_map(|line| {
        let value = line.strip_prefix(series)?.strip_prefix(' ')?;
        value.parse().ok()
    })
}

/// `_meta` key of a listen stream's subscription id.
pub const SUBSCRIPTION: &str = "io.modelcontextprotocol/subscriptionId";
/// `_meta` key of the catalog generation.
pub const GENERATION: &str = "sezzlee/catalogGeneration";

/// Checks one `notifications/tools/list_changed` of the listen stream
/// `subscription` (its method, subscription id and schema) and appends its
/// generation to `generations`, which must only rise; returns it.
pub fn record_list_changed(
    subscription: &Value,
    message: &Value,
    generations: &mut Vec<u64>,
) -> u64 {
    assert_eq!(
        message["method"], "notifications/tools/list_changed",
        "{message}"
    );
    assert_eq!(
        &message["params"]["_meta"][SUBSCRIPTION], subscription,
        "{message}"
    );
    assert_valid(MODERN, "ToolListChangedNotification", message);
    let generation = message["params"]["_meta"][GENERATION]
        .as_u64()
        .unwrap_or_else(|| panic!("a generation: {message}"));
    if let Some(&last) = generations.last() {
        assert!(
            generation > last,
            "stream {subscription}: generations only rise: {generation} after {generations:?}"
        );
    }
    generations.push(generation);
    generation
}

/// invoke_tool of `tool` with `arguments` at the endpoint `url` (a gateway
/// run as its own process), over the modern era: the tool's payload.
pub async fn invoke_at(url: &str, tool: &str, arguments: Value) -> Value {
    let body = modern_request(
        1,
        "tools/call",
        json!({"name": "invoke_tool", "arguments": {"name": tool, "arguments": arguments}}),
    );
    let response = modern_post(&reqwest::Client::new(), url, &body)
        .send()
        .await
        .expect("the gateway answers");
    assert_eq!(response.status(), 200);
    let body: Value = response.json().await.expect("a JSON answer");
    tool_reply(&body["result"]).payload
}

/// `sezzlee serve` on `catalogs` as the process tests run it: any free
/// loopback port (read it with [`listening_url`]), no watcher, stdout
/// dropped and stderr piped for the logs. Callers add their own flags and
/// environment before spawning.
pub fn serve_command(catalogs: &Path) -> std::process::Command {
    let mut command = sezzlee_binary(None);
    command
        .args([
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--watch",
            "off",
            "--catalogs",
        ])
        .arg(catalogs)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped());
    command
}

/// An HS256 token signed with `secret` for `subject` with `scope`, valid
/// for ten minutes, as `sezzlee token` mints it.
pub fn hs256_token(secret: &str, subject: &str, scope: &str) -> String {
    use jsonwebtoken::{Algorithm, EncodingKey, Header};
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_secs());
    let claims = json!({"sub": subject, "scope": scope, "iat": now, "exp": now + 600});
    let key = EncodingKey::from_secret(secret.as_bytes()).expect("an HS256 key");
    jsonwebtoken::encode(&Header::new(Algorithm::HS256), &claims, &key).expect("an HS256 token")
}

/// A POST of the 2026-07-28 message `body` to `url` with the headers that
/// era asks for (`MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name`), ready to
/// send: a tool call, or a `subscriptions/listen` stream.
pub fn modern_post(client: &reqwest::Client, url: &str, body: &Value) -> reqwest::RequestBuilder {
    Post::of(body).builder(client, url)
}
