//! The operator's routes and the demo backend: real
//! gateways on loopback, real HTTP requests with and without credentials.
//!
//! With `[auth]` configured, `/status`, `/metrics` and `/changes` answer only a
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
use std::time::UNIX_EPOCH;

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
    // For the test gateways only (`support::set_test_variable`).
    ONCE.call_once(|| {
        set_test_variable(SECRET.0, SECRET.1);
        set_test_variable(OPERATOR_KEY.0, OPERATOR_KEY.1);
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
    hs256_token(SECRET.1, "someone", scope)
}

fn bearer(token: &str) -> String {
    format!("Bearer {token}")
}

const OPERATOR_ROUTES: [&str; 3] = ["/status", "/metrics", "/changes"];
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

// ------------------------------------------------------------ what they say

/// The commit this build was told (as the gateway, built alike, reads it).
fn build_commit() -> Option<&'static str> {
    option_env!("SEZZLEE_BUILD_COMMIT").filter(|commit| !commit.is_empty())
}

#[tokio::test]
async fn status_says_which_gateway_runs_where_and_for_how_long() {
    let gateway = TestGateway::shipped().await;
    let status = gateway.status().await;
    assert_eq!(status["version"], env!("CARGO_PKG_VERSION"), "{status}");
    assert_eq!(
        status["build"],
        json!({"commit": build_commit(), "profile": "debug"}),
        "{status}"
    );
    let address = gateway.base.strip_prefix("http://").unwrap();
    assert_eq!(
        status["listen"], address,
        "the address bound, port included"
    );
    assert_eq!(
        status["catalogs"],
        shipped_catalogs().display().to_string(),
        "{status}"
    );
    assert_eq!(status["reloadFailures"], 0, "{status}");
    let uptime = |status: &serde_json::Value| status["uptimeSeconds"].as_f64().unwrap();
    let first = uptime(&status);
    assert!(first > 0.0 && first < 600.0, "{status}");
    tokio::time::sleep(std::time::Duration::from_millis(30)).await;
    assert!(uptime(&gateway.status().await) >= first + 0.02);
}

#[tokio::test]
async fn metrics_carry_the_build_and_the_process_in_prometheus_text() {
    let gateway = TestGateway::shipped().await;
    let text = gateway.metrics().await;
    assert_prometheus_text(&text);
    let build = format!(
        "sezzlee_build_info{{version=\"{}\",commit=\"{}\",profile=\"debug\"}}",
        env!("CARGO_PKG_VERSION"),
        build_commit().unwrap_or("unknown")
    );
    assert_eq!(metric(&text, &build), Some(1.0), "{text}");
    assert!(metric(&text, "sezzlee_uptime_seconds").is_some_and(|s| s > 0.0));
    if cfg!(target_os = "linux") {
        let figure = |name: &str| {
            metric(&text, name)
                .filter(|value| *value > 0.0)
                .unwrap_or_else(|| panic!("{name} missing or not positive:\n{text}"))
        };
        assert!(figure("process_resident_memory_bytes") > 1e6);
        // CPU time is counted in hundredths of a second: spend some until
        // it shows.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        let mut spent = 0u64;
        loop {
            let text = gateway.metrics().await;
            let cpu = metric(&text, "process_cpu_seconds_total").expect("CPU time shown");
            if cpu > 0.0 {
                break;
            }
            assert!(std::time::Instant::now() < deadline, "no CPU time:\n{text}");
            for i in 0..2_000_000u64 {
                spent = std::hint::black_box(spent.wrapping_mul(31).wrapping_add(i));
            }
        }
        assert!(figure("process_open_fds") <= figure("process_max_fds"));
        let now = std::time::SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_secs_f64();
        let started = figure("process_start_time_seconds");
        // This test process started before the gateway it serves.
        assert!(started <= now && started > now - 86_400.0, "{started}");
    }
}

