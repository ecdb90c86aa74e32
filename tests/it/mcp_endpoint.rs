//! The MCP endpoint over real HTTP: both protocol eras on `POST /mcp`, the
//! transport rules (headers, Origin, size limit, 405s), and the contract of
//! search_tools and load_tool (docs/contract.md §3, §5;
//! docs/seeds/000_da61510cfeeb091b.txt).
//!
//! Every JSON-RPC body the gateway sends is validated against the official
//! schema of the revision it answers in: 2026-07-28 for modern requests,
//! the negotiated revision for legacy ones. Errors raised before the era
//! is known (403, 405, 413, parse errors, batches) carry no `id`; they are
//! validated against the revisions whose schema allows that (2026-07-28
//! and 2025-11-25).

use crate::support::*;
use serde_json::{Map, Value, json};
use std::collections::BTreeSet;

/// The revisions whose error responses may omit `id`.
const ID_OPTIONAL: [&str; 2] = [MODERN, "2025-11-25"];

fn assert_idless_error(reply: &Reply, status: u16, code: i64) {
    assert_eq!(reply.status, status, "{}", reply.text);
    assert_eq!(reply.header("content-type"), Some("application/json"));
    assert_eq!(reply.error_code(), code, "{}", reply.text);
    let body = reply.json();
    for version in ID_OPTIONAL {
        assert_error(version, &body);
    }
}

/// A modern protocol error: status, code, the request's id echoed, and the
/// body valid as that error of 2026-07-28.
fn assert_modern_error(reply: &Reply, status: u16, code: i64) -> Value {
    assert_eq!(reply.status, status, "{}", reply.text);
    assert_eq!(reply.header("content-type"), Some("application/json"));
    assert_eq!(reply.error_code(), code, "{}", reply.text);
    let body = reply.json();
    assert_eq!(body["id"], 1, "{body}");
    assert_error(MODERN, &body);
    body
}

