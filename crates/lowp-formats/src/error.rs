//! [`FormatError`]: every way a tensor-level call of this crate rejects its input.

use core::fmt;

use crate::{ScaleLayout, ScaledFormat};

/// A rejected tensor-level request. Every variant names what was expected and what was found.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum FormatError {
    /// A buffer's length does not match the shape it is used with.
    Length {
        /// Which buffer (`"data"`, `"scales"`, `"bias"`, ...).
        what: &'static str,
        /// Length the shape asks for.
        expected: usize,
        /// Length given.
        found: usize,
    },
    /// The operands of a matmul disagree on K.
    KMismatch {
        /// K of A.
        a: usize,
        /// K of B.
        b: usize,
    },
    /// A block size or tile dimension of zero.
    ZeroBlock {
        /// The layout carrying it.
        layout: ScaleLayout,
    },
    /// Packing two codes per byte asked of a format wider than 4 bits.
    PackedNotFp4 {
        /// The format.
        format: ScaledFormat,
    },
    /// Products of two operands' codes, or a scale block's sum of them, that f32 partial
    /// sums (the contract's accumulation) cannot hold: above f32's largest value or below
    /// its smallest subnormal.
    F32Products {
        /// Format of A.
        a: ScaledFormat,
        /// Format of B.
        b: ScaledFormat,
        /// Products summed per scale block.
        block: usize,
    },
    /// An NVFP4 global scale is missing, or given to a layout without one.
    GlobalScale {
        /// The layout.
        layout: ScaleLayout,
        /// Whether a global scale was given.
        given: bool,
    },
}

impl fmt::Display for FormatError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Length {
                what,
                expected,
                found,
            } => write!(f, "{what}: expected {expected} elements, found {found}"),
            Self::KMismatch { a, b } => {
                write!(f, "A has K = {a} but B has K = {b} (B is N x K, K-last)")
            }
            Self::ZeroBlock { layout } => write!(f, "layout {layout}: block sizes must be >= 1"),
            Self::PackedNotFp4 { format } => write!(
                f,
                "packing two codes per byte needs a 4-bit format, found {format} ({} bits)",
                format.bit_width()
            ),
            Self::F32Products { a, b, block } => {
                let log2 = |x: f64| x.log2().round() as i64;
                let (top, step) = crate::matmul::product_range(*a, *b);
                write!(f, "products of {a} and {b} codes ")?;
                if step < crate::matmul::F32_MIN_SUBNORMAL {
                    write!(
                        f,
                        "go down to 2^{}, below f32's smallest 2^-149",
                        log2(step)
                    )?;
                } else {
                    write!(f, "reach 2^{}", log2(top))?;
                    if *block > 1 {
                        write!(
                            f,
                            " (a sum of {block}, one scale block: 2^{})",
                            log2(top * *block as f64)
                        )?;
                    }
                    write!(f, ", above f32's largest (2^128 - 2^104)")?;
                }
                write!(f, ": the f32 partial sums of the contract cannot hold them")
            }
            Self::GlobalScale { layout, given } => {
                if *given {
                    write!(f, "layout {layout} has no global scale, but one was given")
                } else {
                    write!(f, "layout {layout} needs a global scale, none was given")
                }
            }
        }
    }
}

impl std::error::Error for FormatError {}
