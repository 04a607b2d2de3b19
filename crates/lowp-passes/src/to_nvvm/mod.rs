//! `lowp-to-nvvm`: `lowp.scaled_matmul` to an NVIDIA GPU kernel: a `gpu.launch` (tcgen05,
//! wgmma, generic) or block / thread `scf.parallel` nests that `gpu-map-parallel-loops` +
//! `convert-parallel-loops-to-gpu` turn into one (mma.sync), using the chip's tensor cores
//! where the formats allow.
//!
//! Per op, the strongest kernel the chip and the formats allow (one file each):
//! - `tcgen05.rs` (sm_100a): `tcgen05.mma.cta_group::1.kind::f8f6f4`, 128 x 64 tiles, A and
//!   B in shared memory behind descriptors, D in tensor memory (`tcgen05.alloc`), MMAs
//!   issued by one thread and completed through an mbarrier, D read per K segment with
//!   `tcgen05.ld`; for two MX operands with 32-blocks `kind::mxf8f6f4.block_scale` (E2M1 x
//!   E2M1: `kind::mxf4.block_scale`, K 64), for two NVFP4 ones
//!   `kind::mxf4nvf4.block_scale.block16`, the scales stored into tensor memory and applied
//!   by the MMA; for the formats no FP8 type holds, `kind::f16` on the f16 or bf16 patterns
//!   of their fields (K 16, the same tiles), with a remark.
//! - `wgmma_pipeline/` (sm_90a, row-major operands with static rows of a multiple of 16
//!   bytes): `wgmma.mma_async` m64n128k32, two warpgroups per 128 x 128 tile, a ring of 5
//!   stages filled by `cp.async` (dynamic shared memory), FP8 tiles in the 128-byte swizzle
//!   (translated from the stored codes by the threads that copied them where the format
//!   embeds in FP8), partial sums promoted at least every 128 of K (NVFP4: an instruction
//!   per 16-block, on translated tiles split in halves; or, `nvfp4=auto` (the default)
//!   and `f16`, each code times its block's scale as f16 into `m64nNk16.f32.f16.f16`, FP8
//!   beside it widened); a
//!   skinny swap-AB block (split-K in clusters) for small M; warp-specialized variants
//!   with a producer warpgroup, one of them loading the E4M3 / E5M2 operands by TMA
//!   (`wgmma-tma`; B multicast to clusters of 2 blocks sharing it; not on the f16 route).
//!   Formats no FP8 type holds but whose fields f16's do (E3M4, E2M5, E4M3 FNUZ, 7-bit
//!   customs), unpacked: the f16 route on the f16 patterns of their fields (with a remark),
//!   its k16 instructions summing into the accumulators where the scales are per tensor or
//!   per channel, promoted per block with the block's scales (MX, blockwise) otherwise;
//!   formats whose fields only bf16's hold (E5M2 FNUZ, 6- and 7-bit exponents) on bf16
//!   patterns and `k16.f32.bf16.bf16` alike.
//! - `wgmma.rs` (sm_90a, the other ops: dynamic K, rows that are not whole 16 bytes,
//!   NVFP4 16-blocks where no operand is translated or the split tiles leave too few
//!   stages, scale blocks of 8 or 4): the same instruction, one warpgroup per 64 x 128
//!   tile, A and B copied through registers, the next step's codes loaded while each wgmma
//!   runs; k16 on the f16 or bf16 patterns of the formats no FP8 type holds (with the
//!   remark).
//! - `mma_sync.rs` (sm_89 and later; on the register kernel of `matrix_kernel.rs`):
//!   `mma.sync.m16n8k32` through `llvm.call_intrinsic`, 4 warps per 64 x 64 tile; for the
//!   formats no FP8 type holds but whose fields move into f16's (E3M4, E2M5, E4M3 FNUZ,
//!   7-bit customs), `mma.sync.m16n8k16` on f16 patterns (`nvvm.mma.sync`), on every chip
//!   (with a remark); for those f16's exponent field does not hold either (E5M2 FNUZ,
//!   exponent fields of 6 or 7 bits, and mixes with them, OCP E5M2's infinities set to
//!   bf16's top exponent), the bf16 form on bf16 patterns.
//! - `gpu_generic.rs`: every other layout (scale blocks no instruction's K fits: neither a
//!   multiple of it nor a divisor in multiples of 4, 24 say; the register-staged kernels
//!   take shorter divisors, 8 or 4, one block a step; and the reason in a remark): 16 x
//!   16 threads per 64 x 64 tile, 4 x 4 outputs a thread, chunks of A and B decoded once
//!   into shared memory.
//!
//! The FP8 kernels take E4M3 / E5M2 directly and FP4 / FP6 / custom formats that embed
//! exactly in them (`ScaledFormat::fp8_embedding`, proved from the fields), translated code
//! by code on the way in. Block scales (MX, NVFP4, blockwise) are applied per K segment to
//! f32 accumulators, per-tensor / per-channel scales in the epilogue, as the oracle does.
//!
//! The launch's memref arguments (operands, scales, result) must be 16-byte aligned: the
//! pipelines copy rows of codes and of scales with 16-byte `cp.async` (or TMA) from each
//! memref's base. `cuMemAlloc` gives 256; `lowp-runtime` refuses a misaligned address
//! before the launch (`GpuKernel::address_check`).
//!
//! Before:
//! ```mlir
//! lowp.scaled_matmul %a[%sa], %b[%sb] into %c layouts(#lowp.mx<32>, #lowp.mx<32>)
//!     : memref<256x512xf8E4M3FN>[memref<256x16xf8E8M0FNU>], ... -> memref<256x128xf32>
//! ```
//! After (`chip=sm_90a`; shape of it: the cp.async pipeline of `wgmma_pipeline/`):
//! ```mlir
//! gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c2, %gz = %c1)
//!            threads(%tx, %ty, %tz) in (%sx = %c256, %sy = %c1, %sz = %c1)
//!            dynamic_shared_memory_size %c132096_i32 {
//!   %ring = gpu.dynamic_shared_memory : memref<?xi8, #gpu.address_space<workgroup>>
//!   scf.for %s = %c0 to %c3 step %c1 {     // prologue: stages 0..2
//!     nvvm.cp.async.shared.global %dst, %src, 16, cache = cg, %size  // x 8 per thread
//!     nvvm.cp.async.commit.group
//!   }
//!   %acc:64 = scf.for %s = %c0 to %c4 step %c1 iter_args(%acc..) {
//!     nvvm.cp.async.wait.group 2            // stage %s landed; fence.proxy.async, barrier
//!     ...                                   // stage %s + 3 issued into the freed slot
//!     nvvm.wgmma.fence.aligned
//!     nvvm.wgmma.mma_async %undef, %desc_a, %desc_b, <m = 64, n = 128, k = 32>,
//!         D[<f32>, <zero>], A[<e4m3>, <one>, <row>], B[<e4m3>, <one>, <col>]
//!     nvvm.wgmma.commit.group.sync.aligned
//!     llvm.inline_asm "wgmma.wait_group.sync.aligned 0;" // the accumulators through it;
//!                                           // MX: per 32 of K, wait_group 1 after the
//!                                           // next issue, then acc += part * sa * sb
//!   }
//!   // epilogue: per-tensor / per-channel scales, globals, bias, f32 or bf16 store
//! }
//! ```
//!
//! Options: `chip` (sm_89, sm_90a, sm_100a: the chip facts decide which kernels exist),
//! `nvfp4` (the pipeline's route for NVFP4's 16-blocks: `auto`, the f16 route where it
//! applies but for E4M3 beside NVFP4 on the skinny block, as the H200 timed them; `split`;
//! or `f16`),
//! `kernel` (`auto` picks per op; `tcgen05` / `wgmma` / `mma-sync` make an op that cannot
//! use that kernel an error; `generic` forces the decode kernel), `emulate` (`true` runs
//! the same kernel on the CPU: each instruction computed as the PTX ISA defines it from the
//! registers, shared memory and descriptors the kernel prepared, phases one after the
//! other, so that it is checked against the oracle without a GPU; the function gets the
//! unit attribute `lowp.emulated`, code for the host that lowp-translate refuses for a GPU
//! chip). Runs on `func.func`. Dependent dialects: arith, math, memref, scf, vector, llvm, gpu,
//! nvvm.

