//! Scale storage: [`E8M0`] (the MX shared exponent), [`ScaleDtype`] and its [`F32Grid`].
//!
//! Storing a quantization scale rounds *up* ([`ScaleDtype::round_up`]): rounding down would put
//! the scale below what the block maximum asks for and clip it.

use core::fmt;

/// An 8-bit unsigned power-of-two scale (`f8E8M0FNU`): codes `0x00..=0xFE` are
/// `2^(code - 127)`, `0xFF` is NaN; no zero, no sign, no infinity.
///
/// Conversion from floats follows CUDA's `__nv_fp8_e8m0` with `cudaRoundPosInf` and
/// `__NV_SATFINITE`: NaN -> `0xFF`; values <= 0 -> `0x00` (2^-127); other values round *up*
/// to a power of two; above 2^127 (and +inf) saturate to `0xFE`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(transparent)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct E8M0(u8);

impl E8M0 {
    /// The NaN code, `0xFF`.
    pub const NAN: Self = Self(0xFF);
    /// The smallest value, 2^-127 (`0x00`).
    pub const MIN: Self = Self(0x00);
    /// The largest value, 2^127 (`0xFE`).
    pub const MAX: Self = Self(0xFE);
    /// One, `0x7F`.
    pub const ONE: Self = Self(0x7F);

    /// From raw bits, unvalidated (every byte is a valid E8M0).
    pub const fn from_bits(bits: u8) -> Self {
        Self(bits)
    }

    /// The raw bits.
    pub const fn to_bits(&self) -> u8 {
        self.0
    }

    /// Round `value` up to a power of two (see the type's docs for NaN, <= 0 and saturation).
    pub fn from_f64(value: f64) -> Self {
        if value.is_nan() {
            return Self::NAN;
        }
        if value <= 0.0 {
            return Self::MIN;
        }
        if value > 2f64.powi(127) {
            return Self::MAX;
        }
        // value is a positive finite f64; f64 subnormals are far below 2^-127.
        let bits = value.to_bits();
        let exp = ((bits >> 52) & 0x7FF) as i32;
        let frac = bits & ((1u64 << 52) - 1);
        let e = if exp == 0 {
            // f64 subnormal: far below 2^-127.
            -1074
        } else {
            exp - 1023 + (frac != 0) as i32
        };
        Self((e.clamp(-127, 127) + 127) as u8)
    }

    /// As [`from_f64`](Self::from_f64); exact, since every f32 is an f64.
    pub fn from_f32(value: f32) -> Self {
        Self::from_f64(value as f64)
    }

    /// The scale for a block: its absolute maximum rounded up to a power of two. NaN anywhere
    /// in the block gives [`E8M0::NAN`]; an empty or all-zero slice gives 2^-127.
    pub fn from_f32_slice(values: &[f32]) -> Self {
        let mut amax = 0.0f32;
        for &v in values {
            if v.is_nan() {
                return Self::NAN;
            }
            amax = amax.max(v.abs());
        }
        Self::from_f32(amax)
    }

    /// `2^(bits - 127)`, NaN for `0xFF`.
    pub fn to_f64(self) -> f64 {
        if self.0 == 0xFF {
            f64::NAN
        } else {
            2f64.powi(self.0 as i32 - 127)
        }
    }

    /// As [`to_f64`](Self::to_f64), exact in f32 (2^-127 is an f32 subnormal).
    pub fn to_f32(self) -> f32 {
        match self.0 {
            0xFF => f32::NAN,
            // 2^-127 is the f32 subnormal with bit 22 set.
            0 => f32::from_bits(0x0040_0000),
            b => f32::from_bits((b as u32) << 23),
        }
    }

    /// True for the NaN code.
    pub const fn is_nan(self) -> bool {
        self.0 == 0xFF
    }
}

impl From<f64> for E8M0 {
    fn from(value: f64) -> Self {
        Self::from_f64(value)
    }
}

impl From<f32> for E8M0 {
    fn from(value: f32) -> Self {
        Self::from_f32(value)
    }
}

