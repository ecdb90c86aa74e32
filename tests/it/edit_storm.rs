//! The edit storm: a thousand random edits to a served catalogs
//! folder while clients search, load, invoke and listen.
//!
//! Why: the live-reload tests (`live_reload.rs`) check each way a file can
//! change once, on a quiet server. Real folders change in every way at once,
//! in bursts, while agents call. This test runs the real `sezzlee serve`
//! binary (events watching, the production default, and a shorter run with
//! polling) on a folder of small generated documents and applies seeded
//! random edits to it: rename-saves, truncate-then-write, partial and
//! truncated writes, invalid YAML and JSON, files that parse but are not
//! documents, sidecars broken (syntax and configuration) and fixed, files
//! added and removed (a sub-folder too), a catalog file that is a symlink
//! re-pointed, a Kubernetes ConfigMap `..data` swap (keys changed, removed
//! and added), no-op saves (touch, same bytes, reformatting), in bursts
//! faster than the debounce and alone. Meanwhile three clients search, load
//! and invoke (pinned to the version they loaded, against the recording
//! backend) and list tools, in both protocol eras, and four listen streams
//! (three reading all the time, one only now and then) stay open.
//!
//! After every burst, once the folder is quiet:
//! - a change of the served content is picked up on its own (the watcher or
//!   the poll), then a sentinel file (a non-document whose diagnostic names
//!   the checkpoint: it changes no tool and bumps nothing) proves the server
//!   has rescanned the settled folder;
//! - the served catalog (every definition through `search_tools` in schema
//!   detail, cross-checked with `load_tool`, and every tool's tags through
//!   the tag filter) equals `sezzlee check --emit` on a folder the model
//!   writes: per path, the current content when it is valid, else the last
//!   valid content (kept per path; a deleted path forgets it). Validity is
//!   the catalog's own test (`source::parse_bytes`, and
//!   `Sidecar::from_value` for sidecars). A burst never leaves a path broken
//!   after it went through another valid content or was deleted (the server
//!   may or may not have seen that state): such a path gets a valid save,
//!   counted as a fix-up;
//! - the generation rose when the content (names, versions, tags) changed;
//!   after one atomic edit it rose by exactly one for a change and not at
//!   all otherwise; after a burst that ended where it began it did not rise
//!   by exactly one (a bump always comes with a change); `tools/list` stamps
//!   agree; every listen stream reaches the generation;
//! - no client request failed other than by the contract (`unknown_tool`
//!   and `tool_changed` for tools that changed or went away; every answer
//!   valid per the MCP schema of its era).
//!
//! A broken file keeps its last good content, including when its sidecar
//! or a fragment it `$ref`s changes (and a document rebuilt while its
//! fragment is broken uses the fragment's last good content): the gateway
//! keeps every file's last good bytes, compressed, and builds from them.
//! That is what the model checks, per path; and after every quiet period
//! no diagnostic in `/status` says "could not be read again" (a kept copy
//! that did not build).
//!
//! At the end the four streams are still open, the server is alive, its log
//! has no panic and no failed rebuild, and the generations it logged for
//! every swap rise by at most one at a time.
//!
//! Reproduce: the seed is printed at the start and, with the last edits, on
//! failure. `SEZZLEE_STORM_SEED=<seed> cargo test --test it edit_storm --
//! --nocapture` replays the same edits (timing aside);
//! `SEZZLEE_STORM_EDITS=<n>` changes the length (default 1000, the poll run
//! a fifth of it).
#![cfg(unix)]

use crate::backend::Backend;
use crate::support::{
    GENERATION, LEGACY, MODERN, SUBSCRIPTION, ToolReply, assert_envelope, assert_result,
    legacy_headers, legacy_request, listening_url, modern_headers, modern_post, modern_request,
    names, record_list_changed, sezzlee_binary, tool_reply,
};
use futures_util::{Stream, StreamExt};
use serde_json::{Map, Value, json};
use sezzlee_catalog::sidecar::Sidecar;
use sezzlee_catalog::source::{is_sidecar, parse_bytes};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::io::Write;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

/// The seed when `SEZZLEE_STORM_SEED` is not set (CI).
const DEFAULT_SEED: u64 = 0x5EED_0018;
/// Edits when `SEZZLEE_STORM_EDITS` is not set.
const DEFAULT_EDITS: usize = 1000;
/// The server's debounce: the production default.
const DEBOUNCE_MS: u64 = 50;
/// The poll run's interval.
const POLL_MS: u64 = 100;
/// Longest wait for something that must happen (only reached on failure).
const PATIENCE: Duration = Duration::from_secs(10);
/// The poll run's seed is the events run's with these bits flipped.
const POLL_SALT: u64 = 0x9011;
/// The file that proves a rescan of the settled folder.
const SENTINEL: &str = "zz-storm-sentinel.json";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "slow campaign: `cargo test -- --include-ignored` runs it, as CI does"]
async fn edit_storm_with_file_system_events() {
    let edits = env_number("SEZZLEE_STORM_EDITS").map_or(DEFAULT_EDITS, |n| n as usize);
    run(Watch::Events, seed(), edits).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "slow campaign: `cargo test -- --include-ignored` runs it, as CI does"]
async fn edit_storm_with_polling() {
    let edits = env_number("SEZZLEE_STORM_EDITS").map_or(DEFAULT_EDITS, |n| n as usize);
    // Another sequence than the events run's, a fifth as long.
    run(Watch::Poll, seed() ^ POLL_SALT, (edits / 5).max(20)).await;
}

fn seed() -> u64 {
    env_number("SEZZLEE_STORM_SEED").unwrap_or(DEFAULT_SEED)
}

/// A decimal or `0x` hexadecimal number from the environment.
fn env_number(name: &str) -> Option<u64> {
    let text = std::env::var(name).ok()?;
    let text = text.trim();
    let parsed = match text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
        Some(hex) => u64::from_str_radix(&hex.replace('_', ""), 16),
        None => text.replace('_', "").parse(),
    };
    Some(parsed.unwrap_or_else(|err| panic!("{name}={text:?}: {err}")))
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Watch {
    Events,
    Poll,
}

impl Watch {
    fn name(self) -> &'static str {
        match self {
            Watch::Events => "events",
            Watch::Poll => "poll",
        }
    }
}

// ------------------------------------------------------------ the seeded generator

/// splitmix64: small, seedable, the same on every platform and version.
#[derive(Clone)]
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    /// `lo..=hi`.
    fn range(&mut self, lo: usize, hi: usize) -> usize {
        lo + self.below(hi - lo + 1)
    }

    fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }

    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }

    fn millis(&mut self, max: u64) -> Duration {
        Duration::from_millis(self.next() % (max + 1))
    }

    fn fork(&mut self) -> Rng {
        Rng(self.next())
    }
}

// ------------------------------------------------------------ the folder and its model

/// How a catalog path is backed on disk.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mount {
    /// A regular file.
    Plain,
    /// A symlink to a file in `.links/`, re-pointed by rename.
    Linked,
    /// A ConfigMap key: a symlink through `..data` to `..<timestamp>/`.
    ConfigMap,
}

/// What a path holds when it holds something valid.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Role {
    /// An OpenAPI document whose paths start with `/{prefix}/`; some of
    /// its responses may `$ref` its own `fragment` file.
    Document {
        prefix: &'static str,
        fragment: Option<&'static str>,
    },
    /// The sidecar of the document with that prefix.
    Sidecar { prefix: &'static str },
    /// Schemas one document `$ref`s.
    Fragment,
}

struct Spec {
    rel: &'static str,
    mount: Mount,
    role: Role,
    /// Present at the start.
    present: bool,
}

const fn spec(rel: &'static str, mount: Mount, role: Role, present: bool) -> Spec {
    Spec {
        rel,
        mount,
        role,
        present,
    }
}

const fn doc(prefix: &'static str, fragment: Option<&'static str>) -> Role {
    Role::Document { prefix, fragment }
}

const fn car(prefix: &'static str) -> Role {
    Role::Sidecar { prefix }
}

/// Every path the storm writes (the sentinel aside).
const LAYOUT: &[Spec] = &[
    spec(
        "alpha.yaml",
        Mount::Plain,
        doc("alpha", Some("alpha-parts.yaml")),
        true,
    ),
    spec("alpha-parts.yaml", Mount::Plain, Role::Fragment, true),
    spec("alpha.sezzlee.yaml", Mount::Plain, car("alpha"), true),
    spec("beta.json", Mount::Plain, doc("beta", None), true),
    spec("beta.sezzlee.json", Mount::Plain, car("beta"), false),
    spec(
        "gamma.yaml",
        Mount::Plain,
        doc("gamma", Some("gamma-parts.yaml")),
        true,
    ),
    spec("gamma-parts.yaml", Mount::Plain, Role::Fragment, true),
    spec("nested/delta.yml", Mount::Plain, doc("delta", None), true),
    spec(
        "epsilon.json",
        Mount::Plain,
        doc("epsilon", Some("epsilon-parts.json")),
        false,
    ),
    spec("epsilon-parts.json", Mount::Plain, Role::Fragment, true),
    spec("zeta.yaml", Mount::Plain, doc("zeta", None), false),
    spec("zeta.sezzlee.json", Mount::Plain, car("zeta"), false),
    spec("linked.yaml", Mount::Linked, doc("linked", None), true),
    spec(
        "cm-orders.yaml",
        Mount::ConfigMap,
        doc("orders", Some("orders-parts.yaml")),
        true,
    ),
    spec("orders-parts.yaml", Mount::Plain, Role::Fragment, true),
    spec(
        "cm-orders.sezzlee.yaml",
        Mount::ConfigMap,
        car("orders"),
        true,
    ),
    spec(
        "cm-billing.json",
        Mount::ConfigMap,
        doc("billing", None),
        true,
    ),
];

