//! `lowp-translate`: an LLVM-dialect module (what `lowp-opt`'s pipelines produce) to LLVM IR,
//! PTX, AMDGPU or host assembly, or an object file, for a chip.
//!
//! ```text
//! lowp-translate FILE.mlir|- --emit=llvm|ptx|asm|obj|hsaco
//!                [--chip=sm_90a|sm_89|sm_100a|gfx942|gfx950|host] [--kernel=K]
//!                [--split-k=S] [--multicast=M] [--fold-scales=F] [--nvfp4=R]
//!                [--accumulate=A] [--pipeline='builtin.module(...)'] [-o OUT]
//! ```
//! lowp ops left in the module (after `--pipeline`, if any) are lowered for a GPU chip
//! first: `lowp-to-nvvm{chip kernel}` / `lowp-to-rocdl{chip kernel}` and the upstream
//! mapping onto `gpu.launch` (`lowp_passes::pipelines::{nvvm_front, rocdl_front}`).
//! `--emit=hsaco` links an AMD kernel module into a code object with ld.lld (lld-22;
//! `$LOWP_LD_LLD` overrides where it is).
//! A module that holds GPU kernels (`gpu.module`, e.g. after `lowp-gpu-generic-pipeline`)
//! gets the chip's kernel passes (NVVM or ROCDL, then `gpu-module-to-binary`) and
//! `--emit=ptx|asm` prints every kernel's PTX or ISA, each after a comment naming it.
//!
//! Errors (unparsable input, ops the LLVM translation does not know, a backend failure) are
//! MLIR/LLVM diagnostics and exit status 1; bad command lines exit 2.

use std::io::Write;
use std::process::ExitCode;

use lowp_codegen::{Chip, Emit, Vendor};
use lowp_jit::Session;

#[macro_use]
#[path = "../../common/output.rs"]
mod output;

const USAGE: &str =
    "usage: lowp-translate FILE.mlir --emit=llvm|ptx|asm|obj|hsaco [--chip=CHIP] [--kernel=K]
                      [--split-k=S] [--multicast=M] [--fold-scales=F] [--nvfp4=R]
                      [--accumulate=A] [--pipeline=P] [-o OUT]
  --emit      llvm: LLVM IR; ptx: PTX (NVIDIA chips); asm: target assembly; obj: ELF object;
              hsaco: an AMD kernel linked into a code object (ld.lld; needs -o)
  --chip      sm_89, sm_90a, sm_100a, gfx942, gfx950, host (default host)
  --kernel    kernel for lowp.scaled_matmul: auto (the strongest matrix instruction the
              formats allow; the default), generic, or one instruction (refusing other ops):
              tcgen05, wgmma, wgmma-skinny (the wgmma pipeline's swap-AB block for small
              M), wgmma-registers (that block for M <= 16 with B fed through registers),
              wgmma-specialized (its 128 x 128 block with a producer warpgroup),
              wgmma-tma (the pipeline with its E4M3 / E5M2 operands loaded by TMA) or mma-sync
              (NVIDIA), scaled-mfma or mfma (AMD)
  --split-k   NVIDIA: the wgmma skinny block's split of K among a cluster (auto, 1, 2, 4,
              8; default auto)
  --multicast NVIDIA: wgmma-tma's square block sharing B's stages in clusters of 2 by TMA
              multicast (auto, 1: off, 2: required; default 1)
  --fold-scales NVIDIA: the wgmma pipeline (square and skinny blocks) folding FP4 / FP6
              operands' E8M0 32-block scales into their FP8 codes where a block's
              scales allow, 4-bit blocks of zeros under any scale (auto; rows: B never
              anchored to one code for the block; off; default auto)
  --translate-ahead NVIDIA: the wgmma barrier pipeline translating stage s + 1 while
              stage s's instructions run (on; off, the default: unmeasured)
  --stages    NVIDIA: the most stages of the wgmma pipeline's ring (auto: square 5,
              warp-specialized 4, skinny 8; or 2 to 8; fewer where they do not fit)
  --block-n   NVIDIA: the wgmma pipeline's square block's columns (128, the default, or
              192: m64n192k32, one register set of partial sums)
  --persistent NVIDIA: wgmma-tma's square block fed by TMA alone as one block per SM
              looping over its tiles (on; off, the default: unmeasured)
  --store-c   NVIDIA: how the warp-specialized square block stores C (direct, the
              default; tma: staged in shared memory, stored by TMA: unmeasured)
  --translate-once NVIDIA: MXFP4 x MXFP4 on the square block as three launches on device
              workspaces: both operands translated once into E5M2 (DeepSeek's scale
              layout), the TMA block on them, the pipeline for tiles whose scales do not
              fold (on; off, the default: unmeasured)
  --nvfp4     NVIDIA: the wgmma pipeline's route for NVFP4's 16-blocks (split: an FP8
              instruction per block on split tiles; f16: codes times their scales as f16
              into k16 f16 instructions; auto, the default: f16 where it applies, but
              E4M3 beside NVFP4 at M <= 64)
  --accumulate NVIDIA sm_90a: how the wgmma kernels sum E4M3 / E5M2 (fp8: the FP8
              instructions, Hopper's reduced-precision FP8 accumulator as cuBLASLt's;
              f32: their f16 patterns into k16 f16 instructions, exact products summed in
              f32, half the rate; default fp8)
  --pipeline  a textual pass pipeline run first (e.g. builtin.module(lowp-cpu-pipeline));
              lowp ops left after it are lowered for a GPU --chip, and gpu.module kernels
              are compiled for it (ptx or asm)
  -o OUT      output file (default stdout; required for obj)";

