//! lowp-to-loops computes what the oracle computes: scaled_matmul lowered to the vectorized
//! GEMM, JIT-compiled and run, agrees with `lowp_formats::scaled_matmul_f64` within the f32
//! summation bound, for every named format, custom formats, every layout (and mixes), packed
//! FP4, NVFP4 globals, bias, bf16 results, odd sizes and NaN/inf operands. So does
//! lowp-to-parallel-loops, the one-output-per-iteration form the GPU mapping starts from.

use lowp_formats::testing::SplitMix64;
use lowp_formats::{
    quantize, scaled_matmul_f64, QuantizeOptions, QuantizedTensor, ScaleLayout, ScaledFormat,
};
use lowp_jit::{MemRefArg, Session};
use lowp_tests::{format_type, layout_attr, scale_type, valid_pair};

/// A quantized operand and the IR types that describe it.
#[derive(Clone)]
pub(crate) struct Operand {
    pub(crate) q: QuantizedTensor,
    pub(crate) codes_type: String,
    pub(crate) scales_type: String,
}

pub(crate) fn operand(
    rng: &mut SplitMix64,
    rows: usize,
    k: usize,
    f: ScaledFormat,
    l: ScaleLayout,
    packed: bool,
) -> Operand {
    let data: Vec<f32> = (0..rows * k)
        .map(|i| rng.normal() * (1.0 + (i % 5) as f32))
        .collect();
    operand_of(&data, rows, k, f, l, packed)
}

/// The operand `data` (`rows x k`, row-major) quantized.
pub(crate) fn operand_of(
    data: &[f32],
    rows: usize,
    k: usize,
    f: ScaledFormat,
    l: ScaleLayout,
    packed: bool,
) -> Operand {
    let q = quantize(
        data,
        rows,
        k,
        f,
        l,
        QuantizeOptions {
            packed,
            ..Default::default()
        },
    )
    .unwrap();
    let ft = format_type(f);
    let codes_type = if packed {
        format!("memref<{rows}x{}x!lowp.packed<{ft}>>", k / 2)
    } else {
        format!("memref<{rows}x{k}x{ft}>")
    };
    let (sr, sc) = l.scale_shape(rows, k);
    let scales_type = format!("memref<{sr}x{sc}x{}>", scale_type(l));
    Operand {
        q,
        codes_type,
        scales_type,
    }
}

/// Scale buffers in their memref element type: bytes for E8M0/UE4M3, f32 otherwise.
enum ScaleBuf {
    Bytes(Vec<u8>),
    F32(Vec<f32>),
}

fn scale_buf(q: &QuantizedTensor) -> ScaleBuf {
    match q.scale_bytes() {
        Some(b) => ScaleBuf::Bytes(b),
        None => ScaleBuf::F32(q.scales.values.clone()),
    }
}

#[derive(Clone)]
pub(crate) struct Problem {
    pub(crate) a: Operand,
    pub(crate) b: Operand,
    pub(crate) bias: Option<Vec<f32>>,
    pub(crate) bf16: bool,
}

pub(crate) fn source(name: &str, p: &Problem) -> String {
    let (m, n) = (p.a.q.rows, p.b.q.rows);
    let ga = p.a.q.layout.has_global();
    let gb = p.b.q.layout.has_global();
    let out_el = if p.bf16 { "bf16" } else { "f32" };
    let mut args = vec![
        format!("%a: {}", p.a.codes_type),
        format!("%sa: {}", p.a.scales_type),
    ];
    if ga {
        args.push("%ga: memref<f32>".into());
    }
    args.push(format!("%b: {}", p.b.codes_type));
    args.push(format!("%sb: {}", p.b.scales_type));
    if gb {
        args.push("%gb: memref<f32>".into());
    }
    if p.bias.is_some() {
        args.push(format!("%bias: memref<{n}xf32>"));
    }
    args.push(format!("%c: memref<{m}x{n}x{out_el}>"));
    let g = |present, name: &str| {
        if present {
            format!(", %{name}")
        } else {
            String::new()
        }
    };
    let gt = |present| {
        if present {
            ", memref<f32>".to_string()
        } else {
            String::new()
        }
    };
    let (bias_use, bias_ty) = match &p.bias {
        Some(_) => (" bias %bias".to_string(), format!(" bias memref<{n}xf32>")),
        None => (String::new(), String::new()),
    };
    format!(
        "func.func @{name}({args}) {{
  lowp.scaled_matmul %a[%sa{ga_use}], %b[%sb{gb_use}]{bias_use} into %c layouts({la}, {lb})
      : {at}[{st_a}{ga_t}], {bt}[{st_b}{gb_t}]{bias_ty} -> memref<{m}x{n}x{out_el}>
  return
}}
",
        args = args.join(", "),
        ga_use = g(ga, "ga"),
        gb_use = g(gb, "gb"),
        la = layout_attr(p.a.q.layout),
        lb = layout_attr(p.b.q.layout),
        at = p.a.codes_type,
        st_a = p.a.scales_type,
        ga_t = gt(ga),
        bt = p.b.codes_type,
        st_b = p.b.scales_type,
        gb_t = gt(gb),
    )
}

/// Run @name on the problem's buffers; returns the result as f32.
fn run(jit: &lowp_jit::Jit, name: &str, p: &Problem) -> Vec<f32> {
    let (m, n) = (p.a.q.rows, p.b.q.rows);
    let mut a_codes = p.a.q.codes.clone();
    let mut b_codes = p.b.q.codes.clone();
    let mut sa = scale_buf(&p.a.q);
    let mut sb = scale_buf(&p.b.q);
    let mut ga = p.a.q.scales.global.unwrap_or(0.0);
    let mut gb = p.b.q.scales.global.unwrap_or(0.0);
    let mut bias = p.bias.clone().unwrap_or_default();
    let mut out32 = vec![0f32; m * n];
    let mut out16 = vec![0u16; m * n];
    let shape = |o: &Operand| {
        let q = &o.q;
        vec![q.rows, if q.packed { q.cols / 2 } else { q.cols }]
    };
    let mut args = vec![
        MemRefArg::new(&mut a_codes, &shape(&p.a)),
        scale_arg(&mut sa, &p.a.q),
    ];
    if p.a.q.layout.has_global() {
        args.push(MemRefArg::scalar(&mut ga));
    }
    args.push(MemRefArg::new(&mut b_codes, &shape(&p.b)));
    args.push(scale_arg(&mut sb, &p.b.q));
    if p.b.q.layout.has_global() {
        args.push(MemRefArg::scalar(&mut gb));
    }
    if p.bias.is_some() {
        args.push(MemRefArg::new(&mut bias, &[n]));
    }
    if p.bf16 {
        args.push(MemRefArg::new(&mut out16, &[m, n]));
    } else {
        args.push(MemRefArg::new(&mut out32, &[m, n]));
    }
    // SAFETY: the arguments follow the generated signature.
    unsafe { jit.call(name, &mut args) }.unwrap();
    drop(args);
    if p.bf16 {
        out16
            .iter()
            .map(|&h| f32::from_bits((h as u32) << 16))
            .collect()
    } else {
        out32
    }
}

fn scale_arg<'a>(buf: &'a mut ScaleBuf, q: &QuantizedTensor) -> MemRefArg<'a> {
    let (r, c) = q.layout.scale_shape(q.rows, q.cols);
    match buf {
        ScaleBuf::Bytes(b) => MemRefArg::new(b.as_mut_slice(), &[r, c]),
        ScaleBuf::F32(v) => MemRefArg::new(v.as_mut_slice(), &[r, c]),
    }
}

fn check(what: &str, p: &Problem, got: &[f32]) {
    let r = scaled_matmul_f64(&p.a.q.as_operand(), &p.b.q.as_operand(), p.bias.as_deref()).unwrap();
    // bf16 results carry one bf16 rounding (2^-8 relative) on top of the f32 bound.
    if p.bf16 {
        for (i, (&g, &w)) in got.iter().zip(&r.values).enumerate() {
            let tol = w.abs() * 2f64.powi(-8)
                + r.magnitude[i] * (r.k as f64 + 5.0) * 2f64.powi(-24)
                + 1e-30;
            assert!(
                (g as f64 - w).abs() <= tol || (g.is_nan() && w.is_nan()),
                "{what}: bf16 out[{i}] = {g} vs {w}"
            );
        }
    } else {
        let st = r.check(got, 1.0);
        assert!(st.passed(), "{what}: {st:?}");
    }
}

/// Every problem as one function (`p0`, `p1`, ..) of one module, after `pre` when given.
pub(crate) fn problems_module<'s, S>(
    session: &'s Session,
    problems: &[(S, Problem)],
    pre: Option<&str>,
) -> melior::ir::Module<'s> {
    shaped_module(session, problems, pre, false)
}

/// The problems' module after `pipeline`, as text.
pub(crate) fn lowered_with<S>(
    session: &Session,
    problems: &[(S, Problem)],
    pipeline: &str,
) -> String {
    problems_module(session, problems, Some(pipeline))
        .as_operation()
        .to_string()
}

/// `pipeline` lowers each of the problems with a call of `intrinsic` (counted in the whole
/// module: at least one a problem).
fn calls_each<S>(session: &Session, problems: &[(S, Problem)], pipeline: &str, intrinsic: &str) {
    let text = lowered_with(session, problems, pipeline);
    let calls = text.matches(&format!("\"{intrinsic}\"")).count();
    assert!(
        calls >= problems.len(),
        "{calls} {intrinsic} for {} problems",
        problems.len()
    );
}

/// [`problems_module`], with every 2-D memref dynamic where `dynamic`.
fn shaped_module<'s, S>(
    session: &'s Session,
    problems: &[(S, Problem)],
    pre: Option<&str>,
    dynamic: bool,
) -> melior::ir::Module<'s> {
    let src: String = problems
        .iter()
        .enumerate()
        .map(|(i, (_, p))| {
            let src = source(&format!("p{i}"), p);
            if dynamic {
                dynamic_shapes(&src)
            } else {
                src
            }
        })
        .collect();
    let mut module = session.parse(&src).unwrap_or_else(|e| panic!("{e}"));
    if let Some(pre) = pre {
        session
            .run_pipeline(&mut module, pre)
            .unwrap_or_else(|e| panic!("{e}"));
    }
    module
}

/// Compile every problem as one function of one module, run each and check it against the
/// oracle; returns the results.
/// `pre`, when given, is a pipeline run on the lowp module before the CPU lowering (which
/// then finds no `lowp.scaled_matmul` left for `lowp-to-loops`).
pub(crate) fn run_and_check<S: AsRef<str>>(
    session: &Session,
    problems: &[(S, Problem)],
    pre: Option<&str>,
) -> Vec<Vec<f32>> {
    run_and_check_shaped(session, problems, pre, false)
}

