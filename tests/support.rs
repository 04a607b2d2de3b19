//! Helpers shared by the integration suites: where the tools and lit inputs are, and how to
//! spell a format, layout or scale dtype in lowp's IR.

use std::path::PathBuf;

use lowp_formats::{ScaleDtype, ScaleLayout, ScaledFormat};

/// The repository root.
pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// A tool built by `cargo build --workspace` (or `$LOWP_BIN_DIR/<name>`).
pub fn tool(name: &str) -> PathBuf {
    let dir = std::env::var_os("LOWP_BIN_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo().join("target/debug"));
    let path = dir.join(name);
    assert!(
        path.exists(),
        "{} not found: run `cargo build --workspace` first (scripts/test.sh does)",
        path.display()
    );
    path
}

/// The MLIR type of a format's codes (`f4E2M1FN`, `!lowp.mf<e3m0>`, ...).
pub fn format_type(f: ScaledFormat) -> String {
    match f.mlir_name() {
        Some(n) => n.to_string(),
        None => {
            let (e, m, bias) = f.fields();
            if bias == ScaledFormat::ieee_bias(e) {
                format!("!lowp.mf<e{e}m{m}>")
            } else {
                format!("!lowp.mf<e{e}m{m}, bias = {bias}>")
            }
        }
    }
}

/// The attribute of a layout.
pub fn layout_attr(l: ScaleLayout) -> String {
    match l {
        ScaleLayout::PerTensor => "#lowp.per_tensor".into(),
        ScaleLayout::PerChannel => "#lowp.per_channel".into(),
        ScaleLayout::Mx { block } => format!("#lowp.mx<{block}>"),
        ScaleLayout::Nvfp4 { block, global } => {
            format!(
                "#lowp.nvfp4<{block}{}>",
                if global { ", global" } else { "" }
            )
        }
        ScaleLayout::Blockwise { rows, cols } => format!("#lowp.blockwise<{rows}x{cols}>"),
    }
}

/// The element type of a layout's scale memref.
pub fn scale_type(l: ScaleLayout) -> &'static str {
    match l.scale_dtype() {
        ScaleDtype::UE8M0 => "f8E8M0FNU",
        ScaleDtype::UE4M3 => "f8E4M3FN",
        _ => "f32",
    }
}

/// Whether the dialect accepts `format` under `layout` (NVFP4 scales 4-bit formats; MX and
/// NVFP4 scale OCP formats, not FNUZ).
pub fn valid_pair(f: ScaledFormat, l: ScaleLayout) -> bool {
    match l {
        ScaleLayout::Nvfp4 { .. } => f.bit_width() == 4,
        ScaleLayout::Mx { .. } => !f.is_fnuz(),
        _ => true,
    }
}

/// Every named format and four custom ones (E3M0, E2M2, E3M4, E5M1: no mantissa, an FP4
/// and an FP8 shape, and an exponent field f16 cannot hold), as the format sweeps take
/// them.
pub fn named_and_custom_formats() -> Vec<ScaledFormat> {
    let mut formats = ScaledFormat::NAMED.to_vec();
    formats.extend([
        ScaledFormat::custom(3, 0),
        ScaledFormat::custom(2, 2),
        ScaledFormat::custom(3, 4),
        ScaledFormat::custom(5, 1),
    ]);
    formats
}

/// One layout of each kind, as the matmul suites sweep them (A's side; blockwise B takes
/// 128 x 128 blocks where a test pairs them).
pub const MATMUL_LAYOUTS: [ScaleLayout; 6] = [
    ScaleLayout::PerTensor,
    ScaleLayout::PerChannel,
    ScaleLayout::MX,
    ScaleLayout::NVFP4,
    ScaleLayout::NVFP4_GLOBAL,
    ScaleLayout::Blockwise { rows: 1, cols: 128 },
];
