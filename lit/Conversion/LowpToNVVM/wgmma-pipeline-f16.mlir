// RUN: lowp-opt %s --pass-pipeline='builtin.module(func.func(lowp-to-nvvm{chip=sm_90a kernel=wgmma nvfp4=f16},cse))' | FileCheck %s
// RUN: lowp-opt %s --pass-pipeline='builtin.module(func.func(lowp-to-nvvm{chip=sm_90a kernel=wgmma nvfp4=split},cse))' | FileCheck %s --check-prefix=SPLIT
// RUN: lowp-opt %s --pass-pipeline='builtin.module(func.func(lowp-to-nvvm{chip=sm_90a kernel=wgmma},cse))' | FileCheck %s

// nvfp4=f16: NVFP4's 16-blocks in the sm_90a cp.async pipeline as f16 values. Every product
// of an E2M1 code and a UE4M3 scale is an f16 value (lowp-formats:
// ScaledFormat::scaled_embeds_in_f16), so each copying thread brings, with each 16-byte
// chunk of codes (32 of a row), the 4-byte word of that row's 4 scales of the stage
// (cp.async.ca of 4), translates the codes to E5M2 (an f16's high byte is the E5M2 code
// of the same value: E2M1's images 0x00 0x38 0x3C 0x3E 0x40 0x42 0x44 0x46 are the f16
// values' high bytes), widens each pair to f16x2 by a byte permute (prmt 0x1404 / 0x3424:
// the codes as high bytes, zero low bytes) and multiplies it by its block's scale (the
// UE4M3 pair widened by cvt.rn.f16x2.e4m3x2, one lane per block). A stage is 64 codes (a tile row stays 128 bytes of the swizzle):
// 4 instructions m64n128k16.f32.f16.f16 on descriptors 32 bytes apart (the low word + 2),
// summing into the accumulators themselves (D read: scale-d one; no promotion, no halves);
// the accumulators pass an empty asm before the fence. Shared memory: 5 stages x (2 x 4 KiB
// of codes + 2 x 1 KiB of scale words) + 2 parities x 2 x 16 KiB of f16 tiles + 1 KiB =
// 117760 B. The default (nvfp4=auto) takes the same route here (third RUN line: the same
// checks); nvfp4=split keeps the FP8 instruction per 16-block.
// Numerics: tests/integration/to_nvvm.rs (wgmma_pipeline_f16_route).

