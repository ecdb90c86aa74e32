//! `sezzlee check`, run as the real binary on copies of real documents:
//! `--emit` output is byte-identical across processes and folders, does not
//! depend on the order of object keys in a document, exits 0 with the
//! summary line on a clean folder and 1 with a located `parse_error` on an
//! unparsable file, and keeps stdout to one JSON tool definition per line
//! (with its relative document path) while diagnostics go to stderr.

use serde_json::{Map, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Output;

/// The real documents: the repository's own corpus (these tests name
/// documents in it).
fn real_dir() -> &'static Path {
    &crate::corpus::vendored().dir
}

const PETSTORE_OAS3: &str = "swagger.io_petstore-oas3_1.0.0.yaml";
const PETSTORE_SWAGGER2: &str = "swagger.io_petstore_1.0.0.json";
const GITHUB: &str = "github.com_api.github.com_1.1.4.json";
const TRACCAR: &str = "traccar.org_traccar_5.6.json";
const XKCD: &str = "xkcd.com_xkcd_1.0.0.json";
const GRAPH: &str = "microsoft.com_graph_1.0.1.json";

/// Keys every `--emit` line has, and those it may have.
const EMIT_KEYS: [&str; 7] = [
    "name",
    "description",
    "inputSchema",
    "version",
    "tags",
    "route",
    "document",
];
const EMIT_OPTIONAL_KEYS: [&str; 2] = ["outputSchema", "annotations"];

fn real(name: &str) -> PathBuf {
    crate::corpus::vendored().require(name)
}

/// A fresh folder holding copies of the named real documents.
fn folder(names: &[&str]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    for name in names {
        std::fs::copy(real(name), dir.path().join(name)).expect("copy a real document");
    }
    dir
}

fn check(dir: &Path, emit: bool) -> Output {
    let mut command = crate::support::sezzlee_binary(None);
    command.arg("check").arg(dir);
    if emit {
        command.arg("--emit");
    }
    command.output().expect("run sezzlee")
}

fn text(bytes: &[u8]) -> &str {
    std::str::from_utf8(bytes).expect("output is UTF-8")
}

/// Every stdout line as a JSON object; fails on any other line.
fn emitted(output: &Output) -> Vec<Map<String, Value>> {
    text(&output.stdout)
        .lines()
        .map(|line| match serde_json::from_str(line) {
            Ok(Value::Object(map)) => map,
            Ok(other) => panic!("--emit line is not a JSON object: {other}"),
            Err(e) => panic!("--emit line is not JSON ({e}): {line:.300}"),
        })
        .collect()
}

/// `(documents, operations, tools, errors, warnings)` from the summary line:
/// the last line of stdout, or of stderr with `--emit` (whose stdout is
/// the JSON lines). Each count's word agrees with it ("1 tool", "2 tools").
fn summary(output: &Output) -> (usize, usize, usize, usize, usize) {
    let stdout = text(&output.stdout);
    let emitting = stdout.starts_with('{');
    let stream = if emitting || stdout.is_empty() {
        text(&output.stderr)
    } else {
        stdout
    };
    let line = stream.lines().last().unwrap_or_default();
    let words: Vec<&str> = line.split([' ', ',']).filter(|w| !w.is_empty()).collect();
    let shape = ["document", "operation", "tool", "error", "warning"];
    let numbers: Vec<usize> = words
        .chunks(2)
        .zip(shape)
        .filter_map(|(pair, label)| match pair {
            [n, word] => {
                let n: usize = n.parse().ok()?;
                let expected = if n == 1 {
                    label.to_string()
                } else {
                    format!("{label}s")
                };
                (*word == expected).then_some(n)
            }
            _ => None,
        })
        .collect();
    assert!(
        words.len() == 10 && numbers.len() == 5,
        "the summary line is not `N documents, N operations, N tools, N errors, N warnings` with each word agreeing with its count: {line:?}"
    );
    (numbers[0], numbers[1], numbers[2], numbers[3], numbers[4])
}

