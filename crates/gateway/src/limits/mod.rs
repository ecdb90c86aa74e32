//! Limits between callers and backends (`[limits]`, docs/contract.md §7.2):
//! a rate per caller for `search_tools`/`load_tool` and another for
//! `invoke_tool` ([`gcra`]), so one runaway agent cannot take the gateway
//! or a backend's quota from everyone else; and per backend, its own
//! `Retry-After` honoured and a circuit breaker ([`backend_guard`]), so a
//! backend that is down is not hammered by every retry. A limited call
//! answers `rate_limited` and sends nothing.
//!
//! Rates are counted in this process, or with `redis_url` once across the
//! replicas ([`shared`]); backend guards are each replica's own.

pub mod backend_guard;
pub mod gcra;
pub mod shared;

use crate::settings::LimitsSettings;
use crate::visibility::Caller;
use backend_guard::{BackendGuard, Breaker, Outcome, Refusal};
use gcra::{Cells, Rate};
use sezzlee_catalog::sidecar::{Quota, QuotaPer};
use std::collections::HashMap;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Which allowance a call spends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `search_tools` and `load_tool`.
    Search,
    Invoke,
}

/// Which limit refused a call: the envelope's `limit`, and a metric label.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Limit {
    SearchPerMinute,
    InvokePerMinute,
    /// The backend's own `Retry-After`.
    BackendRetryAfter,
    /// The backend's circuit breaker is open.
    BackendBreaker,
    /// A sidecar quota's calls per interval are spent.
    QuotaRequests,
    /// A sidecar quota's calls in flight are all taken.
    QuotaConcurrent,
}

impl Limit {
    const ALL: [Limit; 6] = [
        Limit::SearchPerMinute,
        Limit::InvokePerMinute,
        Limit::BackendRetryAfter,
        Limit::BackendBreaker,
        Limit::QuotaRequests,
        Limit::QuotaConcurrent,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Limit::SearchPerMinute => "search_per_minute",
            Limit::InvokePerMinute => "invoke_per_minute",
            Limit::BackendRetryAfter => "backend_retry_after",
            Limit::BackendBreaker => "backend_breaker",
            Limit::QuotaRequests => "quota_requests",
            Limit::QuotaConcurrent => "quota_concurrent",
        }
    }
}

/// What a caller's calls count against, by kind (never the credential).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyKind {
    /// A verified JWT's subject, or an API key's.
    Subject,
    /// An anonymous caller's address (`per_address`).
    Address,
    /// Every anonymous caller together.
    Anonymous,
    /// A backend.
    Backend,
}

impl KeyKind {
    const ALL: [KeyKind; 4] = [
        KeyKind::Subject,
        KeyKind::Address,
        KeyKind::Anonymous,
        KeyKind::Backend,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            KeyKind::Subject => "subject",
            KeyKind::Address => "address",
            KeyKind::Anonymous => "anonymous",
            KeyKind::Backend => "backend",
        }
    }
}

/// A refused call: which limit, whose, and when to try again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limited {
    pub limit: Limit,
    pub key: KeyKind,
    pub retry_after: Duration,
    /// The rate a caller was held to (calls a minute), for the message.
    pub per_minute: Option<u32>,
}

/// The limits of one gateway.
pub struct Limits {
    settings: LimitsSettings,
    /// Redis, once connected ([`Limits::connect_shared`]).
    shared: std::sync::OnceLock<shared::Shared>,
    search: Cells,
    invoke: Cells,
    backends: BackendGuard,
    /// Sidecar quotas' calls per interval, by quota and key.
    quota_calls: Cells,
    /// Sidecar quotas' calls in flight, by quota and key.
    in_flight: Mutex<HashMap<String, Arc<AtomicU32>>>,
    limited: [[AtomicU64; KeyKind::ALL.len()]; Limit::ALL.len()],
}

/// A call counted in flight against a quota until dropped.
pub struct InFlight(Arc<AtomicU32>);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

/// How soon a call refused for want of a free slot may try again.
const IN_FLIGHT_RETRY: Duration = Duration::from_millis(100);

impl Limits {
    pub fn new(settings: LimitsSettings) -> Limits {
        Limits {
            settings,
            shared: std::sync::OnceLock::new(),
            search: Cells::default(),
            invoke: Cells::default(),
            backends: BackendGuard::default(),
            quota_calls: Cells::default(),
            in_flight: Mutex::new(HashMap::new()),
            limited: Default::default(),
        }
    }

