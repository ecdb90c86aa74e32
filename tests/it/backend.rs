//! The recording backend the invoke tests call: a real HTTP server on
//! `127.0.0.1:0` that keeps every request exactly as it arrived and answers
//! by path (JSON, text, 201, 204, a redirect, binary, large, slow, any
//! status; `{"ok": true}` for every other path), or with one JSON body a
//! test sets for every path.

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// One request as the backend received it.
#[derive(Debug, Clone)]
pub struct Recorded {
    pub method: String,
    /// The request target's path and query, exactly as on the wire.
    pub target: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Recorded {
    pub fn path(&self) -> &str {
        self.target.split('?').next().unwrap_or_default()
    }

    pub fn query(&self) -> Option<&str> {
        self.target.split_once('?').map(|(_, q)| q)
    }

    /// Every value of a header (names are lower case on the wire here).
    pub fn all(&self, name: &str) -> Vec<&str> {
        self.headers
            .iter()
            .filter(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
            .collect()
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        let all = self.all(name);
        assert!(all.len() <= 1, "{name} arrived more than once: {all:?}");
        all.first().copied()
    }

    pub fn json_body(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|err| {
            panic!(
                "the body is JSON ({err}): {:?}",
                String::from_utf8_lossy(&self.body)
            )
        })
    }
}

pub type Log = Arc<Mutex<Vec<Recorded>>>;

/// A backend on `127.0.0.1:0` that records every request.
pub struct Backend {
    /// `http://127.0.0.1:PORT`
    pub base: String,
    log: Log,
    canned: Canned,
}

/// A JSON body every path answers with instead of its own, when set, and
/// the `Link` header it comes with, if any.
type Canned = Arc<Mutex<Option<(String, Option<String>)>>>;

impl Backend {
    pub async fn start() -> Backend {
        let log: Log = Arc::default();
        let canned: Canned = Arc::default();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let app = axum::Router::new().fallback(record_and_answer).with_state((
            log.clone(),
            base.clone(),
            canned.clone(),
        ));
        tokio::spawn(async move { axum::serve(listener, app).await });
        Backend { base, log, canned }
    }

    /// From now on every path answers 200 with this JSON body.
    pub fn answer_every_path_with(&self, body: &Value) {
        *self.canned.lock().unwrap() = Some((body.to_string(), None));
    }

    /// From now on every path answers 200 with this JSON body and this
    /// `Link` header (GitHub's paging).
    pub fn answer_every_path_with_link(&self, body: &Value, link: &str) {
        *self.canned.lock().unwrap() = Some((body.to_string(), Some(link.to_string())));
    }

    pub fn count(&self) -> usize {
        self.log.lock().unwrap().len()
    }

    pub fn requests(&self) -> Vec<Recorded> {
        self.log.lock().unwrap().clone()
    }

    pub fn last(&self) -> Recorded {
        self.log
            .lock()
            .unwrap()
            .last()
            .cloned()
            .expect("the backend received a request")
    }

    pub fn hits(&self, path: &str) -> usize {
        self.requests().iter().filter(|r| r.path() == path).count()
    }
}

async fn record_and_answer(
    State((log, base, canned)): State<(Log, String, Canned)>,
    request: Request,
) -> Response {
    let (parts, body) = request.into_parts();
    let target = parts
        .uri
        .path_and_query()
        .map(|pq| pq.as_str().to_string())
        .unwrap_or_default();
    let headers = parts
        .headers
        .iter()
        .map(|(n, v)| {
            (
                n.as_str().to_string(),
                String::from_utf8_lossy(v.as_bytes()).into_owned(),
            )
        })
        .collect();
    let body = axum::body::to_bytes(body, usize::MAX)
        .await
        .unwrap()
        .to_vec();
    let recorded = Recorded {
        method: parts.method.to_string(),
        target,
        headers,
        body,
    };
    let path = recorded.path().to_string();
    log.lock().unwrap().push(recorded);
    let canned = canned.lock().unwrap().clone();
    match canned {
        Some((body, None)) => with_headers(200, &[("content-type", "application/json")], body),
        Some((body, Some(link))) => with_headers(
            200,
            &[("content-type", "application/json"), ("link", &link)],
            body,
        ),
        None => answer(&path, &base).await,
    }
}

pub fn with_headers(
    status: u16,
    headers: &[(&'static str, &str)],
    body: impl Into<Body>,
) -> Response {
    let mut response = Response::new(body.into());
    *response.status_mut() = StatusCode::from_u16(status).unwrap();
    for (name, value) in headers {
        response
            .headers_mut()
            .append(*name, HeaderValue::from_str(value).unwrap());
    }
    response
}

/// What the backend answers, by path.
async fn answer(path: &str, base: &str) -> Response {
    const JSON: (&str, &str) = ("content-type", "application/json");
    match path {
        "/json" => with_headers(
            200,
            &[
                JSON,
                ("etag", "\"v1\""),
                ("link", "<http://example.test/next>; rel=\"next\""),
                ("retry-after", "5"),
                ("x-internal", "do-not-show"),
                ("set-cookie", "backend=secret"),
                ("cache-control", "no-store"),
            ],
            r#"{"greeting":"hello","n":[1,2]}"#,
        ),
        "/text" => with_headers(
            200,
            &[("content-type", "text/plain; charset=utf-8")],
            "hello, text",
        ),
        "/created" => with_headers(201, &[JSON, ("location", "/things/42")], r#"{"id":42}"#),
        "/gone" => StatusCode::NO_CONTENT.into_response(),
        "/redirect" => with_headers(
            302,
            &[("location", &format!("{base}/redirect-target"))],
            Body::empty(),
        ),
        "/redirect-target" => with_headers(200, &[JSON], r#"{"followed":true}"#),
        "/png" => with_headers(200, &[("content-type", "image/png")], png()),
        "/big" => with_headers(
            200,
            &[JSON],
            json!({"blob": "x".repeat(10_000)}).to_string(),
        ),
        "/huge" => with_headers(200, &[JSON], vec![b' '; HUGE]),
        "/slow" => {
            tokio::time::sleep(Duration::from_secs(2)).await;
            with_headers(200, &[JSON], "{}")
        }
        _ if path.starts_with("/status/") => {
            let code: u16 = path["/status/".len()..].parse().unwrap();
            with_headers(
                code,
                &[JSON],
                json!({"code": code, "detail": "as asked"}).to_string(),
            )
        }
        _ => with_headers(200, &[JSON], r#"{"ok":true}"#),
    }
}

/// A body over the gateway's read cap (8 MiB), declared by Content-Length.
pub const HUGE: usize = 9 * 1024 * 1024;

/// 64 bytes that are not UTF-8.
pub fn png() -> Vec<u8> {
    let mut bytes = vec![0x89, b'P', b'N', b'G', 0x0D, 0x0A, 0x1A, 0x0A];
    bytes.extend((0..56u8).map(|i| i.wrapping_mul(37) | 0x80));
    bytes
}
