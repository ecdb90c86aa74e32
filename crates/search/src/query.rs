//! Queries: from a query's keywords to the scores of the tools they match.
//!
//! A keyword reaches the index's word groups three ways (its own singular
//! form, the tokens it begins, its synonyms), each with its own weight.
//! This is where those groups are found and scored into the scratch, and
//! where the public entry points ([`SearchIndex::top`] and its variants)
//! put scoring and page selection together.

use std::collections::HashSet;
use std::sync::Arc;

use super::analysis::api_term;
use super::effects::KeywordEffects;
use super::index::SearchIndex;
use super::page::best_matched;
use super::scratch::{Scratch, with_scratch};
use super::words::{SYNONYMS, is_stopword, query_keywords, singular};

/// Weight of a whole-token match (same word, or same singular form).
const WHOLE: f32 = 1.0;
/// Weight of a match where the token only starts with the keyword.
pub(super) const PREFIX: f32 = 0.4;
/// A keyword whose posting lists reach at least one tool in this many
/// settles by one pass over every tool ([`SearchIndex::score_groups`]),
/// and its effect may be kept. (Sixteen rather than eight: on Graph, new
/// queries of known words rank a third faster, for a few more kept
/// effects.)
const DENSE_FROM: usize = 16;
/// Weight of a match through [`SYNONYMS`].
pub(super) const SYNONYM: f32 = 0.3;

/// One keyword of a query while it is scored.
struct Keyword<'a> {
    word: &'a str,
    effects: Option<&'a dyn KeywordEffects>,
}

impl SearchIndex {
    /// Indices of at most `limit` documents for which `include(i)` is true,
    /// best first, per the ranking rules above.
    pub fn top(&self, query: &str, limit: usize, include: impl Fn(usize) -> bool) -> Vec<usize> {
        self.top_keywords(&query_keywords(query), limit, include)
    }

    /// [`SearchIndex::top`] for a query already split by
    /// [`query_keywords`].
    pub fn top_keywords(
        &self,
        words: &[String],
        limit: usize,
        include: impl Fn(usize) -> bool,
    ) -> Vec<usize> {
        self.top_keywords_with(words, limit, include, None)
    }

    /// [`SearchIndex::top_keywords`], reusing and keeping in `effects` what
    /// common keywords do to the scores (the same ranking, less work).
    pub fn top_keywords_with(
        &self,
        words: &[String],
        limit: usize,
        include: impl Fn(usize) -> bool,
        effects: Option<&dyn KeywordEffects>,
    ) -> Vec<usize> {
        self.page(words, limit, include, effects, true)
    }

    /// [`SearchIndex::top_keywords_with`] without the unmatched tools that
    /// fill a page: only tools matching a keyword, at most `limit`.
    pub fn matched_keywords_with(
        &self,
        words: &[String],
        limit: usize,
        include: impl Fn(usize) -> bool,
        effects: Option<&dyn KeywordEffects>,
    ) -> Vec<usize> {
        self.page(words, limit, include, effects, false)
    }

    /// The best `limit` matched tools, then (when `fill`) unmatched ones
    /// in index order up to `limit`.
    fn page(
        &self,
        words: &[String],
        limit: usize,
        include: impl Fn(usize) -> bool,
        effects: Option<&dyn KeywordEffects>,
        fill: bool,
    ) -> Vec<usize> {
        if limit == 0 || self.doc_count == 0 {
            return Vec::new();
        }
        with_scratch(self.doc_count, |scratch| {
            self.score_query(words, effects, scratch);
            let mut result = best_matched(scratch, &self.resources, limit, &include);
            if fill {
                self.fill_unmatched(scratch, limit, &include, &mut result);
            }
            result
        })
    }

    /// Appends to `result`, in index order, tools for which `include`
    /// holds and that `result` does not hold, until it has `limit`.
    pub fn fill_in_order(
        &self,
        limit: usize,
        include: impl Fn(usize) -> bool,
        result: &mut Vec<usize>,
    ) {
        let mut tool = 0;
        while result.len() < limit && tool < self.doc_count {
            if include(tool) && !result.contains(&tool) {
                result.push(tool);
            }
            tool += 1;
        }
    }