// CHECK-LABEL: func.func @nvfp4
// CHECK:       gpu.launch {{.*}} threads({{.*}}) in (%{{.*}} = %c256, %{{.*}} = %c1, %{{.*}} = %c1) dynamic_shared_memory_size %c117760_i32 {
// CHECK:         scf.for %{{.*}} = %c0 to %c3 step %c1 {
// CHECK:           nvvm.cp.async.shared.global %{{.*}}, %{{.*}}, 16, cache =  cg
// CHECK:           nvvm.cp.async.shared.global %{{.*}}, %{{.*}}, 4, cache =  ca
// CHECK:           nvvm.cp.async.shared.global %{{.*}}, %{{.*}}, 16, cache =  cg
// CHECK:           nvvm.cp.async.shared.global %{{.*}}, %{{.*}}, 4, cache =  ca
// CHECK:         nvvm.cp.async.commit.group
// CHECK:         %{{.*}}:64 = scf.for
// CHECK:           nvvm.cp.async.wait.group 2
// The chunk's two block scales; the E5M2 table (its sign-symmetric half: 0x3E3C3800,
// 0x46444240); each pair of codes as f16 times its block's scale.
// CHECK:           %[[SCALES:.*]] = nvvm.convert.f8x2.to.f16x2 %{{.*}} : vector<2xi8>(f8E4M3FN) -> vector<2xf16>
// (The table's low word, which prmt takes from a vector register, held in one: or-ed with
// a zero ptxas cannot see, Permute::held.)
// CHECK:           %[[LO:.*]] = llvm.inline_asm asm_dialect = att "{ .reg .u32 t, l; mov.u32 t, %dynamic_smem_size; shr.u32 t, t, 24; mov.u32 l, %laneid; mul.lo.u32 t, t, l; or.b32 $0, $1, t; }", "=r,r" %c1044133888_i32 : (i32) -> i32
// CHECK:           nvvm.prmt <default> %{{.*}}, %[[LO]], %c1178878528_i32 : i32
// CHECK:           %[[FIRST:.*]] = vector.shuffle %[[SCALES]], %[[SCALES]] [0, 0] : vector<2xf16>, vector<2xf16>
// CHECK:           %[[LOW:.*]] = nvvm.prmt <default> %c5124_i32, %{{.*}}, %c0_i32 : i32
// CHECK-NEXT:      %[[PAIR:.*]] = llvm.bitcast %[[LOW]] : i32 to vector<2xf16>
// CHECK-NEXT:      %[[PRODUCT:.*]] = arith.mulf %[[PAIR]], %[[FIRST]] : vector<2xf16>
// CHECK-NEXT:      llvm.bitcast %[[PRODUCT]] : vector<2xf16> to i32
// CHECK:           nvvm.prmt <default> %c13348_i32, %{{.*}}, %c0_i32 : i32
// CHECK:           llvm.store %{{.*}}, %{{.*}} {alignment = 16 : i64} : vector<4xi32>, !llvm.ptr<3>
// CHECK:           %[[SECOND:.*]] = vector.shuffle %[[SCALES]], %[[SCALES]] [1, 1] : vector<2xf16>, vector<2xf16>
// CHECK:           arith.mulf %{{.*}}, %[[SECOND]] : vector<2xf16>
// CHECK:           nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}
// CHECK-NEXT:      gpu.barrier
// CHECK:           llvm.inline_asm has_side_effects asm_dialect = att "", "=f,
// CHECK:           nvvm.wgmma.fence.aligned
// CHECK:           %[[D0:.*]] = nvvm.wgmma.mma_async %{{.*}}, %{{.*}}, %{{.*}}, <m = 64, n = 128, k = 16>, D[<f32>, <one>], A[<f16>, <one>, <row>], B[<f16>, <one>, <col>]
// The next 16 codes: both descriptors' low words + 32 >> 4.
// CHECK-NEXT:      arith.addi %{{.*}}, %c2_i32 : i32
// CHECK:           %[[D1:.*]] = nvvm.wgmma.mma_async %{{.*}}, %{{.*}}, %[[D0]], <m = 64, n = 128, k = 16>, D[<f32>, <one>]
// CHECK:           %[[D2:.*]] = nvvm.wgmma.mma_async %{{.*}}, %{{.*}}, %[[D1]], <m = 64, n = 128, k = 16>, D[<f32>, <one>]
// CHECK:           nvvm.wgmma.mma_async %{{.*}}, %{{.*}}, %[[D2]], <m = 64, n = 128, k = 16>, D[<f32>, <one>]
// CHECK-NEXT:      nvvm.wgmma.commit.group.sync.aligned
// CHECK-NOT:       llvm.intr.fma
// CHECK:           "wgmma.wait_group.sync.aligned 0;"
// CHECK-NOT:       llvm.intr.fma
// CHECK-NOT:       nvvm.wgmma.mma_async
// CHECK:           scf.yield
// CHECK-NOT:       nvvm.wgmma.mma_async
// CHECK:         gpu.terminator

