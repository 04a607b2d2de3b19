//! `kernel=wgmma-specialized` runs the same stages warp-specialized (`specialized_block`):
//! a third warpgroup produces (all copies and translations, up to `stages - 1` stages in
//! flight per thread), the two consumer warpgroups only wait, compute and promote; a full
//! and an empty mbarrier per slot replace the block-wide barrier, and translated tiles
//! live in the slots (the producer runs up to a ring ahead), so a 64 KiB slot (FP6 x FP6)
//! gets 3 stages. `setmaxnreg` moves registers from the producer (40 a thread when its
//! copies are proved inside the operands, 56 when it translates into split halves, 72 or
//! 88 where rows or K are clamped) to the consumers (232 to 208), within the 384 x 168
//! `.maxntid` gives the block. Not yet measured on a GPU: `auto` keeps the barrier
//! pipeline.

use melior::dialect::arith::CmpiPredicate;
use melior::ir::Value;

use super::cluster::{cluster_sync, release_in_cluster};
use super::fold::{fold_scan, Folded};
use super::memory::{clear_halves, ring_div, ring_rem, Memory, Shared};
use super::stage::{copy_scales, copy_stage, decode_scales, settle_scales, translate_stage};
use super::store::{named_barrier, StoreC};
use super::tma::{acquire_tensor_map, box_bytes, load_boxes};
use super::{
    copy_bases, drain, grouped, lane, mbarrier, sides, square_grid, stage_mmas, static_stages,
    wait_parity, Consumer, PRODUCERS,
};
use crate::expand_quantize::ceil_div;
use crate::ir::Emitter;
use crate::matrix_kernel::Kernel;
use crate::to_nvvm::wgmma::{self, Wgmma};

