//! Encoding and decoding of element codes: the fast paths and the straightforward reference
//! they are tested against.
//!
//! * Decode goes through a 256-entry table per format. The tables of the seven named formats
//!   are built at compile time from [`decode_bits`], which assembles the f32 bit pattern with
//!   integer arithmetic only (exact by construction); a [`Codec`] builds the same table for a
//!   custom format.
//! * Encode works on the f32 bit pattern without branches on the value: a magic-number add
//!   rounds the subnormal range, a carry-propagating add rounds the normal range, both with
//!   ties to the even code, and a `min` saturates. NaN encodes to 0.
//! * [`reference`](mod@reference) is the per-value path written straight from the definition (f64
//!   arithmetic, explicit distance comparison); it is the spec the fast paths must equal, and
//!   the baseline of `cargo bench -p lowp-formats`.

use crate::ScaledFormat;

/// The f32 bit pattern a code decodes to. Exact for every format: the exponent and mantissa
/// fields are moved into place (subnormal codes are normalized, or land on f32 subnormals for
/// biases near 127). NaN keeps the code's sign with a quiet payload (`0x7FC0_0000`).
pub const fn decode_bits(format: ScaledFormat, code: u8) -> u32 {
    let (e, m, bias) = format.fields();
    let width = 1 + e + m;
    let code = (code as u32) & ((1u32 << width) - 1);
    let sign = (code >> (e + m)) & 1;
    let sign_bit = sign << 31;
    let exp = (code >> m) & ((1 << e) - 1);
    let mant = code & ((1 << m) - 1);
    const QNAN: u32 = 0x7FC0_0000;
    match format {
        ScaledFormat::F8E4M3 if exp == 0xF && mant == 0x7 => return sign_bit | QNAN,
        ScaledFormat::F8E5M2 if exp == 0x1F => {
            return sign_bit | if mant == 0 { 0x7F80_0000 } else { QNAN };
        }
        ScaledFormat::F8E4M3Fnuz | ScaledFormat::F8E5M2Fnuz if code == 0x80 => return QNAN,
        _ => {}
    }
    if exp == 0 {
        if mant == 0 {
            return sign_bit;
        }
        // value = mant * 2^(1 - bias - m)
        let unit_exp = 1 - bias - m as i32;
        let p = 31 - mant.leading_zeros(); // highest set bit of mant
        let f32_exp = unit_exp + p as i32 + 127;
        if f32_exp >= 1 {
            let frac = (mant ^ (1 << p)) << (23 - p);
            sign_bit | (f32_exp as u32) << 23 | frac
        } else {
            // f32 subnormal: units of 2^-149.
            sign_bit | mant << (unit_exp + 149) as u32
        }
    } else {
        let f32_exp = exp as i32 - bias + 127;
        sign_bit | (f32_exp as u32) << 23 | mant << (23 - m)
    }
}

/// The decode table of a format: entry `c` is the value of code `c` (bits above the format's
/// width ignored, so the table repeats every `2^bit_width` entries).
pub const fn decode_table(format: ScaledFormat) -> [f32; 256] {
    let mut t = [0.0f32; 256];
    let mut c = 0;
    while c < 256 {
        t[c] = f32::from_bits(decode_bits(format, c as u8));
        c += 1;
    }
    t
}

static NAMED_TABLES: [[f32; 256]; 7] = [
    decode_table(ScaledFormat::F8E4M3),
    decode_table(ScaledFormat::F8E5M2),
    decode_table(ScaledFormat::F8E4M3Fnuz),
    decode_table(ScaledFormat::F8E5M2Fnuz),
    decode_table(ScaledFormat::F6E2M3),
    decode_table(ScaledFormat::F6E3M2),
    decode_table(ScaledFormat::F4E2M1),
];

/// Decode one code (bit-exact; ±inf / NaN only for the formats that encode them).
#[inline]
pub fn decode(format: ScaledFormat, code: u8) -> f32 {
    match format {
        ScaledFormat::Custom { .. } => f32::from_bits(decode_bits(format, code)),
        named => NAMED_TABLES[named.kernel_id() as usize][code as usize],
    }
}

/// Encode one f32: nearest code, ties to the even code, overflow and ±inf saturate to
/// ±max_finite, NaN -> 0, and in FNUZ formats no `0x80` (negative zero results give `0x00`).
#[inline]
pub fn encode(format: ScaledFormat, x: f32) -> u8 {
    EncodeParams::new(format).encode(x)
}

