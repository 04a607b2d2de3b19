//! The matrix-instruction GEMM kernel shared by `lowp-to-nvvm` (`mma.sync`) and
//! `lowp-to-rocdl` (MFMA, scaled MFMA): tiling, fragment loads, scale application, the
//! epilogue and the CPU emulation. An instruction ([`Instr`]) describes only its shape,
//! where each lane's fragment registers come from in the A / B / C tiles (and the inverse,
//! for the emulation) and how it is emitted.
//!
//! Tiling: a block of 4 warps / waves (2 along M x 2 along N), each computing
//! `tiles.0 x tiles.1` instructions of `m x n` (32 x 32 for the instructions here), so a
//! block computes 64 x 64 of C. K advances one instruction (`k`) per step, or 16 when the
//! scale block is 16 (fragment registers whose K lies past 16 are zero). Fragment registers
//! are loaded from global memory straight into registers: one aligned 32-bit load when the
//! codes are stored as the instruction reads them and rows are 4-byte aligned; on NVIDIA,
//! codes an FP8 instruction reads through an embedding table that `code_words` applies a
//! word at a time (4-bit codes, packed or not; FP6 one per byte) are loaded the same way
//! (2 bytes packed) and translated four at a time (byte permutes, word arithmetic); else
//! code by code (bounds-checked at the end of K) through the table's select chain.
//!
//! Scales, as the oracle applies them: within a K segment where neither scale changes (the
//! gcd of the two blocks) the instructions accumulate a partial sum from zero, added to the
//! accumulators times sa(row, segment) * sb(col, segment). Block-scaled instructions take
//! the E8M0 scales themselves (one per lane: the scale of the codes it holds). Without
//! block scales partial sums are promoted every [`PROMOTE`] of K (matrix units' FP8
//! accumulation is not IEEE f32 on every chip) and the total is multiplied in the epilogue
//! by the per-tensor / per-channel scales' product `sa * sb` (one f32 product, as the
//! contract rounds it), then by `2^shift` of shifted embeddings, the NVFP4 globals' product,
//! and the bias is added.
//!
//! Emulation (`emulate=true`): the same blocks, warps, loads and epilogue on the CPU, every
//! lane's registers in memory, each instruction computed with loops from the registers of
//! the lanes the inverse map names, as the vendor's ISA defines it.

use lowp_formats::{Half, HalfFields, ScaledFormat};
use melior::dialect::arith::CmpiPredicate;
use melior::ir::operation::OperationLike;
use melior::ir::r#type::{DimSize, MemRefType, ShapedTypeLike};
use melior::ir::{OperationRef, TypeLike, Value, ValueLike};

use crate::code_words::{Permute, WordRule};
use crate::codes;
use crate::expand_quantize::{ceil_div, code_format, layout_attr_of, load_code, Scaled};
use crate::ir::Emitter;
use crate::to_loops::{matmul_operands, segment};
use crate::to_parallel_loops::{final_value, global_product, Operands};
use crate::PassError;

/// Warps (waves) per block along M and N.
const WARPS: (i64, i64) = (2, 2);
/// K between promotions of the partial sums when no scale changes along K.
pub(crate) const PROMOTE: i64 = 128;

/// The shape of one matrix instruction and its per-lane registers.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Shape {
    /// Lanes that execute it together (32: a warp; 64: a wave).
    pub(crate) lanes: i64,
    /// The tile it computes: M x N, summing over K.
    pub(crate) m: i64,
    pub(crate) n: i64,
    pub(crate) k: i64,
    /// 32-bit registers per lane holding A and B codes, and the bits per code in them.
    pub(crate) a_words: usize,
    pub(crate) b_words: usize,
    pub(crate) a_bits: u32,
    pub(crate) b_bits: u32,
    /// f32 accumulators per lane.
    pub(crate) acc: usize,
    /// Instructions per warp along M and N.
    pub(crate) tiles: (usize, usize),
}

impl Shape {
    fn accumulators(&self) -> usize {
        self.tiles.0 * self.tiles.1 * self.acc
    }

    fn acc_index(&self, mt: usize, nt: usize, i: usize) -> usize {
        (mt * self.tiles.1 + nt) * self.acc + i
    }

    /// The block's tile of C.
    fn block_tile(&self) -> (i64, i64) {
        (
            WARPS.0 * self.tiles.0 as i64 * self.m,
            WARPS.1 * self.tiles.1 as i64 * self.n,
        )
    }
}

/// A matrix instruction. Registers hold consecutive K: register `r` of a lane holds the
/// codes of one row of A (one column of B) from the K its map gives, the first in the low
/// bits.
pub(crate) trait Instr {
    /// Its shape.
    fn shape(&self) -> Shape;
    /// (row within the tile, first K) of A register `r` of `lane`.
    fn a_reg<'c, 'a>(
        &self,
        e: &Emitter<'c, 'a>,
        lane: Value<'c, 'a>,
        r: usize,
    ) -> (Value<'c, 'a>, Value<'c, 'a>);
    /// (column within the tile, first K) of B register `r` of `lane`.
    fn b_reg<'c, 'a>(
        &self,
        e: &Emitter<'c, 'a>,
        lane: Value<'c, 'a>,
        r: usize,
    ) -> (Value<'c, 'a>, Value<'c, 'a>);
    /// (row, column) within the tile of accumulator `i` of `lane`.
    fn acc<'c, 'a>(
        &self,
        e: &Emitter<'c, 'a>,
        lane: Value<'c, 'a>,
        i: usize,
    ) -> (Value<'c, 'a>, Value<'c, 'a>);
    /// How many accumulators in a row, from every multiple of it, are one row's adjacent
    /// columns, the first a multiple of it: the epilogue stores them with one vector store
    /// (`st.global.v2.f32`) where the output allows. 1: none.
    fn column_run(&self) -> usize {
        1
    }
    /// Keys of accumulator `i`'s row and column: accumulators with equal keys are in one
    /// row (column) of the tile, so a lane reads that row's (column's) scale once. By
    /// default every accumulator its own.
    fn acc_keys(&self, i: usize) -> (usize, usize) {
        (i, i)
    }
}

/// A reader of a kernel's decoded block scales: the f32 scales of `n` consecutive rows
/// (columns) of C from the given one (`n` > 1 only from an even one: one vector load).
pub(crate) type ScaleReader<'c, 'a, 'r> =
    Box<dyn Fn(&Emitter<'c, 'a>, Value<'c, 'a>, usize) -> Vec<Value<'c, 'a>> + 'r>;

/// The block scales of a segment for a lane's accumulators, as stored, each row's and
/// column's once ([`Kernel::segment_scales`]).
pub(crate) struct SegmentScales<'c, 'a> {
    /// A's, then B's.
    loaded: Vec<Value<'c, 'a>>,
    /// How many of them are A's.
    rows: usize,
    /// Per operand, whether they are values already (else as stored).
    decoded: [bool; 2],
    /// Per accumulator, the places of its A and B scale in `loaded`.
    of: Vec<(usize, usize)>,
}

impl<'c, 'a> SegmentScales<'c, 'a> {
    /// The values loaded (A's, then B's).
    pub(crate) fn loaded(&self) -> &[Value<'c, 'a>] {
        &self.loaded
    }

    /// The same scales as other values (in the order of [`SegmentScales::loaded`]).
    pub(crate) fn replaced(self, loaded: Vec<Value<'c, 'a>>) -> Self {
        debug_assert_eq!(loaded.len(), self.loaded.len());
        Self { loaded, ..self }
    }
}

/// A matrix instruction on registers: the inverse of its register maps (for the emulation)
/// and its emission.
pub(crate) trait RegisterInstr: Instr {
    /// The inverse of [`a_reg`](Self::a_reg): (lane, register) holding A[row][k].
    fn a_owner<'c, 'a>(
        &self,
        e: &Emitter<'c, 'a>,
        row: Value<'c, 'a>,
        k: Value<'c, 'a>,
    ) -> (Value<'c, 'a>, Value<'c, 'a>);
    /// The inverse of [`b_reg`](Self::b_reg): (lane, register) holding B[k][col].
    fn b_owner<'c, 'a>(
        &self,
        e: &Emitter<'c, 'a>,
        col: Value<'c, 'a>,
        k: Value<'c, 'a>,
    ) -> (Value<'c, 'a>, Value<'c, 'a>);
    /// Emit it: `a` / `b` registers (`i32`), `c` accumulators (`f32`), the lane's E8M0
    /// scale codes (`i32`) for block-scaled instructions; returns the new accumulators.
    fn emit<'c, 'a>(
        &self,
        e: &Emitter<'c, 'a>,
        a: &[Value<'c, 'a>],
        b: &[Value<'c, 'a>],
        c: &[Value<'c, 'a>],
        scales: Option<[Value<'c, 'a>; 2]>,
    ) -> Vec<Value<'c, 'a>>;
}

