//! Every real-world document of the corpus (the vendored one, or the folder
//! named by `SEZZLEE_CORPUS`: see `corpus.rs`), built on its own,
//! builds without panicking, finds as many operations as MANIFEST.tsv counts,
//! turns at least 99% of them into tools, explains every operation it
//! leaves out with an error diagnostic, and emits only schemas that are
//! valid JSON Schema 2020-12: each `inputSchema`/`outputSchema` passes the
//! 2020-12 meta-schema, has an object root (a closed one for input), keeps
//! every `$ref` pointing at one of its own `$defs`, holds only patterns that
//! compile as ECMA-262 with the `u` flag (as Ajv compiles them), and
//! compiles with `jsonschema` (every tool of every document, every 10th
//! tool of the Microsoft Graph document, whose schemas are the largest).
//!
//! Failures are collected across all documents and reported together. A
//! corpus without `MANIFEST.tsv` has the operation counts skipped, and the
//! test says so.

use serde_json::{Value, json};
use sezzlee_catalog::{Catalog, Severity, Sources, Tool};
use std::collections::{BTreeMap, BTreeSet};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::Path;
use std::time::{Duration, Instant};

/// The one document whose schemas are too many to compile them all.
const GRAPH: &str = "microsoft.com_graph_1.0.1.json";

/// Of the Graph document, every this-many-th tool's schemas are compiled.
const GRAPH_COMPILE_STRIDE: usize = 10;

/// Error codes that may explain an operation left out of the catalog.
const LEFT_OUT_CODES: [&str; 4] = [
    "unresolved_ref",
    "invalid_operation",
    "invalid_configuration",
    "unsupported_body",
];

/// Problems listed in the failure message (all are counted).
const SHOWN: usize = 20;

/// Longest error text kept per problem (schemas can be 700 KB).
const MAX_ERROR_CHARS: usize = 400;

/// One thing wrong, located.
struct Problem {
    document: String,
    tool: String,
    schema: &'static str,
    error: String,
}

impl Problem {
    fn new(document: &str, tool: &str, schema: &'static str, error: impl Into<String>) -> Self {
        let mut error: String = error.into();
        if error.chars().count() > MAX_ERROR_CHARS {
            error = error.chars().take(MAX_ERROR_CHARS).collect::<String>() + "…";
        }
        Problem {
            document: document.to_string(),
            tool: tool.to_string(),
            schema,
            error,
        }
    }
}

/// What one document's schemas went through.
#[derive(Default)]
struct Checked {
    meta_validated: usize,
    compiled: usize,
    /// Patterns valid as ECMA-262 (what clients compile) that the Rust
    /// validator's engine cannot compile: the gateway serves them without
    /// validating them (`tools::drop_uncompilable_patterns`), and so does
    /// this test's compile step.
    ecma_only_patterns: usize,
}

