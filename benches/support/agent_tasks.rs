//! The agent-phrased sentences the search timings rank (the first column
//! of `tests/data/agent-tasks-{holdout,tune}.tsv`; shared by
//! `benches/reload.rs` and `examples/search_profile.rs`).

use std::path::Path;

/// Every task sentence of both sets, in file order.
pub fn agent_sentences() -> Vec<String> {
    let mut queries = Vec::new();
    for set in ["agent-tasks-holdout.tsv", "agent-tasks-tune.tsv"] {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/data")
            .join(set);
        let text = std::fs::read_to_string(path).unwrap_or_default();
        queries.extend(
            text.lines()
                .skip(1)
                .filter_map(|line| line.split('\t').next())
                .map(str::to_string),
        );
    }
    queries
}
