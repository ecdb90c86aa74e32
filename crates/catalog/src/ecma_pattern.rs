//! JSON Schema `pattern`s as clients compile them.
//!
//! A `pattern` (and a `patternProperties` key) is an ECMA-262 regular
//! expression. Clients compile a tool's `inputSchema` with engines such as
//! Ajv, which builds `new RegExp(pattern, "u")`, and one pattern it cannot
//! compile fails the whole tool there. Real documents carry patterns from
//! other dialects: Amazon DynamoDB's `\p{Print}+` (a Java class), or the
//! identity escapes (`\-`, `\#`) that JavaScript allows only without the
//! `u` flag. Each pattern is checked with `regress`, an ECMA-262 engine, in
//! Unicode mode: one that compiles is kept; one that compiles once its
//! needless escapes are removed (the same expression, in the dialect
//! without `u`) is kept in that form; anything else is dropped by the
//! converter, with a warning naming where it was.

use crate::diagnostics::{Diagnostic, codes, pointer_segment};
use crate::refs::Resolver;
use serde_json::Value;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;

/// A `pattern` or `patternProperties` key the converter dropped because
/// clients could not compile it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DroppedPattern {
    /// The file the schema was written in.
    pub file: Arc<str>,
    /// The address of the dropped value inside that file's parsed tree
    /// (the `pattern` string, or the `patternProperties` member), to be
    /// turned into a JSON pointer while the tree is alive; never read
    /// through.
    pub address: usize,
    pub keyword: &'static str,
    pub pattern: String,
    pub reason: String,
}

/// What became of one pattern.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Checked {
    /// Valid as written.
    Valid,
    /// Valid once needless identity escapes are removed; the same
    /// expression.
    Rewritten(String),
    /// Not an ECMA-262 regular expression; why.
    Invalid(String),
}

/// Checks `pattern` under ECMA-262 with the `u` flag.
pub fn check(pattern: &str) -> Checked {
    let error = match regress::Regex::with_flags(pattern, "u") {
        Ok(_) => return Checked::Valid,
        Err(error) => error.to_string(),
    };
    if let Some(rewritten) = without_identity_escapes(pattern)
        && regress::Regex::with_flags(&rewritten, "u").is_ok()
        && regress::Regex::new(pattern).is_ok()
    {
        return Checked::Rewritten(rewritten);
    }
    Checked::Invalid(error)
}

/// Characters Unicode mode lets a backslash escape outside a class.
const SYNTAX: &str = "^$\\.*+?()[]{}|/";

/// `pattern` with the backslash removed before every character that
/// needs none: outside a class any character but the syntax characters,
/// inside one any but those and `-` (which would make a range). Letters
/// and digits keep theirs (`\d`, `\1`, `\p`); `\_` becomes `_`. `None`
/// when nothing changes.
fn without_identity_escapes(pattern: &str) -> Option<String> {
    let mut out = String::with_capacity(pattern.len());
    let mut in_class = false;
    let mut changed = false;
    let mut chars = pattern.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                let Some(next) = chars.next() else {
                    out.push(c);
                    break;
                };
                let needed = next.is_ascii_alphanumeric()
                    || SYNTAX.contains(next)
                    || (in_class && next == '-');
                if needed {
                    out.push(c);
                } else {
                    changed = true;
                }
                out.push(next);
            }
            '[' if !in_class => {
                in_class = true;
                out.push(c);
            }
            ']' if in_class => {
                in_class = false;
                out.push(c);
            }
            _ => out.push(c),
        }
    }
    changed.then_some(out)
}

