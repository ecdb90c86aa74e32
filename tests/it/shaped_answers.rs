//! Large backend answers shaped to fit the response budget, end to end:
//! the real gateway on a loopback port, the recording backend answering a
//! list too large for the budget, `invoke_tool` pinned to the loaded
//! version; the answer fits, lists its cuts, names the next call, and that
//! call, made exactly as the message says, reaches the backend with those
//! arguments.

use crate::backend::Backend;
use crate::support::*;
use serde_json::{Value, json};

const BUDGET: usize = 4_000;

fn document(base: &str) -> Value {
    let query = |name: &str| json!({"name": name, "in": "query", "schema": {"type": "integer"}});
    json!({
        "openapi": "3.0.3",
        "info": {"title": "Issues", "version": "1"},
        "servers": [{"url": base}],
        "paths": {
            "/repos/{owner}/issues": {"get": {
                "operationId": "listIssues",
                "parameters": [
                    {"name": "owner", "in": "path", "required": true, "schema": {"type": "string"}},
                    query("per_page"), query("page")
                ],
                "responses": {"200": {"description": "issues", "content": {"application/json": {"schema": {"type": "array", "items": {"type": "object"}}}}}}
            }}
        }
    })
}

/// The number after ` name=` in `message`.
fn argument_in(message: &str, name: &str) -> u64 {
    let after = message
        .split(&format!(" {name}="))
        .nth(1)
        .unwrap_or_else(|| panic!("no {name}= in {message}"));
    after
        .chars()
        .take_while(char::is_ascii_digit)
        .collect::<String>()
        .parse()
        .unwrap()
}

#[tokio::test]
async fn a_list_over_the_budget_is_shaped_and_its_next_page_named() {
    let backend = Backend::start().await;
    let issues: Vec<Value> = (0..300)
        .map(|i| json!({"id": i, "title": format!("Issue {i}"), "body": "b".repeat(120)}))
        .collect();
    backend.answer_every_path_with(&Value::Array(issues.clone()));
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("issues.json"),
        document(&backend.base).to_string(),
    )
    .unwrap();
    let gateway =
        TestGateway::start(dir.path(), |settings| settings.response_budget = BUDGET).await;
    let loaded = gateway
        .tool_ok("load_tool", json!({"name": "list_issues"}))
        .await;
    let version = loaded["version"].as_str().unwrap().to_string();
    let reply = gateway
        .tool(
            "invoke_tool",
            json!({"name": "list_issues", "version": version, "arguments": {"owner": "o", "per_page": 300}}),
        )
        .await;
    assert!(!reply.is_error, "{}", reply.payload);
    let payload = reply.payload;
    assert!(payload.to_string().chars().count() <= BUDGET, "{payload}");
    let kept = payload["body"].as_array().unwrap();
    assert!(!kept.is_empty() && kept.len() < 300, "{payload}");
    assert_eq!(kept[..], issues[..kept.len()], "whole items, in order");
    assert_eq!(
        payload["shaped"],
        json!([{"at": "", "kept": kept.len(), "of": 300}])
    );
    assert_eq!(payload["bytes"], Value::Array(issues).to_string().len());
    let message = payload["message"].as_str().unwrap();
    let per_page = argument_in(message, "per_page");
    let page = argument_in(message, "page");
    assert_eq!((per_page, page), (kept.len() as u64, 2), "{message}");

    // The agent's second call, exactly as the message says.
    let reply = gateway
        .tool(
            "invoke_tool",
            json!({"name": "list_issues", "version": version, "arguments": {"owner": "o", "per_page": per_page, "page": page}}),
        )
        .await;
    assert!(!reply.is_error, "{}", reply.payload);
    let sent = backend.last();
    assert_eq!(sent.path(), "/repos/o/issues");
    assert_eq!(
        sent.query(),
        Some(format!("per_page={per_page}&page={page}").as_str())
    );
}

/// The response budget of the real-shapes test: small enough that every
/// generated list is over it.
const REAL_BUDGET: usize = 8_000;

/// One list operation of the vendored corpus: its document, tool, the
/// continuation its API puts in the body (pointer and value), and the
/// arguments the next call must name, as that document spells them.
struct ListCase {
    document: &'static str,
    tool: &'static str,
    continuation: Option<(&'static str, &'static str)>,
    /// A `Link` header the backend sends (GitHub pages by it).
    link: Option<&'static str>,
    next_arguments: &'static [&'static str],
}

