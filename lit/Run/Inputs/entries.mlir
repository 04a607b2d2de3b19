// Entries lowp-run refuses, each with its reason (and never runs).
func.func @returns(%a: memref<8x64xf8E4M3FN>, %sa: memref<1x1xf32>, %b: memref<8x64xf8E4M3FN>, %sb: memref<1x1xf32>, %c: memref<8x8xf32>) -> i32 {
  lowp.scaled_matmul %a[%sa], %b[%sb] into %c layouts(#lowp.per_tensor, #lowp.per_tensor) : memref<8x64xf8E4M3FN>[memref<1x1xf32>], memref<8x64xf8E4M3FN>[memref<1x1xf32>] -> memref<8x8xf32>
  %z = arith.constant 3 : i32
  return %z : i32
}
func.func @strided(%a: memref<8x64xf8E4M3FN, strided<[64, 1], offset: 1000000>>, %sa: memref<1x1xf32>, %b: memref<8x64xf8E4M3FN>, %sb: memref<1x1xf32>, %c: memref<8x8xf32>) {
  lowp.scaled_matmul %a[%sa], %b[%sb] into %c layouts(#lowp.per_tensor, #lowp.per_tensor) : memref<8x64xf8E4M3FN, strided<[64, 1], offset: 1000000>>[memref<1x1xf32>], memref<8x64xf8E4M3FN>[memref<1x1xf32>] -> memref<8x8xf32>
  return
}
func.func @twice(%a: memref<8x64xf8E4M3FN>, %s: memref<1x1xf32>, %c: memref<8x8xf32>) {
  lowp.scaled_matmul %a[%s], %a[%s] into %c layouts(#lowp.per_tensor, #lowp.per_tensor) : memref<8x64xf8E4M3FN>[memref<1x1xf32>], memref<8x64xf8E4M3FN>[memref<1x1xf32>] -> memref<8x8xf32>
  return
}
// A declaration beside the entry: no C interface made for it (the emulated run, at -O0,
// failed to resolve one).
func.func private @decl(memref<4xf32>)
func.func @ok(%a: memref<8x64xf8E4M3FN>, %sa: memref<1x1xf32>, %b: memref<8x64xf8E4M3FN>, %sb: memref<1x1xf32>, %c: memref<8x8xf32>) {
  lowp.scaled_matmul %a[%sa], %b[%sb] into %c layouts(#lowp.per_tensor, #lowp.per_tensor) : memref<8x64xf8E4M3FN>[memref<1x1xf32>], memref<8x64xf8E4M3FN>[memref<1x1xf32>] -> memref<8x8xf32>
  return
}
// Two matmuls: which one --check or an input file means is not clear.
func.func @two(%a: memref<8x64xf8E4M3FN>, %sa: memref<1x1xf32>, %b: memref<8x64xf8E4M3FN>, %sb: memref<1x1xf32>, %c: memref<8x8xf32>, %d: memref<8x8xf32>) {
  lowp.scaled_matmul %a[%sa], %b[%sb] into %c layouts(#lowp.per_tensor, #lowp.per_tensor) : memref<8x64xf8E4M3FN>[memref<1x1xf32>], memref<8x64xf8E4M3FN>[memref<1x1xf32>] -> memref<8x8xf32>
  lowp.scaled_matmul %a[%sa], %b[%sb] into %d layouts(#lowp.per_tensor, #lowp.per_tensor) : memref<8x64xf8E4M3FN>[memref<1x1xf32>], memref<8x64xf8E4M3FN>[memref<1x1xf32>] -> memref<8x8xf32>
  return
}
// A store into an operand before the matmul: the oracle would see other inputs.
func.func @writes(%a: memref<8x64xf8E4M3FN>, %sa: memref<1x1xf32>, %b: memref<8x64xf8E4M3FN>, %sb: memref<1x1xf32>, %c: memref<8x8xf32>) {
  %two = arith.constant 2.0 : f32
  %i = arith.constant 0 : index
  memref.store %two, %sa[%i, %i] : memref<1x1xf32>
  lowp.scaled_matmul %a[%sa], %b[%sb] into %c layouts(#lowp.per_tensor, #lowp.per_tensor) : memref<8x64xf8E4M3FN>[memref<1x1xf32>], memref<8x64xf8E4M3FN>[memref<1x1xf32>] -> memref<8x8xf32>
  return
}
