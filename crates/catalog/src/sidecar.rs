//! The sidecar: a document's gateway configuration (`NAME.sezzlee.json|yaml`).
//!
//! It lets a catalog owner rename, describe, curate, hide and revise
//! operations, and configure the backend, without editing the API document
//! itself. A sidecar is all-or-nothing: any invalid value refuses the whole
//! file with an error naming the key, so a typo can never half-apply.

use serde::{Deserialize, Deserializer};
use serde_json::{Map, Value};
use std::collections::BTreeMap;

/// A parsed, validated sidecar.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Sidecar {
    pub namespace: Option<String>,
    #[serde(default)]
    pub backend: BackendConfig,
    #[serde(default)]
    pub revision: RevisionConfig,
    /// Per operation, keyed `"METHOD /path"` as the document writes the path.
    #[serde(default)]
    pub tools: BTreeMap<String, ToolConfig>,
    /// Named visibility policies (see visibility).
    #[serde(default)]
    pub policies: BTreeMap<String, Policy>,
    /// A policy applied to every operation of the document that names none.
    pub visibility: Option<String>,
    /// How many object levels of each outputSchema are published (see
    /// compact); an operation's own setting wins.
    pub output_depth: Option<OutputDepth>,
    /// The sidecar's own path in the folder, so that every diagnostic about
    /// it names the file an owner edits (not written in the file).
    #[serde(skip)]
    pub file: Option<std::sync::Arc<str>>,
}

impl Sidecar {
    /// The file diagnostics about this sidecar name: its own path, or, for
    /// a sidecar built in memory, the document's with ` (sidecar)`.
    pub fn file_for(&self, document: &str) -> String {
        match &self.file {
            Some(file) => file.to_string(),
            None => format!("{document} (sidecar)"),
        }
    }
}

/// Where and how the document's backend is called.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct BackendConfig {
    pub base_url: Option<String>,
    pub timeout_ms: Option<u64>,
    /// Static headers added to every call; values may name environment
    /// variables as `${NAME}`.
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// Caller headers passed through (none when absent). The caller's
    /// `Authorization` leaves only with `auth: {mode: passthrough}` (or
    /// when listed here, which says the same).
    pub forward_headers: Option<Vec<String>>,
    /// The credential the backend gets (none but static headers when
    /// absent).
    pub auth: Option<BackendAuth>,
    /// What the backend allows, for every operation of the document
    /// together (an operation's own `quota` applies besides).
    pub quota: Option<Quota>,
}

/// A backend's quota as the operator states it ("5,000 calls an hour per
/// token"): calls per interval and calls in flight at most, counted for
/// every caller together or for each caller on its own. The gateway
/// refuses a call over it with `rate_limited`; nothing is sent.
#[derive(Debug, Clone, Default, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Quota {
    /// Calls allowed per `perSeconds` (all at once if need be).
    pub requests: Option<u32>,
    /// The interval of `requests`, in seconds (default 60).
    pub per_seconds: Option<u64>,
    /// Calls in flight at most.
    pub concurrent: Option<u32>,
    /// Whose calls count together.
    #[serde(default)]
    pub per: QuotaPer,
}

/// See [`Quota::per`].
#[derive(Debug, Clone, Copy, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub enum QuotaPer {
    /// Every caller's calls together: the backend credential's quota when
    /// the gateway calls with one credential.
    #[default]
    Backend,
    /// Each caller's own (its subject, else the anonymous caller): the
    /// quota of a token per caller (passthrough, token exchange).
    Caller,
}

impl Quota {
    /// The interval of `requests`.
    pub fn interval(&self) -> std::time::Duration {
        std::time::Duration::from_secs(self.per_seconds.unwrap_or(60))
    }
}

/// Refuses a quota that cannot be meant, at `at` (its pointer).
pub(crate) fn check_quota(quota: &Quota, at: &str) -> Result<(), SidecarError> {
    let error = |key: &str, message: &str| SidecarError {
        pointer: format!("{at}/{key}"),
        message: message.to_string(),
    };
    if quota.per_seconds.is_some() && quota.requests.is_none() {
        return Err(error(
            "perSeconds",
            "perSeconds applies to requests, which is not set",
        ));
    }
    if quota.requests.is_none() && quota.concurrent.is_none() {
        return Err(SidecarError {
            pointer: at.to_string(),
            message: "a quota names requests (per perSeconds), concurrent, or both".to_string(),
        });
    }
    if quota.requests == Some(0) {
        return Err(error("requests", "requests must be at least 1"));
    }
    if quota.per_seconds == Some(0) {
        return Err(error("perSeconds", "perSeconds must be at least 1"));
    }
    if quota.concurrent == Some(0) {
        return Err(error("concurrent", "concurrent must be at least 1"));
    }
    Ok(())
}

