//! The catalog: every operation of every document, as exact tool definitions.
//!
//! Plain data and pure functions: [`Sources`] (the folder's files) go in,
//! an immutable [`Catalog`] comes out. Nothing here knows about HTTP, MCP
//! or tokio, so every rule is testable without a server, and a rebuild can
//! run off the request path and be swapped in whole.

mod assemble;
mod build;
pub mod compact;
pub mod diagnostics;
mod draft;
mod ecma_pattern;
pub mod fingerprint;
mod form_encoding;
pub mod header_text;
mod input;
mod media_type;
mod naming;
mod openapi;
mod output;
mod packed;
mod refs;
mod revision;
pub mod schema;
pub mod sidecar;
pub mod source;
mod unit;
pub mod upstream;
mod upstream_tools;
mod variants;

pub use assemble::version_source;
pub use compact::fit::Compaction;
pub use diagnostics::{Diagnostic, Diagnostics, Severity};
pub use form_encoding::FormKind;
pub use media_type::is_json_media_type;
pub use schema::{PackedSchema, Schema};
pub use source::Sources;
pub use upstream::UpstreamListing;
pub use upstream_tools::namespace_of as upstream_namespace;

use serde_json::{Map, Value, json};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use sezzlee_search::{SearchFields, SearchIndex, ToolWords};

/// Where one top-level argument goes in the HTTP request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Location {
    Path,
    Query,
    Header,
    Cookie,
    /// One member of an object body (JSON, form or multipart).
    BodyMember,
    /// The whole body (the `body` argument).
    Body,
}

/// OpenAPI parameter serialisation styles.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Style {
    Simple,
    Form,
    Label,
    Matrix,
    SpaceDelimited,
    PipeDelimited,
    TabDelimited,
    DeepObject,
}

/// One argument of the inputSchema and how to send it.
#[derive(Debug, Clone, PartialEq)]
pub struct Argument {
    /// The member name in the inputSchema.
    pub member: String,
    /// The name on the wire (parameter name or body property).
    pub wire_name: String,
    pub location: Location,
    pub style: Style,
    pub explode: bool,
    pub allow_reserved: bool,
    /// A parameter declared with `content: application/json`: sent as JSON text.
    pub json_encoded: bool,
    /// What a form or multipart body's `encoding` says of this member
    /// beyond `style`, `explode` and `allowReserved` (which the fields
    /// above carry); `None` for everything else.
    pub encoding: Option<Arc<MemberEncoding>>,
}

/// One member of a form or multipart body as the document's `encoding`
/// (OpenAPI 3.x Encoding Object) writes it, when that is more than a style:
/// kept apart from [`Argument`] so the arguments of every other operation
/// stay small. Rules: `docs/contract.md` §2.3, "Form and multipart bodies".
#[derive(Debug, Clone, PartialEq, Default)]
pub struct MemberEncoding {
    /// Written by its media type instead of by `style`: OpenAPI 3.1 form
    /// members whose encoding names none of `style`, `explode`,
    /// `allowReserved`, 3.0 ones that name only a `contentType`, and every
    /// OpenAPI 3.x multipart member.
    pub by_media_type: bool,
    /// The member's `contentType` (the first one when the document lists
    /// several), when the document names it.
    pub content_type: Option<String>,
    /// Multipart part headers whose value the document fixes (`const`, an
    /// `enum` of one value, or `default`), in the document's order.
    pub headers: Vec<(String, String)>,
}

/// How a request body is encoded.
#[derive(Debug, Clone, PartialEq)]
pub struct RequestBody {
    /// The media type sent as `Content-Type`.
    pub media_type: String,
    pub required: bool,
}

/// Everything `invoke_tool` needs to reach the backend for one operation.
#[derive(Debug, Clone, PartialEq)]
pub struct Operation {
    /// Upper case: `GET`, `POST`, ….
    pub method: String,
    /// The path template as the document writes it.
    pub path: String,
    /// Sidecar `backend.baseUrl`, else the first server with its variables
    /// at their defaults; `None` when the document names none.
    pub base_url: Option<String>,
    pub arguments: Vec<Argument>,
    pub body: Option<RequestBody>,
    pub backend: Arc<sidecar::BackendConfig>,
    /// Security requirements in force (operation's, else document's);
    /// `None` when the document declares none.
    pub security: Option<Vec<BTreeMap<String, Vec<String>>>>,
    /// Security schemes of the document, by name (their `type` etc.).
    pub security_schemes: Arc<Map<String, Value>>,
    /// The sidecar's quota for this operation (the document's is
    /// `backend.quota`).
    pub quota: Option<sidecar::Quota>,
}

