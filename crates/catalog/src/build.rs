//! A build, driven in one order: each API document of the folder through
//! [`openapi`](super::openapi) (its drafts and diagnostics), then
//! [`assemble`](super::assemble) (names, versions, one sorted catalog).

use super::diagnostics::Diagnostic;
use super::openapi::{build_document, dialect_of, sidecar_for};
use super::refs::Resolver;
use super::source::{Sources, is_sidecar};
use super::{BuildOptions, Catalog, assemble};

/// The catalog of the folder's files.
pub fn build_catalog(sources: &Sources, options: &BuildOptions) -> Catalog {
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
            options,
        ));
    }
    assemble::assemble(documents, diagnostics, options)
}
