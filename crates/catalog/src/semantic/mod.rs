//! Semantic search: tools ranked by what a query means, fused with the
//! keyword ranking.
//!
//! Keyword search (the [`search`](crate::search) module) finds the words a
//! document uses, and agents often use others: "abort" for `cancel`,
//! "text" for `sms`, "deal" for `opportunity`. With a [`TextModel`] loaded
//! (it is optional: without one search is keyword search alone), each tool
//! is embedded once per catalog ([`ToolVectors`], rows reused across
//! rebuilds for unchanged tools), a query is embedded when it is ranked,
//! and [`rank`] fuses the two rankings ([`fusion`]).

pub mod fusion;
pub mod model;
pub mod routing;
pub mod vectors;

pub use model::{ModelError, TextModel};
pub use vectors::{ToolVectors, tool_text};

use crate::search::{KeywordEffects, SearchIndex, is_stopword};

/// At most `limit` tools for which `include(i)` holds, for a query already
/// split into `words` ([`query_keywords`](crate::search::query_keywords)):
/// the keyword ranking fused with the meaning ranking when `vectors` are
/// given, then tools matching nothing, in index order, to fill the page.
/// An empty query lists tools in index order, as keyword search does.
pub fn rank(
    index: &SearchIndex,
    vectors: Option<&ToolVectors>,
    words: &[String],
    limit: usize,
    include: impl Fn(usize) -> bool,
    effects: Option<&dyn KeywordEffects>,
) -> Vec<usize> {
    let Some(vectors) = vectors.filter(|v| v.len() == index.len() && !words.is_empty()) else {
        return index.top_keywords_with(words, limit, include, effects);
    };
    let weight = meaning_weight(words);
    if weight == 0.0 {
        return index.top_keywords_with(words, limit, include, effects);
    }
    let depth = fusion::DEPTH.max(limit);
    let lexical = index.matched_keywords_with(words, depth, &include, effects);
    // The words, not the raw query: two queries with the same words rank
    // the same (the served search cache is keyed by them).
    let semantic = vectors.nearest(&words.join(" "), depth, &lexical, &include);
    let mut ranked = fusion::fuse(&lexical, &semantic, weight, limit);
    index.fill_in_order(limit, include, &mut ranked);
    ranked
}

/// How much the meaning ranking weighs against the keyword ranking (which
/// weighs 1), by the query's content words (not stopwords): nothing for
/// one or two, a quarter more per word from three, all from six. A query
/// of a few words names the operation in the document's words ("list
/// users", "refund a charge"), where keywords, with the route's structure,
/// rank best and a paraphrase only adds noise; a sentence describes a need
/// in the agent's words, where meaning finds what keywords miss. (Chosen
/// on the tuning sets: keyword-style tasks keep their recall@5, sentences
/// keep the fused gain.)
fn meaning_weight(words: &[String]) -> f32 {
    let content = words.iter().filter(|w| !is_stopword(w)).count();
    ((content as f32 - 2.0) / 4.0).clamp(0.0, 1.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(query: &str) -> Vec<String> {
        crate::search::query_keywords(query)
    }

    #[test]
    fn short_queries_are_keyword_queries_and_sentences_weigh_meaning_fully() {
        assert_eq!(meaning_weight(&words("list users")), 0.0);
        assert_eq!(meaning_weight(&words("the user for me")), 0.0);
        assert_eq!(meaning_weight(&words("get a user by id")), 0.25);
        assert_eq!(meaning_weight(&words("add member to group")), 0.25);
        assert_eq!(
            meaning_weight(&words(
                "Please abort the frontend build #87 that's running right now"
            )),
            1.0
        );
        assert_eq!(meaning_weight(&[]), 0.0);
    }
}
