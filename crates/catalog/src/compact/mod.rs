//! Published schemas sized for an agent's context.
//!
//! A converted schema is exact and can be enormous: Stripe inlines every
//! expandable object, so a small deletion result reaches 640 KB of
//! definitions, and an agent cannot call what it cannot load. The catalog
//! therefore publishes a compacted copy: the value's own members, the
//! shape of nested objects down to a depth, and a permissive stub naming
//! what was left out below it ([`walk`]). Definitions stay shared through
//! `$defs`, each rendered once per document, depth and level, so tools that
//! reach the same schema share one copy. The full input schema is kept for
//! validating calls; the ladder that picks depths to fit the response
//! budget is [`fit`].

pub mod fit;
#[cfg(test)]
mod tests;
mod walk;

use crate::fingerprint::write_canonical_to;
use crate::schema::{Def, Direction, Schema};
use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap, HashMap};
use std::sync::Arc;
pub use walk::Text;
use walk::Walk;

/// A depth that keeps everything: the schema is published as converted.
pub const FULL: u32 = u32::MAX;

/// One definition rendered for one depth at one level, and what its
/// rendering references in turn.
struct Rendered {
    def: Arc<Def>,
    needs: Vec<(Arc<Def>, u32)>,
    /// Definitions it references only below the depth.
    stubbed: Vec<Arc<Def>>,
    elided: bool,
}

/// A compacted schema, and whether anything was left out of it.
pub struct Compacted {
    pub schema: Schema,
    pub elided: bool,
}

/// Compacts the schemas of one document, sharing rendered definitions
/// between its tools.
#[derive(Default)]
pub struct Compactor {
    /// Keyed by the full definition's address (see [`address`]).
    rendered: HashMap<(usize, u32, Cut, Direction), Arc<Rendered>>,
    /// Output schemas compacted so far, by the address of the full one
    /// (kept alive here, so an address is never reused) and depth: the
    /// variants of an operation share one published outputSchema.
    outputs: HashMap<(usize, Cut), SharedOutput>,
    /// Stub definitions, shared like rendered ones.
    stubs: HashMap<(usize, Text, Direction), Arc<Def>>,
    /// Published outputs by content (canonical root and the addresses of
    /// its definitions, which are shared): operations that return the same
    /// type publish one schema, not a copy each.
    interned: HashMap<(String, Vec<usize>), Arc<Schema>>,
}

/// How far a schema is compacted: its depth and how much text it keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Cut {
    pub depth: u32,
    pub text: Text,
}

impl Cut {
    /// Everything down to `depth`, all text kept.
    pub fn depth(depth: u32) -> Cut {
        Cut {
            depth,
            text: Text::Whole,
        }
    }
}

/// One output schema compacted to one depth.
struct SharedOutput {
    /// Held so the full schema's address stays its own.
    _full: Arc<Schema>,
    published: Arc<Schema>,
    elided: bool,
}

impl Compactor {
    /// An output schema compacted to `depth`, shared with every tool that
    /// publishes the same output at the same depth; `true` when anything
    /// was left out.
    pub fn compact_shared(&mut self, output: &Arc<Schema>, cut: Cut) -> (Arc<Schema>, bool) {
        let key = (Arc::as_ptr(output) as usize, cut);
        if let Some(shared) = self.outputs.get(&key) {
            return (shared.published.clone(), shared.elided);
        }
        let compacted = self.compacted(output, cut, Direction::Output);
        let elided = compacted.is_some();
        let published = self.intern(compacted.map_or_else(|| output.clone(), Arc::new));
        self.outputs.insert(
            key,
            SharedOutput {
                _full: output.clone(),
                published: published.clone(),
                elided,
            },
        );
        (published, elided)
    }

    /// The schema already published with the same content, else this one.
    fn intern(&mut self, schema: Arc<Schema>) -> Arc<Schema> {
        let mut root = String::new();
        crate::fingerprint::write_canonical_object(&schema.root, &mut root);
        let defs = schema.defs.iter().map(address).collect();
        self.interned.entry((root, defs)).or_insert(schema).clone()
    }

    /// `schema` with everything below the cut's depth stubbed (and its
    /// text trimmed as the cut says). When nothing had to be left out, the
    /// schema itself comes back (its definitions still shared with the
    /// full one).
    pub fn compact(&mut self, schema: &Schema, cut: Cut, direction: Direction) -> Compacted {
        match self.compacted(schema, cut, direction) {
            Some(compacted) => Compacted {
                schema: compacted,
                elided: true,
            },
            None => Compacted {
                schema: schema.clone(),
                elided: false,
            },
        }
    }

