//! Folded scales (`fold-scales=auto`, `Fold`): per 32 of K a promotion costs each thread 64
//! `mul` + 64 `fma`, twice the issue slots of the segment's instruction. Where every
//! operand whose scales change along K is FP4 (4-bit codes translated through byte
//! permutes) or FP6 (word arithmetic, `ByteRule`) with E8M0 32-blocks staged through shared
//! memory, the square block (not with TMA) folds them into the codes instead: block j of a
//! row's stage is translated with the table moved `max - e_j` binades down (each finite
//! nonzero image replaced by the FP8 code of its value times `2^-(max - e_j)`, normal or
//! subnormal: exact up to 8 binades for E2M1 into E4M3; one 16-byte table per distance,
//! stored in shared memory before the loop and loaded per chunk), so that the stage is one
//! partial sum of 128 scaled once by the rows' and columns' `2^(max - 127)`.
//! Whether the data allows is a property of the scales alone: before its loop each thread
//! scans the scales of the row it copies (every stage's 4-byte word, up to 32 at a time;
//! warp-specialized, the producers) and `bar.red.or` gives the block one answer; the block
//! then runs the folded loop or the per-32 one (two loops, each draining its instructions,
//! so that no result in flight crosses the branch). A translating thread reads its chunk's
//! row's scales from the copy ring, which another thread filled: the scales therefore
//! travel a stage ahead of the codes (published by the barrier of the stage before,
//! warp-specialized by a barrier of the producers at the top of each stage; the first
//! stage's stored by the scan).

use lowp_formats::{ScaleDtype, ScaleLayout, ScaledFormat};
use melior::dialect::arith::CmpiPredicate;
use melior::ir::operation::OperationBuilder;
use melior::ir::{Attribute, Identifier, Value};

use super::memory::{alignment, Memory, ScaleStage, Shared};
use super::stage::{scale_address, scale_at};
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
/// consumers take the branch the producers' `bar.red.or` gave them), whose copying threads
/// translate and hold the rows' scales; not with TMA (which loads operands used as stored:
/// a folded operand is translated).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct Fold {
    /// Per operand whose scales change along K: its moved tables.
    pub(super) moves: [Option<Moves>; 2],
}

/// The most binades a table is moved down (`Moves`): 2^15 between a row's blocks in one
/// stage of 128.
const DEEPEST: usize = 15;

/// An operand's translation table moved down `d` binades, for `d` in `0..=reach`: each
/// finite nonzero image replaced by the code of the target (E4M3 / E5M2) whose value is
/// exactly the image's times `2^-d` (normal or subnormal; zeros, infinities and NaN stay).
/// `reach` is the largest `d` before some image has no exact code: 8 for E2M1 into E4M3
/// (0.5 x 2^-8 is E4M3's smallest subnormal). The tables live in shared memory at `at`, 16
/// bytes each, and a chunk's translation loads its `d`'s: 4-bit codes, `nibble_table`'s
/// four words; codes a `ByteRule` translates (FP6), the rule's subnormal images (two words),
/// its normal images moving by `unit` (the target's exponent LSB) a binade, which keeps
/// them exact while they stay normal: E2M3 into E4M3 reaches 6, E3M2 4.
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
    /// The first byte after the tables.
    pub(super) fn end(&self) -> i64 {
        self.moves
            .iter()
            .flatten()
            .map(|m| m.at + m.bytes())
            .max()
            .unwrap_or(0)
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
/// code exactly its image moved (`moved`), checked on all codes; `None` when not even one
/// binade down is exact.
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
        let down = ByteRule {
            offset,
            sub,
            ..*rule
        };
        let exact = (0..1u32 << rule.bits).all(|c| {
            moved(target, rule.image(c) as u8, d).is_some_and(|m| m as u32 == down.image(c))
        });
        if !exact {
            break;
        }
        *slot = [sub[0], sub[1], 0, 0];
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
/// placed after `mem`'s bytes.
pub(super) fn fold_plan(kn: &Kernel, mem: &Memory) -> Option<Fold> {
    let tile = mem.tile;
    if mem.tma || tile.swapped || tile.splits > 1 {
        return None;
    }
    if segment_shape(kn.plan).0 >= BK {
        return None;
    }
    let mut moves = [None, None];
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
        // (A window's bytes are put in place when decoded; the folds read them as copied.)
        if scaled.dtype != ScaleDtype::UE8M0 || st.span != 32 || st.window || !mem.routes[x].staged
        {
            return None;
        }
        let table = operand.table.as_ref()?;
        let mut m = match (nibble_table(table), byte_rule(table)) {
            (Some(nibbles), _) => fold_tables(operand.ty, nibbles)?,
            (None, Some(rule)) if !mem.routes[x].packed => fold_rule(operand.ty, &rule)?,
            _ => return None,
        };
        m.at = at;
        at += m.bytes();
        *slot = Some(m);
    }
    moves.iter().any(Option::is_some).then_some(Fold { moves })
}

/// Whether the four E8M0 scales in `word` (a row's stage) fold within `reach` binades of
/// their maximum (none NaN), as an `i1`.
pub(super) fn fold_fits<'c, 'a>(
    e: &Emitter<'c, 'a>,
    word: Value<'c, 'a>,
    reach: i64,
) -> Value<'c, 'a> {
    let bytes = bytes_of(e, word);
    let most = bytes[1..].iter().fold(bytes[0], |m, &b| e.maxsi(m, b));
    let least = bytes[1..].iter().fold(bytes[0], |m, &b| e.minsi(m, b));
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
    let bytes = bytes_of(e, word);
    bytes[1..].iter().fold(bytes[0], |m, &b| e.maxsi(m, b))
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
    match shared {
        Shared::Gpu(_) => {
            let p = e.pointer(scale_address(e, scaled, at), 1);
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
/// and gives every thread the block's answer. In the emulation, every row in turn. Before
/// that, the folded operands' moved tables (`Moves`) are stored where the translations read
/// them (operand x's by thread 32 x), which the same barrier publishes.
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
    let mut missed = e.bool(false);
    for x in 0..2 {
        let (Some(st), Some(Moves { reach, .. })) = (mem.scales[x], fold.moves[x]) else {
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
