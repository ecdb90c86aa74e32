//! Incremental rebuilds give exactly the catalog a full build gives.
//!
//! `Catalog::rebuild` reuses every document whose inputs (its bytes, its
//! sidecar, the files it `$ref`s, the build options) did not change. Here a
//! folder of real documents from the vendored corpus and small written ones
//! (two publishing the same tool name, one `$ref`ing a shared fragment in
//! another file, a sidecar, a file that is not an API document) goes
//! through a seeded random sequence of edits: descriptions, operations
//! added and removed, operationIds renamed into and out of collisions, the
//! fragment edited, the sidecar added, removed, broken and fixed, documents
//! broken and fixed, files deleted and added again, new documents. After
//! every edit the incremental catalog (from the previous incremental one)
//! is compared with a full build of the same `Sources`, field by field,
//! diagnostics and search ranking included, and the number of documents
//! reused is checked against what the edit touched.
//!
//! The sequence is reproducible: every assertion names the seed and step;
//! `SEZZLEE_INCREMENTAL_SEED=0x…` replays another sequence
//! (`SEZZLEE_INCREMENTAL_STEPS=N` long).
//!
//! The second test does the same through a folder on disk, as the gateway
//! does: `Sources::scan` from the previous scan, and the parsed documents
//! released after each build, so a rebuild reads documents from disk again
//! (files of every other step dated a minute back, so a rescan skips them
//! by their metadata until they change); a document broken after its parse
//! was released keeps serving its tools.

use crate::corpus;
use serde_json::{Map, Value, json};
use sezzlee_catalog::source::is_sidecar;
use sezzlee_catalog::{BuildOptions, Catalog, Sources, Tool};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::time::{Duration, Instant, SystemTime};

/// Real documents of the vendored corpus in the folder (small and medium
/// ones, so a debug build stays quick).
const CORPUS_DOCUMENTS: [&str; 7] = [
    "nytimes.com_books_api_3.0.0.json",
    "pocketsmith.com_pocketsmith_2.0.json",
    "datumbox.com_datumbox_1.0.json",
    "pdfblocks.com_pdfblocks_1.5.0.json",
    "prometheus.io_alertmanager_0.0.1.yaml",
    "amazonaws.com_sqs_2012-11-05.json",
    "openai.com_openai_1.2.0.json",
];

/// A written document whose operations `$ref` the shared fragment.
const ORDERS: &str = "shop/orders.yaml";
/// The shared fragment (not an API document), `$ref`ed relatively.
const COMMON: &str = "shop/common.yaml";
/// The sidecar of `ORDERS`.
const SIDECAR: &str = "shop/orders.sezzlee.yaml";
/// A second sidecar of `ORDERS` (only the first is used, with a warning).
const SECOND_SIDECAR: &str = "shop/orders.sezzlee.json";
/// A written document publishing `list_orders` too, and `$ref`ing the fragment.
const BILLING: &str = "billing.json";
/// A JSON file that is not an API document (until an edit makes it one).
const NOTES: &str = "notes.json";

/// The route whose inputSchema is the fragment's `Order`.
const CREATE_ORDER: &str = "POST /orders";

/// Queries whose rankings are compared.
const QUERIES: [&str; 7] = [
    "list orders",
    "create an order with a note",
    "invoice",
    "best sellers books list",
    "send message to queue",
    "silence alerts",
    "create completion model",
];

/// The random sequences run by default: (seed, steps).
const SEQUENCES: [(u64, usize); 3] = [
    (0x5e22_1ee0_0c47_a109, 40),
    (0x0bad_cafe_1234_5678, 30),
    (0x1234_5678_9abc_def1, 30),
];

/// Replays one sequence instead of the default ones.
const SEED_ENV: &str = "SEZZLEE_INCREMENTAL_SEED";

/// Its number of steps, when not the first default sequence's.
const STEPS_ENV: &str = "SEZZLEE_INCREMENTAL_STEPS";

/// A small xorshift generator: the same seed, the same edits.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Rng {
        Rng(seed.max(1))
    }

    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }

    fn below(&mut self, n: usize) -> usize {
        assert!(n > 0, "a choice among nothing");
        (self.next() % n as u64) as usize
    }

    fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }

    fn pick<'a, T>(&mut self, items: &'a [T]) -> Option<&'a T> {
        (!items.is_empty()).then(|| &items[self.below(items.len())])
    }
}

/// The folder as the test models it: what each file holds when it parses
/// (kept while it is deleted or broken, to add it again or fix it) and the
/// bytes of each present file.
#[derive(Clone)]
struct Folder {
    values: BTreeMap<String, Value>,
    bytes: BTreeMap<String, Vec<u8>>,
    broken: BTreeSet<String>,
    /// How each file is laid out (a reformat changes bytes, not values).
    styles: BTreeMap<String, u32>,
}

impl Folder {
    /// The corpus documents and the written files.
    fn initial(corpus_documents: &[&str]) -> Folder {
        let mut folder = Folder {
            values: BTreeMap::new(),
            bytes: BTreeMap::new(),
            broken: BTreeSet::new(),
            styles: BTreeMap::new(),
        };
        let corpus = corpus::vendored();
        for name in corpus_documents {
            let bytes = std::fs::read(corpus.require(name)).unwrap();
            let value = sezzlee_catalog::source::parse_bytes(name, &bytes).unwrap();
            folder.values.insert(name.to_string(), value);
            folder.bytes.insert(name.to_string(), bytes);
        }
        folder.write(ORDERS, orders_document());
        folder.write(COMMON, common_fragment(100, "A note for the shop"));
        folder.write(SIDECAR, json!({"namespace": "shop"}));
        folder.write(BILLING, billing_document());
        folder.write(
            NOTES,
            json!({"title": "Release notes", "entries": ["first"]}),
        );
        folder
    }

    fn render(&self, path: &str, value: &Value) -> Vec<u8> {
        let style = self.styles.get(path).copied().unwrap_or(0);
        if path.ends_with(".json") {
            if style.is_multiple_of(2) {
                serde_json::to_vec_pretty(value).unwrap()
            } else {
                serde_json::to_vec(value).unwrap()
            }
        } else {
            let yaml = serde_yaml_ng::to_string(value).unwrap();
            if style == 0 {
                yaml.into_bytes()
            } else {
                format!("# layout {style}\n{yaml}").into_bytes()
            }
        }
    }

