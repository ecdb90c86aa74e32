//! The search index behind `search_tools`.
//!
//! An agent finds an operation by describing it in a few words, so every
//! tool's text is indexed once, when the catalog is built, and queries are
//! answered from that inverted index without reading tool text again.
//!
//! # Words
//! Text is split into tokens on anything that is not a letter or digit and at
//! camelCase and snake_case boundaries (`listOpenOrders`, `list_open_orders`
//! and `GET /orders/{orderId}` all give plain words), then *folded* ([`fold`]:
//! Unicode NFKD, combining marks removed, lowercased). A query is split the
//! same way into keywords; duplicates collapse and only the first
//! [`MAX_KEYWORDS`] distinct ones are used.
//!
//! # Matching
//! A keyword matches a token when
//! - both have the same singular form ([`singular`]: `policies` ~ `policy`,
//!   and of course `order` ~ `order`): a **whole-token** match;
//! - the token starts with the keyword (`ord` → `orders`): a **prefix**
//!   match, worth [`PREFIX`] of a whole one (keywords of one character match
//!   whole tokens only);
//! - the token is a listed synonym of the keyword ([`SYNONYMS`]: verbs and
//!   their HTTP method, `remove` → `delete`, `add` → `post`, so the route's
//!   method is found too; common abbreviations, `repository` → `repo`): a
//!   **synonym** match, worth [`SYNONYM`]. It counts as a matched keyword,
//!   but the keyword's IDF comes from its literal matches.
//!
//! A few English function words ([`STOPWORDS`]: `a`, `the`, `of`, …) are
//! ignored when the query has other words; a query of nothing else is
//! ranked by them, matching whole tokens only.
//!
//! # Ranking
//! Keywords rank, they never filter. Tools are ordered by
//! 1. the number of distinct keywords they match, more first;
//! 2. a BM25F score: for each keyword, the tool's matches are weighted by
//!    field ([`FIELD_WEIGHT`]: name and searchTerms above tags and route,
//!    above argument names, above the description) and by match kind,
//!    normalised by the field's length ([`FIELD_B`]), saturated ([`K1`]) and
//!    multiplied by the keyword's inverse document frequency, so words that
//!    most tools share (`list`, `get`) weigh little. The first words of the
//!    description (its summary, usually) weigh a little more than the rest.
//!    Outside the description a word counts once per field: in
//!    `users_user_list_users` the repeats are structure, not emphasis;
//!    That score is then lifted by route coverage ([`ROUTE_COVERAGE`]): the
//!    share of the route's resource segments (its literal path words, less
//!    versions and those most routes of its document share, like
//!    `/rest/api/3`) that the keywords name, so `list users` prefers
//!    `GET /users` to `GET /users/{id}/todo/lists`;
//! 3. the tool's name (documents come in name order, so their index).
//!
//! Tools that match nothing follow by name; an empty query lists everything
//! by name. The ranking uses no hashing order, clock or randomness, so the
//! same catalog and query always give the same answer.
//!
//! # Cost
//! Tokens are grouped by singular form, and each group has a posting list:
//! the tools containing it, with their precomputed BM25F weight. The token
//! dictionary is sorted, so a prefix is a binary search. A query reads only
//! the posting lists of the groups it matches into per-thread scratch
//! memory (one array per quantity, reused, and cleaned by what was
//! touched), keeps the best `limit` in a bounded heap (asking `include`
//! only about tools that would enter it), and fills up with unmatched
//! tools in index order. A rare keyword costs what it matches. A common
//! one (with its synonyms, reaching a sixteenth of the tools or more) is
//! settled in branch-free passes over every tool, which the compiler
//! vectorises. What such a keyword adds to every tool is a
//! [`KeywordEffect`]: the index computes those of its [`COMMON_WORDS`]
//! commonest words when it is built, and the served snapshot keeps others
//! as queries meet them, so a common word usually costs one vectorised
//! pass adding its keyword counts; the page is then chosen among the tools
//! matching enough keywords to make it, and only their scores are summed.
//! On the Microsoft Graph catalog (11,422 tools) a query takes some ten
//! microseconds.

use std::cell::RefCell;
use std::cmp::Ordering;
use std::collections::BinaryHeap;
use std::collections::HashMap;
use std::collections::HashSet;
use std::ops::Range;
use std::sync::Arc;

use unicode_normalization::UnicodeNormalization;
use unicode_normalization::char::is_combining_mark;

/// Keywords beyond this many distinct ones are ignored, which bounds the cost
/// of a query whatever its length.
pub const MAX_KEYWORDS: usize = 32;

/// Text of one tool as search sees it. Documents are passed in name order
/// (ascending), so a document's index is also its rank among ties/unmatched.
pub struct SearchFields<'a> {
    pub name: &'a str,
    pub description: &'a str,
    pub search_terms: &'a [String],
    /// `METHOD /path`, e.g. `GET /orders/{id}`.
    pub route: &'a str,
    pub argument_names: Vec<&'a str>,
    pub tags: &'a [String],
    /// The API document the tool comes from: route segments most of a
    /// document's routes share (`/rest/api/3`) say nothing about any one.
    pub document: &'a str,
}

/// The searchable fields, in the order of [`FIELD_WEIGHT`] and [`FIELD_B`].
/// The description is two fields: its first [`LEAD_TOKENS`] tokens (the
/// lead, usually the summary) and the rest.
const FIELDS: usize = 7;
const NAME: usize = 0;
const SEARCH_TERMS: usize = 1;
const TAGS: usize = 2;
const ROUTE: usize = 3;
const ARGUMENTS: usize = 4;
const LEAD: usize = 5;
const DESCRIPTION: usize = 6;

/// How much a match in each field weighs (BM25F field boost).
const FIELD_WEIGHT: [f32; FIELDS] = [3.0, 3.0, 1.5, 1.5, 1.0, 0.9, 0.6];
/// BM25 length normalisation per field (0: none, 1: full). Names are
/// normalised most: `create_gist` is more about gists than
/// `gists_create_comment_reaction`.
const FIELD_B: [f32; FIELDS] = [0.9, 0.5, 0.3, 0.3, 0.3, 0.5, 0.75];
/// How many tokens of the description make its lead.
const LEAD_TOKENS: usize = 10;
/// BM25 term-frequency saturation.
const K1: f32 = 1.2;

/// Weight of a whole-token match (same word, or same singular form).
const WHOLE: f32 = 1.0;
/// Weight of a match where the token only starts with the keyword.
const PREFIX: f32 = 0.4;
/// A keyword whose posting lists reach at least one tool in this many
/// settles by one pass over every tool ([`SearchIndex::score_groups`]),
/// and its effect may be kept. (Sixteen rather than eight: on Graph, new
/// queries of known words rank a third faster, for a few more kept
/// effects.)
const DENSE_FROM: usize = 16;
/// Weight of a match through [`SYNONYMS`].
const SYNONYM: f32 = 0.3;

/// Function words that say nothing about an operation. Sorted.
const STOPWORDS: &[&str] = &[
    "a", "about", "all", "an", "and", "any", "are", "as", "at", "be", "by", "do", "does", "for",
    "from", "how", "i", "in", "into", "is", "it", "its", "my", "of", "on", "or", "our", "some",
    "that", "the", "their", "these", "this", "those", "to", "via", "we", "what", "which", "with",
    "you", "your",
];

