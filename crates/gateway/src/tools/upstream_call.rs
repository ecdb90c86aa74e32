//! invoke_tool for a tool of an upstream MCP server: after the same name,
//! pin and inputSchema checks as any tool (in `invoke`), the arguments go
//! whole to the server's `tools/call`, with the caller's credentials as the
//! upstream file's `backend` says (nothing by default). The server's
//! content blocks, `structuredContent` and `isError` are passed on as they
//! came; an answer over the response budget keeps its first blocks whole,
//! cuts the text of the first that does not fit and shapes the structured
//! content like any large answer, and says what was cut.

use super::Context;
use super::envelope::{self, Blocks, Code, Retry, ToolAnswer, quoted_up_to};
use super::invoke::{authorization_for, caller_headers};
use super::shape;
use crate::metrics::BackendOutcome;
use crate::upstream::CallFailure;
use serde_json::{Map, Value, json};
use sezzlee_catalog::{Tool, UpstreamTool};

/// Characters of a reason quoted from a failure.
const MAX_REASON_CHARS: usize = 300;
/// Room kept in the budget for the note saying what was cut.
const NOTE_ROOM: usize = 600;

pub async fn call(
    context: &Context<'_>,
    tool: &Tool,
    upstream: &UpstreamTool,
    arguments: Map<String, Value>,
) -> ToolAnswer {
    let Some(spec) = context.upstreams.spec(&upstream.file) else {
        return unavailable(
            "the gateway is not connected to this tool's MCP server".to_string(),
            false,
        );
    };
    let authorization = match authorization_for(context, &spec.backend).await {
        Ok(authorization) => authorization,
        Err(answer) => return answer,
    };
    let mut headers = caller_headers(context, &spec.backend, authorization);
    let timeout = crate::backend::call_timeout(&spec.backend);
    let span = tracing::info_span!(
        "upstream.call",
        gen_ai.tool.name = %tool.name,
        upstream = %upstream.file,
        upstream.tool = %upstream.name,
    );
    // The trace goes on to an HTTP server (a process over stdio has no
    // headers).
    headers.extend(crate::telemetry::outgoing(&span, &context.caller.headers));
    let credential_headers: Vec<(String, String)> = headers
        .iter()
        .filter(|(name, _)| name.eq_ignore_ascii_case("authorization"))
        .cloned()
        .collect();
    let credential =
        || crate::limits::credential_fingerprint(&credential_headers, &["authorization"]);
    if let Err(limited) = context.limits.backend(&upstream.file, &credential) {
        return envelope::rate_limited(&limited);
    }
    let started = std::time::Instant::now();
    let result = {
        use tracing::Instrument;
        context
            .upstreams
            .call(
                &upstream.file,
                &upstream.name,
                Value::Object(arguments),
                headers,
                timeout,
            )
            .instrument(span)
            .await
    };
    let elapsed = started.elapsed();
    context.limits.backend_answered(
        &upstream.file,
        &credential,
        match &result {
            // A JSON-RPC error is an answer: the server is up.
            Ok(_) | Err(CallFailure::Refused(_)) => crate::limits::outcome_of(Some(200), None),
            Err(_) => crate::limits::outcome_of(None, None),
        },
    );
    let outcome = match &result {
        Ok(_) => BackendOutcome::Status(200),
        Err(CallFailure::Timeout(_)) => BackendOutcome::Timeout,
        Err(CallFailure::Unavailable { .. }) => BackendOutcome::Unavailable,
        Err(CallFailure::Refused(_)) => BackendOutcome::Status(500),
    };
    context
        .metrics
        .backend_call(&upstream.file, outcome, elapsed);
    match result {
        Ok(raw) => passed_on(raw, context.budget),
        Err(CallFailure::Unavailable {
            reason,
            maybe_reached,
        }) => unavailable(reason, maybe_reached),
        Err(CallFailure::Timeout(after)) => ToolAnswer::fail(
            Code::BackendTimeout,
            format!(
                "The MCP server did not answer within {} ms; the call may have reached it (it was told to cancel). Retry only if the tool is safe to repeat.",
                after.as_millis()
            ),
            Retry::MayHelp,
            Map::from_iter([("mayHaveReachedBackend".to_string(), json!(true))]),
        ),
        Err(CallFailure::Refused(reason)) => ToolAnswer::fail(
            Code::BackendStatus,
            format!(
                "The MCP server refused the call: {}. Check the arguments against the tool's definition (load_tool), or report it to the catalog owner.",
                quoted_up_to(&reason, MAX_REASON_CHARS)
            ),
            Retry::WillNotHelp,
            Map::from_iter([("mayHaveReachedBackend".to_string(), json!(true))]),
        ),
    }
}

fn unavailable(reason: String, maybe_reached: bool) -> ToolAnswer {
    envelope::unavailable(
        "MCP server",
        &reason,
        maybe_reached,
        "Retry later: the gateway reconnects on its own.",
    )
}

