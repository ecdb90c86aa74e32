//! Who is calling: the identity a request carries, verified per request.
//!
//! `Authorization: Bearer <JWT>` is verified with the configured keys: an
//! HS256 secret, public keys in PEM files or a JWKS file ([`keys`]), or
//! the identity provider's keys fetched by URL or through OIDC discovery
//! and kept fresh ([`provider`]); with optional issuer and audience checks
//! (a configured one must be in the token), expiry and not-before. API
//! keys in a configured header map to a subject and scopes. A credential
//! the gateway cannot evaluate (a bearer token with no verifier, an opaque
//! token, HTTP basic, a cookie) makes visibility *uncertain* rather than
//! denied; an invalid one (bad signature, expired, `alg: none`, a key of
//! the wrong type, oversized) counts as no credential, unless
//! `auth.required` is on: then it is refused with `invalid_token`
//! ([`resource`] writes the challenge and the protected-resource
//! metadata). With `[auth]` configured, `/status` and `/metrics` answer
//! only a credential carrying `auth.admin_scope` ([`AdminRefusal`]).
//! Secrets come only from the environment or files, and neither they nor
//! tokens are ever logged.

mod jwt;
pub mod keys;
pub mod provider;
pub mod resource;

use crate::config_error::ConfigError;
use crate::environment::Environment;
use crate::settings::AuthSettings;
use crate::visibility::{ApiKeyIdentity, Authorization, Caller, Credential, VerifiedToken};
use axum::http::{HeaderMap, HeaderValue, header};
use jwt::{JwtVerifier, load_jwt};
use provider::ProviderKeys;
use serde_json::{Value, json};
use std::sync::Arc;

pub use jwt::MIN_HS256_SECRET_BYTES;

/// The longest bearer token looked at; a longer one is invalid (real
/// access tokens are a few KiB).
pub const MAX_TOKEN_BYTES: usize = 16 * 1024;

/// Verifies credentials per the `[auth]` settings.
pub struct Authenticator {
    /// `false` when no `[auth]` is configured: everything is public.
    configured: bool,
    /// `auth.required`: callers without a valid credential are refused.
    pub required: bool,
    jwt: Option<JwtVerifier>,
    api_keys: Vec<ApiKey>,
    /// `auth.resource`, `auth.authorization_servers` (or the issuer).
    resource: Option<String>,
    authorization_servers: Vec<String>,
    /// `auth.admin_scope`: what opens `/status` and `/metrics`.
    admin_scope: String,
}

/// Why a caller may not read the operator's routes (`/status`,
/// `/metrics`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AdminRefusal {
    /// No verified credential: `401` with the challenge.
    Unauthenticated(resource::Refusal),
    /// A verified credential without the admin scope: `403`.
    InsufficientScope,
}

struct ApiKey {
    /// The request header carrying it, lowercase.
    header: String,
    secret: String,
    subject: String,
    scopes: Vec<String>,
    roles: Vec<String>,
    /// The OpenAPI `apiKey` names it satisfies: its header and any
    /// configured `names`.
    names: Vec<String>,
}

/// A bearer token, judged.
enum Bearer {
    Verified(Value),
    /// Opaque, or no verifier configured: the backend decides.
    Unverifiable,
    /// Fails verification (or is oversized): no credential.
    Invalid,
}

impl std::fmt::Debug for Authenticator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Authenticator")
            .field("configured", &self.configured)
            .field("required", &self.required)
            .field("jwt_keys", &self.jwt.as_ref().map_or(0, |j| j.fixed.len()))
            .field(
                "provider",
                &self.jwt.as_ref().is_some_and(|j| j.provider.is_some()),
            )
            .field("api_keys", &self.api_keys.len())
            .finish()
    }
}

impl Authenticator {
    /// No auth: every caller is anonymous and sees everything.
    pub fn disabled() -> Authenticator {
        Authenticator {
            configured: false,
            required: false,
            jwt: None,
            api_keys: Vec::new(),
            resource: None,
            authorization_servers: Vec::new(),
            admin_scope: crate::settings::DEFAULT_ADMIN_SCOPE.to_string(),
        }
    }

