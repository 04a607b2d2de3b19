//! The AMD matrix instructions of `lowp-to-rocdl`, for the shared matrix kernel
//! (`matrix_kernel.rs`), 2 x 2 instructions of 16 x 16 per wave of 64 lanes (a 32 x 32
//! tile):
//! - [`Mfma16::Fp8`]: `rocdl.mfma.f32.16x16x32.{fp8,bf8}.{fp8,bf8}` (`v_mfma_f32_16x16x32_*`).
//!   Its FP8 types are the chip's: FNUZ E4M3 / E5M2 on gfx942 (MI300), OCP on gfx950.
//!   Operands of another format embed (code tables, `ScaledFormat::shifted_embedding`); OCP
//!   E4M3 reaches gfx942's E4M3 FNUZ shifted by one binade (same bits, bias 8 instead of 7),
//!   undone on the result and reported as a remark.
//! - [`Mfma16::F16`]: `rocdl.mfma.f32.16x16x16f16` (`v_mfma_f32_16x16x16_f16`), for the
//!   formats no FP8 type of the chip holds but whose fields f16's do (E3M4, E2M5, OCP E5M2
//!   on gfx942, 7-bit customs): each code's fields moved into an f16 pattern, its value
//!   times `2^-shift`, undone in the epilogue (as `lowp-to-nvvm`'s f16 mma.sync). With bf16
//!   (`rocdl.mfma.f32.16x16x16bf16.1k`, `v_mfma_f32_16x16x16_bf16`, same layout) for the
//!   formats whose exponent field f16's does not hold (6- and 7-bit exponents; OCP E5M2 is
//!   gfx942's only as f16): the bf16 patterns of `ScaledFormat::bf16_fields`.
//! - [`Mfma16::Scaled`] (gfx950): `rocdl.mfma.scale.f32.16x16x128.f8f6f4`
//!   (`v_mfma_scale_f32_16x16x128_f8f6f4`) for MX operands (E8M0 scales per 32 of K): FP8
//!   codes as they are (types 0 / 1), FP4 E2M1 as packed nibbles (type 4), formats that embed
//!   in E4M3 / E5M2 through the code tables; each lane gives the scale of the 32 codes it
//!   holds.
//!
//! Register layout (CDNA3 / CDNA4 ISA, the 16 x 16 MFMA family), with `r16 = lane % 16`,
//! `q = lane / 16`: an A register holds row `r16`, a run of K: `8q + 4r + 0..4` for
//! 16x16x32 (two registers, an i64 operand), `4q + 2r + 0..2` for 16x16x16 f16 (two
//! registers, 4 halves), `32q + (32 / bits) r + ..` for 16x16x128 (8
//! registers of FP8 or 4 of FP4); B likewise with column `r16`; accumulator i holds row
//! `4q + i`, column `r16`.

use lowp_formats::{Half, ScaledFormat};
use melior::ir::operation::OperationBuilder;
use melior::ir::Value;

use crate::ir::Emitter;
use crate::matrix_kernel::{Instr, RegisterInstr, Shape};

/// A 16 x 16 MFMA of wave64.
pub(super) enum Mfma16 {
    /// `v_mfma_f32_16x16x32_{fp8,bf8}_{fp8,bf8}`: A and B as FP8 ("fp8": the chip's E4M3
    /// flavour, "bf8": its E5M2 flavour), 8 codes of K per lane.
    Fp8 { a_bf8: bool, b_bf8: bool },
    /// `v_mfma_scale_f32_16x16x128_f8f6f4` with the operands' type codes (0 E4M3, 1 E5M2,
    /// 4 E2M1), 32 codes of K per lane and the lane's E8M0 scales.
    Scaled { a_type: u32, b_type: u32 },
    /// `v_mfma_f32_16x16x16_{f16,bf16}` on the f16 (bf16) patterns of the stored codes
    /// (formats no FP8 type of the chip holds, whose fields f16's, or bf16's, do), 4 codes
    /// of K per lane.
    F16(Half),
}

