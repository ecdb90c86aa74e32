//! Names and versions: a document's tools under names unique in the
//! document ([`finish_document`]), then the whole catalog under names
//! unique across documents ([`assemble`]).
//!
//! Names must be unique across the whole catalog and deterministic:
//! collisions inside a document get `_2`, `_3` in document order; names
//! shared by several documents get `{namespace}_` in front. Only then can
//! versions be computed, since the name is part of what an agent reads. A
//! rebuild assembles units it kept ([`DocumentUnit`]): a tool whose final
//! name is its document name is taken whole, a renamed one shares the body
//! and keeps the version the previous catalog computed for that name. The
//! catalog's name order is settled with the names ([`Naming`]); when no
//! document's names changed, both are the previous catalog's, and the
//! tools (and too-large warnings) of every unit it had are taken from it by
//! position, with no sort and no lookup.

use super::diagnostics::{Diagnostic, Diagnostics, codes};
use super::draft::string_chars;
use super::draft::{DocumentBuild, Draft};
use super::fingerprint::{CanonicalSink, VersionHasher, write_canonical_to, write_string};
use super::naming;
use super::revision::Revision;
use super::schema::{Def, PackedSchema, Schema};
use super::unit::{DocumentPart, DocumentUnit};
use super::{BuildOptions, Catalog, Observed, Tool, ToolBody, loads_within};
use serde_json::{Map, Value, json};
use sezzlee_search::{SearchFields, ToolWords, analyse_document};
use sha2::{Digest, Sha256};
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

/// A document's drafts as tools under names unique in the document.
pub(crate) fn finish_document(mut document: DocumentBuild) -> (DocumentPart, Vec<Diagnostic>) {
    dedupe_within(&mut document);
    pack_definitions(&mut document.drafts);
    let mut tools = Vec::with_capacity(document.drafts.len());
    let mut pointers = Vec::with_capacity(document.drafts.len());
    let arguments: Vec<Box<[Box<str>]>> = document
        .drafts
        .iter()
        .map(|draft| {
            draft
                .input_schema
                .properties()
                .map(|props| props.keys().map(|k| k.as_str().into()).collect())
                .unwrap_or_default()
        })
        .collect();
    let words = {
        let fields: Vec<SearchFields<'_>> = document
            .drafts
            .iter()
            .zip(&arguments)
            .map(|(draft, argument_names)| SearchFields {
                name: &draft.name,
                description: &draft.description,
                search_terms: &draft.search_terms,
                route: &draft.route,
                api: &document.title,
                argument_names: argument_names.iter().map(|name| &**name).collect(),
                tags: &draft.tags,
                document: &document.file,
                words: None,
            })
            .collect();
        analyse_document(&fields)
    };
    let each = document.drafts.into_iter().zip(words).zip(arguments);
    for ((draft, words), argument_names) in each {
        let version = version_of(&draft.name, &VersionParts::of_draft(&draft));
        let searched = Searched {
            words,
            argument_names,
        };
        let (name, pointer, body) = body_of(draft, document.file.clone(), searched);
        pointers.push(pointer);
        tools.push(Tool::with_version(name, version, Arc::new(body)));
    }
    let part = DocumentPart {
        namespace: document.namespace,
        title: document.title,
        operations: document.operations,
        tools,
        pointers,
    };
    (part, document.diagnostics)
}

/// Keeps the document's definitions as text from now on (compaction, the
/// only reader of their trees, is done): each schema of the drafts gets the
/// packed copy of each definition, one copy per definition, shared as the
/// trees were.
fn pack_definitions(drafts: &mut [Draft]) {
    // Keyed by address, with the original kept alive so no address is reused.
    let mut packed: HashMap<*const Def, (Arc<Def>, Arc<Def>)> = HashMap::new();
    let mut pack = |defs: &mut Vec<Arc<Def>>| {
        for def in defs.iter_mut() {
            let (_, copy) = packed
                .entry(Arc::as_ptr(def))
                .or_insert_with(|| (def.clone(), Arc::new(def.packed())));
            *def = copy.clone();
        }
    };
    let mut outputs: HashMap<*const Schema, (Arc<Schema>, Arc<Schema>)> = HashMap::new();
    for draft in drafts.iter_mut() {
        pack(&mut draft.input_schema.defs);
        if let Some(published) = &mut draft.published_input {
            pack(&mut published.defs);
        }
        if let Some(output) = draft.output_schema.take() {
            let key = Arc::as_ptr(&output);
            let copy = match outputs.get(&key) {
                Some((_, copy)) => copy.clone(),
                None => {
                    let mut schema = Schema {
                        root: output.root.clone(),
                        defs: output.defs.clone(),
                    };
                    pack(&mut schema.defs);
                    let copy = Arc::new(schema);
                    outputs.insert(key, (output, copy.clone()));
                    copy
                }
            };
            draft.output_schema = Some(copy);
        }
    }
}

