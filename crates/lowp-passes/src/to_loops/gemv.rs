//! The GEMV form of `lowp-to-loops`: where A has few rows (M known when the pass runs:
//! batch-1 LLM decoding is M = 1; up to 3, or 8 where the scales change along K no more
//! often than every 128 or MX's E8M0 scales fold into the decoded values, see `takes` and
//! `folds`), each output is a dot product along K.
//! B's rows are decoded as stored, a vector of codes at a time, straight into registers
//! (no buffer, no transpose) and multiplied with A's decoded rows (`M x K` f32, contiguous
//! along K) into vector accumulators, up to four rows of B at once (beyond 3 rows of A,
//! the group's rows of B decoded first, A's loaded one row at a time); at each scale
//! segment's end the accumulators' lane sums come out as one vector (a transposed
//! horizontal sum) and are scaled once (`sa * sb`, lane by lane) into vector totals. The
//! row-tile form runs M = 1 as a tile of 6 rows and stores, transposes and reloads every
//! decoded value of B; the byte kernel pads M alike.
//!
//! ```mlir
//! %ap = memref.alloc(%K) : memref<1x?xf32>            // A decoded, row-major
//! scf.parallel (%q) = ... {                            // groups of 12 rows of B
//!   scf.for %s0 = ... step 32 iter_args(%t) {          // scale segments
//!     %acc:4 = scf.for %kk = ... step 16 iter_args(...) {
//!       %codes = vector.load %b[%row, %kk] : memref<?x?xi8>, vector<16xi8>   (x 4 rows)
//!       %lo = arith.extf ... : vector<8xf16> to vector<8xf32>  (and %hi)
//!       vector.fma %a_lo, %lo, %acc ...  vector.fma %a_hi, %hi, ...
//!     }
//!     // the segment's last k short of a step one at a time (into lane 0), the lane sums
//!     // as one vector (shuffles and adds), `%t = fma(%sums, [sa * sb, ...], %t)`
//! ```
//!
//! The sums of a segment are added in another order than the tiles' (by lanes, then
//! across them), within the oracle's f32 summation bound as every form is.

use melior::dialect::arith::CmpiPredicate;
use melior::ir::{Value, ValueLike};

use super::{load_codes, par, prefetch_codes, Plan, Side};
use crate::codes;
use crate::expand_quantize::ceil_div;
use crate::ir::Emitter;
use lowp_formats::{HalfFields, ScaledFormat};

/// The most rows of A the GEMV form takes (f32 kernel, scale segments none or long). On
/// two Zen 3 threads at N = K = 8192 (ms, alternated with the forms it replaces): up to
/// 3 rows A's vectors loaded first beat the row tiles (FP8 per-tensor M = 1 5.4-5.7
/// against 10.7-11.1, M = 3 8.0 against 11.6; MX FP8 M = 3 12.5 against 17.1) and the
/// byte kernel (MXFP4 M = 1 5.8 against 8.1-9.3, M = 3 9.9 against 13.0); at 4-8 rows B's
/// rows decoded first (A's loaded then were twelve accumulators and eight vectors of A in
/// sixteen registers at M = 4: MX FP8 55-61 against 12) beat the tiles and narrow form
/// (FP8 per-tensor M = 4 8.2-13.2 against 12.0-19.0, 6 9.3-10.1 against 11.6-23.2, 7
/// 11.8-13.8 against 21.5-23.9, 8 12.3-14.4 against 17.2-25.2; per-channel and
/// blockwise/1x128 alike) and lost at 9 (20.4-21.4 against 16.5-21.2) and beyond.
pub(super) const GEMV_ROWS: i64 = 8;

/// The most rows of A the GEMV form takes where the byte kernel would run (FP4 E2M1
/// per-tensor: M = 4 8.0-8.2 against 9.9-11.7, 5 8.9-10.0 against 10.0-11.5; at 6 the
/// byte kernel won, 8.2-12.5 against 9.7-14.5, at 8 10.7-12.9 against 16.2-17.1).
const BYTE_GEMV_ROWS: i64 = 5;

