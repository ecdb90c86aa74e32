//! `sezzlee serve`: load the catalog, bind, serve until a signal, then
//! shut down gracefully.
//!
//! A sidecar with an invalid configuration stops the start (exit code 2,
//! naming the file and key): serving a catalog without the configuration
//! its owner wrote would be a surprise. On SIGTERM/SIGINT the gateway
//! drains (not ready, still serving), closes listen streams with their
//! graceful result, stops accepting, lets its connections close after
//! their next answer and in-flight calls finish within the grace period
//! ([`serve`]).
//!
//! Connections are served by hyper's HTTP/1.1 server connection, driven by
//! our own accept loop (`hyper_util`'s `GracefulShutdown` for the graceful
//! part) rather than `axum::serve`: an idle connection, and so an idle
//! listen stream, then holds one 8 KiB read buffer instead of 16 KiB and a
//! smaller task (`benches/listen_fanout.rs` measures it). HTTP/2 is not
//! served: axum is built with `http1` only.
//!
//! A request must arrive in time: its head within `header_read_timeout`
//! (hyper's header timeout, which also closes idle keep-alive
//! connections), and its body within as long again of its head
//! ([`BodyDeadline`]). Without the second bound a caller could announce a
//! body, send part of it and stop, and hold the connection and the part
//! received (up to the body limit) for as long as it liked
//! (`tests/it/flood.rs`).

use crate::gateway::Gateway;
use crate::reload::{self, Reloader};
use crate::serving_threads::ServingThreads;
use crate::settings::Settings;
use axum::body::Body;
use axum::extract::ConnectInfo;
use axum::http::{HeaderValue, Request, header};
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use sezzlee_catalog::diagnostics::codes;
use sezzlee_catalog::{Severity, Sources};
use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::net::{TcpListener, TcpStream};
use tower_service::Service as _;

/// Runs the gateway; returns the process exit code.
pub async fn run(settings: Settings) -> ExitCode {
    let (gateway, sources) = match load_checked(settings.clone()) {
        Ok(loaded) => loaded,
        Err(code) => return code,
    };
    // Shared limits need their Redis from the start: a gateway that would
    // count alone while its replicas share is refused, not started.
    if let Err(why) = gateway.limits.connect_shared().await {
        tracing::error!("configuration error: limits.redis_url: Redis does not answer: {why}");
        return ExitCode::from(2);
    }
    let listener = match TcpListener::bind(gateway.settings.listen).await {
        Ok(listener) => listener,
        Err(err) => {
            tracing::error!("cannot listen on {}: {err}", gateway.settings.listen);
            return ExitCode::from(2);
        }
    };
    let reloader = Reloader::new(gateway.clone(), sources);
    let _watcher = reload::start(reloader);
    match serve(gateway, listener).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            tracing::error!("server error: {err}");
            ExitCode::from(1)
        }
    }
}

/// Loads the catalog; a sidecar with an invalid configuration (or an
/// unreadable folder) stops the start with exit code 2.
pub fn load_checked(settings: Settings) -> Result<(Arc<Gateway>, Sources), ExitCode> {
    if let Err(why) =
        crate::auth::Authenticator::from_settings(settings.auth.as_ref(), &settings.environment)
    {
        tracing::error!("configuration error: {why}");
        return Err(ExitCode::from(2));
    }
    let (gateway, sources) = match Gateway::load(settings.clone()) {
        Ok(loaded) => loaded,
        Err(err) => {
            tracing::error!("{err}");
            return Err(ExitCode::from(2));
        }
    };
    let served = gateway.store.current();
    let refused: Vec<_> = served
        .catalog
        .diagnostics
        .iter()
        .filter(|d| d.code == codes::INVALID_CONFIGURATION && d.severity == Severity::Error)
        .filter(|d| sezzlee_catalog::source::is_sidecar(&d.file))
        .collect();
    if !refused.is_empty() {
        for diagnostic in refused {
            tracing::error!("configuration error: {diagnostic}");
        }
        return Err(ExitCode::from(2));
    }
    for diagnostic in &served.catalog.diagnostics {
        match diagnostic.severity {
            Severity::Error => tracing::error!("{diagnostic}"),
            Severity::Warning => tracing::warn!("{diagnostic}"),
        }
    }
    tracing::info!(
        tools = served.catalog.tools().len(),
        documents = served.catalog.documents.len(),
        "catalog loaded"
    );
    drop(served);
    Ok((gateway, sources))
}

