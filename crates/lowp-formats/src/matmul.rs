//! The oracle: `scaled_matmul` on the CPU, and an f64 reference with error bounds.
//!
//! `out[m, n] = sum_k dec(a[m, k]) * sa(m, k) * dec(b[n, k]) * sb(n, k) (+ bias[n])`, B K-last
//! (N x K). Accumulation is in f32 with one partial sum per *scale segment*: the K range is
//! cut wherever A's or B's scale changes; each segment is summed in order of k, then
//! multiplied once by its scale, the f32 product `sa * sb`, and added to the output
//! accumulator. Per-tensor and per-channel scales make all of K one segment: the total times
//! `sa * sb`. The NVFP4 global scales multiply the total at the end, also as one f32 product
//! `ga * gb`, then the bias is added.
//!
//! The f64 reference ([`scaled_matmul_f64`]) sums exact products in f64 and also returns
//! `sum_k |a_k b_k|`, so a kernel that sums in another order can be checked against a
//! rigorous bound ([`Reference::check`]).
//!
//! The scale products are where the contract's f32 arithmetic may leave f32's range though
//! each scale is legal (E8M0 reaches 2^-127 and 2^127): the reference multiplies exactly, a
//! kernel rounds the product to f32 (or, folding scales into codes or applying them in
//! hardware, multiplies exactly too). So the check allows, per output, what rounding a
//! product may do: below f32's normal range it moves by up to 2^-150, an error of
//! `|partial| * 2^-150` ([`Reference::scale_rounding`]); past f32's largest value it may
//! become inf (inf times a zero partial is NaN), and below 2^-149 it may become 0 (0 times an
//! infinite partial is NaN): the output may then be any NaN or infinity
//! ([`Reference::scale_hazard`]). With scale products inside f32's normal range neither
//! applies.

use std::thread;

use crate::lowp_codec::Codec;
use crate::{FormatError, QuantizedTensor, ScaleLayout, ScaledFormat};

/// A borrowed matmul operand: a `rows x k` code matrix (K-last) with its scales.
#[derive(Clone, Copy, Debug)]
pub struct MatmulOperand<'a> {
    /// Element format.
    pub format: ScaledFormat,
    /// Scale layout.
    pub layout: ScaleLayout,
    /// Rows (M of A, N of B).
    pub rows: usize,
    /// K.
    pub k: usize,
    /// Codes, one per byte or FP4-packed per row.
    pub codes: &'a [u8],
    /// Whether `codes` is FP4-packed.
    pub packed: bool,
    /// Block scales, row-major in the layout's scale shape.
    pub scales: &'a [f32],
    /// The NVFP4 global scale.
    pub global: Option<f32>,
}

impl QuantizedTensor {
    /// This tensor as a matmul operand.
    pub fn as_operand(&self) -> MatmulOperand<'_> {
        MatmulOperand {
            format: self.format,
            layout: self.layout,
            rows: self.rows,
            k: self.cols,
            codes: &self.codes,
            packed: self.packed,
            scales: &self.scales.values,
            global: self.scales.global,
        }
    }
}

impl MatmulOperand<'_> {
    fn validate(&self, what: &'static str) -> Result<(), FormatError> {
        self.layout.validate()?;
        if self.packed && self.format.bit_width() > 4 {
            return Err(FormatError::PackedNotFp4 {
                format: self.format,
            });
        }
        let code_len = if self.packed {
            self.rows * self.k.div_ceil(2)
        } else {
            self.rows * self.k
        };
        check_len(what, code_len, self.codes.len())?;
        check_len(
            "scales",
            self.layout.scale_count(self.rows, self.k),
            self.scales.len(),
        )?;
        if self.layout.has_global() != self.global.is_some() {
            return Err(FormatError::GlobalScale {
                layout: self.layout,
                given: self.global.is_some(),
            });
        }
        Ok(())
    }

    /// Decode every element to f32 (unscaled), row-major.
    fn decode_all(&self) -> Vec<f32> {
        let codec = Codec::new(self.format);
        let mut out = vec![0.0f32; self.rows * self.k];
        if self.packed {
            let stride = self.k.div_ceil(2);
            for r in 0..self.rows {
                for c in 0..self.k {
                    let byte = self.codes[r * stride + c / 2];
                    let code = if c % 2 == 0 { byte & 0xF } else { byte >> 4 };
                    out[r * self.k + c] = codec.decode(code);
                }
            }
        } else {
            codec.decode_slice(self.codes, &mut out);
        }
        out
    }

    #[inline]
    fn scale(&self, r: usize, c: usize) -> f32 {
        self.scales[self.layout.scale_index(r, c, self.rows, self.k)]
    }
}

