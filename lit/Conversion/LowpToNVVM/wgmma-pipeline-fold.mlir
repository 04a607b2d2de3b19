// RUN: lowp-opt %s --pass-pipeline='builtin.module(func.func(lowp-to-nvvm{chip=sm_90a},cse))' | FileCheck %s
// RUN: lowp-opt %s --pass-pipeline='builtin.module(func.func(lowp-to-nvvm{chip=sm_90a fold-scales=off},cse))' | FileCheck %s --check-prefix=OFF
// RUN: lowp-opt %s --pass-pipeline='builtin.module(func.func(lowp-to-nvvm{chip=sm_90a kernel=wgmma-specialized},cse))' | FileCheck %s --check-prefix=WS
// RUN: lowp-opt %s --pass-pipeline='builtin.module(func.func(lowp-to-nvvm{chip=sm_90a fold-scales=rows},cse))' | FileCheck %s --check-prefix=ROWS

// fold-scales (auto): MXFP4 x MXFP4 in the barrier pipeline's square block, K whole stages
// (768: 6). Threads 0 and 32 store A's and B's E2M1 -> E4M3 table moved down d = 0..8
// binades (9 x 16 bytes each, after the 160768 bytes of the ring, translated tiles and
// scales: codes 0-3 are 0x3C383000 at d = 0, 0x03020100 at d = 8, where 0.5 x 2^-8 is
// E4M3's smallest subnormal), then 32 bytes of scratch (161056). Each thread scans its
// row's E8M0 scales of every stage (one 32-bit word a stage, all 6 in one round: up to
// 32), stores the first stage's word into the copy ring; B's rows also carry their
// largest and smallest code, which each of B's 4 warps reduces (`redux.sync` umax, umin)
// and its lane 0 stores into the scratch. A round with a stage whose four scales are more
// than 8 binades apart (or, B's, a scale E8M0's least, code 0) is read again a stage at a
// time: a block more than 8 below its stage's largest still folds where its 16 bytes of
// codes (one `ld.global.v4`) have no magnitude bit set (zeros: `& 0x77777777`); B's blocks
// of code 0 are read too, and B's read blocks of zeros are left out of its range (`select`
// 255 for the smallest). The block's `bar.red.or` of "some stage misses (or has a NaN
// scale)" publishes them; every thread reads the 4 warps' ranges back, and B is anchored
// where its largest and smallest code are within 8 binades and (a second `bar.red.or`) no
// block of B of code 0 is other than zeros. That picks one of three loops, each ending in
// its own wait for every instruction:
// - anchored: A's chunk of 32 codes (one 32-block) translated with the table of d = max -
//   e_j (its row's stage word's largest), B's with d = top - e_j (the block's largest,
//   e_j one byte load), both clamped to the reach (blocks of zeros); the stage one segment
//   of four k-steps and one wait, promoted once with A's rows' 2^(max - 127) x 2^(top -
//   127), B's columns' scale 1: one fma an accumulator, no column scale read (two values
//   through the pin, A's rows);
// - by rows: both operands' chunks by their rows' stage maxima (a word load each), the
//   distance clamped to the reach (a block past it is zeros, which every table keeps),
//   the promotion with the rows' and columns' 2^(max - 127) (34 values through the pin);
// - per 32: four segments of one k-step each, a wait and a promotion each.
// The stage's codes travel with the next stage's scales: 2 copies of 4 bytes in the
// prologue's first group (A's and B's stage 1), then one per operand and stage.
// CHECK-LABEL: func.func @mxfp4
// CHECK:         gpu.launch {{.*}} dynamic_shared_memory_size %c162112_i32
// CHECK-COUNT-2:   nvvm.cp.async.shared.global %{{.*}}, %{{.*}}, 4, cache =  ca, %c4_i32
// CHECK:         scf.if %{{.*}} {
// CHECK-NEXT:      %c1010315264_i32 = arith.constant 1010315264 : i32
// CHECK-COUNT-9:   llvm.store %{{.*}} {alignment = 16 : i64} : vector<4xi32>, !llvm.ptr<3>
// CHECK-NEXT:    }
// CHECK:         scf.if %{{.*}} {
// CHECK-COUNT-9:   llvm.store %{{.*}} {alignment = 16 : i64} : vector<4xi32>, !llvm.ptr<3>
// CHECK-NEXT:    }
// CHECK:         scf.if %{{.*}} -> (i1, i1) {
// CHECK:           llvm.load %{{.*}} {alignment = 4 : i64} : !llvm.ptr<1> -> i32
// CHECK:           llvm.store %{{.*}}, %{{.*}} {alignment = 4 : i64} : i32, !llvm.ptr<3>
// CHECK:           scf.for %{{.*}} iter_args(%{{.*}} = %false, %{{.*}} = %false) -> (i1, i1) {
// CHECK-COUNT-6:     llvm.load %{{.*}} {alignment = 4 : i64} : !llvm.ptr<1> -> i32
// CHECK-NOT:         llvm.load
// CHECK:             arith.maxsi
// CHECK:             scf.if %{{.*}} -> (i1, i1) {
// CHECK-NEXT:          scf.for %{{.*}} = %c0 to %c6 step %c1 iter_args({{.*}}) -> (i1, i1) {
// CHECK-COUNT-4:         llvm.load %{{.*}} {alignment = 16 : i64} : !llvm.ptr<1> -> vector<4xi32>
// CHECK:         scf.if %{{.*}} -> (i1, i1, i32, i32) {
// CHECK:           scf.for {{.*}} -> (i1, i1, i32, i32) {
// CHECK-COUNT-6:     llvm.load %{{.*}} {alignment = 4 : i64} : !llvm.ptr<1> -> i32
// CHECK:             arith.cmpi eq, %{{.*}}, %c0_i32
// CHECK:             scf.if %{{.*}} -> (i1, i1, i32) {
// CHECK-NEXT:          scf.for %{{.*}} = %c0 to %c6 step %c1 iter_args({{.*}}) -> (i1, i1, i32) {
// CHECK:                 scf.if %{{.*}} -> (i1, i1, i32) {
// CHECK:                   %[[EB:.*]] = arith.cmpi eq, %{{.*}}, %c0_i32
// CHECK-NEXT:              %[[READ:.*]] = arith.ori %{{.*}}, %[[EB]] : i1
// CHECK-NEXT:              %[[KEEPS:.*]] = scf.if %[[READ]] -> (i1) {
// CHECK:                     %c2004318071_i32 = arith.constant 2004318071 : i32
// CHECK-NEXT:                arith.andi %{{.*}}, %c2004318071_i32 : i32
// CHECK:                   %[[OUT:.*]] = arith.andi %[[READ]], %[[KEEPS]] : i1
// CHECK-NEXT:              arith.select %[[OUT]], %c255_i32{{.*}}, %{{.*}} : i32
// CHECK:         %[[TOP:.*]] = nvvm.redux.sync  umax
// CHECK-NEXT:    %[[BOTTOM:.*]] = nvvm.redux.sync  umin
// CHECK:           %c161056{{.*}} = arith.constant 161056 : index
// CHECK:           vector.from_elements %[[TOP]], %[[BOTTOM]] : vector<2xi32>
// CHECK:         nvvm.barrier #nvvm.reduction<or> %{{.*}} -> i32
// CHECK-COUNT-2: llvm.load %{{.*}} {alignment = 16 : i64} : !llvm.ptr<3> -> vector<4xi32>
// CHECK:         arith.cmpi ule, %{{.*}}, %c8_i32 : i32
// CHECK:         nvvm.barrier #nvvm.reduction<or> %{{.*}} -> i32
// CHECK:         scf.if %{{.*}} -> (f32,
// CHECK-NEXT:      scf.if %{{.*}} -> (f32,
// CHECK:             scf.for
// CHECK:               arith.minui %{{.*}}, %c8_i32 : i32
// CHECK:               arith.addi %c160768, %{{.*}} : index
// CHECK:               llvm.load %{{.*}} : !llvm.ptr<3> -> i8
// CHECK:               arith.minui %{{.*}}, %c8_i32 : i32
// CHECK:               arith.addi %c160912, %{{.*}} : index
// CHECK:               gpu.barrier
// CHECK:               nvvm.wgmma.fence.aligned
// CHECK-COUNT-4:       nvvm.wgmma.mma_async
// CHECK-NEXT:          nvvm.wgmma.commit.group.sync.aligned
// CHECK-NOT:           nvvm.wgmma.fence.aligned
// CHECK:               llvm.inline_asm has_side_effects asm_dialect = att "", "=f,=f,0,1"
// CHECK:               "wgmma.wait_group.sync.aligned 0;"
// CHECK-NOT:           "wgmma.wait_group.sync.aligned 1;"
// CHECK:           } else {
// CHECK:             scf.for
// CHECK:               %[[DI:.*]] = arith.subi %{{.*}}, %{{.*}} : i32
// CHECK-NEXT:          %[[DC:.*]] = arith.minui %[[DI]], %c8_i32 : i32
// CHECK-NEXT:          %[[D:.*]] = arith.index_castui %[[DC]] : i32 to index
// CHECK:               %[[AT:.*]] = arith.muli %[[D]], %{{.*}} : index
// CHECK-NEXT:          %[[T:.*]] = arith.addi %c160768, %[[AT]] : index
// CHECK:               llvm.load %{{.*}} {alignment = 16 : i64} : !llvm.ptr<3> -> vector<4xi32>
// CHECK:               nvvm.prmt
// CHECK:               gpu.barrier
// CHECK:               nvvm.wgmma.fence.aligned
// CHECK-COUNT-4:       nvvm.wgmma.mma_async
// CHECK-NEXT:          nvvm.wgmma.commit.group.sync.aligned
// CHECK-NOT:           nvvm.wgmma.fence.aligned
// CHECK:               llvm.inline_asm has_side_effects asm_dialect = att "", "=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,0,
// CHECK:               "wgmma.wait_group.sync.aligned 0;"
// CHECK-NOT:           "wgmma.wait_group.sync.aligned 1;"
// CHECK:         } else {
// CHECK:           scf.for
// CHECK-NOT:         arith.addi %c160768
// CHECK:             gpu.barrier
// CHECK:             nvvm.wgmma.fence.aligned
// CHECK:             nvvm.wgmma.mma_async
// CHECK-NOT:         nvvm.wgmma.mma_async
// CHECK:             nvvm.wgmma.commit.group.sync.aligned
// CHECK:             "wgmma.wait_group.sync.aligned 0;"
// CHECK:             nvvm.wgmma.fence.aligned
// CHECK-NOT:         "wgmma.wait_group.sync.aligned 1;"

