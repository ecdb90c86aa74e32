//! Where a served catalog's bytes go, and how much a rebuild adds: the
//! breakdown, measured with a counting allocator (every
//! byte the process asks for, live at each step), beside the process RSS.
//!
//! Steps, on the vendored corpus or the folder `SEZZLEE_CORPUS` names: the
//! sources as the gateway keeps them for reloads (file bytes' parses), the
//! built catalog, and inside it the search index (measured by building a
//! second one from the same tools), the schema definitions (value trees,
//! measured by cloning each distinct one; their canonical JSON, by
//! capacity), the schema roots, and the rest (names, descriptions,
//! dispatch data, diagnostics); then the per-catalog serving data
//! (`PerToolCache`: cards, tags, rules). Last, a rebuild while the first
//! catalog is served: the allocator's peak over the steady state.
//!
//! Run with `cargo bench --bench memory` (a single pass, no criterion:
//! it measures bytes, not time).

use serde_json::Value;
use sezzlee_catalog::schema::Def;
use sezzlee_catalog::{Catalog, Schema, Sources};
use sezzlee_gateway::tools::PerToolCache;
use sezzlee_search::SearchIndex;
use sezzlee_semantic::TextModel;
use std::alloc::{GlobalAlloc, Layout, System};
use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

#[path = "../tests/it/corpus.rs"]
mod corpus;

/// The system allocator, counting live bytes and their high-water mark.
struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let now = LIVE.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
        PEAK.fetch_max(now, Ordering::Relaxed);
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if new_size > layout.size() {
            let grown = new_size - layout.size();
            let now = LIVE.fetch_add(grown, Ordering::Relaxed) + grown;
            PEAK.fetch_max(now, Ordering::Relaxed);
        } else {
            LIVE.fetch_sub(layout.size() - new_size, Ordering::Relaxed);
        }
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

fn live() -> usize {
    LIVE.load(Ordering::Relaxed)
}

/// Bytes `step` leaves allocated, and what it returns.
fn measured<T>(step: impl FnOnce() -> T) -> (T, usize) {
    let before = live();
    let value = step();
    (value, live().saturating_sub(before))
}

/// Bytes a copy of every item takes: what the originals hold, measured
/// by making the copies (and dropping them).
fn copy_bytes<'a, T: Clone + 'a>(items: impl Iterator<Item = &'a T>) -> usize {
    let (copies, bytes) = measured(|| items.cloned().collect::<Vec<T>>());
    drop(copies);
    bytes
}

fn rss_kib() -> usize {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find(|line| line.starts_with("VmRSS:"))
                .and_then(|line| line.split_whitespace().nth(1)?.parse().ok())
        })
        .unwrap_or(0)
}

fn mib(bytes: usize) -> String {
    format!("{:.1} MiB", bytes as f64 / (1024.0 * 1024.0))
}

/// Every distinct definition and schema root (value trees: the published
/// inputs that were compacted, and the outputs) the tools hold.
fn schemas(catalog: &Catalog) -> (Vec<Arc<Def>>, Vec<&Schema>) {
    let mut defs: HashMap<usize, Arc<Def>> = HashMap::new();
    let mut roots: HashMap<usize, &Schema> = HashMap::new();
    for tool in catalog.tools() {
        for def in &tool.input_schema.defs {
            defs.insert(Arc::as_ptr(def) as usize, def.clone());
        }
        let mut schemas: Vec<&Schema> = tool.published_input.iter().collect();
        schemas.extend(tool.output_schema.as_deref());
        for schema in schemas {
            roots.insert(schema as *const Schema as usize, schema);
            for def in &schema.defs {
                defs.insert(Arc::as_ptr(def) as usize, def.clone());
            }
        }
    }
    (defs.into_values().collect(), roots.into_values().collect())
}

