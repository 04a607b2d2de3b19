//! A lowp entry compiled to an NVIDIA kernel (PTX) and launched through the CUDA driver
//! (`lowp-runtime`).
//!
//! [`Session::compile_nvvm`] runs `lowp-to-nvvm` for the chip and the upstream mapping onto a
//! `gpu.launch` (`lowp_passes::pipelines::nvvm_front`), reads the entry's one
//! `gpu.launch_func` (grid, block, and each kernel operand: an entry argument or a constant),
//! then lowers the kernel module to NVVM and PTX for the chip (`gpu-module-to-binary`).
//! [`GpuKernel::launch`] passes each memref as the kernel's expanded descriptor (allocated
//! and aligned pointer, offset, sizes, strides), as `convert-gpu-to-nvvm` declares it.

/// The NVIDIA kernels `compile_nvvm` takes (`lowp-to-nvvm`'s `kernel` option).
pub use lowp_passes::to_nvvm::KERNELS;

/// The `lowp-to-nvvm` options besides `chip` and `kernel` that
/// [`Session::compile_nvvm_with`] takes: the wgmma skinny block's split of K, the TMA
/// square block's B multicast, the barrier pipeline's folded block scales, its translation
/// a stage ahead, the pipeline's ring of stages, the square block's columns, the TMA
/// block's persistence, how its epilogue stores C, its route for NVFP4's 16-blocks, and
/// how sm_90a's wgmma kernels sum FP8. The tools take each as
/// a flag of its name (`--split-k`, ...: [`tuning_option`]).
pub const NVVM_TUNING: &[&str] = &[
    "split-k",
    "multicast",
    "fold-scales",
    "translate-ahead",
    "stages",
    "block-n",
    "persistent",
    "store-c",
    "translate-once",
    "nvfp4",
    "accumulate",
];

/// The tuning option (`NVVM_TUNING`) a command-line `flag` names (`--split-k`: `split-k`).
pub fn tuning_option(flag: &str) -> Option<&str> {
    flag.strip_prefix("--").filter(|o| NVVM_TUNING.contains(o))
}

/// The tuning options as the tools' flags, in order: `--split-k`, `--multicast`, ...
pub fn tuning_flags() -> Vec<String> {
    NVVM_TUNING.iter().map(|o| format!("--{o}")).collect()
}
pub use lowp_runtime::kernel::{GpuKernel, KernelParam};
use lowp_runtime::tensor_map::MapElement;
use melior::ir::operation::{OperationLike, OperationMutLike, OperationRef, WalkOrder, WalkResult};
use melior::ir::r#type::MemRefType;
use melior::ir::{
    AttributeLike, BlockLike, Module, RegionLike, ShapedTypeLike, TypeLike, Value, ValueLike,
};

use crate::{JitError, Session};

fn launch_error(reason: impl Into<String>) -> JitError {
    JitError::Launch {
        reason: reason.into(),
    }
}

/// The op defining `v` when it is `name`.
fn defined_by<'c, 'a>(v: Value<'c, 'a>, name: &str) -> Option<OperationRef<'c, 'a>> {
    // SAFETY: reading a live value and its defining op through the C API.
    unsafe {
        let raw = v.to_raw();
        if !mlir_sys::mlirValueIsAOpResult(raw) {
            return None;
        }
        let op = OperationRef::from_raw(mlir_sys::mlirOpResultGetOwner(raw));
        (op.name().as_string_ref().as_str() == Ok(name)).then_some(op)
    }
}

/// The position of `v` among the arguments of `body` (the entry's block), if it is one.
fn entry_argument(v: Value, body: melior::ir::BlockRef) -> Option<usize> {
    // SAFETY: reading a live value through the C API.
    unsafe {
        let raw = v.to_raw();
        (mlir_sys::mlirValueIsABlockArgument(raw)
            && mlir_sys::mlirBlockArgumentGetOwner(raw).ptr == body.to_raw().ptr)
            .then(|| mlir_sys::mlirBlockArgumentGetArgNumber(raw) as usize)
    }
}

