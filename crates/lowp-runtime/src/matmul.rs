//! A scaled-matmul problem (`lowp_formats::problem`) on the GPU with a compiled kernel:
//! upload every argument as the entry takes it (the result poisoned, so an element the
//! kernel does not write fails the check), launch, read the result back, and time
//! repeated launches with events. `lowp-run --target cuda` and `lowp-gpu-run` both run
//! kernels through here.

use lowp_formats::problem::{MatmulInputs, MatmulSpec, Role};

use crate::kernel::GpuKernel;
use crate::{Gpu, GpuError, Timing};

/// What one run gave.
#[derive(Clone, Debug)]
pub struct GpuRun {
    /// The result, as f32.
    pub result: Vec<f32>,
    /// With timing: the median milliseconds of the timed launches and their count.
    pub median_ms: Option<(f64, usize)>,
}

/// Run `kernel` on `spec`'s `inputs` on `gpu`, the entry's arguments in `roles` order;
/// with `bench`, also time launches as it says.
pub fn run(
    gpu: &Gpu,
    kernel: &GpuKernel,
    spec: &MatmulSpec,
    roles: &[Role],
    inputs: &MatmulInputs,
    bench: Option<Timing>,
) -> Result<GpuRun, GpuError> {
    let arguments: Vec<Vec<u8>> = roles.iter().map(|&r| spec.role_bytes(r, inputs)).collect();
    let sizes: Vec<u64> = arguments.iter().map(|a| a.len() as u64).collect();
    fits(kernel, spec, roles, &sizes)?;
    let module = gpu.load_ptx(&kernel.ptx)?;
    let mut buffers = Vec::with_capacity(roles.len());
    for bytes in arguments {
        // A zero-length buffer cannot be allocated; one byte stands in (never read).
        let bytes = if bytes.is_empty() { vec![0] } else { bytes };
        buffers.push(gpu.upload(&bytes)?);
    }
    let addresses: Vec<u64> = buffers.iter().map(|b| gpu.address(b)).collect();
    // The parameters once (tensor maps written to the GPU before any launch, none timed).
    let mut bound = kernel.bind(gpu, &addresses)?;
    let mut launch = || {
        // SAFETY: each address holds its argument, uploaded with the entry's shapes, alive
        // with `buffers` past every launch.
        unsafe { kernel.launch_bound(gpu, &module, &mut bound) }
    };
    launch()?;
    gpu.synchronize()?;
    let out = roles
        .iter()
        .position(|&r| r == Role::Out)
        .ok_or_else(|| GpuError::Invalid("the entry has no result argument".into()))?;
    let result = spec.result_from_bytes(&gpu.download(&buffers[out])?);
    let median_ms = match bench {
        Some(timing) => Some((gpu.time(timing, launch)?, timing.runs)),
        None => None,
    };
    Ok(GpuRun { result, median_ms })
}

/// Whether `kernel` can run `spec` with the entry's arguments in `roles` order, checked
/// before any device is touched: its grid is whole clusters, and every memref and
/// tensor-map parameter spans exactly the argument it is given (a bundle whose launch
/// manifest disagrees with its problem, in a size, a layout's scale count or packing,
/// would otherwise compute another problem, or read or write past a device buffer).
pub fn check(kernel: &GpuKernel, spec: &MatmulSpec, roles: &[Role]) -> Result<(), GpuError> {
    for launch in std::iter::once(kernel).chain(&kernel.then) {
        launch.cluster_check()?;
    }
    let sizes: Vec<u64> = roles.iter().map(|&r| spec.role_len(r)).collect();
    fits(kernel, spec, roles, &sizes)
}

