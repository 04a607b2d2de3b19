//! `lowp-to-loops`: the generic CPU lowering. `lowp.scaled_matmul` becomes a decode phase
//! and a register-blocked f32 GEMM in `scf` + `vector` + `arith` + `memref`; the
//! quantization ops left in the function are expanded as by `lowp-expand-quantize`.
//!
//! Before:
//! ```mlir
//! lowp.scaled_matmul %a[%sa], %b[%sb] into %c layouts(#lowp.mx<32>, #lowp.mx<32>)
//!     : memref<128x256xf4E2M1FN>[memref<128x8xf8E8M0FNU>], ... -> memref<128x64xf32>
//! ```
//! After (shape of it):
//! ```mlir
//! %ap = memref.alloc(...) : memref<?x?x6xf32>        // A decoded into 6-row tiles
//! %bp = memref.alloc(...) : memref<?x256x16xf32>     // B's 16-column panels of a K block
//! %sa = ... %sb = ...                                 // scales per K segment, in tiles
//! %w = memref.alloc(...) : memref<?x?x6x16xf32>      // f32 sums, a block per tile
//! scf.for %kc = ... step 256 {                        // K blocks
//!  scf.parallel (%nb) = ... {                         // B's block decoded, 8 rows by
//!    vector.load ... : vector<8xi8> (x 8 rows)        // 8 k: bit arithmetic, then an
//!    vector.shuffle (x 24) ... vector.store ... %bp   // 8 x 8 transpose in registers
//!  }
//!  scf.for %nc = ... step 32 {                        // N blocks: 256 x 512 of B in L2
//!   scf.parallel (%mt) = ... {                        // 6-row tiles, one per thread
//!     scf.for %nb = ... {                             // 16-column panels of the block
//!       scf.for %seg = ... step 32 {                  // one scale segment
//!         %p:12 = scf.if %whole -> (vector<8xf32>, ...) {  // 32 k unrolled, else
//!           vector.broadcast / vector.load / vector.fma   // scf.for: 6x16 outer
//!         }                                               // products
//!         vector.fma %p#i, (sa * sb), %w              // scaled once per segment
//! ...
//! // write-back: (per-tensor / per-channel scales,) NVFP4 globals, bias, f32 or bf16
//! ```
//!
//! Numerics follow the oracle (`lowp_formats::scaled_matmul`): operands are decoded
//! bit-exactly and unscaled, each K segment (where neither operand's scale changes; the gcd
//! of the two K blocks when neither divides the other) is summed in f32 and multiplied once
//! by `sa * sb`; per-tensor and per-channel scales multiply the total (as one product
//! `sa * sb`, the f32 value the contract rounds), then the NVFP4 globals,
//! then the bias. The summation order inside a segment is the micro-kernel's, so results
//! agree with the oracle within the f32 summation bound (`lowp_formats::Reference::check`).
//!
//! The micro-kernel keeps a 6 x 16 tile of partial sums in twelve `vector<8xf32>` registers
//! (AVX2: 12 of 16 ymm; with `lanes=16`, 12 x 32 in 24 of 32 zmm, or 6 x 32 where scale
//! segments are 32 k or shorter, the tile's running f32 sums then held in 12 more zmm
//! through a K block's segments instead of folded into memory after each one, unless MX's
//! scales fold into bf16 pairs: see `bf16-dot` below); 6 broadcasts
//! and 2 loads feed 12 FMAs per k, under the 2-loads-per-cycle limit. A is packed into
//! 6-row tiles and B into 16-column panels, so that a tile's values of one k are one
//! contiguous line; K is blocked by `kc` and N by `nc` so that the block of B the row tiles
//! sweep stays in L2; decode, GEMM and write-back loops over rows run in parallel. Each
//! tile first prefetches the sums of the tile the sweep takes next (`w` is all of C, out of
//! the caches by the time a K block comes back to a tile), and the write-back takes a row's
//! columns a vector at a time. B is decoded a K block at a time, into panels the GEMM reads
//! back from cache (all of B as f32 is 4-8x its codes: a skinny M spent most of its time
//! writing and reading it), 64 k of a row at a time with the row's codes two such chunks on
//! prefetched (`memref.prefetch`). Where M is skinny (up to 252 rows, 42 tiles of 6 or 21
//! of 12: the decode shape of LLM inference, 16 x N x K, among them), groups of B's panels
//! run in parallel instead of A's row tiles, each over all of K: each panel's block is
//! decoded into its group's one buffer and at once swept by every row tile, so B's decoded
//! values stay in the core's cache, a few row tiles still give every thread work, and each
//! row of B is read in order through K. The byte kernel's B words go the same way.
//!
//! Where M is known when the pass runs and at most two vectors of rows, and that is fewer
//! rows of FMAs than the row tiles (8 lanes: M = 7-8 and 13-16, the decode shape 16 x N x K
//! among them), the f32 kernel takes its narrow form instead (`narrow.rs`): A's rows are
//! the vectors and B's columns are broadcast (a 16 x 6 or 8 x 12 tile), so B is decoded
//! along K as stored, with no transpose, into a buffer each strip of B's columns is
//! decoded into and swept from at once; the same sums in the same order, so the same bits
//! (`narrow=false` keeps the row tiles).
//!
//! Where M is known and small (batch decoding: at most 3 rows, or up to 8 where the scales
//! change along K no more often than every 128, 5 beside the byte kernel and beside row
//! tiles on bf16 pairs, which also leave out the narrow form: `form_of`), the GEMV form
//! runs instead of either kernel (`gemv.rs`): each output a dot product along K, B's rows
//! decoded a vector at a time straight into registers and multiplied with A's rows, up to
//! four rows of B at once; a scale segment's vector accumulators reduced to one vector of
//! lane sums and scaled into the totals once. Where M is known only at run time, each of
//! these forms runs under a branch on it (an f32 GEMV form for each M it takes, a
//! dot-product GEMV form for each of `dot_gemv::rows_for`'s counts: odd M past 8 computes
//! a row more, a copy of A's last; the narrow form's ranges), the row tiles last.
//!
//! Where the byte kernel would run (`dot=i8|vnni`, both formats small integers) and M is
//! known and at most 24, or 32 with no scales along K (at 8 lanes: 8 with MX / NVFP4
//! segments, 12 with segments of 128 or more, 16), the GEMV form runs on the integers
//! instead (`dot_gemv.rs`, a K block of A's values at a time, read from L1 by 64 rows of
//! B, A's rows in pieces where they would leave room for one row of B only, B's vectors
//! of a K block then looked up once where that pays): B's codes looked up as bytes a
//! vector at a time (`pshufb`), A's integers laid out once in the order B's bytes arrive,
//! 4 k of each i32 lane a `vpdpbusd` (or `pmaddubsw` and `pmaddwd`), each chunk's or
//! segment's exact lane sums converted and scaled into f32 totals (MXFP4 1 x 8192 x 8192:
//! 0.6 ms against 2.8 for the f32 GEMV form on two Zen 5 threads). Where the f32 kernel
//! would run on bf16 pairs instead (`bf16-dot=true`: FP8, FP6 E3M2) and M is as small,
//! the same form runs on them (at 8 lanes only where B's patterns are one lookup, FP6
//! E3M2 say): B's codes looked up as their values' bf16 patterns (`vpermi2w`), 2 k of
//! each f32 lane a `vdpbf16ps` (FP8 per tensor 1 x 8192 x 8192: 1.5 ms against 2.2).
//!
//! B's decode (the f32 kernel's larger half at the decode shape) takes eight rows of a
//! panel at a time, a vector of each row's codes at once, and transposes the block in
//! registers into the panel's layout: by bit arithmetic on i32 lanes (`codes::decode`),
//! eight k a step; or with `decode=f16`, where the format allows (lowp-formats'
//! `f16_fields`: every named format but E5M2 FNUZ, custom ones with exponent fields of up
//! to 4 bits), 16 k a step: each code's fields moved into an f16 bit pattern on 16-bit
//! lanes (its NaN codes to an f16 NaN), two 8 x 8 blocks transposed at once, each half
//! widened by the target's f16 -> f32 instruction: B's values times `2^-(15 - bias)`, the
//! power of two moved onto A's table (every product, so every sum, is unchanged). Both
//! give the table's products exactly. A group of rows reaching past B and the last k of a
//! chunk short of a step take the table one code at a time; so does A (its 6-row tiles
//! are not a transpose's width, and at the decode shape it is a few rows).
//!
//! The byte kernel (`dot=i8`) runs where both formats are small integers exactly
//! (`lowp_formats::IntEmbedding`: E2M1 is `n / 2` with `|n| <= 12`, E2M3 `n / 8` with
//! `|n| <= 60`, custom formats alike): codes decode to those integers, four k to a 32-bit
//! word (A's as `n + max_a`, unsigned bytes; B's as `n`, signed), and x86 `pmaddubsw`
//! (u8 x s8, pairs summed to i16) feeds the tile's sums: 4 k per instruction instead of 1
//! per FMA. The sums stay i16 through an interval (scale segment, else K block) where they
//! cannot leave it (`interval x max_a x max_b <= 32767`: E2M1 x E2M1 up to 224 k, E2M1 x
//! E2M3 MX blocks), else each step's pairs are widened by `pmaddwd` with ones into i32. The
//! sums start from minus `max_a` times B's column sums of the interval (taking A's offset
//! away), so at its end they are (widened to i32) the exact integer partial sums,
//! converted to f32 (exact: the kernel runs only where an interval's sum stays within
//! 2^24) and multiplied by `2^-(shift_a + shift_b)`: the same f32 values the f32 kernel
//! sums for these formats, so where the two kernels' intervals are the same (every scale
//! segment; K blocks of per-tensor and per-channel operands while K is at most both
//! kernels' block) their results are the same bits.
//! With `dot=vnni` each step of a sum is one `vpdpbusd` (AVX512-VNNI: the four u8 x s8
//! products of a 32-bit lane added into its i32, unsaturated): the sums are i32 from the
//! first step, so no pair sums, no widening and no i16 bound on the products; formats
//! whose products would saturate `pmaddubsw` (E2M4, `|n| <= 124`) take the kernel too.
//! Formats that are not small integers (FP8, E3M2 FP6, ...) keep the f32 kernel. B's words
//! are made as the f32 kernel's panels, eight rows at a time: 32 codes of a row looked up
//! at once (`pshufb` on 16-byte slices of the integer table), the 8 x 8 block of words
//! transposed in registers; the column sums then come from the stored words, eight
//! columns at once.
//!
//! ```mlir
//! %start = vector.bitcast (vector.load %colsums[...]) : vector<8xi32> to vector<16xi16>
//! %p:12 = scf.for %q = ... iter_args(%start, ...) -> (vector<16xi16>, ...) {  // 4 k a step
//!   %b0 = vector.bitcast (vector.load %bw[...]) : vector<8xi32> to vector<32xi8>
//!   %a = vector.bitcast (vector.broadcast (memref.load %aw[...])) : ... to vector<32xi8>
//!   %pairs = llvm.call_intrinsic "llvm.x86.avx2.pmadd.ub.sw"(%a, %b0) : ... -> vector<16xi16>
//!   arith.addi %acc, %pairs : vector<16xi16>
//! ...
//! %wide = llvm.call_intrinsic "llvm.x86.avx2.pmadd.wd"(%p#0, %ones) : ... -> vector<8xi32>
//! %v = arith.mulf (arith.sitofp %wide), %unit : vector<8xf32>
//! ```
//!
//! Options:
//! * `parallel=true|false` — emit the row-tile loop as `scf.parallel` (default true); a
//!   pipeline turns it into threads with `convert-scf-to-openmp`, or into a plain loop.
//! * `kc=N` — the K block (default 256; rounded up to a multiple of the scale segment and
//!   of 2).
//! * `nc=N` — the N block in columns (default 512: a 256 x 512 f32 block of B is 512 KiB,
//!   inside a 1-2 MiB L2 with room for A).
//! * `lanes=8|16` — f32 lanes per vector: 8 (AVX2, the default) or 16 (AVX-512, with a
//!   12 x 32 tile). `lowp-jit` picks 16 when the host has AVX-512F.
//! * `dot=f32|i8|vnni` — the inner products: f32 FMAs (the default: portable IR), or the
//!   byte kernel where the formats allow (x86 only): `i8` on `pmaddubsw` (AVX2 with
//!   `lanes=8`, AVX512BW with `lanes=16`), `vnni` on `vpdpbusd` (AVX512-VNNI, and AVX512VL
//!   with `lanes=8`). `lowp-jit` picks vnni, else i8, where the host has the instructions.
//! * `bf16-dot=true|false` — the f32 kernel's products as bf16 pairs (default false): A's
//!   tiles (straight from the codes, through tables of the values' bf16 patterns) and B's
//!   decoded panels packed two k to a 32-bit word of two bf16, and per two k
//!   `2 mr` x86 `vdpbf16ps` (AVX512-BF16; AVX512VL with `lanes=8`) instead of `4 mr`
//!   FMAs, where every value of both formats and every product is an exact normal number
//!   (`bf16_pairs`: FP8, E3M2 FP6, FNUZ, most custom formats; the byte kernel keeps the
//!   formats it takes). Each product is exact either way, but the instruction adds a
//!   pair's two to the sum in its own order and roundings, not the FMAs' one k at a time:
//!   the results are within the contract's f32 bound, not the f32 kernel's bits. For up to
//!   24 rows of A (32 with no scales along K, or with MX's E8M0 scales, which from 4 rows
//!   fold into the patterns) the GEMV form runs on bf16 pairs too (`dot_gemv.rs`;
//!   AVX512BW's `vpermi2w` looks B's codes up). Past those rows the row tiles fold MX's
//!   E8M0 scales as well where a scan of both operands' scales finds every one within
//!   `2^-47 ..= 2^32` or, not NaN, scaling a block of ±0 codes (`scale_folds_if`: a zero
//!   times any finite scale is zero; quantizers give all-zero blocks 2^-127)
//!   (`tiles_fold`; else a second copy scales each segment): A's words
//!   and B's decoded values times their scales as the words are made (exact), the sums
//!   run along each K block as without scales, in 12 x 32 tiles at 16 lanes instead of
//!   6 x 32 carrying sums through the segments (MXFP8 512 x 4096 x 4096, one Zen 5
//!   thread: 45.3 -> 40.1 ms, per tensor 40.8). `lowp-jit` picks true when the host has
//!   AVX512-BF16 and AVX512BW.
//! * `decode=bits|f16` — how the f32 kernel decodes B: bit arithmetic (the default: any
//!   target), or through f16 where the format allows (a target without an f16 -> f32
//!   instruction, x86 without F16C, gets a library call per value from LLVM). `lowp-jit`
//!   picks f16 when the host has it.
//! * `narrow=true|false` — the f32 kernel's narrow form where M allows (default true).
//! * `gemv=true|false` — the GEMV form where M allows (default true).
//!
//! Runs on `func.func`. Dependent dialects: arith, math, memref, scf, vector, llvm.

use lowp_formats::{HalfFields, IntEmbedding, ScaleLayout, ScaledFormat};
use melior::dialect::arith::CmpiPredicate;

use melior::ir::operation::{OperationLike, WalkOrder, WalkResult};
use melior::ir::{OperationRef, ShapedTypeLike, Value, ValueLike};

use crate::codes;
use crate::expand_quantize::{
    ceil_div, code_format, expand_op, int_table, layout_attr_of, load_code, loop_dialects, operand,
    scaled_decode_table, scaled_decode_values, scales_exactly, storage_cast, unsupported, Decode,
    Scaled,
};
use crate::ir::Emitter;
use crate::registry::{OptionDef, OptionKind, PassDef, PassOptions};
use crate::PassError;

mod dot_gemv;
mod gemv;
mod narrow;

/// K steps the decode phases take a row at a time: 64 FP8 codes are one cache line, and
/// a 64 x 16 chunk of a B panel (4 KiB of f32) stays in L1 while its 16 rows fill it.
const DECODE_CHUNK: i64 = 64;

/// The kernels run in parallel over groups of B's panels rather than A's row tiles where
/// M takes at most `SKINNY_ROWS / mr` row tiles (see `Gemm::sweep`). With each group
/// running through all of K (A's K block read again by every group), the panel form beat
/// the row-tile form at every M measured up to 256 (FP8 per-tensor, N = K = 8192, two
/// threads: M = 72 70 -> 56 ms, 128 114 -> 98, 256 209 -> 189; MXFP4 M = 256 99 -> 98),
/// and no longer at 384 x 4096 x 4096 (73 -> 70) or 2048^3 (MXFP4 46 -> 54).
const SKINNY_ROWS: i64 = 256;

