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

mod convert;

pub use convert::{Converter, Reached};
#[cfg(test)]
pub(crate) use convert::{MAX_DEPTH, MAX_JSON_DEPTH};

use super::fingerprint::{
    CanonicalSink, CharCount, write_canonical_object, write_canonical_to, write_string,
};
use serde_json::{Map, Value};
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

/// One converted `$defs` entry, shared between the tools that reach it.
#[derive(Debug)]
pub struct Def {
    pub name: String,
    value: DefValue,
    /// Canonical JSON of the value, kept so versions hash without
    /// re-rendering.
    pub canonical: String,
    /// Characters of `canonical`, kept so definition sizes add up cheaply.
    pub chars: usize,
}

/// A definition's value: a tree while its document is being built (the
/// compaction walks it), then its compact text (members in their order),
/// read again only to render a definition or compile a validator.
#[derive(Debug)]
enum DefValue {
    Tree(Value),
    Text(Box<str>),
}

impl Def {
    pub fn new(name: String, value: Value, canonical: String) -> Def {
        let chars = canonical.chars().count();
        Def {
            name,
            value: DefValue::Tree(value),
            canonical,
            chars,
        }
    }

    /// The value (read from its text once packed).
    pub fn value(&self) -> std::borrow::Cow<'_, Value> {
        match &self.value {
            DefValue::Tree(value) => std::borrow::Cow::Borrowed(value),
            DefValue::Text(text) => {
                std::borrow::Cow::Owned(serde_json::from_str(text).unwrap_or(Value::Null))
            }
        }
    }

    /// The same definition kept as text.
    pub fn packed(&self) -> Def {
        let value = match &self.value {
            DefValue::Tree(value) => DefValue::Text(
                serde_json::to_string(value)
                    .unwrap_or_else(|_| "null".to_string())
                    .into_boxed_str(),
            ),
            DefValue::Text(text) => DefValue::Text(text.clone()),
        };
        Def {
            name: self.name.clone(),
            value,
            canonical: self.canonical.clone(),
            chars: self.chars,
        }
    }

    /// Bytes the value takes as text, when packed (memory benchmark).
    pub fn text_len(&self) -> Option<usize> {
        match &self.value {
            DefValue::Tree(_) => None,
            DefValue::Text(text) => Some(text.len()),
        }
    }
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
                .map(|def| (def.name.clone(), def.value().into_owned()))
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

    /// Characters of [`Schema::write_canonical`]'s rendering (the same as
    /// serde_json's compact rendering of [`Schema::to_value`]).
    pub fn chars(&self) -> usize {
        let mut count = CharCount::default();
        write_canonical_object(&self.root, &mut count);
        let mut total = count.0;
        if !self.defs.is_empty() && !self.root.contains_key("$defs") {
            let mut names = CharCount::default();
            for def in &self.defs {
                write_string(&def.name, &mut names);
            }
            // `,"$defs":{` + entries (`name:canonical`, comma separated) + `}`;
            // an empty root has no comma to add.
            let comma = usize::from(!self.root.is_empty());
            total += comma + "\"$defs\":{}".len() + names.0 + self.defs.len() /* colons */
                + self.defs.len().saturating_sub(1) /* commas */
                + self.defs.iter().map(|def| def.chars).sum::<usize>();
        }
        total
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

/// A schema kept as the compact JSON text of its root (members in their
/// order) beside its shared definitions. A served catalog holds every
/// tool's full inputSchema this way: it is read whole only to compile a
/// validator, to show a definition that was not compacted, or to render a
/// card, and text takes a fraction of a value tree's memory.
#[derive(Debug, Clone)]
pub struct PackedSchema {
    root: Box<str>,
    pub defs: Vec<Arc<Def>>,
}

impl PackedSchema {
    pub fn pack(schema: Schema) -> PackedSchema {
        let root = serde_json::to_string(&schema.root).unwrap_or_else(|_| "{}".to_string());
        PackedSchema {
            root: root.into_boxed_str(),
            defs: schema.defs,
        }
    }

    /// The schema again (its text was written from a map, so it reads back).
    pub fn unpack(&self) -> Schema {
        Schema {
            root: serde_json::from_str(&self.root).unwrap_or_default(),
            defs: self.defs.clone(),
        }
    }

    /// The schema as one JSON value, `$defs` included.
    pub fn to_value(&self) -> Value {
        self.unpack().to_value()
    }

    /// Bytes of the root's text (for the memory benchmark).
    pub fn root_len(&self) -> usize {
        self.root.len()
    }
}
