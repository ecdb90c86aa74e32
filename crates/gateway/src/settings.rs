//! Gateway settings: command-line flags, then `SEZZLEE_*` environment
//! variables, then an optional `sezzlee.toml`, then defaults.
//!
//! Everything a running gateway is told lives in one [`Settings`] value,
//! resolved once at start-up, so the rest of the code never reads the
//! environment or the file system for configuration.

pub use crate::config_error::ConfigError;
use crate::environment::Environment;
use serde::Deserialize;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Origins allowed by default: the gateway binds to localhost, so only
/// pages served from localhost may call it from a browser.
pub const DEFAULT_ORIGINS: [&str; 3] = ["http://localhost", "http://127.0.0.1", "http://[::1]"];

/// Default bytes of the search cache per catalog generation: 8 MiB of
/// answers (about 1,200 pages of 20 cards) and 8 MiB of keyword effects
/// (about 140 common words on an 11k-tool catalog).
pub const DEFAULT_SEARCH_CACHE_BYTES: usize = 16 * 1024 * 1024;

/// The resolved settings of one gateway.
#[derive(Debug, Clone)]
pub struct Settings {
    pub catalogs: PathBuf,
    /// Where secrets named by these settings and `${VARIABLE}`s in backend
    /// URLs and headers are read: the process environment when served.
    pub environment: Environment,
    pub listen: SocketAddr,
    /// The MCP endpoint path, `/mcp` by default.
    pub endpoint: String,
    /// Allowed `Origin` values (scheme://host, any port). `*` allows all.
    pub allowed_origins: Vec<String>,
    /// Largest request body accepted, in bytes.
    pub max_body_bytes: usize,
    /// Largest tool answer, in characters of serialised JSON.
    pub response_budget: usize,
    /// Object levels of every outputSchema published where a document's
    /// sidecar sets none (`outputDepth`, contract 2.4.1): one setting for
    /// the whole gateway, so an operator can trade load_tool size against
    /// what an agent sees of a result without writing a sidecar per
    /// document.
    pub output_depth: u32,
    /// Most bytes of a backend response read; the rest is not read and the
    /// result says how much was left out.
    pub max_response_bytes: usize,
    /// Bytes of search_tools answers kept per catalog generation so a
    /// repeated search is not ranked again; 0 turns the cache off.
    pub search_cache_bytes: usize,
    /// Folder of the text model that ranks tools by meaning besides
    /// keywords (`scripts/fetch-search-model.sh`); none: keyword search.
    pub search_model: Option<PathBuf>,
    /// Folder the search model's tool vectors are cached in (one folder
    /// per model under it); none: vectors live in memory only and every
    /// start embeds every tool again.
    pub vector_cache: Option<PathBuf>,
    /// `text` or `json` logs.
    pub log_format: LogFormat,
    /// Debounce window of the catalog watcher.
    pub debounce: Duration,
    /// How long a file a rescan no longer finds keeps serving before its
    /// deletion is published: a file replaced in two steps (`git
    /// checkout`, an editor's unlink-then-create) is absent for a moment,
    /// and that moment must not empty the catalog. 0 publishes deletions
    /// at the first rescan that misses the file.
    pub deletion_grace: Duration,
    /// How the catalogs folder is watched.
    pub watch: WatchMode,
    /// Interval of the polling watcher.
    pub poll_interval: Duration,
    /// SSE keep-alive interval on listen streams.
    pub keepalive: Duration,
    /// Concurrent `subscriptions/listen` streams, in all and per caller.
    pub max_streams: usize,
    pub max_streams_per_caller: usize,
    /// How long in-flight calls may run on shutdown, counted from the end
    /// of the drain.
    pub shutdown_grace: Duration,
    /// After SIGTERM/SIGINT, how long the gateway goes on accepting and
    /// serving while `/readyz` answers 503, so that load balancers stop
    /// sending to it before it refuses anything; then, at most as long
    /// again, how long it waits for its connections to close (each after
    /// its next answer) before it closes idle ones (a request a proxy sends
    /// on a keep-alive connection as the server closes it is lost).
    pub shutdown_drain: Duration,
    /// How long a client may take to send a request's head; a connection
    /// that sends nothing (or a trickle) is closed after it, so idle or
    /// slow sockets cannot pile up.
    pub header_read_timeout: Duration,
    /// Threads that serve connections, each a single-threaded runtime
    /// (`serving_threads`); default one per core; 0 serves them on the
    /// main (work-stealing) runtime.
    pub serve_threads: usize,
    /// Most connections open at once; at it the gateway accepts no more
    /// until one closes (callers wait in the listen backlog), so a flood
    /// cannot take the descriptors backend calls and reloads need. Default
    /// half the open-files limit (`open_files`).
    pub max_connections: usize,
    /// Whether the built-in demo backend answers under `/demo`.
    pub demo_backend: DemoBackend,
    /// Identity verification; `None`: everything is public.
    pub auth: Option<AuthSettings>,
    /// Rates per caller and what protects backends (`[limits]`).
    pub limits: LimitsSettings,
    /// Generations whose changes `GET /changes` keeps (at least 1).
    pub change_history: usize,
    /// The operator's console in the browser (`[console]`).
    pub console: ConsoleSettings,
}