/// How the gateway authenticates to a backend: never by handing on a token
/// issued for itself, unless the operator says so (`passthrough`).
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct BackendAuth {
    pub mode: BackendAuthMode,
    /// The authorization server's token endpoint (token exchange, client
    /// credentials).
    pub token_url: Option<String>,
    pub client_id: Option<String>,
    /// Environment variable holding the client secret.
    pub client_secret_env: Option<String>,
    /// `audience` asked for (RFC 8693; also sent with client credentials).
    pub audience: Option<String>,
    /// `resource` asked for (RFC 8707).
    pub resource: Option<String>,
    #[serde(default)]
    pub scopes: Vec<String>,
}

/// See [`BackendAuth`].
#[derive(Debug, Clone, Copy, Default, Deserialize, PartialEq, Eq, Hash)]
#[serde(rename_all = "camelCase")]
pub enum BackendAuthMode {
    /// Static headers only.
    #[default]
    None,
    /// The caller's `Authorization` as it came (refused for a JWT issued
    /// for this gateway).
    Passthrough,
    /// RFC 8693: the caller's token exchanged for one for the backend.
    TokenExchange,
    /// The gateway's own client credentials (no user).
    ClientCredentials,
}

/// Revision levels set by configuration; each wins over the document.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct RevisionConfig {
    pub catalog: Option<Level>,
    #[serde(default)]
    pub paths: BTreeMap<String, Level>,
    #[serde(default)]
    pub operations: BTreeMap<String, Level>,
}

/// A revision level: an integer of at least 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Level(pub u64);

impl<'de> Deserialize<'de> for Level {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(deserializer)?;
        match value.as_u64() {
            Some(n) if n >= 1 => Ok(Level(n)),
            _ => Err(serde::de::Error::custom(format!(
                "a revision must be an integer of at least 1, found {value}"
            ))),
        }
    }
}

/// How many object levels of an outputSchema are published: an integer
/// from 0 (the response's own members only) to [`OutputDepth::MAX`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OutputDepth(pub u32);

impl OutputDepth {
    /// Deep enough for any real document; deeper parts are recursion.
    pub const MAX: u32 = 64;
}

impl<'de> Deserialize<'de> for OutputDepth {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(deserializer)?;
        match value.as_u64() {
            Some(n) if n <= u64::from(OutputDepth::MAX) => Ok(OutputDepth(n as u32)),
            _ => Err(serde::de::Error::custom(format!(
                "outputDepth must be an integer from 0 to {}, found {value}",
                OutputDepth::MAX
            ))),
        }
    }
}

/// Curation of one operation.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ToolConfig {
    pub name: Option<String>,
    pub description: Option<String>,
    #[serde(default)]
    pub tags: Vec<String>,
    #[serde(default)]
    pub search_terms: Vec<String>,
    pub annotations: Option<Map<String, Value>>,
    #[serde(default)]
    pub hidden: bool,
    pub visibility: Option<String>,
    #[serde(default)]
    pub variants: Vec<VariantConfig>,
    /// Output depth for this operation and its variants.
    pub output_depth: Option<OutputDepth>,
    /// What the backend allows of this operation (besides the document's
    /// `backend.quota`).
    pub quota: Option<Quota>,
}

/// A narrower tool published for the same operation.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct VariantConfig {
    pub name: String,
    pub description: Option<String>,
    /// Arguments sent with these values and removed from the schema.
    #[serde(default)]
    pub fixed: Map<String, Value>,
    /// Arguments removed from the schema and never sent.
    #[serde(default)]
    pub omit: Vec<String>,
    #[serde(default)]
    pub tags: Vec<String>,
    #[serde(default)]
    pub search_terms: Vec<String>,
    pub annotations: Option<Map<String, Value>>,
    pub visibility: Option<String>,
}

