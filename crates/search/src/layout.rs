//! Laying out an index: from scratch, or from the index of the catalog
//! before.
//!
//! A reload usually changes one document of thousands, and laying out every
//! tool's postings again was most of a directory-scale reload (0.7 s of
//! 1.5 s for 125k tools). A tool's postings depend on its name, its words
//! and its document's other tools (field lengths are normalised by the
//! averages of its document), on nothing else; only the dictionary (which
//! words exist, so their ids) and the tool ids (positions in name order)
//! depend on the whole catalog. So a layout from the index before keeps
//! the postings of every document whose tools are the same (same names,
//! same analysed words), drops those of the others, lays out only the
//! changed documents' tools, and merges them into the kept posting lists in
//! one sequential pass. The dictionary is shared while no word comes or
//! goes. The result is, field by field, the index a fresh layout gives
//! (`tests::updates_equal_fresh_layouts`).

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, OnceLock};

use super::analysis::{SearchFields, ToolWords, analyse_document, name_tokens};
use super::dictionary::Dictionary;
use super::field::{FIELDS, NAME, field_weight};
use super::index::{Posting, SearchIndex};

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

/// The index before, with the tools it was laid out for (in its order).
pub(super) struct Before<'p, 'a> {
    pub(super) index: &'p SearchIndex,
    pub(super) tools: &'p [SearchFields<'a>],
}

/// In [`Plan::kept`]: the tool's postings are not kept.
const DROPPED: u32 = u32::MAX;

/// Which postings of the index before are kept, and under which ids.
struct Plan {
    /// The new id of each tool before, or [`DROPPED`].
    kept: Vec<u32>,
    /// Whether each new tool's postings are kept from before.
    reused: Vec<bool>,
}

