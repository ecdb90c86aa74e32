//! The backend calls that make up nearly all of invoke_tool's traffic, on
//! hyper's own pooled client (`hyper_util::client::legacy`, the client
//! reqwest itself wraps) with rustls for `https://`.
//!
//! Why not reqwest for these: measured in `benches/http_load.rs` ((j)
//! against (l)), reqwest's own layers around that same client (URL
//! parsing with IDNA, its redirect and retry services, per-request proxy
//! matching) cost a bare proxy hop half again the CPU it costs without
//! them (the figures: `benches/README.md`, `http_load`). reqwest stays for the calls it
//! does better (`super::BackendClient::send` routes them): multipart bodies,
//! whose encoding it owns, calls an egress proxy named in the environment
//! intercepts, which it tunnels, and URLs with user information (sent as
//! Basic credentials) or that `http::Uri` refuses (reqwest's parser takes
//! IDNA hosts).
//!
//! What reqwest gave the gateway is kept: no redirects are followed
//! (hyper's client follows none), TLS 1.2 and 1.3 with Mozilla's roots and
//! ALPN for HTTP/2, a 10 s connect timeout, `TCP_NODELAY`, idle
//! connections closed after 60 s, and `Accept: */*` when the request names
//! no `Accept`.

use super::Failure;
use super::request::Outgoing;
use axum::body::Bytes;
use axum::http::{HeaderValue, Method, Request, Response, Uri, header};
use http_body_util::Full;
use hyper::body::Incoming;
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::{TokioExecutor, TokioTimer};
use std::time::Duration;

/// Longest wait for a TCP connection to a backend.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// How long an idle pooled connection is kept.
const POOL_IDLE: Duration = Duration::from_secs(60);

/// One pooled client (cheap to clone: the pool is shared).
#[derive(Clone)]
pub struct DirectClient {
    http: Client<HttpsConnector<HttpConnector>, Full<Bytes>>,
}

impl DirectClient {
    /// A client, or why TLS could not be set up.
    pub fn new() -> Result<DirectClient, rustls::Error> {
        let mut tcp = HttpConnector::new();
        tcp.enforce_http(false);
        tcp.set_nodelay(true);
        tcp.set_connect_timeout(Some(CONNECT_TIMEOUT));
        let connector = hyper_rustls::HttpsConnectorBuilder::new()
            .with_provider_and_webpki_roots(rustls::crypto::ring::default_provider())?
            .https_or_http()
            .enable_all_versions()
            .wrap_connector(tcp);
        let http = Client::builder(TokioExecutor::new())
            .pool_idle_timeout(POOL_IDLE)
            .pool_timer(TokioTimer::new())
            .timer(TokioTimer::new())
            .build(connector);
        Ok(DirectClient { http })
    }

    /// Sends `outgoing` (whose body is not multipart) to `uri`; the
    /// response's head, its body still to be read.
    pub async fn send(&self, uri: Uri, outgoing: Outgoing) -> Result<Response<Incoming>, Failure> {
        let request = build(uri, outgoing)?;
        let https = request.uri().scheme_str() == Some("https");
        self.http
            .request(request)
            .await
            .map_err(|err| classify(&err, https))
    }
}

/// The HTTP request of `outgoing`, or why it cannot be made (a header
/// name or value HTTP does not allow).
fn build(uri: Uri, outgoing: Outgoing) -> Result<Request<Full<Bytes>>, Failure> {
    let unbuildable = |why: String| Failure::Unavailable {
        detail: format!("the request could not be built: {why}"),
        maybe_reached: false,
    };
    let method = Method::from_bytes(outgoing.method.as_bytes())
        .map_err(|_| unbuildable(format!("'{}' is not an HTTP method", outgoing.method)))?;
    let mut request = Request::builder().method(method).uri(uri);
    let mut names_accept = false;
    for (name, value) in &outgoing.headers {
        names_accept |= name.eq_ignore_ascii_case("accept");
        request = request.header(name.as_str(), value.as_str());
    }
    if !names_accept {
        request = request.header(header::ACCEPT, HeaderValue::from_static("*/*"));
    }
    let body = match outgoing.body {
        None => Full::new(Bytes::new()),
        Some(super::request::OutgoingBody::Bytes {
            content_type,
            bytes,
        }) => {
            request = request.header(header::CONTENT_TYPE, content_type);
            Full::new(Bytes::from(bytes))
        }
        Some(super::request::OutgoingBody::Multipart(_)) => {
            return Err(unbuildable(
                "multipart bodies are sent by the other client".to_string(),
            ));
        }
    };
    request
        .body(body)
        .map_err(|err| unbuildable(err.to_string()))
}

/// No response: did bytes leave, and was it TLS that failed?
fn classify(err: &hyper_util::client::legacy::Error, https: bool) -> Failure {
    Failure::Unavailable {
        detail: super::failure_detail(err, err.is_connect() && https),
        maybe_reached: !err.is_connect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::request::OutgoingBody;

    fn outgoing(headers: &[(&str, &str)], body: Option<OutgoingBody>) -> Outgoing {
        Outgoing {
            method: "POST".to_string(),
            url: "http://127.0.0.1:1/x".to_string(),
            headers: headers
                .iter()
                .map(|(n, v)| (n.to_string(), v.to_string()))
                .collect(),
            body,
        }
    }

    #[test]
    fn accept_is_added_only_when_absent_and_bodies_carry_their_type() {
        let uri: Uri = "http://127.0.0.1:1/x".parse().unwrap();
        let plain = build(uri.clone(), outgoing(&[], None)).unwrap();
        assert_eq!(plain.headers()["accept"], "*/*");
        let named = build(
            uri.clone(),
            outgoing(
                &[("Accept", "application/json")],
                Some(OutgoingBody::Bytes {
                    content_type: "application/json".to_string(),
                    bytes: b"{}".to_vec(),
                }),
            ),
        )
        .unwrap();
        assert_eq!(named.headers().get_all("accept").iter().count(), 1);
        assert_eq!(named.headers()["accept"], "application/json");
        assert_eq!(named.headers()["content-type"], "application/json");
    }

    #[test]
    fn headers_http_forbids_are_refused_before_anything_is_sent() {
        let uri: Uri = "http://127.0.0.1:1/x".parse().unwrap();
        let refused = build(uri, outgoing(&[("x-bad", "line\nbreak")], None));
        assert!(matches!(
            refused,
            Err(Failure::Unavailable {
                maybe_reached: false,
                ..
            })
        ));
    }
}
