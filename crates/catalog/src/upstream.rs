//! An upstream MCP server named by a catalog file (`NAME.mcp.yaml`,
//! `.mcp.yml` or `.mcp.json`): how to reach it (Streamable HTTP by `url`,
//! or a process over stdio by `command`), the credentials it gets, and the
//! curation of its tools, validated as a whole like a sidecar, so a typo
//! refuses the file with the key at fault and the last good version stays.
//!
//! Only the file is read here (the catalog stays pure); listing the
//! server's tools and calling them is the gateway's business.

use crate::sidecar::{
    BackendConfig, Policy, SidecarError, ToolConfig, check_backend, check_policies_defined,
    deserialize_pointed,
};
use serde::Deserialize;
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::sync::Arc;

/// The file name endings that name an upstream MCP server.
const SUFFIXES: [&str; 3] = [".mcp.yaml", ".mcp.yml", ".mcp.json"];

/// Whether the file at `rel` names an upstream MCP server.
pub fn is_upstream(rel: &str) -> bool {
    let name = rel.rsplit('/').next().unwrap_or(rel).to_ascii_lowercase();
    SUFFIXES.iter().any(|suffix| name.ends_with(suffix))
}

/// A validated upstream file.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct UpstreamSpec {
    /// Streamable HTTP endpoint (`http://` or `https://`).
    pub url: Option<String>,
    /// The program to start, speaking MCP over stdio.
    pub command: Option<String>,
    #[serde(default)]
    pub args: Vec<String>,
    /// The process's environment: each name set to the value of the
    /// gateway's environment variable named (`GITHUB_TOKEN: GH_TOKEN`);
    /// nothing else of the gateway's environment is passed on.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// The process's working folder, relative to the file's folder.
    pub working_dir: Option<String>,
    /// Which protocol era to speak (`auto` negotiates as `sezzlee client`).
    #[serde(default)]
    pub era: EraChoice,
    /// A prefix for every tool name (`[a-z0-9_]`).
    pub namespace: Option<String>,
    /// Headers, credentials (`auth`) and the time each call may take, as
    /// for an OpenAPI backend; `baseUrl` has no meaning here.
    #[serde(default)]
    pub backend: BackendConfig,
    /// Per tool, by the upstream's own tool name.
    #[serde(default)]
    pub tools: BTreeMap<String, ToolConfig>,
    #[serde(default)]
    pub policies: BTreeMap<String, Policy>,
    /// A policy applied to every tool that names none.
    pub visibility: Option<String>,
    /// Seconds between two listings when the upstream sends no
    /// `list_changed` (default [`DEFAULT_RELIST_SECONDS`]).
    pub relist_seconds: Option<u64>,
    /// Most tools taken from this upstream (default [`DEFAULT_MAX_TOOLS`]).
    pub max_tools: Option<usize>,
}

/// Which protocol era an upstream is spoken to in.
#[derive(Debug, Clone, Copy, Default, Deserialize, PartialEq, Eq)]
pub enum EraChoice {
    /// 2026-07-28 first, the `initialize` era when the server does not
    /// speak it.
    #[default]
    #[serde(rename = "auto")]
    Auto,
    #[serde(rename = "2026-07-28")]
    Stateless,
    #[serde(rename = "legacy")]
    Handshake,
}

/// Listing again every five minutes when no `list_changed` arrives.
pub const DEFAULT_RELIST_SECONDS: u64 = 300;
/// At most this many tools per upstream by default.
pub const DEFAULT_MAX_TOOLS: usize = 1_000;
/// The most any upstream file may allow.
pub const MAX_TOOLS_LIMIT: usize = 10_000;

/// How the gateway reaches the upstream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Transport<'s> {
    Http {
        url: &'s str,
    },
    Stdio {
        command: &'s str,
        args: &'s [String],
    },
}

impl UpstreamSpec {
    /// Validates a parsed upstream file.
    pub fn from_value(value: &Value) -> Result<UpstreamSpec, SidecarError> {
        let spec: UpstreamSpec = deserialize_pointed(value)?;
        spec.check()?;
        Ok(spec)
    }

