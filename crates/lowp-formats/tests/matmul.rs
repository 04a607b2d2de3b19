//! The oracle scaled_matmul: hand-computed cases, every format x layout against the f64
//! reference, mixed layouts, bias, NaN/inf propagation, bad shapes.

use lowp_formats::testing::SplitMix64;
use lowp_formats::*;

#[test]
fn hand_computed_mx_example() {
    // A = 1 x 64, B = 1 x 64, E2M1 with MX/32. Block 0: a = 1.0 * 2, b = 0.5 * 4 -> partial
    // sum 32 * (1.0 * 0.5) = 16, scaled by 2 * 4 = 128. Block 1: a = 6 * 1, b = 6 * 1 -> 32 *
    // 36 = 1152. Total 1280.
    let one = ScaledFormat::F4E2M1.encode(1.0);
    let half = ScaledFormat::F4E2M1.encode(0.5);
    let six = ScaledFormat::F4E2M1.encode(6.0);
    let a_codes: Vec<u8> = (0..64).map(|k| if k < 32 { one } else { six }).collect();
    let b_codes: Vec<u8> = (0..64).map(|k| if k < 32 { half } else { six }).collect();
    let (sa, sb) = ([2.0f32, 1.0], [4.0f32, 1.0]);
    let op = |codes: &'static [u8], s: &'static [f32]| MatmulOperand {
        format: ScaledFormat::F4E2M1,
        layout: ScaleLayout::MX,
        rows: 1,
        k: 64,
        codes,
        packed: false,
        scales: s,
        global: None,
    };
    let a = op(
        Box::leak(a_codes.into_boxed_slice()),
        Box::leak(Box::new(sa)),
    );
    let b = op(
        Box::leak(b_codes.into_boxed_slice()),
        Box::leak(Box::new(sb)),
    );
    assert_eq!(scaled_matmul(&a, &b, None).unwrap(), vec![1280.0]);
    assert_eq!(scaled_matmul(&a, &b, Some(&[0.5])).unwrap(), vec![1280.5]);
    let r = scaled_matmul_f64(&a, &b, None).unwrap();
    assert_eq!(r.values, vec![1280.0]);
}

#[test]
fn segments_split_where_either_scale_changes() {
    let s = scale_segments(ScaleLayout::Mx { block: 32 }, ScaleLayout::NVFP4, 70);
    assert_eq!(s.first(), Some(&(0, 16)));
    assert_eq!(s.last(), Some(&(64, 70)));
    assert_eq!(s.len(), 5);
    let s = scale_segments(
        ScaleLayout::Mx { block: 32 },
        ScaleLayout::Blockwise { rows: 1, cols: 48 },
        96,
    );
    assert_eq!(s, vec![(0, 32), (32, 48), (48, 64), (64, 96)]);
    assert_eq!(
        scale_segments(ScaleLayout::PerTensor, ScaleLayout::PerChannel, 10),
        vec![(0, 10)]
    );
}

fn quantized(
    rng: &mut SplitMix64,
    rows: usize,
    k: usize,
    f: ScaledFormat,
    l: ScaleLayout,
    packed: bool,
) -> QuantizedTensor {
    let data: Vec<f32> = (0..rows * k)
        .map(|i| rng.normal() * (1.0 + (i % 7) as f32))
        .collect();
    quantize(
        &data,
        rows,
        k,
        f,
        l,
        QuantizeOptions {
            packed,
            ..Default::default()
        },
    )
    .unwrap()
}

