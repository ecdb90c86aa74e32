//! Page selection: the best `limit` scored tools that `include` accepts.
//!
//! `include` may be costly and most matched tools cannot make the page, so
//! the page is a bounded heap that asks `include` only about tools that
//! would enter it. When a common keyword made every tool a candidate, tools
//! are scanned eight at a time ([`scan_all`]), their keyword counts tested
//! as the bytes of one word against a floor that only tools able to make
//! the page reach.

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
        let mut page = Page::new(limit, 0);
        for &doc in &scratch.matched {
            let doc = doc as usize;
            let score = scratch.final_score(doc, resources);
            page.offer(doc, scratch.count[doc], score, include);
        }
        return page.into_best();
    }
    // A tool no keyword settled tool by tool matched holds at most one
    // count per effect: when enough of the tools those keywords matched
    // hold more, the page is theirs, and nobody else need be looked at.
    if let Some(best) = best_of_matched(scratch, resources, limit, include) {
        return best;
    }
    // Otherwise every tool is a candidate: rather than offering all of them,
    // offer those matching enough keywords to make the page. Ranking is by
    // keyword count first, so when at least `limit` tools match `floor` or
    // more keywords, the page holds only such tools.
    scratch.apply_counts();
    let floor = (1..=scratch.keywords)
        .rev()
        .find(|&floor| at_least(&scratch.count, floor) >= limit)
        .unwrap_or(0);
    let best = scan_all(scratch, floor, resources, limit, include);
    if best.len() < limit && floor > 0 {
        // `include` refused too many of them: offer every matched tool.
        return scan_all(scratch, 0, resources, limit, include);
    }
    best
}

/// The page when it can be chosen among the tools that keywords settled
/// tool by tool matched (`scratch.matched`), with effects (keywords
/// settled over every tool) in the query: any other tool matched only
/// effects, so at most one keyword per effect, and when the page fills
/// with tools matching more (the ranking is by keyword count first) no
/// other tool could enter it. `None` when it does not fill so: then every
/// tool must be looked at.
fn best_of_matched(
    scratch: &Scratch,
    resources: &[u8],
    limit: usize,
    include: &impl Fn(usize) -> bool,
) -> Option<Vec<usize>> {
    let effects = u8::try_from(scratch.effects.len()).ok()?;
    let above_effects = effects.checked_add(1)?;
    if scratch.matched.len() < limit {
        return None;
    }
    let mut page = Page::new(limit, above_effects);
    for &doc in &scratch.matched {
        let doc = doc as usize;
        let count = scratch.total_count(doc);
        if count >= page.floor {
            page.offer(doc, count, scratch.final_score(doc, resources), include);
        }
    }
    page.worst()
        .is_some_and(|worst| worst.count >= above_effects)
        .then(|| page.into_best())
}

/// How many of `counts` are at least `floor`: summed in bytes, 255 at a
/// time, which the compiler turns into sixteen comparisons per instruction.
fn at_least(counts: &[u8], floor: u8) -> usize {
    counts
        .chunks(255)
        .map(|chunk| {
            let reached: u8 = chunk.iter().map(|&c| u8::from(c >= floor)).sum();
            usize::from(reached)
        })
        .sum()
}

/// [`best_matched`] over every tool: offers the matched tools matching at
/// least `floor` keywords, and fewer once the page is full of tools
/// matching more. Tools go eight at a time: their keyword counts are
/// tested at once (as the bytes of one word), and the final scores of the
/// eight are computed together from contiguous arrays (vector
/// instructions) only when one of them could enter the page.
fn scan_all(
    scratch: &Scratch,
    floor: u8,
    resources: &[u8],
    limit: usize,
    include: &impl Fn(usize) -> bool,
) -> Vec<usize> {
    const HIGH: u64 = 0x8080_8080_8080_8080;
    const ONES: u64 = 0x0101_0101_0101_0101;
    let mut page = Page::new(limit, floor);
    let docs = scratch.count.len();
    let mut base = 0;
    while base + LANES <= docs {
        let counts: [u8; LANES] = lanes(&scratch.count, base);
        let word = u64::from_le_bytes(counts);
        // A byte is at least the floor (1..=128) when its high bit is set
        // or its low seven bits plus 128 − floor reach 128: no carry
        // crosses into the next byte. (Above 128 this passes every byte
        // from 128 on, more than needed; the count is tested again.)
        let mut reached = if page.floor == 0 {
            HIGH
        } else {
            let step = 128u64.saturating_sub(u64::from(page.floor)) * ONES;
            (((word & !HIGH) + step) | word) & HIGH
        };
        if reached != 0 {
            let scores = scratch.final_scores(base, resources);
            if let Some(worst) = page.worst() {
                // Tools come in index order, so one that only ties the
                // worst (a lower index) cannot take its place.
                let mut beats = 0u64;
                for lane in 0..LANES {
                    let better = counts[lane] > worst.count
                        || (counts[lane] == worst.count && scores[lane] > worst.score);
                    beats |= u64::from(better) << (lane * 8 + 7);
                }
                reached &= beats;
            }
            while reached != 0 {
                let lane = (reached.trailing_zeros() / 8) as usize;
                // A score of 0 is an unmatched tool (with a floor of 0).
                if scores[lane] > 0.0 {
                    page.offer(base + lane, counts[lane], scores[lane], include);
                }
                reached &= reached - 1;
            }
        }
        base += LANES;
    }
    for doc in base..docs {
        let score = scratch.final_score(doc, resources);
        if score > 0.0 {
            page.offer(doc, scratch.count[doc], score, include);
        }
    }
    page.into_best()
}

/// `values[base..base + N]` as an array (zeros past the end).
fn lanes<T: Copy + Default, const N: usize>(values: &[T], base: usize) -> [T; N] {
    values
        .get(base..base + N)
        .and_then(|slice| <[T; N]>::try_from(slice).ok())
        .unwrap_or([T::default(); N])
}

/// The best tools offered so far, at most `limit`, in a heap whose top is
/// the worst; `include` is asked only about tools that would enter it. The
/// heap order is total, so the order of the offers does not change the
/// result.
struct Page {
    best: BinaryHeap<Candidate>,
    limit: usize,
    /// Tools matching fewer keywords are not offered (or are refused): once
    /// the page is full, the worst one's count.
    floor: u8,
}

impl Page {
    fn new(limit: usize, floor: u8) -> Page {
        Page {
            best: BinaryHeap::with_capacity(limit.min(1024) + 1),
            limit,
            floor,
        }
    }

    /// Offers a tool with its keyword count and final score.
    fn offer(&mut self, doc: usize, count: u8, score: f32, include: &impl Fn(usize) -> bool) {
        // Once the page is full, a tool matching fewer keywords than its
        // worst cannot enter: most tools of a broad query end here, cheaply.
        if count < self.floor {
            return;
        }
        let candidate = Candidate {
            doc: doc as u32,
            count,
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
            if self.best.len() >= self.limit {
                self.floor = self.best.peek().map_or(0, |worst| worst.count);
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

/// A matched tool while selecting the best ones. Ordered best first: more
/// keywords, then higher score, then lower index (name order).
#[derive(Clone, Copy)]
struct Candidate {
    doc: u32,
    count: u8,
    score: f32,
}

impl Ord for Candidate {
    #[inline]
    fn cmp(&self, other: &Candidate) -> Ordering {
        other
            .count
            .cmp(&self.count)
            .then_with(|| other.score.total_cmp(&self.score))
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
    use crate::search::test_support::{Tool, index, names, tool};

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
