//! One pass of compaction over one schema node: everything nested deeper
//! than the depth is replaced by a permissive stub that says what was left
//! out.
//!
//! Depth counts object levels the way an agent reads a response: each step
//! into a member (`properties`, `patternProperties`, `additionalProperties`,
//! …) is one level deeper; array items, `allOf`/`anyOf`/`oneOf`
//! alternatives and `$ref` hops stay on the level of the value they
//! describe. A node below the depth keeps everything that has no structure
//! of its own (scalars, enums, arrays of scalars) and is stubbed only when
//! it would open further levels. A stub accepts every value the full
//! schema accepts: it keeps at most the node's `type` (or the referenced
//! schema's) and its description, so the published schema is a relaxation
//! of the full one.

use crate::schema::{Direction, Schema};
use serde_json::{Map, Value, json};
use std::collections::BTreeMap;

/// The prefix every converted `$ref` carries.
const DEFS_PREFIX: &str = "#/$defs/";

/// Referenced schemas named in a stub's description, at most.
const NAMED_IN_STUB: usize = 3;

/// One node walk: the rules, plus what the walk found it needs.
pub struct Walk<'s> {
    /// The full schema, for the `$defs` a `$ref` names.
    pub schema: &'s Schema,
    pub depth: u32,
    pub direction: Direction,
    /// Definitions the kept parts reference, each at the shallowest level
    /// it was reached.
    pub needs: BTreeMap<String, u32>,
    /// Whether anything was replaced by a stub.
    pub elided: bool,
}

impl<'s> Walk<'s> {
    pub fn new(schema: &'s Schema, depth: u32, direction: Direction) -> Self {
        Walk {
            schema,
            depth,
            direction,
            needs: BTreeMap::new(),
            elided: false,
        }
    }

