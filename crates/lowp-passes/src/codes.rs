//! The numeric rules of `lowp-formats`, emitted as IR on bit patterns: element decode and
//! encode, scale storage (E8M0, UE4M3, f32) and the block-scale rule. Every function here
//! mirrors one function of `lowp-formats` operation for operation, so the generated code is
//! bit-exact against the oracle (the lit `Run` tests and the JIT tests check it); the one
//! exception, `ue4m3_decode`, reaches the same bits by a shorter route, checked on every
//! byte (`every_scale_byte_decodes_as_lowp_formats`).
//!
//! Codes travel as `i32` holding the code in their low bits; values as `f32`.

use lowp_formats::{Half, HalfFields, ScaleDtype, ScaleRounding, ScaledFormat};
use melior::dialect::arith::{CmpfPredicate, CmpiPredicate};
use melior::ir::{Value, ValueLike};

use crate::ir::{vector_lanes, Emitter};

/// `f32` value of a code, by bit arithmetic (mirrors `lowp_codec::decode_bits`). `code` is
/// an `i32` or a `vector<N x i32>`, decoded lane by lane into `f32` or `vector<N x f32>`.
pub fn decode<'c, 'a>(
    e: &Emitter<'c, 'a>,
    format: ScaledFormat,
    code: Value<'c, '_>,
) -> Value<'c, 'a> {
    let lanes = vector_lanes(code.r#type());
    let shaped = |t| lanes.map_or(t, |n| e.vector_type(n, t));
    let (i32t, f32t) = (shaped(e.int_type(32)), shaped(e.f32_type()));
    let int = |v: u32| match lanes {
        Some(n) => e.int_splat(32, v as i32 as i64, n),
        None => e.i32(v),
    };
    let float = |v: f32| match lanes {
        Some(n) => e.f32_splat(v, n),
        None => e.f32(v),
    };
    let (eb, mb, bias) = format.fields();
    let width = 1 + eb + mb;
    let code = e.andi(code, int((1u32 << width) - 1));
    let sign = e.shli(e.shrui(code, int(eb + mb)), int(31));
    let exp = e.andi(e.shrui(code, int(mb)), int((1 << eb) - 1));
    let mant = e.andi(code, int((1 << mb) - 1));
    // Normal: move the fields into place and rebias the exponent.
    let f32_exp = e.shli(e.addi(exp, int((127 - bias) as u32)), int(23));
    let normal = e.ori(e.ori(sign, f32_exp), e.shli(mant, int(23 - mb)));
    // Subnormal and zero: mant * 2^(1 - bias - m), exact in f32, then the sign.
    let unit = f32::from_bits(decode_unit_bits(1 - bias - mb as i32));
    let sub_abs = e.mulf(e.uitofp(mant, f32t), float(unit));
    let sub = e.ori(e.bitcast(sub_abs, i32t), sign);
    let is_sub = e.cmpi(CmpiPredicate::Eq, exp, int(0));
    let bits = e.select(is_sub, sub, normal);
    let value = e.bitcast(bits, f32t);
    let nan = float(f32::NAN);
    match format {
        ScaledFormat::F8E4M3 => {
            let is_nan = e.cmpi(CmpiPredicate::Eq, e.andi(code, int(0x7F)), int(0x7F));
            e.select(is_nan, nan, value)
        }
        ScaledFormat::F8E5M2 => {
            let special = e.cmpi(CmpiPredicate::Eq, exp, int(0x1F));
            let is_inf = e.cmpi(CmpiPredicate::Eq, mant, int(0));
            let inf = e.bitcast(e.ori(sign, int(0x7F80_0000)), f32t);
            let special_value = e.select(is_inf, inf, nan);
            e.select(special, special_value, value)
        }
        ScaledFormat::F8E4M3Fnuz | ScaledFormat::F8E5M2Fnuz => {
            let is_nan = e.cmpi(CmpiPredicate::Eq, code, int(0x80));
            e.select(is_nan, nan, value)
        }
        _ => value,
    }
}

/// The f16 bit patterns (`vector<N x i16>`) of a `vector<N x i16>` of codes (mirrors
/// `ScaledFormat::f16_pattern`; `fields` must be the format's `f16_fields`): each code's
/// fields moved in place, and an f16 NaN at the NaN codes the move misses. [`widen_f16`]
/// makes them f32 values, `2^-shift` of the codes'.
pub fn f16_patterns<'c, 'a>(
    e: &Emitter<'c, 'a>,
    format: ScaledFormat,
    fields: HalfFields,
    code: Value<'c, '_>,
) -> Value<'c, 'a> {
    let lanes = vector_lanes(code.r#type()).expect("a vector of codes");
    let int = |v: u32| e.int_splat(16, i64::from(v), lanes);
    let (eb, mb, _) = format.fields();
    let magnitude = e.andi(code, int((1 << (eb + mb)) - 1));
    let sign = e.andi(code, int(1 << (eb + mb)));
    let pattern = e.ori(
        e.shli(magnitude, int(10 - mb)),
        e.shli(sign, int(15 - eb - mb)),
    );
    match fields.nan {
        Some((mask, value)) => {
            let masked = e.andi(code, int(u32::from(mask)));
            let is_nan = e.cmpi(CmpiPredicate::Eq, masked, int(u32::from(value)));
            e.select(is_nan, int(0x7E00), pattern)
        }
        None => pattern,
    }
}

/// The `vector<N x f32>` values of `vector<N x i16>` f16 patterns from [`f16_patterns`],
/// widened by `arith.extf` (one instruction where the target converts f16: x86 F16C,
/// AArch64): the codes' values times `2^-shift` of their `f16_fields`, exactly.
pub fn widen_f16<'c, 'a>(e: &Emitter<'c, 'a>, pattern: Value<'c, '_>) -> Value<'c, 'a> {
    let lanes = vector_lanes(pattern.r#type()).expect("a vector of patterns");
    let half = e.vector_bitcast(pattern, lanes, e.f16_type());
    e.extf(half, e.vector_type(lanes, e.f32_type()))
}

/// The f16 bit patterns of two codes at once, for an f16 tensor-core instruction's
/// registers: `pair` (`i32`) holds a code in bits 0..8 and one in bits 16..24 (bits above a
/// code's width ignored); the result holds their patterns in the same halves (mirrors
/// `ScaledFormat::f16_pattern`, with an f16 NaN at the NaN codes the move misses, as
/// [`f16_patterns`]; `fields` must be the format's `f16_fields`). A lone code in the low
/// half gets +0 beside it.
pub fn f16_pattern_pair<'c, 'a>(
    e: &Emitter<'c, 'a>,
    format: ScaledFormat,
    fields: HalfFields,
    pair: Value<'c, '_>,
) -> Value<'c, 'a> {
    let (eb, mb, _) = format.fields();
    let both = |v: u32| v | v << 16;
    // (Within each half: the magnitude ends below bit 15, the sign lands on it.)
    let pattern = moved(
        e,
        pair,
        [both((1 << (eb + mb)) - 1), both(1 << (eb + mb))],
        [10 - mb, 15 - eb - mb],
    );
    nan_halves(e, fields, pair, pattern, 0x7E00)
}

/// A code's fields moved up in `bits` (`i32`): the bits `masks[0]` selects (magnitude)
/// shifted up by `ups[0]`, or those `masks[1]` selects (sign) by `ups[1]`.
fn moved<'c, 'a>(
    e: &Emitter<'c, 'a>,
    bits: Value<'c, '_>,
    masks: [u32; 2],
    ups: [u32; 2],
) -> Value<'c, 'a> {
    e.ori(
        e.shli(e.andi(bits, e.i32(masks[0])), e.i32(ups[0])),
        e.shli(e.andi(bits, e.i32(masks[1])), e.i32(ups[1])),
    )
}

/// The bfloat16 bit patterns of two codes at once (mirrors `ScaledFormat::bf16_pattern`,
/// `fields` the format's `bf16_fields`), in the halves as [`f16_pattern_pair`]: each code's
/// fields moved into an f32 (the value times `2^(bias - 127)`), one exact multiply by
/// `2^(127 - bias - shift)`, and the two f32s' high halves; a bf16 NaN at the NaN codes the
/// move misses.
pub fn bf16_pattern_pair<'c, 'a>(
    e: &Emitter<'c, 'a>,
    format: ScaledFormat,
    fields: HalfFields,
    pair: Value<'c, '_>,
) -> Value<'c, 'a> {
    let (eb, mb, bias) = format.fields();
    let (magnitude, sign) = ((1u32 << (eb + mb)) - 1, 1u32 << (eb + mb));
    // The low code's fields to an f32's (sign to bit 31), the high one's from bit 16 on to
    // the same places.
    let low = moved(e, pair, [magnitude, sign], [23 - mb, 31 - eb - mb]);
    let high = moved(
        e,
        pair,
        [magnitude << 16, sign << 16],
        [7 - mb, 15 - eb - mb],
    );
    let unit = e.f32(2f32.powi(127 - bias - fields.shift));
    let f32t = e.f32_type();
    let [low, high] = [low, high].map(|bits| {
        let value = e.mulf(e.bitcast(bits, f32t), unit);
        e.bitcast(value, e.int_type(32))
    });
    let pattern = e.ori(e.andi(high, e.i32(0xFFFF_0000)), e.shrui(low, e.i32(16)));
    let pattern = top_halves(e, fields, pair, pattern);
    nan_halves(e, fields, pair, pattern, 0x7FC0)
}

/// The bf16 `pattern` with its exponent field (`TOP`) set in each half whose code in `pair`
/// the fields' `inf` rule names: the format's infinities and NaN (f16's move reaches its
/// top exponent itself: `f16_fields` has no rule). The rule's mask is the code's exponent
/// field, all ones at those codes, so adding its lowest bit carries into the bit above
/// exactly there, and that bit times `TOP / bit` is `TOP` (four integer operations for
/// both halves, no compare).
fn top_halves<'c, 'a>(
    e: &Emitter<'c, 'a>,
    fields: HalfFields,
    pair: Value<'c, '_>,
    pattern: Value<'c, 'a>,
) -> Value<'c, 'a> {
    const TOP: u32 = 0x7F80;
    let Some((mask, value)) = fields.inf else {
        return pattern;
    };
    let (mask, low) = (u32::from(mask), u32::from(mask & mask.wrapping_neg()));
    let carry = mask + low;
    assert!(
        mask == u32::from(value) && carry & mask == 0 && TOP.is_multiple_of(carry),
        "an inf rule is an exponent field at all ones"
    );
    let both = |v: u32| v | v << 16;
    let at_top = e.andi(
        e.addi(e.andi(pair, e.i32(both(mask))), e.i32(both(low))),
        e.i32(both(carry)),
    );
    e.ori(pattern, e.muli(at_top, e.i32(TOP / carry)))
}

/// `pattern` with the `nan` half pattern in each half whose code in `pair` the fields' NaN
/// rule names.
fn nan_halves<'c, 'a>(
    e: &Emitter<'c, 'a>,
    fields: HalfFields,
    pair: Value<'c, '_>,
    pattern: Value<'c, 'a>,
    nan: u32,
) -> Value<'c, 'a> {
    let Some((mask, value)) = fields.nan else {
        return pattern;
    };
    let (mask, value) = (u32::from(mask), u32::from(value));
    let low = e.cmpi(CmpiPredicate::Eq, e.andi(pair, e.i32(mask)), e.i32(value));
    let high = e.cmpi(
        CmpiPredicate::Eq,
        e.andi(pair, e.i32(mask << 16)),
        e.i32(value << 16),
    );
    let pattern = e.select(
        low,
        e.ori(e.andi(pattern, e.i32(0xFFFF_0000)), e.i32(nan)),
        pattern,
    );
    e.select(
        high,
        e.ori(e.andi(pattern, e.i32(0xFFFF)), e.i32(nan << 16)),
        pattern,
    )
}

/// The half patterns of two codes (`pair` as [`f16_pattern_pair`]), of the 16-bit float
/// `fields` name.
pub fn half_pattern_pair<'c, 'a>(
    e: &Emitter<'c, 'a>,
    format: ScaledFormat,
    fields: HalfFields,
    pair: Value<'c, '_>,
) -> Value<'c, 'a> {
    match fields.half {
        Half::F16 => f16_pattern_pair(e, format, fields, pair),
        Half::Bf16 => bf16_pattern_pair(e, format, fields, pair),
    }
}

/// [`half_pattern_pair`] of two adjacent stored codes in the low bits of `two` (`i32`):
/// bytes 0 and 1, or packed, the low byte's two nibbles (the first in the low one),
/// spread to the halves first (higher bits ignored).
pub fn half_pattern_adjacent<'c, 'a>(
    e: &Emitter<'c, 'a>,
    format: ScaledFormat,
    fields: HalfFields,
    two: Value<'c, '_>,
    packed: bool,
) -> Value<'c, 'a> {
    let (low, high, up) = if packed {
        (0xF, 0xF0, 12)
    } else {
        (0xFF, 0xFF00, 8)
    };
    let pair = e.ori(
        e.andi(two, e.i32(low)),
        e.shli(e.andi(two, e.i32(high)), e.i32(up)),
    );
    half_pattern_pair(e, format, fields, pair)
}

/// The `f32` value of the IEEE f16 bit pattern in the low 16 bits of an `i32` (higher bits
/// ignored), by integer arithmetic (no f16 type: the same on every host). As
/// [`ue4m3_decode`]: the 15 magnitude bits moved to an f32's bits 13..28 are the value times
/// 2^-112, subnormals included, so one exact multiply rebiases them; exponent 31 is
/// infinity or NaN.
pub fn f16_value<'c, 'a>(e: &Emitter<'c, 'a>, pattern: Value<'c, '_>) -> Value<'c, 'a> {
    let f32t = e.f32_type();
    let magnitude = e.andi(pattern, e.i32(0x7FFF));
    let moved = e.bitcast(e.shli(magnitude, e.i32(13)), f32t);
    let value = e.mulf(moved, e.f32(2f32.powi(112)));
    let special = e.cmpi(CmpiPredicate::Uge, magnitude, e.i32(0x7C00));
    let is_nan = e.cmpi(CmpiPredicate::Ugt, magnitude, e.i32(0x7C00));
    let special_value = e.select(is_nan, e.f32(f32::NAN), e.f32(f32::INFINITY));
    let value = e.select(special, special_value, value);
    let sign = e.shli(e.andi(pattern, e.i32(0x8000)), e.i32(16));
    e.bitcast(e.ori(e.bitcast(value, e.int_type(32)), sign), f32t)
}

/// The `f32` value of the bfloat16 bit pattern in the low 16 bits of an `i32` (higher bits
/// ignored): the high half of an f32.
pub fn bf16_value<'c, 'a>(e: &Emitter<'c, 'a>, pattern: Value<'c, '_>) -> Value<'c, 'a> {
    e.bitcast(e.shli(pattern, e.i32(16)), e.f32_type())
}

/// The `f32` value of a half pattern (low 16 bits of an `i32`) of the 16-bit float `half`.
pub fn half_value<'c, 'a>(
    e: &Emitter<'c, 'a>,
    half: Half,
    pattern: Value<'c, '_>,
) -> Value<'c, 'a> {
    match half {
        Half::F16 => f16_value(e, pattern),
        Half::Bf16 => bf16_value(e, pattern),
    }
}

/// Bits of `2^k` for `-149 <= k <= 127` (an f32 subnormal below -126).
const fn decode_unit_bits(k: i32) -> u32 {
    if k >= -126 {
        ((k + 127) as u32) << 23
    } else {
        1 << (k + 149)
    }
}

/// The code of an `f32`: nearest, ties to the even code, saturating, NaN -> 0, no FNUZ
/// negative zero (mirrors `lowp_codec::EncodeParams::encode`). Returns an `i32`.
pub fn encode<'c, 'a>(
    e: &Emitter<'c, 'a>,
    format: ScaledFormat,
    x: Value<'c, '_>,
) -> Value<'c, 'a> {
    let (eb, m, bias) = format.fields();
    let i32t = e.int_type(32);
    let f32t = e.f32_type();
    let shift = 23 - m;
    let parity_flip = if m == 0 { ((127 - bias) & 1) as u32 } else { 0 };
    let rebias = ((127 - bias) as u32) << m;
    let emin = 1 - bias;
    let min_normal_bits = ((emin + 127) as u32) << 23;
    let magic = f32::from_bits(((emin - m as i32 + 23 + 127) as u32) << 23);

    let bits = e.bitcast(x, i32t);
    let abs = e.andi(bits, e.i32(0x7FFF_FFFF));
    let kept = e.shrui(abs, e.i32(shift));
    let lsb = e.andi(e.xori(kept, e.i32(parity_flip)), e.i32(1));
    let rounded = e.addi(e.addi(abs, e.i32((1 << (shift - 1)) - 1)), lsb);
    let mag_normal = e.subi(e.shrui(rounded, e.i32(shift)), e.i32(rebias));
    let abs_f = e.bitcast(abs, f32t);
    let sum = e.addf(abs_f, e.f32(magic));
    let mag_sub = e.subi(e.bitcast(sum, i32t), e.i32(magic.to_bits()));
    let is_sub = e.cmpi(CmpiPredicate::Ult, abs, e.i32(min_normal_bits));
    let mag = e.select(is_sub, mag_sub, mag_normal);
    let mag = e.minui(mag, e.i32(format.max_finite_code() as u32));
    let is_nan = e.cmpi(CmpiPredicate::Ugt, abs, e.i32(0x7F80_0000));
    let zero = e.i32(0);
    let mag = e.select(is_nan, zero, mag);
    // Sign: dropped for NaN, and for a zero magnitude in FNUZ formats.
    let sign = e.shrui(bits, e.i32(31));
    let sign = e.select(is_nan, zero, sign);
    let sign = if format.is_fnuz() {
        let nonzero = e.cmpi(CmpiPredicate::Ne, mag, zero);
        e.select(nonzero, sign, zero)
    } else {
        sign
    };
    e.ori(mag, e.shli(sign, e.i32(eb + m)))
}

/// `floor(log2 x)` of a positive finite `f32` (subnormals included), as `i32`.
fn floor_log2<'c, 'a>(e: &Emitter<'c, 'a>, x: Value<'c, '_>) -> Value<'c, 'a> {
    let i32t = e.int_type(32);
    let bits = e.bitcast(x, i32t);
    let exp = e.shrui(bits, e.i32(23));
    // A subnormal times 2^64 is normal: take its exponent and undo the 64.
    let scaled = e.bitcast(e.mulf(x, e.f32(2f32.powi(64))), i32t);
    let exp_scaled = e.subi(e.shrui(scaled, e.i32(23)), e.i32(64));
    let is_sub = e.cmpi(CmpiPredicate::Eq, exp, e.i32(0));
    let biased = e.select(is_sub, exp_scaled, exp);
    e.subi(biased, e.i32(127))
}

/// The E8M0 code of a non-negative `f32` or NaN: round up to a power of two, saturate, NaN
/// -> 0xFF, values at or below 2^-127 -> 0x00 (mirrors `E8M0::from_f32`). Returns `i32`.
pub fn e8m0_encode<'c, 'a>(e: &Emitter<'c, 'a>, x: Value<'c, '_>) -> Value<'c, 'a> {
    let i32t = e.int_type(32);
    let direct = ceil_log2_biased(e, x);
    let scaled = e.subi(
        ceil_log2_biased(e, e.mulf(x, e.f32(2f32.powi(64)))),
        e.i32(64),
    );
    let bits = e.bitcast(x, i32t);
    let is_sub = e.cmpi(CmpiPredicate::Eq, e.shrui(bits, e.i32(23)), e.i32(0));
    let code = e.select(is_sub, scaled, direct);
    let code = e.minsi(e.maxsi(code, e.i32(0)), e.i32(0xFE));
    let is_nan = e.cmpf(CmpfPredicate::Uno, x, x);
    e.select(is_nan, e.i32(0xFF), code)
}

/// `ceil(log2 v) + 127` of a positive normal `f32` (its exponent field, plus one when any
/// mantissa bit is set).
fn ceil_log2_biased<'c, 'a>(e: &Emitter<'c, 'a>, v: Value<'c, '_>) -> Value<'c, 'a> {
    let i32t = e.int_type(32);
    let bits = e.bitcast(v, i32t);
    let exp = e.shrui(bits, e.i32(23));
    let frac = e.andi(bits, e.i32(0x7F_FFFF));
    let inexact = e.extui(e.cmpi(CmpiPredicate::Ne, frac, e.i32(0)), i32t);
    e.addi(exp, inexact)
}

/// The value of an E8M0 code (`i32`): `2^(code - 127)`, NaN for 0xFF. The code is the f32
/// exponent field, and both codes that field alone gets wrong (0: zero, not the subnormal
/// 2^-127; 0xFF: infinity, not NaN) want fraction bit 22 set: one compare and select
/// instead of two each (a wgmma promotion decodes 34 scales: ptxas 136 ISETP + 136 SEL a
/// stage of E3M4 MX became 68 ISETP).
pub fn e8m0_decode<'c, 'a>(e: &Emitter<'c, 'a>, code: Value<'c, '_>) -> Value<'c, 'a> {
    e8m0_decode_lanes(e, code, None)
}

/// [`e8m0_decode`] of a scalar `i32` code (`lanes` none) or of a `vector<lanes x i32>` of
/// them, lane by lane.
pub fn e8m0_decode_lanes<'c, 'a>(
    e: &Emitter<'c, 'a>,
    code: Value<'c, '_>,
    lanes: Option<u64>,
) -> Value<'c, 'a> {
    let c = |v: u32| int_like(e, v, lanes);
    let code = e.andi(code, c(0xFF));
    let bits = e.shli(code, c(23));
    // code - 1 wraps for 0: 0 and 255 are the codes at or above 254.
    let special = e.cmpi(CmpiPredicate::Uge, e.subi(code, c(1)), c(254));
    let bits = e.select(special, e.ori(bits, c(0x0040_0000)), bits);
    e.bitcast(bits, f32_like(e, lanes))
}

/// An `i32` constant (`lanes` none) or a `vector<lanes x i32>` splat of it.
fn int_like<'c, 'a>(e: &Emitter<'c, 'a>, v: u32, lanes: Option<u64>) -> Value<'c, 'a> {
    match lanes {
        Some(n) => e.int_splat(32, i64::from(v as i32), n),
        None => e.i32(v),
    }
}

/// `f32`, or `vector<lanes x f32>`.
fn f32_like<'c>(e: &Emitter<'c, '_>, lanes: Option<u64>) -> melior::ir::Type<'c> {
    match lanes {
        Some(n) => e.vector_type(n, e.f32_type()),
        None => e.f32_type(),
    }
}

/// The value of a UE4M3 scale byte (`i32`): E4M3 of the low 7 bits (`ScaleDtype::decode_byte`).
/// Not field by field as `decode`: the 7 bits moved to an f32's bits 26-20 (exponent field
/// in its low 4 exponent bits, mantissa on top of its fraction) read as an f32 are the value
/// times 2^-120, subnormal codes included (an f32 subnormal: m x 2^-129 for m x 2^-9), so one
/// exact multiply by 2^120 rebiases every code; 0x7F is NaN. 6 operations instead of about
/// 17: NVFP4's promotions decode 34 scales per 16-block and thread.
pub fn ue4m3_decode<'c, 'a>(e: &Emitter<'c, 'a>, code: Value<'c, '_>) -> Value<'c, 'a> {
    ue4m3_decode_lanes(e, code, None)
}

/// [`ue4m3_decode`] of a scalar `i32` code (`lanes` none) or of a `vector<lanes x i32>` of
/// them, lane by lane.
pub fn ue4m3_decode_lanes<'c, 'a>(
    e: &Emitter<'c, 'a>,
    code: Value<'c, '_>,
    lanes: Option<u64>,
) -> Value<'c, 'a> {
    let c = |v: u32| int_like(e, v, lanes);
    let f = |v: f32| match lanes {
        Some(n) => e.f32_splat(v, n),
        None => e.f32(v),
    };
    let code = e.andi(code, c(0x7F));
    let moved = e.bitcast(e.shli(code, c(20)), f32_like(e, lanes));
    let value = e.mulf(moved, f(2f32.powi(120)));
    let is_nan = e.cmpi(CmpiPredicate::Eq, code, c(0x7F));
    e.select(is_nan, f(f32::NAN), value)
}

/// The UE4M3 byte of a scale value on the UE4M3 grid, or NaN (-> 0x7F).
pub fn ue4m3_encode<'c, 'a>(e: &Emitter<'c, 'a>, v: Value<'c, '_>) -> Value<'c, 'a> {
    let code = e.andi(encode(e, ScaledFormat::F8E4M3, v), e.i32(0x7F));
    let is_nan = e.cmpf(CmpfPredicate::Uno, v, v);
    e.select(is_nan, e.i32(0x7F), code)
}

/// `ScaleDtype::round_up` of a non-negative `f32` or NaN.
pub fn round_up<'c, 'a>(e: &Emitter<'c, 'a>, dtype: ScaleDtype, x: Value<'c, 'a>) -> Value<'c, 'a> {
    match dtype {
        ScaleDtype::F32 => x,
        ScaleDtype::UE8M0 => {
            let code = e8m0_encode(e, x);
            e8m0_decode(e, code)
        }
        ScaleDtype::F16 | ScaleDtype::BF16 | ScaleDtype::UE4M3 => {
            let grid = dtype.f32_grid();
            let i32t = e.int_type(32);
            let mask = (1u32 << grid.dropped_bits) - 1;
            let bits = e.bitcast(x, i32t);
            let low = e.andi(bits, e.i32(mask));
            let on_grid = e.cmpi(CmpiPredicate::Eq, low, e.i32(0));
            let stepped = e.addi(e.ori(bits, e.i32(mask)), e.i32(1));
            let v = e.bitcast(e.select(on_grid, bits, stepped), e.f32_type());
            let v = match grid.min_normal {
                Some(min_normal) => {
                    let step = grid.subnormal_step;
                    let units = e.unary("math.ceil", e.divf(x, e.f32(step)));
                    let sub = e.mulf(units, e.f32(step));
                    let is_sub = e.cmpf(CmpfPredicate::Olt, x, e.f32(min_normal));
                    e.select(is_sub, sub, v)
                }
                None => v,
            };
            let max = e.f32(grid.max);
            let over = e.cmpf(CmpfPredicate::Oge, x, max);
            let v = e.select(over, max, v);
            let is_nan = e.cmpf(CmpfPredicate::Uno, x, x);
            e.select(is_nan, x, v)
        }
    }
}

/// `2^k` as an `f32` for an `i32` k: 0 below 2^-149, +inf above 2^127 (as
/// `2f64.powi(k) as f32`).
fn pow2<'c, 'a>(e: &Emitter<'c, 'a>, k: Value<'c, 'a>) -> Value<'c, 'a> {
    let normal = e.shli(e.addi(k, e.i32(127)), e.i32(23));
    // Clamped so that the unselected arm never shifts by 32 or more (poison).
    let sub_shift = e.minsi(e.maxsi(e.addi(k, e.i32(149)), e.i32(0)), e.i32(31));
    let sub = e.shli(e.i32(1), sub_shift);
    let is_normal = e.cmpi(CmpiPredicate::Sge, k, e.i32(-126i32 as u32));
    let bits = e.select(is_normal, normal, sub);
    let underflow = e.cmpi(CmpiPredicate::Slt, k, e.i32(-149i32 as u32));
    let bits = e.select(underflow, e.i32(0), bits);
    let overflow = e.cmpi(CmpiPredicate::Sgt, k, e.i32(127));
    let bits = e.select(overflow, e.i32(0x7F80_0000), bits);
    e.bitcast(bits, e.f32_type())
}

/// `quant::block_scale`: the stored scale of a block with absolute maximum `amax` (NaN for
/// a block holding NaN or inf), as an `f32` on the dtype's grid (or NaN).
pub fn block_scale<'c, 'a>(
    e: &Emitter<'c, 'a>,
    amax: Value<'c, 'a>,
    format: ScaledFormat,
    dtype: ScaleDtype,
    rounding: ScaleRounding,
) -> Value<'c, 'a> {
    let scale = match rounding {
        ScaleRounding::RoundUp => {
            let ratio = e.divf(amax, e.f32(format.max_finite()));
            round_up(e, dtype, ratio)
        }
        ScaleRounding::OcpMx => {
            let k = e.subi(floor_log2(e, amax), e.i32(format.emax() as u32));
            match dtype {
                ScaleDtype::F32 => pow2(e, k),
                ScaleDtype::UE8M0 => {
                    let code = e.addi(
                        e.minsi(e.maxsi(k, e.i32(-127i32 as u32)), e.i32(127)),
                        e.i32(127),
                    );
                    e8m0_decode(e, code)
                }
                _ => {
                    let p = pow2(e, k);
                    let floor = e.f32(dtype.min_positive());
                    let less = e.cmpf(CmpfPredicate::Olt, p, floor);
                    let p = e.select(less, floor, p);
                    round_up(e, dtype, p)
                }
            }
        }
    };
    let is_zero = e.cmpf(CmpfPredicate::Oeq, amax, e.f32(0.0));
    let scale = e.select(is_zero, e.f32(1.0), scale);
    let is_nan = e.cmpf(CmpfPredicate::Uno, amax, amax);
    e.select(is_nan, e.f32(f32::NAN), scale)
}
