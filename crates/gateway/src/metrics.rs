//! Request metrics for `GET /metrics`: how the three tools and the backend
//! calls end, and how long they take; the HTTP responses the gateway sent,
//! by status; reloads that failed; and the async runtimes whose tasks
//! `/status` and `/metrics` count ([`Metrics::runtime_figures`]).
//!
//! Counters by outcome and latency histograms, kept in atomics (a request
//! adds, never locks, except the per-target map of invoked tools and a
//! read lock to find a backend host's figures). Label sets are bounded by
//! construction: outcomes are the envelope's codes, backend outcomes are a
//! few classes, backend hosts are the first [`MAX_HOSTS`] seen (then
//! `(other)`), HTTP statuses are three-digit codes, reload failures a few
//! reasons, and invoked targets are labelled by tool only when the catalog
//! is small ([`PER_TOOL_UP_TO`] tools), else by document, with at most
//! [`MAX_TARGETS`] distinct ones (then `(other)`).

use crate::failure_code::Code;
use std::borrow::Cow;
use std::collections::HashMap;
use std::fmt::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;
use tokio::runtime::Handle;

/// Histogram bucket bounds, in seconds.
const BUCKETS: [f64; 14] = [
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0, 5.0, 30.0,
];
/// Invoked tools are labelled by name up to this many tools in the
/// catalog, by document beyond.
pub const PER_TOOL_UP_TO: usize = 200;
/// Most distinct invoke targets counted (renames across reloads add more).
pub const MAX_TARGETS: usize = 1000;
/// Most distinct backend hosts labelled; calls to hosts first seen after
/// them are counted as `host="(other)"`.
pub const MAX_HOSTS: usize = 64;
/// The label of the hosts beyond [`MAX_HOSTS`] (and of a URL without a
/// host): not a host name, so never mistaken for one.
const OTHER_HOST: &str = "(other)";

/// The three tools, in label order.
const TOOLS: [&str; 3] = ["search_tools", "load_tool", "invoke_tool"];
/// Outcomes of a tool: `ok`, then every envelope code.
const OUTCOMES: usize = 1 + Code::ALL.len();
/// How a backend call ended.
const BACKEND_OUTCOMES: [&str; 6] = ["2xx", "3xx", "4xx", "5xx", "unavailable", "timeout"];
/// HTTP status codes as `http::StatusCode` allows them: 100 to 999.
const STATUS_CODES: std::ops::RangeInclusive<u16> = 100..=999;
/// The statuses the gateway's own routes answer with, shown even at 0 so
/// that a rate over them exists before the first one (others are shown
/// once sent).
const ANSWERED_STATUSES: [u16; 11] = [200, 202, 400, 401, 403, 404, 405, 413, 429, 500, 503];

/// A latency histogram.
#[derive(Default)]
struct Histogram {
    buckets: [AtomicU64; BUCKETS.len()],
    count: AtomicU64,
    sum_micros: AtomicU64,
}

impl Histogram {
    fn observe(&self, elapsed: Duration) {
        let seconds = elapsed.as_secs_f64();
        if let Some(bucket) = BUCKETS.iter().position(|bound| seconds <= *bound) {
            self.buckets[bucket].fetch_add(1, Ordering::Relaxed);
        }
        self.count.fetch_add(1, Ordering::Relaxed);
        self.sum_micros
            .fetch_add(elapsed.as_micros() as u64, Ordering::Relaxed);
    }

    /// The histogram as JSON: bucket upper bounds in milliseconds with
    /// their own (not cumulative) counts, the count and the mean.
    fn to_value(&self) -> serde_json::Value {
        let count = self.count.load(Ordering::Relaxed);
        let buckets: Vec<serde_json::Value> = BUCKETS
            .iter()
            .zip(&self.buckets)
            .map(|(bound, n)| serde_json::json!({"leMs": bound * 1000.0, "count": n.load(Ordering::Relaxed)}))
            .collect();
        let above =
            count.saturating_sub(self.buckets.iter().map(|n| n.load(Ordering::Relaxed)).sum());
        let sum_ms = self.sum_micros.load(Ordering::Relaxed) as f64 / 1000.0;
        serde_json::json!({
            "count": count,
            "meanMs": if count == 0 { 0.0 } else { sum_ms / count as f64 },
            "buckets": buckets,
            "above": above,
        })
    }

