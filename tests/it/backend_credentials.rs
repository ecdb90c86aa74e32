//! Backend credentials without token passthrough: a real
//! authorization server in process implementing RFC 8693 token exchange
//! and client credentials (form posts, HTTP basic client authentication,
//! JSON answers), the recording backend, and a gateway whose callers hold
//! JWTs issued for the gateway itself (its `audience`). The backend must
//! receive the exchanged token or the gateway's own, never the caller's;
//! exchanged tokens are cached per caller token; a token for the gateway is
//! never passed through; every refusal happens before the backend is
//! touched.

use crate::backend::Backend;
use crate::support::*;
use axum::Router;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use base64::Engine;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::{Value, json};
use sezzlee_gateway::settings::{AuthSettings, JwtSettings};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, Once};

const JWT_SECRET: (&str, &str) = (
    "SEZZLEE_CREDS_JWT_3B9A",
    "creds-jwt-secret-51c2e7-a90f3b6d84e2c1",
);
const CLIENT_SECRET: (&str, &str) = ("SEZZLEE_CREDS_CLIENT_3B9A", "client secret/with:odd&chars");
const UNSET_SECRET: &str = "SEZZLEE_CREDS_UNSET_3B9A";
const GATEWAY_AUDIENCE: &str = "https://gateway.example/mcp";
const CLIENT_ID: &str = "sezzlee-gateway";

fn init() {
    static ONCE: Once = Once::new();
    // For the test gateways only (`support::set_test_variable`);
    // UNSET_SECRET is never set.
    ONCE.call_once(|| {
        set_test_variable(JWT_SECRET.0, JWT_SECRET.1);
        set_test_variable(CLIENT_SECRET.0, CLIENT_SECRET.1);
    });
}

// ------------------------------------------------------------ the authorization server

/// One token request as the authorization server received it.
#[derive(Debug, Clone)]
struct TokenRequest {
    client: Option<(String, String)>,
    form: HashMap<String, String>,
}

#[derive(Default)]
struct Issued {
    requests: Mutex<Vec<TokenRequest>>,
}

struct AuthorizationServer {
    token_url: String,
    issued: Arc<Issued>,
}

impl AuthorizationServer {
    async fn start() -> AuthorizationServer {
        let issued = Arc::new(Issued::default());
        let app = Router::new()
            .route("/token", post(token))
            .with_state(issued.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let token_url = format!("http://{}/token", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await });
        AuthorizationServer { token_url, issued }
    }

    fn requests(&self) -> Vec<TokenRequest> {
        self.issued.requests.lock().unwrap().clone()
    }
}

/// RFC 6749 client authentication (HTTP basic, form-encoded parts), then
/// RFC 8693 token exchange or client credentials.
async fn token(State(issued): State<Arc<Issued>>, headers: HeaderMap, body: String) -> Response {
    let form: HashMap<String, String> = url_decoded(&body);
    let client = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Basic "))
        .and_then(|b| base64::engine::general_purpose::STANDARD.decode(b).ok())
        .and_then(|b| String::from_utf8(b).ok())
        .and_then(|pair| {
            let (id, secret) = pair.split_once(':')?;
            Some((form_decoded(id), form_decoded(secret)))
        });
    let count = {
        let mut requests = issued.requests.lock().unwrap();
        requests.push(TokenRequest {
            client: client.clone(),
            form: form.clone(),
        });
        requests.len()
    };
    let refuse = |error: &str| {
        (StatusCode::BAD_REQUEST, axum::Json(json!({"error": error}))).into_response()
    };
    if client != Some((CLIENT_ID.to_string(), CLIENT_SECRET.1.to_string())) {
        return (
            StatusCode::UNAUTHORIZED,
            axum::Json(json!({"error": "invalid_client"})),
        )
            .into_response();
    }
    let access_token = match form.get("grant_type").map(String::as_str) {
        Some("urn:ietf:params:oauth:grant-type:token-exchange") => {
            let subject = form.get("subject_token").cloned().unwrap_or_default();
            if subject.is_empty() || !form.contains_key("audience") {
                return refuse("invalid_request");
            }
            // Refused: a subject named "refused" (in a JWT's payload or
            // an opaque token's text).
            let payload = subject
                .split('.')
                .nth(1)
                .and_then(|p| {
                    base64::engine::general_purpose::URL_SAFE_NO_PAD
                        .decode(p)
                        .ok()
                })
                .map(|p| String::from_utf8_lossy(&p).to_string())
                .unwrap_or_default();
            if subject.contains("refused") || payload.contains("refused") {
                return refuse("invalid_grant");
            }
            format!("exchanged-{count}-for-{}", form["audience"])
        }
        Some("client_credentials") => format!("gateway-own-{count}"),
        _ => return refuse("unsupported_grant_type"),
    };
    axum::Json(json!({
        "access_token": access_token,
        "issued_token_type": "urn:ietf:params:oauth:token-type:access_token",
        "token_type": "Bearer",
        "expires_in": 300,
    }))
    .into_response()
}

