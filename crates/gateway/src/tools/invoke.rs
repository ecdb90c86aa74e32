//! invoke_tool: exact, safe calls to the real backend, pinned to the
//! version the agent loaded.
//!
//! The order is the contract: an unknown (or hidden) name first, whatever
//! `version` says; then the `arguments` coercion; then the pin, refused
//! before anything is sent; then validation against the inputSchema; only
//! then is a request built and sent. Results keep the backend's status and
//! body and drop whatever an agent cannot use.

use super::Context;
use super::backend_answer;
use super::envelope::{
    self, Code, Retry, ToolAnswer, invalid_type, quoted, quoted_up_to, unknown_tool,
};
use super::load::find_visible;
use crate::backend::Failure;
use crate::backend::request::{self, Problem};
use crate::backend::response::BackendResponse;
use crate::metrics::BackendOutcome;
use serde_json::{Map, Value, json};
use sezzlee_catalog::sidecar::BackendConfig;
use sezzlee_catalog::{Operation, Target, Tool};
use sezzlee_json::kind_of;
use std::time::Duration;

/// Problems an `invalid_arguments` answer lists at most, and characters
/// of each problem's message: a validator's message quotes the value it
/// refused, and a 3 MB array of a million wrong items made a million
/// problems, an 83 MB answer and a minute of work
/// (`tests/it/hostile_callers.rs`). Validation stops at the first ones.
const MAX_PROBLEMS: usize = 20;
const MAX_PROBLEM_CHARS: usize = 300;
/// Longest pointer a problem carries whole (a pointer is made of the
/// caller's keys): deep ones still point, and twenty of them stay far
/// inside any response budget.
const MAX_POINTER_CHARS: usize = 1_000;

pub async fn run(context: &Context<'_>, arguments: &Value) -> ToolAnswer {
    let name = match arguments.get("name") {
        Some(Value::String(name)) => name,
        None | Some(Value::Null) => {
            return ToolAnswer::fail(
                Code::InvalidArguments,
                "invoke_tool needs 'name': the name of a tool as search_tools returned it.",
                Retry::WillNotHelp,
                Map::new(),
            );
        }
        Some(other) => return invalid_type("name", "a string", other),
    };
    let Some((tool, _)) = find_visible(context, name) else {
        return unknown_tool(name);
    };
    let answer = invoke_visible(context, tool, name, arguments).await;
    context.metrics.invoked(
        &tool.name,
        &tool.document,
        context.snapshot.catalog.tools().len(),
        answer.code(),
    );
    answer
}

/// The rest of invoke_tool once the tool is known and visible: arguments,
/// the version pin, validation, the call.
async fn invoke_visible(
    context: &Context<'_>,
    tool: &Tool,
    name: &str,
    arguments: &Value,
) -> ToolAnswer {
    let call_arguments = match coerce_arguments(name, arguments.get("arguments")) {
        Ok(call_arguments) => call_arguments,
        Err(answer) => return answer,
    };
    match arguments.get("version") {
        None | Some(Value::Null) => {}
        Some(Value::String(pinned)) if *pinned == tool.version => {}
        Some(Value::String(_)) => return tool_changed(name),
        Some(other) => {
            return invalid_type(
                "version",
                "a string (the version load_tool returned)",
                other,
            );
        }
    }
    // Validated as the object it is, then taken back (not copied).
    let instance = Value::Object(call_arguments);
    if let Err(problems) = validate(context, tool, &instance) {
        return invalid_arguments(tool, problems);
    }
    let call_arguments = match instance {
        Value::Object(map) => map,
        _ => Map::new(),
    };
    dispatch(context, tool, call_arguments).await
}

