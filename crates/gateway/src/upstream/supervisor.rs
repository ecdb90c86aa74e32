//! One upstream file's supervisor: connects (starting the process, for
//! stdio), lists every page of the server's tools, then waits for a reason
//! to list again — the server's `notifications/tools/list_changed` (over
//! stdio, or a 2026-07-28 `subscriptions/listen` stream over HTTP), the
//! relist interval, or a call that found the server gone. A failure drops
//! the connection (a stdio process is stopped) and reconnects with
//! back-off (0.1 s doubling to 30 s); the last good listing stays what the
//! catalog serves meanwhile. Stopped when its file goes or changes, or at
//! shutdown; a stdio process never outlives its supervisor.

use super::{Connection, Upstream};
use crate::environment::Environment;
use crate::visibility::Caller;
use sezzlee_catalog::sidecar::BackendAuthMode;
use sezzlee_catalog::upstream::{DEFAULT_RELIST_SECONDS, EraChoice, Transport};
use sezzlee_client::listen::ListenOptions;
use sezzlee_client::{
    Client, ClientConfig, ListenEvent, StdioClient, StdioConfig, stdio::StdioEra,
};
use sezzlee_protocol::notification;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, SystemTime};
use tokio::sync::{Notify, broadcast};

/// First wait after a failure; doubled per failure in a row (a server
/// that crashed once is back within a tenth of a second; one that keeps
/// crashing waits longer and longer).
const FIRST_BACKOFF: Duration = Duration::from_millis(100);
/// Longest wait between two attempts.
const MAX_BACKOFF: Duration = Duration::from_secs(30);

/// What a supervisor works with.
pub(super) struct Context {
    pub upstream: Arc<Upstream>,
    pub catalogs: PathBuf,
    pub environment: Environment,
    pub credentials: Option<Arc<crate::backend::credentials::Credentials>>,
    /// Woken when the listing (or the problem) changed.
    pub changed: Arc<Notify>,
}

/// Why serving a connection ended.
enum Ended {
    Stopped,
    Lost(String),
}

pub(super) async fn run(context: Context) {
    let file = context.upstream.file.clone();
    let mut stop = context.upstream.stop.subscribe();
    let mut backoff = FIRST_BACKOFF;
    loop {
        if *stop.borrow() {
            break;
        }
        let connected = tokio::select! {
            connected = connect(&context) => connected,
            _ = stop.changed() => break,
        };
        let ended = match connected {
            Err(why) => Ended::Lost(why),
            Ok((connection, version, pid)) => {
                {
                    let mut state = context.upstream.state();
                    state.connects += 1;
                    state.protocol_version = version;
                    state.pid = pid;
                }
                let ended = match list(&context, &connection).await {
                    Err(why) => Ended::Lost(why),
                    Ok(()) => {
                        {
                            let mut state = context.upstream.state();
                            state.connection = Some(connection.clone());
                            state.attempts += 1;
                        }
                        backoff = FIRST_BACKOFF;
                        tracing::info!(upstream = %file, "connected to the MCP server and listed its tools");
                        serve(&context, &connection, &mut stop).await
                    }
                };
                {
                    let mut state = context.upstream.state();
                    state.connection = None;
                    state.pid = None;
                }
                if let Connection::Stdio(client) = &connection {
                    client.shutdown().await;
                }
                ended
            }
        };
        match ended {
            Ended::Stopped => break,
            Ended::Lost(why) => {
                context.upstream.state().attempts += 1;
                tracing::warn!(upstream = %file, "the MCP server is unavailable: {why}; trying again in {} ms", backoff.as_millis());
                set_problem(&context, Some(why));
            }
        }
        tokio::select! {
            () = tokio::time::sleep(backoff) => {}
            _ = stop.changed() => break,
        }
        backoff = (backoff * 2).min(MAX_BACKOFF);
    }
    let connection = context.upstream.state().connection.take();
    if let Some(Connection::Stdio(client)) = connection {
        client.shutdown().await;
    }
    tracing::debug!(upstream = %file, "supervisor stopped");
}

