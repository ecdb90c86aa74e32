//! What stands between calls and a backend that is struggling, per backend
//! (an API's host, or an upstream MCP server's file): its own `Retry-After`
//! (a `429` or `503` that names a time is honoured: calls with the same
//! credential are refused locally until then, as a quota is a
//! credential's) and a circuit breaker (after `failures` connection
//! failures, time-outs or `5xx` in a row, calls are refused for the
//! cool-down; then one probe call is let through, and its outcome closes
//! the breaker or opens it again). A refused call sends nothing. Pure but
//! for the lock: the caller gives the time.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How a call to a backend ended, as the guard counts it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// An answer that is not a failure of the backend (`2xx`–`4xx`).
    Answered,
    /// No connection, a time-out, or a `5xx`.
    Failed,
    /// The backend asked to be left alone for this long (`Retry-After` on
    /// a `429` or `503`); a `503` also counts as [`Outcome::Failed`].
    RetryAfter { wait: Duration, failed: bool },
}

/// Why a call was refused before anything was sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// The backend's own `Retry-After` has not passed.
    RetryAfter(Duration),
    /// The breaker is open; it lets a probe through after this long.
    BreakerOpen(Duration),
}

/// The breaker's settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Breaker {
    /// Failures in a row that open it (0: never).
    pub failures: u32,
    pub cooldown: Duration,
}

#[derive(Debug, Default)]
struct State {
    failures_in_a_row: u32,
    open_until: Option<Instant>,
    /// When the breaker let one probe through, waiting for its outcome (a
    /// probe whose caller went away never reports: after a cool-down it
    /// is presumed lost and another goes).
    probing: Option<Instant>,
}

/// The breakers of the backends that failed lately, and the `Retry-After`s
/// held, by backend and credential.
#[derive(Default)]
struct Guarded {
    breakers: HashMap<String, State>,
    held: HashMap<String, Instant>,
}

/// The state of each backend.
#[derive(Default)]
pub struct BackendGuard {
    backends: Mutex<Guarded>,
}

/// Backends (and held credentials) tracked at most (the rest of the
/// breakers share one state).
const MAX_BACKENDS: usize = 4096;
/// Where backends past [`MAX_BACKENDS`] are tracked.
const OTHER_BACKEND: &str = "(other)";

/// A breaker's state, for `/status`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BreakerView {
    pub backend: String,
    /// `closed`, `open`, or `half_open` (a probe is out).
    pub state: &'static str,
    pub failures_in_a_row: u32,
}

impl BackendGuard {
    /// Whether a call to `backend` may go at `now`. A call let through
    /// must be followed by [`BackendGuard::after`]. `credential` gives a
    /// fingerprint of the credential the call carries (never the
    /// credential); it is asked for only while some `Retry-After` is held.
    /// A backend with nothing held and no failure costs one lock and two
    /// lookups: healthy calls record nothing.
    pub fn before(
        &self,
        backend: &str,
        credential: &dyn Fn() -> String,
        breaker: Breaker,
        now: Instant,
    ) -> Result<(), Refusal> {
        let mut guard = self.backends.lock().unwrap_or_else(|p| p.into_inner());
        let Guarded { held, breakers } = &mut *guard;
        if !held.is_empty() {
            let key = with_credential(backend, &credential());
            if let Some(until) = held.get(&key).copied() {
                if until > now {
                    return Err(Refusal::RetryAfter(until - now));
                }
                held.remove(&key);
            }
        }
        let Some(state) = breakers.get_mut(backend) else {
            return Ok(());
        };
        if let Some(until) = state.open_until {
            if until > now {
                return Err(Refusal::BreakerOpen(until - now));
            }
            if let Some(sent) = state.probing
                && now < sent + breaker.cooldown
            {
                // One probe at a time: the others wait for it.
                return Err(Refusal::BreakerOpen(sent + breaker.cooldown - now));
            }
            state.probing = Some(now);
        }
        Ok(())
    }

    /// Records how a call let through by [`BackendGuard::before`] ended.
    pub fn after(
        &self,
        backend: &str,
        credential: &dyn Fn() -> String,
        outcome: Outcome,
        breaker: Breaker,
        now: Instant,
    ) {
        let mut guard = self.backends.lock().unwrap_or_else(|p| p.into_inner());
        let Guarded { held, breakers } = &mut *guard;
        let failed = match outcome {
            Outcome::Answered => false,
            Outcome::Failed => true,
            Outcome::RetryAfter { wait, failed } => {
                if held.len() < MAX_BACKENDS {
                    let until = now + wait;
                    let entry = held
                        .entry(with_credential(backend, &credential()))
                        .or_insert(until);
                    *entry = (*entry).max(until);
                }
                failed
            }
        };
        if !failed {
            // Back to closed: nothing left to remember.
            breakers.remove(backend);
            return;
        }
        if breaker.failures == 0 {
            return;
        }
        let key = if breakers.contains_key(backend) || breakers.len() < MAX_BACKENDS {
            backend
        } else {
            OTHER_BACKEND
        };
        let state = breakers.entry(key.to_string()).or_default();
        let probe = state.probing.take().is_some();
        state.failures_in_a_row = state.failures_in_a_row.saturating_add(1);
        if probe || state.failures_in_a_row >= breaker.failures {
            state.open_until = Some(now + breaker.cooldown);
        }
    }

