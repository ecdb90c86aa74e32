//! The commands of the `sezzlee` binary that print: `check` (and its
//! `--search-tasks` report), `client`, `health` and `token`. `serve` is the gateway
//! crate's `server::run`.

pub mod call_time;
pub mod check;
pub mod client;
pub mod health;
pub mod positions;
pub mod search_tasks;
pub mod stdout;
pub mod token;

/// `one` for a count of 1, else `many`: "1 tool", "2 tools".
pub fn plural<'w>(count: usize, one: &'w str, many: &'w str) -> &'w str {
    if count == 1 { one } else { many }
}
