//! The files of a catalogs folder: found, hashed, parsed, last good kept.
//!
//! Reading is separated from building so a rebuild can skip files whose
//! bytes did not change (same SHA-256, same parse), and so a file that stops
//! parsing keeps serving the last version that did. A rescan reads again
//! only files whose metadata changed (size, times, inode), so an idle folder
//! of thousands of documents costs a `stat` per file. A served gateway does
//! not keep parsed documents in memory ([`Sources::release_parsed`]): each
//! file that parsed is kept as its compressed bytes ([`Packed`]), and a
//! rebuild parses a document again ([`Sources::load`]) only when something
//! it was built from changed. The build reads exactly the bytes the scan
//! read, and the last good version of a file that is broken now is always
//! at hand, so a document is rebuilt from its last good content when its
//! sidecar or a fragment changes. Everything after [`Sources`] is a pure
//! function of it.

use super::packed::Packed;
use super::sidecar::Sidecar;
use super::upstream::{UpstreamListing, UpstreamSpec, is_upstream};
use rayon::prelude::*;
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

/// Deepest folder nesting walked (symlink loops end here).
const MAX_DEPTH: usize = 32;

/// What a file holds once parsed.
#[derive(Debug, Clone)]
pub enum Parsed {
    /// Any JSON/YAML file: an API document or a file other documents
    /// `$ref`; with its bytes compressed, kept when the parse is released.
    Json(Arc<Value>, Arc<Packed>),
    /// A validated sidecar (`NAME.sezzlee.json|yaml`).
    Sidecar(Arc<Sidecar>),
    /// A validated upstream MCP server file (`NAME.mcp.yaml|json`).
    Upstream(Arc<UpstreamSpec>),
    /// A JSON/YAML file that parsed, kept as its compressed bytes and
    /// parsed again when a build needs it ([`Sources::load`]).
    Packed(Arc<Packed>),
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
    /// The hash of the bytes `serving` was parsed from.
    pub serving_hash: Option<[u8; 32]>,
    /// The file's metadata when it was read (files read from disk only).
    stamp: Option<Stamp>,
}

impl SourceFile {
    /// Forgets the parse, keeping the compressed bytes it was parsed
    /// from. The parses forgotten go to `released`.
    fn release(&mut self, released: &mut Vec<Arc<Value>>) {
        for parsed in [self.current.as_mut().ok(), self.serving.as_mut()]
            .into_iter()
            .flatten()
        {
            if let Parsed::Json(value, packed) = parsed {
                let packed = Parsed::Packed(packed.clone());
                released.push(value.clone());
                *parsed = packed;
            }
        }
    }

    /// What a build read of this file: the hash of what serves, else of
    /// the current bytes. Two builds that read files in equal states
    /// produce the same tools.
    pub fn state(&self) -> [u8; 32] {
        self.serving_hash.unwrap_or(self.hash)
    }
}

/// What a file's metadata says about its bytes: equal stamps, read long
/// enough after the write, mean equal bytes (git's rule for its index).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stamp {
    len: u64,
    modified: Option<SystemTime>,
    /// Inode, device and change time where the platform has them: a
    /// rename-save or a symlink swap changes them even when size and
    /// modification time are kept.
    identity: (u64, u64, i64, i64),
}

/// A file modified this close to a scan may change again within the
/// timestamp's resolution: it is read again at the next scan.
const RACY: Duration = Duration::from_secs(2);

impl Stamp {
    fn of(meta: &std::fs::Metadata) -> Stamp {
        #[cfg(unix)]
        let identity = {
            use std::os::unix::fs::MetadataExt;
            (meta.ino(), meta.dev(), meta.ctime(), meta.ctime_nsec())
        };
        #[cfg(not(unix))]
        let identity = (0, 0, 0, 0);
        Stamp {
            len: meta.len(),
            modified: meta.modified().ok(),
            identity,
        }
    }

    /// Whether a file with this stamp, seen at a scan started at
    /// `scanned_at`, certainly still holds the bytes read then.
    fn settled_before(&self, scanned_at: SystemTime) -> bool {
        self.modified
            .and_then(|modified| scanned_at.duration_since(modified).ok())
            .is_some_and(|age| age >= RACY)
    }
}

/// Parsed documents [`Sources::release_parsed`] forgot, freed when this is
/// dropped.
#[derive(Debug, Default)]
pub struct Released(Vec<Arc<Value>>);

impl Released {
    /// How many parses were forgotten.
    pub fn count(&self) -> usize {
        self.0.len()
    }
}

