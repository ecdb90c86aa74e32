//! The process's open-files limit, and the connection cap derived from it.
//!
//! Why: every caller connection, backend socket, catalog file read and
//! watch takes a descriptor from one limit. Hitting it makes `accept` fail
//! (the gateway stops taking callers for a second at a time) and, worse,
//! makes backend calls and reloads fail for the callers already served. So
//! `serve` raises the soft limit to the hard one at start, as Go's runtime
//! and most servers do (the soft default of 1,024 is a relic of `select`),
//! and caps connections at half of it by default (`max_connections`),
//! leaving the other half for what the connections' calls need.

/// The connection cap when the limit cannot be read (not a Unix).
const WITHOUT_A_LIMIT: usize = 16_384;
/// The least default cap, however low the limit.
const LEAST: usize = 16;

/// The soft open-files limit, if the platform has one.
pub fn limit() -> Option<u64> {
    #[cfg(unix)]
    {
        rlimit::Resource::NOFILE.get().ok().map(|(soft, _)| soft)
    }
    #[cfg(not(unix))]
    {
        None
    }
}

/// Raises the soft open-files limit to the hard one; the limit in force
/// after, if the platform has one. Failing to raise it is not an error:
/// the limit stays as it was.
pub fn raise_limit() -> Option<u64> {
    #[cfg(unix)]
    {
        if let Err(err) = rlimit::increase_nofile_limit(u64::MAX) {
            tracing::warn!("the open-files limit could not be raised: {err}");
        }
    }
    limit()
}

/// `max_connections` by default: half the open-files limit.
pub fn default_max_connections() -> usize {
    cap_for(limit())
}

fn cap_for(limit: Option<u64>) -> usize {
    match limit {
        Some(limit) => usize::try_from(limit / 2).unwrap_or(usize::MAX).max(LEAST),
        None => WITHOUT_A_LIMIT,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cap_is_half_the_limit_and_never_tiny() {
        assert_eq!(cap_for(Some(1024)), 512);
        assert_eq!(cap_for(Some(1_048_576)), 524_288);
        assert_eq!(cap_for(Some(10)), LEAST);
        assert_eq!(
            cap_for(Some(u64::MAX)),
            usize::try_from(u64::MAX / 2).unwrap_or(usize::MAX)
        );
        assert_eq!(cap_for(None), WITHOUT_A_LIMIT);
    }

    #[cfg(unix)]
    #[test]
    fn the_default_follows_the_limit_in_force() {
        let limit = limit().expect("Unix has an open-files limit");
        assert_eq!(default_max_connections(), cap_for(Some(limit)));
    }
}
