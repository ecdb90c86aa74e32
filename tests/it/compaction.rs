//! Definitions that fit an agent's context, on real documents: every
//! definition of the corpus loads within the default response budget; a
//! published outputSchema accepts every value the full one accepts; what a
//! real backend returns validates against what load_tool showed; and an
//! invalid argument inside a part the published inputSchema elides is
//! still refused, with its pointer, before the backend is called.

use crate::backend::Backend;
use crate::instances::{instance, minimal_instance};
use crate::support::TestGateway;
use serde_json::{Map, Value, json};
use sezzlee_catalog::compact::FULL;
use sezzlee_catalog::{BuildOptions, Catalog, Sources, Tool};
use std::path::Path;

const STRIPE: &str = "stripe.com_stripe_2025-10-15.json";

/// Compacted tools per document whose values are generated and checked
/// (evenly spaced; compiling a 600 KB Stripe schema is the slow part).
const SAMPLED_PER_DOCUMENT: usize = 30;

/// Builds one document at the default settings and with nothing compacted.
fn both_builds(path: &Path) -> (Catalog, Catalog) {
    let name = path.file_name().unwrap().to_string_lossy().into_owned();
    let bytes = std::fs::read(path).unwrap();
    let sources = Sources::from_files([(name, bytes)], None);
    let published = Catalog::build(&sources);
    let full = Catalog::build_with(
        &sources,
        &BuildOptions {
            response_budget: usize::MAX,
            output_depth: FULL,
        },
    );
    (published, full)
}

fn validator(schema: &Value) -> jsonschema::Validator {
    jsonschema::options()
        .with_draft(jsonschema::Draft::Draft202012)
        .build(schema)
        .unwrap_or_else(|err| panic!("the schema compiles: {err}"))
}

/// Evenly spaced picks, at most `most`.
fn sample<T>(items: Vec<T>, most: usize) -> Vec<T> {
    let step = items.len().div_ceil(most).max(1);
    items.into_iter().step_by(step).collect()
}

/// What the relaxation check saw across the corpus.
#[derive(Default)]
struct Relaxation {
    /// Values the full schema accepted, each then checked on the published one.
    checked: usize,
    /// Generated values the full schema refused (the generator's limits).
    not_generated: usize,
    failures: Vec<String>,
}

impl Relaxation {
    /// Generates a value valid against `full` and checks `published` takes it.
    fn check(&mut self, what: String, full: &Value, published: &Value) {
        let value = instance(full);
        if !validator(full).is_valid(&value) {
            self.not_generated += 1;
            return;
        }
        self.checked += 1;
        let published = validator(published);
        if let Some(error) = published.iter_errors(&value).next() {
            self.failures.push(format!(
                "{what}: a value the full schema accepts is refused at {}: {error}",
                error.instance_path()
            ));
        }
    }
}

