//! The console's read-only JSON: the served catalog, its documents and
//! tools, the change and reload histories, and the traffic. Each answer
//! is read from the snapshot served now and the gateway's own histories;
//! nothing here computes what the tools do differently (a tool's
//! definition is `load_tool`'s answer, the changes are `/changes`').
//!
//! Nothing secret leaves: a sidecar's static headers are named, never
//! valued; a backend credential is its mode and endpoint, never a secret
//! or the variable that holds one.

use crate::gateway::Gateway;
use crate::reply::json_response;
use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::Response;
use serde_json::{Value, json};
use sezzlee_catalog::{Severity, Target, Tool};
use std::collections::HashMap;
use std::sync::Arc;

/// Tools a document's page lists at most (the count says how many).
const TOOLS_PER_DOCUMENT: usize = 5_000;

fn not_found(message: String) -> Response {
    json_response(
        StatusCode::NOT_FOUND,
        &json!({"error": "not_found", "message": message}),
    )
}

fn bad_request(message: &str) -> Response {
    json_response(
        StatusCode::BAD_REQUEST,
        &json!({"error": "bad_request", "message": message}),
    )
}

/// `GET /console/api/overview`.
pub async fn overview(State(gateway): State<Arc<Gateway>>) -> Response {
    let served = gateway.store.current();
    let catalog = &served.catalog;
    let operations: usize = catalog.documents.iter().map(|d| d.operations).sum();
    let search_model = crate::status::search_model(&gateway, &served);
    let reloads: Vec<Value> = gateway
        .reloads
        .newest_first()
        .iter()
        .map(|reload| reload.to_value())
        .collect();
    json_response(
        StatusCode::OK,
        &json!({
            "version": crate::status::VERSION,
            "uptimeSeconds": gateway.started.elapsed().as_secs(),
            "generation": served.generation,
            "tools": catalog.tools().len(),
            "documents": catalog.documents.len(),
            "operations": operations,
            "errors": catalog.errors(),
            "warnings": catalog.warnings(),
            "upstreams": without_secrets(gateway.upstreams.status()),
            "reloads": reloads,
            "listenStreams": gateway.streams.count(),
            "connections": {"open": *gateway.connections.borrow(), "max": gateway.settings.max_connections},
            "searchModel": search_model,
            "auth": {"configured": gateway.auth.is_configured()},
        }),
    )
}

/// The upstreams' status with each HTTP server's URL cut to its scheme,
/// host and path: a query or user info may carry a credential.
fn without_secrets(mut upstreams: Value) -> Value {
    for server in upstreams.as_array_mut().into_iter().flatten() {
        let transport = &mut server["transport"];
        if let Some(url) = transport.get("url").and_then(Value::as_str) {
            let shown = reqwest::Url::parse(url).map_or_else(
                |_| "(not a URL)".to_string(),
                |parsed| {
                    format!(
                        "{}://{}{}",
                        parsed.scheme(),
                        parsed.host_str().unwrap_or_default(),
                        parsed.port().map(|p| format!(":{p}")).unwrap_or_default()
                    ) + parsed.path()
                },
            );
            transport["url"] = json!(shown);
        }
    }
    upstreams
}

/// `?file=`.
#[derive(serde::Deserialize)]
pub struct FileQuery {
    file: Option<String>,
}

