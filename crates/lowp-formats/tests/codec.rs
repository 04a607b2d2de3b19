//! Exhaustive and edge tests of the element codecs: every code of every named format and of
//! all 28 custom layouts (X >= 1, 1 + X + Y <= 8), fast paths against the reference.

use lowp_formats::lowp_codec::{self, reference, Codec};
use lowp_formats::testing::SplitMix64;
use lowp_formats::ScaledFormat;
use proptest::prelude::*;

/// The seven named formats and every custom (X, Y) with the IEEE bias.
fn all_formats() -> Vec<ScaledFormat> {
    let mut v = ScaledFormat::NAMED.to_vec();
    for e in 1..=7u8 {
        for m in 0..=(7 - e) {
            v.push(ScaledFormat::custom(e, m));
        }
    }
    v
}

#[test]
fn there_are_28_custom_layouts() {
    assert_eq!(all_formats().iter().filter(|f| f.is_custom()).count(), 28);
}

fn same(a: f32, b: f32) -> bool {
    a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())
}

#[test]
fn table_decode_equals_reference_for_every_code() {
    for f in all_formats() {
        let codec = Codec::new(f);
        for c in 0..=255u8 {
            let r = reference::decode(f, c);
            assert!(
                same(f.decode(c), r),
                "{f} code {c:#04x}: {} vs {r}",
                f.decode(c)
            );
            assert!(same(codec.decode(c), r), "{f} codec code {c:#04x}");
        }
    }
}

#[test]
fn decode_then_encode_round_trips_every_finite_code() {
    for f in all_formats() {
        for c in 0..f.code_count() {
            let c = c as u8;
            let v = f.decode(c);
            if !v.is_finite() {
                continue;
            }
            assert_eq!(f.encode(v), c, "{f}: code {c:#04x} = {v}");
            assert_eq!(
                reference::encode(f, v),
                c,
                "{f} reference: code {c:#04x} = {v}"
            );
        }
    }
}

#[test]
fn positive_grid_is_strictly_increasing_up_to_max_finite() {
    for f in all_formats() {
        let max = f.max_finite_code();
        for c in 1..=max {
            assert!(f.decode(c) > f.decode(c - 1), "{f}: code {c:#04x}");
        }
        assert_eq!(f.decode(max), f.max_finite(), "{f}");
        // Negative half mirrors the positive one.
        for c in 0..=max {
            let neg = f.decode(c | f.sign_mask());
            if !(f.is_fnuz() && c == 0) {
                assert_eq!(neg, -f.decode(c), "{f}: code {c:#04x}");
            }
        }
        let grid = f.representable_values();
        assert!(grid.windows(2).all(|w| w[0] < w[1]), "{f}");
        assert_eq!(*grid.last().unwrap(), f.max_finite());
        assert_eq!(grid[0], -f.max_finite());
    }
}

#[test]
fn max_finite_of_named_formats() {
    let want = [448.0, 57344.0, 240.0, 57344.0, 7.5, 28.0, 6.0];
    for (f, w) in ScaledFormat::NAMED.iter().zip(want) {
        assert_eq!(f.max_finite(), w, "{f}");
    }
    assert_eq!(ScaledFormat::custom(4, 3).max_finite(), 480.0); // all-finite e4m3: 0x7F
    assert_eq!(ScaledFormat::custom(3, 0).max_finite(), 16.0);
}

#[test]
fn nan_and_inf_codes() {
    use ScaledFormat::*;
    // E4M3FN: only S.1111.111 is NaN, no inf.
    for c in 0..=255u8 {
        let v = F8E4M3.decode(c);
        assert_eq!(v.is_nan(), c & 0x7F == 0x7F, "e4m3 {c:#04x}");
        assert!(!v.is_infinite());
    }
    // E5M2: S.11111.00 is inf, S.11111.{01,10,11} NaN.
    assert_eq!(F8E5M2.decode(0x7C), f32::INFINITY);
    assert_eq!(F8E5M2.decode(0xFC), f32::NEG_INFINITY);
    for c in [0x7D, 0x7E, 0x7F, 0xFD, 0xFE, 0xFF] {
        assert!(F8E5M2.decode(c).is_nan());
    }
    assert_eq!(
        (0..=255u8).filter(|&c| F8E5M2.decode(c).is_nan()).count(),
        6
    );
    // FNUZ: 0x80 is the only NaN, no inf, no -0.
    for f in [F8E4M3Fnuz, F8E5M2Fnuz] {
        for c in 0..=255u8 {
            let v = f.decode(c);
            assert_eq!(v.is_nan(), c == 0x80, "{f} {c:#04x}");
            assert!(!v.is_infinite());
            assert!(!(v == 0.0 && v.is_sign_negative()), "{f} has no -0");
        }
    }
    // FP6 / FP4 / custom: every code finite.
    for f in all_formats().into_iter().filter(|f| !f.has_nan()) {
        assert!(
            (0..f.code_count()).all(|c| f.decode(c as u8).is_finite()),
            "{f}"
        );
    }
    assert!(F8E5M2.has_inf() && !F8E4M3.has_inf() && !F8E4M3Fnuz.has_inf());
}