    /// Writes `value` to `path` (present, parsing).
    fn write(&mut self, path: &str, value: Value) {
        let bytes = self.render(path, &value);
        self.values.insert(path.to_string(), value);
        self.bytes.insert(path.to_string(), bytes);
        self.broken.remove(path);
    }

    /// Writes the file's value again (fixing it, or adding it back).
    fn restore(&mut self, path: &str) {
        let value = self.values[path].clone();
        self.write(path, value);
    }

    /// Writes bytes at `path` that do not parse (or, for a sidecar, parse
    /// but are not a valid one).
    fn break_file(&mut self, path: &str, rng: &mut Rng, step: usize) {
        let bytes = match rng.below(3) {
            0 => Vec::new(),
            _ if path.ends_with(".json") => format!("{{\"broken\": {step},").into_bytes(),
            _ if is_sidecar(path) && rng.chance(50) => {
                format!("namespace: shop\noutputDepth: {}\n", 100 + step).into_bytes()
            }
            _ => format!("openapi: [3.0\nstep: {step}\n").into_bytes(),
        };
        self.bytes.insert(path.to_string(), bytes);
        self.broken.insert(path.to_string());
    }

    fn present(&self, path: &str) -> bool {
        self.bytes.contains_key(path)
    }

    /// Present files that parse.
    fn healthy(&self) -> Vec<String> {
        self.bytes
            .keys()
            .filter(|path| !self.broken.contains(*path))
            .cloned()
            .collect()
    }

    /// Present, parsing API documents (not sidecars).
    fn documents(&self) -> Vec<String> {
        self.healthy()
            .into_iter()
            .filter(|path| !is_sidecar(path) && is_api_document(&self.values[path]))
            .collect()
    }

    fn sources(&self, previous: Option<&Sources>) -> Sources {
        Sources::from_files(
            self.bytes
                .iter()
                .map(|(path, bytes)| (path.clone(), bytes.clone())),
            previous,
        )
    }

    /// Writes below `dir` the files that differ from `before` (every
    /// file when `None`), and removes those no longer present. Files
    /// written `backdated` say they were modified a minute ago, so the
    /// next scans trust their metadata and do not read them again until
    /// they change; others were modified just now, and are read again.
    fn sync_to(&self, dir: &Path, before: Option<&Folder>, backdated: bool) {
        let empty = BTreeMap::new();
        let before = before.map_or(&empty, |folder| &folder.bytes);
        for path in before.keys() {
            if !self.bytes.contains_key(path) {
                std::fs::remove_file(dir.join(path)).unwrap();
            }
        }
        for (path, bytes) in &self.bytes {
            if before.get(path) != Some(bytes) {
                let file = dir.join(path);
                std::fs::create_dir_all(file.parent().unwrap()).unwrap();
                std::fs::write(&file, bytes).unwrap();
                if backdated {
                    let then = SystemTime::now() - Duration::from_secs(60);
                    let written = std::fs::File::options().write(true).open(&file);
                    written.unwrap().set_modified(then).unwrap();
                }
            }
        }
    }
}

fn is_api_document(value: &Value) -> bool {
    let openapi = value
        .get("openapi")
        .and_then(Value::as_str)
        .is_some_and(|v| v.starts_with("3.0") || v.starts_with("3.1"));
    let swagger = value.get("swagger").and_then(Value::as_str) == Some("2.0");
    (openapi || swagger) && value.get("paths").is_some_and(Value::is_object)
}

fn orders_document() -> Value {
    json!({
        "openapi": "3.0.3",
        "info": {"title": "Shop orders", "version": "1.0"},
        "servers": [{"url": "https://shop.example.com/v1"}],
        "paths": {
            "/orders": {
                "get": {
                    "operationId": "listOrders",
                    "summary": "List orders",
                    "parameters": [
                        {"name": "status", "in": "query",
                         "schema": {"type": "string", "enum": ["open", "closed"]}}
                    ],
                    "responses": {"200": {
                        "description": "The orders",
                        "content": {"application/json": {"schema": {
                            "type": "array",
                            "items": {"$ref": "common.yaml#/components/schemas/Order"}
                        }}}
                    }}
                },
                "post": {
                    "operationId": "createOrder",
                    "summary": "Create an order",
                    "requestBody": {
                        "required": true,
                        "content": {"application/json": {"schema": {
                            "$ref": "common.yaml#/components/schemas/Order"
                        }}}
                    },
                    "responses": {"201": {"description": "Created"}}
                }
            },
            "/orders/{id}": {
                "get": {
                    "operationId": "getOrder",
                    "summary": "Get one order",
                    "parameters": [
                        {"name": "id", "in": "path", "required": true, "schema": {"type": "string"}}
                    ],
                    "responses": {"200": {
                        "description": "The order",
                        "content": {"application/json": {"schema": {
                            "$ref": "#/components/schemas/Placed"
                        }}}
                    }}
                }
            }
        },
        "components": {"schemas": {"Placed": {
            "type": "object",
            "properties": {
                "id": {"type": "string"},
                "order": {"$ref": "common.yaml#/components/schemas/Order"}
            }
        }}}
    })
}

fn common_fragment(max_note: u64, note: &str) -> Value {
    json!({"components": {"schemas": {
        "Order": {
            "type": "object",
            "required": ["item"],
            "properties": {
                "item": {"type": "string", "description": "What is ordered"},
                "note": {"type": "string", "maxLength": max_note, "description": note},
                "total": {"$ref": "#/components/schemas/Money"}
            }
        },
        "Money": {
            "type": "object",
            "properties": {
                "amount": {"type": "integer"},
                "currency": {"type": "string", "enum": ["EUR", "USD"]}
            }
        }
    }}})
}

fn billing_document() -> Value {
    json!({
        "openapi": "3.1.0",
        "info": {"title": "Billing", "version": "2.0"},
        "servers": [{"url": "https://billing.example.com"}],
        "paths": {
            "/invoices": {"get": {
                "operationId": "listInvoices",
                "summary": "List invoices",
                "responses": {"200": {"description": "Invoices", "content": {"application/json": {
                    "schema": {"type": "array", "items": {"$ref": "#/components/schemas/Invoice"}}
                }}}}
            }},
            "/invoices/{id}": {"get": {
                "operationId": "getInvoice",
                "parameters": [{"name": "id", "in": "path", "required": true, "schema": {"type": "string"}}],
                "responses": {"200": {"description": "One invoice", "content": {"application/json": {
                    "schema": {"$ref": "#/components/schemas/Invoice"}
                }}}}
            }},
            "/billing/orders": {"get": {
                "operationId": "listOrders",
                "summary": "List the orders billed",
                "responses": {"200": {"description": "Orders"}}
            }}
        },
        "components": {"schemas": {"Invoice": {
            "type": "object",
            "properties": {
                "id": {"type": "string"},
                "due": {"$ref": "shop/common.yaml#/components/schemas/Money"}
            }
        }}}
    })
}