/// Where `invoke_tool` sends a tool's calls.
#[derive(Debug, Clone, PartialEq)]
pub enum Target {
    /// An operation of an API document, called over HTTP.
    Http(Arc<Operation>),
    /// A tool of an upstream MCP server, called with `tools/call`.
    Upstream(Arc<UpstreamTool>),
}

/// A tool of an upstream MCP server (`docs/contract.md` §2.10): which
/// server, and the tool's own name there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UpstreamTool {
    /// The upstream file (`NAME.mcp.yaml`), relative to the catalogs folder.
    pub file: Arc<str>,
    /// The name the server lists it under (the catalog's may differ).
    pub name: String,
}

impl Target {
    /// The HTTP operation, for a tool of an API document.
    pub fn http(&self) -> Option<&Arc<Operation>> {
        match self {
            Target::Http(operation) => Some(operation),
            Target::Upstream(_) => None,
        }
    }

    /// The upstream tool, for a tool of an upstream MCP server.
    pub fn upstream(&self) -> Option<&Arc<UpstreamTool>> {
        match self {
            Target::Http(_) => None,
            Target::Upstream(tool) => Some(tool),
        }
    }
}

/// One tool of the catalog: its published name and version, and the body
/// that does not depend on the name. A document's tools are built once and
/// kept while nothing they were built from changes; a tool renamed because
/// another document took its name shares the body (see `assemble`). A tool
/// is shared, not copied: a clone is one more count, and a catalog rebuilt
/// from another takes the other's unchanged tools whole.
#[derive(Debug, Clone)]
pub struct Tool(Arc<NamedTool>);

impl std::ops::Deref for Tool {
    type Target = NamedTool;

    fn deref(&self) -> &NamedTool {
        &self.0
    }
}

/// A tool's name and version, and its body (what [`Tool`] shares).
#[derive(Debug)]
pub struct NamedTool {
    pub name: String,
    pub version: String,
    /// Characters of [`Tool::definition`].
    pub definition_size: usize,
    /// SHA-256 of the name, the version and the body's observable digest:
    /// the tool's share of the catalog fingerprint.
    observed: [u8; 32],
    body: Arc<ToolBody>,
}

impl std::ops::Deref for NamedTool {
    type Target = ToolBody;

    fn deref(&self) -> &ToolBody {
        &self.body
    }
}

/// Everything of a tool but its name and version.
#[derive(Debug)]
pub struct ToolBody {
    pub description: String,
    /// The full input schema: calls are validated against it.
    pub input_schema: PackedSchema,
    /// The inputSchema agents see, when it had to be compacted to fit the
    /// response budget (`None`: `input_schema` itself).
    pub published_input: Option<Schema>,
    /// The inputSchema's top-level members, in order.
    pub argument_names: Box<[Box<str>]>,
    /// Top-level members whose schema says `contentEncoding: base64`
    /// (sent as bytes).
    pub base64_members: Box<[Box<str>]>,
    /// What search reads of the tool but its name, analysed once.
    pub words: ToolWords,
    /// The outputSchema agents see, compacted to the output depth (see
    /// [`compact`]); shared by every variant of the operation.
    pub output_schema: Option<Arc<Schema>>,
    /// What was left out of the published schemas.
    pub compaction: Compaction,
    /// Characters of the definition other than the name's string.
    pub size_besides_name: usize,
    pub annotations: Option<Map<String, Value>>,
    pub tags: Vec<String>,
    pub search_terms: Vec<String>,
    /// `GET /orders/{id}`, as the document writes the path.
    pub route: String,
    /// The document, relative to the catalogs folder.
    pub document: Arc<str>,
    pub revision: Option<revision::Revision>,
    /// A named visibility policy replacing the OpenAPI security rules.
    pub policy: Option<sidecar::Policy>,
    /// Where its calls go.
    pub target: Target,
    /// Arguments a curated variant sends with fixed values.
    pub fixed: Map<String, Value>,
    /// SHA-256 of what agents observe of the body besides name and version
    /// (tags, search terms, visibility rules), for the catalog fingerprint.
    pub(crate) observable: [u8; 32],
}

