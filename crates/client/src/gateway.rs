//! Helpers for a sezzlee gateway's three tools: `search`, `load` (cached
//! per name with the loaded `version`, dropped when the catalog generation
//! stamp on `tools/list` moves or a `list_changed` arrives) and `invoke`
//! (pinned to the loaded version; on `tool_changed`, one automatic reload
//! and retry unless switched off).
//!
//! Tool failures (`unknown_tool`, `tool_changed`, a backend's 404…) are
//! results, never [`ClientError`]s.

use super::listen::ListenEvent;
use super::tools::{ToolResult, schema_mismatch};
use super::{Client, ClientError};
use serde_json::{Map, Value, json};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// The `_meta` key of the gateway's catalog generation stamp.
pub const GENERATION_KEY: &str = "sezzlee/catalogGeneration";

/// A loaded tool definition (the `load_tool` answer).
#[derive(Debug, Clone, PartialEq)]
pub struct Loaded {
    pub name: String,
    pub version: String,
    pub definition: Value,
}

/// What `load` came back with.
#[derive(Debug, Clone)]
pub enum LoadOutcome {
    /// The definition, and whether it came from the cache.
    Loaded { tool: Arc<Loaded>, cached: bool },
    /// `load_tool` failed (e.g. `unknown_tool`).
    Failed(ToolResult),
}

/// What `invoke` came back with.
#[derive(Debug, Clone)]
pub struct InvokeOutcome {
    pub result: ToolResult,
    /// The version the (last) call was pinned to.
    pub version: Option<String>,
    /// The first call was refused with `tool_changed`, the tool reloaded
    /// and the call retried; this is the version refused.
    pub retried_from: Option<String>,
}

/// The failure envelope's `error` code of a tool result, if any.
pub fn error_code(result: &ToolResult) -> Option<String> {
    if !result.is_error {
        return None;
    }
    result.json().and_then(|payload| {
        payload
            .get("error")
            .and_then(Value::as_str)
            .map(str::to_string)
    })
}

#[derive(Default)]
struct State {
    /// The generation the cache was filled at.
    generation: Option<u64>,
    loaded: HashMap<String, Arc<Loaded>>,
}

/// A client of a sezzlee gateway.
pub struct GatewayClient {
    client: Client,
    retry_on_change: bool,
    state: Mutex<State>,
}

impl GatewayClient {
    /// Automatic reload and retry on `tool_changed` is on.
    pub fn new(client: Client) -> GatewayClient {
        GatewayClient {
            client,
            retry_on_change: true,
            state: Mutex::new(State::default()),
        }
    }

    pub fn retry_on_change(mut self, retry: bool) -> GatewayClient {
        self.retry_on_change = retry;
        self
    }

