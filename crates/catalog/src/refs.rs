//! `$ref` resolution inside the catalogs folder.
//!
//! References are followed within a document (`#/components/...`) and to
//! other files of the catalogs folder by relative path (`common.yaml#/X`).
//! A reference that would leave the folder, or names a network URI, is never
//! followed: the operation that needs it is left out with a diagnostic, so a
//! catalog can never make the gateway fetch anything.

use super::source::Sources;
use percent_encoding::percent_decode_str;
use serde_json::Value;
use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, OnceLock};

/// How many `$ref` hops we follow before calling a chain circular.
const MAX_HOPS: usize = 64;

/// Identity of a referenced node: the file it lives in and its JSON pointer.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RefTarget {
    pub file: Arc<str>,
    pub pointer: String,
}

/// A resolved reference: where it points and the node found there.
pub struct Resolved<'a> {
    pub target: RefTarget,
    pub value: &'a Value,
}

/// The JSON/YAML files of a build, parsed when first needed: a build of
/// one document reads only that document and the files it `$ref`s.
pub struct Loader<'s> {
    sources: &'s Sources,
    slots: BTreeMap<Arc<str>, OnceLock<Option<Arc<Value>>>>,
}

impl<'s> Loader<'s> {
    pub fn new(sources: &'s Sources) -> Loader<'s> {
        let slots = sources
            .json_paths()
            .map(|rel| (rel.clone(), OnceLock::new()))
            .collect();
        Loader { sources, slots }
    }
}

/// Where a resolver finds files.
enum Files<'a> {
    /// All of them parsed (tests, and documents given in memory).
    Parsed(&'a BTreeMap<Arc<str>, Arc<Value>>),
    /// Parsed when first needed, but the document being built: it is
    /// read by its build alone and forgotten with it.
    Loaded {
        loader: &'a Loader<'a>,
        own: (Arc<str>, &'a Value),
    },
}

/// All parsed JSON/YAML files of the catalogs folder, by relative path.
/// It records which files a build asked for (whether or not they exist),
/// so a later build knows what that document depends on.
pub struct Resolver<'a> {
    files: Files<'a>,
    asked: RefCell<BTreeSet<Arc<str>>>,
    /// Whether a file the folder serves could not be read again.
    unreadable: Cell<bool>,
}

impl<'a> Resolver<'a> {
    pub fn new(files: &'a BTreeMap<Arc<str>, Arc<Value>>) -> Self {
        Resolver {
            files: Files::Parsed(files),
            asked: RefCell::default(),
            unreadable: Cell::new(false),
        }
    }

    /// A resolver for the build of `own` (parsed as `root`) that parses
    /// other files as they are needed.
    pub fn loading(loader: &'a Loader<'a>, own: Arc<str>, root: &'a Value) -> Self {
        Resolver {
            files: Files::Loaded {
                loader,
                own: (own, root),
            },
            asked: RefCell::default(),
            unreadable: Cell::new(false),
        }
    }

    /// The files asked for so far, found or not.
    pub fn asked(&self) -> BTreeSet<Arc<str>> {
        self.asked.borrow().clone()
    }

    /// Whether a served file could not be read again (its kept bytes did
    /// not inflate and parse as they did when scanned: never expected).
    pub fn had_unreadable(&self) -> bool {
        self.unreadable.get()
    }

    /// The interned name of a file, if the folder holds it.
    pub fn file_key(&self, file: &str) -> Option<Arc<str>> {
        let key = match &self.files {
            Files::Parsed(files) => files.get_key_value(file).map(|(key, _)| key.clone()),
            Files::Loaded { loader, .. } => {
                loader.slots.get_key_value(file).map(|(key, _)| key.clone())
            }
        };
        self.asked
            .borrow_mut()
            .insert(key.clone().unwrap_or_else(|| Arc::from(file)));
        key
    }

    /// The parsed file, if the folder holds it and it can be read.
    pub fn file(&self, file: &Arc<str>) -> Option<&'a Value> {
        self.asked.borrow_mut().insert(file.clone());
        match &self.files {
            Files::Parsed(files) => files.get(file).map(|v| &**v),
            Files::Loaded { own, .. } if own.0 == *file => Some(own.1),
            Files::Loaded { loader, .. } => {
                let slot = loader.slots.get(file)?;
                let loaded = slot.get_or_init(|| loader.sources.load(file)).as_deref();
                if loaded.is_none() {
                    self.unreadable.set(true);
                }
                loaded
            }
        }
    }

