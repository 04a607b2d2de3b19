// RUN: lowp-opt %s --split-input-file --verify-diagnostics --pass-pipeline='builtin.module(func.func(lowp-to-nvvm{chip=sm_90a kernel=wgmma-tma},cse))' | FileCheck %s
// RUN: lowp-opt %s --split-input-file --verify-diagnostics --pass-pipeline='builtin.module(func.func(lowp-to-nvvm{chip=sm_90a kernel=wgmma-tma emulate=true},cse))' | FileCheck %s --check-prefix=EMU

// kernel=wgmma-tma, M above 64: the warp-specialized block of the sm_90a pipeline (warpgroups 0 and 1
// consume, warpgroup 2 produces; 4 slots of 2 x 16 KiB, a full and an empty mbarrier per
// slot) with the operands used as stored loaded by TMA. On the host, each such operand's
// bytes get a tensor map (nvgpu.tma.create.descriptor: boxes of 128 rows x 128 bytes in
// the 128-byte swizzle the wgmma descriptors read, zeros outside the tensor), passed to
// the kernel as the pointer it lowers to. In the kernel, producer thread 0 acquires the
// maps for the tensormap proxy, then per stage waits for the slot's empty barrier (from
// its second use on), announces the stage's bytes on its full barrier
// (arrive.expect_tx: 1 arrival expected, 2 x 16384 bytes) and issues one box load per
// operand at (the stage's first byte along K, the block's first row). No cp.async.

