//! A client of one MCP server that runs as a child process and speaks the
//! stdio transport.
//!
//! It exists because the gateway puts existing MCP servers behind its
//! tools, and many of them are programs (`npx …`, `python3 -m …`, a
//! binary), not URLs. A [`StdioClient`] is one connection to one such
//! process; restarting a process that ended is the gateway's business
//! (it learns of the end from [`StdioClient::closed`]).
//!
//! Framing, per the MCP stdio transport: every message is one line of
//! JSON on the child's stdin or stdout, ended by `\n`, with no newline
//! inside (compact JSON escapes them); what the child writes on stderr is
//! logging, passed to `tracing` line by line. A stdout line that is not
//! JSON, or JSON that is not a JSON-RPC message, is logged and skipped.
//!
//! Eras: [`StdioEra::Handshake`] sends `initialize` (offering the newest
//! `initialize`-era revision) and `notifications/initialized` first;
//! [`StdioEra::Stateless`] (2026-07-28) sends no `initialize`, and every
//! request carries the `_meta` that [`rpc::modern_body`] builds. The
//! server's own requests are answered at once — `ping` with `{}`, anything
//! else (`roots/list`, `sampling/createMessage`, `elicitation/create` …)
//! with `-32601` — so a server never waits on this client.
//!
//! What is bounded: a stdout line is read into a buffer of at most
//! [`StdioConfig::max_line_bytes`] ([`MAX_MESSAGE_BYTES`] by default), and
//! a longer one ends the connection with an error; a stderr line keeps its
//! first [`STDERR_LINE_CHARS`] characters (control characters stripped)
//! and the rest of it is read and dropped; notifications go through a
//! broadcast channel of [`NOTIFICATION_CAPACITY`] (a receiver that lags
//! loses the oldest); at most [`WRITE_QUEUE`] messages wait to be written.
//!
//! Lifetime: the child is killed when the last handle is dropped (and
//! `kill_on_drop` covers a runtime that stops first), and it is always
//! waited for, so no zombie is left. The tasks that read its stdout and
//! stderr end when the process ends (one second after, at most, when a
//! child of its own keeps the pipes open), and the one that writes its
//! stdin when the connection is over. On Unix the child leads a process
//! group of its own, and the whole group is killed with it (or after it
//! ends): a process it starts itself (`npx` starts `node`) never outlives
//! the connection.

use crate::rpc;
use crate::tools::Pages;
use crate::transport::{MAX_MESSAGE_BYTES, preview};
use crate::{ClientError, DEFAULT_TIMEOUT, RpcError};
use serde_json::{Map, Value, json};
use sezzlee_protocol::{ErrorCode, HANDSHAKE_VERSIONS, Method, STATELESS_VERSION, notification};
use std::collections::{HashMap, VecDeque};
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::Duration;
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStderr, ChildStdin, ChildStdout, Command};
use tokio::sync::{broadcast, mpsc, oneshot, watch};

/// Characters of one stderr line that are logged (the rest is dropped).
pub const STDERR_LINE_CHARS: usize = 4096;
/// Notifications a [`StdioClient::subscribe`] receiver may fall behind by.
pub const NOTIFICATION_CAPACITY: usize = 64;
/// Messages waiting to be written to the child's stdin.
pub const WRITE_QUEUE: usize = 1024;
/// Environment variables the child keeps from this process, so that
/// `npx`, `node` or `python3` are found by name and find their caches.
pub const INHERITED_VARIABLES: [&str; 2] = ["PATH", "HOME"];
/// How long [`StdioClient::shutdown`] waits after closing stdin.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(2);

/// Bytes of one stderr line kept before it is cut (a character is at most
/// four bytes of UTF-8).
const STDERR_LINE_BYTES: usize = 4 * STDERR_LINE_CHARS;
/// How long the end of stdout and the exit of the process wait for each
/// other, so the reason a connection ended is told fully.
const EXIT_GRACE: Duration = Duration::from_secs(1);
/// How long the reap of a killed process is awaited.
const KILL_WAIT: Duration = Duration::from_secs(5);
/// Last stderr lines kept to explain an unexpected exit.
const STDERR_TAIL: usize = 3;
/// A read buffer larger than this is not kept for the next line.
const KEPT_LINE_CAPACITY: usize = 1024 * 1024;

/// How the client speaks to the process.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum StdioEra {
    /// `initialize` then `notifications/initialized` (the default, also
    /// for `auto`: a stdio server cannot be probed without side effects).
    #[default]
    Handshake,
    /// 2026-07-28: no `initialize`; `_meta` with the protocol version on
    /// every request (`server/discover` is asked once, at start).
    Stateless,
}

/// How to start one server.
#[derive(Debug, Clone)]
pub struct StdioConfig {
    /// For logs and errors: the upstream's file name.
    pub name: String,
    pub command: String,
    pub args: Vec<String>,
    /// The child's whole environment: it starts empty, keeps only
    /// [`INHERITED_VARIABLES`] (`PATH` and `HOME`) from this process, and
    /// gets these on top (which may replace those two).
    pub env: Vec<(String, String)>,
    pub working_dir: Option<PathBuf>,
    pub era: StdioEra,
    /// Time allowed for a request that names none (`initialize`,
    /// `tools/list` pages).
    pub request_timeout: Duration,
    /// Longest stdout line (one message), `\n` not counted; a longer one
    /// ends the connection.
    pub max_line_bytes: usize,
}

impl StdioConfig {
    pub fn new(name: impl Into<String>, command: impl Into<String>) -> StdioConfig {
        StdioConfig {
            name: name.into(),
            command: command.into(),
            args: Vec::new(),
            env: Vec::new(),
            working_dir: None,
            era: StdioEra::default(),
            request_timeout: DEFAULT_TIMEOUT,
            max_line_bytes: MAX_MESSAGE_BYTES,
        }
    }

    pub fn args<I, S>(mut self, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.args.extend(args.into_iter().map(Into::into));
        self
    }

    pub fn env(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.env.push((name.into(), value.into()));
        self
    }

    pub fn working_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.working_dir = Some(dir.into());
        self
    }

    pub fn era(mut self, era: StdioEra) -> Self {
        self.era = era;
        self
    }

    pub fn request_timeout(mut self, timeout: Duration) -> Self {
        self.request_timeout = timeout;
        self
    }

    pub fn max_line_bytes(mut self, bytes: usize) -> Self {
        self.max_line_bytes = bytes;
        self
    }
}

/// A notification the server sent (`notifications/tools/list_changed`,
/// `notifications/progress`, `notifications/message` …): untrusted data.
#[derive(Debug, Clone, PartialEq)]
pub struct Notification {
    pub method: String,
    /// `params` as sent (`null` when absent).
    pub params: Value,
}

/// One connection to one MCP server process. Cheap to clone (the clones
/// share the connection); the process ends when the last clone is
/// dropped, or at [`StdioClient::shutdown`].
#[derive(Clone)]
pub struct StdioClient {
    inner: Arc<Inner>,
}

