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
//!   (16 x 8192 x 8192) gets 128 tiles that spend no instruction row past M, where square
//!   blocks would be 64 with 7/8 of their A rows zero; its ring has 8 stages (10 KiB each
//!   for FP8), as a memory-bound block wants bytes in flight. Where the tiles of C leave
//!   SMs idle (16 x 4096 x 8192: 64), K is split (`gather_splits`): a cluster of 2, 4 or 8
//!   blocks per tile (`split-k`, by default while the blocks fit 132 SMs and each split
//!   keeps two stages; 2 where the tiles fill the SMs once and two blocks fit an SM's
//!   shared memory, a second block per SM: 16 x 8192 x 8192 MXFP4 35 us against 52 on the
//!   H200), each summing its range of stages; rank 0 adds the others' partial
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
//! `stages` slots (square: 5, 4 where 5 do not fit, 3 for split NVFP4 tiles beside staged
//! scales; skinny: 8); each holds each operand's
//! stage as copied:
//! - direct (E4M3 / E5M2 as stored): the FP8 tile itself, the copies landing swizzled;
//! - staged (a format translated to FP8): the rows as stored (128 or, packed, 64 bytes),
//!   and after the ring two FP8 tiles per staged operand (by stage % 2) that the
//!   threads fill from the copies they made themselves through the embedding's table:
//!   4-bit codes (FP4, 4-bit customs) four at a time with three `prmt` byte permutes
//!   (images of codes 0-7, of codes 8-15, then the pick by bit 3); 5- and 6-bit codes (FP6)
//!   four at a time by word arithmetic where a rule reproduces the table (`ByteRule`),
//!   else code by code through a select chain.
//!
//! Per stage every thread issues its 16-byte `cp.async.cg.shared.global` (square: 4 per
//! operand, 2 when packed; skinny FP8: 4 of B, 1 of A for 16 rows, and a packed 16-row A's
//! 64 chunks leave half the threads out; rows past M / N and chunks past K copy 0 bytes and
//! fill zeros) and commits them as one group; the loop:
//!
//! ```text
//! prologue: stages 0 .. L-1 issued (L = stages - 2 ahead), one commit group each
//! for each stage s (two per loop iteration; one where operands are translated):
//!   cp.async.wait_group L-1           // this thread's copies of stage s landed
//!   translate them (staged operands)  // into the FP8 tiles of stage s % 2
//!   fence.proxy.async.shared::cta     // generic-proxy writes -> the async proxy (wgmma)
//!   barrier                           // all of stage s is in its tiles; stage s-2's
//!                                     // instructions are done (each warpgroup waited)
//!   per K segment g of the stage (min(scale block, 128) codes):
//!     wgmma.fence; mma (scale-d 0), mma, .. (descriptor start + 32 bytes each); commit
//!     (g = 0: issue stage s+L into the slot stage s-2 used; commit)
//!     wait_group 1; acc += part(segment before) * (its scales)  // g runs meanwhile
//! at the end of each iteration: wait_group 0 (its last segment: promoted by the next
//! iteration's first, after the loop by the drain)
//! ```
//! The segment before the second stage's first is the first stage's last, before the
//! first stage's the last of the iteration before (done): the tensor cores wait at the
//! back edge for the barrier and the issue, not for a promotion, and the copies of stage
//! s+L are issued while stage s's instructions run. Stage s-1's slot stays untouched
//! until the barrier of stage s+1. A translated tile of stage s % 2 was last read by stage
//! s-2's instructions: where operands are translated each segment is waited for and
//! promoted before the next is issued (one register set), so both warpgroups were done
//! with them, and with the decoded scales of stage s-2, before stage s-1's barrier (three
//! tiles, by stage % 3, while a stage's last segment ran into the next stage, until
//! 2026-12-05). No instruction is in flight across the back edge (`stage_runs`): ptxas cannot
//! follow a `wgmma` group through it, and where a promotion reads results a group of the
//! previous iteration may still write, it serializes every `wgmma` of the kernel (`ptxas
//! -v`: C7514; the loop carried the last segment running through the back edge until
//! 2026-11-30, and every pipelined kernel was serialized); a segment carried done is not.
//! Within an iteration the running results alternate between two register sets, where
//! they are two (`overlaps`: FP8 used as stored, no scales along K; else each segment is
//! waited for and promoted before the next is issued, the promotion pinned there: ptxas
//! spilled otherwise, and each iteration ends with its last promotion). A second stage
//! past the block's range runs on whatever its slot holds and is never promoted.
//!
//! Partial sums go into the f32 accumulators at least every 128 of K, also for per-tensor
//! scales: Hopper's FP8 MMA accumulates with reduced precision, so (as DeepGEMM does) the
//! tensor cores never sum more than 128 products of a row; per-tensor / per-channel scales
//! are applied in the epilogue, block scales (MX, blockwise) per segment. A segment's
//! block scales (a thread's 2 rows and 32 columns) are loaded before the wait for its
//! partial sums, through an empty inline assembly (`wgmma::pinned`) that keeps the loads
//! there. The scales are staged through shared memory (`ScaleStage`), copied by the
//! threads that copy stages (the barrier pipeline's, the producer warpgroup's; beside
//! TMA's boxes too): each block row's stage scales (4, 8 or 16 bytes) are copied with the
//! stage by one thread, which decodes them to f32 once after its wait (a ring of 2 after
//! the translated tiles; warp-specialized, in the slot); the promotions then read 34 f32
//! from shared memory (18 loads: the column pairs as one) instead of loading and decoding
//! 34 bytes each (6 integer instructions per E8M0 code, 200 per segment and thread, more
//! issue slots than the segment's wgmma; and 32 column addresses a thread, which LLVM
//! hoists out of the loop: 255 registers and spills). Where K is not whole stages, a
//! row's stage bytes are neither aligned nor inside the row: byte codes are copied as the
//! 4-byte words that hold them and shifted in place when decoded (`ScaleBlocks::window`;
//! folded, put in place a stage ahead by the thread that copied them, `settle_scales`);
//! f32 scales there stay in global memory. Not where staging costs a stage (the barrier
//! pipeline keeps at least 4).
//!
//! Scales that change every 16 codes (NVFP4) are a segment per 16-block, one instruction
//! each, on a translated operand whose translated tiles are split in two halves
//! (`split_operand`, `Route::halves`): half h holds the 16-code chunks at h of every 32 and
//! zeros in the others (cleared once before the first stage), and the instruction of the
//! block at 32 j + 16 h reads half h from 32 j, so that it sums that block alone (twice
//! the tensor work of the codes, as the register-staged kernel's zeroed registers cost).
//! The split operand's translated tiles take twice the room; the barrier pipeline then
//! keeps 3 stages where that lets it stage the scales (a stage is 8 segments long, time
//! enough for copies issued one stage ahead; decoding its 34 UE4M3 scales would take each
//! promotion more issue slots than its instruction's tensor time). Where fewer than 3
//! stages are left, where no operand is translated, or where the other operand's format
//! has infinities (E5M2: an infinity times a zero half is NaN), the op takes the
//! register-staged kernel.
//! A dynamic K, rows that are not a multiple of 16 bytes or not row-major take `wgmma.rs`'s
//! register-staged kernel.
//!
//! The f16 route (`nvfp4=auto`, the default, and `f16`: `Nvfp4Route`, `f16_route`;
//! `Plan::in_codes`): where the operands of
//! NVFP4's 16-blocks are translated and every product of a code and a block scale is an
//! f16 value (E2M1 x UE4M3, proved per op by `ScaledFormat::scaled_embeds_in_f16`), the
//! blocks apply the block scales on the way in: a stage is 64 codes (a tile row stays 128
//! bytes, now of f16; the skinny block keeps twice the stages, as many bytes in flight),
//! each copied chunk brings its row's 4-byte word of the stage's scales
//! (`Memory::chunk_scales`), and the thread that copied it translates its codes to E5M2
//! (an f16's high byte is the E5M2 code of the same value, so a byte permute widens each
//! pair to f16x2; every 4-bit format that embeds in FP8 embeds in E5M2) and multiplies
//! each pair by its block's scale (the chunk's UE4M3 codes widened by
//! `cvt.rn.f16x2.e4m3x2`). The stage's 4 `m64n<n>k16.f32.f16.f16` instructions sum into
//! the accumulators themselves (no promotion, no split halves); the global scales stay in
//! the epilogue. Half FP8's tensor rate, but none of it on zeros and no per-block
//! promotion: by the SASS counts (`bench/NOTES.md`) the square block's split route is
//! bound by its promotions near 16% of the FP8 peak, this one near the f16 peak (~47% of
//! FP8's). An E4M3 / E5M2 operand beside the NVFP4 one (its scales per tensor or per
//! channel: FP8 activations, NVFP4 weights) takes the route too: staged as stored and
//! widened to f16 by its copier (E5M2 by the byte permute, E4M3 by `cvt.rn.f16x2.e4m3x2`,
//! both exact), its scales applied in the epilogue (`Kernel::epilogue`).
//!
//! The f16 route also takes the formats no FP8 type holds but whose fields f16's do
//! (`fields_plan`: E3M4, E2M5, E4M3 FNUZ, 7-bit customs, FP8 beside them), one byte a code:
//! each copier moves its codes' sign, exponent and mantissa into f16 patterns
//! (`codes::f16_pattern_pair`: two codes a few integer operations, no conversion
//! instruction), their values times `2^-shift`, which the epilogue undoes with the scales;
//! the same k16 f16 instructions. With scales per tensor or per channel they sum whole
//! stages into the accumulators (`Plan::in_codes`); with block scales along K (MX,
//! blockwise, 16-blocks) each block's instructions (a 64-code stage at most: two for
//! MX's 32, four a stage for 128-blocks) start from zero and their sums are promoted with
//! the block's scales, as on the FP8 route, the scales loaded from global memory by the
//! promotion (the staged scale blocks are laid out for 128-code stages). TMA does not
//! feed it (both operands are translated).
//!
//! The pieces, one module each:
//! - `memory`: the dynamic shared memory's layout (`Memory`: ring, translated tiles, staged
//!   scales, mbarriers), the 128-byte swizzle, the threads' chunks and shared-memory access;
//! - `stage`: a stage's copies (`cp.async`, block scales with them) and the translation of
//!   staged operands to FP8 (byte permutes, word arithmetic, select chains), scales
//!   decoded once per block;
//! - `fold`: block scales folded into the translated codes (`fold-scales`), the scan that
//!   decides it per block;
//! - `specialized`: the warp-specialized block (`kernel=wgmma-specialized`);
//! - `tma`: tensor maps, box loads, B multicast (`kernel=wgmma-tma`) and their emulation;
//! - `cluster`: cluster barriers, distributed shared memory, split-K's gather;
//! - `emulated`: the whole block run on the CPU (`emulate=true`).

