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
use super::upstream::UpstreamSpec;
use super::upstream_tools::build_upstream;
use super::{BuildOptions, BuildReport, Catalog, assemble};
use rayon::prelude::*;
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
    let loader = Loader::new(sources);
    // Files build in parallel, each independent of the others; the results
    // are taken in path order, so the catalog does not depend on timing.
    let built: Vec<Outcome<'_>> = paths
        .into_par_iter()
        .map(|rel| {
            let before = earlier.get(&*rel).copied();
            let built = match before.filter(|unit| unit.is_current(sources, options)) {
                Some(unit) => Built::Reused(unit.clone()),
                None => match build_unit(&loader, sources, &rel, options) {
                    Some(unit) => Built::New(Arc::new(unit)),
                    None => Built::Unreadable,
                },
            };
            (rel, before, built)
        })
        .collect();
    let mut units = Vec::with_capacity(built.len());
    let mut reused = 0;
    for (rel, before, built) in built {
        let built = match built {
            Built::Reused(unit) => {
                reused += 1;
                units.push(unit);
                continue;
            }
            Built::New(unit) => Some(unit),
            Built::Unreadable => None,
        };
        match (built, before) {
            (Some(unit), _) => units.push(unit),
            (None, Some(before)) => {
                diagnostics.push(Diagnostic::warning(
                    codes::PARSE_ERROR,
                    &rel,
                    "",
                    "a file this document is built from could not be read again from the copy kept of it; its tools are kept as they were".to_string(),
                ));
                units.push(before.clone());
            }
            (None, None) => diagnostics.push(Diagnostic::error(
                codes::PARSE_ERROR,
                &rel,
                "",
                "a file this document is built from could not be read again from the copy kept of it; it is read again at the next scan"
                    .to_string(),
            )),
        }
    }
    for (rel, spec) in sources.upstreams() {
        match earlier
            .get(&**rel)
            .filter(|unit| unit.is_current(sources, options))
        {
            Some(unit) => {
                reused += 1;
                units.push((*unit).clone());
            }
            None => units.push(Arc::new(upstream_unit(sources, rel, spec, options))),
        }
    }
    units.sort_by(|a, b| a.file.cmp(&b.file));
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

/// A file, the unit the previous catalog had for it, and what became of it.
type Outcome<'p> = (Arc<str>, Option<&'p Arc<DocumentUnit>>, Built);

/// What became of one file in a build.
enum Built {
    Reused(Arc<DocumentUnit>),
    New(Arc<DocumentUnit>),
    /// A file it needs could not be read again.
    Unreadable,
}

/// An upstream file's unit, from the listing the gateway set for it.
fn upstream_unit(
    sources: &Sources,
    rel: &Arc<str>,
    spec: &UpstreamSpec,
    options: &BuildOptions,
) -> DocumentUnit {
    let listing = sources.listing(rel);
    let (part, diagnostics) = build_upstream(rel, spec, listing.map(|l| &**l), options);
    DocumentUnit {
        file: rel.clone(),
        document: Some(part),
        diagnostics: diagnostics.into(),
        inputs: vec![(rel.clone(), input_state(sources, rel))],
        listing: listing.map(|l| l.digest()),
        options: *options,
    }
}

/// One file's unit; `None` when a file it needs could not be read again.
fn build_unit(
    loader: &Loader<'_>,
    sources: &Sources,
    rel: &Arc<str>,
    options: &BuildOptions,
) -> Option<DocumentUnit> {
    let loaded = sources.load(rel)?;
    let root: &serde_json::Value = &loaded;
    let resolver = Resolver::loading(loader, rel.clone(), root);
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
        diagnostics: diagnostics.into(),
        inputs,
        listing: None,
        options: *options,
    })
}
