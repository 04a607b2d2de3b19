// Constants of codes (tensor form), bufferized to memref.globals: lowp-lower-storage keeps
// their bytes as i8.
func.func @deq(%y: memref<3x4xf32>) {
  %q = arith.constant dense<[[0.5, 1.0, -6.0, 3.0], [0.0, -0.5, 4.0, 1.5], [2.0, -3.0, 6.0, -1.0]]> : tensor<3x4xf4E2M1FN>
  %s = arith.constant dense<2.0> : tensor<1x1xf32>
  %y0 = bufferization.to_tensor %y restrict writable : memref<3x4xf32> to tensor<3x4xf32>
  %r = lowp.dequantize %q[%s] layout #lowp.per_tensor into %y0 : tensor<3x4xf4E2M1FN>[tensor<1x1xf32>] -> tensor<3x4xf32>
  bufferization.materialize_in_destination %r in restrict writable %y : (tensor<3x4xf32>, memref<3x4xf32>) -> ()
  return
}
func.func @deq6(%y: memref<2x4xf32>) {
  %q = arith.constant dense<[[28.0, -0.0625, 0.25, -12.0], [0.1875, 7.0, -28.0, 0.0]]> : tensor<2x4xf6E3M2FN>
  %s = arith.constant dense<1.0> : tensor<1x1xf32>
  %y0 = bufferization.to_tensor %y restrict writable : memref<2x4xf32> to tensor<2x4xf32>
  %r = lowp.dequantize %q[%s] layout #lowp.per_tensor into %y0 : tensor<2x4xf6E3M2FN>[tensor<1x1xf32>] -> tensor<2x4xf32>
  bufferization.materialize_in_destination %r in restrict writable %y : (tensor<2x4xf32>, memref<2x4xf32>) -> ()
  return
}
func.func @splat8(%y: memref<2x2xf32>) {
  %q = arith.constant dense<-448.0> : tensor<2x2xf8E4M3FN>
  %s = arith.constant dense<0.5> : tensor<1x1xf32>
  %y0 = bufferization.to_tensor %y restrict writable : memref<2x2xf32> to tensor<2x2xf32>
  %r = lowp.dequantize %q[%s] layout #lowp.per_tensor into %y0 : tensor<2x2xf8E4M3FN>[tensor<1x1xf32>] -> tensor<2x2xf32>
  bufferization.materialize_in_destination %r in restrict writable %y : (tensor<2x2xf32>, memref<2x2xf32>) -> ()
  return
}