/// At most this many of B's panels per parallel iteration in the skinny form of
/// `Gemm::sweep`: they share one slot of the panel buffers, allocated by the iteration,
/// and A's K blocks are read again for each group.
const SLOT_PANELS: i64 = 8;

/// How many groups of panels the skinny form aims for (fewer panels a group where N is
/// small), so that threads have groups to share.
const SKINNY_GROUPS: i64 = 64;

/// How many chunks ahead the decode prefetches a row's codes.
const PREFETCH_CHUNKS: i64 = 2;

/// The longest K block whose panel buffers have a static size (`Gemm::block_buffer`):
/// 512 KiB a slot of f32 at 32 columns.
const STATIC_KC: i64 = 4096;

/// The register tile of the micro-kernel: `mr` rows by two vectors of `lanes` floats.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tile {
    /// f32 lanes of one vector register (8: AVX2, 16: AVX-512).
    pub lanes: i64,
    /// Rows of the tile.
    pub mr: i64,
}

impl Tile {
    /// The tile for a vector width: 6 x 16 with 8 lanes (12 of 16 ymm for the partial sums,
    /// 2 for B, 1 broadcast); 12 x 32 with 16 lanes (24 of 32 zmm). Per k, `mr` broadcasts
    /// and 2 vector loads feed `2 mr` FMAs: under two loads per FMA pair, so the FMA ports,
    /// not the loads, set the pace.
    pub const fn for_lanes(lanes: i64) -> Self {
        Self {
            lanes,
            mr: if lanes >= 16 { 12 } else { 6 },
        }
    }

    /// Columns of the tile: two vectors.
    pub const fn nr(self) -> i64 {
        2 * self.lanes
    }
}

/// The pass definition.
pub const PASS: PassDef = PassDef {
    argument: "lowp-to-loops",
    name: "LowpToLoops",
    description: "Lower lowp.scaled_matmul (and any quantization op) to a decode phase and a \
                  register-blocked, vectorized f32 GEMM in scf/vector/arith/memref",
    op_name: Some("func.func"),
    options: &[
        OptionDef {
            name: "parallel",
            default: "true",
            description:
                "Emit the row-tile loop as scf.parallel (threads via convert-scf-to-openmp)",
            kind: OptionKind::Bool,
        },
        OptionDef {
            name: "kc",
            default: "256",
            description: "K block of the GEMM (rounded up to a multiple of the scale segment \
                          and of 2)",
            kind: OptionKind::UInt {
                min: 1,
                max: 1 << 20,
            },
        },
        OptionDef {
            name: "nc",
            default: "512",
            description: "N block of the GEMM in columns (rounded up to the tile width)",
            kind: OptionKind::UInt {
                min: 1,
                max: 1 << 20,
            },
        },
        OptionDef {
            name: "lanes",
            default: "8",
            description: "f32 lanes per vector: 8 (AVX2, 6x16 tile) or 16 (AVX-512, 12x32 tile)",
            kind: OptionKind::Choice(&["8", "16"]),
        },
        OptionDef {
            name: "dot",
            default: "f32",
            description: "Inner products: f32 FMAs, or x86 byte dot products where both \
                          formats are small integers exactly (FP4 E2M1, FP6 E2M3, ...), else \
                          f32: i8 (pmaddubsw; AVX2 with lanes=8, AVX512BW with lanes=16) or \
                          vnni (vpdpbusd, 4 k into i32 sums an instruction; AVX512-VNNI, \
                          with AVX512VL for lanes=8)",
            kind: OptionKind::Choice(&["f32", "i8", "vnni"]),
        },
        OptionDef {
            name: "decode",
            default: "bits",
            description: "How the f32 kernel decodes B, eight codes of a row at once: bits \
                          (integer arithmetic to f32, any target) or f16 (each code's fields \
                          moved into an f16 pattern on 16-bit lanes, widened by the target's \
                          f16 -> f32 instruction (x86 F16C, AArch64; elsewhere LLVM calls a \
                          library function per value), the power of two between f16 and the \
                          format moved onto A's table, where lowp-formats' f16_fields allows: \
                          all formats but E5M2 FNUZ and exponent fields over 4 bits)",
            kind: OptionKind::Choice(&["bits", "f16"]),
        },
        OptionDef {
            name: "bf16-dot",
            default: "false",
            description: "The f32 kernel's products in bf16 pairs (x86 vdpbf16ps, AVX512-BF16; \
                          the GEMV form's lookups AVX512BW's vpermi2w; with AVX512VL for \
                          lanes=8: two k an instruction) where every value of both formats, \
                          and every product, is an exact normal bf16 / f32 number (FP8, FP6 \
                          E3M2, ...; formats the byte kernel takes keep it)",
            kind: OptionKind::Bool,
        },
        OptionDef {
            name: "narrow",
            default: "true",
            description: "Where M is static and at most two vectors of lanes (16 with 8 \
                          lanes), the f32 kernel's narrow form: A's rows as the vectors, B's \
                          columns broadcast, B decoded along K with no transpose",
            kind: OptionKind::Bool,
        },
        OptionDef {
            name: "gemv",
            default: "true",
            description: "Where M is small (at most 3 rows; up to 8 with per-tensor, \
                          per-channel or 128-long scale blocks), the GEMV form: each output a \
                          dot product along K, B's rows decoded into registers; where the byte \
                          kernel would run (dot=i8|vnni) or the f32 kernel on bf16 pairs \
                          (bf16-dot=true), up to 24 rows on its integers or pairs, 32 with no \
                          scales along K or on pairs with MX scales (at lanes=8: 8 with MX / \
                          NVFP4 scales, 12 with 128-long blocks, 16; pairs with MX 16)",
            kind: OptionKind::Bool,
        },
    ],
    dependent_dialects: || {
        // `dot=i8` calls x86 intrinsics (`llvm.call_intrinsic`).
        let mut d = loop_dialects();
        d.push(melior::dialect::DialectHandle::llvm());
        d
    },
    run,
};

/// Tiling parameters of one matmul.
#[derive(Clone, Copy, Debug)]
struct Plan {
    parallel: bool,
    tile: Tile,
    /// Tile-width panels of B per N block.
    nc_panels: i64,
    /// K segment over which both scales are constant; `None` when neither operand's scale
    /// changes along K (one segment: scales applied in the write-back).
    seg: Option<i64>,
    /// K block, a multiple of `seg`.
    kc: i64,
    /// `dot=i8|vnni`: the byte kernel where the formats allow.
    dot_i8: bool,
    /// `dot=vnni`: its sums by `vpdpbusd`.
    vnni: bool,
    /// `decode=f16`: B decoded through f16 where its format allows.
    f16_decode: bool,
    /// `bf16-dot=true`: the f32 kernel on bf16 pairs where the formats allow
    /// ([`bf16_pairs`]).
    bf16: bool,
    /// `narrow=true`: the narrow form where M is at most two vectors (`narrow::vectors`).
    narrow: bool,
    /// `gemv=true`: the GEMV form where M is as small as `gemv::takes` asks.
    gemv: bool,
    /// Both operands' scales are E8M0 (MX): powers of two, which the GEMV form may fold
    /// into the decoded values (`gemv::folds`).
    e8m0: bool,
    /// The row tiles keep a tile's f32 sums in registers through a K block's segments
    /// (`Plan::carrying_sums`).
    carry: bool,
    /// The row tiles on bf16 pairs with MX's E8M0 scales folded into A's words and B's
    /// panels (`tiles_fold`): the sums run along each K block, unscaled per segment.
    folded: bool,
    /// Both operands' scales are NVFP4's UE4M3: every scale product within `2^-18 ..=
    /// 448^2`, so a power of two of the byte kernel's can move onto A's scales
    /// (`Plan::unit_in_scales`).
    ue4m3: bool,
}

impl Plan {
    /// The row tiles' plan: where segments are short (MX's 32, NVFP4's 16) and vectors
    /// have 16 lanes, tiles of 6 x 32 whose f32 sums stay in registers through a K block's
    /// segments (12 partial sums and 12 running ones in 24 of 32 zmm), instead of 12 x 32
    /// folding each segment into W in memory: there, 24 partial sums left no register for
    /// W's tile, and LLVM kept it in stack slots, so every segment's epilogue (a scale
    /// product, an FMA, W's store and the slots' traffic for each of 24 vectors) cost as
    /// much as the segment's dot products on MXFP4.
    fn carrying_sums(self) -> Self {
        match self.seg {
            Some(s) if s <= 32 && self.tile.lanes == 16 => Self {
                tile: Tile { mr: 6, ..self.tile },
                carry: true,
                ..self
            },
            _ => self,
        }
    }

    /// Whether the byte kernel multiplies its formats' unit (`2^-(shift_a + shift_b)`)
    /// into A's segment scales instead of into each segment's converted sums: where both
    /// scales are UE4M3, `sa * unit` is exact and `(sa * unit) * sb` is `(sa * sb) * unit`,
    /// the contract's product, exactly (neither leaves f32's normal range), so every FMA
    /// `sum * (sa * sb) + w` keeps its bits and each segment saves a multiply a sum. Not
    /// with E8M0 scales: `sa * sb` can overflow f32 where the product with the unit does
    /// not, or round below its normal range where it would not.
    fn unit_in_scales(&self) -> bool {
        self.seg.is_some() && self.ue4m3
    }

    /// B's f16 fields where the f32 kernels decode B through f16 patterns for these
    /// formats (`decode=f16` and `f16_route`), else `None` (the bit arithmetic).
    fn b_through_f16(&self, fa: ScaledFormat, fb: ScaledFormat) -> Option<HalfFields> {
        self.f16_decode.then(|| f16_route(fa, fb)).flatten()
    }

    /// Whether the f32 kernel (row tiles) runs on bf16 pairs for these formats.
    fn takes_bf16(&self, fa: ScaledFormat, fb: ScaledFormat) -> bool {
        let pow = self.b_through_f16(fa, fb).map_or(0, |f| f.shift);
        self.bf16 && bf16_pairs(fa, fb, pow, self.seg)
    }
}

fn gcd(a: i64, b: i64) -> i64 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

/// The K block of a layout when its scale changes along K.
fn k_block(l: ScaleLayout) -> Option<i64> {
    match l {
        ScaleLayout::Mx { block } | ScaleLayout::Nvfp4 { block, .. } => Some(block as i64),
        ScaleLayout::Blockwise { cols, .. } => Some(cols as i64),
        ScaleLayout::PerTensor | ScaleLayout::PerChannel => None,
    }
}

/// The K segment over which neither operand's scale changes (the gcd of the two K blocks;
/// `None` when neither scale changes along K).
pub(crate) fn segment(la: ScaleLayout, lb: ScaleLayout) -> Option<i64> {
    match (k_block(la), k_block(lb)) {
        (Some(a), Some(b)) => Some(gcd(a, b)),
        (a, b) => a.or(b),
    }
}

fn plan(la: ScaleLayout, lb: ScaleLayout, options: &PassOptions) -> Plan {
    let seg = segment(la, lb);
    // K blocks start at even k: the vector decodes read packed FP4 codes two to a byte
    // from a block's start (an odd start read the neighbouring nibbles).
    let unit = match seg {
        Some(s) if s % 2 == 0 => s,
        Some(s) => 2 * s,
        None => 2,
    };
    let kc = (options.uint("kc") as i64 + unit - 1) / unit * unit;
    let tile = Tile::for_lanes(if options.choice("lanes") == "16" {
        16
    } else {
        8
    });
    let nc = options.uint("nc") as i64;
    Plan {
        parallel: options.flag("parallel"),
        tile,
        nc_panels: (nc + tile.nr() - 1) / tile.nr(),
        seg,
        kc,
        dot_i8: options.choice("dot") != "f32",
        vnni: options.choice("dot") == "vnni",
        f16_decode: options.choice("decode") == "f16",
        bf16: options.flag("bf16-dot"),
        narrow: options.flag("narrow"),
        gemv: options.flag("gemv"),
        e8m0: matches!((la, lb), (ScaleLayout::Mx { .. }, ScaleLayout::Mx { .. })),
        carry: false,
        folded: false,
        ue4m3: matches!(
            (la, lb),
            (ScaleLayout::Nvfp4 { .. }, ScaleLayout::Nvfp4 { .. })
        ),
    }
}

fn run<'c, 'a>(func: OperationRef<'c, 'a>, options: &PassOptions) -> Result<(), PassError> {
    lower_lowp_ops(func, |e, op| lower_scaled_matmul(e, op, options, func))
}

/// Replace every lowp op of `func` (but `lowp.storage_cast`): `lowp.scaled_matmul` through
/// `matmul`, the quantization ops as `lowp-expand-quantize` does (bit decode). Shared by the
/// matmul lowerings.
pub(crate) fn lower_lowp_ops<'c, 'a>(
    func: OperationRef<'c, 'a>,
    matmul: impl Fn(&Emitter<'c, 'a>, OperationRef<'c, 'a>) -> Result<(), PassError>,
) -> Result<(), PassError> {
    // `to_ref` borrows the ContextRef itself: keep it alive for the whole run.
    let ctx_ref = func.context();
    // SAFETY: the context outlives the pass run, and `ctx_ref` outlives `ctx`.
    let ctx = unsafe { ctx_ref.to_ref() };
    let mut targets = Vec::new();
    func.walk(WalkOrder::PreOrder, |op| {
        let name = op.name();
        if name
            .as_string_ref()
            .as_str()
            .is_ok_and(|n| n.starts_with("lowp.") && n != "lowp.storage_cast")
        {
            targets.push(op.to_raw());
        }
        WalkResult::Advance
    });
    for raw in targets {
        // SAFETY: collected from the live function above and not yet erased.
        let op: OperationRef<'c, 'a> = unsafe { OperationRef::from_raw(raw) };
        crate::expand_quantize::require_memrefs(op)?;
        let e = Emitter::before(ctx, op).ok_or_else(|| unsupported(op, "op is not in a block"))?;
        if op.name().as_string_ref().as_str() == Ok("lowp.scaled_matmul") {
            matmul(&e, op)?;
        } else {
            expand_op(&e, op, Decode::Bits, func)?;
        }
        // SAFETY: the op has no results and its replacement is in place.
        unsafe { mlir_sys::mlirOperationDestroy(raw) };
    }
    Ok(())
}

/// Operand indices of `lowp.scaled_matmul` from its `operandSegmentSizes`.
pub(crate) struct MatmulOperands<'c, 'a> {
    pub(crate) lhs: Value<'c, 'a>,
    pub(crate) lhs_scales: Value<'c, 'a>,
    pub(crate) lhs_global: Option<Value<'c, 'a>>,
    pub(crate) rhs: Value<'c, 'a>,
    pub(crate) rhs_scales: Value<'c, 'a>,
    pub(crate) rhs_global: Option<Value<'c, 'a>>,
    pub(crate) bias: Option<Value<'c, 'a>>,
    pub(crate) out: Value<'c, 'a>,
}

pub(crate) fn matmul_operands<'c, 'a>(
    op: OperationRef<'c, 'a>,
) -> Result<MatmulOperands<'c, 'a>, PassError> {
    let sizes = op
        .attribute("operandSegmentSizes")
        .map_err(|_| unsupported(op, "missing operandSegmentSizes"))?;
    let sizes = crate::ir::dense_i32s(sizes)
        .filter(|s| s.len() == 8)
        .ok_or_else(|| unsupported(op, "operandSegmentSizes is not 8 x i32"))?;
    let mut next = 0usize;
    let mut take = |present: bool| -> Result<Option<Value<'c, 'a>>, PassError> {
        if !present {
            return Ok(None);
        }
        let v = operand(op, next)?;
        next += 1;
        Ok(Some(v))
    };
    let lhs = take(true)?.expect("present");
    let lhs_scales = take(true)?.expect("present");
    let lhs_global = take(sizes[2] == 1)?;
    let rhs = take(true)?.expect("present");
    let rhs_scales = take(true)?.expect("present");
    let rhs_global = take(sizes[5] == 1)?;
    let bias = take(sizes[6] == 1)?;
    let out = take(true)?.expect("present");
    Ok(MatmulOperands {
        lhs,
        lhs_scales,
        lhs_global,
        rhs,
        rhs_scales,
        rhs_global,
        bias,
        out,
    })
}

/// One operand's decode information.
struct Side<'c, 'a> {
    format: ScaledFormat,
    packed: bool,
    bits: Value<'c, 'a>,
    scaled: Scaled<'c, 'a>,
    rows: Value<'c, 'a>,
    /// A's: whether all of its MX scales may be folded into its values (`scales_fold`), an
    /// `i1` made once before the forms (each copy of a run-time M's reads it) where the
    /// formats could fold (`gemv::folds`, not the byte kernel); see `Side::folds`.
    folds_once: Option<Value<'c, 'a>>,
}

