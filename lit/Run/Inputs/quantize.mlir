// An entry without a scaled_matmul: lowp-run fills its arguments by type and summarizes.
func.func @roundtrip(%x: memref<4x64xf32>, %s: memref<4x2xf8E8M0FNU>, %q: memref<4x32x!lowp.packed<f4E2M1FN>>, %y: memref<4x64xf32>) {
  lowp.compute_scales %x into %s layout #lowp.mx<32> format f4E2M1FN : memref<4x64xf32> -> memref<4x2xf8E8M0FNU>
  lowp.quantize %x[%s] layout #lowp.mx<32> into %q : memref<4x64xf32>[memref<4x2xf8E8M0FNU>] -> memref<4x32x!lowp.packed<f4E2M1FN>>
  lowp.dequantize %q[%s] layout #lowp.mx<32> into %y : memref<4x32x!lowp.packed<f4E2M1FN>>[memref<4x2xf8E8M0FNU>] -> memref<4x64xf32>
  return
}
