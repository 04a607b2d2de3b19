// Kernels lowered for one chip and compiled for another: refused at the first op the
// chip has no instruction for, with its location (LLVM's backend would stop with a fatal
// error naming only the intrinsic). Then the fatal-error path itself: an upstream pipeline
// nested under the wrong op ends with a one-line error and status 1, not an abort.

// RUN: not lowp-translate %s --pipeline='builtin.module(func.func(lowp-to-rocdl{chip=gfx950}))' --emit=asm --chip=gfx942 2>&1 | FileCheck %s --check-prefix=GFX942
// GFX942: wrong-chip.mlir:[[@LINE+24]]:3: error: 'rocdl.mfma.scale.f32.16x16x128.f8f6f4' is a gfx950 operation, which gfx942 does not have

// RUN: not lowp-translate %s --pipeline='builtin.module(func.func(lowp-to-rocdl{chip=gfx950}))' --emit=ptx --chip=sm_90a 2>&1 | FileCheck %s --check-prefix=ROCDL
// ROCDL: wrong-chip.mlir:[[@LINE+21]]:3: error: 'rocdl.mfma.scale.f32.16x16x128.f8f6f4' is an AMD (ROCDL) operation, which sm_90a does not have

// RUN: not lowp-translate %s --pipeline='builtin.module(func.func(lowp-to-nvvm{chip=sm_100a}))' --emit=asm --chip=gfx950 2>&1 | FileCheck %s --check-prefix=NVVM
// NVVM: wrong-chip.mlir:[[@LINE+18]]:3: error: 'nvvm.{{[a-z0-9_.]+}}' is an NVIDIA (NVVM) operation, which gfx950 does not have

// An intrinsic called through llvm.call_intrinsic (as mma.sync's fp8 shapes are) reads as
// the op.
// RUN: not lowp-translate %S/Inputs/nvvm-call-intrinsic.mlir --emit=asm --chip=gfx942 2>&1 | FileCheck %s --check-prefix=CALL
// CALL: nvvm-call-intrinsic.mlir:5:12: error: 'llvm.nvvm.read.ptx.sreg.laneid' is an NVIDIA (NVVM) operation, which gfx942 does not have

// A vendor's intrinsics compiled for the host; host code (its stack in address space 0)
// compiled for an AMD chip, whose stack is address space 5.
// RUN: not lowp-translate %S/Inputs/nvvm-call-intrinsic.mlir --emit=asm --chip=host 2>&1 | FileCheck %s --check-prefix=HOSTNVVM
// HOSTNVVM: nvvm-call-intrinsic.mlir:5:12: error: 'llvm.nvvm.read.ptx.sreg.laneid' is an NVIDIA (NVVM) operation, which host does not have
// RUN: not lowp-translate %S/../Run/Inputs/mxfp4.mlir --pipeline='builtin.module(lowp-cpu-pipeline)' --emit=asm --chip=gfx942 2>&1 | FileCheck %s --check-prefix=HOSTCODE
// HOSTCODE: mxfp4.mlir:{{[0-9]+}}:{{[0-9]+}}: error: 'llvm.alloca' allocates in address space 0, as host code does; gfx942's stack is address space 5

// RUN: not lowp-translate %s --pipeline='builtin.module(func.func(gpu-lower-to-nvvm-pipeline))' --emit=ptx --chip=sm_90a 2>&1 | FileCheck %s --check-prefix=FATAL
// FATAL: lowp-translate: error: LLVM stopped: Can't add pass 'GpuKernelOutliningPass'

func.func @mx(%a: memref<128x256xf4E2M1FN>, %sa: memref<128x8xf8E8M0FNU>, %b: memref<64x256xf4E2M1FN>, %sb: memref<64x8xf8E8M0FNU>, %c: memref<128x64xf32>) {
  lowp.scaled_matmul %a[%sa], %b[%sb] into %c layouts(#lowp.mx<32>, #lowp.mx<32>)
      : memref<128x256xf4E2M1FN>[memref<128x8xf8E8M0FNU>], memref<64x256xf4E2M1FN>[memref<64x8xf8E8M0FNU>] -> memref<128x64xf32>
  return
}
