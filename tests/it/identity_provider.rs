//! Keys from an identity provider: a real HTTP provider in
//! process (discovery document and JWKS over loopback, keys generated
//! here), a real gateway configured only with the provider's issuer, and
//! tokens signed as the provider would. Discovery, every signing algorithm
//! the gateway takes, rotation at the provider without a restart, the
//! provider down (last good keys kept, status saying so, recovery), a
//! storm of forged key ids (fetches bounded by the rate limit), and
//! `auth.required` with its challenge and protected-resource metadata.

use crate::support::*;
use axum::Router;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use jsonwebtoken::jwk::Jwk;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::{Value, json};
use sezzlee_gateway::settings::{ApiKeySettings, AuthSettings, JwtSettings};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

const AUDIENCE: &str = "https://gateway.example/mcp";

/// A catalog with a public operation and one needing `orders:read`.
const ORDERS: &str = r#"{
  "openapi": "3.0.3",
  "info": {"title": "Orders", "version": "1"},
  "servers": [{"url": "http://127.0.0.1:9"}],
  "components": {"securitySchemes": {"idp": {"type": "oauth2", "flows": {
    "clientCredentials": {"tokenUrl": "https://id.example/token", "scopes": {"orders:read": "read"}}}}}},
  "paths": {
    "/ping": {"get": {"operationId": "ping", "summary": "Ping", "security": [],
      "responses": {"200": {"description": "ok"}}}},
    "/orders": {"get": {"operationId": "listOrders", "summary": "List orders",
      "security": [{"idp": ["orders:read"]}],
      "responses": {"200": {"description": "ok"}}}}
  }
}"#;

// ------------------------------------------------------------ the provider

/// The provider's state: the key set it publishes, whether it is down, and
/// how often each document was fetched.
#[derive(Default)]
struct ProviderState {
    issuer: OnceLock<String>,
    jwks: Mutex<Value>,
    down: AtomicBool,
    discovery_fetches: AtomicUsize,
    jwks_fetches: AtomicUsize,
}

struct Provider {
    issuer: String,
    state: Arc<ProviderState>,
}

impl Provider {
    async fn start(jwks: Value) -> Provider {
        let state = Arc::new(ProviderState::default());
        *state.jwks.lock().unwrap() = jwks;
        let app = Router::new()
            .route("/.well-known/openid-configuration", get(discovery))
            .route("/keys", get(key_set))
            .with_state(state.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let issuer = format!("http://{}", listener.local_addr().unwrap());
        state.issuer.set(issuer.clone()).unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await });
        Provider { issuer, state }
    }

    fn publish(&self, jwks: Value) {
        *self.state.jwks.lock().unwrap() = jwks;
    }

    fn set_down(&self, down: bool) {
        self.state.down.store(down, Ordering::SeqCst);
    }

    fn jwks_fetches(&self) -> usize {
        self.state.jwks_fetches.load(Ordering::SeqCst)
    }
}

async fn discovery(State(state): State<Arc<ProviderState>>) -> Response {
    state.discovery_fetches.fetch_add(1, Ordering::SeqCst);
    if state.down.load(Ordering::SeqCst) {
        return StatusCode::SERVICE_UNAVAILABLE.into_response();
    }
    let issuer = state.issuer.get().cloned().unwrap_or_default();
    axum::Json(json!({"issuer": issuer, "jwks_uri": format!("{issuer}/keys")})).into_response()
}

async fn key_set(State(state): State<Arc<ProviderState>>) -> Response {
    state.jwks_fetches.fetch_add(1, Ordering::SeqCst);
    if state.down.load(Ordering::SeqCst) {
        return StatusCode::SERVICE_UNAVAILABLE.into_response();
    }
    let jwks = state.jwks.lock().unwrap().clone();
    let mut headers = HeaderMap::new();
    headers.insert(
        header::CACHE_CONTROL,
        "public, max-age=3600".parse().unwrap(),
    );
    (headers, axum::Json(jwks)).into_response()
}