/// [`run_and_check`], with every 2-D memref dynamic where `dynamic` (sizes from the
/// descriptors: the pass then picks a form by M at run time).
fn run_and_check_shaped<S: AsRef<str>>(
    session: &Session,
    problems: &[(S, Problem)],
    pre: Option<&str>,
    dynamic: bool,
) -> Vec<Vec<f32>> {
    let module = shaped_module(session, problems, pre, dynamic);
    // An emulated GPU kernel (`emulate=true`) at -O0: what it checks is the kernel's logic,
    // not the host code LLVM makes of it, and its blocks are large (the fold test's module,
    // three stage loops per op, took LLVM -O2 300 s against 30 s).
    let opt = if pre.is_some_and(|p| p.contains("emulate=true")) {
        0
    } else {
        2
    };
    let jit = session
        .compile_cpu(module, opt)
        .unwrap_or_else(|e| panic!("{e}"));
    problems
        .iter()
        .enumerate()
        .map(|(i, (what, p))| {
            let got = run(&jit, &format!("p{i}"), p);
            check(what.as_ref(), p, &got);
            got
        })
        .collect()
}

#[test]
fn every_format_and_layout_matches_the_oracle() {
    format_layout_cases(&Session::new(), None);
}

/// lowp-to-parallel-loops (the GPU-mappable form), run on the CPU through OpenMP threads:
/// the same problems, the same oracle.
#[test]
fn parallel_loops_form_matches_the_oracle() {
    let session = Session::new();
    let pre = Some("builtin.module(func.func(lowp-to-parallel-loops))");
    format_layout_cases(&session, pre);
    mixed_cases(&session, pre);
}

pub(crate) fn format_layout_cases(session: &Session, pre: Option<&str>) {
    let mut rng = SplitMix64::new(77);
    let mut formats = ScaledFormat::NAMED.to_vec();
    formats.extend([
        ScaledFormat::custom(3, 0),
        ScaledFormat::custom(2, 2),
        ScaledFormat::custom(3, 4),
    ]);
    let layouts = lowp_tests::MATMUL_LAYOUTS;
    // M not a multiple of 6, N not of 16, K not of the blocks; two K blocks of the CPU
    // kernels (256 + 44: B's panels are decoded a block at a time).
    let (m, n, k) = (13, 21, 300);
    let mut problems = Vec::new();
    for (fi, &fa) in formats.iter().enumerate() {
        for &la in &layouts {
            let fb = formats[(fi + 4) % formats.len()];
            let lb = match la {
                ScaleLayout::Blockwise { .. } => ScaleLayout::Blockwise {
                    rows: 128,
                    cols: 128,
                },
                other => other,
            };
            if !valid_pair(fa, la) || !valid_pair(fb, lb) {
                continue;
            }
            let packed = fa.bit_width() == 4;
            let a = operand(&mut rng, m, k, fa, la, packed);
            let b = operand(&mut rng, n, k, fb, lb, false);
            let bias = (problems.len() % 2 == 0).then(|| rng.normal_vec(n));
            problems.push((
                format!("{fa} {la} x {fb} {lb}"),
                Problem {
                    a,
                    b,
                    bias,
                    bf16: false,
                },
            ));
        }
    }
    run_and_check(session, &problems, pre);
    assert!(problems.len() >= 36, "{} problems", problems.len());
}

#[test]
fn mixed_layouts_edge_sizes_bf16_and_specials() {
    // Both tiles: 6x16 (8 lanes) and 12x32 (16 lanes, split into two ymm halves by LLVM on
    // hosts without AVX-512), on threads and on one.
    for (lanes, threads) in [(8, true), (16, true), (8, false)] {
        let mut session = Session::new();
        session.set_lanes(lanes);
        session.set_threads(threads);
        mixed_cases(&session, None);
    }
}

/// A mixed-format case: its name, M, N, K, A's format and layout, B's, and whether C is
/// bf16.
type MixedCase = (
    &'static str,
    usize,
    usize,
    usize,
    ScaledFormat,
    ScaleLayout,
    ScaledFormat,
    ScaleLayout,
    bool,
);

pub(crate) fn mixed_cases(session: &Session, pre: Option<&str>) {
    let mut rng = SplitMix64::new(5);
    let f4 = ScaledFormat::F4E2M1;
    let e4 = ScaledFormat::F8E4M3;
    let cases: Vec<MixedCase> = vec![
        (
            "per_tensor x mx",
            7,
            9,
            96,
            e4,
            ScaleLayout::PerTensor,
            f4,
            ScaleLayout::MX,
            false,
        ),
        (
            "mx32 x nvfp4/16",
            6,
            16,
            64,
            f4,
            ScaleLayout::MX,
            f4,
            ScaleLayout::NVFP4,
            false,
        ),
        (
            "M=1",
            1,
            33,
            130,
            e4,
            ScaleLayout::Mx { block: 32 },
            ScaledFormat::F8E5M2,
            ScaleLayout::Mx { block: 32 },
            false,
        ),
        (
            "N=1",
            17,
            1,
            70,
            ScaledFormat::F6E2M3,
            ScaleLayout::MX,
            ScaledFormat::F6E3M2,
            ScaleLayout::MX,
            false,
        ),
        (
            "K=1",
            5,
            4,
            1,
            e4,
            ScaleLayout::PerChannel,
            e4,
            ScaleLayout::PerTensor,
            false,
        ),
        (
            "blockwise 2x64 x 16x32",
            9,
            40,
            192,
            e4,
            ScaleLayout::Blockwise { rows: 2, cols: 64 },
            e4,
            ScaleLayout::Blockwise { rows: 16, cols: 32 },
            false,
        ),
        (
            "bf16 result",
            12,
            32,
            128,
            f4,
            ScaleLayout::MX,
            f4,
            ScaleLayout::MX,
            true,
        ),
        // M past the skinny bound (252 rows: the row tiles in parallel rather than B's
        // panels), several K blocks.
        (
            "many rows, mx",
            260,
            20,
            300,
            e4,
            ScaleLayout::MX,
            ScaledFormat::F8E5M2,
            ScaleLayout::MX,
            false,
        ),
        (
            "many rows, per_tensor x per_channel",
            300,
            9,
            520,
            ScaledFormat::F6E3M2,
            ScaleLayout::PerTensor,
            e4,
            ScaleLayout::PerChannel,
            false,
        ),
        (
            "fnuz per channel",
            8,
            8,
            48,
            ScaledFormat::F8E4M3Fnuz,
            ScaleLayout::PerChannel,
            ScaledFormat::F8E5M2Fnuz,
            ScaleLayout::PerChannel,
            false,
        ),
    ];
    let mut problems = Vec::new();
    for (what, m, n, k, fa, la, fb, lb, bf16) in cases {
        let packed = fa.bit_width() == 4 && k % 2 == 0;
        let a = operand(&mut rng, m, k, fa, la, packed);
        let b = operand(&mut rng, n, k, fb, lb, false);
        problems.push((
            what,
            Problem {
                a,
                b,
                bias: Some(rng.normal_vec(n)),
                bf16,
            },
        ));
    }
    // NaN and inf operands: E5M2 inf codes and an E4M3 NaN code propagate as in the oracle.
    let mut a = operand(
        &mut rng,
        6,
        32,
        ScaledFormat::F8E5M2,
        ScaleLayout::PerTensor,
        false,
    );
    a.q.codes[0] = 0x7C; // +inf
    a.q.codes[40] = 0x7F; // NaN
    let mut b = operand(
        &mut rng,
        5,
        32,
        ScaledFormat::F8E5M2,
        ScaleLayout::PerTensor,
        false,
    );
    b.q.codes[32] = 0x00; // zero in row 1 column 0: inf * 0 = NaN
    problems.push((
        "nan/inf",
        Problem {
            a,
            b,
            bias: None,
            bf16: false,
        },
    ));

    let results = run_and_check(session, &problems, pre);
    for ((what, _), got) in problems.iter().zip(&results) {
        if *what == "nan/inf" {
            assert!(got[0].is_infinite() || got[0].is_nan());
            assert!(got[1].is_nan(), "inf * 0 is NaN: {}", got[1]);
            assert!(
                got[5..10].iter().all(|v| v.is_nan()),
                "row 1 holds a NaN code"
            );
        }
    }
}

