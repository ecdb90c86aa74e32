//! `sezzlee serve`: load the catalog, bind, serve until a signal, then
//! shut down gracefully.
//!
//! A sidecar with an invalid configuration stops the start (exit code 2,
//! naming the file and key): serving a catalog without the configuration
//! its owner wrote would be a surprise. On SIGTERM/SIGINT the gateway stops
//! accepting, closes listen streams with their graceful result and lets
//! in-flight calls finish within the grace period.

use crate::catalog::diagnostics::codes;
use crate::catalog::{Severity, Sources};
use crate::gateway::Gateway;
use crate::reload::{self, Reloader};
use crate::settings::Settings;
use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::Arc;
use tokio::net::TcpListener;

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
            tracing::error!(
                "cannot read catalogs folder {}: {err}",
                settings.catalogs.display()
            );
            return Err(ExitCode::from(2));
        }
    };
    let served = gateway.store.current();
    let refused: Vec<_> = served
        .catalog
        .diagnostics
        .iter()
        .filter(|d| d.code == codes::INVALID_CONFIGURATION && d.severity == Severity::Error)
        .filter(|d| crate::catalog::source::is_sidecar(&d.file))
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
pub async fn serve(gateway: Arc<Gateway>, listener: TcpListener) -> std::io::Result<()> {
    let address = listener.local_addr()?;
    let _ = gateway.self_url.set(format!("http://{address}"));
    tracing::info!(
        "sezzlee listening on http://{address}{}",
        gateway.settings.endpoint
    );
    let app = crate::mcp::http::router(gateway.clone());
    let grace = gateway.settings.shutdown_grace;
    let signalled = gateway.clone();
    axum::serve(
        listener,
        app.into_make_service_with_connect_info::<SocketAddr>(),
    )
    .with_graceful_shutdown(async move {
        shutdown_signal().await;
        tracing::info!("shutting down: closing listen streams, finishing in-flight calls");
        signalled.begin_shutdown();
        let deadline = signalled.clone();
        tokio::spawn(async move {
            tokio::time::sleep(grace).await;
            tracing::warn!("grace period over; exiting with calls still in flight");
            drop(deadline);
            std::process::exit(0);
        });
    })
    .await
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
