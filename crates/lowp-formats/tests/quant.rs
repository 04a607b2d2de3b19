//! Tensor-level quantization for every format x layout, FP4 packing, the scale rules.

use lowp_formats::testing::SplitMix64;
use lowp_formats::*;

fn formats() -> Vec<ScaledFormat> {
    let mut v = ScaledFormat::NAMED.to_vec();
    v.extend([
        ScaledFormat::custom(3, 0),
        ScaledFormat::custom(2, 2),
        ScaledFormat::custom(3, 4),
    ]);
    v
}

fn layouts() -> Vec<ScaleLayout> {
    vec![
        ScaleLayout::PerTensor,
        ScaleLayout::MX,
        ScaleLayout::Mx { block: 16 },
        ScaleLayout::NVFP4,
        ScaleLayout::NVFP4_GLOBAL,
        ScaleLayout::PerChannel,
        ScaleLayout::Blockwise { rows: 1, cols: 128 },
        ScaleLayout::Blockwise { rows: 4, cols: 32 },
    ]
}

#[test]
fn layout_shapes_and_indices() {
    let (rows, k) = (5, 70);
    assert_eq!(ScaleLayout::PerTensor.scale_shape(rows, k), (1, 1));
    assert_eq!(ScaleLayout::PerChannel.scale_shape(rows, k), (5, 1));
    assert_eq!(ScaleLayout::MX.scale_shape(rows, k), (5, 3));
    assert_eq!(ScaleLayout::NVFP4.scale_shape(rows, k), (5, 5));
    assert_eq!(
        ScaleLayout::Blockwise { rows: 2, cols: 32 }.scale_shape(rows, k),
        (3, 3)
    );
    let bw = ScaleLayout::Blockwise { rows: 2, cols: 32 };
    assert_eq!(bw.scale_index(3, 65, rows, k), 3 + 2);
    assert_eq!(ScaleLayout::MX.scale_index(4, 33, rows, k), 4 * 3 + 1);
    assert_eq!(ScaleLayout::PerChannel.scale_index(4, 69, rows, k), 4);
    assert_eq!(ScaleLayout::MX.scale_dtype(), ScaleDtype::UE8M0);
    assert_eq!(ScaleLayout::NVFP4.scale_dtype(), ScaleDtype::UE4M3);
    assert!(ScaleLayout::Mx { block: 0 }.validate().is_err());
}

#[test]
fn layout_display_and_parse() {
    let cases = [
        ("per_tensor", ScaleLayout::PerTensor),
        ("per_channel", ScaleLayout::PerChannel),
        ("mx", ScaleLayout::MX),
        ("mx/16", ScaleLayout::Mx { block: 16 }),
        ("nvfp4", ScaleLayout::NVFP4),
        ("nvfp4+global", ScaleLayout::NVFP4_GLOBAL),
        (
            "nvfp4/32+global",
            ScaleLayout::Nvfp4 {
                block: 32,
                global: true,
            },
        ),
        (
            "blockwise/128x128",
            ScaleLayout::Blockwise {
                rows: 128,
                cols: 128,
            },
        ),
    ];
    for (s, l) in cases {
        assert_eq!(l.to_string(), s);
        assert_eq!(s.parse::<ScaleLayout>(), Ok(l));
    }
    assert_eq!(
        "per-tensor".parse::<ScaleLayout>(),
        Ok(ScaleLayout::PerTensor)
    );
    assert_eq!(
        "blockwise".parse::<ScaleLayout>(),
        Ok(ScaleLayout::Blockwise { rows: 1, cols: 128 })
    );
    for bad in ["mx/0", "mx/x", "blockwise/12", "tensor", "nvfp4/16+glob"] {
        let e = bad.parse::<ScaleLayout>().unwrap_err();
        assert!(e.contains(&format!("'{bad}'")), "{e}");
    }
    // Blocks up to what the dialect's attributes hold (i32); a block as written.
    assert_eq!(
        "mx/2147483647".parse::<ScaleLayout>(),
        Ok(ScaleLayout::Mx { block: 2147483647 })
    );
    for (bad, part) in [
        ("mx/2147483648", "block '2147483648'"),
        ("nvfp4/4294967296+global", "block '4294967296'"),
        ("blockwise/1x-1", "tile cols '-1'"),
    ] {
        let e = bad.parse::<ScaleLayout>().unwrap_err();
        assert!(e.contains(part), "{e}");
    }
}