impl<'c, 'a> Side<'c, 'a> {
    /// Whether all of its MX scales fold (`scales_fold`): the flag made once, else a scan
    /// here.
    fn folds(&self, e: &Emitter<'c, 'a>, k: Value<'c, 'a>) -> Value<'c, 'a> {
        self.folds_once.unwrap_or_else(|| scales_fold(e, self, k))
    }

    /// The entry of `table` (one per code) for the code at row `rr`, k = `kk`.
    fn table_value(
        &self,
        e: &Emitter<'c, 'a>,
        table: Value<'c, 'a>,
        (rr, kk): (Value<'c, 'a>, Value<'c, 'a>),
    ) -> Value<'c, 'a> {
        let code = load_code(e, self.bits, self.packed, self.format.bit_width(), rr, kk);
        e.load(table, &[e.index_castui(code, e.index_type())])
    }
}

fn lower_scaled_matmul<'c, 'a>(
    e: &Emitter<'c, 'a>,
    op: OperationRef<'c, 'a>,
    options: &PassOptions,
    func: OperationRef<'c, 'a>,
) -> Result<(), PassError> {
    let o = matmul_operands(op)?;
    let la = layout_attr_of(op, "lhs_layout")?;
    let lb = layout_attr_of(op, "rhs_layout")?;
    let plan = plan(la, lb, options);
    let side = |codes: Value<'c, 'a>, scales, global, layout| -> Result<Side<'c, 'a>, PassError> {
        let (format, packed) = code_format(op, codes)?;
        let bits =
            storage_cast(e, codes).ok_or_else(|| unsupported(op, "codes are not castable"))?;
        Ok(Side {
            format,
            packed,
            bits,
            scaled: Scaled::new(e, op, layout, scales, global)?,
            rows: e.dim(codes, 0),
            folds_once: None,
        })
    };
    let mut a = side(o.lhs, o.lhs_scales, o.lhs_global, la)?;
    let b = side(o.rhs, o.rhs_scales, o.rhs_global, lb)?;
    let m = a.rows;
    let k = {
        let d = e.dim(o.lhs, 1);
        if a.packed {
            e.muli(d, e.index(2))
        } else {
            d
        }
    };
    let bytes = if plan.dot_i8 {
        byte_dot(plan.seg, plan.kc, a.format, b.format, plan.vnni)
    } else {
        None
    };
    if bytes.is_none() && gemv::folds(&plan, (a.format, b.format)) {
        a.folds_once = Some(scales_fold(e, &a, k));
    }
    let mm = Matmul {
        op,
        func,
        o: &o,
        plan,
        a: &a,
        b: &b,
        k,
        bytes,
    };
    let formats = (a.format, b.format);
    let static_m = crate::ir::static_index(m);
    if static_m.is_some() {
        return lower_form(e, &mm, form_of(&plan, static_m, formats, bytes.is_some()));
    }
    // M known only at run time: the forms of a few rows where M turns out to take them
    // (batch decoding of a few rows through the GEMV forms: the f32 one a copy for each M,
    // the dot-product ones a copy for each count of `dot_gemv::rows_for`; the decode
    // shape's 13-16 rows through the narrow one), each under its own branch, else the row
    // tiles.
    let mut branches: Vec<(i64, i64, Form)> = Vec::new();
    for rows in 1..=2 * plan.tile.lanes {
        let form = match form_of(&plan, Some(rows), formats, bytes.is_some()) {
            form @ (Form::ByteGemv(_) | Form::PairGemv(_)) => {
                let covered = dot_gemv::rows_for(rows);
                let widened = form_of(&plan, Some(covered), formats, bytes.is_some());
                if std::mem::discriminant(&widened) == std::mem::discriminant(&form) {
                    widened
                } else {
                    form
                }
            }
            form => form,
        };
        match (form, branches.last_mut()) {
            (Form::Tiles, _) => {}
            (form, Some((_, hi, last))) if *last == form && *hi == rows - 1 => *hi = rows,
            (form, _) => branches.push((rows, rows, form)),
        }
    }
    let failed = std::cell::RefCell::new(None);
    run_time_forms(e, &mm, &branches, &failed);
    match failed.into_inner() {
        Some(why) => Err(why),
        None => Ok(()),
    }
}

/// What the forms of one matmul share.
struct Matmul<'r, 'c, 'a> {
    op: OperationRef<'c, 'a>,
    func: OperationRef<'c, 'a>,
    o: &'r MatmulOperands<'c, 'a>,
    plan: Plan,
    a: &'r Side<'c, 'a>,
    b: &'r Side<'c, 'a>,
    k: Value<'c, 'a>,
    bytes: Option<ByteDot>,
}

/// The forms of `branches` (`(lo, hi, form)`: M in `lo..=hi` takes `form`), each under a
/// branch on the run-time M, the row tiles last; the first error into `failed`.
fn run_time_forms<'c, 'a>(
    e: &Emitter<'c, 'a>,
    mm: &Matmul<'_, 'c, 'a>,
    branches: &[(i64, i64, Form)],
    failed: &std::cell::RefCell<Option<PassError>>,
) {
    let attempt = |e: &Emitter<'c, 'a>, form| {
        if let Err(why) = lower_form(e, mm, form) {
            failed.borrow_mut().get_or_insert(why);
        }
    };
    let Some((&(lo, hi, form), rest)) = branches.split_first() else {
        return attempt(e, Form::Tiles);
    };
    let m = mm.a.rows;
    let inside = e.andi(
        e.cmpi(CmpiPredicate::Uge, m, e.index(lo)),
        e.cmpi(CmpiPredicate::Ule, m, e.index(hi)),
    );
    e.if_else(
        inside,
        &[],
        |e| {
            attempt(e, form);
            vec![]
        },
        |e| {
            run_time_forms(e, mm, rest, failed);
            vec![]
        },
    );
}

/// One matmul in `form`: its decode, GEMM and write-back.
fn lower_form<'c, 'a>(
    e: &Emitter<'c, 'a>,
    mm: &Matmul<'_, 'c, 'a>,
    form: Form,
) -> Result<(), PassError> {
    let Matmul {
        op,
        func,
        o,
        plan,
        a,
        b,
        k,
        bytes,
    } = *mm;
    let zero = e.index(0);
    let gemv_sums = match form {
        Form::Gemv(rows) => {
            let (via_f16, table_a, table_b) = f32_tables(e, func, &plan, a, b)?;
            let tables = (table_a, table_b);
            Some(gemv::gemm(e, &plan, (a, b), (rows, k), tables, via_f16).w)
        }
        Form::ByteGemv(rows) => {
            let d = bytes.ok_or_else(|| unsupported(op, "no byte kernel for these formats"))?;
            let products = dot_gemv::Products::Bytes(d);
            Some(dot_gemv::gemm(e, &plan, (a, b), (rows, k), products, func)?)
        }
        Form::PairGemv(rows) => {
            let products = dot_gemv::Products::Bf16;
            Some(dot_gemv::gemm(e, &plan, (a, b), (rows, k), products, func)?)
        }
        _ => None,
    };
    if let Some(w) = gemv_sums {
        write_back(
            e,
            &plan,
            (op, o),
            (a, b),
            &|e, r, c| e.load(w, &[r, c]),
            &|e, r, c| {
                (
                    a.scaled.block_value(e, r, zero),
                    b.scaled.block_value(e, c, zero),
                )
            },
            None,
        )?;
        e.dealloc(w);
        return Ok(());
    }
    if let Form::Narrow(mv) = form {
        let (via_f16, table_a, table_b) = f32_tables(e, func, &plan, a, b)?;
        let interval = plan.seg.unwrap_or(plan.kc);
        let tables = (table_a, table_b);
        let nw = narrow::gemm(e, &plan, (a, b), k, mv, tables, via_f16, interval);
        let nr = e.index(nw.nr);
        let strip = |e: &Emitter<'c, 'a>, c| (e.divui(c, nr), e.remui(c, nr));
        write_back(
            e,
            &plan,
            (op, o),
            (a, b),
            &|e, r, c| {
                let (p, j) = strip(e, c);
                e.load(nw.w, &[p, j, r])
            },
            &|e, r, c| {
                let (p, j) = strip(e, c);
                (e.load(nw.sa, &[zero, r]), e.load(nw.sb, &[p, zero, j]))
            },
            None,
        )?;
        for buffer in [nw.sa, nw.sb, nw.w] {
            e.dealloc(buffer);
        }
        return Ok(());
    }
    lower_tiles(e, mm)
}

/// The row-tile form (f32 or byte kernel). On bf16 pairs with MX's E8M0 scales where
/// `tiles_fold` allows, two copies under a branch on the scales: folded into A's words and
/// B's panels where every scale of both operands folds (`scales_fold`), else
/// each segment's sums scaled into W.
fn lower_tiles<'c, 'a>(e: &Emitter<'c, 'a>, mm: &Matmul<'_, 'c, 'a>) -> Result<(), PassError> {
    if mm.bytes.is_some() || !tiles_fold(&mm.plan, (mm.a.format, mm.b.format)) {
        return tiles(e, mm, false);
    }
    let ok = e.andi(mm.a.folds(e, mm.k), mm.b.folds(e, mm.k));
    let failed = std::cell::RefCell::new(None);
    let attempt = |e: &Emitter<'c, 'a>, folded| {
        if let Err(why) = tiles(e, mm, folded) {
            failed.borrow_mut().get_or_insert(why);
        }
        vec![]
    };
    e.if_else(ok, &[], |e| attempt(e, true), |e| attempt(e, false));
    match failed.into_inner() {
        Some(why) => Err(why),
        None => Ok(()),
    }
}

/// Whether the row tiles on bf16 pairs may fold both operands' scales into their values:
/// both E8M0 in segments, both formats' values as `gemv::folds` asks, and every value
/// times the f16 decode's power of two (A's `2^pow`, B's `2^-pow`) and a scale of
/// `gemv::in_fold_range` a normal bf16 number. A folded product is then the exact
/// `a sa b sb`, nonzero ones within `2^-126 ..= 2^96` (see `gemv::FOLD_BELOW`), which the
/// pairs' instruction sums as it sums unscaled products: within the contract's bound of
/// the f32 sum in any order.
fn tiles_fold(plan: &Plan, (fa, fb): (ScaledFormat, ScaledFormat)) -> bool {
    let pow = plan.b_through_f16(fa, fb).map_or(0, |f| f.shift);
    let normal = |f: ScaledFormat, pow: i32| {
        let low = f64::from(f.min_positive()) * f64::from(pow - gemv::FOLD_BELOW as i32).exp2();
        let high = f64::from(f.max_finite()) * f64::from(pow + gemv::FOLD_ABOVE as i32).exp2();
        low >= f64::from(f32::MIN_POSITIVE) && high < 2f64.powi(127)
    };
    // (`takes_bf16` asks for even segments, `folds` for segments.)
    plan.takes_bf16(fa, fb) && gemv::folds(plan, (fa, fb)) && normal(fa, pow) && normal(fb, -pow)
}

/// Whether every E8M0 scale of `side` (each row's blocks of K) is within
/// `gemv::in_fold_range` (an `i1`): a scan of the scales as stored, `SCAN_BYTES` of a row
/// at a time, its last few one at a time.
fn scales_in_fold_range<'c, 'a>(
    e: &Emitter<'c, 'a>,
    side: &Side<'c, 'a>,
    k: Value<'c, 'a>,
) -> Value<'c, 'a> {
    const SCAN_BYTES: u64 = 32;
    let (zero, one) = (e.index(0), e.index(1));
    let ScaleLayout::Mx { block } = side.scaled.layout else {
        unreachable!("folding takes MX scales")
    };
    let blocks = ceil_div(e, k, e.index(block as i64));
    let width = e.index(SCAN_BYTES as i64);
    let whole = e.muli(e.divui(blocks, width), width);
    // Codes `127 - FOLD_BELOW ..= 127 + FOLD_ABOVE`, as `gemv::in_fold_range`, on bytes.
    let (low, span) = (127 - gemv::FOLD_BELOW, gemv::FOLD_BELOW + gemv::FOLD_ABOVE);
    let (low, span) = (
        e.int_splat(8, low, SCAN_BYTES),
        e.int_splat(8, span, SCAN_BYTES),
    );
    let start = e.int_splat(1, 1, SCAN_BYTES);
    let scales = side.scaled.scales;
    let ok = e.for_loop(zero, side.rows, one, &[start, e.bool(true)], |e, r, ok| {
        let vector = e.for_loop(zero, whole, width, &ok[..1], |e, s, ok| {
            let codes = e.vload(scales, &[r, s], SCAN_BYTES);
            let inside = e.cmpi(CmpiPredicate::Ule, e.subi(codes, low), span);
            vec![e.andi(ok[0], inside)]
        });
        let tail = e.for_loop(whole, blocks, one, &ok[1..], |e, s, ok| {
            let stored = e.load(scales, &[r, s]);
            vec![e.andi(ok[0], gemv::in_fold_range(e, stored))]
        });
        vec![vector[0], tail[0]]
    });
    e.andi(e.reduce("and", ok[0]), ok[1])
}

/// The bits of a code of `format` that are all clear exactly where it decodes to ±0: the
/// sign bit left out where -0 is a code, every bit where 0 is the only zero (the FNUZ
/// formats, whose -0 pattern is NaN). `None` where no one mask tells the zeros.
fn zero_code_mask(format: ScaledFormat) -> Option<u8> {
    let width = format.bit_width();
    let all = ((1u32 << width) - 1) as u8;
    let tells = |mask: u8| (0..=all).all(|c| (format.decode(c) == 0.0) == (c & mask == 0));
    [all & !(1 << (width - 1)), all]
        .into_iter()
        .find(|&mask| tells(mask))
}

/// Whether the codes of `side`'s row `r` at k in `lo..hi` all decode to ±0 (`mask` from
/// `zero_code_mask`), an `i1`: 16 at a time where `whole_16s` says `lo..hi` is whole 16s
/// from a multiple of 16 (packed codes: whole bytes), else one at a time.
fn codes_zero<'c, 'a>(
    e: &Emitter<'c, 'a>,
    side: &Side<'c, 'a>,
    r: Value<'c, 'a>,
    (lo, hi): (Value<'c, 'a>, Value<'c, 'a>),
    mask: u8,
    whole_16s: bool,
) -> Value<'c, 'a> {
    const N: u64 = 16;
    if whole_16s {
        let (zero_v, mask_v) = (e.int_splat(16, 0, N), e.int_splat(16, mask as i64, N));
        let step = e.index(N as i64);
        let ok = e.for_loop(lo, hi, step, &[e.int_splat(1, 1, N)], |e, kk, ok| {
            let codes = load_codes(e, side, (r, kk), N, 16);
            let zero = e.cmpi(CmpiPredicate::Eq, e.andi(codes, mask_v), zero_v);
            vec![e.andi(ok[0], zero)]
        });
        return e.reduce("and", ok[0]);
    }
    let width = side.format.bit_width();
    e.for_loop(lo, hi, e.index(1), &[e.bool(true)], |e, kk, ok| {
        let code = load_code(e, side.bits, side.packed, width, r, kk);
        let zero = e.cmpi(
            CmpiPredicate::Eq,
            e.andi(code, e.i32(mask as u32)),
            e.i32(0),
        );
        vec![e.andi(ok[0], zero)]
    })[0]
}

/// Whether the E8M0 scale `stored` (as stored, `i8` or `i32`) may be folded into the
/// values of the codes it scales (an `i1`): within `gemv::in_fold_range`, or, not NaN,
/// with every one of those codes ±0 (`zero`, emitted only where the scale is out of
/// range). A zero times any finite scale is exactly zero: quantizers that give an
/// all-zero block E8M0's least scale, 2^-127, would otherwise send it to the unfolded path.
fn scale_folds_if<'c, 'a>(
    e: &Emitter<'c, 'a>,
    stored: Value<'c, 'a>,
    zero: impl FnOnce(&Emitter<'c, 'a>) -> Value<'c, 'a>,
) -> Value<'c, 'a> {
    e.if_else(
        gemv::in_fold_range(e, stored),
        &[e.int_type(1)],
        |e| vec![e.bool(true)],
        |e| {
            let code = gemv::e8m0_code(e, stored);
            let not_nan = e.cmpi(CmpiPredicate::Ne, code, e.i32(0xFF));
            vec![e.andi(not_nan, zero(e))]
        },
    )[0]
}

