//! Small readings of JSON values that the catalog, the tools and the client
//! all need, written once so they say the same thing everywhere; and the
//! types of escaped JSON text ([`Escaped`], [`JsonLiteral`]), which can only
//! be made by escaping, so text spliced into a message is never unescaped
//! text by mistake.

use serde_json::Value;
use std::sync::Arc;

/// Text escaped as the inside of a JSON string (no quotes), made only by
/// escaping: a piece prepared once and copied into literals later.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Escaped(Box<str>);

impl Escaped {
    /// `text`, escaped.
    pub fn of(text: &str) -> Escaped {
        let mut escaped = String::with_capacity(text.len() + text.len() / 4);
        push_escaped(&mut escaped, text);
        Escaped(escaped.into_boxed_str())
    }

    /// The escaped text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Bytes of the escaped text.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether the escaped text is empty.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The escaped text without its last character when that is `ending`,
    /// an ASCII character that escaping leaves as it is (so cutting it off
    /// leaves whole escape sequences).
    pub fn strip_ascii_suffix(&self, ending: char) -> Option<&str> {
        if !ending.is_ascii() || matches!(ending, '"' | '\\') || ending.is_ascii_control() {
            return None;
        }
        self.0.strip_suffix(ending)
    }
}

/// A JSON string literal, quotes included, made only by escaping (at once
/// with [`JsonLiteral::of`] or piece by piece with [`LiteralBuilder`]).
/// Shared cheaply: a ready answer is copied into messages, never escaped
/// again.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct JsonLiteral(Arc<str>);

impl JsonLiteral {
    /// The literal of `text`.
    pub fn of(text: &str) -> JsonLiteral {
        JsonLiteral(Arc::from(string_literal(text)))
    }

    /// The literal as it stands in a message, quotes included.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Bytes of the literal, quotes included.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether the literal is `""`.
    pub fn is_empty(&self) -> bool {
        self.0.len() <= 2
    }

    /// The text it stands for.
    pub fn text(&self) -> String {
        // Every JsonLiteral was made by escaping, so it reads back.
        serde_json::from_str(&self.0).unwrap_or_default()
    }
}

/// Builds a [`JsonLiteral`] from text (escaped on the way) and pieces
/// escaped before.
#[derive(Debug)]
pub struct LiteralBuilder(String);

impl LiteralBuilder {
    /// An open literal with room for `capacity` bytes.
    pub fn with_capacity(capacity: usize) -> LiteralBuilder {
        let mut literal = String::with_capacity(capacity + 2);
        literal.push('"');
        LiteralBuilder(literal)
    }

    /// Appends `text`, escaping it. Text with nothing to escape (JSON
    /// escapes only `"`, `\\` and control characters below U+0020) is
    /// copied as it is, without the serialiser's allocation.
    pub fn push_text(&mut self, text: &str) {
        if text.bytes().any(|b| b < 0x20 || b == b'"' || b == b'\\') {
            push_escaped(&mut self.0, text);
        } else {
            self.0.push_str(text);
        }
    }

    /// Appends a piece escaped before.
    pub fn push_escaped(&mut self, piece: &Escaped) {
        self.0.push_str(piece.as_str());
    }

    /// Appends the part of an escaped piece that
    /// [`Escaped::strip_ascii_suffix`] left.
    pub fn push_escaped_prefix(&mut self, piece: &Escaped, ending: char) -> bool {
        match piece.strip_ascii_suffix(ending) {
            Some(prefix) => {
                self.0.push_str(prefix);
                true
            }
            None => false,
        }
    }

    /// Closes the literal.
    pub fn finish(mut self) -> JsonLiteral {
        self.0.push('"');
        JsonLiteral(Arc::from(self.0))
    }
}

/// Appends `text` as the inside of a JSON string (escaped, no quotes), so
/// that text meant for a message's string can be prepared once and copied
/// in later.
pub fn push_escaped(out: &mut String, text: &str) {
    let literal = string_literal(text);
    out.push_str(
        literal
            .get(1..literal.len().saturating_sub(1))
            .unwrap_or(""),
    );
}

/// The JSON string literal (quotes included) of `text`.
pub fn string_literal(text: &str) -> String {
    // Serialising a string cannot fail.
    serde_json::to_string(text).unwrap_or_default()
}

