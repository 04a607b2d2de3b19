// The pass is reachable from a textual pipeline, by flag, with its option, and rejects bad
// option values with a diagnostic and a non-zero exit.

// RUN: lowp-opt %s --pass-pipeline='builtin.module(func.func(lowp-expand-quantize{decode=table}))' | FileCheck %s --check-prefix=PIPE
// RUN: lowp-opt %s --lowp-expand-quantize=decode=table | FileCheck %s --check-prefix=PIPE
// RUN: lowp-opt %s --lowp-expand-quantize | FileCheck %s --check-prefix=BITS
// RUN: not lowp-opt %s --pass-pipeline='builtin.module(func.func(lowp-expand-quantize{decode=lut}))' 2>&1 | FileCheck %s --check-prefix=BAD
// RUN: not lowp-opt %s --pass-pipeline='builtin.module(func.func(lowp-expand-quantize{vectorize=true}))' 2>&1 | FileCheck %s --check-prefix=UNKNOWN
// RUN: lowp-opt %s --pass-pipeline='builtin.module(func.func(lowp-expand-quantize))' --mlir-print-ir-after-all 2>&1 | FileCheck %s --check-prefix=AFTER

// PIPE: arith.constant dense<{{.*}}> : vector<64xf32>
// PIPE: memref.alloca() {alignment = 64 : i64} : memref<64xf32>
// BITS-NOT: memref.alloca
// BITS: lowp.storage_cast
// BAD: error: option 'decode' of lowp-expand-quantize: 'lut' is not accepted; expected bits, table
// UNKNOWN: no such option vectorize
// AFTER: IR Dump After LowpExpandQuantize (lowp-expand-quantize)

func.func @dequantize(%q: memref<2x32xf6E3M2FN>, %s: memref<2x1xf8E8M0FNU>, %y: memref<2x32xf32>) {
  lowp.dequantize %q[%s] layout #lowp.mx<32> into %y : memref<2x32xf6E3M2FN>[memref<2x1xf8E8M0FNU>] -> memref<2x32xf32>
  return
}
