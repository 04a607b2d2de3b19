//! The register-fed skinny block (`kernel=wgmma-registers`): a decode step's weights go from
//! global memory through each thread's own registers into `wgmma`'s A operand, translated to
//! FP8 on the way, with no shared-memory tile, proxy fence or block barrier per stage.
//!
//! It rewrites `lowp.scaled_matmul` with M static and at most 16 (the skinny block's swap
//! AB: C^T = B A^T, the op's B the instruction's 64-row A, its A the instruction's B with
//! N = 16) into a `gpu.launch` of one warpgroup per 64 columns of C (and per split of K,
//! a cluster gathering the splits as the skinny block does):
//!
//! ```text
//! prologue: the ring's first stages issued (each thread's cp.async of its own codes, and
//!           of its piece of its row pair's B scales)
//!           the block's whole K range of A translated to FP8 into shared memory, once
//!           (16 rows x 128 bytes a stage, 128-byte swizzle), its block scales decoded
//!           fence.proxy.async; barrier                       // the only one
//!           operands(first)
//! operands(s): cp.async.wait_group L-1; bar.warp.sync     // stage s's copies landed
//!              its 2 rows x 32 codes and its rows' B scales from slot s; stage s + L issued
//!              translated in registers to the fragments of wgmma's A
//! for each two stages s, s + 1 of the block's range:
//!   wgmma.fence; per 32 of K: wgmma.mma_async m64n16k32 {a0..a3}, B's descriptor; commit
//!   operands(s + 1)                // while stage s's instructions run
//!   wait 0; each segment's partial sums promoted with its block scales
//!   the same for s + 1, making operands(s + 2) into stage s's registers
//! ```
//!
//! Why: the barrier pipeline's skinny block spends each stage translating B into shared
//! memory, fencing it for the async proxy and waiting at a block barrier before its four
//! instructions; by the H200's figures (bench/NOTES.md, 2026-12-04) MXFP4's decode step
//! took 35 us against FP8 per channel's 24 with half the bytes. Here each warpgroup runs
//! on its own (only `wgmma`'s own convergence), as CUTLASS's Hopper mixed-input GEMMs feed
//! the narrow operand through registers.
//!
//! The fragment (`wgmma::a_owner`): thread (warp w, `g`, `q`) holds rows `16 w + g` and
//! `+ 8`, K positions `4 q .. 4 q + 3` (registers 0, 1) and `16 + 4 q ..` (2, 3) of each
//! instruction. K is permuted within each 32 (the same on both operands, so the sums are
//! the same): instruction position `16 h + 4 q + e` holds code `8 q + 4 h + e` of the
//! 32-block, so a thread's codes of one row and instruction are 8 consecutive codes (one
//! word packed, two one per byte) and each instruction sums one 32-block (promoted with
//! its scales: MX's per 32). A's translated rows are written in that order: tile word
//! `4 h + q` of each 32 is word `2 q + h` of its codes.
//!
//! Each thread copies its own codes (`cp.async` of 4 or 8 bytes a piece: 2 rows x 4
//! pieces a stage) into its own slots of a ring of `stages`, so no other thread waits on
//! them. A's scales along K are decoded into shared memory once. B's, where a row's of a
//! stage are one aligned copy (`ScaleBlocks::of`: MX's 4 E8M0 bytes), travel in a ring
//! beside the codes': the 4 threads of a row pair (`g`) copy its two rows' bytes in
//! pieces, and each reads both after the warp's barrier, so no promotion waits on a
//! global load (they did, after each stage's wait, in the first form); others are loaded
//! per segment as the other kernels do (`Kernel::segment_scales`).
//!
//! Two stages an iteration: the operands a stage's instructions run beside are the next
//! stage's own registers (a loop carrying them copied them through the back edge, and
//! ptxas merged the copies into the registers the instructions in flight read, serializing
//! every `wgmma`: C7513). An odd range's last second stage runs on whatever it holds and
//! is not promoted.

use melior::dialect::arith::CmpiPredicate;
use melior::ir::{Value, ValueLike};

use super::cluster::{gather_splits, stage_range};
use super::memory::{swizzled, ScaleBlocks, Shared};
use super::stage::{cp_async_of, emulated_scale_word, scale_address};
use super::{lane, static_k, static_rows, Tile, BK, ROW};
use crate::chip::Chip;
use crate::code_words::{nibble_table, symmetric, translate8, Permute, WordRule};
use crate::expand_quantize::{layout_attr_of, unsupported};
use crate::ir::{static_dim, Emitter};
use crate::matrix_kernel::{translate, Kernel, Plan, ScaleReader, Table};
use crate::to_loops::matmul_operands;
use crate::to_nvvm::wgmma::{self, Wgmma};
use crate::PassError;

/// Rows of A (the instruction's N) the block holds.
const ROWS: i64 = 16;

/// Rows of B (the instruction's M) the block holds.
const TILE_ROWS: i64 = 64;

/// Codes of a piece: a thread's codes of one row and instruction.
const PIECE: i64 = 8;

/// The most bytes of shared memory a block takes, so that two fit a multiprocessor.
const BUDGET: i64 = 110 * 1024;

/// How an operand's stored codes become FP8 a word at a time.
#[derive(Clone, Debug)]
enum Translator {
    /// E4M3 / E5M2 as stored.
    AsStored,
    /// 4-bit codes, two a byte, through a sign-symmetric table: a word's eight at once
    /// (`translate8`).
    Eights([u32; 4]),
    /// Codes a table translates four at a time (`WordRule`).
    Rule(WordRule),
    /// One code per byte through a select chain.
    Chain(Table),
}

