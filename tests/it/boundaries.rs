//! The crates' boundaries, as the compiler keeps them only while their
//! dependency trees allow: the catalog is pure (no runtime, no HTTP stack,
//! no watcher), the client knows no command line and none of our crates but
//! sezzlee-json, and the gateway knows neither the command line nor the
//! client. Read from `cargo tree`, so a transitive dependency counts too.

use std::collections::BTreeSet;
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
fn the_gateway_crate_has_no_command_line_and_no_client() {
    assert_none_of("sezzlee-gateway", &["clap", "sezzlee-client"]);
}

#[test]
fn the_catalog_crate_has_no_model_runtime_or_tokenizer() {
    // Search by meaning lives in sezzlee-semantic: the catalog stays
    // conversion and keyword search, and builds without the encoder.
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
