//! The process's own figures for `/metrics`, under the names every
//! Prometheus client library uses (`process_resident_memory_bytes`,
//! `process_cpu_seconds_total`, `process_open_fds`, `process_max_fds`,
//! `process_start_time_seconds`), so an operator's usual dashboards and
//! alerts (memory growth, descriptors near their limit, restarts) work
//! unchanged.
//!
//! Read from `/proc/self` on Linux when scraped, as the Go and Python
//! clients do (CPU ticks are `USER_HZ`, 100 per second on every Linux
//! ABI); a figure that cannot be read is left out rather than guessed, and
//! on other platforms there are none.

/// The figures that could be read.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Figures {
    pub resident_memory_bytes: Option<u64>,
    pub cpu_seconds: Option<f64>,
    pub open_fds: Option<u64>,
    pub max_fds: Option<u64>,
    pub start_time_seconds: Option<f64>,
}

/// This process's figures now.
pub fn figures() -> Figures {
    #[cfg(target_os = "linux")]
    {
        linux::figures()
    }
    #[cfg(not(target_os = "linux"))]
    {
        Figures::default()
    }
}

impl Figures {
    /// The Prometheus text of the figures read.
    pub fn write(&self, out: &mut String) {
        use std::fmt::Write;
        let lines = [
            (
                "process_resident_memory_bytes",
                "gauge",
                "Resident memory size in bytes.",
                self.resident_memory_bytes.map(|v| v.to_string()),
            ),
            (
                "process_cpu_seconds_total",
                "counter",
                "Total user and system CPU time spent in seconds.",
                self.cpu_seconds.map(|v| v.to_string()),
            ),
            (
                "process_open_fds",
                "gauge",
                "Number of open file descriptors.",
                self.open_fds.map(|v| v.to_string()),
            ),
            (
                "process_max_fds",
                "gauge",
                "Maximum number of open file descriptors (the soft limit).",
                self.max_fds.map(|v| v.to_string()),
            ),
            (
                "process_start_time_seconds",
                "gauge",
                "Start time of the process since the Unix epoch in seconds.",
                self.start_time_seconds.map(|v| v.to_string()),
            ),
        ];
        for (name, kind, help, value) in lines {
            if let Some(value) = value {
                let _ = writeln!(
                    out,
                    "# HELP {name} {help}\n# TYPE {name} {kind}\n{name} {value}"
                );
            }
        }
    }
}

#[cfg(target_os = "linux")]
mod linux {
    use super::Figures;

    /// Clock ticks per second of `/proc/*/stat` times (`USER_HZ`: fixed
    /// at 100 for user space on every Linux architecture).
    const TICKS_PER_SECOND: f64 = 100.0;

    pub fn figures() -> Figures {
        let stat = std::fs::read_to_string("/proc/self/stat").ok();
        let fields = stat.as_deref().map(stat_fields).unwrap_or_default();
        // Fields after the command (which may hold spaces), numbered as
        // proc(5) numbers them: utime 14, stime 15, starttime 22.
        let field =
            |number: usize| -> Option<u64> { fields.get(number.checked_sub(3)?)?.parse().ok() };
        let cpu_seconds = match (field(14), field(15)) {
            (Some(user), Some(system)) => Some((user + system) as f64 / TICKS_PER_SECOND),
            _ => None,
        };
        let start_time_seconds = field(22).and_then(|ticks| {
            let boot = boot_time()?;
            Some(boot as f64 + ticks as f64 / TICKS_PER_SECOND)
        });
        Figures {
            resident_memory_bytes: resident_memory_bytes(),
            cpu_seconds,
            open_fds: std::fs::read_dir("/proc/self/fd")
                .ok()
                .map(|entries| entries.count() as u64),
            max_fds: crate::open_files::limit(),
            start_time_seconds,
        }
    }

    /// The fields of `/proc/self/stat` after `(comm)`, from the state on.
    fn stat_fields(stat: &str) -> Vec<&str> {
        stat.rsplit_once(')')
            .map(|(_, rest)| rest.split_whitespace().collect())
            .unwrap_or_default()
    }

    /// `VmRSS` of `/proc/self/status`, in bytes.
    fn resident_memory_bytes() -> Option<u64> {
        let status = std::fs::read_to_string("/proc/self/status").ok()?;
        let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
        let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
        Some(kib * 1024)
    }

    /// When the system booted, in seconds since the epoch (`btime`).
    fn boot_time() -> Option<u64> {
        let stat = std::fs::read_to_string("/proc/stat").ok()?;
        let line = stat.lines().find(|l| l.starts_with("btime "))?;
        line.split_whitespace().nth(1)?.parse().ok()
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        #[test]
        fn a_command_with_spaces_and_parentheses_does_not_shift_the_fields() {
            let stat =
                "42 (a (b) c) S 1 42 42 0 -1 4194560 100 0 0 0 250 130 0 0 20 0 9 0 5000 1000 300";
            let fields = stat_fields(stat);
            assert_eq!(fields[0], "S");
            // utime (14) and stime (15), starttime (22)
            assert_eq!(fields[14 - 3], "250");
            assert_eq!(fields[15 - 3], "130");
            assert_eq!(fields[22 - 3], "5000");
        }

        #[test]
        fn this_process_has_every_figure() {
            let figures = figures();
            assert!(figures.resident_memory_bytes.is_some_and(|b| b > 0));
            assert!(figures.cpu_seconds.is_some());
            assert!(figures.open_fds.is_some_and(|n| n > 0));
            assert!(figures.max_fds.is_some_and(|n| n > 0));
            assert!(figures.start_time_seconds.is_some_and(|s| s > 1e9));
        }
    }
}
