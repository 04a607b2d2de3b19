// RUN: lowp-opt %s --pass-pipeline='builtin.module(func.func(lowp-to-nvvm{chip=sm_90a},cse))' 2>%t.remarks | FileCheck %s
// RUN: FileCheck %s --check-prefix=REMARK < %t.remarks
// RUN: lowp-opt %s --pass-pipeline='builtin.module(func.func(lowp-to-nvvm{chip=sm_90a emulate=true},cse))' | FileCheck %s --check-prefix=EMU
// RUN: not lowp-opt %s --pass-pipeline='builtin.module(func.func(lowp-to-nvvm{chip=sm_100a kernel=wgmma}))' 2>&1 | FileCheck %s --check-prefix=SM100

// The register-staged sm_90a kernel (ops the cp.async pipeline of wgmma-pipeline.mlir cannot
// take: here rows of 200 bytes are not a multiple of 16; NVFP4's 16-blocks, dynamic K): one
// warpgroup per 64 x 128 tile of C in a gpu.launch with the A and
// B tiles in workgroup memory (K-major, no swizzle: 64 x 32 and 128 x 32 codes as i32
// words). One loop over K carries the accumulators, the partial sums of the segment and the
// next step's 12 words and 2 scale codes per thread: barrier, the words into shared
// memory and the scales decoded into a third buffer (A's 64 rows, B's 128 columns, f32),
// fence.proxy.async (the wgmma reads through the async proxy), barrier, wgmma.fence,
// m64n128k32, commit, the next step's loads while it runs, wait, then at a segment's end
// the partial sums scaled into the accumulators by the 34 scales of the thread's rows and
// columns, read from that buffer. Numerics: tests/integration/to_nvvm.rs (emulate=true,
// against the oracle; the emulation stages the scales the same way).
// CHECK-LABEL: func.func @mxfp8
// CHECK:       gpu.launch blocks(%{{.*}}) in (%{{.*}} = %{{.*}}, %{{.*}} = %{{.*}}, %{{.*}} = %c1) threads(%[[TX:.*]], %{{.*}}, %{{.*}}) in (%{{.*}} = %c128, %{{.*}} = %c1, %{{.*}} = %c1)
// CHECK-SAME:    workgroup(%[[SA:.*]] : memref<512xi32, #gpu.address_space<workgroup>>, %[[SB:.*]] : memref<1024xi32, #gpu.address_space<workgroup>>, %[[SS:.*]] : memref<192xf32, #gpu.address_space<workgroup>>)
// CHECK:         memref.extract_aligned_pointer_as_index %[[SA]]
// CHECK:         vector.load %{{.*}} {alignment = 4 : i64} : memref<128x200xi8>, vector<4xi8>
// CHECK:         memref.load %{{.*}} : memref<128x7xi8>
// CHECK:         memref.load %{{.*}} : memref<64x7xi8>
// CHECK:         %{{.*}}:142 = scf.for %[[K:.*]] = %c0 to %{{.*}} step %c32 iter_args(
// CHECK-NEXT:      gpu.barrier
// CHECK-COUNT-4:   memref.store %{{.*}}, %[[SA]][%{{.*}}] : memref<512xi32, #gpu.address_space<workgroup>>
// CHECK-COUNT-8:   memref.store %{{.*}}, %[[SB]][%{{.*}}] : memref<1024xi32, #gpu.address_space<workgroup>>
// CHECK:           memref.store %{{.*}}, %[[SS]][%{{.*}}] : memref<192xf32, #gpu.address_space<workgroup>>
// CHECK:           memref.store %{{.*}}, %[[SS]][%{{.*}}] : memref<192xf32, #gpu.address_space<workgroup>>
// CHECK-NEXT:      nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}
// CHECK-NEXT:      gpu.barrier
// CHECK-NEXT:      nvvm.wgmma.fence.aligned
// CHECK:           nvvm.wgmma.mma_async %{{.*}}, %{{.*}}, %{{.*}}, <m = 64, n = 128, k = 32>, D[<f32>, <one>], A[<e4m3>, <one>, <row>], B[<e5m2>, <one>, <col>]
// CHECK-NEXT:      nvvm.wgmma.commit.group.sync.aligned
// CHECK:           vector.load %{{.*}} {alignment = 4 : i64} : memref<128x200xi8>, vector<4xi8>
// CHECK:           memref.load %{{.*}} : memref<128x7xi8>
// CHECK:           memref.load %{{.*}} : memref<64x7xi8>
// CHECK:           "wgmma.wait_group.sync.aligned 0;"
// CHECK:           scf.if %{{.*}} -> (f32, f32,
// CHECK-NOT:         memref<128x7xi8>
// CHECK-COUNT-34:    memref.load %[[SS]][%{{.*}}] : memref<192xf32, #gpu.address_space<workgroup>>
// CHECK-NOT:         memref<64x7xi8>
// CHECK:         vector.store %{{.*}}, %arg4[%{{.*}}, %{{.*}}] {alignment = 8 : i64} : memref<128x64xf32>, vector<2xf32>
// CHECK:         } else {
// CHECK:         memref.store %{{.*}}, %arg4[%{{.*}}, %{{.*}}] : memref<128x64xf32>
// CHECK:         gpu.terminator

