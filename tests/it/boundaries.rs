//! The crates' boundaries, as the compiler keeps them only while their
//! dependency trees allow: the catalog is pure (no runtime, no HTTP stack,
//! no watcher), keyword search knows no document format and no crate of
//! ours, search by meaning keeps the model runtime to itself, the client
//! knows no command line and none of our crates but sezzlee-json and
//! sezzlee-protocol (which knows none), and the gateway knows no command
//! line (it is a client of upstream MCP servers, through sezzlee-client).
//! Read from `cargo tree`, so a transitive dependency counts too. Inside every crate, no module leans on one that
//! leans back on it: each can be read, and changed, after the ones it
//! uses. And nothing changes the process environment, which a test binary
//! shares between threads.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::Command;

/// Every package in `krate`'s normal (non-dev, non-build) dependency tree.
fn dependency_tree(krate: &str) -> BTreeSet<String> {
    let output = Command::new(env!("CARGO"))
        .args([
            "tree",
            "--offline",
            "--locked",
            "-e",
            "normal",
            "--prefix",
            "none",
        ])
        .args(["--format", "{p}", "-p", krate, "--manifest-path"])
        .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.toml"))
        .output()
        .expect("cargo runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "cargo tree -p {krate} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let packages: BTreeSet<String> = stdout
        .lines()
        .filter_map(|line| line.split_whitespace().next())
        .map(str::to_string)
        .collect();
    assert!(
        packages.contains(krate),
        "{krate} missing from its own tree"
    );
    packages
}

fn assert_none_of(krate: &str, forbidden: &[&str]) {
    let tree = dependency_tree(krate);
    let found: Vec<&&str> = forbidden.iter().filter(|p| tree.contains(**p)).collect();
    assert!(found.is_empty(), "{krate} depends on {found:?}");
}

#[test]
fn the_catalog_crate_has_no_runtime_http_stack_or_watcher() {
    assert_none_of(
        "sezzlee-catalog",
        &[
            "tokio",
            "reqwest",
            "axum",
            "hyper",
            "hyper-util",
            "notify",
            "clap",
        ],
    );
}

#[test]
fn the_client_crate_has_no_command_line_and_no_other_crate_of_ours() {
    assert_none_of(
        "sezzlee-client",
        &["clap", "sezzlee-catalog", "sezzlee-gateway", "axum"],
    );
}

#[test]
fn the_protocol_crate_depends_on_nothing() {
    // The edge both the gateway and the client speak: a leaf either can
    // read without pulling in the other's world.
    let tree = dependency_tree("sezzlee-protocol");
    assert_eq!(
        tree.into_iter().collect::<Vec<_>>(),
        ["sezzlee-protocol"],
        "sezzlee-protocol has dependencies"
    );
}

#[test]
fn the_gateway_crate_has_no_command_line() {
    // The gateway is a client of the upstream MCP servers it serves
    // (`upstream`), through sezzlee-client; the command line stays in the
    // binary.
    assert_none_of("sezzlee-gateway", &["clap"]);
}

#[test]
fn the_keyword_search_crate_knows_no_document_format_and_no_crate_of_ours() {
    // sezzlee-search ranks tool text; what a document is, and what a
    // model makes of it, are the catalog's and sezzlee-semantic's.
    assert_none_of(
        "sezzlee-search",
        &[
            "sezzlee-json",
            "sezzlee-catalog",
            "sezzlee-semantic",
            "serde_json",
            "serde_yaml_ng",
            "tokenizers",
            "safetensors",
            "tokio",
        ],
    );
}

#[test]
fn the_catalog_crate_has_no_model_runtime_or_tokenizer() {
    // Search by meaning lives in sezzlee-semantic: the catalog stays
    // conversion (it analyses and indexes words through sezzlee-search),
    // and builds without the encoder.
    assert_none_of(
        "sezzlee-catalog",
        &[
            "sezzlee-semantic",
            "tokenizers",
            "safetensors",
            "tract-onnx",
            "tract-core",
        ],
    );
}

#[test]
fn the_semantic_crate_has_no_runtime_http_stack_or_watcher() {
    assert_none_of(
        "sezzlee-semantic",
        &[
            "tokio",
            "reqwest",
            "axum",
            "hyper",
            "notify",
            "clap",
            "sezzlee-gateway",
        ],
    );
}

/// The top-level modules of the crate whose sources are in `dir` (a
/// file, or a folder of files), with the sibling modules each one's code
/// (not its tests) names: `crate::x` anywhere in it, `super::x` in its
/// own top file. The crate root (`lib.rs`, `main.rs`) is left out.
fn module_uses(dir: &str) -> BTreeMap<String, BTreeSet<String>> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join(dir);
    let mut modules: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (path, text) in sources_under(&root) {
        let Ok(relative) = path.strip_prefix(&root) else {
            continue;
        };
        let mut parts = relative.components();
        let first = parts
            .next()
            .and_then(|c| c.as_os_str().to_str())
            .unwrap_or("");
        let nested = parts.next().is_some();
        let module = first.trim_end_matches(".rs").to_string();
        if module == "lib" || module == "main" {
            continue;
        }
        let code = text.split("#[cfg(test)]\nmod tests").next().unwrap_or("");
        let prefixes: &[&str] = if nested {
            &["crate::"]
        } else {
            &["crate::", "super::"]
        };
        let uses = modules.entry(module.clone()).or_default();
        for prefix in prefixes {
            for (at, _) in code.match_indices(prefix) {
                let rest = &code[at + prefix.len()..];
                let name: String = rest
                    .chars()
                    .take_while(|c| c.is_ascii_lowercase() || *c == '_' || c.is_ascii_digit())
                    .collect();
                if !name.is_empty() && name != module {
                    uses.insert(name);
                }
            }
        }
    }
    // Names that are not modules of the crate (`crate::Tool`) lead nowhere.
    let known: BTreeSet<String> = modules.keys().cloned().collect();
    for uses in modules.values_mut() {
        uses.retain(|name| known.contains(name));
    }
    modules
}