// ------------------------------------------------------------ keys

/// A signing key and its public JWK (with its `kid`).
struct SigningKey {
    kid: String,
    algorithm: Algorithm,
    key: EncodingKey,
}

impl SigningKey {
    fn jwk(&self) -> Value {
        let mut jwk = Jwk::from_encoding_key(&self.key, self.algorithm).unwrap();
        jwk.common.key_id = Some(self.kid.clone());
        serde_json::to_value(jwk).unwrap()
    }

    fn sign(&self, claims: &Value) -> String {
        let mut header = Header::new(self.algorithm);
        header.kid = Some(self.kid.clone());
        jsonwebtoken::encode(&header, claims, &self.key).unwrap()
    }
}

fn rsa_key(kid: &str, algorithm: Algorithm) -> SigningKey {
    use rsa::pkcs1::EncodeRsaPrivateKey;
    use rsa::pkcs8::LineEnding;
    static RSA: OnceLock<String> = OnceLock::new();
    // One RSA key per test binary (generating one takes a while); kids
    // tell the JWK entries apart.
    let pem = RSA.get_or_init(|| {
        let private = rsa::PrivateKey::new(&mut getrandom::SysRng, 2048).expect("an RSA key");
        private.to_pkcs1_pem(LineEnding::LF).unwrap().to_string()
    });
    SigningKey {
        kid: kid.to_string(),
        algorithm,
        key: EncodingKey::from_rsa_pem(pem.as_bytes()).unwrap(),
    }
}

fn ec_key(kid: &str) -> SigningKey {
    use p256::pkcs8::EncodePrivateKey;
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).unwrap();
    let secret = p256::SecretKey::from_slice(&bytes).expect("a valid P-256 scalar");
    let der = secret.to_pkcs8_der().unwrap();
    SigningKey {
        kid: kid.to_string(),
        algorithm: Algorithm::ES256,
        key: EncodingKey::from_ec_der(der.as_bytes()),
    }
}

fn ed25519_key(kid: &str) -> SigningKey {
    // PKCS#8 for an Ed25519 seed: a fixed 16-byte prefix, then the seed.
    let mut der = vec![
        0x30, 0x2e, 0x02, 0x01, 0x00, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x04, 0x22, 0x04,
        0x20,
    ];
    let mut seed = [0u8; 32];
    getrandom::fill(&mut seed).unwrap();
    der.extend_from_slice(&seed);
    SigningKey {
        kid: kid.to_string(),
        algorithm: Algorithm::EdDSA,
        key: EncodingKey::from_ed_der(&der),
    }
}

fn jwks(keys: &[&SigningKey]) -> Value {
    json!({"keys": keys.iter().map(|k| k.jwk()).collect::<Vec<_>>()})
}

fn claims(issuer: &str, scope: &str) -> Value {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs();
    json!({"sub": "agent", "scope": scope, "iss": issuer, "aud": AUDIENCE,
           "iat": now, "exp": now + 600})
}

// ------------------------------------------------------------ the gateway

fn provider_auth(issuer: &str, edit: impl FnOnce(&mut AuthSettings)) -> AuthSettings {
    let mut auth = AuthSettings {
        jwt: Some(JwtSettings {
            issuer: Some(issuer.to_string()),
            audience: Some(AUDIENCE.to_string()),
            refetch_min_interval_ms: Some(300),
            ..JwtSettings::default()
        }),
        ..AuthSettings::default()
    };
    edit(&mut auth);
    auth
}

/// The operator's API key (`sezzlee:admin`), which opens `/status` and
/// `/metrics` whatever the provider does: its variable and value.
const ADMIN_KEY: (&str, &str) = (
    "SEZZLEE_IDP_ADMIN_KEY_2C71",
    "idp-admin-key-8d03f5a1c97e4b26",
);
const ADMIN_HEADER: &str = "x-operator-key";

