//! sezzlee's search by meaning: tools ranked by what a query means, fused
//! with the catalog's keyword ranking.
//!
//! Keyword search (`sezzlee_search`) finds the words a document
//! uses, and agents write their own: "give them their money back" for
//! `create_refund`, "text this customer" for `send_sms`. With a
//! [`TextModel`] loaded (optional: without one search is keyword search
//! alone), each tool's text ([`text`]) is embedded once per model — kept
//! on disk ([`cache`]) so no restart, reload or replica embeds it again —
//! into one table per catalog ([`ToolVectors`]), a sentence query is
//! embedded when it is ranked, and [`rank`] fuses the two rankings
//! ([`fusion`]). The encoder's dependencies live in this crate only: the
//! catalog stays conversion, keyword search (`sezzlee_search`) stays pure.

pub mod cache;
mod encoder;
mod fusion;
mod model;
mod product;
mod quantise;
mod static_model;
mod tensor;
mod text;
pub mod vectors;

pub use cache::{DiskCache, Record, TextKey, text_key};
pub use model::{ModelError, TextModel};
pub use text::tool_text;
pub use vectors::{Pending, ToolVectors};

use sezzlee_search::{KeywordEffects, SearchIndex, is_stopword};

/// What a query asks, as ranking reads it: its keywords
/// ([`query_keywords`](sezzlee_search::query_keywords), what the
/// index ranks) and its sentence ([`query_sentence`], what the model
/// embeds). Both are functions of the query text, and the served search
/// cache is keyed by both.
#[derive(Debug, Clone, Copy)]
pub struct Query<'a> {
    pub words: &'a [String],
    pub sentence: &'a str,
}

/// The sentence a model embeds for `query`: its folded tokens in order,
/// repeats and stopwords kept (an encoder reads them in context), at most
/// 64 of them.
pub fn query_sentence(query: &str) -> String {
    sezzlee_search::folded_tokens(query)
        .into_iter()
        .take(64)
        .collect::<Vec<_>>()
        .join(" ")
}

/// The rankings a page was fused from, for explaining it: the keyword
/// ranking, the meaning ranking with each tool's cosine, and the page.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Ranking {
    pub lexical: Vec<usize>,
    pub semantic: Vec<(usize, f32)>,
    pub page: Vec<usize>,
    /// How much meaning weighed against keywords (0: keywords alone).
    pub weight: f32,
    /// The query's vector, when meaning ranked (for explaining a miss
    /// deeper than the page without embedding the query again).
    pub vector: Option<Vec<f32>>,
}

/// At most `limit` tools for which `include(i)` holds: the keyword
/// ranking fused with the meaning ranking when `vectors` are given and the
/// query is a sentence, then tools matching nothing, in index order, to
/// fill the page. An empty query lists tools in index order, as keyword
/// search does.
pub fn rank(
    index: &SearchIndex,
    vectors: Option<&ToolVectors>,
    query: Query<'_>,
    limit: usize,
    include: impl Fn(usize) -> bool + Sync,
    effects: Option<&(dyn KeywordEffects + Sync)>,
) -> Vec<usize> {
    rank_explained(index, vectors, query, limit, include, effects).page
}

/// [`rank`], with the rankings it fused. The keyword ranking runs beside
/// the query's encoding and the vector scan (on two of rayon's threads):
/// a sentence waits for the slower of the two, not for both.
pub fn rank_explained(
    index: &SearchIndex,
    vectors: Option<&ToolVectors>,
    query: Query<'_>,
    limit: usize,
    include: impl Fn(usize) -> bool + Sync,
    effects: Option<&(dyn KeywordEffects + Sync)>,
) -> Ranking {
    let words = query.words;
    let vectors = vectors.filter(|v| v.len() == index.len());
    let weight = weight_of_meaning(vectors, words);
    let Some(vectors) = vectors.filter(|_| weight > 0.0) else {
        let page = index.top_keywords_with(words, limit, include, effects.map(|e| e as _));
        return Ranking {
            lexical: page.clone(),
            page,
            ..Ranking::default()
        };
    };
    let depth = fusion::DEPTH.max(limit);
    let joined;
    let text = if vectors.model().is_contextual() {
        query.sentence
    } else {
        // A static model averages tokens: the keywords are its sentence.
        joined = words.join(" ");
        &joined
    };
    let (lexical, (vector, semantic)) = rayon::join(
        || index.matched_keywords_with(words, depth, &include, effects.map(|e| e as _)),
        || {
            let vector = vectors.embed_query(text);
            let semantic = match &vector {
                Some(vector) => vectors.nearest(vector, depth, &include),
                None => Vec::new(),
            };
            (vector, semantic)
        },
    );
    let ids: Vec<usize> = semantic.iter().map(|&(tool, _)| tool).collect();
    let mut page = fusion::fuse(&lexical, &ids, weight, limit);
    index.fill_in_order(limit, include, &mut page);
    Ranking {
        lexical,
        semantic,
        page,
        weight,
        vector,
    }
}