fn set_header(headers: &mut Vec<(&'static str, String)>, name: &'static str, value: &str) {
    headers.retain(|(n, _)| *n != name);
    headers.push((name, value.to_string()));
}

fn remove_header(headers: &mut Vec<(&'static str, String)>, name: &str) {
    let before = headers.len();
    headers.retain(|(n, _)| *n != name);
    assert!(headers.len() < before, "{name} was not sent to begin with");
}

fn key_set(value: &Value) -> BTreeSet<String> {
    value
        .as_object()
        .unwrap_or_else(|| panic!("an object: {value}"))
        .keys()
        .cloned()
        .collect()
}

fn set(keys: &[&str]) -> BTreeSet<String> {
    keys.iter().map(|k| k.to_string()).collect()
}

/// Case and accent folding as the contract defines it (NFKD, combining
/// marks removed, lowercased), written here independently of the server.
fn fold(text: &str) -> String {
    use unicode_normalization::UnicodeNormalization;
    use unicode_normalization::char::is_combining_mark;
    text.nfkd()
        .filter(|c| !is_combining_mark(*c))
        .collect::<String>()
        .to_lowercase()
}

/// What a served catalog shows an anonymous caller (no `[auth]` here: every
/// tool but those under a named policy, which fail closed), read from the
/// catalog itself rather than through the tools under test: each tool's
/// name and folded tags, by name.
struct Facts {
    tools: Vec<(String, BTreeSet<String>)>,
}

impl Facts {
    fn of(gw: &TestGateway) -> Facts {
        let served = gw.gateway.store.current();
        let mut tools: Vec<(String, BTreeSet<String>)> = served
            .catalog
            .tools()
            .iter()
            .filter(|t| t.policy.as_ref().is_none_or(|policy| policy.public))
            .map(|t| (t.name.clone(), t.tags.iter().map(|t| fold(t)).collect()))
            .collect();
        tools.sort();
        Facts { tools }
    }

    fn count(&self) -> usize {
        self.tools.len()
    }

    fn names(&self) -> Vec<String> {
        self.tools.iter().map(|(name, _)| name.clone()).collect()
    }

    /// Names of the tools carrying every (folded) tag.
    fn tagged(&self, tags: &[&str]) -> BTreeSet<String> {
        self.tools
            .iter()
            .filter(|(_, have)| tags.iter().all(|t| have.contains(&fold(t))))
            .map(|(name, _)| name.clone())
            .collect()
    }

    /// The sorted, folded, de-duplicated tag vocabulary.
    fn vocabulary(&self) -> Vec<String> {
        let all: BTreeSet<&String> = self.tools.iter().flat_map(|(_, tags)| tags).collect();
        all.into_iter().cloned().collect()
    }
}

// ------------------------------------------------------------ catalogs

fn oas30(paths: Value) -> String {
    json!({
        "openapi": "3.0.3",
        "info": {"title": "test", "version": "1"},
        "servers": [{"url": "http://127.0.0.1:9/api"}],
        "paths": paths
    })
    .to_string()
}

fn ok_json(schema: Value) -> Value {
    json!({"200": {"description": "ok", "content": {"application/json": {"schema": schema}}}})
}

const LONG_STORY: &str = "Tells a long story about the mountains, the rivers, the forests and the valleys of a faraway country, where travellers walk for days between villages, markets and harbours, listening to songs and tales.";

/// Small, untagged tools for word forms, cards and definition shapes.
fn words_catalog() -> Vec<(&'static str, String)> {
    let text = json!({"type": "object"});
    let paths = json!({
        "/tickets/{ticketId}/memo": {"post": {
            "operationId": "zzTicketMemo", "summary": "Writes a note on the ticket.",
            "parameters": [{"name": "ticketId", "in": "path", "required": true, "schema": {"type": "integer"}}],
            "responses": ok_json(text.clone())
        }},
        "/pipeline": {"get": {
            "operationId": "zzPipelineReport",
            "summary": "Reports the Opportunities of the sales pipeline.",
            "responses": ok_json(text.clone())
        }},
        "/rules": {"get": {
            "operationId": "zzRulesReader", "summary": "Reads the insurance policy.",
            "responses": ok_json(text.clone())
        }},
        "/weather": {"get": {
            "operationId": "aaWeather", "summary": "Tells the weather.",
            "responses": ok_json(text.clone())
        }},
        "/charges": {"post": {
            "operationId": "abCharge", "summary": "Charges a card.",
            "requestBody": {"required": true, "content": {"application/json": {"schema": {
                "type": "object", "required": ["item"],
                "properties": {"item": {"type": "string"}, "quantity": {"type": "integer"}}
            }}}},
            "responses": ok_json(text.clone())
        }},
        "/story": {"get": {
            "operationId": "longStory", "summary": LONG_STORY,
            "parameters": [
                {"name": "ids", "in": "query", "schema": {"type": "array", "items": {"type": "integer"}}},
                {"name": "remark", "in": "query", "schema": {"type": "string", "nullable": true}}
            ],
            "responses": ok_json(text)
        }},
        "/things/{id}": {"delete": {
            "operationId": "deleteThing", "summary": "Deletes a thing.",
            "parameters": [{"name": "id", "in": "path", "required": true, "schema": {"type": "integer"}}],
            "responses": {"204": {"description": "gone"}}
        }}
    });
    vec![("words.json", oas30(paths))]
}

/// `operations` GET operations; tag `Tag NNN` (NNN < `tags`) is carried
/// by operation NNN modulo `operations`.
fn generated_catalog(operations: usize, tags: usize) -> Vec<(&'static str, String)> {
    let mut paths = Map::new();
    for i in 0..operations {
        let tags: Vec<String> = (0..tags)
            .filter(|j| j % operations == i)
            .map(|j| format!("Tag {j:03}"))
            .collect();
        paths.insert(
            format!("/things{i:03}"),
            json!({"get": {
                "operationId": format!("getThing{i:03}"),
                "summary": format!("Gets thing number {i}."),
                "tags": tags,
                "responses": ok_json(json!({"type": "object"}))
            }}),
        );
    }
    vec![("generated.json", oas30(Value::Object(paths)))]
}

// ------------------------------------------------------------ modern era

#[tokio::test]
async fn discover_describes_the_server() {
    let gw = TestGateway::shipped().await;
    let result = gw
        .modern_ok("server/discover", json!({}), "DiscoverResult")
        .await;
    let versions: Vec<&str> = result["supportedVersions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    // Only what the per-request wire serves: listing the initialize-era
    // versions here would invite clients to retry with them per request.
    assert_eq!(versions, [MODERN], "{versions:?}");
    assert!(result["capabilities"]["tools"].is_object(), "{result}");
    let instructions = result["instructions"].as_str().unwrap();
    for tool in ["search_tools", "load_tool", "invoke_tool"] {
        assert!(instructions.contains(tool), "{instructions}");
    }
    assert!(result["ttlMs"].as_u64().is_some(), "{result}");
    assert!(
        matches!(result["cacheScope"].as_str(), Some("public" | "private")),
        "{result}"
    );
    assert_eq!(
        result["_meta"]["io.modelcontextprotocol/serverInfo"]["version"],
        env!("CARGO_PKG_VERSION")
    );
}

fn seed_search_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "query": {
                "description": "Keywords matched by prefix against operation names, descriptions, declared search terms, routes, argument names and tag text; keywords rank results, they do not filter them. Empty lists everything. To require a whole tag, use tags.",
                "type": "string",
                "default": ""
            },
            "limit": {
                "description": "Maximum number of results, 1-50.",
                "type": "integer",
                "default": 20
            },
            "detail": {
                "description": "Shape of each result: \"card\" for the compact card, \"schema\" for the full definition load_tool would return. Any other value is card. A schema page is much larger; pair it with a small limit.",
                "type": "string",
                "enum": ["card", "schema"],
                "default": "card"
            },
            "tags": {
                "description": "Tags every result must carry, matched against the whole tag and insensitive to case and accents. Empty applies no filter; the answer's tags field lists what is available.",
                "type": "array",
                "items": { "type": "string" },
                "default": null
            }
        }
    })
}

/// Drops `$schema` decoration, which the contract leaves open.
fn undecorated(schema: &Value) -> Value {
    let mut schema = schema.clone();
    if let Value::Object(map) = &mut schema {
        map.remove("$schema");
    }
    schema
}

fn described(property: &Value) -> bool {
    property["description"]
        .as_str()
        .is_some_and(|d| d.len() > 10)
}

