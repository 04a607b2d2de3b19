// RUN: lowp-translate %s --emit=ptx --chip=sm_90a -o %t.ptx 2>%t.remarks
// RUN: FileCheck %s < %t.ptx
// RUN: FileCheck %s --check-prefix=HALF < %t.ptx
// RUN: FileCheck %s --check-prefix=REMARK < %t.remarks
// RUN: lowp-translate %s --emit=ptx --chip=sm_100a | FileCheck %s --check-prefix=SM100

// lowp IR to sm_90a PTX: the default kernel there is the wgmma one, here register-staged
// (rows of 200 bytes are not a multiple of 16; the cp.async pipeline:
// ptx-wgmma-pipeline.mlir). Both tiles in shared memory (and the decoded MX scales of the
// step, 64 + 128 f32), one m64n128k32 per K step between the fences, the next step's loads
// between its commit and wait (LLVM rotates the loop, so the order is not checked here: see
// lit/Conversion/LowpToNVVM/wgmma.mlir), no local memory.
// CHECK:       .target sm_90a
// CHECK:       .visible .entry mxfp8_kernel(
// CHECK-NOT:   .local
// CHECK-DAG:   .shared .align 4 .b8 {{.*}}[2048];
// CHECK-DAG:   .shared .align 4 .b8 {{.*}}[4096];
// CHECK-DAG:   .shared .align 4 .b8 {{.*}}[768];
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

// E3M4 embeds in no FP8 type, and its rows are not whole 16 bytes either (the pipeline's
// f16 route: ptx-wgmma-pipeline-f16.mlir): the register-staged kernel writes the f16
// patterns of its codes' fields (E4M3 widened the same way) into the same tiles, two a
// word, and issues m64n128k16 on f16, with a remark.
// REMARK:    ptx-wgmma-kernel.mlir:[[#@LINE+12]]:3: remark: f16 wgmma kernel on sm_90a: f8e3m4 embeds in none of f8e4m3, f8e5m2
// HALF:      .visible .entry e3m4_kernel(
// HALF-NOT:  .local
// HALF-DAG:  .shared .align 4 .b8 {{.*}}[2048];
// HALF-DAG:  .shared .align 4 .b8 {{.*}}[4096];
// HALF-DAG:  .shared .align 4 .b8 {{.*}}[768];
// HALF-DAG:  wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16
// HALF-NOT:  .local
// HALF-NOT:  k32
// SM100:     tcgen05.mma.cta_group::1.kind::f16
func.func @e3m4(%a: memref<128x200x!lowp.mf<e3m4>>, %sa: memref<128x7xf8E8M0FNU>,
                %b: memref<64x200xf8E4M3FN>, %sb: memref<64x7xf8E8M0FNU>, %c: memref<128x64xf32>) {
  lowp.scaled_matmul %a[%sa], %b[%sb] into %c layouts(#lowp.mx<32>, #lowp.mx<32>)
      : memref<128x200x!lowp.mf<e3m4>>[memref<128x7xf8E8M0FNU>], memref<64x200xf8E4M3FN>[memref<64x7xf8E8M0FNU>] -> memref<128x64xf32>
  return
}
