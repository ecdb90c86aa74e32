//! Replicas behind a real load balancer during a rolling catalog update
//! (docs/contract.md §3.3 step 3, §6, §7): three `sezzlee serve`
//! processes, each on its own copy of a catalogs folder, all calling one
//! recording backend, behind a real nginx (a child process with a
//! generated configuration). Agents loop through nginx with the project's
//! own client (`GatewayClient`: search → load, cached per generation →
//! pinned invoke, one reload-and-retry on `tool_changed`) while the
//! catalog changes replica by replica: edited in place (the watcher
//! reloads it) or, for two steps, the replica is stopped with SIGTERM
//! while requests are in flight and started again on the same port.
//!
//! What it shows, and prints as one `rolling-update figures:` line:
//! - no request failed other than with `tool_changed` (nginx's retries of
//!   read-only requests and of requests refused at connect are
//!   transparent; anything else that broke is a failure), except the
//!   invokes LOST AT SIGTERM below, counted apart;
//! - every stale pin was refused before the backend saw it: the backend
//!   received exactly one request per successful invoke, of the shape of
//!   the version the call was pinned to, and after a replica switched no
//!   request of the old shape reached the backend from it;
//! - every reload-and-retry succeeded, and the agents reloaded definitions
//!   a bounded number of times (not once per request);
//! - each SIGTERM stopped a replica with requests in flight (counted from
//!   nginx's access log: among them a two-second call) and every one of
//!   them was answered;
//! - generation stamps count each process's own reloads (a restart counts
//!   from 0 again, a no-op save counts nothing) and so disagree across
//!   replicas serving the same definitions.
//!
//! The nginx configuration is the one README recommends:
//! - HTTP/1.1 keep-alive to the replicas, with an idle timeout below the
//!   gateway's `header_read_timeout` so nginx, not the gateway, closes
//!   idle connections;
//! - `proxy_next_upstream error timeout http_502` everywhere: a replica
//!   that refuses the connection (stopped, restarting) is skipped. nginx
//!   never retries a POST once it was sent unless `non_idempotent` is set,
//!   and every MCP request is a POST. Whether re-sending is safe depends on
//!   what the request does, which the 2026-07-28 `Mcp-Method` and
//!   `Mcp-Name` headers say without parsing the body (and the gateway
//!   refuses a request whose headers disagree with its body): requests
//!   that only read (`server/discover`, `tools/list`, `search_tools`,
//!   `load_tool`) are re-sent to another replica after any error
//!   (`non_idempotent`); `invoke_tool`, which may call a backend that is
//!   not idempotent, and anything unnamed (the 2025 era sends no such
//!   headers), is never re-sent once it reached a replica: a replica that
//!   vanished mid-call may have called the backend already.
//! - each agent's requests stay on one replica (`hash $http_authorization
//!   consistent`): behind a plain round robin, while the fleet is mixed a
//!   load and the pinned invoke that follows land on replicas with
//!   different definitions and the agent's one retry fails about as often
//!   as not. Requests without credentials fall back to round robin.
//!   `SEZZLEE_ROLLING_BALANCE=round-robin` runs the same update behind a
//!   plain round robin and prints its figures (the correctness checks
//!   hold there too; retry success and the reload bound do not).
//!
//! LOST AT SIGTERM (fixed; the test now fails on any). When SIGTERM made
//! the gateway close its listener and, through hyper's graceful shutdown,
//! at once close every keep-alive connection idle at that instant (and
//! every connection accepted but not yet read), a request nginx was
//! sending on such a connection was closed unread: nginx said "upstream
//! prematurely closed connection" and, unable to tell an `invoke_tool`
//! closed unread from one that ran, answered 502. That happened in about
//! half the runs (of two SIGTERMs each), behind the hash and the round
//! robin alike. The gateway now drains first (`shutdown_drain_ms`,
//! `server.rs`): for a second it goes on serving with `/readyz` at 503 and
//! `Connection: close` on every response, so nginx retires each connection
//! after its next answer, and only then stops accepting. A request still
//! lost that way is counted (`lost_at_sigterm=`) and fails the test.
//!
//! nginx: `SEZZLEE_TEST_NGINX` names the binary, and then a missing or
//! broken one fails the test (CI should set it); unset, `nginx` is looked
//! for on `PATH` and in the usual sbin folders (`nginx.rs`, shared with
//! the benches), and without one the test says it SKIPPED (`apt-get
//! install nginx-light`). `scripts/rolling-update.sh`
//! runs it by hand on the release binary.

use crate::backend::{Backend, Recorded};
use crate::support::sezzlee_binary;
use serde_json::{Map, Value, json};
use sezzlee_client::gateway::error_code;
use sezzlee_client::{Client, ClientConfig, ClientError, GatewayClient, LoadOutcome, Search};
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use tempfile::TempDir;