/// A new document: OpenAPI 3.0 or Swagger 2.0, with one to three operations.
fn new_document(rng: &mut Rng, number: usize, names: &[String]) -> Value {
    let mut paths = Map::new();
    for i in 0..1 + rng.below(3) {
        let name = operation_name(rng, names, &format!("added{number}_{i}"));
        paths.insert(
            format!("/added/{number}/{i}"),
            json!({"get": {
                "operationId": name,
                "summary": format!("Added operation {i} of document {number}"),
                "responses": {"200": {"description": "ok"}}
            }}),
        );
    }
    if rng.chance(30) {
        json!({"swagger": "2.0", "info": {"title": "Added", "version": "1"},
               "host": "added.example.com", "paths": paths})
    } else {
        json!({"openapi": "3.0.0", "info": {"title": "Added", "version": "1"}, "paths": paths})
    }
}

/// An operationId that collides with a published tool name (60%), else a
/// name of its own.
fn operation_name(rng: &mut Rng, names: &[String], own: &str) -> String {
    match rng.pick(names) {
        Some(name) if rng.chance(60) => name.clone(),
        _ => own.to_string(),
    }
}

const METHODS: [&str; 8] = [
    "get", "put", "post", "delete", "options", "head", "patch", "trace",
];

/// The operations of a document, as (path, method).
fn operations(document: &Value) -> Vec<(String, String)> {
    let Some(paths) = document.get("paths").and_then(Value::as_object) else {
        return Vec::new();
    };
    paths
        .iter()
        .flat_map(|(path, item)| {
            METHODS
                .iter()
                .filter(|method| item.get(**method).is_some_and(Value::is_object))
                .map(|method| (path.clone(), method.to_string()))
        })
        .collect()
}

fn operation_mut<'v>(
    document: &'v mut Value,
    path: &str,
    method: &str,
) -> &'v mut Map<String, Value> {
    document["paths"][path][method].as_object_mut().unwrap()
}

