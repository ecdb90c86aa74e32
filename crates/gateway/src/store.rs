//! The catalog being served, swapped whole on reload.
//!
//! Requests load one [`Served`] snapshot and use it to the end, so each sees
//! the old catalog or the new one, never a mix, and an invocation in flight
//! finishes on the catalog it started with. The generation counter and its
//! watch channel are how listen streams learn of changes without a reload
//! ever waiting on them.

use crate::tools::Prepared;
use crate::tools::search_cache::{self, SearchCache};
use arc_swap::ArcSwap;
use sezzlee_catalog::Catalog;
use std::sync::Arc;
use std::time::{Duration, SystemTime};
use tokio::sync::watch;

/// One immutable catalog with everything precomputed for serving it (and
/// the answers already ranked on it).
pub struct Served {
    pub catalog: Catalog,
    pub prepared: Prepared,
    /// Starts at 0 in every process; +1 per rebuild that changed anything.
    pub generation: u64,
    pub loaded_at: SystemTime,
    pub build_duration: Duration,
    /// search_tools answers ranked on this snapshot (and only on it).
    pub search_cache: SearchCache,
}

impl Served {
    pub fn new(catalog: Catalog, generation: u64, build_duration: Duration) -> Served {
        let prepared = Prepared::new(&catalog);
        Served::with_prepared(catalog, prepared, generation, build_duration)
    }

    /// With the per-catalog data already computed (off the request path).
    pub fn with_prepared(
        catalog: Catalog,
        prepared: Prepared,
        generation: u64,
        build_duration: Duration,
    ) -> Served {
        Served {
            catalog,
            prepared,
            generation,
            loaded_at: SystemTime::now(),
            build_duration,
            search_cache: SearchCache::new(search_cache::DEFAULT_BYTES),
        }
    }

    /// With a search cache of `bytes` (0: none) instead of the default.
    pub fn with_search_cache(mut self, bytes: usize) -> Served {
        self.search_cache = SearchCache::new(bytes);
        self
    }
}

/// Holder of the current snapshot.
pub struct Store {
    current: ArcSwap<Served>,
    generation: watch::Sender<u64>,
}

impl Store {
    pub fn new(served: Served) -> Store {
        let (generation, _) = watch::channel(served.generation);
        Store {
            current: ArcSwap::from_pointee(served),
            generation,
        }
    }

    /// The snapshot a request works on.
    pub fn current(&self) -> Arc<Served> {
        self.current.load_full()
    }

    /// Replaces the snapshot and tells listeners the new generation. A
    /// swap that keeps the generation (a rebuild that changed nothing an
    /// agent can observe, such as a new diagnostic) wakes no listener.
    /// Returns the snapshot it replaced (the caller decides where to drop it).
    pub fn swap(&self, served: Served) -> Arc<Served> {
        let generation = served.generation;
        let previous = self.current.swap(Arc::new(served));
        // send_if_modified never waits and works with no receiver.
        self.generation.send_if_modified(|current| {
            let changed = *current != generation;
            *current = generation;
            changed
        });
        previous
    }

    /// A receiver that always holds the latest generation (never a backlog).
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.generation.subscribe()
    }
}
