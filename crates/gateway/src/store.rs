//! The catalog being served, swapped whole on reload.
//!
//! Requests load one [`Snapshot`] snapshot and use it to the end, so each sees
//! the old catalog or the new one, never a mix, and an invocation in flight
//! finishes on the catalog it started with. The generation counter and its
//! watch channel are how listen streams learn of changes without a reload
//! ever waiting on them.

pub use crate::tools::snapshot::Snapshot;
use arc_swap::ArcSwap;
use std::sync::Arc;
use tokio::sync::watch;

/// Holder of the current snapshot.
pub struct Store {
    current: ArcSwap<Snapshot>,
    generation: watch::Sender<u64>,
}

impl Store {
    pub fn new(served: Snapshot) -> Store {
        let (generation, _) = watch::channel(served.generation);
        Store {
            current: ArcSwap::from_pointee(served),
            generation,
        }
    }

    /// The snapshot a request works on.
    pub fn current(&self) -> Arc<Snapshot> {
        self.current.load_full()
    }

    /// Replaces the snapshot and tells listeners the new generation. A
    /// swap that keeps the generation (a rebuild that changed nothing an
    /// agent can observe, such as a new diagnostic) wakes no listener.
    /// Returns the snapshot it replaced (the caller decides where to drop it).
    pub fn swap(&self, served: Snapshot) -> Arc<Snapshot> {
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
