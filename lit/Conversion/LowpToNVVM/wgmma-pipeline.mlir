// RUN: lowp-opt %s --pass-pipeline='builtin.module(func.func(lowp-to-nvvm{chip=sm_90a kernel=wgmma},cse))' | FileCheck %s
// RUN: lowp-opt %s --pass-pipeline='builtin.module(func.func(lowp-to-nvvm{chip=sm_90a kernel=wgmma emulate=true},cse))' | FileCheck %s --check-prefix=EMU
// RUN: lowp-opt %s --pass-pipeline='builtin.module(func.func(lowp-to-nvvm{chip=sm_90a kernel=wgmma-specialized},cse))' | FileCheck %s --check-prefix=WS

// The sm_90a cp.async pipeline (row-major operands with static rows of a multiple of 16 bytes):
// two warpgroups per 128 x 128 block, 5 stages of 128 x 128-byte tiles of A and B in dynamic
// shared memory (5 x 32 KiB + 1 KiB to align the ring to 1024 bytes). The prologue issues
// stages 0..2 (8 16-byte cp.async per thread and stage, one commit group each); each step
// waits for its stage (cp.async.wait_group 2), fences the generic-proxy writes for the
// async proxy, synchronizes, issues the stage 3 ahead (into the slot of the stage 2
// behind: the one behind may still be read), then runs its K segments: per-tensor scales
// take one segment of 4 m64n128k32 per stage (the first with scale-d 0), MX one per 32 of
// K. Per-tensor: each segment's partial sums go into the accumulators after the next
// segment is issued (wgmma.wait_group 1: two register sets of results); the loop runs two
// stages per iteration and drains the second's (wgmma.wait_group 0), so that it carries
// only the 64 accumulators and no instruction is in flight across the back edge (ptxas
// serializes every wgmma otherwise). Each promotion's results pass through an empty
// inline assembly, so that LLVM keeps them before the next instructions. Numerics:
// tests/integration/to_nvvm.rs (wgmma_pipeline_matches_the_oracle).

