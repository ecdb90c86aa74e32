//! What the gateway says and logs about credentials,
//! on the real binary (its environment set on the child, never in this
//! process): a wrong API key is told as such, not as an expired token; a
//! refusal and a rejected credential are logged at the default level,
//! without the credential; an HS256 secret shorter than 32 bytes refuses
//! the start (RFC 7518 §3.2), and `sezzlee token` refuses it too.

use crate::support::*;
use serde_json::json;
use std::time::{Duration, Instant};

const KEY: &str = "operator-key-5f1c0e9b7a";
const WRONG_KEY: &str = "wrong-key-2d8e4a";

fn config(dir: &std::path::Path, secret_env: Option<&str>) -> std::path::PathBuf {
    let mut text = String::from(
        "[auth]\nrequired = true\n\n[[auth.api_keys]]\nheader = \"x-api-key\"\nkey_env = \"SEZZLEE_AUTH_MESSAGES_KEY\"\nsubject = \"bot\"\nscopes = []\n",
    );
    if let Some(variable) = secret_env {
        text.push_str(&format!(
            "\n[auth.jwt]\nhs256_secret_env = \"{variable}\"\n"
        ));
    }
    let path = dir.join("sezzlee.toml");
    std::fs::write(&path, text).unwrap();
    path
}

/// `sezzlee serve` on the shipped catalogs with `config`, its API key in
/// the child's environment.
fn serve(config: &std::path::Path) -> std::process::Command {
    let mut command = serve_command(&shipped_catalogs());
    command
        .arg("--config")
        .arg(config)
        .env("SEZZLEE_AUTH_MESSAGES_KEY", KEY);
    command
}

#[tokio::test]
async fn a_wrong_api_key_is_told_as_such_and_refusals_are_logged() {
    let dir = tempfile::tempdir().unwrap();
    let config = config(dir.path(), None);
    let mut child = serve(&config)
        .env_remove("RUST_LOG")
        .spawn()
        .expect("sezzlee serve starts");
    let (url, logs) = listening_url(&mut child);

    let body = modern_request(1, "tools/list", json!({}));
    let mut request = reqwest::Client::new()
        .post(&url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("x-api-key", WRONG_KEY);
    for (name, value) in modern_headers(&body) {
        request = request.header(name, value);
    }
    let response = request.json(&body).send().await.unwrap();
    assert_eq!(response.status(), 401);
    let challenge = response
        .headers()
        .get("www-authenticate")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_string();
    assert!(
        !challenge.contains("invalid_token"),
        "no bearer token was sent: {challenge}"
    );
    let text = response.text().await.unwrap();
    assert!(
        text.contains("the API key is not one this gateway knows"),
        "{text}"
    );
    assert!(!text.contains("access token"), "{text}");

    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let all = logs.lock().unwrap().clone();
        let rejected = all.lines().any(|l| {
            l.contains("INFO") && l.contains("API key not recognised") && l.contains("x-api-key")
        });
        let refused = all.lines().any(|l| {
            l.contains("INFO") && l.contains("request refused") && l.contains("status=401")
        });
        if rejected && refused {
            assert!(!all.contains(WRONG_KEY), "the key was logged:\n{all}");
            break;
        }
        assert!(Instant::now() < deadline, "no auth log lines:\n{all}");
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    let _ = child.wait();
}

#[test]
fn an_hs256_secret_shorter_than_32_bytes_refuses_the_start_and_the_token() {
    let dir = tempfile::tempdir().unwrap();
    let config = config(dir.path(), Some("SEZZLEE_AUTH_MESSAGES_SECRET"));
    let output = serve(&config)
        .env("SEZZLEE_AUTH_MESSAGES_SECRET", "short")
        .output()
        .expect("run sezzlee");
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("SEZZLEE_AUTH_MESSAGES_SECRET is 5 bytes; at least 32 are required"),
        "{stderr}"
    );
    assert_eq!(
        stderr.matches("at least 32 are required").count(),
        1,
        "a start-up error is printed once: {stderr}"
    );

    let output = sezzlee_binary(None)
        .args(["token", "--secret-env", "SEZZLEE_AUTH_MESSAGES_SECRET"])
        .env("SEZZLEE_AUTH_MESSAGES_SECRET", "short")
        .output()
        .expect("run sezzlee token");
    assert_eq!(output.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&output.stderr).contains("at least 32 are required"),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
}