/// Words that ask for the same thing, compared by singular form: per entry,
/// the words searched for, then other words that only ask for them. A
/// keyword in either list also matches the searched words other than
/// itself, weakly (see [`SYNONYM`]). The verb entries include the HTTP
/// methods, so, the route being searched, `remove` finds `DELETE /pets/{id}`.
const SYNONYMS: &[(&[&str], &[&str])] = &[
    (
        &["get", "list"],
        &["read", "fetch", "retrieve", "show", "view", "find"],
    ),
    (
        &["post", "create", "add"],
        &["new", "register", "make", "insert"],
    ),
    (&["delete", "remove"], &["destroy", "erase", "unregister"]),
    (
        &["put", "patch", "update"],
        &["edit", "modify", "change", "replace"],
    ),
    // Abbreviations common in API names and paths.
    (&["administrator", "admin"], &[]),
    (&["application", "app"], &[]),
    (&["attribute", "attr"], &[]),
    (&["authentication", "auth"], &[]),
    (&["authorization", "auth"], &[]),
    (&["certificate", "cert"], &[]),
    (&["configuration", "config"], &[]),
    (&["database", "db"], &[]),
    (&["directory", "dir"], &[]),
    (&["document", "doc"], &[]),
    (&["environment", "env"], &[]),
    (&["image", "img"], &[]),
    (&["information", "info"], &[]),
    (&["message", "msg"], &[]),
    (&["organization", "org"], &[]),
    (&["parameter", "param"], &[]),
    (&["permission", "perm"], &[]),
    (&["preference", "pref"], &[]),
    (&["reference", "ref"], &[]),
    (&["repository", "repo"], &[]),
    (&["specification", "spec"], &[]),
    (&["statistic", "stat"], &[]),
];

/// Plurals that the suffix rules get wrong, with their singular.
const IRREGULAR: &[(&str, &str)] = &[
    ("analyses", "analysis"),
    ("children", "child"),
    ("criteria", "criterion"),
    ("indices", "index"),
    ("matrices", "matrix"),
    ("men", "man"),
    ("people", "person"),
    ("vertices", "vertex"),
    ("women", "woman"),
];

/// Singular words ending in `s` that the suffix rules would otherwise cut.
const INVARIANT: &[&str] = &[
    "alias", "always", "atlas", "bias", "canvas", "gas", "has", "news", "series", "species",
    "this", "was", "yes",
];

/// One posting: a tool containing a word group, with the group's BM25F
/// pseudo-frequency there (field-weighted, length-normalised).
/// Eight bytes, so a long posting list stays dense in cache.
#[derive(Clone, Copy, Debug)]
struct Posting {
    /// The tool, and in the top bit ([`RESOURCE_BIT`]) whether the group
    /// names one of its resource segments (see [`ROUTE_COVERAGE`]).
    doc_and_resource: u32,
    weight: f32,
}

const RESOURCE_BIT: u32 = 1 << 31;

impl Posting {
    fn doc(&self) -> usize {
        (self.doc_and_resource & !RESOURCE_BIT) as usize
    }

    fn resource(&self) -> bool {
        self.doc_and_resource & RESOURCE_BIT != 0
    }
}

/// How much route coverage lifts a score: a tool's score is multiplied by
/// `1 + ROUTE_COVERAGE × covered`, where `covered` is the share of its
/// route's resource segments (literal path words, not parameters, not the
/// method, not versions like `v6`, not words most routes of its document
/// share) that the query's
/// keywords match. Among tools matching as many keywords, `list users`
/// then prefers `GET /users` (all of its resource named) to
/// `GET /users/{id}/todo/lists` (a third of it unasked for).
const ROUTE_COVERAGE: f32 = 1.0;
/// A route word in more than this share of its document's routes (when the
/// document has at least [`SHARED_MIN_ROUTES`]) is a base path segment, not
/// a resource.
const SHARED_SHARE: f32 = 0.5;
const SHARED_MIN_ROUTES: usize = 4;

/// How many of a catalog's commonest words get their effect computed with
/// the index: 6 bytes per tool each, so about 9 MB for Microsoft Graph
/// (11k tools), a few percent of what its gateway holds, for a few
/// milliseconds of build time.
const COMMON_WORDS: usize = 128;

/// Effects collected while the index computes its common words.
#[derive(Default)]
struct Collected(RefCell<HashMap<String, Arc<KeywordEffect>>>);

impl KeywordEffects for Collected {
    fn get(&self, _word: &str) -> Option<Arc<KeywordEffect>> {
        None
    }

    fn insert(&self, word: &str, effect: Arc<KeywordEffect>) {
        self.0.borrow_mut().insert(word.to_string(), effect);
    }
}

/// One keyword of a query while it is scored.
struct Keyword<'a> {
    word: &'a str,
    effects: Option<&'a dyn KeywordEffects>,
}

/// What one common keyword (one settled over every tool) does to the
/// scores of a catalog: for each tool, its BM25 contribution (0 where it
/// does not match) and whether it adds a resource hit. Adding it again is
/// one vectorised pass, with exactly the result of scoring the keyword.
#[derive(Clone, Default)]
pub struct KeywordEffect {
    contribution: Vec<f32>,
    /// 1 where the keyword matched (added to the keyword count).
    counted: Vec<u8>,
    resource: Vec<u8>,
}

impl std::fmt::Debug for KeywordEffect {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "KeywordEffect({} tools)", self.contribution.len())
    }
}

impl KeywordEffect {
    /// Heap bytes held.
    pub fn bytes(&self) -> usize {
        self.contribution.len() * 4 + self.counted.len() + self.resource.len()
    }
}

/// Where the effects of common keywords are kept between queries: by
/// whoever owns the index's lifetime (the served snapshot), since an
/// effect is only true of the index it was computed on.
pub trait KeywordEffects {
    /// Whether [`KeywordEffects::insert`] keeps anything (when not, effects
    /// are not copied out for it).
    fn keeps(&self) -> bool {
        true
    }
    fn get(&self, word: &str) -> Option<Arc<KeywordEffect>>;
    fn insert(&self, word: &str, effect: Arc<KeywordEffect>);
}

/// An inverted index over the tools of a catalog. Immutable once built, so
/// it is `Send + Sync` and any number of queries may run on it at once.
#[derive(Debug)]
pub struct SearchIndex {
    doc_count: usize,
    /// Distinct tokens, sorted.
    terms: Vec<Box<str>>,
    /// The group (singular form) of each token.
    term_group: Vec<u32>,
    /// Group id of each singular form.
    groups: HashMap<Box<str>, u32>,
    /// `postings[posting_start[g]..posting_start[g + 1]]` are group `g`'s,
    /// in tool order.
    posting_start: Vec<u32>,
    postings: Vec<Posting>,
    /// Distinct resource segments of each tool's route.
    resources: Vec<u8>,
    /// The effects of the catalog's commonest words as keywords, computed
    /// when the index is built ([`SearchIndex::common_effects`]).
    common: HashMap<Box<str>, Arc<KeywordEffect>>,
}

