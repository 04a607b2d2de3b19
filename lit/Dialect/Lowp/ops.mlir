// RUN: lowp-opt %s | lowp-opt | FileCheck %s
// RUN: lowp-opt %s --mlir-print-op-generic | lowp-opt | FileCheck %s

// Round trip of every type, attribute and op form of the lowp dialect.

// CHECK-LABEL: func.func @element_types
// CHECK-SAME: memref<2x8xf8E4M3FN>, %{{.*}}: memref<2x8xf8E5M2>, %{{.*}}: memref<2x8xf8E4M3FNUZ>, %{{.*}}: memref<2x8xf8E5M2FNUZ>
// CHECK-SAME: memref<2x8xf6E2M3FN>, %{{.*}}: memref<2x8xf6E3M2FN>, %{{.*}}: memref<2x8xf4E2M1FN>
// CHECK-SAME: memref<2x8x!lowp.mf<e3m0>>, %{{.*}}: memref<2x8x!lowp.mf<e3m2, bias = 2>>, %{{.*}}: memref<2x8x!lowp.mf<e2m1>>
// CHECK-SAME: memref<2x8x!lowp.mf<e1m0, bias = -3>>, %{{.*}}: memref<2x4x!lowp.packed<f4E2M1FN>>, %{{.*}}: memref<2x4x!lowp.packed<!lowp.mf<e3m0>>>
func.func @element_types(%a: memref<2x8xf8E4M3FN>, %b: memref<2x8xf8E5M2>, %c: memref<2x8xf8E4M3FNUZ>,
                         %d: memref<2x8xf8E5M2FNUZ>, %e: memref<2x8xf6E2M3FN>, %f: memref<2x8xf6E3M2FN>,
                         %g: memref<2x8xf4E2M1FN>, %h: memref<2x8x!lowp.mf<e3m0>>,
                         %i: memref<2x8x!lowp.mf<e3m2, bias = 2>>,
                         // The IEEE bias is the default and is not printed.
                         %j: memref<2x8x!lowp.mf<e2m1, bias = 1>>,
                         %k: memref<2x8x!lowp.mf<e1m0, bias = -3>>,
                         %l: memref<2x4x!lowp.packed<f4E2M1FN>>,
                         %m: memref<2x4x!lowp.packed<!lowp.mf<e3m0>>>) {
  return
}

// CHECK-LABEL: func.func @compute_scales
func.func @compute_scales(%x: memref<4x64xf32>, %t: memref<1x1xf32>, %c: memref<4x1xf32>,
                          %mx: memref<4x2xf8E8M0FNU>, %nv: memref<4x4xf8E4M3FN>, %g: memref<f32>,
                          %bw: memref<2x1xf32>) {
  // CHECK: lowp.compute_scales %{{.*}} into %{{.*}} layout #lowp.per_tensor format f8E4M3FN : memref<4x64xf32> -> memref<1x1xf32>
  lowp.compute_scales %x into %t layout #lowp.per_tensor format f8E4M3FN : memref<4x64xf32> -> memref<1x1xf32>
  // CHECK: lowp.compute_scales %{{.*}} into %{{.*}} layout #lowp.per_channel format f8E5M2FNUZ : memref<4x64xf32> -> memref<4x1xf32>
  lowp.compute_scales %x into %c layout #lowp.per_channel format f8E5M2FNUZ : memref<4x64xf32> -> memref<4x1xf32>
  // CHECK: lowp.compute_scales %{{.*}} into %{{.*}} layout #lowp.mx<32> format f4E2M1FN : memref<4x64xf32> -> memref<4x2xf8E8M0FNU>
  lowp.compute_scales %x into %mx layout #lowp.mx<32> format f4E2M1FN : memref<4x64xf32> -> memref<4x2xf8E8M0FNU>
  // CHECK: lowp.compute_scales %{{.*}} into %{{.*}} layout #lowp.mx<32> format f6E3M2FN {rounding = #lowp.rounding<ocp_mx>}
  lowp.compute_scales %x into %mx layout #lowp.mx<32> format f6E3M2FN {rounding = #lowp.rounding<ocp_mx>} : memref<4x64xf32> -> memref<4x2xf8E8M0FNU>
  // CHECK: lowp.compute_scales %{{.*}} into %{{.*}}, %{{.*}} layout #lowp.nvfp4<16, global> format f4E2M1FN : memref<4x64xf32> -> memref<4x4xf8E4M3FN>, memref<f32>
  lowp.compute_scales %x into %nv, %g layout #lowp.nvfp4<16, global> format f4E2M1FN : memref<4x64xf32> -> memref<4x4xf8E4M3FN>, memref<f32>
  // CHECK: lowp.compute_scales %{{.*}} into %{{.*}} layout #lowp.nvfp4<16> format !lowp.mf<e3m0>
  lowp.compute_scales %x into %nv layout #lowp.nvfp4<16> format !lowp.mf<e3m0> : memref<4x64xf32> -> memref<4x4xf8E4M3FN>
  // CHECK: lowp.compute_scales %{{.*}} into %{{.*}} layout #lowp.blockwise<2x128> format f8E4M3FN
  lowp.compute_scales %x into %bw layout #lowp.blockwise<2x128> format f8E4M3FN : memref<4x64xf32> -> memref<2x1xf32>
  return
}

