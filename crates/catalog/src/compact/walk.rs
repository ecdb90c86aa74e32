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
//! of the full one. As a last resort a walk also trims text ([`Text`]):
//! `examples` go, then long descriptions are cut and the longest patterns
//! and enums are left to the full schema's check; the published schema
//! stays a relaxation.

use crate::schema::{Direction, Schema};
use serde_json::{Map, Value, json};
use std::collections::{BTreeMap, BTreeSet};

/// The prefix every converted `$ref` carries.
const DEFS_PREFIX: &str = "#/$defs/";

/// Referenced schemas named in a stub's description, at most.
const NAMED_IN_STUB: usize = 3;

/// How much of a schema's text a walk keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Text {
    Whole,
    /// `examples` left out.
    NoExamples,
    /// `examples` left out, every description cut to
    /// [`SHORT_DESCRIPTION`] characters (empty ones dropped), and the
    /// longest constraints (patterns past that length, enums past
    /// [`LONG_ENUM`] values) left to the full schema's check.
    Short,
    /// As `Short`, and no descriptions at all but the notes of stubs: the
    /// member names and types of an object with hundreds of members.
    Bare,
}

/// The longest description (and `pattern`) kept by [`Text::Short`], in
/// characters.
pub const SHORT_DESCRIPTION: usize = 120;

/// An `enum` longer than this is replaced by [`Text::Short`] with a
/// description showing its first [`ENUM_SHOWN`] values.
const LONG_ENUM: usize = 50;
const ENUM_SHOWN: usize = 5;

/// One node walk: the rules, plus what the walk found it needs.
pub struct Walk<'s> {
    /// The full schema, for the `$defs` a `$ref` names.
    pub schema: &'s Schema,
    pub depth: u32,
    pub text: Text,
    pub direction: Direction,
    /// Definitions the kept parts reference, each at the shallowest level
    /// it was reached.
    pub needs: BTreeMap<String, u32>,
    /// Definitions referenced only below the depth: published as a stub
    /// definition (unless they are expanded anyway), so a schema used by
    /// many members says once what was left out.
    pub stubbed: BTreeSet<String>,
    /// Whether anything was replaced by a stub.
    pub elided: bool,
    /// Whether a `oneOf` was published as `anyOf` ([`Walk::relaxes`]): the
    /// walked copy differs from the full schema even when nothing was
    /// left out.
    pub relaxed: bool,
}

impl<'s> Walk<'s> {
    pub fn new(schema: &'s Schema, depth: u32, text: Text, direction: Direction) -> Self {
        Walk {
            schema,
            depth,
            text,
            direction,
            needs: BTreeMap::new(),
            stubbed: BTreeSet::new(),
            elided: false,
            relaxed: false,
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
        let mut long_enum: Option<&Vec<Value>> = None;
        let mut relaxed_one_of: Option<Value> = None;
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
                ("oneOf", Value::Array(items)) if self.relaxes(items) => {
                    self.relaxed = true;
                    relaxed_one_of = Some(Value::Array(
                        items
                            .iter()
                            .map(|item| self.node(item, level, required_value))
                            .collect(),
                    ));
                    continue;
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
                ("enum", Value::Array(values))
                    if self.text >= Text::Short && values.len() > LONG_ENUM =>
                {
                    self.elided = true;
                    long_enum = Some(values);
                    continue;
                }
                _ => match self.trimmed(key, value) {
                    Some(kept) => kept,
                    None => continue,
                },
            };
            out.insert(key.clone(), kept);
        }
        if let Some(alternatives) = relaxed_one_of {
            // Beside an `anyOf` of its own, the relaxed one joins `allOf`.
            if out.contains_key("anyOf") {
                let all = out
                    .entry("allOf")
                    .or_insert_with(|| Value::Array(Vec::new()));
                if let Value::Array(all) = all {
                    all.push(json!({"anyOf": alternatives}));
                }
            } else {
                out.insert("anyOf".to_string(), alternatives);
            }
        }
        if let Some(values) = long_enum {
            let shown: Vec<String> = values
                .iter()
                .take(ENUM_SHOWN)
                .map(|v| v.to_string())
                .collect();
            let note = format!(
                "[One of {} values, e.g. {}, …; checked when the call is made.]",
                values.len(),
                shown.join(", ")
            );
            let own = out.get("description").and_then(Value::as_str);
            let description = with_note(own, note);
            out.insert("description".to_string(), json!(description));
        }
        out
    }

    /// Whether a `oneOf` of `alternatives` is published as `anyOf`: when
    /// a cut may relax them (one opens levels, which a stub may end here
    /// or in a definition it references, or the walk trims constraints),
    /// two relaxed alternatives can both accept a value only one of the
    /// full ones accepts, and `oneOf` would refuse it; `anyOf` accepts
    /// whatever `oneOf` did, so the published schema stays a relaxation.
    /// Alternatives a cut cannot touch (scalars, enums) stay `oneOf`.
    fn relaxes(&self, alternatives: &[Value]) -> bool {
        self.text >= Text::Short
            || alternatives
                .iter()
                .filter_map(Value::as_object)
                .any(opens_levels)
    }

