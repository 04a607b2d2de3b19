//! `persistent=on`: the TMA-fed square block (`kernel=wgmma-tma`, E4M3 / E5M2 used as
//! stored, no scales along K) as one block per multiprocessor, each looping over its tiles
//! of C (`persistent_block`): tile `b + i * blocks` for block `b`, in grouped order. The
//! ring and its mbarriers carry on from tile to tile, so the producer's thread loads the
//! next tile's first stages while the consumers finish the last one's and store its C:
//! neither the ring's fill nor the epilogue leaves the tensor cores without work queued,
//! as a block per tile does (its fill waits for the first boxes; its epilogue, 64 KiB of
//! f32 C at 128 x 128, runs with nothing else on the multiprocessor: one block fits).
//! Not yet measured on a GPU: off by default.

use melior::dialect::arith::CmpiPredicate;
use melior::ir::Value;

use super::fold::Folded;
use super::memory::{ring_div, Memory, Shared};
use super::specialized::{max_registers, phase_parity, slot_barrier, ISSUER_REGISTERS};
use super::store::StoreC;
use super::tma::{acquire_tensor_map, box_bytes, load_boxes};
use super::{
    grouped, lane, mbarrier, sides, stage_mmas, static_stages, wait_parity, Consumer, PRODUCERS,
};
use crate::expand_quantize::ceil_div;
use crate::ir::Emitter;
use crate::matrix_kernel::Kernel;
use crate::to_nvvm::wgmma::{self, Wgmma};

/// Whether a block of `mem` may be persistent: the square warp-specialized block fed by
/// TMA alone (no copies by the producer warpgroup: no translated operand, no staged
/// scales), not sharing B in a cluster.
pub(super) fn takes(mem: &Memory) -> bool {
    mem.specialized
        && mem.tma
        && !mem.tile.is_skinny()
        && !mem.tile.multicasts()
        && !mem.routes.iter().any(|r| r.staged)
        && mem.scales.iter().all(Option::is_none)
        && mem.fold.is_none()
}

/// Which tiles of C the persistent blocks take: block `b` of `blocks` the tiles `b + i *
/// blocks` below the [along N, along M] `tiles` (static), in grouped order.
#[derive(Clone, Copy)]
pub(super) struct Schedule {
    pub(super) tiles: [i64; 2],
    pub(super) blocks: i64,
}

impl Schedule {
    /// One block per multiprocessor, at most one per tile.
    pub(super) fn new(tiles: [i64; 2], multiprocessors: i64) -> Self {
        Schedule {
            tiles,
            blocks: (tiles[0] * tiles[1]).min(multiprocessors),
        }
    }

    /// How many tiles block `b` takes (`b < blocks <= tiles`).
    pub(super) fn count<'c, 'a>(&self, e: &Emitter<'c, 'a>, b: Value<'c, 'a>) -> Value<'c, 'a> {
        let total = e.index(self.tiles[0] * self.tiles[1]);
        ceil_div(e, e.subi(total, b), e.index(self.blocks))
    }

    /// Block `b`'s `i`-th tile: (row, column) of tiles.
    pub(super) fn tile<'c, 'a>(
        &self,
        e: &Emitter<'c, 'a>,
        b: Value<'c, 'a>,
        i: Value<'c, 'a>,
    ) -> (Value<'c, 'a>, Value<'c, 'a>) {
        let t = e.addi(b, e.muli(i, e.index(self.blocks)));
        let columns = e.index(self.tiles[0]);
        let grid = [columns, e.index(self.tiles[1])];
        grouped(e, grid, e.remui(t, columns), e.divui(t, columns))
    }
}