/// The same value with the keys of every object in reverse order.
fn reversed(value: &Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .rev()
                .map(|(key, value)| (key.clone(), reversed(value)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(reversed).collect()),
        other => other.clone(),
    }
}

/// name → (version, route) of every `--emit` line.
fn versions(output: &Output) -> BTreeMap<String, (String, String)> {
    emitted(output)
        .iter()
        .map(|tool| {
            let field = |key: &str| tool[key].as_str().expect(key).to_string();
            (field("name"), (field("version"), field("route")))
        })
        .collect()
}

#[test]
fn emit_is_byte_identical_across_processes_and_folders() {
    let first = folder(&[PETSTORE_OAS3, GITHUB]);
    // The same files, copied in the other order into another folder.
    let second = folder(&[GITHUB, PETSTORE_OAS3]);
    let one = check(first.path(), true);
    let two = check(second.path(), true);
    let three = check(first.path(), true);
    assert_eq!(one.status.code(), Some(0), "{}", text(&one.stderr));
    let lines = text(&one.stdout).lines().count();
    assert!(
        lines >= 845 + 3,
        "expected a tool per operation of both documents, got {lines} lines"
    );
    for (label, other) in [("another folder", &two), ("a second run", &three)] {
        assert!(
            one.stdout == other.stdout,
            "--emit stdout differs in {label}; first differing line: {:?}",
            first_difference(text(&one.stdout), text(&other.stdout))
        );
        assert!(
            one.stderr == other.stderr,
            "diagnostics differ in {label}; first differing line: {:?}",
            first_difference(text(&one.stderr), text(&other.stderr))
        );
    }
}

fn first_difference(a: &str, b: &str) -> Option<(usize, String, String)> {
    let mut left = a.lines();
    let mut right = b.lines();
    for number in 1.. {
        match (left.next(), right.next()) {
            (None, None) => return None,
            (l, r) if l == r => continue,
            (l, r) => {
                let clip = |s: Option<&str>| s.unwrap_or("<end>").chars().take(300).collect();
                return Some((number, clip(l), clip(r)));
            }
        }
    }
    None
}

/// The `/workbook/` paths of the Microsoft Graph document (about 800
/// operations, components kept whole): their long operation ids truncate to
/// colliding tool names, so they exercise collision numbering.
fn graph_workbook_slice() -> Value {
    let bytes = std::fs::read(real(GRAPH)).expect("read the Graph document");
    let mut graph: Value = serde_json::from_slice(&bytes).expect("the Graph document is JSON");
    let paths = graph["paths"].as_object_mut().expect("Graph has paths");
    paths.retain(|path, _| path.contains("/workbook/"));
    assert!(paths.len() > 100, "the Graph slice lost its workbook paths");
    graph
}

