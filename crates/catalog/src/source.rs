//! The files of a catalogs folder: found, hashed, parsed, last good kept.
//!
//! Reading is separated from building so a rebuild can skip files whose
//! bytes did not change (same SHA-256, same parse), and so a file that stops
//! parsing keeps serving the last version that did. Everything after
//! [`Sources`] is a pure function of it.

use super::sidecar::Sidecar;
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

/// Deepest folder nesting walked (symlink loops end here).
const MAX_DEPTH: usize = 32;

/// What a file holds once parsed.
#[derive(Debug, Clone)]
pub enum Parsed {
    /// Any JSON/YAML file: an API document or a file other documents `$ref`.
    Json(Arc<Value>),
    /// A validated sidecar (`NAME.sezzlee.json|yaml`).
    Sidecar(Arc<Sidecar>),
}

/// Why a file's current bytes are not being used.
#[derive(Debug, Clone, PartialEq)]
pub struct FileError {
    pub code: &'static str,
    pub pointer: String,
    pub message: String,
}

/// One file of the folder.
#[derive(Debug, Clone)]
pub struct SourceFile {
    pub hash: [u8; 32],
    /// The parse of the current bytes.
    pub current: Result<Parsed, FileError>,
    /// What the catalog uses: the current parse, else the last good one.
    pub serving: Option<Parsed>,
}

/// Every catalog file below the folder, by `/`-separated relative path.
#[derive(Debug, Clone, Default)]
pub struct Sources {
    pub files: BTreeMap<Arc<str>, SourceFile>,
}

impl Sources {
    /// Reads the folder. Files whose hash matches `previous` are not parsed
    /// again; files that fail to parse keep `previous`'s last good version.
    pub fn scan(dir: &Path, previous: Option<&Sources>) -> std::io::Result<Sources> {
        let mut found = Vec::new();
        walk(dir, "", 0, &mut found)?;
        let mut files = Vec::with_capacity(found.len());
        for rel in found {
            // A file deleted between listing and reading is simply gone.
            if let Ok(bytes) = std::fs::read(dir.join(&rel)) {
                files.push((rel, bytes));
            }
        }
        Ok(Sources::from_files(files, previous))
    }

    /// Builds from in-memory files (relative path, bytes).
    pub fn from_files(
        files: impl IntoIterator<Item = (String, Vec<u8>)>,
        previous: Option<&Sources>,
    ) -> Sources {
        let mut out = BTreeMap::new();
        for (rel, bytes) in files {
            if !is_catalog_file(&rel) {
                continue;
            }
            let hash: [u8; 32] = Sha256::digest(&bytes).into();
            let before = previous.and_then(|p| p.files.get(rel.as_str()));
            let file = match before {
                Some(before) if before.hash == hash => before.clone(),
                _ => {
                    let current = parse_file(&rel, &bytes);
                    let serving = match &current {
                        Ok(parsed) => Some(parsed.clone()),
                        Err(_) => before.and_then(|b| b.serving.clone()),
                    };
                    SourceFile {
                        hash,
                        current,
                        serving,
                    }
                }
            };
            out.insert(Arc::from(rel.as_str()), file);
        }
        Sources { files: out }
    }

    /// Every parsed JSON/YAML file (not sidecars), for `$ref` resolution.
    pub fn json_files(&self) -> BTreeMap<Arc<str>, Arc<Value>> {
        self.files
            .iter()
            .filter_map(|(rel, file)| match &file.serving {
                Some(Parsed::Json(value)) => Some((rel.clone(), value.clone())),
                _ => None,
            })
            .collect()
    }

    /// The sidecar serving for a document, if any: `NAME.sezzlee.json`,
    /// `.yaml` or `.yml` beside `NAME.ext`.
    pub fn sidecar_paths_for(&self, document: &str) -> Vec<Arc<str>> {
        let stem = match document.rsplit_once('.') {
            Some((stem, _)) => stem,
            None => document,
        };
        ["json", "yaml", "yml"]
            .iter()
            .filter_map(|ext| {
                let path = format!("{stem}.sezzlee.{ext}");
                self.files
                    .get_key_value(path.as_str())
                    .map(|(k, _)| k.clone())
            })
            .collect()
    }
}