/// `[console]`: the operator's console at `/console` (the gateway's
/// `console` module). On by default. With `[auth]` configured, only a
/// credential with `scope` (or the admin scope) reads it; without, only
/// callers on the loopback interface, unless `allow_remote` opens it to
/// every address the gateway listens on.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct ConsoleSettings {
    pub enabled: bool,
    /// The scope (of a verified JWT or a configured API key) that opens
    /// the console; the admin scope does too.
    pub scope: String,
    /// Without `[auth]`: serve the console to callers that are not on
    /// the loopback interface (anyone who can reach the gateway then
    /// sees what an operator sees).
    pub allow_remote: bool,
}

/// The scope that opens the console when `console.scope` is not set.
pub const DEFAULT_CONSOLE_SCOPE: &str = "sezzlee:console";

impl Default for ConsoleSettings {
    fn default() -> Self {
        ConsoleSettings {
            enabled: true,
            scope: DEFAULT_CONSOLE_SCOPE.to_string(),
            allow_remote: false,
        }
    }
}

/// `[limits]`: how often each caller may call, and how struggling
/// backends are spared (the gateway's `limits` module). Rates per caller
/// apply only where the operator sets them: without `[auth]` every caller
/// is the one anonymous caller, and a rate nobody chose would throttle all
/// of them together. A backend's own `Retry-After` is always honoured;
/// the circuit breaker is off until `breaker_failures` is set.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct LimitsSettings {
    /// `invoke_tool` calls a minute per caller (at least 1; unset: no
    /// limit).
    pub invoke_per_minute: Option<u32>,
    /// `search_tools` and `load_tool` calls a minute per caller (at least
    /// 1; unset: no limit).
    pub search_per_minute: Option<u32>,
    /// Seconds' worth of calls a caller may make at once (at least 1).
    pub burst_seconds: u32,
    /// Anonymous callers are told apart by their address (only when the
    /// address is the caller's, not a proxy's); else they share one
    /// allowance.
    pub per_address: bool,
    /// Other rates for some callers, by a scope they hold or their subject
    /// (a JWT's or an API key's); the first group that matches and sets a
    /// rate gives it.
    pub groups: Vec<LimitGroup>,
    /// Connection failures, time-outs or `5xx` in a row that open a
    /// backend's circuit breaker (0, the default: never).
    pub breaker_failures: u32,
    /// How long an open breaker refuses calls before one probe goes.
    pub breaker_cooldown_ms: u64,
    /// Requests a second each peer address may send to the MCP endpoint
    /// (at least 1; unset: no limit), about one second's worth of them at
    /// once; beyond it a request is answered `429` with `Retry-After`
    /// before it is read (the gateway's `flood_guard`). Behind a proxy
    /// the address is the proxy's, so the rate is the proxy's.
    pub requests_per_second_per_address: Option<u32>,
    /// Redis shared by the replicas (`redis://host:6379/0`): each
    /// caller's rate is then counted once across them. Checked at start:
    /// a gateway whose Redis does not answer does not start.
    pub redis_url: Option<String>,
    /// While Redis does not answer, refuse every rated call instead of
    /// counting locally.
    pub redis_fail_closed: bool,
    /// While Redis does not answer, the share of each rate (percent) each
    /// replica allows on its own (100: the whole rate; with N replicas,
    /// 100 / N keeps the total).
    pub redis_local_share_percent: u32,
}

impl Default for LimitsSettings {
    fn default() -> Self {
        LimitsSettings {
            invoke_per_minute: None,
            search_per_minute: None,
            burst_seconds: 10,
            per_address: false,
            groups: Vec::new(),
            breaker_failures: 0,
            breaker_cooldown_ms: 30_000,
            requests_per_second_per_address: None,
            redis_url: None,
            redis_fail_closed: false,
            redis_local_share_percent: 100,
        }
    }
}

