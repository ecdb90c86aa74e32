//! Live catalogs: watch the folder, rebuild off the request path, swap.
//!
//! Any file-system event under the catalogs folder (or SIGHUP, or the
//! polling timer) schedules a rescan after a quiet period (the debounce),
//! so every way editors and orchestrators change files (rename over,
//! truncate-then-write, several chunks, a moved folder, a ConfigMap's
//! `..data` symlink swap) ends in one rescan of the settled folder. Files
//! whose bytes did not change are not parsed again; a file that stops
//! parsing keeps its last good version. The generation goes up only when
//! something an agent can observe changed.
//!
//! Nothing but the rebuild stands between a rescan and the swap: the
//! diagnostics are logged after it, and only those that are new (a folder
//! of thousands of documents carries tens of thousands that every reload
//! would repeat), and the replaced catalog and the parses the sources
//! forgot are freed off the path too.

use crate::gateway::Gateway;
use crate::settings::WatchMode;
use crate::store::Served;
use notify::{RecursiveMode, Watcher};
use sezzlee_catalog::source::Released;
use sezzlee_catalog::{BuildReport, Catalog, Diagnostic, Diagnostics, Severity, Sources};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::Notify;

/// Longest a burst of events can postpone a rescan.
const MAX_DELAY: Duration = Duration::from_secs(2);
/// A safety net: rescan this often even without events (cheap: unchanged
/// files are hashed, not parsed), for events a watcher can miss, such as
/// the catalogs folder itself being replaced.
const SAFETY_RESCAN: Duration = Duration::from_secs(30);

/// What one rescan did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// No file changed.
    Unchanged,
    /// Files changed but nothing an agent can observe: swapped, same generation.
    Swapped,
    /// Swapped with a new generation.
    Bumped(u64),
    /// The folder could not be read; the served catalog stays.
    Failed,
}

/// The reloader's state: the last sources read (for hash reuse).
pub struct Reloader {
    gateway: Arc<Gateway>,
    sources: tokio::sync::Mutex<Sources>,
}

impl Reloader {
    pub fn new(gateway: Arc<Gateway>, sources: Sources) -> Arc<Reloader> {
        Arc::new(Reloader {
            gateway,
            sources: tokio::sync::Mutex::new(sources),
        })
    }

    /// Rescans the folder and swaps in the result when it differs.
    pub async fn rescan(&self) -> Outcome {
        let mut sources = self.sources.lock().await;
        let previous = sources.clone();
        let gateway = self.gateway.clone();
        let started = Instant::now();
        let rebuilt =
            tokio::task::spawn_blocking(move || rebuild_and_swap(&gateway, previous, started))
                .await;
        let (next, swapped) = match rebuilt {
            Ok(Ok(result)) => result,
            Ok(Err(err)) => {
                tracing::error!("cannot read the catalogs folder: {err}; the served catalog stays");
                return Outcome::Failed;
            }
            Err(err) => {
                tracing::error!("catalog rebuild failed: {err}; the served catalog stays");
                return Outcome::Failed;
            }
        };
        *sources = next;
        drop(sources);
        let Some(swapped) = swapped else {
            return Outcome::Unchanged;
        };
        let Swapped {
            generation,
            changed,
            steps,
            replaced,
            released,
        } = swapped;
        let report = steps.report;
        tracing::info!(
            generation,
            tools = steps.tools,
            scan_ms = steps.scan.as_millis() as u64,
            files_built = report.files_built,
            files_reused = report.files_reused,
            files_ms = report.files.as_millis() as u64,
            assemble_ms = report.assemble.as_millis() as u64,
            index_ms = report.index.as_millis() as u64,
            prepare_ms = steps.prepare.as_millis() as u64,
            elapsed_ms = steps.elapsed.as_millis() as u64,
            "catalog reloaded"
        );
        // What no request waits on, off the async workers: the effects of
        // the new index's commonest words (its rebuild left them for after
        // the swap; rankings are the same meanwhile, only slower for those
        // words), the diagnostics that are new, and freeing the replaced
        // catalog and the parses.
        let current = self.gateway.store.current();
        tokio::task::spawn_blocking(move || {
            current.catalog.search_index().prepare_common();
            log_diagnostics(&replaced.catalog.diagnostics, &current.catalog.diagnostics);
            drop(current);
            drop(replaced);
            drop(released);
        });
        if changed {
            Outcome::Bumped(generation)
        } else {
            Outcome::Swapped
        }
    }
}

/// What a rescan that swapped did, and what it left to free.
struct Swapped {
    generation: u64,
    changed: bool,
    steps: Steps,
    /// The snapshot the swap replaced.
    replaced: Arc<Served>,
    /// The parses the sources forgot.
    released: Released,
}

/// Where a rebuild's time went, for the log.
struct Steps {
    tools: usize,
    scan: Duration,
    report: BuildReport,
    prepare: Duration,
    /// From the start of the rescan to the swap.
    elapsed: Duration,
}

