//! E8M0 and ScaleDtype: the seed examples, the round-up storage policy, the grids.

use lowp_formats::testing::SplitMix64;
use lowp_formats::{ScaleDtype, ScaledFormat, E8M0};

#[test]
fn e8m0_seed_examples() {
    assert_eq!(E8M0::from(4.0_f64).to_f64(), 4.0);
    assert_eq!(E8M0::from(3.0_f64).to_f64(), 4.0);
    assert_eq!(E8M0::from(1.0).to_f64(), 1.0);
    assert_eq!(E8M0::from(2.0).to_f64(), 2.0);
    assert_eq!(E8M0::from(1.5).to_f64(), 2.0);
    assert!(E8M0::from(f64::NAN).to_f64().is_nan());
    assert_eq!(E8M0::from(-1.0).to_f64(), 2f64.powi(-127));
    assert_eq!(E8M0::from(0.0).to_f64(), 2f64.powi(-127));
    assert_eq!(E8M0::from(-5.0).to_f64(), 2f64.powi(-127));
    assert_eq!(E8M0::from(f64::INFINITY).to_f64(), 2f64.powi(127));
    assert_eq!(E8M0::from_bits(0x7F).to_f64(), 1.0);
    assert_eq!(E8M0::from_bits(0x80).to_f64(), 2.0);
    assert!(E8M0::NAN.to_f64().is_nan());
    assert!(E8M0::from_bits(0xFF).to_f64().is_nan());
    assert_eq!(E8M0::from_f32_slice(&[0.5, -0.75, 0.25]).to_f64(), 1.0);
    assert_eq!(E8M0::from_f32_slice(&[1.0, 5.0, -3.5]).to_f64(), 8.0);
    assert_eq!(E8M0::from_f32_slice(&[100.0, -50.0, 75.0]).to_f64(), 128.0);
    assert_eq!(E8M0::from_f32_slice(&[]).to_f64(), 2f64.powi(-127));
    let e: E8M0 = 2.5f32.into();
    assert_eq!(e.to_f64(), 4.0);
    assert_eq!(E8M0::from(0x7Fu8).to_f64(), 1.0);
    assert_eq!(u8::from(E8M0::from(1.0)), 0x7F);
    assert_eq!(f64::from(E8M0::from_bits(0x81)), 4.0);
    assert_eq!(E8M0::from_bits(0x42).to_bits(), 0x42);
}

#[test]
fn e8m0_every_code_round_trips_and_rounds_up() {
    for b in 0..=0xFEu8 {
        let e = E8M0::from_bits(b);
        assert_eq!(E8M0::from_f64(e.to_f64()), e);
        assert_eq!(E8M0::from_f32(e.to_f32()), e);
        assert_eq!(e.to_f32() as f64, e.to_f64());
        if b < 0xFE {
            // Just above a power of two rounds up to the next one.
            let above = e.to_f64() * (1.0 + 1e-12);
            assert_eq!(E8M0::from_f64(above).to_bits(), b + 1);
        }
    }
    assert_eq!(E8M0::from_f64(2f64.powi(127) * 1.5), E8M0::MAX);
    assert_eq!(E8M0::from_f64(1e-300), E8M0::MIN);
    assert_eq!(E8M0::from_f64(f64::MIN_POSITIVE / 4.0), E8M0::MIN);
}

#[test]
fn ue8m0_constants() {
    assert_eq!(ScaleDtype::UE8M0_MIN as f64, 2f64.powi(-127));
    assert_eq!(ScaleDtype::UE8M0_MAX as f64, 2f64.powi(127));
    assert_eq!(ScaleDtype::UE8M0.max_representable(), ScaleDtype::UE8M0_MAX);
    assert_eq!(ScaleDtype::UE4M3.max_representable(), 448.0);
    assert_eq!(ScaleDtype::F16.max_representable(), 65504.0);
    assert_eq!(ScaleDtype::BF16.max_representable(), 3.3895314e38);
    assert_eq!(ScaleDtype::F32.max_representable(), f32::MAX);
}

/// Every dtype's grid, enumerated independently.
fn grid_values(d: ScaleDtype) -> Vec<f32> {
    match d {
        ScaleDtype::UE4M3 => (0..0x7Fu8)
            .map(|c| ScaledFormat::F8E4M3.decode(c))
            .collect(),
        ScaleDtype::UE8M0 => (0..0xFFu8).map(|c| E8M0::from_bits(c).to_f32()).collect(),
        ScaleDtype::F16 => {
            // f16 positive finite: subnormals k * 2^-24, normals (1 + m/1024) 2^(e-15)
            let mut v: Vec<f32> = (0..1024).map(|k| k as f32 * 2f32.powi(-24)).collect();
            for e in 1..31 {
                for m in 0..1024 {
                    v.push((1.0 + m as f32 / 1024.0) * 2f32.powi(e - 15));
                }
            }
            v
        }
        _ => unreachable!(),
    }
}