/// The f32 kernel on bf16 pairs (`bf16-dot=true`: x86 `vdpbf16ps`) against the oracle:
/// FP8 (OCP and FNUZ), FP6 E3M2, and the byte kernel's formats forced onto it (`dot=f32`),
/// on every layout, with the largest codes, -0, NaN / inf codes and a NaN block scale, K
/// odd where the layout allows (the last pair's high halves zero) and ragged MX blocks;
/// where no bf16 or product would be a normal number the f32 FMAs run instead.
#[test]
fn bf16_pairs_match_the_oracle() {
    let mut rng = SplitMix64::new(23);
    let formats = [
        ScaledFormat::F8E4M3,
        ScaledFormat::F8E5M2,
        ScaledFormat::F8E4M3Fnuz,
        ScaledFormat::F6E3M2,
        ScaledFormat::F4E2M1,
        ScaledFormat::F8E5M2Fnuz,
    ];
    let mut problems = Vec::new();
    for (fi, &fa) in formats.iter().enumerate() {
        for (li, &la) in lowp_tests::MATMUL_LAYOUTS.iter().enumerate() {
            let fb = formats[(fi + li) % formats.len()];
            if !valid_pair(fa, la) || !valid_pair(fb, la) {
                continue;
            }
            let k = match la {
                ScaleLayout::PerTensor | ScaleLayout::PerChannel => 203,
                ScaleLayout::Mx { .. } => 200,
                _ => 208,
            };
            // 29 rows: the row tiles at 8 lanes (the narrow form takes 13-16).
            let (m, n) = (29, 37);
            // An infinity in row 0 and a NaN in row 1 (their rows' outputs only); the
            // largest codes, -0 and the smallest in every row.
            let data: Vec<f32> = (0..m * k)
                .map(|i| match (i / k, i % k, i % 29) {
                    (0, 5, _) => f32::INFINITY,
                    (1, 7, _) => f32::NAN,
                    (_, _, 0) => fa.max_finite(),
                    (_, _, 1) => -fa.max_finite(),
                    (_, _, 2) => -0.0,
                    (_, _, 3) => fa.min_positive(),
                    _ => rng.normal() * (1.0 + (i % 7) as f32),
                })
                .collect();
            let mut a = operand_of(&data, m, k, fa, la, false);
            let b = operand(&mut rng, n, k, fb, la, false);
            if la.scale_dtype() == lowp_formats::ScaleDtype::UE8M0 {
                a.q.scales.values[1] = f32::NAN;
            }
            problems.push((
                format!("{fa} x {fb} {la}"),
                Problem {
                    a,
                    b,
                    bias: (li % 2 == 1).then(|| rng.normal_vec(n)),
                    bf16: false,
                },
            ));
        }
    }
    assert!(problems.len() >= 18, "{} problems", problems.len());
    // Every problem on bf16 pairs (whatever the host), and none with products below f32's
    // normal range (E3M0 with bias 66: 2^-130).
    let session = Session::new();
    for (lanes, call) in [
        (8, "llvm.x86.avx512bf16.dpbf16ps.256"),
        (16, "llvm.x86.avx512bf16.dpbf16ps.512"),
    ] {
        let pipeline = format!(
            "builtin.module(func.func(lowp-to-loops{{dot=f32 bf16-dot=true lanes={lanes} \
             narrow=false}}))"
        );
        calls_each(&session, &problems, &pipeline, call);
    }
    let tiny: ScaledFormat = "f4e3m0b66".parse().expect("a custom format");
    let tiny_problem = [(
        "e3m0 bias 66".to_string(),
        Problem {
            a: operand(&mut rng, 5, 64, tiny, ScaleLayout::PerTensor, false),
            b: operand(&mut rng, 40, 64, tiny, ScaleLayout::PerTensor, false),
            bias: None,
            bf16: false,
        },
    )];
    let text = lowered_with(
        &session,
        &tiny_problem,
        "builtin.module(func.func(lowp-to-loops{dot=f32 bf16-dot=true gemv=false narrow=false}))",
    );
    assert!(!text.contains("dpbf16ps"), "{text}");
    assert!(text.contains("vector.fma"), "{text}");

    if !lowp_jit::host_bf16_dot(8) {
        eprintln!("no AVX512-BF16 with AVX512VL on this host: bf16-dot cannot run here");
        return;
    }
    let mut session = Session::new();
    session.set_lanes(8);
    session.set_dot(Some(lowp_jit::Dot::F32));
    session.set_bf16_dot(Some(true));
    run_and_check(&session, &problems, None);
    run_and_check(&session, &tiny_problem, None);
}

/// Formats whose integers are small enough for a byte but whose products would saturate
/// `pmaddubsw`'s i16 pair sums (E2M4: `n / 16`, `|n| <= 124`) take the byte kernel only
/// with `dot=vnni` (`vpdpbusd` sums each step into i32), and it gives the f32 kernel's
/// bits there too, with the largest values, NaN scales and ragged K.
#[test]
fn vnni_takes_the_formats_pmaddubsw_would_saturate() {
    let e2m4 = ScaledFormat::custom(2, 4);
    let mut rng = SplitMix64::new(17);
    let mut problems = Vec::new();
    for la in [
        ScaleLayout::PerTensor,
        ScaleLayout::PerChannel,
        ScaleLayout::MX,
    ] {
        assert!(!lowp_passes::to_loops::takes_byte_dot(
            e2m4, e2m4, la, la, false
        ));
        assert!(lowp_passes::to_loops::takes_byte_dot(
            e2m4, e2m4, la, la, true
        ));
        let k = if la == ScaleLayout::MX { 224 } else { 203 };
        let (mut a, b) = (
            operand(&mut rng, 37, k, e2m4, la, false),
            operand(&mut rng, 45, k, e2m4, la, false),
        );
        // The largest magnitude (code 0x3F: 124 / 16) along a whole row of A: the widest
        // sums.
        for c in &mut a.q.codes[..k] {
            *c = 0x3F;
        }
        problems.push((
            format!("e2m4 {la}"),
            Problem {
                a,
                b,
                bias: None,
                bf16: false,
            },
        ));
    }
    let session = Session::new();
    calls_each(
        &session,
        &problems,
        "builtin.module(func.func(lowp-to-loops{dot=vnni lanes=16}))",
        "llvm.x86.avx512.vpdpbusd.512",
    );
    if !lowp_jit::host_byte_dot(lowp_jit::Dot::Vnni, 8) {
        eprintln!("no AVX512-VNNI with AVX512VL on this host: dot=vnni cannot run here");
        return;
    }
    let by_dot: Vec<Vec<Vec<f32>>> = [lowp_jit::Dot::F32, lowp_jit::Dot::Vnni]
        .into_iter()
        .map(|dot| {
            let mut session = Session::new();
            session.set_lanes(8);
            session.set_dot(Some(dot));
            run_and_check(&session, &problems, None)
        })
        .collect();
    for (i, (what, _)) in problems.iter().enumerate() {
        same_bits(
            &by_dot[0][i],
            &by_dot[1][i],
            &format!("{what}, f32 kernel against dot=vnni"),
        );
    }
}

/// The byte kernel (`dot=i8`: x86 `pmaddubsw` on the formats' integers; `dot=vnni`:
/// `vpdpbusd`, where the host has it) computes every interval's sum exactly, as the f32
/// kernel does for these formats (their partial sums are integers times a power of two
/// below 2^24), and scales it into the result the same way: where their intervals are the
/// same (scale segments; per-tensor K below both K blocks) the kernels agree bit for bit,
/// NaN scales, ±0 codes, the largest values and ragged sizes included, and all agree with
/// the oracle.
#[test]
fn byte_kernel_is_the_f32_kernel_bit_for_bit() {
    if !lowp_jit::host_byte_dot(lowp_jit::Dot::I8, 8) {
        eprintln!("no AVX2 on this host: the byte kernel cannot run here");
        return;
    }
    let mut rng = SplitMix64::new(11);
    let formats = [
        ScaledFormat::F4E2M1,
        ScaledFormat::F6E2M3,
        ScaledFormat::custom(3, 0),
        ScaledFormat::custom(2, 2),
    ];
    let mut problems = Vec::new();
    for (fi, &fa) in formats.iter().enumerate() {
        for (li, &la) in lowp_tests::MATMUL_LAYOUTS.iter().enumerate() {
            let fb = formats[(fi + li) % formats.len()];
            if !valid_pair(fa, la) || !valid_pair(fb, la) {
                continue;
            }
            assert!(
                lowp_passes::to_loops::takes_byte_dot(fa, fb, la, la, false)
                    && lowp_passes::to_loops::takes_byte_dot(fa, fb, la, la, true),
                "{fa} {fb} {la}"
            );
            // K not a multiple of 4 where the layout allows it (packed FP4 needs it even;
            // MX and NVFP4 blocks are whole here and ragged in the mixed test).
            let k = match la {
                ScaleLayout::PerTensor | ScaleLayout::PerChannel => 203,
                _ => 200,
            };
            let packed = fa.bit_width() == 4 && k % 2 == 0;
            let (m, n) = (13, 21);
            // The largest codes, both zeros and specials in the data.
            let data: Vec<f32> = (0..m * k)
                .map(|i| match i % 23 {
                    0 => fa.max_finite(),
                    1 => -fa.max_finite(),
                    2 => -0.0,
                    _ => rng.normal() * (1.0 + (i % 7) as f32),
                })
                .collect();
            let mut a = operand_of(&data, m, k, fa, la, packed);
            // B packed too where it can be (its words decode 32 codes from 16 bytes).
            let b = operand(
                &mut rng,
                n,
                k,
                fb,
                la,
                fb.bit_width() == 4 && k % 2 == 0 && fi % 2 == 0,
            );
            if la.scale_dtype() == lowp_formats::ScaleDtype::UE8M0 {
                a.q.scales.values[1] = f32::NAN; // a NaN block scale: row 0's second block
            }
            problems.push((
                format!("{fa} x {fb} {la}"),
                Problem {
                    a,
                    b,
                    bias: (li % 2 == 0).then(|| rng.normal_vec(n)),
                    bf16: false,
                },
            ));
        }
    }
    // The byte kernel's i16 sums at their bound: per-tensor E2M1 runs 224 k an interval,
    // and these codes take a lane to 224 x 144 = 32256 in magnitude (the largest codes of
    // one sign in A, B's sign by k mod 4: each lane's own products and the other lane's
    // part of the offset term add up; or A's smallest codes and B's largest: the offset
    // term alone).
    let e2m1 = ScaledFormat::F4E2M1;
    let k = 500;
    for (what, sa, by_lane) in [("lanes", 6.0f32, true), ("offset", -6.0, false)] {
        let a = vec![sa; 7 * k];
        let b: Vec<f32> = (0..9 * k)
            .map(|i| {
                if by_lane && (i % k) % 4 >= 2 {
                    -6.0
                } else {
                    6.0
                }
            })
            .collect();
        problems.push((
            format!("e2m1 per_tensor at the i16 bound ({what})"),
            Problem {
                a: operand_of(&a, 7, k, e2m1, ScaleLayout::PerTensor, true),
                b: operand_of(&b, 9, k, e2m1, ScaleLayout::PerTensor, false),
                bias: None,
                bf16: false,
            },
        ));
    }
    assert!(problems.len() >= 14, "{} problems", problems.len());

    // The i8 lowering did take the byte kernel for every problem.
    let session = Session::new();
    calls_each(
        &session,
        &problems,
        "builtin.module(func.func(lowp-to-loops{dot=i8}))",
        "llvm.x86.avx2.pmadd.ub.sw",
    );
    // dot=vnni: every problem's sums by vpdpbusd.
    calls_each(
        &session,
        &problems,
        "builtin.module(func.func(lowp-to-loops{dot=vnni}))",
        "llvm.x86.avx512.vpdpbusd.256",
    );

    let mut nan_rows = 0;
    let mut dots = vec![lowp_jit::Dot::F32, lowp_jit::Dot::I8];
    if lowp_jit::host_byte_dot(lowp_jit::Dot::Vnni, 8) {
        dots.push(lowp_jit::Dot::Vnni);
    } else {
        eprintln!("no AVX512-VNNI with AVX512VL on this host: dot=vnni cannot run here");
    }
    let mut by_dot = Vec::new();
    for &dot in &dots {
        let mut session = Session::new();
        session.set_lanes(8);
        session.set_dot(Some(dot));
        by_dot.push(run_and_check(&session, &problems, None));
    }
    for (i, (what, _)) in problems.iter().enumerate() {
        let (f, b) = (&by_dot[0][i], &by_dot[1][i]);
        for (d, other) in dots.iter().zip(&by_dot).skip(1) {
            same_bits(
                f,
                &other[i],
                &format!("{what}, f32 kernel against dot={}", d.name()),
            );
        }
        if problems[i]
            .1
            .a
            .q
            .scales
            .values
            .get(1)
            .is_some_and(|s| s.is_nan())
        {
            assert!(
                b[..21].iter().all(|v| v.is_nan()),
                "{what}: the NaN scale's row"
            );
            nan_rows += 1;
        }
    }
    assert!(nan_rows >= 3, "{nan_rows} problems with a NaN scale");

    // 16 lanes, row tiles at any M: MX's and NVFP4's are 6 x 32 there, their sums carried in
    // registers through a K block's segments (`carrying_sums`), where 8 lanes fold 6 x 16
    // tiles into memory after each segment; per tensor and per channel 12 x 32. The f32
    // kernel (FMAs) and the byte kernels give the 8-lane f32 kernel's bits.
    if lowp_jit::host_lanes() == 16 {
        let mut wide = vec![(lowp_jit::Dot::F32, "f32")];
        for (dot, name) in [(lowp_jit::Dot::I8, "i8"), (lowp_jit::Dot::Vnni, "vnni")] {
            if lowp_jit::host_byte_dot(dot, 16) {
                wide.push((dot, name));
            }
        }
        for (dot, name) in wide {
            let mut session = Session::new();
            session.set_lanes(16);
            session.set_dot(Some(dot));
            session.set_bf16_dot(Some(false));
            session.set_small_m_forms(false, false);
            let got = run_and_check(&session, &problems, None);
            for (i, (what, _)) in problems.iter().enumerate() {
                same_bits(
                    &by_dot[0][i],
                    &got[i],
                    &format!("{what}, 8-lane f32 kernel against 16-lane dot={name}"),
                );
            }
        }
    } else {
        eprintln!("no AVX-512 on this host: the 16-lane tiles cannot run here");
    }

    // The same functions with every 2-D memref dynamic (sizes from the descriptors): the
    // byte kernel's same bits.
    let src: String = problems
        .iter()
        .enumerate()
        .map(|(i, (_, p))| dynamic_shapes(&source(&format!("p{i}"), p)))
        .collect();
    assert!(src.contains("memref<?x?xf4E2M1FN>"), "{src}");
    let mut session = Session::new();
    session.set_lanes(8);
    session.set_dot(Some(lowp_jit::Dot::I8));
    let module = session.parse(&src).unwrap_or_else(|e| panic!("{e}"));
    let jit = session
        .compile_cpu(module, 2)
        .unwrap_or_else(|e| panic!("{e}"));
    for (i, (what, p)) in problems.iter().enumerate() {
        let got = run(&jit, &format!("p{i}"), p);
        check(what, p, &got);
        same_bits(
            &got,
            &by_dot[1][i],
            &format!("{what}, dynamic shapes against static"),
        );
    }

    // K blocks that are not whole words (kc=10: per-tensor intervals of 8 k, MX blocks of
    // 32), against the oracle.
    let session = Session::new();
    run_and_check(
        &session,
        &problems,
        Some("builtin.module(func.func(lowp-to-loops{dot=i8 kc=10 nc=40}))"),
    );
}

