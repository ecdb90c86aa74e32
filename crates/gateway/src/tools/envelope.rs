//! The payload every tool result shares: JSON in one text block.
//!
//! Success is the answer itself; failure is `{"error", "message",
//! "retryable", …}` with `isError: true`. Codes are spelled once here, and
//! every message says what to do next.

use serde_json::{Map, Value, json};
use sezzlee_json::{JsonLiteral, kind_of};

pub use crate::failure_code::Code;

/// A tool's answer before the protocol layer wraps it.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolAnswer {
    body: AnswerJson,
    /// The failure's code; `None` for a success.
    failure: Option<Code>,
}

/// The answer's JSON, as a value, as text, or as text ready for a message.
#[derive(Debug, Clone, PartialEq)]
enum AnswerJson {
    /// Built, not yet serialised.
    Value(Value),
    /// Serialised by the budget check (so the protocol layer does not
    /// serialise it again).
    Text(String),
    /// Serialised and escaped: the JSON string literal (quotes included)
    /// of the text, as it stands in the message. A search page is built
    /// this way from cards escaped once per catalog, and shared with the
    /// search cache, so a page is never escaped per request.
    Escaped(JsonLiteral),
    /// An upstream MCP server's result, passed on as it came: its content
    /// blocks, structured content and `isError` (not one text block).
    Blocks(Blocks),
}

/// A `CallToolResult`'s parts as an upstream MCP server sent them.
#[derive(Debug, Clone, PartialEq)]
pub struct Blocks {
    /// The content blocks (text, image, audio, resource, …), as sent.
    pub content: Vec<Value>,
    pub structured: Option<Value>,
    /// The tool ran and failed (the server's `isError`).
    pub is_error: bool,
}

/// Whether calling again unchanged may succeed: the envelope's
/// `retryable`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Retry {
    /// It may (a timeout, a backend that is down, a changed tool after a
    /// load).
    MayHelp,
    /// It will not: the call itself must change.
    WillNotHelp,
}

impl Retry {
    /// [`Retry::MayHelp`] when `may_help` holds.
    pub fn when(may_help: bool) -> Retry {
        if may_help {
            Retry::MayHelp
        } else {
            Retry::WillNotHelp
        }
    }
}

impl ToolAnswer {
    pub fn ok(payload: Value) -> ToolAnswer {
        ToolAnswer {
            body: AnswerJson::Value(payload),
            failure: None,
        }
    }

    /// A successful answer already serialised: `text` is the JSON text of
    /// the payload (so the protocol layer escapes it without serialising
    /// it again).
    pub fn ok_text(text: String) -> ToolAnswer {
        ToolAnswer {
            body: AnswerJson::Text(text),
            failure: None,
        }
    }

    /// A successful answer given as the JSON string literal of its text
    /// (a search page).
    pub fn ok_escaped(literal: JsonLiteral) -> ToolAnswer {
        ToolAnswer {
            body: AnswerJson::Escaped(literal),
            failure: None,
        }
    }

    /// An upstream MCP server's result, passed on whole.
    pub fn blocks(blocks: Blocks) -> ToolAnswer {
        ToolAnswer {
            body: AnswerJson::Blocks(blocks),
            failure: None,
        }
    }

    /// The upstream result, when this answer passes one on.
    pub fn as_blocks(&self) -> Option<&Blocks> {
        match &self.body {
            AnswerJson::Blocks(blocks) => Some(blocks),
            _ => None,
        }
    }

    /// The upstream result, taken out, when this answer passes one on.
    pub fn into_blocks(self) -> Result<Blocks, ToolAnswer> {
        match self.body {
            AnswerJson::Blocks(blocks) => Ok(blocks),
            body => Err(ToolAnswer {
                body,
                failure: self.failure,
            }),
        }
    }

