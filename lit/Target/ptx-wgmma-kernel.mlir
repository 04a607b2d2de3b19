// RUN: lowp-translate %s --emit=ptx --chip=sm_90a | FileCheck %s
// RUN: lowp-translate %s --emit=ptx --chip=sm_100a | FileCheck %s --check-prefix=SM100

// lowp IR to sm_90a PTX: the default kernel there is the wgmma one, here register-staged
// (rows of 200 bytes are not a multiple of 16; the cp.async pipeline: ptx-wgmma-pipeline.mlir). Both tiles in shared
// memory, one m64n128k32 per K step between the fences, the next step's loads between its
// commit and wait (LLVM rotates the loop, so the order is not checked here: see
// lit/Conversion/LowpToNVVM/wgmma.mlir), no local memory.
// CHECK:       .target sm_90a
// CHECK:       .visible .entry mxfp8_kernel(
// CHECK-NOT:   .local
// CHECK-DAG:   .shared .align 4 .b8 {{.*}}[2048];
// CHECK-DAG:   .shared .align 4 .b8 {{.*}}[4096];
// CHECK-DAG:   bar.sync
// CHECK-DAG:   st.shared.b32
// CHECK-DAG:   fence.proxy.async.shared::cta;
// CHECK-DAG:   wgmma.fence.sync.aligned;
// CHECK-DAG:   wgmma.mma_async.sync.aligned.m64n128k32.f32.e4m3.e5m2
// CHECK-DAG:   wgmma.commit_group.sync.aligned;
// CHECK-DAG:   wgmma.wait_group.sync.aligned
// CHECK-NOT:   .local
// Blackwell (no wgmma): the tcgen05 kernel (lit/Target/ptx-tcgen05-kernel.mlir).
// SM100:       .target sm_100a
// SM100-NOT:   wgmma
// SM100:       tcgen05.mma.cta_group::1.kind::mxf8f6f4.block_scale
func.func @mxfp8(%a: memref<128x200xf8E4M3FN>, %sa: memref<128x7xf8E8M0FNU>,
                 %b: memref<64x200xf8E5M2>, %sb: memref<64x7xf8E8M0FNU>, %c: memref<128x64xf32>) {
  lowp.scaled_matmul %a[%sa], %b[%sb] into %c layouts(#lowp.mx<32>, #lowp.mx<32>)
      : memref<128x200xf8E4M3FN>[memref<128x7xf8E8M0FNU>], memref<64x200xf8E5M2>[memref<64x7xf8E8M0FNU>] -> memref<128x64xf32>
  return
}