/// B's decode routes in the f32 kernel (eight rows of a panel at a time: by bit arithmetic,
/// `decode=bits`, or through f16 patterns, `decode=f16`, where lowp-formats' `f16_fields`
/// allows; the table for the rows past B and the last k of a chunk) give the same values:
/// every code of every format, NaN and inf codes included, in B, packed FP4 too, and the
/// results of the two routes agree bit for bit and with the oracle.
#[test]
fn b_decode_routes_agree_bit_for_bit() {
    let mut rng = SplitMix64::new(23);
    let mut formats = ScaledFormat::NAMED.to_vec();
    formats.extend([
        ScaledFormat::custom(3, 0),
        ScaledFormat::custom(3, 4),
        ScaledFormat::custom(4, 3),
        // Exponent fields f16 cannot hold as normal ones: bit arithmetic under both.
        ScaledFormat::custom(5, 1),
        ScaledFormat::custom(6, 1),
        ScaledFormat::custom(7, 0),
    ]);
    // N = 40: rows 32..39 are the last whole group of eight, 40..47 past B; K = 300: four
    // chunks of 64 whole, then 44 (two steps of 16 and 12 k one at a time, or five of 8
    // and 4).
    let (m, n, k) = (9, 40, 300);
    let mut problems = Vec::new();
    for &fb in &formats {
        let la = ScaleLayout::PerTensor;
        if !valid_pair(fb, la) {
            continue;
        }
        for packed in [false, true] {
            if packed && fb.bit_width() != 4 {
                continue;
            }
            let a = operand(&mut rng, m, k, ScaledFormat::F8E4M3, la, false);
            let mut b = operand(&mut rng, n, k, fb, la, packed);
            // Every code in order (row 3 and row 35, in the vector groups); elsewhere the
            // finite codes only, so that most results are finite.
            let count = fb.code_count();
            let finite: Vec<u8> = (0..count)
                .map(|c| c as u8)
                .filter(|&c| fb.decode(c).is_finite())
                .collect();
            let code = |r: usize, x: usize| -> u8 {
                if r % 32 == 3 {
                    ((x * 37 + r) % count as usize) as u8
                } else {
                    finite[(x * 11 + r * 7) % finite.len()]
                }
            };
            let row_bytes = if packed { k.div_ceil(2) } else { k };
            for r in 0..n {
                for x in 0..row_bytes {
                    b.q.codes[r * row_bytes + x] = if packed {
                        code(r, 2 * x) | (code(r, 2 * x + 1) << 4)
                    } else {
                        code(r, x)
                    };
                }
            }
            problems.push((
                format!(
                    "{fb}{} per_tensor as B",
                    if packed { " packed" } else { "" }
                ),
                Problem {
                    a,
                    b,
                    bias: None,
                    bf16: false,
                },
            ));
        }
    }
    assert!(problems.len() >= 14, "{} problems", problems.len());
    let mut routes = vec![lowp_jit::Decode::Bits];
    if lowp_jit::host_f16() {
        routes.push(lowp_jit::Decode::F16);
    } else {
        eprintln!("no f16 -> f32 instruction on this host: decode=f16 cannot run here");
    }
    let by_route: Vec<Vec<Vec<f32>>> = routes
        .iter()
        .map(|&decode| {
            let mut session = Session::new();
            session.set_lanes(8);
            session.set_dot(Some(lowp_jit::Dot::F32));
            session.set_decode(Some(decode));
            run_and_check(&session, &problems, None)
        })
        .collect();
    for (i, (what, _)) in problems.iter().enumerate() {
        let bits = &by_route[0][i];
        for other in &by_route[1..] {
            same_bits(
                bits,
                &other[i],
                &format!("{what}, decode=bits against decode=f16"),
            );
        }
    }
}

/// Problems of `m` rows for the forms of few rows (narrow, GEMV), for each `m` of `ms`:
/// seven pairs of formats and layouts (every layout, packed FP4, FNUZ), N past a strip or a
/// group of B's rows (45), K past a block, a step and a segment (300), row 3 of B every
/// code of its format in turn, A's NaN / max codes in its last row, bias and bf16.
fn few_row_cases(ms: &[usize], rng: &mut SplitMix64) -> Vec<(String, Problem)> {
    let (e4, e5, f4) = (
        ScaledFormat::F8E4M3,
        ScaledFormat::F8E5M2,
        ScaledFormat::F4E2M1,
    );
    let pairs = [
        (e4, ScaleLayout::PerTensor, e4, ScaleLayout::PerTensor),
        (e4, ScaleLayout::MX, e5, ScaleLayout::MX),
        (f4, ScaleLayout::NVFP4, f4, ScaleLayout::NVFP4),
        (
            ScaledFormat::F6E3M2,
            ScaleLayout::PerChannel,
            ScaledFormat::custom(3, 4),
            ScaleLayout::PerTensor,
        ),
        (
            e5,
            ScaleLayout::Blockwise { rows: 1, cols: 128 },
            e4,
            ScaleLayout::Blockwise {
                rows: 128,
                cols: 128,
            },
        ),
        (
            ScaledFormat::custom(3, 0),
            ScaleLayout::MX,
            ScaledFormat::F8E4M3,
            ScaleLayout::MX,
        ),
        (
            e4,
            ScaleLayout::PerTensor,
            ScaledFormat::F8E5M2Fnuz,
            ScaleLayout::PerChannel,
        ),
    ];
    let (n, k) = (45, 300);
    let mut problems = Vec::new();
    for &m in ms {
        for (i, &(fa, la, fb, lb)) in pairs.iter().enumerate() {
            let mut a = operand(rng, m, k, fa, la, fa.bit_width() == 4);
            let mut b = operand(rng, n, k, fb, lb, false);
            // Row 3 of B holds every code in turn (NaN and inf where the format has
            // them); the first pair also puts A's NaN / inf codes in its last row.
            let count = fb.code_count();
            for x in 0..k {
                b.q.codes[3 * k + x] = ((x * 37) % count as usize) as u8;
            }
            if i == 0 {
                a.q.codes[(m - 1) * k] = 0x7F; // NaN
                a.q.codes[(m - 1) * k + 1] = 0x7E; // max
            }
            // E8M0 scales beyond the GEMV form's fold (2^-32 ..= 2^32): one of B's (its
            // group of rows computed segment by segment), and in the other MX pair one of
            // A's (all of it).
            let blocks = k.div_ceil(32);
            if i == 1 {
                b.q.scales.values[5 * blocks + 1] = 2f32.powi(40);
            }
            if i == 5 {
                a.q.scales.values[(m - 1) * blocks] = 2f32.powi(-50);
            }
            problems.push((
                format!("M={m} {fa} {la} x {fb} {lb}"),
                Problem {
                    a,
                    b,
                    bias: (i % 2 == 0).then(|| rng.normal_vec(n)),
                    bf16: i == 3,
                },
            ));
        }
    }
    problems
}

