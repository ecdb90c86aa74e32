//! The sentence encoder: a BERT-family transformer (all-MiniLM-L6-v2 by
//! default) run in process on the CPU, turning a text into one unit vector
//! that stands for what the whole sentence means.
//!
//! A static model averages token vectors and so cannot tell "refund the
//! charge" from "charge the refund"; a contextual encoder reads each word
//! in its sentence, and on agents' requests it finds the right operation
//! far more often (`tests/data/README.md`). It is written here, on its
//! own matrix products (`product`), rather than run by a general runtime:
//! on a short query a general runtime's overhead per operation dominates
//! (candle), or it could not load the model (tract, on the int8 ONNX
//! export), while this forward pass — the BERT encoder and nothing else:
//! embeddings, self-attention, feed-forward, layer norms, mean pooling —
//! reads the model's own safetensors weights and answers a query in a few
//! milliseconds (the figures: `benches/README.md`, `sentence_search`). A text is encoded
//! alone (no padding, so no mask); a batch runs its texts on rayon's
//! threads, and a query its products' halves on two of them.

use std::fmt;

use half::f16;
use safetensors::SafeTensors;
use serde_json::Value;
use tokenizers::Tokenizer;

use crate::product::{self, Output, PackedMatrix};

/// Tokens a tool text is cut to (its first words carry its meaning: name,
/// summary, the start of its description); a query is cut likewise.
pub const MAX_TOKENS: usize = 128;

/// The encoder's shape, from the model's `config.json`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Shape {
    pub hidden: usize,
    pub heads: usize,
    pub intermediate: usize,
    pub layers: usize,
    pub vocabulary: usize,
    pub positions: usize,
    pub epsilon: f32,
}

/// One transformer layer's weights, laid out for `x · W` (input rows
/// times a row-major `[in, out]` matrix).
struct Layer {
    /// Query, key and value projections side by side: `[hidden, 3 × hidden]`.
    qkv: PackedMatrix,
    qkv_bias: Vec<f32>,
    attention_out: PackedMatrix,
    attention_out_bias: Vec<f32>,
    attention_norm: Norm,
    up: PackedMatrix,
    up_bias: Vec<f32>,
    down: PackedMatrix,
    down_bias: Vec<f32>,
    output_norm: Norm,
}

struct Norm {
    weight: Vec<f32>,
    bias: Vec<f32>,
}

/// A loaded encoder. Immutable; shared by every build and query.
pub struct Encoder {
    tokenizer: Tokenizer,
    shape: Shape,
    /// The token table in half precision (a lookup per token; half the
    /// memory of the rest of the model).
    words: Vec<f16>,
    /// Position vectors plus the first token type's (every text is one
    /// segment).
    positions: Vec<f32>,
    embedding_norm: Norm,
    layers: Vec<Layer>,
}

impl fmt::Debug for Encoder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Encoder")
            .field("shape", &self.shape)
            .finish()
    }
}

/// Why a model's files do not make an encoder, for the message naming the
/// file.
#[derive(Debug)]
pub enum EncoderError {
    Config(String),
    Weights(String),
    Tokenizer(String),
}

impl Encoder {
    /// An encoder from the bytes of `config.json`, `model.safetensors` and
    /// `tokenizer.json`.
    pub fn from_bytes(
        config: &[u8],
        weights: &[u8],
        tokenizer: &[u8],
    ) -> Result<Encoder, EncoderError> {
        let shape = shape_of(config).map_err(EncoderError::Config)?;
        let mut tokenizer = Tokenizer::from_bytes(tokenizer)
            .map_err(|e| EncoderError::Tokenizer(format!("not a tokenizer: {e}")))?;
        // Texts are encoded one at a time and cut here, not by the file's
        // settings (sentence-transformers' files pad every text to 128).
        tokenizer.with_padding(None);
        tokenizer
            .with_truncation(None)
            .map_err(|e| EncoderError::Tokenizer(e.to_string()))?;
        let mut uncached = tokenizer.get_model().clone();
        uncached.resize_cache(0);
        tokenizer.with_model(uncached);
        let tensors = SafeTensors::deserialize(weights)
            .map_err(|e| EncoderError::Weights(format!("not safetensors: {e}")))?;
        let weights = Weights {
            tensors: &tensors,
            prefix: if tensors.names().iter().any(|n| n.starts_with("bert.")) {
                "bert."
            } else {
                ""
            },
        };
        Encoder::assemble(tokenizer, shape, &weights).map_err(EncoderError::Weights)
    }

