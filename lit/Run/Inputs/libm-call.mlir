// An entry that calls a function the C library defines, and declares one it never calls.
func.func private @expf(f32) -> f32
func.func private @lowp_never_called(f32) -> f32

func.func @calls_libm(%a: memref<4xf32>) {
  %c0 = arith.constant 0 : index
  %x = memref.load %a[%c0] : memref<4xf32>
  %y = func.call @expf(%x) : (f32) -> f32
  memref.store %y, %a[%c0] : memref<4xf32>
  return
}
