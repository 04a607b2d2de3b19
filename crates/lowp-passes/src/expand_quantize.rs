//! `lowp-expand-quantize`: rewrite `lowp.compute_scales`, `lowp.quantize` and
//! `lowp.dequantize` into `scf` loops of `arith` / `math` / `memref` operations on bit
//! patterns, exact for every format and layout.
//!
//! Before:
//! ```mlir
//! lowp.quantize %x[%s] layout #lowp.mx<32> into %q
//!     : memref<4x64xf32>[memref<4x2xf8E8M0FNU>] -> memref<4x64xf4E2M1FN>
//! ```
//! After (shape of it):
//! ```mlir
//! %sbits = lowp.storage_cast %s : memref<4x2xf8E8M0FNU> to memref<4x2xi8>
//! %qbits = lowp.storage_cast %q : memref<4x64xf4E2M1FN> to memref<4x64xi8>
//! scf.for %r = %c0 to %rows step %c1 {
//!   scf.for %k = %c0 to %cols step %c1 {
//!     // scale: E8M0 byte -> f32 bits; element: x / scale -> f32 bits -> rounded code
//!     ... arith.bitcast / arith.shrui / arith.addi / arith.select / arith.minui ...
//!     memref.store %code, %qbits[%r, %k] : memref<4x64xi8>
//!   }
//! }
//! ```
//! Each rule is the one of `lowp-formats` operation for operation (see `codes.rs`):
//! encode rounds to nearest with ties to the even code and saturates; scales are stored
//! with the op's rounding policy; NaN/inf blocks get NaN scales; NVFP4 global scales are
//! computed from the whole tensor first. Codes and one-byte scales are read and written as
//! integers through `lowp.storage_cast`; packed FP4 combines two nibbles per byte, low
//! nibble first.
//!
//! Options:
//! * `decode=bits|table` — dequantize decodes with bit arithmetic (default) or by loading
//!   a table of one f32 per code (16 for FP4, 64 for FP6, 256 for FP8, a stack buffer
//!   filled from a constant at the function's entry)
//!   built from `lowp-formats` (both exact).
//!
//! Runs on `func.func`. Dependent dialects: arith, math, memref, scf, vector (the table).

use lowp_dialect::{code_type_info, layout_of, rounding_of};
use lowp_formats::{lowp_codec, ScaleDtype, ScaleLayout, ScaleRounding, ScaledFormat};
use melior::dialect::arith::CmpfPredicate;
use melior::dialect::DialectHandle;
use melior::ir::attribute::{AttributeLike, TypeAttribute};
use melior::ir::block::BlockLike;
use melior::ir::operation::{OperationBuilder, OperationLike};
use melior::ir::r#type::MemRefType;
use melior::ir::RegionLike;
use melior::ir::ValueLike;
use melior::ir::{Attribute, OperationRef, Type, Value};
use melior::ir::{ShapedTypeLike, TypeLike};

use crate::codes;
use crate::error::Location;
use crate::ir::Emitter;
use crate::registry::{OptionDef, OptionKind, PassDef, PassOptions};
use crate::PassError;

/// The pass definition.
pub const PASS: PassDef = PassDef {
    argument: "lowp-expand-quantize",
    name: "LowpExpandQuantize",
    description: "Rewrite lowp.compute_scales / quantize / dequantize into scf loops of \
                  arith, math and memref ops on bit patterns (exact for every format and layout)",
    op_name: Some("func.func"),
    options: &[OptionDef {
        name: "decode",
        default: "bits",
        description: "How dequantize decodes codes: 'bits' (integer arithmetic) or 'table' \
                      (a lookup table with one f32 per code)",
        kind: OptionKind::Choice(&["bits", "table"]),
    }],
    dependent_dialects: loop_dialects,
    run,
};

pub(crate) fn math_handle() -> DialectHandle {
    // SAFETY: the math dialect's registration handle is a static descriptor.
    unsafe { DialectHandle::from_raw(mlir_sys::mlirGetDialectHandle__math__()) }
}

/// How dequantize decodes codes.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Decode {
    /// Integer arithmetic on the bit pattern.
    Bits,
    /// A table of one f32 per code.
    Table,
}

