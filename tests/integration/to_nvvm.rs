//! lowp-to-nvvm's kernels compute what the oracle computes. Without a GPU, the FP8 kernels
//! run with `emulate=true`: the same blocks, warps, loads (through the embedding tables),
//! scale application and epilogue, with each `mma.sync.m16n8k32` computed from the
//! fragment registers, each `wgmma` and `tcgen05.mma` from the shared-memory tiles their
//! descriptors point at, as the PTX ISA defines them. The generic kernel runs as it is (its block and thread
//! loops run on the CPU). What this cannot check: that the fragment, accumulator and
//! descriptor layouts are the hardware's (they follow the PTX ISA), and the NVPTX code.

use lowp_formats::testing::SplitMix64;
use lowp_formats::{QuantizedTensor, ScaleLayout, ScaledFormat};
use lowp_jit::Session;

use super::to_loops::{
    format_layout_cases, lowered_with, mixed_cases, operand, operand_of, run_and_check, source,
    Operand, Problem,
};

fn emulated(chip: &str, kernel: &str) -> String {
    format!("builtin.module(func.func(lowp-to-nvvm{{chip={chip} kernel={kernel} emulate=true}}))")
}

/// The problems' module after `lowp-to-nvvm{chip kernel}` (not emulated), as text.
fn lowered(session: &Session, problems: &[(String, Problem)], chip: &str, kernel: &str) -> String {
    let pipeline =
        format!("builtin.module(func.func(lowp-to-nvvm{{chip={chip} kernel={kernel}}}))");
    lowered_with(session, problems, &pipeline)
}

/// sm_89: mma.sync where the formats allow, the generic kernel elsewhere.
#[test]
fn mma_sync_emulation_matches_the_oracle() {
    let session = Session::new();
    let pre = emulated("sm_89", "auto");
    format_layout_cases(&session, Some(&pre));
    mixed_cases(&session, Some(&pre));
}

/// sm_100a: tcgen05 where the formats allow (the copies into shared memory, the MMA read
/// through its shared-memory and instruction descriptors into a buffer standing for tensor
/// memory, each thread's row of it per segment), the generic kernel elsewhere.
#[test]
fn tcgen05_emulation_matches_the_oracle() {
    let session = Session::new();
    let pre = emulated("sm_100a", "auto");
    format_layout_cases(&session, Some(&pre));
    mixed_cases(&session, Some(&pre));
}

/// sm_90a: wgmma where the formats allow (the copies into shared memory, the descriptors,
/// the instruction read through them), the generic kernel elsewhere.
#[test]
fn wgmma_emulation_matches_the_oracle() {
    let session = Session::new();
    let pre = emulated("sm_90a", "auto");
    format_layout_cases(&session, Some(&pre));
    mixed_cases(&session, Some(&pre));
}

/// The generic kernel (decoded chunks of A and B in shared memory) on every format and
/// layout, whether or not a tensor core could take it.
#[test]
fn generic_kernel_matches_the_oracle() {
    let session = Session::new();
    let pre = emulated("sm_90a", "generic");
    format_layout_cases(&session, Some(&pre));
    mixed_cases(&session, Some(&pre));
}

/// Several blocks and warps, K with a ragged end and K not a multiple of 4 (the code-by-
/// code loads), each with FP8, FP4 (packed) and FP6 operands, on every FP8 kernel.
#[test]
fn fp8_kernels_tiles_and_ragged_edges() {
    let session = Session::new();
    let mut rng = SplitMix64::new(90);
    let mut problems = Vec::new();
    for (m, n, k) in [
        (130, 70, 96),
        (64, 64, 64),
        (33, 65, 250),
        (5, 3, 18),
        (70, 9, 1),
    ] {
        for (fa, la, fb, lb) in [
            (
                ScaledFormat::F8E4M3,
                ScaleLayout::PerTensor,
                ScaledFormat::F8E5M2,
                ScaleLayout::PerChannel,
            ),
            (
                ScaledFormat::F4E2M1,
                ScaleLayout::MX,
                ScaledFormat::F6E3M2,
                ScaleLayout::MX,
            ),
            (
                ScaledFormat::F4E2M1,
                ScaleLayout::NVFP4_GLOBAL,
                ScaledFormat::F4E2M1,
                ScaleLayout::NVFP4_GLOBAL,
            ),
            // Blocks of 8 and 4: one a step, the rest of the instruction's K zero.
            (
                ScaledFormat::F4E2M1,
                ScaleLayout::Mx { block: 8 },
                ScaledFormat::F8E4M3,
                ScaleLayout::Mx { block: 8 },
            ),
            (
                ScaledFormat::F8E5M2,
                ScaleLayout::Blockwise { rows: 1, cols: 4 },
                ScaledFormat::F6E2M3,
                ScaleLayout::PerChannel,
            ),
        ] {
            let packed = fa.bit_width() == 4 && k % 2 == 0;
            problems.push((
                format!("{m}x{n}x{k} {fa} {la} x {fb} {lb}"),
                Problem {
                    a: operand(&mut rng, m, k, fa, la, packed),
                    b: operand(&mut rng, n, k, fb, lb, false),
                    bias: Some(rng.normal_vec(n)),
                    bf16: false,
                },
            ));
        }
    }
    for (chip, kernel) in [
        ("sm_90a", "mma-sync"),
        ("sm_90a", "wgmma"),
        ("sm_100a", "tcgen05"),
    ] {
        run_and_check(&session, &problems, Some(&emulated(chip, kernel)));
    }
}

/// Formats no FP8 type holds, for the f16 routes: E3M4, E2M5 and a 7-bit custom.
fn f16_only() -> [ScaledFormat; 3] {
    [
        ScaledFormat::custom(3, 4),
        ScaledFormat::custom(2, 5),
        ScaledFormat::custom(3, 3),
    ]
}

/// (A, its layout, A packed, B, its layout) problems of the f16 routes, at each size:
/// subnormal codes and zeros of both signs in the first rows of A, NaN / infinity codes
/// written into A's row 3 and 4 and B's last row where the formats have them, a bias.
fn f16_problems(
    rng: &mut SplitMix64,
    sizes: &[(usize, usize, usize)],
    pairs: &[(ScaledFormat, ScaleLayout, bool, ScaledFormat, ScaleLayout)],
) -> Vec<(String, Problem)> {
    let mut problems = Vec::new();
    for &(m, n, k) in sizes {
        for &(fa, la, pa, fb, lb) in pairs {
            let packed = pa && k % 2 == 0;
            let mut data: Vec<f32> = (0..m * k)
                .map(|i| rng.normal() * (1.0 + (i % 7) as f32))
                .collect();
            for (r, factor) in [(0, 0.0), (1, -0.0), (2, 2f32.powi(-9))] {
                if r < m {
                    for x in &mut data[r * k..(r + 1) * k] {
                        *x *= factor;
                    }
                }
            }
            let mut a = operand_of(&data, m, k, fa, la, packed);
            let mut b = operand(rng, n, k, fb, lb, false);
            let nan = |f: ScaledFormat| (0..=255u8).find(|&c| f.decode(c).is_nan());
            if !packed && m > 3 {
                if let Some(c) = nan(fa) {
                    a.q.codes[3 * k + k / 2] = c;
                }
            }
            if let Some(c) = nan(fb) {
                b.q.codes[(n - 1) * k] = c;
            }
            if fa.has_inf() && m > 4 && k > 2 {
                a.q.codes[4 * k + 1] = 0x7C;
                a.q.codes[4 * k + 2] = 0xFC;
            }
            if fb.has_inf() && n > 2 && k > 3 {
                b.q.codes[k + 3] = 0xFC;
                b.q.codes[2 * k + 1] = 0x7C;
            }
            problems.push((
                format!("{m}x{n}x{k} {fa} {la} x {fb} {lb}"),
                Problem {
                    a,
                    b,
                    bias: Some(rng.normal_vec(n)),
                    bf16: false,
                },
            ));
        }
    }
    problems
}

/// The f16 form of the mma.sync kernel (`mma.sync.m16n8k16.f32.f16.f16`), which takes the
/// formats no FP8 type holds: E3M4, E2M5 and a 7-bit custom beside E4M3 / E5M2, E4M3 FNUZ,
/// packed E2M1 beside E3M4 (its codes a byte's nibbles), with each scale segment (per
/// tensor, per channel, MX, 16-blocks, blockwise); several blocks and warps, ragged M, N
/// and K, K odd (rows not 2-byte aligned: the code-by-code loads), subnormal codes, zeros
/// of both signs, and NaN / infinity codes written into the operands. Checked in the IR
/// first: the instruction, and no FP8 one.
#[test]
fn mma_sync_f16_form_matches_the_oracle() {
    let session = Session::new();
    let mut rng = SplitMix64::new(16);
    let (e4, e5, fnuz) = (
        ScaledFormat::F8E4M3,
        ScaledFormat::F8E5M2,
        ScaledFormat::F8E4M3Fnuz,
    );
    let [e3m4, e2m5, e3m3] = f16_only();
    let f4 = ScaledFormat::F4E2M1;
    let blockwise = ScaleLayout::Blockwise { rows: 1, cols: 128 };
    let mx16 = ScaleLayout::Mx { block: 16 };
    let pairs = [
        (
            e3m4,
            ScaleLayout::PerTensor,
            false,
            e4,
            ScaleLayout::PerChannel,
        ),
        (
            e5,
            ScaleLayout::PerChannel,
            false,
            e2m5,
            ScaleLayout::PerChannel,
        ),
        (f4, ScaleLayout::MX, true, e3m4, ScaleLayout::MX),
        (e3m4, mx16, false, f4, mx16),
        (fnuz, blockwise, false, e3m3, blockwise),
        // Blocks of 8: one a k16 step, its other 8 codes zero.
        (
            e3m4,
            ScaleLayout::Mx { block: 8 },
            false,
            e4,
            ScaleLayout::Mx { block: 8 },
        ),
    ];
    let sizes = [
        (130, 70, 96),
        (33, 65, 250),
        (5, 3, 18),
        (19, 37, 75),
        (70, 9, 1),
    ];
    let problems = f16_problems(&mut rng, &sizes, &pairs);
    for chip in ["sm_90a", "sm_89"] {
        let ir = lowered(&session, &problems, chip, "mma-sync");
        assert!(ir.contains("nvvm.mma.sync"), "{chip}");
        assert!(ir.contains("#nvvm.shape<m = 16, n = 8, k = 16>"), "{chip}");
        assert!(!ir.contains("m16n8k32"), "{chip}");
        run_and_check(&session, &problems, Some(&emulated(chip, "mma-sync")));
    }
    // `auto` takes it on sm_89; on sm_90a, where no wgmma pipeline does (K = 96 is not
    // whole stages of 64), the register-staged wgmma's k16 on f16; on sm_100a tcgen05's
    // kind::f16.
    assert!(lowered(&session, &problems[..1], "sm_89", "auto").contains("nvvm.mma.sync"));
    let ir = lowered(&session, &problems[..1], "sm_90a", "auto");
    assert!(ir.contains("A[<f16>, <one>, <row>]") && !ir.contains("nvvm.mma.sync"));
    assert!(lowered(&session, &problems[..1], "sm_100a", "auto").contains("tcgen05_mma_kind<f16>"));
}

/// The bf16 form of the mma.sync kernel (`mma.sync.m16n8k16.f32.bf16.bf16`), which takes the
/// formats whose exponent field f16's does not hold: E5M2 FNUZ (its exponent 31 finite),
/// 6- and 7-bit exponents, beside E4M3 (its NaN codes), E4M3 FNUZ, E3M4, packed E2M1 and
/// OCP E5M2 (its infinities and NaN through the top-exponent rule, in A and in B);
/// each scale segment, ragged sizes, the edge codes of `f16_problems` and, written into A's
/// row 2 and B's first row, each format's smallest positive code and its largest (E7M0's
/// 2^64: the kernel's patterns carry `2^-shift`, its products stay normal f32 values).
#[test]
fn mma_sync_bf16_form_matches_the_oracle() {
    let session = Session::new();
    let mut rng = SplitMix64::new(17);
    let (e4, e3m4, e4fnuz, e5fnuz) = (
        ScaledFormat::F8E4M3,
        ScaledFormat::custom(3, 4),
        ScaledFormat::F8E4M3Fnuz,
        ScaledFormat::F8E5M2Fnuz,
    );
    let (e6m1, e7m0) = (ScaledFormat::custom(6, 1), ScaledFormat::custom(7, 0));
    assert_eq!(e7m0.bf16_fields().map(|f| f.shift), Some(1));
    let (pt, pc) = (ScaleLayout::PerTensor, ScaleLayout::PerChannel);
    let pairs = [
        (e5fnuz, pt, false, e5fnuz, pc),
        (e6m1, ScaleLayout::MX, false, e4, ScaleLayout::MX),
        (
            e7m0,
            ScaleLayout::Blockwise { rows: 1, cols: 128 },
            false,
            e3m4,
            pc,
        ),
        (e4fnuz, pc, false, e5fnuz, pt),
        (
            ScaledFormat::F4E2M1,
            ScaleLayout::Mx { block: 16 },
            true,
            e6m1,
            ScaleLayout::Mx { block: 16 },
        ),
        // OCP E5M2 beside them: its infinities and NaN set to bf16's top exponent.
        (e6m1, pc, false, ScaledFormat::F8E5M2, pt),
        (
            ScaledFormat::F8E5M2,
            ScaleLayout::MX,
            false,
            e7m0,
            ScaleLayout::MX,
        ),
    ];
    let sizes = [(130, 70, 96), (33, 65, 250), (5, 3, 18), (19, 37, 75)];
    let mut problems = f16_problems(&mut rng, &sizes, &pairs);
    for (_, p) in &mut problems {
        let (a, b) = (&mut p.a.q, &mut p.b.q);
        let k = a.cols;
        let edges = |f: ScaledFormat| [f.max_finite_code(), 1];
        if !a.packed && a.codes.len() > 2 * k + 1 {
            a.codes[2 * k..2 * k + 2].copy_from_slice(&edges(a.format));
        }
        if k > 1 {
            b.codes[..2].copy_from_slice(&edges(b.format));
        }
    }
    for chip in ["sm_89", "sm_90a"] {
        let ir = lowered(&session, &problems, chip, "mma-sync");
        assert!(ir.contains("#nvvm.mma_type<bf16>"), "{chip}");
        assert!(!ir.contains("#nvvm.mma_type<f16>"), "{chip}");
        assert!(!ir.contains("m16n8k32"), "{chip}");
        run_and_check(&session, &problems, Some(&emulated(chip, "mma-sync")));
    }
    // `auto` takes it on sm_89 (no FP8 type or f16 pattern holds E5M2 FNUZ); on sm_90a the
    // register-staged wgmma's k16 on bf16 (K = 96 is not whole pipeline stages:
    // `wgmma_register_kernel_takes_half_patterns`), on sm_100a tcgen05's kind::f16.
    let ir = lowered(&session, &problems[..1], "sm_89", "auto");
    assert!(ir.contains("#nvvm.mma_type<bf16>"));
    let ir = lowered(&session, &problems[..1], "sm_90a", "auto");
    assert!(ir.contains("A[<bf16>, <one>, <row>]") && !ir.contains("nvvm.mma.sync"));
    let ir = lowered(&session, &problems[..1], "sm_100a", "auto");
    assert!(ir.contains("tcgen05_mma_kind<f16>"));
}

