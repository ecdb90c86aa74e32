//! `sezzlee token`: mint an HS256 JWT for trying the gateway locally.
//!
//! A development aid (the demo and its README use it): production tokens
//! come from a real issuer. The secret is read from an environment
//! variable so it never appears in shell history.

use crate::commands::stdout::outln;
use serde_json::json;
use std::process::ExitCode;
use std::time::{SystemTime, UNIX_EPOCH};

/// What the token says.
pub struct TokenRequest {
    pub secret_env: String,
    pub subject: String,
    pub scopes: Vec<String>,
    pub roles: Vec<String>,
    pub issuer: Option<String>,
    pub audience: Option<String>,
    pub ttl_seconds: u64,
}

/// Prints a signed token on stdout.
pub fn run(request: &TokenRequest) -> ExitCode {
    match mint(request) {
        Ok(token) => {
            outln!("{token}");
            ExitCode::SUCCESS
        }
        Err(why) => {
            eprintln!("sezzlee token: {why}");
            ExitCode::from(2)
        }
    }
}

pub fn mint(request: &TokenRequest) -> Result<String, String> {
    let secret = std::env::var(&request.secret_env)
        .map_err(|_| format!("environment variable {} is not set", request.secret_env))?;
    let minimum = sezzlee_gateway::auth::MIN_HS256_SECRET_BYTES;
    if secret.len() < minimum {
        return Err(format!(
            "the HS256 secret in {} is {} bytes; at least {minimum} are required (RFC 7518 §3.2), and the gateway refuses a shorter one. Make one with `openssl rand -hex 32`",
            request.secret_env,
            secret.len()
        ));
    }
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_err(|e| e.to_string())?
        .as_secs();
    let mut claims = json!({
        "sub": request.subject,
        "scope": request.scopes.join(" "),
        "roles": request.roles,
        "iat": now,
        "exp": now + request.ttl_seconds,
    });
    if let Some(issuer) = &request.issuer {
        claims["iss"] = json!(issuer);
    }
    if let Some(audience) = &request.audience {
        claims["aud"] = json!(audience);
    }
    let key =
        jsonwebtoken::EncodingKey::from_secret(secret.as_bytes()).map_err(|e| e.to_string())?;
    jsonwebtoken::encode(&jsonwebtoken::Header::default(), &claims, &key).map_err(|e| e.to_string())
}
