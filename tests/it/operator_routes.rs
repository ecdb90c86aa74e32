//! The operator's routes and the demo backend (issue 29, item 3): real
//! gateways on loopback, real HTTP requests with and without credentials.
//!
//! With `[auth]` configured, `/status` and `/metrics` answer only a
//! verified credential carrying `auth.admin_scope` (`sezzlee:admin` by
//! default): without one, `401` with the MCP endpoint's challenge; with
//! one lacking the scope, `403` naming it. `/healthz` and `/readyz` stay
//! open for probes, and without `[auth]` everything stays open. The demo
//! backend under `/demo` answers, by default, only while the served
//! catalog has a document whose backend is the demo.

use crate::support::*;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::json;
use sezzlee_gateway::settings::{ApiKeySettings, AuthSettings, JwtSettings};
use std::sync::Once;
use std::time::{SystemTime, UNIX_EPOCH};

/// The HS256 secret and the operator's API key: variables and values.
const SECRET: (&str, &str) = (
    "SEZZLEE_OPS_ROUTES_HS256_4E1B",
    "operator-routes-hs256-secret-9c2d7a15e0b84f36",
);
const OPERATOR_KEY: (&str, &str) = (
    "SEZZLEE_OPS_ROUTES_API_KEY_4E1C",
    "operator-routes-api-key-53f0a8c2e71d4b96",
);

/// Sets the variables once, before any gateway of this module reads them.
fn init() {
    static ONCE: Once = Once::new();
    // SAFETY: every test of this module calls `init` before it starts a
    // gateway, and the values never change after (std's own lock orders
    // it with every other `std::env` access).
    ONCE.call_once(|| unsafe {
        std::env::set_var(SECRET.0, SECRET.1);
        std::env::set_var(OPERATOR_KEY.0, OPERATOR_KEY.1);
    });
}

/// `[auth]` with the HS256 secret and the operator's API key (scopes
/// `sezzlee:admin`), `required` as given.
fn auth(required: bool) -> AuthSettings {
    AuthSettings {
        jwt: Some(JwtSettings {
            hs256_secret_env: Some(SECRET.0.to_string()),
            ..JwtSettings::default()
        }),
        api_keys: vec![ApiKeySettings {
            header: "x-operator-key".to_string(),
            key_env: OPERATOR_KEY.0.to_string(),
            subject: "prometheus".to_string(),
            scopes: vec!["sezzlee:admin".to_string()],
            ..ApiKeySettings::default()
        }],
        required,
        ..AuthSettings::default()
    }
}

/// A token signed with the secret, carrying `scope`.
fn token(scope: &str) -> String {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let claims = json!({"sub": "someone", "scope": scope, "iat": now, "exp": now + 600});
    let key = EncodingKey::from_secret(SECRET.1.as_bytes()).unwrap();
    jsonwebtoken::encode(&Header::new(Algorithm::HS256), &claims, &key).unwrap()
}

fn bearer(token: &str) -> String {
    format!("Bearer {token}")
}

const OPERATOR_ROUTES: [&str; 2] = ["/status", "/metrics"];
const PROBES: [&str; 2] = ["/healthz", "/readyz"];

/// Checks that `reply` is a refusal that shows nothing of the route.
fn assert_shows_nothing(reply: &Reply, label: &str) {
    let body = reply.json();
    assert!(body["error"].is_string(), "{label}: {body}");
    for telltale in ["generation", "diagnostics", "orders.yaml", "sezzlee_"] {
        assert!(
            !reply.text.contains(telltale),
            "{label}: the refusal shows {telltale}: {}",
            reply.text
        );
    }
}

