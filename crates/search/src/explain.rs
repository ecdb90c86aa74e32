//! Why a tool matched a query: for each keyword, the tool's words it
//! matched, in which fields, and how (whole word, prefix, synonym, the
//! API's name).
//!
//! The ranking itself is the index's ([`SearchIndex::top`](crate::SearchIndex::top)); this reads one
//! tool's analysed words ([`ToolWords`]) and its name with the same rules
//! the index applies when it reaches posting groups (singular forms,
//! prefixes of two characters or more, the synonym table, the API's name
//! when the index ranks by it, function words skipped when the query has
//! others),
//! so an operator can see what a page's order rests on. It costs a walk of
//! one tool's words per keyword: meant for a console, not for every query.

use crate::SearchIndex;
use crate::analysis::{API_MARK, ToolWords, api_term, name_tokens};
use crate::field::{API, ARGUMENTS, DESCRIPTION, FIELDS, LEAD, NAME, ROUTE, SEARCH_TERMS, TAGS};
use crate::words::{SYNONYMS, is_stopword, singular};

/// How a keyword matched a word of the tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MatchKind {
    /// The same singular form.
    Whole,
    /// The word starts with the keyword.
    Prefix,
    /// The word is a listed synonym of the keyword.
    Synonym,
    /// The keyword names the tool's API (its document's title).
    Api,
}

impl MatchKind {
    pub fn as_str(self) -> &'static str {
        match self {
            MatchKind::Whole => "whole",
            MatchKind::Prefix => "prefix",
            MatchKind::Synonym => "synonym",
            MatchKind::Api => "api",
        }
    }
}

/// One word of the tool a keyword matched.
#[derive(Debug, Clone, PartialEq)]
pub struct WordMatch {
    /// The tool's word, folded (an API word without its mark).
    pub word: String,
    pub kind: MatchKind,
    /// The fields the word is in ([`field_name`]).
    pub fields: Vec<&'static str>,
}

/// What one keyword of the query matched in the tool (nothing: `matches`
/// empty).
#[derive(Debug, Clone, PartialEq)]
pub struct KeywordExplanation {
    pub keyword: String,
    pub matches: Vec<WordMatch>,
}

/// The name of field `field` as an explanation says it.
pub fn field_name(field: usize) -> &'static str {
    match field {
        NAME => "name",
        SEARCH_TERMS => "searchTerms",
        TAGS => "tags",
        ROUTE => "route",
        ARGUMENTS => "arguments",
        LEAD => "summary",
        DESCRIPTION => "description",
        API => "api",
        _ => "other",
    }
}

/// What each keyword of `keywords` (as [`query_keywords`](crate::query_keywords) splits a query)
/// matches in the tool named `name` whose other words are `words`. Function
/// words are left out when the query has other words, as ranking leaves
/// them out.
pub fn explain(
    index: &SearchIndex,
    name: &str,
    words: &ToolWords,
    keywords: &[String],
) -> Vec<KeywordExplanation> {
    let only_stopwords = keywords.iter().all(|w| is_stopword(w));
    let mut terms: Vec<(&str, [u16; FIELDS])> = words
        .terms()
        .filter_map(|term| {
            let text = words.vocabulary().get(term.term as usize)?;
            Some((&**text, term.counts))
        })
        .collect();
    let name_words = name_tokens(name);
    let mut name_counts = [0u16; FIELDS];
    name_counts[NAME] = 1;
    terms.extend(name_words.iter().map(|word| (word.as_str(), name_counts)));
    keywords
        .iter()
        .filter(|word| only_stopwords || !is_stopword(word))
        .map(|keyword| KeywordExplanation {
            keyword: keyword.clone(),
            matches: matches_of(
                keyword,
                &terms,
                only_stopwords,
                index.ranks_by_api_name(keyword),
            ),
        })
        .collect()
}

/// The tool's words `keyword` matches, merged per word and kind.
fn matches_of(
    keyword: &str,
    terms: &[(&str, [u16; FIELDS])],
    whole_only: bool,
    api_ranks: bool,
) -> Vec<WordMatch> {
    let form = singular(keyword);
    let api = api_term(keyword);
    let synonyms = synonyms_of(&form);
    let mut found: Vec<WordMatch> = Vec::new();
    for &(term, counts) in terms {
        let kind = if let Some(api_word) = term.strip_prefix(API_MARK) {
            (api_ranks && term == api).then_some((api_word, MatchKind::Api))
        } else if singular(term) == form {
            Some((term, MatchKind::Whole))
        } else if whole_only {
            None
        } else if keyword.chars().nth(1).is_some() && term.starts_with(keyword) {
            Some((term, MatchKind::Prefix))
        } else if synonyms.contains(&singular(term).as_str()) {
            Some((term, MatchKind::Synonym))
        } else {
            None
        };
        let Some((word, kind)) = kind else { continue };
        let fields = (0..FIELDS).filter(|&f| counts[f] > 0).map(field_name);
        match found.iter_mut().find(|m| m.word == word && m.kind == kind) {
            Some(known) => {
                for field in fields {
                    if !known.fields.contains(&field) {
                        known.fields.push(field);
                    }
                }
            }
            None => found.push(WordMatch {
                word: word.to_string(),
                kind,
                fields: fields.collect(),
            }),
        }
    }
    found
}

