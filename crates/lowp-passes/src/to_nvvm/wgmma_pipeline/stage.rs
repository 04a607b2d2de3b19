//! A stage's way into shared memory: each thread's `cp.async` of its 16-byte chunks (and,
//! where block scales are staged, of its block rows' scale bytes), then the translation of
//! a staged operand's codes to FP8 by the thread that copied them (4-bit codes four at a
//! time with three `prmt` byte permutes, FP6 four at a time by word arithmetic, other
//! wider codes through a select chain; folded, with the table moved by the chunk's
//! scale), and the staged scales decoded to f32 once per block for the promotions
//! (`staged_readers`).

use melior::dialect::arith::CmpiPredicate;
use melior::ir::operation::OperationBuilder;
use melior::ir::{Attribute, Identifier, Value};

use super::fold::byte_max;
use super::memory::{each_chunk, pointer, swizzled, Memory, ScaleStage, Shared};
use super::{Side, BK};
use crate::expand_quantize::Scaled;
use crate::ir::Emitter;
use crate::matrix_kernel::{translate, Kernel, ScaleReader, Table};
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

/// A table of 4-bit codes (16 images) as four little-endian words, 4 images each.
pub(super) fn nibble_table(table: &Table) -> Option<[u32; 4]> {
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
pub(super) fn translate4<'c, 'a>(
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

/// A table of 5- or 6-bit codes (one per byte, the top bit the sign) that word arithmetic
/// applies to four codes at once (`translate_bytes`) instead of a select chain per code:
/// the sign moved to bit 7; a normal code's magnitude shifted left by `shift` (the wider
/// mantissa) plus `offset` (the exponent field's other bias); a subnormal one's image (its
/// exponent field 0) picked by its `mant` mantissa bits from `sub` (a byte permute over
/// the images of the `2^mant` subnormal magnitudes). FP6 into E4M3: E2M3 shift 0, offset
/// 0x30; E3M2 shift 1, offset 0x20.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct ByteRule {
    pub(super) bits: u32,
    pub(super) mant: u32,
    pub(super) shift: u32,
    pub(super) offset: u32,
    pub(super) sub: [u32; 2],
}

impl ByteRule {
    /// The image of `code`: what `translate_bytes` computes in its byte.
    pub(super) fn image(&self, code: u32) -> u32 {
        let half = 1 << (self.bits - 1);
        let magnitude = code & (half - 1);
        let sign = (code & half) << (8 - self.bits);
        let body = if magnitude >> self.mant != 0 {
            (magnitude << self.shift) + self.offset
        } else {
            (self.sub[(magnitude / 4) as usize] >> (8 * (magnitude % 4))) & 0xFF
        };
        body | sign
    }
}

/// The byte rule that gives `table`'s image for every code, where one does: each mantissa
/// width (0-3 bits) and shift (0-3) is tried, the offset taken from the first normal code,
/// and the rule checked on all codes (so no format's fields are trusted, only the table).
pub(super) fn byte_rule(table: &Table) -> Option<ByteRule> {
    let Table::Words(words) = table else {
        return None;
    };
    let bits = match words.len() {
        4 => 5,
        8 => 6,
        _ => return None,
    };
    let image = |c: u32| (words[(c / 8) as usize] >> (8 * (c % 8))) as u32 & 0xFF;
    let half = 1u32 << (bits - 1);
    let rules = (0..=3).flat_map(|mant| (0..=3).map(move |shift| (mant, shift)));
    rules.into_iter().find_map(|(mant, shift)| {
        let first = 1u32 << mant;
        // No carry between bytes: every shifted magnitude plus the offset stays in its byte.
        let offset = image(first).checked_sub(first << shift)?;
        if first >= half || ((half - 1) << shift) + offset > 0xFF {
            return None;
        }
        let mut sub = [0u32; 2];
        for m in 0..first {
            sub[(m / 4) as usize] |= image(m) << (8 * (m % 4));
        }
        let rule = ByteRule {
            bits,
            mant,
            shift,
            offset,
            sub,
        };
        (0..2 * half)
            .all(|c| rule.image(c) == image(c))
            .then_some(rule)
    })
}

/// `byte` in each of a word's four bytes.
fn splat<'c, 'a>(e: &Emitter<'c, 'a>, byte: u32) -> Value<'c, 'a> {
    e.i32(byte * 0x0101_0101)
}

/// The images of the four codes in `word` (one per byte) by `rule`, image i in byte i, with
/// the rule's offset (in every byte) and subnormal images given as values: `rule`'s own, or
/// (folded scales) those of its table moved down (`Moves`).
pub(super) fn translate_bytes<'c, 'a>(
    e: &Emitter<'c, 'a>,
    shared: Shared<'c, 'a>,
    rule: &ByteRule,
    (offsets, sub): (Value<'c, 'a>, [Value<'c, 'a>; 2]),
    word: Value<'c, 'a>,
) -> Value<'c, 'a> {
    let half = 1u32 << (rule.bits - 1);
    let low = (1u32 << rule.mant) - 1;
    let magnitude = e.andi(word, splat(e, half - 1));
    let normal = e.addi(e.shli(magnitude, e.i32(rule.shift)), offsets);
    // Subnormal images: the mantissa bits as selectors, byte i's in nibble i.
    let m = e.andi(word, splat(e, low));
    let pairs = e.ori(m, e.shrui(m, e.i32(4)));
    let selectors = shared.permute(e, pairs, e.i32(0), e.i32(0x20));
    let sub = shared.permute(e, sub[0], sub[1], selectors);
    // 0xFF in the bytes of normal codes: bit 7 of exponent bits + 0x80 - 2^mant is set
    // where the exponent field is not 0, and the permute's sign mode spreads it.
    let exponent = e.andi(word, splat(e, (half - 1) & !low));
    let flag = e.addi(exponent, splat(e, 0x80 - (1 << rule.mant)));
    let normals = shared.permute(e, flag, e.i32(0), e.i32(0xBA98));
    let body = e.ori(
        e.andi(normal, normals),
        e.andi(sub, e.xori(normals, e.i32(u32::MAX))),
    );
    let sign = e.shli(e.andi(word, splat(e, half)), e.i32(8 - rule.bits));
    e.ori(body, sign)
}

/// Issue thread `tid`'s `cp.async` of the staged scales of stage `s`: the row's stage bytes
/// by the row's thread (`each_scale_row`).
pub(super) fn copy_scales<'c, 'a>(
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
pub(super) fn copy_stage<'c, 'a>(
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

/// The byte offset in operand `side`'s scales (as stored) of its block row `r`'s first
/// scale of the stage at `k0`: rows past the operand read the last one (never used).
pub(super) fn scale_at<'c, 'a>(
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
pub(super) fn decode_scales<'c, 'a>(
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
        if fold && mem.fold.is_some_and(|f| f.moves[x].is_some()) {
            let value = scaled.decode_stored(e, byte_max(e, words[0]));
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
pub(super) fn staged_readers<'c, 'a, 'm>(
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
pub(super) fn translate_stage<'c, 'a>(
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
        let moves = mem.fold.filter(|_| fold).and_then(|f| f.moves[x]);
        let bytewise = byte_rule(table).filter(|_| !route.packed);
        each_chunk(e, route, mem.copiers, tid, side, k, k0, |e, c| {
            let raw = shared.load4(e, e.addi(copied, c.offset));
            // Code `n` of the chunk (in K order).
            let code = |e: &Emitter<'c, 'a>, n: i64| {
                let (bits, per_word) = if route.packed { (4, 8) } else { (8, 4) };
                let word = raw[(n / per_word) as usize];
                let shift = e.i32(((n % per_word) * bits) as u32);
                e.andi(e.shrui(word, shift), e.i32((1 << bits) - 1))
            };
            let pieces = route.codes() / 16;
            // Folded: the chunk's 32-block j of the row goes d = max - e_j binades down, and
            // its table is the 16 bytes at `moves.at + 16 d`.
            let moved = moves.map(|moves| {
                let st = mem.scales[x].expect("a folded operand's scales are staged");
                let word = shared.load_words(e, st.copied(e, mem.stages, s, c.r), 1)[0];
                let most = byte_max(e, word);
                let j = e.divui(e.muli(c.ch, e.index(route.codes())), e.index(st.span));
                let at = e.muli(e.index_castui(j, i32t), e.i32(8));
                let d = e.subi(most, e.andi(e.shrui(word, at), e.i32(0xFF)));
                let index = e.index_castui(d, e.index_type());
                let at = e.addi(e.index(moves.at), e.muli(index, e.index(16)));
                (d, at, moves.unit)
            });
            let nibbles = nibble_table(table).map(|t| match moved {
                Some((_, at, _)) => {
                    let words = shared.load4(e, at);
                    std::array::from_fn(|i| words[i])
                }
                None => t.map(|w| e.i32(w)),
            });
            // A byte rule's offset and subnormal images; moved: the offset less d exponent
            // units in every byte, the subnormal images from the table.
            let bytes = bytewise.map(|rule| match moved {
                Some((d, at, unit)) => {
                    let sub = shared.load_words(e, at, 2);
                    let down = e.muli(d, splat(e, unit));
                    (e.subi(splat(e, rule.offset), down), [sub[0], sub[1]])
                }
                None => (splat(e, rule.offset), rule.sub.map(|w| e.i32(w))),
            });
            for h in 0..pieces {
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
                            // 5- and 6-bit codes: 4 at a time by word arithmetic, or one by
                            // one through a select chain.
                            None => match (bytewise, bytes) {
                                (Some(rule), Some(bytes)) => translate_bytes(
                                    e,
                                    shared,
                                    &rule,
                                    bytes,
                                    raw[(first / 4) as usize],
                                ),
                                _ => (0..4).fold(e.i32(0), |acc, b| {
                                    let fp8 = translate(e, table, code(e, first + b));
                                    e.ori(acc, e.shli(fp8, e.i32(8 * b as u32)))
                                }),
                            },
                        }
                    })
                    .collect();
                let ch = e.addi(e.muli(c.ch, e.index(pieces)), e.index(h));
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
