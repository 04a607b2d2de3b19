// RUN: lowp-translate %s --emit=ptx --chip=sm_90a | FileCheck %s

// Rows of K = 44739264 bytes: a thread's chunks of a stage are 16 rows apart, 715828224
// bytes, and the fourth is 2147484672 bytes past the first, beyond the i32 of a constant
// getelementptr index. The first three fold into the copies' addresses; the fourth is an
// i64 add (lowp-to-nvvm panicked on it).
// CHECK: cp.async.cg.shared.global [[[DST:%rd[0-9]+]]], [[[SRC:%rd[0-9]+]]], 16, 16;
// CHECK-NEXT: cp.async.cg.shared.global [[[DST]]+2048], [[[SRC]]+715828224], 16, 16;
// CHECK-NEXT: cp.async.cg.shared.global [[[DST]]+4096], [[[SRC]]+1431656448], 16, 16;
// CHECK-NEXT: add.s64 [[FAR:%rd[0-9]+]], [[SRC]], 2147484672;
// CHECK-NEXT: cp.async.cg.shared.global [[[DST]]+6144], [[[FAR]]], 16, 16;
func.func @f(%a: memref<64x44739264xf8E4M3FN>, %sa: memref<1x1xf32>, %b: memref<64x44739264xf8E4M3FN>,
             %sb: memref<1x1xf32>, %c: memref<64x64xf32>) {
  lowp.scaled_matmul %a[%sa], %b[%sb] into %c layouts(#lowp.per_tensor, #lowp.per_tensor)
      : memref<64x44739264xf8E4M3FN>[memref<1x1xf32>], memref<64x44739264xf8E4M3FN>[memref<1x1xf32>] -> memref<64x64xf32>
  return
}
