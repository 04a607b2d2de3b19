// RUN: lowp-opt %s -split-input-file -verify-diagnostics

// One case per verifier rule of the lowp types, attributes and ops.

// expected-error @below {{minifloat needs at least one exponent bit, found e0m3}}
func.func private @no_exponent(memref<4x!lowp.mf<e0m3>>)

// -----

// expected-error @below {{minifloat e5m3 needs 9 bits, at most 8 fit a code}}
func.func private @too_wide(memref<4x!lowp.mf<e5m3>>)

// -----

// The fields are checked one by one: 1 + 3 + 4294967295 wraps to 3 in 32 bits.
// expected-error @below {{minifloat e3m4294967295 needs 4294967299 bits, at most 8 fit a code}}
func.func private @wraps(memref<4x!lowp.mf<e3m4294967295>>)

// -----

// expected-error @below {{minifloat e7m0 with bias -1 reaches 2^128, beyond f32 (at most 2^127)}}
func.func private @too_large(memref<4x!lowp.mf<e7m0, bias = -1>>)

// -----

// expected-error @below {{minifloat e1m0 with bias -110 has smallest step 2^111, above 2^104}}
func.func private @too_coarse(memref<4x!lowp.mf<e1m0, bias = -110>>)

// -----

// expected-error @below {{bias must be in -128..127, found 300}}
func.func private @bias_range(memref<4x!lowp.mf<e3m0, bias = 300>>)

// -----

// expected-error @below {{expected a minifloat shape 'eXmY' (e.g. e3m0), found 'x3m0'}}
func.func private @bad_shape(memref<4x!lowp.mf<x3m0>>)

// -----

// expected-error @below {{!lowp.packed holds two 4-bit codes per byte; expected f4E2M1FN or a 4-bit !lowp.mf, found 'f8E4M3FN'}}
func.func private @packed_fp8(memref<4x!lowp.packed<f8E4M3FN>>)

// -----

// expected-error @below {{!lowp.packed holds two 4-bit codes per byte; expected f4E2M1FN or a 4-bit !lowp.mf, found '!lowp.mf<e2m2>'}}
func.func private @packed_5bit(memref<4x!lowp.packed<!lowp.mf<e2m2>>>)

// -----

