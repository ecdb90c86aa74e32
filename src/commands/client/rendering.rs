//! Everything `sezzlee client` prints: human-readable text by default,
//! one JSON value per line with `--json`, warnings and notes on stderr.
//! Server text is untrusted, so every string that came from the server
//! goes through [`clean`] before it reaches a terminal.

use crate::commands::stdout::outln;
use serde_json::{Value, json};
use sezzlee_client::Detail;
use sezzlee_client::gateway::{InvokeOutcome, LoadOutcome, error_code};
use sezzlee_client::listen::ListenEvent;
use sezzlee_client::{ClientError, ServerDescription, ToolList, ToolResult};
use std::process::ExitCode;

/// How `sezzlee client` prints: text for a person, or `--json`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Output {
    Text,
    Json,
}

impl Output {
    /// `--json` given or not.
    pub(super) fn of_flag(json: bool) -> Output {
        if json { Output::Json } else { Output::Text }
    }
}

pub(super) fn report(err: &ClientError, output: Output) {
    if output == Output::Json {
        outln!("{}", json!({"error": err.to_json()}));
    } else {
        eprintln!("sezzlee client: {}", clean(&err.to_string()));
    }
}

pub(super) fn print_discover(server: &ServerDescription, output: Output) {
    if output == Output::Json {
        print_json(&json!({
            "era": server.era.to_string(),
            "protocolVersion": server.protocol_version,
            "sessionId": server.session_id,
            "serverInfo": server.server_info,
            "capabilities": server.capabilities,
            "instructions": server.instructions,
            "supportedVersions": server.supported_versions,
        }));
        return;
    }
    let name = server
        .server_info
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or("(unnamed)");
    let version = server
        .server_info
        .get("version")
        .and_then(Value::as_str)
        .unwrap_or("");
    outln!("server: {} {}", clean(name), clean(version));
    outln!("era: {} (protocol {})", server.era, server.protocol_version);
    if !server.supported_versions.is_empty() {
        outln!(
            "supported versions: {}",
            clean(&server.supported_versions.join(", "))
        );
    }
    if let Some(session) = &server.session_id {
        outln!("session: {}", clean(session));
    }
    outln!("capabilities: {}", clean(&server.capabilities.to_string()));
    if let Some(instructions) = &server.instructions {
        outln!("instructions (from the server, untrusted):");
        for line in clean(instructions).lines() {
            outln!("  | {line}");
        }
    }
}

pub(super) fn print_tools(list: &ToolList, output: Output) {
    if output == Output::Json {
        let rejected: Vec<Value> = list
            .rejected
            .iter()
            .map(|(name, why)| json!({"name": name, "reason": why}))
            .collect();
        let tools: Vec<&Value> = list.tools.iter().map(|tool| &tool.definition).collect();
        print_json(&json!({"tools": tools, "pages": list.pages, "rejected": rejected}));
        return;
    }
    for tool in &list.tools {
        let description = tool
            .description()
            .unwrap_or("")
            .lines()
            .next()
            .unwrap_or("");
        outln!(
            "{}  {}",
            clean(&tool.name),
            clean(&shorten(description, 100))
        );
    }
    for (name, why) in &list.rejected {
        eprintln!("warning: left out tool {}: {}", clean(name), clean(why));
    }
    outln!(
        "{} tool{} ({} page{})",
        list.tools.len(),
        if list.tools.len() == 1 { "" } else { "s" },
        list.pages,
        if list.pages == 1 { "" } else { "s" }
    );
}

pub(super) fn print_call(result: &ToolResult, output: Output) -> ExitCode {
    warn_all(&result.warnings);
    if output == Output::Json {
        print_json(&result.raw);
    } else {
        for block in &result.content {
            outln!("{}", render_block(block));
        }
        if result.content.is_empty()
            && let Some(structured) = &result.structured
        {
            outln!("{}", clean(&pretty(structured)));
        }
        if result.is_error {
            eprintln!("the tool reported a failure (isError)");
        }
    }
    exit_for(result)
}

