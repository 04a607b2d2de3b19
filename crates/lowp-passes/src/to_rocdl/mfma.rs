//! The AMD matrix instructions of `lowp-to-rocdl`, for the shared matrix kernel
//! ([`crate::matrix_kernel`]), 2 x 2 instructions of 16 x 16 per wave of 64 lanes (a 32 x 32
//! tile):
//! - [`Mfma16x16x32`]: `rocdl.mfma.f32.16x16x32.{fp8,bf8}.{fp8,bf8}` (`v_mfma_f32_16x16x32_*`).
//!   Its FP8 types are the chip's: FNUZ E4M3 / E5M2 on gfx942 (MI300), OCP on gfx950.
//!   Operands of another format embed (code tables, `ScaledFormat::shifted_embedding`); OCP
//!   E4M3 reaches gfx942's E4M3 FNUZ shifted by one binade (same bits, bias 8 instead of 7),
//!   undone on the result and reported as a remark.
//! - [`ScaledMfma16x16x128`] (gfx950): `rocdl.mfma.scale.f32.16x16x128.f8f6f4`
//!   (`v_mfma_scale_f32_16x16x128_f8f6f4`) for MX operands (E8M0 scales per 32 of K): FP8
//!   codes as they are (types 0 / 1), FP4 E2M1 as packed nibbles (type 4), formats that embed
//!   in E4M3 / E5M2 through the code tables; each lane gives the scale of the 32 codes it
//!   holds.
//!
//! Register layout (CDNA3 / CDNA4 ISA, the 16 x 16 MFMA family), with `r16 = lane % 16`,
//! `q = lane / 16`: an A register holds row `r16`, a run of K: `8q + 4r + 0..4` for
//! 16x16x32 (two registers, an i64 operand), `32q + (32 / bits) r + ..` for 16x16x128 (8
//! registers of FP8 or 4 of FP4); B likewise with column `r16`; accumulator i holds row
//! `4q + i`, column `r16`.

use lowp_formats::ScaledFormat;
use melior::ir::operation::OperationBuilder;
use melior::ir::Value;

use crate::ir::Emitter;
use crate::matrix_kernel::{Instr, RegisterInstr, Shape};

/// `v_mfma_f32_16x16x32_{fp8,bf8}_{fp8,bf8}`: A and B as FP8 ("fp8": E4M3 flavour, "bf8":
/// E5M2 flavour of the chip).
pub(super) struct Mfma16x16x32 {
    pub(super) a_bf8: bool,
    pub(super) b_bf8: bool,
}

/// `v_mfma_scale_f32_16x16x128_f8f6f4` with the operands' type codes (0 E4M3, 1 E5M2,
/// 4 E2M1).
pub(super) struct ScaledMfma16x16x128 {
    pub(super) a_type: u32,
    pub(super) b_type: u32,
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

fn bits_of(code: u32) -> u32 {
    if code == 4 {
        4
    } else {
        8
    }
}

/// `(lane % 16, lane / 16)`.
fn split<'c, 'a>(e: &Emitter<'c, 'a>, lane: Value<'c, 'a>) -> (Value<'c, 'a>, Value<'c, 'a>) {
    (e.remui(lane, e.index(16)), e.divui(lane, e.index(16)))
}

/// Accumulator i of a 16 x 16 MFMA: row `4 * (lane / 16) + i`, column `lane % 16`.
fn acc16<'c, 'a>(
    e: &Emitter<'c, 'a>,
    lane: Value<'c, 'a>,
    i: usize,
) -> (Value<'c, 'a>, Value<'c, 'a>) {
    let (r16, q) = split(e, lane);
    (e.addi(e.muli(q, e.index(4)), e.index(i as i64)), r16)
}

/// Register `r` of a lane holding `per_lane` K codes at `per_reg` per register: (row or
/// column, first K).
fn reg16<'c, 'a>(
    e: &Emitter<'c, 'a>,
    lane: Value<'c, 'a>,
    r: usize,
    per_lane: i64,
    per_reg: i64,
) -> (Value<'c, 'a>, Value<'c, 'a>) {
    let (r16, q) = split(e, lane);
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
    per_reg: i64,
) -> (Value<'c, 'a>, Value<'c, 'a>) {
    let pl = e.index(per_lane);
    let lane = e.addi(rc, e.muli(e.divui(k, pl), e.index(16)));
    (lane, e.divui(e.remui(k, pl), e.index(per_reg)))
}

/// `rocdl.<name>(operands) : (...) -> vector<4xf32>` and its four elements.
fn mfma<'c, 'a>(e: &Emitter<'c, 'a>, name: &str, operands: &[Value<'c, 'a>]) -> Vec<Value<'c, 'a>> {
    let f32t = e.f32_type();
    let d = e.val(
        OperationBuilder::new(name, e.loc())
            .add_operands(operands)
            .add_results(&[e.vector_type(4, f32t)])
            .build()
            .expect("valid MFMA"),
    );
    (0..4).map(|i| e.extract(d, i, f32t)).collect()
}

impl Instr for Mfma16x16x32 {
    fn shape(&self) -> Shape {
        Shape {
            lanes: 64,
            m: 16,
            n: 16,
            k: 32,
            a_words: 2,
            b_words: 2,
            a_bits: 8,
            b_bits: 8,
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
        reg16(e, lane, r, 8, 4)
    }

    fn b_reg<'c, 'a>(
        &self,
        e: &Emitter<'c, 'a>,
        lane: Value<'c, 'a>,
        r: usize,
    ) -> (Value<'c, 'a>, Value<'c, 'a>) {
        reg16(e, lane, r, 8, 4)
    }

    fn acc<'c, 'a>(
        &self,
        e: &Emitter<'c, 'a>,
        lane: Value<'c, 'a>,
        i: usize,
    ) -> (Value<'c, 'a>, Value<'c, 'a>) {
        acc16(e, lane, i)
    }
}

impl RegisterInstr for Mfma16x16x32 {
    fn a_owner<'c, 'a>(
        &self,
        e: &Emitter<'c, 'a>,
        row: Value<'c, 'a>,
        k: Value<'c, 'a>,
    ) -> (Value<'c, 'a>, Value<'c, 'a>) {
        owner16(e, row, k, 8, 4)
    }

