//! Shared memory, square blocks within sm_90a's 227 KiB (barrier pipeline): FP8 x FP8 5
//! stages of 32 KiB; MXFP4 x MXFP4 (packed) 5 of 16 KiB + 3 x 32 KiB of translated tiles +
//! staged scales; FP6 x FP6 3 of 32 KiB + 3 x 32 KiB translated + staged scales (its third
//! stage is what stages the scales, which its fold needs); NVFP4 x NVFP4 3 of 16 KiB + 3 x 48
//! KiB translated (A's tiles split) + staged scales; on the f16 route (stages of 64 codes)
//! 5 of 8 KiB + 2 KiB of chunk scale words + 3 x 32 KiB of f16 tiles (E4M3 x NVFP4: 5 of
//! 12 KiB + 1 KiB). Skinny with 16 rows of A: 8 x 10 KiB for FP8, 8 x 5 KiB + 2 x 10 KiB
//! for MXFP4. Plus 1 KiB of alignment.

use lowp_formats::{ScaleDtype, ScaleLayout};
use melior::dialect::arith::CmpiPredicate;
use melior::ir::operation::OperationBuilder;
use melior::ir::{Attribute, Identifier, Type, Value};

use super::fold::Fold;
use super::store::StoreC;
use super::{
    ceil, Feed, Side, Tile, ATOM, BK, PARITIES, PRODUCERS, ROW, SKINNY_STAGES, SPECIALIZED_STAGES,
    STAGES,
};
use crate::chip::Chip;
use crate::code_words::Permute;
use crate::ir::Emitter;
use crate::matrix_kernel::{Kernel, Operand, Plan};
use crate::to_nvvm::wgmma;

/// How one operand reaches the instruction's tile.
#[derive(Clone, Copy)]
pub(super) struct Route {
    /// Rows per block (a multiple of 16: tiles stay on 1024-byte boundaries).
    pub(super) rows: i64,
    /// Two codes per stored byte.
    pub(super) packed: bool,
    /// Translated between the copy and the instruction (staged: to FP8, or on the f16 route
    /// to f16, FP8 as stored widened), or copied as the instruction reads it (direct).
    pub(super) staged: bool,
    /// FP8 tiles a stage's translation fills: 1, or 2 where the scales change every 16
    /// codes (`split_operand`): half h holds the 16-code chunks at h of every 32 and zeros
    /// in the others, so that an instruction of K 32 on it sums one 16-block.
    pub(super) halves: i64,
    /// The f16 route (`Plan::f16`): the translation writes each code as f16, 64 codes a
    /// stage (a tile row stays 128 bytes); every operand is staged (FP8 as stored widened).
    pub(super) f16: bool,
    /// On the f16 route, an operand of 16-blocks (translated through its table): its codes
    /// are multiplied by their block's scale, and each copied chunk brings its row's scale
    /// word of the stage (`chunk_scales`).
    pub(super) block_scaled: bool,
}

impl Route {
    pub(super) fn of(o: &Operand, rows: i64, split: bool, f16: bool) -> Self {
        Route {
            rows,
            packed: o.packed,
            staged: o.table.is_some() || f16,
            halves: if split { 2 } else { 1 },
            f16,
            block_scaled: f16 && o.table.is_some(),
        }
    }

    /// Codes of a row per stage: as many as fill a 128-byte tile row.
    pub(super) fn stage_codes(self) -> i64 {
        ROW / self.code_bytes()
    }

    /// Bytes of a code in the instruction's tile: 1 (FP8) or 2 (f16).
    pub(super) fn code_bytes(self) -> i64 {
        if self.f16 {
            2
        } else {
            1
        }
    }

    /// Bytes of a stage's row as stored.
    pub(super) fn row_bytes(self) -> i64 {
        if self.packed {
            self.stage_codes() / 2
        } else {
            self.stage_codes()
        }
    }

    /// Bytes of a stage as stored.
    pub(super) fn raw_bytes(self) -> i64 {
        self.rows * self.row_bytes()
    }

    /// Bytes of a stage's copies in its slot: the codes as stored and, block-scaled on the
    /// f16 route, a scale word per chunk (`chunk_scales`).
    pub(super) fn slot_bytes(self) -> i64 {
        self.raw_bytes()
            + if self.block_scaled {
                4 * self.total()
            } else {
                0
            }
    }

    /// Bytes of its tile of a stage (of each half, when split): 128 a row.
    pub(super) fn tile_bytes(self) -> i64 {
        self.rows * ROW
    }

    /// Bytes of the tiles a stage's translation fills (both halves).
    pub(super) fn translated_bytes(self) -> i64 {
        self.halves * self.tile_bytes()
    }

    /// 16-byte chunks of a stage.
    pub(super) fn total(self) -> i64 {
        self.raw_bytes() / 16
    }

    /// 16-byte chunks each of `copiers` threads copies per stage (at most: the last round
    /// may leave some threads out).
    pub(super) fn chunks(self, copiers: i64) -> i64 {
        ceil(self.total(), copiers)
    }

    /// Codes per 16-byte chunk.
    pub(super) fn codes(self) -> i64 {
        if self.packed {
            32
        } else {
            16
        }
    }
}