/// What an edit did.
struct Change {
    what: String,
    /// The files it wrote, added, broke or deleted.
    touched: BTreeSet<String>,
    kind: Kind,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Kind {
    Describe,
    AddOperation,
    RemoveOperation,
    Rename,
    Fragment,
    Sidecar,
    Break,
    Fix,
    Delete,
    AddBack,
    AddDocument,
    Notes,
    Reformat,
    Nothing,
    Options,
}

/// Edit kinds and their weights.
const KINDS: [(Kind, usize); 15] = [
    (Kind::Describe, 12),
    (Kind::AddOperation, 7),
    (Kind::RemoveOperation, 7),
    (Kind::Rename, 12),
    (Kind::Fragment, 8),
    (Kind::Sidecar, 14),
    (Kind::Break, 8),
    (Kind::Fix, 9),
    (Kind::Delete, 4),
    (Kind::AddBack, 5),
    (Kind::AddDocument, 4),
    (Kind::Notes, 4),
    (Kind::Reformat, 3),
    (Kind::Nothing, 1),
    (Kind::Options, 2),
];

/// The options a sequence switches between.
fn options_choices() -> [BuildOptions; 2] {
    [
        BuildOptions::default(),
        BuildOptions {
            response_budget: 8_000,
            output_depth: 2,
        },
    ]
}

/// A kind drawn by weight.
fn random_kind(rng: &mut Rng) -> Kind {
    let total: usize = KINDS.iter().map(|(_, weight)| weight).sum();
    let mut draw = rng.below(total);
    KINDS
        .iter()
        .find(|(_, weight)| {
            if draw < *weight {
                true
            } else {
                draw -= weight;
                false
            }
        })
        .unwrap()
        .0
}

/// Every kind once, in a seeded order: the first steps of a sequence.
fn every_kind(rng: &mut Rng) -> Vec<Kind> {
    let mut kinds: Vec<Kind> = KINDS.iter().map(|(kind, _)| *kind).collect();
    for i in (1..kinds.len()).rev() {
        kinds.swap(i, rng.below(i + 1));
    }
    kinds
}

/// One edit of `kind` to `folder` (or to `options`), or `None` when that
/// kind does not apply now.
fn random_edit(
    kind: Kind,
    folder: &mut Folder,
    options: &mut BuildOptions,
    rng: &mut Rng,
    step: usize,
    names: &[String],
) -> Option<Change> {
    let change = |what: String, touched: &[&str]| Change {
        what,
        touched: touched.iter().map(|s| s.to_string()).collect(),
        kind,
    };
    // Written documents are drawn as often as the corpus's.
    let document = |folder: &Folder, rng: &mut Rng| {
        let documents = folder.documents();
        let written: Vec<String> = documents
            .iter()
            .filter(|path| !CORPUS_DOCUMENTS.contains(&path.as_str()))
            .cloned()
            .collect();
        if rng.chance(50) && !written.is_empty() {
            rng.pick(&written).cloned()
        } else {
            rng.pick(&documents).cloned()
        }
    };
    match kind {
        Kind::Describe => {
            let path = document(folder, rng)?;
            let mut value = folder.values[&path].clone();
            let (route, method) = rng.pick(&operations(&value))?.clone();
            let text = format!("Edited at step {step} ({:x})", rng.next() % 0xffff);
            operation_mut(&mut value, &route, &method).insert("description".into(), json!(text));
            folder.write(&path, value);
            Some(change(
                format!("describe {method} {route} of {path}"),
                &[&path],
            ))
        }
        Kind::AddOperation => {
            let path = document(folder, rng)?;
            let mut value = folder.values[&path].clone();
            let route = format!("/sezzlee-added/{step}");
            let name = operation_name(rng, names, &format!("added_at_{step}"));
            value["paths"][&route] = json!({"get": {
                "operationId": name,
                "summary": format!("An operation added at step {step}"),
                "parameters": [{"name": "page", "in": "query", "required": false, "type": "integer", "schema": {"type": "integer"}}],
                "responses": {"200": {"description": "ok"}}
            }});
            folder.write(&path, value);
            Some(change(
                format!("add GET {route} ({name}) to {path}"),
                &[&path],
            ))
        }
        Kind::RemoveOperation => {
            let path = document(folder, rng)?;
            let mut value = folder.values[&path].clone();
            let (route, method) = rng.pick(&operations(&value))?.clone();
            let item = value["paths"][&route].as_object_mut().unwrap();
            item.remove(&method);
            if !item.keys().any(|key| METHODS.contains(&key.as_str())) {
                value["paths"].as_object_mut().unwrap().remove(&route);
            }
            folder.write(&path, value);
            Some(change(
                format!("remove {method} {route} from {path}"),
                &[&path],
            ))
        }
        Kind::Rename => {
            let path = document(folder, rng)?;
            let mut value = folder.values[&path].clone();
            let (route, method) = rng.pick(&operations(&value))?.clone();
            let name = operation_name(rng, names, &format!("renamed_at_{step}"));
            operation_mut(&mut value, &route, &method).insert("operationId".into(), json!(name));
            folder.write(&path, value);
            Some(change(
                format!("rename {method} {route} of {path} to {name}"),
                &[&path],
            ))
        }
        Kind::Fragment => {
            if folder.broken.contains(COMMON) || !folder.present(COMMON) {
                return None;
            }
            let max = 10 + step as u64 * 7 + rng.below(5) as u64;
            folder.write(
                COMMON,
                common_fragment(max, &format!("A note, step {step}")),
            );
            Some(change(
                format!("note maxLength {max} in {COMMON}"),
                &[COMMON],
            ))
        }
        Kind::Sidecar => sidecar_edit(folder, rng, step).map(|(what, path)| change(what, &[&path])),
        Kind::Break => {
            let path = rng
                .pick(&folder.bytes.keys().cloned().collect::<Vec<_>>())?
                .clone();
            let again = if folder.broken.contains(&path) {
                " again"
            } else {
                ""
            };
            folder.break_file(&path, rng, step);
            Some(change(format!("break {path}{again}"), &[&path]))
        }
        Kind::Fix => {
            let path = rng
                .pick(&folder.broken.iter().cloned().collect::<Vec<_>>())?
                .clone();
            let mut value = folder.values[&path].clone();
            let mut what = format!("fix {path}");
            if is_api_document(&value)
                && rng.chance(50)
                && let Some((route, method)) = rng.pick(&operations(&value)).cloned()
            {
                let text = format!("Fixed at step {step}");
                operation_mut(&mut value, &route, &method).insert("summary".into(), json!(text));
                what.push_str(&format!(", with {method} {route} summarised"));
            }
            folder.write(&path, value);
            Some(change(what, &[&path]))
        }
        Kind::Delete => {
            let path = rng
                .pick(&folder.bytes.keys().cloned().collect::<Vec<_>>())?
                .clone();
            folder.bytes.remove(&path);
            folder.broken.remove(&path);
            Some(change(format!("delete {path}"), &[&path]))
        }
        Kind::AddBack => {
            let gone: Vec<String> = folder
                .values
                .keys()
                .filter(|path| !folder.present(path))
                .cloned()
                .collect();
            let path = rng.pick(&gone)?.clone();
            if rng.chance(25) {
                // Added broken: no last good version to serve.
                folder.break_file(&path, rng, step);
                return Some(change(format!("add {path} back, broken"), &[&path]));
            }
            folder.restore(&path);
            Some(change(format!("add {path} back"), &[&path]))
        }
        Kind::AddDocument => {
            let number = folder
                .values
                .keys()
                .filter(|p| p.starts_with("extra/"))
                .count()
                + 1;
            let ext = if rng.chance(50) { "json" } else { "yaml" };
            let path = format!("extra/added_{number}.{ext}");
            let value = new_document(rng, number, names);
            folder.write(&path, value);
            Some(change(format!("add the document {path}"), &[&path]))
        }
        Kind::Notes => {
            let value = match rng.below(5) {
                0 => json!({"title": "Release notes", "entries": [format!("step {step}")]}),
                1 => json!({"openapi": "9.0", "info": {"title": "not yet"}}),
                2 => json!({"swagger": "1.2"}),
                3 => json!([1, 2, step]),
                _ => json!({
                    "openapi": "3.0.0",
                    "info": {"title": "Notes", "version": "1"},
                    "paths": {"/notes": {"get": {
                        "operationId": "listOrders",
                        "summary": format!("List notes (step {step})"),
                        "responses": {"200": {"description": "ok"}}
                    }}}
                }),
            };
            folder.write(NOTES, value);
            Some(change(format!("rewrite {NOTES}"), &[NOTES]))
        }
        Kind::Reformat => {
            let path = rng.pick(&folder.healthy())?.clone();
            *folder.styles.entry(path.clone()).or_default() += 1;
            folder.restore(&path);
            Some(change(format!("reformat {path}"), &[&path]))
        }
        Kind::Nothing => Some(change("nothing".to_string(), &[])),
        Kind::Options => {
            let [default, small] = options_choices();
            *options = if *options == default { small } else { default };
            Some(change(format!("options {options:?}"), &[]))
        }
    }
}

/// An edit of the sidecar (or of a second one): added, removed, changed.
fn sidecar_edit(folder: &mut Folder, rng: &mut Rng, step: usize) -> Option<(String, String)> {
    if rng.chance(15) {
        if folder.present(SECOND_SIDECAR) {
            folder.bytes.remove(SECOND_SIDECAR);
            folder.broken.remove(SECOND_SIDECAR);
            return Some((format!("remove {SECOND_SIDECAR}"), SECOND_SIDECAR.into()));
        }
        folder.write(SECOND_SIDECAR, json!({"namespace": "second"}));
        return Some((format!("add {SECOND_SIDECAR}"), SECOND_SIDECAR.into()));
    }
    if !folder.present(SIDECAR) {
        folder.write(SIDECAR, json!({"namespace": "shop", "outputDepth": 1}));
        return Some((format!("add {SIDECAR}"), SIDECAR.into()));
    }
    if folder.broken.contains(SIDECAR) {
        return None;
    }
    if rng.chance(15) {
        folder.bytes.remove(SIDECAR);
        return Some((format!("remove {SIDECAR}"), SIDECAR.into()));
    }
    let mut value = folder.values[SIDECAR].clone();
    let sidecar = value.as_object_mut().unwrap();
    let tools = sidecar.entry("tools").or_insert_with(|| json!({}));
    let what = match rng.below(7) {
        0 => {
            let namespace = *rng
                .pick(&["shop", "billing", "orders", "second", ""])
                .unwrap();
            if namespace.is_empty() {
                sidecar.remove("namespace");
            } else {
                sidecar.insert("namespace".into(), json!(namespace));
            }
            format!("namespace {namespace:?}")
        }
        1 => {
            let hidden = tools["GET /orders"]["hidden"] != json!(true);
            tools["GET /orders"]["hidden"] = json!(hidden);
            format!("GET /orders hidden {hidden}")
        }
        2 => {
            tools["GET /orders"]["description"] = json!(format!("Orders of the shop, step {step}"));
            "GET /orders description".to_string()
        }
        3 => {
            let depth = rng.below(4);
            if depth == 3 {
                sidecar.remove("outputDepth");
            } else {
                sidecar.insert("outputDepth".into(), json!(depth));
            }
            format!("outputDepth {depth}")
        }
        4 => {
            let name = *rng
                .pick(&[
                    "",
                    "list_invoices",
                    "create_order",
                    "make_order",
                    "list_orders",
                ])
                .unwrap();
            if name.is_empty() {
                if let Some(tool) = tools.get_mut("POST /orders").and_then(Value::as_object_mut) {
                    tool.remove("name");
                }
            } else {
                tools["POST /orders"]["name"] = json!(name);
            }
            format!("POST /orders name {name:?}")
        }
        5 => {
            if tools["GET /orders"]["variants"].is_array() {
                tools["GET /orders"]
                    .as_object_mut()
                    .unwrap()
                    .remove("variants");
                "GET /orders without variants".to_string()
            } else {
                tools["GET /orders"]["variants"] = json!([{
                    "name": "list_open_orders",
                    "description": "Open orders only",
                    "fixed": {"status": "open"},
                    "tags": ["curated"]
                }]);
                "GET /orders variant list_open_orders".to_string()
            }
        }
        _ => {
            let depth = rng.below(3);
            tools["GET /orders/{id}"]["outputDepth"] = json!(depth);
            tools["GET /orders/{id}"]["searchTerms"] = json!([format!("term{step}")]);
            format!("GET /orders/{{id}} outputDepth {depth}")
        }
    };
    folder.write(SIDECAR, value);
    Some((format!("sidecar: {what}"), SIDECAR.into()))
}

/// The written files an edit of `path` rebuilds besides itself.
fn dependents(path: &str) -> &'static [&'static str] {
    match path {
        COMMON => &[ORDERS, BILLING],
        SIDECAR | SECOND_SIDECAR => &[ORDERS],
        _ => &[],
    }
}

