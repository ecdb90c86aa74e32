//! OpenAPI 3.0/3.1 and Swagger 2.0 documents become tool drafts.
//!
//! Walks each document's paths in document order, merges path-level and
//! operation-level parameters, and assembles per operation the pieces the
//! other modules compute (input, output, annotations, revision, curation).
//! A problem in one operation leaves that operation out with a diagnostic;
//! the rest of the document still loads.

use super::compact::Compactor;
use super::diagnostics::{Diagnostic, codes, pointer};
use super::draft::{DocumentBuild, Draft, apply_annotations, extend_unique};
use super::ecma_pattern;
use super::input::InputBuilder;
use super::output::output_schema;
use super::refs::Resolver;
use super::revision::{self, Revision};
use super::schema::{Converter, Dialect};
use super::sidecar::{BackendConfig, Policy, Sidecar, ToolConfig};
use super::source::{Parsed, Sources};
use super::{BuildOptions, Operation, Target, naming};
use serde_json::{Map, Value, json};
use sezzlee_json::strings;
use std::collections::BTreeMap;
use std::sync::Arc;

const METHODS: [&str; 8] = [
    "get", "put", "post", "delete", "options", "head", "patch", "trace",
];

/// The document's dialect; `None` for files that are not API documents
/// (shared schema files other documents `$ref`).
///
/// The version is a string (`"3.0.3"`, `"2.0"`). Hand-written YAML often
/// says `swagger: 2.0` or `openapi: 3.0`, which YAML reads as numbers:
/// a number naming a supported version is accepted with a
/// `version_as_number` warning saying to quote it; any other value is
/// refused, and the message says what was found and what is wanted.
pub(crate) fn dialect_of(
    rel: &str,
    root: &Value,
    diagnostics: &mut Vec<Diagnostic>,
) -> Option<Dialect> {
    if let Some(version) = root.get("openapi") {
        let (text, number) = version_text(version);
        let dialect = if text.starts_with("3.0") {
            Some(Dialect::OpenApi30)
        } else if text.starts_with("3.1") {
            Some(Dialect::OpenApi31)
        } else {
            None
        };
        return match (dialect, number) {
            (Some(dialect), false) => Some(dialect),
            (Some(dialect), true) => {
                diagnostics.push(Diagnostic::warning(
                    codes::VERSION_AS_NUMBER,
                    rel,
                    "/openapi",
                    format!(
                        "the OpenAPI version is written as the number {text}, not a string; \
                         read as OpenAPI {text}.x: quote it, with its patch number \
                         (openapi: \"{text}.0\")"
                    ),
                ));
                Some(dialect)
            }
            (None, _) => {
                diagnostics.push(Diagnostic::error(
                    codes::UNSUPPORTED_DOCUMENT,
                    rel,
                    "/openapi",
                    format!(
                        "OpenAPI version {} is not supported: write a string naming 3.0.x or \
                         3.1.x (openapi: \"3.0.3\", \"3.1.0\"), or swagger: \"2.0\" for \
                         Swagger 2.0",
                        shown(version)
                    ),
                ));
                None
            }
        };
    }
    if let Some(version) = root.get("swagger") {
        let (text, number) = version_text(version);
        if text == "2.0" {
            if number {
                diagnostics.push(Diagnostic::warning(
                    codes::VERSION_AS_NUMBER,
                    rel,
                    "/swagger",
                    "the Swagger version is written as the number 2.0, not a string; read \
                     as Swagger 2.0: quote it (swagger: \"2.0\")",
                ));
            }
            return Some(Dialect::Swagger2);
        }
        diagnostics.push(Diagnostic::error(
            codes::UNSUPPORTED_DOCUMENT,
            rel,
            "/swagger",
            format!(
                "Swagger version {} is not supported: only Swagger 2.0 is, written as the \
                 string \"2.0\" (or an OpenAPI 3.0.x or 3.1.x document)",
                shown(version)
            ),
        ));
    }
    None
}

/// A version's text, and whether it was written as a number (`2.0`,
/// `3.1` read by YAML as floats; `3` as an integer). A number keeps its
/// one decimal (`2.0`, not `2`).
fn version_text(version: &Value) -> (String, bool) {
    match version {
        Value::String(text) => (text.clone(), false),
        Value::Number(number) => {
            let text = match number.as_f64() {
                Some(value) if number.is_f64() && value.fract() == 0.0 => format!("{value:.1}"),
                _ => number.to_string(),
            };
            (text, true)
        }
        _ => (String::new(), false),
    }
}

/// A version value as a message shows it: a string in quotes, anything
/// else as JSON with its kind.
fn shown(version: &Value) -> String {
    match version {
        Value::String(text) => format!("\"{text}\""),
        Value::Number(_) => format!("{version} (a number)"),
        other => format!("{other} (not a string)"),
    }
}

pub(crate) fn sidecar_for(
    sources: &Sources,
    rel: &str,
    diagnostics: &mut Vec<Diagnostic>,
) -> Option<Arc<Sidecar>> {
    let paths = sources.sidecar_paths_for(rel);
    if paths.len() > 1 {
        diagnostics.push(Diagnostic::warning(
            codes::INVALID_CONFIGURATION,
            &paths[1],
            "",
            format!(
                "'{rel}' has more than one sidecar; only '{}' is used",
                paths[0]
            ),
        ));
    }
    let file = sources.files.get(paths.first()?)?;
    match &file.serving {
        Some(Parsed::Sidecar(sidecar)) => Some(sidecar.clone()),
        _ => None,
    }
}