impl ToolBody {
    /// The HTTP operation, for a tool of an API document.
    pub fn operation(&self) -> Option<&Arc<Operation>> {
        self.target.http()
    }

    /// Where each argument goes in the HTTP request (none for a tool of an
    /// upstream MCP server, whose arguments are sent whole).
    pub fn http_arguments(&self) -> &[Argument] {
        self.target
            .http()
            .map_or(&[], |operation| operation.arguments.as_slice())
    }
}

impl Tool {
    /// The tool called `name`, its version computed.
    pub(crate) fn named(name: String, body: Arc<ToolBody>) -> Tool {
        let input = body.input_schema.unpack();
        let version = assemble::version_of(&name, &assemble::VersionParts::of(&body, &input));
        Tool::with_version(name, version, body)
    }

    /// The tool called `name` whose version is already known.
    pub(crate) fn with_version(name: String, version: String, body: Arc<ToolBody>) -> Tool {
        use sha2::{Digest, Sha256};
        let definition_size = body.size_besides_name + draft::string_chars(&name);
        let mut hasher = Sha256::new();
        hasher.update(name.as_bytes());
        hasher.update(b"\n");
        hasher.update(version.as_bytes());
        hasher.update(body.observable);
        Tool(Arc::new(NamedTool {
            name,
            version,
            definition_size,
            observed: hasher.finalize().into(),
            body,
        }))
    }

    /// Whether both are the same body (built once, shared).
    pub fn same_body(&self, other: &Tool) -> bool {
        Arc::ptr_eq(&self.0.body, &other.0.body)
    }

    /// Whether both are the same tool, name and version included (shared).
    pub fn same(&self, other: &Tool) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }

    /// The body, shared by every name the tool is published under.
    pub(crate) fn body(&self) -> &Arc<ToolBody> {
        &self.0.body
    }

    /// The load_tool answer: name, description, inputSchema, outputSchema?,
    /// annotations?, version.
    pub fn definition(&self) -> Value {
        let mut out = Map::new();
        out.insert("name".to_string(), json!(self.name));
        out.insert("description".to_string(), json!(self.description));
        out.insert("inputSchema".to_string(), self.published_input().to_value());
        if let Some(output) = &self.output_schema {
            out.insert("outputSchema".to_string(), output.to_value());
        }
        if let Some(annotations) = &self.annotations {
            out.insert(
                "annotations".to_string(),
                Value::Object(annotations.clone()),
            );
        }
        out.insert("version".to_string(), json!(self.version));
        Value::Object(out)
    }

    /// Whether load_tool's answer fits `budget` characters, whatever the
    /// caller (`,"authUncertain":true` included).
    pub fn loads_within(&self, budget: usize) -> bool {
        loads_within(self.definition_size, budget)
    }

    /// What the search index reads of this tool.
    pub fn search_fields(&self) -> SearchFields<'_> {
        SearchFields {
            name: &self.name,
            description: &self.description,
            search_terms: &self.search_terms,
            route: &self.route,
            api: "",
            // Read only when `words` is absent; the words hold them.
            argument_names: Vec::new(),
            words: Some(&self.words),
            tags: &self.tags,
            document: &self.document,
        }
    }

    /// The inputSchema agents see.
    pub fn published_input(&self) -> std::borrow::Cow<'_, Schema> {
        match &self.published_input {
            Some(published) => std::borrow::Cow::Borrowed(published),
            None => std::borrow::Cow::Owned(self.input_schema.unpack()),
        }
    }
}

/// Whether a load_tool answer of a definition of `size` characters fits
/// `budget`, whatever the caller (`,"authUncertain":true` included).
fn loads_within(size: usize, budget: usize) -> bool {
    const AUTH_UNCERTAIN_CHARS: usize = ",\"authUncertain\":true".len();
    size + AUTH_UNCERTAIN_CHARS <= budget
}

