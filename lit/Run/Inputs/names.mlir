// An entry whose name PTX cannot spell (as a frontend may name a layer): its kernel is
// renamed by lowp-legalize-ptx-names.
func.func @"layer.0/matmul"(%a: memref<16x64xf8E4M3FN>, %sa: memref<1x1xf32>,
                            %b: memref<8x64xf8E4M3FN>, %sb: memref<1x1xf32>,
                            %c: memref<16x8xf32>) {
  lowp.scaled_matmul %a[%sa], %b[%sb] into %c layouts(#lowp.per_tensor, #lowp.per_tensor)
      : memref<16x64xf8E4M3FN>[memref<1x1xf32>], memref<8x64xf8E4M3FN>[memref<1x1xf32>] -> memref<16x8xf32>
  return
}