/// The namespace: the sidecar's, else the file stem in `[a-z0-9_]`.
fn namespace_of(rel: &str, sidecar: Option<&Sidecar>) -> String {
    if let Some(namespace) = sidecar.and_then(|s| s.namespace.clone()) {
        return namespace;
    }
    let name = rel.rsplit('/').next().unwrap_or(rel);
    let stem = name.rsplit_once('.').map_or(name, |(stem, _)| stem);
    stem.to_lowercase()
        .chars()
        .map(|c| {
            if c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

struct DocumentContext<'a> {
    file: Arc<str>,
    options: &'a BuildOptions,
    root: &'a Value,
    dialect: Dialect,
    sidecar: Option<&'a Sidecar>,
    backend: Arc<BackendConfig>,
    security_schemes: Arc<Map<String, Value>>,
    catalog_revision: Option<u64>,
}

pub(crate) fn build_document(
    resolver: &Resolver,
    file: Arc<str>,
    root: &Value,
    dialect: Dialect,
    sidecar: Option<&Sidecar>,
    options: &BuildOptions,
) -> DocumentBuild {
    let mut diagnostics = Vec::new();
    let namespace = namespace_of(&file, sidecar);
    let catalog_revision = revision::level(
        sidecar.and_then(|s| s.revision.catalog),
        root,
        &file,
        "",
        &mut diagnostics,
    );
    let schemes_at = if dialect == Dialect::Swagger2 {
        root.get("securityDefinitions")
    } else {
        root.pointer("/components/securitySchemes")
    };
    let context = DocumentContext {
        file: file.clone(),
        options,
        root,
        dialect,
        sidecar,
        backend: Arc::new(sidecar.map(|s| s.backend.clone()).unwrap_or_default()),
        security_schemes: Arc::new(
            schemes_at
                .and_then(Value::as_object)
                .cloned()
                .unwrap_or_default(),
        ),
        catalog_revision,
    };
    let mut converter = Converter::new(resolver, file.clone(), dialect);
    let mut compactor = Compactor::default();
    let mut drafts = Vec::new();
    let mut operations = 0;
    let mut matched_keys: Vec<String> = Vec::new();
    let paths = root.get("paths").and_then(Value::as_object);
    for (path, item) in paths.into_iter().flatten() {
        let item_pointer = pointer(&["paths", path]);
        let (item_file, item) = match resolver.follow(&file, item) {
            Ok(found) => found,
            Err(message) => {
                diagnostics.push(Diagnostic::error(
                    codes::UNRESOLVED_REF,
                    &file,
                    &item_pointer,
                    message,
                ));
                continue;
            }
        };
        let container_revision = revision::level(
            sidecar.and_then(|s| s.revision.paths.get(path.as_str()).copied()),
            item,
            &file,
            &item_pointer,
            &mut diagnostics,
        );
        for (method, operation) in item.as_object().into_iter().flatten() {
            if !METHODS.contains(&method.as_str()) {
                continue;
            }
            operations += 1;
            let method_upper = method.to_ascii_uppercase();
            matched_keys.push(format!("{method_upper} {path}"));
            let at = OperationAt {
                path,
                method: &method_upper,
                pointer: pointer(&["paths", path, method]),
                item,
                item_file: &item_file,
                container_revision,
            };
            match build_operation(&context, &mut converter, &at, operation) {
                Ok((mut built, notes)) => {
                    let depth = output_depth(&context, &at);
                    for draft in &mut built {
                        publish_within_budget(&mut compactor, draft, depth, &context);
                    }
                    drafts.append(&mut built);
                    diagnostics.extend(notes);
                }
                Err(diagnostic) => diagnostics.push(diagnostic),
            }
        }
    }
    if let Some(sidecar) = sidecar {
        unmatched_sidecar_keys(&file, sidecar, paths, &matched_keys, &mut diagnostics);
    }
    ecma_pattern::report_dropped(
        resolver,
        converter.take_dropped_patterns(),
        &mut diagnostics,
    );
    let title = (root.pointer("/info/title"))
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    DocumentBuild {
        file,
        namespace,
        title,
        operations,
        drafts,
        diagnostics,
    }
}

/// Object levels of the operation's outputSchema to publish: the
/// operation's sidecar setting, else the document's, else the build's.
fn output_depth(doc: &DocumentContext, at: &OperationAt) -> u32 {
    let sidecar = doc.sidecar;
    sidecar
        .and_then(|s| s.tool(at.method, at.path))
        .and_then(|config| config.output_depth)
        .or_else(|| sidecar.and_then(|s| s.output_depth))
        .map_or(doc.options.output_depth, |depth| depth.0)
}

fn publish_within_budget(
    compactor: &mut Compactor,
    draft: &mut Draft,
    depth: u32,
    doc: &DocumentContext,
) {
    super::draft::fit_within_budget(compactor, draft, depth, doc.options.response_budget);
}

/// Sidecar keys that name no operation do nothing: say so.
fn unmatched_sidecar_keys(
    file: &str,
    sidecar: &Sidecar,
    paths: Option<&Map<String, Value>>,
    matched: &[String],
    diagnostics: &mut Vec<Diagnostic>,
) {
    let matches = |key: &str| {
        super::sidecar::parse_operation_key(key).is_some_and(|(m, p)| {
            matched
                .iter()
                .any(|k| k == &format!("{} {p}", m.to_ascii_uppercase()))
        })
    };
    let sidecar_file = sidecar.file_for(file);
    for key in sidecar.tools.keys().filter(|k| !matches(k)) {
        diagnostics.push(Diagnostic::warning(
            codes::INVALID_CONFIGURATION,
            &sidecar_file,
            &pointer(&["tools", key]),
            format!("'{key}' names no operation of the document; it has no effect"),
        ));
    }
    for key in sidecar.revision.operations.keys().filter(|k| !matches(k)) {
        diagnostics.push(Diagnostic::warning(
            codes::INVALID_CONFIGURATION,
            &sidecar_file,
            &pointer(&["revision", "operations", key]),
            format!("'{key}' names no operation of the document; it has no effect"),
        ));
    }
    for key in sidecar.revision.paths.keys() {
        if !paths.is_some_and(|p| p.contains_key(key)) {
            diagnostics.push(Diagnostic::warning(
                codes::INVALID_CONFIGURATION,
                &sidecar_file,
                &pointer(&["revision", "paths", key]),
                format!("'{key}' names no path of the document; it has no effect"),
            ));
        }
    }
}

struct OperationAt<'a> {
    path: &'a str,
    method: &'a str,
    pointer: String,
    item: &'a Value,
    item_file: &'a Arc<str>,
    container_revision: Option<u64>,
}

fn build_operation(
    doc: &DocumentContext,
    converter: &mut Converter,
    at: &OperationAt,
    operation: &Value,
) -> Result<(Vec<Draft>, Vec<Diagnostic>), Diagnostic> {
    let file = &doc.file;
    let unresolved = |message: String| {
        Diagnostic::error(
            codes::UNRESOLVED_REF,
            file,
            &at.pointer,
            format!("operation left out: {message}"),
        )
    };
    let config = doc.sidecar.and_then(|s| s.tool(at.method, at.path));
    let mut notes = Vec::new();

    let input = {
        let mut builder = InputBuilder::new(converter, file.clone(), at.pointer.clone());
        for (param_file, param) in merged_parameters(
            builder.converter.resolver(),
            at.item_file,
            at.item,
            operation,
        )
        .map_err(unresolved)?
        {
            builder.parameter(&param_file, param).map_err(unresolved)?;
        }
        if doc.dialect == Dialect::Swagger2 {
            let consumes = media_list(operation, doc.root, "consumes");
            builder.set_swagger_media_type(&consumes);
            builder.prefer_form_media_type(&consumes);
        } else if let Some(body) = operation.get("requestBody") {
            let (body_file, body) = builder
                .converter
                .resolver()
                .follow(at.item_file, body)
                .map_err(unresolved)?;
            builder.request_body(&body_file, body).map_err(unresolved)?;
        }
        builder.undeclared_path_parameters(at.path);
        let (input, input_notes) = builder.finish().map_err(unresolved)?;
        notes.extend(input_notes);
        input
    };
    let produces = media_list(operation, doc.root, "produces");
    let output = output_schema(converter, at.item_file, operation, &produces)
        .map_err(unresolved)?
        .map(Arc::new);

    let revision = Revision {
        catalog: doc.catalog_revision,
        container: at.container_revision,
        operation: revision::level(
            doc.sidecar
                .and_then(|s| s.operation_revision(at.method, at.path)),
            operation,
            file,
            &at.pointer,
            &mut notes,
        ),
    };
    let policy = policy_for(doc, config, operation, &at.pointer)?;
    let route = format!("{} {}", at.method, at.path);
    let description = config
        .and_then(|c| c.description.clone())
        .unwrap_or_else(|| describe(operation, &route));
    let mut tags = strings(operation.get("tags"));
    extend_unique(&mut tags, strings(operation.get("x-sezzlee-tags")));
    let mut search_terms = strings(operation.get("x-sezzlee-search-terms"));
    if let Some(config) = config {
        extend_unique(&mut tags, config.tags.clone());
        extend_unique(&mut search_terms, config.search_terms.clone());
    }
    let annotations = annotations_for(
        at.method,
        operation,
        config.and_then(|c| c.annotations.as_ref()),
    );
    let (name, derived_name) = name_for(
        file,
        &at.pointer,
        at.method,
        at.path,
        operation,
        config,
        &mut notes,
    );
    let operation_data = Arc::new(Operation {
        method: at.method.to_string(),
        path: at.path.to_string(),
        base_url: doc
            .backend
            .base_url
            .clone()
            .or_else(|| server_url(doc, at.item, operation)),
        arguments: input.arguments,
        body: input.body,
        backend: doc.backend.clone(),
        security: security_for(operation, doc.root),
        security_schemes: doc.security_schemes.clone(),
        quota: config.and_then(|c| c.quota.clone()),
    });
    let base = Draft {
        name,
        derived_name,
        description,
        input_schema: input.schema,
        published_input: None,
        output_schema: output,
        compaction: Default::default(),
        size_besides_name: 0,
        annotations,
        tags,
        search_terms,
        route,
        pointer: at.pointer.clone(),
        revision: revision.to_value().map(|_| revision),
        policy,
        target: Target::Http(operation_data),
        fixed: Map::new(),
    };
    let mut drafts = Vec::new();
    if let Some(config) = config {
        for (i, variant) in config.variants.iter().enumerate() {
            match super::variants::variant(doc.sidecar, &base, variant) {
                Ok(draft) => drafts.push(draft),
                Err(message) => notes.push(Diagnostic::error(
                    codes::INVALID_CONFIGURATION,
                    &doc.sidecar.map_or_else(
                        || format!("{file} (sidecar)"),
                        |sidecar| sidecar.file_for(file),
                    ),
                    &format!("{}/variants/{i}", pointer(&["tools", &base.route])),
                    message,
                )),
            }
        }
    }
    if !config.is_some_and(|c| c.hidden) {
        drafts.insert(0, base);
    }
    Ok((drafts, notes))
}

/// Path-item parameters overridden by operation parameters of the same
/// name and location, each resolved. The operation lives in the path
/// item, so its references are relative to the path item's file (the
/// document's own, unless the path item is a `$ref` to another file).
fn merged_parameters<'a: 'n, 'n>(
    resolver: &Resolver<'a>,
    item_file: &Arc<str>,
    item: &'n Value,
    operation: &'n Value,
) -> Result<Vec<(Arc<str>, &'n Value)>, String> {
    let mut merged: Vec<(Arc<str>, &'n Value)> = Vec::new();
    let sources = [(item_file, item), (item_file, operation)];
    for (source_file, node) in sources {
        for param in node
            .get("parameters")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let (param_file, param) = resolver.follow(source_file, param)?;
            let key = |p: &Value| (p.get("name").cloned(), p.get("in").cloned());
            match merged
                .iter_mut()
                .find(|(_, existing)| key(existing) == key(param))
            {
                Some(slot) => *slot = (param_file, param),
                None => merged.push((param_file, param)),
            }
        }
    }
    Ok(merged)
}