struct Inner {
    config: StdioConfig,
    shared: Arc<Shared>,
    writer: mpsc::Sender<Outgoing>,
    /// Dropped with the last handle: the supervisor then kills the child.
    kill: mpsc::Sender<()>,
    ids: AtomicI64,
    pid: Option<u32>,
    server_info: OnceLock<Value>,
    protocol_version: OnceLock<String>,
}

/// What the client and its tasks share (the tasks never hold [`Inner`],
/// so dropping the last handle ends the process).
struct Shared {
    name: String,
    state: Mutex<State>,
    /// `true` once the connection is over.
    closed: watch::Sender<bool>,
    /// The process's exit status, once it ended.
    exited: watch::Sender<Option<String>>,
    /// `true` once stderr is read to its end.
    stderr_done: watch::Sender<bool>,
    stderr_tail: Mutex<VecDeque<String>>,
    notifications: broadcast::Sender<Notification>,
    /// [`StdioClient::shutdown`] began: the end is expected, and says so.
    shutting_down: AtomicBool,
}

type Answer = Result<Value, ClientError>;

#[derive(Default)]
struct State {
    pending: HashMap<i64, oneshot::Sender<Answer>>,
    /// Why the connection is over, once it is.
    closed: Option<String>,
}

enum Outgoing {
    /// One message, its `\n` included.
    Line(Vec<u8>),
    /// Close stdin (how a stdio server is asked to end).
    CloseStdin,
}

impl StdioClient {
    /// Starts the process and, in the handshake era, initializes it. Fails
    /// when the process cannot start (the error names the command and the
    /// OS error), ends, or does not answer within `request_timeout`; the
    /// process is then killed.
    pub async fn start(config: StdioConfig) -> Result<StdioClient, ClientError> {
        let mut command = Command::new(&config.command);
        command.args(&config.args).env_clear();
        for name in INHERITED_VARIABLES {
            if let Some(value) = std::env::var_os(name) {
                command.env(name, value);
            }
        }
        for (name, value) in &config.env {
            command.env(name, value);
        }
        if let Some(dir) = &config.working_dir {
            command.current_dir(dir);
        }
        command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        #[cfg(unix)]
        command.process_group(0);
        let mut child = command.spawn().map_err(|err| {
            let dir = config
                .working_dir
                .as_ref()
                .map(|dir| format!(" in {}", dir.display()))
                .unwrap_or_default();
            ClientError::Transport(format!(
                "cannot start upstream '{}': `{}`{dir}: {err}",
                config.name, config.command
            ))
        })?;
        let (Some(stdin), Some(stdout), Some(stderr)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            return Err(ClientError::Transport(format!(
                "upstream '{}' started without its standard streams",
                config.name
            )));
        };
        let pid = child.id();
        let shared = Arc::new(Shared {
            name: config.name.clone(),
            state: Mutex::new(State::default()),
            closed: watch::channel(false).0,
            exited: watch::channel(None).0,
            stderr_done: watch::channel(false).0,
            stderr_tail: Mutex::new(VecDeque::new()),
            notifications: broadcast::channel(NOTIFICATION_CAPACITY).0,
            shutting_down: AtomicBool::new(false),
        });
        let (writer, queue) = mpsc::channel(WRITE_QUEUE);
        let (kill, kill_asked) = mpsc::channel(1);
        tokio::spawn(supervise(child, kill_asked, shared.clone()));
        tokio::spawn(read_stdout(
            stdout,
            shared.clone(),
            writer.clone(),
            config.max_line_bytes,
        ));
        tokio::spawn(read_stderr(stderr, shared.clone()));
        tokio::spawn(write_stdin(stdin, queue, shared.clone()));
        tracing::debug!(upstream = %config.name, pid, "started `{}`", config.command);
        let client = StdioClient {
            inner: Arc::new(Inner {
                config,
                shared,
                writer,
                kill,
                ids: AtomicI64::new(1),
                pid,
                server_info: OnceLock::new(),
                protocol_version: OnceLock::new(),
            }),
        };
        match client.inner.config.era {
            StdioEra::Handshake => client.initialize().await?,
            StdioEra::Stateless => client.discover().await?,
        }
        Ok(client)
    }

    /// `initialize` offering the newest handshake revision (any revision
    /// of [`HANDSHAKE_VERSIONS`] is accepted back), then
    /// `notifications/initialized`.
    async fn initialize(&self) -> Result<(), ClientError> {
        let name = &self.inner.config.name;
        let result = self
            .exchange(
                Method::Initialize.as_str(),
                rpc::initialize_params(HANDSHAKE_VERSIONS[0]),
                self.inner.config.request_timeout,
                // The initialize request is never cancelled (the spec's rule).
                false,
            )
            .await?;
        let chosen = result
            .get("protocolVersion")
            .and_then(Value::as_str)
            .ok_or_else(|| {
                ClientError::Malformed(format!(
                    "the initialize result of upstream '{name}' has no protocolVersion"
                ))
            })?;
        if !HANDSHAKE_VERSIONS.contains(&chosen) {
            return Err(ClientError::Unsupported(format!(
                "upstream '{name}' answered initialize with protocol version {}; this client speaks {}",
                preview(chosen),
                HANDSHAKE_VERSIONS.join(", ")
            )));
        }
        let _ = self.inner.protocol_version.set(chosen.to_string());
        if let Some(info) = result.get("serverInfo") {
            let _ = self.inner.server_info.set(info.clone());
        }
        let initialized = encode(&rpc::notification(notification::INITIALIZED))?;
        self.inner
            .writer
            .send(Outgoing::Line(initialized))
            .await
            .map_err(|_| self.inner.shared.closed_error())
    }

    /// 2026-07-28: `server/discover` once, to learn who answers and that it
    /// speaks this revision (a server without the method is taken as it is).
    async fn discover(&self) -> Result<(), ClientError> {
        let name = &self.inner.config.name;
        let discovered = self
            .request(
                Method::ServerDiscover.as_str(),
                Map::new(),
                self.inner.config.request_timeout,
            )
            .await;
        match discovered {
            Ok(result) => {
                let supported = sezzlee_json::strings(result.get("supportedVersions"));
                if !supported.is_empty() && !supported.iter().any(|v| v == STATELESS_VERSION) {
                    return Err(ClientError::Unsupported(format!(
                        "upstream '{name}' speaks {}, not {STATELESS_VERSION}",
                        preview(&supported.join(", "))
                    )));
                }
                let info = result.get("serverInfo").or_else(|| {
                    result
                        .get("_meta")
                        .and_then(|meta| meta.get(rpc::SERVER_INFO_KEY))
                });
                if let Some(info) = info {
                    let _ = self.inner.server_info.set(info.clone());
                }
            }
            Err(ClientError::Rpc(error)) if error.code == ErrorCode::METHOD_NOT_FOUND => {
                tracing::debug!(upstream = %name, "no server/discover: {}", error.message);
            }
            Err(err) => return Err(err),
        }
        let _ = self
            .inner
            .protocol_version
            .set(STATELESS_VERSION.to_string());
        Ok(())
    }

