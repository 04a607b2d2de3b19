// The NVPTX path: an FP8 mma.sync (m16n8k32, E4M3 and E5M2) through MLIR's LLVM IR
// translation and LLVM 22's NVPTX backend. MLIR 22's nvvm.mma.sync rejects FP8 shapes, so
// lowerings call the intrinsic; this is the PTX they get.

// RUN: lowp-translate %s --emit=ptx --chip=sm_89 | FileCheck %s --check-prefixes=CHECK,SM89
// RUN: lowp-translate %s --emit=ptx --chip=sm_90a | FileCheck %s --check-prefixes=CHECK,SM90
// RUN: lowp-translate %s --emit=llvm --chip=sm_90a | FileCheck %s --check-prefix=IR

// SM89:  .target sm_89
// SM90:  .target sm_90a
// CHECK: .visible .entry fp8_mma(
// CHECK: mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32
// CHECK: mov.u32 {{.*}}%tid.x
// CHECK: .visible .entry fp8_mma_mixed(
// CHECK: mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e5m2.f32
// IR: target triple = "nvptx64-nvidia-cuda"
// IR: call { float, float, float, float } @llvm.nvvm.mma.m16n8k32.row.col.f32.e4m3.e4m3.f32(

module {
  llvm.func @fp8_mma(%a0: i32, %a1: i32, %a2: i32, %a3: i32, %b0: i32, %b1: i32,
                     %c0: f32, %c1: f32, %c2: f32, %c3: f32, %out: !llvm.ptr<1>) attributes {nvvm.kernel} {
    %r = llvm.call_intrinsic "llvm.nvvm.mma.m16n8k32.row.col.f32.e4m3.e4m3.f32"(%a0, %a1, %a2, %a3, %b0, %b1, %c0, %c1, %c2, %c3)
        : (i32, i32, i32, i32, i32, i32, f32, f32, f32, f32) -> !llvm.struct<(f32, f32, f32, f32)>
    %d0 = llvm.extractvalue %r[0] : !llvm.struct<(f32, f32, f32, f32)>
    %tid = nvvm.read.ptx.sreg.tid.x : i32
    %p = llvm.getelementptr %out[%tid] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, f32
    llvm.store %d0, %p : f32, !llvm.ptr<1>
    llvm.return
  }
  llvm.func @fp8_mma_mixed(%a0: i32, %a1: i32, %a2: i32, %a3: i32, %b0: i32, %b1: i32,
                           %c0: f32, %out: !llvm.ptr<1>) attributes {nvvm.kernel} {
    %r = llvm.call_intrinsic "llvm.nvvm.mma.m16n8k32.row.col.f32.e4m3.e5m2.f32"(%a0, %a1, %a2, %a3, %b0, %b1, %c0, %c0, %c0, %c0)
        : (i32, i32, i32, i32, i32, i32, f32, f32, f32, f32) -> !llvm.struct<(f32, f32, f32, f32)>
    %d0 = llvm.extractvalue %r[0] : !llvm.struct<(f32, f32, f32, f32)>
    llvm.store %d0, %out : f32, !llvm.ptr<1>
    llvm.return
  }
}
