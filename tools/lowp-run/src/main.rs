//! `lowp-run`: JIT-compile lowp IR for the CPU and run it.
//!
//! ```text
//! lowp-run FILE.mlir --entry F [--m M --n N --k K] [--check] [--bench N] [--seed S]
//! lowp-run --gen --m 1024 --n 1024 --k 1024 --lhs f4e2m1 --rhs f4e2m1 --layout mx
//!          [--rhs-layout L] [--block 32] [--packed] [--bias] [--bf16]
//!          [--dynamic m,n,k] [--check] [--bench N] [--print-mlir] [--seed S] [--opt-level L]
//! ```
//! The entry's `lowp.scaled_matmul` gets seeded random inputs per operand type (quantized by
//! lowp-formats; `--m`, `--n`, `--k` give the sizes its types leave dynamic); `--check`
//! compares the result with the oracle, `--bench` times it. An entry without a
//! scaled_matmul (quantize / dequantize pipelines, say) runs with random inputs per memref
//! argument type and prints a summary of every buffer after the call. The
//! last line is the summary: `check: PASS max_abs_err=... max_rel_err=...` and/or
//! `bench: median_ms=... gflops=...`. Exit status: 0 success, 1 check failure or a compile /
//! run error (with MLIR's located diagnostics), 2 bad command line.

use std::process::ExitCode;
use std::time::Instant;

use lowp_formats::{ScaleLayout, ScaledFormat, FORMAT_NAMES_HELP, LAYOUT_NAMES_HELP};
use lowp_jit::{Decode, Dot, DynamicSizes, GivenSizes, MatmulIr, MatmulSpec, Session};
use lowp_passes::OptionKind;
use melior::ir::operation::OperationLike;

const USAGE: &str =
    "usage: lowp-run FILE.mlir --entry F [--m M --n N --k K] [--check] [--bench N] [--seed S]
                [--opt-level L]
       lowp-run --gen --m M --n N --k K --lhs FMT --rhs FMT --layout L [--rhs-layout L]
                [--block B] [--packed] [--bias] [--bf16] [--dynamic m,n,k] [--check]
                [--bench N] [--print-mlir] [--specials] [--zero-tail T]
  FILE.mlir       the module to run (- reads stdin)
  --entry F       function to run (its lowp.scaled_matmul takes its operands from the arguments)
  --m/--n/--k     with a file: the sizes the entry's types leave dynamic ('?'); where they
                  fix a size, the flag must agree
  --gen           build a scaled_matmul from the flags instead of reading a file
  --dynamic D     with --gen: leave the sizes D (m, n, k, comma-separated) dynamic ('?') in
                  the entry's types; the call passes them (the code that runs for an M, N or
                  K known only at run time)
  --lhs/--rhs     element formats (f8e4m3, f4e2m1, f4e3m0, ...)
  --layout L      scale layout of both operands (per_tensor, per_channel, mx, mx/16, nvfp4,
                  nvfp4+global, blockwise/1x128, ...); --rhs-layout overrides B's
  --block B       block size of mx / nvfp4 layouts
  --packed        store 4-bit operands two codes per byte
  --bias, --bf16  add an N-element bias; store the result as bf16
  --check         compare with the lowp-formats oracle (exit 1 on FAIL)
  --specials      put inf / NaN codes, extreme values and a NaN block scale into the inputs
  --zero-tail T   zero the last T of K in both operands, each scale block inside them
                  E8M0's least (2^-127) or 0: K padded with zeros, as quantizers leave it
  --inputs DIR    read the operands from DIR (a.bin, sa.bin, [ga.bin,] b.bin, sb.bin,
                  [gb.bin,] [bias.bin]: raw codes, one-byte or little-endian f32 scales)
  --save-inputs DIR  write the operands used (generated or read) into DIR in that layout
  --output FILE   write the result (M x N little-endian f32) to FILE
  --bench N       time N runs, print the median and GFLOP/s
  --print-mlir    print the generated lowp module and exit
  --seed S        random input seed (default 1; not with --inputs)
  --opt-level L   LLVM optimization level 0..3 of the CPU code (default 3; 0 for
                  --emulate)
  --threads N     1: run on one thread; N > 1: N OpenMP threads (sets OMP_NUM_THREADS);
                  default: OpenMP's (OMP_NUM_THREADS, else one a CPU); threads need
                  libomp installed; CPU code only
  --lanes L       f32 lanes per vector in the CPU kernel: 8 (AVX2) or 16 (AVX-512);
                  default: the host's widest
  --dot D         inner products of the CPU kernel: f32 (the f32 kernel: FMAs, or bf16
                  pairs under --bf16-dot), i8 (x86 byte dot
                  products where both formats are small integers: FP4 E2M1, FP6 E2M3,
                  ...; pmaddubsw: AVX2, or AVX512BW with 16 lanes) or vnni (the same on
                  vpdpbusd: AVX512-VNNI); default: vnni, else i8, where the host has it
  --decode D      how the CPU kernel decodes B: bits (integer arithmetic) or f16 (codes
                  moved into f16 patterns, widened by x86 F16C / AArch64, where the format
                  allows); default: f16 where the host has it
  --bf16-dot B    on: the CPU's f32 kernel (formats the byte kernel does not take: FP8,
                  FP6 E3M2, ...) on bf16 pairs (x86 vdpbf16ps: AVX512-BF16) where the
                  formats' values and products are exact; off: f32 FMAs; default: on
                  where the host has it
  --check-bounds B  on: the entry's own memref loads, stores, views, casts and copies
                  checked at run time (one out of bounds stops the run with its
                  location, exit 1; lowp's kernels are not checked); off: unchecked;
                  default: on; CPU code only
  --form F        the CPU kernel's form: auto (the GEMV or narrow form where M is small
                  enough, else row tiles; the default) or tiles (row tiles at any M)
  --kc K, --nc N  the CPU kernel's K block (in k) and N block (in columns), rounded to
                  the kernel's units; default: lowp-to-loops' own
  --target T      cpu (the default) or cuda: the op lowered by lowp-to-nvvm for --chip, as
                  PTX, run on GPU 0 through the CUDA driver
  --chip C        NVIDIA chip the PTX targets with --target cuda (default sm_90a)
  --kernel K      with --target cuda: auto (FP8 tcgen05 on sm_100a, wgmma on sm_90a,
                  mma.sync on sm_89, where the formats allow, else their f16 patterns
                  where their fields fit f16's (tcgen05 kind::f16 on sm_100a, wgmma on
                  sm_90a, else mma.sync), else
                  their bf16 patterns (the same kernels), else the generic decode kernel; the
                  default), tcgen05, wgmma, wgmma-skinny (the wgmma
                  pipeline's swap-AB block for small M), wgmma-registers (that block for
                  M <= 16 with B fed through registers), wgmma-specialized (its 128 x 128
                  block with a producer warpgroup), wgmma-tma (the pipeline with its
                  E4M3 / E5M2 operands loaded by TMA) or mma-sync (refuse other ops), or
                  generic
  --split-k S     with --target cuda: the wgmma skinny block's split of K among a
                  cluster (auto, 1, 2, 4, 8; default auto)
  --multicast M   with --target cuda: kernel=wgmma-tma's square block sharing B's stages
                  in clusters of 2 by TMA multicast (auto, 1: off, 2: required; default
                  1)
  --fold-scales F with --target cuda: the wgmma pipeline (square and skinny blocks)
                  folding FP4 / FP6 operands' E8M0 32-block scales into their FP8
                  codes where a block's scales allow, 4-bit blocks of zeros under any
                  scale (auto; rows: B never anchored to one code for the block; off;
                  default auto)
  --translate-ahead T  with --target cuda: the wgmma barrier pipeline translating stage
                  s + 1 while stage s's instructions run (on; off, the default: unmeasured)
  --stages N      with --target cuda: the most stages of the wgmma pipeline's ring (auto:
                  square 5, warp-specialized 4, skinny 8; or 2 to 8; fewer where they do
                  not fit): room for more blocks a multiprocessor
  --block-n N     with --target cuda: the wgmma pipeline's square block's columns (128,
                  the default, or 192: m64n192k32, one register set of partial sums)
  --persistent P  with --target cuda: kernel=wgmma-tma's square block fed by TMA alone
                  as one block per SM looping over its tiles (on; off, the default:
                  unmeasured)
  --store-c S     with --target cuda: how the warp-specialized square block stores C
                  (direct, the default: each thread's st.global; tma: staged in shared
                  memory, stored by TMA while the warpgroup goes on: unmeasured)
  --translate-once T  with --target cuda: MXFP4 x MXFP4 (4-bit codes, E8M0 32-blocks)
                  on the square block as three launches: both operands translated once
                  into E5M2 workspaces (DeepSeek's scale layout), the TMA block on
                  them, the pipeline for tiles whose scales do not fold (on; off, the
                  default: unmeasured)
  --nvfp4 R       with --target cuda: the wgmma pipeline's route for NVFP4's
                  16-blocks (split: an FP8 instruction per block on split tiles; f16:
                  codes times their scales as f16 into k16 f16 instructions; auto, the
                  default: f16 where it applies, but E4M3 beside NVFP4 at M <= 64)
  --accumulate A  with --target cuda: how sm_90a's wgmma kernels sum E4M3 / E5M2 (fp8:
                  the FP8 instructions, Hopper's reduced-precision FP8 accumulator, as
                  cuBLASLt's; f32: their f16 patterns into k16 f16 instructions, exact
                  products summed in f32, half the rate; default fp8)
  --emulate       with --target cuda: run the same kernel on the CPU instead, each
                  tensor-core instruction computed as the PTX ISA defines it (with --check:
                  a GPU kernel's numerics without a GPU; LLVM -O0 unless --opt-level)
  --print-ptx     with --target cuda: print the kernel's launch and PTX, and exit (no GPU
                  needed)
  --save-kernel DIR  with --target cuda: write the compiled kernel (kernel.ptx, launch.txt)
                  and the problem (problem.txt) into DIR for lowp-gpu-run, and exit (no GPU
                  needed)";

