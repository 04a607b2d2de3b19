//===- LowpOps.td - lowp operations ------------------------*- tablegen -*-===//
//
// compute_scales, quantize, dequantize, scaled_matmul (memref form) and
// storage_cast. Shape, format and layout agreement is checked by hand-written
// verifiers (LowpOps.cpp) so that every rejection names what was expected.
//
//===----------------------------------------------------------------------===//

#ifndef LOWP_OPS_TD
#define LOWP_OPS_TD

include "lowp/LowpDialect.td"
include "lowp/LowpTypes.td"
include "lowp/LowpAttrs.td"
include "lowp/LowpInterfaces.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/Interfaces/ViewLikeInterface.td"

//===----------------------------------------------------------------------===//
// Type and attribute constraints
//===----------------------------------------------------------------------===//

def Lowp_CodeElement : Type<CPred<"::mlir::lowp::isCodeType($_self)">,
    "lowp element code (f8E4M3FN, f8E5M2, f8E4M3FNUZ, f8E5M2FNUZ, f6E2M3FN, "
    "f6E3M2FN, f4E2M1FN, !lowp.mf or !lowp.packed)">;

def Lowp_CodeMemRef : MemRefRankOf<[Lowp_CodeElement], [2]>;
def Lowp_F32MemRef : MemRefRankOf<[F32], [2]>;
def Lowp_ResultMemRef : MemRefRankOf<[F32, BF16], [2]>;
def Lowp_ScaleMemRef : MemRefRankOf<[F32, F8E8M0FNU, F8E4M3FN], [2]>;
def Lowp_GlobalMemRef : MemRefRankOf<[F32], [0]>;
def Lowp_BiasMemRef : MemRefRankOf<[F32], [1]>;

def Lowp_ScaleLayoutAttr : Attr<
    CPred<"::llvm::isa<::mlir::lowp::ScaleLayoutAttrInterface>($_self)">,
    "lowp scale layout (#lowp.per_tensor, #lowp.per_channel, #lowp.mx<N>, "
    "#lowp.nvfp4<N[, global]>, #lowp.blockwise<RxC>)"> {
  let storageType = "::mlir::lowp::ScaleLayoutAttrInterface";
  let returnType = "::mlir::lowp::ScaleLayoutAttrInterface";
  let convertFromStorage = "$_self";
}

def Lowp_FormatAttr : TypeAttrOf<Lowp_CodeElement>;

//===----------------------------------------------------------------------===//
// compute_scales
//===----------------------------------------------------------------------===//

