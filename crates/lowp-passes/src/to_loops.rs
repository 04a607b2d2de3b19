//! `lowp-to-loops`: the generic CPU lowering. `lowp.scaled_matmul` becomes a decode phase
//! and a register-blocked f32 GEMM in `scf` + `vector` + `arith` + `memref`; the
//! quantization ops left in the function are expanded as by `lowp-expand-quantize`.
//!
//! Before:
//! ```mlir
//! lowp.scaled_matmul %a[%sa], %b[%sb] into %c layouts(#lowp.mx<32>, #lowp.mx<32>)
//!     : memref<128x256xf4E2M1FN>[memref<128x8xf8E8M0FNU>], ... -> memref<128x64xf32>
//! ```
//! After (shape of it):
//! ```mlir
//! %ap = memref.alloc(...) : memref<?x?x6xf32>        // A decoded into 6-row tiles
//! %bp = memref.alloc(...) : memref<?x?x16xf32>       // B decoded into 16-column panels
//! %sa = ... %sb = ...                                 // scales decoded per K segment
//! scf.for %kc = ... step 256 {                        // K blocks
//!  scf.for %nc = ... step 32 {                        // N blocks: 256 x 512 of B in L2
//!   scf.parallel (%mt) = ... {                        // 6-row tiles, one per thread
//!     scf.for %nb = ... {                             // 16-column panels of the block
//!       scf.for %seg = ... step 32 {                  // one scale segment
//!         %p:12 = scf.for %k = ... iter_args(...) -> (vector<8xf32>, ...) {
//!           vector.broadcast / vector.load / vector.fma   // 6x16 outer product
//!         }
//!         vector.fma %p#i, (sa * sb), %w              // scaled once per segment
//! ...
//! // write-back: (per-tensor / per-channel scales,) NVFP4 globals, bias, f32 or bf16
//! ```
//!
//! Numerics follow the oracle (`lowp_formats::scaled_matmul`): operands are decoded
//! bit-exactly and unscaled, each K segment (where neither operand's scale changes; the gcd
//! of the two K blocks when neither divides the other) is summed in f32 and multiplied once
//! by `sa * sb`; per-tensor and per-channel scales multiply the total (as one product
//! `sa * sb`, the f32 value the contract rounds), then the NVFP4 globals,
//! then the bias. The summation order inside a segment is the micro-kernel's, so results
//! agree with the oracle within the f32 summation bound (`lowp_formats::Reference::check`).
//!
//! The micro-kernel keeps a 6 x 16 tile of partial sums in twelve `vector<8xf32>`
//! registers (AVX2: 12 of 16 ymm; with `lanes=16`, 12 x 32 in 24 of 32 zmm); 6 broadcasts
//! and 2 loads feed 12 FMAs per k, under the 2-loads-per-cycle limit. A is packed into
//! 6-row tiles and B into 16-column panels, so that a tile's values of one k are one
//! contiguous line; K is blocked by `kc` and N by `nc` so that the block of B the row tiles
//! sweep stays in L2; decode, GEMM and write-back loops over rows run in parallel.
//!
//! Options:
//! * `parallel=true|false` — emit the row-tile loop as `scf.parallel` (default true); a
//!   pipeline turns it into threads with `convert-scf-to-openmp`, or into a plain loop.
//! * `kc=N` — the K block (default 256; rounded up to a multiple of the scale segment).
//! * `nc=N` — the N block in columns (default 512: a 256 x 512 f32 block of B is 512 KiB,
//!   inside a 1-2 MiB L2 with room for A).
//! * `lanes=8|16` — f32 lanes per vector: 8 (AVX2, the default) or 16 (AVX-512, with a
//!   12 x 32 tile). `lowp-jit` picks 16 when the host has AVX-512F.
//!
//! Runs on `func.func`. Dependent dialects: arith, math, memref, scf, vector.