/// Lays out the index of `tools` (whose words are `words`, one each), from
/// `before` when it can: both in strictly ascending name order, and every
/// tool before with its words.
pub(super) fn lay_out(
    tools: &[SearchFields<'_>],
    words: &[&ToolWords],
    before: Option<Before<'_, '_>>,
) -> SearchIndex {
    // Keeping pays while most of the index before is kept: dropping a
    // tool costs a dictionary search per word, more than laying one out.
    let before = before
        .and_then(|before| Some((plan(before.tools, tools)?, before)))
        .filter(|(plan, _)| plan.kept_count() * 2 >= plan.kept.len());
    let reused = before.as_ref().map(|(plan, _)| plan.reused.as_slice());
    let laid_anew =
        |id: usize| !reused.is_some_and(|reused| reused.get(id).copied().unwrap_or(false));
    let mut added = Added::default();
    // Room for the name's words too.
    let occurrences: usize = (words.iter().enumerate())
        .filter(|(id, _)| laid_anew(*id))
        .map(|(_, words)| words.term_count() + 4)
        .sum();
    added.occurrences.reserve(occurrences);
    for (id, (tool, words)) in tools.iter().zip(words).enumerate() {
        if laid_anew(id) {
            added.add(id as u32, tool, words);
        }
    }
    match before {
        Some((plan, before)) => update(tools.len(), added, &plan, &before),
        None => fresh(tools.len(), added),
    }
}

/// Which tools keep their postings: those of documents none of whose tools
/// changed (a tool is the same when its name, document and analysed words
/// are). `None` when the tools are not in strictly ascending name order.
fn plan(before: &[SearchFields<'_>], tools: &[SearchFields<'_>]) -> Option<Plan> {
    if before.iter().any(|t| t.words.is_none()) {
        return None;
    }
    let mut pairs: Vec<(usize, usize)> = Vec::with_capacity(tools.len());
    let mut dirty = Dirty::default();
    let (mut i, mut j) = (0, 0);
    loop {
        match (before.get(i), tools.get(j)) {
            (Some(old), Some(new)) if old.name == new.name => {
                if old.document == new.document && same_words(old, new) {
                    pairs.push((i, j));
                } else {
                    dirty.insert(old.document);
                    dirty.insert(new.document);
                }
                i += 1;
                j += 1;
            }
            (Some(old), Some(new)) if old.name < new.name => {
                dirty.insert(old.document);
                i += 1;
            }
            (Some(old), None) => {
                dirty.insert(old.document);
                i += 1;
            }
            (_, Some(new)) => {
                dirty.insert(new.document);
                j += 1;
            }
            (None, None) => break,
        }
    }
    // The walk above pairs names only in ascending lists.
    let ascending = |list: &[SearchFields<'_>]| list.windows(2).all(|w| w[0].name < w[1].name);
    if !ascending(before) || !ascending(tools) {
        return None;
    }
    let mut kept = vec![DROPPED; before.len()];
    let mut reused = vec![false; tools.len()];
    for (i, j) in pairs {
        let document = before.get(i).map_or("", |tool| tool.document);
        if !dirty.contains(document) {
            kept[i] = j as u32;
            reused[j] = true;
        }
    }
    Some(Plan { kept, reused })
}

/// The documents whose tools changed: usually one or two, so a short list
/// is searched before any hashing; a set past [`Dirty::LIST`].
#[derive(Default)]
struct Dirty<'a> {
    list: Vec<&'a str>,
    set: HashSet<&'a str>,
}

impl<'a> Dirty<'a> {
    const LIST: usize = 8;

    fn insert(&mut self, document: &'a str) {
        if self.list.len() < Dirty::LIST {
            if !self.list.contains(&document) {
                self.list.push(document);
            }
        } else if !self.list.contains(&document) {
            self.set.insert(document);
        }
    }

    fn contains(&self, document: &str) -> bool {
        self.list.contains(&document) || (!self.set.is_empty() && self.set.contains(document))
    }
}

impl Plan {
    fn kept_count(&self) -> usize {
        self.kept.iter().filter(|&&id| id != DROPPED).count()
    }
}

fn same_words(a: &SearchFields<'_>, b: &SearchFields<'_>) -> bool {
    match (a.words, b.words) {
        (Some(a), Some(b)) => std::ptr::eq(a, b),
        _ => false,
    }
}

/// The tools laid out anew: their terms under provisional ids (in order of
/// first sight), and per tool its id, document, field lengths and route
/// resource terms.
#[derive(Default)]
struct Added<'a> {
    ids: Vec<u32>,
    document: Vec<u32>,
    documents: HashMap<&'a str, u32>,
    lengths: Vec<[u32; FIELDS]>,
    resources: Vec<Vec<u32>>,
    /// (provisional term, added tool, count per field), by tool.
    occurrences: Vec<(u32, u32, [u16; FIELDS])>,
    term_ids: HashMap<Arc<str>, u32>,
    texts: Vec<Arc<str>>,
    /// Added tools holding each provisional term.
    holders: Vec<u32>,
    /// Provisional ids of each vocabulary met, by its address.
    vocabularies: HashMap<usize, Vec<u32>>,
}

impl<'a> Added<'a> {
    fn add(&mut self, id: u32, tool: &SearchFields<'a>, words: &ToolWords) {
        let added = self.ids.len() as u32;
        let vocabulary = words.vocabulary();
        let key = Arc::as_ptr(vocabulary) as *const u8 as usize;
        if !self.vocabularies.contains_key(&key) {
            let ids = vocabulary.iter().map(|term| self.term_id(term)).collect();
            self.vocabularies.insert(key, ids);
        }
        let ids = self.vocabularies.get(&key).map_or(&[][..], Vec::as_slice);
        let provisional = |term: u32| ids.get(term as usize).copied().unwrap_or(0);
        let mut counts: Vec<(u32, [u16; FIELDS])> = words
            .terms()
            .map(|term| (provisional(term.term), term.counts))
            .collect();
        let resources: Vec<u32> = words
            .resource_terms()
            .iter()
            .map(|&t| provisional(t))
            .collect();
        let names = name_tokens(tool.name);
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
        for (term, _) in &counts {
            if let Some(holders) = self.holders.get_mut(*term as usize) {
                *holders += 1;
            }
        }
        let next = self.documents.len() as u32;
        let document = *self.documents.entry(tool.document).or_insert(next);
        self.occurrences
            .extend(counts.into_iter().map(|(term, f)| (term, added, f)));
        self.ids.push(id);
        self.document.push(document);
        self.lengths.push(lengths);
        self.resources.push(resources);
    }

