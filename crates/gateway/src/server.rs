//! `sezzlee serve`: load the catalog, bind, serve until a signal, then
//! shut down gracefully.
//!
//! A sidecar with an invalid configuration stops the start (exit code 2,
//! naming the file and key): serving a catalog without the configuration
//! its owner wrote would be a surprise. On SIGTERM/SIGINT the gateway stops
//! accepting, closes listen streams with their graceful result and lets
//! in-flight calls finish within the grace period.
//!
//! Connections are served by hyper's HTTP/1.1 server connection, driven by
//! our own accept loop (`hyper_util`'s `GracefulShutdown` for the graceful
//! part) rather than `axum::serve`: an idle connection, and so an idle
//! listen stream, then holds one 8 KiB read buffer instead of 16 KiB and a
//! smaller task (`benches/listen_fanout.rs` measures it). HTTP/2 is not
//! served: axum is built with `http1` only.

use crate::gateway::Gateway;
use crate::reload::{self, Reloader};
use crate::settings::Settings;
use axum::body::Body;
use axum::extract::ConnectInfo;
use axum::http::Request;
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use sezzlee_catalog::diagnostics::codes;
use sezzlee_catalog::{Severity, Sources};
use std::process::ExitCode;
use std::sync::Arc;
use tokio::net::TcpListener;
use tower_service::Service as _;

/// Runs the gateway; returns the process exit code.
pub async fn run(settings: Settings) -> ExitCode {
    let (gateway, sources) = match load_checked(settings.clone()) {
        Ok(loaded) => loaded,
        Err(code) => return code,
    };
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
    if let Err(why) = crate::auth::Authenticator::from_settings(settings.auth.as_ref()) {
        tracing::error!("configuration error: {why}");
        eprintln!("sezzlee serve: configuration error: {why}");
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
            eprintln!("sezzlee serve: configuration error: {diagnostic}");
        }
        return Err(ExitCode::from(2));
    }
    for diagnostic in &served.catalog.diagnostics {
        tracing::warn!("{diagnostic}");
    }
    tracing::info!(
        tools = served.catalog.tools().len(),
        documents = served.catalog.documents.len(),
        "catalog loaded"
    );
    drop(served);
    Ok((gateway, sources))
}

/// Serves on a bound listener until a shutdown signal.
///
/// Each accepted connection is served by hyper's HTTP/1.1 connection
/// directly (not axum's `serve`, whose version-detecting builder reads the
/// first bytes ahead, which makes hyper grow every connection's read buffer
/// from 8 to 16 KiB, and whose task also holds an HTTP/2 state): an idle
/// listen stream costs the least the stack allows. The peer address is
/// given to the router as [`ConnectInfo`], as `axum::serve` does.
pub async fn serve(gateway: Arc<Gateway>, listener: TcpListener) -> std::io::Result<()> {
    let address = listener.local_addr()?;
    let _ = gateway.self_url.set(format!("http://{address}"));
    tracing::info!(
        "sezzlee listening on http://{address}{}",
        gateway.settings.endpoint
    );
    gateway.auth.start(gateway.shutdown.subscribe());
    let app = crate::router::router(gateway.clone());
    let connections = GracefulShutdown::new();
    let mut http = http1::Builder::new();
    // Without a timer hyper applies no header timeout at all: a client
    // could hold a socket open forever with half a request.
    http.timer(TokioTimer::new())
        .header_read_timeout(gateway.settings.header_read_timeout);
    let signal = shutdown_signal();
    tokio::pin!(signal);
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            () = &mut signal => break,
        };
        let (stream, peer) = match accepted {
            Ok(accepted) => accepted,
            Err(err) => {
                accept_failed(err).await;
                continue;
            }
        };
        let router = app.clone();
        let service = service_fn(move |request: Request<Incoming>| {
            let mut request = request.map(Body::new);
            request.extensions_mut().insert(ConnectInfo(peer));
            router.clone().call(request)
        });
        let connection = connections.watch(http.serve_connection(TokioIo::new(stream), service));
        tokio::spawn(async move {
            if let Err(err) = connection.await {
                tracing::trace!("connection from {peer}: {err}");
            }
        });
    }
    drop(listener);
    tracing::info!("shutting down: closing listen streams, finishing in-flight calls");
    gateway.begin_shutdown();
    let grace = gateway.settings.shutdown_grace;
    let deadline = gateway.clone();
    tokio::spawn(async move {
        tokio::time::sleep(grace).await;
        tracing::warn!("grace period over; exiting with calls still in flight");
        drop(deadline);
        std::process::exit(0);
    });
    connections.shutdown().await;
    Ok(())
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

async fn shutdown_signal() {
    let ctrl_c = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        let mut term =
            match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                Ok(term) => term,
                Err(_) => {
                    let _ = ctrl_c.await;
                    return;
                }
            };
        tokio::select! {
            _ = ctrl_c => {}
            _ = term.recv() => {}
        }
    }
    #[cfg(not(unix))]
    {
        let _ = ctrl_c.await;
    }
}
