// RUN: lowp-opt %s -split-input-file --one-shot-bufferize="bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map" --canonicalize | FileCheck %s
// RUN: lowp-opt %s -split-input-file --one-shot-bufferize="bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map" --lowp-cpu-pipeline | FileCheck %s --check-prefix=LLVM
// LLVM: llvm.func @matmul(
// LLVM: llvm.func @round_trip(
// LLVM: llvm.func @in_place(
// LLVM: llvm.func @destination_read_later(

// One-shot-bufferize turns the tensor form of the lowp ops (BufferizableOpInterface, the
// `into` operands as destinations) into the memref form on the destinations' buffers.
// The ops overwrite their destinations, so a destination's old value is never copied.

// CHECK-LABEL: func.func @matmul
// CHECK-SAME: (%[[A:.*]]: memref<128x256xf4E2M1FN>, %[[SA:.*]]: memref<128x8xf8E8M0FNU>, %[[B:.*]]: memref<64x256xf4E2M1FN>, %[[SB:.*]]: memref<64x8xf8E8M0FNU>) -> memref<128x64xf32>
// CHECK: %[[C:.*]] = memref.alloc() {{.*}} : memref<128x64xf32>
// CHECK-NEXT: lowp.scaled_matmul %[[A]][%[[SA]]], %[[B]][%[[SB]]] into %[[C]] layouts(#lowp.mx<32>, #lowp.mx<32>) : memref<128x256xf4E2M1FN>[memref<128x8xf8E8M0FNU>], memref<64x256xf4E2M1FN>[memref<64x8xf8E8M0FNU>] -> memref<128x64xf32>
// CHECK-NEXT: return %[[C]]
func.func @matmul(%a: tensor<128x256xf4E2M1FN>, %sa: tensor<128x8xf8E8M0FNU>,
                  %b: tensor<64x256xf4E2M1FN>, %sb: tensor<64x8xf8E8M0FNU>) -> tensor<128x64xf32> {
  %init = tensor.empty() : tensor<128x64xf32>
  %r = lowp.scaled_matmul %a[%sa], %b[%sb] into %init layouts(#lowp.mx<32>, #lowp.mx<32>)
      : tensor<128x256xf4E2M1FN>[tensor<128x8xf8E8M0FNU>], tensor<64x256xf4E2M1FN>[tensor<64x8xf8E8M0FNU>]
      -> tensor<128x64xf32>
  return %r : tensor<128x64xf32>
}

// -----

// Quantize and dequantize an NVFP4 round trip: the scales computed into two fresh buffers
// and read by both ops; the dequantized values overwrite the input, read by nothing after.
// CHECK-LABEL: func.func @round_trip
// CHECK-SAME: (%[[X:.*]]: memref<4x64xf32>) -> memref<4x64xf32>
// CHECK-DAG: %[[S:.*]] = memref.alloc() {{.*}} : memref<4x4xf8E4M3FN>
// CHECK-DAG: %[[G:.*]] = memref.alloc() {{.*}} : memref<f32>
// CHECK: lowp.compute_scales %[[X]] into %[[S]], %[[G]] layout #lowp.nvfp4<16, global> format f4E2M1FN : memref<4x64xf32> -> memref<4x4xf8E4M3FN>, memref<f32>
// CHECK: %[[Q:.*]] = memref.alloc() {{.*}} : memref<4x32x!lowp.packed<f4E2M1FN>>
// CHECK: lowp.quantize %[[X]][%[[S]], %[[G]]] layout #lowp.nvfp4<16, global> into %[[Q]]
// CHECK: lowp.dequantize %[[Q]][%[[S]], %[[G]]] layout #lowp.nvfp4<16, global> into %[[X]]
// CHECK-NOT: memref.copy
// CHECK: return %[[X]]
func.func @round_trip(%x: tensor<4x64xf32>) -> tensor<4x64xf32> {
  %s0 = tensor.empty() : tensor<4x4xf8E4M3FN>
  %g0 = tensor.empty() : tensor<f32>
  %s, %g = lowp.compute_scales %x into %s0, %g0 layout #lowp.nvfp4<16, global> format f4E2M1FN
      : tensor<4x64xf32> -> tensor<4x4xf8E4M3FN>, tensor<f32>
  %q0 = tensor.empty() : tensor<4x32x!lowp.packed<f4E2M1FN>>
  %q = lowp.quantize %x[%s, %g] layout #lowp.nvfp4<16, global> into %q0
      : tensor<4x64xf32>[tensor<4x4xf8E4M3FN>, tensor<f32>] -> tensor<4x32x!lowp.packed<f4E2M1FN>>
  %y = lowp.dequantize %q[%s, %g] layout #lowp.nvfp4<16, global> into %x
      : tensor<4x32x!lowp.packed<f4E2M1FN>>[tensor<4x4xf8E4M3FN>, tensor<f32>] -> tensor<4x64xf32>
  return %y : tensor<4x64xf32>
}

// -----

// In place into a memref argument: the destination is the argument itself, and the
// materialization into it folds away.
// CHECK-LABEL: func.func @in_place
// CHECK-SAME: (%[[A:.*]]: memref<16x64xf8E4M3FN>, %[[SA:.*]]: memref<1x1xf32>, %[[B:.*]]: memref<32x64xf8E5M2>, %[[SB:.*]]: memref<32x1xf32>, %[[C:.*]]: memref<16x32xbf16>)
// CHECK-NEXT: lowp.scaled_matmul %[[A]][%[[SA]]], %[[B]][%[[SB]]] into %[[C]] layouts(#lowp.per_tensor, #lowp.per_channel)
// CHECK-NEXT: return
func.func @in_place(%a: memref<16x64xf8E4M3FN>, %sa: memref<1x1xf32>, %b: memref<32x64xf8E5M2>,
                    %sb: memref<32x1xf32>, %c: memref<16x32xbf16>) {
  %ta = bufferization.to_tensor %a restrict : memref<16x64xf8E4M3FN> to tensor<16x64xf8E4M3FN>
  %tsa = bufferization.to_tensor %sa restrict : memref<1x1xf32> to tensor<1x1xf32>
  %tb = bufferization.to_tensor %b restrict : memref<32x64xf8E5M2> to tensor<32x64xf8E5M2>
  %tsb = bufferization.to_tensor %sb restrict : memref<32x1xf32> to tensor<32x1xf32>
  %tc = bufferization.to_tensor %c restrict writable : memref<16x32xbf16> to tensor<16x32xbf16>
  %r = lowp.scaled_matmul %ta[%tsa], %tb[%tsb] into %tc layouts(#lowp.per_tensor, #lowp.per_channel)
      : tensor<16x64xf8E4M3FN>[tensor<1x1xf32>], tensor<32x64xf8E5M2>[tensor<32x1xf32>] -> tensor<16x32xbf16>
  bufferization.materialize_in_destination %r in restrict writable %c
      : (tensor<16x32xbf16>, memref<16x32xbf16>) -> ()
  return
}

// -----

// A destination whose old value is still read afterwards gets a buffer of its own (the
// op writes its destination in full; the old value is not copied into it).
// CHECK-LABEL: func.func @destination_read_later
// CHECK-SAME: (%[[X:.*]]: memref<4x64xf32>, %[[S:.*]]: memref<1x1xf32>, %[[Q0:.*]]: memref<4x64xf8E4M3FN>)
// CHECK: %[[Q:.*]] = memref.alloc() {{.*}} : memref<4x64xf8E4M3FN>
// CHECK-NOT: memref.copy
// CHECK: lowp.quantize %[[X]][%[[S]]] layout #lowp.per_tensor into %[[Q]]
// CHECK: return %[[Q]], %[[Q0]]
func.func @destination_read_later(%x: tensor<4x64xf32>, %s: tensor<1x1xf32>, %q0: tensor<4x64xf8E4M3FN>)
    -> (tensor<4x64xf8E4M3FN>, tensor<4x64xf8E4M3FN>) {
  %q = lowp.quantize %x[%s] layout #lowp.per_tensor into %q0
      : tensor<4x64xf32>[tensor<1x1xf32>] -> tensor<4x64xf8E4M3FN>
  return %q, %q0 : tensor<4x64xf8E4M3FN>, tensor<4x64xf8E4M3FN>
}