// CHECK-LABEL: func.func @fp8
// CHECK:       gpu.launch blocks({{.*}}) threads({{.*}}) in (%{{.*}} = %c256, %{{.*}} = %c1, %{{.*}} = %c1) dynamic_shared_memory_size %c164864_i32 {
// CHECK:         %[[MEM:.*]] = gpu.dynamic_shared_memory : memref<?xi8, #gpu.address_space<workgroup>>
// CHECK:         memref.extract_aligned_pointer_as_index %[[MEM]]
// CHECK:         scf.for %{{.*}} = %c0 to %c3 step %c1 {
// CHECK-COUNT-8:   nvvm.cp.async.shared.global %{{.*}}, %{{.*}}, 16, cache =  cg, %{{.*}} : !llvm.ptr<3>, !llvm.ptr<1>, i32
// CHECK:           nvvm.cp.async.commit.group
// CHECK:         %{{.*}}:67 = scf.for %{{.*}} = %c0 to %{{.*}} step %c1 iter_args({{.*}}) -> ({{(f32, )+}}f32, !llvm.struct<({{.*}})>, index, i1) {
// CHECK:           nvvm.cp.async.wait.group 2
// CHECK-NEXT:      nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}
// CHECK-NEXT:      gpu.barrier
// CHECK:           nvvm.wgmma.fence.aligned
// CHECK:           nvvm.wgmma.mma_async %{{.*}}, %{{.*}}, %{{.*}}, <m = 64, n = 128, k = 32>, D[<f32>, <zero>], A[<e4m3>, <one>, <row>], B[<e4m3>, <one>, <col>]
// CHECK-COUNT-3:   nvvm.wgmma.mma_async %{{.*}}, %{{.*}}, %{{.*}}, <m = 64, n = 128, k = 32>, D[<f32>, <one>]
// CHECK-NEXT:      nvvm.wgmma.commit.group.sync.aligned
// CHECK-COUNT-8:   nvvm.cp.async.shared.global
// CHECK:           nvvm.cp.async.commit.group
// CHECK-NOT:       nvvm.wgmma.mma_async
// CHECK:           "wgmma.wait_group.sync.aligned 1;"
// CHECK-NEXT:      scf.if %arg{{[0-9]+}} -> (f32, f32,
// CHECK:           llvm.inline_asm has_side_effects asm_dialect = att "", "=f,=f,
// CHECK:           nvvm.cp.async.wait.group 2
// CHECK:           gpu.barrier
// CHECK:           nvvm.wgmma.mma_async %{{.*}}, %{{.*}}, %{{.*}}, <m = 64, n = 128, k = 32>, D[<f32>, <zero>]
// CHECK:           nvvm.wgmma.commit.group.sync.aligned
// CHECK-COUNT-8:   nvvm.cp.async.shared.global
// CHECK:           nvvm.cp.async.commit.group
// CHECK-NOT:       nvvm.wgmma.mma_async
// CHECK:           "wgmma.wait_group.sync.aligned 1;"
// CHECK-NEXT:      scf.if %{{[0-9]+}} -> (f32, f32,
// CHECK:           llvm.inline_asm has_side_effects asm_dialect = att "", "=f,=f,
// CHECK-NOT:       nvvm.wgmma.mma_async
// CHECK:           "wgmma.wait_group.sync.aligned 0;"
// CHECK-NEXT:      scf.yield
// CHECK-NEXT:    }
// CHECK-NOT:     nvvm.wgmma.mma_async
// CHECK:         "wgmma.wait_group.sync.aligned 0;"
// CHECK-NEXT:    scf.if %{{.*}}#66 -> (f32, f32,
// CHECK:         llvm.inline_asm has_side_effects asm_dialect = att "", "=f,=f,
// CHECK-NOT:     nvvm.wgmma.mma_async
// CHECK-NOT:     wgmma.wait_group
// CHECK:         nvvm.cp.async.wait.group 0
// The epilogue: a thread's registers 2i, 2i + 1 are one row's adjacent columns, stored as
// one pair where C's base is 4-byte aligned (checked once), else one by one.
// CHECK:         %[[C:.*]] = memref.extract_aligned_pointer_as_index %arg4 : memref<256x128xbf16> -> index
// CHECK:         %[[REM:.*]] = arith.remui %[[C]], %c4 : index
// CHECK:         %[[ALIGNED:.*]] = arith.cmpi eq, %[[REM]], %c0 : index
// CHECK:         scf.if %[[ALIGNED]] {
// CHECK-COUNT-32:  vector.store %{{.*}}, %arg4[%{{.*}}, %{{.*}}] {alignment = 4 : i64} : memref<256x128xbf16>, vector<2xbf16>
// CHECK-NOT:       memref.store
// CHECK:         } else {
// CHECK-COUNT-64:  memref.store %{{.*}}, %arg4[%{{.*}}, %{{.*}}] : memref<256x128xbf16>
// CHECK:         gpu.terminator
func.func @fp8(%a: memref<256x512xf8E4M3FN>, %sa: memref<1x1xf32>, %b: memref<128x512xf8E4M3FN>,
               %sb: memref<1x1xf32>, %c: memref<256x128xbf16>) {
  lowp.scaled_matmul %a[%sa], %b[%sb] into %c layouts(#lowp.per_tensor, #lowp.per_tensor)
      : memref<256x512xf8E4M3FN>[memref<1x1xf32>], memref<128x512xf8E4M3FN>[memref<1x1xf32>] -> memref<256x128xbf16>
  return
}

// kernel=wgmma-specialized: warpgroup 2 (threads 256..383) produces, warpgroups 0 and 1
// consume; a full mbarrier (128 producer arrivals) and an empty one (256 consumer arrivals)
// per slot after the ring (4 x 32 KiB + 64 bytes + 1 KiB). The producer waits for a slot's
// empty barrier from its second use on, issues its 8 + 8 copies of the stage, commits,
// and once the stage 2 behind has landed (cp.async.wait_group 2) fences and arrives on its
// full barrier; after the last stage it drains (wait_group 0) and publishes the rest. The
// consumers wait on the full barrier and run the stage's instructions; once the stage
// after is issued and the stage waited for (wgmma.wait_group 1), they arrive on its empty
// barrier. Two stages per iteration, as in the barrier pipeline (4 stages: 2), each
// iteration drained (wgmma.wait_group 0). No block-wide barrier inside the loops.
// Registers move from the producer to the consumers (setmaxnreg): whole tiles and stages,
// so the producer holds one address a stage for its 16 cp.async (constant sizes and
// offsets) and keeps 40 a thread; the consumers get 232.
// WS-LABEL: func.func @fp8
// WS:       gpu.launch {{.*}} threads({{.*}}) in (%{{.*}} = %c384, %{{.*}} = %c1, %{{.*}} = %c1) dynamic_shared_memory_size %c132160_i32 {
// WS:         scf.for %{{.*}} = %c0 to %c4 step %c1 {
// WS:           nvvm.mbarrier.init %{{.*}}, %c128_i32 : !llvm.ptr<3>, i32
// WS:           nvvm.mbarrier.init %{{.*}}, %c256_i32 : !llvm.ptr<3>, i32
// WS:       gpu.barrier
// WS:       arith.cmpi uge, %{{.*}}, %c256 : index
// WS-NEXT:  scf.if
// WS-NEXT:    nvvm.setmaxregister decrease 40
// WS:         scf.for
// WS:             nvvm.mbarrier.try_wait.parity
// WS-COUNT-16:  nvvm.cp.async.shared.global
// WS-NOT:         nvvm.cp.async.shared.global
// WS:           nvvm.cp.async.commit.group
// WS:             nvvm.cp.async.wait.group 2
// WS:             nvvm.fence.proxy
// WS:             nvvm.mbarrier.arrive
// WS:         nvvm.cp.async.wait.group 0
// WS:       arith.cmpi ult, %{{.*}}, %c256 : index
// WS-NEXT:  scf.if
// WS-NEXT:    nvvm.setmaxregister increase 232
// WS-NOT:     gpu.barrier
// WS:         %{{.*}}:67 = scf.for %{{.*}} = %c0 to %c2 step %c1 iter_args(
// WS:           nvvm.mbarrier.try_wait.parity
// WS:           nvvm.wgmma.mma_async
// WS:           nvvm.wgmma.commit.group.sync.aligned
// WS:           "wgmma.wait_group.sync.aligned 1;"
// WS-NEXT:      scf.if %arg{{[0-9]+}} -> (f32, f32,
// WS:           nvvm.mbarrier.arrive
// WS:           nvvm.mbarrier.try_wait.parity
// WS:           nvvm.wgmma.mma_async
// WS:           "wgmma.wait_group.sync.aligned 1;"
// WS:           nvvm.mbarrier.arrive
// WS:           "wgmma.wait_group.sync.aligned 0;"
// WS-NEXT:      scf.yield
// WS:         "wgmma.wait_group.sync.aligned 0;"
// WS-NOT:     wgmma.wait_group
// WS:       gpu.terminator

// MX (E8M0 per 32 of K): four segments per stage, one instruction each. With block scales
// a warpgroup keeps one register set of results: each segment is waited for
// (wgmma.wait_group 0) and promoted with its scales before the next is issued (two sets
// and the scales spilled in ptxas); the other warpgroup's instructions run meanwhile. The
// waits take and give back the accumulators (inline assembly), so the promotion cannot
// move above them, and its results pass through an empty inline assembly, so that it
// cannot sink below the next segment.
// CHECK-LABEL: func.func @mxfp8
// CHECK:         scf.for
// CHECK:           nvvm.wgmma.mma_async %{{.*}}, %{{.*}}, %{{.*}}, <m = 64, n = 128, k = 32>, D[<f32>, <zero>], A[<e5m2>, <one>, <row>], B[<e4m3>, <one>, <col>]
// CHECK-NEXT:      nvvm.wgmma.commit.group.sync.aligned
// CHECK:           "wgmma.wait_group.sync.aligned 0;"
// CHECK:           llvm.intr.fma
// CHECK:           llvm.inline_asm has_side_effects asm_dialect = att "", "=f,=f,
// CHECK:           nvvm.wgmma.mma_async %{{.*}}, %{{.*}}, %{{.*}}, <m = 64, n = 128, k = 32>, D[<f32>, <zero>]
// CHECK-NEXT:      nvvm.wgmma.commit.group.sync.aligned
// CHECK:           "wgmma.wait_group.sync.aligned 0;"
// CHECK:           nvvm.wgmma.mma_async %{{.*}}, %{{.*}}, %{{.*}}, <m = 64, n = 128, k = 32>, D[<f32>, <zero>]
// CHECK:           "wgmma.wait_group.sync.aligned 0;"
// CHECK:           nvvm.wgmma.mma_async %{{.*}}, %{{.*}}, %{{.*}}, <m = 64, n = 128, k = 32>, D[<f32>, <zero>]
// CHECK:           "wgmma.wait_group.sync.aligned 0;"
// CHECK-NOT:       "wgmma.wait_group.sync.aligned 1;"
// CHECK-NOT:       D[<f32>, <one>]
// CHECK:         gpu.terminator

// EMU-LABEL: func.func @fp8
// EMU-NOT:   gpu.launch
// EMU-NOT:   nvvm.
// EMU:       scf.parallel
// EMU:         memref.alloca() {alignment = 64 : i64} : memref<41984xi32>
// EMU:         memref.alloca() {alignment = 64 : i64} : memref<16384xf32>
// EMU:         memref.alloca() {alignment = 64 : i64} : memref<8192xf32>
func.func @mxfp8(%a: memref<100x96xf8E5M2>, %sa: memref<100x3xf8E8M0FNU>,
                 %b: memref<64x96xf8E4M3FN>, %sb: memref<64x3xf8E8M0FNU>, %c: memref<100x64xf32>) {
  lowp.scaled_matmul %a[%sa], %b[%sb] into %c layouts(#lowp.mx<32>, #lowp.mx<32>)
      : memref<100x96xf8E5M2>[memref<100x3xf8E8M0FNU>], memref<64x96xf8E4M3FN>[memref<64x3xf8E8M0FNU>] -> memref<100x64xf32>
  return
}

// MXFP4 (packed E2M1) x FP6 E3M2: both staged. Each thread copies 2 + 4 raw 16-byte chunks
// per stage into the slot (8 KiB + 16 KiB), then, after its wait, translates them into the
// FP8 tiles of stage % 2 after the ring: E2M1 -> E4M3 four codes at a time by byte
// permutes of the table's images; E3M2 -> E4M3 four codes (one per byte) at a time by
// word arithmetic, no select chain: the codes (& 0x3F3F3F3F) << 1 plus 0x20202020, less
// each code's correction (what that exceeds a subnormal code's image by: 0x02040A20,
// permutes whose selectors are the codes' low 3 bits and, in bit 3, bit 3 or 4: the sign
// mode's 0 for codes with either set; the half words' nibbles 0 and 2, put in order by a
// third permute, 0x6420; the corrections word held in a register, Permute::held), plus
// the signs (& 0x20202020) times 2.
// Both operands' E8M0 32-blocks are staged and both translations can move, so the block
// folds its scales where they allow (Conversion/LowpToNVVM/wgmma-pipeline-fold.mlir): the
// tables (E2M1 9 x 16 bytes, E3M2's subnormal images 5 x 16) and the scan's 32 bytes of
// B's ranges follow the rest, and both folded loops (B anchored, by rows) move E3M2's
// offset down d exponent units (0x20202020 - d x 0x08080808); the per-32 loop after them
// uses the rule as it is. K is whole stages, so the E8M0 scales are staged too
// (lit/Conversion/LowpToNVVM/wgmma-pipeline-scales.mlir), which leaves room for 5 stages
// (copies 3 ahead: each step waits for all but 2 of its groups): 5 x 24 KiB + 2 x 2 x 16
// KiB + 5 x 1 KiB of scales as copied + 2 x 4 KiB decoded + 1 KiB, then the tables' 256
// bytes.
// CHECK-LABEL: func.func @staged
// CHECK:       gpu.launch {{.*}} dynamic_shared_memory_size %c203008_i32 {
// CHECK:         scf.for
// CHECK-COUNT-6:   nvvm.cp.async.shared.global
// CHECK:         nvvm.barrier #nvvm.reduction<or>
// CHECK:         scf.for
// CHECK:           nvvm.cp.async.wait.group 2
// CHECK:           %[[DOWN:.*]] = arith.muli %{{.*}}, %c134744072_i32 : i32
// CHECK:           arith.subi %c538976288_i32, %[[DOWN]] : i32
// CHECK:         "wgmma.wait_group.sync.aligned 0;"
// CHECK:         scf.for
// CHECK:           nvvm.cp.async.wait.group 2
// CHECK:           %[[DOWN2:.*]] = arith.muli %{{.*}}, %c134744072_i32{{[_0-9]*}} : i32
// CHECK:           arith.subi %c538976288_i32{{[_0-9]*}}, %[[DOWN2]] : i32
// CHECK:         "wgmma.wait_group.sync.aligned 0;"
// CHECK:         scf.for
// CHECK:           nvvm.cp.async.wait.group 2
// CHECK:           llvm.load %{{.*}} {alignment = 16 : i64} : !llvm.ptr<3> -> vector<4xi32>
// CHECK-NOT:       arith.select %{{.*}} : i64
// The per-32 loop's table (not moved) is constant: its low word, which prmt takes from a
// vector register, is held in one (or-ed with a zero ptxas cannot see: Permute::held).
// CHECK:           %[[LO:.*]] = llvm.inline_asm {{.*}}%dynamic_smem_size{{.*}}, "=r,r" %c1010315264_i32 : (i32) -> i32
// CHECK:           nvvm.prmt <default> %{{.*}}, %[[LO]], %c1279804480_i32 : i32
// CHECK-NOT:       arith.select %{{.*}} : i64
// CHECK:           %[[CW:.*]] = llvm.inline_asm {{.*}}%dynamic_smem_size{{.*}}, "=r,r" %c33819168_i32 : (i32) -> i32
// CHECK:           %[[DOWN1:.*]] = llvm.call_intrinsic "llvm.nvvm.mulhi.ui"(%[[W:.*]], %c-2147483648_i32)
// CHECK:           %[[BIT4:.*]] = arith.andi %[[DOWN1]], %c134744072_i32 : i32
// CHECK:           %[[FLAGGED:.*]] = arith.ori %[[W]], %[[BIT4]] : i32
// CHECK:           %[[FIRST:.*]] = nvvm.prmt <default> %[[FLAGGED]], %[[CW]], %c0_i32 : i32
// CHECK:           %[[HALF:.*]] = llvm.call_intrinsic "llvm.nvvm.mulhi.ui"(%[[FLAGGED]], %c65536_i32)
// CHECK:           %[[SECOND:.*]] = nvvm.prmt <default> %[[HALF]], %[[CW]], %c0_i32 : i32
// CHECK:           %[[CORR:.*]] = nvvm.prmt <default> %c25632_i32, %[[FIRST]], %[[SECOND]] : i32
// CHECK:           %[[CODES:.*]] = arith.andi %[[W]], %c1061109567_i32 : i32
// CHECK:           %[[SH:.*]] = arith.shli %[[CODES]], %c1_i32 : i32
// CHECK:           %[[SUM:.*]] = arith.addi %[[SH]], %c538976288_i32 : i32
// CHECK:           arith.subi %[[SUM]], %[[CORR]] : i32
// CHECK:           %[[SIGNS:.*]] = arith.andi %[[W]], %c538976288_i32 : i32
// CHECK:           arith.muli %[[SIGNS]], %c2_i32 : i32
// CHECK-NOT:       arith.select %{{.*}} : i64
// CHECK:           llvm.store %{{.*}}, %{{.*}} {alignment = 16 : i64} : vector<4xi32>, !llvm.ptr<3>
// CHECK:           nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}
// CHECK-NEXT:      gpu.barrier
// CHECK:           nvvm.wgmma.mma_async {{.*}} A[<e4m3>, <one>, <row>], B[<e4m3>, <one>, <col>]
// Warp-specialized, the producer translates, B's 64 rows clamped in the 128-row tile: it
// keeps 72 registers, the consumers get 216.
// WS-LABEL: func.func @staged
// WS:         nvvm.setmaxregister decrease 72
// WS:         nvvm.setmaxregister increase 216
func.func @staged(%a: memref<128x128x!lowp.packed<f4E2M1FN>>, %sa: memref<128x8xf8E8M0FNU>,
                  %b: memref<64x256xf6E3M2FN>, %sb: memref<64x8xf8E8M0FNU>, %c: memref<128x64xf32>) {
  lowp.scaled_matmul %a[%sa], %b[%sb] into %c layouts(#lowp.mx<32>, #lowp.mx<32>)
      : memref<128x128x!lowp.packed<f4E2M1FN>>[memref<128x8xf8E8M0FNU>], memref<64x256xf6E3M2FN>[memref<64x8xf8E8M0FNU>] -> memref<128x64xf32>
  return
}

// A decode step (M = 16 <= 64): the skinny block, swap AB. One warpgroup per 16 x 64 of
// C computes C^T with m64n16k32: B's 64 rows (E4M3) are the instruction's A, A's 16 rows
// (E5M2) its B. 8 stages of 2 + 8 KiB (+ 1 KiB to align); per stage each thread copies 1
// chunk of A and 4 of B; the prologue issues 6 stages, each step waits for all but 5 of
// its groups. 8 accumulators per thread, and the iteration's last segment, done and
// promoted by the next iteration. N = 8192 gives 128 blocks: K is not split.
// CHECK-LABEL: func.func @decode
// CHECK-NOT:   clusters
// CHECK:       gpu.launch blocks({{.*}}) threads({{.*}}) in (%{{.*}} = %c128{{.*}}, %{{.*}} = %c1{{.*}}, %{{.*}} = %c1{{.*}}) dynamic_shared_memory_size %c82944_i32 {
// CHECK:         scf.for %{{.*}} = %c0 to %c6 step %c1 {
// CHECK-COUNT-5:   nvvm.cp.async.shared.global
// CHECK-NOT:       nvvm.cp.async.shared.global
// CHECK:           nvvm.cp.async.commit.group
// CHECK:         %{{.*}}:11 = scf.for %{{.*}} = %c0 to %{{.*}} step %c1 iter_args(
// CHECK:           nvvm.cp.async.wait.group 5
// CHECK:           gpu.barrier
// CHECK:           nvvm.wgmma.fence.aligned
// CHECK:           nvvm.wgmma.mma_async %{{.*}}, %{{.*}}, %{{.*}}, <m = 64, n = 16, k = 32>, D[<f32>, <zero>], A[<e4m3>, <one>, <row>], B[<e5m2>, <one>, <col>]
// CHECK-COUNT-3:   nvvm.wgmma.mma_async %{{.*}}, %{{.*}}, %{{.*}}, <m = 64, n = 16, k = 32>, D[<f32>, <one>], A[<e4m3>, <one>, <row>], B[<e5m2>, <one>, <col>]
// CHECK-NEXT:      nvvm.wgmma.commit.group.sync.aligned
// CHECK-COUNT-5:   nvvm.cp.async.shared.global
// CHECK:           "wgmma.wait_group.sync.aligned 0;"
// CHECK:         gpu.terminator
func.func @decode(%a: memref<16x512xf8E5M2>, %sa: memref<1x1xf32>, %b: memref<8192x512xf8E4M3FN>,
                  %sb: memref<8192x1xf32>, %c: memref<16x8192xbf16>) {
  lowp.scaled_matmul %a[%sa], %b[%sb] into %c layouts(#lowp.per_tensor, #lowp.per_channel)
      : memref<16x512xf8E5M2>[memref<1x1xf32>], memref<8192x512xf8E4M3FN>[memref<8192x1xf32>] -> memref<16x8192xbf16>
  return
}

// Split-K of the skinny block (16 x 256 x 2048: 4 tiles of C, 16 stages of K): clusters of
// 8 blocks along x (grid x = 4 x 8), block x's rank x % 8 sums stages [2 rank, 2 rank + 2).
// At the end ranks 1..7 leave their 8 partial sums per thread in shared memory; a cluster
// barrier (arrive has release, wait acquire semantics); rank 0 reads them through
// distributed shared memory (mapa to ranks 1, 2, .., 7, in that order), adds, stores C; a
// second cluster barrier keeps the other ranks' memory until it has read.
// CHECK-LABEL: func.func @split
// CHECK:       gpu.launch clusters({{.*}}) in (%{{.*}} = %c8{{.*}}, %{{.*}} = %c1{{.*}}, %{{.*}} = %c1{{.*}}) blocks
// CHECK:         arith.remui %{{.*}}, %c8 : index
// CHECK:         nvvm.cp.async.wait.group 0
// CHECK-NEXT:    gpu.barrier
// CHECK:         scf.if
// CHECK-COUNT-8:   llvm.store %{{.*}}, %{{.*}} : f32, !llvm.ptr<3>
// CHECK:         nvvm.cluster.arrive {aligned}
// CHECK-NEXT:    nvvm.cluster.wait {aligned}
// CHECK:         scf.if
// CHECK:           nvvm.mapa %{{.*}}, %c1_i32 : !llvm.ptr<3> -> !llvm.ptr<7>
// CHECK-NEXT:      llvm.load %{{.*}} : !llvm.ptr<7> -> f32
// CHECK:           nvvm.mapa %{{.*}}, %c7_i32 : !llvm.ptr<3> -> !llvm.ptr<7>
// CHECK:         nvvm.cluster.arrive {aligned}
// CHECK-NEXT:    nvvm.cluster.wait {aligned}
// CHECK-NEXT:    gpu.terminator
func.func @split(%a: memref<16x2048xf8E4M3FN>, %sa: memref<1x1xf32>, %b: memref<256x2048xf8E4M3FN>,
                 %sb: memref<1x1xf32>, %c: memref<16x256xf32>) {
  lowp.scaled_matmul %a[%sa], %b[%sb] into %c layouts(#lowp.per_tensor, #lowp.per_tensor)
      : memref<16x2048xf8E4M3FN>[memref<1x1xf32>], memref<256x2048xf8E4M3FN>[memref<1x1xf32>] -> memref<16x256xf32>
  return
}