    fn term_id(&mut self, word: &str) -> u32 {
        if let Some(&id) = self.term_ids.get(word) {
            return id;
        }
        let id = self.texts.len() as u32;
        let text: Arc<str> = Arc::from(word);
        self.term_ids.insert(text.clone(), id);
        self.texts.push(text);
        self.holders.push(0);
        id
    }

    /// Mean token count of each field over each document's added tools
    /// (all its tools: a document is laid out whole or not at all).
    fn document_averages(&self) -> Vec<[f32; FIELDS]> {
        let mut totals = vec![([0f64; FIELDS], 0usize); self.documents.len()];
        for (lengths, &document) in self.lengths.iter().zip(&self.document) {
            if let Some((sums, count)) = totals.get_mut(document as usize) {
                for (sum, length) in sums.iter_mut().zip(lengths) {
                    *sum += f64::from(*length);
                }
                *count += 1;
            }
        }
        totals
            .into_iter()
            .map(|(sums, count)| sums.map(|t| ((t / count.max(1) as f64) as f32).max(1.0)))
            .collect()
    }

    /// The postings of the added tools, by group then tool, under their new
    /// ids; and each added tool's count of resource groups.
    fn postings(&self, dictionary: &Dictionary, term_of: &[u32]) -> (Vec<(u32, Posting)>, Vec<u8>) {
        let group_of = |provisional: u32| {
            term_of
                .get(provisional as usize)
                .and_then(|&term| dictionary.term_group.get(term as usize))
                .copied()
                .unwrap_or(0)
        };
        let occurrences: Vec<(u32, u32, [u16; FIELDS])> = self
            .occurrences
            .iter()
            .map(|&(term, tool, counts)| (group_of(term), tool, counts))
            .collect();
        let merged = merge_occurrences(by_group(occurrences, dictionary.group_count()));
        let resource_groups: Vec<Vec<u32>> = self
            .resources
            .iter()
            .map(|terms| {
                let mut groups: Vec<u32> = terms.iter().map(|&term| group_of(term)).collect();
                groups.sort_unstable();
                groups.dedup();
                groups
            })
            .collect();
        let averages = self.document_averages();
        let postings = merged
            .into_iter()
            .map(|(group, tool, frequency)| {
                let tool = tool as usize;
                let lengths = self.lengths.get(tool).copied().unwrap_or_default();
                let average = self
                    .document
                    .get(tool)
                    .and_then(|&d| averages.get(d as usize))
                    .copied()
                    .unwrap_or([1.0; FIELDS]);
                let weight = (0..FIELDS)
                    .map(|f| field_weight(f, frequency[f], lengths[f], average[f]))
                    .sum();
                let resource = resource_groups
                    .get(tool)
                    .is_some_and(|groups| groups.binary_search(&group).is_ok());
                let id = self.ids.get(tool).copied().unwrap_or(0);
                (group, Posting::new(id, resource, weight))
            })
            .collect();
        let resources = resource_groups
            .iter()
            .map(|groups| groups.len().min(usize::from(u8::MAX)) as u8)
            .collect();
        (postings, resources)
    }
}

