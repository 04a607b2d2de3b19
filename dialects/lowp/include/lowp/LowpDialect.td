//===- LowpDialect.td - the lowp dialect -------------------*- tablegen -*-===//
//
// The dialect definition and the base classes of its types, attributes and ops.
//
//===----------------------------------------------------------------------===//

#ifndef LOWP_DIALECT_TD
#define LOWP_DIALECT_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"

def Lowp_Dialect : Dialect {
  let name = "lowp";
  let cppNamespace = "::mlir::lowp";
  let summary = "Scaled low-precision matrix multiplication";
  let description = [{
    The `lowp` dialect carries scaled low-precision arithmetic: element codes in
    FP8 / FP6 / FP4 or a custom all-finite minifloat, together with the scales that
    give them their magnitude, and the scaled matrix multiply that consumes them.

    Element formats are types: MLIR's builtin small floats where they exist
    (`f8E4M3FN`, `f8E5M2`, `f8E4M3FNUZ`, `f8E5M2FNUZ`, `f6E2M3FN`, `f6E3M2FN`,
    `f4E2M1FN`) and `!lowp.mf<eXmY>` for any other `fNeXmY`. FP4 codes may be packed
    two per byte as `!lowp.packed<f4E2M1FN>`. Scale layouts are attributes
    (`#lowp.per_tensor`, `#lowp.mx<32>`, `#lowp.nvfp4<16, global>`,
    `#lowp.per_channel`, `#lowp.blockwise<1x128>`). The numeric meaning of every
    format, scale and op is the one of the `lowp-formats` Rust crate.

    Tensors are rank-2 and row-major with the scaled dimension K last; the right
    operand of `lowp.scaled_matmul` is N x K.
  }];
  let useDefaultTypePrinterParser = 1;
  let useDefaultAttributePrinterParser = 1;
}

class Lowp_Type<string name, string typeMnemonic, list<Trait> traits = []>
    : TypeDef<Lowp_Dialect, name, traits> {
  let mnemonic = typeMnemonic;
}

class Lowp_Attr<string name, string attrMnemonic, list<Trait> traits = []>
    : AttrDef<Lowp_Dialect, name, traits> {
  let mnemonic = attrMnemonic;
}

class Lowp_Op<string mnemonic, list<Trait> traits = []>
    : Op<Lowp_Dialect, mnemonic, traits>;

#endif // LOWP_DIALECT_TD
