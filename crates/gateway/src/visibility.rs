//! Which tools a caller may see.
//!
//! Visibility decides what a caller can discover; the backend still
//! enforces access when a call arrives. An operation's OpenAPI `security`
//! requirements decide (any one satisfied; scopes must be covered;
//! `security: []` is public), unless a named policy from the sidecar or
//! `x-sezzlee-visibility` replaces them. With no `[auth]` configured the
//! whole catalog is public. A hidden tool is indistinguishable from a
//! nonexistent one everywhere.

use sezzlee_catalog::Tool;
use sezzlee_catalog::sidecar::Policy;
use std::collections::BTreeMap;

/// What the request's credential amounts to.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Credential {
    /// No credential (or an invalid one).
    #[default]
    Anonymous,
    /// A verified JWT or a known API key.
    Verified,
    /// A credential the gateway cannot evaluate.
    Uncertain,
    /// An invalid credential (a token that fails verification): seen as
    /// no credential, but `auth.required` answers it with `invalid_token`.
    Rejected,
}

/// The identity a request carries.
#[derive(Debug, Clone, Default)]
pub struct Caller {
    /// Whether visibility rules apply at all (`[auth]` configured).
    pub rules_apply: bool,
    pub credential: Credential,
    pub subject: Option<String>,
    pub scopes: Vec<String>,
    pub roles: Vec<String>,
    /// The request's headers: the identity `invoke_tool` forwards (only the
    /// headers a backend is configured to receive ever leave).
    pub headers: axum::http::HeaderMap,
    /// The peer address, which keys anonymous callers' stream limits.
    pub address: Option<std::net::IpAddr>,
}

/// What a caller may know of one tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum View {
    Hidden,
    /// Visible; `uncertain` when a credential was presented that the
    /// gateway could not evaluate (the backend decides on invoke).
    Visible {
        uncertain: bool,
    },
}

/// The visibility rule of a tool.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Rule {
    Public,
    Policy(Policy),
    /// Alternatives, each a set of schemes with required scopes.
    Security(Vec<BTreeMap<String, Vec<String>>>),
}

impl Rule {
    pub fn of(tool: &Tool) -> Rule {
        if let Some(policy) = &tool.policy {
            return if policy.public {
                Rule::Public
            } else {
                Rule::Policy(policy.clone())
            };
        }
        match &tool.operation.security {
            None => Rule::Public,
            Some(requirements)
                if requirements.is_empty() || requirements.iter().any(BTreeMap::is_empty) =>
            {
                Rule::Public
            }
            Some(requirements) => Rule::Security(requirements.clone()),
        }
    }
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

    /// Whether the caller sees every tool without evaluating rules.
    pub fn sees_everything(&self) -> bool {
        !self.rules_apply
    }

    /// How this caller sees `tool`.
    pub fn view(&self, tool: &Tool) -> View {
        self.view_rule(&Rule::of(tool))
    }

    /// How this caller sees tools under `rule`.
    pub fn view_rule(&self, rule: &Rule) -> View {
        if !self.rules_apply || *rule == Rule::Public {
            return View::Visible { uncertain: false };
        }
        match self.credential {
            Credential::Anonymous | Credential::Rejected => View::Hidden,
            Credential::Uncertain => View::Visible { uncertain: true },
            Credential::Verified => {
                let allowed = match rule {
                    Rule::Public => true,
                    Rule::Policy(policy) => {
                        policy.any_scope.iter().any(|s| self.scopes.contains(s))
                            || policy.any_role.iter().any(|r| self.roles.contains(r))
                    }
                    Rule::Security(requirements) => requirements.iter().any(|requirement| {
                        requirement
                            .values()
                            .all(|scopes| scopes.iter().all(|s| self.scopes.contains(s)))
                    }),
                };
                if allowed {
                    View::Visible { uncertain: false }
                } else {
                    View::Hidden
                }
            }
        }
    }
}
