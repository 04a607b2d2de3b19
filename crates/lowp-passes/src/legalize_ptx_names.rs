//! `lowp-legalize-ptx-names`: rename the symbols of kernel modules (`gpu.module`) that PTX
//! cannot spell, and every reference to them, so that the NVPTX backend can print them.
//!
//! PTX identifiers are letters, digits, `_` and `$`, not starting with a digit (PTX ISA,
//! "Identifiers"). MLIR symbols may be any string: `gpu-kernel-outlining` names a kernel
//! after its function (`@"layer.0"` gives `@"layer.0_kernel"`), and LLVM's NVPTX backend
//! stops at such a name with "Symbol name with unsupported characters", naming no symbol.
//!
//! Before:
//! ```mlir
//! gpu.launch_func @"layer.0_kernel"::@"layer.0_kernel" blocks in (...) threads in (...)
//! gpu.module @"layer.0_kernel" {
//!   gpu.func @"layer.0_kernel"() kernel { ... }
//! }
//! ```
//! After:
//! ```mlir
//! gpu.launch_func @"layer.0_kernel"::@layer_0_kernel blocks in (...) threads in (...)
//! gpu.module @"layer.0_kernel" {
//!   gpu.func @layer_0_kernel() kernel { ... }
//! }
//! ```
//! Each character PTX does not take becomes `_`, a leading digit gets a `_` in front, and
//! a name already taken in the module gets `_1`, `_2`, ... A remark at each renamed symbol
//! gives the new name (the name a runtime looks the kernel up by). Symbols are renamed in
//! every `gpu.module` (its own name stays: PTX never prints it; so do the declarations of
//! LLVM's intrinsics, `llvm.*`, while a definition so named is renamed: LLVM refuses it).
//! References inside the module follow, and so do references by path (`@module::@symbol`,
//! as `gpu.launch_func` names its kernel) in any op's attributes, in arrays and
//! dictionaries too, and longer paths (`@outer::@module::@symbol`) alike: the path's first
//! name is found from the op as MLIR finds it (the closest scope holding one of that name),
//! each further name in the body of the one before.
//! Runs on `builtin.module`, after `gpu-kernel-outlining`. No options.

use std::collections::HashSet;

use melior::dialect::DialectHandle;
use melior::ir::attribute::StringAttribute;
use melior::ir::operation::{OperationLike, OperationMutLike, WalkOrder, WalkResult};
use melior::ir::{BlockLike, OperationRef, RegionLike};

use crate::ir::{is_definition, string_ref, string_value, text_of};
use crate::registry::{PassDef, PassOptions};
use crate::PassError;

/// The pass definition.
pub const PASS: PassDef = PassDef {
    argument: "lowp-legalize-ptx-names",
    name: "LowpLegalizePtxNames",
    description: "Rename kernel-module symbols PTX cannot spell (letters, digits, _ and $, \
                  no leading digit), and their references",
    op_name: Some("builtin.module"),
    options: &[],
    dependent_dialects: || vec![DialectHandle::gpu()],
    run,
};

/// Whether PTX can spell `name` as an identifier.
pub fn is_ptx_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    let ok = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '$';
    match chars.next() {
        Some(c) if c.is_ascii_alphabetic() => chars.all(ok),
        // `_` and `$` alone are not identifiers.
        Some('_' | '$') => name.len() > 1 && chars.all(ok),
        _ => false,
    }
}

/// `name` with what PTX cannot spell replaced: other characters by `_`, a leading digit
/// (or an empty or lone `_` / `$` name) behind a `_`.
pub fn ptx_identifier(name: &str) -> String {
    let body: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '$' {
                c
            } else {
                '_'
            }
        })
        .collect();
    let mut name = body;
    while !is_ptx_identifier(&name) {
        name.insert(0, '_');
    }
    name
}

fn string_attr(op: OperationRef, name: &str) -> Option<String> {
    string_value(op.attribute(name).ok()?)
}