/// sm_100a's `kind::f16` (`tcgen05.mma.cta_group::1.kind::f16`, K 16) on the f16 or bf16
/// patterns of the formats no FP8 type holds: E3M4, E2M5, E4M3 FNUZ (f16: type 0), E5M2
/// FNUZ, E6M1, E7M0 and OCP E5M2 beside them (bf16: type 1), per tensor, per channel, MX,
/// blockwise and 16-blocks on D's sums, ragged sizes, the edge codes of `f16_problems`; the
/// emulation reads each MMA's 16-bit values through its descriptors.
#[test]
fn tcgen05_half_kind_matches_the_oracle() {
    let session = Session::new();
    let mut rng = SplitMix64::new(101);
    let [e3m4, e2m5, _] = f16_only();
    let (e6m1, e7m0) = (ScaledFormat::custom(6, 1), ScaledFormat::custom(7, 0));
    let (e4, e5, e4fnuz, e5fnuz) = (
        ScaledFormat::F8E4M3,
        ScaledFormat::F8E5M2,
        ScaledFormat::F8E4M3Fnuz,
        ScaledFormat::F8E5M2Fnuz,
    );
    let (pt, pc, mx) = (
        ScaleLayout::PerTensor,
        ScaleLayout::PerChannel,
        ScaleLayout::MX,
    );
    let f16_pairs = [
        (e3m4, pc, false, e4, pc),
        (e2m5, mx, false, e5, mx),
        (
            e4fnuz,
            ScaleLayout::Blockwise { rows: 1, cols: 128 },
            false,
            e4fnuz,
            pt,
        ),
        (
            ScaledFormat::F4E2M1,
            ScaleLayout::Mx { block: 16 },
            true,
            e3m4,
            ScaleLayout::Mx { block: 16 },
        ),
    ];
    let bf16_pairs = [
        (e5fnuz, pt, false, e5fnuz, pc),
        (e6m1, pc, false, e5, pt),
        (e7m0, mx, false, e4, mx),
        (e5, pc, false, e6m1, pc),
    ];
    let sizes = [(130, 70, 96), (33, 65, 250), (5, 3, 18)];
    // The instruction descriptors: F32 D, N 64, M 128, and A / B types 0 (F16) or 1 (BF16).
    for (pairs, half, idesc) in [
        (&f16_pairs, "f16", 0x810_0010),
        (&bf16_pairs, "bf16", 0x810_0490),
    ] {
        let problems = f16_problems(&mut rng, &sizes, pairs);
        let ir = lowered(&session, &problems, "sm_100a", "tcgen05");
        assert!(ir.contains("tcgen05_mma_kind<f16>"), "{half}");
        assert!(
            ir.contains(&format!("arith.constant {idesc} : i32")),
            "{half}"
        );
        assert!(!ir.contains("tcgen05_mma_kind<f8f6f4>"), "{half}");
        assert!(!ir.contains("nvvm.mma.sync"), "{half}");
        run_and_check(&session, &problems, Some(&emulated("sm_100a", "tcgen05")));
    }
}

/// The register-staged wgmma kernel on the half patterns of formats no FP8 type holds, for
/// the ops the pipeline refuses (rows not a multiple of 16 bytes, scale blocks of 8):
/// `m64n128k16.f32.f16.f16` / `.bf16.bf16` on the FP8 instruction's tiles, two patterns a
/// word, scales on the partial sums; `auto` takes it on sm_90a (it took mma.sync).
#[test]
fn wgmma_register_kernel_takes_half_patterns() {
    let session = Session::new();
    let mut rng = SplitMix64::new(103);
    let [e3m4, e2m5, _] = f16_only();
    let (e6m1, e7m0) = (ScaledFormat::custom(6, 1), ScaledFormat::custom(7, 0));
    let (e4, e5, e4fnuz, e5fnuz) = (
        ScaledFormat::F8E4M3,
        ScaledFormat::F8E5M2,
        ScaledFormat::F8E4M3Fnuz,
        ScaledFormat::F8E5M2Fnuz,
    );
    let (pt, pc, mx, mx8) = (
        ScaleLayout::PerTensor,
        ScaleLayout::PerChannel,
        ScaleLayout::MX,
        ScaleLayout::Mx { block: 8 },
    );
    let f16_pairs = [
        (e3m4, pc, false, e4, pc),
        (e2m5, mx, false, e5, mx),
        (
            e4fnuz,
            ScaleLayout::Blockwise { rows: 1, cols: 128 },
            false,
            e4fnuz,
            pt,
        ),
        (e3m4, mx8, false, e4, mx8),
    ];
    let bf16_pairs = [
        (e5fnuz, pt, false, e5fnuz, pc),
        (e6m1, pc, false, e5, pt),
        (e7m0, mx, false, e4, mx),
        (e6m1, mx8, false, e5, mx8),
    ];
    // K of 250 and 40: rows the pipeline's 16-byte copies do not take.
    let sizes = [(130, 140, 250), (33, 65, 40), (5, 3, 18)];
    for (pairs, half) in [(&f16_pairs, "f16"), (&bf16_pairs, "bf16")] {
        let problems = f16_problems(&mut rng, &sizes, pairs);
        let ir = lowered(&session, &problems, "sm_90a", "auto");
        let instr = format!("<m = 64, n = 128, k = 16>, D[<f32>, <one>], A[<{half}>, <one>, <row>], B[<{half}>, <one>, <col>]");
        assert!(ir.contains(&instr), "{half}");
        assert!(!ir.contains("k = 32>"), "{half}: no FP8 instruction");
        assert!(
            !ir.contains("gpu.dynamic_shared_memory"),
            "{half}: not the pipeline"
        );
        assert!(!ir.contains("nvvm.mma.sync"), "{half}");
        run_and_check(&session, &problems, Some(&emulated("sm_90a", "wgmma")));
    }
}

/// `accumulate=f32` on sm_90a: E4M3 / E5M2 and the formats translated to them take the
/// f16 patterns of their fields (k16 f16 instructions, exact products summed in f32), no
/// FP8 instruction: the pipeline's square and skinny blocks, and the register-staged
/// kernel for packed codes and K of rows the pipeline's copies do not take; all match
/// the oracle.
#[test]
fn wgmma_exact_accumulation_takes_half_patterns() {
    let session = Session::new();
    let mut rng = SplitMix64::new(211);
    let (e4, e5, f4) = (
        ScaledFormat::F8E4M3,
        ScaledFormat::F8E5M2,
        ScaledFormat::F4E2M1,
    );
    let (pt, pc, mx) = (
        ScaleLayout::PerTensor,
        ScaleLayout::PerChannel,
        ScaleLayout::MX,
    );
    let pairs = [
        (e4, pt, false, e5, pt),
        (e5, pc, false, e5, mx),
        (f4, mx, true, e4, mx),
        (
            e4,
            ScaleLayout::Blockwise { rows: 1, cols: 128 },
            false,
            e4,
            ScaleLayout::Blockwise {
                rows: 128,
                cols: 128,
            },
        ),
    ];
    // The square block, the skinny one, and K of 250 (the register-staged kernel).
    let sizes = [(130, 136, 256), (16, 72, 512), (33, 40, 250)];
    let problems = f16_problems(&mut rng, &sizes, &pairs);
    let exact = |kernel: &str, emulate: bool| {
        format!(
            "builtin.module(func.func(lowp-to-nvvm{{chip=sm_90a kernel={kernel} accumulate=f32 \
             emulate={emulate}}}))"
        )
    };
    let ir = lowered_with(&session, &problems, &exact("auto", false));
    assert!(ir.contains("A[<f16>, <one>, <row>], B[<f16>, <one>, <col>]"));
    assert!(!ir.contains("k = 32>"), "no FP8 instruction");
    assert!(ir.contains("gpu.dynamic_shared_memory"), "the pipeline");
    assert!(!ir.contains("nvvm.mma.sync"));
    run_and_check(&session, &problems, Some(&exact("auto", true)));
    // The FP8 default on the same problems: FP8 instructions.
    let fp8 = lowered(&session, &problems, "sm_90a", "auto");
    assert!(fp8.contains("k = 32>"));
}

/// `auto` on sm_90a takes the wgmma pipeline's f16 route for each of `problems` (no
/// mma.sync), and its square, warp-specialized and skinny blocks match the oracle.
fn f16_pipeline_matches_the_oracle(session: &Session, problems: &[(String, Problem)]) {
    let ir = lowered(session, problems, "sm_90a", "auto");
    assert!(ir.contains("nvvm.wgmma.mma_async"), "the pipeline");
    assert!(!ir.contains("nvvm.mma.sync"), "no mma.sync");
    for kernel in ["wgmma", "wgmma-specialized", "wgmma-skinny"] {
        run_and_check(session, problems, Some(&emulated("sm_90a", kernel)));
    }
}

/// The wgmma pipeline's route for the formats only bf16 patterns hold (E5M2 FNUZ, E6M1,
/// E7M0; E4M3, E3M4 and OCP E5M2 with its infinities beside them): the copiers write bf16
/// patterns into the same tiles,
/// `m64nNk16.f32.bf16.bf16`, sums per tensor / channel or promoted per block (MX,
/// blockwise); square, warp-specialized and skinny blocks, the edge codes of
/// `f16_problems`.
#[test]
fn wgmma_pipeline_bf16_patterns_match_the_oracle() {
    let session = Session::new();
    let mut rng = SplitMix64::new(65);
    let (e6m1, e7m0) = (ScaledFormat::custom(6, 1), ScaledFormat::custom(7, 0));
    let fnuz = ScaledFormat::F8E5M2Fnuz;
    let (pt, pc) = (ScaleLayout::PerTensor, ScaleLayout::PerChannel);
    let pairs = [
        (fnuz, pc, false, e6m1, pc),
        (
            e7m0,
            ScaleLayout::MX,
            false,
            ScaledFormat::F8E4M3,
            ScaleLayout::MX,
        ),
        (
            e6m1,
            ScaleLayout::Blockwise { rows: 1, cols: 128 },
            false,
            ScaledFormat::custom(3, 4),
            pt,
        ),
        (ScaledFormat::F8E5M2, pc, false, e6m1, pt),
        (fnuz, pt, false, ScaledFormat::F8E5M2, pc),
    ];
    let problems = f16_problems(&mut rng, &[(200, 136, 256), (40, 72, 128)], &pairs);
    let ir = lowered(&session, &problems, "sm_90a", "auto");
    assert!(ir.contains("A[<bf16>, <one>, <row>]"), "bf16 tiles");
    assert!(!ir.contains("A[<f16>"), "no f16 ones");
    f16_pipeline_matches_the_oracle(&session, &problems);
}

/// The wgmma pipeline's f16 route for the same formats (scales per tensor or per
/// channel, K whole stages of 64): each copier moves its codes' fields into f16 patterns
/// in the f16 tiles, `m64nNk16.f32.f16.f16` sums whole stages into the accumulators, the
/// epilogue undoes the patterns' powers of two with the scales. The square block (two
/// tiles of M, ragged N), the skinny one (M <= 64; and split among a cluster) and the
/// warp-specialized one, with the edge codes of `f16_problems`.
#[test]
fn wgmma_pipeline_f16_patterns_match_the_oracle() {
    let session = Session::new();
    let mut rng = SplitMix64::new(64);
    let (e4, e5, fnuz) = (
        ScaledFormat::F8E4M3,
        ScaledFormat::F8E5M2,
        ScaledFormat::F8E4M3Fnuz,
    );
    let [e3m4, e2m5, e3m3] = f16_only();
    let (pt, pc) = (ScaleLayout::PerTensor, ScaleLayout::PerChannel);
    let pairs = [
        (e3m4, pt, false, e4, pc),
        (e5, pc, false, e2m5, pc),
        (fnuz, pc, false, e3m3, pt),
    ];
    let problems = f16_problems(&mut rng, &[(200, 136, 256), (40, 72, 128)], &pairs);
    f16_pipeline_matches_the_oracle(&session, &problems);
    let split = "builtin.module(func.func(lowp-to-nvvm{chip=sm_90a kernel=wgmma-skinny \
                 split-k=2 emulate=true}))";
    run_and_check(&session, &problems[3..], Some(split));
}

/// The f16 route of formats no FP8 type holds, with block scales along K: each block's
/// k16 instructions (two for MX's 32, four a stage for 128-blocks, one per 16-block) start
/// from zero and are promoted with the block's scales, beside scales constant along K
/// (per-channel B with MX A).
#[test]
fn wgmma_pipeline_f16_patterns_promote_block_scales() {
    let session = Session::new();
    let mut rng = SplitMix64::new(65);
    let (e4, e5, fnuz) = (
        ScaledFormat::F8E4M3,
        ScaledFormat::F8E5M2,
        ScaledFormat::F8E4M3Fnuz,
    );
    let [e3m4, e2m5, e3m3] = f16_only();
    let (mx, pc) = (ScaleLayout::MX, ScaleLayout::PerChannel);
    let pairs = [
        (e3m4, mx, false, e4, mx),
        (
            fnuz,
            ScaleLayout::Blockwise { rows: 1, cols: 128 },
            false,
            e2m5,
            ScaleLayout::Blockwise {
                rows: 128,
                cols: 128,
            },
        ),
        (e3m3, mx, false, e5, pc),
        (
            e2m5,
            ScaleLayout::Mx { block: 16 },
            false,
            e3m4,
            ScaleLayout::Blockwise { rows: 1, cols: 64 },
        ),
    ];
    // (256 x 128: whole blocks, whose scale reads take no clamp.)
    let sizes = [(200, 136, 256), (40, 72, 128), (256, 128, 192)];
    let problems = f16_problems(&mut rng, &sizes, &pairs);
    f16_pipeline_matches_the_oracle(&session, &problems);
}

/// (A, its layout, packed, B, its layout, packed) for the cp.async pipeline's tests: FP8
/// with every scale segment (per-tensor, MX, blockwise, per-channel, MX64 x blockwise
/// 16x256), packed E2M1, FP6, FP6 x FP4, a custom format.
type PipelinePair = (
    ScaledFormat,
    ScaleLayout,
    bool,
    ScaledFormat,
    ScaleLayout,
    bool,
);

/// The problem `m x n x k` of a format / layout pair, named after them, with a bias (A,
/// B, then the bias drawn from `rng`).
fn pair_problem(
    rng: &mut SplitMix64,
    (m, n, k): (usize, usize, usize),
    (fa, la, pa, fb, lb, pb): PipelinePair,
) -> (String, Problem) {
    (
        format!("{m}x{n}x{k} {fa} {la} x {fb} {lb}"),
        Problem {
            a: operand(rng, m, k, fa, la, pa),
            b: operand(rng, n, k, fb, lb, pb),
            bias: Some(rng.normal_vec(n)),
            bf16: false,
        },
    )
}

fn pipeline_pairs() -> [PipelinePair; 9] {
    let (e4, e5) = (ScaledFormat::F8E4M3, ScaledFormat::F8E5M2);
    let (f4, mx) = (ScaledFormat::F4E2M1, ScaleLayout::MX);
    [
        (
            e4,
            ScaleLayout::PerTensor,
            false,
            e4,
            ScaleLayout::PerTensor,
            false,
        ),
        (e4, mx, false, e5, mx, false),
        (
            e5,
            ScaleLayout::Blockwise { rows: 1, cols: 128 },
            false,
            e4,
            ScaleLayout::Blockwise {
                rows: 128,
                cols: 128,
            },
            false,
        ),
        (
            e4,
            ScaleLayout::PerChannel,
            false,
            e5,
            ScaleLayout::PerTensor,
            false,
        ),
        (
            e4,
            ScaleLayout::Mx { block: 64 },
            false,
            e4,
            ScaleLayout::Blockwise {
                rows: 16,
                cols: 256,
            },
            false,
        ),
        (f4, mx, true, f4, mx, true),
        (
            ScaledFormat::F6E2M3,
            mx,
            false,
            e4,
            ScaleLayout::PerTensor,
            false,
        ),
        (
            ScaledFormat::F6E3M2,
            ScaleLayout::Blockwise { rows: 1, cols: 128 },
            false,
            f4,
            mx,
            false,
        ),
        (
            ScaledFormat::custom(3, 0),
            ScaleLayout::PerChannel,
            false,
            f4,
            ScaleLayout::PerTensor,
            true,
        ),
    ]
}

