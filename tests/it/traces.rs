//! Traces and request metrics: a caller's W3C `traceparent` reaches the recording
//! backend in the same trace, both without export (passed on as it came)
//! and with `sezzlee serve --otlp-endpoint` (a child of the backend-call
//! span), and the spans arrive at an OTLP/HTTP receiver started here, which
//! decodes the protobuf by hand (only the few fields it reads).

use crate::backend::Backend;
use crate::support::*;
use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::routing::post;
use serde_json::json;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const CALLER_SPAN: &str = "00f067aa0ba902b7";

fn catalog(backend: &str) -> Vec<(&'static str, String)> {
    let document = json!({
        "openapi": "3.0.3",
        "info": {"title": "Traced", "version": "1"},
        "servers": [{"url": backend}],
        "paths": {"/traced": {"get": {"operationId": "getTraced",
            "responses": {"200": {"description": "ok"}}}}}
    });
    vec![("traced.json", document.to_string())]
}

/// invoke_tool of `get_traced` at the endpoint `url`, with the caller's
/// `traceparent` (and `tracestate`) as `traceparent` says.
async fn invoke_traced(url: &str, traceparent: &str) {
    let body = modern_request(
        1,
        "tools/call",
        json!({"name": "invoke_tool",
        "arguments": {"name": "get_traced"}}),
    );
    let mut request = reqwest::Client::new()
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("traceparent", traceparent)
        .header("tracestate", "vendor=abc");
    for (name, value) in modern_headers(&body) {
        request = request.header(name, value);
    }
    let response = request.json(&body).send().await.unwrap();
    assert_eq!(response.status(), 200);
    let body: serde_json::Value = response.json().await.unwrap();
    let answer = tool_reply(&body["result"]);
    assert!(!answer.is_error, "{}", answer.payload);
}

fn caller_traceparent() -> String {
    format!("00-{TRACE}-{CALLER_SPAN}-01")
}

#[tokio::test]
async fn without_export_the_callers_trace_context_reaches_the_backend_as_sent() {
    let backend = Backend::start().await;
    let gateway = TestGateway::with_files(&catalog(&backend.base), |_| {}).await;
    invoke_traced(&gateway.url, &caller_traceparent()).await;
    let sent = backend.last();
    assert_eq!(sent.all("traceparent"), [caller_traceparent().as_str()]);
    assert_eq!(sent.all("tracestate"), ["vendor=abc"]);
    // A malformed one is not passed on (nor its tracestate).
    invoke_traced(&gateway.url, "00-xyz").await;
    assert_eq!(backend.last().all("traceparent"), Vec::<&str>::new());
    assert_eq!(backend.last().all("tracestate"), Vec::<&str>::new());

    // Both calls counted and timed, by tool, target, backend host and
    // outcome.
    let metrics = gateway.metrics().await;
    for line in [
        "sezzlee_tool_calls_total{tool=\"invoke_tool\",outcome=\"ok\"} 2",
        "sezzlee_tool_call_seconds_count{tool=\"invoke_tool\"} 2",
        "sezzlee_backend_calls_total{host=\"127.0.0.1\",outcome=\"2xx\"} 2",
        "sezzlee_backend_calls_total{host=\"127.0.0.1\",outcome=\"5xx\"} 0",
        "sezzlee_backend_call_seconds_count{host=\"127.0.0.1\"} 2",
        "sezzlee_invocations_total{tool=\"get_traced\",outcome=\"ok\"} 2",
    ] {
        assert!(metrics.lines().any(|l| l == line), "{line}\n{metrics}");
    }
}

// ------------------------------------------------------------ OTLP receiver

/// One exported span: ids in lowercase hex.
#[derive(Debug, Clone)]
struct Exported {
    trace_id: String,
    span_id: String,
    parent_span_id: String,
    name: String,
}