#[test]
fn object_key_order_does_not_change_names_or_versions() {
    let original = tempfile::tempdir().expect("temp dir");
    let reordered = tempfile::tempdir().expect("temp dir");
    let mut documents = vec![(GRAPH.to_string(), graph_workbook_slice())];
    for name in [GITHUB, TRACCAR] {
        let bytes = std::fs::read(real(name)).expect("read a real document");
        let value = serde_json::from_slice(&bytes).expect("the document is JSON");
        documents.push((name.to_string(), value));
    }
    for (name, value) in &documents {
        let turned = reversed(value);
        let (plain, turned) = (
            serde_json::to_vec(value).unwrap(),
            serde_json::to_vec(&turned).unwrap(),
        );
        // The reversal really changed the bytes (keys are kept in order).
        assert_ne!(plain, turned, "{name}");
        std::fs::write(original.path().join(name), plain).expect("write a copy");
        std::fs::write(reordered.path().join(name), turned).expect("write a reordered copy");
    }
    let before = check(original.path(), true);
    let after = check(reordered.path(), true);
    assert_eq!(before.status.code(), Some(0), "{}", text(&before.stderr));
    assert_eq!(after.status.code(), Some(0), "{}", text(&after.stderr));
    assert!(
        text(&before.stderr)
            .lines()
            .any(|l| l.starts_with(GRAPH) && l.contains("warning[name_collision]")),
        "the Graph slice no longer has colliding tool names to number"
    );
    let before = versions(&before);
    let after = versions(&after);
    assert!(
        before.len() >= 845 + 61 + 500,
        "expected a tool per operation, got {}",
        before.len()
    );
    let pairs = |tools: &BTreeMap<String, (String, String)>| -> BTreeSet<(String, String)> {
        tools
            .iter()
            .map(|(name, (version, _))| (name.clone(), version.clone()))
            .collect()
    };
    let (pairs_before, pairs_after) = (pairs(&before), pairs(&after));
    let changed: Vec<String> = pairs_before
        .symmetric_difference(&pairs_after)
        .map(|(name, _)| name.clone())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .map(|name| {
            let show = |tools: &BTreeMap<String, (String, String)>| match tools.get(&name) {
                Some((version, route)) => format!("{version} {route}"),
                None => "absent".to_string(),
            };
            format!("{name}: {} -> {}", show(&before), show(&after))
        })
        .collect();
    assert!(
        changed.is_empty(),
        "reordering object keys changed the (name, version) pairs of {} tools; the first ones \
         (name: version route in the original -> in the reordered copy):\n{}",
        changed.len(),
        changed
            .iter()
            .take(12)
            .map(String::as_str)
            .collect::<Vec<_>>()
            .join("\n")
    );
}

#[test]
fn a_clean_folder_exits_0_with_the_summary_line() {
    let dir = folder(&[PETSTORE_OAS3, PETSTORE_SWAGGER2, XKCD]);
    let output = check(dir.path(), false);
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    let (documents, operations, tools, errors, warnings) = summary(&output);
    assert_eq!(documents, 3, "{stderr}");
    assert_eq!(operations, 3 + 3 + 2, "{stderr}");
    assert_eq!(tools, 8, "{stderr}");
    assert_eq!(errors, 0, "{stderr}");
    // Every stderr line is a warning diagnostic, as many as counted; the
    // report and the summary are on stdout.
    let diagnostics: Vec<&str> = stderr.lines().collect();
    assert_eq!(diagnostics.len(), warnings, "{stderr}");
    assert!(
        diagnostics
            .iter()
            .all(|l| l.contains('#') && l.contains(": warning[")),
        "{stderr}"
    );
    let stdout = text(&output.stdout);
    assert_eq!(
        stdout.lines().count(),
        3 + 1,
        "a report line per document and the summary: {stdout}"
    );
    assert!(
        stdout.lines().all(|l| !l.contains(": warning[")),
        "{stdout}"
    );
}

#[test]
fn an_unparsable_file_exits_1_with_a_located_parse_error() {
    let dir = folder(&[PETSTORE_OAS3]);
    std::fs::write(dir.path().join("broken.json"), "{ \"openapi\": ").unwrap();
    let output = check(dir.path(), true);
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(
        stderr
            .lines()
            .any(|l| l.starts_with("broken.json#") && l.contains("error[parse_error]")),
        "no `broken.json#…: error[parse_error]` line on stderr:\n{stderr}"
    );
    let (_, _, tools, errors, _) = summary(&output);
    assert!(errors >= 1, "{stderr}");
    // The broken file hides nothing: the good document is still served.
    assert_eq!(tools, 3, "{stderr}");
    let documents: BTreeSet<String> = emitted(&output)
        .iter()
        .map(|t| t["document"].as_str().unwrap_or_default().to_string())
        .collect();
    assert_eq!(
        documents,
        BTreeSet::from([PETSTORE_OAS3.to_string()]),
        "{stderr}"
    );
}

