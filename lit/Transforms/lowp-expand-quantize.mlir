// RUN: lowp-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(lowp-expand-quantize,canonicalize,cse))' | FileCheck %s
// RUN: lowp-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(lowp-expand-quantize{decode=table},canonicalize,cse))' | FileCheck %s --check-prefix=TABLE

// The structure of the expansion; its numerics are checked bit for bit against lowp-formats
// by tests/integration/expand_quantize.rs.

// MX FP4: the E8M0 scale byte is decoded on the f32 bit pattern (byte << 23, with bit 22
// set for 0x00 -> 2^-127 = 0x400000 and 0xFF -> NaN = 0x7FC00000), the element is encoded round-to-nearest-even (E2M1 keeps 1 mantissa bit:
// shift 22) and saturated at code 7 (6.0).
// CHECK-LABEL: func.func @quantize_mx
// CHECK-DAG:   %[[SAT:.*]] = arith.constant 7 : i32
// CHECK-DAG:   %[[MIN_E8M0:.*]] = arith.constant 4194304 : i32
// CHECK-DAG:   %[[SHIFT:.*]] = arith.constant 22 : i32
// CHECK:       %[[S:.*]] = lowp.storage_cast %{{.*}} : memref<4x2xf8E8M0FNU> to memref<4x2xi8>
// CHECK:       %[[Q:.*]] = lowp.storage_cast %{{.*}} : memref<4x64xf4E2M1FN> to memref<4x64xi8>
// CHECK:       scf.for %[[R:.*]] = %{{.*}} to %{{.*}} step
// CHECK:         scf.for %[[K:.*]] = %{{.*}} to %{{.*}} step
// CHECK:           %[[BLK:.*]] = arith.divui %[[K]], %{{.*}} : index
// CHECK:           memref.load %[[S]][%[[R]], %[[BLK]]] : memref<4x2xi8>
// CHECK:           arith.cmpi uge, %{{.*}}, %c254_i32 : i32
// CHECK:           arith.ori %{{.*}}, %[[MIN_E8M0]] : i32
// CHECK:           %[[X:.*]] = memref.load %{{.*}}[%[[R]], %[[K]]] : memref<4x64xf32>
// CHECK:           arith.divf %[[X]], %{{.*}} : f32
// CHECK:           arith.shrui %{{.*}}, %[[SHIFT]] : i32
// CHECK:           arith.minui %{{.*}}, %[[SAT]] : i32
// CHECK:           %[[CODE:.*]] = arith.trunci %{{.*}} : i32 to i8
// CHECK:           memref.store %[[CODE]], %[[Q]][%[[R]], %[[K]]] : memref<4x64xi8>
// CHECK-NOT:   lowp.quantize
func.func @quantize_mx(%x: memref<4x64xf32>, %s: memref<4x2xf8E8M0FNU>, %q: memref<4x64xf4E2M1FN>) {
  lowp.quantize %x[%s] layout #lowp.mx<32> into %q : memref<4x64xf32>[memref<4x2xf8E8M0FNU>] -> memref<4x64xf4E2M1FN>
  return
}

// -----

// Dequantize E4M3 per-tensor: bits by default (S.1111.111 is NaN), a 256-entry table with
// decode=table.
// CHECK-LABEL: func.func @dequantize_e4m3
// CHECK-DAG:   %[[C127:.*]] = arith.constant 127 : i32
// CHECK:       lowp.storage_cast %{{.*}} : memref<2x16xf8E4M3FN> to memref<2x16xi8>
// CHECK:       arith.cmpi eq, %{{.*}}, %[[C127]] : i32
// CHECK:       arith.mulf
// CHECK:       memref.store %{{.*}} : memref<2x16xf32>
// TABLE-LABEL: func.func @dequantize_e4m3
// (code 0x01 is 2^-9: the f32 bytes 00 00 00 3B)
// TABLE-DAG:   %[[VALUES:.*]] = arith.constant dense<"0x000000000000003B{{[0-9A-F]*}}"> : vector<256xf32>
// TABLE-DAG:   %[[T:.*]] = memref.alloca() {alignment = 64 : i64} : memref<256xf32>
// TABLE:       vector.store %[[VALUES]], %[[T]][%{{.*}}] : memref<256xf32>, vector<256xf32>
// TABLE:       %[[I:.*]] = arith.index_castui %{{.*}} : i8 to index
// TABLE:       memref.load %[[T]][%[[I]]] : memref<256xf32>
func.func @dequantize_e4m3(%q: memref<2x16xf8E4M3FN>, %s: memref<1x1xf32>, %y: memref<2x16xf32>) {
  lowp.dequantize %q[%s] layout #lowp.per_tensor into %y : memref<2x16xf8E4M3FN>[memref<1x1xf32>] -> memref<2x16xf32>
  return
}

// -----