/// The f32 kernel's narrow form (M of at most two vectors, fewer rows of FMAs than the row
/// tiles: A's rows the vectors, B's columns broadcast, B decoded along K untransposed)
/// gives the row-tile form's bits (`narrow=false`): both tiles (8 lanes: M = 7 one vector
/// of 12 columns, 13 and 16 two of 6; 16 lanes, in two ymm halves here: M = 14 one vector
/// of 24 columns, 28 two of 12), both decodes of B, every layout, packed FP4,
/// NaN / max codes in A and every code of B's format in one of its rows, N past a strip
/// (45), K past a block (300), bias and bf16 (`few_row_cases`); and both agree with the
/// oracle.
#[test]
fn narrow_form_is_the_row_tile_form_bit_for_bit() {
    let mut rng = SplitMix64::new(41);
    let cases = few_row_cases;
    let mut runs = vec![(8, "bits", cases(&[7, 13], &mut rng))];
    if lowp_jit::host_f16() {
        runs.push((8, "f16", cases(&[16], &mut rng)));
    }
    runs.push((16, "bits", cases(&[14, 28], &mut rng)));
    for (lanes, decode, problems) in runs {
        let session = Session::new();
        let form = |narrow: bool| {
            format!(
                "builtin.module(func.func(lowp-to-loops{{dot=f32 lanes={lanes} \
                 decode={decode} narrow={narrow} gemv=false}}))"
            )
        };
        let narrow = run_and_check(&session, &problems, Some(&form(true)));
        let tiles = run_and_check(&session, &problems, Some(&form(false)));
        // M known only at run time: the same form under its branch.
        let dynamic = run_and_check_shaped(&session, &problems, Some(&form(true)), true);
        for (i, (what, _)) in problems.iter().enumerate() {
            same_bits(
                &narrow[i],
                &tiles[i],
                &format!("{what}, lanes={lanes} decode={decode}: narrow against row tiles"),
            );
            same_bits(&narrow[i], &dynamic[i], &format!("{what}, dynamic M"));
        }
    }
}

/// The f32 kernel's GEMV form (M of at most 3, or 8 where scale blocks are long or MX
/// scales fold into the decoded values: each output a dot product along K, B's rows
/// decoded into registers) agrees with the oracle: M = 1-6 and 8, both vector widths, both
/// decodes of B, on `few_row_cases` (K = 300: a segment or K block's last k short of a
/// step one at a time; N = 45: the last group of B's rows past B; MX scales beyond the
/// fold's range in A and in one group of B: those computed segment by segment).
#[test]
fn gemv_form_matches_the_oracle() {
    let mut rng = SplitMix64::new(43);
    // Past 3 rows (B's rows decoded first; per-tensor, per-channel, 128-long blocks and
    // MX folded, NVFP4 takes the row tiles) up to 8.
    let mut runs = vec![(8, "bits", few_row_cases(&[1, 3, 8], &mut rng))];
    if lowp_jit::host_f16() {
        runs.push((8, "f16", few_row_cases(&[2, 5], &mut rng)));
    }
    runs.push((16, "f16", few_row_cases(&[1, 6], &mut rng)));
    runs.push((16, "bits", few_row_cases(&[3, 4], &mut rng)));
    for (lanes, decode, problems) in runs {
        if decode == "f16" && !lowp_jit::host_f16() {
            continue;
        }
        let pre = format!(
            "builtin.module(func.func(lowp-to-loops{{dot=f32 lanes={lanes} decode={decode}}}))"
        );
        let session = Session::new();
        // M known only at run time: the same form under its branch, a copy for each M, for
        // every other problem (each dynamic function carries all the copies).
        let (both, fixed): (Vec<_>, Vec<_>) = problems
            .into_iter()
            .enumerate()
            .partition(|(i, _)| i % 2 == 0);
        let unindexed = |v: Vec<(usize, _)>| v.into_iter().map(|(_, p)| p).collect::<Vec<_>>();
        let (both, fixed) = (unindexed(both), unindexed(fixed));
        run_and_check(&session, &fixed, Some(&pre));
        let gemv = run_and_check(&session, &both, Some(&pre));
        let dynamic = run_and_check_shaped(&session, &both, Some(&pre), true);
        for (i, (what, _)) in both.iter().enumerate() {
            same_bits(&gemv[i], &dynamic[i], &format!("{what}, dynamic M"));
        }
    }
}

/// The byte GEMV form (`dot_gemv.rs`: M of at most 24 at 16 lanes, 32 with no scales
/// along K; at 8 lanes 8 with MX / NVFP4 segments, 12 with 128-blocks, 16 with no scales
/// along K; on the byte kernel's integers: B's codes looked up as bytes, A's integers laid
/// out in B's order, `vpdpbusd` or `pmaddubsw` and `pmaddwd`) is the form taken and agrees
/// with the oracle: both vector widths, both instructions, every kind of scaling (MX and
/// NVFP4 segments inside a chunk, with B's scales loaded together or, where B's block is
/// not the segment, one by one; 128-long blocks of whole chunks; per-tensor and per-channel
/// intervals with no scales), packed and byte codes, K past whole groups of chunks and past
/// the last chunk, N past the last group of B's rows, every code of B's format in one of
/// its rows, the largest codes and -0 in A, NaN and extreme block scales, bias and bf16,
/// several K blocks, A's rows in pieces; dynamic M runs the same form under its branch, to
/// the same bits.
#[test]
fn byte_gemv_form_matches_the_oracle() {
    let mut rng = SplitMix64::new(47);
    let (f4, f6) = (ScaledFormat::F4E2M1, ScaledFormat::F6E2M3);
    let block = |block| ScaleLayout::Mx { block };
    let pairs = [
        (f4, ScaleLayout::MX, f4, ScaleLayout::MX),
        (f4, ScaleLayout::NVFP4_GLOBAL, f4, ScaleLayout::NVFP4),
        (f4, ScaleLayout::PerTensor, f4, ScaleLayout::PerTensor),
        (f6, ScaleLayout::PerChannel, f4, ScaleLayout::PerTensor),
        (f6, ScaleLayout::MX, f6, ScaleLayout::MX),
        (
            f6,
            ScaleLayout::Blockwise { rows: 1, cols: 128 },
            f4,
            ScaleLayout::Blockwise {
                rows: 128,
                cols: 128,
            },
        ),
        (ScaledFormat::custom(3, 0), ScaleLayout::MX, f4, block(64)),
        (f4, ScaleLayout::MX, f6, ScaleLayout::PerChannel),
    ];
    // 16 lanes, packed: chunks of 128 k, MX's B scales four chunks a load; K = 1440 is
    // two such groups, three chunks and 32 k (8 lanes: five groups, two chunks, 32 k).
    // Several K blocks (A's values of a block in L1): MXFP4 at M = 8 and K = 8200 (two
    // blocks of 32 chunks and 8 k), 16 rows without scales along K and 12 with 128-blocks
    // at K = 4100. A's rows in pieces (16 lanes): 16 and 13 rows without scales along K,
    // 12 and 16 with 128-blocks, 16 MX. MXFP4 at M = 9 and K = 8200: the K blocks of 10
    // rows (24 chunks; 9 rows' own 28), the rows a run-time M's copy computes. Past 16
    // rows (32 and 23 without scales along K, 23 MX): B's bytes of a K block staged once,
    // A's rows in pieces, those of one size a loop.
    let problems = gemv_problems(&mut rng, &pairs, |i| {
        let mut sizes = vec![(1, 1440), (3, 1440), (8, 1440)];
        match i {
            0 => sizes.extend([(8, 8200), (16, 1440), (9, 8200), (23, 1440)]),
            2 => sizes.extend([(16, 4100), (32, 1440)]),
            3 => sizes.extend([(16, 4100), (13, 1440), (23, 1440)]),
            5 => sizes.extend([(12, 4100), (16, 1440)]),
            _ => {}
        }
        sizes
    });
    // E2M4 x E2M4 (pmaddubsw would saturate): vnni only.
    let e2m4 = ScaledFormat::custom(2, 4);
    let e2m4_problem = (
        "M=2 e2m4 mx x e2m4 mx".to_string(),
        Problem {
            a: operand(&mut rng, 2, 1000, e2m4, ScaleLayout::MX, false),
            b: operand(&mut rng, 21, 1000, e2m4, ScaleLayout::MX, false),
            bias: None,
            bf16: false,
        },
    );
    for (dot, lanes) in [("vnni", 16), ("vnni", 8), ("i8", 16), ("i8", 8)] {
        let d = if dot == "vnni" {
            lowp_jit::Dot::Vnni
        } else {
            lowp_jit::Dot::I8
        };
        let options = format!("dot={dot} lanes={lanes}");
        // At 8 lanes the form takes 8 rows with MX / NVFP4 segments, 12 with 128-blocks.
        let takes = |p: &Problem| {
            let (la, lb) = (p.a.q.layout, p.b.q.layout);
            let along_k = |l| !matches!(l, ScaleLayout::PerTensor | ScaleLayout::PerChannel);
            let blockwise = |l| matches!(l, ScaleLayout::Blockwise { .. });
            let most = if !(along_k(la) || along_k(lb)) {
                if lanes == 16 {
                    32
                } else {
                    16
                }
            } else if lanes == 16 {
                24
            } else if [la, lb].iter().all(|&l| blockwise(l) || !along_k(l)) {
                12
            } else {
                8
            };
            p.a.q.rows <= most
        };
        for (what, p) in &problems {
            let taken = taken_for(p, &options);
            let form = if takes(p) { "gemv" } else { "tiles" };
            assert_eq!(taken, format!("dot={dot} form={form}"), "{what}, {options}");
        }
        if !lowp_jit::host_byte_dot(d, lanes) {
            eprintln!("no {dot} with {lanes} lanes on this host: the form cannot run here");
            continue;
        }
        let mut cases: Vec<_> = problems
            .iter()
            .filter(|(_, p)| takes(p))
            .map(|(w, p)| (w.clone(), p.clone()))
            .collect();
        if dot == "vnni" {
            cases.push((e2m4_problem.0.clone(), e2m4_problem.1.clone()));
        }
        let pre = format!("builtin.module(func.func(lowp-to-loops{{{options}}}))");
        let session = Session::new();
        let fixed = run_and_check(&session, &cases, Some(&pre));
        // Every third problem, and those of odd M past 8, with their sizes known only at
        // run time (each dynamic function carries a copy of the form for each count of
        // rows it computes).
        if lanes == 16 {
            same_bits_every_third_dynamic(&session, &cases, &fixed, (&pre, &options));
        }
    }
}