#[tokio::test]
async fn status_and_metrics_answer_only_the_admin_scope_once_auth_is_configured() {
    init();
    for required in [false, true] {
        let gateway = TestGateway::start(&shipped_catalogs(), |settings| {
            settings.auth = Some(auth(required));
        })
        .await;
        let challenge = format!(
            "Bearer resource_metadata=\"{}/.well-known/oauth-protected-resource/mcp\"",
            gateway.base
        );
        let admin = bearer(&token("sezzlee:admin"));
        let orders_admin = bearer(&token("orders:admin orders:read"));
        for path in OPERATOR_ROUTES {
            let label = |who: &str| format!("{path}, required = {required}, {who}");

            // No credential: 401, the MCP endpoint's challenge.
            let anonymous = gateway.get(path, &[]).await;
            assert_eq!(anonymous.status, 401, "{}", label("anonymous"));
            assert_eq!(
                anonymous.header("www-authenticate"),
                Some(challenge.as_str())
            );
            assert_shows_nothing(&anonymous, &label("anonymous"));

            // An invalid or unverifiable token: 401, invalid_token (as the
            // MCP endpoint answers it under `auth.required`); a wrong API
            // key: 401 saying so, with no token error (no token was sent).
            for (who, value) in [
                ("an expired token", bearer(&expired_token())),
                ("an opaque token", bearer("opaque-0123456789")),
                ("a wrong API key", "wrong".to_string()),
            ] {
                let key = who == "a wrong API key";
                let header = if key {
                    "x-operator-key"
                } else {
                    "authorization"
                };
                let refused = gateway.get(path, &[(header, &value)]).await;
                assert_eq!(refused.status, 401, "{}", label(who));
                let sent = refused.header("www-authenticate").unwrap_or_default();
                assert!(sent.starts_with(&challenge), "{}: {sent}", label(who));
                assert_eq!(
                    sent.contains("error=\"invalid_token\""),
                    !key,
                    "{}: {sent}",
                    label(who)
                );
                if key {
                    assert!(
                        refused
                            .text
                            .contains("the API key is not one this gateway knows"),
                        "{}: {}",
                        label(who),
                        refused.text
                    );
                }
                assert_shows_nothing(&refused, &label(who));
            }

            // A verified caller without the admin scope (even the demo's
            // own administrator): 403, naming the scope it needs.
            let forbidden = gateway.get(path, &[("authorization", &orders_admin)]).await;
            assert_eq!(forbidden.status, 403, "{}", label("orders:admin"));
            let sent = forbidden.header("www-authenticate").unwrap_or_default();
            assert!(
                sent.contains("error=\"insufficient_scope\"")
                    && sent.contains("scope=\"sezzlee:admin\""),
                "{}: {sent}",
                label("orders:admin")
            );
            assert_shows_nothing(&forbidden, &label("orders:admin"));

            // The admin scope, by token or by API key: the route.
            for (who, header, value) in [
                ("admin token", "authorization", admin.as_str()),
                ("operator key", "x-operator-key", OPERATOR_KEY.1),
            ] {
                let answered = gateway.get(path, &[(header, value)]).await;
                assert_eq!(answered.status, 200, "{}: {}", label(who), answered.text);
            }
        }
        let mut gateway = gateway;
        gateway.admin = Some(("authorization".to_string(), admin.clone()));
        assert_eq!(
            gateway.status().await["auth"]["adminScope"],
            "sezzlee:admin"
        );
        assert!(gateway.metrics().await.contains("sezzlee_catalog_tools"));

        // The probes stay open to anyone.
        for path in PROBES {
            let reply = gateway.get(path, &[]).await;
            assert_eq!(reply.status, 200, "{path}, required = {required}");
        }
    }
}

fn expired_token() -> String {
    let claims = json!({"sub": "someone", "scope": "sezzlee:admin", "exp": 1_000_000_000});
    let key = EncodingKey::from_secret(SECRET.1.as_bytes()).unwrap();
    jsonwebtoken::encode(&Header::new(Algorithm::HS256), &claims, &key).unwrap()
}

#[tokio::test]
async fn the_admin_scope_is_configurable_and_must_be_one_scope() {
    init();
    let gateway = TestGateway::start(&shipped_catalogs(), |settings| {
        settings.auth = Some(AuthSettings {
            admin_scope: Some("ops:observe".to_string()),
            ..auth(false)
        });
    })
    .await;
    let default_scope = bearer(&token("sezzlee:admin"));
    let configured = bearer(&token("orders:read ops:observe"));
    for path in OPERATOR_ROUTES {
        let refused = gateway
            .get(path, &[("authorization", &default_scope)])
            .await;
        assert_eq!(refused.status, 403, "{path}");
        assert!(
            refused
                .header("www-authenticate")
                .unwrap_or_default()
                .contains("scope=\"ops:observe\""),
            "{path}: {:?}",
            refused.headers
        );
        // The API key's sezzlee:admin is no longer the admin scope either.
        let key = gateway
            .get(path, &[("x-operator-key", OPERATOR_KEY.1)])
            .await;
        assert_eq!(key.status, 403, "{path}");
        let answered = gateway.get(path, &[("authorization", &configured)]).await;
        assert_eq!(answered.status, 200, "{path}: {}", answered.text);
    }
    for bad in ["", "two scopes", "quote\"d", "back\\slash"] {
        let mut settings = test_settings(&shipped_catalogs());
        settings.auth = Some(AuthSettings {
            admin_scope: Some(bad.to_string()),
            ..auth(false)
        });
        assert!(
            sezzlee_gateway::server::load_checked(settings).is_err(),
            "admin_scope {bad:?} was accepted"
        );
    }
}

