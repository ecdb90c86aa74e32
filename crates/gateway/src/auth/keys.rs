//! Verifying keys: what a token's signature may be checked against, and
//! with which algorithms.
//!
//! Keys come from PEM files, a JWKS (a file, or a provider's, see
//! [`super::provider`]) or an HS256 secret. Each key allows only the
//! algorithms of its own type (RSA: RS*/PS*, EC: the ES* of its curve,
//! Ed25519: EdDSA, a secret: HS256), so a token cannot choose how it is
//! checked: `alg: none` and an HS256 token "signed" with a public RSA key
//! both find no key. A symmetric (`oct`) key in a JWKS is ignored: a
//! published key set must never become a shared secret.

use jsonwebtoken::jwk::{AlgorithmParameters, EllipticCurve, Jwk, PublicKeyUse};
use jsonwebtoken::{Algorithm, DecodingKey};
use serde_json::Value;
use std::str::FromStr;

/// The algorithms an RSA key may verify.
const RSA: [Algorithm; 6] = [
    Algorithm::RS256,
    Algorithm::RS384,
    Algorithm::RS512,
    Algorithm::PS256,
    Algorithm::PS384,
    Algorithm::PS512,
];

/// One key and the algorithms it may verify.
pub struct VerifyingKey {
    /// The JWKS `kid`, when it has one.
    pub kid: Option<String>,
    pub algorithms: Vec<Algorithm>,
    pub key: DecodingKey,
}

impl VerifyingKey {
    /// Whether this key may check a token whose header names `kid` and
    /// `alg`: the algorithm must be one of the key's, and when both name a
    /// key id they must agree.
    pub fn fits(&self, kid: Option<&str>, alg: Algorithm) -> bool {
        self.algorithms.contains(&alg)
            && match (kid, self.kid.as_deref()) {
                (Some(want), Some(have)) => want == have,
                _ => true,
            }
    }

    /// A public key in PEM: RSA, EC (P-256 or P-384) or Ed25519.
    pub fn from_pem(pem: &[u8]) -> Option<VerifyingKey> {
        let (algorithms, key) = if let Ok(key) = DecodingKey::from_rsa_pem(pem) {
            (RSA.to_vec(), key)
        } else if let Ok(key) = DecodingKey::from_ec_pem(pem) {
            // The curve is not known here; a signature of the other curve's
            // algorithm fails to verify.
            (vec![Algorithm::ES256, Algorithm::ES384], key)
        } else if let Ok(key) = DecodingKey::from_ed_pem(pem) {
            (vec![Algorithm::EdDSA], key)
        } else {
            return None;
        };
        Some(VerifyingKey {
            kid: None,
            algorithms,
            key,
        })
    }

    /// A key of a JWKS, or why it is not used.
    fn from_jwk(jwk: &Jwk) -> Result<VerifyingKey, String> {
        if matches!(jwk.common.public_key_use, Some(ref u) if *u != PublicKeyUse::Signature) {
            return Err("not a signing key (\"use\" is not \"sig\")".to_string());
        }
        let allowed: Vec<Algorithm> = match &jwk.algorithm {
            AlgorithmParameters::RSA(_) => RSA.to_vec(),
            AlgorithmParameters::EllipticCurve(params) => match params.curve {
                EllipticCurve::P256 => vec![Algorithm::ES256],
                EllipticCurve::P384 => vec![Algorithm::ES384],
                _ => return Err("an EC curve other than P-256 and P-384".to_string()),
            },
            AlgorithmParameters::OctetKeyPair(params) if params.curve == EllipticCurve::Ed25519 => {
                vec![Algorithm::EdDSA]
            }
            AlgorithmParameters::OctetKeyPair(_) => {
                return Err("an OKP curve other than Ed25519".to_string());
            }
            AlgorithmParameters::OctetKey(_) => {
                return Err("a symmetric key (never taken from a key set)".to_string());
            }
            _ => return Err("an unknown key type".to_string()),
        };
        // A key that names its algorithm allows only that one.
        let algorithms = match jwk.common.key_algorithm {
            Some(named) => {
                let named = serde_json::to_value(named)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_string))
                    .and_then(|name| Algorithm::from_str(&name).ok());
                match named {
                    Some(named) if allowed.contains(&named) => vec![named],
                    _ => return Err("its \"alg\" does not fit its key type".to_string()),
                }
            }
            None => allowed,
        };
        let key = DecodingKey::from_jwk(jwk).map_err(|e| format!("unreadable: {e}"))?;
        Ok(VerifyingKey {
            kid: jwk.common.key_id.clone(),
            algorithms,
            key,
        })
    }
}