/// sm_90a's cp.async pipeline (row-major operands with static rows of a multiple of 16
/// bytes): two warpgroups per 128 x 128 block (M = 130; the smaller shapes take the skinny
/// block, tested below), the ring of 4 stages wrapping (K up to 6
/// stages), a last stage that is partly past K, rows and columns past M and N, every scale
/// segment it takes (32, 64, 128, all of K), E4M3 / E5M2 copied as stored and FP4 (packed
/// or not), FP6 (every code in row 0 of A) and custom formats translated to FP8 by the
/// threads that copied them;
/// checked first to be the kernel `auto` picks, then run through the emulation of the same
/// copies, translations, swizzled offsets and descriptors.
#[test]
fn wgmma_pipeline_matches_the_oracle() {
    let session = Session::new();
    let mut rng = SplitMix64::new(128);
    let e4 = ScaledFormat::F8E4M3;
    let pairs = pipeline_pairs();
    let mut problems = Vec::new();
    for (m, n, k, cases) in [(130, 136, 672, 9), (64, 200, 160, 4), (3, 5, 32, 3)] {
        for &pair in pairs.iter().rev().take(cases) {
            let (name, mut problem) = pair_problem(&mut rng, (m, n, k), pair);
            // Edge codes in row 0 of FP8 A: the largest finite, the smallest subnormal, -0.
            let fa = pair.0;
            if fa.bit_width() == 8 {
                let max = if fa == e4 { 0x7E } else { 0x7B };
                problem.a.q.codes[..3].copy_from_slice(&[max, 0x01, 0x80]);
            }
            // Every code of FP6 A in row 0 (translated four at a time by word arithmetic).
            if fa.bit_width() == 6 {
                for (c, code) in problem.a.q.codes[..k.min(64)].iter_mut().enumerate() {
                    *code = c as u8;
                }
            }
            problems.push((name, problem));
        }
    }
    let text = lowered(&session, &problems, "sm_90a", "auto");
    assert_eq!(
        text.matches("gpu.dynamic_shared_memory").count(),
        problems.len(),
        "every op takes the pipelined kernel"
    );
    assert!(text.contains("nvvm.cp.async.shared.global"));
    run_and_check(&session, &problems, Some(&emulated("sm_90a", "wgmma")));
    // The warp-specialized variant (a producer warpgroup's copies and translations, per-slot
    // translated tiles, 3 stages where a slot takes 64 KiB) on the largest shape's problems.
    let largest = &problems[..pairs.len()];
    let text = lowered(&session, largest, "sm_90a", "wgmma-specialized");
    assert_eq!(
        text.matches("%c384 = arith.constant 384").count(),
        largest.len()
    );
    assert_eq!(
        text.matches("nvvm.mbarrier.init").count(),
        2 * largest.len()
    );
    run_and_check(
        &session,
        largest,
        Some(&emulated("sm_90a", "wgmma-specialized")),
    );
}

/// The barrier pipeline stages block scales through shared memory where K is whole stages
/// of 128: each row's stage scales (4, 8 or 16 bytes) copied by one thread with the stage
/// (`cp.async.ca`), decoded to f32 once by that thread into a ring of 3, and read by every
/// promotion. MX E8M0 (4 bytes a row), f32 blockwise 1 x 128 / 128 x 128 (4), 1 x 32 (16)
/// and 1 x 64 (8), beside translated FP4 / FP6 codes; 6 stages (the slot ring of 5 and the
/// decoded ring of 3 both wrap), rows and columns past M and N, and the skinny block (40
/// rows, and 16 rows with K split in clusters); then the warp-specialized block (scales in
/// the slots) on the square problems, and the skinny block fed by TMA. K not whole stages:
/// `wgmma_pipeline_stages_scale_windows`.
#[test]
fn wgmma_pipeline_stages_block_scales() {
    let session = Session::new();
    let mut rng = SplitMix64::new(512);
    let (e4, e5) = (ScaledFormat::F8E4M3, ScaledFormat::F8E5M2);
    let (f4, mx) = (ScaledFormat::F4E2M1, ScaleLayout::MX);
    let wise = |rows, cols| ScaleLayout::Blockwise { rows, cols };
    let pairs: [PipelinePair; 5] = [
        (e4, mx, false, e5, mx, false),
        (f4, mx, true, f4, mx, true),
        (e5, wise(1, 128), false, e4, wise(128, 128), false),
        (e4, wise(1, 32), false, e4, wise(1, 64), false),
        (ScaledFormat::F6E3M2, wise(1, 128), false, f4, mx, true),
    ];
    let mut problems = Vec::new();
    for (m, n, k, cases) in [(130, 72, 768, 5), (40, 72, 512, 2), (16, 200, 1024, 1)] {
        for &pair in pairs.iter().take(cases) {
            problems.push(pair_problem(&mut rng, (m, n, k), pair));
        }
    }
    let text = lowered(&session, &problems, "sm_90a", "auto");
    // Each op's copies of its A and B scale rows, in the prologue and in each of the loop's
    // stages (two, one where operands are translated): 4 bytes a row (E8M0 x 4, f32 per
    // 128) but for 1 x 32 (16 bytes, `.cg` like the codes) and 1 x 64 (8 bytes) blockwise.
    // The MXFP4 ops (square and 40 rows) fold their scales where they allow
    // (`wgmma_pipeline_folds_block_scales`, `wgmma_skinny_folds_block_scales`): three loops
    // (B anchored, by rows, per 32), two more copies per operand. Of the 7 ops with 4-byte
    // rows, 4 are not translated (3 copies per operand), 3 are (2; the MXFP4 ones 4).
    assert_eq!(
        text.matches(", 4, cache =  ca").count(),
        2 * 3 * 4 + 2 * 2 * 3 + 2 * 2 * 2
    );
    assert_eq!(text.matches(", 8, cache =  ca").count(), 3);
    run_and_check(&session, &problems, Some(&emulated("sm_90a", "wgmma")));
    // Warp-specialized: the producer thread of a row copies and decodes its scales into
    // the slot before it arrives (the producer loop's one copy per operand), but for FP6 x
    // FP4, whose 56 KiB slots (both translated) would drop from 4 stages to 3; the MXFP4
    // op's producers have three loops (B anchored, by rows, per 32).
    let square = &problems[..pairs.len()];
    let text = lowered(&session, square, "sm_90a", "wgmma-specialized");
    assert_eq!(text.matches(", 4, cache =  ca").count(), 2 * 2 + 2 * 3);
    assert_eq!(text.matches(", 8, cache =  ca").count(), 1);
    run_and_check(
        &session,
        square,
        Some(&emulated("sm_90a", "wgmma-specialized")),
    );
    // The skinny block fed by TMA (MX E4M3 x E5M2 at 40 rows, and at 16 split in
    // clusters): every thread still copies and decodes its row's scales beside thread 0's
    // boxes (prologue and the loop's two stages).
    let direct: Vec<(String, Problem)> = (problems.into_iter().enumerate())
        .filter(|(i, _)| *i == pairs.len() || *i == pairs.len() + 2)
        .map(|(_, p)| p)
        .collect();
    let text = lowered(&session, &direct, "sm_90a", "wgmma-tma multicast=auto");
    assert_eq!(text.matches("nvgpu.tma.create.descriptor").count(), 2 * 2);
    assert_eq!(text.matches(", 4, cache =  ca").count(), 2 * 3 * 2);
    run_and_check(
        &session,
        &direct,
        Some(&emulated("sm_90a", "wgmma-tma multicast=auto")),
    );
}

/// K not whole stages of 128: the block scales are staged through windows of 4-byte words
/// (`cp.async.ca` of 4 bytes, the word that holds a row's first stage byte and those after,
/// one more than the stage's bytes; words past the scales copy nothing), put in place when
/// decoded. MX rows of K / 32 = 21 and 13 bytes (no row aligned but every fourth; the last
/// stage's bytes run past the row and, in the last row, past the scales), NVFP4's 42
/// (split 16-blocks, 8 bytes a stage: three words), beside translated FP4 / FP6, and f32
/// blockwise (1 x 128 beside MX; 1 x 64 x 128 x 128), which promotions keep loading from
/// global memory there; rows and columns past M and N. Through the barrier pipeline, warp-specialized and the skinny block fed by
/// TMA, each against the oracle (in the emulation, which copies the same windows from the
/// scales' addresses, bytes outside the scales zeros).
#[test]
fn wgmma_pipeline_stages_scale_windows() {
    let session = Session::new();
    let mut rng = SplitMix64::new(672);
    let (e4, e5) = (ScaledFormat::F8E4M3, ScaledFormat::F8E5M2);
    let (f4, mx, nv) = (ScaledFormat::F4E2M1, ScaleLayout::MX, ScaleLayout::NVFP4);
    let wise = |rows, cols| ScaleLayout::Blockwise { rows, cols };
    let cases: [((usize, usize, usize), PipelinePair); 5] = [
        ((130, 72, 672), (e4, mx, false, e5, mx, false)),
        ((200, 136, 416), (f4, mx, true, e4, mx, false)),
        ((96, 80, 672), (f4, nv, true, f4, nv, true)),
        (
            (300, 136, 672),
            (ScaledFormat::F6E3M2, wise(1, 128), false, f4, mx, false),
        ),
        (
            (72, 40, 672),
            (e5, wise(1, 64), false, e4, wise(128, 128), false),
        ),
    ];
    let problems: Vec<(String, Problem)> = cases
        .iter()
        .map(|&(shape, pair)| pair_problem(&mut rng, shape, pair))
        .collect();
    // Each op's window words per row (MX: 2; NVFP4: 3), in the prologue and each of the
    // loop's stages (two; one where operands are translated: ops 1, 2 and 3); no scales
    // folded (a window's bytes are not in place as copied).
    let text = lowered(&session, &problems, "sm_90a", "auto");
    assert_eq!(
        text.matches(", 4, cache =  ca").count(),
        3 * (2 + 2) + 2 * (2 + 2) + 2 * (3 + 3) + 2 * 2
    );
    assert_eq!(text.matches(", 8, cache =  ca").count(), 0);
    assert_eq!(text.matches("nvvm.barrier #nvvm.reduction<or>").count(), 0);
    run_and_check(&session, &problems, Some(&emulated("sm_90a", "wgmma")));
    // Warp-specialized: the producer loop's one copy per operand.
    let text = lowered(&session, &problems, "sm_90a", "wgmma-specialized");
    assert_eq!(
        text.matches(", 4, cache =  ca").count(),
        (2 + 2) + (2 + 2) + (3 + 3) + 2
    );
    run_and_check(
        &session,
        &problems,
        Some(&emulated("sm_90a", "wgmma-specialized")),
    );
    // The skinny block fed by TMA: 40 rows of MX E4M3 x E5M2.
    let skinny = [pair_problem(
        &mut rng,
        (40, 72, 672),
        (e4, mx, false, e5, mx, false),
    )];
    let text = lowered(&session, &skinny, "sm_90a", "wgmma-tma multicast=auto");
    assert_eq!(text.matches(", 4, cache =  ca").count(), 3 * (2 + 2));
    run_and_check(
        &session,
        &skinny,
        Some(&emulated("sm_90a", "wgmma-tma multicast=auto")),
    );
}

/// `rows` x `k` values (row-major) whose every 32-block has its largest magnitude, 5.0,
/// first and the rest normal within 4.5: every block the same E8M0 scale, for the fold
/// tests' edits (`scale_rows`).
fn even_blocks(rng: &mut SplitMix64, rows: usize, k: usize) -> Vec<f32> {
    (0..rows * k)
        .map(|i| match i % 32 {
            0 => 5.0,
            _ => rng.normal().clamp(-4.5, 4.5),
        })
        .collect()
}

/// The problem "`m`x`n`x`k` `what`" of MX operands quantized from the data `a` (`m` x `k`)
/// and `b` (`n` x `k`), in `formats` (A's, B's), stored `packed`, without a bias.
fn mx_data_problem(
    what: &str,
    (m, n, k): (usize, usize, usize),
    (a, b): (&[f32], &[f32]),
    (fa, fb): (ScaledFormat, ScaledFormat),
    packed: bool,
) -> (String, Problem) {
    let mx = ScaleLayout::MX;
    (
        format!("{m}x{n}x{k} {what}"),
        Problem {
            a: operand_of(a, m, k, fa, mx, packed),
            b: operand_of(b, n, k, fb, mx, packed),
            bias: None,
            bf16: false,
        },
    )
}

/// Multiply rows `rows`, K `ks` of the row-major `d` (`k` a row) by `f`.
fn scale_rows(
    d: &mut [f32],
    k: usize,
    rows: std::ops::Range<usize>,
    ks: std::ops::Range<usize>,
    f: f32,
) {
    for r in rows {
        for x in &mut d[r * k + ks.start..r * k + ks.end] {
            *x *= f;
        }
    }
}

/// Rows `rows` of MX operand `q` (32-blocks) zeros over K `ks` (whole blocks; +0 and -0
/// codes in turn), those blocks' scales `scale`: K padded with zeros under E8M0's least
/// scale, 2^-127, as quantizers that clamp `log2(0)` leave it.
fn zero_blocks(
    q: &mut QuantizedTensor,
    rows: std::ops::Range<usize>,
    ks: std::ops::Range<usize>,
    scale: f32,
) {
    let blocks = q.cols.div_ceil(32);
    let negative_zero = 1u8 << (q.format.bit_width() - 1);
    for r in rows {
        for x in ks.clone() {
            q.set_code(r, x, if (r + x) % 2 == 0 { 0 } else { negative_zero });
        }
        for b in ks.start / 32..ks.end / 32 {
            q.scales.values[r * blocks + b] = scale;
        }
    }
}