/// The other words of `form`'s synonym groups that are searched for.
fn synonyms_of(form: &str) -> Vec<&'static str> {
    SYNONYMS
        .iter()
        .filter(|(searched, asking)| searched.contains(&form) || asking.contains(&form))
        .flat_map(|(searched, _)| searched.iter().copied())
        .filter(|synonym| *synonym != form)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::{SearchFields, analyse_document};
    use crate::query_keywords;

    /// The tool's words, and an index of it beside 20 tools of another
    /// API (so naming the tool's API ranks by it).
    fn words_of(description: &str, route: &str, api: &str) -> (SearchIndex, ToolWords) {
        let tags = vec!["Orders".to_string()];
        let tool = || SearchFields {
            name: "a_tool",
            description,
            search_terms: &[],
            route,
            api,
            argument_names: vec!["orderId"],
            tags: &tags,
            document: "shop.yaml",
            words: None,
        };
        let words = analyse_document(&[tool()]).remove(0);
        let names: Vec<String> = (0..20).map(|i| format!("pet_{i:02}")).collect();
        let mut all = vec![tool()];
        all.extend(names.iter().map(|name| SearchFields {
            name,
            description: "A pet.",
            search_terms: &[],
            route: "GET /pets",
            api: "Petstore",
            argument_names: vec![],
            tags: &[],
            document: "pets.yaml",
            words: None,
        }));
        (SearchIndex::build(all), words)
    }

    fn kinds(explained: &[KeywordExplanation], keyword: &str) -> Vec<(String, MatchKind)> {
        explained
            .iter()
            .find(|k| k.keyword == keyword)
            .map(|k| k.matches.iter().map(|m| (m.word.clone(), m.kind)).collect())
            .unwrap_or_default()
    }

    #[test]
    fn says_each_keyword_s_words_fields_and_kind() {
        let (index, words) = words_of(
            "Cancel an order that has not shipped.",
            "DELETE /orders/{orderId}",
            "Shop",
        );
        let explained = explain(
            &index,
            "cancel_order",
            &words,
            &query_keywords("remove the orders ord in shop"),
        );
        // "the" and "in" are function words: left out beside others.
        assert_eq!(
            explained
                .iter()
                .map(|k| k.keyword.as_str())
                .collect::<Vec<_>>(),
            ["remove", "orders", "ord", "shop"]
        );
        assert_eq!(
            kinds(&explained, "remove"),
            [("delete".to_string(), MatchKind::Synonym)]
        );
        let order = explained.iter().find(|k| k.keyword == "orders").unwrap();
        let whole = order
            .matches
            .iter()
            .find(|m| m.word == "order" || m.word == "orders")
            .unwrap();
        assert_eq!(whole.kind, MatchKind::Whole);
        for field in ["name", "route", "tags", "summary", "arguments"] {
            assert!(
                order.matches.iter().any(|m| m.fields.contains(&field)),
                "{field}: {order:?}"
            );
        }
        assert!(
            kinds(&explained, "ord")
                .iter()
                .all(|(_, kind)| *kind == MatchKind::Prefix)
        );
        assert_eq!(
            kinds(&explained, "shop"),
            [("shop".to_string(), MatchKind::Api)]
        );
    }

    #[test]
    fn an_api_named_where_it_would_not_rank_is_not_said_to_match() {
        // Petstore's 20 tools are most of the catalog: its name ranks nothing.
        let (index, _) = words_of("List pets.", "GET /pets", "Petstore");
        let pet = analyse_document(&[SearchFields {
            name: "pet_00",
            description: "A pet.",
            search_terms: &[],
            route: "GET /pets",
            api: "Petstore",
            argument_names: vec![],
            tags: &[],
            document: "pets.yaml",
            words: None,
        }])
        .remove(0);
        let explained = explain(&index, "pet_00", &pet, &query_keywords("petstore"));
        assert!(
            kinds(&explained, "petstore")
                .iter()
                .all(|(_, kind)| *kind != MatchKind::Api),
            "{explained:?}"
        );
    }

    #[test]
    fn a_query_of_function_words_matches_whole_words_only() {
        let (index, words) = words_of("The thing of them all.", "GET /things", "Things");
        let explained = explain(&index, "get_thing", &words, &query_keywords("the"));
        assert_eq!(
            kinds(&explained, "the"),
            [("the".to_string(), MatchKind::Whole)]
        );
        assert!(kinds(&explained, "the").iter().all(|(w, _)| w != "them"));
    }

    #[test]
    fn a_keyword_matching_nothing_says_so() {
        let (index, words) = words_of("List pets.", "GET /pets", "Petstore");
        let explained = explain(&index, "list_pets", &words, &query_keywords("invoice"));
        assert_eq!(explained.len(), 1);
        assert!(explained[0].matches.is_empty());
    }
}
