//! The GEMV form of `lowp-to-loops` on x86 dot-product instructions: the GEMV form
//! (`gemv.rs`: few rows of A, each output a dot product along K, B's rows read as stored)
//! where each lane of an instruction adds several products at once:
//! - bytes (`Products::Bytes`): the byte kernel's formats (`dot=i8|vnni` where both
//!   formats are small integers, `lowp_formats::IntEmbedding`), each `vpdpbusd` (else
//!   `pmaddubsw` and `pmaddwd`) adding four products into each i32 lane;
//! - bf16 pairs (`Products::Bf16`): formats whose values and products are exact normal
//!   bf16 / f32 numbers (`bf16-dot=true`, `bf16_pairs`: FP8, FP6 E3M2, FNUZ), each
//!   `vdpbf16ps` adding two products into each f32 lane.
//!
//! Where the f32 GEMV form decodes each code to f32 and spends a lane of an FMA on it, B's
//! codes are looked up a vector at a time into the instruction's operand, and A's values
//! are laid out once in the order B's arrive, so B is never shuffled.
//!
//! Bytes: B's codes become bytes by one table lookup a vector (`pshufb`; each code's
//! integer plus B's offset `mb`, so unsigned): 64 products an instruction at 16 lanes.
//! A's integers (signed bytes) in B's order:
//! - packed FP4: a chunk of `8 lanes` k is one load of `4 lanes` bytes of a row of B, its
//!   low nibbles (even k) and high nibbles (odd k) two vectors, A's bytes of the chunk two
//!   vectors of its even and of its odd k; lane j of each holds k `8j .. 8j + 8` of the
//!   chunk;
//! - one code a byte: a chunk of `4 lanes` k, one vector, lane j holding k `4j .. 4j + 4`.
//!
//! A's bytes are made the same way, a chunk at a time (A's codes in B's order: nibbles of
//! packed codes split or interleaved, byte codes gathered, then looked up).
//! B's offset adds `mb` times A's integers to each lane's sum: a term of A alone, so each
//! lane starts from minus it (`-mb` times the sum of A's integers of the lane's k in the
//! interval: a dot product of A's bytes with ones), and ends at the exact integer sum of
//! its products, converted to f32 (exact: the intervals are short enough) and times the
//! formats' unit `2^-(shift_a + shift_b)`.
//!
//! bf16 pairs: a chunk of `2 lanes` k, B's codes (in k order, packed or not) widened to
//! 16-bit lanes and looked up as their values' bf16 patterns (`vpermi2w`, 64 patterns a
//! lookup at 16 lanes; where the code's top bit is the sign of every value, as in OCP
//! FP8, a table of the magnitudes and the sign bit moved in: E4M3 takes two lookups and a
//! select), lane j holding k `2j, 2j + 1`; A's patterns made alike, in k order. Each
//! product is exact (significands of at most 8 bits) and no input, product or sum is
//! subnormal, so the instruction's DAZ / FTZ never acts; it adds a pair's two products
//! in its own order. The f32 sums run along all of K where no scale changes along it.
//!
//! Each interval's f32 sums join the lanes' f32 totals times the segment's scales
//! `sa * sb`:
//! - segments shorter than a chunk (MX's 32, NVFP4's 16): one chunk an interval, holding
//!   `chunk / seg` segments of `seg / g` lanes each (`g`: k a lane); B's scales of
//!   `lanes` segments (a group of chunks: four of packed MXFP4's) one vector load where
//!   B's scale block is the segment, decoded lane by lane, each chunk's spread over its
//!   lanes by a shuffle, times A's scales of the lanes;
//! - segments of whole chunks (blockwise 128): a segment an interval, its sums carried
//!   through its chunks, and one scalar `sa * sb`; where a segment is one chunk (MX at 16
//!   lanes of bf16 pairs) and B's scale block is the segment, `lanes` chunks at a time:
//!   each row of B's scales of them one vector load, decoded, times A's, stored in a
//!   scratch buffer of the parallel iteration, each chunk's FMA taking its product by a
//!   broadcast from it;
//! - no segments (per-tensor, per-channel): bytes in intervals as long as each lane's sum
//!   stays within f32's integers, bf16 pairs in one; no scales (the write-back applies
//!   them), the unit at the end.
//!
//! On bf16 pairs with both scales E8M0 (MX) and 4 rows or more, the scales fold into the
//! patterns instead (`pair_folds`): each chunk's exponent added to A's patterns once and to
//! B's as they are looked up, exact where the scales lie within `2^-47 ..= 2^32` (or scale
//! chunks of ±0 codes: `to_loops::scale_folds_if`), and the sums run along the K block as
//! with no segments. A group's K block whose scales do not fold (or A's) takes the
//! segments above, a few of A's rows at a time.
//!
//! The k past the last whole chunk are summed one at a time into lane 0.
//!
//! K is taken in blocks whose values of A (all its rows) fit 32 KiB: each parallel
//! iteration takes 64 rows of B a block at a time, so a block of A is read from L1 by
//! every group of rows, and each group's lane sums of a block are added into `w`. Without
//! blocks A's rows (M x K bytes, twice that as bf16) were read from L2 once per group of
//! rows of B, which held M = 8 at 2-4x M = 1's time.
//!
//! A group holds the sums of each of A's rows with each of its rows of B in registers.
//! Where A's rows would leave room for one row of B only (past ~11 rows on bf16 pairs, ~7
//! on bytes, at 16 lanes), they are taken in pieces that leave room for two (`pieces`),
//! each passing over the group's chunks in turn. Where that pays (bf16 pairs' lookups of
//! several instructions; bytes with scales along K, or past 16 rows) B's vectors of the
//! group's K block are looked up once into a buffer of the parallel iteration, and each
//! piece loads them from L1 (`staged`: with the lookup's registers free, up to four rows
//! of B a group, as many pieces as that leaves). Three or more pieces of one size are a
//! loop over them.
//!
//! ```mlir
//! // A's integers as bytes in B's order; -mb x A's lane sums; A's scales of each lane
//! scf.parallel (%s) = ... {                           // 64 rows of B
//! scf.for %kb = ... {                                 // K blocks
//! scf.for %q = ... {                                  // groups of rows of B in them
//!   %t:4 = scf.for %c0 = %k0 to %whole step %c4 iter_args(...) -> (vector<16xf32>, ...) {
//!     %sb = vector.load %b_scales[%row, %s0] : memref<?x?xi8>, vector<16xi8>  (decoded)
//!     // then each of the group's four chunks:
//!     %start = vector.load %starts[%i, %l0] : memref<1x?xi32>, vector<16xi32>
//!     %raw = vector.load %b[%row, %b0] : memref<?x?xi8>, vector<64xi8>
//!     %lo = arith.andi %raw, %c15 : vector<64xi8>     (%hi: arith.shrui %raw, %c4)
//!     %ulo = llvm.call_intrinsic "llvm.x86.avx512.pshuf.b.512"(%b_table, %lo) ...
//!     %a0 = vector.load %abytes[%i, %k0] : memref<1x?xi8>, vector<64xi8>
//!     %s0 = llvm.call_intrinsic "llvm.x86.avx512.vpdpbusd.512"(%start, %ulo, %a0) ...
//!     %s1 = ...                                          (the odd k: %uhi, %a1)
//!     %sums = arith.mulf (arith.sitofp %s1), %unit : vector<16xf32>
//!     %ss = arith.mulf %sa_lanes, (vector.shuffle %sb, %sb [0, 0, 0, 0, 1, 1, 1, 1, ...])
//!     vector.fma %sums, %ss, %t#0 : vector<16xf32>
//!   }
//!   // the block's chunks past whole groups one at a time, the k past the chunks into
//!   // lane 0 (K's last block), each total's lanes summed and added into w[i, row]
//! }}}
//! // bf16 pairs, per tensor: one interval, each chunk of B's row
//! //   %w = arith.extui (vector.load %b[%row, %k0] : vector<32xi8>) to vector<32xi16>
//! //   %lo = llvm.call_intrinsic "llvm.x86.avx512.vpermi2var.hi.512"(%t0, %w, %t1)
//! //   %hi = ... (%t2, %w, %t3); %v = arith.select (bit 6 of %w), %hi, %lo
//! //   %p = arith.ori %v, (arith.andi (arith.shli %w, 8), 0x8000)      (the sign)
//! //   %s = llvm.call_intrinsic "llvm.x86.avx512bf16.dpbf16ps.512"(%s, %a_pairs, %p)
//! ```
//!
//! The lanes' sums are added in another order than the other forms' (each lane's k, then
//! across lanes), within the oracle's f32 summation bound as every form is.

use melior::dialect::arith::CmpiPredicate;
use melior::ir::{OperationRef, Type, Value};

use super::gemv::lane_sums;
use super::{
    byte_lookup, byte_tables, int_codes, k_block, load_codes, nibbles_in_order, par,
    prefetch_codes_ahead, ByteDot, Plan, Side,
};
use crate::expand_quantize::{ceil_div, int_table, scaled_decode_table};
use crate::ir::Emitter;
use crate::PassError;
use lowp_formats::ScaledFormat;

