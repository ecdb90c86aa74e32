//! Tool vectors: every tool of a catalog embedded once, quantised into one
//! contiguous table that a query scans.
//!
//! A query compares its vector with every tool's, so the table is laid out
//! for that scan: one row of `i8` per tool (a quarter of `f32`'s memory
//! and bandwidth) with the factor that turns the row's integer dot product
//! back into a cosine. A catalog rebuilt after an edit takes the rows of
//! the tools that did not change from the previous table: only edited
//! tools are embedded again.

use std::cmp::Ordering;
use std::collections::BinaryHeap;
use std::sync::Arc;

use rayon::prelude::*;

use super::model::{TextModel, WordTokens};
use super::routing::Routes;
use crate::{Catalog, Tool};

/// Largest magnitude of a quantised query component: small enough that a
/// 4,096-dimension dot product of `i16 × i8` stays within `i32`.
const QUERY_SCALE: f32 = 2047.0;

/// The tools of one catalog as vectors of one model.
pub struct ToolVectors {
    model: Arc<TextModel>,
    dimensions: usize,
    /// `rows[tool * dimensions..][..dimensions]`: the tool's unit vector,
    /// quantised to `i8` (all zero when the tool has no text the model
    /// knows).
    rows: Vec<i8>,
    /// The first [`HEAD`] components of each row, on their own: what the
    /// first pass of a query reads.
    heads: Vec<i8>,
    /// Each document's tools and centroid, for queries over catalogs
    /// larger than [`SCAN_ALL_UP_TO`] tools.
    routes: Routes,
    /// Per tool, what a row's dot product is multiplied by to be a cosine
    /// (with the query's own factor).
    factors: Vec<f32>,
}

/// Equal when they hold the same rows (whatever model instance made them):
/// what a reused table must be to one built from scratch.
impl PartialEq for ToolVectors {
    fn eq(&self, other: &Self) -> bool {
        self.dimensions == other.dimensions
            && self.rows == other.rows
            && self.heads == other.heads
            && self.factors == other.factors
            && self.routes == other.routes
    }
}

impl std::fmt::Debug for ToolVectors {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolVectors")
            .field("tools", &self.factors.len())
            .field("dimensions", &self.dimensions)
            .finish()
    }
}

/// The text of a tool that is embedded: its name, route, tags and search
/// terms as words, then its description (cut by the model).
pub fn tool_text(tool: &Tool) -> String {
    let path = tool.route.split_once(' ').map_or("", |(_, path)| path);
    let mut text = String::with_capacity(256);
    let mut push_words = |words: &str| {
        if !text.is_empty() {
            text.push(' ');
        }
        text.push_str(words);
    };
    push_words(&spaced(&tool.name));
    push_words(&spaced(path));
    for tag in &tool.tags {
        push_words(tag);
    }
    for term in &tool.search_terms {
        push_words(term);
    }
    push_words(&tool.description);
    text
}

/// `listOpenOrders`, `list_open_orders`, `/orders/{orderId}` as words
/// separated by spaces (`list Open Orders`, `orders order Id`): a model
/// knows words, not identifiers.
fn spaced(identifier: &str) -> String {
    let mut out = String::with_capacity(identifier.len() + 8);
    let mut previous: Option<char> = None;
    for c in identifier.chars() {
        if c.is_alphanumeric() {
            if c.is_uppercase() && previous.is_some_and(|p| p.is_lowercase()) {
                out.push(' ');
            }
            out.push(c);
        } else if !out.ends_with(' ') && !out.is_empty() {
            out.push(' ');
        }
        previous = Some(c);
    }
    out.trim_end().to_string()
}

/// A vector quantised to `i8`, and the factor back to its values.
pub(super) fn quantise(vector: &[f32]) -> (Vec<i8>, f32) {
    let largest = vector.iter().fold(0f32, |m, v| m.max(v.abs()));
    if !largest.is_normal() {
        return (vec![0; vector.len()], 0.0);
    }
    let scale = 127.0 / largest;
    let row = vector
        .iter()
        .map(|v| (v * scale).round().clamp(-127.0, 127.0) as i8)
        .collect();
    (row, 1.0 / scale)
}

