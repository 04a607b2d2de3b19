// RUN: lowp-translate %s --emit=asm --chip=gfx942 2>%t.remarks | FileCheck %s
// RUN: FileCheck %s --check-prefix=REMARK < %t.remarks
// RUN: lowp-translate %s --emit=asm --chip=gfx950 2>/dev/null | FileCheck %s

// E6M1 (6 exponent bits: no FP8 type holds it, f16's exponent field cannot) beside E5M2
// FNUZ: `auto` takes the bf16 MFMA on the codes' bf16 patterns (fields moved into f32s,
// two a v_pk_mul_f32 into range) and says why. Four v_mfma_f32_16x16x16_bf16 per K step;
// f32 denormals preserved (mode 3: the moved subnormal codes are f32 subnormals until the
// multiply); nothing in scratch memory.
// REMARK: amdgpu-mfma-bf16.mlir:[[#@LINE+11]]:3: remark: bf16 MFMA kernel on gfx942: f8e6m1 embeds in none of f8e4m3fnuz, f8e5m2fnuz; for f16: f8e6m1's fields do not move into f16's: its exponent field has 6 bits, f16's 5
// CHECK:         .amdgcn_target "amdgcn-amd-amdhsa--gfx9{{42|50}}"
// CHECK-NOT:     v_mfma_f32_16x16x16_f16
// CHECK-COUNT-4: v_mfma_f32_16x16x16_bf16
// CHECK-NOT:     v_mfma_f32_16x16x16_f16
// CHECK:         v_pk_mul_f32
// CHECK:         .amdhsa_private_segment_fixed_size 0
// CHECK:         .amdhsa_float_denorm_mode_32 3
// CHECK-NOT:     scratch_store
func.func @bf16_mfma(%a: memref<64x64x!lowp.mf<e6m1>>, %sa: memref<64x1xf32>,
                     %b: memref<64x64xf8E5M2FNUZ>, %sb: memref<64x1xf32>, %c: memref<64x64xf32>) {
  lowp.scaled_matmul %a[%sa], %b[%sb] into %c layouts(#lowp.per_channel, #lowp.per_channel)
      : memref<64x64x!lowp.mf<e6m1>>[memref<64x1xf32>], memref<64x64xf8E5M2FNUZ>[memref<64x1xf32>] -> memref<64x64xf32>
  return
}
