//! The three tools every client sees: search_tools, load_tool, invoke_tool.
//!
//! Their definitions are fixed whatever the catalog holds; only the
//! `sezzlee/catalogGeneration` stamp in `_meta` changes. This module knows
//! nothing about protocol eras or headers: a call is a name, a JSON value
//! of arguments and the caller, and the answer is a [`ToolAnswer`].

pub mod cards;
pub mod envelope;
pub mod invoke;
pub mod load;
pub mod search;
pub mod search_cache;
pub mod served;

use crate::embedding::{Embedder, VectorSlot};
use crate::visibility::{Caller, Rule};
use cards::Card;
pub use envelope::ToolAnswer;
use serde_json::{Value, json};
use served::Served;
use sezzlee_catalog::Catalog;
use sezzlee_search::fold;
use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

/// The three tools, by name: a call names one of these or none.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolName {
    SearchTools,
    LoadTool,
    InvokeTool,
}

impl ToolName {
    /// In the order tools/list publishes them.
    pub const ALL: [ToolName; 3] = [
        ToolName::SearchTools,
        ToolName::LoadTool,
        ToolName::InvokeTool,
    ];

    /// The name a client calls it by.
    pub fn as_str(self) -> &'static str {
        match self {
            ToolName::SearchTools => "search_tools",
            ToolName::LoadTool => "load_tool",
            ToolName::InvokeTool => "invoke_tool",
        }
    }

    /// The tool called `name`, if it is one of the three.
    pub fn parse(name: &str) -> Option<ToolName> {
        ToolName::ALL.into_iter().find(|tool| tool.as_str() == name)
    }
}

/// The `_meta` key stamping each tool with the catalog generation.
pub const GENERATION_KEY: &str = "sezzlee/catalogGeneration";

/// Everything a call needs besides its arguments.
pub struct Context<'a> {
    pub served: &'a Served,
    pub caller: &'a Caller,
    /// Largest answer, in characters of serialised JSON.
    pub budget: usize,
    pub backend: &'a crate::backend::Client,
    /// The gateway's own address, for `${SEZZLEE_SELF}` in backend URLs.
    pub self_url: Option<&'a str>,
    /// Where calls are counted and timed.
    pub metrics: &'a crate::metrics::Metrics,
}

/// Per-catalog data computed once, off the request path.
pub struct Prepared {
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

impl Prepared {
    pub fn new(catalog: &Catalog, embedder: Option<&Embedder>) -> Prepared {
        let (mut prepared, _) = Prepared::build(catalog, None);
        prepared.vectors = embedder.map(|embedder| embedder.assemble(catalog, None));
        prepared
    }

    /// What serves `catalog`, taking each unchanged tool's card, tags,
    /// rule and compiled schema from `earlier` (what served `previous`).
    pub fn reusing(
        catalog: &Catalog,
        previous: &Catalog,
        earlier: &Prepared,
        embedder: Option<&Embedder>,
    ) -> Prepared {
        let (mut prepared, same) = Prepared::build(catalog, Some((previous, earlier)));
        prepared.vectors = embedder.map(|embedder| {
            let before = earlier.vectors.as_ref().map(|slot| slot.load_full());
            let reused = before.as_deref().map(|vectors| (vectors, same.as_slice()));
            embedder.assemble(catalog, reused)
        });
        prepared
    }

