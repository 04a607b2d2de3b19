//! Operands translated once (`translate-once=on`): where both operands are 4-bit codes
//! (E2M1, 4-bit customs; packed or not) or 5- and 6-bit ones stored one per byte (FP6,
//! translated by word arithmetic: `ByteRule`) with E8M0 32-blocks, the square block translates
//! every tile it reads, so each A tile is translated by every block of its row of C and
//! each B tile by every block of its column (64 times each at 8192^3: the MXFP4 loop on
//! the H200 is the translation, 372 TFLOP/s against FP8's 1155). Here the op becomes three
//! launches on workspaces (`gpu.alloc`):
//! 1. `translate`: each operand once into FP8 codes with one f32 scale per 128 of K and
//!    row of A (activations, whose rows differ most) or 128 rows of B (weights): a power
//!    of two, `2^(max - 127)`, `max` the largest E8M0 code of the row's 4 block scales or
//!    the 128 rows' 512, every 32-block's codes moved `max - e_j` binades down
//!    (`fold::fold_tables` / `fold_rule`, exact within the target's reach: E2M1 reaches 15
//!    binades in E5M2, 8 in E4M3, so the target is the type with the longer reach; E2M3
//!    only fits E4M3, 6 binades; E3M2 reaches 12 in E5M2). A block of 256 threads takes
//!    128 rows x 1024 of K (8 stages) of one operand: for B it first finds each stage's
//!    largest and smallest code (a thread per 4 rows and stage, reduced through workgroup
//!    memory) and writes the stages' scales; then it translates the codes (a thread one
//!    32-block at a time: 16 or 32 bytes in, 32 out; for A each row's stage from its own
//!    four scales, its scale written by the stage's first block) and writes one flag word:
//!    whether some stage does not fold (a spread past the reach, or a NaN scale). A block
//!    whose codes are all zeros is zeros under any scale: its scale is left out of the
//!    range (quantizers give such blocks E8M0's least, 2^-127, or 1.0).
//! 2. The TMA square block (`kernel=wgmma-tma`) on the translated operands as an op with
//!    DeepSeek's scale layout (`#lowp.blockwise<1x128>` for A, `<128x128>` for B), for the
//!    tiles of C whose 128 rows of A and of B fold (`Guard`): B's scale is one value per
//!    block and stage, so a promotion is one `fma` per accumulator with its row's scale
//!    (ptxas 12.9: 265 instructions per two stages, the FP8 per-tensor block's 261,
//!    against 410 for the MXFP4 block's translating loop).
//! 3. The op's own pipeline (what `kernel` picks) on the operands as stored, for the
//!    other tiles; every block of it reads the same flags first and leaves at once where
//!    its tile was taken by 2.
//!
//! Where K is not whole stages of 128 (gpt-oss's 2880: K / 32 scales a row, not a multiple
//! of 4), the workspaces are padded to whole stages with zero codes (the translation
//! stores them), a row's stage of scales is read byte by byte (its rows start at any
//! byte) with the blocks past K read as the row's last (they leave the stage's range as K's
//! blocks make it), and launch 2 runs on the padded K; launch 3 on the op as stored.
//!
//! Each tile of C is written by exactly one of 2 and 3. Bytes moved by 1 at 8192^3 (both
//! operands): 64 MiB read, 128 MiB written; at the H200's 4.3 TB/s copy rate about 50 us,
//! 5% of the FP8 GEMM's 1 ms. Weights' MX scales rarely span 15 binades in 128 rows x 128
//! of K, an activation row's four in 128 of K still less; where they do the tile runs as
//! before.
//!
//! Before:
//! ```mlir
//! lowp.scaled_matmul %a[%sa], %b[%sb] into %c layouts(#lowp.mx<32>, #lowp.mx<32>)
//!     : memref<MxK/2x!lowp.packed<f4E2M1FN>>[memref<MxK/32xf8E8M0FNU>], ...
//! ```
//! After:
//! ```mlir
//! %a8 = gpu.alloc() : memref<M*Kp xi8>  // Kp: K in whole 128s; %sa8 (f32), %b8, %sb8, %flags
//! gpu.launch ... { translate: codes, row / tile scales, flags }
//! lowp.scaled_matmul %a8v[%sa8], %b8v[%sb8] into %c
//!     layouts(#lowp.blockwise<1x128>, #lowp.blockwise<128x128>)
//!     : memref<MxKpxf8E5M2>[memref<MxKp/128xf32>], ...  // lowered: TMA, guarded
//! (the op itself, lowered as before, guarded the other way)
//! gpu.dealloc %a8 ...
//! ```