#[test]
fn round_up_is_the_smallest_grid_value_not_below() {
    let mut rng = SplitMix64::new(11);
    for d in [ScaleDtype::UE4M3, ScaleDtype::UE8M0, ScaleDtype::F16] {
        let grid = grid_values(d);
        for &g in &grid {
            if g > 0.0 || d != ScaleDtype::UE8M0 {
                assert_eq!(d.round_up(g), g, "{d}: {g} is on the grid");
            }
        }
        for _ in 0..20000 {
            let x = 2f32.powf(rng.uniform(-30.0, 20.0));
            let r = d.round_up(x);
            let want = grid
                .iter()
                .copied()
                .find(|&g| g >= x)
                .unwrap_or(d.max_representable());
            assert_eq!(r, want, "{d}: round_up({x:e})");
            assert!(
                r >= x || x > d.max_representable(),
                "{d}: never below the input"
            );
        }
    }
}

#[test]
fn round_up_seed_rules() {
    // UE4M3 round_up never below its input.
    let d = ScaleDtype::UE4M3;
    assert_eq!(d.round_up(1.0), 1.0);
    assert_eq!(d.round_up(1.01), 1.125);
    assert_eq!(d.round_up(0.3), 0.3125);
    assert_eq!(d.round_up(1e-4), 2f32.powi(-9) * 1.0); // below the smallest subnormal
    assert_eq!(d.round_up(0.0), 0.0);
    assert_eq!(d.round_up(447.0), 448.0);
    assert_eq!(d.round_up(1000.0), 448.0); // saturates
    assert!(d.round_up(f32::NAN).is_nan());
    // UE8M0 is a bare exponent: round up to a power of two, clamp at both ends.
    let e = ScaleDtype::UE8M0;
    assert_eq!(e.round_up(1.5), 2.0);
    assert_eq!(e.round_up(0.0), ScaleDtype::UE8M0_MIN);
    assert_eq!(e.round_up(f32::from_bits(1)), ScaleDtype::UE8M0_MIN);
    assert_eq!(e.round_up(f32::MAX), ScaleDtype::UE8M0_MAX);
    // bf16 keeps the top half of the f32 pattern, all the way down.
    let b = ScaleDtype::BF16;
    assert_eq!(b.round_up(1.0 + 2f32.powi(-20)), 1.0 + 2f32.powi(-7));
    assert_eq!(
        b.round_up(f32::from_bits(0x0000_0001)),
        f32::from_bits(0x0001_0000)
    );
    assert_eq!(ScaleDtype::F32.round_up(1.2345), 1.2345);
    // F16 subnormal range.
    assert_eq!(
        ScaleDtype::F16.round_up(1.5 * 2f32.powi(-24)),
        2.0 * 2f32.powi(-24)
    );
}

#[test]
fn f32_grids() {
    let g = ScaleDtype::UE4M3.f32_grid();
    assert_eq!(g.dropped_bits, 20);
    assert_eq!(g.min_normal, Some(2f32.powi(-6)));
    assert_eq!(g.subnormal_step, 2f32.powi(-9));
    assert!(g.contains(0.5) && !g.contains(0.51));
    assert_eq!(ScaleDtype::BF16.f32_grid().min_normal, None);
    assert_eq!(ScaleDtype::F16.f32_grid().dropped_bits, 13);
    assert_eq!(ScaleDtype::UE8M0.f32_grid().dropped_bits, 23);
}

#[test]
#[should_panic(expected = "F32 is the f32 grid itself")]
fn f32_has_no_grid() {
    let _ = ScaleDtype::F32.f32_grid();
}

#[test]
fn scale_bytes() {
    let d = ScaleDtype::UE4M3;
    for c in 0..0x7Fu8 {
        let v = d.decode_byte(c).unwrap();
        assert_eq!(d.encode_byte(v), Some(c));
    }
    assert_eq!(ScaleDtype::UE8M0.encode_byte(3.0), Some(0x81));
    assert_eq!(ScaleDtype::UE8M0.decode_byte(0x81), Some(4.0));
    assert_eq!(ScaleDtype::F32.encode_byte(1.0), None);
    assert!(ScaleDtype::ALL.windows(2).all(|w| w[0] < w[1]));
}
