//! The FP8 `tcgen05.mma` kernel of `lowp-to-nvvm` (sm_100a), on the pieces the wgmma kernel
//! uses (the copies into K-major unswizzled shared memory, the flat K loop with register
//! prefetch, segments and scales, the epilogue).
//!
//! A block is one CTA of 128 threads computing 128 x 64 of C with
//! `tcgen05.mma.cta_group::1.kind::f8f6f4` (M 128, N 64, K 32): A and B in shared memory
//! behind tcgen05 matrix descriptors, the accumulator D in tensor memory (64 columns,
//! allocated by warp 0, `tcgen05.alloc`). Per K step: barrier, the threads' words into
//! shared memory, `fence.proxy.async`, barrier, thread 0 issues the MMA (`enable_input_d`
//! off on a segment's first step) and commits it to an mbarrier, every thread loads the
//! next step's words, waits on the mbarrier's phase and fences (`tcgen05.fence
//! after_thread_sync`; every barrier that orders tensor-memory accesses between threads
//! sits between `before_thread_sync` and `after_thread_sync` fences); at a segment's end each warp reads its 32 rows of D
//! (`tcgen05.ld.32x32b.x64`: thread t holds row t) and adds them to its accumulators with
//! the segment's scales. Block scales along K on D's sums (blockwise, MX other than both
//! operands' 32-blocks, `kind::f16`'s) are staged as the wgmma kernel stages them
//! (`wgmma::StagedScales`): thread t loads A's row t's and B's column t % 64's scale a
//! step ahead, decodes them into shared memory, and a promotion reads its row's and 64
//! columns' values from there.
//!
//! Both operands MX with 32-blocks: `tcgen05.mma.cta_group::1.kind::mxf8f6f4.block_scale`
//! (E2M1 x E2M1: `kind::mxf4.block_scale`, packed E2M1 in shared memory, K 64 per MMA, two
//! scale bytes per step: scale ids 0 and 2), the MMA applying the E8M0 scales from tensor
//! memory (128 columns allocated: D at 0-63, A's scale factors at 64-67, B's at 68-69). Every 4 K steps each warp stores the next 4
//! steps' scale words into its 32 lanes with `tcgen05.st.32x32b` (A: column c holds row
//! `32c + lane`; B: column c holds column `32c + lane` of the tile; byte j the scale of K
//! step j, 1.0 past the matrix), the same words in every lane quadrant, and waits for the
//! stores (`tcgen05.wait::st`) before the barrier; each MMA selects byte j through the scale
//! ids of its instruction descriptor (B: bits 4-5, A: bits 29-30; UE8M0 in bit 23, no D
//! type field). D's partial sums still go into the accumulators every 128 of K (no scales
//! left to apply). This layout follows CUTLASS's scale-factor chunk (row m of a 128-row
//! tile at lane m % 32, word m / 32, one byte per K block) as copied by
//! `tcgen05.cp.32x128b.warpx4`; it is not verified on a Blackwell GPU.
//!
//! Both operands NVFP4 E2M1 (UE4M3 16-blocks, globals or not):
//! `kind::mxf4nvf4.block_scale.block16` (scale_vec 4X: the 4 UE4M3 scales of a 64-code
//! step fill a word, ids 0; per 128 of K A's scale words take 8 columns, B's 4, and each
//! MMA's scale addresses move to its step's words; scale type UE4M3 with bit 23 clear).
//! LLVM 22 emits `.block16` only for PTX ISA 8.8, hence `+ptx88` for sm_100a. The per-tensor
//! globals multiply the result in the epilogue.
//!
//! Formats no FP8 type holds (`Plan::half`: E3M4, E2M5, the FNUZ formats, 6- and 7-bit
//! exponents, and what is beside them): `kind::f16` with f16 or bf16 operands (types 0 /
//! 1 in the descriptor's A and B fields), the half patterns of the codes' fields written
//! into the same tiles (32 bytes of each row: 16 values), K 16 per MMA, scales on D's
//! sums as for `kind::f8f6f4`, the patterns' powers of two undone with them. ptxas makes
//! it a `UTCHMMA`.
//!
//! Instruction descriptor (PTX ISA, `.kind::f8f6f4`; block-scaled above): D type F32 (bits 4-5 = 1), A and B
//! types (bits 7-9, 10-12: E4M3 0, E5M2 1), K-major A and B (bits 15, 16 = 0), N >> 3 (bits
//! 17-22), M >> 4 (bits 24-28). Shared-memory descriptor: start address >> 4 (bits 0-13),
//! leading and stride byte offsets >> 4 (16-29, 32-45), the fixed 0b001 (46-48), no
//! swizzle. The emulation (`emulate=true`) computes each MMA from these two descriptors
//! (types and sizes from the instruction descriptor, code addresses from the shared-memory
//! ones) into a buffer standing for tensor memory.

use lowp_formats::{Half, ScaleLayout, ScaledFormat};
use melior::dialect::arith::CmpiPredicate;
use melior::ir::operation::OperationBuilder;
use melior::ir::{Attribute, Identifier, OperationRef, Type, Value};

use super::wgmma::{
    copied_code, fence_proxy_async, promote, segment_end, smem_address, smem_shape, step_loads,
    store_step, StagedScales, LBO, SBO, THREADS,
};
use crate::code_words::Permute;
use crate::codes;
use crate::expand_quantize::{ceil_div, layout_attr_of};
use crate::ir::Emitter;
use crate::matrix_kernel::{Instr, Kernel, Lane, Operand, Plan, Shape};
use crate::PassError;

