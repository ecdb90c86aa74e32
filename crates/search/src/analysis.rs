//! A tool's words, analysed once, when its document is built.
//!
//! Splitting and folding text is most of what laying out an index costs,
//! and it depends on nothing outside the tool's document: its fields
//! other than the name (the name changes when another document takes it),
//! and, for the route's resource words, the document's other routes. So a
//! document's tools carry their [`ToolWords`]; a rebuild lays out the
//! catalog's index from them without reading tool text again, and only the
//! documents that changed are analysed.

use std::collections::HashMap;
use std::sync::Arc;

use super::field::{
    API, ARGUMENTS, DESCRIPTION, FIELDS, LEAD, LEAD_TOKENS, NAME, ROUTE, SEARCH_TERMS, TAGS,
};
use super::words::{is_stopword, route_words, singular, tokens};

/// Text of one tool as search sees it. Documents are passed in name order
/// (ascending), so a document's index is also its rank among ties/unmatched.
pub struct SearchFields<'a> {
    pub name: &'a str,
    pub description: &'a str,
    pub search_terms: &'a [String],
    /// `METHOD /path`, e.g. `GET /orders/{id}`.
    pub route: &'a str,
    /// The name of the API the tool belongs to (its document's
    /// `info.title`): an agent naming the product ("in Stripe") prefers
    /// its tools.
    pub api: &'a str,
    pub argument_names: Vec<&'a str>,
    pub tags: &'a [String],
    /// The API document the tool comes from: route segments most of a
    /// document's routes share (`/rest/api/3`) say nothing about any one.
    pub document: &'a str,
    /// The tool's words but its name, analysed with its document; `None`:
    /// analysed here, with the other tools of the same document. When
    /// present, the fields other than `name` and `document` are not read.
    pub words: Option<&'a ToolWords>,
}

/// Field bits and count bits of an entry.
const FIELD_SHIFT: u32 = 5;
const TERM_SHIFT: u32 = 8;
const COUNT_MASK: u32 = (1 << FIELD_SHIFT) - 1;

/// A route word in more than this share of its document's routes (when the
/// document has at least [`SHARED_MIN_ROUTES`]) is a base path segment, not
/// a resource.
const SHARED_SHARE: f32 = 0.5;
const SHARED_MIN_ROUTES: usize = 4;

/// The words of one tool but its name: tokens per field with their counts,
/// field lengths, and the route's resource words.
#[derive(Debug, Clone)]
pub struct ToolWords {
    /// The document's distinct tokens, shared by its tools.
    vocabulary: Arc<[Box<str>]>,
    /// `term << 8 | field << 5 | count`, by term then field; a count over
    /// 31 continues in the next entry.
    entries: Box<[u32]>,
    /// Tokens per field (the name's left at 0).
    lengths: [u32; FIELDS],
    /// Terms of the route's resource segments, one per singular form.
    resources: Box<[u32]>,
}

/// One term of a tool: its place in the document's vocabulary, and its
/// count per field.
pub(super) struct TermCounts {
    pub(super) term: u32,
    pub(super) counts: [u16; FIELDS],
}