// CHECK-LABEL: func.func @quantize_dequantize
func.func @quantize_dequantize(%x: memref<4x64xf32>, %mx: memref<4x2xf8E8M0FNU>,
                               %nv: memref<4x4xf8E4M3FN>, %g: memref<f32>,
                               %q: memref<4x64xf8E4M3FN>, %p: memref<4x32x!lowp.packed<f4E2M1FN>>,
                               %y: memref<4x64xf32>) {
  // CHECK: lowp.quantize %{{.*}}[%{{.*}}] layout #lowp.mx<32> into %{{.*}} : memref<4x64xf32>[memref<4x2xf8E8M0FNU>] -> memref<4x64xf8E4M3FN>
  lowp.quantize %x[%mx] layout #lowp.mx<32> into %q : memref<4x64xf32>[memref<4x2xf8E8M0FNU>] -> memref<4x64xf8E4M3FN>
  // CHECK: lowp.quantize %{{.*}}[%{{.*}}, %{{.*}}] layout #lowp.nvfp4<16, global> into %{{.*}} : memref<4x64xf32>[memref<4x4xf8E4M3FN>, memref<f32>] -> memref<4x32x!lowp.packed<f4E2M1FN>>
  lowp.quantize %x[%nv, %g] layout #lowp.nvfp4<16, global> into %p : memref<4x64xf32>[memref<4x4xf8E4M3FN>, memref<f32>] -> memref<4x32x!lowp.packed<f4E2M1FN>>
  // CHECK: lowp.dequantize %{{.*}}[%{{.*}}, %{{.*}}] layout #lowp.nvfp4<16, global> into %{{.*}} : memref<4x32x!lowp.packed<f4E2M1FN>>[memref<4x4xf8E4M3FN>, memref<f32>] -> memref<4x64xf32>
  lowp.dequantize %p[%nv, %g] layout #lowp.nvfp4<16, global> into %y : memref<4x32x!lowp.packed<f4E2M1FN>>[memref<4x4xf8E4M3FN>, memref<f32>] -> memref<4x64xf32>
  // CHECK: lowp.dequantize %{{.*}}[%{{.*}}] layout #lowp.mx<32> into %{{.*}} : memref<4x64xf8E4M3FN>[memref<4x2xf8E8M0FNU>] -> memref<4x64xf32>
  lowp.dequantize %q[%mx] layout #lowp.mx<32> into %y : memref<4x64xf8E4M3FN>[memref<4x2xf8E8M0FNU>] -> memref<4x64xf32>
  return
}

