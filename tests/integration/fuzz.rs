//! Fuzzing the tools: hundreds of mutated versions of the lit inputs, parsed, verified and run
//! through lowp's passes (lowp-opt), LLVM's backends (lowp-translate) or compiled, run and
//! checked (lowp-run). Every outcome must be success or diagnostics with exit status 1:
//! never a crash, abort, hang, wrong result or a silent failure.

use std::io::Write;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use lowp_formats::testing::SplitMix64;

/// Fragments that reach interesting corners of the parsers and verifiers.
const DICTIONARY: &[&str] = &[
    "f4E2M1FN",
    "f8E4M3FN",
    "f8E5M2FNUZ",
    "f6E3M2FN",
    "f8E8M0FNU",
    "f32",
    "bf16",
    "i8",
    "!lowp.mf<e0m0>",
    "!lowp.mf<e4m4, bias = -128>",
    "!lowp.mf<e3m0>",
    "!lowp.mf<e7m0, bias = 127>",
    "!lowp.packed<f8E5M2>",
    "!lowp.packed<f4E2M1FN>",
    "#lowp.mx<0>",
    "#lowp.mx<1>",
    "#lowp.nvfp4<16, global>",
    "#lowp.nvfp4<3>",
    "#lowp.blockwise<0x0>",
    "#lowp.blockwise<1x1>",
    "#lowp.per_tensor",
    "#lowp.per_channel",
    "#lowp.rounding<ocp_mx>",
    "?",
    "0",
    "1",
    "-1",
    "7",
    "4294967296",
    "99999999999999999999",
    "memref<?x?xf32>",
    "memref<f32>",
    "memref<0x0xf32>",
    "strided<[1, 64], offset: 3>",
    "affine_map<(d0, d1) -> (d1, d0)>",
    "lowp.quantize",
    "lowp.dequantize",
    "lowp.compute_scales",
    "lowp.scaled_matmul",
    "lowp.storage_cast",
    "memref.subview",
    "vector.load",
    "[",
    "]",
    "<",
    ">",
    ",",
    ":",
    "%arg0",
    "into",
    "layout",
    "bias",
    "}",
];

