//! Values for a JSON Schema: what a real backend could answer, or what an
//! agent could send, so tests can check a published schema against data
//! rather than against another schema.
//!
//! Deterministic and deliberately rich: every member while a node budget
//! lasts (so the values reach far below the published depth), object
//! alternatives before scalar ones, the first `enum`/`const`, formats
//! honoured. Not every schema can be satisfied this way (patterns,
//! `oneOf` overlaps); callers validate each value against the full schema
//! and count the ones that were not valid.

use serde_json::{Map, Value, json};

/// Nodes generated before the generator switches to the smallest valid
/// choices (required members only, scalar alternatives, empty arrays).
const RICH_NODES: usize = 600;

/// Nesting below which choices stay rich (recursive schemas would spend
/// the whole node budget on one deep branch otherwise).
const RICH_NESTING: usize = 8;

/// Deepest nesting generated at all: recursive schemas end here.
const MAX_NESTING: usize = 24;

/// A rich value for `schema` (a root holding its own `$defs`).
pub fn instance(schema: &Value) -> Value {
    generate(schema, RICH_NODES)
}

/// The smallest value the generator makes: required members only.
pub fn minimal_instance(schema: &Value) -> Value {
    generate(schema, 0)
}

fn generate(schema: &Value, rich_nodes: usize) -> Value {
    let mut generator = Generator {
        defs: schema.get("$defs").and_then(Value::as_object),
        nodes: 0,
        rich_nodes,
    };
    generator.value(schema, 0)
}

struct Generator<'s> {
    defs: Option<&'s Map<String, Value>>,
    nodes: usize,
    rich_nodes: usize,
}

impl<'s> Generator<'s> {
    fn rich(&self, nesting: usize) -> bool {
        self.nodes < self.rich_nodes && nesting < RICH_NESTING
    }