/// The warp-specialized block: warpgroup 2 produces, warpgroups 0 and 1 consume, ordered by
/// a full and an empty mbarrier per slot (parity = use of the slot % 2).
///
/// ```text
/// producer (128 threads), per stage s:
///   s >= stages: wait empty[s % stages] (the consumers are done with its last use)
///   issue s's copies (8 + 8 of 16 bytes a thread for FP8), commit
///   s >= lead: wait_group lead-1; translate stage s-lead+1 (staged operands);
///              fence.proxy.async; arrive full[(s-lead+1) % stages]
///   after the last stage: wait_group 0, the same for the stages still in flight
/// consumers (256 threads), per stage s (two per loop iteration, the last one after the
/// loop when the count is odd; one per iteration where operands are translated):
///   wait full[s % stages]; the stage's segments (wgmma, commit; the segment before, in an
///   iteration's second stage first the first stage's last, in its first the iteration
///   before's last, waited for with wait_group 1 and promoted meanwhile);
///   s >= 1: arrive empty[(s-1) % stages] (stage s-1's instructions are done)
/// at the end of each iteration: wait_group 0 (two register sets: the last segment is
/// promoted by the next stage; one: promoted there); after the last stage the drain
/// ```
/// `lead` = stages - 1: up to that many stages' copies in flight per producer thread. The
/// producer fences its writes (the copies it waited for, its translations) for the async
/// proxy before it arrives; the consumers' acquire makes them visible to their wgmma.
#[allow(clippy::too_many_arguments)]
pub(super) fn specialized_block<'c, 'a>(
    e: &Emitter<'c, 'a>,
    kn: &Kernel<'_, 'c, 'a>,
    mem: &Memory,
    instr: &Wgmma,
    maps: [Option<Value<'c, 'a>>; 2],
    c_store: Option<(StoreC, Value<'c, 'a>)>,
    k_stages: i64,
    bid: [Value<'c, 'a>; 3],
    tid: Value<'c, 'a>,
    memory: Value<'c, 'a>,
) {
    let (bm, bn) = grouped(e, square_grid(e, kn, mem.tile), bid[0], bid[1]);
    let shared = Shared::aligned(e, memory);
    let stages = mem.stages;
    let lead = stages - 1;
    let consumers = mem.tile.threads();
    let bar =
        |e: &Emitter<'c, 'a>, which: i64, s: Value<'c, 'a>| slot_barrier(e, mem, shared, which, s);
    let (zero, one) = (e.index(0), e.index(1));
    let staged = mem.routes.iter().any(|r| r.staged);
    // The producer warpgroup copies (codes to translate, or staged scales), or TMA alone
    // feeds the ring.
    let copies = staged || mem.scales.iter().any(Option::is_some);
    // A stage is full once every producer thread arrived (its copies, translations and
    // decoded scales done), and, with TMA, its boxes' bytes landed; with TMA alone one
    // thread arrives.
    let arrivals = if mem.tma && !copies { 1 } else { PRODUCERS };
    // B multicast: the blocks of a cluster (rank = x % its size: the cluster runs along x)
    // write each other's slots, so a slot is empty once the consumers of every block of
    // the cluster are done with it: lane r of each consumer warp arrives on rank r's
    // barrier (`mapa`, release at cluster scope), the warp's instructions being done.
    let cluster = mem.tile.multicast;
    let rank = e.remui(bid[0], e.index(cluster));
    let releases = if cluster > 1 {
        consumers / 32 * cluster
    } else {
        consumers
    };
    e.if_then(e.cmpi(CmpiPredicate::Eq, tid, zero), |e| {
        e.for_loop(zero, e.index(stages), one, &[], |e, s, _| {
            mbarrier(
                e,
                "nvvm.mbarrier.init",
                &[bar(e, 0, s), e.i32(arrivals as u32)],
            );
            mbarrier(
                e,
                "nvvm.mbarrier.init",
                &[bar(e, 1, s), e.i32(releases as u32)],
            );
            vec![]
        });
        if mem.tma {
            // The TMA unit completes transactions on the barriers: their initialization
            // made visible to it (`fence.mbarrier_init`, and the async proxy's view of
            // shared memory), as CUTLASS and DeepGEMM do before their first TMA.
            e.bare("nvvm.fence.mbarrier.init", &[]);
            wgmma::fence_proxy_async(e);
        }
    });
    let sides = sides(e, kn, mem, bm, bn);
    let k = kn.ops.k;
    let count = ceil_div(e, k, e.index(mem.bk()));
    // The barriers initialized before any thread uses them; with multicast, before the
    // other blocks of the cluster write into this block or arrive on its barriers. Folded
    // scales: the producers' scan of their rows' scales, whose `bar.red.or` is that
    // barrier (the consumers add nothing).
    let scan = match mem.fold {
        Some(fold) => {
            let ptid = e.subi(tid, e.index(consumers));
            Some(fold_scan(
                e, kn, mem, &fold, shared, &sides, ptid, zero, count,
            ))
        }
        None if cluster > 1 => {
            cluster_sync(e);
            None
        }
        None => {
            e.bare("gpu.barrier", &[]);
            None
        }
    };
    let producer = e.cmpi(CmpiPredicate::Uge, tid, e.index(consumers));
    // Registers per thread after the split (`setmaxnreg`, per warpgroup; `.maxntid 384`
    // gives each thread 168 at entry, 384 x 168 = 64512 in all): the producer gives up what
    // the consumers take, 2 x take + keep = 504 = 3 x 168. What the producer holds through
    // its loop decides (ptxas 12.9 over the bench bundles and odd shapes, `bench/NOTES.md`):
    // issuing TMA boxes alone, or `cp.async` where the static shape proves every chunk
    // inside (one address a stage plus constants, `Chunk::lead`), 40 (DeepGEMM's split,
    // consumers 232), also translating those; but 56 (224) translating into split halves
    // (NVFP4's 16-blocks: the halves' stores and the UE4M3 scale rows), on the f16 route
    // (its chunks' scale words and f16 halves: 12 bytes spilled at 40) or with block scales
    // folded (a chunk's scale word and byte, B's anchor: MXFP4 8192^3 spilled 12 bytes at
    // 40, inside its folded loops); with rows clamped (a row and size held per chunk), 72
    // (216); with K not whole stages (chunk columns clamped, scale windows), 88 (208).
    // Below those the producer spills, above them the consumers do. (The rows of an
    // operand loaded by TMA cost the producer nothing.)
    let whole_rows = sides
        .iter()
        .zip(mem.routes)
        .all(|(s, r)| s.whole_rows || (mem.tma && !r.staged));
    let cp_async = copies || !mem.tma;
    let halves = mem.routes.iter().any(|r| r.halves == 2);
    let folds = mem.fold.is_some();
    let f16 = mem.routes.iter().any(|r| r.f16);
    let (keep, take) = match (cp_async, sides[0].whole_k, whole_rows) {
        (false, ..) => ISSUER_REGISTERS,
        (true, true, true) if halves || folds || f16 => (56, 224),
        (true, true, true) => ISSUER_REGISTERS,
        (true, true, false) => (72, 216),
        (true, false, _) => (88, 208),
    };
    debug_assert!(consumers == 2 * PRODUCERS && 2 * take + keep <= 3 * 168);
    e.if_then(producer, |e| {
        max_registers(e, "decrease", keep);
        let ptid = e.subi(tid, e.index(consumers));
        // TMA: producer thread 0 issues each stage's boxes of the operands used as stored
        // (after the bytes they bring are announced on the stage's full barrier).
        let issuer = e.cmpi(CmpiPredicate::Eq, ptid, zero);
        let boxes = box_bytes(mem, maps);
        let tma_stage = |e: &Emitter<'c, 'a>, s: Value<'c, 'a>| {
            load_boxes(e, mem, shared, maps, &sides, bar(e, 0, s), [s, s], rank);
        };
        let empty = |e: &Emitter<'c, 'a>, s: Value<'c, 'a>| {
            let use_ = ring_div(e, s, stages);
            e.if_then(e.cmpi(CmpiPredicate::Uge, s, e.index(stages)), |e| {
                wait_parity(e, bar(e, 1, s), phase_parity(e, e.subi(use_, one)))
            });
        };
        if mem.tma {
            e.if_then(issuer, |e| {
                for map in maps.iter().flatten() {
                    acquire_tensor_map(e, *map);
                }
            });
        }
        if mem.tma && !copies {
            // Every operand by TMA and no scales to stage: one thread feeds the ring.
            e.if_then(issuer, |e| {
                e.for_loop(zero, count, one, &[], |e, s, _| {
                    empty(e, s);
                    mbarrier(
                        e,
                        "nvvm.mbarrier.arrive.expect_tx",
                        &[bar(e, 0, s), e.i32(boxes as u32)],
                    );
                    tma_stage(e, s);
                    vec![]
                });
            });
            return;
        }
        let globals = copy_bases(e, kn, mem);
        clear_halves(e, mem, shared, ptid);
        // Folded scales: a translating thread reads the scales of rows other producers
        // copied, so the scales travel a stage ahead of the codes and the producers meet
        // at a barrier of their own (named barrier 1, 128 threads) at the top of each
        // stage: every producer's copies of the scales of the stage it publishes next
        // landed (its wait of the stage before), and every read of the entry it copies
        // into now is done (the publish of the stage before).
        let folding = mem.fold.is_some();
        let settles = mem.settles();
        let producers_meet = |e: &Emitter<'c, 'a>| named_barrier(e, e.i32(1), PRODUCERS);
        let produce = |e: &Emitter<'c, 'a>, fold: Folded<'c, 'a>| {
            // Folded, the next stage's scale windows, copied with this one's codes, settled
            // before the producers meet again.
            let settle_next = |e: &Emitter<'c, 'a>, s: Value<'c, 'a>| {
                let next = e.addi(s, one);
                e.if_then(e.cmpi(CmpiPredicate::Ult, next, count), |e| {
                    settle_scales(e, kn, mem, shared, &sides, ptid, next)
                });
            };
            // Stage `s` landed (this thread's part): translate, fence, signal; in the loop
            // (`settle`), the next stage's windows settled.
            let publish = |e: &Emitter<'c, 'a>, s: Value<'c, 'a>, settle: bool| {
                translate_stage(e, mem, shared, &sides, k, ptid, s, fold);
                decode_scales(e, kn, mem, shared, &sides, ptid, s, fold);
                if settle && settles {
                    settle_next(e, s);
                }
                wgmma::fence_proxy_async(e);
                mbarrier(e, "nvvm.mbarrier.arrive", &[bar(e, 0, s)]);
            };
            e.for_loop(zero, count, one, &[], |e, s, _| {
                empty(e, s);
                if folding {
                    producers_meet(e);
                }
                if mem.tma {
                    // The boxes' bytes before this thread's arrival (in `publish`), which
                    // completes the stage only once they landed too.
                    e.if_then(issuer, |e| {
                        mbarrier(
                            e,
                            "nvvm.mbarrier.expect_tx",
                            &[bar(e, 0, s), e.i32(boxes as u32)],
                        );
                        tma_stage(e, s);
                    });
                }
                if folding {
                    let next = e.addi(s, one);
                    e.if_then(e.cmpi(CmpiPredicate::Ult, next, count), |e| {
                        copy_scales(e, kn, mem, shared, &sides, ptid, next)
                    });
                } else {
                    copy_scales(e, kn, mem, shared, &sides, ptid, s);
                }
                copy_stage(e, kn, mem, shared, &sides, globals, k, ptid, s);
                e.bare("nvvm.cp.async.commit.group", &[]);
                e.if_then(e.cmpi(CmpiPredicate::Uge, s, e.index(lead - 1)), |e| {
                    e.bare(
                        "nvvm.cp.async.wait.group",
                        &[("n", &format!("{} : i32", lead - 1))],
                    );
                    publish(e, e.subi(s, e.index(lead - 1)), true);
                });
                vec![]
            });
            // The stages still in flight: their windows settled before the producers meet
            // (no meeting between the publishes after it).
            e.bare("nvvm.cp.async.wait.group", &[("n", "0 : i32")]);
            let from = e.select(
                e.cmpi(CmpiPredicate::Uge, count, e.index(lead - 1)),
                e.subi(count, e.index(lead - 1)),
                zero,
            );
            if settles {
                e.for_loop(from, count, one, &[], |e, s, _| {
                    settle_next(e, s);
                    vec![]
                });
            }
            if folding {
                producers_meet(e);
            }
            e.for_loop(from, count, one, &[], |e, s, _| {
                publish(e, s, false);
                vec![]
            });
        };
        match &scan {
            Some(scan) => {
                scan.branches(e, &[], |e, fold| {
                    produce(e, fold);
                    vec![]
                });
            }
            None => produce(e, Folded::No),
        }
    });
    e.if_then(e.cmpi(CmpiPredicate::Ult, tid, e.index(consumers)), |e| {
        max_registers(e, "increase", take);
        let l = lane(e, mem.tile, tid, bm, bn);
        let consumer = Consumer::new(e, kn, instr, l);
        let warpgroup = e.divui(tid, e.index(wgmma::THREADS));
        // As in the barrier pipeline, a stage's last segment is waited for and promoted
        // after the next stage's first is issued (`stage_mmas`), or at the end of the loop
        // iteration (`stage_runs`: nothing in flight across the back edge), and the slot of
        // the stage before is given back after the stage's first wait (its instructions
        // are done: they complete in order). Stages per iteration: `per_iteration` (two,
        // the running results alternating between two register sets, or one); K is static,
        // so the stages left over run after the loop, and no stage waits for a slot the
        // producer never fills.
        let every = e.int(1, 1);
        let stage = |e: &Emitter<'c, 'a>,
                     s: Value<'c, 'a>,
                     acc: &[Value<'c, 'a>],
                     before,
                     fold: Folded<'c, 'a>| {
            wait_parity(e, bar(e, 0, s), phase_parity(e, ring_div(e, s, stages)));
            let (acc, pending) = stage_mmas(
                e,
                kn,
                mem,
                instr,
                shared,
                &consumer,
                warpgroup,
                s,
                s,
                acc,
                before,
                every,
                fold,
                |_| {},
            );
            e.if_then(e.cmpi(CmpiPredicate::Uge, s, one), |e| {
                let empty = bar(e, 1, e.subi(s, one));
                if cluster > 1 {
                    release_in_cluster(e, empty, tid, cluster);
                } else {
                    mbarrier(e, "nvvm.mbarrier.arrive", &[empty]);
                }
            });
            (acc, pending)
        };
        let run = |e: &Emitter<'c, 'a>, fold: Folded<'c, 'a>| {
            let stage = |e: &Emitter<'c, 'a>, s, acc: &[Value<'c, 'a>], before| {
                stage(e, s, acc, before, fold)
            };
            let finish = |e: &Emitter<'c, 'a>, acc, pending| {
                drain(e, kn, mem, shared, instr, &consumer, acc, pending, fold)
            };
            static_stages(e, kn, mem, instr, k_stages, stage, finish)
        };
        // (Folded scales: a loop per way the scan may choose, each draining its
        // instructions.)
        let acc = match &scan {
            Some(scan) => {
                let types = vec![e.f32_type(); instr.accumulators()];
                scan.branches(e, &types, run)
            }
            None => run(e, Folded::No),
        };
        match c_store {
            Some((store, map)) => {
                store.epilogue(e, kn, instr, shared, &l, warpgroup, &acc, map, false);
                store.finish(e, &l);
            }
            None => kn.epilogue(e, &l, &acc),
        }
    });
    // With multicast, no block leaves while another may still arrive on its barriers.
    if cluster > 1 {
        cluster_sync(e);
    }
}

