//! The running gateway's shared state: settings, the catalog store, the
//! backend client, open listen streams and the shutdown signal.
//!
//! Built once at start-up and shared by every request through one `Arc`;
//! no other global state exists.

use crate::auth::Authenticator;
use crate::backend::BackendClient;
use crate::embedding::Embedder;
use crate::settings::Settings;
use crate::shutdown::Shutdown;
use crate::store::{Snapshot, Store};
use crate::streams::Registry;
use crate::tools::PerToolCache;
use sezzlee_catalog::{Catalog, Sources};
use sezzlee_semantic::{DiskCache, ModelError, TextModel};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;
use tokio::sync::watch;

/// Why a gateway could not be built.
#[derive(Debug)]
pub enum StartError {
    /// The catalogs folder could not be read.
    Catalogs { dir: PathBuf, error: std::io::Error },
    /// The backend HTTP clients could not be made (why, in words: the TLS
    /// stack could not start).
    Backend(String),
    /// The configured search model could not be loaded.
    SearchModel(ModelError),
}

impl std::fmt::Display for StartError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StartError::Catalogs { dir, error } => {
                write!(f, "cannot read catalogs folder {}: {error}", dir.display())
            }
            StartError::Backend(error) => {
                write!(f, "cannot create the backend HTTP client: {error}")
            }
            StartError::SearchModel(error) => write!(f, "{error}"),
        }
    }
}

impl std::error::Error for StartError {}

pub struct Gateway {
    pub settings: Settings,
    /// Verifies the credentials requests carry.
    pub auth: Authenticator,
    pub store: Arc<Store>,
    /// Ranks tools by meaning besides keywords (`search_model`): the
    /// model, loaded once and shared by every snapshot, its vector cache
    /// and the thread that embeds tool texts in the background.
    pub embedder: Option<Arc<Embedder>>,
    pub backend: BackendClient,
    pub streams: Arc<Registry>,
    /// What the last generations changed (`GET /changes`).
    pub changes: crate::changes::ChangeHistory,
    /// The last reloads, whatever they did (the console's Overview).
    pub reloads: crate::reload_history::ReloadHistory,
    /// `http://HOST:PORT` once bound: `${SEZZLEE_SELF}` in backend URLs.
    pub self_url: std::sync::OnceLock<String>,
    /// The address bound (`listen` may ask for port 0), once bound.
    pub bound: std::sync::OnceLock<std::net::SocketAddr>,
    /// When the gateway began loading its catalog (uptime on `/status`).
    pub started: Instant,
    /// Flips to `true` once shutdown begins.
    pub shutdown: Shutdown,
    /// Calls of the tools and the backends, counted and timed.
    pub metrics: crate::metrics::Metrics,
    /// Connections open now (the server counts them; at
    /// `max_connections` it accepts no more until one closes).
    pub connections: watch::Sender<usize>,
    /// Rates per caller, and what spares struggling backends.
    pub limits: crate::limits::Limits,
    /// The rate per address on the MCP endpoint, before a request is read.
    pub flood_guard: Arc<crate::flood_guard::FloodGuard>,
    /// The upstream MCP servers the catalogs folder names, supervised.
    pub upstreams: Arc<crate::upstream::Upstreams>,
}

