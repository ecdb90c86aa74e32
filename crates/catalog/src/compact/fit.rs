//! The depths each tool is published at, so its definition fits the
//! response budget.
//!
//! Every outputSchema is published at the operation's output depth (the
//! sidecar's, else the build default). When the definition still does not
//! fit, a ladder gives up detail in a fixed order, so the same document
//! always publishes the same definitions: the output depth first (from
//! [`LADDER_START`] or less down to 1), then the optional deep parts of the
//! input (its depth from [`LADDER_START`] down to 0; required members and
//! the top level are never elided), then the output's last level, and
//! last the text of both: `examples`, then descriptions past 120
//! characters (and the longest patterns and enums), then every
//! description. The first rung that fits wins;
//! when none does, the smallest is published and the caller is told how
//! large it still is.

use super::{Compactor, Cut, Text};
use crate::fingerprint::{CanonicalSink, CharCount, write_canonical_object, write_string};
use crate::schema::{Direction, Schema};
use serde_json::{Map, Value};
use std::sync::Arc;

/// The deepest depth the ladder tries after the configured one, for the
/// output and then for the input.
pub const LADDER_START: u32 = 8;

/// Characters of `"version":"0123456789abcdef"` plus its comma.
const VERSION_CHARS: usize = ",\"version\":\"\"".len() + 16;

/// What was left out of a published definition.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Compaction {
    /// The depth the outputSchema was cut at, when anything was cut.
    pub output_depth: Option<u32>,
    /// The depth the inputSchema was cut at, when anything was cut.
    pub input_depth: Option<u32>,
    /// Text left out of both schemas (examples, long descriptions), when
    /// cutting depths was not enough.
    pub text: Option<Text>,
}

impl Compaction {
    pub fn is_compacted(&self) -> bool {
        self.output_depth.is_some() || self.input_depth.is_some() || self.text.is_some()
    }
}

/// The parts of a definition that do not change with depth.
pub struct Fixed<'a> {
    pub name: &'a str,
    pub description: &'a str,
    pub annotations: Option<&'a Map<String, Value>>,
}

/// The schemas to publish for one tool.
pub struct Fitted {
    /// `None` when the full input schema is published.
    pub input: Option<Schema>,
    pub output: Option<Arc<Schema>>,
    pub compaction: Compaction,
    /// Characters of the published definition.
    pub size: usize,
}

/// Publishes one tool within `target` characters if any rung allows it.
pub fn fit(
    compactor: &mut Compactor,
    fixed: &Fixed,
    input: &Schema,
    output: Option<&Arc<Schema>>,
    output_depth: u32,
    target: usize,
) -> Fitted {
    let fixed_chars = fixed_chars(fixed);
    let whole = |depth| Cut::depth(depth);
    let mut rungs: Vec<(Cut, Option<Cut>)> = vec![(whole(output_depth), None)];
    rungs.extend(
        (1..output_depth.min(LADDER_START + 1))
            .rev()
            .map(|depth| (whole(depth), None)),
    );
    rungs.extend(
        (0..=LADDER_START)
            .rev()
            .map(|depth| (whole(output_depth.min(1)), Some(whole(depth)))),
    );
    rungs.push((whole(0), Some(whole(0))));
    for text in [Text::NoExamples, Text::Short, Text::Bare] {
        let cut = Cut { depth: 0, text };
        rungs.push((cut, Some(cut)));
    }
    let full_input_chars = input.chars();
    // Rungs often publish the same output; its size is counted once.
    let mut counted: Vec<(Arc<Schema>, usize)> = Vec::new();
    let mut output_chars =
        |schema: &Arc<Schema>| match counted.iter().find(|(seen, _)| Arc::ptr_eq(seen, schema)) {
            Some((_, chars)) => *chars,
            None => {
                let chars = schema.chars();
                counted.push((schema.clone(), chars));
                chars
            }
        };
    let mut best: Option<Fitted> = None;
    for (out_cut, in_cut) in rungs {
        let (published_output, output_cut) = match output {
            Some(schema) => {
                let (published, elided) = compactor.compact_shared(schema, out_cut);
                (Some(published), elided.then_some(out_cut.depth))
            }
            None => (None, None),
        };
        let (published_input, input_cut) = match in_cut {
            Some(cut) => match compactor.compacted(input, cut, Direction::Input) {
                Some(compacted) => (Some(compacted), Some(cut.depth)),
                None => (None, None),
            },
            None => (None, None),
        };
        let text = (out_cut.text != Text::Whole).then_some(out_cut.text);
        let size = fixed_chars
            + "\"inputSchema\":".len()
            + published_input
                .as_ref()
                .map_or(full_input_chars, Schema::chars)
            + published_output
                .as_ref()
                .map_or(0, |s| ",\"outputSchema\":".len() + output_chars(s));
        let candidate = Fitted {
            input: published_input,
            output: published_output,
            compaction: Compaction {
                output_depth: output_cut,
                input_depth: input_cut,
                text,
            },
            size,
        };
        if size <= target {
            return candidate;
        }
        if best.as_ref().is_none_or(|b| candidate.size < b.size) {
            best = Some(candidate);
        }
    }
    // The rung list is never empty, so `best` is set; an empty answer
    // would only mean publishing the full schemas.
    best.unwrap_or_else(|| Fitted {
        input: None,
        output: output.cloned(),
        compaction: Compaction::default(),
        size: usize::MAX,
    })
}

/// Characters of `{"name":…,"description":…,` `,"annotations":…`, the
/// version and the closing brace: everything but the two schemas.
fn fixed_chars(fixed: &Fixed) -> usize {
    let mut count = CharCount::default();
    count.push("{\"name\":");
    write_string(fixed.name, &mut count);
    count.push(",\"description\":");
    write_string(fixed.description, &mut count);
    count.push(",");
    if let Some(annotations) = fixed.annotations {
        count.push(",\"annotations\":");
        write_canonical_object(annotations, &mut count);
    }
    count.push("}");
    count.0 + VERSION_CHARS
}