#[test]
fn every_format_and_layout_is_within_the_f32_bound() {
    let mut rng = SplitMix64::new(21);
    let mut formats = ScaledFormat::NAMED.to_vec();
    formats.extend([
        ScaledFormat::custom(3, 0),
        ScaledFormat::custom(2, 2),
        ScaledFormat::custom(3, 4),
    ]);
    let layouts = [
        ScaleLayout::PerTensor,
        ScaleLayout::MX,
        ScaleLayout::NVFP4,
        ScaleLayout::NVFP4_GLOBAL,
        ScaleLayout::PerChannel,
        ScaleLayout::Blockwise { rows: 1, cols: 128 },
    ];
    let (m, n, k) = (7, 5, 300);
    for &fa in &formats {
        for &l in &layouts {
            let fb = formats[(fa.kernel_id() as usize + 3) % formats.len()];
            let a = quantized(&mut rng, m, k, fa, l, false);
            let lb = if let ScaleLayout::Blockwise { .. } = l {
                ScaleLayout::Blockwise {
                    rows: 128,
                    cols: 128,
                }
            } else {
                l
            };
            let b = quantized(&mut rng, n, k, fb, lb, fb.bit_width() == 4);
            let bias: Vec<f32> = rng.normal_vec(n);
            let got = scaled_matmul(&a.as_operand(), &b.as_operand(), Some(&bias)).unwrap();
            let r = scaled_matmul_f64(&a.as_operand(), &b.as_operand(), Some(&bias)).unwrap();
            let st = r.check(&got, 1.0);
            assert!(st.passed(), "{fa} x {fb} {l}: {st:?}");
            // The reference is really the dequantized product.
            let (da, db) = (a.dequantize(), b.dequantize());
            for i in 0..m {
                for j in 0..n {
                    let want: f64 = (0..k)
                        .map(|kk| da[i * k + kk] as f64 * db[j * k + kk] as f64)
                        .sum::<f64>()
                        + bias[j] as f64;
                    let tol = 1e-5 * r.magnitude[i * n + j] + 1e-6;
                    assert!(
                        (r.values[i * n + j] - want).abs() <= tol,
                        "{fa} {l} ({i},{j})"
                    );
                }
            }
        }
    }
}

#[test]
fn mixed_layouts_k_tails_and_edge_sizes() {
    let mut rng = SplitMix64::new(4);
    for (m, n, k) in [(1, 1, 1), (1, 9, 33), (3, 1, 47), (2, 3, 129)] {
        let a = quantized(
            &mut rng,
            m,
            k,
            ScaledFormat::F8E4M3,
            ScaleLayout::Blockwise { rows: 1, cols: 128 },
            false,
        );
        let b = quantized(
            &mut rng,
            n,
            k,
            ScaledFormat::F4E2M1,
            ScaleLayout::Mx { block: 32 },
            true,
        );
        let got = scaled_matmul(&a.as_operand(), &b.as_operand(), None).unwrap();
        let st = scaled_matmul_f64(&a.as_operand(), &b.as_operand(), None)
            .unwrap()
            .check(&got, 1.0);
        assert!(st.passed(), "{m}x{n}x{k}: {st:?}");
    }
}

#[test]
fn nan_and_inf_operands_propagate() {
    // E5M2 has inf: inf * finite -> inf; inf * 0 -> NaN; a NaN code -> NaN.
    let f = ScaledFormat::F8E5M2;
    let a = vec![0x7C, 0x3C, 0x3C, 0x3C, 0x7E, 0x3C]; // row0: inf, 1, 1 ; row1: 1, NaN, 1
    let b = vec![0x3C, 0x3C, 0x3C, 0x00, 0x3C, 0x3C]; // row0: 1, 1, 1 ; row1: 0, 1, 1
    let s = [1.0f32];
    let op = |codes: &'static [u8], rows| MatmulOperand {
        format: f,
        layout: ScaleLayout::PerTensor,
        rows,
        k: 3,
        codes,
        packed: false,
        scales: Box::leak(Box::new(s)),
        global: None,
    };
    let (a, b) = (
        op(Box::leak(a.into_boxed_slice()), 2),
        op(Box::leak(b.into_boxed_slice()), 2),
    );
    let got = scaled_matmul(&a, &b, None).unwrap();
    assert_eq!(got[0], f32::INFINITY);
    assert!(got[1].is_nan()); // inf * 0
    assert!(got[2].is_nan() && got[3].is_nan());
    let st = scaled_matmul_f64(&a, &b, None).unwrap().check(&got, 1.0);
    assert_eq!(st.nonfinite_mismatches, 0);
    // A NaN block scale poisons its block only.
    let mut data = vec![1.0f32; 64];
    data[0] = f32::NAN;
    let q = quantize(
        &data,
        1,
        64,
        ScaledFormat::F8E4M3,
        ScaleLayout::MX,
        QuantizeOptions::default(),
    )
    .unwrap();
    let ones = quantize(
        &vec![1.0f32; 64],
        1,
        64,
        ScaledFormat::F8E4M3,
        ScaleLayout::MX,
        QuantizeOptions::default(),
    )
    .unwrap();
    assert!(scaled_matmul(&q.as_operand(), &ones.as_operand(), None).unwrap()[0].is_nan());
}

