//! Schema conversion: OpenAPI schemas become self-contained JSON Schema 2020-12.
//!
//! Agents validate and plan against these schemas, so they must be valid
//! 2020-12 whatever dialect the document was written in (Swagger 2.0,
//! OpenAPI 3.0 or 3.1), finite even when the document's schemas are
//! recursive, and free of OpenAPI-only vocabulary. `$ref`s become entries of
//! `$defs`; each referenced schema is converted once per build and shared by
//! every tool that reaches it (the Graph document would otherwise hold over
//! a gigabyte of copies), and a tool's schema is only materialised as one
//! JSON value when somebody asks for it.

use super::fingerprint::{CanonicalSink, write_canonical_to, write_string};
use super::refs::{RefTarget, Resolver};
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

/// Which OpenAPI dialect a schema is written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Dialect {
    Swagger2,
    OpenApi30,
    OpenApi31,
}

impl Dialect {
    /// Swagger 2.0 and OpenAPI 3.0 share the draft-04-era keywords
    /// (`nullable`, boolean exclusive bounds, `example`).
    fn is_legacy(self) -> bool {
        matches!(self, Dialect::Swagger2 | Dialect::OpenApi30)
    }
}

/// Input schemas drop `readOnly` members (the server computes them); output
/// schemas drop `writeOnly` members (the server never returns them).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Direction {
    Input,
    Output,
}

/// Deepest schema nesting we convert; deeper input is refused, not a crash.
const MAX_DEPTH: usize = 256;

/// One converted `$defs` entry, shared between the tools that reach it.
#[derive(Debug)]
pub struct Def {
    pub name: String,
    pub value: Value,
    /// Canonical JSON of `value`, kept so versions hash without re-rendering.
    pub canonical: String,
}

/// A converted schema: an object root plus the definitions it reaches,
/// sorted by name.
#[derive(Debug, Clone, Default)]
pub struct Schema {
    pub root: Map<String, Value>,
    pub defs: Vec<Arc<Def>>,
}

impl Schema {
    /// The schema as one JSON value, `$defs` included.
    pub fn to_value(&self) -> Value {
        let mut root = self.root.clone();
        if !self.defs.is_empty() {
            let defs: Map<String, Value> = self
                .defs
                .iter()
                .map(|def| (def.name.clone(), def.value.clone()))
                .collect();
            root.insert("$defs".to_string(), Value::Object(defs));
        }
        Value::Object(root)
    }

    /// Writes the canonical JSON of [`Schema::to_value`] without building it.
    pub fn write_canonical(&self, sink: &mut dyn CanonicalSink) {
        let mut keys: Vec<&str> = self.root.keys().map(String::as_str).collect();
        if !self.defs.is_empty() {
            keys.push("$defs");
        }
        keys.sort_unstable_by(|a, b| a.as_bytes().cmp(b.as_bytes()));
        sink.push("{");
        for (i, key) in keys.into_iter().enumerate() {
            if i > 0 {
                sink.push(",");
            }
            write_string(key, sink);
            sink.push(":");
            if key == "$defs" && !self.root.contains_key("$defs") {
                sink.push("{");
                for (j, def) in self.defs.iter().enumerate() {
                    if j > 0 {
                        sink.push(",");
                    }
                    write_string(&def.name, sink);
                    sink.push(":");
                    sink.push(&def.canonical);
                }
                sink.push("}");
            } else if let Some(value) = self.root.get(key) {
                write_canonical_to(value, sink);
            }
        }
        sink.push("}");
    }

    /// The top-level members, in order.
    pub fn properties(&self) -> Option<&Map<String, Value>> {
        self.root.get("properties").and_then(Value::as_object)
    }

