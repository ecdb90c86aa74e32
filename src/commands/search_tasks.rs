//! `sezzlee check DIR --search-tasks FILE`: how well search_tools finds the
//! operation an agent wants, measured on the catalog owner's own queries.
//!
//! An agent that does not see the right operation in its first five cards
//! fails its task, so a catalog owner needs recall@k and MRR over realistic
//! queries, and for each miss the rank it got, to know where `searchTerms`
//! would help. The ranking is the served one (`SearchIndex::top`, what
//! search_tools returns to a caller who sees every tool), measured twice:
//! with all documents in one catalog (what the folder serves) and with each
//! task's document as its own catalog (how the document ranks alone).
//!
//! The task file is TSV: `query`, `document` (relative to DIR), `method`,
//! `path` as the document writes it, and an optional `operationId`; a header
//! line starting with `query` and lines starting with `#` are skipped.

use sezzlee_catalog::{BuildOptions, Catalog, Sources};
use sezzlee_gateway::tools::search::MAX_LIMIT;
use sezzlee_search::query_keywords;
use sezzlee_semantic::{self as semantic, DiskCache, TextModel, ToolVectors};
use std::collections::{BTreeMap, HashSet};
use std::fmt::Write as _;
use std::path::Path;
use std::sync::Arc;

/// One line of the task file.
#[derive(Debug, Clone, PartialEq)]
pub struct Task {
    /// 1-based line number in the file, for messages.
    pub line: usize,
    pub query: String,
    pub document: String,
    /// `GET /orders/{id}`.
    pub route: String,
    pub operation_id: Option<String>,
}

/// Where one task's operation ranked.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// 1-based rank among the first [`MAX_LIMIT`] results.
    Ranked(usize),
    /// The operation is in the catalog but not among the first results.
    Beyond,
    /// No tool of the catalog has that document and route.
    UnknownTarget,
}

/// Recall and MRR over a set of outcomes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Scores {
    pub tasks: usize,
    pub recall_at_1: f64,
    pub recall_at_5: f64,
    pub recall_at_10: f64,
    pub mrr: f64,
}

impl Scores {
    pub fn of(outcomes: &[Outcome]) -> Scores {
        let tasks = outcomes.len();
        let share = |k: usize| {
            let hits = outcomes
                .iter()
                .filter(|o| matches!(o, Outcome::Ranked(rank) if *rank <= k))
                .count();
            ratio(hits as f64, tasks)
        };
        let reciprocal: f64 = outcomes
            .iter()
            .map(|o| match o {
                Outcome::Ranked(rank) => 1.0 / *rank as f64,
                _ => 0.0,
            })
            .sum();
        Scores {
            tasks,
            recall_at_1: share(1),
            recall_at_5: share(5),
            recall_at_10: share(10),
            mrr: ratio(reciprocal, tasks),
        }
    }
}

fn ratio(value: f64, count: usize) -> f64 {
    if count == 0 {
        0.0
    } else {
        value / count as f64
    }
}

/// Parses the task file; errors name the line.
pub fn parse_tasks(text: &str) -> Result<Vec<Task>, String> {
    let mut tasks = Vec::new();
    for (index, raw) in text.lines().enumerate() {
        let line = index + 1;
        let raw = raw.trim_end_matches('\r');
        if raw.trim().is_empty() || raw.starts_with('#') {
            continue;
        }
        let fields: Vec<&str> = raw.split('\t').map(str::trim).collect();
        if line == 1 && fields.first() == Some(&"query") {
            continue;
        }
        if !(4..=5).contains(&fields.len()) {
            return Err(format!(
                "line {line}: expected 4 or 5 tab-separated fields (query, document, method, path[, operationId]), found {}",
                fields.len()
            ));
        }
        let method = fields[2].to_ascii_uppercase();
        if fields[0].is_empty() || fields[1].is_empty() || method.is_empty() {
            return Err(format!(
                "line {line}: query, document and method must not be empty"
            ));
        }
        if !fields[3].starts_with('/') {
            return Err(format!(
                "line {line}: the path must start with '/', found {:?}",
                fields[3]
            ));
        }
        tasks.push(Task {
            line,
            query: fields[0].to_string(),
            document: fields[1].to_string(),
            route: format!("{method} {}", fields[3]),
            operation_id: fields
                .get(4)
                .filter(|s| !s.is_empty())
                .map(|s| s.to_string()),
        });
    }
    Ok(tasks)
}

/// One task measured: where its operation ranked (fused, and under each
/// signal alone) and which tool came first.
#[derive(Debug, Clone, PartialEq)]
pub struct Measured {
    pub outcome: Outcome,
    /// The name of the first result, if any.
    pub first: Option<String>,
    /// The operation's rank under keywords alone (`None`: not in the
    /// first [`SIGNAL_DEPTH`]).
    pub keyword_rank: Option<usize>,
    /// Its rank under meaning alone, when a model ranked.
    pub meaning_rank: Option<usize>,
    /// How much meaning weighed in the fused ranking (0: keywords alone).
    pub weight: f32,
}