use lowp_formats::{ScaleLayout, ScaledFormat};
use melior::dialect::arith::CmpiPredicate;
use melior::ir::operation::{OperationBuilder, OperationMutLike};
use melior::ir::r#type::{MemRefType, ShapedTypeLike};
use melior::ir::{Attribute, Identifier, OperationRef, Type, Value, ValueLike};

use super::fold::{byte_range, fold_rule, fold_tables, magnitude_bits, Moves};
use super::memory::{bits_clear, load, pointer};
use super::{ceil, static_rows, BK};
use crate::code_words::{
    byte_rule, nibble_table, splat, translate4_bytes, translate8, translate_bytes, ByteRule,
    Permute,
};
use crate::expand_quantize::{code_format, layout_attr_of};
use crate::ir::Emitter;
use crate::matrix_kernel::Operand;
use crate::to_loops::matmul_operands;
use crate::PassError;

/// Rows of an operand a translating block takes: a tile of the square block, whose
/// stages share one scale, and the rows a flag word covers.
pub(super) const ROWS: i64 = 128;
/// K a translating block takes: a warp's 32 threads, one 32-block each; 8 stages.
pub(super) const CHUNK: i64 = 32 * 32;
/// Stages of a chunk.
const STAGES: i64 = CHUNK / BK;
/// Threads of a translating block.
const THREADS: i64 = 256;

/// Per operand, how it is translated: the FP8 type its codes go to and that type's moved
/// tables (`Moves`).
#[derive(Clone, Copy, Debug)]
pub(super) struct Side {
    pub(super) target: ScaledFormat,
    pub(super) moves: Moves,
    /// 5- and 6-bit codes (one per byte): the word arithmetic that translates them, whose
    /// offset and words `moves` moves; `None`: 4-bit codes through `moves`' tables.
    pub(super) rule: Option<ByteRule>,
    pub(super) packed: bool,
    /// One scale per row and 128 of K (A: activations, whose rows' magnitudes differ
    /// most), not per 128 rows (B: weights).
    pub(super) per_row: bool,
    /// The bits of a stored word (eight nibbles packed, or four codes one per byte) that
    /// are a code's magnitude: a 32-block whose words have none set is zeros (or NaN codes,
    /// for formats whose sign alone is NaN), the same under any scale, so its scale is left
    /// out of its stage's range. 0 where some code with no magnitude bit is not ±0 or NaN
    /// (every block's scale counts).
    pub(super) magnitude: u32,
    /// Rows (M or N).
    pub(super) rows: i64,
}

/// The translation of an op (`plan`).
#[derive(Clone, Copy, Debug)]
pub(super) struct Once {
    pub(super) sides: [Side; 2],
    /// K of the op (whole 32-blocks).
    pub(super) k: i64,
}

impl Once {
    /// K of the translated operands: whole stages of 128, the 32-blocks past `k` zeros.
    pub(super) fn padded(&self) -> i64 {
        ceil(self.k, BK) * BK
    }

    /// 32-blocks (E8M0 scales) of a row as stored.
    fn blocks(&self) -> i64 {
        self.k / 32
    }

    /// Whether a row's stage of scales is not one aligned word: K / 32 is not a multiple
    /// of 4, so rows' scales start at any byte and the last stage holds fewer than four.
    fn windowed(&self) -> bool {
        self.blocks() % 4 != 0
    }

    /// Flag words per 128 rows: one per 1024 of K.
    pub(super) fn chunks(&self) -> i64 {
        ceil(self.k, CHUNK)
    }

    /// Tiles of 128 rows of operand `x` (its flag rows; A's first, then B's).
    fn flag_rows(&self, x: usize) -> i64 {
        ceil(self.sides[x].rows, ROWS)
    }
}

