//! What goes on the wire for one request: the JSON-RPC body of each era
//! (with the 2026-07-28 `_meta`), and the request metadata headers —
//! `MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name` and the `Mcp-Param-*`
//! headers a tool's `x-mcp-header` annotations ask for — with the Base64
//! sentinel for values a header cannot carry as they are.
//!
//! Pure functions: no I/O, so every rule here is unit tested.

use base64::Engine;
use serde_json::{Map, Value, json};

// The revisions this client speaks and the `_meta` keys, as the gateway
// serves them (one definition: `sezzlee-protocol`).
pub use sezzlee_protocol::meta::{
    CAPABILITIES_KEY, CLIENT_INFO_KEY, SERVER_INFO_KEY, SUBSCRIPTION_KEY, VERSION_KEY,
};
pub use sezzlee_protocol::{ErrorCode, HANDSHAKE_VERSIONS, STATELESS_VERSION};

/// Errors only a 2026-07-28 server answers with (their presence in a
/// `4xx` body identifies one).
pub const HEADER_MISMATCH: ErrorCode = ErrorCode::HEADER_MISMATCH;
pub const UNSUPPORTED_VERSION: ErrorCode = ErrorCode::UNSUPPORTED_PROTOCOL_VERSION;

/// This client's identity.
pub fn client_info() -> Value {
    json!({"name": "sezzlee-client", "version": env!("CARGO_PKG_VERSION")})
}

/// A 2026-07-28 request: `params._meta` carries the version, the client's
/// identity and its (empty) capabilities.
pub fn modern_body(id: &Value, method: &str, params: Map<String, Value>) -> Value {
    let mut params = params;
    let meta = params
        .entry("_meta")
        .or_insert_with(|| Value::Object(Map::new()));
    if !meta.is_object() {
        *meta = Value::Object(Map::new());
    }
    if let Value::Object(meta) = meta {
        meta.insert(VERSION_KEY.to_string(), json!(STATELESS_VERSION));
        meta.insert(CLIENT_INFO_KEY.to_string(), client_info());
        meta.entry(CAPABILITIES_KEY.to_string())
            .or_insert_with(|| json!({}));
    }
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

/// An `initialize`-era request (`params` left out when empty).
pub fn legacy_body(id: &Value, method: &str, params: Map<String, Value>) -> Value {
    if params.is_empty() {
        json!({"jsonrpc": "2.0", "id": id, "method": method})
    } else {
        json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
    }
}

/// A notification (no id).
pub fn notification(method: &str) -> Value {
    json!({"jsonrpc": "2.0", "method": method})
}

/// The `initialize` request of the legacy era at `version`.
pub fn initialize_params(version: &str) -> Map<String, Value> {
    let mut params = Map::new();
    params.insert("protocolVersion".to_string(), json!(version));
    params.insert("capabilities".to_string(), json!({}));
    params.insert("clientInfo".to_string(), client_info());
    params
}

/// The standard request metadata headers of a modern request.
pub fn modern_headers(method: &str, params: &Map<String, Value>) -> Vec<(String, String)> {
    let mut headers = vec![
        (
            "MCP-Protocol-Version".to_string(),
            STATELESS_VERSION.to_string(),
        ),
        ("Mcp-Method".to_string(), method.to_string()),
    ];
    if let Some(key) = sezzlee_protocol::name_param(method) {
        let name = params.get(key).and_then(Value::as_str).unwrap_or_default();
        headers.push(("Mcp-Name".to_string(), encode_header_value(name)));
    }
    headers
}

/// A header value as the transport must send it: as is when it is plain
/// visible ASCII (spaces inside allowed), else `=?base64?…?=` of its UTF-8.
/// A plain value that looks like the sentinel is encoded too.
pub fn encode_header_value(value: &str) -> String {
    let visible = value
        .bytes()
        .all(|b| b == b'\t' || (0x20..=0x7e).contains(&b));
    let padded = value.starts_with([' ', '\t']) || value.ends_with([' ', '\t']);
    let sentinel_like = value.starts_with("=?base64?") && value.ends_with("?=");
    let plain = visible && !padded && !sentinel_like;
    if plain {
        value.to_string()
    } else {
        format!(
            "=?base64?{}?=",
            base64::engine::general_purpose::STANDARD.encode(value.as_bytes())
        )
    }
}

/// One `x-mcp-header` annotation: the property path from the schema root
/// and the header's name part (`Mcp-Param-{header}`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeaderParam {
    pub path: Vec<String>,
    pub header: String,
}