// CHECK-LABEL: func.func @fp8
// CHECK:         %[[A:.*]] = memref.cast %{{.*}} : memref<256x512xi8> to memref<*xi8>
// CHECK:         %[[DA:.*]] = nvgpu.tma.create.descriptor %[[A]] box[%c128, %c128] : memref<*xi8> -> <tensor = memref<128x128xi8, 3>, swizzle = swizzle_128b, l2promo = l2promo_256b, oob = zero, interleave = none>
// CHECK:         %[[MA:.*]] = builtin.unrealized_conversion_cast %[[DA]] : {{.*}} to !llvm.ptr
// CHECK:         %[[B:.*]] = memref.cast %{{.*}} : memref<128x512xi8> to memref<*xi8>
// CHECK:         %[[DB:.*]] = nvgpu.tma.create.descriptor %[[B]] box[%c128, %c128]
// CHECK:         %[[MB:.*]] = builtin.unrealized_conversion_cast %[[DB]]
// CHECK:         gpu.launch {{.*}} threads({{.*}}) in (%{{.*}} = %c384, %{{.*}} = %c1, %{{.*}} = %c1) dynamic_shared_memory_size %c132160_i32 {
// CHECK:           nvvm.mbarrier.init %{{.*}}, %c1_i32 : !llvm.ptr<3>, i32
// CHECK:           nvvm.mbarrier.init %{{.*}}, %c256_i32 : !llvm.ptr<3>, i32
// CHECK:           nvvm.setmaxregister  decrease 40
// CHECK:           nvvm.fence.proxy.acquire <gpu> %[[MA]], %c128_i32
// CHECK-NEXT:      nvvm.fence.proxy.acquire <gpu> %[[MB]], %c128_i32
// CHECK:           scf.for %[[S:.*]] = %c0 to %{{.*}} step %c1 {
// CHECK:             nvvm.mbarrier.try_wait.parity
// CHECK:             nvvm.mbarrier.arrive.expect_tx %[[FULL:.*]], %c32768_i32 : !llvm.ptr<3>, i32
// CHECK:             %[[K0:.*]] = arith.muli %[[S]], %c128 : index
// CHECK:             nvvm.cp.async.bulk.tensor.shared.cluster.global %{{.*}}, %[[MA]], %[[FULL]], box[%{{.*}}, %{{.*}}] : !llvm.ptr<7>, !llvm.ptr
// CHECK:             nvvm.cp.async.bulk.tensor.shared.cluster.global %{{.*}}, %[[MB]], %[[FULL]], box[%{{.*}}, %{{.*}}] : !llvm.ptr<7>, !llvm.ptr
// CHECK-NOT:       nvvm.cp.async.shared.global
// The consumers: two stages per iteration (4 stages of K 128: 2 iterations), carrying the
// 64 accumulators and the iteration's last segment (its results, first K, whether to
// promote). The first stage: wait for the full barrier, issue, wait for all but the
// group just issued (wgmma.wait_group 1), promote the segment the iteration before left,
// give the slot of the stage before back (its empty barrier); the second: wait, issue,
// wait_group 1 (the first stage is done), promote it, give its slot back; then
// wait_group 0, so that no instruction is in flight across the back edge. The last
// segment's promotion after the loop.
// CHECK:           nvvm.setmaxregister  increase 232
// CHECK:           %{{.*}}:67 = scf.for %{{.*}} = %c0 to %c2 step %c1 iter_args(
// CHECK:             nvvm.mbarrier.try_wait.parity
// CHECK:             nvvm.wgmma.mma_async {{.*}} A[<e4m3>, <one>, <row>], B[<e5m2>, <one>, <col>]
// CHECK:             "wgmma.wait_group.sync.aligned 1;"
// CHECK-NEXT:        scf.if %arg{{[0-9]+}} -> (f32, f32,
// CHECK:             nvvm.mbarrier.arrive %{{.*}} : !llvm.ptr<3>
// CHECK:             nvvm.mbarrier.try_wait.parity
// CHECK:             "wgmma.wait_group.sync.aligned 1;"
// CHECK:             nvvm.mbarrier.arrive %{{.*}} : !llvm.ptr<3>
// CHECK:             "wgmma.wait_group.sync.aligned 0;"
// CHECK-NEXT:        scf.yield
// CHECK-NOT:       nvvm.wgmma.mma_async
// CHECK:           "wgmma.wait_group.sync.aligned 0;"
// CHECK-NEXT:      scf.if %{{.*}}#66 -> (f32, f32,
// CHECK-NOT:       nvvm.wgmma.mma_async
// CHECK-NOT:       "wgmma.wait_group
// CHECK:           gpu.terminator
func.func @fp8(%a: memref<256x512xf8E4M3FN>, %sa: memref<1x1xf32>, %b: memref<128x512xf8E5M2>,
               %sb: memref<1x1xf32>, %c: memref<256x128xf32>) {
  lowp.scaled_matmul %a[%sa], %b[%sb] into %c layouts(#lowp.per_tensor, #lowp.per_tensor)
      : memref<256x512xf8E4M3FN>[memref<1x1xf32>], memref<128x512xf8E5M2>[memref<1x1xf32>] -> memref<256x128xf32>
  return
}

// Three stages of K (384): one iteration of two, then the third after the loop (K is
// static: no stage waits for a slot the producer never fills), which promotes the loop's
// last segment once issued, then its drain.
// CHECK-LABEL: func.func @odd
// CHECK:         %{{.*}}:67 = scf.for %{{.*}} = %c0 to %c1 step %c1 iter_args(
// CHECK:           "wgmma.wait_group.sync.aligned 0;"
// CHECK:           scf.yield
// CHECK-NEXT:    }
// CHECK-NOT:     "wgmma.wait_group
// CHECK:         nvvm.mbarrier.try_wait.parity
// CHECK:         nvvm.wgmma.mma_async
// CHECK:         "wgmma.wait_group.sync.aligned 1;"
// CHECK-NEXT:    scf.if %{{.*}}#66 -> (f32, f32,
// CHECK:         nvvm.mbarrier.arrive %{{.*}} : !llvm.ptr<3>
// CHECK-NOT:     nvvm.wgmma.mma_async
// CHECK:         "wgmma.wait_group.sync.aligned 0;"
func.func @odd(%a: memref<256x384xf8E4M3FN>, %sa: memref<1x1xf32>, %b: memref<128x384xf8E4M3FN>,
               %sb: memref<1x1xf32>, %c: memref<256x128xf32>) {
  lowp.scaled_matmul %a[%sa], %b[%sb] into %c layouts(#lowp.per_tensor, #lowp.per_tensor)
      : memref<256x384xf8E4M3FN>[memref<1x1xf32>], memref<128x384xf8E4M3FN>[memref<1x1xf32>] -> memref<256x128xf32>
  return
}

// A decode shape (M = 16 <= 64): the skinny block (one warpgroup, swap AB) keeps the barrier
// pipeline, its copies replaced by TMA: boxes of A's 16 rows and B's 64 rows x 128 bytes;
// thread 0 initializes a full mbarrier per slot (8, 1 arrival each), fences them and
// acquires the maps before a block barrier; it arms each stage with 2048 + 8192 bytes and
// issues both boxes (in the prologue, and in the loop 6 stages ahead once the stage's
// instructions are issued); every thread waits on the stage's barrier (phase: the slot's
// use) before the stage's block barrier. K (4 stages) is split in clusters of 2.
// CHECK-LABEL: func.func @decode
// CHECK:         nvgpu.tma.create.descriptor %{{.*}} box[%c16, %c128] : memref<*xi8> -> <tensor = memref<16x128xi8, 3>
// CHECK:         nvgpu.tma.create.descriptor %{{.*}} box[%c64, %c128] : memref<*xi8> -> <tensor = memref<64x128xi8, 3>
// CHECK:         gpu.launch clusters({{.*}}) in (%{{.*}} = %c2, %{{.*}} = %c1, %{{.*}} = %c1) blocks({{.*}}) threads({{.*}}) in (%{{.*}} = %c128,
// CHECK-COUNT-8:   nvvm.mbarrier.init %{{.*}}, %c1_i32 : !llvm.ptr<3>, i32
// CHECK-NEXT:      nvvm.fence.mbarrier.init
// CHECK:           nvvm.fence.proxy.acquire
// CHECK:         gpu.barrier
// CHECK:         scf.for
// CHECK:               nvvm.mbarrier.arrive.expect_tx %[[FULL:.*]], %c10240_i32 : !llvm.ptr<3>, i32
// CHECK:               nvvm.cp.async.bulk.tensor.shared.cluster.global %{{.*}}, %{{.*}}, %[[FULL]], box
// CHECK:               nvvm.cp.async.bulk.tensor.shared.cluster.global %{{.*}}, %{{.*}}, %[[FULL]], box
// CHECK:         %{{.*}}:11 = scf.for
// CHECK:             nvvm.mbarrier.try_wait.parity
// CHECK-NEXT:      }
// CHECK-NEXT:      nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}
// CHECK-NEXT:      gpu.barrier
// CHECK:           nvvm.wgmma.mma_async {{.*}} <m = 64, n = 16, k = 32>
// CHECK:               nvvm.mbarrier.arrive.expect_tx
// CHECK:         nvvm.mapa
func.func @decode(%a: memref<16x512xf8E4M3FN>, %sa: memref<1x1xf32>, %b: memref<128x512xf8E4M3FN>,
                  %sb: memref<1x1xf32>, %c: memref<16x128xf32>) {
  lowp.scaled_matmul %a[%sa], %b[%sb] into %c layouts(#lowp.per_tensor, #lowp.per_tensor)
      : memref<16x512xf8E4M3FN>[memref<1x1xf32>], memref<128x512xf8E4M3FN>[memref<1x1xf32>] -> memref<16x128xf32>
  return
}

// Packed E2M1 A (translated) and E4M3 B: only B has a tensor map. Every producer thread
// copies its chunks of A by cp.async and translates them, and arrives after them (128
// arrivals); thread 0 first adds B's box bytes to the stage (expect_tx, no arrival) and
// issues it. A's rows and K are whole tiles and stages: the translating producer keeps 40
// registers (232 for the consumers; 56 only where it translates into split halves).
// CHECK-LABEL: func.func @mixed
// CHECK-COUNT-1: nvgpu.tma.create.descriptor
// CHECK-NOT:     nvgpu.tma.create.descriptor
// CHECK:         gpu.launch
// CHECK:           nvvm.mbarrier.init %{{.*}}, %c128_i32 : !llvm.ptr<3>, i32
// CHECK:           nvvm.setmaxregister  decrease 40
// CHECK:           scf.for
// CHECK:             nvvm.mbarrier.expect_tx %[[FULL:.*]], %c16384_i32 : !llvm.ptr<3>, i32
// CHECK:             nvvm.cp.async.bulk.tensor.shared.cluster.global %{{.*}}, %{{.*}}, %[[FULL]], box
// CHECK:           nvvm.cp.async.shared.global
// CHECK:           nvvm.cp.async.commit.group
// CHECK:           nvvm.mbarrier.arrive
// EMU-LABEL: func.func @mixed
// EMU-NOT:     nvgpu
// EMU-NOT:     nvvm.cp.async
// EMU:         return
func.func @mixed(%a: memref<128x64x!lowp.packed<f4E2M1FN>>, %sa: memref<128x4xf8E8M0FNU>,
                 %b: memref<64x128xf8E4M3FN>, %sb: memref<64x4xf8E8M0FNU>, %c: memref<128x64xf32>) {
  lowp.scaled_matmul %a[%sa], %b[%sb] into %c layouts(#lowp.mx<32>, #lowp.mx<32>)
      : memref<128x64x!lowp.packed<f4E2M1FN>>[memref<128x4xf8E8M0FNU>], memref<64x128xf8E4M3FN>[memref<64x4xf8E8M0FNU>] -> memref<128x64xf32>
  return
}

// MXFP8 (E4M3 x E4M3, E8M0 per 32), K whole stages: TMA loads both operands, and the
// producer warpgroup stays to stage the scales (lit/Conversion/LowpToNVVM/
// wgmma-pipeline-scales.mlir): thread t copies the 4 scale bytes of A's and B's row t
// with the stage (cp.async.ca) and decodes them into the slot after its wait; so every
// producer arrives (128), and thread 0 adds the boxes' bytes with expect_tx.
// CHECK-LABEL: func.func @mxfp8
// CHECK-COUNT-2: nvgpu.tma.create.descriptor
// CHECK:         gpu.launch
// CHECK:           nvvm.mbarrier.init %{{.*}}, %c128_i32 : !llvm.ptr<3>, i32
// CHECK:           nvvm.setmaxregister  decrease 40
// CHECK:           scf.for
// CHECK:             nvvm.mbarrier.expect_tx %[[FULL:.*]], %c32768_i32 : !llvm.ptr<3>, i32
// CHECK:             nvvm.cp.async.bulk.tensor.shared.cluster.global %{{.*}}, %{{.*}}, %[[FULL]], box
// CHECK:             nvvm.cp.async.bulk.tensor.shared.cluster.global %{{.*}}, %{{.*}}, %[[FULL]], box
// CHECK:           nvvm.cp.async.shared.global %{{.*}}, %{{.*}}, 4, cache =  ca, %c4_i32
// CHECK:           nvvm.cp.async.shared.global %{{.*}}, %{{.*}}, 4, cache =  ca, %c4_i32
// CHECK:           nvvm.cp.async.commit.group
// CHECK:           nvvm.mbarrier.arrive %{{.*}} : !llvm.ptr<3>
// CHECK:         nvvm.setmaxregister  increase 232
func.func @mxfp8(%a: memref<256x256xf8E4M3FN>, %sa: memref<256x8xf8E8M0FNU>,
                 %b: memref<128x256xf8E4M3FN>, %sb: memref<128x8xf8E8M0FNU>, %c: memref<256x128xf32>) {
  lowp.scaled_matmul %a[%sa], %b[%sb] into %c layouts(#lowp.mx<32>, #lowp.mx<32>)
      : memref<256x256xf8E4M3FN>[memref<256x8xf8E8M0FNU>], memref<128x256xf8E4M3FN>[memref<128x8xf8E8M0FNU>] -> memref<256x128xf32>
  return
}

// -----

// Both operands translated: nothing for TMA to load, a located error.
func.func @translated(%a: memref<128x64x!lowp.packed<f4E2M1FN>>, %sa: memref<128x4xf8E8M0FNU>,
                      %b: memref<64x64x!lowp.packed<f4E2M1FN>>, %sb: memref<64x4xf8E8M0FNU>, %c: memref<128x64xf32>) {
  // expected-error @+1 {{no wgmma-tma kernel for this op on sm_90a: TMA loads the operands used as stored (E4M3 / E5M2); both are translated}}
  lowp.scaled_matmul %a[%sa], %b[%sb] into %c layouts(#lowp.mx<32>, #lowp.mx<32>)
      : memref<128x64x!lowp.packed<f4E2M1FN>>[memref<128x4xf8E8M0FNU>], memref<64x64x!lowp.packed<f4E2M1FN>>[memref<64x4xf8E8M0FNU>] -> memref<128x64xf32>
  return
}
