//! # lowp-formats
//!
//! The numeric spec of lowp, in plain Rust with no dependencies: every element format
//! ([`ScaledFormat`]: OCP FP8, AMD FNUZ FP8, MX FP6/FP4 and any custom all-finite `fNeXmY`),
//! every scale dtype ([`ScaleDtype`], [`E8M0`]), every scale layout ([`ScaleLayout`]:
//! per-tensor, MX, NVFP4, per-channel, 2-D blockwise), tensor-level quantization and the CPU
//! oracle [`scaled_matmul`] every generated kernel is tested against, and [`problem`]: whole
//! scaled-matmul problems (inputs, argument bytes, the check of a result).
//!
//! ```
//! use lowp_formats::ScaledFormat;
//! const F4E3M0: ScaledFormat = ScaledFormat::custom(3, 0);
//! assert_eq!(F4E3M0.to_string(), "f4e3m0");
//! assert_eq!(F4E3M0.quantize(1.4), 1.0);
//! assert_eq!(F4E3M0.max_finite(), 16.0);
//! assert_eq!("f8e4m3".parse::<ScaledFormat>(), Ok(ScaledFormat::F8E4M3));
//! ```
//!
//! Conventions: codes are `u8`, one per byte with the sign in the top bit of the format's
//! width; FP4 may be packed two per byte ([`pack_fp4`], low nibble first). Tensors are
//! row-major with the scaled dimension K last; B of a matmul is N x K.

#![deny(missing_docs)]

mod embed;
mod error;
mod format;
mod layout;
pub mod lowp_codec;
mod matmul;
pub mod problem;
mod quant;
mod scale;
pub mod testing;

pub use embed::{Half, HalfFields, IntEmbedding};
pub use error::FormatError;
pub use format::{CustomFormatError, ScaledFormat, FORMAT_NAMES_HELP};
pub use layout::{ScaleLayout, LAYOUT_NAMES_HELP, MAX_BLOCK};
pub use lowp_codec::Codec;
pub use matmul::{
    check_f32_products, partial_sum_len, scale_segments, scaled_matmul, scaled_matmul_f64,
    Accumulation, ErrorStats, MatmulOperand, Reference, Stored,
};
pub use quant::{
    block_scale, compute_scales, pack_fp4, pack_fp4_rows, quantize, quantize_with_scales,
    unpack_fp4, unpack_fp4_rows, QuantizeOptions, QuantizedTensor, ScaleRounding, Scales,
};
pub use scale::{F32Grid, ScaleDtype, E8M0};
