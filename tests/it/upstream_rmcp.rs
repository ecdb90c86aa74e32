//! An upstream MCP server written with the official Rust SDK (rmcp, its
//! `#[tool]` macros and Streamable HTTP server, mounted on an axum router
//! on loopback): three tools with typed arguments, one of them answering
//! with structured content (rmcp's `Json<T>`, which also publishes an
//! outputSchema) and refusing arguments it cannot use. A real gateway
//! serves it through `rmcp.mcp.yaml`: every tool is found by a sentence
//! of its description, loaded with its schemas, and called with the right
//! answer (docs/contract.md §2.10), in the era `auto` settles on
//! (2026-07-28) and in the `initialize` era.

use crate::support::*;
use crate::upstream_hostile::{
    envelope, first_text, found, invoke, live_gateway, served, upstream_status, wait_for,
};
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{Json, ServerHandler, schemars, tool, tool_handler, tool_router};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
struct AddRequest {
    #[schemars(description = "the first number")]
    a: i64,
    #[schemars(description = "the second number")]
    b: i64,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
struct ForecastRequest {
    /// The city to forecast.
    city: String,
    /// How many days, from tomorrow (at most 7).
    days: u8,
}

#[derive(Debug, Serialize, schemars::JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
struct Forecast {
    city: String,
    days: Vec<DayForecast>,
}

#[derive(Debug, Serialize, schemars::JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
struct DayForecast {
    day: u8,
    summary: String,
    high_celsius: i32,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
struct ShoutRequest {
    /// The sentence to shout.
    text: String,
    /// How many times (once when absent).
    times: Option<u32>,
}

/// The rmcp server: three tools.
#[derive(Debug, Clone)]
struct Almanac {
    tool_router: ToolRouter<Self>,
}

#[tool_router]
impl Almanac {
    fn new() -> Almanac {
        Almanac {
            tool_router: Self::tool_router(),
        }
    }

    #[tool(description = "Adds two whole numbers together and returns their sum.")]
    fn add_numbers(&self, Parameters(AddRequest { a, b }): Parameters<AddRequest>) -> String {
        (a + b).to_string()
    }

    #[tool(description = "Forecasts the weather of a city for the coming days.")]
    async fn weather_forecast(
        &self,
        Parameters(request): Parameters<ForecastRequest>,
    ) -> Result<Json<Forecast>, String> {
        if request.days > 7 {
            return Err(format!(
                "the almanac forecasts at most 7 days, not {}",
                request.days
            ));
        }
        let days = (1..=request.days)
            .map(|day| DayForecast {
                day,
                summary: if day % 2 == 1 { "sunny" } else { "showers" }.to_string(),
                high_celsius: 20 + i32::from(day),
            })
            .collect();
        Ok(Json(Forecast {
            city: request.city,
            days,
        }))
    }

