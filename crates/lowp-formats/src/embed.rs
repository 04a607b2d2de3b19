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
//!
//! [`ScaledFormat::f16_fields`] is the embedding a CPU decode takes: a code's sign,
//! exponent field and mantissa moved as they are into an IEEE f16 bit pattern (no rebias,
//! a few integer operations on 16-bit lanes) is its value times `2^(bias - 15)`, subnormals
//! included (f16's subnormals have the same shape), as long as f16's exponent field holds
//! the code's exponents as normal ones; the hardware's f16 -> f32 conversion and one
//! multiply by `2^(15 - bias)` finish the decode. Decided by checking every code.
//!
//! [`ScaledFormat::bf16_fields`] is the same idea for the formats f16's exponent field does
//! not hold (6- and 7-bit exponents, E5M2 FNUZ's finite exponent 31): the fields moved into
//! an f32 (the value times `2^(bias - 127)`, subnormal codes as f32 subnormals), one exact
//! multiply into the range where the product of any two is a normal f32, and the f32's
//! high half, which is a bfloat16 (at most 7 mantissa bits). Decided by checking every code.

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

/// The 16-bit float a format's codes reach a tensor core as ([`HalfFields`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Half {
    /// IEEE f16 (5 exponent bits, 10 mantissa bits): [`ScaledFormat::f16_pattern`].
    F16,
    /// bfloat16 (8 exponent bits, 7 mantissa bits): [`ScaledFormat::bf16_pattern`].
    Bf16,
}

impl Half {
    /// Its name in PTX and MLIR types: `f16`, `bf16`.
    pub const fn name(self) -> &'static str {
        match self {
            Half::F16 => "f16",
            Half::Bf16 => "bf16",
        }
    }
}

impl std::fmt::Display for Half {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// A format's codes as 16-bit float bit patterns by moving their fields
/// ([`ScaledFormat::f16_fields`], [`ScaledFormat::bf16_fields`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HalfFields {
    /// The 16-bit float of the patterns.
    pub half: Half,
    /// Every code that is not NaN has the value `half(pattern(code)) * 2^shift` (f16:
    /// `15 - bias`; bf16: chosen so every product of two patterns is a normal f32).
    pub shift: i32,
    /// NaN codes whose pattern is not a NaN, as `(mask, value)`: the codes with
    /// `code & mask == value` (E4M3's `S.1111.111`: `(0x7F, 0x7F)`; the FNUZ NaN `0x80`:
    /// `(0xFF, 0x80)`). A decode puts a NaN there. `None` where every NaN code's pattern
    /// is already NaN (E5M2's in f16, at f16's own maximum exponent) or there is none.
    pub nan: Option<(u8, u8)>,
    /// The codes at the top exponent of a format with infinities, whose patterns the move
    /// leaves finite, as `(mask, value)` (E5M2 in bf16: `S.11111.mm`, `(0x7C, 0x7C)`): the
    /// pattern's exponent field is set to all ones there, which keeps its sign and makes
    /// the moved mantissa an infinity (0) or a NaN. `None` where the move already reaches
    /// the top exponent (E5M2 in f16) or the format has no infinities.
    pub inf: Option<(u8, u8)>,
}

/// The exact value of the bfloat16 with bits `h` (its high half of an f32).
fn bf16_value(h: u16) -> f64 {
    f64::from(f32::from_bits(u32::from(h) << 16))
}

/// The exact value of the IEEE f16 with bits `h` (infinities and NaN as f64's).
fn f16_value(h: u16) -> f64 {
    let sign = if h & 0x8000 != 0 { -1.0 } else { 1.0 };
    let (exp, mant) = (i32::from(h >> 10) & 0x1F, f64::from(h & 0x3FF));
    sign * match exp {
        0 => mant * (-24f64).exp2(),
        0x1F if mant == 0.0 => f64::INFINITY,
        0x1F => f64::NAN,
        _ => (1024.0 + mant) * f64::from(exp - 25).exp2(),
    }
}

impl ScaledFormat {
    /// The IEEE f16 bit pattern of `code` with its fields moved in place: the sign to bit
    /// 15, the exponent field as it is to bits 10..15, the mantissa to the top of f16's
    /// (bits above the format's width ignored). Meaningful where
    /// [`f16_fields`](Self::f16_fields) is `Some` (the exponent field is at most 5 bits).
    pub fn f16_pattern(self, code: u8) -> u16 {
        let (e, m, _) = self.fields();
        let magnitude = u16::from(code) & ((1 << (e + m)) - 1);
        let sign = u16::from(code) >> (e + m) & 1;
        (magnitude << (10 - m)) | (sign << 15)
    }

    /// How `self` decodes through f16 (see the module docs): `Some` when for every code
    /// the value of its [`f16_pattern`](Self::f16_pattern) times `2^(15 - bias)` is its
    /// value exactly, signed zeros, infinities and NaN alike (NaN codes whose pattern is
    /// not NaN named by one `(mask, value)` rule), with `2^(15 - bias)` and every nonzero
    /// finite value normal f32 numbers: widening the f16 to f32 and that one multiply are
    /// then exact. `None` for exponent fields wider than f16's (5 bits), for maxima f16's
    /// exponent field holds as inf / NaN (E5M2 FNUZ, whose exponent 31 is finite), and
    /// for biases that put values outside f32's normal range.
    pub fn f16_fields(self) -> Option<HalfFields> {
        let (e, _, bias) = self.fields();
        let shift = 15 - bias;
        if e > 5 || !(-126..=127).contains(&shift) {
            return None;
        }
        self.half_fields(
            Half::F16,
            shift,
            None,
            |c| f16_value(self.f16_pattern(c)),
            |v| v.abs() >= f32::MIN_POSITIVE,
        )
    }

