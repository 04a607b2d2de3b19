//! lowp-expand-quantize is exact: compute_scales / quantize / dequantize lowered by it,
//! JIT-compiled and run, give bit-for-bit the scales, codes and values of lowp-formats, for
//! every named format, several custom ones, every layout, both scale rounding rules, packed
//! FP4, K tails and edge values (±0, subnormals, huge values, ±inf, NaN).

use lowp_formats::testing::SplitMix64;
use lowp_formats::{
    quantize, QuantizeOptions, ScaleDtype, ScaleLayout, ScaleRounding, ScaledFormat,
};
use lowp_jit::{MemRefArg, Session};
use lowp_tests::{format_type, layout_attr, scale_type, valid_pair};

const ROWS: usize = 6;
const K: usize = 70;

fn layouts() -> Vec<ScaleLayout> {
    vec![
        ScaleLayout::PerTensor,
        ScaleLayout::PerChannel,
        ScaleLayout::MX,
        ScaleLayout::Mx { block: 16 },
        ScaleLayout::NVFP4,
        ScaleLayout::NVFP4_GLOBAL,
        ScaleLayout::Blockwise { rows: 1, cols: 128 },
        ScaleLayout::Blockwise { rows: 4, cols: 32 },
    ]
}

fn formats() -> Vec<ScaledFormat> {
    let mut v = ScaledFormat::NAMED.to_vec();
    v.extend([
        ScaledFormat::custom(3, 0),
        ScaledFormat::custom(2, 2),
        ScaledFormat::custom(3, 4),
        ScaledFormat::custom_with_bias(3, 2, 2),
        ScaledFormat::custom(1, 2),
        ScaledFormat::custom(7, 0),
        // Mantissa-free formats with an odd rebias: ties go to the even *code*.
        ScaledFormat::custom(1, 0),
        ScaledFormat::custom_with_bias(3, 0, 4),
    ]);
    v
}

/// Inputs: rows of different magnitudes; row 3 carries edge values, row 4 multiples of 1/8
/// (with power-of-two scales they land exactly between grid values: ties), row 5 a NaN and
/// an inf.
fn input(seed: u64) -> Vec<f32> {
    let mut rng = SplitMix64::new(seed);
    let mut x: Vec<f32> = (0..ROWS * K)
        .map(|i| match i / K {
            4 => ((rng.next_u64() % 129) as f32 - 64.0) / 8.0,
            r => rng.normal() * [1.0, 1e-30, 300.0, 1.0, 0.0, 2.0][r],
        })
        .collect();
    let edges = [
        0.0,
        -0.0,
        1e-40,
        -1e-39,
        3e38,
        -3e38,
        1.5,
        -2.75,
        f32::MIN_POSITIVE,
    ];
    for (i, e) in edges.iter().enumerate() {
        x[3 * K + 7 * i] = *e;
    }
    x[5 * K + 3] = f32::NAN;
    x[5 * K + 40] = f32::NEG_INFINITY;
    x
}

struct Case {
    name: String,
    format: ScaledFormat,
    layout: ScaleLayout,
    rounding: ScaleRounding,
    packed: bool,
}

fn function(c: &Case) -> String {
    let (sr, sc) = c.layout.scale_shape(ROWS, K);
    let st = format!("memref<{sr}x{sc}x{}>", scale_type(c.layout));
    let ft = format_type(c.format);
    let qt = if c.packed {
        format!("memref<{ROWS}x{}x!lowp.packed<{ft}>>", K / 2)
    } else {
        format!("memref<{ROWS}x{K}x{ft}>")
    };
    let xt = format!("memref<{ROWS}x{K}xf32>");
    let global = c.layout.has_global();
    let (garg, guse, gty) = if global {
        (", %g: memref<f32>", ", %g", ", memref<f32>")
    } else {
        ("", "", "")
    };
    let l = layout_attr(c.layout);
    let rounding = match c.rounding {
        ScaleRounding::OcpMx => " {rounding = #lowp.rounding<ocp_mx>}",
        ScaleRounding::RoundUp => "",
    };
    format!(
        "func.func @{name}(%x: {xt}, %s: {st}{garg}, %q: {qt}, %y: {xt}) {{
  lowp.compute_scales %x into %s{guse} layout {l} format {ft}{rounding} : {xt} -> {st}{gty}
  lowp.quantize %x[%s{guse}] layout {l} into %q : {xt}[{st}{gty}] -> {qt}
  lowp.dequantize %q[%s{guse}] layout {l} into %y : {qt}[{st}{gty}] -> {xt}
  return
}}
",
        name = c.name
    )
}

fn same(a: f32, b: f32) -> bool {
    a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())
}