    /// A failure with extra fields after `error`, `message`, `retryable`.
    pub fn fail(
        code: Code,
        message: impl Into<String>,
        retry: Retry,
        extra: Map<String, Value>,
    ) -> ToolAnswer {
        let mut payload = Map::new();
        payload.insert("error".to_string(), json!(code.as_str()));
        payload.insert("message".to_string(), json!(message.into()));
        payload.insert("retryable".to_string(), json!(retry == Retry::MayHelp));
        payload.extend(extra);
        ToolAnswer {
            body: AnswerJson::Value(Value::Object(payload)),
            failure: Some(code),
        }
    }

    /// The text block's JSON, taken out (serialised now if it was not yet).
    pub fn into_text(self) -> String {
        match self.body {
            AnswerJson::Text(text) => text,
            AnswerJson::Value(payload) => payload.to_string(),
            AnswerJson::Escaped(literal) => literal.text(),
            AnswerJson::Blocks(blocks) => blocks_text(&blocks),
        }
    }

    /// The JSON string literal of the text block, as it stands in a
    /// message (escaped now unless it was built escaped).
    pub fn into_literal(self) -> JsonLiteral {
        match self.body {
            AnswerJson::Escaped(literal) => literal,
            AnswerJson::Text(text) => JsonLiteral::of(&text),
            AnswerJson::Value(payload) => JsonLiteral::of(&payload.to_string()),
            AnswerJson::Blocks(blocks) => JsonLiteral::of(&blocks_text(&blocks)),
        }
    }

    /// The JSON string literal of the text block, when it was built so.
    pub fn literal(&self) -> Option<&JsonLiteral> {
        match &self.body {
            AnswerJson::Escaped(literal) => Some(literal),
            _ => None,
        }
    }

    /// Characters of the text block, the unit of the response budget
    /// (measured without serialising a built answer).
    pub fn chars(&self) -> usize {
        match &self.body {
            AnswerJson::Value(payload) => sezzlee_json::json_chars(payload),
            AnswerJson::Text(text) => characters(text),
            AnswerJson::Escaped(literal) => characters(&literal.text()),
            AnswerJson::Blocks(blocks) => blocks.chars(),
        }
    }

    /// Whether this is a failure (`isError: true`): the gateway's, or an
    /// upstream tool's that ran and failed.
    pub fn is_error(&self) -> bool {
        self.failure.is_some() || self.as_blocks().is_some_and(|blocks| blocks.is_error)
    }

    /// The failure code, when this is a failure.
    pub fn code(&self) -> Option<&str> {
        self.failure.map(Code::as_str)
    }
}

impl Blocks {
    /// Characters of the content blocks and structured content as JSON:
    /// what the response budget bounds.
    pub fn chars(&self) -> usize {
        self.content
            .iter()
            .map(sezzlee_json::json_chars)
            .sum::<usize>()
            + self.structured.as_ref().map_or(0, sezzlee_json::json_chars)
    }
}

/// An upstream result's text blocks, joined by newlines (what a caller
/// reading only text gets of it).
fn blocks_text(blocks: &Blocks) -> String {
    let texts: Vec<&str> = blocks
        .content
        .iter()
        .filter(|block| block.get("type").and_then(Value::as_str) == Some("text"))
        .filter_map(|block| block.get("text").and_then(Value::as_str))
        .collect();
    texts.join("\n")
}

/// Characters, not bytes: cheap to count, and a bound on them is what an
/// agent's context sees.
fn characters(text: &str) -> usize {
    if text.is_ascii() {
        text.len()
    } else {
        text.chars().count()
    }
}

/// The most characters of a caller's text an answer quotes back.
pub const QUOTED_CHARS: usize = 80;

/// A caller's text as an answer quotes it: whole when short, else its
/// first [`QUOTED_CHARS`] characters, `…` and its full length. Every
/// message that repeats caller input goes through this, so no input can
/// make an answer larger than the input's first few words.
pub fn quoted(text: &str) -> std::borrow::Cow<'_, str> {
    quoted_up_to(text, QUOTED_CHARS)
}