/// `fold-scales` (the square block, MXFP4 x MXFP4): each block scans its
/// rows' E8M0 scales and, where every row's four of a stage are within 8 binades of their
/// largest (E2M1's smallest image, 0.5, still an E4M3 code: its smallest subnormal) and
/// none is NaN, translates the codes with the scales folded in (the table moved down, read
/// from shared memory) and promotes once a stage; the others run per 32. Run
/// through the emulation, which takes the same branch per block:
/// - smooth data (every block folds, the distances 0-2 binades; B anchored: all of a
///   block's B scales within reach of their largest, so its codes move from that one code
///   and a promotion reads no column scale);
/// - rows whose blocks' maxima are equal (5.0) but for one block 2^-8 smaller (the edge of
///   reach: tile (0, 0) folds, E2M1's 0.5 landing on E4M3's smallest subnormal, the
///   block's images subnormal but 4's and 6's; B anchored at the edge of reach), one 2^-9
///   smaller (A's tile row 1 runs per 32) and a NaN in B's row 200 (a NaN scale: tile
///   column 1 runs per 32, its row of C NaN);
/// - B's stages each within reach but not B's block: rows 0-7's first stage 2^-6 and rows
///   8-15's third 2^5 from the rest (11 binades): tile column 0 folds by rows, not
///   anchored;
/// - MXFP4 A x E4M3 B per channel (B's scales do not change along K: A's alone fold);
/// - packed `f4e3m0` x `f4e3m0` MX (another table: 2^-2 .. 2^4 into E4M3, reach 7);
/// - FP6 E2M3 x E3M2 MX (translated by `ByteRule`s: their offsets move down, the
///   subnormal codes' corrections from the moved tables; reach 6 and 4), every block's
///   largest 5.0 but one block of A's rows 0-7 2^-6 and one of B's 2^-4 smaller (the
///   edges of both reaches):
///   folds in both kernels (the barrier pipeline keeps 3 stages to stage FP6 x FP6's
///   scales);
/// - packed MXFP4 x MXFP6 E3M2 (smooth): the barrier pipeline stages both scales and folds
///   both (warp-specialized, staging them would cost a stage: per 32);
/// - blocks of zeros (packed MXFP4) under 2^-127, 127 binades below their stages' largest:
///   they fold, their distance clamped to the reach in the folded loops. In A's rows 0-7
///   (three blocks), B's 8-15 (two: left out of B's range) and A's 16-23: tile row 0
///   anchored; a NaN scale on a zero block of A's row 200 (tile row 1 per 32, its row of C
///   NaN);
/// - B's blocks under 2^-127 that are not zeros (rows 0-7, stage 1, a stage of them: within
///   its own reach), the rest of tile column 0's B scales 2^-110 (all within reach): they
///   spoil B's anchor (left out of its range they would move by the clamped reach), so
///   tile column 0 folds by rows;
/// - `fold-scales=rows`: the scan without B's range (the IR), and the smooth problem and
///   the blocks of zeros by rows;
/// - `fold-scales=off`: no scan (the IR), and the smooth problem per 32.
///
/// In the IR: one `bar.red.or` per op (`nvvm.barrier` with the `or` reduction) and, where
/// B may be anchored and is 4-bit, one more for "a block of B under 2^-127 is not zeros";
/// B's range reduced per warp where B is folded (`redux.sync`, its largest and
/// smallest code), and
/// the stage's codes copied with the next stage's scales (the scale copies' count: one
/// per loop, three loops where B is folded). Then the same through
/// `kernel=wgmma-specialized`, whose producers scan and translate.
#[test]
fn wgmma_pipeline_folds_block_scales() {
    let session = Session::new();
    let mut rng = SplitMix64::new(77);
    let (f4, mx) = (ScaledFormat::F4E2M1, ScaleLayout::MX);
    let (m, n, k) = (256, 256, 512);
    let smooth = pair_problem(&mut rng, (m, n, k), (f4, mx, true, f4, mx, true));
    // Every 32-block's largest magnitude 5.0 (its first element), then the edits.
    let (mut a, mut b) = (even_blocks(&mut rng, m, k), even_blocks(&mut rng, n, k));
    let scale = |d: &mut [f32], rows, ks, f| scale_rows(d, k, rows, ks, f);
    scale(&mut a, 0..8, 160..192, 2f32.powi(-8));
    scale(&mut b, 0..8, 256..288, 2f32.powi(-8));
    scale(&mut a, 128..136, 416..448, 2f32.powi(-9));
    b[200 * k + 40] = f32::NAN;
    // A packed MXFP4 x MXFP4 problem of the data `a`, `b`.
    let mxfp4 = |what: &str, a: &[f32], b: &[f32]| {
        mx_data_problem(&format!("mxfp4 {what}"), (m, n, k), (a, b), (f4, f4), true)
    };
    let edges = mxfp4("folds at the edge of reach", &a, &b);
    // B's stages within reach, its block not: folded by rows.
    let (a, mut b) = (even_blocks(&mut rng, m, k), even_blocks(&mut rng, n, k));
    scale(&mut b, 0..8, 0..128, 2f32.powi(-6));
    scale(&mut b, 8..16, 256..384, 2f32.powi(5));
    let rows = mxfp4("folds by rows", &a, &b);
    // Only A's scales change along K (B per channel, E4M3 as stored): A's alone fold.
    let (e4, channel) = (ScaledFormat::F8E4M3, ScaleLayout::PerChannel);
    let one_side = pair_problem(
        &mut rng,
        (200, 136, 384),
        (f4, mx, true, e4, channel, false),
    );
    // A custom 4-bit format (packed), E4M3 images 2^-2 .. 2^4: reach 7.
    let e3m0 = ScaledFormat::custom(3, 0);
    let custom = pair_problem(&mut rng, (192, 128, 256), (e3m0, mx, true, e3m0, mx, true));
    let (e2m3, e3m2) = (ScaledFormat::F6E2M3, ScaledFormat::F6E3M2);
    let (m6, n6, k6) = (192, 128, 256);
    let (mut a6, mut b6) = (even_blocks(&mut rng, m6, k6), even_blocks(&mut rng, n6, k6));
    scale_rows(&mut a6, k6, 0..8, 64..96, 2f32.powi(-6));
    scale_rows(&mut b6, k6, 0..8, 160..192, 2f32.powi(-4));
    let fp6 = mx_data_problem(
        "mxfp6 folds at the edges of reach",
        (m6, n6, k6),
        (&a6, &b6),
        (e2m3, e3m2),
        false,
    );
    // Packed MXFP4 x MXFP6 E3M2: the barrier pipeline stages both scales and folds both.
    let mixed = pair_problem(&mut rng, (128, 136, 256), (f4, mx, true, e3m2, mx, false));
    // Blocks of zeros under 2^-127.
    let least = 2f32.powi(-127);
    let (a, b) = (even_blocks(&mut rng, m, k), even_blocks(&mut rng, n, k));
    let mut zeros = mxfp4("blocks of zeros under 2^-127", &a, &b);
    zero_blocks(&mut zeros.1.a.q, 0..8, 64..96, least);
    zero_blocks(&mut zeros.1.a.q, 0..8, 192..224, least);
    zero_blocks(&mut zeros.1.a.q, 0..8, 480..512, least);
    zero_blocks(&mut zeros.1.b.q, 8..16, 128..160, least);
    zero_blocks(&mut zeros.1.b.q, 8..16, 320..352, least);
    zero_blocks(&mut zeros.1.a.q, 16..24, 256..288, least);
    zero_blocks(&mut zeros.1.a.q, 200..201, 32..64, f32::NAN);
    let (a, mut b) = (even_blocks(&mut rng, m, k), even_blocks(&mut rng, n, k));
    scale(&mut b, 0..128, 0..k, 2f32.powi(-110));
    scale(&mut b, 0..8, 128..256, 2f32.powi(-17));
    let spoiled = mxfp4("blocks under 2^-127 not zeros", &a, &b);
    assert_eq!(spoiled.1.b.q.scales.values[k / 32 + 5], least);
    assert_eq!(spoiled.1.b.q.scales.values[k / 32 + 3], 2f32.powi(-110));
    let problems = [
        smooth, edges, rows, one_side, custom, fp6, mixed, zeros, spoiled,
    ];
    let text = lowered(&session, &problems, "sm_90a", "wgmma");
    // (A second where B may be anchored and is 4-bit: all but `one_side`, `fp6`, `mixed`.)
    assert_eq!(
        text.matches("nvvm.barrier #nvvm.reduction<or>").count(),
        9 + 6
    );
    // B folded (all but `one_side`): its range's two reductions.
    assert_eq!(text.matches("nvvm.redux.sync").count(), 8 * 2);
    // Per op and operand with block scales: the prologue's copy, and one in each loop
    // (anchored, by rows, per 32; one stage per iteration: the operands are translated).
    assert_eq!(
        text.matches(", 4, cache =  ca").count(),
        2 * 4 + 2 * 4 + 2 * 4 + 3 + 2 * 4 + 2 * 4 + 2 * 4 + 2 * 4 + 2 * 4
    );
    run_and_check(&session, &problems, Some(&emulated("sm_90a", "wgmma")));
    // Warp-specialized: the producers scan (the consumers join the `bar.red.or`) and meet
    // at their own barrier (1, 128 threads) at the top of each stage and before the last
    // stages' translations, in both producer loops; the scales' copies travel a stage ahead
    // in each (one per operand with block scales).
    let text = lowered(&session, &problems, "sm_90a", "wgmma-specialized");
    // (MXFP4 x MXFP6: its slots keep 4 stages only without the scales, so it reads them
    // from global memory and runs per 32.)
    assert_eq!(
        text.matches("nvvm.barrier #nvvm.reduction<or>").count(),
        8 + 6
    );
    assert_eq!(text.matches("nvvm.redux.sync").count(), 7 * 2);
    assert_eq!(
        text.matches("number_of_threads = ").count(),
        (7 * 3 + 2) * 2
    );
    assert_eq!(
        text.matches(", 4, cache =  ca").count(),
        (2 + 2 + 2 + 2 + 2 + 2 + 2) * 3 + 2
    );
    run_and_check(
        &session,
        &problems,
        Some(&emulated("sm_90a", "wgmma-specialized")),
    );
    let with = |fold, emulate| {
        format!(
            "builtin.module(func.func(lowp-to-nvvm{{chip=sm_90a kernel=wgmma fold-scales={fold} \
             emulate={emulate}}}))"
        )
    };
    // `rows`: folded, never anchored: no reduction of B's range, two loops per op; the
    // smooth problem (anchored above) and the blocks of zeros by rows.
    let text = lowered_with(&session, &problems, &with("rows", false));
    assert_eq!(text.matches("nvvm.barrier #nvvm.reduction<or>").count(), 9);
    assert_eq!(text.matches("nvvm.redux.sync").count(), 0);
    assert_eq!(
        text.matches(", 4, cache =  ca").count(),
        (2 + 2 + 2 + 1 + 2 + 2 + 2 + 2 + 2) * 3
    );
    let by_rows = [
        problems[0].clone(),
        problems[7].clone(),
        problems[8].clone(),
    ];
    run_and_check(&session, &by_rows, Some(&with("rows", true)));
    let off = |emulate| with("off", emulate);
    let text = lowered_with(&session, &problems, &off(false));
    assert_eq!(text.matches("nvvm.barrier #nvvm.reduction<or>").count(), 0);
    assert_eq!(
        text.matches(", 4, cache =  ca").count(),
        (2 + 2 + 2 + 1 + 2 + 2 + 2 + 2 + 2) * 2
    );
    // (The per-32 loop's numerics: the blocks above that do not fold, and here the smooth
    // problem through the kernel without the scan.)
    run_and_check(&session, &problems[..1], Some(&off(true)));
}

/// `fold-scales` in the skinny block (swap AB: B's 64 rows are the instruction's A, scanned
/// by the last two warps, which reduce B's range): every block of a decode step holds all
/// of A's rows, so one row of A out of reach sends every block per 32; B's rows decide per
/// tile. Through the emulation, which takes the same branch per block and per split:
/// - smooth packed MXFP4 at 16 x 200 x 1024 (split in clusters of 4: each split scans its
///   own 2 stages; anchored);
/// - 48 x 136 x 512, every block's largest 5.0, A's rows 0-7 and B's 0-7 one block 2^-8
///   smaller (the edge of reach: tile 0 anchored there) and a NaN in B's row 100 (tile 1
///   per 32, its column of C NaN; tile 2 anchored);
/// - the same with A's rows 8-15 one block 2^-9 smaller: every block per 32;
/// - B's rows 0-7 2^-6 in stage 0 and 8-15 2^5 in stage 2 (each stage within reach, the
///   tile not): tile 0 by rows;
/// - MXFP4 A x E4M3 B per channel at 16 rows (A's scales alone fold; no range of B);
/// - FP6 E2M3 x E3M2 MX at 32 x 128 x 256, at the edges of both reaches (6 and 4);
/// - 16 x 72 x 1152 with `split-k=8`: 9 stages, 2 a split, ranks 5-7 with none (their scans
///   read no stage past K; their partial sums are zeros);
/// - K padded: both operands' last 64 of K zeros under 2^-127 (and B's rows 8-15 a block
///   at 128 too): every tile anchored (the zero blocks out of reach, clamped; B's left out
///   of its range);
/// - B's rows 0-7 a stage of blocks under 2^-127 that are not zeros, the rest of tile 0's
///   B scales 2^-110: tile 0 by rows (they spoil the anchor).
///
/// In the IR: one `bar.red.or` per op and one more where B may be anchored and is 4-bit,
/// two `redux.sync` where B folds.
#[test]
fn wgmma_skinny_folds_block_scales() {
    let session = Session::new();
    let mut rng = SplitMix64::new(4077);
    let (f4, mx) = (ScaledFormat::F4E2M1, ScaleLayout::MX);
    let smooth = pair_problem(&mut rng, (16, 200, 1024), (f4, mx, true, f4, mx, true));
    let (m, n, k) = (48, 136, 512);
    let mxfp4 = |what: &str, a: &[f32], b: &[f32]| {
        let mut p = mx_data_problem(
            &format!("mxfp4 skinny {what}"),
            (m, n, k),
            (a, b),
            (f4, f4),
            true,
        );
        p.1.bias = Some(vec![0.5; n]);
        p
    };
    let (mut a, mut b) = (even_blocks(&mut rng, m, k), even_blocks(&mut rng, n, k));
    scale_rows(&mut a, k, 0..8, 160..192, 2f32.powi(-8));
    scale_rows(&mut b, k, 0..8, 256..288, 2f32.powi(-8));
    b[100 * k + 40] = f32::NAN;
    let edges = mxfp4("folds at the edge of reach", &a, &b);
    scale_rows(&mut a, k, 8..16, 416..448, 2f32.powi(-9));
    let missed = mxfp4("A out of reach", &a, &b);
    let (a, mut b) = (even_blocks(&mut rng, m, k), even_blocks(&mut rng, n, k));
    scale_rows(&mut b, k, 0..8, 0..128, 2f32.powi(-6));
    scale_rows(&mut b, k, 8..16, 256..384, 2f32.powi(5));
    let rows = mxfp4("folds by rows", &a, &b);
    let (e4, channel) = (ScaledFormat::F8E4M3, ScaleLayout::PerChannel);
    let one_side = pair_problem(&mut rng, (16, 136, 384), (f4, mx, true, e4, channel, false));
    let (e2m3, e3m2) = (ScaledFormat::F6E2M3, ScaledFormat::F6E3M2);
    let (m6, n6, k6) = (32, 128, 256);
    let (mut a6, mut b6) = (even_blocks(&mut rng, m6, k6), even_blocks(&mut rng, n6, k6));
    scale_rows(&mut a6, k6, 0..8, 64..96, 2f32.powi(-6));
    scale_rows(&mut b6, k6, 0..8, 160..192, 2f32.powi(-4));
    let fp6 = mx_data_problem(
        "mxfp6 skinny folds at the edges of reach",
        (m6, n6, k6),
        (&a6, &b6),
        (e2m3, e3m2),
        false,
    );
    let (a, b) = (even_blocks(&mut rng, m, k), even_blocks(&mut rng, n, k));
    let mut padded = mxfp4("K padded with zeros under 2^-127", &a, &b);
    let least = 2f32.powi(-127);
    zero_blocks(&mut padded.1.a.q, 0..m, 448..512, least);
    zero_blocks(&mut padded.1.b.q, 0..n, 448..512, least);
    zero_blocks(&mut padded.1.b.q, 8..16, 128..160, least);
    let (a, mut b) = (even_blocks(&mut rng, m, k), even_blocks(&mut rng, n, k));
    scale_rows(&mut b, k, 0..64, 0..k, 2f32.powi(-110));
    scale_rows(&mut b, k, 0..8, 128..256, 2f32.powi(-17));
    // (No bias: 0.5 would hide products of 2^-105.)
    let mut spoiled = mxfp4("blocks under 2^-127 not zeros", &a, &b);
    spoiled.1.bias = None;
    assert_eq!(spoiled.1.b.q.scales.values[k / 32 + 5], least);
    let problems = [smooth, edges, missed, rows, one_side, fp6, padded, spoiled];
    let text = lowered(&session, &problems, "sm_90a", "wgmma");
    assert_eq!(
        text.matches("gpu.dynamic_shared_memory").count(),
        problems.len()
    );
    // (A second where B may be anchored and is 4-bit: all but `one_side` and `fp6`.)
    assert_eq!(
        text.matches("nvvm.barrier #nvvm.reduction<or>").count(),
        8 + 6
    );
    // B folded (all but `one_side`): its range's two reductions.
    assert_eq!(text.matches("nvvm.redux.sync").count(), 7 * 2);
    run_and_check(&session, &problems, Some(&emulated("sm_90a", "wgmma")));
    // Splits with no stages.
    let empty = [pair_problem(
        &mut rng,
        (16, 72, 1152),
        (f4, mx, true, f4, mx, true),
    )];
    let split = emulated("sm_90a", "wgmma split-k=8");
    let text = lowered_with(&session, &empty, &split.replace(" emulate=true", ""));
    assert!(text.contains("nvvm.barrier #nvvm.reduction<or>"));
    run_and_check(&session, &empty, Some(&split));
}

