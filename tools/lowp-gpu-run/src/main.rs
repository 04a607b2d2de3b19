//! `lowp-gpu-run`: run kernels compiled on another machine on an NVIDIA GPU.
//!
//! ```text
//! lowp-gpu-run DIR... [--seed S[,S..]] [--specials] [--zero-tail T] [--check] [--bench N]
//!              [--cold] [--dump OUT]
//! ```
//! Each DIR is what `lowp-run --target cuda --save-kernel DIR` wrote: `kernel.ptx`,
//! `launch.txt` (grid, block, parameters) and `problem.txt` (the scaled-matmul problem and
//! the entry's argument roles). The runner generates the problem's seeded inputs with
//! `lowp-formats` (the same inputs `lowp-run --seed S` makes), runs the kernel, checks the
//! result against the f64 oracle with `--check`, times `N` launches with CUDA events with
//! `--bench` (`--cold`: each timed launch after the L2 is flushed, outside the timed events;
//! consecutive bundles of one problem share its inputs), and prints one line per kernel
//! and result, as `lowp-run` does:
//! `check: PASS max_abs_err=...` and `bench: median_ms=... gflops=... gbps=...` (GB/s of
//! the problem's fewest bytes: each argument read once, the result written once). Several
//! seeds run each kernel on each seed's inputs in one process (one check line each, ending
//! in `seed=S`; timing and dumps on the first). `--specials` puts `lowp-run --specials`'s
//! values into every seed's inputs (infinities and NaN codes in both operands, each
//! format's largest magnitudes, a NaN block scale); `--zero-tail T`, `lowp-run
//! --zero-tail`'s last T of K zeros (K padded, each scale block inside E8M0's least or 0).
//! With `--dump OUT`
//! it also writes, per bundle, `OUT/<bundle name>/`: the inputs as the entry takes them
//! (`a.bin`, `sa.bin`, .., the files `lowp-run --inputs` reads), `problem.txt`, the
//! kernel's result (`out.bin`, f32) and the oracle's (`oracle.bin`, f64), all little-endian,
//! for a peer run on the same inputs (`bench/vs_torch.py`).
//!
//! It links no LLVM or MLIR (a few MB), so it is what a GPU machine gets carried. A failed
//! check exits 1; a bad bundle, a bad flag or no GPU is one line and exit 2 (1 for no GPU).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use lowp_formats::problem::{MatmulInputs, MatmulSpec, Role};
use lowp_runtime::kernel::GpuKernel;
use lowp_runtime::Gpu;

const USAGE: &str =
    "usage: lowp-gpu-run DIR... [--seed S[,S..]] [--specials] [--zero-tail T] [--check]
                    [--bench N] [--cold] [--dump OUT]
  DIR        a kernel bundle written by lowp-run --target cuda --save-kernel DIR
  --seed S   input seed (default 1, as lowp-run); a list runs each kernel on each seed's
             inputs (timing and --dump on the first)
  --specials put inf / NaN codes, extreme values and a NaN block scale into each seed's
             inputs (as lowp-run --specials)
  --zero-tail T  zero the last T of K in both operands of each seed's inputs, each scale
             block inside them E8M0's least (2^-127) or 0 (as lowp-run --zero-tail)
  --check    compare each result with the lowp-formats f64 oracle
  --bench N  time N launches (CUDA events), print the median and GFLOP/s
  --cold     with --bench: flush the L2 before each timed launch (outside the events)
  --dump OUT write each bundle's inputs, problem, result (out.bin, f32) and the oracle's
             (oracle.bin, f64) into OUT/<bundle name>/";

#[macro_use]
#[path = "../../common/output.rs"]
mod output;

struct Args {
    dirs: Vec<PathBuf>,
    seeds: Vec<u64>,
    specials: bool,
    zero_tail: Option<usize>,
    check: bool,
    bench: Option<usize>,
    cold: bool,
    dump: Option<PathBuf>,
}

