//! Revision levels: declared behaviour changes that schemas cannot show.
//!
//! A cancel endpoint that now also refunds has the same schema as before;
//! raising its revision changes its version, so a call pinned to the old
//! version is refused. Three levels add up (catalog = document root,
//! container = path item, operation); at each level the sidecar wins over
//! the document's `x-sezzlee-revision`, and every extension it hides is
//! reported.

use super::diagnostics::{Diagnostic, codes};
use super::sidecar::Level;
use serde_json::{Map, Value, json};

pub const EXTENSION: &str = "x-sezzlee-revision";

/// The levels that are set for one operation.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Revision {
    pub catalog: Option<u64>,
    pub container: Option<u64>,
    pub operation: Option<u64>,
}

impl Revision {
    /// `{"catalog":7,"container":4,"operation":2}` with unset levels left
    /// out; `None` when no level is set.
    pub fn to_value(self) -> Option<Value> {
        let mut out = Map::new();
        for (key, level) in [
            ("catalog", self.catalog),
            ("container", self.container),
            ("operation", self.operation),
        ] {
            if let Some(level) = level {
                out.insert(key.to_string(), json!(level));
            }
        }
        (!out.is_empty()).then_some(Value::Object(out))
    }
}

/// One level: the sidecar's value if set, else the document's extension
/// found on `node` (a document value below 1 is reported and not carried).
pub fn level(
    configured: Option<Level>,
    node: &Value,
    file: &str,
    pointer: &str,
    diagnostics: &mut Vec<Diagnostic>,
) -> Option<u64> {
    let declared = node.get(EXTENSION);
    let at = format!("{pointer}/{EXTENSION}");
    if let Some(Level(configured)) = configured {
        if declared.is_some() {
            diagnostics.push(Diagnostic::warning(
                codes::REVISION_OVERRIDDEN,
                file,
                &at,
                format!(
                    "the sidecar sets this revision to {configured}; the document's value is ignored"
                ),
            ));
        }
        return Some(configured);
    }
    let declared = declared?;
    match declared.as_u64() {
        Some(n) if n >= 1 => Some(n),
        _ => {
            diagnostics.push(Diagnostic::warning(
                codes::REVISION_INVALID,
                file,
                &at,
                format!("a revision must be an integer of at least 1, found {declared}; ignored"),
            ));
            None
        }
    }
}