/// A code map of an embedding, in the form cheapest to apply per code.
#[derive(Clone, Debug)]
pub(crate) enum Table {
    /// The whole table (codes of at most 6 bits) as little-endian 64-bit words, 8 codes each.
    Words(Vec<u64>),
    /// The identity but for these (code, image) pairs: 8-bit formats whose embedding keeps
    /// the bits and moves only specials (OCP E4M3 into E4M3 FNUZ: -0 and NaN).
    Patches(Vec<(u8, u8)>),
}

/// How one operand reaches the instruction.
#[derive(Clone, Debug)]
pub(crate) struct Operand {
    /// Codes stored two per byte.
    pub(crate) packed: bool,
    /// The stored codes' width in bits (a byte's bits above it are ignored).
    pub(crate) width: u32,
    /// The element type the instruction reads.
    pub(crate) ty: ScaledFormat,
    /// The stored code -> instruction code map; `None` when the stored codes are the
    /// instruction's.
    pub(crate) table: Option<Table>,
    /// Values reach the instruction times `2^-shift`.
    pub(crate) shift: i32,
    /// The codes reach a 16-bit float instruction as f16 or bf16 bit patterns, their fields
    /// moved (`ScaledFormat::{f16,bf16}_fields`: `ty` is then the stored format, `shift` the
    /// fields').
    pub(crate) f16: Option<HalfFields>,
}

impl Operand {
    /// The first of `types` (the instruction's element types) that `format` is, or embeds
    /// in with one of `shifts`; codes of at most 6 bits when a table is needed.
    pub(crate) fn new(
        format: ScaledFormat,
        packed: bool,
        types: &[ScaledFormat],
        shifts: &[i32],
    ) -> Result<Self, String> {
        if types.contains(&format) {
            return Ok(Self {
                packed,
                width: format.bit_width(),
                ty: format,
                table: None,
                shift: 0,
                f16: None,
            });
        }
        let names: Vec<String> = types.iter().map(|t| t.to_string()).collect();
        let (ty, shift, full) = types
            .iter()
            .flat_map(|&t| shifts.iter().map(move |&s| (t, s)))
            .find_map(|(t, s)| format.shifted_embedding(t, s).map(|table| (t, s, table)))
            .ok_or_else(|| format!("{format} embeds in none of {}", names.join(", ")))?;
        let width = format.bit_width();
        let patches: Vec<(u8, u8)> = (0..1u32 << width)
            .map(|c| (c as u8, full[c as usize]))
            .filter(|&(c, t)| c != t)
            .collect();
        let table = if width <= 6 {
            Table::Words(
                full[..1 << width]
                    .chunks(8)
                    .map(|c| {
                        c.iter()
                            .enumerate()
                            .fold(0u64, |w, (i, &b)| w | (b as u64) << (8 * i))
                    })
                    .collect(),
            )
        } else if patches.len() <= 4 {
            Table::Patches(patches)
        } else {
            return Err(format!(
                "{format} embeds in {ty}, but {} of its {} {width}-bit codes have another \
                 bit pattern there (the kernel patches at most 4; a table of 128 or 256 \
                 codes has no place in its registers)",
                patches.len(),
                1u32 << width
            ));
        };
        Ok(Self {
            packed,
            width,
            ty,
            table: Some(table),
            shift,
            f16: None,
        })
    }

    /// `format`'s codes as the f16 patterns of their fields, for an f16 instruction (every
    /// format whose exponent field f16's holds, E2M1 to E5M2 and E3M4, its specials
    /// included), or why not.
    pub(crate) fn f16(format: ScaledFormat, packed: bool) -> Result<Self, String> {
        let fields = format.f16_fields().ok_or_else(|| {
            let (e, _, bias) = format.fields();
            let why = if e > 5 {
                format!("its exponent field has {e} bits, f16's 5")
            } else if e == 5 && !format.has_inf() {
                "its exponent 31 is finite, f16's infinity and NaN".to_string()
            } else {
                format!("its bias {bias} leaves f32's normal range")
            };
            format!("{format}'s fields do not move into f16's: {why}")
        })?;
        Ok(Self::fields(format, packed, fields))
    }

    /// `format`'s codes as the bf16 patterns of their fields (`ScaledFormat::bf16_fields`:
    /// 6- and 7-bit exponents, E5M2 FNUZ, and every format f16 takes, E5M2's infinities
    /// through the top-exponent rule), or why not.
    pub(crate) fn bf16(format: ScaledFormat, packed: bool) -> Result<Self, String> {
        let fields = format.bf16_fields().ok_or_else(|| {
            format!(
                "{format}'s fields do not move into bf16's: its values span more binades \
                 than products in f32 allow"
            )
        })?;
        Ok(Self::fields(format, packed, fields))
    }

    fn fields(format: ScaledFormat, packed: bool, fields: HalfFields) -> Self {
        Self {
            packed,
            width: format.bit_width(),
            ty: format,
            table: None,
            shift: fields.shift,
            f16: Some(fields),
        }
    }
}

/// What the kernel does for one op.
#[derive(Clone, Debug)]
pub(crate) struct Plan {
    pub(crate) a: Operand,
    pub(crate) b: Operand,
    /// The K segment of the scales, `None` when no scale changes along K.
    pub(crate) seg: Option<i64>,
    /// The instruction applies the (E8M0, 32-block) scales itself.
    pub(crate) scaled: bool,
    /// K per step: the instruction's K, or 16.
    pub(crate) step: i64,
    /// K per partial sum.
    pub(crate) span: i64,
    /// The block scales are applied to the codes on their way to the instruction (the f16
    /// route of `lowp-to-nvvm`'s wgmma pipeline: each code times its block's scale, exact in
    /// f16), so partial sums are added as they are and only the per-tensor globals remain
    /// for the epilogue.
    pub(crate) in_codes: bool,
    /// The operands reach the instruction as f16 (the wgmma pipeline's f16 route: 64 codes
    /// a stage, two bytes each, every operand translated): with `in_codes`, or with block
    /// scales promoted per segment as on the FP8 route (the f16 patterns of formats no FP8
    /// type holds, their scales changing along K).
    pub(crate) f16: bool,
}

impl Plan {
    /// The plan of an instruction of K `instr_k` for the op's layouts (scales applied on
    /// the accumulators), or why it does not fit.
    pub(crate) fn new(
        op: OperationRef,
        a: Operand,
        b: Operand,
        instr_k: i64,
        scaled: bool,
    ) -> Result<Self, String> {
        let err = |e: PassError| e.to_string();
        let la = layout_attr_of(op, "lhs_layout").map_err(err)?;
        let lb = layout_attr_of(op, "rhs_layout").map_err(err)?;
        let seg = segment(la, lb);
        let (step, span) = if scaled {
            (instr_k, PROMOTE.max(instr_k))
        } else {
            match seg {
                None => (instr_k, PROMOTE.max(instr_k)),
                // Blocks shorter than the instruction's K: one block a step, the registers
                // past it zero on both sides (`Kernel::fragments`; a register's codes are
                // 4-aligned runs of K, so blocks of a multiple of 4 never split one).
                Some(s) if s < instr_k && instr_k % s == 0 && s % 4 == 0 => (s, s),
                Some(s) if s % instr_k == 0 => (instr_k, s),
                Some(s) => {
                    return Err(format!(
                        "the scales change every {s} along K; the instruction sums {instr_k}"
                    ))
                }
            }
        };
        Ok(Self {
            a,
            b,
            seg,
            scaled,
            step,
            span,
            in_codes: false,
            f16: false,
        })
    }

    /// The plan of an f16 instruction of K 16 on the f16 patterns of both operands' fields
    /// (`Operand::f16`), or why not.
    pub(crate) fn f16(op: OperationRef) -> Result<Self, String> {
        let [(fa, pa), (fb, pb)] = Self::formats(op)?;
        Self::new(op, Operand::f16(fa, pa)?, Operand::f16(fb, pb)?, 16, false)
    }

    /// The plan of a 16-bit float instruction of K 16 on both operands' field patterns: f16
    /// where both formats' fields move into f16's (`Plan::f16`), else bf16 (`Plan::bf16`).
    /// With it the reason a remark gives: `because` (why a stronger instruction does not
    /// take the op) and, for bf16, why f16 does not; or, after `because`, why neither does.
    pub(crate) fn half(op: OperationRef, because: String) -> Result<(Self, Half, String), String> {
        match Self::f16(op) {
            Ok(plan) => Ok((plan, Half::F16, because)),
            Err(f16) => {
                let because = format!("{because}; for f16: {f16}");
                match Self::bf16(op) {
                    Ok(plan) => Ok((plan, Half::Bf16, because)),
                    Err(bf16) => Err(format!("{because}; for bf16: {bf16}")),
                }
            }
        }
    }

