//! `sezzlee check`: what a catalog owner runs in CI before shipping a change.
//!
//! Builds the catalog exactly as the server would, prints every diagnostic
//! (one line each, file and pointer first) and a summary, and exits 1 when
//! any diagnostic is an error. Per document it reports how many definitions
//! were compacted to fit an agent's context and the largest one, so an
//! owner sees what agents will load. `--emit` prints every tool definition
//! as a JSON line so changes can be diffed.

use super::plural;
use crate::commands::stdout::out;
use serde_json::{Value, json};
use sezzlee_catalog::diagnostics::Diagnostic;
use sezzlee_catalog::{BuildOptions, Catalog, Sources, Tool};
use std::collections::{BTreeMap, HashMap};
use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

/// What `sezzlee check` writes on stdout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stdout {
    /// The report and the summary.
    Report,
    /// Every tool definition as a JSON line (`--emit`); the report goes to
    /// stderr beside the diagnostics.
    Definitions,
}

/// Runs the command with the options the gateway would build with; the
/// exit code is the verdict.
pub fn run(dir: &Path, output: Stdout, options: &BuildOptions) -> ExitCode {
    let emit = output == Stdout::Definitions;
    let sources = match Sources::scan(dir, None) {
        Ok(sources) => sources,
        Err(err) => {
            eprintln!("sezzlee check: cannot read {}: {err}", dir.display());
            return ExitCode::from(2);
        }
    };
    let catalog = Catalog::build_with(&sources, options);
    let mut diagnostics = catalog.diagnostics.to_vec();
    let call_time = super::call_time::warnings(&catalog, |name| std::env::var_os(name).is_some());
    let warnings = catalog.warnings() + call_time.len();
    diagnostics.extend(call_time);
    diagnostics.sort_by(|a, b| (&a.file, &a.pointer).cmp(&(&b.file, &b.pointer)));
    {
        let places = places(dir, &diagnostics);
        let stderr = std::io::stderr();
        let mut diagnostics_out = stderr.lock();
        for diagnostic in &diagnostics {
            let place = places.get(&(diagnostic.file.to_string(), diagnostic.pointer.clone()));
            let _ = writeln!(diagnostics_out, "{}", placed(diagnostic, place.copied()));
        }
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
    // The report and the summary are the command's output (stdout); with
    // `--emit`, stdout is the JSON lines, and they go beside the
    // diagnostics (stderr).
    let mut report: Box<dyn Write> = if emit {
        Box::new(std::io::stderr().lock())
    } else {
        Box::new(std::io::stdout().lock())
    };
    for line in definition_report(&catalog, options.response_budget) {
        let _ = writeln!(report, "{line}");
    }
    let operations: usize = catalog.documents.iter().map(|d| d.operations).sum();
    let count = |n: usize, one: &str, many: &str| format!("{n} {}", plural(n, one, many));
    let _ = writeln!(
        report,
        "{}, {}, {}, {}, {}",
        count(catalog.documents.len(), "document", "documents"),
        count(operations, "operation", "operations"),
        count(catalog.tools().len(), "tool", "tools"),
        count(catalog.errors(), "error", "errors"),
        count(warnings, "warning", "warnings")
    );
    let _ = report.flush();
    if catalog.errors() > 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

/// The line and column of every diagnostic's pointer, read from its
/// file's text (one pass per file); a file that cannot be read, or a
/// pointer it has no value for, has none.
fn places(dir: &Path, diagnostics: &[Diagnostic]) -> HashMap<(String, String), (usize, usize)> {
    let mut by_file: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for diagnostic in diagnostics.iter().filter(|d| !d.pointer.is_empty()) {
        by_file
            .entry(&diagnostic.file)
            .or_default()
            .push(&diagnostic.pointer);
    }
    let mut places = HashMap::new();
    for (file, pointers) in by_file {
        let Ok(text) = std::fs::read_to_string(dir.join(file)) else {
            continue;
        };
        let syntax = super::positions::Syntax::of_file(file);
        for (pointer, place) in super::positions::locate_all(&text, syntax, &pointers) {
            places.insert((file.to_string(), pointer), place);
        }
    }
    places
}

/// A diagnostic's line with the place of its pointer beside it:
/// `file#pointer (line L, column C): severity[code]: message`.
fn placed(diagnostic: &Diagnostic, place: Option<(usize, usize)>) -> String {
    let line = diagnostic.to_string();
    match place {
        Some((row, column)) => {
            let located = format!("{}#{}", diagnostic.file, diagnostic.pointer);
            line.replacen(
                &located,
                &format!("{located} (line {row}, column {column})"),
                1,
            )
        }
        None => line,
    }
}

/// Per document, one line: its tools, how many definitions were compacted
/// (output, input, text trimmed when any) and the largest definition
/// against the budget.
fn definition_report(catalog: &Catalog, budget: usize) -> Vec<String> {
    #[derive(Default)]
    struct Sizes {
        tools: usize,
        compacted: usize,
        output: usize,
        input: usize,
        text: usize,
        largest: usize,
        over: usize,
    }
    let mut by_document: BTreeMap<&str, Sizes> = BTreeMap::new();
    for tool in catalog.tools() {
        let sizes = by_document.entry(&tool.document).or_default();
        let size = tool.definition_size;
        sizes.tools += 1;
        sizes.compacted += usize::from(tool.compaction.is_compacted());
        sizes.output += usize::from(tool.compaction.output_depth.is_some());
        sizes.input += usize::from(tool.compaction.input_depth.is_some());
        sizes.text += usize::from(tool.compaction.text.is_some());
        sizes.largest = sizes.largest.max(size);
        sizes.over += usize::from(!tool.loads_within(budget));
    }
    // A document that builds no tool says so (every operation left out,
    // or none at all), rather than being missing from the report.
    for summary in &catalog.documents {
        by_document.entry(&summary.file).or_default();
    }
    by_document
        .into_iter()
        .map(|(document, s)| {
            if s.tools == 0 {
                return format!(
                    "{document}: no tools (its diagnostics say why; a document with no operations has none)"
                );
            }
            let over = if s.over > 0 {
                format!(", {} over the budget of {budget}", s.over)
            } else {
                String::new()
            };
            let text = if s.text > 0 {
                format!("; {} with text trimmed", s.text)
            } else {
                String::new()
            };
            format!(
                "{document}: {} {}, {} compacted ({} output, {} input{text}), largest definition {} characters{over}",
                s.tools,
                plural(s.tools, "tool", "tools"),
                s.compacted,
                s.output,
                s.input,
                s.largest
            )
        })
        .collect()
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
pub fn run_search_tasks(
    dir: &Path,
    tasks_file: &Path,
    model: Option<&Path>,
    vector_cache: Option<std::path::PathBuf>,
) -> ExitCode {
    let model = match model.map(sezzlee_semantic::TextModel::load) {
        None => None,
        Some(Ok(model)) => Some(std::sync::Arc::new(model)),
        Some(Err(err)) => {
            eprintln!("sezzlee check: {err}");
            return ExitCode::from(2);
        }
    };
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
    // Vectors of earlier runs (or of a gateway sharing the folder) are
    // reused; a folder that cannot be used only costs the embedding time.
    let cache = model.as_ref().and_then(|model| {
        let root = vector_cache.filter(|root| !root.as_os_str().is_empty())?;
        match sezzlee_semantic::DiskCache::open(
            &root,
            model.digest(),
            model.dimensions(),
            sezzlee_semantic::cache::DEFAULT_LIMIT_BYTES,
        ) {
            Ok((cache, _)) => Some(cache),
            Err(err) => {
                eprintln!(
                    "sezzlee check: vector cache {}: {err}; embedding without it",
                    root.display()
                );
                None
            }
        }
    });
    match crate::commands::search_tasks::evaluate(dir, &tasks, model.as_ref(), cache.as_ref()) {
        Ok((report, all_known)) => {
            out!("{report}");
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
