//! The tools data plane: `tools/list` (every page, cached for the `ttlMs`
//! the server allows) and `tools/call` (with a timeout, `Mcp-Param-*`
//! mirroring, one re-list and retry on a header mismatch, and the result's
//! `structuredContent` checked against the tool's `outputSchema`).
//!
//! A call that ran and failed is a [`ToolResult`] with `is_error`; only a
//! request that produced no result is a [`ClientError`].

use super::rpc::{self, HEADER_MISMATCH, HeaderParam};
use super::{Client, ClientError};
use serde_json::{Map, Value, json};
use sezzlee_protocol::Method;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Most `tools/list` pages followed before the server is judged broken.
pub const MAX_PAGES: usize = 1000;
/// Most bytes of tool definitions one listing takes, all pages together
/// (each message is bounded on its own by the transport).
pub const MAX_LISTING_BYTES: usize = 64 * 1024 * 1024;

/// Follows the pages of one `tools/list`, whatever the transport: each
/// page's definitions taken, the next cursor read, a cursor seen twice,
/// more than [`MAX_PAGES`] pages or more than [`MAX_LISTING_BYTES`] of
/// definitions refused as a broken server.
#[derive(Default)]
pub(crate) struct Pages {
    seen: std::collections::HashSet<String>,
    pages: usize,
    bytes: usize,
}

impl Pages {
    /// Takes one page's `result`: its definitions appended to `tools`; the
    /// cursor of the next page, or `None` after the last.
    pub(crate) fn take(
        &mut self,
        result: &mut Value,
        tools: &mut Vec<Value>,
    ) -> Result<Option<String>, ClientError> {
        self.pages += 1;
        match result.get_mut("tools").map(Value::take) {
            Some(Value::Array(page)) => {
                self.bytes += page.iter().map(sezzlee_json::json_bytes).sum::<usize>();
                if self.bytes > MAX_LISTING_BYTES {
                    return Err(ClientError::Malformed(format!(
                        "tools/list holds more than {MAX_LISTING_BYTES} bytes of definitions"
                    )));
                }
                tools.extend(page);
            }
            _ => {
                return Err(ClientError::Malformed(
                    "the tools/list result has no tools array".to_string(),
                ));
            }
        }
        match result.get_mut("nextCursor").map(Value::take) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(next)) => {
                if !self.seen.insert(next.clone()) {
                    return Err(ClientError::Malformed(format!(
                        "tools/list returned cursor '{}' twice (a pagination loop)",
                        super::transport::preview(&next)
                    )));
                }
                if self.pages >= MAX_PAGES {
                    return Err(ClientError::Malformed(format!(
                        "tools/list has more than {MAX_PAGES} pages"
                    )));
                }
                Ok(Some(next))
            }
            Some(other) => Err(ClientError::Malformed(format!(
                "tools/list nextCursor is {}, not a string",
                sezzlee_json::kind_of(&other)
            ))),
        }
    }

    /// Pages taken so far.
    pub(crate) fn count(&self) -> usize {
        self.pages
    }
}

/// One tool definition, as the server published it (untrusted data).
#[derive(Debug, Clone)]
pub struct Tool {
    pub name: String,
    pub definition: Value,
    pub header_params: Vec<HeaderParam>,
}

impl Tool {
    pub fn description(&self) -> Option<&str> {
        self.definition.get("description").and_then(Value::as_str)
    }

    pub fn input_schema(&self) -> Option<&Value> {
        self.definition.get("inputSchema")
    }

    pub fn output_schema(&self) -> Option<&Value> {
        self.definition
            .get("outputSchema")
            .filter(|schema| schema.is_object())
    }

    /// A `_meta` entry of the definition.
    pub fn meta(&self, key: &str) -> Option<&Value> {
        self.definition.get("_meta").and_then(|meta| meta.get(key))
    }
}

/// Every page of `tools/list`.
#[derive(Debug, Clone)]
pub struct ToolList {
    pub tools: Vec<Tool>,
    /// Definitions left out, with why (an invalid `x-mcp-header`, no name).
    pub rejected: Vec<(String, String)>,
    pub pages: usize,
    /// The `ttlMs` of the first page.
    pub ttl_ms: Option<u64>,
    pub fetched_at: Instant,
}

