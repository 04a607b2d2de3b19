//! The `mma.sync` instructions of `lowp-to-nvvm` (sm_89 and later), for the shared matrix
//! kernel (`matrix_kernel.rs`), 2 x 4 instructions per warp (a 32 x 32 tile):
//! - FP8 `mma.sync.m16n8k32`: operands in E4M3 / E5M2 or embedded in them (FP4, FP6,
//!   custom formats: the field rule of `ScaledFormat::embeds_in`), through
//!   `llvm.call_intrinsic "llvm.nvvm.mma.m16n8k32.row.col.f32.<a>.<b>.f32"` (MLIR 22's
//!   `nvvm.mma.sync` rejects the FP8 shapes; the intrinsic call translates).
//! - f16 `mma.sync.m16n8k16` (`nvvm.mma.sync`), for the formats no FP8 type holds but
//!   whose fields f16's do (`ScaledFormat::f16_fields`: E3M4, E2M5, E4M3 FNUZ, 7- and
//!   8-bit customs; beside them E4M3 / E5M2 and the narrow formats, whose fields f16's hold
//!   too), and for scale blocks of 16 the FP8 instruction's K of 32 does not divide:
//!   each code's sign, exponent and mantissa moved into an f16 pattern (no rebias: a few
//!   integer operations per pair of codes, two codes read as one 2-byte load), which is
//!   its value times `2^-shift` (`15 - bias`); the epilogue multiplies by `2^shift` of both
//!   operands, exactly. The products of two f16 values are exact in the f32 accumulators,
//!   so the result is the FP8 kernel's, at f16's tensor rate: on any chip with mma.sync,
//!   these formats run on the tensor cores instead of the generic kernel's f32 FMAs.
//!
//! - bf16 `mma.sync.m16n8k16` (`nvvm.mma.sync`), for the formats f16's exponent field does
//!   not hold (`ScaledFormat::bf16_fields`: 6- and 7-bit exponents, E5M2 FNUZ's finite
//!   exponent 31, and mixes with them): each code's fields moved into an f32 and one exact
//!   multiply bring it into the range where products of two are normal f32 values; the
//!   f32's high half is its bf16 pattern (at most 7 mantissa bits), the value times
//!   `2^-shift`. Same fragments as f16, same rate; the products are exact (8-bit
//!   significands).
//!
//! In SASS (ptxas 12.9, `lit/Target/sass-tensor-cores.test`): on sm_89 each FP8 instruction
//! is one `QMMA.16832` of the operands' own types; sm_90a has no QMMA, and ptxas unpacks the
//! codes to F16 (`F2FP.F16.E4M3.UNPACK_B`) and runs two `HMMA.16816.F32`, at F16 rate: on
//! Hopper this kernel is the fallback, the wgmma pipelines the path. The f16 instruction is
//! one `HMMA.16816.F32` everywhere.
//!
//! Fragment layout (PTX ISA, "Matrix Fragments for mma.m16n8k32" with .e4m3 / .e5m2, and
//! "for mma.m16n8k16 with floating point type"), with `g = lane / 4`, `t = lane % 4` and
//! `p` codes per register (FP8: 4, f16: 2), the first in the low bits: A register r holds
//! row `g + 8 * (r % 2)`, K `p t + 4 p (r / 2) + 0..p`; B register r holds column `g`,
//! K `p t + 4 p r + 0..p`; accumulator i holds row `g + 8 * (i / 2)`, column `2t + i % 2`.

use lowp_formats::{Half, ScaledFormat};
use melior::ir::operation::OperationBuilder;
use melior::ir::{Attribute, Identifier, OperationRef, Type, Value};

use crate::ir::Emitter;
use crate::matrix_kernel::{Instr, Plan, RegisterInstr, Shape};

/// An `mma.sync.aligned` instruction with f32 accumulators.
pub(super) enum MmaSync {
    /// `m16n8k32.row.col.f32.<a>.<b>.f32` on FP8 codes of these types.
    Fp8 { a: ScaledFormat, b: ScaledFormat },
    /// `m16n8k16.row.col.f32.<half>.<half>.f32` on the f16 (or bf16) patterns of the
    /// stored codes; why the FP8 one (and for bf16, the f16 one) does not take the op.
    F16 { half: Half, why_not_fp8: String },
}

fn ptx_type(f: ScaledFormat) -> &'static str {
    if f == ScaledFormat::F8E4M3 {
        "e4m3"
    } else {
        "e5m2"
    }
}

/// The plan and instruction for `op`: FP8 where both formats are (or embed in) FP8 types
/// and the scales allow K 32, else f16 where both formats' fields move into f16's; or why
/// it needs another kernel.
pub(super) fn plan(op: OperationRef) -> Result<(Plan, MmaSync), String> {
    super::fp8_plan(op)
        .map(|(plan, a, b)| (plan, MmaSync::Fp8 { a, b }))
        .or_else(|fp8| {
            Plan::half(op, fp8)
                .map(|(plan, half, why_not_fp8)| (plan, MmaSync::F16 { half, why_not_fp8 }))
        })
}

