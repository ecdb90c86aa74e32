//! A file's bytes kept compressed, so the last good version of every
//! catalog file is at hand whatever the file on disk holds now.
//!
//! Why: a served gateway does not keep parsed documents (a folder of
//! thousands of them would not fit), and a rebuild used to read a document
//! again from disk. When the file, or a file it `$ref`s, was broken in the
//! meantime, its last good content was gone and the document could only
//! keep its old tools, not be rebuilt with a sidecar or fragment that
//! changed since. Deflate at its fastest level keeps catalog JSON and YAML
//! at about a seventh of its size; a build inflates only the files it
//! rebuilds.

use flate2::Compression;
use flate2::read::DeflateDecoder;
use flate2::write::DeflateEncoder;
use std::io::{Read, Write};

/// Compressed bytes and how long they were.
#[derive(Clone)]
pub struct Packed {
    deflated: Box<[u8]>,
    len: usize,
}

impl Packed {
    /// Compresses `bytes`.
    pub fn pack(bytes: &[u8]) -> Packed {
        let mut encoder =
            DeflateEncoder::new(Vec::with_capacity(bytes.len() / 4), Compression::fast());
        // Writing to a Vec cannot fail.
        let deflated = encoder
            .write_all(bytes)
            .and_then(|()| encoder.finish())
            .unwrap_or_default();
        Packed {
            deflated: deflated.into_boxed_slice(),
            len: bytes.len(),
        }
    }

    /// The bytes packed; `None` only if the compressed copy is damaged.
    pub fn unpack(&self) -> Option<Vec<u8>> {
        let mut bytes = Vec::with_capacity(self.len);
        DeflateDecoder::new(&self.deflated[..])
            .read_to_end(&mut bytes)
            .ok()?;
        (bytes.len() == self.len).then_some(bytes)
    }

    /// Bytes held in memory.
    pub fn held(&self) -> usize {
        self.deflated.len()
    }
}

impl std::fmt::Debug for Packed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Packed({} bytes in {})", self.len, self.deflated.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_come_back_as_they_were_and_smaller() {
        let text = "openapi: 3.0.0\npaths:\n  /orders:\n    get: {}\n".repeat(200);
        let packed = Packed::pack(text.as_bytes());
        assert_eq!(packed.unpack().as_deref(), Some(text.as_bytes()));
        assert!(packed.held() * 5 < text.len(), "{packed:?}");
        assert_eq!(Packed::pack(b"").unpack().as_deref(), Some(&b""[..]));
    }
}