fn url_decoded(body: &str) -> HashMap<String, String> {
    body.split('&')
        .filter_map(|pair| pair.split_once('='))
        .map(|(k, v)| (form_decoded(k), form_decoded(v)))
        .collect()
}

fn form_decoded(text: &str) -> String {
    percent_encoding::percent_decode_str(&text.replace('+', " "))
        .decode_utf8_lossy()
        .to_string()
}

// ------------------------------------------------------------ the gateway

const API: &str = r#"{
  "openapi": "3.0.3",
  "info": {"title": "NAME", "version": "1"},
  "paths": {"/PATH": {"get": {"operationId": "NAME", "security": [],
    "responses": {"200": {"description": "ok"}}}}}
}"#;

fn document(name: &str) -> String {
    API.replace("NAME", name).replace("PATH", name)
}

fn sidecar(backend: &str, auth: &str) -> String {
    format!("backend:\n  baseUrl: {backend}\n  auth: {auth}\n")
}

fn caller_token(subject: &str) -> String {
    let claims = json!({"sub": subject, "aud": GATEWAY_AUDIENCE, "exp": 4_000_000_000u64});
    let key = EncodingKey::from_secret(JWT_SECRET.1.as_bytes()).unwrap();
    jsonwebtoken::encode(&Header::new(Algorithm::HS256), &claims, &key).unwrap()
}

async fn invoke(gateway: &TestGateway, authorization: Option<&str>, tool: &str) -> (Value, bool) {
    let reply = gateway
        .modern_custom(
            "tools/call",
            json!({"name": "invoke_tool", "arguments": {"name": tool}}),
            |_, headers| {
                if let Some(value) = authorization {
                    headers.push(("authorization", value.to_string()));
                }
            },
        )
        .await;
    assert_eq!(reply.status, 200, "{}", reply.text);
    let answer = tool_reply(&reply.json()["result"]);
    (answer.payload, answer.is_error)
}