async fn receive(State(spans): State<Arc<Mutex<Vec<Exported>>>>, body: Bytes) -> &'static str {
    let mut decoded = Vec::new();
    // ExportTraceServiceRequest.resource_spans (1) → ResourceSpans.scope_spans
    // (2) → ScopeSpans.spans (2) → Span.
    for resource in fields(&body, 1) {
        for scope in fields(resource, 2) {
            for span in fields(scope, 2) {
                let one = |n| fields(span, n).first().map_or(&[][..], |v| *v);
                decoded.push(Exported {
                    trace_id: hex(one(1)),
                    span_id: hex(one(2)),
                    parent_span_id: hex(one(4)),
                    name: String::from_utf8_lossy(one(5)).to_string(),
                });
            }
        }
    }
    spans.lock().unwrap().extend(decoded);
    ""
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The length-delimited fields numbered `wanted` of one protobuf message
/// (other fields skipped by wire type).
fn fields(message: &[u8], wanted: u64) -> Vec<&[u8]> {
    let mut found = Vec::new();
    let mut at = 0;
    let varint = |at: &mut usize| -> Option<u64> {
        let mut value = 0u64;
        for shift in (0..64).step_by(7) {
            let byte = *message.get(*at)?;
            *at += 1;
            value |= u64::from(byte & 0x7f) << shift;
            if byte & 0x80 == 0 {
                return Some(value);
            }
        }
        None
    };
    while at < message.len() {
        let Some(key) = varint(&mut at) else { break };
        match key & 7 {
            0 => {
                varint(&mut at);
            }
            1 => at += 8,
            5 => at += 4,
            2 => {
                let Some(len) = varint(&mut at) else { break };
                let end = at + len as usize;
                if end > message.len() {
                    break;
                }
                if key >> 3 == wanted {
                    found.push(&message[at..end]);
                }
                at = end;
            }
            _ => break,
        }
    }
    found
}

#[tokio::test]
async fn exported_spans_reach_an_otlp_receiver_and_the_backend_joins_the_trace() {
    let backend = Backend::start().await;
    let spans: Arc<Mutex<Vec<Exported>>> = Arc::default();
    let app = Router::new()
        .route("/v1/traces", post(receive))
        .with_state(spans.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let receiver = format!("http://{}/v1/traces", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });

    let dir = tempfile::tempdir().unwrap();
    for (name, content) in catalog(&backend.base) {
        std::fs::write(dir.path().join(name), content).unwrap();
    }
    let mut child = serve_command(dir.path())
        .args(["--otlp-endpoint", &receiver])
        .env("OTEL_BSP_SCHEDULE_DELAY", "100")
        .spawn()
        .expect("sezzlee serve starts");
    let (url, _logs) = crate::support::listening_url(&mut child);
    invoke_traced(&url, &caller_traceparent()).await;

    // The backend's traceparent: the caller's trace, a span of the gateway's.
    let sent = backend.last();
    let traceparent = sent.all("traceparent");
    assert_eq!(traceparent.len(), 1, "{traceparent:?}");
    let parts: Vec<&str> = traceparent[0].split('-').collect();
    assert_eq!((parts[0], parts[1], parts[3]), ("00", TRACE, "01"));
    let backend_parent = parts[2].to_string();
    assert_ne!(backend_parent, CALLER_SPAN);

    let deadline = Instant::now() + Duration::from_secs(15);
    let ours = loop {
        let ours: Vec<Exported> = spans
            .lock()
            .unwrap()
            .iter()
            .filter(|s| s.trace_id == TRACE)
            .cloned()
            .collect();
        let names: Vec<&str> = ours.iter().map(|s| s.name.as_str()).collect();
        if ["mcp.request", "invoke_tool", "backend.call"]
            .iter()
            .all(|n| names.contains(n))
        {
            break ours;
        }
        assert!(Instant::now() < deadline, "spans received: {ours:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let named = |name: &str| ours.iter().find(|s| s.name == name).unwrap().clone();
    let (request, invoke, call) = (
        named("mcp.request"),
        named("invoke_tool"),
        named("backend.call"),
    );
    assert_eq!(request.parent_span_id, CALLER_SPAN, "{ours:?}");
    assert_eq!(invoke.parent_span_id, request.span_id, "{ours:?}");
    assert_eq!(call.parent_span_id, invoke.span_id, "{ours:?}");
    assert_eq!(
        call.span_id, backend_parent,
        "the backend's parent is the call span"
    );
    let _ = child.kill();
    let _ = child.wait();
}