/// Connects: the connection, the protocol version agreed, the process id.
async fn connect(context: &Context) -> Result<(Connection, Option<String>, Option<u32>), String> {
    let spec = &context.upstream.spec;
    let timeout = request_timeout(context);
    match spec.transport() {
        Some(Transport::Http { url }) => {
            let era = match spec.era {
                EraChoice::Auto => sezzlee_client::EraChoice::Auto,
                EraChoice::Stateless => sezzlee_client::EraChoice::Modern,
                EraChoice::Handshake => sezzlee_client::EraChoice::Legacy,
            };
            let mut config = ClientConfig::new(url).timeout(timeout).era(era);
            for (name, value) in &spec.backend.headers {
                let value = crate::backend::expand_env(value, None, &context.environment)
                    .map_err(|unset| format!("header {name}: {unset}"))?;
                config = config.header(name.clone(), value);
            }
            // Listing has no caller: with `clientCredentials` the gateway's
            // own token goes on every request (a call's own credential,
            // if any, replaces it on that call).
            if let Some(auth) = spec
                .backend
                .auth
                .as_ref()
                .filter(|auth| auth.mode == BackendAuthMode::ClientCredentials)
            {
                let credentials = context
                    .credentials
                    .as_ref()
                    .ok_or("no HTTP client for the token endpoint could be made")?;
                let value = credentials
                    .authorization(Some(auth), false, &Caller::anonymous())
                    .await
                    .map_err(|why| format!("no token to list the server with: {}", why.message))?;
                if let Some(value) = value {
                    config = config.header("Authorization", value);
                }
            }
            let client = Client::new(config).map_err(|err| err.to_string())?;
            let negotiated = client.connect().await.map_err(|err| err.to_string())?;
            Ok((
                Connection::Http(Arc::new(client)),
                Some(negotiated.protocol_version),
                None,
            ))
        }
        Some(Transport::Stdio { command, args }) => {
            let mut config = StdioConfig::new(context.upstream.file.to_string(), command)
                .args(args.iter().cloned())
                .request_timeout(timeout)
                .working_dir(working_dir(context))
                .era(match spec.era {
                    EraChoice::Stateless => StdioEra::Stateless,
                    EraChoice::Auto | EraChoice::Handshake => StdioEra::Handshake,
                });
            for (name, variable) in &spec.env {
                let value = context.environment.var(variable).ok_or_else(|| {
                    format!("the environment variable {variable} (for {name}) is not set")
                })?;
                config = config.env(name.clone(), value);
            }
            let client = StdioClient::start(config)
                .await
                .map_err(|err| err.to_string())?;
            let version = client.protocol_version().map(str::to_string);
            let pid = client.pid();
            Ok((Connection::Stdio(client), version, pid))
        }
        None => Err("the file names neither url nor command".to_string()),
    }
}

/// A stdio server's working folder: `workingDir` relative to its file's
/// folder, else that folder.
fn working_dir(context: &Context) -> PathBuf {
    let file = context.catalogs.join(&*context.upstream.file);
    let folder = file
        .parent()
        .map_or_else(|| context.catalogs.clone(), PathBuf::from);
    match &context.upstream.spec.working_dir {
        Some(dir) => folder.join(dir),
        None => folder,
    }
}

fn request_timeout(context: &Context) -> Duration {
    crate::backend::call_timeout(&context.upstream.spec.backend)
}

/// Lists every page and records it (waking the reloader when it differs).
async fn list(context: &Context, connection: &Connection) -> Result<(), String> {
    let (tools, refused) = connection
        .list_tools()
        .await
        .map_err(|err| format!("tools/list failed: {err}"))?;
    let changed = {
        let mut state = context.upstream.state();
        let changed = state.tools.as_deref() != Some(&tools)
            || state.refused != refused
            || state.problem.is_some();
        state.tools = Some(Arc::new(tools));
        state.refused = refused;
        state.problem = None;
        state.last_listed = Some(SystemTime::now());
        changed
    };
    if changed {
        context.changed.notify_one();
    }
    Ok(())
}

fn set_problem(context: &Context, problem: Option<String>) {
    let changed = {
        let mut state = context.upstream.state();
        let changed = state.problem != problem;
        state.problem = problem;
        changed
    };
    if changed {
        context.changed.notify_one();
    }
}

