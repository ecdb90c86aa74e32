//! The allocator setting chosen is in force for a plain
//! `sezzlee serve` (no environment prepared): mimalloc returns freed memory
//! at once (`MIMALLOC_PURGE_DELAY=0`, `benches/README.md`, "Allocators"),
//! and an operator's own value is kept. Read from the running process's
//! environment (`/proc/PID/environ`), Linux only.

use crate::support::*;

/// `MIMALLOC_PURGE_DELAY` in the environment of a `sezzlee serve` started
/// with `given` (or without the variable).
#[cfg(target_os = "linux")]
fn purge_delay_in_force(given: Option<&str>) -> Option<String> {
    let mut command = serve_command(&shipped_catalogs());
    command.env_remove("MIMALLOC_PURGE_DELAY");
    if let Some(value) = given {
        command.env("MIMALLOC_PURGE_DELAY", value);
    }
    let mut child = command.spawn().expect("sezzlee serve starts");
    let _ = listening_url(&mut child);
    let environ = std::fs::read(format!("/proc/{}/environ", child.id())).unwrap_or_default();
    let _ = child.kill();
    let _ = child.wait();
    environ
        .split(|byte| *byte == 0)
        .filter_map(|entry| std::str::from_utf8(entry).ok())
        .find_map(|entry| {
            entry
                .strip_prefix("MIMALLOC_PURGE_DELAY=")
                .map(str::to_string)
        })
}

#[cfg(target_os = "linux")]
#[test]
fn serve_returns_freed_memory_at_once_unless_the_operator_says_otherwise() {
    assert_eq!(purge_delay_in_force(None).as_deref(), Some("0"));
    assert_eq!(purge_delay_in_force(Some("25")).as_deref(), Some("25"));
}
