//! The search index behind `search_tools`.
//!
//! An agent finds an operation by describing it in a few words, so every
//! tool's text is indexed once, when the catalog is built, and queries are
//! answered from that inverted index without reading tool text again.
//!
//! # Words
//! Text is split into tokens on anything that is not a letter or digit and at
//! camelCase and snake_case boundaries (`listOpenOrders`, `list_open_orders`
//! and `GET /orders/{orderId}` all give plain words), then *folded* ([`fold`]:
//! Unicode NFKD, combining marks removed, lowercased). A query is split the
//! same way into keywords; duplicates collapse and only the first
//! [`MAX_KEYWORDS`] distinct ones are used.
//!
//! # Matching
//! A keyword matches a token when
//! - both have the same singular form ([`singular`]: `policies` ~ `policy`,
//!   and of course `order` ~ `order`): a **whole-token** match;
//! - the token starts with the keyword (`ord` → `orders`): a **prefix**
//!   match, worth [`PREFIX`](query::PREFIX) of a whole one (keywords of one character match
//!   whole tokens only);
//! - the token is a listed synonym of the keyword ([`SYNONYMS`](words::SYNONYMS): verbs and
//!   their HTTP method, `remove` → `delete`, `add` → `post`, so the route's
//!   method is found too; common abbreviations, `repository` → `repo`): a
//!   **synonym** match, worth [`SYNONYM`](query::SYNONYM). It counts as a matched keyword,
//!   but the keyword's IDF comes from its literal matches.
//!
//! A few English function words ([`STOPWORDS`](words::STOPWORDS): `a`, `the`, `of`, …) are
//! ignored when the query has other words; a query of nothing else is
//! ranked by them, matching whole tokens only.
//!
//! # Ranking
//! Keywords rank, they never filter. Tools are ordered by
//! 1. a BM25F score: for each keyword, the tool's matches are weighted by
//!    field ([`FIELD_WEIGHT`](field::FIELD_WEIGHT): name and searchTerms above tags and route,
//!    above argument names, above the description; the API's name, its
//!    document's `info.title` less words every API name has, is a field of
//!    each of its tools, matched only on purpose: a keyword naming an API
//!    whose tools are fewer than a sixteenth of the catalog matches them,
//!    so "in Stripe" prefers Stripe's tools without hiding others, and in a
//!    one-API catalog naming it changes nothing) and by match kind,
//!    normalised by the field's length against its mean over the tool's
//!    document ([`FIELD_B`](field::FIELD_B)), saturated ([`K1`](scratch::K1)) and
//!    multiplied by the keyword's inverse document frequency, so words that
//!    most tools share (`list`, `get`) weigh little. The first words of the
//!    description (its summary, usually) weigh a little more than the rest.
//!    Outside the description a word counts once per field: in
//!    `users_user_list_users` the repeats are structure, not emphasis;
//!    That score is then lifted by route coverage ([`ROUTE_COVERAGE`](scratch::ROUTE_COVERAGE)): the
//!    share of the route's resource segments (its literal path words, less
//!    versions and those most routes of its document share, like
//!    `/rest/api/3`) that the keywords name, so `list users` prefers
//!    `GET /users` to `GET /users/{id}/todo/lists`; and multiplied by the
//!    share of the query's keywords the tool matches (coordination), so
//!    `search tracks` prefers a tool matching both words to one matching
//!    `track` well. The share scales the score rather than ranking first:
//!    ranked first, in a large catalog a tool matching many of a
//!    sentence's common words always outranked the one matching its few
//!    rare ones;
//! 2. the tool's name (documents come in name order, so their index).
//!
//! Tools that match nothing follow by name; an empty query lists everything
//! by name. The ranking uses no hashing order, clock or randomness, so the
//! same catalog and query always give the same answer.
//!
//! # Cost
//! Tokens are grouped by singular form, and each group has a posting list:
//! the tools containing it, with their precomputed BM25F weight. The token
//! dictionary is sorted, so a prefix is a binary search. A query reads only
//! the posting lists of the groups it matches into per-thread scratch
//! memory (one array per quantity, reused, and cleaned by what was
//! touched), keeps the best `limit` in a bounded heap (asking `include`
//! only about tools that would enter it), and fills up with unmatched
//! tools in index order. A rare keyword costs what it matches. A common
//! one (with its synonyms, reaching a sixteenth of the tools or more) is
//! settled in branch-free passes over every tool, which the compiler
//! vectorises. What such a keyword adds to every tool is a
//! [`KeywordEffect`]: the index computes those of its [`COMMON_WORDS`](common::COMMON_WORDS)
//! commonest words when it is built, and the served snapshot keeps others
//! as queries meet them, so a common word usually costs one vectorised
//! pass; the page is then chosen among the tools rare keywords matched
//! when no tool matched by common ones alone can score as much, else over
//! every tool, eight at a time.
//! (What that costs is measured by `benches/search.rs`.)

mod analysis;
mod common;
mod dictionary;
mod effects;
mod explain;
mod field;
mod index;
mod layout;
mod page;
mod query;
mod scratch;
#[cfg(test)]
mod test_support;
mod words;

pub use analysis::{SearchFields, ToolWords, analyse_document};
pub use effects::{KeywordEffect, KeywordEffects};
pub use explain::{KeywordExplanation, MatchKind, WordMatch, explain};
pub use index::SearchIndex;
pub use words::{
    MAX_KEYWORDS, fold, is_stopword, keywords, query_keywords, singular, tokens as folded_tokens,
};

impl SearchIndex {
    /// Indexes `docs` and computes the effects of its commonest words; a
    /// document's position is its id and its rank among ties, so pass them
    /// in name order.
    pub fn build<'a>(docs: impl IntoIterator<Item = SearchFields<'a>>) -> SearchIndex {
        let index = SearchIndex::index_tools(docs);
        index.prepare_common();
        index
    }
}
