//! Folded scales (`fold-scales=auto`, `Fold`): per 32 of K a promotion costs each thread 64
//! `mul` + 64 `fma`, twice the issue slots of the segment's instruction. Where every
//! operand whose scales change along K is FP4 (4-bit codes translated through byte
//! permutes) or FP6 (word arithmetic, `ByteRule`) with E8M0 32-blocks staged through shared
//! memory, the square and the skinny block (not with TMA; K static, whole stages of 128 or
//! not: gpt-oss's 2880 is 22.5) fold them into the codes instead:
//! block j of a row's stage is translated with the table moved `max - e_j` binades down
//! (each finite nonzero image replaced by the FP8 code of its value times `2^-(max - e_j)`,
//! normal or subnormal: exact up to 8 binades for E2M1 into E4M3; one 16-byte table per
//! distance, stored in shared memory before the loop and loaded per chunk), so that the
//! stage is one partial sum of 128 scaled once by the rows' and columns' `2^(max - 127)` (a
//! `mul` and an `fma` per accumulator: the rows and columns differ per element). Where all
//! of B's scales of the block are within reach of their largest, `top`, B is anchored
//! (`Anchor`): its blocks move `top - e_j` binades, so B's scale is one value for the whole
//! block, which goes into A's decoded row scales, and a promotion is one `fma` per
//! accumulator (MXFP4 at 8192^3, ptxas 12.9: the consumers' 225 instructions a stage become
//! 144). Whether the data allows is a property of the scales, and of the codes of blocks
//! past the reach: before its loop each thread scans the scales of the row it copies (every
//! stage's 4-byte word, up to 32 at a time; warp-specialized, the producers), B's rows'
//! warps reduce their codes' range, and `bar.red.or` gives the block one answer. A 4-bit
//! block more than the reach below its stage's largest still folds where its codes are all
//! ±0 (or NaN), which any scale and table keep: K padded with zeros under E8M0's least
//! scale (`Fold::magnitude`); the scan reads those blocks' codes (a round with such a
//! stage, again a stage at a time), and the folded loops clamp their distance to the
//! reach. B's blocks under E8M0's least code (2^-127) are read alike, and those of zeros
//! left out of its range (as are those past their stage's reach), so that a padded K still
//! anchors it. The block then runs the anchored
//! loop, the one by rows or the per-32 one (`Folded`: three loops, each draining its
//! instructions, so that no result in flight crosses the branch). A translating thread reads its chunk's row's scales from the copy
//! ring, which another thread filled: the scales therefore travel a stage ahead of the
//! codes (published by the barrier of the stage before, warp-specialized by a barrier of
//! the producers at the top of each stage; the first stage's stored by the scan).
//!
//! The skinny block (swap AB, `m64n<m>k32`) folds alike: its B rows are the instruction's
//! 64 rows, scanned and reduced by its last two warps; a split of K scans its own range of
//! stages, so the blocks of a cluster may take different loops (their partial sums are
//! added as they are). Folded, a decode stage is one wait and one `fma` per accumulator
//! instead of four waits each behind an instruction (MXFP4 at 16 x 8192 x 8192, ptxas 12.9:
//! 436 instructions a stage per 32 before, 320 anchored).

use lowp_formats::{ScaleDtype, ScaleLayout, ScaledFormat};
use melior::dialect::arith::CmpiPredicate;
use melior::ir::operation::OperationBuilder;
use melior::ir::{Attribute, Identifier, Type, Value};

use super::memory::{bits_clear, load, Memory, ScaleStage, Shared};
use super::stage::{emulated_scale_word, scale_address, scale_at, window_columns};
use super::{ceil, segment_shape, static_k, Side, BK};
use crate::code_words::{byte_rule, nibble_table, ByteRule};
use crate::expand_quantize::ceil_div;
use crate::ir::Emitter;
use crate::matrix_kernel::Kernel;