/// `scale_folds_if` for the scale `stored` of `side`'s row `r` and its codes at k in
/// `lo..hi` (`span` of them but at K's end), read as codes (`codes_zero`).
fn scale_folds<'c, 'a>(
    e: &Emitter<'c, 'a>,
    side: &Side<'c, 'a>,
    stored: Value<'c, 'a>,
    r: Value<'c, 'a>,
    (lo, hi): (Value<'c, 'a>, Value<'c, 'a>),
    span: i64,
) -> Value<'c, 'a> {
    let Some(mask) = zero_code_mask(side.format) else {
        return gemv::in_fold_range(e, stored);
    };
    scale_folds_if(e, stored, |e| {
        if span % 16 != 0 {
            return codes_zero(e, side, r, (lo, hi), mask, false);
        }
        // 16 codes at a time but for K's last, shorter block.
        let whole = e.cmpi(CmpiPredicate::Eq, e.subi(hi, lo), e.index(span));
        e.if_else(
            whole,
            &[e.int_type(1)],
            |e| vec![codes_zero(e, side, r, (lo, hi), mask, true)],
            |e| vec![codes_zero(e, side, r, (lo, hi), mask, false)],
        )[0]
    })
}

/// Whether all of `side`'s MX scales may be folded into its values (an `i1`, each as
/// `scale_folds` asks): `scales_in_fold_range`'s scan first; only where it fails, scale by
/// scale, a row at a time while all have folded.
fn scales_fold<'c, 'a>(
    e: &Emitter<'c, 'a>,
    side: &Side<'c, 'a>,
    k: Value<'c, 'a>,
) -> Value<'c, 'a> {
    let fast = scales_in_fold_range(e, side, k);
    let ScaleLayout::Mx { block } = side.scaled.layout else {
        unreachable!("folding takes MX scales")
    };
    if zero_code_mask(side.format).is_none() {
        return fast;
    }
    let i1 = e.int_type(1);
    let (zero, one) = (e.index(0), e.index(1));
    let block_v = e.index(block as i64);
    let blocks = ceil_div(e, k, block_v);
    let scales = side.scaled.scales;
    let by_scale = |e: &Emitter<'c, 'a>| {
        e.for_loop(zero, side.rows, one, &[e.bool(true)], |e, r, ok| {
            e.if_else(
                ok[0],
                &[i1],
                |e| {
                    e.for_loop(zero, blocks, one, &[e.bool(true)], |e, s, ok| {
                        let stored = e.load(scales, &[r, s]);
                        let lo = e.muli(s, block_v);
                        let hi = e.minui(e.addi(lo, block_v), k);
                        let folds = scale_folds(e, side, stored, r, (lo, hi), block as i64);
                        vec![e.andi(ok[0], folds)]
                    })
                },
                |e| vec![e.bool(false)],
            )
        })
    };
    e.if_else(fast, &[i1], |e| vec![e.bool(true)], by_scale)[0]
}

/// The row tiles, their sums `folded` (`lower_tiles`) or not.
fn tiles<'c, 'a>(
    e: &Emitter<'c, 'a>,
    mm: &Matmul<'_, 'c, 'a>,
    folded: bool,
) -> Result<(), PassError> {
    let Matmul {
        op,
        func,
        o,
        plan,
        a,
        b,
        k,
        bytes,
    } = *mm;
    let plan = if folded {
        Plan { folded, ..plan }
    } else {
        plan.carrying_sums()
    };
    let f32t = e.f32_type();
    let (zero, one) = (e.index(0), e.index(1));
    let Tile { lanes, mr: mr_c } = plan.tile;
    let nr_c = plan.tile.nr();
    let vl = lanes as u64;
    let (mr, nr) = (e.index(mr_c), e.index(nr_c));
    let (m, n) = (a.rows, b.rows);
    let m_tiles = ceil_div(e, m, mr);
    let n_panels = ceil_div(e, n, nr);
    let segments = match plan.seg {
        Some(s) => ceil_div(e, k, e.index(s)),
        None => one,
    };
    let seg_stride = e.index(plan.seg.unwrap_or(1));
    let g = Gemm {
        plan,
        k,
        m_tiles,
        n_panels,
        // The K interval whose partial sums are scaled into W: the scale segment, else the
        // K block (the byte kernel's K block may be shorter: see `byte_dot`).
        interval: match (plan.seg, bytes) {
            (Some(_), _) if plan.folded => plan.kc,
            (Some(s), _) => s,
            (None, Some(d)) => d.kc,
            (None, None) => plan.kc,
        },
        kc: bytes.map_or(plan.kc, |d| d.kc),
        sa: e.alloc(f32t, &[None, None, Some(mr_c)], &[m_tiles, segments], 64),
        sbp: e.alloc(f32t, &[None, None, Some(nr_c)], &[n_panels, segments], 64),
        w: e.alloc(
            f32t,
            &[None, None, Some(mr_c), Some(nr_c)],
            &[m_tiles, n_panels],
            64,
        ),
    };
    let zf = e.f32(0.0);

    // ---- scales ----------------------------------------------------------------------
    // A's in row tiles and B's in column panels, like their codes: a tile's scales of one
    // segment are contiguous. Padding is zero.
    // The byte kernel's unit on A's (`Plan::unit_in_scales`).
    let unit = bytes
        .filter(|_| plan.unit_in_scales())
        .map(|d| e.f32(d.unit()));
    let decode_scales = |e: &Emitter<'c, 'a>,
                         side: &Side<'c, 'a>,
                         (scales_to, times): (Value<'c, 'a>, Option<Value<'c, 'a>>),
                         width: Value<'c, 'a>,
                         rows: Value<'c, 'a>,
                         panel: Value<'c, 'a>| {
        e.for_loop(zero, width, one, &[], |e, j, _| {
            let row = e.addi(e.muli(panel, width), j);
            let real = e.cmpi(CmpiPredicate::Ult, row, rows);
            let rr = e.minui(row, e.subi(rows, one));
            e.for_loop(zero, segments, one, &[], |e, s, _| {
                let v = side.scaled.block_value(e, rr, e.muli(s, seg_stride));
                let v = times.map_or(v, |t| e.mulf(v, t));
                e.store(e.select(real, v, zf), scales_to, &[panel, s, j]);
                vec![]
            });
            vec![]
        });
    };
    // Folded, A's scales are in its words and B's multiply its panels as decoded.
    if !plan.folded {
        g.par(e, m_tiles, &|e, t| {
            decode_scales(e, a, (g.sa, unit), mr, m, t)
        });
    }
    g.par(e, n_panels, &|e, p| {
        decode_scales(e, b, (g.sbp, None), nr, n, p)
    });
    // W = 0.
    let zv = e.zero_vector(vl);
    g.par(e, m_tiles, &|e, t| {
        e.for_loop(zero, n_panels, one, &[], |e, pb, _| {
            for i in 0..mr_c {
                for c in (0..nr_c).step_by(lanes as usize) {
                    e.vstore(zv, g.w, &[t, pb, e.index(i), e.index(c)]);
                }
            }
            vec![]
        });
    });

    // ---- GEMM ------------------------------------------------------------------------
    match bytes {
        Some(d) => gemm_bytes(e, &g, a, b, d, func)?,
        None => gemm_f32(e, &g, a, b, func, plan.takes_bf16(a.format, b.format))?,
    }

    // ---- write-back ------------------------------------------------------------------
    // Row r is row i of tile mt; column c column nn of panel pb.
    let tile = |e: &Emitter<'c, 'a>, r| (e.divui(r, mr), e.remui(r, mr));
    let panel = |e: &Emitter<'c, 'a>, c| (e.divui(c, nr), e.remui(c, nr));
    write_back(
        e,
        &plan,
        (op, o),
        (a, b),
        &|e, r, c| {
            let ((mt, i), (pb, nn)) = (tile(e, r), panel(e, c));
            e.load(g.w, &[mt, pb, i, nn])
        },
        &|e, r, c| {
            let ((mt, i), (pb, nn)) = (tile(e, r), panel(e, c));
            (e.load(g.sa, &[mt, zero, i]), e.load(g.sbp, &[pb, zero, nn]))
        },
        // A vector of columns lies in one panel (`nr` is two vectors): a row of the
        // tile's sums and of the panel's scales. Element by element, the write-back took
        // 6% of FP8 2048^3 on one Zen 5 thread (a division by `mr` and by `nr` a value).
        Some((
            vl,
            &|e, r, c| {
                let ((mt, i), (pb, nn)) = (tile(e, r), panel(e, c));
                e.vload(g.w, &[mt, pb, i, nn], vl)
            },
            &|e, r, c| {
                let ((mt, i), (pb, nn)) = (tile(e, r), panel(e, c));
                (
                    e.load(g.sa, &[mt, zero, i]),
                    e.vload(g.sbp, &[pb, zero, nn], vl),
                )
            },
        )),
    )?;
    for buffer in [g.sa, g.sbp, g.w] {
        e.dealloc(buffer);
    }
    Ok(())
}

/// A form's sums of row `r` from column `c`: one (scalar) or a vector of them.
type Sums<'f, 'c, 'a> =
    dyn Fn(&Emitter<'c, 'a>, Value<'c, 'a>, Value<'c, 'a>) -> Value<'c, 'a> + 'f;

/// The scales `(sa, sb)` of row `r`, column `c` (scalars), or of row `r` and a vector of
/// columns from `c` (`sa` a scalar, `sb` a vector).
type SumScales<'f, 'c, 'a> =
    dyn Fn(&Emitter<'c, 'a>, Value<'c, 'a>, Value<'c, 'a>) -> (Value<'c, 'a>, Value<'c, 'a>) + 'f;

/// The write-back: `out[r, c]` for every row and column from `sum(e, r, c)` (the form's
/// sum, scaled per segment where `plan.seg` is some), times `sa * sb` from `scales(e, r,
/// c)` where the scales do not change along K, times the NVFP4 globals, plus the bias,
/// rounded to the output's type. With `vectors` (`(lanes, sums, scales)`: the same as
/// vectors of `lanes` columns from a multiple of `lanes`), each row's columns a vector at a
/// time, the same operations on each lane, and the last `N % lanes` one at a time.
fn write_back<'c, 'a>(
    e: &Emitter<'c, 'a>,
    plan: &Plan,
    (op, o): (OperationRef<'c, 'a>, &MatmulOperands<'c, 'a>),
    (a, b): (&Side<'c, 'a>, &Side<'c, 'a>),
    sum: &Sums<'_, 'c, 'a>,
    scales: &SumScales<'_, 'c, 'a>,
    vectors: Option<(u64, &Sums<'_, 'c, 'a>, &SumScales<'_, 'c, 'a>)>,
) -> Result<(), PassError> {
    let global = match (a.scaled.global_value(e), b.scaled.global_value(e)) {
        (None, None) => None,
        (ga, gb) => Some(e.mulf(
            ga.unwrap_or_else(|| e.f32(1.0)),
            gb.unwrap_or_else(|| e.f32(1.0)),
        )),
    };
    let out_type = melior::ir::r#type::MemRefType::try_from(o.out.r#type())
        .map_err(|_| unsupported(op, "result is not a memref"))?
        .element();
    let bf16 = out_type != e.f32_type();
    let (zero, one) = (e.index(0), e.index(1));
    // Row `r`'s columns `c..` (one, or a vector of `lanes`).
    let columns = |e: &Emitter<'c, 'a>,
                   (r, c): (Value<'c, 'a>, Value<'c, 'a>),
                   lanes: Option<u64>,
                   sum: &Sums<'_, 'c, 'a>,
                   scales: &SumScales<'_, 'c, 'a>| {
        let splat = |v| lanes.map_or(v, |n| e.broadcast(v, n));
        let mut v = sum(e, r, c);
        if plan.seg.is_none() {
            // The contract's one scale product (`sa * sb` first: the total times one
            // scale alone may leave f32's range where the product does not).
            let (sa, sb) = scales(e, r, c);
            v = e.mulf(v, e.mulf(splat(sa), sb));
        }
        if let Some(g) = global {
            v = e.mulf(v, splat(g));
        }
        if let Some(bias) = o.bias {
            let bv = match lanes {
                Some(n) => e.vload(bias, &[c], n),
                None => e.load(bias, &[c]),
            };
            v = e.addf(v, bv);
        }
        if bf16 {
            v = e.truncf(v, lanes.map_or(out_type, |n| e.vector_type(n, out_type)));
        }
        match lanes {
            Some(_) => e.vstore(v, o.out, &[r, c]),
            None => e.store(v, o.out, &[r, c]),
        }
    };
    par(e, plan.parallel, a.rows, &|e, r| {
        let tail = match vectors {
            Some((lanes, vsum, vscales)) => {
                let step = e.index(lanes as i64);
                let whole = e.muli(e.divui(b.rows, step), step);
                e.for_loop(zero, whole, step, &[], |e, c, _| {
                    columns(e, (r, c), Some(lanes), vsum, vscales);
                    vec![]
                });
                whole
            }
            None => zero,
        };
        e.for_loop(tail, b.rows, one, &[], |e, c, _| {
            columns(e, (r, c), None, sum, scales);
            vec![]
        });
    });
    Ok(())
}

/// Run `body` over `0..n`, as `scf.parallel` where `parallel`, else `scf.for`.
fn par<'c, 'a>(
    e: &Emitter<'c, 'a>,
    parallel: bool,
    n: Value<'c, 'a>,
    body: &dyn Fn(&Emitter<'c, 'a>, Value<'c, 'a>),
) {
    let (zero, one) = (e.index(0), e.index(1));
    if parallel {
        e.parallel_loop(zero, n, one, |e, i| body(e, i));
    } else {
        e.for_loop(zero, n, one, &[], |e, i, _| {
            body(e, i);
            vec![]
        });
    }
}

/// Where B's panel `pb` of the current K block is decoded: slot `slot` (the first index)
/// of the kernel's panel buffers.
#[derive(Clone, Copy)]
struct PanelAt<'b, 'c, 'a> {
    buffers: &'b [Value<'c, 'a>],
    slot: Value<'c, 'a>,
    pb: Value<'c, 'a>,
}

/// One interval's partial sums of a tile: `(e, panel, mt, k0, s0, s1)` (`k0` the start of
/// its K block) to `2 mr` f32 vectors.
type Interval<'f, 'c, 'a> = dyn Fn(
        &Emitter<'c, 'a>,
        PanelAt<'_, 'c, 'a>,
        Value<'c, 'a>,
        Value<'c, 'a>,
        Value<'c, 'a>,
        Value<'c, 'a>,
    ) -> Vec<Value<'c, 'a>>
    + 'f;

