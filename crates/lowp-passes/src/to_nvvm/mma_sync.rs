//! The FP8 `mma.sync.m16n8k32` kernel of `lowp-to-nvvm` (sm_89 and later).
//!
//! Tiling: a block of 4 warps (2 along M x 2 along N) computes a 64 x 64 tile of C; each
//! warp a 32 x 32 tile as 2 x 4 instructions of 16 x 8 (32 f32 accumulators per lane).
//! K advances 32 codes per step (16 when the scale block is 16, the upper half of the
//! fragments then zero), the fragments loaded from global memory straight into registers:
//! one aligned 32-bit load per register for FP8 rows whose K is a multiple of 4, else code
//! by code (bounds-checked at the end of K), through the embedding table for formats that
//! are not FP8.
//!
//! Scales: within a K segment where neither scale changes (the gcd of the two blocks) the
//! instructions accumulate a partial sum from zero, which is then added to the
//! accumulators times sa(row, segment) * sb(col, segment), as the oracle does. Without
//! block scales the partial sums are promoted every 128 K (the tensor cores' FP8
//! accumulation is not IEEE f32 on every chip) and the per-tensor / per-channel scales
//! multiply the total in the epilogue, then the NVFP4 globals and the bias.
//!
//! Fragment layout (PTX ISA, "Matrix Fragments for mma.m16n8k32" with .e4m3 / .e5m2), with
//! `g = lane / 4`, `t = lane % 4`: A register r (4 codes, the first in the low byte) holds
//! row `g + 8 * (r % 2)`, columns `4t + 16 * (r / 2) + 0..4`; B register r holds column `g`,
//! rows `4t + 16 * r + 0..4`; accumulator i holds row `g + 8 * (i / 2)`, column
//! `2t + i % 2`. The emulation (`emulate=true`) computes the instruction from the inverse
//! map (who holds A[row][k]), so a mistake in either direction shows up against the oracle.

use lowp_formats::ScaledFormat;
use melior::dialect::arith::CmpiPredicate;
use melior::ir::r#type::MemRefType;
use melior::ir::{OperationRef, ShapedTypeLike, Type, Value, ValueLike};

use crate::codes;
use crate::expand_quantize::{
    ceil_div, code_format, layout_attr_of, load_code, storage_cast, unsupported, Scaled,
};
use crate::ir::Emitter;
use crate::to_loops::{matmul_operands, segment, MatmulOperands};
use crate::to_parallel_loops::store_result;
use crate::PassError;

/// Warps per block along M and N; 16 x 8 tiles per warp along M and N.
const WARPS_M: i64 = 2;
const WARPS_N: i64 = 2;
const MT: usize = 2;
const NT: usize = 4;
/// The block's tile of C and its threads.
const BM: i64 = WARPS_M * MT as i64 * 16;
const BN: i64 = WARPS_N * NT as i64 * 8;
const THREADS: i64 = WARPS_M * WARPS_N * 32;
/// Accumulators per lane.
const ACC: usize = MT * NT * 4;
/// Fragment registers per lane and K step.
const A_REGS: usize = MT * 4;
const B_REGS: usize = NT * 2;
/// K between promotions of the partial sums when no scale changes along K.
const PROMOTE: i64 = 128;

/// How one operand reaches the instruction.
#[derive(Clone, Debug)]
struct Source {
    packed: bool,
    /// E4M3 or E5M2: the instruction's type.
    fp8: ScaledFormat,
    /// The embedding table (code -> FP8 code) as little-endian 64-bit words, 8 codes each;
    /// `None` when the codes are FP8 already.
    table: Option<Vec<u64>>,
}

impl Source {
    fn new(format: ScaledFormat, packed: bool) -> Result<Self, String> {
        if matches!(format, ScaledFormat::F8E4M3 | ScaledFormat::F8E5M2) {
            return Ok(Self {
                packed,
                fp8: format,
                table: None,
            });
        }
        let fp8 = format
            .fp8_embedding()
            .ok_or_else(|| format!("{format} embeds in neither E4M3 nor E5M2"))?;
        let width = format.bit_width();
        if width > 6 {
            return Err(format!(
                "{format} embeds in {fp8}, but {width}-bit codes take more than an 8-word table"
            ));
        }
        let full = format.embedding_table(fp8).expect("embeds");
        let table = full[..1 << width]
            .chunks(8)
            .map(|c| {
                c.iter()
                    .enumerate()
                    .fold(0u64, |w, (i, &b)| w | (b as u64) << (8 * i))
            })
            .collect();
        Ok(Self {
            packed,
            fp8,
            table: Some(table),
        })
    }

