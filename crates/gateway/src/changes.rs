//! What each catalog generation changed (`GET /changes?since=GEN`): the
//! tools added, removed and changed, with their old and new versions, so a
//! CI pipeline or an agent's host can ask which pinned calls will now
//! answer `tool_changed` without diffing catalogs itself. Computed when a
//! reload bumps the generation (one walk of both catalogs, sorted by
//! name), kept for the last `change_history` generations, each entry's
//! lists bounded. The route is `status::changes`.
//!
//! The console shows what changed in a tool, not only that its version
//! did: an entry also keeps its first changed tools as they were and as
//! they are (shared, not copied: a tool is one reference count), within
//! [`DEFINITION_BYTES_PER_ENTRY`] of definition, and only the newest
//! [`ENTRIES_WITH_DEFINITIONS`] entries keep them. Nothing is written out
//! on the reload's path; the definitions are written when a diff is asked
//! for.

use serde_json::{Value, json};
use sezzlee_catalog::{Catalog, Tool};
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

/// Names kept per list of one entry; the counts say how many there were.
pub const MAX_NAMES_PER_ENTRY: usize = 1_000;
/// Characters of definition (before and after) one entry keeps for diffs.
pub const DEFINITION_BYTES_PER_ENTRY: usize = 256 * 1024;
/// Entries, newest first, whose definitions are kept.
pub const ENTRIES_WITH_DEFINITIONS: usize = 20;

/// A changed tool as it was and as it is.
#[derive(Debug, Clone)]
pub struct Definitions {
    pub before: Tool,
    pub after: Tool,
}

impl Definitions {
    /// Both definitions as `load_tool` gives them, pretty-printed.
    pub fn texts(&self) -> (String, String) {
        let pretty =
            |tool: &Tool| serde_json::to_string_pretty(&tool.definition()).unwrap_or_default();
        (pretty(&self.before), pretty(&self.after))
    }
}

/// One generation's changes.
#[derive(Debug)]
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
    /// The first changed tools' definitions, within
    /// [`DEFINITION_BYTES_PER_ENTRY`]; emptied when the entry is older
    /// than the newest [`ENTRIES_WITH_DEFINITIONS`].
    pub definitions: Mutex<Vec<Definitions>>,
}

impl PartialEq for Change {
    fn eq(&self, other: &Change) -> bool {
        self.generation == other.generation
            && self.at == other.at
            && self.added == other.added
            && self.removed == other.removed
            && self.changed == other.changed
            && self.counts == other.counts
    }
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
        definitions: Mutex::new(Vec::new()),
    };
    let mut definitions = Vec::new();
    let mut definition_bytes = 0;
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
                    definition_bytes += a.definition_size + b.definition_size;
                    if definition_bytes <= DEFINITION_BYTES_PER_ENTRY {
                        definitions.push(Definitions {
                            before: a.clone(),
                            after: b.clone(),
                        });
                    }
                }
                i += 1;
                j += 1;
            }
        }
    }
    change.definitions = Mutex::new(definitions);
    change
}

impl Change {
    /// `name`'s definitions before and after, when this entry kept them.
    pub fn definitions_of(&self, name: &str) -> Option<Definitions> {
        let kept = self.definitions.lock().unwrap_or_else(|p| p.into_inner());
        kept.iter().find(|d| d.after.name == name).cloned()
    }

    /// The names whose definitions this entry keeps.
    pub fn names_with_definitions(&self) -> Vec<String> {
        let kept = self.definitions.lock().unwrap_or_else(|p| p.into_inner());
        kept.iter().map(|d| d.after.name.clone()).collect()
    }

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
        if let Some(aged) = entries
            .len()
            .checked_sub(ENTRIES_WITH_DEFINITIONS + 1)
            .and_then(|i| entries.get(i))
        {
            aged.definitions
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .clear();
        }
    }

    /// The entry of generation `generation`, while kept.
    pub fn entry(&self, generation: u64) -> Option<Arc<Change>> {
        let entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        entries
            .iter()
            .find(|change| change.generation == generation)
            .cloned()
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
