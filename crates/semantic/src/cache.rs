//! Tool vectors on disk: a text is embedded once per model, whatever
//! restarts, reloads or replicas follow.
//!
//! Embedding a tool's text with a contextual encoder costs milliseconds,
//! so a catalog of 125,000 tools takes the better part of an hour from
//! nothing; a restart must not pay that again, and neither should a second
//! replica sharing the volume. The cache is a folder per model (named by
//! the model's digest) of immutable *segments*: each a batch of records
//! (a text's key, its quantised vector and factor) closed by the SHA-256
//! of everything before it. A segment is written under a temporary name,
//! synced, and renamed to the digest of its content, so a reader sees a
//! whole segment or none; a crash mid-write leaves only a temporary file
//! (removed by the next start), and a damaged segment (truncated, bit
//! flips) fails its checksum, is never served, and is deleted so its texts
//! are embedded again. Two replicas writing the same records write the
//! same name. The folder is bounded: past its byte limit, or past
//! [`MAX_SEGMENTS`], the records the current catalog uses are written
//! into one segment and the others removed.

use std::collections::{HashMap, HashSet};
use std::fs::{self, File};
use std::io::{self, Read, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use sha2::{Digest, Sha256};

/// What a text is known by: the first 8 bytes of its SHA-256. Two of a
/// million texts share a key once in some 37 million caches; eight bytes
/// more per tool would keep that chance out of reach entirely, at 2% of
/// the table's memory (a tool's row is 384 bytes).
pub type TextKey = [u8; KEY_BYTES];

const KEY_BYTES: usize = 8;

/// The key of `text`.
pub fn text_key(text: &str) -> TextKey {
    let digest = Sha256::digest(text.as_bytes());
    let mut key = [0u8; KEY_BYTES];
    key.copy_from_slice(&digest[..KEY_BYTES]);
    key
}

/// First bytes of every segment written, with the format's version.
const MAGIC: &[u8; 8] = b"SZVEC02\n";

/// The segment formats read: the first, with 16-byte keys (read, their
/// keys cut to [`KEY_BYTES`], so a cache written before is not embedded
/// again), and the one written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Format {
    LongKeys,
    Current,
}

impl Format {
    fn of(magic: &[u8]) -> Option<Format> {
        match magic {
            b"SZVEC01\n" => Some(Format::LongKeys),
            m if m == MAGIC => Some(Format::Current),
            _ => None,
        }
    }

    fn key_bytes(self) -> usize {
        match self {
            Format::LongKeys => 16,
            Format::Current => KEY_BYTES,
        }
    }
}
/// Magic, dimensions (u32 LE), record count (u32 LE).
const HEADER: usize = 16;
/// The SHA-256 that closes a segment.
const TRAILER: usize = 32;
/// More segments than this are merged into one at the next write.
pub const MAX_SEGMENTS: usize = 64;
/// Default bound of one model's folder.
pub const DEFAULT_LIMIT_BYTES: u64 = 1 << 30;

/// Where vectors are cached when the operator names no folder:
/// `$XDG_CACHE_HOME/sezzlee/vectors`, else `$HOME/.cache/sezzlee/vectors`;
/// `None` when neither variable is set.
pub fn default_root() -> Option<PathBuf> {
    let from = |var: &str| {
        std::env::var_os(var)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    from("XDG_CACHE_HOME")
        .or_else(|| from("HOME").map(|home| home.join(".cache")))
        .map(|base| base.join("sezzlee").join("vectors"))
}

/// One embedded text: its key, its vector quantised to `i8`, and the
/// factor that turns the row back into the unit vector.
#[derive(Debug, Clone, PartialEq)]
pub struct Record {
    pub key: TextKey,
    pub row: Vec<i8>,
    pub factor: f32,
}

/// Where a record lies: its segment and its byte offset there.
#[derive(Debug, Clone, Copy)]
struct Location {
    segment: u32,
    offset: u64,
}

#[derive(Default)]
struct Index {
    /// Segment files read, by file name, with their format; their
    /// position is their number.
    segments: Vec<(String, Format)>,
    read: HashSet<String>,
    records: HashMap<TextKey, Location>,
    bytes: u64,
}

/// One model's folder of segments.
pub struct DiskCache {
    folder: PathBuf,
    dimensions: usize,
    limit_bytes: u64,
    index: Mutex<Index>,
}

/// What opening or reading the cache found wrong, for the log.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Refreshed {
    /// Segments read this time.
    pub segments: usize,
    /// Damaged segments found (and removed).
    pub damaged: Vec<String>,
}