struct Args {
    file: String,
    emit: Emit,
    chip: Chip,
    pipeline: Option<String>,
    kernel: Option<String>,
    /// lowp-to-nvvm's tuning options (`--split-k`, `--multicast`, `--fold-scales`,
    /// `--nvfp4`, `--accumulate`).
    tuning: Vec<(&'static str, String)>,
    hsaco: bool,
    out: Option<String>,
}

fn parse(raw: Vec<String>) -> Result<Args, String> {
    let (mut file, mut emit, mut chip, mut pipeline, mut out) = (None, None, None, None, None);
    let mut kernel = None;
    let mut tuning = vec![];
    let mut it = raw.into_iter();
    // Each flag once: a second value would silently replace the first.
    let mut seen = std::collections::HashSet::new();
    while let Some(arg) = it.next() {
        let (flag, inline) = match arg.split_once('=') {
            Some((f, v)) if f.starts_with('-') => (f.to_string(), Some(v.to_string())),
            _ => (arg.clone(), None),
        };
        if flag.starts_with('-') && flag != "-" && !seen.insert(flag.clone()) {
            return Err(format!("{flag} is given twice"));
        }
        let mut value = || {
            inline
                .clone()
                .or_else(|| it.next())
                .ok_or(format!("{flag} needs a value\n{USAGE}"))
        };
        match flag.as_str() {
            "--emit" => emit = Some(value()?),
            "--chip" => chip = Some(value()?.parse::<Chip>()?),
            "--pipeline" => pipeline = Some(value()?),
            "--kernel" => kernel = Some(value()?),
            f if lowp_jit::gpu::tuning_option(f).is_some() => {
                let v = value()?;
                // Checked here (a bad command line, status 2) rather than when the
                // pipeline is parsed.
                let name = lowp_passes::registry::check_option("lowp-to-nvvm", &flag[2..], &v)
                    .map_err(|why| format!("{flag}: {why}"))?;
                tuning.push((name, v));
            }
            "-o" => out = Some(value()?),
            // Without a value it answered in `main`.
            "-h" | "--help" => return Err(format!("{flag} takes no value ('{arg}')")),
            f if f.starts_with('-') && f != "-" => {
                return Err(format!("unknown option '{f}'\n{USAGE}"))
            }
            _ => {
                if file.replace(arg.clone()).is_some() {
                    return Err(format!("more than one input file ('{arg}')"));
                }
            }
        }
    }
    let chip = chip.unwrap_or_else(|| "host".parse().expect("host is a chip"));
    let emit_name = emit.ok_or(format!("--emit is required\n{USAGE}"))?;
    let hsaco = emit_name == "hsaco";
    let (emit, ptx) = match emit_name.as_str() {
        "llvm" => (Emit::Llvm, false),
        "hsaco" => (Emit::Obj, false),
        "asm" => (Emit::Asm, false),
        "obj" => (Emit::Obj, false),
        "ptx" => (Emit::Asm, true),
        other => {
            return Err(format!(
                "--emit: '{other}' is not one of llvm, ptx, asm, obj, hsaco"
            ))
        }
    };
    if ptx && chip.vendor != Vendor::Nvidia {
        return Err(format!(
            "--emit=ptx needs an NVIDIA chip (sm_89, sm_90a, sm_100a), found {chip}"
        ));
    }
    if let Some(k) = &kernel {
        let known: &[&str] = match chip.vendor {
            Vendor::Nvidia => lowp_passes::to_nvvm::KERNELS,
            Vendor::Amd => &["auto", "scaled-mfma", "mfma", "generic"],
            Vendor::Host => {
                return Err(format!(
                    "--kernel chooses among GPU kernels: give a GPU --chip, not {chip}"
                ))
            }
        };
        if !known.contains(&k.as_str()) {
            return Err(format!(
                "--kernel: '{k}' is not a kernel for {chip}; expected one of {}",
                known.join(", ")
            ));
        }
    }
    if !tuning.is_empty() && chip.vendor != Vendor::Nvidia {
        let flags = lowp_jit::gpu::tuning_flags();
        let list = match flags.split_last() {
            Some((last, rest)) if !rest.is_empty() => format!("{} and {last}", rest.join(", ")),
            _ => flags.join(", "),
        };
        return Err(format!(
            "{list} tune lowp-to-nvvm: give an NVIDIA --chip, not {chip}"
        ));
    }
    if emit_name == "obj" && chip.vendor == Vendor::Nvidia {
        return Err(format!(
            "--emit=obj writes an ELF object, which LLVM does not make for {chip}: use \
             --emit=ptx (the driver or ptxas assembles it)"
        ));
    }
    if hsaco && chip.vendor != Vendor::Amd {
        return Err(format!(
            "--emit=hsaco needs an AMD chip (gfx942, gfx950), found {chip}"
        ));
    }
    if emit == Emit::Obj && out.is_none() {
        return Err("--emit=obj and --emit=hsaco write a binary object: give -o OUT".into());
    }
    Ok(Args {
        file: file.ok_or(format!("no input file\n{USAGE}"))?,
        emit,
        chip,
        pipeline,
        kernel,
        tuning,
        hsaco,
        out,
    })
}

fn run(a: Args) -> Result<(), String> {
    let session = Session::new();
    let mut module = session.parse_file(&a.file).map_err(|e| e.to_string())?;
    if let Some(p) = &a.pipeline {
        session
            .run_pipeline(&mut module, p)
            .map_err(|e| e.to_string())?;
    }
    if a.chip.vendor != Vendor::Host {
        emulated(&session, &module, a.chip)?;
    }
    if has_op(&module, |name| name.starts_with("lowp.")) {
        let lowering = match a.chip.vendor {
            Vendor::Nvidia => Some(lowp_passes::pipelines::nvvm_front_with(
                a.chip.cpu,
                a.kernel.as_deref().unwrap_or("auto"),
                &a.tuning
                    .iter()
                    .map(|(n, v)| (*n, v.as_str()))
                    .collect::<Vec<_>>(),
            )),
            Vendor::Amd => Some(lowp_passes::pipelines::rocdl_front(
                a.chip.cpu,
                a.kernel.as_deref().unwrap_or("auto"),
            )),
            Vendor::Host => None,
        };
        if let Some(p) = lowering {
            session
                .run_pipeline(&mut module, &p)
                .map_err(|e| e.to_string())?;
        }
    }
    foreign_ops(&session, &module, a.chip)?;
    let bytes = if has_op(&module, |name| name == "gpu.module") {
        gpu_kernels(&session, &mut module, &a)?
    } else {
        untranslated(&session, &module)?;
        lowp_codegen::emit(&module, a.chip, a.emit, &|| session.take_diagnostics())
            .map_err(|e| e.to_string())?
    };
    // The lowerings' remarks (why an op got the generic kernel, a renamed kernel), one line
    // each on stderr: the output is the code.
    for line in session.take_diagnostics().lines() {
        warn!("lowp-translate: {line}");
    }
    match &a.out {
        Some(path) => {
            std::fs::write(path, &bytes).map_err(|e| format!("cannot write '{path}': {e}"))
        }
        None => match std::io::stdout().write_all(&bytes) {
            // A closed pipe ends the output quietly.
            Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
                Err(format!("cannot write to stdout: {e}"))
            }
            _ => Ok(()),
        },
    }
}