impl Gateway {
    /// What one of the three tools needs to run for `caller` on `snapshot`
    /// (the MCP endpoint's calls and the console's searches alike).
    pub fn tool_context<'a>(
        &'a self,
        snapshot: &'a crate::store::Snapshot,
        caller: &'a crate::visibility::Caller,
    ) -> crate::tools::Context<'a> {
        crate::tools::Context {
            snapshot,
            caller,
            budget: self.settings.response_budget,
            backend: &self.backend,
            self_url: self.self_url.get().map(String::as_str),
            metrics: &self.metrics,
            upstreams: &self.upstreams,
            limits: &self.limits,
        }
    }

    /// What the OAuth challenge and metadata need of this gateway.
    pub fn resource(&self) -> crate::auth::resource::Resource<'_> {
        crate::auth::resource::Resource {
            auth: &self.auth,
            listen: self.settings.listen,
            endpoint: &self.settings.endpoint,
        }
    }

    /// A gateway serving `catalog` as generation 0.
    pub fn new(
        settings: Settings,
        catalog: Catalog,
        build: std::time::Duration,
    ) -> Result<Arc<Gateway>, StartError> {
        // The catalog's first build is the first thing a gateway does.
        let started = Instant::now()
            .checked_sub(build)
            .unwrap_or_else(Instant::now);
        let shutdown = Shutdown::new();
        // Fail closed: with auth configured but unloadable, every caller is
        // anonymous (server::load_checked refuses to start in that case).
        let auth = Authenticator::from_settings(settings.auth.as_ref(), &settings.environment)
            .unwrap_or_else(|why| {
                tracing::error!("auth configuration: {why}; every caller is treated as anonymous");
                Authenticator::deny_all()
            });
        let backend = BackendClient::new(
            settings.max_response_bytes,
            settings.serve_threads,
            settings.environment.clone(),
        )
        .map_err(StartError::Backend)?;
        let search_model: Option<Arc<Embedder>> = match &settings.search_model {
            Some(folder) => {
                let model = TextModel::load(folder).map_err(StartError::SearchModel)?;
                let digests: Vec<String> = model
                    .file_digests()
                    .iter()
                    .map(|(file, digest)| format!("{file}={digest}"))
                    .collect();
                tracing::info!(
                    folder = %folder.display(),
                    dimensions = model.dimensions(),
                    sha256 = %digests.join(" "),
                    "search model loaded"
                );
                let cache = settings.vector_cache.as_ref().and_then(|root| {
                    match DiskCache::open(
                        root,
                        model.digest(),
                        model.dimensions(),
                        sezzlee_semantic::cache::DEFAULT_LIMIT_BYTES,
                    ) {
                        Ok((cache, opened)) => {
                            for damaged in &opened.damaged {
                                tracing::warn!(
                                    folder = %cache.folder().display(),
                                    "vector cache: segment {damaged} was damaged (removed; its texts are embedded again)"
                                );
                            }
                            tracing::info!(
                                folder = %cache.folder().display(),
                                vectors = cache.len(),
                                "vector cache opened"
                            );
                            Some(cache)
                        }
                        Err(err) => {
                            tracing::warn!(
                                folder = %root.display(),
                                "vector cache cannot be used: {err}; tool vectors live in memory only"
                            );
                            None
                        }
                    }
                });
                Some(Arc::new(Embedder::new(Arc::new(model), cache)))
            }
            None => {
                tracing::info!("no search model: search ranks by keywords alone");
                None
            }
        };
        let prepared = PerToolCache::new(&catalog, search_model.as_deref());
        let reloads = crate::reload_history::ReloadHistory::default();
        reloads.record(crate::reload_history::Reload {
            at: std::time::SystemTime::now() - build,
            trigger: crate::reload_history::Trigger::Start,
            result: "new generation",
            generation: 0,
            duration: build,
            files_built: catalog.report.files_built,
            files_reused: catalog.report.files_reused,
            detail: None,
        });
        let gateway = Arc::new(Gateway {
            reloads,
            auth,
            backend,
            store: Arc::new(Store::new(
                Snapshot::with_per_tool(catalog, prepared, 0, build)
                    .with_search_cache(settings.search_cache_bytes),
            )),
            embedder: search_model,
            limits: crate::limits::Limits::new(settings.limits.clone()),
            changes: crate::changes::ChangeHistory::new(settings.change_history),
            flood_guard: Arc::new(crate::flood_guard::FloodGuard::new(
                settings.limits.requests_per_second_per_address,
            )),
            upstreams: Arc::new(crate::upstream::Upstreams::new(
                settings.catalogs.clone(),
                settings.environment.clone(),
            )),
            settings,
            streams: Arc::new(Registry::default()),
            shutdown,
            self_url: std::sync::OnceLock::new(),
            bound: std::sync::OnceLock::new(),
            started,
            metrics: crate::metrics::Metrics::default(),
            connections: watch::Sender::new(0),
        });
        if let Some(embedder) = &gateway.embedder {
            start_embedding(embedder.clone());
        }
        Ok(gateway)
    }

    /// Builds the catalog from the configured folder, then the gateway.
    pub fn load(settings: Settings) -> Result<(Arc<Gateway>, Sources), StartError> {
        let started = Instant::now();
        let mut sources =
            Sources::scan(&settings.catalogs, None).map_err(|error| StartError::Catalogs {
                dir: settings.catalogs.clone(),
                error,
            })?;
        let catalog = Catalog::build_with(&sources, &settings.build_options());
        // The documents are kept compressed and parsed again when a rebuild
        // needs them.
        sources.release_parsed();
        let gateway = Gateway::new(settings, catalog, started.elapsed())?;
        Ok((gateway, sources))
    }

    /// Starts shutdown: listen streams send their closing result and end;
    /// the embedding thread writes what it holds to the cache and stops.
    pub fn begin_shutdown(&self) {
        self.shutdown.begin();
        if let Some(embedder) = &self.embedder {
            embedder.stop();
        }
    }
}

/// The thread that embeds tool texts in the background: each batch is
/// filled into the newest table assembled (`Embedder::run`).
fn start_embedding(embedder: Arc<Embedder>) {
    let spawned = std::thread::Builder::new()
        .name("sezzlee-embed".into())
        .spawn(move || embedder.run());
    if let Err(err) = spawned {
        tracing::error!("cannot start the embedding thread: {err}; search ranks by keywords alone");
    }
}