fn run<'c, 'a>(root: OperationRef<'c, 'a>, _: &PassOptions) -> Result<(), PassError> {
    let ctx_ref = root.context();
    // SAFETY: the context outlives the pass run, and `ctx_ref` outlives `ctx`.
    let ctx = unsafe { ctx_ref.to_ref() };
    let mut modules = Vec::new();
    root.walk(WalkOrder::PreOrder, |op| {
        if op.name().as_string_ref().as_str() == Ok("gpu.module") {
            modules.push(op.to_raw());
        }
        WalkResult::Advance
    });
    // (module op, old name, new name) of every renamed symbol.
    let mut renamed = Vec::new();
    for raw in modules {
        // SAFETY: collected from the live IR above; renaming leaves the ops in place.
        let module = unsafe { OperationRef::from_raw(raw) };
        let Some(body) = module.region(0).ok().and_then(|r| r.first_block()) else {
            continue;
        };
        let mut symbols = Vec::new();
        let mut op = body.first_operation();
        while let Some(o) = op {
            if let Some(name) = string_attr(o, "sym_name") {
                symbols.push((o.to_raw(), name));
            }
            op = o.next_in_block();
        }
        let mut taken: HashSet<String> = symbols.iter().map(|(_, n)| n.clone()).collect();
        for (raw, old) in symbols {
            // LLVM's intrinsics (`llvm.nvvm.*` declarations) are not symbols of the PTX; a
            // definition so named is not an intrinsic, and LLVM refuses it.
            // SAFETY: a live symbol op of this module.
            let symbol = unsafe { OperationRef::from_raw(raw) };
            let declaration = symbol.region_count() > 0 && !is_definition(symbol);
            let intrinsic = old.starts_with("llvm.") && declaration;
            if is_ptx_identifier(&old) || intrinsic {
                continue;
            }
            let base = ptx_identifier(&old);
            let new = std::iter::once(base.clone())
                .chain((1..).map(|i| format!("{base}_{i}")))
                .find(|n| !taken.contains(n))
                .expect("an unused name");
            taken.insert(new.clone());
            // SAFETY: a live symbol op of this module; its uses inside the module follow.
            unsafe {
                let mut symbol = melior::ir::operation::OperationRefMut::from_raw(raw);
                symbol.set_attribute("sym_name", StringAttribute::new(ctx, &new).into());
                let _ = mlir_sys::mlirSymbolTableReplaceAllSymbolUses(
                    string_ref(&old),
                    string_ref(&new),
                    module.to_raw(),
                );
                crate::matrix_kernel::remark(
                    OperationRef::from_raw(raw),
                    &format!("renamed @{old:?} to @{new}: PTX cannot spell the old name"),
                );
            }
            renamed.push((module.to_raw(), old, new));
        }
    }
    if renamed.is_empty() {
        return Ok(());
    }
    // References by path (@module::@symbol, @outer::@module::@symbol): gpu.launch_func's
    // kernel, and any op's attribute (in arrays and dictionaries too) that names a renamed
    // symbol so, the module found as MLIR finds it (see `path_scope`).
    let mut ops = Vec::new();
    root.walk(WalkOrder::PreOrder, |op| {
        ops.push(op.to_raw());
        WalkResult::Advance
    });
    for raw in ops {
        // SAFETY: a live op collected above; its attributes are read, then replaced by
        // name with attributes built in the live context.
        unsafe {
            let op = OperationRef::from_raw(raw);
            let lookup = |scopes: &[String], leaf: &str| -> Option<String> {
                let found = path_scope(op, scopes)?;
                renamed
                    .iter()
                    .find(|(m, old, _)| m.ptr == found.ptr && old == leaf)
                    .map(|(_, _, new)| new.clone())
            };
            for i in 0..mlir_sys::mlirOperationGetNumAttributes(raw) {
                let named = mlir_sys::mlirOperationGetAttribute(raw, i);
                if let Some(new) = renamed_refs(ctx.to_raw(), named.attribute, &lookup) {
                    mlir_sys::mlirOperationSetAttributeByName(
                        raw,
                        mlir_sys::mlirIdentifierStr(named.name),
                        new,
                    );
                }
            }
        }
    }
    Ok(())
}

/// The op whose symbol a path reference in `op` ends in (`@a::@b::@leaf` gives @b, the
/// one named `scopes` = [a, b]): its first name is a child of the closest op around `op`
/// whose body holds one so named, each further name a child of the one before.
fn path_scope(op: OperationRef, scopes: &[String]) -> Option<mlir_sys::MlirOperation> {
    let (first, rest) = scopes.split_first()?;
    // SAFETY: walking up the parents of a live op.
    let mut found = unsafe {
        let mut p = mlir_sys::mlirOperationGetParentOperation(op.to_raw());
        loop {
            if p.ptr.is_null() {
                return None;
            }
            if let Some(c) = child_symbol(OperationRef::from_raw(p), first) {
                break c;
            }
            p = mlir_sys::mlirOperationGetParentOperation(p);
        }
    };
    for name in rest {
        // SAFETY: `found` is a live op of the IR, found above.
        found = child_symbol(unsafe { OperationRef::from_raw(found) }, name)?;
    }
    Some(found)
}