/// The JSON/YAML files of a build (API documents and the others): one
/// unit each.
fn units(sources: &Sources) -> BTreeSet<String> {
    sources
        .json_paths()
        .filter(|path| !is_sidecar(path))
        .map(|path| path.to_string())
        .collect()
}

/// Asserts two catalogs are the same, everything an agent or a caller sees.
fn assert_same(incremental: &Catalog, full: &Catalog, context: &str) {
    let names = |catalog: &Catalog| -> Vec<String> {
        catalog.tools().iter().map(|t| t.name.clone()).collect()
    };
    assert_eq!(
        names(incremental),
        names(full),
        "{context}: tool names (incremental, then full)"
    );
    for (a, b) in incremental.tools().iter().zip(full.tools()) {
        let tool = format!("{context}: tool {}", a.name);
        assert_eq!(a.definition(), b.definition(), "{tool}: definition()");
        assert_eq!(a.version, b.version, "{tool}: version");
        assert_eq!(a.route, b.route, "{tool}: route");
        assert_eq!(a.document, b.document, "{tool}: document");
        assert_eq!(a.compaction, b.compaction, "{tool}: compaction");
        assert_eq!(
            a.definition_size, b.definition_size,
            "{tool}: definition_size"
        );
        assert_eq!(a.annotations, b.annotations, "{tool}: annotations");
        assert_eq!(a.fixed, b.fixed, "{tool}: fixed");
        assert_eq!(a.target, b.target, "{tool}: operation");
        assert_eq!(
            a.input_schema.to_value(),
            b.input_schema.to_value(),
            "{tool}: full inputSchema"
        );
        assert_eq!(a.argument_names, b.argument_names, "{tool}: argument names");
        assert_eq!(a.base64_members, b.base64_members, "{tool}: base64 members");
        assert_eq!(a.tags, b.tags, "{tool}: tags");
        assert_eq!(a.search_terms, b.search_terms, "{tool}: search terms");
        assert_eq!(a.revision, b.revision, "{tool}: revision");
        assert_eq!(a.policy, b.policy, "{tool}: policy");
    }
    assert_eq!(
        incremental.fingerprint(),
        full.fingerprint(),
        "{context}: fingerprint"
    );
    assert_eq!(
        incremental.documents, full.documents,
        "{context}: document summaries"
    );
    assert_eq!(
        diagnostics(incremental),
        diagnostics(full),
        "{context}: diagnostics (incremental, then full)"
    );
    for query in QUERIES {
        assert_eq!(
            incremental.search_index().top(query, 20, |_| true),
            full.search_index().top(query, 20, |_| true),
            "{context}: ranking of {query:?}"
        );
    }
}

fn diagnostics(catalog: &Catalog) -> Vec<String> {
    catalog
        .diagnostics
        .iter()
        .map(ToString::to_string)
        .collect()
}

/// The tool of `document` at `route`.
fn tool_at<'c>(catalog: &'c Catalog, document: &str, route: &str) -> Option<&'c Tool> {
    catalog
        .tools()
        .iter()
        .find(|t| &*t.document == document && t.route == route && t.fixed.is_empty())
}

/// The tools of one document, by name.
fn tools_of(catalog: &Catalog, document: &str) -> BTreeMap<String, Value> {
    catalog
        .tools()
        .iter()
        .filter(|t| &*t.document == document)
        .map(|t| (t.name.clone(), t.definition()))
        .collect()
}

/// What a sequence checked, beyond equality.
#[derive(Default, Debug)]
struct Seen {
    steps: usize,
    /// Steps on which reuse was bounded below (one file touched, several units).
    reuse_checked: usize,
    reused: usize,
    /// Fragment edits seen to change the tool built from it.
    fragment_rebuilds: usize,
    /// Rebuilds from a catalog older than the previous one.
    from_older: usize,
    kinds: BTreeMap<String, usize>,
}