    /// Resolves one `$ref` string written in `from_file`.
    pub fn resolve(&self, from_file: &Arc<str>, reference: &str) -> Result<Resolved<'a>, String> {
        let (file_part, fragment) = match reference.split_once('#') {
            Some((file, fragment)) => (file, fragment),
            None => (reference, ""),
        };
        if is_network(file_part) {
            return Err(format!(
                "'{reference}' is a network reference; it is never fetched"
            ));
        }
        let file: Arc<str> = if file_part.is_empty() {
            from_file.clone()
        } else {
            let decoded = percent_decode_str(file_part).decode_utf8_lossy();
            let joined = join_relative(from_file, &decoded)
                .ok_or_else(|| format!("'{reference}' points outside the catalogs folder"))?;
            self.file_key(&joined).ok_or_else(|| {
                format!("'{reference}': file '{joined}' is not in the catalogs folder")
            })?
        };
        let root = self
            .file(&file)
            .ok_or_else(|| format!("'{reference}': file '{file}' could not be read"))?;
        let pointer = percent_decode_str(fragment)
            .decode_utf8_lossy()
            .into_owned();
        let value = lookup(root, &pointer).ok_or_else(|| match near_miss(root, &pointer) {
            Some(close) => format!("'{reference}' points to nothing; did you mean '#{close}'?"),
            None => format!("'{reference}' points to nothing"),
        })?;
        Ok(Resolved {
            target: RefTarget { file, pointer },
            value,
        })
    }

    /// Follows `$ref` until a node without one is reached; returns that node
    /// and the file it lives in.
    pub fn follow<'n>(
        &self,
        from_file: &Arc<str>,
        node: &'n Value,
    ) -> Result<(Arc<str>, &'n Value), String>
    where
        'a: 'n,
    {
        let mut file = from_file.clone();
        let mut current = node;
        for _ in 0..MAX_HOPS {
            match current.get("$ref").and_then(Value::as_str) {
                Some(reference) => {
                    let resolved = self.resolve(&file, reference)?;
                    file = resolved.target.file;
                    current = resolved.value;
                }
                None => return Ok((file, current)),
            }
        }
        Err("a circular chain of $ref".to_string())
    }
}

fn is_network(file_part: &str) -> bool {
    file_part.starts_with("//") || file_part.contains("://") || file_part.starts_with("urn:")
}

/// Resolves `relative` against the folder of `from_file`; `None` when the
/// result would climb out of the catalogs folder.
fn join_relative(from_file: &str, relative: &str) -> Option<String> {
    if relative.starts_with('/') || relative.contains('\\') {
        return None;
    }
    let mut parts: Vec<&str> = from_file.split('/').collect();
    parts.pop();
    for segment in relative.split('/') {
        match segment {
            "" | "." => {}
            ".." => {
                parts.pop()?;
            }
            other => parts.push(other),
        }
    }
    Some(parts.join("/"))
}

/// JSON pointer lookup (RFC 6901); an empty pointer is the whole document.
pub fn lookup<'v>(root: &'v Value, pointer: &str) -> Option<&'v Value> {
    if pointer.is_empty() {
        return Some(root);
    }
    let rest = pointer.strip_prefix('/')?;
    let mut current = root;
    for raw in rest.split('/') {
        let segment = raw.replace("~1", "/").replace("~0", "~");
        current = match current {
            Value::Object(map) => map.get(&segment)?,
            Value::Array(items) => items.get(segment.parse::<usize>().ok()?)?,
            _ => return None,
        };
    }
    Some(current)
}