/// B's panel of the K block `k0..k1` decoded into its slot: `(e, panel, k0, k1)`.
type PanelDecode<'f, 'c, 'a> =
    dyn Fn(&Emitter<'c, 'a>, PanelAt<'_, 'c, 'a>, Value<'c, 'a>, Value<'c, 'a>) + 'f;

/// The kernel's panel buffers with `n` slots (`memref<? x ...>`, freed by the sweep).
type PanelBuffers<'f, 'c, 'a> = dyn Fn(&Emitter<'c, 'a>, Value<'c, 'a>) -> Vec<Value<'c, 'a>> + 'f;

/// What the decode and GEMM phases of one matmul share.
struct Gemm<'c, 'a> {
    plan: Plan,
    k: Value<'c, 'a>,
    m_tiles: Value<'c, 'a>,
    n_panels: Value<'c, 'a>,
    /// K steps whose partial sums are scaled into `w` at once (a multiple of 4 for the
    /// byte kernel).
    interval: i64,
    /// K block.
    kc: i64,
    /// A's scales per row tile, segment and row.
    sa: Value<'c, 'a>,
    /// B's scales per column panel, segment and column.
    sbp: Value<'c, 'a>,
    /// The f32 sums in tiles: `m_tiles x n_panels x mr x nr` (a tile's sums are one
    /// contiguous block, so folding an interval into them addresses one pointer).
    w: Value<'c, 'a>,
}

impl<'c, 'a> Gemm<'c, 'a> {
    /// Run `body` over `0..n`, as `scf.parallel` when the plan allows threads.
    fn par(
        &self,
        e: &Emitter<'c, 'a>,
        n: Value<'c, 'a>,
        body: &dyn Fn(&Emitter<'c, 'a>, Value<'c, 'a>),
    ) {
        par(e, self.plan.parallel, n, body);
    }

    /// `n` slots of a buffer for a K block of B's panel (`memref<n x units x width>`): its
    /// `kc / per` units of `per` k each (a multiple: `plan` makes the K block one), or
    /// where the block is longer than `STATIC_KC`, as many as K fills (`plan` rounds the
    /// K block up to the scale segment: a scale block of 2^30 with K = 64 would otherwise
    /// ask for gigabytes a slot, which the allocation does not get).
    fn block_buffer(
        &self,
        e: &Emitter<'c, 'a>,
        element: melior::ir::Type<'c>,
        (per, width): (i64, i64),
        n: Value<'c, 'a>,
    ) -> Value<'c, 'a> {
        let units = if self.kc <= STATIC_KC {
            Ok(self.kc / per)
        } else {
            match crate::ir::static_index(self.k) {
                Some(k) => Ok((k.min(self.kc) + per - 1) / per),
                None => Err(ceil_div(e, e.minui(self.k, e.index(self.kc)), e.index(per))),
            }
        };
        match units {
            Ok(units) => e.alloc(element, &[None, Some(units), Some(width)], &[n], 64),
            Err(units) => e.alloc(element, &[None, None, Some(width)], &[n, units], 64),
        }
    }

    /// The loops over K blocks, N blocks, row tiles (in parallel), the block's panels and
    /// its intervals; `interval(e, panel, mt, k0, s0, s1)` emits one interval's partial
    /// sums of the tile (`2 mr` f32 vectors, row-major), which are then scaled into `w`.
    ///
    /// `decode(e, panel, k0, k1)` fills a slot of the panel buffers (`buffers(e, n)`, `n`
    /// slots) for a K block: each K block begins with all its panels decoded in parallel,
    /// a slot each; and where M is at most `SKINNY_ROWS / mr` (row tiles too few to share
    /// among threads, or to pay for B's decoded block leaving the core's cache) groups of
    /// up to `SLOT_PANELS` panels run in parallel instead, each through all of K, each
    /// panel's K block decoded into the group's one slot and at once swept by all row
    /// tiles: B's decoded values never leave the core's cache (a slot per panel, written
    /// once a K block, missed in cache on every write: 8 MiB at N = 8192), and B's rows are
    /// read in order (K blocks outside the panels read a row's next block an N sweep later,
    /// its page gone from the TLB: 21 -> 19 ms at 16 x 8192 x 8192 FP8).
    fn sweep(
        &self,
        e: &Emitter<'c, 'a>,
        buffers: &PanelBuffers<'_, 'c, 'a>,
        decode: &PanelDecode<'_, 'c, 'a>,
        interval: &Interval<'_, 'c, 'a>,
    ) {
        let (zero, one) = (e.index(0), e.index(1));
        let (k, kc) = (self.k, e.index(self.kc));
        let ncp = e.index(self.plan.nc_panels);
        let skinny_tiles = e.index(SKINNY_ROWS / self.plan.tile.mr);
        let skinny = e.cmpi(CmpiPredicate::Ule, self.m_tiles, skinny_tiles);
        e.if_else(
            skinny,
            &[],
            |e| {
                // Panels a group: enough groups to share out (64 where N allows), and at
                // most SLOT_PANELS, over which A's K blocks are read again.
                let group = e.index(SLOT_PANELS);
                let group = e.maxui(
                    e.index(1),
                    e.minui(group, e.divui(self.n_panels, e.index(SKINNY_GROUPS))),
                );
                let groups = ceil_div(e, self.n_panels, group);
                self.par(e, groups, &|e, gi| {
                    let slot = buffers(e, one);
                    let p0 = e.muli(gi, group);
                    let p1 = e.minui(e.addi(p0, group), self.n_panels);
                    e.for_loop(zero, k, kc, &[], |e, k0, _| {
                        let k1 = e.minui(e.addi(k0, kc), k);
                        e.for_loop(p0, p1, one, &[], |e, pb, _| {
                            let panel = PanelAt {
                                buffers: &slot,
                                slot: zero,
                                pb,
                            };
                            decode(e, panel, k0, k1);
                            let last = e.subi(self.m_tiles, one);
                            e.for_loop(zero, self.m_tiles, one, &[], |e, mt, _| {
                                let next = (e.minui(e.addi(mt, one), last), pb);
                                self.tile_block(e, interval, panel, (mt, next), k0, k1);
                                vec![]
                            });
                            vec![]
                        });
                        vec![]
                    });
                    for &b in &slot {
                        e.dealloc(b);
                    }
                });
                vec![]
            },
            |e| {
                let all = buffers(e, self.n_panels);
                let at = |pb| PanelAt {
                    buffers: &all,
                    slot: pb,
                    pb,
                };
                e.for_loop(zero, k, kc, &[], |e, k0, _| {
                    let k1 = e.minui(e.addi(k0, kc), k);
                    self.par(e, self.n_panels, &|e, pb| decode(e, at(pb), k0, k1));
                    e.for_loop(zero, self.n_panels, ncp, &[], |e, p0, _| {
                        let p1 = e.minui(e.addi(p0, ncp), self.n_panels);
                        self.par(e, self.m_tiles, &|e, mt| {
                            let last = e.subi(p1, one);
                            e.for_loop(p0, p1, one, &[], |e, pb, _| {
                                let next = (mt, e.minui(e.addi(pb, one), last));
                                self.tile_block(e, interval, at(pb), (mt, next), k0, k1);
                                vec![]
                            });
                        });
                        vec![]
                    });
                    vec![]
                });
                for &b in &all {
                    e.dealloc(b);
                }
                vec![]
            },
        );
    }

    /// The intervals of K block `k0..k1` for row tile `mt` and panel `pb`: partial sums,
    /// each scaled once into `w`. `next`: the tile the sweep takes next (its sums are
    /// prefetched).
    fn tile_block(
        &self,
        e: &Emitter<'c, 'a>,
        interval: &Interval<'_, 'c, 'a>,
        panel: PanelAt<'_, 'c, 'a>,
        (mt, next): (Value<'c, 'a>, (Value<'c, 'a>, Value<'c, 'a>)),
        k0: Value<'c, 'a>,
        k1: Value<'c, 'a>,
    ) {
        let pb = panel.pb;
        let zero = e.index(0);
        let Tile { lanes, mr: mr_c } = self.plan.tile;
        let vl = lanes as u64;
        let lane = e.index(lanes);
        // The next tile's sums: `w` is all of C, out of the caches by the time a K block
        // comes back to a tile, and the loads that begin its intervals waited on memory.
        for i in 0..mr_c {
            for c in (0..self.plan.tile.nr()).step_by(16) {
                e.prefetch(self.w, &[next.0, next.1, e.index(i), e.index(c)]);
            }
        }
        let seg_len = e.index(self.interval);
        let at = |e: &Emitter<'c, 'a>, x: usize| {
            [
                mt,
                pb,
                e.index((x / 2) as i64),
                e.index(lanes * (x % 2) as i64),
            ]
        };
        // The tile's sums after the interval `s0..s1`, from `current` (sum `x` before it).
        let fold = |e: &Emitter<'c, 'a>,
                    (s0, s1): (Value<'c, 'a>, Value<'c, 'a>),
                    current: &dyn Fn(&Emitter<'c, 'a>, usize) -> Value<'c, 'a>| {
            let partial = interval(e, panel, mt, k0, s0, s1);
            // Scale the segment once (or not at all: per-tensor / per-channel scales
            // multiply the total in the write-back, folded ones are in the products).
            let scaled = self.plan.seg.filter(|_| !self.plan.folded).map(|s| {
                let seg = e.divui(s0, e.index(s));
                let sb = [
                    e.vload(self.sbp, &[pb, seg, zero], vl),
                    e.vload(self.sbp, &[pb, seg, lane], vl),
                ];
                (seg, sb)
            });
            let mut sums = Vec::with_capacity(2 * mr_c as usize);
            for i in 0..mr_c as usize {
                let ii = e.index(i as i64);
                let sav = scaled.map(|(seg, _)| e.broadcast(e.load(self.sa, &[mt, seg, ii]), vl));
                for j in 0..2usize {
                    let wv = current(e, 2 * i + j);
                    let p = partial[2 * i + j];
                    sums.push(match (scaled, sav) {
                        (Some((_, sb)), Some(sav)) => e.fma(p, e.mulf(sav, sb[j]), wv),
                        _ => e.addf(wv, p),
                    });
                }
            }
            sums
        };
        let count = 2 * mr_c as usize;
        let store = |e: &Emitter<'c, 'a>, sums: &[Value<'c, 'a>]| {
            for (x, &v) in sums.iter().enumerate() {
                e.vstore(v, self.w, &at(e, x));
            }
        };
        let from_w = |e: &Emitter<'c, 'a>, x: usize| e.vload(self.w, &at(e, x), vl);
        if self.plan.carry {
            // The tile's sums in registers through the K block (`Plan::carrying_sums`).
            let start: Vec<Value> = (0..count).map(|x| from_w(e, x)).collect();
            let sums = e.for_loop(k0, k1, seg_len, &start, |e, s0, acc| {
                let s1 = e.minui(e.addi(s0, seg_len), k1);
                fold(e, (s0, s1), &|_, x| acc[x])
            });
            store(e, &sums);
        } else if self.plan.seg.is_some() && !self.plan.folded {
            e.for_loop(k0, k1, seg_len, &[], |e, s0, _| {
                let s1 = e.minui(e.addi(s0, seg_len), k1);
                store(e, &fold(e, (s0, s1), &from_w));
                vec![]
            });
        } else {
            // Scales that do not change along K (or folded): the interval is the K block,
            // and no loop over one interval (LLVM's LICM promoted W's tile to registers across it,
            // loading it before the sums and spilling it around them).
            store(e, &fold(e, (k0, k1), &from_w));
        }
    }
}

/// Prefetch row `rr`'s codes `PREFETCH_CHUNKS` decode chunks after k = `from` (clamped to
/// K): a panel's decode reads its rows a cache line each in turn, a pattern the hardware's
/// stream prefetchers missed (the decode waited on memory, ~3 cycles an FP8 code).
fn prefetch_codes<'c, 'a>(
    e: &Emitter<'c, 'a>,
    side: &Side<'c, 'a>,
    rr: Value<'c, 'a>,
    from: Value<'c, 'a>,
    k: Value<'c, 'a>,
) {
    prefetch_codes_ahead(e, side, (rr, from), k, PREFETCH_CHUNKS * DECODE_CHUNK);
}

/// Prefetch row `rr`'s code of k = `from + ahead` (clamped to K).
fn prefetch_codes_ahead<'c, 'a>(
    e: &Emitter<'c, 'a>,
    side: &Side<'c, 'a>,
    (rr, from): (Value<'c, 'a>, Value<'c, 'a>),
    k: Value<'c, 'a>,
    ahead: i64,
) {
    let at = e.minui(e.addi(from, e.index(ahead)), e.subi(k, e.index(1)));
    let col = if side.packed {
        e.divui(at, e.index(2))
    } else {
        at
    };
    e.prefetch(side.bits, &[rr, col]);
}

/// Whether row `row` is inside the side, and the row to read for it (clamped: padding
/// rows read the last row and store zeros).
fn row_of<'c, 'a>(
    e: &Emitter<'c, 'a>,
    side: &Side<'c, 'a>,
    row: Value<'c, 'a>,
) -> (Value<'c, 'a>, Value<'c, 'a>) {
    let real = e.cmpi(CmpiPredicate::Ult, row, side.rows);
    (real, e.minui(row, e.subi(side.rows, e.index(1))))
}

/// Panel `pb`'s `nr` rows of a side (a multiple of 8), eight at a time: each row's codes
/// prefetched from k = `from` on, then `whole(e, rows read, j0)` (`j0`: the group's first
/// row in the panel) where all eight rows are inside the side, else `each(e, j, (real,
/// rr))` for each row `j` of the group.
#[allow(clippy::type_complexity)]
fn row_groups<'c, 'a>(
    e: &Emitter<'c, 'a>,
    side: &Side<'c, 'a>,
    (pb, nr): (Value<'c, 'a>, i64),
    (from, k): (Value<'c, 'a>, Value<'c, 'a>),
    whole: &dyn Fn(&Emitter<'c, 'a>, &[Value<'c, 'a>], Value<'c, 'a>),
    each: &dyn Fn(&Emitter<'c, 'a>, Value<'c, 'a>, (Value<'c, 'a>, Value<'c, 'a>)),
) {
    for group in 0..nr / 8 {
        let first = e.addi(e.muli(pb, e.index(nr)), e.index(8 * group));
        let rows: Vec<_> = (0..8)
            .map(|r| {
                let rows = row_of(e, side, e.addi(first, e.index(r)));
                prefetch_codes(e, side, rows.1, from, k);
                rows
            })
            .collect();
        let j0 = e.index(8 * group);
        let inside = e.cmpi(CmpiPredicate::Ule, e.addi(first, e.index(8)), side.rows);
        e.if_else(
            inside,
            &[],
            |e| {
                let read: Vec<_> = rows.iter().map(|&(_, rr)| rr).collect();
                whole(e, &read, j0);
                vec![]
            },
            |e| {
                for (r, &rows) in rows.iter().enumerate() {
                    each(e, e.index(8 * group + r as i64), rows);
                }
                vec![]
            },
        );
    }
}

/// `n` codes of row `rr` from k = `kk` (even where two codes share a byte), as a
/// `vector<n x i<bits>>` of codes in k order (low nibble first).
fn load_codes<'c, 'a>(
    e: &Emitter<'c, 'a>,
    side: &Side<'c, 'a>,
    (rr, kk): (Value<'c, 'a>, Value<'c, 'a>),
    n: u64,
    bits: u32,
) -> Value<'c, 'a> {
    let lane = e.int_type(bits);
    if side.packed {
        let col = e.divui(kk, e.index(2));
        let bytes = e.extui(
            e.vload(side.bits, &[rr, col], n / 2),
            e.vector_type(n / 2, lane),
        );
        let lo = e.andi(bytes, e.int_splat(bits, 0xF, n / 2));
        let hi = e.shrui(bytes, e.int_splat(bits, 4, n / 2));
        let half = n as i64 / 2;
        let mask: Vec<i64> = (0..half).flat_map(|i| [i, half + i]).collect();
        e.shuffle(lo, hi, lane, &mask)
    } else {
        e.extui(e.vload(side.bits, &[rr, kk], n), e.vector_type(n, lane))
    }
}

/// One round of a register transpose: for each `(i, j)` of `pairs`, the two shuffles of
/// `v[i]` and `v[j]` by `masks` (elements of `element`; indices past the first vector's
/// length pick from the second).
fn shuffle_round<'c, 'a>(
    e: &Emitter<'c, 'a>,
    v: &[Value<'c, 'a>],
    element: melior::ir::Type<'c>,
    masks: [&[i64]; 2],
    pairs: [(usize, usize); 4],
) -> Vec<Value<'c, 'a>> {
    pairs
        .into_iter()
        .flat_map(|(i, j)| masks.map(|m| e.shuffle(v[i], v[j], element, m)))
        .collect()
}

/// The transpose of an 8 x 8 block held as eight 8-lane rows of 32-bit `element`s (f32
/// values, i32 words): lane `r` of result `c` is lane `c` of row `r`. Three rounds of
/// two-source shuffles (24 in all, the unpack / 64-bit shuffle / 128-bit permute sequence
/// of AVX).
fn transpose8<'c, 'a>(
    e: &Emitter<'c, 'a>,
    rows: &[Value<'c, 'a>],
    element: melior::ir::Type<'c>,
) -> Vec<Value<'c, 'a>> {
    // Rows 2p, 2p + 1 interleaved: lanes (0, 1, 4, 5) then (2, 3, 6, 7) of both.
    let t = shuffle_round(
        e,
        rows,
        element,
        [&[0, 8, 1, 9, 4, 12, 5, 13], &[2, 10, 3, 11, 6, 14, 7, 15]],
        [(0, 1), (2, 3), (4, 5), (6, 7)],
    );
    // Rows 4q..4q + 4 of columns (0, 4), (1, 5), (2, 6), (3, 7).
    let u = shuffle_round(
        e,
        &t,
        element,
        [&[0, 1, 8, 9, 4, 5, 12, 13], &[2, 3, 10, 11, 6, 7, 14, 15]],
        [(0, 2), (1, 3), (4, 6), (5, 7)],
    );
    // Columns c and c + 4 of all eight rows.
    let w = shuffle_round(
        e,
        &u,
        element,
        [&[0, 1, 2, 3, 8, 9, 10, 11], &[4, 5, 6, 7, 12, 13, 14, 15]],
        [(0, 4), (1, 5), (2, 6), (3, 7)],
    );
    // w holds columns in the order 0, 4, 1, 5, 2, 6, 3, 7.
    [0, 2, 4, 6, 1, 3, 5, 7].iter().map(|&i| w[i]).collect()
}

/// The transposes of the two 8 x 8 blocks of eight `vector<16xi16>` rows (k 0..8 in the
/// low 128 bits, k 8..16 in the high): result `x` holds k = x of rows 0..8 in its low
/// eight lanes and k = x + 8 in its high eight. Three rounds of shuffles that stay within
/// 128-bit halves (x86's unpack of 16-, 32- and 64-bit elements: 24 in all, for 128
/// codes).
fn transpose8x16<'c, 'a>(e: &Emitter<'c, 'a>, rows: &[Value<'c, 'a>]) -> Vec<Value<'c, 'a>> {
    let i16t = e.int_type(16);
    // The pattern of one round in both halves: `granule`-lane runs of the first vector
    // and then the second, from the low (`from` 0) or high (`from` 4) half of each half.
    let mask = |granule: i64, from: i64| -> Vec<i64> {
        (0..2)
            .flat_map(|half| {
                (0..4 / granule).flat_map(move |g| {
                    (0..2).flat_map(move |src| {
                        (0..granule).map(move |l| 16 * src + 8 * half + from + g * granule + l)
                    })
                })
            })
            .collect()
    };
    let rounds = [
        (1, [(0, 1), (2, 3), (4, 5), (6, 7)]),
        (2, [(0, 2), (1, 3), (4, 6), (5, 7)]),
        (4, [(0, 4), (1, 5), (2, 6), (3, 7)]),
    ];
    rounds
        .into_iter()
        .fold(rows.to_vec(), |v, (granule, pairs)| {
            let (lo, hi) = (mask(granule, 0), mask(granule, 4));
            shuffle_round(e, &v, i16t, [&lo, &hi], pairs)
        })
}

/// Which form of the GEMM a matmul takes (see the module header).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Form {
    /// Each output a dot product along K (`gemv.rs`) for this many rows of A (as
    /// `gemv::takes` allows), ahead of the byte kernel's row tiles too where the byte GEMV
    /// form does not take the matmul (at M <= 3 it ran MXFP4 1.4x faster than the tiles).
    Gemv(i64),
    /// The GEMV form on the byte kernel's integers (`dot_gemv.rs`) for this many rows of
    /// A (as `dot_gemv::takes` allows), where the byte kernel would run.
    ByteGemv(i64),
    /// The GEMV form on bf16 pairs (`dot_gemv.rs`) for this many rows of A (as
    /// `dot_gemv::takes_pairs` allows), where `bf16-dot` holds for the formats (`bf16_pairs`
    /// with B's values as they are) and the byte kernel would not run.
    PairGemv(i64),
    /// A's rows as `mv` vectors, B broadcast (`narrow.rs`), f32 kernel only.
    Narrow(i64),
    /// Row tiles of A, column panels of B (f32 or byte kernel).
    Tiles,
}

