// RUN: lowp-opt %s --pass-pipeline='builtin.module(func.func(lowp-to-nvvm{chip=sm_90a translate-once=on},cse))' | FileCheck %s
// RUN: lowp-opt %s --pass-pipeline='builtin.module(func.func(lowp-to-nvvm{chip=sm_90a translate-once=on emulate=true},cse))' | FileCheck %s --check-prefix=EMU

// translate-once=on where K is not whole stages of 128: packed MXFP4 x MXFP4 at 200 x 136
// x 416 (13 scales a row: a row's stage of four is a window at any byte, the last stage
// holds one block). The workspaces are padded to K = 512 (four stages), the translation
// reads a stage's scales byte by byte, its block indices clamped to the row's last (12):
// the blocks past K read as the last inside, so the stage's range is the blocks inside
// K's and nothing past the row is read. The padded blocks (13-15) are stored as zeros;
// the TMA block's GEMM runs on K = 512 with four scales a row.
// CHECK-LABEL: func.func @window
// CHECK:         %[[A8:.*]] = gpu.alloc () : memref<102400xi8>
// CHECK:         %[[SA:.*]] = gpu.alloc () : memref<200x4xf32>
// CHECK:         memref.view %[[A8]][%c0][] : memref<102400xi8> to memref<200x512xf8E5M2>
// CHECK:         gpu.alloc () : memref<69632xi8>
// CHECK:         gpu.alloc () : memref<2x4xf32>
// CHECK:         memref.view {{.*}} to memref<136x512xf8E5M2>
// CHECK:         gpu.launch blocks
// A's blocks: inside K (13 blocks) translated, the stage's four scales a byte each from the
// clamped blocks.
// CHECK:           %[[INSIDE:.*]] = arith.cmpi ult, %[[J:.*]], %c13 : index
// CHECK:           scf.if %[[INSIDE]] -> (i1) {
// CHECK:             %[[B0:.*]] = arith.minui %{{.*}}, %c12 : index
// CHECK:             %[[B1:.*]] = arith.minui %{{.*}}, %c12 : index
// CHECK:             %[[B2:.*]] = arith.minui %{{.*}}, %c12 : index
// CHECK:             %[[B3:.*]] = arith.minui %{{.*}}, %c12 : index
// CHECK:             %[[ROW:.*]] = arith.muli %{{.*}}, %c13 : index
// CHECK:             arith.addi %[[ROW]], %[[B0]] : index
// CHECK:             llvm.load %{{.*}} {alignment = 1 : i64} : !llvm.ptr<1> -> i8
// CHECK:             arith.addi %[[ROW]], %[[B1]] : index
// CHECK:             llvm.load %{{.*}} {alignment = 1 : i64} : !llvm.ptr<1> -> i8
// CHECK:             arith.addi %[[ROW]], %[[B2]] : index
// CHECK:             llvm.load %{{.*}} {alignment = 1 : i64} : !llvm.ptr<1> -> i8
// CHECK:             arith.addi %[[ROW]], %[[B3]] : index
// CHECK:             llvm.load %{{.*}} {alignment = 1 : i64} : !llvm.ptr<1> -> i8
// CHECK:             memref.store %{{.*}}, %[[SA]][%{{.*}}, %{{.*}}] : memref<200x4xf32>
// CHECK:             nvvm.prmt
// CHECK:             llvm.store %{{.*}} {alignment = 16 : i64} : vector<4xi32>, !llvm.ptr<1>
// CHECK:             llvm.store %{{.*}} {alignment = 16 : i64} : vector<4xi32>, !llvm.ptr<1>
// CHECK:           } else {
// Past K, inside the padding: two stores of zeros into the row of 512.
// CHECK:             %[[PAD:.*]] = arith.cmpi ult, %[[J]], %c16 : index
// CHECK:             scf.if %[[PAD]] {
// CHECK:               %[[AT:.*]] = arith.muli %{{.*}}, %c512 : index
// CHECK:               %[[ZEROS:.*]] = vector.from_elements %c0_i32, %c0_i32, %c0_i32, %c0_i32 : vector<4xi32>
// CHECK:               llvm.store %[[ZEROS]], %{{.*}} {alignment = 16 : i64} : vector<4xi32>, !llvm.ptr<1>
// CHECK:               llvm.store %[[ZEROS]], %{{.*}} {alignment = 16 : i64} : vector<4xi32>, !llvm.ptr<1>
// CHECK:             }
// CHECK:             scf.yield %false : i1
// The TMA block on the padded views, then the op's pipeline on K = 416.
// CHECK:         nvgpu.tma.create.descriptor
// CHECK:         nvgpu.tma.create.descriptor
// CHECK:         gpu.launch {{.*}} in (%{{.*}} = %c384,
// CHECK:             nvvm.wgmma.mma_async {{.*}} A[<e5m2>, <one>, <row>], B[<e5m2>, <one>, <col>]
// CHECK:         gpu.launch {{.*}} in (%{{.*}} = %c256,
// CHECK:             nvvm.wgmma.mma_async {{.*}} A[<e4m3>, <one>, <row>], B[<e4m3>, <one>, <col>]
// CHECK-COUNT-5: gpu.dealloc
// CHECK-NEXT:    return
// EMU-LABEL: func.func @window
// EMU-COUNT-2:   memref.alloc()
// EMU:           memref.view {{.*}} to memref<200x512xf8E5M2>
// EMU-COUNT-2:   memref.alloc()
// EMU:           memref.view {{.*}} to memref<136x512xf8E5M2>
// EMU:           memref.alloc() {{.*}} : memref<4x1xi32>
// EMU:           scf.parallel
// EMU:             arith.minui %{{.*}}, %c12 : index
// EMU:             llvm.load %{{.*}} {alignment = 1 : i64} : !llvm.ptr -> i8
// EMU:             arith.cmpi ult, %{{.*}}, %c16 : index
// EMU-COUNT-5:   memref.dealloc
func.func @window(%a: memref<200x208x!lowp.packed<f4E2M1FN>>, %sa: memref<200x13xf8E8M0FNU>,
                  %b: memref<136x208x!lowp.packed<f4E2M1FN>>, %sb: memref<136x13xf8E8M0FNU>,
                  %c: memref<200x136xf32>) {
  lowp.scaled_matmul %a[%sa], %b[%sb] into %c layouts(#lowp.mx<32>, #lowp.mx<32>)
      : memref<200x208x!lowp.packed<f4E2M1FN>>[memref<200x13xf8E8M0FNU>], memref<136x208x!lowp.packed<f4E2M1FN>>[memref<136x13xf8E8M0FNU>] -> memref<200x136xf32>
  return
}
