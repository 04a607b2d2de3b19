//! The FP8 `wgmma.mma_async` kernel of `lowp-to-nvvm` (sm_90a only: Blackwell has no
//! wgmma), on the pieces of the shared matrix kernel (`crate::matrix_kernel`: loads with
//! embeddings, K segments and scales, epilogue).
//!
//! A block is one warpgroup (128 threads) computing 64 x 128 of C with
//! `wgmma.mma_async.sync.aligned.m64n128k32.f32.<a>.<b>`, both operands in shared memory
//! (`gpu.launch` workgroup buffers), A and B K-major (`row` / `col`). One loop over K, whose
//! every step stores the words each thread loaded (A: 64 x 32 codes, 4 words a thread; B:
//! 128 x 32, 8 words; translated to FP8 where the stored format embeds in it) into shared
//! memory, then `fence.proxy.async` (generic-proxy stores made visible to the async proxy
//! wgmma reads through), a barrier, `wgmma.fence`, the instruction and its commit; while it
//! runs, the threads load the next step's words into registers; then the wait, and at the
//! end of a K segment the partial sums go into the accumulators with the segment's scales.
//! One shared-memory stage and register prefetch: the kernel of the ops the cp.async
//! pipeline (`wgmma_pipeline/`, which shares this instruction) cannot take: a dynamic K,
//! rows that are not a multiple of 16 bytes or not row-major, NVFP4's 16-blocks where no
//! operand is translated or the pipeline's split tiles leave fewer than 3 stages, scale
//! blocks shorter than the instruction's K.
//!
//! Block scales along K (MX, NVFP4, blockwise) are staged: with each step's words every
//! thread loads its two scales a step ahead (B's column `tid`, A's row `tid % 64`),
//! decodes them once and stores them into a third shared buffer (64 + 128 f32) beside the
//! tiles, so a promotion reads its 34 values from shared memory (18 loads: the column
//! pairs as one) instead of loading and decoding them from global memory per segment
//! (whose 32 column addresses LLVM kept live through the loop: 255 registers and 250-odd
//! bytes of spills).
//!
//! Formats no FP8 type holds (`Plan::half`: E3M4, E2M5, the FNUZ formats, 6- and 7-bit
//! exponents, and what is beside them) take `m64n128k16.f32.f16.f16` (or `.bf16.bf16`) on
//! the same tiles: each thread writes the f16 / bf16 patterns of its codes' fields, two a
//! word, so 32 bytes of each row hold 16 values and the layout, descriptors and copies are
//! the FP8 instruction's; the scales (and the patterns' powers of two) go on the partial
//! sums as for FP8.
//!
//! Shared-memory layout: K-major without swizzle, core matrices of 8 rows x 16 bytes, the
//! one of (8-row group g, K half h) at byte `(2g + h) * 128`: a matrix descriptor with
//! leading-dimension offset (between core matrices along K) 128 and stride offset (between
//! 8-row groups) 256. Accumulators (PTX ISA, wgmma D fragments for .f32, m64nNk32): thread
//! `t` of the warpgroup, `w = t / 32`, `g = (t % 32) / 4`, `q = t % 4`, holds in register
//! `j` row `16w + g + 8 * ((j % 4) / 2)`, column `8 * (j / 4) + 2q + j % 2`.
//!
//! The emulation (`emulate=true`) runs the same copies into a buffer standing for shared
//! memory (descriptors built on offset 0) and computes each instruction by decoding its
//! descriptors and reading the codes where the descriptors say they are.

use lowp_formats::{Half, ScaledFormat};
use melior::dialect::arith::CmpiPredicate;
use melior::ir::operation::OperationBuilder;
use melior::ir::{Attribute, Identifier, OperationRef, Type, Value, ValueLike};

use crate::code_words::Permute;
use crate::codes;
use crate::ir::Emitter;
use crate::matrix_kernel::{Instr, Kernel, Lane, Plan, ScaleReader, Shape};
use crate::PassError;

/// The block's tile of C and its threads.
pub(super) const BM: i64 = 64;
pub(super) const BN: i64 = 128;
pub(super) const THREADS: i64 = 128;
/// Accumulators per thread.
pub(super) const ACC: usize = (BN / 2) as usize;
/// Descriptor offsets of the shared-memory layout.
pub(super) const LBO: i64 = 128;
pub(super) const SBO: i64 = 256;
/// 32-bit words of the A and B tiles in shared memory.
const A_WORDS: i64 = BM * 32 / 4;
const B_WORDS: i64 = BN * 32 / 4;

/// `wgmma.mma_async.sync.aligned.m64n<n>k32.f32.<a>.<b>`; its "registers" are the words each
/// thread copies into shared memory. `a` and `b` are the FP8 types of the op's A and B (as
/// stored or embedded), or, with `f16`, the types the codes pass through on their way to
/// `m64n<n>k16.f32.f16.f16` (the pipeline's f16 route: each code times its block's scale).
pub(super) struct Wgmma {
    pub(super) a: ScaledFormat,
    pub(super) b: ScaledFormat,
    /// The instruction's N (a multiple of 8 up to 256): its accumulators are `n / 2` f32
    /// per thread.
    pub(super) n: i64,
    /// The instruction computes C^T: its A is the op's B (64 columns of C), its B the op's
    /// A (`n` rows of C), so row i of its D fragment is column i of C.
    pub(super) swapped: bool,
    /// Both operands' tiles hold 16-bit float values (2 bytes a code):
    /// `k16.f32.<half>.<half>`.
    pub(super) f16: bool,
    /// The 16-bit float of the tiles where `f16`: f16, or bf16 (the patterns of formats
    /// whose fields only bf16's hold).
    pub(super) half: Half,
    /// On the half patterns of formats no FP8 type holds: why no FP8 instruction (and for
    /// bf16, no f16 pattern) takes the op, for the remark `auto` gives.
    pub(super) why_half: Option<String>,
}

impl Wgmma {
    /// The 64 x 128 instruction on `a` and `b`: FP8, or on the half patterns `half` names
    /// (with why no FP8 instruction takes the op).
    fn new(a: ScaledFormat, b: ScaledFormat, half: Option<(Half, String)>) -> Self {
        let f16 = half.is_some();
        let (half, why_half) = match half {
            Some((half, why)) => (half, Some(why)),
            None => (Half::F16, None),
        };
        Wgmma {
            a,
            b,
            n: BN,
            swapped: false,
            f16,
            half,
            why_half,
        }
    }

