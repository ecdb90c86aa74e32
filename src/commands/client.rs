//! `sezzlee client URL …`: the client library as a command.
//!
//! Human-readable output by default, `--json` for scripts. Exit codes keep
//! the protocol's two error tracks apart: 0 success, 1 the tool ran and
//! failed (`isError`), 2 a protocol error (JSON-RPC error, HTTP or
//! transport failure, bad input). Server text is untrusted: control and
//! bidirectional-override characters are removed before it is printed.

use clap::{Args, Subcommand, ValueEnum};
use serde_json::{Map, Value, json};
use sezzlee_client::gateway::{InvokeOutcome, LoadOutcome, error_code};
use sezzlee_client::listen::{ListenEvent, ListenOptions};
use sezzlee_client::{Client, ClientConfig, ClientError, EraChoice, GatewayClient, ToolResult};
use std::process::ExitCode;
use std::time::Duration;

#[derive(Args, Debug)]
#[command(
    about = "Talk to any MCP server over Streamable HTTP (both protocol eras)",
    after_help = "Exit codes: 0 success, 1 the tool reported a failure (isError), 2 protocol error."
)]
pub struct ClientArgs {
    /// The MCP endpoint, e.g. http://127.0.0.1:8080/mcp
    pub url: String,
    /// Print JSON instead of text.
    #[arg(long, global = true)]
    pub json: bool,
    /// A header sent on every request, e.g. 'Authorization: Bearer …' (repeatable).
    #[arg(
        long = "header",
        short = 'H',
        value_name = "NAME: VALUE",
        global = true
    )]
    pub headers: Vec<String>,
    /// Time allowed for each request, in milliseconds.
    #[arg(long, default_value_t = 60_000, global = true)]
    pub timeout_ms: u64,
    /// Protocol era: auto (modern first, legacy fallback), modern or legacy.
    #[arg(long, value_enum, default_value_t = EraArg::Auto, global = true)]
    pub era: EraArg,
    #[command(subcommand)]
    pub command: ClientCommand,
}

#[derive(ValueEnum, Clone, Copy, Debug)]
pub enum EraArg {
    Auto,
    Modern,
    Legacy,
}

#[derive(Subcommand, Debug)]
pub enum ClientCommand {
    /// What the server says about itself (era, version, capabilities).
    Discover,
    /// List every tool (all pages).
    Tools,
    /// Call a tool: `call NAME '{"arg": 1}'`.
    Call {
        name: String,
        /// The arguments, a JSON object [default: {}].
        arguments: Option<String>,
    },
    /// sezzlee gateway: search_tools.
    Search {
        #[arg(default_value = "")]
        query: String,
        /// Tags every result must carry, comma separated.
        #[arg(long, value_delimiter = ',')]
        tags: Vec<String>,
        #[arg(long)]
        limit: Option<u64>,
        /// Full definitions instead of cards.
        #[arg(long)]
        schema: bool,
    },
    /// sezzlee gateway: load_tool.
    Load { name: String },
    /// sezzlee gateway: invoke_tool, pinned to the loaded version.
    Invoke {
        name: String,
        /// The operation's arguments, a JSON object [default: {}].
        arguments: Option<String>,
        /// Pin the call to this version instead of the one just loaded.
        #[arg(long)]
        pin: Option<String>,
        /// On tool_changed, report the refusal instead of reloading and retrying once.
        #[arg(long)]
        no_retry: bool,
    },
    /// Open subscriptions/listen and print change notifications.
    Listen {
        /// Stop after this many change notifications.
        #[arg(long)]
        count: Option<u64>,
        /// Reconnections in a row before giving up.
        #[arg(long, default_value_t = 5)]
        max_reconnects: u32,
    },
}

/// Runs `sezzlee client`.
pub fn run(args: ClientArgs) -> ExitCode {
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(err) => {
            eprintln!("sezzlee client: cannot start the runtime: {err}");
            return ExitCode::from(2);
        }
    };
    let json = args.json;
    match runtime.block_on(execute(args)) {
        Ok(code) => code,
        Err(err) => {
            report(&err, json);
            ExitCode::from(2)
        }
    }
}

fn report(err: &ClientError, json: bool) {
    if json {
        println!("{}", json!({"error": err.to_json()}));
    } else {
        eprintln!("sezzlee client: {}", clean(&err.to_string()));
    }
}

fn config(args: &ClientArgs) -> Result<ClientConfig, ClientError> {
    let mut config = ClientConfig::new(args.url.clone())
        .timeout(Duration::from_millis(args.timeout_ms.max(1)))
        .era(match args.era {
            EraArg::Auto => EraChoice::Auto,
            EraArg::Modern => EraChoice::Modern,
            EraArg::Legacy => EraChoice::Legacy,
        });
    for header in &args.headers {
        let (name, value) = header.split_once(':').ok_or_else(|| {
            ClientError::Usage(format!("--header '{header}' is not 'Name: value'"))
        })?;
        config = config.header(name.trim(), value.trim());
    }
    Ok(config)
}

