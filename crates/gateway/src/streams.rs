//! How many `subscriptions/listen` streams are open, in all and per
//! caller: the one piece of shared mutable state besides the catalog store.
//!
//! Its own module so the gateway's state can hold it and the listen
//! handler can reserve slots in it without either depending on the other.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

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
    ) -> Result<Slot, String> {
        let mut open = self
            .open
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let total: usize = open.values().sum();
        if total >= max_total {
            return Err(format!(
                "the gateway already serves {total} listen streams, its limit"
            ));
        }
        let mine = open.entry(key.clone()).or_default();
        if *mine >= max_per_caller {
            return Err(format!(
                "this caller already has {mine} listen streams open, the limit per caller"
            ));
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
