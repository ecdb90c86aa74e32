//! The operator's console (issue 35) over real gateways on real sockets:
//! who may open it (loopback only without `[auth]`, the console or admin
//! scope with it, never a page of another site), the headers every answer
//! carries, that its playground and caller view are `search_tools`' own
//! answers, that a reload shows as history, a change with a readable diff
//! and a listen notification, and that no secret is ever shown. The pages
//! themselves are driven in Chromium by tests/interop/console.test.mjs.

use crate::support::*;
use serde_json::{Value, json};
use sezzlee_gateway::gateway::Gateway;
use sezzlee_gateway::reload::Outcome;
use sezzlee_gateway::settings::{ApiKeySettings, AuthSettings, JwtSettings, Settings};
use std::sync::Once;

/// Variables (name, value) the test gateways read: the JWT secret, three
/// API keys, a sidecar's static secret and a client secret.
const JWT_SECRET: (&str, &str) = (
    "SEZZLEE_CONSOLE_JWT_7A1",
    "console-jwt-secret-5f0c9d21b8a34e77",
);
const CONSOLE_KEY: (&str, &str) = ("SEZZLEE_CONSOLE_KEY_7A2", "console-key-value-c4a19e0b62");
const STAFF_KEY: (&str, &str) = ("SEZZLEE_CONSOLE_STAFF_7A3", "staff-key-value-0d83b7f5e1");
const PLAIN_KEY: (&str, &str) = ("SEZZLEE_CONSOLE_PLAIN_7A4", "plain-key-value-91ce2a7d40");
const STATIC_SECRET: (&str, &str) = ("SEZZLEE_CONSOLE_STATIC_7A5", "static-header-secret-e8b1c7");
const CLIENT_SECRET: (&str, &str) = ("SEZZLEE_CONSOLE_CLIENT_7A6", "client-secret-value-2f6a9d");
/// A secret written in a sidecar as it is (a bad habit the console must
/// still not show).
const LITERAL_SECRET: &str = "literal-header-secret-77d0b3";

fn init() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        for (name, value) in [
            JWT_SECRET,
            CONSOLE_KEY,
            STAFF_KEY,
            PLAIN_KEY,
            STATIC_SECRET,
            CLIENT_SECRET,
        ] {
            set_test_variable(name, value);
        }
    });
}

const SHOP: &str = r#"
openapi: 3.0.3
info: {title: Console Shop, version: "1.0"}
servers: [{url: "http://127.0.0.1:9"}]
components:
  securitySchemes:
    oauth:
      type: oauth2
      flows: {clientCredentials: {tokenUrl: "http://127.0.0.1:9/token", scopes: {shop:admin: admin}}}
    basic: {type: http, scheme: basic}
    partnerKey: {type: apiKey, in: header, name: x-partner-key}
