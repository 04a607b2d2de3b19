// RUN: lowp-translate %s --emit=ptx --chip=sm_89 | FileCheck %s --check-prefixes=CHECK,SM89
// RUN: lowp-translate %s --emit=ptx --chip=sm_90a --kernel=mma-sync | FileCheck %s --check-prefixes=CHECK,SM90
// RUN: lowp-translate %s --emit=ptx --chip=sm_100a --kernel=mma-sync | FileCheck %s --check-prefixes=CHECK,SM100
// RUN: lowp-translate %s --emit=ptx --chip=sm_90a --kernel=generic | FileCheck %s --check-prefix=GEN
// RUN: not lowp-translate %s --emit=ptx --chip=sm_90a --kernel=scaled-mfma 2>&1 | FileCheck %s --check-prefix=ERR

// lowp IR straight to PTX: lowp-translate lowers lowp.scaled_matmul for the chip
// (lowp-to-nvvm, the upstream GPU mapping, NVVM). The MXFP8 kernel's inner K step: 16
// fragment registers loaded as 32-bit words, 8 FP8 mma.sync, nothing spilled to local
// memory (the 32 accumulators per lane stay in registers).
// CHECK:       // gpu.binary @mxfp8_kernel
// SM89:        .target sm_89
// SM90:        .target sm_90a
// SM100:       .target sm_100a
// CHECK:       .visible .entry mxfp8_kernel(
// CHECK-NOT:   .local
// CHECK-COUNT-8:  mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e5m2.f32
// CHECK-NOT:   .local
// The step's 16 registers, loaded back to back in one branch (K inside, rows aligned).
// CHECK:       bra
// CHECK-COUNT-16: ld.global.b32
// CHECK-NEXT:  bra.uni
// CHECK-NOT:   .local
// CHECK:       st.global.b32

// GEN-NOT:     mma.sync
// GEN:         .visible .entry mxfp8_kernel(

// ERR: --kernel: 'scaled-mfma' is not a kernel for sm_90a; expected one of auto, tcgen05, wgmma, wgmma-skinny, wgmma-registers, wgmma-specialized, wgmma-tma, mma-sync, generic
func.func @mxfp8(%a: memref<128x256xf8E4M3FN>, %sa: memref<128x8xf8E8M0FNU>,
                 %b: memref<64x256xf8E5M2>, %sb: memref<64x8xf8E8M0FNU>, %c: memref<128x64xf32>) {
  lowp.scaled_matmul %a[%sa], %b[%sb] into %c layouts(#lowp.mx<32>, #lowp.mx<32>)
      : memref<128x256xf8E4M3FN>[memref<128x8xf8E8M0FNU>], memref<64x256xf8E5M2>[memref<64x8xf8E8M0FNU>] -> memref<128x64xf32>
  return
}

// FP6 x packed FP4 (into E4M3): the step's 8 FP6 words and 8 packed half-words loaded back
// to back, then translated with byte permutes and word arithmetic, no select chain: FP6's
// corrections looked up over each half word (the high one by mul.hi) and put in order by a
// third permute (0x6420).
// SM89:        .visible .entry fp6_fp4_kernel(
// SM89-NOT:    .local
// SM89:        bra
// SM89-COUNT-8: ld.global.b32
// SM89-COUNT-8: ld.global.b16
// SM89-NOT:    selp
// SM89:        mul.hi.u32
// SM89:        prmt.b32 {{.*}}, 0x6420U;
// SM89-NOT:    selp
// SM89:        bra.uni
func.func @fp6_fp4(%a: memref<64x128xf6E2M3FN>, %sa: memref<64x4xf8E8M0FNU>,
                   %b: memref<64x64x!lowp.packed<f4E2M1FN>>, %sb: memref<64x4xf8E8M0FNU>,
                   %c: memref<64x64xf32>) {
  lowp.scaled_matmul %a[%sa], %b[%sb] into %c layouts(#lowp.mx<32>, #lowp.mx<32>)
      : memref<64x128xf6E2M3FN>[memref<64x4xf8E8M0FNU>],
        memref<64x64x!lowp.packed<f4E2M1FN>>[memref<64x4xf8E8M0FNU>] -> memref<64x64xf32>
  return
}