#[test]
fn a_wrong_result_fails_the_check() {
    let mut rng = SplitMix64::new(8);
    let a = quantized(
        &mut rng,
        4,
        64,
        ScaledFormat::F8E4M3,
        ScaleLayout::MX,
        false,
    );
    let b = quantized(
        &mut rng,
        4,
        64,
        ScaledFormat::F8E4M3,
        ScaleLayout::MX,
        false,
    );
    let mut got = scaled_matmul(&a.as_operand(), &b.as_operand(), None).unwrap();
    let r = scaled_matmul_f64(&a.as_operand(), &b.as_operand(), None).unwrap();
    assert!(r.check(&got, 1.0).passed());
    got[5] *= 1.001;
    assert!(!r.check(&got, 1.0).passed());
    got[5] = f32::NAN;
    assert_eq!(r.check(&got, 1.0).nonfinite_mismatches, 1);
}

#[test]
fn bad_operands_are_errors() {
    let mut rng = SplitMix64::new(1);
    let a = quantized(
        &mut rng,
        2,
        64,
        ScaledFormat::F8E4M3,
        ScaleLayout::MX,
        false,
    );
    let b = quantized(
        &mut rng,
        2,
        32,
        ScaledFormat::F8E4M3,
        ScaleLayout::MX,
        false,
    );
    assert_eq!(
        scaled_matmul(&a.as_operand(), &b.as_operand(), None).unwrap_err(),
        FormatError::KMismatch { a: 64, b: 32 }
    );
    let b = quantized(
        &mut rng,
        2,
        64,
        ScaledFormat::F8E4M3,
        ScaleLayout::MX,
        false,
    );
    let e = scaled_matmul(&a.as_operand(), &b.as_operand(), Some(&[1.0])).unwrap_err();
    assert_eq!(
        e,
        FormatError::Length {
            what: "bias",
            expected: 2,
            found: 1
        }
    );
    let mut short = b.as_operand();
    short.codes = &b.codes[..10];
    assert!(matches!(
        scaled_matmul(&a.as_operand(), &short, None),
        Err(FormatError::Length {
            what: "B codes",
            ..
        })
    ));
}

/// A problem survives its manifest, and a broken manifest says what is wrong.
#[test]
fn problem_manifests_round_trip() {
    use lowp_formats::problem::{MatmulSpec, Role};
    let specs = [
        MatmulSpec {
            m: 48,
            n: 40,
            k: 128,
            lhs: ScaledFormat::F4E2M1,
            rhs: ScaledFormat::F4E2M1,
            lhs_layout: ScaleLayout::NVFP4_GLOBAL,
            rhs_layout: ScaleLayout::NVFP4_GLOBAL,
            lhs_packed: true,
            rhs_packed: false,
            bias: true,
            bf16: true,
        },
        MatmulSpec {
            m: 9,
            n: 40,
            k: 384,
            lhs: ScaledFormat::custom(3, 0),
            rhs: ScaledFormat::F8E5M2,
            lhs_layout: ScaleLayout::Blockwise { rows: 1, cols: 128 },
            rhs_layout: ScaleLayout::PerChannel,
            lhs_packed: false,
            rhs_packed: false,
            bias: false,
            bf16: false,
        },
    ];
    for spec in specs {
        // Each argument's length, known from the problem alone, is that of its bytes.
        let inputs = spec.inputs(1);
        for role in spec.roles() {
            let bytes = spec.role_bytes(role, &inputs).len() as u64;
            assert_eq!(spec.role_len(role), bytes, "{role:?}");
        }
        let text = spec.to_manifest();
        assert_eq!(MatmulSpec::from_manifest(&text).unwrap(), spec, "{text}");
        let roles: Vec<&str> = spec.roles().iter().map(|r| r.name()).collect();
        assert_eq!(Role::parse_list(&roles.join(" ")).unwrap(), spec.roles());
    }
    let text = specs_text();
    for (edit, want) in [
        (text.replace("k = 128\n", ""), "no 'k'"),
        (text.replace("lhs = f4e2m1", "lhs = f4e9m9"), "lhs:"),
        (
            text.replace("bias = true", "bias = yes"),
            "'bias' is not true or false",
        ),
        (
            text.replace("lhs_packed = true", "lhs_packed = false")
                .replace("lhs = f4e2m1", "lhs = f8e4m3"),
            "layout nvfp4",
        ),
        (format!("{text}oops\n"), "expected 'key = value'"),
        (
            format!("{text}k = 64\n"),
            "line 12: 'k' is given twice (first on line 3)",
        ),
    ] {
        let e = MatmulSpec::from_manifest(&edit).unwrap_err();
        assert!(e.contains(want), "{want}: {e}");
    }
    assert!(Role::parse_list("lhs out speed")
        .unwrap_err()
        .contains("unknown role 'speed'"));
}