use lowp_formats::{ScaleLayout, ScaledFormat};
use melior::dialect::arith::CmpiPredicate;
use melior::ir::operation::OperationBuilder;
use melior::ir::operation::{OperationLike, OperationResult};
use melior::ir::r#type::{DimSize, MemRefType, ShapedTypeLike};
use melior::ir::{Attribute, Identifier, OperationRef, TypeLike, Value, ValueLike};

use super::wgmma::{self, Wgmma};
use crate::chip::Chip;
use crate::expand_quantize::{ceil_div, code_format, layout_attr_of, unsupported};
use crate::ir::Emitter;
use crate::matrix_kernel::{Kernel, Lane, Operand, Plan, SegmentScales};
use crate::to_loops::matmul_operands;
use crate::PassError;

mod cluster;
mod emulated;
mod fold;
mod memory;
mod once;
mod persistent;
mod registers;
mod specialized;
mod stage;
mod store;
mod tma;

use cluster::{gather_splits, stage_range};
use emulated::emulated_block;
use fold::{fold_plan, fold_scan, Folded};
use memory::{
    clear_halves, ring_div, ring_rem, split_operand, staged_scale_blocks, Memory, Shared,
    TileDescriptors,
};
use persistent::{persistent_block, Schedule};
pub(super) use registers::Registers;
use specialized::specialized_block;
use stage::{
    copy_scales, copy_stage, decode_scales, settle_scales, staged_readers, translate_stage,
};
use store::{c_tensor_map, StoreC};
use tma::{acquire_tensor_map, box_bytes, load_boxes, tensor_map};

/// K per stage of FP8 codes (the f16 route's stages are 64: `Memory::bk`).
const BK: i64 = 128;

/// Bytes of a tile row: the 128-byte swizzle's line.
const ROW: i64 = 128;

/// Warp-specialized: after the consumer warpgroups, one producer warpgroup.
const PRODUCERS: i64 = 128;

/// Stages in the ring: of the square block (the barrier pipeline's copies run `stages - 2`
/// ahead: two slots are being read), warp-specialized, of the skinny one (its stages are
/// small, and a memory-bound block wants many bytes in flight).
const STAGES: i64 = 5;
const SPECIALIZED_STAGES: i64 = 4;
const SKINNY_STAGES: i64 = 8;