    /// Connects to the Redis of `redis_url`, when one is set: from then on
    /// rates are counted once across the replicas. Fails, naming why, when
    /// Redis does not answer.
    pub async fn connect_shared(&self) -> Result<(), String> {
        let Some(url) = &self.settings.redis_url else {
            return Ok(());
        };
        if self.shared.get().is_some() {
            return Ok(());
        }
        let connected = shared::Shared::connect(url).await?;
        let _ = self.shared.set(connected);
        Ok(())
    }

    /// Spends one call of `kind` from `caller`'s allowance, or says why not.
    pub async fn caller(&self, caller: &Caller, kind: Kind) -> Result<(), Limited> {
        let Some(per_minute) = self.per_minute(caller, kind) else {
            return Ok(());
        };
        let (key, key_kind) = self.key_of(caller);
        let limit = match kind {
            Kind::Search => Limit::SearchPerMinute,
            Kind::Invoke => Limit::InvokePerMinute,
        };
        let refuse = |retry_after: Duration| {
            self.count(limit, key_kind);
            Limited {
                limit,
                key: key_kind,
                retry_after,
                per_minute: Some(per_minute),
            }
        };
        let mut local_rate = per_minute;
        if let Some(shared) = self.shared.get() {
            let rate = self.rate(per_minute);
            let shared_key = format!("{}:{key}", limit.as_str());
            match shared
                .take(&shared_key, rate.interval(), rate.tolerance())
                .await
            {
                Some(verdict) => return verdict.map_err(refuse),
                None if self.settings.redis_fail_closed => {
                    return Err(refuse(shared::RETRY_AFTER_DOWN));
                }
                // Each replica its share while Redis does not answer.
                None => {
                    let share = u64::from(self.settings.redis_local_share_percent.clamp(1, 100));
                    local_rate = u32::try_from((u64::from(per_minute) * share / 100).max(1))
                        .unwrap_or(per_minute);
                }
            }
        }
        let cells = match kind {
            Kind::Search => &self.search,
            Kind::Invoke => &self.invoke,
        };
        cells
            .take(&key, self.rate(local_rate), Instant::now())
            .map_err(refuse)
    }

    /// `per_minute` with the configured burst.
    fn rate(&self, per_minute: u32) -> Rate {
        let burst_seconds = self.settings.burst_seconds.max(1);
        let burst = (u64::from(per_minute) * u64::from(burst_seconds) / 60).max(1);
        Rate::per_minute(per_minute, u32::try_from(burst).unwrap_or(u32::MAX))
    }

    /// Checks the sidecar quotas that apply to a call by `caller` (each
    /// with a `scope` naming what it covers: a document, or one
    /// operation): a slot in flight of each first, then one call of each
    /// interval, so a call refused spends nothing of the intervals. The
    /// slots are held until the returned guards are dropped.
    pub fn quotas(
        &self,
        quotas: &[(&str, &Quota)],
        caller: &Caller,
    ) -> Result<Vec<InFlight>, Limited> {
        let mut slots = Vec::new();
        for (scope, quota) in quotas {
            slots.extend(self.quota_slot(scope, quota, caller)?);
        }
        for (scope, quota) in quotas {
            self.quota_call(scope, quota, caller)?;
        }
        Ok(slots)
    }

    /// The key a quota counts a caller's calls under, and its kind.
    fn quota_key(&self, scope: &str, quota: &Quota, caller: &Caller) -> (String, KeyKind) {
        match quota.per {
            QuotaPer::Backend => (format!("{scope}|backend"), KeyKind::Backend),
            QuotaPer::Caller => {
                let (who, kind) = self.key_of(caller);
                (format!("{scope}|{who}"), kind)
            }
        }
    }

    /// A refusal by `limit`, counted.
    fn refused(&self, limit: Limit, key: KeyKind, retry_after: Duration) -> Limited {
        self.count(limit, key);
        Limited {
            limit,
            key,
            retry_after,
            per_minute: None,
        }
    }

    /// One call of the quota's interval, if it counts them.
    fn quota_call(&self, scope: &str, quota: &Quota, caller: &Caller) -> Result<(), Limited> {
        let Some(requests) = quota.requests else {
            return Ok(());
        };
        let (key, key_kind) = self.quota_key(scope, quota, caller);
        let rate = Rate::every(quota.interval() / requests.max(1), requests);
        self.quota_calls
            .take(&key, rate, Instant::now())
            .map_err(|wait| self.refused(Limit::QuotaRequests, key_kind, wait))
    }