/// How deep each signal is read when a miss is explained.
pub const SIGNAL_DEPTH: usize = 1000;

/// Where `task`'s operation ranks in `catalog`, as search_tools would list
/// it for a caller who sees every tool, and under each signal alone.
pub fn rank(catalog: &Catalog, vectors: Option<&ToolVectors>, task: &Task) -> Measured {
    let tools = catalog.tools();
    let is_target = |i: usize| *tools[i].document == *task.document && tools[i].route == task.route;
    if !(0..tools.len()).any(is_target) {
        return Measured {
            outcome: Outcome::UnknownTarget,
            first: None,
            keyword_rank: None,
            meaning_rank: None,
            weight: 0.0,
        };
    }
    let words = query_keywords(&task.query);
    let sentence = semantic::query_sentence(&task.query);
    let query = semantic::Query {
        words: &words,
        sentence: &sentence,
    };
    let ranking = semantic::rank_explained(
        catalog.search_index(),
        vectors,
        query,
        MAX_LIMIT,
        |_| true,
        None,
    );
    let outcome = match ranking.page.iter().position(|&i| is_target(i)) {
        Some(position) => Outcome::Ranked(position + 1),
        None => Outcome::Beyond,
    };
    let keywords =
        catalog
            .search_index()
            .matched_keywords_with(&words, SIGNAL_DEPTH, |_| true, None);
    // The query's vector as the fused ranking embedded it (a keyword-style
    // query, which meaning did not rank, is embedded here only).
    let meaning_rank = vectors.and_then(|vectors| {
        let vector = match &ranking.vector {
            Some(vector) => vector.clone(),
            None => vectors.embed_query(&sentence)?,
        };
        let nearest = vectors.nearest(&vector, SIGNAL_DEPTH, &|_| true);
        Some(nearest.iter().position(|&(i, _)| is_target(i))? + 1)
    });
    Measured {
        outcome,
        first: ranking.page.first().map(|&i| tools[i].name.clone()),
        keyword_rank: keywords.iter().position(|&i| is_target(i)).map(|p| p + 1),
        meaning_rank,
        weight: ranking.weight,
    }
}

/// The sources of `document` alone: the document, its sidecars, and every
/// file that is not an API document of `whole` (shared `$ref` fragments).
pub fn sources_of_document(all: &Sources, whole: &Catalog, document: &str) -> Sources {
    let sidecars = all.sidecar_paths_for(document);
    let documents: HashSet<&str> = whole.documents.iter().map(|d| &*d.file).collect();
    all.subset(|rel| {
        rel == document || sidecars.iter().any(|s| &**s == rel) || !documents.contains(rel)
    })
}

/// Runs every task against the whole folder and against each document
/// alone; returns the report and whether every task's operation exists.
/// Texts the vector `cache` lacks are embedded (and cached) first.
pub fn evaluate(
    dir: &Path,
    tasks: &[Task],
    model: Option<&Arc<TextModel>>,
    cache: Option<&DiskCache>,
) -> std::io::Result<(String, bool)> {
    let sources = Sources::scan(dir, None)?;
    let whole = Catalog::build(&sources);
    let started = std::time::Instant::now();
    let whole_vectors = model.map(|model| ToolVectors::build(model, &whole, None, cache));
    let mut report = String::new();
    if let (Some(model), Some(vectors)) = (model, &whole_vectors) {
        let _ = writeln!(
            report,
            "search model: {} ({} dimensions), {} of {} tools embedded, {:.1} s",
            model.kind_name(),
            model.dimensions(),
            vectors.embedded(),
            vectors.len(),
            started.elapsed().as_secs_f64()
        );
    }

    let together: Vec<Measured> = tasks
        .iter()
        .map(|task| rank(&whole, whole_vectors.as_ref(), task))
        .collect();
    let _ = writeln!(
        report,
        "all documents in one catalog ({} documents, {} tools):",
        whole.documents.len(),
        whole.tools().len()
    );
    write_section(&mut report, tasks, &together, model.is_some());

    let mut alone: BTreeMap<&str, (Catalog, Option<ToolVectors>)> = BTreeMap::new();
    for task in tasks {
        alone.entry(task.document.as_str()).or_insert_with(|| {
            // Every document's tools (and vectors) are the whole
            // catalog's, reused.
            let alone = sources_of_document(&sources, &whole, &task.document);
            let catalog = Catalog::rebuild(&alone, &BuildOptions::default(), &whole);
            let vectors = model
                .zip(whole_vectors.as_ref())
                .map(|(model, earlier)| ToolVectors::build(model, &catalog, Some(earlier), None));
            (catalog, vectors)
        });
    }
    let separate: Vec<Measured> = tasks
        .iter()
        .map(|task| {
            let (catalog, vectors) = &alone[task.document.as_str()];
            rank(catalog, vectors.as_ref(), task)
        })
        .collect();
    let _ = writeln!(
        report,
        "each document as its own catalog ({} documents):",
        alone.len()
    );
    write_section(&mut report, tasks, &separate, model.is_some());

    let all_known = together
        .iter()
        .all(|measured| measured.outcome != Outcome::UnknownTarget);
    Ok((report, all_known))
}

