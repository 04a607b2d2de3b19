//! [`ScaleLayout`]: how the scales of a K-last tensor (`rows x K`) are laid out.
//!
//! Every layout tiles the tensor into rectangles of `row_block x k_block` elements that share
//! one scale, stored row-major in a `scale_rows x scale_cols` array
//! ([`ScaleLayout::scale_shape`]). Partial tiles at the end of a dimension share a scale like
//! full ones (the data is treated as zero-padded).

use core::fmt;
use core::str::FromStr;

use crate::{FormatError, ScaleDtype};

/// The scale layout of one operand.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum ScaleLayout {
    /// One f32 scale for the whole tensor.
    PerTensor,
    /// OCP MX: one E8M0 scale per `block` consecutive elements along K (default 32).
    Mx {
        /// Elements per scale along K.
        block: u32,
    },
    /// NVFP4: one UE4M3 scale per `block` elements along K (default 16), optionally with a
    /// per-tensor f32 global scale multiplied in.
    Nvfp4 {
        /// Elements per scale along K.
        block: u32,
        /// Whether a second-level per-tensor f32 scale exists.
        global: bool,
    },
    /// One f32 scale per row (per row of A = per output row, per row of B = per output
    /// column).
    PerChannel,
    /// 2-D tiles of `rows x cols` elements (cols along K) with one f32 scale each, DeepSeek
    /// style: 1x128 for activations, 128x128 for weights.
    Blockwise {
        /// Tile extent along the row dimension.
        rows: u32,
        /// Tile extent along K.
        cols: u32,
    },
}

impl ScaleLayout {
    /// MX with the default block of 32.
    pub const MX: Self = Self::Mx { block: 32 };
    /// NVFP4 with the default block of 16 and no global scale.
    pub const NVFP4: Self = Self::Nvfp4 {
        block: 16,
        global: false,
    };
    /// NVFP4 with the default block of 16 and a global scale.
    pub const NVFP4_GLOBAL: Self = Self::Nvfp4 {
        block: 16,
        global: true,
    };

    /// The dtype the (block) scales are stored in.
    pub const fn scale_dtype(self) -> ScaleDtype {
        match self {
            Self::Mx { .. } => ScaleDtype::UE8M0,
            Self::Nvfp4 { .. } => ScaleDtype::UE4M3,
            Self::PerTensor | Self::PerChannel | Self::Blockwise { .. } => ScaleDtype::F32,
        }
    }

    /// Whether a per-tensor f32 global scale multiplies the block scales.
    pub const fn has_global(self) -> bool {
        matches!(self, Self::Nvfp4 { global: true, .. })
    }

    /// Elements along K sharing a scale, for a tensor with `k` columns.
    pub const fn k_block(self, k: usize) -> usize {
        match self {
            Self::PerTensor | Self::PerChannel => k,
            Self::Mx { block } | Self::Nvfp4 { block, .. } => block as usize,
            Self::Blockwise { cols, .. } => cols as usize,
        }
    }

    /// Rows sharing a scale, for a tensor with `rows` rows.
    pub const fn row_block(self, rows: usize) -> usize {
        match self {
            Self::PerTensor => rows,
            Self::PerChannel | Self::Mx { .. } | Self::Nvfp4 { .. } => 1,
            Self::Blockwise { rows: r, .. } => r as usize,
        }
    }

    /// True when the scales change along K (the matmul accumulates one partial sum per block).
    pub const fn is_k_blocked(self) -> bool {
        matches!(
            self,
            Self::Mx { .. } | Self::Nvfp4 { .. } | Self::Blockwise { .. }
        )
    }

    /// `(scale_rows, scale_cols)` for a `rows x k` tensor.
    pub fn scale_shape(self, rows: usize, k: usize) -> (usize, usize) {
        match self {
            Self::PerTensor => (1, 1),
            Self::PerChannel => (rows, 1),
            _ => (
                rows.div_ceil(self.row_block(rows).max(1)),
                k.div_ceil(self.k_block(k).max(1)),
            ),
        }
    }

    /// Number of (block) scales for a `rows x k` tensor.
    pub fn scale_count(self, rows: usize, k: usize) -> usize {
        let (r, c) = self.scale_shape(rows, k);
        r * c
    }

    /// Index into the row-major scale array of the scale of element `(r, c)`.
    #[inline]
    pub fn scale_index(self, r: usize, c: usize, rows: usize, k: usize) -> usize {
        match self {
            Self::PerTensor => 0,
            Self::PerChannel => r,
            _ => {
                let cols = k.div_ceil(self.k_block(k));
                (r / self.row_block(rows)) * cols + c / self.k_block(k)
            }
        }
    }

