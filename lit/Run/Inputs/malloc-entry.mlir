// An entry named after C's malloc, which the lowered kernel's buffers are allocated with
// (lit/Run/file-entry.test).
func.func @malloc(%a: memref<16x64xf8E4M3FN>, %sa: memref<1x1xf32>,
                  %b: memref<8x64xf8E4M3FN>, %sb: memref<1x1xf32>,
                  %c: memref<16x8xf32>) {
  lowp.scaled_matmul %a[%sa], %b[%sb] into %c layouts(#lowp.per_tensor, #lowp.per_tensor)
      : memref<16x64xf8E4M3FN>[memref<1x1xf32>], memref<8x64xf8E4M3FN>[memref<1x1xf32>] -> memref<16x8xf32>
  return
}
