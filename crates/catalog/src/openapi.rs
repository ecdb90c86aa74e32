//! OpenAPI 3.0/3.1 and Swagger 2.0 documents become tool drafts.
//!
//! Walks each document's paths in document order, merges path-level and
//! operation-level parameters, and assembles per operation the pieces the
//! other modules compute (input, output, annotations, revision, curation).
//! A problem in one operation leaves that operation out with a diagnostic;
//! the rest of the document still loads.

use super::diagnostics::{Diagnostic, codes, pointer};
use super::input::InputBuilder;
use super::output::output_schema;
use super::refs::Resolver;
use super::revision::{self, Revision};
use super::schema::{Converter, Dialect, Schema};
use super::sidecar::{BackendConfig, Policy, Sidecar, ToolConfig};
use super::source::{Parsed, Sources, is_sidecar};
use super::{Catalog, DocumentSummary, Operation, naming};
use serde_json::{Map, Value, json};
use sezzlee_json::strings;
use std::collections::BTreeMap;
use std::sync::Arc;

const METHODS: [&str; 8] = [
    "get", "put", "post", "delete", "options", "head", "patch", "trace",
];

/// A tool before its final name and version are known.
pub struct Draft {
    pub name: String,
    pub description: String,
    pub input_schema: Schema,
    pub output_schema: Option<Arc<Schema>>,
    pub annotations: Option<Map<String, Value>>,
    pub tags: Vec<String>,
    pub search_terms: Vec<String>,
    pub route: String,
    pub pointer: String,
    pub revision: Option<Revision>,
    pub policy: Option<Policy>,
    pub operation: Arc<Operation>,
    pub fixed: Map<String, Value>,
}

/// The drafts and diagnostics of one document.
pub struct DocumentBuild {
    pub file: Arc<str>,
    pub namespace: String,
    pub operations: usize,
    pub drafts: Vec<Draft>,
    pub diagnostics: Vec<Diagnostic>,
}

pub fn build_catalog(sources: &Sources) -> Catalog {
    let files = sources.json_files();
    let resolver = Resolver::new(&files);
    let mut diagnostics = Vec::new();
    for (rel, file) in &sources.files {
        if let Err(err) = &file.current {
            let kept = if file.serving.is_some() {
                "; the last good version keeps serving"
            } else {
                ""
            };
            diagnostics.push(Diagnostic::error(
                err.code,
                rel,
                &err.pointer,
                format!("{}{kept}", err.message),
            ));
        }
    }
    let mut documents = Vec::new();
    for (rel, root) in &files {
        if is_sidecar(rel) {
            continue;
        }
        let Some(dialect) = dialect_of(rel, root, &mut diagnostics) else {
            continue;
        };
        let sidecar = sidecar_for(sources, rel, &mut diagnostics);
        documents.push(build_document(
            &resolver,
            rel.clone(),
            root,
            dialect,
            sidecar.as_deref(),
        ));
    }
    super::assemble::assemble(documents, diagnostics)
}

/// The document's dialect; `None` for files that are not API documents
/// (shared schema files other documents `$ref`).
fn dialect_of(rel: &str, root: &Value, diagnostics: &mut Vec<Diagnostic>) -> Option<Dialect> {
    if let Some(version) = root.get("openapi") {
        let text = version.as_str().unwrap_or_default();
        if text.starts_with("3.0") {
            return Some(Dialect::OpenApi30);
        }
        if text.starts_with("3.1") {
            return Some(Dialect::OpenApi31);
        }
        diagnostics.push(Diagnostic::error(
            codes::UNSUPPORTED_DOCUMENT,
            rel,
            "/openapi",
            format!(
                "OpenAPI version {version} is not supported (3.0.x, 3.1.x and Swagger 2.0 are)"
            ),
        ));
        return None;
    }
    if let Some(version) = root.get("swagger") {
        if version.as_str() == Some("2.0") {
            return Some(Dialect::Swagger2);
        }
        diagnostics.push(Diagnostic::error(
            codes::UNSUPPORTED_DOCUMENT,
            rel,
            "/swagger",
            format!("Swagger version {version} is not supported (only 2.0 is)"),
        ));
    }
    None
}

fn sidecar_for(
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
    root: &'a Value,
    dialect: Dialect,
    sidecar: Option<&'a Sidecar>,
    backend: Arc<BackendConfig>,
    security_schemes: Arc<Map<String, Value>>,
    catalog_revision: Option<u64>,
}

