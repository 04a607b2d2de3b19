//===- LowpOps.td - lowp operations ------------------------*- tablegen -*-===//
//
// compute_scales, quantize, dequantize, scaled_matmul and storage_cast. The
// first four are destination-style: on memrefs they write their `into` operands
// (what the lowerings take); on tensors they return the new values of those
// operands and bufferize (one-shot-bufferize) to the memref form. Shape, format
// and layout agreement is checked by hand-written verifiers (LowpOps.cpp) so
// that every rejection names what was expected.
//
//===----------------------------------------------------------------------===//

#ifndef LOWP_OPS_TD
#define LOWP_OPS_TD

include "lowp/LowpDialect.td"
include "lowp/LowpTypes.td"
include "lowp/LowpAttrs.td"
include "lowp/LowpInterfaces.td"
include "mlir/Dialect/Bufferization/IR/BufferizableOpInterface.td"
include "mlir/Interfaces/DestinationStyleOpInterface.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/Interfaces/ViewLikeInterface.td"

//===----------------------------------------------------------------------===//
// Type and attribute constraints
//===----------------------------------------------------------------------===//

def Lowp_CodeElement : Type<CPred<"::mlir::lowp::isCodeType($_self)">,
    "lowp element code (f8E4M3FN, f8E5M2, f8E4M3FNUZ, f8E5M2FNUZ, f6E2M3FN, "
    "f6E3M2FN, f4E2M1FN, !lowp.mf or !lowp.packed)">;

// An operand of the destination-style ops: a memref (written or read in place) or a
// ranked tensor of the same element types and rank.
class Lowp_Buffer<list<Type> elements, int rank, string what>
    : AnyTypeOf<[MemRefRankOf<elements, [rank]>, TensorRankOf<elements, [rank]>],
                rank # "D memref or tensor of " # what>;

def Lowp_Codes : Lowp_Buffer<[Lowp_CodeElement], 2,
    "lowp element codes (f8E4M3FN, f8E5M2, f8E4M3FNUZ, f8E5M2FNUZ, f6E2M3FN, "
    "f6E3M2FN, f4E2M1FN, !lowp.mf or !lowp.packed)">;
def Lowp_F32Values : Lowp_Buffer<[F32], 2, "f32">;
def Lowp_Result : Lowp_Buffer<[F32, BF16], 2, "f32 or bf16">;
def Lowp_Scales : Lowp_Buffer<[F32, F8E8M0FNU, F8E4M3FN], 2,
    "f32, f8E8M0FNU or f8E4M3FN scales">;
def Lowp_Global : Lowp_Buffer<[F32], 0, "f32">;
def Lowp_Bias : Lowp_Buffer<[F32], 1, "f32">;

def Lowp_ScaleLayoutAttr : Attr<
    CPred<"::llvm::isa<::mlir::lowp::ScaleLayoutAttrInterface>($_self)">,
    "lowp scale layout (#lowp.per_tensor, #lowp.per_channel, #lowp.mx<N>, "
    "#lowp.nvfp4<N[, global]>, #lowp.blockwise<RxC>)"> {
  let storageType = "::mlir::lowp::ScaleLayoutAttrInterface";
  let returnType = "::mlir::lowp::ScaleLayoutAttrInterface";
  let convertFromStorage = "$_self";
}

def Lowp_FormatAttr : TypeAttrOf<Lowp_CodeElement>;

def Lowp_NewValue : Type<AnyRankedTensor.predicate,
    "the new value of a tensor `into` operand (none on memrefs)", "::mlir::TensorType">;

// The destination-style ops: their `into` operands are the DPS inits; memory effects
// only on memref operands (reads, and writes of the inits); one tensor result per
// tensor init, inferred; bufferized to the same op on the inits' buffers.
class Lowp_DpsOp<string mnemonic, list<Trait> traits = []> : Lowp_Op<mnemonic,
    traits # [DeclareOpInterfaceMethods<MemoryEffectsOpInterface>,
              DeclareOpInterfaceMethods<DestinationStyleOpInterface>,
              DeclareOpInterfaceMethods<InferTypeOpInterface>,
              DeclareOpInterfaceMethods<BufferizableOpInterface,
                  ["bufferizesToMemoryRead", "bufferizesToMemoryWrite",
                   "getAliasingValues", "bufferize"]>]> {
  let results = (outs Variadic<Lowp_NewValue>:$results);
}

