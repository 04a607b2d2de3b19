// RUN: lowp-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(lowp-to-loops,canonicalize,cse))' | FileCheck %s
// RUN: lowp-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(lowp-to-loops{parallel=false kc=64},canonicalize,cse))' | FileCheck %s --check-prefix=SEQ
// RUN: lowp-opt %s -split-input-file --lowp-cpu-pipeline | FileCheck %s --check-prefix=LLVM
// RUN: lowp-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(lowp-to-loops{kc=32},canonicalize,cse))' | FileCheck %s --check-prefix=KBLOCK
// RUN: lowp-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(lowp-to-loops{decode=f16},canonicalize,cse))' | FileCheck %s --check-prefix=F16
// RUN: lowp-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(lowp-to-loops{decode=f16}),lowp-cpu-pipeline)' | FileCheck %s --check-prefix=F16LLVM
// RUN: lowp-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(lowp-to-loops{narrow=false gemv=false},canonicalize,cse))' | FileCheck %s --check-prefix=ROWS
// RUN: not lowp-opt %s --pass-pipeline='builtin.module(func.func(lowp-to-loops{decode=f17}))' 2>&1 | FileCheck %s --check-prefix=BADDECODE
// BADDECODE: error: option 'decode' of lowp-to-loops: 'f17' is not accepted; expected bits, f16

// The structure of the CPU lowering; its numerics are checked against the oracle by
// lit/Run and tests/integration/to_loops.rs.

