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
//! A file a rescan no longer finds is not taken away at once: `git
//! checkout`, and editors that unlink then create, replace a file in two
//! steps, and a rescan between them would publish a catalog without its
//! tools (announced to every listener) only to publish them again a moment
//! later. A rescan that misses a file the catalog was built with publishes
//! nothing (the file keeps serving from its last good bytes), and a rescan
//! is scheduled for after the deletion grace; only if that rescan still
//! misses it is the deletion published, with whatever else changed, in one
//! generation ([`Absences`]). A reload that takes every tool of a folder
//! that had some is logged as a warning.
//!
//! Nothing but the rebuild stands between a rescan and the swap: the
//! diagnostics are logged after it, and only those that are new (a folder
//! of thousands of documents carries tens of thousands that every reload
//! would repeat), and the replaced catalog and the parses the sources
//! forgot are freed off the path too.
//!
//! A reload fails when the folder cannot be read or the rebuild does not
//! finish (the served catalog stays), and is refused in part when a file
//! whose bytes changed does not parse or is a sidecar with an invalid
//! value (its last good version serves): each is counted once
//! (`sezzlee_reload_failures_total`, by reason) besides being logged.

use crate::gateway::Gateway;
use crate::metrics::ReloadFailure;
use crate::reload_history::{Reload, Trigger};
use crate::settings::WatchMode;
use crate::store::Snapshot;
use notify::{RecursiveMode, Watcher};
use sezzlee_catalog::source::Released;
use sezzlee_catalog::{
    BuildReport, Catalog, Diagnostic, Diagnostics, DocumentSummary, Severity, Sources,
};
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};
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
    /// A file the served catalog was built with is missing and its
    /// deletion is not confirmed yet: nothing published, a rescan is due
    /// after the deletion grace ([`Reloader::confirmation_due`]).
    Held,
}

/// Rescans the catalogs folder and swaps in what it finds, one rescan at
/// a time; what it carries from one rescan to the next is in [`State`].
pub struct Reloader {
    gateway: Arc<Gateway>,
    state: tokio::sync::Mutex<State>,
}

/// What a rescan hands the next one.
struct State {
    /// The sources the served catalog was built from (for hash reuse).
    sources: Sources,
    /// Files missing from the folder whose deletion is not confirmed yet.
    absences: Absences,
}

impl Reloader {
    pub fn new(gateway: Arc<Gateway>, sources: Sources) -> Arc<Reloader> {
        Arc::new(Reloader {
            gateway,
            state: tokio::sync::Mutex::new(State {
                sources,
                absences: Absences::default(),
            }),
        })
    }

    /// Rescans the folder and swaps in the result when it differs. When a
    /// file the served catalog was built with is missing, nothing is
    /// published ([`Outcome::Held`]) until a rescan at least the deletion
    /// grace after the first that missed it misses it too: the watcher
    /// schedules that rescan ([`Reloader::confirmation_due`]); a caller
    /// driving `rescan` by hand rescans again after the grace.
    pub async fn rescan(&self) -> Outcome {
        self.rescan_because(Trigger::Requested).await
    }

    /// [`Reloader::rescan`], said in the reload history to be woken by
    /// `trigger`.
    pub async fn rescan_because(&self, trigger: Trigger) -> Outcome {
        let started_at = SystemTime::now();
        let started = Instant::now();
        let (outcome, built, refused) = self.rescan_inner().await;
        let (result, detail) = match outcome {
            Outcome::Unchanged => ("unchanged", None),
            Outcome::Swapped => ("swapped", Some("files changed, but nothing an agent sees")),
            Outcome::Bumped(_) => ("new generation", None),
            Outcome::Held => (
                "held",
                Some(
                    "a file is missing: nothing is published until its deletion is confirmed (deletion_grace)",
                ),
            ),
            Outcome::Failed => (
                "failed",
                Some(
                    "the folder could not be read or the rebuild failed: the served catalog stays (see the log)",
                ),
            ),
        };
        let detail = if refused {
            Some("a changed file was refused (see the diagnostics): its last good version serves")
        } else {
            detail
        };
        self.gateway.reloads.record(Reload {
            at: started_at,
            trigger,
            result,
            generation: self.gateway.store.current().generation,
            duration: started.elapsed(),
            files_built: built.map_or(0, |report| report.files_built),
            files_reused: built.map_or(0, |report| report.files_reused),
            detail: detail.map(str::to_string),
        });
        outcome
    }

