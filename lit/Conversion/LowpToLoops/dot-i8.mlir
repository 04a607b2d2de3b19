// RUN: lowp-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(lowp-to-loops{dot=i8},canonicalize,cse))' | FileCheck %s
// RUN: lowp-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(lowp-to-loops{dot=i8 lanes=16},canonicalize,cse))' | FileCheck %s --check-prefix=ZMM
// The 512-bit form compiles to AVX512BW byte products (whatever the host running lit):
// RUN: lowp-opt %s --pass-pipeline='builtin.module(func.func(lowp-to-loops{dot=i8 lanes=16 parallel=false}))' | lowp-opt --lowp-cpu-pipeline | mlir-translate --mlir-to-llvmir | llc -O2 -mtriple=x86_64-unknown-linux-gnu -mcpu=skylake-avx512 | FileCheck %s --check-prefix=ASM
// RUN: not lowp-opt %s --pass-pipeline='builtin.module(func.func(lowp-to-loops{dot=i16}))' 2>&1 | FileCheck %s --check-prefix=BAD
// BAD: error: option 'dot' of lowp-to-loops: 'i16' is not accepted; expected f32, i8, vnni

// The byte kernel (its numerics: tests/integration/to_loops.rs, bit for bit against the
// f32 kernel). E2M1 is n/2 with |n| <= 12, E2M3 n/8 with |n| <= 60: A's codes go through a
// table of n + 12 (unsigned bytes), B's through one of n; four k a word, A in 6-row tiles
// of words, B in 16-column panels of words a K block (256 k: 64 words) at a time, with -12
// times B's column sum per 32-block (its low 16 bits: the sums are i16 here). M = 20 is
// skinny: groups of B's panels run in parallel through all of K (here a panel a group),
// each panel decoded into the group's slot (a panel's words and column terms), then
// swept by the four row tiles. B's words: eight rows at a
// time, 32 codes of a row a step, looked up by pshufb in four 16-byte tables (E2M3's 64
// codes; the code's top bits pick one), the 8 x 8 words transposed into the slot; rows
// past B (32..47 here) and the last word (k 96..99) one word at a time; then the column
// terms, eight columns at once from the stored words (pmaddubsw with ones, pmaddwd).
// Per 4 k: 2 word vectors of B, per row one word broadcast, pmaddubsw + addi into twelve
// vector<16xi16> that start from those column terms (a 32-block's sums reach at most 32 x
// 12 x 60 = 23040); per block the sums widened by pmaddwd with ones, converted, times 2^-4
// (the two shifts), then scaled into W as the f32 kernel does.
// CHECK-LABEL: func.func @mxfp4_x_mxfp6
// CHECK-DAG:   %[[UNIT:.*]] = arith.constant dense<6.250000e-02> : vector<8xf32>
// CHECK-DAG:   %[[ONES:.*]] = arith.constant dense<1> : vector<16xi16>
// CHECK-DAG:   arith.constant dense<[12, 13, 14, 15, 16, 18, 20, 24, 12, 11, 10, 9, 8, 6, 4, 0]> : vector<16xi32>
// CHECK-DAG:   arith.constant dense<[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 18, 20, 22, 24, 26, 28, 30, 32, 36, 40, 44, 48, 52, 56, 60, 0, -1, {{.*}}, -60]> : vector<64xi32>
// CHECK:       %[[AW:.*]] = memref.alloc() {alignment = 64 : i64} : memref<4x25x6xi32>
// CHECK:       arith.shli %{{.*}}, %c24_i32 : i32
// CHECK:       memref.store %{{.*}}, %[[AW]]
// CHECK:       scf.parallel (%[[G:[a-z0-9]+]]) = (%c0) to (%c3)
// CHECK-NEXT:    %[[BW:.*]] = memref.alloc() {alignment = 64 : i64} : memref<1x64x16xi32>
// CHECK-NEXT:    %[[CS:.*]] = memref.alloc() {alignment = 64 : i64} : memref<1x8x16xi32>
// CHECK:         scf.for %[[P:[a-z0-9]+]] = %[[G]] to
// CHECK:         memref.prefetch
// CHECK:         scf.if %{{.*}} {
// CHECK-NEXT:      scf.for %[[KK:.*]] = %c0 to %c96 step %c32 {
// CHECK-NEXT:        %[[CODES:.*]] = vector.load %{{.*}}[%{{.*}}, %[[KK]]] : memref<40x100xi8>, vector<32xi8>
// CHECK-COUNT-4:     llvm.call_intrinsic "llvm.x86.avx2.pshuf.b"
// CHECK:             vector.bitcast %{{.*}} : vector<32xi8> to vector<8xi32>
// CHECK-COUNT-24:    vector.shuffle {{.*}} : vector<8xi32>, vector<8xi32>
// CHECK-COUNT-8:     vector.store %{{.*}}, %[[BW]][%c0, %{{.*}}, %c0] : memref<1x64x16xi32>, vector<8xi32>
// CHECK:         } else {
// CHECK:           memref.store %{{.*}}, %[[BW]][%c0, %{{.*}}, %c0] : memref<1x64x16xi32>
// CHECK:         memref.store %{{.*}}, %[[BW]][%c0, %c24, %{{.*}}] : memref<1x64x16xi32>
// CHECK:         scf.for %[[F:.*]] = %c0 to %c4 step %c1 {
// CHECK:           %[[SUM:.*]] = scf.for {{.*}} -> (vector<8xi32>) {
// CHECK:             %[[W:.*]] = vector.load %[[BW]][%c0, %{{.*}}, %c0] : memref<1x64x16xi32>, vector<8xi32>
// CHECK:             %[[WB:.*]] = vector.bitcast %[[W]] : vector<8xi32> to vector<32xi8>
// CHECK:             llvm.call_intrinsic "llvm.x86.avx2.pmadd.ub.sw"(%{{.*}}, %[[WB]])
// CHECK:           %[[T:.*]] = arith.muli %[[SUM]], %{{.*}} : vector<8xi32>
// CHECK:           %[[LOW:.*]] = arith.andi %[[T]], %{{.*}} : vector<8xi32>
// CHECK:           vector.store %[[LOW]], %[[CS]][%c0, %[[F]], %c0]
// CHECK:       scf.for %{{.*}} = %c0 to %c4 step %c1
// CHECK:         scf.for %[[S0:.*]] = %{{.*}} to %c100 step %c32
// CHECK:           %[[START:.*]] = vector.load %[[CS]][%c0, {{.*}} : memref<1x8x16xi32>, vector<8xi32>
// CHECK:           %[[START16:.*]] = vector.bitcast %[[START]] : vector<8xi32> to vector<16xi16>
// CHECK:           %[[P:.*]]:12 = scf.for {{.*}} iter_args(%{{.*}} = %[[START16]], {{.*}}) -> (vector<16xi16>, vector<16xi16>, vector<16xi16>, vector<16xi16>, vector<16xi16>, vector<16xi16>, vector<16xi16>, vector<16xi16>, vector<16xi16>, vector<16xi16>, vector<16xi16>, vector<16xi16>)
// CHECK:             %[[B0:.*]] = vector.load %[[BW]][%c0, {{.*}} : memref<1x64x16xi32>, vector<8xi32>
// CHECK:             %[[B0B:.*]] = vector.bitcast %[[B0]] : vector<8xi32> to vector<32xi8>
// CHECK:             vector.load %[[BW]]
// CHECK:             %[[A:.*]] = memref.load %[[AW]]
// CHECK:             %[[AV:.*]] = vector.broadcast %[[A]] : i32 to vector<8xi32>
// CHECK:             %[[AB:.*]] = vector.bitcast %[[AV]] : vector<8xi32> to vector<32xi8>
// CHECK:             %[[PAIRS:.*]] = llvm.call_intrinsic "llvm.x86.avx2.pmadd.ub.sw"(%[[AB]], %[[B0B]]) : (vector<32xi8>, vector<32xi8>) -> vector<16xi16>
// CHECK-NEXT:        arith.addi %{{.*}}, %[[PAIRS]] : vector<16xi16>
// CHECK-COUNT-11:    llvm.call_intrinsic "llvm.x86.avx2.pmadd.ub.sw"
// CHECK-NOT:         llvm.x86.avx2.pmadd.wd
// CHECK:           scf.yield
// CHECK:           %[[WIDE:.*]] = llvm.call_intrinsic "llvm.x86.avx2.pmadd.wd"(%[[P]]#0, %[[ONES]]) : (vector<16xi16>, vector<16xi16>) -> vector<8xi32>
// CHECK:           %[[F:.*]] = arith.sitofp %[[WIDE]] : vector<8xi32> to vector<8xf32>
// CHECK:           %[[V:.*]] = arith.mulf %[[F]], %[[UNIT]] : vector<8xf32>
// CHECK:           vector.fma %[[V]], %{{.*}}, %{{.*}} : vector<8xf32>
// CHECK:       memref.dealloc %[[BW]]
// CHECK:       memref.dealloc %[[CS]]
// CHECK:       memref.dealloc %[[AW]]
// ZMM-LABEL:   func.func @mxfp4_x_mxfp6
// ZMM:         llvm.call_intrinsic "llvm.x86.avx512.pmaddubs.w.512"(%{{.*}}, %{{.*}}) : (vector<64xi8>, vector<64xi8>) -> vector<32xi16>
// ZMM:         llvm.call_intrinsic "llvm.x86.avx512.pmaddw.d.512"(%{{.*}}, %{{.*}}) : (vector<32xi16>, vector<32xi16>) -> vector<16xi32>
// ASM-LABEL:   mxfp4_x_mxfp6:
// ASM:         vpmaddubsw %zmm
func.func @mxfp4_x_mxfp6(%a: memref<20x100xf4E2M1FN>, %sa: memref<20x4xf8E8M0FNU>, %b: memref<40x100xf6E2M3FN>,
                 %sb: memref<40x4xf8E8M0FNU>, %c: memref<20x40xf32>) {
  lowp.scaled_matmul %a[%sa], %b[%sb] into %c layouts(#lowp.mx<32>, #lowp.mx<32>)
      : memref<20x100xf4E2M1FN>[memref<20x4xf8E8M0FNU>], memref<40x100xf6E2M3FN>[memref<40x4xf8E8M0FNU>] -> memref<20x40xf32>
  return
}

// -----

// Formats that are not small integers (E4M3 has NaN codes; E3M2 needs 448) keep the f32
// kernel under dot=i8.
// CHECK-LABEL: func.func @fp8_and_fp6e3m2
// CHECK-NOT:   llvm.call_intrinsic
// CHECK:       vector.fma
// ZMM-LABEL:   func.func @fp8_and_fp6e3m2
// ZMM-NOT:     llvm.call_intrinsic
func.func @fp8_and_fp6e3m2(%a: memref<8x64xf8E4M3FN>, %sa: memref<8x2xf8E8M0FNU>, %b: memref<8x64xf6E3M2FN>,
                 %sb: memref<8x2xf8E8M0FNU>, %c: memref<8x8xf32>) {
  lowp.scaled_matmul %a[%sa], %b[%sb] into %c layouts(#lowp.mx<32>, #lowp.mx<32>)
      : memref<8x64xf8E4M3FN>[memref<8x2xf8E8M0FNU>], memref<8x64xf6E3M2FN>[memref<8x2xf8E8M0FNU>] -> memref<8x8xf32>
  return
}

// -----

// Per-tensor E2M1: no scale along K; the i16 sums of an interval reach at most
// interval x 144, so the K block is 224 (the largest multiple of 4 within 32767 / 144).
// (17 rows: past the byte GEMV form's 16 without scales along K.)
// CHECK-LABEL: func.func @fp4_per_tensor
// CHECK:       scf.for %{{.*}} = %c0 to %c512 step %c224
// CHECK:       llvm.call_intrinsic "llvm.x86.avx2.pmadd.ub.sw"
// CHECK:       arith.sitofp
// ZMM-LABEL:   func.func @fp4_per_tensor
// ZMM:         llvm.call_intrinsic "llvm.x86.avx512.pmaddubs.w.512"
func.func @fp4_per_tensor(%a: memref<17x512xf4E2M1FN>, %sa: memref<1x1xf32>, %b: memref<8x512xf4E2M1FN>,
                 %sb: memref<1x1xf32>, %c: memref<17x8xf32>) {
  lowp.scaled_matmul %a[%sa], %b[%sb] into %c layouts(#lowp.per_tensor, #lowp.per_tensor)
      : memref<17x512xf4E2M1FN>[memref<1x1xf32>], memref<8x512xf4E2M1FN>[memref<1x1xf32>] -> memref<17x8xf32>
  return
}

// -----

// E2M3 x E2M3: a 32-block's sums may reach 32 x 60 x 60 = 115200, past i16: the pairs are
// widened by pmaddwd every step, into i32 sums. (9 rows: past the byte GEMV form's 8 with
// MX's segments.)
// CHECK-LABEL: func.func @mxfp6_e2m3
// CHECK:       scf.for {{.*}} -> (vector<8xi32>, vector<8xi32>, {{.*}})
// CHECK:         %[[PAIRS:.*]] = llvm.call_intrinsic "llvm.x86.avx2.pmadd.ub.sw"
// CHECK-NEXT:    %[[QUADS:.*]] = llvm.call_intrinsic "llvm.x86.avx2.pmadd.wd"(%[[PAIRS]], %{{.*}}) : (vector<16xi16>, vector<16xi16>) -> vector<8xi32>
// CHECK-NEXT:    arith.addi %{{.*}}, %[[QUADS]] : vector<8xi32>
// ZMM-LABEL:   func.func @mxfp6_e2m3
func.func @mxfp6_e2m3(%a: memref<9x64xf6E2M3FN>, %sa: memref<9x2xf8E8M0FNU>, %b: memref<8x64xf6E2M3FN>,
                 %sb: memref<8x2xf8E8M0FNU>, %c: memref<9x8xf32>) {
  lowp.scaled_matmul %a[%sa], %b[%sb] into %c layouts(#lowp.mx<32>, #lowp.mx<32>)
      : memref<9x64xf6E2M3FN>[memref<9x2xf8E8M0FNU>], memref<8x64xf6E2M3FN>[memref<8x2xf8E8M0FNU>] -> memref<9x8xf32>
  return
}
