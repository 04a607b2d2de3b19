//! # lowp-jit
//!
//! The driver from lowp IR to running code on the CPU: parse (or take) a module (a file's
//! tensor-form lowp ops bufferized on reading it), run the CPU pipeline
//! (`lowp-cpu-pipeline` (or `lowp-cpu-openmp-pipeline` with threads)), JIT it with MLIR's
//! ExecutionEngine, and call its functions with Rust buffers as memref arguments
//! ([`MemRefArg`]). Every failure is a [`JitError`] carrying MLIR's located diagnostics;
//! nothing panics on bad input, and a module calling an x86 intrinsic this CPU lacks is
//! refused before LLVM's instruction selection would stop the process (`host.rs`).

#![deny(missing_docs)]

pub mod generic;
pub mod gpu;
mod host;
pub mod matmul;
mod memref;

use std::cell::RefCell;
use std::ffi::c_void;
use std::rc::Rc;

use melior::ir::operation::{OperationLike, WalkOrder, WalkResult};
use melior::ir::Module;
use melior::pass::PassManager;
use melior::Context;

pub use host::x86_intrinsic_needs;
pub use lowp_dialect::{exit_on_llvm_fatal_error, on_deep_stack};
pub use matmul::{
    BenchReport, CheckReport, DynamicSizes, GivenSizes, MatmulInputs, MatmulIr, MatmulSpec, Role,
};
pub use memref::MemRefArg;

/// f32 lanes per vector register of this CPU: 16 with AVX-512F, else 8 (AVX2; other
/// targets' LLVM backends split or widen the 8-lane vectors as they need).
pub fn host_lanes() -> u32 {
    if host::host_has("avx512f") {
        16
    } else {
        8
    }
}

/// Inner products of the CPU kernel (`lowp-to-loops{dot=...}`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dot {
    /// f32 FMAs on decoded values (every format).
    F32,
    /// x86 byte dot products where both formats are small integers exactly (FP4 E2M1,
    /// FP6 E2M3, ...; the f32 kernel for other formats): `pmaddubsw`.
    I8,
    /// The same byte kernel on VNNI's `vpdpbusd` (four products into an i32 sum an
    /// instruction).
    Vnni,
}

impl Dot {
    /// Its spelling in `lowp-to-loops{dot=...}` and `lowp-run --dot`.
    pub fn name(self) -> &'static str {
        match self {
            Dot::F32 => "f32",
            Dot::I8 => "i8",
            Dot::Vnni => "vnni",
        }
    }

    /// The inner products spelled `name`, if any.
    pub fn from_name(name: &str) -> Option<Dot> {
        [Dot::F32, Dot::I8, Dot::Vnni]
            .into_iter()
            .find(|d| d.name() == name)
    }
}

/// The x86 extensions the byte kernel `dot` (I8 or Vnni) needs with vectors of `lanes`
/// f32 (as `is_x86_feature_detected!` spells them): avx2 for 8 lanes, avx512bw for 16;
/// VNNI's `vpdpbusd` also avx512vnni, and avx512vl for its 256-bit form.
fn byte_dot_extensions(dot: Dot, lanes: u32) -> &'static [&'static str] {
    match (dot, lanes >= 16) {
        (Dot::Vnni, true) => &["avx512bw", "avx512vnni"],
        (Dot::Vnni, false) => &["avx2", "avx512vnni", "avx512vl"],
        (_, true) => &["avx512bw"],
        (_, false) => &["avx2"],
    }
}

/// Whether this CPU runs the byte kernel `dot` (I8: `pmaddubsw`, Vnni: `vpdpbusd`) with
/// vectors of `lanes` f32 (LLVM cannot compile the intrinsics for a CPU without their
/// extensions). False for [`Dot::F32`].
pub fn host_byte_dot(dot: Dot, lanes: u32) -> bool {
    dot != Dot::F32
        && byte_dot_extensions(dot, lanes)
            .iter()
            .all(|x| host::host_has(x))
}

/// The x86 extensions the f32 kernel's bf16 pairs need with vectors of `lanes` f32:
/// AVX512-BF16's `vdpbf16ps`, AVX512BW's `vpermi2w` (the GEMV form's lookups of bf16
/// patterns), and AVX512VL for their 256-bit forms.
fn bf16_dot_extensions(lanes: u32) -> &'static [&'static str] {
    if lanes >= 16 {
        &["avx512bf16", "avx512bw"]
    } else {
        &["avx512bf16", "avx512bw", "avx512vl"]
    }
}

/// Extensions as an error names them: `AVX2 and AVX512VNNI`.
fn spelled(extensions: &[&str]) -> String {
    extensions
        .iter()
        .map(|x| x.to_uppercase())
        .collect::<Vec<_>>()
        .join(" and ")
}

/// Whether this CPU runs the f32 kernel on bf16 pairs (`vdpbf16ps`) with vectors of
/// `lanes` f32.
pub fn host_bf16_dot(lanes: u32) -> bool {
    bf16_dot_extensions(lanes).iter().all(|x| host::host_has(x))
}