impl Translator {
    fn of(o: &crate::matrix_kernel::Operand) -> Result<Self, String> {
        if o.f16.is_some() {
            return Err("f16 patterns take the pipeline's f16 route".into());
        }
        let Some(table) = &o.table else {
            return Ok(Translator::AsStored);
        };
        if let Some(t) = nibble_table(table).filter(|t| o.packed && symmetric(t)) {
            return Ok(Translator::Eights(t));
        }
        match WordRule::of(table, o.packed) {
            Some(rule) => Ok(Translator::Rule(rule)),
            None if !o.packed => Ok(Translator::Chain(table.clone())),
            None => Err("its packed codes have no word translation".into()),
        }
    }

    /// The FP8 words (image i of each in byte i, in K order) of `stored`: words of codes
    /// as stored, 8 a word packed, 4 one per byte.
    fn words<'c, 'a>(
        &self,
        e: &Emitter<'c, 'a>,
        p: Permute,
        packed: bool,
        stored: &[Value<'c, 'a>],
    ) -> Vec<Value<'c, 'a>> {
        let quarters = |w: Value<'c, 'a>| -> Vec<Value<'c, 'a>> {
            if packed {
                vec![w, e.shrui(w, e.i32(16))]
            } else {
                vec![w]
            }
        };
        match self {
            Translator::AsStored => stored.to_vec(),
            Translator::Eights(t) => {
                let table: [Value; 4] = std::array::from_fn(|i| match i % 2 {
                    0 => p.held(e, e.i32(t[i])),
                    _ => e.i32(t[i]),
                });
                stored
                    .iter()
                    .flat_map(|&w| translate8(e, p, &table, w))
                    .collect()
            }
            Translator::Rule(rule) => stored
                .iter()
                .flat_map(|&w| quarters(w))
                .map(|w| rule.apply(e, p, packed, w))
                .collect(),
            Translator::Chain(table) => stored
                .iter()
                .map(|&w| {
                    (0..4).fold(e.i32(0), |acc, b| {
                        let code = e.andi(e.shrui(w, e.i32(8 * b)), e.i32(0xFF));
                        let fp8 = translate(e, table, code);
                        e.ori(acc, e.shli(fp8, e.i32(8 * b)))
                    })
                })
                .collect(),
        }
    }
}

/// The block's plan: its split of K, ring and shared-memory layout.
#[derive(Clone, Debug)]
pub(in crate::to_nvvm) struct Registers {
    /// Blocks (a cluster) sharing each tile of C, each on its range of stages.
    pub(super) splits: i64,
    /// Stages of the ring of each thread's copies.
    stages: i64,
    /// Bytes of B's piece as stored (8 codes: 4 packed, 8 one per byte).
    piece: i64,
    /// Bytes of A's 32 codes as stored, and of a row of B.
    a_block: i64,
    b_row: i64,
    /// Stages of K a split holds of A (its range, at most).
    a_stages: i64,
    /// Segments a stage (its scale blocks, or one) and their codes.
    segs: i64,
    span: i64,
    /// B's block scales where they change along K and a row's of a stage are one copy
    /// (`ScaleBlocks::of`): they travel in a ring beside the codes' (else each promotion
    /// loads them from global memory).
    b_scales: Option<ScaleBlocks>,
    /// Byte offsets: A's decoded block scales (where they change along K), the ring of
    /// codes, the ring of B's scales.
    scales_at: Option<i64>,
    ring_at: i64,
    b_scales_at: i64,
    /// A word a thread for the scale copies of the threads that have none
    /// (`copy_scales`).
    idle_at: i64,
    bytes: i64,
    translators: [Translator; 2],
}