fn run<'c, 'a>(func: OperationRef<'c, 'a>, options: &PassOptions) -> Result<(), PassError> {
    let decode = match options.choice("decode") {
        "table" => Decode::Table,
        _ => Decode::Bits,
    };
    // `to_ref` borrows the ContextRef itself: keep it alive for the whole run.
    let ctx_ref = func.context();
    // SAFETY: the context outlives the pass run, and `ctx_ref` outlives `ctx`.
    let ctx = unsafe { ctx_ref.to_ref() };
    let mut targets = Vec::new();
    func.walk(melior::ir::operation::WalkOrder::PreOrder, |op| {
        let name = op.name();
        let name = name.as_string_ref().as_str().unwrap_or("");
        if matches!(
            name,
            "lowp.compute_scales" | "lowp.quantize" | "lowp.dequantize"
        ) {
            targets.push(op.to_raw());
        }
        melior::ir::operation::WalkResult::Advance
    });
    for raw in targets {
        // SAFETY: collected from the live function above and not yet erased.
        let op: OperationRef<'c, 'a> = unsafe { OperationRef::from_raw(raw) };
        require_memrefs(op)?;
        let e = Emitter::before(ctx, op).ok_or_else(|| unsupported(op, "op is not in a block"))?;
        expand_op(&e, op, decode, func)?;
        // SAFETY: the op has no results and its replacement is in place.
        unsafe { mlir_sys::mlirOperationDestroy(raw) };
    }
    Ok(())
}

/// Expand one `lowp.compute_scales`, `lowp.quantize` or `lowp.dequantize` in place of `op`
/// (the caller erases `op`).
pub(crate) fn expand_op<'c, 'a>(
    e: &Emitter<'c, 'a>,
    op: OperationRef<'c, 'a>,
    decode: Decode,
    func: OperationRef<'c, 'a>,
) -> Result<(), PassError> {
    let name = op.name().as_string_ref().as_str().unwrap_or("").to_string();
    match name.as_str() {
        "lowp.compute_scales" => expand_compute_scales(e, op),
        "lowp.quantize" => expand_quantize(e, op),
        "lowp.dequantize" => expand_dequantize(e, op, decode, func),
        other => Err(unsupported(op, format!("{other} is not a quantization op"))),
    }
}

/// An error at `op` if it is in tensor form (a tensor operand, so tensor results): the
/// lowerings write memrefs; one-shot-bufferize makes the memref form of the same op.
pub(crate) fn require_memrefs(op: OperationRef) -> Result<(), PassError> {
    let tensor = (0..op.operand_count())
        .filter_map(|i| op.operand(i).ok())
        .any(|v| v.r#type().is_tensor());
    if tensor || op.result_count() > 0 {
        return Err(unsupported(
            op,
            "the op is on tensors; lowerings take its memref form: bufferize first \
             (one-shot-bufferize{bufferize-function-boundaries \
             function-boundary-type-conversion=identity-layout-map})",
        ));
    }
    Ok(())
}

pub(crate) fn unsupported(op: OperationRef, reason: impl Into<String>) -> PassError {
    PassError::Unsupported {
        op: op
            .name()
            .as_string_ref()
            .as_str()
            .unwrap_or("op")
            .to_string(),
        reason: reason.into(),
        location: Some(Location(op.location().to_raw())),
    }
}

/// A scaled tensor's operands as the expansions see them.
pub(crate) struct Scaled<'c, 'a> {
    pub(crate) layout: ScaleLayout,
    /// Scales as stored: f32 values, or integers through a storage cast.
    pub(crate) scales: Value<'c, 'a>,
    pub(crate) dtype: ScaleDtype,
    pub(crate) global: Option<Value<'c, 'a>>,
}

pub(crate) fn layout_attr_of<'c>(
    op: OperationRef<'c, '_>,
    name: &str,
) -> Result<ScaleLayout, PassError> {
    op.attribute(name)
        .ok()
        .and_then(layout_of)
        .ok_or_else(|| unsupported(op, format!("missing or unknown '{name}' scale layout")))
}