/// How the CPU kernel decodes B (`lowp-to-loops{decode=...}`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decode {
    /// Integer arithmetic straight to f32 (every target).
    Bits,
    /// Each code's fields moved into an f16 pattern, widened by the CPU's f16 -> f32
    /// instruction (x86 F16C, AArch64), where the format allows (`bits` elsewhere).
    F16,
}

impl Decode {
    /// Its spelling in `lowp-to-loops{decode=...}` and `lowp-run --decode`.
    pub fn name(self) -> &'static str {
        match self {
            Decode::Bits => "bits",
            Decode::F16 => "f16",
        }
    }

    /// The decode spelled `name`, if any.
    pub fn from_name(name: &str) -> Option<Decode> {
        [Decode::Bits, Decode::F16]
            .into_iter()
            .find(|d| d.name() == name)
    }
}

/// Whether this CPU widens f16 to f32 in one instruction (x86 F16C, every AArch64):
/// without it LLVM calls a library function per value, which the JIT may not have.
pub fn host_f16() -> bool {
    if cfg!(target_arch = "x86_64") {
        host::host_has("f16c")
    } else {
        cfg!(target_arch = "aarch64")
    }
}

/// The OpenMP runtime the threaded pipeline needs: `$LOWP_OMP_LIBRARY`, else LLVM 22's
/// `libomp.so` (package libomp-22-dev); `None` when neither exists. A `LOWP_OMP_LIBRARY` that is set is taken as it is, existing or not: loading it says
/// what is wrong with it, rather than running on another runtime than the one asked for.
pub fn openmp_library() -> Option<String> {
    if let Some(path) = std::env::var_os("LOWP_OMP_LIBRARY").filter(|p| !p.is_empty()) {
        return Some(path.to_string_lossy().into_owned());
    }
    let default = "/usr/lib/llvm-22/lib/libomp.so";
    std::path::Path::new(default)
        .exists()
        .then(|| default.to_string())
}

/// The most OpenMP threads a run asks for: 16 a CPU, and at least 256. libomp ends the
/// process where it cannot start its threads (`OMP_NUM_THREADS=100000`: "System unable to
/// allocate necessary resources for OMP thread").
pub fn openmp_thread_limit() -> u64 {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get()) as u64;
    (16 * cpus).max(256)
}

/// The largest OpenMP thread stack a run asks for (`OMP_STACKSIZE`, `KMP_STACKSIZE`): 1 GiB.
pub const OPENMP_STACK_LIMIT: u64 = 1 << 30;

/// The settings of the environment that the OpenMP runtime reads when it starts and ends
/// the process on (an assertion or "unable to allocate" and an abort, exit 134): a thread
/// count of `OMP_NUM_THREADS` that is empty, not a positive integer, or above
/// [`openmp_thread_limit`]; a stack size of `OMP_STACKSIZE` or `KMP_STACKSIZE` that does
/// not parse (a number with an optional B, K, M, G or T; K when none) or is above
/// [`OPENMP_STACK_LIMIT`]. Checked before the runtime is loaded; the message names the
/// variable and its value.
pub fn check_openmp_environment() -> Result<(), String> {
    let limit = openmp_thread_limit();
    if let Some(value) = std::env::var_os("OMP_NUM_THREADS") {
        let text = value.to_string_lossy();
        // (A list gives the counts of nested levels.)
        let counts: Vec<&str> = text.split(',').map(str::trim).collect();
        let valid = counts
            .iter()
            .all(|c| c.parse::<u64>().is_ok_and(|n| (1..=limit).contains(&n)));
        if !valid {
            return Err(format!(
                "OMP_NUM_THREADS='{text}': the OpenMP runtime takes positive thread counts \
                 (a comma-separated list for nested levels), here at most {limit}; unset it \
                 for one thread per CPU"
            ));
        }
    }
    for name in ["OMP_STACKSIZE", "KMP_STACKSIZE"] {
        let Some(value) = std::env::var_os(name) else {
            continue;
        };
        let text = value.to_string_lossy();
        let t = text.trim();
        let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
        let (digits, unit) = t.split_at(split);
        let shift = match unit.trim().to_ascii_uppercase().as_str() {
            "B" => Some(0),
            "" | "K" => Some(10),
            "M" => Some(20),
            "G" => Some(30),
            "T" => Some(40),
            _ => None,
        };
        let bytes = digits
            .parse::<u64>()
            .ok()
            .zip(shift)
            .and_then(|(n, s)| n.checked_mul(1 << s));
        if !bytes.is_some_and(|b| (1..=OPENMP_STACK_LIMIT).contains(&b)) {
            return Err(format!(
                "{name}='{text}': the OpenMP runtime takes a thread stack size as a number \
                 with an optional B, K, M, G or T (K when none), here from 1 byte to 1G"
            ));
        }
    }
    Ok(())
}