impl Registers {
    /// Whether the block takes `op` (planned as `plan`, the skinny `tile`), and with what
    /// split (`splits`: the option's, else by shape).
    pub(in crate::to_nvvm) fn plan(
        op: melior::ir::OperationRef,
        plan: &Plan,
        tile: Tile,
        chip: &Chip,
        splits: Option<i64>,
    ) -> Result<Self, String> {
        if !tile.is_skinny() || tile.rows[0] != ROWS {
            return Err(format!(
                "the register-fed block takes M static and at most {ROWS} (a decode step)"
            ));
        }
        if plan.f16 || plan.in_codes || plan.scaled {
            return Err("it takes the FP8 route (no f16 patterns, no scales in the codes)".into());
        }
        let span = match plan.seg {
            None => BK,
            Some(_) if plan.span % 32 == 0 => plan.span.min(BK),
            Some(_) => {
                return Err(format!(
                    "its instructions sum whole 32-blocks; the scales change every {}",
                    plan.span
                ))
            }
        };
        let o = matmul_operands(op).map_err(|e| e.to_string())?;
        let (Some(n), Some(bytes)) = (static_rows(o.rhs), static_dim(o.lhs.r#type(), 1)) else {
            return Err("it takes N and K static".into());
        };
        let k = if plan.a.packed { 2 * bytes } else { bytes };
        if k % BK != 0 {
            return Err(format!("it takes K whole stages of {BK} (K = {k})"));
        }
        let translators = [Translator::of(&plan.a)?, Translator::of(&plan.b)?];
        let piece = if plan.b.packed { PIECE / 2 } else { PIECE };
        let a_block = if plan.a.packed { 16 } else { 32 };
        // Each thread's 2 rows x 4 pieces a stage.
        let stages = if plan.b.packed { 8 } else { 4 };
        let slot = wgmma::THREADS * 8 * piece;
        let scaled_a =
            plan.seg.is_some() && layout_attr_of(op, "lhs_layout").is_ok_and(|l| l.is_k_blocked());
        let segs = BK / span;
        let b_scales = layout_attr_of(op, "rhs_layout")
            .ok()
            .filter(|l| plan.seg.is_some() && l.is_k_blocked())
            .and_then(|l| ScaleBlocks::of(l, k));
        let b_slot = b_scales.map_or(0, |b| TILE_ROWS * b.row_bytes());
        let idle = b_scales
            .map(Registers::scale_pieces)
            .filter(|&(_, count)| count < 4)
            .map_or(0, |(piece, _)| wgmma::THREADS * piece);
        let layout = |splits: i64| {
            let a_stages = super::ceil(k / BK, splits);
            let a = a_stages * ROWS * ROW;
            let scales = scaled_a.then(|| a_stages * segs * ROWS * 4);
            let ring_at = a + scales.unwrap_or(0);
            let b_scales_at = ring_at + stages * slot;
            (
                a_stages,
                scales.map(|_| a),
                ring_at,
                b_scales_at,
                b_scales_at + stages * b_slot + idle,
            )
        };
        let stage_count = k / BK;
        let tiles = super::ceil(n, 64);
        let sms = chip.multiprocessors as i64;
        let splits = splits.unwrap_or_else(|| {
            // The fewest splits (a power of two, at most 8, each at least 4 stages) whose
            // blocks fit two a multiprocessor (`BUDGET`) and fill the multiprocessors once
            // (16 x 8192 x 8192: 2, 256 blocks of 104 KiB; 16 x 4096 x 8192: 4).
            let mut s = 1;
            while s < super::MAX_SPLITS
                && stage_count >= 4 * s
                && (layout(s).4 > BUDGET || tiles * s < sms)
            {
                s *= 2;
            }
            s
        });
        let (a_stages, scales_at, ring_at, b_scales_at, total) = layout(splits);
        let limit = chip.shared_kib as i64 * 1024 - 1024;
        if total > limit {
            return Err(format!(
                "A's {a_stages} stages of a split ({} bytes) and the ring need {total} bytes \
                 of shared memory, more than the {} KiB (a larger split-k)",
                a_stages * ROWS * ROW,
                chip.shared_kib
            ));
        }
        Ok(Registers {
            splits,
            stages,
            piece,
            a_block,
            b_row: k * piece / PIECE,
            a_stages,
            segs,
            span,
            b_scales,
            scales_at,
            ring_at,
            b_scales_at,
            idle_at: total - idle,
            bytes: total,
            translators,
        })
    }

    /// The launch's dynamic shared memory (the gathered partial sums reuse A's tiles; the
    /// base's alignment slack).
    fn dynamic_bytes(&self) -> i64 {
        let gathered = wgmma::THREADS * (ROWS / 2) * 4;
        self.bytes.max(gathered) + 1024
    }

    /// Byte offset of thread `tid`'s piece `(i, j)` (row i of its two, instruction j) in
    /// ring slot `slot`: a thread's pieces in 16-byte chunks, chunk-major over the
    /// threads (its loads of a chunk hit every bank once a quarter warp).
    fn piece_at<'c, 'a>(
        &self,
        e: &Emitter<'c, 'a>,
        slot: Value<'c, 'a>,
        tid: Value<'c, 'a>,
        i: i64,
        j: i64,
    ) -> Value<'c, 'a> {
        let byte = (4 * i + j) * self.piece;
        let (chunk, within) = (byte / 16, byte % 16);
        let slot_bytes = wgmma::THREADS * 8 * self.piece;
        let at = e.addi(
            e.muli(slot, e.index(slot_bytes)),
            e.muli(e.addi(e.index(chunk * wgmma::THREADS), tid), e.index(16)),
        );
        e.addi(at, e.index(self.ring_at + within))
    }

    /// How the 4 threads of a row pair (`g`) copy its B scales of a stage: pieces of
    /// `(bytes, count)`, thread `q < count` piece `q` (MX 32-blocks: a word of each row).
    fn scale_pieces(b: ScaleBlocks) -> (i64, i64) {
        let total = 2 * b.row_bytes();
        let piece = (total / 4).max(4);
        (piece, total / piece)
    }

    /// Byte offset of byte `within` of B's scales of block row `row` in ring slot `slot`.
    fn b_scale_at<'c, 'a>(
        &self,
        e: &Emitter<'c, 'a>,
        b: ScaleBlocks,
        slot: Value<'c, 'a>,
        row: Value<'c, 'a>,
        within: Value<'c, 'a>,
    ) -> Value<'c, 'a> {
        let slot_bytes = e.muli(slot, e.index(TILE_ROWS * b.row_bytes()));
        let at = e.addi(e.index(self.b_scales_at), slot_bytes);
        e.addi(at, e.addi(e.muli(row, e.index(b.row_bytes())), within))
    }

    /// The f32 values of thread `tid`'s two rows' B scales of each segment of the stage in
    /// slot `slot` (every thread of the warp waited for its copies, then the warp's
    /// barrier: a row's bytes were copied by the row pair's threads), decoded at once.
    fn b_scale_values<'c, 'a>(
        &self,
        e: &Emitter<'c, 'a>,
        kn: &Kernel<'_, 'c, 'a>,
        shared: Shared<'c, 'a>,
        slot: Value<'c, 'a>,
        tid: Value<'c, 'a>,
    ) -> Option<Vec<[Value<'c, 'a>; 2]>> {
        let b = self.b_scales?;
        let rows = block_rows(e, tid);
        let words: [Vec<Value>; 2] = std::array::from_fn(|i| {
            let at = self.b_scale_at(e, b, slot, rows[i], e.index(0));
            shared.load_words(e, at, b.row_bytes() / 4)
        });
        Some(
            (0..self.segs)
                .map(|g| {
                    let byte = g * self.span / b.span * b.size;
                    std::array::from_fn(|i| {
                        let word = words[i][(byte / 4) as usize];
                        let stored = if b.size == 1 {
                            let shifted = e.shrui(word, e.i32(8 * (byte % 4) as u32));
                            e.andi(shifted, e.i32(0xFF))
                        } else {
                            e.bitcast(word, e.f32_type())
                        };
                        kn.ops.sb.decode_stored(e, stored)
                    })
                })
                .collect(),
        )
    }

    /// A thread's stored codes of stage slot `slot`: per row, per instruction, the
    /// piece's words (1 packed, 2 one per byte).
    fn pieces<'c, 'a>(
        &self,
        e: &Emitter<'c, 'a>,
        shared: Shared<'c, 'a>,
        slot: Value<'c, 'a>,
        tid: Value<'c, 'a>,
    ) -> [[Vec<Value<'c, 'a>>; 4]; 2] {
        let per_chunk = 16 / self.piece;
        std::array::from_fn(|i| {
            let mut out: [Vec<Value>; 4] = Default::default();
            for first in (0..4).step_by(per_chunk as usize) {
                let words = shared.load4(e, self.piece_at(e, slot, tid, i as i64, first));
                let per_piece = (self.piece / 4) as usize;
                for (d, ws) in words.chunks(per_piece).enumerate() {
                    out[first as usize + d] = ws.to_vec();
                }
            }
            out
        })
    }
}

/// Thread `tid`'s two rows of the block's B (`16 w + g`, `+ 8`): the instruction's
/// fragment rows (`wgmma::a_owner`).
fn block_rows<'c, 'a>(e: &Emitter<'c, 'a>, tid: Value<'c, 'a>) -> [Value<'c, 'a>; 2] {
    let (w, l) = (e.divui(tid, e.index(32)), e.remui(tid, e.index(32)));
    let first = e.addi(e.muli(w, e.index(16)), e.divui(l, e.index(4)));
    [first, e.addi(first, e.index(8))]
}

/// The reader of B's scales of one segment for the promotion (`Kernel::segment_scales`):
/// `values` of the thread's two rows, picked by the column of C (`first`: the column of
/// its accumulator 0, its first row; the other row's is 8 on).
fn b_reader<'c: 'r, 'a: 'r, 'r>(
    values: [Value<'c, 'a>; 2],
    first: Value<'c, 'a>,
) -> ScaleReader<'c, 'a, 'r> {
    Box::new(move |e: &Emitter<'c, 'a>, col: Value<'c, 'a>, n: usize| {
        (0..n as i64)
            .map(|d| {
                let col = e.addi(col, e.index(d));
                e.select(e.cmpi(CmpiPredicate::Eq, col, first), values[0], values[1])
            })
            .collect()
    })
}