/// Who may see the tools a policy is attached to: any listed scope or any
/// listed role suffices.
#[derive(Debug, Clone, Default, Deserialize, PartialEq, Eq, Hash)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Policy {
    #[serde(default)]
    pub any_scope: Vec<String>,
    #[serde(default)]
    pub any_role: Vec<String>,
    /// Visible to everybody, anonymous callers included.
    #[serde(default)]
    pub public: bool,
}

/// serde's message with the Rust type names it uses (`expected u64`)
/// replaced by what a sidecar author writes: `invalid type: string "5s",
/// expected u64` becomes `invalid type: string "5s", expected a whole
/// number (0 or more)`.
fn in_plain_words(message: &str) -> String {
    const PLAIN: [(&str, &str); 12] = [
        ("expected u64", "expected a whole number (0 or more)"),
        ("expected u32", "expected a whole number (0 or more)"),
        ("expected u16", "expected a whole number (0 or more)"),
        ("expected u8", "expected a whole number (0 or more)"),
        ("expected usize", "expected a whole number (0 or more)"),
        ("expected i64", "expected a whole number"),
        ("expected i32", "expected a whole number"),
        ("expected f64", "expected a number"),
        ("expected a sequence", "expected a list"),
        ("expected a map", "expected an object"),
        ("expected struct ", "expected an object: "),
        ("expected a borrowed string", "expected a string"),
    ];
    let mut plain = message.to_string();
    for (rust, words) in PLAIN {
        plain = plain.replace(rust, words);
    }
    plain
}

/// A sidecar that was refused: the key at fault and why.
#[derive(Debug, Clone, PartialEq)]
pub struct SidecarError {
    pub pointer: String,
    pub message: String,
}

impl Sidecar {
    /// Validates a parsed sidecar file.
    pub fn from_value(value: &Value) -> Result<Sidecar, SidecarError> {
        let sidecar: Sidecar = deserialize_pointed(value)?;
        sidecar.check()?;
        Ok(sidecar)
    }

    fn check(&self) -> Result<(), SidecarError> {
        if let Some(namespace) = &self.namespace
            && !super::naming::is_valid_name(namespace)
        {
            return Err(SidecarError {
                pointer: "/namespace".to_string(),
                message: format!("namespace '{namespace}' must use only [a-z0-9_]"),
            });
        }
        check_backend(&self.backend)?;
        for (key, tool) in &self.tools {
            if let Some(quota) = &tool.quota {
                let at = format!("/tools/{}/quota", super::diagnostics::pointer_segment(key));
                check_quota(quota, &at)?;
            }
        }
        for key in self.tools.keys().chain(self.revision.operations.keys()) {
            if parse_operation_key(key).is_none() {
                return Err(SidecarError {
                    pointer: format!("/tools/{}", super::diagnostics::pointer_segment(key)),
                    message: format!("'{key}' is not of the form \"METHOD /path\""),
                });
            }
        }
        let policies_used = self
            .tools
            .values()
            .flat_map(|tool| {
                tool.visibility
                    .iter()
                    .chain(tool.variants.iter().filter_map(|v| v.visibility.as_ref()))
            })
            .chain(self.visibility.iter());
        check_policies_defined(policies_used, &self.policies)
    }

    /// The configuration of one operation, if any.
    pub fn tool(&self, method: &str, path: &str) -> Option<&ToolConfig> {
        self.tools.iter().find_map(|(key, config)| {
            let (m, p) = parse_operation_key(key)?;
            (m.eq_ignore_ascii_case(method) && p == path).then_some(config)
        })
    }

    /// The configured operation-level revision, if any.
    pub fn operation_revision(&self, method: &str, path: &str) -> Option<Level> {
        self.revision.operations.iter().find_map(|(key, level)| {
            let (m, p) = parse_operation_key(key)?;
            (m.eq_ignore_ascii_case(method) && p == path).then_some(*level)
        })
    }
}

/// A configuration file's value as `T`, or the key at fault (a JSON
/// pointer) and why, in plain words.
pub(crate) fn deserialize_pointed<T: serde::de::DeserializeOwned>(
    value: &Value,
) -> Result<T, SidecarError> {
    serde_path_to_error::deserialize(value).map_err(|err| SidecarError {
        pointer: path_to_pointer(&err.path().to_string()),
        message: in_plain_words(&err.inner().to_string()),
    })
}

