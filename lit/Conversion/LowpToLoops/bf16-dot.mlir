// RUN: lowp-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(lowp-to-loops{bf16-dot=true},canonicalize,cse))' | FileCheck %s
// RUN: lowp-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(lowp-to-loops{bf16-dot=true lanes=16},canonicalize,cse))' | FileCheck %s --check-prefix=ZMM
// RUN: lowp-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(lowp-to-loops{dot=i8 bf16-dot=true},canonicalize,cse))' | FileCheck %s --check-prefix=I8
// The 512-bit form compiles to AVX512-BF16 dot products (whatever the host running lit):
// RUN: lowp-opt %s --pass-pipeline='builtin.module(func.func(lowp-to-loops{bf16-dot=true lanes=16 parallel=false}))' | lowp-opt --lowp-cpu-pipeline | mlir-translate --mlir-to-llvmir | llc -O2 -mtriple=x86_64-unknown-linux-gnu -mcpu=sapphirerapids | FileCheck %s --check-prefix=ASM
// RUN: not lowp-opt %s --pass-pipeline='builtin.module(func.func(lowp-to-loops{bf16-dot=maybe}))' 2>&1 | FileCheck %s --check-prefix=BAD
// BAD: error: option 'bf16-dot' of lowp-to-loops

// The f32 kernel on bf16 pairs (its numerics: tests/integration/to_loops.rs,
// bf16_pairs_match_the_oracle). E4M3 and E5M2 values, and their products, are exact normal
// bf16 / f32 numbers: A's row tiles (6 rows, 64 k) are 32 words a row, each two bf16 (k's
// f32 pattern's high half below k + 1's; k past K zero), straight from the codes through
// two tables of A's values' bf16 patterns (in a word's low half: E4M3's 2^-9 = 0x3B00; in
// its high half: 0x3B000000); each K block of B's decoded panel (256 k of 16 columns) 128
// words a column, packed from the decoded f32; then per two k a tile takes 2 word vectors
// of B, a word broadcast per row and 12 vdpbf16ps into the f32 sums (a 32-block, 16 pairs,
// unrolled), which are scaled as the f32 kernel's.
//
// With MX's E8M0 scales the row tiles come twice, under a branch on a scan of both
// operands' scales (codes 80 ..= 159: 2^-47 ..= 2^32, `tiles_fold`). Where all are in it,
// the scales fold into the pairs: each of A's patterns times its block's scale as the word
// is made (in f32, exact), B's decoded values times their columns' scales (a vector a
// segment of 16 pairs) as its words are, and each K block's sums go into W as they are
// (one interval, a loop over its pairs: no product of scales, no FMA per segment).
// Else the unfolded copy below.
// CHECK-LABEL: func.func @mxfp8
// CHECK-DAG:   %[[HIGHS:.*]] = arith.constant dense<"0x000000000000003B0000803B{{.*}}"> : vector<256xi32>
// CHECK-DAG:   %[[LOWS:.*]] = arith.constant dense<"0x00000000003B0000803B0000{{.*}}"> : vector<256xi32>
// CHECK:       %[[HIGH:.*]] = memref.alloca() {alignment = 64 : i64} : memref<256xi32>
// CHECK-NEXT:  vector.store %[[HIGHS]], %[[HIGH]][%c0]
// CHECK-NEXT:  %[[LOW:.*]] = memref.alloca() {alignment = 64 : i64} : memref<256xi32>
// CHECK-NEXT:  vector.store %[[LOWS]], %[[LOW]][%c0]
// CHECK:       %[[SA:.*]] = lowp.storage_cast %arg1 : memref<20x2xf8E8M0FNU> to memref<20x2xi8>
// CHECK:       %[[SB:.*]] = lowp.storage_cast %arg3 : memref<40x2xf8E8M0FNU> to memref<40x2xi8>
// CHECK:       %[[INA:.*]] = scf.for %{{.*}} = %c0 to %c20 step %c1 iter_args(%{{.*}} = %true) -> (i1) {
// CHECK:         memref.load %[[SA]]
// CHECK:         %[[FROM:.*]] = arith.subi %{{.*}}, %c80_i32 : i32
// CHECK-NEXT:    arith.cmpi ule, %[[FROM]], %c79_i32 : i32
// CHECK:       vector.reduction <and>, %{{.*}} : vector<32xi1> into i1
// CHECK:       %[[INB:.*]] = scf.for %{{.*}} = %c0 to %c40 step %c1 iter_args(%{{.*}} = %true) -> (i1) {
// CHECK:         memref.load %[[SB]]
// CHECK:       }
// CHECK:       {{^}}    scf.if %{{.*}} {
// CHECK-NOT:     memref<4x2x6xf32>
// CHECK:         %[[AF:.*]] = memref.alloc() {alignment = 64 : i64} : memref<4x32x6xi32>
// CHECK:             %[[LOF:.*]] = memref.load %{{.*}}[%{{.*}}] : memref<256xi32>
// CHECK:             %[[HIF:.*]] = memref.load %{{.*}}[%{{.*}}] : memref<256xi32>
// CHECK:             memref.load %[[SA]]
// CHECK:             %[[S:.*]] = arith.bitcast %{{.*}} : i32 to f32
// CHECK-NEXT:        %[[L32:.*]] = arith.shli %[[LOF]], %c16_i32 : i32
// CHECK-NEXT:        %[[LF:.*]] = arith.bitcast %[[L32]] : i32 to f32
// CHECK-NEXT:        %[[LS:.*]] = arith.mulf %[[LF]], %[[S]] : f32
// CHECK-NEXT:        %[[LB:.*]] = arith.bitcast %[[LS]] : f32 to i32
// CHECK-NEXT:        %[[L16:.*]] = arith.shrui %[[LB]], %c16_i32 : i32
// CHECK-NEXT:        %[[HF:.*]] = arith.bitcast %[[HIF]] : i32 to f32
// CHECK-NEXT:        %[[HS:.*]] = arith.mulf %[[HF]], %[[S]] : f32
// CHECK-NEXT:        %[[HB:.*]] = arith.bitcast %[[HS]] : f32 to i32
// CHECK-NEXT:        arith.ori %[[L16]], %[[HB]] : i32
// CHECK:         %[[PF:.*]] = memref.alloc() {alignment = 64 : i64} : memref<1x128x16xi32>
// CHECK:           scf.for %[[Q0:.*]] = %c0 to %c32 step %c16 {
// CHECK:             %[[SBV:.*]] = vector.load %{{.*}}[%{{.*}}, %{{.*}}, %c0] : memref<3x2x16xf32>, vector<8xf32>
// CHECK:             scf.for %{{.*}} = %[[Q0]] to %{{.*}} step %c1 {
// CHECK:               %[[BV:.*]] = vector.load
// CHECK-NEXT:          arith.mulf %[[BV]], %[[SBV]] : vector<8xf32>
// CHECK:               vector.store %{{.*}}, %[[PF]]
// CHECK:           %[[SUMS:.*]]:12 = scf.for %{{.*}} = %c0 to %c32 step %c1 iter_args
// CHECK-COUNT-12:    llvm.call_intrinsic "llvm.x86.avx512bf16.dpbf16ps.256"
// CHECK:           arith.addf %{{.*}}, %[[SUMS]]#0 : vector<8xf32>
// CHECK-NOT:     vector.fma
// CHECK:       {{^}}    } else {
// CHECK-NOT:   memref<4x64x6xf32>
// CHECK:       %[[AP2:.*]] = memref.alloc() {alignment = 64 : i64} : memref<4x32x6xi32>
// CHECK:         scf.for %[[KP:.*]] = %c0 to %c32 step %c1 {
// CHECK-NEXT:      %[[K0:.*]] = arith.muli %[[KP]], %c2 : index
// CHECK-NEXT:      %[[C0:.*]] = memref.load %[[CODES:.*]][%[[ROW:.*]], %[[K0]]] : memref<20x64xi8>
// CHECK-NEXT:      %[[I0:.*]] = arith.index_castui %[[C0]] : i8 to index
// CHECK-NEXT:      %[[LO:.*]] = memref.load %[[LOW]][%[[I0]]] : memref<256xi32>
// CHECK-NEXT:      %[[K1:.*]] = arith.addi %[[K0]], %c1 : index
// CHECK-NEXT:      %[[C1:.*]] = memref.load %[[CODES]][%[[ROW]], %[[K1]]] : memref<20x64xi8>
// CHECK-NEXT:      %[[I1:.*]] = arith.index_castui %[[C1]] : i8 to index
// CHECK-NEXT:      %[[HI:.*]] = memref.load %[[HIGH]][%[[I1]]] : memref<256xi32>
// CHECK-NEXT:      %[[W:.*]] = arith.ori %[[LO]], %[[HI]] : i32
// CHECK-NEXT:      %[[W0:.*]] = arith.select %{{.*}}, %[[W]], %c0_i32 : i32
// CHECK-NEXT:      memref.store %[[W0]], %[[AP2]][%{{.*}}, %[[KP]], %{{.*}}] : memref<4x32x6xi32>
// CHECK:       %[[BP:.*]] = memref.alloc() {alignment = 64 : i64} : memref<1x256x16xf32>
// CHECK:       %[[PP:.*]] = memref.alloc() {alignment = 64 : i64} : memref<1x128x16xi32>
// CHECK:         %[[BLO:.*]] = vector.bitcast %{{.*}} : vector<8xf32> to vector<8xi32>
// CHECK:         %[[BHI:.*]] = vector.bitcast %{{.*}} : vector<8xf32> to vector<8xi32>
// CHECK:         %[[BHI0:.*]] = arith.select %{{.*}}, %[[BHI]], %{{.*}} : vector<8xi32>
// CHECK:         %[[BL16:.*]] = arith.shrui %[[BLO]], %{{.*}} : vector<8xi32>
// CHECK:         %[[BH16:.*]] = arith.andi %[[BHI0]], %{{.*}} : vector<8xi32>
// CHECK:         %[[BW:.*]] = arith.ori %[[BL16]], %[[BH16]] : vector<8xi32>
// CHECK:         vector.store %[[BW]], %[[PP]]
// CHECK:             %[[B0:.*]] = vector.load %[[PP]]{{.*}} : memref<1x128x16xi32>, vector<8xi32>
// CHECK-NEXT:        %[[B0H:.*]] = vector.bitcast %[[B0]] : vector<8xi32> to vector<16xbf16>
// CHECK:             %[[A:.*]] = memref.load %[[AP2]]
// CHECK-NEXT:        %[[AV:.*]] = vector.broadcast %[[A]] : i32 to vector<8xi32>
// CHECK-NEXT:        %[[AH:.*]] = vector.bitcast %[[AV]] : vector<8xi32> to vector<16xbf16>
// CHECK-NEXT:        llvm.call_intrinsic "llvm.x86.avx512bf16.dpbf16ps.256"(%{{.*}}, %[[AH]], %[[B0H]]) : (vector<8xf32>, vector<16xbf16>, vector<16xbf16>) -> vector<8xf32>
// CHECK-COUNT-191:   llvm.call_intrinsic "llvm.x86.avx512bf16.dpbf16ps.256"
// CHECK:           vector.fma
// ZMM-LABEL:   func.func @mxfp8
// ZMM:         llvm.call_intrinsic "llvm.x86.avx512bf16.dpbf16ps.512"(%{{.*}}, %{{.*}}, %{{.*}}) : (vector<16xf32>, vector<32xbf16>, vector<32xbf16>) -> vector<16xf32>
// I8-LABEL:    func.func @mxfp8
// I8:          llvm.x86.avx512bf16.dpbf16ps.256
// ASM-LABEL:   mxfp8:
// ASM:         vdpbf16ps %zmm
func.func @mxfp8(%a: memref<20x64xf8E4M3FN>, %sa: memref<20x2xf8E8M0FNU>, %b: memref<40x64xf8E5M2>,
                 %sb: memref<40x2xf8E8M0FNU>, %c: memref<20x40xf32>) {
  lowp.scaled_matmul %a[%sa], %b[%sb] into %c layouts(#lowp.mx<32>, #lowp.mx<32>)
      : memref<20x64xf8E4M3FN>[memref<20x2xf8E8M0FNU>], memref<40x64xf8E5M2>[memref<40x2xf8E8M0FNU>] -> memref<20x40xf32>
  return
}

// -----

// The byte kernel keeps the formats it takes (E2M1 under dot=i8); under dot=f32 they take
// the pairs too.
// CHECK-LABEL: func.func @mxfp4
// CHECK:       llvm.x86.avx512bf16.dpbf16ps.256
// I8-LABEL:    func.func @mxfp4
// I8-NOT:      dpbf16ps
// I8:          llvm.x86.avx2.pmadd.ub.sw
// I8-NOT:      dpbf16ps
// I8-LABEL:    func.func @tiny
func.func @mxfp4(%a: memref<20x64xf4E2M1FN>, %sa: memref<20x2xf8E8M0FNU>, %b: memref<40x64xf4E2M1FN>,
                 %sb: memref<40x2xf8E8M0FNU>, %c: memref<20x40xf32>) {
  lowp.scaled_matmul %a[%sa], %b[%sb] into %c layouts(#lowp.mx<32>, #lowp.mx<32>)
      : memref<20x64xf4E2M1FN>[memref<20x2xf8E8M0FNU>], memref<40x64xf4E2M1FN>[memref<40x2xf8E8M0FNU>] -> memref<20x40xf32>
  return
}

// -----

// E3M0 with bias 66: its smallest value 2^-65, a product 2^-130, below f32's normal range,
// where vdpbf16ps flushes: the f32 FMAs.
// CHECK-LABEL: func.func @tiny
// CHECK-NOT:   dpbf16ps
// CHECK:       vector.fma
// CHECK-NOT:   dpbf16ps
func.func @tiny(%a: memref<20x64x!lowp.mf<e3m0, bias = 66>>, %sa: memref<1x1xf32>, %b: memref<40x64x!lowp.mf<e3m0, bias = 66>>,
                 %sb: memref<1x1xf32>, %c: memref<20x40xf32>) {
  lowp.scaled_matmul %a[%sa], %b[%sb] into %c layouts(#lowp.per_tensor, #lowp.per_tensor)
      : memref<20x64x!lowp.mf<e3m0, bias = 66>>[memref<1x1xf32>], memref<40x64x!lowp.mf<e3m0, bias = 66>>[memref<1x1xf32>] -> memref<20x40xf32>
  return
}

// -----

// K = 301, per channel: one interval a K block (256, then 45); A's 151 pairs, in chunks
// of 32, the last chunk's 6 whole pairs and then the one of k = 300 alone (its high half
// zero), the second block's 23 pairs of B (the same).
// CHECK-LABEL: func.func @odd_k
// CHECK:       %[[AP2:.*]] = memref.alloc() {alignment = 64 : i64} : memref<4x151x6xi32>
// CHECK:       scf.for %[[C0:.*]] = %c0 to %c301 step %c64 {
// CHECK:         %[[C1:.*]] = arith.minui %{{.*}}, %c301 : index
// CHECK:         %[[P1:.*]] = arith.divui %[[C1]], %c2 : index
// CHECK:           %[[END:.*]] = arith.muli %[[P1]], %c2 : index
// CHECK-NEXT:      %[[ODD:.*]] = arith.cmpi ult, %[[END]], %[[C1]] : index
// CHECK-NEXT:      scf.if %[[ODD]] {
// CHECK-NEXT:        %[[LAST:.*]] = arith.subi %[[C1]], %c1 : index
// CHECK-NEXT:        memref.load %{{.*}}[%{{.*}}, %[[LAST]]] : memref<20x301xi8>
// CHECK:             memref.store %{{.*}}, %[[AP2]][%{{.*}}, %[[P1]], %{{.*}}] : memref<4x151x6xi32>
// CHECK:       llvm.x86.avx512bf16.dpbf16ps.256
func.func @odd_k(%a: memref<20x301xf8E4M3FN>, %sa: memref<20x1xf32>, %b: memref<40x301xf8E4M3FN>,
                 %sb: memref<40x1xf32>, %c: memref<20x40xf32>) {
  lowp.scaled_matmul %a[%sa], %b[%sb] into %c layouts(#lowp.per_channel, #lowp.per_channel)
      : memref<20x301xf8E4M3FN>[memref<20x1xf32>], memref<40x301xf8E4M3FN>[memref<40x1xf32>] -> memref<20x40xf32>
  return
}