/// Why compiling or running failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum JitError {
    /// The source did not parse or verify.
    #[error("invalid input:\n{diagnostics}")]
    Parse {
        /// MLIR's diagnostics, `file:line:col: error: ...` a line.
        diagnostics: String,
    },
    /// A pass of the pipeline failed.
    #[error("pipeline failed:\n{diagnostics}")]
    Pipeline {
        /// MLIR's diagnostics.
        diagnostics: String,
    },
    /// The environment asks the OpenMP runtime for what it would stop the process on
    /// ([`check_openmp_environment`]).
    #[error("{reason}")]
    Environment {
        /// Which variable, and what it takes.
        reason: String,
    },
    /// The ExecutionEngine could not be created (LLVM translation or codegen failed).
    #[error("JIT compilation failed:\n{diagnostics}")]
    Engine {
        /// MLIR's diagnostics, if any.
        diagnostics: String,
    },
    /// The entry cannot be compiled into, or run as, a GPU kernel launch.
    #[error("GPU kernel: {reason}")]
    Launch {
        /// Why.
        reason: String,
    },
    /// No such function in the compiled module.
    #[error("no function '{name}' in the module")]
    NoFunction {
        /// The name asked for.
        name: String,
    },
}

/// A context set up for lowp with a diagnostic collector.
pub struct Session {
    context: Context,
    diagnostics: Rc<RefCell<Vec<String>>>,
    /// The OpenMP runtime when compiled code runs on threads.
    openmp: Option<String>,
    /// f32 lanes of the host's vectors (16 with AVX-512F, else 8).
    lanes: u32,
    /// The CPU kernel's inner products; `None`: the byte kernel where the host has it.
    dot: Option<Dot>,
    /// The CPU kernel's decode of B; `None`: through f16 where the host converts it.
    decode: Option<Decode>,
    /// The f32 kernel on bf16 pairs (`lowp-to-loops{bf16-dot=true}`); `None`: where the
    /// host has AVX512-BF16.
    bf16_dot: Option<bool>,
    /// The small-M forms (`lowp-to-loops{gemv=... narrow=...}`), both by default.
    gemv: bool,
    narrow: bool,
    /// `lowp-check-bounds` first in the CPU pipeline (off by default).
    check_bounds: bool,
    /// The GEMM's K and N blocks (`lowp-to-loops{kc=... nc=...}`); `None`: the pass's.
    kc: Option<u32>,
    nc: Option<u32>,
}

impl Default for Session {
    fn default() -> Self {
        Self::new()
    }
}

impl Session {
    /// A context with every dialect, lowp's passes registered and LLVM translations loaded.
    pub fn new() -> Self {
        lowp_passes::register_passes();
        let context = lowp_dialect::new_context();
        melior::utility::register_all_llvm_translations(&context);
        let diagnostics = Rc::new(RefCell::new(Vec::new()));
        let sink = diagnostics.clone();
        context.attach_diagnostic_handler(move |d| {
            sink.borrow_mut().push(format_diagnostic(&d));
            true
        });
        Self {
            context,
            diagnostics,
            openmp: openmp_library(),
            lanes: host_lanes(),
            dot: None,
            decode: None,
            bf16_dot: None,
            gemv: true,
            narrow: true,
            check_bounds: false,
            kc: None,
            nc: None,
        }
    }

    /// Use vectors of `lanes` f32 (8 or 16) in generated kernels instead of the host's width.
    pub fn set_lanes(&mut self, lanes: u32) {
        self.lanes = if lanes >= 16 { 16 } else { 8 };
    }

    /// f32 lanes per vector in generated kernels.
    pub fn lanes(&self) -> u32 {
        self.lanes
    }

    /// Ask for the CPU kernel's inner products (`None`: the byte kernel where the host
    /// has it, on VNNI where it has that, the default). Asking for [`Dot::I8`] or
    /// [`Dot::Vnni`] on a host without it fails in [`lower_cpu`](Self::lower_cpu).
    pub fn set_dot(&mut self, dot: Option<Dot>) {
        self.dot = dot;
    }

    /// The inner products generated kernels use at the current lanes.
    pub fn dot(&self) -> Dot {
        match self.dot {
            Some(d) => d,
            None if host_byte_dot(Dot::Vnni, self.lanes) => Dot::Vnni,
            None if host_byte_dot(Dot::I8, self.lanes) => Dot::I8,
            None => Dot::F32,
        }
    }

    /// Ask for the CPU kernel's decode of B (`None`: through f16 where the host converts
    /// f16 in one instruction, the default). Asking for [`Decode::F16`] on a host without
    /// it fails in [`lower_cpu`](Self::lower_cpu).
    pub fn set_decode(&mut self, decode: Option<Decode>) {
        self.decode = decode;
    }

    /// The decode of B generated kernels use.
    pub fn decode(&self) -> Decode {
        match self.decode {
            Some(d) => d,
            None if host_f16() => Decode::F16,
            None => Decode::Bits,
        }
    }

    /// Ask for the f32 kernel's products in bf16 pairs where the formats allow
    /// (`lowp-to-loops{bf16-dot=true}`: x86 `vdpbf16ps`); `None`: where the host has
    /// AVX512-BF16, the default. Asking for it on a host without it fails in
    /// [`lower_cpu`](Self::lower_cpu).
    pub fn set_bf16_dot(&mut self, bf16_dot: Option<bool>) {
        self.bf16_dot = bf16_dot;
    }

