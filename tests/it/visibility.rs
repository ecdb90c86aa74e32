//! Per-caller visibility and identity end to end (docs/contract.md §4;
//! docs/seeds/000_da61510cfeeb091b.txt): real gateways on
//! loopback, real signed tokens minted here (HS256 with a secret, RS256 and
//! ES256 with key pairs generated at run time, served as PEM files or a
//! JWKS file) and API keys, and a recording backend that shows what
//! identity leaves the gateway.
//!
//! Every test builds the same two-document catalog in its own folder:
//! `shop.yaml` (oauth2 scopes, a document-level requirement, `security: []`,
//! an optional requirement, alternatives, a policy attached by
//! `x-sezzlee-visibility` and one by the sidecar) and `internal.yaml` (a
//! sidecar-wide default policy and a `public` policy override). Most tags
//! are carried only by tools some callers cannot see, so the `tags`
//! vocabulary tells callers apart as much as `total` and the names do.
//!
//! Environment variables (secrets, API keys, the static header) are set
//! once, before any test starts a server, with names unique to each test.
//! What the gateway logs is read from `sezzlee serve` child processes: a
//! subscriber scoped to one test thread would miss events whose callsites
//! another test thread registered first.

use crate::backend::Backend;
use crate::support::*;
use base64::Engine;
use jsonwebtoken::jwk::{Jwk, JwkSet};
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::{Value, json};
use sezzlee_gateway::settings::{ApiKeySettings, AuthSettings, JwtSettings};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex, Once, OnceLock};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

const ISSUER: &str = "https://issuer.example";
const AUDIENCE: &str = "sezzlee-visibility-tests";

/// One variable and its value per use; the values are distinctive so a
/// leak is found by a plain substring search.
const CALLERS_SECRET: (&str, &str) = (
    "SEZZLEE_VIS_CALLERS_HS256_3A91",
    "callers-hs256-secret-0d7c5e1b9f2a4c68",
);
const UNCERTAIN_SECRET: (&str, &str) = (
    "SEZZLEE_VIS_UNCERTAIN_HS256_5B02",
    "uncertain-hs256-secret-7e3f19ad42c05b86",
);
const DIFFERENTIAL_SECRET: (&str, &str) = (
    "SEZZLEE_VIS_DIFFERENTIAL_HS256_8C13",
    "differential-hs256-secret-c41e8b07d2f9a365",
);
const POLICY_SECRET: (&str, &str) = (
    "SEZZLEE_VIS_POLICY_HS256_1D24",
    "policy-hs256-secret-5a0f3c72e9b84d16",
);
const INVOKE_SECRET: (&str, &str) = (
    "SEZZLEE_VIS_INVOKE_HS256_6E35",
    "invoke-hs256-secret-93b2d4e07a1fc858",
);
const INVOKE_KEY: (&str, &str) = (
    "SEZZLEE_VIS_INVOKE_API_KEY_6E36",
    "invoke-api-key-2f8e61c0b7d3a954",
);
const API_KEY_READER: (&str, &str) = (
    "SEZZLEE_VIS_API_KEY_READER_4F47",
    "reader-api-key-b16d09e3f52a7c84",
);
const API_KEY_STAFF: (&str, &str) = (
    "SEZZLEE_VIS_API_KEY_STAFF_4F48",
    "staff-api-key-e05a7c3d91b26f47",
);
const STATUS_SECRET: (&str, &str) = (
    "SEZZLEE_VIS_STATUS_HS256_7A59",
    "status-hs256-secret-68c3e0f14b9d2a75",
);
const STATUS_KEY: (&str, &str) = (
    "SEZZLEE_VIS_STATUS_API_KEY_7A5A",
    "status-api-key-a97d2b05e8c14f63",
);
const TOKEN_SECRET: (&str, &str) = (
    "SEZZLEE_VIS_TOKEN_CMD_HS256_9B6B",
    "token-command-secret-1c5f8a3e07d2b694",
);
/// The static header every call of `shop.yaml` carries.
const STATIC_HEADER: (&str, &str) = (
    "SEZZLEE_VIS_STATIC_HEADER_0D8D",
    "static-header-from-the-environment",
);
/// Set to the empty string: an `[auth]` naming it is refused.
const EMPTY_VARIABLE: &str = "SEZZLEE_VIS_EMPTY_0E9E";
/// Never set: an `[auth]` naming it is refused.
const UNSET_VARIABLE: &str = "SEZZLEE_VIS_UNSET_0FAF";

/// Sets this module's variables for the test gateways (never in the
/// process environment; `support::set_test_variable`), once.
fn init() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        {
            for (name, value) in [
                CALLERS_SECRET,
                UNCERTAIN_SECRET,
                DIFFERENTIAL_SECRET,
                POLICY_SECRET,
                INVOKE_SECRET,
                INVOKE_KEY,
                API_KEY_READER,
                API_KEY_STAFF,
                STATUS_SECRET,
                STATUS_KEY,
                TOKEN_SECRET,
                STATIC_HEADER,
            ] {
                set_test_variable(name, value);
            }
            set_test_variable(EMPTY_VARIABLE, "");
            // UNSET_VARIABLE is never set.
        }
    });
}

// ------------------------------------------------------------ the catalog

/// Every tool of the test catalog and its tags (folded).
const TOOLS: [(&str, &[&str]); 10] = [
    ("browse_catalogue", &["catalog"]),
    ("create_product", &["catalog", "writing"]),
    ("delete_product", &["catalog", "danger zone"]),
    ("get_health", &["status"]),
    ("get_reports", &["reports"]),
    ("get_rota", &["staff only"]),
    ("internal_metrics", &["ops"]),
    ("internal_ping", &["ops"]),
    ("list_products", &["catalog"]),
    ("purge_all", &["maintenance"]),
];

/// Visible to everybody: `security: []`, an optional (`{}`) requirement,
/// a `public` policy.
const PUBLIC: [&str; 3] = ["browse_catalogue", "get_health", "internal_ping"];

/// The policy names of the catalog: none may ever reach an agent.
const POLICY_NAMES: [&str; 4] = [
    "secret_policy_q7",
    "staff_policy_q7",
    "ops_policy_q7",
    "open_policy_q7",
];

const SHOP: &str = r#"
openapi: 3.0.3
info: {title: Shop, version: "1.0"}
servers: [{url: "http://127.0.0.1:9"}]
components:
  securitySchemes:
    oauth:
      type: oauth2
      flows:
        clientCredentials:
          tokenUrl: https://issuer.example/token
          scopes:
            shop:read: read
            shop:write: write
            shop:delete: delete
            shop:reports: reports
            shop:audit: audit
            shop:admin: admin
# Applies to every operation that declares no security of its own.
security:
  - oauth: [shop:read]
paths:
  /health:
    get:
      operationId: getHealth
      summary: Reports whether the shop is up.
      tags: [status]
      security: []
      responses: {"200": {description: ok}}
  /catalogue:
    get:
      operationId: browseCatalogue
      summary: Browses the public catalogue; a token only personalises it.
      tags: [catalog]
      security: [{}, {oauth: [shop:read]}]
      responses: {"200": {description: ok}}
  /products:
    get:
      operationId: listProducts
      summary: Lists products.
      tags: [catalog]
      responses: {"200": {description: ok}}
    post:
      operationId: createProduct
      summary: Creates a product.
      tags: [catalog, writing]
      security: [{oauth: [shop:write]}]
      requestBody:
        required: true
        content:
          application/json:
            schema:
              type: object
              properties: {title: {type: string}}
              required: [title]
      responses: {"201": {description: created}}
  /products/{id}:
    delete:
      operationId: deleteProduct
      summary: Deletes a product.
      tags: [catalog, danger zone]
      security: [{oauth: [shop:write, shop:delete]}]
      parameters: [{name: id, in: path, required: true, schema: {type: integer}}]
      responses: {"204": {description: gone}}
  /reports:
    get:
      operationId: getReports
      summary: Sales reports.
      tags: [reports]
      security: [{oauth: [shop:reports]}, {oauth: [shop:audit]}]
      responses: {"200": {description: ok}}
  /admin/purge:
    post:
      operationId: purgeAll
      summary: Purges every product.
      tags: [maintenance]
      x-sezzlee-visibility: secret_policy_q7
      requestBody:
        required: true
        content:
          application/json:
            schema:
              type: object
              properties: {confirm: {type: boolean}}
              required: [confirm]
      responses: {"200": {description: ok}}
  /staff/rota:
    get:
      operationId: getRota
      summary: The staff rota.
      tags: [staff only]
      responses: {"200": {description: ok}}
"#;

const SHOP_SIDECAR: &str = r#"
namespace: shop
backend:
  baseUrl: BACKEND
  auth: {mode: passthrough}
  headers:
    X-Static-Token: "${STATIC}"