/// Serves on a bound listener until a shutdown signal, then drains and
/// stops.
///
/// Each accepted connection is served by hyper's HTTP/1.1 connection
/// directly (not axum's `serve`, whose version-detecting builder reads the
/// first bytes ahead, which makes hyper grow every connection's read buffer
/// from 8 to 16 KiB, and whose task also holds an HTTP/2 state): an idle
/// listen stream costs the least the stack allows. The peer address is
/// given to the router as [`ConnectInfo`], as `axum::serve` does.
///
/// Shutdown, on SIGTERM or SIGINT, never closes a connection a client may
/// be sending a request on: a proxy cannot tell a POST closed unread from
/// one that ran, so it answers 502 (measured behind nginx in
/// `tests/it/rolling_update.rs`). In steps:
/// 1. **Drain** (`shutdown_drain`): listen streams get their closing
///    result and `/readyz` answers 503; otherwise the gateway serves as
///    before, accepting and keeping connections alive, so that load
///    balancers and Kubernetes (whose endpoints follow with a delay) move
///    callers away while nothing is refused.
/// 2. **Close**: the connections already queued are accepted, then the
///    listener closes (a new connection is refused, which a proxy retries
///    elsewhere); every response now carries `Connection: close`, and the
///    gateway waits, at most `shutdown_drain` again, for its connections to
///    close: each after its next answer, idle ones when their client
///    closes them (a proxy's idle timeout shorter than the drain closes
///    them all).
/// 3. Connections still idle are closed, and in-flight calls finish
///    within `shutdown_grace` (counted from the listener's close); then
///    the process exits regardless.
///
/// A second signal cuts the drain and the wait short.
pub async fn serve(gateway: Arc<Gateway>, listener: TcpListener) -> std::io::Result<()> {
    let address = listener.local_addr()?;
    let _ = gateway.self_url.set(format!("http://{address}"));
    let _ = gateway.bound.set(address);
    // Before the address is logged: a signal sent as soon as it is read
    // must find its handler, not the default action (death).
    let mut signals = Signals::new();
    tracing::info!(
        "sezzlee listening on http://{address}{}",
        gateway.settings.endpoint
    );
    gateway.auth.start(gateway.shutdown.signal());
    let connections = Connections::new(&gateway)?;
    tracing::info!(
        "at most {} connections at once (open-files limit {})",
        gateway.settings.max_connections,
        crate::open_files::limit().map_or("none".to_string(), |limit| limit.to_string())
    );
    loop {
        let accepted = tokio::select! {
            accepted = connections.accept(&listener) => accepted,
            () = signals.next() => break,
        };
        connections.accepted(accepted).await;
    }
    let drain = gateway.settings.shutdown_drain;
    tracing::info!(
        "shutting down: draining for {} ms (readyz 503, still serving), closing listen streams",
        drain.as_millis()
    );
    gateway.begin_shutdown();
    let mut second_signal = false;
    let drained = tokio::time::sleep(drain);
    tokio::pin!(drained);
    loop {
        let accepted = tokio::select! {
            biased;
            () = &mut drained => break,
            () = signals.next() => {
                second_signal = true;
                break;
            }
            accepted = connections.accept(&listener) => accepted,
        };
        connections.accepted(accepted).await;
    }

    connections.closing.store(true, Ordering::Relaxed);
    // Those queued, as far as the cap lets (the rest are refused with the
    // listener, which a proxy retries elsewhere).
    while connections.open() < connections.max {
        let queued = tokio::select! {
            biased;
            accepted = listener.accept() => accepted,
            () = std::future::ready(()) => break,
        };
        connections.accepted(queued).await;
    }
    drop(listener);
    let grace = gateway.settings.shutdown_grace;
    let deadline = gateway.clone();
    tokio::spawn(async move {
        tokio::time::sleep(grace).await;
        tracing::warn!("grace period over; exiting with calls still in flight");
        drop(deadline);
        std::process::exit(0);
    });
    if !second_signal {
        tracing::info!(
            "listener closed; waiting up to {} ms for {} connection(s) to close",
            drain.as_millis(),
            connections.open()
        );
        tokio::select! {
            () = connections.all_closed() => {}
            () = tokio::time::sleep(drain) => {}
            () = signals.next() => {}
        }
    }
    tracing::info!(
        "closing idle connections; in-flight calls finish within {} ms",
        grace.as_millis()
    );
    connections.watcher.shutdown().await;
    Ok(())
}

