//! The field rule of `embeds_in` against the definition (every code decodes to the same
//! value after moving to the target), for every named format and all 28 custom layouts
//! (plus a few biases) into E4M3 and E5M2.

use lowp_formats::ScaledFormat;

fn formats() -> Vec<ScaledFormat> {
    let mut v = ScaledFormat::NAMED.to_vec();
    for e in 1..=7u8 {
        for m in 0..=(7 - e) {
            v.push(ScaledFormat::custom(e, m));
            for bias in [-2i8, 0, 5, 9] {
                if let Ok(f) = ScaledFormat::try_custom_with_bias(e, m, bias) {
                    v.push(f);
                }
            }
        }
    }
    v
}

/// The definition: every finite value of `f` is a value of `t`.
fn embeds_by_values(f: ScaledFormat, t: ScaledFormat) -> bool {
    if f == t {
        return true;
    }
    if f.has_nan() || f.has_inf() {
        return false;
    }
    (0..f.code_count()).all(|c| {
        let v = f.decode(c as u8);
        t.decode(t.encode(v)) == v
    })
}

#[test]
fn the_field_rule_is_exact() {
    let mut embedded = 0;
    for f in formats() {
        for t in [ScaledFormat::F8E4M3, ScaledFormat::F8E5M2] {
            assert_eq!(f.embeds_in(t), embeds_by_values(f, t), "{f} into {t}");
            embedded += f.embeds_in(t) as usize;
        }
    }
    assert!(embedded > 20, "{embedded}");
}

#[test]
fn mx_formats_embed_in_e4m3() {
    use ScaledFormat::*;
    for f in [F4E2M1, F6E2M3, F6E3M2] {
        assert_eq!(f.fp8_embedding(), Some(F8E4M3), "{f}");
    }
    assert_eq!(ScaledFormat::custom(3, 0).fp8_embedding(), Some(F8E4M3)); // 0.25..16
                                                                          // f7e4m2 with bias 1 reaches 28672: too large for E4M3, inside E5M2.
    assert_eq!(
        ScaledFormat::custom_with_bias(4, 2, 1).fp8_embedding(),
        Some(F8E5M2)
    );
    assert_eq!(F8E4M3.fp8_embedding(), Some(F8E4M3));
    assert_eq!(F8E5M2.fp8_embedding(), Some(F8E5M2));
    assert_eq!(
        F8E4M3Fnuz.fp8_embedding(),
        None,
        "FNUZ NaN has no OCP counterpart"
    );
    // f8e3m4 keeps 4 mantissa bits: neither FP8 format has them.
    assert_eq!(ScaledFormat::custom(3, 4).fp8_embedding(), None);
}

#[test]
fn embedding_tables_preserve_every_value_and_the_sign_of_zero() {
    for f in formats() {
        for t in [ScaledFormat::F8E4M3, ScaledFormat::F8E5M2] {
            match f.embedding_table(t) {
                Some(table) => {
                    for (c, &image) in table.iter().enumerate().take(f.code_count() as usize) {
                        let (v, w) = (f.decode(c as u8), t.decode(image));
                        let same = (v.is_nan() && w.is_nan())
                            || (v == w && v.is_sign_negative() == w.is_sign_negative());
                        assert!(same, "{f} code {c:#x} -> {t}");
                    }
                }
                None => assert!(!f.embeds_in(t)),
            }
        }
    }
    // E2M1 0b0111 (6.0) is E4M3 0.1001.100 = 0x4C; -0.5 (0b1001) is 0xB0.
    let table = ScaledFormat::F4E2M1
        .embedding_table(ScaledFormat::F8E4M3)
        .unwrap();
    assert_eq!(table[0x7], 0x4C);
    assert_eq!(table[0x9], 0xB0);
}