    /// Auth configured but no way to verify anything: only public tools
    /// are visible (the safe fallback when configuration cannot load).
    pub fn deny_all() -> Authenticator {
        Authenticator {
            configured: true,
            ..Authenticator::disabled()
        }
    }

    /// Loads keys and secrets; an error names what is missing (never a
    /// value). The provider's keys are fetched once [`Authenticator::start`]
    /// runs.
    pub fn from_settings(
        settings: Option<&AuthSettings>,
        environment: &Environment,
    ) -> Result<Authenticator, ConfigError> {
        let Some(settings) = settings else {
            return Ok(Authenticator::disabled());
        };
        let jwt = (settings.jwt.as_ref())
            .map(|jwt| load_jwt(jwt, environment))
            .transpose()?;
        let mut api_keys = Vec::new();
        for key in &settings.api_keys {
            let variable_error = |message: String| ConfigError::Variable {
                setting: "auth.api_keys",
                variable: key.key_env.clone(),
                message,
            };
            let secret = environment.var(&key.key_env).ok_or_else(|| {
                variable_error(format!(
                    "auth.api_keys: environment variable {} (key of '{}') is not set",
                    key.key_env, key.subject
                ))
            })?;
            if secret.is_empty() {
                return Err(variable_error(format!(
                    "auth.api_keys: environment variable {} is empty",
                    key.key_env
                )));
            }
            let mut names = vec![key.header.clone()];
            names.extend(key.names.iter().cloned());
            api_keys.push(ApiKey {
                header: key.header.to_ascii_lowercase(),
                secret,
                subject: key.subject.clone(),
                scopes: key.scopes.clone(),
                roles: key.roles.clone(),
                names,
            });
        }
        if let Some(resource) = &settings.resource
            && !(resource.starts_with("https://") || resource.starts_with("http://"))
        {
            return Err(ConfigError::Value {
                setting: "auth.resource",
                message: format!("auth.resource: '{resource}' is not an http(s) URL"),
            });
        }
        let admin_scope = settings.admin_scope();
        if !is_scope_token(admin_scope) {
            return Err(ConfigError::Value {
                setting: "auth.admin_scope",
                message: format!(
                    "auth.admin_scope: '{admin_scope}' is not one OAuth scope (visible ASCII, \
                     no space, quote or backslash)"
                ),
            });
        }
        let mut authorization_servers = settings.authorization_servers.clone();
        if authorization_servers.is_empty()
            && let Some(issuer) = settings.jwt.as_ref().and_then(|jwt| jwt.issuer.clone())
        {
            authorization_servers.push(issuer);
        }
        Ok(Authenticator {
            configured: true,
            required: settings.required,
            jwt,
            api_keys,
            resource: settings.resource.clone(),
            authorization_servers,
            admin_scope: admin_scope.to_string(),
        })
    }

    /// Whether `[auth]` is configured at all.
    pub fn is_configured(&self) -> bool {
        self.configured
    }

    /// Starts keeping the provider's keys fresh (a fetch at once), until
    /// `stop` turns true. Nothing to do without a provider.
    pub fn start(&self, stop: crate::shutdown::ShutdownSignal) {
        if let Some(provider) = self.jwt.as_ref().and_then(|jwt| jwt.provider.as_ref()) {
            provider.spawn_refresher(stop);
        }
    }

    /// `auth.resource`, when configured.
    pub fn resource(&self) -> Option<&str> {
        self.resource.as_deref()
    }

    /// The authorization servers the metadata lists.
    pub fn authorization_servers(&self) -> &[String] {
        &self.authorization_servers
    }

    /// The provider's keys, when they come from one.
    pub fn provider(&self) -> Option<&Arc<ProviderKeys>> {
        self.jwt.as_ref().and_then(|jwt| jwt.provider.as_ref())
    }