    /// The rescan itself, what its rebuild (if any) built, and whether it
    /// refused a changed file.
    async fn rescan_inner(&self) -> (Outcome, Option<BuildReport>, bool) {
        let mut state = self.state.lock().await;
        let previous = state.sources.clone();
        let absences = state.absences.clone();
        let gateway = self.gateway.clone();
        let started = Instant::now();
        let rebuilt = tokio::task::spawn_blocking(move || {
            rebuild_and_swap(&gateway, previous, absences, started)
        })
        .await;
        let Rebuilt {
            sources: next,
            absences,
            swapped,
            refused,
        } = match rebuilt {
            Ok(Ok(result)) => result,
            Ok(Err(err)) => {
                tracing::error!("cannot read the catalogs folder: {err}; the served catalog stays");
                self.gateway
                    .metrics
                    .reload_failed(ReloadFailure::FolderUnreadable);
                return (Outcome::Failed, None, false);
            }
            Err(err) => {
                tracing::error!("catalog rebuild failed: {err}; the served catalog stays");
                self.gateway
                    .metrics
                    .reload_failed(ReloadFailure::RebuildFailed);
                return (Outcome::Failed, None, false);
            }
        };
        let held = !absences.is_empty();
        state.sources = next;
        state.absences = absences;
        drop(state);
        let Some(swapped) = swapped else {
            let outcome = if held {
                Outcome::Held
            } else {
                Outcome::Unchanged
            };
            return (outcome, None, refused);
        };
        let Swapped {
            generation,
            changed,
            steps,
            replaced,
            released,
        } = swapped;
        let report = steps.report;
        if changed {
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
        } else {
            // A rebuild with nothing an agent can see changed (a file
            // touched, rewritten with the same content): no news for an
            // operator, no generation, nothing sent.
            tracing::debug!(
                generation,
                elapsed_ms = steps.elapsed.as_millis() as u64,
                "catalog rebuilt; nothing an agent can see changed"
            );
        }
        // What no request waits on, off the async workers: the effects of
        // the new index's commonest words (its rebuild left them for after
        // the swap; rankings are the same meanwhile, only slower for those
        // words), the diagnostics that are new, and freeing the replaced
        // catalog and the parses.
        let current = self.gateway.store.current();
        tokio::task::spawn_blocking(move || {
            current.catalog.search_index().prepare_common();
            for (folder, tools) in
                emptied_folders(&replaced.catalog.documents, &current.catalog.documents)
            {
                let folder = if folder.is_empty() {
                    "the catalogs folder".to_string()
                } else {
                    format!("folder {folder}")
                };
                tracing::warn!(
                    generation,
                    tools_before = tools,
                    "this reload took every tool of {folder} away ({tools} before): \
                     its files were deleted or no longer publish a tool; \
                     restore them if that was not meant"
                );
            }
            log_diagnostics(&replaced.catalog.diagnostics, &current.catalog.diagnostics);
            drop(current);
            drop(replaced);
            drop(released);
        });
        let outcome = if changed {
            Outcome::Bumped(generation)
        } else {
            Outcome::Swapped
        };
        (outcome, Some(report), refused)
    }

    /// When a rescan is due to confirm (or call off) the deletion of a
    /// file the last rescans missed; `None` when no file is missing.
    pub async fn confirmation_due(&self) -> Option<Instant> {
        let grace = self.gateway.settings.deletion_grace;
        self.state.lock().await.absences.due(grace)
    }
}