/// Whether a path names a sidecar.
pub fn is_sidecar(rel: &str) -> bool {
    let name = rel.rsplit('/').next().unwrap_or(rel);
    [".sezzlee.json", ".sezzlee.yaml", ".sezzlee.yml"]
        .iter()
        .any(|suffix| name.ends_with(suffix))
}

/// `*.json|yaml|yml`, not hidden, not an editor leftover.
pub fn is_catalog_file(rel: &str) -> bool {
    if rel.split('/').any(is_ignored_name) {
        return false;
    }
    let lower = rel.to_ascii_lowercase();
    lower.ends_with(".json") || lower.ends_with(".yaml") || lower.ends_with(".yml")
}

/// Hidden files and editor leftovers: `.*`, `*~`, `*.swp`, `*.tmp`, `#*#`.
pub fn is_ignored_name(name: &str) -> bool {
    name.starts_with('.')
        || name.ends_with('~')
        || name.ends_with(".swp")
        || name.ends_with(".tmp")
        || (name.starts_with('#') && name.ends_with('#'))
}

fn walk(dir: &Path, prefix: &str, depth: usize, found: &mut Vec<String>) -> std::io::Result<()> {
    if depth > MAX_DEPTH {
        return Ok(());
    }
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        // The root must be readable; a subfolder that vanished mid-walk is not an error.
        Err(err) if depth == 0 => return Err(err),
        Err(_) => return Ok(()),
    };
    for entry in entries.flatten() {
        let Ok(name) = entry.file_name().into_string() else {
            continue;
        };
        if is_ignored_name(&name) {
            continue;
        }
        let rel = if prefix.is_empty() {
            name.clone()
        } else {
            format!("{prefix}/{name}")
        };
        // metadata() follows symlinks: ConfigMap volumes link every file.
        let Ok(meta) = std::fs::metadata(entry.path()) else {
            continue;
        };
        if meta.is_dir() {
            walk(&entry.path(), &rel, depth + 1, found)?;
        } else if meta.is_file() && is_catalog_file(&rel) {
            found.push(rel);
        }
    }
    Ok(())
}

fn parse_file(rel: &str, bytes: &[u8]) -> Result<Parsed, FileError> {
    let value = parse_bytes(rel, bytes).map_err(|message| FileError {
        code: super::diagnostics::codes::PARSE_ERROR,
        pointer: String::new(),
        message,
    })?;
    if is_sidecar(rel) {
        let sidecar = Sidecar::from_value(&value).map_err(|err| FileError {
            code: super::diagnostics::codes::INVALID_CONFIGURATION,
            pointer: err.pointer,
            message: err.message,
        })?;
        return Ok(Parsed::Sidecar(Arc::new(sidecar)));
    }
    Ok(Parsed::Json(Arc::new(value)))
}

/// JSON for `.json`, YAML otherwise. An empty file is an error, not an
/// empty document: it is usually a file caught mid-write, and its last
/// good version must keep serving.
pub fn parse_bytes(rel: &str, bytes: &[u8]) -> Result<Value, String> {
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Err("the file is empty".to_string());
    }
    if rel.to_ascii_lowercase().ends_with(".json") {
        return serde_json::from_slice(bytes).map_err(|err| format!("invalid JSON: {err}"));
    }
    let mut yaml: serde_yaml_ng::Value =
        serde_yaml_ng::from_slice(bytes).map_err(|err| format!("invalid YAML: {err}"))?;
    yaml.apply_merge()
        .map_err(|err| format!("invalid YAML merge key: {err}"))?;
    yaml_to_json(yaml, 0)
}