    /// The caller a request's headers describe: a configured API key and
    /// a bearer token are both looked at (a caller may present both, and
    /// each satisfies the schemes of its own kind).
    pub async fn caller(&self, headers: &HeaderMap) -> Caller {
        let mut caller = Caller::anonymous();
        caller.rules_apply = self.configured;
        if !self.configured {
            return caller;
        }
        let credentials = &mut caller.credentials;
        for key in &self.api_keys {
            let Some(value) = headers.get(key.header.as_str()) else {
                continue;
            };
            if credentials.api_key.is_none()
                && constant_time_eq(value.as_bytes(), key.secret.as_bytes())
            {
                credentials.api_key = Some(ApiKeyIdentity {
                    subject: key.subject.clone(),
                    names: key.names.clone(),
                    scopes: key.scopes.clone(),
                    roles: key.roles.clone(),
                });
            } else if !credentials.rejected_key_headers.contains(&key.header) {
                credentials.rejected_key_headers.push(key.header.clone());
            }
        }
        if credentials.api_key.is_none() && !credentials.rejected_key_headers.is_empty() {
            tracing::info!(
                target: "sezzlee::auth",
                headers = ?credentials.rejected_key_headers,
                "API key not recognised; treated as no credential"
            );
        }
        if let Some(authorization) = headers.get(header::AUTHORIZATION) {
            credentials.authorization = Some(self.authorization(authorization).await);
        }
        credentials.cookie = headers.contains_key(header::COOKIE);
        caller
    }

    /// What an `Authorization` header amounts to.
    async fn authorization(&self, authorization: &HeaderValue) -> Authorization {
        // Not visible ASCII, or a bearer scheme without a token: a
        // malformed credential, no credential at all.
        let text = authorization.to_str().unwrap_or_default().trim();
        let (scheme, token) = text.split_once(' ').unwrap_or((text, ""));
        match scheme {
            "" => {
                tracing::info!(
                    target: "sezzlee::auth",
                    "unreadable Authorization header; treated as no credential"
                );
                Authorization::Invalid
            }
            _ if scheme.eq_ignore_ascii_case("bearer") && token.trim().is_empty() => {
                tracing::info!(
                    target: "sezzlee::auth",
                    "bearer scheme without a token; treated as no credential"
                );
                Authorization::Invalid
            }
            _ if scheme.eq_ignore_ascii_case("bearer") => match self.bearer(token.trim()).await {
                Bearer::Verified(claims) => Authorization::Verified(VerifiedToken {
                    subject: claims
                        .get("sub")
                        .and_then(Value::as_str)
                        .map(str::to_string),
                    scopes: scopes_of(&claims),
                    roles: claim_strings(claims.get("roles")),
                    for_gateway: self.jwt.as_ref().is_some_and(|jwt| jwt.audience.is_some()),
                }),
                Bearer::Unverifiable => Authorization::UnverifiableBearer,
                Bearer::Invalid => Authorization::Invalid,
            },
            // HTTP basic and other schemes: only the backend can judge.
            _ => Authorization::OtherScheme,
        }
    }

    /// What a bearer token amounts to.
    async fn bearer(&self, token: &str) -> Bearer {
        let Some(jwt) = &self.jwt else {
            return Bearer::Unverifiable;
        };
        if token.len() > MAX_TOKEN_BYTES {
            tracing::info!(
                target: "sezzlee::auth",
                bytes = token.len(),
                "bearer token longer than {MAX_TOKEN_BYTES} bytes; treated as no credential"
            );
            return Bearer::Invalid;
        }
        if token.split('.').count() != 3 {
            // An opaque token: only the backend can judge it.
            return Bearer::Unverifiable;
        }
        match jwt.verify(token).await {
            Ok(claims) => Bearer::Verified(claims),
            Err(why) => {
                tracing::info!(
                    target: "sezzlee::auth",
                    "bearer token rejected ({why}); treated as no credential"
                );
                Bearer::Invalid
            }
        }
    }

    /// With `auth.required`, why a caller is refused: `None` when it may
    /// go on (a verified credential, or `required` off).
    /// A bearer token that is not verified (invalid, or opaque) is an
    /// invalid token; anything else is no credential.
    pub fn refusal(&self, caller: &Caller, headers: &HeaderMap) -> Option<resource::Refusal> {
        if !self.required || caller.credentials.credential() == Credential::Verified {
            return None;
        }
        Some(refusal_of(caller, headers))
    }

