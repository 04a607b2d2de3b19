// RUN: lowp-translate %s --emit=asm --chip=gfx942 2>%t.remarks | FileCheck %s
// RUN: FileCheck %s --check-prefix=REMARK < %t.remarks
// RUN: lowp-translate %s --emit=asm --chip=gfx950 2>/dev/null | FileCheck %s

// E3M4 (no FP8 type of either chip holds it) beside OCP E5M2 (which gfx942's FNUZ types
// cannot hold: infinities): `auto` takes the f16 MFMA on the codes' f16 patterns instead
// of the generic kernel, and says so. Four v_mfma_f32_16x16x16_f16 per K step, nothing
// in scratch memory.
// REMARK: amdgpu-mfma-f16.mlir:[[#@LINE+9]]:3: remark: f16 MFMA kernel on gfx942: f8e3m4 embeds in none of f8e4m3fnuz, f8e5m2fnuz
// CHECK:         .amdgcn_target "amdgcn-amd-amdhsa--gfx9{{42|50}}"
// CHECK-NOT:     v_mfma_f32_16x16x32
// CHECK-COUNT-4: v_mfma_f32_16x16x16_f16
// CHECK-NOT:     v_mfma_f32_16x16x32
// CHECK:         .amdhsa_private_segment_fixed_size 0
// CHECK-NOT:     scratch_store
func.func @f16_mfma(%a: memref<64x64x!lowp.mf<e3m4>>, %sa: memref<64x1xf32>,
                    %b: memref<64x64xf8E5M2>, %sb: memref<64x1xf32>, %c: memref<64x64xf32>) {
  lowp.scaled_matmul %a[%sa], %b[%sb] into %c layouts(#lowp.per_channel, #lowp.per_channel)
      : memref<64x64x!lowp.mf<e3m4>>[memref<64x1xf32>], memref<64x64xf8E5M2>[memref<64x1xf32>] -> memref<64x64xf32>
  return
}
