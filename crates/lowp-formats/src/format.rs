//! [`ScaledFormat`]: the element encodings of a scaled low-precision matmul operand.
//!
//! Seven named hardware formats keep their exact hardware semantics (OCP E4M3FN with one NaN,
//! IEEE-like E5M2, AMD FNUZ, the all-finite MX FP6/FP4), and `Custom` covers the whole
//! all-finite `fNeXmY` family a researcher may want to try.

use core::fmt;
use core::str::FromStr;

use crate::lowp_codec;

/// Element format for a native low-precision tensor-core GEMM operand.
///
/// A `ScaledFormat` is the raw element encoding tensor cores consume, with f32 accumulation.
/// The per-block / per-tensor scale layout is orthogonal and lives in
/// [`ScaleLayout`](crate::ScaleLayout). Codes are carried one per byte (`u8`), sign in the
/// top bit of the code (bit `exp_bits + mant_bits`); FP4 may additionally be packed two per
/// byte by [`pack_fp4`](crate::pack_fp4).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum ScaledFormat {
    /// OCP FP8 E4M3 (`f8E4M3FN`): bias 7, no infinities, only `S.1111.111` is NaN. Max ±448.
    F8E4M3,
    /// OCP FP8 E5M2: bias 15, IEEE-like inf (`S.11111.00`) and NaN at the max exponent.
    /// Max ±57344.
    F8E5M2,
    /// AMD "FNUZ" FP8 E4M3: bias 8, single NaN at `0x80`, no inf, no −0. Max ±240.
    F8E4M3Fnuz,
    /// AMD "FNUZ" FP8 E5M2: bias 16, single NaN at `0x80`, no inf, no −0. Max ±57344.
    F8E5M2Fnuz,
    /// MX FP6 E2M3: bias 1, all 64 codes finite. Max ±7.5.
    F6E2M3,
    /// MX FP6 E3M2: bias 3, all 64 codes finite. Max ±28.
    F6E3M2,
    /// FP4 E2M1: bias 1, all 16 codes finite. Max ±6. Shared by MXFP4 and NVFP4.
    F4E2M1,
    /// An all-finite minifloat `fNeXmY` (N = 1 + X + Y <= 8, X >= 1): no inf, no NaN,
    /// IEEE-style gradual underflow (subnormals when the exponent field is 0), sign in the
    /// top bit. It has no hardware GEMM and always runs the decode path.
    Custom {
        /// Exponent field width X.
        exp_bits: u8,
        /// Mantissa field width Y.
        mant_bits: u8,
        /// Exponent bias.
        bias: i8,
    },
}

/// Why a set of custom format fields is rejected. Returned by
/// [`ScaledFormat::try_custom_with_bias`]; `custom`/`custom_with_bias` panic with the same
/// text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CustomFormatError {
    /// `exp_bits == 0`: a format needs at least one exponent bit.
    NoExponentBits,
    /// `1 + exp_bits + mant_bits > 8`: the code does not fit in a byte.
    TooWide {
        /// Total bits the fields ask for.
        bits: u32,
    },
    /// The largest finite value overflows f32 (the top exponent `2^X - 1 - bias` is above 127).
    RangeExceedsF32 {
        /// Unbiased exponent of the largest binade.
        top_exponent: i32,
    },
    /// The smallest step `2^(1 - bias - Y)` is above `2^104`: the encoder's rounding constant
    /// `2^(step + 23)` would overflow f32. (Such a format has no value below 2^104.)
    StepTooLarge {
        /// Exponent of the smallest step, `1 - bias - Y`.
        step_exponent: i32,
    },
}

impl fmt::Display for CustomFormatError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NoExponentBits => write!(f, "a format needs at least one exponent bit (X >= 1)"),
            Self::TooWide { bits } => {
                write!(
                    f,
                    "1 + X + Y = {bits} bits does not fit in a byte (at most 8)"
                )
            }
            Self::RangeExceedsF32 { top_exponent } => write!(
                f,
                "the largest binade 2^{top_exponent} overflows f32 (top exponent must be <= 127)"
            ),
            Self::StepTooLarge { step_exponent } => write!(
                f,
                "the smallest step 2^{step_exponent} is too coarse (1 - bias - Y must be <= 104)"
            ),
        }
    }
}

impl std::error::Error for CustomFormatError {}