/// Whether every memref and tensor-map parameter of `kernel` spans exactly the argument
/// it is given, of `sizes[arg]` bytes.
fn fits(
    kernel: &GpuKernel,
    spec: &MatmulSpec,
    roles: &[Role],
    sizes: &[u64],
) -> Result<(), GpuError> {
    let params = std::iter::once(kernel)
        .chain(&kernel.then)
        .flat_map(|launch| &launch.params);
    for p in params {
        let (arg, shape) = match p {
            crate::kernel::KernelParam::MemRef { arg, shape }
            | crate::kernel::KernelParam::TensorMap { arg, shape, .. } => (*arg, shape),
            _ => continue,
        };
        if !kernel.workspaces.is_empty() && arg >= kernel.arguments {
            // A workspace: spanned exactly in its elements.
            let Some(w) = kernel.workspaces.get(arg - kernel.arguments) else {
                return Err(GpuError::Invalid(format!(
                    "a kernel parameter reads buffer {arg}; the kernel has {} arguments and {} \
                     workspaces",
                    kernel.arguments,
                    kernel.workspaces.len()
                )));
            };
            let elements: Option<u64> = shape
                .iter()
                .try_fold(1u64, |n, &d| n.checked_mul(u64::try_from(d).ok()?));
            let element = match p {
                crate::kernel::KernelParam::TensorMap { element, .. } => element.bytes(),
                _ => w.element as u64,
            };
            if elements.and_then(|n| n.checked_mul(element)) != Some(w.bytes) {
                return Err(GpuError::Invalid(format!(
                    "the kernel addresses workspace {} as {shape:?}; it has {} bytes",
                    arg - kernel.arguments,
                    w.bytes
                )));
            }
            continue;
        }
        if !kernel.workspaces.is_empty() && roles.len() != kernel.arguments {
            return Err(GpuError::Invalid(format!(
                "the kernel takes {} arguments before its workspaces; the entry has {}",
                kernel.arguments,
                roles.len()
            )));
        }
        let (Some(&role), Some(&bytes)) = (roles.get(arg), sizes.get(arg)) else {
            return Err(GpuError::Invalid(format!(
                "a kernel parameter reads argument {arg}; the entry has {}",
                roles.len()
            )));
        };
        let elements = shape
            .iter()
            .try_fold(1u64, |n, &d| n.checked_mul(u64::try_from(d).ok()?));
        let need = elements.and_then(|n| n.checked_mul(spec.role_element_bytes(role)));
        if need != Some(bytes) {
            let over = if need.is_none_or(|need| need > bytes) {
                "beyond"
            } else {
                "short of"
            };
            return Err(GpuError::Invalid(format!(
                "the kernel addresses argument {arg} ({role:?}) as {shape:?}, {over} its \
                 {bytes} bytes in the problem"
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::KernelParam;
    use lowp_formats::{ScaleLayout, ScaledFormat};

    #[test]
    fn parameters_not_spanning_their_argument_are_refused_before_any_launch() {
        let spec = MatmulSpec {
            m: 16,
            n: 8,
            k: 64,
            lhs: ScaledFormat::F4E2M1,
            rhs: ScaledFormat::F8E4M3,
            lhs_layout: ScaleLayout::MX,
            rhs_layout: ScaleLayout::PerTensor,
            lhs_packed: true,
            rhs_packed: false,
            bias: false,
            bf16: false,
        };
        let roles = spec.roles();
        let inputs = spec.inputs(1);
        let arguments: Vec<u64> = roles
            .iter()
            .map(|&r| spec.role_bytes(r, &inputs).len() as u64)
            .collect();
        // What the check before a run computes from the problem alone.
        let lengths: Vec<u64> = roles.iter().map(|&r| spec.role_len(r)).collect();
        assert_eq!(lengths, arguments);
        let at = |role: Role| roles.iter().position(|&r| r == role).unwrap();
        let mem = |arg: usize, shape: &[i64]| KernelParam::MemRef {
            arg,
            shape: shape.to_vec(),
        };
        let kernel = |params: Vec<KernelParam>| GpuKernel {
            name: "k".into(),
            chip: "sm_90a".into(),
            ptx: String::new(),
            grid: (1, 1, 1),
            block: (128, 1, 1),
            shared_bytes: 0,
            cluster: (1, 1, 1),
            params,
            arguments: 0,
            workspaces: Vec::new(),
            then: Vec::new(),
        };
        // As lowered: packed A is 16 x 32 bytes, its E8M0 scales 16 x 2, C 16 x 8 f32.
        let exact = vec![
            mem(at(Role::Lhs), &[16, 32]),
            mem(at(Role::LhsScales), &[16, 2]),
            mem(at(Role::Out), &[16, 8]),
        ];
        assert!(fits(&kernel(exact), &spec, &roles, &arguments).is_ok());
        for (param, what) in [
            (mem(at(Role::Lhs), &[16, 64]), "Lhs"),
            // C's f32 elements: 16 x 9 of them is 576 bytes, 512 are there.
            (mem(at(Role::Out), &[16, 9]), "Out"),
            (mem(0, &[i64::MAX, 4]), "Lhs"),
            // A smaller problem than the bundle's (M 15 of 16): another result.
            (
                mem(at(Role::Out), &[15, 8]),
                "as [15, 8], short of its 512 bytes in the problem",
            ),
            // MX scales per 16 where the problem has them per 32.
            (
                mem(at(Role::LhsScales), &[16, 4]),
                "as [16, 4], beyond its 32 bytes",
            ),
        ] {
            let e = fits(&kernel(vec![param]), &spec, &roles, &arguments).unwrap_err();
            assert!(e.to_string().contains(what), "{e}");
        }
        let e = fits(&kernel(vec![mem(9, &[1])]), &spec, &roles, &arguments).unwrap_err();
        assert!(e.to_string().contains("argument 9"), "{e}");
    }
}