// MX x MX: A decoded into two 6-row tiles of K x 6 (M = 10 padded; the narrow form takes
// M = 7-8 and 13-16, see @narrow), codes through a
// 16-entry table; scales per 32-element segment (A's in row tiles, B's in column panels).
// M is skinny, so the GEMM runs groups of B's 16-column panels in parallel, each through
// all of K (up to eight panels a group, fewer where N gives fewer than 64 groups: here five
// panels, a group each), each group with one 256 x 16 slot (a K block; here the only one)
// that each of its panels is decoded into and then swept by both row tiles.
// B's decode takes eight rows at a time: a vector<8xi8> of each row's codes decoded by bit
// arithmetic, the 8 x 8 block transposed by 24 shuffles into eight k of the slot; a group
// of rows reaching past B (rows 72..79 of the last panel) takes the table one code at a
// time. The GEMM: K segments of 32, a 6x16 tile of twelve vector<8xf32> partial sums (a
// whole segment unrolled, 32 x 12 FMAs; a ragged one in a loop), each segment scaled once
// (sa * sb) into the f32 workspace, which keeps each tile's sums in one block.
// CHECK-LABEL: func.func @mxfp4
// CHECK:       arith.constant dense<[0.000000e+00, 5.000000e-01, 1.000000e+00, 1.500000e+00, 2.000000e+00, 3.000000e+00, 4.000000e+00, 6.000000e+00, {{.*}}]> : vector<16xf32>
// CHECK-DAG:   %[[SA:.*]] = memref.alloc() {alignment = 64 : i64} : memref<2x2x6xf32>
// CHECK-DAG:   %[[SB:.*]] = memref.alloc() {alignment = 64 : i64} : memref<5x2x16xf32>
// CHECK-DAG:   %[[W:.*]] = memref.alloc() {alignment = 64 : i64} : memref<2x5x6x16xf32>
// CHECK:       %[[AD:.*]] = memref.alloc() {alignment = 64 : i64} : memref<2x64x6xf32>
// CHECK:       memref.store %{{.*}}, %[[AD]]
// CHECK:       scf.parallel (%[[G:[a-z0-9]+]]) = (%c0) to (%c5) step (%c1) {
// CHECK-NEXT:    %[[BP:.*]] = memref.alloc() {alignment = 64 : i64} : memref<1x256x16xf32>
// CHECK:         scf.for %[[NB:[a-z0-9]+]] = %{{.*}} to %{{.*}} step %c1 {
// CHECK:           memref.prefetch
// CHECK:           scf.if %{{.*}} {
// CHECK-NEXT:        scf.for %[[KK:.*]] = %c0 to %c64 step %c8 {
// CHECK-COUNT-8:       vector.load %{{.*}}[%{{.*}}, %[[KK]]] : memref<72x64xi8>, vector<8xi8>
// CHECK-COUNT-24:      vector.shuffle {{.*}} : vector<8xf32>, vector<8xf32>
// CHECK-COUNT-8:       vector.store %{{.*}}, %[[BP]][%c0, %{{.*}}, %c0] : memref<1x256x16xf32>, vector<8xf32>
// CHECK:           } else {
// CHECK:             memref.load %{{.*}} : memref<16xf32>
// CHECK:             memref.store %{{.*}}, %[[BP]][%c0, %{{.*}}, %c0] : memref<1x256x16xf32>
// CHECK:           scf.for %[[MT:.*]] = %c0 to %c2 step %c1 {
// CHECK:             scf.for %[[S0:.*]] = %{{.*}} to %{{.*}} step %c32
// CHECK:               %[[WHOLE:.*]] = arith.cmpi eq, %{{.*}}, %c32 : index
// CHECK:               %[[P:.*]]:12 = scf.if %[[WHOLE]] -> (vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>)
// CHECK-COUNT-2:         vector.load %[[BP]][%c0, %[[S0]], %{{.*}}]
// CHECK:                 memref.load %[[AD]][%[[MT]], %[[S0]], %{{.*}}] : memref<2x64x6xf32>
// CHECK:                 vector.broadcast %{{.*}} : f32 to vector<8xf32>
// CHECK-COUNT-384:       vector.fma
// CHECK-NOT:             vector.fma
// CHECK:               } else {
// CHECK:                 scf.for %{{.*}} = %[[S0]] to %{{.*}} step %c1 iter_args
// CHECK-COUNT-12:          vector.fma
// CHECK-NOT:               vector.fma
// CHECK:               %[[SEG:.*]] = arith.divui %[[S0]], %c32 : index
// CHECK:               %[[SB0:.*]] = vector.load %[[SB]][%[[NB]], %[[SEG]], %c0]
// CHECK:               memref.load %[[SA]][%[[MT]], %[[SEG]], %c0]
// CHECK:               %[[WV:.*]] = vector.load %[[W]][%[[MT]], %[[NB]], %c0, %c0]
// CHECK:               %[[SCALE:.*]] = arith.mulf %{{.*}}, %[[SB0]]
// CHECK:               %[[UPD:.*]] = vector.fma %[[P]]#0, %[[SCALE]], %[[WV]] : vector<8xf32>
// CHECK:               vector.store %[[UPD]], %[[W]][%[[MT]], %[[NB]], %c0, %c0]
// CHECK:         memref.dealloc %[[BP]] : memref<1x256x16xf32>
// CHECK:       memref.dealloc %[[AD]]
// With K blocks of 32, each group's slot holds one block: the group runs through K, a
// panel's block decoded at its start, 64 k of a row at a time (here all 32), each row's
// codes prefetched two such chunks (128 k) on; the GEMM reads the slot at k - k0.
// KBLOCK-LABEL: func.func @mxfp4
// KBLOCK:       scf.parallel (%[[G:.*]]) = (%c0) to (%c5)
// KBLOCK:         %[[BP:.*]] = memref.alloc() {alignment = 64 : i64} : memref<1x32x16xf32>
// KBLOCK:         scf.for %[[K0:.*]] = %c0 to %c64 step %c32 {
// KBLOCK:           scf.for %[[C0:.*]] = %[[K0]] to %{{.*}} step %c64
// KBLOCK:               %[[AHEAD:.*]] = arith.addi %[[C0]], %c128 : index
// KBLOCK:               %[[AT:.*]] = arith.minui %[[AHEAD]], %c63 : index
// KBLOCK:               memref.prefetch %{{.*}}[%{{.*}}, %[[AT]]], read, locality<3>, data : memref<72x64xi8>
// KBLOCK:               vector.store %{{.*}}, %[[BP]][%c0, %{{.*}}, %c0] : memref<1x32x16xf32>, vector<8xf32>
// KBLOCK:           scf.for %[[MT:.*]] = %c0 to %c2
// KBLOCK:             scf.for %[[S0:.*]] = %[[K0]] to %{{.*}} step %c32
// KBLOCK:             %[[KB:.*]] = arith.subi %[[S0]], %[[K0]] : index
// KBLOCK:             vector.load %[[BP]][%c0, %[[KB]], %c0] : memref<1x32x16xf32>, vector<8xf32>
// SEQ-LABEL:   func.func @mxfp4
// SEQ-NOT:     scf.parallel
// LLVM-LABEL:  llvm.func @mxfp4
// LLVM:        llvm.intr.fmuladd
// (No lowp op left; the shape checks' messages name the op in strings.)
// LLVM-NOT:    {{^ *(%.* = )?}}lowp.
func.func @mxfp4(%a: memref<10x64xf4E2M1FN>, %sa: memref<10x2xf8E8M0FNU>, %b: memref<72x64xf4E2M1FN>,
                 %sb: memref<72x2xf8E8M0FNU>, %c: memref<10x72xf32>) {
  lowp.scaled_matmul %a[%sa], %b[%sb] into %c layouts(#lowp.mx<32>, #lowp.mx<32>)
      : memref<10x64xf4E2M1FN>[memref<10x2xf8E8M0FNU>], memref<72x64xf4E2M1FN>[memref<72x2xf8E8M0FNU>] -> memref<10x72xf32>
  return
}

// -----

// M = 264 (44 row tiles, past the skinny form's 42): B's panels of each K block are decoded in parallel first, a
// slot each, then the GEMM runs row tiles in parallel, each sweeping the block's panels.
// CHECK-LABEL: func.func @many_rows
// CHECK:       %[[AD:.*]] = memref.alloc() {alignment = 64 : i64} : memref<44x64x6xf32>
// CHECK:       memref.store %{{.*}}, %[[AD]]
// CHECK:       %[[BP:.*]] = memref.alloc() {alignment = 64 : i64} : memref<2x256x16xf32>
// CHECK:       scf.parallel (%[[P:[a-z0-9]+]]) = (%c0) to (%c2) step (%c1) {
// CHECK:         vector.store %{{.*}}, %[[BP]][%[[P]], %{{.*}}, %c0] : memref<2x256x16xf32>, vector<8xf32>
// Each tile first prefetches the sums of the tile the sweep takes next (the next panel,
// the last panel itself), a cache line a row: W is all of C, out of the caches by the
// time a K block comes back to a tile.
// CHECK:       scf.parallel (%[[MT:[a-z0-9]+]]) = (%c0) to (%c44) step (%c1) {
// CHECK-NEXT:    scf.for %[[NB:.*]] = %c0 to %c2 step %c1 {
// CHECK-NEXT:      %[[NB1:.*]] = arith.addi %[[NB]], %c1 : index
// CHECK-NEXT:      %[[NEXT:.*]] = arith.minui %[[NB1]], %c1 : index
// CHECK-NEXT:      memref.prefetch %[[W:.*]][%[[MT]], %[[NEXT]], %c0, %c0], read, locality<3>, data : memref<44x2x6x16xf32>
// CHECK-COUNT-5:   memref.prefetch %[[W]][%[[MT]], %[[NEXT]], %c{{[1-5]}}, %c0]
// CHECK-NEXT:      scf.for %[[S0:.*]] = %c0 to %c64 step %c32 {
// CHECK:             vector.load %[[BP]][%[[NB]], %[[S0]], %c0]
// CHECK:             memref.load %[[AD]][%[[MT]], %[[S0]], %c0]
// With decode=f16 (E4M3 takes it: lowp-formats' f16_fields), B's rows are read 16 codes
// at a time and turned into f16 patterns on 16-bit lanes: the magnitude shifted into
// place, the sign to bit 15, E4M3's NaN codes (S.1111.111) to an f16 NaN; two 8 x 8
// blocks transposed at once (24 shuffles of vector<16xi16> that stay within 128-bit
// halves); each half widened to f32. B's values are then 2^-8 of E4M3's, and the 2^8 is
// moved onto A's table (0, 2^-9 x 2^8 = 0.5, 1.0, ...; printed as little-endian hex),
// B's table (for the rows and k the vectors leave) taking 2^-8 (0, 2^-17, 2^-16, ...).
// F16-LABEL:   func.func @many_rows
// F16-DAG:     arith.constant dense<"0x000000000000003F0000803F0000C03F{{.*}}"> : vector<256xf32>
// F16-DAG:     arith.constant dense<"0x00000000000000370000803700{{.*}}"> : vector<256xf32>
// F16:         scf.for %[[KK:.*]] = %c0 to %c64 step %c16 {
// F16:           %[[CODES:.*]] = vector.load %{{.*}}[%{{.*}}, %[[KK]]] : memref<20x64xi8>, vector<16xi8>
// F16:           %[[WIDE:.*]] = arith.extui %[[CODES]] : vector<16xi8> to vector<16xi16>
// F16:           %[[MAG:.*]] = arith.andi %[[WIDE]], %[[C127:.*]] : vector<16xi16>
// F16:           %[[SIGN:.*]] = arith.andi %[[WIDE]], %{{.*}} : vector<16xi16>
// F16:           %[[M7:.*]] = arith.shli %[[MAG]], %{{.*}} : vector<16xi16>
// F16:           %[[S8:.*]] = arith.shli %[[SIGN]], %{{.*}} : vector<16xi16>
// F16:           %[[PAT:.*]] = arith.ori %[[M7]], %[[S8]] : vector<16xi16>
// F16:           %[[NAN:.*]] = arith.cmpi eq, %[[MAG]], %[[C127]] : vector<16xi16>
// F16:           arith.select %[[NAN]], %{{.*}}, %[[PAT]] : vector<16xi1>, vector<16xi16>
// F16-COUNT-24:  vector.shuffle {{.*}} : vector<16xi16>, vector<16xi16>
// F16:           %[[LOW:.*]] = vector.shuffle %{{.*}} [0, 1, 2, 3, 4, 5, 6, 7] : vector<16xi16>, vector<16xi16>
// F16:           %[[HALF:.*]] = vector.bitcast %[[LOW]] : vector<8xi16> to vector<8xf16>
// F16:           %[[F32:.*]] = arith.extf %[[HALF]] : vector<8xf16> to vector<8xf32>
// F16-NOT:       arith.mulf
// F16:           vector.store %[[F32]], %{{.*}}[%{{.*}}, %[[KK]], %c0] : memref<2x256x16xf32>, vector<8xf32>
// F16LLVM-LABEL: llvm.func @many_rows
// F16LLVM:       llvm.fpext %{{.*}} : vector<8xf16> to vector<8xf32>
func.func @many_rows(%a: memref<264x64xf8E4M3FN>, %sa: memref<264x2xf8E8M0FNU>, %b: memref<20x64xf8E4M3FN>,
                     %sb: memref<20x2xf8E8M0FNU>, %c: memref<264x20xf32>) {
  lowp.scaled_matmul %a[%sa], %b[%sb] into %c layouts(#lowp.mx<32>, #lowp.mx<32>)
      : memref<264x64xf8E4M3FN>[memref<264x2xf8E8M0FNU>], memref<20x64xf8E4M3FN>[memref<20x2xf8E8M0FNU>] -> memref<264x20xf32>
  return
}

// -----

// M = 16, two vectors of eight rows: the narrow form. A decoded into K x 16 (one k's rows
// contiguous), its scales into segments x 16, B's into strips of 6 columns (20 columns: 4
// strips, the last two columns past B); the sums a 6 x 16 block per strip. Groups of
// strips run in parallel (4 here, a strip each), each with one 6 x 256 buffer that a
// strip's K block is decoded into, a row at a time along K, eight codes a step, no
// transpose; the GEMM then loads A's two vectors of a k and broadcasts each of the six
// columns from the buffer: 12 FMAs a k, a whole segment of 32 k unrolled; each segment
// scaled once (sa * sb) into the sums. The write-back reads the sums by strip and column.
// CHECK-LABEL: func.func @narrow
// CHECK-DAG:   %[[AP:.*]] = memref.alloc() {alignment = 64 : i64} : memref<64x16xf32>
// CHECK-DAG:   %[[SA:.*]] = memref.alloc() {alignment = 64 : i64} : memref<2x16xf32>
// CHECK-DAG:   %[[SB:.*]] = memref.alloc() {alignment = 64 : i64} : memref<4x2x6xf32>
// CHECK-DAG:   %[[W:.*]] = memref.alloc() {alignment = 64 : i64} : memref<4x6x16xf32>
// CHECK:       memref.store %{{.*}}, %[[AP]][%{{.*}}, %{{.*}}] : memref<64x16xf32>
// CHECK:       scf.parallel (%{{.*}}) = (%c0) to (%c4) step (%c1) {
// CHECK:         vector.store %{{.*}}, %[[W]]
// CHECK:       scf.parallel (%[[G:[a-z0-9]+]]) = (%c0) to (%c4) step (%c1) {
// CHECK-NEXT:    %[[BS:.*]] = memref.alloc() {alignment = 64 : i64} : memref<6x256xf32>
// CHECK:         scf.for %[[P:[a-z0-9]+]] = %[[G]] to %{{.*}} step %c1 {
// CHECK:           scf.for %[[KK:.*]] = %c0 to %c64 step %c8 {
// CHECK-NEXT:        vector.load %{{.*}}[%{{.*}}, %[[KK]]] : memref<20x64xi8>, vector<8xi8>
// CHECK-NOT:         vector.shuffle
// CHECK:             vector.store %{{.*}}, %[[BS]][%c0, %[[KK]]] : memref<6x256xf32>, vector<8xf32>
// CHECK-COUNT-5:   vector.store %{{.*}}, %[[BS]][%c{{[1-5]}}, %{{.*}}] : memref<6x256xf32>, vector<8xf32>
// CHECK:           scf.for %[[S0:.*]] = %c0 to %c64 step %c32 {
// CHECK:             %[[PS:.*]]:12 = scf.if %{{.*}} -> (vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>)
// CHECK-NEXT:          vector.load %[[AP]][%[[S0]], %c0] : memref<64x16xf32>, vector<8xf32>
// CHECK-NEXT:          vector.load %[[AP]][%[[S0]], %c8] : memref<64x16xf32>, vector<8xf32>
// CHECK-NEXT:          %[[B0:.*]] = memref.load %[[BS]][%c0, %[[S0]]] : memref<6x256xf32>
// CHECK-NEXT:          vector.broadcast %[[B0]] : f32 to vector<8xf32>
// CHECK-COUNT-384:     vector.fma
// CHECK-NOT:           vector.fma
// CHECK:             } else {
// CHECK:               scf.for %{{.*}} = %[[S0]] to %{{.*}} step %c1 iter_args
// CHECK-COUNT-12:        vector.fma
// CHECK-NOT:             vector.fma
// CHECK:             %[[SEG:.*]] = arith.divui %[[S0]], %c32 : index
// CHECK:             %[[SA0:.*]] = vector.load %[[SA]][%[[SEG]], %c0] : memref<2x16xf32>, vector<8xf32>
// CHECK:             %[[SB0:.*]] = memref.load %[[SB]][%[[P]], %[[SEG]], %c0] : memref<4x2x6xf32>
// CHECK:             %[[WV:.*]] = vector.load %[[W]][%[[P]], %c0, %c0] : memref<4x6x16xf32>, vector<8xf32>
// CHECK:             %[[UPD:.*]] = vector.fma %[[PS]]#0, %{{.*}}, %[[WV]] : vector<8xf32>
// CHECK:             vector.store %[[UPD]], %[[W]][%[[P]], %c0, %c0] : memref<4x6x16xf32>, vector<8xf32>
// CHECK:         memref.dealloc %[[BS]] : memref<6x256xf32>
// CHECK:       scf.parallel (%[[R:.*]]) = (%c0) to (%c16)
// CHECK:         scf.for %[[C:.*]] = %c0 to %c20 step %c1 {
// CHECK:           %[[STRIP:.*]] = arith.divui %[[C]], %c6 : index
// CHECK:           %[[J:.*]] = arith.remui %[[C]], %c6 : index
// CHECK:           memref.load %[[W]][%[[STRIP]], %[[J]], %[[R]]] : memref<4x6x16xf32>
// Through f16: 16 codes of a row a step, their f16 patterns widened a half at a time.
// F16-LABEL:   func.func @narrow
// F16:           scf.for %[[KK:.*]] = %c0 to %c64 step %c16 {
// F16-NEXT:        vector.load %{{.*}}[%{{.*}}, %[[KK]]] : memref<20x64xi8>, vector<16xi8>
// F16:             %[[PAT:.*]] = arith.select %{{.*}} : vector<16xi1>, vector<16xi16>
// F16-NEXT:        vector.shuffle %[[PAT]], %[[PAT]] [0, 1, 2, 3, 4, 5, 6, 7] : vector<16xi16>, vector<16xi16>
// F16:             arith.extf %{{.*}} : vector<8xf16> to vector<8xf32>
// F16:             vector.shuffle %[[PAT]], %[[PAT]] [8, 9, 10, 11, 12, 13, 14, 15] : vector<16xi16>, vector<16xi16>
// F16:             arith.extf %{{.*}} : vector<8xf16> to vector<8xf32>
// F16:             vector.store %{{.*}}, %{{.*}}[%c0, %{{.*}}] : memref<6x256xf32>, vector<8xf32>
// With narrow=false the row tiles run (three of 6 rows).
// ROWS-LABEL:  func.func @narrow
// ROWS:        memref.alloc() {alignment = 64 : i64} : memref<3x64x6xf32>
func.func @narrow(%a: memref<16x64xf8E4M3FN>, %sa: memref<16x2xf8E8M0FNU>, %b: memref<20x64xf8E4M3FN>,
                  %sb: memref<20x2xf8E8M0FNU>, %c: memref<16x20xf32>) {
  lowp.scaled_matmul %a[%sa], %b[%sb] into %c layouts(#lowp.mx<32>, #lowp.mx<32>)
      : memref<16x64xf8E4M3FN>[memref<16x2xf8E8M0FNU>], memref<20x64xf8E4M3FN>[memref<20x2xf8E8M0FNU>] -> memref<16x20xf32>
  return
}

// -----

// M = 1: the GEMV form. A decoded row-major (1 x 64), the sums 1 x 20 (columns in groups
// of 4 rows of B, the last group's rows past B clamped and never written back). Each
// group runs the scale segments with one vector of totals carried through them; a
// segment's whole steps of 8 k (bits: codes::decode on vector<8xi32>) multiply A's vector
// with each row's decoded codes into four vector accumulators, B read straight into
// registers (nothing stored); the segment's last few k go into lane 0 one at a time; then
// the four accumulators' lane sums come out as one vector (pairwise shuffles and adds,
// the four missing vectors zero), scaled lane by lane by sa * sb into the totals.
// CHECK-LABEL: func.func @gemv
// CHECK-DAG:   %[[AP:.*]] = memref.alloc() {alignment = 64 : i64} : memref<1x64xf32>
// CHECK-DAG:   %[[W:.*]] = memref.alloc() {alignment = 64 : i64} : memref<1x20xf32>
// CHECK:       scf.parallel (%{{.*}}) = (%c0) to (%c5) step (%c1) {
// CHECK:         %[[T:.*]] = scf.for %[[S0:.*]] = %c0 to %c64 step %c32 iter_args({{.*}}) -> (vector<8xf32>) {
// CHECK:           %[[ACC:.*]]:4 = scf.for %[[KK:.*]] = %[[S0]] to %{{.*}} step %c8 iter_args({{.*}}) -> (vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>) {
// CHECK-NEXT:        %[[AV:.*]] = vector.load %[[AP]][%c0, %[[KK]]] : memref<1x64xf32>, vector<8xf32>
// CHECK:             memref.prefetch
// CHECK-NEXT:        vector.load %{{.*}}[%{{.*}}, %[[KK]]] : memref<20x64xi8>, vector<8xi8>
// CHECK:             vector.fma %[[AV]], %{{.*}} : vector<8xf32>
// CHECK-NOT:         vector.store
// CHECK:             scf.yield
// CHECK:           %[[TAIL:.*]]:4 = scf.for %{{.*}} = %{{.*}} to %{{.*}} step %c1 iter_args({{.*}}) -> (vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>) {
// CHECK:             arith.select %{{.*}} : vector<8xi1>, vector<8xf32>
// CHECK:           arith.divui %[[S0]], %c32 : index
// CHECK:           vector.shuffle %[[TAIL]]#0, %[[TAIL]]#1 [0, 8, 2, 10, 4, 12, 6, 14] : vector<8xf32>, vector<8xf32>
// CHECK:           vector.shuffle %{{.*}} [0, 1, 8, 9, 4, 5, 12, 13] : vector<8xf32>, vector<8xf32>
// CHECK:           vector.shuffle %{{.*}} [0, 1, 2, 3, 8, 9, 10, 11] : vector<8xf32>, vector<8xf32>
// CHECK:           %[[SCALES:.*]] = vector.from_elements
// CHECK:           vector.fma %{{.*}}, %[[SCALES]], %{{.*}} : vector<8xf32>
// CHECK:         vector.extract %[[T]][0] : f32 from vector<8xf32>
// CHECK:         memref.store %{{.*}}, %[[W]][%c0, %{{.*}}] : memref<1x20xf32>
// CHECK:       scf.for %[[C:.*]] = %c0 to %c20 step %c1 {
// CHECK:         memref.load %[[W]][%c0, %[[C]]] : memref<1x20xf32>
// Through f16: 16 codes a step, widened in two halves, two FMAs per row of B.
// F16-LABEL:   func.func @gemv
// F16:           scf.for %[[KK:.*]] = %{{.*}} to %{{.*}} step %c16 iter_args
// F16:             vector.load %{{.*}}[%{{.*}}, %[[KK]]] : memref<20x64xi8>, vector<16xi8>
// F16:             arith.extf %{{.*}} : vector<8xf16> to vector<8xf32>
// F16:             arith.extf %{{.*}} : vector<8xf16> to vector<8xf32>
// F16-COUNT-2:     vector.fma
// With gemv=false (and narrow=false) the row tiles run.
// ROWS-LABEL:  func.func @gemv
// ROWS:        memref.alloc() {alignment = 64 : i64} : memref<1x64x6xf32>
func.func @gemv(%a: memref<1x64xf8E4M3FN>, %sa: memref<1x2xf8E8M0FNU>, %b: memref<20x64xf8E4M3FN>,
                %sb: memref<20x2xf8E8M0FNU>, %c: memref<1x20xf32>) {
  lowp.scaled_matmul %a[%sa], %b[%sb] into %c layouts(#lowp.mx<32>, #lowp.mx<32>)
      : memref<1x64xf8E4M3FN>[memref<1x2xf8E8M0FNU>], memref<20x64xf8E4M3FN>[memref<20x2xf8E8M0FNU>] -> memref<1x20xf32>
  return
}

// -----

// Past 3 rows, with no scale segments along K (per-tensor here), the GEMV form still runs
// (up to 8 rows), the group's rows of B decoded first (two here: four rows of A times two
// accumulators, their vectors and the decode's in sixteen registers), then A's rows loaded
// one at a time, each into its FMAs with both.
// CHECK-LABEL: func.func @gemv_b_first
// CHECK-DAG:   %[[AP:.*]] = memref.alloc() {alignment = 64 : i64} : memref<4x64xf32>
// CHECK:       scf.for %[[KK:.*]] = %{{.*}} to %{{.*}} step %c8 iter_args({{.*}}) -> (vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>) {
// CHECK:         vector.load %{{.*}}[%{{.*}}, %[[KK]]] : memref<20x64xi8>, vector<8xi8>
// CHECK:         vector.load %{{.*}}[%{{.*}}, %[[KK]]] : memref<20x64xi8>, vector<8xi8>
// CHECK:         %[[A0:.*]] = vector.load %[[AP]][%c0, %[[KK]]] : memref<4x64xf32>, vector<8xf32>
// CHECK-NEXT:    vector.fma %[[A0]]
// CHECK-NEXT:    vector.fma %[[A0]]
// CHECK-NEXT:    %[[A1:.*]] = vector.load %[[AP]][%c1, %[[KK]]] : memref<4x64xf32>, vector<8xf32>
// CHECK-NEXT:    vector.fma %[[A1]]
// CHECK-NEXT:    vector.fma %[[A1]]
// CHECK:         vector.load %[[AP]][%c3, %[[KK]]]
// With MX's 32-blocks, 4 rows take the GEMV form by folding the scales (powers of two)
// into the decoded values (see gemv.rs's `folds`): A decoded twice, as it is and times its
// scales; A's E8M0 scales scanned once against the fold's exponents (code - 80 <= 79:
// 2^-47 ..= 2^32), and where one is not, scale by scale: out of range, not NaN (255), the
// block's codes all ±0 (`& 127`; 16 at a time where the block is whole) also fold. A
// group of B's rows folded (B's decoded vectors times their row's scale, the accumulators
// along all of K, lane sums once) where A's scales and the group's fold (each out of
// range checked the same way), else segment by segment as below 4 rows. gemv=false: the
// row tiles.
// ROWS-LABEL:  func.func @gemv_b_first
// ROWS:        memref.alloc() {alignment = 64 : i64} : memref<1x64x6xf32>
// ROWS-LABEL:  func.func @mx_four_rows
// ROWS:        memref.alloc() {alignment = 64 : i64} : memref<1x64x6xf32>
// CHECK-LABEL: func.func @mx_four_rows
// CHECK:       %[[LOW:.*]] = arith.subi %{{.*}}, %c80_i32 : i32
// CHECK:       arith.cmpi ule, %[[LOW]], %c79_i32 : i32
// CHECK:       %[[AOK:.*]] = scf.if %{{.*}} -> (i1) {
// CHECK-NEXT:    scf.yield %true : i1
// CHECK-NEXT:  } else {
// CHECK:         %[[IN:.*]] = arith.cmpi ule, %{{.*}}, %c79_i32 : i32
// CHECK-NEXT:    scf.if %[[IN]] -> (i1) {
// CHECK-NEXT:      scf.yield %true : i1
// CHECK-NEXT:    } else {
// CHECK-NEXT:      arith.cmpi ne, %{{.*}}, %c255_i32 : i32
// CHECK:           vector.load %{{.*}} : memref<4x64xi8>, vector<16xi8>
// CHECK:           vector.reduction <and>, %{{.*}} : vector<16xi1> into i1
// CHECK:           arith.andi %{{.*}}, %c127_i32 : i32
// CHECK:       memref.alloc() {alignment = 64 : i64} : memref<4x64xf32>
// CHECK:       memref.alloc() {alignment = 64 : i64} : memref<4x64xf32>
// CHECK:       scf.parallel
// CHECK:         %[[TRIED:.*]]:2 = scf.if %[[AOK]] -> (vector<8xf32>, i1) {
// CHECK:           scf.for %{{.*}} = %c0 to %c64 step %c32 iter_args({{.*}}, %{{.*}} = %true)
// CHECK:             %[[LOWB:.*]] = arith.subi %{{.*}}, %c80_i32 : i32
// CHECK:             %[[INB:.*]] = arith.cmpi ule, %[[LOWB]], %c79_i32 : i32
// CHECK-NEXT:        scf.if %[[INB]] -> (i1) {
// CHECK:               vector.load %{{.*}} : memref<20x64xi8>, vector<16xi8>
// CHECK:             %[[SB:.*]] = vector.broadcast %{{.*}} : f32 to vector<8xf32>
// CHECK:             scf.for %{{.*}} step %c8 iter_args
// CHECK:               %[[BS:.*]] = arith.mulf %{{.*}}, %[[SB]] : vector<8xf32>
// CHECK:               vector.fma %{{.*}}, %[[BS]]
// CHECK:         %[[TOTALS:.*]] = scf.if %[[TRIED]]#1 -> (vector<8xf32>) {
// CHECK-NEXT:      scf.yield %[[TRIED]]#0 : vector<8xf32>
// CHECK-NEXT:    } else {
// CHECK:           scf.for %{{.*}} = %c0 to %c64 step %c32 iter_args
// CHECK-NOT:     memref<1x64x6xf32>
func.func @gemv_b_first(%a: memref<4x64xf8E4M3FN>, %sa: memref<1x1xf32>, %b: memref<20x64xf8E4M3FN>,
                        %sb: memref<1x1xf32>, %c: memref<4x20xf32>) {
  lowp.scaled_matmul %a[%sa], %b[%sb] into %c layouts(#lowp.per_tensor, #lowp.per_tensor)
      : memref<4x64xf8E4M3FN>[memref<1x1xf32>], memref<20x64xf8E4M3FN>[memref<1x1xf32>] -> memref<4x20xf32>
  return
}
func.func @mx_four_rows(%a: memref<4x64xf8E4M3FN>, %sa: memref<4x2xf8E8M0FNU>, %b: memref<20x64xf8E4M3FN>,
                        %sb: memref<20x2xf8E8M0FNU>, %c: memref<4x20xf32>) {
  lowp.scaled_matmul %a[%sa], %b[%sb] into %c layouts(#lowp.mx<32>, #lowp.mx<32>)
      : memref<4x64xf8E4M3FN>[memref<4x2xf8E8M0FNU>], memref<20x64xf8E4M3FN>[memref<20x2xf8E8M0FNU>] -> memref<4x20xf32>
  return
}

// -----

// M known only at run time: each form of few rows under a branch on it (M = 1 to 8 a
// GEMV form each, per-tensor here; 13-16 the narrow one with two vectors of rows), the
// row tiles last.
// CHECK-LABEL: func.func @dynamic_m
// CHECK:       %[[M:.*]] = memref.dim %{{.*}}, %c0 : memref<?x64xf8E4M3FN>
// CHECK:       arith.cmpi uge, %[[M]], %c1 : index
// CHECK:       arith.cmpi ule, %[[M]], %c1 : index
// CHECK:       scf.if
// CHECK:         memref.alloc() {alignment = 64 : i64} : memref<1x64xf32>
// CHECK:       } else {
// CHECK:         arith.cmpi uge, %[[M]], %c2 : index
// CHECK:         arith.cmpi ule, %[[M]], %c2 : index
// CHECK:         scf.if
// CHECK:           memref.alloc() {alignment = 64 : i64} : memref<2x64xf32>
// CHECK:         } else {
// CHECK:           arith.cmpi uge, %[[M]], %c3 : index
// CHECK:           arith.cmpi ule, %[[M]], %c3 : index
// CHECK:           scf.if
// CHECK:             memref.alloc() {alignment = 64 : i64} : memref<3x64xf32>
// CHECK:           } else {
// CHECK:             arith.cmpi uge, %[[M]], %c4 : index
// CHECK:             arith.cmpi ule, %[[M]], %c4 : index
// CHECK:             scf.if
// CHECK:               memref.alloc() {alignment = 64 : i64} : memref<4x64xf32>
// CHECK:             } else {
// CHECK:               arith.cmpi uge, %[[M]], %c5 : index
// CHECK:               arith.cmpi ule, %[[M]], %c5 : index
// CHECK:               scf.if
// CHECK:                 memref.alloc() {alignment = 64 : i64} : memref<5x64xf32>
// CHECK:               } else {
// CHECK:                 arith.cmpi uge, %[[M]], %c6 : index
// CHECK:                 arith.cmpi ule, %[[M]], %c6 : index
// CHECK:                 scf.if
// CHECK:                   memref.alloc() {alignment = 64 : i64} : memref<6x64xf32>
// CHECK:                 } else {
// CHECK:                   arith.cmpi uge, %[[M]], %c7 : index
// CHECK:                   arith.cmpi ule, %[[M]], %c7 : index
// CHECK:                   scf.if
// CHECK:                     memref.alloc() {alignment = 64 : i64} : memref<7x64xf32>
// CHECK:                   } else {
// CHECK:                     arith.cmpi uge, %[[M]], %c8 : index
// CHECK:                     arith.cmpi ule, %[[M]], %c8 : index
// CHECK:                     scf.if
// CHECK:                       memref.alloc() {alignment = 64 : i64} : memref<8x64xf32>
// CHECK:                     } else {
// CHECK:                       arith.cmpi uge, %[[M]], %c13 : index
// CHECK:                       arith.cmpi ule, %[[M]], %c16 : index
// CHECK:                       scf.if
// CHECK:                         memref.alloc() {alignment = 64 : i64} : memref<64x16xf32>
// CHECK:                       } else {
// CHECK:                         memref.alloc(%{{.*}}) {alignment = 64 : i64} : memref<?x64x6xf32>
// ROWS-LABEL:  func.func @dynamic_m
// ROWS-NOT:    scf.if
// ROWS:        memref.alloc(%{{.*}}) {alignment = 64 : i64} : memref<?x64x6xf32>
func.func @dynamic_m(%a: memref<?x64xf8E4M3FN>, %sa: memref<1x1xf32>, %b: memref<20x64xf8E4M3FN>,
                     %sb: memref<1x1xf32>, %c: memref<?x20xf32>) {
  lowp.scaled_matmul %a[%sa], %b[%sb] into %c layouts(#lowp.per_tensor, #lowp.per_tensor)
      : memref<?x64xf8E4M3FN>[memref<1x1xf32>], memref<20x64xf8E4M3FN>[memref<1x1xf32>] -> memref<?x20xf32>
  return
}

// -----

// Per-tensor x per-channel: no scale changes along K, so partial sums are added unscaled
// and the scales multiply the total in the write-back, then the bias; bf16 results are
// rounded with arith.truncf.
// CHECK-LABEL: func.func @per_tensor_bias_bf16
// CHECK:       scf.parallel
// CHECK:         %[[P:.*]]:12 = scf.for
// CHECK:         arith.addf %{{.*}}, %[[P]]#0 : vector<8xf32>
// CHECK:       scf.parallel (%[[R:.*]]) = (%c0) to (%c16)
// CHECK:         scf.for %[[C:.*]] = %c0 to %c8
// CHECK:           %[[V:.*]] = memref.load
// CHECK:           arith.mulf %[[V]]
// CHECK:           %[[B:.*]] = memref.load %{{.*}}[%[[C]]] : memref<8xf32>
// CHECK:           %[[SUM:.*]] = arith.addf %{{.*}}, %[[B]] : f32
// CHECK:           %[[H:.*]] = arith.truncf %[[SUM]] : f32 to bf16
// CHECK:           memref.store %[[H]], %{{.*}}[%[[R]], %[[C]]] : memref<16x8xbf16>
func.func @per_tensor_bias_bf16(%a: memref<16x64xf8E4M3FN>, %sa: memref<1x1xf32>, %b: memref<8x64xf8E5M2>,
                                %sb: memref<8x1xf32>, %bias: memref<8xf32>, %c: memref<16x8xbf16>) {
  lowp.scaled_matmul %a[%sa], %b[%sb] bias %bias into %c layouts(#lowp.per_tensor, #lowp.per_channel)
      : memref<16x64xf8E4M3FN>[memref<1x1xf32>], memref<8x64xf8E5M2>[memref<8x1xf32>] bias memref<8xf32> -> memref<16x8xbf16>
  return
}

// -----

// Mixed K blocks: MX/32 with NVFP4/16 scales are constant over segments of 16; packed B
// codes are split into nibbles; NVFP4 globals multiply the total (the write-back's rows a
// vector of 8 columns at a time: N = 8, no column left over).
// CHECK-LABEL: func.func @mixed_blocks
// CHECK:       lowp.storage_cast %{{.*}} : memref<8x32x!lowp.packed<f4E2M1FN>> to memref<8x32xi8>
// CHECK:       scf.for %{{.*}} = %{{.*}} to %{{.*}} step %c16
// CHECK:       %[[GB:.*]] = memref.load %{{.*}}[] : memref<f32>
// CHECK:         %[[GBV:.*]] = vector.broadcast %[[GB]] : f32 to vector<8xf32>
// CHECK-NEXT:    %[[G:.*]] = arith.mulf %{{.*}}, %[[GBV]] : vector<8xf32>
// CHECK-NEXT:    vector.store %[[G]], %{{.*}} : memref<6x8xf32>, vector<8xf32>
func.func @mixed_blocks(%a: memref<6x64xf4E2M1FN>, %sa: memref<6x2xf8E8M0FNU>,
                        %b: memref<8x32x!lowp.packed<f4E2M1FN>>, %sb: memref<8x4xf8E4M3FN>, %gb: memref<f32>,
                        %c: memref<6x8xf32>) {
  lowp.scaled_matmul %a[%sa], %b[%sb, %gb] into %c layouts(#lowp.mx<32>, #lowp.nvfp4<16, global>)
      : memref<6x64xf4E2M1FN>[memref<6x2xf8E8M0FNU>], memref<8x32x!lowp.packed<f4E2M1FN>>[memref<8x4xf8E4M3FN>, memref<f32>] -> memref<6x8xf32>
  return
}

// -----

// The row tiles' write-back: each row's columns a vector at a time where a whole vector
// fits (16 of N = 20), a row of the tile's sums and of the panel's scales, the contract's
// one scale product (`sa * sb`, then the sum times it) on every lane, the bias, bf16; the
// last 4 columns one at a time, the same operations.
// CHECK-LABEL: func.func @write_back_vectors
// CHECK:       scf.parallel (%[[R:.*]]) = (%c0) to (%c18) step (%c1) {
// CHECK-NEXT:    scf.for %[[C:.*]] = %c0 to %c16 step %c8 {
// CHECK:           %[[S:.*]] = vector.load %{{.*}} : memref<3x2x6x16xf32>, vector<8xf32>
// CHECK:           %[[SA:.*]] = memref.load %{{.*}} : memref<3x1x6xf32>
// CHECK:           %[[SB:.*]] = vector.load %{{.*}} : memref<2x1x16xf32>, vector<8xf32>
// CHECK-NEXT:      %[[SAV:.*]] = vector.broadcast %[[SA]] : f32 to vector<8xf32>
// CHECK-NEXT:      %[[SC:.*]] = arith.mulf %[[SAV]], %[[SB]] : vector<8xf32>
// CHECK-NEXT:      %[[V:.*]] = arith.mulf %[[S]], %[[SC]] : vector<8xf32>
// CHECK-NEXT:      %[[BIAS:.*]] = vector.load %{{.*}}[%[[C]]] : memref<20xf32>, vector<8xf32>
// CHECK-NEXT:      %[[VB:.*]] = arith.addf %[[V]], %[[BIAS]] : vector<8xf32>
// CHECK-NEXT:      %[[H:.*]] = arith.truncf %[[VB]] : vector<8xf32> to vector<8xbf16>
// CHECK-NEXT:      vector.store %[[H]], %{{.*}}[%[[R]], %[[C]]] : memref<18x20xbf16>, vector<8xbf16>
// CHECK:         scf.for %[[T:.*]] = %c16 to %c20 step %c1 {
// CHECK:           arith.truncf %{{.*}} : f32 to bf16
// CHECK:           memref.store %{{.*}}, %{{.*}}[%[[R]], %[[T]]] : memref<18x20xbf16>
func.func @write_back_vectors(%a: memref<18x64xf8E4M3FN>, %sa: memref<18x1xf32>, %b: memref<20x64xf8E5M2>,
                              %sb: memref<20x1xf32>, %bias: memref<20xf32>, %c: memref<18x20xbf16>) {
  lowp.scaled_matmul %a[%sa], %b[%sb] bias %bias into %c layouts(#lowp.per_channel, #lowp.per_channel)
      : memref<18x64xf8E4M3FN>[memref<18x1xf32>], memref<20x64xf8E5M2>[memref<20x1xf32>] bias memref<20xf32> -> memref<18x20xbf16>
  return
}

// -----

// Quantization ops left in the function are expanded too.
// CHECK-LABEL: func.func @quantize_too
// CHECK-NOT:   lowp.quantize
// CHECK:       memref.store %{{.*}} : memref<2x32xi8>
func.func @quantize_too(%x: memref<2x32xf32>, %s: memref<1x1xf32>, %q: memref<2x32xf8E4M3FN>) {
  lowp.quantize %x[%s] layout #lowp.per_tensor into %q : memref<2x32xf32>[memref<1x1xf32>] -> memref<2x32xf8E4M3FN>
  return
}

// -----

// kc blocks K (here 256 in blocks of 64: B's 64 x 16 panel slice stays in cache).
// SEQ-LABEL: func.func @kc_blocks
// SEQ:       scf.for %{{.*}} = %c0 to %c256 step %c64
// SEQ-NOT:   scf.parallel
func.func @kc_blocks(%a: memref<12x256xf8E4M3FN>, %sa: memref<12x8xf8E8M0FNU>, %b: memref<32x256xf8E4M3FN>,
                     %sb: memref<32x8xf8E8M0FNU>, %c: memref<12x32xf32>) {
  lowp.scaled_matmul %a[%sa], %b[%sb] into %c layouts(#lowp.mx<32>, #lowp.mx<32>)
      : memref<12x256xf8E4M3FN>[memref<12x8xf8E8M0FNU>], memref<32x256xf8E4M3FN>[memref<32x8xf8E8M0FNU>] -> memref<12x32xf32>
  return
}

// -----

// A scale block far longer than K rounds the K block up to it (2^30 here), past
// STATIC_KC: B's panel buffer holds K's 64 k (with K known only at run time, min(K, block)
// of them), not the block's.
// CHECK-LABEL: func.func @block_past_k
// CHECK:       memref.alloc() {alignment = 64 : i64} : memref<1x64x16xf32>
// CHECK-LABEL: func.func @block_past_dynamic_k
// CHECK:       %[[K:.*]] = memref.dim %arg0, %c1 : memref<12x?xf8E4M3FN>
// CHECK:       %[[DEPTH:.*]] = arith.minui %[[K]], %c1073741824 : index
// CHECK-NEXT:  memref.alloc(%[[DEPTH]]) {alignment = 64 : i64} : memref<1x?x16xf32>
func.func @block_past_k(%a: memref<12x64xf8E4M3FN>, %sa: memref<12x1xf8E8M0FNU>, %b: memref<32x64xf8E4M3FN>,
                        %sb: memref<32x1xf8E8M0FNU>, %c: memref<12x32xf32>) {
  lowp.scaled_matmul %a[%sa], %b[%sb] into %c layouts(#lowp.mx<1073741824>, #lowp.mx<1073741824>)
      : memref<12x64xf8E4M3FN>[memref<12x1xf8E8M0FNU>], memref<32x64xf8E4M3FN>[memref<32x1xf8E8M0FNU>] -> memref<12x32xf32>
  return
}
func.func @block_past_dynamic_k(%a: memref<12x?xf8E4M3FN>, %sa: memref<12x1xf8E8M0FNU>, %b: memref<32x?xf8E4M3FN>,
                                %sb: memref<32x1xf8E8M0FNU>, %c: memref<12x32xf32>) {
  lowp.scaled_matmul %a[%sa], %b[%sb] into %c layouts(#lowp.mx<1073741824>, #lowp.mx<1073741824>)
      : memref<12x?xf8E4M3FN>[memref<12x1xf8E8M0FNU>], memref<32x?xf8E4M3FN>[memref<32x1xf8E8M0FNU>] -> memref<12x32xf32>
  return
}
