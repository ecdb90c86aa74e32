//! Which tools a caller may see.
//!
//! Visibility decides what a caller can discover; the backend still
//! enforces access when a call arrives. An operation's OpenAPI `security`
//! requirements decide (any one satisfied; `security: []` is public),
//! unless a named policy from the sidecar or `x-sezzlee-visibility`
//! replaces them. A requirement is satisfied scheme by scheme, each only by
//! a credential of the kind it names: `oauth2`, `openIdConnect` and `http
//! bearer` by a verified JWT with the scopes, `apiKey` by a configured API
//! key for that name with the scopes; a scheme the gateway cannot check
//! (`http basic` and other HTTP schemes, `mutualTLS`, an unknown or
//! undefined scheme, a key header it does not know) leaves the tool
//! *uncertain* for a caller presenting such a credential. With no `[auth]`
//! configured the catalog is public but for the tools under a named
//! policy: a policy is the catalog owner's own word that a tool is for
//! some callers only, so it fails closed, and with no way to verify a
//! caller nobody sees them. A hidden tool is indistinguishable from a
//! nonexistent one everywhere.

use serde_json::{Map, Value};
use sezzlee_catalog::Tool;
use sezzlee_catalog::sidecar::Policy;

/// What the request's credentials amount to, all told (derived from its
/// [`Credentials`], never set on its own).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Credential {
    /// No credential.
    #[default]
    Anonymous,
    /// A verified JWT or a known API key (perhaps more besides).
    Verified,
    /// Only credentials the gateway cannot evaluate.
    Uncertain,
    /// An invalid credential (a token that fails verification): seen as
    /// no credential, but `auth.required` answers it with `invalid_token`.
    Rejected,
}

/// A configured API key the caller presented with its right value.
#[derive(Debug, Clone, Default)]
pub struct ApiKeyIdentity {
    /// The subject the key is configured for.
    pub subject: String,
    /// The API key names (OpenAPI `apiKey` `name`) it stands for.
    pub names: Vec<String>,
    pub scopes: Vec<String>,
    pub roles: Vec<String>,
}

/// A bearer token the gateway verified.
#[derive(Debug, Clone, Default)]
pub struct VerifiedToken {
    /// Its `sub` claim.
    pub subject: Option<String>,
    pub scopes: Vec<String>,
    pub roles: Vec<String>,
    /// It was issued for this gateway (`[auth.jwt] audience`): it is never
    /// handed on to a backend.
    pub for_gateway: bool,
}

/// What the `Authorization` header carried, as the gateway judged it.
#[derive(Debug, Clone)]
pub enum Authorization {
    /// A bearer token that verified.
    Verified(VerifiedToken),
    /// A bearer token that could not be checked (opaque, or no verifier).
    UnverifiableBearer,
    /// Another scheme (HTTP basic, ...): only the backend can judge it.
    OtherScheme,
    /// Unreadable, a bearer scheme without a token, or a token that fails
    /// verification: no credential.
    Invalid,
}

/// Every credential a request presented, each as the gateway judged it.
/// What they amount to ([`Credentials::credential`]), and the subject,
/// scopes and roles policies read, are derived from these, so they always
/// agree.
#[derive(Debug, Clone, Default)]
pub struct Credentials {
    /// A configured API key, when one was presented with its right value.
    pub api_key: Option<ApiKeyIdentity>,
    /// Headers that carried a configured API key with a wrong value (not
    /// a credential the backend might take: an invalid one).
    pub rejected_key_headers: Vec<String>,
    /// The `Authorization` header, when there was one.
    pub authorization: Option<Authorization>,
    /// A `Cookie` header: a credential only the backend can judge.
    pub cookie: bool,
}

impl Credentials {
    /// What the credentials amount to: verified beats uncertain beats
    /// rejected beats none.
    pub fn credential(&self) -> Credential {
        let authorization = self.authorization.as_ref();
        if self.api_key.is_some() || self.token().is_some() {
            Credential::Verified
        } else if self.cookie
            || matches!(
                authorization,
                Some(Authorization::UnverifiableBearer | Authorization::OtherScheme)
            )
        {
            Credential::Uncertain
        } else if !self.rejected_key_headers.is_empty()
            || matches!(authorization, Some(Authorization::Invalid))
        {
            Credential::Rejected
        } else {
            Credential::Anonymous
        }
    }