/// Agents with a credential of their own (pinned invokes of `TOOLS`).
const AGENTS: usize = 4;
/// Callers without credentials invoking the backend's two-second `/slow`:
/// requests that are surely in flight when a replica is stopped.
const SLOW_CALLERS: usize = 4;
const REPLICAS: usize = 3;
/// The tools the agents load and invoke; both change in the update.
const TOOLS: [&str; 2] = ["get_item", "list_items"];
/// Agent traffic before the first step, between steps and after the last.
const WARM_UP: Duration = Duration::from_millis(2000);
const BETWEEN_STEPS: Duration = Duration::from_millis(2000);
/// The replicas' `--shutdown-drain-ms`, and nginx's idle timeout for its
/// connections to them, below it (README "Deploying": behind a proxy, its
/// idle timeout must be shorter than the drain).
const DRAIN_MS: u64 = 1500;
const NGINX_IDLE_MS: u64 = 1000;
const TAIL: Duration = Duration::from_millis(1500);
/// After a reload is seen on `/status`, how long a call validated on the
/// snapshot before may still be on its way to the backend.
const SWITCH_SLACK: Duration = Duration::from_millis(300);
/// Longest wait for anything that must happen (reached only on failure).
const PATIENCE: Duration = Duration::from_secs(20);

// ------------------------------------------------------------ nginx

/// How nginx spreads requests over the replicas.
#[derive(Clone, Copy, PartialEq, Debug)]
enum Balance {
    /// `hash $http_authorization consistent`: an agent stays on a replica.
    Sticky,
    /// nginx's default round robin.
    RoundRobin,
}

impl Balance {
    fn from_env() -> Balance {
        match std::env::var("SEZZLEE_ROLLING_BALANCE").as_deref() {
            Ok("round-robin") => Balance::RoundRobin,
            Ok("hash") | Ok("") | Err(_) => Balance::Sticky,
            Ok(other) => panic!("SEZZLEE_ROLLING_BALANCE is hash or round-robin, not {other}"),
        }
    }

    fn label(self) -> &'static str {
        match self {
            Balance::Sticky => "hash",
            Balance::RoundRobin => "round-robin",
        }
    }
}

/// The nginx configuration: the README's, with every path inside the
/// prefix folder and a log line per request for the figures.
fn nginx_conf(listen: u16, replicas: &[u16], balance: Balance) -> String {
    let servers: String = replicas
        .iter()
        .map(|port| format!("        server 127.0.0.1:{port} max_fails=1 fail_timeout=1s;\n"))
        .collect();
    let idle_ms = NGINX_IDLE_MS;
    let hash = match balance {
        Balance::Sticky => "        hash $http_authorization consistent;\n",
        Balance::RoundRobin => "",
    };
    format!(
        r#"# Generated by tests/it/rolling_update.rs.
master_process off;
pid nginx.pid;
error_log error.log warn;
events {{ worker_connections 4096; }}
http {{
    client_body_temp_path client_body;
    proxy_temp_path proxy;
    fastcgi_temp_path fastcgi;
    uwsgi_temp_path uwsgi;
    scgi_temp_path scgi;
    log_format mcp '$msec $request_time $status "$upstream_addr" "$upstream_status" "$http_mcp_method" "$http_mcp_name" "$uri"';
    access_log access.log mcp;

    # Requests that only read, by the 2026-07-28 headers (the gateway
    # refuses a request whose headers disagree with its body).
    map "$http_mcp_method:$http_mcp_name" $mcp_read_only {{
        default 0;
        "tools/call:search_tools" 1;
        "tools/call:load_tool" 1;
        "~^tools/list:" 1;
        "~^server/discover:" 1;
    }}

    upstream sezzlee {{
{hash}{servers}        keepalive 32;
        # Below the gateway's header_read_timeout (30 s) and its shutdown
        # drain (DRAIN_MS): nginx, not the gateway, closes idle
        # connections, so none is idle when a stopping replica closes.
        keepalive_timeout {idle_ms}ms;
    }}

    server {{
        listen 127.0.0.1:{listen};
        proxy_http_version 1.1;
        proxy_set_header Connection "";
        proxy_set_header Host $host;
        proxy_buffering off;
        proxy_connect_timeout 2s;
        proxy_read_timeout 60s;
        proxy_next_upstream_tries 3;
        proxy_next_upstream_timeout 10s;

        location = /mcp {{
            if ($mcp_read_only) {{
                rewrite ^ /mcp-read-only last;
            }}
            # invoke_tool and anything unnamed: retried only when refused
            # before it was sent.
            proxy_next_upstream error timeout http_502;
            proxy_pass http://sezzlee;
        }}

        location = /mcp-read-only {{
            internal;
            proxy_next_upstream error timeout http_502 non_idempotent;
            proxy_pass http://sezzlee/mcp;
        }}

        location / {{
            proxy_next_upstream error timeout http_502;
            proxy_pass http://sezzlee;
        }}
    }}
}}
"#
    )
}

/// nginx as a child process (`-g 'daemon off;'`), killed when dropped.
struct Nginx {
    child: Child,
    prefix: TempDir,
    port: u16,
}

impl Nginx {
    async fn start(binary: &Path, replicas: &[u16], balance: Balance) -> Nginx {
        let prefix = tempfile::tempdir().unwrap();
        let mut last_error = String::new();
        for _ in 0..5 {
            let port = free_port();
            std::fs::write(
                prefix.path().join("nginx.conf"),
                nginx_conf(port, replicas, balance),
            )
            .unwrap();
            let mut child = Command::new(binary)
                .arg("-p")
                .arg(prefix.path())
                .args(["-c", "nginx.conf", "-e", "stderr", "-g", "daemon off;"])
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .expect("nginx starts");
            let deadline = Instant::now() + Duration::from_secs(10);
            loop {
                if let Some(status) = child.try_wait().unwrap() {
                    let mut stderr = String::new();
                    let _ =
                        std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut stderr);
                    last_error = format!("nginx exited ({status}): {stderr}");
                    break;
                }
                let up = reqwest::get(format!("http://127.0.0.1:{port}/healthz"))
                    .await
                    .is_ok_and(|reply| reply.status().is_success());
                if up {
                    return Nginx {
                        child,
                        prefix,
                        port,
                    };
                }
                assert!(Instant::now() < deadline, "nginx did not answer on {port}");
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
        panic!("nginx did not start: {last_error}")
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}/mcp", self.port)
    }