#[test]
#[ignore = "slow campaign: `cargo test -- --include-ignored` runs it, as CI does"]
fn every_definition_fits_and_accepts_what_the_full_one_accepts() {
    let corpus = crate::corpus::selected();
    let budget = BuildOptions::DEFAULT_BUDGET;
    let mut problems: Vec<String> = Vec::new();
    let mut relaxation = Relaxation::default();
    let (mut tools, mut compacted, mut inputs) = (0, 0, 0);
    for path in corpus.documents() {
        let (published, full) = both_builds(&path);
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        for warning in published
            .diagnostics
            .iter()
            .filter(|d| d.code == "definition_too_large")
        {
            problems.push(warning.to_string());
        }
        let mut outputs: Vec<&Tool> = Vec::new();
        let mut elided_inputs: Vec<&Tool> = Vec::new();
        for tool in published.tools() {
            tools += 1;
            let rendered = tool.definition().to_string().chars().count();
            if rendered != tool.definition_size {
                problems.push(format!(
                    "{name} {}: measured {} characters, rendered {rendered}",
                    tool.name, tool.definition_size
                ));
            }
            if !tool.loads_within(budget) {
                problems.push(format!(
                    "{name} {}: {rendered} characters, over {budget}",
                    tool.name
                ));
            }
            compacted += usize::from(tool.compaction.is_compacted());
            if tool.compaction.output_depth.is_some() {
                outputs.push(tool);
            }
            if tool.compaction.input_depth.is_some() {
                inputs += 1;
                elided_inputs.push(tool);
            }
        }
        for tool in sample(outputs, SAMPLED_PER_DOCUMENT) {
            let whole = full.tool(&tool.name).expect("the same tools either way");
            relaxation.check(
                format!("{name} {} outputSchema", tool.name),
                &whole.output_schema.as_ref().unwrap().to_value(),
                &tool.definition()["outputSchema"],
            );
        }
        for tool in sample(elided_inputs, SAMPLED_PER_DOCUMENT) {
            relaxation.check(
                format!("{name} {} inputSchema", tool.name),
                &tool.input_schema.to_value(),
                &tool.definition()["inputSchema"],
            );
        }
    }
    eprintln!(
        "{tools} tools ({} corpus): {compacted} compacted, {inputs} of them with a compacted input; values checked on published schemas: {}, not generated: {}",
        corpus.origin, relaxation.checked, relaxation.not_generated
    );
    problems.extend(relaxation.failures);
    assert!(
        problems.is_empty(),
        "{} problems:\n{}",
        problems.len(),
        problems.join("\n")
    );
    if corpus.vendored {
        assert!(
            compacted > 1_000,
            "the real corpus needs compacting: {compacted}"
        );
        assert!(
            relaxation.checked >= 3 * relaxation.not_generated && relaxation.checked >= 150,
            "too few generated values to mean anything: {} checked, {} not generated",
            relaxation.checked,
            relaxation.not_generated
        );
    }
}

/// Stripe, served with its backend replaced by the recording one.
async fn stripe_gateway(backend: &Backend) -> TestGateway {
    let document = crate::corpus::vendored().require(STRIPE);
    let text = std::fs::read_to_string(document).unwrap();
    let sidecar = json!({"backend": {"baseUrl": backend.base}}).to_string();
    TestGateway::with_files(
        &[
            (STRIPE, text),
            ("stripe.com_stripe_2025-10-15.sezzlee.json", sidecar),
        ],
        |_| {},
    )
    .await
}

/// Arguments for the members `schema` requires (the smallest valid ones).
fn required_arguments(schema: &Value) -> Map<String, Value> {
    match minimal_instance(schema) {
        Value::Object(arguments) => arguments,
        other => panic!("an object of arguments: {other}"),
    }
}

#[tokio::test]
async fn what_the_backend_returns_validates_against_the_published_output_schema() {
    let backend = Backend::start().await;
    let gateway = stripe_gateway(&backend).await;
    let (_, full) = both_builds(&crate::corpus::vendored().require(STRIPE));
    let catalog = gateway.gateway.store.current();
    let candidates: Vec<&Tool> = catalog
        .catalog
        .tools()
        .iter()
        .filter(|tool| tool.route.starts_with("GET ") && tool.compaction.output_depth.is_some())
        .collect();
    let mut checked = 0;
    for tool in sample(candidates, 12) {
        let whole = full.tool(&tool.name).unwrap();
        let full_output = whole.output_schema.as_ref().unwrap().to_value();
        let body = instance(&full_output);
        if !validator(&full_output).is_valid(&body) {
            continue;
        }
        backend.answer_every_path_with(&body);
        let loaded = gateway
            .tool_ok("load_tool", json!({"name": tool.name}))
            .await;
        let arguments = required_arguments(&tool.input_schema.to_value());
        let answer = gateway
            .tool_ok(
                "invoke_tool",
                json!({"name": tool.name, "arguments": arguments, "version": loaded["version"]}),
            )
            .await;
        assert_eq!(answer["status"], 200, "{answer}");
        assert_eq!(
            answer["body"], body,
            "the body arrives as the backend sent it"
        );
        let published = validator(&loaded["outputSchema"]);
        let errors: Vec<String> = published
            .iter_errors(&answer["body"])
            .map(|e| format!("{} at {}", e, e.instance_path()))
            .collect();
        assert!(errors.is_empty(), "{}: {errors:?}", tool.name);
        assert!(
            loaded["outputSchema"]
                .to_string()
                .contains("Not expanded here"),
            "{} was compacted",
            tool.name
        );
        checked += 1;
    }
    assert!(checked >= 8, "only {checked} Stripe responses were checked");
}

