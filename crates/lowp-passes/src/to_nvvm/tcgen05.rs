//! The FP8 `tcgen05.mma` kernel of `lowp-to-nvvm` (sm_100a), on the pieces the wgmma kernel
//! uses (the copies into K-major unswizzled shared memory, the flat K loop with register
//! prefetch, segments and scales, the epilogue).
//!
//! A block is one CTA of 128 threads computing 128 x 64 of C with
//! `tcgen05.mma.cta_group::1.kind::f8f6f4` (M 128, N 64, K 32): A and B in shared memory
//! behind tcgen05 matrix descriptors, the accumulator D in tensor memory (64 columns,
//! allocated by warp 0, `tcgen05.alloc`). Per K step: barrier, the threads' words into
//! shared memory, `fence.proxy.async`, barrier, thread 0 issues the MMA (`enable_input_d`
//! off on a segment's first step) and commits it to an mbarrier, every thread loads the
//! next step's words, waits on the mbarrier's phase and fences (`tcgen05.fence
//! after_thread_sync`; every barrier that orders tensor-memory accesses between threads
//! sits between `before_thread_sync` and `after_thread_sync` fences); at a segment's end each warp reads its 32 rows of D
//! (`tcgen05.ld.32x32b.x64`: thread t holds row t) and adds them to its accumulators with
//! the segment's scales. Block-scaled kinds (mxf8f6f4, mxf4, mxf4nvf4 with scales in
//! tensor memory) are not used yet: scales are applied per segment, as on the other chips.
//!
//! Instruction descriptor (PTX ISA, `.kind::f8f6f4`): D type F32 (bits 4-5 = 1), A and B
//! types (bits 7-9, 10-12: E4M3 0, E5M2 1), K-major A and B (bits 15, 16 = 0), N >> 3 (bits
//! 17-22), M >> 4 (bits 24-28). Shared-memory descriptor: start address >> 4 (bits 0-13),
//! leading and stride byte offsets >> 4 (16-29, 32-45), the fixed 0b001 (46-48), no
//! swizzle. The emulation (`emulate=true`) computes each MMA from these two descriptors
//! (types and sizes from the instruction descriptor, code addresses from the shared-memory
//! ones) into a buffer standing for tensor memory.

use lowp_formats::ScaledFormat;
use melior::dialect::arith::CmpiPredicate;
use melior::ir::operation::OperationBuilder;
use melior::ir::{Attribute, Identifier, OperationRef, Type, Value};

use super::wgmma::{
    copied_word, copy_tiles, segment_end, smem_address, smem_shape, store_tiles, LBO, SBO, THREADS,
};
use crate::codes;
use crate::expand_quantize::ceil_div;
use crate::ir::Emitter;
use crate::matrix_kernel::{Instr, Kernel, Lane, Plan, Shape};
use crate::PassError;

/// The block's tile of C (the MMA's M and N) and the columns of tensor memory it takes.
const BM: i64 = 128;
const BN: i64 = 64;
/// Accumulators per thread: its row of D.
const ACC: usize = BN as usize;
/// 32-bit words of the A and B tiles in shared memory.
const A_WORDS: i64 = BM * 32 / 4;
const B_WORDS: i64 = BN * 32 / 4;

/// `tcgen05.mma.cta_group::1.kind::f8f6f4` with M 128, N 64; its "registers" are the words
/// each thread copies into shared memory, its accumulators the thread's row of D.
pub(super) struct Tcgen05 {
    a: ScaledFormat,
    b: ScaledFormat,
}

/// The plan and instruction for `op`, or why it needs another kernel.
pub(super) fn plan(op: OperationRef) -> Result<(Plan, Tcgen05), String> {
    let (plan, a, b) = super::fp8_plan(op)?;
    Ok((plan, Tcgen05 { a, b }))
}

impl Instr for Tcgen05 {
    fn shape(&self) -> Shape {
        smem_shape(BM, BN, ACC)
    }

    fn a_reg<'c, 'a>(
        &self,
        e: &Emitter<'c, 'a>,
        lane: Value<'c, 'a>,
        r: usize,
    ) -> (Value<'c, 'a>, Value<'c, 'a>) {
        copied_word(e, lane, r)
    }

