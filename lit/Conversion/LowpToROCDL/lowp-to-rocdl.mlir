// RUN: lowp-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(lowp-to-rocdl{chip=gfx942},cse))' | FileCheck %s --check-prefix=GFX942
// RUN: lowp-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(lowp-to-rocdl{chip=gfx950},cse))' | FileCheck %s --check-prefix=GFX950
// RUN: lowp-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(lowp-to-rocdl{chip=gfx942 emulate=true},cse))' | FileCheck %s --check-prefix=EMU

// The AMD matrix kernels: a block loop over 64 x 64 tiles of C, 256 threads (4 waves of
// 64, 2 x 2 instructions of 16 x 16 each). Numerics: tests/integration/to_rocdl.rs
// (emulate=true, against the oracle).

// FNUZ FP8 on gfx942: the 16x16x32 MFMA, E4M3 FNUZ x E5M2 FNUZ = fp8 x bf8, A and B as
// i64 (8 codes of K per lane), per-tensor scales in the epilogue. gfx950 has no FNUZ
// matrix type, and E5M2 FNUZ's finite exponent 31 no f16 pattern: the bf16 MFMA on both
// operands' bf16 patterns.
// GFX942-LABEL: func.func @fnuz
// GFX942:         scf.parallel (%{{.*}}) = (%c0) to (%c256) step (%c1) {
// GFX942:           scf.for %{{.*}} step %c32 iter_args(
// GFX942-COUNT-4:     rocdl.mfma.f32.16x16x32.fp8.bf8 %{{.*}} : (i64, i64, vector<4xf32>, i32, i32, i32) -> vector<4xf32>
// GFX942:           memref.load %arg1[%c0, %c0] : memref<1x1xf32>
// GFX950-LABEL: func.func @fnuz
// GFX950-NOT:     rocdl.mfma.f32.16x16x32
// GFX950-COUNT-4: rocdl.mfma.f32.16x16x16bf16.1k
// EMU-LABEL: func.func @fnuz
// EMU-SAME:  attributes {lowp.emulated}
// EMU-NOT:   rocdl.mfma
// EMU:       memref.alloca() {alignment = 64 : i64} : memref<1024xf32>
func.func @fnuz(%a: memref<96x128xf8E4M3FNUZ>, %sa: memref<1x1xf32>, %b: memref<80x128xf8E5M2FNUZ>,
                %sb: memref<1x1xf32>, %c: memref<96x80xf32>) {
  lowp.scaled_matmul %a[%sa], %b[%sb] into %c layouts(#lowp.per_tensor, #lowp.per_tensor)
      : memref<96x128xf8E4M3FNUZ>[memref<1x1xf32>], memref<80x128xf8E5M2FNUZ>[memref<1x1xf32>] -> memref<96x80xf32>
  return
}

// -----

// MXFP4 on gfx950: the block-scaled 16x16x128 MFMA with FP4 operands (type 4, four
// registers of 8 codes: vector<4xi32>) and each lane's E8M0 scale. On gfx942: FP4 embeds
// in E4M3 FNUZ (a 16-entry table), the 16x16x32 MFMA, the MX scales on the accumulators
// per 32 of K. The FP4 codes are translated four at a time (a register's 2 bytes, their
// nibbles spread one per byte as v_perm_b32 selectors): the images of codes 0-7 and of
// codes 8-15 picked by the low 3 bits, then byte i from the second where code i has bit 3.
// GFX942-LABEL: func.func @mxfp4
// GFX942:         scf.for %{{.*}} step %c32 iter_args(
// GFX942:           %[[LOW:.*]] = arith.andi %{{.*}}, %c117901063_i32 : i32
// GFX942:           %[[FIRST:.*]] = llvm.call_intrinsic "llvm.amdgcn.perm"(%{{.*}}, %{{.*}}, %[[LOW]]) : (i32, i32, i32) -> i32
// GFX942:           %[[SECOND:.*]] = llvm.call_intrinsic "llvm.amdgcn.perm"(%{{.*}}, %{{.*}}, %[[LOW]]) : (i32, i32, i32) -> i32
// GFX942:           %[[PICK:.*]] = arith.ori %{{.*}}, %c50462976_i32 : i32
// GFX942:           llvm.call_intrinsic "llvm.amdgcn.perm"(%[[SECOND]], %[[FIRST]], %[[PICK]]) : (i32, i32, i32) -> i32
// GFX942-COUNT-4:   rocdl.mfma.f32.16x16x32.fp8.fp8
// GFX942:         memref.load %{{.*}} : memref<64x4xi8>
// GFX950-LABEL: func.func @mxfp4
// GFX950:         scf.for %{{.*}} step %c128 iter_args(
// GFX950:           vector.load %{{.*}} {alignment = 4 : i64} : memref<64x64xi8>, vector<4xi8>
// GFX950:           memref.load %{{.*}} : memref<64x4xi8>
// GFX950-COUNT-4:   rocdl.mfma.scale.f32.16x16x128.f8f6f4 %{{.*}}, %{{.*}}, %{{.*}}, %c4_i32, %c4_i32, %c0_i32, %{{.*}}, %c0_i32, %{{.*}} : (vector<4xi32>, vector<4xi32>, vector<4xf32>, i32, i32, i32, i32, i32, i32) -> vector<4xf32>
func.func @mxfp4(%a: memref<64x64x!lowp.packed<f4E2M1FN>>, %sa: memref<64x4xf8E8M0FNU>,
                 %b: memref<64x64x!lowp.packed<f4E2M1FN>>, %sb: memref<64x4xf8E8M0FNU>,
                 %c: memref<64x64xbf16>) {
  lowp.scaled_matmul %a[%sa], %b[%sb] into %c layouts(#lowp.mx<32>, #lowp.mx<32>)
      : memref<64x64x!lowp.packed<f4E2M1FN>>[memref<64x4xf8E8M0FNU>],
        memref<64x64x!lowp.packed<f4E2M1FN>>[memref<64x4xf8E8M0FNU>] -> memref<64x64xbf16>
  return
}

// -----

// E3M4 (no FP8 type of either chip holds it) beside OCP E5M2 (whose infinities gfx942's
// FNUZ types lack): both as the f16 patterns of their fields into the 16x16x16 f16 MFMA,
// 4 codes of K per lane as two registers (4 halves), K steps of 16; the epilogue undoes
// the patterns' 2^-12 and 2^0 (the biases 3 and 15 against f16's 15) with one exact
// multiply by 2^12.
// GFX942-LABEL: func.func @f16_mfma
// GFX942:         scf.for %{{.*}} step %c16{{.*}} iter_args(
// GFX942:           llvm.bitcast %{{.*}} : vector<2xi32> to vector<4xf16>
// GFX942-COUNT-4:   rocdl.mfma.f32.16x16x16f16 %{{.*}} : (vector<4xf16>, vector<4xf16>, vector<4xf32>, i32, i32, i32) -> vector<4xf32>
// GFX942:         arith.constant 4.096000e+03 : f32
// GFX950-LABEL: func.func @f16_mfma
// GFX950-COUNT-4: rocdl.mfma.f32.16x16x16f16
// EMU-LABEL: func.func @f16_mfma
// EMU-NOT:   rocdl.mfma
// EMU:       return
func.func @f16_mfma(%a: memref<64x64x!lowp.mf<e3m4>>, %sa: memref<64x1xf32>,
                    %b: memref<64x64xf8E5M2>, %sb: memref<64x1xf32>, %c: memref<64x64xf32>) {
  lowp.scaled_matmul %a[%sa], %b[%sb] into %c layouts(#lowp.per_channel, #lowp.per_channel)
      : memref<64x64x!lowp.mf<e3m4>>[memref<64x1xf32>], memref<64x64xf8E5M2>[memref<64x1xf32>] -> memref<64x64xf32>
  return
}

// -----

// E6M1 (6 exponent bits: f16's field cannot hold it) beside E5M2 FNUZ: the bf16 patterns
// of their fields (moved into f32s, times 2^96 and 2^111: the biases 31 and 16 against
// bf16's 127) into the 16x16x16 bf16 MFMA, its operands as the intrinsic's i16 halves.
// GFX942-LABEL: func.func @bf16_mfma
// GFX942:         scf.for %{{.*}} step %c16{{.*}} iter_args(
// GFX942-DAG:       arith.constant 7.92281625E+28 : f32
// GFX942-DAG:       arith.constant 2.59614843E+33 : f32
// GFX942:           llvm.bitcast %{{.*}} : vector<2xi32> to vector<4xi16>
// GFX942-COUNT-4:   rocdl.mfma.f32.16x16x16bf16.1k %{{.*}} : (vector<4xi16>, vector<4xi16>, vector<4xf32>, i32, i32, i32) -> vector<4xf32>
// GFX950-LABEL: func.func @bf16_mfma
// GFX950-COUNT-4: rocdl.mfma.f32.16x16x16bf16.1k
// EMU-LABEL: func.func @bf16_mfma
// EMU-NOT:   rocdl.mfma
// EMU:       return
func.func @bf16_mfma(%a: memref<64x64x!lowp.mf<e6m1>>, %sa: memref<64x1xf32>,
                     %b: memref<64x64xf8E5M2FNUZ>, %sb: memref<64x1xf32>, %c: memref<64x64xf32>) {
  lowp.scaled_matmul %a[%sa], %b[%sb] into %c layouts(#lowp.per_channel, #lowp.per_channel)
      : memref<64x64x!lowp.mf<e6m1>>[memref<64x1xf32>], memref<64x64xf8E5M2FNUZ>[memref<64x1xf32>] -> memref<64x64xf32>
  return
}

// -----

// OCP E5M2 beside E5M2 FNUZ (MI300's bf8 and the OCP one): E5M2's infinities keep FNUZ's
// FP8 MFMA away and FNUZ's finite exponent 31 f16's; bf16 patterns take both, E5M2's
// exponent 31 set to bf16's top (its field 0x7C plus 0x4 carries into bit 7, times 255 is
// 0x7F80) and FNUZ's NaN 0x80 to 0x7FC0.
// GFX942-LABEL: func.func @bf16_mfma_ocp_e5m2
// GFX942:         scf.for %{{.*}} step %c16{{.*}} iter_args(
// GFX942-DAG:       arith.andi %{{.*}}, %c8126588_i32 : i32
// GFX942-DAG:       arith.addi %{{.*}}, %c262148_i32 : i32
// GFX942-DAG:       arith.muli %{{.*}}, %c255_i32 : i32
// GFX942-DAG:       arith.constant 32704 : i32
// GFX942-COUNT-4:   rocdl.mfma.f32.16x16x16bf16.1k
// GFX950-LABEL: func.func @bf16_mfma_ocp_e5m2
// GFX950-COUNT-4: rocdl.mfma.f32.16x16x16bf16.1k
func.func @bf16_mfma_ocp_e5m2(%a: memref<64x64xf8E5M2>, %sa: memref<1x1xf32>,
                              %b: memref<64x64xf8E5M2FNUZ>, %sb: memref<1x1xf32>, %c: memref<64x64xf32>) {
  lowp.scaled_matmul %a[%sa], %b[%sb] into %c layouts(#lowp.per_tensor, #lowp.per_tensor)
      : memref<64x64xf8E5M2>[memref<1x1xf32>], memref<64x64xf8E5M2FNUZ>[memref<1x1xf32>] -> memref<64x64xf32>
  return
}