/// Block scales folded into the translated codes (`fold-scales`), so that a stage is one
/// partial sum of 128 promoted once instead of four of 32 promoted each: where every
/// operand whose scales change along K is translated four codes at a time (FP4 and 4-bit
/// customs by byte permutes, FP6 by a `ByteRule`) with E8M0 32-blocks staged through
/// shared memory. Block j of a row's stage has scale
/// `2^(e_j - 127)`; with `max` the largest of the stage's four, its codes are translated
/// with the table whose finite nonzero images are `d_j = max - e_j` binades smaller
/// (`Moves`: one per `d` up to the operand's reach, in shared memory), and the stage's
/// partial sums are scaled by the rows' and columns' `2^(max - 127)`. Whether every row of
/// a block's stages is within reach (and no scale is NaN) is known from the scales alone:
/// the block scans them first (`fold_scan`) and runs the folded loop or the per-32 one.
/// The square block, barrier pipeline or warp-specialized (whose producers scan, and whose
/// consumers take the branch the producers' `bar.red.or` gave them), and the skinny one,
/// split or not, whose copying threads translate and hold the rows' scales; not with TMA
/// (which loads operands used as stored: a folded operand is translated).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct Fold {
    /// Per operand whose scales change along K: its moved tables.
    pub(super) moves: [Option<Moves>; 2],
    /// Where the scan's warps leave the largest and smallest E8M0 code of B's rows
    /// (`Anchor`: two words per warp of B's rows), after the tables, where B is anchored.
    pub(super) scratch: i64,
    /// Whether B may be anchored (`Anchor`): `fold-scales=auto` (`rows`: folded by rows
    /// only), B is folded and its rows' scanning threads are whole warps (each warp
    /// reduces its rows' codes at once), at most the scratch's 4.
    pub(super) anchor: bool,
    /// Per folded operand: the bits of its stored words that are a code's magnitude
    /// (`magnitude_bits`), or 0 (none such, or codes a byte rule translates). A 32-block
    /// with none set (zeros, or NaN codes) gives the same products under any scale and
    /// through any moved table, so the scan lets its scale be out of reach of its stage's
    /// largest (`Folded::Rows`): K padded with blocks of zeros under E8M0's least scale,
    /// 2^-127, as quantizers that clamp `log2(0)` leave them, still folds.
    pub(super) magnitude: [u32; 2],
}

/// Bytes of the scan's scratch (`Fold::scratch`): two words for each of the (at most 4)
/// warps that scan B's 128 rows.
const SCRATCH: i64 = 32;

/// The most binades a table is moved down (`Moves`): 2^15 between a row's blocks in one
/// stage of 128.
const DEEPEST: usize = 15;

/// An operand's translation table moved down `d` binades, for `d` in `0..=reach`: each
/// finite nonzero image replaced by the code of the target (E4M3 / E5M2) whose value is
/// exactly the image's times `2^-d` (normal or subnormal; zeros, infinities and NaN stay).
/// `reach` is the largest `d` before some image has no exact code: 8 for E2M1 into E4M3
/// (0.5 x 2^-8 is E4M3's smallest subnormal). The tables live in shared memory at `at`, 16
/// bytes each, and a chunk's translation loads its `d`'s: 4-bit codes, `nibble_table`'s
/// four words; codes a `ByteRule` translates (FP6), the rule's subnormal images or its
/// corrections (two words of the four, `ByteRule::words`), its normal images moving by
/// `unit` (the target's exponent LSB) a binade, which keeps them exact while they stay
/// normal: E2M3 into E4M3 reaches 6, E3M2 4.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct Moves {
    pub(super) reach: i64,
    pub(super) at: i64,
    pub(super) tables: [[u32; 4]; DEEPEST + 1],
    pub(super) unit: u32,
}

impl Moves {
    /// Bytes of its tables.
    fn bytes(&self) -> i64 {
        16 * (self.reach + 1)
    }
}

impl Fold {
    /// The first byte after the tables and, where B may be anchored, the scratch.
    pub(super) fn end(&self) -> i64 {
        self.scratch + if self.anchor { SCRATCH } else { 0 }
    }
}

/// How a stage loop takes the block scales (`Fold`), which the block's scan chose: per
/// segment of 32 (`No`), folded with each row's stage moved from the largest of its four
/// scales (`Rows`: the partial sums scaled per row of A and per column of B, a `mul` and
/// an `fma` per accumulator), or folded with B's codes moved from one code for the whole
/// block (`Anchored`: A's rows as in `Rows`). Both take blocks out of reach of their
/// stage's largest (anchored, B's of the block's top), those of codes any scale keeps
/// (`Fold::magnitude`): their distance is clamped to the reach (a `min` per chunk), so that
/// their table is one of the moved ones.
#[derive(Clone, Copy)]
pub(super) enum Folded<'c, 'a> {
    No,
    Rows,
    Anchored(Anchor<'c, 'a>),
}

/// B's scales of a block all within reach of their largest (`top`, an `i32` E8M0 code):
/// every row's stage is translated with its tables moved `top - e_j` binades down, so every
/// partial sum of the block has B's scale `2^(top - 127)`. Where A is folded too, that
/// value goes into A's decoded row scales (`decode_scales`), and a promotion is one `fma`
/// per accumulator with its row's scale (64 a thread, not 64 `mul` and 64 `fma`), reading
/// no column scale; else the promotions multiply by it. The scan proves it from the scales
/// alone, over the whole of K, but for B's blocks whose codes it reads (under E8M0's least
/// code, or past their stage's reach): zeros are left out of the range (any distance,
/// clamped), and one under the least code that is not zeros spoils the anchor. Weights'
/// scales (B, N x K) rarely span more than E2M1-into-E4M3's 8 binades in a block's 128
/// rows.
#[derive(Clone, Copy)]
pub(super) struct Anchor<'c, 'a> {
    pub(super) top: Value<'c, 'a>,
}

impl<'c, 'a> Folded<'c, 'a> {
    /// Whether the scales are folded (a stage is one segment).
    pub(super) fn folds(self) -> bool {
        !matches!(self, Folded::No)
    }

