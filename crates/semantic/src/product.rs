//! The encoder's matrix products: `x · W + b` against weights laid out
//! once, when the model loads, for the way they are read.
//!
//! A query is a dozen to forty tokens, so each of its products is a thin
//! matrix times a weight matrix of up to 1536 × 384. A general GEMM
//! (`matrixmultiply`, which this replaced) copies ("packs") both operands
//! into blocks before multiplying, into buffers it allocates per call:
//! profiled in the served gateway at 125k tools, packing and the page
//! faults of its fresh buffers took more of a query's time than the
//! multiplications. The weights never change, so they are packed once
//! ([`PackedMatrix`]): in *strips* of sixteen output columns, each strip's
//! `inputs × 16` values contiguous, so a strip streams from memory and
//! stays in cache while the rows of `x` pass over it, a few rows at once,
//! their sixteen-wide sums in vector registers (AVX2 fused multiply-adds
//! where the CPU has them, chosen at run time; plain arithmetic the
//! compiler vectorises elsewhere).

use std::ops::Range;

/// Columns of one strip.
pub(crate) const STRIP: usize = 16;

/// A weight matrix `inputs × outputs` in strips of [`STRIP`] columns
/// (the last one padded with zeros).
pub(crate) struct PackedMatrix {
    values: Vec<f32>,
    inputs: usize,
    outputs: usize,
}

impl PackedMatrix {
    /// Packs the row-major `inputs × outputs` matrix `row_major`;
    /// `None` when its length is not that.
    pub fn pack(row_major: &[f32], inputs: usize, outputs: usize) -> Option<PackedMatrix> {
        if row_major.len() != inputs.checked_mul(outputs)? {
            return None;
        }
        let strips = outputs.div_ceil(STRIP);
        let mut values = vec![0f32; strips * inputs * STRIP];
        for (strip, packed) in values.chunks_exact_mut(inputs * STRIP).enumerate() {
            let first = strip * STRIP;
            let width = STRIP.min(outputs - first);
            for (k, row) in packed.chunks_exact_mut(STRIP).enumerate() {
                row[..width].copy_from_slice(&row_major[k * outputs + first..][..width]);
            }
        }
        Some(PackedMatrix {
            values,
            inputs,
            outputs,
        })
    }

    pub fn inputs(&self) -> usize {
        self.inputs
    }

    pub fn outputs(&self) -> usize {
        self.outputs
    }

    /// Number of strips.
    pub fn strips(&self) -> usize {
        self.outputs.div_ceil(STRIP)
    }

    fn strip(&self, strip: usize) -> &[f32] {
        &self.values[strip * self.inputs * STRIP..][..self.inputs * STRIP]
    }
}

/// Where a product's result goes: `n × outputs` row-major values, which
/// a product's threads write in disjoint strips.
#[derive(Clone, Copy)]
pub(crate) struct Output {
    pub values: *mut f32,
    pub n: usize,
    pub outputs: usize,
}

/// Adds `x · w` into `out`, for the columns of `strips`.
///
/// # Safety
/// `x` holds `out.n × w.inputs()` values; `out` points to `out.n ×
/// w.outputs()` values (`out.outputs == w.outputs()`) that nothing else
/// reads or writes in those strips' columns meanwhile; `strips` lies
/// within `0..w.strips()`.
pub(crate) unsafe fn add_strips(x: &[f32], w: &PackedMatrix, out: Output, strips: Range<usize>) {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma")
        {
            // SAFETY: the CPU has the features; the caller's contract.
            unsafe { fma::add_strips(x, w, out, strips) };
            return;
        }
    }
    // SAFETY: the caller's contract.
    unsafe { add_strips_plain(x, w, out, strips) };
}