    /// How to reach the upstream (a checked spec names exactly one way).
    pub fn transport(&self) -> Option<Transport<'_>> {
        match (&self.url, &self.command) {
            (Some(url), None) => Some(Transport::Http { url }),
            (None, Some(command)) => Some(Transport::Stdio {
                command,
                args: &self.args,
            }),
            _ => None,
        }
    }

    fn check(&self) -> Result<(), SidecarError> {
        let error = |pointer: &str, message: String| SidecarError {
            pointer: pointer.to_string(),
            message,
        };
        match (&self.url, &self.command) {
            (None, None) => {
                return Err(error(
                    "",
                    "name the server with url (Streamable HTTP) or command (stdio)".to_string(),
                ));
            }
            (Some(_), Some(_)) => {
                return Err(error(
                    "",
                    "name the server with url or command, not both".to_string(),
                ));
            }
            (Some(url), None) => {
                let lower = url.to_ascii_lowercase();
                if !(lower.starts_with("http://") || lower.starts_with("https://"))
                    || url.chars().any(char::is_whitespace)
                {
                    return Err(error(
                        "/url",
                        format!("'{url}' is not an http:// or https:// URL"),
                    ));
                }
                for (key, set) in [
                    ("args", !self.args.is_empty()),
                    ("env", !self.env.is_empty()),
                    ("workingDir", self.working_dir.is_some()),
                ] {
                    if set {
                        return Err(error(
                            &format!("/{key}"),
                            format!("{key} applies to a command, not to a url"),
                        ));
                    }
                }
            }
            (None, Some(command)) => {
                if command.trim().is_empty() {
                    return Err(error("/command", "the command is empty".to_string()));
                }
                if let Some(dir) = &self.working_dir
                    && (dir.starts_with('/') || dir.split(['/', '\\']).any(|part| part == ".."))
                {
                    return Err(error(
                        "/workingDir",
                        format!(
                            "'{dir}' must be a folder inside the catalogs folder, written relative to this file"
                        ),
                    ));
                }
                for (name, variable) in &self.env {
                    if name.is_empty() || name.contains(['=', '\0']) {
                        return Err(error(
                            "/env",
                            format!("'{name}' is not an environment variable name"),
                        ));
                    }
                    if variable.is_empty() || variable.contains(['=', '\0', '$', '{', '}']) {
                        return Err(error(
                            &format!("/env/{}", crate::diagnostics::pointer_segment(name)),
                            format!(
                                "the value names the gateway's environment variable to pass on, as a bare name ('{variable}' is not one)"
                            ),
                        ));
                    }
                }
            }
        }
        if self.backend.base_url.is_some() {
            return Err(error(
                "/backend/baseUrl",
                "an upstream is reached by its url or command, not backend.baseUrl".to_string(),
            ));
        }
        if let Some(namespace) = &self.namespace
            && !crate::naming::is_valid_name(namespace)
        {
            return Err(error(
                "/namespace",
                format!("namespace '{namespace}' must use only [a-z0-9_]"),
            ));
        }
        if self.relist_seconds == Some(0) {
            return Err(error(
                "/relistSeconds",
                "relistSeconds must be at least 1".to_string(),
            ));
        }
        if let Some(most) = self.max_tools
            && !(1..=MAX_TOOLS_LIMIT).contains(&most)
        {
            return Err(error(
                "/maxTools",
                format!("maxTools must be between 1 and {MAX_TOOLS_LIMIT}"),
            ));
        }
        check_backend(&self.backend)?;
        let policies_used = self
            .tools
            .values()
            .filter_map(|tool| tool.visibility.as_ref())
            .chain(self.visibility.iter());
        check_policies_defined(policies_used, &self.policies)
    }
}

/// What the gateway knows of an upstream server's tools: the definitions
/// of its last good listing, and what is wrong with it now, if anything.
#[derive(Debug, Clone, PartialEq)]
pub struct UpstreamListing {
    /// Every page of the last `tools/list` that succeeded, as sent;
    /// `None` when no listing has succeeded yet.
    pub tools: Option<Arc<Vec<Value>>>,
    /// Why the server is not answering now (its tools, if any, are the
    /// last good listing's).
    pub problem: Option<String>,
    /// Tools the listing held that the gateway's client cannot call (by
    /// name, and why), said as left out.
    pub refused: Vec<(String, String)>,
    digest: [u8; 32],
}

