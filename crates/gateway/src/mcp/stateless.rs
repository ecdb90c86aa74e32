//! Revision 2026-07-28: stateless requests with per-request `_meta`.
//!
//! Every request declares its version and capabilities; the headers that
//! mirror the body are checked against it; every result carries
//! `resultType` and the server's identity. No handshake, no session.

use super::headers::{self, decode_sentinel};
use super::{Reply, STATELESS_VERSION, results, server_info};
use crate::gateway::Gateway;
use crate::jsonrpc::{
    ErrorReply, HEADER_MISMATCH, INVALID_PARAMS, Incoming, METHOD_NOT_FOUND, result_body,
};
use crate::tools;
use crate::visibility::Caller;
use axum::http::{HeaderMap, StatusCode};
use serde_json::{Map, Value, json};
use sezzlee_protocol::Method;

pub use sezzlee_protocol::meta::{CAPABILITIES_KEY, SERVER_INFO_KEY, VERSION_KEY};

/// How long clients may cache `server/discover` (it changes only with a
/// new build) and `tools/list` (three fixed definitions; only the
/// generation stamp moves, and listeners are told when it does).
pub const DISCOVER_TTL_MS: u64 = 3_600_000;
pub const TOOLS_LIST_TTL_MS: u64 = 60_000;

/// Methods an earlier revision had and this one removed.
const REMOVED: [&str; 5] = [
    Method::Initialize.as_str(),
    Method::Ping.as_str(),
    "logging/setLevel",
    "resources/subscribe",
    "resources/unsubscribe",
];

/// Serves one 2026-07-28 message; an error is answered by the caller
/// (`http`), the same way for both eras.
pub async fn serve(
    gateway: &Gateway,
    headers: &HeaderMap,
    message: Incoming,
    caller: Caller,
) -> Result<Reply, ErrorReply> {
    let meta = message.params.get("_meta").unwrap_or(&Value::Null);
    let version = check_version(meta, headers)?;
    if !meta.get(CAPABILITIES_KEY).is_some_and(Value::is_object) {
        return Err(invalid_params(format!(
            "Invalid params: _meta must carry {CAPABILITIES_KEY} (an object) on every request"
        )));
    }
    check_headers(headers, &message, version)?;
    let Some(id) = message.id.clone() else {
        // This revision defines no client notifications over HTTP; accept and ignore.
        return Ok(Reply::Accepted);
    };
    let result = match Method::parse(&message.method) {
        Some(Method::ServerDiscover) => discover(),
        Some(Method::ToolsList) => tools_list(gateway),
        Some(Method::ToolsCall) => {
            let mut result = super::calls::tools_call(gateway, &message.params, caller).await?;
            for (key, value) in completion(None) {
                result.insert(key, value);
            }
            return Ok(Reply::Tool(id, result));
        }
        Some(Method::SubscriptionsListen) => {
            return super::listen::open(gateway, id, &message.params, &caller).map(Reply::Listen);
        }
        Some(Method::Initialize | Method::Ping) | None => {
            let method = message.method.as_str();
            let why = if REMOVED.contains(&method) {
                format!(
                    "Method not found: {method} was removed in protocol revision {STATELESS_VERSION}"
                )
            } else {
                format!("Method not found: {method}")
            };
            return Err(ErrorReply::new(
                StatusCode::NOT_FOUND,
                METHOD_NOT_FOUND,
                why,
            ));
        }
    };
    Ok(Reply::Json(
        StatusCode::OK,
        result_body(&id, complete(result)),
    ))
}

/// The requested version, if this server speaks it. A header that
/// disagrees with the body is a mismatch before it is anything else.
fn check_version<'m>(meta: &'m Value, headers: &HeaderMap) -> Result<&'m str, ErrorReply> {
    let Some(requested) = meta.get(VERSION_KEY) else {
        return Err(invalid_params(format!(
            "Invalid params: _meta must carry {VERSION_KEY}"
        )));
    };
    let Some(requested) = requested.as_str() else {
        return Err(invalid_params(format!(
            "Invalid params: {VERSION_KEY} must be a string"
        )));
    };
    if let Ok(Some(header)) = headers::value(headers, headers::PROTOCOL_VERSION)
        && header != requested
    {
        return Err(mismatch(format!(
            "MCP-Protocol-Version header value '{header}' does not match body value '{requested}'"
        )));
    }
    if requested != STATELESS_VERSION {
        return Err(super::calls::unsupported_version(
            requested,
            &[STATELESS_VERSION],
        ));
    }
    Ok(requested)
}