/// The path (member names from the top level) of the first stub in a
/// published input schema, found by following members and `$ref`s.
fn first_stub(schema: &Value, node: &Value, path: &mut Vec<String>, depth: usize) -> bool {
    let node = follow(schema, node);
    if depth > 6 {
        return false;
    }
    let Some(members) = node.get("properties").and_then(Value::as_object) else {
        return false;
    };
    for (name, member) in members {
        path.push(name.clone());
        let described = member.get("description").and_then(Value::as_str);
        if described.is_some_and(|d| d.contains("Accepted as given")) {
            return true;
        }
        if first_stub(schema, member, path, depth + 1) {
            return true;
        }
        path.pop();
    }
    false
}

/// A node with its `$ref` (to the root's `$defs`) followed.
fn follow<'s>(schema: &'s Value, node: &'s Value) -> &'s Value {
    match node.get("$ref").and_then(Value::as_str) {
        Some(reference) => schema
            .pointer(reference.trim_start_matches('#'))
            .unwrap_or(node),
        None => node,
    }
}

/// The full schema's node at a member path.
fn node_at<'s>(schema: &'s Value, path: &[String]) -> &'s Value {
    let mut node = schema;
    for name in path {
        node = &follow(schema, node)["properties"][name];
    }
    follow(schema, node)
}

#[tokio::test]
async fn an_invalid_argument_inside_an_elided_part_is_refused_with_its_pointer() {
    let backend = Backend::start().await;
    let gateway = stripe_gateway(&backend).await;
    let catalog = gateway.gateway.store.current();
    let mut tried = 0;
    for tool in catalog
        .catalog
        .tools()
        .iter()
        .filter(|tool| tool.compaction.input_depth.is_some())
    {
        let published = tool.definition()["inputSchema"].clone();
        let full = tool.input_schema.to_value();
        let mut path = Vec::new();
        if !first_stub(&published, &published, &mut path, 0) {
            continue;
        }
        // A string member of the elided object, sent as a number.
        let elided = node_at(&full, &path);
        let Some(string_member) = elided
            .get("properties")
            .and_then(Value::as_object)
            .and_then(|members| {
                members
                    .iter()
                    .find(|(_, m)| follow(&full, m).get("type") == Some(&json!("string")))
            })
            .map(|(name, _)| name.clone())
        else {
            continue;
        };
        let mut arguments = Value::Object(required_arguments(&full));
        let mut at = &mut arguments;
        for name in &path {
            at = at
                .as_object_mut()
                .unwrap()
                .entry(name.clone())
                .or_insert_with(|| json!({}));
        }
        at.as_object_mut()
            .unwrap()
            .insert(string_member.clone(), json!(12345));
        let pointer = format!("/{}/{string_member}", path.join("/"));
        let before = backend.count();
        let refused = gateway
            .tool_err(
                "invoke_tool",
                json!({"name": tool.name, "arguments": arguments}),
            )
            .await;
        assert_eq!(refused["error"], "invalid_arguments", "{refused}");
        let pointers: Vec<&str> = refused["problems"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|p| p["pointer"].as_str())
            .collect();
        assert!(
            pointers.contains(&pointer.as_str()),
            "{}: {pointer} among {pointers:?}",
            tool.name
        );
        assert_eq!(backend.count(), before, "nothing reached the backend");
        tried += 1;
        if tried == 3 {
            break;
        }
    }
    assert!(
        tried >= 1,
        "no Stripe tool with an elided input part had a string member to break"
    );
}