/// `[[limits.groups]]`: callers with other rates.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct LimitGroup {
    /// Callers whose verified credential carries this scope.
    pub scope: Option<String>,
    /// The caller with this subject (a JWT's `sub` or an API key's).
    pub subject: Option<String>,
    pub invoke_per_minute: Option<u32>,
    pub search_per_minute: Option<u32>,
}

impl LimitsSettings {
    /// Refuses what cannot be meant, naming the setting.
    fn check(&self) -> Result<(), ConfigError> {
        let at_least_one = |setting: &'static str, value: u32| {
            if value == 0 {
                Err(ConfigError::Value {
                    setting,
                    message: format!("{setting} must be at least 1 (0 would refuse every call)"),
                })
            } else {
                Ok(())
            }
        };
        if let Some(rate) = self.invoke_per_minute {
            at_least_one("limits.invoke_per_minute", rate)?;
        }
        if let Some(rate) = self.search_per_minute {
            at_least_one("limits.search_per_minute", rate)?;
        }
        at_least_one("limits.burst_seconds", self.burst_seconds)?;
        if let Some(rate) = self.requests_per_second_per_address {
            at_least_one("limits.requests_per_second_per_address", rate)?;
        }
        if !(1..=100).contains(&self.redis_local_share_percent) {
            return Err(ConfigError::Value {
                setting: "limits.redis_local_share_percent",
                message: "limits.redis_local_share_percent must be from 1 to 100".to_string(),
            });
        }
        if let Some(url) = &self.redis_url
            && let Err(err) = redis::Client::open(url.as_str())
        {
            return Err(ConfigError::Value {
                setting: "limits.redis_url",
                message: format!(
                    "limits.redis_url is not a Redis URL (redis://host:port/db): {err}"
                ),
            });
        }
        if self.breaker_cooldown_ms == 0 {
            return Err(ConfigError::Value {
                setting: "limits.breaker_cooldown_ms",
                message: "limits.breaker_cooldown_ms must be at least 1".to_string(),
            });
        }
        for group in &self.groups {
            if group.scope.is_some() == group.subject.is_some() {
                return Err(ConfigError::Value {
                    setting: "limits.groups",
                    message: "each [[limits.groups]] names exactly one of scope and subject"
                        .to_string(),
                });
            }
            for (setting, value) in [
                ("limits.groups.invoke_per_minute", group.invoke_per_minute),
                ("limits.groups.search_per_minute", group.search_per_minute),
            ] {
                if let Some(value) = value {
                    at_least_one(setting, value)?;
                }
            }
        }
        Ok(())
    }
}

/// `[auth]`: how callers are identified. Only names of environment
/// variables and paths of key files live here, never a secret.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct AuthSettings {
    pub jwt: Option<JwtSettings>,
    #[serde(default)]
    pub api_keys: Vec<ApiKeySettings>,
    /// Refuse requests without a valid credential (`401` with a
    /// `WWW-Authenticate` challenge) instead of showing them public tools.
    #[serde(default)]
    pub required: bool,
    /// The canonical URL of the MCP endpoint (`https://host/mcp`): the
    /// `resource` of the protected-resource metadata. Default: from the
    /// request's `Host`, over `http`.
    pub resource: Option<String>,
    /// Authorization servers the metadata lists. Default: the JWT issuer.
    #[serde(default)]
    pub authorization_servers: Vec<String>,
    /// The scope (of a verified JWT or a configured API key) that opens
    /// `/status` and `/metrics`. Default [`DEFAULT_ADMIN_SCOPE`].
    pub admin_scope: Option<String>,
}

/// The scope that opens `/status` and `/metrics` when `[auth]` is
/// configured and `auth.admin_scope` is not.
pub const DEFAULT_ADMIN_SCOPE: &str = "sezzlee:admin";

impl AuthSettings {
    /// The scope that opens `/status` and `/metrics`.
    pub fn admin_scope(&self) -> &str {
        self.admin_scope.as_deref().unwrap_or(DEFAULT_ADMIN_SCOPE)
    }
}