    /// The histogram's lines (cumulative buckets) under `labels`.
    fn write(&self, out: &mut String, name: &str, labels: &str) {
        let mut cumulative = 0;
        for (bound, bucket) in BUCKETS.iter().zip(&self.buckets) {
            cumulative += bucket.load(Ordering::Relaxed);
            let _ = writeln!(out, "{name}_bucket{{{labels},le=\"{bound}\"}} {cumulative}");
        }
        let count = self.count.load(Ordering::Relaxed);
        let sum = self.sum_micros.load(Ordering::Relaxed) as f64 / 1e6;
        let _ = writeln!(out, "{name}_bucket{{{labels},le=\"+Inf\"}} {count}");
        let _ = writeln!(out, "{name}_sum{{{labels}}} {sum}");
        let _ = writeln!(out, "{name}_count{{{labels}}} {count}");
    }
}

/// Counts per outcome of one tool, and its latency.
#[derive(Default)]
struct ToolFigures {
    outcomes: [AtomicU64; OUTCOMES],
    latency: Histogram,
}

/// How a backend call ended, for [`Metrics::backend_call`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BackendOutcome {
    Status(u16),
    Unavailable,
    Timeout,
}

/// Counts per outcome of the calls to one backend host, and their latency.
#[derive(Default)]
struct BackendFigures {
    outcomes: [AtomicU64; BACKEND_OUTCOMES.len()],
    latency: Histogram,
}

/// Why a reload failed, for [`Metrics::reload_failed`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReloadFailure {
    /// The catalogs folder could not be read: the served catalog stays.
    FolderUnreadable,
    /// The rebuild did not finish (it panicked): the served catalog stays.
    RebuildFailed,
    /// A file whose bytes changed was refused (it does not parse, or it is
    /// a sidecar with an invalid value): its last good version serves.
    FileRefused,
}

impl ReloadFailure {
    const ALL: [ReloadFailure; 3] = [
        ReloadFailure::FolderUnreadable,
        ReloadFailure::RebuildFailed,
        ReloadFailure::FileRefused,
    ];

    fn as_str(self) -> &'static str {
        match self {
            ReloadFailure::FolderUnreadable => "folder_unreadable",
            ReloadFailure::RebuildFailed => "rebuild_failed",
            ReloadFailure::FileRefused => "file_refused",
        }
    }
}

/// Responses counted per status code (100 to 999).
struct HttpStatuses([AtomicU64; 900]);

impl Default for HttpStatuses {
    fn default() -> Self {
        HttpStatuses(std::array::from_fn(|_| AtomicU64::new(0)))
    }
}

impl HttpStatuses {
    fn count(&self, status: u16) -> Option<&AtomicU64> {
        let index = status.checked_sub(*STATUS_CODES.start())?;
        self.0.get(usize::from(index))
    }
}

/// Every figure `/metrics` shows of requests.
#[derive(Default)]
pub struct Metrics {
    tools: [ToolFigures; 3],
    /// Per backend host (lowercase), at most [`MAX_HOSTS`] and
    /// [`OTHER_HOST`].
    backends: RwLock<HashMap<Box<str>, Arc<BackendFigures>>>,
    http: HttpStatuses,
    reload_failures: [AtomicU64; ReloadFailure::ALL.len()],
    /// Invocations per target (`tool="…"` or `document="…"` label text)
    /// and outcome.
    invoked: Mutex<HashMap<String, [u64; OUTCOMES]>>,
    runtimes: Runtimes,
}

/// The async runtimes whose workers and tasks are counted: the one the
/// metrics were made on (the gateway is built on the runtime `sezzlee
/// serve` starts, where the accept loop and reloads run) and those added
/// with [`Metrics::watch_runtime`] (the server's other runtimes, if any).
struct Runtimes {
    handles: Mutex<Vec<Handle>>,
}

impl Default for Runtimes {
    fn default() -> Self {
        Runtimes {
            handles: Mutex::new(Handle::try_current().into_iter().collect()),
        }
    }
}