    pub(super) fn score_query(
        &self,
        words: &[String],
        effects: Option<&dyn KeywordEffects>,
        scratch: &mut Scratch,
    ) {
        // A function word says nothing about an operation: when the query
        // has other words it is not scored at all (matching the "a" and "by"
        // of "get a user by id" in descriptions would only reorder the tools
        // the other words chose, by noise); a query of nothing else is
        // ranked by them.
        let only_stopwords = words.iter().all(|w| is_stopword(w));
        for word in words.iter().filter(|w| only_stopwords || !is_stopword(w)) {
            let stopword = is_stopword(word);
            let keyword = Keyword { word, effects };
            // A keyword whose effect is kept was common: adding the effect
            // is all there is to do.
            let common = (self.common.get()).and_then(|common| common.get(word.as_str()).cloned());
            if let Some(effect) = common.or_else(|| effects.and_then(|kept| kept.get(word))) {
                scratch.apply(effect);
            } else if stopword {
                self.score_stopword(&keyword, scratch);
            } else {
                self.score_keyword(&keyword, scratch);
            }
        }
    }

    /// A stopword (in a query of nothing else) matches whole tokens only.
    fn score_stopword(&self, keyword: &Keyword<'_>, scratch: &mut Scratch) {
        let literal: Vec<(u32, f32)> = self
            .group_of(keyword.word)
            .map(|g| (g, WHOLE))
            .into_iter()
            .collect();
        self.score_groups(&literal, &[], keyword, scratch);
    }

    /// Adds one keyword's matches (whole, prefix, synonym) to the scores.
    fn score_keyword(&self, keyword: &Keyword<'_>, scratch: &mut Scratch) {
        let word = keyword.word;
        let own = self.group_of(word);
        let mut used: Vec<u32> = own.into_iter().collect();
        let mut literal: Vec<(u32, f32)> = own.map(|g| (g, WHOLE)).into_iter().collect();
        if word.chars().nth(1).is_some() {
            for group in self.prefix_groups(word, &used) {
                literal.push((group, PREFIX));
                used.push(group);
            }
        }
        // The API named: its tools' API group, when it is few of the
        // catalog's tools (a product, "in Stripe"); one that is many of them
        // (every tool of a one-API catalog, or a word many APIs' names
        // share) would say little and cost a pass over every tool.
        if let Some(group) = self.dictionary.group(&singular(&api_term(word)))
            && !used.contains(&group)
            && self.group_postings(group).len() * DENSE_FROM < self.doc_count
        {
            literal.push((group, WHOLE));
            used.push(group);
        }
        let synonyms: Vec<(u32, f32)> = self
            .synonym_groups(word, &used)
            .into_iter()
            .map(|g| (g, SYNONYM))
            .collect();
        self.score_groups(&literal, &synonyms, keyword, scratch);
    }

    /// Scores one keyword from the groups it reaches, each with the weight
    /// of its kind of match. The IDF counts the tools the literal groups
    /// reach (all groups' when none). A keyword reaching few tools walks
    /// only those; one reaching many (a common word and its synonyms)
    /// accumulates without bookkeeping and settles in one sequential pass
    /// over every tool, which is cheaper than visiting them at random. Both
    /// ways give the same scores.
    fn score_groups(
        &self,
        literal: &[(u32, f32)],
        synonyms: &[(u32, f32)],
        keyword: &Keyword<'_>,
        scratch: &mut Scratch,
    ) {
        let reached: usize = literal
            .iter()
            .chain(synonyms)
            .map(|&(group, _)| self.group_postings(group).len())
            .sum();
        if reached * DENSE_FROM < self.doc_count {
            for &(group, quality) in literal {
                self.accumulate(group, quality, scratch);
            }
            let literal_tools = scratch.touched.len();
            for &(group, quality) in synonyms {
                self.accumulate(group, quality, scratch);
            }
            let df = if literal_tools > 0 {
                literal_tools
            } else {
                scratch.touched.len()
            };
            scratch.settle(self.doc_count, df);
        } else {
            let mut literal_tools = 0;
            for &(group, quality) in literal {
                literal_tools += scratch.add_dense(self.group_postings(group), quality);
            }
            let mut all_tools = literal_tools;
            for &(group, quality) in synonyms {
                all_tools += scratch.add_dense(self.group_postings(group), quality);
            }
            let df = if literal_tools > 0 {
                literal_tools
            } else {
                all_tools
            };
            // Settled into a reused buffer when nobody keeps it; kept, it
            // is shared, not copied.
            let effect = Arc::new(scratch.settle_dense(self.doc_count, df));
            if let Some(kept) = keyword.effects.filter(|kept| kept.keeps()) {
                kept.insert(keyword.word, Arc::clone(&effect));
            }
            scratch.apply(effect);
        }
    }

