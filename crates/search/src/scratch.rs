//! Scratch scoring: the per-thread memory a query adds its scores into.
//!
//! A query must cost what it matches, not the size of the catalog, and a
//! common keyword one pass the compiler vectorises; both follow from how
//! scores are held while a query runs: per-thread arrays indexed by tool,
//! reused and cleaned by what was touched ([`Scratch`]). Here too is the
//! arithmetic of a score (BM25, lifted by route coverage), for one tool or
//! for eight at a time with bit-identical results.

use std::cell::RefCell;
use std::sync::Arc;

use super::effects::KeywordEffect;
use super::index::Posting;

/// BM25 term-frequency saturation.
pub(super) const K1: f32 = 1.2;

/// How much route coverage lifts a score: a tool's score is multiplied by
/// `1 + ROUTE_COVERAGE × covered`, where `covered` is the share of its
/// route's resource segments (literal path words, not parameters, not the
/// method, not versions like `v6`, not words most routes of its document
/// share) that the query's
/// keywords match. Among tools matching as many keywords, `list users`
/// then prefers `GET /users` (all of its resource named) to
/// `GET /users/{id}/todo/lists` (a third of it unasked for).
pub(super) const ROUTE_COVERAGE: f32 = 1.0;

/// Tools scored together by [`Scratch::final_scores`].
pub(super) const LANES: usize = 8;

/// The ranking score: the keywords' BM25F sum lifted by route coverage
/// (see [`ROUTE_COVERAGE`]), then coordinated: multiplied by the share of
/// the query's keywords the tool matched. `routes` is the tool's count of
/// resource segments, `hits` the keywords that matched one, `count` the
/// keywords matched and `keywords` the query's (all whole numbers); a tool
/// with no resource segment is not lifted (0 / 1).
///
/// The share only scales the score: ranking by it first (more keywords
/// matched, then score) lets a tool matching many common words (`get`,
/// `new`, `account`) outrank one matching the few rare words that name the
/// operation, and in a large catalog there is always such a tool for a
/// sentence of many keywords.
#[inline]
fn ranked(score: f32, hits: f32, routes: f32, count: f32, keywords: f32) -> f32 {
    let covered = hits.min(routes) / routes.max(1.0);
    score * (1.0 + ROUTE_COVERAGE * covered) * (count / keywords.max(1.0))
}

thread_local! {
    /// Each thread's query working memory, reused so that a query costs
    /// what it matches rather than the size of the catalog.
    static SCRATCH: RefCell<Scratch> = RefCell::new(Scratch::default());
}

/// Runs `f` with this thread's scratch, sized to `docs` and clean; with a
/// fresh one when it is busy (a re-entrant call from `include`).
pub(super) fn with_scratch<R>(docs: usize, f: impl FnOnce(&mut Scratch) -> R) -> R {
    SCRATCH.with(|cell| match cell.try_borrow_mut() {
        Ok(mut scratch) => scratch.run(docs, f),
        Err(_) => Scratch::default().run(docs, f),
    })
}

/// Per-query working memory: one array per quantity, indexed by tool, so
/// that a pass over every tool ([`Scratch::settle_dense`]) runs on
/// contiguous numbers the compiler turns into vector instructions. Between
/// queries every entry is zero; a query cleans up only what it touched.
///
/// A keyword settled over every tool is not added to the scores: its
/// [`KeywordEffect`] is kept aside (`effects`). A tool's whole score is
/// then summed ([`Scratch::total_score`]) only for the tools that could
/// make the page, instead of passing over every tool's score once per
/// common keyword and again to clear it.
#[derive(Default)]
pub(super) struct Scratch {
    /// Score from the keywords settled tool by tool; zero when none matched.
    score: Vec<f32>,
    /// The current keyword's weighted frequency.
    frequency: Vec<f32>,
    /// Distinct keywords matched (all of them, effects included).
    pub(super) count: Vec<u8>,
    /// 1 when the current keyword matched one of the tool's resource
    /// segments.
    resource_now: Vec<u8>,
    /// Keywords settled tool by tool that matched one of its resource
    /// segments.
    resource_hits: Vec<u8>,
    /// Tools given a score by a keyword settled tool by tool, in the order
    /// first matched.
    pub(super) matched: Vec<u32>,
    /// Effects of the keywords settled over every tool, in query order; when
    /// there are any, every tool is a candidate (`scan_all`).
    pub(super) effects: Vec<Arc<KeywordEffect>>,
    /// Effect buffers of finished queries nobody kept, to settle into again.
    spare: Vec<KeywordEffect>,
    /// Keywords that count so far (an upper bound of any tool's count).
    pub(super) keywords: u8,
    /// Whether the effects' keyword counts were added to `count` (for a
    /// pass over every tool); until then `count` holds only the keywords
    /// settled tool by tool, and [`Scratch::total_count`] adds the rest.
    counts_applied: bool,
    /// Tools the current keyword touched, in the order first touched.
    pub(super) touched: Vec<u32>,
    /// Set while a query runs: still set when the next one starts means the
    /// last was interrupted (a panic in `include`), so all is cleared.
    busy: bool,
}

