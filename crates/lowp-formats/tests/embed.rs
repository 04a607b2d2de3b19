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
                    for c in 0..f.code_count() as usize {
                        let (v, w) = (f.decode(c as u8), t.decode(table[c]));
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
