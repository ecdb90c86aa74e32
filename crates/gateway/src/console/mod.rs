//! The operator's console at `/console`: what agents see, what changed,
//! why a search ranked what it did, and the traffic, in a browser.
//!
//! It is the gateway's own data shown another way, so it lives in the
//! gateway: a page and its script and style, committed and compiled in
//! ([`assets`]; no build step, nothing fetched), and a JSON API under
//! `/console/api/` that reads the served snapshot and the gateway's
//! histories ([`api`]) and runs `search_tools` itself for the playground
//! and for a pasted caller ([`playground`]). Live pages listen like any
//! client: `POST /console/api/listen` is a `subscriptions/listen` stream
//! (`mcp::listen`, counted with the others), served here so that the
//! console's own access rules apply instead of the MCP endpoint's origin
//! list.
//!
//! Who may use it ([`access`]): with `[auth]`, the API answers only a
//! credential carrying the console scope or the admin scope (the page and
//! its script hold no data and load without one: a browser cannot put a
//! bearer token on a navigation); without `[auth]`, only callers on the
//! loopback interface naming a loopback host (so a DNS-rebound name is
//! refused), unless `console.allow_remote`. Every response carries a
//! strict Content-Security-Policy; every POST must come from the
//! console's own origin with a JSON body; nothing shown is a secret.

mod access;
mod api;
mod assets;
mod playground;

use crate::gateway::Gateway;
use axum::Router;
use axum::middleware::from_fn_with_state;
use axum::routing::{get, post};
use std::sync::Arc;

/// The console's routes, behind its access rules; nothing when
/// `console.enabled` is off.
pub fn router(gateway: &Arc<Gateway>) -> Option<Router<Arc<Gateway>>> {
    if !gateway.settings.console.enabled {
        return None;
    }
    let api = Router::new()
        .route("/overview", get(api::overview))
        .route("/documents", get(api::documents))
        .route("/tool", get(api::tool))
        .route("/changes", get(api::changes))
        .route("/diff", get(api::diff))
        .route("/traffic", get(api::traffic))
        .route("/search", post(playground::search))
        .route("/caller", post(playground::caller))
        .route("/listen", post(playground::listen))
        .route_layer(from_fn_with_state(gateway.clone(), access::api_gate));
    let pages = Router::new()
        .route("/console", get(assets::page))
        .route("/console/", get(assets::page))
        .route("/console/console.js", get(assets::script))
        .route("/console/console.css", get(assets::style))
        .nest("/console/api", api)
        .layer(from_fn_with_state(gateway.clone(), access::network_gate));
    Some(pages)
}