    fn b_owner<'c, 'a>(
        &self,
        e: &Emitter<'c, 'a>,
        col: Value<'c, 'a>,
        k: Value<'c, 'a>,
    ) -> (Value<'c, 'a>, Value<'c, 'a>) {
        owner16(e, col, k, 8, 4)
    }

    fn emit<'c, 'a>(
        &self,
        e: &Emitter<'c, 'a>,
        a: &[Value<'c, 'a>],
        b: &[Value<'c, 'a>],
        c: &[Value<'c, 'a>],
        _scales: Option<[Value<'c, 'a>; 2]>,
    ) -> Vec<Value<'c, 'a>> {
        // Two registers as one i64, the first in the low half.
        let i64t = e.int_type(64);
        let pair = |w: &[Value<'c, 'a>]| {
            e.ori(
                e.extui(w[0], i64t),
                e.shli(e.extui(w[1], i64t), e.int(64, 32)),
            )
        };
        let flavour = |bf8: bool| if bf8 { "bf8" } else { "fp8" };
        let name = format!(
            "rocdl.mfma.f32.16x16x32.{}.{}",
            flavour(self.a_bf8),
            flavour(self.b_bf8)
        );
        let zero = e.i32(0);
        // cbsz, abid, blgp: no broadcast between blocks.
        mfma(
            e,
            &name,
            &[pair(a), pair(b), e.from_elements(c), zero, zero, zero],
        )
    }
}

impl ScaledMfma16x16x128 {
    fn per_reg(code: u32) -> i64 {
        32 / bits_of(code) as i64
    }
}

impl Instr for ScaledMfma16x16x128 {
    fn shape(&self) -> Shape {
        // 32 codes of K per lane.
        let words = |code| bits_of(code) as usize;
        Shape {
            lanes: 64,
            m: 16,
            n: 16,
            k: 128,
            a_words: words(self.a_type),
            b_words: words(self.b_type),
            a_bits: bits_of(self.a_type),
            b_bits: bits_of(self.b_type),
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
        reg16(e, lane, r, 32, Self::per_reg(self.a_type))
    }

    fn b_reg<'c, 'a>(
        &self,
        e: &Emitter<'c, 'a>,
        lane: Value<'c, 'a>,
        r: usize,
    ) -> (Value<'c, 'a>, Value<'c, 'a>) {
        reg16(e, lane, r, 32, Self::per_reg(self.b_type))
    }

    fn acc<'c, 'a>(
        &self,
        e: &Emitter<'c, 'a>,
        lane: Value<'c, 'a>,
        i: usize,
    ) -> (Value<'c, 'a>, Value<'c, 'a>) {
        acc16(e, lane, i)
    }
}

impl RegisterInstr for ScaledMfma16x16x128 {
    fn a_owner<'c, 'a>(
        &self,
        e: &Emitter<'c, 'a>,
        row: Value<'c, 'a>,
        k: Value<'c, 'a>,
    ) -> (Value<'c, 'a>, Value<'c, 'a>) {
        owner16(e, row, k, 32, Self::per_reg(self.a_type))
    }

    fn b_owner<'c, 'a>(
        &self,
        e: &Emitter<'c, 'a>,
        col: Value<'c, 'a>,
        k: Value<'c, 'a>,
    ) -> (Value<'c, 'a>, Value<'c, 'a>) {
        owner16(e, col, k, 32, Self::per_reg(self.b_type))
    }

    fn emit<'c, 'a>(
        &self,
        e: &Emitter<'c, 'a>,
        a: &[Value<'c, 'a>],
        b: &[Value<'c, 'a>],
        c: &[Value<'c, 'a>],
        scales: Option<[Value<'c, 'a>; 2]>,
    ) -> Vec<Value<'c, 'a>> {
        let [sa, sb] = scales.expect("the scaled MFMA takes the lane's scales");
        let zero = e.i32(0);
        // Operands: A and B registers (the intrinsic is overloaded on their count), C,
        // type codes of A (cbsz) and B (blgp), then per operand the byte of the scale
        // register to use (opsel) and the scale register.
        mfma(
            e,
            "rocdl.mfma.scale.f32.16x16x128.f8f6f4",
            &[
                e.from_elements(a),
                e.from_elements(b),
                e.from_elements(c),
                e.i32(self.a_type),
                e.i32(self.b_type),
                zero,
                sa,
                zero,
                sb,
            ],
        )
    }
}