fn specs_text() -> String {
    "m = 48\nn = 40\nk = 128\nlhs = f4e2m1\nrhs = f4e2m1\nlhs_layout = nvfp4\nrhs_layout = nvfp4\n\
     lhs_packed = true\nrhs_packed = false\nbias = true\nbf16 = false\n"
        .to_string()
}

#[test]
fn f32_partial_sums_bound_the_formats_of_a_matmul() {
    let f = |s: &str| s.parse::<ScaledFormat>().unwrap();
    // Every pair of named formats, at K = 2^20 in one block.
    for a in ScaledFormat::NAMED {
        for b in ScaledFormat::NAMED {
            assert!(check_f32_products(a, b, 1 << 20).is_ok(), "{a} x {b}");
        }
    }
    // Products of two codes: f8e7m0b0's reach 2^254.
    let e = check_f32_products(f("f8e7m0b0"), f("f8e4m3"), 1).unwrap_err();
    assert!(e.to_string().contains("reach 2^136"), "{e}");
    // A block's sum: f8e6m1b0's largest product fits (2.25 x 2^126), 64 of them do not.
    assert!(check_f32_products(f("f8e6m1b0"), f("f8e6m1b0"), 1).is_ok());
    let e = check_f32_products(f("f8e6m1b0"), f("f8e6m1b0"), 64).unwrap_err();
    assert!(
        e.to_string()
            .contains("a sum of 64, one scale block: 2^133"),
        "{e}"
    );
    // Below f32's smallest subnormal the product of the smallest codes is lost.
    let e = check_f32_products(f("f2e1m0b127"), f("f2e1m0b127"), 1).unwrap_err();
    assert!(e.to_string().contains("go down to 2^-252"), "{e}");
    // The block is the shorter of the two layouts' (all of K without blocks).
    let mx = ScaleLayout::Mx { block: 32 };
    assert_eq!(partial_sum_len(ScaleLayout::PerTensor, mx, 100), 32);
    assert_eq!(
        partial_sum_len(ScaleLayout::PerTensor, ScaleLayout::PerChannel, 100),
        100
    );
    assert_eq!(
        partial_sum_len(
            mx,
            ScaleLayout::Nvfp4 {
                block: 16,
                global: false
            },
            100
        ),
        16
    );
}

/// The longest partial sum, in closed form, is the longest of the listed segments, for
/// blocks that divide each other, share a factor or none; and a K past any memory is
/// answered at once (lowp-run asked it before checking the problem's memory).
#[test]
fn the_longest_partial_sum_needs_no_segment_list() {
    let layouts = [
        ScaleLayout::PerTensor,
        ScaleLayout::PerChannel,
        ScaleLayout::Mx { block: 1 },
        ScaleLayout::Mx { block: 32 },
        ScaleLayout::Mx { block: 6 },
        ScaleLayout::Nvfp4 {
            block: 16,
            global: true,
        },
        ScaleLayout::Nvfp4 {
            block: 7,
            global: false,
        },
        ScaleLayout::Blockwise { rows: 1, cols: 128 },
        ScaleLayout::Blockwise {
            rows: 128,
            cols: 10,
        },
    ];
    for a in layouts {
        for b in layouts {
            for k in [0, 1, 5, 6, 7, 31, 32, 33, 100, 129, 300] {
                let longest = scale_segments(a, b, k)
                    .iter()
                    .map(|&(s, e)| e - s)
                    .max()
                    .unwrap_or(0);
                assert_eq!(partial_sum_len(a, b, k), longest, "{a} x {b}, K = {k}");
            }
        }
    }
    let mx1 = ScaleLayout::Mx { block: 1 };
    assert_eq!(partial_sum_len(mx1, ScaleLayout::PerTensor, 1 << 62), 1);
    assert_eq!(
        partial_sum_len(ScaleLayout::PerTensor, ScaleLayout::PerChannel, 1 << 62),
        1 << 62
    );
}