/// Refuse, at its location, the first op of a module without kernels that is not one LLVM's
/// translation takes (LLVM, NVVM, ROCDL, OpenMP): the translation would fail naming only
/// the op, often at an unrealized cast with no location (a `gpu.launch` left by the CPU
/// pipeline, say).
fn untranslated(session: &Session, module: &melior::ir::Module) -> Result<(), String> {
    use melior::ir::operation::OperationLike;
    let translatable = |name: &str| {
        ["llvm.", "nvvm.", "rocdl.", "omp."]
            .iter()
            .any(|p| name.starts_with(p))
    };
    let Some(op) = lowp_passes::ir::first_untranslatable(module.as_operation(), translatable)
    else {
        return Ok(());
    };
    let name = op
        .name()
        .as_string_ref()
        .as_str()
        .unwrap_or("?")
        .to_string();
    Err(located(
        session,
        op.location().to_raw(),
        format!(
            "'{name}' is still there: lowp-translate translates LLVM-dialect modules (with \
             NVVM, ROCDL or OpenMP ops); lower it first (--pipeline; a gpu.launch needs a GPU \
             pipeline and --chip)"
        ),
    ))
}

/// Refuse, at its location, a function whose lowp ops `--pipeline` made emulated kernels
/// (`emulate=true`): host loops, which the GPU chip's pipeline would map onto the GPU as if
/// they were the op's own (and AMD's backend then fails on their stack).
fn emulated(session: &Session, module: &melior::ir::Module, chip: Chip) -> Result<(), String> {
    use melior::ir::operation::{OperationLike, WalkOrder, WalkResult};
    let mut found = None;
    module.as_operation().walk(WalkOrder::PreOrder, |op| {
        if op.has_attribute(lowp_passes::EMULATED) {
            found = Some(op.location().to_raw());
            return WalkResult::Interrupt;
        }
        WalkResult::Advance
    });
    let Some(location) = found else {
        return Ok(());
    };
    let message = format!(
        "this function's kernels are emulated (emulate=true: loops on the host computing what \
         the GPU's would), which is code for --chip=host, not {chip} (drop emulate=true for \
         the GPU kernel)"
    );
    Err(located(session, location, message))
}