/// The per-format constants of the branch-free encoder.
#[derive(Clone, Copy, Debug)]
pub struct EncodeParams {
    /// `23 - mant_bits`: how many f32 mantissa bits are dropped.
    shift: u32,
    /// XOR into the kept bits' LSB to get the code's parity (only nonzero when mant_bits == 0
    /// and the exponent rebias is odd).
    parity_flip: u32,
    /// Subtracted from the rounded `bits >> shift`: `(127 - bias) << mant_bits`.
    rebias: u32,
    /// Bits of the smallest normal value `2^(1 - bias)`; below it the subnormal path applies.
    min_normal_bits: u32,
    /// `2^(1 - bias - m + 23)`: adding it rounds a subnormal to a multiple of the subnormal
    /// step with the FPU's ties-to-even.
    magic: f32,
    /// Largest finite magnitude code.
    max_mag: u32,
    /// Where the sign bit goes.
    sign_shift: u32,
    /// FNUZ: a zero magnitude drops its sign.
    fnuz: bool,
}

impl EncodeParams {
    /// Constants for `format`.
    pub const fn new(format: ScaledFormat) -> Self {
        let (e, m, bias) = format.fields();
        let emin = 1 - bias;
        Self {
            shift: 23 - m,
            parity_flip: if m == 0 { ((127 - bias) & 1) as u32 } else { 0 },
            rebias: ((127 - bias) as u32) << m,
            min_normal_bits: ((emin + 127) as u32) << 23,
            magic: f32::from_bits(((emin - m as i32 + 23 + 127) as u32) << 23),
            max_mag: format.max_finite_code() as u32,
            sign_shift: e + m,
            fnuz: format.is_fnuz(),
        }
    }

    /// Encode one value (see [`encode`]). Written without data-dependent branches so that a
    /// loop over it vectorizes.
    #[inline(always)]
    pub fn encode(&self, x: f32) -> u8 {
        let bits = x.to_bits();
        let abs = bits & 0x7FFF_FFFF;
        // Normal range: round the dropped bits to nearest, ties to the even code.
        let kept = abs >> self.shift;
        let lsb = (kept ^ self.parity_flip) & 1;
        let rounded = abs + ((1 << (self.shift - 1)) - 1) + lsb;
        let mag_normal = (rounded >> self.shift).wrapping_sub(self.rebias);
        // Subnormal range: the FPU rounds |x| + magic to a multiple of the subnormal step.
        let mag_sub = (f32::from_bits(abs) + self.magic)
            .to_bits()
            .wrapping_sub(self.magic.to_bits());
        let mag = if abs < self.min_normal_bits {
            mag_sub
        } else {
            mag_normal
        };
        let mag = mag.min(self.max_mag);
        let is_nan = abs > 0x7F80_0000;
        let keep_sign = !is_nan & (!self.fnuz | (mag != 0));
        let sign = (bits >> 31) & keep_sign as u32;
        let mag = if is_nan { 0 } else { mag };
        (mag | sign << self.sign_shift) as u8
    }
}

/// A format with its decode table and encode constants, for fast slice conversion.
#[derive(Clone, Debug)]
pub struct Codec {
    format: ScaledFormat,
    table: [f32; 256],
    params: EncodeParams,
}

impl Codec {
    /// Build the codec of `format` (a 1 KiB table; cheap, but reuse it across calls).
    pub fn new(format: ScaledFormat) -> Self {
        let table = match format {
            ScaledFormat::Custom { .. } => decode_table(format),
            named => NAMED_TABLES[named.kernel_id() as usize],
        };
        Self {
            format,
            table,
            params: EncodeParams::new(format),
        }
    }

    /// The format.
    pub fn format(&self) -> ScaledFormat {
        self.format
    }

    /// The decode table (entry `c` = value of code `c`).
    pub fn table(&self) -> &[f32; 256] {
        &self.table
    }

    /// Decode one code.
    #[inline(always)]
    pub fn decode(&self, code: u8) -> f32 {
        self.table[code as usize]
    }

    /// Encode one value.
    #[inline(always)]
    pub fn encode(&self, x: f32) -> u8 {
        self.params.encode(x)
    }

    /// Decode `codes` into `out`.
    ///
    /// # Panics
    /// If the slices differ in length.
    pub fn decode_slice(&self, codes: &[u8], out: &mut [f32]) {
        assert_eq!(codes.len(), out.len(), "decode_slice: length mismatch");
        for (o, &c) in out.iter_mut().zip(codes) {
            *o = self.table[c as usize];
        }
    }