/// The operand whose translated tiles are split in halves (`Route::halves`), where the
/// scales change every 16 codes along K (NVFP4's blocks): the first translated one (a
/// direct operand's tile is the copy itself). `None` where the scales allow segments of
/// whole instructions, where no operand is translated, or on the f16 route (the scales are
/// in the codes, `Plan::in_codes`, or each 16-block an instruction of its own).
pub(super) fn split_operand(plan: &Plan) -> Option<usize> {
    if plan.step != 16 || plan.f16 {
        return None;
    }
    [&plan.a, &plan.b].iter().position(|o| o.table.is_some())
}

/// Zero the halves of the split operand's translated tiles that its translation never
/// writes (in half h, the 16-code chunks of every 32 not at h), all of them (every parity
/// or slot) once before the first stage; thread `tid` of the copiers takes every
/// `copiers`-th 16-byte chunk. The stage's fence and barrier (or full mbarrier) that
/// publish its translation publish these too.
pub(super) fn clear_halves<'c, 'a>(
    e: &Emitter<'c, 'a>,
    mem: &Memory,
    shared: Shared<'c, 'a>,
    tid: Value<'c, 'a>,
) {
    let Some(x) = (0..2).find(|&x| mem.routes[x].halves == 2) else {
        return;
    };
    let route = mem.routes[x];
    let tiles = if mem.specialized {
        mem.stages
    } else {
        PARITIES
    };
    // Per tile and half, each row's 4 chunks of the other half.
    let per_half = route.rows * BK / 32;
    let total = tiles * 2 * per_half;
    let zeros = [e.i32(0); 4];
    e.for_loop(tid, e.index(total), e.index(mem.copiers), &[], |e, u, _| {
        let (half, within) = (e.divui(u, e.index(per_half)), e.remui(u, e.index(per_half)));
        let (t, h) = (e.divui(half, e.index(2)), e.remui(half, e.index(2)));
        let r = e.divui(within, e.index(BK / 32));
        let other = e.subi(e.index(1), h);
        let ch = e.addi(e.muli(e.remui(within, e.index(BK / 32)), e.index(2)), other);
        let at = e.addi(mem.tile(e, x, t), e.muli(h, e.index(route.tile_bytes())));
        shared.store4(e, e.addi(at, swizzled(e, r, ch)), &zeros);
        vec![]
    });
}

/// The fewest stages a ring of these routes needs: warp-specialized 2 (the producer one
/// ahead of the slot read); the barrier pipeline reads two slots and copies two ahead, or
/// one where its stages are long enough for copies issued one stage ahead: an operand split
/// (an instruction and a promotion per 16-block), or both operands translated from a byte a
/// code (FP6: the translation alone is several times the stage's tensor time).
fn fewest_stages(routes: &[Route; 2], specialized: bool) -> i64 {
    let long = routes.iter().any(|r| r.halves == 2) || routes.iter().all(|r| r.staged && !r.packed);
    match (specialized, long) {
        (true, _) => 2,
        (false, true) => 3,
        (false, false) => 4,
    }
}

/// The dynamic shared memory: a ring of `stages` slots, each holding both operands' stage as
/// stored (direct operands: the FP8 tile in the 128-byte swizzle; staged ones: rows as
/// stored). The translated FP8 tiles of staged operands follow the ring, two per operand
/// (by stage % 2; each two halves where the operand is split), or, warp-specialized (the producer runs up to a ring ahead), sit in each
/// slot; then the specialized kernel's mbarriers (a full and an empty one per slot). Every
/// tile starts on a multiple of 1024 bytes from the base.
#[derive(Clone, Copy)]
pub(super) struct Memory {
    pub(super) tile: Tile,
    pub(super) routes: [Route; 2],
    /// A producer warpgroup copies, two consumer warpgroups compute.
    pub(super) specialized: bool,
    /// Direct operands come by TMA (`cp.async.bulk.tensor`, one thread per stage), staged
    /// ones by the producer warpgroup's `cp.async`.
    pub(super) tma: bool,
    /// Threads that copy (and translate) the stages.
    pub(super) copiers: i64,
    pub(super) stages: i64,
    /// Bytes of a slot, and each operand's offset in it.
    pub(super) slot: i64,
    pub(super) in_slot: [i64; 2],
    /// Each staged operand's translated tile: after the ring (parity pairs) or in the slot.
    pub(super) translated: [Option<i64>; 2],
    /// The mbarriers: specialized, `stages` full ones, then `stages` empty ones; the barrier
    /// pipeline with TMA, `stages` full ones (8 bytes each).
    pub(super) barriers: i64,
    pub(super) bytes: i64,
    /// Each operand's block scales staged through shared memory (`ScaleStage`), where they
    /// are.
    pub(super) scales: [Option<ScaleStage>; 2],
    /// The block scales folded into the translated codes, where they may be (`Fold`).
    pub(super) fold: Option<Fold>,
    /// The epilogue's staging area for TMA stores of C (`store-c=tma`), where it applies.
    pub(super) store_c: Option<StoreC>,
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
pub(super) struct ScaleStage {
    /// K per scale (the operand's block along K).
    pub(super) span: i64,
    /// Bytes per scale as stored (1, or 4 for f32).
    pub(super) size: i64,
    /// Each row's stage bytes copied with the 4-byte words around them (`ScaleBlocks`).
    pub(super) window: bool,
    /// Stage s's bytes of block row r: in a ring of `stages` entries of `entry` bytes at
    /// `ring` (after the translated tiles), `in_entry + r * per_row` into entry s % stages.
    pub(super) ring: i64,
    pub(super) entry: i64,
    pub(super) in_entry: i64,
    /// The decoded values of stage s: f32 [scale of the stage][row] at `decoded + (s %
    /// decoded_ring) * decoded_stride` (the barrier pipeline: a ring of 2 after the
    /// translated tiles; warp-specialized: in each slot).
    pub(super) decoded: i64,
    pub(super) decoded_ring: i64,
    pub(super) decoded_stride: i64,
}

impl ScaleStage {
    /// Where stage `s`'s copy of block row `r` is (`stages` in the ring).
    pub(super) fn copied<'c, 'a>(
        self,
        e: &Emitter<'c, 'a>,
        stages: i64,
        s: Value<'c, 'a>,
        r: Value<'c, 'a>,
    ) -> Value<'c, 'a> {
        let entry = e.muli(ring_rem(e, s, stages), e.index(self.entry));
        let at = e.addi(e.index(self.ring + self.in_entry), entry);
        e.addi(at, e.muli(r, e.index(self.row_bytes())))
    }