use lowp_formats::{ScaleLayout, ScaledFormat};
use melior::dialect::arith::CmpiPredicate;

use melior::ir::operation::{OperationLike, WalkOrder, WalkResult};
use melior::ir::{OperationRef, ShapedTypeLike, Value, ValueLike};

use crate::expand_quantize::{
    ceil_div, code_format, decode_table, expand_op, layout_attr_of, load_code, loop_dialects,
    operand, storage_cast, unsupported, Decode, Scaled,
};
use crate::ir::Emitter;
use crate::registry::{OptionDef, OptionKind, PassDef, PassOptions};
use crate::PassError;

/// The register tile of the micro-kernel: `mr` rows by two vectors of `lanes` floats.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tile {
    /// f32 lanes of one vector register (8: AVX2, 16: AVX-512).
    pub lanes: i64,
    /// Rows of the tile.
    pub mr: i64,
}

impl Tile {
    /// The tile for a vector width: 6 x 16 with 8 lanes (12 of 16 ymm for the partial sums,
    /// 2 for B, 1 broadcast); 12 x 32 with 16 lanes (24 of 32 zmm). Per k, `mr` broadcasts
    /// and 2 vector loads feed `2 mr` FMAs: under two loads per FMA pair, so the FMA ports,
    /// not the loads, set the pace.
    pub const fn for_lanes(lanes: i64) -> Self {
        Self {
            lanes,
            mr: if lanes >= 16 { 12 } else { 6 },
        }
    }

    /// Columns of the tile: two vectors.
    pub const fn nr(self) -> i64 {
        2 * self.lanes
    }
}

/// The pass definition.
pub const PASS: PassDef = PassDef {
    argument: "lowp-to-loops",
    name: "LowpToLoops",
    description: "Lower lowp.scaled_matmul (and any quantization op) to a decode phase and a \
                  register-blocked, vectorized f32 GEMM in scf/vector/arith/memref",
    op_name: Some("func.func"),
    options: &[
        OptionDef {
            name: "parallel",
            default: "true",
            description:
                "Emit the row-tile loop as scf.parallel (threads via convert-scf-to-openmp)",
            kind: OptionKind::Bool,
        },
        OptionDef {
            name: "kc",
            default: "256",
            description: "K block of the GEMM (rounded up to a multiple of the scale segment)",
            kind: OptionKind::UInt {
                min: 1,
                max: 1 << 20,
            },
        },
        OptionDef {
            name: "nc",
            default: "512",
            description: "N block of the GEMM in columns (rounded up to the tile width)",
            kind: OptionKind::UInt {
                min: 1,
                max: 1 << 20,
            },
        },
        OptionDef {
            name: "lanes",
            default: "8",
            description: "f32 lanes per vector: 8 (AVX2, 6x16 tile) or 16 (AVX-512, 12x32 tile)",
            kind: OptionKind::Choice(&["8", "16"]),
        },
    ],
    dependent_dialects: loop_dialects,
    run,
};

/// Tiling parameters of one matmul.
#[derive(Clone, Copy, Debug)]
struct Plan {
    parallel: bool,
    tile: Tile,
    /// Tile-width panels of B per N block.
    nc_panels: i64,
    /// K segment over which both scales are constant; `None` when neither operand's scale
    /// changes along K (one segment: scales applied in the write-back).
    seg: Option<i64>,
    /// K block, a multiple of `seg`.
    kc: i64,
}

fn gcd(a: i64, b: i64) -> i64 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

/// The K block of a layout when its scale changes along K.
fn k_block(l: ScaleLayout) -> Option<i64> {
    match l {
        ScaleLayout::Mx { block } | ScaleLayout::Nvfp4 { block, .. } => Some(block as i64),
        ScaleLayout::Blockwise { cols, .. } => Some(cols as i64),
        ScaleLayout::PerTensor | ScaleLayout::PerChannel => None,
    }
}

