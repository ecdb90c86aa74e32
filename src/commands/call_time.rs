//! What `sezzlee check` can tell will fail when a tool is invoked, before
//! any agent calls it: a backend with no address (no `servers`, no
//! `backend.baseUrl`), a relative server URL with nothing to resolve it
//! against, and a sidecar naming an environment variable (`${NAME}` in
//! `backend.baseUrl` or a static header, or a credential's secret
//! variable) that is unset where `check` runs. Each used to pass `check`
//! and reach the agent as an error on the first call.
//!
//! These are warnings of `check` alone, not catalog diagnostics: whether a
//! variable is set is a fact of the process that runs, not of the files.

use super::plural;
use sezzlee_catalog::diagnostics::Diagnostic;
use sezzlee_catalog::{Catalog, Tool};
use sezzlee_gateway::backend::SELF_VARIABLE;
use std::collections::{BTreeMap, BTreeSet};

/// A tool that cannot be invoked as the catalog stands.
pub const NO_BACKEND: &str = "no_backend";
/// A sidecar names an environment variable this process does not have.
pub const UNSET_VARIABLE: &str = "unset_variable";

/// The warnings, at most one per document and problem; `is_set` says
/// whether an environment variable is set (the real environment, or a
/// test's).
pub fn warnings(catalog: &Catalog, is_set: impl Fn(&str) -> bool) -> Vec<Diagnostic> {
    let mut by_document: BTreeMap<&str, Vec<&Tool>> = BTreeMap::new();
    for tool in catalog.tools() {
        by_document.entry(&tool.document).or_default().push(tool);
    }
    let mut found = Vec::new();
    for (document, tools) in by_document {
        let mut missing_base = 0;
        let mut relative = BTreeSet::new();
        let mut variables = BTreeSet::new();
        for tool in &tools {
            // An upstream MCP server's tool is reached through its file's
            // url or command, checked when the gateway connects.
            let Some(operation) = tool.operation() else {
                continue;
            };
            let backend = &operation.backend;
            match operation.base_url.as_deref() {
                None => missing_base += 1,
                Some(url) if !is_absolute(url) && !url.starts_with("${") => {
                    relative.insert(url.to_string());
                }
                Some(url) => variables.extend(referenced_variables(url)),
            }
            for value in backend.headers.values() {
                variables.extend(referenced_variables(value));
            }
            if let Some(secret) = backend
                .auth
                .as_ref()
                .and_then(|auth| auth.client_secret_env.as_deref())
            {
                variables.insert(secret.to_string());
            }
        }
        if missing_base > 0 {
            found.push(Diagnostic::warning(
                NO_BACKEND,
                document,
                "",
                format!(
                    "the document names no server and its sidecar no backend.baseUrl: {missing_base} {} can be found and loaded but not invoked; set backend.baseUrl in the sidecar",
                    plural(missing_base, "tool", "tools")
                ),
            ));
        }
        for url in relative {
            found.push(Diagnostic::warning(
                NO_BACKEND,
                document,
                "/servers",
                format!(
                    "the server URL '{url}' is relative and there is no base to resolve it against: its tools cannot be invoked; set an absolute backend.baseUrl in the sidecar"
                ),
            ));
        }
        for variable in variables {
            if variable == SELF_VARIABLE || is_set(&variable) {
                continue;
            }
            found.push(Diagnostic::warning(
                UNSET_VARIABLE,
                document,
                "",
                format!(
                    "the sidecar names the environment variable {variable}, which is not set here: calls to this document's backend will fail until it is set where the gateway runs"
                ),
            ));
        }
    }
    found
}

fn is_absolute(url: &str) -> bool {
    url.starts_with("http://") || url.starts_with("https://")
}

/// The `NAME`s of every complete `${NAME}` in `text`.
fn referenced_variables(text: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        let after = &rest[start + 2..];
        let Some(end) = after.find('}') else {
            break;
        };
        names.push(after[..end].to_string());
        rest = &after[end + 1..];
    }
    names
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn variables_are_read_from_every_complete_reference() {
        assert_eq!(
            referenced_variables("${A}/x/${B_2}?${unclosed"),
            ["A", "B_2"]
        );
        assert!(referenced_variables("plain").is_empty());
    }
}
