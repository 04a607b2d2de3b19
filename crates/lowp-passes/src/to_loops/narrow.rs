//! The narrow form of `lowp-to-loops`' f32 kernel: where A has at most two vectors of rows
//! (M <= 16 with 8 lanes, M <= 32 with 16; M known when the pass runs), the register tile
//! turns over. A's M values of one k are the vectors (one or two loads), B's columns are
//! broadcast: `nr = 2 mr / mv` columns by `mv` vectors of rows (8 lanes: 16 x 6 or 8 x 12,
//! twelve accumulators as in the 6 x 16 tile).
//!
//! B's rows are then decoded as they are stored, along K, with no transpose: a row's codes
//! a vector at a time (16 through f16 patterns and the f16 -> f32 instruction, or 8 by the
//! bit arithmetic) into the strip's buffer, one row after another, and the micro-kernel
//! broadcasts each value from there. At the decode shape (16 x N x K) the row-tile form
//! ran M = 16 as three tiles of 6 (two rows of FMAs wasted of 18) and spent a transpose of
//! 24 shuffles per 64 (8 lanes of 8 rows) values of B.
//!
//! ```mlir
//! %ap = memref.alloc(%K) : memref<?x16xf32>          // A: one k's 16 rows contiguous
//! scf.parallel (%g) = ... {                           // groups of B's 6-column strips
//!   %bs = memref.alloc() : memref<6x256xf32>          // one strip's K block, decoded
//!   scf.for %k0 = ... step 256 {                      // through all of K
//!     scf.for %p = ... {                              // the group's strips
//!       vector.load ... : vector<16xi8> ... arith.extf ... vector.store ... %bs
//!       scf.for %s0 = ... {                           // intervals (scale segments)
//!         %a0 = vector.load %ap[%k, %c0]  %a1 = vector.load %ap[%k, %c8]
//!         %b = vector.broadcast (memref.load %bs[%j, %kb])   (x 6)
//!         vector.fma %a0, %b, ...  vector.fma %a1, %b, ...   (x 6)
//!         vector.fma %p, (sa * sb), %w                // scaled once per interval
//! ```
//!
//! The sums are the row-tile form's: each accumulator adds its products in k order
//! through an interval, folded once into the sums by the same FMA, so the two forms give
//! the same bits. Padding rows of A are zero; padding columns of B (past N in the last
//! strip) read B's last row and are never written back.

use melior::ir::Value;

use super::{
    interval_sums, load_codes, par, prefetch_codes, Plan, Side, Tile, DECODE_CHUNK, SKINNY_GROUPS,
    SLOT_PANELS,
};
use crate::codes;
use crate::expand_quantize::ceil_div;
use crate::ir::Emitter;
use lowp_formats::HalfFields;
use melior::dialect::arith::CmpiPredicate;

/// Vectors of A's rows the narrow form takes for `m` rows (known when the pass runs) with
/// the row-tile form's `tile`: 1 or 2 where that runs fewer rows of FMAs than the row
/// tiles do (8 lanes: M = 7-8 and 13-16), else `None`. Each k of the narrow tile costs as
/// many FMAs as the row tile's, and where the rows are as many the row-tile form won (16 x
/// 8192 x 8192 FP8 per-tensor, two threads: M = 10 and 12 15.2-15.6 ms against 17.1 ms
/// narrow; M = 1 10.7 against 16.5 (8 rows of 1 against 6); M = 8 15.6 against 16.0; M =
/// 13 19.7 against 16.8; M = 16 19.5-21.7 against 17.1-17.7).
pub(super) fn vectors(m: Option<i64>, tile: Tile) -> Option<i64> {
    let m = m.filter(|&m| m > 0)?;
    let mv = (1..=2).find(|v| m <= v * tile.lanes)?;
    let row_tiles = (m + tile.mr - 1) / tile.mr * tile.mr;
    (mv * tile.lanes < row_tiles).then_some(mv)
}

/// The narrow form's sums, decoded and summed: `w[strip, j, row]` (`strip` = column
/// `/ nr`, `j` = column `% nr`), and the scales it read (`sa[segment, row]`,
/// `sb[strip, segment, j]`), for the write-back to apply where the scales do not change
/// along K.
pub(super) struct Narrow<'c, 'a> {
    pub nr: i64,
    pub w: Value<'c, 'a>,
    pub sa: Value<'c, 'a>,
    pub sb: Value<'c, 'a>,
}

