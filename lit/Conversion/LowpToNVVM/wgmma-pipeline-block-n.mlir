// RUN: lowp-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(lowp-to-nvvm{chip=sm_90a kernel=wgmma block-n=192},cse))' | FileCheck %s
// RUN: lowp-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(lowp-to-nvvm{chip=sm_90a kernel=auto block-n=192},cse))' | FileCheck %s --check-prefix=TMA
// RUN: not lowp-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(lowp-to-nvvm{chip=sm_90a kernel=wgmma-specialized block-n=192}))' 2>&1 | FileCheck %s --check-prefix=WS
// RUN: not lowp-opt %s --pass-pipeline='builtin.module(func.func(lowp-to-nvvm{chip=sm_90a block-n=256}))' 2>&1 | FileCheck %s --check-prefix=BAD

// block-n=192: the square block computes 128 x 192 of C, each warpgroup 64 x 192 with
// wgmma m64n192k32 (96 accumulators a thread). A stage is 16 KiB of A and 24 KiB of B; the
// barrier pipeline keeps 5 (5 x 40 KiB + 1 KiB = 205824 bytes). Its FP8 operands used as
// stored would take two register sets of partial sums at 128 columns; at 192 one set, so
// each stage's four instructions are waited for (wgmma.wait_group 0) and promoted before
// the next stage's.
// CHECK-LABEL: func.func @fp8
// CHECK:         gpu.launch {{.*}} threads({{.*}}) in (%{{.*}} = %c256, %{{.*}} = %c1, %{{.*}} = %c1) dynamic_shared_memory_size %c205824_i32 {
// CHECK:           scf.for
// CHECK-COUNT-4:     nvvm.wgmma.mma_async {{.*}}, <m = 64, n = 192, k = 32>
// CHECK:             "wgmma.wait_group.sync.aligned 0;"
// CHECK-COUNT-4:     nvvm.wgmma.mma_async {{.*}}, <m = 64, n = 192, k = 32>
// CHECK:             "wgmma.wait_group.sync.aligned 0;"
// CHECK-NOT:       n = 128
// auto loads FP8 used as stored by TMA (B in boxes of 192 rows, a stage 40960 bytes, 4
// slots); MXFP4 keeps the barrier pipeline.
// TMA:           nvgpu.tma.create.descriptor %{{.*}} box[%c128, %c128]
// TMA:           nvgpu.tma.create.descriptor %{{.*}} box[%c192, %c128]
// TMA:           gpu.launch {{.*}} dynamic_shared_memory_size %c164928_i32 {
// TMA:             nvvm.mbarrier.arrive.expect_tx %{{.*}}, %c40960_i32
// TMA:             nvvm.wgmma.mma_async {{.*}}, <m = 64, n = 192, k = 32>
// BAD: option 'block-n' of lowp-to-nvvm: '256' is not accepted; expected 128, 192
func.func @fp8(%a: memref<256x512xf8E4M3FN>, %sa: memref<1x1xf32>, %b: memref<384x512xf8E5M2>,
               %sb: memref<1x1xf32>, %c: memref<256x384xf32>) {
  lowp.scaled_matmul %a[%sa], %b[%sb] into %c layouts(#lowp.per_tensor, #lowp.per_tensor)
      : memref<256x512xf8E4M3FN>[memref<1x1xf32>], memref<384x512xf8E5M2>[memref<1x1xf32>] -> memref<256x384xf32>
  return
}

// -----

// The warp-specialized block's producer warpgroup copies translated codes and block scales
// for 128 + 128 rows only: packed E2M1 with MX scales is refused at 192 columns (the barrier
// pipeline takes it).
// WS: error: lowp.scaled_matmul: no wgmma-specialized kernel for this op on sm_90a: block-n=192: the warp-specialized block's producer warpgroup copies this op's stages (translated codes or block scales) for 128 columns only (kernel=wgmma takes it)
// CHECK-LABEL: func.func @mxfp4
// CHECK:         nvvm.wgmma.mma_async {{.*}}, <m = 64, n = 192, k = 32>
// TMA-LABEL:     func.func @mxfp4
// TMA:           gpu.launch {{.*}} threads({{.*}}) in (%{{.*}} = %c256,
// TMA:             nvvm.wgmma.mma_async {{.*}}, <m = 64, n = 192, k = 32>
func.func @mxfp4(%a: memref<256x256x!lowp.packed<f4E2M1FN>>, %sa: memref<256x16xf8E8M0FNU>,
                 %b: memref<200x256x!lowp.packed<f4E2M1FN>>, %sb: memref<200x16xf8E8M0FNU>,
                 %c: memref<256x200xf32>) {
  lowp.scaled_matmul %a[%sa], %b[%sb] into %c layouts(#lowp.mx<32>, #lowp.mx<32>)
      : memref<256x256x!lowp.packed<f4E2M1FN>>[memref<256x16xf8E8M0FNU>], memref<200x256x!lowp.packed<f4E2M1FN>>[memref<200x16xf8E8M0FNU>] -> memref<256x200xf32>
  return
}
