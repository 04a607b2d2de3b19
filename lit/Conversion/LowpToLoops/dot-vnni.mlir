// RUN: lowp-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(lowp-to-loops{dot=vnni},canonicalize,cse))' | FileCheck %s
// RUN: lowp-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(lowp-to-loops{dot=i8},canonicalize,cse))' | FileCheck %s --check-prefix=I8
// RUN: lowp-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(lowp-to-loops{dot=vnni lanes=16 gemv=false},canonicalize,cse))' | FileCheck %s --check-prefix=ZMM
// The 512-bit form compiles to AVX512-VNNI dot products (whatever the host running lit):
// RUN: lowp-opt %s --pass-pipeline='builtin.module(func.func(lowp-to-loops{dot=vnni lanes=16 parallel=false}))' | lowp-opt --lowp-cpu-pipeline | mlir-translate --mlir-to-llvmir | llc -O2 -mtriple=x86_64-unknown-linux-gnu -mcpu=icelake-server | FileCheck %s --check-prefix=ASM

// The byte kernel on VNNI (`dot=vnni`; its numerics: tests/integration/to_loops.rs, bit for
// bit against the f32 kernel): the same tables, words, panels and column terms as
// `dot=i8` (dot-i8.mlir), but each step's four products of a column go into its i32 sum
// by one `vpdpbusd` (A's bytes unsigned, B's signed, as pmaddubsw takes them), so the
// sums are i32 from the start (the column terms whole, not their low 16 bits) and nothing
// widens them at a block's end. E2M3 x E2M3 (a 32-block's sums up to 115200, past i16):
// dot=i8 needs a pmaddwd a step there.
// CHECK-LABEL: func.func @mxfp6_e2m3
// CHECK-DAG:   %[[UNIT:.*]] = arith.constant dense<1.562500e-02> : vector<8xf32>
// CHECK:       %[[START:.*]] = vector.load %{{.*}} : memref<1x8x16xi32>, vector<8xi32>
// CHECK:       %[[P:.*]]:12 = scf.for {{.*}} iter_args(%{{.*}} = %[[START]], {{.*}}) -> (vector<8xi32>, vector<8xi32>, vector<8xi32>, vector<8xi32>, vector<8xi32>, vector<8xi32>, vector<8xi32>, vector<8xi32>, vector<8xi32>, vector<8xi32>, vector<8xi32>, vector<8xi32>)
// CHECK:         %[[B0:.*]] = vector.bitcast %{{.*}} : vector<8xi32> to vector<32xi8>
// CHECK:         vector.broadcast %{{.*}} : i32 to vector<8xi32>
// CHECK-NEXT:    %[[AB:.*]] = vector.bitcast %{{.*}} : vector<8xi32> to vector<32xi8>
// CHECK-NEXT:    %[[S:.*]] = llvm.call_intrinsic "llvm.x86.avx512.vpdpbusd.256"(%{{.*}}, %[[AB]], %[[B0]]) : (vector<8xi32>, vector<32xi8>, vector<32xi8>) -> vector<8xi32>
// CHECK-COUNT-11: llvm.call_intrinsic "llvm.x86.avx512.vpdpbusd.256"
// CHECK-NOT:     llvm.x86.avx2.pmadd
// CHECK:         scf.yield %[[S]],
// CHECK-NOT:   llvm.x86.avx2.pmadd.wd
// CHECK:       %[[F:.*]] = arith.sitofp %[[P]]#0 : vector<8xi32> to vector<8xf32>
// CHECK:       arith.mulf %[[F]], %[[UNIT]] : vector<8xf32>
// I8-LABEL:    func.func @mxfp6_e2m3
// I8:          llvm.call_intrinsic "llvm.x86.avx2.pmadd.ub.sw"
// I8-NEXT:     llvm.call_intrinsic "llvm.x86.avx2.pmadd.wd"
// With 16 lanes (`gemv=false`: the GEMV form would take these 20 rows) and 32-k segments
// the row tiles are 6 x 32 (20 rows: 4 tiles) and keep
// their f32 sums in registers through a K block's segments (`Plan::carrying_sums`): W's
// tile loaded before the segment loop, carried as its 12 results, each segment's scaled
// sums FMA'd into them, stored after it.
// ZMM-LABEL:   func.func @mxfp6_e2m3
// ZMM:         %[[W:.*]] = memref.alloc() {alignment = 64 : i64} : memref<4x2x6x32xf32>
// ZMM:         %[[W0:.*]] = vector.load %[[W]][%[[MT:.*]], %[[PB:.*]], %c0, %c0] : memref<4x2x6x32xf32>, vector<16xf32>
// ZMM-COUNT-11: vector.load %[[W]][%[[MT]], %[[PB]], %c{{[0-5]}}, %c{{0|16}}]
// ZMM-NEXT:    %[[SUMS:.*]]:12 = scf.for %{{.*}} = %c0 to %c64 step %c32 iter_args(%[[HELD:.*]] = %[[W0]], {{.*}}) -> (vector<16xf32>, {{.*}}) {
// ZMM:           llvm.call_intrinsic "llvm.x86.avx512.vpdpbusd.512"(%{{.*}}, %{{.*}}, %{{.*}}) : (vector<16xi32>, vector<64xi8>, vector<64xi8>) -> vector<16xi32>
// ZMM-NOT:       llvm.x86.avx512.pmaddw.d.512
// ZMM:           %[[NEW:.*]] = vector.fma %{{.*}}, %{{.*}}, %[[HELD]] : vector<16xf32>
// ZMM:           scf.yield %[[NEW]],
// ZMM:         vector.store %[[SUMS]]#0, %[[W]][%[[MT]], %[[PB]], %c0, %c0]
// ZMM-COUNT-11: vector.store %[[SUMS]]#{{[0-9]+}}, %[[W]][%[[MT]], %[[PB]]
// ASM-LABEL:   mxfp6_e2m3:
// ASM:         vpdpbusd %zmm
func.func @mxfp6_e2m3(%a: memref<20x64xf6E2M3FN>, %sa: memref<20x2xf8E8M0FNU>, %b: memref<40x64xf6E2M3FN>,
                 %sb: memref<40x2xf8E8M0FNU>, %c: memref<20x40xf32>) {
  lowp.scaled_matmul %a[%sa], %b[%sb] into %c layouts(#lowp.mx<32>, #lowp.mx<32>)
      : memref<20x64xf6E2M3FN>[memref<20x2xf8E8M0FNU>], memref<40x64xf6E2M3FN>[memref<40x2xf8E8M0FNU>] -> memref<20x40xf32>
  return
}

// -----

// E2M4 (n / 16, |n| <= 124): A's bytes n + 124 up to 248 times B's 124 would saturate
// pmaddubsw's i16 pair sums, so dot=i8 keeps the f32 kernel; vpdpbusd sums each step in
// i32 and takes it. Per tensor, an interval's sum stays within 2^24 up to 1091 k: the K
// block stays the default 256.
// CHECK-LABEL: func.func @e2m4_per_tensor
// CHECK:       scf.for %{{.*}} = %c0 to %c512 step %c256
// CHECK:       llvm.call_intrinsic "llvm.x86.avx512.vpdpbusd.256"
// CHECK:       arith.sitofp
// I8-LABEL:    func.func @e2m4_per_tensor
// I8-NOT:      llvm.call_intrinsic
// I8:          vector.fma
// ZMM-LABEL:   func.func @e2m4_per_tensor
// ZMM:         llvm.call_intrinsic "llvm.x86.avx512.vpdpbusd.512"
// ASM-LABEL:   e2m4_per_tensor:
// ASM:         vpdpbusd %zmm
func.func @e2m4_per_tensor(%a: memref<20x512x!lowp.mf<e2m4>>, %sa: memref<1x1xf32>, %b: memref<40x512x!lowp.mf<e2m4>>,
                 %sb: memref<1x1xf32>, %c: memref<20x40xf32>) {
  lowp.scaled_matmul %a[%sa], %b[%sb] into %c layouts(#lowp.per_tensor, #lowp.per_tensor)
      : memref<20x512x!lowp.mf<e2m4>>[memref<1x1xf32>], memref<40x512x!lowp.mf<e2m4>>[memref<1x1xf32>] -> memref<20x40xf32>
  return
}

// -----

// FP8 has NaN codes and needs wider integers: the f32 kernel under dot=vnni too.
// CHECK-LABEL: func.func @fp8
// CHECK-NOT:   llvm.call_intrinsic
// CHECK:       vector.fma
func.func @fp8(%a: memref<8x64xf8E4M3FN>, %sa: memref<1x1xf32>, %b: memref<8x64xf8E4M3FN>,
                 %sb: memref<1x1xf32>, %c: memref<8x8xf32>) {
  lowp.scaled_matmul %a[%sa], %b[%sb] into %c layouts(#lowp.per_tensor, #lowp.per_tensor)
      : memref<8x64xf8E4M3FN>[memref<1x1xf32>], memref<8x64xf8E4M3FN>[memref<1x1xf32>] -> memref<8x8xf32>
  return
}

// -----

// NVFP4 on both sides (UE4M3 scales, every product within 2^-18 ..= 448^2): the formats'
// unit (E2M1 x E2M1: 1/2 x 1/2) goes onto A's segment scales as they are decoded, exact,
// and each segment's converted sums go into the FMA with `sa * sb` as they are, one
// multiply a sum fewer, the same bits (`Plan::unit_in_scales`).
// CHECK-LABEL: func.func @nvfp4
// CHECK-DAG:   %[[QUARTER:.*]] = arith.constant 2.500000e-01 : f32
// CHECK:       %[[SA:.*]] = arith.select %{{.*}}, %{{.*}}, %{{.*}} : f32
// CHECK-NEXT:  %[[SAU:.*]] = arith.mulf %[[SA]], %[[QUARTER]] : f32
// CHECK:       memref.store %{{.*}}, %{{.*}} : memref<4x4x6xf32>
// CHECK:       %[[S:.*]]:12 = scf.for
// CHECK:       llvm.call_intrinsic "llvm.x86.avx512.vpdpbusd.256"
// CHECK:       %[[F:.*]] = arith.sitofp %[[S]]#0 : vector<8xi32> to vector<8xf32>
// CHECK-NOT:   arith.mulf %[[F]]
// CHECK:       vector.fma %[[F]], %{{.*}}, %{{.*}} : vector<8xf32>
func.func @nvfp4(%a: memref<20x64xf4E2M1FN>, %sa: memref<20x4xf8E4M3FN>, %b: memref<40x64xf4E2M1FN>,
                 %sb: memref<40x4xf8E4M3FN>, %c: memref<20x40xf32>) {
  lowp.scaled_matmul %a[%sa], %b[%sb] into %c layouts(#lowp.nvfp4<16>, #lowp.nvfp4<16>)
      : memref<20x64xf4E2M1FN>[memref<20x4xf8E4M3FN>], memref<40x64xf4E2M1FN>[memref<40x4xf8E4M3FN>] -> memref<20x40xf32>
  return
}