    fn assemble(tokenizer: Tokenizer, shape: Shape, weights: &Weights) -> Result<Encoder, String> {
        let h = shape.hidden;
        let words = weights.matrix("embeddings.word_embeddings.weight", shape.vocabulary, h)?;
        let mut positions =
            weights.matrix("embeddings.position_embeddings.weight", shape.positions, h)?;
        let types = weights.matrix("embeddings.token_type_embeddings.weight", 0, h)?;
        for row in positions.chunks_exact_mut(h) {
            for (value, extra) in row.iter_mut().zip(&types[..h]) {
                *value += extra;
            }
        }
        let embedding_norm = weights.norm("embeddings.LayerNorm", h)?;
        let mut layers = Vec::with_capacity(shape.layers);
        for l in 0..shape.layers {
            let at = |name: &str| format!("encoder.layer.{l}.{name}");
            let query = weights.linear(&at("attention.self.query"), h, h)?;
            let key = weights.linear(&at("attention.self.key"), h, h)?;
            let value = weights.linear(&at("attention.self.value"), h, h)?;
            let mut qkv = vec![0f32; h * 3 * h];
            for row in 0..h {
                for (part, (matrix, _)) in [&query, &key, &value].into_iter().enumerate() {
                    qkv[row * 3 * h + part * h..][..h].copy_from_slice(&matrix[row * h..][..h]);
                }
            }
            let qkv_bias = [&query.1, &key.1, &value.1]
                .into_iter()
                .flatten()
                .copied()
                .collect();
            let (attention_out, attention_out_bias) =
                weights.linear(&at("attention.output.dense"), h, h)?;
            let (up, up_bias) = weights.linear(&at("intermediate.dense"), h, shape.intermediate)?;
            let (down, down_bias) = weights.linear(&at("output.dense"), shape.intermediate, h)?;
            let pack = |values: &[f32], inputs: usize, outputs: usize| {
                PackedMatrix::pack(values, inputs, outputs)
                    .ok_or_else(|| format!("layer {l}: a weight matrix of the wrong size"))
            };
            layers.push(Layer {
                qkv: pack(&qkv, h, 3 * h)?,
                qkv_bias,
                attention_out: pack(&attention_out, h, h)?,
                attention_out_bias,
                attention_norm: weights.norm(&at("attention.output.LayerNorm"), h)?,
                up: pack(&up, h, shape.intermediate)?,
                up_bias,
                down: pack(&down, shape.intermediate, h)?,
                down_bias,
                output_norm: weights.norm(&at("output.LayerNorm"), h)?,
            });
        }
        Ok(Encoder {
            tokenizer,
            shape,
            words: words.into_iter().map(f16::from_f32).collect(),
            positions,
            embedding_norm,
            layers,
        })
    }

    /// Length of every vector.
    pub fn dimensions(&self) -> usize {
        self.shape.hidden
    }

    /// The token ids of `text` with the model's special tokens, cut to
    /// [`MAX_TOKENS`] (the closing token kept).
    pub fn token_ids(&self, text: &str) -> Option<Vec<u32>> {
        let encoding = self.tokenizer.encode(text, true).ok()?;
        let mut ids = encoding.get_ids().to_vec();
        let limit = MAX_TOKENS.min(self.shape.positions);
        if ids.len() > limit {
            let last = *ids.last()?;
            ids.truncate(limit - 1);
            ids.push(last);
        }
        Some(ids)
    }

    /// The unit vector of `text`: the mean of its tokens' last hidden
    /// states, normalised. `None` for a text with no token.
    pub fn embed(&self, text: &str) -> Option<Vec<f32>> {
        self.embed_on(text, Threads::One)
    }

    /// [`Encoder::embed`] for one text someone waits for (a query): its
    /// larger products are split over two of rayon's threads. A batch of
    /// tool texts keeps one thread a text ([`Encoder::embed`]): its texts
    /// already run side by side, and splitting would only add hand-offs.
    pub fn embed_waited_for(&self, text: &str) -> Option<Vec<f32>> {
        // The whole pass on a pool thread: each split product then hands
        // half over within the pool, not from a thread outside it that
        // would block and be woken 24 times a pass.
        rayon::scope(|_| self.embed_on(text, Threads::Split))
    }

    fn embed_on(&self, text: &str, threads: Threads) -> Option<Vec<f32>> {
        if text.trim().is_empty() {
            return None;
        }
        let ids = self.token_ids(text)?;
        self.forward_on(&ids, threads)
    }