/// Whether the op takes the translation: both operands 4-bit codes, or 5- and 6-bit ones
/// one per byte, whose translation into E4M3 or E5M2 moves at least one binade exactly,
/// E8M0 32-blocks on both, M, N and K static, K whole 32-blocks (the translated operands
/// are padded with zeros to whole stages of 128).
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
                let table = operand.table.as_ref()?;
                match (nibble_table(table), byte_rule(table)) {
                    (Some(nibbles), _) => fold_tables(ty, nibbles).map(|m| (ty, m, None)),
                    (None, Some(rule)) if !packed => {
                        fold_rule(ty, &rule).map(|m| (ty, m, Some(rule)))
                    }
                    _ => None,
                }
            })
            .max_by_key(|(_, m, _)| m.reach);
        let Some((target, moves, rule)) = best else {
            return Err(format!(
                "{format} is not 4-bit codes, or 5- or 6-bit ones stored one per byte, whose \
                 images in E4M3 or E5M2 move down a binade exactly"
            ));
        };
        let magnitude = magnitude_bits(format.bit_width(), packed, |c| {
            let v = format.decode(c as u8);
            v == 0.0 || v.is_nan()
        });
        sides.push(Side {
            target,
            moves,
            rule,
            packed,
            per_row: x == 0,
            magnitude,
            rows,
        });
    }
    let k = k.expect("two operands");
    if k % 32 != 0 {
        return Err(format!("K = {k} is not whole 32-blocks"));
    }
    Ok(Once {
        sides: [sides[0], sides[1]],
        k,
    })
}

