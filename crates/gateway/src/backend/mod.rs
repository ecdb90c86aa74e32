//! The one place that talks to APIs: send the built request, read a
//! bounded response, classify what happened.
//!
//! Redirects are never followed (a 3xx is reported as it is), each backend
//! has a timeout, and at most `max_response_bytes` of a response are read,
//! so a slow or huge backend cannot hold the gateway. Failures say whether
//! the request may have reached the backend, because that decides whether
//! retrying is safe.

pub mod credentials;
pub mod direct;
mod form;
pub mod request;
pub mod response;

use crate::environment::Environment;
use direct::DirectClient;
use hyper_util::client::proxy::matcher::Matcher;
use request::{Outgoing, OutgoingBody};
use reqwest::redirect::Policy;
use response::BackendResponse;
use std::time::Duration;

/// Default per-backend timeout.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

/// The time a call to a backend (an API, or an upstream MCP server) may
/// take: its `backend.timeoutMs`, else [`DEFAULT_TIMEOUT`].
pub fn call_timeout(backend: &sezzlee_catalog::sidecar::BackendConfig) -> Duration {
    backend
        .timeout_ms
        .map_or(DEFAULT_TIMEOUT, Duration::from_millis)
}
/// Most response bytes read from a backend.
pub const DEFAULT_MAX_RESPONSE_BYTES: usize = 8 * 1024 * 1024;

/// What a failed TLS handshake's detail starts with.
const TLS_FAILED: &str = "the TLS handshake failed: is the backend serving HTTPS on this port, with a certificate the gateway trusts? ";

/// Why a call produced no HTTP response.
#[derive(Debug, Clone, PartialEq)]
pub enum Failure {
    /// No connection could be made: the request did not reach the backend.
    Unavailable { detail: String, maybe_reached: bool },
    /// No complete answer in time: the request may have reached the backend.
    Timeout { after: Duration },
    /// The name system says the backend's host name does not exist: nothing
    /// was sent, and a retry cannot help until the catalog changes. (The
    /// host is the request's: the caller names it from the URL it built.)
    UnknownHost,
}

/// What resolvers say (glibc, musl, macOS) when a name does not exist, as
/// opposed to a resolver that could not be asked (`Temporary failure in
/// name resolution`, which a retry may cure).
const NO_SUCH_NAME: [&str; 3] = [
    "Name or service not known",
    "No address associated with hostname",
    "nodename nor servname provided",
];

/// A connection failure that is the name system saying the host does not
/// exist becomes [`Failure::UnknownHost`].
fn name_not_found(failure: Failure) -> Failure {
    match &failure {
        Failure::Unavailable {
            detail,
            maybe_reached: false,
        } if detail.contains("dns error") && NO_SUCH_NAME.iter().any(|m| detail.contains(m)) => {
            Failure::UnknownHost
        }
        _ => failure,
    }
}

/// The host of an absolute URL (without user information or port), for
/// messages and logs: never the path, the query or credentials.
pub fn host_of(url: &str) -> &str {
    let after_scheme = url.split_once("://").map_or(url, |(_, rest)| rest);
    let authority = after_scheme
        .split(['/', '?', '#'])
        .next()
        .unwrap_or_default();
    let host_port = authority
        .rsplit_once('@')
        .map_or(authority, |(_, host)| host);
    if host_port.starts_with('[') {
        return host_port
            .split_once(']')
            .map_or(host_port, |(host, _)| &host[1..]);
    }
    host_port.split(':').next().unwrap_or_default()
}

/// The HTTP clients: one of each kind per serving thread
/// (`crate::serving_threads`), so a backend connection is driven on the
/// thread whose calls use it, and one for calls made anywhere else; each
/// pools connections per backend host.
///
/// Most calls go through hyper's own client ([`direct`]); multipart bodies,
/// calls an egress proxy from the environment (`HTTPS_PROXY`,
/// `HTTP_PROXY`, `ALL_PROXY`, less `NO_PROXY`) intercepts, and URLs with
/// user information or that `http::Uri` refuses go through reqwest, which
/// encodes, tunnels, sends Basic credentials and parses them as before.
pub struct BackendClient {
    direct: PerThread<DirectClient>,
    reqwest: PerThread<reqwest::Client>,
    /// The environment's egress proxies, read once at start.
    proxies: Matcher,
    pub max_response_bytes: usize,
    /// Backend credentials other than the caller's own (`backend.auth`).
    pub credentials: credentials::Credentials,
    /// Where `${VARIABLE}`s of backend URLs and headers are read.
    environment: Environment,
}

/// One client per serving thread, and a shared one.
struct PerThread<T> {
    shared: T,
    per_thread: Vec<T>,
}

impl<T> PerThread<T> {
    fn new<E>(threads: usize, make: impl Fn() -> Result<T, E>) -> Result<PerThread<T>, E> {
        Ok(PerThread {
            shared: make()?,
            per_thread: (0..threads).map(|_| make()).collect::<Result<_, _>>()?,
        })
    }