    /// Whether generated kernels take bf16 pairs at the current lanes.
    pub fn bf16_dot(&self) -> bool {
        self.bf16_dot.unwrap_or_else(|| host_bf16_dot(self.lanes))
    }

    /// Let the CPU kernel take its GEMV form and its narrow form where M is small enough
    /// (`lowp-to-loops{gemv=... narrow=...}`; both by default); off, the row tiles.
    pub fn set_small_m_forms(&mut self, gemv: bool, narrow: bool) {
        self.gemv = gemv;
        self.narrow = narrow;
    }

    /// Set the CPU kernel's K block and N block (`lowp-to-loops{kc=... nc=...}`, which
    /// rounds them to its units); `None`: the pass's defaults.
    pub fn set_blocks(&mut self, kc: Option<u32>, nc: Option<u32>) {
        self.kc = kc;
        self.nc = nc;
    }

    /// The options of `lowp-to-loops` the CPU pipeline runs with (`lanes=.. dot=..
    /// decode=.. bf16-dot=.. gemv=.. narrow=..`, then `kc=..` and `nc=..` where set).
    pub fn to_loops_options(&self) -> String {
        let mut options = format!(
            "lanes={} dot={} decode={} bf16-dot={} gemv={} narrow={}",
            self.lanes,
            self.dot().name(),
            self.decode().name(),
            self.bf16_dot(),
            self.gemv,
            self.narrow
        );
        for (name, value) in [("kc", self.kc), ("nc", self.nc)] {
            if let Some(v) = value {
                options.push_str(&format!(" {name}={v}"));
            }
        }
        options
    }

    /// Run compiled `scf.parallel` loops on threads (OpenMP) or sequentially. Threads need the
    /// OpenMP runtime ([`openmp_library`]); without it this stays sequential and returns
    /// false.
    pub fn set_threads(&mut self, threads: bool) -> bool {
        self.openmp = if threads { openmp_library() } else { None };
        self.openmp.is_some()
    }

    /// Check the module's own memref accesses at run time ([`lowp_passes::check_bounds`]:
    /// a load, store, view, cast or copy outside its memref stops the program with a
    /// located message instead of writing past a buffer). Off by default. The pass runs
    /// first, on the module as given: its lowp ops' kernels are not checked, but loops a
    /// caller has already lowered them into are (and run slower for it).
    pub fn set_check_bounds(&mut self, on: bool) {
        self.check_bounds = on;
    }

    /// Whether [`lower_cpu`](Self::lower_cpu) checks the module's memref accesses.
    pub fn check_bounds(&self) -> bool {
        self.check_bounds
    }

    /// Whether compiled code runs on threads.
    pub fn threads(&self) -> bool {
        self.openmp.is_some()
    }

    /// The context.
    pub fn context(&self) -> &Context {
        &self.context
    }

    /// Drain the collected diagnostics, one a line.
    pub fn take_diagnostics(&self) -> String {
        std::mem::take(&mut *self.diagnostics.borrow_mut()).join("\n")
    }

