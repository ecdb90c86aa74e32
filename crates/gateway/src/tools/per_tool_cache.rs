//! `PerToolCache`: what serving a catalog needs per tool (its card, folded
//! tags, visibility rule, compiled inputSchema and search vector),
//! computed once per catalog off the request path, and taken from the
//! previous snapshot's for every tool a rebuild left unchanged.

use super::cards::{self, Card};
use super::input_validator::compile_input;
use super::search;
use crate::embedding::{Embedder, VectorSlot};
use crate::visibility::Rule;
use sezzlee_catalog::Catalog;
use sezzlee_search::fold;
use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

/// Per-catalog data computed once, off the request path.
pub struct PerToolCache {
    /// Each tool's card as JSON text ([`Card::json`]), escaped as it
    /// stands inside a search page's text block ([`cards::escaped_card`]).
    /// Shared with the next snapshot while the tool is unchanged.
    pub cards: Vec<Arc<sezzlee_json::Escaped>>,
    /// Each tool's tags, folded (shared with the next snapshot while the
    /// tool is unchanged).
    pub folded_tags: Vec<Arc<[String]>>,
    /// The folded tag vocabulary of the whole catalog, as the escaped
    /// `tags` member of a search page ([`search::escaped_tags_member`]).
    pub tags_member: sezzlee_json::Escaped,
    /// The distinct visibility rules of the catalog, and each tool's rule.
    pub rules: Vec<Rule>,
    pub rule_of: Vec<usize>,
    /// Each tool's compiled inputSchema, built on first use (shared with
    /// the next catalog's when the tool is unchanged).
    validators: Vec<Arc<CompiledInput>>,
    /// Every tool's vector of the search model, when one is loaded: rows
    /// of unchanged tools taken from the previous snapshot's, the rest
    /// filled in as the embedding thread computes them.
    pub vectors: Option<Arc<VectorSlot>>,
    /// Whether a tool's backend is the built-in demo (`demo_backend`
    /// `auto` serves `/demo` only then).
    pub uses_demo_backend: bool,
}

/// A tool's compiled inputSchema, once compiled.
type CompiledInput = OnceLock<Result<jsonschema::Validator, String>>;

impl PerToolCache {
    pub fn new(catalog: &Catalog, embedder: Option<&Embedder>) -> PerToolCache {
        let (mut cache, _) = PerToolCache::build(catalog, None);
        cache.vectors = embedder.map(|embedder| embedder.assemble(catalog, None));
        cache
    }

    /// What serves `catalog`, taking each unchanged tool's card, tags,
    /// rule and compiled schema from `earlier` (what served `previous`).
    pub fn reusing(
        catalog: &Catalog,
        previous: &Catalog,
        earlier: &PerToolCache,
        embedder: Option<&Embedder>,
    ) -> PerToolCache {
        let (mut cache, same) = PerToolCache::build(catalog, Some((previous, earlier)));
        cache.vectors = embedder.map(|embedder| {
            let before = earlier.vectors.as_ref().map(|slot| slot.load_full());
            let reused = before.as_deref().map(|vectors| (vectors, same.as_slice()));
            embedder.assemble(catalog, reused)
        });
        cache
    }

