//! The last step of a build: final names, versions, one sorted catalog.
//!
//! Names must be unique across the whole catalog and deterministic:
//! collisions inside a document get `_2`, `_3` in document order; names
//! shared by several documents get `{namespace}_` in front. Only then can
//! versions be computed, since the name is part of what an agent reads.

use super::diagnostics::{Diagnostic, codes};
use super::draft::{DocumentBuild, Draft, string_chars, summary};
use super::fingerprint::{CanonicalSink, VersionHasher, write_canonical_to, write_string};
use super::naming;
use super::{BuildOptions, Catalog, Tool};
use serde_json::{Map, Value};
use std::collections::{HashMap, HashSet};

pub fn assemble(
    mut documents: Vec<DocumentBuild>,
    mut diagnostics: Vec<Diagnostic>,
    options: &BuildOptions,
) -> Catalog {
    for document in &mut documents {
        dedupe_within(document);
    }
    prefix_shared_names(&mut documents);
    dedupe_across(&mut documents);
    let summaries = documents.iter().map(summary).collect();
    let mut tools = Vec::new();
    for document in documents {
        diagnostics.extend(document.diagnostics);
        for draft in document.drafts {
            let pointer = draft.pointer.clone();
            let tool = finish(draft, document.file.clone());
            if let Some(warning) = too_large(&tool, &pointer, options.response_budget) {
                diagnostics.push(warning);
            }
            tools.push(tool);
        }
    }
    Catalog::from_parts(tools, summaries, diagnostics)
}

fn rename(
    document_file: &str,
    draft: &mut Draft,
    new_name: String,
    why: &str,
    diagnostics: &mut Vec<Diagnostic>,
) {
    diagnostics.push(Diagnostic::warning(
        codes::NAME_COLLISION,
        document_file,
        &draft.pointer,
        format!(
            "tool name '{}' {why}; published as '{new_name}'",
            draft.name
        ),
    ));
    draft.name = new_name;
}

/// Inside one document, clashing tools get `_2`, `_3`, … in route order
/// (path, then method in OpenAPI's order): the order paths are written in,
/// for documents that list them sorted, and never dependent on key order,
/// so reformatting a document cannot make a name call another endpoint.
fn dedupe_within(document: &mut DocumentBuild) {
    let mut used: HashSet<String> = HashSet::new();
    let mut order: Vec<usize> = (0..document.drafts.len()).collect();
    order.sort_by_key(|&i| route_order(&document.drafts[i].route, i));
    for i in order {
        let name = document.drafts[i].name.clone();
        if used.insert(name.clone()) {
            continue;
        }
        let mut n = 2;
        let mut candidate = naming::with_suffix(&name, n);
        while used.contains(&candidate) || document.drafts.iter().any(|d| d.name == candidate) {
            n += 1;
            candidate = naming::with_suffix(&name, n);
        }
        used.insert(candidate.clone());
        let file = document.file.clone();
        rename(
            &file,
            &mut document.drafts[i],
            candidate,
            "is used earlier in this document",
            &mut document.diagnostics,
        );
    }
}

/// Sort key of a route: path, method rank, then position (variants of one
/// operation keep their sidecar order).
fn route_order(route: &str, position: usize) -> (String, usize, usize) {
    const METHODS: [&str; 8] = [
        "GET", "PUT", "POST", "DELETE", "OPTIONS", "HEAD", "PATCH", "TRACE",
    ];
    let (method, path) = route.split_once(' ').unwrap_or(("", route));
    let rank = METHODS
        .iter()
        .position(|m| *m == method)
        .unwrap_or(METHODS.len());
    (path.to_string(), rank, position)
}

/// Names that several documents publish get each document's namespace.
fn prefix_shared_names(documents: &mut [DocumentBuild]) {
    let mut owners: HashMap<String, usize> = HashMap::new();
    for document in documents.iter() {
        let names: HashSet<&str> = document.drafts.iter().map(|d| d.name.as_str()).collect();
        for name in names {
            *owners.entry(name.to_string()).or_default() += 1;
        }
    }
    for document in documents.iter_mut() {
        let prefix = document.namespace.clone();
        let file = document.file.clone();
        for draft in document.drafts.iter_mut() {
            if owners.get(&draft.name).copied().unwrap_or(0) > 1 {
                let new_name = naming::truncate_name(&format!("{prefix}_{}", draft.name));
                rename(
                    &file,
                    draft,
                    new_name,
                    "is also used by another document",
                    &mut document.diagnostics,
                );
            }
        }
    }
}