/// Whether the module holds an op whose name passes `test`.
fn has_op(module: &melior::ir::Module, test: impl Fn(&str) -> bool) -> bool {
    use melior::ir::operation::{OperationLike, WalkOrder, WalkResult};
    let mut found = false;
    module.as_operation().walk(WalkOrder::PreOrder, |op| {
        if op.name().as_string_ref().as_str().is_ok_and(&test) {
            found = true;
            return WalkResult::Interrupt;
        }
        WalkResult::Advance
    });
    found
}

/// Refuse, at its location, the first op the chip has no instruction for: a vendor's
/// intrinsics on the other vendor's chip or on the host (NVVM, ROCDL, as ops or as
/// `llvm.call_intrinsic`), gfx950's scaled MFMA and scaled conversions on another AMD chip,
/// or host code's stack (`llvm.alloca` in address space 0) on an AMD chip, whose stack is
/// address space 5. LLVM's backend would stop at them with an error naming no location
/// ("Cannot select").
fn foreign_ops(session: &Session, module: &melior::ir::Module, chip: Chip) -> Result<(), String> {
    use melior::ir::operation::{OperationLike, WalkOrder, WalkResult};
    let why = |name: &str| -> Option<&'static str> {
        let (nvvm, rocdl) = (name.starts_with("nvvm."), name.starts_with("rocdl."));
        let gfx950 = ["rocdl.mfma.scale.", "rocdl.cvt.scalef32."]
            .iter()
            .any(|p| name.starts_with(p));
        match chip.vendor {
            Vendor::Nvidia | Vendor::Host if rocdl => Some("an AMD (ROCDL) operation"),
            Vendor::Amd | Vendor::Host if nvvm => Some("an NVIDIA (NVVM) operation"),
            Vendor::Amd if gfx950 && chip.cpu != "gfx950" => Some("a gfx950 operation"),
            _ => None,
        }
    };
    // A stack slot in the generic address space: host code (AMD kernels allocate in 5).
    let host_stack = |op: &melior::ir::operation::OperationRef| {
        chip.vendor == Vendor::Amd
            && op.name().as_string_ref().as_str() == Ok("llvm.alloca")
            && op
                .result(0)
                .is_ok_and(|r| melior::ir::ValueLike::r#type(&r).to_string() == "!llvm.ptr")
    };
    let mut found = None;
    module.as_operation().walk(WalkOrder::PreOrder, |op| {
        let mut name = op.name().as_string_ref().as_str().unwrap_or("").to_string();
        let mut class = name.clone();
        if name == "llvm.call_intrinsic" {
            // The intrinsic `llvm.nvvm.mma...` is classed as the op `nvvm.mma...` would be,
            // `llvm.amdgcn.*` as `rocdl.*`.
            if let Some(intrin) = op
                .attribute("intrin")
                .ok()
                .and_then(lowp_passes::ir::string_value)
            {
                name = intrin;
                let bare = name.strip_prefix("llvm.").unwrap_or(&name);
                class = match bare.strip_prefix("amdgcn.") {
                    Some(rest) => format!("rocdl.{rest}"),
                    None => bare.to_string(),
                };
            }
        }
        if host_stack(&op) {
            found = Some((
                op.location().to_raw(),
                format!(
                    "'llvm.alloca' allocates in address space 0, as host code does; {chip}'s \
                     stack is address space 5 (compile host code with --chip=host, and \
                     kernels in a gpu.module)"
                ),
            ));
            return WalkResult::Interrupt;
        }
        match why(&class) {
            Some(what) => {
                found = Some((
                    op.location().to_raw(),
                    format!(
                        "'{name}' is {what}, which {chip} does not have (give --chip the \
                         kernel's target)"
                    ),
                ));
                WalkResult::Interrupt
            }
            None => WalkResult::Advance,
        }
    });
    let Some((location, message)) = found else {
        return Ok(());
    };
    Err(located(session, location, message))
}

