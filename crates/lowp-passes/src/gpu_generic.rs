//! The generic GPU kernel of `lowp-to-nvvm` and `lowp-to-rocdl`, for the formats and layouts
//! no matrix instruction takes (a custom format that embeds in no FP8 type, FNUZ on NVIDIA,
//! scale blocks finer than an instruction's K): a tiled decode-and-accumulate kernel in
//! shared memory (LDS on AMD).
//!
//! A block of 16 x 16 threads computes a 64 x 64 tile of C: thread (x, y) the 4 x 4 outputs
//! of rows y + 16 r and columns x + 16 c. K advances a chunk of `KC` codes at a time: the
//! threads decode the chunk of the A tile and of the B tile (each code once, by bit
//! arithmetic, zero past K) into f32 in shared memory, a barrier, each thread accumulates
//! its 16 outputs from shared memory (per code of the chunk 4 values of A, 4 of B, 16
//! fmas), a barrier. A tile's rows are `KC + 4` words apart (`KC + 1` where `KC` is not a
//! multiple of 4; `Generic::stride`), so that the columns a warp reads at once fall in
//! distinct banks (at `KC` apart they fell in one: the first form, a 32 x 32 tile with a
//! column a thread, ran 6 TFLOP/s on the H200), and 4 codes of a row are one 16-byte load.
//! `KC` divides the K segment over which neither scale changes, so at a segment's end the
//! partial sums go into the accumulators times sa * sb, as the oracle sums them (in K
//! order, in f32); per-tensor / per-channel scales (their product), the NVFP4 globals and
//! the bias follow in the epilogue.
//!
//! With `emulate=true` the same phases run on the CPU one after the other (threads in
//! loops, a buffer standing for shared memory), which is how the kernel is checked against
//! the oracle without a GPU.

use melior::dialect::arith::CmpiPredicate;
use melior::ir::{OperationRef, Type, Value};

use crate::codes;
use crate::expand_quantize::{ceil_div, load_code};
use crate::ir::Emitter;
use crate::matrix_kernel::segment_end;
use crate::to_parallel_loops::{global_product, store_result, Operands};
use crate::PassError;

/// Threads per block along columns (x) and rows (y); rows and columns per thread.
const TX: i64 = 16;
const TY: i64 = 16;
const ROWS: usize = 4;
const COLS: usize = 4;
/// A thread's outputs.
const OUT: usize = ROWS * COLS;
/// The block's tile of C.
const BM: i64 = TY * ROWS as i64;
const BN: i64 = TX * COLS as i64;

/// Codes of K per chunk: a divisor of the scale segment, at most 32.
fn chunk(seg: Option<i64>) -> i64 {
    fn gcd(a: i64, b: i64) -> i64 {
        if b == 0 {
            a
        } else {
            gcd(b, a % b)
        }
    }
    match seg {
        None => 32,
        Some(s) => gcd(s, 32),
    }
}

/// A thread of a block: its coordinates and the block's tile origin.
#[derive(Clone, Copy)]
struct Thread<'c, 'a> {
    x: Value<'c, 'a>,
    y: Value<'c, 'a>,
    row0: Value<'c, 'a>,
    col0: Value<'c, 'a>,
}

impl<'c, 'a> Thread<'c, 'a> {
    /// Row and column of C of output `i` (row `i / COLS`, column `i % COLS` of the
    /// thread's).
    fn output(&self, e: &Emitter<'c, 'a>, i: usize) -> (Value<'c, 'a>, Value<'c, 'a>) {
        let (r, c) = ((i / COLS) as i64, (i % COLS) as i64);
        (
            e.addi(e.addi(self.row0, self.y), e.index(TY * r)),
            e.addi(e.addi(self.col0, self.x), e.index(TX * c)),
        )
    }
}

/// The kernel's phases, shared by the GPU form and its emulation.
struct Generic<'o, 'c, 'a> {
    ops: &'o Operands<'c, 'a>,
    kc: i64,
    /// K per promotion of the partial sums: the segment, or all of K.
    span: Option<i64>,
}