    /// Scales per row and stage.
    pub(super) fn count(self) -> i64 {
        BK / self.span
    }

    /// Bytes per row and stage as stored (4, 8 or 16: one `cp.async`).
    pub(super) fn per_row(self) -> i64 {
        self.count() * self.size
    }

    /// Bytes per row and stage in the copy ring: `per_row`, and with a window the word
    /// after (the bytes start `(address & 3)` into the first word).
    pub(super) fn row_bytes(self) -> i64 {
        let (span, size, window) = (self.span, self.size, self.window);
        ScaleBlocks { span, size, window }.row_bytes()
    }
}

/// An operand's scale blocks along K, where a pipeline may stage them (`ScaleStage`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct ScaleBlocks {
    /// K per scale.
    pub(super) span: i64,
    /// Bytes per scale as stored.
    pub(super) size: i64,
    /// Where K is not whole stages, a row's stage bytes need not be aligned (MX: K / 32
    /// bytes a row) and the last stage's run past the row: they are copied as the 4-byte
    /// words that hold them (one more than `per_row / 4`; words past the scales copy 0
    /// bytes) and put in place when decoded. A last stage's scales past K are never used
    /// (its segments there are not promoted).
    pub(super) window: bool,
}

impl ScaleBlocks {
    /// Bytes per row and stage as copied: the stage's, and with a window the word after.
    pub(super) fn row_bytes(self) -> i64 {
        BK / self.span * self.size + if self.window { 4 } else { 0 }
    }
}

/// The scale blocks along K of the operands whose scales a pipeline may stage
/// (`ScaleStage`): where the scales change along K in blocks that tile the stage and a
/// stage's scales of a row are 4, 8 or 16 bytes. Where K (static) is whole stages, each
/// row's stage is one aligned copy inside the scales; else a window of words
/// (`ScaleBlocks::window`) for byte codes (E8M0, UE4M3: each promotion would load and
/// decode 34 of them).
pub(super) fn staged_scale_blocks(kn: &Kernel, k: Option<i64>) -> [Option<ScaleBlocks>; 2] {
    // (The f16 route's chunks bring their rows' scales themselves where they are in the
    // codes, `Memory::chunk_scales`; its promotions load them: its stages are 64 codes.)
    let along_k = kn.plan.seg.is_some() && !kn.plan.scaled && !kn.plan.f16;
    let Some(k) = k.filter(|_| along_k) else {
        return [None, None];
    };
    [&kn.ops.sa, &kn.ops.sb].map(|s| ScaleBlocks::of(s.layout, k))
}

impl ScaleBlocks {
    /// The blocks of `layout` (its scales as stored, `ScaleLayout::scale_dtype`) along a
    /// static K, where a stage may copy them: blocks that tile the stage, a row's stage
    /// bytes 4, 8 or 16.
    pub(super) fn of(layout: ScaleLayout, k: i64) -> Option<Self> {
        let span = match layout {
            ScaleLayout::Mx { block } | ScaleLayout::Nvfp4 { block, .. } => block as i64,
            ScaleLayout::Blockwise { cols, .. } => cols as i64,
            _ => return None,
        };
        let size = match layout.scale_dtype() {
            ScaleDtype::F32 => 4,
            ScaleDtype::UE8M0 | ScaleDtype::UE4M3 => 1,
            _ => return None,
        };
        let per_row = BK / span.max(1) * size;
        let window = k % BK != 0;
        // (f32 scales, which a promotion takes as loaded, stay in global memory there: a
        // window of 2-D blocks spilled, 244 bytes for 1 x 64 x 128 x 128 at K = 672,
        // none as loaded.)
        (span <= BK && BK % span == 0 && matches!(per_row, 4 | 8 | 16) && !(window && size == 4))
            .then_some(ScaleBlocks { span, size, window })
    }
}

impl Memory {
    /// Whether copied scale windows are settled (`settle_scales`): where the scales are
    /// folded and some staged scales are windows.
    pub(super) fn settles(&self) -> bool {
        self.fold.is_some() && self.scales.iter().flatten().any(|st| st.window)
    }

