// RUN: lowp-opt %s --split-input-file --verify-diagnostics --pass-pipeline='builtin.module(lowp-fold-grid{limit=4})' | FileCheck %s

// 6 rows of blocks with at most 4 a dimension: 2 layers of 3. The body recomposes its
// row (layer * 3 + row in layer), runs for rows below 6 only, and its reads of the block
// row, the grid's rows and its layers (as block arguments or id ops) read the old values.
// The rows a layer holds come from before the launch, not from the grid's size (which an
// AMD kernel reads through a ROCm device library).
// CHECK-LABEL: func.func @static
// CHECK:       %c3 = arith.constant 3 : index
// CHECK-NEXT:  %c2_0 = arith.constant 2 : index
// CHECK-NEXT:  %[[C6:.*]] = arith.constant 6 : index
// CHECK:       gpu.launch blocks(%{{.*}}, %[[BY:.*]], %[[BZ:.*]]) in (%{{.*}} = %c2, %[[GY:.*]] = %c3, %{{.*}} = %c2_0)
// CHECK-DAG:     %[[ZERO:.*]] = arith.constant 0 : index
// CHECK-DAG:     %[[ONE:.*]] = arith.constant 1 : index
// CHECK:         %[[ABOVE:.*]] = arith.muli %[[BZ]], %c3 : index
// CHECK:         %[[ROW:.*]] = arith.addi %[[ABOVE]], %[[BY]] : index
// CHECK:         %[[IN:.*]] = arith.cmpi ult, %[[ROW]], %[[C6]] : index
// CHECK:         scf.if %[[IN]] {
// CHECK-NOT:       gpu.block_id
// CHECK-NOT:       gpu.grid_dim
// CHECK:           memref.store %[[ROW]], %{{.*}}[%[[C6]]]
// CHECK:           memref.store %[[ROW]], %{{.*}}[%[[C6]]]
// CHECK:           memref.store %[[ZERO]], %{{.*}}[%[[ONE]]]
// CHECK:         }
// CHECK-NEXT:    gpu.terminator
func.func @static(%m: memref<?xindex>) {
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c6 = arith.constant 6 : index
  %c32 = arith.constant 32 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c2, %gy = %c6, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c32, %sy = %c1, %sz = %c1) {
    %r = gpu.block_id y
    %n = gpu.grid_dim y
    memref.store %by, %m[%gy] : memref<?xindex>
    memref.store %r, %m[%n] : memref<?xindex>
    memref.store %bz, %m[%gz] : memref<?xindex>
    gpu.terminator
  }
  return
}

// -----

// Within the limit: nothing changes.
// CHECK-LABEL: func.func @within
// CHECK:       gpu.launch blocks(%{{.*}}, %[[BY:.*]], %{{.*}}) in (%{{.*}} = %c5, %{{.*}} = %c4, %{{.*}} = %c1)
// CHECK-NEXT:    memref.store %[[BY]]
// CHECK-NEXT:    gpu.terminator
func.func @within(%m: memref<?xindex>) {
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c5 = arith.constant 5 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c5, %gy = %c4, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
    memref.store %by, %m[%by] : memref<?xindex>
    gpu.terminator
  }
  return
}

// -----

// Rows computed at run time: the same fold, computed before the launch.
// CHECK-LABEL: func.func @dynamic
// CHECK-SAME:  (%{{.*}}: memref<?xindex>, %[[Y:.*]]: index)
// CHECK:       %[[N:.*]] = arith.ceildivui %[[Y]], %c4
// CHECK:       %[[LAYERS:.*]] = arith.maxui %[[N]], %c1
// CHECK:       %[[ROWS:.*]] = arith.ceildivui %[[Y]], %[[LAYERS]]
// CHECK:       gpu.launch {{.*}} in (%{{.*}} = %c1, %{{.*}} = %[[ROWS]], %{{.*}} = %[[LAYERS]])
// CHECK:         arith.cmpi ult, %{{.*}}, %[[Y]] : index
// CHECK:         scf.if
// CHECK-NEXT:      memref.store %[[Y]]
func.func @dynamic(%m: memref<?xindex>, %y: index) {
  %c1 = arith.constant 1 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %y, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
    memref.store %gy, %m[%by] : memref<?xindex>
    gpu.terminator
  }
  return
}

// -----

