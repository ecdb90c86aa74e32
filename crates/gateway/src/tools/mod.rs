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

use crate::visibility::{Caller, Rule};
use cards::Card;
pub use envelope::ToolAnswer;
use serde_json::{Value, json};
use served::Served;
use sezzlee_catalog::Catalog;
use sezzlee_catalog::search::fold;
use sezzlee_catalog::semantic::{TextModel, ToolVectors};
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
}

/// Per-catalog data computed once, off the request path.
pub struct Prepared {
    /// Each tool's card as JSON text ([`Card::json`]), escaped as it
    /// stands inside a search page's text block ([`cards::escaped_card`]).
    /// Shared with the next snapshot while the tool is unchanged.
    pub cards: Vec<Arc<sezzlee_json::Escaped>>,
    /// Each tool's tags, folded.
    pub folded_tags: Vec<Vec<String>>,
    /// The folded tag vocabulary of the whole catalog, as the escaped
    /// `tags` member of a search page ([`search::escaped_tags_member`]).
    pub tags_member: sezzlee_json::Escaped,
    /// The distinct visibility rules of the catalog, and each tool's rule.
    pub rules: Vec<Rule>,
    pub rule_of: Vec<usize>,
    /// Each tool's compiled inputSchema, built on first use (shared with
    /// the next catalog's when the tool is unchanged).
    validators: Vec<Arc<CompiledInput>>,
    /// Every tool embedded by the search model, when one is loaded
    /// (rows of unchanged tools taken from the previous snapshot's).
    pub vectors: Option<ToolVectors>,
}

/// A tool's compiled inputSchema, once compiled.
type CompiledInput = OnceLock<Result<jsonschema::Validator, String>>;

impl Prepared {
    pub fn new(catalog: &Catalog, model: Option<&Arc<TextModel>>) -> Prepared {
        let mut prepared = Prepared::build(catalog, |_| None);
        prepared.vectors = model.map(|model| ToolVectors::build(model, catalog, None));
        prepared
    }

    /// What serves `catalog`, taking each unchanged tool's card, tags and
    /// compiled schema from `earlier` (what served `previous`).
    pub fn reusing(
        catalog: &Catalog,
        previous: &Catalog,
        earlier: &Prepared,
        model: Option<&Arc<TextModel>>,
    ) -> Prepared {
        let mut prepared = Prepared::build(catalog, |tool| {
            let index = previous.position(&tool.name)?;
            let before = previous.tools().get(index)?;
            (before.same_body(tool) && before.version == tool.version).then_some((earlier, index))
        });
        prepared.vectors = model.map(|model| {
            let reused = earlier.vectors.as_ref().map(|vectors| (previous, vectors));
            ToolVectors::build(model, catalog, reused)
        });
        prepared
    }

    /// `same(tool)`: where an identical tool was prepared before.
    fn build<'p>(
        catalog: &Catalog,
        same: impl Fn(&sezzlee_catalog::Tool) -> Option<(&'p Prepared, usize)>,
    ) -> Prepared {
        let tools = catalog.tools();
        let earlier: Vec<Option<(&Prepared, usize)>> = tools.iter().map(&same).collect();
        let cards = tools
            .iter()
            .zip(&earlier)
            .map(|(tool, earlier)| match earlier {
                Some((prepared, i)) if *i < prepared.cards.len() => prepared.cards[*i].clone(),
                _ => Arc::new(cards::escaped_card(&Card::of(tool).json(&tool.name))),
            })
            .collect();
        let folded_tags: Vec<Vec<String>> = tools
            .iter()
            .zip(&earlier)
            .map(|(tool, earlier)| match earlier {
                Some((prepared, i)) if *i < prepared.folded_tags.len() => {
                    prepared.folded_tags[*i].clone()
                }
                _ => {
                    let mut tags: Vec<String> = tool.tags.iter().map(|t| fold(t)).collect();
                    tags.dedup();
                    tags
                }
            })
            .collect();
        let mut vocabulary: Vec<String> = folded_tags.iter().flatten().cloned().collect();
        vocabulary.sort();
        vocabulary.dedup();
        let validators = earlier
            .iter()
            .map(|earlier| match earlier {
                Some((prepared, i)) if *i < prepared.validators.len() => {
                    prepared.validators[*i].clone()
                }
                _ => Arc::default(),
            })
            .collect();
        let mut rules: Vec<Rule> = Vec::new();
        let rule_of = catalog
            .tools()
            .iter()
            .map(|tool| {
                let rule = Rule::of(tool);
                match rules.iter().position(|known| *known == rule) {
                    Some(index) => index,
                    None => {
                        rules.push(rule);
                        rules.len() - 1
                    }
                }
            })
            .collect();
        Prepared {
            rules,
            rule_of,
            cards,
            tags_member: search::escaped_tags_member(&vocabulary),
            folded_tags,
            validators,
            vectors: None,
        }
    }

    /// Whether every tool is public (no rule to evaluate per caller).
    pub fn all_public(&self) -> bool {
        self.rules.iter().all(|rule| *rule == Rule::Public)
    }

    /// The compiled inputSchema of tool `index` (compiled once, then shared).
    pub fn validator(
        &self,
        index: usize,
        tool: &sezzlee_catalog::Tool,
    ) -> Result<&jsonschema::Validator, String> {
        let slot = self.validators.get(index).ok_or("no such tool")?;
        slot.get_or_init(|| {
            jsonschema::options()
                .with_draft(jsonschema::Draft::Draft202012)
                .build(&tool.input_schema.to_value())
                .map_err(|err| err.to_string())
        })
        .as_ref()
        .map_err(Clone::clone)
    }
}

/// Runs one of the three tools.
pub async fn call(context: &Context<'_>, tool: ToolName, arguments: &Value) -> ToolAnswer {
    match tool {
        ToolName::SearchTools => search::run(context, arguments),
        ToolName::LoadTool => load::run(context, arguments),
        ToolName::InvokeTool => invoke::run(context, arguments).await,
    }
}

/// The three definitions, stamped with `generation`.
pub fn definitions(generation: u64) -> Vec<Value> {
    let meta = json!({ GENERATION_KEY: generation });
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
