// RUN: lowp-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(lowp-to-loops{bf16-dot=true},canonicalize,cse))' | FileCheck %s
// RUN: lowp-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(lowp-to-loops{bf16-dot=true lanes=16},canonicalize,cse))' | FileCheck %s --check-prefix=ZMM
// RUN: lowp-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(lowp-to-loops{dot=i8 bf16-dot=true},canonicalize,cse))' | FileCheck %s --check-prefix=I8
// The 512-bit form compiles to AVX512-BF16 dot products (whatever the host running lit):
// RUN: lowp-opt %s --pass-pipeline='builtin.module(func.func(lowp-to-loops{bf16-dot=true lanes=16 parallel=false}))' | lowp-opt --lowp-cpu-pipeline | mlir-translate --mlir-to-llvmir | llc -O2 -mtriple=x86_64-unknown-linux-gnu -mcpu=sapphirerapids | FileCheck %s --check-prefix=ASM
// RUN: not lowp-opt %s --pass-pipeline='builtin.module(func.func(lowp-to-loops{bf16-dot=maybe}))' 2>&1 | FileCheck %s --check-prefix=BAD
// BAD: error: option 'bf16-dot' of lowp-to-loops

// The f32 kernel on bf16 pairs (its numerics: tests/integration/to_loops.rs,
// bf16_pairs_match_the_oracle). E4M3 and E5M2 values, and their products, are exact normal
// bf16 / f32 numbers: A's row tiles (6 rows, 64 k of f32, decoded as before) become 32
// words a row, each two bf16: k's f32 pattern's high half below k + 1's (k past K zero);
// each K block of B's decoded panel (256 k of 16 columns) 128 words a column the same way;
// then per two k a tile takes 2 word vectors of B, a word broadcast per row and 12
// vdpbf16ps into the f32 sums (a 32-block, 16 pairs, unrolled), which are scaled as the
// f32 kernel's.
// CHECK-LABEL: func.func @mxfp8
// CHECK:       %[[AP:.*]] = memref.alloc() {alignment = 64 : i64} : memref<4x64x6xf32>
// CHECK:       %[[AP2:.*]] = memref.alloc() {alignment = 64 : i64} : memref<4x32x6xi32>
// CHECK:         scf.for %[[KP:.*]] = %c0 to %c32 step %c1 {
// CHECK:           %[[LO:.*]] = arith.bitcast %{{.*}} : f32 to i32
// CHECK:           %[[HI:.*]] = arith.bitcast %{{.*}} : f32 to i32
// CHECK:           %[[HI0:.*]] = arith.select %{{.*}}, %[[HI]], %c0_i32 : i32
// CHECK:           %[[L16:.*]] = arith.shrui %[[LO]], %c16_i32 : i32
// CHECK:           %[[H16:.*]] = arith.andi %[[HI0]], %c-65536_i32 : i32
// CHECK:           %[[W:.*]] = arith.ori %[[L16]], %[[H16]] : i32
// CHECK:           memref.store %[[W]], %[[AP2]][%{{.*}}, %[[KP]], %{{.*}}] : memref<4x32x6xi32>
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

// K = 301, per channel: one interval a K block (256, then 45); A's 151 pairs (the last
// one's high half zero), the second block's 23 pairs of B (the same).
// CHECK-LABEL: func.func @odd_k
// CHECK:       memref.alloc() {alignment = 64 : i64} : memref<4x151x6xi32>
// CHECK:       scf.for %{{.*}} = %c0 to %c151 step %c1
// CHECK:       llvm.x86.avx512bf16.dpbf16ps.256
func.func @odd_k(%a: memref<20x301xf8E4M3FN>, %sa: memref<20x1xf32>, %b: memref<40x301xf8E4M3FN>,
                 %sb: memref<40x1xf32>, %c: memref<20x40xf32>) {
  lowp.scaled_matmul %a[%sa], %b[%sb] into %c layouts(#lowp.per_channel, #lowp.per_channel)
      : memref<20x301xf8E4M3FN>[memref<20x1xf32>], memref<40x301xf8E4M3FN>[memref<40x1xf32>] -> memref<20x40xf32>
  return
}
