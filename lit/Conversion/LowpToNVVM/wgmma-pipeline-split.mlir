// RUN: lowp-opt %s --pass-pipeline='builtin.module(func.func(lowp-to-nvvm{chip=sm_90a nvfp4=split},cse))' | FileCheck %s
// RUN: not lowp-opt %s --pass-pipeline='builtin.module(func.func(lowp-to-nvvm{chip=sm_90a kernel=wgmma-specialized nvfp4=split}))' 2>&1 | FileCheck %s --check-prefix=WS

// nvfp4=split (the default, auto, takes these ops on the f16 route: wgmma-pipeline-f16.mlir):
// NVFP4's 16-blocks in the sm_90a cp.async pipeline: a K segment per 16-block, one
// m64n128k32 each, promoted with its UE4M3 scales. The first translated operand (A) has its
// translated tiles split in two halves of 16 KiB: half h holds the 16-code chunks at h of
// every 32 (the translation stores chunk c into half c % 2) and zeros in the other chunks,
// cleared once before the prologue (2 parities x 2 halves x 128 rows x 4 chunks, every
// 256th by each thread). The instruction of the block at 32 j + 16 h reads A's half h from
// byte 32 j and B's tile from byte 32 j, so it sums that block alone. The UE4M3 scales
// travel with the stages (8 bytes a row: cp.async.ca of 8) and are decoded once per block,
// and the ring keeps 5 stages (copies three stages ahead: cp.async.wait_group 2): 5 x (16
// KiB of codes + 2 KiB of scales) + A's 2 x 32 KiB + B's 2 x 16 KiB + 2 x 8 KiB of decoded
// scales + 1 KiB = 207872 B.
// Numerics: tests/integration/to_nvvm.rs (wgmma_pipeline_splits_16_blocks).

// CHECK-LABEL: func.func @nvfp4
// CHECK:       gpu.launch {{.*}} threads({{.*}}) in (%{{.*}} = %c256, %{{.*}} = %c1, %{{.*}} = %c1) dynamic_shared_memory_size %c207872_i32 {
// CHECK:         %[[CHUNKS:.*]] = arith.constant 2048 : index
// CHECK:         scf.for %{{.*}} = %{{.*}} to %[[CHUNKS]] step %c256 {
// CHECK:           %[[ZEROS:.*]] = vector.from_elements %c0_i32, %c0_i32, %c0_i32, %c0_i32 : vector<4xi32>
// CHECK-NEXT:      llvm.store %[[ZEROS]], %{{.*}} {alignment = 16 : i64} : vector<4xi32>, !llvm.ptr<3>
// CHECK:         scf.for %{{.*}} = %c0 to %c3 step %c1 {
// CHECK-COUNT-2:     nvvm.cp.async.shared.global %{{.*}}, %{{.*}}, 8, cache =  ca, %c8_i32
// One register set of results (block scales): each segment waited for at once.
// CHECK:         %{{.*}}:64 = scf.for
// CHECK:           nvvm.cp.async.wait.group 2
// The block at 0: A's half 0 and B from byte 0.
// CHECK:           nvvm.wgmma.fence.aligned
// CHECK:           nvvm.wgmma.mma_async %{{.*}}, %[[B0:.*]], %{{.*}}, <m = 64, n = 128, k = 32>, D[<f32>, <zero>], A[<e4m3>, <one>, <row>], B[<e4m3>, <one>, <col>]
// CHECK-NEXT:      nvvm.wgmma.commit.group.sync.aligned
// CHECK:           "wgmma.wait_group.sync.aligned 0;"
// The block at 16: A's half 1 (16384 bytes on: its descriptor's low word plus 16384 >> 4)
// and the same B descriptor.
// CHECK:           nvvm.wgmma.fence.aligned
// CHECK-NEXT:      %c1024_i32 = arith.constant 1024 : i32
// CHECK-NEXT:      %{{.*}} = arith.addi %{{.*}}, %c1024_i32 : i32
// CHECK:           nvvm.wgmma.mma_async %{{.*}}, %[[B0]], %{{.*}}, <m = 64, n = 128, k = 32>, D[<f32>, <zero>]
// CHECK-NEXT:      nvvm.wgmma.commit.group.sync.aligned
// CHECK:           "wgmma.wait_group.sync.aligned 0;"
// The block at 48 (after the one at 32): half 1 from byte 32.
// CHECK:           %c1026_i32 = arith.constant 1026 : i32
// CHECK-NEXT:      arith.addi %{{.*}}, %c1026_i32 : i32
// CHECK:           nvvm.wgmma.mma_async
// 8 instructions in the loop's stage (one stage per iteration: A is translated), then none.
// CHECK-COUNT-4:  nvvm.wgmma.mma_async %{{.*}}, %{{.*}}, %{{.*}}, <m = 64, n = 128, k = 32>, D[<f32>, <zero>]
// CHECK:           scf.yield
// CHECK-NOT:       nvvm.wgmma.mma_async
// CHECK-NOT:       "wgmma.wait_group
// CHECK:         gpu.terminator
func.func @nvfp4(%a: memref<256x256x!lowp.packed<f4E2M1FN>>, %sa: memref<256x32xf8E4M3FN>,
                 %b: memref<128x256x!lowp.packed<f4E2M1FN>>, %sb: memref<128x32xf8E4M3FN>,
                 %c: memref<256x128xf32>) {
  lowp.scaled_matmul %a[%sa], %b[%sb] into %c layouts(#lowp.nvfp4<16>, #lowp.nvfp4<16>)
      : memref<256x256x!lowp.packed<f4E2M1FN>>[memref<256x32xf8E4M3FN>], memref<128x256x!lowp.packed<f4E2M1FN>>[memref<128x32xf8E4M3FN>] -> memref<256x128xf32>
  return
}

// 16-blocks on two operands used as stored (MXFP8 with 16-element blocks): nothing to split,
// so `auto` takes the register-staged kernel (workgroup buffers, no dynamic shared memory)
// and asking for a pipeline kernel is a located error that says why.
// CHECK-LABEL: func.func @mx16_fp8
// CHECK:       gpu.launch {{.*}} threads({{.*}}) in (%{{.*}} = %c128, %{{.*}} = %c1, %{{.*}} = %c1) workgroup(
// CHECK-NOT:   dynamic_shared_memory_size
// WS: wgmma-pipeline-split.mlir:[[#@LINE+3]]:3: error: lowp.scaled_matmul: no wgmma-specialized kernel for this op on sm_90a: the scales change every 16 along K and neither operand is translated
func.func @mx16_fp8(%a: memref<128x256xf8E4M3FN>, %sa: memref<128x16xf8E8M0FNU>, %b: memref<128x256xf8E4M3FN>,
                    %sb: memref<128x16xf8E8M0FNU>, %c: memref<128x128xf32>) {
  lowp.scaled_matmul %a[%sa], %b[%sb] into %c layouts(#lowp.mx<16>, #lowp.mx<16>)
      : memref<128x256xf8E4M3FN>[memref<128x16xf8E8M0FNU>], memref<128x256xf8E4M3FN>[memref<128x16xf8E8M0FNU>] -> memref<128x128xf32>
  return
}