    fn ptx_type(&self) -> &'static str {
        if self.fp8 == ScaledFormat::F8E4M3 {
            "e4m3"
        } else {
            "e5m2"
        }
    }
}

/// What the kernel does for one op, decided from its types and layouts alone.
#[derive(Clone, Debug)]
pub(super) struct Plan {
    a: Source,
    b: Source,
    /// The K segment of the scales, `None` when no scale changes along K.
    seg: Option<i64>,
    /// K per instruction step: 32, or 16 for 16-blocks.
    step: i64,
    /// K per partial sum: the segment, or [`PROMOTE`].
    span: i64,
}

impl Plan {
    /// The plan, or why the op needs another kernel.
    pub(super) fn new(op: OperationRef) -> Result<Self, String> {
        let err = |e: PassError| e.to_string();
        let o = matmul_operands(op).map_err(err)?;
        let (fa, pa) = code_format(op, o.lhs).map_err(err)?;
        let (fb, pb) = code_format(op, o.rhs).map_err(err)?;
        let la = layout_attr_of(op, "lhs_layout").map_err(err)?;
        let lb = layout_attr_of(op, "rhs_layout").map_err(err)?;
        let seg = segment(la, lb);
        let (step, span) = match seg {
            None => (32, PROMOTE),
            Some(16) => (16, 16),
            Some(s) if s % 32 == 0 => (32, s),
            Some(s) => {
                return Err(format!(
                    "the scales change every {s} along K, not a multiple of 16"
                ))
            }
        };
        Ok(Self {
            a: Source::new(fa, pa)?,
            b: Source::new(fb, pb)?,
            seg,
            step,
            span,
        })
    }

    fn intrinsic(&self) -> String {
        format!(
            "llvm.nvvm.mma.m16n8k32.row.col.f32.{}.{}.f32",
            self.a.ptx_type(),
            self.b.ptx_type()
        )
    }
}

/// The op's operands and sizes as the kernel body reads them.
struct Kernel<'p, 'c, 'a> {
    plan: &'p Plan,
    o: MatmulOperands<'c, 'a>,
    bits_a: Value<'c, 'a>,
    bits_b: Value<'c, 'a>,
    sa: Scaled<'c, 'a>,
    sb: Scaled<'c, 'a>,
    out_type: Type<'c>,
    m: Value<'c, 'a>,
    n: Value<'c, 'a>,
    k: Value<'c, 'a>,
}

/// One lane's place: its warp's tile origin in C and its fragment coordinates.
#[derive(Clone, Copy)]
struct Lane<'c, 'a> {
    row0: Value<'c, 'a>,
    col0: Value<'c, 'a>,
    g: Value<'c, 'a>,
    t: Value<'c, 'a>,
}

impl<'c, 'a> Lane<'c, 'a> {
    /// Block (bm, bn), warp 0..4 of the block, lane 0..32 of the warp.
    fn new(
        e: &Emitter<'c, 'a>,
        bm: Value<'c, 'a>,
        bn: Value<'c, 'a>,
        warp: Value<'c, 'a>,
        lane: Value<'c, 'a>,
    ) -> Self {
        let wm = e.remui(warp, e.index(WARPS_M));
        let wn = e.divui(warp, e.index(WARPS_M));
        let row0 = e.addi(e.muli(bm, e.index(BM)), e.muli(wm, e.index(MT as i64 * 16)));
        let col0 = e.addi(e.muli(bn, e.index(BN)), e.muli(wn, e.index(NT as i64 * 8)));
        Self {
            row0,
            col0,
            g: e.divui(lane, e.index(4)),
            t: e.remui(lane, e.index(4)),
        }
    }

