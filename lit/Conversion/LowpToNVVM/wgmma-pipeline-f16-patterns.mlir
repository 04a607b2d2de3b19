// RUN: lowp-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(lowp-to-nvvm{chip=sm_90a},cse))' 2>%t.remarks | FileCheck %s
// RUN: FileCheck %s --check-prefix=REMARK < %t.remarks
// RUN: not lowp-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(lowp-to-nvvm{chip=sm_90a kernel=wgmma-tma}))' 2>&1 | FileCheck %s --check-prefix=TMA

// Formats no FP8 type holds (E3M4 here, beside E4M3) on the sm_90a cp.async pipeline's f16
// route: each copying thread moves its codes' sign, exponent and mantissa into f16
// patterns, two codes a word (spread to the halves: masks 0xFF / 0xFF00, then the
// magnitude 0x7F007F shifted by 10 - 4 and the signs 0x800080 to bit 15 of each half, for
// E3M4), into the f16 tiles; a stage is 64 codes, four m64n128k16.f32.f16.f16 summing into
// the accumulators themselves (scale-d one), no promotion; the epilogue multiplies by the
// per-channel scales and 2^(12 + 8), which undoes the patterns' biases (E3M4's 3 and
// E4M3's 7 against f16's 15) exactly.
// Numerics: tests/integration/to_nvvm.rs (wgmma_pipeline_f16_patterns_match_the_oracle).
// REMARK: wgmma-pipeline-f16-patterns.mlir:[[#@LINE+17]]:3: remark: f16 wgmma kernel on sm_90a: f8e3m4 embeds in none of f8e4m3, f8e5m2
// CHECK-LABEL: func.func @e3m4
// CHECK:       gpu.launch {{.*}} threads({{.*}}) in (%{{.*}} = %c256, %{{.*}} = %c1, %{{.*}} = %c1) dynamic_shared_memory_size
// CHECK:         nvvm.cp.async.shared.global %{{.*}}, %{{.*}}, 16, cache =  cg
// CHECK:         %{{.*}}:64 = scf.for
// CHECK:           arith.andi %{{.*}}, %c255_i32 : i32
// CHECK:           arith.andi %{{.*}}, %c65280_i32 : i32
// CHECK:           arith.andi %{{.*}}, %c8323199_i32 : i32
// CHECK:           arith.andi %{{.*}}, %c8388736_i32 : i32
// CHECK:           llvm.store %{{.*}}, %{{.*}} {alignment = 16 : i64} : vector<4xi32>, !llvm.ptr<3>
// CHECK:           nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}
// CHECK-COUNT-4:   nvvm.wgmma.mma_async %{{.*}}, %{{.*}}, %{{.*}}, <m = 64, n = 128, k = 16>, D[<f32>, <one>], A[<f16>, <one>, <row>], B[<f16>, <one>, <col>]
// CHECK-NOT:       k = 32
// CHECK:       arith.constant 0x49800000 : f32
// TMA: error: lowp.scaled_matmul: no wgmma-tma kernel for this op on sm_90a: TMA loads the operands used as stored (E4M3 / E5M2); the f16 route translates both
func.func @e3m4(%a: memref<256x128x!lowp.mf<e3m4>>, %sa: memref<256x1xf32>,
                %b: memref<256x128xf8E4M3FN>, %sb: memref<256x1xf32>, %c: memref<256x256xf32>) {
  lowp.scaled_matmul %a[%sa], %b[%sb] into %c layouts(#lowp.per_channel, #lowp.per_channel)
      : memref<256x128x!lowp.mf<e3m4>>[memref<256x1xf32>], memref<256x128xf8E4M3FN>[memref<256x1xf32>] -> memref<256x256xf32>
  return
}

// -----

// MX scales change along K: each 32-block is a segment of its own, two k16 instructions
// on the f16 tiles, the first starting from zero (scale-d zero), their f32 sums promoted
// into the accumulators with the block's E8M0 scales (one fma each of the 32 a thread
// holds in this 64-column block), a segment after the other; mma.sync is not used.
// REMARK: wgmma-pipeline-f16-patterns.mlir:[[#@LINE+14]]:3: remark: f16 wgmma kernel on sm_90a: f8e3m4 embeds in none of f8e4m3, f8e5m2
// CHECK-LABEL: func.func @e3m4_mx
// CHECK-NOT:   nvvm.mma.sync
// CHECK:       %{{.*}}:32 = scf.for
// CHECK:         nvvm.wgmma.fence.aligned
// CHECK:         nvvm.wgmma.mma_async %{{.*}}, %{{.*}}, %{{.*}}, <m = 64, n = 64, k = 16>, D[<f32>, <zero>], A[<f16>, <one>, <row>], B[<f16>, <one>, <col>]
// CHECK:         nvvm.wgmma.mma_async %{{.*}}, %{{.*}}, %{{.*}}, <m = 64, n = 64, k = 16>, D[<f32>, <one>], A[<f16>, <one>, <row>], B[<f16>, <one>, <col>]
// CHECK:         nvvm.wgmma.commit.group.sync.aligned
// CHECK:         "wgmma.wait_group.sync.aligned 0;"
// CHECK-COUNT-32: llvm.intr.fma
// CHECK:         nvvm.wgmma.mma_async %{{.*}}, %{{.*}}, %{{.*}}, <m = 64, n = 64, k = 16>, D[<f32>, <zero>]
// CHECK-NOT:   nvvm.mma.sync
func.func @e3m4_mx(%a: memref<64x128x!lowp.mf<e3m4>>, %sa: memref<64x4xf8E8M0FNU>,
                   %b: memref<64x128x!lowp.mf<e3m4>>, %sb: memref<64x4xf8E8M0FNU>, %c: memref<64x64xf32>) {
  lowp.scaled_matmul %a[%sa], %b[%sb] into %c layouts(#lowp.mx<32>, #lowp.mx<32>)
      : memref<64x128x!lowp.mf<e3m4>>[memref<64x4xf8E8M0FNU>], memref<64x128x!lowp.mf<e3m4>>[memref<64x4xf8E8M0FNU>] -> memref<64x64xf32>
  return
}

// -----

// E5M2 FNUZ (its exponent 31 finite) beside E6M1 (6 exponent bits): f16's exponent field
// holds neither, bf16's both. The copiers move each code's fields into an f32, multiply by
// 2^(127 - bias) (2^111, 2^96: the products of two are normal f32 values) and write the
// high halves, the bf16 patterns (the FNUZ NaN 0x80 as 0x7FC0), into the same tiles; four
// m64n128k16.f32.bf16.bf16 a stage.
// Numerics: tests/integration/to_nvvm.rs (wgmma_pipeline_bf16_patterns_match_the_oracle).
// REMARK: wgmma-pipeline-f16-patterns.mlir:[[#@LINE+11]]:3: remark: bf16 wgmma kernel on sm_90a: f8e5m2fnuz embeds in none of f8e4m3, f8e5m2; for f16: f8e5m2fnuz's fields do not move into f16's: its exponent 31 is finite, f16's infinity and NaN
// CHECK-LABEL: func.func @e5m2fnuz
// CHECK:         %{{.*}}:64 = scf.for
// CHECK:           arith.constant 2.59614843E+33 : f32
// CHECK:           arith.constant 32704 : i32
// CHECK:           llvm.store %{{.*}}, %{{.*}} {alignment = 16 : i64} : vector<4xi32>, !llvm.ptr<3>
// CHECK:           arith.constant 7.92281625E+28 : f32
// CHECK-COUNT-4:   nvvm.wgmma.mma_async %{{.*}}, %{{.*}}, %{{.*}}, <m = 64, n = 128, k = 16>, D[<f32>, <one>], A[<bf16>, <one>, <row>], B[<bf16>, <one>, <col>]
// CHECK-NOT:       k = 32
func.func @e5m2fnuz(%a: memref<256x128xf8E5M2FNUZ>, %sa: memref<256x1xf32>,
                    %b: memref<256x128x!lowp.mf<e6m1>>, %sb: memref<256x1xf32>, %c: memref<256x256xf32>) {
  lowp.scaled_matmul %a[%sa], %b[%sb] into %c layouts(#lowp.per_channel, #lowp.per_channel)
      : memref<256x128xf8E5M2FNUZ>[memref<256x1xf32>], memref<256x128x!lowp.mf<e6m1>>[memref<256x1xf32>] -> memref<256x256xf32>
  return
}
