//! A dual-era MCP client over Streamable HTTP (the `sezzlee client`
//! command is built on it, in the binary).
//!
//! It exists so that agents and scripts (and our own tests) can talk to any
//! conforming MCP server — a sezzlee gateway or anyone else's — with the
//! protocol's two error tracks kept apart: a JSON-RPC error or a transport
//! failure is a [`ClientError`]; a tool that ran and failed is a
//! [`ToolResult`] with `is_error` set, carrying its content.
//!
//! Layout: [`transport`] (HTTP POST, JSON and SSE answers), [`era`]
//! (modern-first negotiation, legacy `initialize` and sessions), [`rpc`]
//! (bodies and headers), [`tools`] (`tools/list` and `tools/call`),
//! [`listen`] (`subscriptions/listen`), [`gateway`] (search/load/invoke
//! against a sezzlee gateway), [`stdio`] (one MCP server run as a child
//! process, over stdin and stdout).
//!
//! Everything a server sends — descriptions, annotations, instructions,
//! tool output — is data: the client never acts on it (and the command
//! strips control characters before printing it).

pub mod era;
pub mod gateway;
pub mod listen;
pub mod rpc;
pub mod stdio;
pub mod tools;
pub mod transport;

pub use era::{Era, EraChoice, EraMemory, Negotiated};
pub use gateway::{Detail, GatewayClient, InvokeOutcome, LoadOutcome, Loaded, Search};
pub use listen::{ListenEvent, Listener};
pub use stdio::{StdioClient, StdioConfig, StdioEra};
pub use tools::{Tool, ToolList, ToolResult};

use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use serde_json::{Map, Value, json};
use sezzlee_protocol::{Method, notification};
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;
use transport::{Answer, Transport, preview};

/// Default time allowed for one request (negotiation included).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

/// Sends `notifications/cancelled` for a request of the `initialize` era
/// when dropped before [`CancelOnDrop::disarm`]: the request's future was
/// given up (its timeout passed, or whoever awaited it went away) while the
/// server may still be working on it (in that era a dropped connection is
/// not a cancellation). Sent from a task of its own, never awaited.
struct CancelOnDrop {
    transport: Transport,
    body: Value,
    headers: Vec<(String, String)>,
    armed: bool,
}

impl CancelOnDrop {
    fn new(
        client: &Client,
        negotiated: &Negotiated,
        id: &Value,
        identity: &[(String, String)],
    ) -> Self {
        let mut params = Map::new();
        params.insert("requestId".to_string(), id.clone());
        params.insert(
            "reason".to_string(),
            json!("the client gave up waiting for the answer"),
        );
        let (mut body, headers) =
            client.build(negotiated, notification::CANCELLED, params, &[], identity);
        if let Value::Object(members) = &mut body {
            members.remove("id");
        }
        CancelOnDrop {
            transport: client.transport.clone(),
            body,
            headers,
            armed: true,
        }
    }

    fn disarm(&mut self) {
        self.armed = false;
    }
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let transport = self.transport.clone();
        let body = std::mem::take(&mut self.body);
        let headers = std::mem::take(&mut self.headers);
        runtime.spawn(async move {
            let sent = tokio::time::timeout(
                Duration::from_secs(5),
                transport.send(&body, &headers, None),
            )
            .await;
            tracing::debug!(?sent, "told the server a request was given up");
        });
    }
}

/// A JSON-RPC error the server answered with.
#[derive(Debug, Clone, PartialEq)]
pub struct RpcError {
    pub code: i64,
    pub message: String,
    pub data: Option<Value>,
    /// The HTTP status it came with.
    pub http_status: Option<u16>,
}

impl RpcError {
    /// The `error` member of a JSON-RPC response (a malformed one is
    /// described as such, never a panic).
    pub fn from_message(message: &Value, http_status: Option<u16>) -> RpcError {
        let error = message.get("error");
        RpcError {
            code: error
                .and_then(|e| e.get("code"))
                .and_then(Value::as_i64)
                .unwrap_or(0),
            message: error
                .and_then(|e| e.get("message"))
                .and_then(Value::as_str)
                .unwrap_or("(the error response has no message)")
                .to_string(),
            data: error.and_then(|e| e.get("data")).cloned(),
            http_status,
        }
    }
}

/// A protocol-level failure: the request did not produce a result.
#[derive(Debug, Clone, PartialEq)]
pub enum ClientError {
    /// The server answered with a JSON-RPC error.
    Rpc(RpcError),
    /// An HTTP status without a JSON-RPC error body.
    Http { status: u16, body: String },
    /// The connection could not be made: nothing was sent.
    Unreachable(String),
    /// The connection failed or broke (the request may have been sent).
    Transport(String),
    /// No answer in time.
    Timeout(Duration),
    /// The server's answer breaks the protocol.
    Malformed(String),
    /// The server and this client share no way to do what was asked.
    Unsupported(String),
    /// The request cannot be sent as asked (a bad URL, header or argument).
    Usage(String),
}