/// Effect buffers a thread keeps for reuse (about 6 bytes per tool each).
const SPARE_EFFECTS: usize = 2;

impl Scratch {
    fn run<R>(&mut self, docs: usize, f: impl FnOnce(&mut Scratch) -> R) -> R {
        if self.busy || self.score.len() != docs {
            *self = Scratch {
                score: vec![0.0; docs],
                frequency: vec![0.0; docs],
                count: vec![0; docs],
                resource_now: vec![0; docs],
                resource_hits: vec![0; docs],
                ..Scratch::default()
            };
        }
        self.busy = true;
        let result = f(self);
        // Put back what the query touched (frequencies and resource_now are
        // zero again once a keyword settles): one by one when it is little,
        // a plain fill (sequential, far cheaper per tool) when it is much.
        if self.matched.len() > docs / 16 {
            self.score.fill(0.0);
            self.count.fill(0);
            self.resource_hits.fill(0);
        } else {
            if self.counts_applied {
                self.count.fill(0);
            }
            for &doc in &self.matched {
                let doc = doc as usize;
                self.score[doc] = 0.0;
                self.count[doc] = 0;
                self.resource_hits[doc] = 0;
            }
        }
        self.matched.clear();
        for effect in self.effects.drain(..) {
            if let Ok(effect) = Arc::try_unwrap(effect)
                && self.spare.len() < SPARE_EFFECTS
            {
                self.spare.push(effect);
            }
        }
        self.keywords = 0;
        self.counts_applied = false;
        self.busy = false;
        result
    }

    pub(super) fn add(&mut self, doc: usize, weight: f32, resource: bool) {
        let (Some(frequency), Some(resource_now)) =
            (self.frequency.get_mut(doc), self.resource_now.get_mut(doc))
        else {
            return;
        };
        if *frequency == 0.0 {
            self.touched.push(doc as u32);
        }
        *frequency += weight;
        *resource_now |= u8::from(resource);
    }

    /// Like [`Scratch::add`] for a whole posting list, without noting the
    /// tools touched; returns how many it touched first.
    pub(super) fn add_dense(&mut self, postings: &[Posting], quality: f32) -> usize {
        let mut first = 0;
        for posting in postings {
            let doc = posting.doc();
            let (Some(frequency), Some(resource_now)) =
                (self.frequency.get_mut(doc), self.resource_now.get_mut(doc))
            else {
                continue;
            };
            first += usize::from(*frequency == 0.0);
            *frequency += quality * posting.weight;
            *resource_now |= u8::from(posting.resource());
        }
        first
    }

    /// Turns the current keyword's frequencies into scores and keyword
    /// counts, with `df` tools for its IDF.
    pub(super) fn settle(&mut self, docs: usize, df: usize) {
        let idf = idf(docs, df);
        self.keywords = self.keywords.saturating_add(1);
        for &doc in &self.touched {
            let doc = doc as usize;
            if self.score[doc] == 0.0 {
                self.matched.push(doc as u32);
            }
            let tf = std::mem::take(&mut self.frequency[doc]);
            self.score[doc] += bm25(idf, tf);
            let resource = std::mem::take(&mut self.resource_now[doc]);
            self.count[doc] = self.count[doc].saturating_add(1);
            self.resource_hits[doc] = self.resource_hits[doc].saturating_add(resource);
        }
        self.touched.clear();
    }

    /// [`Scratch::settle`] after [`Scratch::add_dense`], as the keyword's
    /// [`KeywordEffect`] on every tool (to [`Scratch::apply`]); clears the
    /// frequencies. Passes over every tool without branches: an untouched
    /// tool goes through the same arithmetic (its frequency is 0, so its
    /// contribution is exactly 0), which lets them run as vector
    /// instructions.
    pub(super) fn settle_dense(&mut self, docs: usize, df: usize) -> KeywordEffect {
        let idf = idf(docs, df);
        let mut effect = self.spare.pop().unwrap_or_default();
        effect.counted.clear();
        effect.counted.extend(
            self.frequency
                .iter()
                .map(|frequency| u8::from(*frequency > 0.0)),
        );
        effect.resource.clear();
        effect.resource.extend(
            effect
                .counted
                .iter()
                .zip(self.resource_now.iter_mut())
                .map(|(counted, resource)| counted & std::mem::take(resource)),
        );
        effect.contribution.clear();
        effect.contribution.extend(
            self.frequency
                .iter_mut()
                .map(|frequency| bm25(idf, std::mem::take(frequency))),
        );
        effect.max = effect.contribution.iter().copied().fold(0.0, f32::max);
        effect
    }