impl MmaSync {
    /// The 16-bit float the instruction takes and why the FP8 one does not take the op,
    /// where a 16-bit one does.
    pub(super) fn half_because(&self) -> Option<(Half, &str)> {
        match self {
            MmaSync::F16 { half, why_not_fp8 } => Some((*half, why_not_fp8)),
            MmaSync::Fp8 { .. } => None,
        }
    }

    /// Codes per 32-bit register.
    fn per(&self) -> i64 {
        match self {
            MmaSync::Fp8 { .. } => 4,
            MmaSync::F16 { .. } => 2,
        }
    }
}

impl Instr for MmaSync {
    fn shape(&self) -> Shape {
        let bits = 32 / self.per() as u32;
        Shape {
            lanes: 32,
            m: 16,
            n: 8,
            k: 8 * self.per(),
            a_words: 4,
            b_words: 2,
            a_bits: bits,
            b_bits: bits,
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
        let p = self.per();
        (
            e.addi(g, e.index(8 * (r as i64 % 2))),
            e.addi(e.muli(t, e.index(p)), e.index(4 * p * (r as i64 / 2))),
        )
    }

    fn b_reg<'c, 'a>(
        &self,
        e: &Emitter<'c, 'a>,
        lane: Value<'c, 'a>,
        r: usize,
    ) -> (Value<'c, 'a>, Value<'c, 'a>) {
        let (g, t) = (e.divui(lane, e.index(4)), e.remui(lane, e.index(4)));
        let p = self.per();
        (g, e.addi(e.muli(t, e.index(p)), e.index(4 * p * r as i64)))
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
        let (c4, c8) = (e.index(4), e.index(8));
        let (p, run) = (e.index(self.per()), e.index(4 * self.per()));
        let lane = e.addi(e.muli(e.remui(row, c8), c4), e.divui(e.remui(k, run), p));
        let reg = e.addi(e.divui(row, c8), e.muli(e.divui(k, run), e.index(2)));
        (lane, reg)
    }

    fn b_owner<'c, 'a>(
        &self,
        e: &Emitter<'c, 'a>,
        col: Value<'c, 'a>,
        k: Value<'c, 'a>,
    ) -> (Value<'c, 'a>, Value<'c, 'a>) {
        let (p, run) = (e.index(self.per()), e.index(4 * self.per()));
        let lane = e.addi(e.muli(col, e.index(4)), e.divui(e.remui(k, run), p));
        (lane, e.divui(k, run))
    }

    fn emit<'c, 'a>(
        &self,
        e: &Emitter<'c, 'a>,
        a: &[Value<'c, 'a>],
        b: &[Value<'c, 'a>],
        c: &[Value<'c, 'a>],
        _scales: Option<[Value<'c, 'a>; 2]>,
    ) -> Vec<Value<'c, 'a>> {
        let result =
            Type::parse(e.ctx(), "!llvm.struct<(f32, f32, f32, f32)>").expect("valid struct type");
        let d = match self {
            MmaSync::Fp8 { a: ta, b: tb } => {
                let name = format!(
                    "llvm.nvvm.mma.m16n8k32.row.col.f32.{}.{}.f32",
                    ptx_type(*ta),
                    ptx_type(*tb)
                );
                let operands: Vec<Value> = a.iter().chain(b).chain(c).copied().collect();
                e.call_intrinsic(&name, &operands, result)
            }
            MmaSync::F16 { half, .. } => {
                // (f16 operands are `vector<2xf16>`; bf16 ones stay `i32`, as the
                // intrinsic takes them.)
                let register = |&r: &Value<'c, 'a>| match half {
                    Half::F16 => e.llvm_bitcast(r, e.vector_type(2, e.f16_type())),
                    Half::Bf16 => r,
                };
                let regs: Vec<Value> = a
                    .iter()
                    .chain(b)
                    .map(register)
                    .chain(c.iter().copied())
                    .collect();
                let ty = format!("#nvvm.mma_type<{half}>");
                let attr = |s: &str| Attribute::parse(e.ctx(), s).expect("valid NVVM attribute");
                let id = |s: &str| Identifier::new(e.ctx(), s);
                e.val(
                    OperationBuilder::new("nvvm.mma.sync", e.loc())
                        .add_operands(&regs)
                        .add_attributes(&[
                            (id("layoutA"), attr("#nvvm.mma_layout<row>")),
                            (id("layoutB"), attr("#nvvm.mma_layout<col>")),
                            (id("shape"), attr("#nvvm.shape<m = 16, n = 8, k = 16>")),
                            // (The verifier reads them; the custom parser infers them.)
                            (id("multiplicandAPtxType"), attr(&ty)),
                            (id("multiplicandBPtxType"), attr(&ty)),
                            (id("operandSegmentSizes"), attr("array<i32: 4, 2, 4>")),
                        ])
                        .add_results(&[result])
                        .build()
                        .expect("valid nvvm.mma.sync"),
                )
            }
        };
        (0..4)
            .map(|i| e.extract_value(d, i, e.f32_type()))
            .collect()
    }
}