/// A chain of modules that leads back to its first, if any.
fn module_circle(modules: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        module: &str,
        modules: &BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(start) = path.iter().position(|m| m == module) {
            let mut circle = path[start..].to_vec();
            circle.push(module.to_string());
            return Some(circle);
        }
        if done.contains(module) {
            return None;
        }
        path.push(module.to_string());
        for used in modules.get(module).into_iter().flatten() {
            if let Some(circle) = visit(used, modules, path, done) {
                return Some(circle);
            }
        }
        path.pop();
        done.insert(module.to_string());
        None
    }
    let mut done = BTreeSet::new();
    modules
        .keys()
        .find_map(|module| visit(module, modules, &mut Vec::new(), &mut done))
}

#[test]
fn no_crate_has_circles_between_its_modules() {
    // sezzlee-json is one file: no modules to compare.
    for dir in [
        "crates/search/src",
        "crates/catalog/src",
        "crates/semantic/src",
        "crates/client/src",
        "crates/gateway/src",
        "src",
    ] {
        let modules = module_uses(dir);
        assert!(modules.len() >= 2, "{dir}: modules not found");
        assert_eq!(module_circle(&modules), None, "{dir}");
    }
}

#[test]
fn a_module_circle_is_found() {
    let modules: BTreeMap<String, BTreeSet<String>> = [
        ("a", vec!["b"]),
        ("b", vec!["c"]),
        ("c", vec!["a"]),
        ("d", vec![]),
    ]
    .into_iter()
    .map(|(m, uses)| (m.to_string(), uses.into_iter().map(String::from).collect()))
    .collect();
    assert_eq!(
        module_circle(&modules),
        Some(vec!["a".into(), "b".into(), "c".into(), "a".into()])
    );
}

/// Every `.rs` file under `dir` (recursively), with its text.
fn sources_under(dir: &Path) -> Vec<(std::path::PathBuf, String)> {
    let mut found = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return found;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            found.extend(sources_under(&path));
        } else if path.extension().and_then(|e| e.to_str()) == Some("rs") {
            let text = std::fs::read_to_string(&path).unwrap_or_default();
            found.push((path, text));
        }
    }
    found
}

#[test]
fn nothing_changes_the_process_environment() {
    // A test binary runs its tests on many threads; changing the process
    // environment while another reads it is undefined behaviour. Gateways
    // read theirs through `Settings::environment`
    // (`support::set_test_variable` in the tests), child processes get
    // theirs from `Command::env`.
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let forbidden = [
        ["std::env::", "set_var("].concat(),
        ["std::env::", "remove_var("].concat(),
        ["env::", "set_var("].concat(),
    ];
    let mut offenders = Vec::new();
    for dir in ["src", "crates", "tests", "benches", "examples"] {
        for (path, text) in sources_under(&root.join(dir)) {
            if forbidden.iter().any(|call| text.contains(call.as_str())) {
                offenders.push(path.display().to_string());
            }
        }
    }
    assert!(
        offenders.is_empty(),
        "these change the process environment: {offenders:?}"
    );
}