/// The GEMV form on bf16 pairs (`dot_gemv.rs`, `Products::Bf16`: M of at most 8, 12, 16, 24
/// or 32 as for bytes, where the f32 kernel runs on bf16 pairs; B's codes looked up as bf16
/// patterns by `vpermi2w`, two k a lane of `vdpbf16ps`) is the form taken and agrees with
/// the oracle: both vector widths, every kind of scaling (MX and NVFP4 segments inside a
/// chunk, with B's scales loaded together or, where B's block is not the segment, one by
/// one; segments of whole chunks: MX at 8 lanes, 128-long blocks; per-tensor and
/// per-channel sums along all of K), tables of magnitudes with the sign moved in (OCP FP8,
/// FP6, FP4) and of whole codes (FNUZ, whose 0x80 is NaN), packed FP4 and custom formats on
/// it (`dot=f32`), K past the last chunk, N past the last group of B's rows, every code of
/// B's format in one of its rows (NaN and inf among them), the largest codes and -0 in A,
/// NaN and extreme block scales, bias and bf16, several K blocks, MX segments of one chunk
/// with their scale products 16 chunks at a time, A's rows in pieces (B's patterns of a K
/// block staged once where they take several, those of one size a loop); dynamic M runs the
/// same form under its branch, to the same bits.
#[test]
fn pair_gemv_form_matches_the_oracle() {
    let mut rng = SplitMix64::new(53);
    let (e4m3, e5m2, f4) = (
        ScaledFormat::F8E4M3,
        ScaledFormat::F8E5M2,
        ScaledFormat::F4E2M1,
    );
    let pairs = [
        (e4m3, ScaleLayout::MX, e4m3, ScaleLayout::MX),
        (e5m2, ScaleLayout::PerTensor, e4m3, ScaleLayout::PerTensor),
        (
            ScaledFormat::F8E4M3Fnuz,
            ScaleLayout::PerChannel,
            ScaledFormat::F8E5M2Fnuz,
            ScaleLayout::PerTensor,
        ),
        (
            ScaledFormat::F6E3M2,
            ScaleLayout::MX,
            e5m2,
            ScaleLayout::Mx { block: 64 },
        ),
        (f4, ScaleLayout::NVFP4_GLOBAL, f4, ScaleLayout::NVFP4),
        (
            e4m3,
            ScaleLayout::Blockwise { rows: 1, cols: 128 },
            e4m3,
            ScaleLayout::Blockwise {
                rows: 128,
                cols: 128,
            },
        ),
        (
            ScaledFormat::custom(3, 0),
            ScaleLayout::MX,
            ScaledFormat::F6E3M2,
            ScaleLayout::MX,
        ),
        (e4m3, ScaleLayout::MX, f4, ScaleLayout::PerChannel),
    ];
    // 16 lanes: chunks of 32 k, MX's B scales sixteen chunks a load; K = 1442 is two such
    // groups, thirteen chunks and 2 k (8 lanes: 90 chunks of 16 and 2 k). Several K blocks
    // (A's patterns of a block in L1): MXFP8 at M = 8 and K = 4130 (blocks of 64 chunks),
    // 16 rows without scales along K (blocks of 32) and 12 with 128-blocks (of 40). A's
    // rows in pieces (16 lanes): MXFP8 at 16 rows and K = 4130 (two pieces of 8, each
    // through the scale products of 16 chunks), 16 and 13 rows without scales along K,
    // 12 and 16 with 128-blocks. 13 rows at K = 4130: the K blocks of 14 rows (36 chunks,
    // 13 rows' own 39), the rows a run-time M's copy computes. Past 16 rows (32, 23 and 20
    // without scales along K, 21 MXFP8): B's patterns of a K block staged once, A's rows
    // in pieces, those of one size a loop.
    let problems = gemv_problems(&mut rng, &pairs, |i| {
        let mut sizes = vec![(1, 1442), (3, 1442), (8, 1442)];
        match i {
            0 => sizes.extend([(8, 4130), (16, 4130), (21, 1442)]),
            1 => sizes.extend([(16, 1442), (13, 1442), (13, 4130), (32, 1442), (23, 4130)]),
            2 => sizes.extend([(16, 1442), (20, 1442)]),
            5 => sizes.extend([(12, 1442), (16, 1442)]),
            _ => {}
        }
        sizes
    });
    // At 8 lanes the form takes B's formats of one lookup (32 patterns: FP4, FP6 E3M2)
    // only, the others the f32 forms.
    let one_lookup = |p: &Problem| [f4, ScaledFormat::F6E3M2].contains(&p.b.q.format);
    for lanes in [16, 8] {
        let options = format!("dot=f32 bf16-dot=true lanes={lanes}");
        for (what, p) in &problems {
            let taken = taken_for(p, &options);
            if lanes == 16 || one_lookup(p) {
                assert_eq!(
                    taken, "dot=bf16 decode=table form=gemv",
                    "{what}, {options}"
                );
            } else {
                assert!(
                    !taken.contains("decode=table"),
                    "{what}, {options}: {taken}"
                );
            }
        }
        if !lowp_jit::host_bf16_dot(lanes) {
            eprintln!("no bf16 pairs with {lanes} lanes on this host: the form cannot run here");
            continue;
        }
        let problems: Vec<_> = problems
            .iter()
            .filter(|(_, p)| lanes == 16 || one_lookup(p))
            .cloned()
            .collect();
        let pre = format!("builtin.module(func.func(lowp-to-loops{{{options}}}))");
        let session = Session::new();
        let fixed = run_and_check(&session, &problems, Some(&pre));
        if lanes == 16 {
            same_bits_every_third_dynamic(&session, &problems, &fixed, (&pre, &options));
        }
    }
}

/// MX's E8M0 scales folded into the GEMV form's bf16 patterns (`dot_gemv::pair_folds`: 4
/// rows or more, up to 32 as without scales along K): A's patterns of each chunk carry its
/// scale's exponent, B's each as they are looked up (staged or not), and the sums run along
/// the K block. Where a group's block of B has a scale outside the fold's range (2^-127 in
/// row 7, 2^100 in row 9) or A has one (a NaN in its last row, kept in every third
/// problem), those sums are made without the fold, pieces of A's rows at a time; B's
/// scales all 2^-47 (the range's least) fold. Against the oracle, and with M known only at
/// run time to the same bits.
#[test]
fn pair_gemv_folds_mx_scales() {
    let mut rng = SplitMix64::new(59);
    let mut problems = gemv_problems(&mut rng, &MX_FOLD_PAIRS, |i| match i {
        0 => vec![
            (4, 1442),
            (16, 4130),
            (32, 1442),
            (27, 4130),
            (9, 1442),
            (24, 1442),
        ],
        _ => vec![(8, 1442), (24, 4130), (5, 1442)],
    });
    for (x, (what, p)) in problems.iter_mut().enumerate() {
        if x % 3 != 2 {
            for v in p.a.q.scales.values.iter_mut().filter(|v| v.is_nan()) {
                *v = 0.5;
            }
            what.push_str(", A's scales finite");
        }
        if x == 3 {
            p.b.q.scales.values.fill(2f32.powi(-47));
            what.push_str(", B's scales all 2^-47");
        }
    }
    let options = "dot=f32 bf16-dot=true lanes=16";
    for (what, p) in &problems {
        let taken = taken_for(p, options);
        assert_eq!(taken, "dot=bf16 decode=table form=gemv", "{what}");
    }
    if !lowp_jit::host_bf16_dot(16) {
        eprintln!("no bf16 pairs with 16 lanes on this host: the form cannot run here");
        return;
    }
    let pre = format!("builtin.module(func.func(lowp-to-loops{{{options}}}))");
    let session = Session::new();
    let fixed = run_and_check(&session, &problems, Some(&pre));
    same_bits_every_third_dynamic(&session, &problems, &fixed, (&pre, options));
}

/// MX's E8M0 scales folded into the row tiles' bf16 pairs (`to_loops::tiles_fold`): past
/// the GEMV form's rows, where every scale of both operands is within `2^-47 ..= 2^32`,
/// each of A's patterns times its block's scale as its words are made, B's decoded values
/// times their columns' scales, and the sums run along each K block; else (a NaN scale in
/// A, B's 2^-127 and 2^100, or one scale of 2^-48) the copy that scales each segment's
/// sums. 12-row tiles and 6 at 16 lanes (FP6 with blocks of 64 beside 32), the skinny
/// sweep and, past 252 rows, the one over row tiles; against the oracle, with M known
/// only at run time to the same bits; and the two copies' sums differ in their roundings
/// (both ran).
#[test]
fn tiles_fold_mx_scales() {
    let mut rng = SplitMix64::new(61);
    let mut problems = gemv_problems(&mut rng, &MX_FOLD_PAIRS, |i| match i {
        0 => vec![(40, 1442), (77, 4130), (40, 1442), (260, 1442)],
        _ => vec![(53, 4130), (260, 1442), (33, 1442)],
    });
    // In range: 2^-47 and 2^32 fold, 2^-48 does not.
    let in_range = |v: f32| v.is_finite() && (2f32.powi(-47)..=2f32.powi(32)).contains(&v);
    for (x, (what, p)) in problems.iter_mut().enumerate() {
        let scales = [&mut p.a.q.scales.values, &mut p.b.q.scales.values];
        match x {
            2 => what.push_str(", as made: A's NaN, B's 2^-127 and 2^100"),
            1 => {
                scales[0].fill(2f32.powi(32));
                scales[1].fill(2f32.powi(-47));
                what.push_str(", A's scales all 2^32, B's 2^-47");
            }
            _ => {
                for v in scales.into_iter().flatten().filter(|v| !in_range(**v)) {
                    *v = 0.5;
                }
                what.push_str(", scales in range");
                if x == 4 {
                    let blocks = p.b.q.scales.values.len() / p.b.q.rows;
                    p.b.q.scales.values[11 * blocks + 3] = 2f32.powi(-48);
                    what.push_str(" but one of B's 2^-48");
                }
            }
        }
    }
    // Problem 0 again with B's last row's scales out of range: the unfolded copy's
    // outputs of the other columns.
    let mut unfolded = problems[0].clone();
    unfolded.0.push_str(", B's last row's scales 2^-60");
    let blocks = unfolded.1.b.q.scales.values.len() / unfolded.1.b.q.rows;
    let last = unfolded.1.b.q.scales.values.len() - blocks;
    unfolded.1.b.q.scales.values[last..].fill(2f32.powi(-60));
    problems.push(unfolded);
    for (lanes, decode) in [(16, "f16"), (8, "bits")] {
        let options = format!("dot=f32 bf16-dot=true lanes={lanes} decode={decode}");
        for (what, p) in &problems {
            let taken = taken_for(p, &options);
            assert_eq!(
                taken,
                format!("dot=bf16 decode={decode} form=tiles"),
                "{what}"
            );
        }
        if !lowp_jit::host_bf16_dot(lanes) {
            eprintln!("no bf16 pairs with {lanes} lanes on this host: the form cannot run here");
            continue;
        }
        let pre = format!("builtin.module(func.func(lowp-to-loops{{{options}}}))");
        let session = Session::new();
        let fixed = run_and_check(&session, &problems, Some(&pre));
        same_bits_every_third_dynamic(&session, &problems, &fixed, (&pre, &options));
        let (folded, unfolded) = (&fixed[0], &fixed[fixed.len() - 1]);
        let n = problems[0].1.b.q.rows;
        let differ = (0..folded.len())
            .filter(|x| x % n != n - 1)
            .any(|x| folded[x].to_bits() != unfolded[x].to_bits());
        assert!(
            differ,
            "{options}: the folded and unfolded copies gave the same bits"
        );
    }
}