#[test]
#[ignore = "slow campaign: `cargo test -- --include-ignored` runs it, as CI does"]
fn every_real_document_builds_into_valid_tools() {
    let started = Instant::now();
    let corpus = crate::corpus::selected();
    let manifest = match corpus.manifest() {
        Some(path) => read_manifest(&path),
        None => {
            corpus.skip(
                "operation counts against MANIFEST.tsv",
                "the corpus has no MANIFEST.tsv",
            );
            BTreeMap::new()
        }
    };
    let documents = read_documents(corpus);
    let least = if corpus.vendored { 20 } else { 1 };
    assert!(
        documents.len() >= least,
        "expected the corpus ({}) to hold at least {least} documents, found {}",
        corpus.origin,
        documents.len()
    );

    let mut problems: Vec<Problem> = Vec::new();
    let listed: BTreeSet<&str> = manifest.keys().map(String::as_str).collect();
    let present: BTreeSet<&str> = documents.iter().map(|(name, _)| name.as_str()).collect();
    for missing in listed.difference(&present).filter(|_| !manifest.is_empty()) {
        problems.push(Problem::new(
            missing,
            "-",
            "-",
            "listed in MANIFEST.tsv but not in the folder",
        ));
    }
    for unlisted in present.difference(&listed).filter(|_| !manifest.is_empty()) {
        problems.push(Problem::new(
            unlisted,
            "-",
            "-",
            "in the folder but not listed in MANIFEST.tsv",
        ));
    }

    let mut total_operations = 0usize;
    let mut total_covered = 0usize;
    let mut total_tools = 0usize;
    let mut total_checked = Checked::default();
    let mut timings: Vec<(String, Duration, Duration)> = Vec::new();
    for (name, bytes) in documents {
        let build_started = Instant::now();
        let built = catch_unwind(AssertUnwindSafe(|| {
            Catalog::build(&Sources::from_files(vec![(name.clone(), bytes)], None))
        }));
        let build_time = build_started.elapsed();
        let catalog = match built {
            Ok(catalog) => catalog,
            Err(panic) => {
                problems.push(Problem::new(
                    &name,
                    "-",
                    "-",
                    format!("Catalog::build panicked: {}", panic_text(&panic)),
                ));
                continue;
            }
        };

        let tools = catalog.tools();
        let operations = match catalog.documents.iter().find(|d| *d.file == *name) {
            Some(summary) => {
                if summary.tools != tools.len() {
                    problems.push(Problem::new(
                        &name,
                        "-",
                        "-",
                        format!(
                            "document summary counts {} tools but the catalog holds {}",
                            summary.tools,
                            tools.len()
                        ),
                    ));
                }
                summary.operations
            }
            None => {
                problems.push(Problem::new(
                    &name,
                    "-",
                    "-",
                    "no document summary for the document",
                ));
                0
            }
        };
        eprintln!(
            "{name}: operations found {operations}, tools made {}, diagnostics {} errors / {} warnings",
            tools.len(),
            catalog.errors(),
            catalog.warnings()
        );
        if let Some(&expected) = manifest.get(&name)
            && operations != expected
        {
            problems.push(Problem::new(
                &name,
                "-",
                "-",
                format!("found {operations} operations; MANIFEST.tsv counts {expected}"),
            ));
        }

        // Operations left out must each be explained by an error.
        let covered: BTreeSet<&str> = tools.iter().map(|t| t.route.as_str()).collect();
        let left_out = operations
            .saturating_sub(tools.len())
            .max(operations.saturating_sub(covered.len()));
        let explained = catalog
            .diagnostics
            .iter()
            .filter(|d| d.severity == Severity::Error && LEFT_OUT_CODES.contains(&d.code))
            .count();
        if explained < left_out {
            problems.push(Problem::new(
                &name,
                "-",
                "-",
                format!(
                    "{left_out} operations left out but only {explained} error diagnostics \
                     ({LEFT_OUT_CODES:?}) explain them"
                ),
            ));
        }
        for tool in tools.iter().filter(|t| *t.document != *name) {
            problems.push(Problem::new(
                &name,
                &tool.name,
                "-",
                format!("tool names document {:?}", &*tool.document),
            ));
        }
        total_operations += operations;
        total_covered += covered.len();
        total_tools += tools.len();

        let check_started = Instant::now();
        let stride = if name == GRAPH {
            GRAPH_COMPILE_STRIDE
        } else {
            1
        };
        let checked = check_tools(&name, tools, stride, &mut problems);
        total_checked.meta_validated += checked.meta_validated;
        total_checked.compiled += checked.compiled;
        total_checked.ecma_only_patterns += checked.ecma_only_patterns;
        timings.push((name, build_time, check_started.elapsed()));
    }

    for (name, build, check) in &timings {
        eprintln!(
            "  timing {name}: build {:.2}s, schema checks {:.2}s",
            build.as_secs_f64(),
            check.as_secs_f64()
        );
    }
    eprintln!(
        "all: {total_operations} operations, {total_covered} with a tool, {total_tools} tools, \
         {} schemas meta-validated, {} compiled (strict formats; {} ECMA-262 patterns the \
         Rust engine cannot compile left out of it, as the gateway does), {:.1}s",
        total_checked.meta_validated,
        total_checked.compiled,
        total_checked.ecma_only_patterns,
        started.elapsed().as_secs_f64()
    );

    if total_tools * 100 < total_operations * 99 {
        problems.push(Problem::new(
            "(all)",
            "-",
            "-",
            format!("{total_tools} tools for {total_operations} operations: under 99%"),
        ));
    }
    if total_covered * 100 < total_operations * 99 {
        problems.push(Problem::new(
            "(all)",
            "-",
            "-",
            format!("{total_covered} of {total_operations} operations have a tool: under 99%"),
        ));
    }
    // The checks above must have had something to check.
    assert!(
        total_checked.meta_validated >= total_tools && total_checked.compiled > 0,
        "schema checks did not run: {} meta-validated, {} compiled for {total_tools} tools",
        total_checked.meta_validated,
        total_checked.compiled
    );

    if !problems.is_empty() {
        let mut message = format!(
            "{} problems across the real catalogs; the first {}:\n",
            problems.len(),
            problems.len().min(SHOWN)
        );
        for p in problems.iter().take(SHOWN) {
            message.push_str(&format!(
                "  {} | tool {} | {} | {}\n",
                p.document, p.tool, p.schema, p.error
            ));
        }
        let mut per_document: BTreeMap<&str, usize> = BTreeMap::new();
        for p in &problems {
            *per_document.entry(p.document.as_str()).or_default() += 1;
        }
        message.push_str(&format!("problems per document: {per_document:?}"));
        panic!("{message}");
    }
}