    /// Reject block sizes of zero.
    pub fn validate(self) -> Result<(), FormatError> {
        let zero = match self {
            Self::Mx { block } | Self::Nvfp4 { block, .. } => block == 0,
            Self::Blockwise { rows, cols } => rows == 0 || cols == 0,
            Self::PerTensor | Self::PerChannel => false,
        };
        if zero {
            Err(FormatError::ZeroBlock { layout: self })
        } else {
            Ok(())
        }
    }

    /// Whether this layout scales codes of `format` (the dialect's rule): NVFP4's UE4M3
    /// 16-blocks scale 4-bit formats, and MX / NVFP4 scale OCP formats, not the FNUZ ones.
    pub fn check_format(self, format: crate::ScaledFormat) -> Result<(), String> {
        if matches!(self, Self::Nvfp4 { .. }) && format.bit_width() != 4 {
            return Err(format!(
                "layout {self} scales 4-bit formats, {format} has {} bits",
                format.bit_width()
            ));
        }
        if matches!(self, Self::Mx { .. } | Self::Nvfp4 { .. }) && format.is_fnuz() {
            return Err(format!(
                "layout {self} scales OCP formats, {format} is FNUZ"
            ));
        }
        Ok(())
    }
}

impl fmt::Display for ScaleLayout {
    /// `per_tensor`, `mx`, `mx/16`, `nvfp4`, `nvfp4+global`, `nvfp4/32+global`, `per_channel`,
    /// `blockwise/1x128`: default block sizes are left out.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::PerTensor => f.write_str("per_tensor"),
            Self::PerChannel => f.write_str("per_channel"),
            Self::Mx { block: 32 } => f.write_str("mx"),
            Self::Mx { block } => write!(f, "mx/{block}"),
            Self::Nvfp4 { block, global } => {
                f.write_str("nvfp4")?;
                if *block != 16 {
                    write!(f, "/{block}")?;
                }
                if *global {
                    f.write_str("+global")?;
                }
                Ok(())
            }
            Self::Blockwise { rows, cols } => write!(f, "blockwise/{rows}x{cols}"),
        }
    }
}

/// Spellings accepted by [`ScaleLayout::from_str`], for error messages.
pub const LAYOUT_NAMES_HELP: &str = "per_tensor, per_channel, mx[/BLOCK] (default 32), \
nvfp4[/BLOCK][+global] (default 16), blockwise[/ROWSxCOLS] (default 1x128)";

/// The largest block (or tile side) a layout takes: the `lowp` dialect's layout
/// attributes hold it as a signed 32-bit integer.
pub const MAX_BLOCK: u32 = i32::MAX as u32;

fn parse_block(s: &str, what: &str) -> Result<u32, String> {
    match s.parse::<u32>() {
        Ok(n @ 1..=MAX_BLOCK) => Ok(n),
        _ => Err(format!("{what} '{s}' is not a size from 1 to {MAX_BLOCK}")),
    }
}

impl FromStr for ScaleLayout {
    type Err = String;

    /// Parse the [`Display`](fmt::Display) spelling (`-` may stand for `_`).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let t = s.trim().to_ascii_lowercase();
        let err = |why: String| {
            format!("unknown scale layout '{s}': {why}; expected {LAYOUT_NAMES_HELP}")
        };
        // `-` for `_` in the name only: a block's `-1` is reported as written.
        let (head, block) = match t.split_once('/') {
            Some((h, b)) => (h.replace('-', "_"), Some(b.to_string())),
            None => (t.replace('-', "_"), None),
        };
        match (head.as_str(), block) {
            ("per_tensor", None) => Ok(Self::PerTensor),
            ("per_channel", None) => Ok(Self::PerChannel),
            ("mx", None) => Ok(Self::MX),
            ("mx", Some(b)) => Ok(Self::Mx {
                block: parse_block(&b, "block").map_err(err)?,
            }),
            ("nvfp4" | "nvfp4+global", None) => Ok(Self::Nvfp4 {
                block: 16,
                global: head.ends_with("+global"),
            }),
            ("nvfp4", Some(b)) => {
                let (b, global) = match b.strip_suffix("+global") {
                    Some(b) => (b.to_string(), true),
                    None => (b, false),
                };
                Ok(Self::Nvfp4 {
                    block: parse_block(&b, "block").map_err(err)?,
                    global,
                })
            }
            ("blockwise", None) => Ok(Self::Blockwise { rows: 1, cols: 128 }),
            ("blockwise", Some(b)) => {
                let (r, c) = b
                    .split_once('x')
                    .ok_or_else(|| err(format!("tile '{b}' is not ROWSxCOLS")))?;
                Ok(Self::Blockwise {
                    rows: parse_block(r, "tile rows").map_err(err)?,
                    cols: parse_block(c, "tile cols").map_err(err)?,
                })
            }
            (h, _) => Err(err(format!("'{h}' is not a layout name"))),
        }
    }
}