/// Worker threads and alive tasks (spawned and not yet finished) summed
/// over the counted runtimes, from tokio's stable runtime metrics.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RuntimeFigures {
    pub runtimes: usize,
    pub workers: usize,
    pub alive_tasks: usize,
}

/// The outcome index of an answer's failure code (0: ok).
fn outcome_index(code: Option<&str>) -> usize {
    code.and_then(|code| Code::ALL.iter().position(|c| c.as_str() == code))
        .map_or(0, |i| i + 1)
}

fn outcome_name(index: usize) -> &'static str {
    index
        .checked_sub(1)
        .and_then(|i| Code::ALL.get(i))
        .map_or("ok", |code| code.as_str())
}

/// A label value with `\`, `"` and line breaks escaped (Prometheus text).
pub(crate) fn label_value(text: &str) -> String {
    text.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

impl Metrics {
    /// One call of tool `tool` (0 search, 1 load, 2 invoke) that ended
    /// with `code` (`None`: success) after `elapsed`.
    pub fn tool_call(&self, tool: usize, code: Option<&str>, elapsed: Duration) {
        let Some(figures) = self.tools.get(tool) else {
            return;
        };
        figures.outcomes[outcome_index(code)].fetch_add(1, Ordering::Relaxed);
        figures.latency.observe(elapsed);
    }

    /// One backend call to `host` (a host name or address only: never a
    /// path, a query or credentials; `crate::backend::host_of`).
    pub fn backend_call(&self, host: &str, outcome: BackendOutcome, elapsed: Duration) {
        let index = match outcome {
            BackendOutcome::Status(status) => match status {
                200..=299 => 0,
                300..=399 => 1,
                400..=499 => 2,
                _ => 3,
            },
            BackendOutcome::Unavailable => 4,
            BackendOutcome::Timeout => 5,
        };
        let figures = self.backend_figures(host);
        figures.outcomes[index].fetch_add(1, Ordering::Relaxed);
        figures.latency.observe(elapsed);
    }

    /// The figures of `host`'s calls: its own among the first
    /// [`MAX_HOSTS`] hosts, else those of [`OTHER_HOST`].
    fn backend_figures(&self, host: &str) -> Arc<BackendFigures> {
        let host = if host.is_empty() {
            Cow::Borrowed(OTHER_HOST)
        } else if host.bytes().any(|b| b.is_ascii_uppercase()) {
            Cow::Owned(host.to_ascii_lowercase())
        } else {
            Cow::Borrowed(host)
        };
        let found = self
            .backends
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(&*host)
            .cloned();
        if let Some(figures) = found {
            return figures;
        }
        let mut backends = self
            .backends
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let hosts = backends.len() - usize::from(backends.contains_key(OTHER_HOST));
        let key = if hosts < MAX_HOSTS || backends.contains_key(&*host) {
            host
        } else {
            Cow::Borrowed(OTHER_HOST)
        };
        backends.entry(key.into()).or_default().clone()
    }

    /// One HTTP response sent, with `status`.
    pub fn http_response(&self, status: u16) {
        if let Some(count) = self.http.count(status) {
            count.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// One reload that failed, or whose changed files were refused.
    pub fn reload_failed(&self, why: ReloadFailure) {
        if let Some(index) = ReloadFailure::ALL.iter().position(|r| *r == why) {
            self.reload_failures[index].fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Reloads that failed, or whose changed files were refused, in all.
    pub fn reload_failures(&self) -> u64 {
        self.reload_failures
            .iter()
            .map(|count| count.load(Ordering::Relaxed))
            .sum()
    }

    /// One invocation of a catalog tool, labelled by `tool` in a catalog of
    /// `catalog_tools` tools, else by its `document`.
    pub fn invoked(&self, tool: &str, document: &str, catalog_tools: usize, code: Option<&str>) {
        let target = if catalog_tools <= PER_TOOL_UP_TO {
            format!("tool=\"{}\"", label_value(tool))
        } else {
            format!("document=\"{}\"", label_value(document))
        };
        let mut invoked = self
            .invoked
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let key = if invoked.len() < MAX_TARGETS || invoked.contains_key(&target) {
            target
        } else {
            "tool=\"(other)\"".to_string()
        };
        invoked.entry(key).or_insert([0; OUTCOMES])[outcome_index(code)] += 1;
    }

    /// Counts `handle`'s workers and tasks too (once, however often added).
    pub fn watch_runtime(&self, handle: &Handle) {
        let mut handles = self
            .runtimes
            .handles
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if !handles.iter().any(|known| known.id() == handle.id()) {
            handles.push(handle.clone());
        }
    }

    /// Workers and alive tasks of the counted runtimes and of the one
    /// calling, if it is another.
    pub fn runtime_figures(&self) -> RuntimeFigures {
        let mut handles = self
            .runtimes
            .handles
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone();
        if let Ok(current) = Handle::try_current()
            && !handles.iter().any(|known| known.id() == current.id())
        {
            handles.push(current);
        }
        let mut figures = RuntimeFigures {
            runtimes: handles.len(),
            workers: 0,
            alive_tasks: 0,
        };
        for handle in &handles {
            let metrics = handle.metrics();
            figures.workers += metrics.num_workers();
            figures.alive_tasks += metrics.num_alive_tasks();
        }
        figures
    }

    /// The tools', backends' and invocations' figures as JSON (the
    /// console's Traffic page): the same counters `write` prints.
    pub fn traffic(&self) -> serde_json::Value {
        use serde_json::json;
        let outcomes = |counts: &[u64]| -> serde_json::Map<String, serde_json::Value> {
            counts
                .iter()
                .enumerate()
                .filter(|(i, c)| **c > 0 || *i == 0)
                .map(|(i, c)| (outcome_name(i).to_string(), json!(c)))
                .collect()
        };
        let tools: Vec<serde_json::Value> = TOOLS
            .iter()
            .zip(&self.tools)
            .map(|(tool, figures)| {
                let counts: Vec<u64> = figures.outcomes.iter().map(|c| c.load(Ordering::Relaxed)).collect();
                json!({"tool": tool, "outcomes": outcomes(&counts), "latency": figures.latency.to_value()})
            })
            .collect();
        let backends = self
            .backends
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut hosts: Vec<serde_json::Value> = backends
            .iter()
            .map(|(host, figures)| {
                let outcomes: serde_json::Map<String, serde_json::Value> = BACKEND_OUTCOMES
                    .iter()
                    .zip(&figures.outcomes)
                    .map(|(name, c)| (name.to_string(), json!(c.load(Ordering::Relaxed))))
                    .collect();
                json!({"host": &**host, "outcomes": outcomes, "latency": figures.latency.to_value()})
            })
            .collect();
        drop(backends);
        hosts.sort_by(|a, b| a["host"].as_str().cmp(&b["host"].as_str()));
        let invoked = self
            .invoked
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut targets: Vec<serde_json::Value> = invoked
            .iter()
            .map(|(label, counts)| {
                // `tool="name"` or `document="file"`, as labelled.
                let (kind, quoted) = label.split_once('=').unwrap_or(("tool", label));
                let name = quoted
                    .trim_matches('"')
                    .replace("\\n", "\n")
                    .replace("\\\"", "\"")
                    .replace("\\\\", "\\");
                json!({"kind": kind, "name": name, "outcomes": outcomes(counts), "calls": counts.iter().sum::<u64>()})
            })
            .collect();
        drop(invoked);
        targets.sort_by(|a, b| b["calls"].as_u64().cmp(&a["calls"].as_u64()));
        json!({
            "tools": tools,
            "backends": hosts,
            "invoked": targets,
            "perToolUpTo": PER_TOOL_UP_TO,
        })
    }

    /// The Prometheus text of every figure.
    pub fn write(&self, out: &mut String) {
        let name = "sezzlee_tool_calls_total";
        let _ = writeln!(
            out,
            "# HELP {name} Calls of search_tools, load_tool and invoke_tool by outcome (ok or the envelope's error code).\n# TYPE {name} counter"
        );
        for (tool, figures) in TOOLS.iter().zip(&self.tools) {
            for (i, count) in figures.outcomes.iter().enumerate() {
                let count = count.load(Ordering::Relaxed);
                if count > 0 || i == 0 {
                    let outcome = outcome_name(i);
                    let _ = writeln!(
                        out,
                        "{name}{{tool=\"{tool}\",outcome=\"{outcome}\"}} {count}"
                    );
                }
            }
        }
        let name = "sezzlee_tool_call_seconds";
        let _ = writeln!(
            out,
            "# HELP {name} Time to answer search_tools, load_tool and invoke_tool.\n# TYPE {name} histogram"
        );
        for (tool, figures) in TOOLS.iter().zip(&self.tools) {
            figures
                .latency
                .write(out, name, &format!("tool=\"{tool}\""));
        }
        let backends = self
            .backends
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut hosts: Vec<_> = backends
            .iter()
            .map(|(host, figures)| (label_value(host), figures.clone()))
            .collect();
        drop(backends);
        hosts.sort_by(|a, b| a.0.cmp(&b.0));
        let name = "sezzlee_backend_calls_total";
        let _ = writeln!(
            out,
            "# HELP {name} Backend calls by host (the first {MAX_HOSTS} seen, then (other)) and outcome (HTTP status class, unavailable, timeout).\n# TYPE {name} counter"
        );
        for (host, figures) in &hosts {
            for (outcome, count) in BACKEND_OUTCOMES.iter().zip(&figures.outcomes) {
                let _ = writeln!(
                    out,
                    "{name}{{host=\"{host}\",outcome=\"{outcome}\"}} {}",
                    count.load(Ordering::Relaxed)
                );
            }
        }
        let name = "sezzlee_backend_call_seconds";
        let _ = writeln!(
            out,
            "# HELP {name} Time of backend calls by host, until the response is read.\n# TYPE {name} histogram"
        );
        for (host, figures) in &hosts {
            figures
                .latency
                .write(out, name, &format!("host=\"{host}\""));
        }
        let name = "sezzlee_http_responses_total";
        let _ = writeln!(
            out,
            "# HELP {name} HTTP responses the gateway sent, by status code.\n# TYPE {name} counter"
        );
        for (status, count) in STATUS_CODES.zip(&self.http.0) {
            let count = count.load(Ordering::Relaxed);
            if count > 0 || ANSWERED_STATUSES.contains(&status) {
                let _ = writeln!(out, "{name}{{status=\"{status}\"}} {count}");
            }
        }
        let name = "sezzlee_reload_failures_total";
        let _ = writeln!(
            out,
            "# HELP {name} Reloads that failed (folder_unreadable, rebuild_failed: the served catalog stays) or refused a changed file (file_refused: its last good version serves).\n# TYPE {name} counter"
        );
        for (why, count) in ReloadFailure::ALL.iter().zip(&self.reload_failures) {
            let _ = writeln!(
                out,
                "{name}{{reason=\"{}\"}} {}",
                why.as_str(),
                count.load(Ordering::Relaxed)
            );
        }
        let name = "sezzlee_invocations_total";
        let _ = writeln!(
            out,
            "# HELP {name} invoke_tool calls per target (by tool in catalogs of at most {PER_TOOL_UP_TO} tools, else by document) and outcome.\n# TYPE {name} counter"
        );
        let invoked = self
            .invoked
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut targets: Vec<_> = invoked.iter().collect();
        targets.sort_by(|a, b| a.0.cmp(b.0));
        for (target, counts) in targets {
            for (i, count) in counts.iter().enumerate().filter(|(_, c)| **c > 0) {
                let outcome = outcome_name(i);
                let _ = writeln!(out, "{name}{{{target},outcome=\"{outcome}\"}} {count}");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outcomes_and_histograms_are_written_in_prometheus_text() {
        let metrics = Metrics::default();
        metrics.tool_call(0, None, Duration::from_micros(300));
        metrics.tool_call(2, Some("tool_changed"), Duration::from_millis(2));
        metrics.backend_call(
            "API.example.com",
            BackendOutcome::Status(404),
            Duration::from_millis(3),
        );
        metrics.http_response(413);
        metrics.http_response(413);
        metrics.http_response(999);
        metrics.reload_failed(ReloadFailure::FileRefused);
        metrics.invoked("get_\"x\"", "a.json", 10, None);
        metrics.invoked("other", "b.json", 10_000, Some("backend_status"));
        let mut out = String::new();
        metrics.write(&mut out);
        for line in [
            "sezzlee_tool_calls_total{tool=\"search_tools\",outcome=\"ok\"} 1",
            "sezzlee_tool_calls_total{tool=\"invoke_tool\",outcome=\"tool_changed\"} 1",
            "sezzlee_tool_call_seconds_bucket{tool=\"search_tools\",le=\"0.0005\"} 1",
            "sezzlee_tool_call_seconds_bucket{tool=\"search_tools\",le=\"0.00025\"} 0",
            "sezzlee_tool_call_seconds_count{tool=\"invoke_tool\"} 1",
            "sezzlee_backend_calls_total{host=\"api.example.com\",outcome=\"4xx\"} 1",
            "sezzlee_backend_calls_total{host=\"api.example.com\",outcome=\"2xx\"} 0",
            "sezzlee_backend_call_seconds_count{host=\"api.example.com\"} 1",
            "sezzlee_http_responses_total{status=\"413\"} 2",
            "sezzlee_http_responses_total{status=\"429\"} 0",
            "sezzlee_http_responses_total{status=\"999\"} 1",
            "sezzlee_reload_failures_total{reason=\"file_refused\"} 1",
            "sezzlee_reload_failures_total{reason=\"folder_unreadable\"} 0",
            "sezzlee_invocations_total{tool=\"get_\\\"x\\\"\",outcome=\"ok\"} 1",
            "sezzlee_invocations_total{document=\"b.json\",outcome=\"backend_status\"} 1",
        ] {
            assert!(out.lines().any(|l| l == line), "{line}\n{out}");
        }
    }

    #[test]
    fn runtime_figures_sum_the_runtime_made_on_and_those_watched() {
        let main = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .build()
            .expect("runtime");
        let metrics = main.block_on(async { Metrics::default() });
        for _ in 0..3 {
            main.spawn(std::future::pending::<()>());
        }
        let figures = metrics.runtime_figures();
        assert_eq!((figures.runtimes, figures.workers), (1, 2));
        assert_eq!(figures.alive_tasks, 3);
        let serving = tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("runtime");
        serving.spawn(std::future::pending::<()>());
        metrics.watch_runtime(serving.handle());
        metrics.watch_runtime(serving.handle());
        let figures = metrics.runtime_figures();
        assert_eq!(
            figures,
            RuntimeFigures {
                runtimes: 2,
                workers: 3,
                alive_tasks: 4
            }
        );
        // Read from a runtime not watched, that one is counted as well.
        let other = tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("runtime");
        let figures = other.block_on(async { metrics.runtime_figures() });
        assert_eq!((figures.runtimes, figures.workers), (3, 4));
    }

    #[test]
    fn backend_hosts_are_bounded() {
        let metrics = Metrics::default();
        let call = |host: &str| {
            metrics.backend_call(host, BackendOutcome::Timeout, Duration::from_millis(1));
        };
        for i in 0..MAX_HOSTS + 10 {
            call(&format!("h{i}.example"));
        }
        call("h0.example");
        call("H1.EXAMPLE");
        call("");
        let backends = metrics.backends.read().unwrap();
        assert_eq!(backends.len(), MAX_HOSTS + 1);
        let count = |host: &str| backends[host].outcomes[5].load(Ordering::Relaxed);
        assert_eq!(count("h0.example"), 2);
        assert_eq!(count("h1.example"), 2);
        assert_eq!(count(OTHER_HOST), 11);
        assert!(!backends.contains_key("h64.example"));
        // Statuses outside HTTP's are not counted (nor do they panic).
        metrics.http_response(0);
        metrics.http_response(1000);
        metrics.http_response(u16::MAX);
    }

    #[test]
    fn targets_are_bounded() {
        let metrics = Metrics::default();
        for i in 0..MAX_TARGETS + 50 {
            metrics.invoked(&format!("t{i}"), "d.json", 10, None);
        }
        let invoked = metrics.invoked.lock().unwrap();
        assert_eq!(invoked.len(), MAX_TARGETS + 1);
        assert_eq!(invoked["tool=\"(other)\""][0], 50);
    }
}