#[test]
fn dequantize_error_is_bounded_for_every_format_and_layout() {
    let mut rng = SplitMix64::new(5);
    let (rows, cols) = (8, 200);
    for f in formats() {
        for l in layouts() {
            let data: Vec<f32> = (0..rows * cols)
                .map(|i| rng.normal() * if i % 37 == 0 { 50.0 } else { 1.0 })
                .collect();
            let q = quantize(&data, rows, cols, f, l, QuantizeOptions::default()).unwrap();
            let back = q.dequantize();
            // Every element lands within half a step of its scaled grid: the step at the top
            // binade is 2^(emax - mant_bits); a tighter per-binade check is below.
            for r in 0..rows {
                for c in 0..cols {
                    let (x, y) = (data[r * cols + c], back[r * cols + c]);
                    let s = q.scale_at(r, c);
                    // Encoding x / s then multiplying back by s.
                    let want = f.quantize(x / s) * s;
                    assert!(
                        (y - want).abs() <= want.abs() * 1e-6,
                        "{f} {l} ({r},{c}): {x} -> {y}, want {want}"
                    );
                    // round_up never clips: |x| / s <= max_finite (up to one f32 rounding).
                    assert!((x / s).abs() <= f.max_finite() * (1.0 + 1e-6), "{f} {l}");
                }
            }
        }
    }
}

#[test]
fn scale_values_follow_the_rules() {
    // MX: E8M0 = round_up_pow2(amax / max_finite). amax 5.0 over E2M1 (6): 5/6 -> 1.0.
    let mut data = vec![0.0f32; 64];
    data[3] = 5.0;
    data[40] = -100.0; // second block: 100/6 = 16.67 -> 32
    let s = compute_scales(
        &data,
        1,
        64,
        ScaledFormat::F4E2M1,
        ScaleLayout::MX,
        ScaleRounding::RoundUp,
    )
    .unwrap();
    assert_eq!(s.values, vec![1.0, 32.0]);
    assert_eq!(s.global, None);
    // OCP MX rule: 2^(floor(log2 amax) - emax_elem): 5 -> 2^(2-2) = 1; 100 -> 2^(6-2) = 16.
    let s = compute_scales(
        &data,
        1,
        64,
        ScaledFormat::F4E2M1,
        ScaleLayout::MX,
        ScaleRounding::OcpMx,
    )
    .unwrap();
    assert_eq!(s.values, vec![1.0, 16.0]);
    // ...and the block maximum saturates: 100 / 16 = 6.25 -> 6.
    let q = quantize(
        &data,
        1,
        64,
        ScaledFormat::F4E2M1,
        ScaleLayout::MX,
        QuantizeOptions {
            rounding: ScaleRounding::OcpMx,
            packed: false,
        },
    )
    .unwrap();
    assert_eq!(q.dequantize()[40], -96.0);
    // amax == 0 -> scale 1.0.
    let zeros = vec![0.0f32; 32];
    let s = compute_scales(
        &zeros,
        1,
        32,
        ScaledFormat::F8E4M3,
        ScaleLayout::MX,
        ScaleRounding::RoundUp,
    )
    .unwrap();
    assert_eq!(s.values, vec![1.0]);
    // Per-tensor f32: exactly amax / max_finite.
    let s = compute_scales(
        &data,
        1,
        64,
        ScaledFormat::F8E4M3,
        ScaleLayout::PerTensor,
        ScaleRounding::RoundUp,
    )
    .unwrap();
    assert_eq!(s.values, vec![100.0 / 448.0]);
    // Per-channel: one per row.
    let s = compute_scales(
        &[1.0, -2.0, 3.0, 0.5],
        2,
        2,
        ScaledFormat::F4E2M1,
        ScaleLayout::PerChannel,
        ScaleRounding::RoundUp,
    )
    .unwrap();
    assert_eq!(s.values, vec![2.0 / 6.0, 3.0 / 6.0]);
}

#[test]
fn nvfp4_two_level_scales() {
    let mut data = vec![0.25f32; 32];
    data[0] = 600.0; // block 0 amax 600, block 1 amax 0.25
    let l = ScaleLayout::NVFP4_GLOBAL;
    let s = compute_scales(
        &data,
        1,
        32,
        ScaledFormat::F4E2M1,
        l,
        ScaleRounding::RoundUp,
    )
    .unwrap();
    let g = 600.0f32 / (6.0 * 448.0);
    assert_eq!(s.global, Some(g));
    assert_eq!(s.values[0], ScaleDtype::UE4M3.round_up(600.0 / g / 6.0));
    assert!(s.values[0] <= 448.0);
    assert_eq!(s.values[1], ScaleDtype::UE4M3.round_up(0.25 / g / 6.0));
    let q = quantize(
        &data,
        1,
        32,
        ScaledFormat::F4E2M1,
        l,
        QuantizeOptions::default(),
    )
    .unwrap();
    let back = q.dequantize();
    assert!((back[0] - 600.0).abs() / 600.0 < 0.01, "{}", back[0]);
    assert!((back[20] - 0.25).abs() / 0.25 < 0.2, "{}", back[20]);
    // Without the global level the block scale is UE4M3 directly, and clips at 448 * 6.
    let s = compute_scales(
        &data,
        1,
        32,
        ScaledFormat::F4E2M1,
        ScaleLayout::NVFP4,
        ScaleRounding::RoundUp,
    )
    .unwrap();
    assert_eq!(s.values[0], 104.0); // round_up_UE4M3(100) = 104
    assert_eq!(s.global, None);
}

