//! Tensor-level quantization: compute scales, quantize, dequantize, FP4 packing.
//!
//! Tensors are row-major `rows x cols` f32 with the scaled dimension (K) last. The rules:
//! * block scale = `amax / max_finite(format)`, stored with the scale dtype's
//!   [`round_up`](ScaleDtype::round_up) ([`ScaleRounding::RoundUp`], the default), or the
//!   OCP MX v1.0 rule `2^(floor(log2 amax) - emax_elem)` ([`ScaleRounding::OcpMx`]; elements
//!   above `max_finite` then saturate);
//! * `amax == 0` gives the scale 1.0; a block holding NaN or ±inf gets a NaN scale, and a NaN
//!   scale dequantizes its whole block to NaN;
//! * NVFP4 with a global scale: `global = amax_tensor / (max_finite * 448)`, block scale
//!   `round_up_UE4M3(amax_block / max_finite / global)`, elements encode
//!   `x / (block * global)`.

use crate::lowp_codec::Codec;
use crate::{FormatError, ScaleDtype, ScaleLayout, ScaledFormat, E8M0};

/// How a computed scale is stored.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum ScaleRounding {
    /// The dtype's [`round_up`](ScaleDtype::round_up) of `amax / max_finite`: never clips.
    #[default]
    RoundUp,
    /// OCP MX v1.0: `2^(floor(log2 amax) - emax_elem)` stored exactly (clamped to the dtype's
    /// range); the block maximum may exceed `max_finite` and saturates.
    OcpMx,
}

/// Options of [`quantize`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct QuantizeOptions {
    /// Scale rounding policy.
    pub rounding: ScaleRounding,
    /// Pack FP4 codes two per byte (low nibble first), each row starting on a byte.
    pub packed: bool,
}

/// The scales of one tensor: `values` row-major in
/// [`scale_shape`](ScaleLayout::scale_shape), each on its dtype's grid (or NaN), plus the
/// NVFP4 global scale when the layout has one.
#[derive(Clone, Debug, PartialEq)]
pub struct Scales {
    /// Block scale values.
    pub values: Vec<f32>,
    /// The per-tensor f32 global scale (NVFP4 with `global` only).
    pub global: Option<f32>,
}

/// A quantized `rows x cols` tensor: codes, scales and how to read them.
#[derive(Clone, Debug, PartialEq)]
pub struct QuantizedTensor {
    /// Element format.
    pub format: ScaledFormat,
    /// Scale layout.
    pub layout: ScaleLayout,
    /// Rows (M for A, N for B).
    pub rows: usize,
    /// Columns (K).
    pub cols: usize,
    /// Whether `codes` holds two FP4 codes per byte.
    pub packed: bool,
    /// Codes, row-major; one per byte, or `cols.div_ceil(2)` bytes a row when packed.
    pub codes: Vec<u8>,
    /// The scales.
    pub scales: Scales,
}

/// `amax` of a set of values with the NaN/inf rule: any non-finite value makes it NaN.
fn amax_of<'a>(values: impl Iterator<Item = &'a f32>) -> f32 {
    let mut amax = 0.0f32;
    let mut finite = true;
    for &v in values {
        finite &= v.is_finite();
        amax = amax.max(v.abs());
    }
    if finite {
        amax
    } else {
        f32::NAN
    }
}

/// The stored scale for a block whose absolute maximum is `amax`, for elements of `format`
/// in dtype `dtype` (before any global scale).
pub fn block_scale(
    amax: f32,
    format: ScaledFormat,
    dtype: ScaleDtype,
    rounding: ScaleRounding,
) -> f32 {
    if amax.is_nan() {
        return f32::NAN;
    }
    if amax == 0.0 {
        return 1.0;
    }
    match rounding {
        ScaleRounding::RoundUp => dtype.round_up(amax / format.max_finite()),
        ScaleRounding::OcpMx => {
            let e = ((amax.to_bits() >> 23) & 0xFF) as i32;
            // floor(log2 amax); f32 subnormals count their leading zeros.
            let log2 = if e == 0 {
                -127 - (amax.to_bits().leading_zeros() as i32 - 9)
            } else {
                e - 127
            };
            let exp = log2 - format.emax();
            let pow2 = 2f64.powi(exp) as f32;
            match dtype {
                ScaleDtype::F32 => pow2,
                ScaleDtype::UE8M0 => E8M0::from_bits((exp.clamp(-127, 127) + 127) as u8).to_f32(),
                // A power of two inside the dtype's range is on its grid; outside, clamp.
                _ => dtype.round_up(pow2.max(dtype.min_positive())),
            }
        }
    }
}

