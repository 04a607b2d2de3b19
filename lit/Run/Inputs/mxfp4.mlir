// An MXFP4 scaled matmul with a bias, as a frontend would emit it.
func.func @mxfp4(%a: memref<48x128x!lowp.packed<f4E2M1FN>>, %sa: memref<48x8xf8E8M0FNU>,
                 %b: memref<40x128x!lowp.packed<f4E2M1FN>>, %sb: memref<40x8xf8E8M0FNU>,
                 %bias: memref<40xf32>, %c: memref<48x40xf32>) {
  lowp.scaled_matmul %a[%sa], %b[%sb] bias %bias into %c layouts(#lowp.mx<32>, #lowp.mx<32>)
      : memref<48x128x!lowp.packed<f4E2M1FN>>[memref<48x8xf8E8M0FNU>],
        memref<40x128x!lowp.packed<f4E2M1FN>>[memref<40x8xf8E8M0FNU>] bias memref<40xf32>
        -> memref<48x40xf32>
  return
}

// Arguments in another order than the op's operands: lowp-run maps them by use.
func.func @reordered(%c: memref<8x8xbf16>, %b: memref<8x64xf8E5M2>, %a: memref<8x64xf8E4M3FN>,
                     %sb: memref<8x1xf32>, %sa: memref<1x1xf32>) {
  lowp.scaled_matmul %a[%sa], %b[%sb] into %c layouts(#lowp.per_tensor, #lowp.per_channel)
      : memref<8x64xf8E4M3FN>[memref<1x1xf32>], memref<8x64xf8E5M2>[memref<8x1xf32>] -> memref<8x8xbf16>
  return
}

func.func @no_matmul(%x: memref<4xf32>) {
  return
}
