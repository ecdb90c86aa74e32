//! The backend calls the gateway still sends through reqwest rather than
//! hyper's own client (`crates/gateway/src/backend/mod.rs`), each as it
//! was when reqwest made every call: those an egress proxy named in the
//! environment (`HTTP_PROXY`, less `NO_PROXY`) intercepts reach the proxy,
//! end to end with the real binary, while the ones `NO_PROXY` exempts go
//! straight to their backend; and a base URL with user information sends
//! it as Basic credentials.

use crate::backend::Backend;
use crate::support::*;
use serde_json::{Value, json};
use std::process::Stdio;

/// A document of one `GET {path}` operation on `server`.
fn document(title: &str, server: &str, path: &str, operation: &str) -> String {
    json!({
        "openapi": "3.0.3",
        "info": {"title": title, "version": "1"},
        "servers": [{"url": server}],
        "paths": {path: {"get": {"operationId": operation,
            "responses": {"200": {"description": "ok"}}}}}
    })
    .to_string()
}

#[tokio::test]
async fn an_egress_proxy_in_the_environment_carries_the_calls_it_intercepts() {
    let proxy = Backend::start().await;
    proxy.answer_every_path_with(&json!({"via": "proxy"}));
    let near = Backend::start().await;
    near.answer_every_path_with(&json!({"via": "direct"}));
    let dir = tempfile::tempdir().unwrap();
    let far_server = "http://backend.far.example:8080/api";
    std::fs::write(
        dir.path().join("far.json"),
        document("Far", far_server, "/things", "getThings"),
    )
    .unwrap();
    std::fs::write(
        dir.path().join("near.json"),
        document("Near", &near.base, "/near", "getNear"),
    )
    .unwrap();
    let mut command = sezzlee_binary(None);
    for name in ["http_proxy", "https_proxy", "all_proxy", "no_proxy"] {
        command
            .env_remove(name)
            .env_remove(name.to_ascii_uppercase());
    }
    let mut child = command
        .args(["serve", "--listen", "127.0.0.1:0", "--watch", "off"])
        .arg("--catalogs")
        .arg(dir.path())
        .env("HTTP_PROXY", &proxy.base)
        .env("NO_PROXY", "127.0.0.1")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("sezzlee serve starts");
    let (url, _logs) = listening_url(&mut child);

    // A host the proxy is for: the request reaches the proxy, addressed to
    // the backend (the name is never resolved here).
    let far = invoke_at(&url, "get_things", Value::Null).await;
    assert_eq!(far["status"], 200, "{far}");
    assert_eq!(far["body"], json!({"via": "proxy"}), "{far}");
    let through = proxy.last();
    assert_eq!(through.target, "/api/things");
    assert_eq!(through.header("host"), Some("backend.far.example:8080"));

    // A host NO_PROXY names: straight to the backend, the proxy untouched.
    let direct = invoke_at(&url, "get_near", Value::Null).await;
    assert_eq!(direct["body"], json!({"via": "direct"}), "{direct}");
    assert_eq!(near.count(), 1);
    assert_eq!(proxy.count(), 1);

    let _ = child.kill();
    let _ = child.wait();
}

#[tokio::test]
async fn user_information_in_a_base_url_is_sent_as_basic_credentials() {
    let backend = Backend::start().await;
    backend.answer_every_path_with(&json!({"ok": true}));
    let server = backend.base.replacen("http://", "http://user:s%40cret@", 1);
    let gateway = TestGateway::with_files(
        &[("near.json", document("Near", &server, "/near", "getNear"))],
        |_| {},
    )
    .await;
    let payload = gateway
        .tool_ok("invoke_tool", json!({"name": "get_near"}))
        .await;
    assert_eq!(payload["status"], 200, "{payload}");
    let sent = backend.last();
    assert_eq!(sent.target, "/near");
    // base64("user:s@cret")
    assert_eq!(sent.header("authorization"), Some("Basic dXNlcjpzQGNyZXQ="));
}