impl DiskCache {
    /// The cache of the model with `model_digest` under `root` (created if
    /// missing), holding vectors of `dimensions`, bounded to `limit_bytes`.
    /// Leftover temporary files of an interrupted write are removed, and
    /// every complete segment is indexed.
    pub fn open(
        root: &Path,
        model_digest: &str,
        dimensions: usize,
        limit_bytes: u64,
    ) -> io::Result<(DiskCache, Refreshed)> {
        let name: String = model_digest.chars().take(16).collect();
        let folder = root.join(name);
        fs::create_dir_all(&folder)?;
        for entry in fs::read_dir(&folder)? {
            let entry = entry?;
            let file = entry.file_name().to_string_lossy().into_owned();
            // Only old leftovers: another replica may be writing its own now.
            let old = entry
                .metadata()
                .and_then(|m| m.modified())
                .ok()
                .and_then(|t| t.elapsed().ok())
                .is_some_and(|age| age.as_secs() > 600);
            if file.starts_with(".tmp-") && old {
                let _ = fs::remove_file(entry.path());
            }
        }
        let cache = DiskCache {
            folder,
            dimensions,
            limit_bytes,
            index: Mutex::new(Index::default()),
        };
        let refreshed = cache.refresh()?;
        Ok((cache, refreshed))
    }

    /// The folder of this model's segments.
    pub fn folder(&self) -> &Path {
        &self.folder
    }

    /// Indexes the segments written since the last look (by this process
    /// or another sharing the folder); damaged ones are removed.
    pub fn refresh(&self) -> io::Result<Refreshed> {
        let mut refreshed = Refreshed::default();
        let mut names: Vec<String> = fs::read_dir(&self.folder)?
            .filter_map(Result::ok)
            .map(|entry| entry.file_name().to_string_lossy().into_owned())
            .filter(|name| name.ends_with(".seg"))
            .collect();
        names.sort();
        let mut index = self.lock();
        for name in names {
            if index.read.contains(&name) {
                continue;
            }
            let path = self.folder.join(&name);
            match read_segment(&path, self.dimensions) {
                Ok((format, records)) => {
                    let number = index.segments.len() as u32;
                    index.segments.push((name.clone(), format));
                    index.read.insert(name);
                    index.bytes += segment_bytes(records.len(), self.dimensions, format);
                    let size = record_bytes(self.dimensions, format);
                    for (position, key) in records.into_iter().enumerate() {
                        let offset = (HEADER + position * size) as u64;
                        index.records.insert(
                            key,
                            Location {
                                segment: number,
                                offset,
                            },
                        );
                    }
                    refreshed.segments += 1;
                }
                Err(SegmentError::Gone) => {}
                Err(SegmentError::Damaged) => {
                    let _ = fs::remove_file(&path);
                    refreshed.damaged.push(name);
                }
            }
        }
        Ok(refreshed)
    }

    /// Number of texts the cache holds.
    pub fn len(&self) -> usize {
        self.lock().records.len()
    }

    /// Whether the cache holds no text.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Bytes of the segments indexed.
    pub fn bytes(&self) -> u64 {
        self.lock().bytes
    }

    /// The records of `keys` the cache holds, in no order. A segment that
    /// has gone (merged by another replica) or reads short gives nothing:
    /// its texts are embedded again.
    pub fn get(&self, keys: &[TextKey]) -> Vec<Record> {
        let index = self.lock();
        let mut wanted: Vec<(TextKey, Location)> = keys
            .iter()
            .filter_map(|key| Some((*key, *index.records.get(key)?)))
            .collect();
        wanted.sort_by_key(|(_, at)| (at.segment, at.offset));
        let mut buffer = Vec::new();
        let mut open: Option<(u32, Format, File)> = None;
        let mut found = Vec::with_capacity(wanted.len());
        for (key, at) in wanted {
            if open
                .as_ref()
                .is_none_or(|(number, _, _)| *number != at.segment)
            {
                let Some((name, format)) = index.segments.get(at.segment as usize) else {
                    continue;
                };
                open = File::open(self.folder.join(name))
                    .ok()
                    .map(|file| (at.segment, *format, file));
            }
            let Some((_, format, file)) = &open else {
                continue;
            };
            buffer.resize(record_bytes(self.dimensions, *format), 0);
            if file.read_exact_at(&mut buffer, at.offset).is_err() {
                continue;
            }
            let record = decode_record(&buffer, self.dimensions, *format);
            if record.key == key {
                found.push(record);
            }
        }
        found
    }

