//! Running any entry function with random inputs per operand type: the memref arguments of
//! the entry (static shapes) get seeded buffers whose contents suit their element type
//! (normal values for floats, valid codes for lowp formats, sensible E8M0 / UE4M3 scales),
//! and after the call each buffer is summarized so that outputs can be told apart.

use lowp_formats::testing::SplitMix64;
use lowp_formats::{ScaledFormat, E8M0};
use melior::ir::{Module, Type, TypeLike};

use crate::{Jit, JitError, MemRefArg};

/// The element of a memref argument, as far as inputs and summaries care.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Element {
    /// f32.
    F32,
    /// bf16.
    BF16,
    /// f16.
    F16,
    /// Codes of a lowp format (one per byte, or two per byte when packed).
    Code {
        /// Format.
        format: ScaledFormat,
        /// Two 4-bit codes per byte.
        packed: bool,
    },
    /// E8M0 scales (`f8E8M0FNU`).
    E8M0,
    /// A signless integer of this many bits.
    Int(u32),
}

impl Element {
    fn bytes(self) -> usize {
        match self {
            Element::F32 => 4,
            Element::BF16 | Element::F16 => 2,
            Element::Code { .. } | Element::E8M0 => 1,
            Element::Int(bits) => (bits as usize).div_ceil(8).next_power_of_two(),
        }
    }
}

/// One memref argument of an entry.
#[derive(Clone, Debug, PartialEq)]
pub struct ArgSpec {
    /// Element.
    pub element: Element,
    /// Static shape (empty for rank 0).
    pub shape: Vec<usize>,
    /// The type as printed.
    pub type_name: String,
}

impl ArgSpec {
    fn elements(&self) -> usize {
        self.shape.iter().product()
    }
}

fn element_of(t: Type) -> Option<Element> {
    if let Some(info) = lowp_dialect::code_type_info(t) {
        return Some(Element::Code {
            format: info.format,
            packed: info.packed,
        });
    }
    let raw = t.to_raw();
    // SAFETY: type predicates on a live type.
    unsafe {
        Some(if mlir_sys::mlirTypeIsAF32(raw) {
            Element::F32
        } else if mlir_sys::mlirTypeIsABF16(raw) {
            Element::BF16
        } else if mlir_sys::mlirTypeIsAF16(raw) {
            Element::F16
        } else if mlir_sys::mlirTypeIsAFloat8E8M0FNU(raw) {
            Element::E8M0
        } else if mlir_sys::mlirTypeIsAInteger(raw) {
            Element::Int(mlir_sys::mlirIntegerTypeGetWidth(raw))
        } else {
            return None;
        })
    }
}

/// The memref arguments of `@entry` (every argument must be a statically shaped memref of
/// a supported element type).
pub fn entry_signature(module: &Module, entry: &str) -> Result<Vec<ArgSpec>, String> {
    let func = crate::find_function(module, entry)
        .ok_or_else(|| format!("no function @{entry} in the module"))?;
    let ft = crate::entry_type(func, entry)?;
    (0..ft.input_count())
        .map(|i| {
            let t = ft.input(i).map_err(|e| e.to_string())?;
            let raw = t.to_raw();
            // SAFETY: type queries on a live type.
            unsafe {
                if !mlir_sys::mlirTypeIsAMemRef(raw) || !mlir_sys::mlirShapedTypeHasStaticShape(raw) {
                    return Err(format!("argument #{i} of @{entry} is {t}: lowp-run fills statically shaped memrefs"));
                }
                crate::memref::dense_row_major(t)
                    .map_err(|why| format!("argument #{i} of @{entry}: {why}"))?;
                let shape = (0..mlir_sys::mlirShapedTypeGetRank(raw))
                    .map(|d| mlir_sys::mlirShapedTypeGetDimSize(raw, d as isize) as usize)
                    .collect();
                let element = element_of(Type::from_raw(mlir_sys::mlirShapedTypeGetElementType(raw)))
                    .ok_or_else(|| format!("argument #{i} of @{entry} is {t}: no random inputs for its element type"))?;
                Ok(ArgSpec {
                    element,
                    shape,
                    type_name: t.to_string(),
                })
            }
        })
        .collect()
}