/// `n` words of a row of codes from byte `at` (16-byte aligned): one vector load on the
/// GPU, byte by byte in the emulation (its buffers promise no alignment).
fn load_row_words<'c, 'a>(
    e: &Emitter<'c, 'a>,
    bits: Value<'c, 'a>,
    row: Value<'c, 'a>,
    at: Value<'c, 'a>,
    n: i64,
    gpu: bool,
) -> Vec<Value<'c, 'a>> {
    let i32t = e.int_type(32);
    if gpu {
        let v = e.vload_aligned(bits, &[row, at], 4 * n as u64, 16);
        let words = e.vector_bitcast(v, n as u64, i32t);
        return (0..n).map(|w| e.extract(words, w, i32t)).collect();
    }
    (0..n)
        .map(|w| {
            (0..4).fold(e.i32(0), |acc, b| {
                let byte = e.load(bits, &[row, e.addi(at, e.index(4 * w + b))]);
                e.ori(acc, e.shli(e.extui(byte, i32t), e.i32(8 * b as u32)))
            })
        })
        .collect()
}

/// The pieces of one thread and stage: where each is copied from, and whether its row is
/// inside B.
struct Source<'c, 'a> {
    rows: [Value<'c, 'a>; 2],
    inside: [Value<'c, 'a>; 2],
}

impl<'c, 'a> Source<'c, 'a> {
    /// Thread `tid`'s two rows of B (of the block's 64 from `col0`), clamped inside.
    fn new(
        e: &Emitter<'c, 'a>,
        kn: &Kernel<'_, 'c, 'a>,
        col0: Value<'c, 'a>,
        tid: Value<'c, 'a>,
    ) -> Self {
        let (w, l) = (e.divui(tid, e.index(32)), e.remui(tid, e.index(32)));
        let first = e.addi(col0, e.addi(e.muli(w, e.index(16)), e.divui(l, e.index(4))));
        let last = e.subi(kn.ops.n, e.index(1));
        let rows = [first, e.addi(first, e.index(8))];
        Source {
            rows: rows.map(|r| e.minui(r, last)),
            inside: rows.map(|r| e.cmpi(CmpiPredicate::Ult, r, kn.ops.n)),
        }
    }

    /// Byte of row i's piece of instruction j of the stage at `k0`, in its row.
    fn byte(
        &self,
        e: &Emitter<'c, 'a>,
        r: &Registers,
        tid: Value<'c, 'a>,
        k0: Value<'c, 'a>,
        j: i64,
    ) -> Value<'c, 'a> {
        let q = e.remui(tid, e.index(4));
        let code = e.addi(k0, e.addi(e.index(32 * j), e.muli(q, e.index(PIECE))));
        e.divui(e.muli(code, e.index(r.piece)), e.index(PIECE))
    }
}

/// `bar.warp.sync` of the whole warp.
fn warp_sync(e: &Emitter) {
    e.insert(
        melior::ir::operation::OperationBuilder::new("nvvm.bar.warp.sync", e.loc())
            .add_operands(&[e.i32(u32::MAX)])
            .build()
            .expect("valid nvvm.bar.warp.sync"),
    );
}

