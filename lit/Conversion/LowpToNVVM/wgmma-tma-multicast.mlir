// RUN: lowp-opt %s --pass-pipeline='builtin.module(func.func(lowp-to-nvvm{chip=sm_90a kernel=wgmma-tma multicast=auto},cse))' | FileCheck %s
// RUN: lowp-opt %s --pass-pipeline='builtin.module(func.func(lowp-to-nvvm{chip=sm_90a kernel=wgmma-tma multicast=1},cse))' | FileCheck %s --check-prefix=OFF
// RUN: not lowp-opt %s --pass-pipeline='builtin.module(func.func(lowp-to-nvvm{chip=sm_90a kernel=wgmma-tma multicast=2}))' 2>&1 | FileCheck %s --check-prefix=ODD
// RUN: not lowp-opt %s --pass-pipeline='builtin.module(func.func(lowp-to-nvvm{chip=sm_90a kernel=wgmma-specialized multicast=2}))' 2>&1 | FileCheck %s --check-prefix=NOTMA

// kernel=wgmma-tma's square block with B multicast (multicast=auto: M and N static, an even
// number of 128-row tiles along each, B used as stored). The blocks run in clusters of 2
// along the grid's x, which the grouped launch order maps to adjacent tiles of one column
// of C: they share each stage of B. Each block's producer thread loads all of its A box
// and half of B's (a tensor map of 64-row boxes: rows rank * 64 of the tile) into both
// blocks (multicast mask 0b11), at the same offset and on the same full barrier of each;
// the full barrier still expects 1 arrival and the whole stage's bytes (2 x 16384), half of
// B's coming from the other block. A slot is empty once the consumers of both blocks are
// done with it: lane r of each of the 8 consumer warps arrives on rank r's empty barrier
// (mapa, release at cluster scope), 16 arrivals. The blocks meet after the barriers'
// initialization (before either writes into the other) and before they leave (no arrival
// on a block that left).
// CHECK-LABEL: func.func @shared
// CHECK:         nvgpu.tma.create.descriptor %{{.*}} box[%c128, %c128] : memref<*xi8> -> <tensor = memref<128x128xi8, 3>
// CHECK:         %[[MB:.*]] = nvgpu.tma.create.descriptor %{{.*}} box[%c64, %c128] : memref<*xi8> -> <tensor = memref<64x128xi8, 3>
// CHECK:         %[[B:.*]] = builtin.unrealized_conversion_cast %[[MB]]
// CHECK:         gpu.launch clusters({{.*}}) in (%{{.*}} = %c2, %{{.*}} = %c1, %{{.*}} = %c1) blocks(%[[BX:[^,]*]],
// CHECK:           %[[RANK:.*]] = arith.remui %[[BX]], %c2 : index
// CHECK:             nvvm.mbarrier.init %{{.*}}, %c1_i32 : !llvm.ptr<3>, i32
// CHECK:             nvvm.mbarrier.init %{{.*}}, %c16_i32 : !llvm.ptr<3>, i32
// CHECK:           nvvm.fence.mbarrier.init
// CHECK:         nvvm.cluster.arrive {aligned}
// CHECK-NEXT:    nvvm.cluster.wait {aligned}
// CHECK:         nvvm.setmaxregister  decrease 40
// CHECK:               nvvm.mbarrier.arrive.expect_tx %[[FULL:.*]], %c32768_i32 : !llvm.ptr<3>, i32
// CHECK:               nvvm.cp.async.bulk.tensor.shared.cluster.global %{{.*}}, %{{.*}}, %[[FULL]], box[%{{.*}}, %{{.*}}] : !llvm.ptr<7>, !llvm.ptr
// CHECK:               %[[HALF:.*]] = arith.muli %[[RANK]], %c64 : index
// CHECK:               arith.muli %[[HALF]], %c128 : index
// CHECK:               nvvm.cp.async.bulk.tensor.shared.cluster.global %{{.*}}, %[[B]], %[[FULL]], box[%{{.*}}, %{{.*}}] multicast_mask = %c3_i16 : !llvm.ptr<7>, !llvm.ptr
// CHECK:         nvvm.setmaxregister  increase 232
// CHECK:               %[[LANE:.*]] = arith.remui %{{.*}}, %c32 : index
// CHECK:               arith.cmpi ult, %[[LANE]], %c2 : index
// CHECK:                 %[[PEER:.*]] = nvvm.mapa %{{.*}}, %{{.*}} : !llvm.ptr<3> -> !llvm.ptr<7>
// CHECK-NEXT:            nvvm.mbarrier.arrive %[[PEER]] {scope = #nvvm.mem_scope<cluster>} : !llvm.ptr<7>
// CHECK-NOT:     nvvm.mbarrier.arrive %{{.*}} : !llvm.ptr<3>
// CHECK:         nvvm.cluster.arrive {aligned}
// CHECK-NEXT:    nvvm.cluster.wait {aligned}
// CHECK-NEXT:    gpu.terminator
// OFF-LABEL: func.func @shared
// OFF-NOT:     clusters
// OFF:         nvgpu.tma.create.descriptor %{{.*}} box[%c128, %c128]
// OFF:         nvgpu.tma.create.descriptor %{{.*}} box[%c128, %c128]
// OFF-NOT:     multicast_mask
// OFF-NOT:     nvvm.mapa
// OFF:         nvvm.mbarrier.arrive %{{.*}} : !llvm.ptr<3>
// OFF-LABEL: func.func @odd
func.func @shared(%a: memref<256x384xf8E4M3FN>, %sa: memref<1x1xf32>, %b: memref<256x384xf8E4M3FN>,
                  %sb: memref<1x1xf32>, %c: memref<256x256xf32>) {
  lowp.scaled_matmul %a[%sa], %b[%sb] into %c layouts(#lowp.per_tensor, #lowp.per_tensor)
      : memref<256x384xf8E4M3FN>[memref<1x1xf32>], memref<256x384xf8E4M3FN>[memref<1x1xf32>] -> memref<256x256xf32>
  return
}

// One tile along N: a cluster along x would pair tiles of two columns. auto keeps one
// block per cluster; multicast=2 is an error.
// CHECK-LABEL: func.func @odd
// CHECK-NOT:     clusters
// CHECK-NOT:     multicast_mask
// CHECK:         return
// ODD: wgmma-tma-multicast.mlir:[[#@LINE+3]]:3: error: lowp.scaled_matmul: no wgmma-tma kernel for this op on sm_90a: no TMA multicast: clusters of 2 take an even number of 128-row tiles along M and N (here 2 x 1)
func.func @odd(%a: memref<256x384xf8E4M3FN>, %sa: memref<1x1xf32>, %b: memref<128x384xf8E4M3FN>,
               %sb: memref<1x1xf32>, %c: memref<256x128xf32>) {
  lowp.scaled_matmul %a[%sa], %b[%sb] into %c layouts(#lowp.per_tensor, #lowp.per_tensor)
      : memref<256x384xf8E4M3FN>[memref<1x1xf32>], memref<128x384xf8E4M3FN>[memref<1x1xf32>] -> memref<256x128xf32>
  return
}

// B translated (packed E2M1): it is not loaded by TMA, nothing to share.
// CHECK-LABEL: func.func @translated_b
// CHECK-NOT:     multicast_mask
// CHECK:         return
// ODD: wgmma-tma-multicast.mlir:[[#@LINE+4]]:3: error: lowp.scaled_matmul: no wgmma-tma kernel for this op on sm_90a: no TMA multicast: B is translated, not loaded by TMA
// NOTMA: wgmma-tma-multicast.mlir:[[#@LINE+3]]:3: error: lowp.scaled_matmul: multicast=2 shares B among the blocks of kernel=wgmma-tma's square block (sm_90a), which this op does not take on sm_90a with kernel=wgmma-specialized
func.func @translated_b(%a: memref<256x128xf8E4M3FN>, %sa: memref<256x4xf8E8M0FNU>,
                        %b: memref<256x64x!lowp.packed<f4E2M1FN>>, %sb: memref<256x4xf8E8M0FNU>, %c: memref<256x256xf32>) {
  lowp.scaled_matmul %a[%sa], %b[%sb] into %c layouts(#lowp.mx<32>, #lowp.mx<32>)
      : memref<256x128xf8E4M3FN>[memref<256x4xf8E8M0FNU>], memref<256x64x!lowp.packed<f4E2M1FN>>[memref<256x4xf8E8M0FNU>] -> memref<256x256xf32>
  return
}
