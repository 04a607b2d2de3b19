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
//! tensor and per-channel scales multiply the total (as one product `sa * sb`), then the
//! NVFP4 globals, then the bias.
//!
//! Runs on `func.func`; no options. Dependent dialects: arith, math, memref, scf, vector.

use melior::ir::{OperationRef, ShapedTypeLike, Type, Value, ValueLike};

use crate::codes;
use crate::expand_quantize::{
    ceil_div, code_format, layout_attr_of, load_code, loop_dialects, storage_cast, unsupported,
    Scaled,
};
use crate::ir::Emitter;
use crate::registry::{PassDef, PassOptions};
use crate::to_loops::{lower_lowp_ops, matmul_operands, segment, MatmulOperands};
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
    let el = Element::prepare(e, op)?;
    let (zero, one) = (e.index(0), e.index(1));
    // Columns first: mapped onto GPU threads, consecutive threads (x) take consecutive
    // columns, so that the store of C is coalesced and the load of A[i, k] is one broadcast.
    e.parallel_nest(
        &[zero, zero],
        &[el.ops.n, el.ops.m],
        &[one, one],
        |e, ji| el.emit(e, ji[1], ji[0]),
    );
    Ok(())
}

/// A `lowp.scaled_matmul`'s operands as the kernels read them, prepared once before their
/// loops: storage casts of the codes, the scale readers, the result type and the sizes.
/// Shared by every matmul lowering of the GPU passes.
pub(crate) struct Operands<'c, 'a> {
    pub(crate) o: MatmulOperands<'c, 'a>,
    /// The K segment over which neither scale changes.
    pub(crate) seg: Option<i64>,
    pub(crate) fa: lowp_formats::ScaledFormat,
    pub(crate) fb: lowp_formats::ScaledFormat,
    pub(crate) packed_a: bool,
    pub(crate) packed_b: bool,
    pub(crate) bits_a: Value<'c, 'a>,
    pub(crate) bits_b: Value<'c, 'a>,
    pub(crate) sa: Scaled<'c, 'a>,
    pub(crate) sb: Scaled<'c, 'a>,
    pub(crate) out_type: Type<'c>,
    /// Rows of A (and C), rows of B (columns of C), K.
    pub(crate) m: Value<'c, 'a>,
    pub(crate) n: Value<'c, 'a>,
    pub(crate) k: Value<'c, 'a>,
}

impl<'c, 'a> Operands<'c, 'a> {
    /// Read the op's operands and emit what the kernels share (before them, at `e`).
    pub(crate) fn read(e: &Emitter<'c, 'a>, op: OperationRef<'c, 'a>) -> Result<Self, PassError> {
        let o = matmul_operands(op)?;
        let la = layout_attr_of(op, "lhs_layout")?;
        let lb = layout_attr_of(op, "rhs_layout")?;
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
        let m = e.dim(o.lhs, 0);
        let n = e.dim(o.rhs, 0);
        let k = if packed_a {
            e.muli(e.dim(o.lhs, 1), e.index(2))
        } else {
            e.dim(o.lhs, 1)
        };
        Ok(Self {
            o,
            seg: segment(la, lb),
            fa,
            fb,
            packed_a,
            packed_b,
            bits_a,
            bits_b,
            sa,
            sb,
            out_type,
            m,
            n,
            k,
        })
    }
}

/// One output element of a `lowp.scaled_matmul`: its operands and K segments, prepared
/// once before the loops, and the body that computes C[i, j]. Shared with the generic GPU
/// kernel.
pub(crate) struct Element<'c, 'a> {
    pub(crate) ops: Operands<'c, 'a>,
    segments: Value<'c, 'a>,
    seg_len: Value<'c, 'a>,
}