    fn b_reg<'c, 'a>(
        &self,
        e: &Emitter<'c, 'a>,
        lane: Value<'c, 'a>,
        r: usize,
    ) -> (Value<'c, 'a>, Value<'c, 'a>) {
        copied_word(e, lane, r)
    }

    /// Thread t reads lane t of tensor memory (warp w the lanes 32w..32w+32): row t, the
    /// column is the register.
    fn acc<'c, 'a>(
        &self,
        e: &Emitter<'c, 'a>,
        lane: Value<'c, 'a>,
        j: usize,
    ) -> (Value<'c, 'a>, Value<'c, 'a>) {
        (lane, e.index(j as i64))
    }
}

/// The PTX type code of an operand in the instruction descriptor.
fn type_code(f: ScaledFormat) -> u32 {
    if f == ScaledFormat::F8E4M3 {
        0
    } else {
        1
    }
}

impl Tcgen05 {
    /// The 32-bit instruction descriptor.
    fn idesc(&self) -> u32 {
        (1 << 4)
            | (type_code(self.a) << 7)
            | (type_code(self.b) << 10)
            | (((BN >> 3) as u32) << 17)
            | (((BM >> 4) as u32) << 24)
    }
}

/// The tcgen05 shared-memory descriptor of a tile at byte address `base` (an `i64`).
fn descriptor<'c, 'a>(e: &Emitter<'c, 'a>, base: Value<'c, 'a>) -> Value<'c, 'a> {
    let field = |v: i64, at: i64| e.int(64, ((v >> 4) & 0x3FFF) << at);
    let start = e.shrui(e.andi(base, e.int(64, 0x3FFFF)), e.int(64, 4));
    let fixed = e.int(64, 1 << 46);
    e.ori(e.ori(e.ori(start, field(LBO, 16)), field(SBO, 32)), fixed)
}

/// An LLVM pointer in address space `space` to the integer address `v`.
fn pointer<'c, 'a>(e: &Emitter<'c, 'a>, v: Value<'c, 'a>, space: u32) -> Value<'c, 'a> {
    let t = Type::parse(e.ctx(), &format!("!llvm.ptr<{space}>")).expect("valid pointer type");
    e.val(
        OperationBuilder::new("llvm.inttoptr", e.loc())
            .add_operands(&[v])
            .add_results(&[t])
            .build()
            .expect("valid llvm.inttoptr"),
    )
}

/// An NVVM op with operands and attributes (given as text), no results.
fn nvvm<'c, 'a>(
    e: &Emitter<'c, 'a>,
    name: &str,
    operands: &[Value<'c, 'a>],
    attrs: &[(&str, &str)],
) {
    let attrs: Vec<_> = attrs
        .iter()
        .map(|&(n, v)| {
            (
                Identifier::new(e.ctx(), n),
                Attribute::parse(e.ctx(), v).expect("valid attribute"),
            )
        })
        .collect();
    e.insert(
        OperationBuilder::new(name, e.loc())
            .add_operands(operands)
            .add_attributes(&attrs)
            .build()
            .expect("valid NVVM op"),
    );
}

