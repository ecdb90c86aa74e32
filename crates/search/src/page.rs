//! Page selection: the best `limit` scored tools that `include` accepts.
//!
//! `include` may be costly and most matched tools cannot make the page, so
//! the page is a bounded heap that asks `include` only about tools that
//! would enter it. When a common keyword made every tool a candidate, the
//! page is first sought among the tools rare keywords matched, when no
//! other tool's score can reach it; else every tool's score is computed,
//! eight at a time ([`scan_all`]).

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use super::scratch::{LANES, Scratch};

/// The best `limit` matched tools that `include` accepts, best first: one
/// pass over the matched tools keeping the best so far in a heap, so
/// `include` is asked only about tools that would enter it.
pub(super) fn best_matched(
    scratch: &mut Scratch,
    resources: &[u8],
    limit: usize,
    include: &impl Fn(usize) -> bool,
) -> Vec<usize> {
    if scratch.effects.is_empty() {
        let mut page = Page::new(limit);
        for &doc in &scratch.matched {
            let doc = doc as usize;
            page.offer(doc, scratch.final_score(doc, resources), include);
        }
        return page.into_best();
    }
    // A tool no keyword settled tool by tool matched scores at most what
    // the effects can give it: when enough of the tools those keywords
    // matched score more, the page is theirs, and nobody else need be
    // looked at.
    if let Some(best) = best_of_matched(scratch, resources, limit, include) {
        return best;
    }
    scratch.apply_counts();
    scan_all(scratch, resources, limit, include)
}

/// The page when it can be chosen among the tools that keywords settled
/// tool by tool matched (`scratch.matched`), with effects (keywords
/// settled over every tool) in the query: any other tool matched only
/// effects, so scores at most [`Scratch::effects_bound`], and when the
/// page fills with tools scoring more no other tool could enter it. `None`
/// when it does not fill so: then every tool must be looked at.
fn best_of_matched(
    scratch: &Scratch,
    resources: &[u8],
    limit: usize,
    include: &impl Fn(usize) -> bool,
) -> Option<Vec<usize>> {
    if scratch.matched.len() < limit {
        return None;
    }
    let bound = scratch.effects_bound();
    let mut page = Page::new(limit);
    for &doc in &scratch.matched {
        let doc = doc as usize;
        let score = scratch.final_score(doc, resources);
        if score > bound {
            page.offer(doc, score, include);
        }
    }
    page.worst()
        .is_some_and(|worst| worst.score > bound)
        .then(|| page.into_best())
}

/// [`best_matched`] over every tool. Tools go eight at a time: their final
/// scores are computed together from contiguous arrays (vector
/// instructions), and only those that beat the page's worst are offered.
fn scan_all(
    scratch: &Scratch,
    resources: &[u8],
    limit: usize,
    include: &impl Fn(usize) -> bool,
) -> Vec<usize> {
    let mut page = Page::new(limit);
    let docs = scratch.count.len();
    let mut base = 0;
    while base + LANES <= docs {
        let scores = scratch.final_scores(base, resources);
        for (lane, &score) in scores.iter().enumerate() {
            // A score of 0 is an unmatched tool. Tools come in index
            // order, so one that only ties the worst (a lower index)
            // cannot take its place.
            if score > 0.0 && page.worst().is_none_or(|worst| score > worst.score) {
                page.offer(base + lane, score, include);
            }
        }
        base += LANES;
    }
    for doc in base..docs {
        let score = scratch.final_score(doc, resources);
        if score > 0.0 {
            page.offer(doc, score, include);
        }
    }
    page.into_best()
}

/// The best tools offered so far, at most `limit`, in a heap whose top is
/// the worst; `include` is asked only about tools that would enter it. The
/// heap order is total, so the order of the offers does not change the
/// result.
struct Page {
    best: BinaryHeap<Candidate>,
    limit: usize,
}

impl Page {
    fn new(limit: usize) -> Page {
        Page {
            best: BinaryHeap::with_capacity(limit.min(1024) + 1),
            limit,
        }
    }

    /// Offers a tool with its final score.
    fn offer(&mut self, doc: usize, score: f32, include: &impl Fn(usize) -> bool) {
        let candidate = Candidate {
            doc: doc as u32,
            score,
        };
        let enters = self.best.len() < self.limit
            || self.best.peek().is_some_and(|worst| candidate < *worst);
        if enters && include(doc) {
            if self.best.len() < self.limit {
                self.best.push(candidate);
            } else if let Some(mut worst) = self.best.peek_mut() {
                // One sift down, rather than a push and a pop.
                *worst = candidate;
            }
        }
    }

    /// The page's worst tool, once the page is full.
    fn worst(&self) -> Option<Candidate> {
        self.best
            .peek()
            .copied()
            .filter(|_| self.best.len() >= self.limit)
    }

    fn into_best(self) -> Vec<usize> {
        self.best
            .into_sorted_vec()
            .into_iter()
            .map(|c| c.doc as usize)
            .collect()
    }
}

/// A matched tool while selecting the best ones. Ordered best first: higher
/// score, then lower index (name order).
#[derive(Clone, Copy)]
struct Candidate {
    doc: u32,
    score: f32,
}

impl Ord for Candidate {
    #[inline]
    fn cmp(&self, other: &Candidate) -> Ordering {
        other
            .score
            .total_cmp(&self.score)
            .then_with(|| self.doc.cmp(&other.doc))
    }
}