impl SearchIndex {
    /// Indexes `docs`; a document's position is its id and its rank among
    /// ties, so pass them in name order.
    pub fn build<'a>(docs: impl IntoIterator<Item = SearchFields<'a>>) -> SearchIndex {
        let mut builder = Builder::default();
        for doc in docs {
            builder.add(&doc);
        }
        builder.finish()
    }

    /// Number of tools indexed.
    pub fn len(&self) -> usize {
        self.doc_count
    }

    /// Whether no tool is indexed.
    pub fn is_empty(&self) -> bool {
        self.doc_count == 0
    }

    /// Indices of at most `limit` documents for which `include(i)` is true,
    /// best first, per the ranking rules above.
    pub fn top(&self, query: &str, limit: usize, include: impl Fn(usize) -> bool) -> Vec<usize> {
        self.top_keywords(&query_keywords(query), limit, include)
    }

    /// [`SearchIndex::top`] for a query already split by
    /// [`query_keywords`].
    pub fn top_keywords(
        &self,
        words: &[String],
        limit: usize,
        include: impl Fn(usize) -> bool,
    ) -> Vec<usize> {
        self.top_keywords_with(words, limit, include, None)
    }

    /// [`SearchIndex::top_keywords`], reusing and keeping in `effects` what
    /// common keywords do to the scores (the same ranking, less work).
    pub fn top_keywords_with(
        &self,
        words: &[String],
        limit: usize,
        include: impl Fn(usize) -> bool,
        effects: Option<&dyn KeywordEffects>,
    ) -> Vec<usize> {
        if limit == 0 || self.doc_count == 0 {
            return Vec::new();
        }
        with_scratch(self.doc_count, |scratch| {
            self.score_query(words, effects, scratch);
            let mut result = best_matched(scratch, &self.resources, limit, &include);
            self.fill_unmatched(scratch, limit, &include, &mut result);
            result
        })
    }

    fn score_query(
        &self,
        words: &[String],
        effects: Option<&dyn KeywordEffects>,
        scratch: &mut Scratch,
    ) {
        // A function word says nothing about an operation: when the query
        // has other words it is not scored at all (matching the "a" and "by"
        // of "get a user by id" in descriptions would only reorder the tools
        // the other words chose, by noise); a query of nothing else is
        // ranked by them.
        let only_stopwords = words.iter().all(|w| is_stopword(w));
        for word in words.iter().filter(|w| only_stopwords || !is_stopword(w)) {
            let stopword = is_stopword(word);
            let keyword = Keyword { word, effects };
            // A keyword whose effect is kept was common: adding the effect
            // is all there is to do.
            let common = self.common.get(word.as_str()).cloned();
            if let Some(effect) = common.or_else(|| effects.and_then(|kept| kept.get(word))) {
                scratch.apply(effect);
            } else if stopword {
                self.score_stopword(&keyword, scratch);
            } else {
                self.score_keyword(&keyword, scratch);
            }
        }
    }

    /// A stopword (in a query of nothing else) matches whole tokens only.
    fn score_stopword(&self, keyword: &Keyword<'_>, scratch: &mut Scratch) {
        let literal: Vec<(u32, f32)> = self
            .group_of(keyword.word)
            .map(|g| (g, WHOLE))
            .into_iter()
            .collect();
        self.score_groups(&literal, &[], keyword, scratch);
    }

    /// Adds one keyword's matches (whole, prefix, synonym) to the scores.
    fn score_keyword(&self, keyword: &Keyword<'_>, scratch: &mut Scratch) {
        let word = keyword.word;
        let own = self.group_of(word);
        let mut used: Vec<u32> = own.into_iter().collect();
        let mut literal: Vec<(u32, f32)> = own.map(|g| (g, WHOLE)).into_iter().collect();
        if word.chars().nth(1).is_some() {
            for group in self.prefix_groups(word, &used) {
                literal.push((group, PREFIX));
                used.push(group);
            }
        }
        let synonyms: Vec<(u32, f32)> = self
            .synonym_groups(word, &used)
            .into_iter()
            .map(|g| (g, SYNONYM))
            .collect();
        self.score_groups(&literal, &synonyms, keyword, scratch);
    }

    /// Scores one keyword from the groups it reaches, each with the weight
    /// of its kind of match. The IDF counts the tools the literal groups
    /// reach (all groups' when none). A keyword reaching few tools walks
    /// only those; one reaching many (a common word and its synonyms)
    /// accumulates without bookkeeping and settles in one sequential pass
    /// over every tool, which is cheaper than visiting them at random. Both
    /// ways give the same scores.
    fn score_groups(
        &self,
        literal: &[(u32, f32)],
        synonyms: &[(u32, f32)],
        keyword: &Keyword<'_>,
        scratch: &mut Scratch,
    ) {
        let reached: usize = literal
            .iter()
            .chain(synonyms)
            .map(|&(group, _)| self.group_postings(group).len())
            .sum();
        if reached * DENSE_FROM < self.doc_count {
            for &(group, quality) in literal {
                self.accumulate(group, quality, scratch);
            }
            let literal_tools = scratch.touched.len();
            for &(group, quality) in synonyms {
                self.accumulate(group, quality, scratch);
            }
            let df = if literal_tools > 0 {
                literal_tools
            } else {
                scratch.touched.len()
            };
            scratch.settle(self.doc_count, df);
        } else {
            let mut literal_tools = 0;
            for &(group, quality) in literal {
                literal_tools += scratch.add_dense(self.group_postings(group), quality);
            }
            let mut all_tools = literal_tools;
            for &(group, quality) in synonyms {
                all_tools += scratch.add_dense(self.group_postings(group), quality);
            }
            let df = if literal_tools > 0 {
                literal_tools
            } else {
                all_tools
            };
            // Settled into a reused buffer when nobody keeps it; kept, it
            // is shared, not copied.
            let effect = Arc::new(scratch.settle_dense(self.doc_count, df));
            if let Some(kept) = keyword.effects.filter(|kept| kept.keeps()) {
                kept.insert(keyword.word, Arc::clone(&effect));
            }
            scratch.apply(effect);
        }
    }

    /// The effects of the [`COMMON_WORDS`] words of the dictionary whose
    /// own group reaches the most tools, each as a keyword of its own,
    /// where it is common enough to be settled densely: the words agents
    /// type most (`get`, `list`, `users`) then cost a vectorised pass from
    /// the first query on.
    fn common_effects(&self) -> HashMap<Box<str>, Arc<KeywordEffect>> {
        let mut candidates: Vec<(usize, &str)> = self
            .terms
            .iter()
            .zip(&self.term_group)
            .filter(|(term, _)| term.chars().nth(1).is_some() && !is_stopword(term))
            .map(|(term, &group)| (self.group_postings(group).len(), &**term))
            .collect();
        candidates.sort_unstable_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(b.1)));
        let collected = Collected::default();
        for &(_, word) in candidates.iter().take(COMMON_WORDS) {
            self.top_keywords_with(&[word.to_string()], 1, |_| true, Some(&collected));
        }
        collected
            .0
            .into_inner()
            .into_iter()
            .map(|(word, effect)| (word.into_boxed_str(), effect))
            .collect()
    }

    /// The group of tokens with the same singular form as `word`.
    fn group_of(&self, word: &str) -> Option<u32> {
        self.groups.get(singular(word).as_str()).copied()
    }

    /// Groups of the tokens starting with `word`, except those in `used`,
    /// each once, in dictionary order of their first token.
    fn prefix_groups(&self, word: &str, used: &[u32]) -> Vec<u32> {
        let mut seen = HashSet::new();
        self.prefix_range(word)
            .filter_map(|term| self.term_group.get(term).copied())
            .filter(|group| !used.contains(group) && seen.insert(*group))
            .collect()
    }

    /// Groups of the other words in `word`'s synonym group, except `used`.
    fn synonym_groups(&self, word: &str, used: &[u32]) -> Vec<u32> {
        let form = singular(word);
        let form = form.as_str();
        let mut groups: Vec<u32> = Vec::new();
        let kinds = SYNONYMS
            .iter()
            .filter(|(searched, asking)| searched.contains(&form) || asking.contains(&form));
        let synonyms = kinds.flat_map(|(searched, _)| searched.iter());
        for synonym in synonyms.filter(|s| **s != form) {
            if let Some(group) = self.group_of(synonym)
                && !used.contains(&group)
                && !groups.contains(&group)
            {
                groups.push(group);
            }
        }
        groups
    }

    fn accumulate(&self, group: u32, quality: f32, scratch: &mut Scratch) {
        for posting in self.group_postings(group) {
            scratch.add(posting.doc(), quality * posting.weight, posting.resource());
        }
    }

    /// Appends unmatched tools, in index (name) order, up to `limit`.
    fn fill_unmatched(
        &self,
        scratch: &Scratch,
        limit: usize,
        include: &impl Fn(usize) -> bool,
        result: &mut Vec<usize>,
    ) {
        let mut doc = 0;
        while result.len() < limit && doc < self.doc_count {
            if !scratch.is_matched(doc) && include(doc) {
                result.push(doc);
            }
            doc += 1;
        }
    }

    /// Tokens starting with `word`: contiguous in the sorted dictionary.
    fn prefix_range(&self, word: &str) -> Range<usize> {
        let start = self.terms.partition_point(|t| &**t < word);
        let len = self.terms[start..].partition_point(|t| t.starts_with(word));
        start..start + len
    }

    fn group_postings(&self, group: u32) -> &[Posting] {
        let group = group as usize;
        let (Some(&start), Some(&end)) = (
            self.posting_start.get(group),
            self.posting_start.get(group + 1),
        ) else {
            return &[];
        };
        self.postings
            .get(start as usize..end as usize)
            .unwrap_or(&[])
    }
}