/// The operations a document may publish: (method, path after the prefix,
/// operationId after the prefix).
const OPERATIONS: [(&str, &str, &str); 5] = [
    ("get", "items", "list_items"),
    ("get", "items/{id}", "get_item"),
    ("post", "items", "create_item"),
    ("delete", "items/{id}", "delete_item"),
    ("get", "report", "report"),
];
const WORDS: &[&str] = &[
    "order", "invoice", "refund", "customer", "shipment", "ledger", "payment", "parcel", "ticket",
    "report", "stock", "price", "item", "label",
];
/// ASCII, so folding is lower-casing.
const TAGS: &[&str] = &["Alpha", "beta", "Gamma Ray", "ops"];

/// One path of the folder, as the storm wrote it.
struct Slot {
    mount: Mount,
    role: Role,
    /// What reading the path gives now (`None`: absent, or a dangling link).
    current: Option<Vec<u8>>,
    /// Whether `current` is valid (see [`valid`]).
    valid: bool,
    /// The last content that was valid at a checkpoint: what the server
    /// keeps serving while the path is broken.
    last_good: Option<Vec<u8>>,
    /// This burst took the path through a state the server may have made
    /// its last good (valid and different), or through absence (which makes
    /// it forget): the path must not end the burst broken.
    tainted: bool,
    /// `Linked`: the file in `.links/` the link points to.
    target: Option<String>,
}

/// Whether the server uses these bytes at `rel` (else it keeps the last
/// good ones): the catalog's own test.
fn valid(rel: &str, bytes: &[u8]) -> bool {
    match parse_bytes(rel, bytes) {
        Err(_) => false,
        Ok(value) => !is_sidecar(rel) || Sidecar::from_value(&value).is_ok(),
    }
}

fn write_file(path: &Path, bytes: &[u8]) {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).unwrap();
    }
    std::fs::write(path, bytes).unwrap_or_else(|err| panic!("write {}: {err}", path.display()));
}

/// The edit kinds and their weights.
const KINDS: &[(&str, u64)] = &[
    ("rename-save", 15),
    ("truncate+write", 8),
    ("partial write", 8),
    ("truncation", 5),
    ("invalid YAML/JSON", 10),
    ("parses, not a document", 3),
    ("sidecar broken", 7),
    ("sidecar fixed", 7),
    ("file added", 6),
    ("file removed", 6),
    ("symlink swap", 6),
    ("..data swap", 6),
    ("no-op save", 6),
];
const FIX_UP: &str = "fix-up (valid save)";

/// The folder, the model of what it holds, and the edits applied.
struct Folder {
    dir: PathBuf,
    backend: String,
    rng: Rng,
    slots: BTreeMap<&'static str, Slot>,
    serial: u64,
    /// The ConfigMap's current `..<timestamp>` folder.
    configmap: String,
    by_kind: BTreeMap<&'static str, usize>,
    edits: usize,
    /// Every edit, one line each, for a failure report.
    trace: Arc<Mutex<Vec<String>>>,
}

impl Folder {
    fn create(dir: &Path, backend: &str, rng: Rng, trace: Arc<Mutex<Vec<String>>>) -> Folder {
        let mut folder = Folder {
            dir: dir.to_path_buf(),
            backend: backend.to_string(),
            rng,
            slots: BTreeMap::new(),
            serial: 0,
            configmap: "..2026_04_01_12_00_00.000000".to_string(),
            by_kind: BTreeMap::new(),
            edits: 0,
            trace,
        };
        for spec in LAYOUT {
            let content = spec
                .present
                .then(|| folder.valid_content(spec.rel, spec.role));
            let mut target = None;
            match (spec.mount, &content) {
                (Mount::Plain, Some(bytes)) => write_file(&dir.join(spec.rel), bytes),
                (Mount::Plain, None) => {}
                (Mount::Linked, _) => {
                    let name = format!("{}-0.yaml", spec.rel.replace('.', "-"));
                    if let Some(bytes) = &content {
                        write_file(&dir.join(".links").join(&name), bytes);
                    }
                    symlink(format!(".links/{name}"), dir.join(spec.rel)).unwrap();
                    target = Some(name);
                }
                (Mount::ConfigMap, Some(bytes)) => {
                    write_file(&dir.join(&folder.configmap).join(spec.rel), bytes);
                    symlink(format!("..data/{}", spec.rel), dir.join(spec.rel)).unwrap();
                }
                (Mount::ConfigMap, None) => {}
            }
            folder.slots.insert(
                spec.rel,
                Slot {
                    mount: spec.mount,
                    role: spec.role,
                    valid: content.is_some(),
                    current: content.clone(),
                    last_good: content,
                    tainted: false,
                    target,
                },
            );
        }
        symlink(&folder.configmap, dir.join("..data")).unwrap();
        folder
    }

    /// What the server serves at `rel` now: the current content when it
    /// is valid, else the last good one (as of the last checkpoint);
    /// nothing when the path is absent (a deleted path forgets it).
    fn serving_at(&self, rel: &str) -> Option<Vec<u8>> {
        let slot = &self.slots[rel];
        match &slot.current {
            None => None,
            Some(bytes) if slot.valid => Some(bytes.clone()),
            Some(_) => slot.last_good.clone(),
        }
    }

    fn next_serial(&mut self) -> u64 {
        self.serial += 1;
        self.serial
    }

    fn note(&mut self, line: String) {
        self.trace
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .push(line);
    }

    /// Records the state a path is in now (every intermediate state too).
    fn observe(&mut self, rel: &str, state: Option<Vec<u8>>) {
        let is_valid = state.as_deref().is_some_and(|bytes| valid(rel, bytes));
        let slot = self.slots.get_mut(rel).expect("a storm path");
        let taints = match &state {
            None => slot.last_good.is_some(),
            Some(bytes) => is_valid && slot.last_good.as_deref() != Some(&bytes[..]),
        };
        slot.tainted |= taints;
        slot.current = state;
        slot.valid = is_valid;
    }

    /// Where in-place writes to `rel` go: the file itself, or the link's target.
    fn write_path(&self, rel: &str) -> PathBuf {
        let slot = &self.slots[rel];
        match slot.mount {
            Mount::Linked => self
                .dir
                .join(".links")
                .join(slot.target.as_deref().expect("a link target")),
            _ => self.dir.join(rel),
        }
    }

    // ---------------------------------------------------- contents

    fn phrase(&mut self, words: usize) -> String {
        (0..words)
            .map(|_| *self.rng.pick(WORDS))
            .collect::<Vec<_>>()
            .join(" ")
    }

    fn serialize(&mut self, rel: &str, value: &Value) -> Vec<u8> {
        if rel.ends_with(".json") {
            if self.rng.chance(50) {
                serde_json::to_vec_pretty(value).unwrap()
            } else {
                serde_json::to_vec(value).unwrap()
            }
        } else {
            serde_yaml_ng::to_string(value).unwrap().into_bytes()
        }
    }

    fn valid_content(&mut self, rel: &str, role: Role) -> Vec<u8> {
        let value = match role {
            Role::Document { prefix, fragment } => self.document(prefix, fragment),
            Role::Sidecar { prefix } => self.sidecar(prefix),
            Role::Fragment => self.fragment(),
        };
        self.serialize(rel, &value)
    }

    /// 1 to 3 of the [`OPERATIONS`], described afresh.
    fn document(&mut self, prefix: &str, fragment: Option<&str>) -> Value {
        let edition = self.next_serial();
        let count = self.rng.range(1, 3);
        let mut chosen = BTreeSet::new();
        while chosen.len() < count {
            chosen.insert(self.rng.below(OPERATIONS.len()));
        }
        let mut paths = Map::new();
        for index in chosen {
            let (method, tail, id) = OPERATIONS[index];
            // Now and then the same name as another document's: a collision.
            let operation_id = if index == 4 && self.rng.chance(25) {
                "shared_report".to_string()
            } else {
                format!("{prefix}_{id}")
            };
            let summary = self.phrase(3);
            let response = if let Some(fragment) = fragment
                && self.rng.chance(50)
            {
                json!({"$ref": format!("{fragment}#/components/schemas/Item")})
            } else {
                json!({"type": "object", "properties": {"ok": {"type": "boolean"}}})
            };
            let mut operation = json!({
                "operationId": operation_id,
                "summary": summary,
                "description": format!("{} (edition {edition}).", self.phrase(4)),
                "responses": {"200": {
                    "description": "ok",
                    "content": {"application/json": {"schema": response}}
                }}
            });
            let tags: Vec<&str> = (0..self.rng.below(3))
                .map(|_| *self.rng.pick(TAGS))
                .collect();
            if !tags.is_empty() {
                operation["tags"] = json!(tags);
            }
            let mut parameters = Vec::new();
            if tail.contains("{id}") {
                parameters.push(json!({"name": "id", "in": "path", "required": true, "schema": {"type": "integer"}}));
            }
            if self.rng.chance(50) {
                parameters.push(json!({"name": "limit", "in": "query", "schema": {"type": "integer", "minimum": 1}}));
            }
            if !parameters.is_empty() {
                operation["parameters"] = json!(parameters);
            }
            if method == "post" {
                operation["requestBody"] = json!({"required": true, "content": {"application/json": {"schema": {
                    "type": "object",
                    "required": ["label"],
                    "properties": {"label": {"type": "string"}, "quantity": {"type": "integer"}}
                }}}});
            }
            let path = paths
                .entry(format!("/{prefix}/{tail}"))
                .or_insert_with(|| json!({}));
            path[method] = operation;
        }
        let openapi = if self.rng.chance(20) {
            "3.1.0"
        } else {
            "3.0.3"
        };
        json!({
            "openapi": openapi,
            "info": {"title": format!("{prefix} API"), "version": format!("1.{edition}")},
            "servers": [{"url": format!("{}/{prefix}", self.backend)}],
            "paths": paths
        })
    }

