//! The byte GEMV form of `lowp-to-loops`: the GEMV form (`gemv.rs`: few rows of A, each
//! output a dot product along K, B's rows read as stored) for the byte kernel's formats
//! (`dot=i8|vnni` where both formats are small integers, `lowp_formats::IntEmbedding`).
//!
//! B's codes become bytes by one table lookup a vector (`pshufb`; each code's integer plus
//! B's offset `mb`, so unsigned), and each `vpdpbusd` (else `pmaddubsw` and `pmaddwd`) adds
//! four products into each i32 lane: 64 products an instruction at 16 lanes, where the f32
//! GEMV form decodes each code to f32 and spends a lane of an FMA on it. A's integers
//! (signed bytes) are laid out once in the order B's bytes arrive, so B is never shuffled:
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
//! its products.
//! At an interval's end the lane sums are converted to f32 (exact: the intervals are
//! short enough) and times the formats' unit `2^-(shift_a + shift_b)`: the f32 kernel's
//! segment sums split over lanes. They join the lanes' f32 totals times the segment's
//! scales `sa * sb`:
//! - segments shorter than a chunk (MX's 32, NVFP4's 16): one chunk an interval, holding
//!   `chunk / seg` segments of `seg / g` lanes each (`g`: k a lane); B's scales of
//!   `lanes` segments (a group of chunks: four of packed MXFP4's) one vector load where
//!   B's scale block is the segment, decoded lane by lane, each chunk's spread over its
//!   lanes by a shuffle, times A's scales of the lanes;
//! - segments of whole chunks (blockwise 128): a segment an interval, its i32 sums carried
//!   through its chunks, and one scalar `sa * sb`;
//! - no segments (per-tensor, per-channel): intervals as long as each lane's sum stays
//!   within f32's integers, no scales (the write-back applies them), the unit at the end.
//!
//! The k past the last whole chunk are summed one at a time into lane 0.
//!
//! ```mlir
//! // A's integers as bytes in B's order; -mb x A's lane sums; A's scales of each lane
//! scf.parallel (%q) = ... {                             // groups of rows of B
//!   %t:4 = scf.for %c0 = %c0 to %whole step %c4 iter_args(...) -> (vector<16xf32>, ...) {
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
//!   // the chunks past whole groups one at a time, the k past the chunks into lane 0,
//!   // each total's lanes summed into w[i, row]
//! }
//! ```
//!
//! The lanes' sums are added in another order than the other forms' (each lane's k, then
//! across lanes), within the oracle's f32 summation bound as every form is.

use melior::dialect::arith::CmpiPredicate;
use melior::ir::{OperationRef, Value};

use super::gemv::lane_sums;
use super::{
    byte_lookup, byte_tables, int_codes, k_block, nibbles_in_order, par, prefetch_codes_ahead,
    ByteDot, Plan, Side,
};
use crate::expand_quantize::{ceil_div, int_table};
use crate::ir::Emitter;
use crate::PassError;
use lowp_formats::ScaledFormat;

/// The most rows of A the form takes where B's codes are at most 4 bits (one `pshufb`
/// table). On two Zen 5 threads at N = K = 8192 (ms, three alternated rounds against the
/// forms it replaced, 954b52b): MXFP4 M = 4 1.8-2.3 against 6.8-7.5 (row tiles), M = 8
/// 5.0-6.8 against 4.9-7.3 (even); NVFP4 M = 8 5.7-6.5 against 7.4-11.9; FP4 per tensor M
/// = 8 2.3-2.7 against 3.9-8.5; at M = 12 the row tiles won (MXFP4 5.4 against 7.3).
const ROWS: i64 = 8;

/// The most rows where B's codes take several tables (FP6 E2M3: four lookups and three
/// selects a vector): MXFP6 M = 4 3.8-3.9 against 6.2-6.5, M = 6 11.1 against 12.1, M = 8
/// 10.2 against 8.3 (one round).
const WIDE_ROWS: i64 = 6;