fn check_len(what: &'static str, expected: usize, found: usize) -> Result<(), FormatError> {
    if expected == found {
        Ok(())
    } else {
        Err(FormatError::Length {
            what,
            expected,
            found,
        })
    }
}

/// The K segments over which both operands' scales are constant: `[start, end)` pairs.
pub fn scale_segments(a: ScaleLayout, b: ScaleLayout, k: usize) -> Vec<(usize, usize)> {
    let (ka, kb) = (a.k_block(k).max(1), b.k_block(k).max(1));
    let mut segs = Vec::new();
    let mut start = 0;
    while start < k {
        let end = ((start / ka + 1) * ka).min((start / kb + 1) * kb).min(k);
        segs.push((start, end));
        start = end;
    }
    segs
}

/// f32's smallest subnormal, 2^-149.
pub(crate) const F32_MIN_SUBNORMAL: f64 = 1.401298464324817e-45;

/// The largest and the smallest nonzero magnitude of a product of an `a` code and a `b`
/// code (exact in f64).
pub(crate) fn product_range(a: ScaledFormat, b: ScaledFormat) -> (f64, f64) {
    (
        a.max_finite() as f64 * b.max_finite() as f64,
        a.min_positive() as f64 * b.min_positive() as f64,
    )
}

/// Whether f32 partial sums (the contract: one per scale block of `block` codes, of
/// products of decoded codes, scaled once per block) hold every product of an `a` code and
/// a `b` code and every sum of `block` of them: none above f32's largest value, none below
/// its smallest subnormal (where the product would be lost). Every pair of named formats
/// passes at any realistic K; custom formats with wide exponent ranges (`f8e7m0`, a large
/// or negative bias) can fail, and kernels would then return inf or 0 where the exact
/// result is finite.
pub fn check_f32_products(
    a: ScaledFormat,
    b: ScaledFormat,
    block: usize,
) -> Result<(), FormatError> {
    let (top, step) = product_range(a, b);
    if top * block.max(1) as f64 > f32::MAX as f64 || step < F32_MIN_SUBNORMAL {
        return Err(FormatError::F32Products { a, b, block });
    }
    Ok(())
}

/// The longest run of K that one scale of each operand covers (one partial sum): the
/// first segment, `[0, min(ka, kb, k))`, since no segment crosses a block of either
/// operand. Computed without listing the segments (K may be any size here).
pub fn partial_sum_len(a: ScaleLayout, b: ScaleLayout, k: usize) -> usize {
    a.k_block(k).max(1).min(b.k_block(k).max(1)).min(k)
}

fn validate_pair(
    a: &MatmulOperand,
    b: &MatmulOperand,
    bias: Option<&[f32]>,
) -> Result<(), FormatError> {
    a.validate("A codes")?;
    b.validate("B codes")?;
    if a.k != b.k {
        return Err(FormatError::KMismatch { a: a.k, b: b.k });
    }
    if let Some(bias) = bias {
        check_len("bias", b.rows, bias.len())?;
    }
    Ok(())
}

/// Run `f(row, out_row)` for every output row, split over the available cores.
fn par_rows<T: Send>(m: usize, n: usize, out: &mut [T], f: impl Fn(usize, &mut [T]) + Sync) {
    let threads = thread::available_parallelism()
        .map_or(1, |t| t.get())
        .min(m.max(1));
    let rows_per = m.div_ceil(threads.max(1)).max(1);
    if n == 0 {
        return;
    }
    thread::scope(|s| {
        for (chunk_idx, chunk) in out.chunks_mut(rows_per * n).enumerate() {
            let f = &f;
            s.spawn(move || {
                for (i, row) in chunk.chunks_mut(n).enumerate() {
                    f(chunk_idx * rows_per + i, row);
                }
            });
        }
    });
}

