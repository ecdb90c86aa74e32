//! Tool vectors: every tool of a catalog as one row of a contiguous table
//! that a query scans, filled as the tools' texts are embedded.
//!
//! A query compares its vector with every tool's, so the table is laid out
//! for that scan: one row of `i8` per tool (a quarter of `f32`'s memory and
//! bandwidth; 384 bytes for the default encoder) with the factor that
//! turns the row's integer dot product back into a cosine, and the key of
//! the text it was embedded from. A table is *assembled* without embedding
//! anything: a tool whose text an earlier table or the disk cache already
//! embedded takes that row, and the others are returned as pending work,
//! their factor 0 (no vector: the meaning ranking passes them by) until a
//! [`ToolVectors::filled`] copy carries them. A whole scan of 125,000 rows
//! costs about a millisecond, so every query reads every row.

use std::cmp::Ordering;
use std::collections::{BinaryHeap, HashMap};
use std::sync::Arc;

use sezzlee_catalog::{Catalog, Tool};

use crate::cache::{DiskCache, Record, TextKey, text_key};
use crate::model::TextModel;
use crate::quantise::quantise;
use crate::text::tool_text;

/// Rows a scan scores at a time (16 KB of dot products).
const SCAN_BLOCK: usize = 4096;

/// Tools from which [`ToolVectors::nearest`] scans in two halves at once
/// (below, handing half over costs about what it saves).
const SPLIT_SCAN_TOOLS: usize = 32_768;

/// Largest magnitude of a quantised query component: small enough that a
/// 4,096-dimension dot product of `i16 × i8` stays within `i32`.
const QUERY_SCALE: f32 = 2047.0;

/// The tools of one catalog as vectors of one model.
#[derive(Clone)]
pub struct ToolVectors {
    model: Arc<TextModel>,
    dimensions: usize,
    /// Each tool's text key: what a row is reused and cached by.
    keys: Vec<TextKey>,
    /// `rows[tool * dimensions..][..dimensions]`: the tool's unit vector,
    /// quantised to `i8` (zero while it has none).
    rows: Vec<i8>,
    /// Per tool, what a row's dot product is multiplied by to be a cosine
    /// (with the query's own factor); 0 while the tool has no vector.
    factors: Vec<f32>,
    /// Tools with a vector.
    embedded: usize,
}

/// Texts [`ToolVectors::build`] embeds between two writes to the cache.
const BUILD_CHUNK: usize = 2_048;

/// A text still to embed, and the key its vector is filled in by.
#[derive(Debug, Clone, PartialEq)]
pub struct Pending {
    pub key: TextKey,
    pub text: String,
}

/// Equal when they hold the same rows (whatever model instance made them):
/// what a reused table must be to one built from scratch.
impl PartialEq for ToolVectors {
    fn eq(&self, other: &Self) -> bool {
        self.dimensions == other.dimensions
            && self.keys == other.keys
            && self.rows == other.rows
            && self.factors == other.factors
    }
}

impl std::fmt::Debug for ToolVectors {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolVectors")
            .field("tools", &self.factors.len())
            .field("embedded", &self.embedded)
            .field("dimensions", &self.dimensions)
            .finish()
    }
}

/// The record of `key` for `vector` (a zero row with factor 0 when the
/// text has none, so it is never embedded again either).
pub fn record_of(key: TextKey, vector: Option<&[f32]>, dimensions: usize) -> Record {
    let (row, factor) = match vector.filter(|v| v.len() == dimensions) {
        Some(vector) => quantise(vector),
        None => (vec![0; dimensions], 0.0),
    };
    Record { key, row, factor }
}

impl ToolVectors {
    /// The table of `catalog` with every row `earlier` (a table of the same
    /// model) or `cache` already has, and the texts still to embed (each
    /// once, however many tools share it).
    pub fn assemble(
        model: &Arc<TextModel>,
        catalog: &Catalog,
        earlier: Option<&ToolVectors>,
        cache: Option<&DiskCache>,
    ) -> (ToolVectors, Vec<Pending>) {
        let (vectors, pending, _) =
            ToolVectors::assemble_reusing(model, catalog, earlier.map(|e| (e, &[][..])), cache);
        (vectors, pending)
    }