    fn resolve(&self, node: &'s Value) -> &'s Value {
        let mut node = node;
        for _ in 0..8 {
            let Some(name) = node
                .get("$ref")
                .and_then(Value::as_str)
                .and_then(|r| r.strip_prefix("#/$defs/"))
            else {
                break;
            };
            match self.defs.and_then(|defs| defs.get(name)) {
                Some(target) => node = target,
                None => break,
            }
        }
        node
    }

    fn value(&mut self, node: &'s Value, nesting: usize) -> Value {
        self.nodes += 1;
        let node = self.resolve(node);
        let Some(map) = node.as_object() else {
            return json!("any");
        };
        if nesting > MAX_NESTING {
            return Value::Null;
        }
        if let Some(constant) = map.get("const") {
            return constant.clone();
        }
        if let Some(first) = map
            .get("enum")
            .and_then(Value::as_array)
            .and_then(|e| e.first())
        {
            return first.clone();
        }
        if let Some(parts) = map.get("allOf").and_then(Value::as_array) {
            let mut merged = Map::new();
            let mut other = None;
            for part in parts {
                match self.value(part, nesting) {
                    Value::Object(members) => merged.extend(members),
                    value => other = Some(value),
                }
            }
            if let Value::Object(own) = self.typed(map, nesting) {
                merged.extend(own);
            }
            return match other {
                Some(value) if merged.is_empty() => value,
                _ => Value::Object(merged),
            };
        }
        for key in ["oneOf", "anyOf"] {
            if let Some(options) = map.get(key).and_then(Value::as_array) {
                let pick = self.pick(options, nesting);
                if let Some(option) = pick {
                    return self.value(option, nesting);
                }
            }
        }
        self.typed(map, nesting)
    }

    /// An alternative: one with members while the budget lasts, else the
    /// first that is not `null`.
    fn pick(&self, options: &'s [Value], nesting: usize) -> Option<&'s Value> {
        let opens = |option: &&'s Value| {
            let target = self.resolve(option);
            target.get("properties").is_some()
        };
        let not_null = |option: &&'s Value| option.get("type") != Some(&json!("null"));
        if self.rich(nesting)
            && let Some(found) = options.iter().find(opens)
        {
            return Some(found);
        }
        options.iter().find(not_null).or(options.first())
    }

    fn typed(&mut self, map: &'s Map<String, Value>, nesting: usize) -> Value {
        let kind = match map.get("type") {
            Some(Value::String(kind)) => kind.as_str(),
            Some(Value::Array(kinds)) => kinds
                .iter()
                .filter_map(Value::as_str)
                .find(|k| *k != "null")
                .unwrap_or("null"),
            _ if map.contains_key("properties") => "object",
            _ if map.contains_key("items") => "array",
            _ => return json!({}),
        };
        match kind {
            "object" => self.object(map, nesting),
            "array" => {
                let least = map.get("minItems").and_then(Value::as_u64).unwrap_or(0);
                let item = map.get("items");
                match item {
                    Some(item) if self.rich(nesting) || least > 0 => {
                        Value::Array(vec![self.value(item, nesting + 1)])
                    }
                    _ => json!([]),
                }
            }
            "string" => string_for(map),
            "integer" => json!(number_for(map).round() as i64),
            "number" => json!(number_for(map)),
            "boolean" => json!(true),
            "null" => Value::Null,
            _ => json!({}),
        }
    }

    fn object(&mut self, map: &'s Map<String, Value>, nesting: usize) -> Value {
        let required: Vec<&str> = map
            .get("required")
            .and_then(Value::as_array)
            .map(|names| names.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let mut out = Map::new();
        if let Some(properties) = map.get("properties").and_then(Value::as_object) {
            for (name, member) in properties {
                if self.rich(nesting) || required.contains(&name.as_str()) {
                    out.insert(name.clone(), self.value(member, nesting + 1));
                }
            }
        }
        Value::Object(out)
    }
}

fn string_for(map: &Map<String, Value>) -> Value {
    let format = map.get("format").and_then(Value::as_str).unwrap_or("");
    let mut text = match format {
        "date-time" => "2024-01-02T03:04:05Z".to_string(),
        "date" => "2024-01-02".to_string(),
        "time" => "03:04:05Z".to_string(),
        "uri" | "url" | "uri-reference" => "https://example.com/x".to_string(),
        "email" => "a@example.com".to_string(),
        "uuid" => "123e4567-e89b-12d3-a456-426614174000".to_string(),
        "ipv4" => "127.0.0.1".to_string(),
        "ipv6" => "::1".to_string(),
        "hostname" => "example.com".to_string(),
        _ => literal_prefix(map).unwrap_or_else(|| "text".to_string()),
    };
    // A document may ask for absurd lengths; no test value needs more.
    let least = map
        .get("minLength")
        .and_then(Value::as_u64)
        .unwrap_or(0)
        .min(10_000) as usize;
    while text.chars().count() < least {
        text.push('x');
    }
    if let Some(most) = map.get("maxLength").and_then(Value::as_u64) {
        text = text.chars().take(most as usize).collect();
    }
    json!(text)
}

/// For a `pattern` that starts with a literal (`^/v1/prices`), that
/// literal: enough for the URL-like patterns real documents use.
fn literal_prefix(map: &Map<String, Value>) -> Option<String> {
    let pattern = map.get("pattern")?.as_str()?.strip_prefix('^')?;
    let literal: String = pattern
        .chars()
        .take_while(|c| c.is_alphanumeric() || matches!(c, '/' | '_' | '-' | ':'))
        .collect();
    (!literal.is_empty()).then_some(literal)
}

fn number_for(map: &Map<String, Value>) -> f64 {
    let low = map
        .get("minimum")
        .or(map.get("exclusiveMinimum"))
        .and_then(Value::as_f64);
    let high = map
        .get("maximum")
        .or(map.get("exclusiveMaximum"))
        .and_then(Value::as_f64);
    match (low, high) {
        (Some(low), Some(high)) => ((low + high) / 2.0).round(),
        (Some(low), None) => low + 1.0,
        (None, Some(high)) => high - 1.0,
        (None, None) => 1.0,
    }
}
