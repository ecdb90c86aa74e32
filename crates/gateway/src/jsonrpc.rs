//! JSON-RPC 2.0 framing: request parsing, error codes, response bodies.
//!
//! A protocol problem is always a JSON-RPC error with the HTTP status the
//! transport prescribes; it is never confused with a tool failure, which
//! is a successful response carrying `isError: true`.

use axum::http::StatusCode;
use serde_json::{Map, Value, json};

pub use sezzlee_protocol::ErrorCode;

pub const PARSE_ERROR: ErrorCode = ErrorCode::PARSE_ERROR;
pub const INVALID_REQUEST: ErrorCode = ErrorCode::INVALID_REQUEST;
pub const METHOD_NOT_FOUND: ErrorCode = ErrorCode::METHOD_NOT_FOUND;
pub const INVALID_PARAMS: ErrorCode = ErrorCode::INVALID_PARAMS;
pub const INTERNAL_ERROR: ErrorCode = ErrorCode::INTERNAL_ERROR;
pub const HEADER_MISMATCH: ErrorCode = ErrorCode::HEADER_MISMATCH;
pub const UNSUPPORTED_PROTOCOL_VERSION: ErrorCode = ErrorCode::UNSUPPORTED_PROTOCOL_VERSION;

/// A JSON-RPC error together with the HTTP status it travels with.
#[derive(Debug, Clone, PartialEq)]
pub struct ErrorReply {
    pub status: StatusCode,
    pub code: ErrorCode,
    pub message: String,
    pub data: Option<Box<Value>>,
}

impl ErrorReply {
    pub fn new(status: StatusCode, code: ErrorCode, message: impl Into<String>) -> ErrorReply {
        ErrorReply {
            status,
            code,
            message: message.into(),
            data: None,
        }
    }

    pub fn with_data(mut self, data: Value) -> ErrorReply {
        self.data = Some(Box::new(data));
        self
    }

    /// The response body; `id` is left out when it could not be read.
    pub fn body(&self, id: Option<&Value>) -> Value {
        let mut error = Map::new();
        error.insert("code".to_string(), json!(self.code.value()));
        error.insert("message".to_string(), json!(self.message));
        if let Some(data) = &self.data {
            error.insert("data".to_string(), (**data).clone());
        }
        let mut body = Map::new();
        body.insert("jsonrpc".to_string(), json!("2.0"));
        if let Some(id) = id {
            body.insert("id".to_string(), id.clone());
        }
        body.insert("error".to_string(), Value::Object(error));
        Value::Object(body)
    }
}

/// A successful response body.
pub fn result_body(id: &Value, result: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "result": result})
}

/// One incoming JSON-RPC message.
#[derive(Debug, Clone, PartialEq)]
pub struct Incoming {
    /// `None` for notifications.
    pub id: Option<Value>,
    pub method: String,
    pub params: Value,
}

/// Reads a request or notification; anything else is `-32600`.
pub fn parse_message(value: Value) -> Result<Incoming, Box<(Option<Value>, ErrorReply)>> {
    parse(value).map_err(Box::new)
}

fn parse(value: Value) -> Result<Incoming, (Option<Value>, ErrorReply)> {
    let invalid =
        |message: &str| ErrorReply::new(StatusCode::BAD_REQUEST, INVALID_REQUEST, message);
    let Value::Object(mut map) = value else {
        let message = if value.is_array() {
            "Invalid request: batches are not supported; send one JSON-RPC message per POST"
        } else {
            "Invalid request: the body must be a JSON-RPC object"
        };
        return Err((None, invalid(message)));
    };
    let id = match map.remove("id") {
        None => None,
        Some(id @ Value::String(_)) => Some(id),
        // RequestId is `string | integer` in every MCP revision: a
        // fractional id would be echoed into a response no client's
        // schema accepts.
        Some(Value::Number(n)) if is_integer(&n) => Some(Value::Number(n)),
        Some(_) => {
            return Err((
                None,
                invalid("Invalid request: id must be a string or an integer"),
            ));
        }
    };
    if map.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Err((id, invalid("Invalid request: jsonrpc must be \"2.0\"")));
    }
    let method = match map.remove("method") {
        Some(Value::String(method)) => method,
        _ if map.contains_key("result") || map.contains_key("error") => {
            return Err((
                id,
                invalid(
                    "Invalid request: the server accepts requests and notifications, not responses",
                ),
            ));
        }
        _ => return Err((id, invalid("Invalid request: method must be a string"))),
    };
    let params = match map.remove("params") {
        None | Some(Value::Null) => Value::Object(Map::new()),
        Some(params @ Value::Object(_)) => params,
        Some(_) => {
            return Err((
                id,
                ErrorReply::new(
                    StatusCode::BAD_REQUEST,
                    INVALID_PARAMS,
                    "Invalid params: params must be an object",
                ),
            ));
        }
    };
    Ok(Incoming { id, method, params })
}

/// An integer as JSON Schema counts them: any number without a fractional
/// part (`7`, `7.0`, `1e300`).
fn is_integer(n: &serde_json::Number) -> bool {
    n.is_i64() || n.is_u64() || n.as_f64().is_some_and(|f| f.fract() == 0.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_requests_and_notifications() {
        let request = parse_message(json!({"jsonrpc": "2.0", "id": 1, "method": "ping"})).unwrap();
        assert_eq!(
            (request.id, request.method.as_str()),
            (Some(json!(1)), "ping")
        );
        let notification =
            parse_message(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
                .unwrap();
        assert!(notification.id.is_none());
    }

    #[test]
    fn refuses_everything_else_as_invalid_request() {
        for bad in [
            json!([{"jsonrpc": "2.0", "id": 1, "method": "ping"}]),
            json!("ping"),
            json!({"jsonrpc": "1.0", "id": 1, "method": "ping"}),
            json!({"jsonrpc": "2.0", "id": null, "method": "ping"}),
            json!({"jsonrpc": "2.0", "id": 1, "result": {}}),
            json!({"jsonrpc": "2.0", "id": 1, "method": 7}),
            // Found by tests/it/hostile_callers.rs: a fractional id was
            // echoed back, into a response no MCP schema accepts.
            json!({"jsonrpc": "2.0", "id": 1.5, "method": "ping"}),
        ] {
            let (_, err) = *parse_message(bad.clone()).unwrap_err();
            assert_eq!(err.code, INVALID_REQUEST, "{bad}");
        }
        for integral in [json!(7.0), json!(1e300), json!(u64::MAX), json!(i64::MIN)] {
            let request = json!({"jsonrpc": "2.0", "id": integral, "method": "ping"});
            assert_eq!(parse_message(request).unwrap().id, Some(integral));
        }
        let (id, err) =
            *parse_message(json!({"jsonrpc": "2.0", "id": 2, "method": "x", "params": [1]}))
                .unwrap_err();
        assert_eq!((id, err.code), (Some(json!(2)), INVALID_PARAMS));
    }
}
