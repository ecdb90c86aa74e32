//! Who is calling: the identity a request carries, verified per request.
//!
//! `Authorization: Bearer <JWT>` is verified with the configured keys (an
//! HS256 secret, RS256/ES256 public keys in PEM files or a JWKS file), with
//! optional issuer and audience checks (a configured one must be in the
//! token), expiry and not-before; API keys in a configured header map to a
//! subject and scopes. A credential the gateway cannot
//! evaluate (a bearer token with no verifier, an opaque token, HTTP basic,
//! a cookie) makes visibility *uncertain* rather than denied; an invalid
//! one counts as no credential. Secrets come only from the environment or
//! files and are never logged.

use crate::config_error::ConfigError;
use crate::settings::{AuthSettings, JwtSettings};
use crate::visibility::{Caller, Credential};
use axum::http::{HeaderMap, header};
use jsonwebtoken::jwk::JwkSet;
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde_json::Value;

/// Verifies credentials per the `[auth]` settings.
pub struct Authenticator {
    /// `false` when no `[auth]` is configured: everything is public.
    configured: bool,
    jwt: Option<JwtVerifier>,
    api_keys: Vec<ApiKey>,
}

struct JwtVerifier {
    keys: Vec<VerifyingKey>,
    issuer: Option<String>,
    audience: Option<String>,
}

struct VerifyingKey {
    kid: Option<String>,
    algorithms: Vec<Algorithm>,
    key: DecodingKey,
}

struct ApiKey {
    header: String,
    secret: String,
    subject: String,
    scopes: Vec<String>,
    roles: Vec<String>,
}

impl std::fmt::Debug for Authenticator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Authenticator")
            .field("configured", &self.configured)
            .field("jwt_keys", &self.jwt.as_ref().map_or(0, |j| j.keys.len()))
            .field("api_keys", &self.api_keys.len())
            .finish()
    }
}

impl Authenticator {
    /// No auth: every caller is anonymous and sees everything.
    pub fn disabled() -> Authenticator {
        Authenticator {
            configured: false,
            jwt: None,
            api_keys: Vec::new(),
        }
    }

    /// Auth configured but no way to verify anything: only public tools
    /// are visible (the safe fallback when configuration cannot load).
    pub fn deny_all() -> Authenticator {
        Authenticator {
            configured: true,
            jwt: None,
            api_keys: Vec::new(),
        }
    }

