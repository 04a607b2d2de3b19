// RUN: lowp-translate %s --emit=ptx --chip=sm_90a --kernel=wgmma | FileCheck %s
// RUN: lowp-translate %s --emit=ptx --chip=sm_90a --kernel=wgmma-specialized | FileCheck %s --check-prefix=WS

// The sm_90a cp.async pipeline in PTX (lit/Conversion/LowpToNVVM/wgmma-pipeline.mlir has its
// IR): 256 threads, the ring in dynamic shared memory declared as CUDA declares it
// (lowp-extern-dynamic-shared), 16-byte cp.async.cg copies from global addresses
// (cvta.to.global): here the static shape (whole 128-row tiles and 128-code stages) proves
// every chunk inside, so the source size is the constant 16 (no zero fill) and a thread's
// chunks of an operand, 32 rows apart, are one shared and one global address plus
// immediate offsets (32 x 128 and 32 x 512 bytes); the stage wait, the proxy fence
// and barrier, then wgmma on 128-byte-swizzle descriptors: layout type 1 in bits 62-63,
// stride offset 1024 >> 4 in bits 32-45, leading offset 1 (unused) in bits 16-29, i.e. the
// address >> 4 or'ed with 0x4000004000010000 = 4611686293305360384. Per-tensor scales: 4
// instructions per stage, the first not reading D (scale-d predicate 0). No local memory.
// CHECK:       .target sm_90a
// CHECK:       .extern .shared .align 16 .b8 __dynamic_shmem__0[];
// CHECK:       .visible .entry fp8_kernel(
// CHECK:       .maxntid 256, 1, 1
// CHECK-NOT:   .local
// The prologue's copies, then the stages, two per loop iteration: the stage wait, fence
// and barrier, four instructions, the copies of a later stage; then the wait for the
// stage before (wgmma.wait_group 1: these four keep running) and its promotion. Each
// iteration ends with the wait for all (wait_group 0), so that nothing is in flight
// across the back edge (ptxas would serialize every wgmma: tests
// Target/ptxas-wgmma.test); the next iteration's first stage promotes that segment, and
// the last one is promoted after the loop. LLVM places the loop's second stage first:
// wait_group 1, 0, then the first stage's wait_group 1, then the one after the loop. The
// running instructions' accumulators alternate between two register sets from stage to
// stage, so none is copied while the tensor cores write it (no mov between an
// instruction and its wait).
// CHECK:       cvta.to.global.u64
// CHECK:       cp.async.cg.shared.global [%rd[[DST:[0-9]+]]], [%rd[[SRC:[0-9]+]]], 16, 16;
// CHECK-NEXT:  cp.async.cg.shared.global [%rd[[DST]]+4096], [%rd[[SRC]]+16384], 16, 16;
// CHECK:       cp.async.commit_group;
// CHECK:       cp.async.wait_group 2;
// CHECK-NEXT:  fence.proxy.async.shared::cta;
// CHECK-NEXT:  bar.sync 0;
// CHECK:       wgmma.fence.sync.aligned;
// CHECK:       or.b64 {{.*}}, 4611686293305360384;
// CHECK:       setp.ne.b32 p, 0, 0;
// CHECK-NEXT:  wgmma.mma_async.sync.aligned.m64n128k32.f32.e4m3.e4m3 {%r[[D:[0-9]+]],
// CHECK-COUNT-3: wgmma.mma_async.sync.aligned.m64n128k32.f32.e4m3.e4m3 {%r[[D]],
// CHECK-NOT:   mov.b32 %r{{[0-9]+}}, %r[[D]];
// CHECK:       wgmma.commit_group.sync.aligned;
// CHECK-NOT:   mov.b32 %r{{[0-9]+}}, %r[[D]];
// CHECK:       wgmma.wait_group.sync.aligned 1;
// CHECK-NOT:   mov.b32 %r{{[0-9]+}}, %r[[D]];
// CHECK:       wgmma.wait_group.sync.aligned 0;
// CHECK:       bar.sync 0;
// CHECK:       wgmma.commit_group.sync.aligned;
// CHECK-NOT:   wgmma.wait_group
// CHECK:       cp.async.commit_group;
// CHECK:       wgmma.wait_group.sync.aligned 1;
// CHECK-NOT:   wgmma.wait_group
// CHECK:       wgmma.wait_group.sync.aligned 0;
// CHECK-NOT:   wgmma.wait_group
// CHECK:       cp.async.wait_group 0;
// CHECK-NOT:   .local
// The warp-specialized variant: 384 threads, mbarriers in the dynamic shared memory,
// registers moved from the producer warpgroup to the consumers (setmaxnreg: its copies
// proved inside, the producer keeps 40), no local memory.
// WS:       .extern .shared .align 16 .b8 __dynamic_shmem__0[];
// WS:       .maxntid 384, 1, 1
// WS-NOT:   .local
// WS-DAG:   setmaxnreg.dec.sync.aligned.u32 40;
// WS-DAG:   setmaxnreg.inc.sync.aligned.u32 232;
// WS-DAG:   mbarrier.init.shared.b64
// WS-DAG:   mbarrier.arrive.shared.b64
// WS-DAG:   mbarrier.try_wait.parity.shared.b64
// WS-DAG:   cp.async.cg.shared.global
// WS-DAG:   cp.async.wait_group 2;
// WS-DAG:   wgmma.mma_async.sync.aligned.m64n128k32.f32.e4m3.e4m3
// WS-NOT:   .local
func.func @fp8(%a: memref<256x512xf8E4M3FN>, %sa: memref<1x1xf32>, %b: memref<128x512xf8E4M3FN>,
               %sb: memref<1x1xf32>, %c: memref<256x128xbf16>) {
  lowp.scaled_matmul %a[%sa], %b[%sb] into %c layouts(#lowp.per_tensor, #lowp.per_tensor)
      : memref<256x512xf8E4M3FN>[memref<1x1xf32>], memref<128x512xf8E4M3FN>[memref<1x1xf32>] -> memref<256x128xbf16>
  return
}

// MX scales staged through shared memory (K whole stages; the IR:
// lit/Conversion/LowpToNVVM/wgmma-pipeline-scales.mlir): each thread copies one row's 4
// scale bytes per stage (cp.async.ca of 4 bytes), decodes them after its stage wait; a
// promotion's 34 scale values come from shared memory (16 pairs of adjacent columns, 2
// rows), loaded before the wait for its segment (one register set with block scales:
// wgmma.wait_group 0), then 64 FMAs; no local memory.
// CHECK:       .visible .entry mx_kernel(
// CHECK-NOT:   .local
// CHECK:       cp.async.ca.shared.global [%rd{{[0-9]+}}], [%rd{{[0-9]+}}], 4, 4;
// CHECK:       cp.async.wait_group 2;
// CHECK:       wgmma.commit_group.sync.aligned;
// CHECK-COUNT-16: ld.shared.v2.b32
// CHECK-NOT:   {{ld.global|fma.rn.f32}}
// CHECK:       wgmma.wait_group.sync.aligned 0;
// CHECK-COUNT-64: fma.rn.f32
// CHECK-NOT:   .local
func.func @mx(%a: memref<256x512xf8E4M3FN>, %sa: memref<256x16xf8E8M0FNU>, %b: memref<128x512xf8E4M3FN>,
              %sb: memref<128x16xf8E8M0FNU>, %c: memref<256x128xf32>) {
  lowp.scaled_matmul %a[%sa], %b[%sb] into %c layouts(#lowp.mx<32>, #lowp.mx<32>)
      : memref<256x512xf8E4M3FN>[memref<256x16xf8E8M0FNU>], memref<128x512xf8E4M3FN>[memref<128x16xf8E8M0FNU>] -> memref<256x128xf32>
  return
}
