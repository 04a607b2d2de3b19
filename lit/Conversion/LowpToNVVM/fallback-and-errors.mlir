// RUN: lowp-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(lowp-to-nvvm{chip=sm_90a},cse))' | FileCheck %s
// RUN: lowp-opt %s --split-input-file --verify-diagnostics --pass-pipeline='builtin.module(func.func(lowp-to-nvvm{chip=sm_90a kernel=mma-sync}))'
// RUN: not lowp-opt %s --pass-pipeline='builtin.module(func.func(lowp-to-nvvm{chip=sm_70}))' 2>&1 | FileCheck %s --check-prefix=CHIP
// RUN: lowp-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(lowp-to-nvvm{chip=sm_89}))' 2>&1 >/dev/null | FileCheck %s --check-prefix=REMARK
// RUN: not lowp-opt %s --pass-pipeline='builtin.module(func.func(lowp-to-nvvm{chip=sm_90a split-k=2}))' 2>&1 | FileCheck %s --check-prefix=SPLIT
// RUN: not lowp-opt %s --pass-pipeline='builtin.module(func.func(lowp-to-nvvm{chip=sm_90a split-k=3}))' 2>&1 | FileCheck %s --check-prefix=SPLIT3
// RUN: not lowp-opt %s --pass-pipeline='builtin.module(func.func(lowp-to-nvvm{chip=sm_90a stages=4}))' 2>&1 | FileCheck %s --check-prefix=STAGES

// split-k applies to the wgmma skinny block only; the first op here (scales every 24
// along K) takes the generic kernel, so asking to split it is an error, located at the op.
// SPLIT: fallback-and-errors.mlir:[[#@LINE+27]]:3: error: lowp.scaled_matmul: split-k=2 splits the wgmma skinny block (sm_90a, M static and at most 64, or kernel=wgmma-skinny), which this op does not take on sm_90a with kernel=auto: the scales change every 24 along K; the instruction sums 32; for f16: the scales change every 24 along K; the instruction sums 16; for bf16: the scales change every 24 along K; the instruction sums 16
// SPLIT3: option 'split-k' of lowp-to-nvvm: '3' is not accepted; expected auto, 1, 2, 4, 8
// So is sizing a ring the op's kernel does not have.
// STAGES: fallback-and-errors.mlir:[[#@LINE+24]]:3: error: lowp.scaled_matmul: stages=4 sizes the ring of the wgmma pipeline (sm_90a), which this op does not take on sm_90a with kernel=auto: the scales change every 24 along K; the instruction sums 32;

// REMARK: fallback-and-errors.mlir:[[#@LINE+22]]:3: remark: generic kernel on sm_89: the scales change every 24 along K; the instruction sums 32; for f16: the scales change every 24 along K; the instruction sums 16; for bf16: the scales change every 24 along K; the instruction sums 16

// Every format reaches some tensor-core instruction (FP8, or the f16 or bf16 patterns of its
// fields), and scale blocks shorter than an instruction's K one at a time (the rest of its
// K zero) where they divide it; blocks of 24 neither divide the instructions' K (16, 32)
// nor are whole multiples of it. With kernel=auto such an op gets the generic kernel (16 x
// 16 threads per 64 x 64 tile, decoded chunks of A and B in workgroup memory, chunks of 8
// along K: a divisor of the segment, rows 12 words apart); kernel=mma-sync
// refuses it with the reasons.

// CHECK-LABEL: func.func @mx8
// CHECK-NOT:   llvm.call_intrinsic
// CHECK:       gpu.launch blocks(%{{.*}}) in (%{{.*}} = %{{.*}}, %{{.*}} = %{{.*}}, %{{.*}} = %c1) threads(%{{.*}}) in (%{{.*}} = %c16, %{{.*}} = %c16, %{{.*}} = %c1)
// CHECK-SAME:    workgroup(%[[TA:.*]] : memref<768xf32, #gpu.address_space<workgroup>>, %{{.*}} : memref<768xf32, #gpu.address_space<workgroup>>)
// CHECK:         scf.for %{{.*}} step %c8 iter_args(
// CHECK:           memref.store %{{.*}}, %[[TA]][%{{.*}}] : memref<768xf32, #gpu.address_space<workgroup>>
// CHECK:           gpu.barrier
// CHECK:           scf.for %{{.*}} = %c0 to %c8 step %c1 iter_args(
// CHECK:           gpu.barrier
func.func @mx8(%a: memref<8x64xf8E4M3FN>, %sa: memref<8x3xf8E8M0FNU>, %b: memref<8x64xf8E4M3FN>,
               %sb: memref<8x3xf8E8M0FNU>, %c: memref<8x8xf32>) {
  // expected-error @+1 {{no mma.sync kernel for this op on sm_90a: the scales change every 24 along K; the instruction sums 32; for f16: the scales change every 24 along K; the instruction sums 16; for bf16: the scales change every 24 along K; the instruction sums 16}}
  lowp.scaled_matmul %a[%sa], %b[%sb] into %c layouts(#lowp.mx<24>, #lowp.mx<24>)
      : memref<8x64xf8E4M3FN>[memref<8x3xf8E8M0FNU>], memref<8x64xf8E4M3FN>[memref<8x3xf8E8M0FNU>] -> memref<8x8xf32>
  return
}

// CHIP: 'sm_70' is not accepted; expected sm_89, sm_90a, sm_100a
