//! How fast `search_tools` ranks the Microsoft Graph catalog (11,422
//! tools), in process: the index alone (`SearchIndex::top`, limit 20, no
//! filter) and the whole tool call (`tools::search::run` for an anonymous
//! caller on a public catalog, then the `CallToolResult` serialised as the
//! endpoint would send it). Target: p50 ≤ 100 µs per query for the index.
//! Both rank anew every time (the search cache is off). The table adds a
//! third figure, the index with the query's common words already kept
//! (`top_keywords_with` and a warm [`SearchCache`]): what a new query made
//! of words asked before costs.
//!
//! Run by hand: `cargo bench --bench search`. Before criterion's own
//! figures it prints an explicit p50/p99 per query from a plain loop of
//! `SEARCH_BENCH_ITERS` (default 2,000) timed iterations. Criterion flags
//! go after `--`, e.g. `cargo bench --bench search -- --warm-up-time 1
//! --measurement-time 2` for a quick run.

use criterion::Criterion;
use serde_json::{Value, json};
use sezzlee_catalog::{Catalog, Sources};
use sezzlee_gateway::backend::{BackendClient, DEFAULT_MAX_RESPONSE_BYTES};
use sezzlee_gateway::environment::Environment;
use sezzlee_gateway::settings::Settings;
use sezzlee_gateway::store::Snapshot;
use sezzlee_gateway::tools::search_cache::SearchCache;
use sezzlee_gateway::tools::{Context, search};
use sezzlee_gateway::visibility::Caller;
use sezzlee_search::query_keywords;
use std::hint::black_box;
use std::time::{Duration, Instant};

/// The real documents: the repository's own corpus (tests/it/corpus.rs).
#[path = "../tests/it/corpus.rs"]
mod corpus;

/// Realistic agent queries: few words, verbs an agent would use.
const QUERIES: [&str; 6] = [
    "list users",
    "send mail",
    "create calendar event",
    "get drive item",
    "delete group member",
    "upload file to onedrive folder",
];

