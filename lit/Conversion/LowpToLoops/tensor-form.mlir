// RUN: lowp-opt %s --pass-pipeline='builtin.module(func.func(lowp-to-loops))' -verify-diagnostics
// RUN: not lowp-opt %s --pass-pipeline='builtin.module(func.func(lowp-expand-quantize))' 2>&1 | FileCheck %s --check-prefix=EXPAND
// EXPAND: tensor-form.mlir:[[# @LINE + 16]]:8: error: lowp.quantize: the op is on tensors; lowerings take its memref form: bufferize first (one-shot-bufferize{bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map})
// RUN: lowp-opt %s --pass-pipeline='builtin.module(func.func(lowp-to-nvvm{chip=sm_90a}))' -verify-diagnostics

// The lowerings take the memref form; the tensor form is refused at the op, naming the
// bufferization that makes the memref form.

func.func @matmul(%a: tensor<16x64xf8E4M3FN>, %sa: tensor<1x1xf32>,
                  %b: tensor<32x64xf8E4M3FN>, %sb: tensor<1x1xf32>, %c: tensor<16x32xf32>) -> tensor<16x32xf32> {
  // expected-error @below {{lowp.scaled_matmul: the op is on tensors; lowerings take its memref form: bufferize first (one-shot-bufferize}}
  %r = lowp.scaled_matmul %a[%sa], %b[%sb] into %c layouts(#lowp.per_tensor, #lowp.per_tensor)
      : tensor<16x64xf8E4M3FN>[tensor<1x1xf32>], tensor<32x64xf8E4M3FN>[tensor<1x1xf32>] -> tensor<16x32xf32>
  return %r : tensor<16x32xf32>
}

func.func @quantize(%x: tensor<4x64xf32>, %s: tensor<1x1xf32>, %q0: tensor<4x64xf8E4M3FN>) -> tensor<4x64xf8E4M3FN> {
  // expected-error @below {{lowp.quantize: the op is on tensors; lowerings take its memref form: bufferize first}}
  %q = lowp.quantize %x[%s] layout #lowp.per_tensor into %q0
      : tensor<4x64xf32>[tensor<1x1xf32>] -> tensor<4x64xf8E4M3FN>
  return %q : tensor<4x64xf8E4M3FN>
}