#[test]
fn expanded_quantization_matches_lowp_formats_bit_for_bit() {
    let session = Session::new();
    let x = input(17);
    let mut checked = 0;
    for format in formats() {
        let mut cases = Vec::new();
        for layout in layouts() {
            if !valid_pair(format, layout) {
                continue;
            }
            for rounding in [ScaleRounding::RoundUp, ScaleRounding::OcpMx] {
                for packed in [false, true] {
                    if packed && format.bit_width() != 4 {
                        continue;
                    }
                    cases.push(Case {
                        name: format!("f{}", cases.len()),
                        format,
                        layout,
                        rounding,
                        packed,
                    });
                }
            }
        }
        let source: String = cases.iter().map(function).collect();
        let module = session
            .parse(&source)
            .unwrap_or_else(|e| panic!("{format}: {e}\n{source}"));
        let jit = session
            .compile_cpu(module, 2)
            .unwrap_or_else(|e| panic!("{format}: {e}"));
        for c in &cases {
            let want = quantize(
                &x,
                ROWS,
                K,
                format,
                c.layout,
                QuantizeOptions {
                    rounding: c.rounding,
                    packed: c.packed,
                },
            )
            .unwrap();
            let what = format!("{format} {} {:?} packed={}", c.layout, c.rounding, c.packed);
            let mut xin = x.clone();
            let n_scales = c.layout.scale_count(ROWS, K);
            let (sr, sc) = c.layout.scale_shape(ROWS, K);
            let mut s32 = vec![0f32; n_scales];
            let mut s8 = vec![0u8; n_scales];
            let mut g = 0f32;
            let mut q = vec![0u8; want.codes.len()];
            let mut y = vec![0f32; ROWS * K];
            let byte_scales = scale_type(c.layout) != "f32";
            let mut args = vec![MemRefArg::new(&mut xin, &[ROWS, K])];
            if byte_scales {
                args.push(MemRefArg::new(&mut s8, &[sr, sc]));
            } else {
                args.push(MemRefArg::new(&mut s32, &[sr, sc]));
            }
            if c.layout.has_global() {
                args.push(MemRefArg::scalar(&mut g));
            }
            let qcols = if c.packed { K / 2 } else { K };
            args.push(MemRefArg::new(&mut q, &[ROWS, qcols]));
            args.push(MemRefArg::new(&mut y, &[ROWS, K]));
            // SAFETY: the arguments follow the generated function's signature.
            unsafe { jit.call(&c.name, &mut args) }.unwrap();
            drop(args);

            if let Some(wg) = want.scales.global {
                assert!(same(g, wg), "{what}: global {g:e} vs {wg:e}");
            }
            if byte_scales {
                assert_eq!(s8, want.scale_bytes().unwrap(), "{what}: scale bytes");
            } else {
                for (i, (a, b)) in s32.iter().zip(&want.scales.values).enumerate() {
                    assert!(same(*a, *b), "{what}: scale {i}: {a:e} vs {b:e}");
                }
            }
            let mask = if c.packed {
                0xFF
            } else {
                ((1u32 << format.bit_width()) - 1) as u8
            };
            for (i, (a, b)) in q.iter().zip(&want.codes).enumerate() {
                assert_eq!(
                    a & mask,
                    *b,
                    "{what}: code {i} (row {}, x = {:e})",
                    i / qcols,
                    x[i]
                );
            }
            let wy = want.dequantize();
            for (i, (a, b)) in y.iter().zip(&wy).enumerate() {
                assert!(same(*a, *b), "{what}: dequantized {i}: {a:e} vs {b:e}");
            }
            checked += 1;
        }
    }
    assert!(checked > 100, "only {checked} cases ran");
}