    /// The plan of a bf16 instruction of K 16 on the bf16 patterns of both operands' fields
    /// (`Operand::bf16`), or why not.
    pub(crate) fn bf16(op: OperationRef) -> Result<Self, String> {
        let [(fa, pa), (fb, pb)] = Self::formats(op)?;
        Self::new(
            op,
            Operand::bf16(fa, pa)?,
            Operand::bf16(fb, pb)?,
            16,
            false,
        )
    }

    /// The stored formats and packing of the op's operands.
    pub(crate) fn formats(op: OperationRef) -> Result<[(ScaledFormat, bool); 2], String> {
        let err = |e: PassError| e.to_string();
        let o = matmul_operands(op).map_err(err)?;
        Ok([
            code_format(op, o.lhs).map_err(err)?,
            code_format(op, o.rhs).map_err(err)?,
        ])
    }
}

/// An operand's registers read a word at a time ([`Kernel::fragments`]).
struct WordReads {
    /// Stored bytes per register: 4, or 2 for 4 packed codes an FP8 instruction reads (and
    /// for 2 codes an f16 instruction reads, 1 packed).
    bytes: u32,
    /// What makes the stored bytes the register.
    apply: Apply,
}

/// How stored bytes become an instruction register.
#[derive(Clone, Copy)]
enum Apply {
    /// They are the register.
    AsStored,
    /// Translated by the table's word rule with the byte permute.
    Translated(WordRule, Permute),
    /// Two codes spread to the halves and moved into f16 patterns.
    F16(HalfFields),
}

/// Where a row-major code memref's rows are (one byte an element): the address of element
/// (0, 0) (the aligned pointer plus the offset), the row and column strides.
struct Rows<'c, 'a> {
    start: Value<'c, 'a>,
    stride: Value<'c, 'a>,
    column_stride: Value<'c, 'a>,
}

impl<'c, 'a> Rows<'c, 'a> {
    fn of(e: &Emitter<'c, 'a>, bits: Value<'c, 'a>) -> Self {
        let (offset, strides) = e.strided(bits, 2);
        Rows {
            start: e.addi(e.aligned_pointer(bits), offset),
            stride: strides[0],
            column_stride: strides[1],
        }
    }
}

/// The op's operands and sizes as the kernel body reads them.
pub(crate) struct Kernel<'p, 'c, 'a> {
    pub(crate) plan: &'p Plan,
    instr: &'p dyn Instr,
    shape: Shape,
    pub(crate) ops: Operands<'c, 'a>,
    /// How translated codes become FP8 four at a time where the table allows
    /// (`code_words`); `None`: code by code.
    permute: Option<Permute>,
    /// What the launch proves about the scales a lane reads per segment
    /// ([`Kernel::segment_scales`]): every row of C its accumulators hold is inside C (0),
    /// every column (1). Those reads then take the row or column as it is, not clamped to
    /// the last: a lane's offsets stay constants of its addresses (ptxas otherwise
    /// rematerialized 34 clamps a promotion). K stays clamped (one a promotion): a
    /// pipeline's stage past its range, never promoted, still reads its scales.
    pub(crate) inside: [bool; 2],
    /// What the launch proves about an operand's block scales across the kernel's block:
    /// one value for all its rows of C (A, 0) or all its columns (B, 1) in each segment
    /// (`Kernel::uniform_over`: blockwise blocks at least as tall as the block, on its
    /// grid, like DeepSeek's 128 x 128 weights in a 128-column tile). A lane then reads
    /// that operand's scale once a segment, and its promotions multiply the other's by it
    /// once per row (column), not once per accumulator (DeepSeek's layout in the wgmma
    /// square block: 2 `mul` and 64 `fma` a thread and stage, not 64 and 64).
    uniform: [bool; 2],
}

/// One lane's place: its warp's (or warpgroup's) tile origin in C and its lane index.
#[derive(Clone, Copy)]
pub(crate) struct Lane<'c, 'a> {
    pub(crate) lane: Value<'c, 'a>,
    pub(crate) row0: Value<'c, 'a>,
    pub(crate) col0: Value<'c, 'a>,
}

/// Where `Kernel::epilogue_values` hands a run of results: `(e, values, row, col)`, the
/// run's first element at (row, col) of C.
pub(crate) type PutRun<'r, 'c, 'a> =
    dyn Fn(&Emitter<'c, 'a>, &[Value<'c, 'a>], Value<'c, 'a>, Value<'c, 'a>) + 'r;

/// What the epilogue reads once per lane (`Kernel::lane_values`): per-tensor scales applied
/// there (of A, of B), the product of the globals.
#[derive(Clone, Copy)]
pub(crate) struct LaneValues<'c, 'a> {
    scales: [Option<Value<'c, 'a>>; 2],
    global: Option<Value<'c, 'a>>,
}