// ------------------------------------------- the gateway-wide output depth

/// A document whose one response nests four object levels
/// (`next.next.next.next`), its operation called `operation_id`.
fn nested_output(operation_id: &str) -> String {
    let level = |inner: Value| json!({"type": "object", "properties": {"next": inner, "label": {"type": "string"}}});
    let deep = level(level(level(level(json!({"type": "string"})))));
    json!({
        "openapi": "3.0.3",
        "info": {"title": "t", "version": "1"},
        "servers": [{"url": "http://127.0.0.1:9/api"}],
        "paths": {"/things": {"post": {
            "operationId": operation_id,
            "responses": {"200": {"content": {"application/json": {"schema": deep}}}}
        }}}
    })
    .to_string()
}

/// How many object levels of a loaded definition's outputSchema are
/// expanded: output depth `d` shows `d + 1` of the four (a stub ends them).
fn output_levels(definition: &Value) -> usize {
    fn levels(schema: &Value) -> usize {
        match schema.pointer("/properties/next") {
            Some(next) if next.get("properties").is_some() => 1 + levels(next),
            Some(_) => 1,
            None => 0,
        }
    }
    levels(&definition["outputSchema"])
}

/// Three documents alike but for who sets their output depth: nobody
/// (`make_plain`), their sidecar (`make_deep`, 2), their sidecar for the
/// operation (`make_operation`, 1).
fn documents_and_sidecars() -> Vec<(&'static str, String)> {
    vec![
        ("plain.json", nested_output("makePlain")),
        ("deep.json", nested_output("makeDeep")),
        ("deep.sezzlee.json", json!({"outputDepth": 2}).to_string()),
        ("operation.json", nested_output("makeOperation")),
        (
            "operation.sezzlee.json",
            json!({"tools": {"POST /things": {"outputDepth": 1}}}).to_string(),
        ),
    ]
}

/// The gateway's `output_depth` is what load_tool publishes for a document
/// whose sidecar sets no depth; a sidecar's depth, for the document or
/// for the operation, still wins over it.
#[tokio::test]
async fn the_gateway_output_depth_publishes_what_no_sidecar_sets() {
    let files = documents_and_sidecars();
    let default_levels = BuildOptions::DEFAULT_OUTPUT_DEPTH as usize + 1;
    for (depth, plain_levels) in [
        (None, default_levels),
        (Some(0), 1),
        (Some(1), 2),
        (Some(64), 4),
    ] {
        let gateway = TestGateway::with_files(&files, |settings| {
            if let Some(depth) = depth {
                settings.output_depth = depth;
            }
        })
        .await;
        let load = async |name: &str| {
            let definition = gateway.tool_ok("load_tool", json!({"name": name})).await;
            output_levels(&definition)
        };
        assert_eq!(
            load("make_plain").await,
            plain_levels,
            "gateway depth {depth:?}"
        );
        assert_eq!(load("make_deep").await, 3, "gateway depth {depth:?}");
        assert_eq!(load("make_operation").await, 2, "gateway depth {depth:?}");
    }
}

/// A `sezzlee serve` child on `dir` with `sezzlee.toml` text `file`, and
/// `SEZZLEE_OUTPUT_DEPTH` and `--output-depth` when given.
fn serve_with(
    dir: &Path,
    file: &str,
    env: Option<&str>,
    flag: Option<&str>,
) -> std::process::Command {
    let config = dir.join("settings").join("sezzlee.toml");
    std::fs::create_dir_all(config.parent().unwrap()).unwrap();
    std::fs::write(&config, file).unwrap();
    let mut command = crate::support::sezzlee_binary(None);
    command
        .args(["serve", "--listen", "127.0.0.1:0", "--watch", "off"])
        .arg("--catalogs")
        .arg(dir.join("catalogs"))
        .arg("--config")
        .arg(&config)
        .env_remove("RUST_LOG")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped());
    if let Some(value) = env {
        command.env("SEZZLEE_OUTPUT_DEPTH", value);
    }
    if let Some(value) = flag {
        command.args(["--output-depth", value]);
    }
    command
}

