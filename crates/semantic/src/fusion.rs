//! Fusion: one ranking from the keyword ranking and the meaning ranking.
//!
//! Each ranking is right where the other fails: keywords when the agent
//! uses the document's words (`create_gist`), meaning when it does not
//! ("abort the build" for `cancel`). Reciprocal-rank fusion adds, per
//! tool, `1 / (K + rank)` from each list, so a tool near the top of both
//! wins, and a tool near the top of one still places; it needs no score
//! calibration between two unrelated scales.

use std::collections::HashMap;

/// Rank offset of the fusion: small, so the first places of each list
/// weigh clearly more than the tenth (chosen on the tuning task sets; the
/// figures: `tests/data/README.md`, "Tuning record").
const K: f32 = 10.0;

/// How deep each ranking is read before fusing.
pub const DEPTH: usize = 50;

/// At most `limit` tools, by fused reciprocal rank of `lexical` and
/// `semantic` (each best first), the meaning ranking weighing `weight`
/// against the keywords' 1; ties go to the better keyword rank, then the
/// better meaning rank.
pub fn fuse(lexical: &[usize], semantic: &[usize], weight: f32, limit: usize) -> Vec<usize> {
    // (score, keyword rank, meaning rank) per tool.
    let mut fused: HashMap<usize, (f32, usize, usize)> = HashMap::new();
    for (rank, &tool) in lexical.iter().enumerate() {
        let entry = fused.entry(tool).or_insert((0.0, usize::MAX, usize::MAX));
        entry.0 += 1.0 / (K + rank as f32 + 1.0);
        entry.1 = entry.1.min(rank);
    }
    for (rank, &tool) in semantic.iter().enumerate() {
        let entry = fused.entry(tool).or_insert((0.0, usize::MAX, usize::MAX));
        entry.0 += weight / (K + rank as f32 + 1.0);
        entry.2 = entry.2.min(rank);
    }
    let mut ranked: Vec<(usize, (f32, usize, usize))> = fused.into_iter().collect();
    ranked.sort_unstable_by(|(a, sa), (b, sb)| {
        sb.0.total_cmp(&sa.0)
            .then(sa.1.cmp(&sb.1))
            .then(sa.2.cmp(&sb.2))
            .then(a.cmp(b))
    });
    ranked.truncate(limit);
    ranked.into_iter().map(|(tool, _)| tool).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tool_high_in_both_lists_leads() {
        assert_eq!(fuse(&[1, 2, 3], &[2, 4, 1], 1.0, 4), [2, 1, 4, 3]);
    }

    #[test]
    fn a_tool_only_one_ranking_finds_still_places() {
        let fused = fuse(&[7, 8], &[9], 1.0, 3);
        assert_eq!(fused, [7, 9, 8]);
    }

    #[test]
    fn ties_go_to_the_keyword_ranking_and_the_limit_holds() {
        assert_eq!(fuse(&[5], &[6], 1.0, 2), [5, 6]);
        assert_eq!(fuse(&[5, 1], &[6, 2], 1.0, 1), [5]);
        assert!(fuse(&[], &[], 1.0, 3).is_empty());
    }

    #[test]
    fn a_lighter_meaning_ranking_defers_to_keywords() {
        // The meaning ranking's first is the keywords' sixth: fully
        // weighed it leads, at a quarter the keywords' first stays first.
        let lexical = [1, 2, 3, 4, 5, 6];
        assert_eq!(fuse(&lexical, &[6], 1.0, 1), [6]);
        assert_eq!(fuse(&lexical, &[6], 0.25, 3), [1, 6, 2]);
    }
}
