//! `subscriptions/listen`: the long-lived SSE stream that tells 2026-07-28
//! clients when the catalog changed.
//!
//! The stream reads a `watch` channel, so a reload never waits on a
//! listener and a listener slower than the changes sees only the latest
//! generation, never a backlog. Dropping the stream (the client went away)
//! releases its slot; on shutdown each stream sends the graceful-closure
//! result before it ends.

use crate::gateway::Gateway;
use crate::jsonrpc::{ErrorCode, ErrorReply, INVALID_PARAMS};
use crate::shutdown::ShutdownSignal;
use crate::streams::Slot;
use crate::tools::GENERATION_KEY;
use crate::visibility::Caller;
use axum::body::Bytes;
use axum::http::StatusCode;
use futures_util::stream::{self, Stream};
use serde_json::{Value, json};
use std::time::Duration;
use tokio::sync::watch;

pub use sezzlee_protocol::meta::SUBSCRIPTION_KEY;
/// Application error code (outside the JSON-RPC reserved range) for a
/// listen request refused because too many streams are open.
pub const TOO_MANY_STREAMS: ErrorCode = ErrorCode(-31001);

/// An accepted subscription, ready to become an SSE body.
pub struct Subscription {
    id: Value,
    tools_list_changed: bool,
    generations: watch::Receiver<u64>,
    shutdown: ShutdownSignal,
    keepalive: Duration,
    slot: Slot,
}

/// Checks the request and reserves a slot.
pub fn open(
    gateway: &Gateway,
    id: Value,
    params: &Value,
    caller: &Caller,
) -> Result<Subscription, ErrorReply> {
    let Some(filter) = params.get("notifications").and_then(Value::as_object) else {
        return Err(ErrorReply::new(
            StatusCode::BAD_REQUEST,
            INVALID_PARAMS,
            "Invalid params: subscriptions/listen needs a notifications object, e.g. {\"toolsListChanged\": true}",
        ));
    };
    let settings = &gateway.settings;
    let slot = gateway
        .streams
        .acquire(caller.stream_key(), settings.max_streams, settings.max_streams_per_caller)
        .map_err(|why| {
            ErrorReply::new(
                StatusCode::TOO_MANY_REQUESTS,
                TOO_MANY_STREAMS,
                format!("Too many listen streams: {why}. Close a stream you no longer need, or retry later."),
            )
        })?;
    let mut generations = gateway.store.subscribe();
    generations.borrow_and_update();
    Ok(Subscription {
        id,
        tools_list_changed: filter.get("toolsListChanged").and_then(Value::as_bool) == Some(true),
        generations,
        shutdown: gateway.shutdown.signal(),
        keepalive: settings.keepalive,
        slot,
    })
}

enum Phase {
    Acknowledge,
    Listening,
    Closed,
}

struct State {
    subscription: Subscription,
    phase: Phase,
}

impl Subscription {
    /// The SSE body: acknowledgement, then one `list_changed` per
    /// generation change, keep-alive comments while idle, and the
    /// graceful-closure result on shutdown.
    pub fn into_stream(
        self,
    ) -> impl Stream<Item = Result<Bytes, std::convert::Infallible>> + Send + 'static {
        let state = State {
            subscription: self,
            phase: Phase::Acknowledge,
        };
        stream::unfold(state, |mut state| async move {
            let chunk = next_chunk(&mut state).await?;
            Some((Ok(chunk), state))
        })
    }
}

async fn next_chunk(state: &mut State) -> Option<Bytes> {
    let sub = &mut state.subscription;
    match state.phase {
        Phase::Closed => None,
        Phase::Acknowledge => {
            state.phase = Phase::Listening;
            let mut honoured = serde_json::Map::new();
            if sub.tools_list_changed {
                honoured.insert("toolsListChanged".to_string(), json!(true));
            }
            Some(event(&json!({
                "jsonrpc": "2.0",
                "method": sezzlee_protocol::notification::SUBSCRIPTIONS_ACKNOWLEDGED,
                "params": {"_meta": {SUBSCRIPTION_KEY: sub.id}, "notifications": honoured}
            })))
        }
        Phase::Listening => loop {
            if sub.shutdown.has_begun() {
                state.phase = Phase::Closed;
                return Some(closure(&sub.id));
            }
            tokio::select! {
                changed = sub.generations.changed() => {
                    if changed.is_err() {
                        state.phase = Phase::Closed;
                        return Some(closure(&sub.id));
                    }
                    let generation = *sub.generations.borrow_and_update();
                    if sub.tools_list_changed {
                        return Some(event(&json!({
                            "jsonrpc": "2.0",
                            "method": sezzlee_protocol::notification::TOOLS_LIST_CHANGED,
                            "params": {"_meta": {SUBSCRIPTION_KEY: sub.id, GENERATION_KEY: generation}}
                        })));
                    }
                }
                () = sub.shutdown.begun() => {
                    state.phase = Phase::Closed;
                    return Some(closure(&sub.id));
                }
                _ = tokio::time::sleep(sub.keepalive) => {
                    let _ = &sub.slot;
                    return Some(Bytes::from_static(b": keep-alive\n\n"));
                }
            }
        },
    }
}

/// The successful `subscriptions/listen` response: the stream ended on the
/// server's initiative, not by accident.
fn closure(id: &Value) -> Bytes {
    event(&json!({
        "jsonrpc": "2.0",
        "id": id,
        "result": {"resultType": "complete", "_meta": {SUBSCRIPTION_KEY: id}}
    }))
}

fn event(message: &Value) -> Bytes {
    Bytes::from(format!("event: message\ndata: {message}\n\n"))
}
