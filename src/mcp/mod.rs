//! MCP over Streamable HTTP: both protocol eras on one stateless endpoint.
//!
//! A request carrying `io.modelcontextprotocol/protocolVersion` in
//! `params._meta` is served per revision 2026-07-28 ([`modern`]); anything
//! else is served per the `initialize`-era revisions ([`legacy`]), each
//! request on its own. This module knows nothing about OpenAPI: it turns
//! requests into calls of the three tools and answers into messages.

pub mod headers;
pub mod http;
pub mod jsonrpc;
pub mod legacy;
pub mod listen;
pub mod modern;

use crate::tools::ToolAnswer;
use axum::http::StatusCode;
use serde_json::{Value, json};

/// The stateless revision.
pub const MODERN_VERSION: &str = "2026-07-28";
/// The `initialize`-era revisions served, newest first.
pub const LEGACY_VERSIONS: [&str; 3] = ["2025-11-25", "2025-06-18", "2025-03-26"];

/// Every version the endpoint speaks, newest first.
pub fn supported_versions() -> Vec<&'static str> {
    std::iter::once(MODERN_VERSION)
        .chain(LEGACY_VERSIONS)
        .collect()
}

/// `serverInfo` of this build.
pub fn server_info() -> Value {
    json!({"name": "sezzlee", "version": env!("CARGO_PKG_VERSION")})
}

/// What the endpoint answers to one POST.
pub enum Reply {
    /// A JSON body with its status.
    Json(StatusCode, Value),
    /// `202 Accepted`, no body (notifications).
    Accepted,
    /// A `subscriptions/listen` SSE stream.
    Listen(listen::Subscription),
}

/// A `CallToolResult`: the answer as JSON text in one content block,
/// `isError` only on failure.
pub fn call_tool_result(answer: ToolAnswer) -> serde_json::Map<String, Value> {
    let mut result = serde_json::Map::new();
    let is_error = answer.is_error();
    result.insert(
        "content".to_string(),
        json!([{"type": "text", "text": answer.into_text()}]),
    );
    if is_error {
        result.insert("isError".to_string(), json!(true));
    }
    result
}