/// The catalog of `units` (in path order), after `folder` (the folder's
/// own diagnostics). Tools of `previous` are reused where name and body agree:
/// when the names are settled as before, the catalog's order is too, and
/// the tools of every unit `previous` had are taken from it by position.
pub(crate) fn assemble(
    units: Vec<Arc<DocumentUnit>>,
    folder: Vec<Diagnostic>,
    options: &BuildOptions,
    previous: Option<&Catalog>,
) -> Catalog {
    let parts: Vec<(&DocumentUnit, Option<&DocumentPart>)> = units
        .iter()
        .map(|unit| (&**unit, unit.document.as_ref()))
        .collect();
    let naming = match previous.filter(|p| same_naming_inputs(&p.units, &units)) {
        // The same names in the same documents: the same outcome as before.
        Some(previous) => previous.naming.clone(),
        None => Arc::new(Naming::settle(&parts)),
    };
    // The same naming: the same units, files and names, position by position.
    let aligned = previous.filter(|p| Arc::ptr_eq(&p.naming, &naming));
    let kept: Vec<bool> = match aligned {
        Some(p) => units
            .iter()
            .zip(&p.units)
            .map(|(unit, before)| Arc::ptr_eq(unit, before))
            .collect(),
        None => vec![false; units.len()],
    };

    let mut tools = Vec::with_capacity(naming.order.len());
    let mut observed = Observed::default();
    // Names come in order: the previous catalog's tool of a name is found
    // by walking its tools once, not by a search per renamed tool.
    let mut cursor = previous.map_or(&[][..], |p| p.tools());
    for (i, &(u, t)) in naming.order.iter().enumerate() {
        let before = aligned.and_then(|p| p.tools.get(i));
        let tool = match before {
            Some(before) if kept.get(u).copied().unwrap_or(false) => before.clone(),
            _ => {
                let source = parts
                    .get(u)
                    .and_then(|(_, part)| part.as_ref())
                    .and_then(|part| part.tools.get(t));
                let name = naming.names.get(u).and_then(|names| names.get(t));
                let Some((source, name)) = source.zip(name) else {
                    continue;
                };
                let before = match before {
                    Some(before) if before.name == *name => Some(before),
                    _ if source.name == *name => None,
                    _ => {
                        cursor = after_names_below(cursor, name);
                        cursor.first().filter(|b| b.name == *name)
                    }
                };
                named_as(source, name, before)
            }
        };
        observed.add(&tool);
        tools.push(tool);
    }

    let mut diagnostics = Diagnostics::default();
    diagnostics.push_part(&folder.into());
    let mut summaries = Vec::new();
    let mut too_large = Vec::with_capacity(parts.len());
    let settled = parts.iter().zip(naming.names.iter().zip(&naming.warnings));
    for (u, ((unit, part), (names, renamed))) in settled.enumerate() {
        diagnostics.push_part(&unit.diagnostics);
        let Some(part) = part else {
            too_large.push(Arc::from(Vec::new()));
            continue;
        };
        summaries.push(super::DocumentSummary {
            file: unit.file.clone(),
            namespace: part.namespace.clone(),
            title: part.title.clone(),
            operations: part.operations,
            tools: part.tools.len(),
        });
        diagnostics.push_part(renamed);
        let large = match aligned.filter(|_| kept.get(u).copied().unwrap_or(false)) {
            Some(p) => p.too_large.get(u).cloned(),
            None => None,
        };
        let large =
            large.unwrap_or_else(|| too_large_in(part, names, options.response_budget).into());
        diagnostics.push_part(&large);
        too_large.push(large);
    }
    let mut catalog = Catalog::from_parts(
        tools,
        observed.finish(),
        summaries,
        diagnostics,
        units,
        previous,
    );
    catalog.naming = naming;
    catalog.too_large = too_large;
    catalog
}

