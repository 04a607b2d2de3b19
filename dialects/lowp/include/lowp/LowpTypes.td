//===- LowpTypes.td - lowp element format types ------------*- tablegen -*-===//
//
// The element types lowp adds to MLIR's builtin small floats: custom minifloats and
// packed FP4 storage.
//
//===----------------------------------------------------------------------===//

#ifndef LOWP_TYPES_TD
#define LOWP_TYPES_TD

include "lowp/LowpDialect.td"
include "mlir/IR/BuiltinTypeInterfaces.td"

def Lowp_MinifloatType : Lowp_Type<"Minifloat", "mf",
    [MemRefElementTypeInterface, VectorElementTypeInterface]> {
  let summary = "an all-finite custom minifloat `fNeXmY`";
  let description = [{
    A code of `1 + X + Y` bits (at most 8): sign in the top bit, X exponent bits,
    Y mantissa bits, IEEE-style gradual underflow (subnormals when the exponent
    field is 0), no infinities and no NaN. The bias defaults to the IEEE one,
    `2^(X-1) - 1`, and is printed only when it differs. One code is stored per
    byte.

    ```mlir
    !lowp.mf<e3m0>             // f4e3m0: +-{0, 0.25, 0.5, 1, 2, 4, 8, 16}
    !lowp.mf<e2m2>             // f5e2m2
    !lowp.mf<e3m2, bias = 2>   // f6e3m2 with bias 2 (not the MX f6E3M2FN)
    ```

    Rejected: X = 0, more than 8 bits, and biases whose largest value overflows
    f32 (`2^X - 1 - bias > 127`) or whose smallest step is above 2^104.
  }];
  let parameters = (ins "unsigned":$expBits, "unsigned":$mantBits, "int":$bias);
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let builders = [
    TypeBuilder<(ins "unsigned":$expBits, "unsigned":$mantBits), [{
      return $_get($_ctxt, expBits, mantBits,
                   expBits == 0 ? 0 : (1 << (expBits - 1)) - 1);
    }]>
  ];
  let extraClassDeclaration = [{
    /// Total bits of one code, 1 + X + Y.
    unsigned getWidth() const { return 1 + getExpBits() + getMantBits(); }
    /// The IEEE bias 2^(X-1) - 1 of this exponent width.
    int getIeeeBias() const { return (1 << (getExpBits() - 1)) - 1; }
  }];
}

def Lowp_PackedType : Lowp_Type<"Packed", "packed",
    [MemRefElementTypeInterface]> {
  let summary = "two 4-bit codes in one byte, low nibble first";
  let description = [{
    Storage for FP4 codes packed two per byte: element `2i` of a row is the low
    nibble of byte `i`, element `2i + 1` the high nibble. A memref of packed
    codes has half as many columns as the logical tensor (K must be even). The
    element format must be 4 bits wide: `f4E2M1FN` or a 4-bit `!lowp.mf`.

    ```mlir
    memref<128x64x!lowp.packed<f4E2M1FN>>        // a 128 x 128 FP4 tensor
    memref<16x8x!lowp.packed<!lowp.mf<e3m0>>>    // a 16 x 16 f4e3m0 tensor
    ```
  }];
  let parameters = (ins "::mlir::Type":$element);
  let assemblyFormat = "`<` $element `>`";
  let genVerifyDecl = 1;
}

#endif // LOWP_TYPES_TD
