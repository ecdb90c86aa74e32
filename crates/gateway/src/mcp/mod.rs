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
/// copied into the message rather than escaped again. An upstream MCP
/// server's result keeps its own content blocks and structured content.
#[derive(Debug, Clone)]
pub struct CallToolResult {
    content: Content,
    is_error: bool,
    /// Members after `content` and `isError`, in order.
    rest: Map<String, Value>,
}

/// What a result's `content` holds.
#[derive(Debug, Clone)]
enum Content {
    /// One text block, as its JSON string literal.
    Text(JsonLiteral),
    /// An upstream server's blocks and structured content, as it sent them.
    Blocks {
        blocks: Vec<Value>,
        structured: Option<Value>,
    },
}

impl CallToolResult {
    /// Adds a member after the content.
    pub fn insert(&mut self, key: &str, value: Value) {
        self.rest.insert(key.to_string(), value);
    }

    /// The text block, unescaped (an upstream result's text blocks, joined).
    pub fn text(&self) -> String {
        match &self.content {
            Content::Text(literal) => literal.text(),
            Content::Blocks { blocks, .. } => blocks
                .iter()
                .filter_map(|block| block.get("text").and_then(Value::as_str))
                .collect::<Vec<_>>()
                .join("\n"),
        }
    }

    /// The result as a JSON value (what [`CallToolResult::write_response`]
    /// writes under `result`).
    pub fn to_value(&self) -> Value {
        let mut result = Map::new();
        match &self.content {
            Content::Text(literal) => {
                result.insert(
                    "content".to_string(),
                    json!([{"type": "text", "text": literal.text()}]),
                );
            }
            Content::Blocks { blocks, structured } => {
                result.insert("content".to_string(), Value::Array(blocks.clone()));
                if let Some(structured) = structured {
                    result.insert("structuredContent".to_string(), structured.clone());
                }
            }
        }
        if self.is_error {
            result.insert("isError".to_string(), json!(true));
        }
        result.extend(self.rest.clone());
        Value::Object(result)
    }

    /// Bytes the response to request `id` will take, about.
    pub fn response_len(&self) -> usize {
        match &self.content {
            Content::Text(literal) => literal.len() + 512,
            Content::Blocks { blocks, structured } => {
                blocks.iter().map(sezzlee_json::json_bytes).sum::<usize>()
                    + structured.as_ref().map_or(0, sezzlee_json::json_bytes)
                    + 512
            }
        }
    }

    /// Writes the JSON-RPC response to request `id` carrying this result:
    /// exactly `{"jsonrpc": "2.0", "id": id, "result": self.to_value()}`
    /// serialised, with the text block copied in as it is.
    pub fn write_response(&self, id: &Value, out: &mut Vec<u8>) -> serde_json::Result<()> {
        out.extend_from_slice(br#"{"jsonrpc":"2.0","id":"#);
        serde_json::to_writer(&mut *out, id)?;
        match &self.content {
            Content::Text(literal) => {
                out.extend_from_slice(br#","result":{"content":[{"type":"text","text":"#);
                out.extend_from_slice(literal.as_str().as_bytes());
                out.extend_from_slice(b"}]");
            }
            Content::Blocks { blocks, structured } => {
                out.extend_from_slice(br#","result":{"content":"#);
                serde_json::to_writer(&mut *out, blocks)?;
                if let Some(structured) = structured {
                    out.extend_from_slice(br#","structuredContent":"#);
                    serde_json::to_writer(&mut *out, structured)?;
                }
            }
        }
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
    let content = match answer.into_blocks() {
        Ok(blocks) => Content::Blocks {
            blocks: blocks.content,
            structured: blocks.structured,
        },
        Err(answer) => Content::Text(answer.into_literal()),
    };
    CallToolResult {
        content,
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
