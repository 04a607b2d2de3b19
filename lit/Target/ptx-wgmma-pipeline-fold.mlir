// RUN: lowp-translate %s --emit=ptx --chip=sm_90a > %t
// RUN: FileCheck %s < %t
// RUN: FileCheck %s --check-prefix=B8 < %t
// RUN: FileCheck %s --check-prefix=CLAMP < %t
// RUN: FileCheck %s --check-prefix=HI < %t
// RUN: lowp-translate %s --emit=ptx --chip=sm_90a --fold-scales=off | FileCheck %s --check-prefix=OFF
// RUN: lowp-translate %s --emit=ptx --chip=sm_90a --kernel=wgmma-specialized | FileCheck %s --check-prefix=WS

// MXFP4 x MXFP4 with the block scales folded into the translated codes where a block's
// scales allow (lit/Conversion/LowpToNVVM/wgmma-pipeline-fold.mlir has the IR): each
// thread stores its row's first scale word (4 E8M0) into the copy ring, loads the words of
// all 4 stages back to back (up to 32 a round), takes each one's largest and smallest
// byte; each warp of B's rows reduces their largest and smallest (`redux.sync`), and
// `bar.red.or.pred` gives the whole block one answer and publishes the warps' ranges;
// then the folded loops, B anchored (its chunks' distance from the block's largest code:
// a byte load each, `ld.shared.b8`, 2 chunks of B a thread) and by rows (a stage: 4
// k-steps in one commit group, one promotion of 64 fma), and the per-32 one (4 groups of
// one, 64 fma each) are all in the kernel: 4 + 4 + 4 instructions for the one stage each
// loop runs per iteration (the operands are translated: a second stage per iteration cost
// registers). A round with a stage out of reach is read again, each block's 16 bytes of
// codes in one `ld.global.v4` masked by E2M1's magnitude bits (0x77777777: blocks of
// zeros fold under any scale), and B's blocks of scale code 0 (2^-127) alike: those of
// zeros are left out of B's range; a second `bar.red.or` tells whether one of code 0 is
// not zeros (then not anchored), and both folded loops clamp their 4 chunks' distances to
// the reach (`min.u32 .., 8`).
// CHECK-LABEL: .entry
// CHECK:         ld.global.b32
// CHECK-COUNT-4: ld.global.b32
// CHECK-NOT:     ld.global
// CHECK:         max.u32
// CHECK:         min.u32
// CHECK:         ld.global.v4.b32
// CHECK-NEXT:    or.b32
// CHECK:         and.b32 {{.*}}, 2004318071;
// CHECK:         redux.sync.max.u32
// CHECK-NEXT:    redux.sync.min.u32
// CHECK:         bar.red.or.pred
// CHECK:         bar.red.or.pred
// CHECK-NOT:     bar.red.or.pred
// CHECK-COUNT-12: wgmma.mma_async.sync.aligned.m64n128k32.f32.e4m3.e4m3
// CHECK-NOT:     wgmma.mma_async
// CHECK:         ret;
// CLAMP-COUNT-8: min.u32 {{.*}}, 8;
// CLAMP-NOT:     min.u32 {{.*}}, 8;
// B8-COUNT-2:    ld.shared.b8
// B8-NOT:        ld.shared.b8
// A packed word's high four selectors come down by `mul.hi.u32` by 2^16 (an IMAD.HI on
// the FMA pipe, not a shift on the integer pipe the permutes fill; 2^16 in a register):
// 4 words of 2 chunks of each operand a thread, in each of the three loops, and no
// `shr.u32` by 16. (The others, by immediates, divide stage indices by 3 and 5.)
// HI-COUNT-48:   mul.hi.u32 {{.*}}, %r{{[0-9]+}};
// HI-NOT:        mul.hi.u32 {{.*}}, %r{{[0-9]+}};
// HI-NOT:        shr.u32 {{.*}}, 16;

// OFF-LABEL:   .entry
// OFF-NOT:     bar.red
// OFF-COUNT-4: wgmma.mma_async.sync.aligned.m64n128k32.f32.e4m3.e4m3
// OFF-NOT:     wgmma.mma_async
// OFF:         ret;
// Warp-specialized: the block's `bar.red.or.pred`, then named barrier 1 of the 128
// producers in each of their three loops (top of each stage, and before the last stages'
// translations), 12 instructions in the consumers' three loops.
// WS-LABEL:     .entry
// WS:           redux.sync.max.u32
// WS:           bar.red.or.pred
// WS-COUNT-6:   bar.sync {{.*}}1, 128;
// WS-COUNT-12:  wgmma.mma_async.sync.aligned.m64n128k32.f32.e4m3.e4m3
// WS-NOT:       wgmma.mma_async
func.func @mxfp4(%a: memref<256x256x!lowp.packed<f4E2M1FN>>, %sa: memref<256x16xf8E8M0FNU>,
                 %b: memref<128x256x!lowp.packed<f4E2M1FN>>, %sb: memref<128x16xf8E8M0FNU>,
                 %c: memref<256x128xf32>) {
  lowp.scaled_matmul %a[%sa], %b[%sb] into %c layouts(#lowp.mx<32>, #lowp.mx<32>)
      : memref<256x256x!lowp.packed<f4E2M1FN>>[memref<256x16xf8E8M0FNU>], memref<128x256x!lowp.packed<f4E2M1FN>>[memref<128x16xf8E8M0FNU>] -> memref<256x128xf32>
  return
}
