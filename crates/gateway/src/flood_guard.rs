//! The flood guard: a rate per peer address on the MCP endpoint, enforced
//! before a request is read (`[limits] requests_per_second_per_address`,
//! docs/contract.md §7).
//!
//! Why it exists: the rates of [`crate::limits`] act inside `tools/call`,
//! once a request has been read, parsed, its caller identified and its
//! era chosen. A client that sends requests as fast as it can (a bug in a
//! loop, a hostile script) costs all of that on every one, whatever it
//! asks. This guard answers such a client with `429 Too Many Requests`
//! and `Retry-After` (whole seconds, rounded up, at least 1) from the
//! request's head alone: its body is not read and nothing is parsed.
//!
//! The allowance is a GCRA per address ([`gcra::Cells`]): the rate a
//! second, and about one second's worth of requests at once (a burst of
//! `rate`), so a client that waits what `Retry-After` says gets through.
//! It guards POST, GET and DELETE of the MCP endpoint (`router.rs` layers
//! it there alone); the probes (`/healthz`, `/readyz`) and the operator's
//! routes (`/status`, `/metrics`, under their own rules) are never
//! limited. Nor is a load balancer's health check, a 2026-07-28
//! `server/discover` POST, recognised by its headers without reading the
//! body: `Mcp-Method: server/discover` together with
//! `MCP-Protocol-Version: 2026-07-28`. A client that sends those headers
//! on another request gains nothing: at that revision the gateway refuses
//! a request whose `Mcp-Method` differs from its body's method, before
//! anything else is done for it.
//!
//! The key is the peer address, as `Caller.address` is: behind a proxy
//! every caller shares the proxy's. Refusals are counted
//! (`sezzlee_flood_refused_total`, `/status` `limits.floodRefused`), never
//! logged one by one (a flood would flood the log).