/// The connections being served: the router, the gateway (whose metrics
/// count every response by status as it leaves: every route and every
/// refusal the router makes; not what hyper answers itself, such as a
/// malformed request head), hyper's connection settings, the
/// graceful-shutdown watcher of every connection, how many are open, and
/// whether the gateway is closing (then every response closes its
/// connection).
struct Connections {
    app: axum::Router,
    /// Where each response is counted by status.
    gateway: Arc<Gateway>,
    http: http1::Builder,
    watcher: GracefulShutdown,
    closing: Arc<AtomicBool>,
    open: tokio::sync::watch::Sender<usize>,
    /// How long a request's body may take to arrive after its head.
    body_deadline: Duration,
    /// Where connections are served.
    threads: ServingThreads,
    /// `max_connections`.
    max: usize,
}

impl Connections {
    fn new(gateway: &Arc<Gateway>) -> std::io::Result<Connections> {
        let mut http = http1::Builder::new();
        // Without a timer hyper applies no header timeout at all: a client
        // could hold a socket open forever with half a request.
        http.timer(TokioTimer::new())
            .header_read_timeout(gateway.settings.header_read_timeout);
        let threads = ServingThreads::start(gateway.settings.serve_threads)?;
        // Their tasks are the connections: `/status` and `/metrics` count
        // them with the rest.
        for handle in threads.handles() {
            gateway.metrics.watch_runtime(handle);
        }
        Ok(Connections {
            app: crate::router::router(gateway.clone()),
            gateway: gateway.clone(),
            http,
            watcher: GracefulShutdown::new(),
            closing: Arc::new(AtomicBool::new(false)),
            open: gateway.connections.clone(),
            max: gateway.settings.max_connections.max(1),
            body_deadline: gateway.settings.header_read_timeout,
            threads,
        })
    }

    fn open(&self) -> usize {
        *self.open.borrow()
    }

    /// The next connection, once fewer than `max_connections` are open
    /// (until then callers wait in the listen backlog). Cancel-safe.
    async fn accept(&self, listener: &TcpListener) -> std::io::Result<(TcpStream, SocketAddr)> {
        if self.open() >= self.max {
            tracing::warn!(
                "{} connections open, the most allowed (max_connections): accepting again when one closes",
                self.max
            );
            let mut open = self.open.subscribe();
            let _ = open.wait_for(|open| *open < self.max).await;
        }
        listener.accept().await
    }

    /// Resolves once no connection is open.
    async fn all_closed(&self) {
        let mut open = self.open.subscribe();
        let _ = open.wait_for(|open| *open == 0).await;
    }

    /// Serves an accepted connection on its own task on a serving thread;
    /// a failed accept is handled by [`accept_failed`].
    async fn accepted(&self, accepted: std::io::Result<(TcpStream, SocketAddr)>) {
        let (stream, peer) = match accepted {
            Ok(accepted) => accepted,
            Err(err) => return accept_failed(err).await,
        };
        // The socket moves to the serving thread's own event loop.
        let stream = match stream.into_std() {
            Ok(stream) => stream,
            Err(err) => {
                tracing::debug!("connection from {peer} dropped before it was served: {err}");
                return;
            }
        };
        let router = self.app.clone();
        let closing = self.closing.clone();
        let gateway = self.gateway.clone();
        let body_deadline = self.body_deadline;
        let service = service_fn(move |request: Request<Incoming>| {
            let mut request = request.map(|body| Body::new(BodyDeadline::new(body, body_deadline)));
            request.extensions_mut().insert(ConnectInfo(peer));
            let answer = router.clone().call(request);
            let closing = closing.clone();
            let gateway = gateway.clone();
            async move {
                let mut response = answer.await?;
                gateway.metrics.http_response(response.status().as_u16());
                if closing.load(Ordering::Relaxed) {
                    response
                        .headers_mut()
                        .insert(header::CONNECTION, HeaderValue::from_static("close"));
                }
                Ok::<_, Infallible>(response)
            }
        });
        let watcher = self.watcher.watcher();
        let http = self.http.clone();
        self.open.send_modify(|open| *open += 1);
        let open = self.open.clone();
        self.threads.spawn(async move {
            match TcpStream::from_std(stream) {
                Ok(stream) => {
                    let connection =
                        watcher.watch(http.serve_connection(TokioIo::new(stream), service));
                    if let Err(err) = connection.await {
                        tracing::trace!("connection from {peer}: {err}");
                    }
                }
                Err(err) => tracing::debug!("connection from {peer} could not be served: {err}"),
            }
            open.send_modify(|open| *open -= 1);
        });
    }
}