    /// Parse and verify a module.
    pub fn parse(&self, source: &str) -> Result<Module<'_>, JitError> {
        let module = Module::parse(&self.context, source);
        match module {
            Some(m) if m.as_operation().verify() => {
                self.take_diagnostics();
                Ok(m)
            }
            _ => Err(JitError::Parse {
                diagnostics: self.take_diagnostics(),
            }),
        }
    }

    /// Parse and verify a module from a file (diagnostics name the file); `-` reads stdin.
    /// A device (`/dev/zero`, also as standard input; not a terminal, not `/dev/null`) is
    /// refused before it is read: MLIR reads its input whole, and an endless one until memory
    /// runs out.
    pub fn parse_file(&self, path: &str) -> Result<Module<'_>, JitError> {
        {
            use std::io::IsTerminal;
            use std::os::unix::fs::FileTypeExt;
            // Standard input from a device other than a terminal (`< /dev/zero`) too.
            let checked = match path {
                "-" if std::io::stdin().is_terminal() => None,
                "-" => Some(("/dev/stdin", "standard input")),
                _ => Some((path, path)),
            };
            // /dev/null ends at once (an empty module); any other device may not.
            let device = |file| {
                use std::os::unix::fs::MetadataExt;
                let id = |m: &std::fs::Metadata| (m.dev(), m.ino());
                let null = std::fs::metadata("/dev/null").ok();
                std::fs::metadata(file).is_ok_and(|m| {
                    let kind = m.file_type();
                    (kind.is_char_device() || kind.is_block_device())
                        && null.is_none_or(|null| id(&null) != id(&m))
                })
            };
            if let Some((_, name)) = checked.filter(|&(file, _)| device(file)) {
                return Err(JitError::Parse {
                    diagnostics: format!(
                        "'{name}' is a device, not a file: the module is read whole before \
                         it is parsed"
                    ),
                });
            }
        }
        // SAFETY: a live context; a null module reports failure.
        let raw = unsafe {
            mlir_sys::mlirModuleCreateParseFromFile(
                self.context.to_raw(),
                lowp_passes::ir::string_ref(path),
            )
        };
        if raw.ptr.is_null() {
            let mut diagnostics = self.take_diagnostics();
            if diagnostics.is_empty() {
                diagnostics = format!("cannot read '{path}'");
            }
            return Err(JitError::Parse { diagnostics });
        }
        // SAFETY: a freshly parsed module, owned from here on.
        let module = unsafe { Module::from_raw(raw) };
        if !module.as_operation().verify() {
            return Err(JitError::Parse {
                diagnostics: self.take_diagnostics(),
            });
        }
        self.take_diagnostics();
        // Compilation lowers and translates the one module: a module nested in it (a file
        // of two top-level modules reads as one module holding both) would be left out.
        let mut nested = None;
        module.as_operation().walk(WalkOrder::PreOrder, |op| {
            if op.name().as_string_ref().as_str() == Ok("builtin.module")
                && op.to_raw().ptr != module.as_operation().to_raw().ptr
            {
                nested = Some(op.location().to_raw());
                return WalkResult::Interrupt;
            }
            WalkResult::Advance
        });
        if let Some(location) = nested {
            lowp_passes::ir::emit_error(
                location,
                "a module inside the file's module: lowp compiles one module a file, and \
                 would leave this one out (a file of several top-level modules reads as one \
                 module holding them)",
            );
            return Err(JitError::Parse {
                diagnostics: self.take_diagnostics(),
            });
        }
        let mut module = module;
        self.bufferize(&mut module)?;
        Ok(module)
    }

    /// Where lowp ops are in tensor form (they return tensors), bufferize the module:
    /// one-shot-bufferize with identity layouts (the lowerings take contiguous rows), then
    /// canonicalize (a `materialize_in_destination` into the memref the op already wrote
    /// leaves a self-copy). Function signatures are kept: an entry takes memrefs, and a
    /// tensor form inside it (`bufferization.to_tensor %arg restrict`, the result
    /// materialized into an argument) becomes the memref form on those arguments.
    fn bufferize(&self, module: &mut Module) -> Result<(), JitError> {
        let mut tensor_form = false;
        module.as_operation().walk(WalkOrder::PreOrder, |op| {
            let lowp = op
                .name()
                .as_string_ref()
                .as_str()
                .is_ok_and(|n| n.starts_with("lowp."));
            // (Only the tensor form has results.)
            if lowp && op.result_count() > 0 {
                tensor_form = true;
                return WalkResult::Interrupt;
            }
            WalkResult::Advance
        });
        if !tensor_form {
            return Ok(());
        }
        self.run_pipeline(
            module,
            "builtin.module(one-shot-bufferize{unknown-type-conversion=identity-layout-map},\
             canonicalize)",
        )
        .map_err(|e| match e {
            JitError::Pipeline { diagnostics } => JitError::Parse { diagnostics },
            other => other,
        })
    }

    /// Run a textual pass pipeline on a module.
    pub fn run_pipeline(&self, module: &mut Module, pipeline: &str) -> Result<(), JitError> {
        let pm = PassManager::new(&self.context);
        melior::utility::parse_pass_pipeline(pm.as_operation_pass_manager(), pipeline).map_err(
            |e| JitError::Pipeline {
                diagnostics: format!("{e}\n{}", self.take_diagnostics()),
            },
        )?;
        pm.run(module).map_err(|_| JitError::Pipeline {
            diagnostics: self.take_diagnostics(),
        })
    }

    /// Lower a lowp module with `lowp-cpu-pipeline` (or `lowp-cpu-openmp-pipeline` with
    /// threads) and JIT it. Every public function gets a C interface
    /// (`llvm.emit_c_interface`) so it can be called with [`MemRefArg`]s.
    pub fn compile_cpu(&self, mut module: Module, opt_level: usize) -> Result<Jit, JitError> {
        self.lower_cpu(&mut module)?;
        self.jit(&module, opt_level)
    }

    /// Give every function a C interface and run `lowp-cpu-pipeline` (or
    /// `lowp-cpu-openmp-pipeline` with threads): the module ends in the LLVM dialect.
    pub fn lower_cpu(&self, module: &mut Module) -> Result<(), JitError> {
        let mut funcs = Vec::new();
        module.as_operation().walk(WalkOrder::PreOrder, |op| {
            // Definitions only: a declaration's C interface is an external symbol nothing
            // defines, which the JIT fails to resolve when it compiles without optimization.
            if op.name().as_string_ref().as_str() == Ok("func.func")
                && lowp_passes::ir::is_definition(op)
            {
                funcs.push(op.to_raw());
            }
            WalkResult::Advance
        });
        for f in funcs {
            // SAFETY: live func.func ops of the module, collected above.
            let f = unsafe { melior::ir::OperationRef::from_raw(f) };
            lowp_passes::ir::set_unit_attribute(f, "llvm.emit_c_interface");
        }
        let pipeline = if self.openmp.is_some() {
            lowp_passes::pipelines::CPU_OPENMP
        } else {
            lowp_passes::pipelines::CPU
        };
        let dot = self.dot();
        if dot != Dot::F32 && !host_byte_dot(dot, self.lanes) {
            return Err(JitError::Pipeline {
                diagnostics: format!(
                    "dot={} with {} lanes needs {}, which this CPU lacks",
                    dot.name(),
                    self.lanes,
                    spelled(byte_dot_extensions(dot, self.lanes))
                ),
            });
        }
        let decode = self.decode();
        if decode == Decode::F16 && !host_f16() {
            return Err(JitError::Pipeline {
                diagnostics: "decode=f16 needs an f16 -> f32 instruction (x86 F16C), which \
                              this CPU lacks"
                    .into(),
            });
        }
        let bf16 = self.bf16_dot();
        if bf16 && !host_bf16_dot(self.lanes) {
            return Err(JitError::Pipeline {
                diagnostics: format!(
                    "bf16-dot=true with {} lanes needs {}, which this CPU lacks",
                    self.lanes,
                    spelled(bf16_dot_extensions(self.lanes))
                ),
            });
        }
        let mut text = pipeline.text_with_to_loops(&self.to_loops_options());
        if self.check_bounds {
            // Before lowp's lowerings: the user's accesses, not the kernels'.
            text = text.replacen("func.func(", "func.func(lowp-check-bounds,", 1);
        }
        self.run_pipeline(module, &text)
    }

    /// JIT-compile a module already in the LLVM dialect (LLVM's `-O<opt_level>` pipeline and
    /// the host CPU's features).
    pub fn jit(&self, module: &Module, opt_level: usize) -> Result<Jit, JitError> {
        Jit::new(self, module, opt_level)
    }
}

