// A dense_resource with its data in the file: translated as any constant.
func.func @f(%c: memref<4xf32>) {
  %v = arith.constant dense_resource<blob1> : vector<4xf32>
  %i = arith.constant 0 : index
  vector.store %v, %c[%i] : memref<4xf32>, vector<4xf32>
  return
}

{-#
  dialect_resources: {
    builtin: {
      blob1: "0x04000000000000000000803F0000004000004040"
    }
  }
#-}
