//! Large backend answers shaped to fit the response budget, end to end:
//! the real gateway on a loopback port, the recording backend answering a
//! list too large for the budget, `invoke_tool` pinned to the loaded
//! version; the answer fits, lists its cuts, names the next call, and that
//! call, made exactly as the message says, reaches the backend with those
//! arguments.

use crate::backend::Backend;
use crate::support::*;
use serde_json::{Value, json};

const BUDGET: usize = 4_000;

fn document(base: &str) -> Value {
    let query = |name: &str| json!({"name": name, "in": "query", "schema": {"type": "integer"}});
    json!({
        "openapi": "3.0.3",
        "info": {"title": "Issues", "version": "1"},
        "servers": [{"url": base}],
        "paths": {
            "/repos/{owner}/issues": {"get": {
                "operationId": "listIssues",
                "parameters": [
                    {"name": "owner", "in": "path", "required": true, "schema": {"type": "string"}},
                    query("per_page"), query("page")
                ],
                "responses": {"200": {"description": "issues", "content": {"application/json": {"schema": {"type": "array", "items": {"type": "object"}}}}}}
            }}
        }
    })
}

/// The number after ` name=` in `message`.
fn argument_in(message: &str, name: &str) -> u64 {
    let after = message
        .split(&format!(" {name}="))
        .nth(1)
        .unwrap_or_else(|| panic!("no {name}= in {message}"));
    after
        .chars()
        .take_while(char::is_ascii_digit)
        .collect::<String>()
        .parse()
        .unwrap()
}

#[tokio::test]
async fn a_list_over_the_budget_is_shaped_and_its_next_page_named() {
    let backend = Backend::start().await;
    let issues: Vec<Value> = (0..300)
        .map(|i| json!({"id": i, "title": format!("Issue {i}"), "body": "b".repeat(120)}))
        .collect();
    backend.answer_every_path_with(&Value::Array(issues.clone()));
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("issues.json"),
        document(&backend.base).to_string(),
    )
    .unwrap();
    let gateway =
        TestGateway::start(dir.path(), |settings| settings.response_budget = BUDGET).await;
    let loaded = gateway
        .tool_ok("load_tool", json!({"name": "list_issues"}))
        .await;
    let version = loaded["version"].as_str().unwrap().to_string();
    let reply = gateway
        .tool(
            "invoke_tool",
            json!({"name": "list_issues", "version": version, "arguments": {"owner": "o", "per_page": 300}}),
        )
        .await;
    assert!(!reply.is_error, "{}", reply.payload);
    let payload = reply.payload;
    assert!(payload.to_string().chars().count() <= BUDGET, "{payload}");
    let kept = payload["body"].as_array().unwrap();
    assert!(!kept.is_empty() && kept.len() < 300, "{payload}");
    assert_eq!(kept[..], issues[..kept.len()], "whole items, in order");
    assert_eq!(
        payload["shaped"],
        json!([{"at": "", "kept": kept.len(), "of": 300}])
    );
    assert_eq!(payload["bytes"], Value::Array(issues).to_string().len());
    let message = payload["message"].as_str().unwrap();
    let per_page = argument_in(message, "per_page");
    let page = argument_in(message, "page");
    assert_eq!((per_page, page), (kept.len() as u64, 2), "{message}");

    // The agent's second call, exactly as the message says.
    let reply = gateway
        .tool(
            "invoke_tool",
            json!({"name": "list_issues", "version": version, "arguments": {"owner": "o", "per_page": per_page, "page": page}}),
        )
        .await;
    assert!(!reply.is_error, "{}", reply.payload);
    let sent = backend.last();
    assert_eq!(sent.path(), "/repos/o/issues");
    assert_eq!(
        sent.query(),
        Some(format!("per_page={per_page}&page={page}").as_str())
    );
}