impl ToolVectors {
    /// Embeds the tools of `catalog`; a tool whose name and body are those
    /// of a tool of `earlier`'s catalog (embedded by the same model) takes
    /// that tool's row instead.
    pub fn build(
        model: &Arc<TextModel>,
        catalog: &Catalog,
        earlier: Option<(&Catalog, &ToolVectors)>,
    ) -> ToolVectors {
        let dimensions = model.dimensions();
        let tools = catalog.tools();
        let earlier = earlier.filter(|(_, vectors)| {
            Arc::ptr_eq(&vectors.model, model) || vectors.model.digest() == model.digest()
        });
        // Per tool: the earlier table's row to copy, or a new one.
        let rows: Vec<Result<usize, (Vec<i8>, f32)>> = tools
            .par_iter()
            .map_init(WordTokens::default, |words, tool| {
                let reused = earlier.and_then(|(previous, vectors)| {
                    let index = previous.position(&tool.name)?;
                    let before = previous.tools().get(index)?;
                    (before.same_body(tool) && vectors.row(index).is_some()).then_some(index)
                });
                reused.ok_or_else(|| match model.embed_cached(&tool_text(tool), words) {
                    Some(vector) => quantise(&vector),
                    None => (vec![0; dimensions], 0.0),
                })
            })
            .collect();
        let head = HEAD.min(dimensions);
        let mut table = Vec::with_capacity(tools.len() * dimensions);
        let mut heads = Vec::with_capacity(tools.len() * head);
        let mut factors = Vec::with_capacity(tools.len());
        let zero = vec![0; dimensions];
        for source in &rows {
            let (row, factor) = match source {
                Ok(index) => earlier
                    .and_then(|(_, vectors)| vectors.row(*index))
                    .unwrap_or((&zero, 0.0)),
                Err((row, factor)) => (row.as_slice(), *factor),
            };
            table.extend_from_slice(row);
            heads.extend_from_slice(&row[..head.min(row.len())]);
            factors.push(factor);
        }
        let routes = if tools.len() > SCAN_ALL_UP_TO {
            let documents = tools.iter().map(|tool| &*tool.document);
            Routes::build(documents, dimensions, |tool| {
                let start = tool.checked_mul(dimensions)?;
                Some((table.get(start..start + dimensions)?, *factors.get(tool)?))
            })
        } else {
            Routes::default()
        };
        ToolVectors {
            model: model.clone(),
            dimensions,
            rows: table,
            heads,
            routes,
            factors,
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

    /// Bytes the table holds.
    pub fn heap_bytes(&self) -> usize {
        self.rows.len() + self.heads.len() + self.factors.len() * std::mem::size_of::<f32>()
    }

    fn row(&self, tool: usize) -> Option<(&[i8], f32)> {
        let start = tool.checked_mul(self.dimensions)?;
        let row = self.rows.get(start..start + self.dimensions)?;
        Some((row, *self.factors.get(tool)?))
    }

    /// At most `depth` tools for which `include(i)` holds, by cosine with
    /// `text`'s vector, best first (ties by index). Empty when the text has
    /// no vector.
    ///
    /// Two passes: every tool's first [`HEAD`] components (one cache line
    /// each, in their own table) choose a pool of [`POOL_PER_RESULT`] ×
    /// `depth` candidates, whose whole rows then decide the order. The
    /// first components of these vectors carry most of their direction, so
    /// the pool holds the true nearest tools at a quarter of the reads.
    pub fn nearest(
        &self,
        text: &str,
        depth: usize,
        lexical: &[usize],
        include: &impl Fn(usize) -> bool,
    ) -> Vec<usize> {
        let Some(vector) = self.model.embed(text) else {
            return Vec::new();
        };
        let largest = vector.iter().fold(0f32, |m, v| m.max(v.abs()));
        if depth == 0 || !largest.is_normal() || vector.len() != self.dimensions {
            return Vec::new();
        }
        let query: Vec<i16> = vector
            .iter()
            .map(|v| (v * QUERY_SCALE / largest).round() as i16)
            .collect();
        let head = self.head_width();
        let mut scored: Vec<(usize, f32)> = if self.len() > SCAN_ALL_UP_TO {
            let candidates = self.routes.candidates(&query, lexical);
            let mut head_scores = Vec::with_capacity(candidates.len());
            dot_some_rows(
                &query[..head],
                &self.heads,
                head,
                &candidates,
                &mut head_scores,
            );
            candidates
                .iter()
                .zip(head_scores)
                .map(|(&tool, dot)| (tool as usize, dot as f32 * self.factor(tool as usize)))
                .collect()
        } else {
            let mut head_scores = Vec::with_capacity(self.len());
            dot_rows(&query[..head], &self.heads, head, &mut head_scores);
            head_scores
                .iter()
                .zip(&self.factors)
                .enumerate()
                .map(|(tool, (&dot, &factor))| (tool, dot as f32 * factor))
                .collect()
        };
        let wanted = depth.saturating_mul(POOL_PER_RESULT);
        // The pool: the best `wanted` by their heads, of the tools the
        // caller may see. Selecting among all first is linear; only when
        // too many of those are hidden is every tool asked about.
        let mut pool: Vec<usize> = if scored.len() > wanted {
            scored.select_nth_unstable_by(wanted, |a, b| by_score(*a, *b));
            scored[..wanted].iter().map(|&(tool, _)| tool).collect()
        } else {
            scored.iter().map(|&(tool, _)| tool).collect()
        };
        pool.retain(|&tool| include(tool));
        if pool.len() < depth && scored.len() > wanted {
            pool = best(scored.into_iter(), wanted, include);
        }
        let ids: Vec<u32> = pool.iter().map(|&tool| tool as u32).collect();
        let mut dots = Vec::with_capacity(ids.len());
        dot_some_rows(&query, &self.rows, self.dimensions, &ids, &mut dots);
        let mut rescored: Vec<(usize, f32)> = pool
            .iter()
            .zip(dots)
            .map(|(&tool, dot)| (tool, dot as f32 * self.factor(tool)))
            .collect();
        rescored.sort_unstable_by(|a, b| by_score(*a, *b));
        rescored.truncate(depth);
        rescored.into_iter().map(|(tool, _)| tool).collect()
    }

    fn factor(&self, tool: usize) -> f32 {
        self.factors.get(tool).copied().unwrap_or(0.0)
    }

    fn head_width(&self) -> usize {
        HEAD.min(self.dimensions)
    }
}

/// Catalogs of up to this many tools compare a query with every tool;
/// larger ones route it to the documents most like it ([`Routes`]).
pub const SCAN_ALL_UP_TO: usize = 20_000;

/// Components of each vector in the first pass of [`ToolVectors::nearest`].
const HEAD: usize = 64;

/// Candidates the first pass keeps per result asked for.
const POOL_PER_RESULT: usize = 8;

/// The `n` best of `scored` (higher first, ties by lower index) for which
/// `include` holds; `include` is asked only about tools that would enter.
fn best(
    scored: impl Iterator<Item = (usize, f32)>,
    n: usize,
    include: &impl Fn(usize) -> bool,
) -> Vec<usize> {
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
    ranked.into_iter().map(|scored| scored.tool).collect()
}

/// The dot product of `query` with each `width`-long row of `rows`,
/// appended to `out`. Compiled for the vector units the CPU has (checked
/// once, at run time): the scan is most of a semantic query's time.
#[multiversion::multiversion(targets("x86_64+avx2", "x86_64+sse4.1", "aarch64+neon"))]
pub(super) fn dot_rows(query: &[i16], rows: &[i8], width: usize, out: &mut Vec<i32>) {
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

/// [`dot_rows`] for the rows `ids` only.
#[multiversion::multiversion(targets("x86_64+avx2", "x86_64+sse4.1", "aarch64+neon"))]
fn dot_some_rows(query: &[i16], rows: &[i8], width: usize, ids: &[u32], out: &mut Vec<i32>) {
    if width == 0 || query.len() != width {
        return;
    }
    for &id in ids {
        let start = id as usize * width;
        let dot = rows.get(start..start + width).map_or(0, |row| {
            query
                .iter()
                .zip(row)
                .map(|(&x, &y)| i32::from(x) * i32::from(y))
                .sum()
        });
        out.push(dot);
    }
}

/// Higher score first, then lower index.
fn by_score(a: (usize, f32), b: (usize, f32)) -> Ordering {
    b.1.total_cmp(&a.1).then(a.0.cmp(&b.0))
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