    /// The child's process id, while it runs.
    pub fn pid(&self) -> Option<u32> {
        if self.inner.shared.exited.borrow().is_some() {
            return None;
        }
        self.inner.pid
    }

    /// `serverInfo` of the initialize (or discover) result, untrusted.
    pub fn server_info(&self) -> Option<Value> {
        self.inner.server_info.get().cloned()
    }

    /// The protocol revision in use.
    pub fn protocol_version(&self) -> Option<&str> {
        self.inner.protocol_version.get().map(String::as_str)
    }

    pub fn config(&self) -> &StdioConfig {
        &self.inner.config
    }

    /// One request; its `result` (an object). A JSON-RPC error is
    /// [`ClientError::Rpc`]; no answer within `timeout` is
    /// [`ClientError::Timeout`], after `notifications/cancelled` is sent.
    /// Dropping the future before the answer sends
    /// `notifications/cancelled` too, so a caller's cancellation reaches
    /// the server.
    pub async fn request(
        &self,
        method: &str,
        params: Map<String, Value>,
        timeout: Duration,
    ) -> Result<Value, ClientError> {
        self.exchange(method, params, timeout, true).await
    }

    async fn exchange(
        &self,
        method: &str,
        params: Map<String, Value>,
        timeout: Duration,
        cancellable: bool,
    ) -> Result<Value, ClientError> {
        let inner = &*self.inner;
        let id = inner.ids.fetch_add(1, Ordering::Relaxed);
        let body = match inner.config.era {
            StdioEra::Handshake => rpc::legacy_body(&json!(id), method, params),
            StdioEra::Stateless => rpc::modern_body(&json!(id), method, params),
        };
        let line = encode(&body)?;
        let (answer, answered) = oneshot::channel();
        inner.shared.register(id, answer)?;
        let mut in_flight = InFlight {
            inner,
            id,
            cancellable,
        };
        let exchange = async {
            inner
                .writer
                .send(Outgoing::Line(line))
                .await
                .map_err(|_| inner.shared.closed_error())?;
            answered.await.map_err(|_| inner.shared.closed_error())?
        };
        match tokio::time::timeout(timeout, exchange).await {
            Ok(outcome) => {
                in_flight.cancellable = false;
                outcome
            }
            Err(_) => {
                in_flight.give_up(&format!("no answer within {} ms", timeout.as_millis()));
                Err(ClientError::Timeout(timeout))
            }
        }
    }

    /// Every page of `tools/list` (following `nextCursor`), the tool
    /// definitions as sent (untrusted). A cursor seen twice, too many pages or
    /// too many bytes is a broken server (`tools::Pages`).
    pub async fn list_tools(&self) -> Result<Vec<Value>, ClientError> {
        let timeout = self.inner.config.request_timeout;
        let mut tools = Vec::new();
        let mut cursor: Option<String> = None;
        let mut pages = Pages::default();
        loop {
            let mut params = Map::new();
            if let Some(cursor) = &cursor {
                params.insert("cursor".to_string(), json!(cursor));
            }
            let mut result = self
                .request(Method::ToolsList.as_str(), params, timeout)
                .await?;
            match pages.take(&mut result, &mut tools)? {
                Some(next) => cursor = Some(next),
                None => return Ok(tools),
            }
        }
    }

    /// `tools/call`: the `CallToolResult` as received (a tool that ran and
    /// failed is a result with `isError`, not an error).
    pub async fn call_tool(
        &self,
        name: &str,
        arguments: Value,
        timeout: Duration,
    ) -> Result<Value, ClientError> {
        let mut params = Map::new();
        params.insert("name".to_string(), json!(name));
        params.insert("arguments".to_string(), arguments);
        self.request(Method::ToolsCall.as_str(), params, timeout)
            .await
    }

    /// The server's notifications from now on. A receiver that falls more
    /// than [`NOTIFICATION_CAPACITY`] behind loses the oldest (it is told
    /// so by `RecvError::Lagged`).
    pub fn subscribe(&self) -> broadcast::Receiver<Notification> {
        self.inner.shared.notifications.subscribe()
    }

    /// Resolves when the connection is over: stdout ended, the process
    /// ended, a line broke the framing, stdin could not be written, or
    /// [`StdioClient::shutdown`]. At once if it already is.
    pub async fn closed(&self) {
        let mut closed = self.inner.shared.closed.subscribe();
        let _ = closed.wait_for(|closed| *closed).await;
    }

    pub fn is_closed(&self) -> bool {
        self.inner.shared.is_closed()
    }

    /// Why the connection is over, once it is.
    pub fn closed_reason(&self) -> Option<String> {
        self.inner.shared.state().closed.clone()
    }

    /// Ends the process: closes its stdin, waits up to [`SHUTDOWN_GRACE`]
    /// for it to exit, then kills it; it is reaped either way. The
    /// connection is over afterwards (requests still waiting fail).
    pub async fn shutdown(&self) {
        let inner = &*self.inner;
        let name = &inner.config.name;
        inner.shared.shutting_down.store(true, Ordering::Relaxed);
        let mut exited = inner.shared.exited.subscribe();
        let graceful = tokio::time::timeout(SHUTDOWN_GRACE, async {
            // A writer that is gone has dropped stdin already.
            let _ = inner.writer.send(Outgoing::CloseStdin).await;
            let _ = exited.wait_for(Option::is_some).await;
        })
        .await;
        if graceful.is_err() {
            tracing::info!(
                upstream = %name,
                "still running {} s after its stdin was closed: killed",
                SHUTDOWN_GRACE.as_secs()
            );
            let _ = inner.kill.try_send(());
            if tokio::time::timeout(KILL_WAIT, exited.wait_for(Option::is_some))
                .await
                .is_err()
            {
                tracing::warn!(upstream = %name, "the killed process was not reaped in time");
            }
        }
        inner.shared.close(String::new(), true);
    }
}

/// A request waiting for its answer. Dropped before the answer came (the
/// caller gave up, or the time ran out), it forgets the request and tells
/// the server with `notifications/cancelled`.
struct InFlight<'a> {
    inner: &'a Inner,
    id: i64,
    cancellable: bool,
}

impl InFlight<'_> {
    fn give_up(&mut self, reason: &str) {
        let was_pending = self.inner.shared.forget(self.id);
        if was_pending && self.cancellable && !self.inner.shared.is_closed() {
            let cancelled = json!({
                "jsonrpc": "2.0",
                "method": notification::CANCELLED,
                "params": {"requestId": self.id, "reason": reason},
            });
            queue(&self.inner.shared, &self.inner.writer, &cancelled);
        }
        self.cancellable = false;
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.give_up("the client no longer waits for the answer");
    }
}

impl Shared {
    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn is_closed(&self) -> bool {
        self.state().closed.is_some()
    }

    fn closed_error(&self) -> ClientError {
        ClientError::Transport(
            self.state()
                .closed
                .clone()
                .unwrap_or_else(|| format!("the connection to upstream '{}' is over", self.name)),
        )
    }

