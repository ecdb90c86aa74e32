//! An upstream MCP server run as a process over stdio, through its whole
//! life (docs/contract.md §2.10): the test fixture of sezzlee-client
//! (`crates/client/tests/fixtures/stdio_server.py`, python3 only) named by
//! `local.mcp.yaml` in a catalogs folder a real gateway serves with its
//! reloader and supervisors running. Its tools are found and called; the
//! process is killed (`kill -9`) and the supervisor starts a new one while
//! the tools stay listed; a hundred kills leave no process, file
//! descriptor or task behind; the file is edited (new names), broken (the
//! last good version stays, and says so) and removed (the process stops,
//! the tools go).
//!
//! Every process is started with an argument the fixture ignores, unique
//! to the test, so the test finds its own processes among all others.

use crate::support::*;
use crate::upstream_hostile::{
    diagnostics_of, envelope, first_text, found, invoke, live_gateway, served, upstream_status,
    wait_for,
};
use serde_json::{Value, json};
use sezzlee_gateway::reload::Outcome;
use std::path::Path;
use std::time::{Duration, Instant};

const FIXTURE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/crates/client/tests/fixtures/stdio_server.py"
);

/// The fixture's ten tools, as the catalog names them without a namespace.
const TOOLS: usize = 10;

/// Whether python3 runs here (the tests say SKIPPED when it does not).
fn python3() -> bool {
    std::process::Command::new("python3")
        .arg("--version")
        .output()
        .is_ok_and(|output| output.status.success())
}

macro_rules! python3_or_skip {
    () => {
        if !python3() {
            // Under CI (.ci/run installs python3) a skip is a failure.
            assert!(std::env::var("CI").is_err(), "python3 is missing under CI");
            println!("SKIPPED: python3 not found");
            return;
        }
    };
}

/// An argument the fixture ignores that tells this test's processes from
/// every other's.
fn marker(test: &str) -> String {
    format!("--sezzlee-it-{test}-{}", std::process::id())
}

/// `local.mcp.yaml`: the fixture started by python3, with `marker` and
/// the `extra` YAML lines.
fn local_file(marker: &str, extra: &str) -> String {
    format!(
        "command: python3\nargs: [{FIXTURE:?}, {marker:?}]\nbackend: {{timeoutMs: 5000}}\n{extra}"
    )
}

/// Every process of the machine: its pid and its `/proc` folder.
fn processes() -> impl Iterator<Item = (u32, std::path::PathBuf)> {
    std::fs::read_dir("/proc")
        .expect("/proc")
        .flatten()
        .filter_map(|entry| {
            let pid = entry.file_name().to_str()?.parse::<u32>().ok()?;
            Some((pid, entry.path()))
        })
}

/// The live processes whose command line holds `marker`.
fn processes_with(marker: &str) -> Vec<u32> {
    let mut found = Vec::new();
    for (pid, folder) in processes() {
        let Ok(command) = std::fs::read(folder.join("cmdline")) else {
            continue;
        };
        if command
            .split(|byte| *byte == 0)
            .any(|argument| argument == marker.as_bytes())
        {
            found.push(pid);
        }
    }
    found
}

/// Children of this process that ended and were never waited for.
fn zombie_children() -> Vec<u32> {
    let me = std::process::id();
    let mut zombies = Vec::new();
    for (pid, folder) in processes() {
        let Ok(stat) = std::fs::read_to_string(folder.join("stat")) else {
            continue;
        };
        // pid (comm) state ppid …: the command may hold spaces, not ')'.
        let Some(after) = stat.rfind(')').map(|at| &stat[at + 1..]) else {
            continue;
        };
        let mut fields = after.split_whitespace();
        let state = fields.next();
        let parent: Option<u32> = fields.next().and_then(|p| p.parse().ok());
        if state == Some("Z") && parent == Some(me) {
            zombies.push(pid);
        }
    }
    zombies
}

/// Whether process `pid` is gone (reaped: not even a zombie).
fn gone(pid: u64) -> bool {
    !Path::new(&format!("/proc/{pid}")).exists()
}

fn kill_9(pid: u64) {
    let status = std::process::Command::new("kill")
        .args(["-9", &pid.to_string()])
        .status()
        .expect("kill runs");
    assert!(status.success(), "kill -9 {pid}");
}