    fn sidecar(&mut self, prefix: &str) -> Value {
        let mut tools = Map::new();
        for _ in 0..self.rng.range(1, 2) {
            let (method, tail, id) = OPERATIONS[self.rng.below(OPERATIONS.len())];
            let mut config = Map::new();
            if self.rng.chance(50) {
                let name = format!("{prefix}_{id}_v{}", self.rng.below(3));
                config.insert("name".into(), json!(name));
            }
            if self.rng.chance(40) {
                let description = format!("{} (curated).", self.phrase(3));
                config.insert("description".into(), json!(description));
            }
            if self.rng.chance(40) {
                config.insert("tags".into(), json!([*self.rng.pick(TAGS)]));
            }
            if self.rng.chance(10) {
                config.insert("hidden".into(), json!(true));
            }
            if self.rng.chance(25) {
                let name = format!("{prefix}_{id}_few");
                config.insert(
                    "variants".into(),
                    json!([{"name": name, "description": "At most five.", "fixed": {"limit": 5}}]),
                );
            }
            tools.insert(
                format!("{} /{prefix}/{tail}", method.to_uppercase()),
                Value::Object(config),
            );
        }
        let mut sidecar = json!({"tools": tools});
        if self.rng.chance(50) {
            sidecar["revision"] = json!({"catalog": self.rng.range(1, 4)});
        }
        if self.rng.chance(10) {
            sidecar["namespace"] = json!(format!("ns_{prefix}"));
        }
        sidecar
    }

    fn fragment(&mut self) -> Value {
        let edition = self.next_serial();
        json!({"components": {"schemas": {"Item": {
            "type": "object",
            "description": format!("An item, edition {edition}."),
            "properties": {"id": {"type": "integer"}, "label": {"type": "string"}}
        }}}})
    }

    /// Bytes that do not parse as the path's format.
    fn invalid_syntax(&mut self, rel: &str, role: Role) -> Vec<u8> {
        if rel.ends_with(".json") {
            let good = self.valid_content(rel, role);
            match self.rng.below(4) {
                0 => good[..self.rng.range(1, good.len() - 1)].to_vec(),
                1 => b"{\"openapi\": \"3.0.3\", broken".to_vec(),
                2 => [&good[..], b"}{"].concat(),
                _ => b"".to_vec(),
            }
        } else {
            let text: &[u8] = match self.rng.below(6) {
                0 => b"openapi: 3.0.3\npaths: [unclosed\n",
                1 => b"openapi: 3.0.3\ninfo:\n\ttitle: a tab\n",
                2 => b"openapi: 3.0.3\nopenapi: 3.1.0\n",
                3 => b"tools: {\"GET /x\": [1, 2\n",
                4 => b"  \n\n",
                _ => b"key: value\n  - a list under a scalar\n",
            };
            text.to_vec()
        }
    }

    /// Bytes that parse but publish nothing (documents only).
    fn not_a_document(&mut self, rel: &str) -> Vec<u8> {
        let json = rel.ends_with(".json");
        let text: &str = match (self.rng.below(3), json) {
            (0, true) => "[]",
            (1, true) => "{\"info\": {\"title\": \"nothing here\"}}",
            (_, true) => "42",
            (0, false) => "just a sentence\n",
            (1, false) => "- one\n- two\n",
            (_, false) => "openapi: 3.0.3\ninfo: {title: no paths, version: '1'}\n",
        };
        text.as_bytes().to_vec()
    }

    /// A sidecar that is refused: bad syntax or a bad setting.
    fn broken_sidecar(&mut self, rel: &str) -> Vec<u8> {
        let value = match self.rng.below(6) {
            0 => json!({"revision": {"catalog": 0}}),
            1 => json!({"tols": {}}),
            2 => json!({"namespace": "Not-Valid"}),
            3 => json!({"tools": {"GETX": {}}}),
            4 => json!({"tools": {"GET /x": {"visibility": "nobody"}}}),
            _ => return self.invalid_syntax(rel, Role::Sidecar { prefix: "x" }),
        };
        self.serialize(rel, &value)
    }

    // ---------------------------------------------------- edits

    fn rename_save(&mut self, rel: &str, bytes: Vec<u8>) {
        let path = self.dir.join(rel);
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        let temp = path.with_file_name(format!(".{name}.tmp-{}", self.next_serial()));
        write_file(&temp, &bytes);
        std::fs::rename(&temp, &path).unwrap();
        self.observe(rel, Some(bytes));
    }

    /// Truncated, then (after `pause`) written: an editor saving in place.
    async fn truncate_and_write(&mut self, rel: &str, bytes: Vec<u8>, pause: Duration) {
        let path = self.write_path(rel);
        let mut file = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
        file.set_len(0).unwrap();
        self.observe(rel, Some(Vec::new()));
        if !pause.is_zero() {
            tokio::time::sleep(pause).await;
        }
        file.write_all(&bytes).unwrap();
        drop(file);
        self.observe(rel, Some(bytes));
    }

    /// Written in `chunks` with pauses shorter than the debounce, stopping
    /// after `keep` chunks (a writer that died, or is still writing).
    async fn partial_write(&mut self, rel: &str, bytes: Vec<u8>, chunks: usize, keep: usize) {
        let path = self.write_path(rel);
        let mut file = std::fs::File::create(&path).unwrap();
        self.observe(rel, Some(Vec::new()));
        let size = bytes.len().div_ceil(chunks).max(1);
        let mut written = 0;
        for chunk in bytes.chunks(size).take(keep) {
            file.write_all(chunk).unwrap();
            file.flush().unwrap();
            written += chunk.len();
            self.observe(rel, Some(bytes[..written].to_vec()));
            let pause = self.rng.millis(DEBOUNCE_MS / 3);
            tokio::time::sleep(pause).await;
        }
    }

    fn remove(&mut self, rel: &str) {
        let path = self.dir.join(rel);
        std::fs::remove_file(&path).unwrap();
        // An emptied sub-folder goes too (and is created again by a later add).
        if let Some(parent) = path.parent()
            && parent != self.dir
            && std::fs::read_dir(parent).is_ok_and(|mut entries| entries.next().is_none())
        {
            std::fs::remove_dir(parent).unwrap();
        }
        self.observe(rel, None);
    }

    /// A new target in `.links/` (or none: a dangling link), the link
    /// replaced by rename, the old target removed.
    fn symlink_swap(&mut self, rel: &str, content: Option<Vec<u8>>) {
        let name = format!("{}-{}.yaml", rel.replace('.', "-"), self.next_serial());
        if let Some(bytes) = &content {
            write_file(&self.dir.join(".links").join(&name), bytes);
        }
        let temp = self.dir.join(format!(".{rel}.link-{}", self.serial));
        symlink(format!(".links/{name}"), &temp).unwrap();
        std::fs::rename(&temp, self.dir.join(rel)).unwrap();
        let slot = self.slots.get_mut(rel).unwrap();
        if let Some(old) = slot.target.replace(name) {
            let _ = std::fs::remove_file(self.dir.join(".links").join(old));
        }
        self.observe(rel, content);
    }

    /// kubelet's update of a ConfigMap volume: a new timestamped folder, a
    /// `..data_tmp` link to it renamed over `..data`, the links of added
    /// keys created and those of removed keys deleted, the old folder
    /// removed. `forced` keys get that content; the others are kept,
    /// changed, broken or removed at random. Atomic unless a key is added.
    fn configmap_swap(&mut self, forced: &BTreeMap<&'static str, Vec<u8>>) -> (bool, String) {
        let next = format!("..2026_04_01_12_00_00.{:06}", self.next_serial());
        let keys: Vec<&'static str> = self
            .slots
            .iter()
            .filter(|(_, slot)| slot.mount == Mount::ConfigMap)
            .map(|(rel, _)| *rel)
            .collect();
        let mut atomic = true;
        let mut plan = Vec::new();
        let mut described = Vec::new();
        for rel in keys {
            let slot = &self.slots[rel];
            let (role, current) = (slot.role, slot.current.clone());
            let linked = std::fs::symlink_metadata(self.dir.join(rel)).is_ok();
            let (content, what) = if let Some(bytes) = forced.get(rel) {
                (Some(bytes.clone()), "fixed")
            } else if !forced.is_empty() {
                (current, "kept")
            } else {
                match self.rng.below(100) {
                    0..=39 if current.is_some() => (current, "kept"),
                    0..=74 => (Some(self.valid_content(rel, role)), "changed"),
                    75..=87 => {
                        let bytes = if matches!(role, Role::Sidecar { .. }) {
                            self.broken_sidecar(rel)
                        } else {
                            self.invalid_syntax(rel, role)
                        };
                        (Some(bytes), "broken")
                    }
                    _ => (None, "removed"),
                }
            };
            if let Some(bytes) = &content {
                write_file(&self.dir.join(&next).join(rel), bytes);
            }
            atomic &= content.is_none() || linked;
            described.push(format!("{rel} {what}"));
            plan.push((rel, linked, content));
        }
        symlink(&next, self.dir.join("..data_tmp")).unwrap();
        std::fs::rename(self.dir.join("..data_tmp"), self.dir.join("..data")).unwrap();
        for (rel, linked, content) in &plan {
            // Right after the swap: new content through existing links;
            // a removed key's link dangles; an added key has no link yet.
            let state = if *linked { content.clone() } else { None };
            self.observe(rel, state);
        }
        for (rel, linked, content) in plan {
            match (&content, linked) {
                (Some(_), false) => {
                    symlink(format!("..data/{rel}"), self.dir.join(rel)).unwrap();
                }
                (None, true) => std::fs::remove_file(self.dir.join(rel)).unwrap(),
                _ => {}
            }
            self.observe(rel, content);
        }
        let previous = std::mem::replace(&mut self.configmap, next);
        std::fs::remove_dir_all(self.dir.join(previous)).unwrap();
        (atomic, described.join(", "))
    }

