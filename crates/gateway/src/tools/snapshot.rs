//! `Snapshot`: the snapshot a request works on — one immutable catalog with
//! everything precomputed for serving it, and the answers already ranked
//! on it.
//!
//! It lives with the tools because it is their input; the store only
//! holds the current one and swaps it.

use super::PerToolCache;
use super::search_cache::{self, SearchCache};
use sezzlee_catalog::Catalog;
use std::time::{Duration, SystemTime};

/// One immutable catalog with everything precomputed for serving it (and
/// the answers already ranked on it).
pub struct Snapshot {
    pub catalog: Catalog,
    pub per_tool: PerToolCache,
    /// Starts at 0 in every process; +1 per rebuild that changed anything.
    pub generation: u64,
    pub loaded_at: SystemTime,
    pub build_duration: Duration,
    /// search_tools answers ranked on this snapshot (and only on it).
    pub search_cache: SearchCache,
}

impl Snapshot {
    /// Keyword search only (no search model).
    pub fn new(catalog: Catalog, generation: u64, build_duration: Duration) -> Snapshot {
        let per_tool = PerToolCache::new(&catalog, None);
        Snapshot::with_per_tool(catalog, per_tool, generation, build_duration)
    }

    /// With the per-catalog data already computed (off the request path).
    pub fn with_per_tool(
        catalog: Catalog,
        per_tool: PerToolCache,
        generation: u64,
        build_duration: Duration,
    ) -> Snapshot {
        Snapshot {
            catalog,
            per_tool,
            generation,
            loaded_at: SystemTime::now(),
            build_duration,
            search_cache: SearchCache::new(search_cache::DEFAULT_BYTES),
        }
    }

    /// With a search cache of `bytes` (0: none) instead of the default.
    pub fn with_search_cache(mut self, bytes: usize) -> Snapshot {
        self.search_cache = SearchCache::new(bytes);
        self
    }
}