/// `message` as an error at `location`, as the session's handler formats it (the bare
/// message where the handler gave nothing).
fn located(session: &Session, location: mlir_sys::MlirLocation, message: String) -> String {
    lowp_passes::ir::emit_error(location, &message);
    let located = session.take_diagnostics();
    if located.is_empty() {
        message
    } else {
        located
    }
}

/// Compile the module's GPU kernels for the chip; their PTX / ISA, each after a comment line
/// with its name.
fn gpu_kernels(
    session: &Session,
    module: &mut melior::ir::Module,
    a: &Args,
) -> Result<Vec<u8>, String> {
    let mut toolkit = None;
    let (passes, comment) = match a.chip.vendor {
        Vendor::Nvidia => (
            lowp_passes::pipelines::nvvm_kernel_passes(a.chip.cpu, a.chip.features),
            "//",
        ),
        Vendor::Amd if a.hsaco => {
            let dir = toolkit.insert(lld_toolkit()?).0.display().to_string();
            (
                lowp_passes::pipelines::rocdl_kernel_passes_to(
                    a.chip.cpu,
                    &format!("bin toolkit={dir}"),
                ),
                ";",
            )
        }
        Vendor::Amd => (lowp_passes::pipelines::rocdl_kernel_passes(a.chip.cpu), ";"),
        Vendor::Host => {
            return Err(format!(
                "the module holds GPU kernels (gpu.module): give a GPU --chip, not {}",
                a.chip
            ))
        }
    };
    if a.hsaco {
        session
            .run_pipeline(module, &passes)
            .map_err(|e| e.to_string())?;
        let mut objects = lowp_codegen::gpu_objects(module);
        if objects.len() != 1 {
            return Err(format!(
                "--emit=hsaco writes one code object; the module has {} kernel modules",
                objects.len()
            ));
        }
        return Ok(objects.remove(0).1);
    }
    if a.emit != Emit::Asm {
        return Err(
            "the module holds GPU kernels (gpu.module): they are emitted as text, \
                    --emit=ptx (NVIDIA) or --emit=asm"
                .into(),
        );
    }
    session
        .run_pipeline(module, &passes)
        .map_err(|e| e.to_string())?;
    let mut out = Vec::new();
    for (name, object) in lowp_codegen::gpu_objects(module) {
        out.extend_from_slice(format!("{comment} gpu.binary @{name}\n").as_bytes());
        out.extend_from_slice(&object);
        if !object.ends_with(b"\n") {
            out.push(b'\n');
        }
    }
    Ok(out)
}