fn main() {
    let corpus = corpus::selected();
    let dir = corpus.dir.clone();
    println!("corpus: {} ({})", dir.display(), corpus.origin);
    let baseline = live();
    let (sources, sources_bytes) =
        measured(|| Sources::scan(&dir, None).expect("the corpus folder is readable"));
    PEAK.store(live(), Ordering::Relaxed);
    let (catalog, catalog_bytes) = measured(|| Catalog::build(&sources));
    let build_peak = PEAK.load(Ordering::Relaxed).saturating_sub(baseline);
    let tools = catalog.tools().len();

    let (second_index, index_bytes) =
        measured(|| SearchIndex::build(catalog.tools().iter().map(|tool| tool.search_fields())));
    drop(second_index);

    let (defs, roots) = schemas(&catalog);
    let canonical_bytes: usize = defs.iter().map(|def| def.canonical.capacity()).sum();
    let def_value_bytes: usize = defs.iter().filter_map(|def| def.text_len()).sum();
    let root_bytes = copy_bytes(roots.iter().map(|schema| &schema.root));
    let input_root_bytes: usize = {
        let mut seen = std::collections::HashSet::new();
        catalog
            .tools()
            .iter()
            .filter(|tool| seen.insert(&tool.input_schema as *const _ as usize))
            .map(|tool| tool.input_schema.root_len())
            .sum()
    };
    let distinct_output_roots = {
        let mut seen = std::collections::HashSet::new();
        for tool in catalog.tools() {
            if let Some(output) = &tool.output_schema {
                seen.insert(Value::Object(output.root.clone()).to_string());
            }
        }
        seen.len()
    };
    let output_schemas = catalog
        .tools()
        .iter()
        .filter(|tool| tool.output_schema.is_some())
        .count();
    let distinct_defs = defs.len();
    drop(defs);

    // With a model, the vectors a gateway would hold once every tool is
    // embedded: run the gateway (or `sezzlee check --search-tasks`) on the
    // folder first, so the vector cache (SEZZLEE_VECTOR_CACHE, else the
    // default folder) has them; texts it lacks stay without a row.
    let model = std::env::var_os("SEZZLEE_SEARCH_MODEL")
        .filter(|v| !v.is_empty())
        .map(|folder| {
            let model =
                Arc::new(TextModel::load(Path::new(&folder)).expect("the search model loads"));
            let cache = std::env::var_os("SEZZLEE_VECTOR_CACHE")
                .map(std::path::PathBuf::from)
                .or_else(sezzlee_semantic::cache::default_root)
                .and_then(|root| {
                    sezzlee_semantic::DiskCache::open(
                        &root,
                        model.digest(),
                        model.dimensions(),
                        sezzlee_semantic::cache::DEFAULT_LIMIT_BYTES,
                    )
                    .ok()
                    .map(|(cache, _)| cache)
                });
            sezzlee_gateway::embedding::Embedder::new(model, cache)
        });
    let (prepared, prepared_bytes) = measured(|| PerToolCache::new(&catalog, model.as_ref()));
    let steady = live().saturating_sub(baseline);
    let steady_rss = rss_kib();

    // A rebuild while the first catalog is served, as a reload does.
    PEAK.store(live(), Ordering::Relaxed);
    let rebuilt = Catalog::build(&sources);
    let rebuilt_prepared = PerToolCache::new(&rebuilt, model.as_ref());
    let rebuild_peak = PEAK.load(Ordering::Relaxed).saturating_sub(baseline);
    drop((rebuilt, rebuilt_prepared));

    let rest = catalog_bytes.saturating_sub(
        index_bytes + def_value_bytes + canonical_bytes + root_bytes + input_root_bytes,
    );
    println!(
        "{tools} tools, {} documents, {distinct_defs} distinct definitions",
        catalog.documents.len()
    );
    println!("| part | bytes | per tool |");
    println!("|---|---|---|");
    let row = |part: &str, bytes: usize| {
        println!("| {part} | {} | {} B |", mib(bytes), bytes / tools.max(1));
    };
    row(
        "sources (hashes and stamps; documents are read again when rebuilt)",
        sources_bytes,
    );
    row("catalog, all", catalog_bytes);
    row("  search index", index_bytes);
    row("  definitions: values (packed JSON text)", def_value_bytes);
    row("  definitions: canonical JSON", canonical_bytes);
    row("  full input roots (packed JSON text)", input_root_bytes);
    row(
        "  other schema roots (compacted inputs, outputs)",
        root_bytes,
    );
    row("  the rest (text, dispatch, diagnostics)", rest);
    row("serving data (cards, tags, rules)", prepared_bytes);
    row("steady total (allocated)", steady);
    row("peak while building", build_peak);
    row("peak while rebuilding beside it", rebuild_peak);
    println!("{output_schemas} outputSchemas, {distinct_output_roots} distinct output roots");
    println!(
        "process RSS at steady state: {}; rebuild peak ÷ steady (allocated): {:.2}",
        mib(steady_rss * 1024),
        rebuild_peak as f64 / steady.max(1) as f64
    );
    drop((prepared, catalog, sources));
}