/// `fold-scales` where K is not whole stages of 128 (MX: K / 32 scale bytes a row, not a
/// multiple of 4): each row's stage scales are copied as a window of two words and settled
/// (`settle_scales`: put in place, the last stage's bytes past K replaced by the last
/// inside, where the next row's first scales would be) before the folds read them; the scan
/// reads them byte by byte. Through the emulation, in the barrier pipeline and the
/// warp-specialized square block and in the skinny block (16 and 48 rows):
/// - smooth packed MXFP4 at 256 x 256 x 320 and 16 x 200 x 2880 (gpt-oss's K): anchored;
/// - odd rows' first stage 2^12 times the rest, K = 320 (an even row's last stage's two
///   blocks past K would hold the next row's first two scales, 12 binades above its own:
///   its blocks moved past the reach, clamped): by rows, each stage within reach;
/// - K = 416, its last 96 zeros under 2^-127 (the last stage one block inside K, of
///   zeros): anchored;
/// - MXFP6 E2M3 x E3M2 at 192 x 128 x 224 (byte rules, not clamped; three blocks of four
///   in the last stage), every row's first stage 2^3 times the rest.
///
/// In the IR: every op scans (`bar.red.or`), the 4-bit ones twice (B may be anchored).
#[test]
fn wgmma_folds_scale_windows() {
    let session = Session::new();
    let mut rng = SplitMix64::new(2880);
    let (f4, mx) = (ScaledFormat::F4E2M1, ScaleLayout::MX);
    let mxfp4 = |what: &str, shape, a: &[f32], b: &[f32]| {
        mx_data_problem(&format!("mxfp4 {what}"), shape, (a, b), (f4, f4), true)
    };
    let mut problems = vec![];
    for (m, n, k) in [(256, 256, 320), (48, 136, 320)] {
        problems.push(pair_problem(
            &mut rng,
            (m, n, k),
            (f4, mx, true, f4, mx, true),
        ));
        let (mut a, mut b) = (even_blocks(&mut rng, m, k), even_blocks(&mut rng, n, k));
        for (d, rows) in [(&mut a, m), (&mut b, n)] {
            for r in (1..rows).step_by(2) {
                scale_rows(d, k, r..r + 1, 0..128, 2f32.powi(12));
            }
        }
        problems.push(mxfp4(
            "odd rows' first stages 2^12 above",
            (m, n, k),
            &a,
            &b,
        ));
        let (a, b) = (even_blocks(&mut rng, m, 416), even_blocks(&mut rng, n, 416));
        let mut padded = mxfp4("K padded with zeros under 2^-127", (m, n, 416), &a, &b);
        let least = 2f32.powi(-127);
        zero_blocks(&mut padded.1.a.q, 0..m, 320..416, least);
        zero_blocks(&mut padded.1.b.q, 0..n, 320..416, least);
        problems.push(padded);
    }
    problems.push(pair_problem(
        &mut rng,
        (16, 200, 2880),
        (f4, mx, true, f4, mx, true),
    ));
    let (e2m3, e3m2) = (ScaledFormat::F6E2M3, ScaledFormat::F6E3M2);
    let (m6, n6, k6) = (192, 128, 224);
    let (mut a6, mut b6) = (even_blocks(&mut rng, m6, k6), even_blocks(&mut rng, n6, k6));
    scale_rows(&mut a6, k6, 0..m6, 0..128, 2f32.powi(3));
    scale_rows(&mut b6, k6, 0..n6, 0..128, 2f32.powi(3));
    problems.push(mx_data_problem(
        "mxfp6 first stages 2^3 above",
        (m6, n6, k6),
        (&a6, &b6),
        (e2m3, e3m2),
        false,
    ));
    let text = lowered(&session, &problems, "sm_90a", "wgmma");
    assert_eq!(
        text.matches("nvvm.barrier #nvvm.reduction<or>").count(),
        7 * 2 + 1
    );
    run_and_check(&session, &problems, Some(&emulated("sm_90a", "wgmma")));
    let square: Vec<_> = problems
        .iter()
        .filter(|p| p.1.a.q.rows > 64)
        .cloned()
        .collect();
    let text = lowered(&session, &square, "sm_90a", "wgmma-specialized");
    assert_eq!(
        text.matches("nvvm.barrier #nvvm.reduction<or>").count(),
        3 * 2 + 1
    );
    run_and_check(
        &session,
        &square,
        Some(&emulated("sm_90a", "wgmma-specialized")),
    );
}

/// 130 x 72 x 256 NVFP4 x NVFP4 (packed) with a bias, A's values with edge blocks: four
/// rows each of a block below the smallest UE4M3 step (2^-12, 2^-14 times the values), of
/// zeros, of -0 and of large values (2^10), and NaNs at `nans` (row, column), whose
/// blocks' scales are NaN. A has no global scale (a NaN would make it NaN, and every output
/// with it), B has one.
fn nvfp4_edges(rng: &mut SplitMix64, nans: &[(usize, usize)]) -> (String, Problem) {
    let (m, n, k) = (130, 72, 256);
    let mut a: Vec<f32> = (0..m * k)
        .map(|i| rng.normal() * (1.0 + (i % 5) as f32))
        .collect();
    for (rows, ks, f) in [
        (0..4, 16..32, 2f32.powi(-12)),
        (4..8, 48..64, 0.0),
        (8..12, 64..80, 2f32.powi(-14)),
        (12..16, 96..112, -0.0),
        (16..20, 128..144, 2f32.powi(10)),
    ] {
        for r in rows {
            for x in &mut a[r * k + ks.start..r * k + ks.end] {
                *x *= f;
            }
        }
    }
    for &(r, c) in nans {
        a[r * k + c] = f32::NAN;
    }
    let f4 = ScaledFormat::F4E2M1;
    let edges = Problem {
        a: operand_of(&a, m, k, f4, ScaleLayout::NVFP4, true),
        b: operand(rng, n, k, f4, ScaleLayout::NVFP4_GLOBAL, true),
        bias: Some(rng.normal_vec(n)),
        bf16: false,
    };
    assert!(edges.a.q.scales.global.is_none());
    assert!(edges.b.q.scales.global.is_some_and(f32::is_finite));
    (format!("{m}x{n}x{k} nvfp4 x nvfp4 with edge blocks"), edges)
}

/// NVFP4's 16-blocks in the cp.async pipeline on the split route (`nvfp4=split`; the
/// default takes the f16 route where it applies): one instruction per 16-block (8 a stage),
/// each promoted with its UE4M3 scales; the translated operand's tiles split in two halves
/// (half h: the 16-code chunks at h of every 32, zeros in the rest, cleared once before the
/// first stage), so that an instruction of K 32 on half h sums only its block. Packed NVFP4
/// x NVFP4 with edge blocks in A (UE4M3 scales subnormal, a zero block, NaN, each in both
/// halves of a 32), NVFP4 x E4M3 (A split, B as stored, K 2.5 stages), MXFP8 x NVFP4 (B
/// split: A is not translated), the skinny block (16 rows, K split in clusters of 4; 40
/// rows beside E4M3 per channel), MX with 16-blocks (packed FP4 x FP6, 4 stages); then warp-specialized on the square ones and TMA loading the operand used as
/// stored (square and skinny).
#[test]
fn wgmma_pipeline_splits_16_blocks() {
    let session = Session::new();
    let mut rng = SplitMix64::new(16);
    let (f4, e4) = (ScaledFormat::F4E2M1, ScaledFormat::F8E4M3);
    let (nv, nvg) = (ScaleLayout::NVFP4, ScaleLayout::NVFP4_GLOBAL);
    let edges = nvfp4_edges(&mut rng, &[(20, 100), (21, 120)]);
    let per_tensor = ScaleLayout::PerTensor;
    let problems = [
        edges,
        pair_problem(
            &mut rng,
            (72, 72, 320),
            (f4, nv, false, e4, per_tensor, false),
        ),
        pair_problem(
            &mut rng,
            (72, 136, 256),
            (e4, ScaleLayout::MX, false, f4, nvg, true),
        ),
        pair_problem(&mut rng, (16, 72, 1024), (f4, nvg, true, f4, nvg, true)),
        // (E4M3 beside the split tiles: E5M2's infinities would meet their zero halves,
        // so E5M2 takes the register-staged kernel; lit/Run/Cuda/emulate.test.)
        pair_problem(
            &mut rng,
            (40, 72, 256),
            (f4, nv, false, e4, ScaleLayout::PerChannel, false),
        ),
        // MX with 16-blocks (E8M0), packed FP4 x FP6: both translated, 3 stages without
        // staged scales.
        pair_problem(
            &mut rng,
            (72, 72, 256),
            (
                f4,
                ScaleLayout::Mx { block: 16 },
                true,
                ScaledFormat::F6E2M3,
                ScaleLayout::MX,
                false,
            ),
        ),
    ];
    let text = lowered(&session, &problems, "sm_90a", "auto nvfp4=split");
    assert_eq!(
        text.matches("gpu.dynamic_shared_memory").count(),
        problems.len(),
        "every op takes the pipelined kernel"
    );
    // Per op, the loop's stage of 8 instructions, one per 16-block (one stage per loop
    // iteration where operands are translated).
    assert_eq!(
        text.matches("nvvm.wgmma.mma_async").count(),
        8 * problems.len()
    );
    // Where K is whole stages the UE4M3 scales are staged (8 bytes a row and stage, copied
    // in the prologue and in the loop's stage): both operands of the edge problem (its
    // barrier pipeline keeps 5 stages with them: 5 x 18 KiB + 2 x (32 + 16) KiB + 2 x 8
    // KiB + 1 KiB) and of the 16-row one, B of MXFP8 x NVFP4 (and its A's E8M0, 4 bytes),
    // A of the 40-row one; at K = 320 A's through windows (3 words a row and stage); FP4 x
    // FP6's A (E8M0 16-blocks, 8 bytes) and B (4 bytes): 4 stages with them, 216064 bytes
    // (3 without, while the translated tiles were three a staged operand).
    assert_eq!(
        text.matches(", 8, cache =  ca").count(),
        2 * (2 + 1 + 2 + 1 + 1)
    );
    assert_eq!(text.matches(", 4, cache =  ca").count(), 2 + 2 * 4);
    assert!(text.contains("dynamic_shared_memory_size %c207872_i32"));
    assert!(text.contains("dynamic_shared_memory_size %c216064_i32"));
    run_and_check(
        &session,
        &problems,
        Some(&emulated("sm_90a", "wgmma nvfp4=split")),
    );
    let square = &problems[..3];
    run_and_check(
        &session,
        square,
        Some(&emulated("sm_90a", "wgmma-specialized nvfp4=split")),
    );
    run_and_check(
        &session,
        &problems[1..3],
        Some(&emulated("sm_90a", "wgmma-tma multicast=auto")),
    );
    // The skinny block fed by TMA (B as stored by boxes, A split and translated).
    run_and_check(
        &session,
        &problems[4..5],
        Some(&emulated("sm_90a", "wgmma-tma multicast=auto")),
    );
}