    /// Names listed in the root `required`.
    pub fn required(&self) -> Vec<&str> {
        self.root
            .get("required")
            .and_then(Value::as_array)
            .map(|items| items.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default()
    }

    /// A definition by name, for rendering `$ref` members on cards.
    pub fn def(&self, name: &str) -> Option<&Def> {
        self.defs
            .binary_search_by(|def| def.name.as_str().cmp(name))
            .ok()
            .and_then(|i| self.defs.get(i))
            .map(|def| def.as_ref())
    }
}

struct DefEntry {
    def: Arc<Def>,
    deps: Vec<RefTarget>,
}

/// Converts the schemas of one document, caching every referenced schema.
pub struct Converter<'r> {
    resolver: &'r Resolver<'r>,
    document: Arc<str>,
    dialect: Dialect,
    cache: HashMap<(RefTarget, Direction), Result<Arc<DefEntry>, String>>,
}

/// The references one conversion reached, to be closed over later.
pub type Reached = BTreeSet<RefTarget>;

impl<'r> Converter<'r> {
    pub fn new(resolver: &'r Resolver<'r>, document: Arc<str>, dialect: Dialect) -> Self {
        Converter {
            resolver,
            document,
            dialect,
            cache: HashMap::new(),
        }
    }

    pub fn resolver(&self) -> &'r Resolver<'r> {
        self.resolver
    }

    pub fn dialect(&self) -> Dialect {
        self.dialect
    }

    /// Converts one schema node written in `file`; every `$ref` it holds
    /// becomes `#/$defs/NAME` and is added to `reached`.
    pub fn convert(
        &mut self,
        file: &Arc<str>,
        node: &Value,
        direction: Direction,
        reached: &mut Reached,
    ) -> Result<Value, String> {
        self.convert_node(file, node, direction, reached, 0)
    }

    /// Closes `reached` over the definitions' own references and returns the
    /// finished schema. Fails when any reference cannot be resolved.
    pub fn finish(
        &mut self,
        root: Map<String, Value>,
        reached: Reached,
        direction: Direction,
    ) -> Result<Schema, String> {
        let mut seen: BTreeSet<RefTarget> = BTreeSet::new();
        let mut stack: Vec<RefTarget> = reached.into_iter().collect();
        let mut defs: BTreeMap<String, Arc<Def>> = BTreeMap::new();
        while let Some(target) = stack.pop() {
            if !seen.insert(target.clone()) {
                continue;
            }
            let entry = self.definition(&target, direction)?;
            stack.extend(
                entry
                    .deps
                    .iter()
                    .filter(|dep| !seen.contains(*dep))
                    .cloned(),
            );
            defs.insert(entry.def.name.clone(), entry.def.clone());
        }
        Ok(Schema {
            root,
            defs: defs.into_values().collect(),
        })
    }

    /// Whether a member schema is left out in this direction: `readOnly`
    /// members of input, `writeOnly` members of output (looking through a
    /// `$ref`, where many documents put the flag).
    pub fn is_left_out(&self, file: &Arc<str>, node: &Value, direction: Direction) -> bool {
        let flag = match direction {
            Direction::Input => "readOnly",
            Direction::Output => "writeOnly",
        };
        if node.get(flag).and_then(Value::as_bool) == Some(true) {
            return true;
        }
        match self.resolver.follow(file, node) {
            Ok((_, target)) => target.get(flag).and_then(Value::as_bool) == Some(true),
            Err(_) => false,
        }
    }

    /// The converted definition of a reference target, from the cache.
    fn definition(
        &mut self,
        target: &RefTarget,
        direction: Direction,
    ) -> Result<Arc<DefEntry>, String> {
        let key = (target.clone(), direction);
        if let Some(cached) = self.cache.get(&key) {
            return cached.clone();
        }
        let result = self.convert_definition(target, direction);
        self.cache.insert(key, result.clone());
        result
    }

    fn convert_definition(
        &mut self,
        target: &RefTarget,
        direction: Direction,
    ) -> Result<Arc<DefEntry>, String> {
        let reference = format!("#{}", target.pointer);
        let resolved = self.resolver.resolve(&target.file, &reference)?;
        let mut reached = Reached::new();
        let value = self.convert_node(&target.file, resolved.value, direction, &mut reached, 0)?;
        let mut canonical = String::new();
        write_canonical_to(&value, &mut canonical);
        Ok(Arc::new(DefEntry {
            def: Arc::new(Def {
                name: self.def_name(target),
                value,
                canonical,
            }),
            deps: reached.into_iter().collect(),
        }))
    }