fn parse(raw: Vec<String>) -> Result<Args, String> {
    let mut a = Args {
        dirs: Vec::new(),
        seeds: vec![1],
        specials: false,
        zero_tail: None,
        check: false,
        bench: None,
        cold: false,
        dump: None,
    };
    let mut it = raw.into_iter();
    // Each flag once: a second value would silently replace the first.
    let mut seen = std::collections::HashSet::new();
    while let Some(arg) = it.next() {
        let (flag, inline) = match arg.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f.to_string(), Some(v.to_string())),
            _ => (arg.clone(), None),
        };
        if flag.starts_with('-') && !seen.insert(flag.clone()) {
            return Err(format!("{flag} is given twice"));
        }
        if inline.is_some()
            && matches!(
                flag.as_str(),
                "--check" | "--specials" | "--cold" | "-h" | "--help"
            )
        {
            return Err(format!("{flag} takes no value ('{arg}')"));
        }
        let mut value = |flag: &str| {
            inline
                .clone()
                .or_else(|| it.next())
                .ok_or(format!("{flag} needs a value\n{USAGE}"))
        };
        match flag.as_str() {
            "--seed" => {
                let v = value("--seed")?;
                a.seeds = v
                    .split(',')
                    .map(|x| x.parse().ok())
                    .collect::<Option<_>>()
                    .ok_or(format!(
                        "--seed: '{v}' is not a number or a list of numbers"
                    ))?;
            }
            "--check" => a.check = true,
            "--cold" => a.cold = true,
            "--specials" => a.specials = true,
            "--zero-tail" => {
                let v = value("--zero-tail")?;
                a.zero_tail = Some(
                    v.parse()
                        .ok()
                        .filter(|&t: &usize| t > 0)
                        .ok_or(format!("--zero-tail: '{v}' is not a positive number"))?,
                );
            }
            "--dump" => {
                let dir = value("--dump")?;
                if dir.is_empty() {
                    return Err("--dump needs a directory".into());
                }
                if Path::new(&dir).exists() && !Path::new(&dir).is_dir() {
                    return Err(format!("--dump: '{dir}' is not a directory"));
                }
                a.dump = Some(PathBuf::from(dir))
            }
            "--bench" => {
                let v = value("--bench")?;
                a.bench = Some(
                    v.parse()
                        .ok()
                        .filter(|&n: &usize| n > 0 && n <= 1_000_000)
                        .ok_or(format!(
                            "--bench: '{v}' is not a number of runs from 1 to 1000000"
                        ))?,
                );
            }
            f if f.starts_with('-') => return Err(format!("unknown option '{f}'\n{USAGE}")),
            "" => return Err("an empty bundle path".into()),
            dir => a.dirs.push(PathBuf::from(dir)),
        }
    }
    if a.dirs.is_empty() {
        return Err(format!("no kernel bundle given\n{USAGE}"));
    }
    if a.cold && a.bench.is_none() {
        return Err("--cold says how --bench times: give --bench N too".into());
    }
    Ok(a)
}