fn run_sequence(seed: u64, steps: usize) -> Seen {
    let mut rng = Rng::new(seed);
    let mut seen = Seen::default();
    let mut folder = Folder::initial(&CORPUS_DOCUMENTS);
    let mut options = BuildOptions::default();
    let mut sources = folder.sources(None);
    let mut catalog = Catalog::build_with(&sources, &options);
    let again = Catalog::rebuild(&sources, &options, &catalog);
    let context = format!("seed {seed:#x}, step 0 (the first build)");
    assert_same(&again, &catalog, &context);
    assert_eq!(
        again.documents_reused(&catalog),
        units(&sources).len(),
        "{context}: a rebuild of the same sources reuses every unit"
    );
    assert!(
        catalog.tools().len() > 100,
        "{context}: the folder has many tools"
    );
    let mut older: Vec<(Catalog, BuildOptions)> = Vec::new();
    let mut first = every_kind(&mut rng).into_iter();
    for step in 1..=steps {
        let names: Vec<String> = catalog.tools().iter().map(|t| t.name.clone()).collect();
        let mut kind = first.next().unwrap_or_else(|| random_kind(&mut rng));
        let change = loop {
            let edit = random_edit(kind, &mut folder, &mut options, &mut rng, step, &names);
            if let Some(change) = edit {
                break change;
            }
            kind = random_kind(&mut rng);
        };
        *seen.kinds.entry(format!("{:?}", change.kind)).or_default() += 1;
        let context = format!("seed {seed:#x}, step {step} ({})", change.what);
        let next = folder.sources(Some(&sources));
        let incremental = Catalog::rebuild(&next, &options, &catalog);
        let full = Catalog::build_with(&next, &options);
        assert_same(&incremental, &full, &context);

        // Reuse: every unit the edit could not have changed is taken whole.
        let reused = incremental.documents_reused(&catalog);
        let now = units(&next);
        if change.kind != Kind::Options && now.len() > 1 {
            let affected: BTreeSet<&str> = change
                .touched
                .iter()
                .flat_map(|path| {
                    std::iter::once(path.as_str()).chain(dependents(path).iter().copied())
                })
                .collect();
            let untouched = now
                .iter()
                .filter(|p| !affected.contains(p.as_str()))
                .count();
            assert!(
                reused >= untouched && reused > 0,
                "{context}: {reused} units reused of {}, but {untouched} had no input touched",
                now.len()
            );
            seen.reuse_checked += 1;
            seen.reused += reused;
        }
        if matches!(change.kind, Kind::Nothing | Kind::Break | Kind::Reformat) {
            // A broken file serves its last good version, and a file laid
            // out anew holds the same values.
            assert_eq!(
                incremental.fingerprint(),
                catalog.fingerprint(),
                "{context}: nothing an agent sees changed"
            );
        }
        if matches!(change.kind, Kind::Nothing) {
            assert_eq!(reused, now.len(), "{context}: every unit reused");
        }

        // The fragment's edit reaches the document that `$ref`s it.
        if change.kind == Kind::Fragment
            && let (Some(before), Some(after)) = (
                tool_at(&catalog, ORDERS, CREATE_ORDER),
                tool_at(&incremental, ORDERS, CREATE_ORDER),
            )
        {
            assert_ne!(
                before.definition()["inputSchema"],
                after.definition()["inputSchema"],
                "{context}: {CREATE_ORDER} of {ORDERS} is built again from the edited fragment"
            );
            assert_ne!(before.version, after.version, "{context}: a new version");
            seen.fragment_rebuilds += 1;
        }

        // Any earlier catalog may be the previous one.
        if !older.is_empty() && rng.chance(20) {
            let (old, old_options) = &older[rng.below(older.len())];
            let from_old = Catalog::rebuild(&next, &options, old);
            assert_same(
                &from_old,
                &full,
                &format!("{context}, rebuilt from an older catalog ({old_options:?})"),
            );
            seen.from_older += 1;
        }

        older.push((std::mem::replace(&mut catalog, incremental), options));
        sources = next;
        seen.steps += 1;
    }
    seen
}

fn seeds() -> Vec<(u64, usize)> {
    match std::env::var(SEED_ENV) {
        Ok(text) => {
            let text = text.trim();
            let seed = match text.strip_prefix("0x") {
                Some(hex) => u64::from_str_radix(&hex.replace('_', ""), 16),
                None => text.parse(),
            }
            .unwrap_or_else(|err| panic!("{SEED_ENV}={text}: {err}"));
            let steps = std::env::var(STEPS_ENV).map_or(SEQUENCES[0].1, |steps| {
                steps
                    .trim()
                    .parse()
                    .unwrap_or_else(|err| panic!("{STEPS_ENV}={steps}: {err}"))
            });
            vec![(seed, steps)]
        }
        Err(_) => SEQUENCES.to_vec(),
    }
}

#[test]
#[ignore = "slow campaign: `cargo test -- --include-ignored` runs it, as CI does"]
fn random_edits_rebuild_as_a_full_build_would() {
    for (seed, steps) in seeds() {
        let started = Instant::now();
        eprintln!("incremental: seed {seed:#x}, {steps} steps ({SEED_ENV} replays another)");
        let seen = run_sequence(seed, steps);
        eprintln!(
            "incremental: seed {seed:#x}: {seen:?} in {:.1?}",
            started.elapsed()
        );
        assert_eq!(seen.steps, steps, "seed {seed:#x}");
        assert!(
            seen.reuse_checked > steps / 2,
            "seed {seed:#x}: reuse checked on {} steps only",
            seen.reuse_checked
        );
        if std::env::var_os(SEED_ENV).is_none() {
            assert!(
                seen.fragment_rebuilds > 0,
                "seed {seed:#x}: no edit of the fragment reached {ORDERS}: {seen:?}"
            );
        }
    }
}

/// The documents of the folder test.
const DISK_CORPUS: [&str; 3] = [
    "nytimes.com_books_api_3.0.0.json",
    "datumbox.com_datumbox_1.0.json",
    "pdfblocks.com_pdfblocks_1.5.0.json",
];

/// A folder on disk, rescanned as the gateway rescans it.
struct Disk {
    dir: tempfile::TempDir,
    folder: Folder,
    sources: Sources,
    catalog: Catalog,
    options: BuildOptions,
    step: usize,
}