/// A gateway on the orders catalog with `auth` and the operator's API key.
async fn gateway(mut auth: AuthSettings) -> TestGateway {
    static ONCE: std::sync::Once = std::sync::Once::new();
    // For the test gateways only (`support::set_test_variable`).
    ONCE.call_once(|| set_test_variable(ADMIN_KEY.0, ADMIN_KEY.1));
    auth.api_keys.push(ApiKeySettings {
        header: ADMIN_HEADER.to_string(),
        key_env: ADMIN_KEY.0.to_string(),
        subject: "operator".to_string(),
        scopes: vec!["sezzlee:admin".to_string()],
        ..ApiKeySettings::default()
    });
    let mut gateway = TestGateway::with_files(&[("orders.json", ORDERS.to_string())], |settings| {
        settings.auth = Some(auth);
    })
    .await;
    gateway.admin = Some((ADMIN_HEADER.to_string(), ADMIN_KEY.1.to_string()));
    gateway
}

/// search_tools with `token` (none when empty): the HTTP status and the
/// tools seen (empty when refused).
async fn seen(gateway: &TestGateway, token: &str) -> (u16, Vec<String>, Reply) {
    let arguments = json!({"query": "", "limit": 10});
    let reply = gateway
        .modern_custom(
            "tools/call",
            json!({"name": "search_tools", "arguments": arguments}),
            |_, headers| {
                if !token.is_empty() {
                    headers.push(("authorization", format!("Bearer {token}")));
                }
            },
        )
        .await;
    if reply.status != 200 {
        return (reply.status, Vec::new(), reply);
    }
    let mut tools = names(&tool_reply(&reply.json()["result"]).payload);
    tools.sort();
    (reply.status, tools, reply)
}

async fn tools_seen(gateway: &TestGateway, token: &str) -> Vec<String> {
    let (status, tools, reply) = seen(gateway, token).await;
    assert_eq!(status, 200, "{}", reply.text);
    tools
}

const PUBLIC: [&str; 1] = ["ping"];
const ALL: [&str; 2] = ["list_orders", "ping"];

fn provider_status(status: &Value) -> &Value {
    &status["auth"]["jwt"]["provider"]
}

