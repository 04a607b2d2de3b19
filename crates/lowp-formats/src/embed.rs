//! Exact embeddings of narrow formats into the FP8 formats tensor cores take.
//!
//! Hopper has FP8 (E4M3, E5M2) tensor-core instructions but none for FP4 / FP6; a format
//! whose every value is also an FP8 value can be decoded to FP8 codes on the way into
//! shared memory and fed to the FP8 instructions with no rounding at all. Whether a format
//! embeds is decided from its fields ([`ScaledFormat::embeds_in`]) and checked exhaustively
//! by the tests against decoding every code.
//!
//! The rule, for an all-finite source `(e, m, bias)` and a target `(eT, mT, biasT)`: every
//! source value is `(2^m + j) 2^(E - m)` for a binade `E >= 1 - bias` (or `j 2^(1 - bias - m)`
//! below it). It is a target value when
//! 1. `m <= mT` — the target keeps as many mantissa bits in every normal binade;
//! 2. `1 - bias - m >= 1 - biasT - mT` — the source's smallest step is a multiple of the
//!    target's (then every source value in the target's subnormal range is a multiple of
//!    the target's step too);
//! 3. `max_finite(source) <= max_finite(target)` — nothing overflows.
//!
//! Each condition is also necessary (a source value with all `m` mantissa bits set, its
//! smallest positive value, its largest value), so the rule is exact.
//!
//! [`ScaledFormat::shifted_embedding`] is the wider notion a matrix core with other FP8
//! encodings needs (AMD MI300's FNUZ types, whose bias is one more than OCP's): every value
//! of the source, times `2^-shift`, is a target value, and NaN codes go to the target's NaN;
//! the kernel multiplies its result by `2^shift` again, exactly. It is decided by checking
//! every code (at most 256), not by a field rule.
//!
//! [`ScaledFormat::int_embedding`] embeds a format in small integers instead, for the byte
//! dot products of CPUs (x86 `pmaddubsw`, VNNI): every value of an all-finite `(e, m, bias)`
//! is a multiple of its smallest step `2^(1 - bias - m)` (the spacing of the subnormals, and
//! of the lowest normal binade, which every larger binade's spacing is a power-of-two
//! multiple of), so `value * 2^(bias - 1 + m)` is an integer, at most
//! `max_finite * 2^(bias - 1 + m)` in magnitude. No smaller shift works (the smallest
//! positive value would not be an integer), so the largest integer is the least possible,
//! and the rule is exact: E2M1 is `n / 2` with `|n| <= 12`, E2M3 `n / 8` with `|n| <= 60`;
//! E3M2 needs 448 and does not fit a byte.

use crate::{ScaleDtype, ScaledFormat};

/// Every value of a format as a small integer: `value = n * 2^-shift` with `|n| <= max`
/// ([`ScaledFormat::int_embedding`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IntEmbedding {
    /// Binary point of the integers: `value = n * 2^-shift` (negative when every value is
    /// a multiple of a power of two above 1).
    pub shift: i32,
    /// The largest `|n|`: `max_finite * 2^shift`.
    pub max: u32,
}

impl ScaledFormat {
    /// True when every value of `self` is exactly a value of `target` (see the module docs
    /// for the rule). A format embeds in itself; formats with NaN or inf codes embed in
    /// nothing else (their specials have no counterpart in a different encoding).
    pub fn embeds_in(self, target: ScaledFormat) -> bool {
        if self == target {
            return true;
        }
        if self.has_nan() || self.has_inf() {
            return false;
        }
        let (_, m, bias) = self.fields();
        let (_, mt, bias_t) = target.fields();
        m <= mt
            && (1 - bias - m as i32) >= (1 - bias_t - mt as i32)
            && self.max_finite() <= target.max_finite()
    }

    /// The FP8 format NVIDIA's tensor cores can consume `self` as, exactly: `self` if it is
    /// E4M3 or E5M2, else E4M3 if `self` embeds there (more mantissa), else E5M2, else
    /// `None` (the format needs the generic decode path).
    pub fn fp8_embedding(self) -> Option<ScaledFormat> {
        [ScaledFormat::F8E4M3, ScaledFormat::F8E5M2]
            .into_iter()
            .find(|&t| self.embeds_in(t))
    }

    /// The code table of an embedding: entry `c` is the `target` code of the value of code
    /// `c` (codes beyond `self`'s width repeat). `None` when `self` does not embed.
    pub fn embedding_table(self, target: ScaledFormat) -> Option<[u8; 256]> {
        if !self.embeds_in(target) {
            return None;
        }
        let mut table = [0u8; 256];
        if self == target {
            // The identity, NaN and inf codes included.
            for (c, slot) in table.iter_mut().enumerate() {
                *slot = c as u8;
            }
            return Some(table);
        }
        for (c, slot) in table.iter_mut().enumerate() {
            let v = self.decode(c as u8);
            // Exact by the rule: encode finds the target code of the very same value (and
            // keeps the sign of zero where the target has -0).
            *slot = target.encode(v);
        }
        Some(table)
    }

