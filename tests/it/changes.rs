//! `GET /changes?since=GEN` (issue 35, item 2): per generation, the tools
//! added, removed and changed with their versions, kept for the last
//! `change_history` generations, behind the operator's routes' rules.

use crate::support::*;
use serde_json::{Value, json};
use sezzlee_gateway::reload::Outcome;
use sezzlee_gateway::settings::WatchMode;

fn document(summaries: &[(&str, &str)]) -> String {
    let paths: serde_json::Map<String, Value> = summaries
        .iter()
        .map(|(id, summary)| {
            (
                format!("/{id}"),
                json!({"get": {"operationId": id, "summary": summary,
                    "responses": {"200": {"description": "ok"}}}}),
            )
        })
        .collect();
    json!({"openapi": "3.1.0", "info": {"title": "T", "version": "1"},
        "servers": [{"url": "http://127.0.0.1:9"}], "paths": paths})
    .to_string()
}

async fn changes(gw: &TestGateway, query: &str) -> (u16, Value) {
    let reply = gw.get(&format!("/changes{query}"), &[]).await;
    (reply.status, reply.json())
}

#[tokio::test]
async fn each_generation_says_what_it_added_removed_and_changed() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("t.json");
    std::fs::write(&file, document(&[("alpha", "First."), ("beta", "Second.")])).unwrap();
    let mut settings = test_settings(dir.path());
    settings.watch = WatchMode::Off;
    settings.change_history = 2;
    settings.deletion_grace = std::time::Duration::ZERO;
    let (gw, reloader, _watcher) = TestGateway::start_reloading(settings, Some(dir)).await;
    let before = gw.tool_ok("load_tool", json!({"name": "beta"})).await;

    // Generation 1: beta changed, gamma added, alpha removed.
    std::fs::write(
        &file,
        document(&[("beta", "Second, reworded."), ("gamma", "Third.")]),
    )
    .unwrap();
    assert_eq!(reloader.rescan().await, Outcome::Bumped(1));
    let after = gw.tool_ok("load_tool", json!({"name": "beta"})).await;
    let (status, answer) = changes(&gw, "?since=0").await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["generation"], 1);
    assert_eq!(answer["truncated"], false);
    let first = &answer["changes"][0];
    assert_eq!(first["generation"], 1);
    assert_eq!(first["added"][0]["name"], "gamma", "{first}");
    assert_eq!(first["removed"][0]["name"], "alpha", "{first}");
    assert_eq!(first["changed"][0]["name"], "beta", "{first}");
    assert_eq!(first["changed"][0]["versionBefore"], before["version"]);
    assert_eq!(first["changed"][0]["version"], after["version"]);
    assert_eq!(
        first["counts"],
        json!({"added": 1, "removed": 1, "changed": 1})
    );
    assert!(
        first["at"].as_str().is_some_and(|at| at.ends_with("GMT")),
        "{first}"
    );
    // Nothing after the generation served.
    let (_, none) = changes(&gw, "?since=1").await;
    assert_eq!(none["changes"], json!([]));

    // Two more generations: only the last two are kept.
    for summary in ["Third, again.", "Third, once more."] {
        std::fs::write(
            &file,
            document(&[("beta", "Second, reworded."), ("gamma", summary)]),
        )
        .unwrap();
        assert!(matches!(reloader.rescan().await, Outcome::Bumped(_)));
    }
    let (_, kept) = changes(&gw, "?since=0").await;
    let generations: Vec<u64> = kept["changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["generation"].as_u64().unwrap())
        .collect();
    assert_eq!(generations, [2, 3]);
    assert_eq!(kept["truncated"], true, "generation 1 is forgotten");
    let (_, recent) = changes(&gw, "?since=2").await;
    assert_eq!(recent["truncated"], false);
    assert_eq!(recent["changes"][0]["generation"], 3);

    // A rescan that changes nothing adds nothing.
    std::fs::write(
        &file,
        document(&[
            ("beta", "Second, reworded."),
            ("gamma", "Third, once more."),
        ]),
    )
    .unwrap();
    reloader.rescan().await;
    let (_, same) = changes(&gw, "?since=3").await;
    assert_eq!(same["changes"], json!([]));

    // A bad `since` is refused.
    let (status, refused) = changes(&gw, "?since=yesterday").await;
    assert_eq!(status, 400, "{refused}");
}