impl Disk {
    fn new(folder: Folder) -> Disk {
        let dir = tempfile::tempdir().unwrap();
        folder.sync_to(dir.path(), None, true);
        let options = BuildOptions::default();
        let mut sources = Sources::scan(dir.path(), None).unwrap();
        let catalog = Catalog::build_with(&sources, &options);
        sources.release_parsed();
        Disk {
            dir,
            folder,
            sources,
            catalog,
            options,
            step: 0,
        }
    }

    /// Applies `edit` to the folder on disk, rescans, rebuilds from the
    /// previous catalog and releases the parsed documents. Returns the
    /// previous catalog, the context and the number of units reused.
    fn apply(&mut self, what: &str, edit: impl FnOnce(&mut Folder)) -> (Catalog, String, usize) {
        self.apply_racing(what, edit, |_| {})
    }

    /// [`Disk::apply`], with `racing` applied to the folder on disk after
    /// the scan and before the build, as an editor saving meanwhile.
    fn apply_racing(
        &mut self,
        what: &str,
        edit: impl FnOnce(&mut Folder),
        racing: impl FnOnce(&mut Folder),
    ) -> (Catalog, String, usize) {
        self.step += 1;
        let context = format!("disk step {} ({what})", self.step);
        let before = self.folder.clone();
        edit(&mut self.folder);
        // Every other step's files look old: both ways a rescan decides
        // to read a file again (its metadata, or a recent modification).
        let backdated = self.step.is_multiple_of(2);
        self.folder
            .sync_to(self.dir.path(), Some(&before), backdated);
        let mut next = Sources::scan(self.dir.path(), Some(&self.sources)).unwrap();
        let scanned = self.folder.clone();
        racing(&mut self.folder);
        self.folder.sync_to(self.dir.path(), Some(&scanned), false);
        let catalog = Catalog::rebuild(&next, &self.options, &self.catalog);
        next.release_parsed();
        let reused = catalog.documents_reused(&self.catalog);
        self.sources = next;
        let previous = std::mem::replace(&mut self.catalog, catalog);
        (previous, context, reused)
    }

    /// A full build from a fresh scan of the folder.
    fn fresh(&self) -> Catalog {
        Catalog::build_with(
            &Sources::scan(self.dir.path(), None).unwrap(),
            &self.options,
        )
    }

    fn units(&self) -> usize {
        units(&self.sources).len()
    }

    /// Asserts the rebuilt catalog is a fresh full build's.
    fn assert_fresh(&self, context: &str) {
        assert_same(&self.catalog, &self.fresh(), context);
    }
}

fn with_description(mut document: Value, route: &str, method: &str, text: &str) -> Value {
    operation_mut(&mut document, route, method).insert("description".into(), json!(text));
    document
}