/// The index of tools all laid out anew.
fn fresh(tool_count: usize, added: Added<'_>) -> SearchIndex {
    let mut order: Vec<u32> = (0..added.texts.len() as u32).collect();
    order.sort_unstable_by(|&a, &b| added.texts[a as usize].cmp(&added.texts[b as usize]));
    let mut term_of = vec![0u32; order.len()];
    let mut terms = Vec::with_capacity(order.len());
    let mut term_tools = Vec::with_capacity(order.len());
    for (sorted, &provisional) in order.iter().enumerate() {
        term_of[provisional as usize] = sorted as u32;
        terms.push(added.texts[provisional as usize].clone());
        term_tools.push(added.holders[provisional as usize]);
    }
    let dictionary = Dictionary::from_sorted(terms, |_| None);
    let (postings, resources) = added.postings(&dictionary, &term_of);
    let mut laid = Merged::with_capacity(dictionary.group_count(), postings.len());
    let mut postings = postings.into_iter().peekable();
    for group in 0..dictionary.group_count() as u32 {
        laid.start_group();
        while let Some((_, posting)) = postings.next_if(|(g, _)| *g == group) {
            laid.postings.push(posting);
        }
    }
    let mut tool_resources = vec![0u8; tool_count];
    for (&id, count) in added.ids.iter().zip(resources) {
        if let Some(slot) = tool_resources.get_mut(id as usize) {
            *slot = count;
        }
    }
    laid.finish(tool_count, Arc::new(dictionary), term_tools, tool_resources)
}

/// The index of `tool_count` tools from `before`: its kept postings (under
/// their new ids) merged with the added tools' postings.
fn update(
    tool_count: usize,
    added: Added<'_>,
    plan: &Plan,
    before: &Before<'_, '_>,
) -> SearchIndex {
    let old = before.index;
    let mut term_tools = old.term_tools.clone();
    for (i, tool) in before.tools.iter().enumerate() {
        if plan.kept.get(i) == Some(&DROPPED)
            && let Some(words) = tool.words
        {
            for term in old_terms(&old.dictionary, tool.name, words) {
                if let Some(count) = term_tools.get_mut(term as usize) {
                    *count = count.saturating_sub(1);
                }
            }
        }
    }
    // Added terms already known, and new ones.
    let mut term_of: Vec<u32> = Vec::with_capacity(added.texts.len());
    let mut new_terms: Vec<u32> = Vec::new();
    for (provisional, text) in added.texts.iter().enumerate() {
        let holders = added.holders.get(provisional).copied().unwrap_or(0);
        match old.dictionary.find(text) {
            Some(term) => {
                if let Some(count) = term_tools.get_mut(term as usize) {
                    *count += holders;
                }
                term_of.push(term);
            }
            None => {
                new_terms.push(provisional as u32);
                term_of.push(DROPPED);
            }
        }
    }
    let unchanged = new_terms.is_empty() && term_tools.iter().all(|&count| count > 0);
    let (dictionary, term_tools, group_before) = if unchanged {
        let identity: Vec<u32> = (0..old.dictionary.group_count() as u32).collect();
        (Arc::clone(&old.dictionary), term_tools, identity)
    } else {
        merge_dictionary(
            &old.dictionary,
            &term_tools,
            &added,
            new_terms,
            &mut term_of,
        )
    };
    let (added_postings, added_resources) = added.postings(&dictionary, &term_of);

    let kept_postings = old.postings_len();
    let mut laid = Merged::with_capacity(
        dictionary.group_count(),
        kept_postings + added_postings.len(),
    );
    let mut added_postings = added_postings.into_iter().peekable();
    for (group, &old_group) in group_before.iter().enumerate() {
        laid.start_group();
        let kept = old.group_postings(old_group).iter().filter_map(|posting| {
            let id = plan.kept.get(posting.doc()).copied().unwrap_or(DROPPED);
            (id != DROPPED).then(|| posting.with_doc(id))
        });
        let mut kept = kept.peekable();
        let group = group as u32;
        loop {
            let next_added = added_postings.peek().filter(|(g, _)| *g == group);
            match (kept.peek(), next_added) {
                (Some(k), Some((_, a))) if k.doc() < a.doc() => {
                    laid.postings.push(*k);
                    kept.next();
                }
                (_, Some(_)) => {
                    if let Some((_, a)) = added_postings.next() {
                        laid.postings.push(a);
                    }
                }
                (Some(k), None) => {
                    laid.postings.push(*k);
                    kept.next();
                }
                (None, None) => break,
            }
        }
    }
    let mut resources = vec![0u8; tool_count];
    for (i, &id) in plan.kept.iter().enumerate() {
        if let (Some(slot), Some(&count)) = (resources.get_mut(id as usize), old.resources.get(i)) {
            *slot = count;
        }
    }
    for (&id, count) in added.ids.iter().zip(added_resources) {
        if let Some(slot) = resources.get_mut(id as usize) {
            *slot = count;
        }
    }
    laid.finish(tool_count, dictionary, term_tools, resources)
}