#[test]
fn dynamic_shapes_and_table_decode() {
    // memref<?x?> operands and the table decoder agree with the static, bit-decoding run.
    let session = Session::new();
    let source = "
func.func @dyn(%x: memref<?x?xf32>, %s: memref<?x?xf8E8M0FNU>, %q: memref<?x?x!lowp.packed<f4E2M1FN>>, %y: memref<?x?xf32>) {
  lowp.compute_scales %x into %s layout #lowp.mx<32> format f4E2M1FN : memref<?x?xf32> -> memref<?x?xf8E8M0FNU>
  lowp.quantize %x[%s] layout #lowp.mx<32> into %q : memref<?x?xf32>[memref<?x?xf8E8M0FNU>] -> memref<?x?x!lowp.packed<f4E2M1FN>>
  lowp.dequantize %q[%s] layout #lowp.mx<32> into %y : memref<?x?x!lowp.packed<f4E2M1FN>>[memref<?x?xf8E8M0FNU>] -> memref<?x?xf32>
  return
}";
    let mut module = session.parse(source).unwrap();
    session
        .run_pipeline(
            &mut module,
            "builtin.module(func.func(lowp-expand-quantize{decode=table}))",
        )
        .unwrap();
    assert!(module
        .as_operation()
        .to_string()
        .contains("memref.alloca() {alignment = 64 : i64} : memref<16xf32>"));
    let jit = session.compile_cpu(module, 2).unwrap();
    let x = input(99);
    let want = quantize(
        &x,
        ROWS,
        K,
        ScaledFormat::F4E2M1,
        ScaleLayout::MX,
        QuantizeOptions {
            packed: true,
            ..Default::default()
        },
    )
    .unwrap();
    let mut xin = x.clone();
    let mut s = vec![0u8; ROWS * 3];
    let mut q = vec![0u8; ROWS * K / 2];
    let mut y = vec![0f32; ROWS * K];
    let mut args = vec![
        MemRefArg::new(&mut xin, &[ROWS, K]),
        MemRefArg::new(&mut s, &[ROWS, 3]),
        MemRefArg::new(&mut q, &[ROWS, K / 2]),
        MemRefArg::new(&mut y, &[ROWS, K]),
    ];
    // SAFETY: matches @dyn's signature.
    unsafe { jit.call("dyn", &mut args) }.unwrap();
    drop(args);
    assert_eq!(s, want.scale_bytes().unwrap());
    assert_eq!(q, want.codes);
    let wy = want.dequantize();
    assert!(y.iter().zip(&wy).all(|(a, b)| same(*a, *b)));
}

#[test]
fn unknown_function_is_an_error() {
    let session = Session::new();
    let module = session.parse("func.func @f() { return }").unwrap();
    let jit = session.compile_cpu(module, 0).unwrap();
    // SAFETY: no arguments are passed to a function that is not there.
    let err = unsafe { jit.call("g", &mut []) }.unwrap_err();
    assert!(err.to_string().contains("no function 'g'"), "{err}");
}

#[test]
fn parse_errors_are_located() {
    let session = Session::new();
    let err = session
        .parse("func.func @f(%x: memref<4x!lowp.mf<e0m3>>) { return }")
        .unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains("minifloat needs at least one exponent bit"),
        "{text}"
    );
    assert!(text.contains("1:"), "diagnostic has a location: {text}");
}

/// Every scale byte (E8M0 of MX, UE4M3 of NVFP4, the sign bit included) dequantizes a block
/// of ones to exactly the value `ScaleDtype::decode_byte` gives it: subnormal UE4M3
/// scales, 2^-127, the largest ones and the NaN codes.
#[test]
fn every_scale_byte_decodes_as_lowp_formats() {
    let session = Session::new();
    for (layout, block, dtype) in [
        ("#lowp.mx<32>", 32, ScaleDtype::UE8M0),
        ("#lowp.nvfp4<16>", 16, ScaleDtype::UE4M3),
    ] {
        let k = 256 * block;
        let st = format!(
            "memref<1x256x{}>",
            if block == 32 { "f8E8M0FNU" } else { "f8E4M3FN" }
        );
        let (qt, yt) = (
            format!("memref<1x{k}xf4E2M1FN>"),
            format!("memref<1x{k}xf32>"),
        );
        let source = format!(
            "func.func @dq(%q: {qt}, %s: {st}, %y: {yt}) {{
  lowp.dequantize %q[%s] layout {layout} into %y : {qt}[{st}] -> {yt}
  return
}}"
        );
        let mut module = session.parse(&source).unwrap();
        session
            .run_pipeline(
                &mut module,
                "builtin.module(func.func(lowp-expand-quantize))",
            )
            .unwrap();
        let jit = session.compile_cpu(module, 2).unwrap();
        // E2M1 code 0x2 is 1.0.
        let mut q = vec![0x2u8; k];
        let mut s: Vec<u8> = (0..=255).collect();
        let mut y = vec![0f32; k];
        let mut args = vec![
            MemRefArg::new(&mut q, &[1, k]),
            MemRefArg::new(&mut s, &[1, 256]),
            MemRefArg::new(&mut y, &[1, k]),
        ];
        // SAFETY: matches @dq's signature.
        unsafe { jit.call("dq", &mut args) }.unwrap();
        drop(args);
        for (i, v) in y.iter().enumerate() {
            let want = dtype.decode_byte((i / block) as u8).unwrap();
            assert!(
                same(*v, want),
                "{layout} byte {:#04x}: {v:e}, want {want:e}",
                i / block
            );
        }
    }
}