impl ToolList {
    pub fn get(&self, name: &str) -> Option<&Tool> {
        self.tools.iter().find(|tool| tool.name == name)
    }
}

/// A cached list and when it stops being fresh.
pub struct Cached {
    list: Arc<ToolList>,
    fresh_until: Instant,
}

/// A `CallToolResult`.
#[derive(Debug, Clone)]
pub struct ToolResult {
    /// The content blocks, as sent (untrusted).
    pub content: Vec<Value>,
    pub structured: Option<Value>,
    /// The tool ran and failed.
    pub is_error: bool,
    /// Problems noticed on the way (an output that does not match the
    /// tool's `outputSchema`); they do not change the result.
    pub warnings: Vec<String>,
    /// The result as received.
    pub raw: Value,
}

impl ToolResult {
    /// Reads a `CallToolResult`.
    pub fn from_result(raw: Value) -> Result<ToolResult, ClientError> {
        if let Some(kind) = raw.get("resultType").and_then(Value::as_str)
            && kind != "complete"
        {
            return Err(ClientError::Unsupported(format!(
                "the server answered with resultType '{kind}' (it wants input this client does not provide)"
            )));
        }
        let content = match raw.get("content") {
            Some(Value::Array(blocks)) => blocks.clone(),
            None => Vec::new(),
            Some(other) => {
                return Err(ClientError::Malformed(format!(
                    "tools/call content is {}, not an array",
                    sezzlee_json::kind_of(other)
                )));
            }
        };
        let is_error = match raw.get("isError") {
            None | Some(Value::Null) => false,
            Some(Value::Bool(flag)) => *flag,
            Some(other) => {
                return Err(ClientError::Malformed(format!(
                    "tools/call isError is {}, not a boolean",
                    sezzlee_json::kind_of(other)
                )));
            }
        };
        Ok(ToolResult {
            content,
            structured: raw
                .get("structuredContent")
                .cloned()
                .filter(|v| !v.is_null()),
            is_error,
            warnings: Vec::new(),
            raw,
        })
    }

