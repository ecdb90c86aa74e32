//! The last reloads, whatever they did: when, what woke them, how they
//! ended and how long they took. `GET /changes` keeps only the reloads
//! that made a generation; an operator asking "did my edit get picked up,
//! and was it refused?" needs the others too (a touched file, a file held
//! missing, a broken edit whose last good version kept serving). The
//! console's Overview shows them; bounded to [`KEPT`] entries.

use serde_json::{Value, json};
use std::collections::VecDeque;
use std::sync::Mutex;
use std::time::{Duration, SystemTime};

/// Reloads kept, newest last.
pub const KEPT: usize = 50;

/// What woke a reload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Trigger {
    /// The first build, at start.
    Start,
    /// The catalogs folder: a file event, the polling timer, SIGHUP or the
    /// safety rescan.
    Files,
    /// An upstream MCP server's listing changed.
    UpstreamListing,
    /// A rescan asked for by hand (a test, a future admin route).
    Requested,
}

impl Trigger {
    pub fn as_str(self) -> &'static str {
        match self {
            Trigger::Start => "start",
            Trigger::Files => "catalog files",
            Trigger::UpstreamListing => "upstream listing",
            Trigger::Requested => "requested",
        }
    }
}

/// One reload.
#[derive(Debug, Clone, PartialEq)]
pub struct Reload {
    pub at: SystemTime,
    pub trigger: Trigger,
    /// `new generation`, `swapped` (nothing an agent sees changed),
    /// `unchanged`, `held` (a missing file's deletion not confirmed yet),
    /// `failed`.
    pub result: &'static str,
    /// The generation served after it.
    pub generation: u64,
    pub duration: Duration,
    /// Files parsed and built again, and reused.
    pub files_built: usize,
    pub files_reused: usize,
    /// Refused changes and failures, said for a person.
    pub detail: Option<String>,
}

impl Reload {
    pub fn to_value(&self) -> Value {
        json!({
            "at": httpdate::fmt_http_date(self.at),
            "atUnixMs": self.at.duration_since(SystemTime::UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or_default(),
            "trigger": self.trigger.as_str(),
            "result": self.result,
            "generation": self.generation,
            "durationMs": self.duration.as_secs_f64() * 1000.0,
            "filesBuilt": self.files_built,
            "filesReused": self.files_reused,
            "detail": self.detail,
        })
    }
}

/// The last [`KEPT`] reloads.
#[derive(Default)]
pub struct ReloadHistory {
    entries: Mutex<VecDeque<Reload>>,
}

impl ReloadHistory {
    pub fn record(&self, reload: Reload) {
        let mut entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        entries.push_back(reload);
        while entries.len() > KEPT {
            entries.pop_front();
        }
    }

    /// The reloads kept, newest first.
    pub fn newest_first(&self) -> Vec<Reload> {
        let entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        entries.iter().rev().cloned().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reload(generation: u64) -> Reload {
        Reload {
            at: SystemTime::now(),
            trigger: Trigger::Files,
            result: "new generation",
            generation,
            duration: Duration::from_millis(3),
            files_built: 1,
            files_reused: 2,
            detail: None,
        }
    }

    #[test]
    fn keeps_the_newest_and_lists_them_first() {
        let history = ReloadHistory::default();
        for generation in 0..(KEPT as u64 + 7) {
            history.record(reload(generation));
        }
        let kept = history.newest_first();
        assert_eq!(kept.len(), KEPT);
        assert_eq!(kept[0].generation, KEPT as u64 + 6);
        assert_eq!(kept[KEPT - 1].generation, 7);
        assert_eq!(kept[0].to_value()["trigger"], "catalog files");
    }
}
