//! Logging and, when an OTLP endpoint is configured, trace export: the
//! `tracing` subscriber of `sezzlee serve`.
//!
//! Logs go to stderr (text or JSON) filtered by `RUST_LOG` (default
//! `info`). With `--otlp-endpoint` (`SEZZLEE_OTLP_ENDPOINT`, an OTLP/HTTP
//! traces URL such as `http://collector:4318/v1/traces`), the gateway's
//! spans (see `sezzlee_gateway::telemetry`) are exported in batches as
//! protobuf, sampled by `--trace-sample-ratio` of new traces (a caller's
//! sampled flag is followed). Off by default: no exporter, no thread.

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::{Protocol, WithExportConfig};
use opentelemetry_sdk::trace::{Sampler, SdkTracerProvider};
use sezzlee_gateway::settings::LogFormat;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;

/// Installs the subscriber; returns the trace provider to shut down (which
/// flushes the last spans) when exporting, or why exporting cannot start.
pub fn init(
    format: LogFormat,
    otlp_endpoint: Option<&str>,
    sample_ratio: f64,
) -> Result<Option<SdkTracerProvider>, String> {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let json = format == LogFormat::Json;
    // Colour only for a person at a terminal: a log file or a collector
    // would keep the escape codes as text.
    let colour = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let text_logs = (!json).then(|| {
        tracing_subscriber::fmt::layer()
            .with_ansi(colour)
            .with_writer(std::io::stderr)
    });
    let json_logs = json.then(|| {
        tracing_subscriber::fmt::layer()
            .json()
            .with_writer(std::io::stderr)
    });
    let provider = match otlp_endpoint.filter(|e| !e.is_empty()) {
        None => None,
        Some(endpoint) => {
            if !(endpoint.starts_with("http://") || endpoint.starts_with("https://")) {
                return Err(format!(
                    "--otlp-endpoint '{endpoint}' is not an http(s) URL"
                ));
            }
            if !(0.0..=1.0).contains(&sample_ratio) {
                return Err(format!(
                    "--trace-sample-ratio {sample_ratio} is not between 0 and 1"
                ));
            }
            let exporter = opentelemetry_otlp::SpanExporter::builder()
                .with_http()
                .with_protocol(Protocol::HttpBinary)
                .with_endpoint(endpoint)
                .build()
                .map_err(|e| format!("cannot start the OTLP exporter: {e}"))?;
            let resource = opentelemetry_sdk::Resource::builder()
                .with_service_name("sezzlee")
                .build();
            Some(
                SdkTracerProvider::builder()
                    .with_batch_exporter(exporter)
                    .with_sampler(Sampler::ParentBased(Box::new(Sampler::TraceIdRatioBased(
                        sample_ratio,
                    ))))
                    .with_resource(resource)
                    .build(),
            )
        }
    };
    let traces = provider
        .as_ref()
        .map(|provider| tracing_opentelemetry::layer().with_tracer(provider.tracer("sezzlee")));
    tracing_subscriber::registry()
        .with(filter)
        .with(text_logs)
        .with(json_logs)
        .with(traces)
        .try_init()
        .map_err(|e| format!("cannot install the log subscriber: {e}"))?;
    Ok(provider)
}
