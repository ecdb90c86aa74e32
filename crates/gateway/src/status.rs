//! `GET /status`, `GET /metrics` and `GET /changes`: what an operator needs to see.
//!
//! Status is JSON for people and scripts (what is running: version, build,
//! uptime, the address bound and the catalogs folder; then generation,
//! documents, tool counts, diagnostics, the last reload, open listen
//! streams, the async runtimes' workers and alive tasks); metrics are the
//! same numbers in Prometheus text format, with the build, the process's
//! own figures (`crate::process`) and the request counters
//! (`crate::metrics`). Neither ever shows a secret, but both show the
//! operator's business (file names, diagnostics, the auth setup, traffic
//! per tool): with `[auth]` configured they answer only a credential with
//! the admin scope ([`admin_only`]); without it they are as open as the
//! MCP endpoint.

use crate::auth::resource;
use crate::gateway::Gateway;
use crate::reply::json_response;
use axum::Json;
use axum::extract::{Query, Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use sezzlee_catalog::Severity;
use std::fmt::Write;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::UNIX_EPOCH;

/// The version of the gateway (the workspace's).
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
/// The commit the binary was built from, when whoever built it said so:
/// `SEZZLEE_BUILD_COMMIT` in `cargo build`'s environment (the container
/// image's build argument of that name). No build script asks git, which
/// a source tarball does not have. Empty is not said.
pub const COMMIT: Option<&str> = match option_env!("SEZZLEE_BUILD_COMMIT") {
    Some(commit) if !commit.is_empty() => Some(commit),
    _ => None,
};
/// The Cargo profile's kind: `debug` with debug assertions, else `release`.
pub const PROFILE: &str = if cfg!(debug_assertions) {
    "debug"
} else {
    "release"
};

/// Lets a request through to `/status` or `/metrics` only when the
/// caller may read them (`Authenticator::admin_access`); else `401` with
/// the MCP endpoint's challenge, or `403` for a verified caller without
/// the admin scope.
pub async fn admin_only(
    State(gateway): State<Arc<Gateway>>,
    headers: HeaderMap,
    request: Request,
    next: Next,
) -> Response {
    let caller = gateway.auth.caller(&headers).await;
    match gateway.auth.admin_access(&caller, &headers) {
        Ok(()) => next.run(request).await,
        Err(refusal) => resource::admin_refusal(&gateway.resource(), &headers, refusal),
    }
}

/// `GET /status`: the served catalog and the process, as JSON.
pub async fn status(State(gateway): State<Arc<Gateway>>) -> Response {
    let served = gateway.store.current();
    let catalog = &served.catalog;
    let loaded_at = served
        .loaded_at
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or_default();
    let documents: Vec<_> = catalog
        .documents
        .iter()
        .map(|d| json!({"file": &*d.file, "namespace": d.namespace, "operations": d.operations, "tools": d.tools}))
        .collect();
    let cache = served.search_cache.figures();
    let runtime = gateway.metrics.runtime_figures();
    let search_model = search_model(&gateway, &served);
    let listen = gateway
        .bound
        .get()
        .copied()
        .unwrap_or(gateway.settings.listen);
    // Absolute (against the working directory), not resolved: a
    // ConfigMap's symlinks stay as the operator named them.
    let catalogs = std::path::absolute(&gateway.settings.catalogs)
        .unwrap_or_else(|_| gateway.settings.catalogs.clone());
    json_response(
        StatusCode::OK,
        &json!({
            "version": VERSION,
            "build": {"commit": COMMIT, "profile": PROFILE},
            "uptimeSeconds": gateway.started.elapsed().as_millis() as f64 / 1000.0,
            "listen": listen.to_string(),
            "catalogs": catalogs.display().to_string(),
            "generation": served.generation,
            "tools": catalog.tools().len(),
            "documents": documents,
            "upstreams": gateway.upstreams.status(),
            "limits": gateway.flood_guard.add_status(gateway.limits.status()),
            "errors": catalog.errors(),
            "warnings": catalog.warnings(),
            "diagnostics": catalog.diagnostics,
            "lastReload": {"atUnixMs": loaded_at, "durationMs": served.build_duration.as_secs_f64() * 1000.0},
            "reloadFailures": gateway.metrics.reload_failures(),
            "listenStreams": gateway.streams.count(),
            "connections": {"open": *gateway.connections.borrow(), "max": gateway.settings.max_connections},
            "runtime": {"runtimes": runtime.runtimes, "workers": runtime.workers, "aliveTasks": runtime.alive_tasks},
            "auth": gateway.auth.status(),
            "searchModel": search_model,
            "searchCache": {
                "answers": cache.answers,
                "keywords": cache.keywords,
                "bytes": cache.bytes,
                "capacityBytes": cache.capacity_bytes,
                "hits": cache.hits,
                "misses": cache.misses,
            },
        }),
    )
}

/// Whether search ranks by meaning too, with which model (its files'
/// SHA-256), and what its tool vectors hold (`/status`' `searchModel`, the
/// console's Overview); `None` without a model.
pub(crate) fn search_model(gateway: &Gateway, served: &crate::store::Snapshot) -> Option<Value> {
    served
        .per_tool
        .vectors
        .as_ref()
        .zip(gateway.embedder.as_ref())
        .map(|(slot, embedder)| {
            let vectors = slot.load();
            let model = vectors.model();
            let files: serde_json::Map<String, Value> = model
                .file_digests()
                .iter()
                .map(|(file, digest)| (file.clone(), json!(digest)))
                .collect();
            let progress = &embedder.progress;
            let busy = progress.busy_ms.load(Ordering::Relaxed);
            let embedded_here = progress.embedded.load(Ordering::Relaxed);
            json!({
                "kind": model.kind_name(),
                "sha256": model.digest(),
                "files": files,
                "dimensions": model.dimensions(),
                "tools": vectors.len(),
                // Tools ranked by meaning now; the rest by keywords until
                // their vectors arrive.
                "embedded": vectors.embedded(),
                "pending": progress.pending.load(Ordering::Relaxed),
                "embeddedByThisProcess": embedded_here,
                "textsPerSecond": if busy == 0 { 0.0 } else { embedded_here as f64 * 1000.0 / busy as f64 },
                "vectorBytes": vectors.heap_bytes(),
                "cache": embedder.cache.as_ref().map(|cache| json!({
                    "folder": cache.folder().display().to_string(),
                    "vectors": cache.len(),
                    "bytes": cache.bytes(),
                })),
            })
        })
}

/// `GET /metrics`: the same figures and the calls, as Prometheus text.
pub async fn metrics(State(gateway): State<Arc<Gateway>>) -> Response {
    let served = gateway.store.current();
    let catalog = &served.catalog;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "# HELP sezzlee_build_info The gateway's version and build (commit when known, profile); always 1.\n# TYPE sezzlee_build_info gauge\nsezzlee_build_info{{version=\"{VERSION}\",commit=\"{}\",profile=\"{PROFILE}\"}} 1",
        crate::metrics::label_value(COMMIT.unwrap_or("unknown"))
    );
    let _ = writeln!(
        out,
        "# HELP sezzlee_uptime_seconds Seconds since the gateway began loading its catalog.\n# TYPE sezzlee_uptime_seconds gauge\nsezzlee_uptime_seconds {}",
        gateway.started.elapsed().as_secs_f64()
    );
    crate::process::figures().write(&mut out);
    let runtime = gateway.metrics.runtime_figures();
    let cache = served.search_cache.figures();
    for (name, help, value) in [
        (
            "sezzlee_catalog_generation",
            "Catalog generation served (starts at 0 per process).",
            served.generation.to_string(),
        ),
        (
            "sezzlee_catalog_tools",
            "Tools in the served catalog.",
            catalog.tools().len().to_string(),
        ),
        (
            "sezzlee_catalog_documents",
            "Documents in the served catalog.",
            catalog.documents.len().to_string(),
        ),
        (
            "sezzlee_catalog_build_seconds",
            "Duration of the last catalog build.",
            served.build_duration.as_secs_f64().to_string(),
        ),
        (
            "sezzlee_listen_streams",
            "Open subscriptions/listen streams.",
            gateway.streams.count().to_string(),
        ),
        (
            "sezzlee_connections_open",
            "Connections open (listen streams included).",
            gateway.connections.borrow().to_string(),
        ),
        (
            "sezzlee_connections_max",
            "Most connections open at once (max_connections); at it no more are accepted until one closes.",
            gateway.settings.max_connections.to_string(),
        ),
        (
            "sezzlee_runtime_workers",
            "Worker threads of the async runtimes counted (sezzlee_runtimes).",
            runtime.workers.to_string(),
        ),
        (
            "sezzlee_runtime_alive_tasks",
            "Async tasks alive in the runtimes counted: one per open connection (listen streams included), pooled backend connections, background tasks.",
            runtime.alive_tasks.to_string(),
        ),
        (
            "sezzlee_runtimes",
            "Async runtimes whose workers and tasks are counted.",
            runtime.runtimes.to_string(),
        ),
        (
            "sezzlee_search_cache_answers",
            "search_tools answers cached for the served catalog.",
            cache.answers.to_string(),
        ),
        (
            "sezzlee_search_cache_keywords",
            "Common keywords whose effect on the scores is cached for the served catalog.",
            cache.keywords.to_string(),
        ),
        (
            "sezzlee_search_cache_bytes",
            "Bytes held by the search cache of the served catalog.",
            cache.bytes.to_string(),
        ),
    ] {
        let _ = writeln!(
            out,
            "# HELP {name} {help}\n# TYPE {name} gauge\n{name} {value}"
        );
    }
    // Counted per catalog generation: they start again at 0 on reload,
    // which Prometheus' rate() treats as a counter reset.
    for (name, help, value) in [
        (
            "sezzlee_search_cache_hits_total",
            "search_tools calls answered from the cache since the served catalog was loaded.",
            cache.hits,
        ),
        (
            "sezzlee_search_cache_misses_total",
            "search_tools calls ranked anew since the served catalog was loaded.",
            cache.misses,
        ),
    ] {
        let _ = writeln!(
            out,
            "# HELP {name} {help}\n# TYPE {name} counter\n{name} {value}"
        );
    }
    let errors = catalog
        .diagnostics
        .iter()
        .filter(|d| d.severity == Severity::Error)
        .count();
    let warnings = catalog.diagnostics.len() - errors;
    let _ = writeln!(
        out,
        "# HELP sezzlee_catalog_diagnostics Diagnostics of the served catalog.\n# TYPE sezzlee_catalog_diagnostics gauge\nsezzlee_catalog_diagnostics{{severity=\"error\"}} {errors}\nsezzlee_catalog_diagnostics{{severity=\"warning\"}} {warnings}"
    );
    if let Some(provider) = gateway.auth.provider() {
        let figures = provider.figures();
        let mut gauges = vec![
            (
                "sezzlee_auth_provider_keys",
                "Signing keys held from the identity provider.",
                figures.keys.to_string(),
            ),
            (
                "sezzlee_auth_provider_refresh_failing",
                "1 while fetching the identity provider's keys fails (the last good keys stay in use).",
                u8::from(figures.failing).to_string(),
            ),
        ];
        if let Some(at) = figures.last_refresh_unix_s {
            gauges.push((
                "sezzlee_auth_provider_last_refresh_timestamp_seconds",
                "When the identity provider's keys were last fetched successfully.",
                at.to_string(),
            ));
        }
        for (name, help, value) in gauges {
            let _ = writeln!(
                out,
                "# HELP {name} {help}\n# TYPE {name} gauge\n{name} {value}"
            );
        }
        for (name, help, value) in [
            (
                "sezzlee_auth_provider_fetches_total",
                "Fetches of the identity provider's keys (discovery and key set).",
                figures.fetches,
            ),
            (
                "sezzlee_auth_provider_fetch_failures_total",
                "Fetches of the identity provider's keys that failed.",
                figures.failures,
            ),
            (
                "sezzlee_auth_provider_refetches_rate_limited_total",
                "Tokens naming an unknown key id that did not cause a fetch (rate limit).",
                figures.refetches_limited,
            ),
        ] {
            let _ = writeln!(
                out,
                "# HELP {name} {help}\n# TYPE {name} counter\n{name} {value}"
            );
        }
    }
    gateway.metrics.write(&mut out);
    gateway.limits.write_metrics(&mut out);
    gateway.flood_guard.write_metrics(&mut out);
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, "text/plain; version=0.0.4")],
        out,
    )
        .into_response()
}

/// `?since=GEN`.
#[derive(serde::Deserialize)]
pub struct Since {
    since: Option<String>,
}

/// `GET /changes?since=GEN`: the changes after generation GEN (0 when
/// absent), oldest first, with the generation served now.
pub async fn changes(State(gateway): State<Arc<Gateway>>, Query(query): Query<Since>) -> Response {
    let since = match query.since.as_deref().map(str::parse::<u64>) {
        None => 0,
        Some(Ok(since)) => since,
        Some(Err(_)) => {
            return (
                StatusCode::BAD_REQUEST,
                Json(json!({"error": "since must be a generation: a whole number, 0 or more"})),
            )
                .into_response();
        }
    };
    let generation = gateway.store.current().generation;
    let (changes, truncated) = gateway.changes.since(since);
    Json(json!({
        "generation": generation,
        "since": since,
        "truncated": truncated,
        "changes": changes.iter().map(|change| change.to_value()).collect::<Vec<_>>(),
    }))
    .into_response()
}
