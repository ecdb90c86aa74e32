//! Upstream MCP servers behind the three tools (`docs/contract.md` §2.10):
//! one [`supervisor`] task per `NAME.mcp.yaml` file keeps a connection to
//! its server (Streamable HTTP through `sezzlee-client`, or a process over
//! stdio it starts and restarts), lists its tools, and lists again when the
//! server says they changed or the relist interval passes. [`Upstreams`]
//! holds what each one knows: the last good listing (the catalog's input,
//! [`Upstreams::listings`]), the live connection `invoke_tool` calls
//! through ([`Upstreams::call`]), and the state `/status` shows.
//!
//! A listing that differs from the last wakes the reloader
//! ([`Upstreams::changed`]), which rebuilds that file's unit only. The
//! reloader also hands every rescan's files to [`Upstreams::reconcile`],
//! which starts a supervisor for a new file, restarts one whose file
//! changed, and stops one whose file went.

mod connection;
mod supervisor;

pub use connection::{CallFailure, Connection};

use crate::environment::Environment;
use serde_json::{Value, json};
use sezzlee_catalog::upstream::UpstreamSpec;
use sezzlee_catalog::{Sources, UpstreamListing};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};
use tokio::sync::{Notify, watch};

/// Every upstream file's supervisor and what it knows.
pub struct Upstreams {
    /// The catalogs folder (a stdio server's working folder is inside it).
    catalogs: PathBuf,
    environment: Environment,
    /// Tokens of `backend.auth: clientCredentials` for listing (no caller:
    /// the gateway's own credentials); `None` when no HTTP client could be
    /// made for the token endpoint.
    credentials: Option<Arc<crate::backend::credentials::Credentials>>,
    /// Where supervisors are spawned (captured where the gateway runs, so
    /// a rescan on a blocking thread can start one).
    runtime: Option<tokio::runtime::Handle>,
    servers: Mutex<BTreeMap<Arc<str>, Arc<Upstream>>>,
    /// Woken when a listing changed: the reloader rebuilds.
    changed: Arc<Notify>,
}

/// One upstream file's server.
pub struct Upstream {
    pub file: Arc<str>,
    pub spec: Arc<UpstreamSpec>,
    state: Mutex<State>,
    /// Flipped to `true` to stop the supervisor (its file went or changed).
    stop: watch::Sender<bool>,
    /// Woken by a call that found the server gone: the supervisor checks
    /// at once rather than at its next relist.
    check: Notify,
}

/// What a supervisor knows of its server now.
#[derive(Default)]
struct State {
    /// The last listing that succeeded.
    tools: Option<Arc<Vec<Value>>>,
    /// Tools of that listing the client cannot call, by name and why.
    refused: Vec<(String, String)>,
    /// Why the server is not answering now, if it is not.
    problem: Option<String>,
    connection: Option<Connection>,
    /// `2026-07-28` or the handshake version agreed.
    protocol_version: Option<String>,
    last_listed: Option<SystemTime>,
    pid: Option<u32>,
    /// Connections made since the supervisor started (1 = never restarted).
    connects: u64,
    /// Connection attempts that ended (made or failed) and connections
    /// lost: 0 while the first attempt is under way.
    attempts: u64,
}

impl Upstreams {
    pub fn new(catalogs: PathBuf, environment: Environment) -> Upstreams {
        Upstreams {
            credentials: crate::backend::credentials::Credentials::new(environment.clone())
                .ok()
                .map(Arc::new),
            catalogs,
            environment,
            runtime: tokio::runtime::Handle::try_current().ok(),
            servers: Mutex::new(BTreeMap::new()),
            changed: Arc::new(Notify::new()),
        }
    }

    /// Woken whenever a server's listing (or its problem) changed.
    pub fn changed(&self) -> Arc<Notify> {
        self.changed.clone()
    }

    /// Starts, restarts and stops supervisors so there is exactly one per
    /// upstream file of `sources`, running the file's current spec.
    pub fn reconcile(&self, sources: &Sources) {
        let wanted: BTreeMap<&Arc<str>, &Arc<UpstreamSpec>> = sources.upstreams().collect();
        let mut servers = self.servers.lock().unwrap_or_else(|p| p.into_inner());
        servers.retain(|file, upstream| {
            let keep = wanted
                .get(file)
                .is_some_and(|spec| ***spec == *upstream.spec);
            if !keep {
                upstream.stop();
            }
            keep
        });
        let Some(runtime) = tokio::runtime::Handle::try_current()
            .ok()
            .or_else(|| self.runtime.clone())
        else {
            tracing::error!("no async runtime to supervise upstream MCP servers on");
            return;
        };
        for (file, spec) in wanted {
            if servers.contains_key(file) {
                continue;
            }
            let upstream = Arc::new(Upstream {
                file: file.clone(),
                spec: spec.clone(),
                state: Mutex::new(State::default()),
                stop: watch::channel(false).0,
                check: Notify::new(),
            });
            servers.insert(file.clone(), upstream.clone());
            let context = supervisor::Context {
                upstream,
                catalogs: self.catalogs.clone(),
                environment: self.environment.clone(),
                credentials: self.credentials.clone(),
                changed: self.changed.clone(),
            };
            runtime.spawn(supervisor::run(context));
        }
    }

