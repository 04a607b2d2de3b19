//! # lowp-runtime
//!
//! The CUDA side of lowp, without LLVM or MLIR: open a GPU through the driver API (loaded at
//! run time, so everything builds and its tests pass on machines with no CUDA at all), load
//! PTX (`cuModuleLoadData`, JIT-compiled by the driver), move buffers, launch kernels and
//! time them with events. Every failure is a [`GpuError`]; a machine without a driver or a
//! GPU gets one line that says so. [`kernel`] describes a compiled kernel's launch (and
//! carries it between machines as a manifest); [`matmul`] runs a scaled-matmul problem of
//! `lowp-formats` with one.

#![deny(missing_docs)]

pub mod kernel;
pub mod matmul;
pub mod tensor_map;

use std::ffi::{c_void, CString};
use std::sync::Arc;

use cudarc::driver::result;
use cudarc::driver::sys;
use cudarc::driver::{CudaContext, CudaSlice, CudaStream, DevicePtr, DevicePtrMut};

/// Why a GPU operation failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum GpuError {
    /// No CUDA driver library on this machine.
    #[error(
        "no CUDA driver: libcuda.so could not be loaded (this machine has no NVIDIA GPU or driver)"
    )]
    NoDriver,
    /// The driver loaded but reports no device with this ordinal.
    #[error("no CUDA device {ordinal}: the driver reports {count}")]
    NoDevice {
        /// Ordinal asked for.
        ordinal: usize,
        /// Devices present.
        count: i32,
    },
    /// A driver call failed.
    #[error("CUDA driver error in {what}: {error:?}")]
    Driver {
        /// What was being done.
        what: &'static str,
        /// The driver's code.
        error: sys::cudaError_enum,
    },
    /// Launch arguments that cannot be right.
    #[error("{0}")]
    Invalid(String),
}

fn driver(what: &'static str) -> impl Fn(result::DriverError) -> GpuError {
    move |e| GpuError::Driver { what, error: e.0 }
}

/// Whether this machine has a loadable CUDA driver (no side effects).
pub fn driver_present() -> bool {
    // SAFETY: only tries to dlopen the driver library.
    unsafe { sys::is_culib_present() }
}

/// How [`Gpu::time`] times a kernel: the median of `runs` launches after one warm-up;
/// `cold` evicts the L2 before each (a decode-shape problem whose weights fit in the L2
/// would otherwise be timed reading the cache).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Timing {
    /// Timed launches.
    pub runs: usize,
    /// Flush the L2 before each timed launch.
    pub cold: bool,
}

impl Timing {
    /// `runs` launches, back to back (the inputs stay in the L2 where they fit).
    pub fn warm(runs: usize) -> Self {
        Self { runs, cold: false }
    }
}

/// An open GPU: a context and its default stream.
pub struct Gpu {
    ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
}

/// A loaded PTX module.
pub struct Module {
    raw: sys::CUmodule,
    gpu: Arc<CudaContext>,
}

/// A kernel of a loaded module.
#[derive(Clone, Copy)]
pub struct Kernel {
    raw: sys::CUfunction,
}

/// Launch geometry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LaunchConfig {
    /// Blocks in x, y, z.
    pub grid: (u32, u32, u32),
    /// Threads per block in x, y, z.
    pub block: (u32, u32, u32),
    /// Dynamic shared memory per block, bytes.
    pub shared_bytes: u32,
}

impl Gpu {
    /// Open device `ordinal`.
    pub fn open(ordinal: usize) -> Result<Self, GpuError> {
        if !driver_present() {
            return Err(GpuError::NoDriver);
        }
        result::init().map_err(driver("cuInit"))?;
        let count = result::device::get_count().map_err(driver("cuDeviceGetCount"))?;
        if ordinal as i64 >= count as i64 {
            return Err(GpuError::NoDevice { ordinal, count });
        }
        let ctx = CudaContext::new(ordinal).map_err(driver("context creation"))?;
        let stream = ctx.default_stream();
        Ok(Self { ctx, stream })
    }

    /// `"<name> (sm_XY)"`.
    pub fn describe(&self) -> Result<String, GpuError> {
        let name = self.ctx.name().map_err(driver("cuDeviceGetName"))?;
        let (major, minor) = self
            .ctx
            .compute_capability()
            .map_err(driver("compute capability"))?;
        Ok(format!("{name} (sm_{major}{minor})"))
    }

    /// Load a PTX module; the driver JIT-compiles it for this GPU.
    pub fn load_ptx(&self, ptx: &str) -> Result<Module, GpuError> {
        let image =
            CString::new(ptx).map_err(|_| GpuError::Invalid("PTX holds a NUL byte".into()))?;
        self.ctx
            .bind_to_thread()
            .map_err(driver("cuCtxSetCurrent"))?;
        // SAFETY: a NUL-terminated PTX image, alive for the call.
        let raw = unsafe { result::module::load_data(image.as_ptr() as *const c_void) }
            .map_err(driver("cuModuleLoadData"))?;
        Ok(Module {
            raw,
            gpu: self.ctx.clone(),
        })
    }

    /// Copy a host slice to a new device buffer.
    pub fn upload<T: cudarc::driver::DeviceRepr>(
        &self,
        data: &[T],
    ) -> Result<CudaSlice<T>, GpuError> {
        self.stream.clone_htod(data).map_err(driver("cuMemcpyHtoD"))
    }

