//! Request metrics for `GET /metrics`: how the three tools and the backend
//! calls end, and how long they take; and the async runtimes whose tasks
//! `/status` and `/metrics` count ([`Metrics::runtime_figures`]).
//!
//! Counters by outcome and latency histograms, kept in atomics (a request
//! adds, never locks, except the per-target map of invoked tools). Label
//! sets are bounded by construction: outcomes are the envelope's codes,
//! backend outcomes are a few classes, and invoked targets are labelled by
//! tool only when the catalog is small ([`PER_TOOL_UP_TO`] tools), else by
//! document, with at most [`MAX_TARGETS`] distinct ones (then `(other)`).

use crate::tools::envelope::Code;
use std::collections::HashMap;
use std::fmt::Write;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
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

/// The three tools, in label order.
const TOOLS: [&str; 3] = ["search_tools", "load_tool", "invoke_tool"];
/// Outcomes of a tool: `ok`, then every envelope code.
const OUTCOMES: usize = 1 + Code::ALL.len();
/// How a backend call ended.
const BACKEND_OUTCOMES: [&str; 6] = ["2xx", "3xx", "4xx", "5xx", "unavailable", "timeout"];

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

/// Every figure `/metrics` shows of requests.
#[derive(Default)]
pub struct Metrics {
    tools: [ToolFigures; 3],
    backend: [AtomicU64; BACKEND_OUTCOMES.len()],
    backend_latency: Histogram,
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
fn label_value(text: &str) -> String {
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

    /// One backend call.
    pub fn backend_call(&self, outcome: BackendOutcome, elapsed: Duration) {
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
        self.backend[index].fetch_add(1, Ordering::Relaxed);
        self.backend_latency.observe(elapsed);
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
        let name = "sezzlee_backend_calls_total";
        let _ = writeln!(
            out,
            "# HELP {name} Backend calls by outcome (HTTP status class, unavailable, timeout).\n# TYPE {name} counter"
        );
        for (outcome, count) in BACKEND_OUTCOMES.iter().zip(&self.backend) {
            let _ = writeln!(
                out,
                "{name}{{outcome=\"{outcome}\"}} {}",
                count.load(Ordering::Relaxed)
            );
        }
        let name = "sezzlee_backend_call_seconds";
        let _ = writeln!(
            out,
            "# HELP {name} Time of backend calls, until the response is read.\n# TYPE {name} histogram"
        );
        self.backend_latency.write(out, name, "backend=\"all\"");
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
        metrics.backend_call(BackendOutcome::Status(404), Duration::from_millis(3));
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
            "sezzlee_backend_calls_total{outcome=\"4xx\"} 1",
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