/// How much meaning weighs in ranking `words` with `vectors`: 0 (keywords
/// alone) without vectors, before any tool has one, and for queries of
/// one or two content words. What a served answer depends on besides the
/// keywords exactly when this is not 0.
pub fn weight_of_meaning(vectors: Option<&ToolVectors>, words: &[String]) -> f32 {
    match vectors {
        Some(vectors) if vectors.embedded() > 0 && !words.is_empty() => {
            meaning_weight(words, vectors.model().is_contextual())
        }
        _ => 0.0,
    }
}

/// How much the meaning ranking weighs against the keyword ranking (which
/// weighs 1), by the query's content words (not stopwords): nothing for
/// one or two; for a static model a quarter more per word from three, all
/// from six; for an encoder nothing up to three and [`ENCODER_WEIGHT`] from
/// four (a three-word query such as "add member to group" names the
/// operation in the document's words, and keywords rank it best). A query
/// of a few words names the operation in the document's words ("list
/// users", "refund a charge"), where keywords, with the route's structure,
/// rank best and a paraphrase only adds noise; a sentence describes a need
/// in the agent's words, where meaning finds what keywords miss. (Chosen
/// on the tuning sets: keyword-style tasks keep their recall@5, sentences
/// keep the fused gain.)
fn meaning_weight(words: &[String], contextual: bool) -> f32 {
    let content = words.iter().filter(|w| !is_stopword(w)).count() as f32;
    if contextual {
        if content >= 4.0 { ENCODER_WEIGHT } else { 0.0 }
    } else {
        ((content - 2.0) / 4.0).clamp(0.0, 1.0)
    }
}

/// How much an encoder's ranking weighs against the keywords' at full
/// strength (from four content words). Chosen on the tuning tasks
/// (tests/data/agent-tasks-tune*.tsv; the figures: `tests/data/README.md`,
/// "Tuning record").
const ENCODER_WEIGHT: f32 = 2.0;

#[cfg(test)]
mod tests {
    use super::*;

    fn meaning_weight_static(words: &[String]) -> f32 {
        meaning_weight(words, false)
    }

    fn words(query: &str) -> Vec<String> {
        sezzlee_search::query_keywords(query)
    }

    #[test]
    fn an_encoder_weighs_in_from_four_content_words() {
        assert_eq!(meaning_weight(&words("list users"), true), 0.0);
        assert_eq!(meaning_weight(&words("add member to group"), true), 0.0);
        assert_eq!(
            meaning_weight(&words("give the customer their money back"), true),
            ENCODER_WEIGHT
        );
    }

    #[test]
    fn short_queries_are_keyword_queries_and_sentences_weigh_meaning_fully() {
        assert_eq!(meaning_weight_static(&words("list users")), 0.0);
        assert_eq!(meaning_weight_static(&words("the user for me")), 0.0);
        assert_eq!(meaning_weight_static(&words("get a user by id")), 0.25);
        assert_eq!(meaning_weight_static(&words("add member to group")), 0.25);
        assert_eq!(
            meaning_weight_static(&words(
                "Please abort the frontend build #87 that's running right now"
            )),
            1.0
        );
        assert_eq!(meaning_weight_static(&[]), 0.0);
    }
}
