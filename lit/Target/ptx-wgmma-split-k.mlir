// RUN: lowp-translate %s --emit=ptx --chip=sm_90a | FileCheck %s

// Split-K of the sm_90a skinny wgmma block in PTX (the IR: lit/Conversion/LowpToNVVM/
// wgmma-pipeline.mlir, @split): 16 x 256 x 2048 is 4 tiles of C and 16 stages of K, so 8
// blocks per tile, each summing 2 stages. The cluster size is fixed in the entry
// (lowp-kernel-cluster-size: .explicitcluster, .reqnctapercluster 8, 1, 1), so a plain
// launch forms the clusters. Rank 0 reads the other ranks' 8 partial sums per thread from
// their shared memory: 7 x 8 mapa + ld.shared::cluster, between two cluster barriers.
// CHECK:       .visible .entry split_kernel(
// CHECK:       .maxntid 128, 1, 1
// CHECK-NEXT:  .explicitcluster
// CHECK-NEXT:  .reqnctapercluster 8, 1, 1
// CHECK-NOT:   .local
// CHECK:       wgmma.mma_async.sync.aligned.m64n16k32.f32.e4m3.e4m3
// CHECK:       barrier.cluster.arrive.aligned;
// CHECK-NEXT:  barrier.cluster.wait.aligned;
// CHECK-COUNT-56: ld.shared::cluster.b32
// CHECK:       barrier.cluster.arrive.aligned;
// CHECK-NEXT:  barrier.cluster.wait.aligned;
// CHECK-NOT:   .local
func.func @split(%a: memref<16x2048xf8E4M3FN>, %sa: memref<1x1xf32>, %b: memref<256x2048xf8E4M3FN>,
                 %sb: memref<1x1xf32>, %c: memref<16x256xf32>) {
  lowp.scaled_matmul %a[%sa], %b[%sb] into %c layouts(#lowp.per_tensor, #lowp.per_tensor)
      : memref<16x2048xf8E4M3FN>[memref<1x1xf32>], memref<256x2048xf8E4M3FN>[memref<1x1xf32>] -> memref<16x256xf32>
  return
}