/// The block's tile of C (the MMA's M and N) and the columns of tensor memory it takes.
const BM: i64 = 128;
const BN: i64 = 64;
/// Accumulators per thread: its row of D.
const ACC: usize = BN as usize;
/// 32-bit words of the A and B tiles in shared memory.
const A_WORDS: i64 = BM * 32 / 4;
const B_WORDS: i64 = BN * 32 / 4;

/// `tcgen05.mma.cta_group::1.kind::f8f6f4` with M 128, N 64; its "registers" are the words
/// each thread copies into shared memory, its accumulators the thread's row of D.
pub(super) struct Tcgen05 {
    a: ScaledFormat,
    b: ScaledFormat,
    kind: Kind,
    /// With `Kind::F16`: why no FP8 kind (and for bf16, no f16 pattern) takes the op.
    why_half: Option<String>,
}

/// The MMA's kind.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// `kind::f8f6f4`: E4M3 / E5M2 codes (other formats embedded), scales on D's sums.
    F8f6f4,
    /// `kind::mxf8f6f4.block_scale`: the same codes, both operands' E8M0 32-block scales
    /// applied by the MMA from tensor memory (scale_vec 1X: one byte per row and step).
    Mxf8f6f4,
    /// `kind::mxf4.block_scale`: packed E2M1 codes, K 64 per MMA, E8M0 32-block scales
    /// (scale_vec 2X: two bytes per row and step).
    Mxf4,
    /// `kind::mxf4nvf4.block_scale.block16`: packed E2M1 codes, K 64 per MMA, UE4M3
    /// 16-block scales (NVFP4; scale_vec 4X: a whole word per row and step).
    Mxf4nvf4,
    /// `kind::f16` with f16 or bf16 operands: the half patterns of the codes' fields
    /// (formats no FP8 type holds: `Plan::half`), K 16 per MMA (the same 32 bytes of each
    /// row), scales on D's sums.
    F16(Half),
}

impl Kind {
    fn scaled(self) -> bool {
        matches!(self, Kind::Mxf8f6f4 | Kind::Mxf4 | Kind::Mxf4nvf4)
    }

    /// E2M1 codes, packed in shared memory.
    fn fp4(self) -> bool {
        matches!(self, Kind::Mxf4 | Kind::Mxf4nvf4)
    }

    /// K per MMA.
    fn k(self) -> i64 {
        match self {
            Kind::Mxf4 | Kind::Mxf4nvf4 => 64,
            Kind::F16(_) => 16,
            Kind::F8f6f4 | Kind::Mxf8f6f4 => 32,
        }
    }

    /// K per scale the MMA applies (E8M0 32-blocks, UE4M3 16-blocks); the whole MMA for
    /// the kinds that apply none.
    fn block(self) -> i64 {
        match self {
            Kind::Mxf4nvf4 => 16,
            Kind::Mxf8f6f4 | Kind::Mxf4 => 32,
            Kind::F8f6f4 | Kind::F16(_) => self.k(),
        }
    }

    /// Scale words per tensor-memory lane and 128 of K, for A's 128 rows and B's 64
    /// columns: one word per 32 rows holding 4 scales, per MMA step with 4X.
    fn scale_words(self) -> [i64; 2] {
        if self == Kind::Mxf4nvf4 {
            [8, 4]
        } else {
            [4, 2]
        }
    }

    /// The kind's attributes of `nvvm.tcgen05.mma.block_scale`.
    fn attributes(self) -> Vec<(&'static str, &'static str)> {
        let kind = match self {
            Kind::Mxf4 => "#nvvm.block_scale_kind<mxf4>",
            Kind::Mxf4nvf4 => "#nvvm.block_scale_kind<mxf4nvf4>",
            _ => "#nvvm.block_scale_kind<mxf8f6f4>",
        };
        let mut attrs = vec![("kind", kind), ("ctaGroup", "#nvvm.cta_group<cta_1>")];
        if self == Kind::Mxf4nvf4 {
            attrs.push(("blockScale", "#nvvm.tcgen05_mma_block_scale<block16>"));
        }
        attrs
    }
}

