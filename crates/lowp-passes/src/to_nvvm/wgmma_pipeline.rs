//! The pipelined `wgmma.mma_async` kernel of `lowp-to-nvvm` (sm_90a): A and B copied
//! global -> shared memory by `cp.async` in a ring of stages that runs ahead of the tensor
//! cores; E4M3 / E5M2 codes go straight into the instruction's tiles, FP4 (packed or not),
//! FP6 and custom formats that embed in them are translated to FP8 on the way.
//!
//! Two blocks (`Tile`), both with the instruction of `wgmma.rs`:
//! - square (M above 64, or dynamic): two warpgroups (256 threads) computing 128 x 128 of
//!   C, each warpgroup 64 rows of it with `wgmma.mma_async.sync.aligned.m64n128k32`;
//! - skinny (M static and at most 64, or `kernel=wgmma-skinny`): swap AB, one warpgroup
//!   computing `m x 64` of C (`m` M rounded up to 16, at most 64) as C^T with
//!   `m64n<m>k32`: B's 64 rows are the instruction's A, A's rows its B. A decode step
//!   (16 x 8192 x 8192) gets 128 blocks that spend no instruction row past M, where square
//!   blocks would be 64 with 7/8 of their A rows zero; its ring has 8 stages (10 KiB each
//!   for FP8), as a memory-bound block wants bytes in flight. Where the tiles of C leave
//!   SMs idle (16 x 4096 x 8192: 64), K is split (`gather_splits`): a cluster of 2, 4 or 8
//!   blocks per tile (`split-k`, by default while the blocks fit 132 SMs and each split
//!   keeps two stages), each summing its range of stages; rank 0 adds the others' partial
//!   sums in rank order through distributed shared memory (deterministic, no workspace,
//!   no atomics) and stores C. The cluster size is fixed in the PTX
//!   (`lowp-kernel-cluster-size`).
//!
//! Square blocks take their tile in grouped order (`grouped`: groups of 8 rows of tiles,
//! column by column within a group), so that the blocks resident at once share A and B
//! tiles in L2.
//!
//! K advances 128 codes per stage. The instruction reads FP8 tiles of the block's rows x
//! 128 bytes, K-major in the 128-byte swizzle of the wgmma descriptors (row r's 16-byte
//! chunk c at `r * 128 + (c ^ r % 8) * 16`, 8-row atoms of 1024 bytes, every tile on a
//! 1024-byte boundary from the aligned base of the dynamic shared memory). The ring has
//! `stages` slots (square: 5, 4 where 5 do not fit; skinny: 8); each holds each operand's
//! stage as copied:
//! - direct (E4M3 / E5M2 as stored): the FP8 tile itself, the copies landing swizzled;
//! - staged (a format translated to FP8): the rows as stored (128 or, packed, 64 bytes),
//!   and after the ring three FP8 tiles per staged operand (by stage % 3) that the
//!   threads fill from the copies they made themselves through the embedding's table:
//!   4-bit codes (FP4, 4-bit customs) four at a time with three `prmt` byte permutes
//!   (images of codes 0-7, of codes 8-15, then the pick by bit 3), wider ones code by code
//!   through a select chain.
//!
//! Per stage every thread issues its 16-byte `cp.async.cg.shared.global` (square: 4 per
//! operand, 2 when packed; skinny FP8: 4 of B, 1 of A for 16 rows, and a packed 16-row A's
//! 64 chunks leave half the threads out; rows past M / N and chunks past K copy 0 bytes and
//! fill zeros) and commits them as one group; the loop:
//!
//! ```text
//! prologue: stages 0 .. L-1 issued (L = stages - 2 ahead), one commit group each
//! for each stage s (two per loop iteration):
//!   cp.async.wait_group L-1           // this thread's copies of stage s landed
//!   translate them (staged operands)  // into the FP8 tiles of stage s % 3
//!   fence.proxy.async.shared::cta     // generic-proxy writes -> the async proxy (wgmma)
//!   barrier                           // all of stage s is in its tiles; stage s-2's
//!                                     // instructions are done (each warpgroup waited)
//!   issue stage s+L into the slot stage s-2 used; commit
//!   per K segment g of the stage (min(scale block, 128) codes):
//!     wgmma.fence; mma (scale-d 0), mma, .. (descriptor start + 32 bytes each); commit
//!     wait_group 1; acc += part(segment before) * (its scales)  // g runs meanwhile
//! after the last stage: wait_group 0; acc += part(last) * (its scales)
//! ```
//! The segment before stage s's first is stage s-1's last: the tensor cores run from stage
//! to stage without a drain, and stage s-1's slot stays untouched until the barrier of
//! stage s+1. A translated tile of stage s % 3 was last read by stage s-3's instructions,
//! which completed (stage s-2's first wait) before stage s-1's barrier. The loop runs two
//! stages per iteration, so that the running instruction's accumulators alternate between
//! two register sets (carried through the back edge, one set would be copied while the
//! tensor cores still write it); a second stage past the block's range runs on whatever
//! its slot holds and is never promoted.
//!
//! `kernel=wgmma-specialized` runs the same stages warp-specialized (`specialized_block`):
//! a third warpgroup produces (all copies and translations, up to `stages - 1` stages in
//! flight per thread), the two consumer warpgroups only wait, compute and promote; a full
//! and an empty mbarrier per slot replace the block-wide barrier, and translated tiles
//! live in the slots (the producer runs up to a ring ahead), so a 64 KiB slot (FP6 x FP6)
//! gets 3 stages. `setmaxnreg` moves registers from the producer (40 a thread, 96 when it
//! translates) to the consumers (232, 200), within the 384 x 168 `.maxntid` gives the
//! block. Not yet measured on a GPU: `auto` keeps the barrier pipeline.
//!
//! `kernel=wgmma-tma` is that block (the skinny block's barrier pipeline where M is static
//! and at most 64) with the operands used as stored (E4M3 / E5M2) loaded by TMA: on the
//! host each gets a tensor map (`nvgpu.tma.create.descriptor`, `tensor_map`:
//! boxes of 128 rows x 128 bytes in the 128-byte swizzle, zeros outside the tensor), which
//! the kernel takes as a pointer to global memory. Producer thread 0 fences the barriers'
//! initialization and acquires the maps, then per stage waits for the slot to be empty,
//! announces the boxes' bytes on its full barrier and issues one
//! `cp.async.bulk.tensor.2d` per such operand (`tma_load`, at `box_origin`); the landed
//! bytes complete the barrier's transaction count. Where both operands are direct the full
//! barrier waits for that thread alone (`arrive.expect_tx`); where the other operand is
//! translated (or block scales are staged), the producer warpgroup still copies and
//! translates it (copies and decodes them) and every producer thread arrives (thread 0
//! adds the bytes with `expect_tx`). In the skinny block thread 0
//! arms a full mbarrier per slot and issues the boxes where the copies were issued, and
//! every thread waits on the stage's barrier before the stage's block barrier (split-K
//! included). Two translated operands have nothing for TMA: an error.
//!
//! B multicast (`multicast`, by default where it applies): the square TMA block runs in
//! clusters of 2 along the grid's x, which the grouped order maps to the tiles (bm, bn)
//! and (bm + 1, bn) while M and N have an even number of tiles: both read the same B
//! stages. Each block's producer loads its half of B's stage (64 rows: B's tensor map has
//! 64-row boxes) into both blocks (`.multicast::cluster`, mask 0b11) at the same offset and
//! on the same full barrier of each; a full barrier still expects the whole stage's bytes,
//! half of B's landing from the other block. Since each block writes into the other's
//! slots, a slot is empty once the consumers of both are done with it: lane r of each
//! consumer warp arrives on rank r's empty barrier (`mapa`,
//! `mbarrier.arrive.release.cluster.shared::cluster`; 16 arrivals per phase). The blocks
//! meet at a cluster barrier after the barriers' initialization (none is written before
//! it is initialized) and before they leave (none is arrived on after its block left). L2
//! then serves 24 KiB per stage and block instead of 32 (for FP8).
//!
//! Partial sums go into the f32 accumulators at least every 128 of K, also for per-tensor
//! scales: Hopper's FP8 MMA accumulates with reduced precision, so (as DeepGEMM does) the
//! tensor cores never sum more than 128 products of a row; per-tensor / per-channel scales
//! are applied in the epilogue, block scales (MX, blockwise) per segment. A segment's
//! block scales (a thread's 2 rows and 32 columns) are loaded before the wait for its
//! partial sums, through an empty inline assembly (`wgmma::pinned`) that keeps the loads
//! there. Where K is whole stages, the scales are staged through shared memory
//! (`ScaleStage`), copied by the threads that copy stages (the barrier pipeline's, the
//! producer warpgroup's; beside TMA's boxes too): each block row's stage scales
//! (4, 8 or 16 bytes) are copied with the stage by one thread, which decodes them to f32
//! once after its wait (a ring of 3 after the translated tiles; warp-specialized, in the
//! slot); the promotions then read 34 f32 from shared memory (18 loads: the column pairs
//! as one) instead of loading and decoding 34 bytes each (6 integer instructions per E8M0
//! code, 200 per segment and thread, more issue slots than the segment's wgmma). Not
//! where that costs a stage (the barrier pipeline keeps at least 4). NVFP4's 16-blocks, a
//! dynamic K, rows that are not a multiple of 16 bytes or not row-major take `wgmma.rs`'s
//! register-staged kernel.
//!
//! Folded scales (`fold-scales=auto`, `Fold`): per 32 of K a promotion costs each thread 64
//! `mul` + 64 `fma`, twice the issue slots of the segment's instruction. Where every operand
//! whose scales change along K is FP4 (4-bit codes translated through byte permutes) with
//! E8M0 32-blocks, the square block (not with TMA) folds them into the codes instead:
//! block j of a row's stage is translated with the table moved `max - e_j` binades down
//! (its finite nonzero images' exponent fields less that: exact while they stay normal, 5
//! binades for E2M1 into E4M3), so that the stage is one partial sum of 128 scaled once by
//! the rows' and columns' `2^(max - 127)`. Whether the data allows is a property of the
//! scales alone: before its loop each thread scans the scales of the row it copies (every
//! stage's 4-byte word, up to 32 at a time; warp-specialized, the producers) and
//! `bar.red.or` gives the block one answer; the block then runs the folded loop or the
//! per-32 one (two loops, each draining its instructions, so that no result in flight
//! crosses the branch). A translating thread reads its chunk's row's scales from the copy
//! ring, which another thread filled: the scales therefore travel a stage ahead of the
//! codes (published by the barrier of the stage before, warp-specialized by a barrier of
//! the producers at the top of each stage; the first stage's stored by the scan).
//!
//! Shared memory: square, 4 x 32 KiB for FP8 x FP8; MXFP4 x MXFP4 (packed) 4 x 16 KiB + 4 x
//! 16 KiB of translated tiles; the most, FP6 x FP6, 4 x 32 KiB + 64 KiB. Skinny with 16 rows
//! of A: 8 x 10 KiB for FP8, 8 x 5 KiB + 2 x 10 KiB for MXFP4. Plus 1 KiB of alignment.
//!
//! The emulation (`emulate=true`) runs the same chunk assignment, offsets, translations,
//! slot ring and descriptors on the CPU: the copies and translations into a buffer standing
//! for the shared memory (its base at address 0), TMA's box loads as the PTX ISA defines
//! the tile mode (`emulated_tma`: from the same box origins, element by element, the
//! swizzle by address bits), each instruction by `wgmma::emulated_wgmma` decoding the
//! descriptors (swizzle included), phases one after the other.

use lowp_formats::{ScaleDtype, ScaleLayout, ScaledFormat};
use melior::dialect::arith::CmpiPredicate;
use melior::ir::operation::OperationBuilder;
use melior::ir::r#type::{DimSize, MemRefType, ShapedTypeLike};
use melior::ir::{Attribute, Identifier, OperationRef, Type, TypeLike, Value, ValueLike};

use super::wgmma::{self, Wgmma};
use crate::chip::Chip;
use crate::expand_quantize::{ceil_div, unsupported, Scaled};
use crate::ir::Emitter;
use crate::matrix_kernel::{translate, Kernel, Lane, Operand, Plan, ScaleReader, Table};
use crate::to_loops::matmul_operands;
use crate::PassError;

/// K per stage.
const BK: i64 = 128;
/// Warp-specialized: after the consumer warpgroups, one producer warpgroup.
const PRODUCERS: i64 = 128;
/// Stages in the ring: of the square block (the barrier pipeline's copies run `stages - 2`
/// ahead: two slots are being read), warp-specialized, of the skinny one (its stages are
/// small, and a memory-bound block wants many bytes in flight).
const STAGES: i64 = 5;
const SPECIALIZED_STAGES: i64 = 4;
const SKINNY_STAGES: i64 = 8;
/// Translated FP8 tiles per staged operand in the barrier pipeline (by stage % 3).
const PARITIES: i64 = 3;
/// The stride offset of the swizzled layout: one 8-row atom.
const ATOM: i64 = 1024;

/// The block: rows of A (of M) and of B (of N) it covers, and how its warpgroups compute
/// them.
/// - square: 128 x 128 of C, two warpgroups of 64 rows each, `m64n128k32` (A as A);
/// - skinny (small M, swap AB): `m x 64` of C (`m` M rounded up to 16, at most 64), one
///   warpgroup computing C^T's 64 x `m` with `m64n<m>k32`: B's 64 rows are the
///   instruction's A, A's rows its B, so no instruction row is spent past M (a decode step's
///   16 rows of A would fill a quarter of a square block's instruction rows) and the blocks
///   are twice as many along N (128 for N = 8192, against 64 square ones). Where that still
///   leaves SMs idle (N = 4096: 64 blocks), K is split among a cluster of `splits` blocks
///   (split-K), whose partial sums rank 0 gathers through distributed shared memory.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct Tile {
    rows: [i64; 2],
    warpgroups: i64,
    swapped: bool,
    /// Blocks (a cluster) sharing each tile of C, each summing a range of K's stages.
    splits: i64,
    /// Square blocks with TMA: blocks (a cluster, adjacent tiles of one column of C)
    /// sharing each stage of B, each loading its part of the box for all of them
    /// (`multicast`).
    multicast: i64,
}

/// Rows of square tiles per group of the launch order (`grouped`).
const GROUP: i64 = 8;

/// The largest split (the portable cluster size).
const MAX_SPLITS: i64 = 8;

/// How the stages reach shared memory: every thread copies, then a block-wide barrier
/// (the barrier pipeline); a producer warpgroup copies for two consumer warpgroups, ordered
/// by mbarriers (warp-specialized); or the same with the operands used as stored loaded by
/// TMA, one thread issuing each stage's tiles (`kernel=wgmma-tma`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum Feed {
    Barrier,
    Specialized,
    Tma,
}

/// Which block a lowering takes.
#[derive(Clone, Copy, PartialEq)]
pub(super) enum Blocks {
    /// Skinny when M is static and at most 64, else square.
    ByShape,
    Square,
    Skinny,
}

impl Tile {
    const SQUARE: Tile = Tile {
        rows: [128, 128],
        warpgroups: 2,
        swapped: false,
        splits: 1,
        multicast: 1,
    };

    /// The skinny block for M (`None`: dynamic), not split.
    fn skinny(m: Option<i64>) -> Tile {
        let rows = m.map_or(64, |m| (m.max(1) + 15) / 16 * 16).min(64);
        Tile {
            rows: [rows, 64],
            warpgroups: 1,
            swapped: true,
            splits: 1,
            multicast: 1,
        }
    }

    /// The split of a static M x N x K: the largest power of two (at most 8) that keeps the
    /// blocks within the chip's multiprocessors (`sms`) and gives each split at least two
    /// stages of K.
    fn split_for(self, m: i64, n: i64, k: i64, sms: i64) -> i64 {
        let blocks = ceil(m, self.rows[0]) * ceil(n, self.rows[1]);
        let stages = ceil(k, BK);
        let mut splits = 1;
        while splits < MAX_SPLITS && blocks * splits * 2 <= sms && stages >= 4 * splits {
            splits *= 2;
        }
        splits
    }