/// The most rows of A the form takes at `lanes` with scale segments of `seg` k (none:
/// `None`). At 16 lanes 24 with scales along K, 32 without (A's rows in pieces past a
/// few, see `pieces` and `staged`). On two Zen 5 threads at N = K = 8192
/// (ms, two rounds of each against the row tiles, before B's vectors were staged):
/// - no scales along K, M = 16: FP8 per tensor 4.5-4.7 against 7.9-8.4, FP6 E2M3 per
///   channel 3.4-4.5 against 6.8-7.9, FP4 per tensor 2.3-2.4 against 5.4;
/// - blockwise 1 x 128, M = 16: 6.5-7.1 against 8.6-8.8;
/// - MX: MXFP8 M = 12 6.4-7.3 against 7.4-12.5, M = 16 7.2-7.7 against 9.4-9.6; MXFP4 M =
///   16 5.5-5.8 against 7.3-7.6.
///
/// With no scales along K, 32 (B's vectors of a K block staged once, `staged`): FP8 per
/// tensor M = 17 / 24 / 32 4.2-4.4 / 5.0-5.2 / 6.2-6.5 against the tiles' 7.6-8.5 /
/// 7.6-9.2 / 9.2-9.3, FP4 per tensor M = 32 4.3-4.6 against 6.7-7.8, FP6 E2M3 per channel
/// M = 32 4.3-6.1 against 7.1-8.4. With scales along K, 24: MXFP8 M = 20 / 24 7.1-7.6 /
/// 8.3-8.5 against 8.8-9.5 / 8.9, MXFP4 M = 20 / 24 4.7-4.8 / 5.5-5.6 against 5.3-5.8 /
/// 6.6-7.1, blockwise 1 x 128 M = 24 7.2 against 7.9-8.1; at 32 MXFP8 lost (10.6-11.0
/// against 10.0-10.6: every chunk's sums converted and scaled, a cost per pair the tiles
/// do not pay).
///
/// MX on bf16 pairs with the scales folded into the patterns (`pair_folds`) counts as no
/// scales along K.
///
/// At 8 lanes (16 registers, no pieces): 16 rows with no scales along K, 12 with 128-blocks,
/// 8 with MX / NVFP4 segments (MXFP4 `dot=i8` M = 16 8.9-9.0 against the tiles' 6.8-7.1).
fn max_rows(lanes: i64, seg: Option<i64>) -> i64 {
    match seg {
        None if lanes == 16 => 32,
        _ if lanes == 16 => 24,
        None => 16,
        Some(s) if s >= 128 => 12,
        Some(_) => 8,
    }
}

/// The rows a copy of the form computes where M is known only at run time and turns out
/// to be `m`: `m` up to 8, the next even count to 16, the next multiple of 4 past it (to
/// 24 or 32, `max_rows`), the extra rows copies of A's last (their sums are not written
/// back). 16 copies cover M = 1-32 where one a row covered 1-16 (MXFP4's function took
/// 2.9-3.4 s to compile with them; 1.7 s with copies to 16 rows, 2.2 s to 24), 7-11% more
/// work at odd M from 9 to 15, up to 18% past 16; the copies of 10-32 rows split into
/// equal pieces. M = 7 as 8 rows ran 15-35% slower than 7 (MXFP4 at N = K = 8192: 2.5-3.0
/// ms against 2.15-2.25).
pub(super) fn rows_for(m: i64) -> i64 {
    if m <= 8 {
        m
    } else if m <= 16 {
        m + (m & 1)
    } else {
        (m + 3) / 4 * 4
    }
}

/// The most rows of B a group takes at once (four streams for the prefetchers, as the f32
/// GEMV form found best).
const GROUP_ROWS: i64 = 4;

/// Bytes of A's values a K block holds (they stay in L1 while the block's rows of B
/// stream past; 48 KiB of L1d on Zen 5).
const A_BLOCK_BYTES: i64 = 32 << 10;

/// Rows of B that take each K block of A in turn (a parallel iteration).
const SUPER_ROWS: i64 = 64;

/// How far ahead of a chunk each row of B is prefetched, in bytes of codes (twice as many k
/// where they are packed).
const PREFETCH_BYTES: i64 = 512;

/// What each lane of the form's instructions adds up.
#[derive(Clone, Copy, Debug)]
pub(super) enum Products {
    /// The byte kernel's integers (`vpdpbusd`, else `pmaddubsw` and `pmaddwd`).
    Bytes(ByteDot),
    /// bf16 pairs (`vdpbf16ps`), where `bf16_pairs` holds for the formats.
    Bf16,
}

/// Whether the form runs on bytes for `m` rows (known when the pass runs) under `plan`,
/// the byte kernel's plan existing for the formats: up to `max_rows` rows; scale segments
/// a multiple of 8 k (a lane's k lie in one segment, packed or not) that divide a chunk of
/// either storage or are whole chunks of both.
pub(super) fn takes(m: Option<i64>, plan: &Plan) -> bool {
    let lanes = plan.tile.lanes;
    let segments_fit = plan
        .seg
        .is_none_or(|s| s % 8 == 0 && ((4 * lanes) % s == 0 || s % (8 * lanes) == 0));
    m.is_some_and(|m| (1..=max_rows(lanes, plan.seg)).contains(&m)) && segments_fit
}

/// Whether the form runs on bf16 pairs for `m` rows under `plan` with B's format `fb`,
/// `bf16_pairs` holding for the formats: up to `max_rows` rows; scale segments even (a
/// lane's pair in one) that divide a chunk (`2 lanes` k) or are whole chunks; at 8 lanes,
/// B's patterns one lookup (FP6 E3M2's 32 magnitudes, not FP8's 128): FP8's four took 8
/// of the 16 registers, and the form ran E4M3 per tensor at M = 2 / 4 in 4.8 / 9.0 ms
/// against the f32 GEMV form's 2.8 / 4.4 (FP6 E3M2 per channel M = 8 4.1 against 8.2).
pub(super) fn takes_pairs(
    m: Option<i64>,
    plan: &Plan,
    (fa, fb): (ScaledFormat, ScaledFormat),
) -> bool {
    let lanes = plan.tile.lanes;
    let chunk = 2 * lanes;
    let segments_fit = plan
        .seg
        .is_none_or(|s| s % 2 == 0 && (chunk % s == 0 || s % chunk == 0));
    let lookups_fit = lanes == 16 || word_patterns(fb).0.len() <= 2 * chunk as usize;
    // Folded scales leave no scale along K to the sums: as many rows as without them.
    let seg = if m.is_some_and(|m| pair_folds(plan, (fa, fb), m)) {
        None
    } else {
        plan.seg
    };
    m.is_some_and(|m| (1..=max_rows(lanes, seg)).contains(&m)) && segments_fit && lookups_fit
}

/// The fewest rows (of `rows_for`'s copies, so that M known at run time folds where the
/// pass's M would) for which the form on bf16 pairs folds E8M0 scales. MXFP8, N = K =
/// 8192, one thread, ms, folded / not (three rounds): M = 1 3.98-4.16 / 3.85-4.31, M = 2
/// 4.33-4.80 / 3.87-4.49, M = 3 4.14-4.52 / 3.78-4.62 (B's exponent added a chunk and row
/// of B weighs against the few sums it saves); two threads M = 4 2.09-2.25 / 2.37-2.64,
/// one thread M = 8 6.5-6.8 / 7.6-7.8, M = 12 7.2-7.3 / 9.1-9.6.
const FOLD_ROWS: i64 = 4;

/// Whether the form on bf16 pairs folds the scales into the patterns for `m` rows: both
/// scales E8M0 and both formats' values as `gemv::folds` asks, each chunk (`2 lanes` k)
/// within one segment, `rows_for(m)` at least `FOLD_ROWS`. A's patterns of a chunk then
/// carry its scale's exponent (once, as A is laid out), B's (a chunk of a row at a time,
/// as it is looked up), and the sums run along the K block with no scale, as without
/// scales along K: each pair's sum and FMA of its scale product a chunk are gone. A
/// chunk's patterns times `2^e` are its values times `2^e` exactly where `e` is within
/// `gemv::in_fold_range`'s `-47 ..= 32`: `e` added to each exponent field but zeros',
/// infinities' and NaNs', which stays within `1 ..= 254` for values within `2^-16 ..=
/// 2^16`, and every nonzero product within `2^-126 ..= 2^96`, normal in f32; a chunk of ±0
/// codes folds under any finite scale. A group's K block whose scales of B do not fold
/// (out of range, or NaN), or any of A's, is computed as without the fold, a few rows of A
/// at a time (each looking B up again).
///
/// Two threads, N = K = 8192, ms, folded / not: MXFP8 M = 8 3.07-3.16 / 3.77-3.87, M =
/// 16 4.28-4.29 / 5.76-6.05, M = 24 5.63-5.65 / 8.32-8.65, M = 32 6.88-7.03 / 11.0-11.2
/// (tiles); MXFP6 E3M2 M = 16 4.02-4.16 / 6.11-6.47, M = 32 6.62-6.96 / 10.7-11.2 (tiles).
/// MXFP8 M = 16 whose scales of B all leave the range: 19-22 ms one thread, against 12
/// without the fold. The copies of a run-time M each carry both: MXFP8 `--dynamic m`
/// compiles in 1.2-1.6 s + 0.9-1.0 s JIT, against 0.5-0.7 + 0.6-0.7.
pub(super) fn pair_folds(plan: &Plan, formats: (ScaledFormat, ScaledFormat), m: i64) -> bool {
    let chunk = 2 * plan.tile.lanes;
    plan.seg.is_some_and(|s| s % chunk == 0)
        && super::gemv::folds(plan, formats)
        && rows_for(m) >= FOLD_ROWS
}

/// `2^e` times each of the bf16 patterns `p` (a `vector<width x i16>`), `e` the exponent of
/// an E8M0 scale as stored (`i8` or `i32`; within `gemv::in_fold_range`): `e` added to the
/// exponent field of each pattern but zeros' (and subnormals', which the formats here do
/// not have) and infinities' and NaNs'.
fn fold_patterns<'c, 'a>(
    e: &Emitter<'c, 'a>,
    p: Value<'c, 'a>,
    stored: Value<'c, 'a>,
    width: u64,
) -> Value<'c, 'a> {
    let code = super::gemv::e8m0_code(e, stored);
    let delta = e.trunci(e.shli(e.subi(code, e.i32(127)), e.i32(7)), e.int_type(16));
    let splat16 = |v: i64| e.int_splat(16, v, width);
    let exponent = e.andi(p, splat16(0x7F80));
    let finite = e.andi(
        e.cmpi(CmpiPredicate::Ne, exponent, splat16(0)),
        e.cmpi(CmpiPredicate::Ne, exponent, splat16(0x7F80)),
    );
    e.select(finite, e.addi(p, e.broadcast(delta, width)), p)
}