// Clusters of 2 rows: layers of a whole number of clusters (4 rows a layer, 3 layers for
// 12); the cluster row is the block row / 2, the clusters along y 12 / 2, along z 1
// (through gpu.cluster_dim and the cluster-size arguments).
// CHECK-LABEL: func.func @cluster
// CHECK:       gpu.launch clusters({{.*}}) in ({{.*}} = %c1, {{.*}} = %c2, {{.*}} = %c1) blocks({{.*}}) in ({{.*}} = %c2, {{.*}} = %c4, {{.*}} = %c3)
// CHECK:         %[[ROW:.*]] = arith.addi
// CHECK:         %[[CROW:.*]] = arith.divui %[[ROW]], %{{.*}} : index
// CHECK:         %[[CLUSTERS:.*]] = arith.divui %[[OLD:.*]], %{{.*}} : index
// CHECK:         scf.if
// CHECK-NEXT:      memref.store %[[CROW]], %{{.*}}[%[[CROW]]]
// CHECK-NEXT:      memref.store %[[CLUSTERS]], %{{.*}}[%[[ONE:.*]]]
// CHECK-NEXT:      memref.store %[[CLUSTERS]], %{{.*}}[%[[ONE]]]
func.func @cluster(%m: memref<?xindex>) {
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c12 = arith.constant 12 : index
  gpu.launch clusters(%cx, %cy, %cz) in (%ncx = %c1, %ncy = %c2, %ncz = %c1)
             blocks(%bx, %by, %bz) in (%gx = %c2, %gy = %c12, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
    %i = gpu.cluster_id y
    %n = gpu.cluster_dim y
    %l = gpu.cluster_dim z
    memref.store %cy, %m[%i] : memref<?xindex>
    memref.store %n, %m[%l] : memref<?xindex>
    // (gpu-kernel-outlining reads the cluster-size arguments as gpu.cluster_dim.)
    memref.store %ncy, %m[%ncz] : memref<?xindex>
    gpu.terminator
  }
  return
}

// -----

// A launch nested in the body keeps its own ids (it is folded on its own where it needs
// to be: its 3 rows do not).
// CHECK-LABEL: func.func @nested
// CHECK:       gpu.launch
// CHECK:         scf.if
// CHECK:           gpu.launch blocks(%{{[a-z0-9]+}}, %[[INNER:[a-z0-9]+]], %{{[a-z0-9]+}}) in
// CHECK-NEXT:        %[[ID:.*]] = gpu.block_id y
// CHECK-NEXT:        memref.store %[[ID]], %{{.*}}[%[[INNER]]]
func.func @nested(%m: memref<?xindex>) {
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %c6 = arith.constant 6 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c6, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
    gpu.launch blocks(%ibx, %iby, %ibz) in (%igx = %c1, %igy = %c3, %igz = %c1)
               threads(%itx, %ity, %itz) in (%isx = %c1, %isy = %c1, %isz = %c1) {
      %r = gpu.block_id y
      memref.store %r, %m[%iby] : memref<?xindex>
      gpu.terminator
    }
    gpu.terminator
  }
  return
}

// -----

// Clusters taller than the limit: no layer holds one.
func.func @tall_clusters(%m: memref<?xindex>) {
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c16 = arith.constant 16 : index
  // expected-error @+1 {{cannot be folded into z: its clusters of 8 rows are taller than the limit}}
  gpu.launch clusters(%cx, %cy, %cz) in (%ncx = %c1, %ncy = %c8, %ncz = %c1)
             blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c16, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
    gpu.terminator
  }
  return
}

// -----

// More rows than limit^2: an error at the launch.
func.func @too_many(%m: memref<?xindex>) {
  %c1 = arith.constant 1 : index
  %c17 = arith.constant 17 : index
  // expected-error @+1 {{a grid of 17 blocks along y is more than y and z hold at the limit of 4 each (16): too many blocks for one launch}}
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c17, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
    gpu.terminator
  }
  return
}

// -----

// A negative count of blocks: an error at the launch (it once read as 0 rows, within the
// limit, and was left for the runtime to take as 4294967295).
func.func @negative(%m: memref<?xindex>) {
  %c1 = arith.constant 1 : index
  %cm1 = arith.constant -1 : index
  // expected-error @+1 {{a grid of -1 blocks along y: a grid's sizes are not negative}}
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %cm1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
    gpu.terminator
  }
  return
}

// -----

func.func @negative_x(%m: memref<?xindex>) {
  %c1 = arith.constant 1 : index
  %cm3 = arith.constant -3 : index
  // expected-error @+1 {{a grid of -3 blocks along x: a grid's sizes are not negative}}
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %cm3, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
    gpu.terminator
  }
  return
}

// -----

// Layers already in use: an error where the rows are known to exceed the limit.
func.func @layered(%m: memref<?xindex>) {
  %c2 = arith.constant 2 : index
  %c5 = arith.constant 5 : index
  // expected-error @+1 {{a grid of 5 blocks along y is beyond the limit of 4, and it cannot be folded into z: its z is not the constant 1}}
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c2, %gy = %c5, %gz = %c2)
             threads(%tx, %ty, %tz) in (%sx = %c2, %sy = %c2, %sz = %c2) {
    gpu.terminator
  }
  return
}

// -----

// gpu.global_id along y mixes the row with the block's size: not folded.
func.func @global_id(%m: memref<?xindex>) {
  %c1 = arith.constant 1 : index
  %c5 = arith.constant 5 : index
  // expected-error @+1 {{cannot be folded into z: its body reads gpu.global_id along y or z}}
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c5, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
    %g = gpu.global_id y
    memref.store %g, %m[%g] : memref<?xindex>
    gpu.terminator
  }
  return
}