impl UpstreamListing {
    pub fn new(tools: Option<Arc<Vec<Value>>>, problem: Option<String>) -> UpstreamListing {
        let mut hasher = Sha256::new();
        match &tools {
            Some(tools) => {
                hasher.update(b"listed\n");
                for tool in tools.iter() {
                    hasher.update(tool.to_string().as_bytes());
                    hasher.update(b"\n");
                }
            }
            None => hasher.update(b"never listed\n"),
        }
        if let Some(problem) = &problem {
            hasher.update(b"problem\n");
            hasher.update(problem.as_bytes());
        }
        UpstreamListing {
            tools,
            problem,
            refused: Vec::new(),
            digest: hasher.finalize().into(),
        }
    }

    /// The same listing with the tools the client refused, by name and why.
    pub fn with_refused(mut self, refused: Vec<(String, String)>) -> UpstreamListing {
        let mut hasher = Sha256::new();
        hasher.update(self.digest);
        for (name, why) in &refused {
            hasher.update(b"refused\n");
            hasher.update(name.as_bytes());
            hasher.update(b"\n");
            hasher.update(why.as_bytes());
        }
        self.digest = hasher.finalize().into();
        self.refused = refused;
        self
    }

    /// Equal digests: equal tools and problem (a build reuses the unit).
    pub fn digest(&self) -> [u8; 32] {
        self.digest
    }
}

/// Most characters of an upstream tool's description kept; the rest is
/// cut (the text is untrusted and lands in every agent's context).
pub const MAX_DESCRIPTION_CHARS: usize = 4_000;
/// Most characters of one upstream tool's definition (its serialised
/// JSON) taken at all; a larger one is left out with a diagnostic.
pub const MAX_DEFINITION_CHARS: usize = 256 * 1024;

/// One tool of an upstream's `tools/list`, as far as it is safe to serve:
/// its name, a description stripped of control characters and bounded,
/// its schemas and annotations as the server sent them.
#[derive(Debug, Clone, PartialEq)]
pub struct ListedTool {
    pub name: String,
    pub description: String,
    pub input_schema: Value,
    pub output_schema: Option<Value>,
    pub annotations: Option<serde_json::Map<String, Value>>,
}

/// Why a listed tool was left out, by the name it had (or its position).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeftOut {
    pub tool: String,
    pub why: String,
}

/// The tools an upstream listed, in order, checked one by one: a tool
/// without a name, with a duplicate name, with an inputSchema that is not
/// an object schema, or with a definition over [`MAX_DEFINITION_CHARS`]
/// is left out and said so; past `max_tools` the rest are left out, said
/// once for all of them.
pub fn read_listing(tools: &[Value], max_tools: usize) -> (Vec<ListedTool>, Vec<LeftOut>) {
    let mut kept: Vec<ListedTool> = Vec::new();
    let mut left_out = Vec::new();
    for (index, tool) in tools.iter().enumerate() {
        let label = tool
            .get("name")
            .and_then(Value::as_str)
            .map_or_else(|| format!("#{index}"), |name| clean_text(name, 128));
        let leave = |why: &str| LeftOut {
            tool: label.clone(),
            why: why.to_string(),
        };
        if kept.len() >= max_tools {
            let rest = tools.len() - index;
            left_out.push(leave(&format!(
                "it and the {} listed after it are past the {max_tools} tools taken from this server (maxTools)",
                rest - 1
            )));
            break;
        }
        let Some(name) = tool.get("name").and_then(Value::as_str) else {
            left_out.push(leave("it has no name"));
            continue;
        };
        if name.is_empty() || name.chars().count() > 128 || name.chars().any(char::is_control) {
            left_out.push(leave(
                "its name is empty, longer than 128 characters or holds control characters",
            ));
            continue;
        }
        if kept.iter().any(|other| other.name == name) {
            left_out.push(leave("another tool of this server has the same name"));
            continue;
        }
        if sezzlee_json::json_chars(tool) > MAX_DEFINITION_CHARS {
            left_out.push(leave(&format!(
                "its definition is larger than {MAX_DEFINITION_CHARS} characters"
            )));
            continue;
        }
        let input_schema = match tool.get("inputSchema") {
            Some(schema @ Value::Object(members))
                if members.get("type").and_then(Value::as_str) == Some("object") =>
            {
                schema.clone()
            }
            _ => {
                left_out.push(leave(
                    "its inputSchema is not an object schema (type: object)",
                ));
                continue;
            }
        };
        let output_schema = tool
            .get("outputSchema")
            .filter(|schema| schema.is_object())
            .cloned();
        let description = tool
            .get("description")
            .and_then(Value::as_str)
            .map(|text| clean_text(text, MAX_DESCRIPTION_CHARS))
            .unwrap_or_default();
        kept.push(ListedTool {
            name: name.to_string(),
            description,
            input_schema,
            output_schema,
            annotations: tool.get("annotations").and_then(Value::as_object).cloned(),
        });
    }
    (kept, left_out)
}