    /// Writes `records` as one new segment (nothing when empty); then, when
    /// the folder is over its bound, keeps only the records of `live`.
    pub fn put(&self, records: &[Record], live: &dyn Fn(&TextKey) -> bool) -> io::Result<()> {
        if records.is_empty() {
            return Ok(());
        }
        self.write_segment(records)?;
        self.refresh()?;
        let over = {
            let index = self.lock();
            index.bytes > self.limit_bytes || index.segments.len() > MAX_SEGMENTS
        };
        if over {
            self.compact(live)?;
        }
        Ok(())
    }

    /// Rewrites the folder as one segment of the records `live` wants.
    pub fn compact(&self, live: &dyn Fn(&TextKey) -> bool) -> io::Result<()> {
        let keys: Vec<TextKey> = self
            .lock()
            .records
            .keys()
            .filter(|key| live(key))
            .copied()
            .collect();
        let mut kept = self.get(&keys);
        kept.sort_by_key(|record| record.key);
        let old: Vec<String> = (self.lock().segments.iter())
            .map(|(name, _)| name.clone())
            .collect();
        let written = if kept.is_empty() {
            None
        } else {
            Some(self.write_segment(&kept)?)
        };
        for name in old {
            if Some(&name) != written.as_ref() {
                let _ = fs::remove_file(self.folder.join(&name));
            }
        }
        *self.lock() = Index::default();
        self.refresh()?;
        Ok(())
    }

    /// Writes one segment under a temporary name, syncs it, and renames it
    /// to the digest of its content; returns that name.
    fn write_segment(&self, records: &[Record]) -> io::Result<String> {
        let size = segment_bytes(records.len(), self.dimensions, Format::Current);
        let mut bytes = Vec::with_capacity(size as usize);
        bytes.extend_from_slice(MAGIC);
        bytes.extend_from_slice(&(self.dimensions as u32).to_le_bytes());
        bytes.extend_from_slice(&(records.len() as u32).to_le_bytes());
        for record in records {
            if record.row.len() != self.dimensions {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    "a vector of the wrong length",
                ));
            }
            bytes.extend_from_slice(&record.key);
            bytes.extend_from_slice(&record.factor.to_le_bytes());
            bytes.extend(record.row.iter().map(|&v| v as u8));
        }
        let digest = Sha256::digest(&bytes);
        bytes.extend_from_slice(&digest);
        let name = format!("{}.seg", hex(&digest[..12]));
        let final_path = self.folder.join(&name);
        if final_path.exists() {
            return Ok(name);
        }
        let temporary = self.folder.join(format!(
            ".tmp-{}-{}",
            std::process::id(),
            hex(&Sha256::digest(format!("{:?}", std::time::SystemTime::now()))[..6])
        ));
        let written = (|| {
            let mut file = File::create(&temporary)?;
            file.write_all(&bytes)?;
            file.sync_all()?;
            fs::rename(&temporary, &final_path)?;
            if let Ok(folder) = File::open(&self.folder) {
                let _ = folder.sync_all();
            }
            Ok(())
        })();
        if written.is_err() {
            let _ = fs::remove_file(&temporary);
        }
        written.map(|()| name)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Index> {
        // A panic while holding the index leaves it whole (every change is
        // one insert): keep using it.
        self.index.lock().unwrap_or_else(|e| e.into_inner())
    }
}

enum SegmentError {
    /// Removed meanwhile (another replica merged it).
    Gone,
    /// Short, long, of another format or failing its checksum.
    Damaged,
}