/// `nvfp4=f16`: NVFP4's 16-blocks as f16 codes times their UE4M3 scales (exact: every
/// product of E2M1 and UE4M3 is an f16 value) into `m64n128k16.f32.f16.f16`, stages of 64
/// codes, each chunk's scale word copied with it. The edge problem's blocks (below the
/// smallest UE4M3 step, zeros, -0, large, NaN scales; 130 rows: the last tile's rows
/// clamped) and B's global scale, K of 5 stages, unpacked E2M1 (a code a byte: a
/// block a chunk) against packed, a custom E3M0, in the barrier pipeline and
/// warp-specialized; the skinny block (16 rows), also split among a cluster. FP8 beside
/// NVFP4 (its scales per tensor or per channel, applied in the epilogue) is widened to f16
/// as stored: E4M3 and E5M2 with edge values (`fp8_edges`), as B, as A, and as the skinny
/// block's A. Ops the route does not take keep the split one: FP8 whose scales change along
/// K (MXFP8), K not whole stages of 64, and E3M0 with bias -2 (its largest value 512, times
/// a UE4M3 scale, overflows f16).
#[test]
fn wgmma_pipeline_f16_route() {
    let session = Session::new();
    let mut rng = SplitMix64::new(1616);
    let (f4, e4, e5) = (
        ScaledFormat::F4E2M1,
        ScaledFormat::F8E4M3,
        ScaledFormat::F8E5M2,
    );
    let (nv, nvg) = (ScaleLayout::NVFP4, ScaleLayout::NVFP4_GLOBAL);
    let (tensor, channel) = (ScaleLayout::PerTensor, ScaleLayout::PerChannel);
    let edges = nvfp4_edges(&mut rng, &[(20, 100), (129, 200)]);
    // FP8 beside NVFP4 (`fp8` x: the FP8 operand, 0 for A): B E4M3 per tensor, A E5M2 per
    // channel (a NaN row), the skinny block's A E4M3 per channel.
    let fp8 = |rng: &mut SplitMix64, (m, n, k), x: usize, f, layout| {
        let rows = [m, n];
        let codes = fp8_edges(rng, rows[x], k, f, layout);
        let packed = operand(rng, rows[1 - x], k, f4, nvg, true);
        let (a, b) = if x == 0 {
            (codes, packed)
        } else {
            (packed, codes)
        };
        let name = format!("{m}x{n}x{k} {} x {}", a.q.format, b.q.format);
        let bias = Some(rng.normal_vec(n));
        let problem = Problem {
            a,
            b,
            bias,
            bf16: false,
        };
        (name, problem)
    };
    let widened = [
        fp8(&mut rng, (72, 72, 256), 1, e4, tensor),
        fp8(&mut rng, (136, 72, 192), 0, e5, channel),
        fp8(&mut rng, (16, 72, 256), 0, e4, channel),
    ];
    let taken = [
        edges,
        pair_problem(&mut rng, (72, 136, 320), (f4, nv, true, f4, nvg, true)),
        pair_problem(&mut rng, (136, 72, 192), (f4, nv, false, f4, nv, true)),
        // The skinny block (swap AB, 16 rows: half the copiers bring A's chunks), and
        // split-K (a cluster of 4 at 16 x 200 x 1024, its splits' sums gathered).
        pair_problem(&mut rng, (16, 72, 256), (f4, nvg, true, f4, nvg, true)),
        pair_problem(&mut rng, (16, 200, 1024), (f4, nv, true, f4, nvg, true)),
        // A custom format the fields prove: E3M0 (0.25 .. 16) times UE4M3.
        pair_problem(
            &mut rng,
            (72, 72, 128),
            (ScaledFormat::custom(3, 0), nv, true, f4, nvg, true),
        ),
    ];
    let kept = [
        pair_problem(
            &mut rng,
            (72, 72, 256),
            (f4, nv, true, e4, ScaleLayout::MX, false),
        ),
        pair_problem(&mut rng, (72, 72, 224), (f4, nvg, true, f4, nvg, true)),
        // E3M0 with bias -2 reaches 512: times 448 past f16's largest value.
        pair_problem(
            &mut rng,
            (72, 72, 256),
            (
                ScaledFormat::try_custom_with_bias(3, 0, -2).unwrap(),
                nv,
                true,
                f4,
                nv,
                true,
            ),
        ),
    ];
    let f16 = |kernel: &str, emulate: bool| {
        format!(
            "builtin.module(func.func(lowp-to-nvvm{{chip=sm_90a kernel={kernel} nvfp4=f16 \
             emulate={emulate}}}))"
        )
    };
    let text = lowered_with(&session, &taken, &f16("wgmma", false));
    // Per op one stage a loop iteration: 4 instructions of K 16, no split halves.
    assert_eq!(
        text.matches("nvvm.wgmma.mma_async").count(),
        4 * taken.len()
    );
    assert_eq!(text.matches("k = 16>").count(), 4 * taken.len());
    assert_eq!(
        text.matches("A[<f16>, <one>, <row>], B[<f16>, <one>, <col>]")
            .count(),
        4 * taken.len()
    );
    // A scale word with each chunk a thread copies (packed: one of A and one of B, the
    // unpacked A two; skinny: one of B, one of A's 32 chunks by the first 32 threads), in
    // the prologue and in the loop; no staged scale rows (8 bytes).
    assert!(text.contains("nvvm.convert.f8x2.to.f16x2"));
    assert!(!text.contains(", 8, cache =  ca"));
    assert_eq!(
        text.matches(", 4, cache =  ca").count(),
        2 * (2 + 2 + 3 + 2 + 2 + 2)
    );
    // FP8 widened: as stored, no scale word copied with it (the NVFP4 operand's one a
    // chunk: square, one of 256 a thread; skinny, one of B's), E4M3 by `cvt` a pair, E5M2
    // by byte permutes only.
    let text = lowered_with(&session, &widened, &f16("auto", false));
    assert_eq!(text.matches("k = 16>").count(), 4 * widened.len());
    assert_eq!(text.matches(", 4, cache =  ca").count(), 2 * widened.len());
    let text = lowered_with(&session, &widened[1..2], &f16("auto", false));
    assert!(text.contains("nvvm.convert.f8x2.to.f16x2"), "B's scales");
    let text = lowered_with(&session, &kept, &f16("auto", false));
    assert!(!text.contains("k = 16>"), "the split route keeps these");
    assert_eq!(text.matches("k = 32>").count(), 8 * kept.len());
    run_and_check(&session, &taken, Some(&f16("wgmma", true)));
    run_and_check(&session, &taken, Some(&f16("wgmma-specialized", true)));
    run_and_check(&session, &widened, Some(&f16("auto", true)));
    run_and_check(
        &session,
        &widened[..2],
        Some(&f16("wgmma-specialized", true)),
    );
    run_and_check(&session, &kept, Some(&f16("auto", true)));
}

/// An FP8 operand (`rows x k`, scales per tensor or per channel) whose codes reach the
/// edges: runs of zeros and -0, values that quantize to subnormals (E4M3's below 2^-6,
/// E5M2's below 2^-14: a whole row per tensor, parts of rows per channel) and to nothing,
/// and, per channel, a NaN in row 3 (its scale NaN: one row of C NaN, the others checked).
fn fp8_edges(
    rng: &mut SplitMix64,
    rows: usize,
    k: usize,
    f: ScaledFormat,
    layout: ScaleLayout,
) -> Operand {
    let mut data: Vec<f32> = (0..rows * k)
        .map(|i| rng.normal() * (1.0 + (i % 7) as f32))
        .collect();
    for (r, ks, factor) in [
        (0, 0..64, 0.0),
        (1, 16..48, -0.0),
        (2, 0..k, 2f32.powi(-17)),
        (4, 32..96, 2f32.powi(-31)),
        (5, 64..128, 2f32.powi(-40)),
        (6, 0..32, 2f32.powi(-14)),
    ] {
        for x in &mut data[r * k + ks.start..r * k + ks.end] {
            *x *= factor;
        }
    }
    if layout == ScaleLayout::PerChannel {
        data[3 * k + 5] = f32::NAN;
    }
    let operand = operand_of(&data, rows, k, f, layout, false);
    // The edges are there: subnormal codes, +0 and -0.
    let values: Vec<f32> = operand.q.codes.iter().map(|&c| f.decode(c)).collect();
    let subnormal = |v: &f32| v.is_finite() && *v != 0.0 && v.abs() < f.min_normal();
    assert!(values.iter().any(subnormal), "{f}: no subnormal code");
    assert!(operand.q.codes.contains(&0) && operand.q.codes.contains(&f.sign_mask()));
    operand
}

/// `kernel=wgmma-tma`: the warp-specialized block with the operands used as stored (E4M3 /
/// E5M2) loaded by TMA boxes of 128 rows x 128 bytes, run through the emulation of TMA's
/// tile mode (element by element from the box origin the kernel computes, zeros outside the
/// tensor, the 128-byte swizzle by address bits) beside the producer's cp.async copies and
/// translations of the other operand: both operands by TMA (per-tensor; blockwise x MX;
/// MXFP8 with K whole stages, whose E8M0 scales the producer warpgroup stages),
/// only B (packed E2M1 A), only A (FP6 B). Rows past M and N and a last stage 32 codes
/// into K come out of the boxes' zero fill; 1160 x 200 (10 x 2 tiles) runs the grouped
/// launch order through a full group of 8 rows of tiles and a partial one. Checked first in the kernel's IR: one host
/// tensor map and one box load per TMA operand; `arrive.expect_tx` where TMA feeds
/// everything, `expect_tx` (the producers arrive after their copies) where it does not.
/// The barriers' arrival counts are checked in lit (Conversion/LowpToNVVM/wgmma-tma.mlir).
#[test]
fn wgmma_tma_matches_the_oracle() {
    let session = Session::new();
    let mut rng = SplitMix64::new(90);
    let (e4, e5) = (ScaledFormat::F8E4M3, ScaledFormat::F8E5M2);
    let (f4, mx) = (ScaledFormat::F4E2M1, ScaleLayout::MX);
    let pairs: [PipelinePair; 4] = [
        (
            e4,
            ScaleLayout::PerTensor,
            false,
            e5,
            ScaleLayout::PerTensor,
            false,
        ),
        (
            e5,
            ScaleLayout::Blockwise { rows: 1, cols: 128 },
            false,
            e4,
            mx,
            false,
        ),
        (f4, mx, true, e4, mx, false),
        (
            e4,
            ScaleLayout::PerChannel,
            false,
            ScaledFormat::F6E3M2,
            mx,
            false,
        ),
    ];
    // K: 4 stages (the last 32 codes into K), 3 (the consumers' pairs of stages and one
    // after them) and 1 (no pair). The fifth: 10 x 2 tiles, so the grouped launch order
    // (groups of 8 rows of tiles) has a full group and a partial one, and, the tiles being
    // even along M and N, B multicast in clusters of 2 (each block's half of B's box from
    // its own tile's origin: a pairing that left the tile's column would read the wrong
    // rows); the sixth multicasts B beside packed E2M1 A that the producers translate (3
    // stages). Then the skinny block (M <= 64: one warpgroup, the barrier pipeline fed by
    // TMA): 16 x 200 x 1184 (K's 10 stages split in clusters of 4: 3 + 3 + 3 + 1, the last
    // stage partial) and packed E2M1 A of 40 rows (48 in the block) beside TMA's E4M3 B (4
    // stages in clusters of 2).
    let shapes = [
        (130, 72, 416),
        (130, 72, 416),
        (130, 72, 288),
        (130, 72, 416),
    ]
    .into_iter()
    .chain([
        (1160, 200, 128),
        (256, 256, 384),
        (256, 256, 384),
        (16, 200, 1184),
        (40, 72, 416),
    ]);
    // MXFP8 with both operands by TMA and K whole stages: the producer warpgroup copies
    // and decodes the E8M0 scales (every producer arrives) beside thread 0's boxes.
    let mxfp8: [PipelinePair; 1] = [(e4, mx, false, e5, mx, false)];
    let problems: Vec<(String, Problem)> = pairs
        .iter()
        .chain(&pairs[..1])
        .chain(&pairs[2..3])
        .chain(&mxfp8)
        .chain(&pairs[..1])
        .chain(&pairs[2..3])
        .zip(shapes)
        .map(|(&pair, shape)| pair_problem(&mut rng, shape, pair))
        .collect();
    let text = lowered(&session, &problems, "sm_90a", "wgmma-tma multicast=auto");
    // One tensor map per TMA operand (11 square, 3 skinny); B's of the three multicasting
    // problems boxes half of the block's rows. The square block's producer issues each box
    // once in its loop; the skinny block's thread 0 in the prologue and in each of the
    // loop's stages: two (3 per operand), one where A is translated (packed E2M1: 2).
    // `arrive.expect_tx` where thread 0 alone feeds the ring; `expect_tx` where the
    // producers also copy (packed A, FP6 B; staged E8M0 scales). The scale copies: at K
    // whole stages (384) one of a row's 4 bytes per operand; else (288, 416) the window's
    // two words per MX operand (blockwise f32 A stays in global memory), and the skinny
    // block's in its prologue and one-stage loop. Full barriers: the square block's loop
    // inits (2 per op), the skinny block's 8 slots.
    assert_eq!(text.matches("nvgpu.tma.create.descriptor").count(), 14);
    // (The map's type appears on the descriptor and on the cast to a pointer.)
    assert_eq!(text.matches("memref<64x128xi8, 3>").count(), 2 * (3 + 2));
    assert_eq!(
        text.matches("nvvm.cp.async.bulk.tensor.shared.cluster.global")
            .count(),
        11 + 2 * 3 + 2
    );
    assert_eq!(text.matches("multicast_mask").count(), 3);
    assert_eq!(
        text.matches("nvvm.mbarrier.arrive.expect_tx").count(),
        2 + 3 + 2
    );
    assert_eq!(text.matches("nvvm.mbarrier.expect_tx").count(), 5);
    assert_eq!(
        text.matches(", 4, cache =  ca").count(),
        2 + (2 + 2) + 2 + 2 + 2 + 2 * (2 + 2)
    );
    assert_eq!(text.matches("nvvm.mbarrier.init").count(), 14 + 2 * 8);
    // Both skinny problems split K in clusters, the multicasting ones share B in clusters
    // of 2, where the consumer warps release each slot on both blocks' empty barriers (in
    // the pair loop's two stages and the one after it; in the one-stage loop where packed
    // A is translated) and the blocks meet after the barriers' initialization and before
    // they leave.
    assert_eq!(text.matches("clusters(").count(), 5);
    assert_eq!(
        text.matches("{scope = #nvvm.mem_scope<cluster>}").count(),
        2 * 3 + 1
    );
    assert_eq!(text.matches("nvvm.cluster.arrive").count(), 3 * 2 + 2 * 2);
    run_and_check(
        &session,
        &problems,
        Some(&emulated("sm_90a", "wgmma-tma multicast=auto")),
    );
}

/// `translate-once=on` (MXFP4 and 4-bit customs, E8M0 32-blocks on both operands): the op
/// becomes three launches on device workspaces (five `gpu.alloc`s): the translation of both
/// operands into E5M2 (E2M1's reach there is 15 binades) with one f32 scale per 128 of K
/// and row of A or 128 rows of B, and a flag per 128 rows and 1024 of K; the TMA square
/// block on the translated operands (tensor maps of the workspaces, DeepSeek's scales)
/// for the tiles whose rows all fold; the op's own barrier pipeline for the others. Both
/// kernels read the flags before anything else, so each tile of C is written once. Run
/// through the emulation:
/// - smooth MXFP4 at 256 x 256 x 2048 (two flag words a tile) and 200 x 136 x 384 (tiles
///   past the operands' rows), with a bias;
/// - tiles whose blocks' maxima are all 5.0 but one block 2^-15 smaller in A's rows 0-7
///   and in B's (tile (0, 0) folds at the edge of E5M2's reach, E2M1's 0.5 landing on its
///   smallest subnormal), one 2^-16 smaller in A's rows 128-135 (tile row 1 of C falls
///   back: a spread no FP8 code holds) and a NaN in B's row 200 (its scale NaN: tile column
///   1 falls back, as the oracle's NaN row); A's rows are each their own: a stage of row
///   100 2^-14 and of row 101 2^3 from the rest (17 binades apart, in tile (0, 0), which
///   folds); a block of zeros with the scale 2^-127 in A's row 3 and in B's row 5 (as
///   quantizers that take the exponent of 0 as E8M0's least give it; its scale left out
///   of the stage's range: tile (0, 0) still folds);
/// - a block of B's row 5 all zeros but one code, with its scale 2^-20 from the rest:
///   not zeros, so tile column 0 falls back;
/// - codes one per byte (not packed), and a packed custom 4-bit format (E3M0: images
///   2^-2 .. 2^4; into E5M2 it reaches 10);
/// - FP6, translated by word arithmetic: E2M3 (into E4M3 only, reach 6) x E3M2 (into E5M2,
///   reach 12), one block of A's rows 0-7 2^-6 and one of B's 2^-12 smaller (tile (0, 0)
///   at the edges of both reaches), one of A's rows 128-135 2^-7 smaller (tile row 1 falls
///   back).
#[test]
fn translate_once_matches_the_oracle() {
    let session = Session::new();
    let mut rng = SplitMix64::new(91);
    let (f4, mx) = (ScaledFormat::F4E2M1, ScaleLayout::MX);
    let smooth = pair_problem(&mut rng, (256, 256, 2048), (f4, mx, true, f4, mx, true));
    let ragged = pair_problem(&mut rng, (200, 136, 384), (f4, mx, true, f4, mx, true));
    let (m, n, k) = (256, 256, 512);
    let (mut a, mut b) = (even_blocks(&mut rng, m, k), even_blocks(&mut rng, n, k));
    scale_rows(&mut a, k, 0..8, 160..192, 2f32.powi(-15));
    scale_rows(&mut b, k, 0..8, 256..288, 2f32.powi(-15));
    scale_rows(&mut a, k, 128..136, 416..448, 2f32.powi(-16));
    scale_rows(&mut a, k, 100..101, 256..384, 2f32.powi(-14));
    scale_rows(&mut a, k, 101..102, 256..384, 2f32.powi(3));
    b[200 * k + 40] = f32::NAN;
    // Blocks of zeros whose scale is E8M0's least.
    scale_rows(&mut a, k, 3..4, 64..96, 0.0);
    scale_rows(&mut b, k, 5..6, 128..160, 0.0);
    let least = |o: &mut Operand, row: usize, block: usize| {
        o.q.scales.values[row * (k / 32) + block] = 2f32.powi(-127);
    };
    let mut edges = (
        format!("{m}x{n}x{k} mxfp4 at the edges of E5M2's reach"),
        Problem {
            a: operand_of(&a, m, k, f4, mx, true),
            b: operand_of(&b, n, k, f4, mx, true),
            bias: None,
            bf16: false,
        },
    );
    least(&mut edges.1.a, 3, 2);
    least(&mut edges.1.b, 5, 4);
    // One code in a block of B's zeros, 2^-20 from the rest.
    let (a1, mut b1) = (even_blocks(&mut rng, m, k), even_blocks(&mut rng, n, k));
    scale_rows(&mut b1, k, 5..6, 128..160, 0.0);
    b1[5 * k + 140] = 5.0 * 2f32.powi(-20);
    let lone = (
        format!("{m}x{n}x{k} mxfp4, one code in a block of zeros"),
        Problem {
            a: operand_of(&a1, m, k, f4, mx, true),
            b: operand_of(&b1, n, k, f4, mx, true),
            bias: None,
            bf16: false,
        },
    );
    let bytes = pair_problem(&mut rng, (136, 256, 256), (f4, mx, false, f4, mx, false));
    let e3m0 = ScaledFormat::custom(3, 0);
    let custom = pair_problem(&mut rng, (192, 128, 256), (e3m0, mx, true, e3m0, mx, true));
    let (e2m3, e3m2) = (ScaledFormat::F6E2M3, ScaledFormat::F6E3M2);
    let (mut a6, mut b6) = (even_blocks(&mut rng, m, k), even_blocks(&mut rng, n, k));
    scale_rows(&mut a6, k, 0..8, 64..96, 2f32.powi(-6));
    scale_rows(&mut b6, k, 0..8, 256..288, 2f32.powi(-12));
    scale_rows(&mut a6, k, 128..136, 160..192, 2f32.powi(-7));
    let fp6 = mx_data_problem(
        "mxfp6 at the edges of E4M3's and E5M2's reach",
        (m, n, k),
        (&a6, &b6),
        (e2m3, e3m2),
        false,
    );
    let problems = [smooth, ragged, edges, lone, bytes, custom, fp6];
    let text = lowered_translated_once(&session, &problems);
    // The TMA block's maps of the two translated operands.
    assert_eq!(
        text.matches("nvgpu.tma.create.descriptor").count(),
        2 * problems.len()
    );
    // The targets: E5M2 for the 4-bit operands and E3M2 (the longer reach), E4M3 for E2M3
    // (whose three mantissa bits E5M2 does not hold).
    let views = |ty: &str| {
        text.lines()
            .filter(|l| l.contains("memref.view") && l.contains(&format!("x{ty}>")))
            .count()
    };
    assert_eq!((views("f8E5M2"), views("f8E4M3FN")), (13, 1));
    run_and_check(&session, &problems, Some(&translate_once_pipeline(true)));
}