/// The K segment over which neither operand's scale changes (the gcd of the two K blocks;
/// `None` when neither scale changes along K).
pub(crate) fn segment(la: ScaleLayout, lb: ScaleLayout) -> Option<i64> {
    match (k_block(la), k_block(lb)) {
        (Some(a), Some(b)) => Some(gcd(a, b)),
        (a, b) => a.or(b),
    }
}

fn plan(la: ScaleLayout, lb: ScaleLayout, options: &PassOptions) -> Plan {
    let seg = segment(la, lb);
    let kc = options.uint("kc") as i64;
    let kc = match seg {
        Some(s) => (kc + s - 1) / s * s,
        None => kc,
    };
    let tile = Tile::for_lanes(if options.choice("lanes") == "16" {
        16
    } else {
        8
    });
    let nc = options.uint("nc") as i64;
    Plan {
        parallel: options.flag("parallel"),
        tile,
        nc_panels: (nc + tile.nr() - 1) / tile.nr(),
        seg,
        kc,
    }
}

fn run<'c, 'a>(func: OperationRef<'c, 'a>, options: &PassOptions) -> Result<(), PassError> {
    lower_lowp_ops(func, |e, op| lower_scaled_matmul(e, op, options, func))
}

/// Replace every lowp op of `func` (but `lowp.storage_cast`): `lowp.scaled_matmul` through
/// `matmul`, the quantization ops as `lowp-expand-quantize` does (bit decode). Shared by the
/// matmul lowerings.
pub(crate) fn lower_lowp_ops<'c, 'a>(
    func: OperationRef<'c, 'a>,
    matmul: impl Fn(&Emitter<'c, 'a>, OperationRef<'c, 'a>) -> Result<(), PassError>,
) -> Result<(), PassError> {
    // `to_ref` borrows the ContextRef itself: keep it alive for the whole run.
    let ctx_ref = func.context();
    // SAFETY: the context outlives the pass run, and `ctx_ref` outlives `ctx`.
    let ctx = unsafe { ctx_ref.to_ref() };
    let mut targets = Vec::new();
    func.walk(WalkOrder::PreOrder, |op| {
        let name = op.name();
        if name
            .as_string_ref()
            .as_str()
            .is_ok_and(|n| n.starts_with("lowp.") && n != "lowp.storage_cast")
        {
            targets.push(op.to_raw());
        }
        WalkResult::Advance
    });
    for raw in targets {
        // SAFETY: collected from the live function above and not yet erased.
        let op: OperationRef<'c, 'a> = unsafe { OperationRef::from_raw(raw) };
        crate::expand_quantize::require_memrefs(op)?;
        let e = Emitter::before(ctx, op).ok_or_else(|| unsupported(op, "op is not in a block"))?;
        if op.name().as_string_ref().as_str() == Ok("lowp.scaled_matmul") {
            matmul(&e, op)?;
        } else {
            expand_op(&e, op, Decode::Bits, func)?;
        }
        // SAFETY: the op has no results and its replacement is in place.
        unsafe { mlir_sys::mlirOperationDestroy(raw) };
    }
    Ok(())
}

/// Operand indices of `lowp.scaled_matmul` from its `operandSegmentSizes`.
pub(crate) struct MatmulOperands<'c, 'a> {
    pub(crate) lhs: Value<'c, 'a>,
    pub(crate) lhs_scales: Value<'c, 'a>,
    pub(crate) lhs_global: Option<Value<'c, 'a>>,
    pub(crate) rhs: Value<'c, 'a>,
    pub(crate) rhs_scales: Value<'c, 'a>,
    pub(crate) rhs_global: Option<Value<'c, 'a>>,
    pub(crate) bias: Option<Value<'c, 'a>>,
    pub(crate) out: Value<'c, 'a>,
}