impl std::fmt::Display for ClientError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ClientError::Rpc(error) => {
                write!(f, "JSON-RPC error {}: {}", error.code, error.message)?;
                if let Some(status) = error.http_status.filter(|s| *s != 200) {
                    write!(f, " (HTTP {status})")?;
                }
                Ok(())
            }
            ClientError::Http { status, body } => {
                write!(f, "HTTP {status} without a JSON-RPC answer")?;
                if !body.is_empty() {
                    write!(f, ": {body}")?;
                }
                Ok(())
            }
            ClientError::Unreachable(why) => write!(f, "cannot connect: {why}"),
            ClientError::Transport(why) => write!(f, "transport failure: {why}"),
            ClientError::Timeout(after) => {
                write!(f, "no answer within {} ms", after.as_millis())
            }
            ClientError::Malformed(why) => write!(f, "the server broke the protocol: {why}"),
            ClientError::Unsupported(why) => write!(f, "unsupported: {why}"),
            ClientError::Usage(why) => write!(f, "{why}"),
        }
    }
}

impl std::error::Error for ClientError {}

impl ClientError {
    /// The error as JSON, for `--json` output.
    pub fn to_json(&self) -> Value {
        match self {
            ClientError::Rpc(error) => json!({
                "kind": "rpc",
                "code": error.code,
                "message": error.message,
                "data": error.data,
                "httpStatus": error.http_status,
            }),
            ClientError::Http { status, body } => {
                json!({"kind": "http", "httpStatus": status, "message": self.to_string(), "body": body})
            }
            ClientError::Unreachable(_) => {
                json!({"kind": "unreachable", "message": self.to_string()})
            }
            ClientError::Transport(_) => json!({"kind": "transport", "message": self.to_string()}),
            ClientError::Timeout(_) => json!({"kind": "timeout", "message": self.to_string()}),
            ClientError::Malformed(_) => json!({"kind": "malformed", "message": self.to_string()}),
            ClientError::Unsupported(_) => {
                json!({"kind": "unsupported", "message": self.to_string()})
            }
            ClientError::Usage(_) => json!({"kind": "usage", "message": self.to_string()}),
        }
    }
}

/// How to reach one server.
#[derive(Clone)]
pub struct ClientConfig {
    pub url: String,
    /// Identity headers sent on every request, e.g. `Authorization`.
    pub headers: Vec<(String, String)>,
    /// Time allowed for one request.
    pub timeout: Duration,
    pub era: EraChoice,
    /// Caps how long a `tools/list` answer is reused (`ttlMs` otherwise).
    pub cache_ttl_cap: Option<Duration>,
    /// Where eras are remembered per URL.
    pub memory: Arc<EraMemory>,
}

impl ClientConfig {
    pub fn new(url: impl Into<String>) -> ClientConfig {
        ClientConfig {
            url: url.into(),
            headers: Vec::new(),
            timeout: DEFAULT_TIMEOUT,
            era: EraChoice::Auto,
            cache_ttl_cap: None,
            memory: EraMemory::process(),
        }
    }

    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    pub fn era(mut self, era: EraChoice) -> Self {
        self.era = era;
        self
    }

    pub fn cache_ttl_cap(mut self, cap: Duration) -> Self {
        self.cache_ttl_cap = Some(cap);
        self
    }

    pub fn memory(mut self, memory: Arc<EraMemory>) -> Self {
        self.memory = memory;
        self
    }
}

/// What `discover` tells about a server, in either era.
#[derive(Debug, Clone)]
pub struct ServerDescription {
    pub era: Era,
    pub protocol_version: String,
    pub session_id: Option<String>,
    /// `serverInfo` (name, version…), untrusted.
    pub server_info: Value,
    pub capabilities: Value,
    /// The server's instructions: text for a model, untrusted.
    pub instructions: Option<String>,
    pub supported_versions: Vec<String>,
    /// The `DiscoverResult` or `InitializeResult` as received.
    pub raw: Value,
}

/// A client of one MCP endpoint. Requests may run concurrently; the era is
/// negotiated once, on first use.
pub struct Client {
    config: ClientConfig,
    transport: Transport,
    ids: AtomicI64,
    session: tokio::sync::Mutex<Option<Negotiated>>,
    pub(crate) tools: std::sync::Mutex<Option<tools::Cached>>,
}