    /// Adds a settled keyword to the keyword counts, scores and resource
    /// hits of the tools that are asked about ([`Scratch::total_count`],
    /// [`Scratch::total_score`]); to every tool's count only when a page
    /// needs a pass over every tool ([`Scratch::apply_counts`]).
    pub(super) fn apply(&mut self, effect: Arc<KeywordEffect>) {
        if self.counts_applied {
            add_counts(&mut self.count, &effect.counted);
        }
        self.keywords = self.keywords.saturating_add(1);
        self.effects.push(effect);
    }

    /// Adds every effect's keyword counts to `count`, one vectorised pass
    /// each, for a selection that looks at every tool's count.
    pub(super) fn apply_counts(&mut self) {
        if !self.counts_applied {
            for effect in &self.effects {
                add_counts(&mut self.count, &effect.counted);
            }
            self.counts_applied = true;
        }
    }

    /// How many distinct keywords a tool matched, effects included.
    pub(super) fn total_count(&self, doc: usize) -> u8 {
        let mut count = self.count.get(doc).copied().unwrap_or(0);
        if !self.counts_applied {
            for effect in &self.effects {
                count = count.saturating_add(effect.counted.get(doc).copied().unwrap_or(0));
            }
        }
        count
    }

    /// A tool's score: what the keywords settled tool by tool gave it, then
    /// each effect's contribution in query order.
    fn total_score(&self, doc: usize) -> f32 {
        let mut score = self.score.get(doc).copied().unwrap_or(0.0);
        for effect in &self.effects {
            score += effect.contribution.get(doc).copied().unwrap_or(0.0);
        }
        score
    }

    /// How many counted keywords matched one of a tool's resource segments.
    fn total_resource_hits(&self, doc: usize) -> u8 {
        let mut hits = self.resource_hits.get(doc).copied().unwrap_or(0);
        for effect in &self.effects {
            hits = hits.saturating_add(effect.resource.get(doc).copied().unwrap_or(0));
        }
        hits
    }

    /// A tool's ranking score ([`ranked`]).
    pub(super) fn final_score(&self, doc: usize, resources: &[u8]) -> f32 {
        let routes = resources.get(doc).copied().unwrap_or(0);
        ranked(
            self.total_score(doc),
            f32::from(self.total_resource_hits(doc)),
            f32::from(routes),
            f32::from(self.total_count(doc)),
            f32::from(self.keywords),
        )
    }

    /// More than any tool that only effects matched can score: each
    /// effect's largest contribution, lifted by full route coverage, with
    /// every effect's keyword matched.
    pub(super) fn effects_bound(&self) -> f32 {
        let most: f32 = self.effects.iter().map(|effect| effect.max).sum();
        let share = self.effects.len() as f32 / f32::from(self.keywords).max(1.0);
        most * (1.0 + ROUTE_COVERAGE) * share * 1.001
    }

    /// [`Scratch::final_score`] of the [`LANES`] tools from `base`, with
    /// the same arithmetic in the same order, each step on all of them at
    /// once (resource hits summed as floats: small whole numbers, exact).
    pub(super) fn final_scores(&self, base: usize, resources: &[u8]) -> [f32; LANES] {
        let span = base..base + LANES;
        let mut total = [0.0f32; LANES];
        let mut hits = [0.0f32; LANES];
        let mut count = [0u8; LANES];
        if let (Some(score), Some(resource_hits), Some(counts)) = (
            self.score.get(span.clone()),
            self.resource_hits.get(span.clone()),
            self.count.get(span.clone()),
        ) {
            for lane in 0..LANES {
                total[lane] = score[lane];
                hits[lane] = f32::from(resource_hits[lane]);
                count[lane] = counts[lane];
            }
        }
        for effect in &self.effects {
            let (Some(contribution), Some(resource), Some(counted)) = (
                effect.contribution.get(span.clone()),
                effect.resource.get(span.clone()),
                effect.counted.get(span.clone()),
            ) else {
                continue;
            };
            for lane in 0..LANES {
                total[lane] += contribution[lane];
                hits[lane] += f32::from(resource[lane]);
                if !self.counts_applied {
                    count[lane] = count[lane].saturating_add(counted[lane]);
                }
            }
        }
        let mut routes = [0.0f32; LANES];
        if let Some(counted) = resources.get(span) {
            for lane in 0..LANES {
                routes[lane] = f32::from(counted[lane]);
            }
        }
        let mut scores = [0.0; LANES];
        for lane in 0..LANES {
            scores[lane] = ranked(
                total[lane],
                hits[lane],
                routes[lane],
                f32::from(count[lane]),
                f32::from(self.keywords),
            );
        }
        scores
    }

