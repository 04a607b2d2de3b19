//! A stage's way into shared memory: each thread's `cp.async` of its 16-byte chunks (and,
//! where block scales are staged, of its block rows' scale bytes), then the translation of
//! a staged operand's codes to FP8 by the thread that copied them (4-bit codes four at a
//! time with three `prmt` byte permutes, FP6 four at a time by word arithmetic, other
//! wider codes through a select chain; folded, with the table moved by the chunk's
//! scale; on the f16 route, to E5M2 then f16 times the block's scale, each chunk's scale
//! word copied with it, or FP8 as stored widened to f16), and the staged scales decoded to
//! f32 once per block for the promotions (`staged_readers`).

use lowp_formats::ScaledFormat;
use melior::dialect::arith::CmpiPredicate;
use melior::ir::operation::OperationBuilder;
use melior::ir::{Attribute, Identifier, Value};

use super::fold::{byte_max, Folded};
use super::memory::{each_chunk, ring_rem, swizzled, Memory, ScaleStage, Shared};
use super::{ceil, static_k, Side, BK};
use crate::code_words::{
    byte_rule, nibble_table, splat, symmetric, translate4, translate4_bytes, translate8,
    translate_bytes,
};
use crate::codes;
use crate::expand_quantize::Scaled;
use crate::ir::Emitter;
use crate::matrix_kernel::{translate, Kernel, ScaleReader};
use crate::to_nvvm::wgmma;

/// `nvvm.cp.async.shared.global` of 16 bytes from `src` to `dst`, `size` of them read (the
/// rest zero).
pub(super) fn cp_async<'c, 'a>(
    e: &Emitter<'c, 'a>,
    dst: Value<'c, 'a>,
    src: Value<'c, 'a>,
    size: Value<'c, 'a>,
) {
    cp_async_of(e, dst, src, 16, size)
}

