//! Where nginx is, for the tests and benches that put it in front of the
//! gateway: `rolling_update.rs` here, and `benches/http_load.rs` and
//! `benches/replicas.rs` through `benches/support/nginx.rs`, which
//! includes this file (`#[path]`), as the benches include `corpus.rs`.
//!
//! It uses only std.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The nginx binary: the one `SEZZLEE_TEST_NGINX` names (which must run,
/// or this panics saying how to install one: CI sets it so that a missing
/// nginx fails instead of skipping), else the first `nginx` that runs on
/// `PATH` or in the usual `sbin` folders; `None` when there is none (the
/// caller says it skipped).
pub fn binary() -> Option<PathBuf> {
    if let Some(named) = std::env::var_os("SEZZLEE_TEST_NGINX").filter(|v| !v.is_empty()) {
        let path = PathBuf::from(named);
        assert!(
            runs(&path),
            "SEZZLEE_TEST_NGINX={} does not run (`nginx -v`): install nginx \
             (Debian: apt-get install -y nginx-light) or unset the variable",
            path.display()
        );
        return Some(path);
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(["/usr/sbin", "/usr/local/sbin", "/usr/local/nginx/sbin"].map(PathBuf::from))
        .map(|dir| dir.join("nginx"))
        .find(|candidate| candidate.is_file() && runs(candidate))
}

/// Whether `nginx -v` succeeds.
fn runs(nginx: &Path) -> bool {
    Command::new(nginx)
        .arg("-v")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|status| status.success())
}
