//! `sezzlee health`, the container HEALTHCHECK: exit 0 against a serving
//! gateway's `/healthz`, 1 when nothing answers or the answer is not 200.

use crate::support::*;

#[tokio::test]
async fn health_exits_zero_only_for_a_healthy_gateway() {
    let gateway = TestGateway::shipped().await;
    let listen = gateway.base.trim_start_matches("http://").to_string();
    let port = listen.rsplit(':').next().unwrap().to_string();
    let run = |args: Vec<String>| {
        tokio::task::spawn_blocking(move || {
            sezzlee_binary(None)
                .arg("health")
                .args(args)
                .env_remove("SEZZLEE_LISTEN")
                .output()
                .unwrap()
        })
    };
    // Listening on every interface: asked on loopback.
    for listen in [listen.clone(), format!("0.0.0.0:{port}")] {
        let output = run(vec!["--listen".into(), listen.clone()]).await.unwrap();
        assert!(output.status.success(), "{listen}: {output:?}");
    }
    let not_found = run(vec![
        "--listen".into(),
        listen.clone(),
        "--path".into(),
        "/nothing".into(),
    ])
    .await
    .unwrap();
    assert_eq!(not_found.status.code(), Some(1), "{not_found:?}");
    assert!(String::from_utf8_lossy(&not_found.stderr).contains("404"));
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let nobody = closed.local_addr().unwrap().to_string();
    drop(closed);
    let refused = run(vec!["--listen".into(), nobody]).await.unwrap();
    assert_eq!(refused.status.code(), Some(1), "{refused:?}");
}
