//! `lowp-check-allocations`: make host code's heap allocations check what they get. C's
//! `malloc` and `aligned_alloc` return null where memory runs out, and the code that
//! `finalize-memref-to-llvm` makes of a `memref.alloc` goes on with the null pointer: a
//! segfault at the first store, or a store into memory that is not its own where the
//! offset is large. Each such call becomes a call of a checking function that, on null
//! for a size above zero, prints `FILE:LINE:COL: error: out of memory: allocating N bytes
//! failed` (the allocating op's location) to standard error and ends the program with
//! status 1 (`_exit`: the program's state is not to be trusted past it).
//!
//! Before:
//! ```mlir
//! llvm.func @malloc(i64) -> !llvm.ptr
//! llvm.func @f(%n: i64) {
//!   %p = llvm.call @malloc(%n) : (i64) -> !llvm.ptr loc("f.mlir":2:8)
//!   ...
//! ```
//! After:
//! ```mlir
//! llvm.mlir.global internal constant @lowp_alloc_site("f.mlir:2:8\00")
//! llvm.func internal @lowp_checked_malloc(%n: i64, %site: !llvm.ptr) -> !llvm.ptr {
//!   %p = llvm.call @malloc(%n) : (i64) -> !llvm.ptr
//!   (null and %n > 0: llvm.call @dprintf(2, "%s: error: out of memory: ...", %site, %n),
//!    llvm.call @_exit(1), llvm.unreachable; else llvm.return %p)
//! }
//! llvm.func @f(%n: i64) {
//!   %site = llvm.mlir.addressof @lowp_alloc_site : !llvm.ptr
//!   %p = llvm.call @lowp_checked_malloc(%n, %site) : (i64, !llvm.ptr) -> !llvm.ptr
//!   ...
//! ```
//! `aligned_alloc(alignment, size)` alike (`@lowp_checked_aligned_alloc`); calls of other
//! types (a module's own declaration) are left as they are. One global per distinct
//! location. Calls in kernel modules (`gpu.module`: device code) are left alone.
//! `@dprintf` and `@_exit` are declared where the module does not declare them; a module
//! that defines a function of either name, or declares one with another type, is refused
//! at it. The new symbols take names the module leaves free (`_1`, `_2`, ... appended).
//! Runs on `builtin.module` after the conversions to the LLVM dialect (the CPU pipelines
//! run it before `reconcile-unrealized-casts`). No options.

use std::collections::{BTreeMap, HashSet};

use melior::dialect::DialectHandle;
use melior::ir::attribute::{FlatSymbolRefAttribute, StringAttribute, TypeAttribute};
use melior::ir::operation::{
    OperationBuilder, OperationLike, OperationMutLike, WalkOrder, WalkResult,
};
use melior::ir::r#type::IntegerType;
use melior::ir::{
    Attribute, Block, BlockLike, Identifier, Location, OperationRef, Region, RegionLike, Type,
    Value, ValueLike,
};
use melior::Context;

use crate::expand_quantize::unsupported;
use crate::ir::{is_definition, location_text, string_value};
use crate::registry::{PassDef, PassOptions};
use crate::PassError;

/// The pass definition.
pub const PASS: PassDef = PassDef {
    argument: "lowp-check-allocations",
    name: "LowpCheckAllocations",
    description: "Make host code's calls of malloc and aligned_alloc stop the program with a \
                  located out-of-memory message (exit status 1) where they return null, \
                  instead of going on with the null pointer",
    op_name: Some("builtin.module"),
    options: &[],
    dependent_dialects: || vec![DialectHandle::llvm()],
    run,
};

/// The allocators checked: name, and the types of their arguments (the size last).
const ALLOCATORS: [(&str, &[&str]); 2] = [("malloc", &["i64"]), ("aligned_alloc", &["i64", "i64"])];

/// The message's format: the site, then the size.
const FORMAT: &str = "%s: error: out of memory: allocating %llu bytes failed\n";

/// C's functions the checks call, with the types they are declared with.
const LIBC: [(&str, &str); 2] = [
    ("dprintf", "!llvm.func<i32 (i32, ptr, ...)>"),
    ("_exit", "!llvm.func<void (i32)>"),
];

