//! Operands translated once (`translate-once=on`): where both operands are 4-bit codes
//! (E2M1, 4-bit customs; packed or not) with E8M0 32-blocks, the square block translates
//! every tile it reads, so each A tile is translated by every block of its row of C and
//! each B tile by every block of its column (64 times each at 8192^3: the MXFP4 loop on
//! the H200 is the translation, 372 TFLOP/s against FP8's 1155). Here the op becomes three
//! launches on workspaces (`gpu.alloc`):
//! 1. `translate`: each operand once into FP8 codes with one E8M0 scale per row and 128 of
//!    K, the row's four block scales of those 128 folded into the codes as the square
//!    block's fold does (`fold::fold_tables`: block j moved `max - e_j` binades down, exact
//!    within the target's reach; E2M1 reaches 15 binades in E5M2, 8 in E4M3, so the target
//!    is the type with the longer reach). A block of 256 threads takes 64 rows x 1024 of K
//!    of one operand, a thread one 32-block at a time (16 or 32 bytes in, 32 out), and
//!    writes one flag word: whether any of its rows' stages does not fold (a spread past
//!    the reach, or a NaN scale).
//! 2. The TMA square block (`kernel=wgmma-tma`) on the translated operands as an op with
//!    `#lowp.mx<128>` scales, for the tiles of C whose rows of A and B all fold (`Guard`).
//! 3. The op's own pipeline (what `kernel` picks) on the operands as stored, for the
//!    other tiles; every block of it reads the same flags first and leaves at once where
//!    its tile was taken by 2.
//!
//! Each tile of C is written by exactly one of 2 and 3. Bytes moved by 1 at 8192^3 (both
//! operands): 64 MiB read, 128 MiB written; at the H200's 4.3 TB/s copy rate about 50 us,
//! 5% of the FP8 GEMM's 1 ms.
//!
//! Before:
//! ```mlir
//! lowp.scaled_matmul %a[%sa], %b[%sb] into %c layouts(#lowp.mx<32>, #lowp.mx<32>)
//!     : memref<MxK/2x!lowp.packed<f4E2M1FN>>[memref<MxK/32xf8E8M0FNU>], ...
//! ```
//! After:
//! ```mlir
//! %a8 = gpu.alloc() : memref<M*K xi8>   // and %sa8, %b8, %sb8, %flags
//! gpu.launch ... { translate: codes, stage scales, flags }
//! lowp.scaled_matmul %a8v[%sa8v], %b8v[%sb8v] into %c layouts(#lowp.mx<128>, #lowp.mx<128>)
//!     : memref<MxKxf8E5M2>[memref<MxK/128xf8E8M0FNU>], ...   // lowered: TMA, guarded
//! (the op itself, lowered as before, guarded the other way)
//! gpu.dealloc %a8 ...
//! ```

use lowp_formats::{ScaleLayout, ScaledFormat};
use melior::dialect::arith::CmpiPredicate;
use melior::ir::operation::{OperationBuilder, OperationMutLike};
use melior::ir::r#type::{MemRefType, ShapedTypeLike};
use melior::ir::{Attribute, Identifier, OperationRef, Type, Value, ValueLike};

use super::fold::{byte_max, fold_tables, Moves};
use super::{ceil, static_rows, BK};
use crate::code_words::{nibble_table, translate4_bytes, translate8, Permute};
use crate::expand_quantize::{code_format, layout_attr_of};
use crate::ir::Emitter;
use crate::matrix_kernel::Operand;
use crate::to_loops::matmul_operands;
use crate::PassError;

/// Rows of an operand a translating block takes, and so the rows a flag word covers (a
/// divisor of the square block's 128 and 192).
pub(super) const ROWS: i64 = 64;
/// K a translating block takes: a warp's 32 threads, one 32-block each.
pub(super) const CHUNK: i64 = 32 * 32;
/// Threads of a translating block.
const THREADS: i64 = 256;

