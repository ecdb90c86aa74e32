//! What each catalog generation changed (`GET /changes?since=GEN`): the
//! tools added, removed and changed, with their old and new versions, so a
//! CI pipeline or an agent's host can ask which pinned calls will now
//! answer `tool_changed` without diffing catalogs itself. Computed when a
//! reload bumps the generation (one walk of both catalogs, sorted by
//! name), kept for the last `change_history` generations, each entry's
//! lists bounded. The route is `status::changes`.

use serde_json::{Value, json};
use sezzlee_catalog::Catalog;
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

/// Names kept per list of one entry; the counts say how many there were.
pub const MAX_NAMES_PER_ENTRY: usize = 1_000;

/// One generation's changes.
#[derive(Debug, Clone, PartialEq)]
pub struct Change {
    pub generation: u64,
    pub at: SystemTime,
    pub added: Vec<(String, String)>,
    pub removed: Vec<(String, String)>,
    /// Name, version before, version now.
    pub changed: Vec<(String, String, String)>,
    /// How many of each there were (the lists keep the first
    /// [`MAX_NAMES_PER_ENTRY`]).
    pub counts: [usize; 3],
}

/// The tools `after` adds, removes and changes against `before`, as the
/// change that made `generation`.
pub fn diff(before: &Catalog, after: &Catalog, generation: u64) -> Change {
    let mut change = Change {
        generation,
        at: SystemTime::now(),
        added: Vec::new(),
        removed: Vec::new(),
        changed: Vec::new(),
        counts: [0; 3],
    };
    let (old, new) = (before.tools(), after.tools());
    let (mut i, mut j) = (0, 0);
    while i < old.len() || j < new.len() {
        let order = match (old.get(i), new.get(j)) {
            (Some(a), Some(b)) => a.name.cmp(&b.name),
            (Some(_), None) => std::cmp::Ordering::Less,
            _ => std::cmp::Ordering::Greater,
        };
        match order {
            std::cmp::Ordering::Less => {
                let tool = &old[i];
                change.counts[1] += 1;
                if change.removed.len() < MAX_NAMES_PER_ENTRY {
                    change
                        .removed
                        .push((tool.name.clone(), tool.version.clone()));
                }
                i += 1;
            }
            std::cmp::Ordering::Greater => {
                let tool = &new[j];
                change.counts[0] += 1;
                if change.added.len() < MAX_NAMES_PER_ENTRY {
                    change.added.push((tool.name.clone(), tool.version.clone()));
                }
                j += 1;
            }
            std::cmp::Ordering::Equal => {
                let (a, b) = (&old[i], &new[j]);
                if a.version != b.version {
                    change.counts[2] += 1;
                    if change.changed.len() < MAX_NAMES_PER_ENTRY {
                        change
                            .changed
                            .push((b.name.clone(), a.version.clone(), b.version.clone()));
                    }
                }
                i += 1;
                j += 1;
            }
        }
    }
    change
}

impl Change {
    /// The entry as `/changes` shows it.
    pub fn to_value(&self) -> Value {
        let at = httpdate::fmt_http_date(self.at);
        let named = |list: &[(String, String)]| -> Vec<Value> {
            list.iter()
                .map(|(name, version)| json!({"name": name, "version": version}))
                .collect()
        };
        json!({
            "generation": self.generation,
            "at": at,
            "added": named(&self.added),
            "removed": named(&self.removed),
            "changed": self.changed.iter().map(|(name, before, now)| {
                json!({"name": name, "versionBefore": before, "version": now})
            }).collect::<Vec<_>>(),
            "counts": {"added": self.counts[0], "removed": self.counts[1], "changed": self.counts[2]},
        })
    }
}

/// The last generations' changes, oldest first.
pub struct ChangeHistory {
    entries: Mutex<VecDeque<Arc<Change>>>,
    keep: usize,
}

impl ChangeHistory {
    pub fn new(keep: usize) -> ChangeHistory {
        ChangeHistory {
            entries: Mutex::new(VecDeque::new()),
            keep: keep.max(1),
        }
    }

    /// Keeps `change`, forgetting the oldest past the bound.
    pub fn record(&self, change: Change) {
        let mut entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        entries.push_back(Arc::new(change));
        while entries.len() > self.keep {
            entries.pop_front();
        }
    }

    /// The changes after generation `since`, and whether some of them are
    /// no longer kept.
    pub fn since(&self, since: u64) -> (Vec<Arc<Change>>, bool) {
        let entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        let after: Vec<Arc<Change>> = entries
            .iter()
            .filter(|change| change.generation > since)
            .cloned()
            .collect();
        let oldest_kept = entries.front().map(|change| change.generation);
        // Generations since+1 … oldest_kept-1 happened but are forgotten.
        let truncated = oldest_kept.is_some_and(|oldest| oldest > since + 1);
        (after, truncated)
    }
}
