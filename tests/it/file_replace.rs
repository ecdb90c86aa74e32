//! Files replaced in two steps while serving, under CPU load
//! (docs/contract.md §6).
//!
//! Why: `git checkout catalogs/orders.yaml` on a loaded server once
//! published a generation with 0 tools, announced on `list_changed` to
//! every listener, and the generation with the 9 tools 70 ms later. Git
//! (like several editors) replaces a file in two steps, unlink then
//! create, and a rescan between them saw the file deleted. A missing file
//! now keeps serving until a rescan the deletion grace later still misses
//! it.
//!
//! Each test runs the real gateway on a loopback port, its reloader
//! watching a temporary folder (file-system events, the production
//! debounce and grace), a listen stream recording every generation it is
//! told of (and `/status` asked at once for that generation's tools), an
//! in-process sampler recording the tools of every snapshot it sees, and
//! threads burning CPU (bounded in time) so the steps and the rescans
//! interleave as on a busy machine. Then the file is replaced, round after
//! round, the real way: `git checkout` (plain, and through a slow smudge
//! filter as git-lfs runs one), `mv` of a new file over the old, a backup
//! rename then a new file (vim's default), a temporary file renamed over,
//! truncate then write, unlink then create, with pauses between the steps
//! from a few milliseconds to a few debounces (all within the grace).
//! Before and after each round the document has the same nine tools (one
//! description differs, so the round is one change): exactly one
//! generation must be announced, and every generation seen must have the
//! nine tools.
//!
//! A ConfigMap update that removes a key and changes another is still one
//! generation. A real deletion still takes effect, after the grace; the
//! SIGHUP path (the real binary, `--watch off`) holds a missing file the
//! same way and confirms the deletion on its own after the grace; a reload
//! that takes every tool of a folder away logs a warning naming the folder.
#![cfg(unix)]

use crate::support::*;
use futures_util::StreamExt;
use serde_json::{Value, json};
use sezzlee_gateway::settings::{Settings, WatchMode};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The document's tools.
const TOOLS: usize = 9;
/// Longest wait for something that must happen (only reached on failure).
const PATIENCE: Duration = Duration::from_secs(15);
/// Longest the CPU burners run, whatever happens to the test.
const BURN_AT_MOST: Duration = Duration::from_secs(60);
/// Pauses between the two steps of a replacement: from a few milliseconds
/// to three debounces, all well within the grace.
const PAUSES_MS: [u64; 4] = [3, 20, 90, 150];

/// The document: nine `GET`s; `edition` is in the first one's description
/// only, so two editions have the same tools and differ by one version.
/// Small enough (under a page) that a write of it is never read half done.
fn document(edition: &str) -> String {
    let mut paths = serde_json::Map::new();
    for i in 0..TOOLS {
        let description = if i == 0 {
            format!("Orders, edition {edition}.")
        } else {
            format!("Operation {i}.")
        };
        paths.insert(
            format!("/items{i}"),
            json!({"get": {
                "operationId": format!("op_{i}"),
                "description": description,
                "responses": {"200": {"description": "ok"}}
            }}),
        );
    }
    let text = serde_yaml_ng::to_string(&json!({
        "openapi": "3.0.3",
        "info": {"title": "replaced", "version": "1"},
        "servers": [{"url": "http://127.0.0.1:9/api"}],
        "paths": paths
    }))
    .expect("YAML");
    assert!(text.len() < 4096, "one page: {} bytes", text.len());
    text
}

/// The edition a served catalog's first tool describes.
fn edition_of(gw: &TestGateway) -> Option<String> {
    let served = gw.gateway.store.current();
    let tool = served.catalog.tool("op_0")?;
    let description = tool.definition()["description"].as_str()?.to_string();
    Some(
        description
            .strip_prefix("Orders, edition ")?
            .trim_end_matches('.')
            .to_string(),
    )
}

// ------------------------------------------------------------ load

/// Threads spinning until dropped (at most [`BURN_AT_MOST`]).
struct Burn {
    stop: Arc<AtomicBool>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

impl Burn {
    fn start(threads: usize) -> Burn {
        let stop = Arc::new(AtomicBool::new(false));
        let threads = (0..threads)
            .map(|seed| {
                let stop = stop.clone();
                std::thread::spawn(move || {
                    let until = Instant::now() + BURN_AT_MOST;
                    let mut x = seed as u64 + 1;
                    while !stop.load(Ordering::Relaxed) && Instant::now() < until {
                        for _ in 0..10_000 {
                            x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
                        }
                        std::hint::black_box(x);
                    }
                })
            })
            .collect();
        Burn { stop, threads }
    }
}

impl Drop for Burn {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for thread in self.threads.drain(..) {
            let _ = thread.join();
        }
    }
}