    pub(super) fn is_matched(&self, doc: usize) -> bool {
        self.total_score(doc) > 0.0
    }
}

/// `count[i] += counted[i]` for every tool, saturating.
fn add_counts(count: &mut [u8], counted: &[u8]) {
    for (count, counted) in count.iter_mut().zip(counted) {
        *count = count.saturating_add(*counted);
    }
}

/// One keyword's BM25 contribution for a weighted frequency `tf` (0 when
/// `tf` is 0).
fn bm25(idf: f32, tf: f32) -> f32 {
    idf * tf * (K1 + 1.0) / (tf + K1)
}

/// BM25 inverse document frequency; always positive.
fn idf(docs: usize, df: usize) -> f32 {
    let n = docs as f32;
    let df = (df as f32).min(n);
    (1.0 + (n - df + 0.5) / (df + 0.5)).ln()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::{Tool, common_word_tools, index, names, tool};
    use crate::words::query_keywords;

    #[test]
    fn rare_keywords_outweigh_common_ones() {
        let mut tools = vec![tool("a_list_pets", ""), tool("b_list_printers", "")];
        let fillers = ["c_list_x", "d_list_y", "e_list_z", "f_list_w"];
        tools.extend(fillers.iter().map(|n| tool(n, "")));
        assert_eq!(names(&tools, "printers list", 1), ["b_list_printers"]);
        assert_eq!(names(&tools, "list printers", 1), ["b_list_printers"]);
    }

    /// Tools scored eight at a time get exactly the score each gets alone
    /// (the same operations in the same order), bit for bit.
    #[test]
    fn scores_in_groups_of_eight_equal_scores_one_by_one() {
        let tools = common_word_tools(93);
        let idx = index(&tools);
        for query in [
            "list users",
            "get group member mail",
            "the user",
            "returns items",
        ] {
            let words = query_keywords(query);
            with_scratch(idx.doc_count, |scratch| {
                idx.score_query(&words, None, scratch);
                assert!(!scratch.effects.is_empty(), "{query}: no common word");
                for base in (0..idx.doc_count - LANES).step_by(LANES) {
                    let together = scratch.final_scores(base, &idx.resources);
                    for (lane, score) in together.iter().enumerate() {
                        let alone = scratch.final_score(base + lane, &idx.resources);
                        assert_eq!(score.to_bits(), alone.to_bits(), "{query}: {}", base + lane);
                    }
                }
            });
        }
    }

    #[test]
    fn include_may_search_again() {
        let tools = [tool("a_order", ""), tool("b_order", ""), tool("c", "")];
        let idx = index(&tools);
        let nested = idx.top("order", 3, |i| idx.top("c", 1, |_| true) != [i]);
        assert_eq!(nested, [0, 1]);
        assert_eq!(idx.top("order", 3, |_| true), [0, 1, 2]);
    }

    #[test]
    fn scratch_recovers_from_a_panicking_include() {
        let tools = [tool("a_order", ""), tool("b", "")];
        let idx = index(&tools);
        let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            idx.top("order", 2, |_| panic!("include failed"))
        }));
        assert!(caught.is_err());
        assert_eq!(idx.top("b", 2, |_| true), [1, 0]);
        let other = index(&[tool("x", ""), tool("y", ""), tool("z", "")]);
        assert_eq!(other.top("", 3, |_| true), [0, 1, 2]);
        assert_eq!(idx.top("order", 2, |_| true), [0, 1]);
    }

    #[test]
    fn the_route_whose_resource_the_query_names_wins_among_equals() {
        let tools = [
            Tool {
                route: "GET /users",
                ..tool(
                    "users_user_list_user",
                    "Get user. Retrieve the properties of user objects.",
                )
            },
            Tool {
                route: "GET /users/{user-id}/todo/lists",
                ..tool(
                    "users_todo_list_lists",
                    "List lists. Get a list of the todoTaskList objects in a list.",
                )
            },
        ];
        assert_eq!(names(&tools, "list users", 2)[0], "users_user_list_user");
        assert_eq!(
            names(&tools, "list todo lists", 2)[0],
            "users_todo_list_lists"
        );
    }
}