    /// The client of the serving thread this runs on, else the shared one.
    fn here(&self) -> &T {
        crate::serving_threads::current()
            .and_then(|index| self.per_thread.get(index))
            .unwrap_or(&self.shared)
    }
}

impl BackendClient {
    /// The backend clients, or why they cannot be made (the TLS stack could
    /// not start). There is no fallback: any other client would follow
    /// redirects, which a gateway calling APIs on a caller's behalf must
    /// never do, so start-up fails instead.
    /// `serving_threads` is how many threads serve connections (one pool
    /// each).
    pub fn new(
        max_response_bytes: usize,
        serving_threads: usize,
        environment: Environment,
    ) -> Result<BackendClient, String> {
        let direct = PerThread::new(serving_threads, DirectClient::new)
            .map_err(|err| format!("TLS: {err}"))?;
        let reqwest = PerThread::new(serving_threads, || {
            reqwest::Client::builder()
                .redirect(Policy::none())
                .connect_timeout(Duration::from_secs(10))
                .pool_idle_timeout(Duration::from_secs(60))
                .build()
        })
        .map_err(|err| err.to_string())?;
        Ok(BackendClient {
            direct,
            reqwest,
            proxies: Matcher::from_env(),
            max_response_bytes,
            credentials: credentials::Credentials::new(environment.clone())
                .map_err(|err| err.to_string())?,
            environment,
        })
    }

    /// `text` with its `${VARIABLE}`s replaced ([`expand_env`]) from this
    /// client's environment.
    pub fn expand(&self, text: &str, self_url: Option<&str>) -> Result<String, UnsetVariable> {
        expand_env(text, self_url, &self.environment)
    }

    /// Sends one request and reads its response within `timeout`.
    pub async fn send(
        &self,
        outgoing: Outgoing,
        timeout: Duration,
    ) -> Result<BackendResponse, Failure> {
        let max = self.max_response_bytes;
        // A URL `http::Uri` does not take (a host to spell in IDNA) goes
        // to reqwest, whose URL parser does, and so does one with user
        // information, which reqwest sends as Basic credentials.
        let direct_uri = match outgoing.url.parse::<axum::http::Uri>() {
            Ok(uri)
                if !matches!(outgoing.body, Some(OutgoingBody::Multipart(_)))
                    && !uri.authority().is_some_and(|a| a.as_str().contains('@'))
                    && self.proxies.intercept(&uri).is_none() =>
            {
                Some(uri)
            }
            _ => None,
        };
        let exchange = async {
            match direct_uri {
                Some(uri) => {
                    let response = self.direct.here().send(uri, outgoing).await?;
                    response::read(response, max).await
                }
                None => {
                    let http = self.reqwest.here();
                    let request = reqwest_request(http, outgoing)?;
                    let response = http.execute(request).await.map_err(classify)?;
                    response::read(response.into(), max).await
                }
            }
        };
        match tokio::time::timeout(timeout, exchange).await {
            Ok(result) => result.map_err(name_not_found),
            Err(_) => Err(Failure::Timeout { after: timeout }),
        }
    }
}

/// `outgoing` as reqwest's request (multipart bodies encoded by reqwest).
fn reqwest_request(
    http: &reqwest::Client,
    outgoing: Outgoing,
) -> Result<reqwest::Request, Failure> {
    let method = reqwest::Method::from_bytes(outgoing.method.as_bytes()).map_err(|_| {
        Failure::Unavailable {
            detail: format!("'{}' is not an HTTP method", outgoing.method),
            maybe_reached: false,
        }
    })?;
    let mut builder = http.request(method, &outgoing.url);
    for (name, value) in &outgoing.headers {
        builder = builder.header(name.as_str(), value.as_str());
    }
    builder = match outgoing.body {
        None => builder,
        Some(OutgoingBody::Bytes {
            content_type,
            bytes,
        }) => builder.header("content-type", content_type).body(bytes),
        Some(OutgoingBody::Multipart(parts)) => {
            let mut form = reqwest::multipart::Form::new();
            for part in parts {
                let mut item = reqwest::multipart::Part::bytes(part.bytes);
                if part.file {
                    item = item.file_name(part.name.clone());
                }
                if let Some(content_type) = &part.content_type {
                    item = item
                        .mime_str(content_type)
                        .map_err(|_| Failure::Unavailable {
                            detail: format!("'{content_type}' is not a media type"),
                            maybe_reached: false,
                        })?;
                }
                if !part.headers.is_empty() {
                    let mut headers = reqwest::header::HeaderMap::new();
                    for (name, value) in &part.headers {
                        // Checked as header text when the catalog was built.
                        if let (Ok(name), Ok(value)) = (
                            reqwest::header::HeaderName::from_bytes(name.as_bytes()),
                            reqwest::header::HeaderValue::from_str(value),
                        ) {
                            headers.insert(name, value);
                        }
                    }
                    item = item.headers(headers);
                }
                form = form.part(part.name, item);
            }
            builder.multipart(form)
        }
    };
    builder.build().map_err(|err| Failure::Unavailable {
        detail: format!("the request could not be built: {err}"),
        maybe_reached: false,
    })
}