const fn check_custom(exp_bits: u8, mant_bits: u8, bias: i8) -> Result<(), CustomFormatError> {
    if exp_bits == 0 {
        return Err(CustomFormatError::NoExponentBits);
    }
    let bits = 1 + exp_bits as u32 + mant_bits as u32;
    if bits > 8 {
        return Err(CustomFormatError::TooWide { bits });
    }
    let top_exponent = ((1i32 << exp_bits) - 1) - bias as i32;
    if top_exponent > 127 {
        return Err(CustomFormatError::RangeExceedsF32 { top_exponent });
    }
    let step_exponent = 1 - bias as i32 - mant_bits as i32;
    if step_exponent > 104 {
        return Err(CustomFormatError::StepTooLarge { step_exponent });
    }
    Ok(())
}

impl ScaledFormat {
    /// The seven named hardware element formats, for enumeration / format sweeps.
    pub const NAMED: [ScaledFormat; 7] = [
        Self::F8E4M3,
        Self::F8E5M2,
        Self::F8E4M3Fnuz,
        Self::F8E5M2Fnuz,
        Self::F6E2M3,
        Self::F6E3M2,
        Self::F4E2M1,
    ];

    /// Total bit width of one element code (1 + X + Y: 4, 6 or 8 for the named formats).
    pub const fn bit_width(self) -> u32 {
        let (e, m, _) = self.fields();
        1 + e + m
    }

    /// `(exponent_bits, mantissa_bits, exponent_bias)`.
    pub const fn fields(self) -> (u32, u32, i32) {
        match self {
            Self::F8E4M3 => (4, 3, 7),
            Self::F8E5M2 => (5, 2, 15),
            Self::F8E4M3Fnuz => (4, 3, 8),
            Self::F8E5M2Fnuz => (5, 2, 16),
            Self::F6E2M3 => (2, 3, 1),
            Self::F6E3M2 => (3, 2, 3),
            Self::F4E2M1 => (2, 1, 1),
            Self::Custom {
                exp_bits,
                mant_bits,
                bias,
            } => (exp_bits as u32, mant_bits as u32, bias as i32),
        }
    }

    /// An all-finite minifloat with the IEEE-style bias `2^(exp_bits-1) - 1`.
    ///
    /// # Panics
    /// If `exp_bits == 0` or `1 + exp_bits + mant_bits > 8`.
    pub const fn custom(exp_bits: u8, mant_bits: u8) -> Self {
        if exp_bits == 0 || exp_bits > 7 {
            // Checked before the bias shift below can overflow; same messages as check_custom.
            if exp_bits == 0 {
                panic!("a format needs at least one exponent bit (X >= 1)");
            }
            panic!("1 + X + Y does not fit in a byte (at most 8 bits)");
        }
        let bias = ((1u32 << (exp_bits - 1)) - 1) as i8;
        Self::custom_with_bias(exp_bits, mant_bits, bias)
    }

    /// Like [`custom`](Self::custom) with an explicit exponent bias.
    ///
    /// # Panics
    /// If the fields are rejected by [`try_custom_with_bias`](Self::try_custom_with_bias).
    pub const fn custom_with_bias(exp_bits: u8, mant_bits: u8, bias: i8) -> Self {
        match Self::try_custom_with_bias(exp_bits, mant_bits, bias) {
            Ok(f) => f,
            Err(CustomFormatError::NoExponentBits) => {
                panic!("a format needs at least one exponent bit (X >= 1)")
            }
            Err(CustomFormatError::TooWide { .. }) => {
                panic!("1 + X + Y does not fit in a byte (at most 8 bits)")
            }
            Err(CustomFormatError::RangeExceedsF32 { .. }) => {
                panic!("the format's largest value overflows f32 (2^X - 1 - bias must be <= 127)")
            }
            Err(CustomFormatError::StepTooLarge { .. }) => {
                panic!("the format's smallest step is above 2^104 (1 - bias - Y must be <= 104)")
            }
        }
    }

    /// Fallible [`custom_with_bias`](Self::custom_with_bias): rejects `exp_bits == 0`, codes
    /// wider than a byte, and biases whose largest value overflows f32.
    pub const fn try_custom_with_bias(
        exp_bits: u8,
        mant_bits: u8,
        bias: i8,
    ) -> Result<Self, CustomFormatError> {
        match check_custom(exp_bits, mant_bits, bias) {
            Ok(()) => Ok(Self::Custom {
                exp_bits,
                mant_bits,
                bias,
            }),
            Err(e) => Err(e),
        }
    }

