//! How many `subscriptions/listen` streams are open, in all and per
//! caller: the one piece of shared mutable state besides the catalog store.
//!
//! Its own module so the gateway's state can hold it and the listen
//! handler can reserve slots in it without either depending on the other.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// Which cap refused a new stream, and how many streams it counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StreamLimit {
    /// The gateway's own cap (`max_streams`).
    Total { open: usize },
    /// The caller's cap (`max_streams_per_caller`).
    PerCaller { open: usize },
}

impl std::fmt::Display for StreamLimit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StreamLimit::Total { open } => write!(
                f,
                "the gateway already serves {open} listen streams, its limit"
            ),
            StreamLimit::PerCaller { open } => write!(
                f,
                "this caller already has {open} listen streams open, the limit per caller"
            ),
        }
    }
}

/// Open listen streams, in all and per caller.
#[derive(Default)]
pub struct Registry {
    open: Mutex<HashMap<String, usize>>,
}

impl Registry {
    /// Reserves a slot, or says which cap is reached.
    pub(crate) fn acquire(
        self: &Arc<Self>,
        key: String,
        max_total: usize,
        max_per_caller: usize,
    ) -> Result<Slot, StreamLimit> {
        let mut open = self
            .open
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let total: usize = open.values().sum();
        if total >= max_total {
            return Err(StreamLimit::Total { open: total });
        }
        let mine = open.entry(key.clone()).or_default();
        if *mine >= max_per_caller {
            return Err(StreamLimit::PerCaller { open: *mine });
        }
        *mine += 1;
        Ok(Slot {
            registry: self.clone(),
            key,
        })
    }

    /// Streams open now.
    pub fn count(&self) -> usize {
        self.open
            .lock()
            .map(|open| open.values().sum())
            .unwrap_or(0)
    }
}

/// A reserved stream slot, released on drop.
pub struct Slot {
    registry: Arc<Registry>,
    key: String,
}

impl Drop for Slot {
    fn drop(&mut self) {
        if let Ok(mut open) = self.registry.open.lock()
            && let Some(count) = open.get_mut(&self.key)
        {
            *count = count.saturating_sub(1);
            if *count == 0 {
                open.remove(&self.key);
            }
        }
    }
}