/// Shifted embeddings against the definition, on every code: the value times `2^-shift`
/// decodes from the table, NaN stays NaN, and an embedding exists exactly when every value
/// has its exact counterpart. OCP E4M3 reaches E4M3 FNUZ with shift 1 (same bits but -0 and
/// NaN), OCP E5M2 does not (FNUZ has no inf), FP4 / FP6 reach E4M3 FNUZ unshifted.
#[test]
fn shifted_embeddings_are_exact() {
    use ScaledFormat::*;
    let mut found = 0;
    for f in formats() {
        for t in [F8E4M3, F8E5M2, F8E4M3Fnuz, F8E5M2Fnuz] {
            for shift in [0, 1] {
                let by_values = (0..f.code_count()).all(|c| {
                    let v = f.decode(c as u8) as f64;
                    let w = (v * (-shift as f64).exp2()) as f32;
                    (0..t.code_count()).any(|d| {
                        let x = t.decode(d as u8);
                        (w.is_nan() && x.is_nan()) || x == w
                    })
                });
                match f.shifted_embedding(t, shift) {
                    Some(table) => {
                        assert!(by_values, "{f} into {t} << {shift}");
                        for (c, &image) in table.iter().enumerate().take(f.code_count() as usize) {
                            let v = f.decode(c as u8) as f64 * (-shift as f64).exp2();
                            let w = t.decode(image) as f64;
                            assert!(
                                (v.is_nan() && w.is_nan()) || v == w,
                                "{f} code {c} into {t} << {shift}: {v} vs {w}"
                            );
                        }
                        found += 1;
                    }
                    None => assert!(!by_values, "{f} into {t} << {shift} missed"),
                }
            }
        }
        for t in [F8E4M3, F8E5M2] {
            assert_eq!(
                f.shifted_embedding(t, 0).is_some(),
                f.embedding_table(t).is_some() || f.has_nan() && f == t,
                "{f} into {t}"
            );
        }
    }
    assert!(found > 60, "{found}");
    assert!(F8E4M3.shifted_embedding(F8E4M3Fnuz, 1).is_some());
    assert!(
        F8E4M3.shifted_embedding(F8E4M3Fnuz, 0).is_none(),
        "448 > 240"
    );
    assert!(F8E5M2.shifted_embedding(F8E5M2Fnuz, 1).is_none(), "inf");
    for f in [F4E2M1, F6E2M3, F6E3M2] {
        assert!(f.shifted_embedding(F8E4M3Fnuz, 0).is_some(), "{f}");
    }
}

/// Which formats' products with a block scale are f16 values, checked against the field
/// arithmetic: NVFP4 (E2M1 x UE4M3) is (largest 6 x 448 = 2688, smallest 0.5 x 2^-9 =
/// 2^-10, at most 2 + 4 significant bits); E4M3 x UE4M3 overflows (448 x 448); E2M1 x
/// E8M0 leaves f16's range (2^127); formats with specials are refused.
#[test]
fn scaled_products_in_f16() {
    use lowp_formats::ScaleDtype;
    let fp4 = ScaledFormat::F4E2M1;
    assert!(fp4.scaled_embeds_in_f16(ScaleDtype::UE4M3));
    assert!(ScaledFormat::F6E2M3.scaled_embeds_in_f16(ScaleDtype::UE4M3));
    assert!(ScaledFormat::F6E3M2.scaled_embeds_in_f16(ScaleDtype::UE4M3));
    assert!(!fp4.scaled_embeds_in_f16(ScaleDtype::UE8M0));
    assert!(!ScaledFormat::F8E4M3.scaled_embeds_in_f16(ScaleDtype::UE4M3));
    assert!(!ScaledFormat::F8E5M2.scaled_embeds_in_f16(ScaleDtype::UE4M3));
    // Wider scale dtypes have no one-byte codes to check.
    assert!(!fp4.scaled_embeds_in_f16(ScaleDtype::F32));
    // Every product of the NVFP4 pair survives a round trip through f16 bits: an
    // independent check of the grid (f16 built by hand: sign, 5 exponent bits, 10 mantissa).
    let to_f16_and_back = |x: f64| -> f64 {
        if x == 0.0 {
            return 0.0;
        }
        let e = x.abs().log2().floor() as i32;
        let step = (e.max(-14) - 10) as f64;
        (x / step.exp2()).round() * step.exp2()
    };
    for c in 0..16u8 {
        for b in 0..0x7Fu8 {
            let p = fp4.decode(c) as f64 * ScaleDtype::UE4M3.decode_byte(b).unwrap() as f64;
            assert_eq!(to_f16_and_back(p), p, "code {c:#x} x scale {b:#x}");
            assert!(p.abs() <= 2688.0);
        }
    }
}