    /// f32 accumulators per thread.
    pub(super) fn accumulators(&self) -> usize {
        (self.n / 2) as usize
    }

    /// The 16-bit float of the tiles and why no FP8 instruction takes the op, where the
    /// half patterns of formats no FP8 type holds do.
    pub(super) fn half_because(&self) -> Option<(Half, &str)> {
        self.why_half.as_deref().map(|why| (self.half, why))
    }

    /// K per instruction: 32 bytes of each tile row, 32 FP8 codes or 16 f16 values.
    pub(super) fn k(&self) -> i64 {
        if self.f16 {
            16
        } else {
            32
        }
    }

    /// The instruction's operand types, its A first.
    fn types(&self) -> (ScaledFormat, ScaledFormat) {
        if self.swapped {
            (self.b, self.a)
        } else {
            (self.a, self.b)
        }
    }
}

/// Why `accumulate=f32` takes no FP8 instruction: the reason the half-pattern kernels give.
const EXACT: &str =
    "accumulate=f32 sums exact products in f32, which Hopper's FP8 tensor cores do not";

/// The FP8 plan and instruction (`m64n128k32`, A as A) for `op`, or why it needs another
/// kernel (the pipeline's first choice). `exact` (`accumulate=f32`): none, every format
/// takes the half patterns.
pub(super) fn plan(op: OperationRef, exact: bool) -> Result<(Plan, Wgmma), String> {
    if exact {
        return Err(EXACT.into());
    }
    let (plan, a, b) = super::fp8_plan(op)?;
    Ok((plan, Wgmma::new(a, b, None)))
}

/// The register-staged kernel's plan and instruction: FP8 (`plan`), else `m64n128k16` on
/// the f16 (else bf16) patterns of the formats no FP8 type holds (`Plan::half`).
/// (`exact`: `accumulate=f32`, the half patterns for every format, FP8 ones too.)
pub(super) fn register_plan(op: OperationRef, exact: bool) -> Result<(Plan, Wgmma), String> {
    plan(op, exact).or_else(|fp8| {
        let (plan, half, why) = Plan::half(op, fp8)?;
        let instr = Wgmma::new(plan.a.ty, plan.b.ty, Some((half, why)));
        Ok((plan, instr))
    })
}

/// Word `r` a thread copies: word `tid + 128 r` of a tile, row-major, 8 words per row.
pub(super) fn copied_word<'c, 'a>(
    e: &Emitter<'c, 'a>,
    tid: Value<'c, 'a>,
    r: usize,
) -> (Value<'c, 'a>, Value<'c, 'a>) {
    let w = e.addi(tid, e.index(THREADS * r as i64));
    (
        e.divui(w, e.index(8)),
        e.muli(e.remui(w, e.index(8)), e.index(4)),
    )
}

/// Row and first code of register `r` (`copied_word`) for an instruction of K `k` on 32
/// bytes of each row: the byte offset in codes (two per byte for K 64, packed E2M1; one per
/// two bytes for K 16, f16 / bf16 values).
pub(super) fn copied_code<'c, 'a>(
    e: &Emitter<'c, 'a>,
    lane: Value<'c, 'a>,
    r: usize,
    k: i64,
) -> (Value<'c, 'a>, Value<'c, 'a>) {
    let (row, byte) = copied_word(e, lane, r);
    match k {
        32 => (row, byte),
        64 => (row, e.muli(byte, e.index(2))),
        16 => (row, e.divui(byte, e.index(2))),
        _ => unreachable!("an instruction reads 32 bytes of each row: K 16, 32 or 64"),
    }
}

/// The shape of a shared-memory FP8 instruction of K 32 over an `m x n` tile, the block's
/// `THREADS` copying both tiles in words (`copied_word`), `acc` accumulators per thread.
pub(super) fn smem_shape(m: i64, n: i64, acc: usize) -> Shape {
    Shape {
        lanes: THREADS,
        m,
        n,
        k: 32,
        a_words: (m * 32 / 4 / THREADS) as usize,
        b_words: (n * 32 / 4 / THREADS) as usize,
        a_bits: 8,
        b_bits: 8,
        acc,
        tiles: (1, 1),
    }
}

impl Instr for Wgmma {
    /// 32 bytes of each tile row per instruction: 32 FP8 codes, or 16 f16 / bf16 values.
    fn shape(&self) -> Shape {
        let (m, n) = if self.swapped {
            (self.n, BM)
        } else {
            (BM, self.n)
        };
        let bits = (8 * 32 / self.k()) as u32;
        Shape {
            k: self.k(),
            a_bits: bits,
            b_bits: bits,
            ..smem_shape(m, n, self.accumulators())
        }
    }

    fn a_reg<'c, 'a>(
        &self,
        e: &Emitter<'c, 'a>,
        lane: Value<'c, 'a>,
        r: usize,
    ) -> (Value<'c, 'a>, Value<'c, 'a>) {
        copied_code(e, lane, r, self.k())
    }

    fn b_reg<'c, 'a>(
        &self,
        e: &Emitter<'c, 'a>,
        lane: Value<'c, 'a>,
        r: usize,
    ) -> (Value<'c, 'a>, Value<'c, 'a>) {
        copied_code(e, lane, r, self.k())
    }

    fn acc<'c, 'a>(
        &self,
        e: &Emitter<'c, 'a>,
        lane: Value<'c, 'a>,
        j: usize,
    ) -> (Value<'c, 'a>, Value<'c, 'a>) {
        let (row, col) = fragment(e, lane, j);
        if self.swapped {
            (col, row)
        } else {
            (row, col)
        }
    }

    /// Registers 2i and 2i + 1 of a thread: one row, columns 2q + 8i' and the next (the
    /// swapped layout has them in one column of C).
    fn column_run(&self) -> usize {
        if self.swapped {
            1
        } else {
            2
        }
    }

