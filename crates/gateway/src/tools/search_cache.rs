//! Recent search_tools answers of one catalog snapshot, and the effects of
//! the common keywords they used.
//!
//! Agents repeat searches: many agents run the same tasks, a client retries,
//! an agent asks for the same page again. Ranking a large catalog costs tens
//! of microseconds per query (Microsoft Graph: 11k tools) while sending a
//! ready answer costs almost nothing, so a repeated search is answered from
//! here. A new query is mostly made of words asked before (`list`, `get`,
//! `users`), and a common word is the expensive part of ranking (with its
//! synonyms it reaches thousands of tools), so what each common keyword
//! does to the scores ([`KeywordEffect`], a score and two bytes per tool)
//! is kept too, for the words beyond the commonest ones the index computed
//! itself: the next query using it adds it in one pass, with the same
//! result.
//!
//! Safety of reuse rests on two rules:
//! - the cache belongs to one [`super::snapshot::Snapshot`] snapshot, so a reload
//!   starts with an empty one and no answer outlives the catalog it was
//!   ranked on;
//! - the [`SearchKey`] holds everything the answer depends on: the
//!   keywords as ranked, `limit`, `detail`, the tag filter, the response
//!   budget, and how the caller sees each distinct visibility rule of the
//!   catalog. Two callers share an entry only when they see exactly the same
//!   tools in the same way (`authUncertain` included).
//!
//! Only successful answers are kept, and only an answer whose key was
//! ranked before lately ([`Doorkeeper`]): a query asked once is never
//! kept, so a stream of one-off queries neither evicts the answers agents
//! do repeat nor pays for holding pages nobody asks for again (on Graph
//! that keeping cost more than it saved); a repeated query is ranked twice,
//! then served from here. Keyword effects are kept on first use: new
//! queries are made of known words. Answers and keyword effects each get
//! half of the configured bytes (quick_cache, weighed by size); zero turns
//! both off.

use crate::visibility::View;
use quick_cache::Weighter;
use quick_cache::sync::Cache;
use sezzlee_json::JsonLiteral;
use sezzlee_search::{KeywordEffect, KeywordEffects};
use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hash};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// Default capacity ([`crate::settings::DEFAULT_SEARCH_CACHE_BYTES`]).
pub const DEFAULT_BYTES: usize = crate::settings::DEFAULT_SEARCH_CACHE_BYTES;

/// Assumed size of one keyword effect when sizing its table.
const TYPICAL_EFFECT_BYTES: usize = 32 * 1024;

/// Assumed size of one answer when sizing the cache's table.
const TYPICAL_ANSWER_BYTES: usize = 8 * 1024;

/// Everything a search_tools answer depends on, besides the snapshot.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct SearchKey {
    /// The query's keywords exactly as the index ranks them.
    pub keywords: Vec<String>,
    /// When meaning ranks too: the sentence the model embeds and how many
    /// tools had a vector (a page ranked before more vectors arrived is
    /// not served after).
    pub meaning: Option<(String, usize)>,
    pub limit: usize,
    pub schema_detail: bool,
    /// Folded, sorted and deduplicated (the filter is a conjunction).
    pub tags: Vec<String>,
    /// The caller's view of each distinct visibility rule, in the order of
    /// the snapshot's rules; `None` when the caller sees every tool plainly.
    pub views: Option<Vec<View>>,
    pub budget: usize,
}

impl SearchKey {
    /// Approximate heap bytes, so that long keys are paid for too.
    fn bytes(&self) -> usize {
        let words = |list: &[String]| list.iter().map(|w| w.len() + 24).sum::<usize>();
        64 + words(&self.keywords)
            + words(&self.tags)
            + self
                .meaning
                .as_ref()
                .map_or(0, |(sentence, _)| sentence.len())
            + self.views.as_ref().map_or(0, Vec::len) * 2
    }
}

/// Weighs an entry by its answer text and key.
#[derive(Clone)]
struct ByBytes;

impl Weighter<SearchKey, JsonLiteral> for ByBytes {
    fn weight(&self, key: &SearchKey, text: &JsonLiteral) -> u64 {
        (key.bytes() + text.len()) as u64
    }
}

/// Weighs a keyword effect by its size.
#[derive(Clone)]
struct EffectBytes;