    /// Whether a distance is clamped to the reach (folded: a block past it holds codes any
    /// table keeps).
    pub(super) fn clamps(self) -> bool {
        self.folds()
    }

    /// The code operand `x`'s rows are moved from where it is one for the block.
    pub(super) fn top(self, x: usize) -> Option<Value<'c, 'a>> {
        match self {
            Folded::Anchored(a) if x == 1 => Some(a.top),
            _ => None,
        }
    }
}

/// What a block's scan found (`fold_scan`): whether it folds (an `i1`, the same in every
/// thread) and, where B is folded, whether B's scales are all within reach of their
/// largest and no stage of A's rows has a block out of reach (an `i1`), with B's largest
/// code (`Anchor`).
pub(super) struct Scan<'c, 'a> {
    pub(super) folds: Value<'c, 'a>,
    pub(super) anchor: Option<(Value<'c, 'a>, Anchor<'c, 'a>)>,
}

impl<'c, 'a> Scan<'c, 'a> {
    /// `body` once per way the scan may choose (`Folded`), the one chosen run: folded,
    /// anchored where it found B anchored, else by rows; or per 32. Each yields `types`.
    pub(super) fn branches(
        &self,
        e: &Emitter<'c, 'a>,
        types: &[Type<'c>],
        body: impl Fn(&Emitter<'c, 'a>, Folded<'c, 'a>) -> Vec<Value<'c, 'a>>,
    ) -> Vec<Value<'c, 'a>> {
        e.if_else(
            self.folds,
            types,
            |e| match self.anchor {
                Some((anchored, anchor)) => e.if_else(
                    anchored,
                    types,
                    |e| body(e, Folded::Anchored(anchor)),
                    |e| body(e, Folded::Rows),
                ),
                None => body(e, Folded::Rows),
            },
            |e| body(e, Folded::No),
        )
    }
}

/// Image `v` (a `target` code) moved `d` binades down: itself where it does not move (zeros,
/// infinities, NaN), else the code of the same sign whose value is exactly `v`'s times
/// 2^-d, if there is one.
fn moved(target: ScaledFormat, v: u8, d: usize) -> Option<u8> {
    let x = target.decode(v);
    if !x.is_finite() || x == 0.0 {
        return Some(v);
    }
    let want = x * (-(d as f32)).exp2();
    (0..=255u8).find(|&m| m & 0x80 == v & 0x80 && target.decode(m) == want)
}

/// The bits of a stored word of `width`-bit codes (eight nibbles when `packed`, else four
/// codes one per byte, whose higher bits are not the code's) that are a code's magnitude,
/// all but its sign bit, where every code with none of them set is `invariant` (±0 or
/// NaN: the same product under any scale, kept by every moved table); 0 where one is not.
/// A 32-block whose stored words have none set may take any scale.
pub(super) fn magnitude_bits(width: u32, packed: bool, invariant: impl Fn(u32) -> bool) -> u32 {
    let field = (1u32 << (width - 1)) - 1;
    if !(0..1u32 << width).filter(|c| c & field == 0).all(invariant) {
        return 0;
    }
    let (lanes, lane) = if packed { (8, 4) } else { (4, 8) };
    (0..lanes).fold(0, |m, i| m | field << (lane * i))
}

/// The moved tables of a 4-bit table into `target` (`Moves`, placed at 0), `None` when not
/// even one binade down is exact.
pub(super) fn fold_tables(target: ScaledFormat, table: [u32; 4]) -> Option<Moves> {
    let moved = |v: u8, d: usize| moved(target, v, d);
    let moved_word = |w: u32, d: usize| -> Option<u32> {
        (0..4).try_fold(0u32, |acc, i| {
            moved((w >> (8 * i)) as u8, d).map(|m| acc | (m as u32) << (8 * i))
        })
    };
    let mut tables = [[0u32; 4]; DEEPEST + 1];
    let mut reach = 0;
    for (d, slot) in tables.iter_mut().enumerate() {
        let Some(words) = table
            .iter()
            .map(|&w| moved_word(w, d))
            .collect::<Option<Vec<u32>>>()
        else {
            break;
        };
        slot.copy_from_slice(&words);
        reach = d as i64;
    }
    (reach > 0).then_some(Moves {
        reach,
        at: 0,
        tables,
        unit: 0,
    })
}

/// The moved forms of a byte rule into `target` (`Moves`, placed at 0): for each `d` its
/// offset less `d` exponent units and its subnormal images moved, while that gives every
/// code exactly its image moved (`moved`), checked on all codes, and, where the rule has
/// corrections (`ByteRule::corrected`), the moved rule has too: each table holds the
/// subnormal images (words 0 and 1) and the corrections (2 and 3). `None` when not even
/// one binade down is exact.
pub(super) fn fold_rule(target: ScaledFormat, rule: &ByteRule) -> Option<Moves> {
    let unit = 1u32 << target.mant_bits();
    let mut tables = [[0u32; 4]; DEEPEST + 1];
    let mut reach = 0;
    for (d, slot) in tables.iter_mut().enumerate() {
        let Some(offset) = rule.offset.checked_sub(d as u32 * unit) else {
            break;
        };
        let mut sub = [0u32; 2];
        let subnormals: Option<()> = (0..1u32 << rule.mant).try_for_each(|m| {
            let image = (rule.sub[(m / 4) as usize] >> (8 * (m % 4))) as u8;
            sub[(m / 4) as usize] |= (moved(target, image, d)? as u32) << (8 * (m % 4));
            Some(())
        });
        if subnormals.is_none() {
            break;
        }
        let down = rule.moved(offset, sub);
        let exact = (0..1u32 << rule.bits).all(|c| {
            moved(target, rule.image(c) as u8, d).is_some_and(|m| m as u32 == down.image(c))
        });
        if !exact || rule.corrections.is_some() != down.corrections.is_some() {
            break;
        }
        let corrections = down.corrections.unwrap_or_default();
        *slot = [sub[0], sub[1], corrections[0], corrections[1]];
        reach = d as i64;
    }
    (reach > 0).then_some(Moves {
        reach,
        at: 0,
        tables,
        unit,
    })
}

/// The fold of `kn`'s scales in `mem`'s block (`Fold`), where it applies, with its tables
/// placed after `mem`'s bytes; `anchor`: B may be anchored where the block allows
/// (`Fold::anchor`).
pub(super) fn fold_plan(kn: &Kernel, mem: &Memory, anchor: bool) -> Option<Fold> {
    if mem.tma {
        return None;
    }
    if segment_shape(kn.plan).0 >= BK {
        return None;
    }
    let mut moves = [None, None];
    let mut magnitude = [0, 0];
    let mut at = (mem.bytes + 15) / 16 * 16;
    for (x, slot) in moves.iter_mut().enumerate() {
        let scaled = [&kn.ops.sa, &kn.ops.sb][x];
        match scaled.layout {
            ScaleLayout::Mx { .. } | ScaleLayout::Blockwise { .. } => {}
            // NVFP4's UE4M3 scales are no powers of two: its 16-blocks stay segments.
            ScaleLayout::Nvfp4 { .. } => return None,
            ScaleLayout::PerTensor | ScaleLayout::PerChannel => continue,
        }
        let st = mem.scales[x]?;
        let operand = [&kn.plan.a, &kn.plan.b][x];
        // (A window's bytes are put in place before the folds read them: `settle_scales`.)
        if scaled.dtype != ScaleDtype::UE8M0 || st.span != 32 || !mem.routes[x].staged {
            return None;
        }
        let table = operand.table.as_ref()?;
        let packed = mem.routes[x].packed;
        let mut m = match (nibble_table(table), byte_rule(table)) {
            (Some(nibbles), _) => {
                // (Through the images the kernel computes with.)
                magnitude[x] = magnitude_bits(operand.width, packed, |c| {
                    let v = operand
                        .ty
                        .decode((nibbles[c as usize / 4] >> (8 * (c % 4))) as u8);
                    v == 0.0 || v.is_nan()
                });
                fold_tables(operand.ty, nibbles)?
            }
            // (A byte rule's blocks stay within reach: its clamp, the offset's too, took
            // the square block's loop by rows for MXFP6 from 254 registers to a spill.)
            (None, Some(rule)) if !packed => fold_rule(operand.ty, &rule)?,
            _ => return None,
        };
        m.at = at;
        at += m.bytes();
        *slot = Some(m);
    }
    let rows = mem.tile.rows[1];
    let warps = rows % 32 == 0 && (mem.copiers - rows) % 32 == 0 && rows / 32 * 8 <= SCRATCH;
    moves.iter().any(Option::is_some).then_some(Fold {
        moves,
        scratch: at,
        anchor: anchor && moves[1].is_some() && warps,
        magnitude,
    })
}

/// Whether E8M0 codes from `least` to `most` (`i32`s: a row's four of a stage, or all of
/// an operand's in the block) fold within `reach` binades of `most` (none NaN), as an `i1`.
fn within<'c, 'a>(
    e: &Emitter<'c, 'a>,
    most: Value<'c, 'a>,
    least: Value<'c, 'a>,
    reach: i64,
) -> Value<'c, 'a> {
    e.andi(
        e.cmpi(CmpiPredicate::Ule, e.subi(most, least), e.i32(reach as u32)),
        e.cmpi(CmpiPredicate::Ne, most, e.i32(0xFF)),
    )
}

/// The four bytes of `word` (`i32`s).
fn bytes_of<'c, 'a>(e: &Emitter<'c, 'a>, word: Value<'c, 'a>) -> Vec<Value<'c, 'a>> {
    (0..4)
        .map(|i| e.andi(e.shrui(word, e.i32(8 * i)), e.i32(0xFF)))
        .collect()
}

/// The largest of the four bytes of `word` (an `i32`): a row's largest scale of a stage.
pub(super) fn byte_max<'c, 'a>(e: &Emitter<'c, 'a>, word: Value<'c, 'a>) -> Value<'c, 'a> {
    byte_range(e, word).0
}

/// The largest and the smallest of the four bytes of `word` (`i32`s).
pub(super) fn byte_range<'c, 'a>(
    e: &Emitter<'c, 'a>,
    word: Value<'c, 'a>,
) -> (Value<'c, 'a>, Value<'c, 'a>) {
    let bytes = bytes_of(e, word);
    (
        bytes[1..].iter().fold(bytes[0], |m, &b| e.maxsi(m, b)),
        bytes[1..].iter().fold(bytes[0], |m, &b| e.minsi(m, b)),
    )
}

/// Stages whose scales a scanning thread loads at once, at most (`fold_scan`): the loads
/// of a round are in flight together, so K = 8192 (64 stages) costs two round trips to
/// memory, which the prologue's copies overlap.
pub(super) const SCAN: i64 = 32;

/// Stage `s`'s staged scales of operand `x`'s block row `r` as stored, one word (four
/// E8M0), from global memory (in the emulation, byte by byte).
#[allow(clippy::too_many_arguments)]
pub(super) fn scale_word<'c, 'a>(
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
    if st.window {
        // Neither aligned nor, in the last stage, inside the row: byte by byte, those past
        // the row's last column read as the last (the word `settle_scales` leaves).
        let columns = window_columns(kn, st);
        let limit = e.subi(e.index(columns - 1), e.muli(s, e.index(BK / st.span)));
        let i8t = e.int_type(8);
        return (0..4).fold(e.i32(0), |word, b| {
            let at = e.addi(at, e.minui(e.index(b), limit));
            let byte = match shared {
                Shared::Gpu(_) => load(e, e.pointer(scale_address(e, scaled, at), 1), i8t, 1),
                Shared::Cpu(_) => {
                    let columns = e.dim(scaled.scales, 1);
                    let (sr, sc) = (e.divui(at, columns), e.remui(at, columns));
                    e.load(scaled.scales, &[sr, sc])
                }
            };
            e.ori(word, e.shli(e.extui(byte, i32t), e.i32(8 * b as u32)))
        });
    }
    match shared {
        Shared::Gpu(_) => load(e, e.pointer(scale_address(e, scaled, at), 1), i32t, 4),
        Shared::Cpu(_) => emulated_scale_word(e, scaled, at),
    }
}

/// What a scan found before any scale: no miss, nothing that spoils B's anchor and,
/// `ranged`, the empty range of codes (largest 0, smallest 255).
fn unscanned<'c, 'a>(e: &Emitter<'c, 'a>, ranged: bool) -> Vec<Value<'c, 'a>> {
    let mut found = vec![e.bool(false), e.bool(false)];
    if ranged {
        found.extend([e.i32(0), e.i32(0xFF)]);
    }
    found
}

/// Whether the stored words of 32-block `j` of operand `side`'s block row `r` in stage `s`
/// have none of `magnitude`'s bits set (`Fold::magnitude`: zeros or NaN codes), an `i1`:
/// its 16 bytes (`packed`) or 32 (`bits_clear`: from global memory, in the emulation from
/// the host's), the row clamped inside the operand as its scales' (`scale_cell`).
#[allow(clippy::too_many_arguments)]
fn block_invariant<'c, 'a>(
    e: &Emitter<'c, 'a>,
    shared: Shared<'c, 'a>,
    side: &Side<'c, 'a>,
    packed: bool,
    magnitude: u32,
    r: Value<'c, 'a>,
    s: Value<'c, 'a>,
    j: i64,
) -> Value<'c, 'a> {
    let row = side.row(e, r);
    let bytes = if packed { 16 } else { 32 };
    let first = e.addi(e.muli(s, e.index(4 * bytes)), e.index(j * bytes));
    let at = e.addi(e.muli(row, e.index(side.row_bytes)), first);
    let space = if matches!(shared, Shared::Gpu(_)) {
        1
    } else {
        0
    };
    bits_clear(e, space, side.bits, at, bytes, magnitude)
}

/// `redux.sync` of `value` (an `i32`) over the warp, by `kind` (`umax`, `umin`).
fn warp_reduce<'c, 'a>(e: &Emitter<'c, 'a>, kind: &str, value: Value<'c, 'a>) -> Value<'c, 'a> {
    let ctx = e.ctx();
    e.val(
        OperationBuilder::new("nvvm.redux.sync", e.loc())
            .add_operands(&[value, e.i32(u32::MAX)])
            .add_attributes(&[(
                Identifier::new(ctx, "kind"),
                Attribute::parse(ctx, &format!("#nvvm<redux_kind {kind}>")).expect("valid kind"),
            )])
            .add_results(&[e.int_type(32)])
            .build()
            .expect("valid nvvm.redux.sync"),
    )
}

/// `bar.red.or` of `bit` (an `i1`) over the block's threads: a barrier, and an `i32`, 1
/// where any thread's is set.
pub(super) fn block_or<'c, 'a>(e: &Emitter<'c, 'a>, bit: Value<'c, 'a>) -> Value<'c, 'a> {
    let i32t = e.int_type(32);
    e.val(
        OperationBuilder::new("nvvm.barrier", e.loc())
            .add_operands(&[e.extui(bit, i32t)])
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
    )
}

/// The block's scan of its scales (`Scan`): whether it folds (`Fold`), the same for every
/// thread: each row of a folded operand has every stage of `[first, last)` within reach
/// (`within`); and, where B is folded, whether all of B's scales of the block are within
/// reach of their largest, and that code (`Anchor`). On the GPU thread `tid` scans the row
/// whose scales it copies (`each_scale_row`), up to `SCAN` stages a round, and stores the
/// first stage's word into the copy ring (later stages' come by `cp.async` a stage ahead);
/// each warp of B's rows reduces their largest and smallest codes (`redux.sync`) into the
/// scratch, and `bar.red.or` publishes the words and gives every thread the block's
/// answer; then every thread reads the scratch. In the emulation, every row in turn, B's
/// anchored ones a warp at a time into the same scratch, read the same way.
/// Before that, the folded operands' moved tables (`Moves`) are stored where the
/// translations read them (operand x's by thread 32 x), which the same barrier publishes.
#[allow(clippy::too_many_arguments)]
pub(super) fn fold_scan<'c, 'a>(
    e: &Emitter<'c, 'a>,
    kn: &Kernel<'_, 'c, 'a>,
    mem: &Memory,
    fold: &Fold,
    shared: Shared<'c, 'a>,
    sides: &[Side<'c, 'a>; 2],
    tid: Value<'c, 'a>,
    first: Value<'c, 'a>,
    last: Value<'c, 'a>,
) -> Scan<'c, 'a> {
    let (zero, one, i1, i32t) = (e.index(0), e.index(1), e.int_type(1), e.int_type(32));
    let gpu = matches!(shared, Shared::Gpu(_));
    let end = e.subi(last, one);
    // Whether a row misses, whether a stage of it has blocks out of reach (of codes any
    // scale keeps), and the largest and smallest code of its scales (for an anchored
    // operand), in rounds of `SCAN` stages, or of K's stages where fewer (the last round's
    // past the end read the last stage again).
    let per_round = static_k(kn).map_or(SCAN, |k| SCAN.min(ceil(k, BK)));
    let anchored = fold.anchor;
    let scan_row = |e: &Emitter<'c, 'a>, x: usize, st: ScaleStage, reach: i64, r| {
        let ranged = anchored && x == 1;
        let magnitude = fold.magnitude[x];
        // (B's blocks under E8M0's least code are left out of its range where they are
        // zeros: `zeros`.)
        let zeros = ranged && magnitude != 0;
        let rounds = ceil_div(e, e.subi(last, first), e.index(per_round));
        e.for_loop(zero, rounds, one, &unscanned(e, ranged), |e, i, carried| {
            let s0 = e.addi(first, e.muli(i, e.index(per_round)));
            let stage = |e: &Emitter<'c, 'a>, j| e.minui(e.addi(s0, j), end);
            let mut acc = carried.to_vec();
            let mut out = e.bool(false);
            let (mut most_of, mut least_of) = (e.i32(0), e.i32(0xFF));
            for j in 0..per_round {
                let word = scale_word(e, kn, shared, x, st, &sides[x], r, stage(e, e.index(j)));
                let (most, least) = byte_range(e, word);
                out = e.ori(out, e.xori(within(e, most, least, reach), e.bool(true)));
                if ranged {
                    most_of = e.maxsi(most_of, most);
                    least_of = e.minsi(least_of, least);
                }
            }
            if ranged {
                acc[2] = e.maxsi(acc[2], most_of);
            }
            if magnitude == 0 {
                acc[0] = e.ori(acc[0], out);
                if ranged {
                    acc[3] = e.minsi(acc[3], least_of);
                }
                return acc;
            }
            // A stage of the round with a block out of reach (or, `zeros`, a block under
            // E8M0's least code), and no miss yet: the round's stages again, one at a time,
            // each such block read for codes any scale keeps (none of their words'
            // magnitude bits set), until the first miss (scales spread past the reach over
            // codes that are not zeros: the row goes per 32 after a load or two, not after
            // reading its codes of the round). A NaN scale misses. A block under the least
            // code within reach of its stage's largest whose codes are not all zeros spoils
            // B's anchor; the blocks read and found zeros are left out of B's range, the
            // round's taken again without them.
            let packed = mem.routes[x].packed;
            // `also` or, `zeros`, whether `least` is E8M0's least code.
            let or_least = |e: &Emitter<'c, 'a>, also: Value<'c, 'a>, least: Value<'c, 'a>| {
                if zeros {
                    e.ori(also, e.cmpi(CmpiPredicate::Eq, least, e.i32(0)))
                } else {
                    also
                }
            };
            // (Found: a miss, a spoiled anchor and, `zeros`, the round's least code of B but
            // its blocks read and found zeros.)
            let unfound = |e: &Emitter<'c, 'a>| {
                let mut found = vec![e.bool(false), e.bool(false)];
                found.extend(zeros.then_some(least_of));
                found
            };
            let types: &[Type<'c>] = if zeros { &[i1, i1, i32t] } else { &[i1, i1] };
            let not = |e: &Emitter<'c, 'a>, v: Value<'c, 'a>| e.xori(v, e.bool(true));
            let found = e.if_else(
                e.andi(or_least(e, out, least_of), not(e, acc[0])),
                types,
                |e| {
                    let count = e.index(per_round);
                    let mut inits = vec![e.bool(false), e.bool(false)];
                    inits.extend(zeros.then(|| e.i32(0xFF)));
                    e.for_loop(zero, count, one, &inits, |e, j, found| {
                        let s = stage(e, j);
                        let word = scale_word(e, kn, shared, x, st, &sides[x], r, s);
                        let (most, least) = byte_range(e, word);
                        let far = not(e, within(e, most, least, reach));
                        let look = e.andi(not(e, found[0]), or_least(e, far, least));
                        // (Seen: a miss, a spoiled anchor and, `zeros`, the least code of the
                        // stage's blocks but those read and found zeros.)
                        let seen = e.if_else(
                            look,
                            types,
                            |e| {
                                let mut missed = e.cmpi(CmpiPredicate::Eq, most, e.i32(0xFF));
                                // (Of the blocks so far, where `zeros`.)
                                let mut spoils: Option<Value<'c, 'a>> = None;
                                let mut kept: Option<Value<'c, 'a>> = None;
                                // (The last stage's blocks past K: zeros as copied, their
                                // bytes the last inside's, never read.)
                                let k0 = (!sides[x].whole_k).then(|| e.muli(s, e.index(BK)));
                                for (b, e_b) in bytes_of(e, word).into_iter().enumerate() {
                                    let distance = e.subi(most, e_b);
                                    let past =
                                        e.cmpi(CmpiPredicate::Ugt, distance, e.i32(reach as u32));
                                    let inside = k0.map(|k0| {
                                        let kb = e.addi(k0, e.index(b as i64 * st.span));
                                        e.cmpi(CmpiPredicate::Ult, kb, kn.ops.k)
                                    });
                                    let read = or_least(e, past, e_b);
                                    let read = inside.map_or(read, |i| e.andi(read, i));
                                    let keeps = e.if_else(
                                        read,
                                        &[i1],
                                        |e| {
                                            let b = b as i64;
                                            let side = &sides[x];
                                            let keeps = block_invariant(
                                                e, shared, side, packed, magnitude, r, s, b,
                                            );
                                            vec![keeps]
                                        },
                                        |e| vec![e.bool(true)],
                                    )[0];
                                    let lost = not(e, keeps);
                                    missed = e.ori(missed, e.andi(past, lost));
                                    if zeros {
                                        // (Past the reach too, it misses.)
                                        spoils = Some(spoils.map_or(lost, |v| e.ori(v, lost)));
                                        let left_out = e.andi(read, keeps);
                                        let left_out =
                                            inside.map_or(left_out, |i| e.ori(left_out, not(e, i)));
                                        let code = e.select(left_out, e.i32(0xFF), e_b);
                                        kept = Some(kept.map_or(code, |v| e.minsi(v, code)));
                                    }
                                }
                                let mut seen = vec![missed, spoils.unwrap_or(e.bool(false))];
                                seen.extend(kept);
                                seen
                            },
                            |e| {
                                let mut seen = vec![e.bool(false), e.bool(false)];
                                seen.extend(zeros.then_some(least));
                                seen
                            },
                        );
                        let mut next = vec![e.ori(found[0], seen[0]), e.ori(found[1], seen[1])];
                        if zeros {
                            next.push(e.minsi(found[2], seen[2]));
                        }
                        next
                    })
                },
                unfound,
            );
            acc[0] = e.ori(acc[0], found[0]);
            acc[1] = e.ori(acc[1], found[1]);
            if zeros {
                acc[3] = e.minsi(acc[3], found[2]);
            }
            acc
        })
    };
    for (x, moves) in fold.moves.iter().enumerate() {
        let Some(moves) = moves else { continue };
        let store = |e: &Emitter<'c, 'a>| {
            for (d, table) in moves.tables[..=moves.reach as usize].iter().enumerate() {
                let words = table.map(|w| e.i32(w));
                shared.store4(e, e.index(moves.at + 16 * d as i64), &words);
            }
        };
        if gpu {
            e.if_then(
                e.cmpi(CmpiPredicate::Eq, tid, e.index(32 * x as i64)),
                store,
            );
        } else {
            store(e);
        }
    }
    let (mut missed, mut spoiled) = (e.bool(false), e.bool(false));
    // Each operand's scales, tile rows and moves, by the operand's index.
    #[allow(clippy::needless_range_loop)]
    for x in 0..2 {
        let (Some(st), Some(Moves { reach, .. })) = (mem.scales[x], fold.moves[x]) else {
            continue;
        };
        let rows = mem.tile.rows[x];
        let ranged = anchored && x == 1;
        let scanned = if gpu {
            let from = if x == 0 { 0 } else { mem.copiers - rows };
            let mine = e.andi(
                e.cmpi(CmpiPredicate::Uge, tid, e.index(from)),
                e.cmpi(CmpiPredicate::Ult, tid, e.index(from + rows)),
            );
            let types = if ranged {
                vec![i1, i1, i32t, i32t]
            } else {
                vec![i1, i1]
            };
            let scanned = e.if_else(
                mine,
                &types,
                |e| {
                    let r = e.subi(tid, e.index(from));
                    // (A split with no stages reads its last stage's instead: in bounds.)
                    let word = scale_word(e, kn, shared, x, st, &sides[x], r, e.minui(first, end));
                    shared.store_words(e, st.copied(e, mem.stages, first, r), &[word]);
                    scan_row(e, x, st, reach, r)
                },
                |e| unscanned(e, ranged),
            );
            if ranged {
                // Every thread of the block's warps (B's rows are whole warps): lane 0 of
                // each of B's leaves its warp's range.
                let top = warp_reduce(e, "umax", scanned[2]);
                let bottom = warp_reduce(e, "umin", scanned[3]);
                let lane0 = e.cmpi(CmpiPredicate::Eq, e.remui(tid, e.index(32)), zero);
                e.if_then(e.andi(mine, lane0), |e| {
                    let warp = e.divui(e.subi(tid, e.index(from)), e.index(32));
                    let at = e.addi(e.index(fold.scratch), e.muli(warp, e.index(8)));
                    shared.store_words(e, at, &[top, bottom]);
                });
            }
            [scanned[0], scanned[1]]
        } else {
            // Row by row; B's anchored rows a warp's 32 at a time, each warp's range left in
            // the scratch as on the GPU.
            let warp = if ranged { 32 } else { rows };
            let groups = e.index(rows / warp);
            let inits = [e.bool(false), e.bool(false)];
            let scanned = e.for_loop(zero, groups, one, &inits, |e, w, carried| {
                let from = e.muli(w, e.index(warp));
                let inits = unscanned(e, ranged);
                let end = e.addi(from, e.index(warp));
                let scanned = e.for_loop(from, end, one, &inits, |e, r, carried| {
                    let row = scan_row(e, x, st, reach, r);
                    let mut acc = vec![e.ori(carried[0], row[0]), e.ori(carried[1], row[1])];
                    if ranged {
                        acc.extend([e.maxsi(carried[2], row[2]), e.minsi(carried[3], row[3])]);
                    }
                    acc
                });
                if ranged {
                    let at = e.addi(e.index(fold.scratch), e.muli(w, e.index(8)));
                    shared.store_words(e, at, &[scanned[2], scanned[3]]);
                }
                vec![e.ori(carried[0], scanned[0]), e.ori(carried[1], scanned[1])]
            });
            [scanned[0], scanned[1]]
        };
        missed = e.ori(missed, scanned[0]);
        spoiled = e.ori(spoiled, scanned[1]);
    }
    let folds = if gpu {
        e.cmpi(CmpiPredicate::Eq, block_or(e, missed), e.i32(0))
    } else {
        e.xori(missed, e.bool(true))
    };
    // The warps' ranges of B's rows (on the GPU published by the barrier).
    let range = anchored.then(|| {
        let warps = mem.tile.rows[1] / 32;
        let words: Vec<Value> = (0..(2 * warps + 3) / 4)
            .flat_map(|q| shared.load4(e, e.index(fold.scratch + 16 * q)))
            .collect();
        let top = (1..warps as usize).fold(words[0], |m, w| e.maxsi(m, words[2 * w]));
        let bottom = (1..warps as usize).fold(words[1], |m, w| e.minsi(m, words[2 * w + 1]));
        (top, bottom)
    });
    // (B's range leaves out its blocks of zeros under E8M0's least code, which the
    // anchored loop clamps as the one by rows does; one of other codes spoils it.)
    let anchor = range.map(|(top, bottom)| {
        let reach = fold.moves[1].expect("an anchored operand is folded").reach;
        let within = within(e, top, bottom, reach);
        let kept = if fold.magnitude[1] == 0 {
            e.bool(true)
        } else if gpu {
            e.cmpi(CmpiPredicate::Eq, block_or(e, spoiled), e.i32(0))
        } else {
            e.xori(spoiled, e.bool(true))
        };
        (e.andi(within, kept), Anchor { top })
    });
    Scan { folds, anchor }
}