    /// The verified bearer token, if one was presented.
    pub fn token(&self) -> Option<&VerifiedToken> {
        match &self.authorization {
            Some(Authorization::Verified(token)) => Some(token),
            _ => None,
        }
    }

    /// Who the caller is: the verified token's subject, else the API key's.
    pub fn subject(&self) -> Option<&str> {
        self.token()
            .and_then(|token| token.subject.as_deref())
            .or(self.api_key.as_ref().map(|key| key.subject.as_str()))
    }

    /// Whether a verified credential carries `scope`.
    pub fn has_scope(&self, scope: &str) -> bool {
        self.verified_carry(scope, |key| &key.scopes, |token| &token.scopes)
    }

    /// Whether a verified credential carries `role`.
    pub fn has_role(&self, role: &str) -> bool {
        self.verified_carry(role, |key| &key.roles, |token| &token.roles)
    }

    /// Whether the API key's list (`of_key`) or the verified token's
    /// (`of_token`) holds `wanted`.
    fn verified_carry(
        &self,
        wanted: &str,
        of_key: fn(&ApiKeyIdentity) -> &Vec<String>,
        of_token: fn(&VerifiedToken) -> &Vec<String>,
    ) -> bool {
        let key = self.api_key.as_ref().map(of_key);
        let token = self.token().map(of_token);
        [key, token]
            .into_iter()
            .flatten()
            .any(|list| list.iter().any(|item| item == wanted))
    }
}

/// The identity a request carries. Its `Debug` shows header names only:
/// the headers hold tokens and keys.
#[derive(Clone, Default)]
pub struct Caller {
    /// Whether visibility rules apply at all (`[auth]` configured).
    pub rules_apply: bool,
    pub credentials: Credentials,
    /// The request's headers: the identity `invoke_tool` forwards (only the
    /// headers a backend is configured to receive ever leave).
    pub headers: axum::http::HeaderMap,
    /// The peer address, which keys anonymous callers' stream limits.
    pub address: Option<std::net::IpAddr>,
}

impl std::fmt::Debug for Caller {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let header_names: Vec<&str> = self.headers.keys().map(|name| name.as_str()).collect();
        f.debug_struct("Caller")
            .field("rules_apply", &self.rules_apply)
            .field("credentials", &self.credentials)
            .field("header_names", &header_names)
            .field("address", &self.address)
            .finish()
    }
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

/// Where an `apiKey` goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum KeyLocation {
    Header,
    Query,
    Cookie,
}

/// A security scheme, as far as visibility is concerned.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Scheme {
    /// `oauth2`, `openIdConnect`, `http` `bearer`: a JWT.
    Bearer,
    /// `apiKey` of this name.
    ApiKey { name: String, location: KeyLocation },
    /// Another `http` scheme (`basic`, `digest`, …), lowercase.
    Http(String),
    /// `mutualTLS`: a client certificate the gateway never sees.
    MutualTls,
    /// Undefined in the document, or of a type nobody knows.
    Unknown,
}

impl Scheme {
    /// The scheme `name` in a document's security schemes.
    pub fn resolve(name: &str, schemes: &Map<String, Value>) -> Scheme {
        let Some(scheme) = schemes.get(name) else {
            return Scheme::Unknown;
        };
        let text = |key: &str| scheme.get(key).and_then(Value::as_str).unwrap_or_default();
        match text("type") {
            "oauth2" | "openIdConnect" => Scheme::Bearer,
            "http" if text("scheme").eq_ignore_ascii_case("bearer") => Scheme::Bearer,
            "http" => Scheme::Http(text("scheme").to_ascii_lowercase()),
            // Swagger 2.0.
            "basic" => Scheme::Http("basic".to_string()),
            "apiKey" => Scheme::ApiKey {
                name: text("name").to_string(),
                location: match text("in") {
                    "query" => KeyLocation::Query,
                    "cookie" => KeyLocation::Cookie,
                    _ => KeyLocation::Header,
                },
            },
            "mutualTLS" => Scheme::MutualTls,
            _ => Scheme::Unknown,
        }
    }
}