/// `[auth.jwt]`.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct JwtSettings {
    /// Environment variable holding the HS256 secret.
    pub hs256_secret_env: Option<String>,
    /// RS256/ES256 public keys, PEM files.
    #[serde(default)]
    pub public_keys: Vec<PathBuf>,
    /// A JWKS file.
    pub jwks_file: Option<PathBuf>,
    /// The provider's JWKS URL, fetched and kept fresh.
    pub jwks_url: Option<String>,
    /// The issuer every token must name; with no key configured otherwise,
    /// its OpenID configuration names the JWKS to fetch (discovery).
    pub issuer: Option<String>,
    /// The audience every token must name (RFC 8707: the gateway's own
    /// resource URL).
    pub audience: Option<String>,
    /// Longest time a fetched key set is used before it is fetched again
    /// (a provider's shorter `Cache-Control: max-age` wins). Default 300000.
    pub refresh_interval_ms: Option<u64>,
    /// A token naming a key id no key holds fetches the set again at most
    /// once per this. Default 10000.
    pub refetch_min_interval_ms: Option<u64>,
    /// Timeout of each request to the provider. Default 5000.
    pub fetch_timeout_ms: Option<u64>,
}

/// One `[[auth.api_keys]]` entry.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ApiKeySettings {
    /// The request header carrying the key.
    pub header: String,
    /// Environment variable holding the key.
    pub key_env: String,
    pub subject: String,
    #[serde(default)]
    pub scopes: Vec<String>,
    #[serde(default)]
    pub roles: Vec<String>,
    /// OpenAPI `apiKey` scheme names (of any location) this key satisfies
    /// besides its header's: a key the gateway holds for a query or cookie
    /// API key, or one its documents name differently.
    #[serde(default)]
    pub names: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    Text,
    Json,
}

/// When the built-in demo backend answers under `/demo`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DemoBackend {
    /// While the served catalog has a document whose backend is the demo
    /// (`baseUrl: ${SEZZLEE_SELF}/demo`, as the shipped catalog's is).
    #[default]
    Auto,
    /// Always.
    On,
    /// Never.
    Off,
}

impl std::str::FromStr for DemoBackend {
    type Err = String;

    /// `auto`, `on` (or `true`), `off` (or `false`).
    fn from_str(text: &str) -> Result<DemoBackend, String> {
        match text.trim().to_ascii_lowercase().as_str() {
            "auto" => Ok(DemoBackend::Auto),
            "on" | "true" => Ok(DemoBackend::On),
            "off" | "false" => Ok(DemoBackend::Off),
            _ => Err(format!(
                "demo backend '{text}' is not auto, on (true) or off (false)"
            )),
        }
    }
}

/// `demo_backend` in `sezzlee.toml`: `"auto"`, `"on"`, `"off"`, or a
/// boolean.
impl<'de> Deserialize<'de> for DemoBackend {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Given {
            Flag(bool),
            Word(String),
        }
        match Given::deserialize(deserializer)? {
            Given::Flag(true) => Ok(DemoBackend::On),
            Given::Flag(false) => Ok(DemoBackend::Off),
            Given::Word(word) => word.parse().map_err(serde::de::Error::custom),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum WatchMode {
    /// File-system events (inotify and friends).
    Events,
    /// Rescan every `poll_interval`: for file systems without events.
    Poll,
    /// No watching; SIGHUP still rescans.
    Off,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            catalogs: PathBuf::from("./catalogs"),
            environment: Environment::process(),
            listen: SocketAddr::from(([127, 0, 0, 1], 8080)),
            endpoint: "/mcp".to_string(),
            allowed_origins: DEFAULT_ORIGINS.iter().map(|s| s.to_string()).collect(),
            max_body_bytes: 4 * 1024 * 1024,
            response_budget: 60_000,
            output_depth: sezzlee_catalog::BuildOptions::DEFAULT_OUTPUT_DEPTH,
            max_response_bytes: crate::backend::DEFAULT_MAX_RESPONSE_BYTES,
            search_cache_bytes: DEFAULT_SEARCH_CACHE_BYTES,
            search_model: None,
            vector_cache: sezzlee_semantic::cache::default_root(),
            log_format: LogFormat::Text,
            debounce: Duration::from_millis(50),
            deletion_grace: Duration::from_millis(500),
            watch: WatchMode::Events,
            poll_interval: Duration::from_secs(2),
            keepalive: Duration::from_secs(15),
            max_streams: 1024,
            max_streams_per_caller: 16,
            shutdown_grace: Duration::from_secs(10),
            shutdown_drain: Duration::from_secs(1),
            serve_threads: std::thread::available_parallelism().map_or(1, usize::from),
            max_connections: crate::open_files::default_max_connections(),
            header_read_timeout: Duration::from_secs(30),
            demo_backend: DemoBackend::Auto,
            auth: None,
            limits: LimitsSettings::default(),
            change_history: 100,
            console: ConsoleSettings::default(),
        }
    }
}