impl Weighter<String, Arc<KeywordEffect>> for EffectBytes {
    fn weight(&self, word: &String, effect: &Arc<KeywordEffect>) -> u64 {
        (word.len() + 32 + effect.bytes()) as u64
    }
}

/// The keys whose answers were offered lately, by hash, in a fixed table:
/// a slot holds the last key hashed to it. Lossy both ways, harmlessly: a
/// key pushed out by another is kept one ranking later, and two keys
/// sharing a hash are taken for one (the second is kept at once).
struct Doorkeeper {
    slots: Box<[AtomicU64]>,
    hasher: RandomState,
}

impl Doorkeeper {
    fn new(slots: usize) -> Doorkeeper {
        Doorkeeper {
            slots: (0..slots.max(1)).map(|_| AtomicU64::new(0)).collect(),
            hasher: RandomState::new(),
        }
    }

    /// Notes `key`; whether it was noted before (and not pushed out since).
    fn seen_again(&self, key: &SearchKey) -> bool {
        // Never 0, the value of an empty slot.
        let hash = self.hasher.hash_one(key) | 1;
        let slot = (hash >> 1) as usize % self.slots.len();
        self.slots
            .get(slot)
            .is_some_and(|noted| noted.swap(hash, Ordering::Relaxed) == hash)
    }
}

/// Answers and keyword effects of one snapshot, bounded in bytes.
pub struct SearchCache {
    answers: Option<Cache<SearchKey, JsonLiteral, ByBytes>>,
    /// Which answers were offered once already.
    offered: Doorkeeper,
    /// Keyword effects, by keyword.
    effects: Option<Cache<String, Arc<KeywordEffect>, EffectBytes>>,
    hits: AtomicU64,
    misses: AtomicU64,
}

/// What `/status` and `/metrics` show of a cache.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CacheFigures {
    pub answers: usize,
    /// Common keywords whose effect is kept.
    pub keywords: usize,
    /// Weight held: answers with their keys, and keyword effects, in bytes.
    pub bytes: u64,
    pub capacity_bytes: u64,
    pub hits: u64,
    pub misses: u64,
}

impl SearchCache {
    /// A cache holding at most about `bytes` in all; off when 0.
    pub fn new(bytes: usize) -> SearchCache {
        let half = bytes / 2;
        let answers = (half > 0).then(|| {
            let items = (half / TYPICAL_ANSWER_BYTES).max(16);
            Cache::with_weighter(items, half as u64, ByBytes)
        });
        let effects = (half > 0).then(|| {
            let items = (half / TYPICAL_EFFECT_BYTES).max(16);
            Cache::with_weighter(items, half as u64, EffectBytes)
        });
        // Four slots per answer the cache can hold.
        let slots = if answers.is_some() {
            4 * (half / TYPICAL_ANSWER_BYTES).max(16)
        } else {
            1
        };
        SearchCache {
            answers,
            offered: Doorkeeper::new(slots),
            effects,
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
        }
    }

    /// The answer (its text block as a JSON string literal) stored under
    /// `key`, counted as a hit or a miss when the cache is on.
    pub fn get(&self, key: &SearchKey) -> Option<JsonLiteral> {
        let found = self.answers.as_ref()?.get(key);
        let counter = if found.is_some() {
            &self.hits
        } else {
            &self.misses
        };
        counter.fetch_add(1, Ordering::Relaxed);
        found
    }

    /// Size and use so far.
    pub fn figures(&self) -> CacheFigures {
        CacheFigures {
            answers: self.len(),
            keywords: self.effects.as_ref().map_or(0, Cache::len),
            bytes: self.answers.as_ref().map_or(0, Cache::weight)
                + self.effects.as_ref().map_or(0, Cache::weight),
            capacity_bytes: self.answers.as_ref().map_or(0, Cache::capacity)
                + self.effects.as_ref().map_or(0, Cache::capacity),
            hits: self.hits.load(Ordering::Relaxed),
            misses: self.misses.load(Ordering::Relaxed),
        }
    }

    /// Offers `literal` (the answer's text block as a JSON string literal,
    /// shared, not copied) as the answer for `key`: kept when `key` was
    /// offered before lately (see [`Doorkeeper`]), and when it fits (an
    /// answer larger than the cache's shards is simply not kept).
    pub fn offer(&self, key: SearchKey, literal: JsonLiteral) {
        if let Some(answers) = &self.answers
            && self.offered.seen_again(&key)
        {
            answers.insert(key, literal);
        }
    }

