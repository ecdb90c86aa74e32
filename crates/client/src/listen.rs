//! `subscriptions/listen`: one long-lived SSE stream of change
//! notifications (2026-07-28 only).
//!
//! The first message must be the acknowledgement; what it honours is
//! compared with what was asked. Every message is matched to this
//! subscription by `io.modelcontextprotocol/subscriptionId` (others are
//! dropped). The successful `subscriptions/listen` response is the graceful
//! closure; a stream that ends without it was dropped, and the listener
//! opens a new one (a fresh request id, a fresh acknowledgement) after a
//! short back-off, up to a limit.

use super::era::Era;
use super::rpc::{self, SUBSCRIPTION_KEY};
use super::transport::{Answer, EventStream, Opened, preview};
use super::{Client, ClientError, RpcError};
use serde_json::{Map, Value};
use sezzlee_protocol::{Method, notification};
use std::time::Duration;

/// What a listener yields.
#[derive(Debug, Clone, PartialEq)]
pub enum ListenEvent {
    /// The server acknowledged the subscription.
    Acknowledged {
        subscription_id: Value,
        /// The filter the server agreed to honour.
        honoured: Value,
        /// Requested notification types the server left out.
        not_honoured: Vec<String>,
    },
    /// A change notification (`notifications/tools/list_changed`, …).
    Notification { method: String, params: Value },
    /// The stream dropped without the closing result; a new one is opened.
    Reconnecting { attempt: u32, reason: String },
    /// The server ended the subscription gracefully.
    Closed,
}

/// Options of a listener.
#[derive(Debug, Clone)]
pub struct ListenOptions {
    /// The `notifications` filter, e.g. `{"toolsListChanged": true}`.
    pub filter: Map<String, Value>,
    /// Reconnections tried in a row before giving up.
    pub max_reconnects: u32,
    /// First back-off; doubled per attempt, at most 10 s.
    pub backoff: Duration,
}

impl Default for ListenOptions {
    fn default() -> Self {
        let mut filter = Map::new();
        filter.insert("toolsListChanged".to_string(), Value::Bool(true));
        ListenOptions {
            filter,
            max_reconnects: 5,
            backoff: Duration::from_millis(200),
        }
    }
}

/// An open (or reopening) subscription.
pub struct Listener<'c> {
    client: &'c Client,
    options: ListenOptions,
    stream: Option<EventStream>,
    id: Value,
    acknowledged: bool,
    /// Reconnections since the last acknowledgement.
    attempts: u32,
    done: bool,
}

impl Client {
    /// The notifications the server sends on the streams of this client's
    /// requests (before their responses), from now on: what a server says
    /// in reply to a call, such as `notifications/tools/list_changed` from
    /// a tool that changed the tools. A receiver that lags loses the oldest.
    pub fn notifications(&self) -> tokio::sync::broadcast::Receiver<Value> {
        self.transport().notifications()
    }

    /// The `initialize` era's notification stream (GET on the endpoint,
    /// with the session): what a server of that era sends unasked, such as
    /// `notifications/tools/list_changed`. `None` when the server offers
    /// none; an error when it speaks 2026-07-28 (use [`Client::listen`]).
    pub async fn server_stream(&self) -> Result<Option<EventStream>, ClientError> {
        let negotiated = self.connect().await?;
        if negotiated.era != Era::Legacy {
            return Err(ClientError::Unsupported(
                "a 2026-07-28 server announces changes on subscriptions/listen".to_string(),
            ));
        }
        let timeout = self.config().timeout;
        tokio::time::timeout(
            timeout,
            self.transport().server_stream(&negotiated.legacy_headers()),
        )
        .await
        .map_err(|_| ClientError::Timeout(timeout))?
    }

    /// Opens a `subscriptions/listen` stream. Fails at once when the server
    /// is not modern, refuses the request, or does not acknowledge first.
    pub async fn listen(&self, options: ListenOptions) -> Result<Listener<'_>, ClientError> {
        let negotiated = self.connect().await?;
        if negotiated.era != Era::Modern {
            return Err(ClientError::Unsupported(format!(
                "subscriptions/listen needs protocol {}; this server speaks {}",
                rpc::STATELESS_VERSION,
                negotiated.protocol_version
            )));
        }
        let mut listener = Listener {
            client: self,
            options,
            stream: None,
            id: Value::Null,
            acknowledged: false,
            attempts: 0,
            done: false,
        };
        listener.open().await?;
        Ok(listener)
    }
}

