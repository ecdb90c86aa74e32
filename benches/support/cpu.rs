//! CPU time by role, read from Linux's `/proc/.../schedstat` (nanoseconds
//! on CPU per thread), so a latency comparison can also say where each
//! request's CPU went: the bench's client, the proxy under test (the
//! gateway's threads, or nginx's processes) and the backend.
//!
//! Why: on a machine where client, proxy and backend share the cores, the
//! p50 at many callers is set by the CPU all three spend per request, so a
//! ratio of latencies is only explained by the CPU per request of each.
//! Threads are told apart by name: `backend` is the bench's backend
//! runtime, `gateway` and `sezzlee-serve-N` the gateways, anything else
//! the bench's client; nginx is a master process and its children.

use std::time::Duration;

/// CPU used so far, by role.
#[derive(Debug, Default, Clone, Copy)]
pub struct Cpu {
    pub client: Duration,
    pub proxy: Duration,
    pub backend: Duration,
}

impl Cpu {
    /// CPU used by this process's threads and by nginx (`nginx_master`
    /// and its workers) until now; zero where `/proc` is not readable.
    pub fn now(nginx_master: Option<u32>) -> Cpu {
        let mut cpu = Cpu::default();
        for (name, used) in threads_of("self") {
            let role = if name == "backend" {
                &mut cpu.backend
            } else if name == "gateway" || name.starts_with("sezzlee-serve") {
                &mut cpu.proxy
            } else {
                &mut cpu.client
            };
            *role += used;
        }
        if let Some(master) = nginx_master {
            for pid in std::iter::once(master).chain(children_of(master)) {
                cpu.proxy += threads_of(&pid.to_string())
                    .into_iter()
                    .map(|(_, used)| used)
                    .sum::<Duration>();
            }
        }
        cpu
    }

    /// What was used between `earlier` and `self`.
    pub fn since(self, earlier: Cpu) -> Cpu {
        Cpu {
            client: self.client.saturating_sub(earlier.client),
            proxy: self.proxy.saturating_sub(earlier.proxy),
            backend: self.backend.saturating_sub(earlier.backend),
        }
    }

    /// The sum of two measurements.
    pub fn plus(self, other: Cpu) -> Cpu {
        Cpu {
            client: self.client + other.client,
            proxy: self.proxy + other.proxy,
            backend: self.backend + other.backend,
        }
    }

    pub fn total(self) -> Duration {
        self.client + self.proxy + self.backend
    }
}

/// Each thread of process `pid` (`self` or a number): its name and CPU.
fn threads_of(pid: &str) -> Vec<(String, Duration)> {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return Vec::new();
    };
    tasks
        .flatten()
        .filter_map(|task| {
            let name = std::fs::read_to_string(task.path().join("comm")).ok()?;
            let stat = std::fs::read_to_string(task.path().join("schedstat")).ok()?;
            let nanos = stat.split_whitespace().next()?.parse::<u64>().ok()?;
            Some((name.trim().to_string(), Duration::from_nanos(nanos)))
        })
        .collect()
}

/// The processes whose parent is `parent` (nginx's workers).
fn children_of(parent: u32) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|entry| entry.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .ok()
                .and_then(|stat| {
                    // The name in parentheses may hold spaces: the fields
                    // after its closing parenthesis are state, then ppid.
                    let after = &stat[stat.rfind(')')? + 1..];
                    after.split_whitespace().nth(1)?.parse::<u32>().ok()
                })
                == Some(parent)
        })
        .collect()
}