/// Lower `op` with the tcgen05 kernel: a `gpu.launch` (`emulate = false`) or its CPU
/// emulation.
pub(super) fn lower<'c, 'a>(
    e: &Emitter<'c, 'a>,
    op: OperationRef<'c, 'a>,
    plan: &Plan,
    instr: &Tcgen05,
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
    let workgroup = |words: i64, t: &str| {
        Type::parse(
            e.ctx(),
            &format!("memref<{words}x{t}, #gpu.address_space<workgroup>>"),
        )
        .expect("valid workgroup memref type")
    };
    e.gpu_launch(
        [grid[0], grid[1], one],
        [e.index(THREADS), one, one],
        &[
            workgroup(A_WORDS, "i32"),
            workgroup(B_WORDS, "i32"),
            workgroup(1, "i32"),
            workgroup(1, "i64"),
        ],
        |e, bid, tid, wg| {
            let (smem, slot, mbar) = ([wg[0], wg[1]], wg[2], wg[3]);
            let tid = tid[0];
            let l = Lane {
                lane: tid,
                row0: e.muli(bid[1], e.index(BM)),
                col0: e.muli(bid[0], e.index(BN)),
            };
            let i32t = e.int_type(32);
            let i1 = e.i32(1);
            let warp = e.divui(tid, e.index(32));
            let first_warp = e.cmpi(CmpiPredicate::Eq, warp, zero);
            let first_thread = e.cmpi(CmpiPredicate::Eq, tid, zero);
            let cols = e.i32(BN as u32);
            let mbar_ptr = pointer(e, smem_address(e, mbar), 3);
            // Warp 0 allocates the tensor memory of D and writes its address into `slot`;
            // thread 0 sets up the mbarrier MMAs complete on.
            e.if_then(first_warp, |e| {
                nvvm(
                    e,
                    "nvvm.tcgen05.alloc",
                    &[pointer(e, smem_address(e, slot), 3), cols],
                    &[],
                );
                nvvm(e, "nvvm.tcgen05.relinquish_alloc_permit", &[], &[]);
            });
            e.if_then(first_thread, |e| {
                nvvm(e, "nvvm.mbarrier.init", &[mbar_ptr, i1], &[])
            });
            let fence = |e: &Emitter<'c, 'a>, kind: &str| {
                nvvm(
                    e,
                    "nvvm.tcgen05.fence",
                    &[],
                    &[("kind", &format!("#nvvm.tcgen05_fence<{kind}>"))],
                )
            };
            fence(e, "before");
            e.bare("gpu.barrier", &[]);
            fence(e, "after");
            let taddr = e.load(slot, &[zero]);
            let d_ptr = pointer(e, taddr, 6);
            // This warp's 32 lanes of D.
            let lanes = e.shli(e.index_castui(e.muli(warp, e.index(32)), i32t), e.i32(16));
            let warp_d = pointer(e, e.addi(taddr, lanes), 6);
            let (da, db) = (
                descriptor(e, smem_address(e, smem[0])),
                descriptor(e, smem_address(e, smem[1])),
            );
            let idesc = e.i32(instr.idesc());
            let step = e.index(plan.step);
            let span = e.index(plan.span);
            let (a0, b0) = kn.fragments(e, &l, zero);
            let (na, nb) = (a0.len(), b0.len());
            let mut inits = vec![e.f32(0.0); ACC];
            inits.extend(a0.iter().chain(&b0));
            let f32t = e.f32_type();
            let done = e.for_loop(zero, kn.ops.k, step, &inits, |e, kk, carried| {
                let (acc, words) = (&carried[..ACC], &carried[ACC..]);
                // Every thread is past the previous MMA's completion before the tiles are
                // overwritten.
                e.bare("gpu.barrier", &[]);
                store_tiles(e, &l, &words[..na], &words[na..na + nb], smem);
                e.bare(
                    "nvvm.fence.proxy",
                    &[
                        ("kind", "#nvvm.proxy_kind<async.shared>"),
                        ("space", "#nvvm.shared_space<cta>"),
                    ],
                );
                e.bare("gpu.barrier", &[]);
                // Tensor-memory accesses of other threads before the barrier (the previous
                // segment's tcgen05.ld) are ordered before this MMA.
                fence(e, "after");
                let accumulate = e.cmpi(CmpiPredicate::Ne, e.remui(kk, span), zero);
                e.if_then(first_thread, |e| {
                    nvvm(
                        e,
                        "nvvm.tcgen05.mma",
                        &[d_ptr, da, db, idesc, accumulate],
                        &[
                            ("kind", "#nvvm.tcgen05_mma_kind<f8f6f4>"),
                            ("ctaGroup", "#nvvm.cta_group<cta_1>"),
                            ("operandSegmentSizes", "array<i32: 1, 1, 1, 1, 1, 0, 0>"),
                        ],
                    );
                    nvvm(e, "nvvm.tcgen05.commit", &[mbar_ptr], &[]);
                });
                // The next step's codes load while the MMA runs.
                let (a, b) = kn.fragments(e, &l, e.addi(kk, step));
                let phase = e.andi(e.index_castui(e.divui(kk, step), i32t), i1);
                nvvm(
                    e,
                    "nvvm.mbarrier.try_wait.parity",
                    &[mbar_ptr, phase, e.i32(1_000_000)],
                    &[],
                );
                fence(e, "after");
                let (end, k0) = segment_end(e, &kn, kk);
                let mut out = e.if_else(
                    end,
                    &vec![f32t; ACC],
                    |e| {
                        let v = e.val(
                            OperationBuilder::new("nvvm.tcgen05.ld", e.loc())
                                .add_operands(&[warp_d])
                                .add_attributes(&[(
                                    Identifier::new(e.ctx(), "shape"),
                                    Attribute::parse(
                                        e.ctx(),
                                        "#nvvm.tcgen05_ldst_shape<shape_32x32b>",
                                    )
                                    .expect("valid shape"),
                                )])
                                .add_results(&[e.vector_type(ACC as u64, i32t)])
                                .build()
                                .expect("valid nvvm.tcgen05.ld"),
                        );
                        nvvm(
                            e,
                            "nvvm.tcgen05.wait",
                            &[],
                            &[("kind", "#nvvm.tcgen05_wait<load>")],
                        );
                        let d: Vec<Value> = (0..ACC as i64)
                            .map(|j| e.bitcast(e.extract(v, j, i32t), f32t))
                            .collect();
                        kn.promote(e, &l, k0, acc, &d)
                    },
                    |_| acc.to_vec(),
                );
                fence(e, "before");
                out.extend(a.iter().chain(&b));
                out
            });
            kn.epilogue(e, &l, &done[..ACC]);
            // Tensor memory back, by the warp that allocated it.
            fence(e, "before");
            e.bare("gpu.barrier", &[]);
            fence(e, "after");
            e.if_then(first_warp, |e| {
                nvvm(e, "nvvm.tcgen05.dealloc", &[d_ptr, cols], &[])
            });
        },
    );
    Ok(())
}

