//! load_tool: one tool's full definition, by name.
//!
//! The answer is exactly what an agent needs to call the tool: name,
//! description, inputSchema, outputSchema?, annotations?, version, and
//! `authUncertain` when visibility could not be settled. A tool the caller
//! may not see is `unknown_tool`, word for word like a name that does not
//! exist.

use super::Context;
use super::envelope::{Code, Retry, ToolAnswer, invalid_type, unknown_tool, within_budget};
use crate::visibility::View;
use serde_json::{Map, Value, json};
use sezzlee_catalog::Tool;

pub fn run(context: &Context, arguments: &Value) -> ToolAnswer {
    let name = match arguments.get("name") {
        Some(Value::String(name)) => name,
        None | Some(Value::Null) => {
            return ToolAnswer::fail(
                Code::InvalidArguments,
                "load_tool needs 'name': the name of a tool as search_tools returned it.",
                Retry::WillNotHelp,
                Map::new(),
            );
        }
        Some(other) => return invalid_type("name", "a string", other),
    };
    let Some((tool, uncertain)) = find_visible(context, name) else {
        return unknown_tool(name);
    };
    within_budget(
        ToolAnswer::ok(answer(tool, uncertain)),
        context.budget,
        "This definition is larger than the response budget; raise response_budget in the gateway settings to load it.",
    )
}

/// A tool by name if the caller may see it, with its `authUncertain` flag.
pub fn find_visible<'a>(context: &Context<'a>, name: &str) -> Option<(&'a Tool, bool)> {
    let tool = context.snapshot.catalog.tool(name)?;
    match context.caller.view(tool) {
        View::Hidden => None,
        View::Visible { uncertain } => Some((tool, uncertain)),
    }
}

/// The load_tool answer for one tool.
pub fn answer(tool: &Tool, uncertain: bool) -> Value {
    let mut definition = tool.definition();
    if uncertain && let Value::Object(map) = &mut definition {
        map.insert("authUncertain".to_string(), json!(true));
    }
    definition
}