/// The form of a matmul of these formats with `m` rows (where known when the pass runs)
/// under `plan`; `bytes`: the byte kernel's plan exists for it.
fn form_of(
    plan: &Plan,
    m: Option<i64>,
    (fa, fb): (ScaledFormat, ScaledFormat),
    bytes: bool,
) -> Form {
    let f16 = plan.b_through_f16(fa, fb).is_some();
    let fold = gemv::folds(plan, (fa, fb));
    // Row tiles on bf16 pairs issue half the FMA kernel's instructions, which moves the
    // small forms' break-even down: at 8192 x 8192 (Zen 5, 2 threads) FP8 per tensor M = 6
    // / 8 ran 8.7 / 11.1 ms as GEMV, 6.7 / 7.4 as tiles; M = 16 / 32 13.7 / 15.7 narrow,
    // 8.2 / 9.9 tiles; GEMV still won at M <= 5 (3.8 against 6.4).
    let pairs = !bytes && plan.takes_bf16(fa, fb);
    let gemv = plan.gemv && (!pairs || m.is_some_and(|rows| rows <= PAIRS_GEMV_ROWS));
    if let Some(rows) = m.filter(|_| plan.gemv && bytes && dot_gemv::takes(m, plan)) {
        return Form::ByteGemv(rows);
    }
    let pair_gemv = plan.gemv && !bytes && plan.bf16 && bf16_pairs(fa, fb, 0, plan.seg);
    if let Some(rows) = m.filter(|_| pair_gemv && dot_gemv::takes_pairs(m, plan, (fa, fb))) {
        return Form::PairGemv(rows);
    }
    if let Some(rows) = m.filter(|_| gemv && gemv::takes(m, plan, f16, bytes, fold)) {
        return Form::Gemv(rows);
    }
    match narrow::vectors(m, plan.tile) {
        Some(mv) if plan.narrow && !bytes && !pairs => Form::Narrow(mv),
        _ => Form::Tiles,
    }
}

/// The most rows the GEMV form takes where the row tiles would run on bf16 pairs (see
/// `form_of`).
const PAIRS_GEMV_ROWS: i64 = 5;

/// The CPU kernel `lowp-to-loops{dot=..., decode=..., lanes=...}` (other options at their
/// defaults) generates for a matmul of these formats and layouts with `m` rows (where known
/// when the pass runs), as `lowp-run` reports it: `dot=i8 form=tiles|gemv` (or
/// `dot=vnni`) for the byte kernel's forms, else `dot=f32 decode=bits|f16
/// form=gemv|narrow|tiles`, `dot=bf16` where the row tiles take bf16 pairs. `options`:
/// the pass's options as its pipeline text spells them (`lanes=16 dot=vnni ...`), the
/// others at their defaults.
pub fn kernel_taken(
    (fa, fb): (ScaledFormat, ScaledFormat),
    (la, lb): (ScaleLayout, ScaleLayout),
    m: Option<i64>,
    options: &str,
) -> String {
    let given: Vec<(&str, &str)> = options
        .split_whitespace()
        .filter_map(|kv| kv.split_once('='))
        .collect();
    let values: Vec<String> = PASS
        .options
        .iter()
        .map(|o| {
            given
                .iter()
                .rev()
                .find(|(k, _)| *k == o.name)
                .map_or(o.default, |(_, v)| v)
                .to_string()
        })
        .collect();
    let options = match PASS.parse_options(&values) {
        Ok(options) => options,
        Err(e) => return e.to_string(),
    };
    let dot = options.choice("dot");
    let plan = plan(la, lb, &options);
    let bytes = plan.dot_i8 && byte_dot(plan.seg, plan.kc, fa, fb, plan.vnni).is_some();
    let form = form_of(&plan, m, (fa, fb), bytes);
    let name = match form {
        Form::Gemv(_) | Form::ByteGemv(_) | Form::PairGemv(_) => "gemv",
        Form::Narrow(_) => "narrow",
        Form::Tiles => "tiles",
    };
    if bytes && matches!(form, Form::Tiles | Form::ByteGemv(_)) {
        format!("dot={dot} form={name}")
    } else if let Form::PairGemv(_) = form {
        // B's codes looked up as bf16 patterns.
        format!("dot=bf16 decode=table form={name}")
    } else {
        let f16 = plan.b_through_f16(fa, fb).is_some();
        let pairs = form == Form::Tiles && plan.takes_bf16(fa, fb);
        format!(
            "dot={} decode={} form={name}",
            if pairs { "bf16" } else { "f32" },
            if f16 { "f16" } else { "bits" }
        )
    }
}

/// The f32 kernels' decode of codes: B's f16 fields where it goes through f16 patterns,
/// and the two tables of one f32 per code (one load instead of ~15 integer ops; 64 bytes
/// for FP4, so it stays in L1) for A and for what B's vector decode leaves.
///
/// B through f16 (`decode=f16`, where its format allows): its values come out times
/// 2^-shift, and the 2^shift goes onto A's table instead (every product, so every sum,
/// unchanged) where A takes it exactly (always, for the products the contract admits;
/// else B takes the bit arithmetic). B's table times 2^-shift is exact by `f16_fields`:
/// those are the f16 values, all normal in f32.
#[allow(clippy::type_complexity)]
fn f32_tables<'c, 'a>(
    e: &Emitter<'c, 'a>,
    func: OperationRef<'c, 'a>,
    plan: &Plan,
    a: &Side<'c, 'a>,
    b: &Side<'c, 'a>,
) -> Result<(Option<HalfFields>, Value<'c, 'a>, Value<'c, 'a>), PassError> {
    let via_f16 = plan.b_through_f16(a.format, b.format);
    let pow = via_f16.map_or(0, |f| f.shift);
    Ok((
        via_f16,
        scaled_decode_table(e, func, a.format, pow)?,
        scaled_decode_table(e, func, b.format, -pow)?,
    ))
}

