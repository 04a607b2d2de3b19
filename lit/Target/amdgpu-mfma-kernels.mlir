// RUN: lowp-translate %s --emit=asm --chip=gfx950 | FileCheck %s --check-prefix=GFX950
// RUN: lowp-translate %s --emit=asm --chip=gfx942 | FileCheck %s --check-prefix=GFX942
// RUN: lowp-translate %s --emit=hsaco --chip=gfx950 -o %t.hsaco
// RUN: llvm-readobj --notes %t.hsaco | FileCheck %s --check-prefix=NOTES
// RUN: llvm-objdump -d %t.hsaco | FileCheck %s --check-prefix=DIS
// RUN: not lowp-translate %s --emit=hsaco --chip=sm_90a -o %t.x 2>&1 | FileCheck %s --check-prefix=ERR
// RUN: not lowp-translate %s --emit=asm --chip=gfx942 --kernel=mma-sync 2>&1 | FileCheck %s --check-prefix=KERNEL

// lowp IR straight to AMD code: lowp-translate lowers lowp.scaled_matmul with
// lowp-to-rocdl for the chip. MXFP4 x MXFP8 on gfx950: the block-scaled MFMA, FP4 in A
// (cbsz 4), E4M3 in B (blgp 0), the lanes' E8M0 scales in VGPRs; on gfx942, FP4 as E4M3
// FNUZ (four codes at a time by three v_perm_b32 over the 16 images) and FNUZ FP8 MFMAs.
// --emit=hsaco links the kernel into a code object whose notes carry the kernel's
// metadata.
// GFX950:       ; gpu.binary @mx_kernel
// GFX950:       .amdgcn_target "amdgcn-amd-amdhsa--gfx950"
// GFX950-COUNT-4: v_mfma_scale_f32_16x16x128_f8f6f4 {{.*}} cbsz:4
// GFX950:       .amdhsa_kernel mx_kernel
// GFX942:       .amdgcn_target "amdgcn-amd-amdhsa--gfx942"
// GFX942-DAG:   v_perm_b32
// GFX942-DAG:   v_mfma_f32_16x16x32_fp8_fp8
// GFX942-NOT:   v_mfma_scale
// NOTES-DAG:    amdhsa.target: amdgcn-amd-amdhsa--gfx950
// NOTES-DAG:    .name: mx_kernel
// NOTES-DAG:    .wavefront_size: 64
// DIS:          v_mfma_scale_f32_16x16x128_f8f6f4
// ERR: --emit=hsaco needs an AMD chip (gfx942, gfx950), found sm_90a
// KERNEL: --kernel: 'mma-sync' is not a kernel for gfx942; expected one of auto, scaled-mfma, mfma, generic
func.func @mx(%a: memref<128x64x!lowp.packed<f4E2M1FN>>, %sa: memref<128x4xf8E8M0FNU>,
              %b: memref<64x128xf8E4M3FN>, %sb: memref<64x4xf8E8M0FNU>, %c: memref<128x64xf32>) {
  lowp.scaled_matmul %a[%sa], %b[%sb] into %c layouts(#lowp.mx<32>, #lowp.mx<32>)
      : memref<128x64x!lowp.packed<f4E2M1FN>>[memref<128x4xf8E8M0FNU>],
        memref<64x128xf8E4M3FN>[memref<64x4xf8E8M0FNU>] -> memref<128x64xf32>
  return
}