/// Untrusted text made safe to serve: control characters but line breaks
/// and tabs dropped, at most `most` characters.
fn clean_text(text: &str, most: usize) -> String {
    text.chars()
        .filter(|c| !c.is_control() || matches!(c, '\n' | '\t'))
        .take(most)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn refused(value: Value) -> SidecarError {
        UpstreamSpec::from_value(&value).expect_err("refused")
    }

    #[test]
    fn the_smallest_files_name_a_url_or_a_command() {
        let http = UpstreamSpec::from_value(&json!({"url": "http://127.0.0.1:9000/mcp"})).unwrap();
        assert_eq!(
            http.transport(),
            Some(Transport::Http {
                url: "http://127.0.0.1:9000/mcp"
            })
        );
        assert_eq!(http.era, EraChoice::Auto);
        let stdio = UpstreamSpec::from_value(&json!({
            "command": "npx", "args": ["-y", "@modelcontextprotocol/server-everything"],
            "env": {"GITHUB_TOKEN": "GH_TOKEN"}, "era": "legacy", "namespace": "everything"
        }))
        .unwrap();
        assert!(
            matches!(stdio.transport(), Some(Transport::Stdio { command: "npx", args }) if args.len() == 2)
        );
        assert_eq!(stdio.era, EraChoice::Handshake);
    }

    #[test]
    fn a_wrong_file_is_refused_with_the_key_at_fault() {
        let cases = [
            (json!({}), ""),
            (json!({"url": "http://a/mcp", "command": "x"}), ""),
            (json!({"url": "ftp://a/mcp"}), "/url"),
            (json!({"url": "http://a/mcp", "args": ["x"]}), "/args"),
            (json!({"command": " "}), "/command"),
            (
                json!({"command": "x", "workingDir": "../elsewhere"}),
                "/workingDir",
            ),
            (
                json!({"command": "x", "env": {"TOKEN": "${TOKEN}"}}),
                "/env/TOKEN",
            ),
            (json!({"url": "http://a/mcp", "era": "2024"}), "/era"),
            (
                json!({"url": "http://a/mcp", "namespace": "Bad-Name"}),
                "/namespace",
            ),
            (json!({"url": "http://a/mcp", "maxTools": 0}), "/maxTools"),
            (
                json!({"url": "http://a/mcp", "relistSeconds": 0}),
                "/relistSeconds",
            ),
            (
                json!({"url": "http://a/mcp", "backend": {"baseUrl": "http://b"}}),
                "/backend/baseUrl",
            ),
            (
                json!({"url": "http://a/mcp", "backend": {"headers": {"X-Key": "a\nb"}}}),
                "/backend/headers/X-Key",
            ),
            (
                json!({"url": "http://a/mcp", "tools": {"echo": {"visibility": "admins"}}}),
                "/policies",
            ),
            (json!({"url": "http://a/mcp", "colour": "blue"}), "/colour"),
        ];
        for (value, pointer) in cases {
            let err = refused(value.clone());
            assert_eq!(err.pointer, pointer, "{value}: {}", err.message);
            assert!(!err.message.is_empty());
        }
    }

    #[test]
    fn upstream_files_are_told_by_their_name() {
        assert!(is_upstream("servers/everything.mcp.yaml"));
        assert!(is_upstream("GitHub.MCP.json"));
        assert!(!is_upstream("orders.yaml"));
        assert!(!is_upstream("orders.sezzlee.yaml"));
    }

    #[test]
    fn an_upstream_file_is_read_diagnosed_and_never_taken_for_a_document() {
        use crate::diagnostics::codes;
        use crate::{Catalog, Sources};
        let good = b"url: http://127.0.0.1:9000/mcp\nnamespace: tickets\n".to_vec();
        let first = Sources::from_files([("tickets.mcp.yaml".to_string(), good)], None);
        let catalog = Catalog::build(&first);
        assert!(catalog.tools().is_empty());
        let codes_seen: Vec<&str> = catalog.diagnostics.iter().map(|d| d.code).collect();
        assert_eq!(
            codes_seen,
            [codes::UPSTREAM_UNAVAILABLE],
            "{:?}",
            catalog.diagnostics
        );
        assert!(
            catalog
                .diagnostics
                .iter()
                .any(|d| d.message.contains("http://127.0.0.1:9000/mcp")
                    && d.message.contains("not been listed yet"))
        );
        // A broken edit is refused with the key at fault; the last good
        // version keeps serving.
        let broken = b"url: ftp://127.0.0.1:9000/mcp\n".to_vec();
        let second = Sources::from_files([("tickets.mcp.yaml".to_string(), broken)], Some(&first));
        let (rel, spec) = second.upstreams().next().expect("the last good version");
        assert_eq!(&**rel, "tickets.mcp.yaml");
        assert_eq!(spec.namespace.as_deref(), Some("tickets"));
        let catalog = Catalog::build(&second);
        let refused = catalog
            .diagnostics
            .iter()
            .find(|d| d.code == codes::INVALID_CONFIGURATION)
            .expect("the edit is refused");
        assert_eq!(refused.pointer, "/url");
    }

    #[test]
    fn a_listing_is_bounded_and_each_bad_tool_said() {
        let object = json!({"type": "object"});
        let mut tools = vec![
            json!({"name": "echo", "description": "Echoes\u{7}\u{1b}[31m back.\nTwice.", "inputSchema": object}),
            json!({"description": "no name", "inputSchema": object}),
            json!({"name": "echo", "inputSchema": object}),
            json!({"name": "bad_schema", "inputSchema": {"type": "string"}}),
            json!({"name": "huge", "description": "d".repeat(MAX_DEFINITION_CHARS), "inputSchema": object}),
            json!({"name": "long", "description": "x".repeat(10 * MAX_DESCRIPTION_CHARS), "inputSchema": object, "outputSchema": {"type": "object"}, "annotations": {"readOnlyHint": true}}),
        ];
        tools.extend((0..5).map(|i| json!({"name": format!("extra_{i}"), "inputSchema": object})));
        let (kept, left_out) = read_listing(&tools, 4);
        let names: Vec<&str> = kept.iter().map(|tool| tool.name.as_str()).collect();
        assert_eq!(names, ["echo", "long", "extra_0", "extra_1"]);
        assert_eq!(kept[0].description, "Echoes[31m back.\nTwice.");
        assert_eq!(kept[1].description.chars().count(), MAX_DESCRIPTION_CHARS);
        assert_eq!(kept[1].annotations.as_ref().unwrap()["readOnlyHint"], true);
        assert!(kept[1].output_schema.is_some());
        let said: Vec<(&str, bool)> = left_out
            .iter()
            .map(|left| (left.tool.as_str(), !left.why.is_empty()))
            .collect();
        assert_eq!(
            said,
            [
                ("#1", true),
                ("echo", true),
                ("bad_schema", true),
                ("huge", true),
                ("extra_2", true),
            ]
        );
        assert!(left_out[4].why.contains("maxTools"), "{}", left_out[4].why);
        assert!(
            left_out[4].why.contains("the 2 listed after it"),
            "{}",
            left_out[4].why
        );
    }
}