/// Whether the bf16 patterns `p` (a `vector<width x i16>`) are all ±0, an `i1`.
fn patterns_zero<'c, 'a>(e: &Emitter<'c, 'a>, p: Value<'c, 'a>, width: u64) -> Value<'c, 'a> {
    let magnitudes = e.andi(p, e.int_splat(16, 0x7FFF, width));
    let any = e.reduce("or", magnitudes);
    e.cmpi(CmpiPredicate::Eq, any, e.int(16, 0))
}

/// Rows of B a group takes with `m` rows of A, `carried` vectors a pair (its sums, and
/// its f32 totals where they are apart) and `halves` vectors a row and chunk: as many as
/// keep each pair's vectors, the group's vectors of B and one row's of A (a chunk's B is
/// looked up first, A's rows loaded one at a time) and `extra` for the decode (its scratch
/// and tables) within the vector registers (32 zmm at 16 lanes, 16 ymm at 8).
fn group_rows(m: i64, (carried, halves): (i64, i64), lanes: i64, extra: i64) -> Option<i64> {
    let registers = if lanes == 16 { 32 } else { 16 };
    (1..=GROUP_ROWS)
        .rev()
        .find(|&r| carried * m * r + halves * (r + 1) + extra <= registers)
}

/// Rows of B a group takes, and A's rows `(first, count)` in the pieces that each pass over
/// the group's chunks: all of A's rows where they leave room for two rows of B
/// (`group_rows`), else the fewest pieces of nearly equal size, two rows or more, that do
/// (B's chunks looked up again for each piece, from L1; pieces of one row would look up B
/// once for each of A's rows). With one row of B a group, each of A's vectors was
/// loaded for one dot product: FP8 per tensor at N = K = 8192, two threads, ran M = 10 in
/// 3.1-3.3 ms (two rows of B) and M = 12 in 5.1-5.3 (one); in two pieces of 6, 3.4.
/// At 8 lanes (16 registers) A's rows stay one piece: pieces of two rows ran FP4 per
/// tensor M = 16 faster (5.3 ms against 7.6-9.1, `dot=i8`) but FP6 E2M3 per channel
/// slower (M = 8 6.6 against 5.2-5.3, M = 16 11.8-12.1 against 6.4-6.8).
fn pieces(m: i64, vectors: (i64, i64), lanes: i64, extra: i64) -> (i64, Vec<(i64, i64)>) {
    let whole = group_rows(m, vectors, lanes, extra);
    let pieces_max = if lanes == 16 && whole.is_none_or(|r| r < 2) {
        m / 2
    } else {
        1
    };
    let split = (2..=pieces_max).find_map(|p| {
        let largest = (m + p - 1) / p;
        group_rows(largest, vectors, lanes, extra)
            .filter(|&r| r >= 2)
            .map(|r| (p, r))
    });
    let Some((p, rb)) = split else {
        return (whole.unwrap_or(1), vec![(0, m)]);
    };
    (rb, balanced(m, p))
}

/// Rows of B a group takes and A's rows in pieces where B's vectors of a group's K block
/// are looked up once into a buffer (L1) and each piece reads them there: no lookup's
/// tables or temporaries among the registers (two kept for the rest), so up to
/// `GROUP_ROWS` rows of B a group; of the counts of rows of B, the one with the fewest
/// vector loads (A's rows' and each piece's B's) a dot product. 16 lanes only; `None`
/// where no count leaves room for a piece of two rows.
fn staged(m: i64, (carried, halves): (i64, i64), lanes: i64) -> Option<(i64, Vec<(i64, i64)>)> {
    if lanes != 16 {
        return None;
    }
    let (registers, extra) = (32, 2);
    let plans = (2..=GROUP_ROWS).filter_map(|rb| {
        let most = (registers - extra - halves * (rb + 1)) / (carried * rb);
        (most >= 2).then(|| {
            let count = (m + most - 1) / most;
            let loads = halves * (m + count * rb);
            (rb, count, loads as f64 / (m * rb) as f64)
        })
    });
    let (rb, count, _) = plans.min_by(|x, y| x.2.total_cmp(&y.2))?;
    Some((rb, balanced(m, count)))
}

/// `m` rows as `count` pieces `(first, size)` in order, sizes differing by at most one
/// (the larger first).
fn balanced(m: i64, count: i64) -> Vec<(i64, i64)> {
    let (q, rem) = (m / count, m % count);
    let mut first = 0;
    (0..count)
        .map(|i| {
            let size = q + i64::from(i < rem);
            first += size;
            (first - size, size)
        })
        .collect()
}

/// How an interval's sums join the totals (see the module header).
#[derive(Clone, Copy)]
enum Scaling {
    /// No scales along K: the sums as they are (the unit and scales applied after).
    None,
    /// A segment of `seg` k an interval: one `sa * sb`.
    Whole { seg: i64 },
    /// One chunk an interval, `per` segments of `seg` k in it.
    Lanes { seg: i64, per: i64 },
}

/// The bf16 patterns of a format's codes as `vpermi2w` tables (see `word_tables`).
struct WordTables<'c, 'a> {
    /// Pairs of vectors of patterns: `2 width` patterns a lookup.
    tables: Vec<Value<'c, 'a>>,
    /// The codes' bits that index the tables (all of them, or the magnitude's).
    index_mask: i64,
    /// Where the code's top bit is the sign of every value: the shift that moves it to
    /// bit 15 (the tables then hold the magnitudes' patterns).
    sign_shift: Option<i64>,
    /// Patterns a lookup (`2 width`).
    per: i64,
}

/// The bf16 patterns of `f`'s codes (each value's f32 pattern's high half: exact where
/// `bf16_pairs` holds; NaN as `0x7FC0`) as tables of `width` 16-bit lanes, two a lookup.
/// Where the top bit of the code flips the sign of every value (`-0` for `0`, a NaN for a
/// NaN: OCP FP8 and FP6, not FNUZ, whose `0x80` is its NaN), the tables hold the patterns
/// of the magnitudes only, half as many lookups.
fn word_tables<'c, 'a>(e: &Emitter<'c, 'a>, f: ScaledFormat, width: u64) -> WordTables<'c, 'a> {
    let (entries, signed) = word_patterns(f);
    let per = 2 * width as usize;
    let tables = entries
        .chunks(per)
        .flat_map(|lookup| {
            [0, 1].map(|t| {
                let words: Vec<i64> = (0..width as usize)
                    .map(|x| i64::from(*lookup.get(t * width as usize + x).unwrap_or(&0) as i16))
                    .collect();
                e.int_vector(16, &words)
            })
        })
        .collect();
    let bits = f.code_count().trailing_zeros() as i64;
    WordTables {
        tables,
        index_mask: entries.len() as i64 - 1,
        sign_shift: signed.then_some(16 - bits),
        per: per as i64,
    }
}

/// The bf16 patterns `word_tables` holds for `f`: of every code, or of the magnitudes only
/// where the code's top bit is the sign of every value (then `true`).
fn word_patterns(f: ScaledFormat) -> (Vec<u16>, bool) {
    let count = f.code_count() as usize;
    let patterns: Vec<u16> = (0..count)
        .map(|c| {
            let v = f.decode(c as u8);
            if v.is_nan() {
                0x7FC0
            } else {
                (v.to_bits() >> 16) as u16
            }
        })
        .collect();
    let half = count / 2;
    let is_nan = |p: u16| p & 0x7F80 == 0x7F80 && p & 0x7F != 0;
    let signed = count >= 2
        && (0..half).all(|c| {
            let (p, q) = (patterns[c], patterns[c + half]);
            if is_nan(p) {
                is_nan(q)
            } else {
                q == p ^ 0x8000
            }
        });
    let entries = if signed {
        patterns[..half].to_vec()
    } else {
        patterns
    };
    (entries, signed)
}

/// The bf16 patterns of a `vector<width x i16>` of codes by `t` (`word_tables`): a
/// `vpermi2w` a pair of tables (AVX512BW; AVX512VL at 16 lanes of 16 bits), which reads
/// the index's low bits only; the lookups' results picked by a tree of selects on the
/// code's bits above them (one bit test for E4M3's two lookups); the sign bit moved in
/// where the tables hold magnitudes. The codes are masked only where a lookup's index
/// bits reach past the tables' entries (the sign of FP6 E3M2's 32 magnitudes, or bits
/// above a code narrower than its byte).
fn word_lookup<'c, 'a>(
    e: &Emitter<'c, 'a>,
    t: &WordTables<'c, 'a>,
    codes: Value<'c, 'a>,
    width: u64,
) -> Value<'c, 'a> {
    let permute = if width == 32 {
        "llvm.x86.avx512.vpermi2var.hi.512"
    } else {
        "llvm.x86.avx512.vpermi2var.hi.256"
    };
    let splat16 = |v: i64| e.int_splat(16, v, width);
    let index = if t.index_mask < t.per - 1 {
        e.andi(codes, splat16(t.index_mask))
    } else {
        codes
    };
    let words_t = e.vector_type(width, e.int_type(16));
    let mut level: Vec<Value> = t
        .tables
        .chunks(2)
        .map(|pair| e.call_intrinsic(permute, &[pair[0], index, pair[1]], words_t))
        .collect();
    // Each round pairs the lookups that differ in the next bit of the index above them.
    let mut bit = t.per;
    while level.len() > 1 {
        let set = e.cmpi(CmpiPredicate::Ne, e.andi(codes, splat16(bit)), splat16(0));
        level = level.chunks(2).map(|p| e.select(set, p[1], p[0])).collect();
        bit *= 2;
    }
    let looked = level[0];
    match t.sign_shift {
        Some(shift) => {
            let sign = e.andi(e.shli(codes, splat16(shift)), splat16(i64::from(i16::MIN)));
            e.ori(looked, sign)
        }
        None => looked,
    }
}