/// The op named `name` (by `sym_name`) in the first block of `parent`'s first region.
fn child_symbol(parent: OperationRef, name: &str) -> Option<mlir_sys::MlirOperation> {
    let body = (parent.region_count() > 0)
        .then(|| parent.region(0).ok().and_then(|r| r.first_block()))
        .flatten()?;
    let mut child = body.first_operation();
    while let Some(c) = child {
        if string_attr(c, "sym_name").as_deref() == Some(name) {
            return Some(c.to_raw());
        }
        child = c.next_in_block();
    }
    None
}

/// `attr` with its path references to renamed symbols (`@module::@old` or longer, as
/// `lookup(path before the leaf, old)` gives the new name) replaced, looking into arrays
/// and dictionaries; `None` where nothing changes.
///
/// # Safety
/// `ctx` and `attr` must be live.
unsafe fn renamed_refs(
    ctx: mlir_sys::MlirContext,
    attr: mlir_sys::MlirAttribute,
    lookup: &dyn Fn(&[String], &str) -> Option<String>,
) -> Option<mlir_sys::MlirAttribute> {
    // SAFETY: per this function's contract; each accessor after its kind is checked.
    unsafe {
        if mlir_sys::mlirAttributeIsASymbolRef(attr) {
            let n = mlir_sys::mlirSymbolRefAttrGetNumNestedReferences(attr);
            if n == 0 {
                return None;
            }
            let mut nested: Vec<_> = (0..n)
                .map(|i| mlir_sys::mlirSymbolRefAttrGetNestedReference(attr, i))
                .collect();
            let root = text_of(mlir_sys::mlirSymbolRefAttrGetRootReference(attr));
            let mut scopes = vec![root.clone()];
            scopes.extend(
                nested[..nested.len() - 1]
                    .iter()
                    .map(|&r| text_of(mlir_sys::mlirFlatSymbolRefAttrGetValue(r))),
            );
            let leaf = text_of(mlir_sys::mlirSymbolRefAttrGetLeafReference(attr));
            let new = lookup(&scopes, &leaf)?;
            *nested.last_mut()? = mlir_sys::mlirFlatSymbolRefAttrGet(ctx, string_ref(&new));
            return Some(mlir_sys::mlirSymbolRefAttrGet(
                ctx,
                string_ref(&root),
                nested.len() as isize,
                nested.as_ptr(),
            ));
        }
        if mlir_sys::mlirAttributeIsAArray(attr) {
            let n = mlir_sys::mlirArrayAttrGetNumElements(attr);
            let old: Vec<_> = (0..n)
                .map(|i| mlir_sys::mlirArrayAttrGetElement(attr, i))
                .collect();
            let new: Vec<_> = old.iter().map(|&a| renamed_refs(ctx, a, lookup)).collect();
            if new.iter().all(Option::is_none) {
                return None;
            }
            let elements: Vec<_> = old.iter().zip(new).map(|(&o, n)| n.unwrap_or(o)).collect();
            return Some(mlir_sys::mlirArrayAttrGet(
                ctx,
                elements.len() as isize,
                elements.as_ptr(),
            ));
        }
        if mlir_sys::mlirAttributeIsADictionary(attr) {
            let n = mlir_sys::mlirDictionaryAttrGetNumElements(attr);
            let old: Vec<_> = (0..n)
                .map(|i| mlir_sys::mlirDictionaryAttrGetElement(attr, i))
                .collect();
            let new: Vec<_> = old
                .iter()
                .map(|e| renamed_refs(ctx, e.attribute, lookup))
                .collect();
            if new.iter().all(Option::is_none) {
                return None;
            }
            let elements: Vec<_> = old
                .iter()
                .zip(new)
                .map(|(e, n)| mlir_sys::MlirNamedAttribute {
                    name: e.name,
                    attribute: n.unwrap_or(e.attribute),
                })
                .collect();
            return Some(mlir_sys::mlirDictionaryAttrGet(
                ctx,
                elements.len() as isize,
                elements.as_ptr(),
            ));
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::{is_ptx_identifier, ptx_identifier};

    #[test]
    fn names_ptx_cannot_spell_are_mended() {
        for ok in ["k", "scaled_matmul_kernel", "_k", "$k", "a$1", "K9"] {
            assert!(is_ptx_identifier(ok), "{ok}");
            assert_eq!(ptx_identifier(ok), ok);
        }
        for (bad, mended) in [
            ("layer.0_kernel", "layer_0_kernel"),
            ("my-kernel", "my_kernel"),
            ("0k", "_0k"),
            ("", "__"),
            ("_", "__"),
            ("$", "_$"),
            ("mx fp4$x", "mx_fp4$x"),
            ("ü", "__"),
        ] {
            assert!(!is_ptx_identifier(bad), "{bad}");
            assert_eq!(ptx_identifier(bad), mended, "{bad}");
            assert!(is_ptx_identifier(&ptx_identifier(bad)));
        }
    }
}