    /// [`Compactor::compact`] without the copy: `None` when nothing had
    /// to be left out (the ladder then publishes the schema it has).
    pub fn compacted(&mut self, schema: &Schema, cut: Cut, direction: Direction) -> Option<Schema> {
        if cut == Cut::depth(FULL) {
            return None;
        }
        let mut walk = Walk::new(schema, cut.depth, cut.text, direction);
        let root = walk.object(&schema.root, 0, true);
        let mut elided = walk.elided;
        let mut stubbed = resolved(schema, std::mem::take(&mut walk.stubbed));
        // Definitions are told apart by address: every tool of a document
        // shares the converter's one `Arc` per definition, and no name is
        // copied on this path, which runs for every tool.
        let mut queue: BinaryHeap<Reverse<(u32, usize)>> = BinaryHeap::new();
        let mut known: HashMap<usize, Arc<Def>> = HashMap::new();
        for (def, level) in resolved_needs(schema, walk.needs) {
            queue.push(Reverse((level, address(&def))));
            known.insert(address(&def), def);
        }
        let mut published: HashMap<usize, Arc<Def>> = HashMap::new();
        // Levels only grow along references, so the first time a definition
        // is taken off the queue is the shallowest level it is reached at.
        while let Some(Reverse((level, at))) = queue.pop() {
            if published.contains_key(&at) {
                continue;
            }
            let Some(def) = known.get(&at).cloned() else {
                continue;
            };
            let rendered = self.render(schema, &def, level, cut, direction);
            elided |= rendered.elided;
            stubbed.extend(rendered.stubbed.iter().cloned());
            for (next, next_level) in &rendered.needs {
                let next_at = address(next);
                if !published.contains_key(&next_at) {
                    queue.push(Reverse((*next_level, next_at)));
                    known.entry(next_at).or_insert_with(|| next.clone());
                }
            }
            published.insert(at, rendered.def.clone());
        }
        if !elided {
            return None;
        }
        // Referenced only below the depth: one stub definition each.
        let stub_walk = Walk::new(schema, cut.depth, cut.text, direction);
        for def in stubbed {
            if let std::collections::hash_map::Entry::Vacant(slot) = published.entry(address(&def))
            {
                slot.insert(self.stub_definition(&stub_walk, &def));
            }
        }
        let mut defs: Vec<Arc<Def>> = published.into_values().collect();
        defs.sort_unstable_by(|a, b| a.name.cmp(&b.name));
        Some(Schema { root, defs })
    }

    /// Definition `def` of `schema` as seen from `level`, from the cache.
    fn render(
        &mut self,
        schema: &Schema,
        def: &Arc<Def>,
        level: u32,
        cut: Cut,
        direction: Direction,
    ) -> Arc<Rendered> {
        let key = (address(def), level, cut, direction);
        if let Some(rendered) = self.rendered.get(&key) {
            return rendered.clone();
        }
        let value = def.value();
        let rendered = match value.as_object() {
            Some(map) => {
                let mut walk = Walk::new(schema, cut.depth, cut.text, direction);
                let value = serde_json::Value::Object(walk.object(map, level, true));
                let needs = resolved_needs(schema, walk.needs);
                // A relaxed `oneOf` is published too, elided or not: a
                // definition that references cut ones is part of a
                // compacted schema.
                if walk.elided || walk.relaxed {
                    let mut canonical = String::new();
                    write_canonical_to(&value, &mut canonical);
                    Rendered {
                        def: Arc::new(Def::new(def.name.clone(), value, canonical)),
                        needs,
                        stubbed: resolved(schema, walk.stubbed),
                        elided: walk.elided,
                    }
                } else {
                    Rendered {
                        def: def.clone(),
                        needs,
                        stubbed: Vec::new(),
                        elided: false,
                    }
                }
            }
            None => Rendered {
                def: def.clone(),
                needs: Vec::new(),
                stubbed: Vec::new(),
                elided: false,
            },
        };
        let rendered = Arc::new(rendered);
        self.rendered.insert(key, rendered.clone());
        rendered
    }
}

impl Compactor {
    /// The stub published for definition `name` (see
    /// [`Walk::stub_definition`]), from the cache.
    fn stub_definition(&mut self, walk: &Walk, def: &Arc<Def>) -> Arc<Def> {
        let key = (address(def), walk.text, walk.direction);
        self.stubs
            .entry(key)
            .or_insert_with(|| {
                let value = walk.stub_definition(&def.name);
                let mut canonical = String::new();
                write_canonical_to(&value, &mut canonical);
                Arc::new(Def::new(def.name.clone(), value, canonical))
            })
            .clone()
    }
}

/// A definition's identity while a document builds: the document's
/// converter holds one `Arc` per definition for the whole build, longer
/// than its compactor lives, so an address is never reused meanwhile.
fn address(def: &Arc<Def>) -> usize {
    Arc::as_ptr(def) as usize
}

/// The full schema's own copies of definitions named by a walk.
fn resolved(schema: &Schema, names: impl IntoIterator<Item = String>) -> Vec<Arc<Def>> {
    names
        .into_iter()
        .filter_map(|name| shared(schema, &name))
        .collect()
}

/// [`resolved`], with the level each was reached at.
fn resolved_needs(schema: &Schema, needs: BTreeMap<String, u32>) -> Vec<(Arc<Def>, u32)> {
    needs
        .into_iter()
        .filter_map(|(name, level)| Some((shared(schema, &name)?, level)))
        .collect()
}

/// The full schema's own copy of a definition.
fn shared(schema: &Schema, name: &str) -> Option<Arc<Def>> {
    schema
        .defs
        .binary_search_by(|def| def.name.as_str().cmp(name))
        .ok()
        .and_then(|i| schema.defs.get(i))
        .cloned()
}
