//! What the output depth costs and what it keeps, over a folder of
//! documents: `cargo run --release --example output_depth_sizes -- DIR
//! [DEPTH…]` (default depths 0 1 2 3) builds DIR's catalog once per depth,
//! as the gateway would with `--output-depth DEPTH` and the default
//! response budget, and prints
//!
//! - per depth, the load_tool answer sizes in characters (each tool's
//!   definition, exactly what load_tool sends without `authUncertain`):
//!   median, 90th percentile, mean, largest, how many are over 20,000
//!   characters, the share of all definitions'
//!   characters that is outputSchema, how many tools the budget ladder cut
//!   below the depth asked for, and the share of tools with an outputSchema
//!   whose published result names every member its full result names at
//!   levels 1–2 (a list's items' members, an object's members' members)
//!   and at levels 1–3;
//! - for a few real operations (Stripe `POST /v1/refunds`, GitHub's issue
//!   creation, a Graph list, a Kubernetes list; those DIR holds), their
//!   size at each depth, the depth the budget let them have, and what an
//!   agent can still read of a result: the member names at levels 1, 2
//!   and 3 of the result, out of those the full schema names.
//!
//! The figures in `benches/README.md` ("Output depth") come from it, run
//! on the unpacked `tests/fixtures/corpus`.

use serde_json::Value;
use sezzlee_catalog::compact::FULL;
use sezzlee_catalog::{BuildOptions, Catalog, Sources, Tool};
use std::collections::{BTreeSet, HashMap, HashSet};
use std::path::{Path, PathBuf};

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// The operations whose results are read at each depth: a document's file
/// name starts with the first, the route is the second.
const WATCHED: [(&str, &str); 4] = [
    ("stripe.com_stripe", "POST /v1/refunds"),
    (
        "github.com_api.github.com",
        "POST /repos/{owner}/{repo}/issues",
    ),
    ("microsoft.com_graph", "GET /users"),
    (
        "kubernetes.io_kubernetes",
        "GET /api/v1/namespaces/{namespace}/pods",
    ),
];

/// A definition larger than this many characters (some 5,000 tokens) is
/// counted as a heavy load.
const OVER: usize = 20_000;

/// Levels of a result whose member names are counted.
const LEVELS: usize = 3;

fn main() {
    let mut args = std::env::args().skip(1);
    let Some(dir) = args.next().map(PathBuf::from) else {
        eprintln!("usage: output_depth_sizes DIR [DEPTH…]");
        std::process::exit(2);
    };
    let mut depths: Vec<u32> = args.filter_map(|depth| depth.parse().ok()).collect();
    if depths.is_empty() {
        depths = vec![0, 1, 2, 3];
    }
    let full = names_in_full(&dir);
    let sources = Sources::scan(&dir, None).expect("the folder is readable");
    let mut watched_rows: Vec<String> = Vec::new();
    println!(
        "| depth | tools | median | p90 | mean | largest | over {OVER} | outputSchema share | cut by the budget | level 2 all named | level 3 all named |"
    );
    println!("|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|");
    for &depth in &depths {
        let catalog = Catalog::build_with(
            &sources,
            &BuildOptions {
                output_depth: depth,
                ..BuildOptions::default()
            },
        );
        let mut sizes: Vec<(usize, &str)> = Vec::new();
        let (mut all, mut output, mut cut) = (0usize, 0usize, 0usize);
        // Tools with an outputSchema, and those showing every name their
        // full result has at levels 1–2 and at levels 1–3.
        let (mut outputs, mut level_2, mut level_3) = (0usize, 0usize, 0usize);
        for tool in catalog.tools() {
            sizes.push((tool.definition_size, &tool.name));
            all += tool.definition_size;
            output += output_chars(tool);
            cut += usize::from(tool.compaction.output_depth.is_some_and(|d| d < depth));
            let (Some(schema), Some(whole)) = (
                &tool.output_schema,
                full.get(&(tool.document.to_string(), tool.route.clone())),
            ) else {
                continue;
            };
            let named = name_counts(&schema.to_value());
            outputs += 1;
            level_2 += usize::from(named[..2] == whole[..2]);
            level_3 += usize::from(named[..3] == whole[..3]);
        }
        sizes.sort();
        let at = |q: f64| sizes[((sizes.len() - 1) as f64 * q).round() as usize].0;
        let (largest, largest_name) = sizes.last().copied().unwrap_or((0, ""));
        let share = |part: usize, of: usize| 100.0 * part as f64 / of.max(1) as f64;
        println!(
            "| {depth} | {} | {} | {} | {} | {largest} (`{largest_name}`) | {} | {:.0} % | {cut} | {:.1} % | {:.1} % |",
            sizes.len(),
            at(0.5),
            at(0.9),
            all / sizes.len().max(1),
            sizes.iter().filter(|(size, _)| *size > OVER).count(),
            share(output, all),
            share(level_2, outputs),
            share(level_3, outputs),
        );
        for (document, route) in WATCHED {
            let Some(tool) = find(&catalog, document, route) else {
                continue;
            };
            let Some(whole) = full.get(&(tool.document.to_string(), tool.route.clone())) else {
                continue;
            };
            let named = tool
                .output_schema
                .as_ref()
                .map_or([0; LEVELS], |schema| name_counts(&schema.to_value()));
            let counts: Vec<String> = (0..LEVELS)
                .map(|level| format!("{}/{}", named[level], whole[level]))
                .collect();
            let published = tool
                .compaction
                .output_depth
                .map_or("whole".to_string(), |d| d.to_string());
            watched_rows.push(format!(
                "| `{}` | {depth} | {published} | {} | {} | {} |",
                tool.name,
                tool.definition_size,
                output_chars(tool),
                counts.join(" | "),
            ));
        }
    }
    if !watched_rows.is_empty() {
        println!();
        println!(
            "| tool | depth | published at | definition | outputSchema | names at level 1 | level 2 | level 3 |"
        );
        println!("|---|---:|---:|---:|---:|---:|---:|---:|");
        watched_rows.sort();
        for row in watched_rows {
            println!("{row}");
        }
    }
}

