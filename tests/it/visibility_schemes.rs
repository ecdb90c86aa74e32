//! Scheme-exact visibility: a security requirement is met only
//! by a credential of the scheme it names. One document mixes `oauth2`
//! scopes, `apiKey` in a header and in the query, `http basic`, a scheme
//! it never defines, `security: []` and a policy; callers present a JWT
//! only, an API key only, both, HTTP basic, an opaque bearer token, a
//! wrong key, or nothing. Each sees exactly its set (with `authUncertain`
//! exactly where the gateway cannot check), and every hidden tool answers
//! load_tool and invoke_tool exactly like a tool that does not exist.

use crate::support::*;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::{Value, json};
use sezzlee_gateway::settings::{ApiKeySettings, AuthSettings, JwtSettings};
use std::collections::BTreeMap;
use std::sync::Once;

const SECRET: (&str, &str) = (
    "SEZZLEE_MATRIX_JWT_7C1D",
    "matrix-secret-5b0e0a3c2f-7d18e4b2c96a",
);
const KEY: (&str, &str) = ("SEZZLEE_MATRIX_KEY_7C1D", "matrix-key-9f4e2d71a8");

fn init() {
    static ONCE: Once = Once::new();
    // For the test gateways only (`support::set_test_variable`).
    ONCE.call_once(|| {
        set_test_variable(SECRET.0, SECRET.1);
        set_test_variable(KEY.0, KEY.1);
    });
}

const MATRIX: &str = r#"
openapi: 3.1.0
info: {title: Matrix, version: "1"}
servers: [{url: "http://127.0.0.1:9"}]
components:
  securitySchemes:
    oauth:
      type: oauth2
      flows:
        clientCredentials:
          tokenUrl: https://id.example/token
          scopes: {m:read: read, m:write: write}
    headerKey: {type: apiKey, in: header, name: X-Matrix-Key}
    queryKey: {type: apiKey, in: query, name: api_key}
    basicAuth: {type: http, scheme: basic}
paths:
  /open:
    get: {operationId: open, security: [], responses: {"200": {description: ok}}}
  /oauth-read:
    get: {operationId: oauthRead, security: [{oauth: [m:read]}], responses: {"200": {description: ok}}}
  /oauth-write:
    get: {operationId: oauthWrite, security: [{oauth: [m:write]}], responses: {"200": {description: ok}}}
  /header-key:
    get: {operationId: headerKey, security: [{headerKey: []}], responses: {"200": {description: ok}}}
  /query-key:
    get: {operationId: queryKey, security: [{queryKey: []}], responses: {"200": {description: ok}}}
  /either:
    get: {operationId: either, security: [{oauth: [m:read]}, {headerKey: []}], responses: {"200": {description: ok}}}
  /both:
    get: {operationId: both, security: [{oauth: [m:read], headerKey: []}], responses: {"200": {description: ok}}}
  /basic:
    get: {operationId: basicOnly, security: [{basicAuth: []}], responses: {"200": {description: ok}}}
  /undefined:
    get: {operationId: undefinedScheme, security: [{nowhere: []}], responses: {"200": {description: ok}}}
  /policy:
    get: {operationId: policed, x-sezzlee-visibility: readers, security: [{basicAuth: []}], responses: {"200": {description: ok}}}
"#;

const SIDECAR: &str = r#"
policies:
  readers: {anyScope: [m:read]}
"#;

fn auth() -> AuthSettings {
    AuthSettings {
        jwt: Some(JwtSettings {
            hs256_secret_env: Some(SECRET.0.to_string()),
            ..JwtSettings::default()
        }),
        api_keys: vec![ApiKeySettings {
            header: "X-Matrix-Key".to_string(),
            key_env: KEY.0.to_string(),
            subject: "matrix-bot".to_string(),
            scopes: vec!["m:read".to_string()],
            // The gateway's key stands for the query key too.
            names: vec!["api_key".to_string()],
            ..ApiKeySettings::default()
        }],
        ..AuthSettings::default()
    }
}

fn jwt(scope: &str) -> String {
    let claims = json!({"sub": "agent", "scope": scope, "exp": 4_000_000_000u64});
    let key = EncodingKey::from_secret(SECRET.1.as_bytes()).unwrap();
    jsonwebtoken::encode(&Header::new(Algorithm::HS256), &claims, &key).unwrap()
}