const PIPELINES: &[Option<&str>] = &[
    None,
    Some("builtin.module(func.func(lowp-expand-quantize))"),
    Some("builtin.module(lowp-assert-shapes,canonicalize)"),
    Some("builtin.module(lowp-check-bounds,canonicalize)"),
    Some("builtin.module(func.func(lowp-expand-quantize{decode=table}),lowp-lower-storage)"),
    Some("builtin.module(func.func(lowp-to-loops{kc=48}))"),
    Some("builtin.module(func.func(lowp-to-loops{kc=20 dot=i8 lanes=16}))"),
    Some("builtin.module(lowp-cpu-openmp-pipeline)"),
    Some("builtin.module(func.func(lowp-to-parallel-loops))"),
    // The generic GPU kernel down to PTX (lowp_passes::pipelines::nvvm_kernel_passes).
    Some(
        "builtin.module(lowp-gpu-generic-pipeline,nvvm-attach-target{chip=sm_90a features=+ptx84},\
         gpu.module(lower-affine,convert-scf-to-cf,convert-gpu-to-nvvm,canonicalize,cse,\
         reconcile-unrealized-casts),gpu-module-to-binary{format=isa})",
    ),
    Some("builtin.module(func.func(lowp-to-nvvm{chip=sm_90a emulate=true}))"),
    Some("builtin.module(func.func(lowp-to-nvvm{chip=sm_89 emulate=true}))"),
    Some("builtin.module(func.func(lowp-to-nvvm{chip=sm_100a emulate=true}))"),
    // The register-fed decode block (refusing what it does not take), as GPU IR.
    Some("builtin.module(func.func(lowp-to-nvvm{chip=sm_90a kernel=wgmma-registers}))"),
    // The TMA block storing C by TMA (falling back where C does not allow it), as GPU IR.
    Some("builtin.module(func.func(lowp-to-nvvm{chip=sm_90a kernel=wgmma-tma store-c=tma}))"),
    // lowp-to-nvvm (mma.sync on sm_89, wgmma on sm_90a, where they apply) down to PTX
    // (lowp_passes::pipelines::nvvm_front, then the kernel passes).
    Some(
        "builtin.module(func.func(lowp-to-nvvm{chip=sm_89}),lowp-lower-storage,\
         func.func(gpu-map-parallel-loops,convert-parallel-loops-to-gpu,lowp-fold-grid),\
         gpu-launch-sink-index-computations,gpu-kernel-outlining,canonicalize,cse,\
         nvvm-attach-target{chip=sm_89 features=+ptx84},\
         gpu.module(lower-affine,convert-scf-to-cf,convert-gpu-to-nvvm,convert-nvvm-to-llvm,\
         canonicalize,cse,reconcile-unrealized-casts),gpu-module-to-binary{format=isa})",
    ),
    Some(
        "builtin.module(func.func(lowp-to-nvvm{chip=sm_100a}),lowp-lower-storage,\
         func.func(gpu-map-parallel-loops,convert-parallel-loops-to-gpu,lowp-fold-grid),\
         gpu-launch-sink-index-computations,gpu-kernel-outlining,canonicalize,cse,\
         nvvm-attach-target{chip=sm_100a features=+ptx88},\
         gpu.module(lower-affine,convert-scf-to-cf,convert-gpu-to-nvvm,convert-nvvm-to-llvm,\
         canonicalize,cse,reconcile-unrealized-casts),gpu-module-to-binary{format=isa})",
    ),
    Some(
        "builtin.module(func.func(lowp-to-nvvm{chip=sm_90a}),lowp-lower-storage,\
         func.func(gpu-map-parallel-loops,convert-parallel-loops-to-gpu,lowp-fold-grid),\
         gpu-launch-sink-index-computations,gpu-kernel-outlining,canonicalize,cse,\
         nvvm-attach-target{chip=sm_90a features=+ptx84},\
         gpu.module(lower-affine,convert-scf-to-cf,convert-gpu-to-nvvm,convert-nvvm-to-llvm,\
         canonicalize,cse,reconcile-unrealized-casts),gpu-module-to-binary{format=isa})",
    ),
    // The TMA-fed wgmma block (host tensor maps, bulk tensor copies) down to PTX.
    Some(
        "builtin.module(func.func(lowp-to-nvvm{chip=sm_90a kernel=wgmma-tma}),lowp-lower-storage,\
         func.func(gpu-map-parallel-loops,convert-parallel-loops-to-gpu,lowp-fold-grid),\
         gpu-launch-sink-index-computations,gpu-kernel-outlining,canonicalize,cse,\
         lowp-kernel-cluster-size,nvvm-attach-target{chip=sm_90a features=+ptx84},\
         gpu.module(lower-affine,convert-scf-to-cf,convert-gpu-to-nvvm,convert-nvvm-to-llvm,\
         canonicalize,cse,reconcile-unrealized-casts),gpu-module-to-binary{format=isa})",
    ),
    Some("builtin.module(func.func(lowp-to-rocdl{chip=gfx950 emulate=true}))"),
    // lowp-to-rocdl (MFMA where it applies) down to gfx942 ISA
    // (lowp_passes::pipelines::rocdl_front, then the kernel passes).
    Some(
        "builtin.module(func.func(lowp-to-rocdl{chip=gfx942}),lowp-lower-storage,\
         func.func(gpu-map-parallel-loops,convert-parallel-loops-to-gpu,lowp-fold-grid),\
         gpu-launch-sink-index-computations,gpu-kernel-outlining,canonicalize,cse,\
         rocdl-attach-target{chip=gfx942},\
         gpu.module(lower-affine,convert-scf-to-cf,convert-gpu-to-rocdl,canonicalize,cse,\
         reconcile-unrealized-casts),gpu-module-to-binary{format=isa})",
    ),
];

