// RUN: lowp-opt %s --pass-pipeline='builtin.module(func.func(lowp-to-nvvm{chip=sm_90a kernel=wgmma-registers},cse))' | FileCheck %s
// RUN: lowp-opt %s --pass-pipeline='builtin.module(func.func(lowp-to-nvvm{chip=sm_90a kernel=wgmma-registers split-k=1 emulate=true},cse))' | FileCheck %s --check-prefix=EMU

// kernel=wgmma-registers, packed MXFP4 x MXFP4 at 16 x 192 x 2048: 3 tiles of 64 columns,
// K's 16 stages split 8 ways by shape (a cluster per tile), one warpgroup a block. The
// prologue issues the ring's first 7 stages (each thread's 2 rows x 4 pieces of 4 bytes,
// its own slots; and its piece of its row pair's E8M0 scale words, threads with none
// copying 0 bytes), translates A's 2 stages of the split into shared memory and decodes
// its block scales, then one proxy fence and the block's only barrier; then the first
// stage's operands: the wait for the thread's own copies (6 groups may stay in flight),
// the warp's barrier (a row pair's scales were copied by two of its threads), the next
// copies. The loop runs two stages an iteration; each: four register-A instructions of
// one 32-block each (scale-d 0: each its own segment), one commit, the next stage's
// operands made while they run, one wait for all, the promotions; the second stage's sums
// kept only inside the block's range. The splits gathered through distributed shared
// memory.
// CHECK-LABEL: func.func @mxfp4
// CHECK:         gpu.launch clusters({{.*}}) in ({{.*}} = %c8, {{.*}} = %c1, {{.*}} = %c1) blocks{{.*}} threads({{.*}}) in ({{.*}} = %c128, {{.*}} = %c1, {{.*}} = %c1) dynamic_shared_memory_size
// CHECK-COUNT-9:   nvvm.cp.async.shared.global {{.*}}, 4, cache = ca
// CHECK:           nvvm.cp.async.commit.group
// CHECK:           nvvm.prmt
// CHECK:           nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}
// CHECK-NEXT:      gpu.barrier
// CHECK:           nvvm.cp.async.wait.group 6
// CHECK:           nvvm.bar.warp.sync
// CHECK-COUNT-9:   nvvm.cp.async.shared.global {{.*}}, 4, cache = ca
// CHECK:           nvvm.cp.async.commit.group
// CHECK:           scf.for {{.*}} step %c2 iter_args
// CHECK-NOT:         gpu.barrier
// CHECK:             nvvm.wgmma.fence.aligned
// CHECK-COUNT-4:     llvm.inline_asm has_side_effects asm_dialect = att "wgmma.mma_async.sync.aligned.m64n16k32.f32.e4m3.e4m3 {$0, $1, $2, $3, $4, $5, $6, $7}, {$8, $9, $10, $11}, $12, 0, 1, 1;", "=f,=f,=f,=f,=f,=f,=f,=f,r,r,r,r,l"
// CHECK:             nvvm.wgmma.commit.group.sync.aligned
// CHECK:             nvvm.cp.async.wait.group 6
// CHECK-NEXT:        nvvm.bar.warp.sync
// CHECK:             nvvm.cp.async.commit.group
// CHECK:             nvvm.prmt
// CHECK:             llvm.inline_asm has_side_effects asm_dialect = att "wgmma.wait_group.sync.aligned 0;"
// CHECK:             llvm.intr.fma
// CHECK:             nvvm.wgmma.fence.aligned
// CHECK-COUNT-4:     wgmma.mma_async.sync.aligned.m64n16k32.f32.e4m3.e4m3
// CHECK:             nvvm.wgmma.commit.group.sync.aligned
// CHECK:             nvvm.cp.async.wait.group 6
// CHECK:             llvm.inline_asm has_side_effects asm_dialect = att "wgmma.wait_group.sync.aligned 0;"
// CHECK:             llvm.intr.fma
// CHECK:             arith.cmpi ult
// CHECK-COUNT-8:     arith.select {{.*}} : f32
// CHECK-NEXT:        scf.yield
// CHECK:           nvvm.cluster.arrive {aligned}
// CHECK:           nvvm.mapa
// CHECK-NOT:     nvvm.wgmma.mma_async
// EMU-LABEL: func.func @mxfp4
// EMU-NOT:       gpu.launch
// EMU-NOT:       llvm.inline_asm
// EMU:           scf.parallel
func.func @mxfp4(%a: memref<16x1024x!lowp.packed<f4E2M1FN>>, %sa: memref<16x64xf8E8M0FNU>,
                 %b: memref<192x1024x!lowp.packed<f4E2M1FN>>, %sb: memref<192x64xf8E8M0FNU>,
                 %c: memref<16x192xf32>) {
  lowp.scaled_matmul %a[%sa], %b[%sb] into %c layouts(#lowp.mx<32>, #lowp.mx<32>)
      : memref<16x1024x!lowp.packed<f4E2M1FN>>[memref<16x64xf8E8M0FNU>], memref<192x1024x!lowp.packed<f4E2M1FN>>[memref<192x64xf8E8M0FNU>] -> memref<16x192xf32>
  return
}