#[tokio::test]
async fn tools_list_is_exactly_the_three_tools() {
    let gw = TestGateway::shipped().await;
    let result = gw
        .modern_ok("tools/list", json!({}), "ListToolsResult")
        .await;
    assert!(result["ttlMs"].as_u64().is_some(), "{result}");
    assert!(
        matches!(result["cacheScope"].as_str(), Some("public" | "private")),
        "{result}"
    );
    assert!(result.get("nextCursor").is_none());
    let tools = result["tools"].as_array().unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["search_tools", "load_tool", "invoke_tool"]);
    for tool in tools {
        assert_eq!(tool["_meta"], json!({"sezzlee/catalogGeneration": 0}));
        assert!(tool.get("outputSchema").is_none(), "{tool}");
        assert!(described(tool), "{tool}");
    }

    assert_eq!(
        undecorated(&tools[0]["inputSchema"]),
        seed_search_schema(),
        "search_tools takes exactly the seed's arguments"
    );

    let load = undecorated(&tools[1]["inputSchema"]);
    assert_eq!(load["type"], "object");
    assert_eq!(key_set(&load["properties"]), set(&["name"]));
    assert_eq!(load["properties"]["name"]["type"], "string");
    assert!(described(&load["properties"]["name"]));
    assert_eq!(load["required"], json!(["name"]));

    let invoke = undecorated(&tools[2]["inputSchema"]);
    assert_eq!(invoke["type"], "object");
    assert_eq!(
        key_set(&invoke["properties"]),
        set(&["name", "arguments", "version"])
    );
    assert_eq!(invoke["properties"]["name"]["type"], "string");
    assert_eq!(invoke["properties"]["version"]["type"], "string");
    let arguments = &invoke["properties"]["arguments"];
    assert!(described(arguments), "{arguments}");
    assert!(
        arguments.get("type").is_none(),
        "arguments is published without a type: {arguments}"
    );
    assert_eq!(invoke["required"], json!(["name"]));
    for property in invoke["properties"].as_object().unwrap().values() {
        assert!(described(property), "{property}");
    }

    // Hosts auto-approve read-only tools: search and load say they are;
    // invoke says nothing, so the protocol's cautious defaults stand.
    let read_only = json!({"readOnlyHint": true, "openWorldHint": false});
    assert_eq!(tools[0]["annotations"], read_only);
    assert_eq!(tools[1]["annotations"], read_only);
    assert!(tools[2].get("annotations").is_none(), "{}", tools[2]);
}

#[tokio::test]
async fn each_tool_is_called_through_tools_call() {
    let gw = TestGateway::shipped().await;
    let search = gw.search(json!({"query": "order"})).await;
    assert_eq!(search["total"], Facts::of(&gw).count());
    assert!(Facts::of(&gw).count() >= 8);

    let loaded = gw.tool_ok("load_tool", json!({"name": "get_order"})).await;
    assert_eq!(loaded["name"], "get_order");

    // invoke_tool answers with the envelope: a name that does not exist
    // is unknown_tool, and nothing is dispatched.
    let invoked = gw
        .tool_err(
            "invoke_tool",
            json!({"name": "no_such_operation", "arguments": {}}),
        )
        .await;
    assert_eq!(invoked["error"], "unknown_tool", "{invoked}");
    assert_eq!(invoked["retryable"], false);
}

#[tokio::test]
async fn missing_or_mismatched_headers_are_header_mismatch() {
    let gw = TestGateway::shipped().await;
    let call = || json!({"name": "search_tools", "arguments": {}});

    // The well-formed request is served: each refusal below is the edit.
    let reply = gw.modern("tools/call", call()).await;
    assert_eq!(reply.status, 200, "{}", reply.text);
    assert_result(MODERN, "CallToolResult", &reply.json());

    for header in ["mcp-protocol-version", "mcp-method", "mcp-name"] {
        let reply = gw
            .modern_custom("tools/call", call(), |_, headers| {
                remove_header(headers, header)
            })
            .await;
        let body = assert_modern_error(&reply, 400, -32020);
        assert!(
            body["error"]["message"]
                .as_str()
                .unwrap()
                .to_lowercase()
                .contains(header),
            "the message names {header}: {body}"
        );
    }
    // Mcp-Method on a request that names no target.
    let reply = gw
        .modern_custom("tools/list", json!({}), |_, headers| {
            remove_header(headers, "mcp-method")
        })
        .await;
    assert_modern_error(&reply, 400, -32020);

    for (header, value) in [
        ("mcp-protocol-version", "2025-11-25"),
        ("mcp-method", "tools/list"),
        ("mcp-name", "load_tool"),
    ] {
        let reply = gw
            .modern_custom("tools/call", call(), |_, headers| {
                set_header(headers, header, value)
            })
            .await;
        assert_modern_error(&reply, 400, -32020);
    }
}

#[tokio::test]
async fn mcp_name_may_use_the_base64_sentinel() {
    let gw = TestGateway::shipped().await;
    let call = || json!({"name": "search_tools", "arguments": {"limit": 1}});

    let encoded = sentinel("search_tools");
    assert!(encoded.starts_with("=?base64?") && encoded.ends_with("?="));
    let reply = gw
        .modern_custom("tools/call", call(), |_, headers| {
            set_header(headers, "mcp-name", &encoded)
        })
        .await;
    assert_eq!(reply.status, 200, "{}", reply.text);
    let body = reply.json();
    assert_result(MODERN, "CallToolResult", &body);
    assert_eq!(
        tool_reply(&body["result"]).payload["total"],
        Facts::of(&gw).count()
    );

    for wrong in [sentinel("load_tool"), "=?base64?***?=".to_string()] {
        let reply = gw
            .modern_custom("tools/call", call(), |_, headers| {
                set_header(headers, "mcp-name", &wrong)
            })
            .await;
        assert_modern_error(&reply, 400, -32020);
    }
}

#[tokio::test]
async fn client_capabilities_are_required() {
    let gw = TestGateway::shipped().await;
    let reply = gw
        .modern_custom("tools/list", json!({}), |body, _| {
            let meta = body["params"]["_meta"].as_object_mut().unwrap();
            assert!(
                meta.remove("io.modelcontextprotocol/clientCapabilities")
                    .is_some()
            );
        })
        .await;
    let body = assert_modern_error(&reply, 400, -32602);
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("clientCapabilities"),
        "{body}"
    );
}

