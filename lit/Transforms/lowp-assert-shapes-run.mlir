// The checks at run time: a call whose C has the rows A has runs; one whose C has a row
// more stops at the check, with its message, before the kernel writes past C. The module
// goes through lowp-cpu-pipeline (which runs lowp-assert-shapes first) and runs in
// mlir-runner; a failed cf.assert prints its message to stderr, located, and exits with
// status 1 (lowp-report-asserts), not puts and abort.
// RUN: sed 's/ROWS/3/g' %s | lowp-opt --pass-pipeline='builtin.module(func.func(linalg-generalize-named-ops),convert-linalg-to-loops,lowp-cpu-pipeline)' \
// RUN:   | stdbuf -o0 mlir-runner -e main -entry-point-result=void -shared-libs=%mlir_lib/libmlir_c_runner_utils.so \
// RUN:   | FileCheck %s --check-prefix=GOOD
// RUN: sed 's/ROWS/4/g' %s | lowp-opt --pass-pipeline='builtin.module(func.func(linalg-generalize-named-ops),convert-linalg-to-loops,lowp-cpu-pipeline)' -o %t.bad.mlir
// RUN: mlir-runner %t.bad.mlir -e main -entry-point-result=void -shared-libs=%mlir_lib/libmlir_c_runner_utils.so > %t.out 2>&1; test $? = 1
// RUN: FileCheck %s --check-prefix=BAD < %t.out

// GOOD:     64
// BAD:      <stdin>:[[# @LINE + 5]]:3: error: lowp.scaled_matmul: the result has other rows than lhs (M)
// BAD-NOT:  64

func.func @mm(%a: memref<?x64xf8E4M3FN>, %sa: memref<1x1xf32>, %b: memref<16x64xf8E4M3FN>,
              %sb: memref<1x1xf32>, %c: memref<?x16xf32>) {
  lowp.scaled_matmul %a[%sa], %b[%sb] into %c layouts(#lowp.per_tensor, #lowp.per_tensor)
      : memref<?x64xf8E4M3FN>[memref<1x1xf32>], memref<16x64xf8E4M3FN>[memref<1x1xf32>] -> memref<?x16xf32>
  return
}

// A and B all ones (quantized from f32 by per-tensor scales of 1): each result is 64.
func.func @main() {
  %one = arith.constant 1.0 : f32
  %c0 = arith.constant 0 : index
  %s = memref.alloc() : memref<1x1xf32>
  memref.store %one, %s[%c0, %c0] : memref<1x1xf32>
  %xa = memref.alloc() : memref<3x64xf32>
  %xb = memref.alloc() : memref<16x64xf32>
  linalg.fill ins(%one : f32) outs(%xa : memref<3x64xf32>)
  linalg.fill ins(%one : f32) outs(%xb : memref<16x64xf32>)
  %a = memref.alloc() : memref<3x64xf8E4M3FN>
  %b = memref.alloc() : memref<16x64xf8E4M3FN>
  lowp.quantize %xa[%s] layout #lowp.per_tensor into %a
      : memref<3x64xf32>[memref<1x1xf32>] -> memref<3x64xf8E4M3FN>
  lowp.quantize %xb[%s] layout #lowp.per_tensor into %b
      : memref<16x64xf32>[memref<1x1xf32>] -> memref<16x64xf8E4M3FN>
  %c = memref.alloc() : memref<ROWSx16xf32>
  %ad = memref.cast %a : memref<3x64xf8E4M3FN> to memref<?x64xf8E4M3FN>
  %cd = memref.cast %c : memref<ROWSx16xf32> to memref<?x16xf32>
  call @mm(%ad, %s, %b, %s, %cd)
      : (memref<?x64xf8E4M3FN>, memref<1x1xf32>, memref<16x64xf8E4M3FN>, memref<1x1xf32>, memref<?x16xf32>) -> ()
  %v = memref.load %c[%c0, %c0] : memref<ROWSx16xf32>
  vector.print %v : f32
  return
}