#[test]
fn rescans_of_a_folder_rebuild_as_a_fresh_scan_would() {
    let started = Instant::now();
    let mut disk = Disk::new(Folder::initial(&DISK_CORPUS));
    let all = disk.units();
    assert!(all >= 6, "units: {all}");
    disk.assert_fresh("disk step 0 (the first scan)");

    let (_, context, reused) = disk.apply("nothing", |_| {});
    disk.assert_fresh(&context);
    assert_eq!(reused, all, "{context}: every unit reused");

    let nytimes = DISK_CORPUS[0];
    let (previous, context, reused) = disk.apply("describe an operation of nytimes", |folder| {
        let value = folder.values[nytimes].clone();
        let (route, method) = operations(&value)[0].clone();
        folder.write(
            nytimes,
            with_description(value, &route, &method, "Edited on disk"),
        );
    });
    disk.assert_fresh(&context);
    assert_eq!(reused, all - 1, "{context}: only nytimes built again");
    assert_ne!(
        tools_of(&previous, nytimes),
        tools_of(&disk.catalog, nytimes),
        "{context}"
    );

    let (previous, context, reused) = disk.apply("edit the fragment", |folder| {
        folder.write(COMMON, common_fragment(42, "A shorter note"));
    });
    disk.assert_fresh(&context);
    assert_eq!(
        reused,
        all - 3,
        "{context}: the fragment, orders and billing built again"
    );
    let before = tool_at(&previous, ORDERS, CREATE_ORDER).expect("create order");
    let after = tool_at(&disk.catalog, ORDERS, CREATE_ORDER).expect("create order");
    assert_ne!(
        before.definition()["inputSchema"],
        after.definition()["inputSchema"],
        "{context}: the tool built from the fragment changed"
    );

    // A document the build must read again changes on disk after the
    // scan: the build reads what the scan read (every file's bytes are
    // kept), so orders is built from the scanned version with the edited
    // fragment, and the next scan picks up the later save.
    let (previous, context, reused) = disk.apply_racing(
        "edit the fragment; orders saved between the scan and the build",
        |folder| folder.write(COMMON, common_fragment(7, "Racing")),
        |folder| {
            let orders = folder.values[ORDERS].clone();
            let orders = with_description(orders, "/orders", "get", "Saved meanwhile");
            folder.write(ORDERS, orders);
        },
    );
    let create = tool_at(&disk.catalog, ORDERS, CREATE_ORDER).expect("create order");
    assert_eq!(
        create.definition()["inputSchema"]["properties"]["note"]["maxLength"],
        7,
        "{context}: orders built with the edited fragment"
    );
    let list = tool_at(&disk.catalog, ORDERS, "GET /orders").expect("list orders");
    assert!(
        !list.description.contains("Saved meanwhile"),
        "{context}: built from what the scan read: {}",
        list.description
    );
    assert_ne!(
        tools_of(&disk.catalog, ORDERS),
        tools_of(&previous, ORDERS),
        "{context}"
    );
    let read_again = |catalog: &Catalog| {
        catalog
            .diagnostics
            .iter()
            .any(|d| d.message.contains("could not be read again"))
    };
    assert!(
        !read_again(&disk.catalog),
        "{context}: {:#?}",
        diagnostics(&disk.catalog)
    );
    assert_eq!(
        reused,
        all - 3,
        "{context}: the fragment, orders and billing built again"
    );
    let (_, context, _) = disk.apply("nothing; the scan reads orders again", |_| {});
    disk.assert_fresh(&context);
    let list = tool_at(&disk.catalog, ORDERS, "GET /orders").expect("list orders");
    assert!(
        list.description.contains("Saved meanwhile"),
        "{context}: {}",
        list.description
    );

    // Broken after its parse was released: its last good version is kept
    // (compressed), and its tools keep serving.
    let orders_tools = tools_of(&disk.catalog, ORDERS);
    assert!(orders_tools.len() >= 3, "{orders_tools:?}");
    let (previous, context, reused) = disk.apply("break orders", |folder| {
        folder
            .bytes
            .insert(ORDERS.into(), b"openapi: [3.0\n".to_vec());
        folder.broken.insert(ORDERS.into());
    });
    assert_eq!(
        reused, all,
        "{context}: the broken file's last good version serves"
    );
    assert_eq!(
        tools_of(&disk.catalog, ORDERS),
        orders_tools,
        "{context}: orders still served"
    );
    assert_eq!(
        disk.catalog.fingerprint(),
        previous.fingerprint(),
        "{context}: nothing an agent sees changed"
    );
    let parse_error = |catalog: &Catalog| {
        catalog.diagnostics.iter().any(|d| {
            d.file == ORDERS && d.code == "parse_error" && d.message.contains("invalid YAML")
        })
    };
    assert!(
        parse_error(&disk.catalog),
        "{context}: {:#?}",
        diagnostics(&disk.catalog)
    );
    let fresh = disk.fresh();
    assert!(
        tools_of(&fresh, ORDERS).is_empty(),
        "{context}: a fresh scan knows no last good version"
    );
    assert!(parse_error(&fresh), "{context}");

    // Its sidecar edited while it is broken: the document is built again
    // from its last good content with the new sidecar.
    let (previous, context, _) = disk.apply("edit the sidecar of the broken orders", |folder| {
        folder.write(
            SIDECAR,
            json!({"namespace": "shop", "tools": {"GET /orders": {"description": "Edited while broken"}}}),
        );
    });
    let list = tool_at(&disk.catalog, ORDERS, "GET /orders").expect("list orders");
    assert!(
        list.description.contains("Edited while broken"),
        "{context}: {}",
        list.description
    );
    assert_eq!(
        disk.catalog.tools().len(),
        previous.tools().len(),
        "{context}"
    );
    assert!(
        parse_error(&disk.catalog),
        "{context}: {:#?}",
        diagnostics(&disk.catalog)
    );
    assert!(
        !read_again(&disk.catalog),
        "{context}: {:#?}",
        diagnostics(&disk.catalog)
    );
    let edited_while_broken = tools_of(&disk.catalog, ORDERS);
    let (_, context, _) = disk.apply("nothing, orders still broken", |_| {});
    assert_eq!(
        tools_of(&disk.catalog, ORDERS),
        edited_while_broken,
        "{context}: orders still served"
    );

    // Fixed: the sidecar edited meanwhile applies.
    let (_, context, _) = disk.apply("fix orders", |folder| {
        folder.restore(ORDERS);
    });
    disk.assert_fresh(&context);
    let list = tool_at(&disk.catalog, ORDERS, "GET /orders").expect("list orders");
    assert!(
        list.description.contains("Edited while broken"),
        "{context}: {}",
        list.description
    );

    // A sidecar that stops being valid keeps its last good version.
    let (previous, context, reused) = disk.apply("invalid sidecar", |folder| {
        folder
            .bytes
            .insert(SIDECAR.into(), b"namespace: shop\ncolour: red\n".to_vec());
        folder.broken.insert(SIDECAR.into());
    });
    assert_eq!(reused, all, "{context}");
    assert_eq!(
        disk.catalog.fingerprint(),
        previous.fingerprint(),
        "{context}"
    );
    assert!(
        disk.catalog
            .diagnostics
            .iter()
            .any(|d| d.file == SIDECAR && d.code == "invalid_configuration"),
        "{context}: {:#?}",
        diagnostics(&disk.catalog)
    );
    let (_, context, _) = disk.apply("fix the sidecar, with a namespace", |folder| {
        folder.write(SIDECAR, json!({"namespace": "store", "outputDepth": 0}));
    });
    disk.assert_fresh(&context);

    // Files deleted, added back, added; names colliding and no longer.
    let datumbox = DISK_CORPUS[1];
    let (_, context, reused) = disk.apply("delete datumbox", |folder| {
        folder.bytes.remove(datumbox);
    });
    disk.assert_fresh(&context);
    assert_eq!(reused, all - 1, "{context}");
    let (_, context, reused) = disk.apply("add datumbox back", |folder| folder.restore(datumbox));
    disk.assert_fresh(&context);
    assert_eq!(reused, all - 1, "{context}");
    let (_, context, reused) = disk.apply("add a document colliding with orders", |folder| {
        let mut rng = Rng::new(7);
        let mut document = new_document(&mut rng, 1, &[]);
        let first = operations(&document)[0].clone();
        operation_mut(&mut document, &first.0, &first.1)
            .insert("operationId".into(), json!("getOrder"));
        folder.write("extra/added.yaml", document);
    });
    disk.assert_fresh(&context);
    assert_eq!(reused, all, "{context}");
    assert!(disk.catalog.tool("store_get_order").is_some(), "{context}");
    let (_, context, reused) = disk.apply("rename in orders, no longer colliding", |folder| {
        let mut orders = folder.values[ORDERS].clone();
        operation_mut(&mut orders, "/orders/{id}", "get")
            .insert("operationId".into(), json!("fetchOrder"));
        folder.write(ORDERS, orders);
    });
    disk.assert_fresh(&context);
    assert_eq!(reused, all, "{context}: all but orders");
    assert!(disk.catalog.tool("get_order").is_some(), "{context}");

    // A broken document deleted: its last good version goes with it.
    let pdfblocks = DISK_CORPUS[2];
    let (_, context, _) = disk.apply("break pdfblocks", |folder| {
        folder
            .bytes
            .insert(pdfblocks.into(), b"{ \"openapi\": ".to_vec());
        folder.broken.insert(pdfblocks.into());
    });
    assert!(!tools_of(&disk.catalog, pdfblocks).is_empty(), "{context}");
    let (_, context, _) = disk.apply("delete the broken pdfblocks", |folder| {
        folder.bytes.remove(pdfblocks);
    });
    disk.assert_fresh(&context);
    assert!(tools_of(&disk.catalog, pdfblocks).is_empty(), "{context}");
    let (_, context, _) = disk.apply("add pdfblocks back", |folder| folder.restore(pdfblocks));
    disk.assert_fresh(&context);
    eprintln!(
        "incremental on disk: {} steps in {:.1?}",
        disk.step,
        started.elapsed()
    );
}
