// RUN: lowp-translate %s --emit=ptx --chip=sm_90a --nvfp4=f16 | FileCheck %s

// NVFP4's f16 route in PTX (lit/Conversion/LowpToNVVM/wgmma-pipeline-f16.mlir has its IR,
// lit/Target/sass-tensor-cores.test its SASS): per stage and chunk a 16-byte cp.async.cg
// of codes and a 4-byte cp.async.ca of the row's scale word; after the stage wait, the
// chunk's scale pair widened by cvt.rn.f16x2.e4m3x2, the codes looked up as E5M2 bytes
// (E2M1's images 0x3E3C3800 0x46444240 = 1044133888 1178878528, the low word held in a
// register by an or with (%dynamic_smem_size >> 24) * %laneid, zero; their signs by the
// sign-mode permutes 0xd9c8 / 0xfbea), widened by prmt 0x1404 / 0x3424 and multiplied by
// their block's scale (mul.rn.f16x2), stored as 16-byte rows of the f16 tile; then the
// proxy fence and barrier, and four m64n128k16.f32.f16.f16 instructions that read and
// write the accumulators (scale-d predicate 1), waited for at the end of the iteration.
// No local memory.
// CHECK:       .visible .entry nvfp4_kernel(
// CHECK:       .maxntid 256, 1, 1
// CHECK-NOT:   .local
// CHECK:       cp.async.cg.shared.global [%rd{{[0-9]+}}], [%rd{{[0-9]+}}], 16, 16;
// CHECK-NEXT:  cvta.to.global.u64
// CHECK-NEXT:  cp.async.ca.shared.global [%rd{{[0-9]+}}], [%rd{{[0-9]+}}], 4, 4;
// CHECK:       cp.async.commit_group;
// The loop's latch (LLVM places it before the body): the wait for the stage's
// instructions, then the next iteration.
// CHECK:       wgmma.wait_group.sync.aligned 0;
// CHECK:       cp.async.wait_group 2;
// CHECK:       cvt.rn.f16x2.e4m3x2 [[SCALES:%r[0-9]+]], %rs{{[0-9]+}};
// CHECK:       mov.b32 [[C:%r[0-9]+]], 1044133888;
// CHECK:       { .reg .u32 t, l; mov.u32 t, %dynamic_smem_size; shr.u32 t, t, 24; mov.u32 l, %laneid; mul.lo.u32 t, t, l; or.b32 [[LO:%r[0-9]+]], [[C]], t; }
// CHECK:       prmt.b32 {{%r[0-9]+}}, {{%r[0-9]+}}, {{%r[0-9]+}}, 0xd9c8U;
// CHECK-NEXT:  and.b32
// CHECK-NEXT:  prmt.b32 {{%r[0-9]+}}, [[LO]], 1178878528, {{%r[0-9]+}};
// CHECK:       prmt.b32 [[PAIR:%r[0-9]+]], {{%r[0-9]+}}, 0, 0x1404U;
// CHECK-NEXT:  mul.rn.f16x2 {{%r[0-9]+}}, {{%r[0-9]+}}, [[PAIR]];
// CHECK-NEXT:  prmt.b32 [[PAIR2:%r[0-9]+]], {{%r[0-9]+}}, 0, 0x3424U;
// CHECK-NEXT:  mul.rn.f16x2 {{%r[0-9]+}}, {{%r[0-9]+}}, [[PAIR2]];
// CHECK:       st.shared.v4.b32
// CHECK:       fence.proxy.async.shared::cta;
// CHECK-NEXT:  bar.sync 0;
// CHECK:       wgmma.fence.sync.aligned;
// CHECK:       setp.ne.b32 p, 1, 0;
// CHECK-NEXT:  wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 {[[D:%r[0-9]+]], {{.*}}}, %rd{{[0-9]+}}, %rd{{[0-9]+}}, p, 1, 1, 0, 0;
// CHECK:       wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 {[[D]],
// CHECK:       wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 {[[D]],
// CHECK:       wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 {[[D]], {{.*}}, p, 1, 1, 0, 0;
// CHECK-NOT:   wgmma.mma_async
// CHECK:       wgmma.commit_group.sync.aligned;
// CHECK-NOT:   wgmma.mma_async
// CHECK-NOT:   .local
func.func @nvfp4(%a: memref<256x128x!lowp.packed<f4E2M1FN>>, %sa: memref<256x16xf8E4M3FN>,
                 %b: memref<128x128x!lowp.packed<f4E2M1FN>>, %sb: memref<128x16xf8E4M3FN>,
                 %c: memref<256x128xf32>) {
  lowp.scaled_matmul %a[%sa], %b[%sb] into %c layouts(#lowp.nvfp4<16>, #lowp.nvfp4<16>)
      : memref<256x128x!lowp.packed<f4E2M1FN>>[memref<256x16xf8E4M3FN>], memref<128x128x!lowp.packed<f4E2M1FN>>[memref<128x16xf8E4M3FN>] -> memref<256x128xf32>
  return
}
