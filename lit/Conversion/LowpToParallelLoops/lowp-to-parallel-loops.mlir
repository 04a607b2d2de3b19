// RUN: lowp-opt %s --pass-pipeline='builtin.module(func.func(lowp-to-parallel-loops,canonicalize,cse))' | FileCheck %s
// RUN: lowp-opt %s --pass-pipeline='builtin.module(lowp-gpu-generic-pipeline)' | FileCheck %s --check-prefix=MAP
// RUN: lowp-opt %s --pass-pipeline='builtin.module(lowp-gpu-generic-pipeline,nvvm-attach-target{chip=sm_90a features=+ptx84},gpu.module(lower-affine,convert-scf-to-cf,convert-gpu-to-nvvm,canonicalize,cse,reconcile-unrealized-casts),gpu-module-to-binary{format=isa})' | FileCheck %s --check-prefix=PTX
// RUN: lowp-opt %s --pass-pipeline='builtin.module(func.func(lowp-to-parallel-loops),lowp-lower-storage,func.func(scf-parallel-loop-tiling{parallel-loop-tile-sizes=64,4 no-min-max-bounds=true},gpu-map-parallel-loops,convert-parallel-loops-to-gpu),gpu-kernel-outlining,canonicalize,cse,rocdl-attach-target{chip=gfx942},gpu.module(lower-affine,convert-scf-to-cf,convert-gpu-to-rocdl,canonicalize,cse,reconcile-unrealized-casts),gpu-module-to-binary{format=isa})' | FileCheck %s --check-prefix=GCN

// The one-output-per-iteration form: a 2-D scf.parallel (columns, rows) over C; each
// iteration walks K in scale segments, decodes A[i, k] and B[j, k] by bit arithmetic and
// sums in f32; no allocation, no table. Its numerics against the oracle: the
// parallel_loops_form test of tests/integration/to_loops.rs (run on the CPU).
// CHECK-LABEL: func.func @mxfp4
// CHECK-NOT:   memref.alloc
// CHECK:       %[[A:.*]] = lowp.storage_cast %arg0 : memref<48x128x!lowp.packed<f4E2M1FN>> to memref<48x128xi8>
// CHECK:       scf.parallel (%[[J:.*]], %[[I:.*]]) = (%c0, %c0) to (%c40, %c48) step (%c1, %c1) {
// CHECK:         scf.for %{{.*}} = %c0 to %c8 step %c1 iter_args(%{{.*}} = %cst{{.*}}) -> (f32) {
// CHECK:           scf.for %[[K:.*]] = %{{.*}} to %{{.*}} step %c1 iter_args(%[[ACC:.*]] = %cst{{.*}}) -> (f32) {
// CHECK:             memref.load %[[A]][%[[I]], %{{.*}}] : memref<48x128xi8>
// CHECK:             memref.load %{{.*}}[%[[J]], %{{.*}}] : memref<40x128xi8>
// CHECK:             %[[SUM:.*]] = arith.addf %[[ACC]], %{{.*}} : f32
// CHECK-NEXT:        scf.yield %[[SUM]] : f32
// CHECK:           memref.load %{{.*}}[%[[I]], %{{.*}}] : memref<48x8xi8>
// CHECK:           memref.load %{{.*}}[%[[J]], %{{.*}}] : memref<40x8xi8>
// CHECK:         memref.load %arg4[%[[J]]] : memref<40xf32>
// CHECK:         memref.store %{{.*}}, %arg5[%[[I]], %[[J]]] : memref<48x40xf32>
// CHECK:         scf.reduce
// CHECK-NOT:   memref.alloc
// CHECK-LABEL: func.func @nvfp4_bf16
// CHECK:         scf.parallel
// CHECK-DAG:       %[[GA:.*]] = memref.load %arg4[] : memref<f32>
// CHECK-DAG:       %[[GB:.*]] = memref.load %arg5[] : memref<f32>
// CHECK:           %[[G:.*]] = arith.mulf %[[GA]], %[[GB]] : f32
// CHECK:           arith.mulf %{{.*}}, %[[G]] : f32
// CHECK:           arith.truncf %{{.*}} : f32 to bf16

// Mapped onto the GPU by upstream passes (lowp-gpu-generic-pipeline): 32 x 8 threads per
// block, columns on x.
// MAP:     func.func @mxfp4
// MAP:       gpu.launch_func @mxfp4_kernel::@mxfp4_kernel blocks in (%c2, %c6, %c1) threads in (%c32, %c8, %c1)
// MAP:     gpu.module @mxfp4_kernel
// MAP:       gpu.func @mxfp4_kernel({{.*}}) kernel
// MAP:         gpu.block_id  x
// MAP:         gpu.thread_id  x
// MAP-NOT:     memref.alloc
// MAP:         gpu.return

// And to PTX for sm_90a by NVVM and LLVM's NVPTX backend.
// PTX:     gpu.binary @mxfp4_kernel {{.*}}#nvvm.target<chip = "sm_90a", features = "+ptx84">{{.*}}assembly = "{{.*}}.version 8.4{{.*}}.target sm_90a{{.*}}.visible .entry mxfp4_kernel({{.*}}ld.global.b8{{.*}}mul.rn.f32{{.*}}add.rn.f32{{.*}}st.global.b32
// PTX:     gpu.binary @nvfp4_bf16_kernel {{.*}}cvt.rn.bf16.f32

// The same form for AMD (gfx942, 64 x 4 threads: one wave per row of a block) through
// convert-gpu-to-rocdl and LLVM's AMDGPU backend.
// GCN:     gpu.binary @mxfp4_kernel {{.*}}#rocdl.target<chip = "gfx942">{{.*}}.amdgcn_target \22amdgcn-amd-amdhsa--gfx942\22{{.*}}global_load_ubyte{{.*}}v_mul_f32{{.*}}v_add_f32

func.func @mxfp4(%a: memref<48x128x!lowp.packed<f4E2M1FN>>, %sa: memref<48x8xf8E8M0FNU>,
                 %b: memref<40x128x!lowp.packed<f4E2M1FN>>, %sb: memref<40x8xf8E8M0FNU>,
                 %bias: memref<40xf32>, %c: memref<48x40xf32>) {
  lowp.scaled_matmul %a[%sa], %b[%sb] bias %bias into %c layouts(#lowp.mx<32>, #lowp.mx<32>)
      : memref<48x128x!lowp.packed<f4E2M1FN>>[memref<48x8xf8E8M0FNU>],
        memref<40x128x!lowp.packed<f4E2M1FN>>[memref<40x8xf8E8M0FNU>] bias memref<40xf32>
        -> memref<48x40xf32>
  return
}

// NVFP4 with global scales on both sides (read in the body: a GPU host cannot read them)
// and a bf16 result.
func.func @nvfp4_bf16(%a: memref<16x64xf4E2M1FN>, %sa: memref<16x4xf8E4M3FN>,
                      %b: memref<8x64xf4E2M1FN>, %sb: memref<8x4xf8E4M3FN>,
                      %ga: memref<f32>, %gb: memref<f32>, %c: memref<16x8xbf16>) {
  lowp.scaled_matmul %a[%sa, %ga], %b[%sb, %gb] into %c
      layouts(#lowp.nvfp4<16, global>, #lowp.nvfp4<16, global>)
      : memref<16x64xf4E2M1FN>[memref<16x4xf8E4M3FN>, memref<f32>],
        memref<8x64xf4E2M1FN>[memref<8x4xf8E4M3FN>, memref<f32>] -> memref<16x8xbf16>
  return
}