/// The distinct terms of a tool before, as ids of the dictionary before.
fn old_terms(dictionary: &Dictionary, name: &str, words: &ToolWords) -> Vec<u32> {
    let vocabulary = words.vocabulary();
    let mut terms: Vec<u32> = words
        .terms()
        .filter_map(|term| dictionary.find(vocabulary.get(term.term as usize)?))
        .chain(
            name_tokens(name)
                .iter()
                .filter_map(|token| dictionary.find(token)),
        )
        .collect();
    terms.sort_unstable();
    terms.dedup();
    terms
}

/// The dictionary of the terms still held and the new ones, in order; sets
/// `term_of` for the new terms, and gives the tools holding each term and
/// the group before of each group (or [`DROPPED`] when it is new).
fn merge_dictionary(
    old: &Dictionary,
    old_counts: &[u32],
    added: &Added<'_>,
    mut new_terms: Vec<u32>,
    term_of: &mut [u32],
) -> (Arc<Dictionary>, Vec<u32>, Vec<u32>) {
    let text = |provisional: u32| &added.texts[provisional as usize];
    new_terms.sort_unstable_by(|&a, &b| text(a).cmp(text(b)));
    let mut terms: Vec<Arc<str>> = Vec::with_capacity(old.terms.len() + new_terms.len());
    let mut counts: Vec<u32> = Vec::with_capacity(terms.capacity());
    // The term before of each term, when it was there.
    let mut origin: Vec<u32> = Vec::with_capacity(terms.capacity());
    let mut old_new_id = vec![DROPPED; old.terms.len()];
    let mut fresh = new_terms.into_iter().peekable();
    let mut fresh_ids: Vec<(u32, u32)> = Vec::new();
    let mut survivors = old
        .terms
        .iter()
        .enumerate()
        .filter(|(i, _)| old_counts.get(*i).is_some_and(|&c| c > 0))
        .peekable();
    loop {
        let take_old = match (survivors.peek(), fresh.peek()) {
            (Some((_, term)), Some(&p)) => term.as_ref() < text(p).as_ref(),
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (None, None) => break,
        };
        let id = terms.len() as u32;
        if take_old {
            if let Some((i, term)) = survivors.next() {
                old_new_id[i] = id;
                terms.push(term.clone());
                counts.push(old_counts.get(i).copied().unwrap_or(0));
                origin.push(i as u32);
            }
        } else if let Some(p) = fresh.next() {
            fresh_ids.push((p, id));
            terms.push(text(p).clone());
            counts.push(added.holders.get(p as usize).copied().unwrap_or(0));
            origin.push(DROPPED);
        }
    }
    // Known terms still hold their ids before; new ones are DROPPED.
    for term in term_of.iter_mut().filter(|t| **t != DROPPED) {
        *term = old_new_id.get(*term as usize).copied().unwrap_or(DROPPED);
    }
    for (provisional, id) in fresh_ids {
        if let Some(slot) = term_of.get_mut(provisional as usize) {
            *slot = id;
        }
    }
    let form_before = |i: usize| {
        let before = *origin.get(i)?;
        let group = *old.term_group.get(before as usize)?;
        old.forms.get(group as usize).cloned()
    };
    let dictionary = Dictionary::from_sorted(terms, form_before);
    let mut group_before = vec![DROPPED; dictionary.group_count()];
    for (i, &before) in origin.iter().enumerate() {
        if before != DROPPED
            && let (Some(&group), Some(&old_group)) = (
                dictionary.term_group.get(i),
                old.term_group.get(before as usize),
            )
        {
            group_before[group as usize] = old_group;
        }
    }
    (Arc::new(dictionary), counts, group_before)
}