impl<'o, 'c, 'a> Generic<'o, 'c, 'a> {
    /// Words from one row of a shared tile to the next: `KC + 4` where whole 16-byte
    /// groups of a row line up, so that LLVM joins a row's 4 consecutive codes into one
    /// 128-bit load (each quarter warp's 8 columns then 9 groups apart, in 8 of the 8
    /// bank groups); else `KC + 1` (the 16 columns a warp reads in 16 banks).
    fn stride(&self) -> i64 {
        if self.kc % 4 == 0 {
            self.kc + 4
        } else {
            self.kc + 1
        }
    }

    /// Words of a shared tile.
    fn tile_words(&self) -> i64 {
        BM.max(BN) * self.stride()
    }

    /// Decode this thread's share of the chunk at `k0` into the shared tiles: `a_s[row][kk]`
    /// and `b_s[col][kk]` as f32 (rows `stride` apart), zero past K.
    fn fill(
        &self,
        e: &Emitter<'c, 'a>,
        t: &Thread<'c, 'a>,
        k0: Value<'c, 'a>,
        tiles: [Value<'c, 'a>; 2],
    ) {
        let ops = self.ops;
        let tid = e.addi(e.muli(t.y, e.index(TX)), t.x);
        debug_assert_eq!(BM, BN);
        let per_tile = BM * self.kc;
        let kc = e.index(self.kc);
        for it in 0..(per_tile + TX * TY - 1) / (TX * TY) {
            let idx = e.addi(tid, e.index(it * TX * TY));
            let body = |e: &Emitter<'c, 'a>| {
                let (rc, kk) = (e.divui(idx, kc), e.remui(idx, kc));
                let k = e.addi(k0, kk);
                let inside = e.cmpi(CmpiPredicate::Ult, k, ops.k);
                let kcl = e.minui(k, e.subi(ops.k, e.index(1)));
                let sides = [
                    (t.row0, ops.m, ops.bits_a, ops.packed_a, ops.fa),
                    (t.col0, ops.n, ops.bits_b, ops.packed_b, ops.fb),
                ];
                for ((origin, rows, bits, packed, f), tile) in sides.into_iter().zip(tiles) {
                    // Rows past the end read the last one: their outputs are never stored.
                    let row = e.minui(e.addi(origin, rc), e.subi(rows, e.index(1)));
                    let v =
                        codes::decode(e, f, load_code(e, bits, packed, f.bit_width(), row, kcl));
                    let at = e.addi(e.muli(rc, e.index(self.stride())), kk);
                    e.store(e.select(inside, v, e.f32(0.0)), tile, &[at]);
                }
            };
            if (it + 1) * TX * TY <= per_tile {
                body(e);
            } else {
                e.if_then(e.cmpi(CmpiPredicate::Ult, idx, e.index(per_tile)), body);
            }
        }
    }

    /// This thread's partial sums advanced over the chunk in the shared tiles.
    fn accumulate(
        &self,
        e: &Emitter<'c, 'a>,
        t: &Thread<'c, 'a>,
        tiles: [Value<'c, 'a>; 2],
        part: &[Value<'c, 'a>],
    ) -> Vec<Value<'c, 'a>> {
        let (kc, stride) = (e.index(self.kc), e.index(self.stride()));
        let value =
            |e: &Emitter<'c, 'a>, tile, line, kk| e.load(tile, &[e.addi(e.muli(line, stride), kk)]);
        e.for_loop(e.index(0), kc, e.index(1), part, |e, kk, p| {
            let a: Vec<Value> = (0..ROWS)
                .map(|r| value(e, tiles[0], e.addi(t.y, e.index(TY * r as i64)), kk))
                .collect();
            let b: Vec<Value> = (0..COLS)
                .map(|c| value(e, tiles[1], e.addi(t.x, e.index(TX * c as i64)), kk))
                .collect();
            // (A fused multiply-add: one rounding where a product and a sum take two, inside
            // the contract's f32 bound as the CPU kernel's FMAs are.)
            (0..OUT)
                .map(|i| e.scalar_fma(a[i / COLS], b[i % COLS], p[i]))
                .collect()
        })
    }

