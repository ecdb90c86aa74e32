//! One live connection to an upstream MCP server, whichever its transport:
//! Streamable HTTP (the dual-era `sezzlee-client`, negotiating as `sezzlee
//! client` does) or a process over stdio (`sezzlee_client::StdioClient`).
//! Both list every page of `tools/list` and call `tools/call`, and a
//! client error becomes what the envelope says of a backend: unavailable
//! (with whether the call may have reached it), timed out, or answered
//! with a JSON-RPC error.

use serde_json::Value;
use sezzlee_client::{Client, ClientError, StdioClient};
use std::sync::Arc;
use std::time::Duration;

/// A connection, cheap to clone (clones share it).
#[derive(Clone)]
pub enum Connection {
    Http(Arc<Client>),
    Stdio(StdioClient),
}

/// Why a call to an upstream server produced no result.
#[derive(Debug, Clone, PartialEq)]
pub enum CallFailure {
    /// Not reached, or the connection broke; `maybe_reached` when the
    /// request may have been delivered before it did.
    Unavailable { reason: String, maybe_reached: bool },
    /// No answer in time (the request was delivered, or may have been).
    Timeout(Duration),
    /// The server answered with a JSON-RPC error (or broke the protocol).
    Refused(String),
}

impl Connection {
    /// Every page of the server's `tools/list`: the definitions as sent,
    /// and the tools the client cannot call (by name, and why: an
    /// `x-mcp-header` it cannot mirror), which the catalog says it left
    /// out.
    pub async fn list_tools(&self) -> Result<(Vec<Value>, Vec<(String, String)>), ClientError> {
        match self {
            Connection::Http(client) => {
                let list = client.refresh_tools().await?;
                let definitions = list.tools.iter().map(|tool| tool.definition.clone());
                Ok((definitions.collect(), list.rejected.clone()))
            }
            Connection::Stdio(client) => Ok((client.list_tools().await?, Vec::new())),
        }
    }

    /// `tools/call`: the server's `CallToolResult`, as sent.
    pub async fn call_tool(
        &self,
        tool: &str,
        arguments: Value,
        headers: Vec<(String, String)>,
        timeout: Duration,
    ) -> Result<Value, CallFailure> {
        let result = match self {
            Connection::Http(client) => {
                client
                    .call_tool_raw(tool, arguments, &headers, timeout)
                    .await
            }
            Connection::Stdio(client) => client.call_tool(tool, arguments, timeout).await,
        };
        result.map_err(|err| failure_of(err, timeout))
    }

    /// Whether the connection is known to be over (a stdio process that
    /// ended); an HTTP connection is judged by its requests.
    pub fn is_closed(&self) -> bool {
        match self {
            Connection::Http(_) => false,
            Connection::Stdio(client) => client.is_closed(),
        }
    }
}

/// What a client error means for a call.
fn failure_of(err: ClientError, timeout: Duration) -> CallFailure {
    match err {
        ClientError::Timeout(_) => CallFailure::Timeout(timeout),
        ClientError::Unreachable(reason) => CallFailure::Unavailable {
            reason,
            maybe_reached: false,
        },
        ClientError::Transport(reason) => CallFailure::Unavailable {
            reason,
            maybe_reached: true,
        },
        ClientError::Http { status, body } if status >= 500 => CallFailure::Unavailable {
            reason: format!("HTTP {status}: {body}"),
            maybe_reached: true,
        },
        other => CallFailure::Refused(other.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_call_that_may_have_been_sent_says_it_may_have_reached_the_server() {
        let timeout = Duration::from_secs(1);
        let refused = failure_of(ClientError::Unreachable("refused".into()), timeout);
        assert_eq!(
            refused,
            CallFailure::Unavailable {
                reason: "refused".into(),
                maybe_reached: false
            }
        );
        let broken = failure_of(ClientError::Transport("reset".into()), timeout);
        assert!(matches!(
            broken,
            CallFailure::Unavailable {
                maybe_reached: true,
                ..
            }
        ));
        assert_eq!(
            failure_of(ClientError::Timeout(timeout), timeout),
            CallFailure::Timeout(timeout)
        );
        assert!(matches!(
            failure_of(
                ClientError::Http {
                    status: 404,
                    body: String::new()
                },
                timeout
            ),
            CallFailure::Refused(_)
        ));
    }
}
