// RUN: lowp-opt %s --split-input-file --lowp-check-bounds | FileCheck %s

// Constant indices inside static sizes: nothing to check, the function is left as it is.
// CHECK-LABEL: func.func @static_inside
// CHECK-NOT: cf.assert
// CHECK: return
func.func @static_inside(%a: memref<4xf32>, %b: memref<4x8xf32>) {
  %c0 = arith.constant 0 : index
  %c3 = arith.constant 3 : index
  %x = memref.load %a[%c3] : memref<4xf32>
  memref.store %x, %a[%c0] : memref<4xf32>
  %v = vector.load %b[%c3, %c0] : memref<4x8xf32>, vector<8xf32>
  %s = memref.subview %b[1, 0] [3, 8] [1, 1] : memref<4x8xf32> to memref<3x8xf32, strided<[8, 1], offset: 8>>
  return
}

// -----

// A constant index past a static size is still checked at run time (the code may never
// run it).
// CHECK-LABEL: func.func @static_outside
// CHECK: %[[C4:.*]] = arith.constant 4 : index
// CHECK: %[[OK:.*]] = arith.cmpi ult, %{{.*}}, %[[C4]] : index
// CHECK: cf.assert %[[OK]], "memref.store at {{.*}}lowp-check-bounds.mlir:[[@LINE+4]]:3: out of bounds along dimension 0 of memref<4xf32>"
func.func @static_outside(%a: memref<4xf32>) {
  %c9 = arith.constant 9 : index
  %x = arith.constant 1.0 : f32
  memref.store %x, %a[%c9] : memref<4xf32>
  return
}

// -----

// Dynamic indices and sizes: one unsigned comparison a dimension (a negative index is a
// huge one).
// CHECK-LABEL: func.func @dynamic
// CHECK-SAME: (%[[A:.*]]: memref<?x?xf32>, %[[I:.*]]: index, %[[J:.*]]: index)
// CHECK: %[[D0:.*]] = memref.dim %[[A]], %{{.*}} : memref<?x?xf32>
// CHECK: %[[OK0:.*]] = arith.cmpi ult, %[[I]], %[[D0]] : index
// CHECK: %[[D1:.*]] = memref.dim %[[A]], %{{.*}} : memref<?x?xf32>
// CHECK: %[[OK1:.*]] = arith.cmpi ult, %[[J]], %[[D1]] : index
// CHECK: cf.assert %[[OK0]], "memref.load at {{.*}}: out of bounds along dimension 0 of memref<?x?xf32>"
// CHECK: cf.assert %[[OK1]], "memref.load at {{.*}}: out of bounds along dimension 1 of memref<?x?xf32>"
// CHECK-NEXT: memref.load %[[A]][%[[I]], %[[J]]]
// CHECK: cf.assert {{.*}} "memref.atomic_rmw at {{.*}}: out of bounds along dimension 1 of memref<?x?xf32>"
// CHECK-NEXT: memref.atomic_rmw
func.func @dynamic(%a: memref<?x?xf32>, %i: index, %j: index) {
  %x = memref.load %a[%i, %j] : memref<?x?xf32>
  %r = memref.atomic_rmw addf %x, %a[%i, %j] : (f32, memref<?x?xf32>) -> f32
  return
}

// -----

// A vector reaches len - 1 past its index along the memref's last dimensions.
// CHECK-LABEL: func.func @vector
// CHECK-SAME: (%[[A:.*]]: memref<?xf32>, %[[I:.*]]: index)
// CHECK: %[[D:.*]] = memref.dim %[[A]]
// CHECK: %[[LT:.*]] = arith.cmpi ult, %[[I]], %[[D]] : index
// CHECK: %[[C8:.*]] = arith.constant 8 : index
// CHECK: %[[END:.*]] = arith.addi %[[I]], %[[C8]] : index
// CHECK: %[[FITS:.*]] = arith.cmpi ule, %[[END]], %[[D]] : index
// CHECK: %[[OK:.*]] = arith.andi %[[LT]], %[[FITS]] : i1
// CHECK: cf.assert %[[OK]], "vector.store at {{.*}}: out of bounds along dimension 0 of memref<?xf32> (8 elements from the index)"
func.func @vector(%a: memref<?xf32>, %i: index) {
  %v = arith.constant dense<1.0> : vector<8xf32>
  vector.store %v, %a[%i] : memref<?xf32>, vector<8xf32>
  return
}

// -----

// A view's first and last element along each dimension inside the source; a view of
// dynamic size may be empty.
// CHECK-LABEL: func.func @subview
// CHECK-SAME: (%[[A:.*]]: memref<?xf32>, %[[O:.*]]: index, %[[N:.*]]: index)
// CHECK: %[[D:.*]] = memref.dim %[[A]]
// CHECK: %[[LAST:.*]] = arith.addi %[[O]], %{{.*}} : index
// CHECK: %[[FIRST_IN:.*]] = arith.cmpi ult, %[[O]], %[[D]] : index
// CHECK: %[[LAST_IN:.*]] = arith.cmpi ult, %[[LAST]], %[[D]] : index
// CHECK: %[[IN:.*]] = arith.andi %[[FIRST_IN]], %[[LAST_IN]] : i1
// CHECK: %[[EMPTY:.*]] = arith.cmpi eq, %[[N]], %{{.*}} : index
// CHECK: %[[OK:.*]] = arith.ori %[[EMPTY]], %[[IN]] : i1
// CHECK: cf.assert %[[OK]], "memref.subview at {{.*}}: the view leaves its source (memref<?xf32>) along dimension 0"
func.func @subview(%a: memref<?xf32>, %o: index, %n: index) {
  %s = memref.subview %a[%o] [%n] [2] : memref<?xf32> to memref<?xf32, strided<[2], offset: ?>>
  return
}

// -----

// A cast to a static size and a copy between dynamic ones compare the sizes.
// CHECK-LABEL: func.func @cast_copy
// CHECK: %[[C8:.*]] = arith.constant 8 : index
// CHECK: arith.cmpi eq, %{{.*}}, %[[C8]] : index
// CHECK: cf.assert {{.*}} "memref.cast at {{.*}}: dimension 1 of the source (memref<?x?xf32>) is not the result's 8"
// CHECK: cf.assert {{.*}} "memref.copy at {{.*}}: the source (memref<?x8xf32>) and the target (memref<?x8xf32>) differ along dimension 0"
// CHECK-NOT: (memref<?x8xf32>) differ along dimension 1
// CHECK: cf.assert {{.*}} "memref.copy at {{.*}}: the source (memref<?x?xf32>) and the target (memref<?x8xf32>) differ along dimension 0"
// CHECK: cf.assert {{.*}} "memref.copy at {{.*}}: the source (memref<?x?xf32>) and the target (memref<?x8xf32>) differ along dimension 1"
func.func @cast_copy(%a: memref<?x?xf32>, %b: memref<?x8xf32>) {
  %c = memref.cast %a : memref<?x?xf32> to memref<?x8xf32>
  memref.copy %c, %b : memref<?x8xf32> to memref<?x8xf32>
  memref.copy %a, %b : memref<?x?xf32> to memref<?x8xf32>
  return
}

// -----

// Device code is left alone.
// CHECK-LABEL: func.func @kernel
// CHECK: gpu.launch
// CHECK-NOT: cf.assert
// CHECK: memref.store
func.func @kernel(%a: memref<?xf32>) {
  %c1 = arith.constant 1 : index
  %x = arith.constant 1.0 : f32
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
    memref.store %x, %a[%tx] : memref<?xf32>
    gpu.terminator
  }
  return
}
