//! The gateway as an OAuth protected resource (RFC 9728, as the MCP
//! authorization spec asks): its metadata document, and the `401`
//! challenge that points clients to it (also what `/status` and
//! `/metrics` answer a caller who is not the operator).
//!
//! MCP clients learn how to obtain a token from a `401` whose
//! `WWW-Authenticate: Bearer resource_metadata="…"` names
//! `/.well-known/oauth-protected-resource{endpoint}`; that document lists
//! the authorization servers and the scopes the served catalogs use
//! (recomputed from the snapshot on every request, so a reload that adds a
//! scope shows at once).

use super::{AdminRefusal, Authenticator};
use crate::jsonrpc::{ErrorReply, INVALID_REQUEST};
use crate::reply::json_response;
use crate::visibility::{Rule, Scheme};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::json;
use std::collections::BTreeSet;
use std::net::SocketAddr;

/// The well-known path of the metadata (the endpoint's path appended).
pub const METADATA_PATH: &str = "/.well-known/oauth-protected-resource";

/// Why `auth.required` refuses a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// No credential (or one of a kind the gateway does not take).
    NoCredential,
    /// A bearer token that is invalid, expired or cannot be verified.
    InvalidToken,
    /// An API key header whose value is no configured key (and no bearer
    /// token): said as such, not as an expired token.
    UnknownApiKey,
}

/// What a challenge and the metadata need of the gateway: its
/// authenticator, and where it serves the MCP endpoint
/// (`Gateway::resource`).
pub struct Resource<'a> {
    pub auth: &'a Authenticator,
    pub listen: SocketAddr,
    pub endpoint: &'a str,
}

/// The canonical URL of the MCP endpoint: `auth.resource`, else from the
/// request's `Host` over `http`.
pub fn resource_url(gateway: &Resource<'_>, headers: &HeaderMap) -> String {
    if let Some(resource) = gateway.auth.resource() {
        return resource.to_string();
    }
    let host = headers
        .get(header::HOST)
        .and_then(|value| value.to_str().ok())
        .filter(|host| is_host(host))
        .map(str::to_string)
        .unwrap_or_else(|| gateway.listen.to_string());
    format!("http://{host}{}", gateway.endpoint)
}

/// The metadata URL of a resource URL: the well-known path inserted
/// between its origin and its path (RFC 9728 §3.1).
pub fn metadata_url(resource: &str) -> String {
    let after_scheme = resource.find("://").map_or(0, |i| i + 3);
    let path_start = resource[after_scheme..]
        .find('/')
        .map_or(resource.len(), |i| after_scheme + i);
    let (origin, path) = resource.split_at(path_start);
    format!("{origin}{METADATA_PATH}{}", path.trim_end_matches('/'))
}

/// `401` with the challenge (RFC 6750 §3, RFC 9728 §5.1).
pub fn challenge(gateway: &Resource<'_>, headers: &HeaderMap, refusal: Refusal) -> Response {
    let (value, message) = challenge_of(gateway, headers, refusal);
    tracing::info!(target: "sezzlee::auth", status = 401, "request refused: {message}");
    let body = ErrorReply::new(StatusCode::UNAUTHORIZED, INVALID_REQUEST, message).body(None);
    with_challenge(json_response(StatusCode::UNAUTHORIZED, &body), &value)
}

/// The refusal of an operator's route (`/status`, `/metrics`): `401`
/// with the MCP endpoint's challenge when no credential was verified,
/// `403` with `error="insufficient_scope"` and the admin scope when one
/// was but lacks that scope (RFC 6750 §3.1). The body is plain JSON, not
/// JSON-RPC: these routes are not MCP.
pub fn admin_refusal(
    gateway: &Resource<'_>,
    headers: &HeaderMap,
    refusal: AdminRefusal,
) -> Response {
    scoped_refusal(gateway, headers, refusal, gateway.auth.admin_scope())
}

