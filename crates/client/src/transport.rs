//! The client's HTTP: one POST per JSON-RPC message, its answer read as a
//! JSON body or as an SSE stream, and the DELETE that ends a legacy session.
//!
//! It knows nothing about protocol eras: callers pass the headers each era
//! needs. What it guarantees is the shape of what comes back — a JSON-RPC
//! response (success or error) matched to the request id, `202 Accepted`,
//! or an HTTP status whose body is not a JSON-RPC message — and bounded
//! reads, so a hostile server cannot make it buffer without limit.

use super::ClientError;
// The chunk type of reqwest's byte streams.
use bytes::Bytes;
use futures_util::{Stream, StreamExt};
use reqwest::header::{CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};
use serde_json::Value;
use std::collections::VecDeque;
use std::pin::Pin;

/// Largest JSON body or single SSE event the client reads (64 MiB).
pub const MAX_MESSAGE_BYTES: usize = 64 * 1024 * 1024;
/// The session header of the `initialize` era.
pub const SESSION_HEADER: &str = "mcp-session-id";

/// What one POST came back with.
#[derive(Debug)]
pub enum Answer {
    /// `202 Accepted` (a notification was taken).
    Accepted,
    /// A JSON-RPC response to the request: `result` or `error` inside.
    Message {
        status: u16,
        message: Value,
        session: Option<String>,
    },
    /// An HTTP status whose body is not a JSON-RPC response.
    Status { status: u16, body: String },
}

/// A POST whose answer may be a long-lived event stream
/// (`subscriptions/listen`).
pub enum Opened {
    Stream(EventStream),
    Answer(Answer),
}

/// One endpoint, with the caller's identity headers on every request.
#[derive(Clone)]
pub struct Transport {
    http: reqwest::Client,
    url: String,
    identity: HeaderMap,
    /// Notifications the server sent on a response's stream before the
    /// response (a tool that changes the tool list says so there).
    notifications: tokio::sync::broadcast::Sender<Value>,
}

/// Notifications kept for a receiver that lags.
const NOTIFICATIONS_KEPT: usize = 64;

