//! `lowp-kernel-cluster-size`: give each kernel that a `gpu.launch_func` launches in clusters
//! of a constant size that size as `known_cluster_size`, which `convert-gpu-to-nvvm` turns
//! into `nvvm.cluster_dim` and the NVPTX backend into `.explicitcluster` and
//! `.reqnctapercluster X, Y, Z`: the kernel then runs in those clusters under a plain
//! `cuLaunchKernel`, as a CUDA kernel with `__cluster_dims__` does.
//!
//! `gpu-kernel-outlining` keeps a `gpu.launch`'s cluster size on the `gpu.launch_func` only.
//!
//! Before:
//! ```mlir
//! gpu.launch_func @k::@k clusters in (%c2, %c1, %c1) blocks in (%c128, %c1, %c1) ...
//! gpu.module @k {
//!   gpu.func @k(...) kernel attributes {known_block_size = array<i32: 128, 1, 1>} {
//! ```
//! After:
//! ```mlir
//! gpu.module @k {
//!   gpu.func @k(...) kernel attributes {known_block_size = array<i32: 128, 1, 1>,
//!                                       known_cluster_size = array<i32: 2, 1, 1>} {
//! ```
//! Runs on `builtin.module` (the host functions and the kernel modules), after outlining and
//! before `convert-gpu-to-nvvm`. A cluster size computed at run time is left to the launch;
//! one kernel launched with two different sizes is an error. No options.

use std::collections::HashMap;

use melior::dialect::DialectHandle;
use melior::ir::attribute::DenseI32ArrayAttribute;
use melior::ir::operation::{OperationLike, OperationMutLike, WalkOrder, WalkResult};
use melior::ir::OperationRef;

use crate::expand_quantize::unsupported;
use crate::ir::{constant_int, dense_i32s, string_value, symbol_path};
use crate::registry::{PassDef, PassOptions};
use crate::PassError;

/// The pass definition.
pub const PASS: PassDef = PassDef {
    argument: "lowp-kernel-cluster-size",
    name: "LowpKernelClusterSize",
    description: "Give kernels launched in clusters of a constant size that size \
                  (known_cluster_size: .reqnctapercluster in PTX)",
    op_name: Some("builtin.module"),
    options: &[],
    dependent_dialects: || vec![DialectHandle::gpu()],
    run,
};

fn sym_name(op: OperationRef) -> Option<String> {
    string_value(op.attribute("sym_name").ok()?)
}

fn run<'c, 'a>(module: OperationRef<'c, 'a>, _: &PassOptions) -> Result<(), PassError> {
    // (kernel module, kernel) -> cluster size, from the launches.
    let mut sizes: HashMap<(String, String), [i32; 3]> = HashMap::new();
    let mut conflict = None;
    module.walk(WalkOrder::PreOrder, |op| {
        if op.name().as_string_ref().as_str() != Ok("gpu.launch_func") {
            return WalkResult::Advance;
        }
        let segments = op
            .attribute("operandSegmentSizes")
            .ok()
            .and_then(dense_i32s);
        // asyncDependencies, grid x y z, block x y z, cluster x y z, ...
        let Some(segments) = segments.filter(|s| s.len() >= 10 && s[7..10] == [1, 1, 1]) else {
            return WalkResult::Advance;
        };
        let first = segments[0] as usize + 6;
        let size: Option<Vec<i32>> = (first..first + 3)
            .map(|i| {
                op.operand(i)
                    .ok()
                    .and_then(constant_int)
                    .and_then(|c| i32::try_from(c).ok())
            })
            .collect();
        let (Some(size), Some(kernel)) = (size, op.attribute("kernel").ok().and_then(symbol_path))
        else {
            return WalkResult::Advance;
        };
        let size = [size[0], size[1], size[2]];
        if size.iter().any(|&s| s < 1) {
            conflict = Some((
                op.to_raw(),
                format!(
                    "kernel @{}::@{} is launched in clusters of {size:?}; each cluster \
                     dimension is at least 1",
                    kernel.0, kernel.1
                ),
            ));
            return WalkResult::Interrupt;
        }
        if let Some(other) = sizes.insert(kernel.clone(), size) {
            if other != size {
                conflict = Some((
                    op.to_raw(),
                    format!(
                        "kernel @{}::@{} is launched in clusters of {other:?} and of {size:?}",
                        kernel.0, kernel.1
                    ),
                ));
            }
        }
        WalkResult::Advance
    });
    if let Some((raw, reason)) = conflict {
        // SAFETY: collected from the live module above.
        return Err(unsupported(unsafe { OperationRef::from_raw(raw) }, reason));
    }
    if sizes.is_empty() {
        return Ok(());
    }
    // The kernels: gpu.func ops in gpu.module ops, by name.
    let mut kernels = Vec::new();
    module.walk(WalkOrder::PreOrder, |op| {
        if op.name().as_string_ref().as_str() == Ok("gpu.func") {
            // SAFETY: the parent of a live op.
            let parent = unsafe {
                let p = mlir_sys::mlirOperationGetParentOperation(op.to_raw());
                (!p.ptr.is_null()).then(|| OperationRef::from_raw(p))
            };
            let names = parent.and_then(sym_name).zip(sym_name(op));
            if let Some(size) = names.and_then(|n| sizes.get(&n)) {
                kernels.push((op.to_raw(), *size));
            }
        }
        WalkResult::Advance
    });
    // `to_ref` borrows the ContextRef itself: keep it alive for the whole run.
    let ctx_ref = module.context();
    // SAFETY: the context outlives the pass run, and `ctx_ref` outlives `ctx`.
    let ctx = unsafe { ctx_ref.to_ref() };
    for (raw, size) in kernels {
        // SAFETY: collected from the live module above; nothing was erased since.
        let mut func = unsafe { melior::ir::operation::OperationRefMut::from_raw(raw) };
        func.set_attribute(
            "known_cluster_size",
            DenseI32ArrayAttribute::new(ctx, &size).into(),
        );
    }
    Ok(())
}