/// The most rows of B a group takes at once (four streams for the prefetchers, as the f32
/// GEMV form found best).
const GROUP_ROWS: i64 = 4;

/// How far ahead of a chunk each row of B is prefetched, in bytes of codes (twice as many k
/// where they are packed).
const PREFETCH_BYTES: i64 = 512;

/// Whether the form runs for `m` rows (known when the pass runs) of A times B in format
/// `fb` under `plan`, the byte kernel's plan existing for the formats: up to `ROWS` rows
/// (`WIDE_ROWS` past 16 codes); scale segments a multiple of 8 k (a lane's k lie in one
/// segment, packed or not) that divide a chunk of either storage or are whole chunks of
/// both.
pub(super) fn takes(m: Option<i64>, plan: &Plan, fb: ScaledFormat) -> bool {
    let rows = if fb.code_count() <= 16 {
        ROWS
    } else {
        WIDE_ROWS
    };
    let lanes = plan.tile.lanes;
    let segments_fit = plan
        .seg
        .is_none_or(|s| s % 8 == 0 && ((4 * lanes) % s == 0 || s % (8 * lanes) == 0));
    m.is_some_and(|m| (1..=rows).contains(&m)) && segments_fit
}

/// Rows of B a group takes with `m` rows of A and `halves` byte vectors a row and chunk:
/// as many as keep each pair's i32 sums and f32 totals, A's and B's byte vectors of a
/// chunk and two for the decode within the vector registers (32 zmm at 16 lanes, 16 ymm
/// at 8).
fn group_rows(m: i64, halves: i64, lanes: i64) -> i64 {
    let registers = if lanes == 16 { 32 } else { 16 };
    (1..=GROUP_ROWS)
        .rev()
        .find(|&r| 2 * m * r + halves * (m + r) + 2 <= registers)
        .unwrap_or(1)
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

/// The byte GEMV form's sums for `m` rows: `w[row, column]` (columns padded to whole
/// groups of B's rows; per-tensor and per-channel scales not yet applied).
pub(super) fn gemm<'c, 'a>(
    e: &Emitter<'c, 'a>,
    plan: &Plan,
    (a, b): (&Side<'c, 'a>, &Side<'c, 'a>),
    (m, k): (i64, Value<'c, 'a>),
    d: ByteDot,
    func: OperationRef<'c, 'a>,
) -> Result<Value<'c, 'a>, PassError> {
    let (a_ints, b_ints) = (int_codes(a, func)?, int_codes(b, func)?);
    let (ma, mb) = (i64::from(d.a.max), i64::from(d.b.max));
    let table_a = int_table(e, func, &a_ints)?;
    let table_b = int_table(e, func, &b_ints)?;
    let (f32t, i32t, i8t, i16t) = (e.f32_type(), e.int_type(32), e.int_type(8), e.int_type(16));
    let (zero, one) = (e.index(0), e.index(1));
    let lanes = plan.tile.lanes;
    let vl = lanes as u64;
    // k a lane holds in a chunk; byte vectors a row and chunk.
    let (g, halves) = if b.packed { (8, 2) } else { (4, 1) };
    let chunk = g * lanes;
    let nbytes = 4 * vl;
    let (chunk_v, lane_v) = (e.index(chunk), e.index(lanes));
    let chunks = e.divui(k, chunk_v);
    let kv = e.muli(chunks, chunk_v);
    // Each lane's sum over an interval is at most `interval / lanes x ma x mb`: exact in
    // f32 up to 2^24, and (with the start, `-mb` times A's integers) far inside i32.
    let cap = (1i64 << 24) / (ma * mb).max(1);
    // Chunks an interval (of the lanes' starts and i32 sums; one where segments are
    // shorter than a chunk).
    let (per_interval, scaling) = match plan.seg {
        None => ((cap / g).max(1), Scaling::None),
        Some(s) if s >= chunk => (s / chunk, Scaling::Whole { seg: s }),
        Some(s) => (
            1,
            Scaling::Lanes {
                seg: s,
                per: chunk / s,
            },
        ),
    };
    let intervals = ceil_div(e, chunks, e.index(per_interval));
    let unit = d.unit();
    // The unit on A's scales where that is exact (`Plan::unit_in_scales`).
    let unit_in_scales = plan.unit_in_scales();

    // ---- B's bytes and the dot products --------------------------------------------
    let (dpbusd, maddubs, maddwd) = if lanes == 16 {
        (
            "llvm.x86.avx512.vpdpbusd.512",
            "llvm.x86.avx512.pmaddubs.w.512",
            "llvm.x86.avx512.pmaddw.d.512",
        )
    } else {
        (
            "llvm.x86.avx512.vpdpbusd.256",
            "llvm.x86.avx2.pmadd.ub.sw",
            "llvm.x86.avx2.pmadd.wd",
        )
    };
    let (i16v, i32v) = (e.vector_type(2 * vl, i16t), e.vector_type(vl, i32t));
    let splat8 = |e: &Emitter<'c, 'a>, v: i64| e.int_splat(8, v, nbytes);
    // B's integers plus mb (unsigned); A's as they are (signed).
    let (b_tables, a_tables) = (
        byte_tables(e, &b_ints, mb, nbytes),
        byte_tables(e, &a_ints, 0, nbytes),
    );
    let lookup = |e: &Emitter<'c, 'a>, tables: &[Value<'c, 'a>], codes: Value<'c, 'a>| {
        byte_lookup(e, tables, codes, nbytes)
    };
    let ones16 = e.int_splat(16, 1, 2 * vl);
    let dot = |e: &Emitter<'c, 'a>, acc, unsigned, signed| {
        if d.vnni {
            return e.call_intrinsic(dpbusd, &[acc, unsigned, signed], i32v);
        }
        let pairs = e.call_intrinsic(maddubs, &[unsigned, signed], i16v);
        let quads = e.call_intrinsic(maddwd, &[pairs, ones16], i32v);
        e.addi(acc, quads)
    };

    // ---- A: its integers as bytes in B's order, the lanes' starts, its scales --------
    // A's codes of row `rr` from k = `kk` in B's order (`halves` vectors: packed B's even
    // then odd k), each below A's code count.
    let a_codes = |e: &Emitter<'c, 'a>, rr: Value<'c, 'a>, kk: Value<'c, 'a>| {
        let mask =
            |e: &Emitter<'c, 'a>, v| e.andi(v, splat8(e, i64::from(a.format.code_count()) - 1));
        let two = e.index(2);
        let n = nbytes as i64;
        match (b.packed, a.packed) {
            (true, true) => {
                let raw = e.vload(a.bits, &[rr, e.divui(kk, two)], nbytes);
                vec![e.andi(raw, splat8(e, 0xF)), e.shrui(raw, splat8(e, 4))]
            }
            (true, false) => {
                let lo = e.vload(a.bits, &[rr, kk], nbytes);
                let hi = e.vload(a.bits, &[rr, e.addi(kk, e.index(n))], nbytes);
                (0..2)
                    .map(|h| {
                        let picks: Vec<i64> = (0..n).map(|x| 2 * x + h).collect();
                        mask(e, e.shuffle(lo, hi, i8t, &picks))
                    })
                    .collect()
            }
            (false, true) => {
                let raw = e.vload(a.bits, &[rr, e.divui(kk, two)], nbytes / 2);
                vec![nibbles_in_order(e, raw, nbytes / 2)]
            }
            (false, false) => vec![mask(e, e.vload(a.bits, &[rr, kk], nbytes))],
        }
    };
    let abytes = e.alloc(i8t, &[Some(m), None], &[kv], 64);
    let starts = e.alloc(i32t, &[Some(m), None], &[e.muli(intervals, lane_v)], 64);
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
    let ones8 = splat8(e, 1);
    let minus_mb = e.int_splat(32, -mb, vl);
    for r in 0..m {
        let rr = e.index(r);
        e.for_loop(zero, intervals, one, &[], |e, f, _| {
            e.vstore(e.int_splat(32, 0, vl), starts, &[rr, e.muli(f, lane_v)]);
            vec![]
        });
        // A chunk at a time: its integers stored, each lane's sum of them (a dot product
        // with ones) times -mb added into its interval's starts.
        e.for_loop(zero, chunks, one, &[], |e, c, _| {
            let kk = e.muli(c, chunk_v);
            let mut sums = e.int_splat(32, 0, vl);
            for (h, codes) in a_codes(e, rr, kk).into_iter().enumerate() {
                let v = lookup(e, &a_tables, codes);
                e.vstore(
                    v,
                    abytes,
                    &[rr, e.addi(kk, e.index(h as i64 * nbytes as i64))],
                );
                sums = dot(e, sums, ones8, v);
            }
            let at = e.muli(e.divui(c, e.index(per_interval)), lane_v);
            let s = e.vload(starts, &[rr, at], vl);
            e.vstore(e.addi(s, e.muli(sums, minus_mb)), starts, &[rr, at]);
            vec![]
        });
        // Entry x of A's scales is k = x * step's (a segment's first k, or a lane's).
        if let Some((sa, entries, step)) = sa {
            e.for_loop(zero, entries, one, &[], |e, x, _| {
                let v = a.scaled.block_value(e, rr, e.muli(x, e.index(step)));
                let v = if unit_in_scales {
                    e.mulf(v, e.f32(unit))
                } else {
                    v
                };
                e.store(v, sa, &[rr, x]);
                vec![]
            });
        }
    }

    // Row `rr`'s bytes of the chunk from k = `kk`: `halves` vectors.
    let b_bytes = |e: &Emitter<'c, 'a>, rr: Value<'c, 'a>, kk: Value<'c, 'a>| {
        prefetch_codes_ahead(e, b, (rr, kk), k, PREFETCH_BYTES * halves);
        let col = e.divui(kk, e.index(halves));
        let raw = e.vload(b.bits, &[rr, col], nbytes);
        if b.packed {
            let lo = e.andi(raw, splat8(e, 0xF));
            let hi = e.shrui(raw, splat8(e, 4));
            vec![lookup(e, &b_tables, lo), lookup(e, &b_tables, hi)]
        } else {
            let codes = e.andi(raw, splat8(e, b_ints.len() as i64 - 1));
            vec![lookup(e, &b_tables, codes)]
        }
    };
    // ---- the groups of rows of B ---------------------------------------------------
    let n = b.rows;
    let rb = group_rows(m, halves, lanes);
    let groups = ceil_div(e, n, e.index(rb));
    let w = e.alloc(f32t, &[Some(m), None], &[e.muli(groups, e.index(rb))], 64);
    let count = (m * rb) as usize;
    let zv = e.zero_vector(vl);
    let unit_v = e.f32_splat(unit, vl);
    // Lane 0 alone: where the tail's products join a total.
    let first = {
        let idx = e.int_vector(32, &(0..lanes).collect::<Vec<_>>());
        e.cmpi(CmpiPredicate::Eq, idx, e.int_splat(32, 0, vl))
    };
    par(e, plan.parallel, groups, &|e, q| {
        let rows: Vec<Value> = (0..rb)
            .map(|j| e.minui(e.addi(e.muli(q, e.index(rb)), e.index(j)), e.subi(n, one)))
            .collect();
        // The i32 sums of chunk `c` added to `acc`.
        let chunk_dots = |e: &Emitter<'c, 'a>, c: Value<'c, 'a>, acc: &[Value<'c, 'a>]| {
            let kk = e.muli(c, chunk_v);
            let bvs: Vec<Vec<Value>> = rows.iter().map(|&rr| b_bytes(e, rr, kk)).collect();
            let mut next = acc.to_vec();
            for i in 0..m {
                let avs: Vec<Value> = (0..halves)
                    .map(|h| {
                        let from = e.addi(kk, e.index(h * nbytes as i64));
                        e.vload(abytes, &[e.index(i), from], nbytes)
                    })
                    .collect();
                for (j, bv) in bvs.iter().enumerate() {
                    let x = (i * rb) as usize + j;
                    for (&u, &s) in bv.iter().zip(&avs) {
                        next[x] = dot(e, next[x], u, s);
                    }
                }
            }
            next
        };
        // The lanes' starts of interval `f`, one per pair.
        let inits = |e: &Emitter<'c, 'a>, f: Value<'c, 'a>| -> Vec<Value<'c, 'a>> {
            let at = e.muli(f, lane_v);
            (0..m)
                .map(|i| e.vload(starts, &[e.index(i), at], vl))
                .flat_map(|s| std::iter::repeat_n(s, rb as usize))
                .collect()
        };
        // An interval's i32 sums as f32, times the unit where it is not elsewhere.
        let converted = |e: &Emitter<'c, 'a>, sums: Value<'c, 'a>| {
            let v = e.sitofp(sums, e.vector_type(vl, f32t));
            match scaling {
                Scaling::None => v,
                _ if unit_in_scales => v,
                _ => e.mulf(v, unit_v),
            }
        };
        let totals = match scaling {
            Scaling::Lanes { seg, per } => {
                // B's scale block is the segment: a chunk's scales are contiguous.
                let contiguous = k_block(b.scaled.layout) == Some(seg);
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
                                    let idx = b.scaled.scale_index(e, rr, k0);
                                    let stored = e.vload(b.scaled.scales, &idx, width);
                                    b.scaled.decode_stored_lanes(e, stored, Some(width))
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
                            for i in 0..m {
                                let sav = e.vload(sa, &[e.index(i), at], vl);
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
                let group = if contiguous { lanes / per } else { 1 };
                let whole = e.muli(e.divui(chunks, e.index(group)), e.index(group));
                let totals =
                    e.for_loop(zero, whole, e.index(group), &vec![zv; count], |e, c0, t| {
                        chunks_at(e, c0, group, t)
                    });
                e.for_loop(whole, chunks, one, &totals, |e, c, t| chunks_at(e, c, 1, t))
            }
            _ => e.for_loop(zero, intervals, one, &vec![zv; count], |e, f, totals| {
                let c0 = e.muli(f, e.index(per_interval));
                let c1 = e.minui(e.addi(c0, e.index(per_interval)), chunks);
                let sums = e.for_loop(c0, c1, one, &inits(e, f), |e, c, acc| chunk_dots(e, c, acc));
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
                                let s = e.mulf(e.load(sa, &[e.index(i), t]), sb[j]);
                                e.fma(converted(e, sums[x]), e.broadcast(s, vl), totals[x])
                            })
                            .collect()
                    }
                    _ => (0..count)
                        .map(|x| e.addf(totals[x], converted(e, sums[x])))
                        .collect(),
                }
            }),
        };
        // The k past the last whole chunk, one at a time into lane 0 (each product times
        // the unit and its scales).
        let totals = e.for_loop(kv, k, one, &totals, |e, kk, totals| {
            let mut next = totals.to_vec();
            for (j, &rr) in rows.iter().enumerate() {
                let nb = b.table_value(e, table_b, (rr, kk));
                let sb = plan.seg.map(|_| b.scaled.block_value(e, rr, kk));
                for i in 0..m {
                    let x = (i * rb) as usize + j;
                    let ii = e.index(i);
                    let na = a.table_value(e, table_a, (ii, kk));
                    let p = e.sitofp(e.muli(na, nb), f32t);
                    let v = match sb {
                        Some(sb) => {
                            let sa = a.scaled.block_value(e, ii, kk);
                            e.mulf(e.mulf(p, e.f32(unit)), e.mulf(sa, sb))
                        }
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
                if let Scaling::None = scaling {
                    v = e.mulf(v, e.f32(unit));
                }
                let col = e.addi(e.muli(q, e.index(rb)), e.index(j));
                e.store(v, w, &[e.index(i), col]);
            }
        }
    });
    e.dealloc(abytes);
    e.dealloc(starts);
    if let Some((sa, _, _)) = sa {
        e.dealloc(sa);
    }
    Ok(w)
}
