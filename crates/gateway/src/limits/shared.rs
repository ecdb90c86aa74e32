//! Per-caller rates shared by every replica through Redis
//! (`[limits] redis_url`): the same GCRA as [`super::gcra`], run as one Lua
//! script per call, atomic in Redis, on Redis's own clock (`TIME`), so the
//! replicas agree whatever their clocks say.
//!
//! Redis never takes the gateway down with it: a call that fails or takes
//! longer than [`REDIS_TIMEOUT`] marks Redis down for [`RETRY_AFTER_DOWN`],
//! and meanwhile each replica enforces its share of the rate locally
//! (`redis_local_share_percent`), or refuses when the operator chose
//! `redis_fail_closed`. `/status`, `/metrics` and the log say which.

use redis::aio::ConnectionManager;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Longest a limit check waits for Redis before deciding locally.
pub const REDIS_TIMEOUT: Duration = Duration::from_millis(250);
/// How long Redis is left alone after a failure before it is tried again.
pub const RETRY_AFTER_DOWN: Duration = Duration::from_secs(1);
/// Longest a connection at start-up may take.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(3);

/// GCRA in one step: KEYS[1] the allowance, ARGV[1] the interval and
/// ARGV[2] the tolerance in microseconds. Returns -1 when the call is
/// allowed (and spends it), else the microseconds to wait.
const GCRA: &str = r"
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local interval = tonumber(ARGV[1])
local tolerance = tonumber(ARGV[2])
local tat = tonumber(redis.call('GET', KEYS[1]) or now)
if tat < now then tat = now end
local allowed_from = tat - tolerance
if allowed_from > now then return allowed_from - now end
local next = tat + interval
redis.call('SET', KEYS[1], next, 'PX', math.ceil((next - now) / 1000) + 1000)
return -1
";

/// Redis, as the limits use it.
pub struct Shared {
    connection: ConnectionManager,
    script: redis::Script,
    /// Keys are prefixed, so several gateways can share one Redis.
    prefix: String,
    /// The URL without its password, for `/status` and the log.
    shown_url: String,
    state: Mutex<Health>,
    up: AtomicBool,
    errors: AtomicU64,
}

#[derive(Default)]
struct Health {
    /// Not tried again before this.
    down_until: Option<Instant>,
    last_error: Option<String>,
}

/// What Redis said of a call: allowed, or how long to wait.
pub type Verdict = Result<(), Duration>;

impl Shared {
    /// Connects to `url`; fails (naming why) when Redis does not answer
    /// within [`CONNECT_TIMEOUT`].
    pub async fn connect(url: &str) -> Result<Shared, String> {
        let client = redis::Client::open(url).map_err(|err| format!("{err}"))?;
        let connection = tokio::time::timeout(CONNECT_TIMEOUT, ConnectionManager::new(client))
            .await
            .map_err(|_| format!("no answer within {} s", CONNECT_TIMEOUT.as_secs()))?
            .map_err(|err| format!("{err}"))?;
        Ok(Shared {
            connection,
            script: redis::Script::new(GCRA),
            prefix: "sezzlee:limits:".to_string(),
            shown_url: without_password(url),
            state: Mutex::new(Health::default()),
            up: AtomicBool::new(true),
            errors: AtomicU64::new(0),
        })
    }

    /// Spends one call of `key` at `interval` and `tolerance`, in Redis;
    /// `None` when Redis cannot say now (the caller decides locally).
    pub async fn take(
        &self,
        key: &str,
        interval: Duration,
        tolerance: Duration,
    ) -> Option<Verdict> {
        {
            let health = self.state.lock().unwrap_or_else(|p| p.into_inner());
            if health
                .down_until
                .is_some_and(|until| Instant::now() < until)
            {
                return None;
            }
        }
        let mut connection = self.connection.clone();
        let mut invocation = self.script.key(format!("{}{key}", self.prefix));
        invocation.arg(micros(interval)).arg(micros(tolerance));
        let answer = tokio::time::timeout(
            REDIS_TIMEOUT,
            invocation.invoke_async::<i64>(&mut connection),
        )
        .await;
        match answer {
            Ok(Ok(wait)) => {
                self.mark_up();
                Some(if wait < 0 {
                    Ok(())
                } else {
                    Err(Duration::from_micros(
                        u64::try_from(wait).unwrap_or(0).max(1),
                    ))
                })
            }
            Ok(Err(err)) => {
                self.mark_down(err.to_string());
                None
            }
            Err(_) => {
                self.mark_down(format!("no answer within {} ms", REDIS_TIMEOUT.as_millis()));
                None
            }
        }
    }

    fn mark_up(&self) {
        if !self.up.swap(true, Ordering::Relaxed) {
            tracing::info!(redis = %self.shown_url, "Redis answers again: limits are shared by the replicas again");
        }
        let mut health = self.state.lock().unwrap_or_else(|p| p.into_inner());
        health.down_until = None;
    }

    fn mark_down(&self, why: String) {
        self.errors.fetch_add(1, Ordering::Relaxed);
        if self.up.swap(false, Ordering::Relaxed) {
            tracing::warn!(redis = %self.shown_url, "Redis does not answer ({why}): each replica enforces its share of the limits on its own until it does");
        }
        let mut health = self.state.lock().unwrap_or_else(|p| p.into_inner());
        health.down_until = Some(Instant::now() + RETRY_AFTER_DOWN);
        health.last_error = Some(why);
    }

    /// Whether the last call reached Redis.
    pub fn is_up(&self) -> bool {
        self.up.load(Ordering::Relaxed)
    }

    /// `/status`'s `redis`.
    pub fn status(&self) -> serde_json::Value {
        let health = self.state.lock().unwrap_or_else(|p| p.into_inner());
        serde_json::json!({
            "url": self.shown_url,
            "up": self.is_up(),
            "errors": self.errors.load(Ordering::Relaxed),
            "lastError": health.last_error,
        })
    }

    /// Failed calls to Redis so far.
    pub fn errors(&self) -> u64 {
        self.errors.load(Ordering::Relaxed)
    }
}

fn micros(duration: Duration) -> i64 {
    i64::try_from(duration.as_micros()).unwrap_or(i64::MAX)
}

/// `redis://user:secret@host:6379/0` → `redis://user:***@host:6379/0`.
fn without_password(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    let Some((credentials, host)) = rest.rsplit_once('@') else {
        return url.to_string();
    };
    let user = credentials.split(':').next().unwrap_or("");
    format!("{scheme}://{user}:***@{host}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_password_is_never_shown() {
        assert_eq!(
            without_password("redis://app:hunter2@cache:6379/0"),
            "redis://app:***@cache:6379/0"
        );
        assert_eq!(without_password("redis://cache:6379"), "redis://cache:6379");
    }
}