    /// What each upstream file's server has listed, for the next build.
    pub fn listings(&self) -> BTreeMap<Arc<str>, Arc<UpstreamListing>> {
        let servers = self.servers.lock().unwrap_or_else(|p| p.into_inner());
        servers
            .iter()
            .map(|(file, upstream)| {
                let state = upstream.state();
                let listing = UpstreamListing::new(state.tools.clone(), state.problem.clone())
                    .with_refused(state.refused.clone());
                (file.clone(), Arc::new(listing))
            })
            .collect()
    }

    /// The spec of the upstream file `file`, while it is supervised.
    pub fn spec(&self, file: &str) -> Option<Arc<UpstreamSpec>> {
        let servers = self.servers.lock().unwrap_or_else(|p| p.into_inner());
        servers.get(file).map(|upstream| upstream.spec.clone())
    }

    /// The connection to the server of `file`, if it is up.
    pub fn connection(&self, file: &str) -> Option<(Arc<Upstream>, Connection)> {
        let servers = self.servers.lock().unwrap_or_else(|p| p.into_inner());
        let upstream = servers.get(file)?.clone();
        let connection = upstream.state().connection.clone()?;
        Some((upstream, connection))
    }

    /// Calls `tool` (the server's own name) on the server of `file`.
    pub async fn call(
        &self,
        file: &str,
        tool: &str,
        arguments: Value,
        headers: Vec<(String, String)>,
        timeout: Duration,
    ) -> Result<Value, CallFailure> {
        let Some((upstream, connection)) = self.connection(file) else {
            return Err(CallFailure::Unavailable {
                reason: self.problem(file).unwrap_or_else(|| {
                    "the gateway has no connection to this MCP server".to_string()
                }),
                maybe_reached: false,
            });
        };
        let result = connection
            .call_tool(tool, arguments, headers, timeout)
            .await;
        if let Err(CallFailure::Unavailable { reason, .. }) = &result {
            upstream.check.notify_one();
            tracing::warn!(upstream = %upstream.file, "a call failed to reach the server: {reason}");
        }
        result
    }

    fn problem(&self, file: &str) -> Option<String> {
        let servers = self.servers.lock().unwrap_or_else(|p| p.into_inner());
        servers.get(file).and_then(|u| u.state().problem.clone())
    }

    /// Each upstream for `/status`: file, transport, era, state, tools,
    /// last listing, last error, process id.
    pub fn status(&self) -> Value {
        let servers = self.servers.lock().unwrap_or_else(|p| p.into_inner());
        let list: Vec<Value> = servers
            .values()
            .map(|upstream| {
                let state = upstream.state();
                let transport = match (&upstream.spec.url, &upstream.spec.command) {
                    (Some(url), _) => json!({"kind": "http", "url": url}),
                    (None, Some(command)) => json!({"kind": "stdio", "command": command}),
                    (None, None) => Value::Null,
                };
                let up = state.connection.is_some();
                json!({
                    "file": &*upstream.file,
                    "transport": transport,
                    "protocolVersion": state.protocol_version,
                    "state": if up { "up" } else if state.attempts == 0 { "connecting" } else { "down" },
                    "tools": state.tools.as_ref().map(|tools| tools.len()),
                    "lastListed": state.last_listed.and_then(|t| t.duration_since(SystemTime::UNIX_EPOCH).ok()).map(|d| d.as_secs()),
                    "lastError": state.problem,
                    "pid": state.pid,
                    "connects": state.connects,
                    "attempts": state.attempts,
                })
            })
            .collect();
        Value::Array(list)
    }

    /// Stops every supervisor (the gateway is shutting down).
    pub fn stop_all(&self) {
        let servers = self.servers.lock().unwrap_or_else(|p| p.into_inner());
        for upstream in servers.values() {
            upstream.stop();
        }
    }
}

impl Upstream {
    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn stop(&self) {
        self.stop.send_replace(true);
    }
}