impl<'c, 'a> Element<'c, 'a> {
    /// Read the op's operands and emit what the loops share (before them, at `e`).
    pub(crate) fn prepare(
        e: &Emitter<'c, 'a>,
        op: OperationRef<'c, 'a>,
    ) -> Result<Self, PassError> {
        let ops = Operands::read(e, op)?;
        let (segments, seg_len) = match ops.seg {
            Some(s) => (ceil_div(e, ops.k, e.index(s)), e.index(s)),
            None => (e.index(1), ops.k),
        };
        Ok(Self {
            ops,
            segments,
            seg_len,
        })
    }

    /// Compute and store C[i, j].
    pub(crate) fn emit(&self, e: &Emitter<'c, 'a>, i: Value<'c, 'a>, j: Value<'c, 'a>) {
        let (zero, one) = (e.index(0), e.index(1));
        let zf = e.f32(0.0);
        let (seg, sa, sb) = (self.ops.seg, &self.ops.sa, &self.ops.sb);
        let total = e.for_loop(zero, self.segments, one, &[zf], |e, s, w| {
            let k0 = e.muli(s, self.seg_len);
            let k1 = e.minui(e.addi(k0, self.seg_len), self.ops.k);
            let p = e.for_loop(k0, k1, one, &[zf], |e, kk, acc| {
                let x = codes::decode(
                    e,
                    self.ops.fa,
                    load_code(
                        e,
                        self.ops.bits_a,
                        self.ops.packed_a,
                        self.ops.fa.bit_width(),
                        i,
                        kk,
                    ),
                );
                let y = codes::decode(
                    e,
                    self.ops.fb,
                    load_code(
                        e,
                        self.ops.bits_b,
                        self.ops.packed_b,
                        self.ops.fb.bit_width(),
                        j,
                        kk,
                    ),
                );
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
            // The contract's one scale product, then the total times it.
            v = e.mulf(
                v,
                e.mulf(sa.block_value(e, i, zero), sb.block_value(e, j, zero)),
            );
        }
        let global = global_product(e, sa, sb);
        store_result(e, &self.ops.o, global, self.ops.out_type, v, i, j);
    }
}

/// The product of the NVFP4 global scales, `None` without them. Read in the kernel, not
/// on the host: on a GPU the host cannot read device memory.
pub(crate) fn global_product<'c, 'a>(
    e: &Emitter<'c, 'a>,
    sa: &Scaled<'c, 'a>,
    sb: &Scaled<'c, 'a>,
) -> Option<Value<'c, 'a>> {
    match (sa.global_value(e), sb.global_value(e)) {
        (None, None) => None,
        (ga, gb) => Some(e.mulf(
            ga.unwrap_or_else(|| e.f32(1.0)),
            gb.unwrap_or_else(|| e.f32(1.0)),
        )),
    }
}

/// The common tail of every matmul kernel: `v` (C[i, j] with its block and per-tensor /
/// per-channel scales applied) times the NVFP4 globals' product (from [`global_product`]),
/// plus the bias, rounded to the result type and stored.
pub(crate) fn store_result<'c, 'a>(
    e: &Emitter<'c, 'a>,
    o: &MatmulOperands<'c, 'a>,
    global: Option<Value<'c, 'a>>,
    out_type: Type<'c>,
    v: Value<'c, 'a>,
    i: Value<'c, 'a>,
    j: Value<'c, 'a>,
) {
    let v = final_value(e, o, global, out_type, v, j);
    e.store(v, o.out, &[i, j]);
}

/// [`store_result`]'s value of column `j`, not stored.
pub(crate) fn final_value<'c, 'a>(
    e: &Emitter<'c, 'a>,
    o: &MatmulOperands<'c, 'a>,
    global: Option<Value<'c, 'a>>,
    out_type: Type<'c>,
    mut v: Value<'c, 'a>,
    j: Value<'c, 'a>,
) -> Value<'c, 'a> {
    if let Some(g) = global {
        v = e.mulf(v, g);
    }
    if let Some(bias) = o.bias {
        v = e.addf(v, e.load(bias, &[j]));
    }
    if out_type != e.f32_type() {
        v = e.truncf(v, out_type);
    }
    v
}