    /// The compacted copy of a schema object at `level`. `required` says
    /// the value is required (a required member, the top level, or a
    /// definition reached that way): input never elides those, nor the
    /// alternatives and items of such a value.
    pub fn object(
        &mut self,
        map: &Map<String, Value>,
        level: u32,
        required: bool,
    ) -> Map<String, Value> {
        let required_value = required;
        let required_members: Vec<&str> = map
            .get("required")
            .and_then(Value::as_array)
            .map(|names| names.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let mut out = Map::with_capacity(map.len());
        for (key, value) in map {
            let kept = match (key.as_str(), value) {
                ("$ref", Value::String(reference)) => {
                    if let Some(name) = reference.strip_prefix(DEFS_PREFIX) {
                        self.need(name, level);
                    }
                    value.clone()
                }
                ("properties", Value::Object(members)) => Value::Object(
                    members
                        .iter()
                        .map(|(name, member)| {
                            let required = required_members.contains(&name.as_str());
                            (name.clone(), self.node(member, level + 1, required))
                        })
                        .collect(),
                ),
                ("patternProperties" | "dependentSchemas", Value::Object(members)) => {
                    Value::Object(
                        members
                            .iter()
                            .map(|(name, member)| {
                                (name.clone(), self.node(member, level + 1, false))
                            })
                            .collect(),
                    )
                }
                ("additionalProperties" | "unevaluatedProperties" | "propertyNames", _) => {
                    self.node(value, level + 1, false)
                }
                ("allOf" | "anyOf" | "oneOf" | "prefixItems", Value::Array(items)) => Value::Array(
                    items
                        .iter()
                        .map(|item| self.node(item, level, required_value))
                        .collect(),
                ),
                (
                    "items" | "contains" | "unevaluatedItems" | "not" | "if" | "then" | "else"
                    | "contentSchema",
                    _,
                ) => self.node(value, level, required_value),
                _ => value.clone(),
            };
            out.insert(key.clone(), kept);
        }
        out
    }

    /// A subschema at `level`: kept (and walked), or stubbed.
    fn node(&mut self, node: &Value, level: u32, required: bool) -> Value {
        let Value::Object(map) = node else {
            return node.clone();
        };
        let protected = required && self.direction == Direction::Input;
        if level > self.depth && !protected && opens_levels(map) {
            self.elided = true;
            return self.stub(map);
        }
        Value::Object(self.object(map, level, required))
    }

    fn need(&mut self, name: &str, level: u32) {
        let entry = self.needs.entry(name.to_string()).or_insert(level);
        *entry = (*entry).min(level);
    }

    /// A permissive stand-in for a node: its type (or its reference's),
    /// and a description naming what was left out.
    fn stub(&self, map: &Map<String, Value>) -> Value {
        let named = referenced_names(map);
        let mut out = Map::new();
        let kind = map.get("type").cloned().or_else(|| {
            let name = map.get("$ref")?.as_str()?.strip_prefix(DEFS_PREFIX)?;
            self.schema.def(name)?.value.get("type").cloned()
        });
        if let Some(kind) = kind {
            out.insert("type".to_string(), kind);
        }
        let what = if named.is_empty() {
            "a nested schema".to_string()
        } else {
            let mut list = named
                .iter()
                .take(NAMED_IN_STUB)
                .map(|name| format!("`{name}`"))
                .collect::<Vec<_>>()
                .join(", ");
            if named.len() > NAMED_IN_STUB {
                list.push_str(", …");
            }
            format!("schema {list}")
        };
        let consequence = match self.direction {
            Direction::Output => "",
            Direction::Input => " Accepted as given; checked when the call is made.",
        };
        let note = format!("[Not expanded here: {what}.{consequence}]");
        let description = match description_of(map, LOOK_THROUGH) {
            Some(own) => format!("{own} {note}"),
            None => note,
        };
        out.insert("description".to_string(), json!(description));
        Value::Object(out)
    }
}

/// Whether walking `map` could open another level: it has members, or a
/// reference, or a subschema that has.
fn opens_levels(map: &Map<String, Value>) -> bool {
    map.iter().any(|(key, value)| match key.as_str() {
        "$ref" | "properties" | "patternProperties" | "dependentSchemas" => true,
        "additionalProperties" | "unevaluatedProperties" => match value {
            Value::Object(inner) => !inner.is_empty(),
            _ => false,
        },
        "items" | "contains" | "unevaluatedItems" | "not" | "if" | "then" | "else" => {
            value.as_object().is_some_and(opens_levels)
        }
        "allOf" | "anyOf" | "oneOf" | "prefixItems" => value
            .as_array()
            .is_some_and(|items| items.iter().filter_map(Value::as_object).any(opens_levels)),
        _ => false,
    })
}

/// How far into nested alternatives a stub looks for the names and the
/// description of what it replaces (`anyOf: [{anyOf: [id, $ref]}, null]`
/// is how documents write a nullable expandable object).
const LOOK_THROUGH: u32 = 3;

/// The `$defs` names a node refers to directly or through its
/// alternatives and array items, each once, in order.
fn referenced_names(map: &Map<String, Value>) -> Vec<String> {
    fn collect(map: &Map<String, Value>, depth: u32, names: &mut Vec<String>) {
        if let Some(name) = map
            .get("$ref")
            .and_then(Value::as_str)
            .and_then(|r| r.strip_prefix(DEFS_PREFIX))
            && !names.iter().any(|n| n == name)
        {
            names.push(name.to_string());
        }
        if depth == 0 {
            return;
        }
        let items = map.get("items").and_then(Value::as_object);
        for item in alternatives(map).chain(items) {
            collect(item, depth - 1, names);
        }
    }
    let mut names = Vec::new();
    collect(map, LOOK_THROUGH, &mut names);
    names
}

/// The node's own description, else the first one among its alternatives.
fn description_of(map: &Map<String, Value>, depth: u32) -> Option<&str> {
    match map.get("description").and_then(Value::as_str) {
        Some(own) if !own.is_empty() => Some(own),
        _ if depth == 0 => None,
        _ => alternatives(map).find_map(|item| description_of(item, depth - 1)),
    }
}

/// The subschemas of `allOf`, `anyOf` and `oneOf`, in that order.
fn alternatives(map: &Map<String, Value>) -> impl Iterator<Item = &Map<String, Value>> {
    ["allOf", "anyOf", "oneOf"]
        .into_iter()
        .filter_map(|key| map.get(key).and_then(Value::as_array))
        .flatten()
        .filter_map(Value::as_object)
}