#[tokio::test]
async fn the_backend_gets_an_exchanged_or_own_token_never_the_callers() {
    init();
    let backend = Backend::start().await;
    let server = AuthorizationServer::start().await;
    let asks = |mode: &str, extra: &str, secret: &str| {
        format!(
            "{{mode: {mode}, tokenUrl: \"{}\", clientId: {CLIENT_ID}, clientSecretEnv: {secret}{extra}}}",
            server.token_url
        )
    };
    let files = vec![
        ("exchange.json", document("exchange")),
        (
            "exchange.sezzlee.yaml",
            sidecar(
                &backend.base,
                &asks(
                    "tokenExchange",
                    ", audience: \"https://orders.example\", scopes: [orders:read]",
                    CLIENT_SECRET.0,
                ),
            ),
        ),
        ("service.json", document("service")),
        (
            "service.sezzlee.yaml",
            sidecar(
                &backend.base,
                &asks(
                    "clientCredentials",
                    ", resource: \"https://reports.example\"",
                    CLIENT_SECRET.0,
                ),
            ),
        ),
        ("relay.json", document("relay")),
        (
            "relay.sezzlee.yaml",
            sidecar(&backend.base, "{mode: passthrough}"),
        ),
        ("plain.json", document("plain")),
        (
            "plain.sezzlee.yaml",
            format!("backend:\n  baseUrl: {}\n", backend.base),
        ),
        ("broken.json", document("broken")),
        (
            "broken.sezzlee.yaml",
            sidecar(&backend.base, &asks("clientCredentials", "", UNSET_SECRET)),
        ),
    ];
    let gateway = TestGateway::with_files(&files, |settings| {
        settings.auth = Some(AuthSettings {
            jwt: Some(JwtSettings {
                hs256_secret_env: Some(JWT_SECRET.0.to_string()),
                audience: Some(GATEWAY_AUDIENCE.to_string()),
                ..JwtSettings::default()
            }),
            ..AuthSettings::default()
        });
    })
    .await;
    let alice = format!("Bearer {}", caller_token("alice"));
    let bob = format!("Bearer {}", caller_token("bob"));

    // Token exchange: the caller's token goes to the authorization server
    // (as subject_token, with the backend as audience), never to the
    // backend; the backend gets the exchanged token.
    let (answer, failed) = invoke(&gateway, Some(&alice), "exchange").await;
    assert!(!failed, "{answer}");
    let sent = backend.last();
    assert_eq!(sent.path(), "/exchange");
    assert_eq!(
        sent.all("authorization"),
        ["Bearer exchanged-1-for-https://orders.example"]
    );
    let request = &server.requests()[0];
    assert_eq!(
        request.client,
        Some((CLIENT_ID.to_string(), CLIENT_SECRET.1.to_string())),
        "client authentication, its secret form-encoded"
    );
    assert_eq!(
        request.form["grant_type"],
        "urn:ietf:params:oauth:grant-type:token-exchange"
    );
    assert_eq!(request.form["subject_token"], caller_token("alice"));
    assert_eq!(
        request.form["subject_token_type"],
        "urn:ietf:params:oauth:token-type:access_token"
    );
    assert_eq!(request.form["audience"], "https://orders.example");
    assert_eq!(request.form["scope"], "orders:read");
    // Cached per caller token: alice again costs no exchange, bob one.
    invoke(&gateway, Some(&alice), "exchange").await;
    assert_eq!(server.requests().len(), 1);
    assert_eq!(
        backend.last().all("authorization"),
        ["Bearer exchanged-1-for-https://orders.example"]
    );
    invoke(&gateway, Some(&bob), "exchange").await;
    assert_eq!(server.requests().len(), 2);
    assert_eq!(
        backend.last().all("authorization"),
        ["Bearer exchanged-2-for-https://orders.example"]
    );

    // Client credentials: the gateway's own token, fetched once.
    for caller in [Some(alice.as_str()), None, Some(bob.as_str())] {
        let (answer, failed) = invoke(&gateway, caller, "service").await;
        assert!(!failed, "{answer}");
        assert_eq!(
            backend.last().all("authorization"),
            ["Bearer gateway-own-3"]
        );
    }
    assert_eq!(server.requests().len(), 3);
    assert_eq!(
        server.requests()[2].form["resource"],
        "https://reports.example"
    );
    assert_eq!(
        server.requests()[2].form["grant_type"],
        "client_credentials"
    );

    // Refusals, each before the backend is touched.
    let before = backend.count();
    let refused_token = format!("Bearer {}", caller_token("refused"));
    let cases: [(&str, Option<&str>, &str, &str, bool); 5] = [
        (
            "a token for the gateway, passed through",
            Some(&alice),
            "relay",
            "issued for this gateway",
            false,
        ),
        (
            "an exchange without a token",
            None,
            "exchange",
            "no bearer token",
            false,
        ),
        (
            "an exchange the server refuses",
            Some(&refused_token),
            "exchange",
            "error invalid_grant",
            false,
        ),
        (
            "an unset client secret",
            Some(&alice),
            "broken",
            UNSET_SECRET,
            false,
        ),
        (
            "an opaque token for an exchange the server refuses",
            Some("Bearer refused-opaque"),
            "exchange",
            "error invalid_grant",
            false,
        ),
    ];
    for (label, caller, tool, says, retryable) in cases {
        let (answer, failed) = invoke(&gateway, caller, tool).await;
        assert!(failed, "{label}: {answer}");
        assert_eq!(answer["error"], "backend_credentials", "{label}: {answer}");
        assert_eq!(answer["retryable"], retryable, "{label}: {answer}");
        assert_eq!(answer["mayHaveReachedBackend"], false, "{label}: {answer}");
        let message = answer["message"].as_str().unwrap();
        assert!(message.contains(says), "{label}: {message}");
        assert!(
            !message.contains(CLIENT_SECRET.1),
            "{label}: a secret shown"
        );
        assert!(
            !message.contains(&caller_token("alice")),
            "{label}: a token shown"
        );
    }
    assert_eq!(
        backend.count(),
        before,
        "a refused call reached the backend"
    );

    // Passthrough of what is not a token for the gateway: as it came. No
    // backend.auth: no Authorization at all.
    let (answer, failed) = invoke(&gateway, Some("Bearer opaque-for-the-backend"), "relay").await;
    assert!(!failed, "{answer}");
    assert_eq!(
        backend.last().all("authorization"),
        ["Bearer opaque-for-the-backend"]
    );
    invoke(&gateway, Some(&alice), "plain").await;
    assert_eq!(backend.last().path(), "/plain");
    assert_eq!(backend.last().all("authorization"), Vec::<&str>::new());
}

#[tokio::test]
async fn an_incomplete_backend_auth_is_refused_with_the_key_at_fault() {
    init();
    for (auth, key) in [
        (
            "{mode: tokenExchange, clientId: a, clientSecretEnv: B}",
            "/backend/auth/tokenUrl",
        ),
        (
            "{mode: clientCredentials, tokenUrl: \"ftp://x\", clientId: a, clientSecretEnv: B}",
            "/backend/auth/tokenUrl",
        ),
        (
            "{mode: tokenExchange, tokenUrl: \"https://x\", clientSecretEnv: B}",
            "/backend/auth/clientId",
        ),
        (
            "{mode: clientCredentials, tokenUrl: \"https://x\", clientId: a}",
            "/backend/auth/clientSecretEnv",
        ),
        (
            "{mode: passthrough, tokenUrl: \"https://x\"}",
            "/backend/auth/tokenUrl",
        ),
        ("{mode: sometimes}", "/backend"),
    ] {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("api.json"), document("api")).unwrap();
        std::fs::write(
            dir.path().join("api.sezzlee.yaml"),
            sidecar("http://127.0.0.1:9", auth),
        )
        .unwrap();
        let output = sezzlee_binary(None)
            .arg("check")
            .arg(dir.path())
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&output.stdout).to_string()
            + &String::from_utf8_lossy(&output.stderr);
        assert!(!output.status.success(), "{auth}: {text}");
        assert!(text.contains(key), "{auth}: {text}");
    }
}