/// Every policy a visibility names is one of `policies`.
pub(crate) fn check_policies_defined<'p>(
    used: impl IntoIterator<Item = &'p String>,
    policies: &BTreeMap<String, Policy>,
) -> Result<(), SidecarError> {
    match used
        .into_iter()
        .find(|policy| !policies.contains_key(*policy))
    {
        Some(policy) => Err(SidecarError {
            pointer: "/policies".to_string(),
            message: format!("visibility names policy '{policy}', which is not defined"),
        }),
        None => Ok(()),
    }
}

/// A backend's headers are HTTP header names with values on one line, and
/// its credential mode has what it needs.
pub(crate) fn check_backend(backend: &BackendConfig) -> Result<(), SidecarError> {
    let header_names = backend
        .headers
        .keys()
        .chain(backend.forward_headers.iter().flatten());
    for name in header_names {
        if !crate::header_text::is_field_name(name) {
            return Err(SidecarError {
                pointer: "/backend".to_string(),
                message: format!("'{name}' is not an HTTP header name"),
            });
        }
    }
    for (name, value) in &backend.headers {
        if !crate::header_text::is_field_value(value) {
            return Err(SidecarError {
                pointer: format!(
                    "/backend/headers/{}",
                    super::diagnostics::pointer_segment(name)
                ),
                message: format!(
                    "the value of header '{name}' holds a line break or another control character"
                ),
            });
        }
    }
    if let Some(auth) = &backend.auth {
        check_backend_auth(auth)?;
    }
    if let Some(quota) = &backend.quota {
        check_quota(quota, "/backend/quota")?;
    }
    Ok(())
}

/// `"GET /orders"` → (`GET`, `/orders`).
pub fn parse_operation_key(key: &str) -> Option<(&str, &str)> {
    let (method, path) = key.trim().split_once(' ')?;
    let path = path.trim();
    (!method.is_empty() && path.starts_with('/')).then_some((method, path))
}

/// serde_path_to_error writes `revision.paths./orders`; diagnostics use
/// JSON pointers.
fn path_to_pointer(path: &str) -> String {
    if path == "." || path.is_empty() {
        return String::new();
    }
    let mut pointer = String::new();
    for segment in path.split('.') {
        pointer.push('/');
        pointer.push_str(&super::diagnostics::pointer_segment(segment));
    }
    pointer
}

