// The AMDGPU path: FP8 MFMA on gfx942 (MI300) and the block-scaled f8f6f4 MFMA on gfx950
// (MI350, here with FP4 operands: cbsz = blgp = 4), through ROCDL and LLVM 22's AMDGPU
// backend. gfx942 has no scaled MFMA: lowp-translate refuses it at the op, one error line
// and exit 1 (LLVM's backend would stop at it naming no location).

// RUN: lowp-translate %s --emit=asm --chip=gfx950 | FileCheck %s --check-prefix=GFX950
// RUN: not lowp-translate %s --emit=asm --chip=gfx942 2>&1 | FileCheck %s --check-prefix=GFX942

// GFX950: .amdgcn_target "amdgcn-amd-amdhsa--gfx950"
// GFX950: fp8_mfma:
// GFX950: v_mfma_f32_16x16x32_fp8_fp8
// GFX950: mxfp4_scaled_mfma:
// GFX950: v_mfma_scale_f32_16x16x128_f8f6f4 {{.*}} cbsz:4 blgp:4
// GFX942: amdgpu-mfma.mlir:[[@LINE+16]]:10: error: 'rocdl.mfma.scale.f32.16x16x128.f8f6f4' is a gfx950 operation, which gfx942 does not have

module {
  llvm.func @fp8_mfma(%a: i64, %b: i64, %out: !llvm.ptr<1>) attributes {rocdl.kernel} {
    %z = llvm.mlir.constant(dense<0.0> : vector<4xf32>) : vector<4xf32>
    %c0 = llvm.mlir.constant(0 : i32) : i32
    %r = rocdl.mfma.f32.16x16x32.fp8.fp8 %a, %b, %z, %c0, %c0, %c0 : (i64, i64, vector<4xf32>, i32, i32, i32) -> vector<4xf32>
    %tid = rocdl.workitem.id.x : i32
    %p = llvm.getelementptr %out[%tid] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, vector<4xf32>
    llvm.store %r, %p : vector<4xf32>, !llvm.ptr<1>
    llvm.return
  }
  llvm.func @mxfp4_scaled_mfma(%a: vector<8xi32>, %b: vector<8xi32>, %sa: i32, %sb: i32, %out: !llvm.ptr<1>) attributes {rocdl.kernel} {
    %z = llvm.mlir.constant(dense<0.0> : vector<4xf32>) : vector<4xf32>
    %c0 = llvm.mlir.constant(0 : i32) : i32
    %fp4 = llvm.mlir.constant(4 : i32) : i32
    %r = rocdl.mfma.scale.f32.16x16x128.f8f6f4 %a, %b, %z, %fp4, %fp4, %c0, %sa, %c0, %sb : (vector<8xi32>, vector<8xi32>, vector<4xf32>, i32, i32, i32, i32, i32, i32) -> vector<4xf32>
    llvm.store %r, %out : vector<4xf32>, !llvm.ptr<1>
    llvm.return
  }
}