impl From<u8> for E8M0 {
    fn from(bits: u8) -> Self {
        Self(bits)
    }
}

impl From<E8M0> for f64 {
    fn from(v: E8M0) -> Self {
        v.to_f64()
    }
}

impl From<E8M0> for f32 {
    fn from(v: E8M0) -> Self {
        v.to_f32()
    }
}

impl From<E8M0> for u8 {
    fn from(v: E8M0) -> Self {
        v.0
    }
}

impl fmt::Display for E8M0 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_nan() {
            f.write_str("nan")
        } else {
            write!(f, "2^{}", self.0 as i32 - 127)
        }
    }
}

/// The data type a scale level stores its scales in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum ScaleDtype {
    /// Full precision.
    F32,
    /// Half precision.
    F16,
    /// bfloat16.
    BF16,
    /// Unsigned e8m0: a bare power-of-two exponent ([`E8M0`]).
    UE8M0,
    /// Unsigned e4m3 (the positive half of OCP E4M3FN), NVFP4's block scale.
    UE4M3,
}

/// A dtype's grid of representable non-negative values, expressed on the f32 bit pattern:
/// above `min_normal` a value is on the grid when its low `dropped_bits` mantissa bits are
/// zero; below it the grid is uniform with step `subnormal_step` (the dtype's subnormals).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct F32Grid {
    /// Low f32 mantissa bits the dtype does not have (`23 - mantissa bits`).
    pub dropped_bits: u32,
    /// Smallest normal value of the dtype; `None` when it needs no separate subnormal range
    /// (bf16 and ue8m0: see [`ScaleDtype::f32_grid`]).
    pub min_normal: Option<f32>,
    /// Step of the subnormal range (the smallest positive value); 0 when there is none.
    pub subnormal_step: f32,
    /// Largest finite value.
    pub max: f32,
}

impl F32Grid {
    /// The smallest grid value not below `x` (for `0 <= x <= max`; NaN passes through, values
    /// above `max` saturate to `max`).
    pub fn round_up(&self, x: f32) -> f32 {
        if x.is_nan() {
            return x;
        }
        if x >= self.max {
            return self.max;
        }
        if x <= 0.0 {
            return 0.0;
        }
        if let Some(min_normal) = self.min_normal {
            if x < min_normal {
                // x / step is exact (power-of-two scaling of a value far from f32's limits).
                return (x / self.subnormal_step).ceil() * self.subnormal_step;
            }
        }
        let mask = (1u32 << self.dropped_bits) - 1;
        let bits = x.to_bits();
        if bits & mask == 0 {
            x
        } else {
            // Setting the dropped bits and adding one carries into the kept mantissa and, at
            // the end of a binade, into the exponent: the next grid value.
            f32::from_bits((bits | mask) + 1)
        }
    }

    /// True when `x` (non-negative, finite) is on the grid.
    pub fn contains(&self, x: f32) -> bool {
        x.is_finite() && x >= 0.0 && x <= self.max && self.round_up(x) == x
    }
}

impl ScaleDtype {
    /// 2^-127, the smallest `UE8M0` value (an f32 subnormal, so spelled as bits).
    pub const UE8M0_MIN: f32 = f32::from_bits(0x0040_0000);
    /// 2^127, the largest `UE8M0` value.
    pub const UE8M0_MAX: f32 = f32::from_bits(0x7F00_0000);

    /// Every scale dtype.
    pub const ALL: [ScaleDtype; 5] = [Self::F32, Self::F16, Self::BF16, Self::UE8M0, Self::UE4M3];

    /// The largest finite value the dtype represents.
    pub fn max_representable(&self) -> f32 {
        match self {
            Self::F32 => f32::MAX,
            Self::F16 => 65504.0,
            Self::BF16 => f32::from_bits(0x7F7F_0000),
            Self::UE8M0 => Self::UE8M0_MAX,
            Self::UE4M3 => 448.0,
        }
    }