/// Vector accumulators the form keeps at most: `M` rows of A times `12 / M` rows of B,
/// and at most `GROUP_ROWS` rows of B (four rows of B streaming at once ran 1 x 8192 x
/// 8192 FP8 in 5.4-5.6 ms, twelve in 6.3-6.4: fewer streams for the prefetchers).
const ACCUMULATORS: i64 = 12;

/// The most rows of B a group decodes at once (see `ACCUMULATORS`).
const GROUP_ROWS: i64 = 4;

/// The shortest scale segment with which the form takes more than `A_FIRST_ROWS` rows:
/// each segment ends in the lane sums and scaling of every accumulator, which at MX's 32
/// (two steps of 16) cost more than the row tiles save (MX FP8 4 x 8192 x 8192 12.2-14.7
/// against 12.2-12.6 ms, 6 rows 14.6-17.7 against 12.3-13.9).
const LONG_SEGMENT: i64 = 128;

/// The most rows of A loaded ahead of the group's rows of B; past them B's rows are
/// decoded first and A's rows loaded one at a time, to keep A's vectors out of registers.
const A_FIRST_ROWS: i64 = 3;

/// Rows of B a group takes with `m` rows of A and `parts` vectors a step: `12 / m` up to
/// `A_FIRST_ROWS` rows; past them as many as keep the accumulators, B's decoded vectors
/// and four for the decode's work within sixteen registers.
fn group_rows(m: i64, parts: i64) -> i64 {
    if m <= A_FIRST_ROWS {
        return (ACCUMULATORS / m).clamp(1, GROUP_ROWS);
    }
    (1..=GROUP_ROWS)
        .rev()
        .find(|r| m * r + parts * r + 4 <= 16)
        .unwrap_or(1)
}

/// K steps of one decode: 16 codes through f16 patterns, else a vector of `lanes`.
fn step_k(via_f16: bool, lanes: i64) -> i64 {
    if via_f16 {
        16
    } else {
        lanes
    }
}

/// The E8M0 exponents `e` (of `2^e`) within which the form folds the scales into the
/// decoded values, `-FOLD_BELOW ..= FOLD_ABOVE`: with codes of magnitudes `2^-16 ..= 2^16`
/// (see `folds`), each folded value is an f32 normal number, each nonzero product of two
/// at least `2^-126` (normal: `2 (-16 - 47)`) and below `2^96`, as the oracle's block sums
/// times their scales are (its rounding aside), so no sum along K can overflow where the
/// oracle's would not. Below as far as that allows: small scales are the common extreme
/// (gradients), and a block outside the range takes the slower segmented path.
pub(super) const FOLD_BELOW: i64 = 47;
pub(super) const FOLD_ABOVE: i64 = 32;

/// Whether the form folds the scales into the decoded values: both operands' scales
/// E8M0 (powers of two: a decoded value times its scale is exact while it stays a normal
/// f32) in segments (MX), both formats' codes within `2^-16 ..= 2^16` (every OCP format;
/// not customs with wider exponents). The accumulators then run along all of K, with
/// no lane sums and scaling at each segment's end; a group of rows whose scales leave
/// `2^-FOLD_BELOW ..= 2^FOLD_ABOVE` (or are NaN), or an A whose scales do, is
/// computed segment by segment instead (a finite scale of a block of ±0 codes folds
/// wherever it lies: `to_loops::scale_folds_if`).
pub(super) fn folds(plan: &Plan, (fa, fb): (ScaledFormat, ScaledFormat)) -> bool {
    let small = |f: ScaledFormat| f.max_finite() <= 65536.0 && f.min_positive() >= 2f32.powi(-16);
    plan.seg.is_some() && plan.e8m0 && small(fa) && small(fb)
}