#[test]
fn ties_go_to_the_even_code() {
    use ScaledFormat::*;
    let cases: &[(ScaledFormat, f32, u8)] = &[
        // E4M3: 1.0 = 0.0111.000 (0x38), 1.125 = 0.0111.001 (0x39), 1.25 = 0.0111.010 (0x3A)
        (F8E4M3, 1.0625, 0x38),
        (F8E4M3, 1.1875, 0x3A),
        (F8E4M3, -1.0625, 0xB8),
        // E4M3 subnormals: step 2^-9; 1.5 * 2^-9 between 0x01 and 0x02 -> 0x02
        (F8E4M3, 1.5 * 2f32.powi(-9), 0x02),
        (F8E4M3, 0.5 * 2f32.powi(-9), 0x00),
        // E4M3 binade carry: 1.9375 between 1.875 (0x3F) and 2.0 (0x40) -> 0x40
        (F8E4M3, 1.9375, 0x40),
        // E5M2: 1.0 = 0.01111.00 (0x3C), 1.25 = 0x3D: 1.125 -> 0x3C; 1.375 -> 0x3E
        (F8E5M2, 1.125, 0x3C),
        (F8E5M2, 1.375, 0x3E),
        // E2M1 grid 0, .5, 1, 1.5, 2, 3, 4, 6 = codes 0..7
        (F4E2M1, 0.25, 0x0),
        (F4E2M1, 0.75, 0x2),
        (F4E2M1, 1.25, 0x2),
        (F4E2M1, 1.75, 0x4),
        (F4E2M1, 2.5, 0x4),
        (F4E2M1, 3.5, 0x6),
        (F4E2M1, 5.0, 0x6),
        (F4E2M1, -5.0, 0xE),
        // E2M3: step 0.125 below 2: 0.0625 -> 0x00, 0.1875 -> 0x02 (0.25)
        (F6E2M3, 0.0625, 0x00),
        (F6E2M3, 0.1875, 0x02),
        // f4e3m0 (bias 3): 1 = 0.011 (0x3), 2 = 0.100 (0x4), 4 = 0.101 (0x5), 8 = 0.110 (0x6)
        (ScaledFormat::custom(3, 0), 1.5, 0x4),
        (ScaledFormat::custom(3, 0), 3.0, 0x4),
        (ScaledFormat::custom(3, 0), 6.0, 0x6),
        (ScaledFormat::custom(3, 0), 0.125, 0x0),
    ];
    for &(f, x, code) in cases {
        assert_eq!(f.encode(x), code, "{f}: encode({x})");
        assert_eq!(reference::encode(f, x), code, "{f}: reference encode({x})");
    }
}

#[test]
fn fnuz_never_makes_negative_zero() {
    for f in [ScaledFormat::F8E4M3Fnuz, ScaledFormat::F8E5M2Fnuz] {
        assert_eq!(f.encode(-0.0), 0x00);
        assert_eq!(f.encode(-1e-30), 0x00);
        assert_eq!(f.encode(-f.min_positive() * 0.5), 0x00); // tie -> even 0
        assert_eq!(f.encode(-f.min_positive() * 0.75), 0x81);
        assert_eq!(f.encode(f32::NAN), 0x00);
    }
    // Formats with -0 keep it.
    assert_eq!(ScaledFormat::F8E4M3.encode(-0.0), 0x80);
    assert_eq!(ScaledFormat::F4E2M1.encode(-0.1), 0x8);
}