    /// Whether `word` ranks the tools of an API whose name it is (the
    /// API's tools are few enough of the catalog: see `score_keyword`).
    pub fn ranks_by_api_name(&self, word: &str) -> bool {
        self.dictionary
            .group(&singular(&api_term(word)))
            .is_some_and(|group| self.group_postings(group).len() * DENSE_FROM < self.doc_count)
    }

    /// The group of tokens with the same singular form as `word`.
    fn group_of(&self, word: &str) -> Option<u32> {
        self.dictionary.group(&singular(word))
    }

    /// Groups of the tokens starting with `word`, except those in `used`,
    /// each once, in dictionary order of their first token.
    fn prefix_groups(&self, word: &str, used: &[u32]) -> Vec<u32> {
        let mut seen = HashSet::new();
        self.dictionary
            .prefix_range(word)
            .filter_map(|term| self.dictionary.term_group.get(term).copied())
            .filter(|group| !used.contains(group) && seen.insert(*group))
            .collect()
    }

    /// Groups of the other words in `word`'s synonym group, except `used`.
    fn synonym_groups(&self, word: &str, used: &[u32]) -> Vec<u32> {
        let form = singular(word);
        let form = form.as_str();
        let mut groups: Vec<u32> = Vec::new();
        let kinds = SYNONYMS
            .iter()
            .filter(|(searched, asking)| searched.contains(&form) || asking.contains(&form));
        let synonyms = kinds.flat_map(|(searched, _)| searched.iter());
        for synonym in synonyms.filter(|s| **s != form) {
            if let Some(group) = self.group_of(synonym)
                && !used.contains(&group)
                && !groups.contains(&group)
            {
                groups.push(group);
            }
        }
        groups
    }

    fn accumulate(&self, group: u32, quality: f32, scratch: &mut Scratch) {
        for posting in self.group_postings(group) {
            scratch.add(posting.doc(), quality * posting.weight, posting.resource());
        }
    }