    /// Exponent-field bit count (X in fNeXmY).
    pub const fn exp_bits(self) -> u32 {
        self.fields().0
    }

    /// Mantissa-field bit count (Y in fNeXmY; 0 for a power-of-two format such as f4e3m0).
    pub const fn mant_bits(self) -> u32 {
        self.fields().1
    }

    /// Exponent bias.
    pub const fn bias(self) -> i32 {
        self.fields().2
    }

    /// True for a parameterized `Custom` format (no hardware tensor core: decode path only).
    pub const fn is_custom(self) -> bool {
        matches!(self, Self::Custom { .. })
    }

    /// True for one of the seven [`NAMED`](Self::NAMED) hardware formats.
    pub const fn is_named(self) -> bool {
        !self.is_custom()
    }

    /// AMD FNUZ encoding (single NaN at `0x80`, no inf, no −0).
    pub const fn is_fnuz(self) -> bool {
        matches!(self, Self::F8E4M3Fnuz | Self::F8E5M2Fnuz)
    }

    /// True for IEEE-like formats carrying inf / NaN at the max exponent (OCP E5M2 only:
    /// E4M3 is finite with one NaN, FP6/FP4/custom are all finite).
    pub const fn has_inf(self) -> bool {
        matches!(self, Self::F8E5M2)
    }

    /// True when some code decodes to NaN (E4M3, E5M2 and the FNUZ formats).
    pub const fn has_nan(self) -> bool {
        matches!(
            self,
            Self::F8E4M3 | Self::F8E5M2 | Self::F8E4M3Fnuz | Self::F8E5M2Fnuz
        )
    }

    /// Number of distinct codes, `2^bit_width`.
    pub const fn code_count(self) -> u32 {
        1 << self.bit_width()
    }

    /// The sign bit of a code, `1 << (X + Y)`.
    pub const fn sign_mask(self) -> u8 {
        1 << (self.exp_bits() + self.mant_bits())
    }

    /// Largest finite magnitude code (sign clear): the code `encode` saturates to.
    pub const fn max_finite_code(self) -> u8 {
        match self {
            // S.1111.111 is NaN, so the top mantissa is one below all-ones.
            Self::F8E4M3 => 0x7E,
            // S.11111.xx is inf/NaN.
            Self::F8E5M2 => 0x7B,
            _ => self.sign_mask() - 1,
        }
    }

    /// Largest finite magnitude (the amax divisor of a scale).
    pub fn max_finite(self) -> f32 {
        lowp_codec::decode(self, self.max_finite_code())
    }

    /// Smallest positive normal value, `2^(1 - bias)`.
    pub fn min_normal(self) -> f32 {
        lowp_codec::decode(self, 1 << self.mant_bits())
    }

    /// Smallest positive value, the code `0x01` (a subnormal when Y > 0).
    pub fn min_positive(self) -> f32 {
        lowp_codec::decode(self, 1)
    }

    /// Unbiased exponent of the largest finite binade (`emax_elem` of the OCP MX spec:
    /// 8 for E4M3, 15 for E5M2, 2 for E2M1, ...).
    pub const fn emax(self) -> i32 {
        (self.max_finite_code() >> self.mant_bits()) as i32 - self.bias()
    }

    /// Decode one code to f32: bit-exact, ±inf / NaN only where the format has them. Bits above
    /// [`bit_width`](Self::bit_width) are ignored.
    pub fn decode(self, code: u8) -> f32 {
        lowp_codec::decode(self, code)
    }

    /// Encode an f32 to its nearest code: ties to the even code, overflow and ±inf saturate to
    /// ±max_finite, NaN encodes to 0. FNUZ formats never produce `0x80`: −0 and negatives
    /// that round to zero give `0x00`.
    pub fn encode(self, x: f32) -> u8 {
        lowp_codec::encode(self, x)
    }

    /// Round-trip `x` through the format: the nearest value it represents (NaN -> 0,
    /// overflow saturates).
    pub fn quantize(self, x: f32) -> f32 {
        self.decode(self.encode(x))
    }

    /// Every finite value the format represents, ascending and deduplicated (−0 and +0 count
    /// once, as 0).
    pub fn representable_values(self) -> Vec<f32> {
        let mut v: Vec<f32> = (0..self.code_count())
            .map(|c| self.decode(c as u8))
            .filter(|x| x.is_finite())
            .map(|x| if x == 0.0 { 0.0 } else { x })
            .collect();
        v.sort_by(f32::total_cmp);
        v.dedup();
        v
    }