/// The plan and instruction for `op`, or why it needs another kernel: block-scaled when
/// both operands are MX with 32-blocks (`mxf4` when both are E2M1, else `mxf8f6f4`), else
/// scales on the accumulators; `kind::f16` on the f16 (else bf16) patterns of the formats
/// no FP8 type holds.
pub(super) fn plan(op: OperationRef) -> Result<(Plan, Tcgen05), String> {
    let (plan, a, b) = match super::fp8_plan(op) {
        Ok(fp8) => fp8,
        Err(fp8) => {
            let (plan, half, why) = Plan::half(op, fp8)?;
            let (a, b) = (plan.a.ty, plan.b.ty);
            let kind = Kind::F16(half);
            let why_half = Some(why);
            return Ok((
                plan,
                Tcgen05 {
                    a,
                    b,
                    kind,
                    why_half,
                },
            ));
        }
    };
    let err = |e: PassError| e.to_string();
    let mx = ScaleLayout::Mx { block: 32 };
    let la = layout_attr_of(op, "lhs_layout").map_err(err)?;
    let lb = layout_attr_of(op, "rhs_layout").map_err(err)?;
    let [(fa, pa), (fb, pb)] = Plan::formats(op)?;
    let f4 = ScaledFormat::F4E2M1;
    let nvfp4 = |l: ScaleLayout| matches!(l, ScaleLayout::Nvfp4 { block: 16, .. });
    if nvfp4(la) && nvfp4(lb) && fa == f4 && fb == f4 {
        let a_op = Operand::new(f4, pa, &[f4], &[0])?;
        let b_op = Operand::new(f4, pb, &[f4], &[0])?;
        let scaled = Plan::new(op, a_op, b_op, Kind::Mxf4nvf4.k(), true)?;
        let kind = Kind::Mxf4nvf4;
        return Ok((scaled, Tcgen05::new(f4, f4, kind)));
    }
    if la == mx && lb == mx {
        if fa == f4 && fb == f4 {
            let a_op = Operand::new(f4, pa, &[f4], &[0])?;
            let b_op = Operand::new(f4, pb, &[f4], &[0])?;
            let scaled = Plan::new(op, a_op, b_op, Kind::Mxf4.k(), true)?;
            let kind = Kind::Mxf4;
            return Ok((scaled, Tcgen05::new(f4, f4, kind)));
        }
        let scaled = Plan::new(op, plan.a.clone(), plan.b.clone(), 32, true)?;
        let kind = Kind::Mxf8f6f4;
        return Ok((scaled, Tcgen05::new(a, b, kind)));
    }
    Ok((plan, Tcgen05::new(a, b, Kind::F8f6f4)))
}

/// Tensor-memory columns of the scale factors, after D's 64: A's words (4 columns, 8 with
/// 4X), then B's (2, or 4).
const SFA_COL: i64 = BN;
/// Scale-factor columns per lane in the emulation's stand-in (A's and B's words).
const SF_STRIDE: i64 = 16;

impl Instr for Tcgen05 {
    /// 32 bytes of each row per MMA every way: 32 FP8 codes, 64 packed E2M1, or 16 f16 /
    /// bf16 values.
    fn shape(&self) -> Shape {
        let fp8 = smem_shape(BM, BN, ACC);
        let bits = (8 * 32 / self.kind.k()) as u32;
        Shape {
            k: self.kind.k(),
            a_bits: bits,
            b_bits: bits,
            ..fp8
        }
    }

    fn a_reg<'c, 'a>(
        &self,
        e: &Emitter<'c, 'a>,
        lane: Value<'c, 'a>,
        r: usize,
    ) -> (Value<'c, 'a>, Value<'c, 'a>) {
        // The same word for every kind (`copied_word`), in its codes.
        copied_code(e, lane, r, self.kind.k())
    }

    fn b_reg<'c, 'a>(
        &self,
        e: &Emitter<'c, 'a>,
        lane: Value<'c, 'a>,
        r: usize,
    ) -> (Value<'c, 'a>, Value<'c, 'a>) {
        // The same word for every kind (`copied_word`), in its codes.
        copied_code(e, lane, r, self.kind.k())
    }

    /// Thread t reads lane t of tensor memory (warp w the lanes 32w..32w+32): row t, the
    /// column is the register.
    fn acc<'c, 'a>(
        &self,
        e: &Emitter<'c, 'a>,
        lane: Value<'c, 'a>,
        j: usize,
    ) -> (Value<'c, 'a>, Value<'c, 'a>) {
        (lane, e.index(j as i64))
    }

    /// A thread's registers are its row's columns in order: stored 4 at a time (16 bytes).
    fn column_run(&self) -> usize {
        4
    }
}

/// The PTX type code of an operand in the instruction descriptor.
fn type_code(f: ScaledFormat) -> u32 {
    if f == ScaledFormat::F8E4M3 {
        0
    } else {
        1
    }
}

impl Tcgen05 {
    fn new(a: ScaledFormat, b: ScaledFormat, kind: Kind) -> Self {
        Tcgen05 {
            a,
            b,
            kind,
            why_half: None,
        }
    }

    /// The 16-bit float of `kind::f16` and why no FP8 kind takes the op, for its remark.
    pub(super) fn half_because(&self) -> Option<(Half, &str)> {
        match (self.kind, &self.why_half) {
            (Kind::F16(half), Some(why)) => Some((half, why)),
            _ => None,
        }
    }

    /// The 32-bit instruction descriptor; block-scaled, without the scale-factor ids
    /// (`with_ids`).
    fn idesc(&self) -> u32 {
        // kind::mxf4 codes E2M1 as 1 in its 3-bit A and 2-bit B type fields; kind::f16
        // F16 as 0, BF16 as 1.
        let (ta, tb) = match self.kind {
            Kind::Mxf4 | Kind::Mxf4nvf4 => (1, 1),
            Kind::F16(Half::F16) => (0, 0),
            Kind::F16(Half::Bf16) => (1, 1),
            Kind::F8f6f4 | Kind::Mxf8f6f4 => (type_code(self.a), type_code(self.b)),
        };
        let common =
            (ta << 7) | (tb << 10) | (((BN >> 3) as u32) << 17) | (((BM >> 4) as u32) << 24);
        if self.kind == Kind::Mxf4nvf4 {
            // Bit 23 clear: UE4M3 scale factors.
            common
        } else if self.kind.scaled() {
            // Bit 23: UE8M0 scale factors.
            common | (1 << 23)
        } else {
            // Bits 4-5: F32 D.
            common | (1 << 4)
        }
    }