/// A bundle's kernel, problem and argument roles.
fn read_bundle(dir: &Path) -> Result<(GpuKernel, MatmulSpec, Vec<Role>), String> {
    let read = |name: &str| {
        let path = dir.join(name);
        std::fs::read_to_string(&path).map_err(|e| format!("cannot read '{}': {e}", path.display()))
    };
    let at = |what: &str, e: String| format!("{}/{what}: {e}", dir.display());
    use lowp_formats::problem::manifest_entries;
    // launch.txt's `problem` line (lowp-run's, beside the runtime's keys): the problem the
    // kernel was compiled for, which problem.txt must describe.
    let launch = read("launch.txt")?;
    let (problem_line, compiled_for) = manifest_entries(&launch)
        .map_err(|e| at("launch.txt", e))?
        .into_iter()
        .find(|(_, k, _)| k == "problem")
        .map(|(line, _, v)| (line, v))
        .ok_or_else(|| {
            at(
                "launch.txt",
                "no 'problem' line (the problem its kernel was compiled for, which lowp-run \
                 --save-kernel writes)"
                    .into(),
            )
        })?;
    let runtime_keys: String = launch
        .lines()
        .enumerate()
        .filter(|&(i, _)| i + 1 != problem_line)
        .map(|(_, l)| format!("{l}\n"))
        .collect();
    let kernel = GpuKernel::from_manifest(&runtime_keys, read("kernel.ptx")?)
        .map_err(|e| at("launch.txt", e))?;
    kernel.ptx_check().map_err(|e| at("kernel.ptx", e))?;
    let problem = read("problem.txt")?;
    let entries = manifest_entries(&problem).map_err(|e| at("problem.txt", e))?;
    let spec = MatmulSpec::from_manifest(&problem).map_err(|e| at("problem.txt", e))?;
    // Its keys: those of the spec's own manifest, and the arguments' roles.
    let known: Vec<String> = manifest_entries(&spec.to_manifest())
        .map_err(|e| at("problem.txt", e))?
        .into_iter()
        .map(|(_, k, _)| k)
        .chain(std::iter::once("roles".to_string()))
        .collect();
    if let Some((line, key, _)) = entries.iter().find(|(_, k, _)| !known.contains(k)) {
        return Err(at(
            "problem.txt",
            format!("line {line}: unknown key '{key}'"),
        ));
    }
    if spec.one_line() != compiled_for {
        let here = spec.one_line();
        let differ: Vec<String> = here
            .split("; ")
            .zip(compiled_for.split("; "))
            .filter(|(a, b)| a != b)
            .map(|(a, b)| format!("{a} (the kernel's: {b})"))
            .collect();
        return Err(at(
            "problem.txt",
            format!(
                "not the problem the kernel was compiled for (launch.txt): {}",
                if differ.is_empty() {
                    compiled_for.clone()
                } else {
                    differ.join(", ")
                }
            ),
        ));
    }
    let roles_line = entries
        .into_iter()
        .find(|(_, k, _)| k == "roles")
        .map(|(_, _, v)| v)
        .ok_or_else(|| at("problem.txt", "no 'roles' line".into()))?;
    let roles = Role::parse_list(&roles_line).map_err(|e| at("problem.txt", e))?;
    if roles.len() != spec.roles().len() || !roles.contains(&Role::Out) {
        return Err(at(
            "problem.txt",
            format!(
                "roles '{roles_line}' do not match the problem's {} arguments",
                spec.roles().len()
            ),
        ));
    }
    // Whole clusters, parameters within their arguments: before the driver is loaded.
    lowp_runtime::matmul::check(&kernel, &spec, &roles)
        .map_err(|e| at("launch.txt", e.to_string()))?;
    Ok((kernel, spec, roles))
}

/// Where a failed result is off, for telling a layout error (whole rows, columns or tiles
/// wrong) from precision: how many elements are off by more than 1% of the result's
/// largest magnitude (or not bit-equal where the oracle is not finite), which rows and
/// columns they span, and the worst four with their coordinates.
fn mismatches(spec: &MatmulSpec, want: &[f64], got: &[f32]) -> String {
    let scale = want
        .iter()
        .filter(|w| w.is_finite())
        .fold(f64::MIN_POSITIVE, |m, w| m.max(w.abs()));
    let mut off: Vec<(f64, usize)> = want
        .iter()
        .zip(got)
        .enumerate()
        .filter_map(|(i, (&w, &g))| {
            let g = g as f64;
            let err = if w.is_finite() {
                (g - w).abs()
            } else if g.to_bits() == w.to_bits() || (g.is_nan() && w.is_nan()) {
                0.0
            } else {
                f64::INFINITY
            };
            (err.is_nan() || err > 0.01 * scale).then_some((err, i))
        })
        .collect();
    if off.is_empty() {
        return "mismatches: none above 1% of max |oracle| (a precision failure)".into();
    }
    let (rows, cols): (Vec<usize>, Vec<usize>) =
        off.iter().map(|&(_, i)| (i / spec.n, i % spec.n)).unzip();
    let span = |v: &[usize]| {
        (
            v.iter().min().copied().unwrap_or(0),
            v.iter().max().copied().unwrap_or(0),
        )
    };
    off.sort_by(|a, b| b.0.total_cmp(&a.0));
    let worst: Vec<String> = off
        .iter()
        .take(4)
        .map(|&(_, i)| {
            format!(
                "C[{}][{}]={} want {:.6e}",
                i / spec.n,
                i % spec.n,
                got[i],
                want[i]
            )
        })
        .collect();
    format!(
        "mismatches: {} of {} above 1% of max |oracle| {:.3e}, rows {:?}, cols {:?}; worst: {}",
        off.len(),
        want.len(),
        scale,
        span(&rows),
        span(&cols),
        worst.join(", ")
    )
}

