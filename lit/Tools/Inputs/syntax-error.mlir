func.func @f(%x: memref<4x64xf32>) {
  // a comment
  lowp.quantize %x[ : memref<4x64xf32>
  return
}