    /// `acc + part * (sa * sb)` with the scales of the segment at `k0` (or `acc + part`
    /// when no scale changes along K).
    fn promote(
        &self,
        e: &Emitter<'c, 'a>,
        t: &Thread<'c, 'a>,
        k0: Value<'c, 'a>,
        acc: &[Value<'c, 'a>],
        part: &[Value<'c, 'a>],
    ) -> Vec<Value<'c, 'a>> {
        let ops = self.ops;
        if ops.seg.is_none() {
            return acc.iter().zip(part).map(|(&a, &p)| e.addf(a, p)).collect();
        }
        let last_row = e.subi(ops.m, e.index(1));
        let last_col = e.subi(ops.n, e.index(1));
        let sa: Vec<Value> = (0..ROWS)
            .map(|r| {
                let (row, _) = t.output(e, r * COLS);
                ops.sa.block_value(e, e.minui(row, last_row), k0)
            })
            .collect();
        let sb: Vec<Value> = (0..COLS)
            .map(|c| {
                let (_, col) = t.output(e, c);
                ops.sb.block_value(e, e.minui(col, last_col), k0)
            })
            .collect();
        (0..OUT)
            .map(|i| {
                let scale = e.mulf(sa[i / COLS], sb[i % COLS]);
                e.addf(acc[i], e.mulf(part[i], scale))
            })
            .collect()
    }

    /// Store this thread's outputs inside C, with the per-tensor / per-channel scales when
    /// no scale changes along K, the globals and the bias.
    fn epilogue(&self, e: &Emitter<'c, 'a>, t: &Thread<'c, 'a>, acc: &[Value<'c, 'a>]) {
        let ops = self.ops;
        let global = global_product(e, &ops.sa, &ops.sb);
        let zero = e.index(0);
        for (r, &v) in acc.iter().enumerate() {
            let (row, col) = t.output(e, r);
            let inside = e.andi(
                e.cmpi(CmpiPredicate::Ult, row, ops.m),
                e.cmpi(CmpiPredicate::Ult, col, ops.n),
            );
            e.if_then(inside, |e| {
                let mut v = v;
                if ops.seg.is_none() {
                    // The contract's one scale product, then the total times it.
                    v = e.mulf(
                        v,
                        e.mulf(
                            ops.sa.block_value(e, row, zero),
                            ops.sb.block_value(e, col, zero),
                        ),
                    );
                }
                store_result(e, &ops.o, global, ops.out_type, v, row, col);
            });
        }
    }
}

/// Lower `op` to the generic kernel: a `gpu.launch` with the tiles in workgroup memory, or
/// its CPU emulation.
pub(crate) fn lower<'c, 'a>(
    e: &Emitter<'c, 'a>,
    op: OperationRef<'c, 'a>,
    emulate: bool,
) -> Result<(), PassError> {
    let ops = Operands::read(e, op)?;
    let g = Generic {
        ops: &ops,
        kc: chunk(ops.seg),
        span: ops.seg,
    };
    let (zero, one) = (e.index(0), e.index(1));
    let grid = [
        ceil_div(e, ops.n, e.index(BN)),
        ceil_div(e, ops.m, e.index(BM)),
    ];
    let tile_words = g.tile_words();
    let f32t = e.f32_type();
    if emulate {
        e.parallel_nest(&[zero, zero], &grid, &[one, one], |e, b| {
            emulated_block(e, &g, b[1], b[0])
        });
        return Ok(());
    }
    let tile_type = Type::parse(
        e.ctx(),
        &format!("memref<{tile_words}xf32, #gpu.address_space<workgroup>>"),
    )
    .expect("valid workgroup memref type");
    e.gpu_launch(
        [grid[0], grid[1], one],
        [e.index(TX), e.index(TY), one],
        &[tile_type, tile_type],
        |e, bid, tid, tiles| {
            let t = Thread {
                x: tid[0],
                y: tid[1],
                row0: e.muli(bid[1], e.index(BM)),
                col0: e.muli(bid[0], e.index(BN)),
            };
            let tiles = [tiles[0], tiles[1]];
            let inits = vec![e.f32(0.0); 2 * OUT];
            let done = e.for_loop(zero, ops.k, e.index(g.kc), &inits, |e, k0, carried| {
                let (acc, part) = (&carried[..OUT], &carried[OUT..]);
                g.fill(e, &t, k0, tiles);
                e.bare("gpu.barrier", &[]);
                let part = g.accumulate(e, &t, tiles, part);
                // Every thread is done with the tiles before the next chunk overwrites them.
                e.bare("gpu.barrier", &[]);
                let (end, start) = segment_end(e, k0, g.kc, g.span, g.ops.k);
                e.if_else(
                    end,
                    &[f32t; 2 * OUT],
                    |e| {
                        let mut v = g.promote(e, &t, start, acc, &part);
                        v.extend(vec![e.f32(0.0); OUT]);
                        v
                    },
                    |_| [acc, &part[..]].concat(),
                )
            });
            g.epilogue(e, &t, &done[..OUT]);
        },
    );
    Ok(())
}