    /// Paths of `mount` kinds whose presence is `present` (None: either)
    /// and whose role passes `role`.
    fn eligible(
        &self,
        mounts: &[Mount],
        present: Option<bool>,
        role: impl Fn(Role) -> bool,
    ) -> Vec<&'static str> {
        self.slots
            .iter()
            .filter(|(_, slot)| mounts.contains(&slot.mount))
            .filter(|(_, slot)| present.is_none_or(|p| slot.current.is_some() == p))
            .filter(|(_, slot)| role(slot.role))
            .map(|(rel, _)| *rel)
            .collect()
    }

    /// One random edit; whether it is atomic (a rescan sees the path before
    /// or after it, or broken in between, never another valid content).
    async fn edit(&mut self, label: &str) -> bool {
        use Mount::{ConfigMap, Linked, Plain};
        let total: u64 = KINDS.iter().map(|(_, weight)| weight).sum();
        loop {
            let mut roll = self.rng.next() % total;
            let kind = KINDS
                .iter()
                .find(|(_, weight)| {
                    let hit = roll < *weight;
                    roll = roll.saturating_sub(*weight);
                    hit
                })
                .map(|(kind, _)| *kind)
                .unwrap();
            let any = |_| true;
            let is_document = |role| matches!(role, Role::Document { .. });
            let is_sidecar_role = |role| matches!(role, Role::Sidecar { .. });
            let candidates = match kind {
                "rename-save" => self.eligible(&[Plain], Some(true), any),
                "truncate+write" | "partial write" | "truncation" | "invalid YAML/JSON"
                | "no-op save" => self.eligible(&[Plain, Linked], Some(true), any),
                "parses, not a document" => {
                    self.eligible(&[Plain, Linked], Some(true), is_document)
                }
                "sidecar broken" | "sidecar fixed" => {
                    self.eligible(&[Plain], None, is_sidecar_role)
                }
                "file added" => self.eligible(&[Plain], Some(false), any),
                "file removed" => self.eligible(&[Plain], Some(true), any),
                "symlink swap" => self.eligible(&[Linked], None, any),
                "..data swap" => self.eligible(&[ConfigMap], None, any),
                other => unreachable!("{other}"),
            };
            if candidates.is_empty() {
                continue;
            }
            let rel = *self.rng.pick(&candidates);
            let (atomic, detail) = self.apply(kind, rel).await;
            *self.by_kind.entry(kind).or_default() += 1;
            self.edits += 1;
            let line = format!("{label} #{} {kind} {rel}: {detail}", self.edits);
            self.note(line);
            return atomic;
        }
    }

    /// Applies one edit of `kind` to `rel`: (atomic, what it did).
    async fn apply(&mut self, kind: &str, rel: &'static str) -> (bool, String) {
        let role = self.slots[rel].role;
        let in_place_atomic = rel.ends_with(".json");
        match kind {
            "rename-save" => {
                let bytes = self.valid_content(rel, role);
                let size = bytes.len();
                self.rename_save(rel, bytes);
                (true, format!("{size} bytes"))
            }
            "truncate+write" => {
                let bytes = self.valid_content(rel, role);
                let pause = if self.rng.chance(50) {
                    Duration::ZERO
                } else {
                    self.rng.millis(DEBOUNCE_MS / 2)
                };
                let size = bytes.len();
                self.truncate_and_write(rel, bytes, pause).await;
                (in_place_atomic, format!("{size} bytes after {pause:?}"))
            }
            "partial write" => {
                let bytes = self.valid_content(rel, role);
                let chunks = self.rng.range(2, 4);
                let keep = if self.rng.chance(35) {
                    self.rng.range(1, chunks - 1)
                } else {
                    chunks
                };
                let size = bytes.len();
                self.partial_write(rel, bytes, chunks, keep).await;
                (false, format!("{keep} of {chunks} chunks of {size} bytes"))
            }
            "truncation" => {
                let current = self.slots[rel].current.clone().unwrap_or_default();
                let length = self.rng.below(current.len().max(1));
                let file = std::fs::OpenOptions::new()
                    .write(true)
                    .open(self.write_path(rel))
                    .unwrap();
                file.set_len(length as u64).unwrap();
                drop(file);
                self.observe(rel, Some(current[..length].to_vec()));
                (true, format!("to {length} of {} bytes", current.len()))
            }
            "invalid YAML/JSON" | "parses, not a document" | "sidecar broken" => {
                let bytes = match kind {
                    "invalid YAML/JSON" => self.invalid_syntax(rel, role),
                    "parses, not a document" => self.not_a_document(rel),
                    _ => self.broken_sidecar(rel),
                };
                let shown = String::from_utf8_lossy(&bytes[..bytes.len().min(40)]).to_string();
                let mount = self.slots[rel].mount;
                if mount == Mount::Plain && (self.rng.chance(50) || kind == "sidecar broken") {
                    self.rename_save(rel, bytes);
                    (true, format!("by rename: {shown:?}"))
                } else {
                    self.truncate_and_write(rel, bytes, Duration::ZERO).await;
                    (in_place_atomic, format!("in place: {shown:?}"))
                }
            }
            "sidecar fixed" => {
                let bytes = self.valid_content(rel, role);
                if self.slots[rel].current.is_some() && self.rng.chance(40) {
                    self.truncate_and_write(rel, bytes, Duration::ZERO).await;
                    (in_place_atomic, "in place".to_string())
                } else {
                    self.rename_save(rel, bytes);
                    (true, "by rename".to_string())
                }
            }
            "file added" => {
                let bytes = if self.rng.chance(85) {
                    self.valid_content(rel, role)
                } else {
                    self.invalid_syntax(rel, role)
                };
                let size = bytes.len();
                // Created in place: empty, then written.
                write_file(&self.dir.join(rel), &[]);
                self.observe(rel, Some(Vec::new()));
                let path = self.dir.join(rel);
                std::fs::write(path, &bytes).unwrap();
                self.observe(rel, Some(bytes));
                (in_place_atomic, format!("{size} bytes"))
            }
            "file removed" => {
                self.remove(rel);
                (true, String::new())
            }
            "symlink swap" => {
                let (content, what) = match self.rng.below(100) {
                    0..=69 => (Some(self.valid_content(rel, role)), "valid target"),
                    70..=84 => (Some(self.invalid_syntax(rel, role)), "broken target"),
                    _ => (None, "dangling"),
                };
                self.symlink_swap(rel, content);
                (true, what.to_string())
            }
            "..data swap" => self.configmap_swap(&BTreeMap::new()),
            "no-op save" => {
                let current = self.slots[rel].current.clone().unwrap_or_default();
                let parsed = parse_bytes(rel, &current).ok();
                let mount = self.slots[rel].mount;
                match (self.rng.below(3), parsed) {
                    (0, Some(value)) if mount == Mount::Plain => {
                        // Reformatted: other bytes, the same value.
                        let bytes = if rel.ends_with(".json") {
                            let pretty = serde_json::to_vec_pretty(&value).unwrap();
                            if pretty == current {
                                serde_json::to_vec(&value).unwrap()
                            } else {
                                pretty
                            }
                        } else {
                            [&current[..], b"\n# reformatted\n"].concat()
                        };
                        self.rename_save(rel, bytes);
                        (true, "reformatted".to_string())
                    }
                    (1, _) if mount == Mount::Plain => {
                        self.rename_save(rel, current);
                        (true, "same bytes saved".to_string())
                    }
                    _ => {
                        let file = std::fs::OpenOptions::new()
                            .write(true)
                            .open(self.write_path(rel))
                            .unwrap();
                        let at =
                            SystemTime::now() + Duration::from_secs(self.rng.range(1, 90) as u64);
                        file.set_modified(at).unwrap();
                        (true, "touched".to_string())
                    }
                }
            }
            other => unreachable!("{other}"),
        }
    }

    /// A valid save of `rel`, the way its mount allows.
    fn save_valid(&mut self, rel: &'static str, label: &str) {
        let role = self.slots[rel].role;
        let bytes = self.valid_content(rel, role);
        match self.slots[rel].mount {
            Mount::Plain => self.rename_save(rel, bytes),
            Mount::Linked => self.symlink_swap(rel, Some(bytes)),
            Mount::ConfigMap => {
                self.configmap_swap(&BTreeMap::from([(rel, bytes)]));
            }
        }
        *self.by_kind.entry(FIX_UP).or_default() += 1;
        self.edits += 1;
        let line = format!("{label} #{} {FIX_UP} {rel}", self.edits);
        self.note(line);
    }

    /// Ends the burst where the server's state is certain: a valid save of
    /// every path left broken after it went through another valid content
    /// or absence (the server may have made that its last good, or
    /// forgotten it). Returns how many saves.
    fn fix_up(&mut self, label: &str) -> usize {
        let mut saves = 0;
        while let Some(rel) = self
            .slots
            .iter()
            .find(|(_, slot)| slot.tainted && slot.current.is_some() && !slot.valid)
            .map(|(rel, _)| *rel)
        {
            self.save_valid(rel, label);
            saves += 1;
        }
        saves
    }

    /// The folder `sezzlee check --emit` must see to give what the server
    /// serves (the rule): per path, the current content when valid,
    /// else the last good one.
    fn serving(&self) -> BTreeMap<String, Vec<u8>> {
        self.slots
            .keys()
            .filter_map(|rel| Some((rel.to_string(), self.serving_at(rel)?)))
            .collect()
    }

    /// The checkpoint passed: what is valid now is the last good content.
    fn settle(&mut self) {
        for (rel, slot) in &mut self.slots {
            assert!(
                !slot.tainted || slot.current.is_none() || slot.valid,
                "{rel}: the model left a tainted path broken"
            );
            match &slot.current {
                None => slot.last_good = None,
                Some(bytes) if slot.valid => slot.last_good = Some(bytes.clone()),
                Some(_) => {}
            }
            slot.tainted = false;
        }
    }

    /// The sentinel for checkpoint `k`: no tools, one diagnostic naming it.
    fn sentinel(&mut self, k: usize) {
        let bytes = json!({"openapi": marker(k), "info": {"title": "storm sentinel"}}).to_string();
        let path = self.dir.join(SENTINEL);
        let temp = self.dir.join(format!(".{SENTINEL}.tmp"));
        write_file(&temp, bytes.as_bytes());
        std::fs::rename(temp, path).unwrap();
    }
}

