//! The index: a catalog's tools laid out once, for every query to read.
//!
//! What depends on the tools alone, not on the query, is computed when the
//! catalog is built, so that a query reads numbers and never tool text: the
//! sorted token dictionary (`dictionary`), tokens grouped by singular
//! form, each group's posting list with its field-weighted,
//! length-normalised (BM25F) frequency per tool, and each route's resource
//! segments. This module holds that data; how it is laid out, from scratch
//! or from the index before, is `layout`; the effects of the commonest
//! words are `common`; how a query reads it is `query`.

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

use super::dictionary::Dictionary;
use super::effects::KeywordEffect;

/// One posting: a tool containing a word group, with the group's BM25F
/// pseudo-frequency there (field-weighted, length-normalised).
/// Eight bytes, so a long posting list stays dense in cache.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct Posting {
    /// The tool, and in the top bit ([`RESOURCE_BIT`]) whether the group
    /// names one of its resource segments (route coverage, `scratch`).
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn index_is_shareable() {
        fn assert_send_sync<T: Send + Sync>() {}
        assert_send_sync::<SearchIndex>();
    }
}