/// The form's sums for `m` rows: `w[row, column]` (columns padded to whole groups of B's
/// rows; per-tensor and per-channel scales not yet applied).
pub(super) fn gemm<'c, 'a>(
    e: &Emitter<'c, 'a>,
    plan: &Plan,
    (a, b): (&Side<'c, 'a>, &Side<'c, 'a>),
    (m, k): (i64, Value<'c, 'a>),
    products: Products,
    func: OperationRef<'c, 'a>,
) -> Result<Value<'c, 'a>, PassError> {
    let (f32t, i32t, i8t, i16t) = (e.f32_type(), e.int_type(32), e.int_type(8), e.int_type(16));
    let bf16t = Type::bfloat16(e.ctx());
    let (zero, one) = (e.index(0), e.index(1));
    let lanes = plan.tile.lanes;
    let vl = lanes as u64;
    // k a lane holds in a chunk; vectors a row and chunk.
    let (g, halves) = match products {
        Products::Bytes(_) if b.packed => (8, 2),
        Products::Bytes(_) => (4, 1),
        Products::Bf16 => (2, 1),
    };
    let chunk = g * lanes;
    let nbytes = 4 * vl;
    let nwords = 2 * vl;
    let (chunk_v, lane_v) = (e.index(chunk), e.index(lanes));
    let chunks = e.divui(k, chunk_v);
    let kv = e.muli(chunks, chunk_v);
    let tables = match products {
        Products::Bytes(d) => Tables::Bytes(Bytes::new(e, plan, (a, b), d, func)?),
        Products::Bf16 => Tables::Pairs(Pairs::new(e, (a, b), nwords, func)?),
    };
    let bytes = match &tables {
        Tables::Bytes(bt) => Some(bt),
        Tables::Pairs(_) => None,
    };
    // Chunks of A's values (a byte a k, or a bf16 pattern) that stay in L1 for all its
    // rows (`A_BLOCK_BYTES`): those of `rows_for(m)` rows, so that the K blocks, and with
    // them the sums' bits, are the same whether M is known when the pass runs or not.
    let a_bytes = if bytes.is_some() { 1 } else { 2 };
    let fit = (A_BLOCK_BYTES / (rows_for(m) * a_bytes * chunk)).max(1);
    // Chunks an interval (of the sums; one where segments are shorter than a chunk; `None`:
    // all of a K block, where the f32 sums of bf16 pairs meet no scale along K). The byte
    // form's intervals without scales are as long as their sums stay exact and fit a block.
    let (per_interval, scaling) = match plan.seg {
        None => (
            bytes.as_ref().map(|bt| (bt.cap / g).clamp(1, fit)),
            Scaling::None,
        ),
        Some(s) if s >= chunk => (Some(s / chunk), Scaling::Whole { seg: s }),
        Some(s) => (
            Some(1),
            Scaling::Lanes {
                seg: s,
                per: chunk / s,
            },
        ),
    };
    let intervals = match per_interval {
        Some(p) => ceil_div(e, chunks, e.index(p)),
        None => one,
    };
    // Chunks that share a load of B's scales (`Scaling::Lanes`: where B's scale block is
    // the segment, a chunk's scales are contiguous, and `lanes` of them one vector).
    let contiguous = match scaling {
        Scaling::Lanes { seg, .. } | Scaling::Whole { seg } => {
            k_block(b.scaled.layout) == Some(seg)
        }
        Scaling::None => false,
    };
    // Segments of one chunk (MX's 32 k at 16 lanes of bf16 pairs) with B's scales as
    // stored: `lanes` chunks share a vector load of each row's scales, their products
    // with A's stored in `scratch` and read back by broadcasts (the module header).
    let chunk_segments = contiguous && matches!(scaling, Scaling::Whole { seg } if seg == chunk);
    let group = match scaling {
        Scaling::Lanes { per, .. } if contiguous => lanes / per,
        Scaling::Whole { .. } if chunk_segments => lanes,
        _ => 1,
    };
    // K blocks of whole intervals and groups of chunks, as many as fit.
    let unit_chunks = per_interval.unwrap_or(1) * group;
    let block_chunks = (fit / unit_chunks).max(1) * unit_chunks;
    let unit = bytes.as_ref().map_or(1.0, |bt| bt.d.unit());
    // The unit on A's scales where that is exact (`Plan::unit_in_scales`).
    let unit_in_scales = bytes.is_some() && plan.unit_in_scales();

    // ---- the dot products ---------------------------------------------------------
    let (dpbusd, maddubs, maddwd, dpbf16) = if lanes == 16 {
        (
            "llvm.x86.avx512.vpdpbusd.512",
            "llvm.x86.avx512.pmaddubs.w.512",
            "llvm.x86.avx512.pmaddw.d.512",
            "llvm.x86.avx512bf16.dpbf16ps.512",
        )
    } else {
        (
            "llvm.x86.avx512.vpdpbusd.256",
            "llvm.x86.avx2.pmadd.ub.sw",
            "llvm.x86.avx2.pmadd.wd",
            "llvm.x86.avx512bf16.dpbf16ps.256",
        )
    };
    let (i16v, i32v, f32v) = (
        e.vector_type(2 * vl, i16t),
        e.vector_type(vl, i32t),
        e.vector_type(vl, f32t),
    );
    let ones16 = e.int_splat(16, 1, 2 * vl);
    // `acc` plus the products of B's vector `bv` and A's `av` lane by lane.
    let dot = |e: &Emitter<'c, 'a>,
               acc: Value<'c, 'a>,
               bv: Value<'c, 'a>,
               av: Value<'c, 'a>|
     -> Value<'c, 'a> {
        match products {
            Products::Bytes(d) if d.vnni => e.call_intrinsic(dpbusd, &[acc, bv, av], i32v),
            Products::Bytes(_) => {
                let pairs = e.call_intrinsic(maddubs, &[bv, av], i16v);
                let quads = e.call_intrinsic(maddwd, &[pairs, ones16], i32v);
                e.addi(acc, quads)
            }
            Products::Bf16 => e.call_intrinsic(dpbf16, &[acc, av, bv], f32v),
        }
    };
    // A side's codes of row `rr` from k = `kk` in k order as bf16 patterns.
    let pair_patterns = |e: &Emitter<'c, 'a>, side: &Side<'c, 'a>, t, rr, kk| {
        let codes = load_codes(e, side, (rr, kk), nwords, 16);
        word_lookup(e, t, codes, nwords)
    };

    // ---- A: its values in B's order, the lanes' starts, its scales -------------------
    let (a_elem, a_width) = match products {
        Products::Bytes(_) => (i8t, nbytes),
        Products::Bf16 => (i16t, nwords),
    };
    let avals = e.alloc(a_elem, &[Some(m), None], &[kv], 64);
    let starts = bytes
        .is_some()
        .then(|| e.alloc(i32t, &[Some(m), None], &[e.muli(intervals, lane_v)], 64));
    // A's scales: each segment's (`Whole`), or each chunk's lanes' (`Lanes`).
    let sa = match scaling {
        Scaling::None => None,
        Scaling::Whole { seg } => {
            let segments = ceil_div(e, k, e.index(seg));
            Some((
                e.alloc(f32t, &[Some(m), None], &[segments], 64),
                segments,
                seg,
            ))
        }
        Scaling::Lanes { .. } => {
            let all = e.muli(chunks, lane_v);
            Some((e.alloc(f32t, &[Some(m), None], &[all], 64), all, g))
        }
    };
    // Row `r` of the form's rows reads A's row `r` (M known only at run time: the last of
    // A's rows past it, see `rows_for`).
    let dynamic_m = crate::ir::static_index(a.rows).is_none();
    let a_row = |e: &Emitter<'c, 'a>, r: Value<'c, 'a>| {
        if dynamic_m {
            e.minui(r, e.subi(a.rows, e.index(1)))
        } else {
            r
        }
    };
    // Folding (`pair_folds`): A's patterns times their chunk's scale too.
    let fold = matches!(products, Products::Bf16) && pair_folds(plan, (a.format, b.format), m);
    let avals_f = fold.then(|| e.alloc(a_elem, &[Some(m), None], &[kv], 64));
    e.for_loop(zero, e.index(m), one, &[], |e, rr, _| {
        let src = a_row(e, rr);
        match &tables {
            Tables::Bytes(bt) => {
                bt.prepare_a(
                    e,
                    (a, b),
                    (src, rr, lanes),
                    (
                        chunks,
                        intervals,
                        per_interval.expect("the bytes' intervals"),
                    ),
                    (avals, starts.expect("the bytes' starts")),
                    &dot,
                );
            }
            Tables::Pairs(pt) => {
                e.for_loop(zero, chunks, one, &[], |e, c, _| {
                    let kk = e.muli(c, chunk_v);
                    let p = pair_patterns(e, a, &pt.a, src, kk);
                    e.vstore(p, avals, &[rr, kk]);
                    if let Some(af) = avals_f {
                        let stored = a.scaled.block_stored(e, src, kk);
                        e.vstore(fold_patterns(e, p, stored, nwords), af, &[rr, kk]);
                    }
                    vec![]
                });
            }
        }
        // Entry x of A's scales is k = x * step's (a segment's first k, or a lane's).
        if let Some((sa, entries, step)) = sa {
            e.for_loop(zero, entries, one, &[], |e, x, _| {
                let v = a.scaled.block_value(e, src, e.muli(x, e.index(step)));
                let v = if unit_in_scales {
                    e.mulf(v, e.f32(unit))
                } else {
                    v
                };
                e.store(v, sa, &[rr, x]);
                vec![]
            });
        }
        vec![]
    });
    // Folding: whether all of A's scales fold (`scales_fold`: in range, or a zero block's).
    let a_ok = if fold { a.folds(e, k) } else { e.bool(true) };

    // Row `rr`'s vectors of the chunk from k = `kk` (`halves` of them), and whether its
    // scale folds (`scale_folds`: in the fold's range, or the chunk's codes all ±0):
    // `folded`, bf16 patterns times their scale (`fold_patterns`); else as looked up (and
    // true).
    let b_vectors = |e: &Emitter<'c, 'a>, rr: Value<'c, 'a>, kk: Value<'c, 'a>, folded: bool| {
        let ahead = PREFETCH_BYTES * if b.packed { 2 } else { 1 };
        prefetch_codes_ahead(e, b, (rr, kk), k, ahead);
        match &tables {
            Tables::Bytes(bt) => (bt.b_bytes(e, b, (rr, kk), (halves, nbytes)), e.bool(true)),
            Tables::Pairs(pt) => {
                let p = pair_patterns(e, b, &pt.b, rr, kk);
                if !folded {
                    return (vec![e.vector_bitcast(p, nwords, bf16t)], e.bool(true));
                }
                let stored = b.scaled.block_stored(e, rr, kk);
                let p = fold_patterns(e, p, stored, nwords);
                let v = e.vector_bitcast(p, nwords, bf16t);
                // (Zeros' patterns are left as they are: ±0 before the fold and after.)
                let folds = super::scale_folds_if(e, stored, |e| patterns_zero(e, p, nwords));
                (vec![v], folds)
            }
        }
    };
    // A's row `i`'s vectors of the chunk from k = `kk` (its folded patterns where
    // `folded`).
    let a_vectors = |e: &Emitter<'c, 'a>,
                     i: Value<'c, 'a>,
                     kk: Value<'c, 'a>,
                     folded: bool|
     -> Vec<Value<'c, 'a>> {
        let values = match avals_f {
            Some(af) if folded => af,
            _ => avals,
        };
        (0..halves)
            .map(|h| {
                let from = e.addi(kk, e.index(h * a_width as i64));
                let v = e.vload(values, &[i, from], a_width);
                match products {
                    Products::Bytes(_) => v,
                    Products::Bf16 => e.vector_bitcast(v, nwords, bf16t),
                }
            })
            .collect()
    };
    // ---- the groups of rows of B ---------------------------------------------------
    let n = b.rows;
    let extra = match &tables {
        Tables::Pairs(pt) => 2 + pt.b.tables.len() as i64,
        Tables::Bytes(_) => 2,
    };
    // Each pair's sums and totals where an interval's sums run through several chunks,
    // else its totals (or sums) alone: a chunk's sums are scaled into the totals as they
    // come, and counting them too cost a row of B at M = 4-8 (two rounds at M = 8 with it:
    // MXFP4 5.0-7.5 ms against 3.3-3.6 without, MXFP6 10.9-11.9 against 5.7-6.5, MXFP8
    // 5.4-5.8 against 4.4-4.9).
    // Folded, the sums run along the K block with no scale (the form's rows without
    // scales along K; `fallback`'s where the fold does not hold).
    let carried = if per_interval.is_some_and(|p| p > 1) && !fold {
        2
    } else {
        1
    };
    // Where A's rows take several pieces, B's vectors of a group's K block are looked up
    // once into `stage` and each piece reads them (`staged`); N = K = 8192, one thread,
    // ms: FP8 per tensor M = 16 9.2-11.5 -> 7.7, NVFP4 11.7-13.8 -> 8.6-8.7, MXFP4
    // 10.5 -> 9.1-10.8, blockwise 1 x 128 12.5-13.5 -> 11.0-11.2. MX segments of one
    // chunk count two registers a pair (each chunk's sums live apart from the totals; as
    // one, 24 pairs spilled and MXFP8 M = 16 ran 18.1-18.2 against 14.2-15.0 unstaged):
    // MXFP8 M = 12 / 16 12.2-12.4 / 13.3-14.1 -> 9.2-9.6 / 11.0-11.2, MXFP6 E3M2 M = 16
    // 19.4-19.8 -> 12.0-12.5. Not for bytes without scales along K to 16 rows (FP4 per
    // tensor M = 16 4.6 -> 5.0-5.4: B's lookup is one `pshufb`).
    let stages = !(bytes.is_some() && matches!(scaling, Scaling::None) && m <= 16);
    let staged_carried = if chunk_segments && !fold { 2 } else { carried };
    let (rb, pieces) = pieces(m, (carried, halves), lanes, extra);
    let (rb, pieces, staged) = match staged(m, (staged_carried, halves), lanes) {
        Some((rb, p)) if stages && pieces.len() > 1 => (rb, p, true),
        _ => (rb, pieces, false),
    };
    // Folding, the rows of A a piece of the blocks the fold does not take holds: as many as
    // leave the group's rows of B room without a stage (each chunk's sums scaled into the
    // totals as they come). MXFP8 M = 16 whose scales of B all left the range ran in 19-22
    // ms (N = K = 8192, one thread; 12 without the fold), 32-33 with a row at a time.
    let fallback = (1..=m)
        .rev()
        .find(|&p| group_rows(p, (1, halves), lanes, extra).is_some_and(|r| r >= rb))
        .unwrap_or(1);
    let groups = ceil_div(e, n, e.index(rb));
    let w = e.alloc(f32t, &[Some(m), None], &[e.muli(groups, e.index(rb))], 64);
    // Pairs of the largest piece (the scratch's rows), the fold's fallback's too.
    let largest = pieces.iter().map(|&(_, size)| size).max().unwrap_or(m);
    let most = if fold { largest.max(fallback) } else { largest } * rb;
    let zv = e.zero_vector(vl);
    let unit_v = e.f32_splat(unit, vl);
    // Lane 0 alone: where the tail's products join a total.
    let first = {
        let idx = e.int_vector(32, &(0..lanes).collect::<Vec<_>>());
        e.cmpi(CmpiPredicate::Eq, idx, e.int_splat(32, 0, vl))
    };
    // Sums of K blocks add into w: zeros first.
    let padded = e.muli(groups, e.index(rb));
    e.for_loop(zero, e.index(m), one, &[], |e, i, _| {
        e.for_loop(zero, padded, one, &[], |e, col, _| {
            e.store(e.f32(0.0), w, &[i, col]);
            vec![]
        });
        vec![]
    });
    // Group `q`'s rows of B (the last group's past N repeat B's last row).
    let b_rows = |e: &Emitter<'c, 'a>, q: Value<'c, 'a>| -> Vec<Value<'c, 'a>> {
        (0..rb)
            .map(|j| {
                e.minui(
                    e.addi(e.muli(q, e.index(rb)), e.index(j)),
                    e.subi(n, e.index(1)),
                )
            })
            .collect()
    };
    // Where chunk `c` of a K block from chunk `c_lo` lies in a row of `stage`.
    let stage_at = |e: &Emitter<'c, 'a>, c: Value<'c, 'a>, c_lo: Value<'c, 'a>| {
        e.muli(e.subi(c, c_lo), e.index(a_width as i64))
    };
    // The lane totals of chunks `c_lo .. c_hi` (a K block) of group `q` of rows of B with
    // A's rows `i0 .. i0 + mp` (those past `clamp`, where given, read it), one vector a
    // pair (pair x: row i0 + x / rb of A, row x % rb of the group); `folded`: over the
    // folded patterns (`pair_folds`), with no scale, and (where B's are looked up here, not
    // in `stage`) whether B's scales were all within the fold's range.
    let block_totals = |e: &Emitter<'c, 'a>,
                        q: Value<'c, 'a>,
                        (c_lo, c_hi): (Value<'c, 'a>, Value<'c, 'a>),
                        scratch: Option<Value<'c, 'a>>,
                        stage: Option<Value<'c, 'a>>,
                        (i0, mp): (Value<'c, 'a>, i64),
                        folded: bool,
                        clamp: Option<Value<'c, 'a>>|
     -> (Vec<Value<'c, 'a>>, Option<Value<'c, 'a>>) {
        let a_at = |e: &Emitter<'c, 'a>, i: i64| {
            let i = e.addi(i0, e.index(i));
            clamp.map_or(i, |hi| e.minui(i, hi))
        };
        let count = (mp * rb) as usize;
        let rows = b_rows(e, q);
        // Chunk `c`'s vectors of the group's rows of B in `stage`.
        let staged_b = |e: &Emitter<'c, 'a>, stage: Value<'c, 'a>, c: Value<'c, 'a>| {
            let at = stage_at(e, c, c_lo);
            (0..rb)
                .map(|j| {
                    (0..halves)
                        .map(|h| e.vload(stage, &[e.index(j * halves + h), at], a_width))
                        .collect()
                })
                .collect::<Vec<Vec<Value>>>()
        };
        // The products of B's vectors `bvs` of the chunk from k = `kk` with A's added to
        // `acc`.
        let products_of = |e: &Emitter<'c, 'a>,
                           kk: Value<'c, 'a>,
                           bvs: &[Vec<Value<'c, 'a>>],
                           acc: &[Value<'c, 'a>]| {
            let mut next = acc.to_vec();
            for i in 0..mp {
                let avs = a_vectors(e, a_at(e, i), kk, folded);
                for (j, bv) in bvs.iter().enumerate() {
                    let x = (i * rb) as usize + j;
                    for (&u, &s) in bv.iter().zip(&avs) {
                        next[x] = dot(e, next[x], u, s);
                    }
                }
            }
            next
        };
        if folded {
            let mut inits = vec![zv; count];
            inits.push(e.bool(true));
            let out = e.for_loop(c_lo, c_hi, one, &inits, |e, c, acc| {
                let kk = e.muli(c, chunk_v);
                let mut ok = acc[count];
                let bvs = match stage {
                    Some(stage) => staged_b(e, stage, c),
                    None => rows
                        .iter()
                        .map(|&rr| {
                            let (v, good) = b_vectors(e, rr, kk, true);
                            ok = e.andi(ok, good);
                            v
                        })
                        .collect(),
                };
                let mut next = products_of(e, kk, &bvs, &acc[..count]);
                next.push(ok);
                next
            });
            let ok = stage.is_none().then_some(out[count]);
            return (out[..count].to_vec(), ok);
        }
        // The sums of chunk `c` added to `acc`.
        let chunk_dots = |e: &Emitter<'c, 'a>, c: Value<'c, 'a>, acc: &[Value<'c, 'a>]| {
            let kk = e.muli(c, chunk_v);
            let bvs: Vec<Vec<Value>> = match stage {
                Some(stage) => staged_b(e, stage, c),
                None => rows
                    .iter()
                    .map(|&rr| b_vectors(e, rr, kk, false).0)
                    .collect(),
            };
            products_of(e, kk, &bvs, acc)
        };
        // The sums' starts of interval `f`, one per pair: the lanes' starts (bytes), else
        // zeros.
        let inits = |e: &Emitter<'c, 'a>, f: Value<'c, 'a>| -> Vec<Value<'c, 'a>> {
            let Some(starts) = starts else {
                return vec![zv; count];
            };
            let at = e.muli(f, lane_v);
            (0..mp)
                .map(|i| e.vload(starts, &[a_at(e, i), at], vl))
                .flat_map(|s| std::iter::repeat_n(s, rb as usize))
                .collect()
        };
        // An interval's sums as f32 (bytes: converted from i32), times the unit where it
        // is not elsewhere.
        let converted = |e: &Emitter<'c, 'a>, sums: Value<'c, 'a>| {
            if bytes.is_none() {
                return sums;
            }
            let v = e.sitofp(sums, f32v);
            match scaling {
                Scaling::None => v,
                _ if unit_in_scales => v,
                _ => e.mulf(v, unit_v),
            }
        };
        // Row `rr` of B's scales from k = `k0`, `width` of them as stored (where B's scale
        // block is the segment), decoded lane by lane.
        let b_scales = |e: &Emitter<'c, 'a>, rr: Value<'c, 'a>, k0: Value<'c, 'a>, width| {
            let idx = b.scaled.scale_index(e, rr, k0);
            let stored = e.vload(b.scaled.scales, &idx, width);
            b.scaled.decode_stored_lanes(e, stored, Some(width))
        };
        // The end of the whole groups of chunks (sharing a vector of B's scales) from c_lo.
        let groups_end = |e: &Emitter<'c, 'a>| {
            let span = e.subi(c_hi, c_lo);
            e.addi(c_lo, e.muli(e.divui(span, e.index(group)), e.index(group)))
        };
        // Interval `f`'s sums (`per_interval` chunks) joined to `totals`.
        let interval = |e: &Emitter<'c, 'a>, f: Value<'c, 'a>, totals: &[Value<'c, 'a>]| {
            let per_interval = per_interval.expect("intervals of the sums");
            let c0 = e.muli(f, e.index(per_interval));
            let c1 = e.minui(e.addi(c0, e.index(per_interval)), chunks);
            // A chunk an interval (segments of one chunk): its sums without a loop.
            let sums = if per_interval == 1 {
                chunk_dots(e, c0, &inits(e, f))
            } else {
                e.for_loop(c0, c1, one, &inits(e, f), |e, c, acc| chunk_dots(e, c, acc))
            };
            match scaling {
                Scaling::Whole { seg } => {
                    let k0 = e.muli(c0, chunk_v);
                    let t = e.divui(k0, e.index(seg));
                    let (sa, _, _) = sa.expect("A's segment scales");
                    let sb: Vec<Value> = rows
                        .iter()
                        .map(|&rr| b.scaled.block_value(e, rr, k0))
                        .collect();
                    (0..count)
                        .map(|x| {
                            let (i, j) = (x as i64 / rb, x % rb as usize);
                            let s = e.mulf(e.load(sa, &[a_at(e, i), t]), sb[j]);
                            e.fma(converted(e, sums[x]), e.broadcast(s, vl), totals[x])
                        })
                        .collect()
                }
                _ => (0..count)
                    .map(|x| e.addf(totals[x], converted(e, sums[x])))
                    .collect(),
            }
        };
        let totals = match scaling {
            Scaling::Lanes { seg, per } => {
                // Chunks `c0 .. c0 + n` with B's scales of all of them loaded at once (as
                // stored where B's scale block is the segment, else one by one), decoded
                // lane by lane: one vector of `n per` scales a row of B, each chunk's
                // spread over its lanes by a shuffle times A's lanes' scales.
                let chunks_at =
                    |e: &Emitter<'c, 'a>, c0: Value<'c, 'a>, n: i64, totals: &[Value<'c, 'a>]| {
                        let k0 = e.muli(c0, chunk_v);
                        let width = (n * per) as u64;
                        let sb: Vec<Value> = rows
                            .iter()
                            .map(|&rr| {
                                if contiguous {
                                    b_scales(e, rr, k0, width)
                                } else {
                                    let each: Vec<Value> = (0..n * per)
                                        .map(|t| {
                                            let kt = e.addi(k0, e.index(t * seg));
                                            b.scaled.block_value(e, rr, kt)
                                        })
                                        .collect();
                                    e.from_elements(&each)
                                }
                            })
                            .collect();
                        let (sa, _, _) = sa.expect("A's lanes' scales");
                        let mut totals = totals.to_vec();
                        for u in 0..n {
                            let c = e.addi(c0, e.index(u));
                            let sums = chunk_dots(e, c, &inits(e, c));
                            let spread: Vec<i64> =
                                (0..lanes).map(|l| u * per + l / (lanes / per)).collect();
                            let at = e.muli(c, lane_v);
                            for i in 0..mp {
                                let sav = e.vload(sa, &[a_at(e, i), at], vl);
                                for (j, &sbj) in sb.iter().enumerate() {
                                    let x = (i * rb) as usize + j;
                                    let s = e.mulf(sav, e.shuffle(sbj, sbj, f32t, &spread));
                                    totals[x] = e.fma(converted(e, sums[x]), s, totals[x]);
                                }
                            }
                        }
                        totals
                    };
                // Whole groups of chunks sharing a vector of B's scales, then the rest one
                // chunk at a time.
                let whole = groups_end(e);
                let totals =
                    e.for_loop(c_lo, whole, e.index(group), &vec![zv; count], |e, c0, t| {
                        chunks_at(e, c0, group, t)
                    });
                e.for_loop(whole, c_hi, one, &totals, |e, c, t| chunks_at(e, c, 1, t))
            }
            // bf16 pairs with no scale along K: the sums are the totals, along the block.
            Scaling::None if per_interval.is_none() => {
                e.for_loop(c_lo, c_hi, one, &vec![zv; count], |e, c, acc| {
                    chunk_dots(e, c, acc)
                })
            }
            // Segments of one chunk: `lanes` chunks at a time, each row of B's scales of
            // them one vector load, decoded lane by lane, times A's of each row, all
            // `count` products stored in `scratch`; each chunk's sums take theirs by a
            // broadcast from memory (the FMA's operand) where a scalar decode and product a
            // pair and chunk were (MXFP8, N = K = 8192, two threads, ms: M = 1 2.02-2.21 ->
            // 1.74-1.99, M = 8 4.53-4.57 -> 3.93-3.95). The chunks past them one at a time
            // (a chunk an interval).
            Scaling::Whole { .. } if chunk_segments => {
                let scratch = scratch.expect("the scale products' scratch");
                let whole = groups_end(e);
                let totals = e.for_loop(c_lo, whole, lane_v, &vec![zv; count], |e, c0, t| {
                    let k0 = e.muli(c0, chunk_v);
                    let sb: Vec<Value> = rows.iter().map(|&rr| b_scales(e, rr, k0, vl)).collect();
                    let (sa, _, _) = sa.expect("A's segment scales");
                    for i in 0..mp {
                        // Segment x of A's scales is chunk x's.
                        let sav = e.vload(sa, &[a_at(e, i), c0], vl);
                        for (j, &sbj) in sb.iter().enumerate() {
                            let x = e.index(i * rb + j as i64);
                            e.vstore(e.mulf(sav, sbj), scratch, &[x, zero]);
                        }
                    }
                    e.for_loop(zero, lane_v, one, t, |e, u, t| {
                        let c = e.addi(c0, u);
                        let sums = chunk_dots(e, c, &inits(e, c));
                        (0..count)
                            .map(|x| {
                                let s = e.load(scratch, &[e.index(x as i64), u]);
                                e.fma(converted(e, sums[x]), e.broadcast(s, vl), t[x])
                            })
                            .collect()
                    })
                });
                e.for_loop(whole, c_hi, one, &totals, interval)
            }
            _ => {
                let per = e.index(per_interval.expect("intervals of the sums"));
                let (f_lo, f_hi) = (e.divui(c_lo, per), ceil_div(e, c_hi, per));
                e.for_loop(f_lo, f_hi, one, &vec![zv; count], interval)
            }
        };
        (totals, None)
    };
    // The lane totals of group `q` with A's rows `i0 .. i0 + mp` (`block_totals`; `last`:
    // K's last block, which adds the k past the last chunk) summed and added into w; rows
    // past `clamp`, where given, read it and are not written.
    let finish = |e: &Emitter<'c, 'a>,
                  q: Value<'c, 'a>,
                  last: Value<'c, 'a>,
                  (i0, mp): (Value<'c, 'a>, i64),
                  totals: Vec<Value<'c, 'a>>,
                  clamp: Option<Value<'c, 'a>>| {
        let a_at = |e: &Emitter<'c, 'a>, i: i64| {
            let i = e.addi(i0, e.index(i));
            clamp.map_or(i, |hi| e.minui(i, hi))
        };
        let count = (mp * rb) as usize;
        let rows = b_rows(e, q);
        // The k past the last whole chunk (in K's last block), one at a time into lane 0
        // (each product times the unit and its scales).
        let tail_end = e.select(last, k, kv);
        let totals = e.for_loop(kv, tail_end, one, &totals, |e, kk, totals| {
            let mut next = totals.to_vec();
            for (j, &rr) in rows.iter().enumerate() {
                let sb = plan.seg.map(|_| b.scaled.block_value(e, rr, kk));
                for i in 0..mp {
                    let x = (i * rb) as usize + j;
                    let ii = a_row(e, a_at(e, i));
                    let p = match &tables {
                        Tables::Bytes(bt) => {
                            let nb = b.table_value(e, bt.table_b, (rr, kk));
                            let na = a.table_value(e, bt.table_a, (ii, kk));
                            let p = e.sitofp(e.muli(na, nb), f32t);
                            if sb.is_some() {
                                e.mulf(p, e.f32(unit))
                            } else {
                                p
                            }
                        }
                        Tables::Pairs(pt) => e.mulf(
                            a.table_value(e, pt.values.0, (ii, kk)),
                            b.table_value(e, pt.values.1, (rr, kk)),
                        ),
                    };
                    let v = match sb {
                        Some(sb) => e.mulf(p, e.mulf(a.scaled.block_value(e, ii, kk), sb)),
                        None => p,
                    };
                    next[x] = e.addf(next[x], e.select(first, e.broadcast(v, vl), zv));
                }
            }
            next
        });
        // Each total's lanes summed, `lanes` totals at a time.
        for set in 0..count.div_ceil(lanes as usize) {
            let of: Vec<Value> = (set * lanes as usize..(set + 1) * lanes as usize)
                .map(|x| if x < count { totals[x] } else { zv })
                .collect();
            let sums = lane_sums(e, lanes, &of);
            for x in set * lanes as usize..((set + 1) * lanes as usize).min(count) {
                let (i, j) = (x as i64 / rb, x as i64 % rb);
                let mut v = e.extract(sums, x as i64 % lanes, f32t);
                if matches!(scaling, Scaling::None) && bytes.is_some() {
                    v = e.mulf(v, e.f32(unit));
                }
                let col = e.addi(e.muli(q, e.index(rb)), e.index(j));
                let row = e.addi(i0, e.index(i));
                let add = |e: &Emitter<'c, 'a>| {
                    let at = [row, col];
                    e.store(e.addf(e.load(w, &at), v), w, &at);
                    vec![]
                };
                match clamp {
                    Some(hi) => {
                        e.if_else(e.cmpi(CmpiPredicate::Ule, row, hi), &[], add, |_| vec![]);
                    }
                    None => {
                        add(e);
                    }
                }
            }
        }
    };
    // Folding, A's rows `i0 .. i0 + mp` of group `q`'s block without the fold: pieces of
    // `fallback` rows (B looked up for each), a loop over them, the last one's rows past
    // the range reading its last and not written.
    let unfolded = |e: &Emitter<'c, 'a>,
                    q: Value<'c, 'a>,
                    (span, last): ((Value<'c, 'a>, Value<'c, 'a>), Value<'c, 'a>),
                    scratch: Option<Value<'c, 'a>>,
                    (i0, mp): (Value<'c, 'a>, i64)| {
        let size = fallback.min(mp);
        let count = (mp + size - 1) / size;
        let clamp = (mp % size != 0).then(|| e.addi(i0, e.index(mp - 1)));
        e.for_loop(zero, e.index(count), one, &[], |e, x, _| {
            let i = e.addi(i0, e.muli(x, e.index(size)));
            let (totals, _) = block_totals(e, q, span, scratch, None, (i, size), false, clamp);
            finish(e, q, last, (i, size), totals, clamp);
            vec![]
        });
        vec![]
    };
    // Chunks `c_lo .. c_hi` (a K block; `last`: K's last) of group `q` of rows of B with
    // A's rows `i0 .. i0 + mp`, their sums added into w. Folding, over the folded patterns:
    // B's in `stage` (where the group's block was found within the fold's range), else
    // looked up here, and where A's scales or these of B leave the range, without the fold
    // (`unfolded`).
    let group_block = |e: &Emitter<'c, 'a>,
                       q: Value<'c, 'a>,
                       (span, last): ((Value<'c, 'a>, Value<'c, 'a>), Value<'c, 'a>),
                       scratch: Option<Value<'c, 'a>>,
                       stage: Option<Value<'c, 'a>>,
                       (i0, mp): (Value<'c, 'a>, i64)| {
        let (totals, ok) = block_totals(e, q, span, scratch, stage, (i0, mp), fold, None);
        match ok {
            Some(ok) => {
                e.if_else(
                    e.andi(ok, a_ok),
                    &[],
                    |e| {
                        finish(e, q, last, (i0, mp), totals, None);
                        vec![]
                    },
                    |e| unfolded(e, q, (span, last), scratch, (i0, mp)),
                );
            }
            None => finish(e, q, last, (i0, mp), totals, None),
        }
    };
    // Where K takes several blocks, super-groups of `SUPER_ROWS` rows of B in parallel,
    // each a K block at a time: a block's values of A are read from L1 by every group of
    // rows of the super-group. Else each group in parallel.
    let blocks = e.maxui(ceil_div(e, chunks, e.index(block_chunks)), one);
    let per_super = e.select(
        e.cmpi(CmpiPredicate::Ugt, blocks, one),
        e.index((SUPER_ROWS / rb).max(1)),
        one,
    );
    let supers = ceil_div(e, groups, per_super);
    par(e, plan.parallel, supers, &|e, sup| {
        // Each pair's scale products of `lanes` chunks (`chunk_segments`), the iteration's.
        let scratch = chunk_segments.then(|| e.alloc(f32t, &[Some(most), Some(lanes)], &[], 64));
        // B's vectors of a group's K block (`staged`): a row of vectors for each of the
        // group's rows and halves.
        let stage = staged.then(|| {
            let elem = if bytes.is_some() { i8t } else { bf16t };
            let width = block_chunks * a_width as i64;
            e.alloc(elem, &[Some(rb * halves), Some(width)], &[], 64)
        });
        let q_lo = e.muli(sup, per_super);
        let q_hi = e.minui(e.addi(q_lo, per_super), groups);
        e.for_loop(zero, blocks, one, &[], |e, kb, _| {
            let c_lo = e.muli(kb, e.index(block_chunks));
            let c_hi = e.minui(e.addi(c_lo, e.index(block_chunks)), chunks);
            let last = e.cmpi(CmpiPredicate::Eq, kb, e.subi(blocks, one));
            e.for_loop(q_lo, q_hi, one, &[], |e, q, _| {
                // Folding, the stage holds B's folded patterns, and whether the block's
                // scales of B are within the fold's range.
                let stage_ok = stage.map(|stage| {
                    let rows = b_rows(e, q);
                    e.for_loop(c_lo, c_hi, e.index(1), &[e.bool(true)], |e, c, ok| {
                        let kk = e.muli(c, chunk_v);
                        let at = stage_at(e, c, c_lo);
                        let mut ok = ok[0];
                        for (j, &rr) in rows.iter().enumerate() {
                            let (vectors, good) = b_vectors(e, rr, kk, fold);
                            ok = e.andi(ok, good);
                            for (h, v) in vectors.into_iter().enumerate() {
                                let row = e.index(j as i64 * halves + h as i64);
                                e.vstore(v, stage, &[row, at]);
                            }
                        }
                        vec![ok]
                    })[0]
                });
                // The pieces of each size (consecutive): three or more a loop over them
                // (the copies of a run-time M stay small), else each on its own (two
                // pieces of 6 rows in a loop ran FP6 E2M3 per channel M = 12, N = K =
                // 8192, one thread, in 7.2 ms against 5.6).
                let span = ((c_lo, c_hi), last);
                let all_pieces = |e: &Emitter<'c, 'a>| {
                    let mut at = 0;
                    while at < pieces.len() {
                        let (first, size) = pieces[at];
                        let count = pieces[at..].iter().take_while(|p| p.1 == size).count();
                        if count < 3 {
                            for x in 0..count as i64 {
                                let i0 = e.index(first + x * size);
                                group_block(e, q, span, scratch, stage, (i0, size));
                            }
                        } else {
                            let upto = e.index(count as i64);
                            e.for_loop(e.index(0), upto, e.index(1), &[], |e, x, _| {
                                let i0 = e.addi(e.index(first), e.muli(x, e.index(size)));
                                group_block(e, q, span, scratch, stage, (i0, size));
                                vec![]
                            });
                        }
                        at += count;
                    }
                    vec![]
                };
                // Folding with B staged: the pieces over the folded patterns where A's
                // scales and the block's of B are within the fold's range, else all of
                // A's rows without the fold.
                match stage_ok.filter(|_| fold) {
                    Some(ok) => {
                        e.if_else(e.andi(ok, a_ok), &[], all_pieces, |e| {
                            unfolded(e, q, span, scratch, (zero, m))
                        });
                    }
                    None => {
                        all_pieces(e);
                    }
                }
                vec![]
            });
            vec![]
        });
        if let Some(scratch) = scratch {
            e.dealloc(scratch);
        }
        if let Some(stage) = stage {
            e.dealloc(stage);
        }
    });
    e.dealloc(avals);
    if let Some(starts) = starts {
        e.dealloc(starts);
    }
    if let Some((sa, _, _)) = sa {
        e.dealloc(sa);
    }
    if let Some(af) = avals_f {
        e.dealloc(af);
    }
    Ok(w)
}

