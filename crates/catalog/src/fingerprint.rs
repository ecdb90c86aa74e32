//! Tool versions: a content fingerprint an agent can pin a call to.
//!
//! The version must be the same in every process for the same definition and
//! independent of key order in the source file, so it is computed over a
//! canonical JSON rendering (object keys sorted at every level, no
//! whitespace) rather than over whatever order the document used.

use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

/// Where canonical JSON goes: a string, or straight into a hasher so large
/// schemas are never rendered whole just to be fingerprinted.
pub trait CanonicalSink {
    fn push(&mut self, text: &str);
}

impl CanonicalSink for String {
    fn push(&mut self, text: &str) {
        self.push_str(text);
    }
}

/// Counts the characters of canonical JSON without keeping it.
#[derive(Default)]
pub struct CharCount(pub usize);

impl CanonicalSink for CharCount {
    fn push(&mut self, text: &str) {
        self.0 += text.chars().count();
    }
}

/// A SHA-256 that takes canonical JSON piece by piece.
#[derive(Default)]
pub struct VersionHasher(Sha256);

impl CanonicalSink for VersionHasher {
    fn push(&mut self, text: &str) {
        self.0.update(text.as_bytes());
    }
}

impl VersionHasher {
    /// First 16 hex digits of the digest.
    pub fn finish(self) -> String {
        self.0
            .finalize()
            .iter()
            .take(8)
            .map(|b| format!("{b:02x}"))
            .collect()
    }
}

/// First 16 hex digits of SHA-256 over the canonical JSON of `value`.
pub fn version_of(value: &Value) -> String {
    let mut hasher = VersionHasher::default();
    write_canonical_to(value, &mut hasher);
    hasher.finish()
}

/// Canonical JSON: keys sorted by their UTF-8 bytes, no whitespace, strings
/// and numbers as serde_json writes them.
pub fn write_canonical_to(value: &Value, out: &mut dyn CanonicalSink) {
    match value {
        Value::Object(map) => write_canonical_object(map, out),
        Value::Array(items) => {
            out.push("[");
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(",");
                }
                write_canonical_to(item, out);
            }
            out.push("]");
        }
        Value::String(text) => write_string(text, out),
        scalar => out.push(&scalar.to_string()),
    }
}

/// Canonical JSON of one object.
pub fn write_canonical_object(map: &Map<String, Value>, out: &mut dyn CanonicalSink) {
    let mut entries: Vec<(&String, &Value)> = map.iter().collect();
    entries.sort_unstable_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
    out.push("{");
    for (i, (key, item)) in entries.into_iter().enumerate() {
        if i > 0 {
            out.push(",");
        }
        write_string(key, out);
        out.push(":");
        write_canonical_to(item, out);
    }
    out.push("}");
}

/// A JSON string literal, escaped as serde_json escapes it.
pub fn write_string(text: &str, out: &mut dyn CanonicalSink) {
    match serde_json::to_string(text) {
        Ok(quoted) => out.push(&quoted),
        Err(_) => out.push("\"\""),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn key_order_does_not_change_the_version() {
        let a = json!({"b": 1, "a": {"y": [1, 2], "x": null}});
        let b: Value = serde_json::from_str(r#"{"a":{"x":null,"y":[1,2]},"b":1}"#).unwrap();
        assert_eq!(version_of(&a), version_of(&b));
    }

    #[test]
    fn canonical_form_is_sorted_and_compact() {
        let mut out = String::new();
        write_canonical_to(&json!({"b": "x\"y", "a": [true, 1.5]}), &mut out);
        assert_eq!(out, r#"{"a":[true,1.5],"b":"x\"y"}"#);
    }

    #[test]
    fn version_is_sixteen_hex_digits_and_content_sensitive() {
        let v1 = version_of(&json!({"name": "a"}));
        let v2 = version_of(&json!({"name": "b"}));
        assert_eq!(v1.len(), 16);
        assert!(v1.chars().all(|c| c.is_ascii_hexdigit()));
        assert_ne!(v1, v2);
        // sha256 of `{"name":"a"}`, first 8 bytes.
        let expected: String = Sha256::digest(br#"{"name":"a"}"#)
            .iter()
            .take(8)
            .map(|b| format!("{b:02x}"))
            .collect();
        assert_eq!(v1, expected);
    }
}