    /// The GPU dispatch word of the decode kernels: `0..=6` for the named formats
    /// (e4m3, e5m2, e4m3fnuz, e5m2fnuz, e2m3, e3m2, e2m1), and for a custom format
    /// `0x8000_0000 | exp_bits | mant_bits << 4 | (bias as u8) << 8`.
    pub const fn kernel_id(self) -> u32 {
        match self {
            Self::F8E4M3 => 0,
            Self::F8E5M2 => 1,
            Self::F8E4M3Fnuz => 2,
            Self::F8E5M2Fnuz => 3,
            Self::F6E2M3 => 4,
            Self::F6E3M2 => 5,
            Self::F4E2M1 => 6,
            Self::Custom {
                exp_bits,
                mant_bits,
                bias,
            } => 0x8000_0000 | exp_bits as u32 | (mant_bits as u32) << 4 | (bias as u8 as u32) << 8,
        }
    }

    /// Inverse of [`kernel_id`](Self::kernel_id); `None` for words no format produces.
    pub const fn from_kernel_id(id: u32) -> Option<Self> {
        match id {
            0 => Some(Self::F8E4M3),
            1 => Some(Self::F8E5M2),
            2 => Some(Self::F8E4M3Fnuz),
            3 => Some(Self::F8E5M2Fnuz),
            4 => Some(Self::F6E2M3),
            5 => Some(Self::F6E3M2),
            6 => Some(Self::F4E2M1),
            _ if id & 0xFFFF_0000 == 0x8000_0000 => {
                match Self::try_custom_with_bias(
                    (id & 0xF) as u8,
                    ((id >> 4) & 0xF) as u8,
                    (id >> 8) as u8 as i8,
                ) {
                    Ok(f) => Some(f),
                    Err(_) => None,
                }
            }
            _ => None,
        }
    }

    /// True for the OCP FP8 variants a native cuBLASLt / hipBLASLt FP8 GEMM accepts.
    pub const fn is_native_fp8(self) -> bool {
        matches!(self, Self::F8E4M3 | Self::F8E5M2)
    }

    /// The MLIR builtin type spelling (`f8E4M3FN`, ...), `None` for custom formats.
    pub const fn mlir_name(self) -> Option<&'static str> {
        match self {
            Self::F8E4M3 => Some("f8E4M3FN"),
            Self::F8E5M2 => Some("f8E5M2"),
            Self::F8E4M3Fnuz => Some("f8E4M3FNUZ"),
            Self::F8E5M2Fnuz => Some("f8E5M2FNUZ"),
            Self::F6E2M3 => Some("f6E2M3FN"),
            Self::F6E3M2 => Some("f6E3M2FN"),
            Self::F4E2M1 => Some("f4E2M1FN"),
            Self::Custom { .. } => None,
        }
    }

    /// The IEEE-style bias for `exp_bits`: `2^(exp_bits-1) - 1`.
    pub const fn ieee_bias(exp_bits: u32) -> i32 {
        (1 << (exp_bits - 1)) - 1
    }
}

impl fmt::Display for ScaledFormat {
    /// `f8e4m3`, `f8e5m2fnuz`, `f4e2m1`, ...; custom formats `f4e3m0`, with `b<bias>` appended
    /// when the bias is not the IEEE one (`f4e3m0b5`), or when the name alone is a named
    /// format's (`f8e4m3b7`, all finite, is not OCP's `f8e4m3`): every name parses back to
    /// its format.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = match self {
            Self::F8E4M3 => "f8e4m3",
            Self::F8E5M2 => "f8e5m2",
            Self::F8E4M3Fnuz => "f8e4m3fnuz",
            Self::F8E5M2Fnuz => "f8e5m2fnuz",
            Self::F6E2M3 => "f6e2m3",
            Self::F6E3M2 => "f6e3m2",
            Self::F4E2M1 => "f4e2m1",
            Self::Custom {
                exp_bits,
                mant_bits,
                bias,
            } => {
                let n = 1 + exp_bits + mant_bits;
                let short = format!("f{n}e{exp_bits}m{mant_bits}");
                f.write_str(&short)?;
                if *bias as i32 != Self::ieee_bias(*exp_bits as u32)
                    || Self::NAMED.iter().any(|named| named.to_string() == short)
                {
                    write!(f, "b{bias}")?;
                }
                return Ok(());
            }
        };
        f.write_str(name)
    }
}