/// Translated FP8 tiles per staged operand in the barrier pipeline (by stage % 2), and
/// entries of its ring of decoded scales: stage s's are read by its own instructions and
/// promotions only, every one of them waited for before stage s + 1's barrier (`overlaps`
/// is false wherever there are either), so stage s + 2 may write them after that barrier.
const PARITIES: i64 = 2;

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
    /// The split is by shape, for more blocks on each multiprocessor than the tiles give
    /// (2 in the plan): `lower` sets it to what the kernel's shared memory allows, with the
    /// staged scales and the fold tables, which the plan does not size (`split_by_room`).
    paired: bool,
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
    /// The square block: 128 rows of C, `n` columns (128 or 192, `block-n`).
    fn square(n: i64) -> Tile {
        Tile {
            rows: [128, n],
            warpgroups: 2,
            swapped: false,
            splits: 1,
            paired: false,
            multicast: 1,
        }
    }

    /// The skinny block for M (`None`: dynamic), not split.
    fn skinny(m: Option<i64>) -> Tile {
        let rows = m.map_or(64, |m| (m.max(1) + 15) / 16 * 16).min(64);
        Tile {
            rows: [rows, 64],
            warpgroups: 1,
            swapped: true,
            splits: 1,
            paired: false,
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
/// `nvfp4`: where NVFP4's 16-blocks take the f16 route (`Nvfp4Route`, `f16_route`). `exact`
/// (`accumulate=f32`): every format on the f16 patterns of its fields, FP8 ones too.
/// `block_n`: the square block's columns (`block-n`).
#[allow(clippy::too_many_arguments)]
pub(super) fn plan(
    op: OperationRef,
    chip: &Chip,
    blocks: Blocks,
    splits: Option<i64>,
    nvfp4: Nvfp4Route,
    exact: bool,
    block_n: i64,
) -> Result<(Plan, Wgmma, Tile), String> {
    // FP8 where the formats are or embed in E4M3 / E5M2, else the f16 patterns of their
    // fields (`fields_plan`).
    let (mut plan, mut instr) = wgmma::plan(op, exact).or_else(|fp8| fields_plan(op, fp8))?;
    // Blocks shorter than an instruction's K other than NVFP4's 16 (split tiles, below):
    // the register-staged kernels zero the rest of each step; the pipeline's stages do not.
    if plan.step < instr.k() && plan.step != 16 {
        return Err(format!(
            "the scales change every {} along K; the pipeline's instructions sum {} (the \
             register-staged kernels take one block a step)",
            plan.step,
            instr.k()
        ));
    }
    // Scales that change every 16 codes: an instruction per 16-block, on the halves of a
    // translated operand's tiles (`split_operand`).
    if plan.step == 16 && !plan.f16 && split_operand(&plan).is_none() {
        return Err(
            "the scales change every 16 along K and neither operand is translated (the \
             16-blocks go through the halves of a translated operand's tiles)"
                .into(),
        );
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
                    "its 16-byte copies (cp.async, TMA boxes) need {name} row-major with \
                     static rows of a multiple of 16 bytes"
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
        Blocks::Square => Tile::square(block_n),
        Blocks::Skinny => Tile::skinny(m),
        Blocks::ByShape if m.is_some_and(|m| m <= 64) => Tile::skinny(m),
        Blocks::ByShape => Tile::square(block_n),
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
    if plan.f16 && k.is_none_or(|k| k % (ROW / 2) != 0) {
        return Err(format!(
            "the f16 patterns' route takes K static and whole stages of {}",
            ROW / 2
        ));
    }
    // Where the scales change every 16 codes: the f16 route where `nvfp4` takes it; asked
    // for (`nvfp4=f16`) and not taken, a remark saying why the split route stays.
    if nvfp4 != Nvfp4Route::Split && plan.step == 16 && !plan.f16 {
        match f16_route(op, &plan, k) {
            Ok(operands) if nvfp4 == Nvfp4Route::Auto && nvfp4.keeps_split(tile, &operands) => {}
            Ok([a, b]) => {
                (plan.a, plan.b) = (a, b);
                (instr.a, instr.b) = (plan.a.ty, plan.b.ty);
                (plan.in_codes, plan.f16) = (true, true);
                instr.f16 = true;
            }
            Err(why) if nvfp4 == Nvfp4Route::F16 => crate::matrix_kernel::remark(
                op,
                &format!("nvfp4=f16 not taken, the split route instead: {why}"),
            ),
            Err(_) => {}
        }
    }
    // The split route's instruction of a 16-block multiplies the other operand's codes of
    // the whole 32 by the split one's tile half, zeros outside the block: an infinity
    // there would make NaN (inf x 0) where the block's sum has no such product. The
    // register-staged kernel zeros both operands' registers past the block instead.
    if let Some(x) = split_operand(&plan) {
        let other = if x == 0 { o.rhs } else { o.lhs };
        let (format, _) = code_format(op, other).map_err(|e| e.to_string())?;
        if format.has_inf() {
            return Err(format!(
                "{format}'s infinities beside the 16-blocks' split tiles would meet their \
                 zero halves (inf x 0 is NaN)"
            ));
        }
    }
    let memory = Memory::new(&plan, chip, tile, Feed::Barrier, [None, None], None);
    if !memory.fits() {
        return Err(format!(
            "{} stages of the ring fit the {} KiB of shared memory beside the translated \
             tiles; its loop needs {}",
            memory.stages.max(0),
            chip.shared_kib,
            memory.fewest()
        ));
    }
    // By shape, more blocks on each multiprocessor (K split in 2 here; `lower` decides how
    // many fit with the kernel's whole shared memory, `split_by_room`) where the tiles fill
    // at most one block a multiprocessor: on the H200 (bench/NOTES.md, 2026-12-04)
    // 16 x 8192 x 8192's 128 blocks ran MXFP4 in 35 us against 52 unsplit, NVFP4's f16
    // route in 47 against 65, FP8 in 24 either way; 4 or 8 splits were slower than 2
    // there and at 16 x 4096 x 8192.
    if let (true, None, 1, Some(m), Some(n), Some(k)) = (tile.swapped, splits, tile.splits, m, n, k)
    {
        let blocks = ceil(m, tile.rows[0]) * ceil(n, tile.rows[1]);
        if blocks <= chip.multiprocessors as i64 && ceil(k, BK) >= 8 {
            (tile.splits, tile.paired) = (2, true);
        }
    }
    Ok((plan, instr, tile))
}

/// Where the pipeline takes NVFP4's 16-blocks on the f16 route (`nvfp4`, `f16_route`)
/// rather than the split one (an FP8 instruction per 16-block on tiles split in halves).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum Nvfp4Route {
    /// Wherever the f16 route takes the op, but E4M3 beside NVFP4 on the skinny block
    /// (`keeps_split`). On the H200 (run 1, 2026-12-04, bench/results/
    /// h200-2026-12-04-021a1e7.txt) the f16 route ran NVFP4 x NVFP4 at 8192^3 in 4.23 ms
    /// against the split route's 8.77, at 4096^3 0.55 against 1.12, and at 16 x 8192 x 8192
    /// 68 us against 72; E4M3 x NVFP4 (W4A8) at 8192^3 3.45 ms against 5.03, but at 16 x
    /// 8192 x 8192 57 us against 49. It is also the more exact: products of f16 values,
    /// exact in the f32 sums, where the split route's FP8 instructions sum with about 13
    /// bits below the largest term.
    Auto,
    /// Never.
    Split,
    /// Wherever the f16 route takes the op (a remark says why where it does not).
    F16,
}

impl Nvfp4Route {
    /// Whether `auto` keeps the split route for the f16 route's `operands` in `tile`: an
    /// E4M3 operand used as stored beside the NVFP4 one on the skinny block (W4A8 decode,
    /// where the split route measured faster). Not E5M2, whose infinities the split route's
    /// zero halves would turn into NaN (the op would leave the pipeline).
    fn keeps_split(self, tile: Tile, operands: &[Operand; 2]) -> bool {
        tile.swapped
            && operands
                .iter()
                .any(|o| o.table.is_none() && o.ty == ScaledFormat::F8E4M3)
    }
}

/// The split of K by shape (the skinny tiles fill the multiprocessors at most once): the
/// blocks with `memory` that fit one multiprocessor's shared memory (a block's limit and
/// the 1 KiB each block reserves), rounded down to a power of two (at most `MAX_SPLITS`),
/// while each split keeps 4 stages of K's `k` codes. With the default rings 2 (MXFP4
/// 67904 bytes a block: 3 fit; MXFP6 108800: 2), the split the H200 ran fastest
/// (bench/NOTES.md, 2026-12-04); a ring made smaller (`stages=N`) leaves room for more
/// (MXFP4 at 4 stages: 4).
fn split_by_room(chip: &Chip, memory: &Memory, k: i64) -> i64 {
    let fit = (chip.shared_kib as i64 + 1) * 1024 / (memory.dynamic_bytes() + 1024);
    let mut splits = 1;
    while splits * 2 <= fit.min(MAX_SPLITS) && ceil(k, BK) >= 4 * splits * 2 {
        splits *= 2;
    }
    splits
}

/// The operands of `op` (planned as `plan`, K static where `k`) on the f16 route
/// (`Plan::in_codes`), where it takes it: its scales change every 16 codes (NVFP4), K is
/// static and whole stages of 64 (each row's 4 scales of a stage one aligned word), and
/// each operand is either
/// - of NVFP4's 16-blocks, translated, every product of a code and a block scale an f16
///   value (`ScaledFormat::scaled_embeds_in_f16`: E2M1 x UE4M3 is): its codes are
///   translated to E5M2, an f16's high byte (a byte permute then widens them; every 4-bit
///   format that embeds in E4M3 also does in E5M2: no more mantissa bits than 2, a coarser
///   smallest step, a smaller largest value), and multiplied by their block's scale;
/// - or E4M3 / E5M2 whose scales do not change along K (per-tensor, per-channel: NVFP4
///   weights beside FP8 activations): widened as stored (every FP8 value is an f16 one),
///   its scales applied in the epilogue.
///
/// Each code reaches an `m64nNk16.f32.f16.f16` instruction as f16 (the product of two is
/// exact in f32): no promotion per 16-block and no split halves (the split route's
/// instructions sum zeros for half their tensor time, and each 16-block's promotion takes
/// 128 FMUL / FFMA a thread), at the f16 rate (half FP8's), the global scales in the
/// epilogue.
fn f16_route(op: OperationRef, plan: &Plan, k: Option<i64>) -> Result<[Operand; 2], String> {
    match k {
        None => return Err("K is not static".into()),
        Some(k) if k % (ROW / 2) != 0 => {
            return Err(format!("K = {k} is not whole stages of {}", ROW / 2))
        }
        _ if plan.step != 16 => return Err("no scales change every 16 codes".into()),
        _ => {}
    }
    let [(fa, pa), (fb, pb)] = Plan::formats(op)?;
    let layouts = ["lhs_layout", "rhs_layout"].map(|n| layout_attr_of(op, n).ok());
    let [Some(la), Some(lb)] = layouts else {
        return Err("a scale layout is not lowp's".into());
    };
    let f16 = |f: ScaledFormat, packed: bool, l: ScaleLayout| {
        if matches!(l, ScaleLayout::Nvfp4 { block: 16, .. }) {
            let operand = Operand::new(f, packed, &[ScaledFormat::F8E5M2], &[0]).ok()?;
            let exact = f.scaled_embeds_in_f16(l.scale_dtype());
            return (exact && operand.table.is_some()).then_some(operand);
        }
        let fp8 = matches!(f, ScaledFormat::F8E4M3 | ScaledFormat::F8E5M2);
        (fp8 && !l.is_k_blocked())
            .then(|| Operand::new(f, packed, &[f], &[0]).ok())
            .flatten()
    };
    let side = |f: ScaledFormat, packed: bool, l: ScaleLayout| {
        f16(f, packed, l).ok_or_else(|| {
            format!(
                "{f} with {l} is neither NVFP4 whose block products are f16 values nor \
                 E4M3 / E5M2 with scales constant along K"
            )
        })
    };
    Ok([side(fa, pa, la)?, side(fb, pb, lb)?])
}

/// The f16 route for formats no FP8 type holds but whose fields f16's do (`Operand::f16`:
/// E3M4, E2M5, E4M3 FNUZ, 7-bit customs; E4M3 / E5M2 beside them alike): each code's
/// sign, exponent and mantissa moved into an f16 pattern by its copier (two codes a few
/// integer operations), its value times `2^-shift`, which the epilogue undoes with the
/// scales; one byte a code. Where f16's exponent field holds a format's fields but not
/// the other's (E5M2 FNUZ, 6- and 7-bit exponents), both take bf16 patterns
/// (`Operand::bf16`: fields moved into an f32, one multiply, its high half) and
/// `k16.f32.bf16.bf16`, the same tiles and rate. Scales constant along K (per tensor, per channel) are the
/// epilogue's, the instructions summing into the accumulators (`Plan::in_codes`); block
/// scales (MX, blockwise, 16-blocks) are applied per segment on the f32 partial sums, as on
/// the FP8 route (`promote_segment`; a segment is the block, at most a 64-code stage).
/// `fp8`: why the FP8 route does not take the op, which the reason given starts with.
fn fields_plan(op: OperationRef, fp8: String) -> Result<(Plan, Wgmma), String> {
    let [(_, pa), (_, pb)] = Plan::formats(op)?;
    if pa || pb {
        return Err(format!("{fp8}; for f16: packed codes take the FP8 route"));
    }
    let (mut plan, half, why) = Plan::half(op, fp8)?;
    // Sums added as they are where no scale changes along K; else promoted per segment.
    (plan.in_codes, plan.f16) = (plan.seg.is_none(), true);
    let instr = Wgmma {
        a: plan.a.ty,
        b: plan.b.ty,
        n: wgmma::BN,
        swapped: false,
        f16: true,
        half,
        why_half: Some(why),
    };
    Ok((plan, instr))
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
    crate::ir::static_dim(v.r#type(), 0)
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

/// The K segments of a stage: codes per segment, instructions per segment (a 16-block's
/// one reads the halves of the split operand's tiles; the f16 route's stage of 64 is one
/// segment of 4 instructions of K 16).
fn segment_shape(plan: &Plan) -> (i64, i64) {
    if plan.in_codes {
        return (ROW / 2, ROW / 2 / 16);
    }
    if plan.f16 {
        // (A stage of 64 f16 codes, k16 instructions: a 128-block promoted per stage.)
        let seg = plan.span.min(ROW / 2);
        return (seg, seg / 16);
    }
    let span = plan.span.min(BK);
    (span, (span / 32).max(1))
}

/// Per-operand facts of the copies: its codes (memref), rows, tile origin, bytes per row
/// (static: the plan takes static rows of codes), and what the static shape proves about the bounds: `whole_rows` (its rows are static
/// and whole tiles of the block: every row a block copies is inside), `whole_k` (K is
/// static and whole stages: every chunk of a stage is inside).
struct Side<'c, 'a> {
    bits: Value<'c, 'a>,
    rows: Value<'c, 'a>,
    origin: Value<'c, 'a>,
    row_bytes: i64,
    whole_rows: bool,
    whole_k: bool,
    operand: Operand,
}

impl<'c, 'a> Side<'c, 'a> {
    /// Tile row `r`'s row in the operand, clamped inside it unless the rows are whole tiles
    /// (rows past it read the last row's: their codes copy as zeros, or are never used).
    fn row(&self, e: &Emitter<'c, 'a>, r: Value<'c, 'a>) -> Value<'c, 'a> {
        let row = e.addi(self.origin, r);
        if self.whole_rows {
            row
        } else {
            e.minui(row, e.subi(self.rows, e.index(1)))
        }
    }
}

fn sides<'c, 'a>(
    e: &Emitter<'c, 'a>,
    kn: &Kernel<'_, 'c, 'a>,
    mem: &Memory,
    bm: Value<'c, 'a>,
    bn: Value<'c, 'a>,
) -> [Side<'c, 'a>; 2] {
    let tile = mem.tile;
    let k = static_k(kn).expect("the pipeline's plan takes static rows of codes");
    let row_bytes = |o: &Operand| if o.packed { k / 2 } else { k };
    let whole_k = k % mem.bk() == 0;
    let whole_rows = |codes: Value<'c, 'a>, x: usize| {
        static_rows(codes).is_some_and(|rows| rows % tile.rows[x] == 0)
    };
    [
        Side {
            bits: kn.ops.bits_a,
            rows: kn.ops.m,
            origin: e.muli(bm, e.index(tile.rows[0])),
            row_bytes: row_bytes(&kn.plan.a),
            whole_rows: whole_rows(kn.ops.o.lhs, 0),
            whole_k,
            operand: kn.plan.a.clone(),
        },
        Side {
            bits: kn.ops.bits_b,
            rows: kn.ops.n,
            origin: e.muli(bn, e.index(tile.rows[1])),
            row_bytes: row_bytes(&kn.plan.b),
            whole_rows: whole_rows(kn.ops.o.rhs, 1),
            whole_k,
            operand: kn.plan.b.clone(),
        },
    ]
}

/// Which folds of block scales a lowering may take (`fold-scales`, `Fold`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum FoldScales {
    /// Folded where the block's scales allow, B anchored where its allow (`Anchor`).
    Auto,
    /// Folded where they allow, by rows only.
    Rows,
    /// Per 32 always.
    Off,
}

/// How a lowering may run the pipeline where it has the choice (`lowp-to-nvvm`'s options).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct Tuning {
    /// Which folds of the block scales into the translated codes it may take where they
    /// apply (`fold-scales`, `Fold`).
    pub(super) fold: FoldScales,
    /// The barrier pipeline translates stage s + 1 while stage s's instructions run
    /// (`translate-ahead`, `hardware_block`).
    pub(super) ahead: bool,
    /// The most stages of the ring (`stages`; `None`: the block's own, `Memory::new`).
    pub(super) stages: Option<i64>,
    /// TMA's square block, fed by TMA alone, as one block per multiprocessor looping over
    /// tiles (`persistent`, `persistent_block`).
    pub(super) persistent: bool,
    /// Both operands translated once into workspaces, the TMA block on them (`translate-once`,
    /// `once`).
    pub(super) once: bool,
    /// The warp-specialized square block's epilogue stores C by TMA from shared memory
    /// (`store-c=tma`, `store`).
    pub(super) store_c: bool,
}

/// Whether `op` takes `translate-once` (`once::plan`), and why not.
pub(super) fn translates_once(op: OperationRef) -> Result<(), String> {
    once::plan(op).map(|_| ())
}

/// Lower `op` as three launches (`once`): its operands translated once into workspaces,
/// the TMA square block (`fast`: its plan for the op on them) on the tiles whose rows all
/// fold, and `op`'s own pipeline (`plan`, `instr`, `tile`, `feed`) on the others.
#[allow(clippy::too_many_arguments)]
pub(super) fn lower_once<'c, 'a>(
    e: &Emitter<'c, 'a>,
    op: OperationRef<'c, 'a>,
    fast: impl Fn(OperationRef<'c, 'a>) -> Result<(Plan, Wgmma, Tile), String>,
    plan: &Plan,
    instr: &Wgmma,
    chip: &Chip,
    tile: Tile,
    feed: Feed,
    tuning: Tuning,
    emulate: bool,
) -> Result<(), PassError> {
    let translation = once::plan(op).map_err(|why| unsupported(op, why))?;
    let gpu = !emulate;
    let w = once::Workspaces::new(e, &translation, gpu);
    let o = matmul_operands(op)?;
    let bytes = |v| {
        crate::expand_quantize::storage_cast(e, v)
            .ok_or_else(|| unsupported(op, "codes are not castable to bytes"))
    };
    let sources = [
        [bytes(o.lhs)?, bytes(o.lhs_scales)?],
        [bytes(o.rhs)?, bytes(o.rhs_scales)?],
    ];
    once::translate(e, &translation, &w, sources, gpu);
    let copy = once::retarget(e, op, &translation, &w);
    let fp8 = fast(copy).map_err(|why| unsupported(op, format!("translate-once: {why}")));
    let lowered = fp8.and_then(|(fp8, i, fast_tile)| {
        if fast_tile.rows != [128, 128] || tile.rows != [128, 128] || fast_tile.multicasts() {
            return Err(unsupported(
                op,
                "translate-once: the translated operands' scales are per 128 x 128 tile, the \
             square block's (block-n=192 does not take it)",
            ));
        }
        let guard = once::Guard::new(&translation, &w, true);
        let tuning = Tuning {
            persistent: false,
            ..tuning
        };
        lower_guarded(
            e,
            copy,
            &fp8,
            &i,
            chip,
            fast_tile,
            Feed::Tma,
            tuning,
            emulate,
            Some(guard),
        )
    });
    // SAFETY: the copy has no results and no uses; its lowering is in place.
    unsafe { mlir_sys::mlirOperationDestroy(copy.to_raw()) };
    lowered?;
    let guard = once::Guard::new(&translation, &w, false);
    let tuning = Tuning {
        persistent: false,
        ..tuning
    };
    lower_guarded(
        e,
        op,
        plan,
        instr,
        chip,
        tile,
        feed,
        tuning,
        emulate,
        Some(guard),
    )?;
    w.free(e);
    Ok(())
}

/// Lower `op` with the register-fed skinny block (`kernel=wgmma-registers`, `registers`).
#[allow(clippy::too_many_arguments)]
pub(super) fn lower_registers<'c, 'a>(
    e: &Emitter<'c, 'a>,
    op: OperationRef<'c, 'a>,
    plan: &Plan,
    instr: &Wgmma,
    tile: Tile,
    r: &Registers,
    emulate: bool,
) -> Result<(), PassError> {
    registers::lower(e, op, plan, instr, tile, r, emulate)
}

/// Lower `op` with the pipelined kernel: a `gpu.launch` with dynamic shared memory
/// (`emulate = false`) or its CPU emulation, as `tuning` asks where it applies.
#[allow(clippy::too_many_arguments)]
pub(super) fn lower<'c, 'a>(
    e: &Emitter<'c, 'a>,
    op: OperationRef<'c, 'a>,
    plan: &Plan,
    instr: &Wgmma,
    chip: &Chip,
    tile: Tile,
    feed: Feed,
    tuning: Tuning,
    emulate: bool,
) -> Result<(), PassError> {
    lower_guarded(e, op, plan, instr, chip, tile, feed, tuning, emulate, None)
}

/// `lower`, each square block (not persistent) computing its tile only where `guard`
/// takes it (`once::Guard`).
#[allow(clippy::too_many_arguments)]
fn lower_guarded<'c, 'a>(
    e: &Emitter<'c, 'a>,
    op: OperationRef<'c, 'a>,
    plan: &Plan,
    instr: &Wgmma,
    chip: &Chip,
    mut tile: Tile,
    feed: Feed,
    tuning: Tuning,
    emulate: bool,
    guard: Option<once::Guard<'c, 'a>>,
) -> Result<(), PassError> {
    let fold = tuning.fold;
    let mut kn = Kernel::new(e, op, plan, instr)?;
    let mut mem = Memory::new(
        plan,
        chip,
        tile,
        feed,
        staged_scale_blocks(&kn, static_k(&kn)),
        tuning.stages,
    );
    if let Some(n) = tuning.stages.filter(|_| !mem.fits()) {
        return Err(unsupported(
            op,
            format!(
                "stages={n}: {} stages of this block's ring fit the {} KiB of shared memory; \
                 its loop needs {}",
                mem.stages.clamp(0, n),
                chip.shared_kib,
                mem.fewest()
            ),
        ));
    }
    if fold != FoldScales::Off && static_k(&kn).is_some_and(|k| k >= BK) {
        // Its tables after the rest, where they fit (with the base's alignment slack).
        let limit = chip.shared_kib as i64 * 1024 - 1024;
        mem.fold = fold_plan(&kn, &mem, fold == FoldScales::Auto).filter(|f| f.end() <= limit);
        if let Some(f) = mem.fold {
            mem.bytes = f.end();
        }
    }
    // C stored by TMA: its staging area after the rest, where it fits.
    if tuning.store_c {
        mem.store_c = StoreC::place(&kn, &mem, chip);
        if let Some(store) = mem.store_c {
            mem.bytes = store.end(tile.warpgroups);
        }
    }
    // A split by shape: as many blocks a multiprocessor as the kernel's shared memory (the
    // ring, the staged scales, the fold tables) leaves room for.
    if tile.paired {
        tile.splits = split_by_room(chip, &mem, static_k(&kn).unwrap_or(0));
        tile.paired = tile.splits > 1;
        mem.tile = tile;
    }
    // Static rows that are whole blocks (the grid has no block past them): the scale
    // reads of those rows need no clamp. (K does: a stage past the block's range, the
    // second of a loop iteration's two, runs and reads its scales, unpromoted.)
    let o = matmul_operands(op)?;
    let whole = |v: Value, rows: i64| static_rows(v).is_some_and(|r| r % rows == 0);
    kn.inside = [whole(o.lhs, tile.rows[0]), whole(o.rhs, tile.rows[1])];
    // (Blocks start on multiples of their rows: square tiles at 128 i, skinny at 64 j.)
    let kn = kn.with_block(tile.rows[0], tile.rows[1]);
    let specialized = mem.specialized;
    let one = e.index(1);
    let grid = kn.grid(e, tile.rows[0], tile.rows[1]);
    let splits = e.index(tile.splits);
    // Persistent: [tiles along N, along M] (M and N static) and a block per multiprocessor,
    // at most one per tile.
    let persistent = match (static_rows(o.rhs), static_rows(o.lhs)) {
        (Some(n), Some(m)) if tuning.persistent && persistent::takes(&mem) => {
            let tiles = [ceil(n, tile.rows[1]), ceil(m, tile.rows[0])];
            Some(Schedule::new(tiles, chip.multiprocessors as i64))
        }
        _ => None,
    };
    if let (true, Some(schedule)) = (emulate, persistent) {
        // Each block's tiles in turn, as the kernel's loop takes them (the ring's turns
        // across tiles are the hardware's: `emulated_block` runs one tile's stages).
        kn.blocks(e, [e.index(schedule.blocks), one], |e, _, b| {
            e.for_loop(e.index(0), schedule.count(e, b), one, &[], |e, i, _| {
                let (bm, bn) = schedule.tile(e, b, i);
                emulated_block(e, &kn, &mem, instr, bm, bn, &[]);
                vec![]
            });
        });
        return Ok(());
    }
    debug_assert!(
        guard.is_none() || (!tile.swapped && tile.multicast == 1 && persistent.is_none())
    );
    if emulate {
        kn.blocks(e, grid, |e, by, bx| {
            if tile.swapped {
                return emulated_block(e, &kn, &mem, instr, by, bx, &[]);
            }
            let (bm, bn) = grouped(e, grid, bx, by);
            if let Some(guard) = guard {
                e.if_then(guard.takes(e, bm, bn), |e| {
                    emulated_block(e, &kn, &mem, instr, bm, bn, &[])
                });
                return;
            }
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
    let k_stages = ceil(k, mem.bk());
    // The tensor maps of the operands TMA loads, made on the host.
    let bits = [kn.ops.bits_a, kn.ops.bits_b];
    // (B multicast: each box is a block's part of the stage.)
    let maps: [Option<Value>; 2] = std::array::from_fn(|x| {
        let route = mem.routes[x];
        let parts = if x == 1 { tile.multicast } else { 1 };
        (mem.tma && !route.staged).then(|| tensor_map(e, bits[x], route.rows / parts))
    });
    // (C's staging area and its tensor map, with store-c=tma.)
    let c_store = mem
        .store_c
        .map(|store| (store, c_tensor_map(e, &store, kn.ops.o.out)));
    let cluster = match (tile.splits, tile.multicast) {
        (1, 1) => None,
        (1, blocks) => Some([e.index(blocks), one, one]),
        _ => Some([splits, one, one]),
    };
    let blocks = match persistent {
        Some(schedule) => [e.index(schedule.blocks), one, one],
        None => [e.muli(grid[0], splits), grid[1], one],
    };
    e.gpu_launch_dynamic(
        blocks,
        [e.index(threads), one, one],
        cluster,
        mem.dynamic_bytes(),
        |e, bid, tid, memory| {
            let block = |e: &Emitter<'c, 'a>| {
                if let Some(schedule) = persistent {
                    persistent_block(
                        e, &kn, &mem, instr, maps, c_store, k_stages, schedule, bid[0], tid[0],
                        memory,
                    )
                } else if specialized {
                    specialized_block(
                        e, &kn, &mem, instr, maps, c_store, k_stages, bid, tid[0], memory,
                    )
                } else {
                    hardware_block(e, &kn, &mem, instr, maps, tuning.ahead, bid, tid[0], memory)
                }
            };
            match guard {
                Some(guard) => {
                    let (bm, bn) = grouped(e, square_grid(e, &kn, tile), bid[0], bid[1]);
                    e.if_then(guard.takes(e, bm, bn), block);
                }
                None => block(e),
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
/// at stage `s` (`TileDescriptors`, at K 0; `descriptors_at` offsets them per instruction).
fn stage_descriptors<'c, 'a>(
    e: &Emitter<'c, 'a>,
    mem: &Memory,
    shared: Shared<'c, 'a>,
    warpgroup: Value<'c, 'a>,
    s: Value<'c, 'a>,
) -> TileDescriptors<'c, 'a> {
    let first = mem.tile.first();
    let rows = e.muli(warpgroup, e.index(wgmma::BM * ROW));
    let a = e.addi(mem.tile(e, first, s), rows);
    let b = mem.tile(e, 1 - first, s);
    TileDescriptors::at(e, shared.address(e, a), shared.address(e, b))
}

/// The descriptors of the instruction over the 32 bytes of each tile row from code `at` (a
/// multiple of 16; FP8: rounded down to 32), from its stage's: where `at` is the second 16
/// of 32 FP8 codes, the split operand's tile is its half 1 (its chunks at 16 of every 32),
/// so that the instruction sums only those; on the f16 route, 16 codes are the 32 bytes.
fn descriptors_at<'c, 'a>(
    e: &Emitter<'c, 'a>,
    mem: &Memory,
    stage: &TileDescriptors<'c, 'a>,
    at: i64,
) -> (Value<'c, 'a>, Value<'c, 'a>) {
    debug_assert!(
        at % 32 == 0 || (at % 16 == 0 && mem.routes.iter().any(|r| r.halves == 2 || r.f16))
    );
    let offset = |x: usize| {
        let route = mem.routes[x];
        let half = if at % 32 == 16 && route.halves == 2 {
            route.tile_bytes()
        } else {
            0
        };
        half + at * route.code_bytes() / 32 * 32
    };
    let first = mem.tile.first();
    stage.offset(e, [offset(first), offset(1 - first)])
}

/// The barrier pipeline's block (`lower`), its stage loop as the module header draws it.
/// `translate_ahead` (`translate-ahead=on`), where operands are translated: each thread translates
/// stage s + 1 (and decodes its scales) between stage s's commit and its wait, so that the
/// integer pipes work while the tensor cores do; the prologue translates the first stage.
/// What that reorders, and why it stays ordered:
/// - stage s + 1's copies are this thread's own, landed by its `cp.async.wait_group L-1`
///   after stage s + L's issue (L groups in flight: s + 1 .. s + L), as at the top of
///   stage s + 1 before;
/// - its translated tiles (slot (s + 1) % 2) were last read by stage s - 1's instructions,
///   which both warpgroups waited for before stage s's barrier; its decoded scales
///   ((s + 1) % 2) by stage s - 1's promotions, before the same barrier;
/// - folded, its rows' scales came with stage s's codes (the copying thread waited for
///   them before stage s's barrier, which published them);
/// - the writes reach the instructions through stage s + 1's proxy fence and barrier, as
///   before. Stage `last` is never translated (its copies were never issued).
#[allow(clippy::too_many_arguments)]
fn hardware_block<'c, 'a>(
    e: &Emitter<'c, 'a>,
    kn: &Kernel<'_, 'c, 'a>,
    mem: &Memory,
    instr: &Wgmma,
    maps: [Option<Value<'c, 'a>>; 2],
    translate_ahead: bool,
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
    let consumer = Consumer::new(e, kn, instr, l);
    let warpgroup = e.divui(tid, e.index(wgmma::THREADS));
    let shared = Shared::aligned(e, memory);
    let sides = sides(e, kn, mem, bm, bn);
    let globals = copy_bases(e, kn, mem);
    let k = kn.ops.k;
    let (first, last) = stage_range(e, k, mem.bk(), rank, mem.tile.splits);
    let (stages, first_thread) = (mem.stages, e.cmpi(CmpiPredicate::Eq, tid, e.index(0)));
    // TMA: a full mbarrier per slot, which thread 0 arms with the boxes' bytes before it
    // issues them (1 arrival); every thread waits on it before the stage's barrier.
    let full = |e: &Emitter<'c, 'a>, s: Value<'c, 'a>| {
        let slot = ring_rem(e, s, stages);
        let at = e.addi(e.index(mem.barriers), e.muli(slot, e.index(8)));
        e.pointer(shared.address(e, at), 3)
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
                    load_boxes(e, mem, shared, maps, &sides, full(e, s), [s, s], rank);
                });
            }
            copy_stage(e, kn, mem, shared, &sides, globals, k, tid, s);
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
    clear_halves(e, mem, shared, tid);
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
    let settles = mem.settles();
    // Translating stage s + 1 during stage s's instructions (`translate_ahead`) where
    // operands are translated.
    let early = translate_ahead && staged;
    // Wait for this thread's copies of stage `s` (`lead` groups in flight, the last of
    // them the one after `s`'s), translate them and decode the scales it copied, where
    // `s` is in the block's range (a barrier then publishes them).
    let prepare = |e: &Emitter<'c, 'a>, s: Value<'c, 'a>, fold: Folded<'c, 'a>| {
        e.bare(
            "nvvm.cp.async.wait.group",
            &[("n", &format!("{} : i32", lead - 1))],
        );
        if staged && !early {
            // The thread's own copies landed: it translates them (one stage an iteration:
            // `s` is in the range).
            translate_stage(e, mem, shared, &sides, k, tid, s, fold);
        }
        let scaled = mem.scales.iter().any(Option::is_some);
        // (Ahead, stage `last`'s slot holds no copies: its folded scales would index the
        // moved tables out of bounds.)
        if early || scaled {
            e.if_then(e.cmpi(CmpiPredicate::Ult, s, last), |e| {
                if early {
                    translate_stage(e, mem, shared, &sides, k, tid, s, fold);
                }
                if scaled {
                    decode_scales(e, kn, mem, shared, &sides, tid, s, fold);
                }
                // (Folded, the next stage's scale windows came with this stage's codes:
                // settled before the barrier that publishes them.)
                if settles {
                    let next = e.addi(s, one);
                    e.if_then(e.cmpi(CmpiPredicate::Ult, next, last), |e| {
                        settle_scales(e, kn, mem, shared, &sides, tid, next)
                    });
                }
            });
        }
    };
    let stage = |e: &Emitter<'c, 'a>,
                 s: Value<'c, 'a>,
                 acc: &[Value<'c, 'a>],
                 before,
                 fold: Folded<'c, 'a>| {
        if !early {
            prepare(e, s, fold);
        }
        if mem.tma {
            // The stage's boxes landed (the slot's use (s - first) / stages completed; a
            // stage past the range issued none).
            e.if_then(e.cmpi(CmpiPredicate::Ult, s, last), |e| {
                let use_ = ring_div(e, e.subi(s, first), stages);
                let phase = e.andi(e.index_castui(use_, e.int_type(32)), e.i32(1));
                wait_parity(e, full(e, s), phase);
            });
        }
        wgmma::fence_proxy_async(e);
        e.bare("gpu.barrier", &[]);
        let live = e.cmpi(CmpiPredicate::Ult, s, last);
        // The copies of stage s + L once the stage's first instructions run.
        stage_mmas(
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
            live,
            fold,
            |e| {
                issue(e, e.addi(s, e.index(lead)));
                if early {
                    prepare(e, e.addi(s, one), fold);
                }
            },
        )
    };
    // Stages per loop iteration (`per_iteration`; a stage past the block's range runs on
    // what its slot holds and is never promoted), each iteration ending with a drain.
    let per = per_iteration(mem);
    let iterations = ceil_div(e, e.subi(last, first), e.index(per));
    let run = |e: &Emitter<'c, 'a>, fold: Folded<'c, 'a>| {
        if early {
            prepare(e, first, fold);
        }
        let finish = |e: &Emitter<'c, 'a>, acc, pending| {
            drain(e, kn, mem, shared, instr, &consumer, acc, pending, fold)
        };
        let (acc, pending) = stage_runs(
            e,
            instr,
            first,
            iterations,
            per,
            overlaps(kn, mem),
            |e, s, acc, before| stage(e, s, acc, before, fold),
            finish,
        );
        finish(e, acc, pending)
    };
    // Folded scales where the block's scales allow (B anchored where its allow): a loop
    // each, each draining its instructions, so that no result in flight crosses the branch.
    let done = match mem.fold {
        Some(fold) => {
            let scan = fold_scan(e, kn, mem, &fold, shared, &sides, tid, first, last);
            let types = vec![e.f32_type(); instr.accumulators()];
            scan.branches(e, &types, run)
        }
        None => run(e, Folded::No),
    };
    e.bare("nvvm.cp.async.wait.group", &[("n", "0 : i32")]);
    gather_splits(
        e,
        kn,
        [mem.tile.threads(), mem.tile.splits],
        shared,
        &l,
        tid,
        rank,
        &done,
    );
}

/// A consumer lane: its place in C, and its scales that do not change along K, loaded
/// before the stage loop where the other operand's do (`Kernel::constant_scales`).
pub(super) struct Consumer<'c, 'a> {
    pub(super) lane: Lane<'c, 'a>,
    constant: Option<SegmentScales<'c, 'a>>,
}

impl<'c, 'a> Consumer<'c, 'a> {
    pub(super) fn new(
        e: &Emitter<'c, 'a>,
        kn: &Kernel<'_, 'c, 'a>,
        instr: &Wgmma,
        lane: Lane<'c, 'a>,
    ) -> Self {
        let constant = kn.constant_scales(e, &lane, instr.accumulators());
        Consumer { lane, constant }
    }
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
/// range (its segments inside K are promoted). `fold`: how the block scales are taken
/// (`Folded`; folded into the codes, the stage is one segment). `issued` runs once the
/// first segment's instructions are committed, before any wait (the barrier pipeline
/// issues the copies of a later stage there, while the tensor cores run). `slot`: the
/// stage's turn in the ring (`s` itself, but for a persistent block: `s` counted from its
/// first tile's first stage).
#[allow(clippy::too_many_arguments)]
fn stage_mmas<'c, 'a>(
    e: &Emitter<'c, 'a>,
    kn: &Kernel<'_, 'c, 'a>,
    mem: &Memory,
    instr: &Wgmma,
    shared: Shared<'c, 'a>,
    consumer: &Consumer<'c, 'a>,
    warpgroup: Value<'c, 'a>,
    s: Value<'c, 'a>,
    slot: Value<'c, 'a>,
    acc: &[Value<'c, 'a>],
    before: Option<Pending<'c, 'a>>,
    live: Value<'c, 'a>,
    fold: Folded<'c, 'a>,
    issued: impl Fn(&Emitter<'c, 'a>),
) -> (Vec<Value<'c, 'a>>, Option<Pending<'c, 'a>>) {
    // (Folded scales: the stage is one segment.)
    let (seg, per_seg) = if fold.folds() {
        (BK, BK / 32)
    } else {
        segment_shape(kn.plan)
    };
    let mut acc = acc.to_vec();
    let mut pending = before;
    let tiles = stage_descriptors(e, mem, shared, warpgroup, slot);
    for g in 0..mem.bk() / seg {
        let k0 = e.addi(e.muli(s, e.index(mem.bk())), e.index(g * seg));
        // The f16 route sums into the accumulators themselves (`promote_segment`): they are
        // pinned before the fence, so that no compiler moves what sets them (the zeros
        // before the first stage) past it (ptxas then inserts a `warpgroup.arrive` and,
        // warp-specialized, serializes the instructions: C7520).
        let into = kn.plan.in_codes;
        if into {
            acc = wgmma::pinned(e, &acc);
        }
        e.bare("nvvm.wgmma.fence.aligned", &[]);
        let mut d = wgmma::pack(e, instr, if into { &acc } else { &[] });
        for j in 0..per_seg {
            let (da, db) = descriptors_at(e, mem, &tiles, g * seg + instr.k() * j);
            d = wgmma::mma_async(e, instr, d, da, db, j > 0 || into);
        }
        e.bare("nvvm.wgmma.commit.group.sync.aligned", &[]);
        if g == 0 {
            issued(e);
        }
        let inside = e.andi(live, e.cmpi(CmpiPredicate::Ult, k0, kn.ops.k));
        if !overlaps(kn, mem) {
            // One register set: the segment is waited for and promoted at once.
            let segment = (d, k0, inside);
            acc = promote_segment(e, kn, mem, shared, instr, consumer, acc, segment, 0, fold);
            continue;
        }
        if let Some(before) = pending.replace((d, k0, inside)) {
            acc = promote_segment(e, kn, mem, shared, instr, consumer, acc, before, 1, fold);
        }
    }
    (acc, pending)
}

/// Whether a warpgroup's promotion of a segment runs while its next segment's instructions
/// do (two register sets of results, `wait_group 1`), or waits for it (`wait_group 0`, one
/// set). Two sets only where the promotion holds few other values: FP8 operands used as
/// stored and no scales along K (64 accumulators + 2 x 64 results took 236 registers of
/// the 255 there; with block scales (34 decoded values a segment) or translations, ptxas
/// spilled and serialized the instructions for want of registers), and 128 columns at most
/// (192: 96 accumulators + 2 x 96 results would not fit). With one set the two warpgroups
/// still overlap, each running its instructions while the other promotes.
fn overlaps(kn: &Kernel, mem: &Memory) -> bool {
    kn.plan.seg.is_none() && !mem.routes.iter().any(|r| r.staged) && mem.tile.n() <= 128
}

/// Stages per iteration of the stage loops (`stage_runs`): two (where a stage's last segment
/// runs while the next stage's first is issued, `overlaps`, the second drained), but one
/// where operands are translated: each segment is drained anyway there, and a second
/// stage's translations doubled what LLVM hoists out of the loop (ptxas 12.9, FP6 x FP6
/// MX at 8192^3: 28 bytes spilled in the barrier pipeline, 352 warp-specialized, against
/// 0 and 164 with one; MXFP8, not translated, spilled more with one: 16 bytes against 4).
/// Not four: the FP8 square block then spilled 896 bytes at 255 registers (two: 248, none).
fn per_iteration(mem: &Memory) -> i64 {
    if mem.routes.iter().any(|r| r.staged) {
        1
    } else {
        2
    }
}

/// Stages `first ..` in `iterations` loop iterations of `per` stages each, `stage` running
/// one (given the segment still running or still to promote; it returns its own last
/// segment, still running). No instruction is in flight across the loop's back edge:
/// ptxas cannot follow a `wgmma` group through it and serializes every `wgmma` of a kernel
/// whose promotions read results a group from the previous iteration may still write
/// (C7514). So each iteration ends with `wgmma.wait_group 0`; then, with `carry` (two
/// register sets, `overlaps`), its last segment goes through the back edge done but not
/// promoted, and the next iteration promotes it once its first segment's instructions are
/// issued: the tensor cores wait for the barrier and the issue only, not for the
/// promotion. Without, `finish` promotes it there (each segment was promoted at once
/// anyway). Within an iteration the running results alternate between the two sets. The
/// accumulators after the loop and, with `carry`, the last segment, to promote.
#[allow(clippy::too_many_arguments)]
fn stage_runs<'c, 'a>(
    e: &Emitter<'c, 'a>,
    instr: &Wgmma,
    first: Value<'c, 'a>,
    iterations: Value<'c, 'a>,
    per: i64,
    carry: bool,
    stage: impl Fn(
        &Emitter<'c, 'a>,
        Value<'c, 'a>,
        &[Value<'c, 'a>],
        Option<Pending<'c, 'a>>,
    ) -> (Vec<Value<'c, 'a>>, Option<Pending<'c, 'a>>),
    finish: impl Fn(&Emitter<'c, 'a>, Vec<Value<'c, 'a>>, Option<Pending<'c, 'a>>) -> Vec<Value<'c, 'a>>,
) -> (Vec<Value<'c, 'a>>, Option<Pending<'c, 'a>>) {
    let count = instr.accumulators();
    let mut inits = vec![e.f32(0.0); count];
    if carry {
        // Nothing to promote before the first stage.
        inits.extend([wgmma::pack(e, instr, &[]), e.index(0), e.int(1, 0)]);
    }
    let out = e.for_loop(
        e.index(0),
        iterations,
        e.index(1),
        &inits,
        |e, i, carried| {
            let s = e.addi(first, e.muli(i, e.index(per)));
            let before = carry.then(|| (carried[count], carried[count + 1], carried[count + 2]));
            let (acc, pending) = stage_run(e, s, per, &carried[..count], before, &stage);
            if !carry {
                return finish(e, acc, pending);
            }
            let (d, k0, inside) = pending.expect("a stage leaves its last segment running");
            let mut out = acc;
            out.extend([wgmma::wait(e, instr, 0, d), k0, inside]);
            out
        },
    );
    let pending = carry.then(|| (out[count], out[count + 1], out[count + 2]));
    (out[..count].to_vec(), pending)
}

/// `count` stages from `s` in order, each given the segment the one before left running
/// (the first `before`): the accumulators and the last stage's running segment.
fn stage_run<'c, 'a>(
    e: &Emitter<'c, 'a>,
    s: Value<'c, 'a>,
    count: i64,
    acc: &[Value<'c, 'a>],
    before: Option<Pending<'c, 'a>>,
    stage: &impl Fn(
        &Emitter<'c, 'a>,
        Value<'c, 'a>,
        &[Value<'c, 'a>],
        Option<Pending<'c, 'a>>,
    ) -> (Vec<Value<'c, 'a>>, Option<Pending<'c, 'a>>),
) -> (Vec<Value<'c, 'a>>, Option<Pending<'c, 'a>>) {
    let mut acc = acc.to_vec();
    let mut pending = before;
    for u in 0..count {
        (acc, pending) = stage(e, e.addi(s, e.index(u)), &acc, pending);
    }
    (acc, pending)
}

/// The `k_stages` stages of a static K from stage 0, warp-specialized (no stage past the
/// block's range): `stage_runs`' loop of `per_iteration` stages an iteration, the stages
/// left over after it, then `finish` (the drain). The accumulators.
#[allow(clippy::too_many_arguments)]
fn static_stages<'c, 'a>(
    e: &Emitter<'c, 'a>,
    kn: &Kernel<'_, 'c, 'a>,
    mem: &Memory,
    instr: &Wgmma,
    k_stages: i64,
    stage: impl Fn(
        &Emitter<'c, 'a>,
        Value<'c, 'a>,
        &[Value<'c, 'a>],
        Option<Pending<'c, 'a>>,
    ) -> (Vec<Value<'c, 'a>>, Option<Pending<'c, 'a>>),
    finish: impl Fn(&Emitter<'c, 'a>, Vec<Value<'c, 'a>>, Option<Pending<'c, 'a>>) -> Vec<Value<'c, 'a>>,
) -> Vec<Value<'c, 'a>> {
    let per = per_iteration(mem);
    let whole = k_stages / per;
    let carry = overlaps(kn, mem);
    let (acc, pending) = stage_runs(
        e,
        instr,
        e.index(0),
        e.index(whole),
        per,
        carry,
        &stage,
        &finish,
    );
    match k_stages % per {
        0 => finish(e, acc, pending),
        left => {
            let s = e.index(whole * per);
            let (acc, pending) = stage_run(e, s, left, &acc, pending, &stage);
            finish(e, acc, pending)
        }
    }
}

/// Wait for a segment (`wgmma.wait_group left`: all but the last `left` commit groups
/// done) and add its partial sums into `acc` with its scales, where it is to be promoted;
/// on the f16 route (`Plan::in_codes`: no scale left to apply, and the f16 instructions'
/// f32 sums are not FP8's reduced-precision ones) its instructions summed into `acc`
/// already, which the result then is
/// (past K its tiles are zero-filled, so it added nothing; past the block's range it ran
/// on stale tiles). Its block scales are loaded before the wait (in bounds either way), so
/// that their latency passes while the tensor cores still run; each value once (B
/// anchored: its one value for every column, so that its products with A's rows are 2,
/// not 64).
#[allow(clippy::too_many_arguments)]
fn promote_segment<'c, 'a>(
    e: &Emitter<'c, 'a>,
    kn: &Kernel<'_, 'c, 'a>,
    mem: &Memory,
    shared: Shared<'c, 'a>,
    instr: &Wgmma,
    consumer: &Consumer<'c, 'a>,
    acc: Vec<Value<'c, 'a>>,
    (d, k0, promote): Pending<'c, 'a>,
    left: i64,
    fold: Folded<'c, 'a>,
) -> Vec<Value<'c, 'a>> {
    let staged = staged_readers(kn, mem, shared, k0, fold);
    let count = instr.accumulators();
    let scales = kn.segment_scales(
        e,
        &consumer.lane,
        k0,
        count,
        &staged,
        consumer.constant.as_ref(),
    );
    // (Constants stay constants: B anchored reads 1, which the products then drop.)
    let mut distinct: Vec<Value> = vec![];
    for &v in scales.loaded() {
        if !distinct.contains(&v) && !is_constant(v) {
            distinct.push(v);
        }
    }
    let pinned = wgmma::pinned(e, &distinct);
    let loaded = (scales.loaded().iter())
        .map(|&v| match distinct.iter().position(|&d| d == v) {
            Some(i) => pinned[i],
            None => v,
        })
        .collect();
    let scales = scales.replaced(loaded);
    let d = wgmma::wait(e, instr, left, d);
    if kn.plan.in_codes {
        // (Every stage the f16 route runs is in its block's range, one a loop iteration
        // (its operands are translated), and inside K (whole stages): its sums are taken
        // as they are, with no branch, which ptxas would meet with a
        // `warpgroup.arrive` of its own and serialized instructions, C7520.)
        return wgmma::unpack(e, instr, d);
    }
    let acc = e.if_else(
        promote,
        &vec![e.f32_type(); instr.accumulators()],
        |e| kn.promote_loaded(e, &acc, &wgmma::unpack(e, instr, d), &scales),
        |_| acc.clone(),
    );
    // Done here, before the next instructions: LLVM sank the promotions of a stage's
    // segments below the stage (they are pure), which kept every segment's results and
    // scales live at once (ptxas: 255 registers and spills for FP6 with MX scales).
    wgmma::pinned(e, &acc)
}

/// Whether `v` is an `arith.constant`'s result.
fn is_constant(v: Value) -> bool {
    OperationResult::try_from(v)
        .is_ok_and(|r| r.owner().name().as_string_ref().as_str() == Ok("arith.constant"))
}

/// Wait for every issued instruction (`wgmma.wait_group 0`) and promote the pending segment,
/// where one is (with one register set each segment was promoted at once).
#[allow(clippy::too_many_arguments)]
fn drain<'c, 'a>(
    e: &Emitter<'c, 'a>,
    kn: &Kernel<'_, 'c, 'a>,
    mem: &Memory,
    shared: Shared<'c, 'a>,
    instr: &Wgmma,
    consumer: &Consumer<'c, 'a>,
    acc: Vec<Value<'c, 'a>>,
    pending: Option<Pending<'c, 'a>>,
    fold: Folded<'c, 'a>,
) -> Vec<Value<'c, 'a>> {
    match pending {
        Some(pending) => {
            promote_segment(e, kn, mem, shared, instr, consumer, acc, pending, 0, fold)
        }
        None => acc,
    }
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
