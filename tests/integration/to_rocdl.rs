//! lowp-to-rocdl's kernels compute what the oracle computes. No AMD GPU here: the MFMA
//! kernels run with `emulate=true` (the same blocks, waves, register loads, embedding
//! tables, scale handling and epilogue, each MFMA computed from the lanes' registers through
//! the inverse of the register layout, the scaled MFMA taking each 32-block's E8M0 scale
//! from the lane that holds its codes). What this does not check: that the register layout
//! and the scale-operand convention are the hardware's (they follow the CDNA3 / CDNA4 ISA
//! descriptions), and the AMDGPU backend's code (lit/Target checks the instructions in it).

use lowp_formats::testing::SplitMix64;
use lowp_formats::{ScaleLayout, ScaledFormat};
use lowp_jit::Session;

use super::to_loops::{format_layout_cases, mixed_cases, operand, run_and_check, source, Problem};

fn emulated(chip: &str, kernel: &str) -> String {
    format!("builtin.module(func.func(lowp-to-rocdl{{chip={chip} kernel={kernel} emulate=true}}))")
}

#[test]
fn gfx942_emulation_matches_the_oracle() {
    let session = Session::new();
    let pre = emulated("gfx942", "auto");
    format_layout_cases(&session, Some(&pre));
    mixed_cases(&session, Some(&pre));
}

#[test]
fn gfx950_emulation_matches_the_oracle() {
    let session = Session::new();
    let pre = emulated("gfx950", "auto");
    format_layout_cases(&session, Some(&pre));
    mixed_cases(&session, Some(&pre));
}