/// The tables of the form's products, one kind or the other.
enum Tables<'c, 'a> {
    Bytes(Bytes<'c, 'a>),
    Pairs(Pairs<'c, 'a>),
}

/// The bf16 pairs' tables: both formats' patterns (`vpermi2w`'s) and one f32 per code of
/// A and of B for the tail.
struct Pairs<'c, 'a> {
    a: WordTables<'c, 'a>,
    b: WordTables<'c, 'a>,
    values: (Value<'c, 'a>, Value<'c, 'a>),
}

impl<'c, 'a> Pairs<'c, 'a> {
    fn new(
        e: &Emitter<'c, 'a>,
        (a, b): (&Side<'c, 'a>, &Side<'c, 'a>),
        width: u64,
        func: OperationRef<'c, 'a>,
    ) -> Result<Self, PassError> {
        Ok(Self {
            a: word_tables(e, a.format, width),
            b: word_tables(e, b.format, width),
            values: (
                scaled_decode_table(e, func, a.format, 0)?,
                scaled_decode_table(e, func, b.format, 0)?,
            ),
        })
    }
}

/// The byte form's integers: the formats' tables (`pshufb`'s and one integer per code for
/// the tail) and its exactness cap.
struct Bytes<'c, 'a> {
    d: ByteDot,
    /// Most k an interval whose lanes' sums stay exact in f32.
    cap: i64,
    a_tables: Vec<Value<'c, 'a>>,
    b_tables: Vec<Value<'c, 'a>>,
    /// B's code count (its codes masked below it).
    b_codes: i64,
    table_a: Value<'c, 'a>,
    table_b: Value<'c, 'a>,
}