    /// Waits for the answer to `id` (fails at once when the connection is
    /// over).
    fn register(&self, id: i64, answer: oneshot::Sender<Answer>) -> Result<(), ClientError> {
        let mut state = self.state();
        if let Some(reason) = &state.closed {
            return Err(ClientError::Transport(reason.clone()));
        }
        state.pending.insert(id, answer);
        Ok(())
    }

    /// Stops waiting for `id`; whether it was still waited for.
    fn forget(&self, id: i64) -> bool {
        self.state().pending.remove(&id).is_some()
    }

    fn answer(&self, id: i64, answer: Answer) {
        let waiting = self.state().pending.remove(&id);
        match waiting {
            Some(waiting) => {
                let _ = waiting.send(answer);
            }
            None => tracing::debug!(
                upstream = %self.name,
                "an answer to request {id}, which nobody waits for (given up, or never sent)"
            ),
        }
    }

    /// Ends the connection: every waiting request fails with `reason`, and
    /// so will every later one. Only the first call counts; once shutdown
    /// began, the reason is the shutdown.
    fn close(&self, reason: String, expected: bool) {
        let (reason, expected) = if self.shutting_down.load(Ordering::Relaxed) {
            (format!("upstream '{}' was shut down", self.name), true)
        } else {
            (reason, expected)
        };
        let pending = {
            let mut state = self.state();
            if state.closed.is_some() {
                return;
            }
            state.closed = Some(reason.clone());
            std::mem::take(&mut state.pending)
        };
        if expected {
            tracing::info!(upstream = %self.name, "the connection is over: {reason}");
        } else {
            tracing::warn!(upstream = %self.name, "the connection is over: {reason}");
        }
        for (_, waiting) in pending {
            let _ = waiting.send(Err(ClientError::Transport(reason.clone())));
        }
        self.closed.send_replace(true);
    }

    /// Waits (a little) for the process's exit and the end of its stderr,
    /// so that the reason a connection ended can say both.
    async fn settle(&self) {
        let mut exited = self.exited.subscribe();
        let mut stderr_done = self.stderr_done.subscribe();
        let _ = tokio::time::timeout(EXIT_GRACE, async {
            let _ = exited.wait_for(Option::is_some).await;
            let _ = stderr_done.wait_for(|done| *done).await;
        })
        .await;
    }

    /// Why the connection ended, when stdout did: the exit status if known,
    /// and the last lines of stderr.
    fn ending(&self, otherwise: &str) -> String {
        let status = self.exited.borrow().clone();
        let mut reason = match status {
            Some(status) => format!("upstream '{}' exited ({status})", self.name),
            None => format!("upstream '{}' {otherwise}", self.name),
        };
        let tail = self.stderr_tail.lock().unwrap_or_else(|p| p.into_inner());
        if !tail.is_empty() {
            let lines: Vec<&str> = tail.iter().map(String::as_str).collect();
            reason.push_str("; its last stderr lines: ");
            reason.push_str(&lines.join(" | "));
        }
        reason
    }

    fn remember_stderr(&self, line: &str) {
        let mut tail = self.stderr_tail.lock().unwrap_or_else(|p| p.into_inner());
        if tail.len() == STDERR_TAIL {
            tail.pop_front();
        }
        tail.push_back(preview(line));
    }
}

/// A message as one line.
fn encode(message: &Value) -> Result<Vec<u8>, ClientError> {
    // Compact JSON holds no raw newline: strings escape theirs.
    let mut line = serde_json::to_vec(message)
        .map_err(|err| ClientError::Usage(format!("the message cannot be serialized: {err}")))?;
    line.push(b'\n');
    Ok(line)
}

/// Queues a message without waiting (the reader must never block on the
/// writer); a full queue drops it, with a warning.
fn queue(shared: &Shared, writer: &mpsc::Sender<Outgoing>, message: &Value) {
    let line = match encode(message) {
        Ok(line) => line,
        Err(err) => {
            tracing::warn!(upstream = %shared.name, "{err}");
            return;
        }
    };
    if let Err(mpsc::error::TrySendError::Full(_)) = writer.try_send(Outgoing::Line(line)) {
        tracing::warn!(
            upstream = %shared.name,
            "{WRITE_QUEUE} messages already wait for its stdin: dropped {}",
            preview(&message.to_string())
        );
    }
}

/// Owns the child: waits for its exit, or kills it when asked or when the
/// last handle is gone, and reaps it either way.
async fn supervise(mut child: Child, mut kill: mpsc::Receiver<()>, shared: Arc<Shared>) {
    let group = child.id();
    let status = tokio::select! {
        status = child.wait() => status,
        // Asked (shutdown), or every handle dropped.
        _ = kill.recv() => {
            if let Err(err) = child.start_kill() {
                tracing::debug!(upstream = %shared.name, "kill: {err}");
            }
            child.wait().await
        }
    };
    // What it started itself goes with it: its process group (the child
    // leads it), killed once the child is reaped.
    #[cfg(unix)]
    if let Some(group) = group.and_then(|pid| i32::try_from(pid).ok()) {
        use nix::sys::signal::{Signal, killpg};
        match killpg(nix::unistd::Pid::from_raw(group), Signal::SIGKILL) {
            Ok(()) => {
                tracing::debug!(upstream = %shared.name, "killed what the process left running")
            }
            Err(nix::errno::Errno::ESRCH) => {}
            Err(err) => {
                tracing::warn!(upstream = %shared.name, "cannot kill its process group: {err}")
            }
        }
    }
    let status = match status {
        Ok(status) => status.to_string(),
        Err(err) => format!("its status cannot be read: {err}"),
    };
    tracing::debug!(upstream = %shared.name, "the process ended: {status}");
    shared.exited.send_replace(Some(status));
}

/// Resolves [`EXIT_GRACE`] after the process ended: a child of its own may
/// hold the pipes open, and they are not read for it.
async fn after_exit(exited: &mut watch::Receiver<Option<String>>) {
    let _ = exited.wait_for(Option::is_some).await;
    tokio::time::sleep(EXIT_GRACE).await;
}

/// Reads stdout, one message a line, until it ends, breaks the framing or
/// the process is gone; then ends the connection.
async fn read_stdout(
    stdout: ChildStdout,
    shared: Arc<Shared>,
    writer: mpsc::Sender<Outgoing>,
    max_line_bytes: usize,
) {
    let name = shared.name.clone();
    let mut reader = BufReader::with_capacity(64 * 1024, stdout);
    let reading = async {
        let mut line = Vec::new();
        loop {
            match read_line(&mut reader, &mut line, max_line_bytes, false).await {
                Ok(Read::Line | Read::Truncated) => dispatch(&shared, &writer, &line),
                Ok(Read::TooLong) => {
                    return Err(format!(
                        "upstream '{name}' wrote a stdout line longer than {max_line_bytes} bytes; \
                         a message must fit in one"
                    ));
                }
                Ok(Read::Eof) => return Ok(()),
                Err(err) => {
                    return Err(format!(
                        "cannot read the stdout of upstream '{name}': {err}"
                    ));
                }
            }
            if line.capacity() > KEPT_LINE_CAPACITY {
                line = Vec::new();
            }
        }
    };
    let mut exited = shared.exited.subscribe();
    let ended = tokio::select! {
        ended = reading => ended,
        () = after_exit(&mut exited) => Ok(()),
    };
    let reason = match ended {
        Ok(()) => {
            shared.settle().await;
            shared.ending("closed its stdout")
        }
        Err(reason) => reason,
    };
    shared.close(reason, false);
}