/// Checks the schemas of every tool, spread over the machine's cores;
/// every `stride`-th tool's schemas are also compiled.
fn check_tools(
    document: &str,
    tools: &[Tool],
    stride: usize,
    problems: &mut Vec<Problem>,
) -> Checked {
    let workers = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
        .clamp(1, 8);
    let results: Vec<(Vec<Problem>, Checked)> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..workers)
            .map(|worker| {
                scope.spawn(move || {
                    let mut found = Vec::new();
                    let mut checked = Checked::default();
                    for (i, tool) in tools.iter().enumerate().skip(worker).step_by(workers) {
                        check_tool(document, tool, i % stride == 0, &mut found, &mut checked);
                    }
                    (found, checked)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("a schema-checking thread panicked"))
            .collect()
    });
    let mut total = Checked::default();
    for (found, checked) in results {
        problems.extend(found);
        total.meta_validated += checked.meta_validated;
        total.compiled += checked.compiled;
        total.ecma_only_patterns += checked.ecma_only_patterns;
    }
    total
}

fn check_tool(
    document: &str,
    tool: &Tool,
    compile: bool,
    problems: &mut Vec<Problem>,
    checked: &mut Checked,
) {
    let definition = match catch_unwind(AssertUnwindSafe(|| tool.definition())) {
        Ok(definition) => definition,
        Err(panic) => {
            problems.push(Problem::new(
                document,
                &tool.name,
                "-",
                format!("definition() panicked: {}", panic_text(&panic)),
            ));
            return;
        }
    };
    match definition.get("inputSchema") {
        Some(schema) => check_schema(
            document,
            &tool.name,
            "inputSchema",
            schema,
            compile,
            problems,
            checked,
        ),
        None => problems.push(Problem::new(
            document,
            &tool.name,
            "inputSchema",
            "definition has no inputSchema",
        )),
    }
    if let Some(schema) = definition.get("outputSchema") {
        check_schema(
            document,
            &tool.name,
            "outputSchema",
            schema,
            compile,
            problems,
            checked,
        );
    }
    // Calls are validated against the full inputSchema when the published
    // one was compacted: it must be as sound.
    if tool.published_input.is_some() {
        check_schema(
            document,
            &tool.name,
            "inputSchema (full, for validation)",
            &tool.input_schema.to_value(),
            compile,
            problems,
            checked,
        );
    }
}