/// Write a run's inputs, problem, result and oracle into `dir`.
fn dump(
    dir: &Path,
    spec: &MatmulSpec,
    inputs: &lowp_formats::problem::MatmulInputs,
    result: &[f32],
) -> Result<(), String> {
    inputs.save(dir)?;
    let write = |name: &str, bytes: Vec<u8>| {
        let path = dir.join(name);
        std::fs::write(&path, bytes).map_err(|e| format!("cannot write '{}': {e}", path.display()))
    };
    write("problem.txt", spec.to_manifest().into_bytes())?;
    write(
        "out.bin",
        result.iter().flat_map(|v| v.to_le_bytes()).collect(),
    )?;
    write(
        "oracle.bin",
        spec.oracle(inputs)
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect(),
    )
}

/// Run every bundle; `Ok(false)` when a check failed.
fn run(a: &Args) -> Result<bool, (String, u8)> {
    let bundles: Vec<_> = a
        .dirs
        .iter()
        .map(|d| read_bundle(d).map(|b| (d, b)))
        .collect::<Result<_, _>>()
        .map_err(|e| (e, 2))?;
    // (Before any GPU: a bad flag is exit 2 wherever it runs.)
    for (dir, (_, spec, _)) in &bundles {
        if let Some(tail) = a.zero_tail.filter(|&t| t > spec.k) {
            let why = format!(
                "--zero-tail {tail}: past K = {} of {}",
                spec.k,
                dir.display()
            );
            return Err((why, 2));
        }
    }
    let gpu = Gpu::open(0).map_err(|e| (e.to_string(), 1))?;
    say!(
        "device: {}",
        gpu.describe().map_err(|e| (e.to_string(), 1))?
    );
    let mut passed = true;
    // The inputs of the last problem and seed: consecutive bundles of one problem (the
    // kernels timed on one shape and format) share them, as making 8192^3's takes seconds.
    let mut last: Option<(String, u64, MatmulInputs)> = None;
    for (dir, (kernel, spec, roles)) in bundles {
        say!(
            "kernel: {} {} chip={} {}x{}x{} {}[{}] x {}[{}] grid={:?} block={:?}",
            dir.display(),
            kernel.name,
            kernel.chip,
            spec.m,
            spec.n,
            spec.k,
            spec.lhs,
            spec.lhs_layout,
            spec.rhs,
            spec.rhs_layout,
            kernel.grid,
            kernel.block
        );
        for next in &kernel.then {
            say!(
                "kernel: then {} grid={:?} block={:?}",
                next.name,
                next.grid,
                next.block
            );
        }
        for (i, &seed) in a.seeds.iter().enumerate() {
            let first = i == 0;
            let key = spec.one_line();
            let inputs = match last.take() {
                Some((k, s, inputs)) if k == key && s == seed => inputs,
                _ => {
                    let mut inputs = spec.inputs(seed);
                    if a.specials {
                        inputs.inject_specials();
                    }
                    if let Some(tail) = a.zero_tail {
                        inputs.zero_tail(tail);
                    }
                    inputs
                }
            };
            let bench = a
                .bench
                .filter(|_| first)
                .map(|runs| lowp_runtime::Timing { runs, cold: a.cold });
            let r = lowp_runtime::matmul::run(&gpu, &kernel, &spec, &roles, &inputs, bench)
                .map_err(|e| (format!("{}: {e}", dir.display()), 1))?;
            if a.check {
                let accumulation = kernel.accumulation();
                let c = spec.check_accumulated(&inputs, &r.result, accumulation);
                let which = if a.seeds.len() > 1 {
                    format!(" seed={seed}")
                } else {
                    String::new()
                };
                say!(
                    "check: {} max_abs_err={:.3e} max_rel_err={:.3e} bound_ratio={:.3} \
                     nonfinite_mismatches={}{which}{}",
                    if c.passed { "PASS" } else { "FAIL" },
                    c.stats.max_abs_err,
                    c.stats.max_rel_err,
                    c.stats.max_bound_ratio,
                    c.stats.nonfinite_mismatches,
                    accumulation.check_suffix()
                );
                passed &= c.passed;
                if !c.passed {
                    say!("{}", mismatches(&spec, &spec.oracle(&inputs), &r.result));
                }
            }
            if let (Some(out), true) = (&a.dump, first) {
                let name = dir
                    .file_name()
                    .map_or("bundle".into(), |n| n.to_os_string());
                dump(&out.join(name), &spec, &inputs, &r.result).map_err(|e| (e, 1))?;
            }
            if let Some((ms, runs)) = r.median_ms {
                // The fewest bytes the problem moves: each argument read once, the result
                // written once (what a memory-bound shape's rate is measured against).
                let bytes: u64 = spec.roles().iter().map(|&role| spec.role_len(role)).sum();
                say!(
                    "bench: median_ms={ms:.4} gflops={:.2} gbps={:.1} runs={runs}",
                    spec.flops() / (ms * 1e6),
                    bytes as f64 / (ms * 1e6)
                );
            }
            last = Some((key, seed, inputs));
        }
    }
    Ok(passed)
}

