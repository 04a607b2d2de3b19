// A lowp op inside a gpu.launch, through the CPU pipeline: lowp-to-loops lowers it in
// place, and the launch stays (the CPU pipeline has no GPU lowering).
func.func @f(%a: memref<32x64xf8E4M3FN>, %sa: memref<1x1xf32>, %c: memref<32x32xf32>) {
  %c1 = arith.constant 1 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
    lowp.scaled_matmul %a[%sa], %a[%sa] into %c layouts(#lowp.per_tensor, #lowp.per_tensor)
        : memref<32x64xf8E4M3FN>[memref<1x1xf32>], memref<32x64xf8E4M3FN>[memref<1x1xf32>] -> memref<32x32xf32>
    gpu.terminator
  }
  return
}