impl ToolWords {
    /// The tool's terms with their counts per field (the name's at 0).
    pub(super) fn terms(&self) -> impl Iterator<Item = TermCounts> + '_ {
        let mut entries = self.entries.iter().peekable();
        std::iter::from_fn(move || {
            let first = *entries.next()?;
            let term = first >> TERM_SHIFT;
            let mut counts = [0u16; FIELDS];
            let mut add = |entry: u32| {
                let field = ((entry >> FIELD_SHIFT) & 0b111) as usize;
                if let Some(slot) = counts.get_mut(field) {
                    *slot = slot.saturating_add((entry & COUNT_MASK) as u16);
                }
            };
            add(first);
            while let Some(&&next) = entries.peek() {
                if next >> TERM_SHIFT != term {
                    break;
                }
                add(next);
                entries.next();
            }
            Some(TermCounts { term, counts })
        })
    }

    /// At least the number of distinct terms (entries, one per term and
    /// field).
    pub(super) fn term_count(&self) -> usize {
        self.entries.len()
    }

    pub(super) fn lengths(&self) -> [u32; FIELDS] {
        self.lengths
    }

    /// The texts of the route's resource terms.
    #[cfg(test)]
    pub(super) fn resources(&self) -> impl Iterator<Item = &str> {
        self.resources
            .iter()
            .filter_map(|&term| self.vocabulary.get(term as usize).map(|t| &**t))
    }

    /// The places of the route's resource terms in the vocabulary.
    pub(super) fn resource_terms(&self) -> &[u32] {
        &self.resources
    }

    /// The document's vocabulary, which [`TermCounts::term`] indexes.
    pub(super) fn vocabulary(&self) -> &Arc<[Box<str>]> {
        &self.vocabulary
    }

    /// Heap bytes this tool's words take besides the shared vocabulary.
    pub fn heap_bytes(&self) -> usize {
        (self.entries.len() + self.resources.len()) * 4
    }
}

/// (term, field) of every token of a tool, in order.
type TermFields = Vec<(u32, usize)>;