pub(crate) fn matmul_operands<'c, 'a>(
    op: OperationRef<'c, 'a>,
) -> Result<MatmulOperands<'c, 'a>, PassError> {
    let sizes = op
        .attribute("operandSegmentSizes")
        .map_err(|_| unsupported(op, "missing operandSegmentSizes"))?;
    let sizes = crate::ir::dense_i32s(sizes)
        .filter(|s| s.len() == 8)
        .ok_or_else(|| unsupported(op, "operandSegmentSizes is not 8 x i32"))?;
    let mut next = 0usize;
    let mut take = |present: bool| -> Result<Option<Value<'c, 'a>>, PassError> {
        if !present {
            return Ok(None);
        }
        let v = operand(op, next)?;
        next += 1;
        Ok(Some(v))
    };
    let lhs = take(true)?.expect("present");
    let lhs_scales = take(true)?.expect("present");
    let lhs_global = take(sizes[2] == 1)?;
    let rhs = take(true)?.expect("present");
    let rhs_scales = take(true)?.expect("present");
    let rhs_global = take(sizes[5] == 1)?;
    let bias = take(sizes[6] == 1)?;
    let out = take(true)?.expect("present");
    Ok(MatmulOperands {
        lhs,
        lhs_scales,
        lhs_global,
        rhs,
        rhs_scales,
        rhs_global,
        bias,
        out,
    })
}

/// One operand's decode information.
struct Side<'c, 'a> {
    format: ScaledFormat,
    packed: bool,
    bits: Value<'c, 'a>,
    scaled: Scaled<'c, 'a>,
    rows: Value<'c, 'a>,
}

