//! `lowp-to-rocdl`: `lowp.scaled_matmul` to an AMD GPU kernel, as a block loop over output
//! tiles with a thread loop inside (`scf.parallel` nests that `gpu-map-parallel-loops` +
//! `convert-parallel-loops-to-gpu` turn into a `gpu.launch`), whose bodies use the chip's
//! matrix instructions where the formats allow: the AMD counterpart of `lowp-to-nvvm`, on
//! the same kernel (`matrix_kernel.rs`) with the instructions of `mfma`.
//!
//! Per op, the strongest kernel the chip and the formats allow:
//! - gfx950, both operands MX with 32-blocks (E8M0): the block-scaled
//!   `rocdl.mfma.scale.f32.16x16x128.f8f6f4`, scales given to the instruction per lane.
//! - gfx942 and gfx950: FP8 `rocdl.mfma.f32.16x16x32.{fp8,bf8}.{fp8,bf8}`, operands in the
//!   chip's FP8 types (FNUZ on gfx942, OCP on gfx950) or embedded in them; block scales
//!   per K segment on the accumulators, per-tensor / per-channel in the epilogue. OCP E4M3
//!   on gfx942 is fed as E4M3 FNUZ with the same bits (half the value: FNUZ's bias is 8),
//!   the result doubled: a remark says so. OCP E5M2 has infinities FNUZ lacks: f16 or bf16
//!   patterns (below).
//!   Embedded codes are translated a register (four codes) at a time where the table
//!   allows (`code_words`: FP4 by three `v_perm_b32` over the 16 images, FP6 by word
//!   arithmetic), `llvm.amdgcn.perm` on the GPU, its semantics by shifts when emulated.
//! - gfx942 and gfx950, formats no FP8 type of the chip holds but whose fields f16's do
//!   (E3M4, E2M5, OCP E5M2 on gfx942, 7-bit customs): `rocdl.mfma.f32.16x16x16f16` on the
//!   codes' f16 patterns (`Operand::f16`), with a remark.
//! - gfx942 and gfx950, formats whose fields only bf16's hold (6- and 7-bit exponents, E5M2
//!   FNUZ on gfx950, and the formats beside them, OCP E5M2 with its infinities set to
//!   bf16's top exponent): `rocdl.mfma.f32.16x16x16bf16.1k` on the codes' bf16 patterns
//!   (`Operand::bf16`), with a remark.
//! - anything else (scale blocks no MFMA's K fits, 24 say; shorter divisors of it, 8 or 4,
//!   go one block an instruction, the rest of its K zero): the generic decode kernel
//!   (`gpu_generic.rs`).
//!
//! Before:
//! ```mlir
//! lowp.scaled_matmul %a[%sa], %b[%sb] into %c layouts(#lowp.mx<32>, #lowp.mx<32>)
//!     : memref<256x256x!lowp.packed<f4E2M1FN>>[memref<256x16xf8E8M0FNU>], ...
//! ```
//! After (`chip=gfx950`; shape of it):
//! ```mlir
//! scf.parallel (%bx, %by) = ... {                       // 64 x 64 tiles of C
//!   scf.parallel (%tid) = (%c0) to (%c256) step (%c1) {  // 4 waves of 64
//!     %acc:16 = scf.for %s = ... {
//!       %part:16 = scf.for %k = ... step %c128 ... {
//!         %a = vector.load %bits_a[%row, %kb] {alignment = 4} : ..., vector<4xi8>  // x4
//!         %sa = memref.load %scales_a[%row, %kblock]                               // E8M0
//!         %d = rocdl.mfma.scale.f32.16x16x128.f8f6f4 %va, %vb, %c, %c4_i32, %c4_i32,
//!                %c0_i32, %sa, %c0_i32, %sb : (vector<4xi32>, vector<4xi32>, ...)
//!       }
//!     }
//!     // epilogue: globals, bias, f32 or bf16 store
//!   }
//! }
//! ```
//!
//! Options: `chip` (gfx942, gfx950), `kernel` (`auto`; `scaled-mfma` / `mfma` make an op
//! that cannot use that instruction an error; `generic`), `emulate` (compute each wave's
//! instruction with loops over the lanes' registers as the ISA defines it: runs on a CPU;
//! the function gets the unit attribute `lowp.emulated`). Runs on `func.func`. Dependent
//! dialects: arith, math, memref, scf, vector, gpu, rocdl.

