//! The console's search playground, its "as a caller" view and its
//! listen stream.
//!
//! The playground runs `search_tools` itself (`tools::search::run`, the
//! code agents reach, its cache included) for the caller it is told to
//! be, so its page is the page that caller gets; then it explains each
//! result: the keywords' matches per field (`sezzlee_search::explain`),
//! the tool's place under keywords alone and under meaning alone, and
//! the meaning score when a model ranks. Console searches are not counted
//! as tool calls nor held to callers' rates: they are the operator's.
//!
//! A pasted credential (`as`: an `Authorization` value and API-key
//! headers) becomes a caller the way a request's headers do
//! (`Authenticator::caller`); it lives for the request and is never
//! logged or kept.

use super::access::ConsoleCaller;
use crate::gateway::Gateway;
use crate::reply::json_response;
use crate::tools;
use crate::visibility::{Caller, View};
use axum::Json;
use axum::extract::State;
use axum::extract::rejection::JsonRejection;
use axum::http::{Extensions, HeaderMap, HeaderName, HeaderValue, StatusCode};
use axum::response::Response;
use serde_json::{Value, json};
use sezzlee_search::query_keywords;
use sezzlee_semantic as semantic;
use std::sync::Arc;

/// How deep the keyword and meaning rankings are read to place a result.
const EXPLAIN_DEPTH: usize = 1_000;
/// Tool names listed per view in the "as a caller" answer.
const NAMES_PER_VIEW: usize = 500;
/// Headers a pasted credential may set at most.
const MAX_PASTED_HEADERS: usize = 8;

/// The credential the console was asked to act as.
#[derive(serde::Deserialize, Default)]
pub struct AsCaller {
    /// An `Authorization` header value (`Bearer …`).
    authorization: Option<String>,
    /// Other headers (API keys), by name.
    #[serde(default)]
    headers: std::collections::BTreeMap<String, String>,
}

/// `POST /console/api/search` and `/caller` bodies.
#[derive(serde::Deserialize, Default)]
pub struct SearchBody {
    #[serde(default)]
    query: Option<String>,
    #[serde(default)]
    limit: Option<Value>,
    #[serde(default)]
    tags: Option<Value>,
    /// Act as this caller; absent: as the console's own caller.
    #[serde(rename = "as")]
    as_caller: Option<AsCaller>,
}

fn refused(status: StatusCode, message: String) -> Response {
    json_response(status, &json!({"error": "bad_request", "message": message}))
}

/// The console's own caller, as its gate judged it.
fn own_caller(extensions: &Extensions) -> Caller {
    extensions
        .get::<ConsoleCaller>()
        .map(|ConsoleCaller(caller)| caller.clone())
        // Every route here is behind the gate; without it, the caller
        // with no credential (who sees the least).
        .unwrap_or_else(|| Caller {
            rules_apply: true,
            ..Caller::default()
        })
}

/// The caller a body asks for: the pasted credential's, else the console's
/// own. `Err` when the pasted headers cannot be headers.
async fn caller_of(
    gateway: &Gateway,
    extensions: &Extensions,
    pasted: Option<&AsCaller>,
) -> Result<(Caller, bool), String> {
    let Some(pasted) = pasted else {
        return Ok((own_caller(extensions), false));
    };
    if pasted.headers.len() > MAX_PASTED_HEADERS {
        return Err(format!(
            "at most {MAX_PASTED_HEADERS} headers may be pasted"
        ));
    }
    let mut headers = HeaderMap::new();
    let mut put = |name: &str, value: &str| -> Result<(), String> {
        let name = HeaderName::from_bytes(name.trim().as_bytes())
            .map_err(|_| format!("'{name}' is not a header name"))?;
        let value = HeaderValue::from_str(value.trim())
            .map_err(|_| format!("the value given for {name} is not a header value"))?;
        headers.insert(name, value);
        Ok(())
    };
    if let Some(authorization) = pasted
        .authorization
        .as_deref()
        .filter(|a| !a.trim().is_empty())
    {
        put("authorization", authorization)?;
    }
    for (name, value) in &pasted.headers {
        if !value.trim().is_empty() {
            put(name, value)?;
        }
    }
    // As the MCP endpoint makes a caller: the headers too, which schemes
    // the gateway cannot judge (HTTP basic, unknown API keys, cookies)
    // read.
    let mut caller = gateway.auth.caller(&headers).await;
    caller.headers = headers;
    Ok((caller, true))
}