    /// Tensor-memory columns the kernel allocates (a power of two, at least 32).
    fn columns(&self) -> i64 {
        if self.kind.scaled() {
            2 * BN
        } else {
            BN
        }
    }
}

/// A block-scaled instruction descriptor for the MMA at K `kk`, choosing its scales in the
/// tensor-memory words (4 bytes: the E8M0 scales of the 4 32-blocks of a 128-code group):
/// byte `(kk / 32) % 4` for `mxf8f6f4` (1X), halfword `2 ((kk / 64) % 2)` for `mxf4` (2X),
/// 0 for `mxf4nvf4` (4X: the step's own words, see `scale_columns`); the B id in bits 4-5,
/// the A id in bits 29-30.
fn with_ids<'c, 'a>(e: &Emitter<'c, 'a>, instr: &Tcgen05, kk: Value<'c, 'a>) -> Value<'c, 'a> {
    let step = e.remui(
        e.divui(kk, e.index(instr.kind.k())),
        e.index(128 / instr.kind.k()),
    );
    // Bytes of one step's scales in a word: 1 (1X), 2 (2X); 4X takes whole words (id 0).
    let per_step = if instr.kind == Kind::Mxf4nvf4 {
        0
    } else {
        instr.kind.k() / 32
    };
    let id = e.muli(step, e.index(per_step));
    let j = e.index_castui(id, e.int_type(32));
    e.ori(
        e.i32(instr.idesc()),
        e.ori(e.shli(j, e.i32(4)), e.shli(j, e.i32(29))),
    )
}

/// The scale-factor words thread `tid` writes into its tensor-memory lane for the 128 of K
/// from `kk` (a multiple of 128), A's then B's: word `g * (rows / 32) + c` holds, for row
/// `32c + tid % 32` of the tile (A) or column (B), the scales of blocks `4g .. 4g + 4` of
/// the group in its bytes (`g` the MMA step with 4X, else 0; 1.0 past the matrix). Every
/// warp writes the same words into its 32 lanes: the MMA finds a row's scale in the lane
/// quadrant of that row.
fn scale_words<'c, 'a>(
    e: &Emitter<'c, 'a>,
    kn: &Kernel<'_, 'c, 'a>,
    kind: Kind,
    l: &Lane<'c, 'a>,
    kk: Value<'c, 'a>,
) -> [Vec<Value<'c, 'a>>; 2] {
    let lane = e.remui(l.lane, e.index(32));
    let size = e.index(kind.block());
    let blocks = ceil_div(e, kn.ops.k, size);
    let first = e.divui(kk, size);
    // 1.0: E8M0 127, UE4M3 0x38.
    let one = if kind == Kind::Mxf4nvf4 { 0x38 } else { 127 };
    let side = |sc: &crate::expand_quantize::Scaled<'c, 'a>,
                origin: Value<'c, 'a>,
                rows: Value<'c, 'a>,
                words: i64,
                per_group: i64| {
        (0..words)
            .map(|w| {
                let (g, c) = (w / per_group, w % per_group);
                let row = e.addi(origin, e.addi(e.index(32 * c), lane));
                (0..4).fold(e.i32(0), |word, j| {
                    let block = e.addi(first, e.index(4 * g + j));
                    let inside = e.andi(
                        e.cmpi(CmpiPredicate::Ult, row, rows),
                        e.cmpi(CmpiPredicate::Ult, block, blocks),
                    );
                    let code = e.load(
                        sc.scales,
                        &[
                            e.minui(row, e.subi(rows, e.index(1))),
                            e.minui(block, e.subi(blocks, e.index(1))),
                        ],
                    );
                    let code = e.select(inside, e.extui(code, e.int_type(32)), e.i32(one));
                    e.ori(word, e.shli(code, e.i32(8 * j as u32)))
                })
            })
            .collect()
    };
    let [wa, wb] = kind.scale_words();
    [
        side(&kn.ops.sa, l.row0, kn.ops.m, wa, BM / 32),
        side(&kn.ops.sb, l.col0, kn.ops.n, wb, BN / 32),
    ]
}

/// The tensor-memory columns the MMA at K `kk` reads its A and B scales from: the first of
/// each side's words, and with 4X those of its step.
fn scale_columns<'c, 'a>(
    e: &Emitter<'c, 'a>,
    kind: Kind,
    kk: Value<'c, 'a>,
) -> (Value<'c, 'a>, Value<'c, 'a>) {
    let [wa, _] = kind.scale_words();
    let (a, b) = (e.index(SFA_COL), e.index(SFA_COL + wa));
    if kind != Kind::Mxf4nvf4 {
        return (a, b);
    }
    let step = e.remui(e.divui(kk, e.index(kind.k())), e.index(2));
    (
        e.addi(a, e.muli(step, e.index(BM / 32))),
        e.addi(b, e.muli(step, e.index(BN / 32))),
    )
}

/// The tcgen05 shared-memory descriptor of a tile at byte address `base` (an `i64`).
fn descriptor<'c, 'a>(e: &Emitter<'c, 'a>, base: Value<'c, 'a>) -> Value<'c, 'a> {
    let field = |v: i64, at: i64| e.int(64, ((v >> 4) & 0x3FFF) << at);
    let start = e.shrui(e.andi(base, e.int(64, 0x3FFFF)), e.int(64, 4));
    let fixed = e.int(64, 1 << 46);
    e.ori(e.ori(e.ori(start, field(LBO, 16)), field(SBO, 32)), fixed)
}