    /// The table of a shifted embedding: entry `c` is the `target` code of
    /// `value(c) * 2^-shift`, exactly, NaN codes mapped to the target's NaN (zeros of either
    /// sign may become the target's only zero). `None` when some finite value has no exact
    /// target value, an infinity has no target infinity, or a NaN has no target NaN.
    /// `shifted_embedding(t, 0)` exists whenever `embedding_table(t)` does.
    pub fn shifted_embedding(self, target: ScaledFormat, shift: i32) -> Option<[u8; 256]> {
        if self == target && shift == 0 {
            return self.embedding_table(target);
        }
        let factor = (-shift as f64).exp2();
        // `encode` saturates infinities and sends NaN to 0: specials are found by decoding.
        let special = |want: f32| {
            (0..target.code_count()).map(|c| c as u8).find(|&c| {
                let d = target.decode(c);
                (want.is_nan() && d.is_nan()) || (want.is_infinite() && d == want)
            })
        };
        let mut table = [0u8; 256];
        for (c, slot) in table
            .iter_mut()
            .enumerate()
            .take(self.code_count() as usize)
        {
            let v = self.decode(c as u8) as f64;
            let w = (v * factor) as f32;
            *slot = if !w.is_finite() {
                special(w)?
            } else {
                let code = target.encode(w);
                if target.decode(code) != w || (w as f64) != v * factor {
                    return None;
                }
                code
            };
        }
        // Codes beyond the width repeat, as in `embedding_table`.
        let n = self.code_count() as usize;
        for c in n..256 {
            table[c] = table[c % n];
        }
        Some(table)
    }

    /// True when every product of a value of `self` and a finite value of the one-byte
    /// scale dtype `scale` (UE8M0, UE4M3) is exactly an IEEE f16 value: a block's codes
    /// times its scale can then go to an f16 tensor-core instruction with no rounding, the
    /// scale applied on the way in (NVFP4 on Hopper: E2M1 x UE4M3 has at most 6
    /// significant bits and lies within 2^-10 .. 2688). Formats with NaN or inf codes are
    /// not taken (their products need no f16 counterpart checked here); a NaN scale gives
    /// NaN products either way. Decided over every pair of codes (at most 256 x 255).
    pub fn scaled_embeds_in_f16(self, scale: ScaleDtype) -> bool {
        if self.has_nan() || self.has_inf() {
            return false;
        }
        let grid = ScaleDtype::F16.f32_grid();
        let scales: Vec<f64> = (0..=255u8)
            .filter_map(|b| scale.decode_byte(b))
            .filter(|s| s.is_finite())
            .map(f64::from)
            .collect();
        if scales.is_empty() {
            return false;
        }
        (0..self.code_count()).all(|c| {
            let v = f64::from(self.decode(c as u8)).abs();
            scales.iter().all(|&s| {
                let p = v * s;
                // Exact in f32 first (f64 holds the product of two narrow values exactly),
                // then on f16's grid.
                let f = p as f32;
                f64::from(f) == p && grid.contains(f)
            })
        })
    }

    /// The embedding of `self` in integers of magnitude at most `limit` (see the module
    /// docs): `Some` when the format has no NaN or inf codes and
    /// `max_finite * 2^(bias - 1 + m) <= limit`. A signed byte is `limit = 127`.
    pub fn int_embedding(self, limit: u32) -> Option<IntEmbedding> {
        if self.has_nan() || self.has_inf() {
            return None;
        }
        let (_, m, bias) = self.fields();
        let shift = bias - 1 + m as i32;
        let max = f64::from(self.max_finite()) * f64::from(shift).exp2();
        (max <= f64::from(limit)).then_some(IntEmbedding {
            shift,
            max: max as u32,
        })
    }

    /// The integer of every code under [`int_embedding`](Self::int_embedding)`(limit)`:
    /// entry `c` is `decode(c) * 2^shift` (both zeros give 0). `None` where the format does
    /// not embed.
    pub fn int_code_table(self, limit: u32) -> Option<Vec<i32>> {
        let emb = self.int_embedding(limit)?;
        let factor = f64::from(emb.shift).exp2();
        Some(
            (0..self.code_count())
                .map(|c| (f64::from(self.decode(c as u8)) * factor) as i32)
                .collect(),
        )
    }
}
