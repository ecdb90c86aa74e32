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
    body: Body,
    /// The failure's code; `None` for a success.
    failure: Option<Code>,
}

/// The answer's JSON, as a value or already as text.
#[derive(Debug, Clone, PartialEq)]
enum Body {
    /// Built, not yet serialised.
    Value(Value),
    /// Serialised: by the budget check (so the protocol layer does not
    /// serialise it again), or taken ready from the search cache.
    Text(String),
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
            body: Body::Value(payload),
            failure: None,
        }
    }

    /// A successful answer already serialised (a cached search page).
    pub fn ok_text(text: String) -> ToolAnswer {
        ToolAnswer {
            body: Body::Text(text),
            failure: None,
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
            body: Body::Value(Value::Object(payload)),
            failure: Some(code),
        }
    }

    /// The text block's JSON, taken out (serialised now if it was not yet).
    pub fn into_text(self) -> String {
        match self.body {
            Body::Text(text) => text,
            Body::Value(payload) => payload.to_string(),
        }
    }

    /// The text block's JSON, when it is serialised already.
    pub fn serialized(&self) -> Option<&str> {
        match &self.body {
            Body::Text(text) => Some(text),
            Body::Value(_) => None,
        }
    }

    /// Whether this is a failure (`isError: true`).
    pub fn is_error(&self) -> bool {
        self.failure.is_some()
    }

    /// The failure code, when this is a failure.
    pub fn code(&self) -> Option<&str> {
        self.failure.map(Code::as_str)
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
pub fn within_budget(answer: ToolAnswer, budget: usize, shrink_hint: &str) -> ToolAnswer {
    let ToolAnswer { body, failure } = answer;
    let text = match body {
        Body::Value(payload) => payload.to_string(),
        Body::Text(text) => text,
    };
    // Characters, not bytes: cheap to count, and a bound on them is what
    // an agent's context sees.
    let size = if text.is_ascii() {
        text.len()
    } else {
        text.chars().count()
    };
    if size <= budget {
        return ToolAnswer {
            body: Body::Text(text),
            failure,
        };
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