/// An NVVM op with operands and attributes (given as text), no results.
fn nvvm<'c, 'a>(
    e: &Emitter<'c, 'a>,
    name: &str,
    operands: &[Value<'c, 'a>],
    attrs: &[(&str, &str)],
) {
    let attrs: Vec<_> = attrs
        .iter()
        .map(|&(n, v)| {
            (
                Identifier::new(e.ctx(), n),
                Attribute::parse(e.ctx(), v).expect("valid attribute"),
            )
        })
        .collect();
    e.insert(
        OperationBuilder::new(name, e.loc())
            .add_operands(operands)
            .add_attributes(&attrs)
            .build()
            .expect("valid NVVM op"),
    );
}

/// The `shape` attribute of a `tcgen05.ld` / `tcgen05.st` of 32 lanes x 32 bits (a warp's
/// quadrant of tensor memory, a word per lane and column).
fn ldst_32x32b<'c>(e: &Emitter<'c, '_>) -> (Identifier<'c>, Attribute<'c>) {
    (
        Identifier::new(e.ctx(), "shape"),
        Attribute::parse(e.ctx(), "#nvvm.tcgen05_ldst_shape<shape_32x32b>").expect("valid shape"),
    )
}

/// Lower `op` with the tcgen05 kernel: a `gpu.launch` (`emulate = false`) or its CPU
/// emulation.
pub(super) fn lower<'c, 'a>(
    e: &Emitter<'c, 'a>,
    op: OperationRef<'c, 'a>,
    plan: &Plan,
    instr: &Tcgen05,
    emulate: bool,
) -> Result<(), PassError> {
    let kn = (Kernel::new(e, op, plan, instr)?)
        .with_permute(Permute::nvidia(emulate))
        .with_block(BM, BN);
    let (zero, one) = (e.index(0), e.index(1));
    let grid = kn.grid(e, BM, BN);
    if emulate {
        kn.blocks(e, grid, |e, bm, bn| emulated_block(e, &kn, instr, bm, bn));
        return Ok(());
    }
    let workgroup = |words: i64, t: &str| {
        Type::parse(
            e.ctx(),
            &format!("memref<{words}x{t}, #gpu.address_space<workgroup>>"),
        )
        .expect("valid workgroup memref type")
    };
    // Block scales on D's sums: staged in shared memory (a row and a column a thread).
    let staging = StagedScales::of(plan, [BM, BN]);
    let mut buffers = vec![
        workgroup(A_WORDS, "i32"),
        workgroup(B_WORDS, "i32"),
        workgroup(1, "i32"),
        workgroup(1, "i64"),
    ];
    buffers.extend(staging.map(|st| st.memref_type(e)));
    e.gpu_launch(
        [grid[0], grid[1], one],
        [e.index(THREADS), one, one],
        &buffers,
        |e, bid, tid, wg| {
            let (smem, slot, mbar) = ([wg[0], wg[1]], wg[2], wg[3]);
            let staged = staging.map(|st| (st, wg[4]));
            let tid = tid[0];
            let l = Lane {
                lane: tid,
                row0: e.muli(bid[1], e.index(BM)),
                col0: e.muli(bid[0], e.index(BN)),
            };
            let i32t = e.int_type(32);
            let i1 = e.i32(1);
            let warp = e.divui(tid, e.index(32));
            let first_warp = e.cmpi(CmpiPredicate::Eq, warp, zero);
            let first_thread = e.cmpi(CmpiPredicate::Eq, tid, zero);
            let cols = e.i32(instr.columns() as u32);
            let mbar_ptr = e.pointer(smem_address(e, mbar), 3);
            // Warp 0 allocates the tensor memory of D and writes its address into `slot`;
            // thread 0 sets up the mbarrier MMAs complete on.
            e.if_then(first_warp, |e| {
                nvvm(
                    e,
                    "nvvm.tcgen05.alloc",
                    &[e.pointer(smem_address(e, slot), 3), cols],
                    &[],
                );
                nvvm(e, "nvvm.tcgen05.relinquish_alloc_permit", &[], &[]);
            });
            e.if_then(first_thread, |e| {
                nvvm(e, "nvvm.mbarrier.init", &[mbar_ptr, i1], &[])
            });
            let fence = |e: &Emitter<'c, 'a>, kind: &str| {
                nvvm(
                    e,
                    "nvvm.tcgen05.fence",
                    &[],
                    &[("kind", &format!("#nvvm.tcgen05_fence<{kind}>"))],
                )
            };
            fence(e, "before");
            e.bare("gpu.barrier", &[]);
            fence(e, "after");
            let taddr = e.load(slot, &[zero]);
            let d_ptr = e.pointer(taddr, 6);
            // This warp's 32 lanes of D.
            let lanes = e.shli(e.index_castui(e.muli(warp, e.index(32)), i32t), e.i32(16));
            let warp_d = e.pointer(e.addi(taddr, lanes), 6);
            let (da, db) = (
                descriptor(e, smem_address(e, smem[0])),
                descriptor(e, smem_address(e, smem[1])),
            );
            let idesc = e.i32(instr.idesc());
            let step = e.index(plan.step);
            let span = e.index(plan.span);
            // A step's loads (`step_loads`) come a step ahead.
            let mut inits = vec![e.f32(0.0); ACC];
            inits.extend(step_loads(e, &kn, &l, zero, staging));
            let f32t = e.f32_type();
            let done = e.for_loop(zero, kn.ops.k, step, &inits, |e, kk, carried| {
                let (acc, words) = (&carried[..ACC], &carried[ACC..]);
                // Every thread is past the previous MMA's completion (and promotion)
                // before the tiles and the staged scales are overwritten.
                e.bare("gpu.barrier", &[]);
                store_step(e, &kn, &l, words, smem, staged);
                fence_proxy_async(e);
                if instr.kind.scaled() {
                    // Every 128 of K, the next 4 steps' scale factors into this warp's
                    // lanes of the scale columns (the previous MMAs that read them are
                    // complete: each was waited on).
                    let group = e.cmpi(CmpiPredicate::Eq, e.remui(kk, e.index(128)), zero);
                    e.if_then(group, |e| {
                        let words = scale_words(e, &kn, instr.kind, &l, kk);
                        let [wa, _] = instr.kind.scale_words();
                        for (col, w) in [SFA_COL, SFA_COL + wa].into_iter().zip(words) {
                            let at = e.addi(taddr, e.addi(lanes, e.i32(col as u32)));
                            e.insert(
                                OperationBuilder::new("nvvm.tcgen05.st", e.loc())
                                    .add_operands(&[e.pointer(at, 6), e.from_elements(&w)])
                                    .add_attributes(&[ldst_32x32b(e)])
                                    .build()
                                    .expect("valid nvvm.tcgen05.st"),
                            );
                        }
                        nvvm(
                            e,
                            "nvvm.tcgen05.wait",
                            &[],
                            &[("kind", "#nvvm.tcgen05_wait<store>")],
                        );
                    });
                    fence(e, "before");
                }
                e.bare("gpu.barrier", &[]);
                // Tensor-memory accesses of other threads before the barrier (the previous
                // segment's tcgen05.ld) are ordered before this MMA.
                fence(e, "after");
                let accumulate = e.cmpi(CmpiPredicate::Ne, e.remui(kk, span), zero);
                e.if_then(first_thread, |e| {
                    if instr.kind.scaled() {
                        let (ca, cb) = scale_columns(e, instr.kind, kk);
                        let sf = |col: Value<'c, 'a>| {
                            e.pointer(e.addi(taddr, e.index_castui(col, i32t)), 6)
                        };
                        nvvm(
                            e,
                            "nvvm.tcgen05.mma.block_scale",
                            &[
                                d_ptr,
                                da,
                                db,
                                with_ids(e, instr, kk),
                                accumulate,
                                sf(ca),
                                sf(cb),
                            ],
                            &instr.kind.attributes(),
                        );
                    } else {
                        let kind = match instr.kind {
                            Kind::F16(_) => "#nvvm.tcgen05_mma_kind<f16>",
                            _ => "#nvvm.tcgen05_mma_kind<f8f6f4>",
                        };
                        nvvm(
                            e,
                            "nvvm.tcgen05.mma",
                            &[d_ptr, da, db, idesc, accumulate],
                            &[
                                ("kind", kind),
                                ("ctaGroup", "#nvvm.cta_group<cta_1>"),
                                ("operandSegmentSizes", "array<i32: 1, 1, 1, 1, 1, 0, 0>"),
                            ],
                        );
                    }
                    nvvm(e, "nvvm.tcgen05.commit", &[mbar_ptr], &[]);
                });
                // The next step's codes load while the MMA runs.
                let loaded = step_loads(e, &kn, &l, e.addi(kk, step), staging);
                let phase = e.andi(e.index_castui(e.divui(kk, step), i32t), i1);
                nvvm(
                    e,
                    "nvvm.mbarrier.try_wait.parity",
                    &[mbar_ptr, phase, e.i32(1_000_000)],
                    &[],
                );
                fence(e, "after");
                let (end, k0) = segment_end(e, &kn, kk);
                let mut out = e.if_else(
                    end,
                    &vec![f32t; ACC],
                    |e| {
                        let v = e.val(
                            OperationBuilder::new("nvvm.tcgen05.ld", e.loc())
                                .add_operands(&[warp_d])
                                .add_attributes(&[ldst_32x32b(e)])
                                .add_results(&[e.vector_type(ACC as u64, i32t)])
                                .build()
                                .expect("valid nvvm.tcgen05.ld"),
                        );
                        nvvm(
                            e,
                            "nvvm.tcgen05.wait",
                            &[],
                            &[("kind", "#nvvm.tcgen05_wait<load>")],
                        );
                        let d: Vec<Value> = (0..ACC as i64)
                            .map(|j| e.bitcast(e.extract(v, j, i32t), f32t))
                            .collect();
                        promote(e, &kn, &l, k0, acc, &d, staged)
                    },
                    |_| acc.to_vec(),
                );
                fence(e, "before");
                out.extend(loaded);
                out
            });
            kn.epilogue(e, &l, &done[..ACC]);
            // Tensor memory back, by the warp that allocated it.
            fence(e, "before");
            e.bare("gpu.barrier", &[]);
            fence(e, "after");
            e.if_then(first_warp, |e| {
                nvvm(e, "nvvm.tcgen05.dealloc", &[d_ptr, cols], &[])
            });
        },
    );
    Ok(())
}

