//! The static model: a tokenizer and a table of token vectors, a text's
//! vector the normalised mean of its tokens' (WordLlama-style). No runtime
//! and a lookup per token, but blind to word order and context: the
//! [`Encoder`](crate::encoder::Encoder) finds far more, and is what
//! `scripts/fetch-search-model.sh` fetches. A folder holding
//! `tokenizer.json` and `embeddings.safetensors` (one 2-D tensor, a row
//! per token id) is still served as one.

use std::fmt;

use safetensors::SafeTensors;
use tokenizers::Tokenizer;

/// Characters of a text that are embedded; beyond them a description adds
/// little and costs tokenizer time.
pub const MAX_TEXT_CHARS: usize = 600;

/// Dimensions outside this range are not a model sezzlee can use.
const DIMENSIONS: std::ops::RangeInclusive<usize> = 2..=4096;

/// A loaded static model. Immutable, shared by every build and query.
pub struct StaticModel {
    tokenizer: Tokenizer,
    /// `vectors[id * dimensions..][..dimensions]` is token `id`'s vector,
    /// quantised to `i8` (a quarter of the table's `f32` memory).
    vectors: Vec<i8>,
    scales: Vec<f32>,
    dimensions: usize,
}

impl fmt::Debug for StaticModel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StaticModel")
            .field("tokens", &self.token_count())
            .field("dimensions", &self.dimensions)
            .finish()
    }
}

/// Which of the two files is at fault, and why.
#[derive(Debug)]
pub enum StaticError {
    Tokenizer(String),
    Embeddings(String),
}

impl StaticModel {
    /// The model from the bytes of `tokenizer.json` and
    /// `embeddings.safetensors`.
    pub fn from_bytes(tokenizer: &[u8], embeddings: &[u8]) -> Result<StaticModel, StaticError> {
        let mut tokenizer = Tokenizer::from_bytes(tokenizer)
            .map_err(|e| StaticError::Tokenizer(format!("not a tokenizer: {e}")))?;
        // Texts rarely repeat, and the tokenizer's per-thread cache of
        // tokenised texts would hold tens of megabytes per thread.
        let mut uncached = tokenizer.get_model().clone();
        uncached.resize_cache(0);
        tokenizer.with_model(uncached);
        let (table, dimensions) = token_vectors(embeddings).map_err(StaticError::Embeddings)?;
        let mut vectors = Vec::with_capacity(table.len());
        let mut scales = Vec::with_capacity(table.len() / dimensions);
        for row in table.chunks_exact(dimensions) {
            let (quantised, scale) = crate::quantise::quantise(row);
            vectors.extend_from_slice(&quantised);
            scales.push(scale);
        }
        Ok(StaticModel {
            tokenizer,
            vectors,
            scales,
            dimensions,
        })
    }

    /// Length of every vector.
    pub fn dimensions(&self) -> usize {
        self.dimensions
    }

    /// Rows of the token table.
    pub fn token_count(&self) -> usize {
        self.vectors.len() / self.dimensions.max(1)
    }

    /// The unit vector of `text` (its first [`MAX_TEXT_CHARS`] characters):
    /// the mean of its tokens' vectors, normalised. `None` when the text has
    /// no token the table knows (empty, or only unknown ids).
    pub fn embed(&self, text: &str) -> Option<Vec<f32>> {
        let text = cut(text);
        if text.trim().is_empty() {
            return None;
        }
        let encoding = self.tokenizer.encode(text, false).ok()?;
        self.mean_of(encoding.get_ids().iter().copied())
    }

    /// [`TextModel::embed`], tokenising each word of `text` on its own and
    /// keeping the tokens of the words in `cache`: the texts of a catalog's
    /// tools share most of their words, so a build tokenises each once.
    /// (The tokenizers sezzlee uses never merge across a space, so the
    /// tokens are those of the whole text, spaces collapsed.)
    pub fn embed_cached(&self, text: &str, cache: &mut WordTokens) -> Option<Vec<f32>> {
        let mut ids = Vec::with_capacity(64);
        for word in cut(text).split_whitespace() {
            match cache.words.get(word) {
                Some(known) => ids.extend_from_slice(known),
                None => {
                    let encoding = self.tokenizer.encode(word, false).ok()?;
                    let tokens = encoding.get_ids();
                    ids.extend_from_slice(tokens);
                    if cache.words.len() < WordTokens::MAX_WORDS {
                        cache.words.insert(word.into(), tokens.into());
                    }
                }
            }
        }
        self.mean_of(ids.into_iter())
    }

    /// The normalised sum of the vectors of `ids` (ids beyond the table
    /// are skipped).
    fn mean_of(&self, ids: impl Iterator<Item = u32>) -> Option<Vec<f32>> {
        let mut sum = vec![0f32; self.dimensions];
        let mut counted = 0usize;
        for id in ids {
            let start = id as usize * self.dimensions;
            let (Some(row), Some(&scale)) = (
                self.vectors.get(start..start + self.dimensions),
                self.scales.get(id as usize),
            ) else {
                continue;
            };
            for (total, &value) in sum.iter_mut().zip(row) {
                *total += f32::from(value) * scale;
            }
            counted += 1;
        }
        // The mean and the sum point the same way: normalising is enough.
        let norm = sum.iter().map(|v| v * v).sum::<f32>().sqrt();
        if counted == 0 || !norm.is_normal() {
            return None;
        }
        sum.iter_mut().for_each(|v| *v /= norm);
        Some(sum)
    }
}

/// The first [`MAX_TEXT_CHARS`] characters of `text`.
fn cut(text: &str) -> &str {
    match text.char_indices().nth(MAX_TEXT_CHARS) {
        Some((end, _)) => &text[..end],
        None => text,
    }
}

/// Tokens of words already met, for [`TextModel::embed_cached`]. Bounded:
/// past [`WordTokens::MAX_WORDS`] words, new ones are tokenised each time.
#[derive(Default)]
pub struct WordTokens {
    words: std::collections::HashMap<Box<str>, Box<[u32]>>,
}

impl WordTokens {
    /// About 20 MB of words and tokens at most.
    pub const MAX_WORDS: usize = 200_000;
}

/// The one 2-D tensor of a safetensors file as f32 rows, and its width.
fn token_vectors(bytes: &[u8]) -> Result<(Vec<f32>, usize), String> {
    let tensors = SafeTensors::deserialize(bytes).map_err(|e| format!("not safetensors: {e}"))?;
    let names = tensors.names();
    let [name] = names.as_slice() else {
        return Err(format!(
            "holds {} tensors; a model has exactly one, the token table",
            names.len()
        ));
    };
    let tensor = tensors.tensor(name).map_err(|e| e.to_string())?;
    let &[rows, dimensions] = tensor.shape() else {
        return Err(format!(
            "tensor {name} has shape {:?}; the token table is 2-D (tokens × dimensions)",
            tensor.shape()
        ));
    };
    if rows == 0 || !DIMENSIONS.contains(&dimensions) {
        return Err(format!(
            "tensor {name} is {rows} × {dimensions}; expected at least one token of {} to {} dimensions",
            DIMENSIONS.start(),
            DIMENSIONS.end()
        ));
    }
    let vectors = crate::tensor::values(name, &tensor)?;
    if vectors.len() != rows * dimensions {
        return Err(format!(
            "tensor {name} does not hold {rows} × {dimensions} finite numbers"
        ));
    }
    Ok((vectors, dimensions))
}