/// The body of a search or caller request and the caller it asks for
/// (`always_pasted`: an absent `as` is a caller with no credential, not
/// the console's own), or the refusal of a body or pasted header that
/// cannot be one.
async fn body_and_caller(
    gateway: &Gateway,
    extensions: &Extensions,
    body: Result<Json<SearchBody>, JsonRejection>,
    always_pasted: bool,
) -> Result<(SearchBody, Caller, bool), Response> {
    let mut body = match body {
        Ok(Json(body)) => body,
        Err(rejection) => return Err(refused(StatusCode::BAD_REQUEST, rejection.body_text())),
    };
    if always_pasted && body.as_caller.is_none() {
        body.as_caller = Some(AsCaller::default());
    }
    match caller_of(gateway, extensions, body.as_caller.as_ref()).await {
        Ok((caller, pasted)) => Ok((body, caller, pasted)),
        Err(message) => Err(refused(StatusCode::BAD_REQUEST, message)),
    }
}

/// Who a caller is, as the console shows it (never the credential).
fn describe(caller: &Caller, pasted: bool) -> Value {
    let credentials = &caller.credentials;
    let key = credentials.api_key.as_ref();
    let token = credentials.token();
    json!({
        "pasted": pasted,
        "credential": format!("{:?}", credentials.credential()).to_lowercase(),
        "rulesApply": caller.rules_apply,
        "subject": credentials.subject(),
        "scopes": token.map(|t| t.scopes.clone()).or(key.map(|k| k.scopes.clone())),
        "roles": token.map(|t| t.roles.clone()).or(key.map(|k| k.roles.clone())),
    })
}

/// `POST /console/api/search`: `search_tools`' page for the caller asked
/// for, and why each result ranked where it did.
pub async fn search(
    State(gateway): State<Arc<Gateway>>,
    extensions: Extensions,
    body: Result<Json<SearchBody>, JsonRejection>,
) -> Response {
    let (body, caller, pasted) = match body_and_caller(&gateway, &extensions, body, false).await {
        Ok(found) => found,
        Err(refusal) => return refusal,
    };
    let query = body.query.clone().unwrap_or_default();
    let mut arguments = json!({"query": query});
    if let Some(limit) = &body.limit {
        arguments["limit"] = limit.clone();
    }
    if let Some(tags) = &body.tags {
        arguments["tags"] = tags.clone();
    }
    let served = gateway.store.current();
    let context = gateway.tool_context(&served, &caller);
    let answer = tools::search::run(&context, &arguments);
    let is_error = answer.is_error();
    let text = answer.into_text();
    let page: Value = serde_json::from_str(&text).unwrap_or(Value::String(text));
    let names: Vec<&str> = page
        .get("results")
        .and_then(Value::as_array)
        .map(|results| {
            results
                .iter()
                .filter_map(|r| r.get("name").and_then(Value::as_str))
                .collect()
        })
        .unwrap_or_default();
    let explained = explain(&served, &query, &names);
    json_response(
        StatusCode::OK,
        &json!({
            "generation": served.generation,
            "caller": describe(&caller, pasted),
            "arguments": arguments,
            "isError": is_error,
            "page": page,
            "explained": explained.results,
            "meaning": explained.meaning,
        }),
    )
}

/// Why each result ranked, and how meaning weighed.
struct Explained {
    results: Vec<Value>,
    meaning: Value,
}