/// A directory laid out as MLIR's ROCDL serializer expects a toolkit (`llvm/bin/ld.lld`),
/// removed when dropped.
struct Toolkit(std::path::PathBuf);

impl Drop for Toolkit {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A [`Toolkit`] pointing at LLVM 22's lld: `$LOWP_LD_LLD`, else the first of the usual
/// places.
fn lld_toolkit() -> Result<Toolkit, String> {
    let candidates = std::env::var("LOWP_LD_LLD").into_iter().chain(
        [
            "/usr/lib/llvm-22/bin/ld.lld",
            "/usr/bin/ld.lld-22",
            "/usr/bin/ld.lld",
        ]
        .map(String::from),
    );
    let lld = candidates
        .map(std::path::PathBuf::from)
        .find(|p| p.is_file())
        .ok_or(
            "ld.lld not found (install lld-22, or set LOWP_LD_LLD): --emit=hsaco links with it",
        )?;
    let dir = std::env::temp_dir().join(format!("lowp-toolkit-{}", std::process::id()));
    let bin = dir.join("llvm").join("bin");
    std::fs::create_dir_all(&bin).map_err(|e| format!("cannot create {}: {e}", bin.display()))?;
    let link = bin.join("ld.lld");
    let _ = std::fs::remove_file(&link);
    let toolkit = Toolkit(dir);
    std::os::unix::fs::symlink(&lld, &link)
        .map_err(|e| format!("cannot link {} to {}: {e}", link.display(), lld.display()))?;
    Ok(toolkit)
}

fn main() -> ExitCode {
    // (MLIR recurses once per level of the input's nesting: a deep stack.)
    lowp_jit::on_deep_stack(tool_main)
}

fn tool_main() -> ExitCode {
    lowp_jit::exit_on_llvm_fatal_error("lowp-translate");
    let raw: Vec<String> = std::env::args().skip(1).collect();
    if let Some(status) = output::help("lowp-translate", USAGE, &raw) {
        return status;
    }
    let args = match parse(raw) {
        Ok(a) => a,
        Err(msg) => {
            warn!("lowp-translate: {msg}");
            return ExitCode::from(2);
        }
    };
    let status = match run(args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(msg) => {
            warn!("lowp-translate: {msg}");
            ExitCode::from(1)
        }
    };
    output::finish("lowp-translate", status)
}