/// The visibility rule of a tool.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Rule {
    Public,
    Policy(Policy),
    /// Alternatives, each a set of schemes, each with required scopes.
    Security(Vec<Vec<(Scheme, Vec<String>)>>),
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
        // An upstream server's tool has no OpenAPI security: public
        // unless a policy says otherwise.
        let Some(operation) = tool.target.http() else {
            return Rule::Public;
        };
        match &operation.security {
            None => Rule::Public,
            Some(requirements)
                if requirements.is_empty() || requirements.iter().any(|r| r.is_empty()) =>
            {
                Rule::Public
            }
            Some(requirements) => {
                let schemes = &operation.security_schemes;
                Rule::Security(
                    requirements
                        .iter()
                        .map(|requirement| {
                            requirement
                                .iter()
                                .map(|(name, scopes)| {
                                    (Scheme::resolve(name, schemes), scopes.clone())
                                })
                                .collect()
                        })
                        .collect(),
                )
            }
        }
    }
}

/// Whether a caller satisfies a scheme or a requirement.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Meets {
    No,
    /// Only the backend can tell.
    Maybe,
    Yes,
}

impl Caller {
    pub fn anonymous() -> Caller {
        Caller::default()
    }

    /// The key per-caller limits count against: the subject, else the
    /// peer address.
    pub fn stream_key(&self) -> String {
        match (self.credentials.subject(), self.address) {
            (Some(subject), _) => format!("subject:{subject}"),
            (None, Some(address)) => format!("address:{address}"),
            (None, None) => "anonymous".to_string(),
        }
    }

    /// Whether the caller sees every tool of a catalog without evaluating
    /// rules: no `[auth]` is configured and no tool is under a named
    /// policy (`has_policy`), which hides a tool even then.
    pub fn sees_everything(&self, has_policy: bool) -> bool {
        !self.rules_apply && !has_policy
    }

    /// How this caller sees `tool`.
    pub fn view(&self, tool: &Tool) -> View {
        self.view_rule(&Rule::of(tool))
    }

    /// How this caller sees tools under `rule`.
    pub fn view_rule(&self, rule: &Rule) -> View {
        if *rule == Rule::Public {
            return View::Visible { uncertain: false };
        }
        if !self.rules_apply {
            // No `[auth]`: OpenAPI security requirements hide nothing (the
            // backend asks for its credentials), but nobody can satisfy a
            // named policy, so its tools stay hidden.
            return match rule {
                Rule::Policy(_) => View::Hidden,
                _ => View::Visible { uncertain: false },
            };
        }
        let meets = match rule {
            Rule::Public => Meets::Yes,
            Rule::Policy(policy) => self.meets_policy(policy),
            Rule::Security(alternatives) => alternatives
                .iter()
                .map(|requirement| {
                    requirement
                        .iter()
                        .map(|(scheme, scopes)| self.meets_scheme(scheme, scopes))
                        .min()
                        .unwrap_or(Meets::Yes)
                })
                .max()
                .unwrap_or(Meets::No),
        };
        match meets {
            Meets::Yes => View::Visible { uncertain: false },
            Meets::Maybe => View::Visible { uncertain: true },
            Meets::No => View::Hidden,
        }
    }

    /// A policy reads the scopes and roles of every verified credential; a
    /// caller with only unverifiable ones is uncertain.
    fn meets_policy(&self, policy: &Policy) -> Meets {
        match self.credentials.credential() {
            Credential::Anonymous | Credential::Rejected => Meets::No,
            Credential::Uncertain => Meets::Maybe,
            Credential::Verified => {
                if policy
                    .any_scope
                    .iter()
                    .any(|s| self.credentials.has_scope(s))
                    || policy.any_role.iter().any(|r| self.credentials.has_role(r))
                {
                    Meets::Yes
                } else {
                    Meets::No
                }
            }
        }
    }

