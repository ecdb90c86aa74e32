//! search_tools: ranked compact cards (or full definitions) of the tools
//! the caller may see.
//!
//! Keywords rank and never filter; `tags` filter as a whole-tag
//! conjunction; `total` and the tag vocabulary describe the caller's
//! visible catalog, not the page, so an agent can widen without another
//! exploratory call.

use super::cards::push_card;
use super::envelope::{ToolAnswer, invalid_type, within_budget};
use super::search_cache::SearchKey;
use super::{Context, load};
use crate::visibility::View;
use serde_json::{Value, json};
use sezzlee_json::{Escaped, LiteralBuilder};
use sezzlee_search::{fold, query_keywords};
use sezzlee_semantic as semantic;

pub const DEFAULT_LIMIT: usize = 20;
pub const MAX_LIMIT: usize = 50;
/// Above this many distinct tags the vocabulary is omitted, not shortened.
pub const MAX_VOCABULARY: usize = 200;

/// Parsed, coerced arguments.
#[derive(Debug, PartialEq)]
pub struct SearchRequest {
    pub query: String,
    pub limit: usize,
    pub schema_detail: bool,
    /// Folded; empty filters nothing.
    pub tags: Vec<String>,
}

/// Coerces the arguments per the contract, or the `invalid_type` answer.
pub fn parse(arguments: &Value) -> Result<SearchRequest, ToolAnswer> {
    let get = |key: &str| arguments.get(key).filter(|v| !v.is_null());
    let query = match get("query") {
        None => String::new(),
        Some(Value::String(q)) => q.clone(),
        Some(other) => return Err(invalid_type("query", "a string", other)),
    };
    let limit = match get("limit") {
        None => DEFAULT_LIMIT,
        Some(Value::Number(n)) => {
            let value = n.as_f64().unwrap_or(DEFAULT_LIMIT as f64).trunc();
            value.clamp(1.0, MAX_LIMIT as f64) as usize
        }
        Some(other) => return Err(invalid_type("limit", "an integer", other)),
    };
    let schema_detail = get("detail").and_then(Value::as_str) == Some("schema");
    let tags = match get("tags") {
        None => Vec::new(),
        Some(Value::Array(items)) => {
            let mut tags = Vec::with_capacity(items.len());
            for item in items {
                match item {
                    Value::String(tag) => tags.push(fold(tag)),
                    other => return Err(invalid_type("tags", "an array of strings", other)),
                }
            }
            tags
        }
        Some(other) => return Err(invalid_type("tags", "an array of strings", other)),
    };
    Ok(SearchRequest {
        query,
        limit,
        schema_detail,
        tags,
    })
}

/// A page's `,"tags":[…]` member for `vocabulary` (sorted, deduplicated),
/// escaped as it stands in the page's text block; nothing when the
/// vocabulary is empty or over [`MAX_VOCABULARY`].
pub fn escaped_tags_member<S: serde::Serialize>(vocabulary: &[S]) -> Escaped {
    if vocabulary.is_empty() || vocabulary.len() > MAX_VOCABULARY {
        return Escaped::of("");
    }
    Escaped::of(&format!(",\"tags\":{}", json!(vocabulary)))
}

pub fn run(context: &Context, arguments: &Value) -> ToolAnswer {
    let request = match parse(arguments) {
        Ok(request) => request,
        Err(answer) => return answer,
    };
    let served = context.snapshot;
    let per_tool = &served.per_tool;
    // Rules are evaluated once per distinct rule, not once per tool; the
    // per-rule views are also what the cache knows the caller by.
    let rule_views: Option<Vec<View>> = (!context.caller.sees_everything(per_tool.has_policy())
        && !per_tool.all_public())
    .then(|| {
        per_tool
            .rules
            .iter()
            .map(|rule| context.caller.view_rule(rule))
            .collect()
    });
    let mut tags = request.tags.clone();
    tags.sort();
    tags.dedup();
    let keywords = query_keywords(&request.query);
    let vectors = per_tool.vectors.as_ref().map(|slot| slot.load_full());
    let meaning = (semantic::weight_of_meaning(vectors.as_deref(), &keywords) > 0.0).then(|| {
        let embedded = vectors.as_ref().map_or(0, |v| v.embedded());
        (semantic::query_sentence(&request.query), embedded)
    });
    let key = SearchKey {
        keywords,
        meaning,
        limit: request.limit,
        schema_detail: request.schema_detail,
        tags,
        views: rule_views,
        budget: context.budget,
    };
    if let Some(literal) = served.search_cache.get(&key) {
        return ToolAnswer::ok_escaped(literal);
    }
    let answer = rank(context, &request, &key, vectors.as_deref());
    if let Some(literal) = answer.literal().filter(|_| !answer.is_error()) {
        served.search_cache.offer(key, literal.clone());
    }
    answer
}