/// [`quoted`] with another bound: JSON pointers into a caller's arguments
/// are kept whole up to a longer length, so deep ones still point.
pub fn quoted_up_to(text: &str, max_chars: usize) -> std::borrow::Cow<'_, str> {
    match text.char_indices().nth(max_chars) {
        None => std::borrow::Cow::Borrowed(text),
        Some((end, _)) => std::borrow::Cow::Owned(format!(
            "{}… ({} characters)",
            &text[..end],
            characters(text)
        )),
    }
}

/// `unknown_tool`: the same answer for a name that does not exist and for a
/// tool the caller may not see.
pub fn unknown_tool(name: &str) -> ToolAnswer {
    let name = quoted(name);
    ToolAnswer::fail(
        Code::UnknownTool,
        format!(
            "There is no tool named '{name}'. Use search_tools to find the right name, then load_tool with it."
        ),
        Retry::WillNotHelp,
        Map::new(),
    )
}

/// `backend_unavailable`: the call failed to reach `peer` (`"backend"`,
/// `"MCP server"`), or the connection broke after it was sent
/// (`maybe_reached`); `detail` is quoted bounded, `later` says what
/// waiting achieves.
pub fn unavailable(peer: &str, detail: &str, maybe_reached: bool, later: &str) -> ToolAnswer {
    let detail = quoted_up_to(detail, UNAVAILABLE_DETAIL_CHARS);
    ToolAnswer::fail(
        Code::BackendUnavailable,
        if maybe_reached {
            format!(
                "The connection to the {peer} broke after the call was sent ({detail}); it may have reached the {peer}. Retry only if the call is safe to repeat."
            )
        } else {
            format!(
                "The {peer} could not be reached ({detail}); the call did not reach it. {later}"
            )
        },
        Retry::MayHelp,
        Map::from_iter([("mayHaveReachedBackend".to_string(), json!(maybe_reached))]),
    )
}

/// `rate_limited`: a limit refused the call before anything was sent;
/// when to call again and what else the caller can do.
pub fn rate_limited(limited: &crate::limits::Limited) -> ToolAnswer {
    use crate::limits::Limit;
    let retry_after_ms = u64::try_from(limited.retry_after.as_millis())
        .unwrap_or(u64::MAX)
        .max(1);
    let message = match (limited.limit, limited.per_minute) {
        (Limit::SearchPerMinute, Some(rate)) => format!(
            "This caller made more than its {rate} search_tools and load_tool calls a minute. Wait {retry_after_ms} ms and call again; fewer, broader searches (a larger limit, filters) need fewer calls."
        ),
        (Limit::InvokePerMinute, Some(rate)) => format!(
            "This caller made more than its {rate} invoke_tool calls a minute; nothing was sent to the backend. Wait {retry_after_ms} ms and call again, and space the calls out."
        ),
        (Limit::BackendRetryAfter, _) => format!(
            "The backend asked to be left alone for a while (Retry-After); nothing was sent to it. Wait {retry_after_ms} ms and call again."
        ),
        (Limit::BackendBreaker, _) => format!(
            "The backend failed several calls in a row, so calls to it are paused; nothing was sent to it. Wait {retry_after_ms} ms: one call then checks whether it is back."
        ),
        (Limit::QuotaRequests, _) => format!(
            "This call would exceed the backend's quota (calls per interval, as the catalog owner states it); nothing was sent. Wait {retry_after_ms} ms and call again."
        ),
        (Limit::QuotaConcurrent, _) => format!(
            "The backend allows only so many calls at once, and that many are under way; nothing was sent. Call again in {retry_after_ms} ms."
        ),
        (_, None) => format!(
            "A limit refused the call; nothing was sent. Wait {retry_after_ms} ms and call again."
        ),
    };
    ToolAnswer::fail(
        Code::RateLimited,
        message,
        Retry::MayHelp,
        Map::from_iter([
            ("retryAfterMs".to_string(), json!(retry_after_ms)),
            ("limit".to_string(), json!(limited.limit.as_str())),
            ("mayHaveReachedBackend".to_string(), json!(false)),
        ]),
    )
}