/// Issue thread `tid`'s copies of stage `s` (pieces of rows past B copy 0 bytes) and
/// commit them; in the emulation, copy them.
#[allow(clippy::too_many_arguments)]
fn copy_stage<'c, 'a>(
    e: &Emitter<'c, 'a>,
    kn: &Kernel<'_, 'c, 'a>,
    r: &Registers,
    shared: Shared<'c, 'a>,
    src: &Source<'c, 'a>,
    tid: Value<'c, 'a>,
    s: Value<'c, 'a>,
    live: Value<'c, 'a>,
) {
    let gpu = matches!(shared, Shared::Gpu(_));
    let k0 = e.muli(s, e.index(BK));
    let slot = e.remui(s, e.index(r.stages));
    e.if_then(live, |e| {
        let row_bytes = e.index(r.b_row);
        for i in 0..2 {
            for j in 0..4 {
                let at = src.byte(e, r, tid, k0, j);
                let dst = r.piece_at(e, slot, tid, i as i64, j);
                if gpu {
                    let base = wgmma::smem_address(e, kn.ops.bits_b);
                    let offset = e.addi(e.muli(src.rows[i], row_bytes), at);
                    let from = e.addi(base, e.index_castui(offset, e.int_type(64)));
                    let size = e.select(src.inside[i], e.i32(r.piece as u32), e.i32(0));
                    let to = e.pointer(shared.address(e, dst), 3);
                    cp_async_of(e, to, e.pointer(from, 1), r.piece, size);
                } else {
                    let words =
                        load_row_words(e, kn.ops.bits_b, src.rows[i], at, r.piece / 4, false);
                    let words: Vec<Value> = words
                        .into_iter()
                        .map(|w| e.select(src.inside[i], w, e.i32(0)))
                        .collect();
                    shared.store_words(e, dst, &words);
                }
            }
        }
        if let Some(b) = r.b_scales {
            copy_scales(e, kn, r, b, shared, src, tid, k0, slot);
        }
    });
    if gpu {
        e.bare("nvvm.cp.async.commit.group", &[]);
    }
}

/// Thread `tid`'s piece of its row pair's B scales of the stage at `k0` into ring slot
/// `slot` (`Registers::scale_pieces`; rows past B copy the last row's). Where a row pair
/// has fewer pieces than threads, the others copy 0 bytes into a word of their own
/// (`Registers::idle_at`), never read: a branch around the copy between a stage's `wgmma`
/// and its wait made ptxas serialize every `wgmma` (C7513).
#[allow(clippy::too_many_arguments)]
fn copy_scales<'c, 'a>(
    e: &Emitter<'c, 'a>,
    kn: &Kernel<'_, 'c, 'a>,
    r: &Registers,
    b: ScaleBlocks,
    shared: Shared<'c, 'a>,
    src: &Source<'c, 'a>,
    tid: Value<'c, 'a>,
    k0: Value<'c, 'a>,
    slot: Value<'c, 'a>,
) {
    let (piece, count) = Registers::scale_pieces(b);
    let q = e.remui(tid, e.index(4));
    let byte = e.muli(e.minui(q, e.index(count - 1)), e.index(piece));
    let per_row = e.index(b.row_bytes());
    let second = e.cmpi(CmpiPredicate::Uge, byte, per_row);
    let within = e.remui(byte, per_row);
    let sb = &kn.ops.sb;
    let row = e.select(second, src.rows[1], src.rows[0]);
    let [sr, sc] = sb.scale_index(e, row, k0);
    let cell = e.addi(e.muli(sr, e.dim(sb.scales, 1)), sc);
    let at = e.addi(e.muli(cell, e.index(b.size)), within);
    let rows = block_rows(e, tid);
    let mut dst = r.b_scale_at(e, b, slot, e.select(second, rows[1], rows[0]), within);
    let mut size = e.i32(piece as u32);
    if count < 4 {
        let mine = e.cmpi(CmpiPredicate::Ult, q, e.index(count));
        let idle = e.addi(e.index(r.idle_at), e.muli(tid, e.index(piece)));
        dst = e.select(mine, dst, idle);
        size = e.select(mine, size, e.i32(0));
    }
    match shared {
        Shared::Gpu(_) => {
            let from = e.pointer(scale_address(e, sb, at), 1);
            let to = e.pointer(shared.address(e, dst), 3);
            cp_async_of(e, to, from, piece, size);
        }
        Shared::Cpu(_) => {
            let words: Vec<Value> = (0..piece / 4)
                .map(|w| {
                    let at = e.addi(at, e.index(4 * w));
                    if b.size == 1 {
                        return emulated_scale_word(e, sb, at);
                    }
                    let cell = e.divui(at, e.index(4));
                    let columns = e.dim(sb.scales, 1);
                    let (sr, sc) = (e.divui(cell, columns), e.remui(cell, columns));
                    e.bitcast(e.load(sb.scales, &[sr, sc]), e.int_type(32))
                })
                .collect();
            shared.store_words(e, dst, &words);
        }
    }
}

/// A's translation, once per block: thread `tid`'s units (row, stage of the split, 32-block)
/// of stages `[first, last)` into the stage tiles (rows past M zeros), K permuted within
/// each 32 as the fragment wants; and A's block scales, decoded.
#[allow(clippy::too_many_arguments)]
fn prologue<'c, 'a>(
    e: &Emitter<'c, 'a>,
    kn: &Kernel<'_, 'c, 'a>,
    r: &Registers,
    shared: Shared<'c, 'a>,
    tid: Value<'c, 'a>,
    threads: i64,
    first: Value<'c, 'a>,
    last: Value<'c, 'a>,
) {
    let gpu = matches!(shared, Shared::Gpu(_));
    let p = shared.permute_by();
    let packed = kn.plan.a.packed;
    let one = e.index(1);
    let units = r.a_stages * 4 * ROWS;
    e.for_loop(tid, e.index(units), e.index(threads), &[], |e, u, _| {
        let n = e.remui(u, e.index(ROWS));
        let j = e.remui(e.divui(u, e.index(ROWS)), e.index(4));
        let sl = e.divui(u, e.index(4 * ROWS));
        let s = e.addi(first, sl);
        e.if_then(e.cmpi(CmpiPredicate::Ult, s, last), |e| {
            let code = e.addi(e.muli(s, e.index(BK)), e.muli(j, e.index(32)));
            let at = if packed {
                e.divui(code, e.index(2))
            } else {
                code
            };
            let inside = e.cmpi(CmpiPredicate::Ult, n, kn.ops.m);
            let row = e.minui(n, e.subi(kn.ops.m, one));
            let stored = load_row_words(e, kn.ops.bits_a, row, at, r.a_block / 4, gpu);
            let fp8 = r.translators[0].words(e, p, packed, &stored);
            debug_assert_eq!(fp8.len(), 8);
            let fp8: Vec<Value> = fp8
                .into_iter()
                .map(|w| e.select(inside, w, e.i32(0)))
                .collect();
            let tile = e.muli(sl, e.index(ROWS * ROW));
            for h in 0..2 {
                // Tile words 4h + q of the 32: words 2q + h of the codes.
                let words: Vec<Value> = (0..4).map(|q| fp8[2 * q + h]).collect();
                let ch = e.addi(e.muli(j, e.index(2)), e.index(h as i64));
                shared.store4(e, e.addi(tile, swizzled(e, n, ch)), &words);
            }
        });
        vec![]
    });
    let Some(at) = r.scales_at else { return };
    let per = r.a_stages * r.segs * ROWS;
    e.for_loop(tid, e.index(per), e.index(threads), &[], |e, u, _| {
        let n = e.remui(u, e.index(ROWS));
        let g = e.remui(e.divui(u, e.index(ROWS)), e.index(r.segs));
        let sl = e.divui(u, e.index(r.segs * ROWS));
        let s = e.addi(first, sl);
        e.if_then(e.cmpi(CmpiPredicate::Ult, s, last), |e| {
            let k = e.addi(e.muli(s, e.index(BK)), e.muli(g, e.index(r.span)));
            let row = e.minui(n, e.subi(kn.ops.m, one));
            let v = kn.ops.sa.block_value(e, row, k);
            let to = e.addi(e.index(at), e.muli(u, e.index(4)));
            shared.store_words(e, to, &[e.bitcast(v, e.int_type(32))]);
        });
        vec![]
    });
}