/// A 1 x 1 reference (K = 4) of `value` and `magnitude`, no scale product out of range.
fn one_output(value: f64, magnitude: f64) -> Reference {
    Reference {
        m: 1,
        n: 1,
        k: 4,
        values: vec![value],
        magnitude: vec![magnitude],
        finite_magnitude: vec![magnitude],
        scale_rounding: vec![0.0],
        scale_hazard: vec![false],
    }
}

#[test]
fn overflow_on_the_way_may_read_inf_or_nan() {
    let reference = one_output;
    // Terms summing past f32's largest value: the f32 partial sums may overflow, to either
    // infinity or (inf - inf) NaN, though the exact result is small.
    let big = 1e39;
    for got in [f32::INFINITY, f32::NEG_INFINITY, f32::NAN] {
        assert_eq!(
            reference(1.0, big).check(&[got], 1.0).nonfinite_mismatches,
            0
        );
    }
    // Within f32's range there is no excuse.
    for got in [f32::INFINITY, f32::NAN] {
        assert_eq!(
            reference(1.0, 2.0).check(&[got], 1.0).nonfinite_mismatches,
            1
        );
    }
    // A NaN reference (NaN inputs) still wants NaN.
    assert_eq!(
        reference(f64::NAN, big)
            .check(&[f32::INFINITY], 1.0)
            .nonfinite_mismatches,
        1
    );
    // An infinite term beside a finite segment that overflows f32 the other way: the
    // contract's f32 sum may read inf - inf = NaN. Beside small finite terms it may not.
    let infinite = |finite: f64| Reference {
        finite_magnitude: vec![finite],
        ..reference(f64::INFINITY, f64::INFINITY)
    };
    assert_eq!(
        infinite(big).check(&[f32::NAN], 1.0).nonfinite_mismatches,
        0
    );
    assert_eq!(
        infinite(2.0).check(&[f32::NAN], 1.0).nonfinite_mismatches,
        1
    );
    assert_eq!(
        infinite(big)
            .check(&[f32::NEG_INFINITY], 1.0)
            .nonfinite_mismatches,
        1
    );
}

/// E5M2 with MX scales, 1 x 1 x 64: an inf code in the first block, and a second block
/// whose product times its scales (2^127 on B) overflows f32 to -inf. The oracle is +inf;
/// the contract's f32 arithmetic gives +inf (fused) or inf - inf = NaN (scaled, then
/// added): both pass; any other value does not.
#[test]
fn an_infinity_beside_an_overflowing_segment_may_read_nan() {
    let e5 = ScaledFormat::F8E5M2;
    let (inf, one, low) = (0x7Cu8, 0x3Cu8, 0xFBu8);
    let mut a = vec![0u8; 64];
    let mut b = vec![0u8; 64];
    (a[0], a[32], b[0], b[32]) = (inf, one, one, low);
    let op = |codes: &'static [u8], scales: &'static [f32]| MatmulOperand {
        format: e5,
        layout: ScaleLayout::MX,
        rows: 1,
        k: 64,
        codes,
        packed: false,
        scales,
        global: None,
    };
    let (a, b) = (
        op(
            Box::leak(a.into_boxed_slice()),
            Box::leak(Box::new([1.0f32, 1.0])),
        ),
        op(
            Box::leak(b.into_boxed_slice()),
            Box::leak(Box::new([1.0f32, 2f32.powi(127)])),
        ),
    );
    let r = scaled_matmul_f64(&a, &b, None).unwrap();
    assert_eq!(r.values[0], f64::INFINITY);
    assert!(r.finite_magnitude[0] > f32::MAX as f64);
    for got in [f32::INFINITY, f32::NAN] {
        assert_eq!(r.check(&[got], 1.0).nonfinite_mismatches, 0, "{got}");
    }
    assert_eq!(r.check(&[1.0], 1.0).nonfinite_mismatches, 1);
}