    /// `$defs` key for a target: the component's own name for the
    /// document's component schemas, otherwise the last pointer segment
    /// with a short hash of the full location so names never clash.
    pub fn def_name(&self, target: &RefTarget) -> String {
        let segments: Vec<&str> = target.pointer.split('/').skip(1).collect();
        let component = match segments.as_slice() {
            ["components", "schemas", name] | ["definitions", name] => Some(*name),
            _ => None,
        };
        let last = segments.last().copied().unwrap_or("root");
        let decoded = last.replace("~1", "/").replace("~0", "~");
        let safe: String = decoded
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        let local = target.file == self.document;
        if local && component.is_some() && safe == decoded && !safe.is_empty() {
            return safe;
        }
        let digest = Sha256::digest(format!("{}#{}", target.file, target.pointer).as_bytes());
        let short: String = digest.iter().take(3).map(|b| format!("{b:02x}")).collect();
        format!("{safe}_{short}")
    }

    fn convert_node(
        &mut self,
        file: &Arc<str>,
        node: &Value,
        direction: Direction,
        reached: &mut Reached,
        depth: usize,
    ) -> Result<Value, String> {
        if depth > MAX_DEPTH {
            return Err("a schema nested too deeply to convert".to_string());
        }
        let map = match node {
            Value::Bool(_) => return Ok(node.clone()),
            Value::Object(map) => map,
            // Not a schema at all: accept anything rather than guess.
            _ => return Ok(json!({})),
        };
        let mut out = Map::new();
        if let Some(reference) = map.get("$ref").and_then(Value::as_str) {
            let resolved = self.resolver.resolve(file, reference)?;
            let name = self.def_name(&resolved.target);
            reached.insert(resolved.target);
            out.insert("$ref".to_string(), Value::String(format!("#/$defs/{name}")));
        }
        for (key, value) in map {
            self.convert_keyword(file, key, value, map, direction, reached, depth, &mut out)?;
        }
        drop_left_out_from_required(map, &mut out);
        if self.dialect.is_legacy() && self.is_nullable(map) {
            return Ok(make_nullable(out));
        }
        Ok(Value::Object(out))
    }

    fn is_nullable(&self, map: &Map<String, Value>) -> bool {
        let key = match self.dialect {
            Dialect::Swagger2 => "x-nullable",
            _ => "nullable",
        };
        map.get(key).and_then(Value::as_bool) == Some(true)
            || map.get("nullable").and_then(Value::as_bool) == Some(true)
    }