/// Analyses the tools of one document (their names are not read).
pub fn analyse_document(tools: &[SearchFields<'_>]) -> Vec<ToolWords> {
    let mut ids: HashMap<String, u32> = HashMap::new();
    // Per tool: (provisional term, field) of every token, and field lengths.
    let mut words: Vec<(TermFields, [u32; FIELDS])> = Vec::with_capacity(tools.len());
    let mut routes: Vec<Vec<String>> = Vec::with_capacity(tools.len());
    for tool in tools {
        let fields = fields_but_name(tool);
        let mut lengths = [0u32; FIELDS];
        let mut found = Vec::new();
        for (field, tokens) in fields.into_iter().enumerate() {
            lengths[field] = tokens.len() as u32;
            for token in tokens {
                let next = ids.len() as u32;
                let id = *ids.entry(token).or_insert(next);
                found.push((id, field));
            }
        }
        words.push((found, lengths));
        routes.push(route_words(tool.route));
    }
    let resources = resource_words(&routes);
    let mut vocabulary: Vec<(String, u32)> = ids.into_iter().collect();
    vocabulary.sort_unstable();
    let mut local = vec![0u32; vocabulary.len()];
    for (sorted, (_, provisional)) in vocabulary.iter().enumerate() {
        local[*provisional as usize] = sorted as u32;
    }
    let vocabulary: Arc<[Box<str>]> = vocabulary
        .into_iter()
        .map(|(term, _)| term.into_boxed_str())
        .collect();
    words
        .into_iter()
        .zip(resources)
        .map(|((found, lengths), resources)| {
            let mut pairs: Vec<(u32, usize)> = found
                .into_iter()
                .map(|(id, field)| (local[id as usize], field))
                .collect();
            pairs.sort_unstable();
            let mut entries: Vec<u32> = Vec::with_capacity(pairs.len());
            for (term, field) in pairs {
                let key = (term << TERM_SHIFT) | ((field as u32) << FIELD_SHIFT);
                match entries.last_mut() {
                    Some(last) if *last & !COUNT_MASK == key && *last & COUNT_MASK < COUNT_MASK => {
                        *last += 1;
                    }
                    _ => entries.push(key | 1),
                }
            }
            let resources = resources
                .iter()
                .filter_map(|word| resource_term(&vocabulary, &entries, word))
                .collect();
            ToolWords {
                vocabulary: vocabulary.clone(),
                entries: entries.into_boxed_slice(),
                lengths,
                resources,
            }
        })
        .collect()
}

/// The tokens of each field but the name.
fn fields_but_name(doc: &SearchFields<'_>) -> [Vec<String>; FIELDS] {
    let mut fields: [Vec<String>; FIELDS] = Default::default();
    fields[SEARCH_TERMS] = doc.search_terms.iter().flat_map(|s| tokens(s)).collect();
    fields[TAGS] = doc.tags.iter().flat_map(|s| tokens(s)).collect();
    fields[ROUTE] = tokens(doc.route);
    fields[ARGUMENTS] = doc.argument_names.iter().flat_map(|s| tokens(s)).collect();
    let mut description = tokens(doc.description);
    let rest = description.split_off(description.len().min(LEAD_TOKENS));
    fields[LEAD] = description;
    fields[DESCRIPTION] = rest;
    fields[API] = api_words(doc.api);
    debug_assert!(fields[NAME].is_empty());
    fields
}

/// The words of an API's name that name it, as API terms ([`api_term`]):
/// not function words, versions or numbers, nor the words most API names
/// share (`API`, `REST`, `service`), which would tie every tool of every
/// document.
fn api_words(title: &str) -> Vec<String> {
    const GENERIC: [&str; 12] = [
        "api",
        "apis",
        "rest",
        "restful",
        "http",
        "openapi",
        "swagger",
        "service",
        "services",
        "spec",
        "specification",
        "v",
    ];
    let mut words: Vec<String> = tokens(title)
        .into_iter()
        .filter(|t| !is_stopword(t) && !GENERIC.contains(&t.as_str()))
        .filter(|t| !t.chars().any(|c| c.is_ascii_digit()))
        .map(|t| api_term(&t))
        .collect();
    words.sort_unstable();
    words.dedup();
    words
}

/// The term under which an API's name word is indexed: its singular form
/// behind [`API_MARK`], a character no token has, so API words form groups
/// of their own that only [`SearchIndex`](super::SearchIndex) queries on
/// purpose (never a prefix or a plain word match).
pub(super) fn api_term(word: &str) -> String {
    format!("{API_MARK}{}", singular(word))
}

/// Marks the terms of the API field.
pub(super) const API_MARK: char = '@';

/// The name's tokens.
pub(super) fn name_tokens(name: &str) -> Vec<String> {
    tokens(name)
}

/// Per tool of one document, its route words that are resources: less
/// those most of the document's routes share.
fn resource_words(routes: &[Vec<String>]) -> Vec<Vec<String>> {
    let total = routes.len();
    let mut word_routes: HashMap<&str, usize> = HashMap::new();
    for words in routes {
        for word in words {
            *word_routes.entry(word.as_str()).or_default() += 1;
        }
    }
    routes
        .iter()
        .map(|words| {
            words
                .iter()
                .filter(|word| {
                    let share = word_routes.get(word.as_str()).copied().unwrap_or(0) as f32
                        / total.max(1) as f32;
                    total < SHARED_MIN_ROUTES || share <= SHARED_SHARE
                })
                .cloned()
                .collect()
        })
        .collect()
}

/// A route token of the tool whose singular form is `word`.
fn resource_term(vocabulary: &[Box<str>], entries: &[u32], word: &str) -> Option<u32> {
    entries
        .iter()
        .filter(|&&entry| ((entry >> FIELD_SHIFT) & 0b111) as usize == ROUTE)
        .map(|&entry| entry >> TERM_SHIFT)
        .find(|&term| {
            vocabulary
                .get(term as usize)
                .is_some_and(|token| singular(token) == word)
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn path_words_most_routes_of_a_document_share_are_not_resources() {
        let routes = [
            "GET /rest/api/3/issue",
            "GET /rest/api/3/project",
            "GET /rest/api/3/user",
            "GET /rest/api/3/issue/{id}/comment",
        ];
        let tools: Vec<SearchFields<'_>> = routes
            .iter()
            .map(|route| SearchFields {
                name: "x",
                description: "",
                search_terms: &[],
                route,
                api: "",
                argument_names: Vec::new(),
                tags: &[],
                document: "test.json",
                words: None,
            })
            .collect();
        let words = analyse_document(&tools);
        let resources = |i: usize| words[i].resources().collect::<Vec<_>>();
        // rest and api are in every route; issue in half of them, kept.
        assert_eq!(resources(0), ["issue"]);
        assert_eq!(resources(3), ["comment", "issue"]);
    }
}
