//! Ranking alone, for profiling: `cargo run --release --example
//! search_profile -- DIR [ROUNDS] [MODEL_DIR VECTOR_CACHE]` builds DIR's
//! catalog, then ranks the agent-phrased sentences of
//! `tests/data/agent-tasks-*.tsv` ROUNDS times (limit 20) and prints the
//! p50 and p99 of the keyword ranking. With a model folder and a vector
//! cache (the tool vectors are built, or read from it), it also times the
//! parts of a sentence's hybrid ranking one by one, on one thread: the
//! keyword ranking of the fusion's depth, the query's encoding (one
//! thread, and split over two as served), the scan of every tool vector,
//! and the whole fused ranking as served (keywords beside encoding).

use sezzlee_catalog::{BuildOptions, Catalog, Sources};
use sezzlee_search::query_keywords;
use sezzlee_semantic::{DiskCache, Query, TextModel, ToolVectors, query_sentence};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

#[path = "../benches/support/agent_tasks.rs"]
mod agent_tasks;
use agent_tasks::agent_sentences;

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    let mut args = std::env::args().skip(1);
    let usage = "usage: search_profile DIR [ROUNDS] [MODEL_DIR VECTOR_CACHE]";
    let dir = PathBuf::from(args.next().expect(usage));
    let rounds: usize = args.next().and_then(|n| n.parse().ok()).unwrap_or(20);
    let model = args.next().map(PathBuf::from);
    let cache = args.next().map(PathBuf::from);
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
    report("keywords, limit 20", &mut times);
    if let (Some(model), Some(cache)) = (model, cache) {
        profile_hybrid(&catalog, &model, &cache, &queries);
    }
}

/// The parts of each sentence's hybrid ranking, timed one by one.
fn profile_hybrid(catalog: &Catalog, model: &Path, cache: &Path, queries: &[String]) {
    let model = Arc::new(TextModel::load(model).expect("a usable model folder"));
    let (cache, _) = DiskCache::open(
        cache,
        model.digest(),
        model.dimensions(),
        sezzlee_semantic::cache::DEFAULT_LIMIT_BYTES,
    )
    .expect("a usable vector cache");
    let started = Instant::now();
    let vectors = ToolVectors::build(&model, catalog, None, Some(&cache));
    eprintln!(
        "tool vectors: {} of {} in {:.1} s",
        vectors.embedded(),
        vectors.len(),
        started.elapsed().as_secs_f64()
    );
    let index = catalog.search_index();
    let mut parts: [(&str, Vec<f64>); 6] = [
        ("keywords, depth 50", Vec::new()),
        ("encoding, one thread", Vec::new()),
        ("encoding, split", Vec::new()),
        ("vector scan, depth 50", Vec::new()),
        ("fused, as served", Vec::new()),
        ("fused, as served (again)", Vec::new()),
    ];
    let time = |f: &mut dyn FnMut()| {
        let started = Instant::now();
        f();
        started.elapsed().as_secs_f64() * 1e6
    };
    for query in queries {
        let words = query_keywords(query);
        let sentence = query_sentence(query);
        let mut vector = None;
        parts[0].1.push(time(&mut || {
            std::hint::black_box(index.matched_keywords_with(&words, 50, |_| true, None));
        }));
        parts[1]
            .1
            .push(time(&mut || vector = model.embed(&sentence)));
        parts[2]
            .1
            .push(time(&mut || vector = vectors.embed_query(&sentence)));
        let vector = vector.unwrap_or_default();
        parts[3].1.push(time(&mut || {
            std::hint::black_box(vectors.nearest(&vector, 50, &|_| true));
        }));
        for (_, times) in &mut parts[4..6] {
            times.push(time(&mut || {
                let query = Query {
                    words: &words,
                    sentence: &sentence,
                };
                std::hint::black_box(sezzlee_semantic::rank(
                    index,
                    Some(&vectors),
                    query,
                    20,
                    |_| true,
                    None,
                ));
            }));
        }
    }
    for (label, times) in &mut parts {
        report(label, times);
    }
}

fn report(label: &str, times: &mut [f64]) {
    times.sort_by(f64::total_cmp);
    let at = |q: f64| times[((times.len() - 1) as f64 * q).round() as usize];
    println!(
        "{label}: p50 {:.0} µs, p90 {:.0}, p99 {:.0}",
        at(0.5),
        at(0.9),
        at(0.99)
    );
}
