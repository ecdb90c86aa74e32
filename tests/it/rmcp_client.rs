//! Interop: the official Rust MCP SDK (`rmcp` 3.11, Streamable HTTP client)
//! against a real gateway serving the shipped catalogs.
//!
//! Each test connects in one of rmcp's lifecycles — the stateless
//! 2026-07-28 wire (`server/discover`, per-request `_meta`), its `Auto`
//! probe, and the legacy `initialize` handshake (offering 2025-11-25, and
//! rmcp's default offer of "2026-07-28" inside `initialize`, which the
//! gateway must negotiate down) — then lists the three tools, searches,
//! loads, and checks how errors come back.

use crate::support::TestGateway;
use rmcp::model::{
    CallToolRequestParams, CallToolResult, ClientConfig, ErrorCode, ProtocolVersion,
};
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::{ClientLifecycleMode, ClientServiceExt, ServiceError};
use serde_json::{Value, json};

type Client = RunningService<RoleClient, ClientConfig>;

/// Connects rmcp to `gateway` with `config` and `lifecycle`, and checks the
/// negotiated version.
async fn connect(
    gateway: &TestGateway,
    config: ClientConfig,
    lifecycle: ClientLifecycleMode,
    negotiated: ProtocolVersion,
) -> Client {
    let transport = StreamableHttpClientTransport::from_uri(gateway.url.as_str());
    let client = config
        .serve_with_lifecycle(transport, lifecycle)
        .await
        .unwrap_or_else(|err| panic!("rmcp could not connect: {err:?}"));
    let info = client
        .peer_info()
        .expect("the server's info after connecting");
    assert_eq!(info.protocol_version, negotiated);
    assert_eq!(
        info.server_info.as_ref().map(|i| i.name.as_str()),
        Some("sezzlee"),
        "{info:?}"
    );
    assert!(
        info.capabilities.tools.is_some(),
        "tools capability: {info:?}"
    );
    client
}

/// The JSON in a tool result's single text block, and whether `isError` is set.
fn payload(result: &CallToolResult) -> (Value, bool) {
    assert_eq!(result.content.len(), 1, "one content block: {result:?}");
    assert!(result.structured_content.is_none(), "{result:?}");
    let text = &result.content[0]
        .as_text()
        .unwrap_or_else(|| panic!("a text block: {result:?}"))
        .text;
    let value = serde_json::from_str(text)
        .unwrap_or_else(|err| panic!("the text block holds JSON ({err}): {text}"));
    (value, result.is_error == Some(true))
}

async fn call(client: &Client, name: &'static str, arguments: Value) -> (Value, bool) {
    let arguments = arguments.as_object().cloned().expect("arguments object");
    let result = client
        .call_tool(CallToolRequestParams::new(name).with_arguments(arguments))
        .await
        .unwrap_or_else(|err| panic!("tools/call {name}: {err:?}"));
    payload(&result)
}

async fn call_ok(client: &Client, name: &'static str, arguments: Value) -> Value {
    let (value, is_error) = call(client, name, arguments.clone()).await;
    assert!(!is_error, "{name}({arguments}) failed: {value}");
    value
}

/// The names of a search answer's cards (checking each card's shape).
fn card_names(search: &Value) -> Vec<&str> {
    let results = search["results"]
        .as_array()
        .unwrap_or_else(|| panic!("results: {search}"));
    results
        .iter()
        .map(|card| {
            assert!(card["description"].is_string(), "{card}");
            assert!(card["parameters"].is_string(), "{card}");
            card["name"].as_str().unwrap_or_else(|| panic!("{card}"))
        })
        .collect()
}