const CASES: &[ListCase] = &[
    ListCase {
        document: "github.com_api.github.com_1.1.4.json",
        tool: "github_com_api_github_com_1_1_4_users_list",
        continuation: None,
        link: Some("<https://api.github.com/users?per_page=100&since=135>; rel=\"next\""),
        next_arguments: &["per_page"],
    },
    ListCase {
        document: "github.com_api.github.com_1.1.4.json",
        tool: "issues_list_for_repo",
        continuation: None,
        link: None,
        next_arguments: &["per_page", "page"],
    },
    ListCase {
        document: "github.com_api.github.com_1.1.4.json",
        tool: "repos_list_for_org",
        continuation: None,
        link: None,
        next_arguments: &["per_page", "page"],
    },
    ListCase {
        document: "stripe.com_stripe_2025-10-15.json",
        tool: "get_customers",
        continuation: Some(("/has_more", "true")),
        link: None,
        next_arguments: &["starting_after"],
    },
    ListCase {
        document: "microsoft.com_graph_1.0.1.json",
        tool: "users_user_list_user",
        continuation: Some((
            "/@odata.nextLink",
            "https://graph.microsoft.com/v1.0/users?$skiptoken=X1",
        )),
        link: None,
        next_arguments: &["$top", "$skip"],
    },
    ListCase {
        document: "kubernetes.io_kubernetes_unversioned.json",
        tool: "list_core_v1_namespaced_pod",
        continuation: Some(("/metadata/continue", "eyJ2IjoibWV0YS5rOHMuaW8vdjEifQ")),
        link: None,
        next_arguments: &["limit"],
    },
    ListCase {
        document: "atlassian.com_jira_1001.0.0-SNAPSHOT.json",
        tool: "get_all_users",
        continuation: None,
        link: None,
        next_arguments: &["maxResults", "startAt"],
    },
    ListCase {
        document: "slack.com_slack_1.7.0.json",
        tool: "conversations_list",
        continuation: Some(("/response_metadata/next_cursor", "dGVhbTpDMDYxRkE1UEI=")),
        link: None,
        next_arguments: &["limit"],
    },
    ListCase {
        document: "spotify.com_spotify_1.0.0.json",
        tool: "get_a_list_of_current_users_playlists",
        continuation: None,
        link: None,
        next_arguments: &["limit", "offset"],
    },
    ListCase {
        document: "apache.org_airflow_2.9.0.dev0.yaml",
        tool: "get_dags",
        continuation: None,
        link: None,
        next_arguments: &["limit", "offset"],
    },
    ListCase {
        document: "googleapis.com_youtube_v3.json",
        tool: "youtube_videos_list",
        continuation: Some(("/nextPageToken", "CAUQAA")),
        link: None,
        next_arguments: &["maxResults"],
    },
];

/// A body for `output` (the published outputSchema) with `count` items in
/// its list (ids made distinct), and the API's continuation set.
fn list_body(output: &Value, count: usize, continuation: Option<(&str, &str)>) -> Value {
    let mut body = crate::instances::instance(output);
    let shown = body.to_string();
    // A top-level array is published wrapped as {"result": [...]}.
    if output["properties"]["result"].is_object() && body.get("result").is_some() {
        body = body["result"].take();
    }
    // An item made from the list's own item schema when the generator
    // left the list empty (its node budget spent elsewhere).
    let item_of = |name: &str| {
        let mut items = output["properties"][name]["items"].clone();
        items["$defs"] = output["$defs"].clone();
        crate::instances::instance(&items)
    };
    let list = match &mut body {
        Value::Array(items) => {
            if items.is_empty() {
                items.push(item_of("result"));
            }
            items
        }
        Value::Object(members) => {
            let name = members
                .iter()
                .find(|(_, member)| member.as_array().is_some_and(|items| !items.is_empty()))
                .or_else(|| members.iter().find(|(_, member)| member.is_array()))
                .map(|(name, _)| name.clone())
                .unwrap_or_else(|| panic!("a list member in {shown}"));
            let list = members[&name].as_array_mut().unwrap();
            if list.is_empty() {
                list.push(item_of(&name));
            }
            list
        }
        other => panic!("not a list: {other}"),
    };
    let mut first = list
        .first()
        .cloned()
        .unwrap_or_else(|| panic!("an item in {shown}"));
    // The published schema may stop above the items' members (output
    // compaction): give such items an id and a name, as real ones have.
    if let Value::Object(members) = &mut first
        && members.len() < 2
    {
        members.insert("id".to_string(), json!("id"));
        members.insert("name".to_string(), json!("a name like the real ones"));
    }
    // Small items (what the generator could make of a deep schema): more
    // of them, so the list is over the budget all the same.
    let count = if first.to_string().len() < 100 {
        count.max(1_000)
    } else {
        count
    };
    *list = (0..count)
        .map(|i| {
            let mut item = first.clone();
            match item.get_mut("id") {
                Some(id @ Value::String(_)) => *id = json!(format!("id_{i}")),
                Some(id @ Value::Number(_)) => *id = json!(i),
                _ => {}
            }
            item
        })
        .collect();
    if let Some((pointer, value)) = continuation {
        let (parent, name) = pointer.rsplit_once('/').unwrap();
        let value: Value = serde_json::from_str(value).unwrap_or_else(|_| json!(value));
        let holder = if parent.is_empty() {
            &mut body
        } else {
            if body.pointer(parent).is_none() {
                body[parent.trim_start_matches('/')] = json!({});
            }
            body.pointer_mut(parent).unwrap()
        };
        holder[name] = value;
    }
    body
}