    /// The row of C accumulator `i` of tile `mt` holds, and its column for tile `nt`.
    fn acc_coords(
        &self,
        e: &Emitter<'c, 'a>,
        mt: usize,
        nt: usize,
        i: usize,
    ) -> (Value<'c, 'a>, Value<'c, 'a>) {
        let row = e.addi(
            e.addi(self.row0, self.g),
            e.index(mt as i64 * 16 + 8 * (i as i64 / 2)),
        );
        let col = e.addi(
            e.addi(self.col0, e.muli(self.t, e.index(2))),
            e.index(nt as i64 * 8 + i as i64 % 2),
        );
        (row, col)
    }
}

fn acc_index(mt: usize, nt: usize, i: usize) -> usize {
    (mt * NT + nt) * 4 + i
}

impl<'p, 'c, 'a> Kernel<'p, 'c, 'a> {
    /// The FP8 code of one element, as `i32`, zero beyond K (`kb` must be < K + 4).
    fn code(
        &self,
        e: &Emitter<'c, 'a>,
        src: &Source,
        bits: Value<'c, 'a>,
        row: Value<'c, 'a>,
        kb: Value<'c, 'a>,
    ) -> Value<'c, 'a> {
        let inside = e.cmpi(CmpiPredicate::Ult, kb, self.k);
        let kc = e.minui(kb, e.subi(self.k, e.index(1)));
        let mut code = load_code(e, bits, src.packed, row, kc);
        if let Some(table) = &src.table {
            code = translate(e, table, code);
        }
        e.select(inside, code, e.i32(0))
    }

    /// One fragment register: the FP8 codes of (row, kw..kw + 4), the first in the low
    /// byte.
    fn word(
        &self,
        e: &Emitter<'c, 'a>,
        src: &Source,
        bits: Value<'c, 'a>,
        row: Value<'c, 'a>,
        kw: Value<'c, 'a>,
    ) -> Value<'c, 'a> {
        let i32t = e.int_type(32);
        let bytewise = |e: &Emitter<'c, 'a>| {
            (0..4).fold(e.i32(0), |w, b| {
                let c = self.code(e, src, bits, row, e.addi(kw, e.index(b)));
                e.ori(w, e.shli(c, e.i32(8 * b as u32)))
            })
        };
        if src.table.is_some() {
            return bytewise(e);
        }
        // FP8 codes as they are: one 32-bit load when the four codes are inside K and the
        // rows are 4-byte aligned (K a multiple of 4).
        let four = e.index(4);
        let fast = e.andi(
            e.cmpi(CmpiPredicate::Ule, e.addi(kw, four), self.k),
            e.cmpi(CmpiPredicate::Eq, e.remui(self.k, four), e.index(0)),
        );
        e.if_else(
            fast,
            &[i32t],
            |e| vec![e.word_of_bytes(e.vload_aligned(bits, &[row, kw], 4, 4))],
            |e| vec![bytewise(e)],
        )[0]
    }

    /// A register `r` of tile `mt` at K step `kk`.
    fn a_word(
        &self,
        e: &Emitter<'c, 'a>,
        l: &Lane<'c, 'a>,
        mt: usize,
        r: usize,
        kk: Value<'c, 'a>,
    ) -> Value<'c, 'a> {
        if self.plan.step == 16 && r >= 2 {
            return e.i32(0);
        }
        // Rows past M read row M - 1: their results are never stored.
        let row = e.addi(
            e.addi(l.row0, l.g),
            e.index(mt as i64 * 16 + 8 * (r as i64 % 2)),
        );
        let row = e.minui(row, e.subi(self.m, e.index(1)));
        let kw = e.addi(
            e.addi(kk, e.muli(l.t, e.index(4))),
            e.index(16 * (r as i64 / 2)),
        );
        self.word(e, &self.plan.a, self.bits_a, row, kw)
    }

    /// B register `r` of tile `nt` at K step `kk`.
    fn b_word(
        &self,
        e: &Emitter<'c, 'a>,
        l: &Lane<'c, 'a>,
        nt: usize,
        r: usize,
        kk: Value<'c, 'a>,
    ) -> Value<'c, 'a> {
        if self.plan.step == 16 && r >= 1 {
            return e.i32(0);
        }
        let col = e.addi(e.addi(l.col0, l.g), e.index(nt as i64 * 8));
        let col = e.minui(col, e.subi(self.n, e.index(1)));
        let kw = e.addi(e.addi(kk, e.muli(l.t, e.index(4))), e.index(16 * r as i64));
        self.word(e, &self.plan.b, self.bits_b, col, kw)
    }