#[test]
fn saturation_of_overflow_and_infinity() {
    for f in all_formats() {
        let max = f.max_finite_code();
        let neg_max = max | f.sign_mask();
        assert_eq!(f.encode(f32::INFINITY), max, "{f}");
        assert_eq!(f.encode(f32::NEG_INFINITY), neg_max, "{f}");
        assert_eq!(f.encode(1e38), max, "{f}");
        assert_eq!(f.encode(f32::MAX), max, "{f}");
        assert_eq!(f.encode(-3e30), neg_max, "{f}");
        assert_eq!(f.encode(f.max_finite() * 1.0001), max, "{f}");
        assert_eq!(f.encode(f32::NAN), 0, "{f}");
        assert_eq!(f.encode(-f32::NAN), 0, "{f}");
    }
    // E4M3: 464 is the midpoint of 448 and the NaN slot 480: saturates, never NaN.
    assert_eq!(ScaledFormat::F8E4M3.encode(464.0), 0x7E);
    assert_eq!(ScaledFormat::F8E4M3.encode(500.0), 0x7E);
    assert_eq!(ScaledFormat::F8E5M2.encode(61440.0), 0x7B);
}

/// The definition of encode: scan every finite code for the nearest value, ties to even.
fn encode_by_scan(f: ScaledFormat, x: f32) -> u8 {
    if x.is_nan() {
        return 0;
    }
    let a = (x as f64).abs().min(f.max_finite() as f64);
    let mut best = 0u8;
    for c in 1..=f.max_finite_code() {
        let (d, db) = (
            (f.decode(c) as f64 - a).abs(),
            (f.decode(best) as f64 - a).abs(),
        );
        if d < db || (d == db && c % 2 == 0) {
            best = c;
        }
    }
    if x.is_sign_negative() && !(f.is_fnuz() && best == 0) {
        best | f.sign_mask()
    } else {
        best
    }
}

/// Inputs that probe every rounding boundary: each grid value, each midpoint and the f32
/// neighbours of both.
fn boundary_inputs(f: ScaledFormat) -> Vec<f32> {
    let grid: Vec<f32> = (0..=f.max_finite_code()).map(|c| f.decode(c)).collect();
    let mut xs = Vec::new();
    for w in grid.windows(2) {
        let mid = (w[0] as f64 + w[1] as f64) / 2.0;
        for v in [w[0], mid as f32, w[1]] {
            for d in [-1i32, 0, 1] {
                let b = (v.to_bits() as i32 + d).max(0) as u32;
                xs.push(f32::from_bits(b));
                xs.push(-f32::from_bits(b));
            }
        }
    }
    xs
}

#[test]
fn encode_paths_agree_with_the_definition_at_every_boundary() {
    for f in all_formats() {
        let codec = Codec::new(f);
        for x in boundary_inputs(f) {
            let want = encode_by_scan(f, x);
            assert_eq!(
                reference::encode(f, x),
                want,
                "{f}: reference encode({x:e})"
            );
            assert_eq!(
                codec.encode(x),
                want,
                "{f}: fast encode({x:e}) bits {:#x}",
                x.to_bits()
            );
        }
    }
}

#[test]
fn fast_encode_equals_reference_over_a_sweep_of_f32() {
    // Every 997th bit pattern (~4.3M values, both signs, subnormals, inf, NaN) per format.
    for f in all_formats() {
        let codec = Codec::new(f);
        let mut bits = 0u64;
        while bits <= u32::MAX as u64 {
            let x = f32::from_bits(bits as u32);
            let (fast, slow) = (codec.encode(x), reference::encode(f, x));
            assert_eq!(fast, slow, "{f}: encode({x:e}) bits {bits:#x}");
            bits += 997;
        }
    }
}

#[test]
fn slice_apis_match_scalar() {
    let mut rng = SplitMix64::new(3);
    for f in all_formats() {
        let codes = rng.bytes(1000);
        let mut out = vec![0.0; 1000];
        lowp_codec::decode_slice(f, &codes, &mut out);
        for (o, &c) in out.iter().zip(&codes) {
            assert!(same(*o, f.decode(c)));
        }
        let xs: Vec<f32> = (0..1000).map(|_| rng.normal() * f.max_finite()).collect();
        let mut enc = vec![0u8; 1000];
        lowp_codec::encode_slice(f, &xs, &mut enc);
        let mut q = xs.clone();
        lowp_codec::quantize_slice(f, &mut q);
        for i in 0..1000 {
            assert_eq!(enc[i], f.encode(xs[i]));
            assert!(same(q[i], f.quantize(xs[i])));
        }
    }
}

