// A buffer past any machine's memory (400 GB), its address kept (stored into %c) so that
// LLVM keeps the allocation.
func.func @huge(%c: memref<4xi64>) {
  %a = memref.alloc() : memref<100000000000xf32>
  %last = arith.constant 99999999999 : index
  %zero = arith.constant 0 : index
  %one = arith.constant 1.0 : f32
  memref.store %one, %a[%last] : memref<100000000000xf32>
  %p = memref.extract_aligned_pointer_as_index %a : memref<100000000000xf32> -> index
  %q = arith.index_cast %p : index to i64
  memref.store %q, %c[%zero] : memref<4xi64>
  return
}