/// [`add_strips`] in plain arithmetic (the compiler vectorises it for the
/// baseline vector unit).
///
/// # Safety
/// [`add_strips`]' contract.
unsafe fn add_strips_plain(x: &[f32], w: &PackedMatrix, out: Output, strips: Range<usize>) {
    for strip in strips {
        let mut row = 0;
        while row + PLAIN_ROWS <= out.n {
            // SAFETY: rows and the strip in range; the caller's contract.
            unsafe { add_block_plain::<PLAIN_ROWS>(x, w, out, row, strip) };
            row += PLAIN_ROWS;
        }
        while row < out.n {
            // SAFETY: as above.
            unsafe { add_block_plain::<1>(x, w, out, row, strip) };
            row += 1;
        }
    }
}

/// Rows of `x` against a strip at once, without AVX2.
const PLAIN_ROWS: usize = 4;

/// `R` rows of `x`, from `row`, against `strip`, added into `out` (the
/// strip's padding columns dropped).
///
/// # Safety
/// As [`add_strips`], with `row + R <= out.n` and `strip < w.strips()`.
unsafe fn add_block_plain<const R: usize>(
    x: &[f32],
    w: &PackedMatrix,
    out: Output,
    row: usize,
    strip: usize,
) {
    let inputs = w.inputs;
    let rows: [&[f32]; R] = std::array::from_fn(|r| &x[(row + r) * inputs..][..inputs]);
    let mut sums = [[0f32; STRIP]; R];
    for (k, weights) in w.strip(strip).chunks_exact(STRIP).enumerate() {
        for r in 0..R {
            let value = rows[r][k];
            for (sum, weight) in sums[r].iter_mut().zip(weights) {
                *sum += value * weight;
            }
        }
    }
    // SAFETY: the caller's contract.
    unsafe { add_sums(&sums, out, row, strip) };
}

/// Adds the sums of `R` rows from `row` into `out`'s columns of `strip`,
/// its padding dropped.
///
/// # Safety
/// As [`add_block_plain`].
#[inline(always)]
unsafe fn add_sums<const R: usize>(
    sums: &[[f32; STRIP]; R],
    out: Output,
    row: usize,
    strip: usize,
) {
    let first = strip * STRIP;
    let width = STRIP.min(out.outputs - first);
    for (r, sums) in sums.iter().enumerate() {
        for (c, sum) in sums[..width].iter().enumerate() {
            // SAFETY: row + r < n and first + c < outputs: `out`'s, and
            // this strip's alone (the caller's contract).
            unsafe { *out.values.add((row + r) * out.outputs + first + c) += sum };
        }
    }
}

/// The strip kernel in AVX2 and FMA instructions: the sums named as
/// vector registers, so none goes through memory inside the loop.
#[cfg(target_arch = "x86_64")]
mod fma {
    use super::{Output, PackedMatrix, Range, STRIP, add_sums};
    use std::arch::x86_64::{
        __m256, _mm256_fmadd_ps, _mm256_loadu_ps, _mm256_set1_ps, _mm256_setzero_ps,
        _mm256_storeu_ps,
    };

    /// Rows of `x` against a strip at once: two 8-wide sums a row, twelve
    /// of the sixteen vector registers.
    const ROWS: usize = 6;

    /// [`super::add_strips`] with AVX2 and FMA.
    ///
    /// # Safety
    /// The CPU has AVX2 and FMA; [`super::add_strips`]' contract.
    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn add_strips(
        x: &[f32],
        w: &PackedMatrix,
        out: Output,
        strips: Range<usize>,
    ) {
        for strip in strips {
            let mut row = 0;
            while row + ROWS <= out.n {
                // SAFETY: rows and the strip in range; the caller's contract.
                unsafe { add_block::<ROWS>(x, w, out, row, strip) };
                row += ROWS;
            }
            while row < out.n {
                // SAFETY: as above.
                unsafe { add_block::<1>(x, w, out, row, strip) };
                row += 1;
            }
        }
    }