    /// [`ToolVectors::assemble`], where `same[i]` is tool `i`'s index in
    /// `earlier`'s catalog when the tool is unchanged: its key and row are
    /// copied without its text being written again (a reload of one file
    /// of 125,000 tools writes the texts of that file's tools only). Also
    /// returns how many texts the disk cache gave.
    pub fn assemble_reusing(
        model: &Arc<TextModel>,
        catalog: &Catalog,
        earlier: Option<(&ToolVectors, &[Option<usize>])>,
        cache: Option<&DiskCache>,
    ) -> (ToolVectors, Vec<Pending>, usize) {
        let dimensions = model.dimensions();
        let tools = catalog.tools();
        let titles = titles_of(catalog);
        let earlier = earlier
            .filter(|(e, _)| e.model.digest() == model.digest() && e.dimensions == dimensions);
        let unchanged = |tool: usize| -> Option<usize> {
            let (vectors, same) = earlier?;
            same.get(tool)
                .copied()
                .flatten()
                .filter(|&j| j < vectors.len())
        };
        let texts: Vec<Option<String>> = tools
            .iter()
            .enumerate()
            .map(|(i, tool)| match unchanged(i) {
                Some(_) => None,
                None => Some(tool_text(tool, titles.get(&*tool.document).copied())),
            })
            .collect();
        let keys: Vec<TextKey> = texts
            .iter()
            .enumerate()
            .map(|(i, text)| match (text, unchanged(i), earlier) {
                (Some(text), _, _) => text_key(text),
                (None, Some(j), Some((vectors, _))) => vectors.keys[j],
                _ => TextKey::default(),
            })
            .collect();
        let mut vectors = ToolVectors {
            model: model.clone(),
            dimensions,
            keys,
            rows: vec![0; tools.len() * dimensions],
            factors: vec![0.0; tools.len()],
            embedded: 0,
        };
        let mut reusable: HashMap<TextKey, usize> = HashMap::new();
        if let Some((earlier, _)) = earlier {
            for (tool, key) in earlier.keys.iter().enumerate() {
                if earlier.factors[tool] != 0.0 {
                    reusable.entry(*key).or_insert(tool);
                }
            }
        }
        let mut missing: Vec<TextKey> = Vec::new();
        for tool in 0..tools.len() {
            let key = vectors.keys[tool];
            let from = unchanged(tool)
                .filter(|&j| earlier.is_some_and(|(e, _)| e.factors[j] != 0.0))
                .or_else(|| reusable.get(&key).copied());
            match (earlier, from) {
                (Some((earlier, _)), Some(from)) => {
                    let row = &earlier.rows[from * dimensions..][..dimensions];
                    vectors.set(tool, row, earlier.factors[from]);
                }
                _ => missing.push(key),
            }
        }
        missing.sort_unstable();
        missing.dedup();
        let mut from_cache = 0;
        if let Some(cache) = cache.filter(|_| !missing.is_empty()) {
            let found = cache.get(&missing);
            from_cache = found.len();
            vectors.fill(&found);
            let found: std::collections::HashSet<TextKey> = found.iter().map(|r| r.key).collect();
            missing.retain(|key| !found.contains(key));
        }
        let mut wanted: std::collections::HashSet<TextKey> = missing.into_iter().collect();
        let mut pending: Vec<Pending> = Vec::with_capacity(wanted.len());
        for (tool, text) in texts.into_iter().enumerate() {
            let key = vectors.keys[tool];
            if !wanted.remove(&key) {
                continue;
            }
            // An unchanged tool whose earlier row was still missing: its
            // text is written now.
            let text = text.unwrap_or_else(|| {
                let tool = &tools[tool];
                tool_text(tool, titles.get(&*tool.document).copied())
            });
            pending.push(Pending { key, text });
        }
        (vectors, pending, from_cache)
    }

