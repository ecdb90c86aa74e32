//! invoke_tool end to end (docs/contract.md §3.3, §3.4, §2.3, §2.7;
//! docs/seeds/003_aeabac61e8fac46c.txt): a real gateway on loopback calls a
//! real HTTP backend on loopback that records every request exactly as it
//! arrived on the wire (method, raw path and query, headers, body bytes).
//!
//! Every test writes its own catalogs folder (OpenAPI documents whose
//! sidecars point `backend.baseUrl` at its own recording backend), so the
//! backend's request count proves when nothing was sent.

use crate::backend::{Backend, HUGE, Recorded, png};
use crate::support::*;
use base64::Engine;
use serde_json::{Map, Value, json};
use std::path::Path;
use std::sync::Once;
use std::time::{Duration, Instant};
use tempfile::TempDir;

/// A static header value the tenant sidecar reads from the environment.
const KEY_VARIABLE: &str = "SEZZLEE_INVOKE_TOOL_TEST_KEY_5D21C8";
const KEY_VALUE: &str = "key-from-the-environment";
/// A variable no process sets: the misconfigured sidecar names it.
const UNSET_VARIABLE: &str = "SEZZLEE_INVOKE_TOOL_TEST_UNSET_9F3A07";
/// A variable whose value would split a request: a static header names it.
const SPLITTING_VARIABLE: &str = "SEZZLEE_INVOKE_TOOL_TEST_SPLIT_41B7E2";

/// The exact message of docs/seeds/003_aeabac61e8fac46c.txt.
fn tool_changed_message(name: &str) -> String {
    format!(
        "The tool '{name}' changed after it was loaded, so the call was refused before reaching the backend. Load it again with load_tool and retry with the new version."
    )
}

/// Sets this module's variables for the test gateways (never in the
/// process environment; `support::set_test_variable`), once.
fn init() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        set_test_variable(KEY_VARIABLE, KEY_VALUE);
        // UNSET_VARIABLE is never set.
        set_test_variable(SPLITTING_VARIABLE, "key\r\nx-admin: yes");
    });
}

// ------------------------------------------------------------ the catalogs

fn ok_json() -> Value {
    json!({"200": {"description": "ok", "content": {"application/json": {"schema": {"type": "object"}}}}})
}

fn get(operation_id: &str, parameters: Value) -> Value {
    json!({"get": {"operationId": operation_id, "parameters": parameters, "responses": ok_json()}})
}

fn path_param(name: &str, schema: Value) -> Value {
    json!({"name": name, "in": "path", "required": true, "schema": schema})
}

fn body_op(method: &str, operation_id: &str, media_type: &str, schema: Value) -> Value {
    json!({method: {
        "operationId": operation_id,
        "requestBody": {"required": true, "content": {media_type: {"schema": schema}}},
        "responses": ok_json()
    }})
}

/// The main document: every parameter location, style and body kind.
fn api_document() -> Value {
    json!({
        "openapi": "3.0.3",
        "info": {"title": "Recorded API", "version": "1"},
        "paths": {
            "/ping": get("ping", json!([])),
            "/things": get("listThings", json!([
                {"name": "status", "in": "query", "schema": {"type": "string", "enum": ["open", "closed"]}},
                {"name": "limit", "in": "query", "schema": {"type": "integer", "minimum": 1}}
            ])),
            "/things/{id}": get("getThing", json!([path_param("id", json!({"type": "string"}))])),
            "/files/{name}/meta": get("getFileMeta", json!([path_param("name", json!({"type": "string"}))])),
            "/search": get("searchThings", json!([
                {"name": "ids", "in": "query", "schema": {"type": "array", "items": {"type": "integer"}}},
                {"name": "tags", "in": "query", "explode": false, "schema": {"type": "array", "items": {"type": "string"}}},
                {"name": "filter", "in": "query", "style": "deepObject", "explode": true,
                 "schema": {"type": "object", "properties": {"status": {"type": "string"}, "owner": {"type": "string"}}}},
                {"name": "words", "in": "query", "style": "spaceDelimited", "explode": false, "schema": {"type": "array", "items": {"type": "string"}}},
                {"name": "pipes", "in": "query", "style": "pipeDelimited", "explode": false, "schema": {"type": "array", "items": {"type": "string"}}},
                {"name": "q", "in": "query", "schema": {"type": "string"}}
            ])),
            "/headers": get("sendHeaders", json!([
                {"name": "X-Request-Id", "in": "header", "schema": {"type": "string"}},
                {"name": "session", "in": "cookie", "schema": {"type": "string"}},
                {"name": "theme", "in": "cookie", "schema": {"type": "string"}}
            ])),
            "/items/{id}": {
                "parameters": [path_param("id", json!({"type": "string"}))],
                "put": {
                    "operationId": "putItem",
                    "requestBody": {"required": true, "content": {"application/json": {"schema": {
                        "type": "object",
                        "required": ["name"],
                        "properties": {
                            "id": {"type": "integer"},
                            "name": {"type": "string"},
                            "tags": {"type": "array", "items": {"type": "string"}}
                        }
                    }}}},
                    "responses": ok_json()
                }
            },
            "/numbers": body_op("post", "postNumbers", "application/json",
                json!({"type": "array", "items": {"type": "integer"}})),
            "/forms": body_op("post", "postForm", "application/x-www-form-urlencoded", json!({
                "type": "object",
                "properties": {"name": {"type": "string"}, "tags": {"type": "array", "items": {"type": "string"}}}
            })),
            "/uploads": body_op("post", "uploadFile", "multipart/form-data", json!({
                "type": "object",
                "required": ["file"],
                "properties": {"file": {"type": "string", "format": "binary"}, "caption": {"type": "string"}}
            })),
            "/notes": body_op("post", "postNote", "text/plain", json!({"type": "string"})),
            "/json": get("getJson", json!([])),
            "/text": get("getText", json!([])),
            "/created": {"post": {"operationId": "createThing", "responses": ok_json()}},
            "/gone": {"delete": {"operationId": "deleteThing", "responses": {"204": {"description": "gone"}}}},
            "/status/{code}": get("answerStatus", json!([path_param("code", json!({"type": "integer"}))])),
            "/redirect": get("getRedirect", json!([])),
            "/png": get("getPng", json!([])),
            "/big": get("getBig", json!([])),
            "/huge": get("getHuge", json!([]))
        }
    })
}

