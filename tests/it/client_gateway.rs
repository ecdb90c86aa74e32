//! `sezzlee::client` against a real sezzlee gateway: both eras,
//! the error split, the version pin with its automatic reload after a
//! catalog edit, generation-stamp cache invalidation, and
//! `subscriptions/listen` (change notifications, graceful closure, and
//! reconnection after a stream is cut by a real TCP proxy).
//!
//! The gateway serves a copy of the shipped demo catalog (with its built-in
//! demo backend) from a temporary folder; edits are real file writes
//! followed by `Reloader::rescan`, as the watcher would do.

use crate::support::*;
use serde_json::json;
use sezzlee_client::gateway::error_code;
use sezzlee_client::listen::ListenOptions;
use sezzlee_client::{
    Client, ClientConfig, ClientError, Era, EraChoice, EraMemory, GatewayClient, ListenEvent,
    LoadOutcome, Search,
};
use sezzlee_gateway::reload::{Outcome, Reloader};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tempfile::TempDir;

const PATIENCE: Duration = Duration::from_secs(10);

/// A reloading gateway on a private copy of the shipped catalog.
struct Live {
    gw: TestGateway,
    reloader: Arc<Reloader>,
    dir: TempDir,
}

impl Live {
    async fn start() -> Live {
        let dir = copy_of_shipped_catalogs();
        let mut settings = test_settings(dir.path());
        settings.demo_backend = DemoBackend::On;
        let (gw, reloader, _watcher) = TestGateway::start_reloading(settings, None).await;
        Live { gw, reloader, dir }
    }

    /// Replaces `from` by `to` in the catalog document and rescans.
    async fn edit(&self, from: &str, to: &str) -> Outcome {
        edit_file(&self.dir.path().join("orders.yaml"), from, to);
        self.reloader.rescan().await
    }

    fn config(&self) -> ClientConfig {
        // A private era memory: tests do not see each other's servers.
        ClientConfig::new(self.gw.url.clone()).memory(Arc::new(EraMemory::default()))
    }
}

fn edit_file(path: &Path, from: &str, to: &str) {
    let text = std::fs::read_to_string(path).unwrap();
    assert_eq!(
        text.matches(from).count(),
        1,
        "{from:?} once in {}",
        path.display()
    );
    std::fs::write(path, text.replace(from, to)).unwrap();
}

fn loaded(outcome: LoadOutcome) -> (Arc<sezzlee_client::Loaded>, bool) {
    match outcome {
        LoadOutcome::Loaded { tool, cached } => (tool, cached),
        LoadOutcome::Failed(result) => panic!("load failed: {}", result.text()),
    }
}

#[tokio::test]
async fn modern_era_is_found_remembered_and_listed_with_its_ttl() {
    let live = Live::start().await;
    let memory = Arc::new(EraMemory::default());
    let client = Client::new(live.config().memory(memory.clone())).unwrap();
    let server = client.discover().await.unwrap();
    assert_eq!(server.era, Era::Modern);
    assert_eq!(server.protocol_version, "2026-07-28");
    assert_eq!(server.server_info["name"], "sezzlee");
    assert_eq!(server.supported_versions, vec!["2026-07-28".to_string()]);
    assert!(server.instructions.unwrap().contains("search_tools"));
    assert_eq!(memory.era(&live.gw.url), Some(Era::Modern));

    let list = client.list_tools().await.unwrap();
    let names: Vec<&str> = list.tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["search_tools", "load_tool", "invoke_tool"]);
    assert_eq!(list.pages, 1);
    assert_eq!(list.ttl_ms, Some(60_000));
    assert_eq!(
        list.tools[0].meta("sezzlee/catalogGeneration"),
        Some(&json!(0))
    );
    // Within ttlMs the same answer is reused, not fetched again.
    let again = client.list_tools().await.unwrap();
    assert!(Arc::ptr_eq(&list, &again));

    // A second client of the same URL takes the era from memory: no probe,
    // and it still works.
    let second = Client::new(live.config().memory(memory.clone())).unwrap();
    let negotiated = second.connect().await.unwrap();
    assert!(negotiated.remembered);
    assert_eq!(negotiated.era, Era::Modern);
    let result = second
        .call_tool("search_tools", json!({"query": "order", "limit": 1}))
        .await
        .unwrap();
    assert!(!result.is_error);
    assert_eq!(
        result.json().unwrap()["results"].as_array().unwrap().len(),
        1
    );
}