    /// Whether the blocks share B's stages (TMA multicast).
    pub(super) fn multicasts(self) -> bool {
        self.multicast > 1
    }

    /// The skinny block (swap AB).
    pub(super) fn is_skinny(self) -> bool {
        self.swapped
    }

    /// The operand (0: A, 1: B) that is the instruction's A, 64 rows per warpgroup.
    fn first(self) -> usize {
        self.swapped as usize
    }

    /// The instruction's N: the rows of the operand that is not its A.
    fn n(self) -> i64 {
        self.rows[1 - self.first()]
    }

    /// Threads computing.
    fn threads(self) -> i64 {
        self.warpgroups * wgmma::THREADS
    }
}

fn ceil(a: i64, b: i64) -> i64 {
    (a + b - 1) / b
}

/// The plan, instruction and block for `op`, or why it needs the register-staged kernel.
/// `splits`: the skinny block's split-K (`None`: by shape, where the shape is static).
pub(super) fn plan(
    op: OperationRef,
    chip: &Chip,
    blocks: Blocks,
    splits: Option<i64>,
) -> Result<(Plan, Wgmma, Tile), String> {
    let (plan, mut instr) = wgmma::plan(op)?;
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
    // Static M and N, and K (codes).
    let (mut m, mut n, mut k) = (None, None, None);
    for (name, v) in [("lhs", o.lhs), ("rhs", o.rhs)] {
        let t = MemRefType::try_from(v.r#type()).map_err(|_| format!("{name} is not a memref"))?;
        // SAFETY: a live memref type.
        let identity = unsafe {
            mlir_sys::mlirAffineMapIsIdentity(mlir_sys::mlirMemRefTypeGetAffineMap(t.to_raw()))
        };
        // One code per byte, or two when packed: the static size of dimension 1 is the
        // row's bytes either way.
        match t.dim_size(1) {
            Ok(DimSize::Static(bytes)) if identity && bytes % 16 == 0 => {}
            _ => {
                return Err(format!(
                    "cp.async needs {name} row-major with static rows of a multiple of 16 bytes"
                ))
            }
        }
        if let Ok(DimSize::Static(rows)) = t.dim_size(0) {
            *(if name == "lhs" { &mut m } else { &mut n }) = Some(rows as i64);
        }
        if let (Ok(DimSize::Static(bytes)), "lhs") = (t.dim_size(1), name) {
            k = Some(if plan.a.packed { 2 * bytes } else { bytes } as i64);
        }
    }
    let mut tile = match blocks {
        Blocks::Square => Tile::SQUARE,
        Blocks::Skinny => Tile::skinny(m),
        Blocks::ByShape if m.is_some_and(|m| m <= 64) => Tile::skinny(m),
        Blocks::ByShape => Tile::SQUARE,
    };
    if tile.swapped {
        tile.splits = match (splits, m, n, k) {
            (Some(s), ..) => s,
            (None, Some(m), Some(n), Some(k)) => {
                tile.split_for(m, n, k, chip.multiprocessors as i64)
            }
            _ => 1,
        };
    } else if splits.is_some_and(|s| s > 1) {
        return Err("split-K takes the skinny block (M <= 64, or kernel=wgmma-skinny)".into());
    }
    instr.swapped = tile.swapped;
    instr.n = tile.n();
    Ok((plan, instr, tile))
}

/// The TMA square block's B multicast for `op` (`requested`: 1 or 2 blocks per cluster,
/// `None`: 2 where it applies): the blocks of a cluster are adjacent along the grid's x,
/// which the grouped order (`grouped`) maps to adjacent tiles of one column of C while
/// groups have an even number of rows; so it takes static M and N with an even number of
/// tiles along each (the cluster also divides the grid), and B loaded by TMA (used as
/// stored).
pub(super) fn multicast(
    op: OperationRef,
    plan: &Plan,
    mut tile: Tile,
    requested: Option<i64>,
) -> Result<Tile, String> {
    if requested == Some(1) {
        return Ok(tile);
    }
    let o = matmul_operands(op).map_err(|e| e.to_string())?;
    let tiles = |v: Value, rows: i64| static_rows(v).map(|r| ceil(r, rows));
    let why = if tile.swapped {
        Some("the skinny block has no B to share (its clusters split K)".to_string())
    } else if plan.b.table.is_some() {
        Some("B is translated, not loaded by TMA".to_string())
    } else {
        match (tiles(o.lhs, tile.rows[0]), tiles(o.rhs, tile.rows[1])) {
            (Some(m), Some(n)) if m % 2 == 0 && n % 2 == 0 => None,
            (Some(m), Some(n)) => Some(format!(
                "clusters of 2 take an even number of 128-row tiles along M and N (here {m} \
                 x {n})"
            )),
            _ => Some("clusters of 2 take static M and N".to_string()),
        }
    };
    match (why, requested) {
        (None, _) => {
            tile.multicast = 2;
            Ok(tile)
        }
        (Some(why), Some(_)) => Err(format!("no TMA multicast: {why}")),
        (Some(_), None) => Ok(tile),
    }
}

/// Rows of a memref (dimension 0), where static.
fn static_rows(v: Value) -> Option<i64> {
    MemRefType::try_from(v.r#type())
        .ok()
        .and_then(|t| match t.dim_size(0) {
            Ok(DimSize::Static(r)) => Some(r as i64),
            _ => None,
        })
}

/// How one operand reaches the instruction's tile.
#[derive(Clone, Copy)]
struct Route {
    /// Rows per block (a multiple of 16: tiles stay on 1024-byte boundaries).
    rows: i64,
    /// Two codes per stored byte.
    packed: bool,
    /// Translated to FP8 between the copy and the instruction (staged), or copied as the
    /// instruction reads it (direct).
    staged: bool,
}

impl Route {
    fn of(o: &Operand, rows: i64) -> Self {
        Route {
            rows,
            packed: o.packed,
            staged: o.table.is_some(),
        }
    }

    /// Bytes of a stage's row as stored.
    fn row_bytes(self) -> i64 {
        if self.packed {
            BK / 2
        } else {
            BK
        }
    }

    /// Bytes of a stage as stored.
    fn raw_bytes(self) -> i64 {
        self.rows * self.row_bytes()
    }

    /// Bytes of its FP8 tile of a stage.
    fn tile_bytes(self) -> i64 {
        self.rows * BK
    }

    /// 16-byte chunks of a stage.
    fn total(self) -> i64 {
        self.raw_bytes() / 16
    }

    /// 16-byte chunks each of `copiers` threads copies per stage (at most: the last round
    /// may leave some threads out).
    fn chunks(self, copiers: i64) -> i64 {
        ceil(self.total(), copiers)
    }

    /// Codes per 16-byte chunk.
    fn codes(self) -> i64 {
        if self.packed {
            32
        } else {
            16
        }
    }
}

/// The dynamic shared memory: a ring of `stages` slots, each holding both operands' stage as
/// stored (direct operands: the FP8 tile in the 128-byte swizzle; staged ones: rows as
/// stored). The translated FP8 tiles of staged operands follow the ring, two per operand
/// (stage parity), or, warp-specialized (the producer runs up to a ring ahead), sit in each
/// slot; then the specialized kernel's mbarriers (a full and an empty one per slot). Every
/// tile starts on a multiple of 1024 bytes from the base.
#[derive(Clone, Copy)]
struct Memory {
    tile: Tile,
    routes: [Route; 2],
    /// A producer warpgroup copies, two consumer warpgroups compute.
    specialized: bool,
    /// Direct operands come by TMA (`cp.async.bulk.tensor`, one thread per stage), staged
    /// ones by the producer warpgroup's `cp.async`.
    tma: bool,
    /// Threads that copy (and translate) the stages.
    copiers: i64,
    stages: i64,
    /// Bytes of a slot, and each operand's offset in it.
    slot: i64,
    in_slot: [i64; 2],
    /// Each staged operand's translated tile: after the ring (parity pairs) or in the slot.
    translated: [Option<i64>; 2],
    /// The mbarriers: specialized, `stages` full ones, then `stages` empty ones; the barrier
    /// pipeline with TMA, `stages` full ones (8 bytes each).
    barriers: i64,
    bytes: i64,
    /// Each operand's block scales staged through shared memory (`ScaleStage`), where they
    /// are.
    scales: [Option<ScaleStage>; 2],
    /// The block scales folded into the translated codes, where they may be (`Fold`).
    fold: Option<Fold>,
}

/// An operand's block scales staged through shared memory:
/// each stage's scales of the block's rows travel with the stage (`cp.async` of `per_row`
/// bytes a row, one copying thread per row), the thread that copied a row decodes them to
/// f32 once (`decode_scales`: in the barrier pipeline into a ring of `PARITIES` like the
/// translated tiles, warp-specialized into the slot, before the producer arrives), and
/// each promotion reads its rows' and columns' values from there.
/// Without it every thread would load and decode its 2 + 32 scale bytes per segment (for
/// MX, 6 integer instructions each: more issue slots than the segment's wgmma takes).
#[derive(Clone, Copy, Debug, PartialEq)]
struct ScaleStage {
    /// K per scale (the operand's block along K).
    span: i64,
    /// Bytes per scale as stored (1, or 4 for f32).
    size: i64,
    /// Stage s's bytes of block row r: in a ring of `stages` entries of `entry` bytes at
    /// `ring` (after the translated tiles), `in_entry + r * per_row` into entry s % stages.
    ring: i64,
    entry: i64,
    in_entry: i64,
    /// The decoded values of stage s: f32 [scale of the stage][row] at `decoded + (s %
    /// decoded_ring) * decoded_stride` (the barrier pipeline: a ring of 3 after the
    /// translated tiles; warp-specialized: in each slot).
    decoded: i64,
    decoded_ring: i64,
    decoded_stride: i64,
}

impl ScaleStage {
    /// Where stage `s`'s copy of block row `r` is (`stages` in the ring).
    fn copied<'c, 'a>(
        self,
        e: &Emitter<'c, 'a>,
        stages: i64,
        s: Value<'c, 'a>,
        r: Value<'c, 'a>,
    ) -> Value<'c, 'a> {
        let entry = e.muli(e.remui(s, e.index(stages)), e.index(self.entry));
        let at = e.addi(e.index(self.ring + self.in_entry), entry);
        e.addi(at, e.muli(r, e.index(self.per_row())))
    }

    /// Scales per row and stage.
    fn count(self) -> i64 {
        BK / self.span
    }

    /// Bytes per row and stage as stored (4, 8 or 16: one `cp.async`).
    fn per_row(self) -> i64 {
        self.count() * self.size
    }
}

/// The scale blocks along K (K per scale, bytes per scale) of the operands whose scales a
/// pipeline may stage (`ScaleStage`): where the scales change along K in blocks that
/// tile the stage, a stage's scales of a row are 4, 8 or 16 bytes, and K (static) is whole
/// stages, so that each row's stage is one aligned copy inside the scales.
fn staged_scale_blocks(kn: &Kernel, k: Option<i64>) -> [Option<(i64, i64)>; 2] {
    let whole = kn.plan.seg.is_some() && !kn.plan.scaled && k.is_some_and(|k| k % BK == 0);
    [&kn.ops.sa, &kn.ops.sb].map(|s| {
        let span = match s.layout {
            ScaleLayout::Mx { block } => block as i64,
            ScaleLayout::Blockwise { cols, .. } => cols as i64,
            _ => return None,
        };
        let size = match s.dtype {
            ScaleDtype::F32 => 4,
            ScaleDtype::UE8M0 | ScaleDtype::UE4M3 => 1,
            _ => return None,
        };
        let per_row = BK / span.max(1) * size;
        (whole && span <= BK && BK % span == 0 && matches!(per_row, 4 | 8 | 16))
            .then_some((span, size))
    })
}

/// Block scales folded into the translated codes (`fold-scales`), so that a stage is one
/// partial sum of 128 promoted once instead of four of 32 promoted each: where every
/// operand whose scales change along K is translated 4 bits at a time (FP4, 4-bit customs)
/// with E8M0 32-blocks staged through shared memory. Block j of a row's stage has scale
/// `2^(e_j - 127)`; with `max` the largest of the stage's four, its codes are translated
/// with a table whose finite nonzero images are `d_j = max - e_j` binades smaller (their
/// exponent field less `d_j`: exact while they stay normal, `reach` binades for the
/// table), and the stage's partial sums are scaled by the rows' and columns' `2^(max -
/// 127)`. Whether every row of a block's stages is within reach (and no scale is NaN) is
/// known from the scales alone: the block scans them first (`fold_scan`) and runs the
/// folded loop or the per-32 one. The square block, barrier pipeline or warp-specialized
/// (whose producers scan, and whose consumers take the branch the producers' `bar.red.or`
/// gave them), whose copying threads translate and hold the rows' scales; not with TMA
/// (which loads operands used as stored: a folded operand is translated).
#[derive(Clone, Copy, Debug, PartialEq)]
struct Fold {
    /// Per operand whose scales change along K: the largest `d` its table absorbs, and its
    /// table words' steps (`1 << mantissa bits` in the bytes of images that move, 0 in the
    /// others: zeros, infinities, NaN), so that `word - d * step` is the table for `d`.
    reach: [Option<(i64, [u32; 4])>; 2],
}

/// How far down (binades) the finite nonzero images of a 4-bit table into `target`
/// (E4M3 / E5M2) move exactly by subtracting from their exponent field, and the words'
/// steps (`Fold`); `None` when not even one binade.
fn fold_reach(target: ScaledFormat, table: [u32; 4]) -> Option<(i64, [u32; 4])> {
    let unit = 1u32 << target.mant_bits();
    let moves = |v: u8| {
        let x = target.decode(v);
        x.is_finite() && x != 0.0
    };
    let images: Vec<u8> = table.iter().flat_map(|w| w.to_le_bytes()).collect();
    let exact = |d: u32| {
        images.iter().all(|&v| {
            let moved = (v as u32).checked_sub(d * unit);
            !moves(v)
                || moved.is_some_and(|m| {
                    m & 0x80 == v as u32 & 0x80
                        && target.decode(m as u8) == target.decode(v) * (-(d as f32)).exp2()
                })
        })
    };
    let reach = (1..32).take_while(|&d| exact(d)).last()?;
    let steps = table.map(|w| {
        (0..4)
            .filter(|i| moves((w >> (8 * i)) as u8))
            .map(|i| unit << (8 * i))
            .sum()
    });
    Some((reach as i64, steps))
}

/// The fold of `kn`'s scales in `mem`'s block (`Fold`), where it applies.
fn fold_plan(kn: &Kernel, mem: &Memory) -> Option<Fold> {
    let tile = mem.tile;
    if mem.tma || tile.swapped || tile.splits > 1 {
        return None;
    }
    if segment_shape(kn.plan).0 >= BK {
        return None;
    }
    let mut reach = [None, None];
    for (x, slot) in reach.iter_mut().enumerate() {
        let scaled = [&kn.ops.sa, &kn.ops.sb][x];
        if !matches!(
            scaled.layout,
            ScaleLayout::Mx { .. } | ScaleLayout::Blockwise { .. }
        ) {
            continue;
        }
        let st = mem.scales[x]?;
        let operand = [&kn.plan.a, &kn.plan.b][x];
        if scaled.dtype != ScaleDtype::UE8M0 || st.span != 32 || !mem.routes[x].staged {
            return None;
        }
        *slot = Some(fold_reach(
            operand.ty,
            nibble_table(operand.table.as_ref()?)?,
        )?);
    }
    reach.iter().any(Option::is_some).then_some(Fold { reach })
}

/// Whether the four E8M0 scales in `word` (a row's stage) fold within `reach` binades of
/// their maximum (none NaN), as an `i1`.
fn fold_fits<'c, 'a>(e: &Emitter<'c, 'a>, word: Value<'c, 'a>, reach: i64) -> Value<'c, 'a> {
    let (most, least) = byte_range(e, word);
    e.andi(
        e.cmpi(CmpiPredicate::Ule, e.subi(most, least), e.i32(reach as u32)),
        e.cmpi(CmpiPredicate::Ne, most, e.i32(0xFF)),
    )
}

/// The largest and smallest of the four bytes of `word` (`i32`s).
fn byte_range<'c, 'a>(e: &Emitter<'c, 'a>, word: Value<'c, 'a>) -> (Value<'c, 'a>, Value<'c, 'a>) {
    let bytes: Vec<Value> = (0..4)
        .map(|i| e.andi(e.shrui(word, e.i32(8 * i)), e.i32(0xFF)))
        .collect();
    let most = bytes[1..].iter().fold(bytes[0], |m, &b| e.maxsi(m, b));
    let least = bytes[1..].iter().fold(bytes[0], |m, &b| e.minsi(m, b));
    (most, least)
}

impl Memory {
    /// The layout for `plan` in `tile`, fed by `feed`, within the chip's shared memory per
    /// block (sm_90a: 227 KiB).
    /// `scale_blocks`: the operands whose scales may be staged (`staged_scale_blocks`); they
    /// are where threads copy the stages and the room for them costs no stage (the barrier
    /// pipeline: keeps at least 4).
    fn new(
        plan: &Plan,
        chip: &Chip,
        tile: Tile,
        feed: Feed,
        scale_blocks: [Option<(i64, i64)>; 2],
    ) -> Self {
        // TMA feeds the square block's producer warpgroup, or the skinny block's barrier
        // pipeline (one warpgroup: no room for a producer).
        let specialized = feed == Feed::Specialized || (feed == Feed::Tma && !tile.swapped);
        let tma = feed == Feed::Tma;
        let limit = chip.shared_kib as i64 * 1024;
        let routes = [
            Route::of(&plan.a, tile.rows[0]),
            Route::of(&plan.b, tile.rows[1]),
        ];
        let raw = routes[0].raw_bytes() + routes[1].raw_bytes();
        let staged: i64 = routes
            .iter()
            .filter(|r| r.staged)
            .map(|r| r.tile_bytes())
            .sum();
        let in_slot = [0, routes[0].raw_bytes()];
        // Operand x's staged scales of a stage (K per scale, bytes per scale): as copied,
        // and decoded (f32).
        let copied_bytes = |x: usize, (span, size): (i64, i64)| tile.rows[x] * BK / span * size;
        let decoded_bytes = |x: usize, span: i64| tile.rows[x] * BK / span * 4;
        if specialized {
            let most = if tile.swapped {
                SKINNY_STAGES
            } else {
                SPECIALIZED_STAGES
            };
            // Staged scales (copied by the producer warpgroup, also where TMA loads both
            // operands): in each slot after the translated tiles, the rows' stage bytes as
            // copied, then their decoded values; the slot rounded up to whole 1024-byte
            // atoms (the next slot's tiles); not where that costs a stage.
            let fit = |blocks: [Option<(i64, i64)>; 2]| {
                let extra: i64 = (0..2)
                    .filter_map(|x| blocks[x].map(|b| copied_bytes(x, b) + decoded_bytes(x, b.0)))
                    .sum();
                let slot = (raw + staged + extra + ATOM - 1) / ATOM * ATOM;
                (most.min((limit - 1024 - 2 * most * 8) / slot), slot, blocks)
            };
            let (stages, slot, blocks) = match (fit(scale_blocks), fit([None, None])) {
                (with, without) if with.0 < without.0 => without,
                (with, _) => with,
            };
            let mut next = raw;
            let translated = routes.map(|r| {
                r.staged.then(|| {
                    next += r.tile_bytes();
                    next - r.tile_bytes()
                })
            });
            let entry_at = next;
            let in_entry = [0, 1].map(|x| {
                blocks[x].map(|b| {
                    next += copied_bytes(x, b);
                    next - copied_bytes(x, b) - entry_at
                })
            });
            let scales = [0, 1].map(|x| {
                blocks[x].map(|(span, size)| {
                    next += decoded_bytes(x, span);
                    ScaleStage {
                        span,
                        size,
                        ring: entry_at,
                        entry: slot,
                        in_entry: in_entry[x].expect("a staged operand's copies"),
                        decoded: next - decoded_bytes(x, span),
                        decoded_ring: stages,
                        decoded_stride: slot,
                    }
                })
            });
            let barriers = stages * slot;
            return Memory {
                tile,
                routes,
                specialized,
                tma,
                copiers: PRODUCERS,
                stages,
                slot,
                in_slot,
                translated,
                barriers,
                bytes: barriers + 2 * stages * 8,
                scales,
                fold: None,
            };
        }
        let most = if tile.swapped { SKINNY_STAGES } else { STAGES };
        // With TMA, a full mbarrier per slot after the translated tiles.
        let full = if tma { 8 } else { 0 };
        // Staged scales: a ring of the stages' copies (an entry per slot: A's rows, then
        // B's; with TMA too, every thread still commits a copy group per stage) and the
        // ring of 3 of decoded values, after the translated tiles; not where that leaves
        // fewer than 4 stages.
        let fit = |blocks: [Option<(i64, i64)>; 2]| {
            let mut entry = 0;
            let in_entry = [0, 1].map(|x| {
                blocks[x].map(|b| {
                    entry += copied_bytes(x, b);
                    entry - copied_bytes(x, b)
                })
            });
            let decoded: i64 = (0..2)
                .filter_map(|x| blocks[x].map(|(span, _)| PARITIES * decoded_bytes(x, span)))
                .sum();
            let stages = most
                .min((limit - 1024 - PARITIES * staged - decoded - most * full) / (raw + entry));
            (stages, entry, in_entry, blocks)
        };
        let (stages, entry, in_entry, blocks) = match fit(scale_blocks) {
            (stages, ..) if stages < 4 => fit([None, None]),
            fitted => fitted,
        };
        debug_assert!(stages >= 4, "two slots read, two ahead");
        let mut next = stages * raw;
        let translated = routes.map(|r| {
            r.staged.then(|| {
                next += PARITIES * r.tile_bytes();
                next - PARITIES * r.tile_bytes()
            })
        });
        let ring = next;
        next += stages * entry;
        let scales = [0, 1].map(|x| {
            blocks[x].map(|(span, size)| {
                next += PARITIES * decoded_bytes(x, span);
                ScaleStage {
                    span,
                    size,
                    ring,
                    entry,
                    in_entry: in_entry[x].expect("a staged operand's copies"),
                    decoded: next - PARITIES * decoded_bytes(x, span),
                    decoded_ring: PARITIES,
                    decoded_stride: decoded_bytes(x, span),
                }
            })
        });
        Memory {
            tile,
            routes,
            specialized,
            tma,
            copiers: tile.threads(),
            stages,
            slot: raw,
            in_slot,
            translated,
            barriers: next,
            bytes: next + stages * full,
            scales,
            fold: None,
        }
    }

    /// What the kernel asks for: the memory (at least what split-K's gathering takes, a
    /// word per accumulator and thread) and the slack that aligns its base to 1024.
    fn dynamic_bytes(&self) -> i64 {
        let gathered = if self.tile.splits > 1 {
            self.tile.threads() * self.tile.n() / 2 * 4
        } else {
            0
        };
        self.bytes.max(gathered) + 1024
    }

    /// The first byte of stage `s`'s slot.
    fn slot_of<'c, 'a>(&self, e: &Emitter<'c, 'a>, s: Value<'c, 'a>) -> Value<'c, 'a> {
        e.muli(e.remui(s, e.index(self.stages)), e.index(self.slot))
    }

    /// Byte offset (from the base) of operand `x`'s stage `s` as copied.
    fn copied<'c, 'a>(&self, e: &Emitter<'c, 'a>, x: usize, s: Value<'c, 'a>) -> Value<'c, 'a> {
        e.addi(self.slot_of(e, s), e.index(self.in_slot[x]))
    }

    /// Byte offset of the FP8 tile the instruction reads for operand `x` at stage `s`.
    fn tile<'c, 'a>(&self, e: &Emitter<'c, 'a>, x: usize, s: Value<'c, 'a>) -> Value<'c, 'a> {
        match self.translated[x] {
            Some(at) if self.specialized => e.addi(self.slot_of(e, s), e.index(at)),
            Some(at) => e.addi(
                e.index(at),
                e.muli(
                    e.remui(s, e.index(PARITIES)),
                    e.index(self.routes[x].tile_bytes()),
                ),
            ),
            None => self.copied(e, x, s),
        }
    }
}

/// Byte offset of row `r`'s 16-byte chunk `ch` in an FP8 tile in the 128-byte swizzle.
fn swizzled<'c, 'a>(e: &Emitter<'c, 'a>, r: Value<'c, 'a>, ch: Value<'c, 'a>) -> Value<'c, 'a> {
    let (c8, c16) = (e.index(8), e.index(16));
    e.addi(
        e.muli(r, e.index(128)),
        e.muli(e.xori(ch, e.remui(r, c8)), c16),
    )
}

/// Thread `tid`'s chunk `i` of an operand's stage at K `k0`: whether it holds codes (row
/// inside the operand, chunk inside K), its tile row and chunk, its row and first byte in
/// the operand clamped inside it (a valid source either way), and where it is copied (from
/// the operand's place in the slot).
struct Chunk<'c, 'a> {
    inside: Value<'c, 'a>,
    r: Value<'c, 'a>,
    ch: Value<'c, 'a>,
    row: Value<'c, 'a>,
    byte: Value<'c, 'a>,
    offset: Value<'c, 'a>,
}

#[allow(clippy::too_many_arguments)]
fn chunk<'c, 'a>(
    e: &Emitter<'c, 'a>,
    route: Route,
    copiers: i64,
    tid: Value<'c, 'a>,
    i: i64,
    origin: Value<'c, 'a>,
    rows: Value<'c, 'a>,
    k: Value<'c, 'a>,
    k0: Value<'c, 'a>,
) -> Chunk<'c, 'a> {
    let per_row = e.index(route.row_bytes() / 16);
    let c = e.addi(tid, e.index(copiers * i));
    let (r, ch) = (e.divui(c, per_row), e.remui(c, per_row));
    let row = e.addi(origin, r);
    let codes = e.index(route.codes());
    let kc = e.addi(k0, e.muli(ch, codes));
    let inside = e.andi(
        e.cmpi(CmpiPredicate::Ult, row, rows),
        e.cmpi(CmpiPredicate::Ult, kc, k),
    );
    let kc = e.minui(kc, e.subi(k, codes));
    let byte = if route.packed {
        e.divui(kc, e.index(2))
    } else {
        kc
    };
    let offset = if route.staged {
        e.addi(
            e.muli(r, e.index(route.row_bytes())),
            e.muli(ch, e.index(16)),
        )
    } else {
        swizzled(e, r, ch)
    };
    Chunk {
        inside,
        r,
        ch,
        row: e.minui(row, e.subi(rows, e.index(1))),
        byte,
        offset,
    }
}

/// Run `body` on each of thread `tid`'s chunks of `side`'s stage at K `k0` (`chunk`): as it
/// is where every copier has the chunk, under an `if` in a last round the copiers do not
/// fill (a skinny block's packed A: 16 rows of 64 bytes are 64 chunks for 128 threads).
#[allow(clippy::too_many_arguments)]
fn each_chunk<'c, 'a>(
    e: &Emitter<'c, 'a>,
    route: Route,
    copiers: i64,
    tid: Value<'c, 'a>,
    side: &Side<'c, 'a>,
    k: Value<'c, 'a>,
    k0: Value<'c, 'a>,
    body: impl Fn(&Emitter<'c, 'a>, Chunk<'c, 'a>),
) {
    for i in 0..route.chunks(copiers) {
        let run = |e: &Emitter<'c, 'a>| {
            body(
                e,
                chunk(e, route, copiers, tid, i, side.origin, side.rows, k, k0),
            )
        };
        if (i + 1) * copiers <= route.total() {
            run(e);
        } else {
            let c = e.addi(tid, e.index(copiers * i));
            e.if_then(e.cmpi(CmpiPredicate::Ult, c, e.index(route.total())), run);
        }
    }
}

/// Shared memory as the kernel addresses it: on the GPU from the aligned base address (an
/// `i64`), in the emulation a buffer of 32-bit words standing for it from address 0.
#[derive(Clone, Copy)]
enum Shared<'c, 'a> {
    Gpu(Value<'c, 'a>),
    Cpu(Value<'c, 'a>),
}

impl<'c, 'a> Shared<'c, 'a> {
    /// The kernel's dynamic shared memory, its base rounded up to 1024 bytes (the swizzle
    /// atoms' alignment; `Memory::dynamic_bytes` has the slack).
    fn aligned(e: &Emitter<'c, 'a>, memory: Value<'c, 'a>) -> Self {
        let raw = wgmma::smem_address(e, memory);
        Shared::Gpu(e.andi(e.addi(raw, e.int(64, 1023)), e.int(64, !1023)))
    }

    /// The byte address of `offset` (an index) as an `i64` (for descriptors).
    fn address(&self, e: &Emitter<'c, 'a>, offset: Value<'c, 'a>) -> Value<'c, 'a> {
        let offset = e.index_castui(offset, e.int_type(64));
        match *self {
            Shared::Gpu(base) => e.addi(base, offset),
            Shared::Cpu(_) => offset,
        }
    }

    /// PTX `prmt.b32` (default mode): byte i of the result is byte `n & 7` of the 8 bytes of
    /// `lo` (0-3) and `hi` (4-7), `n` nibble i of `selector`, replaced by its sign (0x00 /
    /// 0xFF) when `n & 8`. On the GPU `nvvm.prmt`, in the emulation the same by shifts.
    fn permute(
        &self,
        e: &Emitter<'c, 'a>,
        lo: Value<'c, 'a>,
        hi: Value<'c, 'a>,
        selector: Value<'c, 'a>,
    ) -> Value<'c, 'a> {
        if let Shared::Gpu(_) = self {
            return e.val(
                OperationBuilder::new("nvvm.prmt", e.loc())
                    .add_operands(&[lo, hi, selector])
                    .add_attributes(&[(
                        Identifier::new(e.ctx(), "mode"),
                        Attribute::parse(e.ctx(), "#nvvm.permute_mode<default>")
                            .expect("valid permute mode"),
                    )])
                    .add_results(&[e.int_type(32)])
                    .build()
                    .expect("valid nvvm.prmt"),
            );
        }
        let (i64t, i32t) = (e.int_type(64), e.int_type(32));
        let pool = e.ori(e.extui(lo, i64t), e.shli(e.extui(hi, i64t), e.int(64, 32)));
        (0..4).fold(e.i32(0), |acc, i| {
            let n = e.andi(e.shrui(selector, e.i32(4 * i)), e.i32(0xF));
            let at = e.extui(e.muli(e.andi(n, e.i32(7)), e.i32(8)), i64t);
            let byte = e.trunci(e.andi(e.shrui(pool, at), e.int(64, 0xFF)), i32t);
            let negative = e.cmpi(CmpiPredicate::Ne, e.andi(byte, e.i32(0x80)), e.i32(0));
            let sign = e.select(negative, e.i32(0xFF), e.i32(0));
            let replicate = e.cmpi(CmpiPredicate::Ne, e.andi(n, e.i32(8)), e.i32(0));
            let byte = e.select(replicate, sign, byte);
            e.ori(acc, e.shli(byte, e.i32(8 * i)))
        })
    }

    /// The 16 bytes at `offset` (16-byte aligned) as 4 words.
    fn load4(&self, e: &Emitter<'c, 'a>, offset: Value<'c, 'a>) -> Vec<Value<'c, 'a>> {
        self.load_words(e, offset, 4)
    }

    /// The `n` (1, 2 or 4) words at `offset` (`4 n`-byte aligned), in one load.
    fn load_words(&self, e: &Emitter<'c, 'a>, offset: Value<'c, 'a>, n: i64) -> Vec<Value<'c, 'a>> {
        let i32t = e.int_type(32);
        match *self {
            Shared::Gpu(_) => {
                let p = pointer(e, self.address(e, offset), 3);
                let t = if n == 1 {
                    i32t
                } else {
                    e.vector_type(n as u64, i32t)
                };
                let v = e.val(
                    OperationBuilder::new("llvm.load", e.loc())
                        .add_operands(&[p])
                        .add_attributes(&[alignment(e, 4 * n)])
                        .add_results(&[t])
                        .build()
                        .expect("valid llvm.load"),
                );
                if n == 1 {
                    return vec![v];
                }
                (0..n).map(|w| e.extract(v, w, i32t)).collect()
            }
            Shared::Cpu(buffer) => {
                let at = e.divui(offset, e.index(4));
                (0..n)
                    .map(|w| e.load(buffer, &[e.addi(at, e.index(w))]))
                    .collect()
            }
        }
    }

    /// Store 4 words at `offset` (16-byte aligned).
    fn store4(&self, e: &Emitter<'c, 'a>, offset: Value<'c, 'a>, words: &[Value<'c, 'a>]) {
        self.store_words(e, offset, words)
    }

    /// Store 1, 2 or 4 words at `offset` (aligned to their size), in one store.
    fn store_words(&self, e: &Emitter<'c, 'a>, offset: Value<'c, 'a>, words: &[Value<'c, 'a>]) {
        match *self {
            Shared::Gpu(_) => {
                let p = pointer(e, self.address(e, offset), 3);
                let v = if words.len() == 1 {
                    words[0]
                } else {
                    e.from_elements(words)
                };
                e.insert(
                    OperationBuilder::new("llvm.store", e.loc())
                        .add_operands(&[v, p])
                        .add_attributes(&[alignment(e, 4 * words.len() as i64)])
                        .build()
                        .expect("valid llvm.store"),
                );
            }
            Shared::Cpu(buffer) => {
                let at = e.divui(offset, e.index(4));
                for (w, &v) in words.iter().enumerate() {
                    e.store(v, buffer, &[e.addi(at, e.index(w as i64))]);
                }
            }
        }
    }
}

fn alignment<'c>(e: &Emitter<'c, '_>, bytes: i64) -> (Identifier<'c>, Attribute<'c>) {
    (
        Identifier::new(e.ctx(), "alignment"),
        melior::ir::attribute::IntegerAttribute::new(e.int_type(64), bytes).into(),
    )
}

/// The wgmma descriptor of a K-major tile in the 128-byte swizzle at shared-memory byte
/// address `addr` (an `i64`, its atom 1024-byte aligned): start >> 4, leading offset 1
/// (unused), stride offset 1024 >> 4, layout type 1 (128-byte swizzle) in bits 62-63.
fn descriptor<'c, 'a>(e: &Emitter<'c, 'a>, addr: Value<'c, 'a>) -> Value<'c, 'a> {
    let start = e.shrui(e.andi(addr, e.int(64, 0x3FFFF)), e.int(64, 4));
    let fixed = (1i64 << 16) | ((ATOM >> 4) << 32) | (1i64 << 62);
    e.ori(start, e.int(64, fixed))
}

/// An `i64` address as an LLVM pointer in `space` (1 global, 3 shared); a global pointer
/// goes through the generic one (`cvta.to.global`).
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

/// Operand codes `bits` (bytes, row-major) as a TMA tensor map, made on the host
/// (`nvgpu.tma.create.descriptor`): boxes of `rows` rows x 128 bytes (one stage of the
/// block's rows), landing in the 128-byte swizzle the wgmma descriptors read, zeros where
/// the box leaves the tensor. The kernel takes the pointer the descriptor lowers to (the map
/// in global memory, as the runtime writes it before the launch).
fn tensor_map<'c, 'a>(e: &Emitter<'c, 'a>, bits: Value<'c, 'a>, rows: i64) -> Value<'c, 'a> {
    let ctx = e.ctx();
    let ty = |text: &str| Type::parse(ctx, text).expect("valid tensor map type");
    let unranked = e.val(
        OperationBuilder::new("memref.cast", e.loc())
            .add_operands(&[bits])
            .add_results(&[ty("memref<*xi8>")])
            .build()
            .expect("valid memref.cast"),
    );
    let map = ty(&format!(
        "!nvgpu.tensormap.descriptor<tensor = memref<{rows}x{BK}xi8, 3>, \
         swizzle = swizzle_128b, l2promo = l2promo_256b, oob = zero, interleave = none>"
    ));
    let map = e.val(
        OperationBuilder::new("nvgpu.tma.create.descriptor", e.loc())
            .add_operands(&[unranked, e.index(rows), e.index(BK)])
            .add_results(&[map])
            .build()
            .expect("valid nvgpu.tma.create.descriptor"),
    );
    e.val(
        OperationBuilder::new("builtin.unrealized_conversion_cast", e.loc())
            .add_operands(&[map])
            .add_results(&[ty("!llvm.ptr")])
            .build()
            .expect("valid cast"),
    )
}

/// The TMA box of operand `side`'s stage `s`, innermost coordinate first: the stage's first
/// byte along the row (one code a byte: TMA takes the operands used as stored), the
/// block's first row.
fn box_origin<'c, 'a>(
    e: &Emitter<'c, 'a>,
    side: &Side<'c, 'a>,
    s: Value<'c, 'a>,
) -> [Value<'c, 'a>; 2] {
    [e.muli(s, e.index(BK)), side.origin]
}

/// `cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes`: the
/// box of `map` at `origin` into shared memory at `dst` (an `i64` address, 1024-aligned for
/// the swizzle), its bytes counted on the mbarrier `bar`; with `mask` (`.multicast::cluster`)
/// into the same offset of each block of the cluster in the mask, counted on the mbarrier at
/// `bar`'s offset in each.
fn tma_load<'c, 'a>(
    e: &Emitter<'c, 'a>,
    map: Value<'c, 'a>,
    dst: Value<'c, 'a>,
    bar: Value<'c, 'a>,
    origin: [Value<'c, 'a>; 2],
    mask: Option<Value<'c, 'a>>,
) {
    let ctx = e.ctx();
    // The CTA's own shared memory as a shared::cluster address (`cvta`).
    let dst = e.val(
        OperationBuilder::new("llvm.addrspacecast", e.loc())
            .add_operands(&[pointer(e, dst, 3)])
            .add_results(&[Type::parse(ctx, "!llvm.ptr<7>").expect("valid pointer type")])
            .build()
            .expect("valid addrspacecast"),
    );
    let [x, y] = origin.map(|c| e.index_castui(c, e.int_type(32)));
    let mut operands = vec![dst, map, x, y, bar];
    operands.extend(mask);
    e.insert(
        OperationBuilder::new("nvvm.cp.async.bulk.tensor.shared.cluster.global", e.loc())
            .add_operands(&operands)
            .add_attributes(&[(
                Identifier::new(ctx, "operandSegmentSizes"),
                Attribute::parse(
                    ctx,
                    &format!("array<i32: 1, 1, 2, 1, 0, {}, 0, 0>", mask.is_some() as i32),
                )
                .expect("valid segment sizes"),
            )])
            .build()
            .expect("valid nvvm.cp.async.bulk.tensor.shared.cluster.global"),
    );
}

/// The bytes a stage's boxes bring (the operands with a tensor map).
fn box_bytes(mem: &Memory, maps: [Option<Value>; 2]) -> i64 {
    (0..2)
        .filter(|&x| maps[x].is_some())
        .map(|x| mem.routes[x].raw_bytes())
        .sum()
}

/// Issue stage `s`'s box of each operand with a tensor map into its place in the slot,
/// counted on the mbarrier `bar`. With B multicast, the block of cluster rank `rank` loads
/// its part of B's stage (`part`) into every block of the cluster.
#[allow(clippy::too_many_arguments)]
fn load_boxes<'c, 'a>(
    e: &Emitter<'c, 'a>,
    mem: &Memory,
    shared: Shared<'c, 'a>,
    maps: [Option<Value<'c, 'a>>; 2],
    sides: &[Side<'c, 'a>; 2],
    bar: Value<'c, 'a>,
    s: Value<'c, 'a>,
    rank: Value<'c, 'a>,
) {
    for (x, map) in maps.iter().enumerate() {
        if let Some(map) = *map {
            let dst = mem.copied(e, x, s);
            let origin = box_origin(e, &sides[x], s);
            if x == 1 && mem.tile.multicast > 1 {
                let (dst, origin) = part(e, mem, dst, origin, rank);
                let everyone = e.int(16, (1 << mem.tile.multicast) - 1);
                tma_load(e, map, shared.address(e, dst), bar, origin, Some(everyone));
            } else {
                tma_load(e, map, shared.address(e, dst), bar, origin, None);
            }
        }
    }
}

/// With B multicast, the part of B's stage (box at `origin`, landing at `dst`) that the
/// block of cluster rank `rank` loads: its `rows / multicast` rows (`rows` the tile's),
/// whole 8-row atoms of the swizzle (1024 bytes), so each part lands in the same swizzle
/// as the whole box.
fn part<'c, 'a>(
    e: &Emitter<'c, 'a>,
    mem: &Memory,
    dst: Value<'c, 'a>,
    origin: [Value<'c, 'a>; 2],
    rank: Value<'c, 'a>,
) -> (Value<'c, 'a>, [Value<'c, 'a>; 2]) {
    let rows = mem.routes[1].rows / mem.tile.multicast;
    debug_assert!(rows * BK % ATOM == 0);
    let first = e.muli(rank, e.index(rows));
    (
        e.addi(dst, e.muli(first, e.index(BK))),
        [origin[0], e.addi(origin[1], first)],
    )
}

/// `fence.proxy.tensormap::generic.acquire.gpu` on a tensor map in global memory: the
/// host's write of it ordered before the TMA unit reads it.
fn acquire_tensor_map<'c, 'a>(e: &Emitter<'c, 'a>, map: Value<'c, 'a>) {
    let ctx = e.ctx();
    e.insert(
        OperationBuilder::new("nvvm.fence.proxy.acquire", e.loc())
            .add_operands(&[map, e.i32(128)])
            .add_attributes(&[(
                Identifier::new(ctx, "scope"),
                Attribute::parse(ctx, "#nvvm.mem_scope<gpu>").expect("valid scope"),
            )])
            .build()
            .expect("valid nvvm.fence.proxy.acquire"),
    );
}

/// `nvvm.cp.async.shared.global` of 16 bytes from `src` to `dst`, `size` of them read (the
/// rest zero).
fn cp_async<'c, 'a>(
    e: &Emitter<'c, 'a>,
    dst: Value<'c, 'a>,
    src: Value<'c, 'a>,
    size: Value<'c, 'a>,
) {
    cp_async_of(e, dst, src, 16, size)
}

/// `nvvm.cp.async.shared.global` of `bytes` (4, 8 or 16; `.cg`, which bypasses L1, takes 16
/// only) from `src` to `dst`, `size` of them read.
fn cp_async_of<'c, 'a>(
    e: &Emitter<'c, 'a>,
    dst: Value<'c, 'a>,
    src: Value<'c, 'a>,
    bytes: i64,
    size: Value<'c, 'a>,
) {
    let ctx = e.ctx();
    let modifier = if bytes == 16 { "cg" } else { "ca" };
    e.insert(
        OperationBuilder::new("nvvm.cp.async.shared.global", e.loc())
            .add_operands(&[dst, src, size])
            .add_attributes(&[
                (
                    Identifier::new(ctx, "size"),
                    Attribute::parse(ctx, &format!("{bytes} : i32")).expect("valid size"),
                ),
                (
                    Identifier::new(ctx, "modifier"),
                    Attribute::parse(ctx, &format!("#nvvm<load_cache_modifier {modifier}>"))
                        .expect("valid modifier"),
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

/// Per-operand facts of the copies: its codes (memref), rows, tile origin, bytes per row.
struct Side<'c, 'a> {
    bits: Value<'c, 'a>,
    rows: Value<'c, 'a>,
    origin: Value<'c, 'a>,
    row_bytes: Value<'c, 'a>,
    operand: &'a Operand,
}

fn sides<'c, 'a, 'p: 'a>(
    e: &Emitter<'c, 'a>,
    kn: &Kernel<'p, 'c, 'a>,
    tile: Tile,
    bm: Value<'c, 'a>,
    bn: Value<'c, 'a>,
) -> [Side<'c, 'a>; 2] {
    let k = kn.ops.k;
    let row_bytes = |o: &Operand| {
        if o.packed {
            e.divui(k, e.index(2))
        } else {
            k
        }
    };
    [
        Side {
            bits: kn.ops.bits_a,
            rows: kn.ops.m,
            origin: e.muli(bm, e.index(tile.rows[0])),
            row_bytes: row_bytes(&kn.plan.a),
            operand: &kn.plan.a,
        },
        Side {
            bits: kn.ops.bits_b,
            rows: kn.ops.n,
            origin: e.muli(bn, e.index(tile.rows[1])),
            row_bytes: row_bytes(&kn.plan.b),
            operand: &kn.plan.b,
        },
    ]
}

/// A table of 4-bit codes (16 images) as four little-endian words, 4 images each.
fn nibble_table(table: &Table) -> Option<[u32; 4]> {
    match table {
        Table::Words(w) if w.len() == 2 => Some([
            w[0] as u32,
            (w[0] >> 32) as u32,
            w[1] as u32,
            (w[1] >> 32) as u32,
        ]),
        _ => None,
    }
}

/// The images of the four 4-bit codes in the low 16 bits of `selectors` (first code lowest)
/// as one word, image i in byte i: the images of codes 0-7 and of codes 8-15 picked by
/// the low 3 bits (two byte permutes), then byte i from the second set where code i has
/// bit 3 (a third permute with selector `i + 4 * bit3`).
fn translate4<'c, 'a>(
    e: &Emitter<'c, 'a>,
    shared: Shared<'c, 'a>,
    table: &[Value<'c, 'a>; 4],
    selectors: Value<'c, 'a>,
) -> Value<'c, 'a> {
    let low = e.andi(selectors, e.i32(0x7777));
    let first = shared.permute(e, table[0], table[1], low);
    let second = shared.permute(e, table[2], table[3], low);
    let pick = e.ori(
        e.andi(e.shrui(selectors, e.i32(1)), e.i32(0x4444)),
        e.i32(0x3210),
    );
    shared.permute(e, first, second, pick)
}

/// Issue thread `tid`'s `cp.async` of the staged scales of stage `s`: the row's stage bytes
/// by the row's thread (`each_scale_row`).
fn copy_scales<'c, 'a>(
    e: &Emitter<'c, 'a>,
    kn: &Kernel<'_, 'c, 'a>,
    mem: &Memory,
    shared: Shared<'c, 'a>,
    sides: &[Side<'c, 'a>; 2],
    tid: Value<'c, 'a>,
    s: Value<'c, 'a>,
) {
    let i64t = e.int_type(64);
    let k0 = e.muli(s, e.index(BK));
    each_scale_row(e, mem, tid, |e, x, st, r| {
        let scaled = [&kn.ops.sa, &kn.ops.sb][x];
        let at = scale_at(e, scaled, st, &sides[x], r, k0);
        let base = wgmma::smem_address(e, scaled.scales);
        let src = pointer(e, e.addi(base, e.index_castui(at, i64t)), 1);
        let dst = pointer(e, shared.address(e, st.copied(e, mem.stages, s, r)), 3);
        cp_async_of(e, dst, src, st.per_row(), e.i32(st.per_row() as u32));
    });
}

/// Issue thread `tid`'s 16-byte `cp.async` of stage `s` of both operands into its slot
/// (from the operands' base addresses `globals`; chunks outside copy 0 bytes); with TMA,
/// of the staged operands only. (The staged scales: `copy_scales`.)
#[allow(clippy::too_many_arguments)]
fn copy_stage<'c, 'a>(
    e: &Emitter<'c, 'a>,
    mem: &Memory,
    shared: Shared<'c, 'a>,
    sides: &[Side<'c, 'a>; 2],
    globals: [Value<'c, 'a>; 2],
    k: Value<'c, 'a>,
    tid: Value<'c, 'a>,
    s: Value<'c, 'a>,
) {
    let i64t = e.int_type(64);
    let k0 = e.muli(s, e.index(BK));
    for (x, side) in sides.iter().enumerate() {
        let (route, copied) = (mem.routes[x], mem.copied(e, x, s));
        if mem.tma && !route.staged {
            continue;
        }
        each_chunk(e, route, mem.copiers, tid, side, k, k0, |e, c| {
            let dst = pointer(e, shared.address(e, e.addi(copied, c.offset)), 3);
            let at = e.addi(e.muli(c.row, side.row_bytes), c.byte);
            let src = pointer(e, e.addi(globals[x], e.index_castui(at, i64t)), 1);
            let size = e.select(c.inside, e.i32(16), e.i32(0));
            cp_async(e, dst, src, size);
        });
    }
}

/// Run `body` (operand, its `ScaleStage`, row of the block) for the row whose staged scales
/// thread `tid` copies and decodes: A's rows by the first threads, B's by the last (the
/// square block: 128 + 128 of 256; the skinny one: at most 64 + 64 of 128; the producer
/// warpgroup: row t of both by thread t).
fn each_scale_row<'c, 'a>(
    e: &Emitter<'c, 'a>,
    mem: &Memory,
    tid: Value<'c, 'a>,
    body: impl Fn(&Emitter<'c, 'a>, usize, ScaleStage, Value<'c, 'a>),
) {
    for x in 0..2 {
        let Some(st) = mem.scales[x] else { continue };
        let rows = mem.tile.rows[x];
        // (Warp-specialized: 128 producers, each a row of A and one of B.)
        let first = if x == 0 { 0 } else { mem.copiers - rows };
        let mine = e.andi(
            e.cmpi(CmpiPredicate::Uge, tid, e.index(first)),
            e.cmpi(CmpiPredicate::Ult, tid, e.index(first + rows)),
        );
        e.if_then(mine, |e| body(e, x, st, e.subi(tid, e.index(first))));
    }
}

/// The byte offset in operand `side`'s scales (as stored) of its block row `r`'s first
/// scale of the stage at `k0`: rows past the operand read the last one (never used).
fn scale_at<'c, 'a>(
    e: &Emitter<'c, 'a>,
    scaled: &Scaled<'c, 'a>,
    st: ScaleStage,
    side: &Side<'c, 'a>,
    r: Value<'c, 'a>,
    k0: Value<'c, 'a>,
) -> Value<'c, 'a> {
    let row = e.minui(e.addi(side.origin, r), e.subi(side.rows, e.index(1)));
    let [sr, sc] = scaled.scale_index(e, row, k0);
    let columns = e.dim(scaled.scales, 1);
    e.muli(e.addi(e.muli(sr, columns), sc), e.index(st.size))
}

/// The f32 values of the staged scales of stage `s` that thread `tid` copied (its copy
/// landed), into the stage's decoded ring entry: [scale of the stage][row]. `fold`: the
/// one scale of the stage's partial sum (`Fold`), the row's largest, as scale 0.
#[allow(clippy::too_many_arguments)]
fn decode_scales<'c, 'a>(
    e: &Emitter<'c, 'a>,
    kn: &Kernel<'_, 'c, 'a>,
    mem: &Memory,
    shared: Shared<'c, 'a>,
    tid: Value<'c, 'a>,
    s: Value<'c, 'a>,
    fold: bool,
) {
    let (i32t, f32t) = (e.int_type(32), e.f32_type());
    each_scale_row(e, mem, tid, |e, x, st, r| {
        let scaled = [&kn.ops.sa, &kn.ops.sb][x];
        let words = shared.load_words(e, st.copied(e, mem.stages, s, r), st.per_row() / 4);
        if fold && mem.fold.is_some_and(|f| f.reach[x].is_some()) {
            let value = scaled.decode_stored(e, byte_range(e, words[0]).0);
            let at = decoded_at(e, mem, x, st, r, s, e.index(0));
            shared.store_words(e, at, &[e.bitcast(value, i32t)]);
            return;
        }
        for g in 0..st.count() {
            let value = if st.size == 1 {
                let byte = e.shrui(words[0], e.i32(8 * g as u32));
                scaled.decode_stored(e, e.andi(byte, e.i32(0xFF)))
            } else {
                e.bitcast(words[g as usize], f32t)
            };
            let at = decoded_at(e, mem, x, st, r, s, e.index(g));
            shared.store_words(e, at, &[e.bitcast(value, i32t)]);
        }
    });
}

/// Where the decoded staged scale `g` of stage `s` of block row `r` of operand `x` is.
fn decoded_at<'c, 'a>(
    e: &Emitter<'c, 'a>,
    mem: &Memory,
    x: usize,
    st: ScaleStage,
    r: Value<'c, 'a>,
    s: Value<'c, 'a>,
    g: Value<'c, 'a>,
) -> Value<'c, 'a> {
    let entry = e.muli(
        e.remui(s, e.index(st.decoded_ring)),
        e.index(st.decoded_stride),
    );
    let value = e.addi(e.muli(g, e.index(mem.tile.rows[x])), r);
    e.addi(
        e.addi(e.index(st.decoded), entry),
        e.muli(value, e.index(4)),
    )
}

/// The readers of the staged scales for the segment starting at `k0`, per operand: the f32
/// scale of a row (A) or column (B) of C, which is the block's row `% rows`.
fn staged_readers<'c, 'a, 'm>(
    mem: &'m Memory,
    shared: Shared<'c, 'a>,
    k0: Value<'c, 'a>,
) -> [Option<ScaleReader<'c, 'a, 'm>>; 2]
where
    'c: 'm,
    'a: 'm,
{
    [0, 1].map(|x| {
        mem.scales[x].map(|st| {
            // (Decoded values of rows r, r + 1 with r even are 8-aligned: every offset and
            // stride of the decoded rings is.)
            debug_assert!(st.decoded % 8 == 0 && st.decoded_stride % 8 == 0);
            Box::new(move |e: &Emitter<'c, 'a>, at: Value<'c, 'a>, n: usize| {
                let r = e.remui(at, e.index(mem.tile.rows[x]));
                let s = e.divui(k0, e.index(BK));
                let g = e.divui(e.remui(k0, e.index(BK)), e.index(st.span));
                let at = decoded_at(e, mem, x, st, r, s, g);
                let words = shared.load_words(e, at, n as i64);
                words
                    .into_iter()
                    .map(|w| e.bitcast(w, e.f32_type()))
                    .collect()
            }) as ScaleReader<'c, 'a, 'm>
        })
    })
}

/// Translate thread `tid`'s chunks of the staged operands' stage `s` (as it copied them)
/// into the FP8 tiles of that stage, in the 128-byte swizzle: per stored byte one code, or
/// two (low nibble first) when packed. `fold`: with the block scales folded in (`Fold`:
/// a chunk's table moved down by its block's distance to the row's stage maximum, read
/// from the stage's copied scales).
#[allow(clippy::too_many_arguments)]
fn translate_stage<'c, 'a>(
    e: &Emitter<'c, 'a>,
    mem: &Memory,
    shared: Shared<'c, 'a>,
    sides: &[Side<'c, 'a>; 2],
    k: Value<'c, 'a>,
    tid: Value<'c, 'a>,
    s: Value<'c, 'a>,
    fold: bool,
) {
    let k0 = e.muli(s, e.index(BK));
    let i32t = e.int_type(32);
    for (x, side) in sides.iter().enumerate() {
        let route = mem.routes[x];
        let Some(table) = side.operand.table.as_ref().filter(|_| route.staged) else {
            continue;
        };
        let (copied, tile) = (mem.copied(e, x, s), mem.tile(e, x, s));
        let reach = mem.fold.filter(|_| fold).and_then(|f| f.reach[x]);
        each_chunk(e, route, mem.copiers, tid, side, k, k0, |e, c| {
            let raw = shared.load4(e, e.addi(copied, c.offset));
            // Code `n` of the chunk (in K order).
            let code = |e: &Emitter<'c, 'a>, n: i64| {
                let (bits, per_word) = if route.packed { (4, 8) } else { (8, 4) };
                let word = raw[(n / per_word) as usize];
                let shift = e.i32(((n % per_word) * bits) as u32);
                e.andi(e.shrui(word, shift), e.i32((1 << bits) - 1))
            };
            let halves = route.codes() / 16;
            let nibbles = nibble_table(table).map(|t| {
                let words = t.map(|w| e.i32(w));
                let Some((_, steps)) = reach else {
                    return words;
                };
                // The chunk's 32-block j of the row: d = max - e_j binades down.
                let st = mem.scales[x].expect("a folded operand's scales are staged");
                let word = shared.load_words(e, st.copied(e, mem.stages, s, c.r), 1)[0];
                let (most, _) = byte_range(e, word);
                let j = e.divui(e.muli(c.ch, e.index(route.codes())), e.index(st.span));
                let at = e.muli(e.index_castui(j, i32t), e.i32(8));
                let d = e.subi(most, e.andi(e.shrui(word, at), e.i32(0xFF)));
                std::array::from_fn(|i| e.subi(words[i], e.muli(d, e.i32(steps[i]))))
            });
            for h in 0..halves {
                let words: Vec<Value> = (0..4)
                    .map(|w| {
                        let first = h * 16 + w * 4;
                        match nibbles {
                            // 4-bit codes: 4 at a time through byte permutes.
                            Some(t) => {
                                let selectors = if route.packed {
                                    e.shrui(
                                        raw[(first / 8) as usize],
                                        e.i32((first % 8 * 4) as u32),
                                    )
                                } else {
                                    // One code per byte: their nibbles side by side.
                                    let r = e.andi(raw[(first / 4) as usize], e.i32(0x0F0F_0F0F));
                                    let pairs = e.ori(r, e.shrui(r, e.i32(4)));
                                    shared.permute(e, pairs, e.i32(0), e.i32(0x20))
                                };
                                translate4(e, shared, &t, selectors)
                            }
                            None => (0..4).fold(e.i32(0), |acc, b| {
                                let fp8 = translate(e, table, code(e, first + b));
                                e.ori(acc, e.shli(fp8, e.i32(8 * b as u32)))
                            }),
                        }
                    })
                    .collect();
                let ch = e.addi(e.muli(c.ch, e.index(halves)), e.index(h));
                shared.store4(e, e.addi(tile, swizzled(e, c.r, ch)), &words);
            }
        });
    }
}

/// Lower `op` with the pipelined kernel: a `gpu.launch` with dynamic shared memory
/// (`emulate = false`) or its CPU emulation. `fold`: fold the block scales into the
/// translated codes where that applies (`Fold`).
#[allow(clippy::too_many_arguments)]
pub(super) fn lower<'c, 'a>(
    e: &Emitter<'c, 'a>,
    op: OperationRef<'c, 'a>,
    plan: &Plan,
    instr: &Wgmma,
    chip: &Chip,
    tile: Tile,
    feed: Feed,
    fold: bool,
    emulate: bool,
) -> Result<(), PassError> {
    let kn = Kernel::new(e, op, plan, instr)?;
    let mut mem = Memory::new(
        plan,
        chip,
        tile,
        feed,
        staged_scale_blocks(&kn, static_k(&kn)),
    );
    if fold && static_k(&kn).is_some_and(|k| k >= BK) {
        mem.fold = fold_plan(&kn, &mem);
    }
    let specialized = mem.specialized;
    let one = e.index(1);
    let grid = kn.grid(e, tile.rows[0], tile.rows[1]);
    let splits = e.index(tile.splits);
    if emulate {
        kn.blocks(e, grid, |e, by, bx| {
            if tile.swapped {
                return emulated_block(e, &kn, &mem, instr, by, bx, &[]);
            }
            let (bm, bn) = grouped(e, grid, bx, by);
            // With multicast, the tiles of the cluster's blocks, by rank (x % its size):
            // part r of each B stage comes from rank r's box.
            let first = e.subi(bx, e.remui(bx, e.index(tile.multicast)));
            let cluster: Vec<_> = (1..=tile.multicast)
                .filter(|_| tile.multicast > 1)
                .map(|r| grouped(e, grid, e.addi(first, e.index(r - 1)), by))
                .collect();
            emulated_block(e, &kn, &mem, instr, bm, bn, &cluster)
        });
        return Ok(());
    }
    let threads = if specialized {
        tile.threads() + PRODUCERS
    } else {
        tile.threads()
    };
    // Stages of K (static: `plan` takes static rows).
    let k = static_k(&kn).ok_or_else(|| unsupported(op, "the wgmma pipeline takes a static K"))?;
    let k_stages = ceil(k, BK);
    // The tensor maps of the operands TMA loads, made on the host.
    let bits = [kn.ops.bits_a, kn.ops.bits_b];
    // (B multicast: each box is a block's part of the stage.)
    let maps: [Option<Value>; 2] = std::array::from_fn(|x| {
        let route = mem.routes[x];
        let parts = if x == 1 { tile.multicast } else { 1 };
        (mem.tma && !route.staged).then(|| tensor_map(e, bits[x], route.rows / parts))
    });
    let cluster = match (tile.splits, tile.multicast) {
        (1, 1) => None,
        (1, blocks) => Some([e.index(blocks), one, one]),
        _ => Some([splits, one, one]),
    };
    e.gpu_launch_dynamic(
        [e.muli(grid[0], splits), grid[1], one],
        [e.index(threads), one, one],
        cluster,
        mem.dynamic_bytes(),
        |e, bid, tid, memory| {
            if specialized {
                specialized_block(e, &kn, &mem, instr, maps, k_stages, bid, tid[0], memory)
            } else {
                hardware_block(e, &kn, &mem, instr, maps, bid, tid[0], memory)
            }
        },
    );
    Ok(())
}

/// The tile (row, column) of C that square block (`bx`, `by`) of a grid of `grid` = [tiles
/// along N, along M] computes, in grouped order: the blocks run through groups of `GROUP`
/// rows of tiles, column by column within a group (the last group has the rows left), so
/// a wave of 132 blocks reads the A tiles of 8 rows and the B tiles of about 17 columns
/// (for 8192^3: 8 + 17 MiB, which L2 holds) instead of those of 2 rows and all 64 columns
/// (2 + 64 MiB, which it does not). A bijection of the grid onto the tiles.
fn grouped<'c, 'a>(
    e: &Emitter<'c, 'a>,
    grid: [Value<'c, 'a>; 2],
    bx: Value<'c, 'a>,
    by: Value<'c, 'a>,
) -> (Value<'c, 'a>, Value<'c, 'a>) {
    let [columns, rows] = grid;
    let linear = e.addi(e.muli(by, columns), bx);
    let per_group = e.muli(e.index(GROUP), columns);
    let first = e.muli(e.divui(linear, per_group), e.index(GROUP));
    let height = e.minui(e.subi(rows, first), e.index(GROUP));
    let within = e.remui(linear, per_group);
    (
        e.addi(first, e.remui(within, height)),
        e.divui(within, height),
    )
}

/// The square blocks' grid inside the kernel, [tiles along N, along M]: constants where M
/// and N are static (the grouped order then divides by constants), else the launch's.
fn square_grid<'c, 'a>(
    e: &Emitter<'c, 'a>,
    kn: &Kernel<'_, 'c, 'a>,
    tile: Tile,
) -> [Value<'c, 'a>; 2] {
    match (static_rows(kn.ops.o.rhs), static_rows(kn.ops.o.lhs)) {
        (Some(n), Some(m)) => [
            e.index(ceil(n, tile.rows[1])),
            e.index(ceil(m, tile.rows[0])),
        ],
        _ => [grid_dim(e, "x"), grid_dim(e, "y")],
    }
}

/// The global base addresses the cp.async copies read, per operand; 0 for one TMA loads
/// (`copy_stage` skips it), so that its memref is not a kernel parameter for nothing.
fn copy_bases<'c, 'a>(
    e: &Emitter<'c, 'a>,
    kn: &Kernel<'_, 'c, 'a>,
    mem: &Memory,
) -> [Value<'c, 'a>; 2] {
    let bits = [kn.ops.bits_a, kn.ops.bits_b];
    std::array::from_fn(|x| {
        if mem.tma && !mem.routes[x].staged {
            e.int(64, 0)
        } else {
            wgmma::smem_address(e, bits[x])
        }
    })
}

/// The grid's size in `dim` (x, y) inside the kernel.
fn grid_dim<'c, 'a>(e: &Emitter<'c, 'a>, dim: &str) -> Value<'c, 'a> {
    e.val(
        OperationBuilder::new("gpu.grid_dim", e.loc())
            .add_attributes(&[(
                Identifier::new(e.ctx(), "dimension"),
                Attribute::parse(e.ctx(), &format!("#gpu<dim {dim}>")).expect("valid dimension"),
            )])
            .add_results(&[e.index_type()])
            .build()
            .expect("valid gpu.grid_dim"),
    )
}

/// K (codes) of the op: static where the pipeline takes it (`plan`).
fn static_k(kn: &Kernel) -> Option<i64> {
    let t = MemRefType::try_from(kn.ops.o.lhs.r#type()).ok()?;
    match t.dim_size(1) {
        Ok(DimSize::Static(bytes)) => Some(bytes as i64 * if kn.plan.a.packed { 2 } else { 1 }),
        _ => None,
    }
}

/// The lane of computing thread `tid` for the accumulator map and epilogue: its
/// warpgroup's 64 rows of the instruction's A (of C's rows, or of its columns when the
/// block is skinny).
fn lane<'c, 'a>(
    e: &Emitter<'c, 'a>,
    tile: Tile,
    tid: Value<'c, 'a>,
    bm: Value<'c, 'a>,
    bn: Value<'c, 'a>,
) -> Lane<'c, 'a> {
    let warpgroup = e.divui(tid, e.index(wgmma::THREADS));
    let rows = e.muli(warpgroup, e.index(wgmma::BM));
    let row0 = e.muli(bm, e.index(tile.rows[0]));
    let col0 = e.muli(bn, e.index(tile.rows[1]));
    let (row0, col0) = if tile.swapped {
        (row0, e.addi(col0, rows))
    } else {
        (e.addi(row0, rows), col0)
    };
    Lane {
        lane: e.remui(tid, e.index(wgmma::THREADS)),
        row0,
        col0,
    }
}

/// The descriptors of warpgroup `warpgroup`'s 64 rows of the instruction's A and of its B
/// at stage `s`, `at` codes into the stage.
fn descriptors<'c, 'a>(
    e: &Emitter<'c, 'a>,
    mem: &Memory,
    shared: Shared<'c, 'a>,
    warpgroup: Value<'c, 'a>,
    s: Value<'c, 'a>,
    at: i64,
) -> (Value<'c, 'a>, Value<'c, 'a>) {
    let first = mem.tile.first();
    let rows = e.muli(warpgroup, e.index(wgmma::BM * BK));
    let a = e.addi(e.addi(mem.tile(e, first, s), rows), e.index(at));
    let b = e.addi(mem.tile(e, 1 - first, s), e.index(at));
    (
        descriptor(e, shared.address(e, a)),
        descriptor(e, shared.address(e, b)),
    )
}

/// Stages whose scales a scanning thread loads at once, at most (`fold_scan`): the loads
/// of a round are in flight together, so K = 8192 (64 stages) costs two round trips to
/// memory, which the prologue's copies overlap.
const SCAN: i64 = 32;

/// Stage `s`'s staged scales of operand `x`'s block row `r` as stored, one word (four
/// E8M0), from global memory (in the emulation, byte by byte).
#[allow(clippy::too_many_arguments)]
fn scale_word<'c, 'a>(
    e: &Emitter<'c, 'a>,
    kn: &Kernel<'_, 'c, 'a>,
    shared: Shared<'c, 'a>,
    x: usize,
    st: ScaleStage,
    side: &Side<'c, 'a>,
    r: Value<'c, 'a>,
    s: Value<'c, 'a>,
) -> Value<'c, 'a> {
    let scaled = [&kn.ops.sa, &kn.ops.sb][x];
    let at = scale_at(e, scaled, st, side, r, e.muli(s, e.index(BK)));
    let i32t = e.int_type(32);
    match shared {
        Shared::Gpu(_) => {
            let base = wgmma::smem_address(e, scaled.scales);
            let p = pointer(e, e.addi(base, e.index_castui(at, e.int_type(64))), 1);
            e.val(
                OperationBuilder::new("llvm.load", e.loc())
                    .add_operands(&[p])
                    .add_attributes(&[alignment(e, 4)])
                    .add_results(&[i32t])
                    .build()
                    .expect("valid llvm.load"),
            )
        }
        Shared::Cpu(_) => {
            let columns = e.dim(scaled.scales, 1);
            let (sr, sc) = (e.divui(at, columns), e.remui(at, columns));
            (0..4).fold(e.i32(0), |acc, b| {
                let byte = e.extui(e.load(scaled.scales, &[sr, e.addi(sc, e.index(b))]), i32t);
                e.ori(acc, e.shli(byte, e.i32(8 * b as u32)))
            })
        }
    }
}

/// Whether the block folds its scales (`Fold`), an `i1` the same for every thread: each
/// row of a folded operand has every stage of `[first, last)` within reach
/// (`fold_fits`). On the GPU thread `tid` scans the row whose scales it copies
/// (`each_scale_row`), up to `SCAN` stages a round, and stores the first stage's word into the
/// copy ring (later stages' come by `cp.async` a stage ahead); `bar.red.or` publishes it
/// and gives every thread the block's answer. In the emulation, every row in turn.
#[allow(clippy::too_many_arguments)]
fn fold_scan<'c, 'a>(
    e: &Emitter<'c, 'a>,
    kn: &Kernel<'_, 'c, 'a>,
    mem: &Memory,
    fold: &Fold,
    shared: Shared<'c, 'a>,
    sides: &[Side<'c, 'a>; 2],
    tid: Value<'c, 'a>,
    first: Value<'c, 'a>,
    last: Value<'c, 'a>,
) -> Value<'c, 'a> {
    let (zero, one, i1) = (e.index(0), e.index(1), e.int_type(1));
    let gpu = matches!(shared, Shared::Gpu(_));
    let end = e.subi(last, one);
    // Whether a row misses, in rounds of `SCAN` stages, or of K's stages where fewer (the
    // last round's past the end read the last stage again).
    let per_round = static_k(kn).map_or(SCAN, |k| SCAN.min(ceil(k, BK)));
    let misses = |e: &Emitter<'c, 'a>, x: usize, st: ScaleStage, reach: i64, r| {
        let rounds = ceil_div(e, e.subi(last, first), e.index(per_round));
        e.for_loop(zero, rounds, one, &[e.bool(false)], |e, i, carried| {
            let s0 = e.addi(first, e.muli(i, e.index(per_round)));
            let words: Vec<Value> = (0..per_round)
                .map(|j| {
                    let s = e.minui(e.addi(s0, e.index(j)), end);
                    scale_word(e, kn, shared, x, st, &sides[x], r, s)
                })
                .collect();
            vec![words.into_iter().fold(carried[0], |missed, w| {
                e.ori(missed, e.xori(fold_fits(e, w, reach), e.bool(true)))
            })]
        })[0]
    };
    let mut missed = e.bool(false);
    for x in 0..2 {
        let (Some(st), Some((reach, _))) = (mem.scales[x], fold.reach[x]) else {
            continue;
        };
        let rows = mem.tile.rows[x];
        let row_missed = if gpu {
            let from = if x == 0 { 0 } else { mem.copiers - rows };
            let mine = e.andi(
                e.cmpi(CmpiPredicate::Uge, tid, e.index(from)),
                e.cmpi(CmpiPredicate::Ult, tid, e.index(from + rows)),
            );
            e.if_else(
                mine,
                &[i1],
                |e| {
                    let r = e.subi(tid, e.index(from));
                    let word = scale_word(e, kn, shared, x, st, &sides[x], r, first);
                    shared.store_words(e, st.copied(e, mem.stages, first, r), &[word]);
                    vec![misses(e, x, st, reach, r)]
                },
                |e| vec![e.bool(false)],
            )[0]
        } else {
            e.for_loop(
                zero,
                e.index(rows),
                one,
                &[e.bool(false)],
                |e, r, carried| vec![e.ori(carried[0], misses(e, x, st, reach, r))],
            )[0]
        };
        missed = e.ori(missed, row_missed);
    }
    if !gpu {
        return e.xori(missed, e.bool(true));
    }
    let i32t = e.int_type(32);
    let any = e.val(
        OperationBuilder::new("nvvm.barrier", e.loc())
            .add_operands(&[e.extui(missed, i32t)])
            .add_attributes(&[
                (
                    Identifier::new(e.ctx(), "reductionOp"),
                    Attribute::parse(e.ctx(), "#nvvm.reduction<or>").expect("valid reduction"),
                ),
                (
                    Identifier::new(e.ctx(), "operandSegmentSizes"),
                    Attribute::parse(e.ctx(), "array<i32: 0, 0, 1>").expect("valid segments"),
                ),
            ])
            .add_results(&[i32t])
            .build()
            .expect("valid nvvm.barrier"),
    );
    e.cmpi(CmpiPredicate::Eq, any, e.i32(0))
}

#[allow(clippy::too_many_arguments)]
fn hardware_block<'c, 'a>(
    e: &Emitter<'c, 'a>,
    kn: &Kernel<'_, 'c, 'a>,
    mem: &Memory,
    instr: &Wgmma,
    maps: [Option<Value<'c, 'a>>; 2],
    bid: [Value<'c, 'a>; 3],
    tid: Value<'c, 'a>,
    memory: Value<'c, 'a>,
) {
    // Split-K: the blocks of a cluster are consecutive along x, one tile of C. Square
    // blocks in grouped order.
    let ((bm, bn), rank) = match mem.tile.splits {
        _ if !mem.tile.swapped => (
            grouped(e, square_grid(e, kn, mem.tile), bid[0], bid[1]),
            e.index(0),
        ),
        1 => ((bid[1], bid[0]), e.index(0)),
        splits => (
            (bid[1], e.divui(bid[0], e.index(splits))),
            e.remui(bid[0], e.index(splits)),
        ),
    };
    let l = lane(e, mem.tile, tid, bm, bn);
    let warpgroup = e.divui(tid, e.index(wgmma::THREADS));
    let shared = Shared::aligned(e, memory);
    let sides = sides(e, kn, mem.tile, bm, bn);
    let globals = copy_bases(e, kn, mem);
    let k = kn.ops.k;
    let (first, last) = stage_range(e, k, rank, mem.tile.splits);
    let (stages, first_thread) = (mem.stages, e.cmpi(CmpiPredicate::Eq, tid, e.index(0)));
    // TMA: a full mbarrier per slot, which thread 0 arms with the boxes' bytes before it
    // issues them (1 arrival); every thread waits on it before the stage's barrier.
    let full = |e: &Emitter<'c, 'a>, s: Value<'c, 'a>| {
        let slot = e.remui(s, e.index(stages));
        let at = e.addi(e.index(mem.barriers), e.muli(slot, e.index(8)));
        pointer(e, shared.address(e, at), 3)
    };
    let boxes = box_bytes(mem, maps);
    if mem.tma {
        e.if_then(first_thread, |e| {
            for slot in 0..stages {
                mbarrier(e, "nvvm.mbarrier.init", &[full(e, e.index(slot)), e.i32(1)]);
            }
            e.bare("nvvm.fence.mbarrier.init", &[]);
            wgmma::fence_proxy_async(e);
            for map in maps.iter().flatten() {
                acquire_tensor_map(e, *map);
            }
        });
        e.bare("gpu.barrier", &[]);
    }
    // Issue one stage's copies into its slot, and commit them as a group (also when the
    // stage is past the block's range: the group counts stay uniform).
    let issue = |e: &Emitter<'c, 'a>, s: Value<'c, 'a>| {
        let live = e.cmpi(CmpiPredicate::Ult, s, last);
        e.if_then(live, |e| {
            if mem.tma {
                e.if_then(first_thread, |e| {
                    mbarrier(
                        e,
                        "nvvm.mbarrier.arrive.expect_tx",
                        &[full(e, s), e.i32(boxes as u32)],
                    );
                    load_boxes(e, mem, shared, maps, &sides, full(e, s), s, rank);
                });
            }
            copy_stage(e, mem, shared, &sides, globals, k, tid, s);
            match mem.fold {
                None => copy_scales(e, kn, mem, shared, &sides, tid, s),
                // Folded scales: the next stage's travel with this stage's codes, since
                // the translators of stage s + 1 read them before its barrier (after stage
                // s's); the first stage's are stored by `fold_scan`.
                Some(_) => {
                    let next = e.addi(s, e.index(1));
                    e.if_then(e.cmpi(CmpiPredicate::Ult, next, last), |e| {
                        copy_scales(e, kn, mem, shared, &sides, tid, next)
                    });
                }
            }
        });
        e.bare("nvvm.cp.async.commit.group", &[]);
    };
    let one = e.index(1);
    // Two slots are being read (the stage and the one before, whose last segment is still
    // running): the copies run `stages - 2` ahead.
    let lead = mem.stages - 2;
    let ahead = match mem.tile.splits {
        1 => e.index(lead),
        _ => e.addi(first, e.index(lead)),
    };
    e.for_loop(first, ahead, one, &[], |e, s, _| {
        issue(e, s);
        vec![]
    });
    let staged = mem.routes.iter().any(|r| r.staged);
    let stage =
        |e: &Emitter<'c, 'a>, s: Value<'c, 'a>, acc: &[Value<'c, 'a>], before, fold: bool| {
            e.bare(
                "nvvm.cp.async.wait.group",
                &[("n", &format!("{} : i32", lead - 1))],
            );
            if staged {
                // The thread's own copies landed: it translates them.
                translate_stage(e, mem, shared, &sides, k, tid, s, fold);
            }
            // And decodes the scales it copied (the stage's barrier publishes them).
            if mem.scales.iter().any(Option::is_some) {
                e.if_then(e.cmpi(CmpiPredicate::Ult, s, last), |e| {
                    decode_scales(e, kn, mem, shared, tid, s, fold)
                });
            }
            if mem.tma {
                // The stage's boxes landed (the slot's use (s - first) / stages completed; a
                // stage past the range issued none).
                e.if_then(e.cmpi(CmpiPredicate::Ult, s, last), |e| {
                    let use_ = e.divui(e.subi(s, first), e.index(stages));
                    let phase = e.andi(e.index_castui(use_, e.int_type(32)), e.i32(1));
                    wait_parity(e, full(e, s), phase);
                });
            }
            wgmma::fence_proxy_async(e);
            e.bare("gpu.barrier", &[]);
            issue(e, e.addi(s, e.index(lead)));
            let live = e.cmpi(CmpiPredicate::Ult, s, last);
            stage_mmas(
                e,
                kn,
                mem,
                instr,
                shared,
                &l,
                warpgroup,
                s,
                acc,
                Some(before),
                live,
                fold,
            )
        };
    let pairs = ceil_div(e, e.subi(last, first), e.index(2));
    let run = |e: &Emitter<'c, 'a>, fold: bool| {
        let (acc, pending) = stage_pairs(e, instr, k, first, pairs, |e, s, acc, before| {
            stage(e, s, acc, before, fold)
        });
        drain(e, kn, mem, shared, instr, &l, acc, pending)
    };
    // Folded scales where the block's scales allow: two loops, each draining its
    // instructions, so that no result in flight crosses the branch.
    let done = match mem.fold {
        Some(fold) => {
            let folds = fold_scan(e, kn, mem, &fold, shared, &sides, tid, first, last);
            let types = vec![e.f32_type(); instr.accumulators()];
            e.if_else(folds, &types, |e| run(e, true), |e| run(e, false))
        }
        None => run(e, false),
    };
    e.bare("nvvm.cp.async.wait.group", &[("n", "0 : i32")]);
    if mem.tile.splits > 1 {
        gather_splits(e, kn, mem, shared, &l, tid, rank, &done);
    } else {
        kn.epilogue(e, &l, &done);
    }
}

/// The stages `[first, last)` of K that split `rank` of `splits` sums: `ceil(stages /
/// splits)` each, the last ones possibly fewer or none.
fn stage_range<'c, 'a>(
    e: &Emitter<'c, 'a>,
    k: Value<'c, 'a>,
    rank: Value<'c, 'a>,
    splits: i64,
) -> (Value<'c, 'a>, Value<'c, 'a>) {
    let stages = ceil_div(e, k, e.index(BK));
    if splits == 1 {
        return (e.index(0), stages);
    }
    let per = ceil_div(e, stages, e.index(splits));
    let first = e.minui(e.muli(rank, per), stages);
    (first, e.minui(e.addi(first, per), stages))
}

/// Byte offset of thread `tid`'s accumulator `x` in the block's shared memory while the
/// splits are gathered (the ring is free by then): accumulator-major, a word per thread.
fn gathered<'c, 'a>(
    e: &Emitter<'c, 'a>,
    mem: &Memory,
    tid: Value<'c, 'a>,
    x: usize,
) -> Value<'c, 'a> {
    let word = e.addi(e.index(x as i64 * mem.tile.threads()), tid);
    e.muli(word, e.index(4))
}

/// Split-K's end: every block of the cluster but rank 0 leaves its partial sums in its
/// shared memory; after a cluster barrier (release / acquire), rank 0 adds ranks 1, 2, ..
/// in order, read through distributed shared memory (`mapa`, `ld.shared::cluster`), and
/// stores C; a second cluster barrier keeps the others' memory until it has read.
#[allow(clippy::too_many_arguments)]
fn gather_splits<'c, 'a>(
    e: &Emitter<'c, 'a>,
    kn: &Kernel<'_, 'c, 'a>,
    mem: &Memory,
    shared: Shared<'c, 'a>,
    l: &Lane<'c, 'a>,
    tid: Value<'c, 'a>,
    rank: Value<'c, 'a>,
    acc: &[Value<'c, 'a>],
) {
    let zero = e.index(0);
    let f32t = e.f32_type();
    let local =
        |e: &Emitter<'c, 'a>, x: usize| pointer(e, shared.address(e, gathered(e, mem, tid, x)), 3);
    // Every thread's instructions have completed (each waited): the ring may be reused.
    e.bare("gpu.barrier", &[]);
    e.if_then(e.cmpi(CmpiPredicate::Ne, rank, zero), |e| {
        for (x, &v) in acc.iter().enumerate() {
            e.insert(
                OperationBuilder::new("llvm.store", e.loc())
                    .add_operands(&[v, local(e, x)])
                    .build()
                    .expect("valid llvm.store"),
            );
        }
    });
    cluster_sync(e);
    e.if_then(e.cmpi(CmpiPredicate::Eq, rank, zero), |e| {
        let mut sum = acc.to_vec();
        for peer in 1..mem.tile.splits {
            for (x, s) in sum.iter_mut().enumerate() {
                let remote = mapa(e, local(e, x), e.i32(peer as u32));
                let v = e.val(
                    OperationBuilder::new("llvm.load", e.loc())
                        .add_operands(&[remote])
                        .add_results(&[f32t])
                        .build()
                        .expect("valid llvm.load"),
                );
                *s = e.addf(*s, v);
            }
        }
        kn.epilogue(e, l, &sum);
    });
    cluster_sync(e);
}

/// A K segment whose instructions were issued and not yet promoted: their result, the
/// segment's first K, and whether to promote it (it starts inside K, in the block's range).
type Pending<'c, 'a> = (Value<'c, 'a>, Value<'c, 'a>, Value<'c, 'a>);

/// The instructions of warpgroup `warpgroup` (lane `l`) on stage `s`, per K segment of the
/// stage: `wgmma.fence`, the segment's instructions (the first not reading D), commit; then
/// the wait for the segment before it (`wgmma.wait_group 1`: the one just issued keeps the
/// tensor cores busy) and its promotion into `acc` (`promote_segment`); before the first
/// segment that is `before`, the previous stage's last. The stage's last segment is left
/// pending, for the next stage or [`drain`]. `live`: whether the stage is in the block's
/// range (its segments inside K are promoted). `fold`: the block scales are folded into the
/// codes (`Fold`), the stage is one segment.
#[allow(clippy::too_many_arguments)]
fn stage_mmas<'c, 'a>(
    e: &Emitter<'c, 'a>,
    kn: &Kernel<'_, 'c, 'a>,
    mem: &Memory,
    instr: &Wgmma,
    shared: Shared<'c, 'a>,
    l: &Lane<'c, 'a>,
    warpgroup: Value<'c, 'a>,
    s: Value<'c, 'a>,
    acc: &[Value<'c, 'a>],
    before: Option<Pending<'c, 'a>>,
    live: Value<'c, 'a>,
    fold: bool,
) -> (Vec<Value<'c, 'a>>, Pending<'c, 'a>) {
    // (Folded scales: the stage is one segment.)
    let (seg, per_seg) = if fold {
        (BK, BK / 32)
    } else {
        segment_shape(kn.plan)
    };
    let mut acc = acc.to_vec();
    let mut pending = before;
    for g in 0..BK / seg {
        let k0 = e.addi(e.muli(s, e.index(BK)), e.index(g * seg));
        e.bare("nvvm.wgmma.fence.aligned", &[]);
        let mut d = wgmma::pack(e, instr, &[]);
        for j in 0..per_seg {
            let (da, db) = descriptors(e, mem, shared, warpgroup, s, g * seg + 32 * j);
            d = wgmma::mma_async(e, instr, d, da, db, j > 0);
        }
        e.bare("nvvm.wgmma.commit.group.sync.aligned", &[]);
        let inside = e.andi(live, e.cmpi(CmpiPredicate::Ult, k0, kn.ops.k));
        if let Some(before) = pending.replace((d, k0, inside)) {
            acc = promote_segment(e, kn, mem, shared, instr, l, acc, before, 1);
        }
    }
    (acc, pending.expect("a stage has a segment"))
}

/// `pairs` iterations of two stages each from stage `first`, `stage` running one: carried
/// through the loop are the accumulators and the last segment still running (at first
/// none: an empty result, K as its K, never promoted); two stages per iteration, so that
/// the running results alternate between two register sets (one carried through the back
/// edge would be copied while the tensor cores write it). The accumulators and the
/// pending segment after the loop.
fn stage_pairs<'c, 'a>(
    e: &Emitter<'c, 'a>,
    instr: &Wgmma,
    k: Value<'c, 'a>,
    first: Value<'c, 'a>,
    pairs: Value<'c, 'a>,
    stage: impl Fn(
        &Emitter<'c, 'a>,
        Value<'c, 'a>,
        &[Value<'c, 'a>],
        Pending<'c, 'a>,
    ) -> (Vec<Value<'c, 'a>>, Pending<'c, 'a>),
) -> (Vec<Value<'c, 'a>>, Pending<'c, 'a>) {
    let n = instr.accumulators();
    let mut inits = vec![e.f32(0.0); n];
    inits.extend([wgmma::pack(e, instr, &[]), k, e.int(1, 0)]);
    let one = e.index(1);
    let done = e.for_loop(e.index(0), pairs, one, &inits, |e, p, carried| {
        let s = e.addi(first, e.muli(p, e.index(2)));
        let before = (carried[n], carried[n + 1], carried[n + 2]);
        let (acc, before) = stage(e, s, &carried[..n], before);
        let (mut acc, (d, k0, promote)) = stage(e, e.addi(s, one), &acc, before);
        acc.extend([d, k0, promote]);
        acc
    });
    (done[..n].to_vec(), (done[n], done[n + 1], done[n + 2]))
}

/// Wait for a segment (`wgmma.wait_group left`: all but the last `left` commit groups
/// done) and add its partial sums into `acc` with its scales, where it is to be promoted
/// (past K its tiles are zero-filled, so it added nothing; past the block's range it ran
/// on stale tiles). Its block scales are loaded before the wait (in bounds either way), so
/// that their latency passes while the tensor cores still run.
#[allow(clippy::too_many_arguments)]
fn promote_segment<'c, 'a>(
    e: &Emitter<'c, 'a>,
    kn: &Kernel<'_, 'c, 'a>,
    mem: &Memory,
    shared: Shared<'c, 'a>,
    instr: &Wgmma,
    l: &Lane<'c, 'a>,
    acc: Vec<Value<'c, 'a>>,
    (d, k0, promote): Pending<'c, 'a>,
    left: i64,
) -> Vec<Value<'c, 'a>> {
    let staged = staged_readers(mem, shared, k0);
    let scales = kn.segment_scales(e, l, k0, instr.accumulators(), &staged);
    let loaded = wgmma::pinned(e, scales.loaded());
    let scales = scales.replaced(loaded);
    let d = wgmma::wait(e, instr, left, d);
    e.if_else(
        promote,
        &vec![e.f32_type(); instr.accumulators()],
        |e| kn.promote_loaded(e, &acc, &wgmma::unpack(e, instr, d), &scales),
        |_| acc.clone(),
    )
}

/// Wait for every issued instruction (`wgmma.wait_group 0`) and promote the pending segment.
#[allow(clippy::too_many_arguments)]
fn drain<'c, 'a>(
    e: &Emitter<'c, 'a>,
    kn: &Kernel<'_, 'c, 'a>,
    mem: &Memory,
    shared: Shared<'c, 'a>,
    instr: &Wgmma,
    l: &Lane<'c, 'a>,
    acc: Vec<Value<'c, 'a>>,
    pending: Pending<'c, 'a>,
) -> Vec<Value<'c, 'a>> {
    promote_segment(e, kn, mem, shared, instr, l, acc, pending, 0)
}

/// Wait until the mbarrier `bar` completed the phase of parity `phase` (an i32, 0 or 1).
fn wait_parity<'c, 'a>(e: &Emitter<'c, 'a>, bar: Value<'c, 'a>, phase: Value<'c, 'a>) {
    mbarrier(
        e,
        "nvvm.mbarrier.try_wait.parity",
        &[bar, phase, e.i32(1_000_000)],
    )
}

/// An mbarrier op (no results): the barrier's shared-memory pointer, then its operands.
fn mbarrier<'c, 'a>(e: &Emitter<'c, 'a>, name: &str, operands: &[Value<'c, 'a>]) {
    e.insert(
        OperationBuilder::new(name, e.loc())
            .add_operands(operands)
            .build()
            .expect("valid mbarrier op"),
    );
}

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
/// loop when the count is odd):
///   wait full[s % stages]; the stage's segments (wgmma, commit; the segment before, the
///   first time stage s-1's last, waited for with wait_group 1 and promoted meanwhile);
///   s >= 1: arrive empty[(s-1) % stages] (stage s-1's instructions are done)
/// after the last stage: wait_group 0, the last promotion
/// ```
/// `lead` = stages - 1: up to that many stages' copies in flight per producer thread. The
/// producer fences its writes (the copies it waited for, its translations) for the async
/// proxy before it arrives; the consumers' acquire makes them visible to their wgmma.
#[allow(clippy::too_many_arguments)]
fn specialized_block<'c, 'a>(
    e: &Emitter<'c, 'a>,
    kn: &Kernel<'_, 'c, 'a>,
    mem: &Memory,
    instr: &Wgmma,
    maps: [Option<Value<'c, 'a>>; 2],
    k_stages: i64,
    bid: [Value<'c, 'a>; 3],
    tid: Value<'c, 'a>,
    memory: Value<'c, 'a>,
) {
    let (bm, bn) = grouped(e, square_grid(e, kn, mem.tile), bid[0], bid[1]);
    let i32t = e.int_type(32);
    let shared = Shared::aligned(e, memory);
    let stages = mem.stages;
    let lead = stages - 1;
    let consumers = mem.tile.threads();
    // Barrier `which` (0 full, 1 empty) of stage `s`'s slot.
    let bar = |e: &Emitter<'c, 'a>, which: i64, s: Value<'c, 'a>| {
        let slot = e.remui(s, e.index(stages));
        let at = e.addi(
            e.index(mem.barriers + which * stages * 8),
            e.muli(slot, e.index(8)),
        );
        pointer(e, shared.address(e, at), 3)
    };
    let parity =
        |e: &Emitter<'c, 'a>, use_: Value<'c, 'a>| e.andi(e.index_castui(use_, i32t), e.i32(1));
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
    let sides = sides(e, kn, mem.tile, bm, bn);
    let k = kn.ops.k;
    let count = ceil_div(e, k, e.index(BK));
    // The barriers initialized before any thread uses them; with multicast, before the
    // other blocks of the cluster write into this block or arrive on its barriers. Folded
    // scales: the producers' scan of their rows' scales, whose `bar.red.or` is that
    // barrier (the consumers add nothing).
    let folds = match mem.fold {
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
    // the consumers take, 2 x 232 + 40 = 504 = 3 x 168 as in DeepGEMM; a producer that
    // translates keeps 96 for its tables and permutes (consumers 200).
    let (keep, take) = if staged { (96, 200) } else { (40, 232) };
    debug_assert!(consumers == 2 * PRODUCERS && 2 * take + keep <= 3 * 168);
    let registers = |e: &Emitter<'c, 'a>, action: &str, count: i64| {
        e.bare(
            "nvvm.setmaxregister",
            &[
                ("action", &format!("#nvvm<action {action}>")),
                ("regCount", &format!("{count} : i32")),
            ],
        )
    };
    e.if_then(producer, |e| {
        registers(e, "decrease", keep);
        let ptid = e.subi(tid, e.index(consumers));
        // TMA: producer thread 0 issues each stage's boxes of the operands used as stored
        // (after the bytes they bring are announced on the stage's full barrier).
        let issuer = e.cmpi(CmpiPredicate::Eq, ptid, zero);
        let boxes = box_bytes(mem, maps);
        let tma_stage = |e: &Emitter<'c, 'a>, s: Value<'c, 'a>| {
            load_boxes(e, mem, shared, maps, &sides, bar(e, 0, s), s, rank);
        };
        let empty = |e: &Emitter<'c, 'a>, s: Value<'c, 'a>| {
            let use_ = e.divui(s, e.index(stages));
            e.if_then(e.cmpi(CmpiPredicate::Uge, s, e.index(stages)), |e| {
                wait_parity(e, bar(e, 1, s), parity(e, e.subi(use_, one)))
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
        // Folded scales: a translating thread reads the scales of rows other producers
        // copied, so the scales travel a stage ahead of the codes and the producers meet
        // at a barrier of their own (named barrier 1, 128 threads) at the top of each
        // stage: every producer's copies of the scales of the stage it publishes next
        // landed (its wait of the stage before), and every read of the entry it copies
        // into now is done (the publish of the stage before).
        let folding = mem.fold.is_some();
        let producers_meet = |e: &Emitter<'c, 'a>| {
            e.insert(
                OperationBuilder::new("nvvm.barrier", e.loc())
                    .add_operands(&[e.i32(1), e.i32(PRODUCERS as u32)])
                    .add_attributes(&[(
                        Identifier::new(e.ctx(), "operandSegmentSizes"),
                        Attribute::parse(e.ctx(), "array<i32: 1, 1, 0>").expect("valid segments"),
                    )])
                    .build()
                    .expect("valid nvvm.barrier"),
            );
        };
        let produce = |e: &Emitter<'c, 'a>, fold: bool| {
            // Stage `s` landed (this thread's part): translate, fence, signal.
            let publish = |e: &Emitter<'c, 'a>, s: Value<'c, 'a>| {
                translate_stage(e, mem, shared, &sides, k, ptid, s, fold);
                decode_scales(e, kn, mem, shared, ptid, s, fold);
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
                copy_stage(e, mem, shared, &sides, globals, k, ptid, s);
                e.bare("nvvm.cp.async.commit.group", &[]);
                e.if_then(e.cmpi(CmpiPredicate::Uge, s, e.index(lead - 1)), |e| {
                    e.bare(
                        "nvvm.cp.async.wait.group",
                        &[("n", &format!("{} : i32", lead - 1))],
                    );
                    publish(e, e.subi(s, e.index(lead - 1)));
                });
                vec![]
            });
            // The stages still in flight.
            e.bare("nvvm.cp.async.wait.group", &[("n", "0 : i32")]);
            if folding {
                producers_meet(e);
            }
            let from = e.select(
                e.cmpi(CmpiPredicate::Uge, count, e.index(lead - 1)),
                e.subi(count, e.index(lead - 1)),
                zero,
            );
            e.for_loop(from, count, one, &[], |e, s, _| {
                publish(e, s);
                vec![]
            });
        };
        match folds {
            Some(folds) => {
                e.if_else(
                    folds,
                    &[],
                    |e| {
                        produce(e, true);
                        vec![]
                    },
                    |e| {
                        produce(e, false);
                        vec![]
                    },
                );
            }
            None => produce(e, false),
        }
    });
    e.if_then(e.cmpi(CmpiPredicate::Ult, tid, e.index(consumers)), |e| {
        registers(e, "increase", take);
        let l = lane(e, mem.tile, tid, bm, bn);
        let warpgroup = e.divui(tid, e.index(wgmma::THREADS));
        // As in the barrier pipeline, a stage's last segment is waited for and promoted
        // after the next stage's first is issued (`stage_mmas`), and only then is the slot
        // of the stage before given back (its instructions are done: they complete in
        // order). Two stages per iteration, so the running results alternate between two
        // register sets (one carried through the back edge would be copied while the
        // tensor cores write it); K is static, so an odd stage count ends with one stage
        // after the loop, and no stage waits for a slot the producer never fills.
        let every = e.int(1, 1);
        let stage =
            |e: &Emitter<'c, 'a>, s: Value<'c, 'a>, acc: &[Value<'c, 'a>], before, fold: bool| {
                wait_parity(e, bar(e, 0, s), parity(e, e.divui(s, e.index(stages))));
                let (acc, pending) = stage_mmas(
                    e,
                    kn,
                    mem,
                    instr,
                    shared,
                    &l,
                    warpgroup,
                    s,
                    acc,
                    Some(before),
                    every,
                    fold,
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
        let run = |e: &Emitter<'c, 'a>, fold: bool| {
            let pairs = e.index(k_stages / 2);
            let (mut acc, mut pending) =
                stage_pairs(e, instr, k, zero, pairs, |e, s, acc, before| {
                    stage(e, s, acc, before, fold)
                });
            if k_stages % 2 == 1 {
                (acc, pending) = stage(e, e.index(k_stages - 1), &acc, pending, fold);
            }
            drain(e, kn, mem, shared, instr, &l, acc, pending)
        };
        // (Folded scales: two loops, each draining its instructions.)
        let acc = match folds {
            Some(folds) => {
                let types = vec![e.f32_type(); instr.accumulators()];
                e.if_else(folds, &types, |e| run(e, true), |e| run(e, false))
            }
            None => run(e, false),
        };
        kn.epilogue(e, &l, &acc);
    });
    // With multicast, no block leaves while another may still arrive on its barriers.
    if cluster > 1 {
        cluster_sync(e);
    }
}

/// A barrier of the whole cluster (`barrier.cluster.arrive` / `wait`, release / acquire),
/// every thread of each block.
fn cluster_sync<'c, 'a>(e: &Emitter<'c, 'a>) {
    e.bare("nvvm.cluster.arrive", &[("aligned", "unit")]);
    e.bare("nvvm.cluster.wait", &[("aligned", "unit")]);
}

/// `mapa`: the address `local` (a shared-memory pointer) has in the block of cluster rank
/// `rank` (an `i32`), as a `shared::cluster` pointer.
fn mapa<'c, 'a>(e: &Emitter<'c, 'a>, local: Value<'c, 'a>, rank: Value<'c, 'a>) -> Value<'c, 'a> {
    e.val(
        OperationBuilder::new("nvvm.mapa", e.loc())
            .add_operands(&[local, rank])
            .add_results(&[Type::parse(e.ctx(), "!llvm.ptr<7>").expect("valid pointer type")])
            .build()
            .expect("valid nvvm.mapa"),
    )
}

/// A consumer warp's arrival on the empty barrier `bar` of each block of a cluster of
/// `cluster`: lane r on rank r's (`mapa`; `mbarrier.arrive.release.cluster.shared::cluster`).
fn release_in_cluster<'c, 'a>(
    e: &Emitter<'c, 'a>,
    bar: Value<'c, 'a>,
    tid: Value<'c, 'a>,
    cluster: i64,
) {
    let ctx = e.ctx();
    let lane = e.remui(tid, e.index(32));
    e.if_then(e.cmpi(CmpiPredicate::Ult, lane, e.index(cluster)), |e| {
        let remote = mapa(e, bar, e.index_castui(lane, e.int_type(32)));
        e.insert(
            OperationBuilder::new("nvvm.mbarrier.arrive", e.loc())
                .add_operands(&[remote])
                .add_attributes(&[(
                    Identifier::new(ctx, "scope"),
                    Attribute::parse(ctx, "#nvvm.mem_scope<cluster>").expect("valid scope"),
                )])
                .build()
                .expect("valid nvvm.mbarrier.arrive"),
        );
    });
}

/// A TMA box load on the CPU, as the PTX ISA's tile mode defines it for `tensor_map`'s
/// maps: box element (row r, byte b), r < `rows`, b < 128, is the operand's byte at
/// `origin` + (b, r), zero outside the tensor (element by element); it lands at byte r *
/// 128 + b of the box from `dst`, in the 128-byte swizzle (address bits 4-6 xor bits 7-9;
/// `dst` is 1024-aligned).
fn emulated_tma<'c, 'a>(
    e: &Emitter<'c, 'a>,
    shared: Shared<'c, 'a>,
    side: &Side<'c, 'a>,
    rows: i64,
    dst: Value<'c, 'a>,
    origin: [Value<'c, 'a>; 2],
) {
    let (zero, one, i32t) = (e.index(0), e.index(1), e.int_type(32));
    let [x0, y0] = origin;
    e.for_loop(zero, e.index(rows), one, &[], |e, r, _| {
        let y = e.addi(y0, r);
        let row_inside = e.cmpi(CmpiPredicate::Ult, y, side.rows);
        let y = e.minui(y, e.subi(side.rows, one));
        for ch in 0..BK / 16 {
            let words: Vec<Value> = (0..4)
                .map(|w| {
                    (0..4).fold(e.i32(0), |acc, b| {
                        let x = e.addi(x0, e.index(16 * ch + 4 * w + b));
                        let inside =
                            e.andi(row_inside, e.cmpi(CmpiPredicate::Ult, x, side.row_bytes));
                        let x = e.minui(x, e.subi(side.row_bytes, one));
                        let byte = e.extui(e.load(side.bits, &[y, x]), i32t);
                        let byte = e.select(inside, byte, e.i32(0));
                        e.ori(acc, e.shli(byte, e.i32(8 * b as u32)))
                    })
                })
                .collect();
            let linear = e.addi(e.muli(r, e.index(BK)), e.index(16 * ch));
            let row_of_atom = e.andi(e.shrui(linear, e.index(7)), e.index(7));
            let swizzled = e.xori(linear, e.shli(row_of_atom, e.index(4)));
            shared.store4(e, e.addi(dst, swizzled), &words);
        }
        vec![]
    });
}

/// One block on the CPU: per stage the copies of all 256 threads into the ring at the same
/// slots and offsets (zeros where the GPU copies 0 bytes), the staged operands' translation
/// by the same threads, then per warpgroup and segment the instructions on the descriptors
/// (`wgmma::emulated_wgmma`) and the promotion; accumulators in memory. `cluster`: with B
/// multicast, the tiles (bm, bn) of the cluster's blocks by rank, whose parts of B's boxes
/// land in this block (rank r's part from rank r's box origin).
#[allow(clippy::too_many_arguments)]
fn emulated_block<'c, 'a>(
    e: &Emitter<'c, 'a>,
    kn: &Kernel<'_, 'c, 'a>,
    mem: &Memory,
    instr: &Wgmma,
    bm: Value<'c, 'a>,
    bn: Value<'c, 'a>,
    cluster: &[(Value<'c, 'a>, Value<'c, 'a>)],
) {
    let (zero, one) = (e.index(0), e.index(1));
    let (f32t, i32t) = (e.f32_type(), e.int_type(32));
    let buffer = e.alloca(i32t, mem.bytes / 4);
    let shared = Shared::Cpu(buffer);
    let (computing, count) = (mem.tile.threads(), instr.accumulators() as i64);
    // The accumulators of every split (rank-major).
    let splits = mem.tile.splits;
    let acc_m = e.alloca(f32t, splits * computing * count);
    let part_m = e.alloca(f32t, wgmma::THREADS * count);
    let sides = sides(e, kn, mem.tile, bm, bn);
    let k = kn.ops.k;
    let at = |e: &Emitter<'c, 'a>, t: Value<'c, 'a>, x: i64| {
        e.addi(e.muli(t, e.index(count)), e.index(x))
    };
    let threads = |e: &Emitter<'c, 'a>, n: i64, body: &dyn Fn(&Emitter<'c, 'a>, Value<'c, 'a>)| {
        e.for_loop(zero, e.index(n), one, &[], |e, t, _| {
            body(e, t);
            vec![]
        });
    };
    let clear = |e: &Emitter<'c, 'a>, mem, n| {
        threads(e, n, &|e, t| {
            for x in 0..count {
                e.store(e.f32(0.0), mem, &[at(e, t, x)]);
            }
        })
    };
    clear(e, acc_m, splits * computing);
    // The cluster's blocks one after the other, each on its range of stages.
    e.for_loop(zero, e.index(splits), one, &[], |e, rank, _| {
        let (first, last) = stage_range(e, k, rank, splits);
        let held = e.muli(rank, e.index(computing));
        // The stages, with the block scales folded into the codes or not (`Fold`).
        let stages = |e: &Emitter<'c, 'a>, fold: bool| {
            let (seg, per_seg) = if fold {
                (BK, BK / 32)
            } else {
                segment_shape(kn.plan)
            };
            e.for_loop(first, last, one, &[], |e, s, _| {
                let k0 = e.muli(s, e.index(BK));
                // The copies: 16 bytes each, zeros where the chunk is outside.
                threads(e, mem.copiers, &|e, t| {
                    for (x, side) in sides.iter().enumerate() {
                        let (route, copied) = (mem.routes[x], mem.copied(e, x, s));
                        if mem.tma && !route.staged {
                            continue;
                        }
                        each_chunk(e, route, mem.copiers, t, side, k, k0, |e, c| {
                            let words: Vec<Value> = (0..4)
                                .map(|w| {
                                    let word = (0..4).fold(e.i32(0), |acc, b| {
                                        let at = e.addi(c.byte, e.index(4 * w + b));
                                        let byte = e.load(side.bits, &[c.row, at]);
                                        e.ori(acc, e.shli(e.extui(byte, i32t), e.i32(8 * b as u32)))
                                    });
                                    e.select(c.inside, word, e.i32(0))
                                })
                                .collect();
                            shared.store4(e, e.addi(copied, c.offset), &words);
                        });
                    }
                });
                if mem.tma {
                    for (x, side) in sides.iter().enumerate() {
                        let (route, copied) = (mem.routes[x], mem.copied(e, x, s));
                        if route.staged {
                            continue;
                        }
                        if x == 1 && !cluster.is_empty() {
                            for (r, &(pm, pn)) in cluster.iter().enumerate() {
                                let theirs = &self::sides(e, kn, mem.tile, pm, pn)[1];
                                let box_ = box_origin(e, theirs, s);
                                let (dst, origin) = part(e, mem, copied, box_, e.index(r as i64));
                                let rows = route.rows / mem.tile.multicast;
                                emulated_tma(e, shared, theirs, rows, dst, origin);
                            }
                        } else {
                            emulated_tma(
                                e,
                                shared,
                                side,
                                route.rows,
                                copied,
                                box_origin(e, side, s),
                            );
                        }
                    }
                }
                // The staged scales' copies (the bytes as stored), as each row's thread makes
                // them.
                threads(e, mem.copiers, &|e, t| {
                    each_scale_row(e, mem, t, |e, x, st, r| {
                        let scaled = [&kn.ops.sa, &kn.ops.sb][x];
                        let at =
                            e.divui(scale_at(e, scaled, st, &sides[x], r, k0), e.index(st.size));
                        let columns = e.dim(scaled.scales, 1);
                        let (sr, sc) = (e.divui(at, columns), e.remui(at, columns));
                        let value = |i: i64| e.load(scaled.scales, &[sr, e.addi(sc, e.index(i))]);
                        let words: Vec<Value> = if st.size == 1 {
                            (0..st.per_row() / 4)
                                .map(|w| {
                                    (0..4).fold(e.i32(0), |acc, b| {
                                        let byte = e.extui(value(4 * w + b), i32t);
                                        e.ori(acc, e.shli(byte, e.i32(8 * b as u32)))
                                    })
                                })
                                .collect()
                        } else {
                            (0..st.count()).map(|g| e.bitcast(value(g), i32t)).collect()
                        };
                        shared.store_words(e, st.copied(e, mem.stages, s, r), &words);
                    });
                });
                threads(e, mem.copiers, &|e, t| {
                    translate_stage(e, mem, shared, &sides, k, t, s, fold);
                    decode_scales(e, kn, mem, shared, t, s, fold);
                });
                for warpgroup in 0..mem.tile.warpgroups {
                    for g in 0..BK / seg {
                        let k0 = e.addi(k0, e.index(g * seg));
                        e.if_then(e.cmpi(CmpiPredicate::Ult, k0, k), |e| {
                            clear(e, part_m, wgmma::THREADS);
                            for j in 0..per_seg {
                                let (da, db) = descriptors(
                                    e,
                                    mem,
                                    shared,
                                    e.index(warpgroup),
                                    s,
                                    g * seg + 32 * j,
                                );
                                wgmma::emulated_wgmma(e, instr, [da, db], [buffer, buffer], part_m);
                            }
                            threads(e, wgmma::THREADS, &|e, t| {
                                let tid = e.addi(t, e.index(warpgroup * wgmma::THREADS));
                                let l = lane(e, mem.tile, tid, bm, bn);
                                let tid = e.addi(held, tid);
                                let acc: Vec<Value> = (0..count)
                                    .map(|x| e.load(acc_m, &[at(e, tid, x)]))
                                    .collect();
                                let part: Vec<Value> =
                                    (0..count).map(|x| e.load(part_m, &[at(e, t, x)])).collect();
                                let staged = staged_readers(mem, shared, k0);
                                let scales = kn.segment_scales(e, &l, k0, count as usize, &staged);
                                for (x, v) in kn
                                    .promote_loaded(e, &acc, &part, &scales)
                                    .into_iter()
                                    .enumerate()
                                {
                                    e.store(v, acc_m, &[at(e, tid, x as i64)]);
                                }
                            });
                        });
                    }
                }
                vec![]
            });
        };
        match mem.fold {
            Some(fold) => {
                let folds = fold_scan(e, kn, mem, &fold, shared, &sides, zero, first, last);
                e.if_else(
                    folds,
                    &[],
                    |e| {
                        stages(e, true);
                        vec![]
                    },
                    |e| {
                        stages(e, false);
                        vec![]
                    },
                );
            }
            None => stages(e, false),
        }
        vec![]
    });
    // Rank 0 adds ranks 1, 2, .. in order, as on the GPU.
    threads(e, computing, &|e, t| {
        let l = lane(e, mem.tile, t, bm, bn);
        let acc: Vec<Value> = (0..count)
            .map(|x| {
                (1..splits).fold(e.load(acc_m, &[at(e, t, x)]), |sum, r| {
                    let held = e.addi(t, e.index(r * computing));
                    e.addf(sum, e.load(acc_m, &[at(e, held, x)]))
                })
            })
            .collect();
        kn.epilogue(e, &l, &acc);
    });
}