/// The `x-mcp-header` annotations of an `inputSchema`, checked against the
/// transport's rules: a token name, unique (case-insensitively), on a
/// primitive (`string`, `integer`, `boolean`) property reachable from the
/// root through `properties` alone. Any violation makes the whole tool
/// definition invalid (the caller leaves the tool out, with a warning).
pub fn header_params(input_schema: &Value) -> Result<Vec<HeaderParam>, String> {
    let mut found = Vec::new();
    collect_reachable(input_schema, &mut Vec::new(), &mut found)?;
    let total = count_annotations(input_schema, false);
    if total != found.len() {
        return Err(
            "an x-mcp-header annotation is not reachable from the schema root through `properties` alone"
                .to_string(),
        );
    }
    let mut seen = std::collections::HashSet::new();
    for param in &found {
        if !seen.insert(param.header.to_ascii_lowercase()) {
            return Err(format!(
                "x-mcp-header '{}' is used more than once",
                param.header
            ));
        }
    }
    Ok(found)
}

fn collect_reachable(
    schema: &Value,
    path: &mut Vec<String>,
    found: &mut Vec<HeaderParam>,
) -> Result<(), String> {
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
        return Ok(());
    };
    for (name, property) in properties {
        path.push(name.clone());
        if let Some(header) = property.get("x-mcp-header") {
            let header = header
                .as_str()
                .ok_or_else(|| format!("x-mcp-header of '{}' is not a string", path.join(".")))?;
            if header.is_empty() || !header.bytes().all(is_tchar) {
                return Err(format!(
                    "x-mcp-header '{header}' of '{}' is not an HTTP token",
                    path.join(".")
                ));
            }
            if !is_primitive(property) {
                return Err(format!(
                    "x-mcp-header '{header}' is on '{}', which is not a string, integer or boolean",
                    path.join(".")
                ));
            }
            found.push(HeaderParam {
                path: path.clone(),
                header: header.to_string(),
            });
        }
        collect_reachable(property, path, found)?;
        path.pop();
    }
    Ok(())
}

/// RFC 9110 `tchar`.
fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

/// `type` is one of string/integer/boolean (optionally with `null`).
fn is_primitive(property: &Value) -> bool {
    let primitive = |t: &str| matches!(t, "string" | "integer" | "boolean");
    match property.get("type") {
        Some(Value::String(t)) => primitive(t),
        Some(Value::Array(types)) => {
            let names: Vec<&str> = types.iter().filter_map(Value::as_str).collect();
            names.len() == types.len()
                && names.iter().filter(|t| **t != "null").count() == 1
                && names.iter().all(|t| *t == "null" || primitive(t))
        }
        _ => false,
    }
}

/// Every `x-mcp-header` keyword anywhere in the schema (property names in
/// name maps such as `properties` do not count).
fn count_annotations(value: &Value, is_name_map: bool) -> usize {
    match value {
        Value::Object(map) => map
            .iter()
            .map(|(key, child)| {
                let here = usize::from(!is_name_map && key == "x-mcp-header");
                let child_is_map = !is_name_map
                    && matches!(
                        key.as_str(),
                        "properties"
                            | "patternProperties"
                            | "$defs"
                            | "definitions"
                            | "dependentSchemas"
                    );
                here + count_annotations(child, child_is_map)
            })
            .sum(),
        Value::Array(items) => items
            .iter()
            .map(|item| count_annotations(item, false))
            .sum(),
        _ => 0,
    }
}

/// Largest integer a JavaScript number holds exactly.
const MAX_SAFE_INTEGER: i64 = (1 << 53) - 1;