fn check_schema(
    document: &str,
    tool: &str,
    which: &'static str,
    schema: &Value,
    compile: bool,
    problems: &mut Vec<Problem>,
    checked: &mut Checked,
) {
    let mut report = |error: String| problems.push(Problem::new(document, tool, which, error));
    if schema.get("type") != Some(&Value::String("object".to_string())) {
        report(format!(
            "root type is {:?}, not \"object\"",
            schema.get("type")
        ));
    }
    if which.starts_with("inputSchema")
        && schema.get("additionalProperties") != Some(&Value::Bool(false))
    {
        report(format!(
            "root additionalProperties is {:?}, not false",
            schema.get("additionalProperties")
        ));
    }

    // Self-contained: every $ref names one of this schema's own $defs.
    let defs = schema.get("$defs");
    if let Some(defs) = defs
        && !defs.is_object()
    {
        report("$defs is not an object".to_string());
    }
    let mut refs = Vec::new();
    collect_refs(schema, "", &mut refs);
    for (at, reference) in refs {
        let target = reference
            .strip_prefix("#/$defs/")
            .filter(|name| !name.is_empty() && !name.contains('/'))
            .map(|name| name.replace("~1", "/").replace("~0", "~"));
        match target {
            Some(name) if defs.and_then(|d| d.get(&name)).is_some() => {}
            Some(name) => report(format!(
                "$ref {reference:?} at {at} dangles: no $defs entry {name:?}"
            )),
            None => report(format!(
                "$ref {reference:?} at {at} is not of the form #/$defs/NAME"
            )),
        }
    }

    // Every regular expression compiles as clients compile it: ECMA-262
    // with the `u` flag (Ajv's `new RegExp(pattern, "u")`).
    let mut patterns = Vec::new();
    collect_patterns(schema, "", &mut patterns);
    let mut ecma_only = BTreeSet::new();
    for (at, pattern) in patterns {
        if let Err(error) = regress::Regex::with_flags(pattern, "u") {
            report(format!(
                "pattern {pattern:?} at {at} is not ECMA-262 with the u flag: {error}"
            ));
        } else if compile && strict_validator(&json!({ "pattern": pattern })).is_err() {
            ecma_only.insert(pattern.to_string());
        }
    }

    checked.meta_validated += 1;
    if let Err(error) = jsonschema::draft202012::meta::validate(schema) {
        report(format!(
            "not valid against the 2020-12 meta-schema at {}: {}",
            error.instance_path(),
            error
        ));
    }
    if compile {
        checked.compiled += 1;
        checked.ecma_only_patterns += ecma_only.len();
        let mut served = schema.clone();
        if !ecma_only.is_empty() {
            remove_patterns(&mut served, &ecma_only);
        }
        if let Err(error) = strict_validator(&served) {
            report(format!(
                "does not compile as 2020-12 (at {}): {}",
                error.instance_path(),
                error
            ));
        }
    }
}