/// The `sezzlee.toml` file: every key optional.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileSettings {
    pub catalogs: Option<PathBuf>,
    pub listen: Option<String>,
    pub endpoint: Option<String>,
    pub allowed_origins: Option<Vec<String>>,
    pub max_body_bytes: Option<usize>,
    pub response_budget: Option<usize>,
    /// Signed so that a negative value is refused with the range, not
    /// with a type name.
    pub output_depth: Option<i64>,
    pub max_response_bytes: Option<usize>,
    pub search_cache_bytes: Option<usize>,
    pub search_model: Option<PathBuf>,
    pub vector_cache: Option<PathBuf>,
    pub log_format: Option<LogFormat>,
    pub debounce_ms: Option<u64>,
    pub deletion_grace_ms: Option<u64>,
    pub watch: Option<WatchMode>,
    pub poll_interval_ms: Option<u64>,
    pub keepalive_ms: Option<u64>,
    pub max_streams: Option<usize>,
    pub max_streams_per_caller: Option<usize>,
    pub shutdown_grace_ms: Option<u64>,
    pub shutdown_drain_ms: Option<u64>,
    pub header_read_timeout_ms: Option<u64>,
    pub serve_threads: Option<usize>,
    pub max_connections: Option<usize>,
    pub demo_backend: Option<DemoBackend>,
    pub auth: Option<AuthSettings>,
    pub limits: Option<LimitsSettings>,
    pub change_history: Option<usize>,
    pub console: Option<ConsoleSettings>,
}

/// Values given on the command line or in the environment (clap reads
/// both; the flag wins).
#[derive(Debug, Default, Clone)]
pub struct Overrides {
    pub catalogs: Option<PathBuf>,
    pub listen: Option<String>,
    pub endpoint: Option<String>,
    pub allowed_origins: Option<Vec<String>>,
    pub max_body_bytes: Option<usize>,
    pub response_budget: Option<usize>,
    pub output_depth: Option<u32>,
    pub max_response_bytes: Option<usize>,
    pub search_cache_bytes: Option<usize>,
    pub search_model: Option<PathBuf>,
    pub vector_cache: Option<PathBuf>,
    pub log_format: Option<String>,
    pub debounce_ms: Option<u64>,
    pub deletion_grace_ms: Option<u64>,
    pub watch: Option<String>,
    pub poll_interval_ms: Option<u64>,
    pub keepalive_ms: Option<u64>,
    pub max_streams: Option<usize>,
    pub max_streams_per_caller: Option<usize>,
    pub shutdown_grace_ms: Option<u64>,
    pub shutdown_drain_ms: Option<u64>,
    pub serve_threads: Option<usize>,
    pub max_connections: Option<usize>,
    pub demo_backend: Option<DemoBackend>,
}

impl Settings {
    /// What a catalog build takes from these settings: definitions are
    /// published to fit the response budget, outputSchemas to the output
    /// depth where a sidecar sets none.
    pub fn build_options(&self) -> sezzlee_catalog::BuildOptions {
        sezzlee_catalog::BuildOptions {
            response_budget: self.response_budget,
            output_depth: self.output_depth,
        }
    }