impl<'c, 'a> Bytes<'c, 'a> {
    fn new(
        e: &Emitter<'c, 'a>,
        plan: &Plan,
        (a, b): (&Side<'c, 'a>, &Side<'c, 'a>),
        d: ByteDot,
        func: OperationRef<'c, 'a>,
    ) -> Result<Self, PassError> {
        let (a_ints, b_ints) = (int_codes(a, func)?, int_codes(b, func)?);
        let (ma, mb) = (i64::from(d.a.max), i64::from(d.b.max));
        let nbytes = 4 * plan.tile.lanes as u64;
        Ok(Self {
            d,
            // Each lane's sum over an interval is at most `interval / lanes x ma x mb`:
            // exact in f32 up to 2^24, and (with the start, `-mb` times A's integers) far
            // inside i32.
            cap: (1i64 << 24) / (ma * mb).max(1),
            // B's integers plus mb (unsigned); A's as they are (signed).
            a_tables: byte_tables(e, &a_ints, 0, nbytes),
            b_tables: byte_tables(e, &b_ints, mb, nbytes),
            b_codes: b_ints.len() as i64,
            table_a: int_table(e, func, &a_ints)?,
            table_b: int_table(e, func, &b_ints)?,
        })
    }

    /// A's row `src` as bytes in B's order (row `rr` of `avals`), and each lane's sum of
    /// them times `-mb` into its interval's `starts` (zeroed first), a chunk at a time
    /// (`dot`: the form's byte products).
    #[allow(clippy::type_complexity)]
    fn prepare_a(
        &self,
        e: &Emitter<'c, 'a>,
        (a, b): (&Side<'c, 'a>, &Side<'c, 'a>),
        (src, rr, lanes): (Value<'c, 'a>, Value<'c, 'a>, i64),
        (chunks, intervals, per_interval): (Value<'c, 'a>, Value<'c, 'a>, i64),
        (avals, starts): (Value<'c, 'a>, Value<'c, 'a>),
        dot: &dyn Fn(
            &Emitter<'c, 'a>,
            Value<'c, 'a>,
            Value<'c, 'a>,
            Value<'c, 'a>,
        ) -> Value<'c, 'a>,
    ) {
        let (zero, one) = (e.index(0), e.index(1));
        let vl = lanes as u64;
        let nbytes = 4 * vl;
        let n = nbytes as i64;
        let lane_v = e.index(lanes);
        let chunk_v = e.index(if b.packed { 8 * lanes } else { 4 * lanes });
        let splat8 = |e: &Emitter<'c, 'a>, v: i64| e.int_splat(8, v, nbytes);
        let i8t = e.int_type(8);
        // A's codes of row `rr` from k = `kk` in B's order (packed B's even then odd k
        // where B is packed), each below A's code count.
        let a_codes = |e: &Emitter<'c, 'a>, kk: Value<'c, 'a>| {
            let mask =
                |e: &Emitter<'c, 'a>, v| e.andi(v, splat8(e, i64::from(a.format.code_count()) - 1));
            let two = e.index(2);
            match (b.packed, a.packed) {
                (true, true) => {
                    let raw = e.vload(a.bits, &[src, e.divui(kk, two)], nbytes);
                    vec![e.andi(raw, splat8(e, 0xF)), e.shrui(raw, splat8(e, 4))]
                }
                (true, false) => {
                    let lo = e.vload(a.bits, &[src, kk], nbytes);
                    let hi = e.vload(a.bits, &[src, e.addi(kk, e.index(n))], nbytes);
                    (0..2)
                        .map(|h| {
                            let picks: Vec<i64> = (0..n).map(|x| 2 * x + h).collect();
                            mask(e, e.shuffle(lo, hi, i8t, &picks))
                        })
                        .collect()
                }
                (false, true) => {
                    let raw = e.vload(a.bits, &[src, e.divui(kk, two)], nbytes / 2);
                    vec![nibbles_in_order(e, raw, nbytes / 2)]
                }
                (false, false) => vec![mask(e, e.vload(a.bits, &[src, kk], nbytes))],
            }
        };
        e.for_loop(zero, intervals, one, &[], |e, f, _| {
            e.vstore(e.int_splat(32, 0, vl), starts, &[rr, e.muli(f, lane_v)]);
            vec![]
        });
        let ones8 = splat8(e, 1);
        let minus_mb = e.int_splat(32, -i64::from(self.d.b.max), vl);
        // A chunk at a time: its integers stored, each lane's sum of them (a dot product
        // with ones) times -mb added into its interval's starts.
        e.for_loop(zero, chunks, one, &[], |e, c, _| {
            let kk = e.muli(c, chunk_v);
            let mut sums = e.int_splat(32, 0, vl);
            for (h, codes) in a_codes(e, kk).into_iter().enumerate() {
                let v = byte_lookup(e, &self.a_tables, codes, nbytes);
                e.vstore(v, avals, &[rr, e.addi(kk, e.index(h as i64 * n))]);
                sums = dot(e, sums, ones8, v);
            }
            let at = e.muli(e.divui(c, e.index(per_interval)), lane_v);
            let s = e.vload(starts, &[rr, at], vl);
            e.vstore(e.addi(s, e.muli(sums, minus_mb)), starts, &[rr, at]);
            vec![]
        });
    }

