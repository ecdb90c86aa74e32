//! Who is calling, and which tools they may see.
//!
//! Visibility decides what a caller can discover; the backend still
//! enforces access when a call arrives. A hidden tool is indistinguishable
//! from a nonexistent one everywhere (search totals, tag vocabulary, load,
//! invoke).

use crate::catalog::Tool;

/// The identity a request carries. With no `[auth]` configured every
/// caller is anonymous and the whole catalog is public.
#[derive(Debug, Clone, Default)]
pub struct Caller {
    pub subject: Option<String>,
    /// The request's headers: the identity `invoke_tool` forwards (only the
    /// headers a backend is configured to receive ever leave).
    pub headers: axum::http::HeaderMap,
    /// The peer address, which keys anonymous callers' stream limits.
    pub address: Option<std::net::IpAddr>,
    pub scopes: Vec<String>,
    pub roles: Vec<String>,
}

/// What a caller may know of one tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum View {
    Hidden,
    /// Visible; `uncertain` when a credential was presented that the
    /// gateway could not evaluate (the backend decides on invoke).
    Visible {
        uncertain: bool,
    },
}

impl Caller {
    pub fn anonymous() -> Caller {
        Caller::default()
    }

    /// The key per-caller limits count against: the subject, else the
    /// peer address.
    pub fn stream_key(&self) -> String {
        match (&self.subject, self.address) {
            (Some(subject), _) => format!("subject:{subject}"),
            (None, Some(address)) => format!("address:{address}"),
            (None, None) => "anonymous".to_string(),
        }
    }

    /// Whether the caller sees every tool without evaluating rules (no
    /// auth configured): lets search use precomputed catalog-wide data.
    pub fn sees_everything(&self) -> bool {
        true
    }

    /// How this caller sees `tool`.
    pub fn view(&self, _tool: &Tool) -> View {
        View::Visible { uncertain: false }
    }
}