async fn execute(args: ClientArgs) -> Result<ExitCode, ClientError> {
    let client = Client::new(config(&args)?)?;
    let json = args.json;
    let outcome = match args.command {
        ClientCommand::Listen {
            count,
            max_reconnects,
        } => listen(&client, json, count, max_reconnects).await,
        ClientCommand::Discover => discover(&client, json).await,
        ClientCommand::Tools => tools(&client, json).await,
        ClientCommand::Call { name, arguments } => {
            let arguments = parse_arguments(arguments.as_deref())?;
            let result = client.call_tool(&name, arguments).await;
            result.map(|result| print_call(&result, json))
        }
        ClientCommand::Search {
            query,
            tags,
            limit,
            schema,
        } => {
            let gateway = GatewayClient::new(client);
            let result = gateway.search(&query, &tags, limit, schema).await;
            let _ = gateway.client().close().await;
            return result.map(|result| print_search(&result, json, schema));
        }
        ClientCommand::Load { name } => {
            let gateway = GatewayClient::new(client);
            let outcome = gateway.load(&name).await;
            let _ = gateway.client().close().await;
            return outcome.map(|outcome| print_load(&outcome, json));
        }
        ClientCommand::Invoke {
            name,
            arguments,
            pin,
            no_retry,
        } => {
            let arguments = parse_arguments(arguments.as_deref())?;
            let gateway = GatewayClient::new(client).retry_on_change(!no_retry);
            let outcome = gateway.invoke(&name, arguments, pin.as_deref()).await;
            let _ = gateway.client().close().await;
            return outcome.map(|outcome| print_invoke(&outcome, json));
        }
    };
    // End a legacy session whatever happened; its failure is not the command's.
    if let Err(err) = client.close().await {
        tracing::debug!("ending the session failed: {err}");
    }
    outcome
}

fn parse_arguments(text: Option<&str>) -> Result<Value, ClientError> {
    let Some(text) = text else {
        return Ok(Value::Object(Map::new()));
    };
    match serde_json::from_str::<Value>(text) {
        Ok(value @ Value::Object(_)) => Ok(value),
        Ok(other) => Err(ClientError::Usage(format!(
            "the arguments must be a JSON object, not {}",
            sezzlee_json::kind_of(&other)
        ))),
        Err(err) => Err(ClientError::Usage(format!(
            "the arguments are not JSON: {err}"
        ))),
    }
}