/// Summary and description joined, without repeating one in the other.
fn describe(operation: &Value, route: &str) -> String {
    let summary = operation
        .get("summary")
        .and_then(Value::as_str)
        .unwrap_or("")
        .trim();
    let description = operation
        .get("description")
        .and_then(Value::as_str)
        .unwrap_or("")
        .trim();
    match (summary.is_empty(), description.is_empty()) {
        (true, true) => route.to_string(),
        (false, true) => summary.to_string(),
        (true, false) => description.to_string(),
        (false, false) if description.starts_with(summary) => description.to_string(),
        (false, false) if summary.starts_with(description) => summary.to_string(),
        (false, false) => format!("{summary}\n\n{description}"),
    }
}

/// The tool's name, and whether it was derived from the route (no sidecar
/// name, `x-sezzlee-name` or `operationId`), which yields to a given one
/// when two collide.
fn name_for(
    file: &str,
    at: &str,
    method: &str,
    path: &str,
    operation: &Value,
    config: Option<&ToolConfig>,
    notes: &mut Vec<Diagnostic>,
) -> (String, bool) {
    let explicit = [
        (config.and_then(|c| c.name.as_deref()), "the sidecar name"),
        (
            operation.get("x-sezzlee-name").and_then(Value::as_str),
            "x-sezzlee-name",
        ),
    ];
    for (name, source) in explicit {
        if let Some(name) = name {
            if naming::is_valid_name(name) {
                return (name.to_string(), false);
            }
            notes.push(Diagnostic::warning(
                codes::INVALID_CONFIGURATION,
                file,
                at,
                format!("{source} '{name}' is not a valid tool name ([a-z0-9_], 1-128 characters); a derived name is used"),
            ));
        }
    }
    let from_id = operation
        .get("operationId")
        .and_then(Value::as_str)
        .map(naming::snake_case)
        .unwrap_or_default();
    if from_id.is_empty() {
        (naming::from_route(method, path), true)
    } else {
        (from_id, false)
    }
}

/// The MCP hints that apply to the method, then explicit settings from
/// `x-sezzlee-annotations` and the sidecar (a `false` removes a hint).
pub fn annotations_for(
    method: &str,
    operation: &Value,
    configured: Option<&Map<String, Value>>,
) -> Option<Map<String, Value>> {
    let mut hints = Map::new();
    let defaults: &[&str] = match method {
        "GET" | "HEAD" | "OPTIONS" => &["readOnlyHint", "idempotentHint"],
        "PUT" => &["idempotentHint"],
        "DELETE" => &["destructiveHint", "idempotentHint"],
        _ => &[],
    };
    for hint in defaults {
        hints.insert(hint.to_string(), json!(true));
    }
    let declared = operation
        .get("x-sezzlee-annotations")
        .and_then(Value::as_object);
    for overrides in [declared, configured].into_iter().flatten() {
        apply_annotations(&mut hints, overrides);
    }
    (!hints.is_empty()).then_some(hints)
}

fn policy_for(
    doc: &DocumentContext,
    config: Option<&ToolConfig>,
    operation: &Value,
    at: &str,
) -> Result<Option<Policy>, Diagnostic> {
    let name = config
        .and_then(|c| c.visibility.clone())
        .or_else(|| {
            operation
                .get("x-sezzlee-visibility")
                .and_then(Value::as_str)
                .map(str::to_string)
        })
        .or_else(|| doc.sidecar.and_then(|s| s.visibility.clone()));
    let Some(name) = name else { return Ok(None) };
    // Fail closed: a tool whose policy is unknown is not published.
    let message = match doc.sidecar {
        Some(sidecar) => match sidecar.policies.get(&name) {
            Some(policy) => return Ok(Some(policy.clone())),
            None => format!(
                "visibility policy '{name}' is not defined in the policies of {}; the operation is left out",
                sidecar.file_for(&doc.file)
            ),
        },
        // No sidecar in effect: none beside the document, or one that was
        // refused (its own error says why): the policy cannot be looked up.
        None => format!(
            "visibility policy '{name}' needs the document's sidecar, and none is in effect (a refused sidecar has an error of its own); the operation is left out"
        ),
    };
    Err(Diagnostic::error(
        codes::INVALID_CONFIGURATION,
        &doc.file,
        at,
        message,
    ))
}

fn security_for(operation: &Value, root: &Value) -> Option<Vec<BTreeMap<String, Vec<String>>>> {
    let declared = operation.get("security").or_else(|| root.get("security"))?;
    let requirements = declared.as_array()?;
    Some(
        requirements
            .iter()
            .filter_map(Value::as_object)
            .map(|requirement| {
                requirement
                    .iter()
                    .map(|(scheme, scopes)| (scheme.clone(), strings(Some(scopes))))
                    .collect()
            })
            .collect(),
    )
}

/// The base URL: operation, path item or document `servers` (variables at
/// their defaults); Swagger 2.0 `schemes`/`host`/`basePath`.
fn server_url(doc: &DocumentContext, item: &Value, operation: &Value) -> Option<String> {
    if doc.dialect == Dialect::Swagger2 {
        let base_path = doc
            .root
            .get("basePath")
            .and_then(Value::as_str)
            .unwrap_or("");
        let base_path = base_path.trim_end_matches('/');
        return match doc.root.get("host").and_then(Value::as_str) {
            Some(host) => {
                let schemes = strings(doc.root.get("schemes"));
                let scheme = if schemes.iter().any(|s| s == "https") || schemes.is_empty() {
                    "https"
                } else {
                    schemes[0].as_str()
                };
                Some(format!("{scheme}://{host}{base_path}"))
            }
            None if !base_path.is_empty() => Some(base_path.to_string()),
            None => None,
        };
    }
    let server = [operation, item, doc.root]
        .into_iter()
        .filter_map(|node| node.get("servers").and_then(Value::as_array))
        .find_map(|servers| servers.first())?;
    let mut url = server.get("url").and_then(Value::as_str)?.to_string();
    for (name, variable) in server
        .get("variables")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
    {
        if let Some(default) = variable.get("default").and_then(Value::as_str) {
            url = url.replace(&format!("{{{name}}}"), default);
        }
    }
    Some(url.trim_end_matches('/').to_string())
}

/// Swagger 2.0 `consumes`/`produces`: the operation's, else the document's.
fn media_list(operation: &Value, root: &Value, key: &str) -> Vec<String> {
    let own = strings(operation.get(key));
    if own.is_empty() {
        strings(root.get(key))
    } else {
        own
    }
}

#[cfg(test)]
mod tests {
    //! One test per rule of turning documents into drafts, on small inline
    //! documents; per dialect where OpenAPI 3.0, 3.1 and Swagger 2.0 differ.

