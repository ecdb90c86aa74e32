//! What a build passes from step to step: a tool before its final name and
//! version ([`Draft`]), one document's drafts ([`DocumentBuild`]), and the
//! small rules both the document walk and curated variants apply to them.
//! Its own module so the steps depend on it, not on each other.

use super::Target;
use super::compact::Compactor;
use super::compact::fit::{self, Compaction};
use super::diagnostics::Diagnostic;
use super::revision::Revision;
use super::schema::Schema;
use super::sidecar::Policy;
use serde_json::{Map, Value, json};
use std::sync::Arc;

/// A tool before its final name and version are known.
pub struct Draft {
    pub name: String,
    /// Made from the route (`get_orders_by_id`), not given by the sidecar,
    /// `x-sezzlee-name` or an `operationId`: a given name keeps its name
    /// when the two collide.
    pub derived_name: bool,
    pub description: String,
    /// The full input schema (calls are validated against it).
    pub input_schema: Schema,
    /// The compacted inputSchema, when the full one does not fit.
    pub published_input: Option<Schema>,
    /// Full until the draft is fitted, then the published one.
    pub output_schema: Option<Arc<Schema>>,
    pub compaction: Compaction,
    /// Characters of the published definition other than the name's
    /// string, known once the draft is fitted.
    pub size_besides_name: usize,
    pub annotations: Option<Map<String, Value>>,
    pub tags: Vec<String>,
    pub search_terms: Vec<String>,
    pub route: String,
    pub pointer: String,
    pub revision: Option<Revision>,
    pub policy: Option<Policy>,
    pub target: Target,
    pub fixed: Map<String, Value>,
}

/// The drafts and diagnostics of one document.
pub struct DocumentBuild {
    pub file: Arc<str>,
    pub namespace: String,
    /// The API's name (`info.title`), searched as every tool's API field.
    pub title: String,
    pub operations: usize,
    pub drafts: Vec<Draft>,
    pub diagnostics: Vec<Diagnostic>,
}

/// Applies explicit hint settings: `true` sets, `false` removes, `title`
/// takes a string; anything else is ignored.
pub fn apply_annotations(hints: &mut Map<String, Value>, overrides: &Map<String, Value>) {
    const HINTS: [&str; 4] = [
        "readOnlyHint",
        "destructiveHint",
        "idempotentHint",
        "openWorldHint",
    ];
    for (key, value) in overrides {
        match (key.as_str(), value) {
            (hint, Value::Bool(true)) if HINTS.contains(&hint) => {
                hints.insert(hint.to_string(), json!(true));
            }
            (hint, Value::Bool(false)) if HINTS.contains(&hint) => {
                hints.remove(hint);
            }
            ("title", Value::String(_)) => {
                hints.insert(key.clone(), value.clone());
            }
            _ => {}
        }
    }
}

/// Characters of `text` as a JSON string literal.
pub fn string_chars(text: &str) -> usize {
    sezzlee_json::literal_chars(text)
}

/// Appends the items of `more` not already in `list`, in order.
pub fn extend_unique(list: &mut Vec<String>, more: Vec<String>) {
    for item in more {
        if !list.contains(&item) {
            list.push(item);
        }
    }
}

/// Room left in the response budget for what a definition does not hold
/// yet when it is fitted: `authUncertain`, a namespace prefix added when
/// names collide, and the page around one `search_tools` schema result.
const BUDGET_ROOM: usize = 256;

/// Compacts a draft's schemas to its output depth, and further if its
/// definition would not fit the response `budget` (assembly warns about
/// any that still does not, once names are final).
pub fn fit_within_budget(compactor: &mut Compactor, draft: &mut Draft, depth: u32, budget: usize) {
    let fitted = fit::fit(
        compactor,
        &fit::Fixed {
            name: &draft.name,
            description: &draft.description,
            annotations: draft.annotations.as_ref(),
        },
        &draft.input_schema,
        draft.output_schema.as_ref(),
        depth,
        budget.saturating_sub(BUDGET_ROOM),
    );
    draft.published_input = fitted.input;
    draft.output_schema = fitted.output;
    draft.compaction = fitted.compaction;
    draft.size_besides_name = fitted.size.saturating_sub(string_chars(&draft.name));
}
