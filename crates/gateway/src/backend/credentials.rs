//! The credential a backend gets, per its sidecar's `backend.auth`,
//! without handing on a token issued for the gateway.
//!
//! The MCP security guidance forbids token passthrough: a token a client
//! obtained for the gateway must not be replayed to other services. So the
//! caller's `Authorization` leaves only in `passthrough` mode (which the
//! operator must choose, and which is refused for a JWT whose audience is
//! this gateway); `tokenExchange` trades the caller's token at the
//! authorization server for one meant for the backend (RFC 8693), cached
//! per caller token and backend until shortly before it expires;
//! `clientCredentials` uses the gateway's own identity. Client secrets are
//! read from the environment when used and never logged; tokens neither.

use crate::environment::Environment;
use crate::visibility::Caller;
use axum::http::header;
use serde_json::Value;
use sezzlee_catalog::sidecar::{BackendAuth, BackendAuthMode};
use sha2::{Digest, Sha256};
use std::time::{Duration, Instant};

/// Tokens are used until this long before they expire.
const EXPIRY_MARGIN: Duration = Duration::from_secs(30);
/// Lifetime assumed when the token endpoint names none.
const DEFAULT_LIFETIME: Duration = Duration::from_secs(300);
/// Exchanged tokens kept (per caller token and backend).
const CACHED_TOKENS: usize = 10_000;
/// Largest token endpoint answer read.
const MAX_ANSWER_BYTES: usize = 64 * 1024;

const TOKEN_EXCHANGE: &str = "urn:ietf:params:oauth:grant-type:token-exchange";
const ACCESS_TOKEN_TYPE: &str = "urn:ietf:params:oauth:token-type:access_token";

/// Why no credential could be had for a call (nothing was sent to the
/// backend).
#[derive(Debug, Clone, PartialEq)]
pub struct CredentialError {
    pub message: String,
    pub retryable: bool,
}

/// Obtains and caches backend credentials.
pub struct Credentials {
    http: reqwest::Client,
    /// Token by (grant, endpoint, client, audience, resource, scopes, and
    /// the caller token's digest for an exchange): value and expiry.
    cache: quick_cache::sync::Cache<[u8; 32], (String, Instant)>,
    /// Where client secrets are read.
    environment: Environment,
}

impl Credentials {
    pub fn new(environment: Environment) -> Result<Credentials, reqwest::Error> {
        let http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .timeout(Duration::from_secs(10))
            .build()?;
        Ok(Credentials {
            http,
            cache: quick_cache::sync::Cache::new(CACHED_TOKENS),
            environment,
        })
    }

    /// The `Authorization` value to send, if any, for a call by `caller`
    /// to a backend configured with `auth`; `forwards_authorization` when
    /// the sidecar lists `authorization` among `forwardHeaders` (the
    /// operator choosing passthrough).
    pub async fn authorization(
        &self,
        auth: Option<&BackendAuth>,
        forwards_authorization: bool,
        caller: &Caller,
    ) -> Result<Option<String>, CredentialError> {
        let mode = auth.map_or(BackendAuthMode::None, |a| a.mode);
        match (mode, auth) {
            (BackendAuthMode::Passthrough, _) => passthrough(caller),
            (BackendAuthMode::None, _) if forwards_authorization => passthrough(caller),
            (BackendAuthMode::None, _) => Ok(None),
            (BackendAuthMode::TokenExchange, Some(auth)) => {
                let Some(subject) = bearer_token(caller) else {
                    return Err(CredentialError {
                        message: "This backend is called with the caller's token exchanged for one meant for it, and the call carries no bearer token. Call again with Authorization: Bearer.".to_string(),
                        retryable: false,
                    });
                };
                let form = vec![
                    ("grant_type", TOKEN_EXCHANGE.to_string()),
                    ("subject_token", subject.to_string()),
                    ("subject_token_type", ACCESS_TOKEN_TYPE.to_string()),
                    ("requested_token_type", ACCESS_TOKEN_TYPE.to_string()),
                ];
                self.token(auth, form, Some(subject)).await.map(Some)
            }
            (BackendAuthMode::ClientCredentials, Some(auth)) => {
                let form = vec![("grant_type", "client_credentials".to_string())];
                self.token(auth, form, None).await.map(Some)
            }
            (_, None) => Ok(None),
        }
    }