/// Characters of the tool's published outputSchema (0 without one).
fn output_chars(tool: &Tool) -> usize {
    tool.output_schema
        .as_ref()
        .map_or(0, |schema| schema.to_value().to_string().chars().count())
}

fn find<'c>(catalog: &'c Catalog, document: &str, route: &str) -> Option<&'c Tool> {
    catalog
        .tools()
        .iter()
        .find(|tool| tool.document.starts_with(document) && tool.route == route)
}

/// For every operation with an outputSchema in `dir` (keyed by document
/// and route), how many member names its full result has at levels 1, 2
/// and 3. Each document is built alone with nothing compacted, so one
/// document's full schemas are held at a time.
fn names_in_full(dir: &Path) -> HashMap<(String, String), [usize; LEVELS]> {
    let mut found = HashMap::new();
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("the folder is readable")
        .filter_map(|entry| entry.ok().map(|entry| entry.path()))
        .filter(|path| {
            path.extension()
                .is_some_and(|ext| ext == "json" || ext == "yaml" || ext == "yml")
        })
        .collect();
    files.sort();
    for path in files {
        let name = path
            .file_name()
            .map(|name| name.to_string_lossy().into_owned())
            .unwrap_or_default();
        let Ok(bytes) = std::fs::read(&path) else {
            continue;
        };
        let sources = Sources::from_files([(name, bytes)], None);
        let catalog = Catalog::build_with(
            &sources,
            &BuildOptions {
                response_budget: usize::MAX,
                output_depth: FULL,
            },
        );
        for tool in catalog.tools() {
            if let Some(schema) = &tool.output_schema {
                found.insert(
                    (tool.document.to_string(), tool.route.clone()),
                    name_counts(&schema.to_value()),
                );
            }
        }
    }
    found
}

/// How many member names [`result_names`] finds at each level.
fn name_counts(schema: &Value) -> [usize; LEVELS] {
    let names = result_names(schema);
    std::array::from_fn(|level| names[level].len())
}

/// The member names a result's schema names, as paths (`charge.amount`,
/// `items[].metadata`), level by level: level 1 is the result's own
/// members. A stub names nothing below it, so what is missing from a
/// compacted schema's sets is what an agent cannot see.
fn result_names(schema: &Value) -> Vec<BTreeSet<String>> {
    let mut names = vec![BTreeSet::new(); LEVELS];
    walk(schema, schema, 0, "", &mut HashSet::new(), &mut names);
    names
}

/// Walks `node`, whose members are at `level + 1`; `hops` holds the
/// `$ref`s followed since the last member step, so a reference cycle that
/// never steps into a member ends.
fn walk<'s>(
    root: &'s Value,
    node: &'s Value,
    level: usize,
    path: &str,
    hops: &mut HashSet<&'s str>,
    names: &mut [BTreeSet<String>],
) {
    if level >= LEVELS {
        return;
    }
    if let Some(target) = node.get("$ref").and_then(Value::as_str) {
        let pointer = target.trim_start_matches('#');
        if let Some(next) = root.pointer(pointer)
            && hops.insert(target)
        {
            walk(root, next, level, path, hops, names);
            hops.remove(target);
        }
    }
    for key in ["anyOf", "oneOf", "allOf"] {
        for alternative in node
            .get(key)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            walk(root, alternative, level, path, hops, names);
        }
    }
    if let Some(items) = node.get("items") {
        walk(root, items, level, &format!("{path}[]"), hops, names);
    }
    let mut members: Vec<(String, &Value)> = Vec::new();
    for key in ["properties", "patternProperties"] {
        if let Some(map) = node.get(key).and_then(Value::as_object) {
            members.extend(map.iter().map(|(name, value)| (name.clone(), value)));
        }
    }
    if let Some(extra) = node.get("additionalProperties").filter(|v| v.is_object()) {
        members.push(("*".to_string(), extra));
    }
    for (name, value) in members {
        let named = if path.is_empty() {
            name
        } else {
            format!("{path}.{name}")
        };
        names[level].insert(named.clone());
        walk(root, value, level + 1, &named, &mut HashSet::new(), names);
    }
}