fn inputs() -> Vec<String> {
    inputs_under("lit")
}

fn inputs_under(dir: &str) -> Vec<String> {
    let mut chunks = Vec::new();
    let mut stack = vec![lowp_tests::repo().join(dir)];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "mlir") {
                let text = std::fs::read_to_string(&path).unwrap();
                chunks.extend(text.split("// -----").map(str::to_owned));
            }
        }
    }
    chunks.sort();
    chunks
}

fn pick<'a, T>(rng: &mut SplitMix64, items: &'a [T]) -> &'a T {
    &items[(rng.next_u64() % items.len() as u64) as usize]
}

fn char_boundary(s: &str, mut i: usize) -> usize {
    i = i.min(s.len());
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

fn mutate(rng: &mut SplitMix64, text: &str) -> String {
    let mut s = text.to_string();
    for _ in 0..1 + rng.next_u64() % 3 {
        if s.is_empty() {
            break;
        }
        let at = char_boundary(&s, (rng.next_u64() % s.len() as u64) as usize);
        let len = (1 + rng.next_u64() % 24) as usize;
        let end = char_boundary(&s, at + len);
        match rng.next_u64() % 6 {
            0 => s.replace_range(at..end, ""),
            1 => {
                let span = s[at..end].to_string();
                s.insert_str(at, &span);
            }
            2 => s.insert_str(at, pick::<&str>(rng, DICTIONARY)),
            3 => s.replace_range(at..end, pick::<&str>(rng, DICTIONARY)),
            4 => {
                // Replace a whole number somewhere after `at`.
                if let Some(off) = s[at..].find(|c: char| c.is_ascii_digit()) {
                    let start = at + off;
                    let stop = s[start..]
                        .find(|c: char| !c.is_ascii_digit())
                        .map_or(s.len(), |o| start + o);
                    let n = [
                        "0",
                        "1",
                        "3",
                        "31",
                        "33",
                        "255",
                        "-1",
                        "65536",
                        "4294967297",
                    ];
                    s.replace_range(start..stop, pick::<&str>(rng, &n));
                }
            }
            _ => s.truncate(at),
        }
    }
    s
}

/// What a consistent mutant swaps, each within its kind: sizes, code formats, scale layouts.
const KINDS: [&[&str]; 3] = [
    &[
        "0", "1", "2", "3", "7", "8", "16", "31", "32", "33", "48", "64", "65", "128", "255",
        "256", "?",
    ],
    &[
        "f4E2M1FN",
        "f6E2M3FN",
        "f6E3M2FN",
        "f8E4M3FN",
        "f8E5M2",
        "f8E4M3FNUZ",
        "f8E5M2FNUZ",
        "!lowp.mf<e3m0>",
        "!lowp.mf<e2m2>",
        "!lowp.packed<f4E2M1FN>",
    ],
    &[
        "#lowp.per_tensor",
        "#lowp.per_channel",
        "#lowp.mx<16>",
        "#lowp.mx<32>",
        "#lowp.nvfp4<16>",
        "#lowp.nvfp4<16, global>",
        "#lowp.blockwise<1x32>",
        "#lowp.blockwise<128x128>",
    ],
];

/// Where `token` stands alone in `s`: not inside a name (`%arg0`, `f8E5M2FNUZ`) or a number,
/// an `x` between a shape's sizes (numbers or `?`) counting as a separator.
fn occurrences(s: &str, token: &str) -> Vec<usize> {
    let b = s.as_bytes();
    let joined = |c: u8| c.is_ascii_alphanumeric() || c == b'_' || c == b'%' || c == b'.';
    s.match_indices(token)
        .map(|(i, _)| i)
        .filter(|&i| {
            let end = i + token.len();
            let shape_x = |at: usize| b[at] == b'x';
            let size = |c: u8| c.is_ascii_digit() || c == b'?';
            let before_ok =
                i == 0 || !joined(b[i - 1]) || (shape_x(i - 1) && i >= 2 && size(b[i - 2]));
            let after_ok =
                end == b.len() || !joined(b[end]) || (shape_x(end) && token.bytes().all(size));
            before_ok && after_ok
        })
        .collect()
}

/// A consistent mutant: one to three times, a size, code format or layout that `text`
/// holds replaced everywhere by another of its kind, so that shapes and types still agree
/// where they did (a valid module often stays valid, with new sizes or formats).
fn substitute(rng: &mut SplitMix64, text: &str) -> String {
    let mut s = text.to_string();
    for _ in 0..1 + rng.next_u64() % 3 {
        let present: Vec<(usize, &str)> = KINDS
            .iter()
            .enumerate()
            .flat_map(|(k, tokens)| tokens.iter().map(move |t| (k, *t)))
            .filter(|(_, t)| !occurrences(&s, t).is_empty())
            .collect();
        if present.is_empty() {
            break;
        }
        let (kind, old) = *pick(rng, &present);
        let new = *pick(rng, KINDS[kind]);
        for at in occurrences(&s, old).into_iter().rev() {
            s.replace_range(at..at + old.len(), new);
        }
    }
    s
}

/// Crashes of upstream MLIR 22 itself, each pinned by an XFAIL test in lit/Tools
/// (upstream-bugs.test, upstream-resource-alignment.test): (text of the stack dump, text of
/// the input that triggers it).
const KNOWN_UPSTREAM_CRASHES: &[(&str, &str)] = &[
    ("custom op parser 'llvm.extractvalue'", "4294967297"),
    // A dense_resource blob of alignment 0 (lit/Tools/upstream-resource-alignment.test).
    ("Buffer allocation failed", "\"0x00000000"),
];

/// Feed `n` mutants (`mutate`) of `inputs` to `tool` (reading stdin) with the arguments
/// `args(i, mutant)`; every run must succeed or fail with a diagnostic and status 1, and
/// none may print a failed check (`check: FAIL`, lowp-run's wrong result). Returns (ok,
/// rejected).
fn run_mutants(
    tool: &std::path::Path,
    args: &dyn Fn(usize, &str) -> Vec<String>,
    mutate: fn(&mut SplitMix64, &str) -> String,
    inputs: &[String],
    n: usize,
    seed: u64,
) -> (usize, usize) {
    let mut rng = SplitMix64::new(seed);
    let (mut ok, mut rejected) = (0, 0);
    for i in 0..n {
        let original = pick(&mut rng, inputs).clone();
        let source = mutate(&mut rng, &original);
        let argv = args(i, &source);
        let mut child = Command::new(tool)
            .args(&argv)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let _ = child.stdin.take().unwrap().write_all(source.as_bytes());
        // Drain both outputs while the child runs: a diagnostic longer than the pipe's
        // buffer (MLIR's "see current operation" dump of a whole module) would otherwise
        // block the child on its write, and read here as a hang.
        let drain = |pipe: Option<_>| {
            let mut pipe: Box<dyn std::io::Read + Send> = pipe.unwrap();
            std::thread::spawn(move || {
                let mut bytes = Vec::new();
                let _ = pipe.read_to_end(&mut bytes);
                String::from_utf8_lossy(&bytes).into_owned()
            })
        };
        let out = drain(child.stdout.take().map(|p| Box::new(p) as _));
        let err = drain(child.stderr.take().map(|p| Box::new(p) as _));
        let start = Instant::now();
        let status = loop {
            if let Some(status) = child.try_wait().unwrap() {
                break status;
            }
            if start.elapsed() > Duration::from_secs(60) {
                let _ = child.kill();
                panic!(
                    "{} hung on mutant {i} ({argv:?}):\n{source}",
                    tool.display()
                );
            }
            std::thread::sleep(Duration::from_millis(2));
        };
        let stdout = out.join().unwrap();
        assert!(
            !stdout.contains("check: FAIL"),
            "mutant {i} ran to a wrong result ({argv:?}):\n{source}\n--- stdout:\n{stdout}"
        );
        let stderr = err.join().unwrap();
        match status.code() {
            Some(0) => ok += 1,
            Some(1) => {
                let name = tool.file_name().unwrap().to_string_lossy();
                assert!(
                    stderr.contains("error") || stderr.starts_with(&format!("{name}: ")),
                    "mutant {i} failed without a diagnostic ({argv:?}):\n{source}\n--- stderr:\n{stderr}"
                );
                rejected += 1;
            }
            // A crash inside upstream MLIR that lit/Tools/upstream-bugs.test pins (and
            // mlir-opt shares) is not lowp's; any other crash is.
            _ if KNOWN_UPSTREAM_CRASHES
                .iter()
                .any(|(frame, text)| stderr.contains(frame) && source.contains(text)) =>
            {
                eprintln!("mutant {i}: known upstream MLIR crash (lit/Tools/upstream-*.test)");
                rejected += 1;
            }
            other => panic!(
                "{} crashed ({other:?}, signal or abort) on mutant {i} ({argv:?}):\n{source}\n--- stderr:\n{stderr}",
                tool.display()
            ),
        }
    }
    (ok, rejected)
}

fn env_or(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

#[test]
fn mutated_lit_inputs_give_diagnostics_never_crashes() {
    // LOWP_FUZZ_SEED / LOWP_FUZZ_N widen a local run; CI uses the fixed defaults.
    let inputs = inputs();
    assert!(inputs.len() > 20, "lit inputs not found");
    let n = env_or("LOWP_FUZZ_N", 500) as usize;
    let args = |i: usize, _: &str| {
        let mut a = vec!["-".to_string()];
        if let Some(p) = PIPELINES[i % PIPELINES.len()] {
            a.push(format!("--pass-pipeline={p}"));
        }
        a
    };
    let (ok, rejected) = run_mutants(
        &lowp_tests::tool("lowp-opt"),
        &args,
        mutate,
        &inputs,
        n,
        env_or("LOWP_FUZZ_SEED", 0x10f7),
    );
    eprintln!("fuzz lowp-opt: {n} mutants, {ok} accepted, {rejected} rejected with diagnostics");
    assert!(
        ok > 10 && rejected > 100,
        "mutations too weak or too strong: {ok} ok, {rejected} rejected"
    );
}

#[test]
fn mutated_target_inputs_through_the_backends_never_crash() {
    // LLVM-dialect kernels (NVVM / ROCDL intrinsics) through MLIR's translation and LLVM's
    // NVPTX / AMDGPU backends: a fatal backend error must still be one line and status 1.
    let inputs = inputs_under("lit/Target");
    let chips = ["sm_89", "sm_90a", "gfx942", "gfx950", "host"];
    let n = env_or("LOWP_FUZZ_N", 150) as usize;
    let args = |i: usize, _: &str| {
        vec![
            "-".to_string(),
            "--emit=asm".into(),
            format!("--chip={}", chips[i % chips.len()]),
        ]
    };
    let (ok, rejected) = run_mutants(
        &lowp_tests::tool("lowp-translate"),
        &args,
        mutate,
        &inputs,
        n,
        env_or("LOWP_FUZZ_SEED", 0x7a1),
    );
    eprintln!(
        "fuzz lowp-translate: {n} mutants, {ok} accepted, {rejected} rejected with diagnostics"
    );
    assert!(
        ok > 5 && rejected > 20,
        "mutations too weak or too strong: {ok} ok, {rejected} rejected"
    );
}

/// The JIT path: consistent mutants of lowp-run's inputs (lit/Run/Inputs and generated
/// matmuls of several formats and layouts) compiled for the CPU, or for a GPU kernel
/// emulated on it, run and checked against the oracle: each passes its check or is refused
/// in one line, never a crash, hang or wrong result.
#[test]
fn mutated_run_inputs_pass_their_check_or_are_refused() {
    let run = lowp_tests::tool("lowp-run");
    let mut inputs = inputs_under("lit/Run/Inputs");
    for (m, n, k, a, b, layout) in [
        ("5", "8", "64", "f4e2m1", "f4e2m1", "mx"),
        ("1", "16", "256", "f8e4m3", "f8e5m2", "per_tensor"),
        ("13", "7", "128", "f6e2m3", "f8e4m3", "mx"),
        ("3", "9", "64", "f4e2m1", "f4e2m1", "nvfp4+global"),
        ("16", "8", "256", "f8e4m3", "f8e4m3", "blockwise/1x128"),
        ("7", "24", "96", "f8e5m2fnuz", "f8e4m3fnuz", "per_channel"),
    ] {
        let out = Command::new(&run)
            .args([
                "--gen", "--m", m, "--n", n, "--k", k, "--lhs", a, "--rhs", b,
            ])
            .args(["--layout", layout, "--print-mlir"])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        inputs.push(String::from_utf8(out.stdout).unwrap());
    }
    let extras: [&[&str]; 12] = [
        &[],
        &["--specials"],
        // The CPU kernels the host's default does not take: FMAs and bit decode, and the
        // byte kernel on pmaddubsw (where the host has VNNI, its default is vpdpbusd).
        &[
            "--threads",
            "1",
            "--dot",
            "f32",
            "--bf16-dot",
            "off",
            "--decode",
            "bits",
        ],
        &["--dot", "i8", "--specials"],
        // (K padded with zeros: the wgmma pipeline folds them; a K under 32 is refused.)
        &["--target", "cuda", "--emulate", "--zero-tail", "32"],
        &["--target", "cuda", "--emulate", "--chip", "sm_89"],
        &[
            "--target",
            "cuda",
            "--emulate",
            "--kernel",
            "generic",
            "--specials",
        ],
        // The kernels and options that auto does not choose (yet): each takes the op or
        // refuses it in one line.
        &[
            "--target",
            "cuda",
            "--emulate",
            "--kernel",
            "wgmma-registers",
            "--specials",
        ],
        &[
            "--target",
            "cuda",
            "--emulate",
            "--kernel",
            "wgmma-tma",
            "--persistent",
            "on",
            "--store-c",
            "tma",
        ],
        &[
            "--target",
            "cuda",
            "--emulate",
            "--translate-once",
            "on",
            "--specials",
        ],
        &[
            "--target",
            "cuda",
            "--emulate",
            "--block-n",
            "192",
            "--split-k",
            "2",
        ],
        &[
            "--target",
            "cuda",
            "--emulate",
            "--kernel",
            "wgmma-skinny",
            "--stages",
            "4",
            "--translate-ahead",
            "on",
            "--fold-scales",
            "rows",
        ],
    ];
    let args = |i: usize, source: &str| {
        // The entry: the first function holding a scaled_matmul (else the first).
        let functions: Vec<&str> = source.split("func.func @").skip(1).collect();
        let entry = functions
            .iter()
            .find(|f| f.contains("lowp.scaled_matmul"))
            .or(functions.first())
            .and_then(|f| f.split('(').next())
            .unwrap_or("scaled_matmul")
            .trim_matches('"');
        let mut a: Vec<String> = ["-", "--entry", entry, "--check"].map(String::from).into();
        a.extend(extras[i % extras.len()].iter().map(|s| s.to_string()));
        // A dynamic first size (M, most often): the run gives it (a static M refuses it).
        if source.contains("<?x") {
            a.extend(["--m", "5"].map(String::from));
        }
        a
    };
    let n = env_or("LOWP_FUZZ_N", 120) as usize;
    let (ok, rejected) = run_mutants(
        &run,
        &args,
        substitute,
        &inputs,
        n,
        env_or("LOWP_FUZZ_SEED", 0x2e5),
    );
    eprintln!("fuzz lowp-run: {n} mutants, {ok} passed their check, {rejected} refused");
    assert!(
        ok > 10 && rejected > 10,
        "mutations too weak or too strong: {ok} ok, {rejected} rejected"
    );
}