/// `null`/absent → `{}`; an object as is; a string holding a JSON object
/// is unwrapped (and the rewrite logged); anything else is refused.
fn coerce_arguments(
    name: &str,
    arguments: Option<&Value>,
) -> Result<Map<String, Value>, ToolAnswer> {
    match arguments {
        None | Some(Value::Null) => Ok(Map::new()),
        Some(Value::Object(map)) => Ok(map.clone()),
        Some(Value::String(text)) => match serde_json::from_str::<Value>(text) {
            Ok(Value::Object(map)) => {
                tracing::info!(
                    tool = name,
                    "invoke_tool: 'arguments' arrived as a JSON string; unwrapped it into an object"
                );
                Ok(map)
            }
            _ => Err(ToolAnswer::fail(
                Code::InvalidType,
                "'arguments' must be an object, but a string arrived that is not a JSON object. Send the arguments as a JSON object whose keys are the inputSchema's properties.",
                Retry::WillNotHelp,
                Map::new(),
            )),
        },
        Some(other) => Err(ToolAnswer::fail(
            Code::InvalidType,
            format!(
                "'arguments' must be an object, but {} arrived. Send the arguments as a JSON object whose keys are the inputSchema's properties.",
                kind_of(other)
            ),
            Retry::WillNotHelp,
            Map::new(),
        )),
    }
}

fn tool_changed(name: &str) -> ToolAnswer {
    ToolAnswer::fail(
        Code::ToolChanged,
        format!(
            "The tool '{name}' changed after it was loaded, so the call was refused before reaching the backend. Load it again with load_tool and retry with the new version."
        ),
        Retry::WillNotHelp,
        Map::new(),
    )
}

/// Every schema violation of `instance` (the arguments object), with its
/// JSON pointer.
fn validate(context: &Context, tool: &Tool, instance: &Value) -> Result<(), Vec<Problem>> {
    let index = context
        .snapshot
        .catalog
        .position(&tool.name)
        .ok_or_else(Vec::new)?;
    let validator = match context.snapshot.per_tool.validator(index, tool) {
        Ok(validator) => validator,
        Err(why) => {
            tracing::warn!(
                tool = tool.name,
                "inputSchema does not compile, arguments not validated: {why}"
            );
            return Ok(());
        }
    };
    let problems: Vec<Problem> = validator
        .iter_errors(instance)
        .flat_map(|error| {
            let at = error.instance_path().as_str().to_string();
            match error.kind() {
                // One problem per argument the schema does not have, pointing
                // at it, rather than one at the object holding them.
                jsonschema::error::ValidationErrorKind::AdditionalProperties { unexpected } => {
                    unexpected
                        .iter()
                        .map(|name| Problem {
                            pointer: quoted_up_to(
                                &format!("{at}/{}", escape_pointer(name)),
                                MAX_POINTER_CHARS,
                            )
                            .into_owned(),
                            message: clip(format!(
                                "'{}' is not an argument of this tool",
                                quoted(name)
                            )),
                        })
                        .collect()
                }
                _ => vec![Problem {
                    pointer: quoted_up_to(&at, MAX_POINTER_CHARS).into_owned(),
                    message: clip(error.to_string()),
                }],
            }
        })
        // One more than is listed, to know that there are more.
        .take(MAX_PROBLEMS + 1)
        .collect();
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems)
    }
}

/// `message` cut to [`MAX_PROBLEM_CHARS`] characters, `…` included.
fn clip(message: String) -> String {
    if message.char_indices().nth(MAX_PROBLEM_CHARS).is_none() {
        return message;
    }
    let end = message
        .char_indices()
        .nth(MAX_PROBLEM_CHARS - 1)
        .map_or(message.len(), |(end, _)| end);
    format!("{}…", &message[..end])
}

/// A JSON pointer reference token (RFC 6901): `~` → `~0`, `/` → `~1`.
fn escape_pointer(token: &str) -> String {
    token.replace('~', "~0").replace('/', "~1")
}