#[test]
fn emit_prints_one_tool_definition_per_line_and_diagnostics_on_stderr() {
    // Two petstores collide on tool names (warnings), a broken file is an
    // error, and one document sits in a subfolder.
    let dir = folder(&[PETSTORE_OAS3, PETSTORE_SWAGGER2]);
    std::fs::create_dir(dir.path().join("more")).unwrap();
    std::fs::copy(real(XKCD), dir.path().join("more").join(XKCD)).unwrap();
    std::fs::write(dir.path().join("broken.json"), "{ \"openapi\": ").unwrap();
    let output = check(dir.path(), true);
    let stdout = text(&output.stdout);
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");

    let tools = emitted(&output);
    let (_, _, counted, errors, warnings) = summary(&output);
    assert_eq!(tools.len(), counted, "one line per tool");
    assert_eq!(tools.len(), 8, "{stdout}");
    let expected_documents = BTreeSet::from([
        PETSTORE_OAS3.to_string(),
        PETSTORE_SWAGGER2.to_string(),
        format!("more/{XKCD}"),
    ]);
    let mut documents = BTreeSet::new();
    let mut names = BTreeSet::new();
    for tool in &tools {
        for key in EMIT_KEYS {
            assert!(tool.contains_key(key), "no {key:?} in {tool:?}");
        }
        for key in tool.keys() {
            assert!(
                EMIT_KEYS.contains(&key.as_str()) || EMIT_OPTIONAL_KEYS.contains(&key.as_str()),
                "unexpected key {key:?} in an --emit line"
            );
        }
        assert!(tool["name"].is_string() && tool["version"].is_string());
        assert!(tool["description"].is_string() && tool["route"].is_string());
        assert!(tool["inputSchema"].is_object() && tool["tags"].is_array());
        let document = tool["document"].as_str().expect("document is a string");
        assert!(
            !Path::new(document).is_absolute() && !document.contains('\\'),
            "document path is not relative: {document}"
        );
        documents.insert(document.to_string());
        names.insert(tool["name"].as_str().unwrap().to_string());
    }
    assert_eq!(documents, expected_documents);
    assert_eq!(names.len(), tools.len(), "tool names are unique");

    // Diagnostics: on stderr, never on stdout.
    assert!(errors >= 1 && warnings >= 1, "{stderr}");
    let diagnostic_lines: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains(": error[") || l.contains(": warning["))
        .collect();
    assert_eq!(diagnostic_lines.len(), errors + warnings, "{stderr}");
    for line in stdout.lines() {
        assert!(
            !line.contains(": warning[") && !line.contains("broken.json#"),
            "a diagnostic reached stdout: {line:.300}"
        );
    }
}

fn search_tasks(dir: &Path, tasks: &str) -> Output {
    let file = dir.join("tasks.tsv");
    std::fs::write(&file, tasks).expect("write the task file");
    search_tasks_file(dir, &file)
}

/// `sezzlee check DIR --search-tasks FILE`.
fn search_tasks_file(dir: &Path, file: &Path) -> Output {
    search_tasks_with_model(dir, file, None)
}

/// `sezzlee check DIR --search-tasks FILE [--search-model MODEL]`.
pub fn search_tasks_with_model(dir: &Path, file: &Path, model: Option<&Path>) -> Output {
    let mut command = crate::support::sezzlee_binary(None);
    // Vectors are cached where the suite keeps its build output, shared by
    // the runs of one suite (and by later suites on the same checkout).
    let cache = Path::new(env!("CARGO_TARGET_TMPDIR")).join("vector-cache");
    command
        .env("SEZZLEE_VECTOR_CACHE", cache)
        .arg("check")
        .arg(dir)
        .arg("--search-tasks")
        .arg(file);
    if let Some(model) = model {
        command.arg("--search-model").arg(model);
    }
    command.output().expect("run sezzlee")
}