#[test]
fn nan_or_inf_in_a_block_makes_the_block_nan() {
    let mut data = vec![1.0f32; 64];
    data[5] = f32::NAN;
    data[50] = f32::INFINITY;
    for f in [ScaledFormat::F4E2M1, ScaledFormat::F8E4M3] {
        let q = quantize(
            &data,
            1,
            64,
            f,
            ScaleLayout::Mx { block: 16 },
            QuantizeOptions::default(),
        )
        .unwrap();
        assert!(q.scales.values[0].is_nan() && q.scales.values[3].is_nan());
        assert_eq!(
            q.scales.values[1],
            ScaleDtype::UE8M0.round_up(1.0 / f.max_finite())
        );
        assert_eq!(q.scale_bytes().unwrap()[0], 0xFF);
        let back = q.dequantize();
        assert!(back[..16].iter().all(|v| v.is_nan()));
        assert!(back[16..48].iter().all(|v| (v - 1.0).abs() < 1e-6));
        assert!(back[48..].iter().all(|v| v.is_nan()));
    }
}

#[test]
fn fp4_packing_round_trips_low_nibble_first() {
    assert_eq!(pack_fp4(&[0x1, 0x2, 0x3]), vec![0x21, 0x03]);
    assert_eq!(unpack_fp4(&[0x21, 0x03], 3), vec![0x1, 0x2, 0x3]);
    let mut rng = SplitMix64::new(9);
    let (rows, cols) = (3, 33);
    let data = rng.normal_vec(rows * cols);
    let opts = QuantizeOptions {
        packed: true,
        ..Default::default()
    };
    let p = quantize(
        &data,
        rows,
        cols,
        ScaledFormat::F4E2M1,
        ScaleLayout::MX,
        opts,
    )
    .unwrap();
    let u = quantize(
        &data,
        rows,
        cols,
        ScaledFormat::F4E2M1,
        ScaleLayout::MX,
        QuantizeOptions::default(),
    )
    .unwrap();
    assert_eq!(p.codes.len(), rows * 17);
    assert_eq!(p.unpacked_codes(), u.codes);
    assert_eq!(pack_fp4_rows(&u.codes, rows, cols), p.codes);
    assert_eq!(unpack_fp4_rows(&p.codes, rows, cols), u.codes);
    assert_eq!(p.dequantize(), u.dequantize());
    let e = quantize(
        &data,
        rows,
        cols,
        ScaledFormat::F6E2M3,
        ScaleLayout::MX,
        opts,
    )
    .unwrap_err();
    assert_eq!(
        e,
        FormatError::PackedNotFp4 {
            format: ScaledFormat::F6E2M3
        }
    );
}

#[test]
fn bad_shapes_are_errors() {
    let data = vec![0.0f32; 10];
    let e = quantize(
        &data,
        3,
        4,
        ScaledFormat::F8E4M3,
        ScaleLayout::MX,
        QuantizeOptions::default(),
    )
    .unwrap_err();
    assert_eq!(
        e,
        FormatError::Length {
            what: "data",
            expected: 12,
            found: 10
        }
    );
    assert!(e.to_string().contains("expected 12"));
    let s = Scales {
        values: vec![1.0; 2],
        global: None,
    };
    let e = quantize_with_scales(
        &data,
        2,
        5,
        ScaledFormat::F8E4M3,
        ScaleLayout::PerChannel,
        s.clone(),
        false,
    );
    assert!(e.is_ok());
    let e = quantize_with_scales(
        &data,
        2,
        5,
        ScaledFormat::F8E4M3,
        ScaleLayout::NVFP4_GLOBAL,
        s.clone(),
        false,
    )
    .unwrap_err();
    assert_eq!(
        e,
        FormatError::GlobalScale {
            layout: ScaleLayout::NVFP4_GLOBAL,
            given: false
        }
    );
    let e = quantize_with_scales(
        &data,
        2,
        5,
        ScaledFormat::F8E4M3,
        ScaleLayout::Mx { block: 2 },
        s,
        false,
    )
    .unwrap_err();
    assert_eq!(
        e,
        FormatError::Length {
            what: "scales",
            expected: 6,
            found: 2
        }
    );
}