mod mma_sync;
mod tcgen05;
mod wgmma;
mod wgmma_pipeline;

use melior::dialect::DialectHandle;
use melior::ir::OperationRef;

use lowp_formats::{Half, ScaledFormat};

use crate::chip::Chip;
use crate::code_words::Permute;
use crate::expand_quantize::{loop_dialects, unsupported};
use crate::matrix_kernel::{Operand, Plan};
use crate::registry::{OptionDef, OptionKind, PassDef, PassOptions};
use crate::to_loops::lower_lowp_ops;
use crate::PassError;
use wgmma_pipeline::Feed;

/// The values of the `kernel` option.
pub const KERNELS: &[&str] = &[
    "auto",
    "tcgen05",
    "wgmma",
    "wgmma-skinny",
    "wgmma-registers",
    "wgmma-specialized",
    "wgmma-tma",
    "mma-sync",
    "generic",
];

/// The pass definition.
pub const PASS: PassDef = PassDef {
    argument: "lowp-to-nvvm",
    name: "LowpToNVVM",
    description: "Lower lowp.scaled_matmul to an NVIDIA GPU kernel: FP8 tcgen05 (sm_100a), \
                  wgmma (sm_90a: a cp.async pipeline, or register-staged) or mma.sync \
                  m16n8k32 (sm_89+) for formats that are or embed in E4M3/E5M2; for \
                  formats whose fields f16's hold, their f16 patterns into tcgen05 \
                  kind::f16 (sm_100a), wgmma k16 (sm_90a: the pipeline, or \
                  register-staged) or mma.sync m16n8k16; for those whose fields only \
                  bf16's hold (E5M2 FNUZ, 6-/7-bit exponents), the same on bf16 patterns; \
                  else the tiled generic decode kernel",
    op_name: Some("func.func"),
    options: &[
        OptionDef {
            name: "chip",
            default: "sm_90a",
            description: "Target chip; decides which tensor-core kernels exist",
            kind: OptionKind::Choice(&["sm_89", "sm_90a", "sm_100a"]),
        },
        OptionDef {
            name: "kernel",
            default: "auto",
            description: "auto: the strongest kernel per op; tcgen05 / wgmma / mma-sync: \
                          require that tensor-core kernel (an op that cannot use it is an \
                          error; mma-sync: FP8, else f16, else bf16); \
                          wgmma-skinny: the wgmma cp.async pipeline's swap-AB block of \
                          64 columns (auto's choice when M is static and at most 64); \
                          wgmma-registers: the skinny block for M static and at most 16 \
                          with B fed through each thread's registers as wgmma's A \
                          (translated there; A translated into shared memory once, no \
                          barrier per stage; K static, whole 128s); \
                          wgmma-specialized: the pipeline's 128 x 128 block with a producer \
                          warpgroup and per-stage mbarriers; wgmma-tma: the pipeline with \
                          the operands used as stored (E4M3 / E5M2) loaded by TMA (the \
                          warp-specialized square block, or the skinny block where M is \
                          static and at most 64); generic: the decode kernel for every op",
            kind: OptionKind::Choice(KERNELS),
        },
        OptionDef {
            name: "split-k",
            default: "auto",
            description: "The wgmma skinny block's split of K among a cluster of blocks \
                          (partial sums gathered through distributed shared memory): auto \
                          (by shape: up to 8, while the blocks fit the 132 SMs and each \
                          split gets two stages; where the tiles alone fill the SMs once, \
                          as many blocks an SM as its shared memory holds, a power of two: 2 \
                          with the default rings, more with stages=N), or 1, 2, 4, 8",
            kind: OptionKind::Choice(&["auto", "1", "2", "4", "8"]),
        },
        OptionDef {
            name: "multicast",
            default: "1",
            description: "kernel=wgmma-tma's square block: clusters of 2 blocks (adjacent \
                          tiles of a column of C) sharing each stage of B, each loading half \
                          of it into both by TMA multicast: auto (where B is used as stored \
                          and M and N are static with an even number of 128-row tiles \
                          each), 1 (off; the default: on the H200, 2026-12-04, clusters \
                          of 2 ran 8192^3 FP8 at 607 TFLOP/s against 1162 without), or 2 \
                          (required)",
            kind: OptionKind::Choice(&["auto", "1", "2"]),
        },
        OptionDef {
            name: "fold-scales",
            default: "auto",
            description: "The wgmma pipeline's square and skinny blocks (kernel=wgmma, \
                          wgmma-skinny or wgmma-specialized) with FP4 or FP6 operands (translated to FP8) \
                          and E8M0 32-blocks staged through shared memory: auto (each block \
                          whose rows' four scales of a stage are within the translation's \
                          reach of their largest, or whose 4-bit blocks past it hold only \
                          zeros, folds them into the FP8 codes and promotes \
                          once per 128 of K, with one fma per accumulator where all of the \
                          block's B scales are within reach of their largest (but for its \
                          blocks of zeros under 2^-127), the others per 32), rows (the \
                          same, B never anchored to one code: what that buys, measured), or \
                          off (per 32 always)",
            kind: OptionKind::Choice(&["auto", "rows", "off"]),
        },
        OptionDef {
            name: "translate-ahead",
            default: "off",
            description: "The wgmma barrier pipeline (kernel=wgmma or wgmma-skinny) where \
                          operands are translated (FP4, FP6, custom formats, the f16 \
                          patterns): on (each thread translates stage s + 1 between stage \
                          s's commit and its wait, the integer pipes beside the tensor \
                          cores) or off (each stage translated before its own barrier; the \
                          default until the on form is measured on a GPU)",
            kind: OptionKind::Choice(&["on", "off"]),
        },
        OptionDef {
            name: "stages",
            default: "auto",
            description: "The wgmma pipeline's ring of stages in shared memory (kernel=wgmma, \
                          wgmma-skinny, wgmma-specialized, wgmma-tma): auto (the square \
                          block 5, warp-specialized 4, the skinny block 8, fewer where they \
                          do not fit) or at most 2 to 8, fewer where they do not fit (an op \
                          whose loop needs more is an error): a smaller ring leaves room for \
                          more blocks a multiprocessor (the skinny block's splits of K, \
                          split-k)",
            kind: OptionKind::Choice(&["auto", "2", "3", "4", "5", "6", "7", "8"]),
        },
        OptionDef {
            name: "block-n",
            default: "128",
            description: "The wgmma pipeline's square block's columns of C, the instruction's \
                          N: 128 (m64n128k32; two register sets of partial sums where FP8 is \
                          used as stored with no scales along K) or 192 (m64n192k32: 96 \
                          accumulators a thread and one set; a sixth fewer bytes of shared \
                          memory read and written per product; not where the warp-specialized \
                          block's producers copy the stages; where scales change along K, \
                          ptxas spills at 255 registers)",
            kind: OptionKind::Choice(&["128", "192"]),
        },
        OptionDef {
            name: "persistent",
            default: "off",
            description: "kernel=wgmma-tma's square block where TMA alone feeds it (E4M3 / \
                          E5M2 used as stored, no scales along K; M and N static): on (one \
                          block per multiprocessor, each looping over its tiles of C in \
                          grouped order, the ring carrying on from tile to tile: the next \
                          tile's stages load while the last one's C is stored) or off (a \
                          block per tile; the default until the on form is measured on a \
                          GPU)",
            kind: OptionKind::Choice(&["on", "off"]),
        },
        OptionDef {
            name: "store-c",
            default: "direct",
            description: "How the wgmma pipeline's warp-specialized square block \
                          (kernel=wgmma-tma, wgmma-specialized; persistent=on too) stores C: \
                          direct (each thread's st.global of its results) or tma (each \
                          consumer warpgroup writes its 64 rows into shared memory in the \
                          128-byte swizzle and one thread stores them by TMA, \
                          cp.async.bulk.tensor on a tensor map of C, the warpgroup going on \
                          while it drains: where C is a static row-major f32, f16 or bf16 \
                          memref with rows of whole 16 bytes and the staging area, 32 KiB a \
                          warpgroup for 128 f32 columns, fits beside the ring; elsewhere \
                          direct). direct is the default until tma is measured on a GPU",
            kind: OptionKind::Choice(&["direct", "tma"]),
        },
        OptionDef {
            name: "translate-once",
            default: "off",
            description: "The wgmma pipeline's square block (sm_90a) on two operands of \
                          4-bit codes (E2M1, 4-bit customs) or of FP6 codes one per byte \
                          with E8M0 32-blocks, M, N and K \
                          static (K whole 32-blocks; the translated operands padded \
                          with zeros to whole 128s), 128 x 128 blocks (block-n=128, no \
                          multicast): on (three launches on device workspaces: both \
                          operands translated once into E5M2 or E4M3 (the longer reach) \
                          with the block scales of each 128 of K folded into the codes, \
                          per row of A and per 128 rows of B, one f32 scale left for each \
                          (DeepSeek's layout), and a flag per 128 \
                          rows and 1024 of K where some stage does not fold; the TMA square \
                          block on the translated operands for the tiles of C whose rows \
                          all fold; the op's own pipeline on the stored operands for the \
                          others) or off (every block translates the tiles it reads; the \
                          default until the on form is measured on a GPU)",
            kind: OptionKind::Choice(&["on", "off"]),
        },
        OptionDef {
            name: "nvfp4",
            default: "auto",
            description: "How the wgmma pipeline (sm_90a) takes scales that change every 16 \
                          codes (NVFP4) on translated operands: split \
                          (an FP8 instruction per 16-block on tiles split in halves, each \
                          block's partial sums promoted with its UE4M3 scales), f16 (each \
                          code times its block's scale written as f16, exact where the \
                          formats allow (E2M1 x UE4M3), into m64nNk16.f32.f16.f16 \
                          instructions summing whole stages; beside it E4M3 / E5M2 whose \
                          scales do not change along K, widened as stored; K static, a \
                          multiple of 64), or auto (f16 where it applies, but E4M3 beside \
                          NVFP4 on the skinny block: on the H200 the f16 route ran NVFP4 \
                          8192^3 twice as fast, E4M3 x NVFP4 at 16 x 8192 x 8192 a sixth \
                          slower). Ops the f16 route does not take keep the split one",
            kind: OptionKind::Choice(&["auto", "split", "f16"]),
        },
        OptionDef {
            name: "accumulate",
            default: "fp8",
            description: "How sm_90a's wgmma kernels sum E4M3 / E5M2 (and the formats \
                          translated to them): fp8, the FP8 instructions, whose tensor \
                          cores add each instruction's products with about 13 bits below \
                          the largest term's leading bit (as cuBLASLt's FP8 GEMM does; \
                          partial sums promoted to f32 at least every 128 of K); or f32, \
                          the f16 patterns of the codes into k16 f16 instructions, exact \
                          products summed in f32 as the contract says, at half the FP8 \
                          rate (the route of the formats no FP8 type holds). Other chips' \
                          kernels are not changed by it",
            kind: OptionKind::Choice(&["fp8", "f32"]),
        },
        OptionDef {
            name: "emulate",
            default: "false",
            description: "Run the same kernel on the CPU, each tensor-core instruction \
                          computed as the PTX ISA defines it from the registers, shared \
                          memory and descriptors the kernel prepared (for checks without a \
                          GPU)",
            kind: OptionKind::Bool,
        },
    ],
    dependent_dialects: nvvm_dialects,
    run,
};