/// The static shape of a row-major memref, or why the runner cannot pass it.
fn static_shape(v: Value, arg: usize) -> Result<Vec<i64>, JitError> {
    let t = MemRefType::try_from(v.r#type())
        .map_err(|_| launch_error(format!("argument {arg} is not a memref")))?;
    // SAFETY: a live memref type.
    let identity = unsafe {
        mlir_sys::mlirAffineMapIsIdentity(mlir_sys::mlirMemRefTypeGetAffineMap(t.to_raw()))
    };
    let shape: Vec<i64> = (0..t.rank())
        .map(|d| match t.dim_size(d) {
            Ok(melior::ir::r#type::DimSize::Static(s)) => s as i64,
            _ => -1,
        })
        .collect();
    if !identity || shape.iter().any(|&s| s < 0) {
        return Err(launch_error(format!(
            "argument {arg}: only static, row-major memrefs run on the GPU"
        )));
    }
    Ok(shape)
}

/// A kernel operand that is a TMA tensor map: `nvgpu.tma.create.descriptor` of an entry
/// argument (through `memref.cast`) with constant box sizes, as the pointer it lowers to
/// (`builtin.unrealized_conversion_cast`, how `lowp-to-nvvm` passes it). `None` when `v` is
/// not made that way; an error when it is but the runner cannot make the map (elements other
/// than bytes, f32, f16, bf16; not tile mode with zero fill).
fn tensor_map(v: Value, buffers: &Buffers) -> Result<Option<KernelParam>, JitError> {
    let Some(cast) = defined_by(v, "builtin.unrealized_conversion_cast") else {
        return Ok(None);
    };
    let Some(create) = cast
        .operand(0)
        .ok()
        .and_then(|d| defined_by(d, "nvgpu.tma.create.descriptor"))
    else {
        return Ok(None);
    };
    let bad = |why: &str| launch_error(format!("a TMA tensor map operand {why}"));
    let tensor = create.operand(0).map_err(|_| bad("has no tensor"))?;
    let ranked = defined_by(tensor, "memref.cast")
        .and_then(|c| c.operand(0).ok())
        .ok_or_else(|| bad("is not made from a memref.cast of an entry argument"))?;
    let arg = buffers
        .of(ranked)
        .ok_or_else(|| bad("is not made from an argument of the entry or a workspace"))?;
    let shape = static_shape(ranked, arg)?;
    let element = MemRefType::try_from(ranked.r#type())
        .map(|t| t.element())
        .map_err(|_| bad("is made from a non-memref"))?;
    let element = match element.to_string().as_str() {
        "i8" => MapElement::U8,
        "f32" => MapElement::F32,
        "f16" => MapElement::F16,
        "bf16" => MapElement::Bf16,
        other => {
            return Err(bad(&format!(
                "is made from {other} elements; the runner maps i8 (codes), f32, f16 and bf16"
            )))
        }
    };
    let boxed = (1..create.operand_count())
        .map(|i| match create.operand(i).ok().and_then(constant) {
            Some(KernelParam::Index(b)) if (1..=256).contains(&b) => Ok(b as u32),
            _ => Err(bad("has a box size that is not a constant from 1 to 256")),
        })
        .collect::<Result<Vec<u32>, _>>()?;
    let ty = create
        .result(0)
        .map_err(|_| bad("has no result"))?
        .r#type()
        .to_string();
    if !ty.contains("oob = zero") || !ty.contains("interleave = none") {
        return Err(bad(&format!(
            "is {ty}; the runner makes zero-filled, not interleaved maps"
        )));
    }
    let swizzle = [
        ("swizzle_128b", 128),
        ("swizzle_64b", 64),
        ("swizzle_32b", 32),
    ]
    .iter()
    .find(|(name, _)| ty.contains(&format!("swizzle = {name}")))
    .map_or(0, |&(_, bytes)| bytes);
    Ok(Some(KernelParam::TensorMap {
        arg,
        element,
        shape,
        boxed,
        swizzle,
    }))
}

/// The integer or f32 value of an `arith.constant`.
fn constant(v: Value) -> Option<KernelParam> {
    let op = defined_by(v, "arith.constant")?;
    // SAFETY: reading a live op's attributes through the C API.
    unsafe {
        let attr = op.attribute("value").ok()?.to_raw();
        if mlir_sys::mlirAttributeIsAInteger(attr) {
            Some(KernelParam::Index(mlir_sys::mlirIntegerAttrGetValueInt(
                attr,
            )))
        } else if mlir_sys::mlirAttributeIsAFloat(attr) {
            Some(KernelParam::F32(
                mlir_sys::mlirFloatAttrGetValueDouble(attr) as f32,
            ))
        } else {
            None
        }
    }
}

fn dim(v: Value) -> Result<u32, JitError> {
    match constant(v) {
        Some(KernelParam::Index(n)) if (1..=i32::MAX as i64).contains(&n) => Ok(n as u32),
        _ => Err(launch_error(
            "a grid, block or cluster size is not a positive constant",
        )),
    }
}

/// What a kernel operand may be made from: the entry's arguments, then its workspaces
/// (`gpu.alloc`s, in order).
struct Buffers<'c, 'a, 'x> {
    body: melior::ir::BlockRef<'c, 'a>,
    arguments: usize,
    allocs: &'x [mlir_sys::MlirOperation],
}

impl Buffers<'_, '_, '_> {
    /// The buffer `v` is, seen through `memref.view` (a typed view of a workspace's
    /// bytes): an entry argument's position, or the arguments' count plus a workspace's.
    fn of(&self, v: Value) -> Option<usize> {
        if let Some(arg) = entry_argument(v, self.body) {
            return Some(arg);
        }
        let v = match defined_by(v, "memref.view") {
            Some(view) => view.operand(0).ok()?,
            None => v,
        };
        let alloc = defined_by(v, "gpu.alloc")?;
        self.allocs
            .iter()
            .position(|a| a.ptr == alloc.to_raw().ptr)
            .map(|w| self.arguments + w)
    }
}

/// A workspace's size: a `gpu.alloc` of a static memref of integers or f32.
fn workspace(alloc: OperationRef) -> Result<lowp_runtime::kernel::Workspace, JitError> {
    let result = alloc
        .result(0)
        .map_err(|_| launch_error("gpu.alloc without a result"))?;
    let shape = static_shape(result.into(), 0)
        .map_err(|_| launch_error("a gpu.alloc of a dynamic or strided memref"))?;
    let t = MemRefType::try_from(result.r#type())
        .map_err(|_| launch_error("gpu.alloc of a non-memref"))?;
    let element = if t.element().is_f32() {
        Some(4)
    } else {
        melior::ir::r#type::IntegerType::try_from(t.element())
            .ok()
            .map(|i| i.width() / 8)
            .filter(|&b| [1, 2, 4, 8].contains(&b))
    }
    .ok_or_else(|| {
        launch_error(format!(
            "a gpu.alloc of {}: the runner makes buffers of integers or f32",
            t.element()
        ))
    })?;
    let elements: u64 = shape.iter().map(|&d| d as u64).product();
    Ok(lowp_runtime::kernel::Workspace {
        bytes: elements * element as u64,
        element,
    })
}

/// One `gpu.launch_func`: grid, block, cluster, dynamic shared memory and parameters (its
/// name and PTX filled in later).
fn launch_of(launch: OperationRef, buffers: &Buffers, chip: &str) -> Result<GpuKernel, JitError> {
    let attr = launch
        .attribute("operandSegmentSizes")
        .map_err(|_| launch_error("gpu.launch_func without operandSegmentSizes"))?;
    let sizes = lowp_passes::ir::dense_i32s(attr)
        .ok_or_else(|| launch_error("operandSegmentSizes is not an i32 array"))?;
    // asyncDependencies, grid x y z, block x y z, cluster x y z, dynamic shared memory,
    // kernel operands, async object.
    let clustered = sizes.len() == 13 && sizes[7..10] == [1, 1, 1];
    if sizes.len() != 13 || sizes[0] != 0 || !(clustered || sizes[7..10] == [0, 0, 0]) {
        return Err(launch_error(format!(
            "unexpected gpu.launch_func form (segments {sizes:?})"
        )));
    }
    let operand = |i: usize| -> Result<Value, JitError> {
        launch
            .operand(i)
            .map_err(|_| launch_error("gpu.launch_func operand out of range"))
    };
    // With no async dependencies (checked above): grid x y z, block x y z, the cluster
    // size x y z when there is one (a constant: lowp-kernel-cluster-size fixes it in the
    // PTX, and a plain launch forms the clusters), the dynamic shared memory size when
    // there is one, then the kernel operands.
    let grid = (dim(operand(0)?)?, dim(operand(1)?)?, dim(operand(2)?)?);
    let block = (dim(operand(3)?)?, dim(operand(4)?)?, dim(operand(5)?)?);
    let (cluster, at) = if clustered {
        let size = (dim(operand(6)?)?, dim(operand(7)?)?, dim(operand(8)?)?);
        (size, 9)
    } else {
        ((1, 1, 1), 6)
    };
    let shared_bytes = match sizes[10] {
        0 => 0,
        _ => match constant(operand(at)?) {
            Some(KernelParam::Index(b)) => u32::try_from(b)
                .map_err(|_| launch_error(format!("{b} bytes of dynamic shared memory")))?,
            _ => {
                return Err(launch_error(
                    "the dynamic shared memory size is computed on the host; the runner \
                     takes a constant",
                ))
            }
        },
    };
    let first = at + sizes[10] as usize;
    let mut params = Vec::with_capacity(sizes[11] as usize);
    for i in first..first + sizes[11] as usize {
        let v = operand(i)?;
        let p = match (buffers.of(v), constant(v), tensor_map(v, buffers)?) {
            (Some(arg), ..) => KernelParam::MemRef {
                arg,
                shape: static_shape(v, arg)?,
            },
            (None, Some(c), _) => c,
            (None, None, Some(map)) => map,
            (None, None, None) => {
                return Err(launch_error(format!(
                    "kernel operand {} is computed on the host; the runner passes only tensor \
                     maps, arguments, workspaces and constants",
                    i - first
                )))
            }
        };
        params.push(p);
    }
    Ok(GpuKernel {
        name: String::new(),
        chip: chip.to_string(),
        ptx: String::new(),
        grid,
        block,
        shared_bytes,
        cluster,
        params,
        arguments: 0,
        workspaces: Vec::new(),
        then: Vec::new(),
    })
}

/// Move the kernels the `launches` call into the first one's `gpu.module` (outlining made
/// one module per kernel), so that one PTX holds every entry of the op's launches, and
/// point the launches there.
fn merge_kernel_modules(
    module: &Module,
    launches: &[mlir_sys::MlirOperation],
) -> Result<(), JitError> {
    if launches.len() < 2 {
        return Ok(());
    }
    let top = module.body();
    let module_named = |name: &str| {
        let mut op = top.first_operation();
        while let Some(o) = op {
            let named = o
                .attribute("sym_name")
                .ok()
                .and_then(|a| melior::ir::attribute::StringAttribute::try_from(a).ok())
                .is_some_and(|s| s.value() == name);
            if o.name().as_string_ref().as_str() == Ok("gpu.module") && named {
                return Some(o.to_raw());
            }
            op = o.next_in_block();
        }
        None
    };
    let mut target: Option<(String, mlir_sys::MlirOperation)> = None;
    for &raw in launches {
        // SAFETY: the launches are live ops of the module.
        let mut launch = unsafe { melior::ir::operation::OperationRefMut::from_raw(raw) };
        let (root, leaf) = launch
            .attribute("kernel")
            .ok()
            .and_then(lowp_passes::ir::symbol_path)
            .ok_or_else(|| launch_error("gpu.launch_func without a kernel name"))?;
        let Some((first, into)) = &target else {
            let m = module_named(&root)
                .ok_or_else(|| launch_error(format!("no gpu.module @{root}")))?;
            target = Some((root, m));
            continue;
        };
        if root == *first {
            continue;
        }
        let from =
            module_named(&root).ok_or_else(|| launch_error(format!("no gpu.module @{root}")))?;
        // SAFETY: moving the ops of a live gpu.module into another one's body, then
        // destroying the emptied module (no symbol refers to it once the launch is moved).
        unsafe {
            let into_block =
                mlir_sys::mlirRegionGetFirstBlock(mlir_sys::mlirOperationGetRegion(*into, 0));
            let from_block =
                mlir_sys::mlirRegionGetFirstBlock(mlir_sys::mlirOperationGetRegion(from, 0));
            loop {
                let op = mlir_sys::mlirBlockGetFirstOperation(from_block);
                if op.ptr.is_null() {
                    break;
                }
                // Outlining names every kernel after its function, in modules of their own
                // names: the moved one takes its module's (unique among the top's symbols).
                let mut moved = melior::ir::operation::OperationRefMut::from_raw(op);
                let named = moved
                    .attribute("sym_name")
                    .ok()
                    .and_then(|a| melior::ir::attribute::StringAttribute::try_from(a).ok())
                    .is_some_and(|s| s.value() == leaf);
                if named {
                    let context = moved.context();
                    let name = melior::ir::attribute::StringAttribute::new(context.to_ref(), &root);
                    moved.set_attribute("sym_name", name.into());
                }
                mlir_sys::mlirOperationRemoveFromParent(op);
                mlir_sys::mlirBlockAppendOwnedOperation(into_block, op);
            }
            mlir_sys::mlirOperationDestroy(from);
        }
        let context = module.context();
        // SAFETY: the module's context outlives this function.
        let context = unsafe { context.to_ref() };
        let moved = melior::ir::Attribute::parse(context, &format!("@{first}::@{root}"))
            .ok_or_else(|| launch_error(format!("cannot name @{first}::@{root}")))?;
        launch.set_attribute("kernel", moved);
    }
    Ok(())
}

impl Session {
    /// Compile `entry` of a lowp module to a kernel for `chip` (an NVIDIA `sm_XY[a]`):
    /// `kernel` is `auto` (FP8 tcgen05 on sm_100a, wgmma on sm_90a, mma.sync on sm_89, where
    /// the formats allow; else the generic kernel), `tcgen05` / `wgmma` / `mma-sync` (an error
    /// when the op cannot use it) or `generic`. The module is lowered in
    /// place.
    pub fn compile_nvvm(
        &self,
        module: &mut Module,
        entry: &str,
        chip: &str,
        kernel: &str,
    ) -> Result<GpuKernel, JitError> {
        self.compile_nvvm_with(module, entry, chip, kernel, &[])
    }

    /// [`Session::compile_nvvm`] with `lowp-to-nvvm`'s tuning options ([`NVVM_TUNING`]:
    /// `split-k`, `multicast`) as `(name, value)` pairs; another name or a value the pass
    /// does not accept is an error that says which.
    pub fn compile_nvvm_with(
        &self,
        module: &mut Module,
        entry: &str,
        chip: &str,
        kernel: &str,
        tuning: &[(&str, &str)],
    ) -> Result<GpuKernel, JitError> {
        let pass = &lowp_passes::to_nvvm::PASS;
        let mut values: Vec<String> = pass.options.iter().map(|o| o.default.into()).collect();
        for &(name, value) in tuning {
            let at = pass
                .options
                .iter()
                .position(|o| o.name == name)
                .filter(|_| NVVM_TUNING.contains(&name))
                .ok_or_else(|| {
                    launch_error(format!(
                        "'{name}' is not a tuning option of {} (expected one of {})",
                        pass.argument,
                        NVVM_TUNING.join(", ")
                    ))
                })?;
            values[at] = value.to_string();
        }
        pass.parse_options(&values)
            .map_err(|e| launch_error(e.to_string()))?;
        let target: lowp_codegen::Chip = chip.parse().map_err(launch_error)?;
        if target.vendor != lowp_codegen::Vendor::Nvidia {
            return Err(launch_error(format!(
                "'{chip}' is not an NVIDIA chip (expected sm_89, sm_90a, sm_100a)"
            )));
        }
        if !lowp_passes::to_nvvm::KERNELS.contains(&kernel) {
            return Err(launch_error(format!(
                "unknown kernel '{kernel}' (expected one of {})",
                lowp_passes::to_nvvm::KERNELS.join(", ")
            )));
        }
        // The runner launches a grid of constant size with the shapes in the kernel.
        if let Some(func) = crate::find_function(module, entry) {
            let ft = crate::entry_type(func, entry).map_err(launch_error)?;
            for i in 0..ft.input_count() {
                let t = ft.input(i).map_err(|e| launch_error(e.to_string()))?;
                // SAFETY: predicates on a live type.
                let dynamic = unsafe {
                    let raw = t.to_raw();
                    mlir_sys::mlirTypeIsAShaped(raw)
                        && mlir_sys::mlirShapedTypeHasRank(raw)
                        && !mlir_sys::mlirShapedTypeHasStaticShape(raw)
                };
                if dynamic {
                    return Err(launch_error(format!(
                        "argument #{i} of @{entry} is {t}: the GPU runner launches kernels \
                         of static shapes (lowp-translate compiles dynamic ones)"
                    )));
                }
            }
        }
        self.run_pipeline(
            module,
            &lowp_passes::pipelines::nvvm_front_with(chip, kernel, tuning),
        )?;

        // The entry, its launches in order, and the workspaces they share (`gpu.alloc`s
        // of the entry: `translate-once`).
        let func = crate::find_function(module, entry).ok_or_else(|| JitError::NoFunction {
            name: entry.to_string(),
        })?;
        let body = func
            .region(0)
            .ok()
            .and_then(|r| r.first_block())
            .ok_or_else(|| launch_error(format!("'{entry}' has no body")))?;
        let arguments = body.argument_count();
        let mut launches = Vec::new();
        let mut allocs = Vec::new();
        func.walk(WalkOrder::PreOrder, |op| {
            match op.name().as_string_ref().as_str() {
                Ok("gpu.launch_func") => launches.push(op.to_raw()),
                Ok("gpu.alloc") => allocs.push(op.to_raw()),
                _ => {}
            }
            WalkResult::Advance
        });
        if launches.is_empty() {
            return Err(launch_error(format!(
                "'{entry}' lowers to no kernel launch; the GPU runner takes one \
                 lowp.scaled_matmul per entry"
            )));
        }
        let mut workspaces = Vec::with_capacity(allocs.len());
        for &raw in &allocs {
            // SAFETY: collected from the live function above.
            let alloc = unsafe { OperationRef::from_raw(raw) };
            workspaces.push(workspace(alloc)?);
        }
        let buffers = Buffers {
            body,
            arguments,
            allocs: &allocs,
        };
        let mut kernels = Vec::with_capacity(launches.len());
        for &raw in &launches {
            // SAFETY: collected from the live function above.
            let launch = unsafe { OperationRef::from_raw(raw) };
            kernels.push(launch_of(launch, &buffers, chip)?);
        }
        // One PTX module for all of them: the outlined kernels' modules merged.
        merge_kernel_modules(module, &launches)?;

        self.run_pipeline(
            module,
            &lowp_passes::pipelines::nvvm_kernel_passes(target.cpu, target.features),
        )?;
        // The kernels' names, read after the kernel passes (lowp-legalize-ptx-names renames
        // what PTX cannot spell), in launch order.
        let mut names = Vec::new();
        crate::find_function(module, entry)
            .ok_or_else(|| JitError::NoFunction {
                name: entry.to_string(),
            })?
            .walk(WalkOrder::PreOrder, |op| {
                if op.name().as_string_ref().as_str() == Ok("gpu.launch_func") {
                    names.push(
                        op.attribute("kernel")
                            .ok()
                            .and_then(lowp_passes::ir::symbol_path)
                            .map(|(_, leaf)| leaf)
                            .unwrap_or_default(),
                    );
                }
                WalkResult::Advance
            });
        if names.len() != kernels.len() || names.iter().any(String::is_empty) {
            return Err(launch_error("gpu.launch_func without a kernel name"));
        }
        let entry_decl = format!(".entry {}(", names[0]);
        let ptx = lowp_codegen::gpu_objects(module)
            .into_iter()
            .map(|(_, object)| String::from_utf8_lossy(&object).into_owned())
            .find(|ptx| ptx.contains(&entry_decl))
            .ok_or_else(|| launch_error(format!("no PTX holds kernel '{}'", names[0])))?;
        for (kernel, name) in kernels.iter_mut().zip(names) {
            kernel.name = name;
            kernel.ptx = ptx.clone();
        }
        let mut kernel = kernels.remove(0);
        if !workspaces.is_empty() {
            kernel.arguments = arguments;
            kernel.workspaces = workspaces;
        }
        kernel.then = kernels;
        // What a bundle's runner checks, checked where the kernel is made.
        kernel.ptx_check().map_err(launch_error)?;
        Ok(kernel)
    }
}