    /// The bfloat16 bit pattern of `code` times `2^-shift`, as a kernel computes it: the
    /// sign to bit 31 of an f32 and the exponent field and mantissa as they are to its
    /// bits below (the value times `2^(bias - 127)`, subnormal codes as f32 subnormals),
    /// one multiply by `2^(127 - bias - shift)`, and the f32's high half. Meaningful where
    /// [`bf16_fields`](Self::bf16_fields) gives `shift`.
    pub fn bf16_pattern(self, shift: i32, code: u8) -> u16 {
        let (e, m, bias) = self.fields();
        let magnitude = u32::from(code) & ((1 << (e + m)) - 1);
        let sign = u32::from(code) >> (e + m) & 1;
        let moved = f32::from_bits((magnitude << (23 - m)) | (sign << 31));
        let pattern = ((moved * 2f32.powi(127 - bias - shift)).to_bits() >> 16) as u16;
        match self.top_exponent() {
            Some((mask, value)) if code & mask == value => pattern | 0x7F80,
            _ => pattern,
        }
    }

    /// The codes at the top exponent of a format with infinities (E5M2's `S.11111.mm`) as
    /// `(mask, value)`, `None` for the formats without ([`HalfFields::inf`]).
    fn top_exponent(self) -> Option<(u8, u8)> {
        let (e, m, _) = self.fields();
        let field = (((1u32 << e) - 1) << m) as u8;
        self.has_inf().then_some((field, field))
    }

    /// How `self` reaches a bf16 tensor-core instruction (formats whose exponent field f16's
    /// does not hold: 6- and 7-bit exponents, E5M2 FNUZ): `Some` when for every code the
    /// value of its [`bf16_pattern`](Self::bf16_pattern) times `2^shift` is its value
    /// exactly, signed zeros and NaN alike (NaN codes whose pattern is not NaN named by one
    /// `(mask, value)` rule), every nonzero pattern lies in `[2^-63, 2^64)` (a product of
    /// two is then a normal f32, exact: 8-bit significands), and the multiply's
    /// `2^(127 - bias - shift)` is a normal f32. `shift` is 0 where that holds, else the
    /// nearest that does. Infinities and NaN at the top exponent (E5M2), which the move
    /// leaves finite, reach bf16's through the [`inf`](HalfFields::inf) rule. `None` for
    /// mantissas wider than bf16's 7 bits and value ranges wider than 126 binades.
    pub fn bf16_fields(self) -> Option<HalfFields> {
        let (e, m, bias) = self.fields();
        if e > 8 || m > 7 {
            return None;
        }
        let (low, high) = (f64::from(self.min_positive()), f64::from(self.max_finite()));
        let shift = (0..=127).flat_map(|s| [s, -s]).find(|&s| {
            let unit = f64::from(s).exp2();
            low / unit >= (-63f64).exp2()
                && high / unit < 64f64.exp2()
                && (-126..=127).contains(&(127 - bias - s))
        })?;
        let unit = f64::from(shift).exp2();
        self.half_fields(
            Half::Bf16,
            shift,
            self.top_exponent(),
            |c| bf16_value(self.bf16_pattern(shift, c)),
            |v| {
                let p = f64::from(v.abs()) / unit;
                p >= (-63f64).exp2() && p < 64f64.exp2()
            },
        )
    }

    /// The fields of `half` with `shift` and the `inf` rule when every code's pattern value
    /// (`value`) times `2^shift` is its value, with the same sign, and every nonzero finite
    /// value `fits`; NaN codes whose pattern is not NaN named by one `(mask, value)` rule.
    fn half_fields(
        self,
        half: Half,
        shift: i32,
        inf: Option<(u8, u8)>,
        value: impl Fn(u8) -> f64,
        fits: impl Fn(f32) -> bool,
    ) -> Option<HalfFields> {
        let factor = f64::from(shift).exp2();
        let mut unmatched_nans = Vec::new();
        for c in 0..self.code_count() {
            let c = c as u8;
            let (v, w) = (self.decode(c), value(c) * factor);
            if v.is_nan() {
                if !w.is_nan() {
                    unmatched_nans.push(c);
                }
                continue;
            }
            let fits = v == 0.0 || v.is_infinite() || fits(v);
            if !fits || w != f64::from(v) || w.is_sign_negative() != v.is_sign_negative() {
                return None;
            }
        }
        let Some(&first) = unmatched_nans.first() else {
            return Some(HalfFields {
                half,
                shift,
                nan: None,
                inf,
            });
        };
        // The rule: the codes equal to the first one in their magnitude bits, or in all.
        let all = (self.code_count() - 1) as u8;
        [all >> 1, all].into_iter().find_map(|mask| {
            let covered: Vec<u8> = (0..self.code_count())
                .map(|c| c as u8)
                .filter(|&c| c & mask == first & mask)
                .collect();
            (covered == unmatched_nans).then_some(HalfFields {
                half,
                shift,
                nan: Some((mask, first & mask)),
                inf,
            })
        })
    }

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