/// `int_embedding` against the definition: with its shift every value is an integer within
/// its bound, the bound is reached, the smallest positive value is 1 (so no smaller shift
/// works); where it says `None` the format has specials or needs a larger integer.
#[test]
fn the_int_embedding_is_exact_and_least() {
    let mut embedded = Vec::new();
    for f in formats() {
        match f.int_embedding(127) {
            Some(emb) => {
                let factor = f64::from(emb.shift).exp2();
                let table = f.int_code_table(127).expect("embeds");
                let mut largest = 0;
                for c in 0..f.code_count() {
                    let v = f64::from(f.decode(c as u8)) * factor;
                    assert!(v.is_finite() && v.fract() == 0.0, "{f} code {c}: {v}");
                    assert_eq!(table[c as usize] as f64, v, "{f} code {c}");
                    largest = largest.max(v.abs() as u32);
                }
                assert_eq!(largest, emb.max, "{f}");
                assert!(emb.max <= 127, "{f}");
                assert_eq!(f64::from(f.min_positive()) * factor, 1.0, "{f}");
                embedded.push(f.to_string());
            }
            None => {
                assert!(f.int_code_table(127).is_none());
                let (_, m, bias) = f.fields();
                let need = f64::from(f.max_finite()) * f64::from(bias - 1 + m as i32).exp2();
                assert!(f.has_nan() || f.has_inf() || need > 127.0, "{f}");
            }
        }
    }
    for name in ["f4e2m1", "f6e2m3", "f4e3m0"] {
        assert!(embedded.iter().any(|e| e == name), "{name} in {embedded:?}");
    }
    assert_eq!(
        ScaledFormat::F4E2M1.int_embedding(127),
        Some(lowp_formats::IntEmbedding { shift: 1, max: 12 })
    );
    assert_eq!(
        ScaledFormat::F6E2M3.int_embedding(127),
        Some(lowp_formats::IntEmbedding { shift: 3, max: 60 })
    );
    assert_eq!(ScaledFormat::F6E3M2.int_embedding(127), None); // 448
    assert_eq!(ScaledFormat::F8E4M3.int_embedding(127), None); // NaN codes
    assert_eq!(
        ScaledFormat::F6E3M2.int_embedding(448).map(|e| e.max),
        Some(448)
    );
}

/// IEEE f16 bits to f32 by the standard's definition, independently of the crate.
fn f16_to_f32(h: u16) -> f32 {
    let sign = if h >> 15 == 1 { -1.0f32 } else { 1.0 };
    let exp = (h >> 10) & 0x1F;
    let mant = f32::from(h & 0x3FF);
    match exp {
        0 => sign * mant * 2f32.powi(-24),
        0x1F if mant == 0.0 => sign * f32::INFINITY,
        0x1F => f32::NAN,
        _ => sign * (1.0 + mant / 1024.0) * 2f32.powi(i32::from(exp) - 15),
    }
}

#[test]
fn f16_fields_decode_every_code_exactly() {
    let mut taken = Vec::new();
    for f in formats() {
        let Some(fields) = f.f16_fields() else {
            continue;
        };
        taken.push(f.to_string());
        let factor = 2f32.powi(fields.shift);
        for c in 0..f.code_count() {
            let c = c as u8;
            let v = f.decode(c);
            let nan_rule = fields.nan.is_some_and(|(mask, value)| c & mask == value);
            let w = if nan_rule {
                f32::NAN
            } else {
                f16_to_f32(f.f16_pattern(c)) * factor
            };
            if v.is_nan() {
                assert!(
                    w.is_nan(),
                    "{f}: code {c:#x} is NaN, the f16 route gives {w}"
                );
            } else {
                assert!(!nan_rule, "{f}: code {c:#x} is {v}, the NaN rule takes it");
                assert_eq!(w.to_bits(), v.to_bits(), "{f}: code {c:#x}");
                // Normal or zero: neither FTZ nor DAZ would change the multiply.
                assert!(v == 0.0 || !v.is_finite() || v.abs() >= f32::MIN_POSITIVE);
            }
        }
    }
    // Every named format but E5M2 FNUZ (its exponent 31 is finite), and the customs whose
    // exponent field is at most 4 bits.
    for name in [
        "f8e4m3",
        "f8e5m2",
        "f8e4m3fnuz",
        "f6e2m3",
        "f6e3m2",
        "f4e2m1",
        "f4e3m0",
    ] {
        assert!(
            taken.contains(&name.to_string()),
            "{name} should take the f16 route"
        );
    }
    assert!(!taken.contains(&"f8e5m2fnuz".to_string()));
    assert!(!taken
        .iter()
        .any(|n| n.starts_with("f8e6") || n.starts_with("f8e7")));
}