//===----------------------------------------------------------------------===//
// compute_scales
//===----------------------------------------------------------------------===//

def Lowp_ComputeScalesOp : Lowp_DpsOp<"compute_scales"> {
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
    `f8E4M3FN` for NVFP4 (UE4M3, sign clear), `f32` for the others. On tensors
    the op returns the scales (and the global), as `lowp.scaled_matmul` does
    its result.

    ```mlir
    lowp.compute_scales %x into %s layout #lowp.mx<32> format f4E2M1FN
        : memref<64x256xf32> -> memref<64x8xf8E8M0FNU>
    lowp.compute_scales %x into %s, %g layout #lowp.nvfp4<16, global> format f4E2M1FN
        : memref<64x256xf32> -> memref<64x16xf8E4M3FN>, memref<f32>
    ```
  }];
  let arguments = (ins
    Arg<Lowp_F32Values, "values to be quantized">:$input,
    Arg<Lowp_Scales, "block scales (written)">:$scales,
    Arg<Optional<Lowp_Global>, "NVFP4 global scale (written)">:$global,
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

def Lowp_QuantizeOp : Lowp_DpsOp<"quantize"> {
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
    %codes = lowp.quantize %tx[%ts] layout #lowp.mx<32> into %init
        : tensor<64x256xf32>[tensor<64x8xf8E8M0FNU>] -> tensor<64x256xf4E2M1FN>
    ```
  }];
  let arguments = (ins
    Arg<Lowp_F32Values, "values">:$input,
    Arg<Lowp_Scales, "block scales">:$scales,
    Arg<Optional<Lowp_Global>, "NVFP4 global scale">:$global,
    Arg<Lowp_Codes, "codes (written)">:$output,
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

def Lowp_DequantizeOp : Lowp_DpsOp<"dequantize"> {
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
    Arg<Lowp_Codes, "codes">:$codes,
    Arg<Lowp_Scales, "block scales">:$scales,
    Arg<Optional<Lowp_Global>, "NVFP4 global scale">:$global,
    Arg<Lowp_F32Values, "values (written)">:$output,
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

def Lowp_ScaledMatmulOp : Lowp_DpsOp<"scaled_matmul", [AttrSizedOperandSegments]> {
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

    Like the quantization ops, the op is destination-style: on memrefs it
    writes `out` (the form the lowerings take); on tensors it returns the new
    value of `out`, and one-shot-bufferize makes the memref form on the
    buffers (identity layouts: `function-boundary-type-conversion` and
    `unknown-type-conversion` set to `identity-layout-map`, since rows are read
    as contiguous runs). `out` is overwritten, never read.

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
    %r = lowp.scaled_matmul %ta[%tsa], %tb[%tsb] into %init
        layouts(#lowp.mx<32>, #lowp.mx<32>)
        : tensor<128x256xf4E2M1FN>[tensor<128x8xf8E8M0FNU>],
          tensor<64x256xf4E2M1FN>[tensor<64x8xf8E8M0FNU>] -> tensor<128x64xf32>
    ```
  }];
  let arguments = (ins
    Arg<Lowp_Codes, "left operand, M x K">:$lhs,
    Arg<Lowp_Scales, "scales of lhs">:$lhs_scales,
    Arg<Optional<Lowp_Global>, "NVFP4 global scale of lhs">:$lhs_global,
    Arg<Lowp_Codes, "right operand, N x K">:$rhs,
    Arg<Lowp_Scales, "scales of rhs">:$rhs_scales,
    Arg<Optional<Lowp_Global>, "NVFP4 global scale of rhs">:$rhs_global,
    Arg<Optional<Lowp_Bias>, "bias, N">:$bias,
    Arg<Lowp_Result, "result, M x N (written)">:$out,
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
