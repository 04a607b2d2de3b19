// RUN: lowp-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(lowp-to-loops{dot=vnni lanes=16},canonicalize,cse))' | FileCheck %s
// RUN: lowp-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(lowp-to-loops{dot=i8 lanes=8},canonicalize,cse))' | FileCheck %s --check-prefix=I8
// RUN: lowp-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(lowp-to-loops{dot=vnni lanes=16 gemv=false},canonicalize,cse))' | FileCheck %s --check-prefix=OFF
// RUN: lowp-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(lowp-to-loops{dot=f32 bf16-dot=true lanes=16},canonicalize,cse))' | FileCheck %s --check-prefix=PAIRS
// The 512-bit forms compile to byte lookups and VNNI dot products, and to word lookups and
// bf16 dot products (whatever the host):
// RUN: lowp-opt %s --pass-pipeline='builtin.module(func.func(lowp-to-loops{dot=vnni lanes=16 parallel=false}))' | lowp-opt --lowp-cpu-pipeline | mlir-translate --mlir-to-llvmir | llc -O2 -mtriple=x86_64-unknown-linux-gnu -mcpu=icelake-server | FileCheck %s --check-prefix=ASM
// RUN: lowp-opt %s --pass-pipeline='builtin.module(func.func(lowp-to-loops{dot=f32 bf16-dot=true lanes=16 parallel=false}))' | lowp-opt --lowp-cpu-pipeline | mlir-translate --mlir-to-llvmir | llc -O2 -mtriple=x86_64-unknown-linux-gnu -mcpu=sapphirerapids | FileCheck %s --check-prefix=PASM

