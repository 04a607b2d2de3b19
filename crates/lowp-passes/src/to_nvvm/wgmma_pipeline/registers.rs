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
//! prologue: the ring's first stages issued (each thread's cp.async of its own codes)
//!           the block's whole K range of A translated to FP8 into shared memory, once
//!           (16 rows x 128 bytes a stage, 128-byte swizzle), its block scales decoded
//!           fence.proxy.async; barrier                       // the only one
//! for each stage s of the block's range:
//!   cp.async.wait_group L-1        // this thread's copies of stage s landed
//!   its 2 rows x 32 codes from its slot; stage s + L issued
//!   translated in registers to the fragment of wgmma's A
//!   wgmma.fence; per 32 of K: wgmma.mma_async m64n16k32 {a0..a3}, B's descriptor
//!   commit; wait 0; each segment's partial sums promoted with its block scales
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
//! them. A's scales along K are decoded into shared memory once; B's are loaded per
//! segment as the other kernels do (`Kernel::segment_scales`).

use melior::dialect::arith::CmpiPredicate;
use melior::ir::{Value, ValueLike};

use super::cluster::{gather_splits, stage_range};
use super::memory::{swizzled, Shared};
use super::stage::cp_async_of;
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
    /// Byte offsets: A's decoded block scales (where they change along K), the ring.
    scales_at: Option<i64>,
    ring_at: i64,
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
        let layout = |splits: i64| {
            let a_stages = super::ceil(k / BK, splits);
            let a = a_stages * ROWS * ROW;
            let scales = scaled_a.then(|| a_stages * segs * ROWS * 4);
            let ring_at = a + scales.unwrap_or(0);
            (
                a_stages,
                scales.map(|_| a),
                ring_at,
                ring_at + stages * slot,
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
                && (layout(s).3 > BUDGET || tiles * s < sms)
            {
                s *= 2;
            }
            s
        });
        let (a_stages, scales_at, ring_at, total) = layout(splits);
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
            scales_at,
            ring_at,
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
    });
    if gpu {
        e.bare("nvvm.cp.async.commit.group", &[]);
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
    let zeros: Vec<Value> = (0..count).map(|_| e.f32(0.0)).collect();
    let per_seg = (r.span / 32) as usize;
    let acc = e.for_loop(first, last, one, &zeros, |e, s, acc| {
        e.bare(
            "nvvm.cp.async.wait.group",
            &[("n", &format!("{} : i32", lead - 1))],
        );
        let pieces = r.pieces(e, shared, e.remui(s, e.index(r.stages)), tid);
        issue(e, e.addi(s, e.index(lead)));
        let fp8 = translate_pieces(e, kn, r, p, &pieces);
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
        let parts = wgmma::wait_all(e, &parts);
        let mut acc = acc.to_vec();
        for (g, part) in parts.iter().enumerate() {
            let k0 = e.addi(e.muli(s, e.index(BK)), e.index(g as i64 * r.span));
            let reader = a_scales(r, shared, sl, g as i64);
            let scales = kn.segment_scales(e, &l, k0, count, &[reader, None], constant.as_ref());
            acc = kn.promote_loaded(e, &acc, part, &scales);
        }
        acc
    });
    gather_splits(
        e,
        kn,
        [wgmma::THREADS, r.splits],
        shared,
        &l,
        tid,
        rank,
        &acc,
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
            // Each thread's copies, its stage translated into the four instructions'
            // registers, and its partial sums cleared.
            each_thread(e, &|e, t| {
                let l = lane(e, tile, t, zero, bn);
                let src = Source::new(e, kn, l.col0, t);
                copy_stage(e, kn, r, shared, &src, t, s, e.bool(true));
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
                for g in 0..r.segs {
                    let part: Vec<Value> = (0..count)
                        .map(|x| e.load(parts_m[g as usize], &[at(e, t, x)]))
                        .collect();
                    let k0 = e.addi(e.muli(s, e.index(BK)), e.index(g * r.span));
                    let reader = a_scales(r, shared, sl, g);
                    let constant = kn.constant_scales(e, &l, count as usize);
                    let scales = kn.segment_scales(
                        e,
                        &l,
                        k0,
                        count as usize,
                        &[reader, None],
                        constant.as_ref(),
                    );
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
