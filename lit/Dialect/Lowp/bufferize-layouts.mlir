// RUN: lowp-opt %s -split-input-file --one-shot-bufferize="bufferize-function-boundaries" -verify-diagnostics

// The lowerings address rows as contiguous runs: a tensor whose buffer may have strided
// rows (one-shot-bufferize's default, fully dynamic layout for function arguments and
// unknown values) is refused where it is bufferized, with the options that avoid it.

func.func @matmul(%a: tensor<16x64xf8E4M3FN>, %sa: tensor<1x1xf32>,
                  %b: tensor<32x64xf8E4M3FN>, %sb: tensor<1x1xf32>) -> tensor<16x32xf32> {
  %init = tensor.empty() : tensor<16x32xf32>
  // expected-error @below {{failed to bufferize op}}
  // expected-error @below {{'lowp.scaled_matmul' op operand #0 bufferizes to 'memref<16x64xf8E4M3FN, strided<[?, ?], offset: ?>>', whose rows may not be contiguous; bufferize with identity layouts (one-shot-bufferize{function-boundary-type-conversion=identity-layout-map unknown-type-conversion=identity-layout-map})}}
  %r = lowp.scaled_matmul %a[%sa], %b[%sb] into %init layouts(#lowp.per_tensor, #lowp.per_tensor)
      : tensor<16x64xf8E4M3FN>[tensor<1x1xf32>], tensor<32x64xf8E4M3FN>[tensor<1x1xf32>] -> tensor<16x32xf32>
  return %r : tensor<16x32xf32>
}

// -----

func.func @quantize(%x: tensor<4x64xf32>, %s: tensor<1x1xf32>) -> tensor<4x64xf8E4M3FN> {
  %q0 = tensor.empty() : tensor<4x64xf8E4M3FN>
  // expected-error @below {{failed to bufferize op}}
  // expected-error @below {{'lowp.quantize' op operand #0 bufferizes to 'memref<4x64xf32, strided<[?, ?], offset: ?>>', whose rows may not be contiguous}}
  %q = lowp.quantize %x[%s] layout #lowp.per_tensor into %q0
      : tensor<4x64xf32>[tensor<1x1xf32>] -> tensor<4x64xf8E4M3FN>
  return %q : tensor<4x64xf8E4M3FN>
}