/// Recall@5 of each section of a `--search-tasks` run that exited 0: all
/// documents in one catalog, then each document alone.
pub fn recall_at_5_sections(output: &Output) -> Vec<f64> {
    report_of(output)
        .lines()
        .filter(|line| {
            line.trim_start().starts_with("served ") && line.contains(" tasks: recall@1 ")
        })
        .map(|line| scores(line.trim()).2)
        .collect()
}

/// The report of a run that must have exited 0.
fn report_of(output: &Output) -> &str {
    let report = text(&output.stdout);
    assert_eq!(
        output.status.code(),
        Some(0),
        "{report}{}",
        text(&output.stderr)
    );
    report
}

/// `(tasks, recall@1, recall@5, recall@10, MRR)` of a report's scores line.
fn scores(line: &str) -> (usize, f64, f64, f64, f64) {
    let words: Vec<&str> = line.split_whitespace().collect();
    let number = |label: &str| -> f64 {
        let at = words.iter().position(|w| *w == label);
        let value = at.and_then(|i| words.get(i + 1));
        value
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("no {label} in {line:?}"))
    };
    // "served    299 tasks: …": the count stands before "tasks:".
    let tasks = words
        .iter()
        .position(|w| *w == "tasks:")
        .and_then(|i| words.get(i.checked_sub(1)?))
        .and_then(|w| w.parse().ok());
    (
        tasks.unwrap_or_else(|| panic!("no task count in {line:?}")),
        number("recall@1"),
        number("recall@5"),
        number("recall@10"),
        number("MRR"),
    )
}

#[test]
fn search_tasks_report_recall_mrr_and_each_miss_for_both_catalog_shapes() {
    let dir = folder(&[PETSTORE_OAS3, PETSTORE_SWAGGER2, XKCD]);
    // The two petstores hold the same operations: merged, the right one can
    // lose first place to its twin; alone, each ranks first.
    let tasks = format!(
        "query\tdocument\tmethod\tpath\toperationId\n\
         pet details by id\t{PETSTORE_SWAGGER2}\tGET\t/pets/{{petId}}\tshowPetById\n\
         list all pets\t{PETSTORE_OAS3}\tget\t/pets\n\
         register new pet\t{PETSTORE_OAS3}\tPOST\t/pets\tcreatePets\n\
         comic by number\t{XKCD}\tGET\t/{{comicId}}/info.0.json\n"
    );
    let output = search_tasks(dir.path(), &tasks);
    let report = report_of(&output);
    let lines: Vec<&str> = report.lines().collect();
    let together = lines
        .iter()
        .position(|l| l.starts_with("all documents in one catalog (3 documents"))
        .unwrap_or_else(|| panic!("no merged section: {report}"));
    let alone = lines
        .iter()
        .position(|l| l.starts_with("each document as its own catalog (3 documents)"))
        .unwrap_or_else(|| panic!("no per-document section: {report}"));
    assert!(together < alone);
    for (header, end) in [(together, alone), (alone, lines.len())] {
        let (count, at1, at5, at10, mrr) = scores(lines[header + 1]);
        assert_eq!(count, 4);
        assert!(at1 <= at5 && at5 <= at10 && at10 <= 1.0, "{report}");
        assert!(mrr >= at1 && mrr <= 1.0, "{report}");
        // One miss line per task not ranked first, naming its rank.
        let misses = lines[header + 2..end]
            .iter()
            .filter(|l| l.trim_start().starts_with("miss"))
            .count();
        assert_eq!(misses, 4 - (at1 * 4.0).round() as usize, "{report}");
        assert!(lines[header + 2..end].iter().all(|l| l.contains(" rank ")));
    }
    let (_, at1, ..) = scores(lines[alone + 1]);
    assert_eq!(
        at1, 1.0,
        "each petstore alone ranks its own operation first: {report}"
    );
}