/// One block on the CPU: the copies of all 128 threads, then [`emulated_mma`] into a buffer
/// standing for tensor memory, per K step; at a segment's end each thread's row of it is
/// promoted into its accumulators.
fn emulated_block<'c, 'a>(
    e: &Emitter<'c, 'a>,
    kn: &Kernel<'_, 'c, 'a>,
    instr: &Tcgen05,
    bm: Value<'c, 'a>,
    bn: Value<'c, 'a>,
) {
    let (zero, one) = (e.index(0), e.index(1));
    let (f32t, i32t) = (e.f32_type(), e.int_type(32));
    let smem = [e.alloca(i32t, A_WORDS), e.alloca(i32t, B_WORDS)];
    let staged = StagedScales::of(kn.plan, [BM, BN]).map(|st| (st, e.alloca(f32t, st.words())));
    let tmem = e.alloca(f32t, BM * BN);
    let acc_m = e.alloca(f32t, THREADS * ACC as i64);
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
    threads(e, &|e, t| {
        for x in 0..ACC {
            e.store(e.f32(0.0), acc_m, &[at(e, t, x)]);
        }
    });
    let (da, db) = (descriptor(e, e.int(64, 0)), descriptor(e, e.int(64, 0)));
    let span = e.index(kn.plan.span);
    // The scale-factor columns of tensor memory: lane L's word c at L * SF_STRIDE + c (A's
    // first, then B's; column c stands for column SFA_COL + c).
    let sf = e.alloca(i32t, BM * SF_STRIDE);
    e.for_loop(zero, kn.ops.k, e.index(kn.plan.step), &[], |e, kk, _| {
        threads(e, &|e, t| {
            let l = lane(e, t);
            let loads = step_loads(e, kn, &l, kk, staged.map(|(st, _)| st));
            store_step(e, kn, &l, &loads, smem, staged);
        });
        let idesc = if instr.kind.scaled() {
            let group = e.cmpi(CmpiPredicate::Eq, e.remui(kk, e.index(128)), zero);
            e.if_then(group, |e| {
                threads(e, &|e, t| {
                    let words = scale_words(e, kn, instr.kind, &lane(e, t), kk);
                    for (c, w) in words.concat().into_iter().enumerate() {
                        let at = e.addi(e.muli(t, e.index(SF_STRIDE)), e.index(c as i64));
                        e.store(w, sf, &[at]);
                    }
                })
            });
            with_ids(e, instr, kk)
        } else {
            e.i32(instr.idesc())
        };
        let accumulate = e.cmpi(CmpiPredicate::Ne, e.remui(kk, span), zero);
        let (ca, cb) = scale_columns(e, instr.kind, kk);
        let base = e.index(SFA_COL);
        let scales = instr
            .kind
            .scaled()
            .then(|| (sf, e.subi(ca, base), e.subi(cb, base)));
        emulated_mma(
            e,
            instr.kind,
            [da, db],
            idesc,
            accumulate,
            smem,
            tmem,
            scales,
        );
        let (end, k0) = segment_end(e, kn, kk);
        e.if_then(end, |e| {
            threads(e, &|e, t| {
                let l = lane(e, t);
                let acc: Vec<Value> = (0..ACC).map(|x| e.load(acc_m, &[at(e, t, x)])).collect();
                // Thread t's row of D, as tcgen05.ld.32x32b gives it.
                let d: Vec<Value> = (0..ACC)
                    .map(|j| e.load(tmem, &[e.addi(e.muli(t, e.index(BN)), e.index(j as i64))]))
                    .collect();
                let promoted = promote(e, kn, &l, k0, &acc, &d, staged);
                for (x, v) in promoted.into_iter().enumerate() {
                    e.store(v, acc_m, &[at(e, t, x)]);
                }
            });
        });
        vec![]
    });
    threads(e, &|e, t| {
        let l = lane(e, t);
        let acc: Vec<Value> = (0..ACC).map(|x| e.load(acc_m, &[at(e, t, x)])).collect();
        kn.epilogue(e, &l, &acc);
    });
}