    /// Prepares every tool of `catalog`, taking what it can from `earlier`
    /// (the previous catalog and what was prepared for it) for the tools
    /// that are unchanged: same name, same body, same version.
    fn build(
        catalog: &Catalog,
        earlier: Option<(&Catalog, &Prepared)>,
    ) -> (Prepared, Vec<Option<usize>>) {
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
        let (rules, rule_of) = rules_of(tools, &same, earlier.map(|(_, prepared)| prepared));
        let uses_demo_backend = tools.iter().any(|tool| {
            tool.operation
                .base_url
                .as_deref()
                .is_some_and(crate::demo::is_demo_base_url)
        });
        let prepared = Prepared {
            uses_demo_backend,
            rules,
            rule_of,
            cards,
            tags_member: search::escaped_tags_member(&vocabulary),
            folded_tags,
            validators,
            vectors: None,
        };
        (prepared, same)
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
        slot.get_or_init(|| {
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
        })
        .as_ref()
        .map_err(Clone::clone)
    }
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
    earlier: Option<&Prepared>,
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
            let earlier_rule = earlier.zip(*i).and_then(|(prepared, i)| {
                let r = *prepared.rule_of.get(i)?;
                Some((r, prepared.rules.get(r)?))
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

/// Runs one of the three tools, in a span of its name (a child of the
/// request's; see [`crate::telemetry`]).
pub async fn call(context: &Context<'_>, tool: ToolName, arguments: &Value) -> ToolAnswer {
    use tracing::Instrument;
    let started = std::time::Instant::now();
    let index = match tool {
        ToolName::SearchTools => 0,
        ToolName::LoadTool => 1,
        ToolName::InvokeTool => 2,
    };
    let answer = match tool {
        ToolName::SearchTools => {
            tracing::info_span!("search_tools").in_scope(|| search::run(context, arguments))
        }
        ToolName::LoadTool => {
            tracing::info_span!("load_tool").in_scope(|| load::run(context, arguments))
        }
        ToolName::InvokeTool => {
            invoke::run(context, arguments)
                .instrument(tracing::info_span!("invoke_tool"))
                .await
        }
    };
    context
        .metrics
        .tool_call(index, answer.code(), started.elapsed());
    answer
}

/// The three definitions, stamped with `generation`. search_tools and
/// load_tool say they only read the gateway's own catalog (`readOnlyHint`,
/// no `openWorldHint`), so hosts that approve read-only tools on their own
/// stop asking about every search; invoke_tool carries no hints, so the
/// protocol's cautious defaults (destructive, open world) stand for it.
pub fn definitions(generation: u64) -> Vec<Value> {
    let meta = json!({ GENERATION_KEY: generation });
    let read_only = json!({"readOnlyHint": true, "openWorldHint": false});
    vec![
        json!({
            "name": ToolName::SearchTools.as_str(),
            "description": "Search the API operations this gateway serves and get compact cards (name, description, parameters). Start here: find the operation for the task, then load_tool it, then invoke_tool it. Keywords rank results, they do not filter; use tags to require whole tags.",
            "inputSchema": {
                "type": "object",
                "properties": {
                    "query": {
                        "description": "Keywords matched by prefix against operation names, descriptions, declared search terms, routes, argument names and tag text; keywords rank results, they do not filter them. Empty lists everything. To require a whole tag, use tags.",
                        "type": "string",
                        "default": ""
                    },
                    "limit": {
                        "description": "Maximum number of results, 1-50.",
                        "type": "integer",
                        "default": 20
                    },
                    "detail": {
                        "description": "Shape of each result: \"card\" for the compact card, \"schema\" for the full definition load_tool would return. Any other value is card. A schema page is much larger; pair it with a small limit.",
                        "type": "string",
                        "enum": ["card", "schema"],
                        "default": "card"
                    },
                    "tags": {
                        "description": "Tags every result must carry, matched against the whole tag and insensitive to case and accents. Empty applies no filter; the answer's tags field lists what is available.",
                        "type": "array",
                        "items": { "type": "string" },
                        "default": null
                    }
                }
            },
            "annotations": read_only.clone(),
            "_meta": meta
        }),
        json!({
            "name": ToolName::LoadTool.as_str(),
            "description": "Load the full definition of one operation by the name search_tools returned: its description, inputSchema, outputSchema, annotations and version. Pass the version to invoke_tool so the call runs only against this exact definition.",
            "inputSchema": {
                "type": "object",
                "properties": {
                    "name": {
                        "description": "The operation's name, exactly as search_tools returned it.",
                        "type": "string"
                    }
                },
                "required": ["name"]
            },
            "annotations": read_only,
            "_meta": meta
        }),
        json!({
            "name": ToolName::InvokeTool.as_str(),
            "description": "Call one operation on its backend with your identity. Load it with load_tool first and pass the arguments its inputSchema describes; pass the version load_tool returned to refuse the call if the definition changed since. Success returns the HTTP status, body and selected headers.",
            "inputSchema": {
                "type": "object",
                "properties": {
                    "name": {
                        "description": "The operation's name, exactly as search_tools and load_tool returned it.",
                        "type": "string"
                    },
                    "arguments": {
                        "description": "An object whose keys are the properties of the operation's inputSchema (from load_tool)."
                    },
                    "version": {
                        "description": "The version load_tool returned. When given, the call is refused with tool_changed (and nothing is sent to the backend) if this replica holds a different definition.",
                        "type": "string"
                    }
                },
                "required": ["name"]
            },
            "_meta": meta
        }),
    ]
}

/// What `server/discover` and `initialize` tell an agent about the flow.
pub const INSTRUCTIONS: &str = "This gateway serves a catalog of API operations through three tools. \
1) search_tools with a few keywords (and tags to narrow) returns compact cards; pick the operation that fits. \
2) load_tool with that card's name returns its full definition: inputSchema, outputSchema and a version. \
3) invoke_tool with the name, arguments that match the inputSchema and the version calls the real API with your identity. \
Failures come back as JSON with error, message and retryable; the message says what to do next. \
If invoke_tool answers tool_changed, load the tool again and retry with the new version.";

#[cfg(test)]
mod tests {

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

    use super::*;
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

    fn texts(prepared: &Prepared) -> Texts<'_> {
        (
            prepared.cards.iter().map(|card| card.as_str()).collect(),
            &prepared.folded_tags,
            prepared.tags_member.as_str(),
            &prepared.rules,
            &prepared.rule_of,
        )
    }

    #[test]
    fn reusing_prepares_what_preparing_afresh_does() {
        let first = sources(document("Orders", "read"), None);
        let before = Catalog::build(&first);
        let earlier = Prepared::new(&before, None);
        assert_eq!(before.tools().len(), 6);
        // One document's tags and security change; the other's do not.
        let second = sources(document("Shipping", "write"), Some(&first));
        let after = Catalog::rebuild(&second, &Default::default(), &before);
        let reused = Prepared::reusing(&after, &before, &earlier, None);
        let fresh = Prepared::new(&after, None);
        assert_eq!(texts(&reused), texts(&fresh));
        // Public, a policy, and two sets of security requirements.
        assert_eq!(fresh.rules.len(), 4, "{:?}", fresh.rules);
        assert_eq!(reused.validators.len(), after.tools().len());
        // The unchanged document's tools share what was prepared before.
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
