// RUN: lowp-translate %s --emit=ptx --chip=sm_90a --kernel=wgmma-tma --store-c=tma | FileCheck %s
// RUN: lowp-translate %s --emit=ptx --chip=sm_90a --kernel=wgmma-tma | FileCheck %s --check-prefix=DIRECT

// store-c=tma in PTX (the IR: lit/Conversion/LowpToNVVM/wgmma-tma-store-c.mlir): C's tensor
// map is a third map parameter; after the consumers' last stage each thread writes its 32
// runs of two f32 results into shared memory (8 bytes each), fences them for the async
// proxy and meets its warpgroup at a named barrier of 128 threads; the warpgroup's first
// thread acquires the map and issues the 4 box stores (shared::cta -> global, tile mode,
// bulk group), commits them, and waits for their read before it returns. No st.global.
// CHECK:       .visible .entry fp8_kernel(
// CHECK:       .maxntid 384, 1, 1
// CHECK-NOT:   .local
// CHECK:       setmaxnreg.inc.sync.aligned.u32 232;
// CHECK-COUNT-32: st.shared.v2.b32 [%rd{{[0-9]+}}{{(\+[0-9]+)?}}], {%r{{[0-9]+}}, %r{{[0-9]+}}};
// CHECK-NOT:   st.global
// CHECK:       fence.proxy.async.shared::cta;
// CHECK-NEXT:  bar.sync {{.*}}%r{{[0-9]+}}, 128;
// CHECK:       fence.proxy.tensormap::generic.acquire.gpu [%rd[[MAP:[0-9]+]]], 128;
// CHECK-COUNT-4: cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group [%rd[[MAP]], {%r{{[0-9]+}}, %r{{[0-9]+}}}], [%rd{{[0-9]+}}{{(\+[0-9]+)?}}];
// CHECK-NEXT:  cp.async.bulk.commit_group;
// CHECK:       cp.async.bulk.wait_group.read {{.*}}0;
// CHECK-NOT:   st.global
// CHECK:       ret;
// Direct: 8-byte global stores of the same runs, no bulk store.
// DIRECT:      .visible .entry fp8_kernel(
// DIRECT-NOT:  cp.async.bulk.tensor.2d.global
// DIRECT:      st.global.v2.b32
// DIRECT-NOT:  cp.async.bulk.tensor.2d.global
// DIRECT:      ret;
func.func @fp8(%a: memref<256x512xf8E4M3FN>, %sa: memref<1x1xf32>, %b: memref<256x512xf8E5M2>,
               %sb: memref<256x1xf32>, %c: memref<256x256xf32>) {
  lowp.scaled_matmul %a[%sa], %b[%sb] into %c layouts(#lowp.per_tensor, #lowp.per_channel)
      : memref<256x512xf8E4M3FN>[memref<1x1xf32>], memref<256x512xf8E5M2>[memref<256x1xf32>] -> memref<256x256xf32>
  return
}
