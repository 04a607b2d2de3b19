//! Named pipelines from lowp IR to the LLVM dialect (CPU) or to a GPU kernel launch,
//! registered with the passes so that `lowp-opt --lowp-cpu-pipeline` (or
//! `builtin.module(lowp-cpu-pipeline)`) and the JIT run the same list.

/// One registered pipeline.
#[derive(Clone, Copy, Debug)]
pub struct PipelineDef {
    /// Argument (`--<argument>` / in textual pipelines).
    pub argument: &'static str,
    /// `--help` text.
    pub description: &'static str,
    /// The passes, as a textual list nested under `builtin.module`.
    pub passes: &'static str,
}

/// The shared pass list; `$threads` is empty or the OpenMP conversion, `$omp_llvm` empty
/// or its LLVM lowering.
macro_rules! cpu_passes {
    ($threads:literal, $omp_llvm:literal) => {
        concat!(
            "func.func(lowp-assert-shapes,lowp-to-loops),",
            "lowp-lower-storage,",
            "canonicalize,cse,",
            // bf16 conversions as integer arithmetic (round to nearest even): without
            // AVX512-BF16 LLVM calls `__truncsfbf2`, which libgcc 12 and the JIT lack.
            "arith-expand{include-bf16=true},",
            $threads,
            "convert-vector-to-scf,",
            "convert-math-to-llvm,",
            "convert-vector-to-llvm,",
            "expand-strided-metadata,",
            "finalize-memref-to-llvm,",
            // A failed cf.assert (lowp-assert-shapes' checks) prints to stderr and exits 1.
            "lowp-report-asserts,",
            "convert-scf-to-cf,",
            "convert-arith-to-llvm,",
            $omp_llvm,
            "convert-cf-to-llvm,",
            "convert-func-to-llvm,",
            // A failed allocation stops with a message, not a write through null.
            "lowp-check-allocations,",
            "reconcile-unrealized-casts"
        )
    };
}

/// lowp IR to the LLVM dialect for the CPU; `scf.parallel` loops stay sequential.
pub const CPU: PipelineDef = PipelineDef {
    argument: "lowp-cpu-pipeline",
    description: "Lower lowp IR to the LLVM dialect for the CPU (lowp-to-loops, \
                  lowp-lower-storage, vector/memref/scf/arith/func to LLVM); one thread",
    passes: cpu_passes!("", ""),
};

/// [`CPU`] with `scf.parallel` turned into OpenMP threads (the JIT loads libomp). memref
/// lowering runs before scf-to-cf: the OpenMP conversion wraps each parallel body in a
/// `memref.alloca_scope`, which must still be one block when it is lowered.
pub const CPU_OPENMP: PipelineDef = PipelineDef {
    argument: "lowp-cpu-openmp-pipeline",
    description: "Lower lowp IR to the LLVM dialect for the CPU with OpenMP threads \
                  (needs libomp at run time)",
    passes: cpu_passes!("convert-scf-to-openmp,", "convert-openmp-to-llvm,"),
};

/// lowp IR to a host function that launches a GPU kernel (`gpu.launch_func`) and the
/// kernel's `gpu.module`, still in scf/arith/memref: `lowp-to-parallel-loops`, its 2-D loop
/// tiled into blocks of 32 x 8 threads (columns on x), mapped and outlined by the upstream
/// passes. A target's passes follow: `nvvm-attach-target` + `convert-gpu-to-nvvm` (see
/// [`nvvm_kernel_passes`]) or their ROCDL counterparts, then `gpu-module-to-binary`.
pub const GPU_GENERIC: PipelineDef = PipelineDef {
    argument: "lowp-gpu-generic-pipeline",
    description: "Lower lowp.scaled_matmul to the generic GPU kernel (lowp-to-parallel-loops, \
                  32x8-thread blocks, gpu-kernel-outlining); target passes follow",
    passes: concat!(
        "func.func(lowp-assert-shapes,lowp-to-parallel-loops),",
        "lowp-lower-storage,",
        "func.func(scf-parallel-loop-tiling{parallel-loop-tile-sizes=32,8 no-min-max-bounds=true},",
        "gpu-map-parallel-loops,convert-parallel-loops-to-gpu,lowp-fold-grid),",
        "gpu-launch-sink-index-computations,gpu-kernel-outlining,",
        "canonicalize,cse"
    ),
};

/// lowp IR to a host function launching GPU kernels and their `gpu.module`s, still in
/// scf/arith/memref (and the target's intrinsics): `lowering` (`lowp-to-nvvm{...}` or
/// `lowp-to-rocdl{...}`, which emit block / thread `scf.parallel` nests), storage lowering,
/// the upstream mapping of the nests onto a `gpu.launch`, its grid kept within CUDA's limits
/// (`lowp-fold-grid`: C's rows of tiles beyond 65535 folded into z), index computations sunk into the
/// launch (constants must not become kernel parameters: the per-lane register arrays are
/// then indexed by constants and stay in registers) and outlining. No canonicalization
/// before the mapping: it would merge the block and thread loops into one.
fn gpu_front(lowering: &str) -> String {
    format!(
        "builtin.module(func.func(lowp-assert-shapes,{lowering}),lowp-lower-storage,\
         func.func(gpu-map-parallel-loops,convert-parallel-loops-to-gpu,lowp-fold-grid),\
         gpu-launch-sink-index-computations,gpu-kernel-outlining,canonicalize,cse)"
    )
}