    /// The layout for `plan` in `tile`, fed by `feed`, within the chip's shared memory per
    /// block (sm_90a: 227 KiB).
    /// `scale_blocks`: the operands whose scales may be staged (`staged_scale_blocks`); they
    /// are where threads copy the stages and the room for them costs no stage (the barrier
    /// pipeline: keeps at least 4).
    /// `most`: the most stages of the ring (`stages=N`), else the block's (square 5,
    /// warp-specialized 4, skinny 8); fewer where they do not fit.
    pub(super) fn new(
        plan: &Plan,
        chip: &Chip,
        tile: Tile,
        feed: Feed,
        scale_blocks: [Option<ScaleBlocks>; 2],
        most: Option<i64>,
    ) -> Self {
        // TMA feeds the square block's producer warpgroup, or the skinny block's barrier
        // pipeline (one warpgroup: no room for a producer).
        let specialized = feed == Feed::Specialized || (feed == Feed::Tma && !tile.swapped);
        let tma = feed == Feed::Tma;
        let limit = chip.shared_kib as i64 * 1024;
        let split = split_operand(plan);
        let routes = [
            Route::of(&plan.a, tile.rows[0], split == Some(0), plan.f16),
            Route::of(&plan.b, tile.rows[1], split == Some(1), plan.f16),
        ];
        let raw = routes[0].slot_bytes() + routes[1].slot_bytes();
        let staged: i64 = routes
            .iter()
            .filter(|r| r.staged)
            .map(|r| r.translated_bytes())
            .sum();
        let in_slot = [0, routes[0].slot_bytes()];
        // Operand x's staged scales of a stage (K per scale, bytes per scale): as copied,
        // and decoded (f32).
        let copied_bytes = |x: usize, b: ScaleBlocks| tile.rows[x] * b.row_bytes();
        let decoded_bytes = |x: usize, span: i64| tile.rows[x] * BK / span * 4;
        if specialized {
            let most = most.unwrap_or(if tile.swapped {
                SKINNY_STAGES
            } else {
                SPECIALIZED_STAGES
            });
            // Staged scales (copied by the producer warpgroup, also where TMA loads both
            // operands): in each slot after the translated tiles, the rows' stage bytes as
            // copied, then their decoded values; the slot rounded up to whole 1024-byte
            // atoms (the next slot's tiles); not where that costs a stage, unless an operand
            // is split and 3 stages are left (a promotion per 16-block, which would
            // otherwise load and decode 34 scales from global memory: E4M3 x NVFP4 at
            // 8192^3, 2776 instructions a consumer stage and 508 bytes spilled).
            let fit = |blocks: [Option<ScaleBlocks>; 2]| {
                let extra: i64 = (0..2)
                    .filter_map(|x| {
                        blocks[x].map(|b| copied_bytes(x, b) + decoded_bytes(x, b.span))
                    })
                    .sum();
                let slot = (raw + staged + extra + ATOM - 1) / ATOM * ATOM;
                (most.min((limit - 1024 - 2 * most * 8) / slot), slot, blocks)
            };
            let (stages, slot, blocks) = match (fit(scale_blocks), fit([None, None])) {
                (with, without) if with.0 < without.0 && !(split.is_some() && with.0 >= 3) => {
                    without
                }
                (with, _) => with,
            };
            let mut next = raw;
            let translated = routes.map(|r| {
                r.staged.then(|| {
                    next += r.translated_bytes();
                    next - r.translated_bytes()
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
                blocks[x].map(|ScaleBlocks { span, size, window }| {
                    next += decoded_bytes(x, span);
                    ScaleStage {
                        span,
                        size,
                        window,
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
                store_c: None,
            };
        }
        // (The skinny block, memory-bound, keeps as many bytes in flight with the f16
        // route's stages of 64 codes: twice the stages.)
        let most = most.unwrap_or(if tile.swapped {
            SKINNY_STAGES * BK / routes[0].stage_codes()
        } else {
            STAGES
        });
        // With TMA, a full mbarrier per slot after the translated tiles.
        let full = if tma { 8 } else { 0 };
        // Staged scales: a ring of the stages' copies (an entry per slot: A's rows, then
        // B's; with TMA too, every thread still commits a copy group per stage) and the
        // ring of 2 of decoded values, after the translated tiles; not where that leaves
        // fewer than 4 stages, or 3 where the stages are long enough for copies issued one
        // stage ahead and the scales save more than a stage of lead: an operand split (an
        // instruction and a promotion per 16-block, each promotion decoding 34 scales
        // otherwise; NVFP4 x NVFP4: 3 stages with the scales, 5 without), or both operands
        // translated from a byte a code (FP6 x FP6: its translation alone is several times
        // the stage's tensor time; with the scales staged its E8M0 blocks can fold, one
        // promotion a stage instead of four that each decode 34 scales).
        let fit = |blocks: [Option<ScaleBlocks>; 2]| {
            let mut entry = 0;
            let in_entry = [0, 1].map(|x| {
                blocks[x].map(|b| {
                    entry += copied_bytes(x, b);
                    entry - copied_bytes(x, b)
                })
            });
            let decoded: i64 = (0..2)
                .filter_map(|x| blocks[x].map(|b| PARITIES * decoded_bytes(x, b.span)))
                .sum();
            let stages = most
                .min((limit - 1024 - PARITIES * staged - decoded - most * full) / (raw + entry));
            (stages, entry, in_entry, blocks)
        };
        let least = fewest_stages(&routes, false);
        let (stages, entry, in_entry, blocks) = match fit(scale_blocks) {
            (stages, ..) if stages < least => fit([None, None]),
            fitted => fitted,
        };
        let mut next = stages * raw;
        let translated = routes.map(|r| {
            r.staged.then(|| {
                next += PARITIES * r.translated_bytes();
                next - PARITIES * r.translated_bytes()
            })
        });
        let ring = next;
        next += stages * entry;
        let scales = [0, 1].map(|x| {
            blocks[x].map(|ScaleBlocks { span, size, window }| {
                next += PARITIES * decoded_bytes(x, span);
                ScaleStage {
                    span,
                    size,
                    window,
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
            store_c: None,
        }
    }

    /// Codes of K per stage: 128, or 64 on the f16 route (`Route::f16`; both operands take
    /// it or neither).
    pub(super) fn bk(&self) -> i64 {
        self.routes[0].stage_codes()
    }

    /// Whether the ring has the stages its loop needs (`fewest_stages`).
    pub(super) fn fits(&self) -> bool {
        self.stages >= self.fewest()
    }

    /// The fewest stages this ring's loop needs (`fewest_stages`).
    pub(super) fn fewest(&self) -> i64 {
        fewest_stages(&self.routes, self.specialized)
    }

    /// What the kernel asks for: the memory (at least what split-K's gathering takes, a
    /// word per accumulator and thread) and the slack that aligns its base to 1024.
    pub(super) fn dynamic_bytes(&self) -> i64 {
        let gathered = if self.tile.splits > 1 {
            self.tile.threads() * self.tile.n() / 2 * 4
        } else {
            0
        };
        self.bytes.max(gathered) + 1024
    }

    /// The first byte of stage `s`'s slot.
    pub(super) fn slot_of<'c, 'a>(&self, e: &Emitter<'c, 'a>, s: Value<'c, 'a>) -> Value<'c, 'a> {
        e.muli(ring_rem(e, s, self.stages), e.index(self.slot))
    }

    /// Byte offset (from the base) of operand `x`'s stage `s` as copied.
    pub(super) fn copied<'c, 'a>(
        &self,
        e: &Emitter<'c, 'a>,
        x: usize,
        s: Value<'c, 'a>,
    ) -> Value<'c, 'a> {
        e.addi(self.slot_of(e, s), e.index(self.in_slot[x]))
    }

    /// Byte offset of the scale word that the f16 route's chunk at `slot_offset` (its place
    /// among operand `x`'s stage copies, `Chunk::slot_offset`) brings at stage `s`: the
    /// word of its row's block scales of the stage, one a chunk after the codes, so that the
    /// thread that copied the chunk translates it from its own copies alone.
    pub(super) fn chunk_scales<'c, 'a>(
        &self,
        e: &Emitter<'c, 'a>,
        x: usize,
        s: Value<'c, 'a>,
        slot_offset: Value<'c, 'a>,
    ) -> Value<'c, 'a> {
        let words = e.index(self.routes[x].raw_bytes());
        let at = e.addi(self.copied(e, x, s), words);
        e.addi(at, e.divui(slot_offset, e.index(4)))
    }

    /// Byte offset of the FP8 tile the instruction reads for operand `x` at stage `s` (half
    /// 0 of a split one; half 1 follows it).
    pub(super) fn tile<'c, 'a>(
        &self,
        e: &Emitter<'c, 'a>,
        x: usize,
        s: Value<'c, 'a>,
    ) -> Value<'c, 'a> {
        match self.translated[x] {
            Some(at) if self.specialized => e.addi(self.slot_of(e, s), e.index(at)),
            Some(at) => e.addi(
                e.index(at),
                e.muli(
                    ring_rem(e, s, PARITIES),
                    e.index(self.routes[x].translated_bytes()),
                ),
            ),
            None => self.copied(e, x, s),
        }
    }
}

/// Stage `s`'s place in a ring of `n` (`s % n`, an index), computed in 32 bits: a 64-bit
/// remainder by 3 or 5 is a 64-bit multiply-high and its corrections (ptxas 12.9: about ten
/// instructions each, twice a stage in the skinny decode loop), one by a power of two
/// an `and` either way. The pipeline's K is static, and static dimensions stay below 2^31
/// bytes (`check_gpu_op`): below 2^25 stages of 128 codes, a ring ahead included.
pub(super) fn ring_rem<'c, 'a>(e: &Emitter<'c, 'a>, s: Value<'c, 'a>, n: i64) -> Value<'c, 'a> {
    let i32t = e.int_type(32);
    let r = e.remui(e.index_castui(s, i32t), e.i32(n as u32));
    e.index_castui(r, e.index_type())
}

/// Stage `s`'s turn round a ring of `n` (`s / n`, an index), in 32 bits (`ring_rem`).
pub(super) fn ring_div<'c, 'a>(e: &Emitter<'c, 'a>, s: Value<'c, 'a>, n: i64) -> Value<'c, 'a> {
    let i32t = e.int_type(32);
    let q = e.divui(e.index_castui(s, i32t), e.i32(n as u32));
    e.index_castui(q, e.index_type())
}

/// Byte offset of row `r`'s 16-byte chunk `ch` in an FP8 tile in the 128-byte swizzle.
pub(super) fn swizzled<'c, 'a>(
    e: &Emitter<'c, 'a>,
    r: Value<'c, 'a>,
    ch: Value<'c, 'a>,
) -> Value<'c, 'a> {
    let (c8, c16) = (e.index(8), e.index(16));
    e.addi(
        e.muli(r, e.index(128)),
        e.muli(e.xori(ch, e.remui(r, c8)), c16),
    )
}

/// Thread `tid`'s chunk `i` of an operand's stage at K `k0`: whether it holds codes (row
/// inside the operand, chunk inside K), its tile row and chunk, the byte of the operand it
/// is copied from (`source` + `lead[0]`: its row · bytes per row + its first byte, both
/// clamped inside the operand, a valid source either way) and where it is copied to
/// (`offset` + `lead[1]`, from the operand's place in the slot). `lead`: the constant
/// part, to be added to the pointers (`Emitter::offset_pointer`).
pub(super) struct Chunk<'c, 'a> {
    pub(super) inside: Value<'c, 'a>,
    pub(super) r: Value<'c, 'a>,
    pub(super) ch: Value<'c, 'a>,
    pub(super) source: Value<'c, 'a>,
    pub(super) offset: Value<'c, 'a>,
    pub(super) lead: [i64; 2],
}

impl<'c, 'a> Chunk<'c, 'a> {
    /// The byte of the operand the chunk is copied from.
    pub(super) fn source_byte(&self, e: &Emitter<'c, 'a>) -> Value<'c, 'a> {
        e.addi(self.source, e.index(self.lead[0]))
    }

    /// Where the chunk is copied to, from the operand's place in the slot.
    pub(super) fn slot_offset(&self, e: &Emitter<'c, 'a>) -> Value<'c, 'a> {
        e.addi(self.offset, e.index(self.lead[1]))
    }
}

#[allow(clippy::too_many_arguments)]
pub(super) fn chunk<'c, 'a>(
    e: &Emitter<'c, 'a>,
    route: Route,
    copiers: i64,
    tid: Value<'c, 'a>,
    i: i64,
    side: &Side<'c, 'a>,
    k: Value<'c, 'a>,
    k0: Value<'c, 'a>,
) -> Chunk<'c, 'a> {
    let chunks = route.row_bytes() / 16;
    let per_row = e.index(chunks);
    let codes = e.index(route.codes());
    // Where the copiers are whole rows of chunks, the thread's chunks are one column of
    // them, `copiers / chunks` rows apart: said so, as the first chunk's place plus a
    // constant `lead` (in the slot; in the operand too where its rows are whole tiles, no
    // row being clamped), LLVM keeps one address of each a stage and immediate offsets
    // instead of one address per chunk held through the loop.
    let (first, ch, lead) = if copiers % chunks == 0 {
        (
            e.divui(tid, per_row),
            e.remui(tid, per_row),
            copiers / chunks * i,
        )
    } else {
        let c = e.addi(tid, e.index(copiers * i));
        (e.divui(c, per_row), e.remui(c, per_row), 0)
    };
    let r = if lead == 0 {
        first
    } else {
        e.addi(first, e.index(lead))
    };
    // The chunk's first code, clamped inside K unless the stages are whole.
    let kc = e.addi(k0, e.muli(ch, codes));
    let (inside_k, kc) = if side.whole_k {
        (None, kc)
    } else {
        (
            Some(e.cmpi(CmpiPredicate::Ult, kc, k)),
            e.minui(kc, e.subi(k, codes)),
        )
    };
    let byte = if route.packed {
        e.divui(kc, e.index(2))
    } else {
        kc
    };
    let (offset, lead_slot) = if route.staged {
        let row_bytes = route.row_bytes();
        (
            e.addi(e.muli(first, e.index(row_bytes)), e.muli(ch, e.index(16))),
            lead * row_bytes,
        )
    } else if lead % 8 == 0 {
        // The 128-byte swizzle repeats every 8 rows of 128 bytes.
        (swizzled(e, first, ch), lead * BK)
    } else {
        (swizzled(e, r, ch), 0)
    };
    // Its row in the operand, clamped inside it unless the rows are whole tiles.
    let (row, lead_source, inside_rows) = if side.whole_rows {
        (e.addi(side.origin, first), lead * side.row_bytes, None)
    } else {
        let row = e.addi(side.origin, r);
        let inside = e.cmpi(CmpiPredicate::Ult, row, side.rows);
        (e.minui(row, e.subi(side.rows, e.index(1))), 0, Some(inside))
    };
    Chunk {
        inside: match (inside_rows, inside_k) {
            (Some(a), Some(b)) => e.andi(a, b),
            (Some(x), None) | (None, Some(x)) => x,
            (None, None) => e.bool(true),
        },
        r,
        ch,
        source: e.addi(e.muli(row, e.index(side.row_bytes)), byte),
        offset,
        lead: [lead_source, lead_slot],
    }
}

/// Run `body` on each of thread `tid`'s chunks of `side`'s stage at K `k0` (`chunk`): as it
/// is where every copier has the chunk, under an `if` in a last round the copiers do not
/// fill (a skinny block's packed A: 16 rows of 64 bytes are 64 chunks for 128 threads).
#[allow(clippy::too_many_arguments)]
pub(super) fn each_chunk<'c, 'a>(
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
        let run = |e: &Emitter<'c, 'a>| body(e, chunk(e, route, copiers, tid, i, side, k, k0));
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
pub(super) enum Shared<'c, 'a> {
    Gpu(Value<'c, 'a>),
    Cpu(Value<'c, 'a>),
}

impl<'c, 'a> Shared<'c, 'a> {
    /// The emulation's stand-in for `bytes` of shared memory (a multiple of 4), and its
    /// buffer: words that start as FP8 NaNs (0x7F in E4M3 and E5M2), so that an
    /// instruction reading a byte no copy, translation or clearing wrote shows in the
    /// results; so does a read up to `GUARD` bytes past the end (a fold's table of a
    /// distance past its reach: 16 bytes a binade, at most 255).
    pub(super) fn emulated(e: &Emitter<'c, 'a>, bytes: i64) -> (Self, Value<'c, 'a>) {
        const GUARD: i64 = 4096;
        let words = (bytes + GUARD) / 4;
        let buffer = e.alloca(e.int_type(32), words);
        let (zero, one) = (e.index(0), e.index(1));
        e.for_loop(zero, e.index(words), one, &[], |e, w, _| {
            e.store(e.i32(0x7F7F_7F7F), buffer, &[w]);
            vec![]
        });
        (Shared::Cpu(buffer), buffer)
    }

    /// The kernel's dynamic shared memory, its base rounded up to 1024 bytes (the swizzle
    /// atoms' alignment; `Memory::dynamic_bytes` has the slack).
    pub(super) fn aligned(e: &Emitter<'c, 'a>, memory: Value<'c, 'a>) -> Self {
        let raw = wgmma::smem_address(e, memory);
        Shared::Gpu(e.andi(e.addi(raw, e.int(64, 1023)), e.int(64, !1023)))
    }

    /// The byte address of `offset` (an index) as an `i64` (for descriptors).
    pub(super) fn address(&self, e: &Emitter<'c, 'a>, offset: Value<'c, 'a>) -> Value<'c, 'a> {
        let offset = e.index_castui(offset, e.int_type(64));
        match *self {
            Shared::Gpu(base) => e.addi(base, offset),
            Shared::Cpu(_) => offset,
        }
    }

    /// How this kernel permutes bytes: `prmt` on the GPU, shifts in the emulation.
    pub(super) fn permute_by(&self) -> Permute {
        match self {
            Shared::Gpu(_) => Permute::Prmt,
            Shared::Cpu(_) => Permute::Shifts,
        }
    }

    /// The 16 bytes at `offset` (16-byte aligned) as 4 words.
    pub(super) fn load4(&self, e: &Emitter<'c, 'a>, offset: Value<'c, 'a>) -> Vec<Value<'c, 'a>> {
        self.load_words(e, offset, 4)
    }

    /// The `n` (1, 2 or 4) words at `offset` (`4 n`-byte aligned), in one load.
    pub(super) fn load_words(
        &self,
        e: &Emitter<'c, 'a>,
        offset: Value<'c, 'a>,
        n: i64,
    ) -> Vec<Value<'c, 'a>> {
        let i32t = e.int_type(32);
        match *self {
            Shared::Gpu(_) => {
                let p = e.pointer(self.address(e, offset), 3);
                let t = if n == 1 {
                    i32t
                } else {
                    e.vector_type(n as u64, i32t)
                };
                let v = load(e, p, t, 4 * n);
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

    /// The byte at `offset`, as an `i32`.
    pub(super) fn load_byte(&self, e: &Emitter<'c, 'a>, offset: Value<'c, 'a>) -> Value<'c, 'a> {
        let i32t = e.int_type(32);
        match *self {
            Shared::Gpu(_) => {
                let p = e.pointer(self.address(e, offset), 3);
                let byte = e.val(
                    OperationBuilder::new("llvm.load", e.loc())
                        .add_operands(&[p])
                        .add_results(&[e.int_type(8)])
                        .build()
                        .expect("valid llvm.load"),
                );
                e.extui(byte, i32t)
            }
            Shared::Cpu(buffer) => {
                let word = e.load(buffer, &[e.divui(offset, e.index(4))]);
                let at = e.index_castui(e.remui(offset, e.index(4)), i32t);
                e.andi(e.shrui(word, e.muli(at, e.i32(8))), e.i32(0xFF))
            }
        }
    }

    /// Store 4 words at `offset` (16-byte aligned).
    pub(super) fn store4(
        &self,
        e: &Emitter<'c, 'a>,
        offset: Value<'c, 'a>,
        words: &[Value<'c, 'a>],
    ) {
        self.store_words(e, offset, words)
    }

    /// Store 1, 2 or 4 words at `offset` (aligned to their size), in one store.
    pub(super) fn store_words(
        &self,
        e: &Emitter<'c, 'a>,
        offset: Value<'c, 'a>,
        words: &[Value<'c, 'a>],
    ) {
        match *self {
            Shared::Gpu(_) => {
                let p = e.pointer(self.address(e, offset), 3);
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

/// The pointer (address space `space`) to byte `at` (an index) of memref `m`.
pub(super) fn pointer<'c, 'a>(
    e: &Emitter<'c, 'a>,
    space: u32,
    m: Value<'c, 'a>,
    at: Value<'c, 'a>,
) -> Value<'c, 'a> {
    let i64t = e.int_type(64);
    let base = e.index_castui(e.aligned_pointer(m), i64t);
    e.pointer(e.addi(base, e.index_castui(at, i64t)), space)
}

/// `llvm.load` of `t` from `ptr`, `align` bytes aligned.
pub(super) fn load<'c, 'a>(
    e: &Emitter<'c, 'a>,
    ptr: Value<'c, 'a>,
    t: Type<'c>,
    align: i64,
) -> Value<'c, 'a> {
    e.val(
        OperationBuilder::new("llvm.load", e.loc())
            .add_operands(&[ptr])
            .add_attributes(&[alignment(e, align)])
            .add_results(&[t])
            .build()
            .expect("valid llvm.load"),
    )
}

/// Whether the `bytes` (a multiple of 16) of memref `m` from byte `at` (address space
/// `space`: 1 global memory, 16-byte aligned as the copies take it; 0 the emulations' host
/// memory, read unaligned) have none of `bits` set in any 32-bit word, as an `i1`: a
/// 16-byte load each 16, the words or'ed and masked. A
/// block of codes with none of their magnitude bits set is zeros (or NaN codes), the same
/// under any scale.
pub(super) fn bits_clear<'c, 'a>(
    e: &Emitter<'c, 'a>,
    space: u32,
    m: Value<'c, 'a>,
    at: Value<'c, 'a>,
    bytes: i64,
    bits: u32,
) -> Value<'c, 'a> {
    let i32t = e.int_type(32);
    let v4 = e.vector_type(4, i32t);
    let align = if space == 1 { 16 } else { 1 };
    let words: Vec<Value> = (0..bytes / 16)
        .flat_map(|h| {
            let v = load(
                e,
                pointer(e, space, m, e.addi(at, e.index(16 * h))),
                v4,
                align,
            );
            (0..4).map(move |w| (v, w))
        })
        .map(|(v, w)| e.extract(v, w, i32t))
        .collect();
    let any = words[1..].iter().fold(words[0], |acc, &w| e.ori(acc, w));
    e.cmpi(CmpiPredicate::Eq, e.andi(any, e.i32(bits)), e.i32(0))
}

pub(super) fn alignment<'c>(e: &Emitter<'c, '_>, bytes: i64) -> (Identifier<'c>, Attribute<'c>) {
    (
        Identifier::new(e.ctx(), "alignment"),
        melior::ir::attribute::IntegerAttribute::new(e.int_type(64), bytes).into(),
    )
}

/// The wgmma descriptors of a stage's two tiles for one warpgroup, from which every
/// instruction's are a constant apart: each kept as its low word (start address >> 4 in
/// bits 0-13, leading offset 1 (unused) at bit 16), the high word being the same for all
/// (stride offset 1024 >> 4, layout type 1: the 128-byte swizzle). A shared-memory address
/// is below 2^18 (228 KiB), so the start field of `addr + c` is the field of `addr` plus
/// `c >> 4` with no carry out of it: an instruction's descriptor is one 32-bit add and the
/// constant high word, where computing it from its address took an add, mask, shift and
/// or on 64 bits each (about 19 SASS instructions a wgmma in the FP8 consumer's loop).
#[derive(Clone, Copy)]
pub(super) struct TileDescriptors<'c, 'a> {
    low: [Value<'c, 'a>; 2],
}

/// The high word of every descriptor of a K-major tile in the 128-byte swizzle.
const DESCRIPTOR_HIGH: i64 = (ATOM >> 4) | (1 << 30);

impl<'c, 'a> TileDescriptors<'c, 'a> {
    /// The descriptors of the tiles at shared-memory byte addresses `a` and `b` (`i64`s,
    /// their atoms 1024-byte aligned).
    pub(super) fn at(e: &Emitter<'c, 'a>, a: Value<'c, 'a>, b: Value<'c, 'a>) -> Self {
        let i32t = e.int_type(32);
        let low = |addr: Value<'c, 'a>| {
            let start = e.shrui(
                e.andi(e.trunci(addr, i32t), e.int(32, 0x3FFFF)),
                e.int(32, 4),
            );
            e.ori(start, e.int(32, 1 << 16))
        };
        TileDescriptors {
            low: [low(a), low(b)],
        }
    }

    /// The descriptors (`i64`) of the tiles `offsets` bytes (multiples of 16) past these.
    pub(super) fn offset(
        &self,
        e: &Emitter<'c, 'a>,
        offsets: [i64; 2],
    ) -> (Value<'c, 'a>, Value<'c, 'a>) {
        let i64t = e.int_type(64);
        let full = |x: usize| {
            debug_assert!(offsets[x] % 16 == 0);
            let low = if offsets[x] == 0 {
                self.low[x]
            } else {
                e.addi(self.low[x], e.int(32, offsets[x] >> 4))
            };
            e.ori(e.extui(low, i64t), e.int(64, DESCRIPTOR_HIGH << 32))
        };
        (full(0), full(1))
    }
}