/// The MMA as the PTX ISA defines it, from its descriptors: M, N and the A / B types from
/// the instruction descriptor, D[row][col] = (D if `accumulate`) + sum over K of
/// A[row][k] * B[col][k], each code read where the operand's shared-memory descriptor puts
/// its byte (start + 8-row group * stride offset + 16-byte K chunk * leading offset +
/// (row % 8) * 16 + byte % 16; `mxf4`: byte k / 2, the low nibble first; `f16`: the two
/// bytes from 2k, F16 or BF16 by the type field). Block-scaled
/// (`scales`, the scale-factor columns): each 32-block's sum times the E8M0 scales of the
/// row and the column, for block q of the MMA byte `scale A id + q` (idesc bits 29-30) of
/// the A word at lane `row`, column `a + row / 32`, byte `scale B id + q` (bits 4-5) of the
/// B word at lane `col % 32`, column `b + col / 32`, `a` and `b` the MMA's scale columns;
/// E8M0 when idesc bit 23 is set, else UE4M3 (16-blocks).
#[allow(clippy::too_many_arguments)]
fn emulated_mma<'c, 'a>(
    e: &Emitter<'c, 'a>,
    kind: Kind,
    desc: [Value<'c, 'a>; 2],
    idesc: Value<'c, 'a>,
    accumulate: Value<'c, 'a>,
    smem: [Value<'c, 'a>; 2],
    tmem: Value<'c, 'a>,
    scales: Option<(Value<'c, 'a>, Value<'c, 'a>, Value<'c, 'a>)>,
) {
    let (zero, one) = (e.index(0), e.index(1));
    let index = e.index_type();
    let bits = |at: u32, width: u32| {
        e.index_castui(
            e.andi(e.shrui(idesc, e.i32(at)), e.i32((1 << width) - 1)),
            index,
        )
    };
    let (m, n) = (
        e.muli(bits(24, 5), e.index(16)),
        e.muli(bits(17, 6), e.index(8)),
    );
    let (ta, tb) = (bits(7, 3), bits(10, 3));
    // The scale-factor ids.
    let i32t = e.int_type(32);
    let (id_a, id_b) = (
        e.index_castui(bits(29, 2), i32t),
        e.index_castui(bits(4, 2), i32t),
    );
    let field = |d: Value<'c, 'a>, at: i64| {
        let f = e.andi(e.shrui(d, e.int(64, at)), e.int(64, 0x3FFF));
        e.index_castui(e.shli(f, e.int(64, 4)), index)
    };
    let decoded: Vec<[Value; 3]> = desc
        .iter()
        .map(|&d| [field(d, 0), field(d, 16), field(d, 32)])
        .collect();
    let fp4 = kind.fp4();
    let half = matches!(kind, Kind::F16(_));
    // Bit 23: UE8M0 scales, else UE4M3.
    let ue8m0 = e.cmpi(CmpiPredicate::Ne, bits(23, 1), zero);
    let value = |e: &Emitter<'c, 'a>,
                 which: usize,
                 rc: Value<'c, 'a>,
                 k: Value<'c, 'a>,
                 ty: Value<'c, 'a>| {
        let [start, lbo, sbo] = decoded[which];
        let (c8, c16) = (e.index(8), e.index(16));
        let byte = if fp4 {
            e.divui(k, e.index(2))
        } else if half {
            e.muli(k, e.index(2))
        } else {
            k
        };
        let addr = e.addi(
            e.addi(start, e.muli(e.divui(rc, c8), sbo)),
            e.addi(
                e.muli(e.divui(byte, c16), lbo),
                e.addi(e.muli(e.remui(rc, c8), c16), e.remui(byte, c16)),
            ),
        );
        let word = e.load(smem[which], &[e.divui(addr, e.index(4))]);
        let shift = e.index_castui(e.muli(e.remui(addr, e.index(4)), c8), i32t);
        if half {
            // kind::f16: F16 (type 0) or BF16 (1) values at their two bytes.
            let bits = e.andi(e.shrui(word, shift), e.i32(0xFFFF));
            let bf16 = e.cmpi(CmpiPredicate::Eq, ty, e.index(1));
            return e.select(bf16, codes::bf16_value(e, bits), codes::f16_value(e, bits));
        }
        let code = e.andi(e.shrui(word, shift), e.i32(0xFF));
        if fp4 {
            let nibble = e.index_castui(e.muli(e.remui(k, e.index(2)), e.index(4)), i32t);
            let code = e.andi(e.shrui(code, nibble), e.i32(0xF));
            return codes::decode(e, ScaledFormat::F4E2M1, code);
        }
        let e5m2 = e.cmpi(CmpiPredicate::Eq, ty, e.index(1));
        e.select(
            e5m2,
            codes::decode(e, ScaledFormat::F8E5M2, code),
            codes::decode(e, ScaledFormat::F8E4M3, code),
        )
    };
    e.for_loop(zero, m, one, &[], |e, row, _| {
        e.for_loop(zero, n, one, &[], |e, col, _| {
            let c32 = e.index(32);
            let block = kind.block();
            let sum = (0..kind.k() / block).fold(e.f32(0.0), |total, q| {
                let k0 = e.index(block * q);
                let part = e.for_loop(zero, e.index(block), one, &[e.f32(0.0)], |e, k, s| {
                    let k = e.addi(k0, k);
                    let x = value(e, 0, row, k, ta);
                    let y = value(e, 1, col, k, tb);
                    vec![e.addf(s[0], e.mulf(x, y))]
                })[0];
                let part = match scales {
                    Some((sf, col_a, col_b)) => {
                        let scale = |lane: Value<'c, 'a>, column: Value<'c, 'a>, id| {
                            let at = e.addi(e.muli(lane, e.index(SF_STRIDE)), column);
                            let word = e.load(sf, &[at]);
                            let shift = e.muli(e.addi(id, e.i32(q as u32)), e.i32(8));
                            let code = e.andi(e.shrui(word, shift), e.i32(0xFF));
                            e.select(
                                ue8m0,
                                codes::e8m0_decode(e, code),
                                codes::decode(e, ScaledFormat::F8E4M3, code),
                            )
                        };
                        let sa = scale(row, e.addi(col_a, e.divui(row, c32)), id_a);
                        let sb = scale(e.remui(col, c32), e.addi(col_b, e.divui(col, c32)), id_b);
                        // The product of the two scales first, as the contract scales a
                        // segment (the ISA leaves the order open): the partial times one
                        // scale alone may leave f32's range where the product does not.
                        e.mulf(part, e.mulf(sa, sb))
                    }
                    None => part,
                };
                e.addf(total, part)
            });
            let at = e.addi(e.muli(row, e.index(BN)), col);
            let d = e.select(accumulate, e.load(tmem, &[at]), e.f32(0.0));
            e.store(e.addf(d, sum), tmem, &[at]);
            vec![]
        });
        vec![]
    });
}
