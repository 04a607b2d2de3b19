//! `lowp-lower-storage`: give every memref of codes the type of its storage integers and
//! remove `lowp.storage_cast`, so that the upstream LLVM conversions see only builtin
//! integer memrefs.
//!
//! Before:
//! ```mlir
//! func.func @f(%q: memref<4x8x!lowp.mf<e3m0>>, %s: memref<4x1xf8E8M0FNU>) {
//!   %bits = lowp.storage_cast %q : memref<4x8x!lowp.mf<e3m0>> to memref<4x8xi8>
//!   ...
//! ```
//! After:
//! ```mlir
//! func.func @f(%q: memref<4x8xi8>, %s: memref<4x1xi8>) {
//!   ... (uses of %bits now use %q)
//! ```
//! Element codes, `!lowp.packed<...>` and `f8E8M0FNU` become `i8`: the same bytes in
//! memory (one code per byte, two for packed), so callers pass the same buffers. (A code
//! narrower than a byte is not an `iN`: LLVM leaves an `iN` load of a byte with higher
//! bits set undefined, where decoding ignores those bits.) Function signatures, block
//! arguments and op results are retyped, and so are `memref.global`s of codes (a
//! bufferized constant of codes: a dense value keeps its bytes, one a code); a
//! `lowp.storage_cast` becomes the identity. A tensor of codes left (a partial
//! bufferization) is refused at its op. A lowp op other than `lowp.storage_cast` (one not
//! lowered, or inside a `gpu.func`, which no lowering takes), or an op that still computes
//! on code-typed values (a `memref.load` of `f4E2M1FN`), makes the pass fail with a
//! diagnostic at the op: lower them first. So does a function named `malloc`, `free` or
//! `aligned_alloc` in a module that allocates: the LLVM lowering's calls would miss C's.
//!
//! Runs on `builtin.module`. No options.

use lowp_dialect::storage_type;
use melior::dialect::DialectHandle;
use melior::ir::attribute::{AttributeLike, TypeAttribute};
use melior::ir::operation::{OperationLike, OperationMutLike, WalkOrder, WalkResult};
use melior::ir::r#type::{FunctionType, MemRefType};
use melior::ir::{
    BlockLike, OperationRef, RegionLike, ShapedTypeLike, Type, TypeLike, Value, ValueLike,
};

use crate::expand_quantize::unsupported;
use crate::registry::{PassDef, PassOptions};
use crate::PassError;

/// The pass definition.
pub const PASS: PassDef = PassDef {
    argument: "lowp-lower-storage",
    name: "LowpLowerStorage",
    description: "Retype memrefs of lowp element codes and E8M0 scales to memrefs of their \
                  storage integers and remove lowp.storage_cast",
    op_name: Some("builtin.module"),
    options: &[],
    dependent_dialects: || vec![DialectHandle::memref(), DialectHandle::func()],
    run,
};

/// The storage type of a memref of codes (same shape, layout and memory space), or `None`.
pub fn storage_memref<'c>(t: Type<'c>) -> Option<Type<'c>> {
    let m = MemRefType::try_from(t).ok()?;
    let storage = storage_type(m.element())?;
    // SAFETY: building a memref type from a live one's parts.
    Some(unsafe {
        let raw = m.to_raw();
        let rank = mlir_sys::mlirShapedTypeGetRank(raw);
        let shape: Vec<i64> = (0..rank)
            .map(|i| mlir_sys::mlirShapedTypeGetDimSize(raw, i as isize))
            .collect();
        Type::from_raw(mlir_sys::mlirMemRefTypeGet(
            storage.to_raw(),
            rank as isize,
            shape.as_ptr(),
            mlir_sys::mlirMemRefTypeGetLayout(raw),
            mlir_sys::mlirMemRefTypeGetMemorySpace(raw),
        ))
    })
}

fn retype(v: Value) {
    if let Some(t) = storage_memref(v.r#type()) {
        v.set_type(t);
    }
}

/// The first lowp op other than `lowp.storage_cast` in `module`, as an error at it: the
/// lowerings run first (their memrefs of codes would no longer verify after retyping).
fn unlowered(module: OperationRef) -> Option<PassError> {
    let mut found = None;
    module.walk(WalkOrder::PreOrder, |op| {
        let name = op.name();
        let name = name.as_string_ref().as_str().unwrap_or("");
        if !name.starts_with("lowp.") || name == "lowp.storage_cast" {
            return WalkResult::Advance;
        }
        let nested = crate::ir::enclosing(op, "builtin.module")
            .filter(|m| m.to_raw().ptr != module.to_raw().ptr);
        let reason = if let Some(inner) = nested {
            let name = inner
                .attribute("sym_name")
                .ok()
                .and_then(crate::ir::string_value)
                .map_or("a nested module".into(), |n| {
                    format!("the nested module @{n}")
                });
            format!(
                "it is in {name}: the pipeline's function passes lower the functions of \
                 the module it runs on, not those of modules nested in it (run it on the \
                 nested module, or give one module a file)"
            )
        } else if crate::ir::enclosing(op, "gpu.func").is_some() {
            "it is inside a kernel (gpu.func): lowp-to-nvvm and lowp-to-rocdl lower lowp ops \
             in host functions (func.func), each into kernels of its own, and none lowers \
             one inside a kernel"
                .to_string()
        } else {
            "lowp ops are lowered before their memrefs are retyped (lowp-to-loops, \
             lowp-to-nvvm, lowp-to-rocdl, lowp-expand-quantize, on func.func)"
                .to_string()
        };
        found = Some(unsupported(op, format!("not lowered: {reason}")));
        WalkResult::Interrupt
    });
    found
}

