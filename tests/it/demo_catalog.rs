//! The shipped demo does what it says: `purge_order`
//! (`x-sezzlee-visibility: admins`, "ordinary callers never see this
//! operation") is invisible to a caller without the administrator
//! credential, with no `[auth]` configured as with one, because a named
//! policy fails closed; it carries `destructiveHint`; and an agent's
//! sentence asking to call off an order finds `cancel_order` first. The
//! README's first command (`sezzlee serve`, nothing else) is run as a
//! child process and serves the demo end to end.

use crate::support::*;
use serde_json::{Value, json};
use sezzlee_gateway::settings::{AuthSettings, JwtSettings};
use std::process::Stdio;
use std::sync::Once;

/// The variable `examples/auth-demo.toml` names, under this module's own
/// name, and its value.
const SECRET: (&str, &str) = (
    "SEZZLEE_DEMO_CATALOG_SECRET_7D40",
    "demo-catalog-hs256-secret-1f6b93c0a8e2d574",
);

/// What the README's agent asked when a script deleted an order.
const CANCEL_SENTENCE: &str = "I want to call off an order that I placed by mistake";

fn init() {
    static ONCE: Once = Once::new();
    // For the test gateways only (`support::set_test_variable`).
    ONCE.call_once(|| set_test_variable(SECRET.0, SECRET.1));
}

/// `examples/auth-demo.toml`'s configuration: an HS256 secret, nothing
/// else.
fn auth_demo() -> AuthSettings {
    let file = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/examples/auth-demo.toml"
    ))
    .unwrap();
    assert!(
        file.contains("hs256_secret_env = \"SEZZLEE_DEMO_SECRET\""),
        "{file}"
    );
    AuthSettings {
        jwt: Some(JwtSettings {
            hs256_secret_env: Some(SECRET.0.to_string()),
            ..JwtSettings::default()
        }),
        ..AuthSettings::default()
    }
}

/// A token as `sezzlee token --scope SCOPE` mints it.
fn token(scope: &str) -> String {
    hs256_token(SECRET.1, "demo-user", scope)
}