/// The server's `CallToolResult` as the answer, within `budget`.
fn passed_on(raw: Value, budget: usize) -> ToolAnswer {
    let content = match raw.get("content") {
        Some(Value::Array(blocks)) => blocks.clone(),
        None | Some(Value::Null) => Vec::new(),
        Some(_) => {
            return ToolAnswer::fail(
                Code::BackendStatus,
                "The MCP server's result breaks the protocol (its content is not an array of blocks); nothing of it is passed on.",
                Retry::WillNotHelp,
                Map::from_iter([("mayHaveReachedBackend".to_string(), json!(true))]),
            );
        }
    };
    let blocks = Blocks {
        content,
        structured: raw
            .get("structuredContent")
            .filter(|v| !v.is_null())
            .cloned(),
        is_error: raw.get("isError").and_then(Value::as_bool) == Some(true),
    };
    ToolAnswer::blocks(within_budget(blocks, budget))
}

/// `blocks` as they came when they fit `budget` characters; else the first
/// blocks whole, the text of the first that does not fit cut, the rest
/// left out, the structured content shaped to at most half the room, and
/// a last text block saying what was cut.
fn within_budget(blocks: Blocks, budget: usize) -> Blocks {
    let total = blocks.chars();
    if total <= budget {
        return blocks;
    }
    let room = budget.saturating_sub(NOTE_ROOM);
    let mut cut_at: Vec<String> = Vec::new();
    let structured = blocks.structured.map(|structured| {
        let shaped = shape::shape(&structured, room / 2);
        if !shaped.cuts.is_empty() {
            cut_at.push(format!(
                "structuredContent shaped ({} cuts, the first at '{}')",
                shaped.cuts.len(),
                shaped.cuts.first().map_or("", |cut| cut.at())
            ));
        }
        shaped.body
    });
    let mut left = room.saturating_sub(structured.as_ref().map_or(0, sezzlee_json::json_chars));
    let mut content = Vec::new();
    let mut dropped = 0;
    for (index, block) in blocks.content.into_iter().enumerate() {
        let size = sezzlee_json::json_chars(&block);
        if dropped == 0 && size <= left {
            left -= size;
            content.push(block);
            continue;
        }
        let is_text = block.get("type").and_then(Value::as_str) == Some("text");
        if dropped == 0 && is_text && left > 64 {
            let shaped = shape::shape(&block, left);
            left = left.saturating_sub(sezzlee_json::json_chars(&shaped.body));
            cut_at.push(format!("the text of block {index} cut"));
            content.push(shaped.body);
        }
        dropped += 1;
    }
    if dropped > 0 {
        cut_at.push(format!(
            "{dropped} blocks left out or cut from block {}",
            content.len().saturating_sub(1)
        ));
    }
    content.push(json!({
        "type": "text",
        "text": format!(
            "[sezzlee] The MCP server's answer was {total} characters, over the response budget of {budget}: {}. Ask for less (narrower arguments, a smaller page) to see the rest.",
            cut_at.join("; ")
        ),
    }));
    Blocks {
        content,
        structured,
        is_error: blocks.is_error,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(n: usize) -> Value {
        json!({"type": "text", "text": "x".repeat(n)})
    }

    #[test]
    fn an_answer_that_fits_is_passed_on_as_it_came() {
        let raw = json!({"content": [text(10), {"type": "image", "data": "aGk=", "mimeType": "image/png"}], "structuredContent": {"a": 1}, "isError": true});
        let answer = passed_on(raw, 10_000);
        let blocks = answer.as_blocks().unwrap();
        assert_eq!(blocks.content.len(), 2);
        assert_eq!(blocks.structured, Some(json!({"a": 1})));
        assert!(blocks.is_error);
        assert!(answer.is_error());
    }

    #[test]
    fn a_large_answer_keeps_whole_blocks_first_and_says_what_was_cut() {
        for budget in [1_000, 5_000, 20_000] {
            let blocks = Blocks {
                content: vec![text(300), text(50_000), text(10)],
                structured: Some(json!({"items": (0..2_000).collect::<Vec<_>>()})),
                is_error: false,
            };
            let fitted = within_budget(blocks, budget);
            assert!(fitted.chars() <= budget, "{budget}: {}", fitted.chars());
            if budget >= 5_000 {
                assert_eq!(fitted.content[0], text(300), "{budget}");
            } else {
                // No room for it whole: its text is cut.
                assert_eq!(fitted.content[0]["type"], "text", "{budget}");
            }
            let note = fitted.content.last().unwrap()["text"].as_str().unwrap();
            assert!(note.contains("over the response budget"), "{note}");
            assert!(note.contains("left out"), "{note}");
        }
    }

    #[test]
    fn a_result_whose_content_is_not_an_array_is_refused() {
        let answer = passed_on(json!({"content": "oops"}), 1_000);
        assert_eq!(answer.code(), Some("backend_status"));
    }
}