impl Transport {
    /// A transport to `url`. `identity` headers (e.g. `Authorization`) go
    /// on every request. Redirects are not followed: an MCP endpoint that
    /// moves must be configured, not chased with credentials attached.
    pub fn new(url: &str, identity: HeaderMap) -> Result<Transport, ClientError> {
        let parsed = reqwest::Url::parse(url)
            .map_err(|err| ClientError::Usage(format!("'{url}' is not a URL: {err}")))?;
        if !matches!(parsed.scheme(), "http" | "https") {
            return Err(ClientError::Usage(format!("'{url}' is not an http(s) URL")));
        }
        let http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|err| ClientError::Transport(format!("cannot build an HTTP client: {err}")))?;
        Ok(Transport {
            http,
            url: url.to_string(),
            identity,
            notifications: tokio::sync::broadcast::channel(NOTIFICATIONS_KEPT).0,
        })
    }

    pub fn url(&self) -> &str {
        &self.url
    }

    /// The notifications servers send on response streams, from now on.
    pub fn notifications(&self) -> tokio::sync::broadcast::Receiver<Value> {
        self.notifications.subscribe()
    }

    fn post_request(
        &self,
        body: &Value,
        headers: &[(String, String)],
    ) -> Result<reqwest::RequestBuilder, ClientError> {
        // A header given for this request replaces the identity's of the
        // same name (a caller's Authorization over the configured one).
        let mut identity = self.identity.clone();
        let mut given = HeaderMap::new();
        for (name, value) in headers {
            let name = header_name(name)?;
            identity.remove(&name);
            given.append(name.clone(), header_value(name.as_str(), value)?);
        }
        let mut request = self
            .http
            .post(&self.url)
            .headers(identity)
            .header(CONTENT_TYPE, "application/json")
            .header(
                reqwest::header::ACCEPT,
                "application/json, text/event-stream",
            );
        for (name, value) in &given {
            request = request.header(name, value);
        }
        let bytes = serde_json::to_vec(body).map_err(|err| {
            ClientError::Usage(format!("the request cannot be serialized: {err}"))
        })?;
        Ok(request.body(bytes))
    }

    /// POSTs one message and reads the response to request `id` (from a
    /// JSON body or from an SSE stream, skipping the notifications that
    /// precede it). For a notification pass `id: None`.
    pub async fn send(
        &self,
        body: &Value,
        headers: &[(String, String)],
        id: Option<&Value>,
    ) -> Result<Answer, ClientError> {
        match self.open(body, headers).await? {
            Opened::Answer(answer) => Ok(answer),
            Opened::Stream(mut events) => {
                let session = events.session.clone();
                let status = events.status;
                while let Some(message) = events.next_message().await {
                    let message = message?;
                    if is_response_to(&message, id) {
                        return Ok(Answer::Message {
                            status,
                            message,
                            session,
                        });
                    }
                    if message.get("method").is_some() && message.get("id").is_none() {
                        // Nobody may be listening: that is not an error.
                        let _ = self.notifications.send(message);
                        continue;
                    }
                    tracing::debug!(%message, "skipped a message on the response stream");
                }
                Err(ClientError::Transport(
                    "the server's SSE stream ended before the response arrived".to_string(),
                ))
            }
        }
    }

    /// POSTs one message; an SSE answer is handed back as a stream.
    pub async fn open(
        &self,
        body: &Value,
        headers: &[(String, String)],
    ) -> Result<Opened, ClientError> {
        let response = self
            .post_request(body, headers)?
            .send()
            .await
            .map_err(|err| sent_or_not(&err))?;
        let status = response.status().as_u16();
        let session = response
            .headers()
            .get(SESSION_HEADER)
            .and_then(|value| value.to_str().ok())
            .map(str::to_string);
        let content_type = response
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|value| value.to_str().ok())
            .unwrap_or_default()
            .to_ascii_lowercase();
        if status == 202 {
            return Ok(Opened::Answer(Answer::Accepted));
        }
        if (200..300).contains(&status) && content_type.starts_with("text/event-stream") {
            return Ok(Opened::Stream(EventStream::new(
                status,
                session,
                response.bytes_stream(),
            )));
        }
        let bytes = read_bounded(response).await?;
        let text = String::from_utf8_lossy(&bytes).into_owned();
        match serde_json::from_slice::<Value>(&bytes) {
            Ok(message) if is_jsonrpc_response(&message) => Ok(Opened::Answer(Answer::Message {
                status,
                message,
                session,
            })),
            Ok(Value::Array(batch)) => {
                // A batch answer (2025-03-26 allowed them): take the response.
                match batch.into_iter().find(is_jsonrpc_response) {
                    Some(message) => Ok(Opened::Answer(Answer::Message {
                        status,
                        message,
                        session,
                    })),
                    None => Ok(Opened::Answer(Answer::Status { status, body: text })),
                }
            }
            _ => Ok(Opened::Answer(Answer::Status { status, body: text })),
        }
    }

    /// GET with the session header: the `initialize` era's stream of what
    /// the server sends unasked (notifications). `None` when the server
    /// offers none (`405`).
    pub async fn server_stream(
        &self,
        headers: &[(String, String)],
    ) -> Result<Option<EventStream>, ClientError> {
        let mut request = self
            .http
            .get(&self.url)
            .headers(self.identity.clone())
            .header(reqwest::header::ACCEPT, "text/event-stream");
        for (name, value) in headers {
            request = request.header(header_name(name)?, header_value(name, value)?);
        }
        let response = request.send().await.map_err(|err| sent_or_not(&err))?;
        let status = response.status().as_u16();
        if status == 405 {
            return Ok(None);
        }
        let is_stream = response
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|value| value.to_str().ok())
            .is_some_and(|kind| kind.to_ascii_lowercase().starts_with("text/event-stream"));
        if (200..300).contains(&status) && is_stream {
            return Ok(Some(EventStream::new(
                status,
                None,
                response.bytes_stream(),
            )));
        }
        let body = read_bounded(response).await?;
        Err(ClientError::Http {
            status,
            body: preview(&String::from_utf8_lossy(&body)),
        })
    }

    /// DELETE with the session header: ends a legacy session. A `405`
    /// (the server does not let clients end sessions) is not an error.
    pub async fn delete_session(&self, headers: &[(String, String)]) -> Result<u16, ClientError> {
        let mut request = self.http.delete(&self.url).headers(self.identity.clone());
        for (name, value) in headers {
            request = request.header(header_name(name)?, header_value(name, value)?);
        }
        let response = request
            .send()
            .await
            .map_err(|err| ClientError::Transport(describe(&err)))?;
        Ok(response.status().as_u16())
    }
}

fn header_name(name: &str) -> Result<HeaderName, ClientError> {
    HeaderName::from_bytes(name.as_bytes())
        .map_err(|_| ClientError::Usage(format!("'{name}' is not a valid header name")))
}