// expected-error @below {{#lowp.mx block size must be in 1..2147483647, found 0}}
func.func private @mx_zero() attributes {l = #lowp.mx<0>}

// -----

// expected-error @below {{#lowp.nvfp4 block size must be in 1..2147483647, found 0}}
func.func private @nvfp4_zero() attributes {l = #lowp.nvfp4<0>}

// -----

// A negative size is reported as written, not as the unsigned number it would wrap to.
// expected-error @below {{#lowp.mx block size must be in 1..2147483647, found -1}}
func.func private @mx_negative() attributes {l = #lowp.mx<-1>}

// -----

// expected-error @below {{#lowp.nvfp4 block size must be in 1..2147483647, found -16}}
func.func private @nvfp4_negative() attributes {l = #lowp.nvfp4<-16, global>}

// -----

// Past 32 bits: the value, not "integer value too large".
// expected-error @below {{#lowp.mx block size must be in 1..2147483647, found 1099511627776}}
func.func private @mx_huge() attributes {l = #lowp.mx<1099511627776>}

// -----

// expected-error @below {{#lowp.mx block size must be in 1..2147483647, found 2147483648}}
func.func private @mx_past_i32() attributes {l = #lowp.mx<2147483648>}

// -----

func.func private @mx_largest() attributes {l = #lowp.mx<2147483647>}

// -----

// expected-error @below {{#lowp.per_tensor takes no parameters}}
func.func private @per_tensor_parameters() attributes {l = #lowp.per_tensor<foo bar>}

// -----

// expected-error @below {{#lowp.per_channel takes no parameters}}
func.func private @per_channel_parameters() attributes {l = #lowp.per_channel<1>}

// -----

// expected-error @below {{expected 'global'}}
func.func private @nvfp4_keyword() attributes {l = #lowp.nvfp4<16, local>}

// -----

// expected-error @below {{#lowp.blockwise tile sides must be in 1..2147483647, found 0x128}}
func.func private @blockwise_zero() attributes {l = #lowp.blockwise<0x128>}

// -----

// Negative and wide sides as written.
// expected-error @below {{#lowp.blockwise tile sides must be in 1..2147483647, found -1x128}}
func.func private @blockwise_negative() attributes {l = #lowp.blockwise<-1x128>}

// -----

// expected-error @below {{#lowp.blockwise tile sides must be in 1..2147483647, found 128x4294967296}}
func.func private @blockwise_wide() attributes {l = #lowp.blockwise<128x4294967296>}

// -----

// expected-error @below {{expected a 2-D tile ROWSxCOLS (e.g. 1x128), found 1 dimension(s)}}
func.func private @blockwise_1d() attributes {l = #lowp.blockwise<128>}

// -----

// expected-error @below {{expected a 2-D tile ROWSxCOLS (e.g. 1x128), found 3 dimension(s)}}
func.func private @blockwise_3d() attributes {l = #lowp.blockwise<1x128x2>}


// -----

// Spaces around the x are the same tile.
func.func private @blockwise_spaced() attributes {l = #lowp.blockwise<1 x 128>}

// -----

func.func @k_mismatch(%a: memref<4x64xf8E4M3FN>, %sa: memref<1x1xf32>, %b: memref<8x32xf8E4M3FN>,
                      %sb: memref<1x1xf32>, %c: memref<4x8xf32>) {
  // expected-error @below {{'lowp.scaled_matmul' op lhs is 4x64 and rhs is 8x32: K must match (rhs is N x K, K-last)}}
  lowp.scaled_matmul %a[%sa], %b[%sb] into %c layouts(#lowp.per_tensor, #lowp.per_tensor)
      : memref<4x64xf8E4M3FN>[memref<1x1xf32>], memref<8x32xf8E4M3FN>[memref<1x1xf32>] -> memref<4x8xf32>
  return
}

// -----

func.func @packed_k(%a: memref<4x32x!lowp.packed<f4E2M1FN>>, %sa: memref<4x2xf8E8M0FNU>,
                    %b: memref<8x32xf4E2M1FN>, %sb: memref<8x1xf8E8M0FNU>, %c: memref<4x8xf32>) {
  // expected-error @below {{'lowp.scaled_matmul' op lhs is 4x64 and rhs is 8x32: K must match}}
  lowp.scaled_matmul %a[%sa], %b[%sb] into %c layouts(#lowp.mx<32>, #lowp.mx<32>)
      : memref<4x32x!lowp.packed<f4E2M1FN>>[memref<4x2xf8E8M0FNU>], memref<8x32xf4E2M1FN>[memref<8x1xf8E8M0FNU>] -> memref<4x8xf32>
  return
}

// -----

func.func @result_shape(%a: memref<4x64xf8E4M3FN>, %sa: memref<1x1xf32>, %b: memref<8x64xf8E4M3FN>,
                        %sb: memref<1x1xf32>, %c: memref<8x4xf32>) {
  // expected-error @below {{'lowp.scaled_matmul' op result is 8x4 but lhs x rhs^T is 4x8 (logical shapes must match)}}
  lowp.scaled_matmul %a[%sa], %b[%sb] into %c layouts(#lowp.per_tensor, #lowp.per_tensor)
      : memref<4x64xf8E4M3FN>[memref<1x1xf32>], memref<8x64xf8E4M3FN>[memref<1x1xf32>] -> memref<8x4xf32>
  return
}

// -----

func.func @bias_length(%a: memref<4x64xf8E4M3FN>, %sa: memref<1x1xf32>, %b: memref<8x64xf8E4M3FN>,
                       %sb: memref<1x1xf32>, %bias: memref<4xf32>, %c: memref<4x8xf32>) {
  // expected-error @below {{'lowp.scaled_matmul' op bias has 4 elements, expected N = 8}}
  lowp.scaled_matmul %a[%sa], %b[%sb] bias %bias into %c layouts(#lowp.per_tensor, #lowp.per_tensor)
      : memref<4x64xf8E4M3FN>[memref<1x1xf32>], memref<8x64xf8E4M3FN>[memref<1x1xf32>] bias memref<4xf32> -> memref<4x8xf32>
  return
}

// -----

func.func @scale_dtype(%a: memref<4x64xf4E2M1FN>, %sa: memref<4x2xf32>, %b: memref<8x64xf4E2M1FN>,
                       %sb: memref<8x2xf8E8M0FNU>, %c: memref<4x8xf32>) {
  // expected-error @below {{'lowp.scaled_matmul' op lhs scales: #lowp.mx<32> stores scales as 'f8E8M0FNU', found 'f32'}}
  lowp.scaled_matmul %a[%sa], %b[%sb] into %c layouts(#lowp.mx<32>, #lowp.mx<32>)
      : memref<4x64xf4E2M1FN>[memref<4x2xf32>], memref<8x64xf4E2M1FN>[memref<8x2xf8E8M0FNU>] -> memref<4x8xf32>
  return
}

// -----

func.func @scale_shape(%a: memref<4x64xf4E2M1FN>, %sa: memref<4x2xf8E8M0FNU>, %b: memref<8x64xf4E2M1FN>,
                       %sb: memref<8x3xf8E8M0FNU>, %c: memref<4x8xf32>) {
  // expected-error @below {{'lowp.scaled_matmul' op rhs scales: #lowp.mx<32> over a 8x64 tensor needs 8x2 scales, found 8x3}}
  lowp.scaled_matmul %a[%sa], %b[%sb] into %c layouts(#lowp.mx<32>, #lowp.mx<32>)
      : memref<4x64xf4E2M1FN>[memref<4x2xf8E8M0FNU>], memref<8x64xf4E2M1FN>[memref<8x3xf8E8M0FNU>] -> memref<4x8xf32>
  return
}

// -----

func.func @k_tail_is_padded(%a: memref<4x70xf8E4M3FN>, %sa: memref<4x2xf8E8M0FNU>, %b: memref<8x70xf8E4M3FN>,
                            %sb: memref<8x3xf8E8M0FNU>, %c: memref<4x8xf32>) {
  // K = 70 with blocks of 32 needs ceil(70 / 32) = 3 scales per row.
  // expected-error @below {{'lowp.scaled_matmul' op lhs scales: #lowp.mx<32> over a 4x70 tensor needs 4x3 scales, found 4x2}}
  lowp.scaled_matmul %a[%sa], %b[%sb] into %c layouts(#lowp.mx<32>, #lowp.mx<32>)
      : memref<4x70xf8E4M3FN>[memref<4x2xf8E8M0FNU>], memref<8x70xf8E4M3FN>[memref<8x3xf8E8M0FNU>] -> memref<4x8xf32>
  return
}

// -----

func.func @missing_global(%a: memref<4x32xf4E2M1FN>, %sa: memref<4x2xf8E4M3FN>, %b: memref<8x32xf4E2M1FN>,
                          %sb: memref<8x2xf8E4M3FN>, %c: memref<4x8xf32>) {
  // expected-error @below {{'lowp.scaled_matmul' op lhs: #lowp.nvfp4<16, global> needs a global scale operand (memref<f32>)}}
  lowp.scaled_matmul %a[%sa], %b[%sb] into %c layouts(#lowp.nvfp4<16, global>, #lowp.nvfp4<16>)
      : memref<4x32xf4E2M1FN>[memref<4x2xf8E4M3FN>], memref<8x32xf4E2M1FN>[memref<8x2xf8E4M3FN>] -> memref<4x8xf32>
  return
}

// -----

func.func @extra_global(%x: memref<4x64xf32>, %s: memref<4x2xf8E8M0FNU>, %g: memref<f32>) {
  // expected-error @below {{'lowp.compute_scales' op output: #lowp.mx<32> has no global scale, but one is given}}
  lowp.compute_scales %x into %s, %g layout #lowp.mx<32> format f4E2M1FN : memref<4x64xf32> -> memref<4x2xf8E8M0FNU>, memref<f32>
  return
}

// -----

func.func @nvfp4_needs_fp4(%x: memref<4x64xf32>, %s: memref<4x4xf8E4M3FN>) {
  // expected-error @below {{'lowp.compute_scales' op format: #lowp.nvfp4<16> scales 4-bit elements, found 'f8E4M3FN' (8 bits)}}
  lowp.compute_scales %x into %s layout #lowp.nvfp4<16> format f8E4M3FN : memref<4x64xf32> -> memref<4x4xf8E4M3FN>
  return
}

// -----

func.func @mx_is_ocp(%x: memref<4x64xf32>, %s: memref<4x2xf8E8M0FNU>, %q: memref<4x64xf8E4M3FNUZ>) {
  // expected-error @below {{'lowp.quantize' op output: #lowp.mx<32> scales OCP formats; 'f8E4M3FNUZ' is an AMD FNUZ format (use #lowp.per_tensor, #lowp.per_channel or #lowp.blockwise)}}
  lowp.quantize %x[%s] layout #lowp.mx<32> into %q : memref<4x64xf32>[memref<4x2xf8E8M0FNU>] -> memref<4x64xf8E4M3FNUZ>
  return
}

// -----

func.func @format_not_packed(%x: memref<4x64xf32>, %s: memref<4x2xf8E8M0FNU>) {
  // expected-error @below {{'lowp.compute_scales' op format must be an element format, found packed storage '!lowp.packed<f4E2M1FN>' (use its element type)}}
  lowp.compute_scales %x into %s layout #lowp.mx<32> format !lowp.packed<f4E2M1FN> : memref<4x64xf32> -> memref<4x2xf8E8M0FNU>
  return
}

// -----

func.func @quantize_shape(%x: memref<4x64xf32>, %s: memref<4x2xf8E8M0FNU>, %q: memref<4x16x!lowp.packed<f4E2M1FN>>) {
  // expected-error @below {{'lowp.quantize' op input is 4x64 but output is 4x32 (logical shapes must match)}}
  lowp.quantize %x[%s] layout #lowp.mx<32> into %q : memref<4x64xf32>[memref<4x2xf8E8M0FNU>] -> memref<4x16x!lowp.packed<f4E2M1FN>>
  return
}

// -----

func.func @dequantize_shape(%q: memref<4x64xf6E2M3FN>, %s: memref<4x2xf8E8M0FNU>, %y: memref<2x64xf32>) {
  // expected-error @below {{'lowp.dequantize' op codes is 4x64 but output is 2x64 (logical shapes must match)}}
  lowp.dequantize %q[%s] layout #lowp.mx<32> into %y : memref<4x64xf6E2M3FN>[memref<4x2xf8E8M0FNU>] -> memref<2x64xf32>
  return
}

// -----

func.func @codes_not_f32(%x: memref<4x64xf32>, %s: memref<1x1xf32>, %q: memref<4x64xf32>) {
  // expected-error @below {{'lowp.quantize' op operand #2 must be 2D memref or tensor of lowp element codes (f8E4M3FN, f8E5M2, f8E4M3FNUZ, f8E5M2FNUZ, f6E2M3FN, f6E3M2FN, f4E2M1FN, !lowp.mf or !lowp.packed), but got 'memref<4x64xf32>'}}
  lowp.quantize %x[%s] layout #lowp.per_tensor into %q : memref<4x64xf32>[memref<1x1xf32>] -> memref<4x64xf32>
  return
}

// -----

func.func @not_a_layout(%x: memref<4x64xf32>, %s: memref<1x1xf32>, %q: memref<4x64xf8E4M3FN>) {
  // expected-error @below {{expected a scale layout (#lowp.per_tensor, #lowp.per_channel, #lowp.mx<N>, #lowp.nvfp4<N[, global]>, #lowp.blockwise<RxC>), found #lowp.rounding<ocp_mx>}}
  lowp.quantize %x[%s] layout #lowp.rounding<ocp_mx> into %q : memref<4x64xf32>[memref<1x1xf32>] -> memref<4x64xf8E4M3FN>
  return
}

// -----

// Every code is stored in a byte, whatever its width.
func.func @storage_cast_width(%q: memref<4x8xf6E2M3FN>) {
  // expected-error @below {{'lowp.storage_cast' op codes of 'f6E2M3FN' are stored as 'i8', found 'i6'}}
  %0 = lowp.storage_cast %q : memref<4x8xf6E2M3FN> to memref<4x8xi6>
  return
}

// -----

func.func @storage_cast_shape(%q: memref<4x8xf8E4M3FN>) {
  // expected-error @below {{'lowp.storage_cast' op shape, layout and memory space must be kept}}
  %0 = lowp.storage_cast %q : memref<4x8xf8E4M3FN> to memref<8x4xi8>
  return
}

// -----

func.func @storage_cast_source(%q: memref<4x8xf32>) {
  // expected-error @below {{'lowp.storage_cast' op source elements must be codes or f8E8M0FNU scales, found 'f32'}}
  %0 = lowp.storage_cast %q : memref<4x8xf32> to memref<4x8xi32>
  return
}

// -----

func.func @not_a_layout_generic(%x: memref<4x64xf32>, %s: memref<1x1xf32>, %q: memref<4x64xf8E4M3FN>) {
  // The generic form is checked when its properties are converted.
  // expected-error @below {{Invalid attribute `layout` in property conversion: #lowp.rounding<ocp_mx>}}
  "lowp.quantize"(%x, %s, %q) <{layout = #lowp.rounding<ocp_mx>}> : (memref<4x64xf32>, memref<1x1xf32>, memref<4x64xf8E4M3FN>) -> ()
  return
}

// -----

#transposed = affine_map<(d0, d1) -> (d1, d0)>
func.func @permuted_layout(%a: memref<16x64xf8E4M3FN, #transposed>, %sa: memref<1x1xf32>, %b: memref<16x64xf8E4M3FN>, %sb: memref<1x1xf32>, %c: memref<16x16xf32>) {
  // expected-error @below {{'lowp.scaled_matmul' op operand #0 ('memref<16x64xf8E4M3FN, affine_map<(d0, d1) -> (d1, d0)>>') has a layout with no strided form}}
  lowp.scaled_matmul %a[%sa], %b[%sb] into %c layouts(#lowp.per_tensor, #lowp.per_tensor)
      : memref<16x64xf8E4M3FN, #transposed>[memref<1x1xf32>], memref<16x64xf8E4M3FN>[memref<1x1xf32>] -> memref<16x16xf32>
  return
}

// -----

func.func @strided_rows(%x: memref<4x64xf32, strided<[128, 2]>>, %s: memref<4x2xf8E8M0FNU>, %q: memref<4x64xf4E2M1FN>) {
  // expected-error @below {{'lowp.quantize' op operand #0 ('memref<4x64xf32, strided<[128, 2]>>') must be contiguous along its last dimension}}
  lowp.quantize %x[%s] layout #lowp.mx<32> into %q
      : memref<4x64xf32, strided<[128, 2]>>[memref<4x2xf8E8M0FNU>] -> memref<4x64xf4E2M1FN>
  return
}

// -----

func.func @named_space(%x: memref<4x64xf32>, %s: memref<4x2xf8E8M0FNU, #gpu.address_space<workgroup>>) {
  // expected-error @below {{'lowp.compute_scales' op operand #1 ('memref<4x2xf8E8M0FNU, #gpu.address_space<workgroup>>') is in memory space #gpu.address_space<workgroup>; the default or a numbered one is expected}}
  lowp.compute_scales %x into %s layout #lowp.mx<32> format f4E2M1FN
      : memref<4x64xf32> -> memref<4x2xf8E8M0FNU, #gpu.address_space<workgroup>>
  return
}

// -----

func.func @products_overflow(%a: memref<16x64x!lowp.mf<e7m0, bias = 0>>, %sa: memref<1x1xf32>, %b: memref<16x64xf8E4M3FN>, %sb: memref<1x1xf32>, %c: memref<16x16xf32>) {
  // expected-error @below {{'lowp.scaled_matmul' op products of '!lowp.mf<e7m0, bias = 0>' and 'f8E4M3FN' codes reach 2^136 (a sum of 64, one scale block: 2^142), above f32's largest (2^128 - 2^104): the f32 partial sums cannot hold them}}
  lowp.scaled_matmul %a[%sa], %b[%sb] into %c layouts(#lowp.per_tensor, #lowp.per_tensor)
      : memref<16x64x!lowp.mf<e7m0, bias = 0>>[memref<1x1xf32>], memref<16x64xf8E4M3FN>[memref<1x1xf32>] -> memref<16x16xf32>
  return
}

// -----

func.func @products_underflow(%a: memref<16x64x!lowp.mf<e1m6, bias = 127>>, %sa: memref<16x2xf8E8M0FNU>, %b: memref<16x64x!lowp.mf<e1m6, bias = 127>>, %sb: memref<16x2xf8E8M0FNU>, %c: memref<16x16xf32>) {
  // expected-error @below {{'lowp.scaled_matmul' op products of '!lowp.mf<e1m6, bias = 127>' and '!lowp.mf<e1m6, bias = 127>' codes go down to 2^-264, below f32's smallest 2^-149: the f32 partial sums cannot hold them}}
  lowp.scaled_matmul %a[%sa], %b[%sb] into %c layouts(#lowp.mx<32>, #lowp.mx<32>)
      : memref<16x64x!lowp.mf<e1m6, bias = 127>>[memref<16x2xf8E8M0FNU>], memref<16x64x!lowp.mf<e1m6, bias = 127>>[memref<16x2xf8E8M0FNU>] -> memref<16x16xf32>
  return
}

// -----

// The tensor form returns what the memref form writes: the two do not mix.
func.func @mixed_forms(%a: tensor<16x64xf8E4M3FN>, %sa: memref<1x1xf32>, %b: memref<32x64xf8E4M3FN>, %sb: memref<1x1xf32>, %c: memref<16x32xf32>) {
  // expected-error @below {{'lowp.scaled_matmul' op operand #1 is a memref and operand #0 a tensor: operands are all memrefs (the op writes its `into` operands) or all tensors (it returns their new values)}}
  lowp.scaled_matmul %a[%sa], %b[%sb] into %c layouts(#lowp.per_tensor, #lowp.per_tensor)
      : tensor<16x64xf8E4M3FN>[memref<1x1xf32>], memref<32x64xf8E4M3FN>[memref<1x1xf32>] -> memref<16x32xf32>
  return
}

// -----

// The tensor form's verifier rules are the memref form's.
func.func @tensor_scales_shape(%x: tensor<4x64xf32>, %s: tensor<4x3xf8E8M0FNU>, %q: tensor<4x64xf4E2M1FN>) -> tensor<4x64xf4E2M1FN> {
  // expected-error @below {{'lowp.quantize' op input scales: #lowp.mx<32> over a 4x64 tensor needs 4x2 scales, found 4x3}}
  %r = lowp.quantize %x[%s] layout #lowp.mx<32> into %q : tensor<4x64xf32>[tensor<4x3xf8E8M0FNU>] -> tensor<4x64xf4E2M1FN>
  return %r : tensor<4x64xf4E2M1FN>
}

// -----

func.func @tensor_result_type(%x: tensor<4x64xf32>, %s: tensor<1x1xf32>, %q: tensor<4x64xf8E4M3FN>) {
  // expected-error @below {{'lowp.quantize' op expected type of operand #2 ('tensor<4x64xf8E4M3FN>') to match type of corresponding result ('tensor<4x64xf8E5M2>')}}
  %r = "lowp.quantize"(%x, %s, %q) <{layout = #lowp.per_tensor}> : (tensor<4x64xf32>, tensor<1x1xf32>, tensor<4x64xf8E4M3FN>) -> tensor<4x64xf8E5M2>
  return
}

// -----

func.func @memref_form_with_result(%x: memref<4x64xf32>, %s: memref<1x1xf32>, %q: memref<4x64xf8E4M3FN>) {
  // expected-error @below {{'lowp.quantize' op expected the number of tensor results (1) to be equal to the number of output tensors (0)}}
  %r = "lowp.quantize"(%x, %s, %q) <{layout = #lowp.per_tensor}> : (memref<4x64xf32>, memref<1x1xf32>, memref<4x64xf8E4M3FN>) -> tensor<4x64xf8E4M3FN>
  return
}

// -----

#csr = #sparse_tensor.encoding<{ map = (d0, d1) -> (d0 : dense, d1 : compressed) }>
func.func @tensor_encoding(%x: tensor<4x64xf32, #csr>, %s: tensor<1x1xf32>, %q0: tensor<4x64xf8E4M3FN>) -> tensor<4x64xf8E4M3FN> {
  // expected-error @below {{'lowp.quantize' op operand #0 ('tensor<4x64xf32, #sparse_tensor.encoding<{ map = (d0, d1) -> (d0 : dense, d1 : compressed) }>>') has an encoding; the ops take dense tensors}}
  %q = lowp.quantize %x[%s] layout #lowp.per_tensor into %q0 : tensor<4x64xf32, #csr>[tensor<1x1xf32>] -> tensor<4x64xf8E4M3FN>
  return %q : tensor<4x64xf8E4M3FN>
}