fn main() -> ExitCode {
    let raw: Vec<String> = std::env::args().skip(1).collect();
    if let Some(status) = output::help("lowp-gpu-run", USAGE, &raw) {
        return status;
    }
    let args = match parse(raw) {
        Ok(a) => a,
        Err(msg) => {
            warn!("lowp-gpu-run: {msg}");
            return ExitCode::from(2);
        }
    };
    let status = match run(&args) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err((msg, code)) => {
            warn!("lowp-gpu-run: {msg}");
            ExitCode::from(code)
        }
    };
    output::finish("lowp-gpu-run", status)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec() -> MatmulSpec {
        MatmulSpec {
            m: 4,
            n: 8,
            k: 32,
            lhs: lowp_formats::ScaledFormat::F8E4M3,
            rhs: lowp_formats::ScaledFormat::F8E4M3,
            lhs_layout: lowp_formats::ScaleLayout::PerTensor,
            rhs_layout: lowp_formats::ScaleLayout::PerTensor,
            lhs_packed: false,
            rhs_packed: false,
            bias: false,
            bf16: false,
        }
    }

    #[test]
    fn mismatches_locate_the_wrong_elements() {
        let want: Vec<f64> = (0..32).map(|i| i as f64).collect();
        let mut got: Vec<f32> = want.iter().map(|&w| w as f32).collect();
        // Column 5 of rows 1 and 2 wrong, a NaN where a number is due, one tiny error.
        got[8 + 5] = -1.0;
        got[16 + 5] = 99.0;
        got[3] = f32::NAN;
        got[30] += 1e-3;
        let text = mismatches(&spec(), &want, &got);
        assert!(text.starts_with("mismatches: 3 of 32"), "{text}");
        assert!(text.contains("rows (0, 2), cols (3, 5)"), "{text}");
        assert!(text.contains("C[0][3]=NaN want 3.000000e0"), "{text}");
        assert!(text.contains("C[2][5]=99 want 2.100000e1"), "{text}");
        // Only small errors: said to be precision.
        let close: Vec<f32> = want.iter().map(|&w| w as f32 + 1e-3).collect();
        assert!(mismatches(&spec(), &want, &close).contains("precision"));
    }
}