fn run<'c, 'a>(module: OperationRef<'c, 'a>, _: &PassOptions) -> Result<(), PassError> {
    // The calls, by allocator; device code (kernel modules) skipped.
    let mut calls: Vec<(usize, OperationRef<'c, 'a>)> = Vec::new();
    module.walk(WalkOrder::PreOrder, |op| {
        let name = op.name();
        match name.as_string_ref().as_str() {
            Ok("gpu.module") => return WalkResult::Skip,
            Ok("llvm.call") => {}
            _ => return WalkResult::Advance,
        }
        let callee = op.attribute("callee").ok().and_then(callee_name);
        let allocator = callee.and_then(|c| ALLOCATORS.iter().position(|(a, _)| *a == c));
        // (As C declares it: integer arguments of 64 bits, one pointer result.)
        let typed = |x: usize| {
            let args = ALLOCATORS[x].1;
            op.operand_count() == args.len()
                && (0..args.len()).all(|i| {
                    op.operand(i)
                        .is_ok_and(|v| v.r#type().to_string() == args[i])
                })
                && op.result_count() == 1
                && op
                    .result(0)
                    .is_ok_and(|r| r.r#type().to_string() == "!llvm.ptr")
        };
        if let Some(x) = allocator.filter(|&x| typed(x)) {
            // SAFETY: a live op of the module; nothing is erased during the walk.
            calls.push((x, unsafe { OperationRef::from_raw(op.to_raw()) }));
        }
        WalkResult::Advance
    });
    if calls.is_empty() {
        return Ok(());
    }
    // `to_ref` borrows the ContextRef itself: keep it alive for the whole run.
    let ctx_ref = module.context();
    // SAFETY: the context outlives the pass run, and `ctx_ref` outlives `ctx`.
    let ctx: &'c Context = unsafe { ctx_ref.to_ref() };
    let body = module
        .region(0)
        .ok()
        .and_then(|r| r.first_block())
        .ok_or_else(|| unsupported(module, "a module with no body"))?;
    // The module's top-level symbols, and its declarations of C's functions (checked).
    let mut taken = HashSet::new();
    let mut declared = HashSet::new();
    let mut op = body.first_operation();
    while let Some(o) = op {
        if let Some(name) = o.attribute("sym_name").ok().and_then(string_value) {
            if let Some((_, ty)) = LIBC.iter().find(|(c, _)| *c == name) {
                let typed = o.name().as_string_ref().as_str() == Ok("llvm.func")
                    && o.attribute("function_type").ok().map(|t| t.to_string())
                        == Attribute::parse(ctx, ty).map(|t| t.to_string());
                if is_definition(o) || !typed {
                    return Err(unsupported(
                        o,
                        format!(
                            "@{name} takes the name of C's {name}, which lowp-check-allocations \
                             calls as `{ty}` where an allocation fails: rename it"
                        ),
                    ));
                }
                declared.insert(name.clone());
            }
            taken.insert(name);
        }
        op = o.next_in_block();
    }
    let mut fresh = |base: &str| {
        let name = (0..)
            .map(|i| match i {
                0 => base.to_string(),
                _ => format!("{base}_{i}"),
            })
            .find(|n| !taken.contains(n))
            .expect("a free name");
        taken.insert(name.clone());
        name
    };
    let loc = module.location();
    let at_end = |op| {
        body.append_operation(op);
    };
    for (name, ty) in LIBC {
        if !declared.contains(name) {
            at_end(function(ctx, name, ty, "external", None, loc));
        }
    }
    let format_global = fresh("lowp_alloc_failed");
    at_end(string_global(ctx, &format_global, FORMAT, loc));
    // One site string per distinct location.
    let mut sites: BTreeMap<String, String> = BTreeMap::new();
    for (_, call) in &calls {
        let text = location_text(call.location());
        if let std::collections::btree_map::Entry::Vacant(site) = sites.entry(text) {
            let name = fresh("lowp_alloc_site");
            at_end(string_global(ctx, &name, site.key(), loc));
            site.insert(name);
        }
    }
    // One checking function per allocator called.
    let mut checked: [Option<String>; 2] = [None, None];
    for &(x, _) in &calls {
        if checked[x].is_none() {
            let name = fresh(&format!("lowp_checked_{}", ALLOCATORS[x].0));
            at_end(checking_function(ctx, x, &name, &format_global, loc));
            checked[x] = Some(name);
        }
    }
    let ptr = Type::parse(ctx, "!llvm.ptr").expect("the pointer type");
    for (x, call) in calls {
        let site = &sites[&location_text(call.location())];
        let block = call.block().expect("a call in a block");
        let loc = call.location();
        let address = block.insert_operation_before(
            call,
            OperationBuilder::new("llvm.mlir.addressof", loc)
                .add_attributes(&[(
                    Identifier::new(ctx, "global_name"),
                    FlatSymbolRefAttribute::new(ctx, site).into(),
                )])
                .add_results(&[ptr])
                .build()
                .expect("valid llvm.mlir.addressof"),
        );
        let mut operands: Vec<Value> = (0..call.operand_count())
            .map(|i| call.operand(i).expect("an operand"))
            .collect();
        operands.push(address.result(0).expect("the address").into());
        let callee = checked[x].as_deref().expect("made above");
        let new =
            block.insert_operation_before(call, call_op(ctx, callee, &operands, Some(ptr), loc));
        // SAFETY: the old call's one result is replaced by the new call's, which is
        // inserted just before it; the old call is then erased, unused.
        unsafe {
            let old = call.result(0).expect("an allocator's result");
            let now = new.result(0).expect("the checked result");
            mlir_sys::mlirValueReplaceAllUsesOfWith(old.to_raw(), now.to_raw());
            mlir_sys::mlirOperationDestroy(call.to_raw());
        }
    }
    Ok(())
}

/// The callee of an `llvm.call` (`None` for an indirect call).
fn callee_name(a: Attribute) -> Option<String> {
    FlatSymbolRefAttribute::try_from(a)
        .ok()
        .map(|s| s.value().to_string())
}

/// `llvm.func` `name` of type `ty` (`!llvm.func<...>`) with `linkage`: a declaration, or
/// with `body` (its region).
fn function<'c>(
    ctx: &'c Context,
    name: &str,
    ty: &str,
    linkage: &str,
    body: Option<Region<'c>>,
    loc: Location<'c>,
) -> melior::ir::Operation<'c> {
    let attr = |text: &str| Attribute::parse(ctx, text).expect("a valid attribute");
    let ty = Type::parse(ctx, ty).expect("a valid function type");
    OperationBuilder::new("llvm.func", loc)
        .add_attributes(&[
            (
                Identifier::new(ctx, "sym_name"),
                StringAttribute::new(ctx, name).into(),
            ),
            (
                Identifier::new(ctx, "function_type"),
                TypeAttribute::new(ty).into(),
            ),
            (
                Identifier::new(ctx, "linkage"),
                attr(&format!("#llvm.linkage<{linkage}>")),
            ),
            (Identifier::new(ctx, "CConv"), attr("#llvm.cconv<ccc>")),
        ])
        .add_regions([body.unwrap_or_default()])
        .build()
        .expect("valid llvm.func")
}