/// The strings of a JSON array (other items skipped); empty for anything
/// that is not an array.
pub fn strings(value: Option<&Value>) -> Vec<String> {
    value
        .and_then(Value::as_array)
        .map(|items| {
            items
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

/// The JSON kind of a value, for messages: "a string", "an array", ….
pub fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Characters of `value` serialised compactly, as serde_json writes it.
pub fn json_chars(value: &Value) -> usize {
    measure(value, &escaped_chars)
}

/// Bytes of `value` serialised compactly (UTF-8), as serde_json writes it.
pub fn json_bytes(value: &Value) -> usize {
    measure(value, &|c| match escaped_chars(c) {
        1 => c.len_utf8(),
        escaped => escaped,
    })
}

/// The serialisation's length, each character of a string counted by
/// `unit` (every other character is ASCII).
fn measure(value: &Value, unit: &dyn Fn(char) -> usize) -> usize {
    let literal = |text: &str| 2 + text.chars().map(unit).sum::<usize>();
    match value {
        Value::Null | Value::Bool(true) => 4,
        Value::Bool(false) => 5,
        Value::Number(number) => number.to_string().len(),
        Value::String(text) => literal(text),
        Value::Array(items) => {
            2 + items.len().saturating_sub(1)
                + items.iter().map(|item| measure(item, unit)).sum::<usize>()
        }
        Value::Object(members) => {
            2 + members.len().saturating_sub(1)
                + members
                    .iter()
                    .map(|(name, member)| literal(name) + 1 + measure(member, unit))
                    .sum::<usize>()
        }
    }
}

/// Characters of a string literal: quotes, and each character as escaped
/// (what `serde_json::to_string(text)` would take, without writing it).
pub fn literal_chars(text: &str) -> usize {
    2 + text.chars().map(escaped_chars).sum::<usize>()
}

/// Characters `c` takes inside a JSON string literal.
pub fn escaped_chars(c: char) -> usize {
    match c {
        '"' | '\\' | '\u{08}' | '\u{0c}' | '\n' | '\r' | '\t' => 2,
        c if (c as u32) < 0x20 => 6,
        _ => 1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_are_serde_jsons_characters() {
        let value = json!({
            "a\"b": ["x\ny", 1.5e300, -0.0, 12, null, true, false, {}, []],
            "é\u{1}": "ü\u{1f600}\t\\",
            "n": 1e-7, "big": 18446744073709551615u64, "neg": -9223372036854775808i64
        });
        assert_eq!(
            json_chars(&value),
            serde_json::to_string(&value).unwrap().chars().count()
        );
        assert_eq!(
            json_bytes(&value),
            serde_json::to_string(&value).unwrap().len()
        );
    }

    #[test]
    fn literal_sizes_are_serde_jsons() {
        for text in [
            "",
            "plain",
            "q\"b\\s",
            "\u{0}\u{1f}\u{7f}\n\t\r\u{8}\u{c}",
            "é€😀",
            "\u{2028}",
        ] {
            assert_eq!(
                literal_chars(text),
                string_literal(text).chars().count(),
                "{text:?}"
            );
        }
    }

    use serde_json::json;

    #[test]
    fn literals_built_in_pieces_equal_the_literal_of_the_whole() {
        let text = "{\"a\":\"line\nbreak \\ \u{1} é\"}";
        let card = Escaped::of(text);
        let mut built = LiteralBuilder::with_capacity(64);
        built.push_text("[");
        built.push_escaped(&card);
        built.push_text(",");
        assert!(built.push_escaped_prefix(&card, '}'));
        built.push_text("}]");
        let whole = format!("[{text},{text}]");
        let literal = built.finish();
        assert_eq!(literal, JsonLiteral::of(&whole));
        assert_eq!(literal.text(), whole);
        assert!(card.strip_ascii_suffix('"').is_none());
        assert!(JsonLiteral::of("").is_empty());
    }

    #[test]
    fn strings_keep_only_the_strings_of_an_array() {
        assert_eq!(strings(Some(&json!(["a", 1, "b"]))), ["a", "b"]);
        assert!(strings(Some(&json!("a"))).is_empty());
        assert!(strings(None).is_empty());
        assert_eq!(kind_of(&json!([])), "an array");
        assert_eq!(kind_of(&json!(null)), "null");
    }
}
