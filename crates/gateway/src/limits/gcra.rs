//! The generic cell rate algorithm (GCRA), per key: a rate as one time per
//! call (the emission interval) and a burst as how far ahead of now a key's
//! theoretical arrival time may run. A key costs one `Instant`; keys whose
//! time has passed are forgotten when the table grows, so a flood of
//! distinct keys costs bounded memory. Pure but for the lock: the caller
//! gives the time, so tests need no clock.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// A rate: `per_minute` calls a minute, `burst` of them at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rate {
    /// Time one call takes from the allowance.
    interval: Duration,
    /// How far ahead of now the allowance may be spent.
    tolerance: Duration,
}

impl Rate {
    /// One call every `interval`, at most `burst` back to back.
    pub fn every(interval: Duration, burst: u32) -> Rate {
        Rate {
            interval,
            tolerance: interval * (burst.max(1) - 1),
        }
    }

    /// Time one call takes from the allowance.
    pub fn interval(&self) -> Duration {
        self.interval
    }

    /// How far ahead of now the allowance may be spent.
    pub fn tolerance(&self) -> Duration {
        self.tolerance
    }

    /// `per_minute` calls a minute (at least 1), at most `burst` (at least
    /// 1) back to back.
    pub fn per_minute(per_minute: u32, burst: u32) -> Rate {
        let interval = Duration::from_secs(60) / per_minute.max(1);
        Rate {
            interval,
            tolerance: interval * (burst.max(1) - 1),
        }
    }
}

/// Most keys kept before the passed ones are swept out.
const SWEEP_AT: usize = 100_000;

/// The theoretical arrival time of each key.
#[derive(Default)]
pub struct Cells {
    arrivals: Mutex<HashMap<String, Instant>>,
}

impl Cells {
    /// Takes one call from `key`'s allowance at `now`, or says how long
    /// until one is allowed.
    pub fn take(&self, key: &str, rate: Rate, now: Instant) -> Result<(), Duration> {
        let mut arrivals = self.arrivals.lock().unwrap_or_else(|p| p.into_inner());
        let arrival = arrivals.get(key).copied().unwrap_or(now).max(now);
        let allowed_from = arrival.checked_sub(rate.tolerance).unwrap_or(now);
        if allowed_from > now {
            return Err(allowed_from - now);
        }
        if arrivals.len() >= SWEEP_AT && !arrivals.contains_key(key) {
            arrivals.retain(|_, arrival| *arrival > now);
        }
        arrivals.insert(key.to_string(), arrival + rate.interval);
        Ok(())
    }

    /// Keys tracked now.
    pub fn len(&self) -> usize {
        self.arrivals
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_burst_then_the_rate() {
        let cells = Cells::default();
        let rate = Rate::per_minute(60, 3);
        let start = Instant::now();
        for _ in 0..3 {
            assert_eq!(cells.take("a", rate, start), Ok(()));
        }
        let wait = cells.take("a", rate, start).unwrap_err();
        assert_eq!(wait, Duration::from_secs(1));
        // Another key has its own allowance.
        assert_eq!(cells.take("b", rate, start), Ok(()));
        // Waiting what was said is enough.
        assert_eq!(cells.take("a", rate, start + wait), Ok(()));
        assert!(cells.take("a", rate, start + wait).is_err());
    }

    #[test]
    fn calls_at_ten_times_the_rate_get_the_rate_through() {
        let cells = Cells::default();
        let rate = Rate::per_minute(600, 1);
        let start = Instant::now();
        // 10 s at 100 calls a second: 10 a second get through.
        let passed = (0..1000)
            .filter(|i| {
                let now = start + Duration::from_millis(i * 10);
                cells.take("flood", rate, now).is_ok()
            })
            .count();
        assert!((99..=101).contains(&passed), "{passed}");
    }

    #[test]
    fn passed_keys_are_swept_when_the_table_is_full() {
        let cells = Cells::default();
        let rate = Rate::per_minute(60_000, 1);
        let start = Instant::now();
        for i in 0..SWEEP_AT {
            let _ = cells.take(&format!("k{i}"), rate, start);
        }
        assert_eq!(cells.len(), SWEEP_AT);
        let later = start + Duration::from_secs(1);
        assert_eq!(cells.take("new", rate, later), Ok(()));
        assert_eq!(cells.len(), 1);
    }
}
