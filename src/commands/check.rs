//! `sezzlee check`: what a catalog owner runs in CI before shipping a change.
//!
//! Builds the catalog exactly as the server would, prints every diagnostic
//! (one line each, file and pointer first) and a summary, and exits 1 when
//! any diagnostic is an error. `--emit` prints every tool definition as a
//! JSON line so changes can be diffed.

use serde_json::{Value, json};
use sezzlee_catalog::{Catalog, Tool};
use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

/// Runs the command; the exit code is the verdict.
pub fn run(dir: &Path, emit: bool) -> ExitCode {
    let catalog = match Catalog::load_dir(dir) {
        Ok(catalog) => catalog,
        Err(err) => {
            eprintln!("sezzlee check: cannot read {}: {err}", dir.display());
            return ExitCode::from(2);
        }
    };
    let mut diagnostics = catalog.diagnostics.clone();
    diagnostics.sort_by(|a, b| (&a.file, &a.pointer).cmp(&(&b.file, &b.pointer)));
    let stderr = std::io::stderr();
    let mut report = stderr.lock();
    for diagnostic in &diagnostics {
        let _ = writeln!(report, "{diagnostic}");
    }
    if emit {
        let stdout = std::io::stdout();
        let mut out = std::io::BufWriter::new(stdout.lock());
        for tool in catalog.tools() {
            if writeln!(out, "{}", emitted(tool)).is_err() {
                return ExitCode::from(2);
            }
        }
        if out.flush().is_err() {
            return ExitCode::from(2);
        }
    }
    let operations: usize = catalog.documents.iter().map(|d| d.operations).sum();
    let _ = writeln!(
        report,
        "{} documents, {} operations, {} tools, {} errors, {} warnings",
        catalog.documents.len(),
        operations,
        catalog.tools().len(),
        catalog.errors(),
        catalog.warnings()
    );
    if catalog.errors() > 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

/// The load_tool answer plus `tags`, `route` and `document`.
pub fn emitted(tool: &Tool) -> Value {
    let mut value = tool.definition();
    if let Value::Object(map) = &mut value {
        map.insert("tags".to_string(), json!(tool.tags));
        map.insert("route".to_string(), json!(tool.route));
        map.insert("document".to_string(), json!(&*tool.document));
    }
    value
}

/// `--search-tasks FILE`: the search quality report of [`crate::commands::search_tasks`]
/// on stdout. Exit 0, or 1 when a task names an operation the folder does
/// not have, or 2 when the folder or the task file cannot be read.
pub fn run_search_tasks(dir: &Path, tasks_file: &Path) -> ExitCode {
    let text = match std::fs::read_to_string(tasks_file) {
        Ok(text) => text,
        Err(err) => {
            eprintln!("sezzlee check: cannot read {}: {err}", tasks_file.display());
            return ExitCode::from(2);
        }
    };
    let tasks = match crate::commands::search_tasks::parse_tasks(&text) {
        Ok(tasks) => tasks,
        Err(err) => {
            eprintln!("sezzlee check: {}: {err}", tasks_file.display());
            return ExitCode::from(2);
        }
    };
    match crate::commands::search_tasks::evaluate(dir, &tasks) {
        Ok((report, all_known)) => {
            print!("{report}");
            if all_known {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(1)
            }
        }
        Err(err) => {
            eprintln!("sezzlee check: cannot read {}: {err}", dir.display());
            ExitCode::from(2)
        }
    }
}