/// The tools of `tools` (sorted by name) from the first not below `name`
/// on: a few steps, then a search in what is left.
fn after_names_below<'t>(tools: &'t [Tool], name: &str) -> &'t [Tool] {
    const STEPS: usize = 8;
    let mut skip = 0;
    while skip < STEPS
        && tools
            .get(skip)
            .is_some_and(|tool| tool.name.as_str() < name)
    {
        skip += 1;
    }
    if skip == STEPS {
        let rest = tools.get(skip..).unwrap_or_default();
        skip += rest.partition_point(|tool| tool.name.as_str() < name);
    }
    tools.get(skip..).unwrap_or_default()
}

/// `source` (a tool under its name in its document) published as `name`:
/// itself when the name is its own; else `before` (the previous catalog's
/// tool of that name) when it is the same body, else renamed and versioned.
fn named_as(source: &Tool, name: &str, before: Option<&Tool>) -> Tool {
    if source.name == name {
        return source.clone();
    }
    match before {
        Some(before) if before.same_body(source) => before.clone(),
        _ => Tool::named(name.to_string(), source.body().clone()),
    }
}

fn rename(
    document_file: &str,
    draft: &mut Draft,
    new_name: String,
    why: &str,
    diagnostics: &mut Vec<Diagnostic>,
) {
    diagnostics.push(renamed(
        document_file,
        &draft.pointer,
        &draft.name,
        &new_name,
        why,
    ));
    draft.name = new_name;
}

fn renamed(file: &str, pointer: &str, name: &str, new_name: &str, why: &str) -> Diagnostic {
    Diagnostic::warning(
        codes::NAME_COLLISION,
        file,
        pointer,
        format!("tool name '{name}' {why}; published as '{new_name}'"),
    )
}

