// RUN: lowp-opt %s --pass-pipeline='builtin.module(func.func(lowp-to-nvvm{chip=sm_90a kernel=wgmma-tma persistent=on},cse))' | FileCheck %s
// RUN: lowp-opt %s --pass-pipeline='builtin.module(func.func(lowp-to-nvvm{chip=sm_90a kernel=wgmma-tma persistent=on emulate=true},cse))' | FileCheck %s --check-prefix=EMU
// RUN: lowp-opt %s --pass-pipeline='builtin.module(func.func(lowp-to-nvvm{chip=sm_90a kernel=wgmma-tma},cse))' | FileCheck %s --check-prefix=OFF

// persistent=on: kernel=wgmma-tma's square block, fed by TMA alone (E4M3 x E5M2 per
// tensor), as 132 blocks (sm_90a's multiprocessors) over 2100 x 1290's 17 x 11 = 187
// tiles: block b takes tiles b, b + 132, .. (ceil((187 - b) / 132) of them), each in the
// grouped order. The mbarriers (4 slots) are initialized once. Producer thread 0 loops
// over its tiles and, in each, over the 4 stages of K 416: turn g = i * 4 + s waits for
// its slot's empty barrier from g = 4 on, announces the two boxes' bytes and loads them.
// The consumers loop over the same tiles: the pair loop (2 x 2 stages) waits on each
// turn's full barrier and gives back the turn before; after the drain the tile's last
// turn is given back, then its C is stored. Off, a block per tile (the grid of the tiles).
// CHECK-LABEL: func.func @tiles
// CHECK:         gpu.launch blocks(%[[BID:[^,]*]], {{.*}}) in (%{{.*}} = %c132, %{{.*}} = %c1, %{{.*}} = %c1) threads({{.*}}) in (%{{.*}} = %c384,
// CHECK:           scf.for %{{.*}} = %c0 to %c4{{.*}} step %c1 {
// CHECK:             nvvm.mbarrier.init %{{.*}}, %c1_i32
// CHECK:             nvvm.mbarrier.init %{{.*}}, %c256_i32
// CHECK:           nvvm.fence.mbarrier.init
// CHECK:         gpu.barrier
// CHECK:         %[[LEFT:.*]] = arith.subi %c187, %[[BID]] : index
// CHECK:         nvvm.setmaxregister  decrease 40
// CHECK:             scf.for %[[I:.*]] = %c0 to %[[MINE:.*]] step %c1 {
// CHECK:               %[[T:.*]] = arith.addi %[[BID]], %{{.*}} : index
// CHECK:               arith.remui %[[T]], %c11 : index
// CHECK:               arith.divui %[[T]], %c11 : index
// CHECK:               %[[BASE:.*]] = arith.muli %[[I]], %c4 : index
// CHECK:               scf.for %[[S:.*]] = %c0 to %c4 step %c1 {
// CHECK:                 %[[G:.*]] = arith.addi %[[BASE]], %[[S]] : index
// CHECK:                 arith.cmpi uge, %[[G]], %c4 : index
// CHECK:                   nvvm.mbarrier.try_wait.parity
// CHECK:                 nvvm.mbarrier.arrive.expect_tx %{{.*}}, %c32768_i32
// CHECK-COUNT-2:         nvvm.cp.async.bulk.tensor.shared.cluster.global
// CHECK:         nvvm.setmaxregister  increase 232
// CHECK:           scf.for %{{.*}} = %c0 to %[[MINE]] step %c1 {
// CHECK:             scf.for %{{.*}} = %c0 to %c2 step %c1 iter_args(
// CHECK:               nvvm.mbarrier.try_wait.parity
// CHECK-COUNT-4:       nvvm.wgmma.mma_async
// CHECK:                 nvvm.mbarrier.arrive
// CHECK:             "wgmma.wait_group.sync.aligned 0;"
// CHECK:             nvvm.mbarrier.arrive
// CHECK:             memref.store
// CHECK-NOT:     gpu.launch
// EMU-LABEL: func.func @tiles
// EMU:         scf.parallel (%{{.*}}, %{{.*}}) = (%c0, %c0) to (%c132, %c1) step (%c1, %c1) {
// EMU:           arith.subi %c187,
// EMU:           scf.for
// OFF-LABEL: func.func @tiles
// OFF-NOT:     = %c132,
// OFF:         gpu.launch blocks({{.*}}) in (%{{.*}} = %{{[0-9]+}}, %{{.*}} = %{{[0-9]+}}, %{{.*}} = %c1)
func.func @tiles(%a: memref<2100x416xf8E4M3FN>, %sa: memref<1x1xf32>, %b: memref<1290x416xf8E5M2>,
                 %sb: memref<1x1xf32>, %c: memref<2100x1290xf32>) {
  lowp.scaled_matmul %a[%sa], %b[%sb] into %c layouts(#lowp.per_tensor, #lowp.per_tensor)
      : memref<2100x416xf8E4M3FN>[memref<1x1xf32>], memref<1290x416xf8E5M2>[memref<1x1xf32>] -> memref<2100x1290xf32>
  return
}

// A problem of fewer tiles than multiprocessors (2 x 1): a block per tile, one tile each.
// CHECK-LABEL: func.func @few
// CHECK:         gpu.launch blocks({{.*}}) in (%{{.*}} = %c2, %{{.*}} = %c1, %{{.*}} = %c1)
func.func @few(%a: memref<256x256xf8E4M3FN>, %sa: memref<1x1xf32>, %b: memref<128x256xf8E4M3FN>,
               %sb: memref<1x1xf32>, %c: memref<256x128xf32>) {
  lowp.scaled_matmul %a[%sa], %b[%sb] into %c layouts(#lowp.per_tensor, #lowp.per_tensor)
      : memref<256x256xf8E4M3FN>[memref<1x1xf32>], memref<128x256xf8E4M3FN>[memref<1x1xf32>] -> memref<256x128xf32>
  return
}