/// A request body that fails once `limit` has passed since its head was
/// read without the whole body having arrived: the handler's read of it
/// fails (`400`, "Unreadable request body"), and the connection, its body
/// unread, closes after that answer. The timer starts only if the body is
/// not already there when first read (small bodies come with their head).
struct BodyDeadline {
    body: Incoming,
    limit: Duration,
    deadline: tokio::time::Instant,
    timer: Option<Pin<Box<tokio::time::Sleep>>>,
}

impl BodyDeadline {
    fn new(body: Incoming, limit: Duration) -> BodyDeadline {
        BodyDeadline {
            body,
            limit,
            deadline: tokio::time::Instant::now() + limit,
            timer: None,
        }
    }
}

impl hyper::body::Body for BodyDeadline {
    type Data = axum::body::Bytes;
    type Error = Box<dyn std::error::Error + Send + Sync>;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<hyper::body::Frame<Self::Data>, Self::Error>>> {
        let this = &mut *self;
        if let Poll::Ready(frame) = Pin::new(&mut this.body).poll_frame(cx) {
            return Poll::Ready(frame.map(|frame| frame.map_err(Into::into)));
        }
        let deadline = this.deadline;
        let timer = this
            .timer
            .get_or_insert_with(|| Box::pin(tokio::time::sleep_until(deadline)));
        match timer.as_mut().poll(cx) {
            Poll::Ready(()) => Poll::Ready(Some(Err(format!(
                "the request body did not arrive within {} ms of its head",
                this.limit.as_millis()
            )
            .into()))),
            Poll::Pending => Poll::Pending,
        }
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> hyper::body::SizeHint {
        self.body.size_hint()
    }
}

/// A failed `accept`: a connection that went away before it was accepted
/// is skipped; anything else (e.g. too many open files) is logged and
/// retried a second later, as `axum::serve` does.
async fn accept_failed(err: std::io::Error) {
    use std::io::ErrorKind;
    if matches!(
        err.kind(),
        ErrorKind::ConnectionRefused | ErrorKind::ConnectionAborted | ErrorKind::ConnectionReset
    ) {
        return;
    }
    tracing::error!("accept error: {err}");
    tokio::time::sleep(std::time::Duration::from_secs(1)).await;
}

/// SIGTERM and SIGINT, registered once so that a second signal is told
/// from the first.
struct Signals {
    #[cfg(unix)]
    terminate: Option<tokio::signal::unix::Signal>,
    #[cfg(unix)]
    interrupt: Option<tokio::signal::unix::Signal>,
}

impl Signals {
    fn new() -> Signals {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{SignalKind, signal};
            let register = |kind: SignalKind, name: &str| match signal(kind) {
                Ok(signal) => Some(signal),
                Err(err) => {
                    tracing::error!("cannot listen for {name}: {err}");
                    None
                }
            };
            Signals {
                terminate: register(SignalKind::terminate(), "SIGTERM"),
                interrupt: register(SignalKind::interrupt(), "SIGINT"),
            }
        }
        #[cfg(not(unix))]
        Signals {}
    }

    /// The next SIGTERM or SIGINT.
    async fn next(&mut self) {
        #[cfg(unix)]
        {
            async fn on(signal: &mut Option<tokio::signal::unix::Signal>) {
                let received = match signal {
                    Some(signal) => signal.recv().await.is_some(),
                    None => false,
                };
                if !received {
                    std::future::pending::<()>().await;
                }
            }
            tokio::select! {
                () = on(&mut self.terminate) => {}
                () = on(&mut self.interrupt) => {}
            }
        }
        #[cfg(not(unix))]
        {
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}