#[test]
fn search_tasks_exit_1_for_an_operation_the_folder_lacks_and_2_for_a_bad_file() {
    let dir = folder(&[XKCD]);
    let unknown = format!("latest comic\t{XKCD}\tDELETE\t/info.0.json\n");
    let output = search_tasks(dir.path(), &unknown);
    assert_eq!(output.status.code(), Some(1));
    assert!(
        text(&output.stdout).contains(
            "line 1: DELETE /info.0.json in xkcd.com_xkcd_1.0.0.json is not in the catalog"
        ),
        "{}",
        text(&output.stdout)
    );
    let output = search_tasks(dir.path(), &format!("latest comic\t{XKCD}\tGET\n"));
    assert_eq!(output.status.code(), Some(2));
    assert!(text(&output.stderr).contains("line 1: expected 4 or 5 tab-separated fields"));
}

/// Search quality must not regress on real documents: the sample tasks of
/// the corpus (`tests/fixtures/corpus/search-tasks.tsv`) and
/// `tests/data/search-tasks-more.tsv` (common agent requests)
/// over the whole vendored corpus, each document alone and all in
/// one catalog. An agent that does not see the operation in its first five
/// cards fails its task, so recall@5 is the gate.
#[test]
#[ignore = "slow campaign: `cargo test -- --include-ignored` runs it, as CI does"]
fn search_quality_on_the_real_catalogs_holds_its_floor() {
    let more = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/search-tasks-more.tsv");
    let sample = crate::corpus::vendored().require("search-tasks.tsv");
    for (tasks, floor) in [(sample, 0.95), (more, 0.8)] {
        let output = search_tasks_file(real_dir(), &tasks);
        let report = report_of(&output);
        let sections: Vec<(usize, f64, f64, f64, f64)> = report
            .lines()
            .filter(|line| line.contains(" tasks: recall@1 "))
            .map(|line| scores(line.trim()))
            .collect();
        assert_eq!(sections.len(), 2, "{report}");
        for (_, _, at5, _, _) in sections {
            assert!(
                at5 >= floor,
                "recall@5 {at5} < {floor} on {}:\n{report}",
                tasks.display()
            );
        }
    }
}

/// The per-document report: Stripe compacted at the default budget, the
/// largest definition within it; at a budget too small for its largest
/// definitions, the tools that cannot fit are counted and warned about
/// (warnings only: exit 0).
#[test]
fn check_reports_compaction_and_warns_about_definitions_over_the_budget() {
    const STRIPE: &str = "stripe.com_stripe_2025-10-15.json";
    let dir = folder(&[STRIPE]);
    let output = check(dir.path(), false);
    let stderr = text(&output.stderr);
    let stdout = text(&output.stdout);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    let line = stdout
        .lines()
        .find(|line| line.starts_with(&format!("{STRIPE}: ")))
        .unwrap_or_else(|| panic!("a report line for Stripe on stdout: {stdout}"));
    let numbers: Vec<usize> = line
        .split(|c: char| !c.is_ascii_digit())
        .filter_map(|n| n.parse().ok())
        .collect();
    // "…json: 452 tools, N compacted (O output, I input), largest definition S characters"
    let [.., tools, compacted, output_cut, input_cut, largest] = numbers[..] else {
        panic!("unexpected report line: {line}");
    };
    assert_eq!(tools, 452, "{line}");
    assert!(compacted >= output_cut && output_cut > 300, "{line}");
    assert!(input_cut > 0, "{line}");
    assert!(largest <= 60_000 && largest > 50_000, "{line}");
    assert!(!stderr.contains("definition_too_large"), "{stderr}");

    let mut command = crate::support::sezzlee_binary(None);
    let tight = command
        .arg("check")
        .arg(dir.path())
        .args(["--response-budget", "1000"])
        .output()
        .expect("run sezzlee");
    let stderr = text(&tight.stderr);
    assert_eq!(tight.status.code(), Some(0), "{stderr}");
    let warned = stderr.matches("warning[definition_too_large]").count();
    assert!(warned > 0, "{stderr}");
    let line = text(&tight.stdout)
        .lines()
        .find(|line| line.starts_with(&format!("{STRIPE}: ")))
        .unwrap();
    assert!(
        line.ends_with(&format!("{warned} over the budget of 1000")),
        "{line}"
    );
}

