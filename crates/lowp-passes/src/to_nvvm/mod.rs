//! `lowp-to-nvvm`: `lowp.scaled_matmul` to an NVIDIA GPU kernel, as a block loop over
//! output tiles with a thread loop inside (`scf.parallel` nests that
//! `gpu-map-parallel-loops` + `convert-parallel-loops-to-gpu` turn into a `gpu.launch`),
//! whose bodies use the chip's tensor-core instructions where the formats allow.
//!
//! Per op, the strongest kernel the chip and the formats allow (one file each):
//! - `mma_sync` (sm_89 and later; the kernel around it is `matrix_kernel.rs`): FP8 `mma.sync.m16n8k32` through
//!   `llvm.call_intrinsic "llvm.nvvm.mma.m16n8k32.row.col.f32.<a>.<b>.f32"`. Operands in
//!   E4M3 / E5M2 feed the instruction directly; FP4 / FP6 / custom formats that embed exactly
//!   in E4M3 or E5M2 (`ScaledFormat::fp8_embedding`, proved from the fields) are translated
//!   code by code on the way into registers. Block scales (MX, NVFP4, blockwise) are applied
//!   per K segment to f32 accumulators, per-tensor / per-channel scales in the epilogue.
//! - `gpu_generic.rs`: every other format or layout; one output element per thread, codes
//!   decoded by bit arithmetic (the body `lowp-to-parallel-loops` has), 32 x 8 threads per
//!   block.
//!
//! Before:
//! ```mlir
//! lowp.scaled_matmul %a[%sa], %b[%sb] into %c layouts(#lowp.mx<32>, #lowp.mx<32>)
//!     : memref<256x512xf8E4M3FN>[memref<256x16xf8E8M0FNU>], ... -> memref<256x128xf32>
//! ```
//! After (`chip=sm_90a`; shape of it):
//! ```mlir
//! scf.parallel (%bx, %by) = (%c0, %c0) to (%c2, %c4) step (%c1, %c1) {  // 64 x 64 tiles
//!   scf.parallel (%tid) = (%c0) to (%c128) step (%c1) {                  // 4 warps
//!     %acc:32 = scf.for %s = ... iter_args(...) {        // K segments (a scale block)
//!       %part:32 = scf.for %k = ... step %c32 iter_args(...) {
//!         %a0 = vector.load %bits_a[%row, %kw] {alignment = 4} : ..., vector<4xi8>
//!         %d = llvm.call_intrinsic "llvm.nvvm.mma.m16n8k32.row.col.f32.e4m3.e4m3.f32"(...)
//!       }
//!       // acc += part * (sa(row, s) * sb(col, s))
//!     }
//!     // epilogue: per-tensor / per-channel scales, globals, bias, f32 or bf16 store
//!   }
//! }
//! ```
//!
//! Options: `chip` (sm_89, sm_90a, sm_100a: the chip facts decide which kernels exist),
//! `kernel` (`auto` picks per op; `mma-sync` makes an op that cannot use it an error;
//! `generic` forces the decode kernel), `emulate` (`true` replaces each warp's `mma.sync`
//! by loops that compute it as the PTX ISA defines it, from the same fragment registers,
//! so that the kernel runs and is checked against the oracle on a CPU).
//! Runs on `func.func`. Dependent dialects: arith, math, memref, scf, vector, llvm.

mod mma_sync;
mod wgmma;

use melior::dialect::DialectHandle;
use melior::ir::OperationRef;

use crate::expand_quantize::{loop_dialects, unsupported};
use crate::registry::{OptionDef, OptionKind, PassDef, PassOptions};
use crate::to_loops::lower_lowp_ops;
use crate::PassError;

/// The NVIDIA chips the pass knows, with the compute capability that decides their
/// instructions.
const CHIPS: &[(&str, u32)] = &[("sm_89", 89), ("sm_90a", 90), ("sm_100a", 100)];