/// `table[code]`, by a select chain (no memory, the same on any target): over the words,
/// then the word's byte `code % 8`; or over the patched codes.
pub(crate) fn translate<'c, 'a>(
    e: &Emitter<'c, 'a>,
    table: &Table,
    code: Value<'c, 'a>,
) -> Value<'c, 'a> {
    let table = match table {
        Table::Words(words) => words,
        Table::Patches(patches) => {
            return patches.iter().fold(code, |v, &(from, to)| {
                let hit = e.cmpi(CmpiPredicate::Eq, code, e.i32(from as u32));
                e.select(hit, e.i32(to as u32), v)
            })
        }
    };
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

impl<'p, 'c, 'a> Kernel<'p, 'c, 'a> {
    /// Read the op's operands and emit what the kernel shares (before it, at `e`).
    pub(crate) fn new(
        e: &Emitter<'c, 'a>,
        op: OperationRef<'c, 'a>,
        plan: &'p Plan,
        instr: &'p dyn Instr,
    ) -> Result<Self, PassError> {
        Ok(Kernel {
            plan,
            instr,
            shape: instr.shape(),
            ops: Operands::read(e, op)?,
            permute: None,
            inside: [false; 2],
            uniform: [false; 2],
        })
    }

    /// The kernel's blocks cover `bm x bn` tiles of C on their grid (origins multiples of
    /// `bm`, `bn`): the operands whose block scales are one value over such a tile read
    /// them once (`Kernel::uniform`).
    pub(crate) fn with_block(self, bm: i64, bn: i64) -> Self {
        let uniform = [self.uniform_over(0, bm), self.uniform_over(1, bn)];
        Self { uniform, ..self }
    }

    /// Whether operand `x`'s block scales are one value over each block of `rows` of its
    /// rows that starts on a multiple of `rows` (`Kernel::uniform`): per tensor, or
    /// blockwise with blocks of a multiple of `rows` rows.
    fn uniform_over(&self, x: usize, rows: i64) -> bool {
        match [&self.ops.sa, &self.ops.sb][x].layout {
            lowp_formats::ScaleLayout::PerTensor => true,
            lowp_formats::ScaleLayout::Blockwise { rows: r, .. } => r as i64 % rows == 0,
            _ => false,
        }
    }

    /// The instruction's shape.
    pub(crate) fn shape(&self) -> Shape {
        self.shape
    }

    /// Translate codes four at a time with byte permutes of this kind (`prmt` on NVIDIA
    /// GPUs, `v_perm_b32` on AMD ones, shifts in their emulations).
    pub(crate) fn with_permute(self, permute: Permute) -> Self {
        Self {
            permute: Some(permute),
            ..self
        }
    }

    /// Blocks over C for a `bm x bn` tile: along N (x), along M (y).
    pub(crate) fn grid(&self, e: &Emitter<'c, 'a>, bm: i64, bn: i64) -> [Value<'c, 'a>; 2] {
        [
            ceil_div(e, self.ops.n, e.index(bn)),
            ceil_div(e, self.ops.m, e.index(bm)),
        ]
    }

    /// A parallel loop over `grid` (from [`grid`](Self::grid)) running `block(e, block row,
    /// block column)`: the blocks of a CPU emulation, or those the GPU mapping passes map.
    pub(crate) fn blocks(
        &self,
        e: &Emitter<'c, 'a>,
        grid: [Value<'c, 'a>; 2],
        block: impl Fn(&Emitter<'c, 'a>, Value<'c, 'a>, Value<'c, 'a>),
    ) {
        let (zero, one) = (e.index(0), e.index(1));
        e.parallel_nest(&[zero, zero], &grid, &[one, one], |e, b| {
            block(e, b[1], b[0])
        });
    }

    fn lane(
        &self,
        e: &Emitter<'c, 'a>,
        bm: Value<'c, 'a>,
        bn: Value<'c, 'a>,
        warp: Value<'c, 'a>,
        lane: Value<'c, 'a>,
    ) -> Lane<'c, 'a> {
        let s = self.shape;
        let (tm, tn) = s.block_tile();
        let wm = e.remui(warp, e.index(WARPS.0));
        let wn = e.divui(warp, e.index(WARPS.0));
        Lane {
            lane,
            row0: e.addi(
                e.muli(bm, e.index(tm)),
                e.muli(wm, e.index(s.tiles.0 as i64 * s.m)),
            ),
            col0: e.addi(
                e.muli(bn, e.index(tn)),
                e.muli(wn, e.index(s.tiles.1 as i64 * s.n)),
            ),
        }
    }

    /// Row and column of C of accumulator `x` of a lane.
    pub(crate) fn acc_coords(
        &self,
        e: &Emitter<'c, 'a>,
        l: &Lane<'c, 'a>,
        x: usize,
    ) -> (Value<'c, 'a>, Value<'c, 'a>) {
        let s = self.shape;
        let (tile, i) = (x / s.acc, x % s.acc);
        let (mt, nt) = (tile / s.tiles.1, tile % s.tiles.1);
        let (r, c) = self.instr.acc(e, l.lane, i);
        (
            e.addi(e.addi(l.row0, e.index(mt as i64 * s.m)), r),
            e.addi(e.addi(l.col0, e.index(nt as i64 * s.n)), c),
        )
    }

    /// The instruction code of one element, as `i32`, zero beyond K (`kb` < K + 32).
    fn code(
        &self,
        e: &Emitter<'c, 'a>,
        src: &Operand,
        bits: Value<'c, 'a>,
        row: Value<'c, 'a>,
        kb: Value<'c, 'a>,
    ) -> Value<'c, 'a> {
        let inside = e.cmpi(CmpiPredicate::Ult, kb, self.ops.k);
        let kc = e.minui(kb, e.subi(self.ops.k, e.index(1)));
        let mut code = load_code(e, bits, src.packed, src.width, row, kc);
        if let Some(table) = &src.table {
            code = translate(e, table, code);
        }
        if let Some(fields) = src.f16 {
            code = codes::half_pattern_pair(e, src.ty, fields, code);
        }
        e.select(inside, code, e.i32(0))
    }

    /// One register by codes: the codes of (row, kw..) at `width` bits each, the first in
    /// the low bits, each bounds-checked and translated on its own.
    fn elementwise_word(
        &self,
        e: &Emitter<'c, 'a>,
        src: &Operand,
        bits: Value<'c, 'a>,
        width: u32,
        row: Value<'c, 'a>,
        kw: Value<'c, 'a>,
    ) -> Value<'c, 'a> {
        (0..32 / width).fold(e.i32(0), |w, s| {
            let c = self.code(e, src, bits, row, e.addi(kw, e.index(s as i64)));
            e.ori(w, e.shli(c, e.i32(width * s)))
        })
    }

    /// How an operand's registers can be read a word at a time, where they can: stored as
    /// the instruction reads them (bytes of FP8, or nibbles of packed FP4), one 32-bit load
    /// each; or, on GPUs, codes a table translates a word at a time (`code_words`), one
    /// load of their 2 (packed) or 4 bytes, then four translated at once.
    fn word_reads(&self, src: &Operand, width: u32) -> Option<WordReads> {
        let stored_width = if src.packed { 4 } else { 8 };
        match (&src.table, self.permute, src.f16) {
            (None, _, Some(fields)) if width == 16 => Some(WordReads {
                bytes: if src.packed { 1 } else { 2 },
                apply: Apply::F16(fields),
            }),
            (None, _, None) if stored_width == width => Some(WordReads {
                bytes: 4,
                apply: Apply::AsStored,
            }),
            (Some(table), Some(p), None) if width == 8 => {
                WordRule::of(table, src.packed).map(|rule| WordReads {
                    bytes: if src.packed { 2 } else { 4 },
                    apply: Apply::Translated(rule, p),
                })
            }
            _ => None,
        }
    }

    /// The register of stored bytes read at once ([`Kernel::stored_word`]).
    fn applied(
        &self,
        e: &Emitter<'c, 'a>,
        src: &Operand,
        apply: Apply,
        stored: Value<'c, 'a>,
    ) -> Value<'c, 'a> {
        match apply {
            Apply::AsStored => stored,
            Apply::Translated(rule, p) => rule.apply(e, p, src.packed, stored),
            Apply::F16(fields) => {
                codes::half_pattern_adjacent(e, src.ty, fields, stored, src.packed)
            }
        }
    }

    /// Whether rows can be read `bytes` at a time: the start and the row stride multiples
    /// of `bytes`, columns contiguous (an `i1`).
    fn rows_aligned(&self, e: &Emitter<'c, 'a>, rows: &Rows<'c, 'a>, bytes: u32) -> Value<'c, 'a> {
        let (b, zero) = (e.index(bytes as i64), e.index(0));
        let multiple = |v| e.cmpi(CmpiPredicate::Eq, e.remui(v, b), zero);
        let contiguous = e.cmpi(CmpiPredicate::Eq, rows.column_stride, e.index(1));
        e.andi(
            e.andi(multiple(rows.start), multiple(rows.stride)),
            contiguous,
        )
    }

    /// The stored bytes of one register read at once (`rows_aligned`, its codes inside K):
    /// `reads.bytes` from (row, code kw) as the low bits of an `i32`.
    fn stored_word(
        &self,
        e: &Emitter<'c, 'a>,
        src: &Operand,
        bits: Value<'c, 'a>,
        reads: &WordReads,
        row: Value<'c, 'a>,
        kw: Value<'c, 'a>,
    ) -> Value<'c, 'a> {
        let n = reads.bytes;
        let byte = if src.packed {
            e.divui(kw, e.index(2))
        } else {
            kw
        };
        let mut stored = if n == 1 {
            e.load(bits, &[row, byte])
        } else {
            e.int_of_bytes(e.vload_aligned(bits, &[row, byte], n as u64, n as i64), n)
        };
        if !src.packed && src.width < 8 {
            // A code's byte may hold bits above its width, which decoding ignores.
            let byte_mask = (1i64 << src.width) - 1;
            let mask = (0..n).fold(0, |m, i| m | byte_mask << (8 * i));
            stored = e.andi(stored, e.int(8 * n, mask));
        }
        if n == 4 {
            stored
        } else {
            e.extui(stored, e.int_type(32))
        }
    }

    /// All registers of one lane at K step `kk`: every A tile's, then every B tile's.
    /// Operands read a word at a time (`word_reads`) are loaded by one branch for the whole
    /// step, where the instruction's K is inside K and their rows are aligned: all loads
    /// first, then the translations; else (the end of K, unaligned rows) code by code.
    pub(crate) fn fragments(
        &self,
        e: &Emitter<'c, 'a>,
        l: &Lane<'c, 'a>,
        kk: Value<'c, 'a>,
    ) -> (Vec<Value<'c, 'a>>, Vec<Value<'c, 'a>>) {
        let s = self.shape;
        let step = e.index(self.plan.step);
        // One operand's registers: per tile, per register, the row (column) clamped into
        // the matrix (rows past the end are never stored) and the first K.
        type RegMap<'r, 'c, 'a> =
            &'r dyn Fn(&Emitter<'c, 'a>, Value<'c, 'a>, usize) -> (Value<'c, 'a>, Value<'c, 'a>);
        let places = |tiles: usize,
                      words: usize,
                      extent: i64,
                      origin: Value<'c, 'a>,
                      rows: Value<'c, 'a>,
                      reg: RegMap<'_, 'c, 'a>| {
            let last = e.subi(rows, e.index(1));
            let mut out = Vec::with_capacity(tiles * words);
            for t in 0..tiles {
                for r in 0..words {
                    let (rc, k0) = reg(e, l.lane, r);
                    let rc = e.addi(e.addi(origin, e.index(t as i64 * extent)), rc);
                    out.push((e.minui(rc, last), k0));
                }
            }
            out
        };
        let sides = [
            (
                places(
                    s.tiles.0,
                    s.a_words,
                    s.m,
                    l.row0,
                    self.ops.m,
                    &|e, lane, r| self.instr.a_reg(e, lane, r),
                ),
                &self.plan.a,
                self.ops.bits_a,
                s.a_bits,
            ),
            (
                places(
                    s.tiles.1,
                    s.b_words,
                    s.n,
                    l.col0,
                    self.ops.n,
                    &|e, lane, r| self.instr.b_reg(e, lane, r),
                ),
                &self.plan.b,
                self.ops.bits_b,
                s.b_bits,
            ),
        ];
        let reads = sides
            .each_ref()
            .map(|(_, src, _, width)| self.word_reads(src, *width));
        let by_codes = |e: &Emitter<'c, 'a>, x: usize| -> Vec<Value<'c, 'a>> {
            let (places, src, bits, width) = &sides[x];
            places
                .iter()
                .map(|&(row, k0)| self.elementwise_word(e, src, *bits, *width, row, e.addi(kk, k0)))
                .collect()
        };
        let words = if reads.iter().all(Option::is_none) {
            [by_codes(e, 0), by_codes(e, 1)]
        } else {
            let inside = e.cmpi(CmpiPredicate::Ule, e.addi(kk, e.index(s.k)), self.ops.k);
            let rows: [Option<Rows<'c, 'a>>; 2] =
                std::array::from_fn(|x| reads[x].as_ref().map(|_| Rows::of(e, sides[x].2)));
            let fast = (0..2)
                .filter_map(|x| {
                    let r = reads[x].as_ref()?;
                    Some(self.rows_aligned(e, rows[x].as_ref()?, r.bytes))
                })
                .fold(inside, |c, aligned| e.andi(c, aligned));
            let loaded: Vec<usize> = (0..2).filter(|&x| reads[x].is_some()).collect();
            let count: usize = loaded.iter().map(|&x| sides[x].0.len()).sum();
            let mut out = e
                .if_else(
                    fast,
                    &vec![e.int_type(32); count],
                    |e| {
                        let stored: Vec<Vec<Value<'c, 'a>>> = loaded
                            .iter()
                            .map(|&x| {
                                let (places, src, bits, _) = &sides[x];
                                let r = reads[x].as_ref().expect("read a word at a time");
                                places
                                    .iter()
                                    .map(|&(row, k0)| {
                                        let kw = e.addi(kk, k0);
                                        self.stored_word(e, src, *bits, r, row, kw)
                                    })
                                    .collect()
                            })
                            .collect();
                        loaded
                            .iter()
                            .zip(stored)
                            .flat_map(|(&x, words)| {
                                let r = reads[x].as_ref().expect("read a word at a time");
                                let src = sides[x].1;
                                words
                                    .into_iter()
                                    .map(move |w| self.applied(e, src, r.apply, w))
                            })
                            .collect()
                    },
                    |e| loaded.iter().flat_map(|&x| by_codes(e, x)).collect(),
                )
                .into_iter();
            std::array::from_fn(|x| {
                if reads[x].is_some() {
                    out.by_ref().take(sides[x].0.len()).collect()
                } else {
                    by_codes(e, x)
                }
            })
        };
        // Registers past a 16-step are zero.
        let [a, b] = std::array::from_fn(|x| {
            sides[x]
                .0
                .iter()
                .zip(&words[x])
                .map(|(&(_, k0), &w)| {
                    if self.plan.step < s.k {
                        e.select(e.cmpi(CmpiPredicate::Ult, k0, step), w, e.i32(0))
                    } else {
                        w
                    }
                })
                .collect()
        });
        (a, b)
    }

    /// The E8M0 codes a lane gives a block-scaled instruction at K step `kk`: per A tile
    /// the scale of its row's codes, per B tile its column's.
    fn lane_scales(
        &self,
        e: &Emitter<'c, 'a>,
        l: &Lane<'c, 'a>,
        kk: Value<'c, 'a>,
    ) -> (Vec<Value<'c, 'a>>, Vec<Value<'c, 'a>>) {
        let s = self.shape;
        let i32t = e.int_type(32);
        let block = e.index(32);
        let code = |sc: &Scaled<'c, 'a>, r: Value<'c, 'a>, k: Value<'c, 'a>| {
            let k = e.minui(k, e.subi(self.ops.k, e.index(1)));
            e.extui(e.load(sc.scales, &[r, e.divui(k, block)]), i32t)
        };
        let a = (0..s.tiles.0)
            .map(|mt| {
                let (row, k0) = self.instr.a_reg(e, l.lane, 0);
                let row = e.addi(e.addi(l.row0, e.index(mt as i64 * s.m)), row);
                code(
                    &self.ops.sa,
                    e.minui(row, e.subi(self.ops.m, e.index(1))),
                    e.addi(kk, k0),
                )
            })
            .collect();
        let b = (0..s.tiles.1)
            .map(|nt| {
                let (col, k0) = self.instr.b_reg(e, l.lane, 0);
                let col = e.addi(e.addi(l.col0, e.index(nt as i64 * s.n)), col);
                code(
                    &self.ops.sb,
                    e.minui(col, e.subi(self.ops.n, e.index(1))),
                    e.addi(kk, k0),
                )
            })
            .collect();
        (a, b)
    }

    /// One K step of every instruction of a lane's warp tile.
    #[allow(clippy::type_complexity)]
    fn step(
        &self,
        e: &Emitter<'c, 'a>,
        ri: &dyn RegisterInstr,
        a: &[Value<'c, 'a>],
        b: &[Value<'c, 'a>],
        scales: Option<&(Vec<Value<'c, 'a>>, Vec<Value<'c, 'a>>)>,
        part: &[Value<'c, 'a>],
    ) -> Vec<Value<'c, 'a>> {
        let s = self.shape;
        let mut out = part.to_vec();
        for mt in 0..s.tiles.0 {
            for nt in 0..s.tiles.1 {
                let x = s.acc_index(mt, nt, 0);
                let d = ri.emit(
                    e,
                    &a[mt * s.a_words..(mt + 1) * s.a_words],
                    &b[nt * s.b_words..(nt + 1) * s.b_words],
                    &part[x..x + s.acc],
                    scales.map(|(sa, sb)| [sa[mt], sb[nt]]),
                );
                out[x..x + s.acc].copy_from_slice(&d);
            }
        }
        out
    }

    /// `acc + part * (sa * sb)` for every accumulator of a lane, the scales of the segment
    /// starting at `k0`; `acc + part` when the scales are not per K segment here.
    pub(crate) fn promote(
        &self,
        e: &Emitter<'c, 'a>,
        l: &Lane<'c, 'a>,
        k0: Value<'c, 'a>,
        acc: &[Value<'c, 'a>],
        part: &[Value<'c, 'a>],
    ) -> Vec<Value<'c, 'a>> {
        let scales = self.segment_scales(e, l, k0, acc.len(), &[None, None], None);
        self.promote_loaded(e, acc, part, &scales)
    }

    /// A lane's scales that do not change along K (per-tensor, per-channel) where the
    /// other operand's do, loaded once (before a kernel's K loop) for
    /// [`Kernel::segment_scales`]; none where there are none. Read per segment, their 32
    /// column addresses a thread stayed live through the loop (LLVM hoists them; the loads
    /// it cannot): 64 registers, against 32 for the values.
    pub(crate) fn constant_scales(
        &self,
        e: &Emitter<'c, 'a>,
        l: &Lane<'c, 'a>,
        count: usize,
    ) -> Option<SegmentScales<'c, 'a>> {
        let constant = [&self.ops.sa, &self.ops.sb].map(|s| !s.layout.is_k_blocked());
        let along_k = self.plan.seg.is_some() && !self.plan.scaled && !self.plan.in_codes;
        (along_k && constant.iter().any(|&c| c)).then(|| {
            // (The other operand's scales are loaded for K = 0 too, and never used.)
            self.segment_scales(e, l, e.index(0), count, &[None, None], None)
        })
    }

    /// The scales (as stored: A's, B's) of each of a lane's `count` accumulators for the
    /// segment starting at `k0`, loaded now, so that a kernel can load them before it
    /// waits for the segment's partial sums; none when the scales are not per K segment
    /// here. Rows and columns past C read the last one, K past its end the last block:
    /// every load is in bounds, whether or not the segment is promoted.
    ///
    /// `staged`: per operand, where the kernel keeps them decoded (a reader of the f32
    /// scale of a row, for A, or column, for B, of C), instead of the scales as stored.
    /// `constant`: the scales that do not change along K, loaded before
    /// ([`Kernel::constant_scales`]), taken from there.
    pub(crate) fn segment_scales(
        &self,
        e: &Emitter<'c, 'a>,
        l: &Lane<'c, 'a>,
        k0: Value<'c, 'a>,
        count: usize,
        staged: &[Option<ScaleReader<'c, 'a, '_>>; 2],
        constant: Option<&SegmentScales<'c, 'a>>,
    ) -> SegmentScales<'c, 'a> {
        let mut scales = SegmentScales {
            loaded: vec![],
            rows: 0,
            of: vec![],
            decoded: [staged[0].is_some(), staged[1].is_some()],
        };
        if self.plan.seg.is_none() || self.plan.scaled || self.plan.in_codes {
            return scales;
        }
        let one = e.index(1);
        let (last_row, last_col, last_k) = (
            e.subi(self.ops.m, one),
            e.subi(self.ops.n, one),
            e.subi(self.ops.k, one),
        );
        let clamp = |e: &Emitter<'c, 'a>, v, last, inside: bool| {
            if inside {
                v
            } else {
                e.minui(v, last)
            }
        };
        let k0 = e.minui(k0, last_k);
        let s = self.shape;
        // Operand x's i-th scale as loaded before, where it does not change along K.
        let before = |x: usize, i: usize| {
            let constant = constant?;
            let layout = [&self.ops.sa, &self.ops.sb][x].layout;
            (!layout.is_k_blocked()).then(|| constant.loaded[i + x * constant.rows])
        };
        // Per row (column) key, its place in `loaded`: A's first, then B's. Staged column
        // scales of a run of adjacent columns (`Instr::column_run`) in one read.
        let (mut rows, mut cols) = (vec![], vec![]);
        let mut b_loads = vec![];
        let mut of = vec![];
        let run = self.instr.column_run();
        // (An operand's scales one value over the block (`uniform`): one key for all.)
        let key = |x: usize| {
            let (tile, i) = (x / s.acc, x % s.acc);
            let (rk, ck) = self.instr.acc_keys(i);
            let (rk, ck) = ((tile / s.tiles.1, rk), (tile % s.tiles.1, ck));
            let [a, b] = self.uniform;
            (if a { (0, 0) } else { rk }, if b { (0, 0) } else { ck })
        };
        for x in 0..count {
            let (rk, ck) = key(x);
            let (row, col) = self.acc_coords(e, l, x);
            let r = rows.iter().position(|&k| k == rk).unwrap_or_else(|| {
                rows.push(rk);
                scales.loaded.push(match &staged[0] {
                    Some(read) => read(e, row, 1)[0],
                    None => before(0, rows.len() - 1).unwrap_or_else(|| {
                        let row = clamp(e, row, last_row, self.inside[0]);
                        self.ops.sa.block_stored(e, row, k0)
                    }),
                });
                rows.len() - 1
            });
            if !cols.contains(&ck) {
                match &staged[1] {
                    Some(read)
                        if run > 1
                            && !self.uniform[1]
                            && (x % s.acc).is_multiple_of(run)
                            && x + run <= count =>
                    {
                        for (d, v) in read(e, col, run).into_iter().enumerate() {
                            cols.push(key(x + d).1);
                            b_loads.push(v);
                        }
                    }
                    Some(read) => {
                        cols.push(ck);
                        b_loads.push(read(e, col, 1)[0]);
                    }
                    None => {
                        cols.push(ck);
                        b_loads.push(before(1, cols.len() - 1).unwrap_or_else(|| {
                            let col = clamp(e, col, last_col, self.inside[1]);
                            self.ops.sb.block_stored(e, col, k0)
                        }));
                    }
                }
            }
            let c = cols
                .iter()
                .position(|&k| k == ck)
                .expect("its column's scale read");
            of.push((r, c));
        }
        let a = scales.loaded.len();
        scales.rows = a;
        scales.loaded.extend(b_loads);
        scales.of = of.into_iter().map(|(r, c)| (r, a + c)).collect();
        scales
    }

    /// `acc + part * (sa * sb)` with the scales of [`Kernel::segment_scales`] (`acc +
    /// part` when there are none).
    pub(crate) fn promote_loaded(
        &self,
        e: &Emitter<'c, 'a>,
        acc: &[Value<'c, 'a>],
        part: &[Value<'c, 'a>],
        scales: &SegmentScales<'c, 'a>,
    ) -> Vec<Value<'c, 'a>> {
        if scales.of.is_empty() {
            return acc.iter().zip(part).map(|(&a, &p)| e.addf(a, p)).collect();
        }
        let (sa, sb) = (&self.ops.sa, &self.ops.sb);
        let values: Vec<Value> = (scales.loaded.iter().enumerate())
            .map(|(i, &v)| {
                let x = (i >= scales.rows) as usize;
                if scales.decoded[x] {
                    v
                } else {
                    [sa, sb][x].decode_stored(e, v)
                }
            })
            .collect();
        (0..acc.len())
            .map(|x| {
                let (sa, sb) = (values[scales.of[x].0], values[scales.of[x].1]);
                // One rounding instead of two, one instruction instead of two.
                e.scalar_fma(part[x], e.mulf(sa, sb), acc[x])
            })
            .collect()
    }

    /// Store a lane's accumulators (with the per-tensor / per-channel scales when no scale
    /// changes along K, or, where the block scales are in the codes (`Plan::in_codes`), those
    /// of an operand whose scales do not change along K; `2^shift`, the globals, the bias),
    /// those inside C. What does not depend on the element (a per-tensor scale, the
    /// globals) is read once per lane.
    ///
    /// Where the instruction's accumulators come in runs of adjacent columns
    /// ([`Instr::column_run`]), N is static and a multiple of the run and C row-major, a run
    /// inside C is stored as one vector (`st.global.v2.f32`: half the store instructions,
    /// whole 32-byte sectors per warp), when C's address is aligned for it (checked once, at
    /// run time: a memref's base need not be); else element by element.
    pub(crate) fn epilogue(&self, e: &Emitter<'c, 'a>, l: &Lane<'c, 'a>, acc: &[Value<'c, 'a>]) {
        let lane_values = self.lane_values(e);
        let run = self.store_run(acc.len());
        let scalars = |e: &Emitter<'c, 'a>, values: &[Value<'c, 'a>], row, col| {
            for (d, &v) in values.iter().enumerate() {
                e.store(v, self.ops.o.out, &[row, e.addi(col, e.index(d as i64))]);
            }
        };
        if run == 1 {
            self.epilogue_values(e, l, acc, 1, lane_values, &scalars);
            return;
        }
        let bytes = run as i64
            * if self.ops.out_type == e.f32_type() {
                4
            } else {
                2
            };
        let zero = e.index(0);
        let base = e.aligned_pointer(self.ops.o.out);
        let aligned = e.cmpi(CmpiPredicate::Eq, e.remui(base, e.index(bytes)), zero);
        e.if_else(
            aligned,
            &[],
            |e| {
                self.epilogue_values(e, l, acc, run, lane_values, &|e, values, row, col| {
                    e.vstore_aligned(e.from_elements(values), self.ops.o.out, &[row, col], bytes)
                });
                vec![]
            },
            |e| {
                self.epilogue_values(e, l, acc, run, lane_values, &scalars);
                vec![]
            },
        );
    }

    /// Whether operand `s`'s scales are applied in the epilogue: where no scale changes
    /// along K, or, where the block scales are in the codes, those of an operand whose
    /// scales do not change along K.
    fn scales_in_epilogue(&self, s: &Scaled<'c, 'a>) -> bool {
        let whole = self.plan.seg.is_none() && !self.plan.scaled;
        whole || (self.plan.in_codes && !s.layout.is_k_blocked())
    }

    /// What the epilogue reads once per lane ([`LaneValues`]).
    pub(crate) fn lane_values(&self, e: &Emitter<'c, 'a>) -> LaneValues<'c, 'a> {
        let zero = e.index(0);
        let once = |s: &Scaled<'c, 'a>| {
            (self.scales_in_epilogue(s) && s.layout == lowp_formats::ScaleLayout::PerTensor)
                .then(|| s.block_value(e, zero, zero))
        };
        LaneValues {
            scales: [once(&self.ops.sa), once(&self.ops.sb)],
            global: global_product(e, &self.ops.sa, &self.ops.sb),
        }
    }

    /// The epilogue's values without their stores: for each run of `run` adjacent
    /// accumulators (1, or the instruction's column run where N is a multiple of it) whose
    /// first element is inside C, `put(e, values, row, col)` with the run's values as
    /// stored (`out_type`) and its first element's place in C; `once` from
    /// [`Kernel::lane_values`].
    pub(crate) fn epilogue_values(
        &self,
        e: &Emitter<'c, 'a>,
        l: &Lane<'c, 'a>,
        acc: &[Value<'c, 'a>],
        run: usize,
        once: LaneValues<'c, 'a>,
        put: &PutRun<'_, 'c, 'a>,
    ) {
        let zero = e.index(0);
        let here = |s: &Scaled<'c, 'a>| self.scales_in_epilogue(s);
        let ([ta, tb], global) = (once.scales, once.global);
        // Accumulator `v` at (row, col) as stored.
        let result = |e: &Emitter<'c, 'a>, v: Value<'c, 'a>, row, col| {
            // The scales applied here as one product (the contract's `sa * sb`: the total
            // times one scale alone may leave f32's range where the product does not).
            let sa = here(&self.ops.sa)
                .then(|| ta.unwrap_or_else(|| self.ops.sa.block_value(e, row, zero)));
            let sb = here(&self.ops.sb)
                .then(|| tb.unwrap_or_else(|| self.ops.sb.block_value(e, col, zero)));
            let mut v = match (sa, sb) {
                (Some(sa), Some(sb)) => e.mulf(v, e.mulf(sa, sb)),
                (Some(s), None) | (None, Some(s)) => e.mulf(v, s),
                (None, None) => v,
            };
            let shift = self.plan.a.shift + self.plan.b.shift;
            if shift != 0 {
                v = e.mulf(v, e.f32((shift as f32).exp2()));
            }
            final_value(e, &self.ops.o, global, self.ops.out_type, v, col)
        };
        // Each run (of 1 or `run` accumulators) whose first element is inside C: with N a
        // multiple of the run, all of it is.
        for x in (0..acc.len()).step_by(run) {
            let (row, col) = self.acc_coords(e, l, x);
            let inside = e.andi(
                e.cmpi(CmpiPredicate::Ult, row, self.ops.m),
                e.cmpi(CmpiPredicate::Ult, col, self.ops.n),
            );
            e.if_then(inside, |e| {
                let values: Vec<Value> = (0..run)
                    .map(|d| result(e, acc[x + d], row, e.addi(col, e.index(d as i64))))
                    .collect();
                put(e, &values, row, col);
            });
        }
    }

    /// The run of adjacent columns the epilogue stores as one vector (1: element by
    /// element): the instruction's, where N is static and a multiple of it, C row-major
    /// with an offset that keeps the runs aligned, and the accumulators (`count`) whole
    /// runs.
    fn store_run(&self, count: usize) -> usize {
        let run = self.instr.column_run();
        let t = match MemRefType::try_from(self.ops.o.out.r#type()) {
            Ok(t) if run > 1 => t,
            _ => return 1,
        };
        // SAFETY: a live memref type's layout map.
        let identity = unsafe {
            mlir_sys::mlirAffineMapIsIdentity(mlir_sys::mlirMemRefTypeGetAffineMap(t.to_raw()))
        };
        let n = match t.dim_size(1) {
            Ok(DimSize::Static(n)) => n as usize,
            _ => return 1,
        };
        let fits = identity
            && n.is_multiple_of(run)
            && count.is_multiple_of(run)
            && self.shape.acc.is_multiple_of(run);
        if fits {
            run
        } else {
            1
        }
    }
}

/// Refuse what no GPU kernel (NVIDIA or AMD) is made for, before one is: an op already
/// inside a kernel (a `gpu.launch` body: the lowerings launch kernels of their own from
/// host code) or, unless `emulate`, inside an `scf.parallel` (which the GPU pipelines make
/// a kernel: the launch inside it failed to legalize, naming no cause), and a static
/// dimension of 2^31 or more (grids, offsets and byte counts stay within i64, and indices
/// within the GPUs' 32 bits).
pub(crate) fn check_gpu_op(op: OperationRef, emulate: bool) -> Result<(), PassError> {
    // Emulated, the kernels are CPU loops, which may run in a parallel loop's iterations.
    if !emulate && crate::ir::enclosing(op, "scf.parallel").is_some() {
        return Err(crate::expand_quantize::unsupported(
            op,
            "it is inside an scf.parallel: the GPU pipelines map parallel loops onto GPU \
             threads, and a kernel launch cannot run inside a kernel (loop with scf.for \
             around it, or lower it with lowp-to-loops)",
        ));
    }
    if crate::ir::enclosing(op, "gpu.launch").is_some() {
        return Err(crate::expand_quantize::unsupported(
            op,
            "it is inside a gpu.launch body, a kernel already: lowp-to-nvvm and \
             lowp-to-rocdl launch kernels of their own from host code (lower it there with \
             lowp-to-loops, or move it to the host function)",
        ));
    }
    let huge = op
        .operands()
        .filter_map(|v| MemRefType::try_from(v.r#type()).ok())
        .flat_map(|t| (0..t.rank()).filter_map(move |d| t.dim_size(d).ok()))
        .filter_map(|d| match d {
            DimSize::Static(n) => Some(n as i64),
            _ => None,
        })
        .find(|&n| n >= 1 << 31);
    match huge {
        Some(d) => Err(crate::expand_quantize::unsupported(
            op,
            format!("a static dimension of {d} is beyond the GPU kernels' 2^31 - 1"),
        )),
        None => Ok(()),
    }
}

/// The discardable unit attribute on a function whose lowp ops became emulated kernels
/// (CPU loops computing what the GPU's would): code for the host, which a GPU chip's
/// pipeline would otherwise take for loops to map onto the GPU.
pub const EMULATED: &str = "lowp.emulated";

/// Mark `func` as holding emulated kernels ([`EMULATED`]).
pub(crate) fn mark_emulated(func: OperationRef) {
    crate::ir::set_unit_attribute(func, EMULATED);
}

/// Lower `op` with the matrix-instruction kernel: on the GPU (`emulate = false`) or as the
/// CPU emulation of the same warps.
pub(crate) fn lower<'c, 'a>(
    e: &Emitter<'c, 'a>,
    op: OperationRef<'c, 'a>,
    plan: &Plan,
    instr: &dyn RegisterInstr,
    emulate: bool,
    permute: Option<Permute>,
) -> Result<(), PassError> {
    let mut kernel = Kernel::new(e, op, plan, instr)?;
    if let Some(p) = permute {
        kernel = kernel.with_permute(p);
    }
    let (tm, tn) = kernel.shape.block_tile();
    let kernel = kernel.with_block(tm, tn);
    kernel.blocks(e, kernel.grid(e, tm, tn), |e, bm, bn| {
        if emulate {
            emulated_block(e, &kernel, instr, bm, bn);
        } else {
            hardware_block(e, &kernel, instr, bm, bn);
        }
    });
    Ok(())
}

/// The segment loop of one lane: `k_steps` computes a segment's partial sums, `promote`
/// adds them to the accumulators.
pub(crate) fn segments<'c, 'a>(
    e: &Emitter<'c, 'a>,
    kn: &Kernel<'_, 'c, 'a>,
    inits: &[Value<'c, 'a>],
    k_steps: impl Fn(&Emitter<'c, 'a>, Value<'c, 'a>, Value<'c, 'a>) -> Vec<Value<'c, 'a>>,
    promote: impl Fn(
        &Emitter<'c, 'a>,
        Value<'c, 'a>,
        &[Value<'c, 'a>],
        &[Value<'c, 'a>],
    ) -> Vec<Value<'c, 'a>>,
) -> Vec<Value<'c, 'a>> {
    let (zero, one) = (e.index(0), e.index(1));
    let span = e.index(kn.plan.span);
    let count = ceil_div(e, kn.ops.k, span);
    e.for_loop(zero, count, one, inits, |e, s, acc| {
        let k0 = e.muli(s, span);
        let k1 = e.minui(e.addi(k0, span), kn.ops.k);
        let part = k_steps(e, k0, k1);
        promote(e, k0, acc, &part)
    })
}

/// The bookkeeping of a flat K loop of `step`: whether the step starting at `kk` ends a
/// segment of `span` (a scale block or a promotion span; `None`: all of K, ending at `k`),
/// and where that segment began.
pub(crate) fn segment_end<'c, 'a>(
    e: &Emitter<'c, 'a>,
    kk: Value<'c, 'a>,
    step: i64,
    span: Option<i64>,
    k: Value<'c, 'a>,
) -> (Value<'c, 'a>, Value<'c, 'a>) {
    let next = e.addi(kk, e.index(step));
    let last = e.cmpi(CmpiPredicate::Uge, next, k);
    match span {
        Some(s) => {
            let span = e.index(s);
            let end = e.cmpi(CmpiPredicate::Eq, e.remui(next, span), e.index(0));
            (e.ori(end, last), e.muli(e.divui(kk, span), span))
        }
        None => (last, e.index(0)),
    }
}

/// One block on the GPU: a loop of 4 warps' threads (mapped to threads by
/// `gpu-map-parallel-loops`), each carrying its accumulators in registers.
fn hardware_block<'c, 'a>(
    e: &Emitter<'c, 'a>,
    kn: &Kernel<'_, 'c, 'a>,
    ri: &dyn RegisterInstr,
    bm: Value<'c, 'a>,
    bn: Value<'c, 'a>,
) {
    let s = kn.shape;
    let (zero, one) = (e.index(0), e.index(1));
    let threads = e.index(WARPS.0 * WARPS.1 * s.lanes);
    e.parallel_loop(zero, threads, one, |e, tid| {
        let warp = e.divui(tid, e.index(s.lanes));
        let lane = e.remui(tid, e.index(s.lanes));
        let l = kn.lane(e, bm, bn, warp, lane);
        let zeros = vec![e.f32(0.0); s.accumulators()];
        let acc = segments(
            e,
            kn,
            &zeros,
            |e, k0, k1| {
                let zeros = vec![e.f32(0.0); s.accumulators()];
                e.for_loop(k0, k1, e.index(kn.plan.step), &zeros, |e, kk, part| {
                    let (a, b) = kn.fragments(e, &l, kk);
                    let scales = kn.plan.scaled.then(|| kn.lane_scales(e, &l, kk));
                    kn.step(e, ri, &a, &b, scales.as_ref(), part)
                })
            },
            |e, k0, acc, part| kn.promote(e, &l, k0, acc, part),
        );
        kn.epilogue(e, &l, &acc);
    });
}

/// Per-lane register files of one warp in memory: `[lane][register]`.
struct Files<'c, 'a> {
    acc: Value<'c, 'a>,
    part: Value<'c, 'a>,
    a: Value<'c, 'a>,
    b: Value<'c, 'a>,
    sa: Value<'c, 'a>,
    sb: Value<'c, 'a>,
}

/// `lane * per + x`.
fn slot<'c, 'a>(e: &Emitter<'c, 'a>, lane: Value<'c, 'a>, per: usize, x: usize) -> Value<'c, 'a> {
    e.addi(e.muli(lane, e.index(per as i64)), e.index(x as i64))
}

/// One block on the CPU: its warps one after the other, each lane's registers in memory,
/// every instruction computed by [`emulated_instr`].
fn emulated_block<'c, 'a>(
    e: &Emitter<'c, 'a>,
    kn: &Kernel<'_, 'c, 'a>,
    ri: &dyn RegisterInstr,
    bm: Value<'c, 'a>,
    bn: Value<'c, 'a>,
) {
    let s = kn.shape;
    let (zero, one) = (e.index(0), e.index(1));
    let lanes = e.index(s.lanes);
    let (f32t, i32t) = (e.f32_type(), e.int_type(32));
    let accs = s.accumulators();
    let (a_regs, b_regs) = (s.tiles.0 * s.a_words, s.tiles.1 * s.b_words);
    let f = Files {
        acc: e.alloca(f32t, s.lanes * accs as i64),
        part: e.alloca(f32t, s.lanes * accs as i64),
        a: e.alloca(i32t, s.lanes * a_regs as i64),
        b: e.alloca(i32t, s.lanes * b_regs as i64),
        sa: e.alloca(i32t, s.lanes * s.tiles.0 as i64),
        sb: e.alloca(i32t, s.lanes * s.tiles.1 as i64),
    };
    let per_lane = |e: &Emitter<'c, 'a>, body: &dyn Fn(&Emitter<'c, 'a>, Value<'c, 'a>)| {
        e.for_loop(zero, lanes, one, &[], |e, lane, _| {
            body(e, lane);
            vec![]
        });
    };
    let clear = |e: &Emitter<'c, 'a>, mem: Value<'c, 'a>| {
        per_lane(e, &|e, lane| {
            for x in 0..accs {
                e.store(e.f32(0.0), mem, &[slot(e, lane, accs, x)]);
            }
        });
    };
    let store_all = |e: &Emitter<'c, 'a>, mem, lane, values: &[Value<'c, 'a>]| {
        for (x, &v) in values.iter().enumerate() {
            e.store(v, mem, &[slot(e, lane, values.len(), x)]);
        }
    };
    e.for_loop(zero, e.index(WARPS.0 * WARPS.1), one, &[], |e, warp, _| {
        clear(e, f.acc);
        let span = e.index(kn.plan.span);
        let count = ceil_div(e, kn.ops.k, span);
        e.for_loop(zero, count, one, &[], |e, seg, _| {
            let k0 = e.muli(seg, span);
            let k1 = e.minui(e.addi(k0, span), kn.ops.k);
            clear(e, f.part);
            e.for_loop(k0, k1, e.index(kn.plan.step), &[], |e, kk, _| {
                per_lane(e, &|e, lane| {
                    let l = kn.lane(e, bm, bn, warp, lane);
                    let (a, b) = kn.fragments(e, &l, kk);
                    store_all(e, f.a, lane, &a);
                    store_all(e, f.b, lane, &b);
                    if kn.plan.scaled {
                        let (sa, sb) = kn.lane_scales(e, &l, kk);
                        store_all(e, f.sa, lane, &sa);
                        store_all(e, f.sb, lane, &sb);
                    }
                });
                for mt in 0..s.tiles.0 {
                    for nt in 0..s.tiles.1 {
                        emulated_instr(e, kn, ri, &f, mt, nt);
                    }
                }
                vec![]
            });
            per_lane(e, &|e, lane| {
                let l = kn.lane(e, bm, bn, warp, lane);
                let load = |mem, x| e.load(mem, &[slot(e, lane, accs, x)]);
                let acc: Vec<Value> = (0..accs).map(|x| load(f.acc, x)).collect();
                let part: Vec<Value> = (0..accs).map(|x| load(f.part, x)).collect();
                let sum = kn.promote(e, &l, k0, &acc, &part);
                store_all(e, f.acc, lane, &sum);
            });
            vec![]
        });
        per_lane(e, &|e, lane| {
            let l = kn.lane(e, bm, bn, warp, lane);
            let acc: Vec<Value> = (0..accs)
                .map(|x| e.load(f.acc, &[slot(e, lane, accs, x)]))
                .collect();
            kn.epilogue(e, &l, &acc);
        });
        vec![]
    });
}

/// Instruction (mt, nt) of a warp on its registers in memory, as the ISA defines it:
/// D[row][col] = C[row][col] + sum over K of A[row][k] * B[k][col], with A[row][k] the code
/// in the register [`RegisterInstr::a_owner`] names (and B likewise); a block-scaled instruction
/// multiplies each 32-block's sum by the E8M0 scales of the lanes holding its codes.
fn emulated_instr<'c, 'a>(
    e: &Emitter<'c, 'a>,
    kn: &Kernel<'_, 'c, 'a>,
    ri: &dyn RegisterInstr,
    f: &Files<'c, 'a>,
    mt: usize,
    nt: usize,
) {
    let s = kn.shape;
    let (zero, one) = (e.index(0), e.index(1));
    let (a_regs, b_regs) = (s.tiles.0 * s.a_words, s.tiles.1 * s.b_words);
    let element = |e: &Emitter<'c, 'a>,
                   mem: Value<'c, 'a>,
                   per_lane: usize,
                   base: usize,
                   owner: (Value<'c, 'a>, Value<'c, 'a>),
                   k: Value<'c, 'a>,
                   width: u32,
                   src: &Operand| {
        let (lane, reg) = owner;
        let at = e.addi(
            e.muli(lane, e.index(per_lane as i64)),
            e.addi(e.index(base as i64), reg),
        );
        let word = e.load(mem, &[at]);
        let per = e.index(32 / width as i64);
        let shift = e.index_castui(
            e.muli(e.remui(k, per), e.index(width as i64)),
            e.int_type(32),
        );
        let code = e.andi(e.shrui(word, shift), e.i32((1 << width) - 1));
        if let Some(fields) = src.f16 {
            codes::half_value(e, fields.half, code)
        } else {
            codes::decode(e, src.ty, code)
        }
    };
    let block = if kn.plan.scaled { 32 } else { s.k };
    e.for_loop(zero, e.index(s.lanes), one, &[], |e, lane, _| {
        for i in 0..s.acc {
            let (row, col) = ri.acc(e, lane, i);
            let total = e.for_loop(
                zero,
                e.index(s.k / block),
                one,
                &[e.f32(0.0)],
                |e, kb, t| {
                    let k0 = e.muli(kb, e.index(block));
                    let k1 = e.addi(k0, e.index(block));
                    let sum = e.for_loop(k0, k1, one, &[e.f32(0.0)], |e, k, acc| {
                        let x = element(
                            e,
                            f.a,
                            a_regs,
                            mt * s.a_words,
                            ri.a_owner(e, row, k),
                            k,
                            s.a_bits,
                            &kn.plan.a,
                        );
                        let y = element(
                            e,
                            f.b,
                            b_regs,
                            nt * s.b_words,
                            ri.b_owner(e, col, k),
                            k,
                            s.b_bits,
                            &kn.plan.b,
                        );
                        vec![e.addf(acc[0], e.mulf(x, y))]
                    })[0];
                    let sum = if kn.plan.scaled {
                        let scale = |mem, per: usize, x: usize, owner: Value<'c, 'a>| {
                            let code = e.load(mem, &[slot(e, owner, per, x)]);
                            codes::e8m0_decode(e, code)
                        };
                        let (la, _) = ri.a_owner(e, row, k0);
                        let (lb, _) = ri.b_owner(e, col, k0);
                        e.mulf(
                            sum,
                            e.mulf(
                                scale(f.sa, s.tiles.0, mt, la),
                                scale(f.sb, s.tiles.1, nt, lb),
                            ),
                        )
                    } else {
                        sum
                    };
                    vec![e.addf(t[0], sum)]
                },
            )[0];
            let at = slot(e, lane, s.accumulators(), s.acc_index(mt, nt, i));
            e.store(e.addf(e.load(f.part, &[at]), total), f.part, &[at]);
        }
        vec![]
    });
}

/// Emit a remark at `op`: a lowering choice the user should know of.
pub(crate) fn remark(op: OperationRef, message: &str) {
    // SAFETY: a live op's location; the bridge copies the message.
    unsafe {
        lowp_dialect::ffi::lowpEmitRemark(op.location().to_raw(), crate::ir::string_ref(message))
    }
}