/// Headers a caller adds to its requests.
type Creds = [(&'static str, String)];

/// A tool call at 2026-07-28 with `headers`: its payload and `isError`.
async fn call(gateway: &TestGateway, headers: &Creds, tool: &str, args: Value) -> ToolReply {
    let reply = gateway
        .modern_custom(
            "tools/call",
            json!({"name": tool, "arguments": args}),
            |_, sent| sent.extend(headers.iter().cloned()),
        )
        .await;
    assert_eq!(reply.status, 200, "{tool}: {}", reply.text);
    tool_reply(&reply.json()["result"])
}

/// What a caller (`headers`) is shown of the demo and may do with
/// `purge_order`: asserts it is invisible everywhere, and that nothing was
/// deleted.
async fn assert_purge_order_invisible(gateway: &TestGateway, headers: &Creds, who: &str) {
    let everything = call(
        gateway,
        headers,
        "search_tools",
        json!({"query": "", "limit": 50}),
    )
    .await;
    let names = names(&everything.payload);
    assert_eq!(names.len(), 8, "{who}: {names:?}");
    assert!(
        !names.contains(&"purge_order".to_string()),
        "{who}: {names:?}"
    );
    assert_eq!(everything.payload["total"], 8, "{who}");
    assert!(
        !everything.payload["tags"]
            .as_array()
            .unwrap()
            .contains(&json!("admin")),
        "{who}: {}",
        everything.payload
    );
    let asked = call(
        gateway,
        headers,
        "search_tools",
        json!({"query": "permanently purge an order", "limit": 50}),
    )
    .await;
    assert!(
        !names_of(&asked).contains(&"purge_order".to_string()),
        "{who}: {}",
        asked.payload
    );
    let loaded = call(
        gateway,
        headers,
        "load_tool",
        json!({"name": "purge_order"}),
    )
    .await;
    assert!(loaded.is_error, "{who}: {}", loaded.payload);
    assert_eq!(loaded.payload["error"], "unknown_tool", "{who}");
    let invoked = call(
        gateway,
        headers,
        "invoke_tool",
        json!({"name": "purge_order", "arguments": {"id": 1}}),
    )
    .await;
    assert!(invoked.is_error, "{who}: {}", invoked.payload);
    assert_eq!(invoked.payload["error"], "unknown_tool", "{who}");
    // Order 1 is still there.
    let order = call(
        gateway,
        headers,
        "invoke_tool",
        json!({"name": "get_order", "arguments": {"id": 1}}),
    )
    .await;
    assert!(!order.is_error, "{who}: {}", order.payload);
    assert_eq!(order.payload["status"], 200, "{who}: {}", order.payload);
}

fn names_of(reply: &ToolReply) -> Vec<String> {
    names(&reply.payload)
}

/// The shipped catalog with the demo backend on, and `auth`.
async fn demo(auth: Option<AuthSettings>) -> TestGateway {
    TestGateway::start(&shipped_catalogs(), |settings| {
        settings.demo_backend = DemoBackend::Auto;
        settings.auth = auth;
    })
    .await
}

#[tokio::test]
async fn purge_order_is_invisible_without_the_administrator_credential() {
    init();
    // As the README's first command serves it: no [auth] at all.
    let open = demo(None).await;
    assert_purge_order_invisible(&open, &[], "anonymous, no [auth]").await;
    // A token means nothing to a gateway that cannot verify it.
    let unverifiable = [("authorization", format!("Bearer {}", token("orders:admin")))];
    assert_purge_order_invisible(&open, &unverifiable, "a token, no [auth]").await;

    // Under examples/auth-demo.toml: anonymous and ordinary callers still
    // do not see it; the administrator does.
    let configured = demo(Some(auth_demo())).await;
    assert_purge_order_invisible(&configured, &[], "anonymous, auth-demo").await;
    let reader = [("authorization", format!("Bearer {}", token("orders:read")))];
    assert_purge_order_invisible(&configured, &reader, "orders:read, auth-demo").await;
    let admin = [("authorization", format!("Bearer {}", token("orders:admin")))];
    let everything = call(
        &configured,
        &admin,
        "search_tools",
        json!({"query": "", "limit": 50}),
    )
    .await;
    assert!(
        names_of(&everything).contains(&"purge_order".to_string()),
        "{}",
        everything.payload
    );
    assert_eq!(everything.payload["total"], 9);
    let loaded = call(
        &configured,
        &admin,
        "load_tool",
        json!({"name": "purge_order"}),
    )
    .await;
    assert!(!loaded.is_error, "{}", loaded.payload);
    assert_eq!(
        loaded.payload["annotations"],
        json!({"destructiveHint": true, "idempotentHint": true}),
        "{}",
        loaded.payload
    );
    let purged = call(
        &configured,
        &admin,
        "invoke_tool",
        json!({"name": "purge_order", "arguments": {"id": 3},
               "version": loaded.payload["version"]}),
    )
    .await;
    assert!(!purged.is_error, "{}", purged.payload);
    assert_eq!(purged.payload["status"], 204, "{}", purged.payload);
}

#[tokio::test]
async fn the_cancel_sentence_finds_cancel_order_first() {
    init();
    let arguments = json!({"query": CANCEL_SENTENCE, "limit": 5});
    let open = demo(None).await;
    let anonymous = call(&open, &[], "search_tools", arguments.clone()).await;
    assert_eq!(
        names_of(&anonymous).first().map(String::as_str),
        Some("cancel_order"),
        "{}",
        anonymous.payload
    );
    // The administrator, who also sees purge_order, is sent to
    // cancel_order first too.
    let configured = demo(Some(auth_demo())).await;
    let admin = [("authorization", format!("Bearer {}", token("orders:admin")))];
    let seen = call(&configured, &admin, "search_tools", arguments).await;
    assert_eq!(
        names_of(&seen).first().map(String::as_str),
        Some("cancel_order"),
        "{}",
        seen.payload
    );
    assert!(names_of(&seen).contains(&"purge_order".to_string()));
}

/// `cargo run --release -- serve`, as the README's first command runs it
/// (here on an ephemeral port): the shipped catalog and the demo backend,
/// search → load → pinned invoke, and no purge_order.
#[tokio::test]
async fn the_readmes_first_command_serves_the_demo_end_to_end() {
    let mut served = Killed(
        sezzlee_binary(None)
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .args(["serve", "--listen", "127.0.0.1:0"])
            .env("NO_COLOR", "1")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("sezzlee serve starts"),
    );
    let (url, _logs) = listening_url(&mut served.0);
    let client = reqwest::Client::new();
    let call = |tool: &str, arguments: Value| {
        let body = modern_request(
            1,
            "tools/call",
            json!({"name": tool, "arguments": arguments}),
        );
        let mut request = client
            .post(&url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(body.to_string());
        for (name, value) in modern_headers(&body) {
            request = request.header(name, value);
        }
        async move {
            let reply: Value = request.send().await.unwrap().json().await.unwrap();
            tool_reply(&reply["result"])
        }
    };
    let found = call("search_tools", json!({"query": CANCEL_SENTENCE})).await;
    assert_eq!(names_of(&found)[0], "cancel_order", "{}", found.payload);
    let everything = call("search_tools", json!({"query": "", "limit": 50})).await;
    assert!(!names_of(&everything).contains(&"purge_order".to_string()));
    let loaded = call("load_tool", json!({"name": "cancel_order"})).await;
    let cancelled = call(
        "invoke_tool",
        json!({"name": "cancel_order", "arguments": {"id": 1}, "version": loaded.payload["version"]}),
    )
    .await;
    assert!(!cancelled.is_error, "{}", cancelled.payload);
    assert_eq!(cancelled.payload["body"]["status"], "cancelled");
    let purged = call(
        "invoke_tool",
        json!({"name": "purge_order", "arguments": {"id": 2}}),
    )
    .await;
    assert_eq!(purged.payload["error"], "unknown_tool");
}

/// A child process, killed (by its own handle) when dropped.
struct Killed(std::process::Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}
