//! The `sezzlee` command line: argument parsing here, each command's work
//! and output in `commands`, everything else in the workspace's crates.

mod commands;
mod telemetry;

use clap::{Args, Parser, Subcommand};
use sezzlee_gateway::settings::{DemoBackend, Overrides, Settings, parse_output_depth};
use std::path::PathBuf;
use std::process::ExitCode;

/// The allocator is chosen by feature (`Cargo.toml`, `[features]`):
/// `mimalloc` by default, `jemalloc`, or neither for the system's. A served
/// catalog is millions of small allocations (schema trees, names, postings)
/// and a large request body is a burst of big ones; which allocator keeps
/// the least of them resident afterwards is measured by
/// `scripts/allocator-compare.sh` (`benches/README.md`, "Allocators"):
/// mimalloc with `MIMALLOC_PURGE_DELAY=0`, which `serve` sets for itself
/// ([`purge_freed_memory_at_once`]) and the image and the manifests set.
#[cfg(all(feature = "mimalloc", feature = "jemalloc"))]
compile_error!("features `mimalloc` and `jemalloc` both choose the allocator: enable one");
#[cfg(feature = "mimalloc")]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;
#[cfg(feature = "jemalloc")]
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

#[derive(Parser)]
#[command(
    name = "sezzlee",
    version,
    about = "An MCP gateway that serves API catalogs as three tools"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Serve the catalogs folder over MCP (Streamable HTTP).
    Serve(Box<ServeArgs>),
    /// Build the catalog once, print diagnostics and a summary; exit 1 on errors.
    Check {
        /// The catalogs folder.
        #[arg(default_value = "./catalogs")]
        dir: PathBuf,
        /// Print every tool as one JSON line on stdout (diagnostics go to stderr).
        #[arg(long)]
        emit: bool,
        /// Measure search_tools on a TSV of tasks (query, document, method,
        /// path[, operationId]): recall@1/5/10, MRR and every miss's rank.
        #[arg(long, value_name = "FILE")]
        search_tasks: Option<PathBuf>,
        /// The response budget the gateway will serve with, in characters:
        /// definitions are published to fit it, and any that still does not
        /// is warned about.
        #[arg(long, value_name = "CHARS", default_value_t = sezzlee_catalog::BuildOptions::DEFAULT_BUDGET)]
        response_budget: usize,
        /// Object levels of each outputSchema published where the sidecar
        /// sets none, as the gateway's --output-depth: see what agents
        /// would load at another depth before serving it.
        #[arg(long, value_name = "LEVELS", value_parser = parse_output_depth,
              default_value_t = sezzlee_catalog::BuildOptions::DEFAULT_OUTPUT_DEPTH)]
        output_depth: u32,
        /// With --search-tasks: rank as a gateway serving with this search
        /// model folder (scripts/fetch-search-model.sh) would.
        #[arg(long, value_name = "DIR", env = "SEZZLEE_SEARCH_MODEL")]
        search_model: Option<PathBuf>,
        /// With --search-model: the folder tool vectors are cached in, as
        /// the gateway's --vector-cache (empty: none) [default:
        /// $XDG_CACHE_HOME/sezzlee/vectors or ~/.cache/sezzlee/vectors].
        #[arg(long, value_name = "DIR", env = "SEZZLEE_VECTOR_CACHE")]
        vector_cache: Option<PathBuf>,
    },
    /// An MCP client: `sezzlee client URL discover|tools|call|search|load|invoke|listen`.
    Client(Box<commands::client::ClientArgs>),
    /// Exit 0 when the gateway on this machine answers /healthz with 200
    /// (a container HEALTHCHECK; no shell or curl needed).
    Health {
        /// The address the gateway listens on (0.0.0.0 is asked on loopback).
        #[arg(long, env = "SEZZLEE_LISTEN", default_value = "127.0.0.1:8080")]
        listen: String,
        /// The path to ask.
        #[arg(long, default_value = "/healthz")]
        path: String,
        /// Give up after this many milliseconds.
        #[arg(long, default_value_t = 2000)]
        timeout_ms: u64,
    },
    /// Mint an HS256 JWT for trying per-caller visibility locally.
    Token {
        /// Environment variable holding the HS256 secret.
        #[arg(long, default_value = "SEZZLEE_DEMO_SECRET")]
        secret_env: String,
        /// The token's subject.
        #[arg(long, default_value = "demo-user")]
        sub: String,
        /// Scopes (repeat or comma separate).
        #[arg(long, value_delimiter = ',')]
        scope: Vec<String>,
        /// Roles (repeat or comma separate).
        #[arg(long, value_delimiter = ',')]
        role: Vec<String>,
        /// The token's issuer (`iss`); the gateway checks it when
        /// `[auth.jwt] issuer` is set.
        #[arg(long)]
        issuer: Option<String>,
        /// The token's audience (`aud`); the gateway checks it when
        /// `[auth.jwt] audience` is set.
        #[arg(long)]
        audience: Option<String>,
        /// Lifetime in seconds.
        #[arg(long, default_value_t = 3600)]
        ttl: u64,
    },
}

