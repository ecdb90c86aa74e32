//! One document's share of a catalog, kept from build to build.
//!
//! A document's tools depend on its own bytes, its sidecar, the files it
//! `$ref`s and the build options, and on nothing else but their final
//! names. A [`DocumentUnit`] records those inputs with the state each had
//! ([`SourceFile::state`](super::source::SourceFile::state)), so a rebuild
//! after an edit builds again only the documents whose inputs changed and
//! reuses every other unit whole; `assemble` then settles names across
//! documents, which is cheap.

use super::diagnostics::Diagnostic;
use super::source::Sources;
use super::{BuildOptions, Tool};
use std::sync::Arc;

/// The tools and diagnostics of one JSON/YAML file of the folder (an
/// API document, or a file that is not one), and what they were built from.
pub struct DocumentUnit {
    pub file: Arc<str>,
    /// `None` for a file that is not an API document.
    pub document: Option<DocumentPart>,
    /// The document's own diagnostics (renames inside the document
    /// included, renames across documents not), shared with the catalogs
    /// that keep the unit.
    pub diagnostics: Arc<[Diagnostic]>,
    /// Every file the build asked for, with its state then (`None`: absent).
    pub inputs: Vec<(Arc<str>, Option<[u8; 32]>)>,
    /// For an upstream file, the digest of the listing its tools were
    /// built from ([`Sources::listing`]); `None` for everything else.
    pub listing: Option<[u8; 32]>,
    pub options: BuildOptions,
}

/// What an API document contributed.
pub struct DocumentPart {
    pub namespace: String,
    /// The API's name (`info.title`).
    pub title: String,
    /// Operations found (path × method).
    pub operations: usize,
    /// The tools under their names within the document (unique there).
    pub tools: Vec<Tool>,
    /// Where each tool's operation is in the document, for diagnostics.
    pub pointers: Vec<String>,
}

impl DocumentUnit {
    /// Whether a build of the same file from `sources` with `options`
    /// would give this unit again.
    pub fn is_current(&self, sources: &Sources, options: &BuildOptions) -> bool {
        self.options == *options
            && self.listing == sources.listing(&self.file).map(|listing| listing.digest())
            && self
                .inputs
                .iter()
                .all(|(path, state)| input_state(sources, path) == *state)
    }
}

/// The state of one input file now: `None` when the folder has no such file.
pub fn input_state(sources: &Sources, path: &str) -> Option<[u8; 32]> {
    sources.files.get(path).map(|file| file.state())
}
