//! Index build: a catalog's tools laid out once, for every query to read.
//!
//! What depends on the tools alone, not on the query, is computed when the
//! catalog is built, so that a query reads numbers and never tool text: the
//! sorted token dictionary (`dictionary`), tokens grouped by singular
//! form, each group's posting list with its field-weighted,
//! length-normalised (BM25F) frequency per tool, and each route's resource
//! segments. How it is laid out, from scratch or from the index before, is
//! `layout`; the effects of the commonest words are in `common`.

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

use super::analysis::{ToolWords, analyse_document};
use super::dictionary::Dictionary;
use super::effects::KeywordEffect;
use super::layout::{Before, lay_out};
use super::words::{is_stopword, singular, tokens};

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

/// The searchable fields, in the order of [`FIELD_WEIGHT`] and [`FIELD_B`].
/// The description is two fields: its first [`LEAD_TOKENS`] tokens (the
/// lead, usually the summary) and the rest.
pub(super) const FIELDS: usize = 8;
pub(super) const NAME: usize = 0;
pub(super) const SEARCH_TERMS: usize = 1;
pub(super) const TAGS: usize = 2;
pub(super) const ROUTE: usize = 3;
pub(super) const ARGUMENTS: usize = 4;
pub(super) const LEAD: usize = 5;
pub(super) const DESCRIPTION: usize = 6;
pub(super) const API: usize = 7;

/// How much a match in each field weighs (BM25F field boost).
pub(super) const FIELD_WEIGHT: [f32; FIELDS] = [3.0, 3.0, 1.5, 1.5, 1.0, 0.9, 0.6, 1.0];
/// BM25 length normalisation per field (0: none, 1: full), against the
/// field's mean length over the tool's document (so a tool's weights depend
/// on its document alone, and an API's verbose style is its own norm).
/// Names are normalised most: `create_gist` is more about gists than
/// `gists_create_comment_reaction`.
pub(super) const FIELD_B: [f32; FIELDS] = [0.9, 0.5, 0.3, 0.3, 0.3, 0.5, 0.75, 0.0];
/// How many tokens of the description make its lead.
pub(super) const LEAD_TOKENS: usize = 10;

/// One posting: a tool containing a word group, with the group's BM25F
/// pseudo-frequency there (field-weighted, length-normalised).
/// Eight bytes, so a long posting list stays dense in cache.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct Posting {
    /// The tool, and in the top bit ([`RESOURCE_BIT`]) whether the group
    /// names one of its resource segments (see [`ROUTE_COVERAGE`](super::scratch::ROUTE_COVERAGE)).
    doc_and_resource: u32,
    pub(super) weight: f32,
}

const RESOURCE_BIT: u32 = 1 << 31;

impl Posting {
    pub(super) fn new(doc: u32, resource: bool, weight: f32) -> Posting {
        let flag = if resource { RESOURCE_BIT } else { 0 };
        Posting {
            doc_and_resource: (doc & !RESOURCE_BIT) | flag,
            weight,
        }
    }

    /// The same posting for the tool's id in another layout.
    pub(super) fn with_doc(&self, doc: u32) -> Posting {
        Posting::new(doc, self.resource(), self.weight)
    }

    pub(super) fn doc(&self) -> usize {
        (self.doc_and_resource & !RESOURCE_BIT) as usize
    }

    pub(super) fn resource(&self) -> bool {
        self.doc_and_resource & RESOURCE_BIT != 0
    }
}

/// An inverted index over the tools of a catalog. Immutable once built, so
/// it is `Send + Sync` and any number of queries may run on it at once.
#[derive(Debug)]
pub struct SearchIndex {
    pub(super) doc_count: usize,
    /// Tokens, sorted and grouped; shared with the next index while no
    /// word comes or goes.
    pub(super) dictionary: Arc<Dictionary>,
    /// How many tools hold each term of the dictionary.
    pub(super) term_tools: Vec<u32>,
    /// `postings[posting_start[g]..posting_start[g + 1]]` are group `g`'s,
    /// in tool order.
    pub(super) posting_start: Vec<u32>,
    pub(super) postings: Vec<Posting>,
    /// Distinct resource segments of each tool's route.
    pub(super) resources: Vec<u8>,
    /// The effects of the catalog's commonest words as keywords
    /// ([`SearchIndex::common_effects`]): computed with a fresh index, and
    /// after an update when [`SearchIndex::prepare_common`] is called.
    /// Rankings are the same with or without them.
    pub(super) common: OnceLock<HashMap<Box<str>, Arc<KeywordEffect>>>,
}