    fn access_log(&self) -> Vec<Logged> {
        let text = std::fs::read_to_string(self.prefix.path().join("access.log")).unwrap();
        text.lines().map(Logged::parse).collect()
    }

    fn error_log(&self) -> String {
        std::fs::read_to_string(self.prefix.path().join("error.log")).unwrap_or_default()
    }
}

impl Drop for Nginx {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// One line of nginx's access log.
#[derive(Debug, Clone)]
struct Logged {
    /// When the request started and ended, in Unix seconds.
    start: f64,
    end: f64,
    status: u16,
    /// The replicas tried, in order (`$upstream_addr`).
    upstreams: Vec<String>,
    /// `Mcp-Name`.
    name: String,
    uri: String,
}

impl Logged {
    fn parse(line: &str) -> Logged {
        let quoted: Vec<&str> = line.split('"').collect();
        let head: Vec<&str> = quoted[0].split_whitespace().collect();
        let end: f64 = head[0].parse().unwrap();
        let took: f64 = head[1].parse().unwrap();
        Logged {
            start: end - took,
            end,
            status: head[2].parse().unwrap(),
            upstreams: quoted[1]
                .split([',', ' '])
                .filter(|part| part.len() > 1 && part.contains(':'))
                .map(str::to_string)
                .collect(),
            name: quoted[7].to_string(),
            uri: quoted[9].to_string(),
        }
    }

    fn spans(&self, at: f64) -> bool {
        self.start <= at && at <= self.end
    }
}

// ------------------------------------------------------------ catalogs

/// The two shapes of the API the agents call.
#[derive(Clone, Copy, PartialEq, Debug)]
enum Shape {
    /// `/v1/…`, `region` one of `eu`.
    Old,
    /// `/v2/…`, `region` one of `eu`, `us`; new descriptions. Calls made
    /// with the old definition's arguments are still valid.
    New,
}

/// The document every replica serves: `get_item`, `list_items` (both
/// change between shapes), `slow_report` (the backend's `/slow`,
/// unchanged) and, with `extra`, one more tool (a change that leaves the
/// agents' tools as they are).
fn document(shape: Shape, extra: bool) -> String {
    let (prefix, regions, note) = match shape {
        Shape::Old => ("/v1", json!(["eu"]), ""),
        Shape::New => ("/v2", json!(["eu", "us"]), " Covers every region."),
    };
    let region = json!({
        "name": "region", "in": "query", "required": true,
        "description": "Where the items are kept.",
        "schema": {"type": "string", "enum": regions}
    });
    let ok = json!({"200": {"description": "ok"}});
    let mut paths = Map::new();
    paths.insert(
        format!("{prefix}/items/{{id}}"),
        json!({"get": {
            "operationId": "get_item",
            "summary": format!("Fetches one item by id.{note}"),
            "parameters": [
                {"name": "id", "in": "path", "required": true, "schema": {"type": "integer"}},
                region
            ],
            "responses": ok
        }}),
    );
    paths.insert(
        format!("{prefix}/items"),
        json!({"get": {
            "operationId": "list_items",
            "summary": format!("Lists items.{note}"),
            "parameters": [
                region,
                {"name": "limit", "in": "query", "schema": {"type": "integer"}}
            ],
            "responses": ok
        }}),
    );
    paths.insert(
        "/slow".to_string(),
        json!({"get": {
            "operationId": "slow_report",
            "summary": "Builds the slow report (two seconds).",
            "responses": ok
        }}),
    );
    if extra {
        paths.insert(
            format!("{prefix}/stats"),
            json!({"get": {"operationId": "item_stats", "summary": "Counts items.", "responses": ok}}),
        );
    }
    serde_json::to_string_pretty(&json!({
        "openapi": "3.0.3",
        "info": {"title": "Items", "version": "1"},
        "servers": [{"url": "http://127.0.0.1:9"}],
        "paths": paths
    }))
    .unwrap()
}

/// The sidecar: the recording backend, and a header naming the replica so
/// the backend's record says which replica each request came from.
fn sidecar(backend: &str, replica: &str) -> String {
    format!("backend:\n  baseUrl: {backend}\n  headers:\n    X-Replica: {replica}\n")
}

// ------------------------------------------------------------ replicas

/// One `sezzlee serve` process on its own catalogs folder and port.
struct Replica {
    name: String,
    root: TempDir,
    /// 0 until the first start picks one; the same on every restart.
    port: u16,
    process: Option<Child>,
    logs: Arc<Mutex<String>>,
}

impl Replica {
    fn new(index: usize, backend: &str) -> Replica {
        let root = tempfile::tempdir().unwrap();
        let name = format!("r{index}");
        std::fs::create_dir(root.path().join("catalogs")).unwrap();
        let replica = Replica {
            name,
            root,
            port: 0,
            process: None,
            logs: Arc::default(),
        };
        replica.write("items.sezzlee.yaml", &sidecar(backend, &replica.name));
        replica.write("items.yaml", &document(Shape::Old, false));
        replica
    }

    fn catalogs(&self) -> PathBuf {
        self.root.path().join("catalogs")
    }