/// The scores lines (fused, then each signal alone when a model ranks),
/// then one line per task not ranked first, with its rank under each
/// signal.
fn write_section(report: &mut String, tasks: &[Task], measured: &[Measured], with_model: bool) {
    let line = |report: &mut String, label: &str, outcomes: &[Outcome]| {
        let scores = Scores::of(outcomes);
        let _ = writeln!(
            report,
            "  {label:<9} {} tasks: recall@1 {:.3}  recall@5 {:.3}  recall@10 {:.3}  MRR {:.3}",
            scores.tasks, scores.recall_at_1, scores.recall_at_5, scores.recall_at_10, scores.mrr
        );
    };
    let signal = |rank: Option<usize>| match rank {
        Some(rank) => Outcome::Ranked(rank),
        None => Outcome::Beyond,
    };
    let known: Vec<&Measured> = measured
        .iter()
        .filter(|m| m.outcome != Outcome::UnknownTarget)
        .collect();
    let outcomes: Vec<Outcome> = measured.iter().map(|m| m.outcome.clone()).collect();
    line(report, "served", &outcomes);
    if with_model {
        let keywords: Vec<Outcome> = known.iter().map(|m| signal(m.keyword_rank)).collect();
        let meaning: Vec<Outcome> = known.iter().map(|m| signal(m.meaning_rank)).collect();
        line(report, "keywords", &keywords);
        line(report, "meaning", &meaning);
    }
    for (task, measured) in tasks.iter().zip(measured) {
        let rank = match measured.outcome {
            Outcome::Ranked(1) => continue,
            Outcome::Ranked(rank) => format!("rank {rank}"),
            Outcome::Beyond => format!("not in the first {MAX_LIMIT}"),
            Outcome::UnknownTarget => {
                let _ = writeln!(
                    report,
                    "  line {}: {} in {} is not in the catalog (query {:?})",
                    task.line, task.route, task.document, task.query
                );
                continue;
            }
        };
        let first = measured.first.as_deref().unwrap_or_default();
        let by_signal =
            |rank: Option<usize>| rank.map_or(format!(">{SIGNAL_DEPTH}"), |r| r.to_string());
        let why = if with_model {
            format!(
                "; keywords {}, meaning {}, meaning weight {:.2}",
                by_signal(measured.keyword_rank),
                by_signal(measured.meaning_rank),
                measured.weight
            )
        } else {
            format!("; keywords {}", by_signal(measured.keyword_rank))
        };
        let _ = writeln!(
            report,
            "  miss  {rank:>8}  {:?} wants {} ({}); first is {first}{why}",
            task.query, task.route, task.document
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn task_lines_parse_with_header_comments_and_optional_operation_id() {
        let text = "query\tdocument\tmethod\tpath\toperationId\n\
                    # a comment\n\
                    list orders\torders.yaml\tget\t/orders\n\
                    cancel\torders.yaml\tPOST\t/orders/{id}/cancel\tcancelOrder\r\n\n";
        let tasks = parse_tasks(text).unwrap();
        assert_eq!(tasks.len(), 2);
        assert_eq!(tasks[0].route, "GET /orders");
        assert_eq!(tasks[0].operation_id, None);
        assert_eq!(tasks[1].line, 4);
        assert_eq!(tasks[1].route, "POST /orders/{id}/cancel");
        assert_eq!(tasks[1].operation_id.as_deref(), Some("cancelOrder"));
    }

    #[test]
    fn malformed_lines_are_refused_with_their_line_number() {
        let err = parse_tasks("list orders\torders.yaml\tGET\n").unwrap_err();
        assert!(err.starts_with("line 1: expected 4 or 5"), "{err}");
        let err = parse_tasks("a\tb\tGET\t/x\nq\tdoc\tGET\torders\n").unwrap_err();
        assert!(err.starts_with("line 2: the path must start"), "{err}");
    }

    #[test]
    fn scores_count_ranks_and_unknown_targets_as_misses() {
        let outcomes = [
            Outcome::Ranked(1),
            Outcome::Ranked(4),
            Outcome::Ranked(10),
            Outcome::Beyond,
            Outcome::UnknownTarget,
        ];
        let scores = Scores::of(&outcomes);
        assert_eq!(scores.tasks, 5);
        assert!((scores.recall_at_1 - 0.2).abs() < 1e-9);
        assert!((scores.recall_at_5 - 0.4).abs() < 1e-9);
        assert!((scores.recall_at_10 - 0.6).abs() < 1e-9);
        assert!((scores.mrr - (1.0 + 0.25 + 0.1) / 5.0).abs() < 1e-9);
        assert_eq!(Scores::of(&[]).mrr, 0.0);
    }
}