/// The workspaces of a translation: per operand its codes (as bytes for the translation,
/// typed for the FP8 op) and its tiles' scales, and the flags.
pub(super) struct Workspaces<'c, 'a> {
    /// Per operand: codes, `rows x K` bytes.
    pub(super) bytes: [Value<'c, 'a>; 2],
    /// Per operand: the codes as `memref<rows x K x target>`, and the scales
    /// `memref<rows (A) or tiles (B) x K/128 x f32>`.
    pub(super) typed: [[Value<'c, 'a>; 2]; 2],
    /// `memref<(tiles of A + of B) x chunks x i32>`.
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
        let mut allocs = Vec::new();
        let mut bytes = Vec::new();
        let mut typed = Vec::new();
        for (x, side) in once.sides.iter().enumerate() {
            let target = Type::parse(e.ctx(), type_name(side.target)).expect("FP8 type");
            let raw = allocate(e, gpu, &[side.rows * once.padded()], i8t);
            let scale_rows = if side.per_row {
                side.rows
            } else {
                once.flag_rows(x)
            };
            let scales = allocate(e, gpu, &[scale_rows, once.padded() / BK], e.f32_type());
            allocs.extend([raw, scales]);
            bytes.push(raw);
            typed.push([view(e, raw, &[side.rows, once.padded()], target), scales]);
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

    /// Whether tile (`bm`, `bn`) of C (128 x 128) is this kernel's: an `i1`, the same in
    /// every thread of the block (each reads the tile's few flag words, from L2).
    pub(super) fn takes(
        &self,
        e: &Emitter<'c, 'a>,
        bm: Value<'c, 'a>,
        bn: Value<'c, 'a>,
    ) -> Value<'c, 'a> {
        let (zero, one) = (e.index(0), e.index(1));
        let rows = [bm, e.addi(bn, e.index(self.rows[0]))];
        let missed = e.for_loop(zero, e.index(self.chunks), one, &[e.i32(0)], |e, c, acc| {
            let words = rows.map(|r| e.load(self.flags, &[r, c]));
            vec![e.ori(acc[0], e.ori(words[0], words[1]))]
        });
        let predicate = if self.folded {
            CmpiPredicate::Eq
        } else {
            CmpiPredicate::Ne
        };
        e.cmpi(predicate, missed[0], e.i32(0))
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

/// Row `r`'s stage `st` (indices) of operand `x`: the largest and smallest E8M0 code of
/// its 32-blocks that are not all zeros (`Side::magnitude`; 0 and 255 where none is), as
/// `i32`s; a NaN scale (255) gives 255 and 0, a spread no reach covers. Also its scales'
/// word. Where the stages are windows (`Once::windowed`) the word is read byte by byte,
/// and the last stage's blocks past K read as its last block inside (scale and codes),
/// which leaves its range as the blocks inside K make it and reads nothing past the row.
fn row_stage<'c, 'a>(
    e: &Emitter<'c, 'a>,
    once: &Once,
    x: usize,
    space: u32,
    source: [Value<'c, 'a>; 2],
    r: Value<'c, 'a>,
    st: Value<'c, 'a>,
) -> (Value<'c, 'a>, Value<'c, 'a>, Value<'c, 'a>) {
    let s = &once.sides[x];
    let i32t = e.int_type(32);
    let nb = once.blocks();
    // The stage's four blocks (indices in the row).
    let blocks: [Value<'c, 'a>; 4] = std::array::from_fn(|b| {
        let j = e.addi(e.muli(st, e.index(4)), e.index(b as i64));
        if once.windowed() {
            e.minui(j, e.index(nb - 1))
        } else {
            j
        }
    });
    let row = e.muli(r, e.index(nb));
    let word = if once.windowed() {
        let i8t = e.int_type(8);
        (0..4).fold(e.i32(0), |word, b| {
            let ptr = pointer(e, space, source[1], e.addi(row, blocks[b]));
            let byte = e.extui(load(e, ptr, i8t, 1), i32t);
            e.ori(word, e.shli(byte, e.i32(8 * b as u32)))
        })
    } else {
        let at = e.addi(row, e.muli(st, e.index(4)));
        load(e, pointer(e, space, source[1], at), i32t, 4)
    };
    let (raw_most, raw_least) = byte_range(e, word);
    let (most, least) = if s.magnitude == 0 {
        (raw_most, raw_least)
    } else {
        // Each block's stored words, or'ed and masked: whether any code is not zero.
        let row_bytes = if s.packed { once.k / 2 } else { once.k };
        let block_bytes = if s.packed { 16 } else { 32 };
        let mut range = (e.i32(0), e.i32(0xFF));
        for (b, &block) in blocks.iter().enumerate() {
            let first = e.addi(
                e.muli(r, e.index(row_bytes)),
                e.muli(block, e.index(block_bytes)),
            );
            let zeros = bits_clear(e, space, source[0], first, block_bytes, s.magnitude);
            let code = e.andi(e.shrui(word, e.i32(8 * b as u32)), e.i32(0xFF));
            range = (
                e.select(zeros, range.0, e.maxui(range.0, code)),
                e.select(zeros, range.1, e.minui(range.1, code)),
            );
        }
        range
    };
    let nan = e.cmpi(CmpiPredicate::Eq, raw_most, e.i32(0xFF));
    (
        e.select(nan, e.i32(0xFF), most),
        e.select(nan, e.i32(0), least),
        word,
    )
}

/// Whether a stage whose blocks' codes range from `least` to `most` (`row_stage`) does
/// not fold within `reach` (an `i1`), and its scale's code: `most`, or 127 (1.0) where it
/// misses or has no block that is not zeros.
fn stage_fold<'c, 'a>(
    e: &Emitter<'c, 'a>,
    reach: i64,
    most: Value<'c, 'a>,
    least: Value<'c, 'a>,
) -> (Value<'c, 'a>, Value<'c, 'a>) {
    let some = e.cmpi(CmpiPredicate::Uge, most, least);
    let missed = e.andi(
        some,
        e.cmpi(CmpiPredicate::Ugt, e.subi(most, least), e.i32(reach as u32)),
    );
    let code = e.select(e.andi(some, e.xori(missed, e.bool(true))), most, e.i32(127));
    (missed, code)
}

/// Rows `[r0, r0 + n)` (indices; those past the operand skipped) of stage `st` of operand
/// `x`: the range of their blocks' codes (`row_stage`).
#[allow(clippy::too_many_arguments)]
fn stage_range<'c, 'a>(
    e: &Emitter<'c, 'a>,
    once: &Once,
    x: usize,
    space: u32,
    source: [Value<'c, 'a>; 2],
    r0: Value<'c, 'a>,
    n: i64,
    st: Value<'c, 'a>,
) -> (Value<'c, 'a>, Value<'c, 'a>) {
    let s = &once.sides[x];
    let (zero, one) = (e.index(0), e.index(1));
    let found = e.for_loop(
        zero,
        e.index(n),
        one,
        &[e.i32(0), e.i32(0xFF)],
        |e, i, acc| {
            let r = e.addi(r0, i);
            let inside = e.cmpi(CmpiPredicate::Ult, r, e.index(s.rows));
            let i32t = e.int_type(32);
            e.if_else(
                inside,
                &[i32t, i32t],
                |e| {
                    let (most, least, _) = row_stage(e, once, x, space, source, r, st);
                    vec![e.maxui(acc[0], most), e.minui(acc[1], least)]
                },
                |_| acc.to_vec(),
            )
        },
    );
    (found[0], found[1])
}

/// The f32 value `2^(code - 127)` of an E8M0 `code` below 255 (an `i32`): 2^-127 is
/// subnormal.
fn e8m0_value<'c, 'a>(e: &Emitter<'c, 'a>, code: Value<'c, 'a>) -> Value<'c, 'a> {
    let normal = e.shli(code, e.i32(23));
    let bits = e.select(
        e.cmpi(CmpiPredicate::Eq, code, e.i32(0)),
        e.i32(0x0040_0000),
        normal,
    );
    e.bitcast(bits, e.f32_type())
}

/// The op's translation (launch 1): every tile and chunk of both operands into its
/// workspaces, the flags written. `sources` = per operand its stored codes and scales as
/// bytes.
pub(super) fn translate<'c, 'a>(
    e: &Emitter<'c, 'a>,
    once: &Once,
    w: &Workspaces<'c, 'a>,
    sources: [[Value<'c, 'a>; 2]; 2],
    gpu: bool,
) {
    let (zero, one) = (e.index(0), e.index(1));
    let tiles = [once.flag_rows(0), once.flag_rows(1)];
    let grid = [e.index(once.chunks()), e.index(tiles[0] + tiles[1])];
    let p = Permute::nvidia(!gpu);
    let space = if gpu { 1 } else { 0 };
    let stages = once.padded() / BK;
    // Stage `st` of the chunk (an index below STAGES) of tile `t` of operand `x`, from its
    // largest code `most`: whether it misses (an i1), its scale stored.
    let close =
        |e: &Emitter<'c, 'a>, x: usize, t: Value<'c, 'a>, st: Value<'c, 'a>, most, least| {
            let (missed, code) = stage_fold(e, once.sides[x].moves.reach, most, least);
            e.store(e8m0_value(e, code), w.typed[x][1], &[t, st]);
            missed
        };
    if !gpu {
        // Each (tile, chunk) in turn: its stages' ranges, then its codes.
        e.parallel_nest(&[zero, zero], &[grid[1], grid[0]], &[one, one], |e, b| {
            let (y, c) = (b[0], b[1]);
            let i32t = e.int_type(32);
            let top = e.alloca(i32t, STAGES);
            let a = e.cmpi(CmpiPredicate::Ult, y, e.index(tiles[0]));
            let side = |e: &Emitter<'c, 'a>, x: usize, t: Value<'c, 'a>| {
                let per_row = once.sides[x].per_row;
                let r0 = e.muli(t, e.index(ROWS));
                let first = e.muli(c, e.index(STAGES));
                let n = e.minui(e.index(STAGES), e.subi(e.index(stages), first));
                let scanned = e.for_loop(zero, n, one, &[e.bool(false)], |e, i, acc| {
                    if per_row {
                        return acc.to_vec();
                    }
                    let st = e.addi(first, i);
                    let (most, least) = stage_range(e, once, x, space, sources[x], r0, ROWS, st);
                    e.store(most, top, &[i]);
                    vec![e.ori(acc[0], close(e, x, t, st, most, least))]
                });
                let blocks = e.for_loop(zero, e.index(ROWS), one, &[scanned[0]], |e, i, acc| {
                    let r = e.addi(r0, i);
                    let inside = e.cmpi(CmpiPredicate::Ult, r, e.index(once.sides[x].rows));
                    e.if_else(
                        inside,
                        &[e.int_type(1)],
                        |e| {
                            e.for_loop(zero, e.index(32), one, &[acc[0]], |e, lane, acc| {
                                let j = e.addi(e.muli(c, e.index(32)), lane);
                                let most =
                                    (!per_row).then(|| e.load(top, &[e.divui(lane, e.index(4))]));
                                let out = [w.bytes[x], w.typed[x][1]];
                                let missed =
                                    block_or_zeros(e, once, x, p, sources[x], out, most, r, j);
                                vec![e.ori(acc[0], missed)]
                            })
                        },
                        |_| acc.to_vec(),
                    )
                });
                blocks
            };
            let missed = e.if_else(
                a,
                &[e.int_type(1)],
                |e| side(e, 0, y),
                |e| side(e, 1, e.subi(y, e.index(tiles[0]))),
            )[0];
            e.store(e.extui(missed, i32t), w.flags, &[y, c]);
        });
        return;
    }
    let i32t = e.int_type(32);
    // Per thread its rows' largest and smallest codes of its stage; then the stages'.
    let scratch = Type::parse(
        e.ctx(),
        &format!(
            "memref<{}xi32, #gpu.address_space<workgroup>>",
            2 * THREADS + STAGES
        ),
    )
    .expect("valid workgroup memref type");
    e.gpu_launch(
        [grid[0], grid[1], one],
        [e.index(THREADS), one, one],
        &[scratch],
        |e, bid, tid, buffers| {
            let (c, y, t, shared) = (bid[0], bid[1], tid[0], buffers[0]);
            // Thread t: 32-block c * 32 + t % 32 of rows t / 32, + 8, ...: with `most`
            // (the tile's stage's largest code), or each row's own (`None`); whether one
            // of its rows' stages misses (an i1).
            let codes = |e: &Emitter<'c, 'a>, x: usize, r0: Value<'c, 'a>, most| {
                let lane = e.remui(t, e.index(32));
                let warp = e.divui(t, e.index(32));
                let j = e.addi(e.muli(c, e.index(32)), lane);
                let per = THREADS / 32;
                e.for_loop(
                    zero,
                    e.index(ROWS / per),
                    one,
                    &[e.bool(false)],
                    |e, i, acc| {
                        let r = e.addi(r0, e.addi(warp, e.muli(i, e.index(per))));
                        let inside = e.cmpi(CmpiPredicate::Ult, r, e.index(once.sides[x].rows));
                        let out = [w.bytes[x], w.typed[x][1]];
                        let missed = e.if_else(
                            inside,
                            &[e.int_type(1)],
                            |e| vec![block_or_zeros(e, once, x, p, sources[x], out, most, r, j)],
                            |e| vec![e.bool(false)],
                        );
                        vec![e.ori(acc[0], missed[0])]
                    },
                )[0]
            };
            let side = |e: &Emitter<'c, 'a>, x: usize, tile: Value<'c, 'a>| {
                let r0 = e.muli(tile, e.index(ROWS));
                if once.sides[x].per_row {
                    let missed = codes(e, x, r0, None);
                    return vec![super::fold::block_or(e, missed)];
                }
                // Thread t: stage t % 8 of the chunk, rows 4 (t / 8) .. + 4.
                let own = e.remui(t, e.index(STAGES));
                let st = e.addi(e.muli(c, e.index(STAGES)), own);
                let group = e.divui(t, e.index(STAGES));
                let (most, least) = e
                    .if_else(
                        e.cmpi(CmpiPredicate::Ult, st, e.index(stages)),
                        &[i32t, i32t],
                        |e| {
                            let rows = ROWS / (THREADS / STAGES);
                            let first = e.addi(r0, e.muli(group, e.index(rows)));
                            let (m, l) =
                                stage_range(e, once, x, space, sources[x], first, rows, st);
                            vec![m, l]
                        },
                        |e| vec![e.i32(0), e.i32(0xFF)],
                    )
                    .into_iter()
                    .collect::<Vec<_>>()
                    .try_into()
                    .map(|v: [Value<'c, 'a>; 2]| (v[0], v[1]))
                    .expect("two values");
                e.store(most, shared, &[t]);
                e.store(least, shared, &[e.addi(t, e.index(THREADS))]);
                e.bare("gpu.barrier", &[]);
                // Threads 0-7: their stage's range over the 32 groups, its scale, and
                // whether it misses.
                let missed = e.if_else(
                    e.cmpi(CmpiPredicate::Ult, t, e.index(STAGES)),
                    &[e.int_type(1)],
                    |e| {
                        let groups = e.index(THREADS / STAGES);
                        let range =
                            e.for_loop(zero, groups, one, &[e.i32(0), e.i32(0xFF)], |e, g, acc| {
                                let at = e.addi(e.muli(g, e.index(STAGES)), t);
                                let m = e.load(shared, &[at]);
                                let l = e.load(shared, &[e.addi(at, e.index(THREADS))]);
                                vec![e.maxui(acc[0], m), e.minui(acc[1], l)]
                            });
                        e.store(range[0], shared, &[e.addi(t, e.index(2 * THREADS))]);
                        let st = e.addi(e.muli(c, e.index(STAGES)), t);
                        e.if_else(
                            e.cmpi(CmpiPredicate::Ult, st, e.index(stages)),
                            &[e.int_type(1)],
                            |e| vec![close(e, x, tile, st, range[0], range[1])],
                            |e| vec![e.bool(false)],
                        )
                    },
                    |e| vec![e.bool(false)],
                )[0];
                let any = super::fold::block_or(e, missed);
                let lane = e.remui(t, e.index(32));
                let most = e.load(
                    shared,
                    &[e.addi(e.divui(lane, e.index(4)), e.index(2 * THREADS))],
                );
                codes(e, x, r0, Some(most));
                vec![any]
            };
            let a = e.cmpi(CmpiPredicate::Ult, y, e.index(tiles[0]));
            let any = e.if_else(
                a,
                &[i32t],
                |e| side(e, 0, y),
                |e| side(e, 1, e.subi(y, e.index(tiles[0]))),
            )[0];
            e.if_then(e.cmpi(CmpiPredicate::Eq, t, zero), |e| {
                e.store(any, w.flags, &[y, c]);
            });
        },
    );
}

/// 32-block `j` (an index in the chunks' K) of row `r` of operand `x`: inside K its codes
/// translated (`block32`), past K but inside `Once::padded` zeros, past that nothing.
/// Whether the row's stage misses (`block32`).
#[allow(clippy::too_many_arguments)]
fn block_or_zeros<'c, 'a>(
    e: &Emitter<'c, 'a>,
    once: &Once,
    x: usize,
    p: Permute,
    source: [Value<'c, 'a>; 2],
    out: [Value<'c, 'a>; 2],
    most: Option<Value<'c, 'a>>,
    r: Value<'c, 'a>,
    j: Value<'c, 'a>,
) -> Value<'c, 'a> {
    let inside = e.cmpi(CmpiPredicate::Ult, j, e.index(once.blocks()));
    e.if_else(
        inside,
        &[e.int_type(1)],
        |e| vec![block32(e, once, x, p, source, out, most, r, j)],
        |e| {
            if once.padded() != once.k {
                let space = if p == Permute::Prmt { 1 } else { 0 };
                let padding = e.cmpi(CmpiPredicate::Ult, j, e.index(once.padded() / 32));
                e.if_then(padding, |e| zeros32(e, once, space, out[0], r, j));
            }
            vec![e.bool(false)]
        },
    )[0]
}

/// 32-block `j` of row `r` of operand `x` (indices) into its workspace `out` (codes,
/// scales): its codes through the table moved `most - e_j` binades down, `most` its
/// stage's largest code in the tile (an `i32`), or (`None`) in the row, whose scale the
/// stage's first block then stores. Whether the row's stage misses (`None` only; a
/// distance past the reach, where the tile falls back anyway, takes the table unmoved).
#[allow(clippy::too_many_arguments)]
fn block32<'c, 'a>(
    e: &Emitter<'c, 'a>,
    once: &Once,
    x: usize,
    p: Permute,
    source: [Value<'c, 'a>; 2],
    out: [Value<'c, 'a>; 2],
    most: Option<Value<'c, 'a>>,
    r: Value<'c, 'a>,
    j: Value<'c, 'a>,
) -> Value<'c, 'a> {
    let s = &once.sides[x];
    let i32t = e.int_type(32);
    let space = if p == Permute::Prmt { 1 } else { 0 };
    let at = |row_bytes: i64, offset: Value<'c, 'a>| e.addi(e.muli(r, e.index(row_bytes)), offset);
    let v4 = e.vector_type(4, i32t);
    let words_of = |v: Value<'c, 'a>| -> Vec<Value<'c, 'a>> {
        (0..4).map(|w| e.extract(v, w, i32t)).collect()
    };
    let reach = s.moves.reach;
    let (most, mine, missed) = match most {
        Some(most) => {
            let byte = load(
                e,
                pointer(e, space, source[1], at(once.k / 32, j)),
                e.int_type(8),
                1,
            );
            (most, e.extui(byte, i32t), e.bool(false))
        }
        None => {
            // The row's stage: the range of its blocks' scales, this block's byte.
            let stage = e.divui(j, e.index(4));
            let (most, least, word) = row_stage(e, once, x, space, source, r, stage);
            let (missed, code) = stage_fold(e, reach, most, least);
            let nth = e.index_castui(e.remui(j, e.index(4)), i32t);
            let mine = e.andi(e.shrui(word, e.muli(nth, e.i32(8))), e.i32(0xFF));
            let first = e.cmpi(CmpiPredicate::Eq, e.remui(j, e.index(4)), e.index(0));
            let value = e8m0_value(e, code);
            e.if_then(first, |e| e.store(value, out[1], &[r, stage]));
            (code, mine, missed)
        }
    };
    let d = e.subi(most, mine);
    let d = e.select(
        e.cmpi(CmpiPredicate::Ugt, d, e.i32(reach as u32)),
        e.i32(0),
        d,
    );
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
    let stored = |e: &Emitter<'c, 'a>| -> Vec<Value<'c, 'a>> {
        let first = e.muli(j, e.index(32));
        (0..2)
            .flat_map(|h| {
                let ptr = pointer(
                    e,
                    space,
                    source[0],
                    at(once.k, e.addi(first, e.index(16 * h))),
                );
                words_of(load(e, ptr, v4, 16))
            })
            .collect()
    };
    let images: Vec<Value> = if let Some(rule) = &s.rule {
        // The rule's offset less d exponent units in every byte, and its two words (the
        // corrections, or the subnormal images) of the moved table's four.
        let from = if rule.corrected(p) { 2 } else { 0 };
        let offsets = e.subi(splat(e, rule.offset), e.muli(d, splat(e, s.moves.unit)));
        let words = [table[from], table[from + 1]];
        stored(e)
            .into_iter()
            .map(|word| translate_bytes(e, p, rule, (offsets, words), word))
            .collect()
    } else if s.packed {
        let ptr = pointer(e, space, source[0], at(once.k / 2, e.muli(j, e.index(16))));
        words_of(load(e, ptr, v4, 16))
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
        stored(e)
            .into_iter()
            .map(|word| translate4_bytes(e, p, &table, symmetric, word))
            .collect()
    };
    store32(e, once, space, out[0], r, j, &images);
    missed
}

/// The 32 translated codes `images` (8 words) of 32-block `j` of row `r` into the codes
/// workspace `out` (rows of `Once::padded` bytes), in two 16-byte stores.
fn store32<'c, 'a>(
    e: &Emitter<'c, 'a>,
    once: &Once,
    space: u32,
    out: Value<'c, 'a>,
    r: Value<'c, 'a>,
    j: Value<'c, 'a>,
    images: &[Value<'c, 'a>],
) {
    let first = e.addi(e.muli(r, e.index(once.padded())), e.muli(j, e.index(32)));
    for h in 0..2usize {
        let ptr = pointer(e, space, out, e.addi(first, e.index(16 * h as i64)));
        e.insert(
            OperationBuilder::new("llvm.store", e.loc())
                .add_operands(&[e.from_elements(&images[4 * h..4 * h + 4]), ptr])
                .add_attributes(&[super::memory::alignment(e, 16)])
                .build()
                .expect("valid llvm.store"),
        );
    }
}

/// 32-block `j` of row `r` of a workspace past K (`Once::padded`): zeros (+0 in both FP8
/// types), which add nothing to C.
fn zeros32<'c, 'a>(
    e: &Emitter<'c, 'a>,
    once: &Once,
    space: u32,
    out: Value<'c, 'a>,
    r: Value<'c, 'a>,
    j: Value<'c, 'a>,
) {
    let zero = e.i32(0);
    store32(e, once, space, out, r, j, &[zero; 8]);
}

/// A copy of `op` on the translated operands (`w`'s typed views) with blockwise scales
/// (`#lowp.blockwise<1x128>` per row, `<128x128>` per 128 rows: `Side::per_row`), before
/// `op`: the FP8 GEMM of launch 2 (the caller lowers and erases it).
pub(super) fn retarget<'c, 'a>(
    e: &Emitter<'c, 'a>,
    op: OperationRef<'c, 'a>,
    once: &Once,
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
        let layout = |x: usize| {
            let rows = if once.sides[x].per_row { 1 } else { ROWS };
            Attribute::parse(e.ctx(), &format!("#lowp.blockwise<{rows}x{BK}>"))
                .expect("valid layout")
        };
        copy.set_attribute("lhs_layout", layout(0));
        copy.set_attribute("rhs_layout", layout(1));
        OperationRef::from_raw(raw)
    }
}
