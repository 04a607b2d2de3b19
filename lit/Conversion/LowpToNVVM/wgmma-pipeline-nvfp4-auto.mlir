// RUN: lowp-opt %s --pass-pipeline='builtin.module(func.func(lowp-to-nvvm{chip=sm_90a},cse))' | FileCheck %s

// nvfp4=auto, the default: NVFP4's 16-blocks take the f16 route wherever it applies (k16
// f16 instructions on each code times its block's scale), but E4M3 beside NVFP4 on the
// skinny block (M <= 64), where the H200 ran the split route faster (W4A8 at 16 x 8192 x
// 8192: 49 us against 57; NVFP4 x NVFP4 there, and both at 4096^3 and 8192^3, ran faster
// on the f16 route). E5M2 beside NVFP4 takes the f16 route on the skinny block too: the
// split route's zero halves would meet its infinities.
// CHECK-LABEL: func.func @square
// CHECK-NOT:     k = 32>
// CHECK:         nvvm.wgmma.mma_async {{.*}}<m = 64, n = 128, k = 16>, D[<f32>, <one>], A[<f16>
// CHECK-LABEL: func.func @decode
// CHECK-NOT:     k = 32>
// CHECK:         nvvm.wgmma.mma_async {{.*}}<m = 64, n = 16, k = 16>, D[<f32>, <one>], A[<f16>
// CHECK-LABEL: func.func @w4a8_square
// CHECK-NOT:     k = 32>
// CHECK:         nvvm.wgmma.mma_async {{.*}}<m = 64, n = 128, k = 16>, D[<f32>, <one>], A[<f16>
// CHECK-LABEL: func.func @w4a8_decode
// CHECK-NOT:     k = 16>
// CHECK:         nvvm.wgmma.mma_async {{.*}}<m = 64, n = 16, k = 32>, D[<f32>, <zero>], A[<e4m3>
// CHECK-LABEL: func.func @e5m2_decode
// CHECK-NOT:     k = 32>
// CHECK:         nvvm.wgmma.mma_async {{.*}}<m = 64, n = 16, k = 16>, D[<f32>, <one>], A[<f16>
func.func @square(%a: memref<256x256x!lowp.packed<f4E2M1FN>>, %sa: memref<256x32xf8E4M3FN>,
                  %ga: memref<f32>, %b: memref<256x256x!lowp.packed<f4E2M1FN>>,
                  %sb: memref<256x32xf8E4M3FN>, %gb: memref<f32>, %c: memref<256x256xf32>) {
  lowp.scaled_matmul %a[%sa, %ga], %b[%sb, %gb] into %c layouts(#lowp.nvfp4<16, global>, #lowp.nvfp4<16, global>)
      : memref<256x256x!lowp.packed<f4E2M1FN>>[memref<256x32xf8E4M3FN>, memref<f32>], memref<256x256x!lowp.packed<f4E2M1FN>>[memref<256x32xf8E4M3FN>, memref<f32>] -> memref<256x256xf32>
  return
}
func.func @decode(%a: memref<16x256x!lowp.packed<f4E2M1FN>>, %sa: memref<16x32xf8E4M3FN>,
                  %ga: memref<f32>, %b: memref<256x256x!lowp.packed<f4E2M1FN>>,
                  %sb: memref<256x32xf8E4M3FN>, %gb: memref<f32>, %c: memref<16x256xf32>) {
  lowp.scaled_matmul %a[%sa, %ga], %b[%sb, %gb] into %c layouts(#lowp.nvfp4<16, global>, #lowp.nvfp4<16, global>)
      : memref<16x256x!lowp.packed<f4E2M1FN>>[memref<16x32xf8E4M3FN>, memref<f32>], memref<256x256x!lowp.packed<f4E2M1FN>>[memref<256x32xf8E4M3FN>, memref<f32>] -> memref<16x256xf32>
  return
}
func.func @w4a8_square(%a: memref<256x512xf8E4M3FN>, %sa: memref<1x1xf32>,
                       %b: memref<256x256x!lowp.packed<f4E2M1FN>>, %sb: memref<256x32xf8E4M3FN>,
                       %gb: memref<f32>, %c: memref<256x256xf32>) {
  lowp.scaled_matmul %a[%sa], %b[%sb, %gb] into %c layouts(#lowp.per_tensor, #lowp.nvfp4<16, global>)
      : memref<256x512xf8E4M3FN>[memref<1x1xf32>], memref<256x256x!lowp.packed<f4E2M1FN>>[memref<256x32xf8E4M3FN>, memref<f32>] -> memref<256x256xf32>
  return
}
func.func @w4a8_decode(%a: memref<16x512xf8E4M3FN>, %sa: memref<1x1xf32>,
                       %b: memref<256x256x!lowp.packed<f4E2M1FN>>, %sb: memref<256x32xf8E4M3FN>,
                       %gb: memref<f32>, %c: memref<16x256xf32>) {
  lowp.scaled_matmul %a[%sa], %b[%sb, %gb] into %c layouts(#lowp.per_tensor, #lowp.nvfp4<16, global>)
      : memref<16x512xf8E4M3FN>[memref<1x1xf32>], memref<256x256x!lowp.packed<f4E2M1FN>>[memref<256x32xf8E4M3FN>, memref<f32>] -> memref<16x256xf32>
  return
}
func.func @e5m2_decode(%a: memref<16x512xf8E5M2>, %sa: memref<1x1xf32>,
                       %b: memref<256x256x!lowp.packed<f4E2M1FN>>, %sb: memref<256x32xf8E4M3FN>,
                       %gb: memref<f32>, %c: memref<16x256xf32>) {
  lowp.scaled_matmul %a[%sa], %b[%sb, %gb] into %c layouts(#lowp.per_tensor, #lowp.nvfp4<16, global>)
      : memref<16x512xf8E5M2>[memref<1x1xf32>], memref<256x256x!lowp.packed<f4E2M1FN>>[memref<256x32xf8E4M3FN>, memref<f32>] -> memref<16x256xf32>
  return
}
