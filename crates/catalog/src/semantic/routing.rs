//! Routing: at the scale of a whole API directory, which documents a query
//! compares its vector with.
//!
//! Comparing a query with every one of 125,000 tools costs milliseconds; a
//! tool is almost always found in a document whose tools, on average, mean
//! what the query means, or in one the keyword ranking already reached. So
//! each document keeps the mean of its tools' vectors (its centroid), a
//! query ranks the centroids first (a few thousand, not a hundred
//! thousand), and only the tools of the best documents, with those of the
//! keyword ranking's documents, are compared.

use std::collections::HashMap;

use super::vectors::{dot_rows, quantise};

/// Documents whose tools a routed query compares, besides the documents of
/// the keyword ranking.
pub const ROUTED_DOCUMENTS: usize = 32;

/// Each document's tools and centroid.
#[derive(Debug, Default, PartialEq)]
pub struct Routes {
    /// The document (index into `members`) of each tool.
    document_of: Vec<u32>,
    /// The tools of each document, ascending.
    members: Vec<Vec<u32>>,
    /// `centroids[d * dimensions..][..dimensions]`: the mean of document
    /// `d`'s tools' vectors, quantised like a tool's row (zero when none
    /// has a vector), and the factor back to values.
    centroids: Vec<i8>,
    factors: Vec<f32>,
    dimensions: usize,
}

impl Routes {
    /// Routes over tools whose documents are `documents` (in tool order)
    /// and whose vectors are `row(i)` (quantised, with the factor back to
    /// values).
    pub fn build<'a, 'd>(
        documents: impl ExactSizeIterator<Item = &'d str>,
        dimensions: usize,
        row: impl Fn(usize) -> Option<(&'a [i8], f32)>,
    ) -> Routes {
        let mut index: HashMap<&str, u32> = HashMap::new();
        let mut members: Vec<Vec<u32>> = Vec::new();
        let mut document_of = Vec::with_capacity(documents.len());
        for (i, document) in documents.enumerate() {
            let next = members.len() as u32;
            let document = *index.entry(document).or_insert(next);
            if document == next {
                members.push(Vec::new());
            }
            members[document as usize].push(i as u32);
            document_of.push(document);
        }
        let mut centroids = Vec::with_capacity(members.len() * dimensions);
        let mut factors = Vec::with_capacity(members.len());
        let mut sum = vec![0f32; dimensions];
        for tools in &members {
            sum.iter_mut().for_each(|v| *v = 0.0);
            for &tool in tools {
                let Some((values, factor)) = row(tool as usize) else {
                    continue;
                };
                for (total, &value) in sum.iter_mut().zip(values) {
                    *total += f32::from(value) * factor;
                }
            }
            // The mean, not the sum nor its direction: a document scores
            // its tools' average similarity to a query, so a large, varied
            // document (whose vectors cancel out) is not near everything.
            let count = tools.len().max(1) as f32;
            sum.iter_mut().for_each(|v| *v /= count);
            let (quantised, factor) = quantise(&sum);
            centroids.extend_from_slice(&quantised);
            factors.push(factor);
        }
        Routes {
            document_of,
            members,
            centroids,
            factors,
            dimensions,
        }
    }

    /// The tools to compare with `query` (quantised as for
    /// [`dot_rows`]): those of the [`ROUTED_DOCUMENTS`] documents whose
    /// centroids are nearest, and of the documents of `lexical` (the
    /// keyword ranking's tools); ascending.
    pub fn candidates(&self, query: &[i16], lexical: &[usize]) -> Vec<u32> {
        let mut dots = Vec::with_capacity(self.factors.len());
        dot_rows(query, &self.centroids, self.dimensions, &mut dots);
        let mut scored: Vec<(usize, f32)> = dots
            .iter()
            .zip(&self.factors)
            .map(|(&dot, &factor)| dot as f32 * factor)
            .enumerate()
            .collect();
        let routed = ROUTED_DOCUMENTS.min(scored.len());
        if routed < scored.len() {
            scored.select_nth_unstable_by(routed, |a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        }
        let mut documents: Vec<usize> = scored[..routed].iter().map(|&(d, _)| d).collect();
        documents.extend(
            lexical
                .iter()
                .filter_map(|&tool| self.document_of.get(tool))
                .map(|&d| d as usize),
        );
        documents.sort_unstable();
        documents.dedup();
        let mut tools: Vec<u32> = documents
            .iter()
            .filter_map(|&d| self.members.get(d))
            .flatten()
            .copied()
            .collect();
        tools.sort_unstable();
        tools
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Rows along axes: document `one` has a tool on axis 0; `varied` has
    /// many tools on axes 1 and 2 and one on axis 0; `keyword` one on axis 2.
    fn routes() -> (Routes, Vec<Vec<i8>>) {
        let mut documents = vec!["one"];
        let mut rows = vec![vec![127, 0, 0]];
        for i in 0..40 {
            documents.push("varied");
            rows.push(if i % 2 == 0 {
                vec![0, 127, 0]
            } else {
                vec![0, 0, 127]
            });
        }
        documents.push("varied");
        rows.push(vec![127, 0, 0]);
        documents.push("keyword");
        rows.push(vec![0, 0, 127]);
        let routes = Routes::build(documents.into_iter(), 3, |i| {
            rows.get(i).map(|row| (row.as_slice(), 1.0 / 127.0))
        });
        (routes, rows)
    }

    #[test]
    fn a_query_reaches_the_documents_most_like_it_and_the_keyword_ones() {
        // More one-tool documents than are routed: `near` on the query's
        // axis, then fillers on another, and `keyword` last.
        let names: Vec<String> = (0..ROUTED_DOCUMENTS + 8)
            .map(|i| format!("filler{i}"))
            .collect();
        let mut documents = vec!["near"];
        let mut rows: Vec<[i8; 3]> = vec![[127, 0, 0]];
        for name in &names {
            documents.push(name);
            rows.push([0, 127, 0]);
        }
        documents.push("keyword");
        rows.push([0, 0, -127]);
        let routes = Routes::build(documents.into_iter(), 3, |i| {
            rows.get(i).map(|row| (row.as_slice(), 1.0 / 127.0))
        });
        let keyword = (rows.len() - 1) as u32;
        let routed = routes.candidates(&[2047, 0, 0], &[]);
        assert_eq!(routed.len(), ROUTED_DOCUMENTS);
        assert_eq!(routed[0], 0, "the nearest document first");
        assert!(!routed.contains(&keyword));
        let with_keywords = routes.candidates(&[2047, 0, 0], &[keyword as usize]);
        assert_eq!(with_keywords.len(), ROUTED_DOCUMENTS + 1);
        assert!(with_keywords.contains(&keyword));
    }

    #[test]
    fn centroids_are_means_so_a_varied_document_is_not_near_everything() {
        let (routes, _) = routes();
        let mut dots = Vec::new();
        dot_rows(&[2047, 0, 0], &routes.centroids, 3, &mut dots);
        let scores: Vec<f32> = dots
            .iter()
            .zip(&routes.factors)
            .map(|(&d, &f)| d as f32 * f)
            .collect();
        // `one` (its only tool on the axis) far above `varied` (one of 41).
        assert!(scores[0] > 10.0 * scores[1], "{scores:?}");
        assert_eq!(scores[2], 0.0);
    }
}