/// Issue 29, item 5: what will fail at call time is a warning of `check`
/// (and counted in its summary): a document with no server and no
/// `backend.baseUrl`, a relative server URL, and a sidecar naming an
/// environment variable that is unset where `check` runs (set in the
/// child's environment, it is not reported).
#[test]
fn check_warns_of_what_would_fail_when_invoked() {
    let dir = tempfile::tempdir().unwrap();
    let document = |servers: serde_json::Value| {
        serde_json::json!({
            "openapi": "3.0.3",
            "info": {"title": "t", "version": "1"},
            "servers": servers,
            "paths": {"/a": {"get": {"operationId": "getA", "responses": {"200": {"description": "ok"}}}}}
        })
        .to_string()
    };
    let write = |name: &str, text: String| std::fs::write(dir.path().join(name), text).unwrap();
    write("nowhere.json", document(serde_json::json!([])));
    write(
        "relative.json",
        document(serde_json::json!([{"url": "/api/v1"}])),
    );
    write(
        "keyed.json",
        document(serde_json::json!([{"url": "https://api.example.com"}])),
    );
    write(
        "keyed.sezzlee.json",
        serde_json::json!({"backend": {"headers": {"x-api-key": "${SEZZLEE_CHECK_TEST_KEY_7C1D}"}}})
            .to_string(),
    );
    let run = |key: Option<&str>| {
        let mut command = crate::support::sezzlee_binary(None);
        command.arg("check").arg(dir.path());
        command.env_remove("SEZZLEE_CHECK_TEST_KEY_7C1D");
        if let Some(key) = key {
            command.env("SEZZLEE_CHECK_TEST_KEY_7C1D", key);
        }
        command.output().expect("run sezzlee")
    };
    let output = run(None);
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "warnings only: {stderr}");
    let warned = |file: &str, code: &str| {
        stderr
            .lines()
            .filter(|l| {
                l.starts_with(&format!("{file}#")) && l.contains(&format!("warning[{code}]"))
            })
            .collect::<Vec<_>>()
    };
    let nowhere = warned("nowhere.json", "no_backend");
    assert_eq!(nowhere.len(), 1, "{stderr}");
    assert!(
        nowhere[0].contains("1 tool can be found and loaded but not invoked"),
        "{stderr}"
    );
    let relative = warned("relative.json", "no_backend");
    assert_eq!(relative.len(), 1, "{stderr}");
    assert!(relative[0].contains("'/api/v1' is relative"), "{stderr}");
    let unset = warned("keyed.json", "unset_variable");
    assert_eq!(unset.len(), 1, "{stderr}");
    assert!(unset[0].contains("SEZZLEE_CHECK_TEST_KEY_7C1D"), "{stderr}");
    assert!(warned("keyed.json", "no_backend").is_empty(), "{stderr}");
    let (_, _, _, _, warnings) = summary(&output);
    assert_eq!(
        warnings,
        stderr.lines().filter(|l| l.contains(": warning[")).count(),
        "the summary counts them: {stderr}"
    );

    let output = run(Some("set"));
    let stderr = text(&output.stderr);
    assert!(!stderr.contains("unset_variable"), "{stderr}");
}

