//! JSON HTTP responses: one writer for every route that answers with a
//! JSON body (the MCP endpoint, health, status), so they agree on bytes and
//! headers.

use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::Value;

/// A JSON response with its status. (Tool results, the large bodies, are
/// written around their literal by `mcp::http`; these are small: one allocation of 2 KiB
/// holds `server/discover` and most errors, rather than a doubling series
/// of them.)
pub fn json_response(status: StatusCode, body: &Value) -> Response {
    let mut bytes = Vec::with_capacity(2048);
    if serde_json::to_writer(&mut bytes, body).is_err() {
        bytes.clear();
    }
    (status, [(header::CONTENT_TYPE, "application/json")], bytes).into_response()
}
