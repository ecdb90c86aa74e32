//! The conversion itself: one document's OpenAPI schemas (any dialect)
//! walked into 2020-12, each `$ref` converted once per direction into a
//! shared [`Def`], patterns checked as ECMA-262, nesting bounded.

use super::{Def, Dialect, Direction, Schema};
use crate::ecma_pattern::{self, Checked, DroppedPattern};
use crate::fingerprint::write_canonical_to;
use crate::refs::{RefTarget, Resolver};
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

/// The formats JSON Schema 2020-12 defines (Validation §7.3); a validator
/// in strict mode refuses a schema naming any other, so other formats
/// (OpenAPI's `int32`, `double`, a document's own `phone-number`) are
/// published as a `$comment` instead.
const FORMATS_2020_12: [&str; 19] = [
    "date-time",
    "date",
    "time",
    "duration",
    "email",
    "idn-email",
    "hostname",
    "idn-hostname",
    "ipv4",
    "ipv6",
    "uri",
    "uri-reference",
    "iri",
    "iri-reference",
    "uuid",
    "uri-template",
    "json-pointer",
    "relative-json-pointer",
    "regex",
];
/// Deepest schema nesting we convert; deeper input is refused, not a
/// crash. Every walk of a schema (conversion, compaction, packing, the
/// definition's size) recurses once per level: at 128 levels the whole
/// build fits a 2 MiB thread stack even unoptimised (the stack of Rust's
/// spawned threads, of tokio's blocking pool and of tests), which 256
/// did not.
pub(crate) const MAX_DEPTH: usize = 128;
/// Deepest JSON nesting of a converted schema's root: its text is read
/// back when a definition is written (`PackedSchema::unpack`), and
/// serde_json reads 127 levels at most (its recursion limit of 128; most
/// clients' parsers bound theirs too). A schema converted deeper is
/// refused here instead of being read back as `{}`.
pub(crate) const MAX_JSON_DEPTH: usize = 127;
/// Whether `map`, as a JSON object, nests deeper than `limit` levels
/// (the object itself is level 1). Stops as soon as it knows.
fn json_depth_over(map: &Map<String, Value>, limit: usize) -> bool {
    fn over(value: &Value, room: usize) -> bool {
        match value {
            Value::Object(map) => room == 0 || map.values().any(|v| over(v, room - 1)),
            Value::Array(items) => room == 0 || items.iter().any(|v| over(v, room - 1)),
            _ => false,
        }
    }
    limit == 0 || map.values().any(|v| over(v, limit - 1))
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
    /// Each pattern seen, checked once ([`ecma_pattern`]).
    patterns: HashMap<String, Checked>,
    /// Patterns dropped as not ECMA-262, by where they were.
    dropped: BTreeMap<(Arc<str>, usize), DroppedPattern>,
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
            patterns: HashMap::new(),
            dropped: BTreeMap::new(),
        }
    }

    /// The patterns dropped so far (each place once), taken.
    pub fn take_dropped_patterns(&mut self) -> Vec<DroppedPattern> {
        std::mem::take(&mut self.dropped).into_values().collect()
    }

    /// `pattern` as clients can compile it, or `None` (recorded as dropped,
    /// `at` being the dropped value in `file`'s tree).
    fn compilable(
        &mut self,
        file: &Arc<str>,
        keyword: &'static str,
        pattern: &str,
        at: &Value,
    ) -> Option<String> {
        let checked = self
            .patterns
            .entry(pattern.to_string())
            .or_insert_with(|| ecma_pattern::check(pattern));
        match checked {
            Checked::Valid => Some(pattern.to_string()),
            Checked::Rewritten(rewritten) => Some(rewritten.clone()),
            Checked::Invalid(reason) => {
                let address = at as *const Value as usize;
                let reason = reason.clone();
                self.dropped
                    .entry((file.clone(), address))
                    .or_insert_with(|| DroppedPattern {
                        file: file.clone(),
                        address,
                        keyword,
                        pattern: pattern.to_string(),
                        reason,
                    });
                None
            }
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
        if json_depth_over(&root, MAX_JSON_DEPTH) {
            return Err(format!(
                "a schema nested too deeply to convert (over {MAX_JSON_DEPTH} levels of JSON)"
            ));
        }
        Ok(Schema {
            root,
            defs: defs.into_values().collect(),
        })
    }

    /// The members a composed object leaves out in this direction and no
    /// part of it keeps: its own `properties`, those of its `allOf` parts
    /// and of a `$ref` beside them (followed), whose names cannot stay in
    /// any `required` of the composition. (A member flagged `readOnly` in
    /// a base schema and required by the schema extending it is the usual
    /// case.)
    fn left_out_of_composition(
        &self,
        file: &Arc<str>,
        map: &Map<String, Value>,
        direction: Direction,
    ) -> BTreeSet<String> {
        let mut dropped = BTreeSet::new();
        let mut kept = BTreeSet::new();
        self.composition_members(file, map, direction, 0, &mut dropped, &mut kept);
        dropped.retain(|name| !kept.contains(name));
        dropped
    }

    fn composition_members(
        &self,
        file: &Arc<str>,
        map: &Map<String, Value>,
        direction: Direction,
        hops: usize,
        dropped: &mut BTreeSet<String>,
        kept: &mut BTreeSet<String>,
    ) {
        /// Parts and references followed at most (cycles end here).
        const MAX_HOPS: usize = 8;
        if let Some(Value::Object(members)) = map.get("properties") {
            for (name, member) in members {
                if self.is_left_out(file, member, direction) {
                    dropped.insert(name.clone());
                } else {
                    kept.insert(name.clone());
                }
            }
        }
        if hops >= MAX_HOPS {
            return;
        }
        let mut parts: Vec<&Value> = Vec::new();
        if let Some(Value::Array(items)) = map.get("allOf") {
            parts.extend(items);
        }
        let own_ref = map.get("$ref").map(|reference| json!({"$ref": reference}));
        parts.extend(own_ref.as_ref());
        for part in parts {
            let Ok((part_file, part)) = self.resolver.follow(file, part) else {
                continue;
            };
            if let Value::Object(part) = part {
                self.composition_members(&part_file, part, direction, hops + 1, dropped, kept);
            }
        }
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
            def: Arc::new(Def::new(self.def_name(target), value, canonical)),
            deps: reached.into_iter().collect(),
        }))
    }

    /// `$defs` key for a target: the component's own name for the
    /// document's component schemas, otherwise the last pointer segment
    /// with a short hash of the location so names never clash. The
    /// location is the pointer in the document itself, else the file's
    /// path from the document's folder and the pointer: what the document
    /// says, never where the folder keeps it, so the same document under
    /// another name or folder gets the same versions.
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
        let file = if local {
            String::new()
        } else {
            path_from_folder_of(&self.document, &target.file)
        };
        let digest = Sha256::digest(format!("{file}#{}", target.pointer).as_bytes());
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
        if out.contains_key("required") || out.contains_key("allOf") {
            let gone = self.left_out_of_composition(file, map, direction);
            if !gone.is_empty() {
                drop_from_required(&mut out, &gone);
            }
        }
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
            "patternProperties" => {
                if let Value::Object(members) = value {
                    let mut converted = Map::new();
                    for (name, member) in members {
                        let Some(name) = self.compilable(file, "patternProperties", name, member)
                        else {
                            continue;
                        };
                        let schema =
                            self.convert_node(file, member, direction, reached, depth + 1)?;
                        converted.insert(name, schema);
                    }
                    out.insert(key.to_string(), Value::Object(converted));
                }
            }
            "dependentSchemas" => {
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
            "pattern" => {
                if let Some(pattern) = value.as_str()
                    && let Some(pattern) = self.compilable(file, "pattern", pattern, value)
                {
                    out.insert(key.to_string(), Value::String(pattern));
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
                // An empty tuple constrains nothing, and an empty
                // `prefixItems` is not a valid 2020-12 schema (found by
                // crates/catalog/tests/generated_documents.rs).
                Value::Array(items) if items.is_empty() => {}
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
                    match format {
                        "binary" | "byte" => {
                            out.insert("contentEncoding".to_string(), json!("base64"));
                        }
                        _ if FORMATS_2020_12.contains(&format) => {
                            out.insert(key.to_string(), value.clone());
                        }
                        // A format a strict validator does not know makes it
                        // refuse the whole schema (Ajv in strict mode
                        // throws): kept for the reader as a comment.
                        _ => {
                            out.insert("$comment".to_string(), json!(format!("format: {format}")));
                        }
                    }
                }
            }
            "required" => {
                let names = unique_strings(value);
                if !names.is_empty() {
                    out.insert(key.to_string(), Value::Array(names));
                }
            }
            "title" | "description" | "contentEncoding" | "contentMediaType"
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

/// Removes `gone` from the node's `required`, and from the `required` of
/// its inline `allOf` parts (a part that only lists what another part
/// defines), recursively; a part that is a `$ref` is a definition of its
/// own, converted once for every schema that uses it.
fn drop_from_required(out: &mut Map<String, Value>, gone: &BTreeSet<String>) {
    if let Some(Value::Array(required)) = out.get_mut("required") {
        required.retain(|name| !name.as_str().is_some_and(|n| gone.contains(n)));
        if required.is_empty() {
            out.remove("required");
        }
    }
    if let Some(Value::Array(parts)) = out.get_mut("allOf") {
        for part in parts {
            if let Value::Object(part) = part
                && !part.contains_key("$ref")
            {
                drop_from_required(part, gone);
            }
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

/// `file`'s path from the folder `document` is in (both `/`-separated and
/// relative to the catalogs folder): `common/x.yaml` beside it,
/// `../shared/x.yaml` one folder up.
fn path_from_folder_of(document: &str, file: &str) -> String {
    let folder: Vec<&str> = document.split('/').collect();
    let folder = &folder[..folder.len() - 1];
    let target: Vec<&str> = file.split('/').collect();
    let shared = folder
        .iter()
        .zip(&target)
        .take_while(|(a, b)| a == b)
        .count();
    let mut parts = vec![".."; folder.len() - shared];
    parts.extend(&target[shared..]);
    parts.join("/")
}

#[cfg(test)]
mod tests {
    //! One test per conversion rule, on small inline schemas. Each asserts
    //! the exact output today, per dialect where the dialects differ.

    #[test]
    fn paths_are_told_from_the_documents_folder() {
        assert_eq!(
            path_from_folder_of("api.json", "common.yaml"),
            "common.yaml"
        );
        assert_eq!(
            path_from_folder_of("apis/orders.yaml", "apis/common/x.yaml"),
            "common/x.yaml"
        );
        assert_eq!(
            path_from_folder_of("apis/orders.yaml", "shared/x.yaml"),
            "../shared/x.yaml"
        );
        assert_eq!(path_from_folder_of("a/b/c.json", "x.json"), "../../x.json");
    }

    use super::*;

    const FILE: &str = "api.json";

    /// The catalogs folder: `api.json` holding `document`, plus any `others`.
    fn folder(document: Value, others: &[(&str, Value)]) -> BTreeMap<Arc<str>, Arc<Value>> {
        folder_at(FILE, document, others)
    }

    /// Files of a folder: `document` at `path`, and `others`.
    fn folder_at(
        path: &str,
        document: Value,
        others: &[(&str, Value)],
    ) -> BTreeMap<Arc<str>, Arc<Value>> {
        let mut files = BTreeMap::new();
        files.insert(Arc::from(path), Arc::new(document));
        for (name, value) in others {
            files.insert(Arc::from(*name), Arc::new(value.clone()));
        }
        files
    }

    /// Converts `node`, written in `api.json` (which holds `document`), in
    /// `direction`, and returns the finished schema with its `$defs`.
    fn convert_in(
        dialect: Dialect,
        document: Value,
        node: Value,
        direction: Direction,
    ) -> Result<Value, String> {
        let files = folder(document, &[]);
        let resolver = Resolver::new(&files);
        let file: Arc<str> = Arc::from(FILE);
        let mut converter = Converter::new(&resolver, file.clone(), dialect);
        let mut reached = Reached::new();
        let converted = converter.convert(&file, &node, direction, &mut reached)?;
        let Value::Object(root) = converted else {
            panic!("not an object: {converted}");
        };
        Ok(converter.finish(root, reached, direction)?.to_value())
    }

    /// A schema without references, converted as input.
    fn convert(dialect: Dialect, node: Value) -> Value {
        convert_in(dialect, json!({}), node, Direction::Input).unwrap()
    }

    // ------------------------------------------------------------ nullable

    #[test]
    fn nullable_in_openapi_30_adds_null_to_the_type() {
        let schema = json!({"type": "string", "nullable": true});
        assert_eq!(
            convert(Dialect::OpenApi30, schema),
            json!({"type": ["string", "null"]})
        );
    }

    #[test]
    fn nullable_in_openapi_31_is_dropped_and_type_arrays_pass_through() {
        assert_eq!(
            convert(
                Dialect::OpenApi31,
                json!({"type": "string", "nullable": true})
            ),
            json!({"type": "string"})
        );
        assert_eq!(
            convert(Dialect::OpenApi31, json!({"type": ["string", "null"]})),
            json!({"type": ["string", "null"]})
        );
    }

    #[test]
    fn x_nullable_in_swagger_20_adds_null_but_not_in_openapi_30() {
        let schema = json!({"type": "integer", "x-nullable": true});
        assert_eq!(
            convert(Dialect::Swagger2, schema.clone()),
            json!({"type": ["integer", "null"]})
        );
        assert_eq!(
            convert(Dialect::OpenApi30, schema),
            json!({"type": "integer"})
        );
        // Swagger 2.0 also honours the 3.0 spelling.
        assert_eq!(
            convert(
                Dialect::Swagger2,
                json!({"type": "integer", "nullable": true})
            ),
            json!({"type": ["integer", "null"]})
        );
    }

    #[test]
    fn nullable_admits_null_in_enum_and_type_arrays() {
        assert_eq!(
            convert(
                Dialect::OpenApi30,
                json!({"type": "string", "enum": ["a", "b"], "nullable": true})
            ),
            json!({"type": ["string", "null"], "enum": ["a", "b", null]})
        );
        assert_eq!(
            convert(
                Dialect::OpenApi30,
                json!({"type": ["integer", "string"], "nullable": true})
            ),
            json!({"type": ["integer", "string", "null"]})
        );
        // Already nullable: nothing is added twice.
        assert_eq!(
            convert(
                Dialect::OpenApi30,
                json!({"type": "null", "enum": [null], "nullable": true})
            ),
            json!({"type": "null", "enum": [null]})
        );
    }

    #[test]
    fn nullable_without_a_type_becomes_any_of_with_null() {
        let document = json!({"components": {"schemas": {"Pet": {"type": "object"}}}});
        let schema = json!({"$ref": "#/components/schemas/Pet", "nullable": true});
        let converted = convert_in(Dialect::OpenApi30, document, schema, Direction::Input);
        assert_eq!(
            converted.unwrap(),
            json!({
                "anyOf": [{"$ref": "#/$defs/Pet"}, {"type": "null"}],
                "$defs": {"Pet": {"type": "object"}}
            })
        );
        assert_eq!(
            convert(
                Dialect::OpenApi30,
                json!({"minLength": 1, "nullable": true})
            ),
            json!({"anyOf": [{"minLength": 1}, {"type": "null"}]})
        );
    }

    // ---------------------------------------------------------------- $ref

    #[test]
    fn refs_become_defs_entries_shared_once() {
        let document = json!({"components": {"schemas": {
            "Money": {"type": "object", "properties": {"amount": {"type": "number"}}}
        }}});
        let schema = json!({"type": "object", "properties": {
            "price": {"$ref": "#/components/schemas/Money"},
            "tax": {"$ref": "#/components/schemas/Money"},
            "history": {"type": "array", "items": {"$ref": "#/components/schemas/Money"}}
        }});
        let converted = convert_in(Dialect::OpenApi30, document, schema, Direction::Input);
        assert_eq!(
            converted.unwrap(),
            json!({
                "type": "object",
                "properties": {
                    "price": {"$ref": "#/$defs/Money"},
                    "tax": {"$ref": "#/$defs/Money"},
                    "history": {"type": "array", "items": {"$ref": "#/$defs/Money"}}
                },
                "$defs": {"Money": {"type": "object", "properties": {"amount": {"type": "number"}}}}
            })
        );
    }

    #[test]
    fn defs_are_closed_over_transitive_references_and_sorted_by_name() {
        let document = json!({"components": {"schemas": {
            "Order": {"type": "object", "properties": {"line": {"$ref": "#/components/schemas/Line"}}},
            "Line": {"type": "object", "properties": {"sku": {"$ref": "#/components/schemas/Sku"}}},
            "Sku": {"type": "string"},
            "Unused": {"type": "boolean"}
        }}});
        let schema = json!({"type": "object", "properties": {"order": {"$ref": "#/components/schemas/Order"}}});
        let converted = convert_in(Dialect::OpenApi31, document, schema, Direction::Input).unwrap();
        let names: Vec<&String> = converted["$defs"].as_object().unwrap().keys().collect();
        assert_eq!(names, ["Line", "Order", "Sku"]);
        assert_eq!(
            converted["$defs"]["Line"],
            json!({"type": "object", "properties": {"sku": {"$ref": "#/$defs/Sku"}}})
        );
    }

    #[test]
    fn recursive_schemas_stay_finite() {
        let document = json!({"components": {"schemas": {
            "Node": {"type": "object", "properties": {
                "children": {"type": "array", "items": {"$ref": "#/components/schemas/Node"}}
            }}
        }}});
        let schema = json!({"$ref": "#/components/schemas/Node"});
        let converted = convert_in(Dialect::OpenApi30, document, schema, Direction::Input);
        assert_eq!(
            converted.unwrap(),
            json!({
                "$ref": "#/$defs/Node",
                "$defs": {"Node": {"type": "object", "properties": {
                    "children": {"type": "array", "items": {"$ref": "#/$defs/Node"}}
                }}}
            })
        );
    }

    #[test]
    fn keywords_beside_a_ref_are_kept() {
        let document = json!({"components": {"schemas": {"Id": {"type": "string"}}}});
        let schema =
            json!({"$ref": "#/components/schemas/Id", "description": "the id", "x-note": 1});
        for dialect in [Dialect::OpenApi30, Dialect::OpenApi31] {
            let converted = convert_in(dialect, document.clone(), schema.clone(), Direction::Input);
            assert_eq!(
                converted.unwrap(),
                json!({"$ref": "#/$defs/Id", "description": "the id", "$defs": {"Id": {"type": "string"}}}),
                "{dialect:?}"
            );
        }
    }

    #[test]
    fn swagger_20_definitions_keep_their_names() {
        let document = json!({"definitions": {"Pet": {"type": "object"}}});
        let schema = json!({"$ref": "#/definitions/Pet"});
        let converted = convert_in(Dialect::Swagger2, document, schema, Direction::Input);
        assert_eq!(
            converted.unwrap(),
            json!({"$ref": "#/$defs/Pet", "$defs": {"Pet": {"type": "object"}}})
        );
    }

    #[test]
    fn other_targets_get_a_hashed_name() {
        let document = json!({
            "components": {"schemas": {"a b": {"type": "string"}}},
            "paths": {"/x": {"get": {"parameters": [{"schema": {"type": "integer"}}]}}}
        });
        let files = folder(
            document,
            &[("common.json", json!({"Id": {"type": "string"}}))],
        );
        let resolver = Resolver::new(&files);
        let converter = Converter::new(&resolver, Arc::from(FILE), Dialect::OpenApi31);
        let target = |file: &str, pointer: &str| RefTarget {
            file: Arc::from(file),
            pointer: pointer.to_string(),
        };
        // A component of the document: its own name.
        assert_eq!(
            converter.def_name(&target(FILE, "/components/schemas/Pet")),
            "Pet"
        );
        // A component name that is not [A-Za-z0-9._-]: made safe, and hashed.
        assert_eq!(
            converter.def_name(&target(FILE, "/components/schemas/a b")),
            "a_b_eb3595"
        );
        // Anywhere else in the document: last segment plus a hash.
        assert_eq!(
            converter.def_name(&target(FILE, "/paths/~1x/get/parameters/0/schema")),
            "schema_b42160"
        );
        // Another file, even at a component-like pointer: hashed.
        assert_eq!(
            converter.def_name(&target("common.json", "/Id")),
            "Id_8eb0e6"
        );
        assert_eq!(
            converter.def_name(&target("common.json", "/definitions/Id")),
            "Id_5e5104"
        );
        // The whole file.
        assert_eq!(
            converter.def_name(&target("common.json", "")),
            "root_be75f1"
        );
        // Where the folder keeps the document does not matter: the same
        // document elsewhere names its own locations alike, and another
        // file by its path from the document.
        let moved = folder_at(
            "team/api.yaml",
            json!({"components": {"schemas": {"a b": {"type": "string"}}}}),
            &[("team/common.json", json!({"Id": {"type": "string"}}))],
        );
        let resolver = Resolver::new(&moved);
        let converter = Converter::new(&resolver, Arc::from("team/api.yaml"), Dialect::OpenApi31);
        assert_eq!(
            converter.def_name(&target("team/api.yaml", "/components/schemas/a b")),
            "a_b_eb3595"
        );
        assert_eq!(
            converter.def_name(&target("team/common.json", "/Id")),
            "Id_8eb0e6"
        );
    }

    #[test]
    fn unresolvable_refs_fail_the_conversion() {
        let schema = json!({"$ref": "#/components/schemas/Missing"});
        assert_eq!(
            convert_in(Dialect::OpenApi30, json!({}), schema, Direction::Input),
            Err("'#/components/schemas/Missing' points to nothing".to_string())
        );
        let schema = json!({"$ref": "https://example.com/pet.json"});
        assert_eq!(
            convert_in(Dialect::OpenApi31, json!({}), schema, Direction::Input),
            Err(
                "'https://example.com/pet.json' is a network reference; it is never fetched"
                    .to_string()
            )
        );
    }

    // ------------------------------------------------- dropped vocabulary

    #[test]
    fn openapi_only_and_identity_keywords_are_dropped() {
        let schema = json!({
            "type": "object",
            "x-internal": true,
            "xml": {"name": "pet"},
            "externalDocs": {"url": "https://example.com"},
            "$id": "https://example.com/pet",
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "$anchor": "pet",
            "$defs": {"Local": {"type": "string"}},
            "unknownKeyword": 1
        });
        for dialect in [Dialect::Swagger2, Dialect::OpenApi30, Dialect::OpenApi31] {
            assert_eq!(
                convert(dialect, schema.clone()),
                json!({"type": "object"}),
                "{dialect:?}"
            );
        }
    }

    #[test]
    fn discriminator_is_dropped_and_one_of_kept() {
        let document = json!({"components": {"schemas": {
            "Cat": {"type": "object"},
            "Dog": {"type": "object"}
        }}});
        let schema = json!({
            "oneOf": [{"$ref": "#/components/schemas/Cat"}, {"$ref": "#/components/schemas/Dog"}],
            "discriminator": {"propertyName": "kind", "mapping": {"cat": "#/components/schemas/Cat"}}
        });
        let converted = convert_in(Dialect::OpenApi30, document, schema, Direction::Input);
        assert_eq!(
            converted.unwrap(),
            json!({
                "oneOf": [{"$ref": "#/$defs/Cat"}, {"$ref": "#/$defs/Dog"}],
                "$defs": {"Cat": {"type": "object"}, "Dog": {"type": "object"}}
            })
        );
    }

    #[test]
    fn annotation_keywords_are_kept_only_with_the_right_json_type() {
        let schema = json!({
            "title": "T", "description": 5, "pattern": "^a", "contentMediaType": "image/png",
            "deprecated": true, "readOnly": "yes", "uniqueItems": false,
            "default": null, "const": [1]
        });
        assert_eq!(
            convert(Dialect::OpenApi31, schema),
            json!({
                "title": "T", "pattern": "^a", "contentMediaType": "image/png",
                "deprecated": true, "uniqueItems": false, "default": null, "const": [1]
            })
        );
    }

    // ------------------------------------------------ readOnly / writeOnly

    #[test]
    fn input_drops_read_only_members_and_their_required_entries() {
        let document =
            json!({"components": {"schemas": {"Stamp": {"type": "string", "readOnly": true}}}});
        let schema = json!({
            "type": "object",
            "required": ["id", "name", "created"],
            "properties": {
                "id": {"type": "integer", "readOnly": true},
                "name": {"type": "string"},
                "created": {"$ref": "#/components/schemas/Stamp"},
                "secret": {"type": "string", "writeOnly": true}
            }
        });
        let converted = convert_in(Dialect::OpenApi30, document, schema, Direction::Input);
        assert_eq!(
            converted.unwrap(),
            json!({
                "type": "object",
                "required": ["name"],
                "properties": {"name": {"type": "string"}, "secret": {"type": "string", "writeOnly": true}}
            })
        );
    }

    #[test]
    fn output_drops_write_only_members_and_an_emptied_required() {
        let schema = json!({
            "type": "object",
            "required": ["secret"],
            "properties": {
                "id": {"type": "integer", "readOnly": true},
                "secret": {"type": "string", "writeOnly": true}
            }
        });
        let converted = convert_in(Dialect::OpenApi31, json!({}), schema, Direction::Output);
        assert_eq!(
            converted.unwrap(),
            json!({"type": "object", "properties": {"id": {"type": "integer", "readOnly": true}}})
        );
    }

    /// A base with a server-computed `id`, extended by schemas that list
    /// it as required.
    fn base_document() -> Value {
        json!({"components": {"schemas": {
            "Base": {"type": "object", "required": ["id"], "properties": {
                "id": {"type": "string", "readOnly": true},
                "token": {"type": "string", "writeOnly": true},
                "kind": {"type": "string"}
            }},
            "Extended": {"allOf": [
                {"$ref": "#/components/schemas/Base"},
                {"type": "object", "required": ["id", "name", "token"], "properties": {"name": {"type": "string"}}}
            ]}
        }}})
    }

    #[test]
    fn a_read_only_member_of_an_all_of_part_leaves_every_required_of_the_composition() {
        let document = base_document();
        // The composing part's `required`, inline.
        let inline = json!({"allOf": [
            {"$ref": "#/components/schemas/Base"},
            {"type": "object", "required": ["id", "name", "token"], "properties": {"name": {"type": "string"}}}
        ]});
        let converted = convert_in(
            Dialect::OpenApi30,
            document.clone(),
            inline,
            Direction::Input,
        )
        .unwrap();
        assert_eq!(
            converted["allOf"][1]["required"],
            json!(["name", "token"]),
            "{converted}"
        );
        assert_eq!(
            converted["$defs"]["Base"].get("required"),
            None,
            "{converted}"
        );
        // The composing object's own `required`, beside the parts.
        let beside = json!({"type": "object", "required": ["id", "kind"], "allOf": [{"$ref": "#/components/schemas/Base"}]});
        let converted = convert_in(
            Dialect::OpenApi30,
            document.clone(),
            beside,
            Direction::Input,
        )
        .unwrap();
        assert_eq!(converted["required"], json!(["kind"]), "{converted}");
        // A `$ref` with siblings (3.1).
        let sibling = json!({"$ref": "#/components/schemas/Base", "required": ["id", "kind"]});
        let converted = convert_in(
            Dialect::OpenApi31,
            document.clone(),
            sibling,
            Direction::Input,
        )
        .unwrap();
        assert_eq!(converted["required"], json!(["kind"]), "{converted}");
        // A definition composed of others, reached through a reference,
        // nested deep in a body.
        let nested = json!({"type": "object", "properties": {"order": {"type": "object", "properties": {
            "items": {"type": "array", "items": {"$ref": "#/components/schemas/Extended"}}
        }}}});
        let converted = convert_in(
            Dialect::OpenApi30,
            document.clone(),
            nested,
            Direction::Input,
        )
        .unwrap();
        assert_eq!(
            converted["$defs"]["Extended"]["allOf"][1]["required"],
            json!(["name", "token"]),
            "{converted}"
        );
        // An inline part nested in another part.
        let deeper = json!({"allOf": [
            {"$ref": "#/components/schemas/Base"},
            {"allOf": [{"required": ["id", "kind"]}]}
        ]});
        let converted = convert_in(Dialect::OpenApi30, document, deeper, Direction::Input).unwrap();
        assert_eq!(
            converted["allOf"][1]["allOf"][0]["required"],
            json!(["kind"]),
            "{converted}"
        );
    }

    #[test]
    fn a_write_only_member_of_an_all_of_part_leaves_the_output_s_required() {
        let converted = convert_in(
            Dialect::OpenApi30,
            base_document(),
            json!({"$ref": "#/components/schemas/Extended"}),
            Direction::Output,
        )
        .unwrap();
        assert_eq!(
            converted["$defs"]["Extended"]["allOf"][1]["required"],
            json!(["id", "name"]),
            "{converted}"
        );
        assert_eq!(
            converted["$defs"]["Base"]["required"],
            json!(["id"]),
            "{converted}"
        );
    }

    #[test]
    fn a_member_another_part_keeps_stays_required() {
        // `id` is read-only in Base but an ordinary member of the second
        // part: the caller sends it, so it stays required.
        let schema = json!({"allOf": [
            {"$ref": "#/components/schemas/Base"},
            {"type": "object", "required": ["id"], "properties": {"id": {"type": "string"}}}
        ]});
        let converted = convert_in(
            Dialect::OpenApi30,
            base_document(),
            schema,
            Direction::Input,
        )
        .unwrap();
        assert_eq!(
            converted["allOf"][1]["required"],
            json!(["id"]),
            "{converted}"
        );
        // Alternatives are not a composition: each stands alone.
        let alternatives = json!({"oneOf": [
            {"$ref": "#/components/schemas/Base"},
            {"type": "object", "required": ["id"]}
        ]});
        let converted = convert_in(
            Dialect::OpenApi30,
            base_document(),
            alternatives,
            Direction::Input,
        )
        .unwrap();
        assert_eq!(
            converted["oneOf"][1]["required"],
            json!(["id"]),
            "{converted}"
        );
    }

    #[test]
    fn a_definition_is_converted_once_per_direction() {
        let document = json!({"components": {"schemas": {"Pet": {"type": "object", "properties": {
            "id": {"type": "integer", "readOnly": true},
            "password": {"type": "string", "writeOnly": true}
        }}}}});
        let files = folder(document, &[]);
        let resolver = Resolver::new(&files);
        let file: Arc<str> = Arc::from(FILE);
        let mut converter = Converter::new(&resolver, file.clone(), Dialect::OpenApi30);
        let node = json!({"$ref": "#/components/schemas/Pet"});
        let mut schemas = Vec::new();
        for direction in [Direction::Input, Direction::Output, Direction::Input] {
            let mut reached = Reached::new();
            let root = converter
                .convert(&file, &node, direction, &mut reached)
                .unwrap();
            let root = root.as_object().unwrap().clone();
            schemas.push(converter.finish(root, reached, direction).unwrap());
        }
        assert_eq!(
            schemas[0].to_value()["$defs"]["Pet"],
            json!({"type": "object", "properties": {"password": {"type": "string", "writeOnly": true}}})
        );
        assert_eq!(
            schemas[1].to_value()["$defs"]["Pet"],
            json!({"type": "object", "properties": {"id": {"type": "integer", "readOnly": true}}})
        );
        // The same direction again is served from the cache: the same Arc.
        assert!(Arc::ptr_eq(&schemas[0].defs[0], &schemas[2].defs[0]));
    }

    // ------------------------------------------------------ numeric bounds

    #[test]
    fn boolean_exclusive_bounds_fold_into_numbers_in_openapi_30_and_swagger_20() {
        let schema = json!({
            "type": "number",
            "minimum": 0, "exclusiveMinimum": true,
            "maximum": 10, "exclusiveMaximum": false
        });
        for dialect in [Dialect::Swagger2, Dialect::OpenApi30] {
            assert_eq!(
                convert(dialect, schema.clone()),
                json!({"type": "number", "exclusiveMinimum": 0, "maximum": 10}),
                "{dialect:?}"
            );
        }
    }

    #[test]
    fn numeric_exclusive_bounds_pass_through_and_booleans_are_dropped_in_openapi_31() {
        assert_eq!(
            convert(
                Dialect::OpenApi31,
                json!({"type": "number", "exclusiveMinimum": 0, "maximum": 10})
            ),
            json!({"type": "number", "exclusiveMinimum": 0, "maximum": 10})
        );
        // The 3.0 boolean form in a 3.1 document: not folded, just dropped.
        assert_eq!(
            convert(
                Dialect::OpenApi31,
                json!({"type": "number", "minimum": 0, "exclusiveMinimum": true})
            ),
            json!({"type": "number", "minimum": 0})
        );
    }

    #[test]
    fn counts_must_be_non_negative_integers_and_multiple_of_positive() {
        let schema = json!({
            "minLength": 2.0, "maxLength": -1, "minItems": 1.5, "maxItems": "3",
            "minProperties": 0, "maxContains": 4,
            "multipleOf": 0
        });
        assert_eq!(
            convert(Dialect::OpenApi31, schema),
            json!({"minLength": 2, "minProperties": 0, "maxContains": 4})
        );
        assert_eq!(
            convert(Dialect::OpenApi31, json!({"multipleOf": 0.5})),
            json!({"multipleOf": 0.5})
        );
    }

    // ----------------------------------------------------------- examples

    #[test]
    fn example_becomes_examples_unless_examples_is_an_array() {
        for dialect in [Dialect::Swagger2, Dialect::OpenApi30, Dialect::OpenApi31] {
            assert_eq!(
                convert(dialect, json!({"type": "string", "example": "a"})),
                json!({"type": "string", "examples": ["a"]}),
                "{dialect:?}"
            );
        }
        assert_eq!(
            convert(
                Dialect::OpenApi31,
                json!({"example": "a", "examples": ["b", "c"]})
            ),
            json!({"examples": ["b", "c"]})
        );
        // An `examples` that is not an array (3.0 media-type style) is dropped.
        assert_eq!(
            convert(
                Dialect::OpenApi30,
                json!({"example": "a", "examples": {"one": {"value": "b"}}})
            ),
            json!({"examples": ["a"]})
        );
    }

    // ---------------------------------------------------- types and formats

    #[test]
    fn binary_and_byte_formats_become_base64_content() {
        for dialect in [Dialect::Swagger2, Dialect::OpenApi30, Dialect::OpenApi31] {
            assert_eq!(
                convert(dialect, json!({"type": "string", "format": "binary"})),
                json!({"type": "string", "contentEncoding": "base64"}),
                "{dialect:?}"
            );
            assert_eq!(
                convert(dialect, json!({"type": "string", "format": "byte"})),
                json!({"type": "string", "contentEncoding": "base64"}),
                "{dialect:?}"
            );
            assert_eq!(
                convert(dialect, json!({"type": "string", "format": "date-time"})),
                json!({"type": "string", "format": "date-time"}),
                "{dialect:?}"
            );
        }
        assert_eq!(convert(Dialect::OpenApi31, json!({"format": 7})), json!({}));
    }

    #[test]
    fn formats_strict_validators_do_not_know_become_comments() {
        for (format, published) in [
            (
                "int64",
                json!({"type": "integer", "$comment": "format: int64"}),
            ),
            (
                "unix-time",
                json!({"type": "integer", "$comment": "format: unix-time"}),
            ),
            ("uuid", json!({"type": "integer", "format": "uuid"})),
        ] {
            assert_eq!(
                convert(
                    Dialect::OpenApi30,
                    json!({"type": "integer", "format": format})
                ),
                published
            );
        }
        let strict = |schema: &Value| {
            jsonschema::options()
                .should_validate_formats(true)
                .should_ignore_unknown_formats(false)
                .build(schema)
                .is_ok()
        };
        assert!(
            !strict(&json!({"format": "int64"})),
            "the validator is strict"
        );
        for format in FORMATS_2020_12 {
            // This build of the validator has no IDNA tables (the feature
            // is off), so it does not know the two idn- formats.
            let known = !format.starts_with("idn-");
            assert_eq!(strict(&json!({"format": format})), known, "{format}");
            let converted = convert(Dialect::OpenApi31, json!({"format": format}));
            assert_eq!(converted, json!({"format": format}));
        }
    }

    #[test]
    fn swagger_20_file_type_becomes_a_base64_string() {
        assert_eq!(
            convert(Dialect::Swagger2, json!({"type": "file"})),
            json!({"type": "string", "contentEncoding": "base64"})
        );
    }

    #[test]
    fn unknown_type_names_are_dropped_and_type_arrays_deduplicated() {
        assert_eq!(
            convert(Dialect::OpenApi30, json!({"type": "any"})),
            json!({})
        );
        assert_eq!(
            convert(
                Dialect::OpenApi31,
                json!({"type": ["string", "date", "string", 3, "null"]})
            ),
            json!({"type": ["string", "null"]})
        );
        assert_eq!(
            convert(Dialect::OpenApi31, json!({"type": ["date"]})),
            json!({})
        );
    }

    // --------------------------------------------------------- structure

    #[test]
    fn tuple_items_become_prefix_items() {
        assert_eq!(
            convert(
                Dialect::OpenApi30,
                json!({"type": "array", "items": [{"type": "string"}, {"type": "integer"}]})
            ),
            json!({"type": "array", "prefixItems": [{"type": "string"}, {"type": "integer"}]})
        );
        assert_eq!(
            convert(Dialect::OpenApi31, json!({"type": "array", "items": false})),
            json!({"type": "array", "items": false})
        );
        assert_eq!(
            convert(
                Dialect::OpenApi31,
                json!({"type": "array", "items": "string"})
            ),
            json!({"type": "array"})
        );
    }

    #[test]
    fn subschema_keywords_are_converted_and_empty_combinators_dropped() {
        let schema = json!({
            "additionalProperties": {"type": "string", "nullable": true},
            "patternProperties": {"^x": {"example": 1}},
            "not": {"type": "file"},
            "if": true,
            "allOf": [],
            "anyOf": [{"nullable": true, "type": "integer"}],
            "propertyNames": "nope"
        });
        assert_eq!(
            convert(Dialect::OpenApi30, schema),
            json!({
                "additionalProperties": {"type": ["string", "null"]},
                "patternProperties": {"^x": {"examples": [1]}},
                "not": {"type": "string", "contentEncoding": "base64"},
                "if": true,
                "anyOf": [{"type": ["integer", "null"]}]
            })
        );
    }

    #[test]
    fn required_enum_and_dependent_required_are_cleaned() {
        let schema = json!({
            "required": ["a", "b", "a", 3],
            "enum": [],
            "dependentRequired": {"a": ["b"], "c": "d", "e": ["f", 1]}
        });
        assert_eq!(
            convert(Dialect::OpenApi31, schema),
            json!({"required": ["a", "b"], "dependentRequired": {"a": ["b"]}})
        );
        assert_eq!(
            convert(Dialect::OpenApi31, json!({"required": []})),
            json!({})
        );
    }

    #[test]
    fn booleans_pass_through_and_non_schemas_accept_anything() {
        let files = folder(json!({}), &[]);
        let resolver = Resolver::new(&files);
        let file: Arc<str> = Arc::from(FILE);
        let mut converter = Converter::new(&resolver, file.clone(), Dialect::OpenApi31);
        let mut reached = Reached::new();
        let mut convert = |node: Value| {
            converter
                .convert(&file, &node, Direction::Input, &mut reached)
                .unwrap()
        };
        assert_eq!(convert(json!(false)), json!(false));
        assert_eq!(convert(json!(true)), json!(true));
        assert_eq!(convert(json!("string")), json!({}));
        assert_eq!(convert(json!(null)), json!({}));
        assert_eq!(
            convert(json!({"properties": {"a": 3}})),
            json!({"properties": {"a": {}}})
        );
    }

    #[test]
    fn nesting_deeper_than_the_limit_is_refused() {
        let nested = |depth: usize| {
            let mut node = json!({"type": "string"});
            for _ in 0..depth {
                node = json!({"items": node});
            }
            node
        };
        // On the test's own thread (2 MiB of stack), unoptimised too: the
        // limits stop well before the stack does.
        let results = [
            MAX_JSON_DEPTH - 1,
            MAX_JSON_DEPTH,
            MAX_DEPTH + 1,
            4 * MAX_DEPTH,
        ]
        .map(|depth| {
            convert_in(
                Dialect::OpenApi31,
                json!({}),
                nested(depth),
                Direction::Input,
            )
            .map(|_| ())
        });
        let too_deep = "a schema nested too deeply to convert".to_string();
        let too_deep_json =
            format!("a schema nested too deeply to convert (over {MAX_JSON_DEPTH} levels of JSON)");
        assert_eq!(
            results,
            [
                Ok(()),
                Err(too_deep_json),
                Err(too_deep.clone()),
                Err(too_deep)
            ]
        );
    }

    // ------------------------------------------------------------- Schema

    #[test]
    fn canonical_writing_matches_the_value_and_accessors_read_the_root() {
        let document = json!({"components": {"schemas": {"B": {"type": "string"}, "A": {"$ref": "#/components/schemas/B"}}}});
        let schema = json!({"type": "object", "required": ["z"], "properties": {
            "z": {"$ref": "#/components/schemas/A"}, "a": {"type": "integer"}
        }});
        let files = folder(document, &[]);
        let resolver = Resolver::new(&files);
        let file: Arc<str> = Arc::from(FILE);
        let mut converter = Converter::new(&resolver, file.clone(), Dialect::OpenApi30);
        let mut reached = Reached::new();
        let root = converter
            .convert(&file, &schema, Direction::Input, &mut reached)
            .unwrap();
        let finished = converter
            .finish(root.as_object().unwrap().clone(), reached, Direction::Input)
            .unwrap();
        let mut streamed = String::new();
        finished.write_canonical(&mut streamed);
        let mut rendered = String::new();
        write_canonical_to(&finished.to_value(), &mut rendered);
        assert_eq!(streamed, rendered);
        assert_eq!(
            streamed,
            r##"{"$defs":{"A":{"$ref":"#/$defs/B"},"B":{"type":"string"}},"properties":{"a":{"type":"integer"},"z":{"$ref":"#/$defs/A"}},"required":["z"],"type":"object"}"##
        );
        assert_eq!(finished.required(), ["z"]);
        let members: Vec<&String> = finished.properties().unwrap().keys().collect();
        assert_eq!(members, ["z", "a"]);
        assert_eq!(
            *finished.def("B").unwrap().value(),
            json!({"type": "string"})
        );
        assert!(finished.def("C").is_none());
        // No defs: no `$defs` key at all.
        assert_eq!(Schema::default().to_value(), json!({}));
    }
}
