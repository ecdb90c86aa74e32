//! The failure codes of a tool answer's envelope (`invalid_arguments`,
//! `tool_changed`, `backend_timeout`, …): what the tools answer with and
//! what the metrics count by, a leaf both read so neither reaches into the
//! other.

/// Failure codes of the envelope.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Code {
    InvalidType,
    InvalidArguments,
    UnknownTool,
    ToolChanged,
    ResponseTooLarge,
    BackendStatus,
    BackendUnavailable,
    BackendTimeout,
    /// No credential could be had for the backend (`backend.auth`).
    BackendCredentials,
    /// A limit refused the call (`[limits]`, or the backend's own
    /// `Retry-After` or breaker); nothing was sent.
    RateLimited,
    InternalError,
}

impl Code {
    /// Every code, in a fixed order (metrics count by it).
    pub const ALL: [Code; 11] = [
        Code::InvalidType,
        Code::InvalidArguments,
        Code::UnknownTool,
        Code::ToolChanged,
        Code::ResponseTooLarge,
        Code::BackendStatus,
        Code::BackendUnavailable,
        Code::BackendTimeout,
        Code::BackendCredentials,
        Code::RateLimited,
        Code::InternalError,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Code::InvalidType => "invalid_type",
            Code::InvalidArguments => "invalid_arguments",
            Code::UnknownTool => "unknown_tool",
            Code::ToolChanged => "tool_changed",
            Code::ResponseTooLarge => "response_too_large",
            Code::BackendStatus => "backend_status",
            Code::BackendUnavailable => "backend_unavailable",
            Code::BackendTimeout => "backend_timeout",
            Code::BackendCredentials => "backend_credentials",
            Code::RateLimited => "rate_limited",
            Code::InternalError => "internal_error",
        }
    }
}
