// RUN: lowp-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(lowp-assert-shapes),cse)' | FileCheck %s

// A dynamic M: C's rows and the MX scales' rows are checked against A's rows; K, N and
// the scale columns are static and proved by the verifier.
// CHECK-LABEL: func.func @dynamic_m
// CHECK-SAME:    (%[[A:.*]]: memref<?x64xf8E4M3FN>, %[[SA:.*]]: memref<?x2xf8E8M0FNU>, %{{.*}}, %{{.*}}, %[[C:.*]]: memref<?x16xf32>)
// CHECK:         %[[CM:.*]] = memref.dim %[[C]], %c0
// CHECK:         %[[M:.*]] = memref.dim %[[A]], %c0
// CHECK:         %[[OK:.*]] = arith.cmpi eq, %[[CM]], %[[M]] : index
// CHECK:         cf.assert %[[OK]], "lowp.scaled_matmul at {{.*}}lowp-assert-shapes.mlir:[[# @LINE + 9]]:3: the result has other rows than lhs (M)"
// CHECK:         %[[SM:.*]] = memref.dim %[[SA]], %c0
// CHECK:         %[[OK2:.*]] = arith.cmpi eq, %[[SM]], %[[M]] : index
// CHECK:         cf.assert %[[OK2]], "lowp.scaled_matmul at {{.*}}: lhs scales (#lowp.mx<32>) need a row per row of lhs"
// CHECK-NOT:     cf.assert
// CHECK:         lowp.scaled_matmul
func.func @dynamic_m(%a: memref<?x64xf8E4M3FN>, %sa: memref<?x2xf8E8M0FNU>,
                     %b: memref<16x64xf8E4M3FN>, %sb: memref<16x2xf8E8M0FNU>,
                     %c: memref<?x16xf32>) {
  lowp.scaled_matmul %a[%sa], %b[%sb] into %c layouts(#lowp.mx<32>, #lowp.mx<32>)
      : memref<?x64xf8E4M3FN>[memref<?x2xf8E8M0FNU>], memref<16x64xf8E4M3FN>[memref<16x2xf8E8M0FNU>] -> memref<?x16xf32>
  return
}

// -----

// Static shapes: the verifier proved every relation; nothing is added.
// CHECK-LABEL: func.func @static
// CHECK-NOT:     cf.assert
// CHECK:         lowp.scaled_matmul
func.func @static(%a: memref<4x64xf8E4M3FN>, %sa: memref<1x1xf32>, %b: memref<16x64xf8E4M3FN>,
                  %sb: memref<1x1xf32>, %c: memref<4x16xf32>) {
  lowp.scaled_matmul %a[%sa], %b[%sb] into %c layouts(#lowp.per_tensor, #lowp.per_tensor)
      : memref<4x64xf8E4M3FN>[memref<1x1xf32>], memref<16x64xf8E4M3FN>[memref<1x1xf32>] -> memref<4x16xf32>
  return
}

// -----

// Everything dynamic, packed FP4 (K is twice the columns), a bias, DeepSeek's blockwise
// tiles (scale rows and columns are counts of blocks, rounded up).
// CHECK-LABEL: func.func @all_dynamic
// CHECK-SAME:    (%[[A:[^:]*]]: memref<?x?x!lowp.packed<f4E2M1FN>>, %[[SA:[^:]*]]: memref<?x?xf32>, %[[B:[^:]*]]: memref<?x?x!lowp.packed<f4E2M1FN>>, %[[SB:[^:]*]]: memref<?x?xf32>, %[[BIAS:[^:]*]]: memref<?xf32>, %[[C:[^:]*]]: memref<?x?xf32>)
// CHECK:         %[[BC:.*]] = memref.dim %[[B]], %c1
// CHECK:         %[[KB:.*]] = arith.muli %[[BC]], %c2
// CHECK:         %[[AC:.*]] = memref.dim %[[A]], %c1
// CHECK:         %[[K:.*]] = arith.muli %[[AC]], %c2
// CHECK:         %[[OK:.*]] = arith.cmpi eq, %[[KB]], %[[K]]
// CHECK:         cf.assert %[[OK]], "{{.*}}: rhs has another K than lhs"
// CHECK:         cf.assert %{{.*}}, "{{.*}}: the result has other rows than lhs (M)"
// CHECK:         %[[N:.*]] = memref.dim %[[B]], %c0
// CHECK:         cf.assert %{{.*}}, "{{.*}}: the result has other columns than rhs has rows (N)"
// CHECK:         %[[LEN:.*]] = memref.dim %[[BIAS]], %c0
// CHECK:         %[[OK3:.*]] = arith.cmpi eq, %[[LEN]], %[[N]]
// CHECK:         cf.assert %[[OK3]], "{{.*}}: the bias's length is not N"
// CHECK:         cf.assert %{{.*}}, "{{.*}}: lhs scales (#lowp.blockwise<1x128>) need a row per row of lhs"
// CHECK:         %[[SAC:.*]] = memref.dim %[[SA]], %c1
// CHECK:         %[[UP:.*]] = arith.addi %[[K]], %c128
// CHECK:         %[[LAST:.*]] = arith.subi %[[UP]], %c1
// CHECK:         %[[KBLOCKS:.*]] = arith.divui %[[LAST]], %c128
// CHECK:         %[[OK4:.*]] = arith.cmpi eq, %[[SAC]], %[[KBLOCKS]]
// CHECK:         cf.assert %[[OK4]], "{{.*}}: lhs scales (#lowp.blockwise<1x128>) need ceil(K / 128) columns"
// CHECK:         %[[SBR:.*]] = memref.dim %[[SB]], %c0
// CHECK:         %[[NUP:.*]] = arith.addi %[[N]], %c128
// CHECK:         %[[NLAST:.*]] = arith.subi %[[NUP]], %c1
// CHECK:         %[[NBLOCKS:.*]] = arith.divui %[[NLAST]], %c128
// CHECK:         %[[OK5:.*]] = arith.cmpi eq, %[[SBR]], %[[NBLOCKS]]
// CHECK:         cf.assert %[[OK5]], "{{.*}}: rhs scales (#lowp.blockwise<128x128>) need ceil(rows of rhs / 128) rows"
// CHECK:         cf.assert %{{.*}}, "{{.*}}: rhs scales (#lowp.blockwise<128x128>) need ceil(K / 128) columns"
// CHECK-NOT:     cf.assert
// CHECK:         lowp.scaled_matmul
func.func @all_dynamic(%a: memref<?x?x!lowp.packed<f4E2M1FN>>, %sa: memref<?x?xf32>,
                       %b: memref<?x?x!lowp.packed<f4E2M1FN>>, %sb: memref<?x?xf32>,
                       %bias: memref<?xf32>, %c: memref<?x?xf32>) {
  lowp.scaled_matmul %a[%sa], %b[%sb] bias %bias into %c
      layouts(#lowp.blockwise<1x128>, #lowp.blockwise<128x128>)
      : memref<?x?x!lowp.packed<f4E2M1FN>>[memref<?x?xf32>],
        memref<?x?x!lowp.packed<f4E2M1FN>>[memref<?x?xf32>] bias memref<?xf32> -> memref<?x?xf32>
  return
}

// -----

// Per-tensor scales of a dynamic shape are one value: 1 x 1. Per-channel: a row per row,
// one column.
// CHECK-LABEL: func.func @scalar_scales
// CHECK:         cf.assert %{{.*}}, "{{.*}}: lhs scales (#lowp.per_tensor) need 1 row"
// CHECK:         cf.assert %{{.*}}, "{{.*}}: lhs scales (#lowp.per_tensor) need 1 column"
// CHECK:         cf.assert %{{.*}}, "{{.*}}: rhs scales (#lowp.per_channel) need a row per row of rhs"
// CHECK:         cf.assert %{{.*}}, "{{.*}}: rhs scales (#lowp.per_channel) need 1 column"
// CHECK-NOT:     cf.assert
func.func @scalar_scales(%a: memref<8x32xf8E5M2>, %sa: memref<?x?xf32>, %b: memref<8x32xf8E4M3FN>,
                         %sb: memref<?x?xf32>, %c: memref<8x8xf32>) {
  lowp.scaled_matmul %a[%sa], %b[%sb] into %c layouts(#lowp.per_tensor, #lowp.per_channel)
      : memref<8x32xf8E5M2>[memref<?x?xf32>], memref<8x32xf8E4M3FN>[memref<?x?xf32>] -> memref<8x8xf32>
  return
}

// -----

// Quantization ops: the codes against the values, the scales against the layout; on
// tensors through tensor.dim. A static size on one side is a constant.
// CHECK-LABEL: func.func @quantize
// CHECK:         cf.assert %{{.*}}, "lowp.quantize at {{.*}}: the output codes have other rows than the input"
// CHECK:         cf.assert %{{.*}}, "lowp.quantize at {{.*}}: the output codes have another K than the input"
// CHECK:         cf.assert %{{.*}}, "lowp.quantize at {{.*}}: input scales (#lowp.nvfp4<16, global>) need a row per row of input"
// CHECK:         cf.assert %{{.*}}, "lowp.quantize at {{.*}}: input scales (#lowp.nvfp4<16, global>) need ceil(K / 16) columns"
// CHECK-LABEL: func.func @dequantize_tensor
// CHECK:         %[[R:.*]] = tensor.dim %{{.*}}, %c0 : tensor<?x64xf32>
// CHECK:         %[[Q:.*]] = tensor.dim %{{.*}}, %c0 : tensor<?x32x!lowp.packed<f4E2M1FN>>
// CHECK:         arith.cmpi eq, %[[R]], %[[Q]]
// CHECK:         cf.assert %{{.*}}, "lowp.dequantize at {{.*}}: the output has other rows than the codes"
// CHECK:         %[[OK:.*]] = arith.cmpi eq, %c4, %[[Q]]
// CHECK:         cf.assert %[[OK]], "lowp.dequantize at {{.*}}: codes scales (#lowp.mx<32>) need a row per row of codes"
// CHECK-NOT:     cf.assert
// CHECK-LABEL: func.func @compute_scales
// CHECK:         cf.assert %{{.*}}, "lowp.compute_scales at {{.*}}: input scales (#lowp.mx<32>) need a row per row of input"
// CHECK-NOT:     cf.assert
// CHECK:         lowp.compute_scales
func.func @quantize(%x: memref<?x?xf32>, %s: memref<?x?xf8E4M3FN>, %g: memref<f32>,
                    %q: memref<?x?x!lowp.packed<f4E2M1FN>>) {
  lowp.quantize %x[%s, %g] layout #lowp.nvfp4<16, global> into %q
      : memref<?x?xf32>[memref<?x?xf8E4M3FN>, memref<f32>] -> memref<?x?x!lowp.packed<f4E2M1FN>>
  return
}
func.func @dequantize_tensor(%q: tensor<?x32x!lowp.packed<f4E2M1FN>>, %s: tensor<4x2xf8E8M0FNU>,
                             %y: tensor<?x64xf32>) -> tensor<?x64xf32> {
  %r = lowp.dequantize %q[%s] layout #lowp.mx<32> into %y
      : tensor<?x32x!lowp.packed<f4E2M1FN>>[tensor<4x2xf8E8M0FNU>] -> tensor<?x64xf32>
  return %r : tensor<?x64xf32>
}
func.func @compute_scales(%x: memref<?x64xf32>, %s: memref<8x2xf8E8M0FNU>) {
  lowp.compute_scales %x into %s layout #lowp.mx<32> format f4E2M1FN : memref<?x64xf32> -> memref<8x2xf8E8M0FNU>
  return
}

// -----

// Device code is left as it is: an op inside a gpu.launch has no host to report to (and
// ROCDL no cf.assert lowering).
// CHECK-LABEL: func.func @in_launch
// CHECK-NOT:     cf.assert
func.func @in_launch(%a: memref<?x64xf8E4M3FN>, %sa: memref<1x1xf32>, %b: memref<16x64xf8E4M3FN>,
                     %sb: memref<1x1xf32>, %c: memref<?x16xf32>) {
  %c1 = arith.constant 1 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
    lowp.scaled_matmul %a[%sa], %b[%sb] into %c layouts(#lowp.per_tensor, #lowp.per_tensor)
        : memref<?x64xf8E4M3FN>[memref<1x1xf32>], memref<16x64xf8E4M3FN>[memref<1x1xf32>] -> memref<?x16xf32>
    gpu.terminator
  }
  return
}