// CHECK-LABEL: func.func @scaled_matmul
func.func @scaled_matmul(%a: memref<128x256xf4E2M1FN>, %sa: memref<128x8xf8E8M0FNU>,
                         %b: memref<64x256xf4E2M1FN>, %sb: memref<64x8xf8E8M0FNU>,
                         %c: memref<128x64xf32>) {
  // CHECK: lowp.scaled_matmul %{{.*}}[%{{.*}}], %{{.*}}[%{{.*}}] into %{{.*}} layouts(#lowp.mx<32>, #lowp.mx<32>) : memref<128x256xf4E2M1FN>[memref<128x8xf8E8M0FNU>], memref<64x256xf4E2M1FN>[memref<64x8xf8E8M0FNU>] -> memref<128x64xf32>
  lowp.scaled_matmul %a[%sa], %b[%sb] into %c layouts(#lowp.mx<32>, #lowp.mx<32>)
      : memref<128x256xf4E2M1FN>[memref<128x8xf8E8M0FNU>], memref<64x256xf4E2M1FN>[memref<64x8xf8E8M0FNU>] -> memref<128x64xf32>
  return
}

// CHECK-LABEL: func.func @scaled_matmul_bias_bf16
func.func @scaled_matmul_bias_bf16(%a: memref<16x64xf8E4M3FN>, %sa: memref<1x1xf32>,
                                   %b: memref<32x64xf8E5M2>, %sb: memref<32x1xf32>,
                                   %bias: memref<32xf32>, %c: memref<16x32xbf16>) {
  // CHECK: lowp.scaled_matmul %{{.*}}[%{{.*}}], %{{.*}}[%{{.*}}] bias %{{.*}} into %{{.*}} layouts(#lowp.per_tensor, #lowp.per_channel) : memref<16x64xf8E4M3FN>[memref<1x1xf32>], memref<32x64xf8E5M2>[memref<32x1xf32>] bias memref<32xf32> -> memref<16x32xbf16>
  lowp.scaled_matmul %a[%sa], %b[%sb] bias %bias into %c layouts(#lowp.per_tensor, #lowp.per_channel)
      : memref<16x64xf8E4M3FN>[memref<1x1xf32>], memref<32x64xf8E5M2>[memref<32x1xf32>] bias memref<32xf32> -> memref<16x32xbf16>
  return
}

// CHECK-LABEL: func.func @scaled_matmul_nvfp4_globals
func.func @scaled_matmul_nvfp4_globals(%a: memref<8x32x!lowp.packed<f4E2M1FN>>, %sa: memref<8x4xf8E4M3FN>, %ga: memref<f32>,
                                       %b: memref<4x32x!lowp.packed<f4E2M1FN>>, %sb: memref<4x4xf8E4M3FN>, %gb: memref<f32>,
                                       %c: memref<8x4xf32>) {
  // CHECK: lowp.scaled_matmul %{{.*}}[%{{.*}}, %{{.*}}], %{{.*}}[%{{.*}}, %{{.*}}] into %{{.*}} layouts(#lowp.nvfp4<16, global>, #lowp.nvfp4<16, global>)
  lowp.scaled_matmul %a[%sa, %ga], %b[%sb, %gb] into %c layouts(#lowp.nvfp4<16, global>, #lowp.nvfp4<16, global>)
      : memref<8x32x!lowp.packed<f4E2M1FN>>[memref<8x4xf8E4M3FN>, memref<f32>], memref<4x32x!lowp.packed<f4E2M1FN>>[memref<4x4xf8E4M3FN>, memref<f32>] -> memref<8x4xf32>
  return
}

// CHECK-LABEL: func.func @scaled_matmul_mixed_dynamic
func.func @scaled_matmul_mixed_dynamic(%a: memref<?x256xf8E4M3FN>, %sa: memref<?x2xf32>,
                                       %b: memref<?x?x!lowp.mf<e3m0>>, %sb: memref<?x?xf32>,
                                       %c: memref<?x?xf32>) {
  // CHECK: layouts(#lowp.blockwise<1x128>, #lowp.blockwise<128x128>) : memref<?x256xf8E4M3FN>[memref<?x2xf32>], memref<?x?x!lowp.mf<e3m0>>[memref<?x?xf32>] -> memref<?x?xf32>
  lowp.scaled_matmul %a[%sa], %b[%sb] into %c layouts(#lowp.blockwise<1x128>, #lowp.blockwise<128x128>)
      : memref<?x256xf8E4M3FN>[memref<?x2xf32>], memref<?x?x!lowp.mf<e3m0>>[memref<?x?xf32>] -> memref<?x?xf32>
  return
}

// CHECK-LABEL: func.func @storage_cast
func.func @storage_cast(%q: memref<4x8x!lowp.mf<e3m0>>, %p: memref<4x4x!lowp.packed<f4E2M1FN>>,
                        %s: memref<4x1xf8E8M0FNU>, %f: memref<?x8xf6E2M3FN>) {
  // CHECK: lowp.storage_cast %{{.*}} : memref<4x8x!lowp.mf<e3m0>> to memref<4x8xi8>
  %0 = lowp.storage_cast %q : memref<4x8x!lowp.mf<e3m0>> to memref<4x8xi8>
  // CHECK: lowp.storage_cast %{{.*}} : memref<4x4x!lowp.packed<f4E2M1FN>> to memref<4x4xi8>
  %1 = lowp.storage_cast %p : memref<4x4x!lowp.packed<f4E2M1FN>> to memref<4x4xi8>
  // CHECK: lowp.storage_cast %{{.*}} : memref<4x1xf8E8M0FNU> to memref<4x1xi8>
  %2 = lowp.storage_cast %s : memref<4x1xf8E8M0FNU> to memref<4x1xi8>
  // CHECK: lowp.storage_cast %{{.*}} : memref<?x8xf6E2M3FN> to memref<?x8xi8>
  %3 = lowp.storage_cast %f : memref<?x8xf6E2M3FN> to memref<?x8xi8>
  return
}

// Attributes on their own (e.g. in a discardable attribute) print canonically.
// CHECK-LABEL: func.func @attributes
// CHECK-SAME: lowp.all = [#lowp.per_tensor, #lowp.per_channel, #lowp.mx<32>, #lowp.mx<16>, #lowp.nvfp4<16>, #lowp.nvfp4<32, global>, #lowp.blockwise<1x128>, #lowp.blockwise<128x128>, #lowp.rounding<round_up>, #lowp.rounding<ocp_mx>]
func.func @attributes() attributes {lowp.all = [#lowp.per_tensor, #lowp.per_channel, #lowp.mx<32>, #lowp.mx<16>,
    #lowp.nvfp4<16>, #lowp.nvfp4<32, global>, #lowp.blockwise<1x128>, #lowp.blockwise<128x128>,
    #lowp.rounding<round_up>, #lowp.rounding<ocp_mx>]} {
  return
}

// The tensor form: each `into` operand's new value is a result of its type.
// CHECK-LABEL: func.func @tensor_form
func.func @tensor_form(%x: tensor<4x64xf32>, %a: tensor<16x64xf8E4M3FN>, %sa: tensor<16x2xf8E8M0FNU>,
                       %b: tensor<8x32x!lowp.packed<f4E2M1FN>>, %sb: tensor<8x2xf8E8M0FNU>,
                       %bias: tensor<8xf32>, %c: tensor<16x8xbf16>, %s0: tensor<4x4xf8E4M3FN>,
                       %g0: tensor<f32>, %q0: tensor<4x64xf4E2M1FN>, %y0: tensor<4x64xf32>)
    -> (tensor<16x8xbf16>, tensor<4x64xf32>) {
  // CHECK: %[[S:.*]]:2 = lowp.compute_scales %{{.*}} into %{{.*}}, %{{.*}} layout #lowp.nvfp4<16, global> format f4E2M1FN : tensor<4x64xf32> -> tensor<4x4xf8E4M3FN>, tensor<f32>
  %s, %g = lowp.compute_scales %x into %s0, %g0 layout #lowp.nvfp4<16, global> format f4E2M1FN
      : tensor<4x64xf32> -> tensor<4x4xf8E4M3FN>, tensor<f32>
  // CHECK: %[[Q:.*]] = lowp.quantize %{{.*}}[%[[S]]#0, %[[S]]#1] layout #lowp.nvfp4<16, global> into %{{.*}} : tensor<4x64xf32>[tensor<4x4xf8E4M3FN>, tensor<f32>] -> tensor<4x64xf4E2M1FN>
  %q = lowp.quantize %x[%s, %g] layout #lowp.nvfp4<16, global> into %q0
      : tensor<4x64xf32>[tensor<4x4xf8E4M3FN>, tensor<f32>] -> tensor<4x64xf4E2M1FN>
  // CHECK: %[[Y:.*]] = lowp.dequantize %[[Q]][%[[S]]#0, %[[S]]#1] layout #lowp.nvfp4<16, global> into %{{.*}} : tensor<4x64xf4E2M1FN>[tensor<4x4xf8E4M3FN>, tensor<f32>] -> tensor<4x64xf32>
  %y = lowp.dequantize %q[%s, %g] layout #lowp.nvfp4<16, global> into %y0
      : tensor<4x64xf4E2M1FN>[tensor<4x4xf8E4M3FN>, tensor<f32>] -> tensor<4x64xf32>
  // CHECK: %[[R:.*]] = lowp.scaled_matmul %{{.*}}[%{{.*}}], %{{.*}}[%{{.*}}] bias %{{.*}} into %{{.*}} layouts(#lowp.mx<32>, #lowp.mx<32>) : tensor<16x64xf8E4M3FN>[tensor<16x2xf8E8M0FNU>], tensor<8x32x!lowp.packed<f4E2M1FN>>[tensor<8x2xf8E8M0FNU>] bias tensor<8xf32> -> tensor<16x8xbf16>
  %r = lowp.scaled_matmul %a[%sa], %b[%sb] bias %bias into %c layouts(#lowp.mx<32>, #lowp.mx<32>)
      : tensor<16x64xf8E4M3FN>[tensor<16x2xf8E8M0FNU>], tensor<8x32x!lowp.packed<f4E2M1FN>>[tensor<8x2xf8E8M0FNU>]
        bias tensor<8xf32> -> tensor<16x8xbf16>
  // CHECK: return %[[R]], %[[Y]]
  return %r, %y : tensor<16x8xbf16>, tensor<4x64xf32>
}
