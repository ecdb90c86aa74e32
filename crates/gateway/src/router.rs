//! The router, assembled in one place: the MCP endpoint, its
//! protected-resource metadata, the health routes (always open, for
//! probes), the operator's routes (`/status`, `/metrics`: only for the
//! admin scope once `[auth]` is configured) and the demo backend (while
//! it is wanted).

use crate::auth::resource::{self, METADATA_PATH};
use crate::gateway::Gateway;
use crate::mcp::http;
use crate::settings::DemoBackend;
use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::middleware::from_fn_with_state;
use axum::routing::{get, post};
use std::sync::Arc;

/// The router of a gateway: the MCP endpoint and the operational routes.
pub fn router(gateway: Arc<Gateway>) -> Router {
    let endpoint = gateway.settings.endpoint.clone();
    let limit = gateway.settings.max_body_bytes;
    let mut router = Router::new()
        .route(
            &endpoint,
            post(http::post_mcp)
                .get(http::method_not_allowed)
                .delete(http::method_not_allowed),
        )
        .route(METADATA_PATH, get(resource::metadata))
        .route(
            &format!("{METADATA_PATH}{}", endpoint.trim_end_matches('/')),
            get(resource::metadata),
        )
        .route("/healthz", get(http::healthz))
        .route("/readyz", get(http::readyz));
    let operator = Router::new()
        .route("/status", get(crate::status::status))
        .route("/metrics", get(crate::status::metrics))
        .route_layer(from_fn_with_state(
            gateway.clone(),
            crate::status::admin_only,
        ));
    router = router.merge(operator);
    if gateway.settings.demo_backend != DemoBackend::Off {
        let demo = crate::demo::router().layer(from_fn_with_state(
            gateway.clone(),
            crate::demo::only_when_wanted,
        ));
        router = router.nest("/demo", demo);
    }
    router
        .layer(DefaultBodyLimit::max(limit))
        .with_state(gateway)
}
