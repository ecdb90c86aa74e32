//! The payload every tool result shares: JSON in one text block.
//!
//! Success is the answer itself; failure is `{"error", "message",
//! "retryable", …}` with `isError: true`. Codes are spelled once here, and
//! every message says what to do next.

use crate::json_value::kind_of;
use serde_json::{Map, Value, json};

/// A tool's answer before the protocol layer wraps it.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolAnswer {
    pub payload: Value,
    pub is_error: bool,
    /// `payload` serialised, once the budget check has done it, so the
    /// protocol layer does not serialise it again.
    serialized: Option<String>,
}

/// Failure codes of the envelope.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Code {
    InvalidType,
    InvalidArguments,
    UnknownTool,
    ToolChanged,
    ResponseTooLarge,
    BackendStatus,
    BackendUnavailable,
    BackendTimeout,
    InternalError,
}

impl Code {
    pub fn as_str(self) -> &'static str {
        match self {
            Code::InvalidType => "invalid_type",
            Code::InvalidArguments => "invalid_arguments",
            Code::UnknownTool => "unknown_tool",
            Code::ToolChanged => "tool_changed",
            Code::ResponseTooLarge => "response_too_large",
            Code::BackendStatus => "backend_status",
            Code::BackendUnavailable => "backend_unavailable",
            Code::BackendTimeout => "backend_timeout",
            Code::InternalError => "internal_error",
        }
    }
}

impl ToolAnswer {
    pub fn ok(payload: Value) -> ToolAnswer {
        ToolAnswer {
            payload,
            is_error: false,
            serialized: None,
        }
    }

    /// A failure with extra fields after `error`, `message`, `retryable`.
    pub fn fail(
        code: Code,
        message: impl Into<String>,
        retryable: bool,
        extra: Map<String, Value>,
    ) -> ToolAnswer {
        let mut payload = Map::new();
        payload.insert("error".to_string(), json!(code.as_str()));
        payload.insert("message".to_string(), json!(message.into()));
        payload.insert("retryable".to_string(), json!(retryable));
        payload.extend(extra);
        ToolAnswer {
            payload: Value::Object(payload),
            is_error: true,
            serialized: None,
        }
    }

    /// The text block's JSON, taken out (serialised now if it was not yet).
    pub fn into_text(self) -> String {
        match self.serialized {
            Some(text) => text,
            None => self.payload.to_string(),
        }
    }

    /// The failure code, when this is a failure.
    pub fn code(&self) -> Option<&str> {
        self.is_error
            .then(|| self.payload.get("error").and_then(Value::as_str))
            .flatten()
    }
}

/// `unknown_tool`: the same answer for a name that does not exist and for a
/// tool the caller may not see.
pub fn unknown_tool(name: &str) -> ToolAnswer {
    ToolAnswer::fail(
        Code::UnknownTool,
        format!(
            "There is no tool named '{name}'. Use search_tools to find the right name, then load_tool with it."
        ),
        false,
        Map::new(),
    )
}

/// `invalid_type`: an argument arrived as the wrong kind of JSON value.
pub fn invalid_type(argument: &str, expected: &str, got: &Value) -> ToolAnswer {
    ToolAnswer::fail(
        Code::InvalidType,
        format!(
            "'{argument}' must be {expected}, but {} arrived. Send it as {expected}.",
            kind_of(got)
        ),
        false,
        Map::new(),
    )
}

/// Refuses an answer whose serialisation exceeds `budget` characters,
/// naming the arguments that shrink it.
pub fn within_budget(mut answer: ToolAnswer, budget: usize, shrink_hint: &str) -> ToolAnswer {
    let text = answer.payload.to_string();
    // Characters, not bytes: cheap to count, and a bound on them is what
    // an agent's context sees.
    let size = if text.is_ascii() {
        text.len()
    } else {
        text.chars().count()
    };
    if size <= budget {
        answer.serialized = Some(text);
        return answer;
    }
    ToolAnswer::fail(
        Code::ResponseTooLarge,
        format!(
            "The answer would be {size} characters, over the response budget of {budget}. {shrink_hint}"
        ),
        false,
        Map::from_iter([
            ("size".to_string(), json!(size)),
            ("budget".to_string(), json!(budget)),
        ]),
    )
}
