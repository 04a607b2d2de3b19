// RUN: lowp-translate %s --emit=ptx --chip=sm_90a | FileCheck %s

// The skinny block of the sm_90a cp.async pipeline in PTX (the IR:
// lit/Conversion/LowpToNVVM/wgmma-pipeline.mlir, @decode): one warpgroup, 8 stages in
// dynamic shared memory, swap AB: the instruction's A is B's 64 rows (E4M3), its B the 16
// rows of A (E5M2), so the instruction is m64n16k32.e4m3.e5m2 with 8 accumulators, the
// first of each stage not reading D, each stage's wait (wgmma.wait_group 1) after the next
// stage's issue. Each step waits for all but 5 copy groups (6 stages ahead). The shapes
// are whole tiles and stages: every copy is 16 bytes (no zero fill), A's one chunk a
// thread, then B's four, 16 rows apart, at immediate offsets from one address. No local
// memory. (LLVM 22's NVPTX keeps f32 values in .b32 registers.)
// CHECK:       .target sm_90a
// CHECK:       .extern .shared .align 16 .b8 __dynamic_shmem__0[];
// CHECK:       .visible .entry decode_kernel(
// CHECK:       .maxntid 128, 1, 1
// CHECK-NOT:   .reqnctapercluster
// CHECK-NOT:   .local
// CHECK:       cp.async.cg.shared.global [%rd{{[0-9]+}}], [%rd{{[0-9]+}}], 16, 16;
// CHECK:       cp.async.cg.shared.global [%rd[[DST:[0-9]+]]+2048], [%rd[[SRC:[0-9]+]]], 16, 16;
// CHECK-NEXT:  cp.async.cg.shared.global [%rd[[DST]]+4096], [%rd[[SRC]]+8192], 16, 16;
// CHECK:       cp.async.wait_group 5;
// CHECK-NEXT:  fence.proxy.async.shared::cta;
// CHECK-NEXT:  bar.sync 0;
// CHECK:       setp.ne.b32 p, 0, 0;
// CHECK-NEXT:  wgmma.mma_async.sync.aligned.m64n16k32.f32.e4m3.e5m2 {%r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}}, %rd{{[0-9]+}}, %rd{{[0-9]+}}, p, 1, 1;
// CHECK-COUNT-3: wgmma.mma_async.sync.aligned.m64n16k32.f32.e4m3.e5m2
// CHECK:       wgmma.commit_group.sync.aligned;
// CHECK:       wgmma.wait_group.sync.aligned 1;
// CHECK:       wgmma.wait_group.sync.aligned 0;
// CHECK:       cp.async.wait_group 0;
// CHECK-NOT:   .local
func.func @decode(%a: memref<16x512xf8E5M2>, %sa: memref<1x1xf32>, %b: memref<8192x512xf8E4M3FN>,
                  %sb: memref<8192x1xf32>, %c: memref<16x8192xbf16>) {
  lowp.scaled_matmul %a[%sa], %b[%sb] into %c layouts(#lowp.per_tensor, #lowp.per_channel)
      : memref<16x512xf8E5M2>[memref<1x1xf32>], memref<8192x512xf8E4M3FN>[memref<8192x1xf32>] -> memref<16x8192xbf16>
  return
}