/// A one-operation document `GET /{path}` named `operation_id`.
fn single(operation_id: &str, path: &str) -> Value {
    json!({
        "openapi": "3.0.3",
        "info": {"title": operation_id, "version": "1"},
        "paths": {format!("/{path}"): get(operation_id, json!([]))}
    })
}

/// A TCP port on loopback that nothing listens on.
fn closed_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

/// Writes the catalogs folder for `backend`; `api_revision` is the main
/// sidecar's `revision` (absent when null).
fn write_catalogs(dir: &Path, backend: &str, api_revision: Value) {
    let write = |name: &str, value: &Value| {
        std::fs::write(dir.join(name), serde_json::to_string_pretty(value).unwrap()).unwrap()
    };
    write("api.json", &api_document());
    let mut sidecar = json!({
        "backend": {"baseUrl": backend},
        "tools": {"GET /things": {
            "name": "list_things",
            "variants": [{
                "name": "list_open_things",
                "description": "Lists only the things that are still open.",
                "fixed": {"status": "open"}
            }]
        }}
    });
    if !api_revision.is_null() {
        sidecar["revision"] = api_revision;
    }
    write("api.sezzlee.json", &sidecar);
    write("tenant.json", &single("tenantWhoami", "tenant/whoami"));
    write(
        "tenant.sezzlee.json",
        &json!({"backend": {
            "baseUrl": backend,
            "forwardHeaders": ["authorization", "x-tenant"],
            "headers": {"x-static": "fixed value", "x-api-key": format!("${{{KEY_VARIABLE}}}")}
        }}),
    );
    write(
        "misconfigured.json",
        &single("misconfigured", "misconfigured"),
    );
    write(
        "misconfigured.sezzlee.json",
        &json!({"backend": {"baseUrl": backend, "headers": {"x-api-key": format!("${{{UNSET_VARIABLE}}}")}}}),
    );
    write("splitting.json", &single("splitting", "splitting"));
    write(
        "splitting.sezzlee.json",
        &json!({"backend": {"baseUrl": backend, "headers": {"x-api-key": format!("${{{SPLITTING_VARIABLE}}}")}}}),
    );
    write("down.json", &single("downCall", "down"));
    write(
        "down.sezzlee.json",
        &json!({"backend": {"baseUrl": format!("http://127.0.0.1:{}", closed_port())}}),
    );
    write("slow.json", &single("slowCall", "slow"));
    write(
        "slow.sezzlee.json",
        &json!({"backend": {"baseUrl": backend, "timeoutMs": 200}}),
    );
}

/// A recording backend, a catalogs folder pointing at it, and a gateway.
struct Setup {
    backend: Backend,
    dir: TempDir,
    gateway: TestGateway,
}

impl Setup {
    async fn start() -> Setup {
        init();
        let backend = Backend::start().await;
        let dir = tempfile::tempdir().unwrap();
        write_catalogs(dir.path(), &backend.base, Value::Null);
        let gateway = TestGateway::start(dir.path(), |_| {}).await;
        let setup = Setup {
            backend,
            dir,
            gateway,
        };
        let catalog = setup.gateway.gateway.store.current();
        assert_eq!(
            catalog.catalog.errors(),
            0,
            "{:?}",
            catalog.catalog.diagnostics
        );
        drop(catalog);
        setup
    }

    /// invoke_tool with these arguments (name, arguments, version).
    async fn invoke(&self, arguments: Value) -> ToolReply {
        self.gateway.tool("invoke_tool", arguments).await
    }

    /// A successful invoke (panics on `isError`).
    async fn ok(&self, name: &str, arguments: Value) -> Value {
        let call = json!({"name": name, "arguments": arguments});
        self.gateway.tool_ok("invoke_tool", call).await
    }

    /// A failed invoke: the envelope, checked for shape.
    async fn err(&self, call: Value) -> Value {
        self.gateway.tool_err("invoke_tool", call).await
    }

    /// A failed invoke that must not reach the backend.
    async fn refused(&self, call: Value, code: &str) -> Value {
        let before = self.backend.count();
        let payload = self.err(call.clone()).await;
        assert_eq!(payload["error"], code, "{call} → {payload}");
        assert_eq!(
            self.backend.count(),
            before,
            "{call} was refused ({code}) but the backend received a request"
        );
        payload
    }

    /// A successful invoke and the one request it sent.
    async fn sent(&self, name: &str, arguments: Value) -> (Value, Recorded) {
        let before = self.backend.count();
        let payload = self.ok(name, arguments.clone()).await;
        assert_eq!(
            self.backend.count(),
            before + 1,
            "{name}({arguments}) sends exactly one request"
        );
        (payload, self.backend.last())
    }