    fn forward_on(&self, ids: &[u32], threads: Threads) -> Option<Vec<f32>> {
        let h = self.shape.hidden;
        let n = ids.len().min(self.shape.positions);
        if n == 0 {
            return None;
        }
        let mut x = vec![0f32; n * h];
        for (t, &id) in ids[..n].iter().enumerate() {
            let id = (id as usize).min(self.shape.vocabulary - 1);
            let word = &self.words[id * h..][..h];
            let position = &self.positions[t * h..][..h];
            for ((out, w), p) in x[t * h..][..h].iter_mut().zip(word).zip(position) {
                *out = w.to_f32() + p;
            }
        }
        layer_norm(&mut x, &self.embedding_norm, self.shape.epsilon);
        let mut scratch = Scratch::new(n, &self.shape);
        for layer in &self.layers {
            self.layer(layer, &mut x, n, &mut scratch, threads);
        }
        let mut pooled = vec![0f32; h];
        for row in x.chunks_exact(h) {
            for (total, v) in pooled.iter_mut().zip(row) {
                *total += v;
            }
        }
        let norm = pooled.iter().map(|v| v * v).sum::<f32>().sqrt();
        if !norm.is_normal() {
            return None;
        }
        pooled.iter_mut().for_each(|v| *v /= norm);
        Some(pooled)
    }

    fn layer(&self, layer: &Layer, x: &mut [f32], n: usize, s: &mut Scratch, threads: Threads) {
        let h = self.shape.hidden;
        let heads = self.shape.heads;
        let width = h / heads;
        linear(x, n, &layer.qkv, &layer.qkv_bias, &mut s.qkv, threads);
        let scale = 1.0 / (width as f32).sqrt();
        s.context.iter_mut().for_each(|v| *v = 0.0);
        for head in 0..heads {
            for i in 0..n {
                let query = &s.qkv[i * 3 * h + head * width..][..width];
                let mut largest = f32::NEG_INFINITY;
                for j in 0..n {
                    let key = &s.qkv[j * 3 * h + h + head * width..][..width];
                    let score = dot(query, key) * scale;
                    s.scores[j] = score;
                    largest = largest.max(score);
                }
                let mut total = 0f32;
                for score in &mut s.scores[..n] {
                    *score = (*score - largest).exp();
                    total += *score;
                }
                let context = &mut s.context[i * h + head * width..][..width];
                for j in 0..n {
                    let weight = s.scores[j] / total;
                    let value = &s.qkv[j * 3 * h + 2 * h + head * width..][..width];
                    for (c, v) in context.iter_mut().zip(value) {
                        *c += weight * v;
                    }
                }
            }
        }
        linear(
            &s.context,
            n,
            &layer.attention_out,
            &layer.attention_out_bias,
            &mut s.attended,
            threads,
        );
        for (a, v) in s.attended.iter_mut().zip(x.iter()) {
            *a += v;
        }
        layer_norm(&mut s.attended, &layer.attention_norm, self.shape.epsilon);
        linear(
            &s.attended,
            n,
            &layer.up,
            &layer.up_bias,
            &mut s.up,
            threads,
        );
        s.up.iter_mut().for_each(|v| *v = gelu(*v));
        linear(&s.up, n, &layer.down, &layer.down_bias, x, threads);
        for (out, a) in x.iter_mut().zip(&s.attended) {
            *out += a;
        }
        layer_norm(x, &layer.output_norm, self.shape.epsilon);
    }
}

/// Buffers of one forward pass.
struct Scratch {
    qkv: Vec<f32>,
    context: Vec<f32>,
    attended: Vec<f32>,
    up: Vec<f32>,
    scores: Vec<f32>,
}

impl Scratch {
    fn new(n: usize, shape: &Shape) -> Scratch {
        Scratch {
            qkv: vec![0.0; n * 3 * shape.hidden],
            context: vec![0.0; n * shape.hidden],
            attended: vec![0.0; n * shape.hidden],
            up: vec![0.0; n * shape.intermediate],
            scores: vec![0.0; n],
        }
    }
}

/// How a forward pass uses threads: one, or its products split in two.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Threads {
    One,
    Split,
}

/// Outputs of a product below which splitting it costs more than it saves.
const SPLIT_OUTPUTS: usize = 256;