    use super::*;
    use crate::Location;
    use crate::build::build_catalog;
    use crate::diagnostics::Severity;

    /// A document of `dialect` with `rest` (paths, servers, …) at its top.
    fn document(dialect: Dialect, rest: Value) -> Value {
        let mut doc = match dialect {
            Dialect::Swagger2 => json!({"swagger": "2.0"}),
            Dialect::OpenApi30 => json!({"openapi": "3.0.3"}),
            Dialect::OpenApi31 => json!({"openapi": "3.1.0"}),
        };
        doc["info"] = json!({"title": "t", "version": "1"});
        for (key, value) in rest.as_object().unwrap() {
            doc[key] = value.clone();
        }
        doc
    }

    /// Builds the first of `files` (the others are there to be `$ref`ed).
    fn build_files(files: &[(&str, Value)], sidecar: Option<Value>) -> DocumentBuild {
        let folder: BTreeMap<Arc<str>, Arc<Value>> = files
            .iter()
            .map(|(name, value)| (Arc::from(*name), Arc::new(value.clone())))
            .collect();
        let resolver = Resolver::new(&folder);
        let (name, root) = &files[0];
        let mut diagnostics = Vec::new();
        let dialect = dialect_of(name, root, &mut diagnostics).expect("an API document");
        let sidecar = sidecar.map(|value| Sidecar::from_value(&value).unwrap());
        build_document(
            &resolver,
            Arc::from(*name),
            root,
            dialect,
            sidecar.as_ref(),
            &BuildOptions::default(),
        )
    }

    /// Builds `api.json`, a document of `dialect` with `rest` at its top.
    fn build(dialect: Dialect, rest: Value) -> DocumentBuild {
        build_files(&[("api.json", document(dialect, rest))], None)
    }