/// `lowp.storage_cast %m : memref<..xT> to memref<..xi8>`.
pub(crate) fn storage_cast<'c, 'a>(
    e: &Emitter<'c, 'a>,
    memref: Value<'c, '_>,
) -> Option<Value<'c, 'a>> {
    let result = crate::lower_storage::storage_memref(memref.r#type())?;
    Some(
        e.val(
            OperationBuilder::new("lowp.storage_cast", e.loc())
                .add_operands(&[memref])
                .add_results(&[result])
                .build()
                .ok()?,
        ),
    )
}

/// The dialects the CPU lowerings create ops of.
pub(crate) fn loop_dialects() -> Vec<DialectHandle> {
    vec![
        DialectHandle::arith(),
        DialectHandle::memref(),
        DialectHandle::scf(),
        DialectHandle::func(),
        lowp_dialect::dialect_handle(),
        math_handle(),
        // SAFETY: the vector dialect's registration handle is a static descriptor.
        unsafe { DialectHandle::from_raw(mlir_sys::mlirGetDialectHandle__vector__()) },
    ]
}

impl<'c, 'a> Scaled<'c, 'a> {
    pub(crate) fn new(
        e: &Emitter<'c, 'a>,
        op: OperationRef<'c, 'a>,
        layout: ScaleLayout,
        scales: Value<'c, 'a>,
        global: Option<Value<'c, 'a>>,
    ) -> Result<Self, PassError> {
        let dtype = layout.scale_dtype();
        let scales = match dtype {
            ScaleDtype::F32 => scales,
            _ => storage_cast(e, scales)
                .ok_or_else(|| unsupported(op, "scales are not castable to bytes"))?,
        };
        Ok(Self {
            layout,
            scales,
            dtype,
            global,
        })
    }

    /// The (row, col) block of the scale of element (r, k): index values.
    pub(crate) fn scale_index(
        &self,
        e: &Emitter<'c, 'a>,
        r: Value<'c, 'a>,
        k: Value<'c, 'a>,
    ) -> [Value<'c, 'a>; 2] {
        let zero = e.index(0);
        match self.layout {
            ScaleLayout::PerTensor => [zero, zero],
            ScaleLayout::PerChannel => [r, zero],
            ScaleLayout::Mx { block } | ScaleLayout::Nvfp4 { block, .. } => {
                [r, e.divui(k, e.index(block as i64))]
            }
            ScaleLayout::Blockwise { rows, cols } => [
                e.divui(r, e.index(rows as i64)),
                e.divui(k, e.index(cols as i64)),
            ],
        }
    }

    /// The f32 value of the scale of element (r, k), global scale not included.
    pub(crate) fn block_value(
        &self,
        e: &Emitter<'c, 'a>,
        r: Value<'c, 'a>,
        k: Value<'c, 'a>,
    ) -> Value<'c, 'a> {
        let stored = self.block_stored(e, r, k);
        self.decode_stored(e, stored)
    }

    /// The scale of element (r, k) as stored (loaded; [`Scaled::decode_stored`] makes it
    /// the value): so that a kernel can load it early and decode it when it is needed.
    pub(crate) fn block_stored(
        &self,
        e: &Emitter<'c, 'a>,
        r: Value<'c, 'a>,
        k: Value<'c, 'a>,
    ) -> Value<'c, 'a> {
        let idx = self.scale_index(e, r, k);
        e.load(self.scales, &idx)
    }

    /// The f32 value of a scale as stored (a byte code also as the `i32` it extends to).
    pub(crate) fn decode_stored(
        &self,
        e: &Emitter<'c, 'a>,
        stored: Value<'c, 'a>,
    ) -> Value<'c, 'a> {
        self.decode_stored_lanes(e, stored, None)
    }

    /// [`Scaled::decode_stored`] of one scale (`lanes` none) or of a vector of `lanes`
    /// scales as stored (loaded by `vector.load` from `scales`), lane by lane.
    pub(crate) fn decode_stored_lanes(
        &self,
        e: &Emitter<'c, 'a>,
        stored: Value<'c, 'a>,
        lanes: Option<u64>,
    ) -> Value<'c, 'a> {
        let i32t = match lanes {
            Some(n) => e.vector_type(n, e.int_type(32)),
            None => e.int_type(32),
        };
        let word = || {
            if stored.r#type() == i32t {
                stored
            } else {
                e.extui(stored, i32t)
            }
        };
        match self.dtype {
            ScaleDtype::UE8M0 => codes::e8m0_decode_lanes(e, word(), lanes),
            ScaleDtype::UE4M3 => codes::ue4m3_decode_lanes(e, word(), lanes),
            _ => stored,
        }
    }

    pub(crate) fn global_value(&self, e: &Emitter<'c, 'a>) -> Option<Value<'c, 'a>> {
        self.global.map(|g| e.load(g, &[]))
    }
}