/// `out[n, out] = x[n, in] · w[in, out] + bias`; with [`Threads::Split`],
/// the output strips in two halves on two of rayon's threads.
fn linear(x: &[f32], n: usize, w: &PackedMatrix, bias: &[f32], out: &mut [f32], threads: Threads) {
    let outputs = w.outputs();
    // Shapes are checked when the model loads; these hold for every text.
    assert!(
        x.len() >= n * w.inputs() && bias.len() == outputs && out.len() >= n * outputs,
        "a product of the wrong shape"
    );
    for row in out[..n * outputs].chunks_exact_mut(outputs) {
        row.copy_from_slice(bias);
    }
    let output = Output {
        values: out.as_mut_ptr(),
        n,
        outputs,
    };
    let strips = w.strips();
    if threads == Threads::Split && outputs >= SPLIT_OUTPUTS {
        let half = strips / 2;
        let halves = SharedOutput(output);
        // SAFETY: `x` and `out` hold what the assert says; the halves
        // write disjoint strips of `out`, which `linear` borrows
        // throughout.
        rayon::join(
            || unsafe { product::add_strips(x, w, halves.get(), 0..half) },
            || unsafe { product::add_strips(x, w, halves.get(), half..strips) },
        );
    } else {
        // SAFETY: as above, on one thread.
        unsafe { product::add_strips(x, w, output, 0..strips) };
    }
}

/// A product's [`Output`], shared by the two threads that write its
/// halves.
struct SharedOutput(Output);

// SAFETY: lives within `linear`, which holds the borrow of `out`; its two
// threads write disjoint strips.
unsafe impl Sync for SharedOutput {}

impl SharedOutput {
    fn get(&self) -> Output {
        self.0
    }
}

fn dot(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

fn layer_norm(x: &mut [f32], norm: &Norm, epsilon: f32) {
    let h = norm.weight.len();
    for row in x.chunks_exact_mut(h) {
        let mean = row.iter().sum::<f32>() / h as f32;
        let variance = row.iter().map(|v| (v - mean) * (v - mean)).sum::<f32>() / h as f32;
        let inverse = 1.0 / (variance + epsilon).sqrt();
        for ((v, w), b) in row.iter_mut().zip(&norm.weight).zip(&norm.bias) {
            *v = (*v - mean) * inverse * w + b;
        }
    }
}

/// BERT's GELU, `x·Φ(x)`, with the error function to within 1.5e-7.
fn gelu(x: f32) -> f32 {
    0.5 * x * (1.0 + erf(x / std::f32::consts::SQRT_2))
}

/// Abramowitz and Stegun 7.1.26.
fn erf(x: f32) -> f32 {
    let sign = x.signum();
    let x = x.abs();
    let t = 1.0 / (1.0 + 0.327_591_1 * x);
    let poly = t
        * (0.254_829_6
            + t * (-0.284_496_74 + t * (1.421_413_7 + t * (-1.453_152_1 + t * 1.061_405_4))));
    sign * (1.0 - poly * (-x * x).exp())
}

/// The model's shape from `config.json`, refused unless it is a BERT the
/// forward pass computes exactly.
fn shape_of(config: &[u8]) -> Result<Shape, String> {
    let config: Value = serde_json::from_slice(config).map_err(|e| format!("not JSON: {e}"))?;
    let number = |key: &str| -> Result<usize, String> {
        config
            .get(key)
            .and_then(Value::as_u64)
            .map(|n| n as usize)
            .filter(|&n| n > 0 && n <= 1 << 20)
            .ok_or_else(|| format!("\"{key}\" is missing or not a positive whole number"))
    };
    let text = |key: &str, default: &str| -> String {
        config
            .get(key)
            .and_then(Value::as_str)
            .unwrap_or(default)
            .to_string()
    };
    if text("model_type", "bert") != "bert" {
        return Err(format!(
            "model_type {:?}: only BERT encoders are run",
            text("model_type", "")
        ));
    }
    if text("hidden_act", "gelu") != "gelu" {
        return Err(format!(
            "hidden_act {:?}: only \"gelu\" is run",
            text("hidden_act", "")
        ));
    }
    if text("position_embedding_type", "absolute") != "absolute" {
        return Err("only absolute position embeddings are run".into());
    }
    let shape = Shape {
        hidden: number("hidden_size")?,
        heads: number("num_attention_heads")?,
        intermediate: number("intermediate_size")?,
        layers: number("num_hidden_layers")?,
        vocabulary: number("vocab_size")?,
        positions: number("max_position_embeddings")?,
        epsilon: config
            .get("layer_norm_eps")
            .and_then(Value::as_f64)
            .unwrap_or(1e-12) as f32,
    };
    if !shape.hidden.is_multiple_of(shape.heads) || shape.hidden > 4096 || shape.layers > 64 {
        return Err(format!(
            "hidden_size {} with {} heads and {} layers is not a shape sezzlee runs",
            shape.hidden, shape.heads, shape.layers
        ));
    }
    Ok(shape)
}

/// The weights of a safetensors file, by BERT's names.
struct Weights<'a> {
    tensors: &'a SafeTensors<'a>,
    prefix: &'static str,
}