/// `nvvm.cp.async.shared.global` of `bytes` (4, 8 or 16; `.cg`, which bypasses L1, takes 16
/// only) from `src` to `dst`, `size` of them read.
pub(super) fn cp_async_of<'c, 'a>(
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

/// Issue thread `tid`'s `cp.async` of the staged scales of stage `s`: the row's stage bytes
/// by the row's thread (`each_scale_row`); with a window (`ScaleBlocks::window`), the
/// 4-byte words that hold them and the word after, each word past the scales copying 0
/// bytes.
pub(super) fn copy_scales<'c, 'a>(
    e: &Emitter<'c, 'a>,
    kn: &Kernel<'_, 'c, 'a>,
    mem: &Memory,
    shared: Shared<'c, 'a>,
    sides: &[Side<'c, 'a>; 2],
    tid: Value<'c, 'a>,
    s: Value<'c, 'a>,
) {
    let k0 = e.muli(s, e.index(BK));
    each_scale_row(e, mem, tid, |e, x, st, r| {
        let scaled = [&kn.ops.sa, &kn.ops.sb][x];
        let at = scale_address(e, scaled, scale_at(e, scaled, st, &sides[x], r, k0));
        let copied = st.copied(e, mem.stages, s, r);
        if !st.window {
            let (src, dst) = (e.pointer(at, 1), e.pointer(shared.address(e, copied), 3));
            cp_async_of(e, dst, src, st.per_row(), e.i32(st.per_row() as u32));
            return;
        }
        let cells = e.muli(e.dim(scaled.scales, 0), e.dim(scaled.scales, 1));
        let end = scale_address(e, scaled, e.muli(cells, e.index(st.size)));
        let first = e.andi(at, e.int(64, !3));
        for w in 0..st.row_bytes() / 4 {
            let word = e.addi(first, e.int(64, 4 * w));
            let left = e.maxsi(e.minsi(e.subi(end, word), e.int(64, 4)), e.int(64, 0));
            let dst = shared.address(e, e.addi(copied, e.index(4 * w)));
            let (src, dst) = (e.pointer(word, 1), e.pointer(dst, 3));
            cp_async_of(e, dst, src, 4, e.trunci(left, e.int_type(32)));
        }
    });
}

/// The address (an `i64`) of byte `at` (an index) of an operand's scales as stored.
pub(super) fn scale_address<'c, 'a>(
    e: &Emitter<'c, 'a>,
    scaled: &Scaled<'c, 'a>,
    at: Value<'c, 'a>,
) -> Value<'c, 'a> {
    let base = wgmma::smem_address(e, scaled.scales);
    e.addi(base, e.index_castui(at, e.int_type(64)))
}

/// Issue thread `tid`'s 16-byte `cp.async` of stage `s` of both operands into its slot
/// (from the operands' base addresses `globals`; chunks outside copy 0 bytes); with TMA,
/// of the staged operands only; block-scaled on the f16 route, each chunk's scale word with
/// it (`scale_cell`, `Memory::chunk_scales`). (The staged scales: `copy_scales`.)
#[allow(clippy::too_many_arguments)]
pub(super) fn copy_stage<'c, 'a>(
    e: &Emitter<'c, 'a>,
    kn: &Kernel<'_, 'c, 'a>,
    mem: &Memory,
    shared: Shared<'c, 'a>,
    sides: &[Side<'c, 'a>; 2],
    globals: [Value<'c, 'a>; 2],
    k: Value<'c, 'a>,
    tid: Value<'c, 'a>,
    s: Value<'c, 'a>,
) {
    let i64t = e.int_type(64);
    let k0 = e.muli(s, e.index(mem.bk()));
    for (x, side) in sides.iter().enumerate() {
        let (route, copied) = (mem.routes[x], mem.copied(e, x, s));
        if mem.tma && !route.staged {
            continue;
        }
        let scaled = [&kn.ops.sa, &kn.ops.sb][x];
        each_chunk(e, route, mem.copiers, tid, side, k, k0, |e, c| {
            let dst = e.pointer(shared.address(e, e.addi(copied, c.offset)), 3);
            let dst = e.offset_pointer(dst, c.lead[1]);
            let src = e.pointer(e.addi(globals[x], e.index_castui(c.source, i64t)), 1);
            let src = e.offset_pointer(src, c.lead[0]);
            let size = e.select(c.inside, e.i32(16), e.i32(0));
            cp_async(e, dst, src, size);
            if route.block_scaled {
                let at = scale_address(e, scaled, scale_cell(e, scaled, side, c.r, k0));
                let dst = shared.address(e, mem.chunk_scales(e, x, s, c.slot_offset(e)));
                let size = e.select(c.inside, e.i32(4), e.i32(0));
                cp_async_of(e, e.pointer(dst, 3), e.pointer(at, 1), 4, size);
            }
        });
    }
}

/// The cell (row-major index) of operand `side`'s scales holding its tile row `r`'s scale
/// of K `k0`: rows past the operand read the last row's (their codes are zeros, or they
/// are never used; none are where the rows are whole tiles). On the f16 route (one byte a
/// scale, stages of 64 codes, K whole stages) it is also the byte offset of the row's
/// aligned word of the stage's 4 scales.
pub(super) fn scale_cell<'c, 'a>(
    e: &Emitter<'c, 'a>,
    scaled: &Scaled<'c, 'a>,
    side: &Side<'c, 'a>,
    r: Value<'c, 'a>,
    k0: Value<'c, 'a>,
) -> Value<'c, 'a> {
    let [sr, sc] = scaled.scale_index(e, side.row(e, r), k0);
    e.addi(e.muli(sr, e.dim(scaled.scales, 1)), sc)
}

/// Run `body` (operand, its `ScaleStage`, row of the block) for the row whose staged scales
/// thread `tid` copies and decodes: A's rows by the first threads, B's by the last (the
/// square block: 128 + 128 of 256; the skinny one: at most 64 + 64 of 128; the producer
/// warpgroup: row t of both by thread t).
pub(super) fn each_scale_row<'c, 'a>(
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

/// The 4-byte word of one-byte scales at byte offset `at` (aligned, inside a row), byte by
/// byte: what the GPU's 4-byte load or copy of it reads (for the emulations).
pub(super) fn emulated_scale_word<'c, 'a>(
    e: &Emitter<'c, 'a>,
    scaled: &Scaled<'c, 'a>,
    at: Value<'c, 'a>,
) -> Value<'c, 'a> {
    let columns = e.dim(scaled.scales, 1);
    let (sr, sc) = (e.divui(at, columns), e.remui(at, columns));
    (0..4).fold(e.i32(0), |acc, b| {
        let byte = e.load(scaled.scales, &[sr, e.addi(sc, e.index(b))]);
        let byte = e.extui(byte, e.int_type(32));
        e.ori(acc, e.shli(byte, e.i32(8 * b as u32)))
    })
}

/// The byte offset in operand `side`'s scales (as stored) of its block row `r`'s first
/// scale of the stage at `k0` (`scale_cell`).
pub(super) fn scale_at<'c, 'a>(
    e: &Emitter<'c, 'a>,
    scaled: &Scaled<'c, 'a>,
    st: ScaleStage,
    side: &Side<'c, 'a>,
    r: Value<'c, 'a>,
    k0: Value<'c, 'a>,
) -> Value<'c, 'a> {
    e.muli(scale_cell(e, scaled, side, r, k0), e.index(st.size))
}

/// The f32 values of the staged scales of stage `s` that thread `tid` copied (its copy
/// landed), into the stage's decoded ring entry: [scale of the stage][row]. Folded
/// (`Folded`): the one scale of the stage's partial sum, the row's largest, as scale 0;
/// with B anchored (`Anchor`), A's times B's one scale, and none of B's. A window's words
/// are first shifted by the stage bytes' place in the first (`ScaleBlocks::window`).
#[allow(clippy::too_many_arguments)]
pub(super) fn decode_scales<'c, 'a>(
    e: &Emitter<'c, 'a>,
    kn: &Kernel<'_, 'c, 'a>,
    mem: &Memory,
    shared: Shared<'c, 'a>,
    sides: &[Side<'c, 'a>; 2],
    tid: Value<'c, 'a>,
    s: Value<'c, 'a>,
    fold: Folded<'c, 'a>,
) {
    let (i32t, f32t) = (e.int_type(32), e.f32_type());
    each_scale_row(e, mem, tid, |e, x, st, r| {
        let folded = fold.folds() && mem.fold.is_some_and(|f| f.moves[x].is_some());
        if folded && fold.top(x).is_some() {
            return;
        }
        let scaled = [&kn.ops.sa, &kn.ops.sb][x];
        let copied = st.copied(e, mem.stages, s, r);
        // (Folded, a window was settled into its first word: `settle_scales`.)
        let words = if st.window && mem.fold.is_none() {
            placed_window(e, scaled, shared, st, &sides[x], r, s, copied)
        } else {
            shared.load_words(e, copied, st.per_row() / 4)
        };
        if folded {
            let value = scaled.decode_stored(e, byte_max(e, words[0]));
            let value = match fold.top(1) {
                Some(top) => e.mulf(value, kn.ops.sb.decode_stored(e, top)),
                None => value,
            };
            let at = decoded_at(e, mem, x, st, r, s, e.index(0));
            shared.store_words(e, at, &[e.bitcast(value, i32t)]);
            return;
        }
        for g in 0..st.count() {
            let value = if st.size == 1 {
                let byte = e.shrui(words[(g / 4) as usize], e.i32(8 * (g % 4) as u32));
                scaled.decode_stored(e, e.andi(byte, e.i32(0xFF)))
            } else {
                e.bitcast(words[g as usize], f32t)
            };
            let at = decoded_at(e, mem, x, st, r, s, e.index(g));
            shared.store_words(e, at, &[e.bitcast(value, i32t)]);
        }
    });
}

/// Settle thread `tid`'s rows' copied scale windows of stage `s` (`ScaleBlocks::window`,
/// where the scales are folded, `Fold`): the row's four E8M0 bytes of the stage put in place
/// in the entry's first word, as a copy of an aligned row would have them, those past the
/// scales' last column (the last stage's blocks past K, whose codes copy as zeros) replaced
/// by the last inside it, so that the stage's largest and smallest are of blocks inside K.
/// The folds then read the entry as aligned: the translations (the row's word, or a byte
/// where B is anchored), `decode_scales`, and the scan, which stores the first stage's
/// word so settled (`fold::scale_word`). On the GPU the thread that copied a row settles
/// its next stage's after its wait for them, before the barrier that publishes them.
#[allow(clippy::too_many_arguments)]
pub(super) fn settle_scales<'c, 'a>(
    e: &Emitter<'c, 'a>,
    kn: &Kernel<'_, 'c, 'a>,
    mem: &Memory,
    shared: Shared<'c, 'a>,
    sides: &[Side<'c, 'a>; 2],
    tid: Value<'c, 'a>,
    s: Value<'c, 'a>,
) {
    each_scale_row(e, mem, tid, |e, x, st, r| {
        if !st.window || st.size != 1 {
            return;
        }
        let scaled = [&kn.ops.sa, &kn.ops.sb][x];
        let copied = st.copied(e, mem.stages, s, r);
        let word = placed_window(e, scaled, shared, st, &sides[x], r, s, copied)[0];
        // (The last stage's blocks inside K: a static count.)
        let columns = window_columns(kn, st);
        let stages = ceil(columns * st.span, BK);
        let inside = columns - 4 * (stages - 1);
        let word = if inside < 4 {
            let last = e.cmpi(CmpiPredicate::Eq, s, e.index(stages - 1));
            e.select(last, held_past(e, word, inside), word)
        } else {
            word
        };
        shared.store_words(e, copied, &[word]);
    });
}

/// The words of operand `scaled`'s row `r` of stage `s` that a window (`ScaleBlocks::window`)
/// copied to `copied`, shifted to where a copy of an aligned row would hold them: one fewer
/// than copied, the first from the stage bytes' place in the first word copied. (Rows of 3
/// or 5 words are only 4-byte aligned: loaded a word at a time.)
#[allow(clippy::too_many_arguments)]
fn placed_window<'c, 'a>(
    e: &Emitter<'c, 'a>,
    scaled: &Scaled<'c, 'a>,
    shared: Shared<'c, 'a>,
    st: ScaleStage,
    side: &Side<'c, 'a>,
    r: Value<'c, 'a>,
    s: Value<'c, 'a>,
    copied: Value<'c, 'a>,
) -> Vec<Value<'c, 'a>> {
    let i32t = e.int_type(32);
    let word_at = |w: i64| match w {
        0 => copied,
        _ => e.addi(copied, e.index(4 * w)),
    };
    let words: Vec<Value> = (0..st.row_bytes() / 4)
        .map(|w| shared.load_words(e, word_at(w), 1)[0])
        .collect();
    let at = scale_at(e, scaled, st, side, r, e.muli(s, e.index(BK)));
    let skip = e.andi(scale_address(e, scaled, at), e.int(64, 3));
    realigned(e, &words, e.muli(e.trunci(skip, i32t), e.i32(8)))
}

/// The scale columns of a row (`ceil(K / span)`) where a stage's are a window: K is static
/// there (`ScaleBlocks::of`).
pub(super) fn window_columns(kn: &Kernel, st: ScaleStage) -> i64 {
    static_k(kn)
        .map(|k| ceil(k, st.span))
        .expect("windows are of a static K")
}

/// `word`'s bytes from `inside` on replaced by its byte `inside - 1` (`inside` in 1..4).
fn held_past<'c, 'a>(e: &Emitter<'c, 'a>, word: Value<'c, 'a>, inside: i64) -> Value<'c, 'a> {
    let kept = (1u32 << (8 * inside)) - 1;
    let last = e.andi(e.shrui(word, e.i32(8 * (inside as u32 - 1))), e.i32(0xFF));
    let fill = e.andi(e.muli(last, e.i32(0x0101_0101)), e.i32(!kept));
    e.ori(e.andi(word, e.i32(kept)), fill)
}

/// The two E4M3 codes in the low 16 bits of `pair` (an `i32`) as f16 (`vector<2xf16>`, the
/// first in element 0), exactly (every E4M3 value is an f16 one; NaN stays NaN): FP8 codes
/// as stored, or UE4M3 scale codes (their sign bits are 0). `cvt.rn.f16x2.e4m3x2` on the
/// GPU, decoded in the emulation.
fn e4m3_pair<'c, 'a>(
    e: &Emitter<'c, 'a>,
    shared: Shared<'c, 'a>,
    pair: Value<'c, 'a>,
) -> Value<'c, 'a> {
    let e4m3 = ScaledFormat::F8E4M3;
    match shared {
        Shared::Gpu(_) => {
            let bytes = e.trunci(pair, e.int_type(16));
            let bytes = e.llvm_bitcast(bytes, e.vector_type(2, e.int_type(8)));
            let ctx = e.ctx();
            e.val(
                OperationBuilder::new("nvvm.convert.f8x2.to.f16x2", e.loc())
                    .add_operands(&[bytes])
                    .add_attributes(&[
                        (
                            Identifier::new(ctx, "srcType"),
                            Attribute::parse(ctx, "f8E4M3FN").expect("valid FP8 type"),
                        ),
                        (
                            Identifier::new(ctx, "relu"),
                            Attribute::parse(ctx, "false").expect("valid flag"),
                        ),
                    ])
                    .add_results(&[e.vector_type(2, e.f16_type())])
                    .build()
                    .expect("valid nvvm.convert.f8x2.to.f16x2"),
            )
        }
        Shared::Cpu(_) => {
            let code = |at: u32| e.andi(e.shrui(pair, e.i32(at)), e.i32(0xFF));
            let half = |at| e.truncf(codes::decode(e, e4m3, code(at)), e.f16_type());
            e.from_elements(&[half(0), half(8)])
        }
    }
}

/// The words of `words` (one more than the result) shifted down by `bits` (0, 8, 16 or 24,
/// an `i32`): word i from words i and i + 1.
fn realigned<'c, 'a>(
    e: &Emitter<'c, 'a>,
    words: &[Value<'c, 'a>],
    bits: Value<'c, 'a>,
) -> Vec<Value<'c, 'a>> {
    let (i32t, i64t) = (e.int_type(32), e.int_type(64));
    let bits = e.extui(bits, i64t);
    words
        .windows(2)
        .map(|pair| {
            let high = e.shli(e.extui(pair[1], i64t), e.int(64, 32));
            let both = e.ori(high, e.extui(pair[0], i64t));
            e.trunci(e.shrui(both, bits), i32t)
        })
        .collect()
}

/// Where the decoded staged scale `g` of stage `s` of block row `r` of operand `x` is.
pub(super) fn decoded_at<'c, 'a>(
    e: &Emitter<'c, 'a>,
    mem: &Memory,
    x: usize,
    st: ScaleStage,
    r: Value<'c, 'a>,
    s: Value<'c, 'a>,
    g: Value<'c, 'a>,
) -> Value<'c, 'a> {
    let entry = e.muli(ring_rem(e, s, st.decoded_ring), e.index(st.decoded_stride));
    let value = e.addi(e.muli(g, e.index(mem.tile.rows[x])), r);
    e.addi(
        e.addi(e.index(st.decoded), entry),
        e.muli(value, e.index(4)),
    )
}

/// The readers of the staged scales for the segment starting at `k0`, per operand: the f32
/// scale of a row (A) or column (B) of C, which is the block's row `% rows`; B anchored
/// (`Anchor`), one value for every column: 1 where A's decoded scales carry it, else
/// `2^(top - 127)`.
pub(super) fn staged_readers<'c, 'a, 'm>(
    kn: &'m Kernel<'_, 'c, 'a>,
    mem: &'m Memory,
    shared: Shared<'c, 'a>,
    k0: Value<'c, 'a>,
    fold: Folded<'c, 'a>,
) -> [Option<ScaleReader<'c, 'a, 'm>>; 2]
where
    'c: 'm,
    'a: 'm,
{
    let a_folded = mem.fold.is_some_and(|f| f.moves[0].is_some());
    [0, 1].map(|x| {
        mem.scales[x].map(|st| {
            if let (1, Some(top)) = (x, fold.top(1)) {
                return Box::new(move |e: &Emitter<'c, 'a>, _: Value<'c, 'a>, n: usize| {
                    let value = if a_folded {
                        e.f32(1.0)
                    } else {
                        kn.ops.sb.decode_stored(e, top)
                    };
                    vec![value; n]
                }) as ScaleReader<'c, 'a, 'm>;
            }
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
/// two (low nibble first) when packed. Folded (`Folded`): a chunk's table moved down by its
/// block's distance to the row's stage maximum, or for B anchored to the block's `top`
/// (`Anchor`), the block's code read from the stage's copied scales. On the f16 route, into
/// f16 tiles: 16-blocks' codes times their scales, FP8 operands (no table) as stored, or
/// the f16 patterns of the codes' fields (`Operand::f16`).
#[allow(clippy::too_many_arguments)]
pub(super) fn translate_stage<'c, 'a>(
    e: &Emitter<'c, 'a>,
    mem: &Memory,
    shared: Shared<'c, 'a>,
    sides: &[Side<'c, 'a>; 2],
    k: Value<'c, 'a>,
    tid: Value<'c, 'a>,
    s: Value<'c, 'a>,
    fold: Folded<'c, 'a>,
) {
    let k0 = e.muli(s, e.index(mem.bk()));
    for (x, side) in sides.iter().enumerate() {
        let route = mem.routes[x];
        if !route.staged {
            continue;
        }
        // (None: FP8 as stored, widened on the f16 route.)
        let table = side.operand.table.as_ref();
        let (copied, tile) = (mem.copied(e, x, s), mem.tile(e, x, s));
        let moves = mem.fold.filter(|_| fold.folds()).and_then(|f| f.moves[x]);
        let bytewise = table.and_then(byte_rule).filter(|_| !route.packed);
        let permute = shared.permute_by();
        each_chunk(e, route, mem.copiers, tid, side, k, k0, |e, c| {
            let raw = shared.load4(e, e.addi(copied, c.slot_offset(e)));
            // The f16 route: the chunk's blocks' scales as f16 (its first two blocks of the
            // row's stage word, one a 16-code piece).
            let scales = route.block_scaled.then(|| {
                let word = shared.load_words(e, mem.chunk_scales(e, x, s, c.slot_offset(e)), 1);
                let first = e.muli(c.ch, e.index(route.codes() / 16));
                let bits = e.muli(e.index_castui(first, e.int_type(32)), e.i32(8));
                e4m3_pair(e, shared, e.shrui(word[0], bits))
            });
            // Code `n` of the chunk (in K order).
            let code = |e: &Emitter<'c, 'a>, n: i64| {
                let (bits, per_word) = if route.packed { (4, 8) } else { (8, 4) };
                let word = raw[(n / per_word) as usize];
                let shift = e.i32(((n % per_word) * bits) as u32);
                e.andi(e.shrui(word, shift), e.i32((1 << bits) - 1))
            };
            let pieces = route.codes() / 16;
            // Folded: the chunk's 32-block j of the row goes d = max - e_j binades down (max:
            // the row's stage's largest, or the anchor), and its table is the 16 bytes at
            // `moves.at + 16 d`.
            // (Anchored, e_j is a byte load: the row's word is not needed.)
            let moved = moves.map(|moves| {
                let st = mem.scales[x].expect("a folded operand's scales are staged");
                let copied = st.copied(e, mem.stages, s, c.r);
                let j = e.divui(e.muli(c.ch, e.index(route.codes())), e.index(st.span));
                let (most, e_j) = match fold.top(x) {
                    Some(top) => (top, shared.load_byte(e, e.addi(copied, j))),
                    None => {
                        let word = shared.load_words(e, copied, 1)[0];
                        let at = e.muli(e.index_castui(j, e.int_type(32)), e.i32(8));
                        (byte_max(e, word), e.andi(e.shrui(word, at), e.i32(0xFF)))
                    }
                };
                let d = e.subi(most, e_j);
                // (By rows, a block past the reach holds codes every table keeps.)
                let d = if fold.clamps() && mem.fold.is_some_and(|f| f.magnitude[x] != 0) {
                    e.minui(d, e.i32(moves.reach as u32))
                } else {
                    d
                };
                let index = e.index_castui(d, e.index_type());
                let at = e.addi(e.index(moves.at), e.muli(index, e.index(16)));
                (d, at, moves.unit)
            });
            let base = table.and_then(nibble_table);
            // A sign-symmetric table (and so each of its moved ones): one permute fewer.
            let signed = base.is_some_and(|t| symmetric(&t))
                && moves.is_none_or(|m| m.tables[..=m.reach as usize].iter().all(symmetric));
            let nibbles = base.map(|t| match moved {
                Some((_, at, _)) => {
                    let words = shared.load4(e, at);
                    std::array::from_fn(|i| words[i])
                }
                // (The words a `prmt` takes first, held in registers.)
                None => std::array::from_fn(|i| match i % 2 {
                    0 => permute.held(e, e.i32(t[i])),
                    _ => e.i32(t[i]),
                }),
            });
            // A byte rule's offset and its two words (`ByteRule::words`: the corrections or
            // the subnormal images); moved: the offset less d exponent units in every byte,
            // the words from the table's last two or first two.
            let bytes = bytewise.map(|rule| match moved {
                Some((d, at, unit)) => {
                    let from = if rule.corrected(permute) { 8 } else { 0 };
                    let words = shared.load_words(e, e.addi(at, e.index(from)), 2);
                    let down = e.muli(d, splat(e, unit));
                    (e.subi(splat(e, rule.offset), down), [words[0], words[1]])
                }
                None => {
                    let [lo, hi] = rule.words(permute);
                    (
                        splat(e, rule.offset),
                        [permute.held(e, e.i32(lo)), e.i32(hi)],
                    )
                }
            });
            for h in 0..pieces {
                // Packed codes through a symmetric table: a stored word's eight at once.
                let eights: Option<Vec<[Value; 2]>> = nibbles
                    .filter(|_| route.packed && signed && permute.nibbles())
                    .map(|t| {
                        (0..2)
                            .map(|r| translate8(e, permute, &t, raw[(2 * h + r) as usize]))
                            .collect()
                    });
                let words: Vec<Value> = (0..4)
                    .map(|w| {
                        let first = h * 16 + w * 4;
                        if let Some(eights) = &eights {
                            return eights[(w / 2) as usize][(w % 2) as usize];
                        }
                        match nibbles {
                            // 4-bit codes: 4 at a time through byte permutes.
                            Some(t) if route.packed => {
                                let selectors = e.shrui(
                                    raw[(first / 8) as usize],
                                    e.i32((first % 8 * 4) as u32),
                                );
                                translate4(e, permute, &t, signed, selectors)
                            }
                            // One code per byte.
                            Some(t) => {
                                translate4_bytes(e, permute, &t, signed, raw[(first / 4) as usize])
                            }
                            // 5- and 6-bit codes: 4 at a time by word arithmetic, or one by
                            // one through a select chain.
                            None => match (bytewise, bytes) {
                                (Some(rule), Some(bytes)) => translate_bytes(
                                    e,
                                    permute,
                                    &rule,
                                    bytes,
                                    raw[(first / 4) as usize],
                                ),
                                _ => match table {
                                    Some(table) => (0..4).fold(e.i32(0), |acc, b| {
                                        let fp8 = translate(e, table, code(e, first + b));
                                        e.ori(acc, e.shli(fp8, e.i32(8 * b as u32)))
                                    }),
                                    // FP8 as stored (the f16 route).
                                    None => raw[(first / 4) as usize],
                                },
                            },
                        }
                    })
                    .collect();
                let ch = e.addi(e.muli(c.ch, e.index(pieces)), e.index(h));
                if route.f16 {
                    // 16 codes as f16 (times their block's scale, block-scaled): 32 bytes,
                    // two chunks of the row. E5M2 codes are the high bytes of their f16
                    // values (`f16_route`): one `prmt` a pair; E4M3 ones (FP8 as stored) are
                    // converted, a pair at a time; formats no FP8 type holds
                    // (`fields_plan`) have their fields moved into f16 patterns.
                    let scale = scales.map(|s| e.shuffle(s, s, e.f16_type(), &[h, h]));
                    let f16x2t = e.vector_type(2, e.f16_type());
                    let halves: Vec<Value> = words
                        .iter()
                        .flat_map(|&w| [(w, 0), (w, 1)])
                        .map(|(w, half)| {
                            // The f16 patterns of the stored codes' fields (no block
                            // scales on this route): two codes spread to the halves.
                            if let Some(fields) = side.operand.f16 {
                                let two = e.shrui(w, e.i32(16 * half));
                                let ty = side.operand.ty;
                                return codes::half_pattern_adjacent(e, ty, fields, two, false);
                            }
                            let pair = match side.operand.ty {
                                ScaledFormat::F8E5M2 => {
                                    e.llvm_bitcast(permute.widen_pair(e, w, half), f16x2t)
                                }
                                ty => {
                                    debug_assert_eq!(ty, ScaledFormat::F8E4M3);
                                    e4m3_pair(e, shared, e.shrui(w, e.i32(16 * half)))
                                }
                            };
                            let pair = match scale {
                                Some(scale) => e.mulf(pair, scale),
                                None => pair,
                            };
                            e.llvm_bitcast(pair, e.int_type(32))
                        })
                        .collect();
                    for (i, four) in halves.chunks(4).enumerate() {
                        let at = e.addi(e.muli(ch, e.index(2)), e.index(i as i64));
                        shared.store4(e, e.addi(tile, swizzled(e, c.r, at)), four);
                    }
                    continue;
                }
                // Split: the chunk goes to the half of its place in the 32 codes.
                let tile = match route.halves {
                    2 => e.addi(
                        tile,
                        e.muli(e.remui(ch, e.index(2)), e.index(route.tile_bytes())),
                    ),
                    _ => tile,
                };
                shared.store4(e, e.addi(tile, swizzled(e, c.r, ch)), &words);
            }
        });
    }
}
