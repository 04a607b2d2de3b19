//! `lowp-to-parallel-loops`: the generic, one-output-per-iteration lowering.
//! `lowp.scaled_matmul` becomes a single two-dimensional `scf.parallel` over the output,
//! whose every iteration decodes its row of A and column of B by bit arithmetic and
//! accumulates them in f32, with no scratch buffers, no decode tables and nothing shared
//! between iterations. It is the form that maps onto GPU threads with upstream passes
//! (`scf-parallel-loop-tiling`, `gpu-map-parallel-loops`, `convert-parallel-loops-to-gpu`,
//! `gpu-kernel-outlining`, `convert-gpu-to-nvvm` / `convert-gpu-to-rocdl`): the decode-and-
//! accumulate kernel for formats no matrix core takes. The same IR runs on the CPU through
//! `lowp-cpu-pipeline`, which is how its numerics are tested without a GPU.
//!
//! Before:
//! ```mlir
//! lowp.scaled_matmul %a[%sa], %b[%sb] into %c layouts(#lowp.mx<32>, #lowp.mx<32>)
//!     : memref<128x256xf4E2M1FN>[memref<128x8xf8E8M0FNU>], ... -> memref<128x64xf32>
//! ```
//! After (shape of it):
//! ```mlir
//! scf.parallel (%j, %i) = (%c0, %c0) to (%n, %m) step (%c1, %c1) {
//!   %t = scf.for %s = %c0 to %segments step %c1 iter_args(%w = %f0) -> (f32) {
//!     %p = scf.for %k = %k0 to %k1 step %c1 iter_args(%acc = %f0) -> (f32) {
//!       // code of A[i, k] and B[j, k] (nibbles when packed), decoded by shifts and masks
//!       %x = arith.mulf %ai, %bj : f32
//!       %acc1 = arith.addf %acc, %x : f32
//!     }
//!     // w + p * (sa(i, s) * sb(j, s)): E8M0 / UE4M3 scales decoded inline
//!   }
//!   // (per-tensor / per-channel scales,) NVFP4 globals, bias, f32 or bf16 store
//! }
//! ```
//!
//! Numerics follow the oracle (`lowp_formats::scaled_matmul`) as `lowp-to-loops` does: each
//! K segment where neither scale changes is summed in f32 in K order and scaled once; per-
//! tensor and per-channel scales multiply the total, then the NVFP4 globals, then the bias.
//!
//! Runs on `func.func`; no options. Dependent dialects: arith, math, memref, scf, vector.

use melior::ir::{OperationRef, ShapedTypeLike, ValueLike};

use crate::codes;
use crate::expand_quantize::{
    ceil_div, code_format, layout_attr_of, load_code, loop_dialects, storage_cast, unsupported,
    Scaled,
};
use crate::ir::Emitter;
use crate::registry::{PassDef, PassOptions};
use crate::to_loops::{lower_lowp_ops, matmul_operands, segment};
use crate::PassError;

/// The pass definition.
pub const PASS: PassDef = PassDef {
    argument: "lowp-to-parallel-loops",
    name: "LowpToParallelLoops",
    description: "Lower lowp.scaled_matmul to one 2-D scf.parallel over the output (one \
                  element per iteration, codes decoded by bit arithmetic, no scratch memory): \
                  the form convert-parallel-loops-to-gpu maps onto GPU threads",
    op_name: Some("func.func"),
    options: &[],
    dependent_dialects: loop_dialects,
    run,
};

fn run<'c, 'a>(func: OperationRef<'c, 'a>, _options: &PassOptions) -> Result<(), PassError> {
    lower_lowp_ops(func, lower_scaled_matmul)
}

fn lower_scaled_matmul<'c, 'a>(
    e: &Emitter<'c, 'a>,
    op: OperationRef<'c, 'a>,
) -> Result<(), PassError> {
    let o = matmul_operands(op)?;
    let la = layout_attr_of(op, "lhs_layout")?;
    let lb = layout_attr_of(op, "rhs_layout")?;
    let seg = segment(la, lb);
    let (fa, packed_a) = code_format(op, o.lhs)?;
    let (fb, packed_b) = code_format(op, o.rhs)?;
    let cast =
        |codes| storage_cast(e, codes).ok_or_else(|| unsupported(op, "codes are not castable"));
    let (bits_a, bits_b) = (cast(o.lhs)?, cast(o.rhs)?);
    let sa = Scaled::new(e, op, la, o.lhs_scales, o.lhs_global)?;
    let sb = Scaled::new(e, op, lb, o.rhs_scales, o.rhs_global)?;
    let out_type = melior::ir::r#type::MemRefType::try_from(o.out.r#type())
        .map_err(|_| unsupported(op, "result is not a memref"))?
        .element();
    let bf16 = out_type != e.f32_type();

    let (zero, one) = (e.index(0), e.index(1));
    let m = e.dim(o.lhs, 0);
    let n = e.dim(o.rhs, 0);
    let k = {
        let d = e.dim(o.lhs, 1);
        if packed_a {
            e.muli(d, e.index(2))
        } else {
            d
        }
    };
    let (segments, seg_len) = match seg {
        Some(s) => (ceil_div(e, k, e.index(s)), e.index(s)),
        None => (one, k),
    };
    let zf = e.f32(0.0);
    // Columns first: mapped onto GPU threads, consecutive threads (x) take consecutive
    // columns, so that the store of C is coalesced and the load of A[i, k] is one broadcast.
    e.parallel_nest(&[zero, zero], &[n, m], &[one, one], |e, ji| {
        let (j, i) = (ji[0], ji[1]);
        let total = e.for_loop(zero, segments, one, &[zf], |e, s, w| {
            let k0 = e.muli(s, seg_len);
            let k1 = e.minui(e.addi(k0, seg_len), k);
            let p = e.for_loop(k0, k1, one, &[zf], |e, kk, acc| {
                let x = codes::decode(e, fa, load_code(e, bits_a, packed_a, i, kk));
                let y = codes::decode(e, fb, load_code(e, bits_b, packed_b, j, kk));
                vec![e.addf(acc[0], e.mulf(x, y))]
            })[0];
            let w = match seg {
                Some(_) => e.addf(
                    w[0],
                    e.mulf(
                        p,
                        e.mulf(sa.block_value(e, i, k0), sb.block_value(e, j, k0)),
                    ),
                ),
                None => e.addf(w[0], p),
            };
            vec![w]
        })[0];
        let mut v = total;
        if seg.is_none() {
            v = e.mulf(
                e.mulf(v, sa.block_value(e, i, zero)),
                sb.block_value(e, j, zero),
            );
        }
        // The NVFP4 global scales are read in the body, not hoisted: on a GPU the host
        // cannot read device memory (and the loads hit the cache after the first thread).
        let global = match (sa.global_value(e), sb.global_value(e)) {
            (None, None) => None,
            (ga, gb) => Some(e.mulf(
                ga.unwrap_or_else(|| e.f32(1.0)),
                gb.unwrap_or_else(|| e.f32(1.0)),
            )),
        };
        if let Some(g) = global {
            v = e.mulf(v, g);
        }
        if let Some(bias) = o.bias {
            v = e.addf(v, e.load(bias, &[j]));
        }
        if bf16 {
            v = e.truncf(v, out_type);
        }
        e.store(v, o.out, &[i, j]);
    });
    Ok(())
}