    /// Register j's row in the fragment depends on (j % 4) / 2 alone, its column on j / 4
    /// and j % 2 (`fragment`): a thread's 64 of m64n128 cover 2 rows and 32 columns (the
    /// swapped layout the other way round).
    fn acc_keys(&self, j: usize) -> (usize, usize) {
        let (row, col) = ((j % 4) / 2, (j / 4) * 2 + j % 2);
        if self.swapped {
            (col, row)
        } else {
            (row, col)
        }
    }
}

/// (row, column) of the instruction's D that register `j` of thread `lane` holds.
fn fragment<'c, 'a>(
    e: &Emitter<'c, 'a>,
    lane: Value<'c, 'a>,
    j: usize,
) -> (Value<'c, 'a>, Value<'c, 'a>) {
    let warp = e.divui(lane, e.index(32));
    let l = e.remui(lane, e.index(32));
    let (g, q) = (e.divui(l, e.index(4)), e.remui(l, e.index(4)));
    let row = e.addi(
        e.addi(e.muli(warp, e.index(16)), g),
        e.index(8 * ((j as i64 % 4) / 2)),
    );
    let col = e.addi(
        e.muli(q, e.index(2)),
        e.index(8 * (j as i64 / 4) + j as i64 % 2),
    );
    (row, col)
}

fn wgmma_type(f: ScaledFormat) -> &'static str {
    if f == ScaledFormat::F8E4M3 {
        "e4m3"
    } else {
        "e5m2"
    }
}

/// Byte offset of (row, k) of a tile in the shared-memory layout.
pub(super) fn smem_offset<'c, 'a>(
    e: &Emitter<'c, 'a>,
    row: Value<'c, 'a>,
    k: Value<'c, 'a>,
) -> Value<'c, 'a> {
    let (c8, c16) = (e.index(8), e.index(16));
    let group = e.muli(e.divui(row, c8), e.index(SBO));
    let half = e.muli(e.divui(k, c16), e.index(LBO));
    let inner = e.addi(e.muli(e.remui(row, c8), c16), e.remui(k, c16));
    e.addi(e.addi(group, half), inner)
}

/// The shared-memory byte address of a workgroup buffer, as an `i64`.
pub(super) fn smem_address<'c, 'a>(e: &Emitter<'c, 'a>, buffer: Value<'c, 'a>) -> Value<'c, 'a> {
    let p = e.val(
        OperationBuilder::new("memref.extract_aligned_pointer_as_index", e.loc())
            .add_operands(&[buffer])
            .add_results(&[e.index_type()])
            .build()
            .expect("valid memref.extract_aligned_pointer_as_index"),
    );
    e.index_castui(p, e.int_type(64))
}

/// The matrix descriptor of a tile at shared-memory byte address `base` (an `i64`): start
/// address, leading and stride byte offsets (each >> 4, 14 bits), no swizzle.
fn descriptor<'c, 'a>(e: &Emitter<'c, 'a>, base: Value<'c, 'a>) -> Value<'c, 'a> {
    let field = |v: i64, at: i64| e.int(64, ((v >> 4) & 0x3FFF) << at);
    let start = e.shrui(e.andi(base, e.int(64, 0x3FFFF)), e.int(64, 4));
    e.ori(e.ori(start, field(LBO, 16)), field(SBO, 32))
}

/// A thread's loads for the K step at `kk`, in the order the kernels' loops carry them:
/// its words of A's tile, of B's and, where the block scales are staged, its two scale
/// codes (`StagedScales::codes`).
pub(super) fn step_loads<'c, 'a>(
    e: &Emitter<'c, 'a>,
    kn: &Kernel<'_, 'c, 'a>,
    l: &Lane<'c, 'a>,
    kk: Value<'c, 'a>,
    staging: Option<StagedScales>,
) -> Vec<Value<'c, 'a>> {
    let (mut loads, b) = kn.fragments(e, l, kk);
    loads.extend(b);
    if let Some(st) = staging {
        loads.extend(st.codes(e, kn, l, kk));
    }
    loads
}

/// Store a thread's `step_loads` into the shared-memory tiles and, where the block scales
/// are staged (`staged`: how, and the buffer), its decoded scales into their buffer.
pub(super) fn store_step<'c, 'a>(
    e: &Emitter<'c, 'a>,
    kn: &Kernel<'_, 'c, 'a>,
    l: &Lane<'c, 'a>,
    loads: &[Value<'c, 'a>],
    smem: [Value<'c, 'a>; 2],
    staged: Option<(StagedScales, Value<'c, 'a>)>,
) {
    let s = kn.shape();
    let (na, nb) = (s.tiles.0 * s.a_words, s.tiles.1 * s.b_words);
    store_tiles(e, l, &loads[..na], &loads[na..na + nb], smem);
    if let Some((st, buffer)) = staged {
        st.store(e, kn, l.lane, &loads[na + nb..], buffer);
    }
}

/// Store a thread's words of both tiles (loaded by [`Kernel::fragments`]) into the
/// shared-memory buffers.
fn store_tiles<'c, 'a>(
    e: &Emitter<'c, 'a>,
    l: &Lane<'c, 'a>,
    a: &[Value<'c, 'a>],
    b: &[Value<'c, 'a>],
    smem: [Value<'c, 'a>; 2],
) {
    for (words, buffer) in [(a, smem[0]), (b, smem[1])] {
        for (r, &w) in words.iter().enumerate() {
            let (row, k0) = copied_word(e, l.lane, r);
            let at = e.divui(smem_offset(e, row, k0), e.index(4));
            e.store(w, buffer, &[at]);
        }
    }
}

fn struct_type<'c>(e: &Emitter<'c, '_>, instr: &Wgmma) -> Type<'c> {
    let fields = vec!["f32"; instr.accumulators()].join(", ");
    Type::parse(e.ctx(), &format!("!llvm.struct<({fields})>")).expect("valid struct type")
}