/// The producer's registers (`setmaxnreg`, a thread) and the consumers' where the producer
/// holds no more than a few addresses: TMA's issuing thread, or `cp.async` copies whose
/// chunks the static shape proves inside (`specialized_block`).
pub(super) const ISSUER_REGISTERS: (i64, i64) = (40, 232);

/// The mbarrier `which` (0 full, 1 empty) of ring turn `s`'s slot in the warp-specialized
/// block's shared memory (`Memory::barriers`).
pub(super) fn slot_barrier<'c, 'a>(
    e: &Emitter<'c, 'a>,
    mem: &Memory,
    shared: Shared<'c, 'a>,
    which: i64,
    s: Value<'c, 'a>,
) -> Value<'c, 'a> {
    let slot = ring_rem(e, s, mem.stages);
    let at = e.addi(
        e.index(mem.barriers + which * mem.stages * 8),
        e.muli(slot, e.index(8)),
    );
    e.pointer(shared.address(e, at), 3)
}

/// The parity (an i32) of an mbarrier's phase `use_`.
pub(super) fn phase_parity<'c, 'a>(e: &Emitter<'c, 'a>, use_: Value<'c, 'a>) -> Value<'c, 'a> {
    e.andi(e.index_castui(use_, e.int_type(32)), e.i32(1))
}

/// `setmaxnreg`: this warpgroup's registers a thread, `action` (increase, decrease) to
/// `count`.
pub(super) fn max_registers(e: &Emitter, action: &str, count: i64) {
    e.bare(
        "nvvm.setmaxregister",
        &[
            ("action", &format!("#nvvm<action {action}>")),
            ("regCount", &format!("{count} : i32")),
        ],
    )
}