/// Rescans the folder; when files changed, rebuilds only the documents
/// whose inputs changed, prepares the new catalog (cards, folded tags,
/// rules: those of unchanged tools reused) and swaps it in, all off the
/// async workers. Returns the sources read, and what the swap did.
fn rebuild_and_swap(
    gateway: &Gateway,
    previous: Sources,
    started: Instant,
) -> std::io::Result<(Sources, Option<Swapped>)> {
    let mut next = Sources::scan(&gateway.settings.catalogs, Some(&previous))?;
    let scan = started.elapsed();
    if same_files(&previous, &next) {
        return Ok((next, None));
    }
    // Only the reloader swaps, one rescan at a time: this is still the
    // snapshot the swap replaces.
    let served = gateway.store.current();
    let catalog = Catalog::rebuild(&next, &gateway.settings.build_options(), &served.catalog);
    let preparing = Instant::now();
    let prepared = crate::tools::Prepared::reusing(
        &catalog,
        &served.catalog,
        &served.prepared,
        gateway.search_model.as_ref(),
    );
    let prepare = preparing.elapsed();
    let changed = served.catalog.fingerprint() != catalog.fingerprint();
    let generation = served.generation + u64::from(changed);
    let tools = catalog.tools().len();
    let report = catalog.report;
    drop(served);
    let replaced = gateway.store.swap(
        Served::with_prepared(catalog, prepared, generation, started.elapsed())
            .with_search_cache(gateway.settings.search_cache_bytes),
    );
    let elapsed = started.elapsed();
    let released = next.release_parsed();
    let steps = Steps {
        tools,
        scan,
        report,
        prepare,
        elapsed,
    };
    let swapped = Swapped {
        generation,
        changed,
        steps,
        replaced,
        released,
    };
    Ok((next, Some(swapped)))
}

/// Logs the diagnostics of the new catalog that the one it replaced did not
/// have (each the number of times it is new), and how many were unchanged
/// (not repeated: every reload of a large folder would log them all again)
/// and how many went away. `sezzlee check` and `/status` list them all.
fn log_diagnostics(before: &Diagnostics, now: &Diagnostics) {
    let mut earlier: HashMap<&Diagnostic, usize> = HashMap::with_capacity(before.len());
    for diagnostic in before {
        *earlier.entry(diagnostic).or_default() += 1;
    }
    let mut unchanged = 0;
    for diagnostic in now {
        if let Some(count) = earlier.get_mut(diagnostic).filter(|count| **count > 0) {
            *count -= 1;
            unchanged += 1;
            continue;
        }
        match diagnostic.severity {
            Severity::Error => tracing::warn!("{diagnostic}"),
            Severity::Warning => tracing::info!("{diagnostic}"),
        }
    }
    tracing::info!(
        diagnostics = now.len(),
        new = now.len() - unchanged,
        unchanged,
        gone = before.len() - unchanged,
        "catalog diagnostics (only new ones are logged on reload)"
    );
}

/// Same paths with the same hashes.
fn same_files(a: &Sources, b: &Sources) -> bool {
    a.files.len() == b.files.len()
        && a.files
            .iter()
            .zip(b.files.iter())
            .all(|((pa, fa), (pb, fb))| pa == pb && fa.hash == fb.hash)
}

/// Starts watching per the settings; the returned guard keeps the
/// file-system watcher alive.
pub fn start(reloader: Arc<Reloader>) -> Option<notify::RecommendedWatcher> {
    let settings = reloader.gateway.settings.clone();
    let wake = Arc::new(Notify::new());
    let watcher = match settings.watch {
        WatchMode::Events => watch_events(&settings.catalogs, wake.clone()),
        WatchMode::Poll | WatchMode::Off => None,
    };
    spawn_sighup(wake.clone());
    let poll = match settings.watch {
        WatchMode::Poll => Some(settings.poll_interval),
        WatchMode::Events => Some(SAFETY_RESCAN),
        WatchMode::Off => None,
    };
    tokio::spawn(debounce_loop(reloader, wake, settings.debounce, poll));
    watcher
}

fn watch_events(dir: &std::path::Path, wake: Arc<Notify>) -> Option<notify::RecommendedWatcher> {
    let handler = move |event: notify::Result<notify::Event>| {
        if event.is_ok() {
            wake.notify_one();
        }
    };
    let mut watcher = match notify::recommended_watcher(handler) {
        Ok(watcher) => watcher,
        Err(err) => {
            tracing::error!("cannot watch the catalogs folder ({err}); use --watch poll");
            return None;
        }
    };
    if let Err(err) = watcher.watch(dir, RecursiveMode::Recursive) {
        tracing::error!("cannot watch {} ({err}); use --watch poll", dir.display());
        return None;
    }
    Some(watcher)
}

#[cfg(unix)]
fn spawn_sighup(wake: Arc<Notify>) {
    use tokio::signal::unix::{SignalKind, signal};
    // Registered before returning, not in the task: a SIGHUP sent as soon
    // as the server listens must rescan, not end the process (the default
    // action of SIGHUP).
    let mut hangup = match signal(SignalKind::hangup()) {
        Ok(hangup) => hangup,
        Err(err) => {
            tracing::error!("cannot handle SIGHUP ({err}); it will not rescan");
            return;
        }
    };
    tokio::spawn(async move {
        while hangup.recv().await.is_some() {
            tracing::info!("SIGHUP: rescanning the catalogs folder");
            wake.notify_one();
        }
    });
}

#[cfg(not(unix))]
fn spawn_sighup(_wake: Arc<Notify>) {}

/// Waits for a wake-up (or the poll interval), then for `debounce` of
/// quiet (at most [`MAX_DELAY`]), then rescans.
async fn debounce_loop(
    reloader: Arc<Reloader>,
    wake: Arc<Notify>,
    debounce: Duration,
    poll: Option<Duration>,
) {
    let mut shutdown = reloader.gateway.shutdown.subscribe();
    loop {
        let woken = async {
            match poll {
                Some(interval) => {
                    let _ = tokio::time::timeout(interval, wake.notified()).await;
                }
                None => wake.notified().await,
            }
        };
        tokio::select! {
            _ = woken => {}
            _ = shutdown.changed() => return,
        }
        let burst_started = Instant::now();
        loop {
            let remaining = MAX_DELAY.saturating_sub(burst_started.elapsed());
            let quiet = debounce.min(remaining);
            if quiet.is_zero() || tokio::time::timeout(quiet, wake.notified()).await.is_err() {
                break;
            }
        }
        reloader.rescan().await;
    }
}