// fold-scales=rows: the scan without B's range (no reduction, no scratch: 162080 bytes),
// folded by rows or per 32, no chunk's code read as a byte.
// ROWS-LABEL:  func.func @mxfp4
// ROWS:          gpu.launch {{.*}} dynamic_shared_memory_size %c162080_i32
// ROWS-NOT:      nvvm.redux.sync
// ROWS:          nvvm.barrier #nvvm.reduction<or>
// ROWS-NOT:      nvvm.redux.sync
// ROWS-NOT:      !llvm.ptr<3> -> i8
// ROWS:          return

// OFF-LABEL:   func.func @mxfp4
// OFF-NOT:       nvvm.barrier #nvvm.reduction
// OFF-NOT:       llvm.load %{{.*}} : !llvm.ptr<1> -> i32
// OFF:           scf.for
// OFF:             nvvm.wgmma.fence.aligned
// OFF:             nvvm.wgmma.mma_async
// OFF-NOT:         nvvm.wgmma.mma_async
// OFF:             nvvm.wgmma.commit.group.sync.aligned
// OFF-NOT:       nvvm.barrier #nvvm.reduction
// Warp-specialized: the producers scan (the consumers join the block's `bar.red.or`,
// which is also the barrier after the mbarriers' initialization); each of the producers'
// three loops (anchored, by rows, per 32) meets at named barrier 1 of the 128 producer
// threads at the top of each stage (the scales of the stage it publishes landed in every
// producer's copies; the entry it copies into was read) and before the last stages'
// translations; the consumers take the same branch. The tables follow the mbarriers
// (217152).
// WS-LABEL:   func.func @mxfp4
// WS:           nvvm.mbarrier.init
// WS:           nvvm.barrier #nvvm.reduction<or> %{{.*}} -> i32
// WS:           nvvm.setmaxregister  decrease 72
// WS:           scf.if
// WS-NEXT:        scf.if
// WS-NEXT:          scf.for
// WS:                 nvvm.mbarrier.try_wait.parity
// WS:                 nvvm.barrier id = %{{.*}} number_of_threads = %c128_i32
// WS:                 arith.addi %c217152, %{{.*}} : index
// WS:                 llvm.load %{{.*}} : !llvm.ptr<3> -> i8
// WS:               nvvm.cp.async.wait.group 0
// WS-NOT:           } else {
// WS:               nvvm.barrier id = %{{.*}} number_of_threads = %c128_i32
// WS:             } else {
// WS-NEXT:          scf.for
// WS:                 nvvm.barrier id = %{{.*}} number_of_threads = %c128_i32
// WS:                 arith.addi %c217152, %{{.*}} : index
// WS:               nvvm.cp.async.wait.group 0
// WS:           } else {
// WS:             scf.for
// WS:               nvvm.barrier id = %{{.*}} number_of_threads = %c128_i32
// WS:           nvvm.setmaxregister  increase 216
// WS:           scf.if %{{.*}} -> (f32,
func.func @mxfp4(%a: memref<130x384x!lowp.packed<f4E2M1FN>>, %sa: memref<130x24xf8E8M0FNU>,
                 %b: memref<72x384x!lowp.packed<f4E2M1FN>>, %sb: memref<72x24xf8E8M0FNU>,
                 %c: memref<130x72xf32>) {
  lowp.scaled_matmul %a[%sa], %b[%sb] into %c layouts(#lowp.mx<32>, #lowp.mx<32>)
      : memref<130x384x!lowp.packed<f4E2M1FN>>[memref<130x24xf8E8M0FNU>], memref<72x384x!lowp.packed<f4E2M1FN>>[memref<72x24xf8E8M0FNU>] -> memref<130x72xf32>
  return
}