/// A 1 x 1 x 64 operand of one format and layout, every code `code`.
fn uniform(
    format: ScaledFormat,
    layout: ScaleLayout,
    code: u8,
    scales: &[f32],
) -> MatmulOperand<'static> {
    MatmulOperand {
        format,
        layout,
        rows: 1,
        k: 64,
        codes: Box::leak(vec![code; 64].into_boxed_slice()),
        packed: false,
        scales: Box::leak(scales.to_vec().into_boxed_slice()),
        global: None,
    }
}

/// Legal scales whose product leaves f32's range (E8M0 reaches 2^-127 and 2^127, f32 scales
/// anything): the contract rounds the product to f32, the reference does not, and the
/// check allows exactly what that rounding may do. Each case is what the f32 oracle gives.
#[test]
fn scale_products_past_f32_range_may_round() {
    let (e4, e5) = (ScaledFormat::F8E4M3, ScaledFormat::F8E5M2);
    // The f32 oracle's result and the f64 reference.
    let both = |a: &MatmulOperand, b: &MatmulOperand| {
        (
            scaled_matmul(a, b, None).unwrap(),
            scaled_matmul_f64(a, b, None).unwrap(),
        )
    };
    // 2^-127 x 2^-127 rounds to 0 in f32: an infinite code's partial times 0 is NaN, where
    // the exact product gives inf.
    let tiny = 2f32.powi(-127);
    let (a, b) = (
        uniform(e5, ScaleLayout::MX, 0x7C, &[tiny, tiny]),
        uniform(e5, ScaleLayout::MX, 0x3C, &[tiny, tiny]),
    );
    let (got, r) = both(&a, &b);
    assert!(got[0].is_nan() && r.values[0] == f64::INFINITY && r.scale_hazard[0]);
    assert!(r.check(&got, 1.0).passed());
    // With scales whose product is a normal f32 the same NaN is a failure.
    let (a1, b1) = (
        uniform(e5, ScaleLayout::MX, 0x7C, &[1.0, 1.0]),
        uniform(e5, ScaleLayout::MX, 0x3C, &[1.0, 1.0]),
    );
    let r1 = scaled_matmul_f64(&a1, &b1, None).unwrap();
    assert!(!r1.scale_hazard[0] && r1.scale_rounding[0] == 0.0);
    assert_eq!(r1.check(&[f32::NAN], 1.0).nonfinite_mismatches, 1);

    // f32 per-tensor scales 1e-20 x 1e-20: the product 1e-40 is subnormal in f32 and off by
    // up to 2^-150, times a partial of 64 x 448^2.
    let max = e4.encode(448.0);
    let (a, b) = (
        uniform(e4, ScaleLayout::PerTensor, max, &[1e-20]),
        uniform(e4, ScaleLayout::PerTensor, max, &[1e-20]),
    );
    let (got, r) = both(&a, &b);
    let partial = 64.0 * 448.0f64 * 448.0;
    assert_eq!(r.scale_rounding[0], partial * 2f64.powi(-150));
    assert!(r.check(&got, 1.0).passed(), "{:?}", r.check(&got, 1.0));
    // The allowance is what makes it pass, and it allows no more than the rounding.
    let strict = Reference {
        scale_rounding: vec![0.0],
        ..r.clone()
    };
    assert!(!strict.check(&got, 1.0).passed());
    let off = (r.values[0] + 4.0 * r.scale_rounding[0]) as f32;
    assert!(!r.check(&[off], 1.0).passed());

    // 2^127 x 2^127 rounds to inf in f32: a zero partial times inf is NaN, where the exact
    // result is 0.
    let huge = 2f32.powi(127);
    let (a, b) = (
        uniform(e4, ScaleLayout::MX, 0, &[huge, huge]),
        uniform(e4, ScaleLayout::MX, 0, &[huge, huge]),
    );
    let (got, r) = both(&a, &b);
    assert!(got[0].is_nan() && r.values[0] == 0.0 && r.scale_hazard[0]);
    assert!(r.check(&got, 1.0).passed());

    // The product, not the scales one after the other: 3e38 x 1e-30 is 3e8, though the
    // total times 3e38 alone overflows.
    let one = e4.encode(1.0);
    let (a, b) = (
        uniform(e4, ScaleLayout::PerTensor, one, &[3e38]),
        uniform(e4, ScaleLayout::PerTensor, one, &[1e-30]),
    );
    let (got, r) = both(&a, &b);
    assert!(!r.scale_hazard[0] && r.scale_rounding[0] == 0.0);
    assert!(got[0].is_finite() && r.check(&got, 1.0).passed());
    assert!(!r.check(&[f32::INFINITY], 1.0).passed());
}