/// Settings a build takes from the gateway.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BuildOptions {
    /// The gateway's response budget, in characters: every definition is
    /// published to fit it when it can.
    pub response_budget: usize,
    /// Object levels of each outputSchema published when the sidecar says
    /// nothing.
    pub output_depth: u32,
}

impl BuildOptions {
    /// The gateway's default response budget.
    pub const DEFAULT_BUDGET: usize = 60_000;
    /// The default output depth: the response's members and theirs (a
    /// list's items' members); deeper structure is stubbed. Depth 0 would
    /// leave most results' item members unnamed, depth 2 costs 40 % more
    /// characters per load for the third level (`benches/README.md`,
    /// "Output depth"; contract 2.4.1).
    pub const DEFAULT_OUTPUT_DEPTH: u32 = 1;
}

impl Default for BuildOptions {
    fn default() -> Self {
        BuildOptions {
            response_budget: Self::DEFAULT_BUDGET,
            output_depth: Self::DEFAULT_OUTPUT_DEPTH,
        }
    }
}

/// What one document contributed.
#[derive(Debug, Clone, PartialEq)]
pub struct DocumentSummary {
    pub file: Arc<str>,
    pub namespace: String,
    /// The API's name (`info.title`).
    pub title: String,
    /// Operations found (path × method).
    pub operations: usize,
    /// Tools published from them (variants included, hidden ones not).
    pub tools: usize,
}

/// An immutable, fully built catalog.
pub struct Catalog {
    /// Sorted by name.
    tools: Vec<Tool>,
    /// The search index over `tools`, built once per catalog.
    index: SearchIndex,
    pub documents: Vec<DocumentSummary>,
    /// Shared with the catalogs it was rebuilt from, part by part.
    pub diagnostics: Diagnostics,
    /// What agents can observe of the catalog (names, versions, tags,
    /// search terms, visibility rules): equal fingerprints mean a rebuild
    /// changed nothing an agent could notice.
    fingerprint: [u8; 32],
    /// Each JSON/YAML file's part, in path order, kept for the next build.
    units: Vec<Arc<unit::DocumentUnit>>,
    /// What the build that made this catalog did, and how long it took.
    pub report: BuildReport,
    /// The names across documents and their order, reused by the next
    /// assembly when no document's names changed.
    naming: Arc<assemble::Naming>,
    /// Per unit, the warnings for its tools too large to load, reused by
    /// the next assembly for the units it keeps.
    too_large: Vec<Arc<[Diagnostic]>>,
}

/// What one build did: files built and reused, and the time of its steps,
/// for the reload log and the benchmarks.
#[derive(Debug, Clone, Copy, Default)]
pub struct BuildReport {
    /// JSON/YAML files built (parsed, converted, named, versioned).
    pub files_built: usize,
    /// Files whose part of the previous catalog was reused whole.
    pub files_reused: usize,
    /// Building the files that needed it.
    pub files: std::time::Duration,
    /// Names across documents, sorting, the fingerprint (all but the index).
    pub assemble: std::time::Duration,
    /// Laying out the search index.
    pub index: std::time::Duration,
}

impl Catalog {
    /// Builds the catalog from the folder's files, with the default
    /// [`BuildOptions`].
    pub fn build(sources: &Sources) -> Catalog {
        build::build_catalog(sources, &BuildOptions::default(), None)
    }

    /// Builds the catalog from the folder's files.
    pub fn build_with(sources: &Sources, options: &BuildOptions) -> Catalog {
        build::build_catalog(sources, options, None)
    }

    /// Builds the catalog from the folder's files again, reusing every
    /// document of `previous` whose inputs (its bytes, its sidecar, the
    /// files it `$ref`s, the options) did not change. The result is the
    /// catalog [`Catalog::build_with`] would give; its search index is laid
    /// out from `previous`'s too (only changed documents anew), and the
    /// effects of its commonest words wait for
    /// [`SearchIndex::prepare_common`] (rankings are the same
    /// without them).
    pub fn rebuild(sources: &Sources, options: &BuildOptions, previous: &Catalog) -> Catalog {
        build::build_catalog(sources, options, Some(previous))
    }