#[test]
// Binary codes grouped as sign_exponent_mantissa.
#[allow(clippy::unusual_byte_groupings)]
fn seed_examples() {
    // seed 000: f4e3m0
    const F4E3M0: ScaledFormat = ScaledFormat::custom(3, 0);
    assert_eq!(F4E3M0.to_string(), "f4e3m0");
    assert_eq!(F4E3M0.exp_bits(), 3);
    assert_eq!(F4E3M0.mant_bits(), 0);
    assert_eq!(F4E3M0.bias(), 3);
    assert_eq!(F4E3M0.quantize(1.4), 1.0);
    assert_eq!(F4E3M0.max_finite(), 16.0);
    assert_eq!(
        F4E3M0.representable_values(),
        vec![-16.0, -8.0, -4.0, -2.0, -1.0, -0.5, -0.25, 0.0, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0]
    );
    assert_eq!(
        "f4e3m0".parse::<ScaledFormat>(),
        Ok(ScaledFormat::Custom {
            exp_bits: 3,
            mant_bits: 0,
            bias: 3
        })
    );
    // seed 002: F4E2M1FN details
    let f = ScaledFormat::F4E2M1;
    assert_eq!(f.decode(0b0_11_1), 6.0);
    assert_eq!(f.decode(0b1_11_1), -6.0);
    assert_eq!(f.decode(0b0_01_0), 1.0);
    assert_eq!(f.decode(0b0_00_1), 0.5);
    assert_eq!(f.decode(0b1_00_0).to_bits(), (-0.0f32).to_bits());
    assert_eq!(f.representable_values().len(), 15);
}

#[test]
// The kernel id spelled field by field, a zero field too.
#[allow(clippy::identity_op)]
fn fields_and_ids() {
    use ScaledFormat::*;
    assert_eq!(F8E4M3.fields(), (4, 3, 7));
    assert_eq!(F8E5M2.fields(), (5, 2, 15));
    assert_eq!(F8E4M3Fnuz.fields(), (4, 3, 8));
    assert_eq!(F8E5M2Fnuz.fields(), (5, 2, 16));
    assert_eq!(F6E2M3.fields(), (2, 3, 1));
    assert_eq!(F6E3M2.fields(), (3, 2, 3));
    assert_eq!(F4E2M1.fields(), (2, 1, 1));
    assert_eq!(
        ScaledFormat::NAMED.map(|f| f.bit_width()),
        [8, 8, 8, 8, 6, 6, 4]
    );
    for (i, f) in ScaledFormat::NAMED.iter().enumerate() {
        assert_eq!(f.kernel_id(), i as u32);
        assert!(f.is_named() && !f.is_custom());
        assert_eq!(ScaledFormat::from_kernel_id(i as u32), Some(*f));
    }
    let c = ScaledFormat::custom_with_bias(3, 0, 5);
    assert_eq!(c.kernel_id(), 0x8000_0000 | 3 | 0 << 4 | 5 << 8);
    assert_eq!(ScaledFormat::from_kernel_id(c.kernel_id()), Some(c));
    let neg = ScaledFormat::custom_with_bias(2, 1, -1);
    assert_eq!(neg.kernel_id(), 0x8000_0000 | 2 | 1 << 4 | 0xFF << 8);
    assert_eq!(ScaledFormat::from_kernel_id(neg.kernel_id()), Some(neg));
    assert!(F8E4M3.is_native_fp8() && F8E5M2.is_native_fp8());
    assert!(!F8E4M3Fnuz.is_native_fp8() && !F4E2M1.is_native_fp8());
    assert!(F8E4M3Fnuz.is_fnuz() && F8E5M2Fnuz.is_fnuz() && !F8E4M3.is_fnuz());
    assert_eq!(F8E4M3.emax(), 8);
    assert_eq!(F8E5M2.emax(), 15);
    assert_eq!(F4E2M1.emax(), 2);
    assert_eq!(F6E2M3.emax(), 2);
    assert_eq!(F6E3M2.emax(), 4);
}

