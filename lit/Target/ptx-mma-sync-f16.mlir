// RUN: lowp-translate %s --emit=ptx --chip=sm_89 -o %t.ptx 2>%t.remarks
// RUN: FileCheck %s --check-prefixes=CHECK,SM89 < %t.ptx
// RUN: FileCheck %s --check-prefix=LOADS < %t.ptx
// RUN: FileCheck %s --check-prefix=REMARK < %t.remarks
// RUN: lowp-translate %s --emit=ptx --chip=sm_90a --kernel=mma-sync | FileCheck %s --check-prefixes=CHECK,SM90
// RUN: lowp-translate %s --emit=ptx --chip=sm_100a --kernel=mma-sync | FileCheck %s --check-prefixes=CHECK,SM100

// E3M4 (beside packed E2M1) embeds in no FP8 type: on sm_89 `auto` takes the f16 form of
// the mma.sync kernel instead of the generic one, and says so (sm_90a's is the
// register-staged wgmma's k16, ptx-wgmma-kernel.mlir; sm_100a's tcgen05's kind::f16,
// ptx-tcgen05-kernel.mlir); every chip has the form. Its inner K step:
// A's 8 registers as 2-byte loads, B's as bytes (two packed codes), the fields moved into
// f16 patterns by integer operations, 8 mma.sync.m16n8k16 on f16 with f32 accumulators,
// nothing in local memory. ptxas turns each into one HMMA.16816.F32
// (lit/Target/sass-tensor-cores.test).
// REMARK: ptx-mma-sync-f16.mlir:[[#@LINE+17]]:3: remark: f16 mma.sync kernel on sm_89: f8e3m4 embeds in none of f8e4m3, f8e5m2
// SM90:        .target sm_90a
// SM89:        .target sm_89
// SM100:       .target sm_100a
// CHECK:       .visible .entry f16_e3m4_kernel(
// CHECK-NOT:   .local
// CHECK-NOT:   mma.sync.aligned.m16n8k32
// CHECK-COUNT-8: mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32
// CHECK-NOT:   .local
// CHECK-NOT:   mma.sync.aligned.m16n8k32
// The branch of whole steps (rows 2-byte aligned, K inside): 16 loads back to back.
// LOADS:         ld.global.b16
// LOADS-COUNT-7: ld.global.b16
// LOADS-COUNT-8: ld.global.b8
func.func @f16_e3m4(%a: memref<64x128x!lowp.mf<e3m4>>, %sa: memref<64x4xf8E8M0FNU>,
                    %b: memref<64x64x!lowp.packed<f4E2M1FN>>, %sb: memref<64x4xf8E8M0FNU>,
                    %c: memref<64x64xf32>) {
  lowp.scaled_matmul %a[%sa], %b[%sb] into %c layouts(#lowp.mx<32>, #lowp.mx<32>)
      : memref<64x128x!lowp.mf<e3m4>>[memref<64x4xf8E8M0FNU>],
        memref<64x64x!lowp.packed<f4E2M1FN>>[memref<64x4xf8E8M0FNU>] -> memref<64x64xf32>
  return
}