// A 4-bit custom format gets a 16-entry table; packed codes are split into nibbles.
// TABLE-LABEL: func.func @dequantize_packed_custom
// TABLE:       arith.constant dense<[0.000000e+00, 2.500000e-01, 5.000000e-01, 1.000000e+00, 2.000000e+00, 4.000000e+00, 8.000000e+00, 1.600000e+01, -0.000000e+00, {{.*}}]> : vector<16xf32>
// TABLE:       lowp.storage_cast %{{.*}} : memref<2x8x!lowp.packed<!lowp.mf<e3m0>>> to memref<2x8xi8>
// TABLE:       arith.remui
// TABLE:       arith.shrui
// TABLE:       arith.andi %{{.*}}, %{{.*}} : i32
// TABLE:       memref.load %{{.*}} : memref<16xf32>
func.func @dequantize_packed_custom(%q: memref<2x8x!lowp.packed<!lowp.mf<e3m0>>>, %s: memref<2x1xf32>, %y: memref<2x16xf32>) {
  lowp.dequantize %q[%s] layout #lowp.per_channel into %y : memref<2x8x!lowp.packed<!lowp.mf<e3m0>>>[memref<2x1xf32>] -> memref<2x16xf32>
  return
}

// -----

// NVFP4 with a global scale: the tensor's amax first (NaN if any element is NaN or inf),
// global = amax / (6 * 448) stored to the rank-0 memref, then per 16-element block the
// UE4M3 round-up (20 dropped f32 mantissa bits, subnormal steps of 2^-9 through math.ceil)
// and the UE4M3 byte.
// CHECK-LABEL: func.func @compute_scales_nvfp4_global
// CHECK-DAG:   %[[DENOM:.*]] = arith.constant 2.688000e+03 : f32
// CHECK-DAG:   %[[MASK:.*]] = arith.constant 1048575 : i32
// CHECK:       %[[AMAX:.*]]:2 = scf.for {{.*}} iter_args({{.*}}) -> (f32, i1)
// CHECK:         math.absf
// CHECK:         arith.maxnumf
// CHECK:         arith.cmpf uge
// CHECK:       %[[G:.*]] = arith.divf %{{.*}}, %[[DENOM]] : f32
// CHECK:       memref.store %{{.*}}, %{{.*}}[] : memref<f32>
// CHECK:       scf.for
// CHECK:         scf.for
// CHECK:           arith.andi %{{.*}}, %[[MASK]] : i32
// CHECK:           math.ceil
// CHECK:           arith.trunci %{{.*}} : i32 to i8
// CHECK:           memref.store %{{.*}} : memref<2x2xi8>
func.func @compute_scales_nvfp4_global(%x: memref<2x32xf32>, %s: memref<2x2xf8E4M3FN>, %g: memref<f32>) {
  lowp.compute_scales %x into %s, %g layout #lowp.nvfp4<16, global> format f4E2M1FN : memref<2x32xf32> -> memref<2x2xf8E4M3FN>, memref<f32>
  return
}

// -----

// Blockwise f32 scales need no byte cast; the OCP rule takes floor(log2 amax) from the
// exponent field (E4M3's emax is 8) and builds 2^k on the bit pattern.
// CHECK-LABEL: func.func @compute_scales_blockwise_ocp
// CHECK-NOT:   lowp.storage_cast
// CHECK:       arith.shrui %{{.*}}, %{{.*}} : i32
// CHECK:       memref.store %{{.*}} : memref<2x1xf32>
func.func @compute_scales_blockwise_ocp(%x: memref<4x64xf32>, %s: memref<2x1xf32>) {
  lowp.compute_scales %x into %s layout #lowp.blockwise<2x128> format f8E4M3FN {rounding = #lowp.rounding<ocp_mx>} : memref<4x64xf32> -> memref<2x1xf32>
  return
}

// -----

// Packed quantize writes two codes per byte, low nibble first, stepping K by 2.
// CHECK-LABEL: func.func @quantize_packed
// CHECK-DAG:   %[[C2:.*]] = arith.constant 2 : index
// CHECK-DAG:   %[[C4:.*]] = arith.constant 4 : i32
// CHECK:       scf.for %{{.*}} = %{{.*}} to %{{.*}} step %[[C2]]
// CHECK:         %[[HI:.*]] = arith.shli %{{.*}}, %[[C4]] : i32
// CHECK:         %[[BYTE:.*]] = arith.ori %{{.*}}, %[[HI]] : i32
// CHECK:         arith.trunci %[[BYTE]] : i32 to i8
// CHECK:         memref.store %{{.*}} : memref<2x16xi8>
func.func @quantize_packed(%x: memref<2x32xf32>, %s: memref<2x1xf32>, %q: memref<2x16x!lowp.packed<f4E2M1FN>>) {
  lowp.quantize %x[%s] layout #lowp.per_channel into %q : memref<2x32xf32>[memref<2x1xf32>] -> memref<2x16x!lowp.packed<f4E2M1FN>>
  return
}

// -----

// Dynamic shapes read their extents with memref.dim.
// CHECK-LABEL: func.func @dynamic
// CHECK-DAG:   memref.dim %{{.*}}, %{{.*}} : memref<?x?xf32>
// CHECK-DAG:   lowp.storage_cast %{{.*}} : memref<?x?xf8E5M2FNUZ> to memref<?x?xi8>
func.func @dynamic(%x: memref<?x?xf32>, %s: memref<?x1xf32>, %q: memref<?x?xf8E5M2FNUZ>) {
  lowp.quantize %x[%s] layout #lowp.per_channel into %q : memref<?x?xf32>[memref<?x1xf32>] -> memref<?x?xf8E5M2FNUZ>
  return
}
