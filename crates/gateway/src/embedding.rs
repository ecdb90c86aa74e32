//! Tool texts embedded in the background, so the gateway serves (by
//! keywords) from its first second and each tool joins the meaning ranking
//! as soon as its vector exists.
//!
//! A sentence encoder embeds a few dozen tool texts a second per core: the
//! shared corpus takes minutes from nothing, the public directory most of
//! an hour. Start-up and reloads therefore never wait for it. A build
//! assembles each snapshot's [`ToolVectors`] from what is known (the table
//! before it, the disk cache) and hands the texts still missing to the one
//! embedding thread here, which embeds them in batches, fills them into
//! the newest table ([`VectorSlot`]: each batch publishes a new table),
//! and writes them to the disk cache, so no restart, reload or replica
//! sharing the folder embeds them again. A reload replaces the work list
//! with its own and makes its new table the one batches are filled into,
//! before that table is even swapped in (so no batch lands only in the
//! table being replaced); texts the thread embedded that the new table
//! missed are filled from memory, never embedded twice.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use arc_swap::ArcSwap;
use sezzlee_catalog::Catalog;
use sezzlee_semantic::vectors::embed;
use sezzlee_semantic::{DiskCache, Pending, Record, TextKey, TextModel, ToolVectors};

/// A snapshot's tool vectors, replaced whole as batches are embedded.
pub type VectorSlot = ArcSwap<ToolVectors>;

/// Texts embedded per batch: about a second of both cores' work.
const BATCH: usize = 48;
/// Records kept in memory before they are written as one cache segment.
const FLUSH_RECORDS: usize = 4_096;
/// Longest embedded records wait before they are filled into the served
/// table: each fill copies the table (48 MB at 125,000 tools), so batches
/// are filled together, at most once a second, and at once when the work
/// list drains.
const PUBLISH_EVERY: Duration = Duration::from_secs(1);
/// Longest a record waits in memory before it is written.
const FLUSH_AFTER: Duration = Duration::from_secs(20);

/// What the embedding thread has done, for `/status` and `/metrics`.
#[derive(Debug, Default)]
pub struct Progress {
    /// Texts waiting.
    pub pending: AtomicUsize,
    /// Texts embedded by this process.
    pub embedded: AtomicU64,
    /// Texts taken from the disk cache by this process.
    pub from_cache: AtomicU64,
    /// Time spent embedding, in milliseconds.
    pub busy_ms: AtomicU64,
}

/// The model, the disk cache and the work list the embedding thread reads.
pub struct Embedder {
    pub model: Arc<TextModel>,
    pub cache: Option<DiskCache>,
    work: Mutex<Work>,
    wake: Condvar,
    pub progress: Progress,
}

#[derive(Default)]
struct Work {
    pending: Vec<Pending>,
    /// The newest table assembled: where batches are filled in.
    target: Option<Arc<VectorSlot>>,
    /// Embedded by this process and not yet known to be in the served
    /// table and the disk cache: a reload's table may have missed them.
    recent: HashMap<TextKey, Record>,
    unsaved: Vec<Record>,
    /// Embedded, in `recent`, and not yet filled into the target.
    unpublished: Vec<Record>,
    stopping: bool,
}

impl Embedder {
    pub fn new(model: Arc<TextModel>, cache: Option<DiskCache>) -> Embedder {
        Embedder {
            model,
            cache,
            work: Mutex::new(Work::default()),
            wake: Condvar::new(),
            progress: Progress::default(),
        }
    }

    /// The vectors of `catalog` as far as they are known, taking unchanged
    /// tools' rows from `earlier` (`same[i]`: tool `i`'s index there when
    /// unchanged); the texts still missing become the thread's work.
    pub fn assemble(
        &self,
        catalog: &Catalog,
        earlier: Option<(&ToolVectors, &[Option<usize>])>,
    ) -> Arc<VectorSlot> {
        let (mut vectors, mut pending, from_cache) =
            ToolVectors::assemble_reusing(&self.model, catalog, earlier, self.cache.as_ref());
        let mut work = self.lock();
        // Texts this process embedded that the table before did not have
        // yet: filled now rather than embedded again.
        let known: Vec<Record> = pending
            .iter()
            .filter_map(|p| work.recent.get(&p.key).cloned())
            .collect();
        if !known.is_empty() {
            vectors.fill(&known);
            let filled: std::collections::HashSet<TextKey> = known.iter().map(|r| r.key).collect();
            pending.retain(|p| !filled.contains(&p.key));
        }
        self.progress
            .from_cache
            .fetch_add(from_cache as u64, Ordering::Relaxed);
        self.progress
            .pending
            .store(pending.len(), Ordering::Relaxed);
        let slot = Arc::new(VectorSlot::from_pointee(vectors));
        // Batches from now on fill this table, even before it is served:
        // every batch fills the target and enters `recent` under this
        // lock, so one that lands after the table before was read is in
        // `recent` by the time the next table is assembled.
        work.target = Some(slot.clone());
        work.pending = pending;
        drop(work);
        self.wake.notify_all();
        slot
    }

