//! Problems found while building a catalog.
//!
//! A catalog build never stops at the first problem: every document is
//! built on its own and whatever goes wrong is recorded here, so one bad file
//! never hides the others. The same records are logged on reload, served on
//! `/status` and printed by `sezzlee check`.

use serde::Serialize;
use std::fmt;

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
    pub const UNRESOLVED_REF: &str = "unresolved_ref";
    pub const NAME_COLLISION: &str = "name_collision";
    pub const REVISION_OVERRIDDEN: &str = "revision_overridden";
    pub const REVISION_INVALID: &str = "revision_invalid";
    pub const INVALID_CONFIGURATION: &str = "invalid_configuration";
    pub const UNSUPPORTED_BODY: &str = "unsupported_body";
    pub const INVALID_OPERATION: &str = "invalid_operation";
    pub const DEFINITION_TOO_LARGE: &str = "definition_too_large";
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
