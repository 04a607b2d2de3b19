// RUN: lowp-opt %s --pass-pipeline='builtin.module(func.func(lowp-to-nvvm{chip=sm_89},cse))' | FileCheck %s
// RUN: lowp-opt %s --pass-pipeline='builtin.module(func.func(lowp-to-nvvm{chip=sm_89 emulate=true},cse))' | FileCheck %s --check-prefix=EMU
// RUN: lowp-opt %s --pass-pipeline='builtin.module(func.func(lowp-to-nvvm{chip=sm_90a kernel=generic},cse))' | FileCheck %s --check-prefix=GEN

// The FP8 mma.sync kernel: a block loop over 64 x 64 tiles of C and a loop of 128 threads
// (4 warps of 2 x 4 m16n8k32 tiles), K segments of one scale block (32 here) around K
// steps of 32, fragments loaded as aligned 32-bit words, one intrinsic call per tile.
// Numerics: tests/integration/to_nvvm.rs (emulate=true, against the oracle).
// CHECK-LABEL: func.func @mxfp8
// CHECK-DAG:   %[[A:.*]] = lowp.storage_cast %arg0 : memref<128x256xf8E4M3FN> to memref<128x256xi8>
// CHECK-DAG:   %[[B:.*]] = lowp.storage_cast %arg2 : memref<64x256xf8E5M2> to memref<64x256xi8>
// CHECK:       scf.parallel (%{{.*}}, %{{.*}}) = (%c0, %c0) to (%{{.*}}, %{{.*}}) step (%c1, %c1) {
// CHECK:         scf.parallel (%[[TID:.*]]) = (%c0) to (%c128) step (%c1) {
// CHECK:           %{{.*}}:32 = scf.for %{{.*}} = %c0 to %{{.*}} step %c1 iter_args({{.*}}) -> (f32, f32,
// CHECK:             %{{.*}}:32 = scf.for %{{.*}} = %{{.*}} to %{{.*}} step %c32 iter_args({{.*}}) -> (f32, f32,
// One branch per K step: the step inside K and both operands' rows 4-byte aligned (base +
// offset and row stride, read from the memrefs' metadata; columns contiguous) load all 16
// registers as words, else code by code.
// CHECK:               memref.extract_strided_metadata %[[A]]
// CHECK:               memref.extract_strided_metadata %[[B]]
// CHECK:               %{{.*}}:16 = scf.if %{{.*}} -> (i32, i32, i32, i32, i32, i32, i32, i32, i32, i32, i32, i32, i32, i32, i32, i32) {
// CHECK:                 vector.load %[[A]][%{{.*}}, %{{.*}}] {alignment = 4 : i64} : memref<128x256xi8>, vector<4xi8>
// CHECK-NEXT:            vector.bitcast %{{.*}} : vector<4xi8> to vector<1xi32>
// CHECK:                 vector.load %[[B]][%{{.*}}, %{{.*}}] {alignment = 4 : i64} : memref<64x256xi8>, vector<4xi8>
// CHECK:               } else {
// CHECK:                 memref.load %[[A]]
// CHECK-COUNT-8:       llvm.call_intrinsic "llvm.nvvm.mma.m16n8k32.row.col.f32.e4m3.e5m2.f32"({{.*}}) : (i32, i32, i32, i32, i32, i32, f32, f32, f32, f32) -> !llvm.struct<(f32, f32, f32, f32)>
// CHECK:               scf.yield
// The block scales of the segment, once per row and column of the lane, times the partial sums.
// CHECK:             memref.load %{{.*}} : memref<128x8xi8>
// CHECK:             memref.load %{{.*}} : memref<64x8xi8>
// CHECK:             arith.mulf
// CHECK:             scf.yield
// CHECK:           scf.if
// CHECK:             vector.store %{{.*}}, %arg4[%{{.*}}, %{{.*}}] {alignment = 8 : i64} : memref<128x64xf32>, vector<2xf32>
// CHECK:           } else {
// CHECK:             memref.store %{{.*}}, %arg4[%{{.*}}, %{{.*}}] : memref<128x64xf32>
// CHECK:           scf.reduce
// CHECK:         scf.reduce