/// The oracle scaled matmul: `a` is M x K, `b` is N x K, result M x N row-major f32.
pub fn scaled_matmul(
    a: &MatmulOperand,
    b: &MatmulOperand,
    bias: Option<&[f32]>,
) -> Result<Vec<f32>, FormatError> {
    validate_pair(a, b, bias)?;
    let (m, n, k) = (a.rows, b.rows, a.k);
    let (da, db) = (a.decode_all(), b.decode_all());
    let segs = scale_segments(a.layout, b.layout, k);
    let global = a.global.unwrap_or(1.0) * b.global.unwrap_or(1.0);
    let mut out = vec![0.0f32; m * n];
    par_rows(m, n, &mut out, |i, row| {
        let arow = &da[i * k..(i + 1) * k];
        for (j, o) in row.iter_mut().enumerate() {
            let brow = &db[j * k..(j + 1) * k];
            let mut acc = 0.0f32;
            for &(s0, s1) in &segs {
                let mut partial = 0.0f32;
                for kk in s0..s1 {
                    partial += arow[kk] * brow[kk];
                }
                acc += partial * (a.scale(i, s0) * b.scale(j, s0));
            }
            let mut v = if a.global.is_some() || b.global.is_some() {
                acc * global
            } else {
                acc
            };
            if let Some(bias) = bias {
                v += bias[j];
            }
            *o = v;
        }
    });
    Ok(out)
}

/// The f64 reference of a scaled matmul: exact values (to f64 rounding) and the magnitude
/// `sum_k |a_k sa| |b_k sb|` of every output, for error bounds.
#[derive(Clone, Debug)]
pub struct Reference {
    /// M.
    pub m: usize,
    /// N.
    pub n: usize,
    /// K.
    pub k: usize,
    /// The f64 result, row-major M x N (bias included).
    pub values: Vec<f64>,
    /// `sum_k |a_k sa| * |b_k sb| * |global|` per output.
    pub magnitude: Vec<f64>,
    /// The same over the scale segments whose scaled magnitude is finite: what the
    /// contract's f32 arithmetic may overflow beside an infinite term.
    pub finite_magnitude: Vec<f64>,
    /// The error that rounding the scale products (`sa * sb` per segment, `ga * gb`) to f32
    /// may add where they fall below f32's normal range: `|partial| * 2^-150` per such
    /// product, in the units of the output.
    pub scale_rounding: Vec<f64>,
    /// Whether a scale product may round to inf (past f32's largest value) or, beside an
    /// infinite or NaN partial sum, to 0 (below 2^-149): the output may then be any NaN or
    /// infinity.
    pub scale_hazard: Vec<bool>,
}

/// How a kernel formed its sums, for the bound its result is checked against.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Accumulation {
    /// f32 sums in any order, as the contract says: the `gamma_{K+5}` bound.
    #[default]
    F32,
    /// Hopper's FP8 tensor cores (`wgmma` on E4M3 / E5M2, sm_90a), whose partial sums go
    /// into f32 registers at least every `promote` products. The tensor cores add each
    /// instruction's 32 products to the running sum with a reduced-precision adder (about
    /// 13 bits below the leading bit of the largest term: on the H200, 2026-12-04, kernels
    /// that matched cuBLASLt's `torch._scaled_mm` bit for bit were off by up to
    /// 2^-12.2 of `sum |a b|` over 4 instructions, and 2^-13.8 over one, against f32's
    /// 2^-19.5 there). The bound adds `2^-12` of the output's magnitude per instruction of
    /// the longest run between promotions: `2^-12 * ceil(min(K, promote) / 32)`.
    Fp8TensorCore {
        /// Products summed by the tensor cores between two promotions.
        promote: usize,
    },
}

impl Accumulation {
    /// The bound's term for the accumulator's precision, as a fraction of the output's
    /// magnitude (0 for f32).
    pub fn relative_error(self, k: usize) -> f64 {
        match self {
            Accumulation::F32 => 0.0,
            Accumulation::Fp8TensorCore { promote } => {
                2f64.powi(-12) * k.min(promote.max(1)).div_ceil(32) as f64
            }
        }
    }

    /// Its name: `f32`, `fp8-tensor-core/<promote>`.
    pub fn name(self) -> String {
        match self {
            Accumulation::F32 => "f32".into(),
            Accumulation::Fp8TensorCore { promote } => format!("fp8-tensor-core/{promote}"),
        }
    }

    /// What a check line ends with: nothing for the contract's f32 sums, else
    /// ` accumulation=<name>` (the bound it was checked under).
    pub fn check_suffix(self) -> String {
        match self {
            Accumulation::F32 => String::new(),
            a => format!(" accumulation={}", a.name()),
        }
    }
}

/// The type a result is stored in (its values are checked as f32).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stored {
    /// f32.
    F32,
    /// bf16 (rounded to nearest even from the f32 result).
    Bf16,
}

impl Stored {
    /// The smallest magnitude that rounds to infinity: the largest finite value plus half
    /// its unit in the last place.
    pub fn overflow(self) -> f64 {
        let bits = match self {
            Stored::F32 => 24,
            Stored::Bf16 => 8,
        };
        (2.0 - 2f64.powi(-bits)) * 2f64.powi(127)
    }
}