    fn base(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    fn address(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// Replaces a catalog file whole (written beside it under a hidden
    /// name, which the gateway ignores, then renamed over it).
    fn write(&self, file: &str, text: &str) {
        let staged = self.catalogs().join(format!(".{file}.staged"));
        std::fs::write(&staged, text).unwrap();
        std::fs::rename(&staged, self.catalogs().join(file)).unwrap();
    }

    /// Starts `sezzlee serve` (on the port of the last start, if any) and
    /// waits for the address it logs.
    fn start(&mut self) {
        assert!(self.process.is_none(), "{} is running", self.name);
        let mut child = sezzlee_binary(None)
            .current_dir(self.root.path())
            .arg("serve")
            .arg("--catalogs")
            .arg(self.catalogs())
            .args(["--listen", &format!("127.0.0.1:{}", self.port)])
            .args(["--watch", "events", "--debounce-ms", "30"])
            .args(["--demo-backend", "false", "--log-format", "text"])
            .args(["--shutdown-drain-ms", &DRAIN_MS.to_string()])
            .env("RUST_LOG", "info")
            .env("NO_COLOR", "1")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("sezzlee serve starts");
        let stderr = child.stderr.take().unwrap();
        let (sender, listening) = std::sync::mpsc::channel();
        let sink = self.logs.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if let Some(at) = line.find("listening on http://") {
                    let url: String = line[at + "listening on http://".len()..]
                        .chars()
                        .take_while(|c| !c.is_whitespace() && *c != '\x1b' && *c != '/')
                        .collect();
                    let _ = sender.send(url);
                }
                let mut logs = sink.lock().unwrap();
                logs.push_str(&line);
                logs.push('\n');
            }
        });
        let deadline = Instant::now() + PATIENCE;
        let address = loop {
            if let Ok(address) = listening.recv_timeout(Duration::from_millis(20)) {
                break address;
            }
            if let Some(status) = child.try_wait().unwrap() {
                panic!(
                    "{} exited at start ({status}):\n{}",
                    self.name,
                    self.logs.lock().unwrap()
                );
            }
            assert!(Instant::now() < deadline, "{} did not start", self.name);
        };
        let port: u16 = address.rsplit(':').next().unwrap().parse().unwrap();
        assert!(
            self.port == 0 || self.port == port,
            "{} came back on {port}, not {}",
            self.name,
            self.port
        );
        self.port = port;
        self.process = Some(child);
    }

