//! Who may open the console, and what every console response carries.
//!
//! Two gates. [`network_gate`], on every console route: without `[auth]`
//! only a peer on the loopback interface whose `Host` names a loopback
//! host (a page of another site whose name was rebound to 127.0.0.1 names
//! its own host) unless `console.allow_remote`; every POST must be JSON
//! from the console's own origin (`Origin`, `Sec-Fetch-Site`), which a
//! form or script of another site cannot send; and every response gets
//! the security headers ([`secure`]). [`api_gate`], on the data routes:
//! with `[auth]`, a verified credential carrying the console scope or the
//! admin scope (`401`/`403` with the endpoint's challenge otherwise).

use crate::auth::resource;
use crate::gateway::Gateway;
use crate::reply::json_response;
use crate::visibility::Caller;
use axum::extract::{ConnectInfo, Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::Response;
use serde_json::json;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

/// What every console page may load: its own script, style and API, and
/// nothing inline, framed or sent elsewhere.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; \
    style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; \
    form-action 'none'; frame-ancestors 'none'";

/// Refuses what the network rules and the cross-site rule refuse, and
/// adds the security headers to whatever is answered.
pub async fn network_gate(
    State(gateway): State<Arc<Gateway>>,
    request: Request,
    next: Next,
) -> Response {
    let peer = request
        .extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .map(|ConnectInfo(peer)| peer.ip());
    let headers = request.headers();
    let console = &gateway.settings.console;
    let refusal = if !gateway.auth.is_configured() && !console.allow_remote {
        local_only(peer, headers)
    } else {
        None
    };
    let refusal = refusal.or_else(|| {
        (request.method() == Method::POST)
            .then(|| same_origin_json(headers))
            .flatten()
    });
    let response = match refusal {
        Some(message) => {
            tracing::info!(target: "sezzlee::console", "console request refused: {message}");
            json_response(
                StatusCode::FORBIDDEN,
                &json!({"error": "forbidden", "message": message}),
            )
        }
        None => next.run(request).await,
    };
    secure(response)
}

/// The console's own caller, as [`api_gate`] judged it from the request
/// (credentials, headers, peer address), for the routes behind it: a
/// token is verified once per request.
#[derive(Clone)]
pub struct ConsoleCaller(pub Caller);

/// With `[auth]`, lets through only a credential with the console or the
/// admin scope; without, everyone the network gate let through. The
/// caller goes on to the route as a [`ConsoleCaller`].
pub async fn api_gate(
    State(gateway): State<Arc<Gateway>>,
    headers: HeaderMap,
    mut request: Request,
    next: Next,
) -> Response {
    let mut caller = gateway.auth.caller(&headers).await;
    let scope = &gateway.settings.console.scope;
    match gateway
        .auth
        .scoped_access(&caller, &headers, Some(scope.as_str()))
    {
        Ok(()) => {
            caller.address = request
                .extensions()
                .get::<ConnectInfo<SocketAddr>>()
                .map(|ConnectInfo(peer)| peer.ip());
            caller.headers = headers;
            request.extensions_mut().insert(ConsoleCaller(caller));
            next.run(request).await
        }
        Err(refusal) => resource::scoped_refusal(&gateway.resource(), &headers, refusal, scope),
    }
}

/// Why a caller is refused the console without `[auth]`: not on the
/// loopback interface, or naming a host that is not a loopback one.
pub fn local_only(peer: Option<IpAddr>, headers: &HeaderMap) -> Option<String> {
    if !peer.is_some_and(|ip| ip.is_loopback() || is_mapped_loopback(ip)) {
        return Some(
            "the console answers only on the loopback interface while [auth] is not \
             configured; configure [auth] (the console then asks for a credential with \
             the console scope) or set console.allow_remote = true"
                .to_string(),
        );
    }
    let host = headers
        .get(header::HOST)
        .and_then(|value| value.to_str().ok())
        .unwrap_or_default();
    if !is_loopback_host(host) {
        return Some(format!(
            "the console answers only to a loopback host name (localhost, 127.0.0.1, [::1]) \
             while [auth] is not configured, not to '{host}'"
        ));
    }
    None
}

fn is_mapped_loopback(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().is_some_and(|v4| v4.is_loopback()),
        IpAddr::V4(_) => false,
    }
}

/// `localhost`, `127.x.y.z` or `[::1]`, with or without a port.
fn is_loopback_host(host: &str) -> bool {
    let name = if let Some(rest) = host.strip_prefix('[') {
        rest.split(']').next().unwrap_or_default()
    } else {
        host.rsplit_once(':').map_or(host, |(name, _)| name)
    };
    name.eq_ignore_ascii_case("localhost")
        || name
            .parse::<IpAddr>()
            .is_ok_and(|ip| ip.is_loopback() || is_mapped_loopback(ip))
}