    /// Every backend whose breaker is not simply closed, for `/status`.
    pub fn views(&self, now: Instant) -> Vec<BreakerView> {
        let guard = self.backends.lock().unwrap_or_else(|p| p.into_inner());
        let mut views: Vec<BreakerView> = guard
            .breakers
            .iter()
            .filter(|(_, state)| state.failures_in_a_row > 0 || state.open_until.is_some())
            .map(|(backend, state)| BreakerView {
                backend: backend.clone(),
                state: match state.open_until {
                    Some(_) if state.probing.is_some() => "half_open",
                    Some(until) if until > now => "open",
                    Some(_) => "half_open",
                    None => "closed",
                },
                failures_in_a_row: state.failures_in_a_row,
            })
            .collect();
        views.sort_by(|a, b| a.backend.cmp(&b.backend));
        views
    }
}

/// The key a backend's `Retry-After` is kept under for one credential.
fn with_credential(backend: &str, credential: &str) -> String {
    format!("{backend}#{credential}")
}

/// A `Retry-After` value: seconds, or an HTTP date; `None` when it is
/// neither, or already past.
pub fn retry_after(value: &str, now: std::time::SystemTime) -> Option<Duration> {
    let value = value.trim();
    if let Ok(seconds) = value.parse::<u64>() {
        return Some(Duration::from_secs(seconds.min(24 * 3600)));
    }
    let at = httpdate::parse_http_date(value).ok()?;
    at.duration_since(now)
        .ok()
        .map(|wait| wait.min(Duration::from_secs(24 * 3600)))
}

#[cfg(test)]
mod tests {
    use super::*;

    const BREAKER: Breaker = Breaker {
        failures: 3,
        cooldown: Duration::from_secs(10),
    };

    #[test]
    fn the_breaker_opens_after_failures_in_a_row_then_one_probe_decides() {
        let guard = BackendGuard::default();
        let t0 = Instant::now();
        for _ in 0..2 {
            assert_eq!(guard.before("api", &|| "".to_string(), BREAKER, t0), Ok(()));
            guard.after("api", &|| "".to_string(), Outcome::Failed, BREAKER, t0);
        }
        // A success in between starts the count again.
        guard.after("api", &|| "".to_string(), Outcome::Answered, BREAKER, t0);
        for _ in 0..3 {
            assert_eq!(guard.before("api", &|| "".to_string(), BREAKER, t0), Ok(()));
            guard.after("api", &|| "".to_string(), Outcome::Failed, BREAKER, t0);
        }
        assert_eq!(
            guard.before(
                "api",
                &|| "".to_string(),
                BREAKER,
                t0 + Duration::from_secs(4)
            ),
            Err(Refusal::BreakerOpen(Duration::from_secs(6)))
        );
        assert_eq!(guard.views(t0)[0].state, "open");
        // Other backends are not held.
        assert_eq!(
            guard.before("other", &|| "".to_string(), BREAKER, t0),
            Ok(())
        );
        // After the cool-down, one probe; the next waits.
        let t1 = t0 + Duration::from_secs(10);
        assert_eq!(guard.before("api", &|| "".to_string(), BREAKER, t1), Ok(()));
        assert!(
            guard
                .before("api", &|| "".to_string(), BREAKER, t1)
                .is_err()
        );
        // The probe fails: open again for a cool-down.
        guard.after("api", &|| "".to_string(), Outcome::Failed, BREAKER, t1);
        assert!(
            guard
                .before(
                    "api",
                    &|| "".to_string(),
                    BREAKER,
                    t1 + Duration::from_secs(9)
                )
                .is_err()
        );
        // The next probe succeeds: closed.
        let t2 = t1 + Duration::from_secs(10);
        assert_eq!(guard.before("api", &|| "".to_string(), BREAKER, t2), Ok(()));
        guard.after("api", &|| "".to_string(), Outcome::Answered, BREAKER, t2);
        assert_eq!(guard.before("api", &|| "".to_string(), BREAKER, t2), Ok(()));
        assert!(guard.views(t2).is_empty());
    }

    #[test]
    fn a_retry_after_holds_that_credential_only() {
        let guard = BackendGuard::default();
        let t0 = Instant::now();
        let wait = Duration::from_secs(5);
        let held = Outcome::RetryAfter {
            wait,
            failed: false,
        };
        guard.after("api", &|| "token-a".to_string(), held, BREAKER, t0);
        assert!(
            guard
                .before("api", &|| "token-a".to_string(), BREAKER, t0)
                .is_err()
        );
        assert_eq!(
            guard.before("api", &|| "token-b".to_string(), BREAKER, t0),
            Ok(())
        );
    }

    #[test]
    fn a_retry_after_is_honoured_until_it_passes() {
        let guard = BackendGuard::default();
        let t0 = Instant::now();
        let wait = Duration::from_secs(2);
        guard.after(
            "api",
            &String::new,
            Outcome::RetryAfter {
                wait,
                failed: false,
            },
            BREAKER,
            t0,
        );
        assert_eq!(
            guard.before(
                "api",
                &|| "".to_string(),
                BREAKER,
                t0 + Duration::from_secs(1)
            ),
            Err(Refusal::RetryAfter(Duration::from_secs(1)))
        );
        assert_eq!(
            guard.before("api", &|| "".to_string(), BREAKER, t0 + wait),
            Ok(())
        );
    }

    #[test]
    fn retry_after_reads_seconds_and_dates() {
        let now = std::time::SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000_000);
        assert_eq!(retry_after("2", now), Some(Duration::from_secs(2)));
        let date = httpdate::fmt_http_date(now + Duration::from_secs(30));
        assert_eq!(retry_after(&date, now), Some(Duration::from_secs(30)));
        assert_eq!(retry_after("soon", now), None);
        let past = httpdate::fmt_http_date(now - Duration::from_secs(30));
        assert_eq!(retry_after(&past, now), None);
    }
}