    /// All fragment registers of one lane at K step `kk`: A tiles then B tiles.
    fn fragments(
        &self,
        e: &Emitter<'c, 'a>,
        l: &Lane<'c, 'a>,
        kk: Value<'c, 'a>,
    ) -> (Vec<Value<'c, 'a>>, Vec<Value<'c, 'a>>) {
        let a = (0..MT)
            .flat_map(|mt| (0..4).map(move |r| (mt, r)))
            .map(|(mt, r)| self.a_word(e, l, mt, r, kk))
            .collect();
        let b = (0..NT)
            .flat_map(|nt| (0..2).map(move |r| (nt, r)))
            .map(|(nt, r)| self.b_word(e, l, nt, r, kk))
            .collect();
        (a, b)
    }

    /// `acc + part * (sa * sb)` for every accumulator of a lane, the scales of the segment
    /// starting at `k0`; `acc + part` when no scale changes along K.
    fn promote(
        &self,
        e: &Emitter<'c, 'a>,
        l: &Lane<'c, 'a>,
        k0: Value<'c, 'a>,
        acc: &[Value<'c, 'a>],
        part: &[Value<'c, 'a>],
    ) -> Vec<Value<'c, 'a>> {
        if self.plan.seg.is_none() {
            return acc.iter().zip(part).map(|(&a, &p)| e.addf(a, p)).collect();
        }
        let (last_row, last_col) = (e.subi(self.m, e.index(1)), e.subi(self.n, e.index(1)));
        // One scale per row (2 per tile) and per column (2 per tile) of the lane.
        let sa: Vec<Vec<Value>> = (0..MT)
            .map(|mt| {
                (0..2)
                    .map(|h| {
                        let (row, _) = l.acc_coords(e, mt, 0, 2 * h);
                        self.sa.block_value(e, e.minui(row, last_row), k0)
                    })
                    .collect()
            })
            .collect();
        let sb: Vec<Vec<Value>> = (0..NT)
            .map(|nt| {
                (0..2)
                    .map(|c| {
                        let (_, col) = l.acc_coords(e, 0, nt, c);
                        self.sb.block_value(e, e.minui(col, last_col), k0)
                    })
                    .collect()
            })
            .collect();
        let mut out = acc.to_vec();
        for mt in 0..MT {
            for nt in 0..NT {
                for i in 0..4 {
                    let x = acc_index(mt, nt, i);
                    let s = e.mulf(sa[mt][i / 2], sb[nt][i % 2]);
                    out[x] = e.addf(acc[x], e.mulf(part[x], s));
                }
            }
        }
        out
    }

    /// Store accumulator `x` of a lane (with the per-tensor / per-channel scales when no
    /// scale changes along K, the globals, the bias) if it is inside C.
    fn epilogue(&self, e: &Emitter<'c, 'a>, l: &Lane<'c, 'a>, x: usize, v: Value<'c, 'a>) {
        let (mt, nt, i) = (x / 4 / NT, x / 4 % NT, x % 4);
        let (row, col) = l.acc_coords(e, mt, nt, i);
        let inside = e.andi(
            e.cmpi(CmpiPredicate::Ult, row, self.m),
            e.cmpi(CmpiPredicate::Ult, col, self.n),
        );
        e.if_then(inside, |e| {
            let mut v = v;
            if self.plan.seg.is_none() {
                let zero = e.index(0);
                v = e.mulf(
                    e.mulf(v, self.sa.block_value(e, row, zero)),
                    self.sb.block_value(e, col, zero),
                );
            }
            store_result(e, &self.o, &self.sa, &self.sb, self.out_type, v, row, col);
        });
    }

