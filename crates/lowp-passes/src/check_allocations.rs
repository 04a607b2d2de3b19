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
//! location. Calls in kernel modules (`gpu.module`: device code) are left alone, and so are
//! those of a nested `builtin.module` (the pass run on it takes them).
//! `@dprintf` and `@_exit` are declared where the module does not declare them; a module
//! that defines a function of either name, or declares one with another type, is refused
//! at it. The new symbols take names the module leaves free (`_1`, `_2`, ... appended).
//! Runs on `builtin.module` after the conversions to the LLVM dialect (the CPU pipelines
//! run it before `reconcile-unrealized-casts`). No options.

use std::collections::BTreeMap;

use melior::dialect::DialectHandle;
use melior::ir::attribute::FlatSymbolRefAttribute;
use melior::ir::operation::{OperationBuilder, OperationLike, WalkOrder, WalkResult};
use melior::ir::r#type::IntegerType;
use melior::ir::{
    Attribute, Block, BlockLike, Identifier, Location, OperationRef, Region, RegionLike, Type,
    Value, ValueLike,
};
use melior::Context;

use crate::host_exit::{
    address_of, call_op, function, llvm_constant, pointer, print_and_exit, HostSymbols,
};
use crate::ir::{location_text, Emitter};
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

fn run<'c, 'a>(module: OperationRef<'c, 'a>, _: &PassOptions) -> Result<(), PassError> {
    // The calls, by allocator; device code (kernel modules) skipped.
    // (With each its location's text: its site.)
    let mut calls: Vec<(usize, OperationRef<'c, 'a>, String)> = Vec::new();
    module.walk(WalkOrder::PreOrder, |op| {
        let name = op.name();
        match name.as_string_ref().as_str() {
            Ok("gpu.module") => return WalkResult::Skip,
            // (A nested module holds its own symbols: the pass run on it takes its calls.)
            Ok("builtin.module") if op.to_raw().ptr != module.to_raw().ptr => {
                return WalkResult::Skip
            }
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
            let call = unsafe { OperationRef::from_raw(op.to_raw()) };
            calls.push((x, call, location_text(call.location())));
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
    let mut symbols = HostSymbols::new(ctx, module, PASS.argument)?;
    symbols.declare_libc();
    let format = symbols.string("lowp_alloc_failed", FORMAT);
    // One site string per distinct location.
    let mut sites: BTreeMap<String, String> = BTreeMap::new();
    for (_, _, text) in &calls {
        if let std::collections::btree_map::Entry::Vacant(site) = sites.entry(text.clone()) {
            let name = symbols.string("lowp_alloc_site", site.key());
            site.insert(name);
        }
    }
    // One checking function per allocator called.
    let mut checked: [Option<String>; 2] = [None, None];
    for &(x, _, _) in &calls {
        if checked[x].is_none() {
            let name = symbols.fresh(&format!("lowp_checked_{}", ALLOCATORS[x].0));
            symbols.append(checking_function(ctx, x, &name, &format, module.location()));
            checked[x] = Some(name);
        }
    }
    for (x, call, text) in calls {
        let site = &sites[&text];
        let block = call.block().expect("a call in a block");
        let loc = call.location();
        let address = block.insert_operation_before(call, address_of(ctx, site, loc));
        let mut operands: Vec<Value> = (0..call.operand_count())
            .map(|i| call.operand(i).expect("an operand"))
            .collect();
        operands.push(address.result(0).expect("the address").into());
        let callee = checked[x].as_deref().expect("made above");
        let new = block.insert_operation_before(
            call,
            call_op(ctx, callee, &operands, Some(pointer(ctx)), loc),
        );
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

/// `@name`, checking allocator `x`: its arguments and the site's string, its result the
/// allocator's, or (null for a size above zero) the message (`format`) and `_exit(1)`.
fn checking_function<'c>(
    ctx: &'c Context,
    x: usize,
    name: &str,
    format: &str,
    loc: Location<'c>,
) -> melior::ir::Operation<'c> {
    let (allocator, args) = ALLOCATORS[x];
    let ptr = pointer(ctx);
    let i1t: Type = IntegerType::new(ctx, 1).into();
    let mut arg_types: Vec<Type> = args
        .iter()
        .map(|t| Type::parse(ctx, t).expect("an integer type"))
        .collect();
    arg_types.push(ptr);
    let region = Region::new();
    let entry = region.append_block(Block::new(
        &arg_types.iter().map(|&t| (t, loc)).collect::<Vec<_>>(),
    ));
    let ok = region.append_block(Block::new(&[]));
    let fail = region.append_block(Block::new(&[]));
    let arg = |i: usize| -> Value { entry.argument(i).expect("an argument").into() };
    let (size, site) = (arg(args.len() - 1), arg(args.len()));
    let e = Emitter::at_end(ctx, entry, loc);
    let params: Vec<Value> = (0..args.len()).map(arg).collect();
    let p = e.val(call_op(ctx, allocator, &params, Some(ptr), loc));
    let null = e.val(
        OperationBuilder::new("llvm.mlir.zero", loc)
            .add_results(&[ptr])
            .build()
            .expect("valid llvm.mlir.zero"),
    );
    let zero = llvm_constant(&e, 0, arg_types[args.len() - 1]);
    let icmp = |predicate: i64, l: Value<'c, '_>, r: Value<'c, '_>| {
        e.val(
            OperationBuilder::new("llvm.icmp", loc)
                .add_operands(&[l, r])
                .add_attributes(&[(
                    Identifier::new(ctx, "predicate"),
                    Attribute::parse(ctx, &format!("{predicate} : i64")).expect("a predicate"),
                )])
                .add_results(&[i1t])
                .build()
                .expect("valid llvm.icmp"),
        )
    };
    // (eq = 0, ne = 1.)
    let is_null = icmp(0, p, null);
    let some = icmp(1, size, zero);
    let failed = e.val(
        OperationBuilder::new("llvm.and", loc)
            .add_operands(&[is_null, some])
            .add_results(&[i1t])
            .build()
            .expect("valid llvm.and"),
    );
    e.insert(
        OperationBuilder::new("llvm.cond_br", loc)
            .add_operands(&[failed])
            .add_successors(&[&fail, &ok])
            .add_attributes(&[(
                Identifier::new(ctx, "operandSegmentSizes"),
                Attribute::parse(ctx, "array<i32: 1, 0, 0>").expect("segments"),
            )])
            .build()
            .expect("valid llvm.cond_br"),
    );
    Emitter::at_end(ctx, ok, loc).insert(
        OperationBuilder::new("llvm.return", loc)
            .add_operands(&[p])
            .build()
            .expect("valid llvm.return"),
    );
    let f = Emitter::at_end(ctx, fail, loc);
    print_and_exit(&f, format, &[site, size]);
    f.insert(
        OperationBuilder::new("llvm.unreachable", loc)
            .build()
            .expect("valid llvm.unreachable"),
    );
    let mut types: Vec<String> = args.iter().map(|t| t.to_string()).collect();
    types.push("ptr".into());
    let ty = format!("!llvm.func<ptr ({})>", types.join(", "));
    function(ctx, name, &ty, "internal", Some(region), loc)
}