fn invalid_params(message: String) -> ErrorReply {
    ErrorReply::new(StatusCode::BAD_REQUEST, INVALID_PARAMS, message)
}

fn mismatch(message: String) -> ErrorReply {
    ErrorReply::new(
        StatusCode::BAD_REQUEST,
        HEADER_MISMATCH,
        format!("Header mismatch: {message}"),
    )
}

/// `MCP-Protocol-Version`, `Mcp-Method` and (for calls naming a target)
/// `Mcp-Name` must be present and equal to the body.
fn check_headers(headers: &HeaderMap, message: &Incoming, version: &str) -> Result<(), ErrorReply> {
    let protocol = headers::value(headers, headers::PROTOCOL_VERSION).map_err(mismatch)?;
    match protocol {
        None => {
            return Err(mismatch(
                "the MCP-Protocol-Version header is required".to_string(),
            ));
        }
        Some(value) if value != version => {
            return Err(mismatch(format!(
                "MCP-Protocol-Version header value '{value}' does not match body value '{version}'"
            )));
        }
        Some(_) => {}
    }
    if message.id.is_none() {
        return Ok(());
    }
    match headers::value(headers, headers::METHOD).map_err(mismatch)? {
        None => return Err(mismatch("the Mcp-Method header is required".to_string())),
        Some(value) if value != message.method => {
            return Err(mismatch(format!(
                "Mcp-Method header value '{value}' does not match body value '{}'",
                message.method
            )));
        }
        Some(_) => {}
    }
    let Some(param) = sezzlee_protocol::name_param(&message.method) else {
        return Ok(());
    };
    let named = message.params.get(param);
    let body_name = named.and_then(Value::as_str).unwrap_or_default();
    match headers::value(headers, headers::NAME).map_err(mismatch)? {
        None => Err(mismatch("the Mcp-Name header is required".to_string())),
        Some(raw) => {
            let decoded =
                decode_sentinel(raw).map_err(|why| mismatch(format!("Mcp-Name header: {why}")))?;
            if decoded == body_name {
                Ok(())
            } else {
                Err(mismatch(format!(
                    "Mcp-Name header value '{decoded}' does not match body value '{body_name}'"
                )))
            }
        }
    }
}

/// Adds `resultType` and the server's identity to a result.
fn complete(mut result: Map<String, Value>) -> Value {
    let meta = result.remove("_meta");
    for (key, value) in completion(meta) {
        result.insert(key.to_string(), value);
    }
    Value::Object(result)
}

/// `serverInfo` as a value, built once.
static SERVER_INFO: std::sync::LazyLock<Value> =
    std::sync::LazyLock::new(|| results::value(&server_info()));

/// What every result ends with: `resultType`, then `_meta` (the result's
/// own, if any) with the server's identity.
fn completion(meta: Option<Value>) -> [(&'static str, Value); 2] {
    let mut meta = match meta {
        Some(Value::Object(meta)) => meta,
        _ => Map::new(),
    };
    meta.insert(SERVER_INFO_KEY.to_string(), SERVER_INFO.clone());
    [
        ("resultType", json!("complete")),
        ("_meta", Value::Object(meta)),
    ]
}

fn discover() -> Map<String, Value> {
    results::members(&results::DiscoverResult {
        supported_versions: [STATELESS_VERSION],
        capabilities: results::Capabilities::tools(true),
        instructions: tools::INSTRUCTIONS,
        ttl_ms: DISCOVER_TTL_MS,
        cache_scope: "public",
    })
}

fn tools_list(gateway: &Gateway) -> Map<String, Value> {
    let generation = gateway.store.current().generation;
    results::members(&results::ToolsListResult {
        tools: tools::definitions(generation),
        ttl_ms: Some(TOOLS_LIST_TTL_MS),
        cache_scope: Some("public"),
    })
}
