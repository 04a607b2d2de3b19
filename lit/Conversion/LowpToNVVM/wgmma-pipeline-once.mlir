// RUN: lowp-opt %s --pass-pipeline='builtin.module(func.func(lowp-to-nvvm{chip=sm_90a translate-once=on},cse))' | FileCheck %s
// RUN: lowp-opt %s --pass-pipeline='builtin.module(func.func(lowp-to-nvvm{chip=sm_90a translate-once=on emulate=true},cse))' | FileCheck %s --check-prefix=EMU
// RUN: lowp-opt %s --pass-pipeline='builtin.module(func.func(lowp-to-nvvm{chip=sm_90a},cse))' | FileCheck %s --check-prefix=OFF

// translate-once=on, packed MXFP4 x MXFP4 at 200 x 136 x 2048: five device workspaces
// (each operand's E5M2 codes, as bytes with a typed view, and its f32 scales per 128 of K:
// A's per row, B's per 128 rows; the flags, 2 + 2 tiles x 2 chunks of 1024), then three
// launches: the translation (2 x 4 blocks of 256 threads: A's blocks each row's stage from
// its own scale word, its scale stored by the stage's first block; B's each thread's rows'
// range of a stage into workgroup memory, then the stages' scales, then the codes; the
// block's flag by bar.red.or, stored by thread 0), the TMA block on the views (tensor maps
// of the two code workspaces; DeepSeek's scale layout), and the op's barrier pipeline on the
// stored codes. Both GEMM launches read their tile's two flag words (A's tile row, B's
// after A's 2) first. The workspaces are freed after the last launch.
// CHECK-LABEL: func.func @mxfp4
// CHECK:         %[[A8:.*]] = gpu.alloc () : memref<409600xi8>
// CHECK:         %[[SA:.*]] = gpu.alloc () : memref<200x16xf32>
// CHECK:         memref.view %[[A8]][%c0][] : memref<409600xi8> to memref<200x2048xf8E5M2>
// CHECK:         gpu.alloc () : memref<278528xi8>
// CHECK:         %[[SB:.*]] = gpu.alloc () : memref<2x16xf32>
// CHECK:         memref.view {{.*}} to memref<136x2048xf8E5M2>
// CHECK:         %[[FLAGS:.*]] = gpu.alloc () : memref<4x2xi32>
// CHECK:         gpu.launch blocks(%[[C:[^,]*]], %[[Y:[^,]*]], %{{.*}}) in (%{{.*}} = %c2, %{{.*}} = %c4, %{{.*}} = %c1) threads(%[[T:[^,]*]], {{.*}} in (%{{.*}} = %c256, %{{.*}} = %c1, %{{.*}} = %c1) workgroup(%[[W:.*]] : memref<520xi32, #gpu.address_space<workgroup>>)
// A's blocks: per row, its stage's scale word, the scale stored by the stage's first block.
// CHECK:           llvm.load %{{.*}} {alignment = 4 : i64} : !llvm.ptr<1> -> i32
// CHECK:           memref.store %{{.*}}, %[[SA]][%{{.*}}, %{{.*}}] : memref<200x16xf32>
// CHECK:           llvm.load %{{.*}} {alignment = 16 : i64} : !llvm.ptr<1> -> vector<4xi32>
// CHECK:           nvvm.prmt
// CHECK:           llvm.store %{{.*}} {alignment = 16 : i64} : vector<4xi32>, !llvm.ptr<1>
// CHECK:           nvvm.barrier #nvvm.reduction<or>
// CHECK:         } else {
// B's: the stages' ranges through workgroup memory, then the codes.
// CHECK:           memref.store %{{.*}}, %[[W]][%[[T]]]
// CHECK:           gpu.barrier
// CHECK:           arith.bitcast %{{.*}} : i32 to f32
// CHECK:           memref.store %{{.*}}, %[[SB]][%{{.*}}, %{{.*}}] : memref<2x16xf32>
// CHECK:           nvvm.barrier #nvvm.reduction<or>
// CHECK:           nvvm.prmt
// CHECK:         memref.store %{{.*}}, %[[FLAGS]][%[[Y]], %[[C]]] : memref<4x2xi32>
// CHECK:         nvgpu.tma.create.descriptor
// CHECK:         nvgpu.tma.create.descriptor
// CHECK:         gpu.launch {{.*}} in (%{{.*}} = %c384,
// CHECK:           memref.load %[[FLAGS]]
// CHECK:           memref.load %[[FLAGS]]
// CHECK:           %[[FAST:.*]] = arith.cmpi eq, %{{.*}}, %c0_i32 : i32
// CHECK:           scf.if %[[FAST]] {
// CHECK:             nvvm.cp.async.bulk.tensor.shared.cluster.global
// CHECK:             nvvm.wgmma.mma_async {{.*}} A[<e5m2>, <one>, <row>], B[<e5m2>, <one>, <col>]
// CHECK:         gpu.launch {{.*}} in (%{{.*}} = %c256,
// CHECK:           memref.load %[[FLAGS]]
// CHECK:           %[[REST:.*]] = arith.cmpi ne, %{{.*}}, %c0_i32 : i32
// CHECK:           scf.if %[[REST]] {
// CHECK:             nvvm.cp.async.shared.global
// CHECK:             nvvm.wgmma.mma_async {{.*}} A[<e4m3>, <one>, <row>], B[<e4m3>, <one>, <col>]
// CHECK:         gpu.dealloc %[[A8]]
// CHECK-COUNT-4: gpu.dealloc
// CHECK-NEXT:    return
// EMU-LABEL: func.func @mxfp4
// EMU-COUNT-5:   memref.alloc()
// EMU:           scf.parallel (%{{.*}}, %{{.*}}) = (%c0, %c0) to (%c4, %c2)
// EMU:           scf.parallel
// EMU:             scf.if
// EMU:           scf.parallel
// EMU:             scf.if
// EMU-COUNT-5:   memref.dealloc
// OFF-LABEL: func.func @mxfp4
// OFF-NOT:       gpu.alloc
// OFF:           gpu.launch
// OFF-NOT:       gpu.launch
func.func @mxfp4(%a: memref<200x1024x!lowp.packed<f4E2M1FN>>, %sa: memref<200x64xf8E8M0FNU>,
                 %b: memref<136x1024x!lowp.packed<f4E2M1FN>>, %sb: memref<136x64xf8E8M0FNU>,
                 %c: memref<200x136xf32>) {
  lowp.scaled_matmul %a[%sa], %b[%sb] into %c layouts(#lowp.mx<32>, #lowp.mx<32>)
      : memref<200x1024x!lowp.packed<f4E2M1FN>>[memref<200x64xf8E8M0FNU>], memref<136x1024x!lowp.packed<f4E2M1FN>>[memref<136x64xf8E8M0FNU>] -> memref<200x136xf32>
  return
}

// Ops the translation does not take keep one launch: FP8 (nothing to translate), MXFP4 x
// E4M3 MX (one operand 4-bit), and a skinny MXFP4 shape (M 16: the swap-AB block).
// CHECK-LABEL: func.func @others
// OFF-LABEL: func.func @others
// CHECK-NOT:     gpu.alloc
// CHECK-COUNT-3: gpu.launch blocks
// CHECK-NOT:     gpu.launch blocks
func.func @others(%a8: memref<256x256xf8E4M3FN>, %sa8: memref<256x8xf8E8M0FNU>,
                  %a4: memref<256x128x!lowp.packed<f4E2M1FN>>, %sa4: memref<256x8xf8E8M0FNU>,
                  %s4: memref<16x128x!lowp.packed<f4E2M1FN>>, %ss4: memref<16x8xf8E8M0FNU>,
                  %c: memref<256x256xf32>, %cs: memref<16x256xf32>) {
  lowp.scaled_matmul %a8[%sa8], %a8[%sa8] into %c layouts(#lowp.mx<32>, #lowp.mx<32>)
      : memref<256x256xf8E4M3FN>[memref<256x8xf8E8M0FNU>], memref<256x256xf8E4M3FN>[memref<256x8xf8E8M0FNU>] -> memref<256x256xf32>
  lowp.scaled_matmul %a4[%sa4], %a8[%sa8] into %c layouts(#lowp.mx<32>, #lowp.mx<32>)
      : memref<256x128x!lowp.packed<f4E2M1FN>>[memref<256x8xf8E8M0FNU>], memref<256x256xf8E4M3FN>[memref<256x8xf8E8M0FNU>] -> memref<256x256xf32>
  lowp.scaled_matmul %s4[%ss4], %a4[%sa4] into %cs layouts(#lowp.mx<32>, #lowp.mx<32>)
      : memref<16x128x!lowp.packed<f4E2M1FN>>[memref<16x8xf8E8M0FNU>], memref<256x128x!lowp.packed<f4E2M1FN>>[memref<256x8xf8E8M0FNU>] -> memref<16x256xf32>
  return
}