/// One block on the CPU: the copies of all 128 threads, then [`emulated_mma`] into a buffer
/// standing for tensor memory, per K step; at a segment's end each thread's row of it is
/// promoted into its accumulators.
fn emulated_block<'c, 'a>(
    e: &Emitter<'c, 'a>,
    kn: &Kernel<'_, 'c, 'a>,
    instr: &Tcgen05,
    bm: Value<'c, 'a>,
    bn: Value<'c, 'a>,
) {
    let (zero, one) = (e.index(0), e.index(1));
    let (f32t, i32t) = (e.f32_type(), e.int_type(32));
    let smem = [e.alloca(i32t, A_WORDS), e.alloca(i32t, B_WORDS)];
    let tmem = e.alloca(f32t, BM * BN);
    let acc_m = e.alloca(f32t, THREADS * ACC as i64);
    let at = |e: &Emitter<'c, 'a>, t: Value<'c, 'a>, x: usize| {
        e.addi(e.muli(t, e.index(ACC as i64)), e.index(x as i64))
    };
    let lane = |e: &Emitter<'c, 'a>, t| Lane {
        lane: t,
        row0: e.muli(bm, e.index(BM)),
        col0: e.muli(bn, e.index(BN)),
    };
    let threads = |e: &Emitter<'c, 'a>, body: &dyn Fn(&Emitter<'c, 'a>, Value<'c, 'a>)| {
        e.for_loop(zero, e.index(THREADS), one, &[], |e, t, _| {
            body(e, t);
            vec![]
        });
    };
    threads(e, &|e, t| {
        for x in 0..ACC {
            e.store(e.f32(0.0), acc_m, &[at(e, t, x)]);
        }
    });
    let (da, db) = (descriptor(e, e.int(64, 0)), descriptor(e, e.int(64, 0)));
    let idesc = e.i32(instr.idesc());
    let span = e.index(kn.plan.span);
    e.for_loop(zero, kn.ops.k, e.index(kn.plan.step), &[], |e, kk, _| {
        threads(e, &|e, t| copy_tiles(e, kn, &lane(e, t), kk, smem));
        let accumulate = e.cmpi(CmpiPredicate::Ne, e.remui(kk, span), zero);
        emulated_mma(e, [da, db], idesc, accumulate, smem, tmem);
        let (end, k0) = segment_end(e, kn, kk);
        e.if_then(end, |e| {
            threads(e, &|e, t| {
                let l = lane(e, t);
                let acc: Vec<Value> = (0..ACC).map(|x| e.load(acc_m, &[at(e, t, x)])).collect();
                // Thread t's row of D, as tcgen05.ld.32x32b gives it.
                let d: Vec<Value> = (0..ACC)
                    .map(|j| e.load(tmem, &[e.addi(e.muli(t, e.index(BN)), e.index(j as i64))]))
                    .collect();
                for (x, v) in kn.promote(e, &l, k0, &acc, &d).into_iter().enumerate() {
                    e.store(v, acc_m, &[at(e, t, x)]);
                }
            });
        });
        vec![]
    });
    threads(e, &|e, t| {
        let l = lane(e, t);
        let acc: Vec<Value> = (0..ACC).map(|x| e.load(acc_m, &[at(e, t, x)])).collect();
        kn.epilogue(e, &l, &acc);
    });
}

