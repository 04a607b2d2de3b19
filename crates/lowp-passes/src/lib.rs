//! # lowp-passes
//!
//! lowp's passes, written in Rust over melior and registered by name in MLIR's pass registry
//! through the dialect's C++ bridge, so that `lowp-opt --lowp-expand-quantize` and
//! `--pass-pipeline='builtin.module(func.func(lowp-expand-quantize{decode=table}))'` both
//! work. One module per pass, named after its argument:
//!
//! | argument | module | rewrites |
//! |---|---|---|
//! | `lowp-assert-shapes` | [`assert_shapes`] | sizes of lowp ops' dynamic dimensions -> cf.assert checks before the op (K, M, N, bias, scale arrays) |
//! | `lowp-expand-quantize` | [`expand_quantize`] | compute_scales / quantize / dequantize -> scf + arith + math + memref |
//! | `lowp-to-loops` | [`to_loops`] | scaled_matmul -> decode + register-blocked vector GEMM (and quantization ops as above) |
//! | `lowp-to-parallel-loops` | [`to_parallel_loops`] | scaled_matmul -> one 2-D scf.parallel over the output, bit-decoded, scratch-free (the GPU-mappable form) |
//! | `lowp-to-nvvm` | [`to_nvvm`] | scaled_matmul -> block/thread scf.parallel nests with FP8 mma.sync (sm_89+) or the generic decode body, for convert-parallel-loops-to-gpu |
//! | `lowp-to-rocdl` | [`to_rocdl`] | scaled_matmul -> block/thread scf.parallel nests with scaled MFMA f8f6f4 (gfx950, MX), FP8 MFMA 16x16x32 (FNUZ on gfx942) or the generic decode body |
//! | `lowp-lower-storage` | [`lower_storage`] | memrefs of codes -> memrefs of storage integers; drops storage_cast |
//! | `lowp-fold-grid` | [`fold_grid`] | gpu.launch grids beyond 65535 blocks along y -> folded into z, block row recomposed and guarded |
//! | `lowp-kernel-cluster-size` | [`kernel_cluster_size`] | constant cluster sizes of gpu.launch_func -> known_cluster_size on the kernel |
//! | `lowp-legalize-ptx-names` | [`legalize_ptx_names`] | kernel-module symbols PTX cannot spell -> PTX identifiers, references updated |
//! | `lowp-check-bounds` | [`check_bounds`] | host memref loads / stores / views / casts / copies -> cf.assert checks of their indices and sizes before them |
//! | `lowp-report-asserts` | [`report_asserts`] | host cf.assert -> scf.if printing LOC: error: MESSAGE to stderr and _exit(1) |
//! | `lowp-check-allocations` | [`check_allocations`] | host calls of malloc / aligned_alloc -> checked calls that stop with a located out-of-memory message on null |
//! | `lowp-extern-dynamic-shared` | [`extern_dynamic_shared`] | a kernel module's dynamic shared memory global -> external linkage (.extern .shared) |
//!
//! Named pipelines ([`pipelines`]): `lowp-cpu-pipeline` and `lowp-cpu-openmp-pipeline` take
//! lowp IR to the LLVM dialect.
//!
//! [`docs`] renders `docs/LowpPasses.md` from all of this.
//!
//! [`codes`] emits the numeric rules of `lowp-formats` as IR; [`ir`] is the small emitter
//! they are written with.

#![deny(missing_docs)]

pub mod assert_shapes;
pub mod check_allocations;
pub mod check_bounds;
pub mod chip;
mod code_words;
pub mod codes;
pub mod docs;
mod error;
pub mod expand_quantize;
pub mod extern_dynamic_shared;
pub mod fold_grid;
mod gpu_generic;
mod host_exit;
pub mod ir;
pub mod kernel_cluster_size;
pub mod legalize_ptx_names;
pub mod lower_storage;
mod matrix_kernel;
pub use matrix_kernel::EMULATED;
pub mod pipelines;
pub mod registry;
pub mod report_asserts;
pub mod to_loops;
pub mod to_nvvm;
pub mod to_parallel_loops;
pub mod to_rocdl;

pub use error::PassError;
pub use registry::{all_passes, register_passes, OptionDef, OptionKind, PassDef, PassOptions};