fn exit_for(result: &ToolResult) -> ExitCode {
    if result.is_error {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

/// One content block as text (non-text blocks summarised).
fn render_block(block: &Value) -> String {
    let kind = block.get("type").and_then(Value::as_str).unwrap_or("?");
    match kind {
        "text" => clean(block.get("text").and_then(Value::as_str).unwrap_or("")),
        "image" | "audio" => format!(
            "[{kind} {}, {} base64 characters]",
            clean(block.get("mimeType").and_then(Value::as_str).unwrap_or("?")),
            block
                .get("data")
                .and_then(Value::as_str)
                .map_or(0, str::len)
        ),
        "resource_link" => format!(
            "[resource link {}]",
            clean(block.get("uri").and_then(Value::as_str).unwrap_or("?"))
        ),
        "resource" => {
            let resource = block.get("resource").cloned().unwrap_or(Value::Null);
            let uri = resource.get("uri").and_then(Value::as_str).unwrap_or("?");
            match resource.get("text").and_then(Value::as_str) {
                Some(text) => format!("[resource {}]\n{}", clean(uri), clean(text)),
                None => format!("[resource {}]", clean(uri)),
            }
        }
        other => format!("[{} block]", clean(other)),
    }
}

/// The JSON payload of a gateway tool's answer (or its text).
fn payload(result: &ToolResult) -> Value {
    result.json().unwrap_or_else(|| json!(result.text()))
}

fn print_failure(result: &ToolResult) {
    let payload = payload(result);
    match (
        payload.get("error").and_then(Value::as_str),
        payload.get("message").and_then(Value::as_str),
    ) {
        (Some(code), Some(message)) => {
            outln!("{}: {}", clean(code), clean(message));
            if let Some(retryable) = payload.get("retryable").and_then(Value::as_bool) {
                outln!("retryable: {retryable}");
            }
        }
        _ => outln!("{}", clean(&pretty(&payload))),
    }
}

pub(super) fn print_search(result: &ToolResult, output: Output, detail: Detail) -> ExitCode {
    warn_all(&result.warnings);
    let payload = payload(result);
    if output == Output::Json {
        print_json(&payload);
    } else if result.is_error {
        print_failure(result);
    } else {
        let results = payload
            .get("results")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        outln!(
            "{} of {} tools",
            results.len(),
            payload.get("total").and_then(Value::as_u64).unwrap_or(0)
        );
        if let Some(tags) = payload.get("tags").and_then(Value::as_array) {
            let tags: Vec<&str> = tags.iter().filter_map(Value::as_str).collect();
            outln!("tags: {}", clean(&tags.join(", ")));
        }
        for card in &results {
            if detail == Detail::Schema {
                outln!("{}", clean(&pretty(card)));
                continue;
            }
            let name = card.get("name").and_then(Value::as_str).unwrap_or("?");
            let description = card
                .get("description")
                .and_then(Value::as_str)
                .unwrap_or("");
            let uncertain = if card.get("authUncertain") == Some(&Value::Bool(true)) {
                "  (access decided by the backend)"
            } else {
                ""
            };
            outln!("{}  {}{uncertain}", clean(name), clean(description));
            if let Some(parameters) = card.get("parameters").and_then(Value::as_str)
                && !parameters.is_empty()
            {
                outln!("    {}", clean(parameters));
            }
        }
    }
    exit_for(result)
}

pub(super) fn print_load(outcome: &LoadOutcome, output: Output) -> ExitCode {
    match outcome {
        LoadOutcome::Failed(result) => {
            if output == Output::Json {
                print_json(&payload(result));
            } else {
                print_failure(result);
            }
            ExitCode::from(1)
        }
        LoadOutcome::Loaded { tool, .. } => {
            if output == Output::Json {
                print_json(&tool.definition);
            } else {
                outln!("{} (version {})", clean(&tool.name), clean(&tool.version));
                outln!("{}", clean(&pretty(&tool.definition)));
            }
            ExitCode::SUCCESS
        }
    }
}

pub(super) fn print_invoke(outcome: &InvokeOutcome, output: Output) -> ExitCode {
    let result = &outcome.result;
    warn_all(&result.warnings);
    if let Some(refused) = &outcome.retried_from {
        eprintln!(
            "note: version {} was refused (tool_changed); reloaded and retried{}",
            clean(refused),
            outcome
                .version
                .as_deref()
                .map(|v| format!(" with version {}", clean(v)))
                .unwrap_or_default()
        );
    }
    if output == Output::Json {
        print_json(&json!({
            "isError": result.is_error,
            "version": outcome.version,
            "retriedFrom": outcome.retried_from,
            "payload": payload(result),
        }));
    } else if result.is_error {
        print_failure(result);
        if error_code(result).as_deref() == Some("tool_changed") {
            outln!("(load the tool again, or drop --no-retry to let the client do it)");
        }
    } else {
        let payload = payload(result);
        if let Some(status) = payload.get("status").and_then(Value::as_u64) {
            outln!("HTTP {status}");
        }
        match payload.get("body") {
            Some(body) => outln!("{}", clean(&pretty(body))),
            None => outln!("{}", clean(&pretty(&payload))),
        }
    }
    exit_for(result)
}

pub(super) fn print_event(event: &ListenEvent, output: Output) {
    if output == Output::Json {
        let line = match event {
            ListenEvent::Acknowledged {
                subscription_id,
                honoured,
                not_honoured,
            } => {
                json!({"event": "acknowledged", "subscriptionId": subscription_id, "honoured": honoured, "notHonoured": not_honoured})
            }
            ListenEvent::Notification { method, params } => {
                json!({"event": "notification", "method": method, "params": params})
            }
            ListenEvent::Reconnecting { attempt, reason } => {
                json!({"event": "reconnecting", "attempt": attempt, "reason": reason})
            }
            ListenEvent::Closed => json!({"event": "closed"}),
        };
        outln!("{line}");
        return;
    }
    match event {
        ListenEvent::Acknowledged {
            subscription_id,
            honoured,
            not_honoured,
        } => {
            outln!(
                "listening (subscription {}): {}",
                clean(&subscription_id.to_string()),
                clean(&honoured.to_string())
            );
            if !not_honoured.is_empty() {
                eprintln!(
                    "warning: the server does not honour {}",
                    clean(&not_honoured.join(", "))
                );
            }
        }
        ListenEvent::Notification { method, params } => {
            let generation = params
                .get("_meta")
                .and_then(|meta| meta.get(sezzlee_client::gateway::GENERATION_KEY))
                .map(|g| format!(" (catalog generation {g})"))
                .unwrap_or_default();
            outln!("{}{}", clean(method), clean(&generation));
        }
        ListenEvent::Reconnecting { attempt, reason } => {
            eprintln!(
                "stream dropped ({}); reconnecting, attempt {attempt}",
                clean(reason)
            );
        }
        ListenEvent::Closed => outln!("the server closed the subscription"),
    }
}

fn warn_all(warnings: &[String]) {
    for warning in warnings {
        eprintln!("warning: {}", clean(warning));
    }
}

fn print_json(value: &Value) {
    outln!("{value}");
}

fn pretty(value: &Value) -> String {
    serde_json::to_string_pretty(value).unwrap_or_else(|_| value.to_string())
}

fn shorten(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_string();
    }
    let mut cut: String = text.chars().take(max.saturating_sub(1)).collect();
    cut.push('…');
    cut
}

/// Server text made safe for a terminal: control characters (escape
/// sequences included) and bidirectional overrides removed; newlines and
/// tabs kept.
pub fn clean(text: &str) -> String {
    text.chars()
        .filter(|&c| {
            c == '\n'
                || c == '\t'
                || !(c.is_control()
                    || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{200e}' | '\u{200f}'))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn untrusted_text_is_cleaned() {
        assert_eq!(
            clean("ok\x1b[31mred\x07\r\n\u{202e}x\ty"),
            "ok[31mred\nx\ty"
        );
        assert_eq!(clean("\u{9b}31m"), "31m");
    }
}