/// The checks above are not vacuous: each broken schema is caught, and a
/// sound one (with `$ref`-looking data in `enum` and a property named
/// `$ref`) passes.
#[test]
fn the_schema_checks_catch_broken_schemas() {
    let sound = json!({
        "type": "object",
        "additionalProperties": false,
        "properties": {
            "$ref": {"type": "string", "enum": [{"$ref": "#/nowhere"}]},
            "pet": {"$ref": "#/$defs/Pet"}
        },
        "$defs": {"Pet": {"type": "object", "properties": {"next": {"$ref": "#/$defs/Pet"}}}}
    });
    let broken = [
        (
            json!({"type": "array", "additionalProperties": false}),
            "root type",
        ),
        (json!({"type": "object"}), "additionalProperties"),
        (
            json!({"type": "object", "additionalProperties": false,
                   "properties": {"a": {"$ref": "#/$defs/Missing"}}}),
            "dangles",
        ),
        (
            json!({"type": "object", "additionalProperties": false,
                   "properties": {"a": {"$ref": "#/components/schemas/A"}}}),
            "not of the form",
        ),
        (
            json!({"type": "object", "additionalProperties": false,
                   "properties": {"a": {"type": "strin"}}}),
            "meta-schema",
        ),
        (
            json!({"type": "object", "additionalProperties": false,
                   "properties": {"a": {"type": "string", "pattern": "(["}}}),
            "compile",
        ),
        (
            json!({"type": "object", "additionalProperties": false,
                   "properties": {"a": {"type": "integer", "format": "int32"}}}),
            "compile",
        ),
        (
            json!({"type": "object", "additionalProperties": false,
                   "properties": {"a": {"type": "string", "pattern": "\\p{Print}+"}}}),
            "ECMA-262",
        ),
        (
            json!({"type": "object", "additionalProperties": false,
                   "$defs": {"M": {"type": "object", "patternProperties": {"[\\_]": true}}}}),
            "ECMA-262",
        ),
    ];
    let mut checked = Checked::default();
    let mut problems = Vec::new();
    check_schema(
        "doc",
        "sound",
        "inputSchema",
        &sound,
        true,
        &mut problems,
        &mut checked,
    );
    let errors: Vec<&str> = problems.iter().map(|p| p.error.as_str()).collect();
    assert!(errors.is_empty(), "a sound schema was refused: {errors:?}");
    for (schema, expected) in broken {
        let mut problems = Vec::new();
        check_schema(
            "doc",
            "broken",
            "inputSchema",
            &schema,
            true,
            &mut problems,
            &mut checked,
        );
        let errors: Vec<&str> = problems.iter().map(|p| p.error.as_str()).collect();
        assert!(
            errors.iter().any(|e| e.contains(expected)),
            "{schema} should be refused with {expected:?}; got {errors:?}"
        );
    }
}

/// Keywords whose value is one subschema (`items` may also be an array).
const SCHEMA_KEYWORDS: [&str; 12] = [
    "additionalProperties",
    "unevaluatedProperties",
    "unevaluatedItems",
    "items",
    "additionalItems",
    "contains",
    "propertyNames",
    "not",
    "if",
    "then",
    "else",
    "contentSchema",
];

/// Keywords whose value is an array of subschemas.
const ARRAY_KEYWORDS: [&str; 4] = ["allOf", "anyOf", "oneOf", "prefixItems"];

/// Keywords whose value maps names to subschemas.
const MAP_KEYWORDS: [&str; 5] = [
    "properties",
    "patternProperties",
    "$defs",
    "definitions",
    "dependentSchemas",
];

/// Every `$ref` in schema positions (not inside `const`, `enum`, `default`,
/// `examples` or unknown keywords, which are data), with its location.
fn collect_refs<'v>(schema: &'v Value, at: &str, out: &mut Vec<(String, &'v str)>) {
    walk_schema(schema, at, &mut |key, value, here| {
        if key == "$ref" || key == "$dynamicRef" {
            out.push((here.to_string(), value.as_str().unwrap_or("<not a string>")));
        }
    });
}

/// A 2020-12 validator as strict as clients may be: every `format` must
/// be one it knows (as Ajv in strict mode requires).
fn strict_validator(
    schema: &Value,
) -> Result<jsonschema::Validator, jsonschema::ValidationError<'_>> {
    jsonschema::draft202012::options()
        .should_validate_formats(true)
        .should_ignore_unknown_formats(false)
        // 2020-12 formats this build of the validator has no IDNA tables for.
        .with_format("idn-email", |_: &str| true)
        .with_format("idn-hostname", |_: &str| true)
        .build(schema)
}