fn invalid_arguments(tool: &Tool, mut problems: Vec<Problem>) -> ToolAnswer {
    let more = if problems.len() > MAX_PROBLEMS {
        problems.truncate(MAX_PROBLEMS);
        format!(" Only the first {MAX_PROBLEMS} problems are listed; there are more.")
    } else {
        String::new()
    };
    let accepted: Vec<&str> = tool.argument_names.iter().map(|name| &**name).collect();
    let listed: Vec<Value> = problems
        .iter()
        .map(|p| json!({"pointer": p.pointer, "message": p.message}))
        .collect();
    let first = problems
        .first()
        .map(|p| {
            format!(
                "{} ({})",
                p.message,
                if p.pointer.is_empty() {
                    "/"
                } else {
                    &p.pointer
                }
            )
        })
        .unwrap_or_default();
    ToolAnswer::fail(
        Code::InvalidArguments,
        format!(
            "The arguments do not match the inputSchema of '{}': {first}. Fix them (see problems and accepted) and call again; nothing was sent to the backend.{more}",
            tool.name
        ),
        Retry::WillNotHelp,
        Map::from_iter([
            ("problems".to_string(), Value::Array(listed)),
            ("accepted".to_string(), json!(accepted)),
        ]),
    )
}

async fn dispatch(
    context: &Context<'_>,
    tool: &Tool,
    mut arguments: Map<String, Value>,
) -> ToolAnswer {
    for (key, value) in &tool.fixed {
        arguments.insert(key.clone(), value.clone());
    }
    match &tool.target {
        Target::Http(operation) => call_http(context, tool, operation, arguments).await,
        Target::Upstream(upstream) => {
            super::upstream_call::call(context, tool, upstream, arguments).await
        }
    }
}

/// The `Authorization` to send to `backend` for this caller
/// ([`crate::backend::credentials`]), or the answer saying why there is none.
pub(super) async fn authorization_for(
    context: &Context<'_>,
    backend: &BackendConfig,
) -> Result<Option<String>, ToolAnswer> {
    let forwards_authorization = backend
        .forward_headers
        .iter()
        .flatten()
        .any(|name| name.eq_ignore_ascii_case("authorization"));
    context
        .backend
        .credentials
        .authorization(
            backend.auth.as_ref(),
            forwards_authorization,
            context.caller,
        )
        .await
        .map_err(|why| {
            ToolAnswer::fail(
                Code::BackendCredentials,
                why.message,
                Retry::when(why.retryable),
                Map::from_iter([("mayHaveReachedBackend".to_string(), json!(false))]),
            )
        })
}