/// The reader of A's decoded scales of segment `g` of split-local stage `sl`: the f32
/// scale of a row of C.
fn a_scales<'c: 'r, 'a: 'r, 'r>(
    r: &'r Registers,
    shared: Shared<'c, 'a>,
    sl: Value<'c, 'a>,
    g: i64,
) -> Option<ScaleReader<'c, 'a, 'r>> {
    let at = r.scales_at?;
    Some(Box::new(
        move |e: &Emitter<'c, 'a>, row: Value<'c, 'a>, n: usize| {
            (0..n as i64)
                .map(|d| {
                    let cell = e.addi(
                        e.muli(
                            e.addi(e.muli(sl, e.index(r.segs)), e.index(g)),
                            e.index(ROWS),
                        ),
                        e.addi(row, e.index(d)),
                    );
                    let word =
                        shared.load_words(e, e.addi(e.index(at), e.muli(cell, e.index(4))), 1)[0];
                    e.bitcast(word, e.f32_type())
                })
                .collect()
        },
    ))
}

/// Thread `tid`'s A registers of instruction `j` from its translated pieces: rows i, words h.
fn fragment<'c, 'a>(fp8: &[[Vec<Value<'c, 'a>>; 4]; 2], j: usize) -> [Value<'c, 'a>; 4] {
    [fp8[0][j][0], fp8[1][j][0], fp8[0][j][1], fp8[1][j][1]]
}

/// Translate a thread's pieces (`Registers::pieces`) to FP8: per row, per instruction,
/// its two words (codes `8 q ..` and `8 q + 4 ..` of the 32-block).
fn translate_pieces<'c, 'a>(
    e: &Emitter<'c, 'a>,
    kn: &Kernel<'_, 'c, 'a>,
    r: &Registers,
    p: Permute,
    pieces: &[[Vec<Value<'c, 'a>>; 4]; 2],
) -> [[Vec<Value<'c, 'a>>; 4]; 2] {
    std::array::from_fn(|i| {
        std::array::from_fn(|j| r.translators[1].words(e, p, kn.plan.b.packed, &pieces[i][j]))
    })
}

/// The descriptor of the instruction's B (A's rows) for instruction j of split-local
/// stage `sl`: the stage tile, 32 bytes on per instruction.
fn b_descriptor<'c, 'a>(
    e: &Emitter<'c, 'a>,
    shared: Shared<'c, 'a>,
    sl: Value<'c, 'a>,
    j: i64,
) -> Value<'c, 'a> {
    let tile = shared.address(e, e.muli(sl, e.index(ROWS * ROW)));
    super::memory::TileDescriptors::at(e, tile, tile)
        .offset(e, [32 * j, 32 * j])
        .1
}

/// Lower `op` with the register-fed block (`r`), on the GPU or emulated.
pub(super) fn lower<'c, 'a>(
    e: &Emitter<'c, 'a>,
    op: melior::ir::OperationRef<'c, 'a>,
    plan: &Plan,
    instr: &Wgmma,
    tile: Tile,
    r: &Registers,
    emulate: bool,
) -> Result<(), PassError> {
    let kn = Kernel::new(e, op, plan, instr)?;
    let kn = kn.with_block(tile.rows[0], tile.rows[1]);
    if static_k(&kn).is_none() {
        return Err(unsupported(op, "the register-fed block takes a static K"));
    }
    let one = e.index(1);
    let grid = kn.grid(e, tile.rows[0], tile.rows[1]);
    if emulate {
        kn.blocks(e, grid, |e, _, bx| {
            emulated_block(e, &kn, instr, tile, r, bx)
        });
        return Ok(());
    }
    let splits = e.index(r.splits);
    let cluster = (r.splits > 1).then_some([splits, one, one]);
    e.gpu_launch_dynamic(
        [e.muli(grid[0], splits), grid[1], one],
        [e.index(wgmma::THREADS), one, one],
        cluster,
        r.dynamic_bytes(),
        |e, bid, tid, memory| {
            let (bn, rank) = (e.divui(bid[0], splits), e.remui(bid[0], splits));
            hardware_block(e, &kn, instr, tile, r, bn, rank, tid[0], memory)
        },
    );
    Ok(())
}