/// The files the served catalog was built with that rescans missed, each
/// with when a rescan first missed it: their deletion is not published yet.
///
/// Why: a rescan sees the folder at one instant, and replacing a file in
/// two steps (unlink then create: `git checkout`, several editors; a
/// folder moved out and back) leaves it absent for a moment. Publishing
/// that moment empties the document's tools for every agent and listener,
/// then brings them back with a second generation. While a file is held
/// missing, rescans publish nothing: the served catalog (the file's last
/// good bytes included) stays, the sources it was built from stay the
/// ones the next rescan compares with (so a file that comes back empty or
/// half written still has its last good version), and a change made at
/// the same moment (a ConfigMap update that removes a key and changes
/// another) is published with the deletion, in one generation. When a
/// rescan confirms a deletion while another file, missed later, is still
/// held, it publishes with that one kept as it was, so each missing file
/// waits the grace once and no stream of deletions stalls the rest.
#[derive(Debug, Clone, Default)]
struct Absences(BTreeMap<Arc<str>, Instant>);

impl Absences {
    /// Notes which files of `previous` (the sources served) `next` (just
    /// scanned, at `now`) lacks: each is held from the first scan that
    /// missed it until one at least `grace` later misses it too, whose
    /// deletion is then confirmed (returned, and no longer held). Files
    /// found again are forgotten.
    fn note(
        &mut self,
        previous: &Sources,
        next: &Sources,
        grace: Duration,
        now: Instant,
    ) -> Vec<Arc<str>> {
        self.0
            .retain(|path, _| previous.files.contains_key(path) && !next.files.contains_key(path));
        let mut confirmed = Vec::new();
        for path in previous.files.keys() {
            if next.files.contains_key(path) {
                continue;
            }
            let since = *self.0.entry(path.clone()).or_insert(now);
            if now.saturating_duration_since(since) >= grace {
                confirmed.push(path.clone());
            }
        }
        for path in &confirmed {
            self.0.remove(path);
        }
        confirmed
    }

    /// Puts the files still held back into `next` as `previous` had them.
    fn keep_held(&self, previous: &Sources, next: &mut Sources) {
        for path in self.0.keys() {
            if let Some(file) = previous.files.get(path) {
                next.files.insert(path.clone(), file.clone());
            }
        }
    }

    /// When the earliest held file's absence can be confirmed.
    fn due(&self, grace: Duration) -> Option<Instant> {
        self.0.values().min().map(|since| *since + grace)
    }

    fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// The folders (relative paths, `""` the catalogs folder itself) whose
/// documents published tools in `before` and publish none in `after`,
/// each with its tools before; only the outermost such folder is named
/// (when a folder empties, so do the folders in it).
fn emptied_folders(before: &[DocumentSummary], after: &[DocumentSummary]) -> Vec<(String, usize)> {
    fn per_folder(documents: &[DocumentSummary]) -> BTreeMap<&str, usize> {
        let mut tools = BTreeMap::new();
        for document in documents.iter().filter(|d| d.tools > 0) {
            let mut path: &str = &document.file;
            while let Some((folder, _)) = path.rsplit_once('/') {
                *tools.entry(folder).or_default() += document.tools;
                path = folder;
            }
            *tools.entry("").or_default() += document.tools;
        }
        tools
    }
    let had = per_folder(before);
    let has = per_folder(after);
    let emptied =
        |folder: &str| had.get(folder).is_some_and(|n| *n > 0) && !has.contains_key(folder);
    had.iter()
        .filter(|(folder, _)| emptied(folder))
        .filter(|(folder, _)| {
            let parent = folder.rsplit_once('/').map_or("", |(parent, _)| parent);
            folder.is_empty() || !emptied(parent)
        })
        .map(|(folder, tools)| (folder.to_string(), *tools))
        .collect()
}

/// What a rescan that swapped did, and what it left to free.
struct Swapped {
    generation: u64,
    changed: bool,
    steps: Steps,
    /// The snapshot the swap replaced.
    replaced: Arc<Snapshot>,
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
/// async workers.
/// What [`rebuild_and_swap`] did: the sources the served catalog is now
/// built from (those read, or `previous` while a file is held missing),
/// the files held, the swap if any, and whether a changed file was
/// refused (its last good version serves).
struct Rebuilt {
    sources: Sources,
    absences: Absences,
    swapped: Option<Swapped>,
    refused: bool,
}

fn rebuild_and_swap(
    gateway: &Gateway,
    previous: Sources,
    mut absences: Absences,
    started: Instant,
) -> std::io::Result<Rebuilt> {
    let mut next = Sources::scan(&gateway.settings.catalogs, Some(&previous))?;
    let was_holding = !absences.is_empty();
    let grace = gateway.settings.deletion_grace;
    let confirmed = absences.note(&previous, &next, grace, started);
    for path in &confirmed {
        tracing::info!("{path} is deleted: still missing {grace:?} after a rescan first missed it");
    }
    if confirmed.is_empty() && !absences.is_empty() {
        if !was_holding {
            tracing::debug!(
                missing = absences.0.len(),
                "files missing from the catalogs folder: nothing is published until a rescan \
                 {grace:?} after this one confirms their deletion or finds them again"
            );
        }
        return Ok(Rebuilt {
            sources: previous,
            absences,
            swapped: None,
            refused: false,
        });
    }
    // Deletions confirmed: published with everything else, but files
    // missed more recently still serve (each is confirmed in its turn:
    // deletions that keep coming never hold the rest back for long).
    absences.keep_held(&previous, &mut next);
    // One supervisor per upstream file, running its current spec; the
    // build serves what each has listed so far.
    gateway.upstreams.reconcile(&next);
    next.set_listings(gateway.upstreams.listings());
    // Counted here, once: a rescan that held changes publishes nothing and
    // hands `previous` on, so the next one finds the same files changed.
    let refused = refuses_a_change(&previous, &next);
    if refused {
        gateway.metrics.reload_failed(ReloadFailure::FileRefused);
    }
    let scan = started.elapsed();
    if same_files(&previous, &next) && previous.same_listings(&next) {
        return Ok(Rebuilt {
            sources: next,
            absences,
            swapped: None,
            refused,
        });
    }
    // Only the reloader swaps, one rescan at a time: this is still the
    // snapshot the swap replaces.
    let served = gateway.store.current();
    let catalog = Catalog::rebuild(&next, &gateway.settings.build_options(), &served.catalog);
    let preparing = Instant::now();
    let prepared = crate::tools::PerToolCache::reusing(
        &catalog,
        &served.catalog,
        &served.per_tool,
        gateway.embedder.as_deref(),
    );
    let prepare = preparing.elapsed();
    let changed = served.catalog.fingerprint() != catalog.fingerprint();
    let generation = served.generation + u64::from(changed);
    if changed {
        // Kept before the swap: a listener told of the generation finds
        // its changes at once.
        gateway
            .changes
            .record(crate::changes::diff(&served.catalog, &catalog, generation));
    }
    let tools = catalog.tools().len();
    let report = catalog.report;
    drop(served);
    let replaced = gateway.store.swap(
        Snapshot::with_per_tool(catalog, prepared, generation, started.elapsed())
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
    Ok(Rebuilt {
        sources: next,
        absences,
        swapped: Some(swapped),
        refused,
    })
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
            Severity::Error => tracing::error!("{diagnostic}"),
            Severity::Warning => tracing::warn!("{diagnostic}"),
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

/// Whether a file of `next` whose bytes are new (changed since
/// `previous`, or a new file) is refused: it does not parse, or it is a
/// sidecar with an invalid value (its last good version, if any, serves;
/// the diagnostics say why).
fn refuses_a_change(previous: &Sources, next: &Sources) -> bool {
    next.files.iter().any(|(path, file)| {
        file.current.is_err()
            && previous
                .files
                .get(path)
                .is_none_or(|before| before.hash != file.hash)
    })
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
    tokio::spawn(upstream_loop(reloader.clone()));
    tokio::spawn(debounce_loop(reloader, wake, settings.debounce, poll));
    watcher
}

/// Starts the supervisors of the upstream files the catalog was built
/// with, then rebuilds whenever one of their listings changes (at once:
/// a listing is settled when it arrives, there is nothing to debounce),
/// and stops them all at shutdown.
async fn upstream_loop(reloader: Arc<Reloader>) {
    let upstreams = reloader.gateway.upstreams.clone();
    let changed = upstreams.changed();
    upstreams.reconcile(&reloader.state.lock().await.sources);
    let mut shutdown = reloader.gateway.shutdown.signal();
    loop {
        tokio::select! {
            () = changed.notified() => {}
            () = shutdown.begun() => break,
        }
        reloader.rescan_because(Trigger::UpstreamListing).await;
    }
    upstreams.stop_all();
}

/// Whether a watcher's event may mean a file changed: anything but a file
/// being opened, read or closed unwritten (inotify reports those too, and
/// every rescan opens and reads every file: woken by them, the gateway
/// rescanned every debounce, forever). An error (the kernel's queue
/// overflowed, events were lost) rescans, to be sure.
fn changes_files(event: &notify::Result<notify::Event>) -> bool {
    use notify::EventKind;
    use notify::event::{AccessKind, AccessMode};
    match event {
        Ok(event) => match event.kind {
            EventKind::Access(AccessKind::Close(AccessMode::Write)) => true,
            EventKind::Access(_) => false,
            _ => true,
        },
        Err(_) => true,
    }
}

fn watch_events(dir: &std::path::Path, wake: Arc<Notify>) -> Option<notify::RecommendedWatcher> {
    let handler = move |event: notify::Result<notify::Event>| {
        if changes_files(&event) {
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

/// Waits for a wake-up (or the poll interval, or the time a missing
/// file's deletion can be confirmed), then for `debounce` of quiet (at
/// most [`MAX_DELAY`]), then rescans. Events, polling and SIGHUP all come
/// through here, so each holds a missing file the same way.
async fn debounce_loop(
    reloader: Arc<Reloader>,
    wake: Arc<Notify>,
    debounce: Duration,
    poll: Option<Duration>,
) {
    let mut shutdown = reloader.gateway.shutdown.signal();
    loop {
        let confirm = reloader
            .confirmation_due()
            .await
            .map(|due| due.saturating_duration_since(Instant::now()));
        let wait = match (poll, confirm) {
            (Some(poll), Some(confirm)) => Some(poll.min(confirm)),
            (poll, confirm) => poll.or(confirm),
        };
        let woken = async {
            match wait {
                Some(wait) => {
                    let _ = tokio::time::timeout(wait, wake.notified()).await;
                }
                None => wake.notified().await,
            }
        };
        tokio::select! {
            _ = woken => {}
            () = shutdown.begun() => return,
        }
        let burst_started = Instant::now();
        loop {
            let remaining = MAX_DELAY.saturating_sub(burst_started.elapsed());
            let quiet = debounce.min(remaining);
            if quiet.is_zero() || tokio::time::timeout(quiet, wake.notified()).await.is_err() {
                break;
            }
        }
        reloader.rescan_because(Trigger::Files).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sources(files: &[&str]) -> Sources {
        let document = br#"{"openapi":"3.0.3","info":{"title":"t","version":"1"},"paths":{}}"#;
        Sources::from_files(
            files.iter().map(|f| (f.to_string(), document.to_vec())),
            None,
        )
    }

    #[test]
    fn a_missing_file_is_held_until_a_rescan_after_the_grace_misses_it_too() {
        let grace = Duration::from_millis(500);
        let t0 = Instant::now();
        let mut absences = Absences::default();
        let served = sources(&["a.json", "b.json"]);
        let without_a = sources(&["b.json"]);

        // First missed: held, due at t0 + grace.
        assert!(absences.note(&served, &without_a, grace, t0).is_empty());
        assert!(!absences.is_empty());
        assert_eq!(absences.due(grace), Some(t0 + grace));

        // Missed again before the grace: still held, still due then.
        let soon = t0 + grace / 2;
        assert!(absences.note(&served, &without_a, grace, soon).is_empty());
        assert_eq!(absences.due(grace), Some(t0 + grace));

        // Missed by a rescan the grace after the first: confirmed.
        let confirmed = absences.note(&served, &without_a, grace, t0 + grace);
        assert_eq!(confirmed, [Arc::from("a.json")]);
        assert!(absences.is_empty());
        assert_eq!(absences.due(grace), None);
    }

    #[test]
    fn a_file_found_again_is_no_longer_missing() {
        let grace = Duration::from_millis(500);
        let t0 = Instant::now();
        let mut absences = Absences::default();
        let served = sources(&["a.json"]);
        absences.note(&served, &sources(&[]), grace, t0);
        assert!(!absences.is_empty());
        // Back (even after the grace): forgotten, nothing confirmed.
        assert!(
            absences
                .note(&served, &served, grace, t0 + grace)
                .is_empty()
        );
        assert!(absences.is_empty());
        // Missing again later: the clock starts again.
        let t1 = t0 + grace * 3;
        assert!(absences.note(&served, &sources(&[]), grace, t1).is_empty());
        assert_eq!(absences.due(grace), Some(t1 + grace));
    }

    #[test]
    fn files_missed_at_different_times_are_each_confirmed_in_their_turn() {
        let grace = Duration::from_millis(500);
        let t0 = Instant::now();
        let mut absences = Absences::default();
        let served = sources(&["a.json", "b.json", "c.json"]);
        assert!(
            absences
                .note(&served, &sources(&["b.json", "c.json"]), grace, t0)
                .is_empty()
        );
        let t1 = t0 + grace / 2;
        assert!(
            absences
                .note(&served, &sources(&["c.json"]), grace, t1)
                .is_empty()
        );

        // a.json confirmed while b.json is still held: published without
        // a.json, with b.json as it was.
        let mut next = sources(&["c.json"]);
        let confirmed = absences.note(&served, &next, grace, t0 + grace);
        assert_eq!(confirmed, [Arc::from("a.json")]);
        absences.keep_held(&served, &mut next);
        let names: Vec<&str> = next.files.keys().map(|k| &**k).collect();
        assert_eq!(names, ["b.json", "c.json"]);
        assert_eq!(absences.due(grace), Some(t1 + grace));

        // Then b.json in its turn; a.json is not held again.
        let confirmed = absences.note(&next, &sources(&["c.json"]), grace, t1 + grace);
        assert_eq!(confirmed, [Arc::from("b.json")]);
        assert!(absences.is_empty());
    }

    #[test]
    fn no_grace_confirms_a_deletion_at_the_first_rescan_that_misses_it() {
        let mut absences = Absences::default();
        let served = sources(&["a.json", "b.json"]);
        let confirmed = absences.note(
            &served,
            &sources(&["b.json"]),
            Duration::ZERO,
            Instant::now(),
        );
        assert_eq!(confirmed, [Arc::from("a.json")]);
        assert!(absences.is_empty());
    }

    fn summary(file: &str, tools: usize) -> DocumentSummary {
        DocumentSummary {
            file: Arc::from(file),
            namespace: String::new(),
            title: String::new(),
            operations: tools,
            tools,
        }
    }

    #[test]
    fn a_folder_whose_tools_all_went_is_named_once_at_its_outermost() {
        let before = [
            summary("orders.yaml", 9),
            summary("billing/invoices.yaml", 2),
            summary("billing/v2/refunds.yaml", 1),
            summary("empty/nothing.yaml", 0),
        ];
        // billing (and billing/v2 in it) emptied: only billing is named.
        let after = [summary("orders.yaml", 9), summary("empty/nothing.yaml", 0)];
        assert_eq!(
            emptied_folders(&before, &after),
            [("billing".to_string(), 3)]
        );
        // Everything gone: only the catalogs folder is named.
        assert_eq!(emptied_folders(&before, &[]), [(String::new(), 12)]);
        // A document kept but publishing nothing counts as gone.
        assert_eq!(
            emptied_folders(&[summary("orders.yaml", 9)], &[summary("orders.yaml", 0)]),
            [(String::new(), 9)]
        );
        // billing keeps a document with tools: only billing/v2 emptied.
        let after = [
            summary("orders.yaml", 9),
            summary("billing/invoices.yaml", 2),
        ];
        assert_eq!(
            emptied_folders(&before, &after),
            [("billing/v2".to_string(), 1)]
        );
        // One document of a folder gone, another left: nothing emptied.
        let after = [
            summary("orders.yaml", 9),
            summary("billing/v2/refunds.yaml", 1),
        ];
        assert!(emptied_folders(&before, &after).is_empty());
        // A folder that had no tools is not emptied by losing them.
        let after = [
            summary("orders.yaml", 9),
            summary("billing/invoices.yaml", 2),
            summary("billing/v2/refunds.yaml", 1),
        ];
        assert!(emptied_folders(&before, &after).is_empty());
        // Growing from nothing is not a warning.
        assert!(emptied_folders(&[], &before).is_empty());
    }
}
