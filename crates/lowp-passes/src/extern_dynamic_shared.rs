//! `lowp-extern-dynamic-shared`: give the dynamic shared memory of an NVVM kernel module
//! external linkage, so that PTX declares it as CUDA does (`.extern .shared .align 16 .b8
//! name[]`: the base of the memory sized at launch).
//!
//! `convert-gpu-to-nvvm` lowers `gpu.dynamic_shared_memory` to an internal zero-sized global,
//! which the NVPTX backend demotes into the kernel and prints as a one-byte static variable
//! (`.shared .align 16 .b8 __dynamic_shmem__0;`): the kernel then addresses the dynamic
//! memory from a static byte in front of it.
//!
//! Before:
//! ```mlir
//! gpu.module @k {
//!   llvm.mlir.global internal @__dynamic_shmem__0() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<0 x i8>
//! ```
//! After:
//! ```mlir
//! gpu.module @k {
//!   llvm.mlir.global external @__dynamic_shmem__0() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<0 x i8>
//! ```
//! Only globals in address space 3 of type `!llvm.array<0 x i8>` with no initializer
//! change. Runs on `gpu.module`, after `convert-gpu-to-nvvm`. No options.

use melior::dialect::DialectHandle;
use melior::ir::attribute::IntegerAttribute;
use melior::ir::operation::{OperationLike, OperationMutLike, WalkOrder, WalkResult};
use melior::ir::{Attribute, OperationRef, RegionLike, Type};

use crate::registry::{PassDef, PassOptions};
use crate::PassError;

/// The pass definition.
pub const PASS: PassDef = PassDef {
    argument: "lowp-extern-dynamic-shared",
    name: "LowpExternDynamicShared",
    description: "Give zero-sized shared-memory globals of a kernel module (the dynamic \
                  shared memory) external linkage, declared as .extern .shared in PTX",
    op_name: Some("gpu.module"),
    options: &[],
    dependent_dialects: || vec![DialectHandle::llvm()],
    run,
};

fn run<'c, 'a>(module: OperationRef<'c, 'a>, _: &PassOptions) -> Result<(), PassError> {
    // `to_ref` borrows the ContextRef itself: keep it alive for the whole run.
    let ctx_ref = module.context();
    // SAFETY: the context outlives the pass run, and `ctx_ref` outlives `ctx`.
    let ctx = unsafe { ctx_ref.to_ref() };
    let empty = Type::parse(ctx, "!llvm.array<0 x i8>").expect("valid array type");
    let shared = IntegerAttribute::new(Type::parse(ctx, "i32").expect("i32"), 3);
    let mut found = Vec::new();
    module.walk(WalkOrder::PreOrder, |op| {
        let is_global = op.name().as_string_ref().as_str() == Ok("llvm.mlir.global");
        let dynamic = is_global
            && op
                .attribute("global_type")
                .is_ok_and(|t| t == melior::ir::attribute::TypeAttribute::new(empty).into())
            && op
                .attribute("addr_space")
                .is_ok_and(|s| s == Attribute::from(shared))
            && op.attribute("value").is_err()
            && op.region(0).is_ok_and(|r| r.first_block().is_none());
        if dynamic {
            found.push(op.to_raw());
        }
        WalkResult::Advance
    });
    let external = Attribute::parse(ctx, "#llvm.linkage<external>").expect("valid linkage");
    for raw in found {
        // SAFETY: collected from the live module above; no op was erased since.
        let mut global = unsafe { melior::ir::operation::OperationRefMut::from_raw(raw) };
        global.set_attribute("linkage", external);
    }
    Ok(())
}