/// Polls `/status` until `check` holds on the provider's part (10 s).
async fn wait_for_status(gateway: &TestGateway, what: &str, check: impl Fn(&Value) -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let status = gateway.status().await;
        if check(provider_status(&status)) {
            return;
        }
        assert!(Instant::now() < deadline, "{what}: {status}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn keys_found_through_discovery_verify_every_signing_algorithm() {
    let rs = rsa_key("rs", Algorithm::RS256);
    let ps = rsa_key("ps", Algorithm::PS256);
    let es = ec_key("es");
    let ed = ed25519_key("ed");
    let provider = Provider::start(jwks(&[&rs, &ps, &es, &ed])).await;
    let gateway = gateway(provider_auth(&provider.issuer, |_| {})).await;
    let claims = claims(&provider.issuer, "orders:read");
    for key in [&rs, &ps, &es, &ed] {
        assert_eq!(
            tools_seen(&gateway, &key.sign(&claims)).await,
            ALL,
            "{:?}",
            key.algorithm
        );
    }
    // Not a credential: a key the provider does not publish under a known
    // kid, `alg: none`, an HS256 token keyed with a public key's bytes, the
    // wrong issuer or audience, an oversized token.
    let stranger = SigningKey {
        kid: "es".to_string(),
        ..ec_key("x")
    };
    let forged_hs = {
        let public = serde_json::to_vec(&es.jwk()).unwrap();
        let mut header = Header::new(Algorithm::HS256);
        header.kid = Some("es".to_string());
        jsonwebtoken::encode(
            &header,
            &claims,
            &EncodingKey::from_secret(&public).unwrap(),
        )
        .unwrap()
    };
    let unsigned = {
        use base64::Engine;
        let b64 = |b: &[u8]| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(b);
        format!(
            "{}.{}.",
            b64(br#"{"alg":"none","kid":"es"}"#),
            b64(claims.to_string().as_bytes())
        )
    };
    let mut wrong_issuer = claims.clone();
    wrong_issuer["iss"] = json!("https://elsewhere.example");
    let mut wrong_audience = claims.clone();
    wrong_audience["aud"] = json!("https://other-gateway.example/mcp");
    let mut huge = claims.clone();
    huge["padding"] = json!("x".repeat(20_000));
    for (label, token) in [
        ("stranger's key", stranger.sign(&claims)),
        ("HS256 with a public key", forged_hs),
        ("alg none", unsigned),
        ("wrong issuer", es.sign(&wrong_issuer)),
        ("wrong audience", es.sign(&wrong_audience)),
        ("oversized", es.sign(&huge)),
    ] {
        assert_eq!(tools_seen(&gateway, &token).await, PUBLIC, "{label}");
    }
    let status = gateway.status().await;
    let keys = provider_status(&status);
    assert_eq!(keys["source"], "issuer", "{status}");
    assert_eq!(keys["keys"], 4, "{status}");
    assert_eq!(keys["jwksUri"], format!("{}/keys", provider.issuer));
    assert_eq!(keys["refreshFailing"], false);
    assert!(keys["lastRefreshAtUnixMs"].as_u64().is_some(), "{status}");
    let metrics = gateway.metrics().await;
    assert!(
        metrics.contains("\nsezzlee_auth_provider_keys 4\n"),
        "{metrics}"
    );
    assert!(
        metrics.contains("\nsezzlee_auth_provider_refresh_failing 0\n"),
        "{metrics}"
    );
}

#[tokio::test]
async fn a_rotation_at_the_provider_is_followed_without_a_restart() {
    let old = ec_key("2026-11");
    let provider = Provider::start(jwks(&[&old])).await;
    let gateway = gateway(provider_auth(&provider.issuer, |_| {})).await;
    let claims = claims(&provider.issuer, "orders:read");
    let old_token = old.sign(&claims);
    assert_eq!(tools_seen(&gateway, &old_token).await, ALL);
    let fetched = provider.jwks_fetches();

    // The provider publishes a new key beside the old, then alone.
    let new = ed25519_key("2026-12");
    provider.publish(jwks(&[&old, &new]));
    tokio::time::sleep(Duration::from_millis(350)).await;
    assert_eq!(
        tools_seen(&gateway, &new.sign(&claims)).await,
        ALL,
        "a token of the new key, before any scheduled refresh"
    );
    assert_eq!(
        provider.jwks_fetches(),
        fetched + 1,
        "one fetch for the new kid"
    );
    provider.publish(jwks(&[&new]));
    tokio::time::sleep(Duration::from_millis(350)).await;
    // The old key's token still passes until the set is fetched again; a
    // token naming a third, unknown kid makes that happen.
    let unknown = SigningKey {
        kid: "nobody".to_string(),
        ..ec_key("x")
    };
    assert_eq!(tools_seen(&gateway, &unknown.sign(&claims)).await, PUBLIC);
    assert_eq!(
        tools_seen(&gateway, &old_token).await,
        PUBLIC,
        "the removed key's token"
    );
    assert_eq!(tools_seen(&gateway, &new.sign(&claims)).await, ALL);
    assert_eq!(provider_status(&gateway.status().await)["keys"], 1);
}

#[tokio::test]
async fn the_last_good_keys_serve_while_the_provider_is_down() {
    let key = rsa_key("main", Algorithm::RS256);
    let provider = Provider::start(jwks(&[&key])).await;
    let gateway = gateway(provider_auth(&provider.issuer, |_| {})).await;
    let claims = claims(&provider.issuer, "orders:read");
    assert_eq!(tools_seen(&gateway, &key.sign(&claims)).await, ALL);

    provider.set_down(true);
    tokio::time::sleep(Duration::from_millis(350)).await;
    // An unknown kid makes the gateway try, and fail.
    let unknown = ec_key("unknown");
    assert_eq!(tools_seen(&gateway, &unknown.sign(&claims)).await, PUBLIC);
    wait_for_status(&gateway, "refresh failing", |p| p["refreshFailing"] == true).await;
    let status = gateway.status().await;
    let failing = provider_status(&status);
    assert_eq!(failing["keys"], 1, "{status}");
    assert!(
        failing["lastError"].as_str().unwrap().contains("HTTP 503"),
        "{status}"
    );
    assert_eq!(
        tools_seen(&gateway, &key.sign(&claims)).await,
        ALL,
        "the last good key, provider down"
    );

    // Back up: the background retry (after a second) recovers on its own.
    provider.set_down(false);
    wait_for_status(&gateway, "refresh recovered", |p| {
        p["refreshFailing"] == false
    })
    .await;
    assert_eq!(tools_seen(&gateway, &key.sign(&claims)).await, ALL);
}

#[tokio::test]
async fn a_storm_of_unknown_key_ids_fetches_at_the_rate_limit() {
    let key = ec_key("real");
    let provider = Provider::start(jwks(&[&key])).await;
    let gateway = gateway(provider_auth(&provider.issuer, |auth| {
        if let Some(jwt) = auth.jwt.as_mut() {
            jwt.refetch_min_interval_ms = Some(500);
        }
    }))
    .await;
    let claims = claims(&provider.issuer, "orders:read");
    assert_eq!(tools_seen(&gateway, &key.sign(&claims)).await, ALL);
    // Past the rate limit of the fetch at start, then 8 waves of 25
    // concurrent forged kids, a quarter second apart.
    tokio::time::sleep(Duration::from_millis(600)).await;
    let before = provider.jwks_fetches();
    let started = Instant::now();
    let forger = ec_key("x");
    for round in 0..8 {
        let wave = (0..25).map(|i| {
            let forged = SigningKey {
                kid: format!("forged-{round}-{i}"),
                algorithm: Algorithm::ES256,
                key: forger.key.clone(),
            };
            let token = forged.sign(&claims);
            let gateway = &gateway;
            async move { seen(gateway, &token).await.1 }
        });
        let results = futures_util::future::join_all(wave).await;
        assert!(
            results.iter().all(|tools| tools == &PUBLIC),
            "forged kids saw more"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    let elapsed = started.elapsed();
    let fetches = provider.jwks_fetches() - before;
    let bound = (elapsed.as_millis() / 500) as usize + 1;
    assert!(
        (2..=bound).contains(&fetches),
        "200 forged kids in {elapsed:?}: {fetches} fetches (at most {bound})"
    );
    let status = gateway.status().await;
    assert!(
        provider_status(&status)["refetchesRateLimited"]
            .as_u64()
            .unwrap()
            > 0,
        "{status}"
    );
    // The real key still works right after.
    assert_eq!(tools_seen(&gateway, &key.sign(&claims)).await, ALL);
}

#[tokio::test]
async fn auth_required_challenges_and_the_metadata_names_the_provider() {
    let key = ec_key("k");
    let provider = Provider::start(jwks(&[&key])).await;
    let gateway = gateway(provider_auth(&provider.issuer, |auth| auth.required = true)).await;
    let claims = claims(&provider.issuer, "orders:read");

    let metadata_url = format!("{}/.well-known/oauth-protected-resource/mcp", gateway.base);
    let (status, _, reply) = seen(&gateway, "").await;
    assert_eq!(status, 401, "{}", reply.text);
    assert_eq!(
        reply.header("www-authenticate"),
        Some(format!("Bearer resource_metadata=\"{metadata_url}\"").as_str())
    );
    assert_eq!(reply.json()["error"]["code"], -32600, "{}", reply.text);
    let mut expired = claims.clone();
    expired["exp"] = json!(1_000_000_000);
    for (label, token) in [
        ("expired", key.sign(&expired)),
        ("opaque", "an-opaque-token".to_string()),
        ("garbage", "a.b.c".to_string()),
    ] {
        let (status, _, reply) = seen(&gateway, &token).await;
        assert_eq!(status, 401, "{label}: {}", reply.text);
        let challenge = reply.header("www-authenticate").unwrap_or_default();
        assert!(
            challenge.starts_with(&format!("Bearer resource_metadata=\"{metadata_url}\""))
                && challenge.contains("error=\"invalid_token\""),
            "{label}: {challenge}"
        );
    }
    assert_eq!(tools_seen(&gateway, &key.sign(&claims)).await, ALL);
    // A verified caller without the scope passes, and sees what it may.
    assert_eq!(
        tools_seen(&gateway, &key.sign(&claims_with_scope(&claims, ""))).await,
        PUBLIC
    );

    for url in [
        metadata_url.clone(),
        format!("{}/.well-known/oauth-protected-resource", gateway.base),
    ] {
        let response = gateway.client.get(&url).send().await.unwrap();
        assert_eq!(response.status(), 200, "{url}");
        let document: Value = response.json().await.unwrap();
        assert_eq!(
            document,
            json!({
                "resource": format!("{}/mcp", gateway.base),
                "authorization_servers": [provider.issuer],
                "scopes_supported": ["orders:read"],
                "bearer_methods_supported": ["header"],
                "resource_name": "sezzlee MCP gateway",
            }),
            "{url}"
        );
    }
}

fn claims_with_scope(claims: &Value, scope: &str) -> Value {
    let mut claims = claims.clone();
    claims["scope"] = json!(scope);
    claims
}

#[tokio::test]
async fn without_auth_required_an_invalid_token_is_no_credential_and_resource_is_configurable() {
    let key = ec_key("k");
    let provider = Provider::start(jwks(&[&key])).await;
    let gateway = gateway(provider_auth(&provider.issuer, |auth| {
        auth.resource = Some("https://gateway.example/mcp".to_string());
        auth.authorization_servers = vec!["https://login.example".to_string()];
    }))
    .await;
    let (status, tools, _) = seen(&gateway, "a.b.c").await;
    assert_eq!((status, tools), (200, PUBLIC.map(String::from).to_vec()));
    let response = gateway
        .client
        .get(format!(
            "{}/.well-known/oauth-protected-resource/mcp",
            gateway.base
        ))
        .send()
        .await
        .unwrap();
    let document: Value = response.json().await.unwrap();
    assert_eq!(document["resource"], "https://gateway.example/mcp");
    assert_eq!(
        document["authorization_servers"],
        json!(["https://login.example"])
    );
}

#[tokio::test]
async fn no_auth_means_no_metadata() {
    let gateway = TestGateway::with_files(&[("orders.json", ORDERS.to_string())], |_| {}).await;
    let response = gateway
        .client
        .get(format!(
            "{}/.well-known/oauth-protected-resource",
            gateway.base
        ))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 404);
}

#[tokio::test]
async fn the_metadata_scopes_follow_a_reload() {
    let key = ec_key("k");
    let provider = Provider::start(jwks(&[&key])).await;
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("orders.json"), ORDERS).unwrap();
    let mut settings = test_settings(dir.path());
    settings.auth = Some(provider_auth(&provider.issuer, |_| {}));
    let catalogs = dir.path().to_path_buf();
    let (gateway, reloader, _watcher) = TestGateway::start_reloading(settings, Some(dir)).await;
    let scopes = || async {
        let url = format!("{}/.well-known/oauth-protected-resource", gateway.base);
        let document: Value = gateway
            .client
            .get(url)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        document["scopes_supported"].clone()
    };
    assert_eq!(scopes().await, json!(["orders:read"]));
    let more = ORDERS.replace(
        r#"[{"idp": ["orders:read"]}]"#,
        r#"[{"idp": ["orders:read", "orders:audit"]}]"#,
    );
    assert_ne!(more, ORDERS);
    std::fs::write(catalogs.join("orders.json"), more).unwrap();
    reloader.rescan().await;
    assert_eq!(scopes().await, json!(["orders:audit", "orders:read"]));
}