    /// Resolves settings: `overrides` (flags/env) > `file` > defaults.
    /// `config` names the file; without it `./sezzlee.toml` is read when
    /// present.
    pub fn resolve(overrides: &Overrides, config: Option<&Path>) -> Result<Settings, ConfigError> {
        let file = match config {
            Some(path) => read_file(path)?,
            None if Path::new("sezzlee.toml").is_file() => read_file(Path::new("sezzlee.toml"))?,
            None => FileSettings::default(),
        };
        let mut s = Settings::default();
        if let Some(v) = overrides.catalogs.clone().or(file.catalogs) {
            s.catalogs = v;
        }
        if let Some(v) = overrides.listen.clone().or(file.listen) {
            s.listen = v.parse().map_err(|err| ConfigError::Value {
                setting: "listen",
                message: format!("listen address '{v}' is not HOST:PORT ({err})"),
            })?;
        }
        if let Some(v) = overrides.endpoint.clone().or(file.endpoint) {
            if !v.starts_with('/') {
                return Err(ConfigError::Value {
                    setting: "endpoint",
                    message: format!("endpoint '{v}' must start with '/'"),
                });
            }
            s.endpoint = v;
        }
        if let Some(v) = overrides.allowed_origins.clone().or(file.allowed_origins) {
            s.allowed_origins = v;
        }
        if let Some(v) = overrides.max_body_bytes.or(file.max_body_bytes) {
            s.max_body_bytes = v;
        }
        if let Some(v) = overrides.response_budget.or(file.response_budget) {
            s.response_budget = v;
        }
        if let Some(v) = overrides.output_depth.map(i64::from).or(file.output_depth) {
            s.output_depth =
                output_depth_within_range(v).map_err(|message| ConfigError::Value {
                    setting: "output_depth",
                    message,
                })?;
        }
        if let Some(v) = overrides.max_response_bytes.or(file.max_response_bytes) {
            s.max_response_bytes = v;
        }
        if let Some(v) = overrides.search_cache_bytes.or(file.search_cache_bytes) {
            s.search_cache_bytes = v;
        }
        // An empty value (SEZZLEE_SEARCH_MODEL=) turns the model off.
        if let Some(v) = overrides.search_model.clone().or(file.search_model) {
            s.search_model = (!v.as_os_str().is_empty()).then_some(v);
        }
        // Likewise an empty vector cache folder: no cache on disk.
        if let Some(v) = overrides.vector_cache.clone().or(file.vector_cache) {
            s.vector_cache = (!v.as_os_str().is_empty()).then_some(v);
        }
        if let Some(v) = &overrides.log_format {
            s.log_format = match v.as_str() {
                "text" => LogFormat::Text,
                "json" => LogFormat::Json,
                other => {
                    return Err(ConfigError::Value {
                        setting: "log_format",
                        message: format!("log format '{other}' is not text or json"),
                    });
                }
            };
        } else if let Some(v) = file.log_format {
            s.log_format = v;
        }
        if let Some(v) = &overrides.watch {
            s.watch = match v.as_str() {
                "events" => WatchMode::Events,
                "poll" => WatchMode::Poll,
                "off" => WatchMode::Off,
                other => {
                    return Err(ConfigError::Value {
                        setting: "watch",
                        message: format!("watch mode '{other}' is not events, poll or off"),
                    });
                }
            };
        } else if let Some(v) = file.watch {
            s.watch = v;
        }
        let ms = Duration::from_millis;
        if let Some(v) = overrides.debounce_ms.or(file.debounce_ms) {
            s.debounce = ms(v);
        }
        if let Some(v) = overrides.deletion_grace_ms.or(file.deletion_grace_ms) {
            s.deletion_grace = ms(v);
        }
        if let Some(v) = overrides.poll_interval_ms.or(file.poll_interval_ms) {
            s.poll_interval = ms(v.max(10));
        }
        if let Some(v) = overrides.keepalive_ms.or(file.keepalive_ms) {
            s.keepalive = ms(v.max(10));
        }
        if let Some(v) = overrides.max_streams.or(file.max_streams) {
            s.max_streams = v;
        }
        if let Some(v) = overrides
            .max_streams_per_caller
            .or(file.max_streams_per_caller)
        {
            s.max_streams_per_caller = v;
        }
        if let Some(v) = overrides.shutdown_grace_ms.or(file.shutdown_grace_ms) {
            s.shutdown_grace = ms(v);
        }
        if let Some(v) = overrides.shutdown_drain_ms.or(file.shutdown_drain_ms) {
            s.shutdown_drain = ms(v);
        }
        if let Some(v) = overrides.serve_threads.or(file.serve_threads) {
            s.serve_threads = v;
        }
        if let Some(v) = overrides.max_connections.or(file.max_connections) {
            s.max_connections = v.max(1);
        }
        if let Some(v) = file.header_read_timeout_ms {
            s.header_read_timeout = ms(v);
        }
        if let Some(v) = overrides.demo_backend.or(file.demo_backend) {
            s.demo_backend = v;
        }
        s.auth = file.auth;
        if let Some(keep) = file.change_history {
            if keep == 0 {
                return Err(ConfigError::Value {
                    setting: "change_history",
                    message: "change_history must be at least 1".to_string(),
                });
            }
            s.change_history = keep;
        }
        if let Some(console) = file.console {
            if console.scope.trim().is_empty() {
                return Err(ConfigError::Value {
                    setting: "console.scope",
                    message: "console.scope must name a scope".to_string(),
                });
            }
            s.console = console;
        }
        if let Some(limits) = file.limits {
            limits.check()?;
            s.limits = limits;
        }
        let file_has_jwt = s.auth.as_ref().is_some_and(|auth| auth.jwt.is_some());
        if let Some(jwt) = jwt_from_env(file_has_jwt)? {
            s.auth.get_or_insert_with(AuthSettings::default).jwt = Some(jwt);
        }
        Ok(s)
    }
}