/// `GET /console/api/documents`: every document with its counts; with
/// `?file=`, that document's tools, diagnostics and sidecar in effect.
pub async fn documents(
    State(gateway): State<Arc<Gateway>>,
    Query(query): Query<FileQuery>,
) -> Response {
    let served = gateway.store.current();
    let catalog = &served.catalog;
    let Some(file) = query.file else {
        // Errors and warnings per file, counted in one pass (the public
        // directory: 2,639 documents, tens of thousands of diagnostics).
        let mut per_file: HashMap<&str, (usize, usize)> = HashMap::new();
        for x in catalog.diagnostics.iter() {
            let counts = per_file.entry(x.file.as_str()).or_default();
            match x.severity {
                Severity::Error => counts.0 += 1,
                _ => counts.1 += 1,
            }
        }
        let documents: Vec<Value> = catalog
            .documents
            .iter()
            .map(|d| {
                let (errors, warnings) = per_file.remove(&*d.file).unwrap_or_default();
                json!({
                    "file": &*d.file, "namespace": d.namespace, "title": d.title,
                    "operations": d.operations, "tools": d.tools,
                    "errors": errors, "warnings": warnings,
                })
            })
            .collect();
        // Files that publish nothing (refused, shared fragments) still
        // have diagnostics worth seeing: those left.
        let mut others: Vec<&str> = per_file.into_keys().collect();
        others.sort_unstable();
        return json_response(
            StatusCode::OK,
            &json!({"generation": served.generation, "documents": documents, "otherFiles": others}),
        );
    };
    let summary = catalog.documents.iter().find(|d| *d.file == *file);
    let diagnostics: Vec<Value> = catalog
        .diagnostics
        .iter()
        .filter(|x| x.file == file)
        .map(|x| {
            json!({
                "code": x.code,
                "severity": match x.severity { Severity::Error => "error", _ => "warning" },
                "pointer": x.pointer,
                "message": x.message,
            })
        })
        .collect();
    if summary.is_none() && diagnostics.is_empty() {
        return not_found(format!(
            "no document or file '{file}' in the served catalog"
        ));
    }
    let tools: Vec<&Tool> = catalog
        .tools()
        .iter()
        .filter(|t| *t.document == *file)
        .collect();
    let listed: Vec<Value> = tools
        .iter()
        .take(TOOLS_PER_DOCUMENT)
        .map(|t| {
            json!({
                "name": t.name, "version": t.version, "route": t.route,
                "compacted": t.compaction.is_compacted(),
            })
        })
        .collect();
    let compacted = tools.iter().filter(|t| t.compaction.is_compacted()).count();
    let upstream = tools
        .iter()
        .any(|t| matches!(t.target, Target::Upstream(_)));
    json_response(
        StatusCode::OK,
        &json!({
            "generation": served.generation,
            "file": file,
            "namespace": summary.map(|d| d.namespace.clone()),
            "title": summary.map(|d| d.title.clone()),
            "operations": summary.map_or(0, |d| d.operations),
            "toolCount": tools.len(),
            "tools": listed,
            "compacted": compacted,
            "diagnostics": diagnostics,
            "sidecar": tools.first().and_then(|t| backend_in_effect(t)),
            "upstream": upstream,
        }),
    )
}

/// What a tool's calls are sent with, without a secret: the base URL,
/// time-out, the names of static headers (values may be or name secrets),
/// the caller headers passed on, the credential's mode and token
/// endpoint, and the quota.
fn backend_in_effect(tool: &Tool) -> Option<Value> {
    let operation = tool.operation()?;
    let backend = &operation.backend;
    Some(json!({
        "baseUrl": backend.base_url.as_ref().or(operation.base_url.as_ref()),
        "timeoutMs": backend.timeout_ms,
        "staticHeaders": backend.headers.keys().collect::<Vec<_>>(),
        "forwardHeaders": backend.forward_headers,
        "auth": backend.auth.as_ref().map(|auth| json!({
            "mode": format!("{:?}", auth.mode),
            "tokenUrl": auth.token_url,
            "audience": auth.audience,
        })),
        "quota": backend.quota.as_ref().map(|q| json!({
            "requests": q.requests, "perSeconds": q.per_seconds, "concurrent": q.concurrent,
        })),
    }))
}

/// `?name=`.
#[derive(serde::Deserialize)]
pub struct NameQuery {
    name: Option<String>,
}

