//! Named pipelines from lowp IR to the LLVM dialect, registered with the passes so that
//! `lowp-opt --lowp-cpu-pipeline` (or `builtin.module(lowp-cpu-pipeline)`) and the JIT run
//! the same list.

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
            "func.func(lowp-to-loops),",
            "lowp-lower-storage,",
            "canonicalize,cse,",
            $threads,
            "convert-vector-to-scf,",
            "convert-math-to-llvm,",
            "convert-vector-to-llvm,",
            "expand-strided-metadata,",
            "finalize-memref-to-llvm,",
            "convert-scf-to-cf,",
            "convert-arith-to-llvm,",
            $omp_llvm,
            "convert-cf-to-llvm,",
            "convert-func-to-llvm,",
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

/// Every named pipeline.
pub const ALL: [PipelineDef; 2] = [CPU, CPU_OPENMP];

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
