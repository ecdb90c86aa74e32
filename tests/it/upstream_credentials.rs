//! What identity reaches an upstream MCP server over HTTP
//! (docs/contract.md §2.10): `backend.headers` on every request (the
//! listing too, `${VARIABLE}`s expanded), the caller's `Authorization` only
//! with `auth: {mode: passthrough}` and only on calls, `forwardHeaders`
//! only those named, and nothing of the caller by default. The server is
//! written here (the `initialize` era, JSON answers) and records the
//! headers of every request.

use crate::support::*;
use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use serde_json::{Value, json};
use sezzlee_gateway::settings::WatchMode;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const STATIC: (&str, &str) = ("SEZZLEE_UPSTREAM_STATIC_5E21", "static-value-3c8a1f");
const CLIENT_SECRET: (&str, &str) = ("SEZZLEE_UPSTREAM_CLIENT_5E22", "client-secret-8d2b4f");

/// One request the server saw: its method and the headers that matter.
#[derive(Debug, Clone)]
struct Seen {
    method: String,
    authorization: Option<String>,
    fixed: Option<String>,
    tenant: Option<String>,
    other: Option<String>,
}

type Record = Arc<Mutex<Vec<Seen>>>;

async fn answer(State(seen): State<Record>, headers: HeaderMap, body: Bytes) -> Response {
    let Ok(message) = serde_json::from_slice::<Value>(&body) else {
        return StatusCode::BAD_REQUEST.into_response();
    };
    let text = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string)
    };
    seen.lock().unwrap().push(Seen {
        method: message["method"].as_str().unwrap_or_default().to_string(),
        authorization: text("authorization"),
        fixed: text("x-static"),
        tenant: text("x-tenant"),
        other: text("x-other"),
    });
    let Some(id) = message.get("id").cloned() else {
        return StatusCode::ACCEPTED.into_response();
    };
    let result = match message["method"].as_str().unwrap_or_default() {
        "initialize" => json!({
            "protocolVersion": "2025-11-25",
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "recorder", "version": "0"}
        }),
        "tools/list" => json!({"tools": [{
            "name": "whoami",
            "description": "Says who is calling.",
            "inputSchema": {"type": "object"}
        }]}),
        "tools/call" => json!({"content": [{"type": "text", "text": "ok"}]}),
        _ => json!({}),
    };
    axum::Json(json!({"jsonrpc": "2.0", "id": id, "result": result})).into_response()
}

async fn recorder() -> (String, Record) {
    let seen: Record = Arc::default();
    // A token endpoint beside it: the gateway's own token for
    // `clientCredentials`.
    let token = || async {
        axum::Json(
            json!({"access_token": "svc-token-1", "token_type": "Bearer", "expires_in": 3600}),
        )
    };
    let app = Router::new()
        .route("/mcp", post(answer))
        .route("/token", post(token))
        .with_state(seen.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    (format!("http://{address}/mcp"), seen)
}

/// A gateway serving `backend` (YAML) for the recorder; waits for its tool.
async fn gateway(url: &str, backend: &str) -> TestGateway {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("rec.mcp.yaml"),
        format!("url: {url}\nera: legacy\nbackend:\n{backend}"),
    )
    .unwrap();
    let mut settings = test_settings(dir.path());
    settings.watch = WatchMode::Off;
    let (gw, _reloader, _watcher) = TestGateway::start_reloading(settings, Some(dir)).await;
    let deadline = Instant::now() + Duration::from_secs(10);
    while gw.gateway.store.current().catalog.tool("whoami").is_none() {
        assert!(
            Instant::now() < deadline,
            "the upstream's tool never appeared"
        );
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    gw
}

/// invoke_tool whoami with the caller's headers.
async fn call_as(gw: &TestGateway, headers: &[(&'static str, &str)]) -> Value {
    let reply = gw
        .modern_custom(
            "tools/call",
            json!({"name": "invoke_tool", "arguments": {"name": "whoami", "arguments": {}}}),
            |_, sent| {
                for (name, value) in headers {
                    sent.push((name, value.to_string()));
                }
            },
        )
        .await;
    assert_eq!(reply.status, 200, "{}", reply.text);
    reply.json()["result"].clone()
}

fn calls(seen: &Record) -> Vec<Seen> {
    let seen = seen.lock().unwrap();
    seen.iter()
        .filter(|s| s.method == "tools/call")
        .cloned()
        .collect()
}

#[tokio::test]
async fn static_headers_go_everywhere_and_the_caller_s_only_as_configured() {
    set_test_variable(STATIC.0, STATIC.1);
    let caller = [
        ("authorization", "Bearer caller-token-1"),
        ("x-tenant", "acme"),
        ("x-other", "not-forwarded"),
    ];

    // By default: the static header, nothing of the caller.
    let (url, seen) = recorder().await;
    let gw = gateway(
        &url,
        &format!("  headers: {{X-Static: \"${{{}}}\"}}\n", STATIC.0),
    )
    .await;
    let result = call_as(&gw, &caller).await;
    assert_eq!(result["content"][0]["text"], "ok", "{result}");
    let all = seen.lock().unwrap().clone();
    assert!(all.iter().any(|s| s.method == "tools/list"), "{all:?}");
    for request in &all {
        assert_eq!(request.fixed.as_deref(), Some(STATIC.1), "{request:?}");
        assert_eq!(request.authorization, None, "{request:?}");
        assert_eq!(request.tenant, None, "{request:?}");
        assert_eq!(request.other, None, "{request:?}");
    }
    assert_eq!(calls(&seen).len(), 1);

    // Passthrough and one forwarded header, chosen: on the call only.
    let (url, seen) = recorder().await;
    let gw = gateway(
        &url,
        "  auth: {mode: passthrough}\n  forwardHeaders: [x-tenant]\n",
    )
    .await;
    let result = call_as(&gw, &caller).await;
    assert_eq!(result["content"][0]["text"], "ok", "{result}");
    let call = calls(&seen).pop().expect("the call reached the server");
    assert_eq!(call.authorization.as_deref(), Some("Bearer caller-token-1"));
    assert_eq!(call.tenant.as_deref(), Some("acme"));
    assert_eq!(call.other, None);
    let listing: Vec<Seen> = seen
        .lock()
        .unwrap()
        .iter()
        .filter(|s| s.method != "tools/call")
        .cloned()
        .collect();
    assert!(!listing.is_empty());
    for request in listing {
        assert_eq!(
            request.authorization, None,
            "no caller, no credential: {request:?}"
        );
    }
}

/// With `clientCredentials` the gateway's own token lists the server (no
/// caller is there to lend one) and goes with every call.
#[tokio::test]
async fn client_credentials_list_and_call_the_server() {
    set_test_variable(CLIENT_SECRET.0, CLIENT_SECRET.1);
    let (url, seen) = recorder().await;
    let token_url = url.replace("/mcp", "/token");
    let gw = gateway(
        &url,
        &format!(
            "  auth: {{mode: clientCredentials, tokenUrl: \"{token_url}\", clientId: sezzlee, clientSecretEnv: {}}}\n",
            CLIENT_SECRET.0
        ),
    )
    .await;
    let result = call_as(&gw, &[("authorization", "Bearer caller-token-1")]).await;
    assert_eq!(result["content"][0]["text"], "ok", "{result}");
    let all = seen.lock().unwrap().clone();
    assert!(all.iter().any(|s| s.method == "tools/list"), "{all:?}");
    for request in &all {
        assert_eq!(
            request.authorization.as_deref(),
            Some("Bearer svc-token-1"),
            "{request:?}"
        );
    }
}