/// Per operand, how it is translated: the FP8 type its codes go to and that type's moved
/// tables (`Moves`).
#[derive(Clone, Copy, Debug)]
pub(super) struct Side {
    pub(super) target: ScaledFormat,
    pub(super) moves: Moves,
    pub(super) packed: bool,
    /// Rows (M or N).
    pub(super) rows: i64,
}

/// The translation of an op (`plan`).
#[derive(Clone, Copy, Debug)]
pub(super) struct Once {
    pub(super) sides: [Side; 2],
    pub(super) k: i64,
}

impl Once {
    /// Flag words per 64 rows: one per 1024 of K.
    pub(super) fn chunks(&self) -> i64 {
        ceil(self.k, CHUNK)
    }

    /// Flag rows of each operand: A's first, then B's.
    fn flag_rows(&self, x: usize) -> i64 {
        ceil(self.sides[x].rows, ROWS)
    }
}

/// Whether the op takes the translation: both operands 4-bit codes whose table into E4M3
/// or E5M2 moves at least one binade, E8M0 32-blocks on both, M, N and K static, K whole
/// stages of 128.
pub(super) fn plan(op: OperationRef) -> Result<Once, String> {
    let err = |e: PassError| e.to_string();
    let o = matmul_operands(op).map_err(err)?;
    let layouts = [
        layout_attr_of(op, "lhs_layout").map_err(err)?,
        layout_attr_of(op, "rhs_layout").map_err(err)?,
    ];
    if layouts.iter().any(|&l| l != ScaleLayout::MX) {
        return Err("both operands need E8M0 32-blocks (#lowp.mx<32>)".into());
    }
    let mut sides = Vec::new();
    let mut k = None;
    for (x, codes) in [o.lhs, o.rhs].into_iter().enumerate() {
        let (format, packed) = code_format(op, codes).map_err(err)?;
        let rows =
            static_rows(codes).ok_or_else(|| format!("operand {x}'s rows are not static"))?;
        let t = MemRefType::try_from(codes.r#type()).map_err(|_| "not a memref".to_string())?;
        let cols = match t.dim_size(1) {
            Ok(melior::ir::r#type::DimSize::Static(c)) => c as i64,
            _ => return Err("K is not static".into()),
        };
        k = Some(cols * if packed { 2 } else { 1 });
        // The target with the longer reach (E2M1: E5M2's 15 binades; E4M3 on a tie).
        let best = [ScaledFormat::F8E5M2, ScaledFormat::F8E4M3]
            .into_iter()
            .filter_map(|ty| {
                let operand = Operand::new(format, packed, &[ty], &[0]).ok()?;
                let table = nibble_table(operand.table.as_ref()?)?;
                fold_tables(ty, table).map(|moves| (ty, moves))
            })
            .max_by_key(|(_, m)| m.reach);
        let Some((target, moves)) = best else {
            return Err(format!(
                "{format} is not 4-bit codes whose images in E4M3 or E5M2 move down a binade"
            ));
        };
        sides.push(Side {
            target,
            moves,
            packed,
            rows,
        });
    }
    let k = k.expect("two operands");
    if k % BK != 0 {
        return Err(format!("K = {k} is not whole stages of {BK}"));
    }
    Ok(Once {
        sides: [sides[0], sides[1]],
        k,
    })
}

/// The workspaces of a translation: per operand its codes and stage scales as bytes (for
/// the translation) and typed (for the FP8 op), and the flags.
pub(super) struct Workspaces<'c, 'a> {
    /// Per operand: codes (rows x K bytes), scales (rows x K/128 bytes).
    pub(super) bytes: [[Value<'c, 'a>; 2]; 2],
    /// The same as `memref<rows x K x target>` and `memref<rows x K/128 x f8E8M0FNU>`.
    pub(super) typed: [[Value<'c, 'a>; 2]; 2],
    /// `memref<(flag rows of A + of B) x chunks x i32>`.
    pub(super) flags: Value<'c, 'a>,
    allocs: Vec<Value<'c, 'a>>,
    gpu: bool,
}

/// `gpu.alloc() : memref<shape x element>` (on the GPU) or `memref.alloc` (the emulation).
fn allocate<'c, 'a>(
    e: &Emitter<'c, 'a>,
    gpu: bool,
    shape: &[i64],
    element: Type<'c>,
) -> Value<'c, 'a> {
    if !gpu {
        let dims: Vec<Option<i64>> = shape.iter().map(|&d| Some(d)).collect();
        return e.alloc(element, &dims, &[], 64);
    }
    let t: Type = MemRefType::new(element, shape, None, None).into();
    e.val(
        OperationBuilder::new("gpu.alloc", e.loc())
            .add_attributes(&[(
                Identifier::new(e.ctx(), "operandSegmentSizes"),
                Attribute::parse(e.ctx(), "array<i32: 0, 0, 0>").expect("valid segments"),
            )])
            .add_results(&[t])
            .build()
            .expect("valid gpu.alloc"),
    )
}

/// `memref.view %bytes[0][] : memref<n x i8> to memref<shape x element>`.
fn view<'c, 'a>(
    e: &Emitter<'c, 'a>,
    bytes: Value<'c, 'a>,
    shape: &[i64],
    element: Type<'c>,
) -> Value<'c, 'a> {
    let t: Type = MemRefType::new(element, shape, None, None).into();
    e.val(
        OperationBuilder::new("memref.view", e.loc())
            .add_operands(&[bytes, e.index(0)])
            .add_results(&[t])
            .build()
            .expect("valid memref.view"),
    )
}

impl<'c, 'a> Workspaces<'c, 'a> {
    /// Allocate them before the op (`gpu`: device memory, else host memory).
    pub(super) fn new(e: &Emitter<'c, 'a>, once: &Once, gpu: bool) -> Self {
        let i8t = e.int_type(8);
        let e8m0 = Type::parse(e.ctx(), "f8E8M0FNU").expect("valid type");
        let mut allocs = Vec::new();
        let mut bytes = Vec::new();
        let mut typed = Vec::new();
        for side in &once.sides {
            let target = Type::parse(e.ctx(), type_name(side.target)).expect("FP8 type");
            let shapes = [
                ([side.rows, once.k], target),
                ([side.rows, once.k / BK], e8m0),
            ];
            let mut b = Vec::new();
            let mut t = Vec::new();
            for (shape, element) in shapes {
                let raw = allocate(e, gpu, &[shape[0] * shape[1]], i8t);
                allocs.push(raw);
                b.push(raw);
                t.push(view(e, raw, &shape, element));
            }
            bytes.push([b[0], b[1]]);
            typed.push([t[0], t[1]]);
        }
        let flag_rows = once.flag_rows(0) + once.flag_rows(1);
        let flags = allocate(e, gpu, &[flag_rows, once.chunks()], e.int_type(32));
        allocs.push(flags);
        Workspaces {
            bytes: [bytes[0], bytes[1]],
            typed: [typed[0], typed[1]],
            flags,
            allocs,
            gpu,
        }
    }

    /// Free them (after the launches that read them).
    pub(super) fn free(&self, e: &Emitter<'c, 'a>) {
        for &m in &self.allocs {
            if self.gpu {
                e.insert(
                    OperationBuilder::new("gpu.dealloc", e.loc())
                        .add_operands(&[m])
                        .build()
                        .expect("valid gpu.dealloc"),
                );
            } else {
                e.dealloc(m);
            }
        }
    }
}

/// Which tiles of C a guarded block computes (`lower`'s `guard`): those whose rows of A
/// and B all fold (`folded`), or the others. The flags are the translation's: `rows` =
/// [A's, B's] flag rows, A's first.
#[derive(Clone, Copy)]
pub(super) struct Guard<'c, 'a> {
    pub(super) flags: Value<'c, 'a>,
    pub(super) rows: [i64; 2],
    pub(super) chunks: i64,
    pub(super) folded: bool,
}

impl<'c, 'a> Guard<'c, 'a> {
    pub(super) fn new(once: &Once, w: &Workspaces<'c, 'a>, folded: bool) -> Self {
        Guard {
            flags: w.flags,
            rows: [once.flag_rows(0), once.flag_rows(1)],
            chunks: once.chunks(),
            folded,
        }
    }

    /// Whether tile (`bm`, `bn`), of `tile` = [A's, B's] rows each, is this kernel's: an
    /// `i1`, the same in every thread of the block (each reads the tile's few flag words,
    /// from L2).
    pub(super) fn takes(
        &self,
        e: &Emitter<'c, 'a>,
        tile: [i64; 2],
        bm: Value<'c, 'a>,
        bn: Value<'c, 'a>,
    ) -> Value<'c, 'a> {
        let (zero, one) = (e.index(0), e.index(1));
        let chunks = e.index(self.chunks);
        let mut missed = e.i32(0);
        for (x, b) in [bm, bn].into_iter().enumerate() {
            let per = tile[x] / ROWS;
            let base = if x == 0 { 0 } else { self.rows[0] };
            // (A tile's rows past the operand's have no flag row: its last stands in.)
            let last = e.index(base + self.rows[x] - 1);
            let first = e.addi(e.muli(b, e.index(per)), e.index(base));
            let words = e.for_loop(zero, e.index(per), one, &[missed], |e, r, acc| {
                let row = e.minui(e.addi(first, r), last);
                e.for_loop(zero, chunks, one, &[acc[0]], |e, c, acc| {
                    vec![e.ori(acc[0], e.load(self.flags, &[row, c]))]
                })
            });
            missed = words[0];
        }
        let predicate = if self.folded {
            CmpiPredicate::Eq
        } else {
            CmpiPredicate::Ne
        };
        e.cmpi(predicate, missed, e.i32(0))
    }
}

/// The MLIR name of an FP8 target type.
fn type_name(target: ScaledFormat) -> &'static str {
    if target == ScaledFormat::F8E5M2 {
        "f8E5M2"
    } else {
        "f8E4M3FN"
    }
}

/// The op's translation (launch 1): every 32-block of both operands into its workspace,
/// the flags written. `sources` = per operand its stored codes and scales as bytes.
pub(super) fn translate<'c, 'a>(
    e: &Emitter<'c, 'a>,
    once: &Once,
    w: &Workspaces<'c, 'a>,
    sources: [[Value<'c, 'a>; 2]; 2],
    gpu: bool,
) {
    let one = e.index(1);
    let rows = [once.flag_rows(0), once.flag_rows(1)];
    let grid = [e.index(once.chunks()), e.index(rows[0] + rows[1])];
    let p = Permute::nvidia(!gpu);
    // Thread `tid`'s 32-blocks of flag row `y`, chunk `c`: whether any misses (an i1).
    let thread = |e: &Emitter<'c, 'a>, y: Value<'c, 'a>, c: Value<'c, 'a>, tid: Value<'c, 'a>| {
        let lane = e.remui(tid, e.index(32));
        let warp = e.divui(tid, e.index(32));
        let j = e.addi(e.muli(c, e.index(32)), lane);
        let blocks = e.index(once.k / 32);
        let side = |e: &Emitter<'c, 'a>, x: usize, tile: Value<'c, 'a>| {
            let s = &once.sides[x];
            let (zero, end) = (e.index(0), e.index(ROWS / (THREADS / 32)));
            let missed = e.for_loop(zero, end, one, &[e.bool(false)], |e, i, acc| {
                let r = e.addi(
                    e.muli(tile, e.index(ROWS)),
                    e.addi(warp, e.muli(i, e.index(THREADS / 32))),
                );
                let inside = e.andi(
                    e.cmpi(CmpiPredicate::Ult, r, e.index(s.rows)),
                    e.cmpi(CmpiPredicate::Ult, j, blocks),
                );
                let missed = e.if_else(
                    inside,
                    &[e.int_type(1)],
                    |e| vec![block32(e, once, x, p, sources[x], w.bytes[x], r, j)],
                    |e| vec![e.bool(false)],
                );
                vec![e.ori(acc[0], missed[0])]
            });
            missed
        };
        let a = e.cmpi(CmpiPredicate::Ult, y, e.index(rows[0]));
        e.if_else(
            a,
            &[e.int_type(1)],
            |e| side(e, 0, y),
            |e| side(e, 1, e.subi(y, e.index(rows[0]))),
        )[0]
    };
    if !gpu {
        let (zero, threads) = (e.index(0), e.index(THREADS));
        e.parallel_nest(&[zero, zero], &[grid[1], grid[0]], &[one, one], |e, b| {
            let (y, c) = (b[0], b[1]);
            let any = e.for_loop(zero, threads, one, &[e.bool(false)], |e, t, acc| {
                vec![e.ori(acc[0], thread(e, y, c, t))]
            });
            e.store(e.extui(any[0], e.int_type(32)), w.flags, &[y, c]);
        });
        return;
    }
    e.gpu_launch(
        [grid[0], grid[1], one],
        [e.index(THREADS), one, one],
        &[],
        |e, bid, tid, _| {
            let (c, y) = (bid[0], bid[1]);
            let missed = thread(e, y, c, tid[0]);
            let any = super::fold::block_or(e, missed);
            e.if_then(e.cmpi(CmpiPredicate::Eq, tid[0], e.index(0)), |e| {
                e.store(any, w.flags, &[y, c]);
            });
        },
    );
}

/// 32-block `j` of row `r` of operand `x` (indices) into its workspace: its codes through
/// the table moved `max - e_j` binades down, and (by the stage's first block) the stage's
/// scale `max`. Whether it misses (beyond the reach, or a NaN scale), an `i1`.
#[allow(clippy::too_many_arguments)]
fn block32<'c, 'a>(
    e: &Emitter<'c, 'a>,
    once: &Once,
    x: usize,
    p: Permute,
    source: [Value<'c, 'a>; 2],
    out: [Value<'c, 'a>; 2],
    r: Value<'c, 'a>,
    j: Value<'c, 'a>,
) -> Value<'c, 'a> {
    let s = &once.sides[x];
    let (i32t, i64t) = (e.int_type(32), e.int_type(64));
    let space = if p == Permute::Prmt { 1 } else { 0 };
    let address = |m: Value<'c, 'a>, row_bytes: i64, at: Value<'c, 'a>| {
        let base = e.index_castui(e.aligned_pointer(m), i64t);
        let offset = e.addi(e.muli(r, e.index(row_bytes)), at);
        e.pointer(e.addi(base, e.index_castui(offset, i64t)), space)
    };
    let load = |ptr: Value<'c, 'a>, t: Type<'c>, align: i64| {
        e.val(
            OperationBuilder::new("llvm.load", e.loc())
                .add_operands(&[ptr])
                .add_attributes(&[super::memory::alignment(e, align)])
                .add_results(&[t])
                .build()
                .expect("valid llvm.load"),
        )
    };
    let store = |v: Value<'c, 'a>, ptr: Value<'c, 'a>, align: i64| {
        e.insert(
            OperationBuilder::new("llvm.store", e.loc())
                .add_operands(&[v, ptr])
                .add_attributes(&[super::memory::alignment(e, align)])
                .build()
                .expect("valid llvm.store"),
        );
    };
    let v4 = e.vector_type(4, i32t);
    let words_of = |v: Value<'c, 'a>| -> Vec<Value<'c, 'a>> {
        (0..4).map(|w| e.extract(v, w, i32t)).collect()
    };
    // The stage's four scales, one word; this block's, and their largest.
    let stage = e.divui(j, e.index(4));
    let word = load(
        address(source[1], once.k / 32, e.muli(stage, e.index(4))),
        i32t,
        4,
    );
    let most = byte_max(e, word);
    let nth = e.index_castui(e.remui(j, e.index(4)), i32t);
    let mine = e.andi(e.shrui(word, e.muli(nth, e.i32(8))), e.i32(0xFF));
    let d = e.subi(most, mine);
    let reach = s.moves.reach;
    let missed = e.ori(
        e.cmpi(CmpiPredicate::Ugt, d, e.i32(reach as u32)),
        e.cmpi(CmpiPredicate::Eq, most, e.i32(0xFF)),
    );
    let d = e.select(missed, e.i32(0), d);
    // Its moved table (a select per word and distance: the kernel moves bytes, not
    // instructions).
    let same: Vec<Value> = (1..=reach)
        .map(|dd| e.cmpi(CmpiPredicate::Eq, d, e.i32(dd as u32)))
        .collect();
    let table: [Value<'c, 'a>; 4] = std::array::from_fn(|w| {
        (1..=reach as usize).fold(e.i32(s.moves.tables[0][w]), |acc, dd| {
            e.select(same[dd - 1], e.i32(s.moves.tables[dd][w]), acc)
        })
    });
    let symmetric = s.moves.tables[..=reach as usize]
        .iter()
        .all(crate::code_words::symmetric);
    let images: Vec<Value> = if s.packed {
        let codes = words_of(load(
            address(source[0], once.k / 2, e.muli(j, e.index(16))),
            v4,
            16,
        ));
        codes
            .into_iter()
            .flat_map(|word| {
                if symmetric && p.nibbles() {
                    translate8(e, p, &table, word).to_vec()
                } else {
                    (0..2)
                        .map(|h| {
                            let half = e.andi(e.shrui(word, e.i32(16 * h)), e.i32(0xFFFF));
                            let selectors = p.selectors_of_nibbles(e, half);
                            crate::code_words::translate4(e, p, &table, symmetric, selectors)
                        })
                        .collect()
                }
            })
            .collect()
    } else {
        let at = e.muli(j, e.index(32));
        (0..2)
            .flat_map(|h| {
                let ptr = address(source[0], once.k, e.addi(at, e.index(16 * h)));
                words_of(load(ptr, v4, 16))
            })
            .collect::<Vec<_>>()
            .into_iter()
            .map(|word| translate4_bytes(e, p, &table, symmetric, word))
            .collect()
    };
    let at = e.muli(j, e.index(32));
    for h in 0..2usize {
        let ptr = address(out[0], once.k, e.addi(at, e.index(16 * h as i64)));
        store(e.from_elements(&images[4 * h..4 * h + 4]), ptr, 16);
    }
    let first = e.cmpi(CmpiPredicate::Eq, e.remui(j, e.index(4)), e.index(0));
    let ptr = address(out[1], once.k / BK, stage);
    let byte = e.trunci(most, e.int_type(8));
    e.if_then(first, |e| {
        e.insert(
            OperationBuilder::new("llvm.store", e.loc())
                .add_operands(&[byte, ptr])
                .build()
                .expect("valid llvm.store"),
        );
    });
    missed
}