// ------------------------------------------------------------ observers

/// Every generation a listener was told of, and the tools of each
/// generation seen (by `/status` when it was announced, or the sampler).
#[derive(Default)]
struct Seen {
    announced: Vec<u64>,
    tools: BTreeMap<u64, usize>,
}

/// A served gateway with its observers.
struct Served {
    gw: TestGateway,
    dir: PathBuf,
    seen: Arc<Mutex<Seen>>,
    stop: Arc<AtomicBool>,
    sampler: Option<std::thread::JoinHandle<()>>,
    listener: tokio::task::JoinHandle<()>,
    _watcher: Option<notify::RecommendedWatcher>,
}

impl Drop for Served {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        self.listener.abort();
        if let Some(sampler) = self.sampler.take() {
            let _ = sampler.join();
        }
    }
}

impl Served {
    /// Serves `dir` (its files already written) with the production
    /// debounce and grace, watched per `watch`.
    async fn start(dir: &Path, watch: WatchMode) -> Served {
        let settings = Settings {
            watch,
            poll_interval: Duration::from_millis(100),
            ..test_settings(dir)
        };
        assert_eq!(settings.debounce, Duration::from_millis(50));
        assert_eq!(settings.deletion_grace, Duration::from_millis(500));
        let (gw, _reloader, watcher) = TestGateway::start_reloading(settings, None).await;
        let seen = Arc::new(Mutex::new(Seen::default()));
        let stop = Arc::new(AtomicBool::new(false));
        let sampler = {
            let gateway = gw.gateway.clone();
            let seen = seen.clone();
            let stop = stop.clone();
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    let served = gateway.store.current();
                    let tools = served.catalog.tools().len();
                    seen.lock()
                        .unwrap()
                        .tools
                        .entry(served.generation)
                        .or_insert(tools);
                    drop(served);
                    std::thread::sleep(Duration::from_micros(300));
                }
            })
        };
        let listener = tokio::spawn(listen(gw.url.clone(), gw.base.clone(), seen.clone()));
        let served = Served {
            gw,
            dir: dir.to_path_buf(),
            seen,
            stop,
            sampler: Some(sampler),
            listener,
            _watcher: watcher,
        };
        // The listener is subscribed once a change reaches it; until then
        // nothing changes, so wait for its stream to be open.
        served.await_streams(1).await;
        served
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    fn generation(&self) -> u64 {
        self.gw.gateway.store.current().generation
    }

    async fn await_streams(&self, streams: u64) {
        let deadline = Instant::now() + PATIENCE;
        while self.gw.status().await["listenStreams"] != streams {
            assert!(Instant::now() < deadline, "the listen stream never opened");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    /// Waits until `edition` serves, then for the grace and more (any
    /// deletion held meanwhile is confirmed or called off by then).
    async fn await_edition(&self, edition: &str, label: &str) {
        let deadline = Instant::now() + PATIENCE;
        while edition_of(&self.gw).as_deref() != Some(edition) {
            assert!(
                Instant::now() < deadline,
                "{label}: edition {edition} never served (serving {:?})",
                edition_of(&self.gw)
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        tokio::time::sleep(self.gw.gateway.settings.deletion_grace + Duration::from_millis(300))
            .await;
    }

    /// Runs `replace` (blocking steps, off the runtime) to go from the
    /// edition served to `edition`, then checks what was published: one
    /// generation, announced, with every tool.
    async fn round(&self, label: &str, edition: &str, replace: impl FnOnce() + Send + 'static) {
        let before = self.generation();
        let announced_before = self.seen.lock().unwrap().announced.len();
        tokio::task::spawn_blocking(replace).await.unwrap();
        self.await_edition(edition, label).await;
        // The listener may lag the store a moment.
        let deadline = Instant::now() + PATIENCE;
        while self.seen.lock().unwrap().announced.last() != Some(&self.generation()) {
            assert!(
                Instant::now() < deadline,
                "{label}: the listener was not told"
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        // Copied out: a failed check must not poison the observers' lock.
        let (announced, seen) = {
            let seen = self.seen.lock().unwrap();
            (
                seen.announced[announced_before..].to_vec(),
                seen.tools.clone(),
            )
        };
        for generation in &announced {
            let tools = seen.get(generation).unwrap_or_else(|| {
                panic!(
                    "{label}: generation {generation} was announced and replaced before \
                     anything could see it (announced {announced:?}, seen {seen:?})"
                )
            });
            assert_eq!(
                *tools, TOOLS,
                "{label}: generation {generation} published {tools} tools, the document has \
                 {TOOLS} before and after (announced {announced:?}, seen {seen:?})"
            );
        }
        for (generation, tools) in seen.range(before + 1..) {
            assert_eq!(
                *tools, TOOLS,
                "{label}: generation {generation} served {tools} tools (seen {seen:?})"
            );
        }
        assert_eq!(
            announced,
            [before + 1],
            "{label}: one change, one generation (seen {seen:?})"
        );
    }
}

/// Reads one listen stream: records each `list_changed` generation, and
/// asks `/status` at once for the tools of that generation.
async fn listen(url: String, base: String, seen: Arc<Mutex<Seen>>) {
    let client = reqwest::Client::new();
    let mut body = modern_request(
        1,
        "subscriptions/listen",
        json!({"notifications": {"toolsListChanged": true}}),
    );
    body["id"] = json!("replace");
    let response = modern_post(&client, &url, &body)
        .send()
        .await
        .expect("listen request sent");
    assert_eq!(response.status().as_u16(), 200);
    let mut stream = response.bytes_stream();
    let mut buffer: Vec<u8> = Vec::new();
    let mut generations = Vec::new();
    while let Some(chunk) = stream.next().await {
        buffer.extend_from_slice(&chunk.expect("the listen stream reads"));
        while let Some(end) = buffer.windows(2).position(|w| w == b"\n\n") {
            let block: Vec<u8> = buffer.drain(..end + 2).collect();
            let text = String::from_utf8(block).expect("SSE is UTF-8");
            let data: Vec<&str> = text
                .lines()
                .filter_map(|line| line.strip_prefix("data:"))
                .map(|data| data.strip_prefix(' ').unwrap_or(data))
                .collect();
            if data.is_empty() {
                continue;
            }
            let message: Value = serde_json::from_str(&data.join("\n")).expect("data is JSON");
            if message["method"] != "notifications/tools/list_changed" {
                continue;
            }
            let generation = record_list_changed(&json!("replace"), &message, &mut generations);
            seen.lock().unwrap().announced.push(generation);
            let status: Value = client
                .get(format!("{base}/status"))
                .send()
                .await
                .expect("/status")
                .json()
                .await
                .expect("/status is JSON");
            if let (Some(now), Some(tools)) =
                (status["generation"].as_u64(), status["tools"].as_u64())
            {
                seen.lock()
                    .unwrap()
                    .tools
                    .entry(now)
                    .or_insert(tools as usize);
            }
        }
    }
}

/// A folder holding `orders.yaml` at edition `start`.
fn folder(start: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temporary catalogs folder");
    std::fs::write(dir.path().join("orders.yaml"), document(start)).unwrap();
    dir
}

fn run(program: &str, args: &[&str], dir: &Path) {
    let output = std::process::Command::new(program)
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("HOME", dir)
        .output()
        .unwrap_or_else(|err| panic!("{program} runs: {err}"));
    assert!(
        output.status.success(),
        "{program} {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
}

fn pause(ms: u64) {
    std::thread::sleep(Duration::from_millis(ms));
}

// ------------------------------------------------------------ git

/// A git repository as the catalogs folder, `orders.yaml` committed at
/// edition `committed`; `.git` is hidden, so never part of the catalog.
fn repository(committed: &str) -> tempfile::TempDir {
    let dir = folder(committed);
    let git = |args: &[&str]| run("git", args, dir.path());
    git(&["init", "-q"]);
    git(&["config", "user.name", "sezzlee tests"]);
    git(&["config", "user.email", "tests@sezzlee.invalid"]);
    git(&["add", "orders.yaml"]);
    git(&["commit", "-qm", "orders"]);
    dir
}

/// Edits the file away from the committed edition, then restores it with
/// `git checkout`, round after round; `slow`: through a smudge filter
/// that takes longer than the debounce.
async fn checkout_rounds(slow: bool, name: &str) {
    let dir = repository("committed");
    if slow {
        let git = |args: &[&str]| run("git", args, dir.path());
        git(&["config", "filter.slow.smudge", "sleep 0.15; cat"]);
        git(&["config", "filter.slow.clean", "cat"]);
        std::fs::write(
            dir.path().join(".git/info/attributes"),
            "orders.yaml filter=slow\n",
        )
        .unwrap();
    }
    let served = Served::start(dir.path(), WatchMode::Events).await;
    let _burn = Burn::start(2);
    for round in 0..4 {
        let edited = format!("edited {round}");
        let path = served.path("orders.yaml");
        let content = document(&edited);
        served
            .round(&format!("{name} {round}: edit"), &edited, move || {
                std::fs::write(path, content).unwrap();
            })
            .await;
        let at = served.dir.clone();
        served
            .round(
                &format!("{name} {round}: checkout"),
                "committed",
                move || {
                    run("git", &["checkout", "--", "orders.yaml"], &at);
                },
            )
            .await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "slow campaign: `cargo test -- --include-ignored` runs it, as CI does"]
async fn git_checkout_of_a_file_never_empties_the_catalog() {
    checkout_rounds(false, "git checkout").await;
}

/// A smudge filter (git-lfs runs one for every file it tracks) runs after
/// git unlinked the file and before it creates it again: the file is
/// missing for as long as the filter takes, here longer than the debounce.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "slow campaign: `cargo test -- --include-ignored` runs it, as CI does"]
async fn git_checkout_through_a_slow_smudge_filter_never_empties_the_catalog() {
    checkout_rounds(true, "git checkout (slow smudge)").await;
}

// ------------------------------------------------------------ shells and editors

/// Rounds of `replace(served folder, new edition's bytes, pause)`, each
/// pause of [`PAUSES_MS`] twice.
async fn rounds(name: &str, replace: fn(&Path, &str, u64)) {
    let dir = folder("start");
    let served = Served::start(dir.path(), WatchMode::Events).await;
    let _burn = Burn::start(2);
    for (round, pause) in PAUSES_MS.iter().chain(PAUSES_MS.iter()).enumerate() {
        let edition = format!("{round}");
        let content = document(&edition);
        let at = served.dir.clone();
        let pause = *pause;
        served
            .round(
                &format!("{name} (round {round}, {pause} ms between the steps)"),
                &edition,
                move || replace(&at, &content, pause),
            )
            .await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "slow campaign: `cargo test -- --include-ignored` runs it, as CI does"]
async fn mv_of_a_new_file_over_the_old_never_empties_the_catalog() {
    rounds("mv over", |dir, content, pause_ms| {
        let staging = tempfile::tempdir_in(dir.parent().unwrap()).unwrap();
        let new = staging.path().join("orders.yaml");
        std::fs::write(&new, content).unwrap();
        pause(pause_ms);
        run(
            "mv",
            &[
                new.to_str().unwrap(),
                dir.join("orders.yaml").to_str().unwrap(),
            ],
            dir,
        );
    })
    .await;
}

/// vim's default save (`backupcopy=auto` on a plain file), and Emacs's:
/// the original renamed to a backup, the new file written, the backup
/// removed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "slow campaign: `cargo test -- --include-ignored` runs it, as CI does"]
async fn backup_rename_then_write_never_empties_the_catalog() {
    rounds("backup then write", |dir, content, pause_ms| {
        run("mv", &["orders.yaml", "orders.yaml~"], dir);
        pause(pause_ms);
        std::fs::write(dir.join("orders.yaml"), content).unwrap();
        std::fs::remove_file(dir.join("orders.yaml~")).unwrap();
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "slow campaign: `cargo test -- --include-ignored` runs it, as CI does"]
async fn write_temp_then_rename_never_empties_the_catalog() {
    rounds("temp then rename", |dir, content, pause_ms| {
        let temp = dir.join(".orders.yaml.swp-4412");
        std::fs::write(&temp, content).unwrap();
        pause(pause_ms);
        std::fs::rename(&temp, dir.join("orders.yaml")).unwrap();
    })
    .await;
}

/// The file is empty between the steps: an empty file is a file caught
/// mid-write, and its last good content keeps serving.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "slow campaign: `cargo test -- --include-ignored` runs it, as CI does"]
async fn truncate_then_write_never_empties_the_catalog() {
    rounds("truncate then write", |dir, content, pause_ms| {
        use std::io::Write;
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .open(dir.join("orders.yaml"))
            .unwrap();
        file.set_len(0).unwrap();
        file.sync_all().unwrap();
        pause(pause_ms);
        file.write_all(content.as_bytes()).unwrap();
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unlink_then_create_never_empties_the_catalog() {
    rounds("unlink then create", |dir, content, pause_ms| {
        std::fs::remove_file(dir.join("orders.yaml")).unwrap();
        pause(pause_ms);
        std::fs::write(dir.join("orders.yaml"), content).unwrap();
    })
    .await;
}

/// Polling sees the same gaps as events (a rescan every 100 ms here).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn polling_holds_a_missing_file_too() {
    let dir = folder("start");
    let served = Served::start(dir.path(), WatchMode::Poll).await;
    let _burn = Burn::start(2);
    for (round, pause_ms) in [150, 250].into_iter().enumerate() {
        let edition = format!("{round}");
        let content = document(&edition);
        let at = served.dir.clone();
        served
            .round(
                &format!("poll, unlink then create {round}"),
                &edition,
                move || {
                    std::fs::remove_file(at.join("orders.yaml")).unwrap();
                    pause(pause_ms);
                    std::fs::write(at.join("orders.yaml"), content).unwrap();
                },
            )
            .await;
    }
}

/// A Kubernetes ConfigMap update that removes one key and changes another
/// (kubelet swaps the `..data` link, then removes the removed key's link):
/// one atomic change, so one generation (published once the removal is
/// confirmed), never the changed key with the removed one still there.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_configmap_update_removing_a_key_is_one_generation() {
    use std::os::unix::fs::symlink;
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let version = root.join("..2026_01_01_v0");
    std::fs::create_dir_all(&version).unwrap();
    std::fs::write(version.join("orders.yaml"), document("v0")).unwrap();
    std::fs::write(
        version.join("billing.yaml"),
        document("billing").replace("op_", "invoice_op_"),
    )
    .unwrap();
    symlink("..2026_01_01_v0", root.join("..data")).unwrap();
    symlink("..data/orders.yaml", root.join("orders.yaml")).unwrap();
    symlink("..data/billing.yaml", root.join("billing.yaml")).unwrap();
    let served = Served::start(root, WatchMode::Events).await;
    assert_eq!(served.gw.status().await["tools"], 2 * TOOLS);
    let _burn = Burn::start(2);
    let at = root.to_path_buf();
    served
        .round("ConfigMap update", "v1", move || {
            let next = at.join("..2026_01_01_v1");
            std::fs::create_dir_all(&next).unwrap();
            std::fs::write(next.join("orders.yaml"), document("v1")).unwrap();
            symlink("..2026_01_01_v1", at.join("..data_tmp")).unwrap();
            std::fs::rename(at.join("..data_tmp"), at.join("..data")).unwrap();
            std::fs::remove_file(at.join("billing.yaml")).unwrap();
            std::fs::remove_dir_all(at.join("..2026_01_01_v0")).unwrap();
        })
        .await;
    assert_eq!(served.gw.status().await["tools"], TOOLS);
}

// ------------------------------------------------------------ real deletions

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_real_deletion_is_published_after_the_grace() {
    let dir = folder("kept");
    let invoices = dir.path().join("billing/invoices.yaml");
    std::fs::create_dir_all(invoices.parent().unwrap()).unwrap();
    let billing = document("billing").replace("op_", "invoice_op_");
    std::fs::write(&invoices, billing).unwrap();
    let served = Served::start(dir.path(), WatchMode::Events).await;
    let grace = served.gw.gateway.settings.deletion_grace;
    assert_eq!(
        served.gw.gateway.store.current().catalog.tools().len(),
        2 * TOOLS
    );

    let deleted = Instant::now();
    std::fs::remove_file(&invoices).unwrap();
    let deadline = deleted + PATIENCE;
    while served.generation() == 0 {
        assert!(
            Instant::now() < deadline,
            "the deletion was never published"
        );
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    let published = deleted.elapsed();
    assert!(
        published >= grace,
        "the deletion was published {published:?} after it, before the grace ({grace:?})"
    );
    let current = served.gw.gateway.store.current();
    assert_eq!(current.generation, 1);
    assert_eq!(
        current.catalog.tools().len(),
        TOOLS,
        "only orders.yaml's tools"
    );
    assert!(current.catalog.tool("invoice_op_0").is_none());
    drop(current);
    let status = served.gw.status().await;
    assert_eq!(status["generation"], 1);
    assert_eq!(status["tools"], TOOLS);
    let reply = served
        .gw
        .tool("load_tool", json!({"name": "invoice_op_0"}))
        .await;
    assert!(reply.is_error);
    assert_eq!(reply.payload["error"], "unknown_tool");
}

/// Where a `sezzlee serve` child logs: every line so far.
fn logged(logs: &Mutex<String>) -> String {
    logs.lock().unwrap().clone()
}

async fn await_log(logs: &Mutex<String>, what: &str) {
    let deadline = Instant::now() + PATIENCE;
    while !logged(logs).contains(what) {
        assert!(
            Instant::now() < deadline,
            "never logged {what:?}:\n{}",
            logged(logs)
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The real binary with watching off: SIGHUP rescans, a missing file is
/// held, the rescan that confirms it comes on its own after the grace, and
/// a folder (then the whole catalogs folder) emptied is warned about.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sighup_holds_a_missing_file_and_an_emptied_folder_is_warned_about() {
    let dir = folder("only");
    let invoices = dir.path().join("billing/invoices.yaml");
    std::fs::create_dir_all(invoices.parent().unwrap()).unwrap();
    std::fs::write(&invoices, document("billing").replace("op_", "invoice_op_")).unwrap();
    let mut child = sezzlee_binary(None)
        .arg("serve")
        .arg("--catalogs")
        .arg(dir.path())
        .args(["--listen", "127.0.0.1:0", "--watch", "off"])
        .args(["--demo-backend", "false", "--log-format", "text"])
        .env("RUST_LOG", "info")
        .env("NO_COLOR", "1")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("sezzlee serve starts");
    let (url, logs) = listening_url(&mut child);
    let child = KillOnDrop(child);
    let base = url.trim_end_matches("/mcp").to_string();
    let client = reqwest::Client::new();
    let status = || async {
        let reply = client.get(format!("{base}/status")).send().await.unwrap();
        reply.json::<Value>().await.unwrap()
    };
    assert_eq!(status().await["tools"], 2 * TOOLS);
    let hang_up = || {
        let status = std::process::Command::new("kill")
            .args(["-HUP", &child.0.id().to_string()])
            .status()
            .expect("kill runs");
        assert!(status.success());
    };

    // Unlink, SIGHUP (the rescan misses the file), create, SIGHUP: the
    // file never went, nothing is announced.
    std::fs::remove_file(&invoices).unwrap();
    hang_up();
    await_log(&logs, "SIGHUP: rescanning").await;
    tokio::time::sleep(Duration::from_millis(150)).await;
    assert_eq!(status().await["generation"], 0, "held, not deleted");
    std::fs::write(&invoices, document("billing").replace("op_", "invoice_op_")).unwrap();
    hang_up();
    tokio::time::sleep(Duration::from_millis(800)).await;
    let now = status().await;
    assert_eq!(now["generation"], 0, "{now}");
    assert_eq!(now["tools"], 2 * TOOLS);

    // A real deletion: published after the grace with no other SIGHUP,
    // and the emptied folder is named.
    std::fs::remove_file(&invoices).unwrap();
    hang_up();
    await_log(&logs, "every tool of folder billing away (9 before)").await;
    let now = status().await;
    assert_eq!(now["generation"], 1, "{now}");
    assert_eq!(now["tools"], TOOLS);

    // The last document: the whole catalogs folder is emptied.
    std::fs::remove_file(dir.path().join("orders.yaml")).unwrap();
    hang_up();
    await_log(&logs, "every tool of the catalogs folder away (9 before)").await;
    let text = logged(&logs);
    let warning = text
        .lines()
        .find(|line| line.contains("every tool of the catalogs folder"))
        .unwrap();
    assert!(warning.contains("WARN"), "{warning}");
    assert_eq!(status().await["tools"], 0);
    assert!(!text.contains("panicked"), "{text}");
}

struct KillOnDrop(std::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}