    /// `R` rows of `x`, from `row`, against `strip`, added into `out`.
    ///
    /// # Safety
    /// The CPU has AVX2 and FMA; `row + R <= out.n`; the caller's
    /// contract of [`super::add_strips`].
    #[target_feature(enable = "avx2,fma")]
    unsafe fn add_block<const R: usize>(
        x: &[f32],
        w: &PackedMatrix,
        out: Output,
        row: usize,
        strip: usize,
    ) {
        let inputs = w.inputs;
        let rows: [&[f32]; R] = std::array::from_fn(|r| &x[(row + r) * inputs..][..inputs]);
        let mut low: [__m256; R] = [_mm256_setzero_ps(); R];
        let mut high: [__m256; R] = [_mm256_setzero_ps(); R];
        for (k, weights) in w.strip(strip).chunks_exact(STRIP).enumerate() {
            // SAFETY: `weights` holds 16 values, read as two 8-wide
            // vectors (unaligned loads).
            let (w0, w1) = unsafe {
                (
                    _mm256_loadu_ps(weights.as_ptr()),
                    _mm256_loadu_ps(weights.as_ptr().add(8)),
                )
            };
            for r in 0..R {
                let value = _mm256_set1_ps(rows[r][k]);
                low[r] = _mm256_fmadd_ps(value, w0, low[r]);
                high[r] = _mm256_fmadd_ps(value, w1, high[r]);
            }
        }
        let mut sums = [[0f32; STRIP]; R];
        for r in 0..R {
            // SAFETY: each row of `sums` holds 16 values.
            unsafe {
                _mm256_storeu_ps(sums[r].as_mut_ptr(), low[r]);
                _mm256_storeu_ps(sums[r].as_mut_ptr().add(8), high[r]);
            }
        }
        // SAFETY: the caller's contract.
        unsafe { add_sums(&sums, out, row, strip) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reference(x: &[f32], n: usize, inputs: usize, w: &[f32], outputs: usize) -> Vec<f32> {
        let mut out = vec![0f32; n * outputs];
        for row in 0..n {
            for column in 0..outputs {
                out[row * outputs + column] = (0..inputs)
                    .map(|k| f64::from(x[row * inputs + k]) * f64::from(w[k * outputs + column]))
                    .sum::<f64>() as f32;
            }
        }
        out
    }

    #[test]
    fn products_of_every_shape_equal_the_plain_sum() {
        // Rows not a multiple of six or four, columns not of sixteen, one
        // row, fewer columns than a strip.
        for (n, inputs, outputs) in [
            (7, 13, 37),
            (1, 384, 48),
            (4, 5, 16),
            (9, 64, 3),
            (13, 3, 40),
        ] {
            let x: Vec<f32> = (0..n * inputs).map(|i| (i as f32 * 0.37).sin()).collect();
            let w: Vec<f32> = (0..inputs * outputs)
                .map(|i| (i as f32 * 0.11).cos())
                .collect();
            let packed = PackedMatrix::pack(&w, inputs, outputs).unwrap();
            let mut out = vec![1f32; n * outputs];
            let output = Output {
                values: out.as_mut_ptr(),
                n,
                outputs,
            };
            let half = packed.strips() / 2;
            // SAFETY: `x` is n × inputs, `out` n × outputs and ours.
            unsafe {
                add_strips(&x, &packed, output, 0..half);
                add_strips(&x, &packed, output, half..packed.strips());
            }
            let expected = reference(&x, n, inputs, &w, outputs);
            for (got, want) in out.iter().zip(&expected) {
                assert!((got - 1.0 - want).abs() < 1e-4, "{n}×{inputs}×{outputs}");
            }
            // The plain kernel, whatever this CPU has, gives the same.
            let mut plain = vec![1f32; n * outputs];
            let output = Output {
                values: plain.as_mut_ptr(),
                n,
                outputs,
            };
            // SAFETY: as above.
            unsafe { add_strips_plain(&x, &packed, output, 0..packed.strips()) };
            for (got, want) in plain.iter().zip(&expected) {
                assert!(
                    (got - 1.0 - want).abs() < 1e-4,
                    "plain {n}×{inputs}×{outputs}"
                );
            }
        }
    }

    #[test]
    fn a_matrix_of_another_size_is_not_packed() {
        assert!(PackedMatrix::pack(&[1.0; 6], 2, 4).is_none());
        assert!(PackedMatrix::pack(&[1.0; 8], 2, 4).is_some());
    }
}