#[tokio::test]
async fn responses_are_counted_by_status() {
    init();
    let mut gateway = TestGateway::start(&shipped_catalogs(), |settings| {
        settings.auth = Some(auth(true));
        settings.max_body_bytes = 4096;
    })
    .await;
    gateway.admin = Some(("authorization".to_string(), bearer(&token("sezzlee:admin"))));
    let count = |text: &str, status: u16| {
        metric(
            text,
            &format!("sezzlee_http_responses_total{{status=\"{status}\"}}"),
        )
        .unwrap_or_else(|| panic!("no count of {status}:\n{text}"))
    };
    let before = gateway.metrics().await;
    for status in [400, 401, 413, 429] {
        assert_eq!(
            count(&before, status),
            0.0,
            "{status} is shown before one is sent"
        );
    }

    // 401: no credential.
    let anonymous = gateway.modern("tools/list", json!({})).await;
    assert_eq!(anonymous.status, 401, "{}", anonymous.text);

    let caller = bearer(&token("orders:read"));
    let with_caller = |body: &serde_json::Value| {
        let mut headers = modern_headers(body);
        headers.push(("authorization", caller.clone()));
        headers
    };
    // 400: JSON cut short.
    let listed = modern_request(1, "tools/list", json!({}));
    let mut headers = with_caller(&listed);
    headers.push(("content-type", "application/json".to_string()));
    let headers: Vec<(&str, &str)> = headers.iter().map(|(n, v)| (*n, v.as_str())).collect();
    let malformed = gateway
        .post_raw(r#"{"jsonrpc": "2.0", "id": 1, "method": "#, &headers)
        .await;
    assert_eq!(malformed.status, 400, "{}", malformed.text);

    // 413: over max_body_bytes.
    let params = json!({"name": "search_tools", "arguments": {"query": "x".repeat(8192)}});
    let big = modern_request(1, "tools/call", params);
    let headers = with_caller(&big);
    let headers: Vec<(&str, &str)> = headers.iter().map(|(n, v)| (*n, v.as_str())).collect();
    let oversized = gateway.post_json(&big, &headers).await;
    assert_eq!(oversized.status, 413, "{}", oversized.text);

    let after = gateway.metrics().await;
    for status in [400, 401, 413] {
        assert_eq!(count(&after, status), 1.0, "{status}:\n{after}");
    }
    // The /metrics answer before (the one being written is counted once sent).
    assert!(count(&after, 200) >= 1.0, "{after}");
    assert_eq!(count(&after, 429), 0.0);
}

/// Every line of `text` is Prometheus text (format 0.0.4): each family
/// declared once by `# HELP` and `# TYPE` (counter, gauge or histogram)
/// before its samples, counters named `_total`, label values quoted, and
/// every value a number.
fn assert_prometheus_text(text: &str) {
    use std::collections::HashMap;
    let valid_name = |name: &str| {
        let mut chars = name.chars();
        chars
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == ':')
            && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':')
    };
    let mut types: HashMap<String, String> = HashMap::new();
    let mut helped = std::collections::HashSet::new();
    for line in text.lines() {
        if let Some(help) = line.strip_prefix("# HELP ") {
            let name = help.split(' ').next().unwrap_or_default();
            assert!(helped.insert(name.to_string()), "HELP twice: {line}");
            continue;
        }
        if let Some(declared) = line.strip_prefix("# TYPE ") {
            let (name, kind) = declared.split_once(' ').expect(line);
            assert!(valid_name(name), "{line}");
            assert!(helped.contains(name), "TYPE before HELP: {line}");
            assert!(["counter", "gauge", "histogram"].contains(&kind), "{line}");
            assert!(
                kind != "counter" || name.ends_with("_total"),
                "a counter not named _total: {line}"
            );
            assert!(
                types.insert(name.to_string(), kind.to_string()).is_none(),
                "TYPE twice: {line}"
            );
            continue;
        }
        assert!(!line.starts_with('#') && !line.is_empty(), "{line:?}");
        let (series, value) = line.rsplit_once(' ').expect(line);
        assert!(
            value.parse::<f64>().is_ok() || ["+Inf", "-Inf", "NaN"].contains(&value),
            "{line}"
        );
        let (name, labels) = match series.split_once('{') {
            Some((name, labels)) => (name, labels.strip_suffix('}').expect(line)),
            None => (series, ""),
        };
        assert!(valid_name(name), "{line}");
        if !labels.is_empty() {
            // `key="value"` pairs; values have no unescaped quote.
            let mut rest = labels;
            while !rest.is_empty() {
                let (key, after) = rest.split_once("=\"").expect(line);
                assert!(valid_name(key), "{line}");
                let mut end = None;
                let mut escaped = false;
                for (i, c) in after.char_indices() {
                    match (escaped, c) {
                        (true, _) => escaped = false,
                        (false, '\\') => escaped = true,
                        (false, '"') => {
                            end = Some(i);
                            break;
                        }
                        _ => {}
                    }
                }
                let end = end.expect(line);
                rest = after[end + 1..]
                    .strip_prefix(',')
                    .unwrap_or(&after[end + 1..]);
            }
        }
        let family = ["_bucket", "_sum", "_count"]
            .iter()
            .find_map(|suffix| {
                let base = name.strip_suffix(suffix)?;
                (types.get(base).map(String::as_str) == Some("histogram")).then_some(base)
            })
            .unwrap_or(name);
        assert!(
            types.contains_key(family),
            "a sample before its TYPE: {line}"
        );
    }
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
