//! The MCP protocol's edge, written once for both sides of it in this
//! workspace: the gateway (`sezzlee-gateway`) serves it and the client
//! (`sezzlee-client`) speaks it, and the two kept their own copies of the
//! same revisions, `_meta` keys and error codes, free to drift apart. A
//! leaf: no dependency at all.

/// The revision served statelessly: every request carries its version and
/// capabilities in `_meta` (MCP 2026-07-28).
pub const STATELESS_VERSION: &str = "2026-07-28";

/// The `initialize`-era revisions, newest first.
pub const HANDSHAKE_VERSIONS: [&str; 3] = ["2025-11-25", "2025-06-18", "2025-03-26"];

/// Every revision, newest first.
pub fn all_versions() -> impl Iterator<Item = &'static str> {
    std::iter::once(STATELESS_VERSION).chain(HANDSHAKE_VERSIONS)
}

/// Keys of a 2026-07-28 request's or result's `_meta`.
pub mod meta {
    pub const VERSION_KEY: &str = "io.modelcontextprotocol/protocolVersion";
    pub const CLIENT_INFO_KEY: &str = "io.modelcontextprotocol/clientInfo";
    pub const CAPABILITIES_KEY: &str = "io.modelcontextprotocol/clientCapabilities";
    pub const SERVER_INFO_KEY: &str = "io.modelcontextprotocol/serverInfo";
    pub const SUBSCRIPTION_KEY: &str = "io.modelcontextprotocol/subscriptionId";
}

/// A JSON-RPC error code: a type of its own, so a code is never confused
/// with another number, and the codes both sides use are named here.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ErrorCode(pub i64);

impl ErrorCode {
    /// The message is not JSON.
    pub const PARSE_ERROR: ErrorCode = ErrorCode(-32700);
    /// Not a valid request object (a batch, a wrong `jsonrpc`, a refused
    /// credential on the transport).
    pub const INVALID_REQUEST: ErrorCode = ErrorCode(-32600);
    pub const METHOD_NOT_FOUND: ErrorCode = ErrorCode(-32601);
    pub const INVALID_PARAMS: ErrorCode = ErrorCode(-32602);
    pub const INTERNAL_ERROR: ErrorCode = ErrorCode(-32603);
    /// 2026-07-28: an `Mcp-*` header disagrees with the body.
    pub const HEADER_MISMATCH: ErrorCode = ErrorCode(-32020);
    /// 2026-07-28: a capability the request needs was not declared.
    pub const MISSING_CAPABILITY: ErrorCode = ErrorCode(-32021);
    /// 2026-07-28: the request's revision is not one the server speaks.
    pub const UNSUPPORTED_PROTOCOL_VERSION: ErrorCode = ErrorCode(-32022);

    /// The codes only a 2026-07-28 server sends: a client that gets one
    /// knows it spoke to one.
    pub const STATELESS_ERRORS: [ErrorCode; 3] = [
        ErrorCode::HEADER_MISMATCH,
        ErrorCode::MISSING_CAPABILITY,
        ErrorCode::UNSUPPORTED_PROTOCOL_VERSION,
    ];

    /// The number as it stands in a message.
    pub fn value(self) -> i64 {
        self.0
    }
}

impl From<ErrorCode> for i64 {
    fn from(code: ErrorCode) -> i64 {
        code.0
    }
}

impl PartialEq<i64> for ErrorCode {
    fn eq(&self, other: &i64) -> bool {
        self.0 == *other
    }
}

impl PartialEq<ErrorCode> for i64 {
    fn eq(&self, other: &ErrorCode) -> bool {
        *self == other.0
    }
}

impl std::fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

/// The methods this workspace sends or serves, by name. A message from
/// the wire names any string: [`Method::parse`] says which of these it is,
/// if any, and the rest is the serving side's business.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Method {
    /// The `initialize`-era handshake.
    Initialize,
    /// The `initialize`-era liveness check.
    Ping,
    /// 2026-07-28: what the server speaks, with no session.
    ServerDiscover,
    ToolsList,
    ToolsCall,
    /// 2026-07-28: a stream of notifications.
    SubscriptionsListen,
}

impl Method {
    /// Every method, in the order above.
    pub const ALL: [Method; 6] = [
        Method::Initialize,
        Method::Ping,
        Method::ServerDiscover,
        Method::ToolsList,
        Method::ToolsCall,
        Method::SubscriptionsListen,
    ];

    /// The name as it stands in `method` and `Mcp-Method`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Method::Initialize => "initialize",
            Method::Ping => "ping",
            Method::ServerDiscover => "server/discover",
            Method::ToolsList => "tools/list",
            Method::ToolsCall => "tools/call",
            Method::SubscriptionsListen => "subscriptions/listen",
        }
    }

    /// The method called `name`, if it is one of these.
    pub fn parse(name: &str) -> Option<Method> {
        Method::ALL
            .into_iter()
            .find(|method| method.as_str() == name)
    }
}

impl std::fmt::Display for Method {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The notifications this workspace sends or reads, by name.
pub mod notification {
    /// The `initialize`-era client's "ready" after the handshake.
    pub const INITIALIZED: &str = "notifications/initialized";
    /// A request given up: the receiver may stop working on it.
    pub const CANCELLED: &str = "notifications/cancelled";
    /// The tools changed: list them again.
    pub const TOOLS_LIST_CHANGED: &str = "notifications/tools/list_changed";
    /// 2026-07-28: the first message of a `subscriptions/listen` stream.
    pub const SUBSCRIPTIONS_ACKNOWLEDGED: &str = "notifications/subscriptions/acknowledged";
}

/// 2026-07-28: the `params` member a method's `Mcp-Name` header mirrors
/// (`name` for a tool call or a prompt, `uri` for a resource read).
pub fn name_param(method: &str) -> Option<&'static str> {
    match method {
        "tools/call" | "prompts/get" => Some("name"),
        "resources/read" => Some("uri"),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn revisions_are_newest_first_and_distinct() {
        let all: Vec<&str> = all_versions().collect();
        assert_eq!(all.first(), Some(&STATELESS_VERSION));
        let mut sorted = all.clone();
        sorted.sort_unstable_by(|a, b| b.cmp(a));
        assert_eq!(all, sorted);
        assert_eq!(ErrorCode::PARSE_ERROR, -32700);
        assert_eq!(i64::from(ErrorCode::INVALID_PARAMS), -32602);
    }

    #[test]
    fn every_method_parses_back_from_its_name() {
        for method in Method::ALL {
            assert_eq!(Method::parse(method.as_str()), Some(method));
        }
        assert_eq!(Method::parse("tools/cal"), None);
        assert_eq!(Method::parse("Tools/List"), None);
    }

    #[test]
    fn only_named_methods_mirror_a_parameter() {
        assert_eq!(name_param(Method::ToolsCall.as_str()), Some("name"));
        assert_eq!(name_param("resources/read"), Some("uri"));
        assert_eq!(name_param(Method::ToolsList.as_str()), None);
    }
}