/// The first op with a tensor of codes among its operands or results, as an error at it:
/// the pass retypes memrefs, and a tensor of codes left beside them (a partial
/// bufferization's `bufferization.to_buffer`, say) would no longer match its buffer.
fn code_tensor(module: OperationRef) -> Option<PassError> {
    let mut found = None;
    module.walk(WalkOrder::PreOrder, |op| {
        let types = (0..op.operand_count())
            .filter_map(|i| op.operand(i).ok().map(|v| v.r#type()))
            .chain(op.results().map(|r| r.r#type()));
        for t in types {
            let element = melior::ir::r#type::RankedTensorType::try_from(t)
                .ok()
                .map(|t| t.element());
            if element.is_some_and(|e| storage_type(e).is_some()) {
                found = Some(unsupported(
                    op,
                    format!(
                        "a tensor of lowp codes ({t}) is left; lowp-lower-storage retypes \
                         memrefs: bufferize all of it first (one-shot-bufferize\
                         {{bufferize-function-boundaries \
                         function-boundary-type-conversion=identity-layout-map}})"
                    ),
                ));
                return WalkResult::Interrupt;
            }
        }
        WalkResult::Advance
    });
    found
}

/// C's allocation functions, which `finalize-memref-to-llvm` calls for `memref.alloc` and
/// `memref.dealloc` (`aligned_alloc` with `use-aligned-alloc`).
const C_ALLOCATORS: [&str; 3] = ["malloc", "free", "aligned_alloc"];

/// A function of `module` named after one of [`C_ALLOCATORS`] while the module allocates
/// (lowp-to-loops' buffers, say), as an error at it: the LLVM lowering would find the name
/// taken, declare `@malloc_0` instead, and the JIT or linker would find no such symbol.
fn allocator_name(module: OperationRef) -> Option<PassError> {
    let mut allocates = false;
    module.walk(WalkOrder::PreOrder, |op| {
        let name = op.name();
        allocates = matches!(
            name.as_string_ref().as_str(),
            Ok("memref.alloc" | "memref.dealloc")
        );
        if allocates {
            WalkResult::Interrupt
        } else {
            WalkResult::Advance
        }
    });
    if !allocates {
        return None;
    }
    let body = module.region(0).ok()?.first_block()?;
    let mut op = body.first_operation();
    while let Some(o) = op {
        let name = o
            .attribute("sym_name")
            .ok()
            .and_then(crate::ir::string_value)
            .filter(|n| C_ALLOCATORS.contains(&n.as_str()));
        if let Some(name) = name {
            return Some(unsupported(
                o,
                format!(
                    "@{name} takes the name of C's {name}, which the module's memref.alloc \
                     and memref.dealloc (lowp-to-loops' buffers among them) are lowered to \
                     call: rename the function"
                ),
            ));
        }
        op = o.next_in_block();
    }
    None
}

/// Retype a `memref.global` of codes (a bufferized constant of codes): its type, and a
/// dense initial value as the same bytes in `i8` (the elements of a dense attribute of a
/// type up to 8 bits are stored a byte each).
fn retype_global<'c>(op: OperationRef<'c, '_>) -> Result<(), PassError> {
    let Some(storage) = op
        .attribute("type")
        .ok()
        .and_then(|a| TypeAttribute::try_from(a).ok())
        .and_then(|t| storage_memref(t.value()))
    else {
        return Ok(());
    };
    let refuse = |what: &str| {
        unsupported(
            op,
            format!(
                "a global of lowp codes whose initial value is {what}; a dense constant of \
                 codes (dense<...>) is retyped to its storage bytes, other values are not"
            ),
        )
    };
    // SAFETY: a live op, retyped in place.
    let mut global = unsafe { melior::ir::operation::OperationRefMut::from_raw(op.to_raw()) };
    if let Ok(init) = op.attribute("initial_value") {
        let raw = init.to_raw();
        // SAFETY: C API queries on a live attribute; the new attribute copies the bytes.
        let bytes = unsafe {
            if mlir_sys::mlirAttributeIsAUnit(raw) {
                None
            } else if !mlir_sys::mlirAttributeIsADenseElements(raw) {
                return Err(refuse("not a dense constant"));
            } else {
                let shaped = mlir_sys::mlirAttributeGetType(raw);
                let rank = mlir_sys::mlirShapedTypeGetRank(shaped);
                let shape: Vec<i64> = (0..rank)
                    .map(|i| mlir_sys::mlirShapedTypeGetDimSize(shaped, i as isize))
                    .collect();
                let i8t = mlir_sys::mlirIntegerTypeGet(mlir_sys::mlirAttributeGetContext(raw), 8);
                let tensor = mlir_sys::mlirRankedTensorTypeGet(
                    rank as isize,
                    shape.as_ptr(),
                    i8t,
                    mlir_sys::mlirAttributeGetNull(),
                );
                let data = mlir_sys::mlirDenseElementsAttrGetRawData(raw) as *const u8;
                let new = if mlir_sys::mlirDenseElementsAttrIsSplat(raw) {
                    mlir_sys::mlirDenseElementsAttrSplatGet(
                        tensor,
                        mlir_sys::mlirIntegerAttrGet(i8t, *data as i64),
                    )
                } else {
                    let n = mlir_sys::mlirElementsAttrGetNumElements(raw) as usize;
                    mlir_sys::mlirDenseElementsAttrRawBufferGet(tensor, n, data as *const _)
                };
                if new.ptr.is_null() {
                    return Err(refuse("not stored a byte a code"));
                }
                Some(melior::ir::Attribute::from_raw(new))
            }
        };
        if let Some(bytes) = bytes {
            global.set_attribute("initial_value", bytes);
        }
    }
    global.set_attribute("type", TypeAttribute::new(storage).into());
    Ok(())
}

fn run<'c, 'a>(module: OperationRef<'c, 'a>, _: &PassOptions) -> Result<(), PassError> {
    // `to_ref` borrows the ContextRef itself: keep it alive for the whole run.
    let ctx_ref = module.context();
    // SAFETY: the context outlives the pass run, and `ctx_ref` outlives `ctx`.
    let ctx = unsafe { ctx_ref.to_ref() };
    if let Some(err) = unlowered(module)
        .or_else(|| code_tensor(module))
        .or_else(|| allocator_name(module))
    {
        return Err(err);
    }
    let mut casts = Vec::new();
    let mut funcs = Vec::new();
    let mut globals = Vec::new();
    module.walk(WalkOrder::PreOrder, |op| {
        for r in op.results() {
            retype(r.into());
        }
        for region in op.regions() {
            let mut block = region.first_block();
            while let Some(b) = block {
                for i in 0..b.argument_count() {
                    retype(b.argument(i).expect("argument in range").into());
                }
                block = b.next_in_region();
            }
        }
        match op.name().as_string_ref().as_str() {
            Ok("lowp.storage_cast") => casts.push(op.to_raw()),
            Ok("memref.global") => globals.push(op.to_raw()),
            // Functions of any dialect with a builtin signature (func.func, gpu.func):
            // their type follows their retyped arguments.
            _ if op.has_attribute("function_type") => funcs.push(op.to_raw()),
            _ => {}
        }
        WalkResult::Advance
    });
    for raw in casts {
        // SAFETY: a live storage_cast collected above; after retyping, its source has the
        // result's type, so the uses can move over before the op is erased.
        unsafe {
            let op = OperationRef::from_raw(raw);
            let source = mlir_sys::mlirOperationGetOperand(raw, 0);
            let result = mlir_sys::mlirOperationGetResult(raw, 0);
            if !mlir_sys::mlirTypeEqual(
                mlir_sys::mlirValueGetType(source),
                mlir_sys::mlirValueGetType(result),
            ) {
                return Err(unsupported(op, "source is not a memref of codes"));
            }
            mlir_sys::mlirValueReplaceAllUsesOfWith(result, source);
            mlir_sys::mlirOperationDestroy(raw);
        }
    }
    for raw in globals {
        // SAFETY: a live memref.global collected above.
        retype_global(unsafe { OperationRef::from_raw(raw) })?;
    }
    for raw in funcs {
        // SAFETY: a live function op collected above.
        let mut func = unsafe { melior::ir::operation::OperationRefMut::from_raw(raw) };
        let Ok(attr) = func.attribute("function_type") else {
            continue;
        };
        let Ok(t) = TypeAttribute::try_from(attr) else {
            continue;
        };
        let Ok(ft) = FunctionType::try_from(t.value()) else {
            continue;
        };
        let map = |t: Type<'c>| storage_memref(t).unwrap_or(t);
        let inputs: Vec<Type> = (0..ft.input_count())
            .map(|i| map(ft.input(i).expect("input")))
            .collect();
        let results: Vec<Type> = (0..ft.result_count())
            .map(|i| map(ft.result(i).expect("result")))
            .collect();
        let new = FunctionType::new(ctx, &inputs, &results);
        func.set_attribute("function_type", TypeAttribute::new(new.into()).into());
    }
    if !module.verify() {
        return Err(unsupported(
            module,
            "code-typed values are still computed on after retyping their memrefs to \
             storage integers; lower the lowp ops first (e.g. lowp-expand-quantize)",
        ));
    }
    Ok(())
}
