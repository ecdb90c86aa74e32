//! Bearer tokens as JWTs: the verifier the `[auth.jwt]` settings load
//! (an HS256 secret from the environment, PEM files, a JWKS file, or the
//! identity provider's keys, `provider`), and how a token is checked
//! against it (signature by a fitting key, expiry, not-before, and a
//! configured issuer or audience required in the token). What the
//! verified claims make of a caller is the authenticator's (`mod.rs`).

use super::keys::{KeySet, VerifyingKey};
use super::provider::{KeySource, ProviderKeys, Timing};
use crate::config_error::ConfigError;
use crate::environment::Environment;
use crate::settings::JwtSettings;
use jsonwebtoken::{Algorithm, Validation};
use serde_json::Value;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The shortest HS256 secret accepted, in bytes: RFC 7518 §3.2 requires a
/// key of at least the hash's size (256 bits); a shorter one can be guessed
/// offline from any token it signed.
pub const MIN_HS256_SECRET_BYTES: usize = 32;

/// What verifies bearer tokens.
pub(super) struct JwtVerifier {
    /// Keys from the settings (secret, PEM files, JWKS file).
    pub(super) fixed: KeySet,
    /// Keys from the provider, when configured by URL or issuer.
    pub(super) provider: Option<Arc<ProviderKeys>>,
    pub(super) issuer: Option<String>,
    pub(super) audience: Option<String>,
}

impl JwtVerifier {
    pub(super) async fn verify(&self, token: &str) -> Result<Value, String> {
        let header = jsonwebtoken::decode_header(token).map_err(|e| e.to_string())?;
        let kid = header.kid.as_deref();
        let looked_at = Instant::now();
        let mut provided = self.provider.as_ref().map(|p| p.current());
        let fits = self.fixed.has_fitting(kid, header.alg)
            || provided
                .as_ref()
                .is_some_and(|set| set.has_fitting(kid, header.alg));
        // A key id (or an algorithm) no key holds: the provider may have
        // rotated. Never for a shared-secret algorithm, which no provider
        // key set can hold.
        if !fits
            && header.alg.family() != jsonwebtoken::AlgorithmFamily::Hmac
            && let Some(provider) = &self.provider
            && provider.refetch_for_unknown_key(looked_at).await
        {
            provided = Some(provider.current());
        }
        let candidates = self
            .fixed
            .keys
            .iter()
            .chain(provided.iter().flat_map(|set| set.keys.iter()))
            .filter(|key| key.fits(kid, header.alg));
        let mut last = "no key fits the token's algorithm and key id".to_string();
        for key in candidates {
            match jsonwebtoken::decode::<Value>(token, &key.key, &self.validation(header.alg)) {
                Ok(data) => return Ok(data.claims),
                Err(err) => last = err.to_string(),
            }
        }
        Err(last)
    }

    fn validation(&self, alg: Algorithm) -> Validation {
        let mut validation = Validation::new(alg);
        // jsonwebtoken compares `iss` and `aud` only when present: a
        // configured issuer or audience must also be required. A token is
        // not accepted before its `nbf` either.
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
        validation
    }
}