/// Whether the GEMV form runs for `m` rows (known when the pass runs): up to
/// `A_FIRST_ROWS` with scale segments shorter than `LONG_SEGMENT` (unless the f32 kernel
/// can `fold` the scales: then up to `GEMV_ROWS`, folded past `A_FIRST_ROWS`), else
/// `GEMV_ROWS` (`BYTE_GEMV_ROWS` where `bytes`: the byte kernel would run); scale
/// segments (where the scales change along K) whole numbers of decode steps.
pub(super) fn takes(m: Option<i64>, plan: &Plan, via_f16: bool, bytes: bool, fold: bool) -> bool {
    let step = step_k(via_f16, plan.tile.lanes);
    let rows = match plan.seg {
        Some(s) if s < LONG_SEGMENT && (bytes || !fold) => A_FIRST_ROWS,
        _ if bytes => BYTE_GEMV_ROWS,
        _ => GEMV_ROWS,
    };
    m.is_some_and(|m| (1..=rows).contains(&m)) && plan.seg.is_none_or(|s| s % step == 0)
}

/// The GEMV form's sums, `w[row, column]` (columns padded to whole groups of B's rows;
/// per-tensor and per-channel scales not yet applied).
pub(super) struct Gemv<'c, 'a> {
    pub w: Value<'c, 'a>,
}

/// An E8M0 scale as stored (`i8`, or the `i32` it extends to) as its code, an `i32`.
pub(super) fn e8m0_code<'c, 'a>(e: &Emitter<'c, 'a>, stored: Value<'c, '_>) -> Value<'c, 'a> {
    let i32t = e.int_type(32);
    if stored.r#type() == i32t {
        e.andi(stored, e.i32(0xFF))
    } else {
        e.extui(stored, i32t)
    }
}

/// Whether an E8M0 scale as stored (`i8` or `i32`) is within the fold's exponents.
pub(super) fn in_fold_range<'c, 'a>(e: &Emitter<'c, 'a>, stored: Value<'c, '_>) -> Value<'c, 'a> {
    let from_low = e.subi(e8m0_code(e, stored), e.i32((127 - FOLD_BELOW) as u32));
    e.cmpi(
        CmpiPredicate::Ule,
        from_low,
        e.i32((FOLD_BELOW + FOLD_ABOVE) as u32),
    )
}

