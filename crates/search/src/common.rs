//! The effects of a catalog's commonest words, computed when its index is
//! built (by running each word as a query and keeping what it settled), so
//! the words agents type most cost one vectorised pass from the first
//! query on.

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::Arc;

use super::analysis::API_MARK;
use super::effects::{KeywordEffect, KeywordEffects};
use super::index::SearchIndex;
use super::words::is_stopword;

/// How many of a catalog's commonest words get their effect computed with
/// the index: 6 bytes per tool each, so about 9 MB for Microsoft Graph
/// (11k tools), a few percent of what its gateway holds, for a few
/// milliseconds of build time.
pub(super) const COMMON_WORDS: usize = 128;

/// Effects collected while the index computes its common words.
#[derive(Default)]
struct Collected(RefCell<HashMap<String, Arc<KeywordEffect>>>);

impl KeywordEffects for Collected {
    fn get(&self, _word: &str) -> Option<Arc<KeywordEffect>> {
        None
    }

    fn insert(&self, word: &str, effect: Arc<KeywordEffect>) {
        self.0.borrow_mut().insert(word.to_string(), effect);
    }
}

impl SearchIndex {
    /// Computes the effects of the commonest words, when not yet done (an
    /// updated index leaves them to its owner, off the reload's path).
    pub fn prepare_common(&self) {
        self.common.get_or_init(|| self.common_effects());
    }

    /// The effects of the [`COMMON_WORDS`] words of the dictionary whose
    /// own group reaches the most tools, each as a keyword of its own,
    /// where it is common enough to be settled densely: the words agents
    /// type most (`get`, `list`, `users`) then cost a vectorised pass from
    /// the first query on.
    pub(super) fn common_effects(&self) -> HashMap<Box<str>, Arc<KeywordEffect>> {
        let mut candidates: Vec<(usize, &str)> = self
            .dictionary
            .terms
            .iter()
            .zip(&self.dictionary.term_group)
            .filter(|(term, _)| term.chars().nth(1).is_some() && !is_stopword(term))
            .filter(|(term, _)| !term.starts_with(API_MARK))
            .map(|(term, &group)| (self.group_postings(group).len(), &**term))
            .collect();
        candidates.sort_unstable_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(b.1)));
        let collected = Collected::default();
        for &(_, word) in candidates.iter().take(COMMON_WORDS) {
            self.top_keywords_with(&[word.to_string()], 1, |_| true, Some(&collected));
        }
        collected
            .0
            .into_inner()
            .into_iter()
            .map(|(word, effect)| (word.into_boxed_str(), effect))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::{common_word_tools, index};
    use crate::words::query_keywords;

    /// Keyword effects kept in a map, for tests.
    #[derive(Default)]
    struct KeptEffects(std::sync::Mutex<HashMap<String, Arc<KeywordEffect>>>);

    impl KeywordEffects for KeptEffects {
        fn get(&self, word: &str) -> Option<Arc<KeywordEffect>> {
            self.0.lock().unwrap().get(word).cloned()
        }

        fn insert(&self, word: &str, effect: Arc<KeywordEffect>) {
            self.0.lock().unwrap().insert(word.to_string(), effect);
        }
    }

    #[test]
    fn common_word_effects_rank_exactly_as_scoring_anew() {
        let tools = common_word_tools(90);
        let with_common = index(&tools);
        assert!(
            with_common.common.get().unwrap().contains_key("user"),
            "{:?}",
            with_common.common.get().unwrap().keys()
        );
        let mut plain = index(&tools);
        plain.common = std::sync::OnceLock::new();
        for query in [
            "list users",
            "get group member",
            "user",
            "return the items of the group",
            "the",
            "mail",
        ] {
            for limit in [1, 10, 90] {
                assert_eq!(
                    with_common.top(query, limit, |i| i % 4 != 2),
                    plain.top(query, limit, |i| i % 4 != 2),
                    "{query:?}, limit {limit}"
                );
            }
        }
    }

    #[test]
    fn kept_keyword_effects_rank_exactly_as_scoring_anew() {
        let tools = common_word_tools(120);
        // Without the index's own common words, so that the store is used.
        let mut idx = index(&tools);
        idx.common = std::sync::OnceLock::new();
        let kept = KeptEffects::default();
        let queries = [
            "list users",
            "get group member",
            "users the",
            "the",
            "mail event list",
        ];
        for pass in 0..2 {
            for query in queries {
                let words = query_keywords(query);
                for limit in [1, 7, 50] {
                    assert_eq!(
                        idx.top_keywords_with(&words, limit, |i| i % 5 != 1, Some(&kept)),
                        idx.top_keywords(&words, limit, |i| i % 5 != 1),
                        "{query:?}, limit {limit}, pass {pass}"
                    );
                }
            }
        }
        let kept = kept.0.lock().unwrap();
        // "the" is kept from the query of nothing else; beside "users" it
        // was not scored at all.
        for word in ["list", "users", "the"] {
            assert!(kept.contains_key(word), "{word}: {:?}", kept.keys());
        }
    }
}