/// The tests of this module one at a time: each counts the processes,
/// pipes and descriptors of the whole test binary.
static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// Open file descriptors of this process, in all and those that are pipes
/// (a stdio server's stdin, stdout and stderr): the least of a few
/// samples, so a socket another test holds for a moment does not count.
async fn open_fds() -> (usize, usize) {
    let mut least = (usize::MAX, usize::MAX);
    for _ in 0..5 {
        let mut all = 0;
        let mut pipes = 0;
        for entry in std::fs::read_dir("/proc/self/fd")
            .expect("/proc/self/fd")
            .flatten()
        {
            all += 1;
            if std::fs::read_link(entry.path())
                .is_ok_and(|target| target.to_string_lossy().starts_with("pipe:"))
            {
                pipes += 1;
            }
        }
        least = (least.0.min(all), least.1.min(pipes));
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    least
}

/// Waits until `local.mcp.yaml`'s server is up with a process other than
/// `not` and its tools are served (by a name in `expect`); the entry.
async fn up_again(gw: &TestGateway, not: Option<u64>, expect: &str) -> Value {
    wait_for(
        &format!("local.mcp.yaml up with a process other than {not:?}, serving {expect}"),
        Duration::from_secs(15),
        async || {
            let entry = upstream_status(gw, "local.mcp.yaml").await;
            let pid = entry["pid"].as_u64()?;
            (entry["state"] == "up" && Some(pid) != not && served(gw).contains(&expect.to_string()))
                .then_some(entry)
        },
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_server_is_started_again_and_its_tools_stay_listed() {
    python3_or_skip!();
    let _alone = ONE_AT_A_TIME.lock().await;
    let marker = marker("killed");
    let (gw, _reloader, _dir) = live_gateway(&[("local.mcp.yaml", local_file(&marker, ""))]).await;
    let first = up_again(&gw, None, "echo").await;
    assert_eq!(first["transport"]["kind"], "stdio", "{first}");
    assert_eq!(first["transport"]["command"], "python3", "{first}");
    assert_eq!(first["protocolVersion"], "2025-11-25", "{first}");
    assert_eq!(first["tools"], TOOLS, "both pages listed: {first}");
    assert_eq!(first["connects"], 1, "{first}");
    assert!(first["lastError"].is_null(), "{first}");
    assert!(first["lastListed"].is_u64(), "{first}");
    let pid = first["pid"].as_u64().unwrap();
    assert_eq!(processes_with(&marker), [pid as u32]);
    assert_eq!(served(&gw).len(), TOOLS);

    let hits = found(&gw, "Returns its text").await;
    assert_eq!(hits.first().map(String::as_str), Some("echo"), "{hits:?}");
    let loaded = gw.tool_ok("load_tool", json!({"name": "echo"})).await;
    assert_eq!(
        loaded["inputSchema"]["properties"]["text"]["type"],
        "string"
    );
    let answer = invoke(&gw, "echo", json!({"text": "hello"})).await;
    assert_eq!(first_text(&answer), "hello", "{answer}");
    assert!(answer.get("isError").is_none(), "{answer}");

    kill_9(pid);
    let killed = Instant::now();
    // At once: the call either finds the server gone or the new one.
    let answer = invoke(&gw, "echo", json!({"text": "meanwhile"})).await;
    match envelope(&answer) {
        Some(payload) => assert_eq!(payload["error"], "backend_unavailable", "{payload}"),
        None => assert_eq!(first_text(&answer), "meanwhile", "{answer}"),
    }
    // The tools stay listed throughout, while a new process is started.
    let second = wait_for("a new process up", Duration::from_secs(15), async || {
        assert_eq!(served(&gw).len(), TOOLS, "the tools stay listed");
        let entry = upstream_status(&gw, "local.mcp.yaml").await;
        let now = entry["pid"].as_u64()?;
        (entry["state"] == "up" && now != pid).then_some(entry)
    })
    .await;
    eprintln!(
        "killed with -9, up again in {:?}: {second}",
        killed.elapsed()
    );
    assert_eq!(second["connects"], 2, "{second}");
    assert!(second["lastError"].is_null(), "{second}");
    let new_pid = second["pid"].as_u64().unwrap();
    wait_for(
        "the killed process reaped",
        Duration::from_secs(5),
        async || gone(pid).then_some(()),
    )
    .await;
    assert_eq!(processes_with(&marker), [new_pid as u32]);
    let answer = invoke(&gw, "echo", json!({"text": "again"})).await;
    assert_eq!(first_text(&answer), "again", "{answer}");
    assert_eq!(served(&gw).len(), TOOLS);
}

/// Kills the server `cycles` times, each time waiting for the next
/// process; then nothing is left behind. Returns the time the cycles took.
async fn kill_cycles(test: &str, cycles: u64) -> Duration {
    let marker = marker(test);
    let (gw, _reloader, _dir) = live_gateway(&[("local.mcp.yaml", local_file(&marker, ""))]).await;
    let first = up_again(&gw, None, "echo").await;
    let answer = invoke(&gw, "echo", json!({"text": "warm"})).await;
    assert_eq!(first_text(&answer), "warm");
    let tasks_before = tokio::runtime::Handle::current()
        .metrics()
        .num_alive_tasks();
    let (fds_before, pipes_before) = open_fds().await;
    let started = Instant::now();
    let mut pid = first["pid"].as_u64().unwrap();
    for cycle in 1..=cycles {
        kill_9(pid);
        let next = up_again(&gw, Some(pid), "echo").await;
        assert_eq!(next["connects"], cycle + 1, "cycle {cycle}: {next}");
        assert_eq!(served(&gw).len(), TOOLS, "cycle {cycle}");
        pid = next["pid"].as_u64().unwrap();
    }
    let took = started.elapsed();
    let answer = invoke(&gw, "echo", json!({"text": "after"})).await;
    assert_eq!(first_text(&answer), "after", "{answer}");

    // Nothing left behind: one process (the last), no zombie, no file
    // descriptor or task more than before (a little slack for the
    // sockets and tasks of requests in flight).
    wait_for(
        "every killed process reaped",
        Duration::from_secs(5),
        async || (processes_with(&marker) == [pid as u32]).then_some(()),
    )
    .await;
    let zombies = zombie_children();
    assert!(zombies.is_empty(), "zombie children: {zombies:?}");
    let (fds_after, pipes_after) = open_fds().await;
    let tasks_after = tokio::runtime::Handle::current()
        .metrics()
        .num_alive_tasks();
    eprintln!(
        "{cycles} kill/restart cycles in {took:?} ({:?} each); open fds {fds_before} -> {fds_after} (pipes {pipes_before} -> {pipes_after}); alive tasks {tasks_before} -> {tasks_after}",
        took / cycles as u32
    );
    assert!(
        pipes_after <= pipes_before + 2,
        "pipes leak: {pipes_before} before, {pipes_after} after {cycles} cycles"
    );
    assert!(
        fds_after <= fds_before + 6,
        "file descriptors leak: {fds_before} before, {fds_after} after {cycles} cycles"
    );
    assert!(
        tasks_after <= tasks_before + 6,
        "tasks leak: {tasks_before} before, {tasks_after} after {cycles} cycles"
    );
    took
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_kills_leave_no_process_descriptor_or_task_behind() {
    python3_or_skip!();
    let _alone = ONE_AT_A_TIME.lock().await;
    kill_cycles("ten-kills", 10).await;
}

/// About 25 s on 2 cores (a quarter of a second a cycle: the 100 ms
/// back-off, python's start, the handshake and two pages): past the time
/// the un-ignored tests may take, so a campaign; the ten cycles above run
/// every time.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "slow campaign: `cargo test -- --include-ignored` runs it, as CI does"]
async fn a_hundred_kills_leave_no_process_descriptor_or_task_behind() {
    python3_or_skip!();
    let _alone = ONE_AT_A_TIME.lock().await;
    let took = kill_cycles("hundred-kills", 100).await;
    assert!(took < Duration::from_secs(120), "{took:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_file_edited_broken_and_removed_restarts_keeps_and_stops_the_server() {
    python3_or_skip!();
    let _alone = ONE_AT_A_TIME.lock().await;
    let marker = marker("edited");
    let (gw, reloader, dir) = live_gateway(&[("local.mcp.yaml", local_file(&marker, ""))]).await;
    let file = dir.join("local.mcp.yaml");
    let first = up_again(&gw, None, "echo").await;
    let first_pid = first["pid"].as_u64().unwrap();

    // Edited: a namespace. The server is started again, its tools renamed.
    std::fs::write(&file, local_file(&marker, "namespace: fx\n")).unwrap();
    let before = gw.gateway.store.current().generation;
    assert!(
        matches!(
            reloader.rescan().await,
            Outcome::Bumped(_) | Outcome::Swapped
        ),
        "the edit is taken"
    );
    let renamed = up_again(&gw, Some(first_pid), "fx_echo").await;
    let names = served(&gw);
    assert_eq!(names.len(), TOOLS, "{names:?}");
    assert!(
        names.iter().all(|name| name.starts_with("fx_")),
        "{names:?}"
    );
    assert!(gw.gateway.store.current().generation > before);
    assert_eq!(renamed["connects"], 1, "a new supervisor: {renamed}");
    let pid = renamed["pid"].as_u64().unwrap();
    wait_for(
        "the first process stopped",
        Duration::from_secs(5),
        async || gone(first_pid).then_some(()),
    )
    .await;
    assert_eq!(processes_with(&marker), [pid as u32]);
    let answer = invoke(&gw, "fx_echo", json!({"text": "renamed"})).await;
    assert_eq!(first_text(&answer), "renamed", "{answer}");
    let old = envelope(&invoke(&gw, "echo", json!({"text": "x"})).await).expect("an envelope");
    assert_eq!(old["error"], "unknown_tool", "{old}");

    // Broken: an unknown key. The last good version keeps serving, the
    // same process, and the catalog says why the edit was refused.
    std::fs::write(&file, local_file(&marker, "namespace: fx\ncolour: blue\n")).unwrap();
    let outcome = reloader.rescan().await;
    let said = diagnostics_of(&gw, "local.mcp.yaml");
    let refused = said
        .iter()
        .find(|d| d["code"] == "invalid_configuration")
        .unwrap_or_else(|| panic!("the broken edit is said ({outcome:?}): {said:?}"));
    assert_eq!(refused["pointer"], "/colour", "{refused}");
    let message = refused["message"].as_str().unwrap();
    assert!(message.contains("colour"), "{message}");
    assert!(message.contains("last good version"), "{message}");
    assert_eq!(served(&gw), names, "the last good tools stay");
    let entry = upstream_status(&gw, "local.mcp.yaml").await;
    assert_eq!(entry["pid"], pid, "not restarted: {entry}");
    assert_eq!(entry["state"], "up", "{entry}");
    let answer = invoke(&gw, "fx_echo", json!({"text": "still"})).await;
    assert_eq!(first_text(&answer), "still", "{answer}");

    // Removed: once the deletion is confirmed the process stops and the
    // tools go, in a new generation.
    std::fs::remove_file(&file).unwrap();
    let before = gw.gateway.store.current().generation;
    assert_eq!(reloader.rescan().await, Outcome::Held);
    assert_eq!(served(&gw), names, "held until the deletion is confirmed");
    let bumped = wait_for(
        "the deletion confirmed",
        Duration::from_secs(5),
        async || match reloader.rescan().await {
            Outcome::Bumped(generation) => Some(generation),
            Outcome::Held => None,
            other => panic!("a rescan after the deletion: {other:?}"),
        },
    )
    .await;
    assert!(bumped > before, "{bumped} after {before}");
    assert!(served(&gw).is_empty(), "{:?}", served(&gw));
    assert!(upstream_status(&gw, "local.mcp.yaml").await.is_null());
    wait_for("the process stopped", Duration::from_secs(5), async || {
        gone(pid).then_some(())
    })
    .await;
    assert!(processes_with(&marker).is_empty());
    let old = envelope(&invoke(&gw, "fx_echo", json!({"text": "x"})).await).expect("an envelope");
    assert_eq!(old["error"], "unknown_tool", "{old}");
}

/// A server that never lets the gateway connect is `down` once the first
/// attempt failed, with the reason, not `connecting` for ever.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_cannot_be_reached_is_down_with_the_reason() {
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = closed.local_addr().unwrap();
    drop(closed);
    let (gw, _reloader, _dir) =
        live_gateway(&[("gone.mcp.yaml", format!("url: http://{address}/mcp\n"))]).await;
    let entry = wait_for("gone.mcp.yaml down", Duration::from_secs(10), async || {
        let entry = upstream_status(&gw, "gone.mcp.yaml").await;
        (entry["state"] == "down").then_some(entry)
    })
    .await;
    assert_eq!(entry["connects"], 0, "{entry}");
    assert!(
        entry["lastError"]
            .as_str()
            .is_some_and(|why| why.contains("connect")),
        "{entry}"
    );
}

/// A caller who hangs up before the answer cancels the upstream call: the
/// request's future is dropped, and the server is sent
/// `notifications/cancelled` for it (the fixture counts them).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_caller_who_hangs_up_cancels_the_upstream_call() {
    python3_or_skip!();
    let _alone = ONE_AT_A_TIME.lock().await;
    let marker = marker("hangup");
    let (gw, _reloader, _dir) = live_gateway(&[("local.mcp.yaml", local_file(&marker, ""))]).await;
    up_again(&gw, None, "slow").await;
    let impatient = reqwest::Client::builder()
        .timeout(Duration::from_millis(500))
        .build()
        .unwrap();
    let body = modern_request(
        7,
        "tools/call",
        json!({"name": "invoke_tool", "arguments": {"name": "slow", "arguments": {"seconds": 10}}}),
    );
    let hung_up = modern_post(&impatient, &gw.url, &body).send().await;
    assert!(hung_up.is_err(), "the slow call answered within 500 ms");
    let counted = wait_for(
        "the server told of the cancellation",
        Duration::from_secs(5),
        async || {
            let result = invoke(&gw, "cancelled_count", json!({})).await;
            let count = result["structuredContent"]["count"].as_u64()?;
            (count == 1).then_some(result)
        },
    )
    .await;
    assert_eq!(
        counted["structuredContent"]["cancelled"][0]["reason"],
        "the client no longer waits for the answer",
        "{counted}"
    );
}