fn marker(k: usize) -> String {
    format!("storm-checkpoint-{k}")
}

// ------------------------------------------------------------ the oracle

/// What a catalog serves, as an agent observes it.
#[derive(Debug, Default, PartialEq)]
struct View {
    /// Name → the load_tool answer.
    definitions: BTreeMap<String, Value>,
    /// Name → folded tags (tools with tags only).
    tags: BTreeMap<String, BTreeSet<String>>,
}

/// Name → (version, tags as written): what the generation is about.
type Content = BTreeMap<String, (String, Vec<String>)>;

#[derive(Clone)]
struct Expected {
    view: Arc<View>,
    content: Arc<Content>,
}

/// `sezzlee check --emit` on a folder holding `files`.
fn check_emit(files: &BTreeMap<String, Vec<u8>>) -> Expected {
    let dir = tempfile::tempdir().expect("oracle folder");
    for (rel, bytes) in files {
        write_file(&dir.path().join(rel), bytes);
    }
    let output = sezzlee_binary(None)
        .arg("check")
        .arg("--emit")
        .arg(dir.path())
        .output()
        .expect("sezzlee check runs");
    assert!(
        matches!(output.status.code(), Some(0 | 1)),
        "sezzlee check --emit failed ({}): {}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    let mut view = View::default();
    let mut content = Content::new();
    for line in String::from_utf8(output.stdout).unwrap().lines() {
        let mut emitted: Value = serde_json::from_str(line).expect("a JSON line");
        let map = emitted.as_object_mut().expect("an object");
        let tags: Vec<String> = serde_json::from_value(map.remove("tags").expect("tags")).unwrap();
        map.remove("route");
        map.remove("document");
        let name = emitted["name"].as_str().unwrap().to_string();
        let version = emitted["version"].as_str().unwrap().to_string();
        if !tags.is_empty() {
            let folded = tags.iter().map(|tag| tag.to_lowercase()).collect();
            view.tags.insert(name.clone(), folded);
        }
        content.insert(name.clone(), (version, tags));
        view.definitions.insert(name, emitted);
    }
    Expected {
        view: Arc::new(view),
        content: Arc::new(content),
    }
}

fn describe_difference(served: &View, expected: &View) -> String {
    let mut out = Vec::new();
    let names = |view: &View| view.definitions.keys().cloned().collect::<BTreeSet<_>>();
    let (served_names, expected_names) = (names(served), names(expected));
    for name in served_names.difference(&expected_names) {
        out.push(format!("served, not expected: {name}"));
    }
    for name in expected_names.difference(&served_names) {
        out.push(format!("expected, not served: {name}"));
    }
    for name in served_names.intersection(&expected_names) {
        let (a, b) = (&served.definitions[name], &expected.definitions[name]);
        if a != b {
            out.push(format!(
                "{name}: served version {} {:?}, expected version {} {:?}",
                a["version"], a["description"], b["version"], b["description"]
            ));
        }
    }
    if served.tags != expected.tags {
        out.push(format!(
            "tags: served {:?}, expected {:?}",
            served.tags, expected.tags
        ));
    }
    out.join("\n  ")
}

// ------------------------------------------------------------ talking to the server

/// The running `sezzlee serve`, killed when dropped.
struct Server {
    child: std::process::Child,
    logs: Arc<Mutex<String>>,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Server {
    fn start(dir: &Path, watch: Watch) -> (Server, Endpoint) {
        let mut command = sezzlee_binary(None);
        command
            .arg("serve")
            .arg("--catalogs")
            .arg(dir)
            .args(["--listen", "127.0.0.1:0", "--watch", watch.name()])
            .args(["--debounce-ms", &DEBOUNCE_MS.to_string()])
            .args(["--poll-interval-ms", &POLL_MS.to_string()])
            .args(["--demo-backend", "false", "--log-format", "text"])
            .env("RUST_LOG", "info")
            .env("NO_COLOR", "1")
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped());
        let mut child = command.spawn().expect("sezzlee serve starts");
        let (url, logs) = listening_url(&mut child);
        let endpoint = Endpoint {
            client: reqwest::Client::builder()
                .timeout(Duration::from_secs(30))
                .redirect(reqwest::redirect::Policy::none())
                .build()
                .unwrap(),
            base: url.trim_end_matches("/mcp").to_string(),
            url,
        };
        (Server { child, logs }, endpoint)
    }

    fn logs(&self) -> String {
        strip_ansi(&self.logs.lock().unwrap())
    }
}

fn strip_ansi(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c == '\x1b' {
            for c in chars.by_ref() {
                if c.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

#[derive(Clone)]
struct Endpoint {
    client: reqwest::Client,
    url: String,
    base: String,
}

impl Endpoint {
    /// One JSON-RPC request in `version`'s era: the whole answer, which
    /// must be a 200 JSON result valid as `result_def`.
    async fn call(&self, version: &str, method: &str, params: Value, result_def: &str) -> Value {
        let (body, headers) = if version == MODERN {
            let body = modern_request(1, method, params);
            let headers = modern_headers(&body);
            (body, headers)
        } else {
            let body = legacy_request(1, method, params);
            let headers = legacy_headers(version)
                .into_iter()
                .map(|(name, value)| (name, value.to_string()))
                .collect();
            (body, headers)
        };
        let mut request = self
            .client
            .post(&self.url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(serde_json::to_vec(&body).unwrap());
        for (name, value) in headers {
            request = request.header(name, value);
        }
        let response = request
            .send()
            .await
            .unwrap_or_else(|err| panic!("{method} {}: not answered: {err}", body["params"]));
        let status = response.status().as_u16();
        let content_type = response
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        let text = response
            .text()
            .await
            .unwrap_or_else(|err| panic!("{method}: the body broke: {err}"));
        assert_eq!(status, 200, "{method} {}: {text}", body["params"]);
        assert_eq!(content_type.as_deref(), Some("application/json"), "{text}");
        let answer: Value = serde_json::from_str(&text)
            .unwrap_or_else(|err| panic!("{method}: not JSON ({err}): {text}"));
        assert_result(version, result_def, &answer);
        answer
    }

    async fn tool(&self, version: &str, name: &str, arguments: Value) -> ToolReply {
        let params = json!({"name": name, "arguments": arguments});
        let answer = self
            .call(version, "tools/call", params, "CallToolResult")
            .await;
        let reply = tool_reply(&answer["result"]);
        if reply.is_error {
            assert_envelope(&reply.payload);
        }
        reply
    }

    async fn tool_ok(&self, name: &str, arguments: Value) -> Value {
        let reply = self.tool(MODERN, name, arguments.clone()).await;
        assert!(
            !reply.is_error,
            "{name}({arguments}) failed: {}",
            reply.payload
        );
        reply.payload
    }

    async fn status(&self) -> Value {
        let response = self
            .client
            .get(format!("{}/status", self.base))
            .send()
            .await
            .expect("/status answers");
        assert_eq!(response.status().as_u16(), 200);
        response.json().await.expect("/status is JSON")
    }

    async fn generation(&self) -> u64 {
        self.status().await["generation"]
            .as_u64()
            .expect("a generation")
    }

    /// The `sezzlee/catalogGeneration` stamp of `tools/list` (the same on
    /// the three tools).
    async fn stamp(&self, version: &str) -> u64 {
        let answer = self
            .call(version, "tools/list", json!({}), "ListToolsResult")
            .await;
        let tools = answer["result"]["tools"].as_array().expect("tools");
        assert_eq!(tools.len(), 3, "{answer}");
        let stamps: BTreeSet<u64> = tools
            .iter()
            .map(|tool| tool["_meta"][GENERATION].as_u64().expect("a stamp"))
            .collect();
        assert_eq!(stamps.len(), 1, "one stamp per answer: {answer}");
        stamps.into_iter().next().unwrap()
    }

    /// The catalog served, read while the generation stays the same.
    async fn view(&self) -> (u64, View) {
        loop {
            let before = self.generation().await;
            let mut view = View::default();
            let all = json!({"query": "", "limit": 50, "detail": "schema"});
            let reply = self.tool(MODERN, "search_tools", all).await;
            let found = if reply.is_error {
                assert_eq!(
                    reply.payload["error"], "response_too_large",
                    "{}",
                    reply.payload
                );
                let cards = self
                    .tool_ok("search_tools", json!({"query": "", "limit": 50}))
                    .await;
                for name in names(&cards) {
                    let reply = self.tool(MODERN, "load_tool", json!({"name": name})).await;
                    if !reply.is_error {
                        view.definitions.insert(name, reply.payload);
                    }
                }
                cards
            } else {
                for definition in reply.payload["results"].as_array().expect("results") {
                    let name = definition["name"].as_str().expect("a name").to_string();
                    view.definitions.insert(name, definition.clone());
                }
                reply.payload
            };
            let total = found["total"].as_u64().expect("total") as usize;
            assert!(total <= 50, "the storm's catalogs fit one page: {total}");
            assert_eq!(total, found["results"].as_array().unwrap().len());
            let vocabulary: Vec<String> = found
                .get("tags")
                .map(|tags| serde_json::from_value(tags.clone()).expect("tags"))
                .unwrap_or_default();
            for tag in vocabulary {
                let tagged = self
                    .tool_ok(
                        "search_tools",
                        json!({"query": "", "limit": 50, "tags": [tag]}),
                    )
                    .await;
                for name in names(&tagged) {
                    view.tags.entry(name).or_default().insert(tag.clone());
                }
            }
            if self.generation().await == before {
                return (before, view);
            }
        }
    }
}

// ------------------------------------------------------------ listen streams

type Body = Pin<Box<dyn Stream<Item = reqwest::Result<Vec<u8>>> + Send>>;

/// A client reading one `subscriptions/listen` stream.
struct Listener {
    id: String,
    body: Body,
    buffer: Vec<u8>,
    generations: Vec<u64>,
}

impl Listener {
    async fn open(client: &reqwest::Client, url: &str, id: &str) -> Listener {
        let mut body = modern_request(
            1,
            "subscriptions/listen",
            json!({"notifications": {"toolsListChanged": true}}),
        );
        body["id"] = json!(id);
        let response = modern_post(client, url, &body)
            .send()
            .await
            .expect("listen request sent");
        assert_eq!(response.status().as_u16(), 200, "listen {id}");
        assert_eq!(
            response
                .headers()
                .get("content-type")
                .and_then(|v| v.to_str().ok()),
            Some("text/event-stream")
        );
        let stream: Body = Box::pin(
            response
                .bytes_stream()
                .map(|chunk| chunk.map(|bytes| bytes.to_vec())),
        );
        let mut listener = Listener {
            id: id.to_string(),
            body: stream,
            buffer: Vec::new(),
            generations: Vec::new(),
        };
        let ack = listener
            .next_message(PATIENCE)
            .await
            .unwrap_or_else(|err| panic!("{err}"))
            .expect("the acknowledgement");
        assert_eq!(
            ack["method"], "notifications/subscriptions/acknowledged",
            "{ack}"
        );
        assert_eq!(ack["params"]["_meta"][SUBSCRIPTION], id, "{ack}");
        listener
    }

    /// The next message within `within` (`Ok(None)`: none came); `Err`
    /// when the stream ended or broke.
    async fn next_message(&mut self, within: Duration) -> Result<Option<Value>, String> {
        let deadline = tokio::time::Instant::now() + within;
        loop {
            while let Some(end) = self.buffer.windows(2).position(|w| w == b"\n\n") {
                let block: Vec<u8> = self.buffer.drain(..end + 2).collect();
                let text = String::from_utf8(block).expect("SSE is UTF-8");
                let data: Vec<&str> = text
                    .lines()
                    .filter_map(|line| line.strip_prefix("data:"))
                    .map(|data| data.strip_prefix(' ').unwrap_or(data))
                    .collect();
                if !data.is_empty() {
                    let message = serde_json::from_str(&data.join("\n"))
                        .unwrap_or_else(|err| panic!("data is not JSON ({err}): {text:?}"));
                    return Ok(Some(message));
                }
            }
            match tokio::time::timeout_at(deadline, self.body.next()).await {
                Err(_) => return Ok(None),
                Ok(None) => return Err(format!("listen stream {} ended", self.id)),
                Ok(Some(Err(err))) => {
                    return Err(format!("listen stream {} broke: {err}", self.id));
                }
                Ok(Some(Ok(bytes))) => self.buffer.extend_from_slice(&bytes),
            }
        }
    }

    /// Checks a `list_changed` and records its generation, which must be
    /// higher than any before.
    fn take(&mut self, message: &Value) -> u64 {
        record_list_changed(
            &Value::from(self.id.as_str()),
            message,
            &mut self.generations,
        )
    }

    /// Reads until the last generation received is `target`.
    async fn catch_up(&mut self, target: u64) {
        let deadline = tokio::time::Instant::now() + PATIENCE;
        while self.generations.last().copied().unwrap_or(0) < target {
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            let message = self
                .next_message(left)
                .await
                .unwrap_or_else(|err| panic!("{err}"))
                .unwrap_or_else(|| {
                    panic!(
                        "stream {} never received generation {target} (received {:?})",
                        self.id, self.generations
                    )
                });
            self.take(&message);
        }
        assert_eq!(self.generations.last().copied().unwrap_or(0), target);
    }
}

/// A listener read all the time by its own task; `seen` mirrors what it received.
struct Reader {
    seen: Arc<Mutex<Vec<u64>>>,
    task: Option<tokio::task::JoinHandle<Listener>>,
}

impl Reader {
    fn spawn(mut listener: Listener, stop: Arc<AtomicBool>) -> Reader {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let mirror = seen.clone();
        let task = tokio::spawn(async move {
            loop {
                match listener.next_message(Duration::from_millis(100)).await {
                    Ok(Some(message)) => {
                        let generation = listener.take(&message);
                        mirror.lock().unwrap().push(generation);
                    }
                    Ok(None) if stop.load(Ordering::Relaxed) => return listener,
                    Ok(None) => {}
                    Err(err) => panic!("{err}"),
                }
            }
        });
        Reader {
            seen,
            task: Some(task),
        }
    }

    fn last(&self) -> u64 {
        self.seen.lock().unwrap().last().copied().unwrap_or(0)
    }
}

// ------------------------------------------------------------ clients

/// Request outcomes by `"tool outcome"`.
type Tally = Arc<Mutex<BTreeMap<String, u64>>>;

fn count(tally: &Tally, key: String) {
    *tally.lock().unwrap().entry(key).or_default() += 1;
}

/// Arguments valid for a definition: every required argument, by type.
fn arguments_for(definition: &Value) -> Value {
    let schema = &definition["inputSchema"];
    let mut arguments = Map::new();
    for name in schema["required"].as_array().into_iter().flatten() {
        let name = name.as_str().expect("a required name");
        let value = match schema["properties"][name]["type"].as_str() {
            Some("integer") => json!(7),
            Some("number") => json!(1.5),
            Some("boolean") => json!(true),
            Some("array") => json!([]),
            Some("object") => json!({}),
            _ => json!("storm"),
        };
        arguments.insert(name.to_string(), value);
    }
    Value::Object(arguments)
}

/// An agent: searches, loads, invokes (pinned to the version it loaded)
/// and lists tools, in both eras, until `stop`. Any answer outside the
/// contract panics, which ends the task; the storm checks its tasks at
/// every checkpoint.
async fn agent(endpoint: Endpoint, mut rng: Rng, stop: Arc<AtomicBool>, tally: Tally) {
    let mut names_seen: Vec<String> = Vec::new();
    let mut loaded: BTreeMap<String, Value> = BTreeMap::new();
    let mut last_stamp = 0;
    let mut vanished = 0;
    while !stop.load(Ordering::Relaxed) {
        let version = if rng.chance(15) {
            *rng.pick(&LEGACY)
        } else {
            MODERN
        };
        let era = if version == MODERN { "" } else { " (legacy)" };
        match rng.below(10) {
            0..=3 => {
                let query = if rng.chance(25) {
                    String::new()
                } else {
                    (0..rng.range(1, 3))
                        .map(|_| *rng.pick(WORDS))
                        .collect::<Vec<_>>()
                        .join(" ")
                };
                let mut arguments = json!({"query": query, "limit": rng.range(1, 50)});
                let schema = rng.chance(15);
                if schema {
                    arguments["detail"] = json!("schema");
                }
                if rng.chance(10) {
                    arguments["tags"] = json!([rng.pick(TAGS).to_lowercase()]);
                }
                let reply = endpoint
                    .tool(version, "search_tools", arguments.clone())
                    .await;
                if reply.is_error {
                    assert!(
                        schema && reply.payload["error"] == "response_too_large",
                        "search_tools({arguments}): {}",
                        reply.payload
                    );
                    count(&tally, "search_tools response_too_large".into());
                } else {
                    let found = names(&reply.payload);
                    let total = reply.payload["total"].as_u64().expect("total") as usize;
                    assert!(total >= found.len(), "{}", reply.payload);
                    names_seen.extend(found);
                    names_seen.sort();
                    names_seen.dedup();
                    count(&tally, format!("search_tools ok{era}"));
                }
            }
            4..=5 => {
                let name = if names_seen.is_empty() || rng.chance(5) {
                    vanished += 1;
                    format!("never_was_{vanished}")
                } else {
                    rng.pick(&names_seen).clone()
                };
                let reply = endpoint
                    .tool(version, "load_tool", json!({"name": name}))
                    .await;
                if reply.is_error {
                    assert_eq!(
                        reply.payload["error"], "unknown_tool",
                        "load_tool({name}): {}",
                        reply.payload
                    );
                    names_seen.retain(|known| *known != name);
                    loaded.remove(&name);
                    count(&tally, format!("load_tool unknown_tool{era}"));
                } else {
                    assert_eq!(reply.payload["name"], name.as_str(), "{}", reply.payload);
                    assert!(reply.payload["version"].is_string(), "{}", reply.payload);
                    loaded.insert(name, reply.payload);
                    count(&tally, format!("load_tool ok{era}"));
                }
            }
            6..=8 => {
                let Some(name) = (!loaded.is_empty())
                    .then(|| loaded.keys().nth(rng.below(loaded.len())).cloned())
                    .flatten()
                else {
                    tokio::time::sleep(rng.millis(5)).await;
                    continue;
                };
                let definition = &loaded[&name];
                let arguments = json!({
                    "name": name,
                    "arguments": arguments_for(definition),
                    "version": definition["version"],
                });
                let reply = endpoint
                    .tool(version, "invoke_tool", arguments.clone())
                    .await;
                if reply.is_error {
                    let code = reply.payload["error"].as_str().unwrap_or_default();
                    assert!(
                        matches!(code, "unknown_tool" | "tool_changed"),
                        "invoke_tool({arguments}): {}",
                        reply.payload
                    );
                    loaded.remove(&name);
                    count(&tally, format!("invoke_tool {code}{era}"));
                } else {
                    assert_eq!(reply.payload["status"], 200, "{}", reply.payload);
                    assert_eq!(reply.payload["body"], json!({"ok": true}));
                    count(&tally, format!("invoke_tool ok{era}"));
                }
            }
            _ => {
                let stamp = endpoint.stamp(version).await;
                assert!(
                    stamp >= last_stamp,
                    "tools/list stamps never go back: {stamp} after {last_stamp}"
                );
                last_stamp = stamp;
                count(&tally, format!("tools/list ok{era}"));
            }
        }
        tokio::time::sleep(Duration::from_millis(2) + rng.millis(8)).await;
    }
}

/// Fails the test with a task's own panic when it ended early.
async fn ensure_running<T>(tasks: &mut [Option<tokio::task::JoinHandle<T>>], what: &str) {
    for slot in tasks.iter_mut() {
        if slot.as_ref().is_some_and(|task| task.is_finished()) {
            let task = slot.take().unwrap();
            match task.await {
                Err(err) if err.is_panic() => std::panic::resume_unwind(err.into_panic()),
                _ => panic!("a {what} task ended before the storm did"),
            }
        }
    }
}

// ------------------------------------------------------------ the storm

/// On failure, the seed and the last edits.
struct Reproduce {
    watch: Watch,
    seed: u64,
    replay: u64,
    trace: Arc<Mutex<Vec<String>>>,
}

impl Drop for Reproduce {
    fn drop(&mut self) {
        if std::thread::panicking() {
            let trace = self
                .trace
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner());
            let recent = &trace[trace.len().saturating_sub(40)..];
            eprintln!(
                "\nEDIT STORM FAILED ({} mode), seed {:#x}. Reproduce with\n  \
                 SEZZLEE_STORM_SEED={:#x} cargo test --test it edit_storm -- --nocapture\n\
                 The last edits:\n  {}",
                self.watch.name(),
                self.seed,
                self.replay,
                recent.join("\n  ")
            );
        }
    }
}

/// Figures of one quiet-period check, summed over the run.
#[derive(Default)]
struct Checks {
    checkpoints: usize,
    strict: usize,
    changed: usize,
    transient: usize,
    oracle_runs: usize,
    oracle_cached: usize,
    load_checks: usize,
}

/// Where the storm's time went.
#[derive(Debug, Default)]
struct Phases {
    /// Applying the edits (with the pauses of bursts and partial writes).
    edits: Duration,
    /// `sezzlee check --emit`.
    oracle: Duration,
    /// Waiting for a change to be picked up on its own.
    picked_up: Duration,
    /// Waiting for the rescan the sentinel asks for.
    sentinel: Duration,
    /// Reading and comparing the served catalog, listeners, generations.
    checks: Duration,
}

async fn run(watch: Watch, seed: u64, target_edits: usize) {
    let started = Instant::now();
    // What SEZZLEE_STORM_SEED must say to replay this run.
    let replay = match watch {
        Watch::Events => seed,
        Watch::Poll => seed ^ POLL_SALT,
    };
    println!(
        "edit storm ({} mode): seed {seed:#x} (SEZZLEE_STORM_SEED={replay:#x}), {target_edits} edits",
        watch.name()
    );
    let trace = Arc::new(Mutex::new(Vec::new()));
    let _reproduce = Reproduce {
        watch,
        seed,
        replay,
        trace: trace.clone(),
    };
    let mut rng = Rng(seed);
    let backend = Backend::start().await;
    let folder_dir = tempfile::tempdir().expect("catalogs folder");
    let mut folder = Folder::create(folder_dir.path(), &backend.base, rng.fork(), trace);
    folder.sentinel(0);
    let (server, endpoint) = Server::start(folder_dir.path(), watch);

    // The oracle, run once per distinct folder content.
    let mut oracles: HashMap<BTreeMap<String, Vec<u8>>, Expected> = HashMap::new();
    let mut checks = Checks::default();

    // The first checkpoint: the folder as written, generation 0.
    let files = folder.serving();
    let expected = check_emit(&files);
    checks.oracle_runs += 1;
    oracles.insert(files, expected.clone());
    await_sentinel(&endpoint, 0).await;
    let (generation, view) = endpoint.view().await;
    assert_eq!(generation, 0);
    assert_eq!(
        view,
        *expected.view,
        "{}",
        describe_difference(&view, &expected.view)
    );
    assert!(
        expected.view.definitions.len() >= 10,
        "a catalog worth storming: {:?}",
        expected.view.definitions.keys()
    );
    let mut previous_content = expected.content.clone();
    let mut previous_generation = 0u64;
    folder.settle();

    // Listeners opened at the start: three read all the time, one only now and then.
    let stop = Arc::new(AtomicBool::new(false));
    let listen_client = reqwest::Client::new();
    let mut readers: Vec<Reader> = Vec::new();
    for id in ["reader-1", "reader-2", "reader-3"] {
        let listener = Listener::open(&listen_client, &endpoint.url, id).await;
        readers.push(Reader::spawn(listener, stop.clone()));
    }
    let mut slow = Listener::open(&listen_client, &endpoint.url, "slow-reader").await;
    let tally: Tally = Arc::default();
    let mut agents: Vec<Option<tokio::task::JoinHandle<()>>> = (0..3)
        .map(|_| {
            Some(tokio::spawn(agent(
                endpoint.clone(),
                rng.fork(),
                stop.clone(),
                tally.clone(),
            )))
        })
        .collect();

    let mut bursts_by_shape: BTreeMap<&str, usize> = BTreeMap::new();
    let mut phases = Phases::default();
    let mut k = 0;
    while folder.edits < target_edits {
        k += 1;
        let label = format!("burst {k}");
        let mut clock = Instant::now();
        // The burst: one edit alone, a few faster than the debounce, or a
        // hammering of one or two paths.
        let shape = match rng.below(100) {
            0..=34 => "single",
            35..=84 => "burst",
            _ => "hammer",
        };
        *bursts_by_shape.entry(shape).or_default() += 1;
        let mut atomic = true;
        let edits_in_burst = match shape {
            "single" => 1,
            "burst" => rng.range(2, 8),
            _ => rng.range(10, 25),
        };
        for i in 0..edits_in_burst {
            atomic &= folder.edit(&label).await;
            if i + 1 < edits_in_burst {
                let gap = match shape {
                    "hammer" => rng.millis(3),
                    _ => rng.millis(DEBOUNCE_MS / 3),
                };
                tokio::time::sleep(gap).await;
            }
        }
        let fixed = folder.fix_up(&label);
        phases.edits += clock.elapsed();
        clock = Instant::now();
        let strict = edits_in_burst == 1 && atomic && fixed == 0;

        // ---- the quiet period
        ensure_running(&mut agents, "client").await;
        let mut reader_tasks: Vec<_> = readers.iter_mut().map(|r| r.task.take()).collect();
        ensure_running(&mut reader_tasks, "listen").await;
        for (reader, task) in readers.iter_mut().zip(reader_tasks) {
            reader.task = task;
        }
        let serving = folder.serving();
        // A change must be picked up on its own (the watcher or the poll)
        // before the sentinel makes a rescan certain; the sentinel goes as
        // soon as a new generation shows, while the oracle may still run.
        let mut sentinel_sent = false;
        let expected = match oracles.get(&serving) {
            Some(expected) => {
                checks.oracle_cached += 1;
                expected.clone()
            }
            None => {
                let files = serving.clone();
                let mut task = tokio::task::spawn_blocking(move || check_emit(&files));
                let expected = loop {
                    tokio::select! {
                        done = &mut task => break done.unwrap(),
                        _ = tokio::time::sleep(Duration::from_millis(5)) => {
                            if !sentinel_sent && endpoint.generation().await > previous_generation {
                                folder.sentinel(k);
                                sentinel_sent = true;
                            }
                        }
                    }
                };
                checks.oracle_runs += 1;
                oracles.insert(serving, expected.clone());
                expected
            }
        };
        phases.oracle += clock.elapsed();
        clock = Instant::now();
        let changed = expected.content != previous_content;
        if changed && !sentinel_sent {
            let deadline = Instant::now() + PATIENCE;
            while endpoint.generation().await <= previous_generation {
                assert!(
                    Instant::now() < deadline,
                    "{label}: the served content must change, and no new generation came within {PATIENCE:?}"
                );
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        }
        phases.picked_up += clock.elapsed();
        clock = Instant::now();
        if !sentinel_sent {
            folder.sentinel(k);
        }
        await_sentinel(&endpoint, k).await;
        phases.sentinel += clock.elapsed();
        clock = Instant::now();
        let deadline = Instant::now() + PATIENCE / 2;
        let (generation, view) = loop {
            let (generation, view) = endpoint.view().await;
            if view == *expected.view {
                break (generation, view);
            }
            if Instant::now() >= deadline {
                let status = endpoint.status().await;
                let logs = server.logs();
                let recent: Vec<&str> = logs.lines().rev().take(30).collect();
                panic!(
                    "{label}: the served catalog (generation {generation}) is not the folder's:\n  {}\n\
                     served diagnostics: {}\nserver log (last lines, newest first):\n  {}",
                    describe_difference(&view, &expected.view),
                    status["diagnostics"],
                    recent.join("\n  ")
                );
            }
            checks.transient += 1;
            tokio::time::sleep(Duration::from_millis(20)).await;
        };
        drop(view);
        assert_every_copy_built(&endpoint, &label).await;

        // ---- the generation
        if changed {
            assert!(
                generation > previous_generation,
                "{label}: the content changed, the generation stayed {generation}"
            );
            checks.changed += 1;
        } else {
            assert!(
                generation >= previous_generation,
                "{label}: the generation went back from {previous_generation} to {generation}"
            );
            assert_ne!(
                generation,
                previous_generation + 1,
                "{label}: one bump, yet the content is what it was"
            );
        }
        if strict {
            let expected_generation = previous_generation + u64::from(changed);
            assert_eq!(
                generation, expected_generation,
                "{label}: one atomic edit (changed: {changed}): generation {previous_generation} → {generation}"
            );
            checks.strict += 1;
        }
        assert_eq!(endpoint.stamp(MODERN).await, generation, "tools/list stamp");

        // ---- a few tools loaded one by one, and one that does not exist
        let served_names: Vec<&String> = expected.view.definitions.keys().collect();
        for _ in 0..2 {
            if served_names.is_empty() {
                break;
            }
            let name = *rng.pick(&served_names);
            let loaded = endpoint.tool_ok("load_tool", json!({"name": name})).await;
            assert_eq!(
                loaded, expected.view.definitions[name],
                "{label}: load_tool {name}"
            );
            checks.load_checks += 1;
        }
        let missing = endpoint
            .tool(MODERN, "load_tool", json!({"name": "storm_never_served"}))
            .await;
        assert_eq!(missing.payload["error"], "unknown_tool");

        // ---- the listeners
        let deadline = Instant::now() + PATIENCE;
        for (index, reader) in readers.iter().enumerate() {
            while reader.last() < generation {
                assert!(
                    Instant::now() < deadline,
                    "{label}: reader-{} never received generation {generation} (received {:?})",
                    index + 1,
                    reader.seen.lock().unwrap()
                );
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            assert_eq!(reader.last(), generation, "reader-{}", index + 1);
        }
        if k % 7 == 0 {
            slow.catch_up(generation).await;
        }

        phases.checks += clock.elapsed();
        checks.checkpoints += 1;
        previous_content = expected.content.clone();
        previous_generation = generation;
        folder.settle();
        folder.note(format!("{label}: checked at generation {generation}"));
    }

    // ---- the end: every stream still open, the server alive, its log clean
    slow.catch_up(previous_generation).await;
    let status = endpoint.status().await;
    assert_eq!(
        status["listenStreams"], 4,
        "every listen stream is still open"
    );
    stop.store(true, Ordering::Relaxed);
    for task in agents.iter_mut() {
        if let Some(task) = task.take()
            && let Err(err) = task.await
        {
            std::panic::resume_unwind(err.into_panic());
        }
    }
    let mut notifications = Vec::new();
    for reader in &mut readers {
        let task = reader.task.take().expect("the reader ran to the end");
        let mut listener = match task.await {
            Ok(listener) => listener,
            Err(err) => std::panic::resume_unwind(err.into_panic()),
        };
        // Open to the end: nothing more, and not ended.
        let after = listener
            .next_message(Duration::from_millis(50))
            .await
            .unwrap_or_else(|err| panic!("{err}"));
        assert!(after.is_none(), "{after:?}");
        notifications.push(listener.generations.len());
    }
    let after = slow
        .next_message(Duration::from_millis(50))
        .await
        .unwrap_or_else(|err| panic!("{err}"));
    assert!(after.is_none(), "{after:?}");
    notifications.push(slow.generations.len());

    let mut server = server;
    assert!(
        server.child.try_wait().unwrap().is_none(),
        "the server is still running"
    );
    // The logs come through a pipe: wait for the last swap's line.
    let logs = {
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            let logs = server.logs();
            let seen = swaps_logged(&logs).last().copied();
            if seen == Some(previous_generation) || Instant::now() > deadline {
                break logs;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    for fatal in [
        "panicked",
        "catalog rebuild failed",
        "cannot read the catalogs folder",
        "cannot watch",
    ] {
        let line = logs.lines().find(|line| line.contains(fatal));
        assert!(line.is_none(), "the server logged {fatal:?}: {line:?}");
    }
    let swaps = swaps_logged(&logs);
    assert!(
        swaps.windows(2).all(|w| w[1] == w[0] || w[1] == w[0] + 1),
        "each swap keeps the generation or adds one: {swaps:?}"
    );
    assert_eq!(swaps.last().copied(), Some(previous_generation));
    assert!(swaps.first().is_some_and(|&first| first <= 1), "{swaps:?}");
    let bumps = swaps.windows(2).filter(|w| w[1] > w[0]).count() + usize::from(swaps[0] == 1);
    assert_eq!(bumps as u64, previous_generation, "{swaps:?}");
    let _ = server.child.kill();

    // ---- the figures
    let by_kind = folder
        .by_kind
        .iter()
        .map(|(kind, n)| format!("{kind} {n}"))
        .collect::<Vec<_>>()
        .join(", ");
    let tally = tally.lock().unwrap();
    let requests: u64 = tally.values().sum();
    let outcomes = tally
        .iter()
        .map(|(key, n)| format!("{key} {n}"))
        .collect::<Vec<_>>()
        .join(", ");
    let shapes = bursts_by_shape
        .iter()
        .map(|(shape, n)| format!("{shape} {n}"))
        .collect::<Vec<_>>()
        .join(", ");
    println!(
        "edit storm ({} mode, debounce {DEBOUNCE_MS} ms{}), seed {seed:#x}: {} edits in {k} bursts ({shapes}), {:.1} s\n  \
         edits by kind: {by_kind}\n  \
         quiet periods checked: {} (+1 at the start; content changed in {}, single atomic edits with exact generation checks {}, \
         served catalog not yet settled when first read {}), tools loaded one by one and compared {}\n  \
         oracle (last good content): sezzlee check --emit run {} times ({} checkpoints reused a folder content); \
         no diagnostic said \"could not be read again\"\n  \
         generations: 0 → {previous_generation}; swaps logged {} (each +0 or +1)\n  \
         client requests: {requests} ({outcomes}); backend calls {}; none failed outside the contract\n  \
         listen streams: 4 open from start to end; list_changed received {:?} (three readers, one slow)\n  \
         server log: no panic, no failed rebuild\n  \
         time: {phases:?}",
        watch.name(),
        if watch == Watch::Poll {
            format!(", poll {POLL_MS} ms")
        } else {
            String::new()
        },
        folder.edits,
        started.elapsed().as_secs_f64(),
        checks.checkpoints,
        checks.changed,
        checks.strict,
        checks.transient,
        checks.load_checks,
        checks.oracle_runs,
        checks.oracle_cached,
        swaps.len(),
        backend.count(),
        notifications,
    );
}

/// Fails when a diagnostic in `/status` says a file "could not be read
/// again": the gateway keeps every file's last good bytes, so each
/// document is built from them; that diagnostic means a kept copy failed
/// to build, and its tools were kept as they were or left out.
async fn assert_every_copy_built(endpoint: &Endpoint, label: &str) {
    let status = endpoint.status().await;
    let unread: Vec<&Value> = status["diagnostics"]
        .as_array()
        .expect("diagnostics")
        .iter()
        .filter(|d| {
            d["message"]
                .as_str()
                .unwrap_or("")
                .contains("could not be read again")
        })
        .collect();
    assert!(
        unread.is_empty(),
        "{label}: files that could not be read again from their kept copy: {unread:?}"
    );
}

/// Waits until `/status` shows the sentinel of checkpoint `k`: a rescan
/// read the folder after every edit before it.
async fn await_sentinel(endpoint: &Endpoint, k: usize) {
    let marker = format!("\"{}\"", marker(k));
    let deadline = Instant::now() + PATIENCE;
    loop {
        let status = endpoint.status().await;
        let seen = status["diagnostics"]
            .as_array()
            .expect("diagnostics")
            .iter()
            .any(|d| {
                d["file"] == SENTINEL && d["message"].as_str().unwrap_or("").contains(&marker)
            });
        if seen {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "no rescan read the sentinel of checkpoint {k} within {PATIENCE:?}"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// The generation of every swap the server logged ("catalog reloaded").
fn swaps_logged(logs: &str) -> Vec<u64> {
    logs.lines()
        .filter(|line| line.contains("catalog reloaded"))
        .filter_map(|line| {
            let at = line.find("generation=")? + "generation=".len();
            line[at..]
                .split(|c: char| !c.is_ascii_digit())
                .next()?
                .parse()
                .ok()
        })
        .collect()
}