/// The best `limit` matched tools that `include` accepts, best first: one
/// pass over the matched tools keeping the best so far in a heap, so
/// `include` is asked only about tools that would enter it.
fn best_matched(
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
    // Every tool was settled densely: rather than offering all of them,
    // offer those matching enough keywords to make the page. Ranking is by
    // keyword count first, so when at least `limit` tools match `floor` or
    // more keywords, the page holds only such tools.
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

/// Tools scored together by [`Scratch::final_scores`].
const LANES: usize = 8;

/// `values[base..base + N]` as an array (zeros past the end).
fn lanes<T: Copy + Default, const N: usize>(values: &[T], base: usize) -> [T; N] {
    values
        .get(base..base + N)
        .and_then(|slice| <[T; N]>::try_from(slice).ok())
        .unwrap_or([T::default(); N])
}

/// The ranking score: the keywords' BM25F sum lifted by route coverage
/// (see [`ROUTE_COVERAGE`]). `routes` is the tool's count of resource
/// segments, `hits` the keywords that matched one (both whole numbers); a
/// tool with none is not lifted (0 / 1).
#[inline]
fn lifted(score: f32, hits: f32, routes: f32) -> f32 {
    let covered = hits.min(routes) / routes.max(1.0);
    score * (1.0 + ROUTE_COVERAGE * covered)
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

thread_local! {
    /// Each thread's query working memory, reused so that a query costs
    /// what it matches rather than the size of the catalog.
    static SCRATCH: RefCell<Scratch> = RefCell::new(Scratch::default());
}

/// Runs `f` with this thread's scratch, sized to `docs` and clean; with a
/// fresh one when it is busy (a re-entrant call from `include`).
fn with_scratch<R>(docs: usize, f: impl FnOnce(&mut Scratch) -> R) -> R {
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
/// [`KeywordEffect`] is kept aside (`effects`) and only its keyword counts
/// are added, since the page is chosen by count first. A tool's whole
/// score is then summed ([`Scratch::total_score`]) only for the few tools
/// that could make the page, instead of passing over every tool's score
/// once per common keyword and again to clear it.
#[derive(Default)]
struct Scratch {
    /// Score from the keywords settled tool by tool; zero when none matched.
    score: Vec<f32>,
    /// The current keyword's weighted frequency.
    frequency: Vec<f32>,
    /// Distinct keywords matched (all of them, effects included).
    count: Vec<u8>,
    /// 1 when the current keyword matched one of the tool's resource
    /// segments.
    resource_now: Vec<u8>,
    /// Keywords settled tool by tool that matched one of its resource
    /// segments.
    resource_hits: Vec<u8>,
    /// Tools given a score by a keyword settled tool by tool, in the order
    /// first matched.
    matched: Vec<u32>,
    /// Effects of the keywords settled over every tool, in query order; when
    /// there are any, every tool is a candidate (`scan_all`).
    effects: Vec<Arc<KeywordEffect>>,
    /// Effect buffers of finished queries nobody kept, to settle into again.
    spare: Vec<KeywordEffect>,
    /// Keywords that count so far (an upper bound of any tool's count).
    keywords: u8,
    /// Tools the current keyword touched, in the order first touched.
    touched: Vec<u32>,
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
            if !self.effects.is_empty() {
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
        self.busy = false;
        result
    }

    fn add(&mut self, doc: usize, weight: f32, resource: bool) {
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
    fn add_dense(&mut self, postings: &[Posting], quality: f32) -> usize {
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
    fn settle(&mut self, docs: usize, df: usize) {
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
    fn settle_dense(&mut self, docs: usize, df: usize) -> KeywordEffect {
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
        effect
    }

    /// Adds a settled keyword: to every tool's keyword count where it
    /// matched now, in one vectorised pass; to the scores
    /// and resource hits of the tools that are asked about
    /// ([`Scratch::total_score`]).
    fn apply(&mut self, effect: Arc<KeywordEffect>) {
        for (count, counted) in self.count.iter_mut().zip(&effect.counted) {
            *count = count.saturating_add(*counted);
        }
        self.keywords = self.keywords.saturating_add(1);
        self.effects.push(effect);
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

    /// A tool's ranking score ([`lifted`]).
    fn final_score(&self, doc: usize, resources: &[u8]) -> f32 {
        let routes = resources.get(doc).copied().unwrap_or(0);
        lifted(
            self.total_score(doc),
            f32::from(self.total_resource_hits(doc)),
            f32::from(routes),
        )
    }

    /// [`Scratch::final_score`] of the [`LANES`] tools from `base`, with
    /// the same arithmetic in the same order, each step on all of them at
    /// once (resource hits summed as floats: small whole numbers, exact).
    fn final_scores(&self, base: usize, resources: &[u8]) -> [f32; LANES] {
        let span = base..base + LANES;
        let mut total = [0.0f32; LANES];
        let mut hits = [0.0f32; LANES];
        if let (Some(score), Some(resource_hits)) = (
            self.score.get(span.clone()),
            self.resource_hits.get(span.clone()),
        ) {
            for lane in 0..LANES {
                total[lane] = score[lane];
                hits[lane] = f32::from(resource_hits[lane]);
            }
        }
        for effect in &self.effects {
            let (Some(contribution), Some(resource)) = (
                effect.contribution.get(span.clone()),
                effect.resource.get(span.clone()),
            ) else {
                continue;
            };
            for lane in 0..LANES {
                total[lane] += contribution[lane];
                hits[lane] += f32::from(resource[lane]);
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
            scores[lane] = lifted(total[lane], hits[lane], routes[lane]);
        }
        scores
    }

    fn is_matched(&self, doc: usize) -> bool {
        self.total_score(doc) > 0.0
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

/// Collects tools, then lays out the index.
#[derive(Default)]
struct Builder {
    term_ids: HashMap<String, u32>,
    /// (term, doc, frequency per field), in doc order.
    occurrences: Vec<(u32, u32, [u16; FIELDS])>,
    /// Token count per field, per doc.
    lengths: Vec<[u32; FIELDS]>,
    /// Document id of each doc, by first appearance.
    documents: HashMap<String, u32>,
    /// (document, singular forms of the route's literal path words), per doc.
    routes: Vec<(u32, Vec<String>)>,
}

impl Builder {
    fn add(&mut self, doc: &SearchFields<'_>) {
        let id = self.lengths.len() as u32;
        let fields = field_tokens(doc);
        let mut frequencies: HashMap<u32, [u16; FIELDS]> = HashMap::new();
        let mut lengths = [0u32; FIELDS];
        for (field, words) in fields.iter().enumerate() {
            lengths[field] = words.len() as u32;
            for word in words {
                let term = self.term_id(word);
                let slot = frequencies.entry(term).or_insert([0; FIELDS]);
                slot[field] = slot[field].saturating_add(1);
            }
        }
        let entries = frequencies.into_iter().map(|(term, f)| (term, id, f));
        self.occurrences.extend(entries);
        self.lengths.push(lengths);
        let next = self.documents.len() as u32;
        let document = *self
            .documents
            .entry(doc.document.to_string())
            .or_insert(next);
        self.routes.push((document, route_words(doc.route)));
    }

    fn term_id(&mut self, word: &str) -> u32 {
        if let Some(&id) = self.term_ids.get(word) {
            return id;
        }
        let id = self.term_ids.len() as u32;
        self.term_ids.insert(word.to_string(), id);
        id
    }

    fn finish(self) -> SearchIndex {
        let doc_count = self.lengths.len();
        let (terms, remap) = sorted_terms(self.term_ids);
        let (term_group, groups) = singular_groups(&terms);
        let mut occurrences: Vec<(u32, u32, [u16; FIELDS])> = self
            .occurrences
            .into_iter()
            .map(|(term, doc, f)| (term_group[remap[term as usize] as usize], doc, f))
            .collect();
        occurrences.sort_unstable_by_key(|&(group, doc, _)| (group, doc));
        let merged = merge_occurrences(occurrences);
        let resource_groups = resource_groups(&self.routes, &groups);
        let resources = resource_groups
            .iter()
            .map(|groups| groups.len().min(usize::from(u8::MAX)) as u8)
            .collect();

        let average = average_lengths(&self.lengths);
        let mut posting_start = Vec::with_capacity(groups.len() + 1);
        let mut postings = Vec::with_capacity(merged.len());
        for (group, doc, frequency) in merged {
            while posting_start.len() <= group as usize {
                posting_start.push(postings.len() as u32);
            }
            let lengths = &self.lengths[doc as usize];
            let weight = (0..FIELDS)
                .map(|f| field_weight(f, frequency[f], lengths[f], average[f]))
                .sum();
            let resource = resource_groups
                .get(doc as usize)
                .is_some_and(|groups| groups.binary_search(&group).is_ok());
            let flag = if resource { RESOURCE_BIT } else { 0 };
            postings.push(Posting {
                doc_and_resource: (doc & !RESOURCE_BIT) | flag,
                weight,
            });
        }
        while posting_start.len() <= groups.len() {
            posting_start.push(postings.len() as u32);
        }
        let mut index = SearchIndex {
            doc_count,
            terms,
            term_group,
            groups,
            posting_start,
            postings,
            resources,
            common: HashMap::new(),
        };
        index.common = index.common_effects();
        index
    }
}

/// Singular forms of the literal words of a route's path: not the method,
/// not `{parameters}`, not numbers or stopwords; each once.
fn route_words(route: &str) -> Vec<String> {
    let path = route.split_once(' ').map_or(route, |(_, path)| path);
    let mut literal = String::with_capacity(path.len());
    let mut depth = 0usize;
    for c in path.chars() {
        match c {
            '{' => depth += 1,
            '}' => depth = depth.saturating_sub(1),
            _ if depth == 0 => literal.push(c),
            _ => literal.push(' '),
        }
    }
    let mut words: Vec<String> = tokens(&literal)
        .into_iter()
        .filter(|t| !t.chars().all(|c| c.is_ascii_digit()) && !is_version(t) && !is_stopword(t))
        .map(|t| singular(&t))
        .collect();
    words.sort_unstable();
    words.dedup();
    words
}

/// Whether a path word is an API version (`v1`, `v13`): it names no
/// resource, however few routes share it (APIs that version each endpoint
/// on its own have `/v6/deployments` beside `/v3/projects/{id}`).
fn is_version(word: &str) -> bool {
    word.strip_prefix('v')
        .is_some_and(|digits| !digits.is_empty() && digits.chars().all(|c| c.is_ascii_digit()))
}

/// Per doc, the sorted groups of its route's resource segments: its route
/// words minus those most routes of its document share.
fn resource_groups(
    routes: &[(u32, Vec<String>)],
    groups: &HashMap<Box<str>, u32>,
) -> Vec<Vec<u32>> {
    let mut routes_per_document: HashMap<u32, usize> = HashMap::new();
    let mut word_routes: HashMap<(u32, &str), usize> = HashMap::new();
    for (document, words) in routes {
        *routes_per_document.entry(*document).or_default() += 1;
        for word in words {
            *word_routes.entry((*document, word.as_str())).or_default() += 1;
        }
    }
    routes
        .iter()
        .map(|(document, words)| {
            let total = routes_per_document.get(document).copied().unwrap_or(0);
            let mut ids: Vec<u32> = words
                .iter()
                .filter(|word| {
                    let share = word_routes
                        .get(&(*document, word.as_str()))
                        .copied()
                        .unwrap_or(0) as f32
                        / total.max(1) as f32;
                    total < SHARED_MIN_ROUTES || share <= SHARED_SHARE
                })
                .filter_map(|word| groups.get(word.as_str()).copied())
                .collect();
            ids.sort_unstable();
            ids.dedup();
            ids
        })
        .collect()
}

/// A tool's tokens per field.
fn field_tokens(doc: &SearchFields<'_>) -> [Vec<String>; FIELDS] {
    let mut fields: [Vec<String>; FIELDS] = Default::default();
    fields[NAME] = tokens(doc.name);
    fields[SEARCH_TERMS] = doc.search_terms.iter().flat_map(|s| tokens(s)).collect();
    fields[TAGS] = doc.tags.iter().flat_map(|s| tokens(s)).collect();
    fields[ROUTE] = tokens(doc.route);
    fields[ARGUMENTS] = doc.argument_names.iter().flat_map(|s| tokens(s)).collect();
    let mut description = tokens(doc.description);
    let rest = description.split_off(description.len().min(LEAD_TOKENS));
    fields[LEAD] = description;
    fields[DESCRIPTION] = rest;
    fields
}

/// Sums the frequencies of entries with the same (group, doc); `sorted` is
/// ordered by (group, doc).
fn merge_occurrences(sorted: Vec<(u32, u32, [u16; FIELDS])>) -> Vec<(u32, u32, [u16; FIELDS])> {
    let mut merged: Vec<(u32, u32, [u16; FIELDS])> = Vec::with_capacity(sorted.len());
    for (group, doc, frequency) in sorted {
        match merged.last_mut() {
            Some(last) if last.0 == group && last.1 == doc => {
                for (total, more) in last.2.iter_mut().zip(frequency) {
                    *total = total.saturating_add(more);
                }
            }
            _ => merged.push((group, doc, frequency)),
        }
    }
    merged
}

/// The dictionary in sorted order, and provisional id → sorted id.
fn sorted_terms(term_ids: HashMap<String, u32>) -> (Vec<Box<str>>, Vec<u32>) {
    let mut entries: Vec<(String, u32)> = term_ids.into_iter().collect();
    entries.sort_unstable();
    let mut remap = vec![0u32; entries.len()];
    let mut terms = Vec::with_capacity(entries.len());
    for (sorted, (term, provisional)) in entries.into_iter().enumerate() {
        remap[provisional as usize] = sorted as u32;
        terms.push(term.into_boxed_str());
    }
    (terms, remap)
}

/// Groups sorted terms by singular form: the group of each term, and the
/// group id of each form. Ids follow dictionary order, so are deterministic.
fn singular_groups(terms: &[Box<str>]) -> (Vec<u32>, HashMap<Box<str>, u32>) {
    let mut groups: HashMap<Box<str>, u32> = HashMap::new();
    let term_group = terms
        .iter()
        .map(|term| {
            let next = groups.len() as u32;
            *groups
                .entry(singular(term).into_boxed_str())
                .or_insert(next)
        })
        .collect();
    (term_group, groups)
}

/// Mean token count of each field over all tools (at least 1).
fn average_lengths(lengths: &[[u32; FIELDS]]) -> [f32; FIELDS] {
    let mut total = [0f64; FIELDS];
    for doc in lengths {
        for (sum, length) in total.iter_mut().zip(doc) {
            *sum += f64::from(*length);
        }
    }
    let n = lengths.len().max(1) as f64;
    total.map(|t| ((t / n) as f32).max(1.0))
}

/// A word group's BM25F pseudo-frequency in one field of a tool: weighted
/// and normalised by the field's length. Repeats count only in the
/// description; elsewhere they are structure, not emphasis.
fn field_weight(field: usize, frequency: u16, length: u32, average: f32) -> f32 {
    if frequency == 0 {
        return 0.0;
    }
    let count = if field == DESCRIPTION { frequency } else { 1 };
    let norm = 1.0 - FIELD_B[field] + FIELD_B[field] * length as f32 / average;
    FIELD_WEIGHT[field] * f32::from(count) / norm
}

fn is_stopword(word: &str) -> bool {
    STOPWORDS.binary_search(&word).is_ok()
}

/// NFKD, combining marks removed, lowercase. Also used for whole-tag
/// filtering.
pub fn fold(text: &str) -> String {
    if text.is_ascii() {
        return text.to_ascii_lowercase();
    }
    text.nfkd()
        .filter(|c| !is_combining_mark(*c))
        .flat_map(char::to_lowercase)
        .filter(|c| !is_combining_mark(*c))
        .collect()
}

/// The query's folded keywords, in order, de-duplicated.
pub fn keywords(query: &str) -> Vec<String> {
    capped_keywords(query, usize::MAX)
}

/// The keywords a query is ranked by: [`keywords`], the first
/// [`MAX_KEYWORDS`] of them. Two queries with the same keywords rank alike.
pub fn query_keywords(query: &str) -> Vec<String> {
    capped_keywords(query, MAX_KEYWORDS)
}

/// At most `cap` distinct keywords of `query`, in order.
fn capped_keywords(query: &str, cap: usize) -> Vec<String> {
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    for_each_token(query, |token| {
        if out.len() >= cap {
            return false;
        }
        if seen.insert(token.clone()) {
            out.push(token);
        }
        true
    });
    out
}

/// All folded tokens of `text`, in order, duplicates kept.
fn tokens(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for_each_token(text, |token| {
        out.push(token);
        true
    });
    out
}

/// Splits `text` into folded tokens: on anything not a letter or digit, and
/// before an upper-case letter that follows a lower-case letter or a digit
/// (`orderId`, `v2Items`) or that starts a word after an acronym
/// (`HTTPResponse`). Letters and digits otherwise stay together (`oauth2`).
/// Stops when `emit` returns false.
fn for_each_token(text: &str, mut emit: impl FnMut(String) -> bool) {
    let chars: Vec<char> = if text.is_ascii() {
        text.chars().collect()
    } else {
        text.nfkd().filter(|c| !is_combining_mark(*c)).collect()
    };
    let mut current = String::new();
    for (i, &c) in chars.iter().enumerate() {
        let breaks = !c.is_alphanumeric() || starts_camel_word(&chars, i);
        if breaks && !current.is_empty() && !emit(std::mem::take(&mut current)) {
            return;
        }
        if c.is_ascii_alphanumeric() {
            current.push(c.to_ascii_lowercase());
        } else if c.is_alphanumeric() {
            current.extend(c.to_lowercase().filter(|c| !is_combining_mark(*c)));
        }
    }
    if !current.is_empty() {
        emit(current);
    }
}

/// Whether `chars[i]` is an upper-case letter that begins a camelCase word.
fn starts_camel_word(chars: &[char], i: usize) -> bool {
    let c = chars[i];
    if !c.is_uppercase() || i == 0 {
        return false;
    }
    let prev = chars[i - 1];
    let next_is_lower = chars.get(i + 1).is_some_and(|n| n.is_lowercase());
    prev.is_lowercase() || prev.is_numeric() || (prev.is_uppercase() && next_is_lower)
}

/// The form a folded word is compared by for singular/plural matching.
///
/// Plural suffixes are removed: `ies`→`y` (`policies`), `sses`→`ss`
/// (`addresses`), `uses`→`us` (`statuses`), `ches`/`shes`/`xes`/`zzes`→ drop
/// `es` (`matches`, `boxes`), otherwise a final `s` is dropped unless the
/// word ends in `ss`, `us` or `is` (`orders`, but `status`, `analysis`).
/// [`IRREGULAR`] and [`INVARIANT`] cover common exceptions. So that both
/// spellings of a pair meet, the result then has `ie`→`y` (`cookie`, like
/// `cookies`→`cooky`), `che`→`ch` (`cache`, like `caches`) and `use`→`us`
/// (`pause`, like `pauses`). Words under three characters are left alone.
/// The result is a comparison key, not always an English word.
pub fn singular(word: &str) -> String {
    if let Some((_, one)) = IRREGULAR.iter().find(|(many, _)| *many == word) {
        return (*one).to_string();
    }
    if word.chars().count() < 3 || INVARIANT.contains(&word) {
        return word.to_string();
    }
    let base = strip_plural(word);
    normalize_ending(&base)
}

fn strip_plural(word: &str) -> String {
    if let Some(stem) = word.strip_suffix("es")
        && INVARIANT.contains(&stem)
    {
        return stem.to_string();
    }
    if let Some(stem) = word.strip_suffix("sses") {
        return format!("{stem}ss");
    }
    if let Some(stem) = word.strip_suffix("uses") {
        return format!("{stem}us");
    }
    if let Some(stem) = word.strip_suffix("ies")
        && stem.chars().count() >= 2
    {
        return format!("{stem}y");
    }
    for suffix in ["ches", "shes", "xes", "zzes"] {
        if word.ends_with(suffix) {
            return word[..word.len() - 2].to_string();
        }
    }
    let keeps_s = ["ss", "us", "is"].iter().any(|end| word.ends_with(end));
    match word.strip_suffix('s') {
        Some(stem) if !keeps_s => stem.to_string(),
        _ => word.to_string(),
    }
}

fn normalize_ending(word: &str) -> String {
    if word.chars().count() < 4 {
        return word.to_string();
    }
    for (end, replacement) in [("ie", "y"), ("che", "ch"), ("use", "us")] {
        if let Some(stem) = word.strip_suffix(end) {
            return format!("{stem}{replacement}");
        }
    }
    word.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(words: &[&str]) -> Vec<String> {
        words.iter().map(|w| w.to_string()).collect()
    }

    /// One test tool; fields not given are empty.
    #[derive(Default, Clone)]
    struct Tool {
        name: &'static str,
        description: &'static str,
        route: &'static str,
        arguments: Vec<&'static str>,
        tags: Vec<String>,
        terms: Vec<String>,
    }

    fn tool(name: &'static str, description: &'static str) -> Tool {
        Tool {
            name,
            description,
            ..Tool::default()
        }
    }

    fn index(tools: &[Tool]) -> SearchIndex {
        SearchIndex::build(tools.iter().map(|t| SearchFields {
            name: t.name,
            description: t.description,
            search_terms: &t.terms,
            route: t.route,
            argument_names: t.arguments.clone(),
            tags: &t.tags,
            document: "test.json",
        }))
    }

    fn names(tools: &[Tool], query: &str, limit: usize) -> Vec<&'static str> {
        index(tools)
            .top(query, limit, |_| true)
            .into_iter()
            .map(|i| tools[i].name)
            .collect()
    }

    #[test]
    fn splits_on_punctuation_case_and_underscores() {
        assert_eq!(
            keywords("listOpenOrders"),
            strings(&["list", "open", "orders"])
        );
        assert_eq!(
            keywords("list_open_orders"),
            strings(&["list", "open", "orders"])
        );
        assert_eq!(
            keywords("GET /orders/{orderId}"),
            strings(&["get", "orders", "order", "id"])
        );
        assert_eq!(
            keywords("getHTTPResponse"),
            strings(&["get", "http", "response"])
        );
        assert_eq!(keywords("a.b-c, d;e"), strings(&["a", "b", "c", "d", "e"]));
    }

    #[test]
    fn keeps_digits_with_letters_and_splits_after_them() {
        assert_eq!(keywords("oauth2 token"), strings(&["oauth2", "token"]));
        assert_eq!(
            keywords("createCoreV1Namespace"),
            strings(&["create", "core", "v1", "namespace"])
        );
        assert_eq!(
            keywords("/2010-04-01/x"),
            strings(&["2010", "04", "01", "x"])
        );
    }

    #[test]
    fn folds_accents_case_and_compatibility_forms() {
        assert_eq!(fold("Crème Brûlée"), "creme brulee");
        assert_eq!(fold("ÉCOLE"), "ecole");
        assert_eq!(fold("ﬁle"), "file");
        assert_eq!(fold("İstanbul"), "istanbul");
        assert_eq!(fold(""), "");
        assert_eq!(keywords("Café_Menü"), strings(&["cafe", "menu"]));
    }

    #[test]
    fn duplicate_keywords_collapse_and_odd_input_is_safe() {
        assert_eq!(keywords("Order order ORDER"), strings(&["order"]));
        assert!(keywords("").is_empty());
        assert!(keywords("  --- !!! 🎉 ").is_empty());
        assert_eq!(keywords("注文 一覧"), strings(&["注文", "一覧"]));
        let many: String = (0..10_000).map(|i| format!("w{i} ")).collect();
        assert_eq!(keywords(&many).len(), 10_000);
        assert_eq!(capped_keywords(&many, MAX_KEYWORDS).len(), MAX_KEYWORDS);
    }

    #[test]
    fn singular_forms() {
        for (plural, single) in [
            ("policies", "policy"),
            ("opportunities", "opportunity"),
            ("addresses", "address"),
            ("boxes", "box"),
            ("matches", "match"),
            ("hashes", "hash"),
            ("orders", "order"),
            ("statuses", "status"),
            ("ids", "id"),
            ("people", "person"),
            ("aliases", "alias"),
        ] {
            assert_eq!(singular(plural), singular(single), "{plural} ~ {single}");
        }
        for word in ["status", "analysis", "access", "news", "os", "is"] {
            assert_eq!(singular(word), word);
        }
        assert_eq!(singular("cookies"), singular("cookie"));
        assert_eq!(singular("caches"), singular("cache"));
        assert_eq!(singular("pauses"), singular("pause"));
        assert_ne!(singular("stats"), singular("state"));
    }

    #[test]
    fn plural_keyword_finds_singular_token_and_back() {
        let tools = [
            tool("get_policy", ""),
            tool("list_opportunities", ""),
            tool("zzz", ""),
        ];
        assert_eq!(names(&tools, "policies", 1), ["get_policy"]);
        assert_eq!(names(&tools, "opportunity", 1), ["list_opportunities"]);
    }

    #[test]
    fn prefix_matches() {
        let tools = [tool("a_tool", "nothing"), tool("list_orders", "")];
        assert_eq!(names(&tools, "ord", 1), ["list_orders"]);
        assert_eq!(names(&tools, "lis", 1), ["list_orders"]);
    }

    #[test]
    fn whole_token_beats_prefix() {
        let tools = [tool("get_orderbook", ""), tool("get_order", "")];
        assert_eq!(names(&tools, "order", 2), ["get_order", "get_orderbook"]);
        let tools = [tool("a_ordering", ""), tool("b_orders", "")];
        assert_eq!(names(&tools, "order", 2), ["b_orders", "a_ordering"]);
    }

    #[test]
    fn name_beats_description() {
        let tools = [
            tool("a_thing", "Returns the invoice for an order."),
            tool("b_invoice", "Returns something."),
        ];
        assert_eq!(names(&tools, "invoice", 2), ["b_invoice", "a_thing"]);
    }

    #[test]
    fn field_weights_are_ordered() {
        let by_terms = Tool {
            name: "d",
            terms: strings(&["refund"]),
            ..Tool::default()
        };
        let by_tag = Tool {
            name: "c",
            tags: strings(&["Refund"]),
            ..Tool::default()
        };
        let by_argument = Tool {
            name: "b",
            arguments: vec!["refundId"],
            ..Tool::default()
        };
        let by_description = tool("a", "Refund it.");
        let tools = [by_description, by_argument, by_tag, by_terms];
        assert_eq!(names(&tools, "refund", 4), ["d", "c", "b", "a"]);
    }

    #[test]
    fn route_words_and_parameters_are_searched() {
        let tools = [
            Tool {
                name: "x",
                route: "GET /stores/{storeId}/rerun-failed_jobs",
                ..Tool::default()
            },
            tool("y", ""),
        ];
        for query in ["store", "rerun", "failed", "jobs", "id"] {
            assert_eq!(names(&tools, query, 1), ["x"], "{query}");
        }
    }

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
    fn rare_keywords_outweigh_common_ones() {
        let mut tools = vec![tool("a_list_pets", ""), tool("b_list_printers", "")];
        let fillers = ["c_list_x", "d_list_y", "e_list_z", "f_list_w"];
        tools.extend(fillers.iter().map(|n| tool(n, "")));
        assert_eq!(names(&tools, "printers list", 1), ["b_list_printers"]);
        assert_eq!(names(&tools, "list printers", 1), ["b_list_printers"]);
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
    fn empty_query_lists_by_name() {
        let tools = [tool("a", ""), tool("b", ""), tool("c", "")];
        assert_eq!(names(&tools, "", 10), ["a", "b", "c"]);
        assert_eq!(names(&tools, " - ", 2), ["a", "b"]);
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

    /// Keyword effects kept in a map, for tests.
    #[derive(Default)]
    struct KeptEffects(std::sync::Mutex<HashMap<String, Arc<KeywordEffect>>>);

    impl KeywordEffects for KeptEffects {
        fn get(&self, word: &str) -> Option<Arc<KeywordEffect>> {
            self.0.lock().unwrap().get(word).cloned()
        }

        fn insert(&self, word: &str, effect: Arc<KeywordEffect>) {
            self.0.lock().unwrap().insert(word.to_string(), effect);
        }
    }

    /// `count` tools named and routed after a few common words (so that
    /// they are settled densely and cover resources), half of them with
    /// "Returns the items." as description.
    fn common_word_tools(count: usize) -> Vec<Tool> {
        let words = ["list", "get", "user", "group", "mail", "event", "member"];
        (0..count)
            .map(|i| {
                let name = format!("{}_{}_{i}", words[i % 7], words[(i / 7) % 7]);
                let description = if i % 2 == 0 { "Returns the items." } else { "" };
                let route = format!("GET /{}s/{{id}}/{}", words[(i / 3) % 7], words[i % 5]);
                Tool {
                    route: Box::leak(route.into_boxed_str()),
                    ..tool(Box::leak(name.into_boxed_str()), description)
                }
            })
            .collect()
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
    fn common_word_effects_rank_exactly_as_scoring_anew() {
        let tools = common_word_tools(90);
        let with_common = index(&tools);
        assert!(
            with_common.common.contains_key("user"),
            "{:?}",
            with_common.common.keys()
        );
        let mut plain = index(&tools);
        plain.common.clear();
        for query in [
            "list users",
            "get group member",
            "user",
            "return the items of the group",
            "the",
            "mail",
        ] {
            for limit in [1, 10, 90] {
                assert_eq!(
                    with_common.top(query, limit, |i| i % 4 != 2),
                    plain.top(query, limit, |i| i % 4 != 2),
                    "{query:?}, limit {limit}"
                );
            }
        }
    }

    #[test]
    fn kept_keyword_effects_rank_exactly_as_scoring_anew() {
        let tools = common_word_tools(120);
        // Without the index's own common words, so that the store is used.
        let mut idx = index(&tools);
        idx.common.clear();
        let kept = KeptEffects::default();
        let queries = [
            "list users",
            "get group member",
            "users the",
            "the",
            "mail event list",
        ];
        for pass in 0..2 {
            for query in queries {
                let words = query_keywords(query);
                for limit in [1, 7, 50] {
                    assert_eq!(
                        idx.top_keywords_with(&words, limit, |i| i % 5 != 1, Some(&kept)),
                        idx.top_keywords(&words, limit, |i| i % 5 != 1),
                        "{query:?}, limit {limit}, pass {pass}"
                    );
                }
            }
        }
        let kept = kept.0.lock().unwrap();
        // "the" is kept from the query of nothing else; beside "users" it
        // was not scored at all.
        for word in ["list", "users", "the"] {
            assert!(kept.contains_key(word), "{word}: {:?}", kept.keys());
        }
    }

    #[test]
    fn synonyms_match_weaker_than_the_word() {
        let tools = [
            Tool {
                name: "a_pet",
                route: "DELETE /pets/{id}",
                ..Tool::default()
            },
            Tool {
                name: "b_pet",
                route: "GET /pets/{id}",
                ..Tool::default()
            },
            tool("c_remove_pet", ""),
        ];
        assert_eq!(names(&tools, "remove pet", 2), ["c_remove_pet", "a_pet"]);
    }

    #[test]
    fn abbreviations_match_both_ways() {
        let tools = [tool("a_thing", ""), tool("repos_list", "")];
        assert_eq!(names(&tools, "repositories", 1), ["repos_list"]);
        let tools = [tool("a_thing", ""), tool("get_configuration", "")];
        assert_eq!(names(&tools, "config", 1), ["get_configuration"]);
    }

    #[test]
    fn description_lead_weighs_more_than_the_rest() {
        let late = "Returns one of the many things this service keeps for you, an invoice.";
        let tools = [tool("a", late), tool("b", "Invoice details.")];
        assert_eq!(names(&tools, "invoice", 2), ["b", "a"]);
    }

    #[test]
    fn one_character_keywords_match_whole_tokens_only() {
        let tools = [tool("a_orders", ""), tool("b_o", "")];
        assert_eq!(names(&tools, "o", 2), ["b_o", "a_orders"]);
        let idx = index(&tools);
        assert_eq!(idx.top("o", 1, |_| true), [1]);
    }

    #[test]
    fn a_query_of_stopwords_still_ranks() {
        let tools = [tool("a", "nothing"), tool("b", "all of it")];
        assert_eq!(names(&tools, "all of", 1), ["b"]);
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
    fn stopwords_do_not_decide() {
        let tools = [tool("a_of_the", "a of the"), tool("b_pet", "")];
        assert_eq!(names(&tools, "the pet", 1), ["b_pet"]);
        assert_eq!(names(&tools, "the", 1), ["a_of_the"]);
    }

    /// Nor do they reorder what the other words chose: "a" and "by" in a
    /// name or description add nothing when the query has other words.
    #[test]
    fn stopwords_do_not_score_beside_other_words() {
        let tools = [tool("a_user_get_by", "By a by a."), tool("b_user_get", "")];
        assert_eq!(
            names(&tools, "get a user by", 2),
            ["b_user_get", "a_user_get_by"]
        );
        assert_eq!(names(&tools, "by a", 1), ["a_user_get_by"]);
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

    #[test]
    fn empty_index_and_hostile_queries() {
        let empty = SearchIndex::build(std::iter::empty());
        assert!(empty.is_empty());
        assert_eq!(empty.len(), 0);
        assert!(empty.top("anything", 5, |_| true).is_empty());
        let tools = [tool("a", "🎉 emoji"), tool("", "")];
        let idx = index(&tools);
        let huge: String = (0..10_000).map(|i| format!("k{i} ")).collect();
        assert_eq!(idx.top(&huge, 5, |_| true).len(), 2);
        assert_eq!(idx.top("🎉", 5, |_| true).len(), 2);
        assert_eq!(idx.top(&"x".repeat(100_000), 1, |_| true).len(), 1);
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

    #[test]
    fn route_words_are_literal_path_words_in_singular_form() {
        assert_eq!(
            route_words("GET /v1/users/{user-id}/todoLists/{id}.json"),
            strings(&["json", "list", "todo", "user"])
        );
        assert_eq!(
            route_words("POST /2010-04-01/Accounts"),
            strings(&["account"])
        );
        assert!(route_words("GET /").is_empty());
        // Versions name no resource; words that merely start with v do.
        assert_eq!(
            route_words("GET /v13/deployments/{id}/v/vendors"),
            strings(&["deployment", "v", "vendor"])
        );
    }

    #[test]
    fn path_words_most_routes_of_a_document_share_are_not_resources() {
        let routes: Vec<(u32, Vec<String>)> = [
            "GET /rest/api/3/issue",
            "GET /rest/api/3/project",
            "GET /rest/api/3/user",
            "GET /rest/api/3/issue/{id}/comment",
        ]
        .iter()
        .map(|route| (0, route_words(route)))
        .collect();
        let groups: HashMap<Box<str>, u32> = ["api", "comment", "issue", "project", "rest", "user"]
            .iter()
            .enumerate()
            .map(|(i, w)| (Box::from(*w), i as u32))
            .collect();
        let resources = resource_groups(&routes, &groups);
        // rest and api are in every route; issue in half of them, kept.
        assert_eq!(resources[0], vec![groups["issue"]]);
        assert_eq!(resources[3], vec![groups["comment"], groups["issue"]]);
    }

    #[test]
    fn index_is_shareable() {
        fn assert_send_sync<T: Send + Sync>() {}
        assert_send_sync::<SearchIndex>();
    }
}
