// Entries whose memref accesses leave their buffers, each differently, and one that stays
// inside them.

// A loop one step too long: the last store is past the end.
func.func @store_past_end(%a: memref<16xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c17 = arith.constant 17 : index
  %x = arith.constant 2.0 : f32
  scf.for %i = %c0 to %c17 step %c1 {
    memref.store %x, %a[%i] : memref<16xf32>
  }
  return
}

// A negative index, in the parallel loop that OpenMP runs on threads.
func.func @load_before_start(%a: memref<8x8xf32>, %b: memref<8x8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  scf.parallel (%i, %j) = (%c0, %c0) to (%c8, %c8) step (%c1, %c1) {
    %jm1 = arith.subi %j, %c1 : index
    %v = memref.load %a[%i, %jm1] : memref<8x8xf32>
    memref.store %v, %b[%i, %j] : memref<8x8xf32>
    scf.reduce
  }
  return
}

// A vector of 8 read at column 4 of 8.
func.func @vector_past_end(%a: memref<4x8xf32>, %b: memref<8xf32>) {
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  %v = vector.load %a[%c0, %c4] : memref<4x8xf32>, vector<8xf32>
  vector.store %v, %b[%c0] : memref<8xf32>, vector<8xf32>
  return
}

// A view of 4 rows from row 2 of 4, written through.
func.func @view_past_end(%a: memref<4x4xf32>) {
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  %x = arith.constant 1.0 : f32
  %s = memref.subview %a[%c2, 0] [4, 4] [1, 1]
      : memref<4x4xf32> to memref<4x4xf32, strided<[4, 1], offset: ?>>
  memref.store %x, %s[%c0, %c0] : memref<4x4xf32, strided<[4, 1], offset: ?>>
  return
}

// Every access inside: runs.
func.func @inside(%a: memref<16xf32>, %b: memref<4x8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %x = arith.constant 3.0 : f32
  scf.for %i = %c0 to %c16 step %c1 {
    memref.store %x, %a[%i] : memref<16xf32>
  }
  %v = vector.load %a[%c0] : memref<16xf32>, vector<8xf32>
  vector.store %v, %b[%c1, %c0] : memref<4x8xf32>, vector<8xf32>
  return
}