    /// The table of `catalog` with every text embedded now, on rayon's
    /// threads (what `sezzlee check` and the tests use; the gateway embeds
    /// in the background instead).
    pub fn build(
        model: &Arc<TextModel>,
        catalog: &Catalog,
        earlier: Option<&ToolVectors>,
        cache: Option<&DiskCache>,
    ) -> ToolVectors {
        let (mut vectors, pending) = ToolVectors::assemble(model, catalog, earlier, cache);
        // In chunks, each written to the cache as it is done: an
        // interrupted run keeps what it embedded.
        for chunk in pending.chunks(BUILD_CHUNK) {
            let records = embed(model, chunk);
            vectors.fill(&records);
            if let Some(cache) = cache {
                let _ = cache.put(&records, &|_| true);
            }
        }
        vectors
    }

    /// A copy with `records` filled in, for every tool whose text they are.
    pub fn filled(&self, records: &[Record]) -> ToolVectors {
        let mut copy = self.clone();
        copy.fill(records);
        copy
    }

    /// Fills `records` in, for every tool without a vector whose text they
    /// are.
    pub fn fill(&mut self, records: &[Record]) {
        if records.is_empty() {
            return;
        }
        let by_key: HashMap<TextKey, &Record> = records
            .iter()
            .filter(|r| r.row.len() == self.dimensions)
            .map(|r| (r.key, r))
            .collect();
        for tool in 0..self.keys.len() {
            if self.factors[tool] != 0.0 {
                continue;
            }
            if let Some(record) = by_key.get(&self.keys[tool]) {
                let (row, factor) = (record.row.clone(), record.factor);
                self.set(tool, &row, factor);
            }
        }
    }

    fn set(&mut self, tool: usize, row: &[i8], factor: f32) {
        let was = self.factors[tool] != 0.0;
        self.rows[tool * self.dimensions..][..self.dimensions].copy_from_slice(row);
        self.factors[tool] = factor;
        match (was, factor != 0.0) {
            (false, true) => self.embedded += 1,
            (true, false) => self.embedded -= 1,
            _ => {}
        }
    }

    /// The model the tools were embedded with.
    pub fn model(&self) -> &Arc<TextModel> {
        &self.model
    }

    /// Number of tools.
    pub fn len(&self) -> usize {
        self.factors.len()
    }

    /// Whether there is no tool.
    pub fn is_empty(&self) -> bool {
        self.factors.is_empty()
    }

    /// Tools with a vector so far.
    pub fn embedded(&self) -> usize {
        self.embedded
    }

    /// Each tool's text key.
    pub fn keys(&self) -> &[TextKey] {
        &self.keys
    }

    /// Bytes the table holds.
    pub fn heap_bytes(&self) -> usize {
        self.rows.len()
            + self.factors.len() * std::mem::size_of::<f32>()
            + self.keys.len() * std::mem::size_of::<TextKey>()
    }

    /// The unit vector of a query's text (`None`: it has none).
    pub fn embed_query(&self, text: &str) -> Option<Vec<f32>> {
        self.model.embed_waited_for(text)
    }

    /// At most `depth` tools for which `include(i)` holds, by cosine with
    /// `vector`, best first (ties by index), with their cosines. Tools
    /// without a vector are never among them. A large table is scanned in
    /// two halves on two of rayon's threads (a query waits for the scan).
    pub fn nearest(
        &self,
        vector: &[f32],
        depth: usize,
        include: &(impl Fn(usize) -> bool + Sync),
    ) -> Vec<(usize, f32)> {
        let largest = vector.iter().fold(0f32, |m, v| m.max(v.abs()));
        if depth == 0 || !largest.is_normal() || vector.len() != self.dimensions {
            return Vec::new();
        }
        let query: Vec<i16> = vector
            .iter()
            .map(|v| (v * QUERY_SCALE / largest).round() as i16)
            .collect();
        let query_factor = largest / QUERY_SCALE;
        let table = Table {
            rows: &self.rows,
            factors: &self.factors,
            width: self.dimensions,
        };
        let split = self.len() >= SPLIT_SCAN_TOOLS;
        table.nearest(&query, query_factor, depth, include, split)
    }

