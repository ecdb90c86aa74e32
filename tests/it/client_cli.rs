//! `sezzlee client` (the real binary) against a real gateway: exit codes
//! 0 / 1 / 2 for success / tool failure / protocol error, `--json` output
//! for scripts, `--header` identity, pin refusal with `--no-retry`, and
//! `listen` printing a change made while it runs.

use crate::support::*;
use serde_json::Value;
use std::process::Output;
use std::time::Duration;

/// Runs `sezzlee client URL ARGS…` off the async workers.
async fn client(url: &str, args: &[&str]) -> Output {
    let mut command = sezzlee_binary(None);
    command.arg("client").arg(url).args(args);
    tokio::task::spawn_blocking(move || command.output().expect("sezzlee runs"))
        .await
        .unwrap()
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn json(output: &Output) -> Value {
    serde_json::from_str(stdout(output).trim())
        .unwrap_or_else(|err| panic!("stdout is not one JSON value ({err}): {}", stdout(output)))
}

fn code(output: &Output) -> i32 {
    output.status.code().expect("exited")
}

async fn demo() -> (TestGateway, tempfile::TempDir) {
    let dir = copy_of_shipped_catalogs();
    let mut settings = test_settings(dir.path());
    settings.demo_backend = DemoBackend::On;
    (TestGateway::start_with(settings, None).await, dir)
}

#[tokio::test]
async fn exit_codes_separate_success_tool_failure_and_protocol_error() {
    let (gw, _dir) = demo().await;
    let url = gw.url.as_str();

    let found = client(url, &["discover"]).await;
    assert_eq!(code(&found), 0, "{found:?}");
    assert!(stdout(&found).contains("era: modern (protocol 2026-07-28)"));
    // Every version the gateway speaks, the initialize-era ones included
    // (server/discover lists only the per-request one).
    assert!(
        stdout(&found)
            .contains("supported versions: 2026-07-28, 2025-11-25, 2025-06-18, 2025-03-26"),
        "{}",
        stdout(&found)
    );

    let tools = client(url, &["--json", "tools"]).await;
    assert_eq!(code(&tools), 0);
    let names: Vec<String> = json(&tools)["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(names, ["search_tools", "load_tool", "invoke_tool"]);

    let search = client(url, &["--json", "search", "cancel order", "--limit", "2"]).await;
    assert_eq!(code(&search), 0);
    let search = json(&search);
    assert_eq!(search["results"].as_array().unwrap().len(), 2);
    assert_eq!(search["results"][0]["name"], "cancel_order");

    let tagged = client(url, &["--json", "search", "--tags", "facturación"]).await;
    assert_eq!(code(&tagged), 0);
    let tagged = json(&tagged);
    assert_eq!(tagged["total"], 1, "{tagged}");
    assert_eq!(tagged["results"][0]["name"], "get_invoice");
    // The administrators' tool is not there for this anonymous caller.
    let admin = json(&client(url, &["--json", "search", "--tags", "admin"]).await);
    assert_eq!(admin["total"], 0, "{admin}");

    let invoked = client(url, &["--json", "invoke", "get_order", r#"{"id": 1}"#]).await;
    assert_eq!(code(&invoked), 0, "{invoked:?}");
    let invoked = json(&invoked);
    assert_eq!(invoked["isError"], false);
    assert_eq!(invoked["payload"]["status"], 200);
    assert_eq!(invoked["payload"]["body"]["id"], 1);

    // Tool failures: exit 1, the envelope printed.
    let missing = client(url, &["--json", "load", "no_such_operation"]).await;
    assert_eq!(code(&missing), 1);
    assert_eq!(json(&missing)["error"], "unknown_tool");
    let refused = client(
        url,
        &[
            "invoke",
            "get_order",
            r#"{"id": 1}"#,
            "--pin",
            "0000000000000000",
            "--no-retry",
        ],
    )
    .await;
    assert_eq!(code(&refused), 1);
    assert!(
        stdout(&refused).contains("tool_changed"),
        "{}",
        stdout(&refused)
    );
    let backend = client(
        url,
        &[
            "call",
            "invoke_tool",
            r#"{"name": "get_order", "arguments": {"id": 424242}}"#,
        ],
    )
    .await;
    assert_eq!(code(&backend), 1);
    assert!(stdout(&backend).contains("backend_status"));

    // A stale pin with retry on: reloaded, retried, served, and said so.
    let retried = client(
        url,
        &[
            "--json",
            "invoke",
            "get_order",
            r#"{"id": 1}"#,
            "--pin",
            "0000000000000000",
        ],
    )
    .await;
    assert_eq!(code(&retried), 0);
    assert_eq!(json(&retried)["retriedFrom"], "0000000000000000");
    assert!(String::from_utf8_lossy(&retried.stderr).contains("tool_changed"));

    // Protocol errors: exit 2, described as JSON on stdout with --json.
    let unknown = client(url, &["--json", "call", "no_such_tool"]).await;
    assert_eq!(code(&unknown), 2);
    let error = json(&unknown)["error"].clone();
    assert_eq!(error["kind"], "rpc");
    assert_eq!(error["code"], -32602);
    let bad_arguments = client(url, &["call", "search_tools", "[1, 2]"]).await;
    assert_eq!(code(&bad_arguments), 2);
    let gone = client("http://127.0.0.1:9/mcp", &["--json", "tools"]).await;
    assert_eq!(code(&gone), 2);
    // Nothing listens there: no connection, nothing sent.
    assert_eq!(json(&gone)["error"]["kind"], "unreachable");
    let bad_header = client(url, &["--header", "no colon here", "tools"]).await;
    assert_eq!(code(&bad_header), 2);

    // The legacy era on request.
    let legacy = client(url, &["--json", "--era", "legacy", "discover"]).await;
    assert_eq!(code(&legacy), 0);
    assert_eq!(json(&legacy)["era"], "legacy");
    assert_eq!(json(&legacy)["protocolVersion"], "2025-11-25");
}

#[tokio::test]
async fn listen_prints_a_change_made_while_it_runs() {
    let dir = copy_of_shipped_catalogs();
    let settings = test_settings(dir.path());
    let (gw, reloader, _watcher) = TestGateway::start_reloading(settings, None).await;
    let url = gw.url.clone();
    let running =
        tokio::spawn(async move { client(&url, &["--json", "listen", "--count", "1"]).await });
    // Wait until the stream is open (the gateway counts it), then edit.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while gw.gateway.streams.count() == 0 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "listen never opened"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let path = dir.path().join("orders.yaml");
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(
        &path,
        text.replace("Fetches one order by id.", "Fetches an order."),
    )
    .unwrap();
    assert_eq!(
        reloader.rescan().await,
        sezzlee_gateway::reload::Outcome::Bumped(1)
    );
    let output = tokio::time::timeout(Duration::from_secs(10), running)
        .await
        .expect("listen --count 1 ends after one notification")
        .unwrap();
    assert_eq!(code(&output), 0, "{output:?}");
    let lines: Vec<Value> = stdout(&output)
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert_eq!(lines[0]["event"], "acknowledged");
    assert_eq!(lines[0]["honoured"]["toolsListChanged"], true);
    assert_eq!(lines[1]["method"], "notifications/tools/list_changed");
    assert_eq!(lines[1]["params"]["_meta"]["sezzlee/catalogGeneration"], 1);
}

/// A reader that stops early (`sezzlee client … | head -1`) ends the
/// command quietly, as a closed pipe ends `cat`: no panic, status 141.
#[tokio::test]
async fn a_closed_stdout_ends_the_command_without_a_panic() {
    let (gw, _dir) = demo().await;
    let mut command = sezzlee_binary(None);
    command
        .arg("client")
        .arg(gw.url.as_str())
        .args(["search", "orders"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let output = tokio::task::spawn_blocking(move || {
        let mut child = command.spawn().expect("sezzlee runs");
        // The reader goes away before a line is read.
        drop(child.stdout.take());
        child.wait_with_output().expect("sezzlee ends")
    })
    .await
    .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_eq!(output.status.code(), Some(141), "{output:?}");
}