#[tokio::test]
async fn protocol_errors_and_tool_failures_are_kept_apart() {
    let live = Live::start().await;
    let client = Client::new(live.config()).unwrap();
    // A tool the server does not have: a JSON-RPC error, not a result.
    match client.call_tool("no_such_tool", json!({})).await {
        Err(ClientError::Rpc(error)) => {
            assert_eq!(error.code, -32602);
            assert!(error.message.contains("no_such_tool"), "{}", error.message);
        }
        other => panic!("expected a JSON-RPC error, got {other:?}"),
    }
    // A tool that ran and failed: a result with isError and its content.
    let failed = client
        .call_tool("load_tool", json!({"name": "no_such_operation"}))
        .await
        .unwrap();
    assert!(failed.is_error);
    assert_eq!(error_code(&failed).as_deref(), Some("unknown_tool"));
    // The same through the gateway helpers.
    let gateway = GatewayClient::new(client);
    match gateway.load("no_such_operation").await.unwrap() {
        LoadOutcome::Failed(result) => {
            assert_eq!(error_code(&result).as_deref(), Some("unknown_tool"))
        }
        LoadOutcome::Loaded { .. } => panic!("an unknown operation loaded"),
    }
    let outcome = gateway
        .invoke("no_such_operation", json!({}), None)
        .await
        .unwrap();
    assert!(outcome.result.is_error);
    assert_eq!(outcome.version, None);
    // A backend's 404 is a tool failure too.
    let outcome = gateway
        .invoke("get_order", json!({"id": 999_999}), None)
        .await
        .unwrap();
    assert!(outcome.result.is_error);
    assert_eq!(
        error_code(&outcome.result).as_deref(),
        Some("backend_status")
    );
    // A method the server lacks is a protocol error with its HTTP status.
    match gateway
        .client()
        .request("prompts/list", Default::default())
        .await
    {
        Err(ClientError::Rpc(error)) => {
            assert_eq!(error.code, -32601);
            assert_eq!(error.http_status, Some(404));
        }
        other => panic!("expected -32601, got {other:?}"),
    }
}

#[tokio::test]
async fn the_legacy_era_works_without_a_session_and_has_no_listen() {
    let live = Live::start().await;
    let client = Client::new(live.config().era(EraChoice::Legacy)).unwrap();
    let server = client.discover().await.unwrap();
    assert_eq!(server.era, Era::Legacy);
    assert_eq!(server.protocol_version, "2025-11-25");
    assert_eq!(server.session_id, None, "sezzlee mints no session");
    assert_eq!(server.capabilities["tools"]["listChanged"], false);
    let list = client.list_tools().await.unwrap();
    assert_eq!(list.tools.len(), 3);
    assert_eq!(list.ttl_ms, None);
    let gateway = GatewayClient::new(client);
    let outcome = gateway
        .invoke("get_order", json!({"id": 1}), None)
        .await
        .unwrap();
    assert!(!outcome.result.is_error, "{}", outcome.result.text());
    assert_eq!(outcome.result.json().unwrap()["body"]["id"], 1);
    match gateway.client().listen(ListenOptions::default()).await {
        Err(ClientError::Unsupported(why)) => assert!(why.contains("2026-07-28"), "{why}"),
        Err(other) => panic!("expected Unsupported, got {other:?}"),
        Ok(_) => panic!("listen opened on the legacy era"),
    }
    gateway.client().close().await.unwrap();
}