/// The decode and GEMM of the narrow form with `mv` vectors of rows (see the module
/// header). `table_a` / `table_b` decode one code (B's scaled by `2^-shift` where `via_f16`
/// holds B's f16 fields, A's by `2^shift`); `interval` is the K interval folded into the
/// sums at once, `seg` the scale segment (`None`: scales applied by the write-back).
#[allow(clippy::too_many_arguments)]
pub(super) fn gemm<'c, 'a>(
    e: &Emitter<'c, 'a>,
    plan: &Plan,
    (a, b): (&Side<'c, 'a>, &Side<'c, 'a>),
    k: Value<'c, 'a>,
    mv: i64,
    (table_a, table_b): (Value<'c, 'a>, Value<'c, 'a>),
    via_f16: Option<HalfFields>,
    interval: i64,
) -> Narrow<'c, 'a> {
    let f32t = e.f32_type();
    let (zero, one) = (e.index(0), e.index(1));
    let lanes = plan.tile.lanes;
    let vl = lanes as u64;
    let rows = mv * lanes;
    let nr = 2 * plan.tile.mr / mv;
    let n = b.rows;
    let strips = ceil_div(e, n, e.index(nr));
    let zf = e.f32(0.0);
    let segments = match plan.seg {
        Some(s) => ceil_div(e, k, e.index(s)),
        None => one,
    };
    let seg_stride = e.index(plan.seg.unwrap_or(1));

    // A: one k's rows contiguous (`ap[k, row]`), padding rows zero; and the scales.
    let ap = e.alloc(f32t, &[None, Some(rows)], &[k], 64);
    let sa = e.alloc(f32t, &[None, Some(rows)], &[segments], 64);
    let sb = e.alloc(f32t, &[None, None, Some(nr)], &[strips, segments], 64);
    let w = e.alloc(f32t, &[None, Some(nr), Some(rows)], &[strips], 64);
    par(e, plan.parallel, e.index(rows), &|e, r| {
        let real = e.cmpi(CmpiPredicate::Ult, r, a.rows);
        let rr = e.minui(r, e.subi(a.rows, one));
        e.for_loop(zero, k, one, &[], |e, kk, _| {
            let v = a.table_value(e, table_a, (rr, kk));
            e.store(e.select(real, v, zf), ap, &[kk, r]);
            vec![]
        });
        e.for_loop(zero, segments, one, &[], |e, s, _| {
            let v = a.scaled.block_value(e, rr, e.muli(s, seg_stride));
            e.store(e.select(real, v, zf), sa, &[s, r]);
            vec![]
        });
    });
    let zv = e.zero_vector(vl);
    par(e, plan.parallel, strips, &|e, p| {
        for j in 0..nr {
            let jj = e.index(j);
            let rr = e.minui(e.addi(e.muli(p, e.index(nr)), jj), e.subi(n, one));
            e.for_loop(zero, segments, one, &[], |e, s, _| {
                let v = b.scaled.block_value(e, rr, e.muli(s, seg_stride));
                e.store(v, sb, &[p, s, jj]);
                vec![]
            });
            for v in 0..mv {
                e.vstore(zv, w, &[p, jj, e.index(v * lanes)]);
            }
        }
    });

    // B's row `rr` over k in `k0..k1` into row `j` of the strip buffer `bs`: vectors of
    // codes where a whole step fits, the rest one code at a time by the table.
    let step_k: i64 = if via_f16.is_some() { 16 } else { 8 };
    let decode_row = |e: &Emitter<'c, 'a>, bs: Value<'c, 'a>, j, rr, k0, k1| {
        let step = e.index(step_k);
        let chunk = e.index(DECODE_CHUNK);
        let kv = e.addi(k0, e.muli(e.divui(e.subi(k1, k0), step), step));
        e.for_loop(k0, kv, chunk, &[], |e, c0, _| {
            prefetch_codes(e, b, rr, c0, k);
            let c1 = e.minui(e.addi(c0, chunk), kv);
            e.for_loop(c0, c1, step, &[], |e, kk, _| {
                let kb = e.subi(kk, k0);
                match via_f16 {
                    Some(fields) => {
                        let codes = load_codes(e, b, (rr, kk), 16, 16);
                        let v = codes::f16_patterns(e, b.format, fields, codes);
                        let i16t = e.int_type(16);
                        for half in 0..2i64 {
                            let lanes: Vec<i64> = (8 * half..8 * half + 8).collect();
                            let eight = e.shuffle(v, v, i16t, &lanes);
                            let at = e.addi(kb, e.index(8 * half));
                            e.vstore(codes::widen_f16(e, eight), bs, &[j, at]);
                        }
                    }
                    None => {
                        let v = codes::decode(e, b.format, load_codes(e, b, (rr, kk), 8, 32));
                        e.vstore(v, bs, &[j, kb]);
                    }
                }
                vec![]
            });
            vec![]
        });
        e.for_loop(kv, k1, one, &[], |e, kk, _| {
            e.store(
                b.table_value(e, table_b, (rr, kk)),
                bs,
                &[j, e.subi(kk, k0)],
            );
            vec![]
        });
    };

    // One k of the tile: `mv` loads of A, `nr` broadcasts of B, `nr mv` FMAs (accumulator
    // `j mv + v`: column j, rows of vector v).
    let step = |e: &Emitter<'c, 'a>, bs: Value<'c, 'a>, kk, kb, acc: &[Value<'c, 'a>]| {
        let av: Vec<_> = (0..mv)
            .map(|v| e.vload(ap, &[kk, e.index(v * lanes)], vl))
            .collect();
        let mut next = Vec::with_capacity(acc.len());
        for j in 0..nr {
            let bv = e.broadcast(e.load(bs, &[e.index(j), kb]), vl);
            for (v, &a) in av.iter().enumerate() {
                next.push(e.fma(a, bv, acc[j as usize * mv as usize + v]));
            }
        }
        next
    };
    // Whole scale segments of up to 32 k unrolled, as in the row-tile form.
    let unroll = match plan.seg {
        Some(_) if interval <= 32 => Some(interval),
        _ => None,
    };
    let kc = e.index(plan.kc);
    let group = e.maxui(
        one,
        e.minui(
            e.index(SLOT_PANELS),
            e.divui(strips, e.index(SKINNY_GROUPS)),
        ),
    );
    let groups = ceil_div(e, strips, group);
    par(e, plan.parallel, groups, &|e, gi| {
        let bs = e.alloc(f32t, &[Some(nr), Some(plan.kc)], &[], 64);
        let p0 = e.muli(gi, group);
        let p1 = e.minui(e.addi(p0, group), strips);
        e.for_loop(zero, k, kc, &[], |e, k0, _| {
            let k1 = e.minui(e.addi(k0, kc), k);
            e.for_loop(p0, p1, one, &[], |e, p, _| {
                for j in 0..nr {
                    let jj = e.index(j);
                    let rr = e.minui(e.addi(e.muli(p, e.index(nr)), jj), e.subi(n, one));
                    decode_row(e, bs, jj, rr, k0, k1);
                }
                let seg_len = e.index(interval);
                e.for_loop(k0, k1, seg_len, &[], |e, s0, _| {
                    let s1 = e.minui(e.addi(s0, seg_len), k1);
                    let partial =
                        interval_sums(e, (k0, s0, s1), unroll, (nr * mv, vl), &|e, kk, kb, acc| {
                            step(e, bs, kk, kb, acc)
                        });
                    // Fold the interval into the sums: times `sa * sb` once per scale
                    // segment, else as it is.
                    let seg = plan.seg.map(|s| e.divui(s0, e.index(s)));
                    let sav: Vec<_> = (0..mv)
                        .map(|v| seg.map(|seg| e.vload(sa, &[seg, e.index(v * lanes)], vl)))
                        .collect();
                    for j in 0..nr {
                        let jj = e.index(j);
                        let sbj = seg.map(|seg| e.broadcast(e.load(sb, &[p, seg, jj]), vl));
                        for v in 0..mv {
                            let at = [p, jj, e.index(v * lanes)];
                            let wv = e.vload(w, &at, vl);
                            let part = partial[(j * mv + v) as usize];
                            let updated = match (sav[v as usize], sbj) {
                                (Some(sav), Some(sbj)) => e.fma(part, e.mulf(sav, sbj), wv),
                                _ => e.addf(wv, part),
                            };
                            e.vstore(updated, w, &at);
                        }
                    }
                    vec![]
                });
                vec![]
            });
            vec![]
        });
        e.dealloc(bs);
    });
    e.dealloc(ap);
    Narrow { nr, w, sa, sb }
}
