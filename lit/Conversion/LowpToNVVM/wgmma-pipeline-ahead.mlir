// RUN: lowp-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(lowp-to-nvvm{chip=sm_90a translate-ahead=on},cse))' | FileCheck %s
// RUN: lowp-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(lowp-to-nvvm{chip=sm_90a},cse))' | FileCheck %s --check-prefix=OFF
// RUN: not lowp-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(lowp-to-nvvm{chip=sm_90a translate-ahead=yes}))' 2>&1 | FileCheck %s --check-prefix=BAD

// translate-ahead=on: the barrier pipeline translates stage s + 1 while stage s's
// instructions run. The prologue waits for the first stage's copies (2 groups left of the
// 3 ahead: 5 stages, 3 in flight) and translates it; each stage then issues its
// instructions (one commit group, folded), the copies 3 stages on, waits for its own
// copies of the next stage and translates them (byte permutes, under `s + 1 < last`),
// and only then waits for its instructions and promotes. With the default (off) each
// stage is translated at its top, and nothing runs between a commit and its wait.
// CHECK-LABEL: func.func @mxfp4
// CHECK:         nvvm.barrier #nvvm.reduction<or>
// CHECK:         nvvm.cp.async.wait.group 2
// CHECK:         nvvm.prmt
// CHECK:         scf.for
// CHECK:           gpu.barrier
// CHECK:           nvvm.wgmma.fence.aligned
// CHECK-COUNT-4:   nvvm.wgmma.mma_async
// CHECK-NEXT:      nvvm.wgmma.commit.group.sync.aligned
// CHECK:           nvvm.cp.async.commit.group
// CHECK-NOT:       wait_group
// CHECK:           nvvm.cp.async.wait.group 2
// CHECK:           scf.if
// CHECK:             nvvm.prmt
// CHECK:           "wgmma.wait_group.sync.aligned 0;"
// CHECK:           llvm.intr.fma
// OFF-LABEL:     func.func @mxfp4
// OFF:           scf.for
// OFF:             nvvm.cp.async.wait.group 2
// OFF:             nvvm.prmt
// OFF:             gpu.barrier
// OFF:             nvvm.wgmma.commit.group.sync.aligned
// OFF-NOT:         nvvm.prmt
// OFF:             "wgmma.wait_group.sync.aligned 0;"
// BAD: option 'translate-ahead' of lowp-to-nvvm: 'yes' is not accepted; expected on, off
func.func @mxfp4(%a: memref<256x256x!lowp.packed<f4E2M1FN>>, %sa: memref<256x16xf8E8M0FNU>,
                 %b: memref<128x256x!lowp.packed<f4E2M1FN>>, %sb: memref<128x16xf8E8M0FNU>,
                 %c: memref<256x128xf32>) {
  lowp.scaled_matmul %a[%sa], %b[%sb] into %c layouts(#lowp.mx<32>, #lowp.mx<32>)
      : memref<256x256x!lowp.packed<f4E2M1FN>>[memref<256x16xf8E8M0FNU>], memref<128x256x!lowp.packed<f4E2M1FN>>[memref<128x16xf8E8M0FNU>] -> memref<256x128xf32>
  return
}

// -----

// The skinny block (16 rows, K split in clusters of 4 by shape: each split translates its
// own first stage ahead of its loop), 8 stages: 6 in flight, 5 left by each wait.
// CHECK-LABEL: func.func @decode
// CHECK:         nvvm.cp.async.wait.group 5
// CHECK:         nvvm.prmt
// CHECK:         scf.for
// CHECK:           nvvm.wgmma.commit.group.sync.aligned
// CHECK:           nvvm.cp.async.commit.group
// CHECK-NOT:       wait_group
// CHECK:           nvvm.cp.async.wait.group 5
// CHECK:           nvvm.prmt
// CHECK:           "wgmma.wait_group.sync.aligned 0;"
func.func @decode(%a: memref<16x512x!lowp.packed<f4E2M1FN>>, %sa: memref<16x32xf8E8M0FNU>,
                  %b: memref<256x512x!lowp.packed<f4E2M1FN>>, %sb: memref<256x32xf8E8M0FNU>,
                  %c: memref<16x256xf32>) {
  lowp.scaled_matmul %a[%sa], %b[%sb] into %c layouts(#lowp.mx<32>, #lowp.mx<32>)
      : memref<16x512x!lowp.packed<f4E2M1FN>>[memref<16x32xf8E8M0FNU>], memref<256x512x!lowp.packed<f4E2M1FN>>[memref<256x32xf8E8M0FNU>] -> memref<16x256xf32>
  return
}