/// A bf16 result overflows at (2 - 2^-8) 2^127, below f32's largest value: a finite
/// reference between the two may read inf (of its sign) stored as bf16, not as f32.
#[test]
fn a_bf16_result_overflows_before_f32() {
    assert_eq!(Stored::F32.overflow(), f32::MAX as f64 + 2f64.powi(103));
    let bf16_max = f32::from_bits(0x7F7F_0000) as f64;
    assert_eq!(Stored::Bf16.overflow(), bf16_max + 2f64.powi(119));
    let near = 3.397e38;
    let r = one_output(near, near);
    let inf = [f32::INFINITY];
    assert!(r.check_stored(&inf, 1.0, Stored::Bf16).passed());
    assert!(!r
        .check_stored(&[f32::NEG_INFINITY], 1.0, Stored::Bf16)
        .passed());
    assert!(!r.check(&inf, 1.0).passed());
}

/// NVFP4 globals multiply the f32 total at the end: a total past f32's largest value is
/// inf there, though the globals bring the exact value back into range.
#[test]
fn a_total_that_overflows_before_the_globals_may_read_inf() {
    let (e4, e2) = (ScaledFormat::F8E4M3, ScaledFormat::F4E2M1);
    let a = uniform(e4, ScaleLayout::PerChannel, e4.encode(448.0), &[3e38]);
    let mut b = uniform(e2, ScaleLayout::NVFP4_GLOBAL, e2.encode(6.0), &[1.0; 4]);
    b.global = Some(1e-20);
    let (got, r) = (
        scaled_matmul(&a, &b, None).unwrap(),
        scaled_matmul_f64(&a, &b, None).unwrap(),
    );
    assert!(got[0].is_infinite() && r.values[0].is_finite() && r.scale_hazard[0]);
    assert!(r.check(&got, 1.0).passed());
    // With the total in range no overflow is allowed.
    let a = uniform(e4, ScaleLayout::PerChannel, e4.encode(448.0), &[3e30]);
    let r = scaled_matmul_f64(&a, &b, None).unwrap();
    assert!(!r.scale_hazard[0] && !r.check(&[f32::INFINITY], 1.0).passed());
}

/// The FP8 tensor-core accumulation model widens the bound by 2^-12 of the magnitude per
/// instruction between promotions (at most 4 for promotions every 128 products), and no
/// more: an error the hardware makes passes only under it, a layout error under neither.
#[test]
fn fp8_tensor_core_accumulation_bound() {
    let k = 96;
    let r = Reference {
        m: 1,
        n: 1,
        k,
        values: vec![100.0],
        magnitude: vec![1000.0],
        finite_magnitude: vec![1000.0],
        scale_rounding: vec![0.0],
        scale_hazard: vec![false],
    };
    let tc = Accumulation::Fp8TensorCore { promote: 128 };
    assert_eq!(tc.relative_error(k), 3.0 * 2f64.powi(-12));
    assert_eq!(tc.relative_error(4096), 4.0 * 2f64.powi(-12));
    assert_eq!(Accumulation::F32.relative_error(4096), 0.0);
    assert_eq!(tc.name(), "fp8-tensor-core/128");
    assert_eq!(tc.check_suffix(), " accumulation=fp8-tensor-core/128");
    assert_eq!(Accumulation::F32.check_suffix(), "");
    // 2^-13 of the magnitude, as the H200 gave: over f32's bound, within the model's.
    let hw = [(100.0 + 1000.0 * 2f64.powi(-13)) as f32];
    assert!(!r.check(&hw, 1.0).passed());
    let st = r.check_accumulated(&hw, 1.0, Stored::F32, tc);
    assert!(st.passed(), "{st:?}");
    // 2^-9 of it (one product of 512 lost, say): a failure under both.
    let off = [(100.0 + 1000.0 * 2f64.powi(-9)) as f32];
    assert!(!r.check_accumulated(&off, 1.0, Stored::F32, tc).passed());
    // f32 accumulation: check_accumulated is check_stored.
    assert_eq!(
        r.check_accumulated(&hw, 1.0, Stored::F32, Accumulation::F32),
        r.check_stored(&hw, 1.0, Stored::F32)
    );
}