// SPLIT-LABEL: func.func @nvfp4
// SPLIT-NOT:   k = 16>
// SPLIT:       <m = 64, n = 128, k = 32>, D[<f32>, <zero>], A[<e4m3>, <one>, <row>], B[<e4m3>, <one>, <col>]
func.func @nvfp4(%a: memref<256x128x!lowp.packed<f4E2M1FN>>, %sa: memref<256x16xf8E4M3FN>,
                 %b: memref<128x128x!lowp.packed<f4E2M1FN>>, %sb: memref<128x16xf8E4M3FN>,
                 %c: memref<256x128xf32>) {
  lowp.scaled_matmul %a[%sa], %b[%sb] into %c layouts(#lowp.nvfp4<16>, #lowp.nvfp4<16>)
      : memref<256x128x!lowp.packed<f4E2M1FN>>[memref<256x16xf8E4M3FN>], memref<128x128x!lowp.packed<f4E2M1FN>>[memref<128x16xf8E4M3FN>] -> memref<256x128xf32>
  return
}

// K = 224 is not whole stages of 64 (a row's scale word of the last stage would not be
// aligned): the op keeps the split route.
// CHECK-LABEL: func.func @ragged_k
// CHECK-NOT:   k = 16>
// CHECK:       <m = 64, n = 128, k = 32>, D[<f32>, <zero>], A[<e4m3>, <one>, <row>], B[<e4m3>, <one>, <col>]
// CHECK-NOT:   k = 16>
// CHECK:       return
func.func @ragged_k(%a: memref<256x112x!lowp.packed<f4E2M1FN>>, %sa: memref<256x14xf8E4M3FN>,
                    %b: memref<128x112x!lowp.packed<f4E2M1FN>>, %sb: memref<128x14xf8E4M3FN>,
                    %c: memref<256x128xf32>) {
  lowp.scaled_matmul %a[%sa], %b[%sb] into %c layouts(#lowp.nvfp4<16>, #lowp.nvfp4<16>)
      : memref<256x112x!lowp.packed<f4E2M1FN>>[memref<256x14xf8E4M3FN>], memref<128x112x!lowp.packed<f4E2M1FN>>[memref<128x14xf8E4M3FN>] -> memref<256x128xf32>
  return
}

// FP8 beside NVFP4 (E4M3 A per tensor, NVFP4 B): A's codes reach the f16 tiles as stored,
// a pair per cvt.rn.f16x2.e4m3x2 (every E4M3 value is an f16 one) and no block scale, so
// no scale word is copied with A's chunks; A's scale is applied in the epilogue. Shared
// memory: 5 stages x (8 KiB of A + 4 KiB of B + 1 KiB of B's scale words) + 2 parities x
// 2 x 16 KiB + 1 KiB = 133120 B. The default keeps the split route (B split, A as stored).
// CHECK-LABEL: func.func @w4a8
// CHECK:       dynamic_shared_memory_size %c133120_i32 {
// CHECK:         scf.for %{{.*}} = %c0 to %c3 step %c1 {
// CHECK-COUNT-3:   nvvm.cp.async.shared.global %{{.*}}, %{{.*}}, 16, cache =  cg
// CHECK-NOT:       nvvm.cp.async.commit.group
// CHECK:           nvvm.cp.async.shared.global %{{.*}}, %{{.*}}, 4, cache =  ca
// CHECK-NEXT:    }
// CHECK-NEXT:    nvvm.cp.async.commit.group
// CHECK:         %{{.*}}:64 = scf.for
// CHECK:           nvvm.cp.async.wait.group 2
// CHECK:           %[[PAIR:.*]] = nvvm.convert.f8x2.to.f16x2 %{{.*}} : vector<2xi8>(f8E4M3FN) -> vector<2xf16>
// CHECK-NEXT:      llvm.bitcast %[[PAIR]] : vector<2xf16> to i32
// CHECK-COUNT-7:   nvvm.convert.f8x2.to.f16x2
// CHECK-NOT:       arith.mulf
// CHECK:           llvm.store %{{.*}}, %{{.*}} {alignment = 16 : i64} : vector<4xi32>, !llvm.ptr<3>
// CHECK:           nvvm.wgmma.mma_async %{{.*}}, %{{.*}}, %{{.*}}, <m = 64, n = 128, k = 16>, D[<f32>, <one>], A[<f16>, <one>, <row>], B[<f16>, <one>, <col>]
// CHECK:         nvvm.cp.async.wait.group 0
// CHECK-NEXT:    %[[SA:.*]] = memref.load %{{.*}}[%c0, %c0] : memref<1x1xf32>
// CHECK:         arith.mulf %{{.*}}, %[[SA]] : f32
// CHECK:         gpu.terminator

// SPLIT-LABEL: func.func @w4a8
// SPLIT-NOT:   k = 16>
// SPLIT:       <m = 64, n = 128, k = 32>, D[<f32>, <zero>], A[<e4m3>, <one>, <row>], B[<e4m3>, <one>, <col>]
func.func @w4a8(%a: memref<256x128xf8E4M3FN>, %sa: memref<1x1xf32>,
                %b: memref<128x64x!lowp.packed<f4E2M1FN>>, %sb: memref<128x8xf8E4M3FN>,
                %c: memref<256x128xf32>) {
  lowp.scaled_matmul %a[%sa], %b[%sb] into %c layouts(#lowp.per_tensor, #lowp.nvfp4<16>)
      : memref<256x128xf8E4M3FN>[memref<1x1xf32>], memref<128x64x!lowp.packed<f4E2M1FN>>[memref<128x8xf8E4M3FN>] -> memref<256x128xf32>
  return
}