#[tokio::test]
async fn invoke_is_pinned_and_reloads_once_after_a_catalog_edit() {
    let live = Live::start().await;
    let gateway = GatewayClient::new(Client::new(live.config()).unwrap());
    let (before, cached) = loaded(gateway.load("get_order").await.unwrap());
    assert!(!cached);
    let first = gateway
        .invoke("get_order", json!({"id": 1}), None)
        .await
        .unwrap();
    assert_eq!(first.version.as_deref(), Some(before.version.as_str()));
    assert_eq!(first.retried_from, None);

    // The operation's description changes: a new version on the server,
    // while this client still holds the old one (tools/list is cached for
    // its ttlMs, so the generation stamp it saw is the old one too).
    assert_eq!(
        live.edit("Fetches one order by id.", "Fetches one order by its id.")
            .await,
        Outcome::Bumped(1)
    );
    assert_eq!(gateway.cached("get_order").unwrap().version, before.version);

    // Without retry the pinned call is refused before the backend.
    let strict = GatewayClient::new(Client::new(live.config()).unwrap()).retry_on_change(false);
    let refused = strict
        .invoke("get_order", json!({"id": 1}), Some(&before.version))
        .await
        .unwrap();
    assert!(refused.result.is_error);
    assert_eq!(error_code(&refused.result).as_deref(), Some("tool_changed"));
    assert_eq!(refused.retried_from, None);

    // With retry (the default): refused, reloaded, retried once, served.
    let outcome = gateway
        .invoke("get_order", json!({"id": 1}), None)
        .await
        .unwrap();
    assert!(!outcome.result.is_error, "{}", outcome.result.text());
    assert_eq!(outcome.result.json().unwrap()["status"], 200);
    assert_eq!(
        outcome.retried_from.as_deref(),
        Some(before.version.as_str())
    );
    let after = gateway.cached("get_order").unwrap();
    assert_ne!(after.version, before.version);
    assert_eq!(outcome.version.as_deref(), Some(after.version.as_str()));
    assert_eq!(
        after.definition["description"],
        "Fetches one order by its id."
    );
}

#[tokio::test]
async fn a_new_generation_stamp_empties_the_load_cache() {
    let live = Live::start().await;
    // tools/list is never reused, so every load reads the current stamp.
    let client = Client::new(live.config().cache_ttl_cap(Duration::ZERO)).unwrap();
    let gateway = GatewayClient::new(client);
    let (first, cached) = loaded(gateway.load("get_order").await.unwrap());
    assert!(!cached);
    let (_, cached) = loaded(gateway.load("get_order").await.unwrap());
    assert!(cached, "same generation: served from the cache");

    // Another operation changes: get_order's version stays, but the stamp
    // moves, so the cached definition is not trusted any more.
    assert_eq!(
        live.edit("Creates a new order.", "Creates one new order.")
            .await,
        Outcome::Bumped(1)
    );
    let (second, cached) = loaded(gateway.load("get_order").await.unwrap());
    assert!(!cached, "the generation moved: loaded again");
    assert_eq!(second.version, first.version);
    assert_eq!(gateway.sync_generation().await.unwrap(), Some(1));
    let (_, cached) = loaded(gateway.load("get_order").await.unwrap());
    assert!(cached);
}

async fn next_event(listener: &mut sezzlee_client::Listener<'_>) -> ListenEvent {
    tokio::time::timeout(PATIENCE, listener.next())
        .await
        .expect("an event in time")
        .expect("the listener is open")
        .expect("no error")
}

