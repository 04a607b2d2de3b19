// RUN: lowp-translate %s --emit=asm --chip=gfx942 | FileCheck %s
// RUN: lowp-translate %s --emit=hsaco --chip=gfx942 -o %t.hsaco
// RUN: llvm-readobj --notes %t.hsaco | FileCheck %s --check-prefix=NOTES

// A dynamic M: lowp-fold-grid folds rows of tiles beyond the grid's limit into z at run
// time, and the kernel recomposes its row from the rows a layer holds, a kernel argument.
// Read as the grid's size it became a call into ROCm's device library
// (__ockl_get_num_groups), which no code object links without ROCm installed.
// CHECK:     .amdgcn_target "amdgcn-amd-amdhsa--gfx942"
// CHECK-NOT: __ockl
// CHECK:     v_mfma_f32_16x16x32_fp8_fp8
// CHECK-NOT: __ockl
// NOTES:     .name: dyn_kernel
func.func @dyn(%a: memref<?x64xf8E4M3FN>, %sa: memref<1x1xf32>, %b: memref<8x64xf8E4M3FN>,
               %sb: memref<1x1xf32>, %c: memref<?x8xf32>) {
  lowp.scaled_matmul %a[%sa], %b[%sb] into %c layouts(#lowp.per_tensor, #lowp.per_tensor)
      : memref<?x64xf8E4M3FN>[memref<1x1xf32>], memref<8x64xf8E4M3FN>[memref<1x1xf32>] -> memref<?x8xf32>
  return
}