/// A block of ±0 codes folds whatever its finite E8M0 scale (`to_loops::scale_folds_if`):
/// quantizers that give an all-zero block E8M0's least scale, 2^-127, keep the folded sums.
/// Every fifth block of both operands zeroed (0 and -0 codes; E4M3 x E4M3, and E3M2 in
/// blocks of 64 beside E5M2), its scale 2^-127, 2^100, 2^-60 or 1, in the bf16 pair GEMV form (4, 16, 24 rows), the row tiles (40, 77) and the f32 GEMV
/// form (4 rows): against the oracle, and the scales out of the fold's range give the bits
/// that scale 1 gives, as the folded copy does (the unfolded one sums in another order). A
/// NaN scale on zero blocks of A's row 1 and B's row 5 keeps their outputs NaN.
#[test]
fn mx_folds_take_zero_blocks() {
    let mut rng = SplitMix64::new(67);
    let sizes = |i| match i {
        0 => vec![(4, 1442), (16, 4130), (24, 1442), (40, 1442), (77, 4130)],
        _ => vec![(16, 1442), (40, 1442)],
    };
    let mut base = gemv_problems(&mut rng, &MX_FOLD_PAIRS, sizes);
    let zeroed = |r: usize, block: usize| (r * 7 + block * 3).is_multiple_of(5);
    // An operand's MX block, and its number of blocks a row.
    let blocks_of = |q: &QuantizedTensor| match q.layout {
        ScaleLayout::Mx { block } => (block as usize, q.cols.div_ceil(block as usize)),
        layout => panic!("MX pairs only, not {layout}"),
    };
    for (what, p) in base.iter_mut() {
        for q in [&mut p.a.q, &mut p.b.q] {
            // (gemv_problems' NaN and out-of-range scales would send all to the unfolded copy.)
            let in_range = |v: f32| (2f32.powi(-40)..=65536.0).contains(&v);
            for v in q.scales.values.iter_mut().filter(|v| !in_range(**v)) {
                *v = 0.5;
            }
            let ((bk, blocks), k) = (blocks_of(q), q.cols);
            let negative_zero = 1u8 << (q.format.bit_width() - 1);
            for r in 0..q.rows {
                for block in (0..blocks).filter(|&block| zeroed(r, block)) {
                    for x in block * bk..k.min(block * bk + bk) {
                        q.codes[r * k + x] = if (r + x) % 2 == 0 { 0 } else { negative_zero };
                    }
                }
            }
        }
        what.push_str(", every fifth block zero");
    }
    // The zero blocks' scales: A's `sa`, B's `sb` (NaN: in A's row 1 and B's row 5 only).
    let with_scales = |(sa, sb): (f32, f32), label: &str| -> Vec<(String, Problem)> {
        let mut out = base.clone();
        for (what, p) in out.iter_mut() {
            for (which, scale, q) in [(1, sa, &mut p.a.q), (5, sb, &mut p.b.q)] {
                let (_, blocks) = blocks_of(q);
                for r in 0..q.rows {
                    for block in (0..blocks).filter(|&block| zeroed(r, block)) {
                        q.scales.values[r * blocks + block] = if scale.is_nan() && r != which {
                            1.0
                        } else {
                            scale
                        };
                    }
                }
            }
            what.push_str(&format!(", their scales {label}"));
        }
        out
    };
    let one = with_scales((1.0, 1.0), "1");
    // (Not 2^100 on both: the contract's f32 product 2^200 would be inf, and inf times the
    // zero sum NaN, which the fold need not give.)
    let (least, high, low) = (2f32.powi(-127), 2f32.powi(100), 2f32.powi(-60));
    let out_of_range = [
        with_scales((least, least), "2^-127"),
        with_scales((high, low), "A's 2^100, B's 2^-60"),
        with_scales((low, high), "A's 2^-60, B's 2^100"),
    ];
    let nan = with_scales((f32::NAN, f32::NAN), "NaN in A's row 1 and B's row 5");
    let gemv_f32 = "dot=f32 bf16-dot=false lanes=16";
    for options in ["dot=f32 bf16-dot=true lanes=16", gemv_f32] {
        let picked = |problems: &[(String, Problem)]| -> Vec<(String, Problem)> {
            let rows = |p: &Problem| p.a.q.rows;
            problems
                .iter()
                .filter(|(_, p)| options != gemv_f32 || rows(p) == 4)
                .cloned()
                .collect()
        };
        let form = |p: &Problem| match (options == gemv_f32, p.a.q.rows) {
            (true, _) => "dot=f32 decode=bits form=gemv",
            (false, m) if m <= 32 => "dot=bf16 decode=table form=gemv",
            _ => "dot=bf16 decode=bits form=tiles",
        };
        for (what, p) in picked(&one) {
            assert_eq!(taken_for(&p, options), form(&p), "{what}, {options}");
        }
        let bf16 = options != gemv_f32;
        if bf16 && !lowp_jit::host_bf16_dot(16) {
            eprintln!("no bf16 pairs with 16 lanes on this host: the forms cannot run here");
            continue;
        }
        let pre = format!("builtin.module(func.func(lowp-to-loops{{{options}}}))");
        let session = Session::new();
        let folded = run_and_check(&session, &picked(&one), Some(&pre));
        for problems in &out_of_range {
            let problems = picked(problems);
            let got = run_and_check(&session, &problems, Some(&pre));
            for (i, (what, _)) in problems.iter().enumerate() {
                same_bits(&folded[i], &got[i], &format!("{what}, {options}"));
            }
        }
        let nan = picked(&nan);
        let got = run_and_check(&session, &nan, Some(&pre));
        for (i, (what, p)) in nan.iter().enumerate() {
            let n = p.b.q.rows;
            assert!(
                got[i][n..2 * n].iter().all(|v| v.is_nan()),
                "{what}: A's row 1"
            );
            assert!(
                (0..p.a.q.rows).all(|r| got[i][r * n + 5].is_nan()),
                "{what}: B's row 5"
            );
        }
        if bf16 {
            same_bits_every_third_dynamic(&session, &out_of_range[0], &folded, (&pre, options));
        }
    }
}

/// The format pairs the MX folds are tested on (`pair_gemv_folds_mx_scales`,
/// `tiles_fold_mx_scales`): E4M3 x E4M3 in blocks of 32, and FP6 E3M2 in blocks of 64
/// beside E5M2 in blocks of 32 (segments of 32, A's scale changing every other one).
const MX_FOLD_PAIRS: [(ScaledFormat, ScaleLayout, ScaledFormat, ScaleLayout); 2] = [
    (
        ScaledFormat::F8E4M3,
        ScaleLayout::MX,
        ScaledFormat::F8E4M3,
        ScaleLayout::MX,
    ),
    (
        ScaledFormat::F6E3M2,
        ScaleLayout::Mx { block: 64 },
        ScaledFormat::F8E5M2,
        ScaleLayout::MX,
    ),
];

/// The CPU kernel `lowp-to-loops{options}` takes for problem `p` (`kernel_taken` of its
/// formats, layouts and M).
fn taken_for(p: &Problem, options: &str) -> String {
    lowp_passes::to_loops::kernel_taken(
        (p.a.q.format, p.b.q.format),
        (p.a.q.layout, p.b.q.layout),
        Some(p.a.q.rows as i64),
        options,
    )
}

/// The GEMV forms' problems: for pair `i` of `pairs` (A's format and layout, B's) each
/// `(m, k)` of `sizes(i)`, with N = 45, A's largest codes and -0 among normal values,
/// every code of B's format along B's row 3, a NaN block scale in A's last row where M >
/// 1 and E8M0 scales of 2^-127 and 2^100 in B's rows 7 and 9 (MX layouts), packed FP4
/// where `i + m` is odd, a bias on even pairs and bf16 output on pair 3.
fn gemv_problems(
    rng: &mut SplitMix64,
    pairs: &[(ScaledFormat, ScaleLayout, ScaledFormat, ScaleLayout)],
    sizes: impl Fn(usize) -> Vec<(usize, usize)>,
) -> Vec<(String, Problem)> {
    let n = 45;
    let mut problems = Vec::new();
    for (i, &(fa, la, fb, lb)) in pairs.iter().enumerate() {
        for (m, k) in sizes(i) {
            let packed = |f: ScaledFormat| f.bit_width() == 4 && (i + m) % 2 == 1;
            let data: Vec<f32> = (0..m * k)
                .map(|x| match x % 29 {
                    0 => fa.max_finite(),
                    1 => -fa.max_finite(),
                    2 => -0.0,
                    _ => rng.normal(),
                })
                .collect();
            let mut a = operand_of(&data, m, k, fa, la, packed(fa));
            let mut b = operand(rng, n, k, fb, lb, packed(fb));
            let count = fb.code_count() as usize;
            for x in 0..k {
                b.q.codes[3 * k + x] = ((x * 37) % count) as u8;
            }
            let dtype = lowp_formats::ScaleDtype::UE8M0;
            // A NaN block scale in A's last row (its outputs NaN) where there are others.
            if la.scale_dtype() == dtype && m > 1 {
                let blocks = a.q.scales.values.len() / m;
                a.q.scales.values[(m - 1) * blocks + 1] = f32::NAN;
            }
            if lb.scale_dtype() == dtype {
                let blocks = b.q.scales.values.len() / n;
                b.q.scales.values[7 * blocks + 2] = 2f32.powi(-127);
                b.q.scales.values[9 * blocks] = 2f32.powi(100);
            }
            problems.push((
                format!("M={m} K={k} {fa} {la} x {fb} {lb}"),
                Problem {
                    a,
                    b,
                    bias: (i % 2 == 0).then(|| rng.normal_vec(n)),
                    bf16: i == 3,
                },
            ));
        }
    }
    problems
}