fn build_document(
    resolver: &Resolver,
    file: Arc<str>,
    root: &Value,
    dialect: Dialect,
    sidecar: Option<&Sidecar>,
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
    DocumentBuild {
        file,
        namespace,
        operations,
        drafts,
        diagnostics,
    }
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
    let sidecar_file = format!("{} (sidecar)", file);
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
            file,
            operation,
        )
        .map_err(unresolved)?
        {
            builder.parameter(&param_file, &param).map_err(unresolved)?;
        }
        if doc.dialect == Dialect::Swagger2 {
            let consumes = media_list(operation, doc.root, "consumes");
            builder.set_swagger_media_type(&consumes);
            builder.prefer_form_media_type(&consumes);
        } else if let Some(body) = operation.get("requestBody") {
            let (body_file, body) = builder
                .converter
                .resolver()
                .follow(file, body)
                .map_err(unresolved)?;
            builder.request_body(&body_file, body).map_err(unresolved)?;
        }
        builder.undeclared_path_parameters(at.path);
        let (input, input_notes) = builder.finish().map_err(unresolved)?;
        notes.extend(input_notes);
        input
    };
    let produces = media_list(operation, doc.root, "produces");
    let output = output_schema(converter, file, operation, &produces)
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
    let name = name_for(
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
    });
    let base = Draft {
        name,
        description,
        input_schema: input.schema,
        output_schema: output,
        annotations,
        tags,
        search_terms,
        route,
        pointer: at.pointer.clone(),
        revision: revision.to_value().map(|_| revision),
        policy,
        operation: operation_data,
        fixed: Map::new(),
    };
    let mut drafts = Vec::new();
    if let Some(config) = config {
        for (i, variant) in config.variants.iter().enumerate() {
            match super::variants::variant(doc.sidecar, &base, variant) {
                Ok(draft) => drafts.push(draft),
                Err(message) => notes.push(Diagnostic::error(
                    codes::INVALID_CONFIGURATION,
                    &format!("{file} (sidecar)"),
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
/// name and location, each resolved.
fn merged_parameters(
    resolver: &Resolver,
    item_file: &Arc<str>,
    item: &Value,
    file: &Arc<str>,
    operation: &Value,
) -> Result<Vec<(Arc<str>, Value)>, String> {
    let mut merged: Vec<(Arc<str>, Value)> = Vec::new();
    let sources = [(item_file, item), (file, operation)];
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
                Some(slot) => *slot = (param_file, param.clone()),
                None => merged.push((param_file, param.clone())),
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

fn name_for(
    file: &str,
    at: &str,
    method: &str,
    path: &str,
    operation: &Value,
    config: Option<&ToolConfig>,
    notes: &mut Vec<Diagnostic>,
) -> String {
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
                return name.to_string();
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
        naming::from_route(method, path)
    } else {
        from_id
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

/// Applies explicit hint settings: `true` sets, `false` removes, `title`
/// takes a string; anything else is ignored.
pub fn apply_annotations(hints: &mut Map<String, Value>, overrides: &Map<String, Value>) {
    const HINTS: [&str; 4] = [
        "readOnlyHint",
        "destructiveHint",
        "idempotentHint",
        "openWorldHint",
    ];
    for (key, value) in overrides {
        match (key.as_str(), value) {
            (hint, Value::Bool(true)) if HINTS.contains(&hint) => {
                hints.insert(hint.to_string(), json!(true));
            }
            (hint, Value::Bool(false)) if HINTS.contains(&hint) => {
                hints.remove(hint);
            }
            ("title", Value::String(_)) => {
                hints.insert(key.clone(), value.clone());
            }
            _ => {}
        }
    }
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
    match doc.sidecar.and_then(|s| s.policies.get(&name)) {
        Some(policy) => Ok(Some(policy.clone())),
        // Fail closed: a tool whose policy is unknown is not published.
        None => Err(Diagnostic::error(
            codes::INVALID_CONFIGURATION,
            &doc.file,
            at,
            format!(
                "visibility policy '{name}' is not defined in the sidecar's policies; the operation is left out"
            ),
        )),
    }
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

pub fn extend_unique(list: &mut Vec<String>, more: Vec<String>) {
    for item in more {
        if !list.contains(&item) {
            list.push(item);
        }
    }
}

pub fn summary(build: &DocumentBuild) -> DocumentSummary {
    DocumentSummary {
        file: build.file.clone(),
        namespace: build.namespace.clone(),
        operations: build.operations,
        tools: build.drafts.len(),
    }
}