/// Ranks and builds the answer for `request`: the work the cache saves.
fn rank(
    context: &Context,
    request: &SearchRequest,
    key: &SearchKey,
    vectors: Option<&sezzlee_semantic::ToolVectors>,
) -> ToolAnswer {
    let served = context.snapshot;
    let tools = served.catalog.tools();
    let per_tool = &served.per_tool;
    let views: Option<Vec<View>> = key
        .views
        .as_ref()
        .map(|by_rule| per_tool.rule_of.iter().map(|&r| by_rule[r]).collect());
    let visible = |i: usize| views.as_ref().is_none_or(|v| v[i] != View::Hidden);
    let tagged = |i: usize| {
        request
            .tags
            .iter()
            .all(|wanted| per_tool.folded_tags[i].iter().any(|t| t == wanted))
    };
    let include = |i: usize| visible(i) && tagged(i);
    let total = if views.is_none() && request.tags.is_empty() {
        tools.len()
    } else {
        (0..tools.len()).filter(|&i| include(i)).count()
    };
    let sentence = key
        .meaning
        .as_ref()
        .map_or("", |(sentence, _)| sentence.as_str());
    let query = semantic::Query {
        words: &key.keywords,
        sentence,
    };
    let ranked = semantic::rank(
        served.catalog.search_index(),
        vectors,
        query,
        request.limit,
        include,
        Some(&served.search_cache),
    );
    // The whole catalog's vocabulary is served as per_tool (escaped once
    // per catalog); only a restricted view needs its own.
    let restricted_tags: Escaped;
    let tags_member = match &views {
        None => &per_tool.tags_member,
        Some(_) => {
            let mut tags: Vec<&String> = (0..tools.len())
                .filter(|&i| visible(i))
                .flat_map(|i| per_tool.folded_tags[i].iter())
                .collect();
            tags.sort();
            tags.dedup();
            restricted_tags = escaped_tags_member(&tags);
            &restricted_tags
        }
    };
    // The page is assembled as the escaped text it is in the message:
    // cards were serialised and escaped once per catalog; only a
    // schema-detail result is serialised and escaped here. Sized once
    // (cards' lengths are known), not grown: with glibc malloc every large
    // allocation consolidates its free lists.
    let cards_len: usize = if request.schema_detail {
        ranked.len() * 1024
    } else {
        ranked.iter().map(|&i| per_tool.cards[i].len() + 32).sum()
    };
    let mut page = LiteralBuilder::with_capacity(256 + cards_len);
    page.push_text("{\"total\":");
    page.push_text(&total.to_string());
    page.push_escaped(tags_member);
    page.push_text(",\"results\":[");
    for (n, i) in ranked.into_iter().enumerate() {
        if n > 0 {
            page.push_text(",");
        }
        let uncertain = matches!(
            views.as_ref().map(|v| v[i]),
            Some(View::Visible { uncertain: true })
        );
        if request.schema_detail {
            page.push_text(&load::answer(&tools[i], uncertain).to_string());
        } else {
            push_card(&mut page, &per_tool.cards[i], uncertain);
        }
    }
    page.push_text("]}");
    within_budget(
        ToolAnswer::ok_escaped(page.finish()),
        context.budget,
        "Ask for less: use detail \"card\" instead of \"schema\", a narrower query (or tags), or a smaller limit.",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_are_coerced_per_the_contract() {
        let defaults = parse(&json!({})).unwrap();
        assert_eq!(
            defaults,
            SearchRequest {
                query: String::new(),
                limit: 20,
                schema_detail: false,
                tags: vec![]
            }
        );
        assert_eq!(parse(&json!({"limit": 0})).unwrap().limit, 1);
        assert_eq!(parse(&json!({"limit": 500})).unwrap().limit, 50);
        assert_eq!(parse(&json!({"limit": 7.9})).unwrap().limit, 7);
        assert_eq!(parse(&json!({"limit": -3})).unwrap().limit, 1);
        assert!(!parse(&json!({"detail": "Schema"})).unwrap().schema_detail);
        assert!(!parse(&json!({"detail": 3})).unwrap().schema_detail);
        assert!(parse(&json!({"detail": "schema"})).unwrap().schema_detail);
        assert_eq!(
            parse(&json!({"tags": ["Facturación", "Order Notes"]}))
                .unwrap()
                .tags,
            ["facturacion", "order notes"]
        );
        assert_eq!(
            parse(&json!({"tags": null, "query": null})).unwrap(),
            defaults
        );
        for bad in [
            json!({"query": 5}),
            json!({"limit": "5"}),
            json!({"tags": "orders"}),
            json!({"tags": [1]}),
        ] {
            assert_eq!(
                parse(&bad).unwrap_err().code(),
                Some("invalid_type"),
                "{bad}"
            );
        }
    }
}
