//! invoke_tool: placeholder until the backend dispatch lands.

use super::Context;
use super::envelope::{Code, ToolAnswer};
use serde_json::{Map, Value};

/// Shared HTTP client for backend calls.
#[derive(Default)]
pub struct Backend;

impl Backend {
    pub fn new() -> Backend {
        Backend
    }
}

pub async fn run(_context: &Context<'_>, _arguments: &Value) -> ToolAnswer {
    ToolAnswer::fail(
        Code::InternalError,
        "invoke_tool is not available yet.",
        false,
        Map::new(),
    )
}
