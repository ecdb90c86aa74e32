//! The HTTP handlers: `POST /mcp` (both eras), 405 for GET/DELETE, Origin
//! checks, and the health endpoints (routed by `router.rs`, which
//! also applies the body size limit).
//!
//! Handlers are small: they check what HTTP must check, parse the JSON-RPC
//! message, pick the era and hand over to [`super::stateless`] or
//! [`super::handshake`].

use super::{CallToolResult, Reply, handshake, stateless};
use crate::gateway::Gateway;
use crate::jsonrpc::{ErrorReply, INTERNAL_ERROR, INVALID_REQUEST, PARSE_ERROR, parse_message};
use crate::reply::json_response;
use axum::body::{Body, Bytes};
use axum::extract::rejection::BytesRejection;
use axum::extract::{ConnectInfo, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use std::net::SocketAddr;
use std::sync::Arc;
use tracing::Instrument;

pub(crate) async fn post_mcp(
    State(gateway): State<Arc<Gateway>>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    if let Err(ForbiddenOrigin(origin)) = check_origin(&gateway, &headers) {
        return json_response(
            StatusCode::FORBIDDEN,
            &ErrorReply::new(
                StatusCode::FORBIDDEN,
                INVALID_REQUEST,
                format!("Forbidden: Origin '{origin}' is not allowed"),
            )
            .body(None),
        );
    }
    let body = match body {
        Ok(body) => body,
        Err(rejection) => {
            let status = rejection.status();
            let message = if status == StatusCode::PAYLOAD_TOO_LARGE {
                format!(
                    "Request body larger than the limit of {} bytes",
                    gateway.settings.max_body_bytes
                )
            } else {
                format!("Unreadable request body: {rejection}")
            };
            return json_response(
                status,
                &ErrorReply::new(status, INVALID_REQUEST, message).body(None),
            );
        }
    };
    let value: Value = match serde_json::from_slice(&body) {
        Ok(value) => value,
        Err(err) => {
            let error = ErrorReply::new(
                StatusCode::BAD_REQUEST,
                PARSE_ERROR,
                format!("Parse error: {err}"),
            );
            return json_response(StatusCode::BAD_REQUEST, &error.body(None));
        }
    };
    let message = match parse_message(value) {
        Ok(message) => message,
        Err(rejected) => {
            let (id, error) = *rejected;
            return json_response(error.status, &error.body(id.as_ref()));
        }
    };
    let span = tracing::info_span!(
        "mcp.request",
        mcp.method.name = %message.method,
        gen_ai.tool.name = tracing::field::Empty,
    );
    if let Some(tool) = message.params.get("name").and_then(Value::as_str)
        && message.method == sezzlee_protocol::Method::ToolsCall.as_str()
    {
        span.record("gen_ai.tool.name", tool);
    }
    crate::telemetry::adopt_parent(&span, &headers);
    serve_message(gateway, peer, headers, message)
        .instrument(span)
        .await
}

/// A parsed message from a caller: identified, refused when `auth.required`
/// says so, then served in its era.
async fn serve_message(
    gateway: Arc<Gateway>,
    peer: SocketAddr,
    headers: HeaderMap,
    message: crate::jsonrpc::Incoming,
) -> Response {
    let mut caller = gateway.auth.caller(&headers).await;
    if let Some(refusal) = gateway.auth.refusal(&caller, &headers) {
        return crate::auth::resource::challenge(&gateway.resource(), &headers, refusal);
    }
    caller.address = Some(peer.ip());
    caller.headers = headers.clone();
    let id = message.id.clone();
    let served = if is_stateless_era(&headers, &message.params) {
        stateless::serve(&gateway, &headers, message, caller).await
    } else {
        handshake::serve(&gateway, &headers, message, caller).await
    };
    let reply = served.unwrap_or_else(|err| Reply::Json(err.status, err.body(id.as_ref())));
    match reply {
        Reply::Json(status, body) => json_response(status, &body),
        Reply::Tool(id, result) => tool_response(&id, &result),
        Reply::Accepted => StatusCode::ACCEPTED.into_response(),
        Reply::Listen(subscription) => sse_response(subscription),
    }
}

/// Modern when the body carries the per-request version, or when the
/// header names a version that is not one of the legacy ones (a modern
/// client that forgot `_meta` learns what is missing).
fn is_stateless_era(headers: &HeaderMap, params: &Value) -> bool {
    if params
        .get("_meta")
        .and_then(|meta| meta.get(stateless::VERSION_KEY))
        .is_some()
    {
        return true;
    }
    matches!(
        super::headers::value(headers, super::headers::PROTOCOL_VERSION),
        Ok(Some(version)) if version == super::STATELESS_VERSION
    )
}

/// An `Origin` the gateway does not allow, as shown in the refusal.
#[derive(Debug, Clone, PartialEq, Eq)]
struct ForbiddenOrigin(String);

/// An `Origin` header, when present, must be an allowed origin (any port).
fn check_origin(gateway: &Gateway, headers: &HeaderMap) -> Result<(), ForbiddenOrigin> {
    let Some(origin) = headers.get(header::ORIGIN) else {
        return Ok(());
    };
    let origin = origin
        .to_str()
        .map_err(|_| ForbiddenOrigin("(not ASCII)".to_string()))?;
    let allowed = &gateway.settings.allowed_origins;
    if allowed.iter().any(|a| a == "*") {
        return Ok(());
    }
    let without_port = strip_port(origin);
    if allowed
        .iter()
        .any(|a| a.eq_ignore_ascii_case(origin) || a.eq_ignore_ascii_case(without_port))
    {
        Ok(())
    } else {
        Err(ForbiddenOrigin(origin.to_string()))
    }
}

/// `http://localhost:3000` → `http://localhost` (IPv6 brackets kept).
fn strip_port(origin: &str) -> &str {
    let Some(scheme_end) = origin.find("://") else {
        return origin;
    };
    let host_start = scheme_end + 3;
    let host = &origin[host_start..];
    let search_from = if host.starts_with('[') {
        host.find(']').map_or(0, |i| i + 1)
    } else {
        0
    };
    match host[search_from..].rfind(':') {
        Some(colon) => &origin[..host_start + search_from + colon],
        None => origin,
    }
}

pub(crate) async fn method_not_allowed() -> Response {
    let mut response = json_response(
        StatusCode::METHOD_NOT_ALLOWED,
        &ErrorReply::new(
            StatusCode::METHOD_NOT_ALLOWED,
            INVALID_REQUEST,
            "Method not allowed: this endpoint takes POST only (no sessions, no GET stream)",
        )
        .body(None),
    );
    response
        .headers_mut()
        .insert(header::ALLOW, HeaderValue::from_static("POST"));
    response
}

pub(crate) async fn healthz() -> Response {
    json_response(StatusCode::OK, &json!({"status": "ok"}))
}

pub(crate) async fn readyz(State(gateway): State<Arc<Gateway>>) -> Response {
    if gateway.shutdown.has_begun() {
        return json_response(
            StatusCode::SERVICE_UNAVAILABLE,
            &json!({"status": "shutting down"}),
        );
    }
    json_response(StatusCode::OK, &json!({"status": "ready"}))
}

/// A `tools/call` response: the result's text block is copied in as the
/// escaped text it already is.
fn tool_response(id: &Value, result: &CallToolResult) -> Response {
    let mut bytes = Vec::with_capacity(result.response_len());
    if let Err(err) = result.write_response(id, &mut bytes) {
        let error = ErrorReply::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            INTERNAL_ERROR,
            format!("Internal error: the result could not be written: {err}"),
        );
        return json_response(error.status, &error.body(Some(id)));
    }
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, "application/json")],
        bytes,
    )
        .into_response()
}

pub(crate) fn sse_response(subscription: super::listen::Subscription) -> Response {
    let mut response = Response::new(Body::from_stream(subscription.into_stream()));
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    headers.insert("x-accel-buffering", HeaderValue::from_static("no"));
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ports_are_stripped_from_origins() {
        assert_eq!(strip_port("http://localhost:3000"), "http://localhost");
        assert_eq!(strip_port("http://localhost"), "http://localhost");
        assert_eq!(strip_port("http://[::1]:8080"), "http://[::1]");
        assert_eq!(strip_port("http://[::1]"), "http://[::1]");
        assert_eq!(strip_port("null"), "null");
    }
}