/// `lowp-to-nvvm` on sm_90a with `kernel=auto translate-once=on`, for the GPU or emulated.
fn translate_once_pipeline(emulate: bool) -> String {
    format!(
        "builtin.module(func.func(lowp-to-nvvm{{chip=sm_90a kernel=auto translate-once=on \
         emulate={emulate}}}))"
    )
}

/// `problems` lowered for the GPU with `translate-once=on`, checked to have all taken it
/// (five workspaces each, allocated and freed, and three launches); the IR.
fn lowered_translated_once(session: &Session, problems: &[(String, Problem)]) -> String {
    let text = lowered_with(session, problems, &translate_once_pipeline(false));
    assert_eq!(text.matches("gpu.alloc").count(), 5 * problems.len());
    assert_eq!(text.matches("gpu.dealloc").count(), 5 * problems.len());
    assert_eq!(text.matches("gpu.launch ").count(), 3 * problems.len());
    text
}

/// `translate-once=on` where K is not whole stages of 128 (K / 32 scales a row not a
/// multiple of 4: a row's stage of scales is a window, not an aligned word): the
/// workspaces are padded to whole stages with zero codes, the translation reads a stage's
/// scales byte by byte and leaves the blocks past K out of its range, and the FP8 GEMM runs
/// on the padded K. Through the emulation:
/// - MXFP4 at 200 x 136 x 512 (whole stages), then at 200 x 136 x 416 (the last stage one
///   block inside), whose codes workspaces are the same size: the second's tails are
///   written, not left as the first's codes;
/// - 200 x 136 x 416 with B's rows 0-7 last block 2^-15 below the rest (tile (0, 0) folds
///   at the edge of E5M2's reach in the partial stage), A's row 3 last block zeros under
///   2^-127 (left out of its range) and A's rows 128-135 last block 2^-16 below (tile row
///   1 falls back);
/// - MXFP4 one code per byte at 136 x 256 x 2880 (gpt-oss's K: 22.5 stages);
/// - FP6 E2M3 x E3M2 at 256 x 256 x 224 (7 blocks), one block of A's rows 0-7 and of B's
///   in the partial stage at the edges of their reaches (2^-6 in E4M3, 2^-12 in E5M2).
#[test]
fn translate_once_pads_k() {
    let session = Session::new();
    let mut rng = SplitMix64::new(2880);
    let (f4, mx) = (ScaledFormat::F4E2M1, ScaleLayout::MX);
    let whole = pair_problem(&mut rng, (200, 136, 512), (f4, mx, true, f4, mx, true));
    let after = pair_problem(&mut rng, (200, 136, 416), (f4, mx, true, f4, mx, true));
    let (m, n, k) = (200, 136, 416);
    let (mut a, mut b) = (even_blocks(&mut rng, m, k), even_blocks(&mut rng, n, k));
    scale_rows(&mut b, k, 0..8, 384..416, 2f32.powi(-15));
    scale_rows(&mut a, k, 128..136, 384..416, 2f32.powi(-16));
    let mut edges = mx_data_problem(
        "mxfp4, the partial stage's edges",
        (m, n, k),
        (&a, &b),
        (f4, f4),
        true,
    );
    zero_blocks(&mut edges.1.a.q, 3..4, 384..416, 2f32.powi(-127));
    let bytes = pair_problem(&mut rng, (136, 256, 2880), (f4, mx, false, f4, mx, false));
    let (e2m3, e3m2) = (ScaledFormat::F6E2M3, ScaledFormat::F6E3M2);
    let (m6, n6, k6) = (256, 256, 224);
    let (mut a6, mut b6) = (even_blocks(&mut rng, m6, k6), even_blocks(&mut rng, n6, k6));
    scale_rows(&mut a6, k6, 0..8, 192..224, 2f32.powi(-6));
    scale_rows(&mut b6, k6, 0..8, 192..224, 2f32.powi(-12));
    let fp6 = mx_data_problem(
        "mxfp6, the partial stage's edges",
        (m6, n6, k6),
        (&a6, &b6),
        (e2m3, e3m2),
        false,
    );
    let problems = [whole, after, edges, bytes, fp6];
    let text = lowered_translated_once(&session, &problems);
    // The translated operands at K padded to whole stages.
    for view in [
        "memref<200x512xf8E5M2>",
        "memref<136x512xf8E5M2>",
        "memref<136x2944xf8E5M2>",
        "memref<256x2944xf8E5M2>",
        "memref<256x256xf8E4M3FN>",
        "memref<256x256xf8E5M2>",
    ] {
        assert!(text.contains(view), "no {view} in the lowered IR");
    }
    run_and_check(&session, &problems, Some(&translate_once_pipeline(true)));
}

/// `persistent=on`: TMA's square block as one block per multiprocessor (132 on sm_90a),
/// each looping over its tiles of C in grouped order, the ring's turns carrying on from
/// tile to tile. 2100 x 1290 (17 x 11 = 187 tiles: 55 blocks take two) per tensor, no
/// bias, K 416 (the last stage 32 codes into K), and per channel, K 128 (one stage a tile:
/// the tile's last turn is its first); 1160 x 200 (20 tiles: 20 blocks, one each). In the
/// IR: the launches' grids, and one tile loop around the producer's boxes and one around
/// the consumers' stages and epilogue. The options' other ops keep a block per tile: MXFP8
/// (its staged scales are copied by the producer warpgroup) and the skinny block. Through
/// the emulation, which runs each block's tiles in its loop's order (the ring's turns are
/// the hardware's; `gpu-prep.sh` checks them on the H200).
#[test]
fn wgmma_tma_persistent_matches_the_oracle() {
    let session = Session::new();
    let mut rng = SplitMix64::new(132);
    let (e4, e5) = (ScaledFormat::F8E4M3, ScaledFormat::F8E5M2);
    let (tensor, channel) = (ScaleLayout::PerTensor, ScaleLayout::PerChannel);
    let mut problems = vec![
        pair_problem(
            &mut rng,
            (2100, 1290, 416),
            (e4, tensor, false, e5, tensor, false),
        ),
        pair_problem(
            &mut rng,
            (2100, 1290, 128),
            (e5, channel, false, e4, channel, false),
        ),
        pair_problem(
            &mut rng,
            (1160, 200, 288),
            (e4, tensor, false, e4, channel, false),
        ),
    ];
    problems[0].1.bias = None;
    // (Kept a block per tile.)
    problems.push(pair_problem(
        &mut rng,
        (256, 136, 384),
        (e4, ScaleLayout::MX, false, e5, ScaleLayout::MX, false),
    ));
    problems.push(pair_problem(
        &mut rng,
        (16, 200, 512),
        (e4, tensor, false, e5, tensor, false),
    ));
    let text = lowered(&session, &problems, "sm_90a", "wgmma-tma persistent=on");
    let grids: Vec<&str> = text
        .split("gpu.launch ")
        .skip(1)
        .map(|t| t.split(" threads").next().unwrap_or_default())
        .collect();
    let persistent = grids.iter().filter(|g| g.contains("= %c132,")).count();
    assert_eq!(persistent, 2, "{grids:?}");
    assert_eq!(grids.iter().filter(|g| g.contains("= %c20,")).count(), 1);
    assert_eq!(text.matches("nvvm.setmaxregister").count(), 2 * 4);
    run_and_check(
        &session,
        &problems,
        Some(&emulated("sm_90a", "wgmma-tma persistent=on")),
    );
}

/// `store-c=tma`: the warp-specialized square block's epilogue through a staging area in
/// shared memory (the 128-byte swizzle) and TMA stores on a tensor map of C. TMA's block by
/// tile (300 x 200, f32: a partial tile each way; bf16 C, 136 columns: boxes of 64), B
/// multicast (512 x 384), persistent (2100 x 1288, 187 tiles: 55 blocks store twice), the
/// producer-copied block (`wgmma-specialized`: MXFP8 x MXFP8) and, kept on direct stores,
/// C whose rows are not whole 16 bytes (130 f32 columns), the skinny block, and FP4 x E4M3
/// on the producer-copied block (its ring, 173 KiB, leaves no room for the 64 KiB area). In the IR (a kernel's consumer code, both warpgroups): four box stores for 128
/// f32 columns, two for bf16, one bulk group, the wait for its read before the block ends
/// (persistent: also before each tile's staging); through
/// the emulation, the staging area written as the GPU's threads write it and stored as the
/// PTX ISA's tile mode defines it (elements inside C only).
#[test]
fn wgmma_store_c_tma_matches_the_oracle() {
    let session = Session::new();
    let mut rng = SplitMix64::new(512);
    let (e4, e5, f4) = (
        ScaledFormat::F8E4M3,
        ScaledFormat::F8E5M2,
        ScaledFormat::F4E2M1,
    );
    let (tensor, channel, mx) = (
        ScaleLayout::PerTensor,
        ScaleLayout::PerChannel,
        ScaleLayout::MX,
    );
    let mut bf16 = pair_problem(
        &mut rng,
        (200, 136, 288),
        (e5, channel, false, e4, tensor, false),
    );
    bf16.1.bf16 = true;
    // [box stores, bulk groups, waits for their reads] in the IR.
    for (options, problems, stores) in [
        (
            "wgmma-tma store-c=tma",
            vec![
                pair_problem(
                    &mut rng,
                    (300, 200, 416),
                    (e4, tensor, false, e5, tensor, false),
                ),
                bf16,
                // (Direct: rows of 520 bytes; the skinny block.)
                pair_problem(
                    &mut rng,
                    (130, 130, 256),
                    (e4, tensor, false, e4, tensor, false),
                ),
                pair_problem(
                    &mut rng,
                    (16, 200, 512),
                    (e4, tensor, false, e5, tensor, false),
                ),
            ],
            [4 + 2, 2, 2],
        ),
        (
            "wgmma-tma multicast=auto store-c=tma",
            vec![pair_problem(
                &mut rng,
                (512, 384, 256),
                (e4, tensor, false, e5, channel, false),
            )],
            [4, 1, 1],
        ),
        (
            "wgmma-tma persistent=on store-c=tma",
            vec![pair_problem(
                &mut rng,
                (2100, 1288, 160),
                (e4, tensor, false, e4, channel, false),
            )],
            [4, 1, 2],
        ),
        (
            "wgmma-specialized store-c=tma",
            vec![
                pair_problem(&mut rng, (256, 136, 384), (e4, mx, false, e5, mx, false)),
                pair_problem(&mut rng, (130, 200, 256), (f4, mx, true, e4, tensor, false)),
            ],
            [4, 1, 1],
        ),
    ] {
        let text = lowered(&session, &problems, "sm_90a", options);
        let counts = [
            "nvvm.cp.async.bulk.tensor.global.shared.cta",
            "nvvm.cp.async.bulk.commit.group",
            "nvvm.cp.async.bulk.wait_group",
        ]
        .map(|op| text.matches(op).count());
        assert_eq!(counts, stores, "{options}");
        run_and_check(&session, &problems, Some(&emulated("sm_90a", options)));
    }
}