/// For a pointer that finds nothing: the same pointer with its first
/// missing segment replaced by the closest key of the object that is there
/// (same letters in another case, or a few edits away), when one is close
/// enough to be a typo.
fn near_miss(root: &Value, pointer: &str) -> Option<String> {
    let rest = pointer.strip_prefix('/')?;
    let segments: Vec<String> = rest
        .split('/')
        .map(|raw| raw.replace("~1", "/").replace("~0", "~"))
        .collect();
    let mut current = root;
    for (at, segment) in segments.iter().enumerate() {
        let map = current.as_object()?;
        if let Some(next) = map.get(segment) {
            current = next;
            continue;
        }
        let allowed = (segment.chars().count() / 4).clamp(1, 3);
        let close = map
            .keys()
            .map(|key| {
                let distance = if key.eq_ignore_ascii_case(segment) {
                    0
                } else {
                    strsim::levenshtein(key, segment)
                };
                (distance, key)
            })
            .filter(|(distance, _)| *distance <= allowed)
            .min()?
            .1;
        let mut fixed: Vec<String> = segments[..at].to_vec();
        fixed.push(close.clone());
        fixed.extend(segments[at + 1..].iter().cloned());
        let escaped: Vec<String> = fixed
            .iter()
            .map(|s| s.replace('~', "~0").replace('/', "~1"))
            .collect();
        return Some(format!("/{}", escaped.join("/")));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_near_miss_suggests_the_closest_key() {
        let root = serde_json::json!({"components": {"schemas": {"Customer": {}, "Order": {}}}});
        assert_eq!(
            near_miss(&root, "/components/schemas/Custmer").as_deref(),
            Some("/components/schemas/Customer")
        );
        assert_eq!(
            near_miss(&root, "/components/schemas/customer").as_deref(),
            Some("/components/schemas/Customer")
        );
        assert_eq!(near_miss(&root, "/components/schemas/Invoice"), None);
        assert_eq!(
            near_miss(&root, "/components/schema/Order").as_deref(),
            Some("/components/schemas/Order")
        );
    }
    use serde_json::json;

    fn files() -> BTreeMap<Arc<str>, Arc<Value>> {
        let mut files = BTreeMap::new();
        files.insert(
            Arc::from("api/main.json"),
            Arc::new(json!({"components": {"schemas": {"A": {"$ref": "#/components/schemas/B"}, "B": {"type": "string"}, "a/b": {"type": "integer"}}}})),
        );
        files.insert(
            Arc::from("api/common.yaml"),
            Arc::new(json!({"Id": {"type": "integer"}})),
        );
        files.insert(Arc::from("shared.yaml"), Arc::new(json!({"X": true})));
        files
    }

    #[test]
    fn resolves_local_relative_and_escaped_references() {
        let files = files();
        let resolver = Resolver::new(&files);
        let main: Arc<str> = Arc::from("api/main.json");
        let local = resolver.resolve(&main, "#/components/schemas/B").unwrap();
        assert_eq!(local.value, &json!({"type": "string"}));
        let escaped = resolver
            .resolve(&main, "#/components/schemas/a~1b")
            .unwrap();
        assert_eq!(escaped.value, &json!({"type": "integer"}));
        let other = resolver.resolve(&main, "./common.yaml#/Id").unwrap();
        assert_eq!(&*other.target.file, "api/common.yaml");
        let up = resolver.resolve(&main, "../shared.yaml#/X").unwrap();
        assert_eq!(up.value, &json!(true));
        let start = json!({"$ref": "#/components/schemas/A"});
        let (_, followed) = resolver.follow(&main, &start).unwrap();
        assert_eq!(followed, &json!({"type": "string"}));
    }

    #[test]
    fn refuses_network_escaping_and_missing_references() {
        let files = files();
        let resolver = Resolver::new(&files);
        let main: Arc<str> = Arc::from("api/main.json");
        for bad in [
            "https://example.com/schema.json#/X",
            "//example.com/x",
            "../../etc/passwd",
            "/etc/passwd",
            "missing.json#/X",
            "#/components/schemas/Nope",
        ] {
            assert!(resolver.resolve(&main, bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn circular_chains_end() {
        let mut files = BTreeMap::new();
        files.insert(
            Arc::from("a.json"),
            Arc::new(json!({"A": {"$ref": "#/B"}, "B": {"$ref": "#/A"}})),
        );
        let resolver = Resolver::new(&files);
        let node = json!({"$ref": "#/A"});
        assert!(resolver.follow(&Arc::from("a.json"), &node).is_err());
    }
}