pub(super) fn load_jwt(
    settings: &JwtSettings,
    environment: &Environment,
) -> Result<JwtVerifier, ConfigError> {
    let mut fixed = KeySet::default();
    if let Some(variable) = &settings.hs256_secret_env {
        let variable_error = |message: String| ConfigError::Variable {
            setting: "auth.jwt",
            variable: variable.clone(),
            message,
        };
        let secret = environment.var(variable).ok_or_else(|| {
            variable_error(format!(
                "auth.jwt: environment variable {variable} (the HS256 secret) is not set"
            ))
        })?;
        if secret.is_empty() {
            return Err(variable_error(format!(
                "auth.jwt: environment variable {variable} is empty"
            )));
        }
        if secret.len() < MIN_HS256_SECRET_BYTES {
            return Err(variable_error(format!(
                "auth.jwt: the HS256 secret in {variable} is {} bytes; at least {MIN_HS256_SECRET_BYTES} are required (RFC 7518 §3.2: a key as long as the hash). Make one with `openssl rand -hex 32`",
                secret.len()
            )));
        }
        let key = jsonwebtoken::DecodingKey::from_secret(secret.as_bytes())
            .map_err(|e| variable_error(format!("auth.jwt: HS256 secret: {e}")))?;
        fixed.keys.push(VerifyingKey {
            kid: None,
            algorithms: vec![Algorithm::HS256],
            key,
        });
    }
    for path in &settings.public_keys {
        let pem = std::fs::read(path)
            .map_err(|e| jwt_file_error(path, format!("cannot read {}: {e}", path.display())))?;
        let key = VerifyingKey::from_pem(&pem).ok_or_else(|| {
            jwt_file_error(
                path,
                format!(
                    "{} is not an RSA, EC or Ed25519 public key in PEM",
                    path.display()
                ),
            )
        })?;
        fixed.keys.push(key);
    }
    if let Some(path) = &settings.jwks_file {
        let text = std::fs::read(path)
            .map_err(|e| jwt_file_error(path, format!("cannot read {}: {e}", path.display())))?;
        let (set, skipped) = KeySet::from_jwks(&text)
            .map_err(|why| jwt_file_error(path, format!("{}: {why}", path.display())))?;
        if set.is_empty() {
            return Err(jwt_file_error(
                path,
                format!(
                    "{} holds no usable signing key ({})",
                    path.display(),
                    skipped.join("; ")
                ),
            ));
        }
        for why in skipped {
            tracing::warn!("auth.jwt: {}: {why}", path.display());
        }
        fixed.keys.extend(set.keys);
    }
    let timing = Timing {
        refresh_interval: Duration::from_millis(settings.refresh_interval_ms.unwrap_or(300_000)),
        refetch_min_interval: Duration::from_millis(
            settings.refetch_min_interval_ms.unwrap_or(10_000),
        ),
        fetch_timeout: Duration::from_millis(settings.fetch_timeout_ms.unwrap_or(5_000)),
    };
    if timing.refresh_interval.is_zero() || timing.fetch_timeout.is_zero() {
        return Err(ConfigError::Value {
            setting: "auth.jwt",
            message: "auth.jwt: refresh_interval_ms and fetch_timeout_ms must be above 0"
                .to_string(),
        });
    }
    let source = match (&settings.jwks_url, &settings.issuer) {
        (Some(url), _) => Some(KeySource::Jwks(url.clone())),
        // An issuer alone: its discovery document names the keys.
        (None, Some(issuer)) if fixed.is_empty() => Some(KeySource::Issuer(issuer.clone())),
        _ => None,
    };
    let provider = match source {
        Some(source) => Some(Arc::new(ProviderKeys::new(source, timing).map_err(
            |why| ConfigError::Value {
                setting: "auth.jwt",
                message: format!("auth.jwt: {why}"),
            },
        )?)),
        None => None,
    };
    if fixed.is_empty() && provider.is_none() {
        return Err(ConfigError::Value {
            setting: "auth.jwt",
            message:
                "auth.jwt: configure jwks_url, issuer, hs256_secret_env, public_keys or jwks_file"
                    .to_string(),
        });
    }
    Ok(JwtVerifier {
        fixed,
        provider,
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

#[cfg(test)]
mod tests {
    use super::*;
    use jsonwebtoken::{EncodingKey, Header, encode};
    use serde_json::json;

    const SECRET: &str = "a-test-secret-of-thirty-two-bytes-or-more";

    fn settings(issuer: Option<&str>) -> JwtSettings {
        JwtSettings {
            hs256_secret_env: Some("SEZZLEE_JWT_UNIT_SECRET".to_string()),
            issuer: issuer.map(str::to_string),
            ..JwtSettings::default()
        }
    }

    fn token(claims: Value) -> String {
        encode(
            &Header::new(Algorithm::HS256),
            &claims,
            &EncodingKey::from_secret(SECRET.as_bytes()).unwrap(),
        )
        .unwrap()
    }

    fn in_an_hour() -> u64 {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs()
            + 3600
    }

    #[tokio::test]
    async fn a_token_is_verified_with_the_secret_from_the_gateway_environment() {
        let environment = Environment::fixed([("SEZZLEE_JWT_UNIT_SECRET", SECRET)]);
        let verifier = load_jwt(&settings(Some("https://idp.example")), &environment).unwrap();
        let good =
            token(json!({"sub": "alice", "iss": "https://idp.example", "exp": in_an_hour()}));
        assert_eq!(verifier.verify(&good).await.unwrap()["sub"], "alice");
        // The configured issuer must be in the token, and be it.
        let no_issuer = token(json!({"sub": "alice", "exp": in_an_hour()}));
        assert!(verifier.verify(&no_issuer).await.is_err());
        let other = token(json!({"sub": "a", "iss": "https://other.example", "exp": in_an_hour()}));
        assert!(verifier.verify(&other).await.is_err());
        let expired = token(json!({"sub": "alice", "iss": "https://idp.example", "exp": 1}));
        assert!(verifier.verify(&expired).await.is_err());
        assert!(verifier.verify("not a token").await.is_err());
    }

    #[test]
    fn a_missing_or_short_secret_is_refused_naming_the_variable() {
        let missing = load_jwt(&settings(None), &Environment::fixed::<&str, &str>([]));
        let message = missing.err().map(|e| e.to_string()).unwrap_or_default();
        assert!(message.contains("SEZZLEE_JWT_UNIT_SECRET"), "{message}");
        let short = Environment::fixed([("SEZZLEE_JWT_UNIT_SECRET", "short")]);
        let message = (load_jwt(&settings(None), &short).err())
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(message.contains("SEZZLEE_JWT_UNIT_SECRET"), "{message}");
    }
}
