//! The three tools' definitions, as `tools/list` publishes them, and the
//! instructions `server/discover` and `initialize` give an agent: fixed
//! text whatever the catalog holds, only the generation stamp changes.

use super::{GENERATION_KEY, ToolName};
use serde_json::{Value, json};

/// The three definitions, stamped with `generation`. search_tools and
/// load_tool say they only read the gateway's own catalog (`readOnlyHint`,
/// no `openWorldHint`), so hosts that approve read-only tools on their own
/// stop asking about every search; invoke_tool carries no hints, so the
/// protocol's cautious defaults (destructive, open world) stand for it.
pub fn definitions(generation: u64) -> Vec<Value> {
    let meta = json!({ GENERATION_KEY: generation });
    let read_only = json!({"readOnlyHint": true, "openWorldHint": false});
    vec![
        json!({
            "name": ToolName::SearchTools.as_str(),
            "description": "Search the API operations this gateway serves and get compact cards (name, description, parameters). Start here: find the operation for the task, then load_tool it, then invoke_tool it. Keywords rank results, they do not filter; use tags to require whole tags.",
            "inputSchema": {
                "type": "object",
                "properties": {
                    "query": {
                        "description": "Keywords matched by prefix against operation names, descriptions, declared search terms, routes, argument names and tag text; keywords rank results, they do not filter them. Empty lists everything. To require a whole tag, use tags.",
                        "type": "string",
                        "default": ""
                    },
                    "limit": {
                        "description": "Maximum number of results, 1-50.",
                        "type": "integer",
                        "default": 20
                    },
                    "detail": {
                        "description": "Shape of each result: \"card\" for the compact card, \"schema\" for the full definition load_tool would return. Any other value is card. A schema page is much larger; pair it with a small limit.",
                        "type": "string",
                        "enum": ["card", "schema"],
                        "default": "card"
                    },
                    "tags": {
                        "description": "Tags every result must carry, matched against the whole tag and insensitive to case and accents. Empty applies no filter; the answer's tags field lists what is available.",
                        "type": "array",
                        "items": { "type": "string" },
                        "default": null
                    }
                }
            },
            "annotations": read_only.clone(),
            "_meta": meta
        }),
        json!({
            "name": ToolName::LoadTool.as_str(),
            "description": "Load the full definition of one operation by the name search_tools returned: its description, inputSchema, outputSchema, annotations and version. Pass the version to invoke_tool so the call runs only against this exact definition.",
            "inputSchema": {
                "type": "object",
                "properties": {
                    "name": {
                        "description": "The operation's name, exactly as search_tools returned it.",
                        "type": "string"
                    }
                },
                "required": ["name"]
            },
            "annotations": read_only,
            "_meta": meta
        }),
        json!({
            "name": ToolName::InvokeTool.as_str(),
            "description": "Call one operation on its backend with your identity. Load it with load_tool first and pass the arguments its inputSchema describes; pass the version load_tool returned to refuse the call if the definition changed since. Success returns the HTTP status, body and selected headers.",
            "inputSchema": {
                "type": "object",
                "properties": {
                    "name": {
                        "description": "The operation's name, exactly as search_tools and load_tool returned it.",
                        "type": "string"
                    },
                    "arguments": {
                        "description": "An object whose keys are the properties of the operation's inputSchema (from load_tool)."
                    },
                    "version": {
                        "description": "The version load_tool returned. When given, the call is refused with tool_changed (and nothing is sent to the backend) if this replica holds a different definition.",
                        "type": "string"
                    }
                },
                "required": ["name"]
            },
            "_meta": meta
        }),
    ]
}

/// What `server/discover` and `initialize` tell an agent about the flow.
pub const INSTRUCTIONS: &str = "This gateway serves a catalog of API operations through three tools. \
1) search_tools with a few keywords (and tags to narrow) returns compact cards; pick the operation that fits. \
2) load_tool with that card's name returns its full definition: inputSchema, outputSchema and a version. \
3) invoke_tool with the name, arguments that match the inputSchema and the version calls the real API with your identity. \
Failures come back as JSON with error, message and retryable; the message says what to do next. \
If invoke_tool answers tool_changed, load the tool again and retry with the new version.";