#[allow(clippy::too_many_arguments)]
fn hardware_block<'c, 'a>(
    e: &Emitter<'c, 'a>,
    kn: &Kernel<'_, 'c, 'a>,
    instr: &Wgmma,
    tile: Tile,
    r: &Registers,
    bn: Value<'c, 'a>,
    rank: Value<'c, 'a>,
    tid: Value<'c, 'a>,
    memory: Value<'c, 'a>,
) {
    let (zero, one) = (e.index(0), e.index(1));
    let shared = Shared::aligned(e, memory);
    let p = shared.permute_by();
    let l = lane(e, tile, tid, zero, bn);
    let src = Source::new(e, kn, l.col0, tid);
    let (first, last) = stage_range(e, kn.ops.k, BK, rank, r.splits);
    let lead = r.stages - 1;
    let issue = |e: &Emitter<'c, 'a>, s: Value<'c, 'a>| {
        let live = e.cmpi(CmpiPredicate::Ult, s, last);
        copy_stage(e, kn, r, shared, &src, tid, s, live);
    };
    e.for_loop(first, e.addi(first, e.index(lead)), one, &[], |e, s, _| {
        issue(e, s);
        vec![]
    });
    prologue(e, kn, r, shared, tid, wgmma::THREADS, first, last);
    wgmma::fence_proxy_async(e);
    e.bare("gpu.barrier", &[]);
    let count = instr.accumulators();
    let constant = kn.constant_scales(e, &l, count);
    let first_col = kn.acc_coords(e, &l, 0).1;
    let zeros: Vec<Value> = (0..count).map(|_| e.f32(0.0)).collect();
    let per_seg = (r.span / 32) as usize;
    // Stage s's operands in registers (its translated fragments and B's scales), made
    // while stage s - 1's instructions run: the loop carries them.
    let inputs = |e: &Emitter<'c, 'a>, s: Value<'c, 'a>| -> Vec<Value<'c, 'a>> {
        e.bare(
            "nvvm.cp.async.wait.group",
            &[("n", &format!("{} : i32", lead - 1))],
        );
        if r.b_scales.is_some() {
            // The row pair's scales were copied by its first threads: each waited for its
            // own copies, the warp's barrier orders them before the others' loads (and
            // those before the slot's next copies, issued after it).
            warp_sync(e);
        }
        let slot = e.remui(s, e.index(r.stages));
        let pieces = r.pieces(e, shared, slot, tid);
        let b_values = r.b_scale_values(e, kn, shared, slot, tid);
        issue(e, e.addi(s, e.index(lead)));
        let fp8 = translate_pieces(e, kn, r, p, &pieces);
        debug_assert!(fp8.iter().flatten().all(|w| w.len() == 2));
        let words = fp8.iter().flatten().flatten().copied();
        words
            .chain(b_values.into_iter().flatten().flatten())
            .collect()
    };
    // Stage s on its operands `mine` (`inputs`): its instructions, stage s + 1's operands
    // made meanwhile, the wait (holding `mine`'s fragments), the promotions.
    let stage = |e: &Emitter<'c, 'a>,
                 s: Value<'c, 'a>,
                 acc: &[Value<'c, 'a>],
                 mine: &[Value<'c, 'a>]|
     -> (Vec<Value<'c, 'a>>, Vec<Value<'c, 'a>>) {
        let fp8: [[Vec<Value>; 4]; 2] =
            std::array::from_fn(|i| std::array::from_fn(|j| mine[8 * i + 2 * j..][..2].to_vec()));
        let b_values: Option<Vec<[Value; 2]>> = r
            .b_scales
            .map(|_| mine[16..].chunks(2).map(|v| [v[0], v[1]]).collect());
        let sl = e.subi(s, first);
        e.bare("nvvm.wgmma.fence.aligned", &[]);
        let mut parts = vec![];
        for g in 0..r.segs as usize {
            let mut d: Vec<Value> = vec![];
            for i in 0..per_seg {
                let j = g * per_seg + i;
                let db = b_descriptor(e, shared, sl, j as i64);
                let out = wgmma::mma_async_registers(e, instr, &d, fragment(&fp8, j), db, i > 0);
                d = wgmma::unpack(e, instr, out);
            }
            parts.push(d);
        }
        e.bare("nvvm.wgmma.commit.group.sync.aligned", &[]);
        // The next stage's operands while these instructions run (past the block's range:
        // its copies were never issued, what it reads is never used).
        let next = inputs(e, e.addi(s, one));
        let parts = wgmma::wait_all(e, &parts, &mine[..16]);
        let mut acc = acc.to_vec();
        for (g, part) in parts.iter().enumerate() {
            let k0 = e.addi(e.muli(s, e.index(BK)), e.index(g as i64 * r.span));
            let readers = [
                a_scales(r, shared, sl, g as i64),
                b_values.as_ref().map(|v| b_reader(v[g], first_col)),
            ];
            let scales = kn.segment_scales(e, &l, k0, count, &readers, constant.as_ref());
            acc = kn.promote_loaded(e, &acc, part, &scales);
        }
        (acc, next)
    };
    // Two stages an iteration, so that the operands made while a stage's instructions run
    // are the next stage's own registers, and those made while the next one's run go into
    // the first's, whose instructions are done: no copy through the back edge into
    // registers an instruction in flight reads (ptxas merges such copies with the values
    // and then serializes every `wgmma`, C7513). An odd range's last iteration runs its
    // second stage on whatever it holds (A's tile past the split's, a slot never copied)
    // and keeps the sums from before it.
    let mut carried = zeros;
    carried.extend(inputs(e, first));
    let out = e.for_loop(first, last, e.index(2), &carried, |e, s, args| {
        let (acc, mine) = args.split_at(count);
        let (acc, theirs) = stage(e, s, acc, mine);
        let s1 = e.addi(s, one);
        let (after, mut next) = stage(e, s1, &acc, &theirs);
        let inside = e.cmpi(CmpiPredicate::Ult, s1, last);
        let mut acc: Vec<Value> = (after.iter().zip(&acc))
            .map(|(&new, &old)| e.select(inside, new, old))
            .collect();
        acc.append(&mut next);
        acc
    });
    let acc = &out[..count];
    gather_splits(
        e,
        kn,
        [wgmma::THREADS, r.splits],
        shared,
        &l,
        tid,
        rank,
        acc,
    );
}