/// Every catalog file below the folder, by `/`-separated relative path.
#[derive(Debug, Clone, Default)]
pub struct Sources {
    pub files: BTreeMap<Arc<str>, SourceFile>,
    /// The folder they were read from (`None`: given in memory).
    dir: Option<PathBuf>,
    /// When the scan that read them started.
    scanned_at: Option<SystemTime>,
    /// What the gateway last listed of each upstream file's server (not a
    /// file, but an input of the build like one: [`Sources::set_listings`]).
    listings: BTreeMap<Arc<str>, Arc<UpstreamListing>>,
}

impl Sources {
    /// Reads the folder. Files whose hash matches `previous` are not parsed
    /// again; files that fail to parse keep `previous`'s last good version.
    /// A file whose metadata is unchanged since a scan that read it (and
    /// was not modified just before that scan) is not read again. Files
    /// are read, parsed and packed in parallel (rayon's pool).
    pub fn scan(dir: &Path, previous: Option<&Sources>) -> std::io::Result<Sources> {
        let scanned_at = SystemTime::now();
        let mut found = Vec::new();
        walk(dir, "", 0, &mut found)?;
        let same_dir = previous.filter(|p| p.dir.as_deref() == Some(dir));
        let out = found
            .into_par_iter()
            .filter_map(|(rel, meta)| {
                let stamp = Stamp::of(&meta);
                let before =
                    same_dir.and_then(|p| Some((p.files.get(rel.as_str())?, p.scanned_at?)));
                if let Some((before, then)) = before
                    && before.stamp == Some(stamp)
                    && stamp.settled_before(then)
                {
                    return Some((Arc::from(rel.as_str()), before.clone()));
                }
                // A file deleted between listing and reading is simply gone.
                let bytes = std::fs::read(dir.join(&rel)).ok()?;
                let mut file = read_file(
                    &rel,
                    &bytes,
                    previous.and_then(|p| p.files.get(rel.as_str())),
                );
                file.stamp = Some(stamp);
                if previous.is_none() {
                    // A first scan keeps no parse: the build parses each
                    // document again and forgets it once built, so a folder
                    // of thousands of documents is never held parsed at once.
                    file.release(&mut Vec::new());
                }
                Some((Arc::from(rel.as_str()), file))
            })
            .collect::<BTreeMap<_, _>>();
        Ok(Sources {
            files: out,
            dir: Some(dir.to_path_buf()),
            scanned_at: Some(scanned_at),
            listings: BTreeMap::new(),
        })
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
            let before = previous.and_then(|p| p.files.get(rel.as_str()));
            out.insert(Arc::from(rel.as_str()), read_file(&rel, &bytes, before));
        }
        Sources {
            files: out,
            dir: None,
            scanned_at: None,
            listings: BTreeMap::new(),
        }
    }

    /// The files whose relative path `keep` accepts, as read.
    pub fn subset(&self, keep: impl Fn(&str) -> bool) -> Sources {
        Sources {
            files: self
                .files
                .iter()
                .filter(|(rel, _)| keep(rel))
                .map(|(rel, file)| (rel.clone(), file.clone()))
                .collect(),
            dir: self.dir.clone(),
            scanned_at: self.scanned_at,
            listings: self
                .listings
                .iter()
                .filter(|(rel, _)| keep(rel))
                .map(|(rel, listing)| (rel.clone(), listing.clone()))
                .collect(),
        }
    }

    /// Forgets the parsed documents (a served gateway calls this after each
    /// build), keeping each as its compressed bytes; only sidecars stay
    /// parsed. Returns what it forgot, for the caller to drop where it
    /// likes (a large document's tree takes milliseconds to free).
    pub fn release_parsed(&mut self) -> Released {
        let mut released = Vec::new();
        for file in self.files.values_mut() {
            file.release(&mut released);
        }
        Released(released)
    }

    /// The parsed JSON/YAML file that serves at `rel`: its current bytes,
    /// else its last good ones, as the scan read them (kept parsed, or
    /// inflated and parsed again). `None` when it is not a serving
    /// JSON/YAML file.
    pub fn load(&self, rel: &str) -> Option<Arc<Value>> {
        match self.files.get(rel)?.serving.as_ref()? {
            Parsed::Json(value, _) => Some(value.clone()),
            Parsed::Sidecar(_) | Parsed::Upstream(_) => None,
            Parsed::Packed(packed) => parse_bytes(rel, &packed.unpack()?).ok().map(Arc::new),
        }
    }

    /// The relative paths of the serving JSON/YAML files that are not
    /// sidecars: API documents and the files they `$ref`.
    pub fn json_paths(&self) -> impl Iterator<Item = &Arc<str>> {
        self.files.iter().filter_map(|(rel, file)| {
            matches!(file.serving, Some(Parsed::Json(..) | Parsed::Packed(_))).then_some(rel)
        })
    }

    /// Sets what the gateway last listed of the upstream servers, by their
    /// files (replacing what was set): the next build serves their tools.
    pub fn set_listings(&mut self, listings: BTreeMap<Arc<str>, Arc<UpstreamListing>>) {
        self.listings = listings;
    }

    /// Whether both were given the same listings.
    pub fn same_listings(&self, other: &Sources) -> bool {
        self.listings.len() == other.listings.len()
            && self
                .listings
                .iter()
                .zip(&other.listings)
                .all(|((a, la), (b, lb))| a == b && la.digest() == lb.digest())
    }

    /// The listing set for the upstream file `rel`.
    pub fn listing(&self, rel: &str) -> Option<&Arc<UpstreamListing>> {
        self.listings.get(rel)
    }

    /// The upstream MCP server files serving, with their specs.
    pub fn upstreams(&self) -> impl Iterator<Item = (&Arc<str>, &Arc<UpstreamSpec>)> {
        self.files
            .iter()
            .filter_map(|(rel, file)| match &file.serving {
                Some(Parsed::Upstream(spec)) => Some((rel, spec)),
                _ => None,
            })
    }

    /// The sidecar serving for a document, if any: `NAME.sezzlee.json`,
    /// `.yaml` or `.yml` beside `NAME.ext`.
    pub fn sidecar_paths_for(&self, document: &str) -> Vec<Arc<str>> {
        sidecar_candidates(document)
            .iter()
            .filter_map(|path| {
                self.files
                    .get_key_value(path.as_str())
                    .map(|(k, _)| k.clone())
            })
            .collect()
    }
}