    /// Encode `xs` into `out`.
    ///
    /// # Panics
    /// If the slices differ in length.
    pub fn encode_slice(&self, xs: &[f32], out: &mut [u8]) {
        assert_eq!(xs.len(), out.len(), "encode_slice: length mismatch");
        let p = self.params;
        for (o, &x) in out.iter_mut().zip(xs) {
            *o = p.encode(x);
        }
    }

    /// Encode `xs[i] / scale` into `out` (the inner loop of quantization).
    ///
    /// # Panics
    /// If the slices differ in length.
    pub fn encode_scaled_slice(&self, xs: &[f32], scale: f32, out: &mut [u8]) {
        assert_eq!(xs.len(), out.len(), "encode_scaled_slice: length mismatch");
        let p = self.params;
        for (o, &x) in out.iter_mut().zip(xs) {
            *o = p.encode(x / scale);
        }
    }

    /// Replace every value by the nearest one the format represents.
    pub fn quantize_slice(&self, xs: &mut [f32]) {
        let p = self.params;
        for x in xs.iter_mut() {
            *x = self.table[p.encode(*x) as usize];
        }
    }
}

/// Decode `codes` of `format` into `out` through the format's table.
pub fn decode_slice(format: ScaledFormat, codes: &[u8], out: &mut [f32]) {
    Codec::new(format).decode_slice(codes, out)
}

/// Encode `xs` into codes of `format`.
pub fn encode_slice(format: ScaledFormat, xs: &[f32], out: &mut [u8]) {
    Codec::new(format).encode_slice(xs, out)
}

/// Round every value of `xs` to `format` in place.
pub fn quantize_slice(format: ScaledFormat, xs: &mut [f32]) {
    Codec::new(format).quantize_slice(xs)
}

/// The straightforward per-value codec, written from the definition: decode with
/// `(1 + m / 2^Y) * 2^(e - bias)` in f64, encode by finding the two neighbouring codes and
/// comparing distances. Slow on purpose: it is the spec the fast paths are tested against and
/// the baseline of the benchmark.
pub mod reference {
    use crate::ScaledFormat;

    /// Decode one code (see [`crate::lowp_codec::decode`]).
    pub fn decode(format: ScaledFormat, code: u8) -> f32 {
        let (e, m, bias) = format.fields();
        let width = 1 + e + m;
        let code = code as u32 & ((1 << width) - 1);
        let negative = code >> (e + m) & 1 == 1;
        let exp = (code >> m) & ((1 << e) - 1);
        let mant = code & ((1 << m) - 1);
        let sign = if negative { -1.0f64 } else { 1.0 };
        match format {
            ScaledFormat::F8E4M3 if exp == 15 && mant == 7 => return f32::NAN,
            ScaledFormat::F8E5M2 if exp == 31 => {
                return if mant == 0 {
                    (sign * f64::INFINITY) as f32
                } else {
                    f32::NAN
                }
            }
            ScaledFormat::F8E4M3Fnuz | ScaledFormat::F8E5M2Fnuz if code == 0x80 => return f32::NAN,
            _ => {}
        }
        let step = 2f64.powi(-(m as i32));
        let v = if exp == 0 {
            mant as f64 * step * 2f64.powi(1 - bias)
        } else {
            (1.0 + mant as f64 * step) * 2f64.powi(exp as i32 - bias)
        };
        (sign * v) as f32
    }

    /// Encode one value (see [`crate::lowp_codec::encode`]) with f64 arithmetic: find the
    /// binade of |x| (never below the smallest normal one), count steps of that binade, round
    /// the count to nearest with ties to the even code, saturate.
    pub fn encode(format: ScaledFormat, x: f32) -> u8 {
        if x.is_nan() {
            return 0;
        }
        let (_, m, bias) = format.fields();
        let max_code = format.max_finite_code() as i64;
        let a = (x as f64).abs();
        let emin = 1 - bias;
        let mag = if a >= format.max_finite() as f64 {
            max_code
        } else {
            let binade = if a == 0.0 {
                emin
            } else {
                (((a.to_bits() >> 52) & 0x7FF) as i32 - 1023).max(emin)
            };
            let step = 2f64.powi(binade - m as i32);
            let q = a / step;
            let lo = q.floor();
            let code_lo = (((binade - emin) as i64) << m) + lo as i64;
            let frac = q - lo;
            let up = frac > 0.5 || (frac == 0.5 && code_lo % 2 == 1);
            (code_lo + up as i64).min(max_code)
        };
        let negative = x.is_sign_negative();
        if negative && !(format.is_fnuz() && mag == 0) {
            (mag | 1 << (format.exp_bits() + format.mant_bits())) as u8
        } else {
            mag as u8
        }
    }
}