/// A copy of `op` on the translated operands (`w`'s typed views) with `#lowp.mx<128>`
/// scales, before `op`: the FP8 GEMM of launch 2 (the caller lowers and erases it).
pub(super) fn retarget<'c, 'a>(
    e: &Emitter<'c, 'a>,
    op: OperationRef<'c, 'a>,
    w: &Workspaces<'c, 'a>,
) -> OperationRef<'c, 'a> {
    // SAFETY: cloning a live op, setting operands of the clone (same count and position)
    // and inserting it into the op's block before the op.
    unsafe {
        let raw = mlir_sys::mlirOperationClone(op.to_raw());
        // lhs, lhs scales are operands 0 and 1; rhs and its scales follow A's global.
        let o = matmul_operands(op).expect("a scaled_matmul");
        let rhs = 2 + o.lhs_global.is_some() as isize;
        for (at, v) in [
            (0, w.typed[0][0]),
            (1, w.typed[0][1]),
            (rhs, w.typed[1][0]),
            (rhs + 1, w.typed[1][1]),
        ] {
            mlir_sys::mlirOperationSetOperand(raw, at, v.to_raw());
        }
        let block = mlir_sys::mlirOperationGetBlock(op.to_raw());
        mlir_sys::mlirBlockInsertOwnedOperationBefore(block, op.to_raw(), raw);
        let mut copy = melior::ir::operation::OperationRefMut::from_raw(raw);
        let mx = Attribute::parse(e.ctx(), "#lowp.mx<128>").expect("valid layout");
        copy.set_attribute("lhs_layout", mx);
        copy.set_attribute("rhs_layout", mx);
        OperationRef::from_raw(raw)
    }
}
