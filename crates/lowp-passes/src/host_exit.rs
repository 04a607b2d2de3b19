//! What host code needs to stop with a message (`lowp-check-allocations`,
//! `lowp-report-asserts`): C's `dprintf` and `_exit` declared in the module, string
//! constants as `llvm.mlir.global`s under names the module leaves free, and the calls that
//! print a message to standard error and end the program with status 1.

use std::collections::HashSet;

use melior::ir::attribute::{FlatSymbolRefAttribute, StringAttribute, TypeAttribute};
use melior::ir::operation::{OperationBuilder, OperationLike, OperationMutLike};
use melior::ir::{
    Attribute, BlockLike, BlockRef, Identifier, Location, Operation, OperationRef, Region,
    RegionLike, Type, Value,
};
use melior::Context;

use crate::expand_quantize::unsupported;
use crate::ir::{is_definition, string_value, Emitter};
use crate::PassError;

/// C's functions the exits call, with the types they are declared with.
const LIBC: [(&str, &str); 2] = [
    ("dprintf", "!llvm.func<i32 (i32, ptr, ...)>"),
    ("_exit", "!llvm.func<void (i32)>"),
];

/// A module's top-level symbols, for the new ones: its body, the names taken, whether C's
/// functions are declared.
pub(crate) struct HostSymbols<'c, 'a> {
    ctx: &'c Context,
    body: BlockRef<'c, 'a>,
    loc: Location<'c>,
    taken: HashSet<String>,
    declared: HashSet<String>,
}

impl<'c, 'a> HostSymbols<'c, 'a> {
    /// The symbols of `module` (run by `pass`, named in the refusal): a function of the
    /// module named `dprintf` or `_exit` that is not C's declaration is refused at it.
    pub(crate) fn new(
        ctx: &'c Context,
        module: OperationRef<'c, 'a>,
        pass: &str,
    ) -> Result<Self, PassError> {
        let body = module
            .region(0)
            .ok()
            .and_then(|r| r.first_block())
            .ok_or_else(|| unsupported(module, "a module with no body"))?;
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
                                "@{name} takes the name of C's {name}, which {pass} calls as \
                                 `{ty}` to stop the program with a message: rename it"
                            ),
                        ));
                    }
                    declared.insert(name.clone());
                }
                taken.insert(name);
            }
            op = o.next_in_block();
        }
        Ok(Self {
            ctx,
            body,
            loc: module.location(),
            taken,
            declared,
        })
    }

    /// `base`, or `base_1`, `base_2`, ...: the first name the module leaves free, now taken.
    pub(crate) fn fresh(&mut self, base: &str) -> String {
        let name = (0..)
            .map(|i| match i {
                0 => base.to_string(),
                _ => format!("{base}_{i}"),
            })
            .find(|n| !self.taken.contains(n))
            .expect("a free name");
        self.taken.insert(name.clone());
        name
    }

    /// Append `op` to the module's body.
    pub(crate) fn append(&self, op: Operation<'c>) {
        self.body.append_operation(op);
    }

    /// Declare `dprintf` and `_exit` where the module does not.
    pub(crate) fn declare_libc(&mut self) {
        for (name, ty) in LIBC {
            if self.declared.insert(name.to_string()) {
                self.append(function(self.ctx, name, ty, "external", None, self.loc));
            }
        }
    }

    /// A new `llvm.mlir.global internal constant @base...("text\00")`; its name.
    pub(crate) fn string(&mut self, base: &str, text: &str) -> String {
        let name = self.fresh(base);
        self.append(string_global(self.ctx, &name, text, self.loc));
        name
    }
}

/// `llvm.func` `name` of type `ty` (`!llvm.func<...>`) with `linkage`: a declaration, or
/// with `body` (its region).
pub(crate) fn function<'c>(
    ctx: &'c Context,
    name: &str,
    ty: &str,
    linkage: &str,
    body: Option<Region<'c>>,
    loc: Location<'c>,
) -> Operation<'c> {
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
fn string_global<'c>(ctx: &'c Context, name: &str, text: &str, loc: Location<'c>) -> Operation<'c> {
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
pub(crate) fn call_op<'c>(
    ctx: &'c Context,
    callee: &str,
    operands: &[Value<'c, '_>],
    result: Option<Type<'c>>,
    loc: Location<'c>,
) -> Operation<'c> {
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

/// `llvm.mlir.addressof @global : !llvm.ptr`.
pub(crate) fn address_of<'c>(ctx: &'c Context, global: &str, loc: Location<'c>) -> Operation<'c> {
    OperationBuilder::new("llvm.mlir.addressof", loc)
        .add_attributes(&[(
            Identifier::new(ctx, "global_name"),
            FlatSymbolRefAttribute::new(ctx, global).into(),
        )])
        .add_results(&[pointer(ctx)])
        .build()
        .expect("valid llvm.mlir.addressof")
}

/// `!llvm.ptr`.
pub(crate) fn pointer(ctx: &Context) -> Type<'_> {
    Type::parse(ctx, "!llvm.ptr").expect("the pointer type")
}

/// `llvm.mlir.constant(v : t) : t`.
pub(crate) fn llvm_constant<'c, 'a>(e: &Emitter<'c, 'a>, v: i64, t: Type<'c>) -> Value<'c, 'a> {
    e.val(
        OperationBuilder::new("llvm.mlir.constant", e.loc())
            .add_attributes(&[(
                Identifier::new(e.ctx(), "value"),
                Attribute::parse(e.ctx(), &format!("{v} : {t}")).expect("a constant"),
            )])
            .add_results(&[t])
            .build()
            .expect("valid llvm.mlir.constant"),
    )
}

/// At `e`: `dprintf(2, @format, args...)`, then `_exit(1)` (the module declares both:
/// `HostSymbols::declare_libc`).
pub(crate) fn print_and_exit<'c, 'a>(e: &Emitter<'c, 'a>, format: &str, args: &[Value<'c, 'a>]) {
    let ctx = e.ctx();
    let i32t = e.int_type(32);
    let stderr = llvm_constant(e, 2, i32t);
    let format = e.val(address_of(ctx, format, e.loc()));
    let mut operands = vec![stderr, format];
    operands.extend_from_slice(args);
    let mut printf = call_op(ctx, LIBC[0].0, &operands, Some(i32t), e.loc());
    printf.set_attribute(
        "var_callee_type",
        Attribute::parse(ctx, LIBC[0].1).expect("dprintf's type"),
    );
    e.insert(printf);
    let status = llvm_constant(e, 1, i32t);
    e.insert(call_op(ctx, LIBC[1].0, &[status], None, e.loc()));
}