impl Weights<'_> {
    /// Tensor `name` as f32, checked to hold `rows` × `columns` numbers
    /// (`rows` 0: any number of rows of `columns`).
    fn matrix(&self, name: &str, rows: usize, columns: usize) -> Result<Vec<f32>, String> {
        let full = format!("{}{name}", self.prefix);
        let tensor = self
            .tensors
            .tensor(&full)
            .map_err(|_| format!("has no tensor {full}"))?;
        let shape = tensor.shape();
        let (found_rows, found_columns) = match *shape {
            [r, c] => (r, c),
            [c] => (1, c),
            _ => return Err(format!("tensor {full} has shape {shape:?}")),
        };
        if found_columns != columns || (rows != 0 && found_rows != rows) {
            return Err(format!(
                "tensor {full} has shape {shape:?}; expected [{rows}, {columns}]"
            ));
        }
        let values = crate::tensor::values(&full, &tensor)?;
        if values.len() != found_rows * found_columns {
            return Err(format!(
                "tensor {full} does not hold the numbers of its shape"
            ));
        }
        Ok(values)
    }

    /// A dense layer's weight, transposed to `[inputs, outputs]`, and its
    /// bias.
    fn linear(
        &self,
        name: &str,
        inputs: usize,
        outputs: usize,
    ) -> Result<(Vec<f32>, Vec<f32>), String> {
        let weight = self.matrix(&format!("{name}.weight"), outputs, inputs)?;
        let bias = self.matrix(&format!("{name}.bias"), 1, outputs)?;
        let mut transposed = vec![0f32; inputs * outputs];
        for o in 0..outputs {
            for i in 0..inputs {
                transposed[i * outputs + o] = weight[o * inputs + i];
            }
        }
        Ok((transposed, bias))
    }

    fn norm(&self, name: &str, width: usize) -> Result<Norm, String> {
        let weight = self
            .matrix(&format!("{name}.weight"), 1, width)
            .or_else(|_| self.matrix(&format!("{name}.gamma"), 1, width))?;
        let bias = self
            .matrix(&format!("{name}.bias"), 1, width)
            .or_else(|_| self.matrix(&format!("{name}.beta"), 1, width))?;
        Ok(Norm { weight, bias })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_product_split_over_two_threads_equals_one_on_one() {
        let (n, inputs, outputs) = (5, 7, 2 * SPLIT_OUTPUTS + 24);
        let x: Vec<f32> = (0..n * inputs).map(|i| (i as f32 * 0.37).sin()).collect();
        let w: Vec<f32> = (0..inputs * outputs)
            .map(|i| (i as f32 * 0.11).cos())
            .collect();
        let bias: Vec<f32> = (0..outputs).map(|i| i as f32 * 0.01).collect();
        let mut one = vec![0f32; n * outputs];
        let mut split = vec![1f32; n * outputs];
        let packed = PackedMatrix::pack(&w, inputs, outputs).unwrap();
        linear(&x, n, &packed, &bias, &mut one, Threads::One);
        linear(&x, n, &packed, &bias, &mut split, Threads::Split);
        let expected: f32 = (0..inputs)
            .map(|k| x[2 * inputs + k] * w[k * outputs + outputs - 1])
            .sum::<f32>()
            + bias[outputs - 1];
        assert!((one[2 * outputs + outputs - 1] - expected).abs() < 1e-4);
        for (a, b) in one.iter().zip(&split) {
            assert!((a - b).abs() <= 1e-5 * a.abs().max(1.0), "{a} {b}");
        }
    }

    #[test]
    fn erf_and_gelu_match_known_values() {
        assert!((erf(0.5) - 0.520_499_9).abs() < 1e-6);
        assert!((erf(-1.0) + 0.842_700_8).abs() < 1e-6);
        assert!((gelu(1.0) - 0.841_344_7).abs() < 1e-5);
        assert_eq!(gelu(0.0), 0.0);
    }

    #[test]
    fn configs_other_than_a_bert_encoder_are_refused_by_name() {
        let refused = shape_of(br#"{"model_type":"gpt2"}"#).unwrap_err();
        assert!(refused.contains("gpt2"), "{refused}");
        let missing = shape_of(br#"{"model_type":"bert","hidden_act":"gelu"}"#).unwrap_err();
        assert!(missing.contains("hidden_size"), "{missing}");
        assert!(shape_of(b"not json").unwrap_err().starts_with("not JSON"));
    }
}