/// The persistent block `bid` of `schedule`, with the stages of `k_stages`:
/// ```text
/// producer thread 0 (warpgroup 2), for each of the block's tiles i, stage s:
///   g = i * k_stages + s                  // the stage's turn, counted over the tiles
///   g >= stages: wait empty[g % stages]   // the consumers are done with turn g - stages
///   expect the boxes' bytes on full[g % stages]; issue tile i's boxes of stage s there
/// consumers (warpgroups 0, 1), for each of the block's tiles i:
///   stages s as the warp-specialized block's (wait full[g % stages] with parity
///   g / stages % 2; the instructions; s >= 1: arrive empty[(g - 1) % stages])
///   drain; arrive empty[g_last % stages]; the epilogue (C of tile i)
/// ```
/// The consumers' arrival on a tile's last turn, after the drain that waits for every
/// instruction, lets the producer fill it with the next tile's stage.
#[allow(clippy::too_many_arguments)]
pub(super) fn persistent_block<'c, 'a>(
    e: &Emitter<'c, 'a>,
    kn: &Kernel<'_, 'c, 'a>,
    mem: &Memory,
    instr: &Wgmma,
    maps: [Option<Value<'c, 'a>>; 2],
    c_store: Option<(StoreC, Value<'c, 'a>)>,
    k_stages: i64,
    schedule: Schedule,
    bid: Value<'c, 'a>,
    tid: Value<'c, 'a>,
    memory: Value<'c, 'a>,
) {
    let shared = Shared::aligned(e, memory);
    let stages = mem.stages;
    let consumers = mem.tile.threads();
    let (zero, one) = (e.index(0), e.index(1));
    // Barrier `which` (0 full, 1 empty) of turn `g`'s slot.
    let bar =
        |e: &Emitter<'c, 'a>, which: i64, g: Value<'c, 'a>| slot_barrier(e, mem, shared, which, g);
    e.if_then(e.cmpi(CmpiPredicate::Eq, tid, zero), |e| {
        e.for_loop(zero, e.index(stages), one, &[], |e, s, _| {
            mbarrier(e, "nvvm.mbarrier.init", &[bar(e, 0, s), e.i32(1)]);
            mbarrier(
                e,
                "nvvm.mbarrier.init",
                &[bar(e, 1, s), e.i32(consumers as u32)],
            );
            vec![]
        });
        e.bare("nvvm.fence.mbarrier.init", &[]);
        wgmma::fence_proxy_async(e);
    });
    e.bare("gpu.barrier", &[]);
    let mine = schedule.count(e, bid);
    let tile_of = |e: &Emitter<'c, 'a>, i: Value<'c, 'a>| schedule.tile(e, bid, i);
    let count = e.index(k_stages);
    let producer = e.cmpi(CmpiPredicate::Uge, tid, e.index(consumers));
    // Registers per thread (`setmaxnreg`): the producer's one issuing thread holds a few
    // values, as the warp-specialized TMA block's.
    let (keep, take) = ISSUER_REGISTERS;
    debug_assert!(consumers == 2 * PRODUCERS && 2 * take + keep <= 3 * 168);
    e.if_then(producer, |e| {
        max_registers(e, "decrease", keep);
        let issuer = e.cmpi(CmpiPredicate::Eq, tid, e.index(consumers));
        let boxes = box_bytes(mem, maps);
        e.if_then(issuer, |e| {
            for map in maps.iter().flatten() {
                acquire_tensor_map(e, *map);
            }
            e.for_loop(zero, mine, one, &[], |e, i, _| {
                let (bm, bn) = tile_of(e, i);
                let sides = sides(e, kn, mem, bm, bn);
                let base = e.muli(i, count);
                e.for_loop(zero, count, one, &[], |e, s, _| {
                    let g = e.addi(base, s);
                    e.if_then(e.cmpi(CmpiPredicate::Uge, g, e.index(stages)), |e| {
                        let use_ = ring_div(e, g, stages);
                        wait_parity(e, bar(e, 1, g), phase_parity(e, e.subi(use_, one)))
                    });
                    mbarrier(
                        e,
                        "nvvm.mbarrier.arrive.expect_tx",
                        &[bar(e, 0, g), e.i32(boxes as u32)],
                    );
                    load_boxes(e, mem, shared, maps, &sides, bar(e, 0, g), [s, g], zero);
                    vec![]
                });
                vec![]
            });
        });
    });
    e.if_then(e.cmpi(CmpiPredicate::Ult, tid, e.index(consumers)), |e| {
        max_registers(e, "increase", take);
        let warpgroup = e.divui(tid, e.index(wgmma::THREADS));
        let every = e.int(1, 1);
        e.for_loop(zero, mine, one, &[], |e, i, _| {
            let (bm, bn) = tile_of(e, i);
            let l = lane(e, mem.tile, tid, bm, bn);
            let consumer = Consumer::new(e, kn, instr, l);
            let base = e.muli(i, count);
            let stage = |e: &Emitter<'c, 'a>, s: Value<'c, 'a>, acc: &[Value<'c, 'a>], before| {
                let g = e.addi(base, s);
                wait_parity(e, bar(e, 0, g), phase_parity(e, ring_div(e, g, stages)));
                let (acc, pending) = stage_mmas(
                    e,
                    kn,
                    mem,
                    instr,
                    shared,
                    &consumer,
                    warpgroup,
                    s,
                    g,
                    acc,
                    before,
                    every,
                    Folded::No,
                    |_| {},
                );
                e.if_then(e.cmpi(CmpiPredicate::Uge, s, one), |e| {
                    mbarrier(e, "nvvm.mbarrier.arrive", &[bar(e, 1, e.subi(g, one))]);
                });
                (acc, pending)
            };
            let finish = |e: &Emitter<'c, 'a>, acc, pending| {
                super::drain(
                    e,
                    kn,
                    mem,
                    shared,
                    instr,
                    &consumer,
                    acc,
                    pending,
                    Folded::No,
                )
            };
            let acc = static_stages(e, kn, mem, instr, k_stages, stage, finish);
            // Every instruction of the tile is done (the drain): its last turn's slot is
            // the producer's again.
            let last = e.addi(base, e.index(k_stages - 1));
            mbarrier(e, "nvvm.mbarrier.arrive", &[bar(e, 1, last)]);
            // (`store-c=tma`: each tile first waits for the tile before's stores to have
            // read the staging area; none are in flight before the first.)
            match c_store {
                Some((store, map)) => {
                    store.epilogue(e, kn, instr, shared, &l, warpgroup, &acc, map, true)
                }
                None => kn.epilogue(e, &l, &acc),
            }
            vec![]
        });
        if let Some((store, _)) = c_store {
            let l = lane(e, mem.tile, tid, zero, zero);
            store.finish(e, &l);
        }
    });
}
