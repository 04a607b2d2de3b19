// Operands whose K differs, seen only at run time (dynamic memrefs): lowp-assert-shapes'
// check stops the call before the kernel reads past B's rows.
func.func @f(%a0: memref<8x64xf8E4M3FN>, %sa: memref<1x1xf32>, %b0: memref<8x32xf8E4M3FN>,
             %sb: memref<1x1xf32>, %c: memref<8x8xf32>) {
  %a = memref.cast %a0 : memref<8x64xf8E4M3FN> to memref<?x?xf8E4M3FN>
  %b = memref.cast %b0 : memref<8x32xf8E4M3FN> to memref<?x?xf8E4M3FN>
  lowp.scaled_matmul %a[%sa], %b[%sb] into %c layouts(#lowp.per_tensor, #lowp.per_tensor)
      : memref<?x?xf8E4M3FN>[memref<1x1xf32>], memref<?x?xf8E4M3FN>[memref<1x1xf32>] -> memref<8x8xf32>
  return
}