    /// A token from the token endpoint (cached), as an `Authorization`
    /// value.
    async fn token(
        &self,
        auth: &BackendAuth,
        mut form: Vec<(&'static str, String)>,
        subject: Option<&str>,
    ) -> Result<String, CredentialError> {
        let key = cache_key(auth, subject);
        if let Some((value, expires)) = self.cache.get(&key)
            && Instant::now() + EXPIRY_MARGIN < expires
        {
            return Ok(value);
        }
        let (Some(url), Some(client_id), Some(secret_env)) = (
            auth.token_url.as_deref(),
            auth.client_id.as_deref(),
            auth.client_secret_env.as_deref(),
        ) else {
            return Err(configuration("backend.auth is incomplete"));
        };
        let secret = (self.environment.var(secret_env))
            .filter(|s| !s.is_empty())
            .ok_or_else(|| {
                configuration(&format!(
                    "the environment variable {secret_env} (the client secret) is not set"
                ))
            })?;
        if let Some(audience) = &auth.audience {
            form.push(("audience", audience.clone()));
        }
        if let Some(resource) = &auth.resource {
            form.push(("resource", resource.clone()));
        }
        if !auth.scopes.is_empty() {
            form.push(("scope", auth.scopes.join(" ")));
        }
        let response = self
            .http
            .post(url)
            .basic_auth(form_encode(client_id), Some(form_encode(&secret)))
            .header(header::ACCEPT.as_str(), "application/json")
            .form(&form)
            .send()
            .await
            .map_err(|e| CredentialError {
                message: format!(
                    "The authorization server at {url} could not be reached ({}); nothing was sent to the backend. Retry later.",
                    if e.is_timeout() { "timed out" } else { "connection failed" }
                ),
                retryable: true,
            })?;
        let status = response.status().as_u16();
        let bytes = response.bytes().await.map_err(|_| CredentialError {
            message: format!("The authorization server at {url} broke off its answer; nothing was sent to the backend. Retry later."),
            retryable: true,
        })?;
        let answer: Value = if bytes.len() <= MAX_ANSWER_BYTES {
            serde_json::from_slice(&bytes).unwrap_or(Value::Null)
        } else {
            Value::Null
        };
        if !(200..300).contains(&status) {
            // The server's error code (RFC 6749 §5.2) says why; its
            // description is the server's text, not a secret.
            let code = answer.get("error").and_then(Value::as_str).unwrap_or("?");
            return Err(CredentialError {
                message: format!(
                    "The authorization server refused a token for this backend (HTTP {status}, error {code}); nothing was sent to the backend. The caller's token may not be allowed for it."
                ),
                retryable: status >= 500,
            });
        }
        let Some(token) = answer.get("access_token").and_then(Value::as_str) else {
            return Err(CredentialError {
                message: format!(
                    "The authorization server at {url} answered without an access_token; nothing was sent to the backend."
                ),
                retryable: false,
            });
        };
        let lifetime = answer
            .get("expires_in")
            .and_then(Value::as_u64)
            .map_or(DEFAULT_LIFETIME, Duration::from_secs);
        let value = format!("Bearer {token}");
        self.cache
            .insert(key, (value.clone(), Instant::now() + lifetime));
        Ok(value)
    }
}

/// The caller's `Authorization`, unless it is a JWT issued for this very
/// gateway (its audience checked against `[auth.jwt] audience`).
fn passthrough(caller: &Caller) -> Result<Option<String>, CredentialError> {
    if caller
        .credentials
        .token()
        .is_some_and(|token| token.for_gateway)
    {
        return Err(CredentialError {
            message: "The caller's token was issued for this gateway, and passing it on to the backend is refused. The catalog owner can set backend.auth to tokenExchange (or clientCredentials) in the sidecar.".to_string(),
            retryable: false,
        });
    }
    Ok(caller
        .headers
        .get(header::AUTHORIZATION)
        .and_then(|value| value.to_str().ok())
        .map(str::to_string))
}

/// The bearer token of the caller's `Authorization`.
fn bearer_token(caller: &Caller) -> Option<&str> {
    let text = caller.headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = text.split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then(|| token.trim())
        .filter(|t| !t.is_empty())
}

fn configuration(why: &str) -> CredentialError {
    CredentialError {
        message: format!(
            "The gateway cannot obtain a credential for this backend: {why}. The operator must fix its configuration; nothing was sent to the backend."
        ),
        retryable: false,
    }
}

/// RFC 6749 §2.3.1: client id and secret are form-encoded before HTTP
/// basic.
fn form_encode(text: &str) -> String {
    const FORM: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
        .remove(b'-')
        .remove(b'.')
        .remove(b'_')
        .remove(b'~');
    percent_encoding::utf8_percent_encode(text, FORM).to_string()
}

fn cache_key(auth: &BackendAuth, subject: Option<&str>) -> [u8; 32] {
    let mut hash = Sha256::new();
    for part in [
        format!("{:?}", auth.mode),
        auth.token_url.clone().unwrap_or_default(),
        auth.client_id.clone().unwrap_or_default(),
        auth.audience.clone().unwrap_or_default(),
        auth.resource.clone().unwrap_or_default(),
        auth.scopes.join(" "),
        subject.unwrap_or_default().to_string(),
    ] {
        hash.update((part.len() as u64).to_le_bytes());
        hash.update(part.as_bytes());
    }
    hash.finalize().into()
}
