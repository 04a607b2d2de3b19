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
// CHECK-COUNT-16: ld.global.b32
// CHECK-COUNT-8:  mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e5m2.f32
// CHECK-NOT:   .local
// CHECK:       st.global.b32

// GEN-NOT:     mma.sync
// GEN:         .visible .entry mxfp8_kernel(

// ERR: --kernel: 'scaled-mfma' is not a kernel for sm_90a; expected one of auto, tcgen05, wgmma, wgmma-skinny, wgmma-specialized, wgmma-tma, mma-sync, generic
func.func @mxfp8(%a: memref<128x256xf8E4M3FN>, %sa: memref<128x8xf8E8M0FNU>,
                 %b: memref<64x256xf8E5M2>, %sb: memref<64x8xf8E8M0FNU>, %c: memref<128x64xf32>) {
  lowp.scaled_matmul %a[%sa], %b[%sb] into %c layouts(#lowp.mx<32>, #lowp.mx<32>)
      : memref<128x256xf8E4M3FN>[memref<128x8xf8E8M0FNU>], memref<64x256xf8E5M2>[memref<64x8xf8E8M0FNU>] -> memref<128x64xf32>
  return
}