impl Listener<'_> {
    /// The subscription id (the request id of the current stream).
    pub fn subscription_id(&self) -> &Value {
        &self.id
    }

    async fn open(&mut self) -> Result<(), ClientError> {
        let id = self.client.next_id();
        let mut params = Map::new();
        params.insert(
            "notifications".to_string(),
            Value::Object(self.options.filter.clone()),
        );
        let body = rpc::modern_body(&id, Method::SubscriptionsListen.as_str(), params.clone());
        let headers = rpc::modern_headers(Method::SubscriptionsListen.as_str(), &params);
        let timeout = self.client.config().timeout;
        let opened = tokio::time::timeout(timeout, self.client.transport().open(&body, &headers))
            .await
            .map_err(|_| ClientError::Timeout(timeout))??;
        self.id = id;
        self.acknowledged = false;
        match opened {
            Opened::Stream(stream) => {
                self.stream = Some(stream);
                Ok(())
            }
            Opened::Answer(Answer::Message {
                status, message, ..
            }) if message.get("error").is_some() => Err(ClientError::Rpc(RpcError::from_message(
                &message,
                Some(status),
            ))),
            Opened::Answer(Answer::Message { message, .. }) => {
                Err(ClientError::Malformed(format!(
                    "subscriptions/listen was answered with JSON, not a stream: {}",
                    preview(&message.to_string())
                )))
            }
            Opened::Answer(Answer::Status { status, body }) => Err(ClientError::Http {
                status,
                body: preview(&body),
            }),
            Opened::Answer(Answer::Accepted) => Err(ClientError::Malformed(
                "subscriptions/listen was answered 202 Accepted".to_string(),
            )),
        }
    }

    /// The next event; `None` once the subscription is over (after
    /// [`ListenEvent::Closed`] or an error).
    pub async fn next(&mut self) -> Option<Result<ListenEvent, ClientError>> {
        if self.done {
            return None;
        }
        let result = self.step().await;
        if matches!(result, Err(_) | Ok(ListenEvent::Closed)) {
            self.done = true;
            self.stream = None;
        }
        Some(result)
    }

    async fn step(&mut self) -> Result<ListenEvent, ClientError> {
        loop {
            let Some(stream) = self.stream.as_mut() else {
                self.reopen().await?;
                continue;
            };
            let message = match stream.next_message().await {
                None => {
                    return self.dropped("the stream ended without the closing result".to_string());
                }
                Some(Err(ClientError::Transport(why))) => return self.dropped(why),
                Some(Err(err)) => return Err(err),
                Some(Ok(message)) => message,
            };
            if let Some(event) = self.handle(message)? {
                return Ok(event);
            }
        }
    }

    /// The stream broke: count an attempt, report it; the next call reopens.
    fn dropped(&mut self, reason: String) -> Result<ListenEvent, ClientError> {
        self.stream = None;
        self.attempts += 1;
        if self.attempts > self.options.max_reconnects {
            return Err(ClientError::Transport(format!(
                "the listen stream dropped {} times in a row: {reason}",
                self.attempts
            )));
        }
        Ok(ListenEvent::Reconnecting {
            attempt: self.attempts,
            reason,
        })
    }

    async fn reopen(&mut self) -> Result<(), ClientError> {
        let shift = self.attempts.saturating_sub(1).min(6);
        let delay = self
            .options
            .backoff
            .checked_mul(1u32 << shift)
            .unwrap_or(Duration::MAX)
            .min(Duration::from_secs(10));
        tokio::time::sleep(delay).await;
        match self.open().await {
            Ok(()) => Ok(()),
            // The server is (still) away: count it like a drop.
            Err(ClientError::Transport(why) | ClientError::Unreachable(why)) => {
                match self.dropped(why) {
                    Ok(_) => Ok(()),
                    Err(err) => Err(err),
                }
            }
            Err(err) => Err(err),
        }
    }

    /// One message of the stream: an event to yield, or `None` to skip it.
    fn handle(&mut self, message: Value) -> Result<Option<ListenEvent>, ClientError> {
        // The response to the listen request: graceful closure or a refusal.
        if message.get("method").is_none() {
            if message.get("id") != Some(&self.id) {
                tracing::warn!(%message, "dropped a response for another request on the listen stream");
                return Ok(None);
            }
            if message.get("error").is_some() {
                return Err(ClientError::Rpc(RpcError::from_message(&message, None)));
            }
            return Ok(Some(ListenEvent::Closed));
        }
        let method = message
            .get("method")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        let params = message.get("params").cloned().unwrap_or(Value::Null);
        let subscription = params
            .get("_meta")
            .and_then(|meta| meta.get(SUBSCRIPTION_KEY));
        if subscription != Some(&self.id) {
            tracing::warn!(%method, "dropped a notification of another subscription");
            return Ok(None);
        }
        if !self.acknowledged {
            if method != notification::SUBSCRIPTIONS_ACKNOWLEDGED {
                return Err(ClientError::Malformed(format!(
                    "the listen stream began with {method}, not the acknowledgement"
                )));
            }
            self.acknowledged = true;
            self.attempts = 0;
            let honoured = params.get("notifications").cloned().unwrap_or(Value::Null);
            let not_honoured = self
                .options
                .filter
                .iter()
                .filter(|(key, wanted)| {
                    is_requested(wanted) && !honoured.get(key.as_str()).is_some_and(is_requested)
                })
                .map(|(key, _)| key.clone())
                .collect();
            return Ok(Some(ListenEvent::Acknowledged {
                subscription_id: self.id.clone(),
                honoured,
                not_honoured,
            }));
        }
        if method == notification::TOOLS_LIST_CHANGED {
            self.client.invalidate_tools();
        }
        Ok(Some(ListenEvent::Notification { method, params }))
    }
}

/// `true` or a non-empty list.
fn is_requested(value: &Value) -> bool {
    match value {
        Value::Bool(flag) => *flag,
        Value::Array(items) => !items.is_empty(),
        _ => false,
    }
}
