func.func @f(%x: memref<4xi128>, %y: memref<3xi1>, %z: memref<2xi65>) {
  return
}