/// Where a document's sidecar may be, in the order of preference.
pub fn sidecar_candidates(document: &str) -> [String; 3] {
    let stem = match document.rsplit_once('.') {
        Some((stem, _)) => stem,
        None => document,
    };
    ["json", "yaml", "yml"].map(|ext| format!("{stem}.sezzlee.{ext}"))
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

/// The catalog files below `dir`, with their metadata.
fn walk(
    dir: &Path,
    prefix: &str,
    depth: usize,
    found: &mut Vec<(String, std::fs::Metadata)>,
) -> std::io::Result<()> {
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
            found.push((rel, meta));
        }
    }
    Ok(())
}

/// A file's entry from its bytes: the entry before it reused when the bytes
/// are the same, its last good version kept when they no longer parse.
fn read_file(rel: &str, bytes: &[u8], before: Option<&SourceFile>) -> SourceFile {
    let hash: [u8; 32] = Sha256::digest(bytes).into();
    if let Some(before) = before.filter(|b| b.hash == hash) {
        return before.clone();
    }
    let current = parse_file(rel, bytes);
    let (serving, serving_hash) = match &current {
        Ok(parsed) => (Some(parsed.clone()), Some(hash)),
        Err(_) => match before {
            Some(b) => (b.serving.clone(), b.serving_hash),
            None => (None, None),
        },
    };
    SourceFile {
        hash,
        current,
        serving,
        serving_hash,
        stamp: None,
    }
}

fn parse_file(rel: &str, bytes: &[u8]) -> Result<Parsed, FileError> {
    let value = parse_bytes(rel, bytes).map_err(|message| FileError {
        code: super::diagnostics::codes::PARSE_ERROR,
        pointer: String::new(),
        message,
    })?;
    if is_upstream(rel) {
        let spec = UpstreamSpec::from_value(&value).map_err(|err| FileError {
            code: super::diagnostics::codes::INVALID_CONFIGURATION,
            pointer: err.pointer,
            message: err.message,
        })?;
        return Ok(Parsed::Upstream(Arc::new(spec)));
    }
    if is_sidecar(rel) {
        let mut sidecar = Sidecar::from_value(&value).map_err(|err| FileError {
            code: super::diagnostics::codes::INVALID_CONFIGURATION,
            pointer: err.pointer,
            message: err.message,
        })?;
        sidecar.file = Some(Arc::from(rel));
        return Ok(Parsed::Sidecar(Arc::new(sidecar)));
    }
    Ok(Parsed::Json(Arc::new(value), Arc::new(Packed::pack(bytes))))
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
        assert!(matches!(&file.serving, Some(Parsed::Json(v, _)) if v["openapi"] == "3.0.0"));
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
