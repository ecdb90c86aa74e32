//! The outputSchema of an operation: what a successful call returns.
//!
//! One success response is chosen (200, 201, 202, 204, then the lowest
//! other 2xx, then `2XX`); a 204 or a response without JSON content has no
//! outputSchema. MCP wants an object root, so anything else is wrapped as
//! `{"result": …}`.

use super::media_type::is_json_media_type;
use super::schema::{Converter, Dialect, Direction, Reached, Schema};
use serde_json::{Map, Value, json};
use std::sync::Arc;

/// The outputSchema of an operation, or `None`.
pub fn output_schema(
    converter: &mut Converter,
    file: &Arc<str>,
    operation: &Value,
    produces: &[String],
) -> Result<Option<Schema>, String> {
    let Some(responses) = operation.get("responses").and_then(Value::as_object) else {
        return Ok(None);
    };
    let Some(code) = success_code(responses) else {
        return Ok(None);
    };
    if code == "204" {
        return Ok(None);
    }
    let Some(response) = responses.get(code) else {
        return Ok(None);
    };
    let (response_file, response) = converter.resolver().follow(file, response)?;
    let schema = if converter.dialect() == Dialect::Swagger2 {
        let json_ok =
            produces.is_empty() || produces.iter().any(|p| is_json_media_type(p) || p == "*/*");
        match response.get("schema") {
            Some(schema) if json_ok && !is_file_schema(schema) => schema,
            _ => return Ok(None),
        }
    } else {
        let Some(content) = response.get("content").and_then(Value::as_object) else {
            return Ok(None);
        };
        match json_media(content).and_then(|media| media.get("schema")) {
            Some(schema) => schema,
            None => return Ok(None),
        }
    };
    object_root(converter, &response_file, schema).map(Some)
}

/// The success status to describe: 200, 201, 202, 204, then the lowest
/// other explicit 2xx, then the `2XX` range.
pub fn success_code(responses: &Map<String, Value>) -> Option<&str> {
    for code in ["200", "201", "202", "204"] {
        if responses.contains_key(code) {
            return Some(responses.get_key_value(code)?.0.as_str());
        }
    }
    let lowest = responses
        .keys()
        .filter(|code| {
            code.len() == 3 && code.starts_with('2') && code.bytes().all(|b| b.is_ascii_digit())
        })
        .min();
    lowest
        .or_else(|| {
            responses
                .keys()
                .find(|code| code.eq_ignore_ascii_case("2XX"))
        })
        .map(String::as_str)
}

fn json_media(content: &Map<String, Value>) -> Option<&Value> {
    content
        .iter()
        .find(|(media_type, _)| {
            media_type
                .split(';')
                .next()
                .is_some_and(|b| b.trim() == "application/json")
        })
        .or_else(|| {
            // The first by name, not by position: key order must not matter.
            content
                .iter()
                .filter(|(media_type, _)| is_json_media_type(media_type))
                .min_by_key(|(media_type, _)| media_type.as_str())
        })
        .or_else(|| {
            content
                .iter()
                .find(|(media_type, _)| *media_type == "*/*" || *media_type == "application/*")
        })
        .map(|(_, media)| media)
}

fn is_file_schema(schema: &Value) -> bool {
    schema.get("type").and_then(Value::as_str) == Some("file")
}

/// Converts a response schema with an object root; a `$ref` root is
/// inlined, anything that is not an object is wrapped in `result`.
fn object_root(
    converter: &mut Converter,
    file: &Arc<str>,
    schema: &Value,
) -> Result<Schema, String> {
    let (root_file, node) = converter.resolver().follow(file, schema)?;
    let mut reached = Reached::new();
    let converted = converter.convert(&root_file, node, Direction::Output, &mut reached)?;
    if let Value::Object(mut root) = converted
        && is_object_root(&root)
    {
        root.insert("type".to_string(), json!("object"));
        return converter.finish(root, reached, Direction::Output);
    }
    let mut reached = Reached::new();
    let result = converter.convert(file, schema, Direction::Output, &mut reached)?;
    let mut root = Map::new();
    root.insert("type".to_string(), json!("object"));
    root.insert("properties".to_string(), json!({ "result": result }));
    root.insert("required".to_string(), json!(["result"]));
    converter.finish(root, reached, Direction::Output)
}

fn is_object_root(root: &Map<String, Value>) -> bool {
    match root.get("type") {
        Some(Value::String(t)) => t == "object",
        Some(_) => false,
        None => {
            !root.contains_key("anyOf")
                && !root.contains_key("oneOf")
                && !root.contains_key("$ref")
                && (root.contains_key("properties") || root.contains_key("additionalProperties"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn codes(keys: &[&str]) -> Map<String, Value> {
        keys.iter().map(|k| (k.to_string(), json!({}))).collect()
    }

    #[test]
    fn success_codes_are_tried_in_order() {
        assert_eq!(success_code(&codes(&["201", "200"])), Some("200"));
        assert_eq!(success_code(&codes(&["204", "202", "201"])), Some("201"));
        assert_eq!(success_code(&codes(&["206", "203", "2XX"])), Some("203"));
        assert_eq!(success_code(&codes(&["2XX", "404"])), Some("2XX"));
        assert_eq!(success_code(&codes(&["204", "400"])), Some("204"));
        assert_eq!(success_code(&codes(&["default", "404"])), None);
    }
}
