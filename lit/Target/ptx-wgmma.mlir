// The Hopper path: one warpgroup FP8 wgmma (m64n64k32, E4M3 x E5M2, f32 accumulate) with
// its fence / commit / wait, through MLIR's convert-nvvm-to-llvm (which turns
// nvvm.wgmma.mma_async into inline PTX) and LLVM 22's NVPTX backend. sm_89 has no wgmma:
// the refusal is one located error and exit 1.

// RUN: lowp-translate %s --pipeline='builtin.module(convert-nvvm-to-llvm)' --emit=ptx --chip=sm_90a | FileCheck %s
// RUN: not lowp-translate %s --pipeline='builtin.module(convert-nvvm-to-llvm)' --emit=ptx --chip=sm_89 2>&1 | FileCheck %s --check-prefix=SM89

// CHECK: .version 8.4
// CHECK: .target sm_90a
// CHECK: .visible .entry wgmma_fp8(
// CHECK: wgmma.fence.sync.aligned;
// CHECK: wgmma.mma_async.sync.aligned.m64n64k32.f32.e4m3.e5m2 {[[ACC:(%r[0-9]+, ){31}%r[0-9]+]]}, %rd{{[0-9]+}}, %rd{{[0-9]+}}, p, 1, 1;
// CHECK: wgmma.commit_group.sync.aligned;
// CHECK: wgmma.wait_group.sync.aligned {{[[:space:]]*}}0;
// SM89: lowp-translate: error: LLVM stopped: Cannot select: intrinsic %llvm.nvvm.wgmma

llvm.func @wgmma_fp8(%da: i64, %db: i64, %out: !llvm.ptr<1>) attributes {nvvm.kernel} {
  %acc0 = llvm.mlir.zero : !llvm.struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>
  nvvm.wgmma.fence.aligned
  %acc1 = nvvm.wgmma.mma_async %da, %db, %acc0, #nvvm.shape<m = 64, n = 64, k = 32>, D [<f32>, <zero>], A [<e4m3>, <one>, <row>], B [<e5m2>, <one>, <col>] : !llvm.struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)> -> !llvm.struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>
  nvvm.wgmma.commit.group.sync.aligned
  nvvm.wgmma.wait.group.sync.aligned 0
  %d0 = llvm.extractvalue %acc1[0] : !llvm.struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>
  llvm.store %d0, %out : f32, !llvm.ptr<1>
  llvm.return
}