async fn discover(client: &Client, json: bool) -> Result<ExitCode, ClientError> {
    let server = client.discover().await?;
    if json {
        print_json(&json!({
            "era": server.era.to_string(),
            "protocolVersion": server.protocol_version,
            "sessionId": server.session_id,
            "serverInfo": server.server_info,
            "capabilities": server.capabilities,
            "instructions": server.instructions,
            "supportedVersions": server.supported_versions,
        }));
        return Ok(ExitCode::SUCCESS);
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
    println!("server: {} {}", clean(name), clean(version));
    println!("era: {} (protocol {})", server.era, server.protocol_version);
    if !server.supported_versions.is_empty() {
        println!(
            "supported versions: {}",
            clean(&server.supported_versions.join(", "))
        );
    }
    if let Some(session) = &server.session_id {
        println!("session: {}", clean(session));
    }
    println!("capabilities: {}", clean(&server.capabilities.to_string()));
    if let Some(instructions) = &server.instructions {
        println!("instructions (from the server, untrusted):");
        for line in clean(instructions).lines() {
            println!("  | {line}");
        }
    }
    Ok(ExitCode::SUCCESS)
}

async fn tools(client: &Client, json: bool) -> Result<ExitCode, ClientError> {
    let list = client.list_tools().await?;
    if json {
        let rejected: Vec<Value> = list
            .rejected
            .iter()
            .map(|(name, why)| json!({"name": name, "reason": why}))
            .collect();
        let tools: Vec<&Value> = list.tools.iter().map(|tool| &tool.definition).collect();
        print_json(&json!({"tools": tools, "pages": list.pages, "rejected": rejected}));
        return Ok(ExitCode::SUCCESS);
    }
    for tool in &list.tools {
        let description = tool
            .description()
            .unwrap_or("")
            .lines()
            .next()
            .unwrap_or("");
        println!(
            "{}  {}",
            clean(&tool.name),
            clean(&shorten(description, 100))
        );
    }
    for (name, why) in &list.rejected {
        eprintln!("warning: left out tool {}: {}", clean(name), clean(why));
    }
    println!(
        "{} tool{} ({} page{})",
        list.tools.len(),
        if list.tools.len() == 1 { "" } else { "s" },
        list.pages,
        if list.pages == 1 { "" } else { "s" }
    );
    Ok(ExitCode::SUCCESS)
}

fn print_call(result: &ToolResult, json: bool) -> ExitCode {
    warn_all(&result.warnings);
    if json {
        print_json(&result.raw);
    } else {
        for block in &result.content {
            println!("{}", render_block(block));
        }
        if result.content.is_empty()
            && let Some(structured) = &result.structured
        {
            println!("{}", clean(&pretty(structured)));
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
            println!("{}: {}", clean(code), clean(message));
            if let Some(retryable) = payload.get("retryable").and_then(Value::as_bool) {
                println!("retryable: {retryable}");
            }
        }
        _ => println!("{}", clean(&pretty(&payload))),
    }
}

fn print_search(result: &ToolResult, json: bool, schema: bool) -> ExitCode {
    warn_all(&result.warnings);
    let payload = payload(result);
    if json {
        print_json(&payload);
    } else if result.is_error {
        print_failure(result);
    } else {
        let results = payload
            .get("results")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        println!(
            "{} of {} tools",
            results.len(),
            payload.get("total").and_then(Value::as_u64).unwrap_or(0)
        );
        if let Some(tags) = payload.get("tags").and_then(Value::as_array) {
            let tags: Vec<&str> = tags.iter().filter_map(Value::as_str).collect();
            println!("tags: {}", clean(&tags.join(", ")));
        }
        for card in &results {
            if schema {
                println!("{}", clean(&pretty(card)));
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
            println!("{}  {}{uncertain}", clean(name), clean(description));
            if let Some(parameters) = card.get("parameters").and_then(Value::as_str)
                && !parameters.is_empty()
            {
                println!("    {}", clean(parameters));
            }
        }
    }
    exit_for(result)
}

fn print_load(outcome: &LoadOutcome, json: bool) -> ExitCode {
    match outcome {
        LoadOutcome::Failed(result) => {
            if json {
                print_json(&payload(result));
            } else {
                print_failure(result);
            }
            ExitCode::from(1)
        }
        LoadOutcome::Loaded { tool, .. } => {
            if json {
                print_json(&tool.definition);
            } else {
                println!("{} (version {})", clean(&tool.name), clean(&tool.version));
                println!("{}", clean(&pretty(&tool.definition)));
            }
            ExitCode::SUCCESS
        }
    }
}

fn print_invoke(outcome: &InvokeOutcome, json: bool) -> ExitCode {
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
    if json {
        print_json(&json!({
            "isError": result.is_error,
            "version": outcome.version,
            "retriedFrom": outcome.retried_from,
            "payload": payload(result),
        }));
    } else if result.is_error {
        print_failure(result);
        if error_code(result).as_deref() == Some("tool_changed") {
            println!("(load the tool again, or drop --no-retry to let the client do it)");
        }
    } else {
        let payload = payload(result);
        if let Some(status) = payload.get("status").and_then(Value::as_u64) {
            println!("HTTP {status}");
        }
        match payload.get("body") {
            Some(body) => println!("{}", clean(&pretty(body))),
            None => println!("{}", clean(&pretty(&payload))),
        }
    }
    exit_for(result)
}

async fn listen(
    client: &Client,
    json: bool,
    count: Option<u64>,
    max_reconnects: u32,
) -> Result<ExitCode, ClientError> {
    let options = ListenOptions {
        max_reconnects,
        ..ListenOptions::default()
    };
    let mut listener = client.listen(options).await?;
    let mut seen = 0u64;
    loop {
        let next = tokio::select! {
            next = listener.next() => next,
            _ = tokio::signal::ctrl_c() => return Ok(ExitCode::SUCCESS),
        };
        let Some(event) = next else {
            return Ok(ExitCode::SUCCESS);
        };
        let event = event?;
        print_event(&event, json);
        match event {
            ListenEvent::Closed => return Ok(ExitCode::SUCCESS),
            ListenEvent::Notification { .. } => {
                seen += 1;
                if count.is_some_and(|count| seen >= count) {
                    return Ok(ExitCode::SUCCESS);
                }
            }
            _ => {}
        }
    }
}

fn print_event(event: &ListenEvent, json: bool) {
    if json {
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
        println!("{line}");
        return;
    }
    match event {
        ListenEvent::Acknowledged {
            subscription_id,
            honoured,
            not_honoured,
        } => {
            println!(
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
            println!("{}{}", clean(method), clean(&generation));
        }
        ListenEvent::Reconnecting { attempt, reason } => {
            eprintln!(
                "stream dropped ({}); reconnecting, attempt {attempt}",
                clean(reason)
            );
        }
        ListenEvent::Closed => println!("the server closed the subscription"),
    }
}

fn warn_all(warnings: &[String]) {
    for warning in warnings {
        eprintln!("warning: {}", clean(warning));
    }
}

fn print_json(value: &Value) {
    println!("{value}");
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

    #[test]
    fn arguments_must_be_an_object() {
        assert_eq!(parse_arguments(None).unwrap(), json!({}));
        assert_eq!(parse_arguments(Some("{\"a\":1}")).unwrap(), json!({"a": 1}));
        assert!(parse_arguments(Some("[1]")).is_err());
        assert!(parse_arguments(Some("{")).is_err());
    }
}
