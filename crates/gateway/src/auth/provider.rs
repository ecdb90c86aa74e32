//! Keys from the identity provider: a JWKS by URL, or found through OIDC
//! discovery from the issuer, kept fresh while the gateway runs.
//!
//! Providers rotate keys; a gateway holding a copy would turn every caller
//! anonymous at the next rotation. So the key set is fetched at start and
//! refreshed in the background (after the `Cache-Control: max-age` the
//! provider sends, else the configured interval), fetched again when a
//! token names a key id the set does not hold (at most once per
//! `refetch_min_interval`, so forged key ids cannot make the gateway hammer
//! the provider; concurrent requests share one fetch), and the last good
//! set is kept while the provider is unreachable or answers with something
//! that is not a usable key set. What happened is counted for `/status`
//! and `/metrics`.

use super::keys::KeySet;
use arc_swap::ArcSwap;
use serde_json::{Value, json};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// The largest discovery document or key set read (a provider's is a few
/// KiB).
const MAX_DOCUMENT_BYTES: usize = 1024 * 1024;
/// A provider's `max-age` is honoured within these bounds.
const MIN_MAX_AGE: Duration = Duration::from_secs(30);
const MAX_MAX_AGE: Duration = Duration::from_secs(24 * 3600);
/// After a failed fetch the next is tried after this, doubling per failure
/// up to the refresh interval.
const FIRST_RETRY: Duration = Duration::from_secs(1);

/// Where the key set comes from.
#[derive(Debug, Clone)]
pub enum KeySource {
    /// A JWKS URL.
    Jwks(String),
    /// An issuer: `{issuer}/.well-known/openid-configuration` names the
    /// `jwks_uri`.
    Issuer(String),
}

/// How the key set is kept fresh.
#[derive(Debug, Clone)]
pub struct Timing {
    pub refresh_interval: Duration,
    pub refetch_min_interval: Duration,
    pub fetch_timeout: Duration,
}

/// The provider's current keys and the record of fetching them.
pub struct ProviderKeys {
    source: KeySource,
    timing: Timing,
    client: reqwest::Client,
    keys: ArcSwap<KeySet>,
    record: Mutex<Record>,
    /// Held while a fetch runs: concurrent callers wait for it rather than
    /// fetching again.
    fetching: tokio::sync::Mutex<()>,
    /// Told when a fetch sets the next refresh time.
    rescheduled: tokio::sync::Notify,
    fetches: AtomicU64,
    failures: AtomicU64,
    /// Unknown-key-id refetches refused by the rate limit.
    refetches_limited: AtomicU64,
}

#[derive(Default)]
struct Record {
    /// The key set URL, once known (discovery is repeated after a failure).
    jwks_uri: Option<String>,
    last_attempt: Option<Instant>,
    last_finished: Option<Instant>,
    last_success: Option<SystemTime>,
    last_error: Option<String>,
    consecutive_failures: u32,
    /// When the background refresh should run next.
    next_refresh: Option<Instant>,
}

