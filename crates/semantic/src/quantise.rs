//! Vectors stored as `i8`: a quarter of their `f32` memory, and a cosine
//! scan that reads four times fewer bytes. One rule for the tool table
//! (`vectors`) and the static model's token table (`static_model`), so the
//! two read their rows the same way.

/// A vector quantised to `i8`, and the factor back to its values.
pub(crate) fn quantise(vector: &[f32]) -> (Vec<i8>, f32) {
    let largest = vector.iter().fold(0f32, |m, v| m.max(v.abs()));
    if !largest.is_normal() {
        return (vec![0; vector.len()], 0.0);
    }
    let scale = 127.0 / largest;
    let row = vector
        .iter()
        .map(|v| (v * scale).round().clamp(-127.0, 127.0) as i8)
        .collect();
    (row, 1.0 / scale)
}