/// The f32 kernel: codes decoded to f32 through a table, A packed into row tiles and B
/// into column panels, `2 mr` FMAs per k. With `pairs` (`bf16-dot=true`, `bf16_pairs`), each
/// two k of A's tiles and of B's decoded panel are packed into 32-bit words of two bf16
/// (k in the low half, k + 1 in the high; the f32 patterns' high halves, exact), and per
/// two k a tile takes `mr` word broadcasts, 2 vector loads and `2 mr` `vdpbf16ps`.
fn gemm_f32<'c, 'a>(
    e: &Emitter<'c, 'a>,
    g: &Gemm<'c, 'a>,
    a: &Side<'c, 'a>,
    b: &Side<'c, 'a>,
    func: OperationRef<'c, 'a>,
    pairs: bool,
) -> Result<(), PassError> {
    // A's f32 table serves its f32 tiles only: with `pairs` its words have tables of
    // their own (`pair_tables`).
    let via_f16 = g.plan.b_through_f16(a.format, b.format);
    let pow = via_f16.map_or(0, |f| f.shift);
    let table_b = scaled_decode_table(e, func, b.format, -pow)?;
    let f32t = e.f32_type();
    let (zero, one) = (e.index(0), e.index(1));
    let Tile { lanes, mr: mr_c } = g.plan.tile;
    let nr_c = g.plan.tile.nr();
    let vl = lanes as u64;
    let (mr, nr) = (e.index(mr_c), e.index(nr_c));
    let k = g.k;
    let zf = e.f32(0.0);
    // A in row tiles, transposed so that a tile's mr values of one k are contiguous, all
    // of K at once; B in column panels likewise, one K block at a time (decoded at the
    // block's start, so it is read back from cache, not memory: N x K f32 would be 4-8x
    // the codes, 256 MiB for FP8 at N = K = 8192); padding rows and columns are zero.
    let i32t = e.int_type(32);
    // With `pairs`, A's row tiles are words of two bf16 instead (`ap2`, below).
    let k2 = ceil_div(e, k, e.index(2));
    let (ap, ap2) = if pairs {
        let words = e.alloc(i32t, &[None, None, Some(mr_c)], &[g.m_tiles, k2], 64);
        (None, Some(words))
    } else {
        let values = e.alloc(f32t, &[None, None, Some(mr_c)], &[g.m_tiles, k], 64);
        (Some(values), None)
    };
    // With `pairs`, a panel's K block also as words of two bf16 (its second buffer).
    let panels = |e: &Emitter<'c, 'a>, n| {
        let mut buffers = vec![g.block_buffer(e, f32t, (1, nr_c), n)];
        if pairs {
            buffers.push(g.block_buffer(e, i32t, (2, nr_c), n));
        }
        buffers
    };
    // Row `j` of panel `panel` (`real`: inside the operand; `rr`: the row read, clamped)
    // over k in `lo..hi`, decoded one code at a time into `packed_to[panel, kk - base, j]`.
    let decode_row =
        |e: &Emitter<'c, 'a>,
         side: &Side<'c, 'a>,
         table: Value<'c, 'a>,
         packed_to: Value<'c, 'a>,
         (panel, j): (Value<'c, 'a>, Value<'c, 'a>),
         (real, rr): (Value<'c, 'a>, Value<'c, 'a>),
         (base, lo, hi): (Value<'c, 'a>, Value<'c, 'a>, Value<'c, 'a>)| {
            e.for_loop(lo, hi, one, &[], |e, kk, _| {
                let v = side.table_value(e, table, (rr, kk));
                e.store(
                    e.select(real, v, zf),
                    packed_to,
                    &[panel, e.subi(kk, base), j],
                );
                vec![]
            });
        };
    // Chunks of DECODE_CHUNK k: a row's codes of a chunk are read in order (one cache line
    // of FP8 codes), and the chunk of the tile they fill stays in L1 until all its rows
    // have written it.
    let chunk = e.index(DECODE_CHUNK);
    // A's row tile `t`, all of K, one code at a time.
    let decode_a = |e: &Emitter<'c, 'a>, (ap, table_a), t: Value<'c, 'a>| {
        e.for_loop(zero, k, chunk, &[], |e, c0, _| {
            let c1 = e.minui(e.addi(c0, chunk), k);
            e.for_loop(zero, mr, one, &[], |e, j, _| {
                let (real, rr) = row_of(e, a, e.addi(e.muli(t, mr), j));
                prefetch_codes(e, a, rr, c0, k);
                decode_row(e, a, table_a, ap, (t, j), (real, rr), (zero, c0, c1));
                vec![]
            });
            vec![]
        });
    };
    // With `pairs`, A's row tile `t` as words of two bf16 (k past K zero), all of K,
    // straight from the codes: a pair's word is one table's entry for its first code (the
    // value's bf16 pattern in the low half) or'ed with another's for its second (in the
    // high half). Decoding to f32 first and packing the words in a second pass took 12%
    // of FP8 2048^3 on one Zen 5 thread (both passes vectorized by LLVM into gathers and
    // scatters).
    let pair_tables = |e: &Emitter<'c, 'a>| -> Result<_, PassError> {
        let bits: Vec<u32> = scaled_decode_values(a.format, pow)
            .iter()
            .map(|v| v.to_bits())
            .collect();
        let low: Vec<i32> = bits.iter().map(|&b| (b >> 16) as i32).collect();
        let high: Vec<i32> = bits.iter().map(|&b| (b & 0xFFFF_0000) as i32).collect();
        Ok((int_table(e, func, &low)?, int_table(e, func, &high)?))
    };
    // Folded (`Plan::folded`), each pattern times its scale: exact, by `tiles_fold` a
    // normal number (zeros, infinities and NaNs as they were), so its low 16 bits stay
    // clear.
    let f32_bits =
        |e: &Emitter<'c, 'a>, bits, times| e.bitcast(e.mulf(e.bitcast(bits, f32t), times), i32t);
    let a_scaled =
        |e: &Emitter<'c, 'a>, (lo, hi): (Value<'c, 'a>, Option<Value<'c, 'a>>), (rr, kk)| {
            if !g.plan.folded {
                return (lo, hi);
            }
            let sa = a.scaled.block_value(e, rr, kk);
            let sixteen = e.i32(16);
            let lo = e.shrui(f32_bits(e, e.shli(lo, sixteen), sa), sixteen);
            (lo, hi.map(|hi| f32_bits(e, hi, sa)))
        };
    let decode_a_pairs = |e: &Emitter<'c, 'a>, ap2, (low, high), t: Value<'c, 'a>| {
        let two = e.index(2);
        e.for_loop(zero, k, chunk, &[], |e, c0, _| {
            let c1 = e.minui(e.addi(c0, chunk), k);
            // Chunks start at even k; only the last may end at an odd K.
            let (p0, p1) = (e.divui(c0, two), e.divui(c1, two));
            e.for_loop(zero, mr, one, &[], |e, j, _| {
                let (real, rr) = row_of(e, a, e.addi(e.muli(t, mr), j));
                prefetch_codes(e, a, rr, c0, k);
                let store = |e: &Emitter<'c, 'a>, word, kp| {
                    e.store(e.select(real, word, e.i32(0)), ap2, &[t, kp, j]);
                };
                e.for_loop(p0, p1, one, &[], |e, kp, _| {
                    let k_lo = e.muli(kp, two);
                    let lo = a.table_value(e, low, (rr, k_lo));
                    let hi = a.table_value(e, high, (rr, e.addi(k_lo, one)));
                    let (lo, hi) = a_scaled(e, (lo, Some(hi)), (rr, k_lo));
                    store(e, e.ori(lo, hi.expect("the high half")), kp);
                    vec![]
                });
                e.if_then(e.cmpi(CmpiPredicate::Ult, e.muli(p1, two), c1), |e| {
                    let kk = e.subi(c1, one);
                    let (lo, _) = a_scaled(e, (a.table_value(e, low, (rr, kk)), None), (rr, kk));
                    store(e, lo, p1);
                });
                vec![]
            });
            vec![]
        });
    };
    match (ap, ap2) {
        (Some(ap), _) => {
            let table_a = scaled_decode_table(e, func, a.format, pow)?;
            g.par(e, g.m_tiles, &|e, t| decode_a(e, (ap, table_a), t));
        }
        (_, Some(ap2)) => {
            let tables = pair_tables(e)?;
            g.par(e, g.m_tiles, &|e, t| decode_a_pairs(e, ap2, tables, t));
        }
        _ => unreachable!("A's tiles in f32 or in pairs"),
    }
    // The word of two bf16 of f32 values `lo` and `hi` (vectors of `i32` bit patterns,
    // their low 16 bits clear): `lo`'s high half below `hi`'s.
    let pair_word =
        |e: &Emitter<'c, 'a>, lo, hi, shift, mask| e.ori(e.shrui(lo, shift), e.andi(hi, mask));
    // B's panel over the K block `k0..k1`, eight rows at a time, decoded a vector of a
    // row's codes at once and transposed in registers into the panel's layout (eight
    // rows of one k contiguous): with `decode=f16` where the format allows, 16 k a step,
    // the codes' f16 patterns on 16-bit lanes transposed two 8 x 8 blocks at once, then
    // widened (`codes::f16_patterns`, `widen_f16`); else 8 k a step by `codes::decode`'s
    // bit arithmetic on i32 lanes and a transpose of f32. Both give the table's values. A
    // group of rows reaching past B (the last panel's padding) and a chunk's last few k
    // take the table one code at a time. At the decode shape (16 x N x K) the table decode
    // was most of the time: a table load and a 4-byte store a code took ~1.5 cycles.
    let step_k: i64 = if via_f16.is_some() { 16 } else { 8 };
    // The vector step at `kk` of the rows `rows` (read rows), into `slot` of `bp` at
    // column `j0`.
    let decode_step = |e: &Emitter<'c, 'a>,
                       (bp, slot, j0): (Value<'c, 'a>, Value<'c, 'a>, Value<'c, 'a>),
                       rows: &[Value<'c, 'a>],
                       kb: Value<'c, 'a>,
                       kk: Value<'c, 'a>| {
        let store = |e: &Emitter<'c, 'a>, v, x: i64| {
            e.vstore(v, bp, &[slot, e.addi(kb, e.index(x)), j0]);
        };
        match via_f16 {
            Some(fields) => {
                let patterns: Vec<_> = rows
                    .iter()
                    .map(|&rr| {
                        let codes = load_codes(e, b, (rr, kk), 16, 16);
                        codes::f16_patterns(e, b.format, fields, codes)
                    })
                    .collect();
                let i16t = e.int_type(16);
                for (x, v) in transpose8x16(e, &patterns).into_iter().enumerate() {
                    for half in 0..2i64 {
                        let lanes: Vec<i64> = (8 * half..8 * half + 8).collect();
                        let eight_rows = e.shuffle(v, v, i16t, &lanes);
                        store(e, codes::widen_f16(e, eight_rows), x as i64 + 8 * half);
                    }
                }
            }
            None => {
                let values: Vec<_> = rows
                    .iter()
                    .map(|&rr| codes::decode(e, b.format, load_codes(e, b, (rr, kk), 8, 32)))
                    .collect();
                for (x, v) in transpose8(e, &values, e.f32_type()).into_iter().enumerate() {
                    store(e, v, x as i64);
                }
            }
        }
    };
    let decode_b = |e: &Emitter<'c, 'a>, panel: PanelAt<'_, 'c, 'a>, k0: Value<'c, 'a>, k1| {
        let (bp, slot, pb) = (panel.buffers[0], panel.slot, panel.pb);
        let step = e.index(step_k);
        e.for_loop(k0, k1, chunk, &[], |e, c0, _| {
            let c1 = e.minui(e.addi(c0, chunk), k1);
            let cv = e.addi(c0, e.muli(e.divui(e.subi(c1, c0), step), step));
            row_groups(
                e,
                b,
                (pb, nr_c),
                (c0, k),
                &|e, read, j0| {
                    e.for_loop(c0, cv, step, &[], |e, kk, _| {
                        decode_step(e, (bp, slot, j0), read, e.subi(kk, k0), kk);
                        vec![]
                    });
                },
                &|e, j, rows| decode_row(e, b, table_b, bp, (slot, j), rows, (k0, c0, cv)),
            );
            // The chunk's last few k (fewer than a step: the end of K or of a K block that is
            // not a whole number of steps) one code at a time.
            e.if_then(e.cmpi(CmpiPredicate::Ult, cv, c1), |e| {
                e.for_loop(zero, nr, one, &[], |e, j, _| {
                    let rows = row_of(e, b, e.addi(e.muli(pb, nr), j));
                    decode_row(e, b, table_b, bp, (slot, j), rows, (k0, cv, c1));
                    vec![]
                });
            });
            vec![]
        });
    };

    let lane = e.index(lanes);
    // B's panel of the K block `k0..k1` as words of two bf16 (k past the block zero).
    let decode_b_pairs = |e: &Emitter<'c, 'a>, panel: PanelAt<'_, 'c, 'a>, k0, k1| {
        decode_b(e, panel, k0, k1);
        if !pairs {
            return;
        }
        let (bp, pp, slot) = (panel.buffers[0], panel.buffers[1], panel.slot);
        let len = e.subi(k1, k0);
        let last = e.subi(len, one);
        let (shift, mask) = (e.int_splat(32, 16, vl), e.int_splat(32, 0xFFFF_0000, vl));
        let zeros = e.int_splat(32, 0, vl);
        let pairs = ceil_div(e, len, e.index(2));
        // The pairs `q0..q1`, their columns' values times `sb` (one vector a half of the
        // panel) where given.
        let words = |e: &Emitter<'c, 'a>, (q0, q1), sb: Option<[Value<'c, 'a>; 2]>| {
            e.for_loop(q0, q1, one, &[], |e, kp, _| {
                let k_lo = e.muli(kp, e.index(2));
                let k_hi = e.addi(k_lo, one);
                let inside = e.cmpi(CmpiPredicate::Ult, k_hi, len);
                for (x, c) in (0..nr_c).step_by(lanes as usize).enumerate() {
                    let c = e.index(c);
                    let value = |e: &Emitter<'c, 'a>, kb| {
                        let v = e.vload(bp, &[slot, kb, c], vl);
                        let v = sb.map_or(v, |sb| e.mulf(v, sb[x]));
                        e.vector_bitcast(v, vl, i32t)
                    };
                    let lo = value(e, k_lo);
                    let hi = e.select(inside, value(e, e.minui(k_hi, last)), zeros);
                    e.vstore(pair_word(e, lo, hi, shift, mask), pp, &[slot, kp, c]);
                }
                vec![]
            });
        };
        match g.plan.seg.filter(|_| g.plan.folded) {
            // Folded: each segment's pairs times its columns' scales (exact, as A's).
            Some(s) => {
                let per = e.index(s / 2);
                e.for_loop(zero, pairs, per, &[], |e, q0, _| {
                    let seg = e.divui(e.addi(k0, e.muli(q0, e.index(2))), e.index(s));
                    let sb = [zero, lane].map(|c| e.vload(g.sbp, &[panel.pb, seg, c], vl));
                    words(e, (q0, e.minui(e.addi(q0, per), pairs)), Some(sb));
                    vec![]
                });
            }
            None => words(e, (zero, pairs), None),
        }
    };

    // One k of a tile (`kb`: k within its K block).
    let step =
        |e: &Emitter<'c, 'a>, panel: PanelAt<'_, 'c, 'a>, mt, kk, kb, acc: &[Value<'c, 'a>]| {
            let (bp, slot) = (panel.buffers[0], panel.slot);
            let b0 = e.vload(bp, &[slot, kb, zero], vl);
            let b1 = e.vload(bp, &[slot, kb, lane], vl);
            let mut next = Vec::with_capacity(2 * mr_c as usize);
            for i in 0..mr_c as usize {
                let ap = ap.expect("A's values without pairs");
                let av = e.broadcast(e.load(ap, &[mt, kk, e.index(i as i64)]), vl);
                next.push(e.fma(av, b0, acc[2 * i]));
                next.push(e.fma(av, b1, acc[2 * i + 1]));
            }
            next
        };
    // A whole scale segment of up to 32 k is unrolled (`scf.if` on its length; a ragged
    // last segment takes the loop): MX FP8 at 2048^3 on one Zen 3 thread went from 72-74
    // to 77-78 GFLOP/s. Longer intervals (K blocks, 128-blocks) gained nothing.
    let unroll = match g.plan.seg {
        Some(_) if g.interval <= 32 => Some(g.interval),
        _ => None,
    };
    // Two k of a tile on bf16 pairs (`kp`: the pair of A, `kpb`: the pair within the K
    // block).
    let dpbf16 = if lanes == 16 {
        "llvm.x86.avx512bf16.dpbf16ps.512"
    } else {
        "llvm.x86.avx512bf16.dpbf16ps.256"
    };
    let f32v = e.vector_type(vl, f32t);
    let pair_step =
        |e: &Emitter<'c, 'a>, panel: PanelAt<'_, 'c, 'a>, mt, kp, kpb, acc: &[Value<'c, 'a>]| {
            let (pp, slot) = (panel.buffers[1], panel.slot);
            let ap2 = ap2.expect("A's pairs with pairs");
            let halves = |v| e.vector_bitcast(v, 2 * vl, melior::ir::Type::bfloat16(e.ctx()));
            let b0 = halves(e.vload(pp, &[slot, kpb, zero], vl));
            let b1 = halves(e.vload(pp, &[slot, kpb, lane], vl));
            let mut next = Vec::with_capacity(2 * mr_c as usize);
            for i in 0..mr_c as usize {
                let av = halves(e.broadcast(e.load(ap2, &[mt, kp, e.index(i as i64)]), vl));
                next.push(e.call_intrinsic(dpbf16, &[acc[2 * i], av, b0], f32v));
                next.push(e.call_intrinsic(dpbf16, &[acc[2 * i + 1], av, b1], f32v));
            }
            next
        };
    let two = e.index(2);
    g.sweep(e, &panels, &decode_b_pairs, &|e, panel, mt, k0, s0, s1| {
        if pairs {
            // Intervals start at even k (K blocks and segments are even); the last may end
            // at an odd K, its last pair's high halves zero.
            interval_sums(
                e,
                (e.divui(k0, two), e.divui(s0, two), ceil_div(e, s1, two)),
                unroll.map(|u| u / 2),
                (2 * mr_c, vl),
                &|e, kp, kpb, acc| pair_step(e, panel, mt, kp, kpb, acc),
            )
        } else {
            interval_sums(
                e,
                (k0, s0, s1),
                unroll,
                (2 * mr_c, vl),
                &|e, kk, kb, acc| step(e, panel, mt, kk, kb, acc),
            )
        }
    });
    for buffer in ap.into_iter().chain(ap2) {
        e.dealloc(buffer);
    }
    Ok(())
}

/// One interval's partial sums, `count` vectors of `lanes` f32 from zero: `step(e, k, k -
/// k0, acc)` for each k of `s0..s1` in order (`k0`: the K block's start), a whole interval
/// of `unroll` k unrolled (`scf.if` on its length), else in a loop.
#[allow(clippy::type_complexity)]
pub(crate) fn interval_sums<'c, 'a>(
    e: &Emitter<'c, 'a>,
    (k0, s0, s1): (Value<'c, 'a>, Value<'c, 'a>, Value<'c, 'a>),
    unroll: Option<i64>,
    (count, lanes): (i64, u64),
    step: &dyn Fn(
        &Emitter<'c, 'a>,
        Value<'c, 'a>,
        Value<'c, 'a>,
        &[Value<'c, 'a>],
    ) -> Vec<Value<'c, 'a>>,
) -> Vec<Value<'c, 'a>> {
    let one = e.index(1);
    let inits: Vec<Value> = (0..count).map(|_| e.zero_vector(lanes)).collect();
    let ragged = |e: &Emitter<'c, 'a>| {
        e.for_loop(s0, s1, one, &inits, |e, kk, acc| {
            step(e, kk, e.subi(kk, k0), acc)
        })
    };
    let Some(u) = unroll else {
        return ragged(e);
    };
    let whole = e.cmpi(CmpiPredicate::Eq, e.subi(s1, s0), e.index(u));
    let types = vec![e.vector_type(lanes, e.f32_type()); inits.len()];
    e.if_else(
        whole,
        &types,
        |e| {
            let b0 = e.subi(s0, k0);
            (0..u).fold(inits.clone(), |acc, x| {
                let x = e.index(x);
                step(e, e.addi(s0, x), e.addi(b0, x), &acc)
            })
        },
        ragged,
    )
}

/// Whether the f32 kernel runs on bf16 pairs (`bf16-dot=true`) for these formats, A's values
/// times `2^pow` and B's times `2^-pow` (the f16 decode's shift, else 0), with scale
/// segments `seg`: every finite value of both is an exact bf16 (its f32 pattern's low 16
/// bits clear), and the nonzero products reach neither below f32's normal range nor past
/// 2^127. Every value is a multiple of its format's smallest, so every product and every
/// sum of them is zero or at least `min_a min_b`: `vdpbf16ps`'s flush of subnormal inputs
/// and results (DAZ, FTZ) never acts, and each product is exact (significands of at most 8
/// bits), as the f32 kernel's are. Segments must be even (a pair never spans two).
fn bf16_pairs(fa: ScaledFormat, fb: ScaledFormat, pow: i32, seg: Option<i64>) -> bool {
    let range = |f: ScaledFormat, pow: i32| {
        let factor = f64::from(pow).exp2();
        let mut exact = true;
        let (mut min, mut max) = (f64::INFINITY, 0f64);
        for c in 0..f.code_count() {
            let v = f64::from(f.decode(c as u8)) * factor;
            if !v.is_finite() || v == 0.0 {
                continue;
            }
            exact &= (v as f32).to_bits() & 0xFFFF == 0 && f64::from(v as f32) == v;
            min = min.min(v.abs());
            max = max.max(v.abs());
        }
        (exact, min, max)
    };
    let (ea, min_a, max_a) = range(fa, pow);
    let (eb, min_b, max_b) = range(fb, -pow);
    let normal = f64::from(f32::MIN_POSITIVE);
    ea && eb
        && seg.is_none_or(|s| s % 2 == 0)
        && min_a >= normal
        && min_b >= normal
        && min_a * min_b >= normal
        && max_a * max_b <= 2f64.powi(127)
}

/// B's f16 fields where the f32 kernel under `decode=f16` takes them for these formats
/// (`None`: B through the bit arithmetic): B's format embeds in f16 (lowp-formats'
/// `f16_fields`) and A's table takes the power of two between them exactly.
fn f16_route(fa: ScaledFormat, fb: ScaledFormat) -> Option<HalfFields> {
    fb.f16_fields().filter(|f| scales_exactly(fa, f.shift))
}

/// The byte kernel's plan (`dot=i8`): both formats as integers (`value = n 2^-shift`, see
/// `lowp_formats::IntEmbedding`), K steps per interval and K block.
#[derive(Clone, Copy, Debug)]
struct ByteDot {
    a: IntEmbedding,
    b: IntEmbedding,
    kc: i64,
    /// Sum the `pmaddubsw` pairs in i16 through an interval (one `pmaddwd` at its end):
    /// where `interval ma mb`, the most an i16 lane can reach, fits i16. Else `pmaddwd`
    /// every step into i32.
    narrow: bool,
    /// `vpdpbusd` (VNNI): each step's four products of a column summed into its i32 sum by
    /// one instruction (no i16 pair sums, so neither `narrow` nor `pmaddubsw`'s
    /// saturation limit).
    vnni: bool,
}

impl ByteDot {
    /// The value of an integer product `n_a n_b`: `2^-(shift_a + shift_b)`.
    fn unit(&self) -> f32 {
        (-(self.a.shift + self.b.shift) as f32).exp2()
    }
}

/// Whether `lowp-to-loops{dot=i8}` (`vnni`: `dot=vnni`) runs the byte kernel for a matmul
/// of these formats and layouts (else the f32 kernel): see [`byte_dot`].
pub fn takes_byte_dot(
    fa: ScaledFormat,
    fb: ScaledFormat,
    la: ScaleLayout,
    lb: ScaleLayout,
    vnni: bool,
) -> bool {
    // The K block shapes the kernel's plan, not whether it runs: any will do.
    byte_dot(segment(la, lb), 256, fa, fb, vnni).is_some()
}

