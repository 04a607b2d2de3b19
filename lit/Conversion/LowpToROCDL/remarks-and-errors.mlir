// RUN: lowp-opt %s --split-input-file --verify-diagnostics --pass-pipeline='builtin.module(func.func(lowp-to-rocdl{chip=gfx942 kernel=mfma}))'
// RUN: not lowp-opt %s --pass-pipeline='builtin.module(func.func(lowp-to-rocdl{chip=gfx90a}))' 2>&1 | FileCheck %s --check-prefix=CHIP

// OCP E4M3 on gfx942: fed as E4M3 FNUZ with the same bits (half the value), never silently.
func.func @ocp_e4m3(%a: memref<16x64xf8E4M3FN>, %sa: memref<1x1xf32>, %b: memref<16x64xf8E4M3FNUZ>,
                    %sb: memref<1x1xf32>, %c: memref<16x16xf32>) {
  // expected-remark @+1 {{lhs f8e4m3 is fed to the gfx942 MFMA as f8e4m3fnuz with the same bits, at 2^-1 of its value (the formats differ in bias); the result is scaled back exactly}}
  lowp.scaled_matmul %a[%sa], %b[%sb] into %c layouts(#lowp.per_tensor, #lowp.per_tensor)
      : memref<16x64xf8E4M3FN>[memref<1x1xf32>], memref<16x64xf8E4M3FNUZ>[memref<1x1xf32>] -> memref<16x16xf32>
  return
}

// -----

// OCP E5M2 has infinities FNUZ lacks: no FP8 MFMA; E5M2 FNUZ's finite exponent 31 has no
// f16 pattern; bf16's patterns hold both (E5M2's infinities through the top-exponent rule):
// the bf16 MFMA takes the op, so kernel=mfma compiles it without a word
// (lowp-to-rocdl.mlir checks the instructions). With E8M0 scales every 24 along K no MFMA
// fits (its K neither divides 24 nor is divided by it): refused with the reasons.
func.func @ocp_e5m2(%a: memref<16x64xf8E5M2>, %sa: memref<1x1xf32>, %b: memref<16x64xf8E5M2FNUZ>,
                    %sb: memref<1x1xf32>, %c: memref<16x16xf32>) {
  lowp.scaled_matmul %a[%sa], %b[%sb] into %c layouts(#lowp.per_tensor, #lowp.per_tensor)
      : memref<16x64xf8E5M2>[memref<1x1xf32>], memref<16x64xf8E5M2FNUZ>[memref<1x1xf32>] -> memref<16x16xf32>
  return
}

// -----

func.func @ocp_e5m2_mx24(%a: memref<16x64xf8E5M2>, %sa: memref<16x3xf8E8M0FNU>, %b: memref<16x64xf8E5M2>,
                        %sb: memref<16x3xf8E8M0FNU>, %c: memref<16x16xf32>) {
  // expected-error @+1 {{no mfma kernel for this op on gfx942: f8e5m2 embeds in none of f8e4m3fnuz, f8e5m2fnuz; for f16: the scales change every 24 along K; the instruction sums 16; for bf16: the scales change every 24 along K; the instruction sums 16}}
  lowp.scaled_matmul %a[%sa], %b[%sb] into %c layouts(#lowp.mx<24>, #lowp.mx<24>)
      : memref<16x64xf8E5M2>[memref<16x3xf8E8M0FNU>], memref<16x64xf8E5M2>[memref<16x3xf8E8M0FNU>] -> memref<16x16xf32>
  return
}

// -----

// A static dimension of 2^31 or more: refused before the kernel derives sizes from it.
func.func @huge(%a: memref<9223372036854775744x64xf8E4M3FNUZ>, %sa: memref<1x1xf32>,
                %b: memref<8x64xf8E4M3FNUZ>, %sb: memref<1x1xf32>,
                %c: memref<9223372036854775744x8xf32>) {
  // expected-error @+1 {{a static dimension of 9223372036854775744 is beyond the GPU kernels' 2^31 - 1}}
  lowp.scaled_matmul %a[%sa], %b[%sb] into %c layouts(#lowp.per_tensor, #lowp.per_tensor)
      : memref<9223372036854775744x64xf8E4M3FNUZ>[memref<1x1xf32>], memref<8x64xf8E4M3FNUZ>[memref<1x1xf32>]
      -> memref<9223372036854775744x8xf32>
  return
}

// CHIP: 'gfx90a' is not accepted; expected gfx942, gfx950

// -----

// An op inside a gpu.launch body is in a kernel already: refused at the op.
func.func @in_launch(%a: memref<64x64xf8E4M3FNUZ>, %sa: memref<1x1xf32>, %b: memref<64x64xf8E4M3FNUZ>,
                     %sb: memref<1x1xf32>, %c: memref<64x64xf32>) {
  %c1 = arith.constant 1 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
    // expected-error @below {{lowp.scaled_matmul: it is inside a gpu.launch body, a kernel already}}
    lowp.scaled_matmul %a[%sa], %b[%sb] into %c layouts(#lowp.per_tensor, #lowp.per_tensor)
        : memref<64x64xf8E4M3FNUZ>[memref<1x1xf32>], memref<64x64xf8E4M3FNUZ>[memref<1x1xf32>] -> memref<64x64xf32>
    gpu.terminator
  }
  return
}

// -----

// Inside an scf.parallel, which the GPU pipelines make a kernel: refused at the op.
func.func @in_parallel(%a: memref<64x64xf8E4M3FNUZ>, %sa: memref<1x1xf32>, %b: memref<64x64xf8E4M3FNUZ>,
                       %sb: memref<1x1xf32>, %c: memref<64x64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  scf.parallel (%i) = (%c0) to (%c1) step (%c1) {
    // expected-error @below {{lowp.scaled_matmul: it is inside an scf.parallel}}
    lowp.scaled_matmul %a[%sa], %b[%sb] into %c layouts(#lowp.per_tensor, #lowp.per_tensor)
        : memref<64x64xf8E4M3FNUZ>[memref<1x1xf32>], memref<64x64xf8E4M3FNUZ>[memref<1x1xf32>] -> memref<64x64xf32>
    scf.reduce
  }
  return
}
