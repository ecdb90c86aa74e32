//! Backend calls leave a trace: the real binary logs one
//! access line per invoke_tool call at its default level, naming the tool,
//! method, host, status or failure kind, duration and whether the request
//! may have reached the backend, and never the query string or a
//! credential; a host name that does not exist is not retryable and the
//! message names it. The logs are plain text (no colour codes) when they
//! do not go to a terminal.

use crate::backend::Backend;
use crate::support::*;
use serde_json::json;
use std::time::{Duration, Instant};

/// A query parameter's value and a static credential that must never be logged.
const SECRET_QUERY: &str = "q-secret-31f9";
const SECRET_HEADER: &str = "h-secret-8c2e";

fn document(server: &str, operation: &str) -> String {
    json!({
        "openapi": "3.0.3",
        "info": {"title": operation, "version": "1"},
        "servers": [{"url": server}],
        "paths": {"/things/{id}": {"get": {"operationId": operation,
            "parameters": [
                {"name": "id", "in": "path", "required": true, "schema": {"type": "string"}},
                {"name": "token", "in": "query", "schema": {"type": "string"}}
            ],
            "responses": {"200": {"description": "ok"}}}}}
    })
    .to_string()
}

/// The first logged line holding every one of `needles`, waiting for it.
fn logged_line(logs: &std::sync::Mutex<String>, needles: &[&str]) -> String {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Some(line) = logs
            .lock()
            .unwrap()
            .lines()
            .find(|line| needles.iter().all(|n| line.contains(n)))
        {
            return line.to_string();
        }
        assert!(
            Instant::now() < deadline,
            "no log line with {needles:?}:\n{}",
            logs.lock().unwrap()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[tokio::test]
async fn every_backend_call_leaves_one_access_line_and_an_unknown_host_is_not_retryable() {
    let backend = Backend::start().await;
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("here.json"),
        document(&backend.base, "getHere"),
    )
    .unwrap();
    std::fs::write(
        dir.path().join("here.sezzlee.json"),
        json!({"backend": {"headers": {"x-api-key": SECRET_HEADER}}}).to_string(),
    )
    .unwrap();
    std::fs::write(
        dir.path().join("nowhere.json"),
        document("http://no-such-host.invalid:8080/api", "getNowhere"),
    )
    .unwrap();
    let mut child = serve_command(dir.path())
        .env_remove("RUST_LOG")
        .spawn()
        .expect("sezzlee serve starts");
    let (url, logs) = listening_url(&mut child);

    let answer = invoke_at(&url, "get_here", json!({"id": "a1", "token": SECRET_QUERY})).await;
    assert_eq!(answer["status"], 200, "{answer}");
    let line = logged_line(&logs, &["backend call", "get_here"]);
    for field in [
        "tool=get_here",
        "method=GET",
        "host=127.0.0.1",
        "status=200",
        "duration_ms=",
        "may_have_reached=true",
    ] {
        assert!(line.contains(field), "{field} missing: {line}");
    }
    assert!(line.contains("INFO"), "at the default level: {line}");

    let answer = invoke_at(&url, "get_nowhere", json!({"id": "a2"})).await;
    assert_eq!(answer["error"], "backend_unavailable", "{answer}");
    assert_eq!(answer["retryable"], false, "{answer}");
    assert_eq!(answer["mayHaveReachedBackend"], false, "{answer}");
    let message = answer["message"].as_str().unwrap_or_default();
    assert!(message.contains("'no-such-host.invalid'"), "{message}");
    let line = logged_line(&logs, &["backend call", "get_nowhere"]);
    for field in [
        "host=no-such-host.invalid",
        "outcome=unknown_host",
        "may_have_reached=false",
    ] {
        assert!(line.contains(field), "{field} missing: {line}");
    }

    let _ = child.kill();
    let _ = child.wait();
    let all = logs.lock().unwrap().clone();
    assert!(
        !all.contains(SECRET_QUERY),
        "the query string was logged:\n{all}"
    );
    assert!(
        !all.contains(SECRET_HEADER),
        "a credential was logged:\n{all}"
    );
    assert!(
        !all.contains('\x1b'),
        "colour codes in logs that are not a terminal:\n{all}"
    );
}