/// The byte kernel for these formats, segment and K block, or `None` when the f32 kernel
/// must run: a format that is not small integers, products that could saturate
/// `pmaddubsw`'s 16-bit pair sums (not with `vnni`: `vpdpbusd` sums them in i32), or
/// intervals whose sums could leave f32's 24-bit integers (then the conversion would round,
/// and the kernel would no longer compute each interval exactly).
fn byte_dot(
    seg: Option<i64>,
    kc: i64,
    fa: ScaledFormat,
    fb: ScaledFormat,
    vnni: bool,
) -> Option<ByteDot> {
    let a = fa.int_embedding(127)?;
    let b = fb.int_embedding(127)?;
    let (ma, mb) = (i64::from(a.max), i64::from(b.max));
    // A's bytes are n + ma (unsigned, at most 2 ma), B's n (signed); pmaddubsw adds two
    // such products in a saturating i16.
    if !vnni && 2 * (2 * ma) * mb > i64::from(i16::MAX) {
        return None;
    }
    // 2^-(shift_a + shift_b) takes an interval's integer sum to its value exactly (a
    // nonzero sum is at least 1 and at most 2^24).
    if (a.shift + b.shift).abs() > 100 {
        return None;
    }
    // An interval's sum is at most `interval ma mb` in magnitude: exact in f32 up to 2^24
    // (the sum with A's offset, twice that, stays far inside i32); in i16 lanes (each sums
    // half an interval's products, each at most 2 ma mb with the offset) up to 2^15 - 1.
    let cap = (1 << 24) / (ma * mb).max(1);
    // VNNI's sums are i32 from the first step: never narrow.
    let narrow_cap = if vnni {
        0
    } else {
        i64::from(i16::MAX) / (ma * mb).max(1) / 4 * 4
    };
    match seg {
        Some(s) => (s % 4 == 0 && s <= cap).then_some(ByteDot {
            a,
            b,
            kc,
            narrow: s <= narrow_cap,
            vnni,
        }),
        // Narrow sums where their intervals stay long enough (32 k: 8 steps a flush).
        None if narrow_cap >= 32 => Some(ByteDot {
            a,
            b,
            kc: (kc.min(narrow_cap) / 4 * 4).max(4),
            narrow: true,
            vnni,
        }),
        None => Some(ByteDot {
            a,
            b,
            kc: (kc.min(cap) / 4 * 4).max(4),
            narrow: false,
            vnni,
        }),
    }
}

/// The integer of each of a side's codes (`IntEmbedding`): the byte kernel's formats.
fn int_codes(side: &Side<'_, '_>, func: OperationRef<'_, '_>) -> Result<Vec<i32>, PassError> {
    side.format
        .int_code_table(127)
        .ok_or_else(|| unsupported(func, "no integer embedding"))
}

/// Integers (each plus `offset`) as `pshufb` tables of `width` bytes: 16 codes a table,
/// each 128-bit slice holding the whole table (`pshufb` looks up within slices).
fn byte_tables<'c, 'a>(
    e: &Emitter<'c, 'a>,
    ints: &[i32],
    offset: i64,
    width: u64,
) -> Vec<Value<'c, 'a>> {
    ints.chunks(16)
        .map(|t| {
            let entries: Vec<i64> = (0..width as usize)
                .map(|x| i64::from(*t.get(x % 16).unwrap_or(&0)) + offset)
                .collect();
            e.int_vector(8, &entries)
        })
        .collect()
}

/// The bytes of a `vector<width x i8>` of codes (each below the tables' count) by `tables`
/// (`byte_tables`): a `pshufb` a table (AVX2 at 32 bytes, AVX512BW at 64), the right one
/// selected by the codes' high bits.
fn byte_lookup<'c, 'a>(
    e: &Emitter<'c, 'a>,
    tables: &[Value<'c, 'a>],
    codes: Value<'c, 'a>,
    width: u64,
) -> Value<'c, 'a> {
    let pshufb = if width == 64 {
        "llvm.x86.avx512.pshuf.b.512"
    } else {
        "llvm.x86.avx2.pshuf.b"
    };
    let splat8 = |v: i64| e.int_splat(8, v, width);
    // One table: the codes are its indices as they are (below 16, bit 7 clear).
    let low = if tables.len() > 1 {
        e.andi(codes, splat8(0xF))
    } else {
        codes
    };
    let high = e.shrui(codes, splat8(4));
    let bytes_t = e.vector_type(width, e.int_type(8));
    tables
        .iter()
        .enumerate()
        .fold(None, |acc, (t, &table)| {
            let v = e.call_intrinsic(pshufb, &[table, low], bytes_t);
            Some(match acc {
                None => v,
                Some(acc) => e.select(e.cmpi(CmpiPredicate::Eq, high, splat8(t as i64)), v, acc),
            })
        })
        .expect("a table of at least one code")
}

/// The codes of `bytes` (a `vector<n x i8>` of packed FP4 codes, two a byte) in k order,
/// low nibble first: a `vector<2n x i8>`.
fn nibbles_in_order<'c, 'a>(e: &Emitter<'c, 'a>, bytes: Value<'c, 'a>, n: u64) -> Value<'c, 'a> {
    let lo = e.andi(bytes, e.int_splat(8, 0xF, n));
    let hi = e.shrui(bytes, e.int_splat(8, 4, n));
    let half = n as i64;
    let order: Vec<i64> = (0..half).flat_map(|i| [i, half + i]).collect();
    e.shuffle(lo, hi, e.int_type(8), &order)
}

/// The byte kernel: codes decoded to the integers of their embedding, four consecutive k
/// in one 32-bit word (A's as `n + ma`, unsigned; B's as `n`, signed), A in row tiles of
/// words and B in column panels of words, a K block at a time (decoded, and swept, as the
/// f32 kernel's panels: `Gemm::sweep`). Per 4 k a tile takes `mr` word broadcasts, 2
/// vector loads and `2 mr` x (`pmaddubsw`, `addi`) into i16 sums (`narrow`; else also a
/// `pmaddwd` with ones per step, into i32 sums), or with `vnni` `2 mr` `vpdpbusd` into i32
/// sums. The sums start from minus `ma` times B's column sums of the interval (A's offset
/// taken away), so at its end they are (widened to i32 by `pmaddwd` where narrow) the
/// exact integer partial sums, converted to f32 and times `2^-(shift_a + shift_b)`.
fn gemm_bytes<'c, 'a>(
    e: &Emitter<'c, 'a>,
    g: &Gemm<'c, 'a>,
    a: &Side<'c, 'a>,
    b: &Side<'c, 'a>,
    d: ByteDot,
    func: OperationRef<'c, 'a>,
) -> Result<(), PassError> {
    let ma = d.a.max as i32;
    let a_ints: Vec<i32> = int_codes(a, func)?.into_iter().map(|n| n + ma).collect();
    let table_a = int_table(e, func, &a_ints)?;
    let b_ints = int_codes(b, func)?;
    let table_b = int_table(e, func, &b_ints)?;
    let i32t = e.int_type(32);
    let i8t = e.int_type(8);
    let i16t = e.int_type(16);
    let (zero, one) = (e.index(0), e.index(1));
    let four = e.index(4);
    let Tile { lanes, mr: mr_c } = g.plan.tile;
    let nr_c = g.plan.tile.nr();
    let vl = lanes as u64;
    let (mr, nr) = (e.index(mr_c), e.index(nr_c));
    let k = g.k;
    let k4 = ceil_div(e, k, four);
    let q_per = e.index(g.interval / 4);
    // A's words for all of K; B's a K block at a time, as the f32 kernel's panels.
    let apw = e.alloc(i32t, &[None, None, Some(mr_c)], &[g.m_tiles, k4], 64);
    // B's words of a K block, a panel to a slot; and -ma x (B's column sum over each
    // interval of the block): the sums start there, which takes away what A's offset adds
    // to them.
    let panels = |e: &Emitter<'c, 'a>, n| {
        vec![
            g.block_buffer(e, i32t, (4, nr_c), n),
            g.block_buffer(e, i32t, (g.interval, nr_c), n),
        ]
    };

    // The word of 4 codes of row `rr` from k = 4 q: each code's integer as a byte, `pad`
    // beyond K (and where `real` is false).
    let word = |e: &Emitter<'c, 'a>,
                side: &Side<'c, 'a>,
                table: Value<'c, 'a>,
                rr: Value<'c, 'a>,
                q: Value<'c, 'a>,
                real: Option<Value<'c, 'a>>,
                pad: i32| {
        let mut word = e.i32(0);
        for byte in 0..4 {
            let kk = e.addi(e.muli(q, four), e.index(byte));
            let mut valid = e.cmpi(CmpiPredicate::Ult, kk, k);
            if let Some(real) = real {
                valid = e.andi(valid, real);
            }
            let kk = e.minui(kk, e.subi(k, one));
            let v = e.select(
                valid,
                side.table_value(e, table, (rr, kk)),
                e.i32(pad as u32),
            );
            let bits = e.andi(v, e.i32(0xFF));
            word = e.ori(word, e.shli(bits, e.i32(8 * byte as u32)));
        }
        word
    };
    g.par(e, g.m_tiles, &|e, t| {
        e.for_loop(zero, k4, one, &[], |e, q, _| {
            e.for_loop(zero, mr, one, &[], |e, i, _| {
                let row = e.addi(e.muli(t, mr), i);
                let rr = e.minui(row, e.subi(a.rows, one));
                // Past K: n = 0, stored as its offset ma.
                let w = word(e, a, table_a, rr, q, None, ma);
                e.store(w, apw, &[t, q, i]);
                vec![]
            });
            vec![]
        });
    });
    // B's integers as bytes, 32 codes of a row at once (x86 `pshufb`: a 16-byte table
    // lookup in each 128-bit half, one per 16 codes of the table, the right one selected
    // by the code's high bits).
    let tables = byte_tables(e, &b_ints, 0, 32);
    let splat8 = |e: &Emitter<'c, 'a>, v: i64| e.int_splat(8, v, 32);
    let int_bytes = |e: &Emitter<'c, 'a>, rr: Value<'c, 'a>, kk: Value<'c, 'a>| {
        let codes = if b.packed {
            let bytes = e.vload(b.bits, &[rr, e.divui(kk, e.index(2))], 16);
            nibbles_in_order(e, bytes, 16)
        } else {
            e.andi(
                e.vload(b.bits, &[rr, kk], 32),
                splat8(e, b_ints.len() as i64 - 1),
            )
        };
        byte_lookup(e, &tables, codes, 32)
    };
    let ones8 = splat8(e, 1);
    let ones16 = e.int_splat(16, 1, 16);
    let (i16x16, i32x8) = (e.vector_type(16, i16t), e.vector_type(8, i32t));
    // Panel `p`'s words and interval sums of the K block `k0..k1` (`k0` a multiple of 4;
    // words past K are padding), each row's codes prefetched some chunks on: eight rows
    // at a time, 32 k a step, each row's integers looked up at once and the 8 x 8 block of
    // words transposed in registers into the panel's layout; a group of rows reaching past
    // B and the block's last words short of a step one word at a time. Then the interval
    // sums, eight columns at once from the stored words (pmaddubsw with ones, pmaddwd).
    let decode_b = |e: &Emitter<'c, 'a>, panel: PanelAt<'_, 'c, 'a>, k0: Value<'c, 'a>, k1| {
        let (bpw, cs, slot, p) = (panel.buffers[0], panel.buffers[1], panel.slot, panel.pb);
        let qb = e.divui(k0, four);
        let q_end = ceil_div(e, k1, four);
        let step = e.index(32);
        let kv = e.addi(k0, e.muli(e.divui(e.subi(k1, k0), step), step));
        let qv = e.divui(kv, four);
        // Row `j`'s words `lo..hi` one at a time.
        let words = |e: &Emitter<'c, 'a>, j, (real, rr), lo, hi| {
            e.for_loop(lo, hi, one, &[], |e, q, _| {
                let w = word(e, b, table_b, rr, q, Some(real), 0);
                e.store(w, bpw, &[slot, e.subi(q, qb), j]);
                vec![]
            });
        };
        row_groups(
            e,
            b,
            (p, nr_c),
            (k0, k),
            &|e, read, j0| {
                e.for_loop(k0, kv, step, &[], |e, kk, _| {
                    let w: Vec<_> = read
                        .iter()
                        .map(|&rr| e.vector_bitcast(int_bytes(e, rr, kk), 8, i32t))
                        .collect();
                    let q0 = e.divui(e.subi(kk, k0), four);
                    for (x, v) in transpose8(e, &w, i32t).into_iter().enumerate() {
                        e.vstore(v, bpw, &[slot, e.addi(q0, e.index(x as i64)), j0]);
                    }
                    vec![]
                });
            },
            &|e, j, rows| words(e, j, rows, qb, qv),
        );
        e.if_then(e.cmpi(CmpiPredicate::Ult, qv, q_end), |e| {
            e.for_loop(zero, nr, one, &[], |e, j, _| {
                let rows = row_of(e, b, e.addi(e.muli(p, nr), j));
                words(e, j, rows, qv, q_end);
                vec![]
            });
        });
        // The sums start from minus A's offset times the column sum (narrow: in the low
        // i16 lane of the column's pair; whatever order the lanes wrap in, each ends within
        // i16, so the widened sum is exact).
        let intervals = ceil_div(e, e.subi(k1, k0), e.index(g.interval));
        let block_words = e.subi(q_end, qb);
        e.for_loop(zero, intervals, one, &[], |e, f, _| {
            let q0 = e.muli(f, q_per);
            let q1 = e.minui(e.addi(q0, q_per), block_words);
            for group in 0..nr_c / 8 {
                let j0 = e.index(8 * group);
                let zero8 = e.int_splat(32, 0, 8);
                let sum = e.for_loop(q0, q1, one, &[zero8], |e, q, acc| {
                    let w = e.vector_bitcast(e.vload(bpw, &[slot, q, j0], 8), 32, i8t);
                    let pairs = e.call_intrinsic("llvm.x86.avx2.pmadd.ub.sw", &[ones8, w], i16x16);
                    let quads = e.call_intrinsic("llvm.x86.avx2.pmadd.wd", &[pairs, ones16], i32x8);
                    vec![e.addi(acc[0], quads)]
                });
                let start = e.muli(sum[0], e.int_splat(32, i64::from(-ma), 8));
                let start = if d.narrow {
                    e.andi(start, e.int_splat(32, 0xFFFF, 8))
                } else {
                    start
                };
                e.vstore(start, cs, &[slot, f, j0]);
            }
            vec![]
        });
    };

    let (maddubs, maddwd, dpbusd) = if lanes == 16 {
        (
            "llvm.x86.avx512.pmaddubs.w.512",
            "llvm.x86.avx512.pmaddw.d.512",
            "llvm.x86.avx512.vpdpbusd.512",
        )
    } else {
        (
            "llvm.x86.avx2.pmadd.ub.sw",
            "llvm.x86.avx2.pmadd.wd",
            "llvm.x86.avx512.vpdpbusd.256",
        )
    };
    let lane = e.index(lanes);
    let ones = e.int_splat(16, 1, 2 * vl);
    let unit = e.broadcast(e.f32(d.unit()), vl);
    let i16v = e.vector_type(2 * vl, i16t);
    let i32v = e.vector_type(vl, i32t);
    let f32v = e.vector_type(vl, e.f32_type());
    g.sweep(e, &panels, &decode_b, &|e, panel, mt, k0, s0, s1| {
        let (bpw, cs, slot) = (panel.buffers[0], panel.buffers[1], panel.slot);
        let qb = e.divui(k0, four);
        let f = e.divui(e.subi(s0, k0), e.index(g.interval));
        let starts = [zero, lane].map(|c| {
            let v = e.vload(cs, &[slot, f, c], vl);
            if d.narrow {
                e.vector_bitcast(v, 2 * vl, i16t)
            } else {
                v
            }
        });
        let inits: Vec<Value> = (0..2 * mr_c as usize).map(|x| starts[x % 2]).collect();
        let q0 = e.divui(s0, four);
        let q1 = ceil_div(e, s1, four);
        let sums = e.for_loop(q0, q1, one, &inits, |e, q, acc| {
            let bytes = |v| e.vector_bitcast(v, 4 * vl, i8t);
            let qq = e.subi(q, qb);
            let b0 = bytes(e.vload(bpw, &[slot, qq, zero], vl));
            let b1 = bytes(e.vload(bpw, &[slot, qq, lane], vl));
            let mut next = Vec::with_capacity(2 * mr_c as usize);
            for i in 0..mr_c as usize {
                let av = bytes(e.broadcast(e.load(apw, &[mt, q, e.index(i as i64)]), vl));
                for (j, bj) in [b0, b1].into_iter().enumerate() {
                    if d.vnni {
                        next.push(e.call_intrinsic(dpbusd, &[acc[2 * i + j], av, bj], i32v));
                        continue;
                    }
                    let pairs = e.call_intrinsic(maddubs, &[av, bj], i16v);
                    next.push(if d.narrow {
                        e.addi(acc[2 * i + j], pairs)
                    } else {
                        let quads = e.call_intrinsic(maddwd, &[pairs, ones], i32v);
                        e.addi(acc[2 * i + j], quads)
                    });
                }
            }
            next
        });
        // Narrow sums: pairs of i16 lanes to i32 once an interval.
        let sums: Vec<Value> = if d.narrow {
            sums.iter()
                .map(|&s| e.call_intrinsic(maddwd, &[s, ones], i32v))
                .collect()
        } else {
            sums
        };
        sums.iter()
            .map(|&s| {
                let f = e.sitofp(s, f32v);
                if g.plan.unit_in_scales() {
                    f
                } else {
                    e.mulf(f, unit)
                }
            })
            .collect()
    });
    e.dealloc(apw);
    Ok(())
}