/// The pass definition.
pub const PASS: PassDef = PassDef {
    argument: "lowp-to-nvvm",
    name: "LowpToNVVM",
    description: "Lower lowp.scaled_matmul to an NVIDIA kernel (block and thread \
                  scf.parallel nests for convert-parallel-loops-to-gpu): FP8 mma.sync \
                  m16n8k32 on sm_89+ for formats that embed in E4M3/E5M2, else the generic \
                  decode kernel",
    op_name: Some("func.func"),
    options: &[
        OptionDef {
            name: "chip",
            default: "sm_90a",
            description: "Target chip; decides which tensor-core kernels exist",
            kind: OptionKind::Choice(&["sm_89", "sm_90a", "sm_100a"]),
        },
        OptionDef {
            name: "kernel",
            default: "auto",
            description: "auto: the strongest kernel per op; wgmma / mma-sync: require that \
                          FP8 kernel (an op that cannot use it is an error); generic: the \
                          decode kernel for every op",
            kind: OptionKind::Choice(&["auto", "wgmma", "mma-sync", "generic"]),
        },
        OptionDef {
            name: "emulate",
            default: "false",
            description: "Compute each warp's mma.sync with loops over the fragment \
                          registers as the PTX ISA defines it (runs on a CPU, for checks)",
            kind: OptionKind::Bool,
        },
    ],
    dependent_dialects: nvvm_dialects,
    run,
};

fn nvvm_dialects() -> Vec<DialectHandle> {
    let mut d = loop_dialects();
    d.push(DialectHandle::llvm());
    d.push(DialectHandle::gpu());
    // SAFETY: the NVVM dialect's registration handle is a static descriptor.
    d.push(unsafe { DialectHandle::from_raw(mlir_sys::mlirGetDialectHandle__nvvm__()) });
    d
}

fn run<'c, 'a>(func: OperationRef<'c, 'a>, options: &PassOptions) -> Result<(), PassError> {
    let chip = options.choice("chip");
    let sm = CHIPS
        .iter()
        .find(|(name, _)| *name == chip)
        .map(|&(_, sm)| sm)
        .unwrap_or(0);
    let kernel = options.choice("kernel");
    let emulate = options.flag("emulate");
    lower_lowp_ops(func, |e, op| {
        // The strongest kernel first: wgmma exists on sm_90a only (Blackwell dropped it),
        // FP8 mma.sync from sm_89 on.
        let wgmma = || {
            if sm == 90 {
                wgmma::plan(op)
            } else {
                Err(format!("{chip} has no wgmma (sm_90a only)"))
            }
        };
        let mma_sync = || {
            if sm >= 89 {
                mma_sync::plan(op)
            } else {
                Err(format!("{chip} has no FP8 mma.sync"))
            }
        };
        let lowered = match kernel {
            "generic" => Err(String::new()),
            "wgmma" => wgmma().map(|(plan, i)| (plan, Err(i))),
            "mma-sync" => mma_sync().map(|(plan, i)| (plan, Ok(i))),
            _ => wgmma()
                .map(|(plan, i)| (plan, Err(i)))
                .or_else(|_| mma_sync().map(|(plan, i)| (plan, Ok(i)))),
        };
        match lowered {
            Ok((plan, Ok(instr))) => crate::matrix_kernel::lower(e, op, &plan, &instr, emulate),
            Ok((plan, Err(instr))) => wgmma::lower(e, op, &plan, &instr, emulate),
            Err(reason) if kernel == "wgmma" || kernel == "mma-sync" => Err(unsupported(
                op,
                format!(
                    "no {} kernel for this op on {chip}: {reason}",
                    kernel.replace('-', ".")
                ),
            )),
            Err(reason) => {
                if kernel == "auto" {
                    crate::matrix_kernel::remark(
                        op,
                        &format!("generic kernel on {chip}: {reason}"),
                    );
                }
                crate::gpu_generic::lower(e, op, emulate)
            }
        }
    })
}