/// One block on the CPU: each phase for all 256 threads, then the next.
fn emulated_block<'c, 'a>(
    e: &Emitter<'c, 'a>,
    g: &Generic<'_, 'c, 'a>,
    bm: Value<'c, 'a>,
    bn: Value<'c, 'a>,
) {
    let (zero, one) = (e.index(0), e.index(1));
    let f32t = e.f32_type();
    let tiles = [
        e.alloca(f32t, g.tile_words()),
        e.alloca(f32t, g.tile_words()),
    ];
    let per = 2 * OUT;
    let regs = e.alloca(f32t, TX * TY * per as i64);
    let threads =
        |e: &Emitter<'c, 'a>, body: &dyn Fn(&Emitter<'c, 'a>, Thread<'c, 'a>, Value<'c, 'a>)| {
            e.for_loop(zero, e.index(TY), one, &[], |e, y, _| {
                e.for_loop(zero, e.index(TX), one, &[], |e, x, _| {
                    let t = Thread {
                        x,
                        y,
                        row0: e.muli(bm, e.index(BM)),
                        col0: e.muli(bn, e.index(BN)),
                    };
                    let base = e.muli(e.addi(e.muli(y, e.index(TX)), x), e.index(per as i64));
                    body(e, t, base);
                    vec![]
                });
                vec![]
            });
        };
    let at = |e: &Emitter<'c, 'a>, base: Value<'c, 'a>, i: usize| e.addi(base, e.index(i as i64));
    threads(e, &|e, _, base| {
        for i in 0..per {
            e.store(e.f32(0.0), regs, &[at(e, base, i)]);
        }
    });
    e.for_loop(zero, g.ops.k, e.index(g.kc), &[], |e, k0, _| {
        threads(e, &|e, t, _| g.fill(e, &t, k0, tiles));
        let (end, start) = segment_end(e, k0, g.kc, g.span, g.ops.k);
        threads(e, &|e, t, base| {
            let load = |i| e.load(regs, &[at(e, base, i)]);
            let acc: Vec<Value> = (0..OUT).map(load).collect();
            let part: Vec<Value> = (OUT..per).map(load).collect();
            let part = g.accumulate(e, &t, tiles, &part);
            let out = e.if_else(
                end,
                &vec![f32t; per],
                |e| {
                    let mut v = g.promote(e, &t, start, &acc, &part);
                    v.extend(vec![e.f32(0.0); OUT]);
                    v
                },
                |_| [&acc[..], &part[..]].concat(),
            );
            for (i, v) in out.into_iter().enumerate() {
                e.store(v, regs, &[at(e, base, i)]);
            }
        });
        vec![]
    });
    threads(e, &|e, t, base| {
        let acc: Vec<Value> = (0..OUT).map(|i| e.load(regs, &[at(e, base, i)])).collect();
        g.epilogue(e, &t, &acc);
    });
}