use crate::jsonrpc::{ErrorCode, ErrorReply};
use crate::limits::gcra::{Cells, Rate};
use crate::reply::json_response;
use axum::extract::{ConnectInfo, Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::Response;
use std::fmt::Write as _;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// The JSON-RPC code of a refusal (implementation-defined server error).
pub const TOO_FAST: ErrorCode = ErrorCode(-32000);

/// The rate per address and what it refused.
pub struct FloodGuard {
    /// Requests a second per address; `None`: no limit.
    per_second: Option<u32>,
    cells: Cells,
    refused: AtomicU64,
}

impl FloodGuard {
    /// A guard holding each address to `per_second` requests a second
    /// (`None`: none is held).
    pub fn new(per_second: Option<u32>) -> FloodGuard {
        FloodGuard {
            per_second,
            cells: Cells::default(),
            refused: AtomicU64::new(0),
        }
    }

    /// Whether a rate is set (else `router.rs` does not layer the guard).
    pub fn is_on(&self) -> bool {
        self.per_second.is_some()
    }

    /// Spends one request of `address`'s allowance at `now`, or says how
    /// long until one is allowed (and counts the refusal).
    pub fn take(&self, address: std::net::IpAddr, now: Instant) -> Result<(), Duration> {
        let Some(per_second) = self.per_second else {
            return Ok(());
        };
        let rate = Rate::per_minute(per_second.saturating_mul(60), per_second);
        let mut key = String::with_capacity(40);
        let _ = write!(key, "{address}");
        self.cells.take(&key, rate, now).inspect_err(|_| {
            self.refused.fetch_add(1, Ordering::Relaxed);
        })
    }

    /// Requests refused since the start.
    pub fn refused(&self) -> u64 {
        self.refused.load(Ordering::Relaxed)
    }

    /// `limits` of `/status` with `floodRefused` (and the rate) added.
    pub fn add_status(&self, mut limits: serde_json::Value) -> serde_json::Value {
        if let Some(limits) = limits.as_object_mut() {
            limits.insert(
                "requestsPerSecondPerAddress".to_string(),
                serde_json::json!(self.per_second),
            );
            limits.insert(
                "floodRefused".to_string(),
                serde_json::json!(self.refused()),
            );
        }
        limits
    }

    /// `sezzlee_flood_refused_total`, in Prometheus text.
    pub fn write_metrics(&self, out: &mut String) {
        let _ = writeln!(
            out,
            "# HELP sezzlee_flood_refused_total Requests to the MCP endpoint refused with 429 because their address sent faster than requests_per_second_per_address.\n# TYPE sezzlee_flood_refused_total counter\nsezzlee_flood_refused_total {}",
            self.refused()
        );
    }
}

/// The middleware: lets a request through, or answers `429` from its head.
pub async fn guard(State(guard): State<Arc<FloodGuard>>, request: Request, next: Next) -> Response {
    let peer = request
        .extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .map(|ConnectInfo(peer)| peer.ip());
    let Some(address) = peer else {
        return next.run(request).await;
    };
    if is_discover(request.method(), request.headers()) {
        return next.run(request).await;
    }
    match guard.take(address, Instant::now()) {
        Ok(()) => next.run(request).await,
        Err(wait) => too_fast(address, wait),
    }
}

/// A load balancer's health check: a 2026-07-28 `server/discover` POST,
/// by its headers.
fn is_discover(method: &Method, headers: &HeaderMap) -> bool {
    let is = |name: &str, value: &str| {
        headers
            .get(name)
            .is_some_and(|header| header.as_bytes() == value.as_bytes())
    };
    method == Method::POST
        && is(
            "mcp-method",
            sezzlee_protocol::Method::ServerDiscover.as_str(),
        )
        && is("mcp-protocol-version", sezzlee_protocol::STATELESS_VERSION)
}

/// Whole seconds to wait: `wait` rounded up, at least 1.
fn retry_after_seconds(wait: Duration) -> u64 {
    let seconds = wait.as_secs() + u64::from(wait.subsec_nanos() > 0);
    seconds.max(1)
}

/// The refusal: `429`, `Retry-After`, a JSON-RPC error without an id (the
/// body was not read).
fn too_fast(address: std::net::IpAddr, wait: Duration) -> Response {
    let seconds = retry_after_seconds(wait);
    let error = ErrorReply::new(
        StatusCode::TOO_MANY_REQUESTS,
        TOO_FAST,
        format!(
            "Too many requests: {address} sends faster than this gateway allows an address; retry after {seconds} s"
        ),
    );
    let mut response = json_response(StatusCode::TOO_MANY_REQUESTS, &error.body(None));
    response
        .headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from(seconds));
    response
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{IpAddr, Ipv4Addr};

    const A: IpAddr = IpAddr::V4(Ipv4Addr::new(192, 0, 2, 1));
    const B: IpAddr = IpAddr::V4(Ipv4Addr::new(192, 0, 2, 2));

    #[test]
    fn one_seconds_worth_at_once_then_the_rate() {
        let guard = FloodGuard::new(Some(10));
        let now = Instant::now();
        for n in 0..10 {
            assert_eq!(guard.take(A, now), Ok(()), "request {n}");
        }
        let wait = guard.take(A, now).unwrap_err();
        assert_eq!(wait, Duration::from_millis(100));
        assert_eq!(retry_after_seconds(wait), 1);
        // Another address has its own allowance.
        assert_eq!(guard.take(B, now), Ok(()));
        assert_eq!(guard.take(A, now + wait), Ok(()));
        assert_eq!(guard.refused(), 1);
    }

    #[test]
    fn unset_refuses_nothing() {
        let guard = FloodGuard::new(None);
        let now = Instant::now();
        assert!((0..1_000).all(|_| guard.take(A, now).is_ok()));
        assert_eq!(guard.refused(), 0);
    }

    #[test]
    fn retry_after_is_whole_seconds_rounded_up() {
        assert_eq!(retry_after_seconds(Duration::ZERO), 1);
        assert_eq!(retry_after_seconds(Duration::from_millis(1)), 1);
        assert_eq!(retry_after_seconds(Duration::from_secs(1)), 1);
        assert_eq!(retry_after_seconds(Duration::from_millis(1_001)), 2);
    }

    #[test]
    fn discover_is_told_by_both_headers() {
        let mut headers = HeaderMap::new();
        headers.insert("mcp-method", HeaderValue::from_static("server/discover"));
        assert!(!is_discover(&Method::POST, &headers));
        headers.insert(
            "mcp-protocol-version",
            HeaderValue::from_static("2026-07-28"),
        );
        assert!(is_discover(&Method::POST, &headers));
        assert!(!is_discover(&Method::GET, &headers));
        headers.insert("mcp-method", HeaderValue::from_static("tools/list"));
        assert!(!is_discover(&Method::POST, &headers));
    }
}
