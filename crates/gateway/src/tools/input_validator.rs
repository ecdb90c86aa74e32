//! The gateway's validator of a tool's inputSchema: JSON Schema 2020-12
//! compiled by `jsonschema`, relaxed where the Rust regex engine cannot
//! express an ECMA-262 pattern the catalog accepted.
//!
//! Its own module because it is one job with one rule (validate what can
//! be validated, leave the rest to the backend), used by the per-tool
//! cache that compiles each schema once.

use serde_json::{Value, json};

/// The compiled inputSchema of `tool`; the error says why it cannot be
/// compiled at all.
pub fn compile_input(tool: &sezzlee_catalog::Tool) -> Result<jsonschema::Validator, String> {
    let schema = tool.input_schema.to_value();
    compile(&schema).or_else(|err| {
        // A pattern valid in ECMA-262 (what clients compile, and
        // what the catalog checks) that this Rust engine cannot
        // express, such as lone surrogates (`[\uD800-\uDFFF]`,
        // Amazon Clean Rooms): validate without it rather than
        // refuse every call; the backend still checks it.
        let mut relaxed = schema;
        let dropped = drop_uncompilable_patterns(&mut relaxed);
        if dropped == 0 {
            return Err(err);
        }
        tracing::warn!(
            tool = %tool.name,
            dropped,
            "inputSchema validated without patterns the validator cannot compile ({err})"
        );
        compile(&relaxed)
    })
}

/// The gateway's validator of an inputSchema.
fn compile(schema: &Value) -> Result<jsonschema::Validator, String> {
    jsonschema::options()
        .with_draft(jsonschema::Draft::Draft202012)
        .build(schema)
        .map_err(|err| err.to_string())
}

/// Removes from `schema` every `pattern` and `patternProperties` entry the
/// validator's regex engine cannot compile; how many.
fn drop_uncompilable_patterns(schema: &mut Value) -> usize {
    let compiles = |pattern: &str| compile(&json!({"pattern": pattern})).is_ok();
    let mut dropped = 0;
    match schema {
        Value::Object(members) => {
            if members
                .get("pattern")
                .and_then(Value::as_str)
                .is_some_and(|pattern| !compiles(pattern))
            {
                members.remove("pattern");
                dropped += 1;
            }
            if let Some(Value::Object(patterns)) = members.get_mut("patternProperties") {
                let before = patterns.len();
                patterns.retain(|pattern, _| compiles(pattern));
                dropped += before - patterns.len();
            }
            for member in members.values_mut() {
                dropped += drop_uncompilable_patterns(member);
            }
        }
        Value::Array(items) => {
            for item in items {
                dropped += drop_uncompilable_patterns(item);
            }
        }
        _ => {}
    }
    dropped
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_the_validator_cannot_compile_are_left_to_the_backend() {
        // Valid ECMA-262 (lone surrogates), not expressible in Rust regex.
        let surrogates = "[\\u0020-\\uD7FF\\uD800\\uDBFF-\\uDC00\\uDFFF]*";
        let mut schema = json!({
            "type": "object",
            "properties": {
                "name": {"type": "string", "pattern": surrogates},
                "code": {"type": "string", "pattern": "^[A-Z]+$"},
                "labels": {"type": "object", "patternProperties": {(surrogates): {"type": "string"}, "^x-": {"type": "string"}}}
            }
        });
        assert!(compile(&schema).is_err(), "the engine learned surrogates");
        assert_eq!(drop_uncompilable_patterns(&mut schema), 2);
        let validator = compile(&schema).expect("compiles without them");
        assert!(validator.is_valid(&json!({"name": "any", "code": "AB"})));
        assert!(
            !validator.is_valid(&json!({"code": "ab"})),
            "other patterns still hold"
        );
        assert!(
            schema["properties"]["labels"]["patternProperties"]
                .get("^x-")
                .is_some()
        );
    }
}