/// Posting lists being laid out, group after group.
struct Merged {
    posting_start: Vec<u32>,
    postings: Vec<Posting>,
}

impl Merged {
    fn with_capacity(groups: usize, postings: usize) -> Merged {
        Merged {
            posting_start: Vec::with_capacity(groups + 1),
            postings: Vec::with_capacity(postings),
        }
    }

    fn start_group(&mut self) {
        self.posting_start.push(self.postings.len() as u32);
    }

    fn finish(
        mut self,
        tool_count: usize,
        dictionary: Arc<Dictionary>,
        term_tools: Vec<u32>,
        resources: Vec<u8>,
    ) -> SearchIndex {
        self.posting_start.push(self.postings.len() as u32);
        SearchIndex {
            doc_count: tool_count,
            dictionary,
            term_tools,
            posting_start: self.posting_start,
            postings: self.postings,
            resources,
            common: OnceLock::new(),
        }
    }
}

/// Occurrences ordered by group, each group's in the order given (tool
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

/// Sums the frequencies of entries with the same (group, tool); `sorted`
/// is ordered by (group, tool).
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::analyse_document;
    use crate::words::query_keywords;

    /// A document of the test: its file, tools (name, description, route)
    /// and their analysed words, boxed so that an unchanged document keeps
    /// its words' addresses.
    struct Document {
        file: String,
        tools: Vec<(String, String, String)>,
        words: Vec<ToolWords>,
    }

    const VERBS: [&str; 6] = ["list", "get", "create", "delete", "update", "refund"];
    const NOUNS: [&str; 8] = [
        "user", "users", "order", "orders", "policy", "policies", "webhook", "invoice",
    ];

    fn next(seed: &mut u64) -> usize {
        *seed ^= *seed << 13;
        *seed ^= *seed >> 7;
        *seed ^= *seed << 17;
        (*seed >> 16) as usize
    }

    fn document(file: &str, seed: &mut u64, step: usize) -> Arc<Document> {
        let count = 1 + next(seed) % 6;
        let tools: Vec<(String, String, String)> = (0..count)
            .map(|k| {
                let verb = VERBS[next(seed) % VERBS.len()];
                let noun = NOUNS[next(seed) % NOUNS.len()];
                let other = NOUNS[next(seed) % NOUNS.len()];
                // Sometimes a word nobody else has, so the dictionary moves.
                let rare = if next(seed).is_multiple_of(3) {
                    format!(" zq{step}x{k}")
                } else {
                    String::new()
                };
                let name = format!("{verb}_{noun}_{file}_{k}");
                let description = format!("{verb} the {noun} of an {other}{rare}.");
                let route = format!("GET /{noun}/{{id}}/{other}");
                (name, description, route)
            })
            .collect();
        let fields: Vec<SearchFields<'_>> = tools
            .iter()
            .map(|(name, description, route)| fields(name, description, route, file, None))
            .collect();
        let words = analyse_document(&fields);
        Arc::new(Document {
            file: file.to_string(),
            tools,
            words,
        })
    }

    fn fields<'a>(
        name: &'a str,
        description: &'a str,
        route: &'a str,
        document: &'a str,
        words: Option<&'a ToolWords>,
    ) -> SearchFields<'a> {
        SearchFields {
            name,
            description,
            search_terms: &[],
            route,
            api: "",
            argument_names: Vec::new(),
            tags: &[],
            document,
            words,
        }
    }

    /// Every tool of the documents, in name order, with its words.
    fn catalog(documents: &[Option<Arc<Document>>]) -> Vec<SearchFields<'_>> {
        let mut all: Vec<SearchFields<'_>> = documents
            .iter()
            .flatten()
            .flat_map(|d| {
                d.tools
                    .iter()
                    .zip(&d.words)
                    .map(|((n, desc, r), w)| fields(n, desc, r, &d.file, Some(w)))
            })
            .collect();
        all.sort_by(|a, b| a.name.cmp(b.name));
        all
    }

    #[test]
    fn updates_equal_fresh_layouts() {
        for start in [0x9e37_79b9_u64, 0x1234_5678, 0xdead_beef] {
            let mut seed = start;
            let mut documents: Vec<Option<Arc<Document>>> = (0..6)
                .map(|d| Some(document(&format!("d{d}"), &mut seed, 0)))
                .collect();
            let mut index = SearchIndex::index_tools(catalog(&documents));
            for step in 1..60 {
                let kept = documents.clone();
                let before_fields = catalog(&kept);
                let changed = next(&mut seed) % documents.len();
                match next(&mut seed) % 5 {
                    // Removed, and later maybe back.
                    0 => documents[changed] = None,
                    // Nothing changed.
                    1 => {}
                    _ => {
                        documents[changed] =
                            Some(document(&format!("d{changed}"), &mut seed, step));
                    }
                }
                let updated = SearchIndex::update(&index, &before_fields, catalog(&documents));
                let fresh = SearchIndex::index_tools(catalog(&documents));
                assert!(
                    updated.same_layout(&fresh),
                    "seed {start:#x}, step {step}: the update differs from a fresh layout"
                );
                for query in [
                    "list users",
                    "refund the order",
                    "polic",
                    "zq3x0 webhook",
                    "get",
                ] {
                    let words = query_keywords(query);
                    assert_eq!(
                        updated.top_keywords(&words, 10, |_| true),
                        fresh.top_keywords(&words, 10, |_| true),
                        "seed {start:#x}, step {step}, {query:?}"
                    );
                }
                index = updated;
            }
        }
    }

    #[test]
    fn unchanged_documents_keep_their_postings_and_the_dictionary() {
        let mut seed = 7;
        let mut documents: Vec<Option<Arc<Document>>> = (0..4)
            .map(|d| Some(document(&format!("d{d}"), &mut seed, 0)))
            .collect();
        let index = SearchIndex::index_tools(catalog(&documents));
        let kept = documents.clone();
        let before = catalog(&kept);
        // The same tools, analysed again: same words, other addresses, so
        // laid out anew, yet equal; no word came or went, so the
        // dictionary is shared.
        let file = documents[1]
            .as_ref()
            .map(|d| d.file.clone())
            .unwrap_or_default();
        let again = documents[1].as_ref().map(|d| {
            let fields: Vec<SearchFields<'_>> = d
                .tools
                .iter()
                .map(|(n, desc, r)| fields(n, desc, r, &d.file, None))
                .collect();
            analyse_document(&fields)
        });
        if let (Some(doc), Some(words)) = (documents[1].as_ref(), again) {
            let tools = doc.tools.clone();
            documents[1] = Some(Arc::new(Document { file, tools, words }));
        }
        let updated = SearchIndex::update(&index, &before, catalog(&documents));
        assert!(updated.same_layout(&SearchIndex::index_tools(catalog(&documents))));
        assert!(Arc::ptr_eq(&updated.dictionary, &index.dictionary));
        let plan = plan(&before, &catalog(&documents)).map(|p| p.reused);
        let reused = plan.map_or(0, |r| r.iter().filter(|&&r| r).count());
        let moved = documents[1].as_ref().map_or(0, |d| d.tools.len());
        assert_eq!(reused, before.len() - moved);
    }

    #[test]
    fn tools_out_of_name_order_are_laid_out_afresh() {
        let mut seed = 11;
        let documents: Vec<Option<Arc<Document>>> = vec![
            Some(document("d0", &mut seed, 0)),
            Some(document("d1", &mut seed, 0)),
        ];
        let index = SearchIndex::index_tools(catalog(&documents));
        let before = catalog(&documents);
        let mut shuffled = catalog(&documents);
        shuffled.reverse();
        assert!(plan(&before, &shuffled).is_none());
        let updated = SearchIndex::update(&index, &before, catalog(&documents).into_iter().rev());
        let fresh = SearchIndex::index_tools(catalog(&documents).into_iter().rev());
        assert!(updated.same_layout(&fresh));
    }
}
