// RUN: lowp-opt %s --verify-diagnostics --pass-pipeline='builtin.module(func.func(lowp-to-nvvm{chip=sm_90a kernel=generic}))'
// RUN: lowp-opt %s --verify-diagnostics --pass-pipeline='builtin.module(func.func(lowp-to-nvvm{chip=sm_90a emulate=true}))'

// An op inside a gpu.launch body is in a kernel already: refused at the op, where a kernel
// of its own would have been launched from inside the kernel.
func.func @in_launch(%a: memref<64x64xf8E4M3FN>, %sa: memref<1x1xf32>, %b: memref<64x64xf8E4M3FN>,
                     %sb: memref<1x1xf32>, %c: memref<64x64xf32>) {
  %c1 = arith.constant 1 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
    // expected-error @below {{lowp.scaled_matmul: it is inside a gpu.launch body, a kernel already}}
    lowp.scaled_matmul %a[%sa], %b[%sb] into %c layouts(#lowp.per_tensor, #lowp.per_tensor)
        : memref<64x64xf8E4M3FN>[memref<1x1xf32>], memref<64x64xf8E4M3FN>[memref<1x1xf32>] -> memref<64x64xf32>
    gpu.terminator
  }
  return
}