/// Inside one document, clashing tools get `_2`, `_3`, …: names given by
/// the sidecar, `x-sezzlee-name` or an `operationId` first, then names
/// derived from routes, each in route order (path, then method in
/// OpenAPI's order). So a derived name never takes a given one, and the
/// order never depends on key order: reformatting a document cannot make a
/// name call another endpoint. The warning names the operation that kept
/// the name.
fn dedupe_within(document: &mut DocumentBuild) {
    let mut holders: HashMap<String, String> = HashMap::new();
    let mut order: Vec<usize> = (0..document.drafts.len()).collect();
    order.sort_by_key(|&i| {
        let draft = &document.drafts[i];
        (draft.derived_name, route_order(&draft.route, i))
    });
    for i in order {
        let name = document.drafts[i].name.clone();
        let Some(holder) = holders.get(&name).cloned() else {
            holders.insert(name, document.drafts[i].route.clone());
            continue;
        };
        let mut n = 2;
        let mut candidate = naming::with_suffix(&name, n);
        while holders.contains_key(&candidate)
            || document.drafts.iter().any(|d| d.name == candidate)
        {
            n += 1;
            candidate = naming::with_suffix(&name, n);
        }
        holders.insert(candidate.clone(), document.drafts[i].route.clone());
        let file = document.file.clone();
        let why = if holder == document.drafts[i].route {
            "is taken by another tool of the same operation".to_string()
        } else {
            format!("is taken by {holder} in this document")
        };
        rename(
            &file,
            &mut document.drafts[i],
            candidate,
            &why,
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

/// The names across documents settled by one assembly: per unit, each
/// tool's final name, and the warnings for those that were renamed; and
/// the catalog's order, by those names.
#[derive(Default)]
pub(crate) struct Naming {
    names: Vec<Vec<String>>,
    warnings: Vec<Arc<[Diagnostic]>>,
    /// For each place in the catalog, the unit and the tool in it there.
    order: Vec<(usize, usize)>,
}

impl Naming {
    fn settle(parts: &[(&DocumentUnit, Option<&DocumentPart>)]) -> Naming {
        let mut names = prefixed_names(parts);
        let warnings = dedupe_across(parts, &mut names)
            .into_iter()
            .map(Arc::from)
            .collect();
        // Names are unique; ties (there are none) would keep path order.
        let mut keyed: Vec<(&str, usize, usize)> = names
            .iter()
            .enumerate()
            .flat_map(|(u, names)| {
                names
                    .iter()
                    .enumerate()
                    .map(move |(t, name)| (name.as_str(), u, t))
            })
            .collect();
        keyed.sort_unstable();
        let order = keyed.into_iter().map(|(_, u, t)| (u, t)).collect();
        Naming {
            names,
            warnings,
            order,
        }
    }
}

/// Whether `units` would settle names as `before` did: the same files in
/// the same order, each the same unit or one with the same namespace,
/// tool names and pointers (all the naming reads).
fn same_naming_inputs(before: &[Arc<DocumentUnit>], units: &[Arc<DocumentUnit>]) -> bool {
    before.len() == units.len()
        && before.iter().zip(units).all(|(a, b)| {
            Arc::ptr_eq(a, b)
                || (a.file == b.file
                    && match (&a.document, &b.document) {
                        (None, None) => true,
                        (Some(a), Some(b)) => {
                            a.namespace == b.namespace
                                && a.pointers == b.pointers
                                && a.tools.len() == b.tools.len()
                                && a.tools.iter().zip(&b.tools).all(|(x, y)| x.name == y.name)
                        }
                        _ => false,
                    })
        })
}

/// Each document's tool names, with the document's namespace in front of
/// those that several documents publish.
fn prefixed_names(parts: &[(&DocumentUnit, Option<&DocumentPart>)]) -> Vec<Vec<String>> {
    let mut owners: HashMap<&str, usize> = HashMap::new();
    for (_, part) in parts {
        // Names are unique inside a document.
        for tool in part.iter().flat_map(|p| &p.tools) {
            *owners.entry(tool.name.as_str()).or_default() += 1;
        }
    }
    parts
        .iter()
        .map(|(_, part)| {
            let Some(part) = part else {
                return Vec::new();
            };
            part.tools
                .iter()
                .map(|tool| {
                    if owners.get(tool.name.as_str()).copied().unwrap_or(0) > 1 {
                        naming::truncate_name(&format!("{}_{}", part.namespace, tool.name))
                    } else {
                        tool.name.clone()
                    }
                })
                .collect()
        })
        .collect()
}

/// Whatever still clashes after prefixing (a document whose own tool is
/// already called `ns_x`) gets a numeric suffix, first come first served
/// in document path order. Returns each document's rename warnings.
fn dedupe_across(
    parts: &[(&DocumentUnit, Option<&DocumentPart>)],
    names: &mut [Vec<String>],
) -> Vec<Vec<Diagnostic>> {
    let mut warnings = Vec::with_capacity(parts.len());
    // Usually nothing clashes once prefixed: then no name is suffixed, and
    // the sets the suffixes are chosen from are not built.
    let clash = {
        let mut seen: HashSet<&str> = HashSet::new();
        !names.iter().flatten().all(|name| seen.insert(name))
    };
    let all: HashSet<String> = match clash {
        true => names.iter().flatten().cloned().collect(),
        false => HashSet::new(),
    };
    let mut used: HashSet<String> = HashSet::with_capacity(all.len());
    for ((unit, part), names) in parts.iter().zip(names.iter_mut()) {
        let mut mine = Vec::new();
        let Some(part) = part else {
            warnings.push(mine);
            continue;
        };
        for ((tool, pointer), name) in part.tools.iter().zip(&part.pointers).zip(names.iter_mut()) {
            if *name != tool.name {
                mine.push(renamed(
                    &unit.file,
                    pointer,
                    &tool.name,
                    name,
                    "is also used by another document",
                ));
            }
            if !clash || used.insert(name.clone()) {
                continue;
            }
            let mut n = 2;
            let mut candidate = naming::with_suffix(name, n);
            while used.contains(&candidate) || all.contains(&candidate) {
                n += 1;
                candidate = naming::with_suffix(name, n);
            }
            used.insert(candidate.clone());
            mine.push(renamed(
                &unit.file,
                pointer,
                name,
                &candidate,
                "is still used by another document",
            ));
            *name = candidate;
        }
        warnings.push(mine);
    }
    warnings
}

/// Warnings for the tools of `part`, published as `names`, whose
/// definitions load_tool would refuse even compacted: the budget is a
/// promise, and the owner hears when it breaks.
fn too_large_in(part: &DocumentPart, names: &[String], budget: usize) -> Vec<Diagnostic> {
    let each = part.tools.iter().zip(&part.pointers).zip(names);
    each.filter_map(|((tool, pointer), name)| {
        let size = match tool.name == *name {
            true => tool.definition_size,
            false => tool.size_besides_name + string_chars(name),
        };
        (!loads_within(size, budget)).then(|| {
            Diagnostic::warning(
                codes::DEFINITION_TOO_LARGE,
                &tool.document,
                pointer,
                format!(
                    "the definition of '{name}' is {size} characters even with its optional parts compacted, over the response budget of {budget}: load_tool will refuse it until response_budget is raised"
                ),
            )
        })
    })
    .collect()
}

/// A draft's name, pointer and body.
/// What search read of a draft: its words, and its argument names.
struct Searched {
    words: ToolWords,
    argument_names: Box<[Box<str>]>,
}

fn body_of(draft: Draft, document: Arc<str>, searched: Searched) -> (String, String, ToolBody) {
    let observable = observable_digest(&draft);
    let base64_members = draft
        .input_schema
        .properties()
        .map(|props| {
            props
                .iter()
                .filter(|(_, schema)| {
                    schema.get("contentEncoding").and_then(Value::as_str) == Some("base64")
                })
                .map(|(name, _)| name.as_str().into())
                .collect()
        })
        .unwrap_or_default();
    let body = ToolBody {
        description: draft.description,
        input_schema: PackedSchema::pack(draft.input_schema),
        argument_names: searched.argument_names,
        base64_members,
        words: searched.words,
        published_input: draft.published_input,
        output_schema: draft.output_schema,
        compaction: draft.compaction,
        size_besides_name: draft.size_besides_name,
        annotations: draft.annotations,
        tags: draft.tags,
        search_terms: draft.search_terms,
        route: draft.route,
        document,
        revision: draft.revision,
        policy: draft.policy,
        target: draft.target,
        fixed: draft.fixed,
        observable,
    };
    (draft.name, draft.pointer, body)
}

/// SHA-256 of what agents observe of a tool besides its name and version:
/// its tags, search terms and visibility rules.
fn observable_digest(draft: &Draft) -> [u8; 32] {
    let observable = json!({
        "tags": draft.tags,
        "searchTerms": draft.search_terms,
        "policy": draft.policy.as_ref().map(|p| json!({"anyScope": p.any_scope, "anyRole": p.any_role, "public": p.public})),
        "security": draft.target.http().and_then(|operation| operation.security.as_ref()),
    });
    Sha256::digest(observable.to_string().as_bytes()).into()
}

/// What a version is computed over besides the name.
pub(crate) struct VersionParts<'a> {
    annotations: Option<&'a Map<String, Value>>,
    description: &'a str,
    input_schema: &'a Schema,
    published_input: Option<&'a Schema>,
    output_schema: Option<&'a Schema>,
    revision: Option<Revision>,
}

impl<'a> VersionParts<'a> {
    fn of_draft(draft: &'a Draft) -> Self {
        VersionParts {
            annotations: draft.annotations.as_ref(),
            description: &draft.description,
            input_schema: &draft.input_schema,
            published_input: draft.published_input.as_ref(),
            output_schema: draft.output_schema.as_deref(),
            revision: draft.revision,
        }
    }

    /// A built body's parts, with its full input unpacked as `input`.
    pub(crate) fn of(body: &'a ToolBody, input: &'a Schema) -> Self {
        VersionParts {
            annotations: body.annotations.as_ref(),
            description: &body.description,
            input_schema: input,
            published_input: body.published_input.as_ref(),
            output_schema: body.output_schema.as_deref(),
            revision: body.revision,
        }
    }
}

/// SHA-256 over the canonical JSON of `{annotations?, description,
/// inputSchema, inputValidation?, name, outputSchema?, revision?}` (keys
/// already in sorted order), streamed so large schemas are never rendered
/// whole. `inputSchema` is the published one; `inputValidation`, the full
/// schema calls are checked against, is there only when the published one
/// was compacted, so a change to an elided part still changes the version.
pub(crate) fn version_of(name: &str, draft: &VersionParts<'_>) -> String {
    let mut hasher = VersionHasher::default();
    let sink: &mut dyn CanonicalSink = &mut hasher;
    sink.push("{");
    if let Some(annotations) = draft.annotations {
        sink.push("\"annotations\":");
        write_canonical_to(&Value::Object(annotations.clone()), sink);
        sink.push(",");
    }
    sink.push("\"description\":");
    write_string(draft.description, sink);
    sink.push(",\"inputSchema\":");
    match draft.published_input {
        Some(published) => {
            published.write_canonical(sink);
            sink.push(",\"inputValidation\":");
            draft.input_schema.write_canonical(sink);
        }
        None => draft.input_schema.write_canonical(sink),
    }
    sink.push(",\"name\":");
    write_string(name, sink);
    if let Some(output) = draft.output_schema {
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