/// Headers that only the client itself may set.
const RESERVED_HEADERS: [&str; 6] = [
    "mcp-protocol-version",
    "mcp-method",
    "mcp-name",
    "mcp-session-id",
    "content-type",
    "accept",
];

impl Client {
    /// A client for `config` (nothing is sent yet).
    pub fn new(config: ClientConfig) -> Result<Client, ClientError> {
        let mut identity = HeaderMap::new();
        for (name, value) in &config.headers {
            let header = HeaderName::from_bytes(name.trim().as_bytes())
                .map_err(|_| ClientError::Usage(format!("'{name}' is not a valid header name")))?;
            if RESERVED_HEADERS.contains(&header.as_str())
                || header.as_str().starts_with("mcp-param-")
            {
                return Err(ClientError::Usage(format!(
                    "header {name} is set by the client itself"
                )));
            }
            let value = HeaderValue::from_str(value.trim()).map_err(|_| {
                ClientError::Usage(format!(
                    "the value of header {name} holds characters a header may not"
                ))
            })?;
            identity.append(header, value);
        }
        let transport = Transport::new(&config.url, identity)?;
        Ok(Client {
            config,
            transport,
            ids: AtomicI64::new(1),
            session: tokio::sync::Mutex::new(None),
            tools: std::sync::Mutex::new(None),
        })
    }

    pub fn config(&self) -> &ClientConfig {
        &self.config
    }

    pub(crate) fn transport(&self) -> &Transport {
        &self.transport
    }

    pub(crate) fn next_id(&self) -> Value {
        json!(self.ids.fetch_add(1, Ordering::Relaxed))
    }

    /// Negotiates the era if not done yet; returns what was settled.
    pub async fn connect(&self) -> Result<Negotiated, ClientError> {
        let timeout = self.config.timeout;
        tokio::time::timeout(timeout, self.ensure())
            .await
            .map_err(|_| ClientError::Timeout(timeout))?
    }

    async fn ensure(&self) -> Result<Negotiated, ClientError> {
        let mut session = self.session.lock().await;
        if let Some(negotiated) = session.as_ref() {
            return Ok(negotiated.clone());
        }
        let negotiated = era::negotiate(
            &self.transport,
            self.config.era,
            &self.config.memory,
            || self.next_id(),
        )
        .await?;
        *session = Some(negotiated.clone());
        Ok(negotiated)
    }

    /// Drops the negotiated state (and, if the era came from memory, the
    /// memory too) so the next request negotiates again.
    async fn reset(&self, forget: bool) {
        *self.session.lock().await = None;
        if forget {
            self.config.memory.forget(&self.config.url);
        }
    }

    /// What the server says about itself: the `DiscoverResult` (modern) or
    /// the `InitializeResult` (legacy).
    pub async fn discover(&self) -> Result<ServerDescription, ClientError> {
        let negotiated = self.connect().await?;
        let raw = match negotiated.era {
            Era::Modern if negotiated.server.is_object() => negotiated.server.clone(),
            Era::Modern => {
                self.request(Method::ServerDiscover.as_str(), Map::new())
                    .await?
            }
            Era::Legacy => negotiated.server.clone(),
        };
        let mut server_info = raw.get("serverInfo").cloned().unwrap_or(Value::Null);
        if server_info.is_null() {
            server_info = raw
                .get("_meta")
                .and_then(|m| m.get(rpc::SERVER_INFO_KEY))
                .cloned()
                .unwrap_or(Value::Null);
        }
        let supported_versions = match negotiated.era {
            Era::Modern => raw
                .get("supportedVersions")
                .and_then(Value::as_array)
                .map(|v| {
                    v.iter()
                        .filter_map(Value::as_str)
                        .map(str::to_string)
                        .collect()
                })
                .unwrap_or_default(),
            Era::Legacy => vec![negotiated.protocol_version.clone()],
        };
        Ok(ServerDescription {
            era: negotiated.era,
            protocol_version: negotiated.protocol_version.clone(),
            session_id: negotiated.session_id.clone(),
            capabilities: raw.get("capabilities").cloned().unwrap_or(Value::Null),
            instructions: raw
                .get("instructions")
                .and_then(Value::as_str)
                .map(str::to_string),
            server_info,
            supported_versions,
            raw,
        })
    }

    /// The `initialize`-era versions the server speaks: each version this
    /// client knows is offered in an `initialize` of its own, and counts
    /// when the server answers with that same version (a session minted
    /// for the probe is ended with DELETE). `server/discover` lists only
    /// what the per-request wire serves, so this is how a dual-era server's
    /// other versions are found. Newest first; empty when none is spoken.
    pub async fn legacy_versions(&self) -> Vec<String> {
        let mut spoken = Vec::new();
        for version in rpc::HANDSHAKE_VERSIONS {
            let Ok(negotiated) =
                era::initialize(&self.transport, version, &|| self.next_id()).await
            else {
                continue;
            };
            let _ = era::end_session(&self.transport, &negotiated).await;
            if negotiated.protocol_version == version {
                spoken.push(version.to_string());
            }
        }
        spoken
    }