    #[allow(clippy::too_many_arguments)]
    fn convert_keyword(
        &mut self,
        file: &Arc<str>,
        key: &str,
        value: &Value,
        map: &Map<String, Value>,
        direction: Direction,
        reached: &mut Reached,
        depth: usize,
        out: &mut Map<String, Value>,
    ) -> Result<(), String> {
        let legacy = self.dialect.is_legacy();
        match key {
            "properties" => {
                if let Value::Object(members) = value {
                    let mut converted = Map::new();
                    for (name, member) in members {
                        if self.is_left_out(file, member, direction) {
                            continue;
                        }
                        let schema =
                            self.convert_node(file, member, direction, reached, depth + 1)?;
                        converted.insert(name.clone(), schema);
                    }
                    out.insert(key.to_string(), Value::Object(converted));
                }
            }
            "patternProperties" | "dependentSchemas" => {
                if let Value::Object(members) = value {
                    let mut converted = Map::new();
                    for (name, member) in members {
                        let schema =
                            self.convert_node(file, member, direction, reached, depth + 1)?;
                        converted.insert(name.clone(), schema);
                    }
                    out.insert(key.to_string(), Value::Object(converted));
                }
            }
            "additionalProperties"
            | "unevaluatedProperties"
            | "unevaluatedItems"
            | "propertyNames"
            | "contains"
            | "not"
            | "if"
            | "then"
            | "else"
            | "contentSchema"
                if (value.is_object() || value.is_boolean()) => {
                    let schema = self.convert_node(file, value, direction, reached, depth + 1)?;
                    out.insert(key.to_string(), schema);
                }
            "items" => match value {
                Value::Array(items) => {
                    let mut converted = Vec::with_capacity(items.len());
                    for item in items {
                        converted.push(self.convert_node(
                            file,
                            item,
                            direction,
                            reached,
                            depth + 1,
                        )?);
                    }
                    out.insert("prefixItems".to_string(), Value::Array(converted));
                }
                Value::Object(_) | Value::Bool(_) => {
                    let schema = self.convert_node(file, value, direction, reached, depth + 1)?;
                    out.insert(key.to_string(), schema);
                }
                _ => {}
            },
            "allOf" | "anyOf" | "oneOf" | "prefixItems" => {
                if let Value::Array(items) = value {
                    if items.is_empty() {
                        return Ok(());
                    }
                    let mut converted = Vec::with_capacity(items.len());
                    for item in items {
                        converted.push(self.convert_node(
                            file,
                            item,
                            direction,
                            reached,
                            depth + 1,
                        )?);
                    }
                    out.insert(key.to_string(), Value::Array(converted));
                }
            }
            "type" => convert_type(value, out),
            "format" => {
                if let Some(format) = value.as_str() {
                    if format == "binary" {
                        out.insert("contentEncoding".to_string(), json!("base64"));
                    } else {
                        if format == "byte" {
                            out.insert("contentEncoding".to_string(), json!("base64"));
                        }
                        out.insert(key.to_string(), value.clone());
                    }
                }
            }
            "required" => {
                let names = unique_strings(value);
                if !names.is_empty() {
                    out.insert(key.to_string(), Value::Array(names));
                }
            }
            "title" | "description" | "pattern" | "contentEncoding" | "contentMediaType"
                if value.is_string() => {
                    out.insert(key.to_string(), value.clone());
                }
            "deprecated" | "readOnly" | "writeOnly" | "uniqueItems"
                if value.is_boolean() => {
                    out.insert(key.to_string(), value.clone());
                }
            "default" | "const" => {
                out.insert(key.to_string(), value.clone());
            }
            "enum"
                if value.as_array().is_some_and(|items| !items.is_empty()) => {
                    out.insert(key.to_string(), value.clone());
                }
            "examples"
                if value.is_array() => {
                    out.insert(key.to_string(), value.clone());
                }
            "example"
                if (!map.contains_key("examples") || !map["examples"].is_array()) => {
                    out.insert("examples".to_string(), Value::Array(vec![value.clone()]));
                }
            "multipleOf"
                if value.as_f64().is_some_and(|n| n > 0.0) => {
                    out.insert(key.to_string(), value.clone());
                }
            "minimum" | "maximum"
                if value.is_number() => {
                    let exclusive = if key == "minimum" {
                        "exclusiveMinimum"
                    } else {
                        "exclusiveMaximum"
                    };
                    let flagged =
                        legacy && map.get(exclusive).and_then(Value::as_bool) == Some(true);
                    let target = if flagged { exclusive } else { key };
                    out.insert(target.to_string(), value.clone());
                }
            "exclusiveMinimum" | "exclusiveMaximum"
                // Boolean forms were folded in with minimum/maximum above.
                if value.is_number() => {
                    out.insert(key.to_string(), value.clone());
                }
            "minLength" | "maxLength" | "minItems" | "maxItems" | "minProperties"
            | "maxProperties" | "minContains" | "maxContains" => {
                if let Some(n) = non_negative_integer(value) {
                    out.insert(key.to_string(), json!(n));
                }
            }
            "dependentRequired" => {
                if let Value::Object(members) = value {
                    let cleaned: Map<String, Value> = members
                        .iter()
                        .filter(|(_, names)| {
                            names
                                .as_array()
                                .is_some_and(|a| a.iter().all(Value::is_string))
                        })
                        .map(|(k, v)| (k.clone(), v.clone()))
                        .collect();
                    out.insert(key.to_string(), Value::Object(cleaned));
                }
            }
            // `$ref` was handled before the loop; everything else is either
            // OpenAPI-only vocabulary (`nullable`, `discriminator`, `xml`,
            // `externalDocs`, `x-*`) or identity keywords (`$id`, `$schema`,
            // `$anchor`, inline `$defs`) whose meaning would change once the
            // schema is moved: dropped.
            _ => {}
        }
        Ok(())
    }
}