#[derive(Args)]
struct ServeArgs {
    /// The catalogs folder [default: ./catalogs].
    #[arg(long, env = "SEZZLEE_CATALOGS")]
    catalogs: Option<PathBuf>,
    /// Address to listen on [default: 127.0.0.1:8080].
    #[arg(long, env = "SEZZLEE_LISTEN")]
    listen: Option<String>,
    /// Settings file [default: ./sezzlee.toml when present].
    #[arg(long, env = "SEZZLEE_CONFIG")]
    config: Option<PathBuf>,
    /// MCP endpoint path [default: /mcp].
    #[arg(long, env = "SEZZLEE_ENDPOINT")]
    endpoint: Option<String>,
    /// Allowed browser origins, comma separated [default: localhost origins].
    #[arg(long, env = "SEZZLEE_ALLOWED_ORIGINS", value_delimiter = ',')]
    allowed_origins: Option<Vec<String>>,
    /// Largest request body in bytes [default: 4194304].
    #[arg(long, env = "SEZZLEE_MAX_BODY_BYTES")]
    max_body_bytes: Option<usize>,
    /// Largest tool answer in characters [default: 60000].
    #[arg(long, env = "SEZZLEE_RESPONSE_BUDGET")]
    response_budget: Option<usize>,
    /// Object levels of each outputSchema published where a document's
    /// sidecar sets no outputDepth, 0 to 64 [default: 1].
    #[arg(long, value_name = "LEVELS", env = "SEZZLEE_OUTPUT_DEPTH", value_parser = parse_output_depth)]
    output_depth: Option<u32>,
    /// Most bytes of a backend response read per call [default: 8388608].
    #[arg(long, env = "SEZZLEE_MAX_RESPONSE_BYTES")]
    max_response_bytes: Option<usize>,
    /// Bytes of search_tools answers and keyword effects cached per catalog
    /// generation; 0 turns the cache off [default: 16777216].
    #[arg(long, env = "SEZZLEE_SEARCH_CACHE_BYTES")]
    search_cache_bytes: Option<usize>,
    /// Folder of the text model that ranks tools by meaning besides
    /// keywords (scripts/fetch-search-model.sh); empty: keyword search only.
    #[arg(long, value_name = "DIR", env = "SEZZLEE_SEARCH_MODEL")]
    search_model: Option<PathBuf>,
    /// Folder the search model's tool vectors are cached in, so restarts,
    /// reloads and replicas sharing it never embed a text twice; empty: no
    /// cache [default: $XDG_CACHE_HOME/sezzlee/vectors or
    /// ~/.cache/sezzlee/vectors].
    #[arg(long, value_name = "DIR", env = "SEZZLEE_VECTOR_CACHE")]
    vector_cache: Option<PathBuf>,
    /// Log format: text or json [default: text].
    #[arg(long, env = "SEZZLEE_LOG_FORMAT")]
    log_format: Option<String>,
    /// Catalog watcher: events, poll or off [default: events].
    #[arg(long, env = "SEZZLEE_WATCH")]
    watch: Option<String>,
    /// Debounce window of the watcher in milliseconds [default: 50].
    #[arg(long, env = "SEZZLEE_DEBOUNCE_MS")]
    debounce_ms: Option<u64>,
    /// How long a file missing from the catalogs folder keeps serving
    /// before its deletion is published, in milliseconds; a file replaced
    /// in two steps (git checkout, unlink then create) is missing only for
    /// a moment [default: 500].
    #[arg(long, env = "SEZZLEE_DELETION_GRACE_MS")]
    deletion_grace_ms: Option<u64>,
    /// Polling interval in milliseconds for --watch poll [default: 2000].
    #[arg(long, env = "SEZZLEE_POLL_INTERVAL_MS")]
    poll_interval_ms: Option<u64>,
    /// Keep-alive interval of listen streams in milliseconds [default: 15000].
    #[arg(long, env = "SEZZLEE_KEEPALIVE_MS")]
    keepalive_ms: Option<u64>,
    /// Most listen streams open at once [default: 1024].
    #[arg(long, env = "SEZZLEE_MAX_STREAMS")]
    max_streams: Option<usize>,
    /// Most listen streams per caller [default: 16].
    #[arg(long, env = "SEZZLEE_MAX_STREAMS_PER_CALLER")]
    max_streams_per_caller: Option<usize>,
    /// After SIGTERM, how long in-flight calls may still run, in
    /// milliseconds, counted from the end of the drain [default: 10000].
    #[arg(long, env = "SEZZLEE_SHUTDOWN_GRACE_MS")]
    shutdown_grace_ms: Option<u64>,
    /// After SIGTERM, how long the gateway goes on accepting and serving
    /// with /readyz answering 503, so load balancers move away first; then
    /// at most as long again for its connections to close, in milliseconds
    /// [default: 1000].
    #[arg(long, env = "SEZZLEE_SHUTDOWN_DRAIN_MS")]
    shutdown_drain_ms: Option<u64>,
    /// Threads that serve connections, each running its connections and
    /// their backend calls alone [default: one per core].
    #[arg(long, env = "SEZZLEE_SERVE_THREADS")]
    serve_threads: Option<usize>,
    /// Most connections open at once; at it no more are accepted until one
    /// closes [default: half the open-files limit, which serve raises to
    /// its hard limit].
    #[arg(long, env = "SEZZLEE_MAX_CONNECTIONS")]
    max_connections: Option<usize>,
    /// Serve the built-in demo backend under /demo: auto (while a served
    /// document's backend is ${SEZZLEE_SELF}/demo, as the shipped demo
    /// catalog's is), on (true) or off (false) [default: auto].
    #[arg(long, env = "SEZZLEE_DEMO_BACKEND")]
    demo_backend: Option<DemoBackend>,
    /// Export traces over OTLP/HTTP to this URL (such as
    /// http://collector:4318/v1/traces) [default: none, no export].
    #[arg(long, env = "SEZZLEE_OTLP_ENDPOINT")]
    otlp_endpoint: Option<String>,
    /// Share of new traces exported, 0 to 1 (a caller's sampled flag is
    /// followed).
    #[arg(long, env = "SEZZLEE_TRACE_SAMPLE_RATIO", default_value_t = 1.0)]
    trace_sample_ratio: f64,
}