    /// The text blocks, joined by newlines.
    pub fn text(&self) -> String {
        self.content
            .iter()
            .filter(|block| block.get("type").and_then(Value::as_str) == Some("text"))
            .filter_map(|block| block.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// The result as JSON: `structuredContent`, else a lone text block that
    /// parses as JSON.
    pub fn json(&self) -> Option<Value> {
        if let Some(structured) = &self.structured {
            return Some(structured.clone());
        }
        match self.content.as_slice() {
            [block] if block.get("type").and_then(Value::as_str) == Some("text") => block
                .get("text")
                .and_then(Value::as_str)
                .and_then(|text| serde_json::from_str(text).ok()),
            _ => None,
        }
    }
}

/// Why `instance` does not match `schema` (`None` when it does).
pub fn schema_mismatch(schema: &Value, instance: &Value) -> Option<String> {
    match jsonschema::validator_for(schema) {
        Ok(validator) => {
            let errors: Vec<String> = validator
                .iter_errors(instance)
                .take(5)
                .map(|err| {
                    let at = err.instance_path().to_string();
                    format!("{} at '{}'", err, if at.is_empty() { "/" } else { &at })
                })
                .collect();
            if errors.is_empty() {
                None
            } else {
                Some(errors.join("; "))
            }
        }
        Err(err) => Some(format!("the outputSchema does not compile: {err}")),
    }
}

impl Client {
    /// Every tool, from the cache while it is fresh.
    pub async fn list_tools(&self) -> Result<Arc<ToolList>, ClientError> {
        if let Some(list) = self.cached_tools() {
            return Ok(list);
        }
        self.refresh_tools().await
    }

    /// The cached list, if still fresh.
    pub fn cached_tools(&self) -> Option<Arc<ToolList>> {
        let cache = self.tools.lock().unwrap_or_else(|p| p.into_inner());
        cache
            .as_ref()
            .filter(|cached| Instant::now() < cached.fresh_until)
            .map(|cached| cached.list.clone())
    }

    /// The last list fetched, fresh or not (until invalidated).
    pub fn known_tools(&self) -> Option<Arc<ToolList>> {
        let cache = self.tools.lock().unwrap_or_else(|p| p.into_inner());
        cache.as_ref().map(|cached| cached.list.clone())
    }

    /// Forgets the cached list (a `list_changed` arrived).
    pub fn invalidate_tools(&self) {
        *self.tools.lock().unwrap_or_else(|p| p.into_inner()) = None;
    }

    /// Lists every page now, and caches the answer for its `ttlMs`
    /// (capped by the configuration).
    pub async fn refresh_tools(&self) -> Result<Arc<ToolList>, ClientError> {
        let mut definitions = Vec::new();
        let mut cursor: Option<String> = None;
        let mut pages = Pages::default();
        let mut ttl_ms = None;
        loop {
            let mut params = Map::new();
            if let Some(cursor) = &cursor {
                params.insert("cursor".to_string(), json!(cursor));
            }
            let mut result = self.request(Method::ToolsList.as_str(), params).await?;
            if pages.count() == 0 {
                ttl_ms = result.get("ttlMs").and_then(Value::as_u64);
            }
            match pages.take(&mut result, &mut definitions)? {
                Some(next) => cursor = Some(next),
                None => break,
            }
        }
        let mut tools = Vec::new();
        let mut rejected = Vec::new();
        for definition in &definitions {
            match read_tool(definition) {
                Ok(tool) => tools.push(tool),
                Err((name, why)) => {
                    tracing::warn!(tool = %name, "left out a tool definition: {why}");
                    rejected.push((name, why));
                }
            }
        }
        let pages = pages.count();
        let fetched_at = Instant::now();
        let list = Arc::new(ToolList {
            tools,
            rejected,
            pages,
            ttl_ms,
            fetched_at,
        });
        let mut ttl = Duration::from_millis(ttl_ms.unwrap_or(0));
        if let Some(cap) = self.config().cache_ttl_cap {
            ttl = ttl.min(cap);
        }
        // Kept even when it may not be reused (ttl 0): the last definitions
        // seen still say which headers to mirror and what output to expect.
        *self.tools.lock().unwrap_or_else(|p| p.into_inner()) = Some(Cached {
            list: list.clone(),
            fresh_until: fetched_at + ttl,
        });
        Ok(list)
    }

    /// `tools/call` as the server answered it (the `CallToolResult`
    /// unread), with `identity` headers on this request only (either era)
    /// and the arguments mirrored into headers as the last listing's
    /// definition asks, within `timeout`: for a gateway passing results on.
    pub async fn call_tool_raw(
        &self,
        name: &str,
        arguments: Value,
        identity: &[(String, String)],
        timeout: Duration,
    ) -> Result<Value, ClientError> {
        let tool = self.known_tools().and_then(|list| list.get(name).cloned());
        let mirrored = match &tool {
            Some(tool) => {
                rpc::mirror(&tool.header_params, &arguments).map_err(ClientError::Usage)?
            }
            None => Vec::new(),
        };
        let mut params = Map::new();
        params.insert("name".to_string(), json!(name));
        params.insert("arguments".to_string(), arguments);
        self.request_with(
            Method::ToolsCall.as_str(),
            params,
            &mirrored,
            identity,
            timeout,
        )
        .await
    }

    /// `tools/call` with the configured timeout.
    pub async fn call_tool(&self, name: &str, arguments: Value) -> Result<ToolResult, ClientError> {
        self.call_tool_with_timeout(name, arguments, self.config().timeout)
            .await
    }

    /// `tools/call` within `timeout`.
    pub async fn call_tool_with_timeout(
        &self,
        name: &str,
        arguments: Value,
        timeout: Duration,
    ) -> Result<ToolResult, ClientError> {
        // The definition, if this client has listed it: it says which
        // arguments to mirror into headers and what output to expect. (A
        // stale one is corrected by the server's -32020 below.)
        let mut tool = self.known_tools().and_then(|list| list.get(name).cloned());
        let mut relisted = false;
        loop {
            let headers = match &tool {
                Some(tool) => {
                    rpc::mirror(&tool.header_params, &arguments).map_err(ClientError::Usage)?
                }
                None => Vec::new(),
            };
            let mut params = Map::new();
            params.insert("name".to_string(), json!(name));
            params.insert("arguments".to_string(), arguments.clone());
            match self
                .request_with(Method::ToolsCall.as_str(), params, &headers, &[], timeout)
                .await
            {
                Ok(raw) => {
                    let mut result = ToolResult::from_result(raw)?;
                    if tool.is_none() && result.structured.is_some() && !result.is_error {
                        // Structured output to check and no definition yet:
                        // list (a failure only skips the check).
                        match self.list_tools().await {
                            Ok(list) => tool = list.get(name).cloned(),
                            Err(err) => tracing::debug!("no outputSchema check: {err}"),
                        }
                    }
                    if let Some(tool) = &tool {
                        check_output(tool, &mut result);
                    }
                    return Ok(result);
                }
                // Headers the tool's schema asks for were missing or wrong:
                // list again (the spec's remedy) and retry once.
                Err(ClientError::Rpc(error)) if error.code == HEADER_MISMATCH && !relisted => {
                    relisted = true;
                    let fresh = self.refresh_tools().await?.get(name).cloned();
                    if fresh.is_none() {
                        return Err(ClientError::Rpc(error));
                    }
                    tool = fresh;
                }
                Err(err) => return Err(err),
            }
        }
    }
}

/// A definition as a [`Tool`], or why it is left out.
fn read_tool(definition: &Value) -> Result<Tool, (String, String)> {
    let name = definition
        .get("name")
        .and_then(Value::as_str)
        .ok_or_else(|| ("(no name)".to_string(), "it has no name".to_string()))?
        .to_string();
    let header_params = match definition.get("inputSchema") {
        Some(schema) => rpc::header_params(schema).map_err(|why| (name.clone(), why))?,
        None => Vec::new(),
    };
    Ok(Tool {
        name,
        definition: definition.clone(),
        header_params,
    })
}

/// Adds a warning when a successful result does not match the tool's
/// `outputSchema`.
fn check_output(tool: &Tool, result: &mut ToolResult) {
    let Some(schema) = tool.output_schema() else {
        return;
    };
    if result.is_error {
        return;
    }
    match &result.structured {
        None => result.warnings.push(format!(
            "tool '{}' declares an outputSchema but returned no structuredContent",
            tool.name
        )),
        Some(structured) => {
            if let Some(why) = schema_mismatch(schema, structured) {
                result.warnings.push(format!(
                    "tool '{}' returned structuredContent that does not match its outputSchema: {why}",
                    tool.name
                ));
            }
        }
    }
    for warning in &result.warnings {
        tracing::warn!("{warning}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_are_read_strictly() {
        let ok =
            ToolResult::from_result(json!({"content": [{"type": "text", "text": "{\"a\":1}"}]}))
                .unwrap();
        assert!(!ok.is_error);
        assert_eq!(ok.json(), Some(json!({"a": 1})));
        let failed = ToolResult::from_result(
            json!({"content": [{"type": "text", "text": "boom"}], "isError": true}),
        )
        .unwrap();
        assert!(failed.is_error);
        assert_eq!(failed.text(), "boom");
        assert_eq!(failed.json(), None);
        assert!(ToolResult::from_result(json!({"content": "x"})).is_err());
        assert!(ToolResult::from_result(json!({"content": [], "isError": "yes"})).is_err());
        assert!(
            ToolResult::from_result(json!({"resultType": "input_required", "inputRequests": {}}))
                .is_err()
        );
    }

    #[test]
    fn output_is_checked_against_the_schema() {
        let schema =
            json!({"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"]});
        assert_eq!(schema_mismatch(&schema, &json!({"x": 1})), None);
        assert!(schema_mismatch(&schema, &json!({"x": "1"})).is_some());
        let tool = Tool {
            name: "t".to_string(),
            definition: json!({"name": "t", "outputSchema": schema}),
            header_params: Vec::new(),
        };
        let mut result =
            ToolResult::from_result(json!({"content": [], "structuredContent": {"y": 1}})).unwrap();
        check_output(&tool, &mut result);
        assert_eq!(result.warnings.len(), 1, "{:?}", result.warnings);
        let mut result = ToolResult::from_result(json!({"content": []})).unwrap();
        check_output(&tool, &mut result);
        assert_eq!(result.warnings.len(), 1);
    }
}
