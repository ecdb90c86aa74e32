//! Test tools shared by the unit tests of the search files: a tool with
//! only the fields search reads, and indexes and rankings built from it.

use super::analysis::SearchFields;
use super::index::SearchIndex;

pub(super) fn strings(words: &[&str]) -> Vec<String> {
    words.iter().map(|w| w.to_string()).collect()
}

/// One test tool; fields not given are empty.
#[derive(Default, Clone)]
pub(super) struct Tool {
    pub(super) name: &'static str,
    pub(super) description: &'static str,
    pub(super) route: &'static str,
    pub(super) api: &'static str,
    pub(super) arguments: Vec<&'static str>,
    pub(super) tags: Vec<String>,
    pub(super) terms: Vec<String>,
}

pub(super) fn tool(name: &'static str, description: &'static str) -> Tool {
    Tool {
        name,
        description,
        ..Tool::default()
    }
}

pub(super) fn index(tools: &[Tool]) -> SearchIndex {
    SearchIndex::build(tools.iter().map(|t| SearchFields {
        name: t.name,
        description: t.description,
        search_terms: &t.terms,
        route: t.route,
        api: t.api,
        argument_names: t.arguments.clone(),
        tags: &t.tags,
        document: "test.json",
        words: None,
    }))
}

pub(super) fn names(tools: &[Tool], query: &str, limit: usize) -> Vec<&'static str> {
    index(tools)
        .top(query, limit, |_| true)
        .into_iter()
        .map(|i| tools[i].name)
        .collect()
}

/// `count` tools named and routed after a few common words (so that
/// they are settled densely and cover resources), half of them with
/// "Returns the items." as description.
pub(super) fn common_word_tools(count: usize) -> Vec<Tool> {
    let words = ["list", "get", "user", "group", "mail", "event", "member"];
    (0..count)
        .map(|i| {
            let name = format!("{}_{}_{i}", words[i % 7], words[(i / 7) % 7]);
            let description = if i % 2 == 0 { "Returns the items." } else { "" };
            let route = format!("GET /{}s/{{id}}/{}", words[(i / 3) % 7], words[i % 5]);
            Tool {
                route: Box::leak(route.into_boxed_str()),
                ..tool(Box::leak(name.into_boxed_str()), description)
            }
        })
        .collect()
}