/// The first op the JIT cannot translate (outside the LLVM and OpenMP dialects), as an
/// error at its location: what the CPU pipeline left, say a function of tensors. The
/// translation would stop at it naming only a missing dialect interface. `None` where
/// there is none.
fn emit_untranslatable(module: &Module) -> Option<()> {
    let op = lowp_passes::ir::first_untranslatable(module.as_operation(), |name| {
        name.starts_with("llvm.") || name.starts_with("omp.")
    })?;
    let name = op.name();
    let name = name.as_string_ref().as_str().unwrap_or("");
    let tensors = op
        .attribute("function_type")
        .is_ok_and(|t| t.to_string().contains("tensor<"));
    let what = match op
        .attribute("sym_name")
        .ok()
        .and_then(lowp_passes::ir::string_value)
    {
        Some(sym) => format!("'{name}' @{sym}"),
        None => format!("'{name}'"),
    };
    let hint = if tensors {
        "it takes or returns tensors; the CPU pipeline lowers functions of memrefs \
         (bufferize it first, or leave it out of the file)"
    } else {
        "the CPU pipeline lowers lowp, func, memref, scf, arith, math and vector ops on \
         memrefs"
    };
    lowp_passes::ir::emit_error(
        op.location().to_raw(),
        &format!(
            "{what} is still there after the CPU pipeline, and the JIT cannot translate it: {hint}"
        ),
    );
    Some(())
}

/// The first function the module declares, does not define and refers to (a callee of
/// `llvm.call`, the symbol of `llvm.mlir.addressof`) that the JIT cannot find in the
/// process either (its executable and the libraries it loaded: libc, libm, the OpenMP
/// runtime), as an error at the declaration's location; `None` where there is none. The
/// engine would fail to link such a module only when it is called, naming the symbol in a
/// "JIT session error" line and leaving the caller to find every function of the module
/// missing. A declaration nothing refers to links to nothing; LLVM intrinsics (`llvm.*`)
/// are no symbols, and `extern_weak` declarations resolve to null.
fn emit_undefined_function(module: &Module) -> Option<()> {
    use melior::ir::attribute::FlatSymbolRefAttribute;
    let mut referenced = std::collections::HashSet::new();
    let mut declared = Vec::new();
    module.as_operation().walk(WalkOrder::PreOrder, |op| {
        let name = op.name();
        let reference = match name.as_string_ref().as_str() {
            Ok("llvm.call") => "callee",
            Ok("llvm.mlir.addressof") => "global_name",
            Ok("llvm.func") => {
                if !lowp_passes::ir::is_definition(op)
                    && !op
                        .attribute("linkage")
                        .is_ok_and(|l| l.to_string().contains("extern_weak"))
                {
                    declared.push(op.to_raw());
                }
                return WalkResult::Advance;
            }
            _ => return WalkResult::Advance,
        };
        if let Some(symbol) = op
            .attribute(reference)
            .ok()
            .and_then(|a| FlatSymbolRefAttribute::try_from(a).ok())
        {
            referenced.insert(symbol.value().to_string());
        }
        WalkResult::Advance
    });
    let (location, name) = declared.into_iter().find_map(|raw| {
        // SAFETY: a live llvm.func of the module, collected above.
        let op = unsafe { melior::ir::OperationRef::from_raw(raw) };
        let name = op
            .attribute("sym_name")
            .ok()
            .and_then(lowp_passes::ir::string_value)?;
        (referenced.contains(&name) && !name.starts_with("llvm.") && !process_has_symbol(&name))
            .then(|| (op.location().to_raw(), name))
    })?;
    lowp_passes::ir::emit_error(
        location,
        &format!(
            "@{name} is declared and defined nowhere the JIT looks: not in the module, \
             and not in this process or the libraries it loaded; define it in the module"
        ),
    );
    Some(())
}