impl ServeArgs {
    fn overrides(&self) -> Overrides {
        Overrides {
            catalogs: self.catalogs.clone(),
            listen: self.listen.clone(),
            endpoint: self.endpoint.clone(),
            allowed_origins: self.allowed_origins.clone(),
            max_body_bytes: self.max_body_bytes,
            response_budget: self.response_budget,
            output_depth: self.output_depth,
            max_response_bytes: self.max_response_bytes,
            search_cache_bytes: self.search_cache_bytes,
            search_model: self.search_model.clone(),
            vector_cache: self.vector_cache.clone(),
            log_format: self.log_format.clone(),
            debounce_ms: self.debounce_ms,
            deletion_grace_ms: self.deletion_grace_ms,
            watch: self.watch.clone(),
            poll_interval_ms: self.poll_interval_ms,
            keepalive_ms: self.keepalive_ms,
            max_streams: self.max_streams,
            max_streams_per_caller: self.max_streams_per_caller,
            shutdown_grace_ms: self.shutdown_grace_ms,
            shutdown_drain_ms: self.shutdown_drain_ms,
            serve_threads: self.serve_threads,
            max_connections: self.max_connections,
            demo_backend: self.demo_backend,
        }
    }
}

/// The gateway with mimalloc returns freed memory at once
/// (`MIMALLOC_PURGE_DELAY=0`, the setting `scripts/allocator-compare.sh`
/// chose: a tenth of the default's retention after large requests, the same
/// throughput). mimalloc reads its options before `main`, so when the
/// variable is unset `serve` runs itself again with it set; an operator's
/// own value is kept. If that cannot be done, it serves as it is.
fn purge_freed_memory_at_once() {
    #[cfg(all(unix, feature = "mimalloc"))]
    {
        use std::os::unix::process::CommandExt;
        const PURGE_DELAY: &str = "MIMALLOC_PURGE_DELAY";
        if std::env::var_os(PURGE_DELAY).is_some() {
            return;
        }
        let Ok(program) = std::env::current_exe() else {
            return;
        };
        // `exec` returns only when it failed.
        let failed = std::process::Command::new(program)
            .args(std::env::args_os().skip(1))
            .env(PURGE_DELAY, "0")
            .exec();
        eprintln!(
            "sezzlee serve: could not set {PURGE_DELAY}=0 ({failed}); serving with mimalloc's default"
        );
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Client(args) => commands::client::run(*args),
        Command::Check {
            dir,
            emit,
            search_tasks,
            response_budget,
            output_depth,
            search_model,
            vector_cache,
        } => match search_tasks {
            Some(tasks) => commands::check::run_search_tasks(
                &dir,
                &tasks,
                search_model.as_deref(),
                vector_cache.or_else(sezzlee_semantic::cache::default_root),
            ),
            None => commands::check::run(
                &dir,
                if emit {
                    commands::check::Stdout::Definitions
                } else {
                    commands::check::Stdout::Report
                },
                &sezzlee_catalog::BuildOptions {
                    response_budget,
                    output_depth,
                },
            ),
        },
        Command::Health {
            listen,
            path,
            timeout_ms,
        } => commands::health::run(&listen, &path, std::time::Duration::from_millis(timeout_ms)),
        Command::Token {
            secret_env,
            sub,
            scope,
            role,
            issuer,
            audience,
            ttl,
        } => commands::token::run(&commands::token::TokenRequest {
            secret_env,
            subject: sub,
            scopes: scope,
            roles: role,
            issuer,
            audience,
            ttl_seconds: ttl,
        }),
        Command::Serve(args) => {
            purge_freed_memory_at_once();
            // Before the settings: `max_connections` defaults to half the
            // limit in force.
            sezzlee_gateway::open_files::raise_limit();
            let settings = match Settings::resolve(&args.overrides(), args.config.as_deref()) {
                Ok(settings) => settings,
                Err(err) => {
                    eprintln!("sezzlee serve: {err}");
                    return ExitCode::from(2);
                }
            };
            let traces = match telemetry::init(
                settings.log_format,
                args.otlp_endpoint.as_deref(),
                args.trace_sample_ratio,
            ) {
                Ok(traces) => traces,
                Err(err) => {
                    eprintln!("sezzlee serve: {err}");
                    return ExitCode::from(2);
                }
            };
            let runtime = match tokio::runtime::Builder::new_multi_thread()
                .enable_all()
                .build()
            {
                Ok(runtime) => runtime,
                Err(err) => {
                    eprintln!("sezzlee serve: cannot start the runtime: {err}");
                    return ExitCode::from(2);
                }
            };
            let code = runtime.block_on(sezzlee_gateway::server::run(settings));
            if let Some(traces) = traces
                && let Err(err) = traces.shutdown()
            {
                eprintln!("sezzlee serve: the last traces were not exported: {err}");
            }
            code
        }
    }
}
