//! Trace context: the W3C `traceparent` a caller sends becomes the parent
//! of the request's span, and the backend call carries the trace on.
//!
//! Spans are `tracing` spans (`mcp.request`, then `search_tools`,
//! `load_tool`, `invoke_tool` and `backend.call`); when the binary installs
//! an OpenTelemetry layer (`--otlp-endpoint`), they are exported over OTLP
//! and the backend receives a `traceparent` naming the `backend.call` span.
//! Without one, the caller's `traceparent` and `tracestate` are passed on
//! as they came (when well formed), so a backend still joins the caller's
//! trace.

use axum::http::HeaderMap;
use opentelemetry::trace::{SpanContext, SpanId, TraceContextExt, TraceFlags, TraceId, TraceState};
use std::str::FromStr;
use tracing_opentelemetry::OpenTelemetrySpanExt;

const TRACEPARENT: &str = "traceparent";
const TRACESTATE: &str = "tracestate";

/// The caller's trace context, when its `traceparent` is well formed
/// (W3C Trace Context, version 00).
pub fn remote_parent(headers: &HeaderMap) -> Option<SpanContext> {
    let value = headers.get(TRACEPARENT)?.to_str().ok()?.trim();
    let mut parts = value.split('-');
    let (version, trace, span, flags) =
        (parts.next()?, parts.next()?, parts.next()?, parts.next()?);
    if version != "00" || parts.next().is_some() {
        return None;
    }
    let lower_hex = |text: &str, len: usize| {
        text.len() == len
            && text
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    };
    if !(lower_hex(trace, 32) && lower_hex(span, 16) && lower_hex(flags, 2)) {
        return None;
    }
    let trace_id = TraceId::from_hex(trace).ok()?;
    let span_id = SpanId::from_hex(span).ok()?;
    let flags = u8::from_str_radix(flags, 16).ok()?;
    if trace_id == TraceId::INVALID || span_id == SpanId::INVALID {
        return None;
    }
    let state = headers
        .get(TRACESTATE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| TraceState::from_str(v).ok())
        .unwrap_or_default();
    Some(SpanContext::new(
        trace_id,
        span_id,
        TraceFlags::new(flags) & TraceFlags::SAMPLED,
        true,
        state,
    ))
}

/// Makes the caller's trace (if any) the parent of `span`.
pub fn adopt_parent(span: &tracing::Span, headers: &HeaderMap) {
    if let Some(parent) = remote_parent(headers) {
        let context = opentelemetry::Context::new().with_remote_span_context(parent);
        // Fails only when the span is already started elsewhere, or no
        // OpenTelemetry layer is installed: then nothing is exported.
        let _ = span.set_parent(context);
    }
}

/// The trace headers of a backend call made inside `span`: the span's own
/// context when spans are exported, else the caller's as they came.
pub fn outgoing(span: &tracing::Span, caller: &HeaderMap) -> Vec<(String, String)> {
    let context = span.context();
    let own = context.span().span_context().clone();
    if own.is_valid() {
        let mut headers = vec![(
            TRACEPARENT.to_string(),
            format!(
                "00-{}-{}-{:02x}",
                own.trace_id(),
                own.span_id(),
                own.trace_flags().to_u8()
            ),
        )];
        let state = own.trace_state().header();
        if !state.is_empty() {
            headers.push((TRACESTATE.to_string(), state));
        }
        return headers;
    }
    let Some(parent) = remote_parent(caller) else {
        return Vec::new();
    };
    let mut headers = vec![(
        TRACEPARENT.to_string(),
        format!(
            "00-{}-{}-{:02x}",
            parent.trace_id(),
            parent.span_id(),
            parent.trace_flags().to_u8()
        ),
    )];
    let state = parent.trace_state().header();
    if !state.is_empty() {
        headers.push((TRACESTATE.to_string(), state));
    }
    headers
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with(traceparent: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(TRACEPARENT, traceparent.parse().unwrap());
        headers
    }

    #[test]
    fn well_formed_traceparents_only() {
        let good = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
        let parent = remote_parent(&with(good)).unwrap();
        assert_eq!(
            parent.trace_id().to_string(),
            "4bf92f3577b34da6a3ce929d0e0e4736"
        );
        assert!(parent.is_sampled() && parent.is_remote());
        for bad in [
            "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",
            "garbage",
        ] {
            assert!(remote_parent(&with(bad)).is_none(), "{bad}");
        }
    }

    #[test]
    fn without_exported_spans_the_callers_context_is_passed_on() {
        let good = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
        let mut headers = with(good);
        headers.insert(TRACESTATE, "vendor=abc".parse().unwrap());
        let span = tracing::Span::none();
        assert_eq!(
            outgoing(&span, &headers),
            [
                (TRACEPARENT.to_string(), good.to_string()),
                (TRACESTATE.to_string(), "vendor=abc".to_string())
            ]
        );
        assert!(outgoing(&span, &HeaderMap::new()).is_empty());
    }
}
