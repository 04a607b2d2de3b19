// A function of memrefs beside one of tensors, which the CPU pipeline does not bufferize.
func.func @ok(%x: memref<4xf32>) {
  return
}
func.func @other(%t: tensor<4xf32>) {
  return
}