// EMU-LABEL: func.func @mxfp8
// EMU-NOT:   gpu.launch
// EMU-NOT:   nvvm.wgmma
// EMU:       scf.parallel
// EMU:         memref.alloca() {alignment = 64 : i64} : memref<512xi32>
// EMU:         memref.alloca() {alignment = 64 : i64} : memref<1024xi32>
// EMU:         memref.alloca() {alignment = 64 : i64} : memref<192xf32>
// EMU:         memref.alloca() {alignment = 64 : i64} : memref<8192xf32>
func.func @mxfp8(%a: memref<128x200xf8E4M3FN>, %sa: memref<128x7xf8E8M0FNU>,
                 %b: memref<64x200xf8E5M2>, %sb: memref<64x7xf8E8M0FNU>, %c: memref<128x64xf32>) {
  lowp.scaled_matmul %a[%sa], %b[%sb] into %c layouts(#lowp.mx<32>, #lowp.mx<32>)
      : memref<128x200xf8E4M3FN>[memref<128x7xf8E8M0FNU>], memref<64x200xf8E5M2>[memref<64x7xf8E8M0FNU>] -> memref<128x64xf32>
  return
}

// E6M1 embeds in no FP8 type and its fields only bf16's hold; rows of 200 bytes keep it
// off the pipeline's bf16 route (wgmma-pipeline-f16-patterns.mlir). The same kernel
// writes the bf16 patterns of both operands' codes into the same tiles, two a word (OCP
// E5M2's top exponent set to bf16's by the carry trick: and 0x7C007C, add 0x40004), and
// steps K by 16 with m64n128k16 on bf16; the remark says why no FP8 instruction.
// CHECK-LABEL: func.func @bf16_e6m1
// CHECK:       gpu.launch {{.*}} threads({{.*}}) in (%{{.*}} = %c128, %{{.*}} = %c1, %{{.*}} = %c1)
// CHECK-SAME:    workgroup(%[[SA:.*]] : memref<512xi32, #gpu.address_space<workgroup>>, %[[SB:.*]] : memref<1024xi32, #gpu.address_space<workgroup>>)
// CHECK:         arith.andi %{{.*}}, %c8126588_i32 : i32
// CHECK-NEXT:    arith.constant 262148 : i32
// CHECK:         %{{.*}}:140 = scf.for %{{.*}} = %c0 to %{{.*}} step %c16 iter_args(
// CHECK-NEXT:      gpu.barrier
// CHECK-COUNT-4:   memref.store %{{.*}}, %[[SA]][%{{.*}}] : memref<512xi32, #gpu.address_space<workgroup>>
// CHECK-COUNT-8:   memref.store %{{.*}}, %[[SB]][%{{.*}}] : memref<1024xi32, #gpu.address_space<workgroup>>
// CHECK-NEXT:      nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}
// CHECK-NEXT:      gpu.barrier
// CHECK:           nvvm.wgmma.mma_async %{{.*}}, %{{.*}}, %{{.*}}, <m = 64, n = 128, k = 16>, D[<f32>, <one>], A[<bf16>, <one>, <row>], B[<bf16>, <one>, <col>]
// CHECK-NOT:       k = 32
// CHECK:           "wgmma.wait_group.sync.aligned 0;"
// CHECK:         gpu.terminator
// REMARK: wgmma.mlir:[[#@LINE+3]]:3: remark: bf16 wgmma kernel on sm_90a: f8e6m1 embeds in none of f8e4m3, f8e5m2; for f16: f8e6m1's fields do not move into f16's: its exponent field has 6 bits, f16's 5
func.func @bf16_e6m1(%a: memref<128x200x!lowp.mf<e6m1>>, %sa: memref<128x1xf32>,
                     %b: memref<64x200xf8E5M2>, %sb: memref<64x1xf32>, %c: memref<128x64xf32>) {
  lowp.scaled_matmul %a[%sa], %b[%sb] into %c layouts(#lowp.per_channel, #lowp.per_channel)
      : memref<128x200x!lowp.mf<e6m1>>[memref<128x1xf32>], memref<64x200xf8E5M2>[memref<64x1xf32>] -> memref<128x64xf32>
  return
}

// Blackwell has no wgmma.
// SM100: error: lowp.scaled_matmul: no wgmma kernel for this op on sm_100a: sm_100a has no wgmma (sm_90a only)
func.func @sm100(%a: memref<64x64xf8E4M3FN>, %sa: memref<1x1xf32>, %b: memref<64x64xf8E4M3FN>,
                 %sb: memref<1x1xf32>, %c: memref<64x64xf32>) {
  lowp.scaled_matmul %a[%sa], %b[%sb] into %c layouts(#lowp.per_tensor, #lowp.per_tensor)
      : memref<64x64xf8E4M3FN>[memref<1x1xf32>], memref<64x64xf8E4M3FN>[memref<1x1xf32>] -> memref<64x64xf32>
  return
}
