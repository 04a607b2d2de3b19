// RUN: not lowp-translate %s --emit=llvm 2>&1 | FileCheck %s
// RUN: not lowp-translate %s --emit=asm 2>&1 | FileCheck %s
// RUN: lowp-translate %S/Inputs/dense-resource-present.mlir --pipeline='builtin.module(lowp-cpu-pipeline)' --emit=llvm | FileCheck %s --check-prefix=PRESENT
// RUN: lowp-run %S/Inputs/dense-resource-present.mlir --entry f | FileCheck %s --check-prefix=RUNS
// The same function without the file's dialect_resources section: the JIT refuses it too.
// RUN: sed '/^{-#/,$d' %S/Inputs/dense-resource-present.mlir > %t.missing.mlir
// RUN: not lowp-run %t.missing.mlir --entry f 2>&1 | FileCheck %s --check-prefix=MISSING
// Data of another size than the type takes: a blob 4 bytes short (the translation read
// past its end: exit 139, no message), one 1 byte long (it misread the data and exited 0),
// none at all.
// RUN: sed 's/0x04000000000000000000803F0000004000004040/0x04000000000000000000803F00000040/' %S/Inputs/dense-resource-present.mlir > %t.short.mlir
// RUN: not lowp-run %t.short.mlir --entry f 2>&1 | FileCheck %s --check-prefix=SHORT
// RUN: not lowp-translate %t.short.mlir --pipeline='builtin.module(lowp-cpu-pipeline)' --emit=llvm 2>&1 | FileCheck %s --check-prefix=SHORT
// RUN: sed 's/0x04000000000000000000803F0000004000004040/0x04000000000000000000803F000000400000404001/' %S/Inputs/dense-resource-present.mlir > %t.long.mlir
// RUN: not lowp-run %t.long.mlir --entry f 2>&1 | FileCheck %s --check-prefix=LONG
// RUN: sed 's/0x04000000000000000000803F0000004000004040/0x04000000/' %S/Inputs/dense-resource-present.mlir > %t.empty.mlir
// RUN: not lowp-translate %t.empty.mlir --pipeline='builtin.module(lowp-cpu-pipeline)' --emit=llvm 2>&1 | FileCheck %s --check-prefix=EMPTY

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
// SHORT: short.mlir:3:{{[0-9]+}}: error: attribute 'value' is a dense_resource of 12 bytes where its type takes 16
// LONG: long.mlir:3:{{[0-9]+}}: error: attribute 'value' is a dense_resource of 17 bytes where its type takes 16
// EMPTY: empty.mlir:3:{{[0-9]+}}: error: attribute 'value' is a dense_resource of 0 bytes where its type takes 16