    /// The scope that opens `/status` and `/metrics`.
    pub fn admin_scope(&self) -> &str {
        &self.admin_scope
    }

    /// Whether `caller` may read `/status` and `/metrics`: anyone without
    /// `[auth]` (the MCP endpoint is open then too), else only a verified
    /// JWT or configured API key carrying the admin scope. They show the
    /// catalog's files and diagnostics, the auth setup and the traffic,
    /// which are the operator's, not every caller's.
    pub fn admin_access(&self, caller: &Caller, headers: &HeaderMap) -> Result<(), AdminRefusal> {
        self.scoped_access(caller, headers, None)
    }

    /// [`Authenticator::admin_access`], also letting in a credential
    /// carrying `also` (the console's scope).
    pub fn scoped_access(
        &self,
        caller: &Caller,
        headers: &HeaderMap,
        also: Option<&str>,
    ) -> Result<(), AdminRefusal> {
        if !self.configured {
            return Ok(());
        }
        if caller.credentials.credential() != Credential::Verified {
            return Err(AdminRefusal::Unauthenticated(refusal_of(caller, headers)));
        }
        let carries = |scope: &str| caller.credentials.has_scope(scope);
        if carries(&self.admin_scope) || also.is_some_and(carries) {
            Ok(())
        } else {
            Err(AdminRefusal::InsufficientScope)
        }
    }

    /// What `/status` shows of authentication.
    pub fn status(&self) -> Value {
        json!({
            "configured": self.configured,
            "required": self.required,
            "apiKeys": self.api_keys.len(),
            "adminScope": self.configured.then_some(&self.admin_scope),
            "jwt": self.jwt.as_ref().map(|jwt| json!({
                "configuredKeys": jwt.fixed.len(),
                "issuer": jwt.issuer,
                "audience": jwt.audience,
                "provider": jwt.provider.as_ref().map(|p| p.status()),
            })),
        })
    }
}

/// Why a caller without a verified credential is refused: a bearer
/// token that is not verified (invalid, or opaque) is an invalid token;
/// anything else is no credential.
fn refusal_of(caller: &Caller, headers: &HeaderMap) -> resource::Refusal {
    let bearer = headers
        .get(header::AUTHORIZATION)
        .and_then(|value| value.to_str().ok())
        .and_then(|text| text.split_once(' '))
        .is_some_and(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"));
    if bearer {
        resource::Refusal::InvalidToken
    } else if !caller.credentials.rejected_key_headers.is_empty() {
        resource::Refusal::UnknownApiKey
    } else if caller.credentials.credential() == Credential::Rejected {
        resource::Refusal::InvalidToken
    } else {
        resource::Refusal::NoCredential
    }
}

/// One OAuth scope token (RFC 6749 §3.3): it can stand in a
/// `WWW-Authenticate` `scope="…"` as it is.
fn is_scope_token(scope: &str) -> bool {
    !scope.is_empty()
        && scope
            .bytes()
            .all(|b| b == 0x21 || (0x23..=0x5b).contains(&b) || (0x5d..=0x7e).contains(&b))
}

/// `scope` (space separated) or `scp` (array or string).
fn scopes_of(claims: &Value) -> Vec<String> {
    let mut scopes = Vec::new();
    for key in ["scope", "scp"] {
        match claims.get(key) {
            Some(Value::String(text)) => scopes.extend(text.split_whitespace().map(str::to_string)),
            Some(Value::Array(_)) => scopes.extend(claim_strings(claims.get(key))),
            _ => {}
        }
    }
    scopes
}

/// A claim that is one string or an array of strings (`roles: "staff"` or
/// `roles: ["staff", "ops"]`), as its strings; unlike
/// `sezzlee_json::strings`, a lone string counts.
fn claim_strings(value: Option<&Value>) -> Vec<String> {
    match value {
        Some(Value::Array(items)) => items
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_string)
            .collect(),
        Some(Value::String(text)) => vec![text.clone()],
        _ => Vec::new(),
    }
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}
