// RUN: lowp-translate %s --emit=ptx --chip=sm_90a --kernel=wgmma-tma --multicast=auto | FileCheck %s
// RUN: lowp-translate %s --emit=ptx --chip=sm_90a --kernel=wgmma-tma --multicast=1 | FileCheck %s --check-prefix=UNICAST
// RUN: not lowp-translate %s --emit=asm --chip=gfx942 --multicast=1 2>&1 | FileCheck %s --check-prefix=AMD

// kernel=wgmma-tma in PTX (the IR: lit/Conversion/LowpToNVVM/wgmma-tma.mlir): 384
// threads, the tensor maps of A and B as two 64-bit parameters (their addresses in global
// memory; lowp-run's launch line lists them as `tensormap` params). Thread 0 initializes
// the barriers (full: 1 arrival, empty: 256) and fences them for the TMA unit; the
// producer warpgroup gives up registers, its thread 0 acquires both maps, then per stage
// announces 32768 bytes on the stage's full barrier and issues the two 2-D box loads of
// 128 x 128 bytes into the slot (a shared::cta address seen as shared::cluster), each
// counted on that barrier. The consumers wait on the full barrier and run 4
// m64n128k32 e4m3 x e5m2 per stage. No cp.async, no local memory.
// CHECK:       .version 8.4
// CHECK:       .target sm_90a
// CHECK:       .visible .entry fp8_kernel(
// CHECK:       .maxntid 384, 1, 1
// CHECK-NOT:   .local
// CHECK:       mbarrier.init.shared.b64 [%rd{{[0-9]+}}+131072], %r[[ONE:[0-9]+]];
// CHECK:       fence.mbarrier_init.release.cluster;
// CHECK-NEXT:  fence.proxy.async.shared::cta;
// CHECK:       bar.sync 0;
// CHECK:       setmaxnreg.dec.sync.aligned.u32 40;
// CHECK:       fence.proxy.tensormap::generic.acquire.gpu [%rd[[MA:[0-9]+]]], 128;
// CHECK-NEXT:  fence.proxy.tensormap::generic.acquire.gpu [%rd[[MB:[0-9]+]]], 128;
// CHECK:       mov.b32 %r[[BYTES:[0-9]+]], 32768;
// CHECK-NEXT:  mbarrier.arrive.expect_tx.shared.b64 %rd{{[0-9]+}}, [%rd[[FULL:[0-9]+]]], %r[[BYTES]];
// CHECK:       cvta.to.shared::cluster.u64
// CHECK:       cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%rd{{[0-9]+}}], [%rd[[MA]], {%r{{[0-9]+}}, %r{{[0-9]+}}}], [%rd[[FULL]]];
// CHECK:       cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%rd{{[0-9]+}}], [%rd[[MB]], {%r{{[0-9]+}}, %r{{[0-9]+}}}], [%rd[[FULL]]];
// CHECK:       mbarrier.try_wait.parity.shared.b64
// CHECK:       setmaxnreg.inc.sync.aligned.u32 232;
// CHECK:       mbarrier.try_wait.parity.shared.b64
// CHECK-COUNT-4: wgmma.mma_async.sync.aligned.m64n128k32.f32.e4m3.e5m2
// CHECK:       wgmma.commit_group.sync.aligned;
// CHECK-NOT:   cp.async.cg
// CHECK:       ret;
func.func @fp8(%a: memref<256x512xf8E4M3FN>, %sa: memref<1x1xf32>, %b: memref<128x512xf8E5M2>,
               %sb: memref<1x1xf32>, %c: memref<256x128xf32>) {
  lowp.scaled_matmul %a[%sa], %b[%sb] into %c layouts(#lowp.per_tensor, #lowp.per_tensor)
      : memref<256x512xf8E4M3FN>[memref<1x1xf32>], memref<128x512xf8E5M2>[memref<1x1xf32>] -> memref<256x128xf32>
  return
}

// B multicast (lit/Conversion/LowpToNVVM/wgmma-tma-multicast.mlir): 2 x 2 tiles of C, the
// kernel fixed to clusters of 2 blocks. The empty barriers take 16 arrivals; the blocks
// meet at a cluster barrier after the initialization and before they leave; each stage's
// B box (its map of 64-row boxes) goes to both blocks (mask 3); a consumer warp's lanes 0
// and 1 release the slot on the empty barriers of ranks 0 and 1.
// CHECK:       .visible .entry shared_kernel(
// CHECK:       .maxntid 384, 1, 1
// CHECK-NEXT:  .explicitcluster
// CHECK-NEXT:  .reqnctapercluster 2, 1, 1
// CHECK-NOT:   .local
// CHECK:       mov.b32 %r[[SIXTEEN:[0-9]+]], 16;
// CHECK:       mbarrier.init.shared.b64 [%rd{{[0-9]+}}+131104], %r[[SIXTEEN]];
// CHECK:       fence.mbarrier_init.release.cluster;
// CHECK:       barrier.cluster.arrive.aligned;
// CHECK-NEXT:  barrier.cluster.wait.aligned;
// CHECK:       mbarrier.arrive.expect_tx.shared.b64 %rd{{[0-9]+}}, [%rd[[FULL:[0-9]+]]], %r{{[0-9]+}};
// CHECK:       cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%rd{{[0-9]+}}], [%rd{{[0-9]+}}, {%r{{[0-9]+}}, %r{{[0-9]+}}}], [%rd[[FULL]]];
// CHECK:       mov.b16 %rs[[MASK:[0-9]+]], 3;
// CHECK-NEXT:  cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster [%rd{{[0-9]+}}], [%rd{{[0-9]+}}, {%r{{[0-9]+}}, %r{{[0-9]+}}}], [%rd[[FULL]]], %rs[[MASK]];
// CHECK:       setmaxnreg.inc.sync.aligned.u32 232;
// CHECK:       mapa.shared::cluster.u64 %rd[[PEER:[0-9]+]], %rd{{[0-9]+}}, %r{{[0-9]+}};
// CHECK-NEXT:  mov.b32 %r[[N:[0-9]+]], 1;
// CHECK-NEXT:  mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%rd[[PEER]]], %r[[N]];
// The epilogue stores register pairs (adjacent columns) 8 bytes at a time, where C is
// 8-byte aligned.
// CHECK:       st.global.v2.b32 [%rd{{[0-9]+}}], {%r{{[0-9]+}}, %r{{[0-9]+}}};
// CHECK:       barrier.cluster.arrive.aligned;
// CHECK-NEXT:  barrier.cluster.wait.aligned;
// CHECK-NEXT:  ret;
// --multicast=1 (lowp-to-nvvm's option, as lowp-run's --multicast 1): one block per
// cluster, B's boxes whole, no multicast; the option tunes NVIDIA kernels only.
// UNICAST:     .visible .entry shared_kernel(
// UNICAST-NOT: .reqnctapercluster
// UNICAST-NOT: multicast::cluster
// UNICAST:     ret;
// AMD: lowp-translate: --split-k, --multicast, --fold-scales, --translate-ahead, --stages, --block-n, --persistent, --store-c, --translate-once, --nvfp4 and --accumulate tune lowp-to-nvvm: give an NVIDIA --chip, not gfx942
func.func @shared(%a: memref<256x384xf8E4M3FN>, %sa: memref<1x1xf32>, %b: memref<256x384xf8E4M3FN>,
                  %sb: memref<1x1xf32>, %c: memref<256x256xf32>) {
  lowp.scaled_matmul %a[%sa], %b[%sb] into %c layouts(#lowp.per_tensor, #lowp.per_tensor)
      : memref<256x384xf8E4M3FN>[memref<1x1xf32>], memref<256x384xf8E4M3FN>[memref<1x1xf32>] -> memref<256x256xf32>
  return
}
