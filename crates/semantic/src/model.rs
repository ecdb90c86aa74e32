//! The search model a folder holds, checked file by file against the
//! digests it was fetched with.
//!
//! `scripts/fetch-search-model.sh DEST` writes the model's files and a
//! `SHA256SUMS` listing each with the digest it pins. Loading reads that
//! list first and refuses a folder where a listed file is missing or has
//! another digest, naming the file: a half-copied volume or a swapped file
//! never serves a ranking nobody measured. What the listed files are says
//! which kind of model it is: a sentence [`Encoder`] (`config.json`,
//! `model.safetensors`, `tokenizer.json`) or a [`StaticModel`]
//! (`tokenizer.json`, `embeddings.safetensors`).

use std::fmt;
use std::path::{Path, PathBuf};

use rayon::prelude::*;
use sha2::{Digest, Sha256};

use crate::encoder::{Encoder, EncoderError};
use crate::static_model::{StaticError, StaticModel, WordTokens};

/// The list of the folder's files and their SHA-256.
pub const SUMS_FILE: &str = "SHA256SUMS";
pub const TOKENIZER_FILE: &str = "tokenizer.json";
pub const CONFIG_FILE: &str = "config.json";
pub const WEIGHTS_FILE: &str = "model.safetensors";
pub const EMBEDDINGS_FILE: &str = "embeddings.safetensors";

/// A loaded model. Immutable, shared by every build and query.
pub struct TextModel {
    kind: Kind,
    /// SHA-256 of the `SHA256SUMS` list (so of every file): which model a
    /// log line, `/status` or the vector cache speaks of.
    digest: String,
    /// Each file and its SHA-256, as `SHA256SUMS` lists (and loading
    /// checked) them.
    file_digests: Vec<(String, String)>,
}

enum Kind {
    Encoder(Box<Encoder>),
    Static(Box<StaticModel>),
}

impl fmt::Debug for TextModel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TextModel")
            .field("kind", &self.kind_name())
            .field("dimensions", &self.dimensions())
            .field("digest", &self.digest)
            .finish()
    }
}

/// Why a model folder could not be used, naming the file at fault.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelError {
    pub path: PathBuf,
    pub reason: String,
}

impl fmt::Display for ModelError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "search model {}: {}", self.path.display(), self.reason)
    }
}

impl std::error::Error for ModelError {}

