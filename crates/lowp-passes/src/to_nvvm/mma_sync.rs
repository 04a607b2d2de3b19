//! The FP8 `mma.sync.m16n8k32` instruction of `lowp-to-nvvm` (sm_89 and later), for the
//! shared matrix kernel (`matrix_kernel.rs`): 2 x 4 instructions per warp (a 32 x 32
//! tile), operands in E4M3 / E5M2 or embedded in them (FP4, FP6, custom formats: the field
//! rule of `ScaledFormat::embeds_in`), through
//! `llvm.call_intrinsic "llvm.nvvm.mma.m16n8k32.row.col.f32.<a>.<b>.f32"` (MLIR 22's
//! `nvvm.mma.sync` rejects the FP8 shapes; the intrinsic call translates).
//!
//! In SASS (ptxas 12.9, `lit/Target/sass-tensor-cores.test`): on sm_89 each instruction is
//! one `QMMA.16832` of the operands' own types; sm_90a has no QMMA, and ptxas unpacks the
//! codes to F16 (`F2FP.F16.E4M3.UNPACK_B`) and runs two `HMMA.16816.F32`, at F16 rate: on
//! Hopper this kernel is the fallback, the wgmma pipelines the path.
//!
//! Fragment layout (PTX ISA, "Matrix Fragments for mma.m16n8k32" with .e4m3 / .e5m2), with
//! `g = lane / 4`, `t = lane % 4`: A register r (4 codes, the first in the low byte) holds
//! row `g + 8 * (r % 2)`, K `4t + 16 * (r / 2) + 0..4`; B register r holds column `g`,
//! K `4t + 16 * r + 0..4`; accumulator i holds row `g + 8 * (i / 2)`, column `2t + i % 2`.

use lowp_formats::ScaledFormat;
use melior::ir::{OperationRef, Type, Value};

use crate::ir::Emitter;
use crate::matrix_kernel::{Instr, Plan, RegisterInstr, Shape};

/// `mma.sync.aligned.m16n8k32.row.col.f32.<a>.<b>.f32`.
pub(super) struct MmaSync {
    a: ScaledFormat,
    b: ScaledFormat,
}

fn ptx_type(f: ScaledFormat) -> &'static str {
    if f == ScaledFormat::F8E4M3 {
        "e4m3"
    } else {
        "e5m2"
    }
}

/// The plan and instruction for `op`, or why it needs another kernel.
pub(super) fn plan(op: OperationRef) -> Result<(Plan, MmaSync), String> {
    let (plan, a, b) = super::fp8_plan(op)?;
    Ok((plan, MmaSync { a, b }))
}

impl Instr for MmaSync {
    fn shape(&self) -> Shape {
        Shape {
            lanes: 32,
            m: 16,
            n: 8,
            k: 32,
            a_words: 4,
            b_words: 2,
            a_bits: 8,
            b_bits: 8,
            acc: 4,
            tiles: (2, 4),
        }
    }

    fn a_reg<'c, 'a>(
        &self,
        e: &Emitter<'c, 'a>,
        lane: Value<'c, 'a>,
        r: usize,
    ) -> (Value<'c, 'a>, Value<'c, 'a>) {
        let (g, t) = (e.divui(lane, e.index(4)), e.remui(lane, e.index(4)));
        (
            e.addi(g, e.index(8 * (r as i64 % 2))),
            e.addi(e.muli(t, e.index(4)), e.index(16 * (r as i64 / 2))),
        )
    }

    fn b_reg<'c, 'a>(
        &self,
        e: &Emitter<'c, 'a>,
        lane: Value<'c, 'a>,
        r: usize,
    ) -> (Value<'c, 'a>, Value<'c, 'a>) {
        let (g, t) = (e.divui(lane, e.index(4)), e.remui(lane, e.index(4)));
        (g, e.addi(e.muli(t, e.index(4)), e.index(16 * r as i64)))
    }

    fn acc<'c, 'a>(
        &self,
        e: &Emitter<'c, 'a>,
        lane: Value<'c, 'a>,
        i: usize,
    ) -> (Value<'c, 'a>, Value<'c, 'a>) {
        let (g, t) = (e.divui(lane, e.index(4)), e.remui(lane, e.index(4)));
        (
            e.addi(g, e.index(8 * (i as i64 / 2))),
            e.addi(e.muli(t, e.index(2)), e.index(i as i64 % 2)),
        )
    }

    /// c0, c1 (and c2, c3): one row, columns 2t and 2t + 1.
    fn column_run(&self) -> usize {
        2
    }
}

impl RegisterInstr for MmaSync {
    fn a_owner<'c, 'a>(
        &self,
        e: &Emitter<'c, 'a>,
        row: Value<'c, 'a>,
        k: Value<'c, 'a>,
    ) -> (Value<'c, 'a>, Value<'c, 'a>) {
        let (c4, c8, c16) = (e.index(4), e.index(8), e.index(16));
        let lane = e.addi(e.muli(e.remui(row, c8), c4), e.divui(e.remui(k, c16), c4));
        let reg = e.addi(e.divui(row, c8), e.muli(e.divui(k, c16), e.index(2)));
        (lane, reg)
    }

    fn b_owner<'c, 'a>(
        &self,
        e: &Emitter<'c, 'a>,
        col: Value<'c, 'a>,
        k: Value<'c, 'a>,
    ) -> (Value<'c, 'a>, Value<'c, 'a>) {
        let (c4, c16) = (e.index(4), e.index(16));
        let lane = e.addi(e.muli(col, c4), e.divui(e.remui(k, c16), c4));
        (lane, e.divui(k, c16))
    }

    fn emit<'c, 'a>(
        &self,
        e: &Emitter<'c, 'a>,
        a: &[Value<'c, 'a>],
        b: &[Value<'c, 'a>],
        c: &[Value<'c, 'a>],
        _scales: Option<[Value<'c, 'a>; 2]>,
    ) -> Vec<Value<'c, 'a>> {
        let name = format!(
            "llvm.nvvm.mma.m16n8k32.row.col.f32.{}.{}.f32",
            ptx_type(self.a),
            ptx_type(self.b)
        );
        let result =
            Type::parse(e.ctx(), "!llvm.struct<(f32, f32, f32, f32)>").expect("valid struct type");
        let operands: Vec<Value> = a.iter().chain(b).chain(c).copied().collect();
        let d = e.call_intrinsic(&name, &operands, result);
        (0..4)
            .map(|i| e.extract_value(d, i, e.f32_type()))
            .collect()
    }
}