    /// A slot in flight of the quota, if it counts them.
    fn quota_slot(
        &self,
        scope: &str,
        quota: &Quota,
        caller: &Caller,
    ) -> Result<Option<InFlight>, Limited> {
        let Some(most) = quota.concurrent else {
            return Ok(None);
        };
        let (key, key_kind) = self.quota_key(scope, quota, caller);
        let counter = {
            let mut in_flight = self.in_flight.lock().unwrap_or_else(|p| p.into_inner());
            // Keys with nothing in flight go when the table grows.
            if in_flight.len() >= 100_000 {
                in_flight.retain(|_, count| count.load(Ordering::Acquire) > 0);
            }
            in_flight.entry(key).or_default().clone()
        };
        let taken = counter.fetch_update(Ordering::AcqRel, Ordering::Acquire, |now| {
            (now < most).then_some(now + 1)
        });
        match taken {
            Ok(_) => Ok(Some(InFlight(counter))),
            Err(_) => Err(self.refused(Limit::QuotaConcurrent, key_kind, IN_FLIGHT_RETRY)),
        }
    }

    /// Whether a call to `backend` may go now; a call let through is
    /// followed by [`Limits::backend_answered`].
    /// `credential` gives a fingerprint of the credential the call carries
    /// ([`credential_fingerprint`], computed only when a `Retry-After` is
    /// held): a backend's `Retry-After` holds the calls with that
    /// credential.
    pub fn backend(&self, backend: &str, credential: &dyn Fn() -> String) -> Result<(), Limited> {
        self.backends
            .before(backend, credential, self.breaker(), Instant::now())
            .map_err(|refusal| {
                let (limit, retry_after) = match refusal {
                    Refusal::RetryAfter(wait) => (Limit::BackendRetryAfter, wait),
                    Refusal::BreakerOpen(wait) => (Limit::BackendBreaker, wait),
                };
                self.count(limit, KeyKind::Backend);
                Limited {
                    limit,
                    key: KeyKind::Backend,
                    retry_after,
                    per_minute: None,
                }
            })
    }

    /// How a call to `backend` let through by [`Limits::backend`] ended.
    pub fn backend_answered(
        &self,
        backend: &str,
        credential: &dyn Fn() -> String,
        outcome: Outcome,
    ) {
        self.backends
            .after(backend, credential, outcome, self.breaker(), Instant::now());
    }

    fn breaker(&self) -> Breaker {
        Breaker {
            failures: self.settings.breaker_failures,
            cooldown: Duration::from_millis(self.settings.breaker_cooldown_ms.max(1)),
        }
    }

    /// The allowance's key: the subject, else the address when the
    /// operator says addresses tell callers apart, else one for everyone
    /// anonymous.
    fn key_of(&self, caller: &Caller) -> (String, KeyKind) {
        match (caller.credentials.subject(), caller.address) {
            (Some(subject), _) => (format!("subject:{subject}"), KeyKind::Subject),
            (None, Some(address)) if self.settings.per_address => {
                (format!("address:{address}"), KeyKind::Address)
            }
            _ => ("anonymous".to_string(), KeyKind::Anonymous),
        }
    }

    /// The caller's rate of `kind`: the first group it belongs to that
    /// sets one, else the default; `None`: no limit.
    fn per_minute(&self, caller: &Caller, kind: Kind) -> Option<u32> {
        let of = |group: &crate::settings::LimitGroup| match kind {
            Kind::Search => group.search_per_minute,
            Kind::Invoke => group.invoke_per_minute,
        };
        let subject = caller.credentials.subject();
        self.settings
            .groups
            .iter()
            .filter(|group| {
                group
                    .scope
                    .as_deref()
                    .is_some_and(|s| caller.credentials.has_scope(s))
                    || (group.subject.is_some() && group.subject.as_deref() == subject)
            })
            .find_map(of)
            .or(match kind {
                Kind::Search => self.settings.search_per_minute,
                Kind::Invoke => self.settings.invoke_per_minute,
            })
    }