struct Usage(String);

#[macro_use]
#[path = "../../common/output.rs"]
mod output;

#[derive(Default)]
struct Args {
    file: Option<String>,
    entry: Option<String>,
    gen: bool,
    m: Option<usize>,
    n: Option<usize>,
    k: Option<usize>,
    lhs: Option<ScaledFormat>,
    rhs: Option<ScaledFormat>,
    layout: Option<ScaleLayout>,
    rhs_layout: Option<ScaleLayout>,
    block: Option<u32>,
    packed: bool,
    bias: bool,
    bf16: bool,
    check: bool,
    bench: Option<usize>,
    print_mlir: bool,
    cuda: bool,
    chip: Option<String>,
    kernel: Option<String>,
    /// lowp-to-nvvm's tuning options (`--split-k`, `--multicast`, `--fold-scales`,
    /// `--nvfp4`, `--accumulate`).
    tuning: Vec<(&'static str, String)>,
    print_ptx: bool,
    save_kernel: Option<String>,
    /// `--emulate`: the NVIDIA kernel run on the CPU (`lowp-to-nvvm{emulate=true}`).
    emulate: bool,
    specials: bool,
    /// `--zero-tail`: the last columns of K zeros (`MatmulInputs::zero_tail`).
    zero_tail: Option<usize>,
    inputs: Option<String>,
    save_inputs: Option<String>,
    output: Option<String>,
    /// `--seed` ([`Args::seed`]).
    seed: Option<u64>,
    /// `--opt-level` ([`OPT_LEVEL`] when not given; 0 for an emulated kernel).
    opt_level: Option<usize>,
    /// `--threads` (1: one thread, else OpenMP's).
    threads: Option<usize>,
    lanes: Option<u32>,
    /// `--dot`.
    dot: Option<Dot>,
    /// `--decode`.
    decode: Option<Decode>,
    /// `--bf16-dot`.
    bf16_dot: Option<bool>,
    /// `--check-bounds` (on when not given).
    check_bounds: Option<bool>,
    /// `--form`: the row tiles only (`tiles`), else the small-M forms where M allows.
    tiles_only: bool,
    /// `--kc`, `--nc`.
    kc: Option<u32>,
    nc: Option<u32>,
    /// `--dynamic`: the sizes `--gen`'s entry leaves dynamic.
    dynamic: DynamicSizes,
    /// The op `--gen` builds, from the flags above (checked with them).
    generated: Option<MatmulSpec>,
}

/// LLVM's optimization level of the CPU code unless `--opt-level` says otherwise.
const OPT_LEVEL: usize = 3;

impl Args {
    /// The inputs' seed: `--seed`, or 1.
    fn seed(&self) -> u64 {
        self.seed.unwrap_or(1)
    }
}

/// A flag that takes no value, with what it sets.
type Switch = (&'static str, fn(&mut Args));

/// The flags that take no value (`--help` aside, which answers at once).
const SWITCHES: [Switch; 9] = [
    ("--gen", |a| a.gen = true),
    ("--packed", |a| a.packed = true),
    ("--bias", |a| a.bias = true),
    ("--bf16", |a| a.bf16 = true),
    ("--check", |a| a.check = true),
    ("--print-mlir", |a| a.print_mlir = true),
    ("--specials", |a| a.specials = true),
    ("--print-ptx", |a| a.print_ptx = true),
    ("--emulate", |a| a.emulate = true),
];

/// The most timed runs `--bench` takes (their times are kept for the median).
const MAX_RUNS: usize = 1_000_000;

fn number<T: std::str::FromStr>(flag: &str, v: Option<String>, what: &str) -> Result<T, Usage> {
    let v = v.ok_or_else(|| Usage(format!("{flag} needs a value ({what})")))?;
    v.parse()
        .map_err(|_| Usage(format!("{flag}: '{v}' is not {what}")))
}

/// A flag's value that names something: a path, a function (not empty: that would be the
/// current directory, or nothing).
fn named(flag: &str, v: Option<String>, what: &str) -> Result<String, Usage> {
    v.filter(|p| !p.is_empty())
        .ok_or_else(|| Usage(format!("{flag} needs {what}")))
}

/// A flag's `on` or `off`.
fn on_off(flag: &str, v: Option<String>) -> Result<bool, Usage> {
    match named(flag, v, "on or off")?.as_str() {
        "on" => Ok(true),
        "off" => Ok(false),
        d => Err(Usage(format!("{flag}: '{d}' is not on or off"))),
    }
}

/// A size of the generated op: a positive integer an MLIR dimension holds (below 2^63).
fn size(flag: &str, v: Option<String>) -> Result<usize, Usage> {
    let n: usize = number(flag, v, "a positive integer")?;
    if n == 0 {
        return Err(Usage(format!("{flag}: sizes must be at least 1")));
    }
    if n > i64::MAX as usize {
        return Err(Usage(format!(
            "{flag}: {n} is beyond an MLIR dimension's 2^63 - 1"
        )));
    }
    Ok(n)
}

fn parse_args(raw: Vec<String>) -> Result<Args, Usage> {
    let mut a = Args::default();
    let mut it = raw.into_iter();
    // Each flag once: a second value would silently replace the first.
    let mut seen = std::collections::HashSet::new();
    // A layout that names its block (`mx/16`), which `--block` would override.
    let mut named_block = None;
    while let Some(arg) = it.next() {
        let (flag, inline) = match arg.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f.to_string(), Some(v.to_string())),
            _ => (arg.clone(), None),
        };
        if flag.starts_with('-') && flag != "-" && !seen.insert(flag.clone()) {
            return Err(Usage(format!("{flag} is given twice")));
        }
        let mut value = || inline.clone().or_else(|| it.next());
        let switch = SWITCHES.iter().find(|(f, _)| *f == flag);
        if inline.is_some() && (switch.is_some() || flag == "--help") {
            return Err(Usage(format!("{flag} takes no value ('{arg}')")));
        }
        if let Some((_, set)) = switch {
            set(&mut a);
            continue;
        }
        match flag.as_str() {
            "--entry" => a.entry = Some(named(&flag, value(), "a function name")?),
            "--m" => a.m = Some(size(&flag, value())?),
            "--n" => a.n = Some(size(&flag, value())?),
            "--k" => a.k = Some(size(&flag, value())?),
            "--dynamic" => {
                let v = named(
                    &flag,
                    value(),
                    "sizes to leave dynamic: m, n, k (comma-separated)",
                )?;
                for part in v.split(',') {
                    let slot = match part.trim() {
                        "m" | "M" => &mut a.dynamic.m,
                        "n" | "N" => &mut a.dynamic.n,
                        "k" | "K" => &mut a.dynamic.k,
                        other => {
                            return Err(Usage(format!(
                                "--dynamic: '{other}' is not m, n or k (give them \
                                 comma-separated: --dynamic m,k)"
                            )))
                        }
                    };
                    if *slot {
                        return Err(Usage(format!("--dynamic: '{part}' is named twice")));
                    }
                    *slot = true;
                }
            }
            "--lhs" | "--rhs" => {
                let v = value()
                    .ok_or_else(|| Usage(format!("{flag} needs a format: {FORMAT_NAMES_HELP}")))?;
                let f: ScaledFormat = v.parse().map_err(|e| Usage(format!("{flag}: {e}")))?;
                if flag == "--lhs" {
                    a.lhs = Some(f)
                } else {
                    a.rhs = Some(f)
                }
            }
            "--layout" | "--rhs-layout" => {
                let v = value()
                    .ok_or_else(|| Usage(format!("{flag} needs a layout: {LAYOUT_NAMES_HELP}")))?;
                let l: ScaleLayout = v.parse().map_err(|e| Usage(format!("{flag}: {e}")))?;
                if matches!(l, ScaleLayout::Mx { .. } | ScaleLayout::Nvfp4 { .. })
                    && v.contains('/')
                {
                    named_block = Some(format!("{flag} {v}"));
                }
                if flag == "--layout" {
                    a.layout = Some(l)
                } else {
                    a.rhs_layout = Some(l)
                }
            }
            "--block" => {
                let what = format!("a block size from 1 to {}", lowp_formats::MAX_BLOCK);
                let block: u32 = number(&flag, value(), &what)?;
                if !(1..=lowp_formats::MAX_BLOCK).contains(&block) {
                    return Err(Usage(format!("--block: '{block}' is not {what}")));
                }
                a.block = Some(block);
            }
            "--bench" => a.bench = Some(number(&flag, value(), "a number of runs")?),
            "--inputs" => a.inputs = Some(named(&flag, value(), "a directory")?),
            "--save-inputs" => a.save_inputs = Some(named(&flag, value(), "a directory")?),
            "--output" => {
                let file = named(&flag, value(), "a file")?;
                if file == "-" {
                    return Err(Usage(
                        "--output -: the report goes to stdout; the result needs a file".into(),
                    ));
                }
                a.output = Some(file)
            }
            "--seed" => {
                a.seed = Some(number(&flag, value(), "an integer")?);
            }
            "--zero-tail" => a.zero_tail = Some(size(&flag, value())?),
            "--lanes" => {
                let l: u32 = number(&flag, value(), "8 or 16")?;
                if l != 8 && l != 16 {
                    return Err(Usage(format!("--lanes: '{l}' is not 8 or 16")));
                }
                a.lanes = Some(l);
            }
            "--dot" => {
                let d = named(&flag, value(), "f32, i8 or vnni")?;
                a.dot = Some(
                    Dot::from_name(&d)
                        .ok_or_else(|| Usage(format!("--dot: '{d}' is not f32, i8 or vnni")))?,
                );
            }
            "--form" => {
                let d = named(&flag, value(), "auto or tiles")?;
                a.tiles_only = match d.as_str() {
                    "auto" => false,
                    "tiles" => true,
                    _ => return Err(Usage(format!("--form: '{d}' is not auto or tiles"))),
                };
            }
            "--kc" | "--nc" => {
                // lowp-to-loops' own bounds of the option.
                let name = &flag[2..];
                let (min, max) = lowp_passes::to_loops::PASS
                    .options
                    .iter()
                    .find_map(|o| match o.kind {
                        OptionKind::UInt { min, max } if o.name == name => Some((min, max)),
                        _ => None,
                    })
                    .expect("lowp-to-loops has kc and nc");
                let what = format!("a block size from {min} to {max}");
                let v: u32 = number(&flag, value(), &what)?;
                if !(min..=max).contains(&u64::from(v)) {
                    return Err(Usage(format!("{flag}: '{v}' is not {what}")));
                }
                *if flag == "--kc" { &mut a.kc } else { &mut a.nc } = Some(v);
            }
            "--check-bounds" => a.check_bounds = Some(on_off(&flag, value())?),
            "--bf16-dot" => a.bf16_dot = Some(on_off(&flag, value())?),
            "--decode" => {
                let d = named(&flag, value(), "bits or f16")?;
                a.decode = Some(
                    Decode::from_name(&d)
                        .ok_or_else(|| Usage(format!("--decode: '{d}' is not bits or f16")))?,
                );
            }
            "--threads" => {
                let t: usize = number(&flag, value(), "a positive integer")?;
                if t == 0 {
                    return Err(Usage("--threads: must be at least 1".into()));
                }
                let limit = lowp_jit::openmp_thread_limit();
                if t as u64 > limit {
                    return Err(Usage(format!(
                        "--threads: {t} is more than this machine's limit of {limit} \
                         (16 a CPU, at least 256)"
                    )));
                }
                a.threads = Some(t);
            }
            "--opt-level" => {
                let l: usize = number(&flag, value(), "0, 1, 2 or 3")?;
                if l > 3 {
                    return Err(Usage(format!("--opt-level: '{l}' is not 0, 1, 2 or 3")));
                }
                a.opt_level = Some(l);
            }
            "--target" => {
                let t =
                    value().ok_or_else(|| Usage("--target needs a value (cpu or cuda)".into()))?;
                a.cuda = match t.as_str() {
                    "cpu" => false,
                    "cuda" => true,
                    _ => {
                        return Err(Usage(format!(
                            "--target: '{t}' is not a target; expected cpu or cuda"
                        )))
                    }
                };
            }
            "--chip" => {
                let c = value().ok_or_else(|| Usage("--chip needs a value (sm_90a)".into()))?;
                // --target cuda runs NVIDIA chips only: the others are not offered.
                let nvidia: Vec<&str> = lowp_codegen::CHIPS
                    .iter()
                    .filter(|c| c.vendor == lowp_codegen::Vendor::Nvidia)
                    .map(|c| c.name)
                    .collect();
                if !nvidia.contains(&c.as_str()) {
                    return Err(Usage(format!(
                        "--chip: '{c}' is not an NVIDIA chip lowp-run targets; expected {}",
                        nvidia.join(", ")
                    )));
                }
                a.chip = Some(c);
            }
            "--kernel" => {
                let k = value().ok_or_else(|| Usage("--kernel needs a value (auto)".into()))?;
                if !lowp_jit::gpu::KERNELS.contains(&k.as_str()) {
                    return Err(Usage(format!(
                        "--kernel: '{k}' is not a kernel; expected one of {}",
                        lowp_jit::gpu::KERNELS.join(", ")
                    )));
                }
                a.kernel = Some(k);
            }
            f if lowp_jit::gpu::tuning_option(f).is_some() => {
                let v = value().ok_or_else(|| Usage(format!("{flag} needs a value (auto)")))?;
                let name = lowp_passes::registry::check_option("lowp-to-nvvm", &flag[2..], &v)
                    .map_err(|why| Usage(format!("{flag}: {why}")))?;
                a.tuning.push((name, v));
            }
            "--save-kernel" => a.save_kernel = Some(named(&flag, value(), "a directory")?),
            f if f.starts_with('-') && f != "-" => {
                return Err(Usage(format!("unknown option '{f}'\n{USAGE}")))
            }
            _ => {
                if a.file.replace(arg.clone()).is_some() {
                    return Err(Usage(format!("more than one input file ('{arg}')")));
                }
            }
        }
    }
    let nvidia = a.chip.is_some() || a.kernel.is_some() || !a.tuning.is_empty() || a.emulate;
    if (nvidia || a.print_ptx || a.save_kernel.is_some()) && !a.cuda {
        return Err(Usage(format!(
            "--chip, --kernel, {}, --emulate, --print-ptx and --save-kernel go with --target \
             cuda",
            lowp_jit::gpu::tuning_flags().join(", ")
        )));
    }
    if a.cuda {
        // The kernel is compiled to PTX and run on the GPU; emulated, it runs on the CPU
        // threads at the LLVM level asked for, but it holds no lowp op left for the CPU
        // lowering, whose vectors --lanes sets.
        let cpu = given(&[
            ("--lanes", a.lanes.is_some()),
            ("--dot", a.dot.is_some()),
            ("--decode", a.decode.is_some()),
            ("--bf16-dot", a.bf16_dot.is_some()),
            ("--check-bounds", a.check_bounds.is_some()),
            ("--form", a.tiles_only),
            ("--kc", a.kc.is_some()),
            ("--nc", a.nc.is_some()),
            ("--threads", a.threads.is_some() && !a.emulate),
            ("--opt-level", a.opt_level.is_some() && !a.emulate),
        ]);
        if !cpu.is_empty() {
            return Err(Usage(format!(
                "{} {} the CPU code; --target cuda runs a PTX kernel{} (drop {})",
                cpu.join(", "),
                agree(&cpu, "shapes", "shape"),
                if a.lanes.is_some() && a.emulate {
                    ", emulated with no lowp op left for the CPU lowering's vectors"
                } else {
                    ""
                },
                agree(&cpu, "it", "them"),
            )));
        }
    }
    if a.file.is_some() && a.gen {
        return Err(Usage(
            "--gen builds its own module; drop the input file".into(),
        ));
    }
    if a.print_mlir {
        // Prints the module and exits: nothing compiles or runs.
        let more = given(
            &[
                run_flags(&a).as_slice(),
                &[
                    ("--print-ptx", a.print_ptx),
                    ("--save-kernel", a.save_kernel.is_some()),
                    ("--emulate", a.emulate),
                    ("--seed", a.seed.is_some()),
                    ("--opt-level", a.opt_level.is_some()),
                    ("--threads", a.threads.is_some()),
                    ("--lanes", a.lanes.is_some()),
                    ("--dot", a.dot.is_some()),
                    ("--decode", a.decode.is_some()),
                    ("--bf16-dot", a.bf16_dot.is_some()),
                    ("--check-bounds", a.check_bounds.is_some()),
                    ("--form", a.tiles_only),
                    ("--kc", a.kc.is_some()),
                    ("--nc", a.nc.is_some()),
                ],
            ]
            .concat(),
        );
        if !more.is_empty() {
            return Err(Usage(format!(
                "--print-mlir prints the module and exits; {} {} more (drop one or the other)",
                more.join(", "),
                agree(&more, "asks for", "ask for"),
            )));
        }
    }
    if let (Some(b), Some(named)) = (a.block, &named_block) {
        return Err(Usage(format!(
            "--block {b} and {named} both set a block (give one)"
        )));
    }
    if a.block.is_some()
        && ![a.layout, a.rhs_layout]
            .iter()
            .flatten()
            .any(|l| matches!(l, ScaleLayout::Mx { .. } | ScaleLayout::Nvfp4 { .. }))
    {
        return Err(Usage(
            "--block sets the block of mx / nvfp4 layouts; neither --layout nor \
             --rhs-layout is one"
                .into(),
        ));
    }
    if a.file.is_some() && !a.gen {
        // The op of a file's entry has its own shape and formats.
        // (--m, --n, --k give the sizes its types leave dynamic.)
        let generated = given(&[
            ("--dynamic", a.dynamic != DynamicSizes::default()),
            ("--lhs", a.lhs.is_some()),
            ("--rhs", a.rhs.is_some()),
            ("--layout", a.layout.is_some()),
            ("--rhs-layout", a.rhs_layout.is_some()),
            ("--block", a.block.is_some()),
            ("--packed", a.packed),
            ("--bias", a.bias),
            ("--bf16", a.bf16),
        ]);
        if !generated.is_empty() {
            return Err(Usage(format!(
                "{} {} the op --gen builds; an input file's entry has its own \
                 (drop {}, or the file for --gen)",
                generated.join(", "),
                agree(&generated, "describes", "describe"),
                agree(&generated, "it", "them"),
            )));
        }
    }
    if a.print_ptx || a.save_kernel.is_some() {
        // Compiling only: nothing runs.
        let running = given(
            &[
                run_flags(&a).as_slice(),
                &[("--emulate", a.emulate), ("--seed", a.seed.is_some())],
            ]
            .concat(),
        );
        if !running.is_empty() {
            return Err(Usage(format!(
                "--print-ptx and --save-kernel only compile; {} {} a run (drop one or \
                 the other; lowp-gpu-run checks and times a saved kernel)",
                running.join(", "),
                agree(&running, "needs", "need"),
            )));
        }
    }
    if a.seed.is_some() && a.inputs.is_some() {
        return Err(Usage(
            "--seed draws random inputs; --inputs reads them from files (drop one)".into(),
        ));
    }
    if a.emulate && a.bench.is_some() {
        return Err(Usage(
            "--bench times the GPU; an emulated kernel's CPU time says nothing of it".into(),
        ));
    }
    if a.bench.is_some_and(|n| n == 0 || n > MAX_RUNS) {
        return Err(Usage(format!(
            "--bench: the number of runs must be 1 to {MAX_RUNS}"
        )));
    }
    // What the run needs that the command line lacks is a usage error too (exit 2).
    if a.gen {
        a.generated = Some(gen_spec(&a)?);
    } else if a.file.is_none() {
        return Err(Usage(format!("no input file (or --gen)\n{USAGE}")));
    } else if a.entry.is_none() {
        return Err(Usage("--entry F is required with an input file".into()));
    }
    Ok(a)
}