// The emulation keeps the lanes' registers in memory and computes each instruction with
// loops; no intrinsic is left.
// EMU-LABEL: func.func @mxfp8
// EMU-SAME:  attributes {lowp.emulated}
// EMU-NOT:   llvm.call_intrinsic
// EMU:       memref.alloca() {alignment = 64 : i64} : memref<1024xf32>
// EMU:       memref.alloca() {alignment = 64 : i64} : memref<256xi32>
// EMU:       scf.for %{{.*}} = %c0 to %c4 step %c1 {
// EMU-NOT:   llvm.call_intrinsic

// GEN-LABEL: func.func @mxfp8
// GEN-NOT:   llvm.call_intrinsic
// GEN:       gpu.launch blocks(%{{.*}}) in (%{{.*}} = %{{.*}}, %{{.*}} = %{{.*}}, %{{.*}} = %c1) threads(%{{.*}}) in (%{{.*}} = %c16, %{{.*}} = %c16, %{{.*}} = %c1)
// GEN:         gpu.barrier
func.func @mxfp8(%a: memref<128x256xf8E4M3FN>, %sa: memref<128x8xf8E8M0FNU>,
                 %b: memref<64x256xf8E5M2>, %sb: memref<64x8xf8E8M0FNU>, %c: memref<128x64xf32>) {
  lowp.scaled_matmul %a[%sa], %b[%sb] into %c layouts(#lowp.mx<32>, #lowp.mx<32>)
      : memref<128x256xf8E4M3FN>[memref<128x8xf8E8M0FNU>], memref<64x256xf8E5M2>[memref<64x8xf8E8M0FNU>] -> memref<128x64xf32>
  return
}

// NVFP4 (packed E2M1, blocks of 16, globals): codes translated to E4M3 through the
// embedding table (two 64-bit words for 16 codes), K steps of 16 with the upper half of the
// fragments zero, the globals in the epilogue, a bf16 result.
// CHECK-LABEL: func.func @nvfp4
// CHECK:         scf.parallel (%{{.*}}) = (%c0) to (%c128) step (%c1) {
// CHECK:           scf.for %{{.*}} step %c16 iter_args(
// E2M1 codes 0..7 as E4M3 codes, low byte first: 0x4C4844403C383000.
// CHECK:             arith.constant 5496718387884601344 : i64
// CHECK:             arith.select %{{.*}}, %{{.*}}, %{{.*}} : i64
// CHECK-COUNT-8:     llvm.call_intrinsic "llvm.nvvm.mma.m16n8k32.row.col.f32.e4m3.e4m3.f32"
// CHECK:           memref.load %arg4[] : memref<f32>
// CHECK:           memref.load %arg5[] : memref<f32>
// CHECK:           arith.truncf %{{.*}} : f32 to bf16
func.func @nvfp4(%a: memref<32x32x!lowp.packed<f4E2M1FN>>, %sa: memref<32x4xf8E4M3FN>,
                 %b: memref<16x32x!lowp.packed<f4E2M1FN>>, %sb: memref<16x4xf8E4M3FN>,
                 %ga: memref<f32>, %gb: memref<f32>, %c: memref<32x16xbf16>) {
  lowp.scaled_matmul %a[%sa, %ga], %b[%sb, %gb] into %c
      layouts(#lowp.nvfp4<16, global>, #lowp.nvfp4<16, global>)
      : memref<32x32x!lowp.packed<f4E2M1FN>>[memref<32x4xf8E4M3FN>, memref<f32>],
        memref<16x32x!lowp.packed<f4E2M1FN>>[memref<16x4xf8E4M3FN>, memref<f32>] -> memref<32x16xbf16>
  return
}

// FP6 (E2M3, one code per byte) x packed E2M1 into E4M3: a K step's registers loaded as
// words (A's 4 bytes, each masked to its code's 6 bits, B's 2 packed bytes), then
// translated four codes at a time: FP6 by word arithmetic (3 prmt: the corrections of
// codes 0-1 and 2-3, put in order), E2M1 by three prmt over the 16 images.
// CHECK-LABEL: func.func @fp6_fp4
// CHECK-DAG:   %[[A:.*]] = lowp.storage_cast %arg0 : memref<64x128xf6E2M3FN> to memref<64x128xi8>
// CHECK-DAG:   %[[B:.*]] = lowp.storage_cast %arg2 : memref<64x64x!lowp.packed<f4E2M1FN>> to memref<64x64xi8>
// CHECK:       %{{.*}}:16 = scf.if %{{.*}} -> (i32, i32, i32, i32, i32, i32, i32, i32, i32, i32, i32, i32, i32, i32, i32, i32) {
// CHECK:         vector.load %[[A]][%{{.*}}, %{{.*}}] {alignment = 4 : i64} : memref<64x128xi8>, vector<4xi8>
// CHECK-NEXT:    vector.bitcast %{{.*}} : vector<4xi8> to vector<1xi32>
// CHECK-NEXT:    vector.extract %{{.*}}[0] : i32 from vector<1xi32>
// CHECK:         arith.andi %{{.*}}, %c1061109567_i32 : i32
// CHECK:         vector.load %[[B]][%{{.*}}, %{{.*}}] {alignment = 2 : i64} : memref<64x64xi8>, vector<2xi8>
// CHECK-NEXT:    vector.bitcast %{{.*}} : vector<2xi8> to vector<1xi16>
// CHECK-NOT:     arith.select
// CHECK:         nvvm.prmt <default>
// CHECK-NOT:     arith.select
// CHECK:       } else {
// CHECK:         arith.select
// CHECK:       }
// CHECK-COUNT-8: llvm.call_intrinsic "llvm.nvvm.mma.m16n8k32.row.col.f32.e4m3.e4m3.f32"

// The emulation translates the same way, its byte permutes by shifts.
// EMU-LABEL: func.func @fp6_fp4
// EMU-NOT:   nvvm.prmt
// EMU:       vector.load %{{.*}} {alignment = 4 : i64} : memref<64x128xi8>, vector<4xi8>
// EMU-NOT:   nvvm.prmt
// EMU:       return
func.func @fp6_fp4(%a: memref<64x128xf6E2M3FN>, %sa: memref<64x4xf8E8M0FNU>,
                   %b: memref<64x64x!lowp.packed<f4E2M1FN>>, %sb: memref<64x4xf8E8M0FNU>,
                   %c: memref<64x64xf32>) {
  lowp.scaled_matmul %a[%sa], %b[%sb] into %c layouts(#lowp.mx<32>, #lowp.mx<32>)
      : memref<64x128xf6E2M3FN>[memref<64x4xf8E8M0FNU>],
        memref<64x64x!lowp.packed<f4E2M1FN>>[memref<64x4xf8E8M0FNU>] -> memref<64x64xf32>
  return
}

// E3M4 embeds in no FP8 type, but its fields move into f16's: the f16 form,
// m16n8k16.f32.f16.f16 (K steps of 16; 2 codes a register). A step's registers are loaded
// as A's 2-byte pairs and B's packed bytes, each pair spread to the two halves of an i32
// and moved into f16 patterns (magnitude masks 0x7F007F / 0x70007, the signs to bit 15 of
// each half); the epilogue multiplies by 2^(12 + 14) (E3M4's bias 3 and E2M1's 1 against
// f16's 15), exactly.
// CHECK-LABEL: func.func @f16_e3m4
// CHECK-DAG:   %[[A:.*]] = lowp.storage_cast %arg0 : memref<64x128x!lowp.mf<e3m4>> to memref<64x128xi8>
// CHECK-DAG:   %[[B:.*]] = lowp.storage_cast %arg2 : memref<64x64x!lowp.packed<f4E2M1FN>> to memref<64x64xi8>
// CHECK:       scf.for %{{.*}} step %c16 iter_args(
// CHECK:         %{{.*}}:16 = scf.if %{{.*}} -> (i32, i32, i32, i32, i32, i32, i32, i32, i32, i32, i32, i32, i32, i32, i32, i32) {
// CHECK:           vector.load %[[A]][%{{.*}}, %{{.*}}] {alignment = 2 : i64} : memref<64x128xi8>, vector<2xi8>
// CHECK-NEXT:      vector.bitcast %{{.*}} : vector<2xi8> to vector<1xi16>
// CHECK:           memref.load %[[B]][%{{.*}}, %{{.*}}] : memref<64x64xi8>
// CHECK:           arith.andi %{{.*}}, %c8323199_i32 : i32
// CHECK:           arith.andi %{{.*}}, %c458759_i32 : i32
// CHECK:         } else {
// CHECK:         }
// CHECK:         llvm.bitcast %{{.*}} : i32 to vector<2xf16>
// CHECK-COUNT-8: nvvm.mma.sync A[%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}]  B[%{{.*}}, %{{.*}}]  C[%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}]  {layoutA = #nvvm.mma_layout<row>, layoutB = #nvvm.mma_layout<col>, shape = #nvvm.shape<m = 16, n = 8, k = 16>} : (vector<2xf16>, vector<2xf16>, f32) -> !llvm.struct<(f32, f32, f32, f32)>
// CHECK-NOT:   llvm.call_intrinsic
// CHECK:       arith.constant 0x4C800000 : f32

// The emulation reads the registers' halves back as f16 values (times 2^-112 as f32 bits,
// then 2^112).
// EMU-LABEL: func.func @f16_e3m4
// EMU-NOT:   nvvm.mma.sync
// EMU:       arith.constant 5.19229686E+33 : f32
// EMU:       return
func.func @f16_e3m4(%a: memref<64x128x!lowp.mf<e3m4>>, %sa: memref<64x4xf8E8M0FNU>,
                    %b: memref<64x64x!lowp.packed<f4E2M1FN>>, %sb: memref<64x4xf8E8M0FNU>,
                    %c: memref<64x64xf32>) {
  lowp.scaled_matmul %a[%sa], %b[%sb] into %c layouts(#lowp.mx<32>, #lowp.mx<32>)
      : memref<64x128x!lowp.mf<e3m4>>[memref<64x4xf8E8M0FNU>],
        memref<64x64x!lowp.packed<f4E2M1FN>>[memref<64x4xf8E8M0FNU>] -> memref<64x64xf32>
  return
}

// E5M2 FNUZ (its exponent 31 finite) and E6M1 (6 exponent bits): f16's exponent field
// holds neither, bf16's both: the bf16 form, m16n8k16.f32.bf16.bf16 on i32 registers. Each
// code's fields move into an f32 (magnitude 0x7F / 0x7F0000 of a pair, sign 0x80 / 0x800000
// to bit 31), one multiply by 2^(127 - bias) (2^111, 2^96) makes the products of two normal
// f32 values, and the high halves are the bf16 patterns; the FNUZ NaN 0x80 gets 0x7FC0.
// CHECK-LABEL: func.func @bf16_e5m2fnuz
// CHECK:       scf.for %{{.*}} step %c16 iter_args(
// CHECK:         arith.andi %{{.*}}, %c127_i32 : i32
// CHECK:         arith.andi %{{.*}}, %c128_i32 : i32
// CHECK:         arith.andi %{{.*}}, %c8323072_i32 : i32
// CHECK:         arith.andi %{{.*}}, %c8388608_i32 : i32
// CHECK:         %[[U:.*]] = arith.constant 2.59614843E+33 : f32
// CHECK:         arith.mulf %{{.*}}, %[[U]] : f32
// CHECK:         arith.mulf %{{.*}}, %[[U]] : f32
// CHECK:         arith.constant 32704 : i32
// CHECK:         arith.constant 7.92281625E+28 : f32
// CHECK-COUNT-8: nvvm.mma.sync A[%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}]  B[%{{.*}}, %{{.*}}]  C[%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}]  {layoutA = #nvvm.mma_layout<row>, layoutB = #nvvm.mma_layout<col>, multiplicandAPtxType = #nvvm.mma_type<bf16>, multiplicandBPtxType = #nvvm.mma_type<bf16>, shape = #nvvm.shape<m = 16, n = 8, k = 16>} : (i32, i32, f32) -> !llvm.struct<(f32, f32, f32, f32)>
// CHECK-NOT:   llvm.call_intrinsic

// The emulation reads the registers' halves back as bf16 values (shifted to an f32's high
// half).
// EMU-LABEL: func.func @bf16_e5m2fnuz
// EMU-NOT:   nvvm.mma.sync
// EMU:       arith.shli %{{.*}}, %c16_i32 : i32
// EMU:       return
func.func @bf16_e5m2fnuz(%a: memref<64x128xf8E5M2FNUZ>, %sa: memref<64x1xf32>,
                         %b: memref<64x128x!lowp.mf<e6m1>>, %sb: memref<64x1xf32>,
                         %c: memref<64x64xf32>) {
  lowp.scaled_matmul %a[%sa], %b[%sb] into %c layouts(#lowp.per_channel, #lowp.per_channel)
      : memref<64x128xf8E5M2FNUZ>[memref<64x1xf32>],
        memref<64x128x!lowp.mf<e6m1>>[memref<64x1xf32>] -> memref<64x64xf32>
  return
}

// E5M2 beside E6M1: bf16's fields hold both, but the move leaves E5M2's exponent 31
// finite (2^16 and up). The top-exponent rule sets bf16's exponent field there: the pair's
// exponent fields (0x7C007C) plus their lowest bits (0x40004) carry into bit 7 / 23
// (0x800080) exactly where all ones, and that bit times 255 is 0x7F80 in its half: E5M2's
// infinities stay infinities, its NaN codes NaN (their mantissa moves along).
// CHECK-LABEL: func.func @bf16_e5m2_infinities
// CHECK:       scf.for %{{.*}} step %c16 iter_args(
// CHECK:         %[[FIELDS:.*]] = arith.andi %{{.*}}, %c8126588_i32 : i32
// CHECK:         %[[CARRY:.*]] = arith.addi %[[FIELDS]], %c262148_i32 : i32
// CHECK:         %[[TOP:.*]] = arith.andi %[[CARRY]], %c8388736_i32 : i32
// CHECK:         %[[EXP:.*]] = arith.muli %[[TOP]], %c255_i32 : i32
// CHECK:         arith.ori %{{.*}}, %[[EXP]] : i32
// CHECK-NOT:     arith.constant 32704 : i32
// CHECK:       nvvm.mma.sync {{.*}}multiplicandAPtxType = #nvvm.mma_type<bf16>, multiplicandBPtxType = #nvvm.mma_type<bf16>
func.func @bf16_e5m2_infinities(%a: memref<64x128x!lowp.mf<e6m1>>, %sa: memref<1x1xf32>,
                                %b: memref<64x128xf8E5M2>, %sb: memref<1x1xf32>,
                                %c: memref<64x64xf32>) {
  lowp.scaled_matmul %a[%sa], %b[%sb] into %c layouts(#lowp.per_tensor, #lowp.per_tensor)
      : memref<64x128x!lowp.mf<e6m1>>[memref<1x1xf32>],
        memref<64x128xf8E5M2>[memref<1x1xf32>] -> memref<64x64xf32>
  return
}
