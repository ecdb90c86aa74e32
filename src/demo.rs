//! The demo orders backend behind the shipped `catalogs/orders.yaml`.
//!
//! Placeholder: the routes land with invoke_tool.

use crate::gateway::Gateway;
use axum::Router;
use std::sync::Arc;

pub fn router() -> Router<Arc<Gateway>> {
    Router::new()
}
