//! Index build: a catalog's tools laid out once, for every query to read.
//!
//! What depends on the tools alone, not on the query, is computed when the
//! catalog is built, so that a query reads numbers and never tool text: the
//! sorted token dictionary, tokens grouped by singular form, each group's
//! posting list with its field-weighted, length-normalised (BM25F)
//! frequency per tool, and each route's resource segments. (The effects of
//! the commonest words, also computed at build time, are in `effects`.)

use std::collections::HashMap;
use std::sync::Arc;

use super::analysis::{ToolWords, analyse_document, name_tokens};
use super::effects::KeywordEffect;
use super::words::{is_stopword, singular, tokens};

/// Text of one tool as search sees it. Documents are passed in name order
/// (ascending), so a document's index is also its rank among ties/unmatched.
pub struct SearchFields<'a> {
    pub name: &'a str,
    pub description: &'a str,
    pub search_terms: &'a [String],
    /// `METHOD /path`, e.g. `GET /orders/{id}`.
    pub route: &'a str,
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
pub(super) const FIELDS: usize = 7;
pub(super) const NAME: usize = 0;
pub(super) const SEARCH_TERMS: usize = 1;
pub(super) const TAGS: usize = 2;
pub(super) const ROUTE: usize = 3;
pub(super) const ARGUMENTS: usize = 4;
pub(super) const LEAD: usize = 5;
pub(super) const DESCRIPTION: usize = 6;

/// How much a match in each field weighs (BM25F field boost).
pub(super) const FIELD_WEIGHT: [f32; FIELDS] = [3.0, 3.0, 1.5, 1.5, 1.0, 0.9, 0.6];
/// BM25 length normalisation per field (0: none, 1: full). Names are
/// normalised most: `create_gist` is more about gists than
/// `gists_create_comment_reaction`.
pub(super) const FIELD_B: [f32; FIELDS] = [0.9, 0.5, 0.3, 0.3, 0.3, 0.5, 0.75];
/// How many tokens of the description make its lead.
pub(super) const LEAD_TOKENS: usize = 10;

/// One posting: a tool containing a word group, with the group's BM25F
/// pseudo-frequency there (field-weighted, length-normalised).
/// Eight bytes, so a long posting list stays dense in cache.
#[derive(Clone, Copy, Debug)]
pub(super) struct Posting {
    /// The tool, and in the top bit ([`RESOURCE_BIT`]) whether the group
    /// names one of its resource segments (see [`ROUTE_COVERAGE`](super::scratch::ROUTE_COVERAGE)).
    doc_and_resource: u32,
    pub(super) weight: f32,
}

const RESOURCE_BIT: u32 = 1 << 31;

impl Posting {
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
    /// Distinct tokens, sorted.
    pub(super) terms: Vec<Box<str>>,
    /// The group (singular form) of each token.
    pub(super) term_group: Vec<u32>,
    /// Group id of each singular form.
    pub(super) groups: HashMap<Box<str>, u32>,
    /// `postings[posting_start[g]..posting_start[g + 1]]` are group `g`'s,
    /// in tool order.
    posting_start: Vec<u32>,
    postings: Vec<Posting>,
    /// Distinct resource segments of each tool's route.
    pub(super) resources: Vec<u8>,
    /// The effects of the catalog's commonest words as keywords, computed
    /// when the index is built ([`SearchIndex::common_effects`]).
    pub(super) common: HashMap<Box<str>, Arc<KeywordEffect>>,
}