/// The flags that ask for a run (and whether each was given).
fn run_flags(a: &Args) -> [(&'static str, bool); 7] {
    [
        ("--check", a.check),
        ("--bench", a.bench.is_some()),
        ("--inputs", a.inputs.is_some()),
        ("--save-inputs", a.save_inputs.is_some()),
        ("--output", a.output.is_some()),
        ("--specials", a.specials),
        ("--zero-tail", a.zero_tail.is_some()),
    ]
}

/// `one` or `many`, the word agreeing with the number of `flags` named.
fn agree<'w>(flags: &[&str], one: &'w str, many: &'w str) -> &'w str {
    if flags.len() == 1 {
        one
    } else {
        many
    }
}

/// The flags of `flags` (flag, whether given) that were given.
fn given(flags: &[(&'static str, bool)]) -> Vec<&'static str> {
    flags
        .iter()
        .filter_map(|&(flag, given)| given.then_some(flag))
        .collect()
}

fn with_block(l: ScaleLayout, block: Option<u32>) -> ScaleLayout {
    match (l, block) {
        (ScaleLayout::Mx { .. }, Some(b)) => ScaleLayout::Mx { block: b },
        (ScaleLayout::Nvfp4 { global, .. }, Some(b)) => ScaleLayout::Nvfp4 { block: b, global },
        (l, _) => l,
    }
}

fn gen_spec(a: &Args) -> Result<MatmulSpec, Usage> {
    let need = |v: Option<usize>, f: &str| v.ok_or_else(|| Usage(format!("--gen needs {f}")));
    let lhs = a
        .lhs
        .ok_or_else(|| Usage("--gen needs --lhs FORMAT".into()))?;
    let rhs = a
        .rhs
        .ok_or_else(|| Usage("--gen needs --rhs FORMAT".into()))?;
    let layout = with_block(
        a.layout
            .ok_or_else(|| Usage("--gen needs --layout L".into()))?,
        a.block,
    );
    let rhs_layout = with_block(a.rhs_layout.unwrap_or(layout), a.block);
    let spec = MatmulSpec {
        m: need(a.m, "--m M")?,
        n: need(a.n, "--n N")?,
        k: need(a.k, "--k K")?,
        lhs,
        rhs,
        lhs_layout: layout,
        rhs_layout,
        lhs_packed: a.packed && lhs.bit_width() == 4,
        rhs_packed: a.packed && rhs.bit_width() == 4,
        bias: a.bias,
        bf16: a.bf16,
    };
    spec.validate_problem().map_err(Usage)?;
    if a.packed && !spec.lhs_packed && !spec.rhs_packed {
        return Err(Usage(format!(
            "--packed needs a 4-bit format, found {lhs} and {rhs}"
        )));
    }
    Ok(spec)
}

fn describe(spec: &MatmulSpec, target: &str) -> String {
    let side = |f: ScaledFormat, l: ScaleLayout, packed: bool| {
        format!("{f}[{l}{}]", if packed { ",packed" } else { "" })
    };
    format!(
        "scaled_matmul {}x{}x{} {} x {} -> {}{} ({})",
        spec.m,
        spec.n,
        spec.k,
        side(spec.lhs, spec.lhs_layout, spec.lhs_packed),
        side(spec.rhs, spec.rhs_layout, spec.rhs_packed),
        if spec.bf16 { "bf16" } else { "f32" },
        if spec.bias { " +bias" } else { "" },
        target,
    )
}

/// Runs the tool; `Ok(false)` is a failed check.
fn run(a: Args) -> Result<bool, String> {
    let mut session = Session::new();
    if let Some(n) = a.threads.filter(|&n| n > 1) {
        // Read by the OpenMP runtime when it starts (the JIT loads it later).
        std::env::set_var("OMP_NUM_THREADS", n.to_string());
    }
    let threaded = session.set_threads(a.threads != Some(1));
    if let Some(l) = a.lanes {
        session.set_lanes(l);
    }
    session.set_dot(a.dot);
    session.set_decode(a.decode);
    session.set_bf16_dot(a.bf16_dot);
    session.set_check_bounds(a.check_bounds != Some(false));
    if a.tiles_only {
        session.set_small_m_forms(false, false);
    }
    session.set_blocks(a.kc, a.nc);
    let entry;
    let (spec, roles, mut module) = if a.gen {
        let spec = a
            .generated
            .clone()
            .expect("--gen's op, built with the flags");
        entry = a.entry.clone().unwrap_or_else(|| "scaled_matmul".into());
        let module = spec.build_module_dynamic(session.context(), &entry, a.dynamic);
        if !module.as_operation().verify() {
            return Err(format!(
                "generated module does not verify:\n{}",
                session.take_diagnostics()
            ));
        }
        let roles = spec.roles();
        (spec, roles, module)
    } else {
        let file = a
            .file
            .clone()
            .ok_or_else(|| format!("no input file (or --gen)\n{USAGE}"))?;
        entry = a
            .entry
            .clone()
            .ok_or("--entry F is required with an input file")?;
        // (`-` is stdin, which MLIR's parser reads.)
        if file != "-" {
            if let Err(e) = std::fs::metadata(&file) {
                return Err(format!("cannot read '{file}': {e}"));
            }
        }
        let module = session.parse_file(&file).map_err(|e| e.to_string())?;
        let sizes = GivenSizes {
            m: a.m,
            n: a.n,
            k: a.k,
        };
        match MatmulSpec::from_entry_with(&module, &entry, sizes) {
            Ok((spec, roles)) => {
                spec.validate_problem()?;
                (spec, roles, module)
            }
            // Entries without a scaled_matmul run with random inputs per operand type;
            // checking and input files need the matmul's structure.
            Err(why)
                if a.check
                    || sizes != GivenSizes::default()
                    || a.inputs.is_some()
                    || a.save_inputs.is_some()
                    || a.specials
                    || a.zero_tail.is_some()
                    || a.output.is_some() =>
            {
                return Err(why)
            }
            Err(why) => return run_generic(&session, module, &entry, &a, threaded, &why),
        }
    };
    if a.print_mlir {
        say!("{}", module.as_operation());
        return Ok(true);
    }
    if a.cuda {
        let target = if a.emulate {
            "cuda, emulated on the cpu"
        } else {
            "cuda"
        };
        say!("lowp-run: {}", describe(&spec, target));
    } else {
        // The kernel these formats, layouts and M take, not the one asked for: the byte
        // kernel only where they are small integers, B through f16 only where its format
        // embeds, the form (GEMV, narrow, row tiles) by M.
        let kernel = lowp_passes::to_loops::kernel_taken(
            (spec.lhs, spec.rhs),
            (spec.lhs_layout, spec.rhs_layout),
            Some(spec.m as i64),
            &session.to_loops_options(),
        );
        say!(
            "lowp-run: {} {} lanes={} {kernel}",
            describe(&spec, "cpu"),
            if threaded {
                "threads=openmp"
            } else {
                "threads=1"
            },
            session.lanes(),
        );
    }
    if a.cuda && (a.print_ptx || a.save_kernel.is_some()) {
        // Compiling only: no inputs, no GPU, and no memory for a run is needed.
        let kernel = compile_cuda(&session, &mut module, &entry, &a)?;
        if a.print_ptx {
            say!("{}", kernel.ptx);
        }
        if let Some(dir) = &a.save_kernel {
            save_bundle(std::path::Path::new(dir), &kernel, &spec, &roles)?;
            say!("saved: {dir} (kernel.ptx, launch.txt, problem.txt)");
        }
        return Ok(true);
    }
    spec.check_memory()?;
    // (Before the inputs are made: 8192^3's take seconds.)
    if let Some(tail) = a.zero_tail.filter(|&t| t > spec.k) {
        return Err(format!("--zero-tail {tail}: past K = {}", spec.k));
    }
    let mut inputs = match &a.inputs {
        Some(dir) => lowp_jit::MatmulInputs::load(&spec, std::path::Path::new(dir))?,
        None => spec.inputs(a.seed()),
    };
    if a.specials {
        inputs.inject_specials();
    }
    if let Some(tail) = a.zero_tail {
        inputs.zero_tail(tail);
    }
    if let Some(dir) = &a.save_inputs {
        inputs.save(std::path::Path::new(dir))?;
    }
    if a.cuda && !a.emulate {
        let (got, bench, accumulation) =
            run_cuda(&session, &mut module, &entry, &spec, &roles, &inputs, &a)?;
        return report(&a, &spec, &inputs, &got, bench, accumulation);
    }
    if a.emulate {
        // The kernel lowp-to-nvvm makes for the chip, run on the CPU: the same blocks,
        // warps and shared memory, each tensor-core instruction computed as the PTX ISA
        // defines it (what checks a GPU kernel's numerics on a machine without one).
        let mut options: Vec<(&str, &str)> =
            a.tuning.iter().map(|(n, v)| (*n, v.as_str())).collect();
        options.push(("emulate", "true"));
        let pre = format!(
            "builtin.module(func.func({}))",
            lowp_passes::pipelines::nvvm_pass(
                a.chip.as_deref().unwrap_or("sm_90a"),
                a.kernel.as_deref().unwrap_or("auto"),
                &options
            )
        );
        session
            .run_pipeline(&mut module, &pre)
            .map_err(|e| e.to_string())?;
        for line in session.take_diagnostics().lines() {
            warn!("lowp-run: {line}");
        }
    }
    // An emulated kernel's logic is what is checked, not the host code LLVM makes of it;
    // its unrolled blocks take LLVM -O2 minutes, -O0 seconds.
    let opt_level = a.opt_level.unwrap_or(if a.emulate { 0 } else { OPT_LEVEL });
    let t0 = Instant::now();
    session.lower_cpu(&mut module).map_err(|e| e.to_string())?;
    let t1 = Instant::now();
    let jit = session.jit(&module, opt_level).map_err(|e| e.to_string())?;
    let t2 = Instant::now();
    say!(
        "compile: pipeline_ms={:.1} jit_ms={:.1}",
        (t1 - t0).as_secs_f64() * 1e3,
        (t2 - t1).as_secs_f64() * 1e3
    );
    let got = spec
        .run(&jit, &entry, &roles, &inputs)
        .map_err(|e| e.to_string())?;
    let bench = match a.bench {
        Some(runs) => {
            let b = spec
                .bench(&jit, &entry, &roles, &inputs, runs)
                .map_err(|e| e.to_string())?;
            Some((b.median_ms, b.gflops, runs))
        }
        None => None,
    };
    report(
        &a,
        &spec,
        &inputs,
        &got,
        bench,
        lowp_formats::Accumulation::F32,
    )
}

/// Write / check / print a result; the last line is the summary. `bench` is (median ms,
/// GFLOP/s, runs); `accumulation`, how the kernel formed its sums (the check's bound).
fn report(
    a: &Args,
    spec: &MatmulSpec,
    inputs: &lowp_jit::MatmulInputs,
    got: &[f32],
    bench: Option<(f64, f64, usize)>,
    accumulation: lowp_formats::Accumulation,
) -> Result<bool, String> {
    if let Some(path) = &a.output {
        let bytes: Vec<u8> = got.iter().flat_map(|x| x.to_le_bytes()).collect();
        std::fs::write(path, bytes).map_err(|e| format!("cannot write '{path}': {e}"))?;
    }
    let mut passed = true;
    if a.check {
        let r = spec.check_accumulated(inputs, got, accumulation);
        passed = r.passed;
        say!(
            "check: {} max_abs_err={:.3e} max_rel_err={:.3e} bound_ratio={:.3} nonfinite_mismatches={}{}",
            if r.passed { "PASS" } else { "FAIL" },
            r.stats.max_abs_err,
            r.stats.max_rel_err,
            r.stats.max_bound_ratio,
            r.stats.nonfinite_mismatches,
            accumulation.check_suffix()
        );
    }
    if let Some((median_ms, gflops, runs)) = bench {
        say!("bench: median_ms={median_ms:.4} gflops={gflops:.2} runs={runs}");
    }
    if !a.check && bench.is_none() {
        let shown: Vec<String> = got.iter().take(4).map(|v| format!("{v}")).collect();
        say!("result: out[0..{}] = [{}]", shown.len(), shown.join(", "));
    }
    Ok(passed)
}

/// Compile the entry to an NVIDIA kernel (lowp-to-nvvm) and run it on GPU 0: the result
/// and, with --bench, (median ms, GFLOP/s, runs) from CUDA events; and how the kernel
/// forms its sums.
#[allow(clippy::type_complexity)]
fn run_cuda(
    session: &Session,
    module: &mut melior::ir::Module,
    entry: &str,
    spec: &MatmulSpec,
    roles: &[lowp_jit::Role],
    inputs: &lowp_jit::MatmulInputs,
    a: &Args,
) -> Result<
    (
        Vec<f32>,
        Option<(f64, f64, usize)>,
        lowp_formats::Accumulation,
    ),
    String,
> {
    let kernel = compile_cuda(session, module, entry, a)?;
    let gpu = lowp_runtime::Gpu::open(0).map_err(|e| e.to_string())?;
    say!("device: {}", gpu.describe().map_err(|e| e.to_string())?);
    let timing = a.bench.map(lowp_runtime::Timing::warm);
    let r = lowp_runtime::matmul::run(&gpu, &kernel, spec, roles, inputs, timing)
        .map_err(|e| e.to_string())?;
    let bench = r
        .median_ms
        .map(|(ms, runs)| (ms, spec.flops() / (ms * 1e6), runs));
    Ok((r.result, bench, kernel.accumulation()))
}

/// Compile the entry to an NVIDIA kernel (lowp-to-nvvm), with the lowering's remarks and
/// a line saying what it is.
fn compile_cuda(
    session: &Session,
    module: &mut melior::ir::Module,
    entry: &str,
    a: &Args,
) -> Result<lowp_jit::gpu::GpuKernel, String> {
    let chip = a.chip.as_deref().unwrap_or("sm_90a");
    let choice = a.kernel.as_deref().unwrap_or("auto");
    let t0 = Instant::now();
    let kernel = session
        .compile_nvvm_with(
            module,
            entry,
            chip,
            choice,
            &a.tuning
                .iter()
                .map(|(n, v)| (*n, v.as_str()))
                .collect::<Vec<_>>(),
        )
        .map_err(|e| e.to_string())?;
    // The lowering's remarks (why an op got the generic kernel), one line each.
    for line in session.take_diagnostics().lines() {
        warn!("lowp-run: {line}");
    }
    let cluster = match kernel.cluster {
        (1, 1, 1) => String::new(),
        c => format!(" cluster={c:?}"),
    };
    say!(
        "compile: target=cuda chip={chip} kernel={} grid={:?} block={:?}{cluster} shared={} \
         params={} ms={:.1}",
        kernel.name,
        kernel.grid,
        kernel.block,
        kernel.shared_bytes,
        kernel.flat_param_count(),
        t0.elapsed().as_secs_f64() * 1e3
    );
    // The later launches of one op (translate-once), each on a line.
    for next in &kernel.then {
        say!(
            "compile: then kernel={} grid={:?} block={:?} shared={} params={}",
            next.name,
            next.grid,
            next.block,
            next.shared_bytes,
            next.flat_param_count()
        );
    }
    if !kernel.workspaces.is_empty() {
        let bytes: u64 = kernel.workspaces.iter().map(|w| w.bytes).sum();
        say!(
            "compile: workspaces={} bytes={bytes}",
            kernel.workspaces.len()
        );
    }
    Ok(kernel)
}

/// A compiled kernel and its problem, as `lowp-gpu-run` reads them.
fn save_bundle(
    dir: &std::path::Path,
    kernel: &lowp_jit::gpu::GpuKernel,
    spec: &MatmulSpec,
    roles: &[lowp_jit::Role],
) -> Result<(), String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create '{}': {e}", dir.display()))?;
    let roles: Vec<&str> = roles.iter().map(|r| r.name()).collect();
    let problem = format!("{}roles = {}\n", spec.to_manifest(), roles.join(" "));
    for (name, text) in [
        ("kernel.ptx", kernel.ptx.as_str()),
        // The problem the kernel was compiled for, which lowp-gpu-run holds problem.txt to.
        (
            "launch.txt",
            &format!("{}problem = {}\n", kernel.to_manifest(), spec.one_line()),
        ),
        ("problem.txt", &problem),
    ] {
        let path = dir.join(name);
        std::fs::write(&path, text)
            .map_err(|e| format!("cannot write '{}': {e}", path.display()))?;
    }
    Ok(())
}

/// Run any entry with seeded random inputs per operand type and summarize every buffer
/// (`not_matmul`: why the entry is not one scaled_matmul of its arguments, the refusal of
/// a GPU run).
fn run_generic(
    session: &Session,
    mut module: melior::ir::Module,
    entry: &str,
    a: &Args,
    threaded: bool,
    not_matmul: &str,
) -> Result<bool, String> {
    use lowp_jit::generic;
    if a.cuda {
        return Err(not_matmul.to_string());
    }
    let sig = generic::entry_signature(&module, entry)?;
    let need = generic::bytes_needed(&sig);
    let available = lowp_jit::matmul::available_memory();
    if need > available {
        return Err(format!(
            "@{entry}'s arguments take {:.1} GiB; this machine has {:.1} GiB available",
            need as f64 / (1u64 << 30) as f64,
            available as f64 / (1u64 << 30) as f64
        ));
    }
    if a.print_mlir {
        say!("{}", module.as_operation());
        return Ok(true);
    }
    say!(
        "lowp-run: @{entry} with {} memref arguments, random inputs (seed {}) (cpu) {} lanes={} \
         dot={} decode={}",
        sig.len(),
        a.seed(),
        if threaded {
            "threads=openmp"
        } else {
            "threads=1"
        },
        session.lanes(),
        session.dot().name(),
        session.decode().name()
    );
    let t0 = Instant::now();
    session.lower_cpu(&mut module).map_err(|e| e.to_string())?;
    let t1 = Instant::now();
    let jit = session
        .jit(&module, a.opt_level.unwrap_or(OPT_LEVEL))
        .map_err(|e| e.to_string())?;
    say!(
        "compile: pipeline_ms={:.1} jit_ms={:.1}",
        (t1 - t0).as_secs_f64() * 1e3,
        t1.elapsed().as_secs_f64() * 1e3
    );
    let mut buffers = generic::random_buffers(&sig, a.seed());
    generic::call(&jit, entry, &sig, &mut buffers).map_err(|e| e.to_string())?;
    for (i, (arg, buf)) in sig.iter().zip(&buffers).enumerate() {
        say!("arg{i}: {}", generic::summarize(arg, buf));
    }
    if let Some(runs) = a.bench {
        let mut times = Vec::with_capacity(runs);
        for _ in 0..runs {
            let t = Instant::now();
            generic::call(&jit, entry, &sig, &mut buffers).map_err(|e| e.to_string())?;
            times.push(t.elapsed().as_secs_f64());
        }
        times.sort_by(f64::total_cmp);
        say!(
            "bench: median_ms={:.3} runs={runs}",
            times[times.len() / 2] * 1e3
        );
    }
    Ok(true)
}

fn main() -> ExitCode {
    // (MLIR recurses once per level of the input's nesting: a deep stack.)
    lowp_jit::on_deep_stack(tool_main)
}

fn tool_main() -> ExitCode {
    lowp_jit::exit_on_llvm_fatal_error("lowp-run");
    let raw: Vec<String> = std::env::args().skip(1).collect();
    if let Some(status) = output::help("lowp-run", USAGE, &raw) {
        return status;
    }
    let args = match parse_args(raw) {
        Ok(a) => a,
        Err(Usage(msg)) => {
            warn!("lowp-run: {msg}");
            return ExitCode::from(2);
        }
    };
    let status = match run(args) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(msg) => {
            warn!("lowp-run: {msg}");
            ExitCode::from(1)
        }
    };
    output::finish("lowp-run", status)
}