/// The format and keys of a segment, in order, once its length and
/// checksum hold.
fn read_segment(path: &Path, dimensions: usize) -> Result<(Format, Vec<TextKey>), SegmentError> {
    let mut bytes = Vec::new();
    match File::open(path) {
        Ok(mut file) => {
            if file.read_to_end(&mut bytes).is_err() {
                return Err(SegmentError::Damaged);
            }
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Err(SegmentError::Gone),
        Err(_) => return Err(SegmentError::Damaged),
    }
    if bytes.len() < HEADER + TRAILER {
        return Err(SegmentError::Damaged);
    }
    let format = Format::of(&bytes[..8]).ok_or(SegmentError::Damaged)?;
    let word =
        |at: usize| u32::from_le_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]]);
    let (width, count) = (word(8) as usize, word(12) as usize);
    if width != dimensions || bytes.len() as u64 != segment_bytes(count, dimensions, format) {
        return Err(SegmentError::Damaged);
    }
    let (content, trailer) = bytes.split_at(bytes.len() - TRAILER);
    if Sha256::digest(content).as_slice() != trailer {
        return Err(SegmentError::Damaged);
    }
    let keys = content[HEADER..]
        .chunks_exact(record_bytes(dimensions, format))
        .map(key_of)
        .collect();
    Ok((format, keys))
}

/// The key a record starts with (a longer key of the first format cut).
fn key_of(record: &[u8]) -> TextKey {
    let mut key = [0u8; KEY_BYTES];
    key.copy_from_slice(&record[..KEY_BYTES]);
    key
}

/// A record of `format` (its length checked by the caller).
fn decode_record(bytes: &[u8], dimensions: usize, format: Format) -> Record {
    let at = format.key_bytes();
    let factor = f32::from_le_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]]);
    let row = bytes[at + 4..at + 4 + dimensions]
        .iter()
        .map(|&b| b as i8)
        .collect();
    Record {
        key: key_of(bytes),
        row,
        factor,
    }
}

fn record_bytes(dimensions: usize, format: Format) -> usize {
    format.key_bytes() + 4 + dimensions
}