    /// Loads keys and secrets; an error names what is missing (never a value).
    pub fn from_settings(settings: Option<&AuthSettings>) -> Result<Authenticator, ConfigError> {
        let Some(settings) = settings else {
            return Ok(Authenticator::disabled());
        };
        let jwt = settings.jwt.as_ref().map(load_jwt).transpose()?;
        let mut api_keys = Vec::new();
        for key in &settings.api_keys {
            let variable_error = |message: String| ConfigError::Variable {
                setting: "auth.api_keys",
                variable: key.key_env.clone(),
                message,
            };
            let secret = std::env::var(&key.key_env).map_err(|_| {
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
            api_keys.push(ApiKey {
                header: key.header.to_ascii_lowercase(),
                secret,
                subject: key.subject.clone(),
                scopes: key.scopes.clone(),
                roles: key.roles.clone(),
            });
        }
        Ok(Authenticator {
            configured: true,
            jwt,
            api_keys,
        })
    }

    /// The caller a request's headers describe.
    pub fn caller(&self, headers: &HeaderMap) -> Caller {
        let mut caller = Caller::anonymous();
        caller.rules_apply = self.configured;
        if !self.configured {
            return caller;
        }
        for key in &self.api_keys {
            if let Some(value) = headers.get(key.header.as_str()) {
                if constant_time_eq(value.as_bytes(), key.secret.as_bytes()) {
                    caller.credential = Credential::Verified;
                    caller.subject = Some(key.subject.clone());
                    caller.scopes = key.scopes.clone();
                    caller.roles = key.roles.clone();
                    return caller;
                }
                tracing::debug!(
                    header = key.header,
                    "API key not recognised; treated as no credential"
                );
            }
        }
        if let Some(authorization) = headers.get(header::AUTHORIZATION) {
            let text = authorization.to_str().unwrap_or_default();
            match text.split_once(' ') {
                Some((scheme, token)) if scheme.eq_ignore_ascii_case("bearer") => {
                    self.bearer(token.trim(), &mut caller);
                }
                _ => caller.credential = Credential::Uncertain,
            }
            return caller;
        }
        if headers.contains_key(header::COOKIE) {
            caller.credential = Credential::Uncertain;
        }
        caller
    }

    fn bearer(&self, token: &str, caller: &mut Caller) {
        let Some(jwt) = &self.jwt else {
            caller.credential = Credential::Uncertain;
            return;
        };
        if token.split('.').count() != 3 {
            // An opaque token: only the backend can judge it.
            caller.credential = Credential::Uncertain;
            return;
        }
        match jwt.verify(token) {
            Ok(claims) => {
                caller.credential = Credential::Verified;
                caller.subject = claims
                    .get("sub")
                    .and_then(Value::as_str)
                    .map(str::to_string);
                caller.scopes = scopes_of(&claims);
                caller.roles = strings(claims.get("roles"));
            }
            Err(why) => {
                tracing::debug!("bearer token rejected ({why}); treated as no credential");
            }
        }
    }
}

impl JwtVerifier {
    fn verify(&self, token: &str) -> Result<Value, String> {
        let header = jsonwebtoken::decode_header(token).map_err(|e| e.to_string())?;
        let mut last = "no configured key matches the token's algorithm".to_string();
        for key in &self.keys {
            if !key.algorithms.contains(&header.alg) {
                continue;
            }
            if let (Some(want), Some(have)) = (&header.kid, &key.kid)
                && want != have
            {
                continue;
            }
            let mut validation = Validation::new(header.alg);
            // jsonwebtoken compares `iss` and `aud` only when present: a
            // configured issuer or audience must also be required. A token
            // is not accepted before its `nbf` either.
            let mut required = vec!["exp"];
            validation.validate_nbf = true;
            match &self.issuer {
                Some(issuer) => {
                    validation.set_issuer(&[issuer]);
                    required.push("iss");
                }
                None => validation.iss = None,
            }
            match &self.audience {
                Some(audience) => {
                    validation.set_audience(&[audience]);
                    required.push("aud");
                }
                None => validation.validate_aud = false,
            }
            validation.set_required_spec_claims(&required);
            match jsonwebtoken::decode::<Value>(token, &key.key, &validation) {
                Ok(data) => return Ok(data.claims),
                Err(err) => last = err.to_string(),
            }
        }
        Err(last)
    }
}

fn load_jwt(settings: &JwtSettings) -> Result<JwtVerifier, ConfigError> {
    let mut keys = Vec::new();
    if let Some(variable) = &settings.hs256_secret_env {
        let variable_error = |message: String| ConfigError::Variable {
            setting: "auth.jwt",
            variable: variable.clone(),
            message,
        };
        let secret = std::env::var(variable).map_err(|_| {
            variable_error(format!(
                "auth.jwt: environment variable {variable} (the HS256 secret) is not set"
            ))
        })?;
        if secret.is_empty() {
            return Err(variable_error(format!(
                "auth.jwt: environment variable {variable} is empty"
            )));
        }
        let key = DecodingKey::from_secret(secret.as_bytes())
            .map_err(|e| variable_error(format!("auth.jwt: HS256 secret: {e}")))?;
        keys.push(VerifyingKey {
            kid: None,
            algorithms: vec![Algorithm::HS256],
            key,
        });
    }
    for path in &settings.public_keys {
        let pem = std::fs::read(path)
            .map_err(|e| jwt_file_error(path, format!("cannot read {}: {e}", path.display())))?;
        if let Ok(key) = DecodingKey::from_rsa_pem(&pem) {
            keys.push(VerifyingKey {
                kid: None,
                algorithms: vec![Algorithm::RS256],
                key,
            });
        } else if let Ok(key) = DecodingKey::from_ec_pem(&pem) {
            keys.push(VerifyingKey {
                kid: None,
                algorithms: vec![Algorithm::ES256],
                key,
            });
        } else {
            return Err(jwt_file_error(
                path,
                format!("{} is not an RSA or EC public key in PEM", path.display()),
            ));
        }
    }
    if let Some(path) = &settings.jwks_file {
        let text = std::fs::read_to_string(path)
            .map_err(|e| jwt_file_error(path, format!("cannot read {}: {e}", path.display())))?;
        let set: JwkSet = serde_json::from_str(&text)
            .map_err(|e| jwt_file_error(path, format!("{} is not a JWKS: {e}", path.display())))?;
        for jwk in &set.keys {
            let key = DecodingKey::from_jwk(jwk)
                .map_err(|e| jwt_file_error(path, format!("a key of {}: {e}", path.display())))?;
            keys.push(VerifyingKey {
                kid: jwk.common.key_id.clone(),
                algorithms: vec![Algorithm::RS256, Algorithm::ES256],
                key,
            });
        }
    }
    if keys.is_empty() {
        return Err(ConfigError::Value {
            setting: "auth.jwt",
            message: "auth.jwt: configure hs256_secret_env, public_keys or jwks_file".to_string(),
        });
    }
    Ok(JwtVerifier {
        keys,
        issuer: settings.issuer.clone(),
        audience: settings.audience.clone(),
    })
}

/// A file named in `[auth.jwt]` that cannot be used.
fn jwt_file_error(path: &std::path::Path, detail: String) -> ConfigError {
    ConfigError::File {
        setting: "auth.jwt",
        path: path.to_path_buf(),
        message: format!("auth.jwt: {detail}"),
    }
}

/// `scope` (space separated) or `scp` (array or string).
fn scopes_of(claims: &Value) -> Vec<String> {
    let mut scopes = Vec::new();
    for key in ["scope", "scp"] {
        match claims.get(key) {
            Some(Value::String(text)) => scopes.extend(text.split_whitespace().map(str::to_string)),
            Some(Value::Array(_)) => scopes.extend(strings(claims.get(key))),
            _ => {}
        }
    }
    scopes
}

fn strings(value: Option<&Value>) -> Vec<String> {
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