/// The keys of one source.
#[derive(Default)]
pub struct KeySet {
    pub keys: Vec<VerifyingKey>,
}

impl KeySet {
    /// The usable keys of a JWKS document, and why each other key was
    /// skipped (a key of an unknown type or algorithm does not spoil the
    /// others). An error when the document is not a JWKS at all.
    pub fn from_jwks(text: &[u8]) -> Result<(KeySet, Vec<String>), String> {
        let document: Value = serde_json::from_slice(text).map_err(|e| format!("not JSON: {e}"))?;
        let Some(entries) = document.get("keys").and_then(Value::as_array) else {
            return Err("not a JWKS (no \"keys\" array)".to_string());
        };
        let mut keys = Vec::new();
        let mut skipped = Vec::new();
        for (i, entry) in entries.iter().enumerate() {
            let label = entry
                .get("kid")
                .and_then(Value::as_str)
                .map_or_else(|| format!("key {i}"), |kid| format!("key '{kid}'"));
            match serde_json::from_value::<Jwk>(entry.clone())
                .map_err(|e| format!("unreadable: {e}"))
                .and_then(|jwk| VerifyingKey::from_jwk(&jwk))
            {
                Ok(key) => keys.push(key),
                Err(why) => skipped.push(format!("{label}: {why}")),
            }
        }
        Ok((KeySet { keys }, skipped))
    }

    pub fn len(&self) -> usize {
        self.keys.len()
    }

    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// Whether a key of this set may check a token with `kid` and `alg`.
    pub fn has_fitting(&self, kid: Option<&str>, alg: Algorithm) -> bool {
        self.keys.iter().any(|key| key.fits(kid, alg))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_jwks_keeps_signing_keys_and_says_why_others_are_skipped() {
        let jwks = serde_json::json!({"keys": [
            {"kty": "oct", "kid": "secret", "k": "c2VjcmV0"},
            {"kty": "OKP", "crv": "Ed25519", "kid": "ed", "x": "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"},
            {"kty": "RSA", "kid": "enc", "use": "enc", "n": "AQAB", "e": "AQAB"},
            {"kty": "RSA", "kid": "odd", "alg": "ES256", "n": "AQAB", "e": "AQAB"},
            {"kty": "XYZ", "kid": "unknown"},
            {"kty": "RSA", "kid": "rsa", "alg": "PS256", "n": "AQAB", "e": "AQAB"},
        ]});
        let (set, skipped) = KeySet::from_jwks(jwks.to_string().as_bytes()).unwrap();
        let kids: Vec<_> = set.keys.iter().map(|k| k.kid.clone().unwrap()).collect();
        assert_eq!(kids, ["ed", "rsa"]);
        assert_eq!(set.keys[0].algorithms, [Algorithm::EdDSA]);
        assert_eq!(set.keys[1].algorithms, [Algorithm::PS256]);
        assert_eq!(skipped.len(), 4, "{skipped:?}");
        assert!(skipped[0].contains("symmetric"), "{skipped:?}");
        assert!(set.has_fitting(Some("rsa"), Algorithm::PS256));
        assert!(!set.has_fitting(Some("rsa"), Algorithm::RS256));
        assert!(!set.has_fitting(Some("secret"), Algorithm::HS256));
        assert!(set.has_fitting(None, Algorithm::EdDSA));
    }

    #[test]
    fn what_is_not_a_jwks_is_an_error() {
        assert!(KeySet::from_jwks(b"<html>").is_err());
        assert!(KeySet::from_jwks(b"{\"keys\": 3}").is_err());
        let (empty, skipped) = KeySet::from_jwks(b"{\"keys\": []}").unwrap();
        assert!(empty.is_empty() && skipped.is_empty());
    }
}