/// The decode and dot products of the GEMV form for `m` rows (see the module header).
/// `table_a` / `table_b` decode one code (scaled by `2^shift` / `2^-shift` where `via_f16`
/// holds B's f16 fields).
pub(super) fn gemm<'c, 'a>(
    e: &Emitter<'c, 'a>,
    plan: &Plan,
    (a, b): (&Side<'c, 'a>, &Side<'c, 'a>),
    (m, k): (i64, Value<'c, 'a>),
    (table_a, table_b): (Value<'c, 'a>, Value<'c, 'a>),
    via_f16: Option<HalfFields>,
) -> Gemv<'c, 'a> {
    let f32t = e.f32_type();
    let (zero, one) = (e.index(0), e.index(1));
    let lanes = plan.tile.lanes;
    let vl = lanes as u64;
    let step = step_k(via_f16.is_some(), lanes);
    let parts = (step / lanes) as usize;
    let rb = group_rows(m, parts as i64);
    let b_first = m > A_FIRST_ROWS;
    let n = b.rows;
    let groups = ceil_div(e, n, e.index(rb));
    let mu = m as usize;

    // A decoded row-major; its scales per row and segment.
    let ap = e.alloc(f32t, &[Some(m), None], &[k], 64);
    let segments = match plan.seg {
        Some(s) => ceil_div(e, k, e.index(s)),
        None => one,
    };
    let seg_stride = e.index(plan.seg.unwrap_or(1));
    let sa = e.alloc(f32t, &[Some(m), None], &[segments], 64);
    let w = e.alloc(f32t, &[Some(m), None], &[e.muli(groups, e.index(rb))], 64);
    // Folding where it lets the form take more than A_FIRST_ROWS rows (see `takes`).
    let fold = m > A_FIRST_ROWS
        && plan.seg.is_some_and(|s| s < LONG_SEGMENT)
        && folds(plan, (a.format, b.format));
    // Folding: A decoded times its scales too, and whether all of them fold.
    let aps = fold.then(|| e.alloc(f32t, &[Some(m), None], &[k], 64));
    for r in 0..m {
        let rr = e.index(r);
        par(e, plan.parallel, k, &|e, kk| {
            let v = a.table_value(e, table_a, (rr, kk));
            e.store(v, ap, &[rr, kk]);
            if let Some(aps) = aps {
                e.store(e.mulf(v, a.scaled.block_value(e, rr, kk)), aps, &[rr, kk]);
            }
        });
        e.for_loop(zero, segments, one, &[], |e, s, _| {
            let stored = a.scaled.block_stored(e, rr, e.muli(s, seg_stride));
            e.store(a.scaled.decode_stored(e, stored), sa, &[rr, s]);
            vec![]
        });
    }
    let a_in_range = if fold { a.folds(e, k) } else { e.bool(true) };

    // One step of B's row `rr` at `kk`: `parts` vectors of decoded values.
    let decode = |e: &Emitter<'c, 'a>, rr, kk| -> Vec<Value<'c, 'a>> {
        match via_f16 {
            Some(fields) => {
                let codes = load_codes(e, b, (rr, kk), 16, 16);
                let v = codes::f16_patterns(e, b.format, fields, codes);
                let i16t = e.int_type(16);
                (0..parts as i64)
                    .map(|p| {
                        let part = if parts == 1 {
                            v
                        } else {
                            let lanes: Vec<i64> = (p * lanes..(p + 1) * lanes).collect();
                            e.shuffle(v, v, i16t, &lanes)
                        };
                        codes::widen_f16(e, part)
                    })
                    .collect()
            }
            None => vec![codes::decode(
                e,
                b.format,
                load_codes(e, b, (rr, kk), vl, 32),
            )],
        }
    };
    let seg_len = match plan.seg {
        Some(s) => e.index(s),
        None => e.maxui(k, one),
    };
    let stride = e.index(step);
    let count = (m * rb) as usize;
    let sets = count.div_ceil(lanes as usize);
    let zv = e.zero_vector(vl);
    // Lane 0 alone: where a product one k at a time joins an accumulator.
    let first = {
        let idx = e.int_vector(32, &(0..lanes).collect::<Vec<_>>());
        e.cmpi(CmpiPredicate::Eq, idx, e.int_splat(32, 0, vl))
    };
    let vt = e.vector_type(vl, f32t);
    par(e, plan.parallel, groups, &|e, q| {
        let rows: Vec<Value> = (0..rb)
            .map(|j| e.minui(e.addi(e.muli(q, e.index(rb)), e.index(j)), e.subi(n, one)))
            .collect();
        // The products of k in [s0, s1) into the accumulators `acc` (accumulator `x = i rb +
        // j`: row i of A, row j of the group): A's decoded values from `abuf`, B's times
        // `sb[j]` where given (folded scales).
        let steps = |e: &Emitter<'c, 'a>,
                     (s0, s1): (Value<'c, 'a>, Value<'c, 'a>),
                     acc: &[Value<'c, 'a>],
                     abuf: Value<'c, 'a>,
                     sb: Option<&[Value<'c, 'a>]>|
         -> Vec<Value<'c, 'a>> {
            let sv = e.addi(s0, e.muli(e.divui(e.subi(s1, s0), stride), stride));
            let sbv: Option<Vec<Value>> =
                sb.map(|sb| sb.iter().map(|&v| e.broadcast(v, vl)).collect());
            let acc = e.for_loop(s0, sv, stride, acc, |e, kk, acc| {
                let a_row = |e: &Emitter<'c, 'a>, i: i64| -> Vec<Value<'c, 'a>> {
                    (0..parts as i64)
                        .map(|p| e.vload(abuf, &[e.index(i), e.addi(kk, e.index(p * lanes))], vl))
                        .collect()
                };
                let b_row = |e: &Emitter<'c, 'a>, j: usize, rr| {
                    prefetch_codes(e, b, rr, kk, k);
                    let v = decode(e, rr, kk);
                    match &sbv {
                        Some(sbv) => v.into_iter().map(|x| e.mulf(x, sbv[j])).collect(),
                        None => v,
                    }
                };
                let mut next = acc.to_vec();
                let mut fma = |x: usize, av: &[Value<'c, 'a>], bv: &[Value<'c, 'a>]| {
                    for (&a, &b) in av.iter().zip(bv) {
                        next[x] = e.fma(a, b, next[x]);
                    }
                };
                if b_first {
                    // The group's rows of B decoded, then A's rows one at a time.
                    let bvs: Vec<_> = rows
                        .iter()
                        .enumerate()
                        .map(|(j, &rr)| b_row(e, j, rr))
                        .collect();
                    for i in 0..mu {
                        let av = a_row(e, i as i64);
                        for (j, bv) in bvs.iter().enumerate() {
                            fma(i * rb as usize + j, &av, bv);
                        }
                    }
                } else {
                    // A's rows loaded, then the group's rows of B one at a time.
                    let avs: Vec<_> = (0..m).map(|i| a_row(e, i)).collect();
                    for (j, &rr) in rows.iter().enumerate() {
                        let bv = b_row(e, j, rr);
                        for (i, av) in avs.iter().enumerate() {
                            fma(i * rb as usize + j, av, &bv);
                        }
                    }
                }
                next
            });
            // The segment's last k short of a step, one at a time, into lane 0.
            e.for_loop(sv, s1, one, &acc, |e, kk, acc| {
                let mut next = acc.to_vec();
                for (j, &rr) in rows.iter().enumerate() {
                    let mut bv = b.table_value(e, table_b, (rr, kk));
                    if let Some(sb) = sb {
                        bv = e.mulf(bv, sb[j]);
                    }
                    for i in 0..mu {
                        let x = i * rb as usize + j;
                        let p = e.mulf(e.load(abuf, &[e.index(i as i64), kk]), bv);
                        next[x] = e.addf(next[x], e.select(first, e.broadcast(p, vl), zv));
                    }
                }
                next
            })
        };
        // The accumulators of set `set` (`lanes` of them, zeros past the last).
        let set_of = |acc: &[Value<'c, 'a>], set: usize| -> Vec<Value<'c, 'a>> {
            (set * lanes as usize..(set + 1) * lanes as usize)
                .map(|x| if x < count { acc[x] } else { zv })
                .collect()
        };
        let zeros = |n: usize| -> Vec<Value<'c, 'a>> { (0..n).map(|_| zv).collect() };
        // Segment by segment: the totals, `lanes` accumulators to a vector, carried through
        // the segments; each segment's sums come out as lane sums and join them times `sa *
        // sb` (a vector of the products, lane by lane), or as they are where the scales do
        // not change along K (the write-back applies per-tensor and per-channel scales).
        let segmented = |e: &Emitter<'c, 'a>| -> Vec<Value<'c, 'a>> {
            e.for_loop(zero, k, seg_len, &zeros(sets), |e, s0, totals| {
                let s1 = e.minui(e.addi(s0, seg_len), k);
                let acc = steps(e, (s0, s1), &zeros(count), ap, None);
                let seg = plan.seg.map(|s| e.divui(s0, e.index(s)));
                let sb: Vec<Option<Value>> = rows
                    .iter()
                    .map(|&rr| seg.map(|_| b.scaled.block_value(e, rr, s0)))
                    .collect();
                (0..sets)
                    .map(|set| {
                        let sums = lane_sums(e, lanes, &set_of(&acc, set));
                        match seg {
                            Some(seg) => {
                                let scales: Vec<Value> = (set * lanes as usize
                                    ..(set + 1) * lanes as usize)
                                    .map(|x| match (x < count, sb[x % rb as usize]) {
                                        (true, Some(sb)) => {
                                            let i = e.index((x / rb as usize) as i64);
                                            e.mulf(e.load(sa, &[i, seg]), sb)
                                        }
                                        _ => e.f32(0.0),
                                    })
                                    .collect();
                                e.fma(sums, e.from_elements(&scales), totals[set])
                            }
                            None => e.addf(totals[set], sums),
                        }
                    })
                    .collect()
            })
        };
        let totals = match aps {
            // Folded: the accumulators along all of K, over A times its scales and B's
            // decoded vectors times theirs; lane sums once at the end. Where A's or the
            // group's scales do not fold (`scale_folds`), segment by segment.
            Some(aps) => {
                let seg = plan.seg.expect("folding: scale segments");
                let mut types = vec![vt; sets];
                types.push(e.int_type(1));
                let tried = e.if_else(
                    a_in_range,
                    &types,
                    |e| {
                        let mut inits = zeros(count);
                        inits.push(e.bool(true));
                        let out = e.for_loop(zero, k, seg_len, &inits, |e, s0, carried| {
                            let s1 = e.minui(e.addi(s0, seg_len), k);
                            let mut ok = carried[count];
                            let sb: Vec<Value> = rows
                                .iter()
                                .map(|&rr| {
                                    let stored = b.scaled.block_stored(e, rr, s0);
                                    let folds = super::scale_folds(e, b, stored, rr, (s0, s1), seg);
                                    ok = e.andi(ok, folds);
                                    b.scaled.decode_stored(e, stored)
                                })
                                .collect();
                            let mut next = steps(e, (s0, s1), &carried[..count], aps, Some(&sb));
                            next.push(ok);
                            next
                        });
                        let mut sums: Vec<Value> = (0..sets)
                            .map(|set| lane_sums(e, lanes, &set_of(&out, set)))
                            .collect();
                        sums.push(out[count]);
                        sums
                    },
                    |e| {
                        let mut none = zeros(sets);
                        none.push(e.bool(false));
                        none
                    },
                );
                let folded = tried[..sets].to_vec();
                e.if_else(tried[sets], &vec![vt; sets], |_| folded, segmented)
            }
            None => segmented(e),
        };
        for x in 0..count {
            let (i, j) = (x as i64 / rb, x as i64 % rb);
            let col = e.addi(e.muli(q, e.index(rb)), e.index(j));
            let v = e.extract(totals[x / lanes as usize], x as i64 % lanes, f32t);
            e.store(v, w, &[e.index(i), col]);
        }
    });
    if let Some(aps) = aps {
        e.dealloc(aps);
    }
    e.dealloc(ap);
    e.dealloc(sa);
    Gemv { w }
}