/// The `name=value` pairs after "call again with" in a message.
fn next_call(message: &str) -> Vec<(String, String)> {
    let after = message
        .split("call again with ")
        .nth(1)
        .unwrap_or_else(|| panic!("no next call in: {message}"));
    let clause = after.split([' ', ',']).collect::<Vec<_>>().join(" ");
    let mut pairs = Vec::new();
    for word in clause.split(' ') {
        let word = word.trim_end_matches(['.', ';', ')']);
        if let Some((name, value)) = word.split_once('=') {
            pairs.push((name.to_string(), value.to_string()));
        } else if word != "and" {
            break;
        }
    }
    pairs
}

#[tokio::test]
#[ignore = "slow campaign: eleven list operations of ten real documents (Graph among them) built in one gateway"]
async fn real_list_operations_are_shaped_and_their_next_call_reaches_the_backend() {
    let backend = Backend::start().await;
    let mut files = Vec::new();
    for case in CASES {
        let text =
            std::fs::read_to_string(crate::corpus::vendored().require(case.document)).unwrap();
        let stem = case.document.rsplit_once('.').unwrap().0;
        files.push((case.document.to_string(), text));
        files.push((
            format!("{stem}.sezzlee.json"),
            json!({"backend": {"baseUrl": backend.base}}).to_string(),
        ));
    }
    let files: Vec<(&str, String)> = files.iter().map(|(n, t)| (n.as_str(), t.clone())).collect();
    let gateway =
        TestGateway::with_files(&files, |settings| settings.response_budget = REAL_BUDGET).await;
    for case in CASES {
        let loaded = gateway
            .tool_ok("load_tool", json!({"name": case.tool}))
            .await;
        let version = loaded["version"].as_str().unwrap().to_string();
        let body = list_body(&loaded["outputSchema"], 300, case.continuation);
        match case.link {
            Some(link) => backend.answer_every_path_with_link(&body, link),
            None => backend.answer_every_path_with(&body),
        }
        let required = crate::instances::minimal_instance(&loaded["inputSchema"]);
        let reply = gateway
            .tool(
                "invoke_tool",
                json!({"name": case.tool, "version": version, "arguments": required}),
            )
            .await;
        assert!(!reply.is_error, "{}: {}", case.tool, reply.payload);
        let payload = reply.payload;
        assert!(
            payload.to_string().chars().count() <= 20_000,
            "{}",
            case.tool
        );
        let cut = payload["shaped"]
            .as_array()
            .and_then(|cuts| {
                cuts.iter()
                    .find(|cut| cut["of"].as_u64().is_some_and(|of| of >= 300))
            })
            .unwrap_or_else(|| {
                panic!(
                    "{}: the list is cut: {}",
                    case.tool,
                    &payload.to_string()[..payload.to_string().len().min(600)]
                )
            });
        let kept = cut["kept"].as_u64().unwrap();
        assert!(
            kept >= 1 && kept < cut["of"].as_u64().unwrap(),
            "{}: {cut}",
            case.tool
        );
        let message = payload["message"].as_str().unwrap();
        let pairs = next_call(message);
        let named: Vec<&str> = pairs.iter().map(|(name, _)| name.as_str()).collect();
        assert_eq!(named, case.next_arguments, "{}: {message}", case.tool);
        if case.link.is_some() {
            assert!(message.contains("Link header"), "{}: {message}", case.tool);
        }
        // The second call, exactly as the message says.
        let mut arguments = required.as_object().cloned().unwrap_or_default();
        for (name, value) in &pairs {
            arguments.insert(
                name.clone(),
                value
                    .parse::<u64>()
                    .map_or_else(|_| json!(value), |n| json!(n)),
            );
        }
        let reply = gateway
            .tool(
                "invoke_tool",
                json!({"name": case.tool, "version": version, "arguments": arguments}),
            )
            .await;
        assert!(!reply.is_error, "{}: {}", case.tool, reply.payload);
        let query = backend.last().query().unwrap_or_default().to_string();
        let decoded = percent_decoded(&query);
        for (name, value) in &pairs {
            assert!(
                decoded
                    .split('&')
                    .any(|pair| pair == format!("{name}={value}")),
                "{}: {name}={value} not in {decoded}",
                case.tool
            );
        }
    }
}

fn percent_decoded(text: &str) -> String {
    percent_encoding::percent_decode_str(text)
        .decode_utf8_lossy()
        .into_owned()
}