/// Each instruction forced on problems with several blocks and waves, ragged M / N / K and
/// K not a multiple of the codes per register.
#[test]
fn mfma_tiles_and_ragged_edges() {
    let session = Session::new();
    let mut rng = SplitMix64::new(950);
    let mx = ScaleLayout::MX;
    let cases = [
        // (chip, kernel, lhs, rhs, layout)
        (
            "gfx950",
            "scaled-mfma",
            ScaledFormat::F4E2M1,
            ScaledFormat::F4E2M1,
            mx,
        ),
        (
            "gfx950",
            "scaled-mfma",
            ScaledFormat::F8E4M3,
            ScaledFormat::F4E2M1,
            mx,
        ),
        (
            "gfx950",
            "scaled-mfma",
            ScaledFormat::F6E2M3,
            ScaledFormat::F8E5M2,
            mx,
        ),
        (
            "gfx950",
            "mfma",
            ScaledFormat::F8E4M3,
            ScaledFormat::F8E5M2,
            ScaleLayout::PerChannel,
        ),
        (
            "gfx950",
            "mfma",
            ScaledFormat::F4E2M1,
            ScaledFormat::F4E2M1,
            ScaleLayout::NVFP4_GLOBAL,
        ),
        (
            "gfx942",
            "mfma",
            ScaledFormat::F8E4M3Fnuz,
            ScaledFormat::F8E5M2Fnuz,
            ScaleLayout::PerTensor,
        ),
        // OCP E4M3 fed as FNUZ (shifted), beside FNUZ E5M2.
        (
            "gfx942",
            "mfma",
            ScaledFormat::F8E4M3,
            ScaledFormat::F8E5M2Fnuz,
            ScaleLayout::PerChannel,
        ),
        (
            "gfx942",
            "mfma",
            ScaledFormat::F6E3M2,
            ScaledFormat::F4E2M1,
            mx,
        ),
        // The f16 MFMA: E3M4 (no FP8 type holds it) beside OCP E5M2 (whose infinities
        // gfx942's FNUZ types lack); packed E2M1 beside E2M5, MX scales per 32 of K.
        (
            "gfx942",
            "mfma",
            ScaledFormat::custom(3, 4),
            ScaledFormat::F8E5M2,
            ScaleLayout::PerChannel,
        ),
        (
            "gfx950",
            "mfma",
            ScaledFormat::F4E2M1,
            ScaledFormat::custom(2, 5),
            mx,
        ),
        // The bf16 MFMA: E6M1 (f16's exponent field is too narrow) beside E5M2 FNUZ; on
        // gfx950 (OCP FP8 only) E5M2 FNUZ (its exponent 31 finite) beside E4M3.
        (
            "gfx942",
            "mfma",
            ScaledFormat::custom(6, 1),
            ScaledFormat::F8E5M2Fnuz,
            ScaleLayout::PerChannel,
        ),
        (
            "gfx950",
            "mfma",
            ScaledFormat::F8E5M2Fnuz,
            ScaledFormat::F8E4M3,
            ScaleLayout::PerTensor,
        ),
        // Scales every 8 along K: one block an instruction, the rest of its K zero (FP8 on
        // gfx942, f16 patterns on gfx950).
        (
            "gfx942",
            "mfma",
            ScaledFormat::F4E2M1,
            ScaledFormat::F8E4M3,
            ScaleLayout::Mx { block: 8 },
        ),
        (
            "gfx950",
            "mfma",
            ScaledFormat::custom(3, 4),
            ScaledFormat::F8E5M2,
            ScaleLayout::Mx { block: 8 },
        ),
        // OCP E5M2 (infinities and NaN written into both operands below) beside E5M2 FNUZ:
        // the bf16 MFMA, E5M2's top exponent set to bf16's.
        (
            "gfx942",
            "mfma",
            ScaledFormat::F8E5M2,
            ScaledFormat::F8E5M2Fnuz,
            ScaleLayout::PerTensor,
        ),
    ];
    for (m, n, k) in [(130, 70, 256), (33, 65, 200), (5, 3, 18)] {
        for (chip, kernel, fa, fb, layout) in cases {
            let valid = |f: ScaledFormat| lowp_tests::valid_pair(f, layout);
            if !valid(fa) || !valid(fb) {
                continue;
            }
            let packed = fa.bit_width() == 4 && k % 2 == 0;
            let mut p = Problem {
                a: operand(&mut rng, m, k, fa, layout, packed),
                b: operand(&mut rng, n, k, fb, layout, false),
                bias: Some(rng.normal_vec(n)),
                bf16: false,
            };
            // E5M2's specials: -inf, +inf and a NaN in each operand that has them.
            for (q, rows) in [(&mut p.a.q, m), (&mut p.b.q, n)] {
                if q.format.has_inf() && rows > 2 && k > 3 {
                    q.codes[1] = 0xFC;
                    q.codes[k + 2] = 0x7C;
                    q.codes[2 * k + 3] = 0x7E;
                }
            }
            run_and_check(
                &session,
                &[(
                    format!("{chip} {kernel} {m}x{n}x{k} {fa} x {fb} {layout}"),
                    p,
                )],
                Some(&emulated(chip, kernel)),
            );
        }
    }
}