/// Whether the process (its executable's exported symbols and every library loaded
/// globally) defines `name`: where the JIT resolves a module's external symbols.
fn process_has_symbol(name: &str) -> bool {
    let Ok(c) = std::ffi::CString::new(name) else {
        return false;
    };
    // SAFETY: dlsym on RTLD_DEFAULT (null on glibc) with a NUL-terminated name.
    !unsafe { dlsym(std::ptr::null_mut(), c.as_ptr()) }.is_null()
}

/// A JIT-compiled module.
pub struct Jit {
    raw: mlir_sys::MlirExecutionEngine,
}

impl Jit {
    fn new(session: &Session, module: &Module, opt_level: usize) -> Result<Self, JitError> {
        keep_workspaces_in_heap();
        if let Some(lib) = &session.openmp {
            check_openmp_environment().map_err(|reason| JitError::Environment { reason })?;
            load_global(lib).map_err(|diagnostics| JitError::Engine { diagnostics })?;
        }
        if lowp_passes::ir::emit_reserved_llvm_name(module.as_operation()).is_some()
            || lowp_passes::ir::emit_missing_resource(module.as_operation()).is_some()
            || emit_untranslatable(module).is_some()
            || host::emit_missing_extension(module).is_some()
            || emit_undefined_function(module).is_some()
        {
            return Err(JitError::Engine {
                diagnostics: session.take_diagnostics(),
            });
        }
        // SAFETY: the module is in the LLVM dialect; a null engine reports failure.
        let raw = unsafe {
            mlir_sys::mlirExecutionEngineCreate(
                module.to_raw(),
                opt_level as i32,
                0,
                std::ptr::null(),
                false,
                false,
            )
        };
        if raw.ptr.is_null() {
            return Err(JitError::Engine {
                diagnostics: session.take_diagnostics(),
            });
        }
        Ok(Self { raw })
    }

    /// Call `name` (a function of the module, through its C interface) with memref
    /// arguments.
    ///
    /// # Safety
    /// The arguments must match the function's signature: one [`MemRefArg`] per memref
    /// parameter with the right element size and rank, buffers large enough for the shapes.
    pub unsafe fn call(&self, name: &str, args: &mut [MemRefArg]) -> Result<(), JitError> {
        // The ExecutionEngine wraps every function in a packed form `_mlir_<name>` taking
        // an array of pointers to its arguments; for the C interface of `name` that is
        // `_mlir__mlir_ciface_<name>`, whose arguments are descriptor pointers.
        let packed_fn = self.lookup(&format!("_mlir__mlir_ciface_{name}"));
        if packed_fn.is_null() {
            return Err(JitError::NoFunction { name: name.into() });
        }
        let mut pointers: Vec<*mut u64> = args.iter_mut().map(|a| a.descriptor_ptr()).collect();
        let mut packed: Vec<*mut c_void> = pointers
            .iter_mut()
            .map(|p| p as *mut *mut u64 as *mut c_void)
            .collect();
        // SAFETY: the symbol is a packed wrapper `void(void**)`; arguments per the contract.
        unsafe {
            let f: unsafe extern "C" fn(*mut *mut c_void) = std::mem::transmute(packed_fn);
            f(packed.as_mut_ptr());
        }
        Ok(())
    }
}

impl Jit {
    /// The address of a symbol of the compiled module (null when absent).
    pub fn lookup(&self, symbol: &str) -> *mut c_void {
        // SAFETY: a lookup on a live engine.
        unsafe {
            mlir_sys::mlirExecutionEngineLookup(self.raw, lowp_passes::ir::string_ref(symbol))
        }
    }
}

/// The function type of entry `func` (`@entry`), refusing one that returns values: its
/// call passes the arguments' descriptors only, and a result would be read from nowhere.
pub(crate) fn entry_type<'c>(
    func: melior::ir::OperationRef<'c, '_>,
    entry: &str,
) -> Result<melior::ir::r#type::FunctionType<'c>, String> {
    use melior::ir::attribute::TypeAttribute;
    use melior::ir::r#type::FunctionType;
    let ft = func
        .attribute("function_type")
        .ok()
        .and_then(|a| TypeAttribute::try_from(a).ok())
        .and_then(|t| FunctionType::try_from(t.value()).ok())
        .ok_or_else(|| format!("@{entry} has no function type"))?;
    if !lowp_passes::ir::is_definition(func) {
        return Err(format!("@{entry} is a declaration: it has no body to run"));
    }
    if ft.result_count() > 0 {
        return Err(format!(
            "@{entry} returns values; entries write their results into memref arguments"
        ));
    }
    Ok(ft)
}