impl SearchIndex {
    /// Indexes `docs` without the effects of common words (the public
    /// [`SearchIndex::build`] adds them).
    pub(super) fn index_tools<'a>(docs: impl IntoIterator<Item = SearchFields<'a>>) -> SearchIndex {
        let docs: Vec<SearchFields<'a>> = docs.into_iter().collect();
        // Tools that come without their words are analysed by document.
        let mut by_document: HashMap<&str, Vec<usize>> = HashMap::new();
        for (i, doc) in docs.iter().enumerate() {
            if doc.words.is_none() {
                by_document.entry(doc.document).or_default().push(i);
            }
        }
        let mut analysed: Vec<Option<ToolWords>> = vec![None; docs.len()];
        for members in by_document.into_values() {
            let fields: Vec<SearchFields<'a>> = members
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
        let mut builder = Builder::default();
        let terms: usize = docs
            .iter()
            .zip(&analysed)
            .filter_map(|(doc, own)| doc.words.or(own.as_ref()))
            .map(ToolWords::term_count)
            .sum();
        // Room for the name's words too.
        builder.occurrences.reserve(terms + 4 * docs.len());
        builder.lengths.reserve(docs.len());
        builder.resources.reserve(docs.len());
        for (doc, own) in docs.iter().zip(&analysed) {
            if let Some(words) = doc.words.or(own.as_ref()) {
                builder.add(doc.name, words);
            }
        }
        builder.finish()
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
}

/// Collects tools, then lays out the index.
#[derive(Default)]
struct Builder {
    term_ids: HashMap<String, u32>,
    /// Provisional term ids of each vocabulary met, by its address.
    vocabularies: HashMap<usize, Vec<u32>>,
    /// (term, doc, frequency per field), in doc order.
    occurrences: Vec<(u32, u32, [u16; FIELDS])>,
    /// Token count per field, per doc.
    lengths: Vec<[u32; FIELDS]>,
    /// The resource terms of each doc's route.
    resources: Vec<Vec<u32>>,
}

impl Builder {
    fn add(&mut self, name: &str, words: &ToolWords) {
        let id = self.lengths.len() as u32;
        let vocabulary = words.vocabulary();
        let key = Arc::as_ptr(vocabulary) as *const u8 as usize;
        if !self.vocabularies.contains_key(&key) {
            let ids = vocabulary.iter().map(|term| self.term_id(term)).collect();
            self.vocabularies.insert(key, ids);
        }
        let ids = self.vocabularies.get(&key).map_or(&[][..], Vec::as_slice);
        let global = |term: u32| ids.get(term as usize).copied().unwrap_or(0);
        let mut counts: Vec<(u32, [u16; FIELDS])> = words
            .terms()
            .map(|term| (global(term.term), term.counts))
            .collect();
        let resources: Vec<u32> = words.resource_terms().iter().map(|&t| global(t)).collect();
        let names = name_tokens(name);
        let mut lengths = words.lengths();
        lengths[NAME] = names.len() as u32;
        for token in &names {
            let term = self.term_id(token);
            match counts.iter_mut().find(|(t, _)| *t == term) {
                Some((_, slot)) => slot[NAME] = slot[NAME].saturating_add(1),
                None => {
                    let mut slot = [0; FIELDS];
                    slot[NAME] = 1;
                    counts.push((term, slot));
                }
            }
        }
        let entries = counts.into_iter().map(|(term, f)| (term, id, f));
        self.occurrences.extend(entries);
        self.lengths.push(lengths);
        self.resources.push(resources);
    }

    fn term_id(&mut self, word: &str) -> u32 {
        if let Some(&id) = self.term_ids.get(word) {
            return id;
        }
        let id = self.term_ids.len() as u32;
        self.term_ids.insert(word.to_string(), id);
        id
    }

    fn finish(self) -> SearchIndex {
        let doc_count = self.lengths.len();
        let (terms, remap) = sorted_terms(self.term_ids);
        let (term_group, groups) = singular_groups(&terms);
        let group_of = |term: u32| term_group[remap[term as usize] as usize];
        let mut occurrences = self.occurrences;
        for occurrence in &mut occurrences {
            occurrence.0 = group_of(occurrence.0);
        }
        let occurrences = by_group(occurrences, groups.len());
        let merged = merge_occurrences(occurrences);
        let resource_groups: Vec<Vec<u32>> = self
            .resources
            .iter()
            .map(|terms| {
                let mut ids: Vec<u32> = terms.iter().map(|&term| group_of(term)).collect();
                ids.sort_unstable();
                ids.dedup();
                ids
            })
            .collect();
        let resources = resource_groups
            .iter()
            .map(|groups| groups.len().min(usize::from(u8::MAX)) as u8)
            .collect();

        let average = average_lengths(&self.lengths);
        let mut posting_start = Vec::with_capacity(groups.len() + 1);
        let mut postings = Vec::with_capacity(merged.len());
        for (group, doc, frequency) in merged {
            while posting_start.len() <= group as usize {
                posting_start.push(postings.len() as u32);
            }
            let lengths = &self.lengths[doc as usize];
            let weight = (0..FIELDS)
                .map(|f| field_weight(f, frequency[f], lengths[f], average[f]))
                .sum();
            let resource = resource_groups
                .get(doc as usize)
                .is_some_and(|groups| groups.binary_search(&group).is_ok());
            let flag = if resource { RESOURCE_BIT } else { 0 };
            postings.push(Posting {
                doc_and_resource: (doc & !RESOURCE_BIT) | flag,
                weight,
            });
        }
        while posting_start.len() <= groups.len() {
            posting_start.push(postings.len() as u32);
        }
        SearchIndex {
            doc_count,
            terms,
            term_group,
            groups,
            posting_start,
            postings,
            resources,
            common: HashMap::new(),
        }
    }
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

/// Occurrences ordered by group, each group's in the order given (doc
/// order): a counting sort, linear in the occurrences.
fn by_group(
    occurrences: Vec<(u32, u32, [u16; FIELDS])>,
    groups: usize,
) -> Vec<(u32, u32, [u16; FIELDS])> {
    let mut start = vec![0usize; groups + 1];
    for (group, _, _) in &occurrences {
        if let Some(count) = start.get_mut(*group as usize + 1) {
            *count += 1;
        }
    }
    for i in 1..start.len() {
        start[i] += start[i - 1];
    }
    let mut sorted = vec![(0, 0, [0; FIELDS]); occurrences.len()];
    for occurrence in occurrences.into_iter() {
        if let Some(next) = start.get_mut(occurrence.0 as usize)
            && let Some(slot) = sorted.get_mut(*next)
        {
            *slot = occurrence;
            *next += 1;
        }
    }
    sorted
}

/// Sums the frequencies of entries with the same (group, doc); `sorted` is
/// ordered by (group, doc).
fn merge_occurrences(mut sorted: Vec<(u32, u32, [u16; FIELDS])>) -> Vec<(u32, u32, [u16; FIELDS])> {
    // In place: `later` is folded into the `kept` entry before it.
    sorted.dedup_by(|later, kept| {
        let same = later.0 == kept.0 && later.1 == kept.1;
        if same {
            for (total, more) in kept.2.iter_mut().zip(later.2) {
                *total = total.saturating_add(more);
            }
        }
        same
    });
    sorted
}

/// The dictionary in sorted order, and provisional id → sorted id.
fn sorted_terms(term_ids: HashMap<String, u32>) -> (Vec<Box<str>>, Vec<u32>) {
    let mut entries: Vec<(String, u32)> = term_ids.into_iter().collect();
    entries.sort_unstable();
    let mut remap = vec![0u32; entries.len()];
    let mut terms = Vec::with_capacity(entries.len());
    for (sorted, (term, provisional)) in entries.into_iter().enumerate() {
        remap[provisional as usize] = sorted as u32;
        terms.push(term.into_boxed_str());
    }
    (terms, remap)
}

/// Groups sorted terms by singular form: the group of each term, and the
/// group id of each form. Ids follow dictionary order, so are deterministic.
fn singular_groups(terms: &[Box<str>]) -> (Vec<u32>, HashMap<Box<str>, u32>) {
    let mut groups: HashMap<Box<str>, u32> = HashMap::new();
    let term_group = terms
        .iter()
        .map(|term| {
            let next = groups.len() as u32;
            *groups
                .entry(singular(term).into_boxed_str())
                .or_insert(next)
        })
        .collect();
    (term_group, groups)
}

/// Mean token count of each field over all tools (at least 1).
fn average_lengths(lengths: &[[u32; FIELDS]]) -> [f32; FIELDS] {
    let mut total = [0f64; FIELDS];
    for doc in lengths {
        for (sum, length) in total.iter_mut().zip(doc) {
            *sum += f64::from(*length);
        }
    }
    let n = lengths.len().max(1) as f64;
    total.map(|t| ((t / n) as f32).max(1.0))
}

/// A word group's BM25F pseudo-frequency in one field of a tool: weighted
/// and normalised by the field's length. Repeats count only in the
/// description; elsewhere they are structure, not emphasis.
fn field_weight(field: usize, frequency: u16, length: u32, average: f32) -> f32 {
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
    fn index_is_shareable() {
        fn assert_send_sync<T: Send + Sync>() {}
        assert_send_sync::<SearchIndex>();
    }
}