#[tokio::test]
async fn listen_reports_changes_and_they_empty_the_caches() {
    let live = Live::start().await;
    let gateway = GatewayClient::new(Client::new(live.config()).unwrap());
    loaded(gateway.load("get_order").await.unwrap());
    assert!(gateway.client().cached_tools().is_some());
    let client = gateway.client();
    let mut listener = client.listen(ListenOptions::default()).await.unwrap();
    match next_event(&mut listener).await {
        ListenEvent::Acknowledged {
            subscription_id,
            honoured,
            not_honoured,
        } => {
            assert_eq!(&subscription_id, listener.subscription_id());
            assert_eq!(honoured, json!({"toolsListChanged": true}));
            assert!(not_honoured.is_empty());
        }
        other => panic!("expected the acknowledgement, got {other:?}"),
    }
    assert_eq!(
        live.edit("Fetches one order by id.", "Fetches one order by its id.")
            .await,
        Outcome::Bumped(1)
    );
    let event = next_event(&mut listener).await;
    match &event {
        ListenEvent::Notification { method, params } => {
            assert_eq!(method, "notifications/tools/list_changed");
            assert_eq!(params["_meta"]["sezzlee/catalogGeneration"], 1);
        }
        other => panic!("expected list_changed, got {other:?}"),
    }
    // The listener dropped the client's tools/list cache itself; the
    // gateway helper drops its loaded definitions when fed the event.
    assert!(client.cached_tools().is_none());
    assert!(gateway.cached("get_order").is_some());
    gateway.observe(&event);
    assert!(gateway.cached("get_order").is_none());
    let (tool, cached) = loaded(gateway.load("get_order").await.unwrap());
    assert!(!cached);
    assert_eq!(
        tool.definition["description"],
        "Fetches one order by its id."
    );
}

#[tokio::test]
async fn listen_ends_on_the_graceful_closure_without_reconnecting() {
    let live = Live::start().await;
    let client = Client::new(live.config()).unwrap();
    let mut listener = client.listen(ListenOptions::default()).await.unwrap();
    assert!(matches!(
        next_event(&mut listener).await,
        ListenEvent::Acknowledged { .. }
    ));
    live.gw.gateway.begin_shutdown();
    assert_eq!(next_event(&mut listener).await, ListenEvent::Closed);
    assert!(listener.next().await.is_none(), "nothing after the closure");
}

/// A TCP proxy in front of the gateway whose open connections can be cut.
struct Proxy {
    url: String,
    connections: Arc<Mutex<Vec<tokio::task::JoinHandle<()>>>>,
    accepted: Arc<std::sync::atomic::AtomicUsize>,
}

impl Proxy {
    async fn start(target: std::net::SocketAddr, path: &str) -> Proxy {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}{path}", listener.local_addr().unwrap());
        let connections: Arc<Mutex<Vec<tokio::task::JoinHandle<()>>>> = Arc::default();
        let accepted = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let (list, count) = (connections.clone(), accepted.clone());
        tokio::spawn(async move {
            while let Ok((mut inbound, _)) = listener.accept().await {
                count.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                let handle = tokio::spawn(async move {
                    if let Ok(mut outbound) = tokio::net::TcpStream::connect(target).await {
                        let _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
                    }
                });
                list.lock().unwrap().push(handle);
            }
        });
        Proxy {
            url,
            connections,
            accepted,
        }
    }

    /// Drops every open connection (both sockets close, no HTTP ending).
    fn cut(&self) {
        for handle in self.connections.lock().unwrap().drain(..) {
            handle.abort();
        }
    }
}

#[tokio::test]
async fn listen_reconnects_when_the_stream_is_cut() {
    let live = Live::start().await;
    let target: std::net::SocketAddr = live.gw.base.trim_start_matches("http://").parse().unwrap();
    let proxy = Proxy::start(target, "/mcp").await;
    let client =
        Client::new(ClientConfig::new(proxy.url.clone()).memory(Arc::new(EraMemory::default())))
            .unwrap();
    let options = ListenOptions {
        backoff: Duration::from_millis(20),
        ..ListenOptions::default()
    };
    let mut listener = client.listen(options).await.unwrap();
    let first_id = match next_event(&mut listener).await {
        ListenEvent::Acknowledged {
            subscription_id, ..
        } => subscription_id,
        other => panic!("expected the acknowledgement, got {other:?}"),
    };
    proxy.cut();
    match next_event(&mut listener).await {
        ListenEvent::Reconnecting { attempt, .. } => assert_eq!(attempt, 1),
        other => panic!("expected a reconnection, got {other:?}"),
    }
    let second_id = match next_event(&mut listener).await {
        ListenEvent::Acknowledged {
            subscription_id, ..
        } => subscription_id,
        other => panic!("expected a new acknowledgement, got {other:?}"),
    };
    assert_ne!(first_id, second_id, "a new request, a new subscription id");
    assert!(proxy.accepted.load(std::sync::atomic::Ordering::SeqCst) >= 2);
    // The new stream carries changes.
    assert_eq!(
        live.edit("Fetches one order by id.", "Fetches one order by its id.")
            .await,
        Outcome::Bumped(1)
    );
    match next_event(&mut listener).await {
        ListenEvent::Notification { method, params } => {
            assert_eq!(method, "notifications/tools/list_changed");
            assert_eq!(
                params["_meta"]["io.modelcontextprotocol/subscriptionId"],
                second_id
            );
        }
        other => panic!("expected list_changed, got {other:?}"),
    }
}