/// `file:line:col: error: message` (as mlir-opt prints), notes on their own lines.
/// The `func.func @name` of a module (any nesting depth).
pub(crate) fn find_function<'c, 'a>(
    module: &'a Module<'c>,
    name: &str,
) -> Option<melior::ir::OperationRef<'c, 'a>> {
    let mut found = None;
    module.as_operation().walk(WalkOrder::PreOrder, |op| {
        if op.name().as_string_ref().as_str() == Ok("func.func")
            && op
                .attribute("sym_name")
                .ok()
                .and_then(lowp_passes::ir::string_value)
                .is_some_and(|s| s == name)
        {
            found = Some(op.to_raw());
            return WalkResult::Interrupt;
        }
        WalkResult::Advance
    });
    // SAFETY: found in the live module, which the result borrows.
    found.map(|raw| unsafe { melior::ir::OperationRef::from_raw(raw) })
}

fn format_diagnostic(d: &melior::diagnostic::Diagnostic) -> String {
    use melior::diagnostic::DiagnosticSeverity;
    let severity = match d.severity() {
        DiagnosticSeverity::Error => "error",
        DiagnosticSeverity::Warning => "warning",
        DiagnosticSeverity::Note => "note",
        DiagnosticSeverity::Remark => "remark",
    };
    let place = lowp_passes::ir::location_text(d.location());
    let mut text = format!("{place}: {severity}: {d}");
    for i in 0..d.note_count() {
        if let Ok(note) = d.note(i) {
            text.push('\n');
            text.push_str(&format_diagnostic(&note));
        }
    }
    text
}

unsafe extern "C" {
    fn mallopt(param: std::ffi::c_int, value: std::ffi::c_int) -> std::ffi::c_int;
}

/// Keep large kernel workspaces in the heap between calls. Generated kernels allocate their
/// packed operands and f32 workspace with `malloc` on every call; glibc serves blocks above
/// 128 KiB with fresh `mmap`s and unmaps them on `free`, so every call would page-fault its
/// whole workspace in again (48 MiB at 2048^3: ~12k faults). Raising the mmap and trim
/// thresholds to 1 GiB makes the freed blocks reusable. Process-wide, set once.
fn keep_workspaces_in_heap() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        static ONCE: std::sync::Once = std::sync::Once::new();
        ONCE.call_once(|| {
            const M_TRIM_THRESHOLD: std::ffi::c_int = -1;
            const M_MMAP_THRESHOLD: std::ffi::c_int = -3;
            // SAFETY: plain glibc tuning calls with valid parameters.
            unsafe {
                mallopt(M_MMAP_THRESHOLD, 1 << 30);
                mallopt(M_TRIM_THRESHOLD, 1 << 30);
            }
        });
    }
}

unsafe extern "C" {
    fn dlopen(filename: *const std::ffi::c_char, flags: std::ffi::c_int) -> *mut c_void;
    fn dlerror() -> *const std::ffi::c_char;
    fn dlsym(handle: *mut c_void, symbol: *const std::ffi::c_char) -> *mut c_void;
}

/// Load a runtime library into the process's global symbol namespace, where the JIT's
/// process-symbol lookup finds it (a library given to the ExecutionEngine itself is only
/// searched for MLIR's runtime-init protocol).
fn load_global(path: &str) -> Result<(), String> {
    const RTLD_NOW: std::ffi::c_int = 2;
    const RTLD_GLOBAL: std::ffi::c_int = 0x100;
    let c = std::ffi::CString::new(path).map_err(|_| format!("bad library path '{path}'"))?;
    // SAFETY: dlopen with a NUL-terminated path; the handle is kept for the process.
    let handle = unsafe { dlopen(c.as_ptr(), RTLD_NOW | RTLD_GLOBAL) };
    if handle.is_null() {
        // SAFETY: dlerror returns a NUL-terminated message after a failed dlopen.
        let why = unsafe { std::ffi::CStr::from_ptr(dlerror()) }
            .to_string_lossy()
            .into_owned();
        return Err(format!("cannot load the OpenMP runtime '{path}': {why}"));
    }
    // A library that loads but is no OpenMP runtime (LOWP_OMP_LIBRARY naming libm, say)
    // would leave the threaded kernels' `__kmpc_*` calls unresolved at their first call.
    let entry = c"__kmpc_fork_call";
    // SAFETY: dlsym on the live handle with a NUL-terminated name.
    if unsafe { dlsym(handle, entry.as_ptr()) }.is_null() {
        return Err(format!(
            "'{path}' is not an OpenMP runtime: it defines no __kmpc_fork_call (the \
             threaded kernels call libomp's __kmpc_* functions; LOWP_OMP_LIBRARY names \
             the runtime, LLVM 22's libomp.so by default)"
        ));
    }
    Ok(())
}

impl Drop for Jit {
    fn drop(&mut self) {
        // SAFETY: created by mlirExecutionEngineCreate and destroyed once.
        unsafe { mlir_sys::mlirExecutionEngineDestroy(self.raw) }
    }
}