    /// Answers held now.
    pub fn len(&self) -> usize {
        self.answers.as_ref().map_or(0, Cache::len)
    }

    /// Whether no answer is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl KeywordEffects for SearchCache {
    fn keeps(&self) -> bool {
        self.effects.is_some()
    }

    fn get(&self, word: &str) -> Option<Arc<KeywordEffect>> {
        self.effects.as_ref()?.get(word)
    }

    fn insert(&self, word: &str, effect: Arc<KeywordEffect>) {
        if let Some(effects) = &self.effects {
            effects.insert(word.to_string(), effect);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(keywords: &[&str], views: Option<Vec<View>>) -> SearchKey {
        SearchKey {
            keywords: keywords.iter().map(|w| w.to_string()).collect(),
            meaning: None,
            limit: 20,
            schema_detail: false,
            tags: Vec::new(),
            views,
            budget: 60_000,
        }
    }

    #[test]
    fn keeps_and_returns_answers_by_whole_key() {
        let cache = SearchCache::new(1 << 20);
        let answer = JsonLiteral::of(r#"{"total":1}"#);
        // Kept the second time it is offered, not the first.
        cache.offer(key(&["list", "users"], None), answer.clone());
        assert_eq!(cache.get(&key(&["list", "users"], None)), None);
        assert!(cache.is_empty());
        cache.offer(key(&["list", "users"], None), answer);
        assert_eq!(
            cache
                .get(&key(&["list", "users"], None))
                .as_ref()
                .map(JsonLiteral::as_str),
            Some(r#""{\"total\":1}""#)
        );
        // Another view of the same rules is another answer.
        let hidden = Some(vec![View::Hidden]);
        assert_eq!(cache.get(&key(&["list", "users"], hidden)), None);
        let mut other_limit = key(&["list", "users"], None);
        other_limit.limit = 5;
        assert_eq!(cache.get(&other_limit), None);
        assert_eq!(cache.len(), 1);
        let figures = cache.figures();
        assert_eq!((figures.hits, figures.misses), (1, 3));
        assert!(figures.bytes > 11 && figures.bytes <= figures.capacity_bytes);
    }

    #[test]
    fn keyword_effects_are_found_by_word() {
        let cache = SearchCache::new(1 << 20);
        let effect = Arc::new(KeywordEffect::default());
        KeywordEffects::insert(&cache, "users", effect.clone());
        let found = KeywordEffects::get(&cache, "users");
        assert!(found.is_some_and(|f| Arc::ptr_eq(&f, &effect)));
        assert!(KeywordEffects::get(&cache, "user").is_none());
        assert_eq!(cache.figures().keywords, 1);
    }

    /// Queries asked once are not kept, so they do not push out the
    /// answers that are asked again.
    #[test]
    fn one_off_queries_do_not_evict_repeated_answers() {
        let cache = SearchCache::new(64 * 1024);
        let page = JsonLiteral::of(&"x".repeat(3_998));
        for _ in 0..2 {
            cache.offer(key(&["repeated"], None), page.clone());
        }
        for n in 0..500 {
            cache.offer(key(&[&format!("once{n}")], None), page.clone());
        }
        assert!(cache.get(&key(&["repeated"], None)).is_some());
        assert_eq!(cache.len(), 1);
    }

    #[test]
    fn zero_bytes_turns_it_off() {
        let cache = SearchCache::new(0);
        for _ in 0..2 {
            cache.offer(key(&["pets"], None), JsonLiteral::of("{}"));
        }
        assert_eq!(cache.get(&key(&["pets"], None)), None);
        assert!(cache.is_empty());
    }

    #[test]
    fn stays_within_its_bytes() {
        let cache = SearchCache::new(64 * 1024);
        let page = JsonLiteral::of(&"x".repeat(3_998));
        for n in 0..200 {
            for _ in 0..2 {
                cache.offer(key(&[&format!("word{n}")], None), page.clone());
            }
        }
        assert!(cache.len() < 200, "{} answers held", cache.len());
        assert!(cache.len() * 4_000 <= 64 * 1024, "{} answers", cache.len());
    }
}