/// Waits for reasons to list again until the connection is lost or the
/// supervisor is stopped.
async fn serve(
    context: &Context,
    connection: &Connection,
    stop: &mut tokio::sync::watch::Receiver<bool>,
) -> Ended {
    let relist = Duration::from_secs(
        context
            .upstream
            .spec
            .relist_seconds
            .unwrap_or(DEFAULT_RELIST_SECONDS),
    );
    match connection {
        Connection::Stdio(client) => {
            let mut notes = client.subscribe();
            loop {
                let relist_now = tokio::select! {
                    note = notes.recv() => match note {
                        Ok(note) => note.method == notification::TOOLS_LIST_CHANGED,
                        Err(broadcast::error::RecvError::Lagged(_)) => true,
                        Err(broadcast::error::RecvError::Closed) => {
                            return Ended::Lost(closed_reason(client));
                        }
                    },
                    () = client.closed() => return Ended::Lost(closed_reason(client)),
                    () = tokio::time::sleep(relist) => true,
                    () = context.upstream.check.notified() => true,
                    _ = stop.changed() => return Ended::Stopped,
                };
                if relist_now && let Err(why) = list(context, connection).await {
                    return Ended::Lost(why);
                }
            }
        }
        Connection::Http(client) => serve_http(context, connection, client, relist, stop).await,
    }
}

async fn serve_http(
    context: &Context,
    connection: &Connection,
    client: &Client,
    relist: Duration,
    stop: &mut tokio::sync::watch::Receiver<bool>,
) -> Ended {
    // A 2026-07-28 server announces changes on a listen stream, one of the
    // handshake era on its GET stream; a server that offers neither is
    // listed again on the interval.
    let file = &context.upstream.file;
    let era = client.negotiated().await.map(|n| n.era);
    let mut listener = match era {
        Some(sezzlee_client::Era::Modern) => match client.listen(ListenOptions::default()).await {
            Ok(listener) => Some(listener),
            Err(err) => {
                tracing::info!(upstream = %file, "no listen stream ({err}); listing again every {} s", relist.as_secs());
                None
            }
        },
        _ => None,
    };
    let mut server_stream = match era {
        Some(sezzlee_client::Era::Legacy) => match client.server_stream().await {
            Ok(Some(stream)) => Some(stream),
            Ok(None) => {
                tracing::info!(upstream = %file, "the server offers no notification stream; listing again every {} s", relist.as_secs());
                None
            }
            Err(err) => {
                tracing::info!(upstream = %file, "no notification stream ({err}); listing again every {} s", relist.as_secs());
                None
            }
        },
        _ => None,
    };
    // What the server says in the streams of the gateway's own requests
    // (a tool that changed the tools, called through the gateway).
    let mut replies = Some(client.notifications());
    loop {
        let next_reply = async {
            match replies.as_mut() {
                Some(replies) => replies.recv().await,
                None => std::future::pending().await,
            }
        };
        let next_event = async {
            match listener.as_mut() {
                Some(listener) => listener.next().await,
                None => std::future::pending().await,
            }
        };
        let next_message = async {
            match server_stream.as_mut() {
                Some(stream) => stream.next_message().await,
                None => std::future::pending().await,
            }
        };
        let relist_now = tokio::select! {
            note = next_reply => match note {
                Ok(note) => {
                    note.get("method").and_then(serde_json::Value::as_str)
                        == Some(notification::TOOLS_LIST_CHANGED)
                }
                Err(broadcast::error::RecvError::Lagged(_)) => true,
                Err(broadcast::error::RecvError::Closed) => {
                    replies = None;
                    false
                }
            },
            message = next_message => match message {
                Some(Ok(message)) => {
                    message.get("method").and_then(serde_json::Value::as_str)
                        == Some(notification::TOOLS_LIST_CHANGED)
                }
                // The stream ended or broke: the interval takes over, and
                // a change may have been missed.
                Some(Err(_)) | None => {
                    server_stream = None;
                    true
                }
            },
            event = next_event => match event {
                Some(Ok(ListenEvent::Notification { method, .. })) => {
                    method == notification::TOOLS_LIST_CHANGED
                }
                // Reconnected streams may have missed a change.
                Some(Ok(ListenEvent::Reconnecting { .. })) => true,
                Some(Ok(ListenEvent::Acknowledged { .. })) => false,
                Some(Ok(ListenEvent::Closed)) | Some(Err(_)) | None => {
                    listener = None;
                    true
                }
            },
            () = tokio::time::sleep(relist) => true,
            () = context.upstream.check.notified() => true,
            _ = stop.changed() => return Ended::Stopped,
        };
        if relist_now && let Err(why) = list(context, connection).await {
            return Ended::Lost(why);
        }
    }
}

fn closed_reason(client: &StdioClient) -> String {
    client
        .closed_reason()
        .unwrap_or_else(|| "the process ended".to_string())
}