fn nvvm_dialects() -> Vec<DialectHandle> {
    let mut d = loop_dialects();
    d.push(DialectHandle::llvm());
    d.push(DialectHandle::gpu());
    // SAFETY: the NVVM dialect's registration handle is a static descriptor.
    d.push(unsafe { DialectHandle::from_raw(mlir_sys::mlirGetDialectHandle__nvvm__()) });
    // SAFETY: as above (the host's TMA tensor maps: nvgpu.tma.create.descriptor).
    d.push(unsafe { DialectHandle::from_raw(mlir_sys::mlirGetDialectHandle__nvgpu__()) });
    d
}

/// The plan of an NVIDIA FP8 kernel (K 32 per instruction, scales on the accumulators) and
/// the instruction types of A and B: E4M3 / E5M2 as stored, or the one the format embeds in.
fn fp8_plan(op: OperationRef) -> Result<(Plan, ScaledFormat, ScaledFormat), String> {
    let [(fa, pa), (fb, pb)] = Plan::formats(op)?;
    let types = [ScaledFormat::F8E4M3, ScaledFormat::F8E5M2];
    let a = Operand::new(fa, pa, &types, &[0])?;
    let b = Operand::new(fb, pb, &types, &[0])?;
    let (ta, tb) = (a.ty, b.ty);
    Ok((Plan::new(op, a, b, 32, false)?, ta, tb))
}