#[tokio::test]
async fn a_server_that_is_gone_is_a_transport_error() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap();
    drop(listener);
    let client = Client::new(
        ClientConfig::new(format!("http://{address}/mcp")).memory(Arc::new(EraMemory::default())),
    )
    .unwrap();
    match client.discover().await {
        // Nothing listens: no connection, so nothing was sent.
        Err(ClientError::Unreachable(why)) => assert!(!why.is_empty()),
        other => panic!("expected an unreachable server, got {other:?}"),
    }
    assert!(matches!(
        Client::new(ClientConfig::new("not a url")),
        Err(ClientError::Usage(_))
    ));
    assert!(matches!(
        Client::new(ClientConfig::new("http://127.0.0.1:1/mcp").header("Mcp-Method", "x")),
        Err(ClientError::Usage(_))
    ));
}

#[tokio::test]
async fn identity_headers_reach_the_server() {
    // purge_order is visible only with the orders:admin scope; an API key
    // mapped to that scope, sent as a --header would send it, shows it.
    const KEY_ENV: &str = "SEZZLEE_CLIENT_TEST_ADMIN_KEY";
    // For the test gateways only (`support::set_test_variable`).
    set_test_variable(KEY_ENV, "client-test-admin-key");
    let dir = copy_of_shipped_catalogs();
    let mut settings = test_settings(dir.path());
    settings.auth = Some(sezzlee_gateway::settings::AuthSettings {
        jwt: None,
        api_keys: vec![sezzlee_gateway::settings::ApiKeySettings {
            header: "x-api-key".to_string(),
            key_env: KEY_ENV.to_string(),
            subject: "client-test".to_string(),
            scopes: vec!["orders:admin".to_string()],
            roles: Vec::new(),
            names: Vec::new(),
        }],
        ..Default::default()
    });
    let gw = TestGateway::start_with(settings, Some(dir)).await;
    let memory = Arc::new(EraMemory::default());
    let names = |result: &sezzlee_client::ToolResult| -> Vec<String> {
        result.json().unwrap()["results"]
            .as_array()
            .unwrap()
            .iter()
            .map(|card| card["name"].as_str().unwrap().to_string())
            .collect()
    };
    let anonymous = GatewayClient::new(
        Client::new(ClientConfig::new(gw.url.clone()).memory(memory.clone())).unwrap(),
    );
    let seen = names(
        &anonymous
            .search(Search {
                limit: Some(50),
                ..Search::new("purge")
            })
            .await
            .unwrap(),
    );
    assert!(!seen.contains(&"purge_order".to_string()), "{seen:?}");
    let admin = GatewayClient::new(
        Client::new(
            ClientConfig::new(gw.url.clone())
                .memory(memory)
                .header("X-Api-Key", "client-test-admin-key"),
        )
        .unwrap(),
    );
    let purge = Search {
        limit: Some(50),
        ..Search::new("purge")
    };
    let seen = names(&admin.search(purge).await.unwrap());
    assert!(seen.contains(&"purge_order".to_string()), "{seen:?}");
}