    /// The cosine of `vector` with `tool`'s row (`None`: no vector yet).
    pub fn cosine(&self, vector: &[f32], tool: usize) -> Option<f32> {
        let factor = *self.factors.get(tool)?;
        if factor == 0.0 || vector.len() != self.dimensions {
            return None;
        }
        let row = &self.rows[tool * self.dimensions..][..self.dimensions];
        Some(
            row.iter()
                .zip(vector)
                .map(|(&r, &v)| f32::from(r) * v)
                .sum::<f32>()
                * factor,
        )
    }
}

/// Every pending text embedded (on rayon's threads) as records.
pub fn embed(model: &TextModel, pending: &[Pending]) -> Vec<Record> {
    let texts: Vec<String> = pending.iter().map(|p| p.text.clone()).collect();
    model
        .embed_all(&texts)
        .into_iter()
        .zip(pending)
        .map(|(vector, p)| record_of(p.key, vector.as_deref(), model.dimensions()))
        .collect()
}

/// Each document's API title, by its file.
fn titles_of(catalog: &Catalog) -> HashMap<&str, &str> {
    catalog
        .documents
        .iter()
        .map(|d| (&*d.file, d.title.as_str()))
        .collect()
}

/// The text of `tool` as [`ToolVectors`] embeds it (for reports).
pub fn text_of(catalog: &Catalog, tool: &Tool) -> String {
    tool_text(tool, titles_of(catalog).get(&*tool.document).copied())
}

/// The `n` best of `scored` (higher first, ties by lower index) for which
/// `include` holds, with their scores; `include` is asked only about tools
/// that would enter.
fn best(
    scored: impl Iterator<Item = (usize, f32)>,
    n: usize,
    include: &impl Fn(usize) -> bool,
) -> Vec<(usize, f32)> {
    if n == 0 {
        return Vec::new();
    }
    let mut heap = BinaryHeap::with_capacity(n + 1);
    for (tool, score) in scored {
        let entry = Scored { score, tool };
        let enters = heap.len() < n || heap.peek().is_some_and(|worst| entry < *worst);
        if enters && include(tool) {
            heap.push(entry);
            if heap.len() > n {
                heap.pop();
            }
        }
    }
    let mut ranked = heap.into_vec();
    ranked.sort_unstable();
    ranked.into_iter().map(|s| (s.tool, s.score)).collect()
}

/// The dot product of `query` with each `width`-long row of `rows`,
/// appended to `out`. Compiled for the vector units the CPU has (checked
/// once, at run time): the scan is most of a semantic query's time.
#[multiversion::multiversion(targets("x86_64+avx2", "x86_64+sse4.1", "aarch64+neon"))]
fn dot_rows(query: &[i16], rows: &[i8], width: usize, out: &mut Vec<i32>) {
    if width == 0 || query.len() != width {
        return;
    }
    for row in rows.chunks_exact(width) {
        out.push(
            query
                .iter()
                .zip(row)
                .map(|(&x, &y)| i32::from(x) * i32::from(y))
                .sum(),
        );
    }
}

/// The rows a scan reads: `width` quantised components per tool, and
/// the factor that turns each row's dot products back into cosines
/// (0: the tool has no vector yet).
struct Table<'a> {
    rows: &'a [i8],
    factors: &'a [f32],
    width: usize,
}

impl Table<'_> {
    /// The best `depth` tools `include` admits, by `query`'s dot product
    /// times `query_factor` and the row's factor; with `split`, the two
    /// halves of the table scanned at once on rayon's threads and merged.
    fn nearest(
        &self,
        query: &[i16],
        query_factor: f32,
        depth: usize,
        include: &(impl Fn(usize) -> bool + Sync),
        split: bool,
    ) -> Vec<(usize, f32)> {
        let tools = self.factors.len();
        let scan = |range: std::ops::Range<usize>| {
            let scores = Scores {
                table: self,
                query,
                query_factor,
                dots: Vec::with_capacity(SCAN_BLOCK),
                block_start: range.start,
                at: 0,
                end: range.end,
            };
            best(scores, depth, include)
        };
        if !split {
            return scan(0..tools);
        }
        let (mut first, second) = rayon::join(|| scan(0..tools / 2), || scan(tools / 2..tools));
        first.extend(second);
        first.sort_unstable_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        first.truncate(depth);
        first
    }
}