impl TextModel {
    /// Reads and checks the model in `folder`.
    pub fn load(folder: &Path) -> Result<TextModel, ModelError> {
        let fail = |name: &str, reason: String| ModelError {
            path: folder.join(name),
            reason,
        };
        let sums = std::fs::read(folder.join(SUMS_FILE)).map_err(|e| {
            fail(
                SUMS_FILE,
                format!(
                    "{e}; a model folder lists its files and their SHA-256 there \
                     (scripts/fetch-search-model.sh writes it)"
                ),
            )
        })?;
        let listed = parse_sums(&sums).map_err(|reason| fail(SUMS_FILE, reason))?;
        let mut files: Vec<(String, Vec<u8>)> = Vec::with_capacity(listed.len());
        for (name, expected) in &listed {
            let bytes = std::fs::read(folder.join(name)).map_err(|e| fail(name, e.to_string()))?;
            let found = hex(&Sha256::digest(&bytes));
            if &found != expected {
                return Err(fail(
                    name,
                    format!(
                        "has SHA-256 {found}, but {SUMS_FILE} pins {expected}; fetch the model again"
                    ),
                ));
            }
            files.push((name.clone(), bytes));
        }
        let file = |name: &str| {
            files
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, b)| b.as_slice())
        };
        let kind = match (
            file(CONFIG_FILE),
            file(WEIGHTS_FILE),
            file(TOKENIZER_FILE),
            file(EMBEDDINGS_FILE),
        ) {
            (Some(config), Some(weights), Some(tokenizer), _) => {
                let encoder =
                    Encoder::from_bytes(config, weights, tokenizer).map_err(|e| match e {
                        EncoderError::Config(reason) => fail(CONFIG_FILE, reason),
                        EncoderError::Weights(reason) => fail(WEIGHTS_FILE, reason),
                        EncoderError::Tokenizer(reason) => fail(TOKENIZER_FILE, reason),
                    })?;
                Kind::Encoder(Box::new(encoder))
            }
            (_, _, Some(tokenizer), Some(embeddings)) => {
                let model =
                    StaticModel::from_bytes(tokenizer, embeddings).map_err(|e| match e {
                        StaticError::Tokenizer(reason) => fail(TOKENIZER_FILE, reason),
                        StaticError::Embeddings(reason) => fail(EMBEDDINGS_FILE, reason),
                    })?;
                Kind::Static(Box::new(model))
            }
            _ => {
                return Err(fail(
                    SUMS_FILE,
                    format!(
                        "lists neither an encoder ({CONFIG_FILE}, {WEIGHTS_FILE}, {TOKENIZER_FILE}) \
                         nor a static model ({TOKENIZER_FILE}, {EMBEDDINGS_FILE})"
                    ),
                ));
            }
        };
        Ok(TextModel {
            kind,
            digest: hex(&Sha256::digest(&sums)),
            file_digests: listed,
        })
    }

    /// `"encoder"` or `"static"`.
    pub fn kind_name(&self) -> &'static str {
        match self.kind {
            Kind::Encoder(_) => "encoder",
            Kind::Static(_) => "static",
        }
    }

    /// Whether the model reads words in context (an encoder): a sentence
    /// is then embedded as written, stopwords and order included.
    pub fn is_contextual(&self) -> bool {
        matches!(self.kind, Kind::Encoder(_))
    }

    /// Length of every vector.
    pub fn dimensions(&self) -> usize {
        match &self.kind {
            Kind::Encoder(encoder) => encoder.dimensions(),
            Kind::Static(model) => model.dimensions(),
        }
    }

    /// SHA-256 (hex) of the model's file list.
    pub fn digest(&self) -> &str {
        &self.digest
    }

    /// Each file's name and SHA-256 (hex), as pinned.
    pub fn file_digests(&self) -> &[(String, String)] {
        &self.file_digests
    }

    /// The unit vector of `text`; `None` when it has none (empty, or only
    /// tokens the model does not know).
    pub fn embed(&self, text: &str) -> Option<Vec<f32>> {
        match &self.kind {
            Kind::Encoder(encoder) => encoder.embed(text),
            Kind::Static(model) => model.embed(text),
        }
    }

    /// [`TextModel::embed`] for a text someone waits for (a query): an
    /// encoder splits its products over two threads.
    pub fn embed_waited_for(&self, text: &str) -> Option<Vec<f32>> {
        match &self.kind {
            Kind::Encoder(encoder) => encoder.embed_waited_for(text),
            Kind::Static(model) => model.embed(text),
        }
    }

    /// The vectors of `texts`, in order, computed on rayon's threads.
    pub fn embed_all(&self, texts: &[String]) -> Vec<Option<Vec<f32>>> {
        match &self.kind {
            Kind::Encoder(encoder) => texts.par_iter().map(|text| encoder.embed(text)).collect(),
            Kind::Static(model) => texts
                .par_iter()
                .map_init(WordTokens::default, |words, text| {
                    model.embed_cached(text, words)
                })
                .collect(),
        }
    }
}

/// `SHA256SUMS` as `sha256sum` writes it: `<64 hex>  <file name>` a line.
fn parse_sums(bytes: &[u8]) -> Result<Vec<(String, String)>, String> {
    let text = std::str::from_utf8(bytes).map_err(|_| "is not text".to_string())?;
    let mut listed = Vec::new();
    for (number, line) in text.lines().enumerate() {
        let line = line.trim_end();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (digest, name) = line
            .split_once(char::is_whitespace)
            .map(|(d, n)| (d, n.trim_start().trim_start_matches('*')))
            .ok_or_else(|| format!("line {}: expected '<sha256>  <file>'", number + 1))?;
        let plain_name =
            !name.is_empty() && !name.contains('/') && !name.contains('\\') && name != "..";
        if digest.len() != 64 || !digest.bytes().all(|b| b.is_ascii_hexdigit()) || !plain_name {
            return Err(format!("line {}: expected '<sha256>  <file>'", number + 1));
        }
        listed.push((name.to_string(), digest.to_ascii_lowercase()));
    }
    if listed.is_empty() {
        return Err("lists no file".into());
    }
    Ok(listed)
}

pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sums_are_read_as_sha256sum_writes_them_and_bad_lines_refused() {
        let digest = "a".repeat(64);
        let listed = parse_sums(
            format!("{digest}  tokenizer.json\n{digest} *model.safetensors\n").as_bytes(),
        )
        .unwrap();
        assert_eq!(listed[1].0, "model.safetensors");
        assert!(parse_sums(b"").unwrap_err().contains("no file"));
        assert!(
            parse_sums(format!("{digest}  ../etc/passwd").as_bytes())
                .unwrap_err()
                .starts_with("line 1")
        );
        assert!(
            parse_sums(b"abc  tokenizer.json")
                .unwrap_err()
                .starts_with("line 1")
        );
    }
}