    /// Row `rr`'s bytes (B's integers plus `mb`) of the chunk from k = `kk`: `halves`
    /// vectors (packed: the low nibbles', even k, then the high nibbles').
    fn b_bytes(
        &self,
        e: &Emitter<'c, 'a>,
        b: &Side<'c, 'a>,
        (rr, kk): (Value<'c, 'a>, Value<'c, 'a>),
        (halves, nbytes): (i64, u64),
    ) -> Vec<Value<'c, 'a>> {
        let splat8 = |v: i64| e.int_splat(8, v, nbytes);
        let col = e.divui(kk, e.index(halves));
        let raw = e.vload(b.bits, &[rr, col], nbytes);
        if b.packed {
            let lo = e.andi(raw, splat8(0xF));
            let hi = e.shrui(raw, splat8(4));
            vec![
                byte_lookup(e, &self.b_tables, lo, nbytes),
                byte_lookup(e, &self.b_tables, hi, nbytes),
            ]
        } else {
            let codes = e.andi(raw, splat8(self.b_codes - 1));
            vec![byte_lookup(e, &self.b_tables, codes, nbytes)]
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{group_rows, pieces, rows_for, staged, GROUP_ROWS};

    #[test]
    fn run_time_copies_cover_each_m_once_within_the_form() {
        let counts: std::collections::BTreeSet<i64> = (1..=32).map(rows_for).collect();
        assert_eq!(counts.len(), 16);
        for m in 1..=32 {
            let r = rows_for(m);
            let most = if m <= 16 { 1 } else { 3 };
            assert!(r >= m && r - m <= most, "M = {m}: {r} rows");
            assert_eq!(rows_for(r), r, "M = {m}: {r} rows is a copy of its own");
            // Within each limit of `max_rows`.
            for limit in [8, 12, 16, 24, 32] {
                assert!(m > limit || r <= limit, "M = {m}: {r} rows past {limit}");
            }
        }
    }

    #[test]
    fn staged_pieces_cover_a_once_within_the_registers() {
        for (carried, halves) in [(1, 1), (2, 1), (1, 2), (2, 2)] {
            for m in 2..=32 {
                let (rb, pieces) = staged(m, (carried, halves), 16).expect("a staged plan");
                assert!((2..=GROUP_ROWS).contains(&rb));
                let mut next = 0;
                for &(first, size) in &pieces {
                    assert_eq!(first, next, "M = {m}: pieces in order, none skipped");
                    assert!(size >= 1 && carried * size * rb + halves * (rb + 1) + 2 <= 32);
                    next += size;
                }
                assert_eq!(next, m, "M = {m}: every row of A once");
                let sizes: Vec<i64> = pieces.iter().map(|p| p.1).collect();
                assert!(sizes.windows(2).all(|w| w[0] >= w[1] && w[0] - w[1] <= 1));
            }
        }
        assert!(staged(16, (1, 1), 8).is_none(), "16 lanes only");
    }

    #[test]
    fn pieces_cover_a_once_and_leave_room_for_two_rows_of_b() {
        // (carried, halves) and extra of the bf16 pairs (E4M3: 4 table vectors) and of the
        // bytes (per tensor, packed and not).
        for (vectors, extra) in [
            ((1, 1), 6),
            ((2, 1), 6),
            ((2, 1), 2),
            ((2, 2), 2),
            ((1, 2), 2),
        ] {
            for lanes in [8, 16] {
                for m in 1..=16 {
                    let (rb, parts) = pieces(m, vectors, lanes, extra);
                    let mut next = 0;
                    for &(first, size) in &parts {
                        assert_eq!(first, next, "{m} {vectors:?} {parts:?}");
                        assert!(size >= 1);
                        next += size;
                    }
                    assert_eq!(next, m, "{m} {vectors:?} {parts:?}");
                    let largest = parts.iter().map(|p| p.1).max().unwrap();
                    let smallest = parts.iter().map(|p| p.1).min().unwrap();
                    assert!(largest - smallest <= 1);
                    let whole = group_rows(m, vectors, lanes, extra);
                    if parts.len() > 1 {
                        // Split only where the whole left room for one row of B, into
                        // pieces of two rows or more that leave room for two.
                        assert_eq!(lanes, 16);
                        assert!(whole.is_none_or(|r| r < 2), "{m} {vectors:?}");
                        assert!(smallest >= 2 && rb >= 2);
                        assert_eq!(group_rows(largest, vectors, lanes, extra), Some(rb));
                    } else {
                        assert_eq!(rb, whole.unwrap_or(1));
                    }
                }
            }
        }
        // FP8 per tensor: 16 rows as two of 8, two rows of B each; 11 stay whole.
        assert_eq!(pieces(16, (1, 1), 16, 6), (2, vec![(0, 8), (8, 8)]));
        assert_eq!(pieces(11, (1, 1), 16, 6), (2, vec![(0, 11)]));
        assert_eq!(pieces(12, (1, 1), 16, 6), (3, vec![(0, 6), (6, 6)]));
        // FP6 bytes per channel: 16 rows as 6 + 5 + 5.
        assert_eq!(
            pieces(16, (2, 1), 16, 2),
            (2, vec![(0, 6), (6, 5), (11, 5)])
        );
    }
}