/// [`admin_refusal`] of a route opened by `scope` (one scope, or a few
/// said as "a or b").
pub fn scoped_refusal(
    gateway: &Resource<'_>,
    headers: &HeaderMap,
    refusal: AdminRefusal,
    scope: &str,
) -> Response {
    let (status, value, message) = match refusal {
        AdminRefusal::Unauthenticated(refusal) => {
            let (value, _) = challenge_of(gateway, headers, refusal);
            let message = match refusal {
                Refusal::NoCredential => {
                    format!("Unauthorized: this route needs a credential with the scope {scope}")
                }
                Refusal::InvalidToken => {
                    "Unauthorized: the access token is invalid or expired".to_string()
                }
                Refusal::UnknownApiKey => {
                    "Unauthorized: the API key is not one this gateway knows".to_string()
                }
            };
            (StatusCode::UNAUTHORIZED, value, message)
        }
        AdminRefusal::InsufficientScope => {
            let metadata = metadata_url(&resource_url(gateway, headers));
            (
                StatusCode::FORBIDDEN,
                format!(
                    "Bearer resource_metadata=\"{metadata}\", error=\"insufficient_scope\", \
                     scope=\"{scope}\""
                ),
                format!("Forbidden: this route needs a credential with the scope {scope}"),
            )
        }
    };
    let code = if status == StatusCode::FORBIDDEN {
        "insufficient_scope"
    } else {
        "unauthorized"
    };
    tracing::info!(
        target: "sezzlee::auth",
        status = status.as_u16(),
        "operator route refused: {message}"
    );
    let body = json!({"error": code, "message": message});
    with_challenge(json_response(status, &body), &value)
}

/// The `WWW-Authenticate` value of a refusal, and its message.
fn challenge_of(
    gateway: &Resource<'_>,
    headers: &HeaderMap,
    refusal: Refusal,
) -> (String, &'static str) {
    let metadata = metadata_url(&resource_url(gateway, headers));
    match refusal {
        Refusal::NoCredential => (
            format!("Bearer resource_metadata=\"{metadata}\""),
            "Unauthorized: this gateway requires a credential",
        ),
        Refusal::InvalidToken => (
            format!(
                "Bearer resource_metadata=\"{metadata}\", error=\"invalid_token\", \
                 error_description=\"The access token is invalid or expired\""
            ),
            "Unauthorized: the access token is invalid or expired",
        ),
        Refusal::UnknownApiKey => (
            format!("Bearer resource_metadata=\"{metadata}\""),
            "Unauthorized: the API key is not one this gateway knows",
        ),
    }
}

fn with_challenge(mut response: Response, value: &str) -> Response {
    if let Ok(value) = HeaderValue::from_str(value) {
        response
            .headers_mut()
            .insert(header::WWW_AUTHENTICATE, value);
    }
    response
}

/// The answer to `GET /.well-known/oauth-protected-resource[/endpoint]`
/// when the served catalog's visibility rules are `rules`: the metadata,
/// or `404` when no `[auth]` is configured (nothing is protected).
pub fn metadata(gateway: &Resource<'_>, headers: &HeaderMap, rules: &[Rule]) -> Response {
    if !gateway.auth.is_configured() {
        return StatusCode::NOT_FOUND.into_response();
    }
    let mut scopes = BTreeSet::new();
    for rule in rules {
        match rule {
            Rule::Public => {}
            Rule::Policy(policy) => scopes.extend(policy.any_scope.iter().cloned()),
            Rule::Security(requirements) => {
                // OAuth scopes only: those of schemes a token satisfies.
                for requirement in requirements {
                    for (scheme, needed) in requirement {
                        if *scheme == Scheme::Bearer {
                            scopes.extend(needed.iter().cloned());
                        }
                    }
                }
            }
        }
    }
    let mut document = json!({
        "resource": resource_url(gateway, headers),
        "scopes_supported": scopes,
        "bearer_methods_supported": ["header"],
        "resource_name": "sezzlee MCP gateway",
    });
    let servers = gateway.auth.authorization_servers();
    if !servers.is_empty() {
        document["authorization_servers"] = json!(servers);
    }
    let mut response = json_response(StatusCode::OK, &document);
    response
        .headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    response
}

/// A `Host` value that can stand in a URL: a name or address and port.
fn is_host(host: &str) -> bool {
    !host.is_empty()
        && host
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-.:[]_".contains(&b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metadata_urls_insert_the_well_known_path() {
        assert_eq!(
            metadata_url("https://gw.example.com/mcp"),
            "https://gw.example.com/.well-known/oauth-protected-resource/mcp"
        );
        assert_eq!(
            metadata_url("https://gw.example.com"),
            "https://gw.example.com/.well-known/oauth-protected-resource"
        );
        assert_eq!(
            metadata_url("http://127.0.0.1:8080/a/mcp/"),
            "http://127.0.0.1:8080/.well-known/oauth-protected-resource/a/mcp"
        );
    }

    #[test]
    fn only_plain_hosts_make_urls() {
        assert!(is_host("gw.example.com:8443"));
        assert!(is_host("[::1]:80"));
        assert!(!is_host("evil.com/\"x"));
        assert!(!is_host(""));
    }
}