#[test]
fn display_and_parse() {
    for f in ScaledFormat::NAMED {
        assert_eq!(f.to_string().parse::<ScaledFormat>(), Ok(f));
        assert_eq!(f.mlir_name().unwrap().parse::<ScaledFormat>(), Ok(f));
    }
    // Every name parses back to its own format: a custom format with a named format's
    // fields and IEEE bias (all finite, so not the same values) says its bias.
    for f in all_formats() {
        let back: ScaledFormat = f.to_string().parse().unwrap();
        assert_eq!(back, f, "{f}");
    }
    let e4m3 = ScaledFormat::custom(4, 3);
    assert_eq!(e4m3.to_string(), "f8e4m3b7");
    assert_eq!("f8e4m3b7".parse::<ScaledFormat>(), Ok(e4m3));
    assert_ne!(e4m3.max_finite(), ScaledFormat::F8E4M3.max_finite());
    let b = ScaledFormat::custom_with_bias(3, 2, 2);
    assert_eq!(b.to_string(), "f6e3m2b2");
    assert_eq!("f6e3m2b2".parse::<ScaledFormat>(), Ok(b));
    assert_eq!(
        "f5e2m2".parse::<ScaledFormat>(),
        Ok(ScaledFormat::custom(2, 2))
    );
    assert_eq!("F8E4M3FN".parse::<ScaledFormat>(), Ok(ScaledFormat::F8E4M3));
    // Named names win over the custom reading of the same fields.
    assert_eq!("f4e2m1".parse::<ScaledFormat>(), Ok(ScaledFormat::F4E2M1));
    for bad in [
        "f9e4m4",
        "f4e2m2",
        "f4e0m3",
        "e4m3",
        "fp8",
        "",
        "f8e4m3x",
        "f4e3m0b999",
    ] {
        let err = bad.parse::<ScaledFormat>().unwrap_err();
        assert!(err.contains(&format!("'{bad}'")), "{err}");
    }
}

#[test]
#[should_panic(expected = "at least one exponent bit")]
fn custom_rejects_zero_exponent_bits() {
    let _ = ScaledFormat::custom(0, 3);
}

#[test]
#[should_panic(expected = "does not fit in a byte")]
fn custom_rejects_wide_codes() {
    let _ = ScaledFormat::custom(5, 3);
}

#[test]
fn custom_bias_range() {
    use lowp_formats::CustomFormatError::*;
    // f2e1m0 with bias -100: the grid is {0, 2^101}; the encoder's rounding constant needs
    // the smallest step at or below 2^104.
    let big = ScaledFormat::custom_with_bias(1, 0, -100);
    assert_eq!(big.max_finite(), 2f32.powi(101));
    assert_eq!(big.encode(2f32.powi(100)), 0); // tie of 0 (0b00) and 2^101 (0b01): even code
    assert_eq!(big.encode(2f32.powi(100) * 1.01), 1);
    assert_eq!(
        ScaledFormat::try_custom_with_bias(1, 0, -110),
        Err(StepTooLarge { step_exponent: 111 })
    );
    // f8e7m0 with bias -1 would reach 2^128.
    assert_eq!(
        ScaledFormat::try_custom_with_bias(7, 0, -1),
        Err(RangeExceedsF32 { top_exponent: 128 })
    );
    let tiny = ScaledFormat::custom_with_bias(2, 5, 127);
    assert!(tiny.min_positive() > 0.0 && tiny.min_positive() < 1e-38);
    assert_eq!(tiny.encode(tiny.min_positive()), 1);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn encode_is_nearest_representable(x in -1.0e6f32..1.0e6f32, fi in 0usize..35) {
        let f = all_formats()[fi];
        let q = f.quantize(x) as f64;
        let xc = (x as f64).clamp(-(f.max_finite() as f64), f.max_finite() as f64);
        for v in f.representable_values() {
            prop_assert!((q - xc).abs() <= (v as f64 - xc).abs(), "{} {} -> {} but {} is nearer", f, x, q, v);
        }
    }

    #[test]
    fn encode_is_odd_symmetric(x in proptest::num::f32::NORMAL | proptest::num::f32::SUBNORMAL, fi in 0usize..35) {
        let f = all_formats()[fi];
        let (p, n) = (f.encode(x.abs()), f.encode(-x.abs()));
        if p == 0 {
            prop_assert!(n == 0 || n == f.sign_mask());
        } else {
            prop_assert_eq!(n, p | f.sign_mask());
        }
    }
}