    #[tool(description = "Turns a quiet sentence into capital letters, repeated if asked.")]
    fn shout(&self, Parameters(request): Parameters<ShoutRequest>) -> String {
        let times = request.times.unwrap_or(1) as usize;
        vec![request.text.to_uppercase(); times].join(" ")
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for Almanac {}

/// Serves the almanac on a loopback port with `config`: its MCP endpoint
/// URL.
async fn start_almanac(config: StreamableHttpServerConfig) -> String {
    let service: StreamableHttpService<Almanac, LocalSessionManager> = StreamableHttpService::new(
        || Ok(Almanac::new()),
        Arc::new(LocalSessionManager::default()),
        config,
    );
    let router = axum::Router::new().nest_service("/mcp", service);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, router).await });
    format!("http://{address}/mcp")
}

/// Each tool and a sentence of its description to search with.
const TOOLS: [(&str, &str); 3] = [
    ("add_numbers", "add two whole numbers together"),
    ("weather_forecast", "weather forecast of a city"),
    ("shout", "turn a quiet sentence into capital letters"),
];

/// Serves the almanac (its server configured by `config`) through one
/// upstream file (`era` and `namespace` as given) and waits for its three
/// tools: the gateway and the file's `/status` entry.
async fn served_almanac(
    config: StreamableHttpServerConfig,
    era: &str,
    namespace: &str,
) -> (TestGateway, Value) {
    let url = start_almanac(config).await;
    let file =
        format!("url: {url}\nera: {era}\nnamespace: {namespace}\nbackend: {{timeoutMs: 5000}}\n");
    let (gw, _reloader, _dir) = live_gateway(&[("rmcp.mcp.yaml", file)]).await;
    let entry = wait_for(
        "the almanac listed (or failing for the third time)",
        Duration::from_secs(15),
        async || {
            let entry = upstream_status(&gw, "rmcp.mcp.yaml").await;
            let failing = entry["lastError"].is_string() && served(&gw).is_empty();
            let listed = entry["state"] == "up" && served(&gw).len() == 3;
            (listed || failing).then_some(entry)
        },
    )
    .await;
    eprintln!("rmcp.mcp.yaml ({era}): {entry}");
    assert_eq!(entry["state"], "up", "{entry}");
    assert_eq!(entry["tools"], 3, "{entry}");
    assert!(entry["lastError"].is_null(), "{entry}");
    (gw, entry)
}

/// Every tool found by a sentence of its description, loaded with the
/// schemas rmcp derived, and called with the right answer; the server's
/// own refusal passed on; arguments the schema refuses never sent.
async fn found_loaded_and_called(gw: &TestGateway, namespace: &str) {
    let name = |tool: &str| format!("{namespace}_{tool}");
    let mut all: Vec<String> = TOOLS.iter().map(|(tool, _)| name(tool)).collect();
    all.sort();
    assert_eq!(served(gw), all);
    for (tool, sentence) in TOOLS {
        let hits = found(gw, sentence).await;
        assert_eq!(hits.first(), Some(&name(tool)), "{sentence}: {hits:?}");
    }

    let add = gw
        .tool_ok("load_tool", json!({"name": name("add_numbers")}))
        .await;
    let input = &add["inputSchema"];
    assert_eq!(input["properties"]["a"]["type"], "integer", "{add}");
    assert_eq!(input["properties"]["b"]["type"], "integer", "{add}");
    let mut required: Vec<&str> = input["required"]
        .as_array()
        .unwrap_or_else(|| panic!("required: {add}"))
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    required.sort();
    assert_eq!(required, ["a", "b"], "{add}");
    assert_eq!(
        add["description"],
        "Adds two whole numbers together and returns their sum."
    );
    let forecast = gw
        .tool_ok("load_tool", json!({"name": name("weather_forecast")}))
        .await;
    let output = &forecast["outputSchema"];
    assert_eq!(output["type"], "object", "{forecast}");
    assert!(output["properties"]["days"].is_object(), "{forecast}");

    let sum = invoke(gw, &name("add_numbers"), json!({"a": 2, "b": 40})).await;
    assert_eq!(first_text(&sum), "42", "{sum}");
    assert!(sum.get("isError").is_none(), "{sum}");
    let loud = invoke(
        gw,
        &name("shout"),
        json!({"text": "quiet please", "times": 2}),
    )
    .await;
    assert_eq!(first_text(&loud), "QUIET PLEASE QUIET PLEASE", "{loud}");
    let weather = invoke(
        gw,
        &name("weather_forecast"),
        json!({"city": "Lisbon", "days": 2}),
    )
    .await;
    let expected = json!({"city": "Lisbon", "days": [
        {"day": 1, "summary": "sunny", "high_celsius": 21},
        {"day": 2, "summary": "showers", "high_celsius": 22}
    ]});
    assert_eq!(weather["structuredContent"], expected, "{weather}");
    let text: Value = serde_json::from_str(first_text(&weather)).expect("the text is JSON");
    assert_eq!(text, expected, "{weather}");

    // The server's own refusal is passed on as it came (not an envelope).
    let refused = invoke(
        gw,
        &name("weather_forecast"),
        json!({"city": "Lisbon", "days": 9}),
    )
    .await;
    assert_eq!(refused["isError"], true, "{refused}");
    assert!(envelope(&refused).is_none(), "{refused}");
    assert!(first_text(&refused).contains("at most 7 days"), "{refused}");
    // Arguments the schema refuses never reach the server.
    let wrong = invoke(gw, &name("add_numbers"), json!({"a": "two"})).await;
    let payload = envelope(&wrong).unwrap_or_else(|| panic!("an envelope: {wrong}"));
    assert_eq!(payload["error"], "invalid_arguments", "{payload}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_rmcp_server_s_tools_are_found_loaded_and_called() {
    let (gw, entry) =
        served_almanac(StreamableHttpServerConfig::default(), "auto", "almanac").await;
    // rmcp 3.11 speaks 2026-07-28: `auto` settles on it.
    assert_eq!(entry["protocolVersion"], MODERN, "{entry}");
    found_loaded_and_called(&gw, "almanac").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_rmcp_server_in_the_initialize_era_is_served() {
    let (gw, entry) = served_almanac(StreamableHttpServerConfig::default(), "legacy", "old").await;
    assert!(
        LEGACY.contains(&entry["protocolVersion"].as_str().unwrap_or_default()),
        "{entry}"
    );
    found_loaded_and_called(&gw, "old").await;
}

/// The same server without sessions (so without the priming event of a
/// stateful stream) and answering plain JSON: the `initialize` era works.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_rmcp_server_without_sessions_is_served_in_the_initialize_era() {
    let config = StreamableHttpServerConfig::default()
        .with_legacy_session_mode(false)
        .with_json_response(true);
    let (gw, entry) = served_almanac(config, "legacy", "plain").await;
    assert!(
        LEGACY.contains(&entry["protocolVersion"].as_str().unwrap_or_default()),
        "{entry}"
    );
    found_loaded_and_called(&gw, "plain").await;
}