/// `block-n=192`: the square block 128 x 192 (`m64n192k32`, 96 accumulators a thread, one
/// register set of partial sums). The barrier pipeline (`kernel=wgmma`) on every pair of
/// formats and layouts it takes, 130 x 200 (N: a whole tile and one of 8 columns; K 416, the
/// last stage partial), and NVFP4 x NVFP4 (`nvfp4=split`: split tiles; 16-blocks); TMA's block per tensor
/// and per channel, by tile, persistent (2100 x 1700: 17 x 9 = 153 tiles, 21 blocks take
/// two) and with B multicast (4 x 2 tiles). In the IR every instruction is `m64n192k32`. The
/// warp-specialized block whose producers copy (translated codes, block scales) refuses it.
#[test]
fn wgmma_pipeline_block_n_192_matches_the_oracle() {
    let session = Session::new();
    let mut rng = SplitMix64::new(192);
    let mut problems: Vec<(String, Problem)> = pipeline_pairs()
        .into_iter()
        .map(|pair| pair_problem(&mut rng, (130, 200, 416), pair))
        .collect();
    let f4 = ScaledFormat::F4E2M1;
    let nvg = ScaleLayout::NVFP4_GLOBAL;
    problems.push(pair_problem(
        &mut rng,
        (130, 200, 256),
        (f4, nvg, true, f4, nvg, true),
    ));
    let text = lowered(
        &session,
        &problems,
        "sm_90a",
        "wgmma block-n=192 nvfp4=split",
    );
    assert_eq!(
        text.matches("<m = 64, n = 192, k = 32>").count(),
        text.matches("nvvm.wgmma.mma_async").count()
    );
    run_and_check(
        &session,
        &problems,
        Some(&emulated("sm_90a", "wgmma block-n=192 nvfp4=split")),
    );
    let (e4, e5) = (ScaledFormat::F8E4M3, ScaledFormat::F8E5M2);
    let (tensor, channel) = (ScaleLayout::PerTensor, ScaleLayout::PerChannel);
    for (options, shape, pair) in [
        (
            "wgmma-tma",
            (300, 400, 416),
            (e4, tensor, false, e5, tensor, false),
        ),
        (
            "wgmma-tma",
            (200, 136, 288),
            (e5, channel, false, e4, channel, false),
        ),
        (
            "wgmma-tma persistent=on",
            (2100, 1700, 160),
            (e4, tensor, false, e4, channel, false),
        ),
        (
            "wgmma-tma multicast=auto",
            (512, 384, 256),
            (e4, tensor, false, e5, tensor, false),
        ),
    ] {
        let problems = [pair_problem(&mut rng, shape, pair)];
        let options = format!("{options} block-n=192");
        let text = lowered(&session, &problems, "sm_90a", &options);
        assert!(text.contains("<m = 64, n = 192, k = 32>"), "{options}");
        run_and_check(&session, &problems, Some(&emulated("sm_90a", &options)));
    }
    let (_, translated) = pair_problem(
        &mut rng,
        (130, 200, 256),
        (f4, ScaleLayout::MX, true, e4, tensor, false),
    );
    let mut module = session
        .parse(&source("f", &translated))
        .unwrap_or_else(|e| panic!("{e}"));
    let refused = session.run_pipeline(
        &mut module,
        "builtin.module(func.func(lowp-to-nvvm{chip=sm_90a kernel=wgmma-specialized \
         block-n=192}))",
    );
    assert!(
        refused.as_ref().is_err_and(|e| e
            .to_string()
            .contains("block-n=192: the warp-specialized block")),
        "{refused:?}"
    );
}

/// The pipeline's skinny block (swap AB), `auto`'s choice when M is static and at most 64:
/// B's 64 rows per block are the instruction's A, A's rows (M rounded up to 16) its B, so a
/// decode step's 16 rows take `m64n16k32` and 40 rows `m64n48k32`; rows past M copy zeros
/// and are not stored, packed E2M1 A (64 chunks per stage) leaves half the copying threads
/// out, the ring of 8 stages wraps (K 10 stages) and the last stage is partial;
/// `kernel=wgmma-skinny` forces it on M = 100 (two blocks of 64 rows along M). Every pair of
/// formats and layouts the pipeline takes, through the emulation; K not split (`split-k=1`;
/// split-K has its own test).
#[test]
fn wgmma_skinny_matches_the_oracle() {
    let session = Session::new();
    let mut rng = SplitMix64::new(16);
    let pairs = pipeline_pairs();
    let problem = |rng: &mut SplitMix64, shape: (usize, usize, usize), p: PipelinePair| {
        let (name, mut problem) = pair_problem(rng, shape, p);
        problem.bf16 = shape.0 == 5;
        (name, problem)
    };
    let mut problems = Vec::new();
    for (shape, cases) in [
        ((16, 200, 1184), &[0, 1, 2, 3, 4, 5, 6, 7, 8][..]),
        ((5, 72, 96), &[0, 5, 8]),
        ((40, 130, 384), &[1, 6, 7]),
    ] {
        for &c in cases {
            problems.push(problem(&mut rng, shape, pairs[c]));
        }
    }
    let text = lowered(&session, &problems, "sm_90a", "auto split-k=1");
    let shape = |n: i64| format!("<m = 64, n = {n}, k = 32>");
    assert!(text.contains(&shape(16)) && text.contains(&shape(48)));
    assert!(!text.contains(&shape(128)), "no op takes the square block");
    let launches: Vec<&str> = text
        .lines()
        .filter_map(|l| l.split_once("gpu.launch blocks").map(|(_, rest)| rest))
        .collect();
    assert_eq!(launches.len(), problems.len());
    for launch in launches {
        let threads = launch.split_once("threads").expect("threads").1;
        let x = threads.split_once(" = ").expect("block size").1;
        assert!(
            x.starts_with("%c128,") || x.starts_with("%c128_"),
            "{launch}"
        );
    }
    assert!(!text.contains("clusters"));
    run_and_check(
        &session,
        &problems,
        Some(&emulated("sm_90a", "auto split-k=1")),
    );
    let forced: Vec<_> = [1, 5]
        .iter()
        .map(|&c| problem(&mut rng, (100, 64, 256), pairs[c]))
        .collect();
    assert!(lowered(&session, &forced, "sm_90a", "wgmma-skinny").contains(&shape(64)));
    run_and_check(&session, &forced, Some(&emulated("sm_90a", "wgmma-skinny")));
}

/// `kernel=wgmma-registers`: the skinny block with B fed through each thread's registers
/// as wgmma's A (inline `wgmma.mma_async ... {a0..a3}, b-desc`), A translated into shared
/// memory once per block with K permuted within each 32 as the fragment wants. Every pair
/// of formats and layouts of the pipeline (segments of 32, 64, 128 and all of K; FP4
/// packed or not, FP6, a custom format, FP8 as stored), 16 and 5 rows (the rows past M
/// zeros), 200 columns (rows of B past N copy 0 bytes), 9 stages split 4 ways by shape (the
/// last block has none), forced split-k=2 and 1; and what it refuses, each with why.
#[test]
fn wgmma_registers_matches_the_oracle() {
    let session = Session::new();
    let mut rng = SplitMix64::new(64);
    let pairs = pipeline_pairs();
    let mut problems: Vec<_> = (0..pairs.len())
        .map(|c| pair_problem(&mut rng, (16, 200, 1152), pairs[c]))
        .collect();
    for c in [1, 5, 8] {
        problems.push(pair_problem(&mut rng, (5, 72, 256), pairs[c]));
    }
    // B's f32 scales of 1 x 64 and 1 x 32 blocks: 8 and 16 bytes a row and stage in the
    // scale ring (MX's are 4), copied in 4 pieces by a row pair's threads.
    let (e4, f4) = (ScaledFormat::F8E4M3, ScaledFormat::F4E2M1);
    for cols in [64, 32] {
        let b = ScaleLayout::Blockwise { rows: 1, cols };
        let pair = (f4, ScaleLayout::MX, true, e4, b, false);
        problems.push(pair_problem(&mut rng, (16, 200, 1152), pair));
    }
    let text = lowered(&session, &problems, "sm_90a", "wgmma-registers");
    let rs = "wgmma.mma_async.sync.aligned.m64n16k32.f32.";
    assert!(text.contains(rs), "the register form");
    assert!(!text.contains("nvvm.wgmma.mma_async"), "no descriptor form");
    // (By shape: the 9-stage problems in 4, the 2-stage ones not at all.)
    assert_eq!(
        text.matches("clusters").count(),
        pairs.len() + 2,
        "split by shape"
    );
    run_and_check(
        &session,
        &problems,
        Some(&emulated("sm_90a", "wgmma-registers")),
    );
    for splits in ["1", "2"] {
        let forced: Vec<_> = [0, 5, 7]
            .iter()
            .map(|&c| pair_problem(&mut rng, (16, 128, 640), pairs[c]))
            .collect();
        let kernel = format!("wgmma-registers split-k={splits}");
        run_and_check(&session, &forced, Some(&emulated("sm_90a", &kernel)));
    }
    for ((m, n, k), pair, why) in [
        ((17, 64, 256), pairs[0], "M static and at most 16"),
        ((16, 64, 192), pairs[5], "K whole stages of 128"),
    ] {
        let (_, refused) = pair_problem(&mut rng, (m, n, k), pair);
        let mut module = session
            .parse(&source("f", &refused))
            .unwrap_or_else(|e| panic!("{e}"));
        let err = session.run_pipeline(
            &mut module,
            "builtin.module(func.func(lowp-to-nvvm{chip=sm_90a kernel=wgmma-registers}))",
        );
        assert!(
            err.as_ref().is_err_and(|e| e.to_string().contains(why)),
            "{err:?}"
        );
    }
}

/// Split-K of the skinny block: a cluster of blocks per tile of C, each summing its range of
/// K's stages, rank 0 adding the others' partial sums in rank order. By shape: 4 tiles of a
/// 16 x 256 x 2048 decode step split 8 ways (32 blocks, 2 stages each), 2 tiles of 5 x 72 x
/// 640 MXFP4 2 ways (3 + 2 stages); forced: `split-k=4` over 3 stages (the last block has
/// none) and over a ragged 10-stage K with blockwise scales.
#[test]
fn wgmma_split_k_matches_the_oracle() {
    let session = Session::new();
    let mut rng = SplitMix64::new(8);
    let pairs = pipeline_pairs();
    let problem = |rng: &mut SplitMix64, shape: (usize, usize, usize), c: usize| {
        pair_problem(rng, shape, pairs[c])
    };
    let by_shape = [
        problem(&mut rng, (16, 256, 2048), 0),
        problem(&mut rng, (5, 72, 640), 5),
    ];
    // The cluster size of each launch, in order: `clusters(..) in (%x = %c<N>, ..`.
    let clusters = |text: &str| -> Vec<String> {
        text.split("gpu.launch clusters(")
            .skip(1)
            .map(|l| {
                let c = l.split_once(" = %c").expect("cluster size").1;
                c.split([',', '_']).next().expect("constant").to_string()
            })
            .collect()
    };
    let text = lowered(&session, &by_shape, "sm_90a", "auto");
    assert_eq!(clusters(&text), ["8", "2"]);
    run_and_check(&session, &by_shape, Some(&emulated("sm_90a", "auto")));
    let forced = [
        problem(&mut rng, (16, 64, 384), 1),
        problem(&mut rng, (30, 100, 1184), 2),
    ];
    assert_eq!(
        clusters(&lowered(&session, &forced, "sm_90a", "auto split-k=4")),
        ["4", "4"]
    );
    run_and_check(
        &session,
        &forced,
        Some(&emulated("sm_90a", "auto split-k=4")),
    );
}

/// sm_100a's block-scaled kinds: for two MX operands with 32-blocks `kind::mxf4` (E2M1 x
/// E2M1, packed or not, K 64 per MMA, two scale bytes per step) and `kind::mxf8f6f4`
/// (other formats, one scale byte per step), for two NVFP4 ones `kind::mxf4nvf4.block16`
/// (UE4M3 scales, a word per row and step; with and without globals), the scale factors
/// stored into tensor memory every 128 of K; ragged M, N and K (the last group of scale
/// words partly past K), and NaN block scales.
#[test]
fn tcgen05_block_scaled_kinds_match_the_oracle() {
    let session = Session::new();
    let mut rng = SplitMix64::new(100);
    let (f4, e4, mx) = (ScaledFormat::F4E2M1, ScaledFormat::F8E4M3, ScaleLayout::MX);
    let (nv, nvg) = (ScaleLayout::NVFP4, ScaleLayout::NVFP4_GLOBAL);
    let pairs = [
        (f4, mx, true, f4, false),
        (f4, mx, true, f4, true),
        (e4, mx, false, f4, true),
        (f4, nvg, true, f4, false),
        (f4, nv, true, f4, true),
    ];
    let mut problems = Vec::new();
    for (m, n, k) in [(130, 70, 200), (64, 64, 64), (5, 3, 32)] {
        for (fa, l, pa, fb, pb) in pairs {
            let a = operand(&mut rng, m, k, fa, l, pa);
            let b = operand(&mut rng, n, k, fb, l, pb);
            problems.push((
                format!(
                    "{m}x{n}x{k} {l} {fa}{} x {fb}{}",
                    if pa { " packed" } else { "" },
                    if pb { " packed" } else { "" }
                ),
                Problem {
                    a,
                    b,
                    bias: Some(rng.normal_vec(n)),
                    bf16: false,
                },
            ));
        }
    }
    // NaN scales: row 0's second block of A (E8M0 0xFF; UE4M3 0x7F).
    problems[0].1.a.q.scales.values[1] = f32::NAN;
    problems[3].1.a.q.scales.values[1] = f32::NAN;
    let text = lowered(&session, &problems, "sm_100a", "tcgen05");
    assert_eq!(text.matches("#nvvm.block_scale_kind<mxf4>").count(), 6);
    assert_eq!(text.matches("#nvvm.block_scale_kind<mxf8f6f4>").count(), 3);
    assert_eq!(text.matches("#nvvm.block_scale_kind<mxf4nvf4>").count(), 6);
    let results = run_and_check(&session, &problems, Some(&emulated("sm_100a", "tcgen05")));
    for p in [0, 3] {
        assert!(
            results[p][..70].iter().all(|v| v.is_nan()),
            "{}: row 0 has a NaN scale",
            problems[p].0
        );
    }
}

/// `kernel=mma-sync` accepts exactly the ops whose formats are E4M3 / E5M2 or embed in them
/// (at most 6 bits), or whose fields move into f16's (the f16 form), and whose scales
/// change along K every 16 or a multiple of 16; the others are refused with the reason.
#[test]
fn mma_sync_takes_exactly_the_embeddable_ops() {
    let session = Session::new();
    let mut rng = SplitMix64::new(3);
    let formats = lowp_tests::named_and_custom_formats();
    // FP8 (E4M3 / E5M2, or embedded in them by a table the registers hold), else f16
    // (formats whose fields move into f16's: all but E5M2 FNUZ and wide exponents), else
    // bf16 (those, beside E4M3).
    let takes = |f: ScaledFormat| {
        matches!(f, ScaledFormat::F8E4M3 | ScaledFormat::F8E5M2)
            || (f.fp8_embedding().is_some() && f.bit_width() <= 6)
            || f.f16_fields().is_some()
            || f.bf16_fields().is_some()
    };
    let layouts = [
        (ScaleLayout::MX, true),
        (ScaleLayout::PerTensor, true),
        // Blocks of 8: one a step, the rest of the instruction's K zero; of 24: no
        // instruction's K divides them or is divided by them.
        (ScaleLayout::Mx { block: 8 }, true),
        (ScaleLayout::Mx { block: 24 }, false),
    ];
    let mut seen = (0, 0);
    for &f in &formats {
        for (layout, segment_ok) in layouts {
            if !lowp_tests::valid_pair(f, layout) {
                continue;
            }
            let p = Problem {
                a: operand(&mut rng, 4, 64, f, layout, false),
                b: operand(
                    &mut rng,
                    4,
                    64,
                    ScaledFormat::F8E4M3,
                    ScaleLayout::PerTensor,
                    false,
                ),
                bias: None,
                bf16: false,
            };
            let mut module = session
                .parse(&source("f", &p))
                .unwrap_or_else(|e| panic!("{e}"));
            let got = session.run_pipeline(
                &mut module,
                "builtin.module(func.func(lowp-to-nvvm{chip=sm_89 kernel=mma-sync}))",
            );
            let want = takes(f) && segment_ok;
            match (&got, want) {
                (Ok(()), true) => seen.0 += 1,
                (Err(e), false) => {
                    assert!(
                        e.to_string().contains("no mma.sync kernel"),
                        "{f} {layout}: {e}"
                    );
                    seen.1 += 1
                }
                _ => panic!("{f} {layout}: expected accepted = {want}, got {got:?}"),
            }
        }
    }
    assert!(seen.0 >= 10 && seen.1 >= 5, "{seen:?}");
}