    /// The smallest positive value the dtype represents.
    pub fn min_positive(&self) -> f32 {
        match self {
            Self::F32 => f32::from_bits(1),
            Self::F16 => f32::from_bits(0x3380_0000), // 2^-24
            Self::BF16 => f32::from_bits(0x0001_0000),
            Self::UE8M0 => Self::UE8M0_MIN,
            Self::UE4M3 => f32::from_bits(0x3B00_0000), // 2^-9
        }
    }

    /// The smallest value representable by the dtype that is not below `scale`: the storage
    /// policy of a quantization scale (not a cast, which rounds to nearest).
    ///
    /// `scale` must not be negative. NaN stays NaN. Values above
    /// [`max_representable`](Self::max_representable) (and +inf) saturate to it, the one case
    /// where the result is below the input. `UE8M0` has no zero: 0 and anything below 2^-127
    /// give 2^-127.
    pub fn round_up(&self, scale: f32) -> f32 {
        match self {
            Self::F32 => scale,
            Self::UE8M0 => {
                if scale.is_nan() {
                    return scale;
                }
                E8M0::from_f32(scale).to_f32()
            }
            _ => self.f32_grid().round_up(scale),
        }
    }

    /// Store `scale` with [`round_up`](Self::round_up) and return its bits in the dtype's own
    /// encoding when it has a one-byte one (UE8M0, UE4M3), `None` otherwise.
    pub fn encode_byte(&self, scale: f32) -> Option<u8> {
        match self {
            Self::UE8M0 => Some(E8M0::from_f32(scale).to_bits()),
            Self::UE4M3 => {
                if scale.is_nan() {
                    return Some(0x7F);
                }
                Some(crate::ScaledFormat::F8E4M3.encode(self.round_up(scale)) & 0x7F)
            }
            _ => None,
        }
    }

    /// Decode a one-byte scale of this dtype (UE8M0, UE4M3); `None` for the wider dtypes.
    pub fn decode_byte(&self, bits: u8) -> Option<f32> {
        match self {
            Self::UE8M0 => Some(E8M0::from_bits(bits).to_f32()),
            Self::UE4M3 => Some(crate::ScaledFormat::F8E4M3.decode(bits & 0x7F)),
            _ => None,
        }
    }

    /// The dtype's grid on the f32 bit pattern. bf16 reports no subnormal range: its pattern is
    /// f32's top half all the way down. ue8m0 reports none either; its bottom (2^-127, an f32
    /// subnormal) is clamped by [`round_up`](Self::round_up) before the bit stepping.
    ///
    /// # Panics
    /// For [`ScaleDtype::F32`], which is the grid itself.
    pub fn f32_grid(&self) -> F32Grid {
        match self {
            Self::F32 => panic!("ScaleDtype::F32 is the f32 grid itself"),
            Self::F16 => F32Grid {
                dropped_bits: 13,
                min_normal: Some(f32::from_bits(0x3880_0000)), // 2^-14
                subnormal_step: f32::from_bits(0x3380_0000),   // 2^-24
                max: 65504.0,
            },
            Self::BF16 => F32Grid {
                dropped_bits: 16,
                min_normal: None,
                subnormal_step: 0.0,
                max: f32::from_bits(0x7F7F_0000),
            },
            Self::UE8M0 => F32Grid {
                dropped_bits: 23,
                min_normal: None,
                subnormal_step: 0.0,
                max: Self::UE8M0_MAX,
            },
            Self::UE4M3 => F32Grid {
                dropped_bits: 20,
                min_normal: Some(f32::from_bits(0x3C80_0000)), // 2^-6
                subnormal_step: f32::from_bits(0x3B00_0000),   // 2^-9
                max: 448.0,
            },
        }
    }
}

impl fmt::Display for ScaleDtype {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::F32 => "f32",
            Self::F16 => "f16",
            Self::BF16 => "bf16",
            Self::UE8M0 => "ue8m0",
            Self::UE4M3 => "ue4m3",
        })
    }
}
