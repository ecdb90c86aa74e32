//! The `initialize`-era revisions (2025-03-26, 2025-06-18, 2025-11-25).
//!
//! Served per request: `initialize` negotiates a version and mints no
//! session; every other request stands on its own. These clients have no
//! server-to-client channel here, so `initialize` says `listChanged: false`
//! (only a 2026-07-28 `subscriptions/listen` stream hears of changes).

use super::headers;
use super::{HANDSHAKE_VERSIONS, Reply, results, server_info};
use crate::gateway::Gateway;
use crate::jsonrpc::{ErrorReply, INVALID_PARAMS, Incoming, METHOD_NOT_FOUND, result_body};
use crate::tools;
use crate::visibility::Caller;
use axum::http::{HeaderMap, StatusCode};
use serde_json::{Map, Value};
use sezzlee_protocol::Method;

/// Serves one `initialize`-era message; an error is answered by the caller
/// (`http`), the same way for both eras.
pub async fn serve(
    gateway: &Gateway,
    headers: &HeaderMap,
    message: Incoming,
    caller: Caller,
) -> Result<Reply, ErrorReply> {
    // 2025-06-18 and later send the negotiated version on every request
    // after initialize; one we do not speak is refused (2025-03-26 clients
    // send none).
    if let Ok(Some(version)) = headers::value(headers, headers::PROTOCOL_VERSION)
        && !HANDSHAKE_VERSIONS.contains(&version)
    {
        return Err(super::calls::unsupported_version(
            version,
            &super::supported_versions(),
        ));
    }
    let Some(id) = message.id.clone() else {
        // notifications/initialized, notifications/cancelled, …: nothing to answer.
        return Ok(Reply::Accepted);
    };
    let result = match Method::parse(&message.method) {
        Some(Method::Initialize) => initialize(&message.params)?,
        Some(Method::Ping) => Map::new(),
        Some(Method::ToolsList) => tools_list(gateway),
        Some(Method::ToolsCall) => {
            let result = super::calls::tools_call(gateway, &message.params, caller).await?;
            return Ok(Reply::Tool(id, result));
        }
        Some(Method::ServerDiscover | Method::SubscriptionsListen) | None => {
            return Err(ErrorReply::new(
                StatusCode::OK,
                METHOD_NOT_FOUND,
                format!("Method not found: {}", message.method),
            ));
        }
    };
    Ok(Reply::Json(
        StatusCode::OK,
        result_body(&id, Value::Object(result)),
    ))
}

/// Version negotiation: the client's version if we speak it, else our
/// newest legacy version (the client decides whether to continue).
fn initialize(params: &Value) -> Result<Map<String, Value>, ErrorReply> {
    let requested = params
        .get("protocolVersion")
        .and_then(Value::as_str)
        .ok_or_else(|| {
            ErrorReply::new(
                StatusCode::BAD_REQUEST,
                INVALID_PARAMS,
                "Invalid params: initialize needs params.protocolVersion (a string)",
            )
        })?;
    let version = HANDSHAKE_VERSIONS
        .into_iter()
        .find(|known| *known == requested)
        .unwrap_or(HANDSHAKE_VERSIONS[0]);
    Ok(results::members(&results::InitializeResult {
        protocol_version: version,
        capabilities: results::Capabilities::tools(false),
        server_info: server_info(),
        instructions: tools::INSTRUCTIONS,
    }))
}

fn tools_list(gateway: &Gateway) -> Map<String, Value> {
    let generation = gateway.store.current().generation;
    results::members(&results::ToolsListResult {
        tools: tools::definitions(generation),
        ttl_ms: None,
        cache_scope: None,
    })
}