/// Everything checked in every lifecycle.
async fn exercise(client: Client) {
    let tools = client.list_all_tools().await.expect("tools/list");
    let mut names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    names.sort_unstable();
    assert_eq!(names, ["invoke_tool", "load_tool", "search_tools"]);
    for tool in &tools {
        assert_eq!(tool.input_schema.get("type"), Some(&json!("object")));
        assert!(tool.description.as_deref().is_some_and(|d| !d.is_empty()));
    }

    let found = call_ok(&client, "search_tools", json!({"query": "order"})).await;
    assert!(found["total"].as_u64().is_some_and(|n| n >= 1), "{found}");
    let top: Vec<&str> = card_names(&found).into_iter().take(5).collect();
    assert!(top.contains(&"create_order"), "top five: {top:?}");

    let notes = call_ok(&client, "search_tools", json!({"tags": ["Order Notes"]})).await;
    let mut names = card_names(&notes);
    names.sort_unstable();
    assert_eq!(names, ["add_order_note", "list_order_notes"], "{notes}");

    let loaded = call_ok(&client, "load_tool", json!({"name": "get_order"})).await;
    assert_eq!(loaded["name"], "get_order");
    assert_eq!(loaded["inputSchema"]["type"], "object", "{loaded}");
    assert_eq!(loaded["inputSchema"]["required"], json!(["id"]), "{loaded}");
    let version = loaded["version"].as_str().expect("version");
    assert!(
        version.len() == 16 && version.bytes().all(|b| b.is_ascii_hexdigit()),
        "version: {version}"
    );

    let (unknown, is_error) = call(&client, "load_tool", json!({"name": "nope"})).await;
    assert!(is_error, "{unknown}");
    assert_eq!(unknown["error"], "unknown_tool", "{unknown}");

    // A tool other than the three is a JSON-RPC error, never an isError result.
    match client
        .call_tool(CallToolRequestParams::new("not_a_tool"))
        .await
    {
        Err(ServiceError::McpError(error)) => {
            assert_eq!(error.code, ErrorCode::INVALID_PARAMS, "{error:?}")
        }
        other => panic!("not_a_tool: expected a -32602 JSON-RPC error, got {other:?}"),
    }

    client.cancel().await.expect("client closes");
}

fn modern() -> Vec<ProtocolVersion> {
    vec![ProtocolVersion::V_2026_07_28]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn discover_lifecycle() {
    let gateway = TestGateway::shipped().await;
    let lifecycle = ClientLifecycleMode::Discover {
        preferred_versions: modern(),
    };
    let client = connect(
        &gateway,
        ClientConfig::default(),
        lifecycle,
        ProtocolVersion::V_2026_07_28,
    )
    .await;
    exercise(client).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auto_lifecycle_settles_on_the_stateless_wire() {
    let gateway = TestGateway::shipped().await;
    let lifecycle = ClientLifecycleMode::Auto {
        preferred_versions: modern(),
        legacy_version: Some(ProtocolVersion::V_2025_11_25),
    };
    let client = connect(
        &gateway,
        ClientConfig::default(),
        lifecycle,
        ProtocolVersion::V_2026_07_28,
    )
    .await;
    exercise(client).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn initialize_lifecycle() {
    let gateway = TestGateway::shipped().await;
    let config = ClientConfig::default().with_protocol_version(ProtocolVersion::V_2025_11_25);
    let client = connect(
        &gateway,
        config,
        ClientLifecycleMode::Initialize,
        ProtocolVersion::V_2025_11_25,
    )
    .await;
    exercise(client).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn initialize_lifecycle_at_2025_06_18() {
    let gateway = TestGateway::shipped().await;
    let config = ClientConfig::default().with_protocol_version(ProtocolVersion::V_2025_06_18);
    let client = connect(
        &gateway,
        config,
        ClientLifecycleMode::Initialize,
        ProtocolVersion::V_2025_06_18,
    )
    .await;
    exercise(client).await;
}

/// rmcp's default `ClientConfig` offers its latest version, "2026-07-28",
/// inside `initialize` (with no `MCP-Protocol-Version` header): the gateway
/// must negotiate its newest handshake version instead of refusing or
/// echoing it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn default_initialize_is_negotiated_down() {
    let gateway = TestGateway::shipped().await;
    let client = connect(
        &gateway,
        ClientConfig::default(),
        ClientLifecycleMode::Initialize,
        ProtocolVersion::V_2025_11_25,
    )
    .await;
    exercise(client).await;
}