    fn count(&self, limit: Limit, key: KeyKind) {
        let limit = Limit::ALL.iter().position(|l| *l == limit).unwrap_or(0);
        let key = KeyKind::ALL.iter().position(|k| *k == key).unwrap_or(0);
        if let Some(counter) = self.limited.get(limit).and_then(|row| row.get(key)) {
            counter.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Calls refused, by limit and key kind, for `/status`.
    pub fn status(&self) -> serde_json::Value {
        let mut limited = serde_json::Map::new();
        for (limit, row) in Limit::ALL.iter().zip(&self.limited) {
            for (key, counter) in KeyKind::ALL.iter().zip(row) {
                let count = counter.load(Ordering::Relaxed);
                if count > 0 {
                    limited.insert(
                        format!("{}/{}", limit.as_str(), key.as_str()),
                        serde_json::json!(count),
                    );
                }
            }
        }
        let breakers: Vec<serde_json::Value> = self
            .backends
            .views(Instant::now())
            .into_iter()
            .map(|view| {
                serde_json::json!({
                    "backend": view.backend,
                    "state": view.state,
                    "failuresInARow": view.failures_in_a_row,
                })
            })
            .collect();
        let shared = self.shared.get();
        serde_json::json!({
            "invokePerMinute": self.settings.invoke_per_minute,
            "searchPerMinute": self.settings.search_per_minute,
            "limited": limited,
            "breakers": breakers,
            // Rates counted once across the replicas right now.
            "shared": shared.is_some_and(shared::Shared::is_up),
            "redis": shared.map(shared::Shared::status),
        })
    }

    /// `sezzlee_rate_limited_total{limit,key}` and
    /// `sezzlee_backend_breaker_open{backend}`, in Prometheus text.
    pub fn write_metrics(&self, out: &mut String) {
        if let Some(shared) = self.shared.get() {
            let _ = writeln!(
                out,
                "# HELP sezzlee_limits_redis_up Whether the last limit check reached Redis (0: each replica counts on its own).\n# TYPE sezzlee_limits_redis_up gauge\nsezzlee_limits_redis_up {}\n# HELP sezzlee_limits_redis_errors_total Limit checks Redis did not answer.\n# TYPE sezzlee_limits_redis_errors_total counter\nsezzlee_limits_redis_errors_total {}",
                u8::from(shared.is_up()),
                shared.errors()
            );
        }
        let _ = writeln!(
            out,
            "# HELP sezzlee_rate_limited_total Calls refused by a limit, by limit and what the key was (never the key).\n# TYPE sezzlee_rate_limited_total counter"
        );
        for (limit, row) in Limit::ALL.iter().zip(&self.limited) {
            for (key, counter) in KeyKind::ALL.iter().zip(row) {
                let _ = writeln!(
                    out,
                    "sezzlee_rate_limited_total{{limit=\"{}\",key=\"{}\"}} {}",
                    limit.as_str(),
                    key.as_str(),
                    counter.load(Ordering::Relaxed)
                );
            }
        }
        let _ = writeln!(
            out,
            "# HELP sezzlee_backend_breaker_open Whether a backend's circuit breaker refuses calls now (1) or lets a probe through (0.5).\n# TYPE sezzlee_backend_breaker_open gauge"
        );
        for view in self.backends.views(Instant::now()) {
            let value = match view.state {
                "open" => "1",
                "half_open" => "0.5",
                _ => "0",
            };
            let backend = view.backend.replace(['\\', '"', '\n'], "_");
            let _ = writeln!(
                out,
                "sezzlee_backend_breaker_open{{backend=\"{backend}\"}} {value}"
            );
        }
    }
}

/// A short fingerprint of the credential a call carries: the values of
/// `names` (its `Authorization`, the configured static headers) among
/// `headers`, hashed, so backend guards tell credentials apart without
/// keeping one.
pub fn credential_fingerprint<'h>(
    headers: impl IntoIterator<Item = &'h (String, String)>,
    names: &[&str],
) -> String {
    use sha2::{Digest, Sha256};
    let mut hasher = Sha256::new();
    for (name, value) in headers {
        if names.iter().any(|n| n.eq_ignore_ascii_case(name)) {
            hasher.update(name.to_ascii_lowercase().as_bytes());
            hasher.update(b"=");
            hasher.update(value.as_bytes());
            hasher.update(b"\n");
        }
    }
    hasher.finalize()[..8]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// How a backend's answer counts for its guard: its status and
/// `Retry-After` (`None`: no answer came, a failure).
pub fn outcome_of(status: Option<u16>, retry_after: Option<&str>) -> Outcome {
    let Some(status) = status else {
        return Outcome::Failed;
    };
    let failed = status >= 500;
    if matches!(status, 429 | 503)
        && let Some(wait) =
            retry_after.and_then(|v| backend_guard::retry_after(v, std::time::SystemTime::now()))
    {
        return Outcome::RetryAfter { wait, failed };
    }
    if failed {
        Outcome::Failed
    } else {
        Outcome::Answered
    }
}
