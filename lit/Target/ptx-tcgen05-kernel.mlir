// RUN: lowp-translate %s --emit=ptx --chip=sm_100a | FileCheck %s
// RUN: not lowp-translate %s --emit=ptx --chip=sm_90a --kernel=tcgen05 2>&1 | FileCheck %s --check-prefix=SM90

// lowp IR to sm_100a PTX: the default kernel there is the tcgen05 one. A and B in shared
// memory behind descriptors, D (128 x 64 f32) in tensor memory allocated by warp 0, one
// thread issues each MMA and commits it to an mbarrier every thread waits on, each warp
// reads its 32 rows of D with tcgen05.ld at a segment's end, then tensor memory is freed.
// MX with 32-blocks on both sides (@mxfp8): the block-scaled kind, its E8M0 scale factors
// stored into tensor memory by every warp (tcgen05.st x4 for A's 128 rows, x2 for B's 64
// columns) and passed to the MMA by address; other layouts (@fp8_blockwise): kind::f8f6f4,
// the scales applied to D's partial sums. The order is LLVM's (it rotates the loop);
// lit/Conversion/LowpToNVVM/tcgen05.mlir checks the IR's.
// CHECK:       .version 8.8
// CHECK:       .target sm_100a
// CHECK:       .visible .entry mxfp8_kernel(
// CHECK-NOT:   .local
// CHECK-DAG:   .shared .align 4 .b8 {{.*}}[4096];
// CHECK-DAG:   .shared .align 4 .b8 {{.*}}[2048];
// CHECK-DAG:   tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32
// CHECK-DAG:   tcgen05.relinquish_alloc_permit.cta_group::1.sync.aligned;
// CHECK-DAG:   mbarrier.init.shared.b64
// CHECK-DAG:   fence.proxy.async.shared::cta;
// CHECK-DAG:   tcgen05.st.sync.aligned.32x32b.x4.b32
// CHECK-DAG:   tcgen05.st.sync.aligned.32x32b.x2.b32
// CHECK-DAG:   tcgen05.wait::st.sync.aligned;
// CHECK-DAG:   tcgen05.mma.cta_group::1.kind::mxf8f6f4.block_scale.collector::a::discard [%r{{[0-9]+}}], %rd{{[0-9]+}}, %rd{{[0-9]+}}, %r{{[0-9]+}}, [%r{{[0-9]+}}], [%r{{[0-9]+}}], %p{{[0-9]+}};
// CHECK-DAG:   tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.b64
// CHECK-DAG:   mbarrier.try_wait.parity.shared.b64
// CHECK-DAG:   tcgen05.fence::after_thread_sync;
// CHECK-DAG:   tcgen05.ld.sync.aligned.32x32b.x64.b32
// CHECK-DAG:   tcgen05.wait::ld.sync.aligned;
// CHECK-DAG:   tcgen05.dealloc.cta_group::1.sync.aligned.b32
// CHECK-NOT:   .local
// CHECK:       .visible .entry mxf4_kernel(
// CHECK:       tcgen05.mma.cta_group::1.kind::mxf4.block_scale
// CHECK:       .visible .entry nvfp4_kernel(
// CHECK:       tcgen05.mma.cta_group::1.kind::mxf4nvf4.block_scale.block16
// CHECK:       .visible .entry fp8_blockwise_kernel(
// CHECK-NOT:   tcgen05.st
// CHECK-NOT:   block_scale
// CHECK:       tcgen05.mma.cta_group::1.kind::f8f6f4
// Formats no FP8 type holds (E3M4 beside E4M3): kind::f16 on their f16 patterns, with a
// remark. ptxas -arch=sm_100a makes it one UTCHMMA (lit/Target/sass-tensor-cores.test).
// CHECK:       .visible .entry f16_kind_kernel(
// CHECK-NOT:   block_scale
// CHECK:       tcgen05.mma.cta_group::1.kind::f16
// SM90: error: lowp.scaled_matmul: no tcgen05 kernel for this op on sm_90a: sm_90a has no tcgen05 (sm_100a)
func.func @mxfp8(%a: memref<128x256xf8E4M3FN>, %sa: memref<128x8xf8E8M0FNU>,
                 %b: memref<64x256xf8E5M2>, %sb: memref<64x8xf8E8M0FNU>, %c: memref<128x64xf32>) {
  lowp.scaled_matmul %a[%sa], %b[%sb] into %c layouts(#lowp.mx<32>, #lowp.mx<32>)
      : memref<128x256xf8E4M3FN>[memref<128x8xf8E8M0FNU>], memref<64x256xf8E5M2>[memref<64x8xf8E8M0FNU>] -> memref<128x64xf32>
  return
}

func.func @mxf4(%a: memref<128x128x!lowp.packed<f4E2M1FN>>, %sa: memref<128x8xf8E8M0FNU>,
                %b: memref<64x128x!lowp.packed<f4E2M1FN>>, %sb: memref<64x8xf8E8M0FNU>, %c: memref<128x64xf32>) {
  lowp.scaled_matmul %a[%sa], %b[%sb] into %c layouts(#lowp.mx<32>, #lowp.mx<32>)
      : memref<128x128x!lowp.packed<f4E2M1FN>>[memref<128x8xf8E8M0FNU>], memref<64x128x!lowp.packed<f4E2M1FN>>[memref<64x8xf8E8M0FNU>] -> memref<128x64xf32>
  return
}

func.func @nvfp4(%a: memref<128x128x!lowp.packed<f4E2M1FN>>, %sa: memref<128x16xf8E4M3FN>, %ga: memref<f32>,
                 %b: memref<64x128x!lowp.packed<f4E2M1FN>>, %sb: memref<64x16xf8E4M3FN>, %gb: memref<f32>, %c: memref<128x64xf32>) {
  lowp.scaled_matmul %a[%sa, %ga], %b[%sb, %gb] into %c layouts(#lowp.nvfp4<16, global>, #lowp.nvfp4<16, global>)
      : memref<128x128x!lowp.packed<f4E2M1FN>>[memref<128x16xf8E4M3FN>, memref<f32>], memref<64x128x!lowp.packed<f4E2M1FN>>[memref<64x16xf8E4M3FN>, memref<f32>] -> memref<128x64xf32>
  return
}

func.func @fp8_blockwise(%a: memref<128x256xf8E4M3FN>, %sa: memref<128x2xf32>,
                         %b: memref<64x256xf8E4M3FN>, %sb: memref<1x2xf32>, %c: memref<128x64xf32>) {
  lowp.scaled_matmul %a[%sa], %b[%sb] into %c layouts(#lowp.blockwise<1x128>, #lowp.blockwise<128x128>)
      : memref<128x256xf8E4M3FN>[memref<128x2xf32>], memref<64x256xf8E4M3FN>[memref<1x2xf32>] -> memref<128x64xf32>
  return
}

func.func @f16_kind(%a: memref<128x128x!lowp.mf<e3m4>>, %sa: memref<128x1xf32>,
                    %b: memref<64x128xf8E4M3FN>, %sb: memref<64x1xf32>, %c: memref<128x64xf32>) {
  lowp.scaled_matmul %a[%sa], %b[%sb] into %c layouts(#lowp.per_channel, #lowp.per_channel)
      : memref<128x128x!lowp.mf<e3m4>>[memref<128x1xf32>], memref<64x128xf8E4M3FN>[memref<64x1xf32>] -> memref<128x64xf32>
  return
}
