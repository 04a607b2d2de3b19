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
