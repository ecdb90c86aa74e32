//! The index's dictionary: every token the catalog's tools hold, sorted,
//! grouped by singular form, with how many tools hold each.
//!
//! Queries need it sorted (a prefix is a contiguous range) and grouped (a
//! keyword matches its singular form's group). An edit rarely adds or
//! removes a word, so a laid-out dictionary is shared by the indexes that
//! follow it until one does; then it is merged again from the one before
//! (surviving terms keep their singular forms; only new ones are folded),
//! with exactly the terms, order and group ids a fresh build would give.

use std::collections::HashMap;
use std::ops::Range;
use std::sync::Arc;

use super::words::singular;

/// Sorted distinct tokens and their groups. Group ids follow the order of
/// each group's first term, so the same terms always give the same ids.
#[derive(Debug, Default)]
pub(super) struct Dictionary {
    /// Distinct tokens, sorted.
    pub(super) terms: Vec<Arc<str>>,
    /// The group (singular form) of each token.
    pub(super) term_group: Vec<u32>,
    /// Group id of each singular form.
    pub(super) groups: HashMap<Arc<str>, u32>,
    /// The singular form of each group.
    pub(super) forms: Vec<Arc<str>>,
}

impl Dictionary {
    /// The dictionary of `terms` (sorted, distinct); `form(i)` gives the
    /// singular form of term `i` when it is known already.
    pub(super) fn from_sorted(
        terms: Vec<Arc<str>>,
        form: impl Fn(usize) -> Option<Arc<str>>,
    ) -> Dictionary {
        let mut groups: HashMap<Arc<str>, u32> = HashMap::with_capacity(terms.len());
        let mut forms: Vec<Arc<str>> = Vec::new();
        let term_group = terms
            .iter()
            .enumerate()
            .map(|(i, term)| {
                let form = form(i).unwrap_or_else(|| Arc::from(singular(term)));
                let next = forms.len() as u32;
                *groups.entry(form.clone()).or_insert_with(|| {
                    forms.push(form);
                    next
                })
            })
            .collect();
        Dictionary {
            terms,
            term_group,
            groups,
            forms,
        }
    }

    /// The id of `term`, when the dictionary holds it.
    pub(super) fn find(&self, term: &str) -> Option<u32> {
        self.terms
            .binary_search_by(|t| (**t).cmp(term))
            .ok()
            .map(|i| i as u32)
    }

    /// The group of a singular form.
    pub(super) fn group(&self, form: &str) -> Option<u32> {
        self.groups.get(form).copied()
    }

    /// Number of groups.
    pub(super) fn group_count(&self) -> usize {
        self.forms.len()
    }

    /// Tokens starting with `word`: contiguous in the sorted dictionary.
    pub(super) fn prefix_range(&self, word: &str) -> Range<usize> {
        let start = self.terms.partition_point(|t| &**t < word);
        let len = self.terms[start..].partition_point(|t| t.starts_with(word));
        start..start + len
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dictionary(words: &[&str]) -> Dictionary {
        Dictionary::from_sorted(words.iter().map(|w| Arc::from(*w)).collect(), |_| None)
    }

    #[test]
    fn groups_follow_the_first_term_of_each_form() {
        let d = dictionary(&["order", "orders", "pet", "policies", "policy"]);
        assert_eq!(d.term_group, [0, 0, 1, 2, 2]);
        assert_eq!(d.group("policy"), Some(2));
        assert_eq!(d.group_count(), 3);
        assert_eq!(&*d.forms[2], "policy");
    }

    #[test]
    fn finds_terms_and_prefixes() {
        let d = dictionary(&["order", "orderbook", "orders", "pet"]);
        assert_eq!(d.find("orders"), Some(2));
        assert_eq!(d.find("ord"), None);
        assert_eq!(d.prefix_range("order"), 0..3);
        assert_eq!(d.prefix_range("q"), 4..4);
    }
}