    /// One request in the negotiated era; the `result` on success.
    pub async fn request(
        &self,
        method: &str,
        params: Map<String, Value>,
    ) -> Result<Value, ClientError> {
        self.request_with(method, params, &[], &[], self.config.timeout)
            .await
    }

    /// One request with extra (modern-only) headers, headers of the
    /// caller's identity for this request only (either era), and its own
    /// timeout.
    pub(crate) async fn request_with(
        &self,
        method: &str,
        params: Map<String, Value>,
        extra_headers: &[(String, String)],
        identity: &[(String, String)],
        timeout: Duration,
    ) -> Result<Value, ClientError> {
        let exchange = async {
            let mut renegotiated = false;
            loop {
                let negotiated = self.ensure().await?;
                let (body, headers) =
                    self.build(&negotiated, method, params.clone(), extra_headers, identity);
                let id = body.get("id").cloned().unwrap_or(Value::Null);
                // Given up before its answer (a timeout, a caller gone): the
                // server is told, so it can stop the work. At 2026-07-28 the
                // response stream closing (the future dropped) is itself the
                // cancellation; the `initialize` era sends a notification.
                let mut cancel = (negotiated.era == Era::Legacy)
                    .then(|| CancelOnDrop::new(self, &negotiated, &id, identity));
                let sent = self.transport.send(&body, &headers, Some(&id)).await;
                if let Some(cancel) = &mut cancel {
                    cancel.disarm();
                }
                match sent? {
                    Answer::Message {
                        status, message, ..
                    } => return interpret(&message, status),
                    Answer::Status { status, body } => {
                        // A legacy session the server forgot (404), or an
                        // era remembered from before that no longer holds:
                        // negotiate again, once.
                        let stale_session = negotiated.era == Era::Legacy
                            && negotiated.session_id.is_some()
                            && status == 404;
                        let stale_memory = negotiated.remembered && (400..500).contains(&status);
                        if !renegotiated && (stale_session || stale_memory) {
                            renegotiated = true;
                            self.reset(stale_memory).await;
                            continue;
                        }
                        return Err(ClientError::Http {
                            status,
                            body: preview(&body),
                        });
                    }
                    Answer::Accepted => {
                        return Err(ClientError::Malformed(format!(
                            "{method} was answered 202 Accepted, not a response"
                        )));
                    }
                }
            }
        };
        tokio::time::timeout(timeout, exchange)
            .await
            .map_err(|_| ClientError::Timeout(timeout))?
    }

    /// The body and headers of one request in `negotiated`'s era.
    pub(crate) fn build(
        &self,
        negotiated: &Negotiated,
        method: &str,
        params: Map<String, Value>,
        extra_headers: &[(String, String)],
        identity: &[(String, String)],
    ) -> (Value, Vec<(String, String)>) {
        let id = self.next_id();
        match negotiated.era {
            Era::Modern => {
                let mut headers = rpc::modern_headers(method, &params);
                headers.extend_from_slice(extra_headers);
                headers.extend_from_slice(identity);
                (rpc::modern_body(&id, method, params), headers)
            }
            Era::Legacy => {
                let mut headers = negotiated.legacy_headers();
                headers.extend_from_slice(identity);
                (rpc::legacy_body(&id, method, params), headers)
            }
        }
    }

    /// The era negotiated so far, if any.
    pub async fn negotiated(&self) -> Option<Negotiated> {
        self.session.lock().await.clone()
    }

    /// Ends a legacy session with DELETE, if the server minted one. Call it
    /// when done: a session cannot be ended from a destructor.
    pub async fn close(&self) -> Result<(), ClientError> {
        let negotiated = self.session.lock().await.take();
        match negotiated {
            Some(negotiated) => era::end_session(&self.transport, &negotiated).await,
            None => Ok(()),
        }
    }
}

/// A JSON-RPC response as a result or an [`RpcError`].
fn interpret(message: &Value, status: u16) -> Result<Value, ClientError> {
    if message.get("error").is_some() {
        return Err(ClientError::Rpc(RpcError::from_message(
            message,
            Some(status),
        )));
    }
    match message.get("result") {
        Some(result @ Value::Object(_)) => Ok(result.clone()),
        Some(other) => Err(ClientError::Malformed(format!(
            "the result is {}, not an object",
            sezzlee_json::kind_of(other)
        ))),
        None => Err(ClientError::Malformed(
            "the response has neither result nor error".to_string(),
        )),
    }
}