#[tokio::test]
async fn without_auth_every_route_is_open_as_the_mcp_endpoint_is() {
    let gateway = TestGateway::shipped().await;
    for path in OPERATOR_ROUTES.into_iter().chain(PROBES) {
        let reply = gateway.get(path, &[]).await;
        assert_eq!(reply.status, 200, "{path}: {}", reply.text);
    }
    assert!(gateway.status().await["auth"]["adminScope"].is_null());
}

// ------------------------------------------------------------ the demo backend

/// A document whose backend is elsewhere: what serving "other catalogs"
/// means.
const ELSEWHERE: &str = r#"{
  "openapi": "3.0.3",
  "info": {"title": "Elsewhere", "version": "1"},
  "servers": [{"url": "http://127.0.0.1:9/v1"}],
  "paths": {"/things": {"get": {"operationId": "listThings", "summary": "Lists things",
    "responses": {"200": {"description": "ok"}}}}}
}"#;

/// `GET /demo/orders` on `gateway`: the HTTP status.
async fn demo_status(gateway: &TestGateway) -> u16 {
    gateway.get("/demo/orders", &[]).await.status
}

#[tokio::test]
async fn the_demo_backend_answers_only_while_the_demo_catalog_is_served() {
    let auto = |settings: &mut sezzlee_gateway::settings::Settings| {
        settings.demo_backend = DemoBackend::Auto;
    };
    // The shipped catalog names ${SEZZLEE_SELF}/demo: auto serves it.
    let shipped = TestGateway::start(&shipped_catalogs(), auto).await;
    assert_eq!(demo_status(&shipped).await, 200);
    let orders = shipped.get("/demo/orders/1", &[]).await;
    assert_eq!(
        orders.json()["item"],
        "mechanical keyboard",
        "{}",
        orders.text
    );

    // Another catalog: no demo, unless asked for.
    let files = [("elsewhere.json", ELSEWHERE.to_string())];
    let other = TestGateway::with_files(&files, auto).await;
    assert_eq!(demo_status(&other).await, 404);
    for method in [reqwest::Method::DELETE, reqwest::Method::POST] {
        let reply = other
            .client
            .request(method.clone(), format!("{}/demo/orders/1", other.base))
            .send()
            .await
            .unwrap();
        assert_eq!(reply.status(), 404, "{method}");
    }
    let forced = TestGateway::with_files(&files, |settings| {
        settings.demo_backend = DemoBackend::On;
    })
    .await;
    assert_eq!(demo_status(&forced).await, 200);
    let off = TestGateway::start(&shipped_catalogs(), |settings| {
        settings.demo_backend = DemoBackend::Off;
    })
    .await;
    assert_eq!(demo_status(&off).await, 404);

    // Auto follows the catalog as it is reloaded.
    let dir = copy_of_shipped_catalogs();
    let mut settings = test_settings(dir.path());
    settings.demo_backend = DemoBackend::Auto;
    let (live, reloader, _watcher) = TestGateway::start_reloading(settings, None).await;
    assert_eq!(demo_status(&live).await, 200);
    for name in ["orders.yaml", "orders.sezzlee.yaml"] {
        std::fs::remove_file(dir.path().join(name)).unwrap();
    }
    std::fs::write(dir.path().join("elsewhere.json"), ELSEWHERE).unwrap();
    // A deletion is published once a rescan after the grace still misses
    // the files (the watcher would schedule that rescan; here it is asked for).
    reloader.rescan().await;
    tokio::time::sleep(live.gateway.settings.deletion_grace).await;
    reloader.rescan().await;
    assert_eq!(demo_status(&live).await, 404, "after the demo left");
    for name in ["orders.yaml", "orders.sezzlee.yaml"] {
        std::fs::copy(shipped_catalogs().join(name), dir.path().join(name)).unwrap();
    }
    reloader.rescan().await;
    assert_eq!(demo_status(&live).await, 200, "after it came back");
}