/// Characters of a failure's cause an `unavailable` answer quotes.
const UNAVAILABLE_DETAIL_CHARS: usize = 300;

/// `invalid_type`: an argument arrived as the wrong kind of JSON value.
pub fn invalid_type(argument: &str, expected: &str, got: &Value) -> ToolAnswer {
    ToolAnswer::fail(
        Code::InvalidType,
        format!(
            "'{argument}' must be {expected}, but {} arrived. Send it as {expected}.",
            kind_of(got)
        ),
        Retry::WillNotHelp,
        Map::new(),
    )
}

/// Refuses an answer whose serialisation exceeds `budget` characters,
/// naming the arguments that shrink it.
pub fn within_budget(answer: ToolAnswer, budget: usize, shrink_hint: &str) -> ToolAnswer {
    let ToolAnswer { body, failure } = answer;
    let (size, body) = match body {
        // An escaped text has at least as many bytes as its text has
        // characters: only a long one needs counting.
        AnswerJson::Escaped(literal) if literal.len().saturating_sub(2) <= budget => {
            (0, AnswerJson::Escaped(literal))
        }
        AnswerJson::Escaped(literal) => (characters(&literal.text()), AnswerJson::Escaped(literal)),
        AnswerJson::Value(payload) => {
            let text = payload.to_string();
            (characters(&text), AnswerJson::Text(text))
        }
        AnswerJson::Text(text) => (characters(&text), AnswerJson::Text(text)),
        AnswerJson::Blocks(blocks) => (blocks.chars(), AnswerJson::Blocks(blocks)),
    };
    if size <= budget {
        return ToolAnswer { body, failure };
    }
    ToolAnswer::fail(
        Code::ResponseTooLarge,
        format!(
            "The answer would be {size} characters, over the response budget of {budget}. {shrink_hint}"
        ),
        Retry::WillNotHelp,
        Map::from_iter([
            ("size".to_string(), json!(size)),
            ("budget".to_string(), json!(budget)),
        ]),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn escaped(text: &str) -> ToolAnswer {
        ToolAnswer::ok_escaped(JsonLiteral::of(text))
    }

    #[test]
    fn an_answer_reads_the_same_however_it_was_built() {
        let payload = json!({"total": 1, "note": "say \"hi\" \u{2014} é"});
        let text = payload.to_string();
        for answer in [
            ToolAnswer::ok(payload.clone()),
            within_budget(ToolAnswer::ok(payload.clone()), 1_000, ""),
            escaped(&text),
            ToolAnswer::ok_text(text.clone()),
        ] {
            assert_eq!(
                answer.clone().into_literal().as_str(),
                serde_json::to_string(&text).unwrap()
            );
            assert_eq!(answer.into_text(), text);
        }
    }

    /// The budget counts characters of the text, not bytes of its escaped
    /// form: quotes escape to two bytes, `é` is two bytes and one
    /// character.
    #[test]
    fn the_budget_of_an_escaped_answer_counts_its_characters() {
        let text = format!("\"{}\"", "é".repeat(98));
        assert_eq!(text.chars().count(), 100);
        assert!(JsonLiteral::of(&text).len() > 200);
        assert!(!within_budget(escaped(&text), 100, "").is_error());
        let refused = within_budget(escaped(&text), 99, "Ask for less.");
        assert_eq!(refused.code(), Some("response_too_large"));
        let refusal: Value = serde_json::from_str(&refused.into_text()).unwrap();
        assert_eq!(refusal["size"], 100);
        assert_eq!(refusal["budget"], 99);
    }
}