/// For each named tool: its keywords' matches, its place under keywords
/// alone and meaning alone (among every tool), and its meaning score.
fn explain(served: &crate::store::Snapshot, query: &str, names: &[&str]) -> Explained {
    let catalog = &served.catalog;
    let keywords = query_keywords(query);
    let vectors = served
        .per_tool
        .vectors
        .as_ref()
        .map(|slot| slot.load_full());
    let sentence = semantic::query_sentence(query);
    let ranking = semantic::rank_explained(
        catalog.search_index(),
        vectors.as_deref(),
        semantic::Query {
            words: &keywords,
            sentence: &sentence,
        },
        EXPLAIN_DEPTH,
        |_| true,
        None,
    );
    let meaning_ranked = ranking.weight > 0.0;
    let results = names
        .iter()
        .filter_map(|name| {
            let position = catalog.position(name)?;
            let tool = &catalog.tools()[position];
            let keyword_rank = ranking.lexical.iter().position(|&i| i == position);
            let meaning_rank = ranking.semantic.iter().position(|&(i, _)| i == position);
            let score = ranking
                .vector
                .as_ref()
                .zip(vectors.as_ref())
                .and_then(|(vector, vectors)| vectors.cosine(vector, position));
            let matches: Vec<Value> =
                sezzlee_search::explain(catalog.search_index(), &tool.name, &tool.words, &keywords)
                    .iter()
                    .map(|k| {
                        json!({
                            "keyword": k.keyword,
                            "matches": k.matches.iter().map(|m| json!({
                                "word": m.word, "kind": m.kind.as_str(), "fields": m.fields,
                            })).collect::<Vec<_>>(),
                        })
                    })
                    .collect();
            Some(json!({
                "name": tool.name,
                "keywordRank": keyword_rank.map(|r| r + 1),
                "meaningRank": meaning_rank.map(|r| r + 1),
                "meaningScore": score,
                "keywords": matches,
                "tags": tool.tags,
            }))
        })
        .collect();
    let model = vectors.as_ref().map(
        |v| json!({"kind": v.model().kind_name(), "embedded": v.embedded(), "tools": v.len()}),
    );
    Explained {
        results,
        meaning: json!({
            "model": model,
            "ranked": meaning_ranked,
            "weight": ranking.weight,
            "keywords": keywords,
        }),
    }
}

/// `POST /console/api/caller`: what the pasted caller sees of the
/// catalog (visible, hidden, visible with `authUncertain`), with the
/// first names of each.
pub async fn caller(
    State(gateway): State<Arc<Gateway>>,
    extensions: Extensions,
    body: Result<Json<SearchBody>, JsonRejection>,
) -> Response {
    let (_, caller, _) = match body_and_caller(&gateway, &extensions, body, true).await {
        Ok(found) => found,
        Err(refusal) => return refusal,
    };
    let served = gateway.store.current();
    let per_tool = &served.per_tool;
    let views: Vec<View> = per_tool
        .rules
        .iter()
        .map(|rule| caller.view_rule(rule))
        .collect();
    let (mut visible, mut hidden, mut uncertain) = (Vec::new(), Vec::new(), Vec::new());
    let mut counts = [0usize; 3];
    for (i, tool) in served.catalog.tools().iter().enumerate() {
        let view = per_tool.rule_of.get(i).and_then(|&r| views.get(r)).copied();
        let (list, slot) = match view {
            Some(View::Visible { uncertain: false }) => (&mut visible, 0),
            Some(View::Visible { uncertain: true }) => (&mut uncertain, 2),
            _ => (&mut hidden, 1),
        };
        counts[slot] += 1;
        if list.len() < NAMES_PER_VIEW {
            list.push(tool.name.as_str());
        }
    }
    json_response(
        StatusCode::OK,
        &json!({
            "generation": served.generation,
            "caller": describe(&caller, true),
            "counts": {"visible": counts[0], "hidden": counts[1], "authUncertain": counts[2]},
            "visible": visible,
            "hidden": hidden,
            "authUncertain": uncertain,
        }),
    )
}

/// `POST /console/api/listen`: a `subscriptions/listen` stream for the
/// console's live pages (the same stream, messages and limits as the MCP
/// endpoint's).
pub async fn listen(
    State(gateway): State<Arc<Gateway>>,
    extensions: Extensions,
    body: Result<Json<Value>, JsonRejection>,
) -> Response {
    let request = match body {
        Ok(Json(request)) => request,
        Err(rejection) => return refused(StatusCode::BAD_REQUEST, rejection.body_text()),
    };
    if request.get("method").and_then(Value::as_str) != Some("subscriptions/listen") {
        return refused(
            StatusCode::BAD_REQUEST,
            "this route takes a subscriptions/listen request".to_string(),
        );
    }
    let caller = own_caller(&extensions);
    let id = request.get("id").cloned().unwrap_or(Value::Null);
    let params = request.get("params").cloned().unwrap_or(Value::Null);
    match crate::mcp::listen::open(&gateway, id.clone(), &params, &caller) {
        Ok(subscription) => crate::mcp::http::sse_response(subscription),
        Err(reply) => json_response(reply.status, &reply.body(Some(&id))),
    }
}