policies:
  secret_policy_q7: {anyScope: [shop:admin]}
  staff_policy_q7: {anyRole: [staff]}
tools:
  GET /staff/rota:
    visibility: staff_policy_q7
"#;

const INTERNAL: &str = r#"
openapi: 3.0.3
info: {title: Internal, version: "1.0"}
servers: [{url: "http://127.0.0.1:9"}]
paths:
  /internal/metrics:
    get:
      operationId: internalMetrics
      summary: Internal metrics.
      tags: [ops]
      responses: {"200": {description: ok}}
  /internal/ping:
    get:
      operationId: internalPing
      summary: Pings the internal service.
      tags: [ops]
      responses: {"200": {description: ok}}
"#;

const INTERNAL_SIDECAR: &str = r#"
namespace: internal
backend:
  baseUrl: BACKEND
  forwardHeaders: [x-tenant]
visibility: ops_policy_q7
policies:
  ops_policy_q7: {anyScope: [ops]}
  open_policy_q7: {public: true}
tools:
  GET /internal/ping:
    visibility: open_policy_q7
"#;

/// The catalogs folder, its backends at `backend`.
fn catalog(backend: &str) -> Vec<(&'static str, String)> {
    vec![
        ("shop.yaml", SHOP.to_string()),
        (
            "shop.sezzlee.yaml",
            SHOP_SIDECAR
                .replace("BACKEND", backend)
                .replace("STATIC", STATIC_HEADER.0),
        ),
        ("internal.yaml", INTERNAL.to_string()),
        (
            "internal.sezzlee.yaml",
            INTERNAL_SIDECAR.replace("BACKEND", backend),
        ),
    ]
}

/// A backend address nothing listens on (for tests that never invoke).
const NOWHERE: &str = "http://127.0.0.1:9";

async fn gateway(backend: &str, auth: Option<AuthSettings>) -> TestGateway {
    TestGateway::with_files(&catalog(backend), |settings| settings.auth = auth).await
}

/// `[auth.jwt]` with an HS256 secret in `variable`.
fn hs256_auth(variable: &str, issuer_and_audience: bool) -> AuthSettings {
    AuthSettings {
        jwt: Some(JwtSettings {
            hs256_secret_env: Some(variable.to_string()),
            issuer: issuer_and_audience.then(|| ISSUER.to_string()),
            audience: issuer_and_audience.then(|| AUDIENCE.to_string()),
            ..JwtSettings::default()
        }),
        api_keys: Vec::new(),
        ..Default::default()
    }
}

// ------------------------------------------------------------ tokens

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

/// Valid claims: `scope` space separated, `roles`, issuer, audience and an
/// expiry ten minutes away.
fn claims(scope: &str, roles: &[&str]) -> Value {
    json!({
        "sub": "tester",
        "scope": scope,
        "roles": roles,
        "iss": ISSUER,
        "aud": AUDIENCE,
        "iat": now(),
        "exp": now() + 600,
    })
}

/// `claims` after `edit`.
fn claims_with(scope: &str, edit: impl FnOnce(&mut serde_json::Map<String, Value>)) -> Value {
    let mut claims = claims(scope, &[]);
    edit(claims.as_object_mut().unwrap());
    claims
}

const EVERYTHING: &str = "shop:read shop:write shop:delete shop:reports shop:admin ops";

fn hs256(secret: &str, claims: &Value) -> String {
    let key = EncodingKey::from_secret(secret.as_bytes()).unwrap();
    jsonwebtoken::encode(&Header::new(Algorithm::HS256), claims, &key).unwrap()
}

fn sign(algorithm: Algorithm, kid: Option<&str>, key: &EncodingKey, claims: &Value) -> String {
    let mut header = Header::new(algorithm);
    header.kid = kid.map(str::to_string);
    jsonwebtoken::encode(&header, claims, key).unwrap()
}

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

/// The token with one character of its signature changed.
fn tamper_signature(token: &str) -> String {
    let (signed, signature) = token.rsplit_once('.').unwrap();
    let mut bytes = signature.as_bytes().to_vec();
    let middle = bytes.len() / 2;
    bytes[middle] = if bytes[middle] == b'A' { b'B' } else { b'A' };
    let tampered = format!("{signed}.{}", String::from_utf8(bytes).unwrap());
    assert_ne!(tampered, token);
    tampered
}

/// The token with its payload replaced by `claims` and its signature kept.
fn tamper_payload(token: &str, claims: &Value) -> String {
    let parts: Vec<&str> = token.split('.').collect();
    assert_eq!(parts.len(), 3);
    format!(
        "{}.{}.{}",
        parts[0],
        b64(claims.to_string().as_bytes()),
        parts[2]
    )
}

/// An unsigned token (`alg: none`).
fn unsigned(claims: &Value) -> String {
    format!(
        "{}.{}.",
        b64(br#"{"alg":"none","typ":"JWT"}"#),
        b64(claims.to_string().as_bytes())
    )
}

/// Key pairs generated once per test binary.
struct Keys {
    rsa: EncodingKey,
    rsa_public_pem: String,
    ec: EncodingKey,
    ec_public_pem: String,
    /// A second EC key the gateway is never told about.
    stranger: EncodingKey,
}

fn ec_key() -> (EncodingKey, String) {
    use p256::pkcs8::{EncodePrivateKey, EncodePublicKey, LineEnding};
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).unwrap();
    let secret = p256::SecretKey::from_slice(&bytes).expect("a valid P-256 scalar");
    let der = secret.to_pkcs8_der().unwrap();
    let public = secret
        .public_key()
        .to_public_key_pem(LineEnding::LF)
        .unwrap();
    (EncodingKey::from_ec_der(der.as_bytes()), public)
}

fn keys() -> &'static Keys {
    static KEYS: OnceLock<Keys> = OnceLock::new();
    KEYS.get_or_init(|| {
        use rsa::pkcs1::EncodeRsaPrivateKey;
        use rsa::pkcs8::{EncodePublicKey, LineEnding};
        let private = rsa::PrivateKey::new(&mut getrandom::SysRng, 2048).expect("an RSA key");
        let private_pem = private.to_pkcs1_pem(LineEnding::LF).unwrap();
        let rsa_public_pem = private
            .to_public_key()
            .to_public_key_pem(LineEnding::LF)
            .unwrap();
        let (ec, ec_public_pem) = ec_key();
        let (stranger, _) = ec_key();
        Keys {
            rsa: EncodingKey::from_rsa_pem(private_pem.as_bytes()).unwrap(),
            rsa_public_pem,
            ec,
            ec_public_pem,
            stranger,
        }
    })
}

// ------------------------------------------------------------ calls

