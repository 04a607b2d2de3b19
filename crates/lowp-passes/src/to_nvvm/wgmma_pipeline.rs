//! The pipelined FP8 `wgmma.mma_async` kernel of `lowp-to-nvvm` (sm_90a): A and B stored as
//! E4M3 / E5M2 codes (no translation), copied global -> shared memory by `cp.async` in a
//! ring of stages that runs ahead of the tensor cores.
//!
//! A block is two warpgroups (256 threads) computing 128 x 128 of C, each warpgroup 64 rows
//! of it with `wgmma.mma_async.sync.aligned.m64n128k32.f32.<a>.<b>` (the instruction of
//! `wgmma.rs`). K advances 128 codes per stage; `STAGES` stages of A (128 x 128 bytes) and B
//! (128 x 128 bytes) live in dynamic shared memory, each tile K-major in the 128-byte swizzle
//! of the wgmma descriptors (row r's 16-byte chunk c at `r * 128 + (c ^ r % 8) * 16`, 8-row
//! atoms of 1024 bytes; the ring starts on a 1024-byte boundary). Per stage every thread
//! issues 4 + 4 `cp.async.cg.shared.global` of 16 bytes (rows past M / N and chunks past K
//! copy 0 bytes and fill zeros) and commits them as one group; the loop:
//!
//! ```text
//! prologue: stages 0 .. STAGES-2 issued, one commit group each
//! for each stage s:
//!   cp.async.wait_group STAGES-2      // this thread's copies of stage s landed
//!   fence.proxy.async.shared::cta     // generic-proxy writes -> the async proxy (wgmma)
//!   barrier                           // everyone's copies landed; stage s-1 is consumed
//!   issue stage s+STAGES-1 into the slot stage s-1 used; commit
//!   per K segment of the stage (min(scale block, 128) codes):
//!     wgmma.fence; mma (scale-d 0), mma, .. (descriptor start + 32 bytes each)
//!     commit; wait 0; acc += part * (segment scales)
//! ```
//!
//! Partial sums go into the f32 accumulators at least every 128 of K, also for per-tensor
//! scales: Hopper's FP8 MMA accumulates with reduced precision, so (as DeepGEMM does) the
//! tensor cores never sum more than 128 products of a row; per-tensor / per-channel scales
//! are applied in the epilogue, block scales (MX, blockwise) per segment. NVFP4's 16-blocks,
//! translated formats, dynamic or unaligned K take `wgmma.rs`'s register-staged kernel.
//!
//! The emulation (`emulate=true`) runs the same chunk assignment, swizzled offsets, slot
//! ring and descriptors on the CPU: the copies into a buffer standing for the ring (at
//! address 0), each instruction by `wgmma::emulated_wgmma` decoding the descriptors
//! (swizzle included), phases one after the other.

use melior::dialect::arith::CmpiPredicate;
use melior::ir::operation::OperationBuilder;
use melior::ir::r#type::{DimSize, MemRefType, ShapedTypeLike};
use melior::ir::{Attribute, Identifier, OperationRef, Type, TypeLike, Value, ValueLike};

use super::wgmma::{self, Wgmma, ACC};
use crate::expand_quantize::ceil_div;
use crate::ir::Emitter;
use crate::matrix_kernel::{Kernel, Lane, Plan};
use crate::to_loops::matmul_operands;
use crate::PassError;

/// The block's tile of C, its K per stage and its threads.
const BM: i64 = 128;
const BN: i64 = 128;
const BK: i64 = 128;
const THREADS: i64 = 256;
/// Stages in the ring.
pub(super) const STAGES: i64 = 4;
/// Bytes of one operand's tile of a stage, and of a stage.
const TILE: i64 = BM * BK;
const STAGE: i64 = 2 * TILE;
/// Dynamic shared memory: the ring and the slack that aligns it to 1024 bytes.
pub(super) const SHARED: i64 = STAGES * STAGE + 1024;
/// 16-byte chunks each thread copies per operand and stage.
const CHUNKS: i64 = TILE / 16 / THREADS;
/// The stride offset of the swizzled layout: one 8-row atom.
const ATOM: i64 = 1024;