    /// Appends unmatched tools, in index (name) order, up to `limit`.
    fn fill_unmatched(
        &self,
        scratch: &Scratch,
        limit: usize,
        include: &impl Fn(usize) -> bool,
        result: &mut Vec<usize>,
    ) {
        let mut doc = 0;
        while result.len() < limit && doc < self.doc_count {
            if !scratch.is_matched(doc) && include(doc) {
                result.push(doc);
            }
            doc += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::{Tool, index, names, strings, tool};

    #[test]
    fn plural_keyword_finds_singular_token_and_back() {
        let tools = [
            tool("get_policy", ""),
            tool("list_opportunities", ""),
            tool("zzz", ""),
        ];
        assert_eq!(names(&tools, "policies", 1), ["get_policy"]);
        assert_eq!(names(&tools, "opportunity", 1), ["list_opportunities"]);
    }

    #[test]
    fn prefix_matches() {
        let tools = [tool("a_tool", "nothing"), tool("list_orders", "")];
        assert_eq!(names(&tools, "ord", 1), ["list_orders"]);
        assert_eq!(names(&tools, "lis", 1), ["list_orders"]);
    }

    #[test]
    fn whole_token_beats_prefix() {
        let tools = [tool("get_orderbook", ""), tool("get_order", "")];
        assert_eq!(names(&tools, "order", 2), ["get_order", "get_orderbook"]);
        let tools = [tool("a_ordering", ""), tool("b_orders", "")];
        assert_eq!(names(&tools, "order", 2), ["b_orders", "a_ordering"]);
    }

    #[test]
    fn empty_query_lists_by_name() {
        let tools = [tool("a", ""), tool("b", ""), tool("c", "")];
        assert_eq!(names(&tools, "", 10), ["a", "b", "c"]);
        assert_eq!(names(&tools, " - ", 2), ["a", "b"]);
    }

    #[test]
    fn synonyms_match_weaker_than_the_word() {
        let tools = [
            Tool {
                name: "a_pet",
                route: "DELETE /pets/{id}",
                ..Tool::default()
            },
            Tool {
                name: "b_pet",
                route: "GET /pets/{id}",
                ..Tool::default()
            },
            tool("c_remove_pet", ""),
        ];
        assert_eq!(names(&tools, "remove pet", 2), ["c_remove_pet", "a_pet"]);
    }

    #[test]
    fn abbreviations_match_both_ways() {
        let tools = [tool("a_thing", ""), tool("repos_list", "")];
        assert_eq!(names(&tools, "repositories", 1), ["repos_list"]);
        let tools = [tool("a_thing", ""), tool("get_configuration", "")];
        assert_eq!(names(&tools, "config", 1), ["get_configuration"]);
    }

    #[test]
    fn one_character_keywords_match_whole_tokens_only() {
        let tools = [tool("a_orders", ""), tool("b_o", "")];
        assert_eq!(names(&tools, "o", 2), ["b_o", "a_orders"]);
        let idx = index(&tools);
        assert_eq!(idx.top("o", 1, |_| true), [1]);
    }

    #[test]
    fn a_query_of_stopwords_still_ranks() {
        let tools = [tool("a", "nothing"), tool("b", "all of it")];
        assert_eq!(names(&tools, "all of", 1), ["b"]);
    }

    #[test]
    fn stopwords_do_not_decide() {
        let tools = [tool("a_of_the", "a of the"), tool("b_pet", "")];
        assert_eq!(names(&tools, "the pet", 1), ["b_pet"]);
        assert_eq!(names(&tools, "the", 1), ["a_of_the"]);
    }

    /// Nor do they reorder what the other words chose: "a" and "by" in a
    /// name or description add nothing when the query has other words.
    #[test]
    fn stopwords_do_not_score_beside_other_words() {
        let tools = [tool("a_user_get_by", "By a by a."), tool("b_user_get", "")];
        assert_eq!(
            names(&tools, "get a user by", 2),
            ["b_user_get", "a_user_get_by"]
        );
        assert_eq!(names(&tools, "by a", 1), ["a_user_get_by"]);
    }

    #[test]
    fn empty_index_and_hostile_queries() {
        let empty = SearchIndex::build(std::iter::empty());
        assert!(empty.is_empty());
        assert_eq!(empty.len(), 0);
        assert!(empty.top("anything", 5, |_| true).is_empty());
        let tools = [tool("a", "🎉 emoji"), tool("", "")];
        let idx = index(&tools);
        let huge: String = (0..10_000).map(|i| format!("k{i} ")).collect();
        assert_eq!(idx.top(&huge, 5, |_| true).len(), 2);
        assert_eq!(idx.top("🎉", 5, |_| true).len(), 2);
        assert_eq!(idx.top(&"x".repeat(100_000), 1, |_| true).len(), 1);
    }

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
    fn an_api_named_in_the_query_is_preferred_without_hiding_others() {
        let mut tools = vec![
            Tool {
                name: "a_list_customers",
                api: "Acme Billing API",
                ..Tool::default()
            },
            Tool {
                name: "b_list_customers",
                api: "Stripe API",
                ..Tool::default()
            },
        ];
        // Stripe is a few of the catalog's tools.
        tools.extend((0..40).map(|i| Tool {
            name: Box::leak(format!("c_other_{i:02}").into_boxed_str()),
            api: "Acme Billing API",
            ..Tool::default()
        }));
        assert_eq!(
            names(&tools, "list customers", 2),
            ["a_list_customers", "b_list_customers"]
        );
        assert_eq!(
            names(&tools, "list my customers in Stripe", 3),
            ["b_list_customers", "a_list_customers", "c_other_00"]
        );
        // The words every API's name has say nothing; nor does an API that
        // is most of the catalog (Acme), nor its words as plain words.
        assert_eq!(
            names(&tools, "list customers api", 2),
            ["a_list_customers", "b_list_customers"]
        );
        assert_eq!(
            names(&tools, "list customers in acme", 2),
            ["a_list_customers", "b_list_customers"]
        );
        assert_eq!(names(&tools, "stri", 1), ["a_list_customers"]);
    }
}