/// `GET /console/api/tool?name=`: the definition exactly as `load_tool`
/// gives it to a caller who sees it, and the kept generations that
/// added, changed or removed it.
pub async fn tool(State(gateway): State<Arc<Gateway>>, Query(query): Query<NameQuery>) -> Response {
    let Some(name) = query.name.filter(|n| !n.is_empty()) else {
        return bad_request("name is required: ?name=TOOL");
    };
    let served = gateway.store.current();
    let (changes, _) = gateway.changes.since(0);
    let history: Vec<Value> = changes
        .iter()
        .filter_map(|change| {
            let kind = if change.added.iter().any(|(n, _)| *n == name) {
                "added"
            } else if change.removed.iter().any(|(n, _)| *n == name) {
                "removed"
            } else if change.changed.iter().any(|(n, _, _)| *n == name) {
                "changed"
            } else {
                return None;
            };
            Some(json!({
                "generation": change.generation,
                "at": httpdate::fmt_http_date(change.at),
                "kind": kind,
                "diff": change.definitions_of(&name).is_some(),
            }))
        })
        .collect();
    let Some(tool) = served.catalog.tool(&name) else {
        return json_response(
            StatusCode::NOT_FOUND,
            &json!({
                "error": "not_found",
                "message": format!("no tool '{name}' in generation {}", served.generation),
                "generations": history,
            }),
        );
    };
    let compaction = tool.compaction;
    json_response(
        StatusCode::OK,
        &json!({
            "generation": served.generation,
            "name": tool.name,
            "version": tool.version,
            "document": &*tool.document,
            "route": tool.route,
            "upstream": matches!(tool.target, Target::Upstream(_)),
            "definition": crate::tools::load::answer(tool, false),
            "compaction": {
                "outputDepth": compaction.output_depth,
                "inputDepth": compaction.input_depth,
                "textCut": compaction.text.is_some(),
            },
            "generations": history,
        }),
    )
}

/// `?since=`.
#[derive(serde::Deserialize)]
pub struct SinceQuery {
    since: Option<u64>,
}

/// `GET /console/api/changes?since=`: `/changes`' entries, newest first,
/// each saying which changed tools a diff can be shown for.
pub async fn changes(
    State(gateway): State<Arc<Gateway>>,
    Query(query): Query<SinceQuery>,
) -> Response {
    let since = query.since.unwrap_or(0);
    let (changes, truncated) = gateway.changes.since(since);
    let entries: Vec<Value> = changes
        .iter()
        .rev()
        .map(|change| {
            let mut value = change.to_value();
            value["diffs"] = json!(change.names_with_definitions());
            value
        })
        .collect();
    json_response(
        StatusCode::OK,
        &json!({
            "generation": gateway.store.current().generation,
            "truncated": truncated,
            "changes": entries,
        }),
    )
}

/// `?generation=&name=`.
#[derive(serde::Deserialize)]
pub struct DiffQuery {
    generation: Option<u64>,
    name: Option<String>,
}

/// `GET /console/api/diff?generation=&name=`: the changed tool's
/// definition before and after that generation, and a unified diff.
pub async fn diff(State(gateway): State<Arc<Gateway>>, Query(query): Query<DiffQuery>) -> Response {
    let (Some(generation), Some(name)) = (query.generation, query.name) else {
        return bad_request("generation and name are required: ?generation=N&name=TOOL");
    };
    let Some(change) = gateway.changes.entry(generation) else {
        return not_found(format!("generation {generation} is not kept"));
    };
    let Some(definitions) = change.definitions_of(&name) else {
        return not_found(format!(
            "generation {generation} keeps no definitions of '{name}' (only the first changed \
             tools of the newest generations are kept)"
        ));
    };
    let versions = change
        .changed
        .iter()
        .find(|(n, _, _)| *n == name)
        .map(|(_, before, now)| (before.clone(), now.clone()));
    // Lines end with a newline, so the diff does not say the last has none.
    let (before, after) = definitions.texts();
    let (before, after) = (format!("{before}\n"), format!("{after}\n"));
    let unified = similar::TextDiff::from_lines(&before, &after)
        .unified_diff()
        .context_radius(3)
        .header("before", "after")
        .to_string();
    json_response(
        StatusCode::OK,
        &json!({
            "generation": generation,
            "name": name,
            "versionBefore": versions.as_ref().map(|v| &v.0),
            "version": versions.as_ref().map(|v| &v.1),
            "diff": unified,
        }),
    )
}

/// `GET /console/api/traffic`: the gateway's own counters and latency
/// histograms (those `/metrics` shows), as JSON.
pub async fn traffic(State(gateway): State<Arc<Gateway>>) -> Response {
    json_response(StatusCode::OK, &gateway.metrics.traffic())
}
