//! Keyword effects: what a common keyword does to every tool's score.
//!
//! A keyword reaching many tools is settled in one pass over all of them;
//! the result, its [`KeywordEffect`], depends only on the index and the
//! word, so it can be kept and added again in one vectorised pass instead
//! of scoring the keyword anew. Here are the effect and the
//! [`KeywordEffects`] store through which the index's owner keeps effects
//! between queries; the index's own commonest words are in `common`.

use std::sync::Arc;

/// What one common keyword (one settled over every tool) does to the
/// scores of a catalog: for each tool, its BM25 contribution (0 where it
/// does not match) and whether it adds a resource hit. Adding it again is
/// one vectorised pass, with exactly the result of scoring the keyword.
#[derive(Clone, Default)]
pub struct KeywordEffect {
    pub(super) contribution: Vec<f32>,
    /// 1 where the keyword matched (added to the keyword count).
    pub(super) counted: Vec<u8>,
    pub(super) resource: Vec<u8>,
    /// The largest contribution.
    pub(super) max: f32,
}

impl std::fmt::Debug for KeywordEffect {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "KeywordEffect({} tools)", self.contribution.len())
    }
}

impl KeywordEffect {
    /// Heap bytes held.
    pub fn bytes(&self) -> usize {
        self.contribution.len() * 4 + self.counted.len() + self.resource.len()
    }
}

/// Where the effects of common keywords are kept between queries: by
/// whoever owns the index's lifetime (the served snapshot), since an
/// effect is only true of the index it was computed on.
pub trait KeywordEffects {
    /// Whether [`KeywordEffects::insert`] keeps anything (when not, effects
    /// are not copied out for it).
    fn keeps(&self) -> bool {
        true
    }
    fn get(&self, word: &str) -> Option<Arc<KeywordEffect>>;
    fn insert(&self, word: &str, effect: Arc<KeywordEffect>);
}