fn check_len(what: &'static str, expected: usize, found: usize) -> Result<(), FormatError> {
    if expected == found {
        Ok(())
    } else {
        Err(FormatError::Length {
            what,
            expected,
            found,
        })
    }
}

/// Compute the scales of a `rows x cols` tensor for `format` in `layout`.
pub fn compute_scales(
    data: &[f32],
    rows: usize,
    cols: usize,
    format: ScaledFormat,
    layout: ScaleLayout,
    rounding: ScaleRounding,
) -> Result<Scales, FormatError> {
    layout.validate()?;
    check_len("data", rows * cols, data.len())?;
    let dtype = layout.scale_dtype();
    let (srows, scols) = layout.scale_shape(rows, cols);
    let (rb, kb) = (layout.row_block(rows).max(1), layout.k_block(cols).max(1));
    let global = if layout.has_global() {
        let amax = amax_of(data.iter());
        Some(if amax.is_nan() {
            f32::NAN
        } else if amax == 0.0 {
            1.0
        } else {
            amax / (format.max_finite() * ScaleDtype::UE4M3.max_representable())
        })
    } else {
        None
    };
    let mut values = Vec::with_capacity(srows * scols);
    for sr in 0..srows {
        for sc in 0..scols {
            let (r0, r1) = (sr * rb, ((sr + 1) * rb).min(rows));
            let (c0, c1) = (sc * kb, ((sc + 1) * kb).min(cols));
            let amax = amax_of((r0..r1).flat_map(|r| data[r * cols + c0..r * cols + c1].iter()));
            let amax = match global {
                Some(g) => amax / g,
                None => amax,
            };
            values.push(block_scale(amax, format, dtype, rounding));
        }
    }
    Ok(Scales { values, global })
}

/// Quantize with freshly computed scales.
pub fn quantize(
    data: &[f32],
    rows: usize,
    cols: usize,
    format: ScaledFormat,
    layout: ScaleLayout,
    options: QuantizeOptions,
) -> Result<QuantizedTensor, FormatError> {
    let scales = compute_scales(data, rows, cols, format, layout, options.rounding)?;
    quantize_with_scales(data, rows, cols, format, layout, scales, options.packed)
}

/// Quantize with given scales: element `x` encodes `x / (scale * global)`.
pub fn quantize_with_scales(
    data: &[f32],
    rows: usize,
    cols: usize,
    format: ScaledFormat,
    layout: ScaleLayout,
    scales: Scales,
    packed: bool,
) -> Result<QuantizedTensor, FormatError> {
    layout.validate()?;
    check_len("data", rows * cols, data.len())?;
    check_len(
        "scales",
        layout.scale_count(rows, cols),
        scales.values.len(),
    )?;
    if layout.has_global() != scales.global.is_some() {
        return Err(FormatError::GlobalScale {
            layout,
            given: scales.global.is_some(),
        });
    }
    if packed && format.bit_width() > 4 {
        return Err(FormatError::PackedNotFp4 { format });
    }
    let codec = Codec::new(format);
    let g = scales.global.unwrap_or(1.0);
    let kb = layout.k_block(cols).max(1);
    let mut codes = vec![0u8; rows * cols];
    for r in 0..rows {
        let row = &data[r * cols..(r + 1) * cols];
        let out = &mut codes[r * cols..(r + 1) * cols];
        for c0 in (0..cols).step_by(kb) {
            let c1 = (c0 + kb).min(cols);
            let s = scales.values[layout.scale_index(r, c0, rows, cols)] * g;
            codec.encode_scaled_slice(&row[c0..c1], s, &mut out[c0..c1]);
        }
    }
    if packed {
        codes = pack_fp4_rows(&codes, rows, cols);
    }
    Ok(QuantizedTensor {
        format,
        layout,
        rows,
        cols,
        packed,
        codes,
        scales,
    })
}

