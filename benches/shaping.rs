//! Shaping a large backend body to the response budget, against parsing
//! the same body with serde_json (what the gateway does to every JSON
//! body anyway): the target is shaping ≤ 2 × parsing for an 8 MiB body,
//! the most the gateway reads by default.
//!
//! Bodies: a GitHub-like list of issues (objects with ids, titles and long
//! text), and a flat array of numbers; each about 8 MiB. Shaped into a
//! room of 60,000 characters (the default response budget).
//!
//!     cargo bench --bench shaping
//!
//! Read the ratio of the `shape` and `parse` times of the same body, from
//! one run (the machines are shared and noisy). `answer` is the whole of
//! what invoke_tool does with such a body: measuring it, shaping it in
//! rounds until the answer fits, naming the next step.

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use serde_json::{Value, json};
use sezzlee_catalog::{Catalog, Sources};
use sezzlee_gateway::backend::response::{BackendResponse, ResponseBody};
use sezzlee_gateway::tools::backend_answer::answer;
use sezzlee_gateway::tools::shape::shape;

const TARGET_BYTES: usize = 8 * 1024 * 1024;
const ROOM: usize = 60_000;

fn issues() -> String {
    let mut items = Vec::new();
    let mut size = 2;
    let mut i = 0u64;
    while size < TARGET_BYTES {
        let item = json!({
            "id": i, "number": i, "title": format!("Issue {i}: something does not work"),
            "user": {"login": "someone", "id": 7, "site_admin": false},
            "labels": [{"name": "bug"}, {"name": "help wanted"}],
            "state": "open", "body": "Steps to reproduce: ".repeat(20),
        });
        size += item.to_string().len() + 1;
        items.push(item);
        i += 1;
    }
    Value::Array(items).to_string()
}

fn numbers() -> String {
    let count = TARGET_BYTES / 8;
    Value::Array((0..count as u64).map(|n| json!(n * 1_000_003)).collect()).to_string()
}

/// A list operation with GitHub's paging arguments.
fn catalog() -> Catalog {
    let query = |name: &str| json!({"name": name, "in": "query", "schema": {"type": "integer"}});
    let document = json!({
        "openapi": "3.0.3",
        "info": {"title": "bench", "version": "1"},
        "servers": [{"url": "http://127.0.0.1:1"}],
        "paths": {"/issues": {"get": {"operationId": "listIssues", "parameters": [query("per_page"), query("page")], "responses": {}}}}
    });
    Catalog::build(&Sources::from_files(
        [("bench.json".to_string(), document.to_string().into_bytes())],
        None,
    ))
}

fn bench(c: &mut Criterion) {
    let catalog = catalog();
    let tool = catalog.tool("list_issues").expect("the bench's tool");
    let arguments = serde_json::Map::new();
    let mut group = c.benchmark_group("shaping");
    group.sample_size(10);
    for (name, text) in [("issues", issues()), ("numbers", numbers())] {
        group.throughput(Throughput::Bytes(text.len() as u64));
        let body: Value = serde_json::from_str(&text).expect("valid JSON");
        group.bench_function(format!("parse/{name}"), |b| {
            b.iter(|| serde_json::from_str::<Value>(&text).expect("valid JSON"))
        });
        group.bench_function(format!("shape/{name}"), |b| b.iter(|| shape(&body, ROOM)));
        group.bench_function(format!("answer/{name}"), |b| {
            b.iter_batched(
                || BackendResponse {
                    status: 200,
                    headers: serde_json::Map::new(),
                    body: ResponseBody::Json(body.clone()),
                },
                |response| answer(response, ROOM, tool, &arguments),
                criterion::BatchSize::LargeInput,
            )
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