/// Removes the `pattern` values and `patternProperties` keys in `remove`.
fn remove_patterns(schema: &mut Value, remove: &BTreeSet<String>) {
    match schema {
        Value::Object(members) => {
            if members
                .get("pattern")
                .and_then(Value::as_str)
                .is_some_and(|pattern| remove.contains(pattern))
            {
                members.remove("pattern");
            }
            if let Some(Value::Object(patterns)) = members.get_mut("patternProperties") {
                patterns.retain(|pattern, _| !remove.contains(pattern));
            }
            members
                .values_mut()
                .for_each(|member| remove_patterns(member, remove));
        }
        Value::Array(items) => items
            .iter_mut()
            .for_each(|item| remove_patterns(item, remove)),
        _ => {}
    }
}

/// Every regular expression in schema positions: `pattern` values and
/// `patternProperties` keys, with their location.
pub(crate) fn collect_patterns<'v>(schema: &'v Value, at: &str, out: &mut Vec<(String, &'v str)>) {
    walk_schema(schema, at, &mut |key, value, here| match key {
        "pattern" => out.push((here.to_string(), value.as_str().unwrap_or("<not a string>"))),
        "patternProperties" => {
            for name in value
                .as_object()
                .into_iter()
                .flat_map(|members| members.keys())
            {
                out.push((here.to_string(), name.as_str()));
            }
        }
        _ => {}
    });
}

/// Calls `visit` with every keyword of every schema in schema positions
/// (its name, its value and its location), descending into subschemas.
fn walk_schema<'v>(schema: &'v Value, at: &str, visit: &mut dyn FnMut(&str, &'v Value, &str)) {
    let Value::Object(map) = schema else {
        return;
    };
    for (key, value) in map {
        let here = format!("{at}/{}", key.replace('~', "~0").replace('/', "~1"));
        visit(key, value, &here);
        if SCHEMA_KEYWORDS.contains(&key.as_str()) && value.is_object() {
            walk_schema(value, &here, visit);
        } else if SCHEMA_KEYWORDS.contains(&key.as_str()) || ARRAY_KEYWORDS.contains(&key.as_str())
        {
            if let Value::Array(items) = value {
                for (i, item) in items.iter().enumerate() {
                    walk_schema(item, &format!("{here}/{i}"), visit);
                }
            }
        } else if MAP_KEYWORDS.contains(&key.as_str())
            && let Value::Object(members) = value
        {
            for (name, member) in members {
                let name = name.replace('~', "~0").replace('/', "~1");
                walk_schema(member, &format!("{here}/{name}"), visit);
            }
        }
    }
}

/// The documents of the folder (JSON and YAML files), sorted by name.
fn read_documents(corpus: &crate::corpus::Corpus) -> Vec<(String, Vec<u8>)> {
    corpus
        .documents()
        .into_iter()
        .map(|path| {
            let name = path
                .strip_prefix(&corpus.dir)
                .unwrap_or(&path)
                .to_string_lossy()
                .into_owned();
            let bytes = std::fs::read(&path)
                .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
            (name, bytes)
        })
        .collect()
}

/// MANIFEST.tsv: file name → the operations (path × method) it holds.
fn read_manifest(path: &Path) -> BTreeMap<String, usize> {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap_or_default().split('\t').collect();
    let column = |name: &str| {
        header
            .iter()
            .position(|h| *h == name)
            .unwrap_or_else(|| panic!("{} has no {name} column", path.display()))
    };
    let (file_column, operations_column) = (column("filename"), column("operations"));
    lines
        .filter(|line| !line.trim().is_empty())
        .map(|line| {
            let cells: Vec<&str> = line.split('\t').collect();
            let operations = cells
                .get(operations_column)
                .and_then(|c| c.parse().ok())
                .unwrap_or_else(|| panic!("bad operations cell in {line:?}"));
            (cells[file_column].to_string(), operations)
        })
        .collect()
}

fn panic_text(panic: &Box<dyn std::any::Any + Send>) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "(non-text panic)".to_string())
}