/// Which ops each instruction takes, and the remarks for OCP E4M3 on gfx942 and for the
/// f16 and bf16 MFMAs.
#[test]
fn instruction_choice_and_remarks() {
    let session = Session::new();
    let mut rng = SplitMix64::new(4);
    let mut try_kernel = |chip: &str, kernel: &str, fa, la, fb, lb| {
        let p = Problem {
            a: operand(&mut rng, 4, 64, fa, la, false),
            b: operand(&mut rng, 4, 64, fb, lb, false),
            bias: None,
            bf16: false,
        };
        let mut module = session.parse(&source("f", &p)).unwrap();
        let r = session.run_pipeline(
            &mut module,
            &format!("builtin.module(func.func(lowp-to-rocdl{{chip={chip} kernel={kernel}}}))"),
        );
        (r.map_err(|e| e.to_string()), session.take_diagnostics())
    };
    use ScaledFormat::*;
    let mx = ScaleLayout::MX;
    let pt = ScaleLayout::PerTensor;
    // gfx942 has no scaled MFMA; OCP E5M2 (infinities) does not reach FNUZ, so it takes
    // the f16 MFMA (a remark where auto chooses it), or the bf16 one where the other
    // operand has no f16 patterns (E5M2 FNUZ's exponent 31 is finite).
    let (r, _) = try_kernel("gfx942", "scaled-mfma", F8E4M3, mx, F8E4M3, mx);
    assert!(r.unwrap_err().contains("gfx942 has no scaled MFMA"));
    let (r, diags) = try_kernel("gfx942", "auto", F8E5M2, pt, F8E4M3Fnuz, pt);
    assert!(r.is_ok(), "{r:?}");
    assert!(
        diags.contains(
            "remark: f16 MFMA kernel on gfx942: f8e5m2 embeds in none of f8e4m3fnuz, f8e5m2fnuz"
        ),
        "{diags}"
    );
    let (r, diags) = try_kernel("gfx942", "auto", F8E5M2, pt, F8E5M2Fnuz, pt);
    assert!(r.is_ok(), "{r:?}");
    assert!(
        diags.contains("remark: bf16 MFMA kernel on gfx942: f8e5m2 embeds in none of f8e4m3fnuz, f8e5m2fnuz; for f16: f8e5m2fnuz's fields do not move into f16's"),
        "{diags}"
    );
    // Scales every 8 along K: one block an instruction, the rest of its K zero; every 24:
    // no MFMA's K divides them or is divided by them.
    let mx8 = ScaleLayout::Mx { block: 8 };
    let (r, _) = try_kernel("gfx942", "mfma", F4E2M1, mx8, F8E4M3, mx8);
    assert!(r.is_ok(), "{r:?}");
    let mx24 = ScaleLayout::Mx { block: 24 };
    let (r, _) = try_kernel("gfx942", "mfma", F8E5M2, mx24, F8E5M2, mx24);
    let e = r.unwrap_err();
    assert!(
        e.contains("f8e5m2 embeds in none of f8e4m3fnuz, f8e5m2fnuz")
            && e.contains("for bf16: the scales change every 24 along K"),
        "{e}"
    );
    let (r, diags) = try_kernel("gfx942", "mfma", F8E4M3, pt, F8E4M3Fnuz, pt);
    assert!(r.is_ok(), "{r:?}");
    assert!(
        diags.contains("remark: lhs f8e4m3 is fed to the gfx942 MFMA as f8e4m3fnuz"),
        "{diags}"
    );
    // gfx950: MX with 32-blocks only for the scaled MFMA; FNUZ formats in no OCP type.
    let (r, _) = try_kernel(
        "gfx950",
        "scaled-mfma",
        F4E2M1,
        ScaleLayout::NVFP4,
        F4E2M1,
        ScaleLayout::NVFP4,
    );
    assert!(r.unwrap_err().contains("MX operands with 32-blocks"));
    let (r, _) = try_kernel("gfx950", "scaled-mfma", F6E3M2, mx, F4E2M1, mx);
    assert!(r.is_ok(), "{r:?}");
    let (r, _) = try_kernel("gfx950", "mfma", F8E4M3Fnuz, pt, F8E4M3, pt);
    assert!(r.is_ok(), "{r:?}");
    // E5M2 FNUZ's fields move into no f16 pattern, but into bf16's: the bf16 MFMA, beside
    // OCP E5M2 too (its infinities set to bf16's top exponent).
    let (r, diags) = try_kernel("gfx950", "auto", F8E5M2Fnuz, pt, F8E4M3, pt);
    assert!(r.is_ok(), "{r:?}");
    assert!(
        diags.contains(
            "remark: bf16 MFMA kernel on gfx950: f8e5m2fnuz embeds in none of f8e4m3, f8e5m2"
        ),
        "{diags}"
    );
    let (r, diags) = try_kernel("gfx950", "auto", F8E5M2Fnuz, pt, F8E5M2, pt);
    assert!(r.is_ok(), "{r:?}");
    assert!(
        diags.contains("remark: bf16 MFMA kernel on gfx950"),
        "{diags}"
    );
}