impl ProviderKeys {
    pub fn new(source: KeySource, timing: Timing) -> Result<ProviderKeys, String> {
        let url = match &source {
            KeySource::Jwks(url) | KeySource::Issuer(url) => url,
        };
        if !(url.starts_with("https://") || url.starts_with("http://")) {
            return Err(format!("'{url}' is not an http(s) URL"));
        }
        let client = reqwest::Client::builder()
            .timeout(timing.fetch_timeout)
            .connect_timeout(timing.fetch_timeout)
            .redirect(reqwest::redirect::Policy::limited(3))
            .user_agent(concat!("sezzlee/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| format!("cannot create the HTTP client: {e}"))?;
        Ok(ProviderKeys {
            source,
            timing,
            client,
            keys: ArcSwap::from_pointee(KeySet::default()),
            record: Mutex::new(Record::default()),
            fetching: tokio::sync::Mutex::new(()),
            rescheduled: tokio::sync::Notify::new(),
            fetches: AtomicU64::new(0),
            failures: AtomicU64::new(0),
            refetches_limited: AtomicU64::new(0),
        })
    }

    /// The current key set (empty until the first fetch succeeds).
    pub fn current(&self) -> Arc<KeySet> {
        self.keys.load_full()
    }

    /// Runs the background refresh until `stop` says so: a fetch at once,
    /// then whenever one is due (a fetch for an unknown key id moves the
    /// due time, and wakes it).
    pub fn spawn_refresher(self: &Arc<Self>, mut stop: crate::shutdown::ShutdownSignal) {
        let keys = Arc::clone(self);
        tokio::spawn(async move {
            loop {
                let wait = keys.until_next_refresh();
                if wait.is_zero() {
                    keys.fetch_now().await;
                    continue;
                }
                tokio::select! {
                    () = tokio::time::sleep(wait) => {}
                    () = keys.rescheduled.notified() => {}
                    () = stop.begun() => return,
                }
            }
        });
    }

    /// A token named a key id no key holds: fetches the set again unless a
    /// fetch started less than `refetch_min_interval` ago. Returns whether
    /// the set may have changed since the caller looked (a fetch ran or
    /// finished meanwhile), so that the token is worth checking again.
    pub async fn refetch_for_unknown_key(&self, looked_at: Instant) -> bool {
        let _fetching = self.fetching.lock().await;
        let (last, finished) = {
            let record = self.record();
            (record.last_attempt, record.last_finished)
        };
        if finished.is_some_and(|finished| finished > looked_at) {
            // A fetch finished since the caller looked at the keys.
            return true;
        }
        if last.is_some_and(|last| last.elapsed() < self.timing.refetch_min_interval) {
            self.refetches_limited.fetch_add(1, Ordering::Relaxed);
            return false;
        }
        self.fetch_locked().await
    }

    /// Fetches now (waiting for a fetch under way instead of starting a
    /// second one); whether the set was replaced.
    async fn fetch_now(&self) -> bool {
        let _fetching = self.fetching.lock().await;
        self.fetch_locked().await
    }

    async fn fetch_locked(&self) -> bool {
        let started = Instant::now();
        self.record().last_attempt = Some(started);
        self.fetches.fetch_add(1, Ordering::Relaxed);
        let replaced = self.fetch_and_record().await;
        self.record().last_finished = Some(Instant::now());
        self.rescheduled.notify_one();
        replaced
    }

    async fn fetch_and_record(&self) -> bool {
        match self.fetch_key_set().await {
            Ok((set, max_age, skipped)) => {
                for why in &skipped {
                    tracing::debug!("identity provider key skipped: {why}");
                }
                let count = set.len();
                self.keys.store(Arc::new(set));
                let mut record = self.record();
                record.last_success = Some(SystemTime::now());
                record.last_error = None;
                record.consecutive_failures = 0;
                let wait = keep_for(max_age, self.timing.refresh_interval);
                record.next_refresh = Some(Instant::now() + wait);
                tracing::info!(
                    keys = count,
                    skipped = skipped.len(),
                    next_refresh_s = wait.as_secs(),
                    "identity provider keys refreshed"
                );
                true
            }
            Err(why) => {
                self.failures.fetch_add(1, Ordering::Relaxed);
                let mut record = self.record();
                record.consecutive_failures = record.consecutive_failures.saturating_add(1);
                // Discover again next time: the provider may have moved it.
                if matches!(self.source, KeySource::Issuer(_)) {
                    record.jwks_uri = None;
                }
                let doubling = 1u32 << record.consecutive_failures.min(16).saturating_sub(1);
                let wait = (FIRST_RETRY * doubling).min(self.timing.refresh_interval);
                record.next_refresh = Some(Instant::now() + wait);
                tracing::warn!(
                    failures = record.consecutive_failures,
                    retry_ms = wait.as_millis() as u64,
                    "identity provider keys not refreshed ({why}); the last good keys stay in use"
                );
                record.last_error = Some(why);
                false
            }
        }
    }

    /// The key set, its `max-age` and the keys skipped.
    async fn fetch_key_set(&self) -> Result<(KeySet, Option<Duration>, Vec<String>), String> {
        let known = self.record().jwks_uri.clone();
        let jwks_uri = match (&self.source, known) {
            (KeySource::Jwks(url), _) => url.clone(),
            (KeySource::Issuer(_), Some(known)) => known,
            (KeySource::Issuer(issuer), None) => {
                let found = self.discover(issuer).await?;
                self.record().jwks_uri = Some(found.clone());
                found
            }
        };
        let (body, max_age) = self.get(&jwks_uri).await?;
        let (set, skipped) =
            KeySet::from_jwks(&body).map_err(|why| format!("{jwks_uri}: {why}"))?;
        if set.is_empty() {
            return Err(format!(
                "{jwks_uri}: no usable signing key ({} skipped)",
                skipped.len()
            ));
        }
        Ok((set, max_age, skipped))
    }

    /// The `jwks_uri` of an issuer's OpenID configuration, whose `issuer`
    /// must be the configured one (OpenID Connect Discovery §4.3).
    async fn discover(&self, issuer: &str) -> Result<String, String> {
        let url = format!(
            "{}/.well-known/openid-configuration",
            issuer.trim_end_matches('/')
        );
        let (body, _) = self.get(&url).await?;
        let document: Value =
            serde_json::from_slice(&body).map_err(|e| format!("{url}: not JSON: {e}"))?;
        let named = document.get("issuer").and_then(Value::as_str);
        if named.map(|n| n.trim_end_matches('/')) != Some(issuer.trim_end_matches('/')) {
            return Err(format!(
                "{url}: names issuer {named:?}, not the configured '{issuer}'"
            ));
        }
        document
            .get("jwks_uri")
            .and_then(Value::as_str)
            .map(str::to_string)
            .ok_or_else(|| format!("{url}: no jwks_uri"))
    }

    /// GETs a small JSON document: its body (at most
    /// [`MAX_DOCUMENT_BYTES`]) and `Cache-Control: max-age`.
    async fn get(&self, url: &str) -> Result<(Vec<u8>, Option<Duration>), String> {
        let mut response = self
            .client
            .get(url)
            .header(reqwest::header::ACCEPT, "application/json")
            .send()
            .await
            .map_err(|e| format!("{url}: {}", without_url(&e)))?;
        if !response.status().is_success() {
            return Err(format!("{url}: HTTP {}", response.status().as_u16()));
        }
        let max_age = response
            .headers()
            .get(reqwest::header::CACHE_CONTROL)
            .and_then(|v| v.to_str().ok())
            .and_then(max_age);
        let mut body = Vec::new();
        while let Some(chunk) = response
            .chunk()
            .await
            .map_err(|e| format!("{url}: {}", without_url(&e)))?
        {
            if body.len() + chunk.len() > MAX_DOCUMENT_BYTES {
                return Err(format!("{url}: larger than {MAX_DOCUMENT_BYTES} bytes"));
            }
            body.extend_from_slice(&chunk);
        }
        Ok((body, max_age))
    }

    fn record(&self) -> std::sync::MutexGuard<'_, Record> {
        self.record
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// How long until the next refresh is due (zero before the first).
    fn until_next_refresh(&self) -> Duration {
        self.record().next_refresh.map_or(Duration::ZERO, |next| {
            next.saturating_duration_since(Instant::now())
        })
    }

    /// What `/status` shows of the provider's keys.
    pub fn status(&self) -> Value {
        let record = self.record();
        let (kind, url) = match &self.source {
            KeySource::Jwks(url) => ("jwks_url", url),
            KeySource::Issuer(url) => ("issuer", url),
        };
        json!({
            "source": kind,
            "url": url,
            "jwksUri": record.jwks_uri.clone().or_else(|| match &self.source {
                KeySource::Jwks(url) => Some(url.clone()),
                KeySource::Issuer(_) => None,
            }),
            "keys": self.keys.load().len(),
            "lastRefreshAtUnixMs": record.last_success.map(unix_ms),
            "refreshFailing": record.consecutive_failures > 0,
            "consecutiveFailures": record.consecutive_failures,
            "lastError": record.last_error,
            "fetches": self.fetches.load(Ordering::Relaxed),
            "failures": self.failures.load(Ordering::Relaxed),
            "refetchesRateLimited": self.refetches_limited.load(Ordering::Relaxed),
        })
    }

    /// The figures `/metrics` shows: (keys, failing, last refresh unix
    /// seconds, fetches, failures, refetches rate limited).
    pub fn figures(&self) -> ProviderFigures {
        let record = self.record();
        ProviderFigures {
            keys: self.keys.load().len(),
            failing: record.consecutive_failures > 0,
            last_refresh_unix_s: record.last_success.map(|t| unix_ms(t) as f64 / 1000.0),
            fetches: self.fetches.load(Ordering::Relaxed),
            failures: self.failures.load(Ordering::Relaxed),
            refetches_limited: self.refetches_limited.load(Ordering::Relaxed),
        }
    }
}

/// What `/metrics` reports of the provider's keys.
pub struct ProviderFigures {
    pub keys: usize,
    pub failing: bool,
    pub last_refresh_unix_s: Option<f64>,
    pub fetches: u64,
    pub failures: u64,
    pub refetches_limited: u64,
}

fn unix_ms(time: SystemTime) -> u64 {
    time.duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or_default()
}

/// A request error's text without the URL (it is logged beside it).
fn without_url(error: &reqwest::Error) -> String {
    let kind = if error.is_timeout() {
        "timed out"
    } else if error.is_connect() {
        "cannot connect"
    } else {
        "request failed"
    };
    match std::error::Error::source(error) {
        Some(source) => format!("{kind}: {source}"),
        None => kind.to_string(),
    }
}

/// How long a fetched key set is used: the configured interval at most; a
/// provider's shorter `max-age` wins, though never below a floor (so a
/// `no-cache` provider is not fetched on every request).
fn keep_for(max_age: Option<Duration>, interval: Duration) -> Duration {
    match max_age {
        Some(age) => age.clamp(MIN_MAX_AGE, MAX_MAX_AGE).min(interval),
        None => interval,
    }
}

/// `max-age` of a `Cache-Control` value (`no-store`/`no-cache` count as 0).
fn max_age(value: &str) -> Option<Duration> {
    let mut age = None;
    for directive in value.split(',').map(str::trim) {
        let lower = directive.to_ascii_lowercase();
        if lower == "no-store" || lower == "no-cache" {
            return Some(Duration::ZERO);
        }
        if let Some(seconds) = lower.strip_prefix("max-age=") {
            age = seconds
                .trim_matches('"')
                .parse::<u64>()
                .ok()
                .map(Duration::from_secs);
        }
    }
    age
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cache_control_max_age() {
        assert_eq!(
            max_age("public, max-age=3600"),
            Some(Duration::from_secs(3600))
        );
        assert_eq!(max_age("max-age=\"60\""), Some(Duration::from_secs(60)));
        assert_eq!(max_age("no-store"), Some(Duration::ZERO));
        assert_eq!(max_age("public"), None);
        assert_eq!(max_age("max-age=soon"), None);
    }

    #[test]
    fn a_key_set_is_kept_for_the_shorter_of_max_age_and_the_interval() {
        let five_minutes = Duration::from_secs(300);
        assert_eq!(keep_for(None, five_minutes), five_minutes);
        assert_eq!(
            keep_for(Some(Duration::from_secs(3600)), five_minutes),
            five_minutes
        );
        assert_eq!(
            keep_for(Some(Duration::from_secs(120)), five_minutes),
            Duration::from_secs(120)
        );
        assert_eq!(keep_for(Some(Duration::ZERO), five_minutes), MIN_MAX_AGE);
    }

    #[test]
    fn only_http_urls_are_sources() {
        let timing = Timing {
            refresh_interval: Duration::from_secs(60),
            refetch_min_interval: Duration::from_secs(10),
            fetch_timeout: Duration::from_secs(5),
        };
        assert!(
            ProviderKeys::new(KeySource::Jwks("file:///etc/keys".into()), timing.clone()).is_err()
        );
        assert!(
            ProviderKeys::new(KeySource::Issuer("https://id.example.com".into()), timing).is_ok()
        );
    }
}