/// The `Mcp-Param-*` headers for `arguments`: one per annotated property
/// that has a (non-null) value, encoded per the transport's rules.
pub fn mirror(params: &[HeaderParam], arguments: &Value) -> Result<Vec<(String, String)>, String> {
    let mut headers = Vec::new();
    for param in params {
        let mut value = Some(arguments);
        for key in &param.path {
            value = value.and_then(|v| v.get(key));
        }
        let text = match value {
            None | Some(Value::Null) => continue,
            Some(Value::String(s)) => s.clone(),
            Some(Value::Bool(b)) => b.to_string(),
            Some(Value::Number(n)) => {
                let integer = n.as_i64().or_else(|| {
                    n.as_f64()
                        .filter(|f| f.fract() == 0.0 && f.abs() <= MAX_SAFE_INTEGER as f64)
                        .map(|f| f as i64)
                });
                match integer {
                    Some(i) if i.abs() <= MAX_SAFE_INTEGER => i.to_string(),
                    _ => {
                        return Err(format!(
                            "argument '{}' (header Mcp-Param-{}) must be an integer within ±(2^53-1), not {n}",
                            param.path.join("."),
                            param.header
                        ));
                    }
                }
            }
            Some(other) => {
                return Err(format!(
                    "argument '{}' (header Mcp-Param-{}) must be a string, integer or boolean, not {}",
                    param.path.join("."),
                    param.header,
                    sezzlee_json::kind_of(other)
                ));
            }
        };
        headers.push((
            format!("Mcp-Param-{}", param.header),
            encode_header_value(&text),
        ));
    }
    Ok(headers)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sentinel_encoding_follows_the_transport_table() {
        assert_eq!(encode_header_value("us-west1"), "us-west1");
        assert_eq!(encode_header_value("a b"), "a b");
        assert_eq!(
            encode_header_value("Hello, 世界"),
            "=?base64?SGVsbG8sIOS4lueVjA==?="
        );
        assert_eq!(encode_header_value(" padded "), "=?base64?IHBhZGRlZCA=?=");
        assert_eq!(
            encode_header_value("line1\nline2"),
            "=?base64?bGluZTEKbGluZTI=?="
        );
        assert_eq!(
            encode_header_value("=?base64?literal?="),
            "=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?="
        );
    }

    #[test]
    fn modern_requests_carry_meta_and_headers() {
        let mut params = Map::new();
        params.insert("name".to_string(), json!("café"));
        let body = modern_body(&json!(7), "tools/call", params.clone());
        assert_eq!(body["params"]["_meta"][VERSION_KEY], STATELESS_VERSION);
        assert!(body["params"]["_meta"][CAPABILITIES_KEY].is_object());
        assert_eq!(
            body["params"]["_meta"][CLIENT_INFO_KEY]["name"],
            "sezzlee-client"
        );
        let headers = modern_headers("tools/call", &params);
        assert_eq!(
            headers,
            vec![
                ("MCP-Protocol-Version".to_string(), "2026-07-28".to_string()),
                ("Mcp-Method".to_string(), "tools/call".to_string()),
                ("Mcp-Name".to_string(), "=?base64?Y2Fmw6k=?=".to_string()),
            ]
        );
        assert_eq!(modern_headers("tools/list", &Map::new()).len(), 2);
    }

    #[test]
    fn header_params_are_found_and_mirrored() {
        let schema = json!({
            "type": "object",
            "properties": {
                "region": {"type": "string", "x-mcp-header": "Region"},
                "n": {"type": "integer", "x-mcp-header": "N"},
                "flag": {"type": ["boolean", "null"], "x-mcp-header": "Flag"},
                "nested": {"type": "object", "properties": {"tenant": {"type": "string", "x-mcp-header": "Tenant"}}},
                "x-mcp-header": {"type": "string"},
                "query": {"type": "string"}
            }
        });
        let params = header_params(&schema).unwrap();
        assert_eq!(params.len(), 4);
        let headers = mirror(
            &params,
            &json!({"region": "Zürich", "n": 42.0, "flag": null, "nested": {"tenant": "acme"}, "query": "x"}),
        )
        .unwrap();
        assert_eq!(
            headers,
            vec![
                (
                    "Mcp-Param-Region".to_string(),
                    "=?base64?WsO8cmljaA==?=".to_string()
                ),
                ("Mcp-Param-N".to_string(), "42".to_string()),
                ("Mcp-Param-Tenant".to_string(), "acme".to_string()),
            ]
        );
        assert!(mirror(&params, &json!({"n": 1.5})).is_err());
        assert!(mirror(&params, &json!({"region": ["a"]})).is_err());
        assert!(mirror(&params, &json!({"n": 9007199254740993_i64})).is_err());
    }

    #[test]
    fn invalid_annotations_invalidate_the_tool() {
        let bad = [
            json!({"properties": {"a": {"type": "number", "x-mcp-header": "A"}}}),
            json!({"properties": {"a": {"type": "string", "x-mcp-header": ""}}}),
            json!({"properties": {"a": {"type": "string", "x-mcp-header": "A B"}}}),
            json!({"properties": {"a": {"type": "string", "x-mcp-header": "A"}, "b": {"type": "string", "x-mcp-header": "a"}}}),
            json!({"properties": {"a": {"type": "array", "items": {"type": "string", "x-mcp-header": "A"}}}}),
            json!({"properties": {"a": {"anyOf": [{"type": "string", "x-mcp-header": "A"}]}}}),
            json!({"$defs": {"d": {"type": "string", "x-mcp-header": "D"}}, "properties": {"a": {"$ref": "#/$defs/d"}}}),
        ];
        for schema in bad {
            assert!(header_params(&schema).is_err(), "{schema}");
        }
        assert_eq!(header_params(&json!({"type": "object"})).unwrap(), vec![]);
    }
}