    /// An annotation or constraint as this walk's [`Text`] keeps it: as
    /// it is, shortened, or `None` when left out (which marks the walk as
    /// having left something out). Keywords it does not trim pass as they
    /// are.
    fn trimmed(&mut self, key: &str, value: &Value) -> Option<Value> {
        let kept = match (key, value) {
            ("examples", _) if self.text >= Text::NoExamples => None,
            ("description", _) if self.text == Text::Bare => None,
            ("description", Value::String(text)) if self.text == Text::Short => {
                match shortened(text) {
                    Some(short) => Some(Value::String(short)),
                    None if text.is_empty() => None,
                    None => return Some(value.clone()),
                }
            }
            ("pattern", Value::String(pattern))
                if self.text >= Text::Short && pattern.chars().count() > SHORT_DESCRIPTION =>
            {
                None
            }
            _ => return Some(value.clone()),
        };
        self.elided = true;
        kept
    }

    /// A description of the schema a stub stands for, as this walk's
    /// [`Text`] keeps descriptions.
    fn own_description(&self, own: Option<&str>) -> Option<String> {
        let own = own?;
        match self.text {
            Text::Bare => None,
            Text::Short => Some(shortened(own).unwrap_or_else(|| own.to_string())),
            _ => Some(own.to_string()),
        }
    }

    /// A subschema at `level`: kept (and walked), or stubbed.
    fn node(&mut self, node: &Value, level: u32, required: bool) -> Value {
        let Value::Object(map) = node else {
            return node.clone();
        };
        let protected = required && self.direction == Direction::Input;
        if level > self.depth && !protected && opens_levels(map) {
            self.elided = true;
            if let Some(name) = plain_reference(map) {
                self.stubbed.insert(name.to_string());
                return Value::Object(self.annotations(map));
            }
            return self.stub(map);
        }
        Value::Object(self.object(map, level, required))
    }

    /// A plain reference kept as it is, its text trimmed as the walk says.
    fn annotations(&mut self, map: &Map<String, Value>) -> Map<String, Value> {
        map.iter()
            .filter_map(|(key, value)| Some((key.clone(), self.trimmed(key, value)?)))
            .collect()
    }

    /// The stand-in published for definition `name` when it is reached
    /// only below the depth: its type, the start of its description, and
    /// what was left out.
    pub fn stub_definition(&self, name: &str) -> Value {
        let mut out = Map::new();
        let value = self.schema.def(name).map(|def| def.value());
        let def = value.as_deref().and_then(Value::as_object);
        if let Some(kind) = def.and_then(|def| def.get("type")) {
            out.insert("type".to_string(), kind.clone());
        }
        // Only the start of its description, whatever the walk keeps:
        // the references that share it carry their own.
        let own = def
            .and_then(|def| description_of(def, LOOK_THROUGH))
            .and_then(|own| self.own_description(Some(shortened(own).as_deref().unwrap_or(own))));
        let note = self.note(&format!("schema `{name}`"));
        out.insert(
            "description".to_string(),
            json!(with_note(own.as_deref(), note)),
        );
        Value::Object(out)
    }

    /// `[Not expanded here: …]`, with what input stubs promise.
    fn note(&self, what: &str) -> String {
        let consequence = match self.direction {
            Direction::Output => "",
            Direction::Input => " Accepted as given; checked when the call is made.",
        };
        format!("[Not expanded here: {what}.{consequence}]")
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
            self.schema.def(name)?.value().get("type").cloned()
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
        let note = self.note(&what);
        let own = self.own_description(description_of(map, LOOK_THROUGH));
        out.insert(
            "description".to_string(),
            json!(with_note(own.as_deref(), note)),
        );
        Value::Object(out)
    }
}

/// A description followed by a bracketed note, or the note alone.
fn with_note(own: Option<&str>, note: String) -> String {
    match own {
        Some(own) => format!("{own} {note}"),
        None => note,
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

/// The definition a node names when it is nothing but a reference (plus
/// annotations such as its description).
fn plain_reference(map: &Map<String, Value>) -> Option<&str> {
    const ANNOTATIONS: [&str; 7] = [
        "$ref",
        "description",
        "title",
        "deprecated",
        "readOnly",
        "writeOnly",
        "examples",
    ];
    if !map.keys().all(|key| ANNOTATIONS.contains(&key.as_str())) {
        return None;
    }
    map.get("$ref")?.as_str()?.strip_prefix(DEFS_PREFIX)
}

/// `text` cut to at most [`SHORT_DESCRIPTION`] characters: at the end of
/// its first sentence when that comes early enough, else at a word
/// boundary, with `…`; `None` when it is short already.
fn shortened(text: &str) -> Option<String> {
    if text.chars().count() <= SHORT_DESCRIPTION {
        return None;
    }
    let head: String = text.chars().take(SHORT_DESCRIPTION - 1).collect();
    if let Some(end) = head.find(". ").filter(|&end| end >= SHORT_DESCRIPTION / 3) {
        return Some(head[..=end].to_string());
    }
    let cut = head
        .rfind(char::is_whitespace)
        .filter(|&at| at >= SHORT_DESCRIPTION / 2)
        .unwrap_or(head.len());
    Some(format!("{}…", head[..cut].trim_end()))
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