#[tokio::test]
async fn unsupported_versions_are_refused_with_the_supported_list() {
    let gw = TestGateway::shipped().await;
    let reply = gw
        .modern_custom("tools/list", json!({}), |body, headers| {
            body["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] =
                json!("1900-01-01");
            set_header(headers, "mcp-protocol-version", "1900-01-01");
        })
        .await;
    let body = assert_modern_error(&reply, 400, -32022);
    let data = &body["error"]["data"];
    assert_eq!(data["requested"], "1900-01-01");
    let supported: Vec<&str> = data["supported"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert!(supported.contains(&MODERN), "{supported:?}");
    assert!(!supported.contains(&"1900-01-01"));
}

#[tokio::test]
async fn unknown_and_removed_methods_are_not_found() {
    let gw = TestGateway::shipped().await;
    for method in [
        "foo/bar",
        "resources/list",
        "initialize",
        "ping",
        "logging/setLevel",
        "resources/subscribe",
        "resources/unsubscribe",
    ] {
        let params = if method == "initialize" {
            initialize_params(MODERN)
        } else {
            json!({})
        };
        let reply = gw.modern(method, params).await;
        let body = assert_modern_error(&reply, 404, -32601);
        assert!(
            body["error"]["message"].as_str().unwrap().contains(method),
            "{body}"
        );
    }
}

#[tokio::test]
async fn only_the_three_tools_can_be_called() {
    let gw = TestGateway::shipped().await;
    for era in [MODERN, "2025-06-18"] {
        for name in ["get_order", "nope", ""] {
            let params = json!({"name": name, "arguments": {}});
            let reply = if era == MODERN {
                gw.modern("tools/call", params).await
            } else {
                gw.legacy(era, "tools/call", params).await
            };
            assert!(reply.status == 200 || reply.status == 400, "{}", reply.text);
            assert_eq!(reply.error_code(), -32602, "{}", reply.text);
            let body = reply.json();
            assert_eq!(body["id"], 1);
            assert_error(era, &body);
        }
    }
}

// ------------------------------------------------------------ legacy era

#[tokio::test]
async fn initialize_negotiates_each_legacy_version() {
    let gw = TestGateway::shipped().await;
    for version in LEGACY {
        let result = gw
            .legacy_ok(
                version,
                "initialize",
                initialize_params(version),
                "InitializeResult",
            )
            .await;
        assert_eq!(result["protocolVersion"], version);
        assert_eq!(result["capabilities"]["tools"]["listChanged"], false);
        assert_eq!(result["serverInfo"]["name"], "sezzlee");
        let instructions = result["instructions"].as_str().unwrap();
        for tool in ["search_tools", "load_tool", "invoke_tool"] {
            assert!(instructions.contains(tool), "{instructions}");
        }
    }
    // A version the server does not speak is answered with its newest.
    let reply = gw
        .legacy("2025-03-26", "initialize", initialize_params("2024-01-01"))
        .await;
    assert_eq!(reply.status, 200, "{}", reply.text);
    let body = reply.json();
    assert_result("2025-11-25", "InitializeResult", &body);
    assert_eq!(body["result"]["protocolVersion"], "2025-11-25");

    // Without a version there is nothing to negotiate: invalid params.
    let reply = gw
        .legacy("2025-03-26", "initialize", json!({"capabilities": {}}))
        .await;
    assert_eq!(reply.error_code(), -32602, "{}", reply.text);
    let body = reply.json();
    assert_eq!(body["id"], 1);
    assert_error("2025-03-26", &body);
}

#[tokio::test]
async fn legacy_requests_stand_on_their_own() {
    // No initialize first: every request is served as it comes.
    let gw = TestGateway::shipped().await;
    for version in LEGACY {
        let result = gw
            .legacy_ok(version, "tools/list", json!({}), "ListToolsResult")
            .await;
        let listed: Vec<&str> = result["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap())
            .collect();
        assert_eq!(listed, ["search_tools", "load_tool", "invoke_tool"]);
        assert_eq!(
            undecorated(&result["tools"][0]["inputSchema"]),
            seed_search_schema()
        );
        assert_eq!(
            result["tools"][0]["_meta"],
            json!({"sezzlee/catalogGeneration": 0})
        );

        let ping = gw
            .legacy_ok(version, "ping", json!({}), "EmptyResult")
            .await;
        assert_eq!(ping, json!({}));

        let search = gw
            .call_tool(version, "search_tools", json!({"query": "invoice"}))
            .await;
        assert!(!search.is_error);
        assert_eq!(names(&search.payload)[0], "get_invoice");

        let missing = gw
            .call_tool(version, "load_tool", json!({"name": "nope"}))
            .await;
        assert!(missing.is_error);
        assert_eq!(missing.payload["error"], "unknown_tool");
    }
}

#[tokio::test]
async fn notifications_are_accepted_without_a_body() {
    let gw = TestGateway::shipped().await;
    for version in LEGACY {
        let notification = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        let reply = gw.post_json(&notification, &legacy_headers(version)).await;
        assert_eq!(reply.status, 202, "{}", reply.text);
        assert_eq!(reply.text, "");
        assert!(reply.header("mcp-session-id").is_none());
    }
}

#[tokio::test]
async fn sessions_are_neither_minted_nor_required() {
    let gw = TestGateway::shipped().await;
    let init = legacy_request(1, "initialize", initialize_params("2025-11-25"));
    let reply = gw.post_json(&init, &[]).await;
    assert_eq!(reply.status, 200);
    assert_result("2025-11-25", "InitializeResult", &reply.json());
    assert!(
        reply.header("mcp-session-id").is_none(),
        "{:?}",
        reply.headers
    );

    // A session id from some other server is ignored, not refused.
    let list = legacy_request(2, "tools/list", json!({}));
    let reply = gw
        .post_json(
            &list,
            &[
                ("mcp-protocol-version", "2025-11-25"),
                ("mcp-session-id", "a-session-we-never-issued"),
            ],
        )
        .await;
    assert_eq!(reply.status, 200, "{}", reply.text);
    assert!(reply.header("mcp-session-id").is_none());
    let body = reply.json();
    assert_eq!(body["id"], 2);
    assert_result("2025-11-25", "ListToolsResult", &body);

    // The same for a modern request.
    let reply = gw
        .modern_custom("tools/list", json!({}), |_, headers| {
            headers.push(("mcp-session-id", "abc".to_string()))
        })
        .await;
    assert_eq!(reply.status, 200, "{}", reply.text);
    assert_result(MODERN, "ListToolsResult", &reply.json());
    assert!(reply.header("mcp-session-id").is_none());
}

// ------------------------------------------------------------ both eras

#[tokio::test]
async fn get_and_delete_are_not_allowed() {
    let gw = TestGateway::shipped().await;
    for method in [reqwest::Method::GET, reqwest::Method::DELETE] {
        let reply = gw.request(method.clone()).await;
        assert_idless_error(&reply, 405, -32600);
        assert_eq!(reply.header("allow"), Some("POST"), "{method}");
    }
}

#[tokio::test]
async fn origins_are_checked() {
    let gw = TestGateway::shipped().await;
    let modern = modern_request(1, "tools/list", json!({}));
    let mut headers = modern_headers(&modern);
    let legacy = legacy_request(1, "tools/list", json!({}));
    for (origin, allowed) in [
        ("http://evil.example", false),
        ("http://localhost:3000", true),
        ("http://127.0.0.1", true),
    ] {
        set_header(&mut headers, "origin", origin);
        let refs: Vec<(&str, &str)> = headers.iter().map(|(n, v)| (*n, v.as_str())).collect();
        let replies = [
            (MODERN, gw.post_json(&modern, &refs).await),
            (
                "2025-11-25",
                gw.post_json(
                    &legacy,
                    &[("mcp-protocol-version", "2025-11-25"), ("origin", origin)],
                )
                .await,
            ),
        ];
        for (era, reply) in replies {
            if allowed {
                assert_eq!(reply.status, 200, "{origin} {era}: {}", reply.text);
                assert_result(era, "ListToolsResult", &reply.json());
            } else {
                assert_eq!(reply.status, 403, "{origin} {era}: {}", reply.text);
                assert_idless_error(&reply, 403, -32600);
            }
        }
    }
}

#[tokio::test]
async fn oversized_bodies_are_refused() {
    let gw = TestGateway::start(&shipped_catalogs(), |s| s.max_body_bytes = 2048).await;
    let big = "x".repeat(4096);
    let small = "x".repeat(16);
    for query in [&small, &big] {
        let fits = query.len() < 100;
        let params = json!({"name": "search_tools", "arguments": {"query": query}});
        let modern = gw.modern("tools/call", params.clone()).await;
        let legacy = gw.legacy("2025-06-18", "tools/call", params).await;
        for (era, reply) in [(MODERN, modern), ("2025-06-18", legacy)] {
            if fits {
                assert_eq!(reply.status, 200, "{}", reply.text);
                assert_result(era, "CallToolResult", &reply.json());
            } else {
                assert_idless_error(&reply, 413, -32600);
            }
        }
    }
}

#[tokio::test]
async fn malformed_json_and_batches_are_protocol_errors() {
    let gw = TestGateway::shipped().await;
    let modern = modern_request(1, "tools/list", json!({}));
    let headers = modern_headers(&modern);
    let modern_refs: Vec<(&str, &str)> = headers.iter().map(|(n, v)| (*n, v.as_str())).collect();
    let legacy_refs = [("mcp-protocol-version", "2025-06-18")];
    for refs in [&modern_refs[..], &legacy_refs[..]] {
        let mut refs = refs.to_vec();
        refs.push(("content-type", "application/json"));
        let reply = gw
            .post_raw(r#"{"jsonrpc": "2.0", "id": 1, "method": "#, &refs)
            .await;
        assert_idless_error(&reply, 400, -32700);
        // A lone surrogate escape (contract §3.4): malformed, at its place.
        let reply = gw
            .post_raw(
                r#"{"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"q": "\ud83d"}}"#,
                &refs,
            )
            .await;
        assert_idless_error(&reply, 400, -32700);
        let message = reply.json()["error"]["message"]
            .as_str()
            .unwrap_or("")
            .to_string();
        assert!(
            message.contains("escape") && message.contains("line 1 column"),
            "{message}"
        );
    }

    let modern_batch = json!([modern]);
    let reply = gw.post_json(&modern_batch, &modern_refs).await;
    assert_idless_error(&reply, 400, -32600);
    let legacy_batch = json!([
        legacy_request(1, "ping", json!({})),
        legacy_request(2, "tools/list", json!({}))
    ]);
    let reply = gw.post_json(&legacy_batch, &legacy_refs).await;
    assert_idless_error(&reply, 400, -32600);
}

#[tokio::test]
async fn tool_failures_and_protocol_errors_are_never_mixed() {
    let gw = TestGateway::shipped().await;
    for era in [MODERN, "2025-11-25", "2025-03-26"] {
        // A tool failure: a result with isError, no JSON-RPC error.
        let params = json!({"name": "load_tool", "arguments": {"name": "nope"}});
        let reply = if era == MODERN {
            gw.modern("tools/call", params).await
        } else {
            gw.legacy(era, "tools/call", params).await
        };
        assert_eq!(reply.status, 200);
        let body = reply.json();
        assert!(body.get("error").is_none(), "{body}");
        assert_result(era, "CallToolResult", &body);
        assert_eq!(body["result"]["isError"], true);
        let payload = tool_reply(&body["result"]).payload;
        assert_envelope(&payload);
        assert_eq!(payload["error"], "unknown_tool");

        // Success: isError absent.
        let ok = gw
            .call_tool(era, "load_tool", json!({"name": "get_order"}))
            .await;
        assert!(!ok.is_error);
        assert!(ok.payload.get("error").is_none(), "{}", ok.payload);

        // A protocol error: a JSON-RPC error, no result, no envelope.
        let params = json!({"name": "get_order", "arguments": {}});
        let reply = if era == MODERN {
            gw.modern("tools/call", params).await
        } else {
            gw.legacy(era, "tools/call", params).await
        };
        assert_eq!(reply.error_code(), -32602);
        let body = reply.json();
        assert_error(era, &body);
        assert!(body["error"].get("isError").is_none());
    }
}

// ------------------------------------------------------------ search_tools

#[tokio::test]
async fn search_defaults_to_twenty_cards() {
    let gw = TestGateway::with_files(&generated_catalog(60, 10), |_| {}).await;
    let search = gw.search(json!({})).await;
    assert_eq!(search["total"], 60);
    let results = search["results"].as_array().unwrap();
    assert_eq!(results.len(), 20);
    for result in results {
        assert_eq!(
            key_set(result),
            set(&["name", "description", "parameters"]),
            "{result}"
        );
    }
    // An empty query lists everything by name.
    let all = names(&gw.search(json!({"limit": 50})).await);
    let mut sorted = all.clone();
    sorted.sort();
    assert_eq!(all, sorted);
}

#[tokio::test]
async fn limit_is_clamped_and_truncated() {
    let gw = TestGateway::with_files(&generated_catalog(60, 10), |_| {}).await;
    for (limit, expected) in [
        (json!(0), 1),
        (json!(-3), 1),
        (json!(500), 50),
        (json!(50), 50),
        (json!(2.7), 2),
        (json!(7), 7),
        (json!(null), 20),
    ] {
        let search = gw.search(json!({"limit": limit})).await;
        assert_eq!(
            search["results"].as_array().unwrap().len(),
            expected,
            "limit {limit}"
        );
        assert_eq!(search["total"], 60, "limit never changes total");
    }
}

#[tokio::test]
async fn detail_other_than_exactly_schema_is_card() {
    let gw = TestGateway::shipped().await;
    for detail in [
        json!("Schema"),
        json!(""),
        json!(3),
        json!("card"),
        json!(null),
    ] {
        let search = gw.search(json!({"detail": detail, "limit": 3})).await;
        for result in search["results"].as_array().unwrap() {
            assert!(result.get("parameters").is_some(), "{detail}: {result}");
            assert!(result.get("inputSchema").is_none(), "{detail}: {result}");
        }
    }
    let search = gw.search(json!({"detail": "schema", "limit": 50})).await;
    let results = search["results"].as_array().unwrap();
    let count = Facts::of(&gw).count();
    assert!(count > 3 && count <= 50);
    assert_eq!(results.len(), count);
    assert_eq!(search["total"], count);
    for result in results {
        let name = result["name"].as_str().unwrap();
        let loaded = gw.tool_ok("load_tool", json!({"name": name})).await;
        assert_eq!(
            result, &loaded,
            "schema detail of {name} is its load_tool answer"
        );
        assert!(result.get("parameters").is_none());
    }
    // Detail changes nothing else: same order as the cards.
    let cards = gw.search(json!({"limit": 50})).await;
    assert_eq!(names(&cards), names(&search));
}

#[tokio::test]
async fn tags_filter_as_a_folded_whole_tag_conjunction() {
    let gw = TestGateway::shipped().await;
    let facts = Facts::of(&gw);
    let vocabulary = json!(facts.vocabulary());
    let by_tags = |tags: Value| {
        let gw = &gw;
        async move { gw.search(json!({"tags": tags, "limit": 50})).await }
    };
    let found = |search: &Value| names(search).into_iter().collect::<BTreeSet<_>>();

    let notes = by_tags(json!(["ORDER NOTES"])).await;
    assert_eq!(
        found(&notes),
        set(&["add_order_note", "list_order_notes"]),
        "{notes}"
    );
    assert_eq!(notes["total"], 2);
    // The vocabulary stays the visible catalog's, whatever the filter.
    assert_eq!(notes["tags"], vocabulary);

    let facturacion = by_tags(json!(["facturacion"])).await;
    assert_eq!(names(&facturacion), ["get_invoice"]);
    assert_eq!(facturacion["total"], 1);
    assert_eq!(facturacion["tags"], vocabulary);

    // Whole tags only: `Order` is neither `orders` nor `Order Notes`.
    for tag in ["Order", "notes", "Order Note", "nobody carries this"] {
        let none = by_tags(json!([tag])).await;
        assert_eq!(none["total"], 0, "{tag}");
        assert_eq!(none["results"], json!([]), "{tag}");
    }

    let both = by_tags(json!(["orders", "BILLING"])).await;
    assert_eq!(found(&both), set(&["cancel_order", "create_order"]));
    assert_eq!(both["total"], 2);

    let orders = by_tags(json!(["orders"])).await;
    let expected = facts.tagged(&["orders"]);
    assert!(expected.len() >= 5 && expected.len() < facts.count());
    assert_eq!(found(&orders), expected);
    assert_eq!(orders["total"], expected.len());

    for no_filter in [json!([]), json!(null)] {
        let all = by_tags(no_filter.clone()).await;
        assert_eq!(all["total"], facts.count(), "{no_filter}");
        assert_eq!(names(&all).len(), facts.count());
    }
}

#[tokio::test]
async fn keywords_rank_but_never_filter() {
    let gw = TestGateway::shipped().await;
    let facts = Facts::of(&gw);
    let orders = facts.tagged(&["orders"]).len();
    assert!(orders < facts.count());
    for query in ["invoice", "zzzz qqqq", "cancel order", ""] {
        let search = gw.search(json!({"query": query})).await;
        assert_eq!(search["total"], facts.count(), "{query}");
        assert_eq!(names(&search).len(), facts.count(), "{query}");
        let tagged = gw.search(json!({"query": query, "tags": ["orders"]})).await;
        assert_eq!(tagged["total"], orders, "{query}");
        assert_eq!(names(&tagged).len(), orders, "{query}");
    }
    // The one match comes first, the rest follow by name.
    let search = gw.search(json!({"query": "invoice"})).await;
    let mut expected = facts.names();
    expected.retain(|name| name != "get_invoice");
    expected.insert(0, "get_invoice".to_string());
    assert_eq!(names(&search), expected);
}

#[tokio::test]
async fn search_ranks_the_obvious_operation_first() {
    let gw = TestGateway::shipped().await;
    let first = |query: &'static str| {
        let gw = &gw;
        async move { names(&gw.search(json!({"query": query})).await) }
    };
    assert_eq!(first("cancel order").await[0], "cancel_order");
    let create = first("create order").await;
    assert!(
        create[..2].contains(&"create_order".to_string()),
        "{create:?}"
    );
    assert_eq!(first("invoice").await[0], "get_invoice");
    // Declared search terms count.
    assert_eq!(first("purchase").await[0], "create_order");
}

#[tokio::test]
async fn searches_rank_the_same_with_the_search_cache_on_and_off() {
    let cached = TestGateway::shipped().await;
    let uncached = TestGateway::start(&shipped_catalogs(), |s| s.search_cache_bytes = 0).await;
    // "order" reaches most of the demo tools: a common word, whose effect
    // on the ranking is computed once and added by every query using it.
    // An answer is kept the second time it is ranked: "list order" is
    // ranked twice, then answered from the cache.
    for query in [
        "list order",
        "cancel order",
        "order invoice",
        "list order",
        "list order",
    ] {
        for limit in [3, 20] {
            let arguments = json!({"query": query, "limit": limit});
            assert_eq!(
                cached.search(arguments.clone()).await,
                uncached.search(arguments).await,
                "{query}, limit {limit}"
            );
        }
    }
    let cache = &cached.status().await["searchCache"];
    assert_eq!(cache["answers"], 2, "the query asked again: {cache}");
    assert_eq!(cache["hits"], 2, "the query asked a third time: {cache}");
    assert_eq!(cache["misses"], 8, "{cache}");
    let off = &uncached.status().await["searchCache"];
    assert_eq!(
        (
            &off["answers"],
            &off["keywords"],
            &off["hits"],
            &off["misses"],
            &off["capacityBytes"]
        ),
        (&json!(0), &json!(0), &json!(0), &json!(0), &json!(0)),
        "search_cache_bytes = 0 turns the cache off: {off}"
    );
}

#[tokio::test]
async fn singular_and_plural_forms_match() {
    let gw = TestGateway::with_files(&words_catalog(), |_| {}).await;
    // Each target sorts last by name, so it is first only if it matched.
    for (query, target) in [
        ("notes", "zz_ticket_memo"),
        ("opportunity", "zz_pipeline_report"),
        ("policies", "zz_rules_reader"),
    ] {
        let found = names(&gw.search(json!({"query": query})).await);
        assert_eq!(found[0], target, "{query}: {found:?}");
        assert_eq!(found.len(), 7, "keywords never filter");
    }
    let shipped = TestGateway::shipped().await;
    let notes = names(&shipped.search(json!({"query": "notes"})).await);
    assert_eq!(
        notes[..2].iter().cloned().collect::<BTreeSet<_>>(),
        set(&["add_order_note", "list_order_notes"]),
        "{notes:?}"
    );
}

#[tokio::test]
async fn the_tag_vocabulary_is_omitted_without_tags() {
    let gw = TestGateway::with_files(&words_catalog(), |_| {}).await;
    let search = gw.search(json!({})).await;
    assert_eq!(search["total"], 7);
    assert!(search.get("tags").is_none(), "{search}");
}

#[tokio::test]
async fn the_tag_vocabulary_is_the_whole_catalog_up_to_two_hundred() {
    let shipped = TestGateway::shipped().await;
    let page = shipped.search(json!({"limit": 1})).await;
    let vocabulary = Facts::of(&shipped).vocabulary();
    for tag in ["billing", "facturacion", "order notes", "orders"] {
        assert!(vocabulary.contains(&tag.to_string()), "{vocabulary:?}");
    }
    assert_eq!(
        page["tags"],
        json!(vocabulary),
        "sorted, folded, de-duplicated, of the catalog and not the page"
    );

    let at_limit = TestGateway::with_files(&generated_catalog(60, 200), |_| {}).await;
    let search = at_limit.search(json!({"limit": 1})).await;
    let expected: Vec<String> = (0..200).map(|j| format!("tag {j:03}")).collect();
    assert_eq!(search["tags"], json!(expected));

    let over = TestGateway::with_files(&generated_catalog(60, 201), |_| {}).await;
    let search = over.search(json!({"limit": 1})).await;
    assert!(
        search.get("tags").is_none(),
        "over 200 tags the vocabulary is omitted, not shortened: {}",
        search["tags"]
    );
    assert_eq!(search["total"], 60);
    // The tags still filter.
    let tagged = over.search(json!({"tags": ["TAG 200"]})).await;
    assert_eq!(tagged["total"], 1);
}

#[tokio::test]
async fn cards_are_compact() {
    let gw = TestGateway::with_files(&words_catalog(), |_| {}).await;
    let search = gw.search(json!({"limit": 50})).await;
    let card = |name: &str| {
        search["results"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["name"] == name)
            .unwrap_or_else(|| panic!("no card {name}: {search}"))
            .clone()
    };

    let charge = card("ab_charge");
    assert_eq!(
        charge,
        json!({
            "name": "ab_charge",
            "description": "Charges a card.",
            "parameters": "item: string (required), quantity: integer"
        })
    );
    assert_eq!(
        card("long_story")["parameters"],
        "ids: integer[], remark: string|null"
    );
    assert_eq!(card("aa_weather")["parameters"], "");

    let cut = card("long_story")["description"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(LONG_STORY.chars().count() > 160);
    assert!(cut.chars().count() <= 160, "{cut}");
    let kept = cut
        .strip_suffix('…')
        .expect("a cut description ends with …");
    assert!(LONG_STORY.starts_with(kept), "{cut}");
    assert!(
        kept.chars().count() > 120,
        "cut no shorter than needed: {cut}"
    );
    let next = LONG_STORY[kept.len()..].chars().next();
    assert!(
        matches!(next, Some(' ' | ',')),
        "cut on a word boundary: {cut}"
    );
    // load_tool keeps the whole description.
    let loaded = gw.tool_ok("load_tool", json!({"name": "long_story"})).await;
    assert_eq!(loaded["description"], LONG_STORY);
}

#[tokio::test]
async fn answers_over_the_budget_are_refused() {
    let gw = TestGateway::start(&shipped_catalogs(), |s| s.response_budget = 700).await;
    let refused = gw
        .tool_err("search_tools", json!({"detail": "schema"}))
        .await;
    assert_eq!(refused["error"], "response_too_large", "{refused}");
    let message = refused["message"].as_str().unwrap();
    for word in ["detail", "query", "limit"] {
        assert!(
            message.contains(word),
            "the message names {word}: {message}"
        );
    }
    // The budget refuses what is over it, not everything.
    let cards = gw.search(json!({"limit": 2})).await;
    assert_eq!(cards["results"].as_array().unwrap().len(), 2);

    // At 700 characters every definition is published to fit: list_orders
    // (1,042 characters at the default depth) loads compacted.
    let compacted = gw
        .tool_ok("load_tool", json!({"name": "list_orders"}))
        .await;
    assert!(compacted.to_string().chars().count() <= 700, "{compacted}");
    assert!(
        compacted.to_string().contains("Not expanded here"),
        "{compacted}"
    );
    // At 500, create_order (644 characters at its smallest) cannot fit:
    // refused, while a smaller definition still loads.
    let tighter = TestGateway::start(&shipped_catalogs(), |s| s.response_budget = 500).await;
    let refused = tighter
        .tool_err("load_tool", json!({"name": "create_order"}))
        .await;
    assert_eq!(refused["error"], "response_too_large", "{refused}");
    assert_eq!(refused["size"], 644, "{refused}");
    let small = tighter
        .tool_ok("load_tool", json!({"name": "add_order_note"}))
        .await;
    assert_eq!(small["name"], "add_order_note");
}

#[tokio::test]
async fn arguments_of_the_wrong_kind_are_invalid_type() {
    let gw = TestGateway::shipped().await;
    for (tool, arguments) in [
        ("search_tools", json!({"query": 5})),
        ("search_tools", json!({"limit": "5"})),
        ("search_tools", json!({"tags": "x"})),
        ("search_tools", json!({"tags": [1]})),
        ("load_tool", json!({"name": 5})),
    ] {
        let refused = gw.tool_err(tool, arguments.clone()).await;
        assert_eq!(refused["error"], "invalid_type", "{arguments}: {refused}");
        assert_eq!(refused["retryable"], false);
        let argument = arguments.as_object().unwrap().keys().next().unwrap();
        assert!(
            refused["message"]
                .as_str()
                .unwrap()
                .contains(argument.as_str()),
            "the message names {argument}: {refused}"
        );
    }
}

// ------------------------------------------------------------ load_tool

fn assert_version(definition: &Value) {
    let version = definition["version"].as_str().unwrap();
    assert_eq!(version.len(), 16, "{version}");
    assert!(
        version
            .chars()
            .all(|c| c.is_ascii_digit() || ('a'..='f').contains(&c)),
        "{version}"
    );
}

#[tokio::test]
async fn load_tool_answers_the_definition() {
    let gw = TestGateway::shipped().await;
    let get_order = gw.tool_ok("load_tool", json!({"name": "get_order"})).await;
    assert_eq!(
        key_set(&get_order),
        set(&[
            "name",
            "description",
            "inputSchema",
            "outputSchema",
            "annotations",
            "version"
        ])
    );
    assert_eq!(get_order["name"], "get_order");
    assert_eq!(get_order["description"], "Fetches one order by id.");
    assert_eq!(
        get_order["annotations"],
        json!({"readOnlyHint": true, "idempotentHint": true})
    );
    assert_eq!(get_order["inputSchema"]["type"], "object");
    assert_eq!(get_order["inputSchema"]["required"], json!(["id"]));
    assert_eq!(get_order["inputSchema"]["additionalProperties"], false);
    assert_eq!(get_order["outputSchema"]["type"], "object");
    assert_version(&get_order);

    // POST: no hint applies, so no annotations.
    let create = gw
        .tool_ok("load_tool", json!({"name": "create_order"}))
        .await;
    assert_eq!(
        key_set(&create),
        set(&[
            "name",
            "description",
            "inputSchema",
            "outputSchema",
            "version"
        ])
    );
    assert_ne!(create["version"], get_order["version"]);

    // A 204: no outputSchema.
    let words = TestGateway::with_files(&words_catalog(), |_| {}).await;
    let delete = words
        .tool_ok("load_tool", json!({"name": "delete_thing"}))
        .await;
    assert_eq!(
        key_set(&delete),
        set(&[
            "name",
            "description",
            "inputSchema",
            "annotations",
            "version"
        ])
    );
    assert_eq!(
        delete["annotations"],
        json!({"destructiveHint": true, "idempotentHint": true})
    );
    assert_version(&delete);
}

#[tokio::test]
async fn load_tool_refuses_unknown_names_and_wrong_kinds() {
    let gw = TestGateway::shipped().await;
    for name in ["no_such_tool", "GET_ORDER", "search_tools"] {
        let refused = gw.tool_err("load_tool", json!({"name": name})).await;
        assert_eq!(refused["error"], "unknown_tool", "{name}: {refused}");
        assert_eq!(refused["retryable"], false);
        assert!(
            refused["message"].as_str().unwrap().contains(name),
            "{refused}"
        );
    }
    let refused = gw.tool_err("load_tool", json!({"name": 5})).await;
    assert_eq!(refused["error"], "invalid_type");
}