/// The f8f6f4 type code of the formats the scaled instruction is fed here: E4M3 (0), E5M2
/// (1), E2M1 (4). (FP6, types 2 and 3, packs 16 codes in 3 registers; FP6 operands reach
/// the instruction embedded in E4M3 instead.)
pub(super) fn f8f6f4_code(f: ScaledFormat) -> Option<u32> {
    match f {
        ScaledFormat::F8E4M3 => Some(0),
        ScaledFormat::F8E5M2 => Some(1),
        ScaledFormat::F4E2M1 => Some(4),
        _ => None,
    }
}

impl Mfma16 {
    /// Bits per code of A and B in the registers.
    fn bits(&self) -> (u32, u32) {
        let of = |code| if code == 4 { 4 } else { 8 };
        match *self {
            Mfma16::Fp8 { .. } => (8, 8),
            Mfma16::Scaled { a_type, b_type } => (of(a_type), of(b_type)),
            Mfma16::F16(_) => (16, 16),
        }
    }

    /// Codes of K each lane holds per row (column).
    fn per_lane(&self) -> i64 {
        match self {
            Mfma16::Fp8 { .. } => 8,
            Mfma16::Scaled { .. } => 32,
            Mfma16::F16(_) => 4,
        }
    }
}

/// Accumulator i of a 16 x 16 MFMA: row `4 * (lane / 16) + i`, column `lane % 16`.
/// Register `r` of a lane holding `per_lane` K codes at `32 / bits` per register: (row or
/// column `lane % 16`, first K `per_lane * (lane / 16) + r * 32 / bits`).
fn reg16<'c, 'a>(
    e: &Emitter<'c, 'a>,
    lane: Value<'c, 'a>,
    r: usize,
    per_lane: i64,
    bits: u32,
) -> (Value<'c, 'a>, Value<'c, 'a>) {
    let (r16, q) = (e.remui(lane, e.index(16)), e.divui(lane, e.index(16)));
    let per_reg = 32 / bits as i64;
    (
        r16,
        e.addi(e.muli(q, e.index(per_lane)), e.index(per_reg * r as i64)),
    )
}

/// The inverse of [`reg16`]: (lane, register) holding (row or column, k).
fn owner16<'c, 'a>(
    e: &Emitter<'c, 'a>,
    rc: Value<'c, 'a>,
    k: Value<'c, 'a>,
    per_lane: i64,
    bits: u32,
) -> (Value<'c, 'a>, Value<'c, 'a>) {
    let pl = e.index(per_lane);
    let lane = e.addi(rc, e.muli(e.divui(k, pl), e.index(16)));
    (lane, e.divui(e.remui(k, pl), e.index(32 / bits as i64)))
}

impl Instr for Mfma16 {
    fn shape(&self) -> Shape {
        let (a_bits, b_bits) = self.bits();
        let words = |bits: u32| (self.per_lane() * bits as i64 / 32) as usize;
        Shape {
            lanes: 64,
            m: 16,
            n: 16,
            k: 4 * self.per_lane(),
            a_words: words(a_bits),
            b_words: words(b_bits),
            a_bits,
            b_bits,
            acc: 4,
            tiles: (2, 2),
        }
    }

    fn a_reg<'c, 'a>(
        &self,
        e: &Emitter<'c, 'a>,
        lane: Value<'c, 'a>,
        r: usize,
    ) -> (Value<'c, 'a>, Value<'c, 'a>) {
        reg16(e, lane, r, self.per_lane(), self.bits().0)
    }

    fn b_reg<'c, 'a>(
        &self,
        e: &Emitter<'c, 'a>,
        lane: Value<'c, 'a>,
        r: usize,
    ) -> (Value<'c, 'a>, Value<'c, 'a>) {
        reg16(e, lane, r, self.per_lane(), self.bits().1)
    }