/// YAML values as JSON: mapping keys become strings (`200:` → `"200"`), tags
/// are dropped, non-finite floats refused.
fn yaml_to_json(value: serde_yaml_ng::Value, depth: usize) -> Result<Value, String> {
    use serde_yaml_ng::Value as Y;
    if depth > 512 {
        return Err("YAML nested too deeply".to_string());
    }
    Ok(match value {
        Y::Null => Value::Null,
        Y::Bool(b) => Value::Bool(b),
        Y::Number(n) => {
            if let Some(i) = n.as_i64() {
                Value::from(i)
            } else if let Some(u) = n.as_u64() {
                Value::from(u)
            } else {
                let f = n.as_f64().unwrap_or(f64::NAN);
                serde_json::Number::from_f64(f)
                    .map(Value::Number)
                    .ok_or_else(|| format!("the number {n} has no JSON form"))?
            }
        }
        Y::String(s) => Value::String(s),
        Y::Sequence(items) => Value::Array(
            items
                .into_iter()
                .map(|item| yaml_to_json(item, depth + 1))
                .collect::<Result<_, _>>()?,
        ),
        Y::Mapping(mapping) => {
            let mut map = Map::new();
            for (key, item) in mapping {
                map.insert(yaml_key(key)?, yaml_to_json(item, depth + 1)?);
            }
            Value::Object(map)
        }
        Y::Tagged(tagged) => yaml_to_json(tagged.value, depth + 1)?,
    })
}

fn yaml_key(key: serde_yaml_ng::Value) -> Result<String, String> {
    use serde_yaml_ng::Value as Y;
    match key {
        Y::String(s) => Ok(s),
        Y::Number(n) => Ok(n.to_string()),
        Y::Bool(b) => Ok(b.to_string()),
        Y::Null => Ok("null".to_string()),
        Y::Tagged(tagged) => yaml_key(tagged.value),
        Y::Sequence(_) | Y::Mapping(_) => {
            Err("a YAML mapping key that is not a scalar".to_string())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ignores_hidden_files_and_editor_leftovers() {
        for name in [
            ".orders.json",
            "orders.json~",
            "orders.yaml.swp",
            "x.tmp",
            "#orders.json#",
            "..data/orders.json",
            "readme.md",
        ] {
            assert!(!is_catalog_file(name), "{name}");
        }
        for name in ["orders.json", "api/orders.yaml", "x.YML"] {
            assert!(is_catalog_file(name), "{name}");
        }
    }

    #[test]
    fn empty_files_are_parse_errors() {
        assert!(parse_bytes("a.yaml", b"").is_err());
        assert!(parse_bytes("a.yaml", b" \n\t").is_err());
        assert!(parse_bytes("a.json", b"").is_err());
    }

    #[test]
    fn yaml_integer_keys_become_strings() {
        let value =
            parse_bytes("a.yaml", b"---\nresponses:\n  200:\n    description: ok\n").unwrap();
        assert!(value["responses"]["200"].is_object());
    }

    #[test]
    fn a_file_that_stops_parsing_keeps_its_last_good_version() {
        let first = Sources::from_files(
            [("a.json".to_string(), br#"{"openapi":"3.0.0"}"#.to_vec())],
            None,
        );
        let second =
            Sources::from_files([("a.json".to_string(), b"{ broken".to_vec())], Some(&first));
        let file = &second.files["a.json"];
        assert!(file.current.is_err());
        assert!(matches!(&file.serving, Some(Parsed::Json(v)) if v["openapi"] == "3.0.0"));
        let third = Sources::from_files([("b.json".to_string(), b"{}".to_vec())], Some(&second));
        assert!(!third.files.contains_key("a.json"), "deleted files go away");
    }

    #[test]
    fn an_invalid_sidecar_keeps_the_last_good_one() {
        let good = br#"{"revision": {"catalog": 2}}"#.to_vec();
        let bad = br#"{"revision": {"catalog": 0}}"#.to_vec();
        let first = Sources::from_files([("a.sezzlee.json".to_string(), good)], None);
        let second = Sources::from_files([("a.sezzlee.json".to_string(), bad)], Some(&first));
        let file = &second.files["a.sezzlee.json"];
        let err = file.current.as_ref().unwrap_err();
        assert_eq!(err.code, "invalid_configuration");
        assert_eq!(err.pointer, "/revision/catalog");
        assert!(matches!(&file.serving, Some(Parsed::Sidecar(s)) if s.revision.catalog.is_some()));
        assert_eq!(second.sidecar_paths_for("a.json").len(), 1);
    }
}
