// RUN: lowp-opt %s --verify-diagnostics --pass-pipeline='builtin.module(func.func(lowp-to-nvvm{chip=sm_90a}))'
// RUN: lowp-opt %s --verify-diagnostics --pass-pipeline='builtin.module(func.func(lowp-to-nvvm{chip=sm_89 kernel=generic}))'
// RUN: lowp-opt %s --pass-pipeline='builtin.module(func.func(lowp-to-nvvm{chip=sm_90a emulate=true}))' | FileCheck %s --check-prefix=EMULATED

// An op inside an scf.parallel: the GPU pipelines map parallel loops onto GPU threads,
// so its kernel's launch would be inside a kernel (lowp-translate failed to legalize the
// gpu.launch_func, naming no cause). Refused at the op; emulated, the kernel is CPU loops
// and runs in the loop's iterations.
// EMULATED-LABEL: func.func @in_parallel
// EMULATED:       scf.parallel
// EMULATED-NOT:   lowp.scaled_matmul
// EMULATED-NOT:   gpu.launch
func.func @in_parallel(%a: memref<16x64xf8E4M3FN>, %sa: memref<1x1xf32>, %b: memref<16x64xf8E4M3FN>,
                       %sb: memref<16x1xf32>, %c: memref<16x16xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  scf.parallel (%i) = (%c0) to (%c4) step (%c1) {
    // expected-error @below {{lowp.scaled_matmul: it is inside an scf.parallel: the GPU pipelines map parallel loops onto GPU threads}}
    lowp.scaled_matmul %a[%sa], %b[%sb] into %c layouts(#lowp.per_tensor, #lowp.per_channel)
        : memref<16x64xf8E4M3FN>[memref<1x1xf32>], memref<16x64xf8E4M3FN>[memref<16x1xf32>] -> memref<16x16xf32>
    scf.reduce
  }
  return
}
