//! The `sezzlee client` command line: clap's argument types, and the
//! argument text (`--header` lines, a tool's JSON arguments) turned into
//! what the client library takes, so bad input is a usage error (exit 2)
//! before anything is sent.

use clap::{Args, Subcommand, ValueEnum};
use serde_json::{Map, Value};
use sezzlee_client::{ClientConfig, ClientError, EraChoice};
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
        /// Keywords or a sentence; empty lists everything.
        #[arg(default_value = "")]
        query: String,
        /// Tags every result must carry, comma separated.
        #[arg(long, value_delimiter = ',')]
        tags: Vec<String>,
        /// Most results to return, 1 to 50 [default: the gateway's, 20].
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

pub(super) fn config(args: &ClientArgs) -> Result<ClientConfig, ClientError> {
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

pub(super) fn parse_arguments(text: Option<&str>) -> Result<Value, ClientError> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn arguments_must_be_an_object() {
        assert_eq!(parse_arguments(None).unwrap(), json!({}));
        assert_eq!(parse_arguments(Some("{\"a\":1}")).unwrap(), json!({"a": 1}));
        assert!(parse_arguments(Some("[1]")).is_err());
        assert!(parse_arguments(Some("{")).is_err());
    }
}