/// Reads `--output-depth` and `SEZZLEE_OUTPUT_DEPTH` (clap's value
/// parser), so a bad value is refused with the range the sidecar's
/// `outputDepth` has, whichever way it was given.
pub fn parse_output_depth(text: &str) -> Result<u32, String> {
    match text.trim().parse::<i64>() {
        Ok(depth) => output_depth_within_range(depth),
        Err(_) => Err(output_depth_refusal(text)),
    }
}

/// The depth if it is one a sidecar could set too (0 to
/// [`OutputDepth::MAX`](sezzlee_catalog::sidecar::OutputDepth::MAX)).
fn output_depth_within_range(depth: i64) -> Result<u32, String> {
    u32::try_from(depth)
        .ok()
        .filter(|depth| *depth <= sezzlee_catalog::sidecar::OutputDepth::MAX)
        .ok_or_else(|| output_depth_refusal(&depth.to_string()))
}

fn output_depth_refusal(given: &str) -> String {
    format!(
        "output depth '{given}' is not an integer from 0 to {}",
        sezzlee_catalog::sidecar::OutputDepth::MAX
    )
}

/// `SEZZLEE_JWT_*` variables configure `[auth.jwt]` without a file (and
/// replace the file's when they name keys); `SEZZLEE_JWT_ISSUER` alone
/// means discovery only when the file configures no `[auth.jwt]`.
fn jwt_from_env(file_has_jwt: bool) -> Result<Option<JwtSettings>, ConfigError> {
    let get = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
    let secret_env = get("SEZZLEE_JWT_HS256_SECRET_ENV");
    let public_keys = get("SEZZLEE_JWT_PUBLIC_KEYS");
    let jwks_file = get("SEZZLEE_JWT_JWKS_FILE");
    let jwks_url = get("SEZZLEE_JWT_JWKS_URL");
    let issuer = get("SEZZLEE_JWT_ISSUER");
    if secret_env.is_none()
        && public_keys.is_none()
        && jwks_file.is_none()
        && jwks_url.is_none()
        && (issuer.is_none() || file_has_jwt)
    {
        return Ok(None);
    }
    Ok(Some(JwtSettings {
        hs256_secret_env: secret_env,
        public_keys: public_keys
            .map(|list| list.split(',').map(|p| PathBuf::from(p.trim())).collect())
            .unwrap_or_default(),
        jwks_file: jwks_file.map(PathBuf::from),
        jwks_url,
        issuer,
        audience: get("SEZZLEE_JWT_AUDIENCE"),
        ..JwtSettings::default()
    }))
}