    /// `kill -TERM` and wait for the process to exit; returns how long
    /// it took.
    async fn terminate(&mut self) -> Duration {
        let mut child = self.process.take().expect("running");
        let signalled = Instant::now();
        let status = Command::new("kill")
            .arg("-TERM")
            .arg(child.id().to_string())
            .status()
            .expect("kill runs");
        assert!(status.success(), "kill -TERM {}", child.id());
        let deadline = signalled + PATIENCE;
        loop {
            if let Some(status) = child.try_wait().unwrap() {
                assert!(
                    status.success(),
                    "{} exited with {status} on SIGTERM:\n{}",
                    self.name,
                    self.logs.lock().unwrap()
                );
                return signalled.elapsed();
            }
            assert!(Instant::now() < deadline, "{} ignored SIGTERM", self.name);
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    async fn generation(&self) -> u64 {
        let status: Value = reqwest::get(format!("{}/status", self.base()))
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        status["generation"].as_u64().unwrap()
    }

    async fn wait_for_generation(&self, generation: u64) {
        let deadline = Instant::now() + PATIENCE;
        while self.generation().await != generation {
            assert!(
                Instant::now() < deadline,
                "{} never reached generation {generation}:\n{}",
                self.name,
                self.logs.lock().unwrap()
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// The replica's own view, without nginx: its `tools/list` stamp and
    /// the versions of the agents' tools.
    async fn stamp_and_versions(&self) -> (u64, Vec<String>) {
        let client = GatewayClient::new(
            Client::new(ClientConfig::new(format!("{}/mcp", self.base()))).unwrap(),
        );
        let stamp = client.sync_generation().await.unwrap().expect("a stamp");
        let mut versions = Vec::new();
        for tool in TOOLS {
            match client.reload(tool).await.unwrap() {
                LoadOutcome::Loaded { tool, .. } => versions.push(tool.version.clone()),
                LoadOutcome::Failed(result) => panic!("{}: {}", self.name, result.text()),
            }
        }
        (stamp, versions)
    }
}

impl Drop for Replica {
    fn drop(&mut self) {
        if let Some(mut child) = self.process.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

// ------------------------------------------------------------ agents

/// What one caller saw.
#[derive(Default, Debug)]
struct Tally {
    searches: u64,
    invokes: u64,
    /// Successful invokes by tool and the version they were pinned to
    /// (`-` for unpinned calls).
    succeeded: BTreeMap<(String, String), u64>,
    /// First attempts refused with `tool_changed` (each was reloaded and
    /// retried).
    stale_refused: u64,
    retries_succeeded: u64,
    /// Retries refused with `tool_changed` again.
    refused_after_retry: u64,
    /// Definitions fetched from the gateway: loads that missed the cache,
    /// and the reload before each retry.
    reloads: u64,
    /// Failures other than `tool_changed`, by error code, HTTP status or
    /// client error.
    failed: BTreeMap<String, u64>,
}

impl Tally {
    fn fail(&mut self, why: String) {
        *self.failed.entry(why).or_default() += 1;
    }

    fn merge(&mut self, other: Tally) {
        self.searches += other.searches;
        self.invokes += other.invokes;
        for (key, n) in other.succeeded {
            *self.succeeded.entry(key).or_default() += n;
        }
        self.stale_refused += other.stale_refused;
        self.retries_succeeded += other.retries_succeeded;
        self.refused_after_retry += other.refused_after_retry;
        self.reloads += other.reloads;
        for (key, n) in other.failed {
            *self.failed.entry(key).or_default() += n;
        }
    }
}

fn client_error(error: &ClientError) -> String {
    match error {
        ClientError::Http { status, .. } => format!("http {status}"),
        ClientError::Rpc(rpc) => format!("rpc {}", rpc.code),
        other => format!("{other}"),
    }
}

/// Arguments an agent builds from a loaded definition: each required
/// argument's first allowed value, or a number for an integer.
fn arguments_for(definition: &Value, round: u64) -> Value {
    let schema = &definition["inputSchema"];
    let mut arguments = Map::new();
    for name in schema["required"].as_array().into_iter().flatten() {
        let name = name.as_str().unwrap();
        let property = &schema["properties"][name];
        let value = match property["enum"].as_array().and_then(|e| e.first()) {
            Some(first) => first.clone(),
            None if property["type"] == "integer" => json!(round % 97 + 1),
            None => json!("x"),
        };
        arguments.insert(name.to_string(), value);
    }
    Value::Object(arguments)
}

/// An agent: search, then load (cached) and a pinned invoke of each tool,
/// until told to stop.
async fn agent(index: usize, url: String, stop: Arc<AtomicBool>) -> Tally {
    let config = ClientConfig::new(url)
        .header("Authorization", format!("Bearer agent-{index}"))
        .timeout(Duration::from_secs(30))
        // Read the generation stamp at least every second (the gateway's
        // ttlMs is a minute, longer than the whole update).
        .cache_ttl_cap(Duration::from_secs(1));
    let client = GatewayClient::new(Client::new(config).unwrap());
    let mut tally = Tally::default();
    let mut round = 0;
    while !stop.load(Ordering::Relaxed) {
        round += 1;
        let search = Search {
            limit: Some(5),
            ..Search::new("item")
        };
        match client.search(search).await {
            Ok(result) if !result.is_error => {
                tally.searches += 1;
                assert!(result.text().contains("get_item"), "{}", result.text());
            }
            Ok(result) => tally.fail(format!("search {:?}", error_code(&result))),
            Err(error) => tally.fail(format!("search: {}", client_error(&error))),
        }
        for tool in TOOLS {
            let loaded = match client.load(tool).await {
                Ok(LoadOutcome::Loaded { tool, cached }) => {
                    tally.reloads += u64::from(!cached);
                    tool
                }
                Ok(LoadOutcome::Failed(result)) => {
                    tally.fail(format!("load {:?}", error_code(&result)));
                    continue;
                }
                Err(error) => {
                    tally.fail(format!("load: {}", client_error(&error)));
                    continue;
                }
            };
            let arguments = arguments_for(&loaded.definition, round);
            tally.invokes += 1;
            let outcome = match client.invoke(tool, arguments, Some(&loaded.version)).await {
                Ok(outcome) => outcome,
                Err(error) => {
                    tally.fail(format!("invoke: {}", client_error(&error)));
                    continue;
                }
            };
            let retried = outcome.retried_from.is_some();
            if retried {
                tally.stale_refused += 1;
                tally.reloads += 1;
            }
            if !outcome.result.is_error {
                tally.retries_succeeded += u64::from(retried);
                let version = outcome.version.unwrap_or_default();
                *tally
                    .succeeded
                    .entry((tool.to_string(), version))
                    .or_default() += 1;
                continue;
            }
            match error_code(&outcome.result).as_deref() {
                Some("tool_changed") if retried => tally.refused_after_retry += 1,
                Some("tool_changed") => tally.stale_refused += 1,
                code => tally.fail(format!("invoke {code:?}: {}", outcome.result.text())),
            }
        }
    }
    tally
}

/// A caller without credentials invoking `slow_report` (unpinned) until
/// told to stop: two seconds per call at the backend.
async fn slow_caller(url: String, stop: Arc<AtomicBool>) -> Tally {
    let client = Client::new(ClientConfig::new(url).timeout(Duration::from_secs(30))).unwrap();
    let mut tally = Tally::default();
    while !stop.load(Ordering::Relaxed) {
        tally.invokes += 1;
        match client
            .call_tool(
                "invoke_tool",
                json!({"name": "slow_report", "arguments": {}}),
            )
            .await
        {
            Ok(result) if !result.is_error => {
                *tally
                    .succeeded
                    .entry(("slow_report".to_string(), "-".to_string()))
                    .or_default() += 1;
            }
            Ok(result) => tally.fail(format!("slow {:?}", error_code(&result))),
            Err(error) => tally.fail(format!("slow: {}", client_error(&error))),
        }
    }
    tally
}

// ------------------------------------------------------------ the backend's record

fn replica_of(request: &Recorded) -> String {
    request.header("x-replica").unwrap_or("?").to_string()
}

/// Waits until a `/slow` call from `replica` arrives at the backend (it is
/// then in flight for two seconds) and returns at once.
async fn slow_call_arrives(backend: &Backend, replica: &str) {
    let from = backend.count();
    let deadline = Instant::now() + PATIENCE;
    loop {
        let requests = backend.requests();
        if requests[from.min(requests.len())..]
            .iter()
            .any(|r| r.path() == "/slow" && replica_of(r) == replica)
        {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "no slow call reached {replica} to be in flight"
        );
        tokio::time::sleep(Duration::from_millis(15)).await;
    }
}

fn unix_now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
}

/// One SIGTERM: which replica, when, how long it took to exit.
struct Termination {
    replica: String,
    address: String,
    at: f64,
    exit: Duration,
}

// ------------------------------------------------------------ the test

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "slow campaign: `cargo test -- --include-ignored` runs it, as CI does"]
async fn replicas_behind_nginx_survive_a_rolling_catalog_update() {
    let Some(nginx_binary) = crate::nginx::binary() else {
        crate::corpus::skipped(
            "replicas_behind_nginx_survive_a_rolling_catalog_update",
            "no nginx here (apt-get install -y nginx-light, or name the binary in \
             SEZZLEE_TEST_NGINX, which then must run)",
        );
        return;
    };
    let balance = Balance::from_env();
    let started = Instant::now();
    let backend = Backend::start().await;
    let mut replicas: Vec<Replica> = (0..REPLICAS)
        .map(|i| Replica::new(i, &backend.base))
        .collect();
    tokio::task::block_in_place(|| replicas.iter_mut().for_each(Replica::start));
    let ports: Vec<u16> = replicas.iter().map(|r| r.port).collect();
    let nginx = Nginx::start(&nginx_binary, &ports, balance).await;

    // The versions before and after, from a replica directly.
    let mut generations: Vec<Vec<String>> = vec![vec!["0".to_string()]; REPLICAS];
    for replica in &replicas {
        assert_eq!(replica.generation().await, 0);
    }
    let (_, old_versions) = replicas[0].stamp_and_versions().await;

    let stop = Arc::new(AtomicBool::new(false));
    let mut callers = Vec::new();
    for index in 0..AGENTS {
        callers.push(tokio::spawn(agent(index, nginx.url(), stop.clone())));
    }
    let mut slow = Vec::new();
    for _ in 0..SLOW_CALLERS {
        slow.push(tokio::spawn(slow_caller(nginx.url(), stop.clone())));
    }
    tokio::time::sleep(WARM_UP).await;
    let update_started = Instant::now();

    // Where each replica switched: the backend's count from which no
    // request of the old shape may come from it.
    let mut switched: Vec<(String, usize)> = Vec::new();
    let mut terminations: Vec<Termination> = Vec::new();

    // 1. r0: edited in place; the watcher reloads it.
    replicas[0].write("items.yaml", &document(Shape::New, false));
    replicas[0].wait_for_generation(1).await;
    generations[0].push("1".to_string());
    tokio::time::sleep(SWITCH_SLACK).await;
    switched.push((replicas[0].name.clone(), backend.count()));
    tokio::time::sleep(BETWEEN_STEPS).await;

    // 2. r1: SIGTERM with a slow call (and whatever else) in flight, then
    // started again on the same port with the new catalog.
    terminations.push(restart(&mut replicas[1], &backend, Some(Shape::New)).await);
    generations[1].push("restart 0".to_string());
    assert_eq!(replicas[1].generation().await, 0);
    switched.push((replicas[1].name.clone(), backend.count()));
    tokio::time::sleep(BETWEEN_STEPS).await;

    // 3. r2: a save that changes nothing counts nothing; a change that
    // leaves the agents' tools as they are counts one; the update another.
    replicas[2].write("items.yaml", &document(Shape::Old, false));
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert_eq!(replicas[2].generation().await, 0, "a no-op save counted");
    replicas[2].write("items.yaml", &document(Shape::Old, true));
    replicas[2].wait_for_generation(1).await;
    generations[2].push("1".to_string());
    tokio::time::sleep(Duration::from_millis(500)).await;
    replicas[2].write("items.yaml", &document(Shape::New, false));
    replicas[2].wait_for_generation(2).await;
    generations[2].push("2".to_string());
    tokio::time::sleep(SWITCH_SLACK).await;
    switched.push((replicas[2].name.clone(), backend.count()));
    tokio::time::sleep(BETWEEN_STEPS).await;

    // 4. r0 again: a plain restart (its catalog is already the new one):
    // its generation goes back to 0.
    terminations.push(restart(&mut replicas[0], &backend, None).await);
    generations[0].push("restart 0".to_string());
    let update_took = update_started.elapsed();
    tokio::time::sleep(TAIL).await;

    stop.store(true, Ordering::Relaxed);
    let mut agents = Tally::default();
    let mut per_agent_reloads = Vec::new();
    for caller in callers {
        let tally = caller.await.unwrap();
        per_agent_reloads.push(tally.reloads);
        agents.merge(tally);
    }
    let mut slow_tally = Tally::default();
    for caller in slow {
        slow_tally.merge(caller.await.unwrap());
    }
    let load_seconds = started.elapsed();

    // ---- what each replica serves now, asked directly
    let mut stamps = Vec::new();
    let mut new_versions = None;
    for replica in &replicas {
        let (stamp, versions) = replica.stamp_and_versions().await;
        assert_eq!(stamp, replica.generation().await);
        stamps.push(stamp);
        match &new_versions {
            None => new_versions = Some(versions),
            Some(first) => assert_eq!(
                &versions, first,
                "{} serves other definitions",
                replica.name
            ),
        }
    }
    let new_versions = new_versions.unwrap();
    assert_eq!(
        stamps,
        vec![0, 0, 2],
        "generations count each process's reloads"
    );
    for (old, new) in old_versions.iter().zip(&new_versions) {
        assert_ne!(old, new, "the update changes every agent tool's version");
    }

    // ---- nginx's record
    let logged: Vec<Logged> = nginx
        .access_log()
        .into_iter()
        .filter(|l| l.uri == "/mcp" || l.uri == "/mcp-read-only")
        .collect();
    let requests = logged.len();
    let mut by_status: BTreeMap<u16, usize> = BTreeMap::new();
    for line in &logged {
        *by_status.entry(line.status).or_default() += 1;
    }
    let retried_by_nginx: Vec<&Logged> = logged.iter().filter(|l| l.upstreams.len() > 1).collect();
    let retried_reads = retried_by_nginx
        .iter()
        .filter(|l| l.uri == "/mcp-read-only")
        .count();
    // A request nginx did not answer 200 must be an invoke it had sent to
    // a replica at the moment that replica was stopped, and that the
    // replica closed unread (see LOST AT SIGTERM in the module comment).
    let lost_at_sigterm = |line: &Logged| {
        line.status == 502
            && line.uri == "/mcp"
            && line.name == "invoke_tool"
            && line.upstreams.len() == 1
            && terminations.iter().any(|t| {
                line.upstreams[0] == t.address
                    && t.at - 0.05 <= line.end
                    && line.end <= t.at + DRAIN_MS as f64 / 1000.0 + 1.0
            })
    };
    let lost: Vec<&Logged> = logged.iter().filter(|l| lost_at_sigterm(l)).collect();
    let unexplained: Vec<&Logged> = logged
        .iter()
        .filter(|l| l.status != 200 && !lost_at_sigterm(l))
        .collect();
    // In flight at each SIGTERM: requests nginx had sent to that replica
    // and not yet answered.
    let in_flight_at = |t: &Termination| -> Vec<&Logged> {
        logged
            .iter()
            .filter(|l| l.spans(t.at) && l.upstreams.contains(&t.address))
            .collect()
    };
    let in_flight: Vec<String> = terminations
        .iter()
        .map(|t| {
            let at = in_flight_at(t);
            let completed = at
                .iter()
                .filter(|l| l.upstreams.last() == Some(&t.address) && l.status == 200)
                .count();
            let elsewhere = at
                .iter()
                .filter(|l| l.upstreams.last() != Some(&t.address) && l.status == 200)
                .count();
            let slow = at
                .iter()
                .filter(|l| l.status == 200 && l.end - l.start >= 1.0)
                .count();
            format!(
                "{}: {} ({completed} answered by it, {slow} of them two-second calls; \
                 {elsewhere} retried elsewhere by nginx; {} lost; exit {} ms)",
                t.replica,
                at.len(),
                at.iter().filter(|l| lost_at_sigterm(l)).count(),
                t.exit.as_millis()
            )
        })
        .collect();
    let served_by: BTreeMap<String, usize> = logged.iter().filter_map(|l| l.upstreams.last()).fold(
        BTreeMap::new(),
        |mut served, address| {
            let name = replicas
                .iter()
                .find(|r| &r.address() == address)
                .map_or("?".to_string(), |r| r.name.clone());
            *served.entry(name).or_default() += 1;
            served
        },
    );

    // ---- the backend's record
    let received = backend.requests();
    let shape_of = |request: &Recorded| -> &'static str {
        let path = request.path();
        if path == "/slow" {
            "slow"
        } else if path.starts_with("/v1/") {
            "old"
        } else if path.starts_with("/v2/") {
            "new"
        } else {
            "other"
        }
    };
    let mut by_shape: BTreeMap<(&str, &str), u64> = BTreeMap::new();
    for request in &received {
        let tool = if request.path().contains("/items/") {
            "get_item"
        } else if request.path().ends_with("/items") {
            "list_items"
        } else {
            "slow_report"
        };
        *by_shape.entry((tool, shape_of(request))).or_default() += 1;
    }

    let figures = format!(
        "rolling-update figures: balance={} replicas={REPLICAS} agents={AGENTS}+{SLOW_CALLERS} slow \
         requests_sent={requests} (nginx statuses {by_status:?}) searches={} invokes={} \
         slow_invokes={} failed={} {:?} lost_at_sigterm={} stale_pins_refused={} retries={} \
         retries_succeeded={} refused_after_retry={} nginx_retries={} ({} read-only) \
         served_by={served_by:?} in_flight_at_sigterm=[{}] \
         client_reloads={} per_agent={:?} backend_calls={} by_shape={:?} generations={:?} \
         final_stamps={:?} update_s={:.1} total_s={:.1}",
        balance.label(),
        agents.searches,
        agents.invokes,
        slow_tally.invokes,
        agents.failed.values().sum::<u64>() + slow_tally.failed.values().sum::<u64>(),
        agents
            .failed
            .iter()
            .chain(slow_tally.failed.iter())
            .collect::<BTreeMap<_, _>>(),
        lost.len(),
        agents.stale_refused,
        agents.stale_refused,
        agents.retries_succeeded,
        agents.refused_after_retry,
        retried_by_nginx.len(),
        retried_reads,
        in_flight.join("; "),
        agents.reloads,
        per_agent_reloads,
        received.len(),
        by_shape,
        generations,
        stamps,
        update_took.as_secs_f64(),
        load_seconds.as_secs_f64(),
    );
    println!("{figures}");

    // ---- the checks
    // No failure but tool_changed: nothing unexplained, and nothing lost
    // at a SIGTERM (see LOST AT SIGTERM above).
    assert!(
        unexplained.is_empty(),
        "nginx answered {unexplained:?}\n{figures}\nnginx errors:\n{}",
        nginx.error_log()
    );
    let failures: BTreeMap<&String, &u64> = agents
        .failed
        .iter()
        .chain(slow_tally.failed.iter())
        .collect();
    let lost_by_clients: u64 = ["invoke: http 502", "slow: http 502"]
        .iter()
        .map(|key| {
            agents.failed.get(*key).copied().unwrap_or(0)
                + slow_tally.failed.get(*key).copied().unwrap_or(0)
        })
        .sum();
    assert_eq!(
        failures.values().copied().sum::<u64>(),
        lost_by_clients,
        "requests failed other than with tool_changed:\n{figures}\nnginx errors:\n{}",
        nginx.error_log()
    );
    assert_eq!(lost_by_clients, lost.len() as u64, "{figures}");
    assert!(
        lost.is_empty(),
        "LOST AT SIGTERM: invoke(s) nginx sent to a replica as it was stopped, closed unread \
         (never at the backend): {lost:?}\n{figures}\nnginx errors:\n{}",
        nginx.error_log()
    );
    // Every stale pin was refused before the backend saw it: one backend
    // call per successful invoke, of the shape its pin named.
    let successes: u64 =
        agents.succeeded.values().sum::<u64>() + slow_tally.succeeded.values().sum::<u64>();
    assert_eq!(received.len() as u64, successes, "{figures}");
    for (i, tool) in TOOLS.iter().enumerate() {
        let pinned = |version: &str| {
            agents
                .succeeded
                .get(&(tool.to_string(), version.to_string()))
                .copied()
                .unwrap_or(0)
        };
        assert_eq!(
            by_shape.get(&(*tool, "old")).copied().unwrap_or(0),
            pinned(&old_versions[i]),
            "{tool}: old-shape backend calls vs invokes pinned to the old version\n{figures}"
        );
        assert_eq!(
            by_shape.get(&(*tool, "new")).copied().unwrap_or(0),
            pinned(&new_versions[i]),
            "{tool}: new-shape backend calls vs invokes pinned to the new version\n{figures}"
        );
        assert!(pinned(&old_versions[i]) > 0 && pinned(&new_versions[i]) > 0);
    }
    let pinned_elsewhere: Vec<_> = agents
        .succeeded
        .keys()
        .filter(|(tool, version)| {
            let i = TOOLS.iter().position(|t| t == tool).unwrap();
            *version != old_versions[i] && *version != new_versions[i]
        })
        .collect();
    assert!(pinned_elsewhere.is_empty(), "{pinned_elsewhere:?}");
    // After a replica switched, nothing of the old shape came from it.
    for (replica, from) in &switched {
        let stale: Vec<&Recorded> = received[*from..]
            .iter()
            .filter(|r| &replica_of(r) == replica && shape_of(r) == "old")
            .collect();
        assert!(
            stale.is_empty(),
            "{replica} sent {} old-shape calls after it switched: {:?}",
            stale.len(),
            stale.first().map(|r| &r.target)
        );
    }
    // Stale pins were met and refused, and the reload-and-retry worked.
    assert!(agents.stale_refused > 0, "no pin was ever stale: {figures}");
    // Each SIGTERM stopped a replica with requests in flight, among them
    // a two-second call, and each was answered (by it, or by another
    // replica after nginx retried it) unless lost as above.
    for t in &terminations {
        let at = in_flight_at(t);
        assert!(
            at.iter().any(|l| l.status == 200
                && l.end - l.start >= 1.0
                && l.upstreams == [t.address.clone()]),
            "no two-second call was in flight at {} when it was stopped and answered by it: {figures}",
            t.replica
        );
        assert!(
            at.iter().all(|l| l.status == 200 || lost_at_sigterm(l)),
            "{at:?}"
        );
    }
    if balance == Balance::Sticky {
        assert_eq!(
            agents.refused_after_retry, 0,
            "a reload-and-retry was refused again: {figures}"
        );
        assert_eq!(agents.retries_succeeded, agents.stale_refused, "{figures}");
        // Bounded reloads: for the fleet, twice the replicas times the
        // tools per agent (a load at the start, then a tool_changed and a
        // moved generation per change its replica makes, a failover and
        // the way back), however many requests were made.
        let bound = (AGENTS * TOOLS.len() * REPLICAS * 2) as u64;
        assert!(
            agents.reloads <= bound,
            "the agents reloaded {} definitions (bound {bound}): {figures}",
            agents.reloads
        );
    }
}

/// Stops `replica` with SIGTERM as soon as a slow call reached the backend
/// through it, waits for it to exit, writes `shape` (when given) and
/// starts it again on the same port.
async fn restart(replica: &mut Replica, backend: &Backend, shape: Option<Shape>) -> Termination {
    slow_call_arrives(backend, &replica.name).await;
    let at = unix_now();
    let exit = replica.terminate().await;
    if let Some(shape) = shape {
        replica.write("items.yaml", &document(shape, false));
    }
    tokio::task::block_in_place(|| replica.start());
    Termination {
        replica: replica.name.clone(),
        address: replica.address(),
        at,
        exit,
    }
}
