//! The fixed-shape results the endpoint sends — `server/discover`,
//! `initialize` and `tools/list` — as types, so their members and order
//! are declared once and checked by the compiler instead of assembled key
//! by key. The era modules add what every result of theirs ends with.

use serde::Serialize;
use serde_json::{Map, Value};

/// `serverInfo` (`Implementation`): who answers.
#[derive(Debug, Clone, Serialize)]
pub struct ServerInfo {
    pub name: &'static str,
    pub version: &'static str,
}

/// `capabilities`: only tools, and whether their list announces changes.
#[derive(Debug, Clone, Serialize)]
pub struct Capabilities {
    pub tools: ToolsCapability,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolsCapability {
    pub list_changed: bool,
}

impl Capabilities {
    /// Tools, announcing list changes or not.
    pub fn tools(list_changed: bool) -> Capabilities {
        Capabilities {
            tools: ToolsCapability { list_changed },
        }
    }
}

/// `DiscoverResult` of 2026-07-28 (before `resultType` and `_meta`).
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DiscoverResult {
    pub supported_versions: [&'static str; 1],
    pub capabilities: Capabilities,
    pub instructions: &'static str,
    pub ttl_ms: u64,
    pub cache_scope: &'static str,
}

/// `InitializeResult` of the `initialize` era.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct InitializeResult {
    pub protocol_version: &'static str,
    pub capabilities: Capabilities,
    pub server_info: ServerInfo,
    pub instructions: &'static str,
}

/// `ListToolsResult`: the three definitions, and in 2026-07-28 how long a
/// client may keep them.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolsListResult {
    pub tools: Vec<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ttl_ms: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cache_scope: Option<&'static str>,
}

/// A result's members, in declaration order, for the era to complete.
/// These types hold only strings, numbers and JSON values, whose
/// serialisation cannot fail; an empty object would be the answer if it did.
pub fn members<T: Serialize>(result: &T) -> Map<String, Value> {
    match serde_json::to_value(result) {
        Ok(Value::Object(members)) => members,
        _ => Map::new(),
    }
}

/// A result as a JSON value.
pub fn value<T: Serialize>(result: &T) -> Value {
    Value::Object(members(result))
}