/// `llvm.mlir.global internal constant @name("text\00")`.
fn string_global<'c>(
    ctx: &'c Context,
    name: &str,
    text: &str,
    loc: Location<'c>,
) -> melior::ir::Operation<'c> {
    let attr = |text: &str| Attribute::parse(ctx, text).expect("a valid attribute");
    let value = format!("{text}\0");
    let ty = Type::parse(ctx, &format!("!llvm.array<{} x i8>", value.len())).expect("array");
    OperationBuilder::new("llvm.mlir.global", loc)
        .add_attributes(&[
            (
                Identifier::new(ctx, "sym_name"),
                StringAttribute::new(ctx, name).into(),
            ),
            (
                Identifier::new(ctx, "global_type"),
                TypeAttribute::new(ty).into(),
            ),
            (
                Identifier::new(ctx, "linkage"),
                attr("#llvm.linkage<internal>"),
            ),
            (Identifier::new(ctx, "constant"), attr("unit")),
            (
                Identifier::new(ctx, "value"),
                StringAttribute::new(ctx, &value).into(),
            ),
            (Identifier::new(ctx, "addr_space"), attr("0 : i32")),
        ])
        .add_regions([Region::new()])
        .build()
        .expect("valid llvm.mlir.global")
}

/// `llvm.call @callee(operands)` with one result of type `result`, or none.
fn call_op<'c>(
    ctx: &'c Context,
    callee: &str,
    operands: &[Value<'c, '_>],
    result: Option<Type<'c>>,
    loc: Location<'c>,
) -> melior::ir::Operation<'c> {
    let segments = format!("array<i32: {}, 0>", operands.len());
    let mut b = OperationBuilder::new("llvm.call", loc)
        .add_operands(operands)
        .add_attributes(&[
            (
                Identifier::new(ctx, "callee"),
                FlatSymbolRefAttribute::new(ctx, callee).into(),
            ),
            (
                Identifier::new(ctx, "operandSegmentSizes"),
                Attribute::parse(ctx, &segments).expect("segments"),
            ),
            (
                Identifier::new(ctx, "op_bundle_sizes"),
                Attribute::parse(ctx, "array<i32>").expect("no bundles"),
            ),
        ]);
    if let Some(t) = result {
        b = b.add_results(&[t]);
    }
    b.build().expect("valid llvm.call")
}

