//! A scaled-matmul problem (`lowp_formats::problem`) on the GPU with a compiled kernel:
//! upload every argument as the entry takes it (the result poisoned, so an element the
//! kernel does not write fails the check), launch, read the result back, and time
//! repeated launches with events. `lowp-run --target cuda` and `lowp-gpu-run` both run
//! kernels through here.

use lowp_formats::problem::{MatmulInputs, MatmulSpec, Role};

use crate::kernel::GpuKernel;
use crate::{Gpu, GpuError};

/// What one run gave.
#[derive(Clone, Debug)]
pub struct GpuRun {
    /// The result, as f32.
    pub result: Vec<f32>,
    /// With timing: the median milliseconds of the timed launches and their count.
    pub median_ms: Option<(f64, usize)>,
}

/// Run `kernel` on `spec`'s `inputs` on `gpu`, the entry's arguments in `roles` order;
/// with `bench`, also time that many launches.
pub fn run(
    gpu: &Gpu,
    kernel: &GpuKernel,
    spec: &MatmulSpec,
    roles: &[Role],
    inputs: &MatmulInputs,
    bench: Option<usize>,
) -> Result<GpuRun, GpuError> {
    let module = gpu.load_ptx(&kernel.ptx)?;
    let mut buffers = Vec::with_capacity(roles.len());
    for &role in roles {
        let bytes = spec.role_bytes(role, inputs);
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
        Some(runs) => Some((gpu.time(runs, launch)?, runs)),
        None => None,
    };
    Ok(GpuRun { result, median_ms })
}
