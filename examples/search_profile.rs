//! Ranking alone, for profiling: `cargo run --release --example
//! search_profile -- DIR [ROUNDS]` builds DIR's catalog, then ranks the
//! agent-phrased sentences of `tests/data/agent-tasks-*.tsv` ROUNDS times
//! (limit 20) and prints the p50 and p99.

use sezzlee_catalog::{BuildOptions, Catalog, Sources};
use sezzlee_search::query_keywords;
use std::path::PathBuf;
use std::time::Instant;

#[path = "../benches/support/agent_tasks.rs"]
mod agent_tasks;
use agent_tasks::agent_sentences;

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    let mut args = std::env::args().skip(1);
    let dir = PathBuf::from(args.next().expect("usage: search_profile DIR [ROUNDS]"));
    let rounds: usize = args.next().and_then(|n| n.parse().ok()).unwrap_or(20);
    let sources = Sources::scan(&dir, None).expect("the folder is readable");
    let catalog = Catalog::build_with(&sources, &BuildOptions::default());
    drop(sources);
    let index = catalog.search_index();
    index.prepare_common();
    let queries = agent_sentences();
    eprintln!(
        "{} tools, {} queries; ranking",
        catalog.tools().len(),
        queries.len()
    );
    let mut times = Vec::new();
    for _ in 0..rounds {
        for query in &queries {
            let started = Instant::now();
            let page = index.top_keywords(&query_keywords(query), 20, |_| true);
            times.push(started.elapsed().as_secs_f64() * 1e6);
            std::hint::black_box(page);
        }
    }
    times.sort_by(f64::total_cmp);
    let at = |q: f64| times[((times.len() - 1) as f64 * q).round() as usize];
    println!(
        "p50 {:.0} µs, p90 {:.0}, p99 {:.0}",
        at(0.5),
        at(0.9),
        at(0.99)
    );
}