    fn meets_scheme(&self, scheme: &Scheme, scopes: &[String]) -> Meets {
        let covers = |have: &[String]| {
            if scopes.iter().all(|s| have.contains(s)) {
                Meets::Yes
            } else {
                Meets::No
            }
        };
        match scheme {
            Scheme::Bearer => match &self.credentials.authorization {
                Some(Authorization::Verified(token)) => covers(&token.scopes),
                Some(Authorization::UnverifiableBearer) => Meets::Maybe,
                _ => Meets::No,
            },
            Scheme::ApiKey { name, location } => {
                if let Some(key) = &self.credentials.api_key
                    && key.names.iter().any(|n| n.eq_ignore_ascii_case(name))
                {
                    return covers(&key.scopes);
                }
                let presented = match location {
                    KeyLocation::Header => {
                        self.headers.contains_key(name.as_str())
                            && !self
                                .credentials
                                .rejected_key_headers
                                .iter()
                                .any(|h| h.eq_ignore_ascii_case(name))
                    }
                    // An agent cannot add a query parameter to the
                    // backend call: only a configured key stands for one.
                    KeyLocation::Query => false,
                    KeyLocation::Cookie => self.has_cookie(name),
                };
                if presented { Meets::Maybe } else { Meets::No }
            }
            Scheme::Http(kind) => {
                let presented = self
                    .headers
                    .get(axum::http::header::AUTHORIZATION)
                    .and_then(|v| v.to_str().ok())
                    .and_then(|text| text.split_whitespace().next())
                    .is_some_and(|word| word.eq_ignore_ascii_case(kind));
                if presented { Meets::Maybe } else { Meets::No }
            }
            Scheme::MutualTls | Scheme::Unknown => {
                if self.presents_anything() {
                    Meets::Maybe
                } else {
                    Meets::No
                }
            }
        }
    }

    /// Whether the request carries any credential at all (valid or not
    /// checkable; an invalid one does not count).
    fn presents_anything(&self) -> bool {
        matches!(
            self.credentials.credential(),
            Credential::Verified | Credential::Uncertain
        )
    }

    fn has_cookie(&self, name: &str) -> bool {
        self.headers
            .get_all(axum::http::header::COOKIE)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|text| text.split(';'))
            .any(|pair| pair.trim().split('=').next() == Some(name))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_callers_debug_never_shows_header_values() {
        let mut caller = Caller::anonymous();
        caller.headers.insert(
            "authorization",
            "Bearer secret-token-value".parse().unwrap(),
        );
        let shown = format!("{caller:?}");
        assert!(shown.contains("authorization"), "{shown}");
        assert!(!shown.contains("secret-token-value"), "{shown}");
    }

    #[test]
    fn without_auth_only_named_policies_hide_tools() {
        let caller = Caller::anonymous();
        assert!(!caller.rules_apply);
        let admins = Rule::Policy(Policy {
            any_scope: vec!["admin".to_string()],
            ..Policy::default()
        });
        let oauth = Rule::Security(vec![vec![(Scheme::Bearer, vec!["admin".to_string()])]]);
        let visible = View::Visible { uncertain: false };
        assert_eq!(caller.view_rule(&Rule::Public), visible);
        assert_eq!(caller.view_rule(&oauth), visible);
        assert_eq!(caller.view_rule(&admins), View::Hidden);
        assert!(caller.sees_everything(false));
        assert!(!caller.sees_everything(true));
    }

    #[test]
    fn schemes_resolve_from_each_dialect() {
        let schemes: Map<String, Value> = serde_json::from_value(serde_json::json!({
            "o": {"type": "oauth2"}, "oidc": {"type": "openIdConnect"},
            "b": {"type": "http", "scheme": "Bearer"}, "basic": {"type": "http", "scheme": "Basic"},
            "v2basic": {"type": "basic"}, "k": {"type": "apiKey", "in": "cookie", "name": "sid"},
            "m": {"type": "mutualTLS"}, "odd": {"type": "magic"}
        }))
        .unwrap();
        let resolve = |name: &str| Scheme::resolve(name, &schemes);
        assert_eq!(resolve("o"), Scheme::Bearer);
        assert_eq!(resolve("oidc"), Scheme::Bearer);
        assert_eq!(resolve("b"), Scheme::Bearer);
        assert_eq!(resolve("basic"), Scheme::Http("basic".to_string()));
        assert_eq!(resolve("v2basic"), Scheme::Http("basic".to_string()));
        assert_eq!(
            resolve("k"),
            Scheme::ApiKey {
                name: "sid".to_string(),
                location: KeyLocation::Cookie
            }
        );
        assert_eq!(resolve("m"), Scheme::MutualTls);
        assert_eq!(resolve("odd"), Scheme::Unknown);
        assert_eq!(resolve("missing"), Scheme::Unknown);
    }
}