impl SearchIndex {
    /// Indexes `docs` without the effects of common words (the public
    /// [`SearchIndex::build`] adds them).
    pub(super) fn index_tools<'a>(docs: impl IntoIterator<Item = SearchFields<'a>>) -> SearchIndex {
        lay_out_analysed(&docs.into_iter().collect::<Vec<_>>(), None)
    }

    /// The index of `docs` laid out from `previous`, the index of
    /// `before`: the postings of documents whose tools are unchanged are
    /// kept, only the others' laid out. Equal to a fresh layout of `docs`,
    /// but for the effects of common words, which wait for
    /// [`SearchIndex::prepare_common`] (rankings are the same without).
    /// Falls back to a fresh layout when either list is not in strictly
    /// ascending name order or a tool before comes without its words.
    pub fn update<'a>(
        previous: &SearchIndex,
        before: &[SearchFields<'_>],
        docs: impl IntoIterator<Item = SearchFields<'a>>,
    ) -> SearchIndex {
        let docs: Vec<SearchFields<'a>> = docs.into_iter().collect();
        let before = (previous.doc_count == before.len()).then_some(Before {
            index: previous,
            tools: before,
        });
        lay_out_analysed(&docs, before)
    }

    /// Computes the effects of the commonest words, when not yet done (an
    /// updated index leaves them to its owner, off the reload's path).
    pub fn prepare_common(&self) {
        self.common.get_or_init(|| self.common_effects());
    }

    /// Number of tools indexed.
    pub fn len(&self) -> usize {
        self.doc_count
    }

    /// Whether no tool is indexed.
    pub fn is_empty(&self) -> bool {
        self.doc_count == 0
    }

    pub(super) fn group_postings(&self, group: u32) -> &[Posting] {
        let group = group as usize;
        let (Some(&start), Some(&end)) = (
            self.posting_start.get(group),
            self.posting_start.get(group + 1),
        ) else {
            return &[];
        };
        self.postings
            .get(start as usize..end as usize)
            .unwrap_or(&[])
    }

    pub(super) fn postings_len(&self) -> usize {
        self.postings.len()
    }

    /// Whether `other` is laid out exactly as `self` (the effects of
    /// common words aside).
    #[cfg(test)]
    pub(super) fn same_layout(&self, other: &SearchIndex) -> bool {
        let d = (&self.dictionary, &other.dictionary);
        self.doc_count == other.doc_count
            && d.0.terms == d.1.terms
            && d.0.term_group == d.1.term_group
            && d.0.forms == d.1.forms
            && d.0.groups == d.1.groups
            && self.term_tools == other.term_tools
            && self.posting_start == other.posting_start
            && self.postings.len() == other.postings.len()
            && self.postings.iter().zip(&other.postings).all(|(a, b)| {
                a.doc_and_resource == b.doc_and_resource && a.weight.to_bits() == b.weight.to_bits()
            })
            && self.resources == other.resources
    }
}