/// `type` kept only when it names JSON Schema types; Swagger's `file`
/// becomes a base64 string.
fn convert_type(value: &Value, out: &mut Map<String, Value>) {
    const TYPES: [&str; 7] = [
        "null", "boolean", "object", "array", "number", "string", "integer",
    ];
    match value {
        Value::String(name) if name == "file" => {
            out.insert("type".to_string(), json!("string"));
            out.insert("contentEncoding".to_string(), json!("base64"));
        }
        Value::String(name) if TYPES.contains(&name.as_str()) => {
            out.insert("type".to_string(), value.clone());
        }
        Value::Array(names) => {
            let mut kept: Vec<Value> = Vec::new();
            for name in names.iter().filter_map(Value::as_str) {
                if TYPES.contains(&name) && !kept.iter().any(|k| k == name) {
                    kept.push(json!(name));
                }
            }
            if !kept.is_empty() {
                out.insert("type".to_string(), Value::Array(kept));
            }
        }
        _ => {}
    }
}

/// The strings of a `required` array, each once.
fn unique_strings(value: &Value) -> Vec<Value> {
    let mut names: Vec<Value> = Vec::new();
    if let Value::Array(items) = value {
        for name in items.iter().filter_map(Value::as_str) {
            if !names.iter().any(|n| n == name) {
                names.push(json!(name));
            }
        }
    }
    names
}

/// Members removed for their direction (`readOnly` in input, `writeOnly` in
/// output) cannot stay required.
fn drop_left_out_from_required(source: &Map<String, Value>, out: &mut Map<String, Value>) {
    let (Some(before), Some(after)) = (
        source.get("properties").and_then(Value::as_object),
        out.get("properties").and_then(Value::as_object),
    ) else {
        return;
    };
    if before.len() == after.len() {
        return;
    }
    let removed: Vec<String> = before
        .keys()
        .filter(|name| !after.contains_key(*name))
        .cloned()
        .collect();
    if let Some(Value::Array(required)) = out.get_mut("required") {
        required.retain(|name| {
            !name
                .as_str()
                .is_some_and(|n| removed.iter().any(|r| r == n))
        });
        if required.is_empty() {
            out.remove("required");
        }
    }
}

fn non_negative_integer(value: &Value) -> Option<u64> {
    value.as_u64().or_else(|| {
        value
            .as_f64()
            .filter(|f| *f >= 0.0 && f.fract() == 0.0 && *f < 9.0e15)
            .map(|f| f as u64)
    })
}

/// OpenAPI 3.0 `nullable: true` as 2020-12: a `"null"` type alternative
/// (and `null` admitted by `enum`), or `anyOf` with null when the schema
/// has no `type` to extend.
fn make_nullable(mut out: Map<String, Value>) -> Value {
    if let Some(Value::Array(values)) = out.get_mut("enum")
        && !values.iter().any(Value::is_null)
    {
        values.push(Value::Null);
    }
    match out.get_mut("type") {
        Some(Value::String(name)) => {
            let name = name.clone();
            if name != "null" {
                out.insert("type".to_string(), json!([name, "null"]));
            }
            Value::Object(out)
        }
        Some(Value::Array(names)) => {
            if !names.iter().any(|n| n == "null") {
                names.push(json!("null"));
            }
            Value::Object(out)
        }
        _ => json!({"anyOf": [Value::Object(out), {"type": "null"}]}),
    }
}
