//! What both eras answer alike: `tools/call` of one of the three tools,
//! and the refusal of a protocol version the endpoint does not speak.
//! Shared here so neither era's module reaches into the other.

use super::{CallToolResult, call_tool_result};
use crate::gateway::Gateway;
use crate::jsonrpc::{ErrorReply, INVALID_PARAMS, UNSUPPORTED_PROTOCOL_VERSION};
use crate::tools::{self, ToolName};
use crate::visibility::Caller;
use axum::http::StatusCode;
use serde_json::{Map, Value, json};

/// `-32022` listing what this server speaks.
/// `supported` lists what the client may retry with on the same wire: the
/// per-request wire serves only [`STATELESS_VERSION`] (legacy versions are
/// reached through `initialize`, and listing them here would make a client
/// retry in a loop).
pub fn unsupported_version(requested: &str, supported: &[&str]) -> ErrorReply {
    ErrorReply::new(
        StatusCode::BAD_REQUEST,
        UNSUPPORTED_PROTOCOL_VERSION,
        format!("Unsupported protocol version: {requested}"),
    )
    .with_data(json!({"supported": supported, "requested": requested}))
}

/// `tools/call` for either era: the name must be one of the three tools.
pub async fn tools_call(
    gateway: &Gateway,
    params: &Value,
    caller: Caller,
) -> Result<CallToolResult, ErrorReply> {
    let name = params
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let Some(tool) = ToolName::parse(name) else {
        return Err(ErrorReply::new(
            StatusCode::OK,
            INVALID_PARAMS,
            format!(
                "Unknown tool: '{name}'. This server has search_tools, load_tool and invoke_tool."
            ),
        ));
    };
    let empty = Value::Object(Map::new());
    let arguments = match params.get("arguments") {
        None | Some(Value::Null) => &empty,
        Some(arguments @ Value::Object(_)) => arguments,
        Some(_) => {
            return Err(ErrorReply::new(
                StatusCode::OK,
                INVALID_PARAMS,
                "Invalid params: tools/call arguments must be an object",
            ));
        }
    };
    let served = gateway.store.current();
    let context = gateway.tool_context(&served, &caller);
    let answer = tools::call(&context, tool, arguments).await;
    Ok(call_tool_result(answer))
}