mod mfma;

use lowp_formats::{ScaleLayout, ScaledFormat};
use melior::dialect::DialectHandle;
use melior::ir::OperationRef;

use crate::code_words::Permute;
use crate::expand_quantize::{layout_attr_of, loop_dialects, unsupported};
use crate::matrix_kernel::{remark, Operand, Plan, RegisterInstr};
use crate::registry::{OptionDef, OptionKind, PassDef, PassOptions};
use crate::to_loops::lower_lowp_ops;
use crate::PassError;
use mfma::{f8f6f4_code, Mfma16};

/// The pass definition.
pub const PASS: PassDef = PassDef {
    argument: "lowp-to-rocdl",
    name: "LowpToROCDL",
    description: "Lower lowp.scaled_matmul to an AMD kernel (block and thread scf.parallel \
                  nests for convert-parallel-loops-to-gpu): scaled MFMA f8f6f4 on gfx950 for \
                  MX operands, FP8 MFMA 16x16x32 (FNUZ on gfx942) for formats that embed, \
                  f16 MFMA 16x16x16 on f16 patterns for formats whose fields f16's hold, \
                  bf16 MFMA 16x16x16 on bf16 patterns for those only bf16's do, else the \
                  generic decode kernel",
    op_name: Some("func.func"),
    options: &[
        OptionDef {
            name: "chip",
            default: "gfx942",
            description: "Target chip; decides which matrix instructions exist",
            kind: OptionKind::Choice(&["gfx942", "gfx950"]),
        },
        OptionDef {
            name: "kernel",
            default: "auto",
            description: "auto: the strongest kernel per op; scaled-mfma / mfma: require \
                          that instruction (an op that cannot use it is an error; mfma: \
                          FP8, else f16, else bf16); generic: \
                          the decode kernel for every op",
            kind: OptionKind::Choice(&["auto", "scaled-mfma", "mfma", "generic"]),
        },
        OptionDef {
            name: "emulate",
            default: "false",
            description: "Compute each wave's matrix instruction with loops over the lanes' \
                          registers as the ISA defines it (runs on a CPU, for checks)",
            kind: OptionKind::Bool,
        },
    ],
    dependent_dialects: rocdl_dialects,
    run,
};

fn rocdl_dialects() -> Vec<DialectHandle> {
    let mut d = loop_dialects();
    d.push(DialectHandle::gpu());
    // SAFETY: the ROCDL dialect's registration handle is a static descriptor.
    d.push(unsafe { DialectHandle::from_raw(mlir_sys::mlirGetDialectHandle__rocdl__()) });
    d
}

/// A chosen instruction and its plan.
type Choice = (Plan, Box<dyn RegisterInstr>);

/// gfx950's block-scaled MFMA, for two MX operands with 32-blocks.
fn scaled_mfma(op: OperationRef) -> Result<Choice, String> {
    let err = |e: PassError| e.to_string();
    let la = layout_attr_of(op, "lhs_layout").map_err(err)?;
    let lb = layout_attr_of(op, "rhs_layout").map_err(err)?;
    let mx = ScaleLayout::Mx { block: 32 };
    if la != mx || lb != mx {
        return Err(format!(
            "the scaled MFMA takes MX operands with 32-blocks, found {la} x {lb}"
        ));
    }
    let [(fa, pa), (fb, pb)] = Plan::formats(op)?;
    let operand = |f: ScaledFormat, packed| -> Result<(Operand, u32), String> {
        let o = if f == ScaledFormat::F4E2M1 {
            Operand::new(f, packed, &[f], &[0])?
        } else {
            Operand::new(
                f,
                packed,
                &[ScaledFormat::F8E4M3, ScaledFormat::F8E5M2],
                &[0],
            )?
        };
        let code = f8f6f4_code(o.ty).expect("a type the scaled MFMA reads");
        Ok((o, code))
    };
    let (a, a_type) = operand(fa, pa)?;
    let (b, b_type) = operand(fb, pb)?;
    let plan = Plan::new(op, a, b, 128, true)?;
    Ok((plan, Box::new(Mfma16::Scaled { a_type, b_type })))
}

