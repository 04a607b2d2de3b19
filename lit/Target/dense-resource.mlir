// RUN: not lowp-translate %s --emit=llvm 2>&1 | FileCheck %s
// RUN: not lowp-translate %s --emit=asm 2>&1 | FileCheck %s
// RUN: lowp-translate %S/Inputs/dense-resource-present.mlir --pipeline='builtin.module(lowp-cpu-pipeline)' --emit=llvm | FileCheck %s --check-prefix=PRESENT
// RUN: lowp-run %S/Inputs/dense-resource-present.mlir --entry f | FileCheck %s --check-prefix=RUNS
// The same function without the file's dialect_resources section: the JIT refuses it too.
// RUN: sed '/^{-#/,$d' %S/Inputs/dense-resource-present.mlir > %t.missing.mlir
// RUN: not lowp-run %t.missing.mlir --entry f 2>&1 | FileCheck %s --check-prefix=MISSING

// A dense_resource whose data the file lacks (no dialect_resources entry, or elided on
// printing): MLIR's translation reads it through a null blob and crashed (exit 139, no
// message); it is now an error at the op.
// CHECK: dense-resource.mlir:[[# @LINE + 2]]:8: error: attribute 'value' is a dense_resource whose data is not in the file (no dialect_resources entry for it, or it was elided when printed)
llvm.func @f(%p: !llvm.ptr) {
  %c = llvm.mlir.constant(dense_resource<blob1> : tensor<4xf32>) : vector<4xf32>
  llvm.store %c, %p : vector<4xf32>, !llvm.ptr
  llvm.return
}

// PRESENT: store <4 x float> <float 0.000000e+00, float 1.000000e+00, float 2.000000e+00, float 3.000000e+00>
// RUNS: arg0: memref<4xf32> sum=6.000000e0 nan=0
// MISSING: missing.mlir:3:8: error: attribute 'value' is a dense_resource whose data is not in the file