// The GEMV form on bytes (dot_gemv.rs; its numerics: tests/integration/to_loops.rs against
// the oracle): M = 1, MXFP4 packed, K = 1184 = 9 chunks of 128 k and 32 k past them.
// A's integers as signed bytes in B's order (all 9 chunks), each chunk's lanes' starts
// (-mb times A's sums of the lane's k) and A's scale of each lane's k.
// CHECK-LABEL: func.func @mxfp4
// A's integers (signed) and B's plus 12 (unsigned), a 16-entry table in each 128-bit slice.
// CHECK-DAG:   %[[MB:.*]] = arith.constant dense<-12> : vector<16xi32>
// CHECK-DAG:   %[[ATAB:.*]] = arith.constant dense<[0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12, 0, {{.*}}]> : vector<64xi8>
// CHECK-DAG:   %[[BTAB:.*]] = arith.constant dense<[12, 13, 14, 15, 16, 18, 20, 24, 12, 11, 10, 9, 8, 6, 4, 0, 12, {{.*}}]> : vector<64xi8>
// CHECK:       %[[AB:.*]] = memref.alloc() {alignment = 64 : i64} : memref<1x1152xi8>
// CHECK:       %[[STARTS:.*]] = memref.alloc() {alignment = 64 : i64} : memref<1x144xi32>
// CHECK:       %[[SA:.*]] = memref.alloc() {alignment = 64 : i64} : memref<1x144xf32>
// A chunk of A at a time, as B's will be read: its low and high nibbles looked up, each
// stored and summed per lane (a vpdpbusd with ones), the sums times -12 (-mb: E2M1's
// integers are 2x its values) into the starts.
// CHECK:       scf.for %{{.*}} = %c0 to %c9 step %c1 {
// CHECK:         %[[RAWA:.*]] = vector.load %{{.*}} : memref<1x592xi8>, vector<64xi8>
// CHECK:         %[[EVEN:.*]] = llvm.call_intrinsic "llvm.x86.avx512.pshuf.b.512"(%[[ATAB]], %{{.*}})
// CHECK:         vector.store %[[EVEN]], %[[AB]]
// CHECK:         %[[SUM0:.*]] = llvm.call_intrinsic "llvm.x86.avx512.vpdpbusd.512"(%{{.*}}, %[[ONES:.*]], %[[EVEN]])
// CHECK:         %[[ODD:.*]] = llvm.call_intrinsic "llvm.x86.avx512.pshuf.b.512"(%[[ATAB]], %{{.*}})
// CHECK:         vector.store %[[ODD]], %[[AB]]
// CHECK:         %[[SUM1:.*]] = llvm.call_intrinsic "llvm.x86.avx512.vpdpbusd.512"(%[[SUM0]], %[[ONES]], %[[ODD]])
// CHECK:         %[[OLD:.*]] = vector.load %[[STARTS]]
// CHECK:         %[[TERM:.*]] = arith.muli %[[SUM1]], %[[MB]] : vector<16xi32>
// CHECK:         arith.addi %[[OLD]], %[[TERM]] : vector<16xi32>
// Four rows of B a group (5 rows: 2 groups); chunks four at a time, B's 16 scales of
// them one load a row, decoded lane by lane.
// CHECK:       scf.parallel (%{{.*}}) = (%c0) to (%c2) step (%c1) {
// CHECK:         %{{.*}}:4 = scf.for %{{.*}} = %c0 to %c8 step %c4 iter_args({{.*}}) -> (vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>) {
// CHECK:           vector.load %{{.*}} : memref<5x37xi8>, vector<16xi8>
// CHECK:           arith.shli %{{.*}}, %{{.*}} : vector<16xi32>
// The chunk's lanes start from A's term; 64 bytes of B's row: its low nibbles (even k)
// and high nibbles (odd k) looked up as integers plus 12, then two vpdpbusd with A's
// even-k and odd-k bytes.
// CHECK:           %[[START:.*]] = vector.load %[[STARTS]][%c0, %{{.*}}] : memref<1x144xi32>, vector<16xi32>
// CHECK:           %[[RAW:.*]] = vector.load %{{.*}} : memref<5x592xi8>, vector<64xi8>
// CHECK:           %[[LO:.*]] = arith.andi %[[RAW]], %{{.*}} : vector<64xi8>
// CHECK:           %[[HI:.*]] = arith.shrui %[[RAW]], %{{.*}} : vector<64xi8>
// CHECK:           %[[ULO:.*]] = llvm.call_intrinsic "llvm.x86.avx512.pshuf.b.512"(%[[BTAB]], %[[LO]])
// CHECK:           %[[UHI:.*]] = llvm.call_intrinsic "llvm.x86.avx512.pshuf.b.512"(%[[BTAB]], %[[HI]])
// CHECK:           %[[AE:.*]] = vector.load %[[AB]][%c0, %{{.*}}] : memref<1x1152xi8>, vector<64xi8>
// CHECK:           %[[AO:.*]] = vector.load %[[AB]][%c0, %{{.*}}] : memref<1x1152xi8>, vector<64xi8>
// CHECK:           %[[S0:.*]] = llvm.call_intrinsic "llvm.x86.avx512.vpdpbusd.512"(%[[START]], %[[ULO]], %[[AE]]) : (vector<16xi32>, vector<64xi8>, vector<64xi8>) -> vector<16xi32>
// CHECK:           %[[S1:.*]] = llvm.call_intrinsic "llvm.x86.avx512.vpdpbusd.512"(%[[S0]], %[[UHI]], %[[AO]])
// Each chunk's four 32-blocks are four lanes each: B's scales spread by a shuffle (the
// first chunk of the four: scales 0-3), times A's lanes' scales, into the totals.
// CHECK:           %[[SAV:.*]] = vector.load %[[SA]][%c0, %{{.*}}] : memref<1x144xf32>, vector<16xf32>
// CHECK:           %[[SPREAD:.*]] = vector.shuffle %[[SB:.*]], %[[SB]] [0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3]
// CHECK:           %[[SS:.*]] = arith.mulf %[[SAV]], %[[SPREAD]] : vector<16xf32>
// CHECK:           %[[F:.*]] = arith.sitofp %[[S1]] : vector<16xi32> to vector<16xf32>
// CHECK:           %[[U:.*]] = arith.mulf %[[F]], %{{.*}} : vector<16xf32>
// CHECK:           vector.fma %[[U]], %[[SS]], %{{.*}} : vector<16xf32>
// CHECK:           vector.shuffle %{{.*}} [4, 4, 4, 4, 5, 5, 5, 5, 6, 6, 6, 6, 7, 7, 7, 7]
// CHECK:           vector.shuffle %{{.*}} [12, 12, 12, 12, 13, 13, 13, 13, 14, 14, 14, 14, 15, 15, 15, 15]
// CHECK:           scf.yield
// The ninth chunk alone (its four scales), then the 32 k past the chunks one at a time.
// CHECK:         vector.load %{{.*}}[%{{.*}}, %c32] : memref<5x37xi8>, vector<4xi8>
// CHECK:         scf.for %{{.*}} = %c1152 to %c1184 step %c1
// CHECK:         memref.store %{{.*}} : memref<1x8xf32>
// ASM-LABEL:   mxfp4:
// ASM:         vpshufb %zmm
// ASM:         vpdpbusd %zmm
// The form off (gemv=false): the row tiles.
// OFF-LABEL:   func.func @mxfp4
// OFF-NOT:     memref<1x1152xi8>
// OFF:         vector.broadcast %{{.*}} : i32 to vector<16xi32>
func.func @mxfp4(%a: memref<1x592x!lowp.packed<f4E2M1FN>>, %sa: memref<1x37xf8E8M0FNU>, %b: memref<5x592x!lowp.packed<f4E2M1FN>>,
                 %sb: memref<5x37xf8E8M0FNU>, %c: memref<1x5xf32>) {
  lowp.scaled_matmul %a[%sa], %b[%sb] into %c layouts(#lowp.mx<32>, #lowp.mx<32>)
      : memref<1x592x!lowp.packed<f4E2M1FN>>[memref<1x37xf8E8M0FNU>], memref<5x592x!lowp.packed<f4E2M1FN>>[memref<5x37xf8E8M0FNU>] -> memref<1x5xf32>
  return
}

// -----

// Per tensor, two rows of A, FP4 one code a byte: no scales along K, so an interval runs
// as long as each lane's sum stays within f32's integers (all 4 chunks here, one start
// per lane); the sums converted once and added, the unit (E2M1 x E2M1: 2^-2) applied to
// each output, the scales in the write-back. With dot=i8 each step is pmaddubsw and
// pmaddwd with ones (8 lanes: 32-byte vectors, chunks of 32 k; two rows of B a group in
// 16 ymm, so 3 groups).
// I8-LABEL:    func.func @fp4_per_tensor
// I8:          memref.alloc() {alignment = 64 : i64} : memref<2x128xi8>
// I8:          scf.parallel (%{{.*}}) = (%c0) to (%c3) step (%c1) {
// I8:          %[[S:.*]]:4 = scf.for %{{.*}} = %c0 to %c4 step %c1 iter_args({{.*}}) -> (vector<8xi32>, vector<8xi32>, vector<8xi32>, vector<8xi32>) {
// I8:            %[[U:.*]] = llvm.call_intrinsic "llvm.x86.avx2.pshuf.b"
// I8:            %[[P:.*]] = llvm.call_intrinsic "llvm.x86.avx2.pmadd.ub.sw"(%[[U]], %{{.*}}) : (vector<32xi8>, vector<32xi8>) -> vector<16xi16>
// I8-NEXT:       %[[Q:.*]] = llvm.call_intrinsic "llvm.x86.avx2.pmadd.wd"(%[[P]], %{{.*}}) : (vector<16xi16>, vector<16xi16>) -> vector<8xi32>
// I8-NEXT:       arith.addi %{{.*}}, %[[Q]] : vector<8xi32>
// I8:          arith.sitofp %[[S]]#0 : vector<8xi32> to vector<8xf32>
// I8-NOT:      vector.fma
// I8:          arith.mulf %{{.*}}, %cst{{.*}} : f32
func.func @fp4_per_tensor(%a: memref<2x128xf4E2M1FN>, %sa: memref<1x1xf32>, %b: memref<6x128xf4E2M1FN>,
                          %sb: memref<1x1xf32>, %c: memref<2x6xf32>) {
  lowp.scaled_matmul %a[%sa], %b[%sb] into %c layouts(#lowp.per_tensor, #lowp.per_tensor)
      : memref<2x128xf4E2M1FN>[memref<1x1xf32>], memref<6x128xf4E2M1FN>[memref<1x1xf32>] -> memref<2x6xf32>
  return
}

// -----

// The GEMV form on bf16 pairs (dot_gemv.rs; its numerics: pair_gemv_form_matches_the_oracle
// in tests/integration/to_loops.rs): M = 1, E4M3 per tensor, K = 200 = 6 chunks of 32 k
// and 8 past them. E4M3's top bit is the sign of every value, so the tables hold the bf16
// patterns of its 128 magnitudes, 64 a lookup (code 1 = 2^-9 = 0x3B00 = 15104, code 8 =
// 2^-6 = 0x3C80 = 15488; 127, NaN, 0x7FC0 = 32704), and the sign moves in from bit 7.
// PAIRS-LABEL: func.func @fp8_per_tensor
// PAIRS-DAG:   %[[SIGN:.*]] = arith.constant dense<-32768> : vector<32xi16>
// PAIRS-DAG:   %[[BIT6:.*]] = arith.constant dense<64> : vector<32xi16>
// PAIRS-DAG:   %[[T0:.*]] = arith.constant dense<[0, 15104, 15232, 15296, 15360, {{.*}}]> : vector<32xi16>
// PAIRS-DAG:   %[[T3:.*]] = arith.constant dense<[{{.*}}, 17376, 32704]> : vector<32xi16>
// A's patterns, a chunk at a time, in k order.
// PAIRS:       %[[AP:.*]] = memref.alloc() {alignment = 64 : i64} : memref<1x192xi16>
// PAIRS:       scf.for %{{.*}} = %c0 to %c6 step %c1 {
// PAIRS:         vector.load %{{.*}} : memref<1x200xi8>, vector<32xi8>
// PAIRS:         llvm.call_intrinsic "llvm.x86.avx512.vpermi2var.hi.512"(%[[T0]], %{{.*}}, %{{.*}})
// PAIRS:         vector.store %{{.*}}, %[[AP]]
// No scale along K: one loop over all the chunks, the sums of four rows of B carried; each
// row's 32 codes widened, looked up twice (vpermi2w reads the low 6 bits; bit 6 picks),
// the sign or-ed in, and one vdpbf16ps with A's patterns.
// PAIRS:       scf.parallel (%{{.*}}) = (%c0) to (%c2) step (%c1) {
// PAIRS:         %[[S:.*]]:4 = scf.for %{{.*}} = %c0 to %c6 step %c1 iter_args({{.*}}) -> (vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>) {
// PAIRS:           %[[RAW:.*]] = vector.load %{{.*}} : memref<6x200xi8>, vector<32xi8>
// PAIRS-NEXT:      %[[W:.*]] = arith.extui %[[RAW]] : vector<32xi8> to vector<32xi16>
// PAIRS-NEXT:      %[[LO:.*]] = llvm.call_intrinsic "llvm.x86.avx512.vpermi2var.hi.512"(%[[T0]], %[[W]], %{{.*}})
// PAIRS-NEXT:      %[[HI:.*]] = llvm.call_intrinsic "llvm.x86.avx512.vpermi2var.hi.512"(%{{.*}}, %[[W]], %[[T3]])
// PAIRS-NEXT:      %[[B6:.*]] = arith.andi %[[W]], %[[BIT6]] : vector<32xi16>
// PAIRS-NEXT:      %[[PICK:.*]] = arith.cmpi ne, %[[B6]], %{{.*}} : vector<32xi16>
// PAIRS-NEXT:      %[[V:.*]] = arith.select %[[PICK]], %[[HI]], %[[LO]] : vector<32xi1>, vector<32xi16>
// PAIRS-NEXT:      %[[UP:.*]] = arith.shli %[[W]], %{{.*}} : vector<32xi16>
// PAIRS-NEXT:      %[[SB:.*]] = arith.andi %[[UP]], %[[SIGN]] : vector<32xi16>
// PAIRS-NEXT:      %[[P:.*]] = arith.ori %[[V]], %[[SB]] : vector<32xi16>
// PAIRS-NEXT:      %[[B0:.*]] = vector.bitcast %[[P]] : vector<32xi16> to vector<32xbf16>
// PAIRS:           %[[A:.*]] = vector.load %[[AP]][%c0, %{{.*}}] : memref<1x192xi16>, vector<32xi16>
// PAIRS-NEXT:      %[[A0:.*]] = vector.bitcast %[[A]] : vector<32xi16> to vector<32xbf16>
// PAIRS-NEXT:      llvm.call_intrinsic "llvm.x86.avx512bf16.dpbf16ps.512"(%{{.*}}, %[[A0]], %[[B0]]) : (vector<16xf32>, vector<32xbf16>, vector<32xbf16>) -> vector<16xf32>
// The 8 k past the chunks, one at a time into lane 0 (f32 values from tables).
// PAIRS:         scf.for %{{.*}} = %c192 to %c200 step %c1 iter_args(%{{.*}} = %[[S]]#0,
// PAIRS:         memref.store %{{.*}} : memref<1x8xf32>
// PASM-LABEL:  fp8_per_tensor:
// PASM:        vperm{{[ti]}}2w %zmm
// PASM:        vdpbf16ps %zmm
func.func @fp8_per_tensor(%a: memref<1x200xf8E4M3FN>, %sa: memref<1x1xf32>, %b: memref<6x200xf8E4M3FN>,
                          %sb: memref<1x1xf32>, %c: memref<1x6xf32>) {
  lowp.scaled_matmul %a[%sa], %b[%sb] into %c layouts(#lowp.per_tensor, #lowp.per_tensor)
      : memref<1x200xf8E4M3FN>[memref<1x1xf32>], memref<6x200xf8E4M3FN>[memref<1x1xf32>] -> memref<1x6xf32>
  return
}

// -----

// bf16 pairs on MXFP8, M = 1: a chunk (32 k) is one MX segment. K = 600: 18 chunks and
// 24 k past them. Chunks go 16 at a time (here once): each row of B's 16 scales of them
// one load, decoded lane by lane, times A's 16, into the iteration's scratch; each chunk's
// sums then take their products by a broadcast. The 2 chunks past the group each take a
// scalar decode and product.
// PAIRS-LABEL: func.func @mxfp8
// PAIRS:       %[[SA:.*]] = memref.alloc() {alignment = 64 : i64} : memref<1x19xf32>
// PAIRS:       scf.parallel
// PAIRS-NEXT:    %[[SCRATCH:.*]] = memref.alloc() {alignment = 64 : i64} : memref<4x16xf32>
// PAIRS:           %[[RAW:.*]] = vector.load %{{.*}} : memref<5x19xi8>, vector<16xi8>
// PAIRS-NEXT:      arith.extui %[[RAW]] : vector<16xi8> to vector<16xi32>
// PAIRS-COUNT-3:   vector.load %{{.*}} : memref<5x19xi8>, vector<16xi8>
// PAIRS:           %[[SAV:.*]] = vector.load %[[SA]][%c0, %c0] : memref<1x19xf32>, vector<16xf32>
// PAIRS-NEXT:      %[[P:.*]] = arith.mulf %[[SAV]], %{{.*}} : vector<16xf32>
// PAIRS-NEXT:      vector.store %[[P]], %[[SCRATCH]][%c0, %c0] : memref<4x16xf32>, vector<16xf32>
// PAIRS:           scf.for %[[U:.*]] = %c0 to %c16 step %c1 iter_args(
// PAIRS-COUNT-4:     llvm.call_intrinsic "llvm.x86.avx512bf16.dpbf16ps.512"
// PAIRS-NEXT:        %[[S0:.*]] = memref.load %[[SCRATCH]][%c0, %[[U]]] : memref<4x16xf32>
// PAIRS-NEXT:        %[[B0:.*]] = vector.broadcast %[[S0]] : f32 to vector<16xf32>
// PAIRS-NEXT:        vector.fma %{{.*}}, %[[B0]], %{{.*}} : vector<16xf32>
// PAIRS:           scf.for %{{.*}} = %c16 to %c18 step %c1 iter_args(
// PAIRS:             memref.load %{{.*}} : memref<5x19xi8>
// PAIRS:           memref.dealloc %[[SCRATCH]]
// The products come as an FMA's broadcast operand.
// PASM-LABEL:  mxfp8:
// PASM:        vdpbf16ps %zmm
// PASM:        vfmadd231ps {{.*}}(%{{.*}}){1to16}, %zmm
func.func @mxfp8(%a: memref<1x600xf8E4M3FN>, %sa: memref<1x19xf8E8M0FNU>, %b: memref<5x600xf8E4M3FN>,
                 %sb: memref<5x19xf8E8M0FNU>, %c: memref<1x5xf32>) {
  lowp.scaled_matmul %a[%sa], %b[%sb] into %c layouts(#lowp.mx<32>, #lowp.mx<32>)
      : memref<1x600xf8E4M3FN>[memref<1x19xf8E8M0FNU>], memref<5x600xf8E4M3FN>[memref<5x19xf8E8M0FNU>] -> memref<1x5xf32>
  return
}

// -----

// bf16 pairs on MXFP8, M = 8: the E8M0 scales fold into the patterns (4 rows or more).
// Whether A's scales fold is decided once: each within the fold's 2^-47 ..= 2^32 (code - 80
// <= 79), or, not NaN, a block of ±0 codes. A's patterns of each chunk are laid out
// twice, as they are and with their scale's exponent added to each exponent field (not
// zeros', infinities' or NaNs'). B's are folded as they are looked up, each chunk's scale
// checked the same way (out of range: its folded patterns all ±0, `& 0x7FFF`); the sums
// run along the K block with no scale (16 sums, two rows of B). Where A's or the block's
// scales of B do not fold, the block is summed as without the fold, in pieces of A's
// rows, each chunk's sums scaled into the totals.
// PAIRS-LABEL: func.func @mxfp8_rows8
// PAIRS:       %[[FROMA:.*]] = arith.subi %{{.*}}, %c80_i32 : i32
// PAIRS-NEXT:  arith.cmpi ule, %[[FROMA]], %c79_i32 : i32
// PAIRS:       %[[AOK:.*]] = scf.if %{{.*}} -> (i1) {
// PAIRS:       %[[AP:.*]] = memref.alloc() {alignment = 64 : i64} : memref<8x576xi16>
// PAIRS:       %[[APF:.*]] = memref.alloc() {alignment = 64 : i64} : memref<8x576xi16>
// PAIRS:       scf.for
// PAIRS:           vector.store %[[PAT:.*]], %[[AP]][
// PAIRS:           %[[CODE:.*]] = arith.extui %{{.*}} : i8 to i32
// PAIRS-NEXT:      %[[E:.*]] = arith.subi %[[CODE]], %c127_i32 : i32
// PAIRS-NEXT:      %[[SH:.*]] = arith.shli %[[E]], %c7_i32 : i32
// PAIRS-NEXT:      %[[D:.*]] = arith.trunci %[[SH]] : i32 to i16
// PAIRS:           %[[DV:.*]] = vector.broadcast %[[D]] : i16 to vector<32xi16>
// PAIRS-NEXT:      %[[SUM:.*]] = arith.addi %[[PAT]], %[[DV]] : vector<32xi16>
// PAIRS-NEXT:      %[[F:.*]] = arith.select %{{.*}}, %[[SUM]], %[[PAT]] : vector<32xi1>, vector<32xi16>
// PAIRS-NEXT:      vector.store %[[F]], %[[APF]][
// PAIRS:       scf.parallel
// PAIRS:           %[[T:.*]]:17 = scf.for %{{.*}} = %c0 to %c18 step %c1 iter_args({{.*}}) -> ({{.*}}, i1) {
// PAIRS:             arith.shli %{{.*}}, %c7_i32 : i32
// PAIRS:             %[[BF:.*]] = arith.select %{{.*}} : vector<32xi1>, vector<32xi16>
// PAIRS:             %[[FROMB:.*]] = arith.subi %{{.*}}, %c80_i32 : i32
// PAIRS-NEXT:        %[[INB:.*]] = arith.cmpi ule, %[[FROMB]], %c79_i32 : i32
// PAIRS-NEXT:        scf.if %[[INB]] -> (i1) {
// PAIRS-NEXT:          scf.yield %true : i1
// PAIRS-NEXT:        } else {
// PAIRS-NEXT:          arith.cmpi ne, %{{.*}}, %c255_i32 : i32
// PAIRS-NEXT:          %[[MAG:.*]] = arith.andi %[[BF]], %{{.*}} : vector<32xi16>
// PAIRS-NEXT:          %[[ANY:.*]] = vector.reduction <or>, %[[MAG]] : vector<32xi16> into i16
// PAIRS-NEXT:          arith.cmpi eq, %[[ANY]], %c0_i16 : i16
// PAIRS:             vector.load %[[APF]][%c0, %{{.*}}] : memref<8x576xi16>, vector<32xi16>
// PAIRS-COUNT-16:    llvm.call_intrinsic "llvm.x86.avx512bf16.dpbf16ps.512"
// PAIRS-NOT:         vector.fma
// PAIRS:             scf.yield
// PAIRS:           %[[OK:.*]] = arith.andi %[[T]]#16, %[[AOK]] : i1
// PAIRS-NEXT:      scf.if %[[OK]] {
// PAIRS:           } else {
// PAIRS:             vector.load %[[AP]][
// PAIRS:             vector.fma
func.func @mxfp8_rows8(%a: memref<8x600xf8E4M3FN>, %sa: memref<8x19xf8E8M0FNU>, %b: memref<5x600xf8E4M3FN>,
                       %sb: memref<5x19xf8E8M0FNU>, %c: memref<8x5xf32>) {
  lowp.scaled_matmul %a[%sa], %b[%sb] into %c layouts(#lowp.mx<32>, #lowp.mx<32>)
      : memref<8x600xf8E4M3FN>[memref<8x19xf8E8M0FNU>], memref<5x600xf8E4M3FN>[memref<5x19xf8E8M0FNU>] -> memref<8x5xf32>
  return
}

// -----

// bf16 pairs past 16 rows with no scale along K: M = 24, E4M3 per tensor, K = 200. A's
// rows leave room for one row of B only, so they go in pieces; B's patterns of the K block
// (6 chunks; the block would hold 21) are looked up once for the group's four rows into
// the iteration's buffer, and the four pieces of 6 rows, a loop, read them from there:
// 24 sums, 4 + 1 loads a chunk.
// PAIRS-LABEL: func.func @fp8_rows24
// PAIRS:       %[[AP:.*]] = memref.alloc() {alignment = 64 : i64} : memref<24x192xi16>
// PAIRS:       scf.parallel
// PAIRS-NEXT:    %[[STAGE:.*]] = memref.alloc() {alignment = 64 : i64} : memref<4x672xbf16>
// PAIRS:           llvm.call_intrinsic "llvm.x86.avx512.vpermi2var.hi.512"
// PAIRS:           vector.store %{{.*}}, %[[STAGE]][%c0, %{{.*}}] : memref<4x672xbf16>, vector<32xbf16>
// PAIRS:           vector.store %{{.*}}, %[[STAGE]][%c3, %{{.*}}] : memref<4x672xbf16>, vector<32xbf16>
// PAIRS:         scf.for %[[P:.*]] = %c0 to %c4 step %c1 {
// PAIRS-NEXT:      %[[I0:.*]] = arith.muli %[[P]], %c6 : index
// PAIRS-NEXT:      %{{.*}}:24 = scf.for %{{.*}} = %c0 to %c6 step %c1 iter_args(
// PAIRS-NEXT:        %[[AT:.*]] = arith.muli %{{.*}}, %c32 : index
// PAIRS-NEXT:        %[[B0:.*]] = vector.load %[[STAGE]][%c0, %[[AT]]] : memref<4x672xbf16>, vector<32xbf16>
// PAIRS-COUNT-3:     vector.load %[[STAGE]]
// PAIRS-NEXT:        %[[A:.*]] = vector.load %[[AP]][%[[I0]], %[[AT]]] : memref<24x192xi16>, vector<32xi16>
// PAIRS-NEXT:        %[[A0:.*]] = vector.bitcast %[[A]] : vector<32xi16> to vector<32xbf16>
// PAIRS-NEXT:        llvm.call_intrinsic "llvm.x86.avx512bf16.dpbf16ps.512"(%{{.*}}, %[[A0]], %[[B0]])
// PAIRS-NOT:         vpermi2var
// PAIRS-COUNT-23:    llvm.call_intrinsic "llvm.x86.avx512bf16.dpbf16ps.512"
// PAIRS:       memref.dealloc %[[STAGE]]
func.func @fp8_rows24(%a: memref<24x200xf8E4M3FN>, %sa: memref<1x1xf32>, %b: memref<9x200xf8E4M3FN>,
                      %sb: memref<1x1xf32>, %c: memref<24x9xf32>) {
  lowp.scaled_matmul %a[%sa], %b[%sb] into %c layouts(#lowp.per_tensor, #lowp.per_tensor)
      : memref<24x200xf8E4M3FN>[memref<1x1xf32>], memref<9x200xf8E4M3FN>[memref<1x1xf32>] -> memref<24x9xf32>
  return
}