/// What a backend credential mode needs: a token URL, a client id and
/// the name of its secret's variable for the modes that ask a token
/// endpoint; nothing else for the others.
fn check_backend_auth(auth: &BackendAuth) -> Result<(), SidecarError> {
    let error = |key: &str, message: String| SidecarError {
        pointer: format!("/backend/auth/{key}"),
        message,
    };
    let asks = matches!(
        auth.mode,
        BackendAuthMode::TokenExchange | BackendAuthMode::ClientCredentials
    );
    if !asks {
        for (key, set) in [
            ("tokenUrl", auth.token_url.is_some()),
            ("clientId", auth.client_id.is_some()),
            ("clientSecretEnv", auth.client_secret_env.is_some()),
        ] {
            if set {
                return Err(error(
                    key,
                    format!("{key} is used only by tokenExchange and clientCredentials"),
                ));
            }
        }
        return Ok(());
    }
    match &auth.token_url {
        Some(url) if url.starts_with("https://") || url.starts_with("http://") => {}
        Some(url) => return Err(error("tokenUrl", format!("'{url}' is not an http(s) URL"))),
        None => return Err(error("tokenUrl", "tokenUrl is required".to_string())),
    }
    if auth.client_id.as_deref().is_none_or(str::is_empty) {
        return Err(error("clientId", "clientId is required".to_string()));
    }
    if auth.client_secret_env.as_deref().is_none_or(str::is_empty) {
        return Err(error(
            "clientSecretEnv",
            "clientSecretEnv (the environment variable holding the secret) is required".to_string(),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn refusals_name_no_rust_type() {
        let err = Sidecar::from_value(&json!({"backend": {"timeoutMs": "5s"}})).unwrap_err();
        assert_eq!(err.pointer, "/backend/timeoutMs");
        assert_eq!(
            err.message,
            "invalid type: string \"5s\", expected a whole number (0 or more)"
        );
        let err = Sidecar::from_value(&json!({"tools": []})).unwrap_err();
        assert!(
            err.message.contains("expected an object"),
            "{}",
            err.message
        );
    }

    #[test]
    fn reads_a_full_sidecar() {
        let sidecar = Sidecar::from_value(&json!({
            "namespace": "shop",
            "backend": {"baseUrl": "http://127.0.0.1:9", "timeoutMs": 500, "headers": {"X-Key": "${KEY}"}},
            "revision": {"catalog": 3, "paths": {"/orders": 5}, "operations": {"GET /orders": 6}},
            "tools": {"GET /orders": {"name": "list_orders", "variants": [{"name": "list_open_orders", "fixed": {"status": "open"}}]}},
            "policies": {"admins": {"anyScope": ["admin"]}}
        }))
        .unwrap();
        assert_eq!(sidecar.revision.catalog, Some(Level(3)));
        assert_eq!(sidecar.operation_revision("get", "/orders"), Some(Level(6)));
        assert_eq!(sidecar.tool("GET", "/orders").unwrap().variants.len(), 1);
    }

    #[test]
    fn revisions_below_one_are_refused_naming_the_key() {
        for (doc, pointer) in [
            (json!({"revision": {"catalog": 0}}), "/revision/catalog"),
            (
                json!({"revision": {"paths": {"/orders": -1}}}),
                "/revision/paths/~1orders",
            ),
            (
                json!({"revision": {"operations": {"GET /x": 1.5}}}),
                "/revision/operations/GET ~1x",
            ),
            (json!({"revision": {"catalog": "2"}}), "/revision/catalog"),
        ] {
            let err = Sidecar::from_value(&doc).unwrap_err();
            assert_eq!(err.pointer, pointer, "{doc}");
            assert!(err.message.contains("at least 1"), "{}", err.message);
        }
    }

    #[test]
    fn output_depths_are_integers_from_0_to_64() {
        let sidecar = Sidecar::from_value(&json!({
            "outputDepth": 0,
            "tools": {"GET /x": {"outputDepth": 64}}
        }))
        .unwrap();
        assert_eq!(sidecar.output_depth, Some(OutputDepth(0)));
        assert_eq!(
            sidecar.tool("GET", "/x").unwrap().output_depth,
            Some(OutputDepth(64))
        );
        for (doc, pointer) in [
            (json!({"outputDepth": 65}), "/outputDepth"),
            (json!({"outputDepth": -1}), "/outputDepth"),
            (json!({"outputDepth": "2"}), "/outputDepth"),
            (
                json!({"tools": {"GET /x": {"outputDepth": 1.5}}}),
                "/tools/GET ~1x/outputDepth",
            ),
        ] {
            let err = Sidecar::from_value(&doc).unwrap_err();
            assert_eq!(err.pointer, pointer, "{doc}");
            assert!(
                err.message.contains("from 0 to 64"),
                "{doc}: {}",
                err.message
            );
        }
    }

    #[test]
    fn unknown_keys_and_undefined_policies_are_refused() {
        let err = Sidecar::from_value(&json!({"tools": {"GET /x": {"nmae": "y"}}})).unwrap_err();
        assert!(err.message.contains("nmae"), "{}", err.message);
        let err = Sidecar::from_value(&json!({"tools": {"GET /x": {"visibility": "staff"}}}))
            .unwrap_err();
        assert!(err.message.contains("staff"));
        let err = Sidecar::from_value(&json!({"tools": {"orders": {}}})).unwrap_err();
        assert!(err.message.contains("METHOD /path"));
    }

    #[test]
    fn header_names_and_values_that_would_split_a_request_are_refused() {
        let err =
            Sidecar::from_value(&json!({"backend": {"headers": {"X-Key": "a\r\nX-Admin: 1"}}}))
                .unwrap_err();
        assert_eq!(err.pointer, "/backend/headers/X-Key");
        assert!(err.message.contains("line break"), "{}", err.message);
        let err =
            Sidecar::from_value(&json!({"backend": {"headers": {"X Key": "a"}}})).unwrap_err();
        assert!(
            err.message.contains("'X Key' is not an HTTP header name"),
            "{}",
            err.message
        );
        let err =
            Sidecar::from_value(&json!({"backend": {"forwardHeaders": ["x-user:"]}})).unwrap_err();
        assert!(err.message.contains("'x-user:'"), "{}", err.message);
        let ok = json!({"backend": {"headers": {"X-Key": "${KEY}"}, "forwardHeaders": ["x-request-id"]}});
        assert!(Sidecar::from_value(&ok).is_ok());
    }
}
