// RUN: lowp-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(lowp-to-nvvm{chip=sm_90a kernel=wgmma},cse))' | FileCheck %s

// The cp.async pipeline stages block scales through shared memory (here K is whole stages
// of 128: 768, 6 stages). Per stage, thread t < 128 copies A's row t's four E8M0
// scales of the stage (4 bytes, cp.async.ca) and thread 128 + t B's row t's, in the stage's
// commit group; after its wait the same thread decodes its four (E8M0: code << 23, code 0
// -> 2^-127, 255 -> NaN) into f32 in the decoded ring entry of the stage (stage % 3), which
// the stage's barrier publishes. A promotion reads its 2 rows' and 32 columns' values from
// there (2 loads and 16 of adjacent column pairs from shared memory), before it waits for
// the segment (an empty inline assembly takes and gives them back, so no compiler sinks
// the loads past the wait).
// CHECK-LABEL: func.func @mx
// CHECK:         gpu.launch
// CHECK:             nvvm.cp.async.shared.global %{{.*}}, %{{.*}}, 4, cache =  ca, %c4_i32 : !llvm.ptr<3>, !llvm.ptr<1>, i32
// CHECK:             nvvm.cp.async.shared.global %{{.*}}, %{{.*}}, 4, cache =  ca, %c4_i32 : !llvm.ptr<3>, !llvm.ptr<1>, i32
// CHECK:         scf.for
// CHECK:           nvvm.cp.async.wait.group 2
// CHECK:             %[[WORD:.*]] = llvm.load %{{.*}} {alignment = 4 : i64} : !llvm.ptr<3> -> i32
// CHECK:             arith.ori %{{.*}}, %c4194304_i32 : i32
// CHECK:             llvm.store %{{.*}}, %{{.*}} {alignment = 4 : i64} : i32, !llvm.ptr<3>
// CHECK:           gpu.barrier
// CHECK:           llvm.load %{{.*}} {alignment = 4 : i64} : !llvm.ptr<3> -> i32
// CHECK-COUNT-16:  llvm.load %{{.*}} {alignment = 8 : i64} : !llvm.ptr<3> -> vector<2xi32>
// CHECK:           llvm.inline_asm has_side_effects asm_dialect = att "", "=f,{{(=f,)+}}0,1,{{.*}},33"
// CHECK-NEXT:      llvm.extractvalue
// CHECK:           "wgmma.wait_group.sync.aligned 0;"
func.func @mx(%a: memref<130x768xf8E4M3FN>, %sa: memref<130x24xf8E8M0FNU>, %b: memref<72x768xf8E5M2>,
              %sb: memref<72x24xf8E8M0FNU>, %c: memref<130x72xf32>) {
  lowp.scaled_matmul %a[%sa], %b[%sb] into %c layouts(#lowp.mx<32>, #lowp.mx<32>)
      : memref<130x768xf8E4M3FN>[memref<130x24xf8E8M0FNU>], memref<72x768xf8E5M2>[memref<72x24xf8E8M0FNU>] -> memref<130x72xf32>
  return
}

// -----

// K not whole stages (416: 13 E8M0 bytes a row, aligned every fourth row; the last stage's
// run past the row): staged the same way through windows. The row's thread copies the two
// 4-byte words that hold the stage's four bytes (from the address rounded down to 4; a
// word past the scales copies 0 bytes) and, after its wait, shifts them down by
// 8 x (address & 3) bits before it decodes them. No promotion loads a scale from global
// memory.
// CHECK-LABEL: func.func @ragged
// CHECK:         gpu.launch
// CHECK:             %[[FIRST:.*]] = arith.andi %{{.*}}, %c-4_i64 : i64
// CHECK:             arith.minsi %{{.*}}, %c4_i64 : i64
// CHECK:             arith.maxsi %{{.*}}, %c0_i64 : i64
// CHECK:             nvvm.cp.async.shared.global %{{.*}}, %{{.*}}, 4, cache =  ca, %{{.*}} : !llvm.ptr<3>, !llvm.ptr<1>, i32
// CHECK:             arith.addi %[[FIRST]], %c4_i64 : i64
// CHECK:             nvvm.cp.async.shared.global %{{.*}}, %{{.*}}, 4, cache =  ca, %{{.*}} : !llvm.ptr<3>, !llvm.ptr<1>, i32
// CHECK:         scf.for
// CHECK:           nvvm.cp.async.wait.group 2
// CHECK:             %[[W0:.*]] = llvm.load %{{.*}} {alignment = 4 : i64} : !llvm.ptr<3> -> i32
// CHECK:             %[[W1:.*]] = llvm.load %{{.*}} {alignment = 4 : i64} : !llvm.ptr<3> -> i32
// CHECK:             arith.andi %{{.*}}, %c3_i64 : i64
// CHECK:             %[[HIGH:.*]] = arith.extui %[[W1]] : i32 to i64
// CHECK:             arith.shli %[[HIGH]], %c32_i64 : i64
// CHECK:             arith.extui %[[W0]] : i32 to i64
// CHECK:             arith.shrui %{{.*}}, %{{.*}} : i64
// CHECK:             arith.ori %{{.*}}, %c4194304_i32 : i32
// CHECK:           gpu.barrier
// CHECK-NOT:       memref.load %{{.*}} : memref<130x13xi8>
// CHECK:           "wgmma.wait_group.sync.aligned 0;"
// CHECK-NOT:     memref.load %{{.*}} : memref<130x13xi8>
// CHECK:         gpu.terminator
func.func @ragged(%a: memref<130x416xf8E4M3FN>, %sa: memref<130x13xf8E8M0FNU>, %b: memref<72x416xf8E5M2>,
                  %sb: memref<72x13xf8E8M0FNU>, %c: memref<130x72xf32>) {
  lowp.scaled_matmul %a[%sa], %b[%sb] into %c layouts(#lowp.mx<32>, #lowp.mx<32>)
      : memref<130x416xf8E4M3FN>[memref<130x13xf8E8M0FNU>], memref<72x416xf8E5M2>[memref<72x13xf8E8M0FNU>] -> memref<130x72xf32>
  return
}

// -----

// DeepSeek's layout: A 1 x 128 (a row's scale a stage), B 128 x 128 (one scale per 128
// columns and stage). The square block's 128 columns start on multiples of 128, so B's
// scale of a stage is one value over the block (`Kernel::uniform`): a promotion reads it
// once (2 of A's rows, 1 of B's, not 2 + 32 column pairs) and multiplies it into A's two
// rows' scales, then one fma per accumulator: 2 mulf a promotion (a stage's, each waited
// for: block scales leave one register set), 64 fma each; two stages a loop iteration.
// CHECK-LABEL: func.func @deepgemm
// CHECK:         scf.for
// CHECK:           gpu.barrier
// CHECK-COUNT-3:   llvm.load %{{.*}} {alignment = 4 : i64} : !llvm.ptr<3> -> i32
// CHECK-NOT:       vector<2xi32>
// CHECK:           llvm.inline_asm has_side_effects asm_dialect = att "", "=f,=f,=f,0,1,2"
// CHECK:           "wgmma.wait_group.sync.aligned 0;"
// CHECK:           %[[S0:.*]] = arith.mulf
// CHECK-NEXT:      llvm.intr.fma(%{{.*}}, %[[S0]], %{{.*}})
// CHECK-NEXT:      llvm.intr.fma(%{{.*}}, %[[S0]], %{{.*}})
// CHECK-NEXT:      %[[S1:.*]] = arith.mulf
// CHECK-COUNT-62:  llvm.intr.fma
// CHECK-NOT:       arith.mulf
// CHECK:           gpu.barrier
// CHECK:           "wgmma.wait_group.sync.aligned 0;"
// CHECK:           arith.mulf
// CHECK-NEXT:      llvm.intr.fma
// CHECK-NEXT:      llvm.intr.fma
// CHECK-NEXT:      arith.mulf
// CHECK-COUNT-62:  llvm.intr.fma
// CHECK-NOT:       arith.mulf
// CHECK:         scf.yield
func.func @deepgemm(%a: memref<256x512xf8E4M3FN>, %sa: memref<256x4xf32>,
                    %b: memref<256x512xf8E4M3FN>, %sb: memref<2x4xf32>,
                    %c: memref<256x256xf32>) {
  lowp.scaled_matmul %a[%sa], %b[%sb] into %c layouts(#lowp.blockwise<1x128>, #lowp.blockwise<128x128>)
      : memref<256x512xf8E4M3FN>[memref<256x4xf32>], memref<256x512xf8E4M3FN>[memref<2x4xf32>] -> memref<256x256xf32>
  return
}

// -----

// B's blocks of 64 rows: two in a block's 128 columns, so its columns read their own
// scales (16 pairs) and a promotion multiplies per accumulator.
// CHECK-LABEL: func.func @half_blocks
// CHECK:         scf.for
// CHECK:           gpu.barrier
// CHECK-COUNT-16:  llvm.load %{{.*}} {alignment = 8 : i64} : !llvm.ptr<3> -> vector<2xi32>
// CHECK:           "wgmma.wait_group.sync.aligned 0;"
// CHECK-COUNT-64:  arith.mulf
func.func @half_blocks(%a: memref<256x512xf8E4M3FN>, %sa: memref<256x4xf32>,
                       %b: memref<256x512xf8E4M3FN>, %sb: memref<4x4xf32>,
                       %c: memref<256x256xf32>) {
  lowp.scaled_matmul %a[%sa], %b[%sb] into %c layouts(#lowp.blockwise<1x128>, #lowp.blockwise<64x128>)
      : memref<256x512xf8E4M3FN>[memref<256x4xf32>], memref<256x512xf8E4M3FN>[memref<4x4xf32>] -> memref<256x256xf32>
  return
}