    /// The segment loop of one lane around `step`, which advances the partial sums by one
    /// K step; returns the final accumulators.
    fn segments(
        &self,
        e: &Emitter<'c, 'a>,
        k_steps: impl Fn(&Emitter<'c, 'a>, Value<'c, 'a>, Value<'c, 'a>) -> Vec<Value<'c, 'a>>,
        promote: impl Fn(
            &Emitter<'c, 'a>,
            Value<'c, 'a>,
            &[Value<'c, 'a>],
            &[Value<'c, 'a>],
        ) -> Vec<Value<'c, 'a>>,
        inits: &[Value<'c, 'a>],
    ) -> Vec<Value<'c, 'a>> {
        let (zero, one) = (e.index(0), e.index(1));
        let span = e.index(self.plan.span);
        let count = ceil_div(e, self.k, span);
        e.for_loop(zero, count, one, inits, |e, s, acc| {
            let k0 = e.muli(s, span);
            let k1 = e.minui(e.addi(k0, span), self.k);
            let part = k_steps(e, k0, k1);
            promote(e, k0, acc, &part)
        })
    }
}

/// `table[code]`: the table's byte `code % 8` of word `code / 8`, by a select chain over
/// the words (no memory, the same on any target).
fn translate<'c, 'a>(e: &Emitter<'c, 'a>, table: &[u64], code: Value<'c, 'a>) -> Value<'c, 'a> {
    let i64t = e.int_type(64);
    let word_index = e.shrui(code, e.i32(3));
    let mut word = e.int(64, table[0] as i64);
    for (i, &w) in table.iter().enumerate().skip(1) {
        let hit = e.cmpi(CmpiPredicate::Eq, word_index, e.i32(i as u32));
        word = e.select(hit, e.int(64, w as i64), word);
    }
    let shift = e.extui(e.muli(e.andi(code, e.i32(7)), e.i32(8)), i64t);
    let byte = e.andi(e.shrui(word, shift), e.int(64, 0xFF));
    e.trunci(byte, e.int_type(32))
}