/// `(rows, cols)` of a memref as index values (cols doubled for packed storage).
pub(crate) fn dims<'c, 'a>(
    e: &Emitter<'c, 'a>,
    m: Value<'c, '_>,
    packed: bool,
) -> (Value<'c, 'a>, Value<'c, 'a>) {
    let rows = e.dim(m, 0);
    let cols = e.dim(m, 1);
    let cols = if packed {
        e.muli(cols, e.index(2))
    } else {
        cols
    };
    (rows, cols)
}

pub(crate) fn code_format<'c>(
    op: OperationRef<'c, '_>,
    memref: Value<'c, '_>,
) -> Result<(ScaledFormat, bool), PassError> {
    let t = MemRefType::try_from(memref.r#type())
        .map_err(|_| unsupported(op, "codes must be a memref"))?;
    let info = code_type_info(t.element())
        .ok_or_else(|| unsupported(op, "codes have no lowp element format"))?;
    Ok((info.format, info.packed))
}

pub(crate) fn operand<'c, 'a>(
    op: OperationRef<'c, 'a>,
    i: usize,
) -> Result<Value<'c, 'a>, PassError> {
    op.operand(i)
        .map_err(|_| unsupported(op, format!("missing operand #{i}")))
}

/// Absolute maximum of `input[r0..r1, c0..c1]`, NaN if any element is NaN or ±inf.
fn tile_amax<'c, 'a>(
    e: &Emitter<'c, 'a>,
    input: Value<'c, 'a>,
    (r0, r1): (Value<'c, 'a>, Value<'c, 'a>),
    (c0, c1): (Value<'c, 'a>, Value<'c, 'a>),
) -> Value<'c, 'a> {
    let one = e.index(1);
    let inits = [e.f32(0.0), e.bool(false)];
    let out = e.for_loop(r0, r1, one, &inits, |e, r, acc| {
        e.for_loop(c0, c1, one, acc, |e, c, acc| {
            let a = e.unary("math.absf", e.load(input, &[r, c]));
            let amax = e.maxnumf(acc[0], a);
            let bad = e.ori(acc[1], e.cmpf(CmpfPredicate::Uge, a, e.f32(f32::INFINITY)));
            vec![amax, bad]
        })
    });
    e.select(out[1], e.f32(f32::NAN), out[0])
}

fn expand_compute_scales<'c, 'a>(
    e: &Emitter<'c, 'a>,
    op: OperationRef<'c, 'a>,
) -> Result<(), PassError> {
    let input = operand(op, 0)?;
    let scales_memref = operand(op, 1)?;
    let global = if op.operand_count() > 2 {
        Some(operand(op, 2)?)
    } else {
        None
    };
    let layout = layout_attr_of(op, "layout")?;
    let format = op
        .attribute("format")
        .ok()
        .and_then(|a| TypeAttribute::try_from(a).ok())
        .and_then(|t| code_type_info(t.value()))
        .filter(|i| !i.packed)
        .ok_or_else(|| unsupported(op, "missing or unknown element 'format'"))?
        .format;
    let rounding = match op.attribute("rounding") {
        Ok(a) => rounding_of(a).ok_or_else(|| unsupported(op, "unknown 'rounding'"))?,
        Err(_) => ScaleRounding::RoundUp,
    };
    let scaled = Scaled::new(e, op, layout, scales_memref, global)?;
    let (rows, cols) = dims(e, input, false);
    let (zero, one) = (e.index(0), e.index(1));

    // NVFP4 two-level: the global scale first, from the whole tensor.
    let g = match scaled.global {
        Some(gm) => {
            let amax = tile_amax(e, input, (zero, rows), (zero, cols));
            let denom = format.max_finite() * ScaleDtype::UE4M3.max_representable();
            let g = e.divf(amax, e.f32(denom));
            let is_zero = e.cmpf(CmpfPredicate::Oeq, amax, e.f32(0.0));
            let g = e.select(is_zero, e.f32(1.0), g);
            e.store(g, gm, &[]);
            Some(g)
        }
        None => None,
    };

    // Tile extents: (rows per scale, cols per scale) and the scale grid.
    let (rb, kb, srows, scols) = match layout {
        ScaleLayout::PerTensor => (rows, cols, one, one),
        ScaleLayout::PerChannel => (one, cols, rows, one),
        ScaleLayout::Mx { block } | ScaleLayout::Nvfp4 { block, .. } => {
            let kb = e.index(block as i64);
            (one, kb, rows, ceil_div(e, cols, kb))
        }
        ScaleLayout::Blockwise { rows: tr, cols: tc } => {
            let (rb, kb) = (e.index(tr as i64), e.index(tc as i64));
            (rb, kb, ceil_div(e, rows, rb), ceil_div(e, cols, kb))
        }
    };
    e.for_loop(zero, srows, one, &[], |e, sr, _| {
        e.for_loop(zero, scols, one, &[], |e, sc, _| {
            let r0 = e.muli(sr, rb);
            let r1 = min_index(e, e.addi(r0, rb), rows);
            let c0 = e.muli(sc, kb);
            let c1 = min_index(e, e.addi(c0, kb), cols);
            let amax = tile_amax(e, input, (r0, r1), (c0, c1));
            let amax = match g {
                Some(g) => e.divf(amax, g),
                None => amax,
            };
            let s = codes::block_scale(e, amax, format, scaled.dtype, rounding);
            let stored = match scaled.dtype {
                ScaleDtype::UE8M0 => e.trunci(codes::e8m0_encode(e, s), e.int_type(8)),
                ScaleDtype::UE4M3 => e.trunci(codes::ue4m3_encode(e, s), e.int_type(8)),
                _ => s,
            };
            e.store(stored, scaled.scales, &[sr, sc]);
            vec![]
        });
        vec![]
    });
    Ok(())
}

/// The code (as `i32`) of element (r, k) of a storage-cast code memref: one code per
/// element, or two per byte, low nibble first, when `packed`.
pub(crate) fn load_code<'c, 'a>(
    e: &Emitter<'c, 'a>,
    bits: Value<'c, 'a>,
    packed: bool,
    width: u32,
    r: Value<'c, 'a>,
    k: Value<'c, 'a>,
) -> Value<'c, 'a> {
    let i32t = e.int_type(32);
    if packed {
        let two = e.index(2);
        let byte = e.extui(e.load(bits, &[r, e.divui(k, two)]), i32t);
        let shift = e.index_castui(e.muli(e.remui(k, two), e.index(4)), i32t);
        e.andi(e.shrui(byte, shift), e.i32(0xF))
    } else {
        // A code's byte may hold bits above its width, which decoding ignores.
        let byte = e.extui(e.load(bits, &[r, k]), i32t);
        if width < 8 {
            e.andi(byte, e.i32((1 << width) - 1))
        } else {
            byte
        }
    }
}

pub(crate) fn ceil_div<'c, 'a>(
    e: &Emitter<'c, 'a>,
    a: Value<'c, 'a>,
    b: Value<'c, 'a>,
) -> Value<'c, 'a> {
    let one = e.index(1);
    e.divui(e.subi(e.addi(a, b), one), b)
}

fn min_index<'c, 'a>(e: &Emitter<'c, 'a>, a: Value<'c, 'a>, b: Value<'c, 'a>) -> Value<'c, 'a> {
    e.minui(a, b)
}

fn expand_quantize<'c, 'a>(e: &Emitter<'c, 'a>, op: OperationRef<'c, 'a>) -> Result<(), PassError> {
    let n = op.operand_count();
    let input = operand(op, 0)?;
    let scales = operand(op, 1)?;
    let global = if n > 3 { Some(operand(op, 2)?) } else { None };
    let output = operand(op, n - 1)?;
    let layout = layout_attr_of(op, "layout")?;
    let (format, packed) = code_format(op, output)?;
    let scaled = Scaled::new(e, op, layout, scales, global)?;
    let bits = storage_cast(e, output)
        .ok_or_else(|| unsupported(op, "output is not castable to integers"))?;
    let (rows, cols) = dims(e, input, false);
    let (zero, one) = (e.index(0), e.index(1));
    let g = scaled.global_value(e);
    let storage = e.int_type(8);

    // One element's code (i32): x / (scale * global).
    let code_at = |e: &Emitter<'c, 'a>, r: Value<'c, 'a>, k: Value<'c, 'a>| {
        let s = scaled.block_value(e, r, k);
        let s = match g {
            Some(g) => e.mulf(s, g),
            None => s,
        };
        let x = e.divf(e.load(input, &[r, k]), s);
        codes::encode(e, format, x)
    };
    let step = if packed { e.index(2) } else { one };
    e.for_loop(zero, rows, one, &[], |e, r, _| {
        e.for_loop(zero, cols, step, &[], |e, k, _| {
            if packed {
                let lo = code_at(e, r, k);
                let hi = code_at(e, r, e.addi(k, one));
                let byte = e.ori(
                    e.andi(lo, e.i32(0xF)),
                    e.shli(e.andi(hi, e.i32(0xF)), e.i32(4)),
                );
                let col = e.divui(k, e.index(2));
                e.store(e.trunci(byte, storage), bits, &[r, col]);
            } else {
                let code = code_at(e, r, k);
                e.store(e.trunci(code, storage), bits, &[r, k]);
            }
            vec![]
        });
        vec![]
    });
    Ok(())
}

/// The decode table of `format` (one f32 per code: 16 for FP4, 64 for FP6, 256 for FP8,
/// built from `lowp-formats`), as a stack buffer filled from a constant at the entry of
/// `func`. A function pass may run on several functions at once and must not touch the
/// module, so the table lives in the function rather than in a `memref.global`.
pub(crate) fn decode_table<'c, 'a>(
    e: &Emitter<'c, 'a>,
    func: OperationRef<'c, 'a>,
    format: ScaledFormat,
) -> Result<Value<'c, 'a>, PassError> {
    scaled_decode_table(e, func, format, 0)
}

/// Every code's value times `2^pow2`, as f32 (`scaled_decode_table`'s entries).
pub(crate) fn scaled_decode_values(format: ScaledFormat, pow2: i32) -> Vec<f32> {
    let factor = (pow2 as f64).exp2();
    lowp_codec::decode_table(format)
        .iter()
        .map(|&v| (f64::from(v) * factor) as f32)
        .collect()
}

/// [`decode_table`] with every value times `2^pow2` (rounded as f32 products: the caller
/// checks they are exact, as [`scales_exactly`] does).
pub(crate) fn scaled_decode_table<'c, 'a>(
    e: &Emitter<'c, 'a>,
    func: OperationRef<'c, 'a>,
    format: ScaledFormat,
    pow2: i32,
) -> Result<Value<'c, 'a>, PassError> {
    let values = scaled_decode_values(format, pow2);
    let entries = format.code_count() as usize;
    let vector = Type::vector(&[entries as u64], Type::float32(e.ctx()));
    // SAFETY: an `entries`-element f32 vector type and as many floats.
    let dense = unsafe {
        Attribute::from_raw(mlir_sys::mlirDenseElementsAttrFloatGet(
            vector.to_raw(),
            entries as isize,
            values.as_ptr(),
        ))
    };
    entry_table(e, func, dense)
}

/// Whether every value of `format` times `2^pow2` is exactly an f32 and, where finite and
/// nonzero, a normal one (so that the product's rounding, FTZ or DAZ change nothing).
pub(crate) fn scales_exactly(format: ScaledFormat, pow2: i32) -> bool {
    let factor = (pow2 as f64).exp2();
    (0..format.code_count()).all(|c| {
        let v = f64::from(format.decode(c as u8));
        let w = v * factor;
        !v.is_finite()
            || v == 0.0
            || (w.abs() >= f64::from(f32::MIN_POSITIVE) && w.abs() <= f64::from(f32::MAX))
    })
}

/// A table of `i32` values in a stack buffer filled at the function's entry (the byte
/// kernel's code -> integer tables).
pub(crate) fn int_table<'c, 'a>(
    e: &Emitter<'c, 'a>,
    func: OperationRef<'c, 'a>,
    values: &[i32],
) -> Result<Value<'c, 'a>, PassError> {
    let vector = Type::vector(&[values.len() as u64], e.int_type(32));
    // SAFETY: a `values.len()`-element i32 vector type and as many integers.
    let dense = unsafe {
        Attribute::from_raw(mlir_sys::mlirDenseElementsAttrInt32Get(
            vector.to_raw(),
            values.len() as isize,
            values.as_ptr(),
        ))
    };
    entry_table(e, func, dense)
}

/// A stack buffer holding the 1-D vector constant `dense`, allocated and filled at the
/// entry of `func` (so that loops index it without rebuilding it).
fn entry_table<'c, 'a>(
    e: &Emitter<'c, 'a>,
    func: OperationRef<'c, 'a>,
    dense: Attribute<'c>,
) -> Result<Value<'c, 'a>, PassError> {
    let ctx = e.ctx();
    let entry = func
        .region(0)
        .ok()
        .and_then(|r| r.first_block())
        .and_then(|b| b.first_operation())
        .ok_or_else(|| unsupported(func, "function has no body"))?;
    let at_entry =
        Emitter::before(ctx, entry).ok_or_else(|| unsupported(func, "function has no body"))?;
    let vector = dense.r#type();
    // SAFETY: reading a live vector type.
    let (element, entries) = unsafe {
        let raw = vector.to_raw();
        (
            Type::from_raw(mlir_sys::mlirShapedTypeGetElementType(raw)),
            mlir_sys::mlirShapedTypeGetDimSize(raw, 0) as i64,
        )
    };
    let constant = at_entry.val(melior::dialect::arith::constant(ctx, dense, e.loc()));
    let table = at_entry.alloca(element, entries);
    at_entry.vstore(constant, table, &[at_entry.index(0)]);
    Ok(table)
}

fn expand_dequantize<'c, 'a>(
    e: &Emitter<'c, 'a>,
    op: OperationRef<'c, 'a>,
    decode: Decode,
    func: OperationRef<'c, 'a>,
) -> Result<(), PassError> {
    let n = op.operand_count();
    let codes_memref = operand(op, 0)?;
    let scales = operand(op, 1)?;
    let global = if n > 3 { Some(operand(op, 2)?) } else { None };
    let output = operand(op, n - 1)?;
    let layout = layout_attr_of(op, "layout")?;
    let (format, packed) = code_format(op, codes_memref)?;
    let scaled = Scaled::new(e, op, layout, scales, global)?;
    let bits = storage_cast(e, codes_memref)
        .ok_or_else(|| unsupported(op, "codes are not castable to integers"))?;
    let table = match decode {
        Decode::Table => Some(decode_table(e, func, format)?),
        Decode::Bits => None,
    };
    let (rows, cols) = dims(e, output, false);
    let (zero, one) = (e.index(0), e.index(1));
    let g = scaled.global_value(e);
    e.for_loop(zero, rows, one, &[], |e, r, _| {
        e.for_loop(zero, cols, one, &[], |e, k, _| {
            let code = load_code(e, bits, packed, format.bit_width(), r, k);
            let v = match table {
                Some(t) => {
                    let idx = e.index_castui(code, e.index_type());
                    e.load(t, &[idx])
                }
                None => codes::decode(e, format, code),
            };
            let v = e.mulf(v, scaled.block_value(e, r, k));
            let v = match g {
                Some(g) => e.mulf(v, g),
                None => v,
            };
            e.store(v, output, &[r, k]);
            vec![]
        });
        vec![]
    });
    Ok(())
}