/// The lane sums of `lanes` vectors of `lanes` f32 as one vector (lane x: the sum of vector
/// x's lanes): rounds of pairwise sums, each round's shuffles interleaving runs of `g`
/// lanes of two vectors (`g` = 1, 2, 4, ...), the transposed form of a horizontal sum (21
/// shuffles and adds for eight vectors against 56 one at a time).
pub(super) fn lane_sums<'c, 'a>(
    e: &Emitter<'c, 'a>,
    lanes: i64,
    vs: &[Value<'c, 'a>],
) -> Value<'c, 'a> {
    let f32t = e.f32_type();
    let mut vs = vs.to_vec();
    let mut g = 1;
    while vs.len() > 1 {
        let pick = |from: i64| -> Vec<i64> {
            (0..lanes / (2 * g))
                .flat_map(|blk| {
                    let at = blk * 2 * g + from;
                    (at..at + g).chain(lanes + at..lanes + at + g)
                })
                .collect()
        };
        let (lo, hi) = (pick(0), pick(g));
        vs = vs
            .chunks(2)
            .map(|p| {
                let a = e.shuffle(p[0], p[1], f32t, &lo);
                e.addf(a, e.shuffle(p[0], p[1], f32t, &hi))
            })
            .collect();
        g *= 2;
    }
    vs[0]
}