/// The instruction's accumulator struct holding `part` (`llvm.mlir.undef` when empty: an
/// instruction that does not read D).
pub(super) fn pack<'c, 'a>(
    e: &Emitter<'c, 'a>,
    instr: &Wgmma,
    part: &[Value<'c, 'a>],
) -> Value<'c, 'a> {
    let ctx = e.ctx();
    let st = struct_type(e, instr);
    let mut acc = e.val(
        OperationBuilder::new("llvm.mlir.undef", e.loc())
            .add_results(&[st])
            .build()
            .expect("valid llvm.mlir.undef"),
    );
    for (i, &v) in part.iter().enumerate() {
        acc = e.val(
            OperationBuilder::new("llvm.insertvalue", e.loc())
                .add_operands(&[acc, v])
                .add_attributes(&[(
                    Identifier::new(ctx, "position"),
                    melior::ir::attribute::DenseI64ArrayAttribute::new(ctx, &[i as i64]).into(),
                )])
                .add_results(&[st])
                .build()
                .expect("valid llvm.insertvalue"),
        );
    }
    acc
}

/// The accumulators of an instruction's result struct.
pub(super) fn unpack<'c, 'a>(
    e: &Emitter<'c, 'a>,
    instr: &Wgmma,
    d: Value<'c, 'a>,
) -> Vec<Value<'c, 'a>> {
    (0..instr.accumulators() as i64)
        .map(|i| e.extract_value(d, i, e.f32_type()))
        .collect()
}

/// `nvvm.wgmma.mma_async` on the descriptors: `d + A B` (`accumulate`, scale-d 1) or `A B`
/// (scale-d 0: `d` is not read).
pub(super) fn mma_async<'c, 'a>(
    e: &Emitter<'c, 'a>,
    instr: &Wgmma,
    d: Value<'c, 'a>,
    da: Value<'c, 'a>,
    db: Value<'c, 'a>,
    accumulate: bool,
) -> Value<'c, 'a> {
    let ctx = e.ctx();
    let attr = |s: &str| Attribute::parse(ctx, s).expect("valid wgmma attribute");
    let scale_d = if accumulate { "one" } else { "zero" };
    let (ta, tb) = instr.types();
    let (ta, tb, k) = if instr.f16 {
        (instr.half.name(), instr.half.name(), 16)
    } else {
        (wgmma_type(ta), wgmma_type(tb), 32)
    };
    let attrs = [
        ("layoutA", "#nvvm.mma_layout<row>".to_string()),
        ("layoutB", "#nvvm.mma_layout<col>".to_string()),
        ("scaleA", "#nvvm.wgmma_scale_in<one>".to_string()),
        ("scaleB", "#nvvm.wgmma_scale_in<one>".to_string()),
        ("scaleD", format!("#nvvm.wgmma_scale_out<{scale_d}>")),
        (
            "shape",
            format!("#nvvm.shape<m = {BM}, n = {}, k = {k}>", instr.n),
        ),
        ("typeA", format!("#nvvm.wgmma_type<{ta}>")),
        ("typeB", format!("#nvvm.wgmma_type<{tb}>")),
        ("typeD", "#nvvm.wgmma_type<f32>".to_string()),
    ];
    let attrs: Vec<_> = attrs
        .iter()
        .map(|(n, v)| (Identifier::new(ctx, n), attr(v)))
        .collect();
    e.val(
        OperationBuilder::new("nvvm.wgmma.mma_async", e.loc())
            .add_operands(&[d, da, db])
            .add_attributes(&attrs)
            .add_results(&[struct_type(e, instr)])
            .build()
            .expect("valid nvvm.wgmma.mma_async"),
    )
}