/// Every third of `cases`, and each whose M the copy of the form under a run-time M
/// computes with a row more (odd M past 8, `dot_gemv::rows_for`), run again with its
/// sizes known only at run time (under the pipeline `pre`) gives the bits it gave with
/// them known (`fixed`, the outputs of all `cases`).
fn same_bits_every_third_dynamic(
    session: &Session,
    cases: &[(String, Problem)],
    fixed: &[Vec<f32>],
    (pre, options): (&str, &str),
) {
    let picked: Vec<usize> = (0..cases.len())
        .filter(|&i| {
            let m = cases[i].1.a.q.rows;
            i % 3 == 0 || (m > 8 && m % 2 == 1)
        })
        .collect();
    let every: Vec<_> = picked.iter().map(|&i| cases[i].clone()).collect();
    let dynamic = run_and_check_shaped(session, &every, Some(pre), true);
    for (i, (what, _)) in every.iter().enumerate() {
        same_bits(
            &fixed[picked[i]],
            &dynamic[i],
            &format!("{what}, {options}, dynamic M"),
        );
    }
}

/// `u` and `v` are the same bits (any NaN alike).
fn same_bits(u: &[f32], v: &[f32], what: &str) {
    for (x, (u, v)) in u.iter().zip(v).enumerate() {
        assert!(
            u.to_bits() == v.to_bits() || (u.is_nan() && v.is_nan()),
            "{what}: out[{x}] {u:e} against {v:e}"
        );
    }
}

/// `src` with the sizes of every 2-D memref type made dynamic (`memref<13x21x...>` to
/// `memref<?x?x...>`).
fn dynamic_shapes(src: &str) -> String {
    let mut out = String::new();
    let mut rest = src;
    while let Some(at) = rest.find("memref<") {
        let (head, tail) = rest.split_at(at + "memref<".len());
        out.push_str(head);
        let dims: Vec<&str> = tail.splitn(3, 'x').collect();
        let is_size = |d: &str| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit());
        if dims.len() == 3 && is_size(dims[0]) && is_size(dims[1]) {
            out.push_str("?x?x");
            rest = dims[2];
        } else {
            rest = tail;
        }
    }
    out.push_str(rest);
    out
}

/// An odd K block (`kc=13`, taken as 14) with packed FP4 codes: the vector decodes read two
/// codes a byte from each block's start, which was odd (and read the wrong nibbles) before
/// K blocks were made even; the narrow form (M = 16) and the row tiles (M = 30), B through
/// bits and f16, and the byte kernel.
#[test]
fn odd_k_blocks_read_packed_codes_whole() {
    let mut rng = SplitMix64::new(3);
    let f4 = ScaledFormat::F4E2M1;
    let problems: Vec<_> = [(16, 20, 64), (30, 20, 300)]
        .into_iter()
        .map(|(m, n, k)| {
            let a = operand(&mut rng, m, k, f4, ScaleLayout::PerTensor, true);
            let b = operand(&mut rng, n, k, f4, ScaleLayout::PerTensor, true);
            let p = Problem {
                a,
                b,
                bias: None,
                bf16: false,
            };
            (format!("{m}x{n}x{k} packed per_tensor, kc=13"), p)
        })
        .collect();
    let mut options = vec!["dot=f32 decode=bits", "dot=i8"];
    if lowp_jit::host_f16() {
        options.push("dot=f32 decode=f16");
    }
    for o in options {
        let pre = format!("builtin.module(func.func(lowp-to-loops{{kc=13 {o}}}))");
        run_and_check(&Session::new(), &problems, Some(&pre));
    }
}

/// lowp-to-loops under random options (kc, nc, lanes, dot, decode, narrow, gemv, parallel)
/// on random problems (formats, layout pairs, packing, M from 1 to 40 or past the skinny
/// bound, N, K, bias, bf16), each against the oracle: the option combinations no directed
/// test names (an odd kc once read packed codes off by a nibble). Eight trials of four
/// problems; `LOWP_SWEEP_TRIALS` and `LOWP_SWEEP_SEED` run more (the byte kernel only with
/// 8 lanes: 16 needs AVX512BW, which LLVM cannot compile for a host without it).
#[test]
fn random_options_match_the_oracle() {
    let env = |name: &str, default: u64| {
        std::env::var(name)
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(default)
    };
    let trials = env("LOWP_SWEEP_TRIALS", 8);
    let mut rng = SplitMix64::new(env("LOWP_SWEEP_SEED", 1));
    let formats = lowp_tests::named_and_custom_formats();
    let pairs = [
        (ScaleLayout::PerTensor, ScaleLayout::PerTensor),
        (ScaleLayout::PerChannel, ScaleLayout::PerTensor),
        (ScaleLayout::PerTensor, ScaleLayout::MX),
        (ScaleLayout::MX, ScaleLayout::MX),
        (ScaleLayout::NVFP4, ScaleLayout::NVFP4),
        (ScaleLayout::NVFP4_GLOBAL, ScaleLayout::NVFP4_GLOBAL),
        (ScaleLayout::MX, ScaleLayout::NVFP4),
        (
            ScaleLayout::Blockwise { rows: 1, cols: 128 },
            ScaleLayout::Blockwise {
                rows: 128,
                cols: 128,
            },
        ),
        (
            ScaleLayout::Blockwise { rows: 2, cols: 64 },
            ScaleLayout::Blockwise { rows: 16, cols: 32 },
        ),
    ];
    let pick = |rng: &mut SplitMix64, n: usize| (rng.next_u64() % n as u64) as usize;
    for t in 0..trials {
        let lanes = [8, 16][pick(&mut rng, 2)];
        let dot = if lanes == 16 {
            "f32"
        } else {
            ["f32", "i8"][pick(&mut rng, 2)]
        };
        let decode = if lowp_jit::host_f16() {
            ["bits", "f16"][pick(&mut rng, 2)]
        } else {
            "bits"
        };
        let options = format!(
            "kc={} nc={} lanes={lanes} dot={dot} decode={decode} narrow={} gemv={} \
             parallel={}",
            1 + pick(&mut rng, 300),
            1 + pick(&mut rng, 100),
            pick(&mut rng, 2) == 0,
            pick(&mut rng, 2) == 0,
            pick(&mut rng, 3) != 0,
        );
        let mut problems = Vec::new();
        while problems.len() < 4 {
            let fa = formats[pick(&mut rng, formats.len())];
            let fb = formats[pick(&mut rng, formats.len())];
            let (la, lb) = pairs[pick(&mut rng, pairs.len())];
            if !valid_pair(fa, la) || !valid_pair(fb, lb) {
                continue;
            }
            let m = if pick(&mut rng, 8) == 0 {
                250 + pick(&mut rng, 20)
            } else {
                1 + pick(&mut rng, 40)
            };
            let n = 1 + pick(&mut rng, 60);
            let pa = fa.bit_width() == 4 && pick(&mut rng, 2) == 0;
            let pb = fb.bit_width() == 4 && pick(&mut rng, 2) == 0;
            let k = (1 + pick(&mut rng, 400)).next_multiple_of(if pa || pb { 2 } else { 1 });
            let a = operand(&mut rng, m, k, fa, la, pa);
            let b = operand(&mut rng, n, k, fb, lb, pb);
            let bias = (pick(&mut rng, 2) == 0).then(|| rng.normal_vec(n));
            let bf16 = pick(&mut rng, 4) == 0;
            let what = format!(
                "trial {t} {{{options}}}: {m}x{n}x{k} {fa}{} {la} x {fb}{} {lb}",
                if pa { " packed" } else { "" },
                if pb { " packed" } else { "" }
            );
            problems.push((what, Problem { a, b, bias, bf16 }));
        }
        let pre = format!("builtin.module(func.func(lowp-to-loops{{{options}}}))");
        run_and_check(&Session::new(), &problems, Some(&pre));
    }
}

/// An x86 intrinsic from an extension the host lacks (here the 512-bit byte kernel,
/// `lowp-to-loops{lanes=16 dot=i8}` run by a pipeline of the user's own, which
/// [`Session::lower_cpu`] would have refused) is refused by the JIT at the call's location:
/// LLVM's instruction selection would stop the process. A host with AVX512BW runs it.
#[test]
fn jit_refuses_intrinsics_the_host_lacks() {
    use lowp_jit::x86_intrinsic_needs as needs;
    assert_eq!(needs("llvm.x86.avx2.pmadd.ub.sw"), ["avx2"]);
    assert_eq!(
        needs("llvm.x86.avx512.pmaddubs.w.512"),
        ["avx512f", "avx512bw"]
    );
    assert_eq!(
        needs("llvm.x86.avx512.pmaddw.d.512"),
        ["avx512f", "avx512bw"]
    );
    assert_eq!(needs("llvm.x86.avx512.mask.compress"), ["avx512f"]);
    assert_eq!(
        needs("llvm.x86.avx512.vpdpbusd.256"),
        ["avx512f", "avx512vnni", "avx512vl"]
    );
    assert_eq!(
        needs("llvm.x86.avx512bf16.dpbf16ps.512"),
        ["avx512f", "avx512bf16"]
    );
    assert_eq!(
        needs("llvm.x86.avx512.vpermi2var.hi.256"),
        ["avx512f", "avx512bw", "avx512vl"]
    );
    assert_eq!(needs("llvm.x86.vcvtph2ps.256"), ["f16c"]);
    assert_eq!(needs("llvm.x86.sse41.pblendvb"), ["sse4.1"]);
    assert!(needs("llvm.x86.sse2.pause").is_empty());
    assert!(needs("llvm.fma.f32").is_empty());

    let mut rng = SplitMix64::new(5);
    let (f, l) = (ScaledFormat::F4E2M1, ScaleLayout::MX);
    let problems = [(
        "MXFP4 byte kernel, 16 lanes".to_string(),
        Problem {
            a: operand(&mut rng, 5, 64, f, l, true),
            b: operand(&mut rng, 40, 64, f, l, true),
            bias: None,
            bf16: false,
        },
    )];
    let pre = "builtin.module(func.func(lowp-to-loops{lanes=16 dot=i8}))";
    let session = Session::new();
    if lowp_jit::host_byte_dot(lowp_jit::Dot::I8, 16) {
        run_and_check(&session, &problems, Some(pre));
        return;
    }
    let module = problems_module(&session, &problems, Some(pre));
    let err = match session.compile_cpu(module, 2) {
        Ok(_) => panic!("the JIT compiled AVX512BW code for a CPU without it"),
        Err(e) => e.to_string(),
    };
    for part in [
        "error: 'llvm.x86.avx512.pmaddubs.w.512' needs ",
        "avx512bw",
        "which this CPU lacks",
    ] {
        assert!(err.contains(part), "{part:?} not in:\n{err}");
    }
}