    /// A zeroed device buffer of `n` elements.
    pub fn zeros<T: cudarc::driver::DeviceRepr + cudarc::driver::ValidAsZeroBits>(
        &self,
        n: usize,
    ) -> Result<CudaSlice<T>, GpuError> {
        self.stream.alloc_zeros(n).map_err(driver("cuMemAlloc"))
    }

    /// Copy a device buffer back.
    pub fn download<T: cudarc::driver::DeviceRepr>(
        &self,
        buf: &CudaSlice<T>,
    ) -> Result<Vec<T>, GpuError> {
        self.stream.clone_dtoh(buf).map_err(driver("cuMemcpyDtoH"))
    }

    /// The raw device address of a buffer, for kernel parameters.
    pub fn address<T>(&self, buf: &CudaSlice<T>) -> u64 {
        let (ptr, _sync) = buf.device_ptr(&self.stream);
        ptr
    }

    /// The raw device address of a buffer the kernel writes.
    pub fn address_mut<T>(&self, buf: &mut CudaSlice<T>) -> u64 {
        let (ptr, _sync) = buf.device_ptr_mut(&self.stream);
        ptr
    }

    /// Launch `kernel` with `params`, each a pointer to one parameter value (as
    /// `cuLaunchKernel` takes them).
    ///
    /// # Safety
    /// `params` must match the kernel's signature and every device address in them must be
    /// valid for what the kernel reads and writes.
    pub unsafe fn launch(
        &self,
        kernel: Kernel,
        cfg: LaunchConfig,
        params: &mut [*mut c_void],
    ) -> Result<(), GpuError> {
        let (bx, by, bz) = cfg.block;
        if bx as u64 * by as u64 * bz as u64 > 1024 {
            return Err(GpuError::Invalid(format!(
                "{bx}x{by}x{bz} threads per block exceed 1024"
            )));
        }
        self.ctx
            .bind_to_thread()
            .map_err(driver("cuCtxSetCurrent"))?;
        // Past 48 KiB a kernel takes dynamic shared memory only once allowed to.
        if cfg.shared_bytes > 48 * 1024 {
            // SAFETY: a live kernel of a loaded module; the attribute takes a byte count.
            unsafe {
                result::function::set_function_attribute(
                    kernel.raw,
                    sys::CUfunction_attribute_enum::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                    cfg.shared_bytes as i32,
                )
            }
            .map_err(driver("cuFuncSetAttribute"))?;
        }
        // SAFETY: per this function's contract.
        unsafe {
            result::launch_kernel(
                kernel.raw,
                cfg.grid,
                cfg.block,
                cfg.shared_bytes,
                self.stream.cu_stream(),
                params,
            )
        }
        .map_err(driver("cuLaunchKernel"))
    }

    /// Wait for the stream.
    pub fn synchronize(&self) -> Result<(), GpuError> {
        self.stream
            .synchronize()
            .map_err(driver("cuStreamSynchronize"))
    }

    /// Median milliseconds of `timing.runs` calls of `f` (after one warm-up), timed with
    /// events on the stream; with `timing.cold`, each timed call follows (outside its
    /// events) a write of a buffer twice the L2's size, so that it reads its inputs from
    /// device memory rather than from what the call before left in the cache.
    pub fn time(
        &self,
        timing: Timing,
        mut f: impl FnMut() -> Result<(), GpuError>,
    ) -> Result<f64, GpuError> {
        f()?;
        let mut flush = if timing.cold {
            let l2 = self
                .ctx
                .attribute(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE)
                .map_err(driver("cuDeviceGetAttribute"))?;
            Some(self.zeros::<u8>(2 * (l2.max(1) as usize))?)
        } else {
            None
        };
        let runs = timing.runs;
        let timing = Some(sys::CUevent_flags::CU_EVENT_DEFAULT);
        let mut times = Vec::with_capacity(runs);
        for _ in 0..runs.max(1) {
            if let Some(buffer) = flush.as_mut() {
                self.stream
                    .memset_zeros(buffer)
                    .map_err(driver("cuMemsetD8Async"))?;
            }
            let start = self
                .ctx
                .new_event(timing)
                .map_err(driver("cuEventCreate"))?;
            let end = self
                .ctx
                .new_event(timing)
                .map_err(driver("cuEventCreate"))?;
            start
                .record(&self.stream)
                .map_err(driver("cuEventRecord"))?;
            f()?;
            end.record(&self.stream).map_err(driver("cuEventRecord"))?;
            end.synchronize().map_err(driver("cuEventSynchronize"))?;
            times.push(
                start
                    .elapsed_ms(&end)
                    .map_err(driver("cuEventElapsedTime"))? as f64,
            );
        }
        times.sort_by(f64::total_cmp);
        Ok(times[times.len() / 2])
    }
}

impl Module {
    /// A kernel by name.
    pub fn kernel(&self, name: &str) -> Result<Kernel, GpuError> {
        let c = CString::new(name)
            .map_err(|_| GpuError::Invalid(format!("bad kernel name {name:?}")))?;
        self.gpu
            .bind_to_thread()
            .map_err(driver("cuCtxSetCurrent"))?;
        // SAFETY: a live module and a NUL-terminated name.
        let raw = unsafe { result::module::get_function(self.raw, c) }
            .map_err(driver("cuModuleGetFunction"))?;
        Ok(Kernel { raw })
    }
}

impl Drop for Module {
    fn drop(&mut self) {
        let _ = self.gpu.bind_to_thread();
        // SAFETY: loaded by load_ptx, unloaded once.
        let _ = unsafe { result::module::unload(self.raw) };
    }
}