/// The block on the CPU: per split in rank order, the prologue by every thread, then per
/// stage every thread's copies and translation, each instruction on the threads'
/// registers (`wgmma::emulated_wgmma_from`) and the promotions; the splits' sums added in
/// rank order, as rank 0 gathers them.
fn emulated_block<'c, 'a>(
    e: &Emitter<'c, 'a>,
    kn: &Kernel<'_, 'c, 'a>,
    instr: &Wgmma,
    tile: Tile,
    r: &Registers,
    bn: Value<'c, 'a>,
) {
    let (zero, one) = (e.index(0), e.index(1));
    let (f32t, i32t) = (e.f32_type(), e.int_type(32));
    let threads = wgmma::THREADS;
    let count = instr.accumulators() as i64;
    let (shared, buffer) = Shared::emulated(e, r.bytes);
    let p = shared.permute_by();
    // Each instruction's A registers of every thread (4 words a thread).
    let registers: Vec<Value> = (0..4).map(|_| e.alloca(i32t, threads * 4)).collect();
    // Each split's accumulators (rank-major), each segment's partial sums.
    let acc_m = e.alloca(f32t, r.splits * threads * count);
    let parts_m: Vec<Value> = (0..r.segs)
        .map(|_| e.alloca(f32t, threads * count))
        .collect();
    let at = |e: &Emitter<'c, 'a>, t: Value<'c, 'a>, x: i64| {
        e.addi(e.muli(t, e.index(count)), e.index(x))
    };
    let each_thread = |e: &Emitter<'c, 'a>, body: &dyn Fn(&Emitter<'c, 'a>, Value<'c, 'a>)| {
        e.for_loop(zero, e.index(threads), one, &[], |e, t, _| {
            body(e, t);
            vec![]
        });
    };
    e.for_loop(zero, e.index(r.splits * threads), one, &[], |e, t, _| {
        for x in 0..count {
            e.store(e.f32(0.0), acc_m, &[at(e, t, x)]);
        }
        vec![]
    });
    let per_seg = r.span / 32;
    e.for_loop(zero, e.index(r.splits), one, &[], |e, rank, _| {
        let (first, last) = stage_range(e, kn.ops.k, BK, rank, r.splits);
        let held = e.muli(rank, e.index(threads));
        each_thread(e, &|e, t| {
            prologue(e, kn, r, shared, t, threads, first, last)
        });
        e.for_loop(first, last, one, &[], |e, s, _| {
            let sl = e.subi(s, first);
            let slot = e.remui(s, e.index(r.stages));
            // Each thread's copies (all of them first: a row pair's scales are copied by
            // its first threads), its stage translated into the four instructions'
            // registers, and its partial sums cleared.
            each_thread(e, &|e, t| {
                let l = lane(e, tile, t, zero, bn);
                let src = Source::new(e, kn, l.col0, t);
                copy_stage(e, kn, r, shared, &src, t, s, e.bool(true));
            });
            each_thread(e, &|e, t| {
                let pieces = r.pieces(e, shared, slot, t);
                let fp8 = translate_pieces(e, kn, r, p, &pieces);
                for (j, &regs) in registers.iter().enumerate() {
                    for (w, v) in fragment(&fp8, j).into_iter().enumerate() {
                        let cell = e.addi(e.muli(t, e.index(4)), e.index(w as i64));
                        e.store(v, regs, &[cell]);
                    }
                }
                for &part in &parts_m {
                    for x in 0..count {
                        e.store(e.f32(0.0), part, &[at(e, t, x)]);
                    }
                }
            });
            for (j, &regs) in registers.iter().enumerate() {
                let db = b_descriptor(e, shared, sl, j as i64);
                let part = parts_m[j / per_seg as usize];
                let smem = [buffer, buffer];
                wgmma::emulated_wgmma_from(e, instr, [db, db], smem, Some(regs), part);
            }
            each_thread(e, &|e, t| {
                let l = lane(e, tile, t, zero, bn);
                let mine = e.addi(held, t);
                let mut acc: Vec<Value> = (0..count)
                    .map(|x| e.load(acc_m, &[at(e, mine, x)]))
                    .collect();
                let b_values = r.b_scale_values(e, kn, shared, slot, t);
                let first_col = kn.acc_coords(e, &l, 0).1;
                for g in 0..r.segs {
                    let part: Vec<Value> = (0..count)
                        .map(|x| e.load(parts_m[g as usize], &[at(e, t, x)]))
                        .collect();
                    let k0 = e.addi(e.muli(s, e.index(BK)), e.index(g * r.span));
                    let readers = [
                        a_scales(r, shared, sl, g),
                        b_values
                            .as_ref()
                            .map(|v| b_reader(v[g as usize], first_col)),
                    ];
                    let constant = kn.constant_scales(e, &l, count as usize);
                    let scales =
                        kn.segment_scales(e, &l, k0, count as usize, &readers, constant.as_ref());
                    acc = kn.promote_loaded(e, &acc, &part, &scales);
                }
                for (x, &v) in acc.iter().enumerate() {
                    e.store(v, acc_m, &[at(e, mine, x as i64)]);
                }
            });
            vec![]
        });
        vec![]
    });
    // Rank 0's sums plus the others' in rank order, as `gather_splits` adds them.
    each_thread(e, &|e, t| {
        let l = lane(e, tile, t, zero, bn);
        let mut acc: Vec<Value> = (0..count).map(|x| e.load(acc_m, &[at(e, t, x)])).collect();
        for rank in 1..r.splits {
            let theirs = e.addi(e.index(rank * threads), t);
            for (x, v) in acc.iter_mut().enumerate() {
                *v = e.addf(*v, e.load(acc_m, &[at(e, theirs, x as i64)]));
            }
        }
        kn.epilogue(e, &l, &acc);
    });
}
