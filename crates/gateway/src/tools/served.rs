//! `Served`: the snapshot a request works on — one immutable catalog with
//! everything precomputed for serving it, and the answers already ranked
//! on it.
//!
//! It lives with the tools because it is their input; the store only
//! holds the current one and swaps it.

use super::Prepared;
use super::search_cache::{self, SearchCache};
use sezzlee_catalog::Catalog;
use std::time::{Duration, SystemTime};

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
    /// Keyword search only (no search model).
    pub fn new(catalog: Catalog, generation: u64, build_duration: Duration) -> Served {
        let prepared = Prepared::new(&catalog, None);
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
