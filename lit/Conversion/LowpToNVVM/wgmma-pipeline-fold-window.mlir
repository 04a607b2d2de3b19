// RUN: lowp-opt %s --pass-pipeline='builtin.module(func.func(lowp-to-nvvm{chip=sm_90a},cse))' | FileCheck %s
// RUN: lowp-opt %s --pass-pipeline='builtin.module(func.func(lowp-to-nvvm{chip=sm_90a kernel=wgmma-specialized},cse))' | FileCheck %s --check-prefix=WS

// fold-scales (auto) where K is not whole stages of 128: MXFP4 x MXFP4 at K = 320 (2.5
// stages), 10 E8M0 scales a row, so a row's 4 of a stage are neither 4-byte aligned nor,
// in the last stage, inside the row. The scan reads them byte by byte (4 `i8` loads a
// stage, those past the row's last column reading the last: 3 stages x 4 x (A + B) in
// the first pass, again in the second), each stage's copies bring the next stage's
// scales as a window of two words, and the thread that copied a row settles it after its
// wait, before the stage's barrier: the two words (a load each, as `decode_scales` reads
// a window) shifted right by 8 x (address & 3), and in the last stage (2) its bytes past
// the row's 2 (K 256-319) replaced by the last inside (byte 1 x 0x01010101, kept where
// 0xFFFF0000), stored back as the entry's first word, which the translations, the decoded
// scales and B's anchor then read as aligned.
// CHECK-LABEL: func.func @mxfp4
// CHECK-COUNT-12: llvm.load %{{.*}} {alignment = 1 : i64} : !llvm.ptr<1> -> i8
// CHECK:         nvvm.barrier #nvvm.reduction<or>
// CHECK:         nvvm.barrier #nvvm.reduction<or>
// CHECK:         scf.if %{{.*}} -> (f32,
// CHECK-NEXT:      scf.if %{{.*}} -> (f32,
// CHECK:             nvvm.cp.async.wait.group 2
// CHECK:             llvm.load %{{.*}} {alignment = 4 : i64} : !llvm.ptr<3> -> i32
// CHECK:             llvm.load %{{.*}} {alignment = 4 : i64} : !llvm.ptr<3> -> i32
// CHECK:             %[[SKIP:.*]] = arith.andi %{{.*}}, %c3_i64 : i64
// CHECK:             %[[BOTH:.*]] = arith.ori %{{.*}}, %{{.*}} : i64
// CHECK-NEXT:        %[[PLACED:.*]] = arith.shrui %[[BOTH]], %{{.*}} : i64
// CHECK-NEXT:        %[[WORD:.*]] = arith.trunci %[[PLACED]] : i64 to i32
// CHECK-NEXT:        %[[LAST:.*]] = arith.cmpi eq, %{{.*}}, %c2 : index
// CHECK:             arith.muli %{{.*}}, %c16843009_i32 : i32
// CHECK:             arith.andi %{{.*}}, %c-65536_i32 : i32
// CHECK:             %[[HELD:.*]] = arith.ori
// CHECK-NEXT:        %[[SETTLED:.*]] = arith.select %[[LAST]], %[[HELD]], %[[WORD]] : i32
// CHECK-NEXT:        llvm.store %[[SETTLED]], %{{.*}} {alignment = 4 : i64} : i32, !llvm.ptr<3>
// CHECK:             gpu.barrier

// Warp-specialized: the producers settle in their loop's publish and, for the stages
// still in flight after it, before they meet (named barrier 1) for the last publishes.
// WS-LABEL:    func.func @mxfp4
// WS:          nvvm.barrier #nvvm.reduction<or>
// WS:          nvvm.cp.async.wait.group 0
// WS:          scf.for
// WS:            arith.muli %{{.*}}, %c16843009_i32 : i32
// WS:          nvvm.barrier id = %{{.*}} number_of_threads = %{{.*}}
func.func @mxfp4(%a: memref<256x160x!lowp.packed<f4E2M1FN>>, %sa: memref<256x10xf8E8M0FNU>,
                 %b: memref<128x160x!lowp.packed<f4E2M1FN>>, %sb: memref<128x10xf8E8M0FNU>,
                 %c: memref<256x128xf32>) {
  lowp.scaled_matmul %a[%sa], %b[%sb] into %c layouts(#lowp.mx<32>, #lowp.mx<32>)
      : memref<256x160x!lowp.packed<f4E2M1FN>>[memref<256x10xf8E8M0FNU>], memref<128x160x!lowp.packed<f4E2M1FN>>[memref<128x10xf8E8M0FNU>] -> memref<256x128xf32>
  return
}