    pub fn client(&self) -> &Client {
        &self.client
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Drops every loaded definition.
    pub fn invalidate(&self) {
        self.state().loaded.clear();
    }

    /// The cached definition of `name`, if any.
    pub fn cached(&self, name: &str) -> Option<Arc<Loaded>> {
        self.state().loaded.get(name).cloned()
    }

    /// Records a catalog generation; a different one than the cache was
    /// filled at empties it.
    pub fn observe_generation(&self, generation: u64) {
        let mut state = self.state();
        if state.generation != Some(generation) {
            if state.generation.is_some() {
                tracing::debug!(generation, "catalog generation changed: cache emptied");
            }
            state.loaded.clear();
            state.generation = Some(generation);
        }
    }

    /// Feeds a listen event: a `tools/list_changed` empties the cache (and
    /// records the generation it carries).
    pub fn observe(&self, event: &ListenEvent) {
        if let ListenEvent::Notification { method, params } = event
            && method == sezzlee_protocol::notification::TOOLS_LIST_CHANGED
        {
            if let Some(generation) = params
                .get("_meta")
                .and_then(|meta| meta.get(GENERATION_KEY))
                .and_then(Value::as_u64)
            {
                self.observe_generation(generation);
            }
            // Even at the same number (a restarted replica counts from 0
            // again) the notification means the catalog changed.
            self.invalidate();
        }
    }

    /// Reads the generation stamp from `tools/list` (itself cached for the
    /// server's `ttlMs`) and drops the cache if it moved.
    pub async fn sync_generation(&self) -> Result<Option<u64>, ClientError> {
        let list = self.client.list_tools().await?;
        let generation = list
            .tools
            .iter()
            .find_map(|tool| tool.meta(GENERATION_KEY).and_then(Value::as_u64));
        if let Some(generation) = generation {
            self.observe_generation(generation);
        }
        Ok(generation)
    }

    /// `search_tools`.
    pub async fn search(&self, search: Search<'_>) -> Result<ToolResult, ClientError> {
        let mut arguments = Map::new();
        arguments.insert("query".to_string(), json!(search.query));
        if !search.tags.is_empty() {
            arguments.insert("tags".to_string(), json!(search.tags));
        }
        if let Some(limit) = search.limit {
            arguments.insert("limit".to_string(), json!(limit));
        }
        if search.detail == Detail::Schema {
            arguments.insert("detail".to_string(), json!("schema"));
        }
        self.client
            .call_tool("search_tools", Value::Object(arguments))
            .await
    }

    /// `load_tool`, from the cache when this generation already loaded it.
    pub async fn load(&self, name: &str) -> Result<LoadOutcome, ClientError> {
        self.sync_generation().await?;
        if let Some(tool) = self.cached(name) {
            return Ok(LoadOutcome::Loaded { tool, cached: true });
        }
        self.reload(name).await
    }

    /// `load_tool` from the server, replacing the cached definition.
    pub async fn reload(&self, name: &str) -> Result<LoadOutcome, ClientError> {
        let result = self
            .client
            .call_tool("load_tool", json!({"name": name}))
            .await?;
        if result.is_error {
            self.state().loaded.remove(name);
            return Ok(LoadOutcome::Failed(result));
        }
        let definition = result.json().ok_or_else(|| {
            ClientError::Malformed("load_tool did not answer with JSON".to_string())
        })?;
        let version = definition
            .get("version")
            .and_then(Value::as_str)
            .ok_or_else(|| ClientError::Malformed("load_tool's answer has no version".to_string()))?
            .to_string();
        let tool = Arc::new(Loaded {
            name: name.to_string(),
            version,
            definition,
        });
        self.state().loaded.insert(name.to_string(), tool.clone());
        Ok(LoadOutcome::Loaded {
            tool,
            cached: false,
        })
    }

    /// `invoke_tool` pinned to `pin`, else to the loaded version (loading
    /// it first). On `tool_changed` (and with retry on) the tool is loaded
    /// again and the call retried once with the new version.
    pub async fn invoke(
        &self,
        name: &str,
        arguments: Value,
        pin: Option<&str>,
    ) -> Result<InvokeOutcome, ClientError> {
        let version = match pin {
            Some(pin) => pin.to_string(),
            None => match self.load(name).await? {
                LoadOutcome::Loaded { tool, .. } => tool.version.clone(),
                LoadOutcome::Failed(result) => {
                    return Ok(InvokeOutcome {
                        result,
                        version: None,
                        retried_from: None,
                    });
                }
            },
        };
        let result = self.invoke_once(name, &arguments, &version).await?;
        if !(self.retry_on_change && error_code(&result).as_deref() == Some("tool_changed")) {
            return Ok(InvokeOutcome {
                result,
                version: Some(version),
                retried_from: None,
            });
        }
        let fresh = match self.reload(name).await? {
            LoadOutcome::Loaded { tool, .. } => tool,
            LoadOutcome::Failed(result) => {
                return Ok(InvokeOutcome {
                    result,
                    version: None,
                    retried_from: Some(version),
                });
            }
        };
        let result = self.invoke_once(name, &arguments, &fresh.version).await?;
        Ok(InvokeOutcome {
            result,
            version: Some(fresh.version.clone()),
            retried_from: Some(version),
        })
    }

    async fn invoke_once(
        &self,
        name: &str,
        arguments: &Value,
        version: &str,
    ) -> Result<ToolResult, ClientError> {
        let mut result = self
            .client
            .call_tool(
                "invoke_tool",
                json!({"name": name, "arguments": arguments, "version": version}),
            )
            .await?;
        if let Some(tool) = self.cached(name).filter(|tool| tool.version == version) {
            check_body(&tool, &mut result);
        }
        Ok(result)
    }
}

/// A successful invoke's `body` checked against the loaded
/// `outputSchema` (a non-object root is published wrapped in `result`).
fn check_body(tool: &Loaded, result: &mut ToolResult) {
    let Some(schema) = tool
        .definition
        .get("outputSchema")
        .filter(|s| s.is_object())
    else {
        return;
    };
    if result.is_error {
        return;
    }
    let Some(body) = result
        .json()
        .and_then(|payload| payload.get("body").cloned())
    else {
        return;
    };
    let Some(why) = schema_mismatch(schema, &body) else {
        return;
    };
    if schema_mismatch(schema, &json!({"result": body})).is_none() {
        return;
    }
    let warning = format!(
        "the body returned by '{}' does not match its outputSchema: {why}",
        tool.name
    );
    tracing::warn!("{warning}");
    result.warnings.push(warning);
}

/// A `search_tools` request: the query, and what narrows or widens the
/// page (`Search::new(query)` for the gateway's defaults).
#[derive(Debug, Clone, Copy, Default)]
pub struct Search<'a> {
    pub query: &'a str,
    /// Whole tags every tool of the page must have.
    pub tags: &'a [String],
    /// Tools on the page (the gateway's default when `None`).
    pub limit: Option<u64>,
    pub detail: Detail,
}

impl<'a> Search<'a> {
    /// `query` with the gateway's defaults: no tags, its page size, cards.
    pub fn new(query: &'a str) -> Search<'a> {
        Search {
            query,
            ..Search::default()
        }
    }
}

/// What a search page holds of each tool.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Detail {
    /// Compact cards.
    #[default]
    Cards,
    /// Each tool's schema too (`detail: "schema"`).
    Schema,
}