/// Bytes the buffers of a signature take.
pub fn bytes_needed(sig: &[ArgSpec]) -> u64 {
    sig.iter()
        .map(|a| (a.elements() as u64).saturating_mul(a.element.bytes() as u64))
        .fold(0u64, u64::saturating_add)
}

/// Seeded buffers for a signature: normal values for floats, any code for lowp formats (NaN
/// codes included), E8M0 scales in 2^-7..2^7, small integers.
pub fn random_buffers(sig: &[ArgSpec], seed: u64) -> Vec<Vec<u8>> {
    let mut rng = SplitMix64::new(seed);
    sig.iter()
        .map(|a| {
            let n = a.elements();
            let mut out = Vec::with_capacity(n * a.element.bytes());
            for _ in 0..n {
                match a.element {
                    Element::F32 => out.extend(rng.normal().to_le_bytes()),
                    Element::BF16 => {
                        out.extend(((rng.normal().to_bits() >> 16) as u16).to_le_bytes())
                    }
                    Element::F16 => {
                        // sign, exponent 12..18 (2^-3..2^3), random mantissa
                        let bits = ((rng.next_u64() & 1) << 15)
                            | ((12 + rng.next_u64() % 7) << 10)
                            | (rng.next_u64() & 0x3FF);
                        out.extend((bits as u16).to_le_bytes());
                    }
                    Element::Code { format, packed } => {
                        let width = if packed { 8 } else { format.bit_width() };
                        out.push((rng.next_u64() & ((1u64 << width) - 1)) as u8);
                    }
                    Element::E8M0 => {
                        out.push(E8M0::from_bits(120 + (rng.next_u64() % 15) as u8).to_bits())
                    }
                    Element::Int(bits) => {
                        // 0..=6 within the width (i1: 0 or 1), little-endian in the
                        // element's bytes (more than a u64's for i65 and wider).
                        let mask = u64::MAX.checked_shr(64 - bits.min(64)).unwrap_or(0);
                        let v = (rng.next_u64() % 7) & mask;
                        let bytes = Element::Int(bits).bytes();
                        out.extend(
                            v.to_le_bytes()
                                .iter()
                                .chain(std::iter::repeat(&0))
                                .take(bytes),
                        );
                    }
                }
            }
            out
        })
        .collect()
}

/// Call `@entry` on the buffers.
pub fn call(
    jit: &Jit,
    entry: &str,
    sig: &[ArgSpec],
    buffers: &mut [Vec<u8>],
) -> Result<(), JitError> {
    let mut args: Vec<MemRefArg> = sig
        .iter()
        .zip(buffers.iter_mut())
        .map(|(a, buf)| {
            if a.shape.is_empty() {
                MemRefArg::scalar_bytes(buf.as_mut_slice())
            } else {
                MemRefArg::new_bytes(buf.as_mut_slice(), &a.shape, a.element.bytes())
            }
        })
        .collect();
    // SAFETY: one buffer per argument, sized and typed from the entry's own signature.
    unsafe { jit.call(entry, &mut args) }
}

/// A one-line summary of a buffer: sum and NaN count for floats, an FNV-1a hash otherwise.
pub fn summarize(a: &ArgSpec, buf: &[u8]) -> String {
    let floats: Option<Vec<f32>> = match a.element {
        Element::F32 => Some(crate::matmul::f32_from(buf)),
        Element::BF16 => Some(crate::matmul::bf16_from(buf)),
        _ => None,
    };
    match floats {
        Some(v) => {
            let nan = v.iter().filter(|x| x.is_nan()).count();
            let sum: f64 = v.iter().filter(|x| !x.is_nan()).map(|&x| x as f64).sum();
            format!("{} sum={sum:.6e} nan={nan}", a.type_name)
        }
        None => {
            let hash = buf.iter().fold(0xcbf29ce484222325u64, |h, &b| {
                (h ^ b as u64).wrapping_mul(0x100000001b3)
            });
            format!("{} fnv1a={hash:016x}", a.type_name)
        }
    }
}
