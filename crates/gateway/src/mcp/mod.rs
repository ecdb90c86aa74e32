//! MCP over Streamable HTTP: both protocol eras on one stateless endpoint.
//!
//! A request carrying `io.modelcontextprotocol/protocolVersion` in
//! `params._meta` is served per revision 2026-07-28 ([`stateless`]); anything
//! else is served per the `initialize`-era revisions ([`handshake`]), each
//! request on its own. This module knows nothing about OpenAPI: it turns
//! requests into calls of the three tools and answers into messages.

pub mod calls;
pub mod handshake;
pub mod headers;
pub mod http;
pub mod listen;
pub mod results;
pub mod stateless;

use crate::tools::ToolAnswer;
use axum::http::StatusCode;
use serde_json::{Map, Value, json};
use sezzlee_json::JsonLiteral;

pub use sezzlee_protocol::{HANDSHAKE_VERSIONS, STATELESS_VERSION};

/// Every version the endpoint speaks, newest first.
pub fn supported_versions() -> Vec<&'static str> {
    sezzlee_protocol::all_versions().collect()
}

/// `serverInfo` of this build.
pub fn server_info() -> results::ServerInfo {
    results::ServerInfo {
        name: "sezzlee",
        version: env!("CARGO_PKG_VERSION"),
    }
}

/// What the endpoint answers to one POST.
pub enum Reply {
    /// A JSON body with its status.
    Json(StatusCode, Value),
    /// `200` with a `tools/call` result for the request `id`.
    Tool(Value, CallToolResult),
    /// `202 Accepted`, no body (notifications).
    Accepted,
    /// A `subscriptions/listen` SSE stream.
    Listen(listen::Subscription),
}

/// A `CallToolResult`: the answer as JSON text in one content block,
/// `isError` only on failure, then whatever the era adds. The text is
/// kept as its JSON string literal, so a ready answer (a search page) is
/// copied into the message rather than escaped again.
#[derive(Debug, Clone)]
pub struct CallToolResult {
    literal: JsonLiteral,
    is_error: bool,
    /// Members after `content` and `isError`, in order.
    rest: Map<String, Value>,
}

impl CallToolResult {
    /// Adds a member after the content.
    pub fn insert(&mut self, key: &str, value: Value) {
        self.rest.insert(key.to_string(), value);
    }

    /// The text block, unescaped.
    pub fn text(&self) -> String {
        self.literal.text()
    }

    /// The result as a JSON value (what [`CallToolResult::write_response`]
    /// writes under `result`).
    pub fn to_value(&self) -> Value {
        let mut result = Map::new();
        result.insert(
            "content".to_string(),
            json!([{"type": "text", "text": self.text()}]),
        );
        if self.is_error {
            result.insert("isError".to_string(), json!(true));
        }
        result.extend(self.rest.clone());
        Value::Object(result)
    }

    /// Bytes the response to request `id` will take, about.
    pub fn response_len(&self) -> usize {
        self.literal.len() + 512
    }

    /// Writes the JSON-RPC response to request `id` carrying this result:
    /// exactly `{"jsonrpc": "2.0", "id": id, "result": self.to_value()}`
    /// serialised, with the text block copied in as it is.
    pub fn write_response(&self, id: &Value, out: &mut Vec<u8>) -> serde_json::Result<()> {
        out.extend_from_slice(br#"{"jsonrpc":"2.0","id":"#);
        serde_json::to_writer(&mut *out, id)?;
        out.extend_from_slice(br#","result":{"content":[{"type":"text","text":"#);
        out.extend_from_slice(self.literal.as_str().as_bytes());
        out.extend_from_slice(b"}]");
        if self.is_error {
            out.extend_from_slice(br#","isError":true"#);
        }
        for (key, value) in &self.rest {
            out.push(b',');
            serde_json::to_writer(&mut *out, key)?;
            out.push(b':');
            serde_json::to_writer(&mut *out, value)?;
        }
        out.extend_from_slice(b"}}");
        Ok(())
    }
}

/// The `CallToolResult` of a tool's answer.
pub fn call_tool_result(answer: ToolAnswer) -> CallToolResult {
    let is_error = answer.is_error();
    CallToolResult {
        literal: answer.into_literal(),
        is_error,
        rest: Map::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::ToolAnswer;

    /// The response is written by hand around the escaped text: it must be
    /// byte for byte what serialising the same message as a value gives.
    #[test]
    fn a_written_tool_response_is_the_serialised_message() {
        let page = json!({"total": 2, "results": [{"name": "a \"b\" \u{2028} é"}]});
        let answers = [
            ToolAnswer::ok(page.clone()),
            ToolAnswer::ok_escaped(JsonLiteral::of(&page.to_string())),
            crate::tools::envelope::unknown_tool("x"),
        ];
        for (n, answer) in answers.into_iter().enumerate() {
            let failed = answer.is_error();
            let mut result = call_tool_result(answer);
            result.insert("resultType", json!("complete"));
            result.insert("_meta", json!({"k": [1, "two"]}));
            for id in [json!(7), json!("req-\"1\"")] {
                let mut written = Vec::new();
                result.write_response(&id, &mut written).unwrap();
                let expected = json!({"jsonrpc": "2.0", "id": id, "result": result.to_value()});
                assert_eq!(
                    String::from_utf8(written).unwrap(),
                    expected.to_string(),
                    "{n}"
                );
            }
            assert_eq!(result.to_value().get("isError").is_some(), failed);
            if !failed {
                let text: Value = serde_json::from_str(&result.text()).unwrap();
                assert_eq!(text, page);
            }
        }
    }
}