fn read_file(path: &Path) -> Result<FileSettings, ConfigError> {
    let file_error = |message: String| ConfigError::File {
        setting: "config",
        path: path.to_path_buf(),
        message,
    };
    let text = std::fs::read_to_string(path)
        .map_err(|err| file_error(format!("cannot read {}: {err}", path.display())))?;
    toml::from_str(&text).map_err(|err| file_error(format!("{}: {err}", path.display())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_beat_the_file_and_the_file_beats_defaults() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("sezzlee.toml");
        std::fs::write(
            &file,
            "listen = \"127.0.0.1:9000\"\nresponse_budget = 1000\nendpoint = \"/x\"\nsearch_cache_bytes = 4096\noutput_depth = 0\n",
        )
        .unwrap();
        let overrides = Overrides {
            listen: Some("127.0.0.1:9100".to_string()),
            ..Overrides::default()
        };
        let s = Settings::resolve(&overrides, Some(&file)).unwrap();
        assert_eq!(s.search_cache_bytes, 4096);
        let off = Overrides {
            search_cache_bytes: Some(0),
            ..Overrides::default()
        };
        assert_eq!(
            Settings::resolve(&off, Some(&file))
                .unwrap()
                .search_cache_bytes,
            0
        );
        assert_eq!(s.listen.port(), 9100);
        assert_eq!(s.output_depth, 0);
        assert_eq!(s.build_options().output_depth, 0);
        let deeper = Overrides {
            output_depth: Some(5),
            ..Overrides::default()
        };
        let from_flag = Settings::resolve(&deeper, Some(&file)).unwrap();
        assert_eq!(from_flag.build_options().output_depth, 5);
        assert_eq!(
            Settings::default().output_depth,
            sezzlee_catalog::BuildOptions::DEFAULT_OUTPUT_DEPTH
        );
        assert_eq!(s.response_budget, 1000);
        assert_eq!(s.endpoint, "/x");
        assert_eq!(s.max_body_bytes, Settings::default().max_body_bytes);
    }

    #[test]
    fn the_deletion_grace_is_ten_debounces_unless_set() {
        let defaults = Settings::default();
        assert_eq!(defaults.deletion_grace, defaults.debounce * 10);
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("sezzlee.toml");
        std::fs::write(&file, "deletion_grace_ms = 900\n").unwrap();
        let from_file = Settings::resolve(&Overrides::default(), Some(&file)).unwrap();
        assert_eq!(from_file.deletion_grace, Duration::from_millis(900));
        let flag = Overrides {
            deletion_grace_ms: Some(0),
            ..Overrides::default()
        };
        let from_flag = Settings::resolve(&flag, Some(&file)).unwrap();
        assert_eq!(from_flag.deletion_grace, Duration::ZERO);
    }

    #[test]
    fn serving_threads_default_to_one_per_core_and_zero_is_allowed() {
        let cores = std::thread::available_parallelism().map_or(1, usize::from);
        assert_eq!(Settings::default().serve_threads, cores);
        for threads in [0, 3] {
            let given = Overrides {
                serve_threads: Some(threads),
                ..Overrides::default()
            };
            assert_eq!(
                Settings::resolve(&given, None).unwrap().serve_threads,
                threads
            );
        }
    }

    #[test]
    fn the_demo_backend_is_auto_unless_told_and_takes_words_or_booleans() {
        assert_eq!(Settings::default().demo_backend, DemoBackend::Auto);
        for (text, expected) in [
            ("auto", DemoBackend::Auto),
            ("on", DemoBackend::On),
            ("true", DemoBackend::On),
            ("OFF", DemoBackend::Off),
            ("false", DemoBackend::Off),
        ] {
            assert_eq!(text.parse::<DemoBackend>(), Ok(expected), "{text}");
        }
        assert!("yes".parse::<DemoBackend>().unwrap_err().contains("yes"));
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("sezzlee.toml");
        for (line, expected) in [
            ("demo_backend = false", DemoBackend::Off),
            ("demo_backend = true", DemoBackend::On),
            ("demo_backend = \"auto\"", DemoBackend::Auto),
        ] {
            std::fs::write(&file, line).unwrap();
            let s = Settings::resolve(&Overrides::default(), Some(&file)).unwrap();
            assert_eq!(s.demo_backend, expected, "{line}");
        }
        std::fs::write(&file, "demo_backend = \"sometimes\"").unwrap();
        assert!(Settings::resolve(&Overrides::default(), Some(&file)).is_err());
    }

    #[test]
    fn bad_values_are_refused_with_the_reason() {
        let bad = Overrides {
            listen: Some("nowhere".to_string()),
            ..Overrides::default()
        };
        let refused = Settings::resolve(&bad, None).unwrap_err();
        assert_eq!(refused.setting(), "listen");
        assert!(refused.to_string().contains("nowhere"));
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("s.toml");
        std::fs::write(&file, "lisen = 1\n").unwrap();
        let refused = Settings::resolve(&Overrides::default(), Some(&file)).unwrap_err();
        assert!(
            matches!(&refused, ConfigError::File { path, .. } if *path == file),
            "{refused:?}"
        );
        assert!(refused.to_string().contains("lisen"));
    }

    #[test]
    fn an_output_depth_outside_0_to_64_is_refused_naming_it_and_the_range() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("sezzlee.toml");
        for (text, given) in [("output_depth = 65", "65"), ("output_depth = -1", "-1")] {
            std::fs::write(&file, text).unwrap();
            let refused = Settings::resolve(&Overrides::default(), Some(&file)).unwrap_err();
            assert_eq!(refused.setting(), "output_depth");
            assert_eq!(
                refused.to_string(),
                format!("output depth '{given}' is not an integer from 0 to 64")
            );
        }
        std::fs::write(&file, "output_depth = 64").unwrap();
        let deepest = Settings::resolve(&Overrides::default(), Some(&file)).unwrap();
        assert_eq!(deepest.output_depth, 64);
        let flag = Overrides {
            output_depth: Some(65),
            ..Overrides::default()
        };
        assert_eq!(
            Settings::resolve(&flag, None).unwrap_err().setting(),
            "output_depth"
        );
        assert_eq!(parse_output_depth(" 3 "), Ok(3));
        for text in ["65", "-1", "2.5", "deep", ""] {
            assert_eq!(
                parse_output_depth(text),
                Err(format!(
                    "output depth '{text}' is not an integer from 0 to 64"
                ))
            );
        }
    }
}