/// The cosine of every tool of a range that has a vector, in tool order.
/// The dot products are computed a block of [`SCAN_BLOCK`] rows at a time
/// into one small buffer that stays in cache, never one per tool of the
/// table (half a megabyte at 125k tools, allocated and faulted in per
/// query).
struct Scores<'t> {
    table: &'t Table<'t>,
    query: &'t [i16],
    query_factor: f32,
    /// The current block's dot products.
    dots: Vec<i32>,
    /// The tool of `dots[0]`.
    block_start: usize,
    /// The next entry of `dots` to read.
    at: usize,
    /// The end of the range.
    end: usize,
}

impl Iterator for Scores<'_> {
    type Item = (usize, f32);

    fn next(&mut self) -> Option<(usize, f32)> {
        loop {
            if let Some(&dot) = self.dots.get(self.at) {
                let tool = self.block_start + self.at;
                self.at += 1;
                let factor = self.table.factors.get(tool).copied().unwrap_or(0.0);
                if factor != 0.0 {
                    return Some((tool, dot as f32 * factor * self.query_factor));
                }
                continue;
            }
            let start = self.block_start + self.dots.len();
            if start >= self.end {
                return None;
            }
            let end = (start + SCAN_BLOCK).min(self.end);
            let width = self.table.width;
            self.dots.clear();
            self.block_start = start;
            self.at = 0;
            let rows = self.table.rows.get(start * width..end * width)?;
            dot_rows(self.query, rows, width, &mut self.dots);
            if self.dots.is_empty() {
                return None;
            }
        }
    }
}

/// A tool and its score; ordered best first (higher score, then lower
/// index), so a max-heap of them keeps the worst on top.
#[derive(Clone, Copy, Debug)]
struct Scored {
    score: f32,
    tool: usize,
}

impl PartialEq for Scored {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Scored {}

impl PartialOrd for Scored {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Scored {
    fn cmp(&self, other: &Self) -> Ordering {
        other
            .score
            .total_cmp(&self.score)
            .then_with(|| self.tool.cmp(&other.tool))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_scan_in_two_halves_finds_what_one_scan_finds() {
        // More tools than a scan block, so blocks and halves both join.
        let (width, tools) = (8, 2 * SCAN_BLOCK + 809);
        let rows: Vec<i8> = (0..width * tools)
            .map(|i| ((i * 7919 % 255) as i32 - 127) as i8)
            .collect();
        // Every tenth tool has no vector yet; the rest have factors that
        // vary, so the order is not the rows' alone.
        let factors: Vec<f32> = (0..tools)
            .map(|t| {
                if t % 10 == 3 {
                    0.0
                } else {
                    1.0 + (t % 7) as f32 * 0.1
                }
            })
            .collect();
        let table = Table {
            rows: &rows,
            factors: &factors,
            width,
        };
        let query: Vec<i16> = vec![300, -200, 100, 50, -400, 250, 0, 90];
        let include = |tool: usize| !tool.is_multiple_of(5);
        let eligible = (0..tools)
            .filter(|&t| include(t) && factors[t] != 0.0)
            .count();
        // Every eligible tool scored plainly, best first (ties by index).
        let mut plain: Vec<(usize, f32)> = (0..tools)
            .filter(|&t| include(t) && factors[t] != 0.0)
            .map(|t| {
                let dot: i32 = (0..width)
                    .map(|d| i32::from(query[d]) * i32::from(rows[t * width + d]))
                    .sum();
                (t, dot as f32 * factors[t] * 0.01)
            })
            .collect();
        plain.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        for depth in [1, 10, 50, 2000] {
            let one = table.nearest(&query, 0.01, depth, &include, false);
            assert_eq!(one, plain[..depth.min(plain.len())], "depth {depth}");
            let two = table.nearest(&query, 0.01, depth, &include, true);
            assert_eq!(one, two, "depth {depth}");
            assert_eq!(one.len(), depth.min(eligible));
            assert!(
                one.iter()
                    .all(|&(tool, _)| include(tool) && factors[tool] != 0.0)
            );
            assert!(one.windows(2).all(|w| w[0].1 >= w[1].1));
        }
    }
}
