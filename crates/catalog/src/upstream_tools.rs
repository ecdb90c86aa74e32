//! An upstream MCP server's tools as catalog tools: the last listing the
//! gateway took of the server (every page of its `tools/list`) and the
//! upstream file's curation become one [`DocumentPart`], built like an API
//! document's, so search, versions, pins, visibility and compaction treat
//! both alike (`docs/contract.md` §2.10).
//!
//! The listing is untrusted: [`read_listing`] bounds and cleans it, and each
//! schema goes through the same converter as a document's (references
//! resolved, patterns checked, depth bounded); a tool whose schema does not
//! convert is a diagnostic and is not served.

use super::compact::Compactor;
use super::diagnostics::{Diagnostic, codes, pointer_segment};
use super::draft::{DocumentBuild, Draft, apply_annotations, fit_within_budget};
use super::refs::Resolver;
use super::schema::{Converter, Dialect, Direction, Reached, Schema};
use super::unit::DocumentPart;
use super::upstream::{DEFAULT_MAX_TOOLS, ListedTool, UpstreamListing, UpstreamSpec, read_listing};
use super::{BuildOptions, Target, UpstreamTool, assemble, naming};
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::sync::Arc;

/// Tools left out said one by one, per server; the rest are counted.
const MAX_LEFT_OUT_SAID: usize = 20;

/// The catalog's name of an upstream file's server (`tickets.mcp.yaml` →
/// `tickets`), when the file names no `namespace`.
pub fn namespace_of(rel: &str, spec: &UpstreamSpec) -> String {
    if let Some(namespace) = &spec.namespace {
        return namespace.clone();
    }
    let name = rel.rsplit('/').next().unwrap_or(rel);
    let lower = name.to_ascii_lowercase();
    let stem = [".mcp.yaml", ".mcp.yml", ".mcp.json"]
        .iter()
        .find_map(|suffix| lower.strip_suffix(suffix))
        .unwrap_or(&lower);
    let cleaned = naming::snake_case(stem);
    if cleaned.is_empty() {
        "upstream".to_string()
    } else {
        cleaned
    }
}