/// The plan and instruction for `op`, or why it needs the register-staged kernel.
pub(super) fn plan(op: OperationRef) -> Result<(Plan, Wgmma), String> {
    let (plan, instr) = wgmma::plan(op)?;
    if plan.a.table.is_some() || plan.b.table.is_some() {
        return Err("the codes are translated to FP8 on the way in".into());
    }
    if plan.step != 32 {
        return Err(format!("the scales change every {} along K", plan.step));
    }
    let span = plan.span.min(BK);
    if BK % span != 0 || plan.span % span != 0 {
        return Err(format!(
            "a scale segment of {} does not tile the {BK}-code stage",
            plan.span
        ));
    }
    let o = matmul_operands(op).map_err(|e| e.to_string())?;
    for (name, v) in [("lhs", o.lhs), ("rhs", o.rhs)] {
        let t = MemRefType::try_from(v.r#type()).map_err(|_| format!("{name} is not a memref"))?;
        // SAFETY: a live memref type.
        let identity = unsafe {
            mlir_sys::mlirAffineMapIsIdentity(mlir_sys::mlirMemRefTypeGetAffineMap(t.to_raw()))
        };
        match t.dim_size(1) {
            Ok(DimSize::Static(k)) if identity && k % 16 == 0 => {}
            _ => {
                return Err(format!(
                    "cp.async needs {name} row-major with a static K that is a multiple of 16"
                ))
            }
        }
    }
    Ok((plan, instr))
}

/// Where thread `tid`'s chunk `i` of an operand tile goes at stage K `k0`: whether it holds
/// codes (row inside the operand, chunk inside K), its row and K clamped into the operand
/// (a valid source address either way), and its byte offset in the swizzled tile.
struct Chunk<'c, 'a> {
    inside: Value<'c, 'a>,
    row: Value<'c, 'a>,
    k: Value<'c, 'a>,
    offset: Value<'c, 'a>,
}

fn chunk<'c, 'a>(
    e: &Emitter<'c, 'a>,
    tid: Value<'c, 'a>,
    i: i64,
    origin: Value<'c, 'a>,
    rows: Value<'c, 'a>,
    k: Value<'c, 'a>,
    k0: Value<'c, 'a>,
) -> Chunk<'c, 'a> {
    let (c8, c16) = (e.index(8), e.index(16));
    let c = e.addi(tid, e.index(THREADS * i));
    let (r, ch) = (e.divui(c, c8), e.remui(c, c8));
    let row = e.addi(origin, r);
    let kc = e.addi(k0, e.muli(ch, c16));
    let inside = e.andi(
        e.cmpi(CmpiPredicate::Ult, row, rows),
        e.cmpi(CmpiPredicate::Ult, kc, k),
    );
    let offset = e.addi(
        e.muli(r, e.index(128)),
        e.muli(e.xori(ch, e.remui(r, c8)), c16),
    );
    Chunk {
        inside,
        row: e.minui(row, e.subi(rows, e.index(1))),
        k: e.minui(kc, e.subi(k, c16)),
        offset,
    }
}

/// The wgmma descriptor of a K-major tile in the 128-byte swizzle at shared-memory byte
/// address `addr` (an `i64`, its atom 1024-byte aligned): start >> 4, leading offset 1
/// (unused), stride offset 1024 >> 4, layout type 1 (128-byte swizzle) in bits 62-63.
fn descriptor<'c, 'a>(e: &Emitter<'c, 'a>, addr: Value<'c, 'a>) -> Value<'c, 'a> {
    let start = e.shrui(e.andi(addr, e.int(64, 0x3FFFF)), e.int(64, 4));
    let fixed = (1i64 << 16) | ((ATOM >> 4) << 32) | (1i64 << 62);
    e.ori(start, e.int(64, fixed))
}

/// An `i64` address as an LLVM pointer in `space` (0 generic, 1 global, 3 shared); a global
/// pointer goes through the generic one (`cvta.to.global`).
fn pointer<'c, 'a>(e: &Emitter<'c, 'a>, addr: Value<'c, 'a>, space: u32) -> Value<'c, 'a> {
    let ty = |s: u32| {
        let text = if s == 0 {
            "!llvm.ptr".to_string()
        } else {
            format!("!llvm.ptr<{s}>")
        };
        Type::parse(e.ctx(), &text).expect("valid pointer type")
    };
    let cast = |name: &str, v: Value<'c, 'a>, to: u32| {
        e.val(
            OperationBuilder::new(name, e.loc())
                .add_operands(&[v])
                .add_results(&[ty(to)])
                .build()
                .expect("valid pointer cast"),
        )
    };
    if space == 1 {
        cast("llvm.addrspacecast", cast("llvm.inttoptr", addr, 0), 1)
    } else {
        cast("llvm.inttoptr", addr, space)
    }
}

/// The aligned base address of a memref as an `i64`.
fn base_address<'c, 'a>(e: &Emitter<'c, 'a>, memref: Value<'c, 'a>) -> Value<'c, 'a> {
    wgmma::smem_address(e, memref)
}

/// Per-operand facts of the copies: its codes (memref), rows, tile origin.
struct Side<'c, 'a> {
    bits: Value<'c, 'a>,
    rows: Value<'c, 'a>,
    origin: Value<'c, 'a>,
}

/// `nvvm.cp.async.shared.global` of 16 bytes from `src` to `dst`, `size` of them read (the
/// rest zero).
fn cp_async<'c, 'a>(
    e: &Emitter<'c, 'a>,
    dst: Value<'c, 'a>,
    src: Value<'c, 'a>,
    size: Value<'c, 'a>,
) {
    let ctx = e.ctx();
    e.insert(
        OperationBuilder::new("nvvm.cp.async.shared.global", e.loc())
            .add_operands(&[dst, src, size])
            .add_attributes(&[
                (
                    Identifier::new(ctx, "size"),
                    Attribute::parse(ctx, "16 : i32").expect("valid size"),
                ),
                (
                    Identifier::new(ctx, "modifier"),
                    Attribute::parse(ctx, "#nvvm<load_cache_modifier cg>").expect("valid modifier"),
                ),
            ])
            .build()
            .expect("valid nvvm.cp.async.shared.global"),
    );
}

/// The K segments of a stage: codes per segment, instructions per segment.
fn segment_shape(plan: &Plan) -> (i64, i64) {
    let span = plan.span.min(BK);
    (span, span / 32)
}

/// Lower `op` with the pipelined kernel: a `gpu.launch` with dynamic shared memory
/// (`emulate = false`) or its CPU emulation.
pub(super) fn lower<'c, 'a>(
    e: &Emitter<'c, 'a>,
    op: OperationRef<'c, 'a>,
    plan: &Plan,
    instr: &Wgmma,
    emulate: bool,
) -> Result<(), PassError> {
    let kn = Kernel::new(e, op, plan, instr)?;
    let (zero, one) = (e.index(0), e.index(1));
    let grid = [
        ceil_div(e, kn.ops.n, e.index(BN)),
        ceil_div(e, kn.ops.m, e.index(BM)),
    ];
    if emulate {
        e.parallel_nest(&[zero, zero], &grid, &[one, one], |e, b| {
            emulated_block(e, &kn, instr, b[1], b[0])
        });
        return Ok(());
    }
    e.gpu_launch_dynamic(
        [grid[0], grid[1], one],
        [e.index(THREADS), one, one],
        SHARED,
        |e, bid, tid, memory| hardware_block(e, &kn, instr, bid, tid[0], memory),
    );
    Ok(())
}

fn sides<'c, 'a>(
    e: &Emitter<'c, 'a>,
    kn: &Kernel<'_, 'c, 'a>,
    bm: Value<'c, 'a>,
    bn: Value<'c, 'a>,
) -> [Side<'c, 'a>; 2] {
    [
        Side {
            bits: kn.ops.bits_a,
            rows: kn.ops.m,
            origin: e.muli(bm, e.index(BM)),
        },
        Side {
            bits: kn.ops.bits_b,
            rows: kn.ops.n,
            origin: e.muli(bn, e.index(BN)),
        },
    ]
}

/// The lane of thread `tid` for the accumulator map and epilogue: its warpgroup's 64 rows.
fn lane<'c, 'a>(
    e: &Emitter<'c, 'a>,
    tid: Value<'c, 'a>,
    bm: Value<'c, 'a>,
    bn: Value<'c, 'a>,
) -> Lane<'c, 'a> {
    let warpgroup = e.divui(tid, e.index(wgmma::THREADS));
    Lane {
        lane: e.remui(tid, e.index(wgmma::THREADS)),
        row0: e.addi(
            e.muli(bm, e.index(BM)),
            e.muli(warpgroup, e.index(wgmma::BM)),
        ),
        col0: e.muli(bn, e.index(BN)),
    }
}

fn hardware_block<'c, 'a>(
    e: &Emitter<'c, 'a>,
    kn: &Kernel<'_, 'c, 'a>,
    instr: &Wgmma,
    bid: [Value<'c, 'a>; 3],
    tid: Value<'c, 'a>,
    memory: Value<'c, 'a>,
) {
    let (bm, bn) = (bid[1], bid[0]);
    let l = lane(e, tid, bm, bn);
    let i64t = e.int_type(64);
    // The ring's base: the dynamic shared memory rounded up to 1024 bytes.
    let raw = base_address(e, memory);
    let ring = e.andi(e.addi(raw, e.int(64, 1023)), e.int(64, !1023));
    let sides = sides(e, kn, bm, bn);
    let globals = [
        base_address(e, kn.ops.bits_a),
        base_address(e, kn.ops.bits_b),
    ];
    let k = kn.ops.k;
    let stages = ceil_div(e, k, e.index(BK));
    let as_i64 = |e: &Emitter<'c, 'a>, v: Value<'c, 'a>| e.index_castui(v, i64t);
    // Issue one stage's copies into its slot, and commit them as a group (also when the
    // stage is past K: the group counts stay uniform).
    let issue = |e: &Emitter<'c, 'a>, s: Value<'c, 'a>| {
        let live = e.cmpi(CmpiPredicate::Ult, s, stages);
        e.if_then(live, |e| {
            let k0 = e.muli(s, e.index(BK));
            let slot = e.muli(e.remui(s, e.index(STAGES)), e.index(STAGE));
            for (x, side) in sides.iter().enumerate() {
                let tile = e.addi(ring, as_i64(e, e.addi(slot, e.index(x as i64 * TILE))));
                for i in 0..CHUNKS {
                    let c = chunk(e, tid, i, side.origin, side.rows, k, k0);
                    let dst = pointer(e, e.addi(tile, as_i64(e, c.offset)), 3);
                    let at = e.addi(e.muli(c.row, k), c.k);
                    let src = pointer(e, e.addi(globals[x], as_i64(e, at)), 1);
                    let size = e.select(c.inside, e.i32(16), e.i32(0));
                    cp_async(e, dst, src, size);
                }
            }
        });
        e.bare("nvvm.cp.async.commit.group", &[]);
    };
    let (zero, one) = (e.index(0), e.index(1));
    e.for_loop(zero, e.index(STAGES - 1), one, &[], |e, s, _| {
        issue(e, s);
        vec![]
    });
    let (seg, per_seg) = segment_shape(kn.plan);
    let warpgroup = e.divui(tid, e.index(wgmma::THREADS));
    let a_rows = as_i64(e, e.muli(warpgroup, e.index(wgmma::BM * BK)));
    let f32t = e.f32_type();
    let inits = vec![e.f32(0.0); ACC];
    let done = e.for_loop(zero, stages, one, &inits, |e, s, acc| {
        e.bare(
            "nvvm.cp.async.wait.group",
            &[("n", &format!("{} : i32", STAGES - 2))],
        );
        e.bare(
            "nvvm.fence.proxy",
            &[
                ("kind", "#nvvm.proxy_kind<async.shared>"),
                ("space", "#nvvm.shared_space<cta>"),
            ],
        );
        e.bare("gpu.barrier", &[]);
        issue(e, e.addi(s, e.index(STAGES - 1)));
        let slot = as_i64(e, e.muli(e.remui(s, e.index(STAGES)), e.index(STAGE)));
        let a_tile = e.addi(e.addi(ring, slot), a_rows);
        let b_tile = e.addi(e.addi(ring, slot), e.int(64, TILE));
        let mut acc = acc.to_vec();
        for g in 0..BK / seg {
            let k0 = e.addi(e.muli(s, e.index(BK)), e.index(g * seg));
            let live = e.cmpi(CmpiPredicate::Ult, k0, k);
            acc = e.if_else(
                live,
                &vec![f32t; ACC],
                |e| {
                    e.bare("nvvm.wgmma.fence.aligned", &[]);
                    let mut d = wgmma::pack(e, &[]);
                    for j in 0..per_seg {
                        let off = e.int(64, g * seg + 32 * j);
                        let da = descriptor(e, e.addi(a_tile, off));
                        let db = descriptor(e, e.addi(b_tile, off));
                        d = wgmma::mma_async(e, instr, d, da, db, j > 0);
                    }
                    wgmma::commit_and_wait(e, || ());
                    kn.promote(e, &l, k0, &acc, &wgmma::unpack(e, d))
                },
                |_| acc.clone(),
            );
        }
        acc
    });
    e.bare("nvvm.cp.async.wait.group", &[("n", "0 : i32")]);
    kn.epilogue(e, &l, &done);
}

/// One block on the CPU: per stage the copies of all 256 threads into the ring buffer at
/// the same slots and swizzled offsets, then per warpgroup and segment the instructions on
/// the descriptors (`wgmma::emulated_wgmma`) and the promotion; accumulators in memory.
fn emulated_block<'c, 'a>(
    e: &Emitter<'c, 'a>,
    kn: &Kernel<'_, 'c, 'a>,
    instr: &Wgmma,
    bm: Value<'c, 'a>,
    bn: Value<'c, 'a>,
) {
    let (zero, one) = (e.index(0), e.index(1));
    let (f32t, i32t, i64t) = (e.f32_type(), e.int_type(32), e.int_type(64));
    let ring = e.alloca(i32t, STAGES * STAGE / 4);
    let acc_m = e.alloca(f32t, THREADS * ACC as i64);
    let part_m = e.alloca(f32t, wgmma::THREADS * ACC as i64);
    let sides = sides(e, kn, bm, bn);
    let k = kn.ops.k;
    let stages = ceil_div(e, k, e.index(BK));
    let at = |e: &Emitter<'c, 'a>, t: Value<'c, 'a>, x: i64| {
        e.addi(e.muli(t, e.index(ACC as i64)), e.index(x))
    };
    let threads = |e: &Emitter<'c, 'a>, n: i64, body: &dyn Fn(&Emitter<'c, 'a>, Value<'c, 'a>)| {
        e.for_loop(zero, e.index(n), one, &[], |e, t, _| {
            body(e, t);
            vec![]
        });
    };
    let clear = |e: &Emitter<'c, 'a>, mem, n| {
        threads(e, n, &|e, t| {
            for x in 0..ACC as i64 {
                e.store(e.f32(0.0), mem, &[at(e, t, x)]);
            }
        })
    };
    clear(e, acc_m, THREADS);
    let (seg, per_seg) = segment_shape(kn.plan);
    e.for_loop(zero, stages, one, &[], |e, s, _| {
        let k0 = e.muli(s, e.index(BK));
        let slot = e.muli(e.remui(s, e.index(STAGES)), e.index(STAGE));
        // The copies: 16 bytes each, zeros where the chunk is outside.
        threads(e, THREADS, &|e, t| {
            for (x, side) in sides.iter().enumerate() {
                let tile = e.addi(slot, e.index(x as i64 * TILE));
                for i in 0..CHUNKS {
                    let c = chunk(e, t, i, side.origin, side.rows, k, k0);
                    let base = e.divui(e.addi(tile, c.offset), e.index(4));
                    for w in 0..4 {
                        let word = (0..4).fold(e.i32(0), |acc, b| {
                            let byte = e.load(side.bits, &[c.row, e.addi(c.k, e.index(4 * w + b))]);
                            e.ori(acc, e.shli(e.extui(byte, i32t), e.i32(8 * b as u32)))
                        });
                        let word = e.select(c.inside, word, e.i32(0));
                        e.store(word, ring, &[e.addi(base, e.index(w))]);
                    }
                }
            }
        });
        for warpgroup in 0..THREADS / wgmma::THREADS {
            for g in 0..BK / seg {
                let k0 = e.addi(k0, e.index(g * seg));
                e.if_then(e.cmpi(CmpiPredicate::Ult, k0, k), |e| {
                    clear(e, part_m, wgmma::THREADS);
                    for j in 0..per_seg {
                        let off = g * seg + 32 * j;
                        let tile = |x: i64| {
                            let rows = if x == 0 {
                                warpgroup * wgmma::BM * BK
                            } else {
                                0
                            };
                            let addr = e.addi(slot, e.index(x * TILE + rows + off));
                            descriptor(e, e.index_castui(addr, i64t))
                        };
                        wgmma::emulated_wgmma(e, instr, [tile(0), tile(1)], [ring, ring], part_m);
                    }
                    threads(e, wgmma::THREADS, &|e, t| {
                        let tid = e.addi(t, e.index(warpgroup * wgmma::THREADS));
                        let l = lane(e, tid, bm, bn);
                        let acc: Vec<Value> = (0..ACC as i64)
                            .map(|x| e.load(acc_m, &[at(e, tid, x)]))
                            .collect();
                        let part: Vec<Value> = (0..ACC as i64)
                            .map(|x| e.load(part_m, &[at(e, t, x)]))
                            .collect();
                        for (x, v) in kn.promote(e, &l, k0, &acc, &part).into_iter().enumerate() {
                            e.store(v, acc_m, &[at(e, tid, x as i64)]);
                        }
                    });
                });
            }
        }
        vec![]
    });
    threads(e, THREADS, &|e, t| {
        let l = lane(e, t, bm, bn);
        let acc: Vec<Value> = (0..ACC as i64)
            .map(|x| e.load(acc_m, &[at(e, t, x)]))
            .collect();
        kn.epilogue(e, &l, &acc);
    });
}
