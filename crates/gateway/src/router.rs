//! The router, assembled in one place: the MCP endpoint (behind the
//! flood guard, when a rate per address is set), its
//! protected-resource metadata, the health routes (always open, for
//! probes), the operator's routes (`/status`, `/metrics`: only for the
//! admin scope once `[auth]` is configured), the operator's console
//! (`/console`, behind its own access rules) and the demo backend (while
//! it is wanted).

use crate::auth::resource::{self, METADATA_PATH};
use crate::gateway::Gateway;
use crate::mcp::http;
use crate::settings::DemoBackend;
use axum::Router;
use axum::extract::{DefaultBodyLimit, Request, State};
use axum::http::{HeaderMap, StatusCode};
use axum::middleware::{Next, from_fn_with_state};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use std::sync::Arc;

/// The router of a gateway: the MCP endpoint and the operational routes.
pub fn router(gateway: Arc<Gateway>) -> Router {
    let endpoint = gateway.settings.endpoint.clone();
    let limit = gateway.settings.max_body_bytes;
    let mut mcp = post(http::post_mcp)
        .get(http::method_not_allowed)
        .delete(http::method_not_allowed);
    if gateway.flood_guard.is_on() {
        mcp = mcp.route_layer(from_fn_with_state(
            gateway.flood_guard.clone(),
            crate::flood_guard::guard,
        ));
    }
    let mut router = Router::new()
        .route(&endpoint, mcp)
        .route(METADATA_PATH, get(protected_resource_metadata))
        .route(
            &format!("{METADATA_PATH}{}", endpoint.trim_end_matches('/')),
            get(protected_resource_metadata),
        )
        .route("/healthz", get(http::healthz))
        .route("/readyz", get(http::readyz));
    let operator = Router::new()
        .route("/status", get(crate::status::status))
        .route("/metrics", get(crate::status::metrics))
        .route("/changes", get(crate::status::changes))
        .route_layer(from_fn_with_state(
            gateway.clone(),
            crate::status::admin_only,
        ));
    router = router.merge(operator);
    if let Some(console) = crate::console::router(&gateway) {
        router = router.merge(console);
    }
    if gateway.settings.demo_backend != DemoBackend::Off {
        let demo =
            crate::demo::router().layer(from_fn_with_state(gateway.clone(), only_when_wanted));
        router = router.nest("/demo", demo);
    }
    router
        .layer(DefaultBodyLimit::max(limit))
        .with_state(gateway)
}

/// `GET /.well-known/oauth-protected-resource[/endpoint]`: the metadata
/// of the served catalog's rules ([`resource::metadata`]).
async fn protected_resource_metadata(
    State(gateway): State<Arc<Gateway>>,
    headers: HeaderMap,
) -> Response {
    let served = gateway.store.current();
    resource::metadata(&gateway.resource(), &headers, &served.per_tool.rules)
}

/// Whether the demo answers now: `demo_backend` `on`, or `auto` while the
/// served catalog has a tool whose backend is the demo.
pub fn wanted(gateway: &Gateway) -> bool {
    match gateway.settings.demo_backend {
        DemoBackend::On => true,
        DemoBackend::Off => false,
        DemoBackend::Auto => gateway.store.current().per_tool.uses_demo_backend,
    }
}

/// Answers `404` for every `/demo` route while the demo is not
/// [`wanted`], as if it were not there.
pub async fn only_when_wanted(
    State(gateway): State<Arc<Gateway>>,
    request: Request,
    next: Next,
) -> Response {
    if wanted(&gateway) {
        next.run(request).await
    } else {
        StatusCode::NOT_FOUND.into_response()
    }
}