/// Whatever still clashes after prefixing (a document whose own tool is
/// already called `ns_x`) gets a numeric suffix, first come first served
/// in document path order.
fn dedupe_across(documents: &mut [DocumentBuild]) {
    let mut used: HashSet<String> = HashSet::new();
    let all: HashSet<String> = documents
        .iter()
        .flat_map(|d| d.drafts.iter().map(|t| t.name.clone()))
        .collect();
    for document in documents.iter_mut() {
        let file = document.file.clone();
        for draft in document.drafts.iter_mut() {
            if used.insert(draft.name.clone()) {
                continue;
            }
            let mut n = 2;
            let mut candidate = naming::with_suffix(&draft.name, n);
            while used.contains(&candidate) || all.contains(&candidate) {
                n += 1;
                candidate = naming::with_suffix(&draft.name, n);
            }
            used.insert(candidate.clone());
            rename(
                &file,
                draft,
                candidate,
                "is still used by another document",
                &mut document.diagnostics,
            );
        }
    }
}

/// A warning for a tool whose definition load_tool would refuse even
/// compacted: the budget is a promise, and the owner hears when it breaks.
fn too_large(tool: &Tool, pointer: &str, budget: usize) -> Option<Diagnostic> {
    let size = tool.definition_size;
    (!tool.loads_within(budget)).then(|| {
        Diagnostic::warning(
            codes::DEFINITION_TOO_LARGE,
            &tool.document,
            pointer,
            format!(
                "the definition of '{}' is {size} characters even with its optional parts compacted, over the response budget of {budget}: load_tool will refuse it until response_budget is raised",
                tool.name
            ),
        )
    })
}

fn finish(draft: Draft, document: std::sync::Arc<str>) -> Tool {
    let version = version_of(&draft);
    let definition_size = draft.size_besides_name + string_chars(&draft.name);
    Tool {
        name: draft.name,
        description: draft.description,
        input_schema: draft.input_schema,
        published_input: draft.published_input,
        output_schema: draft.output_schema,
        compaction: draft.compaction,
        definition_size,
        annotations: draft.annotations,
        version,
        tags: draft.tags,
        search_terms: draft.search_terms,
        route: draft.route,
        document,
        revision: draft.revision,
        policy: draft.policy,
        operation: draft.operation,
        fixed: draft.fixed,
    }
}

/// SHA-256 over the canonical JSON of `{annotations?, description,
/// inputSchema, inputValidation?, name, outputSchema?, revision?}` (keys
/// already in sorted order), streamed so large schemas are never rendered
/// whole. `inputSchema` is the published one; `inputValidation`, the full
/// schema calls are checked against, is there only when the published one
/// was compacted, so a change to an elided part still changes the version.
fn version_of(draft: &Draft) -> String {
    let mut hasher = VersionHasher::default();
    let sink: &mut dyn CanonicalSink = &mut hasher;
    sink.push("{");
    if let Some(annotations) = &draft.annotations {
        sink.push("\"annotations\":");
        write_canonical_to(&Value::Object(annotations.clone()), sink);
        sink.push(",");
    }
    sink.push("\"description\":");
    write_string(&draft.description, sink);
    sink.push(",\"inputSchema\":");
    match &draft.published_input {
        Some(published) => {
            published.write_canonical(sink);
            sink.push(",\"inputValidation\":");
            draft.input_schema.write_canonical(sink);
        }
        None => draft.input_schema.write_canonical(sink),
    }
    sink.push(",\"name\":");
    write_string(&draft.name, sink);
    if let Some(output) = &draft.output_schema {
        sink.push(",\"outputSchema\":");
        output.write_canonical(sink);
    }
    if let Some(revision) = draft.revision.and_then(|r| r.to_value()) {
        sink.push(",\"revision\":");
        write_canonical_to(&revision, sink);
    }
    sink.push("}");
    hasher.finish()
}

/// The version object itself, for tests that recompute a version.
pub fn version_source(tool: &Tool) -> Value {
    let mut out = Map::new();
    if let Some(Value::Object(definition)) = Some(tool.definition()) {
        for (key, value) in definition {
            if key != "version" {
                out.insert(key, value);
            }
        }
    }
    if tool.published_input.is_some() {
        out.insert("inputValidation".to_string(), tool.input_schema.to_value());
    }
    if let Some(revision) = tool.revision.and_then(|r| r.to_value()) {
        out.insert("revision".to_string(), revision);
    }
    Value::Object(out)
}