/// Why a POST is refused as cross-site: a JSON body only, and when the
/// browser says where it comes from, the console's own origin.
pub fn same_origin_json(headers: &HeaderMap) -> Option<String> {
    let text = |name: header::HeaderName| {
        headers
            .get(name)
            .map(|value| value.to_str().unwrap_or("(not ASCII)"))
    };
    let json_body = text(header::CONTENT_TYPE).is_some_and(|value| {
        value
            .split(';')
            .next()
            .is_some_and(|kind| kind.trim().eq_ignore_ascii_case("application/json"))
    });
    if !json_body {
        return Some("console requests carry a JSON body (Content-Type: application/json)".into());
    }
    if let Some(site) = headers
        .get("sec-fetch-site")
        .and_then(|value| value.to_str().ok())
        && !matches!(site, "same-origin" | "none")
    {
        return Some(format!(
            "console requests come from the console's own pages, not from another site \
             (Sec-Fetch-Site: {site})"
        ));
    }
    if let Some(origin) = text(header::ORIGIN) {
        let host = text(header::HOST).unwrap_or_default();
        let own = origin.split_once("://").is_some_and(|(scheme, authority)| {
            matches!(scheme, "http" | "https") && authority.eq_ignore_ascii_case(host)
        });
        if !own {
            return Some(format!(
                "console requests come from the console's own origin, not from {origin}"
            ));
        }
    }
    None
}

/// The headers every console response carries: the policy above, no
/// sniffing, no referrer, no framing, and nothing kept in caches (the
/// API's answers are the operator's business).
fn secure(mut response: Response) -> Response {
    let headers = response.headers_mut();
    for (name, value) in [
        ("content-security-policy", CONTENT_SECURITY_POLICY),
        ("x-content-type-options", "nosniff"),
        ("referrer-policy", "no-referrer"),
        ("x-frame-options", "DENY"),
        ("cross-origin-opener-policy", "same-origin"),
        ("cross-origin-resource-policy", "same-origin"),
        ("cache-control", "no-store"),
    ] {
        headers.insert(name, HeaderValue::from_static(value));
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.insert(
                header::HeaderName::from_bytes(name.as_bytes()).unwrap(),
                HeaderValue::from_str(value).unwrap(),
            );
        }
        map
    }

    #[test]
    fn without_auth_only_loopback_peers_naming_loopback_hosts() {
        let local: IpAddr = "127.0.0.1".parse().unwrap();
        let mapped: IpAddr = "::ffff:127.0.0.1".parse().unwrap();
        let remote: IpAddr = "10.1.2.3".parse().unwrap();
        for host in [
            "127.0.0.1:8080",
            "localhost",
            "LOCALHOST:1",
            "[::1]:80",
            "127.9.9.9",
        ] {
            assert_eq!(
                local_only(Some(local), &headers(&[("host", host)])),
                None,
                "{host}"
            );
        }
        assert_eq!(
            local_only(Some(mapped), &headers(&[("host", "localhost:1")])),
            None
        );
        assert!(local_only(Some(remote), &headers(&[("host", "127.0.0.1")])).is_some());
        assert!(local_only(None, &headers(&[("host", "127.0.0.1")])).is_some());
        // A name rebound to 127.0.0.1 names itself in Host.
        for host in [
            "evil.example:8080",
            "",
            "localhost.evil.example",
            "127.0.0.1.nip.io",
        ] {
            assert!(
                local_only(Some(local), &headers(&[("host", host)])).is_some(),
                "{host}"
            );
        }
    }

    #[test]
    fn a_post_must_be_json_from_the_console_s_origin() {
        let json = ("content-type", "application/json; charset=utf-8");
        let host = ("host", "127.0.0.1:8080");
        assert_eq!(same_origin_json(&headers(&[json, host])), None);
        assert_eq!(
            same_origin_json(&headers(&[
                json,
                host,
                ("origin", "http://127.0.0.1:8080"),
                ("sec-fetch-site", "same-origin")
            ])),
            None
        );
        for refused in [
            vec![host, ("content-type", "text/plain")],
            vec![host, ("content-type", "application/x-www-form-urlencoded")],
            vec![host],
            vec![json, host, ("origin", "http://evil.example")],
            vec![json, host, ("origin", "http://127.0.0.1:9999")],
            vec![json, host, ("origin", "null")],
            vec![json, host, ("sec-fetch-site", "cross-site")],
            vec![json, host, ("sec-fetch-site", "same-site")],
        ] {
            assert!(
                same_origin_json(&headers(&refused)).is_some(),
                "{refused:?}"
            );
        }
    }
}