/// A warning for each pattern the converter dropped, at its JSON pointer in
/// the file it was written in (found by its address in that file's tree).
pub(crate) fn report_dropped(
    resolver: &Resolver,
    dropped: Vec<DroppedPattern>,
    diagnostics: &mut Vec<Diagnostic>,
) {
    let mut by_file: BTreeMap<Arc<str>, Vec<DroppedPattern>> = BTreeMap::new();
    for pattern in dropped {
        by_file
            .entry(pattern.file.clone())
            .or_default()
            .push(pattern);
    }
    for (file, patterns) in by_file {
        let wanted: HashSet<usize> = patterns.iter().map(|p| p.address).collect();
        let mut found = HashMap::new();
        if let Ok(root) = resolver.resolve(&file, "#") {
            pointers_of(root.value, &mut String::new(), &wanted, &mut found);
        }
        for pattern in patterns {
            let (pointer, place) = match found.get(&pattern.address) {
                Some(pointer) => (pointer.clone(), String::new()),
                // A schema the build put together itself (a Swagger 2.0
                // parameter): no place in the file to point at.
                None => (String::new(), " (in a parameter's schema)".to_string()),
            };
            diagnostics.push(Diagnostic::warning(
                codes::INVALID_PATTERN,
                &file,
                &pointer,
                format!(
                    "{} '{}'{place} is not an ECMA-262 regular expression ({}): dropped, so that clients can compile the tools' schemas",
                    pattern.keyword, pattern.pattern, pattern.reason
                ),
            ));
        }
    }
}

/// The JSON pointers of the values at `wanted` addresses under `node`.
fn pointers_of(
    node: &Value,
    at: &mut String,
    wanted: &HashSet<usize>,
    found: &mut HashMap<usize, String>,
) {
    if found.len() == wanted.len() {
        return;
    }
    let address = node as *const Value as usize;
    if wanted.contains(&address) {
        found.insert(address, at.clone());
    }
    let length = at.len();
    match node {
        Value::Object(members) => {
            for (key, member) in members {
                at.push('/');
                at.push_str(&pointer_segment(key));
                pointers_of(member, at, wanted, found);
                at.truncate(length);
            }
        }
        Value::Array(items) => {
            for (index, item) in items.iter().enumerate() {
                at.push('/');
                at.push_str(&index.to_string());
                pointers_of(item, at, wanted, found);
                at.truncate(length);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn valid_patterns_are_kept_as_written() {
        for pattern in [
            r"^[a-z0-9-]+$",
            r"^\d{4}-\d{2}-\d{2}$",
            r"[\w\-]+",
            r"\p{L}+",
            r"(?<year>\d{4})",
            r"^\$\{[^}]+\}$",
            r"https?:\/\/",
            "",
        ] {
            assert_eq!(check(pattern), Checked::Valid, "{pattern}");
        }
    }

    #[test]
    fn needless_escapes_are_removed_keeping_the_expression() {
        assert_eq!(
            check(r"^[a-z]\-[0-9]$"),
            Checked::Rewritten(r"^[a-z]-[0-9]$".into())
        );
        assert_eq!(check(r"^\#\@\:x$"), Checked::Rewritten(r"^#@:x$".into()));
        assert_eq!(
            check(r"^[a-zA-Z0-9\-\_]+$"),
            Checked::Rewritten(r"^[a-zA-Z0-9\-_]+$".into())
        );
        // Inside a class `\-` stays (removing it would make a range); the
        // other needless escape goes.
        assert_eq!(check(r"[a\-z\#]\-"), Checked::Rewritten(r"[a\-z#]-".into()));
        // The rewrite matches what the original matched without `u`.
        let original = regress::Regex::new(r"^a\-b\#$").unwrap();
        let Checked::Rewritten(rewritten) = check(r"^a\-b\#$") else {
            panic!("not rewritten");
        };
        let rewritten = regress::Regex::with_flags(&rewritten, "u").unwrap();
        for text in ["a-b#", "ab#", "a\\-b#", "a-b"] {
            assert_eq!(
                original.find(text).is_some(),
                rewritten.find(text).is_some(),
                "{text}"
            );
        }
    }

    #[test]
    fn other_dialects_are_invalid() {
        for pattern in [
            r"\p{Print}+",
            r"[[:alpha:]]+\p{IsAlphabetic}",
            r"a{2,1}",
            r"(unclosed",
            r"(?i)case",
            r"\",
            r"[z-a]",
        ] {
            assert!(
                matches!(check(pattern), Checked::Invalid(_)),
                "{pattern}: {:?}",
                check(pattern)
            );
        }
    }
}
