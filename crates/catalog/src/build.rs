//! A build, driven in one order: each JSON/YAML file of the folder into
//! its [`DocumentUnit`] (through [`openapi`](super::openapi) and
//! [`assemble::finish_document`]), then [`assemble::assemble`] (names
//! across documents, versions, one sorted catalog).
//!
//! A rebuild takes the units of the previous catalog whose inputs are
//! unchanged and builds only the others, reading each from disk when it is
//! needed and forgetting its parse once its tools are built.

use super::diagnostics::{Diagnostic, codes};
use super::openapi::{build_document, dialect_of, sidecar_for};
use super::refs::{Loader, Resolver};
use super::source::{Sources, is_sidecar, sidecar_candidates};
use super::unit::{DocumentUnit, input_state};
use super::{BuildOptions, BuildReport, Catalog, assemble};
use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;
use std::time::Instant;

/// The catalog of the folder's files, reusing what it can of `previous`.
pub fn build_catalog(
    sources: &Sources,
    options: &BuildOptions,
    previous: Option<&Catalog>,
) -> Catalog {
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
    let earlier: HashMap<&str, &Arc<DocumentUnit>> = previous
        .map(|p| p.units.iter().map(|u| (&*u.file, u)).collect())
        .unwrap_or_default();
    let paths: Vec<Arc<str>> = sources
        .json_paths()
        .filter(|rel| !is_sidecar(rel))
        .cloned()
        .collect();
    let started = Instant::now();
    let mut loader = Loader::new(sources);
    let mut units = Vec::with_capacity(paths.len());
    let mut reused = 0;
    for rel in paths {
        let before = earlier.get(&*rel).copied();
        if let Some(unit) = before.filter(|unit| unit.is_current(sources, options)) {
            units.push(unit.clone());
            reused += 1;
            continue;
        }
        let built = build_unit(&loader, sources, &rel, options);
        loader.forget(&rel);
        match (built, before) {
            (Some(unit), _) => units.push(Arc::new(unit)),
            (None, Some(before)) => {
                diagnostics.push(Diagnostic::warning(
                    codes::PARSE_ERROR,
                    &rel,
                    "",
                    "a file this document is built from could not be read again (it is changing, or only its last good version is known); its tools are kept as they were".to_string(),
                ));
                units.push(before.clone());
            }
            (None, None) => diagnostics.push(Diagnostic::error(
                codes::PARSE_ERROR,
                &rel,
                "",
                "the file changed while it was being read; it is read again at the next scan"
                    .to_string(),
            )),
        }
    }
    let files = started.elapsed();
    let files_built = units.len() - reused;
    let started = Instant::now();
    let mut catalog = assemble::assemble(units, diagnostics, options, previous);
    catalog.report = BuildReport {
        files_built,
        files_reused: reused,
        files,
        assemble: started.elapsed().saturating_sub(catalog.report.index),
        index: catalog.report.index,
    };
    catalog
}

/// One file's unit; `None` when a file it needs could not be read again.
fn build_unit(
    loader: &Loader<'_>,
    sources: &Sources,
    rel: &Arc<str>,
    options: &BuildOptions,
) -> Option<DocumentUnit> {
    let resolver = Resolver::loading(loader);
    let root = resolver.file(rel)?;
    let mut diagnostics = Vec::new();
    let document = match dialect_of(rel, root, &mut diagnostics) {
        None => None,
        Some(dialect) => {
            let sidecar = sidecar_for(sources, rel, &mut diagnostics);
            let build = build_document(
                &resolver,
                rel.clone(),
                root,
                dialect,
                sidecar.as_deref(),
                options,
            );
            let (part, mut own) = assemble::finish_document(build);
            diagnostics.append(&mut own);
            Some(part)
        }
    };
    if resolver.had_unreadable() {
        return None;
    }
    let mut asked: BTreeSet<Arc<str>> = resolver.asked();
    asked.insert(rel.clone());
    if document.is_some() {
        asked.extend(sidecar_candidates(rel).into_iter().map(Arc::from));
    }
    let inputs = asked
        .into_iter()
        .map(|path| {
            let state = input_state(sources, &path);
            (path, state)
        })
        .collect();
    Some(DocumentUnit {
        file: rel.clone(),
        document,
        diagnostics,
        inputs,
        options: *options,
    })
}