/// An API operation's call: the request built from the arguments, sent
/// over HTTP, its answer shaped to the budget.
async fn call_http(
    context: &Context<'_>,
    tool: &Tool,
    operation: &Operation,
    arguments: Map<String, Value>,
) -> ToolAnswer {
    let base_url = match base_url(tool, operation, context) {
        Ok(url) => url,
        Err(message) => {
            return ToolAnswer::fail(Code::InternalError, message, Retry::WillNotHelp, Map::new());
        }
    };
    let authorization = match authorization_for(context, &operation.backend).await {
        Ok(authorization) => authorization,
        Err(answer) => return answer,
    };
    let headers = match outgoing_headers(context, tool, &operation.backend, authorization) {
        Ok(headers) => headers,
        Err(message) => {
            return ToolAnswer::fail(Code::InternalError, message, Retry::WillNotHelp, Map::new());
        }
    };
    let binary = binary_members(tool);
    let outgoing = match request::build(operation, &base_url, &arguments, &binary, headers) {
        Ok(outgoing) => outgoing,
        Err(problems) => return invalid_arguments(tool, problems),
    };
    let timeout = crate::backend::call_timeout(&operation.backend);
    let span = tracing::info_span!(
        "backend.call",
        http.request.method = %outgoing.method,
        gen_ai.tool.name = %tool.name,
    );
    let mut outgoing = outgoing;
    for (name, value) in crate::telemetry::outgoing(&span, &context.caller.headers) {
        outgoing
            .headers
            .retain(|(existing, _)| !existing.eq_ignore_ascii_case(&name));
        outgoing.headers.push((name, value));
    }
    let host = crate::backend::host_of(&base_url);
    // The sidecar's quotas (the document's, the operation's), held for the
    // call's duration, then the backend's own guard.
    let operation_scope = format!("{} {} {}", tool.document, operation.method, operation.path);
    let quotas: Vec<(&str, &sezzlee_catalog::sidecar::Quota)> = [
        (&*tool.document, operation.backend.quota.as_ref()),
        (operation_scope.as_str(), operation.quota.as_ref()),
    ]
    .into_iter()
    .filter_map(|(scope, quota)| Some((scope, quota?)))
    .collect();
    let _in_flight = match context.limits.quotas(&quotas, context.caller) {
        Ok(slots) => slots,
        Err(limited) => return envelope::rate_limited(&limited),
    };
    // The credential the call carries: its Authorization and the static
    // headers configured (a quota, and a Retry-After, are a credential's).
    let mut credential_names: Vec<&str> = vec!["authorization"];
    credential_names.extend(operation.backend.headers.keys().map(String::as_str));
    // Only those headers are kept (usually none or one: no allocation
    // otherwise); the hash is taken only while a Retry-After is held.
    let credential_headers: Vec<(String, String)> = outgoing
        .headers
        .iter()
        .filter(|(name, _)| {
            credential_names
                .iter()
                .any(|n| n.eq_ignore_ascii_case(name))
        })
        .cloned()
        .collect();
    let credential =
        || crate::limits::credential_fingerprint(&credential_headers, &credential_names);
    if let Err(limited) = context.limits.backend(host, &credential) {
        return envelope::rate_limited(&limited);
    }
    let started = std::time::Instant::now();
    let result = {
        use tracing::Instrument;
        context
            .backend
            .send(outgoing, timeout)
            .instrument(span)
            .await
    };
    let elapsed = started.elapsed();
    context.limits.backend_answered(
        host,
        &credential,
        match &result {
            Ok(response) => crate::limits::outcome_of(
                Some(response.status),
                response.headers.get("retry-after").and_then(Value::as_str),
            ),
            Err(_) => crate::limits::outcome_of(None, None),
        },
    );
    let outcome = match &result {
        Ok(response) => BackendOutcome::Status(response.status),
        Err(Failure::Unavailable { .. } | Failure::UnknownHost) => BackendOutcome::Unavailable,
        Err(Failure::Timeout { .. }) => BackendOutcome::Timeout,
    };
    context.metrics.backend_call(host, outcome, elapsed);
    access_log(tool, &operation.method, host, &result, elapsed);
    match result {
        Ok(response) => backend_answer::answer(response, context.budget, tool, &arguments),
        // The cause chain of a client library: bounded like any text an
        // answer quotes.
        Err(Failure::Unavailable {
            detail,
            maybe_reached,
        }) => envelope::unavailable("backend", &detail, maybe_reached, "Retry later."),
        Err(Failure::UnknownHost) => ToolAnswer::fail(
            Code::BackendUnavailable,
            format!(
                "The backend's host name '{host}' does not exist (the name system says so); the request did not reach it. A retry will not help: the catalog owner must fix the server URL or backend.baseUrl."
            ),
            Retry::WillNotHelp,
            Map::from_iter([("mayHaveReachedBackend".to_string(), json!(false))]),
        ),
        Err(Failure::Timeout { after }) => ToolAnswer::fail(
            Code::BackendTimeout,
            format!(
                "The backend did not answer within {} ms; the request may have reached it. Retry only if the operation is safe to repeat.",
                after.as_millis()
            ),
            Retry::MayHelp,
            Map::from_iter([("mayHaveReachedBackend".to_string(), json!(true))]),
        ),
    }
}