/// The child's output when it exits within 30 s; `None` (after killing
/// it) when it goes on serving, as it would with a value it took.
fn refused_start(mut command: std::process::Command) -> Option<std::process::Output> {
    let mut child = command.spawn().expect("sezzlee serve runs");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while std::time::Instant::now() < deadline {
        if child
            .try_wait()
            .expect("the child can be waited on")
            .is_some()
        {
            return Some(child.wait_with_output().expect("its output"));
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let _ = child.kill();
    let _ = child.wait();
    None
}

/// load_tool's answer from the gateway at `url`.
async fn load_over_http(url: &str, name: &str) -> Value {
    let body = crate::support::modern_request(
        1,
        "tools/call",
        json!({"name": "load_tool", "arguments": {"name": name}}),
    );
    let mut request = reqwest::Client::new()
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream");
    for (name, value) in crate::support::modern_headers(&body) {
        request = request.header(name, value);
    }
    let response = request.json(&body).send().await.unwrap();
    assert_eq!(response.status(), 200);
    let body: Value = response.json().await.unwrap();
    crate::support::tool_reply(&body["result"]).payload
}

/// The binary reads the depth from `--output-depth`, else
/// `SEZZLEE_OUTPUT_DEPTH`, else `output_depth` in `sezzlee.toml`; a sidecar
/// still wins over all three. A value that is not an integer from 0 to 64
/// stops start-up (exit 2) naming the value and the range, whichever way
/// it came.
#[tokio::test]
async fn serve_takes_the_output_depth_from_the_flag_the_environment_or_the_file() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("catalogs")).unwrap();
    for (name, text) in documents_and_sidecars() {
        std::fs::write(dir.path().join("catalogs").join(name), text).unwrap();
    }
    for (env, flag, plain_levels) in [
        (None, None, 1),
        (Some("1"), None, 2),
        (Some("1"), Some("2"), 3),
    ] {
        let mut child = serve_with(dir.path(), "output_depth = 0\n", env, flag)
            .spawn()
            .expect("sezzlee serve starts");
        let (url, logs) = crate::support::listening_url(&mut child);
        let plain = load_over_http(&url, "make_plain").await;
        let deep = load_over_http(&url, "make_deep").await;
        let _ = child.kill();
        let _ = child.wait();
        let given = format!("file 0, environment {env:?}, flag {flag:?}");
        assert_eq!(output_levels(&plain), plain_levels, "{given}");
        assert_eq!(output_levels(&deep), 3, "{given}");
        drop(logs);
    }
    for (file, env, flag, given) in [
        ("output_depth = 65\n", None, None, "'65'"),
        ("output_depth = -1\n", None, None, "'-1'"),
        ("", Some("65"), None, "'65'"),
        ("", Some("deep"), None, "'deep'"),
        ("output_depth = 1\n", Some("1"), Some("2.5"), "'2.5'"),
    ] {
        let refused = refused_start(serve_with(dir.path(), file, env, flag))
            .unwrap_or_else(|| panic!("{file:?} {env:?} {flag:?}: started"));
        let stderr = String::from_utf8_lossy(&refused.stderr);
        assert_eq!(
            refused.status.code(),
            Some(2),
            "{file:?} {env:?} {flag:?}: {stderr}"
        );
        assert!(
            stderr.contains(&format!(
                "output depth {given} is not an integer from 0 to 64"
            )),
            "{file:?} {env:?} {flag:?}: {stderr}"
        );
    }
}
