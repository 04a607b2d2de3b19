//! lowp's cross-crate integration tests, one binary (each test binary links all of MLIR).

mod builders;
mod docs;
mod expand_quantize;
mod fuzz;
mod gpu_kernels;
mod to_loops;
mod to_nvvm;
mod to_rocdl;
