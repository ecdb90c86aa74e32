//! The three tools every client sees: search_tools, load_tool, invoke_tool.
//!
//! Their definitions are fixed whatever the catalog holds; only the
//! `sezzlee/catalogGeneration` stamp in `_meta` changes. This module knows
//! nothing about protocol eras or headers: a call is a name, a JSON value
//! of arguments and the caller, and the answer is a [`ToolAnswer`].

pub mod backend_answer;
pub mod cards;
pub mod definitions;
pub mod envelope;
mod input_validator;
pub mod invoke;
pub mod load;
mod paging;
pub mod per_tool_cache;
pub mod search;
pub mod search_cache;
pub mod shape;
pub mod snapshot;
mod upstream_call;

use crate::visibility::Caller;
pub use definitions::{INSTRUCTIONS, definitions};
pub use envelope::ToolAnswer;
pub use per_tool_cache::PerToolCache;
use serde_json::Value;
use snapshot::Snapshot;

/// The three tools, by name: a call names one of these or none.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolName {
    SearchTools,
    LoadTool,
    InvokeTool,
}

impl ToolName {
    /// In the order tools/list publishes them.
    pub const ALL: [ToolName; 3] = [
        ToolName::SearchTools,
        ToolName::LoadTool,
        ToolName::InvokeTool,
    ];

    /// The name a client calls it by.
    pub fn as_str(self) -> &'static str {
        match self {
            ToolName::SearchTools => "search_tools",
            ToolName::LoadTool => "load_tool",
            ToolName::InvokeTool => "invoke_tool",
        }
    }

    /// The tool called `name`, if it is one of the three.
    pub fn parse(name: &str) -> Option<ToolName> {
        ToolName::ALL.into_iter().find(|tool| tool.as_str() == name)
    }
}

/// The `_meta` key stamping each tool with the catalog generation.
pub const GENERATION_KEY: &str = "sezzlee/catalogGeneration";

/// Everything a call needs besides its arguments.
pub struct Context<'a> {
    pub snapshot: &'a Snapshot,
    pub caller: &'a Caller,
    /// Largest answer, in characters of serialised JSON.
    pub budget: usize,
    pub backend: &'a crate::backend::BackendClient,
    /// The gateway's own address, for `${SEZZLEE_SELF}` in backend URLs.
    pub self_url: Option<&'a str>,
    /// Where calls are counted and timed.
    pub metrics: &'a crate::metrics::Metrics,
    /// The upstream MCP servers, for calls of their tools.
    pub upstreams: &'a crate::upstream::Upstreams,
    /// Rates per caller and backend guards.
    pub limits: &'a crate::limits::Limits,
}

/// Runs one of the three tools, in a span of its name (a child of the
/// request's; see [`crate::telemetry`]).
pub async fn call(context: &Context<'_>, tool: ToolName, arguments: &Value) -> ToolAnswer {
    use tracing::Instrument;
    let started = std::time::Instant::now();
    let index = match tool {
        ToolName::SearchTools => 0,
        ToolName::LoadTool => 1,
        ToolName::InvokeTool => 2,
    };
    let kind = match tool {
        ToolName::SearchTools | ToolName::LoadTool => crate::limits::Kind::Search,
        ToolName::InvokeTool => crate::limits::Kind::Invoke,
    };
    if let Err(limited) = context.limits.caller(context.caller, kind).await {
        let answer = envelope::rate_limited(&limited);
        context
            .metrics
            .tool_call(index, answer.code(), started.elapsed());
        return answer;
    }
    let answer = match tool {
        ToolName::SearchTools => {
            tracing::info_span!("search_tools").in_scope(|| search::run(context, arguments))
        }
        ToolName::LoadTool => {
            tracing::info_span!("load_tool").in_scope(|| load::run(context, arguments))
        }
        ToolName::InvokeTool => {
            invoke::run(context, arguments)
                .instrument(tracing::info_span!("invoke_tool"))
                .await
        }
    };
    context
        .metrics
        .tool_call(index, answer.code(), started.elapsed());
    answer
}