/// The tools and diagnostics of one upstream file, from its listing.
pub(crate) fn build_upstream(
    rel: &Arc<str>,
    spec: &UpstreamSpec,
    listing: Option<&UpstreamListing>,
    options: &BuildOptions,
) -> (DocumentPart, Vec<Diagnostic>) {
    let mut diagnostics = Vec::new();
    let namespace = namespace_of(rel, spec);
    let reached_by = match spec.transport() {
        Some(super::upstream::Transport::Http { url }) => format!("at {url}"),
        Some(super::upstream::Transport::Stdio { command, .. }) => {
            format!("started by the command {command}")
        }
        None => "nowhere".to_string(),
    };
    let listed = listing.and_then(|l| l.tools.clone());
    match (listing.and_then(|l| l.problem.as_deref()), &listed) {
        (Some(problem), Some(_)) => diagnostics.push(Diagnostic::warning(
            codes::UPSTREAM_UNAVAILABLE,
            rel,
            "",
            format!(
                "the MCP server {reached_by} is not answering ({problem}); the tools of its last good listing stay listed, and their calls answer backend_unavailable until it is back"
            ),
        )),
        (Some(problem), None) => diagnostics.push(Diagnostic::warning(
            codes::UPSTREAM_UNAVAILABLE,
            rel,
            "",
            format!(
                "the MCP server {reached_by} has not been listed yet ({problem}); its tools appear once it answers"
            ),
        )),
        (None, None) => diagnostics.push(Diagnostic::warning(
            codes::UPSTREAM_UNAVAILABLE,
            rel,
            "",
            format!("the MCP server {reached_by} has not been listed yet; its tools appear once it answers"),
        )),
        (None, Some(_)) => {}
    }
    let most = spec.max_tools.unwrap_or(DEFAULT_MAX_TOOLS);
    let (kept, mut left_out) = match &listed {
        Some(tools) => read_listing(tools, most),
        None => (Vec::new(), Vec::new()),
    };
    if let Some(listing) = listing {
        left_out.extend(
            listing
                .refused
                .iter()
                .map(|(name, why)| super::upstream::LeftOut {
                    tool: name.clone(),
                    why: format!("the gateway cannot call it as listed: {why}"),
                }),
        );
    }
    // A hostile listing may leave out thousands: the first are said one
    // by one, the rest counted.
    for left in left_out.iter().take(MAX_LEFT_OUT_SAID) {
        diagnostics.push(Diagnostic::warning(
            codes::UPSTREAM_TOOL_LEFT_OUT,
            rel,
            "",
            format!(
                "the server's tool '{}' is not served: {}",
                left.tool, left.why
            ),
        ));
    }
    if left_out.len() > MAX_LEFT_OUT_SAID {
        diagnostics.push(Diagnostic::warning(
            codes::UPSTREAM_TOOL_LEFT_OUT,
            rel,
            "",
            format!(
                "{} more of the server's tools are not served, for the same kinds of reasons",
                left_out.len() - MAX_LEFT_OUT_SAID
            ),
        ));
    }
    let mut compactor = Compactor::default();
    let mut drafts = Vec::with_capacity(kept.len());
    for tool in &kept {
        let config = spec.tools.get(&tool.name);
        if config.is_some_and(|c| c.hidden) {
            continue;
        }
        let pointer = format!("/tools/{}", pointer_segment(&tool.name));
        match draft_of(rel, spec, tool, &pointer) {
            Ok(mut draft) => {
                let depth = config
                    .and_then(|c| c.output_depth)
                    .map_or(options.output_depth, |depth| depth.0);
                fit_within_budget(&mut compactor, &mut draft, depth, options.response_budget);
                drafts.push(draft);
            }
            Err(why) => diagnostics.push(Diagnostic::error(
                codes::INVALID_OPERATION,
                rel,
                &pointer,
                format!("the server's tool '{}' is not served: {why}", tool.name),
            )),
        }
    }
    for (name, config) in &spec.tools {
        let at = format!("/tools/{}", pointer_segment(name));
        if listed.is_some() && !kept.iter().any(|tool| &tool.name == name) {
            diagnostics.push(Diagnostic::warning(
                codes::INVALID_CONFIGURATION,
                rel,
                &at,
                format!("the server lists no tool '{name}'; this entry has no effect"),
            ));
        }
        if !config.variants.is_empty() {
            diagnostics.push(Diagnostic::warning(
                codes::INVALID_CONFIGURATION,
                rel,
                &format!("{at}/variants"),
                "variants apply to API operations; an upstream server's tool has none".to_string(),
            ));
        }
    }
    let build = DocumentBuild {
        file: rel.clone(),
        namespace,
        title: String::new(),
        operations: kept.len(),
        drafts,
        diagnostics,
    };
    let (part, diagnostics) = assemble::finish_document(build);
    (part, diagnostics)
}