/// search_tools' default page size.
const LIMIT: usize = 20;
/// The p50 target of the index, per query.
const TARGET: Duration = Duration::from_micros(100);

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn load_graph() -> Snapshot {
    let path = corpus::vendored().require("microsoft.com_graph_1.0.1.json");
    let path = path.as_path();
    let bytes =
        std::fs::read(path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    let started = Instant::now();
    let name = "microsoft.com_graph_1.0.1.json".to_string();
    let catalog = Catalog::build(&Sources::from_files(vec![(name, bytes)], None));
    let built = started.elapsed();
    let tools = catalog.tools().len();
    assert!(tools >= 11_422, "Graph gave {tools} tools");
    eprintln!(
        "Microsoft Graph: {tools} tools, parse+build {:.2} s",
        built.as_secs_f64()
    );
    // The search cache off: every call below ranks anew (a cached answer
    // is measured over HTTP, in http_load's comparison (a)).
    Snapshot::new(catalog, 0, built).with_search_cache(0)
}

/// The whole in-process path of one `search_tools` call: argument
/// coercion, ranking, cards, budget check, and the response body the
/// endpoint sends.
fn call(context: &Context, arguments: &Value) -> usize {
    let answer = search::run(context, arguments);
    assert!(
        !answer.is_error(),
        "search_tools failed: {:?}",
        answer.code()
    );
    let result = sezzlee_gateway::mcp::call_tool_result(answer);
    let mut response = Vec::with_capacity(result.response_len());
    result
        .write_response(&Value::from(1), &mut response)
        .expect("a tool result is always written");
    response.len()
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let rank = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[rank.min(sorted.len() - 1)]
}

/// p50 and p99 of `iters` timed runs of `f` (after a short warm-up).
fn timed(iters: usize, mut f: impl FnMut()) -> (Duration, Duration) {
    for _ in 0..iters.div_ceil(10) {
        f();
    }
    let mut samples = Vec::with_capacity(iters);
    for _ in 0..iters {
        let started = Instant::now();
        f();
        samples.push(started.elapsed());
    }
    samples.sort_unstable();
    (percentile(&samples, 0.50), percentile(&samples, 0.99))
}

fn micros(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

fn print_p50_table(served: &Snapshot, context: &Context, iters: usize) {
    let index = served.catalog.search_index();
    println!();
    println!(
        "search on Microsoft Graph ({} tools), {iters} timed iterations per query, limit {LIMIT}",
        index.len()
    );
    println!(
        "{:<34} {:>10} {:>10} {:>12} {:>12} {:>12}  top result",
        "query", "top p50", "top p99", "call p50", "call p99", "kept p50"
    );
    let kept = SearchCache::new(sezzlee_gateway::tools::search_cache::DEFAULT_BYTES);
    let mut worst = Duration::ZERO;
    for query in QUERIES {
        let (top50, top99) = timed(iters, || {
            black_box(index.top(black_box(query), LIMIT, |_| true));
        });
        let arguments = json!({ "query": query });
        let (call50, call99) = timed(iters, || {
            black_box(call(context, black_box(&arguments)));
        });
        let words = query_keywords(query);
        let (kept50, _) = timed(iters, || {
            black_box(index.top_keywords_with(black_box(&words), LIMIT, |_| true, Some(&kept)));
        });
        worst = worst.max(top50);
        let first = index
            .top(query, 1, |_| true)
            .first()
            .map(|&i| served.catalog.tools()[i].name.clone())
            .unwrap_or_default();
        println!(
            "{:<34} {:>8.1}µs {:>8.1}µs {:>10.1}µs {:>10.1}µs {:>10.1}µs  {first}",
            format!("{query:?}"),
            micros(top50),
            micros(top99),
            micros(call50),
            micros(call99),
            micros(kept50)
        );
    }
    println!(
        "worst index p50 {:.1} µs; target ≤ {} µs: {}",
        micros(worst),
        TARGET.as_micros(),
        if worst <= TARGET { "met" } else { "NOT met" }
    );
    println!();
}

fn main() {
    let served = load_graph();
    let caller = Caller::anonymous();
    // Ranking only: no serving threads, so no per-thread pools.
    let backend = BackendClient::new(DEFAULT_MAX_RESPONSE_BYTES, 0, Environment::process())
        .expect("a backend client");
    let metrics = sezzlee_gateway::metrics::Metrics::default();
    let upstreams = sezzlee_gateway::upstream::Upstreams::new(
        std::path::PathBuf::new(),
        Environment::process(),
    );
    let limits = sezzlee_gateway::limits::Limits::new(Default::default());
    let context = Context {
        snapshot: &served,
        caller: &caller,
        budget: Settings::default().response_budget,
        backend: &backend,
        self_url: None,
        metrics: &metrics,
        upstreams: &upstreams,
        limits: &limits,
    };
    assert!(
        caller.sees_everything(served.per_tool.has_policy()),
        "an anonymous caller without auth sees the whole catalog (no policy in Graph)"
    );

    let iters = env_usize("SEARCH_BENCH_ITERS", 2_000);
    if iters > 0 {
        print_p50_table(&served, &context, iters);
    }

    let mut criterion = Criterion::default()
        .warm_up_time(Duration::from_secs(2))
        .measurement_time(Duration::from_secs(4))
        .configure_from_args();
    let index = served.catalog.search_index();
    let mut group = criterion.benchmark_group("SearchIndex::top (Graph, limit 20)");
    for query in QUERIES {
        group.bench_function(query, |b| {
            b.iter(|| index.top(black_box(query), LIMIT, |_| true))
        });
    }
    group.finish();
    let mut group = criterion.benchmark_group("search_tools call in process (Graph)");
    for query in QUERIES {
        let arguments = json!({ "query": query });
        group.bench_function(query, |b| b.iter(|| call(&context, black_box(&arguments))));
    }
    group.finish();
    criterion.final_summary();
}