/// Issue 29, item 8: a document that builds no tool says so in the report,
/// counts agree with their words ("1 document"), a `$ref` to a component
/// that is not there suggests the close name that is, and each diagnostic's
/// pointer has its line and column beside it (YAML too: see
/// `commands::positions`' unit tests).
#[test]
fn check_says_what_a_document_built_and_suggests_a_close_ref() {
    let dir = tempfile::tempdir().unwrap();
    let document = serde_json::json!({
        "openapi": "3.0.3",
        "info": {"title": "t", "version": "1"},
        "paths": {"/a": {"get": {"operationId": "getA", "responses": {"200": {
            "description": "ok",
            "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Custmer"}}}
        }}}}},
        "components": {"schemas": {"Customer": {"type": "object"}}}
    });
    let pretty = serde_json::to_string_pretty(&document).unwrap();
    std::fs::write(dir.path().join("typo.json"), &pretty).unwrap();
    let output = check(dir.path(), false);
    let stderr = text(&output.stderr);
    let stdout = text(&output.stdout);
    assert!(
        stderr.contains("did you mean '#/components/schemas/Customer'?"),
        "{stderr}"
    );
    // The pointer's line and column beside it: the operation's `"get"` key.
    let get_line = pretty.lines().position(|l| l.contains("\"get\"")).unwrap() + 1;
    assert!(
        stderr.contains(&format!(
            "typo.json#/paths/~1a/get (line {get_line}, column 7): error[unresolved_ref]"
        )),
        "{stderr}"
    );
    assert!(
        stdout.lines().any(|l| l.starts_with("typo.json: no tools")),
        "{stdout}"
    );
    assert!(
        stdout
            .lines()
            .last()
            .unwrap_or_default()
            .starts_with("1 document, 1 operation, 0 tools, "),
        "{stdout}"
    );
    summary(&output);
}

/// `check --output-depth N` builds as a gateway serving with that depth
/// would: an owner sees what agents would load at it before serving it.
/// The emitted outputSchemas of a document without a sidecar depth follow
/// it (Stripe's refund: its charge's members named at 1, a stub at 0),
/// a sidecar's `outputDepth` still wins, and a value outside 0–64 is
/// refused (exit 2) naming the value and the range.
#[test]
fn check_output_depth_shows_what_agents_would_load_at_it() {
    const STRIPE: &str = "stripe.com_stripe_2025-10-15.json";
    let dir = folder(&[STRIPE]);
    let at = |depth: &str| {
        let mut command = crate::support::sezzlee_binary(None);
        let output = command
            .arg("check")
            .arg(dir.path())
            .args(["--emit", "--output-depth", depth])
            .output()
            .expect("run sezzlee");
        assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
        emitted(&output)
            .into_iter()
            .find(|tool| tool["route"] == "POST /v1/refunds")
            .expect("Stripe's POST /v1/refunds")
    };
    // The charge a refund names, when Stripe returns it expanded.
    let charge_members = |refund: &Map<String, Value>| {
        refund["outputSchema"]
            .pointer("/$defs/charge/properties")
            .and_then(Value::as_object)
            .map_or(0, Map::len)
    };
    let size = |refund: &Map<String, Value>| refund["outputSchema"].to_string().len();
    let (shallow, deeper) = (at("0"), at("1"));
    assert_eq!(
        charge_members(&shallow),
        0,
        "{:.300}",
        shallow["outputSchema"].to_string()
    );
    assert!(
        charge_members(&deeper) > 30,
        "{:.300}",
        deeper["outputSchema"].to_string()
    );
    assert!(
        size(&shallow) * 4 < size(&deeper),
        "{} against {}",
        size(&shallow),
        size(&deeper)
    );
    std::fs::write(
        dir.path().join("stripe.com_stripe_2025-10-15.sezzlee.json"),
        r#"{"outputDepth": 1}"#,
    )
    .unwrap();
    assert!(
        at("0")["outputSchema"] == deeper["outputSchema"],
        "the sidecar's depth 1 wins over --output-depth 0"
    );

    for depth in ["65", "-1", "two"] {
        let mut command = crate::support::sezzlee_binary(None);
        let refused = command
            .arg("check")
            .arg(dir.path())
            .arg(format!("--output-depth={depth}"))
            .output()
            .expect("run sezzlee");
        let stderr = text(&refused.stderr);
        assert_eq!(refused.status.code(), Some(2), "{depth}: {stderr}");
        assert!(
            stderr.contains(&format!(
                "output depth '{depth}' is not an integer from 0 to 64"
            )),
            "{depth}: {stderr}"
        );
    }
}
