// RUN: lowp-opt %s --pass-pipeline='builtin.module(gpu.module(lowp-extern-dynamic-shared))' | FileCheck %s

// The zero-sized shared global convert-gpu-to-nvvm makes for gpu.dynamic_shared_memory
// becomes external; sized shared globals, other address spaces and initialized globals
// stay as they are.
// CHECK-LABEL: gpu.module @kernels
// CHECK:       llvm.mlir.global external @__dynamic_shmem__0() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<0 x i8>
// CHECK:       llvm.mlir.global internal @tile() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<64 x i8>
// CHECK:       llvm.mlir.global internal @global_zero() {addr_space = 1 : i32, alignment = 16 : i64} : !llvm.array<0 x i8>
// CHECK:       llvm.mlir.global internal @init(dense<0> : tensor<0xi8>) {addr_space = 3 : i32} : !llvm.array<0 x i8>
gpu.module @kernels {
  llvm.mlir.global internal @__dynamic_shmem__0() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<0 x i8>
  llvm.mlir.global internal @tile() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<64 x i8>
  llvm.mlir.global internal @global_zero() {addr_space = 1 : i32, alignment = 16 : i64} : !llvm.array<0 x i8>
  llvm.mlir.global internal @init(dense<0> : tensor<0xi8>) {addr_space = 3 : i32} : !llvm.array<0 x i8>
}

// In PTX: lit/Target/ptx-wgmma-pipeline.mlir (the pass runs in
// lowp_passes::pipelines::nvvm_kernel_passes).
