//! The fields of a tool search reads, and how much a match in each weighs.
//!
//! One place for the field ids and the BM25F constants, so analysis (which
//! counts words per field) and layout (which weighs them) agree without
//! depending on each other.

/// The searchable fields, in the order of [`FIELD_WEIGHT`] and [`FIELD_B`].
/// The description is two fields: its first [`LEAD_TOKENS`] tokens (the
/// lead, usually the summary) and the rest.
pub(crate) const FIELDS: usize = 8;
pub(crate) const NAME: usize = 0;
pub(crate) const SEARCH_TERMS: usize = 1;
pub(crate) const TAGS: usize = 2;
pub(crate) const ROUTE: usize = 3;
pub(crate) const ARGUMENTS: usize = 4;
pub(crate) const LEAD: usize = 5;
pub(crate) const DESCRIPTION: usize = 6;
pub(crate) const API: usize = 7;

/// How much a match in each field weighs (BM25F field boost).
pub(crate) const FIELD_WEIGHT: [f32; FIELDS] = [3.0, 3.0, 1.5, 1.5, 1.0, 0.9, 0.6, 1.0];
/// BM25 length normalisation per field (0: none, 1: full), against the
/// field's mean length over the tool's document (so a tool's weights depend
/// on its document alone, and an API's verbose style is its own norm).
/// Names are normalised most: `create_gist` is more about gists than
/// `gists_create_comment_reaction`.
pub(crate) const FIELD_B: [f32; FIELDS] = [0.9, 0.5, 0.3, 0.3, 0.3, 0.5, 0.75, 0.0];
/// How many tokens of the description make its lead.
pub(crate) const LEAD_TOKENS: usize = 10;

/// A word group's BM25F pseudo-frequency in one field of a tool: weighted
/// and normalised by the field's length. Repeats count only in the
/// description; elsewhere they are structure, not emphasis.
pub(crate) fn field_weight(field: usize, frequency: u16, length: u32, average: f32) -> f32 {
    if frequency == 0 {
        return 0.0;
    }
    let count = if field == DESCRIPTION { frequency } else { 1 };
    let norm = 1.0 - FIELD_B[field] + FIELD_B[field] * length as f32 / average;
    FIELD_WEIGHT[field] * f32::from(count) / norm
}