impl QuantizedTensor {
    /// The code of element `(r, c)` (unpacking when packed).
    #[inline]
    pub fn code(&self, r: usize, c: usize) -> u8 {
        if self.packed {
            let byte = self.codes[r * self.cols.div_ceil(2) + c / 2];
            if c.is_multiple_of(2) {
                byte & 0xF
            } else {
                byte >> 4
            }
        } else {
            self.codes[r * self.cols + c]
        }
    }

    /// Set the code of element `(r, c)` (its nibble when packed, low first); nothing outside
    /// the tensor.
    pub fn set_code(&mut self, r: usize, c: usize, code: u8) {
        if r >= self.rows || c >= self.cols {
            return;
        }
        if self.packed {
            let byte = &mut self.codes[r * self.cols.div_ceil(2) + c / 2];
            *byte = if c.is_multiple_of(2) {
                (*byte & 0xF0) | code
            } else {
                (*byte & 0x0F) | code << 4
            };
        } else {
            self.codes[r * self.cols + c] = code;
        }
    }

    /// One code per byte, row-major, whatever the storage.
    pub fn unpacked_codes(&self) -> Vec<u8> {
        if self.packed {
            unpack_fp4_rows(&self.codes, self.rows, self.cols)
        } else {
            self.codes.clone()
        }
    }

    /// The scale multiplying element `(r, c)`, global included.
    #[inline]
    pub fn scale_at(&self, r: usize, c: usize) -> f32 {
        self.scales.values[self.layout.scale_index(r, c, self.rows, self.cols)]
            * self.scales.global.unwrap_or(1.0)
    }

    /// The block scales in their one-byte storage encoding (E8M0 for MX, UE4M3 for NVFP4);
    /// `None` for f32 layouts.
    pub fn scale_bytes(&self) -> Option<Vec<u8>> {
        let dtype = self.layout.scale_dtype();
        self.scales
            .values
            .iter()
            .map(|&s| dtype.encode_byte(s))
            .collect()
    }

    /// Decode back to f32: `decode(code) * scale * global`.
    pub fn dequantize(&self) -> Vec<f32> {
        let codec = Codec::new(self.format);
        let g = self.scales.global.unwrap_or(1.0);
        let mut out = vec![0.0f32; self.rows * self.cols];
        for r in 0..self.rows {
            for c in 0..self.cols {
                let s = self.scales.values[self.layout.scale_index(r, c, self.rows, self.cols)];
                out[r * self.cols + c] = codec.decode(self.code(r, c)) * s * g;
            }
        }
        out
    }
}

/// Pack 4-bit codes two per byte, low nibble first; an odd count leaves the last high nibble
/// zero. Bits above the low nibble of each input are dropped.
pub fn pack_fp4(codes: &[u8]) -> Vec<u8> {
    codes
        .chunks(2)
        .map(|p| (p[0] & 0xF) | (p.get(1).copied().unwrap_or(0) & 0xF) << 4)
        .collect()
}

/// Unpack `n` 4-bit codes from `bytes` (low nibble first).
pub fn unpack_fp4(bytes: &[u8], n: usize) -> Vec<u8> {
    (0..n)
        .map(|i| {
            let b = bytes[i / 2];
            if i % 2 == 0 {
                b & 0xF
            } else {
                b >> 4
            }
        })
        .collect()
}

/// Pack each row of a `rows x cols` code matrix separately (`cols.div_ceil(2)` bytes a row).
pub fn pack_fp4_rows(codes: &[u8], rows: usize, cols: usize) -> Vec<u8> {
    (0..rows)
        .flat_map(|r| pack_fp4(&codes[r * cols..(r + 1) * cols]))
        .collect()
}

/// Inverse of [`pack_fp4_rows`].
pub fn unpack_fp4_rows(bytes: &[u8], rows: usize, cols: usize) -> Vec<u8> {
    let stride = cols.div_ceil(2);
    (0..rows)
        .flat_map(|r| unpack_fp4(&bytes[r * stride..(r + 1) * stride], cols))
        .collect()
}