/// The FP8 MFMA in the chip's FP8 types.
fn fp8_mfma(op: OperationRef, chip: &str) -> Result<Choice, String> {
    let [(fa, pa), (fb, pb)] = Plan::formats(op)?;
    let (types, shifts): (&[ScaledFormat], &[i32]) = if chip == "gfx942" {
        (
            &[ScaledFormat::F8E4M3Fnuz, ScaledFormat::F8E5M2Fnuz],
            &[0, 1],
        )
    } else {
        (&[ScaledFormat::F8E4M3, ScaledFormat::F8E5M2], &[0])
    };
    let a = Operand::new(fa, pa, types, shifts)?;
    let b = Operand::new(fb, pb, types, shifts)?;
    let bf8 = |t: ScaledFormat| matches!(t, ScaledFormat::F8E5M2 | ScaledFormat::F8E5M2Fnuz);
    let instr = Mfma16::Fp8 {
        a_bf8: bf8(a.ty),
        b_bf8: bf8(b.ty),
    };
    for (o, f, side) in [(&a, fa, "lhs"), (&b, fb, "rhs")] {
        if o.shift != 0 {
            remark(
                op,
                &format!(
                    "{side} {f} is fed to the {chip} MFMA as {} with the same bits, at \
                     2^-{} of its value (the formats differ in bias); the result is scaled \
                     back exactly",
                    o.ty, o.shift
                ),
            );
        }
    }
    Ok((Plan::new(op, a, b, 32, false)?, Box::new(instr)))
}

/// The FP8 MFMA, else its f16 form (both formats' fields moved into f16 patterns), else its
/// bf16 form, with a remark saying why where `auto` takes a 16-bit one.
fn mfma(op: OperationRef, chip: &str, auto: bool) -> Result<Choice, String> {
    fp8_mfma(op, chip).or_else(|fp8| {
        let (plan, half, why) = Plan::half(op, fp8)?;
        if auto {
            remark(op, &format!("{half} MFMA kernel on {chip}: {why}"));
        }
        Ok((plan, Box::new(Mfma16::F16(half)) as Box<dyn RegisterInstr>))
    })
}

fn run<'c, 'a>(func: OperationRef<'c, 'a>, options: &PassOptions) -> Result<(), PassError> {
    let chip = options.choice("chip");
    let kernel = options.choice("kernel");
    let emulate = options.flag("emulate");
    let lowered = std::cell::Cell::new(false);
    lower_lowp_ops(func, |e, op| {
        crate::matrix_kernel::check_gpu_op(op, emulate)?;
        lowered.set(true);
        let choice = match kernel {
            "generic" => Err(String::new()),
            "scaled-mfma" if chip != "gfx950" => Err(format!("{chip} has no scaled MFMA")),
            "scaled-mfma" => scaled_mfma(op),
            "mfma" => mfma(op, chip, false),
            _ => match (chip == "gfx950").then(|| scaled_mfma(op)) {
                Some(Ok(c)) => Ok(c),
                // The reason the FP8 MFMA (and its f16 form) gives is the one reported.
                _ => mfma(op, chip, true),
            },
        };
        match choice {
            Ok((plan, instr)) => crate::matrix_kernel::lower(
                e,
                op,
                &plan,
                instr.as_ref(),
                emulate,
                Some(Permute::amd(emulate)),
            ),
            Err(reason) if kernel == "scaled-mfma" || kernel == "mfma" => Err(unsupported(
                op,
                format!("no {kernel} kernel for this op on {chip}: {reason}"),
            )),
            Err(reason) => {
                if kernel == "auto" {
                    remark(op, &format!("generic kernel on {chip}: {reason}"));
                }
                crate::gpu_generic::lower(e, op, emulate)
            }
        }
    })?;
    if emulate && lowered.get() {
        crate::matrix_kernel::mark_emulated(func);
    }
    Ok(())
}