/// `MatmulInputs::zero_tail`: the last columns of both operands decode to ±0 (packed
/// nibbles and bytes alike, -0 only where it is a code), the scale blocks wholly inside
/// them get what a quantizer gives an all-zero block (E8M0's least, 2^-127; 0 for UE4M3
/// and f32 scales), the blocks across the edge and the columns before it are unchanged,
/// and the oracle's result is the sum over the columns before the tail.
#[test]
fn zero_tail_pads_k_with_zero_blocks() {
    use lowp_formats::problem::MatmulSpec;
    let blockwise = ScaleLayout::Blockwise { rows: 2, cols: 32 };
    let cases = [
        (
            ScaledFormat::F4E2M1,
            ScaleLayout::MX,
            true,
            ScaledFormat::F8E4M3,
        ),
        (
            ScaledFormat::F4E2M1,
            ScaleLayout::NVFP4,
            false,
            ScaledFormat::F8E5M2,
        ),
        (
            ScaledFormat::F8E4M3Fnuz,
            blockwise,
            false,
            ScaledFormat::F6E3M2,
        ),
    ];
    let (m, n, k, tail) = (5, 6, 96, 40);
    let edge = k - tail;
    for (lhs, layout, packed, rhs) in cases {
        let spec = MatmulSpec {
            m,
            n,
            k,
            lhs,
            rhs,
            lhs_layout: layout,
            rhs_layout: ScaleLayout::MX,
            lhs_packed: packed,
            rhs_packed: false,
            bias: false,
            bf16: false,
        };
        let before = spec.inputs(3);
        let mut inputs = spec.inputs(3);
        inputs.zero_tail(tail);
        for (q, was) in [(&inputs.a, &before.a), (&inputs.b, &before.b)] {
            let what = format!("{} {}", q.format, q.layout);
            for r in 0..q.rows {
                for c in 0..k {
                    let code = q.code(r, c);
                    if c < edge {
                        assert_eq!(code, was.code(r, c), "{what} ({r}, {c})");
                    } else {
                        assert_eq!(q.format.decode(code), 0.0, "{what} ({r}, {c})");
                    }
                }
            }
            let least = match q.layout.scale_dtype() {
                ScaleDtype::UE8M0 => 2f32.powi(-127),
                _ => 0.0,
            };
            let (rows, cols) = q.layout.scale_shape(q.rows, k);
            let block = q.layout.k_block(k);
            for i in 0..rows {
                for j in 0..cols {
                    let at = i * cols + j;
                    let (got, old) = (q.scales.values[at], was.scales.values[at]);
                    if j * block >= edge {
                        assert_eq!(got, least, "{what} scale ({i}, {j})");
                    } else {
                        assert_eq!(got.to_bits(), old.to_bits(), "{what} scale ({i}, {j})");
                    }
                }
            }
        }
        let (da, db) = (inputs.a.dequantize(), inputs.b.dequantize());
        let oracle = spec.oracle(&inputs);
        for (x, &got) in oracle.iter().enumerate() {
            let (i, j) = (x / n, x % n);
            // (`dequantize` rounds code times f32 scale to f32: within 2^-23 a term.)
            let terms = (0..edge).map(|c| da[i * k + c] as f64 * db[j * k + c] as f64);
            let (want, size) = terms.fold((0.0, 0.0), |(s, a), t| (s + t, a + t.abs()));
            assert!(
                (got - want).abs() <= 2f64.powi(-21) * size,
                "{lhs} x {rhs}: out[{x}] {got} against {want}"
            );
        }
    }
}