/// The FP8 tensor-core kernel chosen for an op.
enum Fp8 {
    MmaSync(mma_sync::MmaSync),
    Wgmma(wgmma::Wgmma),
    /// The pipeline: its block and how its stages are fed.
    WgmmaPipeline(wgmma::Wgmma, wgmma_pipeline::Tile, wgmma_pipeline::Feed),
    /// The register-fed skinny block.
    WgmmaRegisters(
        wgmma::Wgmma,
        wgmma_pipeline::Tile,
        Box<wgmma_pipeline::Registers>,
    ),
    Tcgen05(tcgen05::Tcgen05),
}

fn run<'c, 'a>(func: OperationRef<'c, 'a>, options: &PassOptions) -> Result<(), PassError> {
    let chip = options.choice("chip");
    // The option's choices are NVIDIA chips of `crate::chip::CHIPS` (checked in its tests):
    // their facts size the kernels.
    let facts: Chip = chip.parse().map_err(|reason| PassError::BadOption {
        pass: PASS.argument,
        option: "chip",
        reason,
    })?;
    let sm = facts.sm;
    let kernel = options.choice("kernel");
    let emulate = options.flag("emulate");
    let splits = options.choice("split-k").parse::<i64>().ok();
    let multicast = options.choice("multicast").parse::<i64>().ok();
    let nvfp4 = match options.choice("nvfp4") {
        "split" => wgmma_pipeline::Nvfp4Route::Split,
        "f16" => wgmma_pipeline::Nvfp4Route::F16,
        _ => wgmma_pipeline::Nvfp4Route::Auto,
    };
    let block_n = options.choice("block-n").parse::<i64>().unwrap_or(128);
    let exact = options.choice("accumulate") == "f32";
    let tuning = wgmma_pipeline::Tuning {
        fold: match options.choice("fold-scales") {
            "auto" => wgmma_pipeline::FoldScales::Auto,
            "rows" => wgmma_pipeline::FoldScales::Rows,
            _ => wgmma_pipeline::FoldScales::Off,
        },
        ahead: options.choice("translate-ahead") == "on",
        stages: options.choice("stages").parse::<i64>().ok(),
        persistent: options.choice("persistent") == "on",
        once: options.choice("translate-once") == "on",
        store_c: options.choice("store-c") == "tma",
    };
    let lowered = std::cell::Cell::new(false);
    lower_lowp_ops(func, |e, op| {
        crate::matrix_kernel::check_gpu_op(op, emulate)?;
        lowered.set(true);
        // The strongest kernel first: tcgen05 on sm_100a, wgmma on sm_90a only (Blackwell
        // dropped it), FP8 mma.sync from sm_89 on, else its f16 form.
        // The cp.async pipeline where the codes go to shared memory as stored, else the
        // register-staged kernel.
        let pipeline = |blocks, feed| {
            // (TMA loads FP8 as stored, which the f16 route would widen.)
            let nvfp4 = if feed == Feed::Tma {
                wgmma_pipeline::Nvfp4Route::Split
            } else {
                nvfp4
            };
            if sm == 90 {
                wgmma_pipeline::plan(op, &facts, blocks, splits, nvfp4, exact, block_n).and_then(
                    |(plan, i, tile)| {
                        // The producer warpgroup's copies (translated codes, block scales
                        // staged) are laid out for 128 + 128 rows.
                        let copies =
                            plan.a.table.is_some() || plan.b.table.is_some() || plan.seg.is_some();
                        if feed != Feed::Barrier && !tile.is_skinny() && block_n > 128 && copies {
                            return Err(format!(
                                "block-n={block_n}: the warp-specialized block's producer \
                                 warpgroup copies this op's stages (translated codes or block \
                                 scales) for 128 columns only (kernel=wgmma takes it)"
                            ));
                        }
                        if feed == Feed::Tma && plan.f16 {
                            return Err("TMA loads the operands used as stored (E4M3 / E5M2); \
                                    the f16 route translates both (kernel=wgmma-specialized \
                                    copies them through the producer threads)"
                                .into());
                        }
                        if feed == Feed::Tma && plan.a.table.is_some() && plan.b.table.is_some() {
                            return Err("TMA loads the operands used as stored (E4M3 / E5M2); \
                                    both are translated (kernel=wgmma-specialized copies \
                                    them through the producer threads)"
                                .into());
                        }
                        let tile = if feed == Feed::Tma {
                            wgmma_pipeline::multicast(op, &plan, tile, multicast)?
                        } else {
                            tile
                        };
                        Ok((plan, Fp8::WgmmaPipeline(i, tile, feed)))
                    },
                )
            } else {
                Err(format!("{chip} has no wgmma (sm_90a only)"))
            }
        };
        let wgmma = || {
            pipeline(wgmma_pipeline::Blocks::ByShape, Feed::Barrier).or_else(|why| {
                if sm == 90 {
                    wgmma::register_plan(op, exact).map(|(plan, i)| (plan, Fp8::Wgmma(i)))
                } else {
                    Err(why)
                }
            })
        };
        let mma_sync = || {
            if sm >= 89 {
                mma_sync::plan(op)
            } else {
                Err(format!("{chip} has no FP8 mma.sync"))
            }
        };
        let tcgen05 = || {
            if sm == 100 {
                tcgen05::plan(op)
            } else {
                Err(format!("{chip} has no tcgen05 (sm_100a)"))
            }
        };
        let lowered =
            match kernel {
                "generic" => Err(String::new()),
                "tcgen05" => tcgen05().map(|(plan, i)| (plan, Fp8::Tcgen05(i))),
                "wgmma" => wgmma(),
                "wgmma-skinny" => pipeline(wgmma_pipeline::Blocks::Skinny, Feed::Barrier),
                "wgmma-registers" => pipeline(wgmma_pipeline::Blocks::Skinny, Feed::Barrier)
                    .and_then(|(plan, fp8)| match fp8 {
                        Fp8::WgmmaPipeline(i, tile, _) => {
                            wgmma_pipeline::Registers::plan(op, &plan, tile, &facts, splits)
                                .map(|r| (plan, Fp8::WgmmaRegisters(i, tile, Box::new(r))))
                        }
                        _ => Err("the skinny block does not take it".into()),
                    }),
                "wgmma-specialized" => pipeline(wgmma_pipeline::Blocks::Square, Feed::Specialized),
                "wgmma-tma" => pipeline(wgmma_pipeline::Blocks::ByShape, Feed::Tma),
                "mma-sync" => mma_sync().map(|(plan, i)| (plan, Fp8::MmaSync(i))),
                _ => tcgen05()
                    .map(|(plan, i)| (plan, Fp8::Tcgen05(i)))
                    .or_else(|_| {
                        // The square block loads E4M3 / E5M2 used as stored by TMA where it
                        // can and no scale changes along K: on the H200 (bench/NOTES.md,
                        // 2026-12-04) per tensor 1155 TFLOP/s at 8192^3 against the barrier
                        // pipeline's 1043, 1009 against 905 at 4096^3; with MX scales 264
                        // against 315 (the barrier pipeline stays). The skinny block keeps
                        // cp.async (16 x 4096 x 8192: 13 us against TMA's 17).
                        let square = |r: &Result<(Plan, Fp8), String>| {
                            matches!(r, Ok((plan, Fp8::WgmmaPipeline(_, tile, _)))
                            if !tile.is_skinny() && plan.seg.is_none())
                        };
                        let barrier = wgmma();
                        if square(&barrier) {
                            let tma = pipeline(wgmma_pipeline::Blocks::Square, Feed::Tma);
                            if tma.is_ok() {
                                return tma;
                            }
                        }
                        barrier
                    })
                    .or_else(|_| mma_sync().map(|(plan, i)| (plan, Fp8::MmaSync(i)))),
            };
        let split = matches!(&lowered, Ok((_, Fp8::WgmmaPipeline(_, tile, _))) if tile.is_skinny())
            || matches!(&lowered, Ok((_, Fp8::WgmmaRegisters(..))));
        if let (Some(s @ 2..), false) = (splits, split) {
            // Where no kernel took the op at all, that reason comes first; else why the
            // skinny block does not take it (no wgmma on the chip, say).
            let why = match &lowered {
                Err(why) if !why.is_empty() => format!(": {why}"),
                _ => match pipeline(wgmma_pipeline::Blocks::Skinny, Feed::Barrier) {
                    Err(why) => format!(" (the skinny block: {why})"),
                    Ok(_) => " (the op takes it with kernel=wgmma-skinny)".into(),
                },
            };
            return Err(unsupported(
                op,
                format!(
                    "split-k={s} splits the wgmma skinny block (sm_90a, M static and at most \
                     64, or kernel=wgmma-skinny), which this op does not take on {chip} with \
                     kernel={kernel}{why}"
                ),
            ));
        }
        // A ring size for an op that takes no ring.
        if let (Some(n), false) = (
            tuning.stages,
            matches!(&lowered, Ok((_, Fp8::WgmmaPipeline(..)))),
        ) {
            let why = match &lowered {
                Err(why) if !why.is_empty() => format!(": {why}"),
                _ => String::new(),
            };
            return Err(unsupported(
                op,
                format!(
                    "stages={n} sizes the ring of the wgmma pipeline (sm_90a), which this op \
                     does not take on {chip} with kernel={kernel}{why}"
                ),
            ));
        }
        // (A kernel that failed reports why below.)
        let shared = match &lowered {
            Ok((_, Fp8::WgmmaPipeline(_, tile, _))) => tile.multicasts(),
            Ok(_) => false,
            Err(_) => kernel != "auto" && kernel != "generic",
        };
        if let (Some(2), false) = (multicast, shared) {
            return Err(unsupported(
                op,
                format!(
                    "multicast=2 shares B among the blocks of kernel=wgmma-tma's square block \
                     (sm_90a), which this op does not take on {chip} with kernel={kernel}"
                ),
            ));
        }
        // Where `auto` took a kernel on half patterns: which, and why no FP8 one.
        let half_remark = |name: &str, because: Option<(Half, &str)>| {
            if let (Some((half, why)), "auto") = (because, kernel) {
                crate::matrix_kernel::remark(op, &format!("{half} {name} kernel on {chip}: {why}"));
            }
        };
        match lowered {
            Ok((plan, Fp8::MmaSync(i))) => {
                half_remark("mma.sync", i.half_because());
                crate::matrix_kernel::lower(
                    e,
                    op,
                    &plan,
                    &i,
                    emulate,
                    Some(Permute::nvidia(emulate)),
                )
            }
            Ok((plan, Fp8::Wgmma(i))) => {
                half_remark("wgmma", i.half_because());
                wgmma::lower(e, op, &plan, &i, emulate)
            }
            Ok((plan, Fp8::WgmmaPipeline(i, tile, feed)))
                if tuning.once
                    && block_n == 128
                    && !tile.is_skinny()
                    && !tile.multicasts()
                    && wgmma_pipeline::translates_once(op).is_ok() =>
            {
                // The translated operands' GEMM: the TMA square block, as kernel=wgmma-tma
                // plans it.
                let fast = |copy| {
                    wgmma_pipeline::plan(
                        copy,
                        &facts,
                        wgmma_pipeline::Blocks::Square,
                        None,
                        wgmma_pipeline::Nvfp4Route::Split,
                        exact,
                        block_n,
                    )
                };
                wgmma_pipeline::lower_once(
                    e, op, fast, &plan, &i, &facts, tile, feed, tuning, emulate,
                )
            }
            Ok((plan, Fp8::WgmmaPipeline(i, tile, feed))) => {
                half_remark("wgmma", i.half_because());
                wgmma_pipeline::lower(e, op, &plan, &i, &facts, tile, feed, tuning, emulate)
            }
            Ok((plan, Fp8::WgmmaRegisters(i, tile, r))) => {
                wgmma_pipeline::lower_registers(e, op, &plan, &i, tile, &r, emulate)
            }
            Ok((plan, Fp8::Tcgen05(i))) => {
                half_remark("tcgen05", i.half_because());
                tcgen05::lower(e, op, &plan, &i, emulate)
            }
            Err(reason) if kernel != "auto" && kernel != "generic" => Err(unsupported(
                op,
                format!(
                    "no {} kernel for this op on {chip}: {reason}",
                    if kernel == "mma-sync" {
                        "mma.sync"
                    } else {
                        kernel
                    }
                ),
            )),
            Err(reason) => {
                if kernel == "auto" {
                    crate::matrix_kernel::remark(
                        op,
                        &format!("generic kernel on {chip}: {reason}"),
                    );
                }
                crate::gpu_generic::lower(e, op, emulate)
            }
        }
    })?;
    if emulate && lowered.get() {
        crate::matrix_kernel::mark_emulated(func);
    }
    Ok(())
}