/// Error statistics of a result against a [`Reference`].
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ErrorStats {
    /// Largest `|got - want|` over finite pairs.
    pub max_abs_err: f64,
    /// Largest `|got - want| / |want|` over finite pairs whose `|want|` is at least 10^-3 of
    /// `sum_k |a_k b_k|` (outputs not dominated by cancellation, where a relative error says
    /// nothing about the kernel).
    pub max_rel_err: f64,
    /// Largest `|got - want| / bound`, where the bound is `(K + 5) * 2^-24 * magnitude`
    /// (the classic `gamma_n` bound for an f32 sum in any order); <= 1 passes.
    pub max_bound_ratio: f64,
    /// Outputs where NaN/inf of `got` and `want` disagree.
    pub nonfinite_mismatches: usize,
}

impl ErrorStats {
    /// True when every output is within the f32 summation bound and non-finite values agree.
    pub fn passed(&self) -> bool {
        self.nonfinite_mismatches == 0 && self.max_bound_ratio <= 1.0
    }
}

impl Reference {
    /// The bound on `|got - want|` of output `i` for an f32 result: gamma_{K+5} (times
    /// `slack`) of its magnitude covers the sums in any order and the scale and global
    /// multiplications; one f32 rounding of the result and one f32 subnormal step per
    /// operation cover the bias add and underflow; [`Reference::scale_rounding`] the scale
    /// products below f32's normal range.
    pub fn bound(&self, i: usize, slack: f64) -> f64 {
        let ops = self.k as f64 + 5.0;
        ops * 2f64.powi(-24) * slack * self.magnitude[i]
            + self.values[i].abs() * 2f64.powi(-24)
            + ops * f32::from_bits(1) as f64
            + self.scale_rounding[i]
    }

    /// [`Reference::bound`] for a result stored as `stored`: a bf16 result is the f32 one
    /// (within `e32`) rounded once more, by its unit roundoff 2^-8 or half its subnormal
    /// step (2^-133): `e32 + 2^-8 (|w| + e32) + 2^-134`.
    pub fn stored_bound(&self, i: usize, slack: f64, stored: Stored) -> f64 {
        let e32 = self.bound(i, slack);
        match stored {
            Stored::F32 => e32,
            Stored::Bf16 => e32 + (self.values[i].abs() + e32) * 2f64.powi(-8) + 2f64.powi(-134),
        }
    }

    /// Compare `got` (M x N) with this reference; `slack` multiplies the bound (use 1.0 for
    /// f32 accumulation, more for kernels that accumulate in lower precision).
    pub fn check(&self, got: &[f32], slack: f64) -> ErrorStats {
        self.check_stored(got, slack, Stored::F32)
    }

    /// [`Reference::check`] of a result stored as `stored` (a bf16 result widened to f32).
    pub fn check_stored(&self, got: &[f32], slack: f64, stored: Stored) -> ErrorStats {
        self.check_accumulated(got, slack, stored, Accumulation::F32)
    }

    /// [`Reference::check_stored`] of a kernel whose sums were formed as `accumulation`
    /// says: its term ([`Accumulation::relative_error`] of each output's magnitude) added
    /// to every bound.
    pub fn check_accumulated(
        &self,
        got: &[f32],
        slack: f64,
        stored: Stored,
        accumulation: Accumulation,
    ) -> ErrorStats {
        let extra = accumulation.relative_error(self.k);
        let bound = |i: usize| self.stored_bound(i, slack, stored) + extra * self.magnitude[i];
        let mut st = ErrorStats::default();
        for (i, (((&g, &w), &mag), &finite)) in got
            .iter()
            .zip(&self.values)
            .zip(&self.magnitude)
            .zip(&self.finite_magnitude)
            .enumerate()
        {
            let g = g as f64;
            if !w.is_finite() || !g.is_finite() {
                let same = (w.is_nan() && g.is_nan()) || w == g;
                // A reference so large that the stored type overflows (or would, within the
                // bound) is allowed to read the infinity of its sign. Where the terms'
                // magnitudes sum past f32's largest value, the contract's f32 partial sums
                // and scaled partials may overflow on the way (legal E8M0 scales reach
                // 2^127): any infinity, or the NaN of inf - inf, is then what f32 gives.
                // Beside an infinite term, only the finite segments can overflow into the
                // other infinity (NaN), and only where their magnitudes pass f32's largest.
                let rounds_to_inf = w.is_finite()
                    && g.is_infinite()
                    && g.signum() == w.signum()
                    && w.abs() + bound(i) >= stored.overflow();
                let overflow = (w.is_finite() && (rounds_to_inf || mag > f32::MAX as f64))
                    || (w.is_infinite() && g.is_nan() && finite > f32::MAX as f64)
                    || (self.scale_hazard[i] && !g.is_finite());
                if !same && !overflow {
                    st.nonfinite_mismatches += 1;
                }
                continue;
            }
            let err = (g - w).abs();
            st.max_abs_err = st.max_abs_err.max(err);
            if w != 0.0 && w.abs() >= 1e-3 * mag {
                st.max_rel_err = st.max_rel_err.max(err / w.abs());
            }
            st.max_bound_ratio = st.max_bound_ratio.max(err / bound(i));
        }
        st
    }
}