/// `gpu_front` with `lowp-to-nvvm{chip kernel}` (the FP8 mma.sync kernel where the
/// formats allow, else the generic one; `kernel` is `auto`, `mma-sync` or `generic`).
/// [`nvvm_kernel_passes`] follows.
pub fn nvvm_front(chip: &str, kernel: &str) -> String {
    nvvm_front_with(chip, kernel, &[])
}

/// [`nvvm_front`] with more `lowp-to-nvvm` options (`split-k`, `multicast`), as `(name,
/// value)` pairs; the pass checks them when the pipeline is parsed.
pub fn nvvm_front_with(chip: &str, kernel: &str, options: &[(&str, &str)]) -> String {
    gpu_front(&nvvm_pass(chip, kernel, options))
}

/// `lowp-to-nvvm{chip=.. kernel=.. name=value..}`: the pass with its options, as a
/// pipeline element.
pub fn nvvm_pass(chip: &str, kernel: &str, options: &[(&str, &str)]) -> String {
    let more: String = options
        .iter()
        .map(|(name, value)| format!(" {name}={value}"))
        .collect();
    format!("lowp-to-nvvm{{chip={chip} kernel={kernel}{more}}}")
}

/// `gpu_front` with `lowp-to-rocdl{chip kernel}` (`auto`, `scaled-mfma`, `mfma` or
/// `generic`). [`rocdl_kernel_passes`] follows.
pub fn rocdl_front(chip: &str, kernel: &str) -> String {
    gpu_front(&format!("lowp-to-rocdl{{chip={chip} kernel={kernel}}}"))
}

/// The NVVM half after [`GPU_GENERIC`]: fix constant cluster sizes in the kernels
/// (`lowp-kernel-cluster-size`), rename kernel symbols PTX cannot spell
/// (`lowp-legalize-ptx-names`), target `chip` with LLVM `features` (its PTX ISA, e.g.
/// `+ptx84` for sm_89 / sm_90a, which FP8 needs; `+ptx88` for sm_100a), lower the kernel
/// modules to NVVM (dynamic shared memory declared `.extern`: `lowp-extern-dynamic-shared`)
/// and serialize them to PTX (`gpu.binary`).
pub fn nvvm_kernel_passes(chip: &str, features: &str) -> String {
    format!(
        "builtin.module(lowp-kernel-cluster-size,lowp-legalize-ptx-names,nvvm-attach-target{{chip={chip} features={features}}},\
         gpu.module(lower-affine,convert-scf-to-cf,convert-gpu-to-nvvm,convert-nvvm-to-llvm,\
         lowp-extern-dynamic-shared,canonicalize,cse,\
         reconcile-unrealized-casts),gpu-module-to-binary{{format=isa}})"
    )
}

/// The ROCDL half after [`GPU_GENERIC`] or [`rocdl_front`]: target the AMD `chip`, lower
/// the kernel modules to ROCDL and serialize them to ISA text (`gpu.binary`).
pub fn rocdl_kernel_passes(chip: &str) -> String {
    rocdl_kernel_passes_to(chip, "isa")
}

/// [`rocdl_kernel_passes`] serializing to `format`: `isa`, or a linked code object
/// (HSACO) with `bin toolkit=DIR`, where `DIR/llvm/bin/ld.lld` is the linker MLIR's ROCDL
/// serializer runs.
pub fn rocdl_kernel_passes_to(chip: &str, format: &str) -> String {
    format!(
        "builtin.module(rocdl-attach-target{{chip={chip}}},\
         gpu.module(lower-affine,convert-scf-to-cf,convert-gpu-to-rocdl,canonicalize,cse,\
         reconcile-unrealized-casts),gpu-module-to-binary{{format={format}}})"
    )
}

/// Every named pipeline.
pub const ALL: [PipelineDef; 3] = [CPU, CPU_OPENMP, GPU_GENERIC];

impl PipelineDef {
    /// The full textual pipeline, anchored on `builtin.module`.
    pub fn text(&self) -> String {
        format!("builtin.module({})", self.passes)
    }

    /// [`text`](Self::text) with options given to `lowp-to-loops` (e.g. `lanes=16`).
    pub fn text_with_to_loops(&self, options: &str) -> String {
        if options.is_empty() {
            return self.text();
        }
        let passes =
            self.passes
                .replacen("lowp-to-loops", &format!("lowp-to-loops{{{options}}}"), 1);
        format!("builtin.module({passes})")
    }
}