/// The request headers that carry (or do not carry) a credential.
type Creds = Vec<(&'static str, String)>;

fn anonymous() -> Creds {
    Vec::new()
}

fn bearer(token: &str) -> Creds {
    vec![("authorization", format!("Bearer {token}"))]
}

fn header(name: &'static str, value: &str) -> Creds {
    vec![(name, value.to_string())]
}

/// One tools/call answer: the HTTP body as sent, the text block, the
/// payload it holds and `isError`.
#[derive(Debug)]
struct Called {
    raw: String,
    text: String,
    payload: Value,
    is_error: bool,
}

/// Where a gateway answers (in this process or a child).
#[derive(Clone)]
struct Endpoint {
    client: reqwest::Client,
    url: String,
}

impl Endpoint {
    fn of(gateway: &TestGateway) -> Endpoint {
        Endpoint {
            client: gateway.client.clone(),
            url: gateway.url.clone(),
        }
    }

    /// A 2026-07-28 request with `creds` added: the status and the body.
    async fn rpc(&self, creds: &Creds, method: &str, params: Value) -> (u16, String) {
        let body = modern_request(1, method, params);
        let mut request = self
            .client
            .post(&self.url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream");
        for (name, value) in modern_headers(&body).iter().chain(creds) {
            request = request.header(*name, value.as_str());
        }
        let response = request
            .body(serde_json::to_vec(&body).unwrap())
            .send()
            .await
            .expect("request sent");
        let status = response.status().as_u16();
        (status, response.text().await.unwrap())
    }

    async fn call(&self, creds: &Creds, tool: &str, arguments: Value) -> Called {
        let (status, raw) = self
            .rpc(
                creds,
                "tools/call",
                json!({"name": tool, "arguments": arguments}),
            )
            .await;
        assert_eq!(status, 200, "{tool}({arguments}): {raw}");
        let body: Value = serde_json::from_str(&raw).unwrap();
        assert_result(MODERN, "CallToolResult", &body);
        let reply = tool_reply(&body["result"]);
        Called {
            text: body["result"]["content"][0]["text"]
                .as_str()
                .unwrap()
                .to_string(),
            raw,
            payload: reply.payload,
            is_error: reply.is_error,
        }
    }

    async fn ok(&self, creds: &Creds, tool: &str, arguments: Value) -> Value {
        let called = self.call(creds, tool, arguments.clone()).await;
        assert!(
            !called.is_error,
            "{tool}({arguments}) failed: {}",
            called.payload
        );
        called.payload
    }

    /// What `creds` see through search_tools (one page holds the catalog).
    async fn seen(&self, creds: &Creds) -> Seen {
        let payload = self
            .ok(creds, "search_tools", json!({"limit": 50, "query": ""}))
            .await;
        Seen::of(&payload)
    }

    async fn load(&self, creds: &Creds, name: &str) -> Called {
        self.call(creds, "load_tool", json!({"name": name})).await
    }
}

/// A search_tools answer reduced to what differs per caller.
#[derive(Debug, PartialEq)]
struct Seen {
    total: u64,
    names: BTreeSet<String>,
    tags: BTreeSet<String>,
    /// The results carrying `authUncertain: true`.
    uncertain: BTreeSet<String>,
}

impl Seen {
    fn of(payload: &Value) -> Seen {
        let results = payload["results"].as_array().expect("results");
        let total = payload["total"].as_u64().expect("total");
        assert_eq!(
            total as usize,
            results.len(),
            "the whole visible catalog fits one page: {payload}"
        );
        let mut uncertain = BTreeSet::new();
        for result in results {
            match result.get("authUncertain") {
                None => {}
                Some(Value::Bool(true)) => {
                    uncertain.insert(result["name"].as_str().unwrap().to_string());
                }
                Some(other) => panic!("authUncertain is true or absent, never {other}"),
            }
        }
        let tags = match payload.get("tags") {
            None => BTreeSet::new(),
            Some(tags) => tags
                .as_array()
                .expect("tags is an array")
                .iter()
                .map(|t| t.as_str().unwrap().to_string())
                .collect(),
        };
        Seen {
            total,
            names: names(payload).into_iter().collect(),
            tags,
            uncertain,
        }
    }

    /// What a caller who sees exactly `visible` gets, with `authUncertain`
    /// on the non-public ones when `uncertain`.
    fn expected(visible: &[&str], uncertain: bool) -> Seen {
        let names: BTreeSet<String> = visible.iter().map(|n| n.to_string()).collect();
        assert_eq!(names.len(), visible.len(), "{visible:?}");
        let tags = TOOLS
            .iter()
            .filter(|(name, _)| names.contains(*name))
            .flat_map(|(_, tags)| tags.iter().map(|t| t.to_string()))
            .collect();
        for name in &names {
            assert!(
                TOOLS.iter().any(|(known, _)| known == name),
                "{name} is not in the catalog"
            );
        }
        let uncertain = if uncertain {
            names
                .iter()
                .filter(|n| !PUBLIC.contains(&n.as_str()))
                .cloned()
                .collect()
        } else {
            BTreeSet::new()
        };
        Seen {
            total: visible.len() as u64,
            names,
            tags,
            uncertain,
        }
    }
}

/// The public tools and `more`.
fn public_and(more: &[&'static str]) -> Vec<&'static str> {
    PUBLIC.iter().chain(more).copied().collect()
}

fn everything() -> Vec<&'static str> {
    TOOLS.iter().map(|(name, _)| *name).collect()
}

async fn assert_sees(endpoint: &Endpoint, label: &str, creds: &Creds, visible: &[&str]) {
    let seen = endpoint.seen(creds).await;
    assert_eq!(seen, Seen::expected(visible, false), "{label}");
}

async fn assert_sees_uncertain(endpoint: &Endpoint, label: &str, creds: &Creds) {
    let seen = endpoint.seen(creds).await;
    assert_eq!(seen, Seen::expected(&everything(), true), "{label}");
}

// ------------------------------------------------------------ 1. callers

#[tokio::test]
async fn hs256_callers_each_see_exactly_their_tools() {
    init();
    let gateway = gateway(NOWHERE, Some(hs256_auth(CALLERS_SECRET.0, true))).await;
    let endpoint = Endpoint::of(&gateway);
    let secret = CALLERS_SECRET.1;
    let token = |claims: Value| bearer(&hs256(secret, &claims));
    let everything_token = hs256(secret, &claims(EVERYTHING, &["staff"]));

    let cases: Vec<(&str, Creds, Vec<&str>)> = vec![
        ("anonymous", anonymous(), public_and(&[])),
        (
            "reader",
            token(claims("shop:read", &[])),
            public_and(&["list_products"]),
        ),
        (
            "writer",
            token(claims("shop:read shop:write", &[])),
            public_and(&["list_products", "create_product"]),
        ),
        (
            // Both scopes of delete's single requirement, but not the
            // document's shop:read.
            "deleter",
            token(claims("shop:write shop:delete", &[])),
            public_and(&["create_product", "delete_product"]),
        ),
        (
            "half of a requirement's scopes",
            token(claims("shop:delete", &[])),
            public_and(&[]),
        ),
        (
            "scope sharing a prefix",
            token(claims("shop:readonly shop:admins", &[])),
            public_and(&[]),
        ),
        (
            "scp array, second alternative",
            token(claims_with("", |c| {
                c.remove("scope");
                c.insert("scp".into(), json!(["shop:audit"]));
            })),
            public_and(&["get_reports"]),
        ),
        (
            "scp string, first alternative",
            token(claims_with("", |c| {
                c.remove("scope");
                c.insert("scp".into(), json!("shop:reports"));
            })),
            public_and(&["get_reports"]),
        ),
        (
            "admin (policy scope)",
            token(claims("shop:admin", &[])),
            public_and(&["purge_all"]),
        ),
        (
            "staff (policy role)",
            token(claims("", &["staff"])),
            public_and(&["get_rota"]),
        ),
        (
            "a scope named like the role",
            token(claims("staff", &[])),
            public_and(&[]),
        ),
        (
            "ops (sidecar-wide policy)",
            token(claims("ops", &[])),
            public_and(&["internal_metrics"]),
        ),
        ("everything", bearer(&everything_token), everything()),
        (
            "expired",
            token(claims_with(EVERYTHING, |c| {
                c.insert("exp".into(), json!(now() - 3600));
            })),
            public_and(&[]),
        ),
        (
            "no expiry",
            token(claims_with(EVERYTHING, |c| {
                c.remove("exp");
            })),
            public_and(&[]),
        ),
        (
            "not valid before an hour from now",
            token(claims_with(EVERYTHING, |c| {
                c.insert("nbf".into(), json!(now() + 3600));
            })),
            public_and(&[]),
        ),
        (
            "tampered signature",
            bearer(&tamper_signature(&everything_token)),
            public_and(&[]),
        ),
        (
            "tampered payload (reader's signature, admin's claims)",
            bearer(&tamper_payload(
                &hs256(secret, &claims("shop:read", &[])),
                &claims(EVERYTHING, &["staff"]),
            )),
            public_and(&[]),
        ),
        (
            "another secret",
            bearer(&hs256(
                "another-secret-of-the-same-length-0000",
                &claims(EVERYTHING, &["staff"]),
            )),
            public_and(&[]),
        ),
        (
            "unsigned (alg none)",
            bearer(&unsigned(&claims(EVERYTHING, &["staff"]))),
            public_and(&[]),
        ),
        (
            "wrong issuer",
            token(claims_with(EVERYTHING, |c| {
                c.insert("iss".into(), json!("https://elsewhere.example"));
            })),
            public_and(&[]),
        ),
        (
            "no issuer",
            token(claims_with(EVERYTHING, |c| {
                c.remove("iss");
            })),
            public_and(&[]),
        ),
        (
            "wrong audience",
            token(claims_with(EVERYTHING, |c| {
                c.insert("aud".into(), json!("someone-else"));
            })),
            public_and(&[]),
        ),
        (
            "no audience",
            token(claims_with(EVERYTHING, |c| {
                c.remove("aud");
            })),
            public_and(&[]),
        ),
        (
            "RS256 token, no RSA key configured",
            bearer(&sign(
                Algorithm::RS256,
                None,
                &keys().rsa,
                &claims(EVERYTHING, &["staff"]),
            )),
            public_and(&[]),
        ),
    ];
    let mut distinct = BTreeSet::new();
    for (label, creds, visible) in &cases {
        assert_sees(&endpoint, label, creds, visible).await;
        distinct.insert(visible.clone());
    }
    assert!(distinct.len() >= 9, "the cases tell callers apart");

    // The vocabulary describes the caller's visible catalog: a tag only
    // hidden tools carry is absent, a tag shared with a visible tool stays.
    let anonymous_tags = endpoint.seen(&anonymous()).await.tags;
    assert_eq!(
        anonymous_tags,
        BTreeSet::from(["catalog".to_string(), "ops".into(), "status".into()])
    );
    let all_tags = endpoint.seen(&bearer(&everything_token)).await.tags;
    for tag in ["maintenance", "staff only", "danger zone", "writing"] {
        assert!(!anonymous_tags.contains(tag), "{tag}");
        assert!(all_tags.contains(tag), "{tag}");
    }

    // A tag filter on a hidden-only tag finds nothing, exactly as a tag
    // nobody carries; the caller who may see it finds it.
    for tags in [json!(["maintenance"]), json!(["no such tag"])] {
        let payload = endpoint
            .ok(&anonymous(), "search_tools", json!({"tags": tags}))
            .await;
        assert_eq!(payload["total"], 0, "{payload}");
        assert_eq!(payload["results"], json!([]), "{payload}");
    }
    let payload = endpoint
        .ok(
            &bearer(&everything_token),
            "search_tools",
            json!({"tags": ["Maintenance"]}),
        )
        .await;
    assert_eq!(payload["total"], 1, "{payload}");
    assert_eq!(names(&payload), ["purge_all"]);

    // A keyword that only a hidden tool matches still ranks, never reveals.
    let payload = endpoint
        .ok(
            &anonymous(),
            "search_tools",
            json!({"query": "purge", "limit": 50}),
        )
        .await;
    assert!(!names(&payload).contains(&"purge_all".to_string()));
    assert_eq!(payload["total"], 3, "{payload}");
}

#[tokio::test]
async fn cached_search_answers_are_shared_only_by_callers_who_see_alike() {
    init();
    let gateway = gateway(NOWHERE, Some(hs256_auth(CALLERS_SECRET.0, true))).await;
    let endpoint = Endpoint::of(&gateway);
    let secret = CALLERS_SECRET.1;
    let reader = bearer(&hs256(secret, &claims("shop:read", &[])));
    // Another token with the same scopes: another caller, the same view.
    let other_reader = bearer(&hs256(
        secret,
        &claims_with("shop:read", |c| {
            c.insert("sub".into(), json!("someone-else"));
        }),
    ));
    let writer = bearer(&hs256(secret, &claims("shop:read shop:write", &[])));
    let uncertain = bearer("opaque-token-0123456789abcdef");
    let expectations = [
        (
            "anonymous",
            anonymous(),
            Seen::expected(&public_and(&[]), false),
        ),
        (
            "reader",
            reader,
            Seen::expected(&public_and(&["list_products"]), false),
        ),
        (
            "writer",
            writer,
            Seen::expected(&public_and(&["list_products", "create_product"]), false),
        ),
        ("uncertain", uncertain, Seen::expected(&everything(), true)),
    ];
    // The same search, in turn, three times over (an answer is kept the
    // second time it is ranked): each caller always gets its own view,
    // whoever's answer was cached before it.
    for pass in 0..3 {
        for (label, creds, expected) in &expectations {
            assert_eq!(
                &endpoint.seen(creds).await,
                expected,
                "{label}, pass {pass}"
            );
        }
    }
    assert_eq!(
        endpoint.seen(&other_reader).await,
        expectations[1].2,
        "a second reader"
    );
    let mut gateway = gateway;
    let admin = hs256(secret, &claims("sezzlee:admin", &[]));
    gateway.admin = Some(("authorization".to_string(), format!("Bearer {admin}")));
    let cache = &gateway.status().await["searchCache"];
    assert_eq!(cache["answers"], 4, "one answer per distinct view: {cache}");
    assert_eq!(cache["misses"], 8, "{cache}");
    assert_eq!(cache["hits"], 5, "{cache}");
}

#[tokio::test]
async fn rs256_and_es256_tokens_verify_with_pem_files_and_a_jwks_file() {
    init();
    let keys = keys();
    let dir = tempfile::tempdir().unwrap();
    let rsa_pem = dir.path().join("issuer-rsa.pem");
    let ec_pem = dir.path().join("issuer-ec.pem");
    std::fs::write(&rsa_pem, &keys.rsa_public_pem).unwrap();
    std::fs::write(&ec_pem, &keys.ec_public_pem).unwrap();
    let admin = claims("shop:admin", &[]);
    let staff = claims("", &["staff"]);

    // PEM files, no issuer or audience configured.
    let pem_gateway = gateway(
        NOWHERE,
        Some(AuthSettings {
            jwt: Some(JwtSettings {
                public_keys: vec![rsa_pem.clone(), ec_pem.clone()],
                ..JwtSettings::default()
            }),
            api_keys: Vec::new(),
            ..Default::default()
        }),
    )
    .await;
    let endpoint = Endpoint::of(&pem_gateway);
    let rs_admin = sign(Algorithm::RS256, None, &keys.rsa, &admin);
    let cases: Vec<(&str, String, Vec<&str>)> = vec![
        ("RS256 admin", rs_admin.clone(), public_and(&["purge_all"])),
        (
            "ES256 staff",
            sign(Algorithm::ES256, None, &keys.ec, &staff),
            public_and(&["get_rota"]),
        ),
        (
            "RS256 with a kid the PEM keys do not name",
            sign(Algorithm::RS256, Some("any"), &keys.rsa, &admin),
            public_and(&["purge_all"]),
        ),
        (
            "RS256 tampered signature",
            tamper_signature(&rs_admin),
            public_and(&[]),
        ),
        (
            "RS256 tampered payload",
            tamper_payload(&rs_admin, &claims(EVERYTHING, &["staff"])),
            public_and(&[]),
        ),
        (
            "RS256 expired",
            sign(
                Algorithm::RS256,
                None,
                &keys.rsa,
                &claims_with("shop:admin", |c| {
                    c.insert("exp".into(), json!(now() - 3600));
                }),
            ),
            public_and(&[]),
        ),
        (
            "ES256 by an unknown key",
            sign(Algorithm::ES256, None, &keys.stranger, &admin),
            public_and(&[]),
        ),
        (
            // Algorithm confusion: the public key used as an HMAC secret.
            "HS256 signed with the RSA public key",
            hs256(&keys.rsa_public_pem, &admin),
            public_and(&[]),
        ),
    ];
    for (label, token, visible) in &cases {
        assert_sees(&endpoint, label, &bearer(token), visible).await;
    }

    // A JWKS file: keys chosen by `kid` when the token names one.
    let mut rsa_jwk = Jwk::from_encoding_key(&keys.rsa, Algorithm::RS256).unwrap();
    rsa_jwk.common.key_id = Some("rsa-1".to_string());
    let mut ec_jwk = Jwk::from_encoding_key(&keys.ec, Algorithm::ES256).unwrap();
    ec_jwk.common.key_id = Some("ec-1".to_string());
    let jwks = dir.path().join("jwks.json");
    std::fs::write(
        &jwks,
        serde_json::to_string(&JwkSet {
            keys: vec![rsa_jwk, ec_jwk],
        })
        .unwrap(),
    )
    .unwrap();
    let jwks_gateway = gateway(
        NOWHERE,
        Some(AuthSettings {
            jwt: Some(JwtSettings {
                jwks_file: Some(jwks),
                issuer: Some(ISSUER.to_string()),
                audience: Some(AUDIENCE.to_string()),
                ..JwtSettings::default()
            }),
            api_keys: Vec::new(),
            ..Default::default()
        }),
    )
    .await;
    let endpoint = Endpoint::of(&jwks_gateway);
    let cases: Vec<(&str, String, Vec<&str>)> = vec![
        (
            "RS256, kid rsa-1",
            sign(Algorithm::RS256, Some("rsa-1"), &keys.rsa, &admin),
            public_and(&["purge_all"]),
        ),
        (
            "RS256 without kid",
            sign(Algorithm::RS256, None, &keys.rsa, &admin),
            public_and(&["purge_all"]),
        ),
        (
            "ES256, kid ec-1",
            sign(Algorithm::ES256, Some("ec-1"), &keys.ec, &staff),
            public_and(&["get_rota"]),
        ),
        (
            "RS256 naming the EC key's kid",
            sign(Algorithm::RS256, Some("ec-1"), &keys.rsa, &admin),
            public_and(&[]),
        ),
        (
            "RS256, unknown kid",
            sign(Algorithm::RS256, Some("rsa-2"), &keys.rsa, &admin),
            public_and(&[]),
        ),
        (
            "ES256 by an unknown key under a known kid",
            sign(Algorithm::ES256, Some("ec-1"), &keys.stranger, &admin),
            public_and(&[]),
        ),
        (
            "RS256, wrong audience",
            sign(
                Algorithm::RS256,
                Some("rsa-1"),
                &keys.rsa,
                &claims_with("shop:admin", |c| {
                    c.insert("aud".into(), json!("someone-else"));
                }),
            ),
            public_and(&[]),
        ),
    ];
    for (label, token, visible) in &cases {
        assert_sees(&endpoint, label, &bearer(token), visible).await;
    }
}

#[tokio::test]
async fn api_keys_map_to_their_scopes_and_roles_and_a_wrong_key_is_anonymous() {
    init();
    let gateway = gateway(
        NOWHERE,
        Some(AuthSettings {
            jwt: None,
            api_keys: vec![
                ApiKeySettings {
                    header: "X-Api-Key".to_string(),
                    key_env: API_KEY_READER.0.to_string(),
                    subject: "catalog-bot".to_string(),
                    scopes: vec![
                        "shop:read".to_string(),
                        "shop:write".to_string(),
                        "ops".to_string(),
                    ],
                    roles: Vec::new(),
                    names: Vec::new(),
                },
                ApiKeySettings {
                    header: "x-staff-key".to_string(),
                    key_env: API_KEY_STAFF.0.to_string(),
                    subject: "rota-bot".to_string(),
                    scopes: Vec::new(),
                    roles: vec!["staff".to_string()],
                    names: Vec::new(),
                },
            ],
            ..Default::default()
        }),
    )
    .await;
    let endpoint = Endpoint::of(&gateway);
    let reader_key = API_KEY_READER.1;
    let cases: Vec<(&str, Creds, Vec<&str>)> = vec![
        (
            // The shop's operations need an OAuth token, which an API key
            // is not (scheme by scheme), whatever its scopes; its `ops`
            // scope satisfies the internal document's policy.
            "reader key",
            header("x-api-key", reader_key),
            public_and(&["internal_metrics"]),
        ),
        (
            "staff key",
            header("x-staff-key", API_KEY_STAFF.1),
            public_and(&["get_rota"]),
        ),
        (
            "wrong key",
            header("x-api-key", "not-the-key-at-all"),
            public_and(&[]),
        ),
        (
            "a prefix of the key",
            header("x-api-key", &reader_key[..reader_key.len() - 1]),
            public_and(&[]),
        ),
        (
            "the key with a suffix",
            header("x-api-key", &format!("{reader_key}0")),
            public_and(&[]),
        ),
        (
            "another entry's key in this header",
            header("x-api-key", API_KEY_STAFF.1),
            public_and(&[]),
        ),
        (
            "the key in another header",
            header("x-other-key", reader_key),
            public_and(&[]),
        ),
    ];
    for (label, creds, visible) in &cases {
        assert_sees(&endpoint, label, creds, visible).await;
    }

    // No JWT verifier is configured: a bearer token, even a well-formed
    // JWT, is a credential the gateway cannot evaluate.
    let jwt = hs256(CALLERS_SECRET.1, &claims("shop:admin", &[]));
    assert_sees_uncertain(&endpoint, "bearer JWT, no verifier", &bearer(&jwt)).await;
}

// ------------------------------------------------------------ 2. authUncertain

#[tokio::test]
async fn credentials_the_gateway_cannot_evaluate_leave_tools_visible_and_flagged() {
    init();
    let gateway = gateway(NOWHERE, Some(hs256_auth(UNCERTAIN_SECRET.0, false))).await;
    let endpoint = Endpoint::of(&gateway);
    let admin = bearer(&hs256(UNCERTAIN_SECRET.1, &claims(EVERYTHING, &["staff"])));
    assert_sees(&endpoint, "verified", &admin, &everything()).await;

    let basic = format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode("user:password")
    );
    // Scheme by scheme: HTTP basic and a cookie satisfy no `oauth`
    // requirement (hidden), but policies read any credential, and the
    // gateway cannot check these: uncertain.
    let policed = public_and(&["purge_all", "get_rota", "internal_metrics"]);
    for (label, creds) in [
        ("HTTP basic", header("authorization", &basic)),
        ("a cookie", header("cookie", "session=0123456789")),
    ] {
        assert_eq!(
            endpoint.seen(&creds).await,
            Seen::expected(&policed, true),
            "{label}"
        );
    }
    // An opaque bearer token may be the backend's OAuth token: every tool
    // stays, uncertain.
    let uncertain: Vec<(&str, Creds)> =
        vec![("opaque bearer", bearer("opaque-token-0123456789abcdef"))];
    for (label, creds) in &uncertain {
        assert_sees_uncertain(&endpoint, label, creds).await;

        // load_tool: the same definition, the same version, plus the flag
        // on non-public tools only.
        for (name, _) in TOOLS {
            let certain = endpoint.load(&admin, name).await;
            assert!(!certain.is_error, "{}", certain.payload);
            assert!(certain.payload.get("authUncertain").is_none());
            let loaded = endpoint.load(creds, name).await;
            assert!(!loaded.is_error, "{label}: {}", loaded.payload);
            let mut flagged = loaded.payload.clone();
            let flag = flagged.as_object_mut().unwrap().remove("authUncertain");
            if PUBLIC.contains(&name) {
                assert_eq!(flag, None, "{label}: {name}");
            } else {
                assert_eq!(flag, Some(json!(true)), "{label}: {name}");
            }
            assert_eq!(flagged, certain.payload, "{label}: {name}");
            assert_eq!(loaded.payload["version"], certain.payload["version"]);
        }

        // detail "schema" results are the load_tool answers.
        let page = endpoint
            .ok(
                creds,
                "search_tools",
                json!({"detail": "schema", "limit": 50}),
            )
            .await;
        let results = page["results"].as_array().unwrap();
        assert_eq!(results.len(), TOOLS.len(), "{page}");
        for result in results {
            let name = result["name"].as_str().unwrap();
            assert_eq!(
                *result,
                endpoint.load(creds, name).await.payload,
                "{label}: {name}"
            );
        }
    }

    // Without [auth] the catalog is public but for the tools under a named
    // policy, which nobody can satisfy (a policy fails closed); no
    // credential makes anything uncertain.
    let open = self::gateway(NOWHERE, None).await;
    let open = Endpoint::of(&open);
    let jwt = hs256(UNCERTAIN_SECRET.1, &claims(EVERYTHING, &["staff"]));
    let policed = ["purge_all", "get_rota", "internal_metrics"];
    let unpoliced: Vec<&str> = everything()
        .into_iter()
        .filter(|name| !policed.contains(name))
        .collect();
    for (label, creds) in [
        ("anonymous", anonymous()),
        ("opaque bearer", bearer("opaque-token-0123456789abcdef")),
        ("a JWT", bearer(&jwt)),
        ("HTTP basic", header("authorization", &basic)),
        ("a cookie", header("cookie", "session=0123456789")),
    ] {
        assert_sees(&open, label, &creds, &unpoliced).await;
        let (_, raw) = open
            .rpc(
                &creds,
                "tools/call",
                json!({"name": "search_tools", "arguments": {"detail": "schema", "limit": 50}}),
            )
            .await;
        assert!(!raw.contains("authUncertain"), "{label}: {raw}");
        // OpenAPI security hides nothing without [auth]…
        let loaded = open.load(&creds, "delete_product").await;
        assert!(!loaded.is_error, "{}", loaded.payload);
        assert!(!loaded.raw.contains("authUncertain"), "{label}");
        // …a policy does.
        for name in policed {
            let hidden = open.load(&creds, name).await;
            assert_eq!(hidden.payload["error"], "unknown_tool", "{label}: {name}");
        }
    }
}

// ------------------------------------------------------------ 3. hidden = nonexistent

#[tokio::test]
async fn hidden_and_nonexistent_names_get_byte_identical_answers() {
    init();
    let gateway = gateway(NOWHERE, Some(hs256_auth(DIFFERENTIAL_SECRET.0, false))).await;
    let endpoint = Endpoint::of(&gateway);
    let secret = DIFFERENTIAL_SECRET.1;
    let admin = bearer(&hs256(secret, &claims(EVERYTHING, &["staff"])));

    // (hidden, nonexistent of the same length, arguments that are wrong
    // for the hidden tool).
    let pairs = [
        ("purge_all", "purge_xyz", json!({"confirm": "yes"})),
        ("delete_product", "delete_zzzzzzz", json!({"id": "seven"})),
        ("get_rota", "get_xyzw", json!({"unexpected": 1})),
    ];
    let callers: Vec<(&str, Creds)> = vec![
        ("anonymous", anonymous()),
        ("reader", bearer(&hs256(secret, &claims("shop:read", &[])))),
        (
            "expired admin",
            bearer(&hs256(
                secret,
                &claims_with(EVERYTHING, |c| {
                    c.insert("exp".into(), json!(now() - 3600));
                }),
            )),
        ),
        ("wrong API key", header("x-api-key", "whatever")),
    ];
    for (hidden, missing, bad_arguments) in &pairs {
        assert_eq!(hidden.len(), missing.len());
        // The admin sees the tool: the calls below would answer something
        // else than unknown_tool if visibility did not hide it.
        let loaded = endpoint.load(&admin, hidden).await;
        assert!(!loaded.is_error, "{}", loaded.payload);
        let version = loaded.payload["version"].as_str().unwrap().to_string();
        let refused = endpoint
            .call(
                &admin,
                "invoke_tool",
                json!({"name": hidden, "arguments": bad_arguments, "version": version}),
            )
            .await;
        assert_eq!(refused.payload["error"], "invalid_arguments");
        let missing_for_admin = endpoint.load(&admin, missing).await;
        assert_eq!(missing_for_admin.payload["error"], "unknown_tool");

        let calls = |name: &str| {
            vec![
                ("load_tool", json!({"name": name})),
                ("invoke_tool", json!({"name": name})),
                ("invoke_tool", json!({"name": name, "arguments": {}})),
                (
                    "invoke_tool",
                    json!({"name": name, "arguments": bad_arguments}),
                ),
                (
                    "invoke_tool",
                    json!({"name": name, "arguments": "not json"}),
                ),
                ("invoke_tool", json!({"name": name, "arguments": [1, 2]})),
                ("invoke_tool", json!({"name": name, "version": version})),
                (
                    "invoke_tool",
                    json!({"name": name, "version": "0000000000000000"}),
                ),
                ("invoke_tool", json!({"name": name, "version": 5})),
                (
                    "invoke_tool",
                    json!({"name": name, "arguments": {"confirm": true, "id": 1}, "version": version}),
                ),
            ]
        };
        for (label, creds) in &callers {
            for ((tool, arguments), (_, other)) in calls(hidden).into_iter().zip(calls(missing)) {
                let a = endpoint.call(creds, tool, arguments.clone()).await;
                let b = endpoint.call(creds, tool, other).await;
                let context = format!("{label}: {tool}({arguments})");
                assert!(a.is_error && b.is_error, "{context}");
                assert_eq!(a.payload["error"], "unknown_tool", "{context}");
                assert_eq!(a.raw.len(), b.raw.len(), "{context}");
                assert_eq!(
                    a.text.replace(hidden, "<NAME>"),
                    b.text.replace(missing, "<NAME>"),
                    "{context}"
                );
                assert_eq!(
                    a.raw.replace(hidden, "<NAME>"),
                    b.raw.replace(missing, "<NAME>"),
                    "{context}"
                );
                assert!(a.text.contains(hidden), "{context}");
            }
        }
    }
}

#[tokio::test]
async fn policy_names_never_reach_an_agent() {
    init();
    let gateway = gateway(NOWHERE, Some(hs256_auth(POLICY_SECRET.0, false))).await;
    let open = self::gateway(NOWHERE, None).await;
    let secret = POLICY_SECRET.1;
    let callers: Vec<(Endpoint, Creds)> = vec![
        (Endpoint::of(&gateway), anonymous()),
        (
            Endpoint::of(&gateway),
            bearer(&hs256(secret, &claims("shop:admin", &[]))),
        ),
        (
            Endpoint::of(&gateway),
            bearer(&hs256(secret, &claims(EVERYTHING, &["staff"]))),
        ),
        (Endpoint::of(&gateway), bearer("opaque-token")),
        (Endpoint::of(&open), anonymous()),
    ];
    let mut answers = 0;
    for (endpoint, creds) in &callers {
        let mut bodies = Vec::new();
        for query in [
            "secret_policy_q7 staff_policy_q7 ops_policy_q7 open_policy_q7",
            "admins policy visibility anyScope anyRole",
            "",
        ] {
            for detail in ["card", "schema"] {
                let called = endpoint
                    .call(
                        creds,
                        "search_tools",
                        json!({"query": query, "detail": detail, "limit": 50}),
                    )
                    .await;
                assert!(!called.is_error, "{}", called.payload);
                bodies.push(called.raw);
            }
        }
        for (name, _) in TOOLS {
            bodies.push(endpoint.load(creds, name).await.raw);
        }
        for method in ["tools/list", "server/discover"] {
            bodies.push(endpoint.rpc(creds, method, json!({})).await.1);
        }
        for body in &bodies {
            for policy in POLICY_NAMES {
                assert!(!body.contains(policy), "{policy} leaked: {body}");
            }
            assert!(!body.contains("anyScope") && !body.contains("anyRole"));
            answers += 1;
        }
    }
    assert_eq!(answers, callers.len() * (6 + TOOLS.len() + 2));
}

// ------------------------------------------------------------ 4. invoke

#[tokio::test]
async fn invoke_sends_the_callers_authorization_and_static_headers_and_nothing_else() {
    init();
    let backend = Backend::start().await;
    let mut auth = hs256_auth(INVOKE_SECRET.0, false);
    auth.api_keys.push(ApiKeySettings {
        header: "x-api-key".to_string(),
        key_env: INVOKE_KEY.0.to_string(),
        subject: "invoke-bot".to_string(),
        scopes: vec!["shop:read".to_string()],
        roles: Vec::new(),
        names: Vec::new(),
    });
    let gateway = gateway(&backend.base, Some(auth)).await;
    let endpoint = Endpoint::of(&gateway);
    let admin_token = hs256(INVOKE_SECRET.1, &claims("shop:admin shop:read", &[]));
    let admin_authorization = format!("Bearer {admin_token}");
    let everything_a_caller_sends: Creds = vec![
        ("authorization", admin_authorization.clone()),
        ("x-api-key", INVOKE_KEY.1.to_string()),
        ("cookie", "session=caller-cookie".to_string()),
        ("x-tenant", "acme".to_string()),
        ("x-other", "do-not-forward".to_string()),
        ("x-static-token", "forged-by-the-caller".to_string()),
    ];
    let never = [
        "x-api-key",
        "cookie",
        "x-other",
        "mcp-method",
        "mcp-name",
        "mcp-protocol-version",
    ];

    // shop.yaml: passthrough (the caller's Authorization); one static header.
    let answer = endpoint
        .ok(
            &everything_a_caller_sends,
            "invoke_tool",
            json!({"name": "get_health"}),
        )
        .await;
    assert_eq!(answer["status"], 200, "{answer}");
    let request = backend.last();
    assert_eq!(
        (request.method.as_str(), request.path()),
        ("GET", "/health")
    );
    assert_eq!(request.all("authorization"), [admin_authorization.as_str()]);
    assert_eq!(request.all("x-static-token"), [STATIC_HEADER.1]);
    assert_eq!(request.all("x-tenant"), Vec::<&str>::new());
    for name in never {
        assert_eq!(
            request.all(name),
            Vec::<&str>::new(),
            "{name} reached the backend"
        );
    }

    // internal.yaml: forwardHeaders [x-tenant] only, no static headers:
    // not even the caller's Authorization leaves.
    endpoint
        .ok(
            &everything_a_caller_sends,
            "invoke_tool",
            json!({"name": "internal_ping"}),
        )
        .await;
    let request = backend.last();
    assert_eq!(request.path(), "/internal/ping");
    assert_eq!(request.all("x-tenant"), ["acme"]);
    for name in never.iter().chain(&["authorization", "x-static-token"]) {
        assert_eq!(
            request.all(name),
            Vec::<&str>::new(),
            "{name} reached the backend"
        );
    }

    // The admin's own call of the admin-only tool carries the admin's token.
    let admin = bearer(&admin_token);
    let answer = endpoint
        .ok(
            &admin,
            "invoke_tool",
            json!({"name": "purge_all", "arguments": {"confirm": true}}),
        )
        .await;
    assert_eq!(answer["body"], json!({"ok": true}), "{answer}");
    let request = backend.last();
    assert_eq!(
        (request.method.as_str(), request.path()),
        ("POST", "/admin/purge")
    );
    assert_eq!(request.all("authorization"), [admin_authorization.as_str()]);
    assert_eq!(request.all("x-static-token"), [STATIC_HEADER.1]);
    assert_eq!(
        serde_json::from_slice::<Value>(&request.body).unwrap(),
        json!({"confirm": true})
    );

    // Callers who cannot see it send nothing anywhere.
    let before = backend.count();
    for creds in [
        anonymous(),
        header("x-api-key", INVOKE_KEY.1),
        bearer(&hs256(INVOKE_SECRET.1, &claims("shop:read", &[]))),
        bearer(&tamper_signature(&admin_token)),
    ] {
        let called = endpoint
            .call(
                &creds,
                "invoke_tool",
                json!({"name": "purge_all", "arguments": {"confirm": true}}),
            )
            .await;
        assert_eq!(
            called.payload["error"], "unknown_tool",
            "{}",
            called.payload
        );
    }
    assert_eq!(backend.count(), before, "a hidden tool reached the backend");

    // An uncertain caller's call goes through: the backend decides.
    endpoint
        .ok(
            &bearer("opaque-token-for-the-backend"),
            "invoke_tool",
            json!({"name": "purge_all", "arguments": {"confirm": false}}),
        )
        .await;
    let request = backend.last();
    assert_eq!(request.path(), "/admin/purge");
    assert_eq!(
        request.all("authorization"),
        ["Bearer opaque-token-for-the-backend"]
    );

    // An API-key caller: the key authenticates it to the gateway and stays
    // there; no Authorization is invented. (The shop's `oauth` operations
    // are hidden from it: a key is not a token.)
    endpoint
        .ok(
            &header("x-api-key", INVOKE_KEY.1),
            "invoke_tool",
            json!({"name": "get_health"}),
        )
        .await;
    let request = backend.last();
    assert_eq!(request.path(), "/health");
    assert_eq!(request.all("authorization"), Vec::<&str>::new());
    assert_eq!(request.all("x-api-key"), Vec::<&str>::new());
    assert_eq!(request.all("x-static-token"), [STATIC_HEADER.1]);
}

// ------------------------------------------------------------ 5. configuration

fn exit_code_2() -> String {
    format!("{:?}", std::process::ExitCode::from(2))
}

#[test]
fn a_bad_auth_configuration_refuses_to_start() {
    init();
    let dir = tempfile::tempdir().unwrap();
    let garbage = dir.path().join("garbage.pem");
    std::fs::write(
        &garbage,
        "-----BEGIN PUBLIC KEY-----\nbm90IGEga2V5\n-----END PUBLIC KEY-----\n",
    )
    .unwrap();
    let not_jwks = dir.path().join("jwks.json");
    std::fs::write(&not_jwks, r#"{"keys": "none"}"#).unwrap();
    let missing = dir.path().join("missing.pem");
    let jwt = |jwt: JwtSettings| AuthSettings {
        jwt: Some(jwt),
        api_keys: Vec::new(),
        ..Default::default()
    };
    let key = |key_env: &str| AuthSettings {
        jwt: None,
        api_keys: vec![ApiKeySettings {
            header: "x-api-key".to_string(),
            key_env: key_env.to_string(),
            subject: "bot".to_string(),
            ..ApiKeySettings::default()
        }],
        ..Default::default()
    };
    let bad = [
        (
            "unset HS256 variable",
            jwt(JwtSettings {
                hs256_secret_env: Some(UNSET_VARIABLE.to_string()),
                ..JwtSettings::default()
            }),
        ),
        (
            "empty HS256 variable",
            jwt(JwtSettings {
                hs256_secret_env: Some(EMPTY_VARIABLE.to_string()),
                ..JwtSettings::default()
            }),
        ),
        (
            "missing PEM file",
            jwt(JwtSettings {
                public_keys: vec![missing.clone()],
                ..JwtSettings::default()
            }),
        ),
        (
            "PEM file holding no key",
            jwt(JwtSettings {
                public_keys: vec![garbage.clone()],
                ..JwtSettings::default()
            }),
        ),
        (
            "missing JWKS file",
            jwt(JwtSettings {
                jwks_file: Some(missing.clone()),
                ..JwtSettings::default()
            }),
        ),
        (
            "not a JWKS",
            jwt(JwtSettings {
                jwks_file: Some(not_jwks.clone()),
                ..JwtSettings::default()
            }),
        ),
        (
            // An issuer alone means discovery, which needs its URL.
            "[auth.jwt] without any key, its issuer no URL",
            jwt(JwtSettings {
                issuer: Some("our-issuer".to_string()),
                ..JwtSettings::default()
            }),
        ),
        (
            "[auth.jwt] with a jwks_url that is no http(s) URL",
            jwt(JwtSettings {
                jwks_url: Some("file:///etc/jwks.json".to_string()),
                ..JwtSettings::default()
            }),
        ),
        (
            "[auth.jwt] refreshing every 0 ms",
            jwt(JwtSettings {
                jwks_url: Some("https://id.example.com/jwks".to_string()),
                refresh_interval_ms: Some(0),
                ..JwtSettings::default()
            }),
        ),
        (
            "auth.resource that is no URL",
            AuthSettings {
                resource: Some("gateway".to_string()),
                ..key(CALLERS_SECRET.0)
            },
        ),
        ("unset API key variable", key(UNSET_VARIABLE)),
        ("empty API key variable", key(EMPTY_VARIABLE)),
    ];
    for (label, auth) in bad {
        let mut settings = test_settings(&shipped_catalogs());
        settings.auth = Some(auth);
        match sezzlee_gateway::server::load_checked(settings) {
            Ok(_) => panic!("{label}: the gateway started"),
            Err(code) => assert_eq!(format!("{code:?}"), exit_code_2(), "{label}"),
        }
    }
    let mut settings = test_settings(&shipped_catalogs());
    settings.auth = Some(hs256_auth(CALLERS_SECRET.0, true));
    assert!(sezzlee_gateway::server::load_checked(settings).is_ok());
}

#[tokio::test]
async fn status_and_metrics_never_show_a_secret() {
    init();
    let mut auth = hs256_auth(STATUS_SECRET.0, true);
    auth.api_keys.push(ApiKeySettings {
        header: "x-api-key".to_string(),
        key_env: STATUS_KEY.0.to_string(),
        subject: "status-bot".to_string(),
        scopes: vec!["shop:admin".to_string(), "sezzlee:admin".to_string()],
        roles: Vec::new(),
        names: Vec::new(),
    });
    let mut gateway = gateway(NOWHERE, Some(auth)).await;
    gateway.admin = Some(("x-api-key".to_string(), STATUS_KEY.1.to_string()));
    let endpoint = Endpoint::of(&gateway);
    // The configuration works (so the secrets were read)…
    assert_sees(
        &endpoint,
        "status key",
        &header("x-api-key", STATUS_KEY.1),
        &public_and(&["purge_all"]),
    )
    .await;
    // …and never shows.
    let status = gateway.status().await.to_string();
    let metrics = gateway.metrics().await;
    let debug = format!("{:?} {:?}", gateway.gateway.auth, gateway.gateway.settings);
    for secret in [STATUS_SECRET.1, STATUS_KEY.1] {
        assert!(!status.contains(secret), "/status shows a secret: {status}");
        assert!(!metrics.contains(secret), "/metrics shows a secret");
        assert!(!debug.contains(secret), "Debug shows a secret: {debug}");
    }
    assert!(status.contains("\"tools\":10"), "{status}");
}

// ------------------------------------------------------------ 6. the binary and its logs

/// A `sezzlee` child process, killed (by its own handle) when dropped.
struct Served {
    child: Child,
    base: String,
    logs: Arc<Mutex<String>>,
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn sezzlee() -> Command {
    let mut command = sezzlee_binary(Some("SEZZLEE_VIS_"));
    command
        .env("RUST_LOG", "info,sezzlee=debug")
        .env("NO_COLOR", "1");
    command
}

/// Starts `sezzlee serve` with `args` on an ephemeral port and waits for
/// the address it logs.
fn serve(mut command: Command, args: &[&str]) -> Served {
    let dir = std::env::temp_dir();
    let mut child = command
        .current_dir(dir)
        .arg("serve")
        .args([
            "--listen",
            "127.0.0.1:0",
            "--watch",
            "off",
            "--log-format",
            "text",
        ])
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("sezzlee serve starts");
    let (url, logs) = crate::support::listening_url(&mut child);
    let base = url.trim_end_matches("/mcp").to_string();
    Served { child, base, logs }
}

impl Served {
    /// The logs so far, after waiting (a little) for what `arrived` looks
    /// for to come through the pipe.
    fn logs_once(&self, arrived: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            let logs = self.logs.lock().unwrap().clone();
            if arrived(&logs) || Instant::now() > deadline {
                return logs;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn endpoint(&self) -> Endpoint {
        Endpoint {
            client: reqwest::Client::new(),
            url: format!("{}/mcp", self.base),
        }
    }
}

/// `sezzlee token …` with the secret in `variable`: the token it prints.
fn token_command(variable: &str, secret: &str, args: &[&str]) -> String {
    let output = sezzlee()
        .env(variable, secret)
        .arg("token")
        .args(args)
        .output()
        .expect("sezzlee token runs");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let token = String::from_utf8(output.stdout).unwrap().trim().to_string();
    assert_eq!(token.split('.').count(), 3, "{token}");
    token
}

fn repository_path(relative: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(relative)
}

#[tokio::test]
async fn the_token_command_mints_tokens_the_gateway_accepts() {
    init();
    let mut settings = test_settings(&shipped_catalogs());
    settings.auth = Some(hs256_auth(TOKEN_SECRET.0, false));
    let gateway = TestGateway::start_with(settings, None).await;
    let endpoint = Endpoint::of(&gateway);
    let admin = token_command(
        TOKEN_SECRET.0,
        TOKEN_SECRET.1,
        &["--secret-env", TOKEN_SECRET.0, "--scope", "orders:admin"],
    );
    let reader = token_command(
        TOKEN_SECRET.0,
        TOKEN_SECRET.1,
        &["--secret-env", TOKEN_SECRET.0, "--scope", "orders:read"],
    );
    let anonymous_view = endpoint.seen(&anonymous()).await;
    let reader_view = endpoint.seen(&bearer(&reader)).await;
    let admin_view = endpoint.seen(&bearer(&admin)).await;
    assert!(!anonymous_view.names.contains("purge_order"));
    assert!(!anonymous_view.tags.contains("admin"));
    assert_eq!(reader_view, anonymous_view);
    assert!(admin_view.names.contains("purge_order"));
    assert!(admin_view.tags.contains("admin"));
    assert_eq!(admin_view.total, anonymous_view.total + 1);
    assert!(admin_view.uncertain.is_empty());
    let loaded = endpoint.load(&bearer(&admin), "purge_order").await;
    assert!(!loaded.is_error, "{}", loaded.payload);
    let hidden = endpoint.load(&bearer(&reader), "purge_order").await;
    assert_eq!(hidden.payload["error"], "unknown_tool");

    // A token for an issuer and audience the gateway does not expect is
    // refused once they are configured.
    let mut settings = test_settings(&shipped_catalogs());
    settings.auth = Some(hs256_auth(TOKEN_SECRET.0, true));
    let strict = TestGateway::start_with(settings, None).await;
    let strict = Endpoint::of(&strict);
    assert!(
        !strict
            .seen(&bearer(&admin))
            .await
            .names
            .contains("purge_order")
    );
    let matching = token_command(
        TOKEN_SECRET.0,
        TOKEN_SECRET.1,
        &[
            "--secret-env",
            TOKEN_SECRET.0,
            "--scope",
            "orders:admin",
            "--issuer",
            ISSUER,
            "--audience",
            AUDIENCE,
        ],
    );
    assert!(
        strict
            .seen(&bearer(&matching))
            .await
            .names
            .contains("purge_order")
    );
}

/// The README flow: `sezzlee serve --config examples/auth-demo.toml` and a
/// token from `sezzlee token --scope orders:admin`, both reading the demo
/// secret from `SEZZLEE_DEMO_SECRET`.
#[tokio::test]
async fn the_auth_demo_works_as_documented() {
    init();
    let secret = "demo-secret-for-the-auth-demo-3b8e";
    let mut command = sezzlee();
    command.env("SEZZLEE_DEMO_SECRET", secret);
    let config = repository_path("examples/auth-demo.toml");
    let catalogs = shipped_catalogs();
    let served = serve(
        command,
        &[
            "--config",
            config.to_str().unwrap(),
            "--catalogs",
            catalogs.to_str().unwrap(),
        ],
    );
    let endpoint = served.endpoint();
    let token = token_command("SEZZLEE_DEMO_SECRET", secret, &["--scope", "orders:admin"]);
    assert!(
        !endpoint
            .seen(&anonymous())
            .await
            .names
            .contains("purge_order")
    );
    assert!(
        endpoint
            .seen(&bearer(&token))
            .await
            .names
            .contains("purge_order")
    );
    // /status and /metrics answer the operator's scope only.
    let operator = token_command("SEZZLEE_DEMO_SECRET", secret, &["--scope", "sezzlee:admin"]);
    let client = reqwest::Client::new();
    for path in ["/status", "/metrics"] {
        let url = format!("{}{path}", served.base);
        for (who, token, expected) in [
            ("anonymous", None, 401),
            ("orders:admin", Some(&token), 403),
            ("sezzlee:admin", Some(&operator), 200),
        ] {
            let mut request = client.get(&url);
            if let Some(token) = token {
                request = request.bearer_auth(token);
            }
            let status = request.send().await.unwrap().status();
            assert_eq!(status, expected, "{path}, {who}");
        }
    }
    let logs = served.logs.lock().unwrap().clone();
    assert!(!logs.contains(secret), "{logs}");
    assert!(!logs.contains(&token), "{logs}");
}

/// `SEZZLEE_JWT_*` configure `[auth.jwt]` and combine with the file's
/// `[[auth.api_keys]]`; a bad `[auth]` stops `serve` with exit code 2.
#[tokio::test]
async fn serve_reads_auth_from_the_environment_and_the_file() {
    init();
    let dir = tempfile::tempdir().unwrap();
    for (name, content) in catalog(NOWHERE) {
        std::fs::write(dir.path().join(name), content).unwrap();
    }
    let config = dir.path().join("sezzlee.toml");
    std::fs::write(
        &config,
        format!(
            "[[auth.api_keys]]\nheader = \"x-ops-key\"\nkey_env = \"SEZZLEE_VIS_CHILD_KEY\"\nsubject = \"ops-bot\"\nscopes = [\"ops\"]\n\n[auth.jwt]\nhs256_secret_env = \"{UNSET_VARIABLE}\"\n"
        ),
    )
    .unwrap();
    let secret = "child-hs256-secret-71c4e0b9a2d35f86";
    let api_key = "child-api-key-0a9c37e5d1b2f468";
    let args = [
        "--config",
        config.to_str().unwrap(),
        "--catalogs",
        dir.path().to_str().unwrap(),
    ];

    // The file alone names an unset variable: refused, naming it.
    let output = sezzlee()
        .current_dir(dir.path())
        .env("SEZZLEE_VIS_CHILD_KEY", api_key)
        .arg("serve")
        .args(["--listen", "127.0.0.1:0", "--watch", "off"])
        .args(args)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains(UNSET_VARIABLE));

    // The environment's [auth.jwt] replaces the file's.
    let mut command = sezzlee();
    command
        .env("SEZZLEE_VIS_CHILD_KEY", api_key)
        .env("SEZZLEE_VIS_CHILD_SECRET", secret)
        .env("SEZZLEE_JWT_HS256_SECRET_ENV", "SEZZLEE_VIS_CHILD_SECRET")
        .env("SEZZLEE_JWT_ISSUER", ISSUER)
        .env("SEZZLEE_JWT_AUDIENCE", AUDIENCE);
    let served = serve(command, &args);
    let endpoint = served.endpoint();
    let admin = hs256(secret, &claims("shop:admin", &[]));
    let foreign = hs256(
        secret,
        &claims_with("shop:admin", |c| {
            c.insert("aud".into(), json!("someone-else"));
        }),
    );
    assert_sees(&endpoint, "anonymous", &anonymous(), &public_and(&[])).await;
    assert_sees(
        &endpoint,
        "admin",
        &bearer(&admin),
        &public_and(&["purge_all"]),
    )
    .await;
    assert_sees(
        &endpoint,
        "wrong audience",
        &bearer(&foreign),
        &public_and(&[]),
    )
    .await;
    assert_sees(
        &endpoint,
        "ops key",
        &header("x-ops-key", api_key),
        &public_and(&["internal_metrics"]),
    )
    .await;

    // Each rejected credential is logged at debug level with the reason,
    // never with the token, its signature, the secret or the key.
    let expired = hs256(
        secret,
        &claims_with(EVERYTHING, |c| {
            c.insert("exp".into(), json!(now() - 3600));
        }),
    );
    let wrong_issuer = hs256(
        secret,
        &claims_with(EVERYTHING, |c| {
            c.insert("iss".into(), json!("https://elsewhere.example"));
        }),
    );
    let wrong_key = "wrong-api-key-5e7d1c0a93b2";
    for creds in [
        bearer(&expired),
        bearer(&wrong_issuer),
        header("x-ops-key", wrong_key),
    ] {
        assert_sees(&endpoint, "rejected", &creds, &public_and(&[])).await;
    }
    let logs = served.logs_once(|logs| rejections(logs).len() >= 4);
    let reasons = rejections(&logs).join("\n").to_lowercase();
    for reason in ["expired", "issuer", "audience", "api key"] {
        assert!(
            reasons.contains(reason),
            "the log says why ({reason}): {logs}"
        );
    }
    for leaked in [
        secret,
        api_key,
        wrong_key,
        admin.as_str(),
        foreign.as_str(),
        expired.as_str(),
        wrong_issuer.as_str(),
        // The signature alone would be enough to replay a token.
        expired.rsplit('.').next().unwrap(),
    ] {
        assert!(!logs.contains(leaked), "the log shows {leaked}: {logs}");
    }
}

/// The debug lines that say a credential was treated as none.
fn rejections(logs: &str) -> Vec<&str> {
    logs.lines()
        // At the default level: an operator sees why.
        .filter(|line| line.contains(" INFO ") && line.contains("no credential"))
        .collect()
}
