//! Problems found while building a catalog.
//!
//! A catalog build never stops at the first problem: every document is
//! built on its own and whatever goes wrong is recorded here, so one bad file
//! never hides the others. The same records are logged on reload, served on
//! `/status` and printed by `sezzlee check`.

use serde::{Serialize, Serializer};
use std::fmt;
use std::sync::Arc;

/// How bad a diagnostic is. `Error` means something the catalog owner asked
/// for is not being served (or a configuration was refused); `Warning` means
/// the catalog was built but differs from what the document literally says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Error,
    Warning,
}

/// One problem, located by file (relative to the catalogs folder, `/`
/// separated) and JSON pointer inside it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
pub struct Diagnostic {
    pub code: &'static str,
    pub severity: Severity,
    pub file: String,
    pub pointer: String,
    pub message: String,
}

/// A catalog's diagnostics, in order, kept in the shared parts they come
/// in (the folder's own, then each document's own, its renames and its
/// definitions too large): a rebuild that keeps a document keeps its parts
/// without copying a diagnostic.
#[derive(Clone, Default)]
pub struct Diagnostics {
    parts: Vec<Arc<[Diagnostic]>>,
    len: usize,
}

/// The diagnostics of a [`Diagnostics`], in order.
pub type Iter<'a> = std::iter::FlatMap<
    std::slice::Iter<'a, Arc<[Diagnostic]>>,
    &'a [Diagnostic],
    fn(&'a Arc<[Diagnostic]>) -> &'a [Diagnostic],
>;

impl Diagnostics {
    /// Appends a part (shared, not copied).
    pub(crate) fn push_part(&mut self, part: &Arc<[Diagnostic]>) {
        if !part.is_empty() {
            self.len += part.len();
            self.parts.push(part.clone());
        }
    }

    pub fn iter(&self) -> Iter<'_> {
        fn part(part: &Arc<[Diagnostic]>) -> &[Diagnostic] {
            part
        }
        let part: fn(&Arc<[Diagnostic]>) -> &[Diagnostic] = part;
        self.parts.iter().flat_map(part)
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Every diagnostic, copied.
    pub fn to_vec(&self) -> Vec<Diagnostic> {
        self.iter().cloned().collect()
    }
}

impl<'a> IntoIterator for &'a Diagnostics {
    type Item = &'a Diagnostic;
    type IntoIter = Iter<'a>;

    fn into_iter(self) -> Iter<'a> {
        self.iter()
    }
}

impl FromIterator<Diagnostic> for Diagnostics {
    fn from_iter<I: IntoIterator<Item = Diagnostic>>(diagnostics: I) -> Self {
        let mut all = Diagnostics::default();
        all.push_part(&diagnostics.into_iter().collect());
        all
    }
}

impl fmt::Debug for Diagnostics {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

/// A list, as `Vec<Diagnostic>` would be.
impl Serialize for Diagnostics {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.iter())
    }
}

impl Diagnostic {
    pub fn error(
        code: &'static str,
        file: &str,
        pointer: &str,
        message: impl Into<String>,
    ) -> Self {
        Self::new(code, Severity::Error, file, pointer, message)
    }

    pub fn warning(
        code: &'static str,
        file: &str,
        pointer: &str,
        message: impl Into<String>,
    ) -> Self {
        Self::new(code, Severity::Warning, file, pointer, message)
    }

    fn new(
        code: &'static str,
        severity: Severity,
        file: &str,
        pointer: &str,
        message: impl Into<String>,
    ) -> Self {
        Diagnostic {
            code,
            severity,
            file: file.to_string(),
            pointer: pointer.to_string(),
            message: message.into(),
        }
    }
}

impl fmt::Display for Diagnostic {
    /// `file#pointer: severity[code]: message`, one line, file first so the
    /// output sorts and greps by location.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let severity = match self.severity {
            Severity::Error => "error",
            Severity::Warning => "warning",
        };
        let message = self.message.replace(['\n', '\r'], " ");
        write!(
            f,
            "{}#{}: {}[{}]: {}",
            self.file, self.pointer, severity, self.code, message
        )
    }
}

/// Diagnostic codes, spelled once.
pub mod codes {
    pub const PARSE_ERROR: &str = "parse_error";
    pub const UNSUPPORTED_DOCUMENT: &str = "unsupported_document";
    /// A supported version written as a number (`swagger: 2.0`): read,
    /// with a warning to quote it.
    pub const VERSION_AS_NUMBER: &str = "version_as_number";
    pub const UNRESOLVED_REF: &str = "unresolved_ref";
    pub const NAME_COLLISION: &str = "name_collision";
    pub const REVISION_OVERRIDDEN: &str = "revision_overridden";
    pub const REVISION_INVALID: &str = "revision_invalid";
    pub const INVALID_CONFIGURATION: &str = "invalid_configuration";
    pub const UNSUPPORTED_BODY: &str = "unsupported_body";
    pub const INVALID_OPERATION: &str = "invalid_operation";
    pub const DEFINITION_TOO_LARGE: &str = "definition_too_large";
    pub const INVALID_PATTERN: &str = "invalid_pattern";
    /// An upstream MCP server not answering now, or not listed yet.
    pub const UPSTREAM_UNAVAILABLE: &str = "upstream_unavailable";
    /// A tool an upstream server listed that cannot be served (no name,
    /// a duplicate, too large, past `maxTools`).
    pub const UPSTREAM_TOOL_LEFT_OUT: &str = "upstream_tool_left_out";
}

/// Escapes one JSON pointer segment (RFC 6901).
pub fn pointer_segment(segment: &str) -> String {
    segment.replace('~', "~0").replace('/', "~1")
}

/// Joins segments into a JSON pointer.
pub fn pointer(segments: &[&str]) -> String {
    let mut out = String::new();
    for segment in segments {
        out.push('/');
        out.push_str(&pointer_segment(segment));
    }
    out
}
