//! The runtime on whatever machine runs the tests: without a driver every entry point says
//! so in one line; with a GPU a tiny PTX kernel runs and is checked.

use lowp_runtime::{driver_present, Gpu, GpuError, LaunchConfig};

/// Adds 1.0 to each of n floats: PTX that lowp-translate produced from
/// `inputs/add_one.mlir` (the runtime must not need LLVM to be tested).
const PTX: &str = include_str!("inputs/add_one.ptx");

#[test]
fn open_says_why_not_or_runs_a_kernel() {
    match Gpu::open(0) {
        Err(GpuError::NoDriver) => {
            assert!(!driver_present());
            let msg = GpuError::NoDriver.to_string();
            assert!(
                msg.contains("no CUDA driver") && !msg.contains('\n'),
                "{msg}"
            );
        }
        Err(GpuError::NoDevice { count, .. }) => assert!(count >= 0),
        Err(e) => panic!("unexpected: {e}"),
        Ok(gpu) => {
            assert!(gpu.describe().unwrap().contains("sm_"));
            let module = gpu.load_ptx(PTX).unwrap();
            let kernel = module.kernel("add_one").unwrap();
            let data: Vec<f32> = (0..1000).map(|i| i as f32).collect();
            let mut buf = gpu.upload(&data).unwrap();
            let mut p = gpu.address_mut(&mut buf);
            let mut n = data.len() as u32;
            let mut params = [&mut p as *mut u64 as *mut _, &mut n as *mut u32 as *mut _];
            let cfg = LaunchConfig {
                grid: (4, 1, 1),
                block: (256, 1, 1),
                shared_bytes: 0,
            };
            // SAFETY: the parameters match add_one(u64, u32) and the buffer holds n floats.
            unsafe { gpu.launch(kernel, cfg, &mut params) }.unwrap();
            let back = gpu.download(&buf).unwrap();
            assert!(back.iter().zip(&data).all(|(b, d)| *b == d + 1.0));
            assert!(module.kernel("missing").is_err());
        }
    }
}