fn segment_bytes(records: usize, dimensions: usize, format: Format) -> u64 {
    (HEADER + records * record_bytes(dimensions, format) + TRAILER) as u64
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(text: &str, value: i8) -> Record {
        Record {
            key: text_key(text),
            row: vec![value; 4],
            factor: 0.5,
        }
    }

    #[test]
    fn records_written_are_read_back_by_another_opening() {
        let root = tempfile::tempdir().unwrap();
        let (cache, _) = DiskCache::open(root.path(), "abc", 4, DEFAULT_LIMIT_BYTES).unwrap();
        cache
            .put(&[record("a", 1), record("b", 2)], &|_| true)
            .unwrap();
        let (again, refreshed) =
            DiskCache::open(root.path(), "abc", 4, DEFAULT_LIMIT_BYTES).unwrap();
        assert_eq!(refreshed.segments, 1);
        let mut found = again.get(&[text_key("b"), text_key("a"), text_key("c")]);
        found.sort_by_key(|r| r.row[0]);
        assert_eq!(found, [record("a", 1), record("b", 2)]);
        // Another model's folder is another cache.
        let (other, _) = DiskCache::open(root.path(), "def", 4, DEFAULT_LIMIT_BYTES).unwrap();
        assert!(other.is_empty());
    }

    #[test]
    fn a_segment_of_the_first_format_is_read_with_its_keys_cut() {
        let root = tempfile::tempdir().unwrap();
        let (cache, _) = DiskCache::open(root.path(), "abc", 4, DEFAULT_LIMIT_BYTES).unwrap();
        // Written as the first format did: 16-byte keys.
        let mut bytes = b"SZVEC01\n".to_vec();
        bytes.extend_from_slice(&4u32.to_le_bytes());
        bytes.extend_from_slice(&1u32.to_le_bytes());
        bytes.extend_from_slice(&Sha256::digest(b"a")[..16]);
        bytes.extend_from_slice(&0.5f32.to_le_bytes());
        bytes.extend_from_slice(&[1, 1, 1, 1]);
        let digest = Sha256::digest(&bytes);
        bytes.extend_from_slice(&digest);
        fs::write(cache.folder().join("old.seg"), &bytes).unwrap();
        let refreshed = cache.refresh().unwrap();
        assert_eq!((refreshed.segments, refreshed.damaged.len()), (1, 0));
        assert_eq!(cache.get(&[text_key("a")]), [record("a", 1)]);
        // Written again, it takes the current format, and reads the same.
        cache.compact(&|_| true).unwrap();
        let (again, _) = DiskCache::open(root.path(), "abc", 4, DEFAULT_LIMIT_BYTES).unwrap();
        assert_eq!(again.get(&[text_key("a")]), [record("a", 1)]);
        assert!(!again.folder().join("old.seg").exists());
    }

    #[test]
    fn a_truncated_or_altered_segment_is_never_served_and_is_removed() {
        let root = tempfile::tempdir().unwrap();
        let (cache, _) = DiskCache::open(root.path(), "abc", 4, DEFAULT_LIMIT_BYTES).unwrap();
        cache.put(&[record("a", 1)], &|_| true).unwrap();
        cache.put(&[record("b", 2)], &|_| true).unwrap();
        let mut segments: Vec<PathBuf> = fs::read_dir(cache.folder())
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        segments.sort();
        let truncated = &segments[0];
        let length = fs::metadata(truncated).unwrap().len();
        File::options()
            .write(true)
            .open(truncated)
            .unwrap()
            .set_len(length - 7)
            .unwrap();
        let altered = &segments[1];
        let mut bytes = fs::read(altered).unwrap();
        bytes[HEADER + 20] ^= 1;
        fs::write(altered, bytes).unwrap();
        let (again, refreshed) =
            DiskCache::open(root.path(), "abc", 4, DEFAULT_LIMIT_BYTES).unwrap();
        assert_eq!(refreshed.damaged.len(), 2, "{refreshed:?}");
        assert!(again.get(&[text_key("a"), text_key("b")]).is_empty());
        assert_eq!(fs::read_dir(again.folder()).unwrap().count(), 0);
    }

    #[test]
    fn an_interrupted_write_leaves_nothing_that_is_read() {
        let root = tempfile::tempdir().unwrap();
        let (cache, _) = DiskCache::open(root.path(), "abc", 4, DEFAULT_LIMIT_BYTES).unwrap();
        fs::write(cache.folder().join(".tmp-1-0"), b"SZVEC01\nhalf a segment").unwrap();
        let (again, refreshed) =
            DiskCache::open(root.path(), "abc", 4, DEFAULT_LIMIT_BYTES).unwrap();
        assert_eq!(refreshed, Refreshed::default());
        assert!(again.is_empty());
    }

    #[test]
    fn over_its_bound_the_cache_keeps_only_live_records() {
        let root = tempfile::tempdir().unwrap();
        let bound = segment_bytes(2, 4, Format::Current);
        let (cache, _) = DiskCache::open(root.path(), "abc", 4, bound).unwrap();
        let live = |key: &TextKey| *key != text_key("old");
        cache
            .put(&[record("old", 1), record("a", 2)], &live)
            .unwrap();
        assert_eq!(cache.len(), 2);
        cache.put(&[record("b", 3)], &live).unwrap();
        assert_eq!(cache.len(), 2);
        assert!(cache.get(&[text_key("old")]).is_empty());
        assert_eq!(cache.get(&[text_key("a"), text_key("b")]).len(), 2);
        assert_eq!(fs::read_dir(cache.folder()).unwrap().count(), 1);
    }

    #[test]
    fn two_caches_on_one_folder_see_each_others_segments() {
        let root = tempfile::tempdir().unwrap();
        let (first, _) = DiskCache::open(root.path(), "abc", 4, DEFAULT_LIMIT_BYTES).unwrap();
        let (second, _) = DiskCache::open(root.path(), "abc", 4, DEFAULT_LIMIT_BYTES).unwrap();
        first.put(&[record("a", 1)], &|_| true).unwrap();
        second.put(&[record("a", 1)], &|_| true).unwrap();
        second.refresh().unwrap();
        assert_eq!(second.len(), 1);
        assert_eq!(fs::read_dir(second.folder()).unwrap().count(), 1);
    }
}