fn header_value(name: &str, value: &str) -> Result<HeaderValue, ClientError> {
    HeaderValue::from_str(value).map_err(|_| {
        ClientError::Usage(format!(
            "the value of header {name} holds characters a header may not"
        ))
    })
}

/// A failed POST: [`ClientError::Unreachable`] when no connection was made
/// (nothing was sent), else [`ClientError::Transport`].
fn sent_or_not(err: &reqwest::Error) -> ClientError {
    if err.is_connect() {
        ClientError::Unreachable(describe(err))
    } else {
        ClientError::Transport(describe(err))
    }
}

/// A reqwest error in words, with its source chain (the part that says
/// "connection refused").
fn describe(err: &reqwest::Error) -> String {
    use std::error::Error;
    let mut text = err.to_string();
    let mut source = err.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

async fn read_bounded(response: reqwest::Response) -> Result<Vec<u8>, ClientError> {
    let mut body = Vec::new();
    let mut chunks = response.bytes_stream();
    while let Some(chunk) = chunks.next().await {
        let chunk = chunk.map_err(|err| ClientError::Transport(describe(&err)))?;
        if body.len() + chunk.len() > MAX_MESSAGE_BYTES {
            return Err(ClientError::Malformed(format!(
                "the response body is larger than {MAX_MESSAGE_BYTES} bytes"
            )));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// A JSON-RPC response: an object with `result` or `error` (and no `method`).
pub fn is_jsonrpc_response(message: &Value) -> bool {
    message.get("method").is_none()
        && (message.get("result").is_some() || message.get("error").is_some())
}

/// The response to request `id` (an error without an id counts: a server
/// that could not read the id answers with `null`).
fn is_response_to(message: &Value, id: Option<&Value>) -> bool {
    if !is_jsonrpc_response(message) {
        return false;
    }
    match (message.get("id"), id) {
        (Some(got), Some(want)) => got == want || (got.is_null() && message.get("error").is_some()),
        (None, _) => message.get("error").is_some(),
        (Some(_), None) => true,
    }
}

type ByteStream = Pin<Box<dyn Stream<Item = Result<Bytes, reqwest::Error>> + Send>>;

/// The JSON-RPC messages of an SSE response, in order.
pub struct EventStream {
    pub status: u16,
    pub session: Option<String>,
    bytes: ByteStream,
    parser: SseParser,
    ready: VecDeque<String>,
    ended: bool,
}

impl EventStream {
    fn new(
        status: u16,
        session: Option<String>,
        bytes: impl Stream<Item = Result<Bytes, reqwest::Error>> + Send + 'static,
    ) -> EventStream {
        EventStream {
            status,
            session,
            bytes: Box::pin(bytes),
            parser: SseParser::default(),
            ready: VecDeque::new(),
            ended: false,
        }
    }

    /// The next message; `None` when the stream ended. An event without
    /// data is skipped (2025-11-25 servers open a stream with one that only
    /// carries an event id, to resume from); an event whose data is not
    /// JSON is an error, and the stream may still be read after it.
    pub async fn next_message(&mut self) -> Option<Result<Value, ClientError>> {
        loop {
            if let Some(data) = self.ready.pop_front() {
                if data.trim().is_empty() {
                    continue;
                }
                return Some(serde_json::from_str(&data).map_err(|err| {
                    ClientError::Malformed(format!(
                        "an SSE event is not JSON ({err}): {}",
                        preview(&data)
                    ))
                }));
            }
            if self.ended {
                return None;
            }
            match self.bytes.next().await {
                Some(Ok(chunk)) => match self.parser.push(&chunk) {
                    Ok(events) => self.ready.extend(events),
                    Err(why) => {
                        self.ended = true;
                        return Some(Err(ClientError::Malformed(why)));
                    }
                },
                Some(Err(err)) => {
                    self.ended = true;
                    return Some(Err(ClientError::Transport(describe(&err))));
                }
                None => {
                    self.ended = true;
                    self.ready.extend(self.parser.finish());
                }
            }
        }
    }
}

/// The start of a long text, for error messages.
pub fn preview(text: &str) -> String {
    let mut cut: String = text.chars().take(200).collect();
    if cut.len() < text.len() {
        cut.push('…');
    }
    cut
}

/// An incremental Server-Sent Events parser (the WHATWG rules that matter
/// for MCP): lines end in CRLF, LF or CR; `data:` lines accumulate; a blank
/// line dispatches; comments (`:`) and other fields are ignored. Only the
/// data of each event is returned.
#[derive(Default)]
pub struct SseParser {
    line: Vec<u8>,
    data: String,
    has_data: bool,
    after_cr: bool,
}

impl SseParser {
    /// Feeds bytes; returns the data of every event completed by them.
    pub fn push(&mut self, chunk: &[u8]) -> Result<Vec<String>, String> {
        let mut events = Vec::new();
        for &byte in chunk {
            if self.after_cr {
                self.after_cr = false;
                if byte == b'\n' {
                    continue;
                }
            }
            match byte {
                b'\r' | b'\n' => {
                    self.after_cr = byte == b'\r';
                    let line = std::mem::take(&mut self.line);
                    if let Some(event) = self.end_line(&line) {
                        events.push(event);
                    }
                }
                _ => {
                    self.line.push(byte);
                    if self.line.len() + self.data.len() > MAX_MESSAGE_BYTES {
                        return Err(format!(
                            "an SSE event is larger than {MAX_MESSAGE_BYTES} bytes"
                        ));
                    }
                }
            }
        }
        Ok(events)
    }

    /// At end of stream: an event not terminated by a blank line is
    /// incomplete and dropped, as the SSE rules say.
    pub fn finish(&mut self) -> Vec<String> {
        self.line.clear();
        self.data.clear();
        self.has_data = false;
        Vec::new()
    }

    fn end_line(&mut self, line: &[u8]) -> Option<String> {
        if line.is_empty() {
            if !self.has_data {
                return None;
            }
            self.has_data = false;
            let mut data = std::mem::take(&mut self.data);
            if data.ends_with('\n') {
                data.pop();
            }
            return Some(data);
        }
        let line = String::from_utf8_lossy(line);
        if line.starts_with(':') {
            return None;
        }
        let (field, value) = match line.split_once(':') {
            Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
            None => (line.as_ref(), ""),
        };
        if field == "data" {
            self.data.push_str(value);
            self.data.push('\n');
            self.has_data = true;
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_all(chunks: &[&[u8]]) -> Vec<String> {
        let mut parser = SseParser::default();
        let mut out = Vec::new();
        for chunk in chunks {
            out.extend(parser.push(chunk).unwrap());
        }
        out
    }

    #[test]
    fn events_dispatch_on_blank_lines() {
        let events =
            parse_all(&[b"event: message\ndata: {\"a\":1}\n\n: keep-alive\n\ndata: 2\n\n"]);
        assert_eq!(events, vec!["{\"a\":1}".to_string(), "2".to_string()]);
    }

    #[test]
    fn line_endings_and_chunk_boundaries() {
        let events = parse_all(&[b"data: one\r", b"\n\r", b"\ndata:two\rdata: three\r\r"]);
        assert_eq!(events, vec!["one".to_string(), "two\nthree".to_string()]);
        let events = parse_all(&[b"da", b"ta: x", b"y\n", b"\n"]);
        assert_eq!(events, vec!["xy".to_string()]);
    }

    #[test]
    fn incomplete_events_and_other_fields_are_dropped() {
        let mut parser = SseParser::default();
        assert!(parser.push(b"id: 7\nretry: 10\n\n").unwrap().is_empty());
        assert!(parser.push(b"data: half").unwrap().is_empty());
        assert!(parser.finish().is_empty());
    }

    /// A 2025-11-25 server opens a stream with an event that carries only
    /// an id (`data:` empty): skipped, the message after it read.
    #[tokio::test]
    async fn an_event_without_data_is_skipped() {
        let chunks: Vec<Result<Bytes, reqwest::Error>> = vec![
            Ok(Bytes::from_static(b"id: 0\nretry: 3000\ndata: \n\n")),
            Ok(Bytes::from_static(
                b"event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n",
            )),
        ];
        let mut stream = EventStream::new(200, None, futures_util::stream::iter(chunks));
        let first = stream
            .next_message()
            .await
            .expect("a message")
            .expect("JSON");
        assert_eq!(first["id"], 1);
        assert!(stream.next_message().await.is_none());
    }

    #[test]
    fn responses_are_matched_to_their_request() {
        let id = serde_json::json!(3);
        assert!(is_response_to(
            &serde_json::json!({"jsonrpc":"2.0","id":3,"result":{}}),
            Some(&id)
        ));
        assert!(!is_response_to(
            &serde_json::json!({"jsonrpc":"2.0","id":4,"result":{}}),
            Some(&id)
        ));
        assert!(is_response_to(
            &serde_json::json!({"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"x"}}),
            Some(&id)
        ));
        assert!(!is_response_to(
            &serde_json::json!({"jsonrpc":"2.0","method":"notifications/progress","params":{}}),
            Some(&id)
        ));
    }
}