    /// How many files' parts `self` took whole from `previous`.
    pub fn documents_reused(&self, previous: &Catalog) -> usize {
        let before: std::collections::HashSet<*const unit::DocumentUnit> =
            previous.units.iter().map(Arc::as_ptr).collect();
        self.units
            .iter()
            .filter(|unit| before.contains(&Arc::as_ptr(unit)))
            .count()
    }

    /// Reads and builds a folder once.
    pub fn load_dir(dir: &Path) -> std::io::Result<Catalog> {
        Ok(Catalog::build(&Sources::scan(dir, None)?))
    }

    /// The catalog of `tools`, already in name order, with their
    /// fingerprint; its search index is laid out (from `previous`'s, when
    /// there is one).
    pub(crate) fn from_parts(
        tools: Vec<Tool>,
        fingerprint: [u8; 32],
        documents: Vec<DocumentSummary>,
        diagnostics: Diagnostics,
        units: Vec<Arc<unit::DocumentUnit>>,
        previous: Option<&Catalog>,
    ) -> Catalog {
        let started = std::time::Instant::now();
        let fields = tools.iter().map(Tool::search_fields);
        // From the index before, only changed documents are laid out; its
        // common words' effects wait for `SearchIndex::prepare_common`.
        let index = match previous {
            Some(previous) => {
                let before: Vec<SearchFields<'_>> =
                    previous.tools.iter().map(Tool::search_fields).collect();
                SearchIndex::update(&previous.index, &before, fields)
            }
            None => SearchIndex::build(fields),
        };
        let report = BuildReport {
            index: started.elapsed(),
            ..BuildReport::default()
        };
        Catalog {
            tools,
            index,
            documents,
            diagnostics,
            fingerprint,
            units,
            report,
            naming: Arc::default(),
            too_large: Vec::new(),
        }
    }

    /// All tools, sorted by name.
    pub fn tools(&self) -> &[Tool] {
        &self.tools
    }

    /// See the field: equal means nothing an agent can observe changed.
    pub fn fingerprint(&self) -> [u8; 32] {
        self.fingerprint
    }

    /// The search index; document `i` is `tools()[i]`.
    pub fn search_index(&self) -> &SearchIndex {
        &self.index
    }

    /// The index of a tool in [`Catalog::tools`].
    pub fn position(&self, name: &str) -> Option<usize> {
        self.tools
            .binary_search_by(|tool| tool.name.as_str().cmp(name))
            .ok()
    }

    pub fn tool(&self, name: &str) -> Option<&Tool> {
        self.position(name).and_then(|i| self.tools.get(i))
    }

    pub fn errors(&self) -> usize {
        self.count(Severity::Error)
    }

    pub fn warnings(&self) -> usize {
        self.count(Severity::Warning)
    }

    fn count(&self, severity: Severity) -> usize {
        self.diagnostics
            .iter()
            .filter(|d| d.severity == severity)
            .count()
    }
}

/// The observable fingerprint, gathered tool by tool: each tool's digest
/// (SHA-256 of its name, version and the body's observable digest: tags,
/// search terms, visibility rules) added lane by lane, wrapping, then
/// SHA-256 of the count and the sums. Names are unique in a catalog, so
/// the sum does not depend on the order tools come in, and equal sums mean
/// equal tools in all an agent observes.
#[derive(Default)]
pub(crate) struct Observed {
    lanes: [u64; 4],
    tools: u64,
}

impl Observed {
    pub(crate) fn add(&mut self, tool: &Tool) {
        for (lane, bytes) in self.lanes.iter_mut().zip(tool.observed.chunks_exact(8)) {
            let mut word = [0u8; 8];
            word.copy_from_slice(bytes);
            *lane = lane.wrapping_add(u64::from_le_bytes(word));
        }
        self.tools += 1;
    }

    pub(crate) fn finish(&self) -> [u8; 32] {
        use sha2::{Digest, Sha256};
        let mut hasher = Sha256::new();
        hasher.update(self.tools.to_le_bytes());
        for lane in self.lanes {
            hasher.update(lane.to_le_bytes());
        }
        hasher.finalize().into()
    }
}