    /// Asks the thread to write what it holds and stop.
    pub fn stop(&self) {
        self.lock().stopping = true;
        self.wake.notify_all();
    }

    /// The embedding loop: run on its own thread until [`Embedder::stop`].
    pub fn run(&self) {
        let mut last_flush = Instant::now();
        let mut last_publish = Instant::now();
        loop {
            let batch: Vec<Pending> = {
                let mut work = self.lock();
                while work.pending.is_empty() && !work.stopping {
                    let idle = work.unsaved.is_empty() && work.recent.is_empty();
                    let timeout = if idle {
                        Duration::from_secs(3600)
                    } else {
                        Duration::from_millis(500)
                    };
                    let (next, waited) = self
                        .wake
                        .wait_timeout(work, timeout)
                        .unwrap_or_else(|e| e.into_inner());
                    work = next;
                    if waited.timed_out() && work.pending.is_empty() {
                        break;
                    }
                }
                if work.stopping {
                    let unsaved = std::mem::take(&mut work.unsaved);
                    drop(work);
                    self.save(&unsaved);
                    return;
                }
                let take = work.pending.len().min(BATCH);
                let batch = work.pending.drain(..take).collect();
                self.progress
                    .pending
                    .store(work.pending.len(), Ordering::Relaxed);
                batch
            };
            if !batch.is_empty() {
                let started = Instant::now();
                let records = embed(&self.model, &batch);
                self.progress
                    .busy_ms
                    .fetch_add(started.elapsed().as_millis() as u64, Ordering::Relaxed);
                self.progress
                    .embedded
                    .fetch_add(records.len() as u64, Ordering::Relaxed);
                let mut work = self.lock();
                for record in &records {
                    work.recent.insert(record.key, record.clone());
                }
                work.unsaved.extend(records.iter().cloned());
                work.unpublished.extend(records);
                if work.pending.is_empty() || last_publish.elapsed() >= PUBLISH_EVERY {
                    let unpublished = std::mem::take(&mut work.unpublished);
                    if let Some(slot) = &work.target {
                        slot.rcu(|vectors| vectors.filled(&unpublished));
                    }
                    last_publish = Instant::now();
                }
            }
            let (flush, drained) = {
                let work = self.lock();
                let drained = work.pending.is_empty();
                let due = work.unsaved.len() >= FLUSH_RECORDS
                    || (!work.unsaved.is_empty()
                        && (drained || last_flush.elapsed() >= FLUSH_AFTER));
                (due, drained)
            };
            if flush {
                let unsaved = std::mem::take(&mut self.lock().unsaved);
                self.save(&unsaved);
                last_flush = Instant::now();
            }
            if drained {
                let mut work = self.lock();
                if work.pending.is_empty() && work.unsaved.is_empty() && work.unpublished.is_empty()
                {
                    // Everything is in the served table and on disk.
                    work.recent = HashMap::new();
                }
            }
        }
    }

    /// Writes `records` to the disk cache; past its bound it keeps the
    /// texts the newest table uses.
    fn save(&self, records: &[Record]) {
        let Some(cache) = &self.cache else { return };
        if records.is_empty() {
            return;
        }
        let target = self.lock().target.clone();
        let keys: std::collections::HashSet<TextKey> = target
            .map(|slot| slot.load().keys().iter().copied().collect())
            .unwrap_or_default();
        if let Err(err) = cache.put(records, &|key| keys.contains(key)) {
            tracing::warn!(
                folder = %cache.folder().display(),
                "vector cache: {err}; {} vectors stay in memory only",
                records.len()
            );
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Work> {
        self.work.lock().unwrap_or_else(|e| e.into_inner())
    }
}