/// One listed tool as a draft: its name in the catalog, its curation, its
/// schemas converted.
fn draft_of(
    rel: &Arc<str>,
    spec: &UpstreamSpec,
    tool: &ListedTool,
    pointer: &str,
) -> Result<Draft, String> {
    let config = spec.tools.get(&tool.name);
    let name = match config.and_then(|c| c.name.clone()) {
        Some(name) => name,
        None => {
            let own = naming::snake_case(&tool.name);
            let own = if own.is_empty() {
                "tool".to_string()
            } else {
                own
            };
            match &spec.namespace {
                Some(prefix) => naming::truncate_name(&format!("{prefix}_{own}")),
                None => naming::truncate_name(&own),
            }
        }
    };
    let input_schema = convert(rel, &tool.input_schema, Direction::Input)
        .map_err(|why| format!("its inputSchema ({pointer}/inputSchema) {why}"))?;
    let output_schema = match &tool.output_schema {
        Some(schema) => Some(Arc::new(
            convert(rel, schema, Direction::Output)
                .map_err(|why| format!("its outputSchema ({pointer}/outputSchema) {why}"))?,
        )),
        None => None,
    };
    let mut annotations = tool.annotations.clone();
    if let Some(overrides) = config.and_then(|c| c.annotations.as_ref()) {
        let hints = annotations.get_or_insert_with(Map::new);
        apply_annotations(hints, overrides);
    }
    let annotations = annotations.filter(|hints| !hints.is_empty());
    let policy_name = config
        .and_then(|c| c.visibility.as_ref())
        .or(spec.visibility.as_ref());
    let policy = policy_name
        .and_then(|name| spec.policies.get(name))
        .cloned();
    Ok(Draft {
        name,
        // The server's names are given names: unique on the server, kept
        // in the order it lists them when cleaning makes two alike.
        derived_name: false,
        description: config
            .and_then(|c| c.description.clone())
            .unwrap_or_else(|| tool.description.clone()),
        input_schema,
        published_input: None,
        output_schema,
        compaction: Default::default(),
        size_besides_name: 0,
        annotations,
        tags: config.map(|c| c.tags.clone()).unwrap_or_default(),
        search_terms: config.map(|c| c.search_terms.clone()).unwrap_or_default(),
        route: tool.name.clone(),
        pointer: pointer.to_string(),
        revision: None,
        policy,
        target: Target::Upstream(Arc::new(UpstreamTool {
            file: rel.clone(),
            name: tool.name.clone(),
        })),
        fixed: Map::new(),
    })
}