    /// Prepares every tool of `catalog`, taking what it can from `earlier`
    /// (the previous catalog and what was cache for it) for the tools
    /// that are unchanged: same name, same body, same version.
    fn build(
        catalog: &Catalog,
        earlier: Option<(&Catalog, &PerToolCache)>,
    ) -> (PerToolCache, Vec<Option<usize>>) {
        let tools = catalog.tools();
        let same: Vec<Option<usize>> = match earlier {
            Some((previous, _)) => unchanged(tools, previous.tools()),
            None => vec![None; tools.len()],
        };
        let before = |i: Option<&usize>| Some((earlier?.1, *i?));
        let cards = tools
            .iter()
            .zip(&same)
            .map(
                |(tool, i)| match before(i.as_ref()).and_then(|(p, i)| p.cards.get(i)) {
                    Some(card) => card.clone(),
                    None => Arc::new(cards::escaped_card(&Card::of(tool).json(&tool.name))),
                },
            )
            .collect();
        let folded_tags: Vec<Arc<[String]>> = tools
            .iter()
            .zip(&same)
            .map(
                |(tool, i)| match before(i.as_ref()).and_then(|(p, i)| p.folded_tags.get(i)) {
                    Some(tags) => tags.clone(),
                    None => {
                        let mut tags: Vec<String> = tool.tags.iter().map(|t| fold(t)).collect();
                        tags.dedup();
                        tags.into()
                    }
                },
            )
            .collect();
        let mut vocabulary: Vec<&str> = folded_tags
            .iter()
            .flat_map(|tags| tags.iter())
            .map(String::as_str)
            .collect();
        vocabulary.sort_unstable();
        vocabulary.dedup();
        let validators = same
            .iter()
            .map(
                |i| match before(i.as_ref()).and_then(|(p, i)| p.validators.get(i)) {
                    Some(validator) => validator.clone(),
                    None => Arc::default(),
                },
            )
            .collect();
        let (rules, rule_of) = rules_of(tools, &same, earlier.map(|(_, cache)| cache));
        let uses_demo_backend = tools.iter().any(|tool| {
            tool.operation()
                .and_then(|operation| operation.base_url.as_deref())
                .is_some_and(crate::demo::is_demo_base_url)
        });
        let cache = PerToolCache {
            uses_demo_backend,
            rules,
            rule_of,
            cards,
            tags_member: search::escaped_tags_member(&vocabulary),
            folded_tags,
            validators,
            vectors: None,
        };
        (cache, same)
    }

    /// Whether every tool is public (no rule to evaluate per caller).
    pub fn all_public(&self) -> bool {
        self.rules.iter().all(|rule| *rule == Rule::Public)
    }

    /// Whether some tool is under a named policy (which a caller must
    /// satisfy even when no `[auth]` is configured).
    pub fn has_policy(&self) -> bool {
        self.rules
            .iter()
            .any(|rule| matches!(rule, Rule::Policy(_)))
    }
    /// The compiled inputSchema of tool `index` (compiled once, then shared).
    pub fn validator(
        &self,
        index: usize,
        tool: &sezzlee_catalog::Tool,
    ) -> Result<&jsonschema::Validator, String> {
        let slot = self.validators.get(index).ok_or("no such tool")?;
        slot.get_or_init(|| compile_input(tool))
            .as_ref()
            .map_err(Clone::clone)
    }
}

/// For each tool, the index in `before` of the same tool (same name, same
/// body, same version), if it is there. Both are sorted by name: one walk,
/// which reads no tool where a rebuild kept the previous one (shared).
fn unchanged(
    tools: &[sezzlee_catalog::Tool],
    before: &[sezzlee_catalog::Tool],
) -> Vec<Option<usize>> {
    let mut j = 0;
    tools
        .iter()
        .map(|tool| {
            if before.get(j).is_some_and(|b| b.same(tool)) {
                // Names are unique: the next tool's is past this one.
                j += 1;
                return Some(j - 1);
            }
            while before.get(j).is_some_and(|b| b.name < tool.name) {
                j += 1;
            }
            let b = before.get(j)?;
            (b.name == tool.name && b.same_body(tool) && b.version == tool.version).then_some(j)
        })
        .collect()
}