type Creds = Vec<(&'static str, String)>;

/// A tools/call as `creds`: the payload of its answer.
async fn call(gateway: &TestGateway, creds: &Creds, tool: &str, arguments: Value) -> Value {
    let reply = gateway
        .modern_custom(
            "tools/call",
            json!({"name": tool, "arguments": arguments}),
            |_, headers| headers.extend(creds.iter().cloned()),
        )
        .await;
    assert_eq!(reply.status, 200, "{}", reply.text);
    tool_reply(&reply.json()["result"]).payload
}

/// Every tool `creds` see, each with whether it is flagged uncertain.
async fn seen(gateway: &TestGateway, creds: &Creds) -> BTreeMap<String, bool> {
    let page = call(gateway, creds, "search_tools", json!({"limit": 50})).await;
    page["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|card| {
            let name = card["name"].as_str().unwrap().to_string();
            (name, card.get("authUncertain") == Some(&json!(true)))
        })
        .collect()
}

const ALL: [&str; 10] = [
    "open",
    "oauth_read",
    "oauth_write",
    "header_key",
    "query_key",
    "either",
    "both",
    "basic_only",
    "undefined_scheme",
    "policed",
];

#[tokio::test]
async fn each_scheme_is_met_only_by_a_credential_of_its_kind() {
    init();
    let gateway = TestGateway::with_files(
        &[
            ("matrix.yaml", MATRIX.to_string()),
            ("matrix.sezzlee.yaml", SIDECAR.to_string()),
        ],
        |settings| settings.auth = Some(auth()),
    )
    .await;
    let bearer = |token: &str| ("authorization", format!("Bearer {token}"));
    let key = ("x-matrix-key", KEY.1.to_string());
    // Sure: met. Unsure: only the backend can tell (authUncertain).
    let cases: Vec<(&str, Creds, &[&str], &[&str])> = vec![
        ("nothing", vec![], &["open"], &[]),
        (
            "JWT (m:read)",
            vec![bearer(&jwt("m:read"))],
            &["open", "oauth_read", "either", "policed"],
            // A scheme the document never defines: the gateway cannot
            // say, for any credential.
            &["undefined_scheme"],
        ),
        (
            "API key only",
            vec![key.clone()],
            &["open", "header_key", "query_key", "either", "policed"],
            &["undefined_scheme"],
        ),
        (
            "JWT (m:read) and API key",
            vec![bearer(&jwt("m:read")), key.clone()],
            &[
                "open",
                "oauth_read",
                "header_key",
                "query_key",
                "either",
                "both",
                "policed",
            ],
            &["undefined_scheme"],
        ),
        (
            "JWT (m:write) and API key",
            vec![bearer(&jwt("m:write")), key.clone()],
            &[
                "open",
                "oauth_write",
                "header_key",
                "query_key",
                "either",
                "policed",
            ],
            &["undefined_scheme"],
        ),
        (
            "HTTP basic",
            vec![("authorization", "Basic dXNlcjpwYXNz".to_string())],
            &["open"],
            &["basic_only", "undefined_scheme", "policed"],
        ),
        (
            "opaque bearer",
            vec![bearer("an-opaque-token")],
            &["open"],
            &[
                "oauth_read",
                "oauth_write",
                "either",
                "undefined_scheme",
                "policed",
            ],
        ),
        (
            "a wrong API key",
            vec![("x-matrix-key", "not-the-key".to_string())],
            &["open"],
            &[],
        ),
        (
            "an invalid JWT",
            vec![bearer(&format!("{}x", jwt("m:read")))],
            &["open"],
            &[],
        ),
        // Malformed: as no credential (nothing uncertain).
        (
            "Bearer without a token",
            vec![("authorization", "Bearer ".to_string())],
            &["open"],
            &[],
        ),
        (
            "a non-ASCII Authorization",
            vec![("authorization", "Bearer jéton".to_string())],
            &["open"],
            &[],
        ),
    ];
    for (label, creds, sure, unsure) in &cases {
        let expected: BTreeMap<String, bool> = sure
            .iter()
            .map(|n| (n.to_string(), false))
            .chain(unsure.iter().map(|n| (n.to_string(), true)))
            .collect();
        assert_eq!(seen(&gateway, creds).await, expected, "{label}");
        // Hidden means nonexistent: load_tool and invoke_tool answer as
        // for a name nobody ever served.
        for hidden in ALL.iter().filter(|n| !expected.contains_key(**n)) {
            for tool in ["load_tool", "invoke_tool"] {
                let answer = call(&gateway, creds, tool, json!({"name": hidden})).await;
                let nowhere = call(&gateway, creds, tool, json!({"name": "no_such_tool"})).await;
                let answer = answer.to_string().replace(hidden, "no_such_tool");
                assert_eq!(answer, nowhere.to_string(), "{label}: {tool} {hidden}");
            }
        }
    }
}