    fn draft<'b>(build: &'b DocumentBuild, route: &str) -> &'b Draft {
        build
            .drafts
            .iter()
            .find(|draft| draft.route == route)
            .unwrap_or_else(|| {
                let routes: Vec<&str> = build.drafts.iter().map(|d| d.route.as_str()).collect();
                panic!("no draft for {route}; have {routes:?}")
            })
    }

    /// (member, wire name, location) of every argument, in order.
    fn arguments(draft: &Draft) -> Vec<(&str, &str, Location)> {
        draft
            .target
            .http()
            .unwrap()
            .arguments
            .iter()
            .map(|a| (a.member.as_str(), a.wire_name.as_str(), a.location))
            .collect()
    }

    /// (severity, code, pointer, message) of every diagnostic.
    fn notes(build: &DocumentBuild) -> Vec<(Severity, &str, &str, &str)> {
        build
            .diagnostics
            .iter()
            .map(|d| (d.severity, d.code, d.pointer.as_str(), d.message.as_str()))
            .collect()
    }

    fn base_url(draft: &Draft) -> Option<&str> {
        draft.target.http().unwrap().base_url.as_deref()
    }

    // ------------------------------------------------------------ dialects

    #[test]
    fn the_version_field_names_the_dialect() {
        let mut diagnostics = Vec::new();
        let mut dialect = |root: Value| dialect_of("a.json", &root, &mut diagnostics);
        assert_eq!(
            dialect(json!({"openapi": "3.0.0"})),
            Some(Dialect::OpenApi30)
        );
        assert_eq!(dialect(json!({"openapi": "3.0"})), Some(Dialect::OpenApi30));
        assert_eq!(
            dialect(json!({"openapi": "3.1.1"})),
            Some(Dialect::OpenApi31)
        );
        assert_eq!(dialect(json!({"swagger": "2.0"})), Some(Dialect::Swagger2));
        // No version at all: a shared file other documents `$ref`, silently.
        assert_eq!(dialect(json!({"Pet": {"type": "object"}})), None);
        assert!(diagnostics.is_empty());
    }

    #[test]
    fn unsupported_versions_are_errors_at_the_version_field() {
        let mut diagnostics = Vec::new();
        for root in [
            json!({"openapi": "4.0.0"}),
            json!({"openapi": "2.0"}),
            json!({"swagger": "1.2"}),
            json!({"openapi": 4.0}),
            json!({"swagger": 1.2}),
            json!({"swagger": true}),
        ] {
            assert_eq!(dialect_of("a.json", &root, &mut diagnostics), None);
        }
        let found: Vec<(&str, &str, &str)> = diagnostics
            .iter()
            .map(|d| (d.code, d.pointer.as_str(), d.message.as_str()))
            .collect();
        let openapi = |shown: &str| {
            format!(
                "OpenAPI version {shown} is not supported: write a string naming 3.0.x or 3.1.x \
                 (openapi: \"3.0.3\", \"3.1.0\"), or swagger: \"2.0\" for Swagger 2.0"
            )
        };
        let swagger = |shown: &str| {
            format!(
                "Swagger version {shown} is not supported: only Swagger 2.0 is, written as the \
                 string \"2.0\" (or an OpenAPI 3.0.x or 3.1.x document)"
            )
        };
        let expected = [
            ("unsupported_document", "/openapi", openapi("\"4.0.0\"")),
            ("unsupported_document", "/openapi", openapi("\"2.0\"")),
            ("unsupported_document", "/swagger", swagger("\"1.2\"")),
            (
                "unsupported_document",
                "/openapi",
                openapi("4.0 (a number)"),
            ),
            (
                "unsupported_document",
                "/swagger",
                swagger("1.2 (a number)"),
            ),
            (
                "unsupported_document",
                "/swagger",
                swagger("true (not a string)"),
            ),
        ];
        let expected: Vec<(&str, &str, &str)> = expected
            .iter()
            .map(|(c, p, m)| (*c, *p, m.as_str()))
            .collect();
        assert_eq!(found, expected);
    }

    #[test]
    fn a_supported_version_written_as_a_number_is_read_with_a_warning_to_quote_it() {
        // Unquoted in YAML, `swagger: 2.0` and `openapi: 3.0` are numbers,
        // not the strings the specifications require; hand-written files
        // often say so. The message never contradicts itself.
        let mut diagnostics = Vec::new();
        let yaml = |text: &str| -> Value { serde_yaml_ng::from_str(text).expect("YAML") };
        assert_eq!(
            dialect_of("a.yaml", &yaml("swagger: 2.0"), &mut diagnostics),
            Some(Dialect::Swagger2)
        );
        assert_eq!(
            dialect_of("a.yaml", &yaml("openapi: 3.0"), &mut diagnostics),
            Some(Dialect::OpenApi30)
        );
        assert_eq!(
            dialect_of("a.yaml", &yaml("openapi: 3.1"), &mut diagnostics),
            Some(Dialect::OpenApi31)
        );
        let found: Vec<(&str, Severity, &str, &str)> = diagnostics
            .iter()
            .map(|d| (d.code, d.severity, d.pointer.as_str(), d.message.as_str()))
            .collect();
        assert_eq!(
            found,
            [
                (
                    "version_as_number",
                    Severity::Warning,
                    "/swagger",
                    "the Swagger version is written as the number 2.0, not a string; read as \
                     Swagger 2.0: quote it (swagger: \"2.0\")"
                ),
                (
                    "version_as_number",
                    Severity::Warning,
                    "/openapi",
                    "the OpenAPI version is written as the number 3.0, not a string; read as \
                     OpenAPI 3.0.x: quote it, with its patch number (openapi: \"3.0.0\")"
                ),
                (
                    "version_as_number",
                    Severity::Warning,
                    "/openapi",
                    "the OpenAPI version is written as the number 3.1, not a string; read as \
                     OpenAPI 3.1.x: quote it, with its patch number (openapi: \"3.1.0\")"
                ),
            ]
        );
    }

    #[test]
    fn sidecars_and_shared_files_are_not_documents_and_parse_errors_are_reported() {
        let api = document(
            Dialect::OpenApi30,
            json!({"paths": {"/a": {"get": {"responses": {}}}}}),
        );
        let good = Sources::from_files(
            [
                ("api.json".to_string(), serde_json::to_vec(&api).unwrap()),
                ("api.sezzlee.json".to_string(), b"{}".to_vec()),
                ("shared.json".to_string(), br#"{"Pet": {}}"#.to_vec()),
                (
                    "broken.json".to_string(),
                    br#"{"openapi": "3.0.0""#.to_vec(),
                ),
            ],
            None,
        );
        let catalog = build_catalog(&good, &BuildOptions::default(), None);
        let documents: Vec<&str> = catalog.documents.iter().map(|d| &*d.file).collect();
        assert_eq!(documents, ["api.json"]);
        let found: Vec<(&str, &str, &str)> = catalog
            .diagnostics
            .iter()
            .map(|d| (d.file.as_str(), d.code, d.message.as_str()))
            .collect();
        assert_eq!(
            found,
            [(
                "broken.json",
                "parse_error",
                "invalid JSON: EOF while parsing an object at line 1 column 19"
            )]
        );
        // A file that stops parsing says its last good version still serves.
        let broken = Sources::from_files([("api.json".to_string(), b"{".to_vec())], Some(&good));
        let catalog = build_catalog(&broken, &BuildOptions::default(), None);
        assert_eq!(catalog.tools().len(), 1);
        assert_eq!(
            catalog.diagnostics.to_vec()[0].message,
            "invalid JSON: EOF while parsing an object at line 1 column 1; the last good version keeps serving"
        );
    }

    #[test]
    fn the_namespace_is_the_sidecars_else_the_sanitised_file_stem() {
        assert_eq!(namespace_of("apis/My-Shop.v2.yaml", None), "my_shop_v2");
        assert_eq!(namespace_of("pets", None), "pets");
        let sidecar = Sidecar {
            namespace: Some("shop".to_string()),
            ..Sidecar::default()
        };
        assert_eq!(namespace_of("apis/My-Shop.v2.yaml", Some(&sidecar)), "shop");
    }

    // ------------------------------------------------- paths and operations

    #[test]
    fn only_http_method_keys_are_operations_in_document_order() {
        let built = build(
            Dialect::OpenApi31,
            json!({"paths": {
                "/b": {
                    "summary": "s", "description": "d", "servers": [], "parameters": [],
                    "x-internal": {"get": {}}, "GET": {"responses": {}}, "query": {"responses": {}},
                    "trace": {"responses": {}}, "get": {"responses": {}}
                },
                "/a": {"delete": {"responses": {}}, "options": {"responses": {}}}
            }}),
        );
        let routes: Vec<&str> = built.drafts.iter().map(|d| d.route.as_str()).collect();
        assert_eq!(routes, ["TRACE /b", "GET /b", "DELETE /a", "OPTIONS /a"]);
        assert_eq!(built.operations, 4);
        assert_eq!(built.namespace, "api");
    }

    #[test]
    fn routes_keep_the_path_as_written_and_pointers_escape_it() {
        let built = build(
            Dialect::OpenApi30,
            json!({"paths": {"/pets/{petId}/a~b": {"patch": {"responses": {}}}}}),
        );
        let draft = draft(&built, "PATCH /pets/{petId}/a~b");
        assert_eq!(draft.pointer, "/paths/~1pets~1{petId}~1a~0b/patch");
        assert_eq!(draft.target.http().unwrap().method, "PATCH");
        assert_eq!(draft.target.http().unwrap().path, "/pets/{petId}/a~b");
    }

    #[test]
    fn a_path_item_ref_is_followed_and_an_unresolved_one_reported() {
        let built = build(
            Dialect::OpenApi31,
            json!({
                "paths": {
                    "/pets": {"$ref": "#/x-items/pets"},
                    "/gone": {"$ref": "#/x-items/gone"}
                },
                "x-items": {"pets": {"get": {"operationId": "listPets", "responses": {}}}}
            }),
        );
        assert_eq!(draft(&built, "GET /pets").name, "list_pets");
        assert_eq!(built.operations, 1);
        assert_eq!(
            notes(&built),
            [(
                Severity::Error,
                "unresolved_ref",
                "/paths/~1gone",
                "'#/x-items/gone' points to nothing"
            )]
        );
    }

    // ----------------------------------------------------------- parameters

    #[test]
    fn path_level_parameters_come_first_then_the_operations() {
        let parameters = json!([
            {"name": "petId", "in": "path", "required": true, "schema": {"type": "integer"}},
            {"name": "limit", "in": "query", "schema": {"type": "integer"}}
        ]);
        let built = build(
            Dialect::OpenApi30,
            json!({"paths": {"/pets/{petId}": {
                "parameters": parameters,
                "get": {"parameters": [{"name": "verbose", "in": "query", "schema": {"type": "boolean"}}], "responses": {}},
                "delete": {"responses": {}}
            }}}),
        );
        assert_eq!(
            arguments(draft(&built, "GET /pets/{petId}")),
            [
                ("petId", "petId", Location::Path),
                ("limit", "limit", Location::Query),
                ("verbose", "verbose", Location::Query)
            ]
        );
        assert_eq!(
            arguments(draft(&built, "DELETE /pets/{petId}")),
            [
                ("petId", "petId", Location::Path),
                ("limit", "limit", Location::Query)
            ]
        );
    }

    #[test]
    fn operation_parameters_override_path_parameters_of_the_same_name_and_location() {
        let built = build(
            Dialect::OpenApi31,
            json!({"paths": {"/pets/{id}": {
                "parameters": [
                    {"name": "limit", "in": "query", "schema": {"type": "integer"}},
                    {"name": "id", "in": "path", "schema": {"type": "string"}}
                ],
                "get": {"parameters": [
                    {"name": "id", "in": "header", "schema": {"type": "integer"}},
                    {"name": "limit", "in": "query", "required": true, "schema": {"type": "string", "maxLength": 3}}
                ], "responses": {}}
            }}}),
        );
        let draft = draft(&built, "GET /pets/{id}");
        // The override keeps the path item's position; the header `id`
        // is another parameter and gets its location in front.
        assert_eq!(
            arguments(draft),
            [
                ("limit", "limit", Location::Query),
                ("id", "id", Location::Path),
                ("header_id", "id", Location::Header)
            ]
        );
        assert_eq!(
            draft.input_schema.to_value(),
            json!({
                "type": "object",
                "properties": {
                    "limit": {"type": "string", "maxLength": 3},
                    "id": {"type": "string"},
                    "header_id": {"type": "integer"}
                },
                "required": ["id", "limit"],
                "additionalProperties": false
            })
        );
    }

    #[test]
    fn parameter_refs_resolve_per_dialect() {
        let v30 = build(
            Dialect::OpenApi30,
            json!({
                "paths": {"/a": {"get": {"parameters": [{"$ref": "#/components/parameters/Limit"}], "responses": {}}}},
                "components": {"parameters": {"Limit": {"name": "limit", "in": "query", "schema": {"type": "integer"}}}}
            }),
        );
        // Swagger 2.0 parameters carry their schema keywords inline.
        let v2 = build(
            Dialect::Swagger2,
            json!({
                "paths": {"/a": {"get": {"parameters": [{"$ref": "#/parameters/Limit"}], "responses": {}}}},
                "parameters": {"Limit": {"name": "limit", "in": "query", "type": "integer"}}
            }),
        );
        for built in [v30, v2] {
            let draft = draft(&built, "GET /a");
            assert_eq!(arguments(draft), [("limit", "limit", Location::Query)]);
            assert_eq!(
                draft.input_schema.to_value()["properties"],
                json!({"limit": {"type": "integer"}})
            );
        }
    }

    #[test]
    fn an_unresolvable_parameter_leaves_only_its_operation_out() {
        let built = build(
            Dialect::OpenApi30,
            json!({"paths": {"/a": {
                "get": {"parameters": [{"$ref": "#/components/parameters/Nope"}], "responses": {}},
                "post": {"responses": {}}
            }}}),
        );
        let routes: Vec<&str> = built.drafts.iter().map(|d| d.route.as_str()).collect();
        assert_eq!(routes, ["POST /a"]);
        assert_eq!(built.operations, 2);
        assert_eq!(
            notes(&built),
            [(
                Severity::Error,
                "unresolved_ref",
                "/paths/~1a/get",
                "operation left out: '#/components/parameters/Nope' points to nothing"
            )]
        );
    }

    #[test]
    fn refs_inside_a_path_item_from_another_file_resolve_in_that_file() {
        let paths = json!({
            "Pets": {
                "parameters": [{"$ref": "#/Limit"}],
                "get": {"operationId": "listPets", "responses": {"200": {"$ref": "#/Listed"}}},
                "post": {
                    "operationId": "addPet",
                    "parameters": [{"$ref": "#/Trace"}],
                    "requestBody": {"$ref": "#/NewPet"},
                    "responses": {}
                }
            },
            "Limit": {"name": "limit", "in": "query", "schema": {"type": "integer"}},
            "Trace": {"name": "trace", "in": "header", "schema": {"type": "string"}},
            "NewPet": {
                "required": true,
                "content": {"application/json": {"schema": {
                    "type": "object",
                    "properties": {"name": {"type": "string"}},
                    "required": ["name"]
                }}}
            },
            "Listed": {
                "description": "ok",
                "content": {"application/json": {"schema": {
                    "type": "object",
                    "properties": {"count": {"type": "integer"}}
                }}}
            }
        });
        let api = document(
            Dialect::OpenApi30,
            json!({"paths": {"/pets": {"$ref": "paths.json#/Pets"}}}),
        );
        let built = build_files(&[("api.json", api), ("paths.json", paths)], None);
        assert_eq!(notes(&built), []);
        // Path-level and operation-level parameters, the request body and
        // the responses all resolve in the file that holds the path item.
        assert_eq!(
            arguments(draft(&built, "GET /pets")),
            [("limit", "limit", Location::Query)]
        );
        assert_eq!(
            arguments(draft(&built, "POST /pets")),
            [
                ("limit", "limit", Location::Query),
                ("trace", "trace", Location::Header),
                ("name", "name", Location::BodyMember)
            ]
        );
        let listed = draft(&built, "GET /pets").output_schema.as_ref().unwrap();
        assert_eq!(
            listed.to_value()["properties"]["count"],
            json!({"type": "integer"})
        );
    }

    // -------------------------------------------------------------- servers

    #[test]
    fn the_server_is_the_operations_then_the_path_items_then_the_documents() {
        let built = build(
            Dialect::OpenApi30,
            json!({
                "servers": [{"url": "https://doc.example.com/"}, {"url": "https://second.example.com"}],
                "paths": {
                    "/op": {
                        "servers": [{"url": "https://path.example.com"}],
                        "get": {"servers": [{"url": "https://op.example.com/v1/"}], "responses": {}}
                    },
                    "/path": {"servers": [{"url": "https://path.example.com"}], "get": {"responses": {}}},
                    "/doc": {"get": {"servers": [], "responses": {}}}
                }
            }),
        );
        assert_eq!(
            base_url(draft(&built, "GET /op")),
            Some("https://op.example.com/v1")
        );
        assert_eq!(
            base_url(draft(&built, "GET /path")),
            Some("https://path.example.com")
        );
        // An empty list is skipped; the first of a list is used.
        assert_eq!(
            base_url(draft(&built, "GET /doc")),
            Some("https://doc.example.com")
        );
    }

    #[test]
    fn server_variables_take_their_defaults() {
        for dialect in [Dialect::OpenApi30, Dialect::OpenApi31] {
            let built = build(
                dialect,
                json!({
                    "servers": [{
                        "url": "https://{region}.example.com:{port}/{base}",
                        "variables": {
                            "region": {"default": "eu", "enum": ["eu", "us"]},
                            "port": {"default": 8443},
                            "base": {"default": "v2"}
                        }
                    }],
                    "paths": {"/a": {"get": {"responses": {}}}}
                }),
            );
            // A default that is not a string is not substituted.
            assert_eq!(
                base_url(draft(&built, "GET /a")),
                Some("https://eu.example.com:{port}/v2"),
                "{dialect:?}"
            );
        }
    }

    #[test]
    fn without_servers_there_is_no_base_url_and_relative_ones_stay_relative() {
        let none = build(
            Dialect::OpenApi31,
            json!({"paths": {"/a": {"get": {"responses": {}}}}}),
        );
        assert_eq!(base_url(draft(&none, "GET /a")), None);
        let relative = build(
            Dialect::OpenApi30,
            json!({
                "servers": [{"url": "/api/"}],
                "paths": {"/a": {"get": {"servers": [{"url": "/"}], "responses": {}}}, "/b": {"get": {"responses": {}}}}
            }),
        );
        assert_eq!(base_url(draft(&relative, "GET /b")), Some("/api"));
        assert_eq!(base_url(draft(&relative, "GET /a")), Some(""));
    }

    #[test]
    fn swagger_20_base_url_is_scheme_host_and_base_path() {
        let url = |rest: Value| {
            let mut rest = rest;
            rest["paths"] = json!({"/a": {"get": {"responses": {}}}});
            // `servers` means nothing in Swagger 2.0.
            rest["servers"] = json!([{"url": "https://ignored.example.com"}]);
            let built = build(Dialect::Swagger2, rest);
            base_url(draft(&built, "GET /a")).map(str::to_string)
        };
        let https = "https://api.example.com/v1";
        assert_eq!(
            url(
                json!({"host": "api.example.com", "basePath": "/v1/", "schemes": ["http", "https"]})
            )
            .as_deref(),
            Some(https)
        );
        assert_eq!(
            url(json!({"host": "api.example.com", "basePath": "/v1"})).as_deref(),
            Some(https)
        );
        assert_eq!(
            url(json!({"host": "api.example.com:8080", "schemes": ["http"]})).as_deref(),
            Some("http://api.example.com:8080")
        );
        assert_eq!(
            url(json!({"host": "api.example.com", "basePath": "/", "schemes": ["wss", "ws"]}))
                .as_deref(),
            Some("wss://api.example.com")
        );
        assert_eq!(url(json!({"basePath": "/v1"})).as_deref(), Some("/v1"));
        assert_eq!(url(json!({"basePath": "/"})), None);
        assert_eq!(url(json!({})), None);
    }

    #[test]
    fn the_sidecar_base_url_wins_over_the_document() {
        let api = document(
            Dialect::OpenApi30,
            json!({"servers": [{"url": "https://doc.example.com"}], "paths": {"/a": {"get": {"responses": {}}}}}),
        );
        let sidecar = json!({"backend": {"baseUrl": "http://127.0.0.1:9000"}});
        let built = build_files(&[("api.json", api)], Some(sidecar));
        assert_eq!(
            base_url(draft(&built, "GET /a")),
            Some("http://127.0.0.1:9000")
        );
    }

    // ------------------------------------------------------------- security

    #[test]
    fn operation_security_replaces_the_documents() {
        let built = build(
            Dialect::OpenApi30,
            json!({
                "security": [{"oauth": ["read"]}],
                "paths": {"/a": {
                    "get": {"responses": {}},
                    "delete": {"security": [], "responses": {}},
                    "put": {"security": [{"oauth": ["write", 7], "key": []}, {}], "responses": {}}
                }}
            }),
        );
        let security = |route: &str| draft(&built, route).target.http().unwrap().security.clone();
        let requirement = |pairs: &[(&str, &[&str])]| -> BTreeMap<String, Vec<String>> {
            pairs
                .iter()
                .map(|(scheme, scopes)| {
                    (
                        scheme.to_string(),
                        scopes.iter().map(|s| s.to_string()).collect(),
                    )
                })
                .collect()
        };
        assert_eq!(
            security("GET /a"),
            Some(vec![requirement(&[("oauth", &["read"])])])
        );
        // An empty list: explicitly no security.
        assert_eq!(security("DELETE /a"), Some(vec![]));
        // Requirements are alternatives; schemes inside one are all needed;
        // non-string scopes are dropped; `{}` is the anonymous alternative.
        assert_eq!(
            security("PUT /a"),
            Some(vec![
                requirement(&[("key", &[]), ("oauth", &["write"])]),
                requirement(&[])
            ])
        );
    }

    #[test]
    fn no_security_anywhere_is_none() {
        for dialect in [Dialect::Swagger2, Dialect::OpenApi30, Dialect::OpenApi31] {
            let built = build(
                dialect,
                json!({"paths": {"/a": {"get": {"responses": {}}}}}),
            );
            assert_eq!(
                draft(&built, "GET /a").target.http().unwrap().security,
                None,
                "{dialect:?}"
            );
        }
    }

    #[test]
    fn security_schemes_come_from_each_dialects_place() {
        let schemes = json!({
            "securityDefinitions": {"v2": {"type": "basic"}},
            "components": {"securitySchemes": {"v3": {"type": "http", "scheme": "bearer"}}},
            "paths": {"/a": {"get": {"responses": {}}}}
        });
        let names = |dialect: Dialect| -> Vec<String> {
            let built = build(dialect, schemes.clone());
            let draft = draft(&built, "GET /a");
            draft
                .target
                .http()
                .unwrap()
                .security_schemes
                .keys()
                .cloned()
                .collect()
        };
        assert_eq!(names(Dialect::Swagger2), ["v2"]);
        assert_eq!(names(Dialect::OpenApi30), ["v3"]);
        assert_eq!(names(Dialect::OpenApi31), ["v3"]);
    }

    // ------------------------------------------------ names and descriptions

    #[test]
    fn names_come_from_the_extension_the_operation_id_or_the_route() {
        let built = build(
            Dialect::OpenApi30,
            json!({"paths": {
                "/pets/{petId}": {
                    "parameters": [{"name": "petId", "in": "path", "schema": {"type": "string"}}],
                    "get": {"operationId": "getPetByID", "responses": {}},
                    "put": {"responses": {}},
                    "delete": {"operationId": "!!!", "responses": {}},
                    "post": {"operationId": "x", "x-sezzlee-name": "adopt_pet", "responses": {}},
                    "patch": {"operationId": "patchPet", "x-sezzlee-name": "Bad Name", "responses": {}}
                }
            }}),
        );
        let name = |route: &str| draft(&built, route).name.as_str();
        assert_eq!(name("GET /pets/{petId}"), "get_pet_by_id");
        assert_eq!(name("PUT /pets/{petId}"), "put_pets_by_pet_id");
        assert_eq!(name("DELETE /pets/{petId}"), "delete_pets_by_pet_id");
        assert_eq!(name("POST /pets/{petId}"), "adopt_pet");
        assert_eq!(name("PATCH /pets/{petId}"), "patch_pet");
        assert_eq!(
            notes(&built),
            [(
                Severity::Warning,
                "invalid_configuration",
                "/paths/~1pets~1{petId}/patch",
                "x-sezzlee-name 'Bad Name' is not a valid tool name ([a-z0-9_], 1-128 characters); a derived name is used"
            )]
        );
    }

    #[test]
    fn descriptions_join_summary_and_description_without_repeating() {
        let describe_as = |operation: Value| describe(&operation, "GET /a");
        assert_eq!(describe_as(json!({})), "GET /a");
        assert_eq!(
            describe_as(json!({"summary": "  ", "description": 3})),
            "GET /a"
        );
        assert_eq!(
            describe_as(json!({"summary": " List pets. "})),
            "List pets."
        );
        assert_eq!(
            describe_as(json!({"description": "All pets."})),
            "All pets."
        );
        assert_eq!(
            describe_as(json!({"summary": "List pets", "description": "List pets, paged."})),
            "List pets, paged."
        );
        assert_eq!(
            describe_as(json!({"summary": "List pets, paged.", "description": "List pets"})),
            "List pets, paged."
        );
        assert_eq!(
            describe_as(json!({"summary": "List pets", "description": "Paged."})),
            "List pets\n\nPaged."
        );
    }

    #[test]
    fn deprecated_operations_are_published_unmarked() {
        let built = build(
            Dialect::OpenApi31,
            json!({"paths": {"/a": {"get": {"deprecated": true, "summary": "Old", "responses": {}}}}}),
        );
        let draft = draft(&built, "GET /a");
        assert_eq!(draft.name, "get_a");
        assert_eq!(draft.description, "Old");
        assert_eq!(
            draft.annotations,
            Some(
                json!({"readOnlyHint": true, "idempotentHint": true})
                    .as_object()
                    .unwrap()
                    .clone()
            )
        );
        assert!(built.diagnostics.is_empty());
    }

    #[test]
    fn extension_tags_are_added_once_and_search_terms_kept_as_written() {
        let built = build(
            Dialect::Swagger2,
            json!({"paths": {"/a": {"get": {
                "tags": ["pets", "store", 3, "pets"],
                "x-sezzlee-tags": ["beta", "pets"],
                "x-sezzlee-search-terms": ["animals", "animals"],
                "responses": {}
            }}}}),
        );
        let draft = draft(&built, "GET /a");
        // Repeats within the operation's own `tags` are kept.
        assert_eq!(draft.tags, ["pets", "store", "pets", "beta"]);
        assert_eq!(draft.search_terms, ["animals", "animals"]);
    }

    #[test]
    fn annotations_follow_the_method_then_explicit_settings() {
        let hints = |method: &str, operation: Value, configured: Option<Value>| {
            let configured = configured.map(|c| c.as_object().unwrap().clone());
            annotations_for(method, &operation, configured.as_ref()).map(Value::Object)
        };
        let read_only = Some(json!({"readOnlyHint": true, "idempotentHint": true}));
        assert_eq!(hints("GET", json!({}), None), read_only);
        assert_eq!(hints("HEAD", json!({}), None), read_only);
        assert_eq!(hints("OPTIONS", json!({}), None), read_only);
        assert_eq!(
            hints("PUT", json!({}), None),
            Some(json!({"idempotentHint": true}))
        );
        assert_eq!(
            hints("DELETE", json!({}), None),
            Some(json!({"destructiveHint": true, "idempotentHint": true}))
        );
        assert_eq!(hints("POST", json!({}), None), None);
        assert_eq!(hints("PATCH", json!({}), None), None);
        assert_eq!(hints("TRACE", json!({}), None), None);
        let declared = json!({"x-sezzlee-annotations": {
            "readOnlyHint": false, "openWorldHint": true, "title": "Pets",
            "destructiveHint": "yes", "somethingElse": true
        }});
        assert_eq!(
            hints("GET", declared.clone(), None),
            Some(json!({"idempotentHint": true, "openWorldHint": true, "title": "Pets"}))
        );
        // The sidecar's settings come last.
        assert_eq!(
            hints(
                "GET",
                declared,
                Some(json!({"openWorldHint": false, "title": "Animals"}))
            ),
            Some(json!({"idempotentHint": true, "title": "Animals"}))
        );
    }

    // -------------------------------------------------------- request bodies

    #[test]
    fn request_bodies_prefer_json_then_form_then_the_rest() {
        let object =
            json!({"schema": {"type": "object", "properties": {"name": {"type": "string"}}}});
        let built = build(
            Dialect::OpenApi30,
            json!({
                "paths": {
                    "/json": {"post": {"requestBody": {"content": {
                        "application/xml": object, "application/x-www-form-urlencoded": object,
                        "application/merge-patch+json": object, "application/json; charset=utf-8": object
                    }}, "responses": {}}},
                    "/form": {"post": {"requestBody": {"content": {
                        "text/plain": {}, "multipart/form-data": object, "application/x-www-form-urlencoded": object
                    }}, "responses": {}}},
                    "/any": {"post": {"requestBody": {"content": {"*/*": {}}}, "responses": {}}},
                    "/ref": {"post": {"requestBody": {"$ref": "#/components/requestBodies/Raw"}, "responses": {}}}
                },
                "components": {"requestBodies": {"Raw": {"required": true, "content": {"application/octet-stream": {}}}}}
            }),
        );
        let body = |route: &str| {
            let draft = draft(&built, route);
            let body = draft.target.http().unwrap().body.as_ref().unwrap();
            (body.media_type.as_str(), body.required, arguments(draft))
        };
        assert_eq!(
            body("POST /json"),
            (
                "application/json; charset=utf-8",
                false,
                vec![("name", "name", Location::BodyMember)]
            )
        );
        assert_eq!(
            body("POST /form"),
            (
                "application/x-www-form-urlencoded",
                false,
                vec![("name", "name", Location::BodyMember)]
            )
        );
        assert_eq!(
            body("POST /any"),
            (
                "application/json",
                false,
                vec![("body", "body", Location::Body)]
            )
        );
        assert_eq!(
            body("POST /ref"),
            (
                "application/octet-stream",
                true,
                vec![("body", "body", Location::Body)]
            )
        );
        assert_eq!(
            draft(&built, "POST /ref").input_schema.to_value()["properties"]["body"],
            json!({"type": "string", "contentEncoding": "base64"})
        );
    }

    #[test]
    fn swagger_20_body_parameters_take_their_media_type_from_consumes() {
        let pet = json!({"type": "object", "required": ["name"], "properties": {"name": {"type": "string"}}});
        let built = build(
            Dialect::Swagger2,
            json!({
                "consumes": ["application/vnd.pets+json", "application/json"],
                "paths": {
                    "/doc": {"post": {"parameters": [{"name": "pet", "in": "body", "required": true, "schema": pet}], "responses": {}}},
                    "/own": {"post": {
                        "consumes": ["text/plain", "application/json"],
                        "parameters": [{"name": "pet", "in": "body", "schema": pet}],
                        // Not Swagger 2.0: ignored.
                        "requestBody": {"content": {"text/plain": {}}},
                        "responses": {}
                    }}
                }
            }),
        );
        let body = |route: &str| {
            let body = draft(&built, route)
                .target
                .http()
                .unwrap()
                .body
                .clone()
                .unwrap();
            (body.media_type, body.required)
        };
        assert_eq!(
            body("POST /doc"),
            ("application/vnd.pets+json".to_string(), true)
        );
        assert_eq!(body("POST /own"), ("application/json".to_string(), false));
        assert_eq!(
            arguments(draft(&built, "POST /doc")),
            [("name", "name", Location::BodyMember)]
        );
        assert_eq!(
            draft(&built, "POST /doc").input_schema.to_value()["required"],
            json!(["name"])
        );
    }

    #[test]
    fn openapi_3_request_bodies_ignore_consumes() {
        let built = build(
            Dialect::OpenApi31,
            json!({
                "consumes": ["application/vnd.pets+json"],
                "paths": {"/a": {"post": {"requestBody": {"content": {"application/json": {}}}, "responses": {}}}}
            }),
        );
        assert_eq!(
            draft(&built, "POST /a")
                .target
                .http()
                .unwrap()
                .body
                .as_ref()
                .unwrap()
                .media_type,
            "application/json"
        );
    }

    #[test]
    fn swagger_20_form_data_is_url_encoded_unless_files_or_consumes_say_multipart() {
        let built = build(
            Dialect::Swagger2,
            json!({"paths": {
                "/plain": {"post": {"parameters": [{"name": "note", "in": "formData", "type": "string"}], "responses": {}}},
                "/consumes": {"post": {
                    "consumes": ["multipart/form-data"],
                    "parameters": [{"name": "note", "in": "formData", "type": "string"}], "responses": {}
                }},
                "/both": {"post": {
                    "consumes": ["multipart/form-data", "application/x-www-form-urlencoded"],
                    "parameters": [{"name": "note", "in": "formData", "type": "string"}], "responses": {}
                }},
                "/file": {"post": {
                    "parameters": [{"name": "note", "in": "formData", "type": "string"}, {"name": "photo", "in": "formData", "type": "file"}],
                    "responses": {}
                }}
            }}),
        );
        let media = |route: &str| {
            draft(&built, route)
                .target
                .http()
                .unwrap()
                .body
                .clone()
                .unwrap()
                .media_type
        };
        assert_eq!(media("POST /plain"), "application/x-www-form-urlencoded");
        assert_eq!(media("POST /consumes"), "multipart/form-data");
        assert_eq!(media("POST /both"), "application/x-www-form-urlencoded");
        assert_eq!(media("POST /file"), "multipart/form-data");
        assert_eq!(
            arguments(draft(&built, "POST /file")),
            [
                ("note", "note", Location::BodyMember),
                ("photo", "photo", Location::BodyMember)
            ]
        );
    }

    #[test]
    fn swagger_20_produces_decides_whether_there_is_an_output_schema() {
        let ok = json!({"200": {"description": "ok", "schema": {"type": "object"}}});
        let built = build(
            Dialect::Swagger2,
            json!({
                "produces": ["application/xml"],
                "paths": {
                    "/xml": {"get": {"responses": ok}},
                    "/json": {"get": {"produces": ["application/json"], "responses": ok}}
                }
            }),
        );
        assert!(draft(&built, "GET /xml").output_schema.is_none());
        assert_eq!(
            draft(&built, "GET /json")
                .output_schema
                .as_ref()
                .unwrap()
                .to_value(),
            json!({"type": "object"})
        );
    }

    // -------------------------------------------------- visibility, sidecar

    #[test]
    fn an_undefined_visibility_policy_leaves_the_operation_out() {
        let built = build(
            Dialect::OpenApi30,
            json!({"paths": {"/a": {
                "get": {"x-sezzlee-visibility": "admins", "responses": {}},
                "put": {"responses": {}}
            }}}),
        );
        let routes: Vec<&str> = built.drafts.iter().map(|d| d.route.as_str()).collect();
        assert_eq!(routes, ["PUT /a"]);
        assert_eq!(
            notes(&built),
            [(
                Severity::Error,
                "invalid_configuration",
                "/paths/~1a/get",
                "visibility policy 'admins' needs the document's sidecar, and none is in effect (a refused sidecar has an error of its own); the operation is left out"
            )]
        );
    }

    #[test]
    fn sidecar_keys_that_name_nothing_are_reported() {
        let api = document(
            Dialect::OpenApi30,
            json!({"paths": {"/a": {"get": {"responses": {}}}}}),
        );
        let sidecar = json!({
            "tools": {"GET /a": {"name": "fetch_a"}, "POST /a": {}, "get /b": {}},
            "revision": {"paths": {"/a": 2, "/b": 3}, "operations": {"GET /a": 2, "DELETE /a": 1}}
        });
        let built = build_files(&[("api.json", api)], Some(sidecar));
        assert_eq!(draft(&built, "GET /a").name, "fetch_a");
        let found: Vec<(&str, &str)> = built
            .diagnostics
            .iter()
            .map(|d| (d.file.as_str(), d.pointer.as_str()))
            .collect();
        assert_eq!(
            found,
            [
                ("api.json (sidecar)", "/tools/POST ~1a"),
                ("api.json (sidecar)", "/tools/get ~1b"),
                ("api.json (sidecar)", "/revision/operations/DELETE ~1a"),
                ("api.json (sidecar)", "/revision/paths/~1b"),
            ]
        );
        assert!(
            built
                .diagnostics
                .iter()
                .all(|d| d.severity == Severity::Warning)
        );
    }

    #[test]
    fn revision_levels_come_from_the_document_path_item_and_operation() {
        let built = build(
            Dialect::OpenApi31,
            json!({
                "x-sezzlee-revision": 3,
                "paths": {"/a": {
                    "x-sezzlee-revision": 2,
                    "get": {"x-sezzlee-revision": 1, "responses": {}},
                    "put": {"responses": {}}
                }, "/b": {"get": {"responses": {}}}}
            }),
        );
        let revision = |route: &str| draft(&built, route).revision.and_then(|r| r.to_value());
        assert_eq!(
            revision("GET /a"),
            Some(json!({"catalog": 3, "container": 2, "operation": 1}))
        );
        assert_eq!(
            revision("PUT /a"),
            Some(json!({"catalog": 3, "container": 2}))
        );
        assert_eq!(revision("GET /b"), Some(json!({"catalog": 3})));
        let none = build(
            Dialect::OpenApi30,
            json!({"paths": {"/a": {"get": {"responses": {}}}}}),
        );
        assert_eq!(draft(&none, "GET /a").revision, None);
    }
}