/// `wgmma.mma_async` with its A from registers (`a`: the thread's 4 words of FP8 codes,
/// the fragment `a_owner` inverts) and its B on the descriptor `db`: `d + A B`
/// (`accumulate`, scale-d 1) or `A B` (scale-d 0, `d` not read). Inline assembly, as MLIR's
/// `nvvm.wgmma.mma_async` lowers itself: that op takes A on a descriptor only, and LLVM 22
/// has no intrinsic for the instruction. Its outputs are the accumulators, so what reads
/// them reads them through the wait (`wait`), as for the descriptor form.
pub(super) fn mma_async_registers<'c, 'a>(
    e: &Emitter<'c, 'a>,
    instr: &Wgmma,
    d: &[Value<'c, 'a>],
    a: [Value<'c, 'a>; 4],
    db: Value<'c, 'a>,
    accumulate: bool,
) -> Value<'c, 'a> {
    debug_assert!(!instr.f16 && instr.swapped);
    let n = instr.accumulators();
    let (ta, tb) = instr.types();
    let list = |from: usize, count: usize| {
        (from..from + count)
            .map(|i| format!("${i}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    // Operands: the accumulators' outputs, then (accumulating) their tied inputs, the A
    // words and the descriptor.
    let first = if accumulate { 2 * n } else { n };
    let text = format!(
        "wgmma.mma_async.sync.aligned.m64n{}k32.f32.{}.{} {{{}}}, {{{}}}, ${}, {}, 1, 1;",
        instr.n,
        wgmma_type(ta),
        wgmma_type(tb),
        list(0, n),
        list(first, 4),
        first + 4,
        accumulate as u8
    );
    let mut constraints: Vec<String> = vec!["=f".to_string(); n];
    let mut operands = vec![];
    if accumulate {
        constraints.extend((0..n).map(|i| i.to_string()));
        operands.extend_from_slice(d);
    }
    constraints.extend(["r", "r", "r", "r", "l"].map(String::from));
    operands.extend_from_slice(&a);
    operands.push(db);
    e.inline_asm(
        &text,
        &operands,
        &constraints.join(","),
        struct_type(e, instr),
        true,
    )
}

/// The inverse of the A fragment of `wgmma .m64nNk32` with 8-bit A in registers (PTX ISA,
/// the warpgroup's 64 rows as 4 warps' 16): thread `t` (`w = t / 32`, `g = (t % 32) / 4`,
/// `q = t % 4`) holds in register `i` the 4 codes of row `16 w + g + 8 (i % 2)` from K
/// `4 q + 16 (i / 2)`, the first in the low byte. (thread, register, byte) of A[row][k].
pub(super) fn a_owner<'c, 'a>(
    e: &Emitter<'c, 'a>,
    row: Value<'c, 'a>,
    k: Value<'c, 'a>,
) -> (Value<'c, 'a>, Value<'c, 'a>, Value<'c, 'a>) {
    let idx = |v| e.index(v);
    let (w, r) = (e.divui(row, idx(16)), e.remui(row, idx(16)));
    let (g, hi) = (e.remui(r, idx(8)), e.divui(r, idx(8)));
    let (h, kk) = (e.divui(k, idx(16)), e.remui(k, idx(16)));
    let thread = e.addi(
        e.addi(e.muli(w, idx(32)), e.muli(g, idx(4))),
        e.divui(kk, idx(4)),
    );
    let register = e.addi(e.muli(h, idx(2)), hi);
    (thread, register, e.remui(kk, idx(4)))
}

/// `fence.proxy.async.shared::cta`: this thread's generic-proxy writes to shared memory
/// (stores, and cp.async copies it waited for) made visible to the async proxy, through
/// which wgmma and tcgen05.mma read their tiles.
pub(super) fn fence_proxy_async(e: &Emitter<'_, '_>) {
    e.bare(
        "nvvm.fence.proxy",
        &[
            ("kind", "#nvvm.proxy_kind<async.shared>"),
            ("space", "#nvvm.shared_space<cta>"),
        ],
    );
}

/// `wgmma.wait_group pending` (at most `pending` groups still running), as inline assembly
/// that takes the accumulators of `d` (an instruction's result) and gives them back: what
/// reads the result reads the wait's, so no compiler moves it above the wait (the
/// instruction's registers are written asynchronously; `nvvm.wgmma.wait.group.sync.aligned`
/// has no operands to order them by).
pub(super) fn wait<'c, 'a>(
    e: &Emitter<'c, 'a>,
    instr: &Wgmma,
    pending: i64,
    d: Value<'c, 'a>,
) -> Value<'c, 'a> {
    let words = unpack(e, instr, d);
    let kinds = vec!["=f"; words.len()];
    tied_asm(
        e,
        &format!("wgmma.wait_group.sync.aligned {pending};"),
        &words,
        &kinds,
        struct_type(e, instr),
    )
}

/// `wgmma.wait_group 0` taking every accumulator of `parts` (instructions' results, each
/// a list of f32) and giving them back, as `wait` does for one; also the instructions'
/// register A operands (`held`, `i32`), as CUTLASS fences a register operand: they stay
/// live (in their registers) until the wait, so that values computed for the next
/// instructions while these run get registers of their own (else LLVM puts them in the
/// registers of the ones in flight, and ptxas serializes every `wgmma`: C7513).
pub(super) fn wait_all<'c, 'a>(
    e: &Emitter<'c, 'a>,
    parts: &[Vec<Value<'c, 'a>>],
    held: &[Value<'c, 'a>],
) -> Vec<Vec<Value<'c, 'a>>> {
    let mut words: Vec<Value> = parts.iter().flatten().copied().collect();
    let accumulators = words.len();
    words.extend(held);
    let mut kinds = vec!["=f"; accumulators];
    kinds.extend(vec!["=r"; held.len()]);
    let mut fields = vec!["f32"; accumulators];
    fields.extend(vec!["i32"; held.len()]);
    let fields = fields.join(", ");
    let ty = Type::parse(e.ctx(), &format!("!llvm.struct<({fields})>")).expect("valid struct");
    let tied = tied_asm(e, "wgmma.wait_group.sync.aligned 0;", &words, &kinds, ty);
    let mut at = 0;
    parts
        .iter()
        .map(|p| {
            let out = (at..at + p.len())
                .map(|i| e.extract_value(tied, i as i64, e.f32_type()))
                .collect();
            at += p.len();
            out
        })
        .collect()
}

/// Inline assembly `text` with side effects (kept in order with the other such assembly)
/// that takes `operands` and gives them back (outputs of `kinds`, `=f` / `=r`, each tied
/// to its operand) as a struct of type `result`.
fn tied_asm<'c, 'a>(
    e: &Emitter<'c, 'a>,
    text: &str,
    operands: &[Value<'c, 'a>],
    kinds: &[&str],
    result: Type<'c>,
) -> Value<'c, 'a> {
    let constraints: Vec<String> = kinds
        .iter()
        .map(|k| k.to_string())
        .chain((0..operands.len()).map(|i| i.to_string()))
        .collect();
    e.inline_asm(text, operands, &constraints.join(","), result, true)
}

/// `values` (i8 / i32 / f32 scalars) through an empty inline assembly with side effects,
/// which gives them back (bytes as `i32`): what they are computed from (loads) is done
/// before it, as the asm stays in order with the wait after it, and no compiler sinks
/// those loads past the wait to where the values are used.
pub(super) fn pinned<'c, 'a>(e: &Emitter<'c, 'a>, values: &[Value<'c, 'a>]) -> Vec<Value<'c, 'a>> {
    if values.is_empty() {
        return vec![];
    }
    let (i32t, f32t) = (e.int_type(32), e.f32_type());
    let words: Vec<Value> = values
        .iter()
        .map(|&v| {
            if v.r#type() == f32t || v.r#type() == i32t {
                v
            } else {
                e.extui(v, i32t)
            }
        })
        .collect();
    let kinds: Vec<&str> = words
        .iter()
        .map(|w| if w.r#type() == f32t { "=f" } else { "=r" })
        .collect();
    let types: Vec<Type> = words.iter().map(|w| w.r#type()).collect();
    let names: Vec<String> = types.iter().map(|t| t.to_string()).collect();
    let result = Type::parse(e.ctx(), &format!("!llvm.struct<({})>", names.join(", ")))
        .expect("valid struct type");
    let pinned = tied_asm(e, "", &words, &kinds, result);
    (0..words.len())
        .map(|i| e.extract_value(pinned, i as i64, types[i]))
        .collect()
}

/// `wgmma.commit_group`, `meanwhile` (emitted while the group runs), then the wait for it
/// (`wait`: `d`'s accumulators through it).
pub(super) fn commit_and_wait<'c, 'a, T>(
    e: &Emitter<'c, 'a>,
    instr: &Wgmma,
    d: Value<'c, 'a>,
    meanwhile: impl FnOnce() -> T,
) -> (Value<'c, 'a>, T) {
    e.bare("nvvm.wgmma.commit.group.sync.aligned", &[]);
    let other = meanwhile();
    (wait(e, instr, 0, d), other)
}

/// `nvvm.wgmma.mma_async` on the descriptors, accumulating into `part`, and its commit;
/// `meanwhile` is emitted while the instruction runs (before the wait).
fn emit_wgmma<'c, 'a, T>(
    e: &Emitter<'c, 'a>,
    instr: &Wgmma,
    da: Value<'c, 'a>,
    db: Value<'c, 'a>,
    part: &[Value<'c, 'a>],
    meanwhile: impl FnOnce() -> T,
) -> (Vec<Value<'c, 'a>>, T) {
    let d = mma_async(e, instr, pack(e, instr, part), da, db, true);
    let (d, other) = commit_and_wait(e, instr, d, meanwhile);
    (unpack(e, instr, d), other)
}

/// The flat K loop's segment bookkeeping for `kn`'s plan (see
/// `matrix_kernel::segment_end`).
pub(super) fn segment_end<'c, 'a>(
    e: &Emitter<'c, 'a>,
    kn: &Kernel<'_, 'c, 'a>,
    kk: Value<'c, 'a>,
) -> (Value<'c, 'a>, Value<'c, 'a>) {
    crate::matrix_kernel::segment_end(e, kk, kn.plan.step, Some(kn.plan.span), kn.ops.k)
}

/// A block's scales staged in shared memory for its promotions (the register-staged
/// wgmma and tcgen05 kernels): per K step every thread loads two scales a step ahead
/// (`codes`: B's column `col0 + tid % cols`, A's row `row0 + tid % rows`), decodes them and
/// stores them (`store`) into `rows + cols` f32 words (A's rows of the tile, then B's
/// columns); a promotion reads its rows' and columns' values from there (`promote`).
#[derive(Clone, Copy)]
pub(super) struct StagedScales {
    /// The tile's rows of A and columns of B (each at most the block's threads).
    pub(super) tile: [i64; 2],
}

impl StagedScales {
    /// Where `plan`'s promotions apply block scales that change along K (else none).
    pub(super) fn of(plan: &Plan, tile: [i64; 2]) -> Option<Self> {
        (plan.seg.is_some() && !plan.scaled && !plan.in_codes).then_some(StagedScales { tile })
    }

    /// f32 words of the buffer.
    pub(super) fn words(self) -> i64 {
        self.tile[0] + self.tile[1]
    }

    /// The buffer's workgroup memref type.
    pub(super) fn memref_type<'c>(self, e: &Emitter<'c, '_>) -> Type<'c> {
        Type::parse(
            e.ctx(),
            &format!(
                "memref<{}xf32, #gpu.address_space<workgroup>>",
                self.words()
            ),
        )
        .expect("valid workgroup memref type")
    }

    /// Thread `tid`'s scales, as stored, for the K step at `kk` (one scale block: a
    /// segment never crosses one): A's row and B's column (`StagedScales`), rows and
    /// columns past C the last ones, K past its end the last block.
    pub(super) fn codes<'c, 'a>(
        self,
        e: &Emitter<'c, 'a>,
        kn: &Kernel<'_, 'c, 'a>,
        l: &Lane<'c, 'a>,
        kk: Value<'c, 'a>,
    ) -> Vec<Value<'c, 'a>> {
        let one = e.index(1);
        let k = e.minui(kk, e.subi(kn.ops.k, one));
        let row = e.addi(l.row0, e.remui(l.lane, e.index(self.tile[0])));
        let col = e.addi(l.col0, e.remui(l.lane, e.index(self.tile[1])));
        vec![
            kn.ops
                .sa
                .block_stored(e, e.minui(row, e.subi(kn.ops.m, one)), k),
            kn.ops
                .sb
                .block_stored(e, e.minui(col, e.subi(kn.ops.n, one)), k),
        ]
    }

    /// Store thread `tid`'s scales (`codes`), decoded, into `buffer` (threads whose
    /// `tid` agree modulo the rows (columns) store the same value).
    pub(super) fn store<'c, 'a>(
        self,
        e: &Emitter<'c, 'a>,
        kn: &Kernel<'_, 'c, 'a>,
        lane: Value<'c, 'a>,
        codes: &[Value<'c, 'a>],
        buffer: Value<'c, 'a>,
    ) {
        let a = kn.ops.sa.decode_stored(e, codes[0]);
        let b = kn.ops.sb.decode_stored(e, codes[1]);
        let [rows, cols] = self.tile;
        e.store(a, buffer, &[e.remui(lane, e.index(rows))]);
        let col = e.remui(lane, e.index(cols));
        e.store(b, buffer, &[e.addi(e.index(rows), col)]);
    }

    /// The readers of `buffer` for a promotion: the f32 scale of a row of C (A) or of `n`
    /// adjacent columns (B), at its place in the tile.
    fn readers<'c, 'a, 'b>(self, buffer: Value<'c, 'a>) -> [Option<ScaleReader<'c, 'a, 'b>>; 2]
    where
        'c: 'b,
        'a: 'b,
    {
        let [rows, cols] = self.tile;
        [(0, rows), (rows, cols)].map(|(base, size)| {
            Some(
                Box::new(move |e: &Emitter<'c, 'a>, at: Value<'c, 'a>, n: usize| {
                    let local = e.addi(e.index(base), e.remui(at, e.index(size)));
                    (0..n as i64)
                        .map(|d| e.load(buffer, &[e.addi(local, e.index(d))]))
                        .collect()
                }) as ScaleReader<'c, 'a, 'b>,
            )
        })
    }
}

/// `acc + part * (sa * sb)` for a segment that ends at this step: the scales read from the
/// staged ones where the kernel stages them (`staged`: how, and the buffer), else loaded
/// by the promotion.
pub(super) fn promote<'c, 'a>(
    e: &Emitter<'c, 'a>,
    kn: &Kernel<'_, 'c, 'a>,
    l: &Lane<'c, 'a>,
    k0: Value<'c, 'a>,
    acc: &[Value<'c, 'a>],
    part: &[Value<'c, 'a>],
    staged: Option<(StagedScales, Value<'c, 'a>)>,
) -> Vec<Value<'c, 'a>> {
    match staged {
        Some((st, buffer)) => {
            let scales = kn.segment_scales(e, l, k0, acc.len(), &st.readers(buffer), None);
            kn.promote_loaded(e, acc, part, &scales)
        }
        None => kn.promote(e, l, k0, acc, part),
    }
}

/// Lower `op` with the wgmma kernel: a `gpu.launch` (`emulate = false`) or its CPU
/// emulation.
pub(super) fn lower<'c, 'a>(
    e: &Emitter<'c, 'a>,
    op: OperationRef<'c, 'a>,
    plan: &Plan,
    instr: &Wgmma,
    emulate: bool,
) -> Result<(), PassError> {
    let kn = (Kernel::new(e, op, plan, instr)?)
        .with_permute(Permute::nvidia(emulate))
        .with_block(BM, BN);
    let one = e.index(1);
    let grid = kn.grid(e, BM, BN);
    if emulate {
        kn.blocks(e, grid, |e, bm, bn| emulated_block(e, &kn, instr, bm, bn));
        return Ok(());
    }
    let smem_type = |words: i64| {
        Type::parse(
            e.ctx(),
            &format!("memref<{words}xi32, #gpu.address_space<workgroup>>"),
        )
        .expect("valid workgroup memref type")
    };
    let staging = StagedScales::of(plan, [BM, BN]);
    let mut workgroup = vec![smem_type(A_WORDS), smem_type(B_WORDS)];
    workgroup.extend(staging.map(|st| st.memref_type(e)));
    e.gpu_launch(
        [grid[0], grid[1], one],
        [e.index(THREADS), one, one],
        &workgroup,
        |e, bid, tid, smem| {
            let l = Lane {
                lane: tid[0],
                row0: e.muli(bid[1], e.index(BM)),
                col0: e.muli(bid[0], e.index(BN)),
            };
            let base = |buffer| descriptor(e, smem_address(e, buffer));
            let (da, db) = (base(smem[0]), base(smem[1]));
            // One loop over K: each step's wgmma runs while the next step's codes are
            // loaded into registers; at the end of a segment the partial sums are added to
            // the accumulators with the segment's scales.
            let zero = e.index(0);
            let step = e.index(plan.step);
            let staged = staging.map(|st| (st, smem[2]));
            // A step's loads (`step_loads`) come a step ahead.
            let mut inits = vec![e.f32(0.0); 2 * ACC];
            inits.extend(step_loads(e, &kn, &l, zero, staging));
            let f32t = e.f32_type();
            let done = e.for_loop(zero, kn.ops.k, step, &inits, |e, kk, carried| {
                let (acc, part, words) =
                    (&carried[..ACC], &carried[ACC..2 * ACC], &carried[2 * ACC..]);
                // Every thread is past the previous instruction's wait (and promotion)
                // before the tiles and the staged scales are overwritten.
                e.bare("gpu.barrier", &[]);
                store_step(e, &kn, &l, words, [smem[0], smem[1]], staged);
                fence_proxy_async(e);
                e.bare("gpu.barrier", &[]);
                e.bare("nvvm.wgmma.fence.aligned", &[]);
                let (d, loaded) = emit_wgmma(e, instr, da, db, part, || {
                    step_loads(e, &kn, &l, e.addi(kk, step), staging)
                });
                let (end, k0) = segment_end(e, &kn, kk);
                let mut out = e.if_else(
                    end,
                    &vec![f32t; 2 * ACC],
                    |e| {
                        let mut v = promote(e, &kn, &l, k0, acc, &d, staged);
                        v.extend(vec![e.f32(0.0); ACC]);
                        v
                    },
                    |_| [acc, &d[..]].concat(),
                );
                out.extend(loaded);
                out
            });
            let acc = done[..ACC].to_vec();
            kn.epilogue(e, &l, &acc);
        },
    );
    Ok(())
}

/// One block on the CPU: the copies of all 128 threads into a buffer standing for shared
/// memory, then [`emulated_wgmma`], per K step; accumulators in memory.
fn emulated_block<'c, 'a>(
    e: &Emitter<'c, 'a>,
    kn: &Kernel<'_, 'c, 'a>,
    instr: &Wgmma,
    bm: Value<'c, 'a>,
    bn: Value<'c, 'a>,
) {
    let (zero, one) = (e.index(0), e.index(1));
    let (f32t, i32t) = (e.f32_type(), e.int_type(32));
    let smem = [e.alloca(i32t, A_WORDS), e.alloca(i32t, B_WORDS)];
    let staged = StagedScales::of(kn.plan, [BM, BN]).map(|st| (st, e.alloca(f32t, st.words())));
    let acc_m = e.alloca(f32t, THREADS * ACC as i64);
    let part_m = e.alloca(f32t, THREADS * ACC as i64);
    let at = |e: &Emitter<'c, 'a>, t: Value<'c, 'a>, x: usize| {
        e.addi(e.muli(t, e.index(ACC as i64)), e.index(x as i64))
    };
    let lane = |e: &Emitter<'c, 'a>, t| Lane {
        lane: t,
        row0: e.muli(bm, e.index(BM)),
        col0: e.muli(bn, e.index(BN)),
    };
    let threads = |e: &Emitter<'c, 'a>, body: &dyn Fn(&Emitter<'c, 'a>, Value<'c, 'a>)| {
        e.for_loop(zero, e.index(THREADS), one, &[], |e, t, _| {
            body(e, t);
            vec![]
        });
    };
    let clear = |e: &Emitter<'c, 'a>, mem| {
        threads(e, &|e, t| {
            for x in 0..ACC {
                e.store(e.f32(0.0), mem, &[at(e, t, x)]);
            }
        })
    };
    // Descriptors of the buffers at offset 0.
    let da = descriptor(e, e.int(64, 0));
    let db = descriptor(e, e.int(64, 0));
    clear(e, acc_m);
    clear(e, part_m);
    // The same flat K loop as on the GPU, its phases one after the other.
    e.for_loop(zero, kn.ops.k, e.index(kn.plan.step), &[], |e, kk, _| {
        threads(e, &|e, t| {
            let l = lane(e, t);
            let loads = step_loads(e, kn, &l, kk, staged.map(|(st, _)| st));
            store_step(e, kn, &l, &loads, smem, staged);
        });
        emulated_wgmma(e, instr, [da, db], smem, part_m);
        let (end, k0) = segment_end(e, kn, kk);
        e.if_then(end, |e| {
            threads(e, &|e, t| {
                let l = lane(e, t);
                let acc: Vec<Value> = (0..ACC).map(|x| e.load(acc_m, &[at(e, t, x)])).collect();
                let part: Vec<Value> = (0..ACC).map(|x| e.load(part_m, &[at(e, t, x)])).collect();
                let promoted = promote(e, kn, &l, k0, &acc, &part, staged);
                for (x, v) in promoted.into_iter().enumerate() {
                    e.store(v, acc_m, &[at(e, t, x)]);
                }
            });
            clear(e, part_m);
        });
        vec![]
    });
    threads(e, &|e, t| {
        let l = lane(e, t);
        let acc: Vec<Value> = (0..ACC).map(|x| e.load(acc_m, &[at(e, t, x)])).collect();
        kn.epilogue(e, &l, &acc);
    });
}

/// The instruction as the PTX ISA defines it, on the buffers: D[row][col] += sum over K of
/// A[row][k] * B[col][k] (the instruction's A and B: the op's B and A when `swapped`), each
/// code read at the address the operand's descriptor gives, D in each thread's registers
/// (`part_m`, `n / 2` per thread).
/// Without swizzle (layout type 0): start + 8-row group * stride offset + K half * leading
/// offset + (row % 8) * 16 + k % 16. With the 128-byte swizzle (layout type 1, K-major: rows
/// of 128 bytes, 8-row atoms of 1024 bytes at the stride offset, the leading offset unused):
/// the address start + 8-row group * stride offset + (row % 8) * 128 + k, its 16-byte chunk
/// (bits 4-6) XORed with its 128-byte line within the atom (bits 7-9).
pub(super) fn emulated_wgmma<'c, 'a>(
    e: &Emitter<'c, 'a>,
    instr: &Wgmma,
    desc: [Value<'c, 'a>; 2],
    smem: [Value<'c, 'a>; 2],
    part_m: Value<'c, 'a>,
) {
    emulated_wgmma_from(e, instr, desc, smem, None, part_m)
}

/// `emulated_wgmma`, A from the threads' registers where `registers` (an `i32` buffer of
/// 4 words per thread, `a_owner`'s fragment) is given (its descriptor then unused).
pub(super) fn emulated_wgmma_from<'c, 'a>(
    e: &Emitter<'c, 'a>,
    instr: &Wgmma,
    desc: [Value<'c, 'a>; 2],
    smem: [Value<'c, 'a>; 2],
    registers: Option<Value<'c, 'a>>,
    part_m: Value<'c, 'a>,
) {
    let (zero, one) = (e.index(0), e.index(1));
    let index = e.index_type();
    let field = |d: Value<'c, 'a>, at: i64| {
        let f = e.andi(e.shrui(d, e.int(64, at)), e.int(64, 0x3FFF));
        e.index_castui(e.shli(f, e.int(64, 4)), index)
    };
    let swizzled = |d: Value<'c, 'a>| {
        let layout = e.andi(e.shrui(d, e.int(64, 62)), e.int(64, 3));
        e.cmpi(CmpiPredicate::Eq, layout, e.int(64, 1))
    };
    let decoded: Vec<([Value; 3], Value)> = desc
        .iter()
        .map(|&d| ([field(d, 0), field(d, 16), field(d, 32)], swizzled(d)))
        .collect();
    let code = |e: &Emitter<'c, 'a>, which: usize, rc: Value<'c, 'a>, k: Value<'c, 'a>| {
        if let (Some(registers), 0) = (registers, which) {
            let (t, r, byte) = a_owner(e, rc, k);
            let word = e.load(registers, &[e.addi(e.muli(t, e.index(4)), r)]);
            let shift = e.index_castui(e.muli(byte, e.index(8)), e.int_type(32));
            return e.andi(e.shrui(word, shift), e.i32(0xFF));
        }
        let ([start, lbo, sbo], swizzle) = decoded[which];
        let (c8, c16) = (e.index(8), e.index(16));
        let atom = e.addi(start, e.muli(e.divui(rc, c8), sbo));
        let plain = e.addi(
            atom,
            e.addi(
                e.muli(e.divui(k, c16), lbo),
                e.addi(e.muli(e.remui(rc, c8), c16), e.remui(k, c16)),
            ),
        );
        let line = e.addi(atom, e.addi(e.muli(e.remui(rc, c8), e.index(128)), k));
        let chunk_xor = e.muli(e.remui(e.divui(line, e.index(128)), c8), c16);
        let addr = e.select(swizzle, e.xori(line, chunk_xor), plain);
        let word = e.load(smem[which], &[e.divui(addr, e.index(4))]);
        let shift = e.index_castui(e.muli(e.remui(addr, e.index(4)), c8), e.int_type(32));
        let mask = if instr.f16 { 0xFFFF } else { 0xFF };
        e.andi(e.shrui(word, shift), e.i32(mask))
    };
    // Element k of a row: an FP8 code at byte k, or a 16-bit float at bytes 2k, 2k + 1.
    let (ta, tb) = instr.types();
    let value = |e: &Emitter<'c, 'a>, which: usize, ty, rc, k: Value<'c, 'a>| {
        if !instr.f16 {
            return codes::decode(e, ty, code(e, which, rc, k));
        }
        let bits = code(e, which, rc, e.muli(k, e.index(2)));
        match instr.half {
            Half::F16 => {
                let bits = e.trunci(bits, e.int_type(16));
                e.extf(e.bitcast(bits, e.f16_type()), e.f32_type())
            }
            Half::Bf16 => codes::bf16_value(e, bits),
        }
    };
    let acc = instr.accumulators() as i64;
    e.for_loop(zero, e.index(THREADS), one, &[], |e, t, _| {
        for j in 0..acc as usize {
            let (row, col) = fragment(e, t, j);
            let sum = e.for_loop(zero, e.index(instr.k()), one, &[e.f32(0.0)], |e, k, s| {
                let x = value(e, 0, ta, row, k);
                let y = value(e, 1, tb, col, k);
                vec![e.addf(s[0], e.mulf(x, y))]
            })[0];
            let at = e.addi(e.muli(t, e.index(acc)), e.index(j as i64));
            e.store(e.addf(e.load(part_m, &[at]), sum), part_m, &[at]);
        }
        vec![]
    });
}