/// A server's JSON Schema through the document converter (JSON Schema
/// 2020-12, as OpenAPI 3.1 writes it): its own `$ref`s resolve inside it.
fn convert(rel: &Arc<str>, schema: &Value, direction: Direction) -> Result<Schema, String> {
    let file: Arc<str> = Arc::from(format!("{rel}#schema"));
    let files: BTreeMap<Arc<str>, Arc<Value>> =
        BTreeMap::from([(file.clone(), Arc::new(schema.clone()))]);
    let resolver = Resolver::new(&files);
    let mut converter = Converter::new(&resolver, file.clone(), Dialect::OpenApi31);
    let mut reached = Reached::new();
    let root = match converter.convert(&file, schema, direction, &mut reached)? {
        Value::Object(root) => root,
        _ => return Err("is not a schema object".to_string()),
    };
    let mut root = root;
    root.remove("$defs");
    root.remove("$schema");
    let dropped = converter.take_dropped_patterns();
    if let Some(first) = dropped.first() {
        return Err(format!(
            "has a {} '{}' no client can compile: {}",
            first.keyword, first.pattern, first.reason
        ));
    }
    converter.finish(root, reached, direction)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Catalog, Sources};
    use serde_json::json;
    use std::collections::BTreeMap;

    fn sources(
        file: &str,
        spec: &str,
        tools: Option<Vec<Value>>,
        problem: Option<&str>,
    ) -> Sources {
        let mut sources = Sources::from_files([(file.to_string(), spec.as_bytes().to_vec())], None);
        let listing = UpstreamListing::new(tools.map(Arc::new), problem.map(str::to_string));
        sources.set_listings(BTreeMap::from([(Arc::from(file), Arc::new(listing))]));
        sources
    }

    fn listed() -> Vec<Value> {
        vec![
            json!({
                "name": "create-ticket",
                "description": "Opens a support ticket.",
                "inputSchema": {
                    "type": "object",
                    "properties": {"title": {"type": "string"}, "owner": {"$ref": "#/$defs/person"}},
                    "required": ["title"],
                    "$defs": {"person": {"type": "object", "properties": {"email": {"type": "string", "format": "email"}}}}
                },
                "outputSchema": {"type": "object", "properties": {"id": {"type": "integer"}}},
                "annotations": {"destructiveHint": false}
            }),
            json!({"name": "delete_ticket", "description": "Deletes a ticket.", "inputSchema": {"type": "object"}}),
            json!({"name": "bad", "inputSchema": {"type": "object", "properties": {"x": {"$ref": "#/$defs/missing"}}}}),
            json!({"name": "get_ticket", "description": "Reads a ticket.", "inputSchema": {"type": "object"}}),
        ]
    }

    #[test]
    fn listed_tools_become_catalog_tools_with_their_curation() {
        let spec = "url: http://127.0.0.1:9/mcp\nnamespace: support\ntools:\n  delete_ticket: {hidden: true}\n  get_ticket: {name: read_ticket, tags: [tickets], description: Reads one ticket by id.}\n  gone: {tags: [x]}\n";
        let catalog = Catalog::build(&sources("support.mcp.yaml", spec, Some(listed()), None));
        let names: Vec<&str> = catalog.tools().iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["read_ticket", "support_create_ticket"]);
        let create = catalog.tool("support_create_ticket").unwrap();
        assert_eq!(
            create.target.upstream().map(|u| u.name.as_str()),
            Some("create-ticket")
        );
        let definition = create.definition();
        assert_eq!(definition["description"], "Opens a support ticket.");
        let input = &definition["inputSchema"];
        assert_eq!(input["required"], json!(["title"]));
        let owner_ref = input["properties"]["owner"]["$ref"].as_str().unwrap();
        let def_name = owner_ref.strip_prefix("#/$defs/").unwrap();
        assert_eq!(
            input["$defs"][def_name]["properties"]["email"]["format"],
            "email"
        );
        assert_eq!(
            definition["outputSchema"]["properties"]["id"]["type"],
            "integer"
        );
        assert_eq!(definition["annotations"]["destructiveHint"], false);
        let read = catalog.tool("read_ticket").unwrap();
        assert_eq!(read.description, "Reads one ticket by id.");
        assert_eq!(read.tags, ["tickets"]);
        let said: Vec<(&str, &str)> = catalog
            .diagnostics
            .iter()
            .map(|d| (d.code, d.pointer.as_str()))
            .collect();
        assert!(
            said.contains(&(codes::INVALID_OPERATION, "/tools/bad")),
            "{said:?}"
        );
        assert!(
            said.contains(&(codes::INVALID_CONFIGURATION, "/tools/gone")),
            "{said:?}"
        );
    }

    #[test]
    fn a_changed_listing_changes_that_tool_s_version_only_and_an_unchanged_one_reuses_the_unit() {
        let spec = "url: http://127.0.0.1:9/mcp\n";
        let first = Catalog::build(&sources("t.mcp.yaml", spec, Some(listed()), None));
        let same = sources("t.mcp.yaml", spec, Some(listed()), None);
        let again = Catalog::rebuild(&same, &BuildOptions::default(), &first);
        assert_eq!(again.documents_reused(&first), 1);
        assert_eq!(again.fingerprint(), first.fingerprint());
        let mut changed = listed();
        changed[3]["description"] = json!("Reads a ticket, with its comments.");
        let next = sources("t.mcp.yaml", spec, Some(changed), None);
        let rebuilt = Catalog::rebuild(&next, &BuildOptions::default(), &first);
        assert_ne!(rebuilt.fingerprint(), first.fingerprint());
        let version = |catalog: &Catalog, name: &str| catalog.tool(name).unwrap().version.clone();
        assert_ne!(
            version(&rebuilt, "get_ticket"),
            version(&first, "get_ticket")
        );
        assert_eq!(
            version(&rebuilt, "create_ticket"),
            version(&first, "create_ticket")
        );
    }

    #[test]
    fn a_server_down_keeps_its_last_tools_and_says_so() {
        let spec = "command: ./server\n";
        let down = Catalog::build(&sources(
            "t.mcp.yaml",
            spec,
            Some(listed()),
            Some("connection refused"),
        ));
        assert_eq!(down.tools().len(), 3);
        let warning = down
            .diagnostics
            .iter()
            .find(|d| d.code == codes::UPSTREAM_UNAVAILABLE)
            .expect("said");
        assert!(
            warning.message.contains("connection refused"),
            "{}",
            warning.message
        );
        assert!(
            warning.message.contains("last good listing"),
            "{}",
            warning.message
        );
        let never = Catalog::build(&sources("t.mcp.yaml", spec, None, Some("no such command")));
        assert!(never.tools().is_empty());
    }

    #[test]
    fn a_tool_the_client_cannot_call_is_said_left_out_with_why() {
        let mut sources = Sources::from_files(
            [("t.mcp.yaml".to_string(), b"url: http://a/mcp\n".to_vec())],
            None,
        );
        let listing = UpstreamListing::new(Some(Arc::new(listed())), None).with_refused(vec![(
            "weird".to_string(),
            "x-mcp-header on an array".to_string(),
        )]);
        sources.set_listings(BTreeMap::from([(
            Arc::from("t.mcp.yaml"),
            Arc::new(listing),
        )]));
        let catalog = Catalog::build(&sources);
        assert!(catalog.tool("weird").is_none());
        assert!(
            catalog
                .diagnostics
                .iter()
                .any(|d| d.code == codes::UPSTREAM_TOOL_LEFT_OUT
                    && d.message.contains("'weird'")
                    && d.message.contains("x-mcp-header on an array")),
            "{:?}",
            catalog.diagnostics
        );
    }

    /// A tool whose inputSchema nests `depth` levels of `items` below its
    /// one property (built in memory: no parser's own limit stands before
    /// the converter's).
    fn nested_tool(name: &str, depth: usize) -> Value {
        let mut node = json!({"type": "string"});
        for _ in 0..depth {
            node = json!({"type": "array", "items": node});
        }
        json!({"name": name, "inputSchema": {"type": "object", "properties": {"deep": node}}})
    }

    #[test]
    fn schemas_nested_to_the_limit_build_on_a_default_thread_and_deeper_ones_are_refused() {
        // The test's own thread: 2 MiB of stack, in an unoptimised build
        // too (CI's). The whole build runs on it: conversion, compaction,
        // packing and the definition's size.
        // The input object, its `properties` and the property: three JSON
        // levels above the nested ones. The deepest served nests as deep
        // as JSON is read back; one more level is refused, and so is a
        // schema far deeper than the converter goes.
        let at_the_limit = crate::schema::MAX_JSON_DEPTH - 3;
        let tools = vec![
            nested_tool("at_the_limit", at_the_limit),
            nested_tool("beyond_the_limit", at_the_limit + 1),
            nested_tool("far_beyond", 4 * crate::schema::MAX_DEPTH),
        ];
        let catalog = Catalog::build(&sources(
            "t.mcp.yaml",
            "url: http://a/mcp\n",
            Some(tools),
            None,
        ));
        let served: Vec<&str> = catalog.tools().iter().map(|t| t.name.as_str()).collect();
        assert_eq!(served, ["at_the_limit"]);
        let refused: Vec<(&str, &str)> = catalog
            .diagnostics
            .iter()
            .filter(|d| d.code == "invalid_operation")
            .map(|d| (d.pointer.as_str(), d.message.as_str()))
            .collect();
        assert_eq!(refused.len(), 2, "{refused:?}");
        for (pointer, message) in refused {
            assert!(pointer.starts_with("/tools/"), "{pointer}");
            assert!(message.contains("nested too deeply"), "{message}");
        }
        let tool = catalog.tool("at_the_limit").unwrap();
        let mut schema = tool.definition()["inputSchema"]["properties"]["deep"].clone();
        let mut levels = 0;
        while let Some(items) = schema.get("items") {
            schema = items.clone();
            levels += 1;
        }
        assert_eq!(levels, at_the_limit, "served whole, not read back as {{}}");
    }

    #[test]
    fn namespaces_come_from_the_file_name_when_not_given() {
        let spec = UpstreamSpec::default();
        assert_eq!(namespace_of("servers/Git-Hub.MCP.yaml", &spec), "git_hub");
        assert_eq!(namespace_of("everything.mcp.json", &spec), "everything");
    }
}