/// One stdout line: a message (or a batch of them), else a warning.
fn dispatch(shared: &Shared, writer: &mpsc::Sender<Outgoing>, line: &[u8]) {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    if line.iter().all(u8::is_ascii_whitespace) {
        return;
    }
    match serde_json::from_slice::<Value>(line) {
        Ok(Value::Array(batch)) => {
            for message in batch {
                handle(shared, writer, message);
            }
        }
        Ok(message) => handle(shared, writer, message),
        Err(err) => tracing::warn!(
            upstream = %shared.name,
            "skipped a stdout line that is not JSON ({err}): {}",
            preview_bytes(line)
        ),
    }
}

/// One JSON-RPC message from the server.
fn handle(shared: &Shared, writer: &mpsc::Sender<Outgoing>, mut message: Value) {
    let method = message
        .get("method")
        .and_then(Value::as_str)
        .map(str::to_string);
    match method {
        // A request of the server's: answered at once.
        Some(method) if message.get("id").is_some() => {
            let id = message.get("id").cloned().unwrap_or(Value::Null);
            let response = if method == Method::Ping.as_str() {
                json!({"jsonrpc": "2.0", "id": id, "result": {}})
            } else {
                tracing::debug!(
                    upstream = %shared.name,
                    "refused the server's {} request",
                    preview(&method)
                );
                json!({
                    "jsonrpc": "2.0",
                    "id": id,
                    "error": {"code": ErrorCode::METHOD_NOT_FOUND.value(), "message": "method not found"},
                })
            };
            queue(shared, writer, &response);
        }
        Some(method) => {
            let params = message
                .get_mut("params")
                .map(Value::take)
                .unwrap_or(Value::Null);
            // No receiver is no error: nobody listens yet.
            let _ = shared.notifications.send(Notification { method, params });
        }
        None if message.get("result").is_some() || message.get("error").is_some() => {
            let Some(id) = message.get("id").and_then(request_id) else {
                tracing::warn!(
                    upstream = %shared.name,
                    "skipped a response to no request of ours: {}",
                    preview(&message.to_string())
                );
                return;
            };
            let answer = if message.get("error").is_some() {
                Err(ClientError::Rpc(RpcError::from_message(&message, None)))
            } else {
                match message.get_mut("result").map(Value::take) {
                    Some(result @ Value::Object(_)) => Ok(result),
                    other => Err(ClientError::Malformed(format!(
                        "the result is {}, not an object",
                        other.as_ref().map_or("absent", sezzlee_json::kind_of)
                    ))),
                }
            };
            shared.answer(id, answer);
        }
        None => tracing::warn!(
            upstream = %shared.name,
            "skipped a stdout line that is not a JSON-RPC message: {}",
            preview(&message.to_string())
        ),
    }
}

/// The id of one of our requests (integers; a server that turned it into a
/// string is forgiven).
fn request_id(id: &Value) -> Option<i64> {
    id.as_i64()
        .or_else(|| id.as_str().and_then(|s| s.parse().ok()))
}

/// The start of a line that may be long and may not be UTF-8.
fn preview_bytes(line: &[u8]) -> String {
    let start = &line[..line.len().min(1024)];
    let mut text = preview(&String::from_utf8_lossy(start));
    if start.len() < line.len() && !text.ends_with('…') {
        text.push('…');
    }
    text
}

/// Logs stderr line by line until it ends or the process is gone.
async fn read_stderr(stderr: ChildStderr, shared: Arc<Shared>) {
    let mut reader = BufReader::new(stderr);
    let reading = async {
        let mut line = Vec::new();
        loop {
            let cut = match read_line(&mut reader, &mut line, STDERR_LINE_BYTES, true).await {
                Ok(Read::Line) => false,
                Ok(Read::Truncated | Read::TooLong) => true,
                Ok(Read::Eof) => return,
                Err(err) => {
                    tracing::debug!(upstream = %shared.name, "stderr: {err}");
                    return;
                }
            };
            let line = clean_stderr_line(&line, cut);
            if !line.is_empty() {
                tracing::info!(upstream = %shared.name, "{line}");
                shared.remember_stderr(&line);
            }
        }
    };
    let mut exited = shared.exited.subscribe();
    tokio::select! {
        () = reading => {}
        () = after_exit(&mut exited) => {}
    }
    shared.stderr_done.send_replace(true);
}

/// A stderr line as it is logged: control characters stripped (a tab is a
/// space), at most [`STDERR_LINE_CHARS`] characters, `…` when cut.
fn clean_stderr_line(bytes: &[u8], cut: bool) -> String {
    let text = String::from_utf8_lossy(bytes);
    let mut line = String::new();
    let mut kept = 0;
    let mut cut = cut;
    for c in text.chars() {
        let c = if c == '\t' { ' ' } else { c };
        if c.is_control() {
            continue;
        }
        if kept == STDERR_LINE_CHARS {
            cut = true;
            break;
        }
        line.push(c);
        kept += 1;
    }
    let mut line = line.trim_end().to_string();
    if cut && !line.is_empty() {
        line.push('…');
    }
    line
}

/// Writes queued messages to stdin until the connection is over, stdin is
/// to be closed, or a write fails; stdin is closed when it returns.
async fn write_stdin(
    mut stdin: ChildStdin,
    mut queue: mpsc::Receiver<Outgoing>,
    shared: Arc<Shared>,
) {
    let mut closed = shared.closed.subscribe();
    loop {
        let next = tokio::select! {
            next = queue.recv() => next,
            _ = closed.wait_for(|closed| *closed) => None,
        };
        let Some(Outgoing::Line(line)) = next else {
            break;
        };
        let written = tokio::select! {
            written = async {
                stdin.write_all(&line).await?;
                stdin.flush().await
            } => written,
            _ = closed.wait_for(|closed| *closed) => break,
        };
        if let Err(err) = written {
            // Most often the process is ending: let its exit tell why.
            shared.settle().await;
            let reason = shared.ending(&format!("cannot be written to ({err})"));
            shared.close(reason, false);
            break;
        }
    }
    tracing::debug!(upstream = %shared.name, "stdin closed");
}

/// How a bounded line read ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Read {
    /// A whole line (the last one may lack its `\n`).
    Line,
    /// A line longer than the bound: its start is kept, the rest was read
    /// and dropped (when cutting is allowed).
    Truncated,
    /// A line longer than the bound (when cutting is not allowed): the
    /// reader is left inside it.
    TooLong,
    Eof,
}