impl PartialOrd for Candidate {
    #[inline]
    fn partial_cmp(&self, other: &Candidate) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for Candidate {
    fn eq(&self, other: &Candidate) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Candidate {}

#[cfg(test)]
mod tests {
    use crate::test_support::{Tool, index, names, tool};

    #[test]
    fn more_distinct_keywords_first() {
        let tools = [
            tool("order_order_order", "order order order order"),
            tool("z_cancel_order", ""),
        ];
        assert_eq!(
            names(&tools, "cancel order", 2),
            ["z_cancel_order", "order_order_order"]
        );
    }

    #[test]
    fn ties_by_name_and_unmatched_follow_by_name() {
        let tools = [
            tool("a", "nothing"),
            tool("b_order", ""),
            tool("c", "nothing"),
            tool("d_order", ""),
        ];
        assert_eq!(names(&tools, "order", 4), ["b_order", "d_order", "a", "c"]);
    }

    #[test]
    fn include_and_limit_are_respected() {
        let tools = [
            tool("a_order", ""),
            tool("b_order", ""),
            tool("c", ""),
            tool("d", ""),
        ];
        let idx = index(&tools);
        assert_eq!(idx.top("order", 10, |i| i != 0), [1, 2, 3]);
        assert_eq!(idx.top("order", 2, |_| true), [0, 1]);
        assert_eq!(idx.top("", 3, |i| i % 2 == 1), [1, 3]);
        assert!(idx.top("order", 0, |_| true).is_empty());
        assert!(idx.top("order", 5, |_| false).is_empty());
    }

    /// The page of any `limit` and `include` is the head of the full
    /// ranking, filtered: whatever shortcuts the selection takes (a keyword
    /// count floor, offering only tools above it, starting again when
    /// `include` refuses too many), they never change the answer. 245 tools:
    /// the last five are scored apart from the groups of eight.
    #[test]
    fn pages_are_heads_of_the_full_ranking() {
        const WORDS: [&str; 12] = [
            "list", "get", "user", "group", "mail", "event", "calendar", "drive", "item", "member",
            "file", "folder",
        ];
        let mut state = 7u32;
        let mut next = |n: usize| {
            state = state.wrapping_mul(1_103_515_245).wrapping_add(12_345);
            (state >> 16) as usize % n
        };
        let names: Vec<&'static str> = (0..245)
            .map(|i| {
                let words: Vec<&str> = (0..2 + next(3)).map(|_| WORDS[next(WORDS.len())]).collect();
                &*Box::leak(format!("{}_{i}", words.join("_")).into_boxed_str())
            })
            .collect();
        let tools: Vec<Tool> = names.iter().map(|name| tool(name, "")).collect();
        let idx = index(&tools);
        let filters: [&dyn Fn(usize) -> bool; 4] =
            [&|_| true, &|i| i % 3 != 0, &|i| i < 30, &|i| i % 17 == 0];
        for query in [
            "list user",
            "get group member",
            "user",
            "mail folder file",
            "the",
            "calendar event item drive",
            "remove members",
            // Rare words beside common ones: the page may come from the
            // tools the rare words matched alone.
            "list user 17",
            "get group 3 mail 45 member",
            "201 202 203 user list",
            "1 2 3",
        ] {
            let full = idx.top(query, tools.len(), |_| true);
            assert_eq!(full.len(), tools.len(), "{query}");
            for (f, include) in filters.iter().enumerate() {
                for limit in [1, 5, 20, 50] {
                    let expected: Vec<usize> = full
                        .iter()
                        .copied()
                        .filter(|&i| include(i))
                        .take(limit)
                        .collect();
                    assert_eq!(
                        idx.top(query, limit, include),
                        expected,
                        "{query:?}, filter {f}, limit {limit}"
                    );
                }
            }
        }
    }

    /// When rare words beside common ones match few tools, the page may be
    /// chosen among those alone, but only when it fills with tools
    /// matching more keywords than any other tool can: here the tools the
    /// rare word reaches match two keywords, as do many tools it does not
    /// reach and that score higher.
    #[test]
    fn a_page_from_rare_matches_alone_only_when_nobody_else_can_enter() {
        let named = |name: String, description: &'static str| {
            tool(Box::leak(name.into_boxed_str()), description)
        };
        let mut tools: Vec<Tool> = (0..20)
            .map(|i| named(format!("list_users_{i}"), ""))
            .collect();
        tools.extend((0..150).map(|i| named(format!("other_thing_{i}"), "")));
        tools.extend((0..6).map(|i| {
            let description = "Something about users and much else besides, at length, \
                 with a word that the query begins only: zetalike.";
            named(format!("user_{i}"), description)
        }));
        let idx = index(&tools);
        for query in ["list users zet", "users zet", "zet list"] {
            let full = idx.top(query, tools.len(), |_| true);
            for limit in [1, 2, 3, 4, 6] {
                assert_eq!(
                    idx.top(query, limit, |_| true),
                    full[..limit],
                    "{query} {limit}"
                );
            }
        }
    }

    #[test]
    fn results_are_deterministic_and_in_range() {
        let tools: Vec<Tool> = ["a_x", "b_x_y", "c_y", "d_x_x", "e"]
            .into_iter()
            .map(|n| tool(n, "x y x"))
            .collect();
        let idx = index(&tools);
        let first = idx.top("x y", 5, |_| true);
        for _ in 0..5 {
            assert_eq!(idx.top("x y", 5, |_| true), first);
        }
        let mut sorted = first.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, [0, 1, 2, 3, 4]);
    }
}