/// The MMA as the PTX ISA defines it, from its descriptors: M, N and the A / B types from
/// the instruction descriptor, D[row][col] = (D if `accumulate`) + sum over K of
/// A[row][k] * B[col][k], each code read where the operand's shared-memory descriptor puts
/// it (start + 8-row group * stride offset + K half * leading offset + (row % 8) * 16 +
/// k % 16).
fn emulated_mma<'c, 'a>(
    e: &Emitter<'c, 'a>,
    desc: [Value<'c, 'a>; 2],
    idesc: Value<'c, 'a>,
    accumulate: Value<'c, 'a>,
    smem: [Value<'c, 'a>; 2],
    tmem: Value<'c, 'a>,
) {
    let (zero, one) = (e.index(0), e.index(1));
    let index = e.index_type();
    let bits = |at: u32, width: u32| {
        e.index_castui(
            e.andi(e.shrui(idesc, e.i32(at)), e.i32((1 << width) - 1)),
            index,
        )
    };
    let (m, n) = (
        e.muli(bits(24, 5), e.index(16)),
        e.muli(bits(17, 6), e.index(8)),
    );
    let (ta, tb) = (bits(7, 3), bits(10, 3));
    let field = |d: Value<'c, 'a>, at: i64| {
        let f = e.andi(e.shrui(d, e.int(64, at)), e.int(64, 0x3FFF));
        e.index_castui(e.shli(f, e.int(64, 4)), index)
    };
    let decoded: Vec<[Value; 3]> = desc
        .iter()
        .map(|&d| [field(d, 0), field(d, 16), field(d, 32)])
        .collect();
    let value = |e: &Emitter<'c, 'a>,
                 which: usize,
                 rc: Value<'c, 'a>,
                 k: Value<'c, 'a>,
                 ty: Value<'c, 'a>| {
        let [start, lbo, sbo] = decoded[which];
        let (c8, c16) = (e.index(8), e.index(16));
        let addr = e.addi(
            e.addi(start, e.muli(e.divui(rc, c8), sbo)),
            e.addi(
                e.muli(e.divui(k, c16), lbo),
                e.addi(e.muli(e.remui(rc, c8), c16), e.remui(k, c16)),
            ),
        );
        let word = e.load(smem[which], &[e.divui(addr, e.index(4))]);
        let shift = e.index_castui(e.muli(e.remui(addr, e.index(4)), c8), e.int_type(32));
        let code = e.andi(e.shrui(word, shift), e.i32(0xFF));
        let e5m2 = e.cmpi(CmpiPredicate::Eq, ty, e.index(1));
        e.select(
            e5m2,
            codes::decode(e, ScaledFormat::F8E5M2, code),
            codes::decode(e, ScaledFormat::F8E4M3, code),
        )
    };
    e.for_loop(zero, m, one, &[], |e, row, _| {
        e.for_loop(zero, n, one, &[], |e, col, _| {
            let sum = e.for_loop(zero, e.index(32), one, &[e.f32(0.0)], |e, k, s| {
                let x = value(e, 0, row, k, ta);
                let y = value(e, 1, col, k, tb);
                vec![e.addf(s[0], e.mulf(x, y))]
            })[0];
            let at = e.addi(e.muli(row, e.index(BN)), col);
            let d = e.select(accumulate, e.load(tmem, &[at]), e.f32(0.0));
            e.store(e.addf(d, sum), tmem, &[at]);
            vec![]
        });
        vec![]
    });
}