/// Lays out `docs`, analysing first the words of those that come without.
fn lay_out_analysed(docs: &[SearchFields<'_>], before: Option<Before<'_, '_>>) -> SearchIndex {
    let analysed = analyse_missing(docs);
    let words: Vec<&ToolWords> = (docs.iter().enumerate())
        .filter_map(|(i, doc)| doc.words.or(analysed.get(i).and_then(Option::as_ref)))
        .collect();
    // Every tool without words was analysed, so each has its words.
    if words.len() != docs.len() {
        return lay_out(&[], &[], None);
    }
    lay_out(docs, &words, before)
}

/// The words of tools that come without them, analysed by document (the
/// tools of one document together), at their tools' positions; empty when
/// every tool comes with its words.
fn analyse_missing(docs: &[SearchFields<'_>]) -> Vec<Option<ToolWords>> {
    let mut by_document: HashMap<&str, Vec<usize>> = HashMap::new();
    for (i, doc) in docs.iter().enumerate() {
        if doc.words.is_none() {
            by_document.entry(doc.document).or_default().push(i);
        }
    }
    if by_document.is_empty() {
        return Vec::new();
    }
    let mut analysed: Vec<Option<ToolWords>> = vec![None; docs.len()];
    for members in by_document.into_values() {
        let fields: Vec<SearchFields<'_>> = members
            .iter()
            .map(|&i| SearchFields {
                argument_names: docs[i].argument_names.clone(),
                ..docs[i]
            })
            .collect();
        for (i, words) in members.into_iter().zip(analyse_document(&fields)) {
            analysed[i] = Some(words);
        }
    }
    analysed
}

/// Singular forms of the literal words of a route's path: not the method,
/// not `{parameters}`, not numbers or stopwords; each once.
pub(super) fn route_words(route: &str) -> Vec<String> {
    let path = route.split_once(' ').map_or(route, |(_, path)| path);
    let mut literal = String::with_capacity(path.len());
    let mut depth = 0usize;
    for c in path.chars() {
        match c {
            '{' => depth += 1,
            '}' => depth = depth.saturating_sub(1),
            _ if depth == 0 => literal.push(c),
            _ => literal.push(' '),
        }
    }
    let mut words: Vec<String> = tokens(&literal)
        .into_iter()
        .filter(|t| !t.chars().all(|c| c.is_ascii_digit()) && !is_version(t) && !is_stopword(t))
        .map(|t| singular(&t))
        .collect();
    words.sort_unstable();
    words.dedup();
    words
}

/// Whether a path word is an API version (`v1`, `v13`): it names no
/// resource, however few routes share it (APIs that version each endpoint
/// on its own have `/v6/deployments` beside `/v3/projects/{id}`).
fn is_version(word: &str) -> bool {
    word.strip_prefix('v')
        .is_some_and(|digits| !digits.is_empty() && digits.chars().all(|c| c.is_ascii_digit()))
}

/// A word group's BM25F pseudo-frequency in one field of a tool: weighted
/// and normalised by the field's length. Repeats count only in the
/// description; elsewhere they are structure, not emphasis.
pub(super) fn field_weight(field: usize, frequency: u16, length: u32, average: f32) -> f32 {
    if frequency == 0 {
        return 0.0;
    }
    let count = if field == DESCRIPTION { frequency } else { 1 };
    let norm = 1.0 - FIELD_B[field] + FIELD_B[field] * length as f32 / average;
    FIELD_WEIGHT[field] * f32::from(count) / norm
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::search::test_support::{Tool, names, strings, tool};

    #[test]
    fn name_beats_description() {
        let tools = [
            tool("a_thing", "Returns the invoice for an order."),
            tool("b_invoice", "Returns something."),
        ];
        assert_eq!(names(&tools, "invoice", 2), ["b_invoice", "a_thing"]);
    }

    #[test]
    fn field_weights_are_ordered() {
        let by_terms = Tool {
            name: "d",
            terms: strings(&["refund"]),
            ..Tool::default()
        };
        let by_tag = Tool {
            name: "c",
            tags: strings(&["Refund"]),
            ..Tool::default()
        };
        let by_argument = Tool {
            name: "b",
            arguments: vec!["refundId"],
            ..Tool::default()
        };
        let by_description = tool("a", "Refund it.");
        let tools = [by_description, by_argument, by_tag, by_terms];
        assert_eq!(names(&tools, "refund", 4), ["d", "c", "b", "a"]);
    }

    #[test]
    fn route_words_and_parameters_are_searched() {
        let tools = [
            Tool {
                name: "x",
                route: "GET /stores/{storeId}/rerun-failed_jobs",
                ..Tool::default()
            },
            tool("y", ""),
        ];
        for query in ["store", "rerun", "failed", "jobs", "id"] {
            assert_eq!(names(&tools, query, 1), ["x"], "{query}");
        }
    }

    #[test]
    fn description_lead_weighs_more_than_the_rest() {
        let late = "Returns one of the many things this service keeps for you, an invoice.";
        let tools = [tool("a", late), tool("b", "Invoice details.")];
        assert_eq!(names(&tools, "invoice", 2), ["b", "a"]);
    }

    #[test]
    fn route_words_are_literal_path_words_in_singular_form() {
        assert_eq!(
            route_words("GET /v1/users/{user-id}/todoLists/{id}.json"),
            strings(&["json", "list", "todo", "user"])
        );
        assert_eq!(
            route_words("POST /2010-04-01/Accounts"),
            strings(&["account"])
        );
        assert!(route_words("GET /").is_empty());
        // Versions name no resource; words that merely start with v do.
        assert_eq!(
            route_words("GET /v13/deployments/{id}/v/vendors"),
            strings(&["deployment", "v", "vendor"])
        );
    }

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

    #[test]
    fn an_api_named_in_the_query_is_preferred_without_hiding_others() {
        let mut tools = vec![
            Tool {
                name: "a_list_customers",
                api: "Acme Billing API",
                ..Tool::default()
            },
            Tool {
                name: "b_list_customers",
                api: "Stripe API",
                ..Tool::default()
            },
        ];
        // Stripe is a few of the catalog's tools.
        tools.extend((0..40).map(|i| Tool {
            name: Box::leak(format!("c_other_{i:02}").into_boxed_str()),
            api: "Acme Billing API",
            ..Tool::default()
        }));
        assert_eq!(
            names(&tools, "list customers", 2),
            ["a_list_customers", "b_list_customers"]
        );
        assert_eq!(
            names(&tools, "list my customers in Stripe", 3),
            ["b_list_customers", "a_list_customers", "c_other_00"]
        );
        // The words every API's name has say nothing; nor does an API that
        // is most of the catalog (Acme), nor its words as plain words.
        assert_eq!(
            names(&tools, "list customers api", 2),
            ["a_list_customers", "b_list_customers"]
        );
        assert_eq!(
            names(&tools, "list customers in acme", 2),
            ["a_list_customers", "b_list_customers"]
        );
        assert_eq!(names(&tools, "stri", 1), ["a_list_customers"]);
    }

    #[test]
    fn index_is_shareable() {
        fn assert_send_sync<T: Send + Sync>() {}
        assert_send_sync::<SearchIndex>();
    }
}