/// A reqwest call that produced no response: did bytes leave? The URL is
/// left out of the message: its query holds the caller's arguments.
fn classify(err: reqwest::Error) -> Failure {
    let err = err.without_url();
    let connect_over_https =
        err.is_connect() && err.url().is_some_and(|url| url.scheme() == "https");
    // A connect timeout is a connection failure: nothing was sent.
    if err.is_timeout() && !err.is_connect() {
        return Failure::Timeout {
            after: Duration::ZERO,
        };
    }
    Failure::Unavailable {
        detail: failure_detail(&err, connect_over_https),
        maybe_reached: !err.is_connect(),
    }
}

/// `err`'s message and every cause's, for either client. When connecting
/// over HTTPS failed with a TLS error among the causes, the detail starts
/// by saying so: tokio-rustls reports a failed handshake (a corrupt record,
/// an untrusted certificate) as `InvalidData`, where the TCP connection
/// itself fails with an OS error instead.
fn failure_detail(err: &(dyn std::error::Error + 'static), connect_over_https: bool) -> String {
    let mut detail = err.to_string();
    let mut tls_failed = false;
    let mut source = err.source();
    while let Some(cause) = source {
        detail.push_str(": ");
        detail.push_str(&cause.to_string());
        tls_failed |= is_invalid_data(cause);
        source = cause.source();
    }
    if tls_failed && connect_over_https {
        detail.insert_str(0, TLS_FAILED);
    }
    detail
}

/// Whether `cause` is, or wraps, an I/O error of kind `InvalidData`
/// (hyper-rustls wraps tokio-rustls's error in another I/O error).
fn is_invalid_data(cause: &(dyn std::error::Error + 'static)) -> bool {
    let mut current = Some(cause);
    while let Some(io) = current.and_then(|error| error.downcast_ref::<std::io::Error>()) {
        if io.kind() == std::io::ErrorKind::InvalidData {
            return true;
        }
        current = io
            .get_ref()
            .map(|inner| inner as &(dyn std::error::Error + 'static));
    }
    false
}

/// The variable naming the gateway's own address (`http://HOST:PORT`), so a
/// catalog can point at a backend the gateway itself serves (the demo).
pub const SELF_VARIABLE: &str = "SEZZLEE_SELF";

/// A `${VARIABLE}` the gateway's environment does not set: the call that
/// needs it cannot be built (its name is said, never a value).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnsetVariable(pub String);

impl std::fmt::Display for UnsetVariable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "environment variable {} is not set", self.0)
    }
}

impl std::error::Error for UnsetVariable {}

/// `${NAME}` references replaced by environment variables (and
/// `${SEZZLEE_SELF}` by `self_url`); a missing one is an error naming it
/// (never its value).
pub fn expand_env(
    text: &str,
    self_url: Option<&str>,
    environment: &Environment,
) -> Result<String, UnsetVariable> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let Some(end) = after.find('}') else {
            out.push_str(&rest[start..]);
            return Ok(out);
        };
        let name = &after[..end];
        let value = match (name, self_url) {
            (SELF_VARIABLE, Some(url)) => url.to_string(),
            _ => environment
                .var(name)
                .ok_or_else(|| UnsetVariable(name.to_string()))?,
        };
        out.push_str(&value);
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_host_is_read_without_port_path_or_credentials() {
        assert_eq!(
            host_of("https://api.example.com/v1?key=secret"),
            "api.example.com"
        );
        assert_eq!(host_of("http://user:pw@h.example:8080/x"), "h.example");
        assert_eq!(host_of("http://[::1]:9/x"), "::1");
        assert_eq!(host_of("http://h"), "h");
    }

    #[test]
    fn environment_references_expand() {
        let environment = Environment::fixed([("PLACE", "there")]);
        let expand = |text: &str, self_url| expand_env(text, self_url, &environment);
        assert_eq!(expand("plain", None).unwrap(), "plain");
        assert_eq!(expand("a ${PLACE} b", None).unwrap(), "a there b");
        // Only the gateway's environment: the process's PATH is not in it.
        let unset = expand("${PATH}", None).unwrap_err();
        assert_eq!(unset, UnsetVariable("PATH".to_string()));
        assert_eq!(unset.to_string(), "environment variable PATH is not set");
        assert_eq!(expand("${unclosed", None).unwrap(), "${unclosed");
        assert_eq!(
            expand("${SEZZLEE_SELF}/demo", Some("http://127.0.0.1:1")).unwrap(),
            "http://127.0.0.1:1/demo"
        );
        assert!(
            expand_env("${PATH}", None, &Environment::process()).is_ok(),
            "the process environment is read when served"
        );
    }
}