/// One access-log line per backend call (target `sezzlee::access`, INFO),
/// as an nginx or Envoy operator expects: the tool, the method, the host
/// (never the path's values, the query or credentials), the status or the
/// kind of failure, the duration and whether the request may have reached
/// the backend. `RUST_LOG=info,sezzlee::access=off` silences it.
fn access_log(
    tool: &Tool,
    method: &str,
    host: &str,
    result: &Result<BackendResponse, Failure>,
    elapsed: Duration,
) {
    // Milliseconds to the microsecond, as text: `1.302`, not `1.3019690000000002`.
    let duration_ms = format!("{:.3}", elapsed.as_secs_f64() * 1_000.0);
    match result {
        Ok(response) => tracing::info!(
            target: "sezzlee::access",
            tool = %tool.name, method = %method, host = %host, status = response.status,
            duration_ms = %duration_ms, may_have_reached = true, "backend call"
        ),
        Err(failure) => {
            let (outcome, may_have_reached) = match failure {
                Failure::Unavailable { maybe_reached, .. } => ("unavailable", *maybe_reached),
                Failure::Timeout { .. } => ("timeout", true),
                Failure::UnknownHost => ("unknown_host", false),
            };
            tracing::info!(
                target: "sezzlee::access",
                tool = %tool.name, method = %method, host = %host, outcome = %outcome,
                duration_ms = %duration_ms, may_have_reached, "backend call"
            );
        }
    }
}

/// The base URL with `${NAME}` expanded; it must be absolute.
fn base_url(tool: &Tool, operation: &Operation, context: &Context) -> Result<String, String> {
    let Some(url) = &operation.base_url else {
        return Err(format!(
            "The document of '{}' names no server, so the gateway does not know where to send the call. The catalog owner must set backend.baseUrl in the sidecar.",
            tool.name
        ));
    };
    let url = context
        .backend
        .expand(url, context.self_url)
        .map_err(|why| {
            format!(
                "The backend address of '{}' cannot be built: {why}.",
                tool.name
            )
        })?;
    if !(url.starts_with("http://") || url.starts_with("https://")) {
        return Err(format!(
            "The server URL of '{}' ('{url}') is not absolute. The catalog owner must set backend.baseUrl in the sidecar.",
            tool.name
        ));
    }
    Ok(url.trim_end_matches('/').to_string())
}

/// The backend's `Authorization` ([`crate::backend::credentials`]), the
/// caller's forwarded headers (only those configured; `Authorization` is
/// never taken from the caller here) and the sidecar's static headers.
fn outgoing_headers(
    context: &Context,
    tool: &Tool,
    backend: &BackendConfig,
    authorization: Option<String>,
) -> Result<Vec<(String, String)>, String> {
    let mut headers = caller_headers(context, backend, authorization);
    for (name, value) in &backend.headers {
        // A configured header replaces a forwarded one of the same name.
        headers.retain(|(forwarded, _)| !forwarded.eq_ignore_ascii_case(name));
        let value = context
            .backend
            .expand(value, context.self_url)
            .map_err(|why| {
                format!(
                    "A configured header of '{}' cannot be built: {why}.",
                    tool.name
                )
            })?;
        // The sidecar was checked at load, but a `${NAME}` may bring in
        // anything: never let it split the request.
        if !sezzlee_catalog::header_text::is_field_value(&value) {
            return Err(format!(
                "The configured header '{name}' of '{}' holds a line break or another control character after ${{...}} expansion; fix the environment variable it names.",
                tool.name
            ));
        }
        headers.push((name.to_ascii_lowercase(), value));
    }
    headers.push((
        "accept".to_string(),
        "application/json, */*;q=0.5".to_string(),
    ));
    Ok(headers)
}

/// The `Authorization` to send, and the caller's headers the backend
/// configuration forwards (only those configured; `Authorization` is never
/// taken from the caller here).
pub(super) fn caller_headers(
    context: &Context,
    backend: &BackendConfig,
    authorization: Option<String>,
) -> Vec<(String, String)> {
    let mut headers: Vec<(String, String)> = authorization
        .map(|value| ("authorization".to_string(), value))
        .into_iter()
        .collect();
    for name in backend.forward_headers.iter().flatten() {
        let name = name.to_ascii_lowercase();
        if name == "authorization" {
            continue;
        }
        for value in context.caller.headers.get_all(name.as_str()) {
            if let Ok(text) = value.to_str() {
                headers.push((name.clone(), text.to_string()));
            }
        }
    }
    headers
}

/// Members whose schema says `contentEncoding: base64` (sent as bytes).
fn binary_members(tool: &Tool) -> Vec<String> {
    tool.base64_members
        .iter()
        .map(|name| name.to_string())
        .collect()
}
