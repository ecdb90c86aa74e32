//! Small readings of JSON values that the catalog, the tools and the client
//! all need, written once so they say the same thing everywhere.

use serde_json::Value;

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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn strings_keep_only_the_strings_of_an_array() {
        assert_eq!(strings(Some(&json!(["a", 1, "b"]))), ["a", "b"]);
        assert!(strings(Some(&json!("a"))).is_empty());
        assert!(strings(None).is_empty());
        assert_eq!(kind_of(&json!([])), "an array");
        assert_eq!(kind_of(&json!(null)), "null");
    }
}