    async fn version(&self, name: &str) -> String {
        version_of(&self.gateway, name).await
    }
}

async fn version_of(gateway: &TestGateway, name: &str) -> String {
    let loaded = gateway.tool_ok("load_tool", json!({"name": name})).await;
    assert!(
        loaded.get("revision").is_none(),
        "the revision is never shown: {loaded}"
    );
    let version = loaded["version"].as_str().expect("a version").to_string();
    assert_eq!(version.len(), 16, "{version}");
    assert!(version.chars().all(|c| c.is_ascii_hexdigit()), "{version}");
    version
}

/// A modern `tools/call` of invoke_tool with extra request headers.
async fn invoke_with_headers(
    gateway: &TestGateway,
    call: Value,
    extra: &[(&'static str, &str)],
) -> ToolReply {
    let params = json!({"name": "invoke_tool", "arguments": call});
    let reply = gateway
        .modern_custom("tools/call", params, |_, headers| {
            for (name, value) in extra {
                headers.push((name, value.to_string()));
            }
        })
        .await;
    assert_eq!(reply.status, 200, "{}", reply.text);
    let body = reply.json();
    assert_result(MODERN, "CallToolResult", &body);
    tool_reply(&body["result"])
}

fn keys(value: &Value) -> Vec<String> {
    let mut keys: Vec<String> = value
        .as_object()
        .unwrap_or_else(|| panic!("an object: {value}"))
        .keys()
        .cloned()
        .collect();
    keys.sort();
    keys
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

// ------------------------------------------------------------ 1. order of checks

#[tokio::test]
async fn unknown_names_come_first_whatever_version_and_arguments_say() {
    let s = Setup::start().await;
    for arguments in [
        json!(42),
        json!("not json"),
        json!({"bogus": true}),
        json!([1]),
    ] {
        let payload = s
            .refused(
                json!({"name": "no_such_tool", "arguments": arguments, "version": "0000000000000000"}),
                "unknown_tool",
            )
            .await;
        assert_eq!(payload["retryable"], false);
        assert!(
            payload["message"]
                .as_str()
                .unwrap()
                .contains("no_such_tool"),
            "{payload}"
        );
    }
    // A version that is not even a string does not hide an unknown name.
    s.refused(
        json!({"name": "no_such_tool", "version": 7}),
        "unknown_tool",
    )
    .await;
}

#[tokio::test]
async fn arguments_are_coerced_before_anything_else_is_checked() {
    let s = Setup::start().await;
    // null and absent are {}.
    let before = s.backend.count();
    let payload = s.invoke(json!({"name": "ping", "arguments": null})).await;
    assert!(!payload.is_error, "{}", payload.payload);
    assert_eq!(payload.payload["status"], 200);
    let payload = s.invoke(json!({"name": "ping"})).await;
    assert!(!payload.is_error, "{}", payload.payload);
    assert_eq!(s.backend.count(), before + 2);
    assert_eq!(s.backend.last().target, "/ping");

    // A string holding a JSON object is unwrapped and sent.
    let reply = s
        .invoke(json!({"name": "get_thing", "arguments": "{\"id\": \"from-a-string\"}"}))
        .await;
    assert!(!reply.is_error, "{}", reply.payload);
    assert_eq!(s.backend.last().target, "/things/from-a-string");

    // Anything else is invalid_type naming what arrived, not retryable.
    for (arguments, kind) in [
        (json!("not json at all"), "a string"),
        (json!("[1, 2]"), "a string"),
        (json!("42"), "a string"),
        (json!([{"id": "x"}]), "an array"),
        (json!(42), "a number"),
        (json!(true), "a boolean"),
    ] {
        let payload = s
            .refused(
                json!({"name": "get_thing", "arguments": arguments}),
                "invalid_type",
            )
            .await;
        assert_eq!(payload["retryable"], false, "{payload}");
        let message = payload["message"].as_str().unwrap();
        assert!(message.contains(kind), "{arguments}: {message}");
        assert!(message.contains("arguments"), "{message}");
    }

    // The coercion comes before the pin: a bad kind with a stale version
    // is invalid_type, not tool_changed.
    s.refused(
        json!({"name": "get_thing", "arguments": [1], "version": "0123456789abcdef"}),
        "invalid_type",
    )
    .await;
}

#[tokio::test]
async fn a_stale_version_is_refused_before_validation_and_before_the_backend() {
    let s = Setup::start().await;
    let version = s.version("get_thing").await;
    let stale = if version == "0123456789abcdef" {
        "fedcba9876543210"
    } else {
        "0123456789abcdef"
    };
    // Valid arguments, stale pin: tool_changed with the message of
    // docs/seeds/003_aeabac61e8fac46c.txt.
    let payload = s
        .refused(
            json!({"name": "get_thing", "arguments": {"id": "a"}, "version": stale}),
            "tool_changed",
        )
        .await;
    assert_eq!(payload["message"], tool_changed_message("get_thing"));
    assert_eq!(payload["retryable"], false);
    // Invalid arguments, stale pin: the pin is checked first.
    let payload = s
        .refused(
            json!({"name": "get_thing", "arguments": {"nope": 1}, "version": stale}),
            "tool_changed",
        )
        .await;
    assert_eq!(payload["message"], tool_changed_message("get_thing"));
    // A version that is not a string is a wrong kind, nothing sent.
    s.refused(
        json!({"name": "get_thing", "arguments": {"id": "a"}, "version": 1}),
        "invalid_type",
    )
    .await;

    // The right version goes through; so does no version.
    let before = s.backend.count();
    let reply = s
        .invoke(json!({"name": "get_thing", "arguments": {"id": "pinned"}, "version": version}))
        .await;
    assert!(!reply.is_error, "{}", reply.payload);
    assert_eq!(reply.payload["status"], 200);
    assert_eq!(s.backend.count(), before + 1);
    assert_eq!(s.backend.last().target, "/things/pinned");
}

#[tokio::test]
async fn invalid_arguments_list_every_problem_and_send_nothing() {
    let s = Setup::start().await;
    let payload = s
        .refused(
            json!({"name": "list_things", "arguments": {"limit": "ten", "status": "lost"}}),
            "invalid_arguments",
        )
        .await;
    assert_eq!(payload["retryable"], false);
    assert_eq!(payload["accepted"], json!(["status", "limit"]), "{payload}");
    let problems = payload["problems"].as_array().expect("problems");
    let pointers: Vec<&str> = problems
        .iter()
        .map(|p| {
            assert!(p["message"].as_str().is_some_and(|m| !m.is_empty()), "{p}");
            p["pointer"].as_str().expect("every problem has a pointer")
        })
        .collect();
    assert!(pointers.contains(&"/limit"), "{payload}");
    assert!(pointers.contains(&"/status"), "{payload}");
    assert!(
        payload["message"]
            .as_str()
            .unwrap()
            .contains("nothing was sent")
    );

    // Unknown argument names are refused (additionalProperties: false), so
    // an undocumented argument never reaches the backend.
    let payload = s
        .refused(
            json!({"name": "get_thing", "arguments": {"id": "a", "admin": true}}),
            "invalid_arguments",
        )
        .await;
    assert_eq!(payload["accepted"], json!(["id"]));
    // One problem per unknown argument, pointing at it.
    assert_eq!(
        payload["problems"],
        json!([{"pointer": "/admin", "message": "'admin' is not an argument of this tool"}]),
        "{payload}"
    );
    let payload = s
        .refused(
            json!({"name": "get_thing", "arguments": {"id": "a", "x/y": 1, "b~": 2}}),
            "invalid_arguments",
        )
        .await;
    let mut pointers: Vec<&str> = payload["problems"]
        .as_array()
        .expect("problems")
        .iter()
        .filter_map(|p| p["pointer"].as_str())
        .collect();
    pointers.sort_unstable();
    assert_eq!(pointers, ["/b~0", "/x~1y"], "{payload}");

    // A missing required argument.
    let payload = s
        .refused(
            json!({"name": "get_thing", "arguments": {}}),
            "invalid_arguments",
        )
        .await;
    assert!(payload.to_string().contains("id"), "{payload}");

    // The right version does not bypass validation either.
    let version = s.version("get_thing").await;
    s.refused(
        json!({"name": "get_thing", "arguments": {"id": 5}, "version": version}),
        "invalid_arguments",
    )
    .await;
}

// ------------------------------------------------------------ 2. byte-exact requests

#[tokio::test]
async fn path_parameters_are_one_encoded_segment_each() {
    let s = Setup::start().await;
    for (value, encoded) in [
        ("../admin", "..%2Fadmin"),
        ("a/b?c=d#e f", "a%2Fb%3Fc%3Dd%23e%20f"),
        ("café/ü", "caf%C3%A9%2F%C3%BC"),
        ("%2e%2e", "%252e%252e"),
        ("a,b=c;d", "a%2Cb%3Dc%3Bd"),
        ("v1.2", "v1.2"),
        ("plain-name_1.txt~", "plain-name_1.txt~"),
    ] {
        let (_, request) = s.sent("get_file_meta", json!({"name": value})).await;
        assert_eq!(request.method, "GET");
        assert_eq!(
            request.target,
            format!("/files/{encoded}/meta"),
            "path parameter {value:?}"
        );
    }
    for bad in ["..", ".", ""] {
        let payload = s
            .refused(
                json!({"name": "get_file_meta", "arguments": {"name": bad}}),
                "invalid_arguments",
            )
            .await;
        assert_eq!(payload["problems"][0]["pointer"], "/name", "{payload}");
    }
}

#[tokio::test]
async fn query_parameters_follow_their_style() {
    let s = Setup::start().await;
    let (_, request) = s
        .sent(
            "search_things",
            json!({
                "ids": [1, 2],
                "tags": ["a", "b"],
                "filter": {"status": "open"},
                "words": ["x", "y"],
                "pipes": ["p", "q"],
                "q": "a&b=c+d é/?"
            }),
        )
        .await;
    assert_eq!(
        request.target,
        "/search?ids=1&ids=2&tags=a,b&filter[status]=open&words=x%20y&pipes=p%7Cq&q=a%26b%3Dc%2Bd%20%C3%A9%2F%3F"
    );
    // Values inside arrays and objects are encoded too; absent parameters
    // are not sent at all.
    let (_, request) = s
        .sent(
            "search_things",
            json!({"tags": ["a,b", "c&d"], "filter": {"owner": "ana maría"}}),
        )
        .await;
    assert_eq!(
        request.target,
        "/search?tags=a%2Cb,c%26d&filter[owner]=ana%20mar%C3%ADa"
    );
    let (_, request) = s.sent("search_things", json!({})).await;
    assert_eq!(request.target, "/search");
    assert_eq!(request.query(), None);
}

#[tokio::test]
async fn header_and_cookie_parameters_arrive_and_control_characters_are_refused() {
    let s = Setup::start().await;
    let (_, request) = s
        .sent(
            "send_headers",
            json!({"X-Request-Id": "req-1", "session": "abc123", "theme": "dark mode"}),
        )
        .await;
    assert_eq!(request.target, "/headers");
    assert_eq!(request.header("x-request-id"), Some("req-1"));
    assert_eq!(
        request.all("cookie"),
        vec!["session=abc123; theme=dark%20mode"],
        "cookie parameters arrive in one Cookie header"
    );
    for bad in ["a\r\nSet-Cookie: x=1", "a\nb", "a\rb"] {
        let payload = s
            .refused(
                json!({"name": "send_headers", "arguments": {"X-Request-Id": bad}}),
                "invalid_arguments",
            )
            .await;
        assert_eq!(payload["problems"][0]["pointer"], "/X-Request-Id");
    }
}

#[tokio::test]
async fn json_bodies_carry_their_members_and_collisions_go_where_they_belong() {
    let s = Setup::start().await;
    let loaded = s
        .gateway
        .tool_ok("load_tool", json!({"name": "put_item"}))
        .await;
    assert_eq!(
        keys(&loaded["inputSchema"]["properties"]),
        ["body_id", "id", "name", "tags"]
    );
    let (_, request) = s
        .sent(
            "put_item",
            json!({"id": "path-id", "body_id": 7, "name": "widget", "tags": ["a"]}),
        )
        .await;
    assert_eq!(request.method, "PUT");
    assert_eq!(request.target, "/items/path-id");
    assert_eq!(request.header("content-type"), Some("application/json"));
    assert_eq!(
        request.json_body(),
        json!({"id": 7, "name": "widget", "tags": ["a"]})
    );
    // Members not given are not sent.
    let (_, request) = s.sent("put_item", json!({"id": "p", "name": "only"})).await;
    assert_eq!(request.json_body(), json!({"name": "only"}));

    // A body that is not an object is the `body` member, sent as is.
    let (_, request) = s.sent("post_numbers", json!({"body": [3, 1, 2]})).await;
    assert_eq!(request.method, "POST");
    assert_eq!(request.header("content-type"), Some("application/json"));
    assert_eq!(request.body, b"[3,1,2]");
}

#[tokio::test]
async fn form_multipart_and_text_bodies_are_encoded_per_media_type() {
    let s = Setup::start().await;
    let (_, request) = s
        .sent(
            "post_form",
            json!({"name": "a b&c=d+é", "tags": ["x", "y"]}),
        )
        .await;
    assert_eq!(
        request.header("content-type"),
        Some("application/x-www-form-urlencoded")
    );
    assert_eq!(
        String::from_utf8(request.body.clone()).unwrap(),
        "name=a%20b%26c%3Dd%2B%C3%A9&tags=x&tags=y"
    );

    let raw: Vec<u8> = vec![0x00, 0xFF, 0x89, b'P', b'N', b'G', b'\r', b'\n', 0x7F, 0x80];
    let encoded = base64::engine::general_purpose::STANDARD.encode(&raw);
    let (_, request) = s
        .sent(
            "upload_file",
            json!({"file": encoded, "caption": "a caption"}),
        )
        .await;
    let content_type = request.header("content-type").unwrap().to_string();
    let boundary = content_type
        .strip_prefix("multipart/form-data; boundary=")
        .unwrap_or_else(|| panic!("multipart content type: {content_type}"));
    let body = &request.body;
    assert!(contains(body, boundary.as_bytes()));
    assert!(contains(body, &raw), "the file arrives as raw bytes");
    assert!(
        !contains(body, encoded.as_bytes()),
        "the file does not arrive as base64"
    );
    let text = String::from_utf8_lossy(body);
    assert!(text.contains("name=\"file\"; filename="), "{text}");
    assert!(
        text.contains("name=\"caption\"\r\n\r\na caption\r\n"),
        "{text}"
    );
    // Base64 that does not decode is refused before sending.
    s.refused(
        json!({"name": "upload_file", "arguments": {"file": "not base64!"}}),
        "invalid_arguments",
    )
    .await;

    let (_, request) = s
        .sent("post_note", json!({"body": "line one\nline two é"}))
        .await;
    assert_eq!(request.header("content-type"), Some("text/plain"));
    assert_eq!(request.body, "line one\nline two é".as_bytes());
}

// ------------------------------------------------------------ 3. headers

#[tokio::test]
async fn only_configured_headers_reach_the_backend() {
    let s = Setup::start().await;
    let caller: [(&'static str, &str); 5] = [
        ("authorization", "Bearer caller-token"),
        ("x-tenant", "acme"),
        ("cookie", "session=caller-cookie"),
        ("x-secret", "do-not-forward"),
        ("x-forwarded-for", "10.0.0.1"),
    ];
    let never = [
        "cookie",
        "x-secret",
        "x-forwarded-for",
        "mcp-method",
        "mcp-name",
        "mcp-protocol-version",
        "mcp-session-id",
    ];

    // No forwardHeaders, no backend.auth: nothing of the caller's, not
    // even its Authorization (no token passthrough unless configured).
    let reply = invoke_with_headers(&s.gateway, json!({"name": "ping"}), &caller).await;
    assert!(!reply.is_error, "{}", reply.payload);
    let request = s.backend.last();
    assert_eq!(request.target, "/ping");
    assert_eq!(request.header("authorization"), None);
    assert_eq!(request.header("x-tenant"), None);
    for name in never {
        assert_eq!(request.header(name), None, "{name} reached the backend");
    }
    assert_eq!(request.header("x-api-key"), None);

    // forwardHeaders ["authorization", "x-tenant"] and static headers,
    // one read from the environment.
    let reply = invoke_with_headers(&s.gateway, json!({"name": "tenant_whoami"}), &caller).await;
    assert!(!reply.is_error, "{}", reply.payload);
    let request = s.backend.last();
    assert_eq!(request.target, "/tenant/whoami");
    assert_eq!(request.header("authorization"), Some("Bearer caller-token"));
    assert_eq!(request.header("x-tenant"), Some("acme"));
    assert_eq!(request.header("x-static"), Some("fixed value"));
    assert_eq!(request.header("x-api-key"), Some(KEY_VALUE));
    for name in never {
        assert_eq!(request.header(name), None, "{name} reached the backend");
    }

    // No credential from the caller: none is sent.
    s.ok("ping", json!({})).await;
    assert_eq!(s.backend.last().header("authorization"), None);
}

#[tokio::test]
async fn a_missing_environment_variable_is_an_internal_error_naming_it() {
    let s = Setup::start().await;
    let payload = s
        .refused(json!({"name": "misconfigured"}), "internal_error")
        .await;
    assert!(
        payload["message"]
            .as_str()
            .unwrap()
            .contains(UNSET_VARIABLE),
        "{payload}"
    );
    assert_eq!(payload["retryable"], false);
}

#[tokio::test]
async fn a_static_header_whose_variable_holds_a_line_break_is_never_sent() {
    let s = Setup::start().await;
    let before = s.backend.count();
    let payload = s
        .refused(json!({"name": "splitting"}), "internal_error")
        .await;
    let message = payload["message"].as_str().unwrap_or_default();
    assert!(message.contains("line break"), "{payload}");
    assert!(message.contains("x-api-key"), "{payload}");
    assert_eq!(payload["retryable"], false);
    assert_eq!(s.backend.count(), before, "nothing reached the backend");
}

// ------------------------------------------------------------ 4. results

#[tokio::test]
async fn success_results_keep_status_body_and_useful_headers() {
    let s = Setup::start().await;
    let payload = s.ok("get_json", json!({})).await;
    assert_eq!(keys(&payload), ["body", "headers", "status"], "{payload}");
    assert_eq!(payload["status"], 200);
    assert_eq!(payload["body"], json!({"greeting": "hello", "n": [1, 2]}));
    assert_eq!(
        payload["headers"],
        json!({
            "content-type": "application/json",
            "etag": "\"v1\"",
            "link": "<http://example.test/next>; rel=\"next\"",
            "retry-after": "5"
        })
    );

    let payload = s.ok("get_text", json!({})).await;
    assert_eq!(payload["status"], 200);
    assert_eq!(payload["body"], "hello, text");
    assert_eq!(
        payload["headers"],
        json!({"content-type": "text/plain; charset=utf-8"})
    );

    let (payload, request) = s.sent("create_thing", json!({})).await;
    assert_eq!(request.method, "POST");
    assert_eq!(payload["status"], 201);
    assert_eq!(payload["body"], json!({"id": 42}));
    assert_eq!(payload["headers"]["location"], "/things/42");

    let (payload, request) = s.sent("delete_thing", json!({})).await;
    assert_eq!(request.method, "DELETE");
    assert_eq!(payload["status"], 204);
    assert_eq!(payload["body"], Value::Null);
    assert!(payload.get("omitted").is_none(), "{payload}");
}

#[tokio::test]
async fn backend_errors_are_reported_with_their_status_and_retryability() {
    let s = Setup::start().await;
    for (code, retryable) in [
        (400, false),
        (404, false),
        (409, false),
        (408, true),
        (429, true),
        (502, true),
        (503, true),
        (504, true),
        (500, false),
    ] {
        let before = s.backend.count();
        let payload = s
            .err(json!({"name": "answer_status", "arguments": {"code": code}}))
            .await;
        assert_eq!(s.backend.count(), before + 1);
        assert_eq!(s.backend.last().target, format!("/status/{code}"));
        assert_eq!(payload["error"], "backend_status", "{payload}");
        assert_eq!(payload["status"], code, "{payload}");
        assert_eq!(payload["retryable"], retryable, "{code}: {payload}");
        assert_eq!(
            payload["body"],
            json!({"code": code, "detail": "as asked"}),
            "{payload}"
        );
        assert!(
            payload["message"]
                .as_str()
                .unwrap()
                .contains(&code.to_string()),
            "{payload}"
        );
    }
}

#[tokio::test]
async fn redirects_are_reported_not_followed() {
    let s = Setup::start().await;
    let payload = s.err(json!({"name": "get_redirect"})).await;
    assert_eq!(payload["error"], "backend_status", "{payload}");
    assert_eq!(payload["status"], 302);
    assert_eq!(
        payload["headers"]["location"],
        format!("{}/redirect-target", s.backend.base)
    );
    assert_eq!(s.backend.hits("/redirect"), 1);
    assert_eq!(
        s.backend.hits("/redirect-target"),
        0,
        "the redirect was followed"
    );
}

#[tokio::test]
async fn binary_and_unread_bodies_are_omitted_and_large_ones_shaped() {
    let s = Setup::start().await;
    let payload = s.ok("get_png", json!({})).await;
    assert_eq!(payload["status"], 200);
    assert_eq!(payload["body"], Value::Null);
    assert_eq!(
        payload["omitted"],
        json!({"reason": "binary", "bytes": png().len()})
    );
    assert_eq!(payload["headers"]["content-type"], "image/png");
    assert_eq!(s.backend.hits("/png"), 1);

    // A body over what the gateway reads at all is left out unread, with
    // its declared size and the same reason.
    let payload = s.ok("get_huge", json!({})).await;
    assert_eq!(payload["status"], 200);
    assert_eq!(payload["body"], Value::Null);
    assert_eq!(
        payload["omitted"],
        json!({"reason": "over_budget", "bytes": HUGE})
    );

    // The same backend behind a gateway with a small response budget.
    let small = TestGateway::start(s.dir.path(), |settings| settings.response_budget = 2_000).await;
    // A body over the budget (but read) is shaped to fit: its long
    // string cut, the cut listed, the original size given.
    let payload = small
        .tool_ok("invoke_tool", json!({"name": "get_big"}))
        .await;
    assert_eq!(payload["status"], 200);
    let kept = payload["body"]["blob"].as_str().unwrap();
    assert!(
        !kept.is_empty() && "x".repeat(10_000).starts_with(kept),
        "{payload}"
    );
    assert_eq!(
        payload["shaped"],
        json!([{"at": "/blob", "chars": kept.len(), "of": 10_000}])
    );
    assert_eq!(payload["bytes"], 10_011);
    assert!(
        payload["message"].as_str().unwrap().contains("shaped"),
        "{payload}"
    );
    assert!(payload.to_string().len() <= 2_000);
    assert_eq!(s.backend.hits("/big"), 1, "the call still ran");
    // The cap on what is read at all is a setting (max_response_bytes).
    let capped = TestGateway::start(s.dir.path(), |settings| {
        settings.max_response_bytes = 4_096;
    })
    .await;
    let payload = capped
        .tool_ok("invoke_tool", json!({"name": "get_big"}))
        .await;
    assert_eq!(payload["body"], Value::Null, "{payload}");
    assert_eq!(payload["omitted"]["reason"], "over_budget", "{payload}");
    let payload = capped
        .tool_ok("invoke_tool", json!({"name": "get_json"}))
        .await;
    assert_eq!(payload["body"]["greeting"], "hello");
    // A small body still fits.
    let payload = small
        .tool_ok("invoke_tool", json!({"name": "get_json"}))
        .await;
    assert_eq!(payload["body"]["greeting"], "hello");
}

#[tokio::test]
async fn unreachable_and_slow_backends_say_whether_the_request_got_there() {
    let s = Setup::start().await;
    let payload = s
        .refused(json!({"name": "down_call"}), "backend_unavailable")
        .await;
    assert_eq!(payload["retryable"], true);
    let message = payload["message"].as_str().unwrap();
    assert!(message.contains("did not reach"), "{message}");

    let started = Instant::now();
    let payload = s.err(json!({"name": "slow_call"})).await;
    let elapsed = started.elapsed();
    assert_eq!(payload["error"], "backend_timeout", "{payload}");
    assert_eq!(payload["retryable"], true);
    let message = payload["message"].as_str().unwrap();
    assert!(message.contains("may have reached"), "{message}");
    assert!(message.contains("200 ms"), "{message}");
    assert!(
        elapsed >= Duration::from_millis(200) && elapsed < Duration::from_millis(1_500),
        "timed out after {elapsed:?}"
    );
    assert_eq!(s.backend.hits("/slow"), 1);
}

// ------------------------------------------------------------ 5. variants

#[tokio::test]
async fn curated_variants_send_their_fixed_arguments() {
    let s = Setup::start().await;
    let loaded = s
        .gateway
        .tool_ok("load_tool", json!({"name": "list_open_things"}))
        .await;
    assert_eq!(keys(&loaded["inputSchema"]["properties"]), ["limit"]);

    let (_, request) = s.sent("list_open_things", json!({})).await;
    assert_eq!(request.target, "/things?status=open");
    let (_, request) = s.sent("list_open_things", json!({"limit": 3})).await;
    assert_eq!(request.target, "/things?status=open&limit=3");

    // The agent cannot pass the fixed argument, not even the same value.
    for status in ["closed", "open"] {
        let payload = s
            .refused(
                json!({"name": "list_open_things", "arguments": {"status": status}}),
                "invalid_arguments",
            )
            .await;
        assert_eq!(payload["accepted"], json!(["limit"]));
    }
    // The operation itself still takes it.
    let (_, request) = s.sent("list_things", json!({"status": "closed"})).await;
    assert_eq!(request.target, "/things?status=closed");
}

// ------------------------------------------------------------ 6. revisions

#[tokio::test]
async fn a_revision_changes_only_its_operation_and_refuses_stale_pins() {
    let s = Setup::start().await;
    let names = ["get_thing", "ping", "list_things", "list_open_things"];
    let mut before = Map::new();
    for name in names {
        before.insert(name.to_string(), json!(s.version(name).await));
    }

    // The same folder builds the same versions in another gateway.
    let same = TestGateway::start(s.dir.path(), |_| {}).await;
    for name in names {
        assert_eq!(before[name], json!(version_of(&same, name).await), "{name}");
    }

    // The owner declares a revision of GET /things/{id} in the sidecar.
    write_catalogs(
        s.dir.path(),
        &s.backend.base,
        json!({"operations": {"GET /things/{id}": 2}}),
    );
    let revised = TestGateway::start(s.dir.path(), |_| {}).await;
    let new_version = version_of(&revised, "get_thing").await;
    assert_ne!(json!(new_version), before["get_thing"]);
    for name in ["ping", "list_things", "list_open_things"] {
        assert_eq!(
            before[name],
            json!(version_of(&revised, name).await),
            "{name} changed"
        );
    }

    // A call pinned to the old version is refused; nothing is sent.
    let count = s.backend.count();
    let payload = revised
        .tool_err(
            "invoke_tool",
            json!({"name": "get_thing", "arguments": {"id": "1"}, "version": before["get_thing"]}),
        )
        .await;
    assert_eq!(payload["error"], "tool_changed");
    assert_eq!(payload["message"], tool_changed_message("get_thing"));
    assert_eq!(payload["retryable"], false);
    assert_eq!(s.backend.count(), count, "a stale pin reached the backend");

    // Pinned to the new version it runs; other tools' old pins still run.
    let payload = revised
        .tool_ok(
            "invoke_tool",
            json!({"name": "get_thing", "arguments": {"id": "1"}, "version": new_version}),
        )
        .await;
    assert_eq!(payload["status"], 200);
    let payload = revised
        .tool_ok(
            "invoke_tool",
            json!({"name": "ping", "version": before["ping"]}),
        )
        .await;
    assert_eq!(payload["status"], 200);
    assert_eq!(s.backend.count(), count + 2);
}

// ------------------------------------------------------------ 7. the shipped demo

/// Connections are served on `serve_threads` single-threaded runtimes
/// (taken in turn), each calling backends through its own connection pool,
/// or on the main runtime with 0: with any count, calls on many
/// connections (each a fresh client, so a new connection and the next
/// thread) reach the backend and come back whole, and the gateway stops
/// cleanly.
#[tokio::test]
async fn every_serving_thread_count_serves_calls_end_to_end() {
    init();
    for threads in [0, 1, 3] {
        let mut demo = TestGateway::start(&shipped_catalogs(), |settings| {
            settings.demo_backend = DemoBackend::On;
            settings.serve_threads = threads;
        })
        .await;
        assert_eq!(demo.gateway.settings.serve_threads, threads);
        for connection in 1..=7 {
            demo.client = reqwest::Client::new();
            let calls = (0..3).map(|_| {
                demo.tool_ok(
                    "invoke_tool",
                    json!({"name": "get_order", "arguments": {"id": 1}}),
                )
            });
            for payload in futures_util::future::join_all(calls).await {
                assert_eq!(
                    payload["status"], 200,
                    "{threads} threads, connection {connection}"
                );
                assert_eq!(payload["body"]["id"], 1, "{payload}");
            }
        }
    }
}

#[tokio::test]
async fn the_shipped_demo_works_end_to_end() {
    init();
    let demo = TestGateway::start(&shipped_catalogs(), |settings| {
        settings.demo_backend = DemoBackend::On
    })
    .await;
    let found = demo.search(json!({"query": "cancel order"})).await;
    assert_eq!(names(&found)[0], "cancel_order", "{found}");

    let version = version_of(&demo, "cancel_order").await;
    let payload = demo
        .tool_ok(
            "invoke_tool",
            json!({"name": "cancel_order", "arguments": {"id": 1}, "version": version}),
        )
        .await;
    assert_eq!(payload["status"], 200, "{payload}");
    assert_eq!(payload["body"]["id"], 1);
    assert_eq!(payload["body"]["status"], "cancelled");

    let stale = if version == "0123456789abcdef" {
        "fedcba9876543210"
    } else {
        "0123456789abcdef"
    };
    let payload = demo
        .tool_err(
            "invoke_tool",
            json!({"name": "cancel_order", "arguments": {"id": 3}, "version": stale}),
        )
        .await;
    assert_eq!(payload["error"], "tool_changed");
    assert_eq!(payload["message"], tool_changed_message("cancel_order"));
    // Order 3 was not cancelled by the refused call.
    let payload = demo
        .tool_ok(
            "invoke_tool",
            json!({"name": "get_order", "arguments": {"id": 3}}),
        )
        .await;
    assert_eq!(payload["body"]["status"], "open");

    let payload = demo
        .tool_ok(
            "invoke_tool",
            json!({"name": "create_order", "arguments": {"item": "usb hub", "quantity": 2}}),
        )
        .await;
    assert_eq!(payload["status"], 201, "{payload}");
    assert_eq!(payload["body"]["item"], "usb hub");
    assert_eq!(payload["body"]["status"], "open");
    let created = payload["body"]["id"].as_u64().expect("an id");

    let payload = demo
        .tool_err(
            "invoke_tool",
            json!({"name": "get_order", "arguments": {"id": 99}}),
        )
        .await;
    assert_eq!(payload["error"], "backend_status");
    assert_eq!(payload["status"], 404);
    assert_eq!(payload["retryable"], false);
    assert_eq!(payload["body"]["error"], "not_found");

    let open = demo
        .tool_ok("invoke_tool", json!({"name": "list_open_orders"}))
        .await;
    assert_eq!(open["status"], 200);
    let open = open["body"].as_array().expect("a list").clone();
    assert!(
        open.iter().all(|order| order["status"] == "open"),
        "{open:?}"
    );
    let mut ids: Vec<u64> = open.iter().map(|o| o["id"].as_u64().unwrap()).collect();
    ids.sort();
    assert_eq!(ids, [3, created]);
    let all = demo
        .tool_ok("invoke_tool", json!({"name": "list_orders"}))
        .await;
    let statuses: Vec<&str> = all["body"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["status"].as_str().unwrap())
        .collect();
    assert!(statuses.contains(&"shipped") && statuses.contains(&"cancelled"));
}