def Lowp_ComputeScalesOp : Lowp_Op<"compute_scales"> {
  let summary = "compute the scales that quantize an f32 tensor to a format";
  let description = [{
    Writes into `scales` the scale of every tile of `input` (rows x K, f32) that
    `layout` defines, for quantizing to the element `format`:
    `amax / max_finite(format)` stored with the `rounding` policy (`round_up` by
    default: the scale dtype's smallest value not below it). A tile whose values
    are all zero gets 1.0; a tile holding NaN or +-inf gets NaN. With
    `#lowp.nvfp4<N, global>` the `global` operand receives
    `amax_tensor / (max_finite * 448)` and the block scales are computed relative
    to it.

    The scale memref's element type follows the layout: `f8E8M0FNU` for MX,
    `f8E4M3FN` for NVFP4 (UE4M3, sign clear), `f32` for the others.

    ```mlir
    lowp.compute_scales %x into %s layout #lowp.mx<32> format f4E2M1FN
        : memref<64x256xf32> -> memref<64x8xf8E8M0FNU>
    lowp.compute_scales %x into %s, %g layout #lowp.nvfp4<16, global> format f4E2M1FN
        : memref<64x256xf32> -> memref<64x16xf8E4M3FN>, memref<f32>
    ```
  }];
  let arguments = (ins
    Arg<Lowp_F32MemRef, "values to be quantized", [MemRead]>:$input,
    Arg<Lowp_ScaleMemRef, "block scales (written)", [MemWrite]>:$scales,
    Arg<Optional<Lowp_GlobalMemRef>, "NVFP4 global scale (written)", [MemWrite]>:$global,
    Lowp_ScaleLayoutAttr:$layout,
    Lowp_FormatAttr:$format,
    DefaultValuedAttr<Lowp_ScaleRoundingAttr, "::mlir::lowp::ScaleRounding::round_up">:$rounding
  );
  let assemblyFormat = [{
    $input `into` $scales (`,` $global^)? `layout` custom<Layout>($layout) `format` $format attr-dict
    `:` type($input) `->` type($scales) (`,` type($global)^)?
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// quantize / dequantize
//===----------------------------------------------------------------------===//

def Lowp_QuantizeOp : Lowp_Op<"quantize"> {
  let summary = "encode an f32 tensor to element codes with given scales";
  let description = [{
    `output[r, k] = encode(input[r, k] / (scale(r, k) * global))`: nearest code,
    ties to the even code, overflow and +-inf saturate to +-max_finite, NaN
    encodes to 0, FNUZ formats never produce 0x80. The element format is the
    element type of `output` (packed FP4 writes two codes per byte).

    ```mlir
    lowp.quantize %x[%s] layout #lowp.mx<32> into %q
        : memref<64x256xf32>[memref<64x8xf8E8M0FNU>] -> memref<64x256xf4E2M1FN>
    lowp.quantize %x[%s, %g] layout #lowp.nvfp4<16, global> into %q
        : memref<4x64xf32>[memref<4x4xf8E4M3FN>, memref<f32>]
        -> memref<4x32x!lowp.packed<f4E2M1FN>>
    ```
  }];
  let arguments = (ins
    Arg<Lowp_F32MemRef, "values", [MemRead]>:$input,
    Arg<Lowp_ScaleMemRef, "block scales", [MemRead]>:$scales,
    Arg<Optional<Lowp_GlobalMemRef>, "NVFP4 global scale", [MemRead]>:$global,
    Arg<Lowp_CodeMemRef, "codes (written)", [MemWrite]>:$output,
    Lowp_ScaleLayoutAttr:$layout
  );
  // The layout is never the last thing before `:`: an attribute there would take the
  // colon and the type after it as its own type.
  let assemblyFormat = [{
    $input `[` $scales (`,` $global^)? `]` `layout` custom<Layout>($layout) `into` $output attr-dict
    `:` type($input) `[` type($scales) (`,` type($global)^)? `]` `->` type($output)
  }];
  let hasVerifier = 1;
}

def Lowp_DequantizeOp : Lowp_Op<"dequantize"> {
  let summary = "decode element codes to f32 with their scales";
  let description = [{
    `output[r, k] = decode(codes[r, k]) * scale(r, k) * global`, bit-exact
    decode (+-inf and NaN only where the format has them); a NaN scale makes its
    whole tile NaN.

    ```mlir
    lowp.dequantize %q[%s] layout #lowp.mx<32> into %y
        : memref<64x256xf4E2M1FN>[memref<64x8xf8E8M0FNU>] -> memref<64x256xf32>
    ```
  }];
  let arguments = (ins
    Arg<Lowp_CodeMemRef, "codes", [MemRead]>:$codes,
    Arg<Lowp_ScaleMemRef, "block scales", [MemRead]>:$scales,
    Arg<Optional<Lowp_GlobalMemRef>, "NVFP4 global scale", [MemRead]>:$global,
    Arg<Lowp_F32MemRef, "values (written)", [MemWrite]>:$output,
    Lowp_ScaleLayoutAttr:$layout
  );
  let assemblyFormat = [{
    $codes `[` $scales (`,` $global^)? `]` `layout` custom<Layout>($layout) `into` $output attr-dict
    `:` type($codes) `[` type($scales) (`,` type($global)^)? `]` `->` type($output)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// scaled_matmul
//===----------------------------------------------------------------------===//

def Lowp_ScaledMatmulOp : Lowp_Op<"scaled_matmul", [AttrSizedOperandSegments]> {
  let summary = "scaled low-precision matrix multiply, B K-last";
  let description = [{
    `out[m, n] = sum_k dec(lhs[m, k]) * sa(m, k) * dec(rhs[n, k]) * sb(n, k)
    (+ bias[n])`, with `lhs` M x K and `rhs` N x K (the "TN" layout of cuBLASLt).
    Accumulation is in f32 with one partial sum per scale segment: K is cut
    wherever either operand's scale changes, each segment is summed, multiplied
    once by its scale, the f32 product `sa * sb`, and added (per-tensor and
    per-channel scales make all of K one segment). NVFP4 global scales multiply
    the total, as the f32 product `ga * gb`; the bias is added last; the result
    is stored as f32 or rounded to bf16. Legal scales whose product leaves f32's
    range (E8M0 2^-127 x 2^-127, 2^127 x 2^127) round as f32 products do: to a
    subnormal or 0, or to inf.

    Each operand's format is its element type (packed FP4 allowed); its scales
    follow its own layout, so mixed layouts (e.g. blockwise 1x128 activations
    with 128x128 weights) are expressed directly.

    The f32 partial sums must hold what they sum: the verifier refuses format
    pairs whose largest code product times the segment length exceeds f32's
    largest value, or whose smallest nonzero product is below f32's smallest
    subnormal (custom formats with wide exponent ranges, e.g.
    `!lowp.mf<e7m0, bias = 0>`). Operands are strided memrefs with contiguous
    rows in the default or a numbered memory space.

    ```mlir
    lowp.scaled_matmul %a[%sa], %b[%sb] into %c
        layouts(#lowp.mx<32>, #lowp.mx<32>)
        : memref<128x256xf4E2M1FN>[memref<128x8xf8E8M0FNU>],
          memref<64x256xf4E2M1FN>[memref<64x8xf8E8M0FNU>] -> memref<128x64xf32>
    lowp.scaled_matmul %a[%sa], %b[%sb] bias %bias into %c
        layouts(#lowp.per_tensor, #lowp.per_channel)
        : memref<16x64xf8E4M3FN>[memref<1x1xf32>],
          memref<32x64xf8E5M2>[memref<32x1xf32>] bias memref<32xf32>
          -> memref<16x32xbf16>
    ```
  }];
  let arguments = (ins
    Arg<Lowp_CodeMemRef, "left operand, M x K", [MemRead]>:$lhs,
    Arg<Lowp_ScaleMemRef, "scales of lhs", [MemRead]>:$lhs_scales,
    Arg<Optional<Lowp_GlobalMemRef>, "NVFP4 global scale of lhs", [MemRead]>:$lhs_global,
    Arg<Lowp_CodeMemRef, "right operand, N x K", [MemRead]>:$rhs,
    Arg<Lowp_ScaleMemRef, "scales of rhs", [MemRead]>:$rhs_scales,
    Arg<Optional<Lowp_GlobalMemRef>, "NVFP4 global scale of rhs", [MemRead]>:$rhs_global,
    Arg<Optional<Lowp_BiasMemRef>, "bias, N", [MemRead]>:$bias,
    Arg<Lowp_ResultMemRef, "result, M x N (written)", [MemWrite]>:$out,
    Lowp_ScaleLayoutAttr:$lhs_layout,
    Lowp_ScaleLayoutAttr:$rhs_layout
  );
  let assemblyFormat = [{
    $lhs `[` $lhs_scales (`,` $lhs_global^)? `]` `,`
    $rhs `[` $rhs_scales (`,` $rhs_global^)? `]`
    (`bias` $bias^)? `into` $out
    `layouts` `(` custom<Layout>($lhs_layout) `,` custom<Layout>($rhs_layout) `)` attr-dict `:`
    type($lhs) `[` type($lhs_scales) (`,` type($lhs_global)^)? `]` `,`
    type($rhs) `[` type($rhs_scales) (`,` type($rhs_global)^)? `]`
    (`bias` type($bias)^)? `->` type($out)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// storage_cast
//===----------------------------------------------------------------------===//

def Lowp_StorageCastOp : Lowp_Op<"storage_cast", [Pure,
    DeclareOpInterfaceMethods<ViewLikeOpInterface>]> {
  let summary = "view a memref of codes as its storage integers";
  let description = [{
    Reinterprets a memref of element codes as a memref of the bytes that store
    them, without a copy: every format becomes `i8` (one code per byte; the bits
    above a narrower code's width are ignored when it is decoded), and so do
    `!lowp.packed<...>` (two codes a byte) and `f8E8M0FNU` scales. Shape and
    layout are unchanged. Lowerings use it to load and store codes with integer
    arithmetic.

    ```mlir
    %bits = lowp.storage_cast %q : memref<64x256x!lowp.mf<e3m0>> to memref<64x256xi8>
    %raw = lowp.storage_cast %p : memref<4x32x!lowp.packed<f4E2M1FN>> to memref<4x32xi8>
    ```
  }];
  let arguments = (ins AnyMemRef:$source);
  let results = (outs AnyMemRef:$result);
  let assemblyFormat = "$source attr-dict `:` type($source) `to` type($result)";
  let hasVerifier = 1;
}

#endif // LOWP_OPS_TD