fn lower_scaled_matmul<'c, 'a>(
    e: &Emitter<'c, 'a>,
    op: OperationRef<'c, 'a>,
    options: &PassOptions,
    func: OperationRef<'c, 'a>,
) -> Result<(), PassError> {
    let o = matmul_operands(op)?;
    let la = layout_attr_of(op, "lhs_layout")?;
    let lb = layout_attr_of(op, "rhs_layout")?;
    let plan = plan(la, lb, options);
    let side = |codes: Value<'c, 'a>, scales, global, layout| -> Result<Side<'c, 'a>, PassError> {
        let (format, packed) = code_format(op, codes)?;
        let bits =
            storage_cast(e, codes).ok_or_else(|| unsupported(op, "codes are not castable"))?;
        Ok(Side {
            format,
            packed,
            bits,
            scaled: Scaled::new(e, op, layout, scales, global)?,
            rows: e.dim(codes, 0),
        })
    };
    let a = side(o.lhs, o.lhs_scales, o.lhs_global, la)?;
    let b = side(o.rhs, o.rhs_scales, o.rhs_global, lb)?;
    // Codes decode through a table of one f32 per code (one load instead of ~15 integer
    // ops; 64 bytes for FP4, so it stays in L1).
    let table_a = decode_table(e, func, a.format)?;
    let table_b = decode_table(e, func, b.format)?;
    let f32t = e.f32_type();
    let (zero, one) = (e.index(0), e.index(1));
    let Tile { lanes, mr: mr_c } = plan.tile;
    let nr_c = plan.tile.nr();
    let vl = lanes as u64;
    let (mr, nr) = (e.index(mr_c), e.index(nr_c));
    let m = a.rows;
    let n = b.rows;
    let k = {
        let d = e.dim(o.lhs, 1);
        if a.packed {
            e.muli(d, e.index(2))
        } else {
            d
        }
    };
    let m_tiles = ceil_div(e, m, mr);
    let n_panels = ceil_div(e, n, nr);
    let mp = e.muli(m_tiles, mr);
    let np = e.muli(n_panels, nr);
    let segments = match plan.seg {
        Some(s) => ceil_div(e, k, e.index(s)),
        None => one,
    };
    let seg_len = e.index(plan.seg.unwrap_or(plan.kc));
    let seg_stride = e.index(plan.seg.unwrap_or(1));

    // Run `body` over 0..n, as scf.parallel when the plan allows threads.
    let par =
        |e: &Emitter<'c, 'a>, n: Value<'c, 'a>, body: &dyn Fn(&Emitter<'c, 'a>, Value<'c, 'a>)| {
            if plan.parallel {
                e.parallel_loop(zero, n, one, |e, i| body(e, i));
            } else {
                e.for_loop(zero, n, one, &[], |e, i, _| {
                    body(e, i);
                    vec![]
                });
            }
        };

    // ---- decode phase ----------------------------------------------------------------
    // A in row tiles, transposed so that a tile's mr values of one k are contiguous; B in
    // column panels likewise; padding rows and columns are zero.
    let ap = e.alloc(f32t, &[None, None, Some(mr_c)], &[m_tiles, k], 64);
    let bp = e.alloc(f32t, &[None, None, Some(nr_c)], &[n_panels, k], 64);
    let sa = e.alloc(f32t, &[None, None], &[mp, segments], 64);
    let sbp = e.alloc(f32t, &[None, None, Some(nr_c)], &[n_panels, segments], 64);
    let w = e.alloc(f32t, &[None, None], &[mp, np], 64);
    let zf = e.f32(0.0);

    let decode_panels = |e: &Emitter<'c, 'a>,
                         side: &Side<'c, 'a>,
                         table: Value<'c, 'a>,
                         packed_to: Value<'c, 'a>,
                         scales_to: Option<Value<'c, 'a>>,
                         width: Value<'c, 'a>,
                         rows: Value<'c, 'a>,
                         panel: Value<'c, 'a>| {
        // Codes: k outer, the tile's rows inner, so the packed tile is written in order
        // (each row's codes stay in L1 across consecutive k).
        e.for_loop(zero, k, one, &[], |e, kk, _| {
            e.for_loop(zero, width, one, &[], |e, j, _| {
                let row = e.addi(e.muli(panel, width), j);
                let real = e.cmpi(CmpiPredicate::Ult, row, rows);
                let rr = e.minui(row, e.subi(rows, one));
                let code = e.index_castui(
                    load_code(e, side.bits, side.packed, side.format.bit_width(), rr, kk),
                    e.index_type(),
                );
                let v = e.load(table, &[code]);
                e.store(e.select(real, v, zf), packed_to, &[panel, kk, j]);
                vec![]
            });
            vec![]
        });
        e.for_loop(zero, width, one, &[], |e, j, _| {
            let row = e.addi(e.muli(panel, width), j);
            let real = e.cmpi(CmpiPredicate::Ult, row, rows);
            let rr = e.minui(row, e.subi(rows, one));
            e.for_loop(zero, segments, one, &[], |e, s, _| {
                let v = side.scaled.block_value(e, rr, e.muli(s, seg_stride));
                let v = e.select(real, v, zf);
                match scales_to {
                    Some(t) => e.store(v, t, &[panel, s, j]),
                    None => e.store(v, sa, &[row, s]),
                }
                vec![]
            });
            vec![]
        });
    };
    par(e, m_tiles, &|e, t| {
        decode_panels(e, &a, table_a, ap, None, mr, m, t)
    });
    par(e, n_panels, &|e, p| {
        decode_panels(e, &b, table_b, bp, Some(sbp), nr, n, p)
    });
    // W = 0.
    let zv = e.zero_vector(vl);
    par(e, mp, &|e, r| {
        e.for_loop(zero, np, e.index(lanes), &[], |e, c, _| {
            e.vstore(zv, w, &[r, c]);
            vec![]
        });
    });

    // ---- GEMM ------------------------------------------------------------------------
    let kc = e.index(plan.kc);
    let ncp = e.index(plan.nc_panels);
    let lane = e.index(lanes);
    e.for_loop(zero, k, kc, &[], |e, k0, _| {
        let k1 = e.minui(e.addi(k0, kc), k);
        e.for_loop(zero, n_panels, ncp, &[], |e, p0, _| {
            let p1 = e.minui(e.addi(p0, ncp), n_panels);
            par(e, m_tiles, &|e, mt| {
                let m0 = e.muli(mt, mr);
                e.for_loop(p0, p1, one, &[], |e, pb, _| {
                    let n0 = e.muli(pb, nr);
                    e.for_loop(k0, k1, seg_len, &[], |e, s0, _| {
                        let s1 = e.minui(e.addi(s0, seg_len), k1);
                        let inits: Vec<Value> = (0..2 * mr_c).map(|_| zv).collect();
                        let partial = e.for_loop(s0, s1, one, &inits, |e, kk, acc| {
                            let b0 = e.vload(bp, &[pb, kk, zero], vl);
                            let b1 = e.vload(bp, &[pb, kk, lane], vl);
                            let mut next = Vec::with_capacity(2 * mr_c as usize);
                            for i in 0..mr_c as usize {
                                let av = e.broadcast(e.load(ap, &[mt, kk, e.index(i as i64)]), vl);
                                next.push(e.fma(av, b0, acc[2 * i]));
                                next.push(e.fma(av, b1, acc[2 * i + 1]));
                            }
                            next
                        });
                        // Scale the segment once (or not at all: per-tensor / per-channel
                        // scales multiply the total in the write-back).
                        let scaled = plan.seg.map(|s| {
                            let seg = e.divui(s0, e.index(s));
                            let sb = [
                                e.vload(sbp, &[pb, seg, zero], vl),
                                e.vload(sbp, &[pb, seg, lane], vl),
                            ];
                            (seg, sb)
                        });
                        for i in 0..mr_c as usize {
                            let row = e.addi(m0, e.index(i as i64));
                            let sav =
                                scaled.map(|(seg, _)| e.broadcast(e.load(sa, &[row, seg]), vl));
                            for j in 0..2usize {
                                let col = e.addi(n0, e.index(lanes * j as i64));
                                let wv = e.vload(w, &[row, col], vl);
                                let p = partial[2 * i + j];
                                let updated = match (scaled, sav) {
                                    (Some((_, sb)), Some(sav)) => e.fma(p, e.mulf(sav, sb[j]), wv),
                                    _ => e.addf(wv, p),
                                };
                                e.vstore(updated, w, &[row, col]);
                            }
                        }
                        vec![]
                    });
                    vec![]
                });
            });
            vec![]
        });
        vec![]
    });

    // ---- write-back ------------------------------------------------------------------
    let global = match (a.scaled.global_value(e), b.scaled.global_value(e)) {
        (None, None) => None,
        (ga, gb) => Some(e.mulf(
            ga.unwrap_or_else(|| e.f32(1.0)),
            gb.unwrap_or_else(|| e.f32(1.0)),
        )),
    };
    let out_type = melior::ir::r#type::MemRefType::try_from(o.out.r#type())
        .map_err(|_| unsupported(op, "result is not a memref"))?
        .element();
    let bf16 = out_type != f32t;
    par(e, m, &|e, r| {
        e.for_loop(zero, n, one, &[], |e, c, _| {
            let mut v = e.load(w, &[r, c]);
            if plan.seg.is_none() {
                let pb = e.divui(c, nr);
                let nn = e.remui(c, nr);
                // The contract's one scale product (`sa * sb` first: the total times
                // one scale alone may leave f32's range where the product does not).
                v = e.mulf(
                    v,
                    e.mulf(e.load(sa, &[r, zero]), e.load(sbp, &[pb, zero, nn])),
                );
            }
            if let Some(g) = global {
                v = e.mulf(v, g);
            }
            if let Some(bias) = o.bias {
                v = e.addf(v, e.load(bias, &[c]));
            }
            if bf16 {
                v = e.truncf(v, out_type);
            }
            e.store(v, o.out, &[r, c]);
            vec![]
        });
    });
    for buffer in [ap, bp, sa, sbp, w] {
        e.dealloc(buffer);
    }
    Ok(())
}