paths:
  /reports:
    get: {operationId: getReports, summary: Sales reports., security: [{basic: []}], responses: {"200": {description: ok}}}
  /partners/feed:
    get: {operationId: partnerFeed, summary: The partners' feed., security: [{partnerKey: []}], responses: {"200": {description: ok}}}
  /orders:
    get: {operationId: listOrders, summary: Lists the shop's orders., tags: [orders], responses: {"200": {description: ok}}}
    post: {operationId: createOrder, summary: Creates an order for a customer., tags: [orders], responses: {"201": {description: created}}}
  /orders/{id}/cancel:
    post:
      operationId: cancelOrder
      summary: Cancels an order that has not shipped.
      tags: [orders]
      parameters: [{name: id, in: path, required: true, schema: {type: integer}}]
      responses: {"200": {description: ok}}
  /admin/purge:
    post:
      operationId: purgeEverything
      summary: Purges every order.
      security: [{oauth: [shop:admin]}]
      responses: {"200": {description: ok}}
  /staff/rota:
    get: {operationId: getRota, summary: The staff rota., responses: {"200": {description: ok}}}
"#;

fn sidecar() -> String {
    format!(
        r#"
namespace: shop
policies:
  staff_only: {{anyRole: [staff]}}
tools:
  GET /staff/rota:
    visibility: staff_only
backend:
  baseUrl: "http://127.0.0.1:9"
  headers:
    X-Static-Token: "${{{}}}"
    X-Literal: "{LITERAL_SECRET}"
  auth:
    mode: clientCredentials
    tokenUrl: "http://127.0.0.1:9/token"
    clientId: shop-gateway
    clientSecretEnv: {}
"#,
        STATIC_SECRET.0, CLIENT_SECRET.0
    )
}

fn files() -> Vec<(&'static str, String)> {
    vec![
        ("shop.yaml", SHOP.to_string()),
        ("shop.sezzlee.yaml", sidecar()),
    ]
}

fn api_key(
    header: &str,
    key: (&str, &str),
    subject: &str,
    scopes: &[&str],
    roles: &[&str],
) -> ApiKeySettings {
    ApiKeySettings {
        header: header.to_string(),
        key_env: key.0.to_string(),
        subject: subject.to_string(),
        scopes: scopes.iter().map(|s| s.to_string()).collect(),
        roles: roles.iter().map(|s| s.to_string()).collect(),
        ..ApiKeySettings::default()
    }
}

/// `[auth]`: JWTs signed with the secret, and three API keys: the
/// console's, a staff member's and one with neither scope nor role.
fn auth() -> AuthSettings {
    AuthSettings {
        jwt: Some(JwtSettings {
            hs256_secret_env: Some(JWT_SECRET.0.to_string()),
            ..JwtSettings::default()
        }),
        api_keys: vec![
            api_key(
                "x-console-key",
                CONSOLE_KEY,
                "operator",
                &["sezzlee:console"],
                &[],
            ),
            api_key("x-staff-key", STAFF_KEY, "sam", &[], &["staff"]),
            api_key("x-plain-key", PLAIN_KEY, "pat", &[], &[]),
        ],
        ..AuthSettings::default()
    }
}

async fn with_auth() -> TestGateway {
    init();
    TestGateway::with_files(&files(), |s| s.auth = Some(auth())).await
}

async fn without_auth() -> TestGateway {
    init();
    TestGateway::with_files(&files(), |_| {}).await
}

/// POSTs JSON to a console route with `headers` (no Origin unless given).
async fn post(gw: &TestGateway, path: &str, body: &Value, headers: &[(&str, &str)]) -> Reply {
    let mut request = gw
        .client
        .post(format!("{}{path}", gw.base))
        .header("content-type", "application/json")
        .body(body.to_string());
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let response = request.send().await.expect("request sent");
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    let text = response.text().await.unwrap_or_default();
    Reply {
        status,
        headers,
        text,
    }
}

const API_GETS: [&str; 7] = [
    "/console/api/overview",
    "/console/api/documents",
    "/console/api/documents?file=shop.yaml",
    "/console/api/tool?name=cancel_order",
    "/console/api/changes",
    "/console/api/traffic",
    "/console/api/tool?name=get_rota",
];

#[tokio::test]
async fn every_console_answer_carries_the_security_headers() {
    let gw = without_auth().await;
    for path in ["/console", "/console/console.js", "/console/console.css"]
        .into_iter()
        .chain(API_GETS)
    {
        let reply = gw.get(path, &[]).await;
        assert_eq!(reply.status, 200, "{path}: {}", reply.text);
        let csp = reply.header("content-security-policy").unwrap_or_default();
        for directive in [
            "default-src 'none'",
            "script-src 'self'",
            "frame-ancestors 'none'",
        ] {
            assert!(csp.contains(directive), "{path}: {csp}");
        }
        assert!(!csp.contains("unsafe-inline"), "{path}: {csp}");
        assert_eq!(
            reply.header("x-content-type-options"),
            Some("nosniff"),
            "{path}"
        );
        assert_eq!(reply.header("cache-control"), Some("no-store"), "{path}");
    }
    // A refusal too.
    let refused = post(
        &gw,
        "/console/api/search",
        &json!({}),
        &[("origin", "http://evil.example")],
    )
    .await;
    assert_eq!(refused.status, 403);
    assert!(refused.header("content-security-policy").is_some());
    // The page runs no inline script or style: the policy would refuse it.
    let page = gw.get("/console", &[]).await.text;
    assert!(
        !page.contains("<script>") && !page.contains("style="),
        "{page}"
    );
}

#[tokio::test]
async fn without_auth_a_name_that_is_not_loopback_is_refused() {
    let gw = without_auth().await;
    for host in ["localhost", "127.0.0.1:1", "[::1]"] {
        let reply = gw.get("/console/api/overview", &[("host", host)]).await;
        assert_eq!(reply.status, 200, "{host}: {}", reply.text);
    }
    // A site whose name was rebound to 127.0.0.1 names itself.
    for host in ["evil.example", "evil.example:8080", "127.0.0.1.nip.io"] {
        for path in ["/console", "/console/api/overview"] {
            let reply = gw.get(path, &[("host", host)]).await;
            assert_eq!(reply.status, 403, "{host} {path}: {}", reply.text);
            assert!(!reply.text.contains("shop.yaml"), "{}", reply.text);
        }
    }
}

/// This machine's address on a non-loopback interface, if it has one
/// (a UDP socket "connected" to a documentation address sends nothing).
fn non_loopback_address() -> Option<std::net::IpAddr> {
    let socket = std::net::UdpSocket::bind("0.0.0.0:0").ok()?;
    socket.connect("192.0.2.1:9").ok()?;
    let ip = socket.local_addr().ok()?.ip();
    (!ip.is_loopback() && !ip.is_unspecified()).then_some(ip)
}

/// A gateway on every interface, reached at `address`.
async fn on_all_interfaces(settings: Settings) -> (std::sync::Arc<Gateway>, u16) {
    let (gateway, _sources) = Gateway::load(settings).expect("catalogs readable");
    let listener = tokio::net::TcpListener::bind("0.0.0.0:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(sezzlee_gateway::server::serve(gateway.clone(), listener));
    (gateway, port)
}

#[tokio::test]
async fn without_auth_a_caller_off_the_loopback_interface_is_refused_unless_opened() {
    init();
    let Some(address) = non_loopback_address() else {
        crate::corpus::skipped(
            "without_auth_a_caller_off_the_loopback_interface_is_refused_unless_opened",
            "this machine has no non-loopback address",
        );
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    for (name, content) in files() {
        std::fs::write(dir.path().join(name), content).unwrap();
    }
    let client = reqwest::Client::new();
    for (allow_remote, expected) in [(false, 403), (true, 200)] {
        let mut settings = test_settings(dir.path());
        settings.console.allow_remote = allow_remote;
        let (_gateway, port) = on_all_interfaces(settings).await;
        for path in ["/console", "/console/api/overview"] {
            let remote = client
                .get(format!("http://{address}:{port}{path}"))
                .send()
                .await
                .unwrap();
            assert_eq!(
                remote.status().as_u16(),
                expected,
                "{path} from {address}, allow_remote {allow_remote}"
            );
            let body = remote.text().await.unwrap();
            if expected == 403 {
                assert!(
                    body.contains("loopback") && !body.contains("shop.yaml"),
                    "{body}"
                );
            }
            // The loopback interface is always let in.
            let local = client
                .get(format!("http://127.0.0.1:{port}{path}"))
                .send()
                .await
                .unwrap();
            assert_eq!(local.status().as_u16(), 200, "{path} from loopback");
        }
        // The MCP endpoint is not the console's business.
        let mcp = client
            .get(format!("http://{address}:{port}/healthz"))
            .send()
            .await
            .unwrap();
        assert_eq!(mcp.status().as_u16(), 200);
    }
}

#[tokio::test]
async fn with_auth_the_api_needs_the_console_or_the_admin_scope() {
    let gw = with_auth().await;
    let console = [("x-console-key", CONSOLE_KEY.1)];
    let admin_token = format!(
        "Bearer {}",
        hs256_token(JWT_SECRET.1, "root", "sezzlee:admin")
    );
    let admin = [("authorization", admin_token.as_str())];
    let other_token = format!("Bearer {}", hs256_token(JWT_SECRET.1, "al", "shop:admin"));
    for path in API_GETS {
        let none = gw.get(path, &[]).await;
        assert_eq!(none.status, 401, "{path}: {}", none.text);
        let challenge = none.header("www-authenticate").unwrap_or_default();
        assert!(
            challenge.starts_with("Bearer resource_metadata="),
            "{challenge}"
        );
        assert!(!none.text.contains("shop"), "{path} shows: {}", none.text);
        for lacking in [
            [("x-plain-key", PLAIN_KEY.1)],
            [("authorization", other_token.as_str())],
        ] {
            let reply = gw.get(path, &lacking).await;
            assert_eq!(reply.status, 403, "{path} {lacking:?}: {}", reply.text);
            assert!(reply.text.contains("sezzlee:console"), "{}", reply.text);
        }
        assert_eq!(gw.get(path, &console).await.status, 200, "{path}");
        assert_eq!(gw.get(path, &admin).await.status, 200, "{path}");
    }
    // The page and its script hold no data: they load without a credential
    // (a browser cannot put one on a navigation) and ask for one.
    for path in ["/console", "/console/console.js", "/console/console.css"] {
        assert_eq!(gw.get(path, &[]).await.status, 200, "{path}");
    }
    // A wrong key is no credential.
    let wrong = gw
        .get("/console/api/overview", &[("x-console-key", "guess")])
        .await;
    assert_eq!(wrong.status, 401, "{}", wrong.text);
    // With [auth], the console answers whatever the peer's address: the
    // credential decides.
    let far = gw
        .get(
            "/console/api/overview",
            &[("host", "gateway.example"), console[0]],
        )
        .await;
    assert_eq!(far.status, 200, "{}", far.text);
}

#[tokio::test]
async fn a_post_from_another_site_or_not_json_is_refused_and_does_nothing() {
    let gw = without_auth().await;
    let body = json!({"query": "orders"});
    let own = gw.base.clone();
    let ok = post(
        &gw,
        "/console/api/search",
        &body,
        &[("origin", &own), ("sec-fetch-site", "same-origin")],
    )
    .await;
    assert_eq!(ok.status, 200, "{}", ok.text);
    for headers in [
        vec![("origin", "http://evil.example")],
        vec![("origin", "null")],
        vec![("sec-fetch-site", "cross-site")],
        vec![("origin", own.as_str()), ("sec-fetch-site", "same-site")],
    ] {
        for path in [
            "/console/api/search",
            "/console/api/caller",
            "/console/api/listen",
        ] {
            let reply = post(&gw, path, &body, &headers).await;
            assert_eq!(reply.status, 403, "{path} {headers:?}: {}", reply.text);
            assert!(!reply.text.contains("listOrders"), "{}", reply.text);
        }
    }
    // A form's content type (what a page of another site can send without
    // asking) is refused too.
    let form = gw
        .client
        .post(format!("{}/console/api/search", gw.base))
        .header("content-type", "application/x-www-form-urlencoded")
        .body("query=orders")
        .send()
        .await
        .unwrap();
    assert_eq!(form.status().as_u16(), 403);
    // GETs that change nothing are not POSTs: no such route takes a GET.
    assert_eq!(gw.get("/console/api/search", &[]).await.status, 405);
}

/// The names of a page of search results.
fn result_names(page: &Value) -> Vec<String> {
    page["results"]
        .as_array()
        .map(|results| {
            results
                .iter()
                .filter_map(|r| r["name"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

#[tokio::test]
async fn the_playground_gives_search_tools_page_and_says_why() {
    let gw = TestGateway::shipped().await;
    for (query, limit) in [
        ("cancel an order that has not shipped", 5),
        ("invoice", 3),
        ("notes", 10),
        ("", 50),
        ("factura", 5),
    ] {
        let direct = gw.search(json!({"query": query, "limit": limit})).await;
        let reply = post(
            &gw,
            "/console/api/search",
            &json!({"query": query, "limit": limit}),
            &[],
        )
        .await;
        assert_eq!(reply.status, 200, "{}", reply.text);
        let console = reply.json();
        assert_eq!(console["page"], direct, "{query}");
        assert!(!result_names(&direct).is_empty(), "{query}");
        assert_eq!(
            console["explained"].as_array().map(Vec::len),
            Some(result_names(&direct).len())
        );
    }
    // Why: the first result's keywords and where they matched.
    let reply = post(
        &gw,
        "/console/api/search",
        &json!({"query": "cancel an order", "limit": 3}),
        &[],
    )
    .await;
    let answer = reply.json();
    let first = &answer["explained"][0];
    assert_eq!(first["name"], "cancel_order", "{answer}");
    assert_eq!(first["keywordRank"], 1);
    let cancel = first["keywords"]
        .as_array()
        .and_then(|k| k.iter().find(|k| k["keyword"] == "cancel"))
        .cloned()
        .unwrap_or_default();
    let fields: Vec<&str> = cancel["matches"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|m| m["fields"].as_array().into_iter().flatten())
        .filter_map(Value::as_str)
        .collect();
    assert!(
        fields.contains(&"name") && fields.contains(&"route"),
        "{cancel}"
    );
    // A tag filter is the tool's own, applied as search_tools applies it.
    let tagged = post(
        &gw,
        "/console/api/search",
        &json!({"query": "order", "tags": ["billing"]}),
        &[],
    )
    .await
    .json();
    let direct = gw
        .search(json!({"query": "order", "tags": ["billing"]}))
        .await;
    assert_eq!(tagged["page"], direct);
    assert_eq!(tagged["arguments"]["tags"], json!(["billing"]));
    // Bad input is refused precisely.
    let bad = post(&gw, "/console/api/search", &json!({"query": 5}), &[]).await;
    assert_eq!(bad.status, 400, "{}", bad.text);
    let wrong_type = post(
        &gw,
        "/console/api/search",
        &json!({"query": "x", "limit": "many"}),
        &[],
    )
    .await;
    assert_eq!(wrong_type.json()["isError"], true, "{}", wrong_type.text);
}

/// A caller: its label, its credential as pasted in the console, and
/// the same as request headers.
type Pasted<'a> = (&'a str, Value, Vec<(&'a str, &'a str)>);

/// What `search_tools` gives `headers`: every visible name and the total.
async fn seen_by(gw: &TestGateway, headers: &[(&str, &str)]) -> (Vec<String>, u64) {
    let body = modern_request(
        1,
        "tools/call",
        json!({"name": "search_tools", "arguments": {"query": "", "limit": 50}}),
    );
    let mut all: Vec<(&str, String)> = modern_headers(&body).into_iter().collect();
    all.extend(headers.iter().map(|(n, v)| (*n, v.to_string())));
    let refs: Vec<(&str, &str)> = all.iter().map(|(n, v)| (*n, v.as_str())).collect();
    let reply = gw.post_json(&body, &refs).await;
    let page = tool_reply(&reply.json()["result"]).payload;
    (
        result_names(&page),
        page["total"].as_u64().unwrap_or_default(),
    )
}

#[tokio::test]
async fn as_a_caller_shows_exactly_what_search_tools_shows_that_caller() {
    let gw = with_auth().await;
    let console = [("x-console-key", CONSOLE_KEY.1)];
    let admin_jwt = format!("Bearer {}", hs256_token(JWT_SECRET.1, "al", "shop:admin"));
    let callers: Vec<Pasted> = vec![
        ("anonymous", json!({}), vec![]),
        (
            "staff key",
            json!({"headers": {"x-staff-key": STAFF_KEY.1}}),
            vec![("x-staff-key", STAFF_KEY.1)],
        ),
        (
            "shop admin token",
            json!({"authorization": admin_jwt}),
            vec![("authorization", admin_jwt.as_str())],
        ),
        (
            "basic",
            json!({"authorization": "Basic dXNlcjpwdw=="}),
            vec![("authorization", "Basic dXNlcjpwdw==")],
        ),
        // An API key the gateway does not know: only the backend can judge it.
        (
            "partner key",
            json!({"headers": {"x-partner-key": "partner-123"}}),
            vec![("x-partner-key", "partner-123")],
        ),
    ];
    let mut distinct = std::collections::BTreeSet::new();
    for (label, pasted, headers) in &callers {
        let (names, total) = seen_by(&gw, headers).await;
        let view = post(&gw, "/console/api/caller", &json!({"as": pasted}), &console).await;
        assert_eq!(view.status, 200, "{label}: {}", view.text);
        let view = view.json();
        let mut visible: Vec<String> = ["visible", "authUncertain"]
            .iter()
            .flat_map(|k| view[*k].as_array().cloned().unwrap_or_default())
            .filter_map(|v| v.as_str().map(str::to_string))
            .collect();
        visible.sort();
        let mut expected = names.clone();
        expected.sort();
        assert_eq!(visible, expected, "{label}");
        let counts = &view["counts"];
        assert_eq!(
            counts["visible"].as_u64().unwrap() + counts["authUncertain"].as_u64().unwrap(),
            total,
            "{label}: {view}"
        );
        assert_eq!(
            counts["visible"].as_u64().unwrap()
                + counts["authUncertain"].as_u64().unwrap()
                + counts["hidden"].as_u64().unwrap(),
            gw.gateway.store.current().catalog.tools().len() as u64
        );
        // Searching as the caller is search_tools as the caller.
        let search = post(
            &gw,
            "/console/api/search",
            &json!({"query": "", "limit": 50, "as": pasted}),
            &console,
        )
        .await
        .json();
        assert_eq!(result_names(&search["page"]), names, "{label}");
        // Never the credential itself.
        for (_, value) in headers {
            assert!(
                !view.to_string().contains(value) && !search.to_string().contains(value),
                "{label}"
            );
        }
        distinct.insert(names);
    }
    assert!(
        distinct.len() >= 3,
        "the callers should see different tools: {distinct:?}"
    );
    // The staff key sees the rota; the anonymous caller does not.
    let staff = post(
        &gw,
        "/console/api/caller",
        &json!({"as": {"headers": {"x-staff-key": STAFF_KEY.1}}}),
        &console,
    )
    .await
    .json();
    assert!(staff["visible"].to_string().contains("get_rota"), "{staff}");
    assert_eq!(staff["caller"]["subject"], "sam");
    // A pasted header that cannot be one is refused precisely.
    let bad = post(
        &gw,
        "/console/api/caller",
        &json!({"as": {"headers": {"bad header": "x"}}}),
        &console,
    )
    .await;
    assert_eq!(bad.status, 400, "{}", bad.text);
}

#[tokio::test]
async fn no_secret_is_ever_shown() {
    let gw = without_auth().await;
    let mut seen = String::new();
    for path in API_GETS {
        let reply = gw.get(path, &[]).await;
        assert_eq!(reply.status, 200, "{path}");
        seen.push_str(&reply.text);
    }
    for secret in [
        STATIC_SECRET.1,
        CLIENT_SECRET.1,
        LITERAL_SECRET,
        JWT_SECRET.1,
    ] {
        assert!(!seen.contains(secret), "the console shows {secret}");
    }
    // The sidecar in effect is said, by names.
    let document = gw
        .get("/console/api/documents?file=shop.yaml", &[])
        .await
        .json();
    let sidecar = &document["sidecar"];
    assert_eq!(
        sidecar["staticHeaders"],
        json!(["X-Literal", "X-Static-Token"]),
        "{document}"
    );
    assert_eq!(sidecar["auth"]["mode"], "ClientCredentials");
}

#[tokio::test]
async fn a_reload_shows_in_the_history_the_changes_with_a_diff_and_the_listen_stream() {
    init();
    let dir = tempfile::tempdir().unwrap();
    for (name, content) in files() {
        std::fs::write(dir.path().join(name), content).unwrap();
    }
    let path = dir.path().join("shop.yaml");
    let settings = test_settings(dir.path());
    let (gw, reloader, _watcher) = TestGateway::start_reloading(settings, Some(dir)).await;
    let before = gw
        .tool_ok("load_tool", json!({"name": "cancel_order"}))
        .await;

    // The console's listen stream, opened before the edit.
    let listen = gw
        .client
        .post(format!("{}/console/api/listen", gw.base))
        .header("content-type", "application/json")
        .body(json!({"jsonrpc": "2.0", "id": 7, "method": "subscriptions/listen", "params": {"notifications": {"toolsListChanged": true}}}).to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(listen.status().as_u16(), 200);
    assert_eq!(
        listen
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok()),
        Some("text/event-stream")
    );
    let mut stream = listen.bytes_stream();

    std::fs::write(
        &path,
        SHOP.replace(
            "Cancels an order that has not shipped.",
            "Cancels an order before it ships; refunds it.",
        ),
    )
    .unwrap();
    assert_eq!(reloader.rescan().await, Outcome::Bumped(1));

    // The stream said so, with the generation.
    use futures_util::StreamExt;
    let mut events = String::new();
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(10);
    while !events.contains("notifications/tools/list_changed") {
        let chunk = tokio::time::timeout_at(deadline, stream.next())
            .await
            .expect("a list_changed within 10 s")
            .expect("the stream stays open")
            .unwrap();
        events.push_str(&String::from_utf8_lossy(&chunk));
    }
    assert!(
        events.contains("\"sezzlee/catalogGeneration\":1"),
        "{events}"
    );
    assert_eq!(
        gw.gateway.streams.count(),
        1,
        "counted with the listen streams"
    );

    // The history has the start and the reload.
    let overview = gw.get("/console/api/overview", &[]).await.json();
    let reloads = overview["reloads"].as_array().unwrap();
    assert_eq!(reloads[0]["result"], "new generation", "{overview}");
    assert_eq!(reloads[0]["generation"], 1);
    assert_eq!(reloads[0]["filesBuilt"], 1);
    assert_eq!(reloads.last().unwrap()["trigger"], "start");

    // The change, its versions and a readable diff.
    let changes = gw.get("/console/api/changes", &[]).await.json();
    let entry = &changes["changes"][0];
    assert_eq!(entry["generation"], 1, "{changes}");
    assert_eq!(entry["changed"][0]["name"], "cancel_order");
    assert_eq!(entry["changed"][0]["versionBefore"], before["version"]);
    assert_eq!(entry["diffs"], json!(["cancel_order"]));
    let diff = gw
        .get("/console/api/diff?generation=1&name=cancel_order", &[])
        .await
        .json();
    let text = diff["diff"].as_str().unwrap_or_default();
    assert!(
        text.contains("-  \"description\": \"Cancels an order that has not shipped."),
        "{text}"
    );
    assert!(
        text.contains("+  \"description\": \"Cancels an order before it ships; refunds it."),
        "{text}"
    );
    assert!(
        text.contains("-  \"version\"") && text.contains("+  \"version\""),
        "{text}"
    );
    // The tool page names the generation that changed it.
    let tool = gw
        .get("/console/api/tool?name=cancel_order", &[])
        .await
        .json();
    assert_eq!(tool["generations"][0]["generation"], 1, "{tool}");
    assert_eq!(tool["generations"][0]["kind"], "changed");
    assert_eq!(
        tool["definition"],
        gw.tool_ok("load_tool", json!({"name": "cancel_order"}))
            .await
    );
    // Asking for what is not kept says so.
    assert_eq!(
        gw.get("/console/api/diff?generation=9&name=cancel_order", &[])
            .await
            .status,
        404
    );
    assert_eq!(
        gw.get("/console/api/diff?generation=1", &[]).await.status,
        400
    );
    assert_eq!(gw.get("/console/api/tool?name=nope", &[]).await.status, 404);

    // A broken edit keeps the last good catalog and says it in the history.
    std::fs::write(&path, "openapi: [broken").unwrap();
    reloader.rescan().await;
    let overview = gw.get("/console/api/overview", &[]).await.json();
    let newest = &overview["reloads"][0];
    assert_eq!(newest["generation"], 1, "{newest}");
    assert!(
        newest["detail"]
            .as_str()
            .unwrap_or_default()
            .contains("refused"),
        "{newest}"
    );
}

#[tokio::test]
async fn the_console_can_be_turned_off() {
    init();
    let gw = TestGateway::with_files(&files(), |s| s.console.enabled = false).await;
    for path in ["/console", "/console/api/overview"] {
        assert_eq!(gw.get(path, &[]).await.status, 404, "{path}");
    }
}