/// Lower `op` with the mma.sync kernel: on the GPU (`emulate = false`) or as the CPU
/// emulation of the same warps.
pub(super) fn lower<'c, 'a>(
    e: &Emitter<'c, 'a>,
    op: OperationRef<'c, 'a>,
    plan: &Plan,
    emulate: bool,
) -> Result<(), PassError> {
    let o = matmul_operands(op)?;
    let cast =
        |codes| storage_cast(e, codes).ok_or_else(|| unsupported(op, "codes are not castable"));
    let (bits_a, bits_b) = (cast(o.lhs)?, cast(o.rhs)?);
    let la = layout_attr_of(op, "lhs_layout")?;
    let lb = layout_attr_of(op, "rhs_layout")?;
    let sa = Scaled::new(e, op, la, o.lhs_scales, o.lhs_global)?;
    let sb = Scaled::new(e, op, lb, o.rhs_scales, o.rhs_global)?;
    let out_type = MemRefType::try_from(o.out.r#type())
        .map_err(|_| unsupported(op, "result is not a memref"))?
        .element();
    let m = e.dim(o.lhs, 0);
    let n = e.dim(o.rhs, 0);
    let k = if plan.a.packed {
        e.muli(e.dim(o.lhs, 1), e.index(2))
    } else {
        e.dim(o.lhs, 1)
    };
    let kernel = Kernel {
        plan,
        o,
        bits_a,
        bits_b,
        sa,
        sb,
        out_type,
        m,
        n,
        k,
    };
    let (zero, one) = (e.index(0), e.index(1));
    let grid = [ceil_div(e, n, e.index(BN)), ceil_div(e, m, e.index(BM))];
    e.parallel_nest(&[zero, zero], &grid, &[one, one], |e, b| {
        if emulate {
            emulated_block(e, &kernel, b[1], b[0]);
        } else {
            hardware_block(e, &kernel, b[1], b[0]);
        }
    });
    Ok(())
}

/// One block on the GPU: a loop of 128 threads (mapped to threads by
/// `gpu-map-parallel-loops`), each carrying its 32 accumulators in registers.
fn hardware_block<'c, 'a>(
    e: &Emitter<'c, 'a>,
    kn: &Kernel<'_, 'c, 'a>,
    bm: Value<'c, 'a>,
    bn: Value<'c, 'a>,
) {
    let (zero, one) = (e.index(0), e.index(1));
    e.parallel_loop(zero, e.index(THREADS), one, |e, tid| {
        let warp = e.divui(tid, e.index(32));
        let lane = e.remui(tid, e.index(32));
        let l = Lane::new(e, bm, bn, warp, lane);
        let f32t = e.f32_type();
        let result =
            Type::parse(e.ctx(), "!llvm.struct<(f32, f32, f32, f32)>").expect("valid struct type");
        let intrinsic = kn.plan.intrinsic();
        let zeros = vec![e.f32(0.0); ACC];
        let acc = kn.segments(
            e,
            |e, k0, k1| {
                let zeros = vec![e.f32(0.0); ACC];
                e.for_loop(k0, k1, e.index(kn.plan.step), &zeros, |e, kk, part| {
                    let (a, b) = kn.fragments(e, &l, kk);
                    let mut out = part.to_vec();
                    for mt in 0..MT {
                        for nt in 0..NT {
                            let x = acc_index(mt, nt, 0);
                            let mut operands = a[mt * 4..mt * 4 + 4].to_vec();
                            operands.extend_from_slice(&b[nt * 2..nt * 2 + 2]);
                            operands.extend_from_slice(&part[x..x + 4]);
                            let d = e.call_intrinsic(&intrinsic, &operands, result);
                            for i in 0..4 {
                                out[x + i] = e.extract_value(d, i as i64, f32t);
                            }
                        }
                    }
                    out
                })
            },
            |e, k0, acc, part| kn.promote(e, &l, k0, acc, part),
            &zeros,
        );
        for (x, &v) in acc.iter().enumerate() {
            kn.epilogue(e, &l, x, v);
        }
    });
}

/// One block on the CPU: its 4 warps one after the other, each lane's registers in memory
/// (`[lane][register]`), every instruction computed by [`emulated_mma`].
fn emulated_block<'c, 'a>(
    e: &Emitter<'c, 'a>,
    kn: &Kernel<'_, 'c, 'a>,
    bm: Value<'c, 'a>,
    bn: Value<'c, 'a>,
) {
    let (zero, one) = (e.index(0), e.index(1));
    let lanes = e.index(32);
    let f32t = e.f32_type();
    let i32t = e.int_type(32);
    let acc_m = e.alloca(f32t, 32 * ACC as i64);
    let part_m = e.alloca(f32t, 32 * ACC as i64);
    let a_m = e.alloca(i32t, 32 * A_REGS as i64);
    let b_m = e.alloca(i32t, 32 * B_REGS as i64);
    let at = |e: &Emitter<'c, 'a>, lane: Value<'c, 'a>, per: usize, x: usize| {
        e.addi(e.muli(lane, e.index(per as i64)), e.index(x as i64))
    };
    let per_lane = |e: &Emitter<'c, 'a>, body: &dyn Fn(&Emitter<'c, 'a>, Value<'c, 'a>)| {
        e.for_loop(zero, lanes, one, &[], |e, lane, _| {
            body(e, lane);
            vec![]
        });
    };
    let clear = |e: &Emitter<'c, 'a>, mem: Value<'c, 'a>| {
        per_lane(e, &|e, lane| {
            for x in 0..ACC {
                e.store(e.f32(0.0), mem, &[at(e, lane, ACC, x)]);
            }
        });
    };
    e.for_loop(zero, e.index(WARPS_M * WARPS_N), one, &[], |e, warp, _| {
        clear(e, acc_m);
        let span = e.index(kn.plan.span);
        let count = ceil_div(e, kn.k, span);
        e.for_loop(zero, count, one, &[], |e, s, _| {
            let k0 = e.muli(s, span);
            let k1 = e.minui(e.addi(k0, span), kn.k);
            clear(e, part_m);
            e.for_loop(k0, k1, e.index(kn.plan.step), &[], |e, kk, _| {
                per_lane(e, &|e, lane| {
                    let l = Lane::new(e, bm, bn, warp, lane);
                    let (a, b) = kn.fragments(e, &l, kk);
                    for (x, &v) in a.iter().enumerate() {
                        e.store(v, a_m, &[at(e, lane, A_REGS, x)]);
                    }
                    for (x, &v) in b.iter().enumerate() {
                        e.store(v, b_m, &[at(e, lane, B_REGS, x)]);
                    }
                });
                for mt in 0..MT {
                    for nt in 0..NT {
                        emulated_mma(e, kn.plan, a_m, b_m, part_m, mt, nt);
                    }
                }
                vec![]
            });
            per_lane(e, &|e, lane| {
                let l = Lane::new(e, bm, bn, warp, lane);
                let load = |mem, x| e.load(mem, &[at(e, lane, ACC, x)]);
                let acc: Vec<Value> = (0..ACC).map(|x| load(acc_m, x)).collect();
                let part: Vec<Value> = (0..ACC).map(|x| load(part_m, x)).collect();
                for (x, v) in kn.promote(e, &l, k0, &acc, &part).into_iter().enumerate() {
                    e.store(v, acc_m, &[at(e, lane, ACC, x)]);
                }
            });
            vec![]
        });
        per_lane(e, &|e, lane| {
            let l = Lane::new(e, bm, bn, warp, lane);
            for x in 0..ACC {
                let v = e.load(acc_m, &[at(e, lane, ACC, x)]);
                kn.epilogue(e, &l, x, v);
            }
        });
        vec![]
    });
}

/// `mma.sync.m16n8k32` of tile (mt, nt) on the registers in memory, as the PTX ISA defines
/// it: D[row][col] = sum over k of A[row][k] * B[k][col] + C[row][col], where A[row][k] is
/// byte `k % 4` of register `row / 8 + 2 * (k / 16)` of lane `(row % 8) * 4 + (k % 16) / 4`,
/// and B[k][col] byte `k % 4` of register `k / 16` of lane `col * 4 + (k % 16) / 4`.
fn emulated_mma<'c, 'a>(
    e: &Emitter<'c, 'a>,
    plan: &Plan,
    a_m: Value<'c, 'a>,
    b_m: Value<'c, 'a>,
    part_m: Value<'c, 'a>,
    mt: usize,
    nt: usize,
) {
    let (zero, one) = (e.index(0), e.index(1));
    let idx = |v: i64| e.index(v);
    e.for_loop(zero, idx(32), one, &[], |e, lane, _| {
        let g = e.divui(lane, e.index(4));
        let t = e.remui(lane, e.index(4));
        for i in 0..4 {
            let row = e.addi(g, e.index(8 * (i as i64 / 2)));
            let col = e.addi(e.muli(t, e.index(2)), e.index(i as i64 % 2));
            let sum = e.for_loop(
                e.index(0),
                e.index(32),
                e.index(1),
                &[e.f32(0.0)],
                |e, k, s| {
                    let (c4, c8, c16) = (e.index(4), e.index(8), e.index(16));
                    let k16 = e.divui(k, c16);
                    let q = e.divui(e.remui(k, c16), c4);
                    let shift = e.index_castui(e.muli(e.remui(k, c4), c8), e.int_type(32));
                    let byte = |word| e.andi(e.shrui(word, shift), e.i32(0xFF));
                    let a_lane = e.addi(e.muli(e.remui(row, c8), c4), q);
                    let a_reg = e.addi(
                        e.index(mt as i64 * 4),
                        e.addi(e.divui(row, c8), e.muli(k16, e.index(2))),
                    );
                    let a_word = e.load(
                        a_m,
                        &[e.addi(e.muli(a_lane, e.index(A_REGS as i64)), a_reg)],
                    );
                    let b_lane = e.addi(e.muli(col, c4), q);
                    let b_reg = e.addi(e.index(nt as i64 * 2), k16);
                    let b_word = e.load(
                        b_m,
                        &[e.addi(e.muli(b_lane, e.index(B_REGS as i64)), b_reg)],
                    );
                    let x = codes::decode(e, plan.a.fp8, byte(a_word));
                    let y = codes::decode(e, plan.b.fp8, byte(b_word));
                    vec![e.addf(s[0], e.mulf(x, y))]
                },
            )[0];
            let at = e.addi(
                e.muli(lane, e.index(ACC as i64)),
                e.index(acc_index(mt, nt, i) as i64),
            );
            e.store(e.addf(e.load(part_m, &[at]), sum), part_m, &[at]);
        }
        vec![]
    });
}