    fn acc<'c, 'a>(
        &self,
        e: &Emitter<'c, 'a>,
        lane: Value<'c, 'a>,
        i: usize,
    ) -> (Value<'c, 'a>, Value<'c, 'a>) {
        let (r16, q) = (e.remui(lane, e.index(16)), e.divui(lane, e.index(16)));
        (e.addi(e.muli(q, e.index(4)), e.index(i as i64)), r16)
    }
}

impl RegisterInstr for Mfma16 {
    fn a_owner<'c, 'a>(
        &self,
        e: &Emitter<'c, 'a>,
        row: Value<'c, 'a>,
        k: Value<'c, 'a>,
    ) -> (Value<'c, 'a>, Value<'c, 'a>) {
        owner16(e, row, k, self.per_lane(), self.bits().0)
    }

    fn b_owner<'c, 'a>(
        &self,
        e: &Emitter<'c, 'a>,
        col: Value<'c, 'a>,
        k: Value<'c, 'a>,
    ) -> (Value<'c, 'a>, Value<'c, 'a>) {
        owner16(e, col, k, self.per_lane(), self.bits().1)
    }

    fn emit<'c, 'a>(
        &self,
        e: &Emitter<'c, 'a>,
        a: &[Value<'c, 'a>],
        b: &[Value<'c, 'a>],
        c: &[Value<'c, 'a>],
        scales: Option<[Value<'c, 'a>; 2]>,
    ) -> Vec<Value<'c, 'a>> {
        let zero = e.i32(0);
        let (name, operands) = match *self {
            Mfma16::Fp8 { a_bf8, b_bf8 } => {
                // Two registers as one i64, the first in the low half.
                let i64t = e.int_type(64);
                let pair = |w: &[Value<'c, 'a>]| {
                    e.ori(
                        e.extui(w[0], i64t),
                        e.shli(e.extui(w[1], i64t), e.int(64, 32)),
                    )
                };
                let flavour = |bf8: bool| if bf8 { "bf8" } else { "fp8" };
                // cbsz, abid, blgp: no broadcast between blocks.
                (
                    format!(
                        "rocdl.mfma.f32.16x16x32.{}.{}",
                        flavour(a_bf8),
                        flavour(b_bf8)
                    ),
                    vec![pair(a), pair(b), e.from_elements(c), zero, zero, zero],
                )
            }
            Mfma16::Scaled { a_type, b_type } => {
                let [sa, sb] = scales.expect("the scaled MFMA takes the lane's scales");
                // A and B registers (the intrinsic is overloaded on their count), C, the type
                // codes of A (cbsz) and B (blgp), then per operand the byte of the scale
                // register to use (opsel) and the scale register.
                (
                    "rocdl.mfma.scale.f32.16x16x128.f8f6f4".to_string(),
                    vec![
                        e.from_elements(a),
                        e.from_elements(b),
                        e.from_elements(c),
                        e.i32(a_type),
                        e.i32(b_type),
                        zero,
                        sa,
                        zero,
                        sb,
                    ],
                )
            }
            Mfma16::F16(half) => {
                // Two registers as the instruction's 4 halves, the first in the low half
                // (bf16 ones as the intrinsic's i16).
                let (name, ty) = match half {
                    Half::F16 => ("rocdl.mfma.f32.16x16x16f16", e.f16_type()),
                    Half::Bf16 => ("rocdl.mfma.f32.16x16x16bf16.1k", e.int_type(16)),
                };
                let halves =
                    |w: &[Value<'c, 'a>]| e.llvm_bitcast(e.from_elements(w), e.vector_type(4, ty));
                (
                    name.to_string(),
                    vec![halves(a), halves(b), e.from_elements(c), zero, zero, zero],
                )
            }
        };
        let f32t = e.f32_type();
        let d = e.val(
            OperationBuilder::new(&name, e.loc())
                .add_operands(&operands)
                .add_results(&[e.vector_type(4, f32t)])
                .build()
                .expect("valid MFMA"),
        );
        (0..4).map(|i| e.extract(d, i, f32t)).collect()
    }
}
