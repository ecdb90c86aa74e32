//! A correct MCP 2026-07-28 request, written once for the tests and the
//! benches.
//!
//! Why this exists: a stateless-era request is more than its JSON-RPC
//! body. `params._meta` carries the protocol version, the client's
//! capabilities and its identity, and the headers repeat what the body
//! says (`MCP-Protocol-Version`, `Mcp-Method`, and `Mcp-Name` for
//! `tools/call`); the gateway refuses a request whose headers and body
//! disagree. Each bench and several tests used to build this by hand, and
//! a copy that drifted would measure or test a refusal instead of the
//! request it meant.
//!
//! Who uses it: the integration tests through `support.rs` (which
//! re-exports it) and `flood.rs` (raw listen requests on sockets it
//! controls); the benches `http_load`, `replicas`, `sentence_search` and
//! `listen_fanout`, which include this file with
//! `#[path = "../tests/it/mcp_request.rs"] mod mcp_request;` as they
//! include `corpus.rs`. Tests that send broken requests on purpose
//! (`mcp_endpoint.rs`, `hostile_callers.rs`) start from these functions
//! and change what they test, or write their own bytes.
//!
//! It uses only std, serde_json and reqwest (which every bench and test
//! has), so any bench can include it.
#![allow(dead_code)]

use serde_json::{Map, Value, json};

/// The stateless revision.
pub const MODERN: &str = "2026-07-28";

/// A JSON-RPC request at 2026-07-28: `params._meta` carries the version,
/// the (empty) client capabilities and the client's identity; what
/// `params._meta` already holds is kept.
pub fn modern_request(id: impl Into<Value>, method: &str, params: Value) -> Value {
    let mut params = match params {
        Value::Object(map) => map,
        Value::Null => Map::new(),
        other => panic!("params must be an object, not {other}"),
    };
    let meta = params
        .entry("_meta")
        .or_insert_with(|| Value::Object(Map::new()));
    let meta = meta.as_object_mut().expect("_meta is an object");
    meta.entry("io.modelcontextprotocol/protocolVersion")
        .or_insert(json!(MODERN));
    meta.entry("io.modelcontextprotocol/clientCapabilities")
        .or_insert(json!({}));
    meta.entry("io.modelcontextprotocol/clientInfo")
        .or_insert(json!({"name": "sezzlee-tests", "version": "0.0.0"}));
    json!({"jsonrpc": "2.0", "id": id.into(), "method": method, "params": params})
}

/// The request metadata headers matching a modern request body: the
/// version its `_meta` names, its method, and its name for `tools/call`
/// and `prompts/get`.
pub fn modern_headers(body: &Value) -> Vec<(&'static str, String)> {
    let version = body["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"]
        .as_str()
        .unwrap_or(MODERN)
        .to_string();
    let method = body["method"].as_str().unwrap_or_default().to_string();
    let mut headers = vec![("mcp-protocol-version", version), ("mcp-method", method)];
    if matches!(body["method"].as_str(), Some("tools/call" | "prompts/get")) {
        headers.push((
            "mcp-name",
            body["params"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_string(),
        ));
    }
    headers
}

/// A whole POST as a correct Streamable HTTP client sends it: every
/// header (the content type, the `Accept` both answers' types, and
/// [`modern_headers`]) and the body's bytes.
#[derive(Clone, Debug)]
pub struct Post {
    pub headers: Vec<(&'static str, String)>,
    pub body: Vec<u8>,
}

impl Post {
    /// `method` with `params` (id 1).
    pub fn new(method: &str, params: Value) -> Post {
        Post::of(&modern_request(1, method, params))
    }

    /// A body the caller built (with [`modern_request`], then perhaps
    /// another id).
    pub fn of(body: &Value) -> Post {
        let mut headers = vec![
            ("content-type", "application/json".to_string()),
            ("accept", "application/json, text/event-stream".to_string()),
        ];
        headers.extend(modern_headers(body));
        Post {
            headers,
            body: body.to_string().into_bytes(),
        }
    }

    /// This POST to `url` as a reqwest request, ready to send.
    pub fn builder(&self, client: &reqwest::Client, url: &str) -> reqwest::RequestBuilder {
        let mut request = client.post(url).body(self.body.clone());
        for (name, value) in &self.headers {
            request = request.header(*name, value.as_str());
        }
        request
    }

    /// The whole HTTP/1.1 request to `endpoint` on `host`, as bytes: for
    /// clients that write it on a connection of their own (a listen stream
    /// held open, connections from chosen addresses).
    pub fn http1(&self, host: &str, endpoint: &str) -> Vec<u8> {
        let mut head = format!("POST {endpoint} HTTP/1.1\r\nhost: {host}\r\n");
        for (name, value) in &self.headers {
            head.push_str(&format!("{name}: {value}\r\n"));
        }
        head.push_str(&format!("content-length: {}\r\n\r\n", self.body.len()));
        let mut bytes = head.into_bytes();
        bytes.extend_from_slice(&self.body);
        bytes
    }
}