#[test]
fn f16_fields_name_the_nan_codes() {
    use lowp_formats::HalfFields;
    for (f, shift, nan) in [
        (ScaledFormat::F8E4M3, 8, Some((0x7F, 0x7F))),
        (ScaledFormat::F8E5M2, 0, None),
        (ScaledFormat::F8E4M3Fnuz, 7, Some((0xFF, 0x80))),
        (ScaledFormat::F4E2M1, 14, None),
    ] {
        assert_eq!(
            f.f16_fields(),
            Some(HalfFields {
                half: lowp_formats::Half::F16,
                shift,
                nan,
                inf: None,
            }),
            "{f}"
        );
    }
    assert_eq!(ScaledFormat::F8E5M2Fnuz.f16_fields(), None);
}

#[test]
fn bf16_fields_take_the_formats_f16_does_not_hold() {
    use lowp_formats::{Half, HalfFields};
    // E5M2 FNUZ: its exponent 31 is finite, bf16's is not; values 2^-17 .. 57344 need no
    // shift.
    assert_eq!(
        ScaledFormat::F8E5M2Fnuz.bf16_fields(),
        Some(HalfFields {
            half: Half::Bf16,
            shift: 0,
            nan: Some((0xFF, 0x80)),
            inf: None,
        })
    );
    // Every code's pattern times 2^shift is its value, for every format that has fields;
    // the customs with 6- and 7-bit exponents among them.
    let mut taken = Vec::new();
    for f in formats() {
        let Some(fields) = f.bf16_fields() else {
            continue;
        };
        assert_eq!(fields.half, Half::Bf16);
        for c in 0..f.code_count() {
            let c = c as u8;
            let (v, p) = (f.decode(c), f.bf16_pattern(fields.shift, c));
            let w = f32::from_bits(u32::from(p) << 16);
            if v.is_nan() {
                let (mask, value) = fields.nan.unwrap_or((0, 1));
                assert!(w.is_nan() || c & mask == value, "{f}: code {c:#x}");
                continue;
            }
            assert_eq!(
                f64::from(w) * f64::from(fields.shift).exp2(),
                f64::from(v),
                "{f}: code {c:#x}"
            );
            assert_eq!(
                w.is_sign_negative(),
                v.is_sign_negative(),
                "{f}: code {c:#x}"
            );
            if w != 0.0 && w.is_finite() {
                // Products of two finite ones are normal f32 values.
                assert!(w.abs() >= 2f32.powi(-63) && w.abs() < 2f32.powi(64), "{f}");
            }
        }
        taken.push(f.to_string());
    }
    assert!(taken.iter().any(|n| n.starts_with("f8e6")), "{taken:?}");
    assert!(taken.iter().any(|n| n.starts_with("f8e7")), "{taken:?}");
    // E5M2: the move leaves its top exponent finite; the rule sets bf16's there, which
    // makes `S.11111.00` an infinity and the other three NaN.
    let fields = ScaledFormat::F8E5M2.bf16_fields();
    assert_eq!(
        fields,
        Some(HalfFields {
            half: Half::Bf16,
            shift: 0,
            nan: None,
            inf: Some((0x7C, 0x7C)),
        })
    );
    for (code, pattern) in [
        (0x7C, 0x7F80),
        (0xFC, 0xFF80),
        (0x7D, 0x7FA0),
        (0xFF, 0xFFE0),
    ] {
        assert_eq!(
            ScaledFormat::F8E5M2.bf16_pattern(0, code),
            pattern,
            "{code:#x}"
        );
    }
    // The largest finite code is 57344 = 1.75 * 2^15 as it is.
    assert_eq!(ScaledFormat::F8E5M2.bf16_pattern(0, 0x7B), 0x4760);
    // No other format has the rule.
    assert!(formats()
        .into_iter()
        .filter(|&f| f != ScaledFormat::F8E5M2)
        .all(|f| f.bf16_fields().is_none_or(|x| x.inf.is_none())));
}