/// Reads the next line into `line` (without its `\n`), never holding more
/// than `max` bytes of it.
async fn read_line<R: AsyncBufRead + Unpin>(
    reader: &mut R,
    line: &mut Vec<u8>,
    max: usize,
    cut: bool,
) -> std::io::Result<Read> {
    line.clear();
    let mut over = false;
    loop {
        let (used, ended) = {
            let available = reader.fill_buf().await?;
            if available.is_empty() {
                return Ok(if over {
                    Read::Truncated
                } else if line.is_empty() {
                    Read::Eof
                } else {
                    Read::Line
                });
            }
            let newline = available.iter().position(|b| *b == b'\n');
            let part = &available[..newline.unwrap_or(available.len())];
            let room = max.saturating_sub(line.len());
            if part.len() > room {
                if !cut {
                    return Ok(Read::TooLong);
                }
                line.extend_from_slice(&part[..room]);
                over = true;
            } else {
                line.extend_from_slice(part);
            }
            (
                newline.map_or(available.len(), |at| at + 1),
                newline.is_some(),
            )
        };
        reader.consume(used);
        if ended {
            return Ok(if over { Read::Truncated } else { Read::Line });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    #[tokio::test]
    async fn lines_are_read_within_their_bound() {
        let input: &[u8] = b"one\r\ntwo\n\nthree-is-long\nfour";
        let mut reader = BufReader::with_capacity(4, input);
        let mut line = Vec::new();
        let mut lines = Vec::new();
        loop {
            let read = read_line(&mut reader, &mut line, 5, true).await.unwrap();
            if read == Read::Eof {
                break;
            }
            lines.push((read, String::from_utf8(line.clone()).unwrap()));
        }
        assert_eq!(
            lines,
            vec![
                (Read::Line, "one\r".to_string()),
                (Read::Line, "two".to_string()),
                (Read::Line, String::new()),
                (Read::Truncated, "three".to_string()),
                (Read::Line, "four".to_string()),
            ]
        );
        let input: &[u8] = b"short\nmuch-too-long\n";
        let mut reader = BufReader::with_capacity(3, input);
        assert_eq!(
            read_line(&mut reader, &mut line, 8, false).await.unwrap(),
            Read::Line
        );
        assert_eq!(
            read_line(&mut reader, &mut line, 8, false).await.unwrap(),
            Read::TooLong
        );
        assert!(line.len() <= 8);
        let exact: &[u8] = b"12345678\n";
        let mut reader = BufReader::new(exact);
        assert_eq!(
            read_line(&mut reader, &mut line, 8, false).await.unwrap(),
            Read::Line
        );
    }

    #[test]
    fn stderr_lines_are_cleaned_and_bounded() {
        assert_eq!(
            clean_stderr_line(b"\x1b[31mred\x07\tand\r", false),
            "[31mred and"
        );
        assert_eq!(clean_stderr_line(b"\x00\x01 ", false), "");
        let long = "é".repeat(STDERR_LINE_CHARS + 10);
        let cleaned = clean_stderr_line(long.as_bytes(), false);
        assert_eq!(cleaned.chars().count(), STDERR_LINE_CHARS + 1);
        assert!(cleaned.ends_with('…'));
        assert_eq!(clean_stderr_line(b"start", true), "start…");
        assert_eq!(
            clean_stderr_line(b"\xff\xfe ok", false),
            "\u{fffd}\u{fffd} ok"
        );
    }

    /// The fixture server's interpreter, or `None` (the test then skips).
    fn python() -> Option<String> {
        let output = std::process::Command::new("python3")
            .args(["-c", "import sys; print(sys.executable)"])
            .output()
            .ok()?;
        let path = String::from_utf8(output.stdout).ok()?.trim().to_string();
        (output.status.success() && !path.is_empty()).then_some(path)
    }

    fn fixture(python: &str, modes: &[&str]) -> StdioConfig {
        let script = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/stdio_server.py"
        );
        StdioConfig::new("fixture.yaml", python)
            .args([script])
            .args(modes.iter().copied())
            .request_timeout(Duration::from_secs(10))
    }

    macro_rules! python_or_skip {
        () => {
            match python() {
                Some(python) => python,
                None => {
                    // Under CI (.ci/run installs python3) a skip is a failure.
                    assert!(std::env::var("CI").is_err(), "python3 is missing under CI");
                    println!("SKIPPED: python3 not found");
                    return;
                }
            }
        };
    }

    const LONG: Duration = Duration::from_secs(10);

    async fn start(python: &str, modes: &[&str]) -> StdioClient {
        StdioClient::start(fixture(python, modes)).await.unwrap()
    }

    async fn structured(client: &StdioClient, tool: &str) -> Value {
        let result = client.call_tool(tool, json!({}), LONG).await.unwrap();
        result["structuredContent"].clone()
    }

    fn text(result: &Value) -> &str {
        result["content"][0]["text"].as_str().unwrap_or_default()
    }

    /// Whether the process `pid` is gone (reaped, not a zombie).
    fn gone(pid: u32) -> bool {
        !std::path::Path::new(&format!("/proc/{pid}")).exists()
    }

    /// Processes of this user running the fixture in `--never-answer` mode
    /// (zombies included).
    fn silent_servers() -> usize {
        let Ok(entries) = std::fs::read_dir("/proc") else {
            return 0;
        };
        entries
            .flatten()
            .filter_map(|entry| std::fs::read(entry.path().join("cmdline")).ok())
            .filter(|cmdline| {
                let cmdline = String::from_utf8_lossy(cmdline);
                cmdline.contains("stdio_server.py") && cmdline.contains("--never-answer")
            })
            .count()
    }

    async fn wait_gone(pid: u32) -> bool {
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if gone(pid) {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        false
    }

    #[tokio::test]
    async fn handshake_and_every_page_of_tools() {
        let python = python_or_skip!();
        let client = start(&python, &[]).await;
        assert_eq!(client.protocol_version(), Some(HANDSHAKE_VERSIONS[0]));
        assert_eq!(client.server_info().unwrap()["name"], "stdio-fixture");
        assert!(client.pid().is_some());
        let tools = client.list_tools().await.unwrap();
        let names: Vec<&str> = tools.iter().filter_map(|t| t["name"].as_str()).collect();
        assert_eq!(names.len(), 10, "{names:?}");
        assert!(names.contains(&"echo") && names.contains(&"seen"));
        let seen = structured(&client, "seen").await;
        assert_eq!(
            seen["methods"],
            json!(["initialize", "tools/list", "tools/list", "tools/call"])
        );
        client.shutdown().await;
    }

    #[tokio::test]
    async fn an_older_revision_is_accepted_and_an_unknown_one_refused() {
        let python = python_or_skip!();
        let client = start(&python, &["--version=2025-03-26"]).await;
        assert_eq!(client.protocol_version(), Some("2025-03-26"));
        client.shutdown().await;
        let refused = StdioClient::start(fixture(&python, &["--version=1999-01-01"])).await;
        assert!(
            matches!(&refused, Err(ClientError::Unsupported(why)) if why.contains("1999-01-01")),
            "{:?}",
            refused.err()
        );
    }

    #[tokio::test]
    async fn calls_are_answered_concurrently() {
        let python = python_or_skip!();
        let client = start(&python, &[]).await;
        let result = client
            .call_tool("echo", json!({"text": "hello\nworld"}), LONG)
            .await
            .unwrap();
        assert_eq!(text(&result), "hello\nworld");
        let calls = (0..40).map(|n| {
            let client = client.clone();
            async move {
                let result = client
                    .call_tool("echo", json!({"text": format!("n{n}")}), LONG)
                    .await
                    .unwrap();
                assert_eq!(text(&result), format!("n{n}"));
            }
        });
        futures_util::future::join_all(calls).await;
        let unknown = client.request("no/such", Map::new(), LONG).await;
        assert!(
            matches!(&unknown, Err(ClientError::Rpc(e)) if e.code == -32601),
            "{unknown:?}"
        );
        let failed = client
            .call_tool("no_such_tool", json!({}), LONG)
            .await
            .unwrap();
        assert_eq!(failed["isError"], true);
        client.shutdown().await;
    }

    #[tokio::test]
    async fn a_timeout_and_a_dropped_call_send_cancelled() {
        let python = python_or_skip!();
        let client = start(&python, &[]).await;
        let timeout = Duration::from_millis(300);
        let started = Instant::now();
        let timed_out = client
            .call_tool("slow", json!({"seconds": 20}), timeout)
            .await;
        assert_eq!(timed_out, Err(ClientError::Timeout(timeout)));
        assert!(started.elapsed() < Duration::from_secs(5));
        let seen = structured(&client, "cancelled_count").await;
        assert_eq!(seen["count"], 1, "{seen}");
        assert!(seen["cancelled"][0]["requestId"].is_i64());
        assert!(
            seen["cancelled"][0]["reason"]
                .as_str()
                .unwrap()
                .contains("300 ms")
        );
        // A caller that stops waiting cancels too.
        tokio::select! {
            _ = client.call_tool("slow", json!({"seconds": 20}), LONG) => panic!("answered"),
            () = tokio::time::sleep(Duration::from_millis(300)) => {}
        }
        let seen = structured(&client, "cancelled_count").await;
        assert_eq!(seen["count"], 2, "{seen}");
        assert_ne!(
            seen["cancelled"][0]["requestId"],
            seen["cancelled"][1]["requestId"]
        );
        client.shutdown().await;
    }

    #[tokio::test]
    async fn notifications_reach_subscribers() {
        let python = python_or_skip!();
        let client = start(&python, &[]).await;
        let mut notifications = client.subscribe();
        let added = client
            .call_tool("make_change", json!({}), LONG)
            .await
            .unwrap();
        assert_eq!(text(&added), "added_1");
        let changed = tokio::time::timeout(LONG, notifications.recv())
            .await
            .unwrap()
            .unwrap();
        assert_eq!(changed.method, notification::TOOLS_LIST_CHANGED);
        let tools = client.list_tools().await.unwrap();
        assert!(tools.iter().any(|t| t["name"] == "added_1"));
        // Progress is passed on as it came.
        let mut params = Map::new();
        params.insert("name".to_string(), json!("echo"));
        params.insert("arguments".to_string(), json!({"text": "x"}));
        params.insert("_meta".to_string(), json!({"progressToken": "tok-1"}));
        client.request("tools/call", params, LONG).await.unwrap();
        let progress = tokio::time::timeout(LONG, notifications.recv())
            .await
            .unwrap()
            .unwrap();
        assert_eq!(progress.method, "notifications/progress");
        assert_eq!(progress.params["progressToken"], "tok-1");
        client.shutdown().await;
    }

    #[tokio::test]
    async fn requests_of_the_server_are_answered() {
        let python = python_or_skip!();
        let client = start(&python, &[]).await;
        let asked = structured(&client, "ask_client").await;
        assert_eq!(asked["ping"]["result"], json!({}));
        assert_eq!(asked["ping"]["id"], "server-1");
        assert_eq!(asked["roots"]["error"]["code"], -32601);
        assert_eq!(asked["roots"]["id"], "server-2");
        client.shutdown().await;
    }

    #[tokio::test]
    async fn an_exit_fails_every_waiting_request() {
        let python = python_or_skip!();
        let client = start(&python, &[]).await;
        let pid = client.pid().unwrap();
        let slow = client.call_tool("slow", json!({"seconds": 30}), LONG);
        let exit = async {
            tokio::time::sleep(Duration::from_millis(200)).await;
            client.call_tool("exit", json!({"code": 4}), LONG).await
        };
        let started = Instant::now();
        let (slow, exit) = tokio::join!(slow, exit);
        assert!(started.elapsed() < Duration::from_secs(5));
        for failed in [slow, exit] {
            assert!(
                matches!(&failed, Err(ClientError::Transport(why)) if why.contains("exited (exit status: 4)")),
                "{failed:?}"
            );
        }
        tokio::time::timeout(LONG, client.closed()).await.unwrap();
        assert!(client.is_closed());
        assert_eq!(client.pid(), None);
        assert!(wait_gone(pid).await);
        let started = Instant::now();
        let later = client.call_tool("echo", json!({}), LONG).await;
        assert!(matches!(later, Err(ClientError::Transport(_))), "{later:?}");
        assert!(started.elapsed() < Duration::from_millis(100));
    }

    #[tokio::test]
    async fn an_exit_after_initialization_closes_the_connection() {
        let python = python_or_skip!();
        let client = start(&python, &["--exit-after-init"]).await;
        tokio::time::timeout(LONG, client.closed()).await.unwrap();
        let reason = client.closed_reason().unwrap();
        assert!(reason.contains("exit status: 3"), "{reason}");
        assert!(reason.contains("exiting after initialization"), "{reason}");
        let listed = client.list_tools().await;
        assert!(matches!(listed, Err(ClientError::Transport(_))));
    }

    #[tokio::test]
    async fn garbage_is_skipped_and_an_overlong_line_closes() {
        let python = python_or_skip!();
        let config = fixture(&python, &["--garbage"]).max_line_bytes(64 * 1024);
        let client = StdioClient::start(config).await.unwrap();
        let echoed = client
            .call_tool("echo", json!({"text": "still here"}), LONG)
            .await
            .unwrap();
        assert_eq!(text(&echoed), "still here");
        // A line within the bound that is not JSON is skipped.
        let after = client
            .call_tool("long_line", json!({"bytes": 60_000}), LONG)
            .await
            .unwrap();
        assert_eq!(text(&after), "after the long line");
        let over = client
            .call_tool("long_line", json!({"bytes": 100_000}), LONG)
            .await;
        assert!(
            matches!(&over, Err(ClientError::Transport(why)) if why.contains("longer than 65536 bytes")),
            "{over:?}"
        );
        tokio::time::timeout(LONG, client.closed()).await.unwrap();
        assert!(client.closed_reason().unwrap().contains("fixture.yaml"));
        client.shutdown().await;
    }

    #[tokio::test]
    async fn dropping_the_last_handle_ends_the_process() {
        let python = python_or_skip!();
        let client = start(&python, &[]).await;
        let pid = client.pid().unwrap();
        let other = client.clone();
        drop(client);
        let echoed = other
            .call_tool("echo", json!({"text": "alive"}), LONG)
            .await
            .unwrap();
        assert_eq!(text(&echoed), "alive");
        drop(other);
        assert!(wait_gone(pid).await, "process {pid} outlived its client");
    }

    #[tokio::test]
    async fn shutdown_closes_stdin_then_kills() {
        let python = python_or_skip!();
        let client = start(&python, &[]).await;
        let pid = client.pid().unwrap();
        let started = Instant::now();
        client.shutdown().await;
        assert!(
            started.elapsed() < SHUTDOWN_GRACE,
            "{:?}",
            started.elapsed()
        );
        assert!(gone(pid));
        assert!(client.is_closed());
        let later = client.call_tool("echo", json!({}), LONG).await;
        assert!(matches!(&later, Err(ClientError::Transport(why)) if why.contains("shut down")));
        // A server that outlives its stdin is killed.
        let stubborn = start(&python, &[]).await;
        let pid = stubborn.pid().unwrap();
        stubborn
            .call_tool("ignore_eof", json!({}), LONG)
            .await
            .unwrap();
        let started = Instant::now();
        stubborn.shutdown().await;
        assert!(started.elapsed() >= SHUTDOWN_GRACE);
        assert!(gone(pid));
        stubborn.closed().await;
    }

    /// Whether `pid` no longer runs: gone, or a zombie nobody reaped yet
    /// (an orphan's reaper may be slow, or absent in a container).
    fn not_running(pid: u32) -> bool {
        match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
            Err(_) => true,
            Ok(stat) => stat
                .rsplit_once(')')
                .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
        }
    }

    /// `npx` starts `node`: what the server starts itself is killed with
    /// it, at shutdown and when it ends on its own.
    #[cfg(unix)]
    #[tokio::test]
    async fn what_the_server_started_goes_with_it() {
        let python = python_or_skip!();
        let script = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/stdio_server.py"
        );
        let folder = std::env::temp_dir().join(format!("sezzlee-group-{}", std::process::id()));
        std::fs::create_dir_all(&folder).unwrap();
        for (round, ends) in [("shutdown", false), ("exit", true)] {
            let marker = folder.join(round);
            let command = format!(
                "sleep 300 & echo $! > '{}'; exec '{python}' '{script}'",
                marker.display()
            );
            let client = StdioClient::start(
                StdioConfig::new("group.yaml", "sh")
                    .args(["-c", command.as_str()])
                    .request_timeout(LONG),
            )
            .await
            .unwrap();
            let sleeper: u32 = std::fs::read_to_string(&marker)
                .unwrap()
                .trim()
                .parse()
                .unwrap();
            assert!(!not_running(sleeper), "{round}: the grandchild runs");
            if ends {
                let _ = client.call_tool("exit", json!({}), LONG).await;
                client.closed().await;
            } else {
                client.shutdown().await;
            }
            let deadline = Instant::now() + Duration::from_secs(5);
            while !not_running(sleeper) && Instant::now() < deadline {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            assert!(
                not_running(sleeper),
                "{round}: the grandchild {sleeper} outlived the server"
            );
        }
        let _ = std::fs::remove_dir_all(&folder);
    }

    #[tokio::test]
    async fn a_command_that_cannot_start_is_named() {
        let failed =
            StdioClient::start(StdioConfig::new("missing.yaml", "/nonexistent/mcp-server")).await;
        let Err(ClientError::Transport(why)) = failed else {
            panic!("{:?}", failed.err());
        };
        assert!(why.contains("missing.yaml"), "{why}");
        assert!(why.contains("/nonexistent/mcp-server"), "{why}");
        assert!(why.contains("No such file"), "{why}");
    }

    #[tokio::test]
    async fn a_silent_server_times_out() {
        let python = python_or_skip!();
        let timeout = Duration::from_millis(500);
        let started = Instant::now();
        let failed =
            StdioClient::start(fixture(&python, &["--never-answer"]).request_timeout(timeout))
                .await;
        assert_eq!(failed.err(), Some(ClientError::Timeout(timeout)));
        assert!(started.elapsed() < Duration::from_secs(3));
        // The process that did not answer is killed and reaped.
        let deadline = Instant::now() + LONG;
        while silent_servers() > 0 {
            assert!(Instant::now() < deadline, "the silent server still runs");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    #[tokio::test]
    async fn the_environment_is_only_what_is_given() {
        let python = python_or_skip!();
        let dir = std::env::temp_dir();
        let config = fixture(&python, &[])
            .env("FIXTURE_GREETING", "hi")
            .working_dir(&dir);
        let client = StdioClient::start(config).await.unwrap();
        let environment = structured(&client, "environment").await;
        assert_eq!(environment["values"]["FIXTURE_GREETING"], "hi");
        assert_eq!(
            environment["values"]["PATH"].as_str(),
            std::env::var("PATH").ok().as_deref()
        );
        // Python may add LC_CTYPE itself (PEP 538); nothing else is inherited.
        let allowed = ["PATH", "HOME", "FIXTURE_GREETING", "LC_CTYPE"];
        for name in environment["names"].as_array().unwrap() {
            assert!(
                allowed.contains(&name.as_str().unwrap()),
                "{name} reached the child"
            );
        }
        let cwd = std::path::PathBuf::from(environment["cwd"].as_str().unwrap());
        assert_eq!(cwd.canonicalize().unwrap(), dir.canonicalize().unwrap());
        client.shutdown().await;
    }

    #[tokio::test]
    async fn the_stateless_era_sends_meta_and_no_initialize() {
        let python = python_or_skip!();
        let config = fixture(&python, &["--stateless"]).era(StdioEra::Stateless);
        let client = StdioClient::start(config).await.unwrap();
        assert_eq!(client.protocol_version(), Some(STATELESS_VERSION));
        assert_eq!(client.server_info().unwrap()["name"], "stdio-fixture");
        // The fixture refuses any request without the _meta version.
        assert_eq!(client.list_tools().await.unwrap().len(), 10);
        let echoed = client
            .call_tool("echo", json!({"text": "modern"}), LONG)
            .await
            .unwrap();
        assert_eq!(text(&echoed), "modern");
        let seen = structured(&client, "seen").await;
        assert_eq!(
            seen["methods"],
            json!([
                "server/discover",
                "tools/list",
                "tools/list",
                "tools/call",
                "tools/call"
            ])
        );
        client.shutdown().await;
        // The handshake era against it: initialize is refused.
        let refused = StdioClient::start(fixture(&python, &["--stateless"])).await;
        assert!(
            matches!(&refused, Err(ClientError::Rpc(e)) if e.code == -32601),
            "{:?}",
            refused.err()
        );
    }
}