/// `@name`, checking allocator `x`: its arguments and the site's string, its result the
/// allocator's, or (null for a size above zero) the message and `_exit(1)`.
fn checking_function<'c>(
    ctx: &'c Context,
    x: usize,
    name: &str,
    format_global: &str,
    loc: Location<'c>,
) -> melior::ir::Operation<'c> {
    let (allocator, args) = ALLOCATORS[x];
    let ptr = Type::parse(ctx, "!llvm.ptr").expect("the pointer type");
    let i32t: Type = IntegerType::new(ctx, 32).into();
    let i1t: Type = IntegerType::new(ctx, 1).into();
    let mut arg_types: Vec<Type> = args
        .iter()
        .map(|t| Type::parse(ctx, t).expect("an integer type"))
        .collect();
    arg_types.push(ptr);
    let entry = Block::new(&arg_types.iter().map(|&t| (t, loc)).collect::<Vec<_>>());
    let region = Region::new();
    let entry = region.append_block(entry);
    let ok = region.append_block(Block::new(&[]));
    let fail = region.append_block(Block::new(&[]));
    let arg = |i: usize| -> Value { entry.argument(i).expect("an argument").into() };
    let size = arg(args.len() - 1);
    let site = arg(args.len());
    let constant = |b, v: &str, t: Type<'c>| {
        value(first(
            OperationBuilder::new("llvm.mlir.constant", loc)
                .add_attributes(&[(
                    Identifier::new(ctx, "value"),
                    Attribute::parse(ctx, v).expect("a constant"),
                )])
                .add_results(&[t])
                .build()
                .expect("valid llvm.mlir.constant"),
            b,
        ))
    };
    let icmp = |b, predicate: i64, l: Value<'c, '_>, r: Value<'c, '_>| {
        value(first(
            OperationBuilder::new("llvm.icmp", loc)
                .add_operands(&[l, r])
                .add_attributes(&[(
                    Identifier::new(ctx, "predicate"),
                    Attribute::parse(ctx, &format!("{predicate} : i64")).expect("a predicate"),
                )])
                .add_results(&[i1t])
                .build()
                .expect("valid llvm.icmp"),
            b,
        ))
    };
    let params: Vec<Value> = (0..args.len()).map(arg).collect();
    let p = value(first(
        call_op(ctx, allocator, &params, Some(ptr), loc),
        entry,
    ));
    let null = value(first(
        OperationBuilder::new("llvm.mlir.zero", loc)
            .add_results(&[ptr])
            .build()
            .expect("valid llvm.mlir.zero"),
        entry,
    ));
    let size_type = arg_types[args.len() - 1];
    let zero = constant(entry, &format!("0 : {size_type}"), size_type);
    // (eq = 0, ne = 1.)
    let is_null = icmp(entry, 0, p, null);
    let some = icmp(entry, 1, size, zero);
    let failed = value(first(
        OperationBuilder::new("llvm.and", loc)
            .add_operands(&[is_null, some])
            .add_results(&[i1t])
            .build()
            .expect("valid llvm.and"),
        entry,
    ));
    first(
        OperationBuilder::new("llvm.cond_br", loc)
            .add_operands(&[failed])
            .add_successors(&[&fail, &ok])
            .add_attributes(&[(
                Identifier::new(ctx, "operandSegmentSizes"),
                Attribute::parse(ctx, "array<i32: 1, 0, 0>").expect("segments"),
            )])
            .build()
            .expect("valid llvm.cond_br"),
        entry,
    );
    first(
        OperationBuilder::new("llvm.return", loc)
            .add_operands(&[p])
            .build()
            .expect("valid llvm.return"),
        ok,
    );
    let stderr = constant(fail, "2 : i32", i32t);
    let format = value(first(
        OperationBuilder::new("llvm.mlir.addressof", loc)
            .add_attributes(&[(
                Identifier::new(ctx, "global_name"),
                FlatSymbolRefAttribute::new(ctx, format_global).into(),
            )])
            .add_results(&[ptr])
            .build()
            .expect("valid llvm.mlir.addressof"),
        fail,
    ));
    let mut printf = call_op(
        ctx,
        "dprintf",
        &[stderr, format, site, size],
        Some(i32t),
        loc,
    );
    printf.set_attribute(
        "var_callee_type",
        Attribute::parse(ctx, LIBC[0].1).expect("dprintf's type"),
    );
    first(printf, fail);
    let status = constant(fail, "1 : i32", i32t);
    first(call_op(ctx, "_exit", &[status], None, loc), fail);
    first(
        OperationBuilder::new("llvm.unreachable", loc)
            .build()
            .expect("valid llvm.unreachable"),
        fail,
    );
    let mut types: Vec<String> = args.iter().map(|t| t.to_string()).collect();
    types.push("ptr".into());
    let ty = format!("!llvm.func<ptr ({})>", types.join(", "));
    function(ctx, name, &ty, "internal", Some(region), loc)
}

/// Append `op` to block `b`.
fn first<'c, 'b>(
    op: melior::ir::Operation<'c>,
    b: melior::ir::BlockRef<'c, 'b>,
) -> OperationRef<'c, 'b> {
    b.append_operation(op)
}

/// `op`'s first result.
fn value<'c, 'b>(op: OperationRef<'c, 'b>) -> Value<'c, 'b> {
    op.result(0).expect("a result").into()
}