/// The f64 reference of [`scaled_matmul`].
pub fn scaled_matmul_f64(
    a: &MatmulOperand,
    b: &MatmulOperand,
    bias: Option<&[f32]>,
) -> Result<Reference, FormatError> {
    validate_pair(a, b, bias)?;
    let (m, n, k) = (a.rows, b.rows, a.k);
    let (da, db) = (a.decode_all(), b.decode_all());
    let global = a.global.unwrap_or(1.0) as f64 * b.global.unwrap_or(1.0) as f64;
    let segs = scale_segments(a.layout, b.layout, k);
    let mut outputs = vec![RefOutput::default(); m * n];
    par_rows(m, n, &mut outputs, |i, row| {
        for (j, o) in row.iter_mut().enumerate() {
            // Per scale segment, as the contract groups it: the codes' products summed,
            // then scaled once (exact in f64 for finite values either way; an infinite
            // scale then gives inf times the sum, not inf times each zero code's NaN).
            for &(s0, s1) in &segs {
                let (mut partial, mut partial_mag) = (0.0f64, 0.0f64);
                for kk in s0..s1 {
                    let p = da[i * k + kk] as f64 * db[j * k + kk] as f64;
                    partial += p;
                    partial_mag += p.abs();
                }
                let scale = a.scale(i, s0) as f64 * b.scale(j, s0) as f64;
                o.value += partial * scale;
                let scaled = partial_mag * scale.abs();
                o.magnitude += scaled;
                if scaled.is_finite() {
                    o.finite += scaled;
                }
                o.round_product(scale, partial, partial_mag);
            }
            o.rounding *= global.abs();
            if a.global.is_some() || b.global.is_some() {
                o.round_product(global, o.value, o.magnitude);
                // The contract's f32 total before the globals: past f32's largest value it
                // is inf, though the globals would bring it back (a hazard of its own),
                // and each of its operations' subnormal steps is scaled by them.
                o.hazard |= o.finite > f32::MAX as f64;
                o.rounding += (k as f64 + 3.0) * F32_MIN_SUBNORMAL * global.abs();
            }
            o.value *= global;
            o.magnitude *= global.abs();
            o.finite *= global.abs();
            if let Some(bias) = bias {
                o.value += bias[j] as f64;
            }
        }
    });
    Ok(Reference {
        m,
        n,
        k,
        values: outputs.iter().map(|o| o.value).collect(),
        magnitude: outputs.iter().map(|o| o.magnitude).collect(),
        finite_magnitude: outputs.iter().map(|o| o.finite).collect(),
        scale_rounding: outputs.iter().map(|o| o.rounding).collect(),
        scale_hazard: outputs.iter().map(|o| o.hazard).collect(),
    })
}

/// One output of [`scaled_matmul_f64`] as it is summed.
#[derive(Clone, Copy, Debug, Default)]
struct RefOutput {
    value: f64,
    magnitude: f64,
    finite: f64,
    rounding: f64,
    hazard: bool,
}

impl RefOutput {
    /// Account for the contract's rounding of a scale product `scale` (exact here) to f32,
    /// before it multiplies a sum `sum` of magnitude `sum_mag`.
    fn round_product(&mut self, scale: f64, sum: f64, sum_mag: f64) {
        let s = scale.abs();
        if s > 0.0 && s < f32::MIN_POSITIVE as f64 && sum_mag.is_finite() {
            // A subnormal f32 product is off by up to half its step, 2^-150.
            self.rounding += sum_mag * 2f64.powi(-150);
        }
        let to_inf = s.is_finite() && s > f32::MAX as f64;
        let to_zero = s > 0.0 && s < F32_MIN_SUBNORMAL && !sum.is_finite();
        self.hazard |= to_inf || to_zero;
    }
}