/// Names accepted by [`ScaledFormat::from_str`], for error messages.
pub const FORMAT_NAMES_HELP: &str = "f8e4m3, f8e5m2, f8e4m3fnuz, f8e5m2fnuz, f6e2m3, f6e3m2, \
f4e2m1 (MLIR spellings such as f8E4M3FN accepted), or any fNeXmY with N = 1+X+Y <= 8, X >= 1, \
optionally followed by b<bias> (e.g. f4e3m0, f6e3m2b2)";

impl FromStr for ScaledFormat {
    type Err = String;

    /// Parse a format name, case-insensitively. The seven named formats (and their MLIR
    /// spellings `f8E4M3FN`, `f6E2M3FN`, ...) keep their hardware semantics; any other
    /// `fNeXmY[b<bias>]` is an all-finite `Custom` (IEEE bias unless given).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let lower = s.trim().to_ascii_lowercase();
        let named = match lower.as_str() {
            "f8e4m3" | "f8e4m3fn" => Some(Self::F8E4M3),
            "f8e5m2" => Some(Self::F8E5M2),
            "f8e4m3fnuz" => Some(Self::F8E4M3Fnuz),
            "f8e5m2fnuz" => Some(Self::F8E5M2Fnuz),
            "f6e2m3" | "f6e2m3fn" => Some(Self::F6E2M3),
            "f6e3m2" | "f6e3m2fn" => Some(Self::F6E3M2),
            "f4e2m1" | "f4e2m1fn" => Some(Self::F4E2M1),
            _ => None,
        };
        if let Some(f) = named {
            return Ok(f);
        }
        // MLIR's small float types that are no element format here: a scale type, and a
        // NaN/zero rule only the named FNUZ formats have.
        let why_not = match lower.as_str() {
            "f8e8m0fnu" | "e8m0" => Some(
                "MLIR's f8E8M0FNU is the E8M0 scale type (exponent only, unsigned), not an \
                 element format: MX layouts store their block scales in it"
                    .to_string(),
            ),
            _ if lower.ends_with("fnuz") => Some(format!(
                "the FNUZ rules (NaN 0x80, no inf, no -0) come only with the named \
                 f8e4m3fnuz and f8e5m2fnuz; an all-finite custom format with that shape is \
                 {}",
                lower.trim_end_matches("fnuz")
            )),
            _ => None,
        };
        if let Some(why) = why_not {
            return Err(format!("unknown format '{s}': {why}"));
        }
        parse_custom(&lower)
            .map_err(|why| format!("unknown format '{s}': {why}; expected {FORMAT_NAMES_HELP}"))
    }
}

fn parse_uint(s: &str) -> Option<(u32, &str)> {
    let end = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    if end == 0 || end > 3 {
        return None;
    }
    Some((s[..end].parse().ok()?, &s[end..]))
}

fn parse_custom(s: &str) -> Result<ScaledFormat, String> {
    let shape = "not of the form fNeXmY";
    let rest = s.strip_prefix('f').ok_or(shape)?;
    let (n, rest) = parse_uint(rest).ok_or(shape)?;
    let rest = rest.strip_prefix('e').ok_or(shape)?;
    let (x, rest) = parse_uint(rest).ok_or(shape)?;
    let rest = rest.strip_prefix('m').ok_or(shape)?;
    let (y, rest) = parse_uint(rest).ok_or(shape)?;
    if n != 1 + x + y {
        return Err(format!("N = {n} but 1 + X + Y = {}", 1 + x + y));
    }
    if x == 0 {
        return Err("X must be at least 1".into());
    }
    if n > 8 {
        return Err(format!("N = {n} does not fit in a byte (N <= 8)"));
    }
    let bias = if rest.is_empty() {
        ScaledFormat::ieee_bias(x)
    } else {
        let b = rest
            .strip_prefix('b')
            .ok_or("trailing text after fNeXmY (only b<bias> may follow)")?;
        b.parse::<i8>()
            .map_err(|_| format!("bias '{b}' is not an integer in -128..=127"))? as i32
    };
    ScaledFormat::try_custom_with_bias(x as u8, y as u8, bias as i8).map_err(|e| e.to_string())
}