/// The distinct visibility rules of `tools`, in order of first use, and
/// each tool's: an unchanged tool's is the one `earlier` had (looked up
/// once per earlier rule), a changed tool's is read again.
fn rules_of(
    tools: &[sezzlee_catalog::Tool],
    same: &[Option<usize>],
    earlier: Option<&PerToolCache>,
) -> (Vec<Rule>, Vec<usize>) {
    let mut rules: Vec<Rule> = Vec::new();
    let mut known: HashMap<Rule, usize> = HashMap::new();
    let mut intern = |rule: Rule| match known.get(&rule) {
        Some(&index) => index,
        None => {
            rules.push(rule.clone());
            known.insert(rule, rules.len() - 1);
            rules.len() - 1
        }
    };
    // Earlier rule index → this catalog's.
    let mut mapped: Vec<Option<usize>> = vec![None; earlier.map_or(0, |p| p.rules.len())];
    let rule_of = tools
        .iter()
        .zip(same)
        .map(|(tool, i)| {
            let earlier_rule = earlier.zip(*i).and_then(|(cache, i)| {
                let r = *cache.rule_of.get(i)?;
                Some((r, cache.rules.get(r)?))
            });
            match earlier_rule {
                Some((r, rule)) => match mapped.get(r).copied().flatten() {
                    Some(index) => index,
                    None => {
                        let index = intern(rule.clone());
                        if let Some(slot) = mapped.get_mut(r) {
                            *slot = Some(index);
                        }
                        index
                    }
                },
                None => intern(Rule::of(tool)),
            }
        })
        .collect();
    (rules, rule_of)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use sezzlee_catalog::Sources;

    fn document(tag: &str, scope: &str) -> Vec<u8> {
        json!({
            "openapi": "3.0.3",
            "info": {"title": "t", "version": "1"},
            "components": {"securitySchemes": {"oauth": {"type": "oauth2", "flows": {}}}},
            "paths": {
                "/orders": {
                    "get": {"operationId": "listOrders", "tags": [tag, "Órdenes"], "security": [{"oauth": [scope]}], "responses": {}},
                    "post": {"operationId": "createOrder", "tags": ["Orders"], "security": [], "responses": {}}
                },
                "/admin": {"get": {"operationId": "purge", "x-sezzlee-visibility": "admins", "responses": {}}}
            }
        })
        .to_string()
        .into_bytes()
    }

    fn sources(a: Vec<u8>, previous: Option<&Sources>) -> Sources {
        let sidecar = br#"{"policies": {"admins": {"anyRole": ["admin"]}}}"#.to_vec();
        Sources::from_files(
            [
                ("a.json".to_string(), a),
                ("a.sezzlee.json".to_string(), sidecar.clone()),
                ("b.json".to_string(), document("Billing", "read")),
                ("b.sezzlee.json".to_string(), sidecar),
            ],
            previous,
        )
    }

    /// Cards, folded tags, vocabulary, rules and each tool's rule.
    type Texts<'a> = (
        Vec<&'a str>,
        &'a [Arc<[String]>],
        &'a str,
        &'a [Rule],
        &'a [usize],
    );

    fn texts(cache: &PerToolCache) -> Texts<'_> {
        (
            cache.cards.iter().map(|card| card.as_str()).collect(),
            &cache.folded_tags,
            cache.tags_member.as_str(),
            &cache.rules,
            &cache.rule_of,
        )
    }

    #[test]
    fn reusing_prepares_what_preparing_afresh_does() {
        let first = sources(document("Orders", "read"), None);
        let before = Catalog::build(&first);
        let earlier = PerToolCache::new(&before, None);
        assert_eq!(before.tools().len(), 6);
        // One document's tags and security change; the other's do not.
        let second = sources(document("Shipping", "write"), Some(&first));
        let after = Catalog::rebuild(&second, &Default::default(), &before);
        let reused = PerToolCache::reusing(&after, &before, &earlier, None);
        let fresh = PerToolCache::new(&after, None);
        assert_eq!(texts(&reused), texts(&fresh));
        // Public, a policy, and two sets of security requirements.
        assert_eq!(fresh.rules.len(), 4, "{:?}", fresh.rules);
        assert_eq!(reused.validators.len(), after.tools().len());
        // The unchanged document's tools share what was cache before.
        let shared = after
            .tools()
            .iter()
            .enumerate()
            .filter(|(i, tool)| {
                let j = before.position(&tool.name).unwrap();
                Arc::ptr_eq(&reused.cards[*i], &earlier.cards[j])
                    && Arc::ptr_eq(&reused.folded_tags[*i], &earlier.folded_tags[j])
                    && Arc::ptr_eq(&reused.validators[*i], &earlier.validators[j])
            })
            .count();
        assert_eq!(shared, 3);
    }
}
