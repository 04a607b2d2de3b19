//===- LowpInterfaces.td - the scale layout interface ------*- tablegen -*-===//
//
// ScaleLayoutAttrInterface: what every scale layout attribute tells a verifier or a
// lowering about the scales of a rows x K tensor.
//
//===----------------------------------------------------------------------===//

#ifndef LOWP_INTERFACES_TD
#define LOWP_INTERFACES_TD

include "mlir/IR/OpBase.td"

def Lowp_ScaleLayoutAttrInterface : AttrInterface<"ScaleLayoutAttrInterface"> {
  let cppNamespace = "::mlir::lowp";
  let description = [{
    A scale layout tiles a row-major `rows x K` tensor into rectangles of
    `rowBlock x kBlock` elements that share one scale; the scales are a row-major
    `ceil(rows / rowBlock) x ceil(K / kBlock)` array (per-tensor: one scalar-like
    `1x1`, per-channel: `rows x 1`). A partial tile at the end of a dimension is
    treated as zero-padded. NVFP4 may add a per-tensor f32 global scale.
  }];
  let methods = [
    InterfaceMethod<"Elements along K sharing a scale (0: all of K).",
      "int64_t", "getKBlock">,
    InterfaceMethod<"Rows sharing a scale (0: all rows).",
      "int64_t", "getRowBlock">,
    InterfaceMethod<"Element type of the scale memref.",
      "::mlir::Type", "getScaleElementType", (ins "::mlir::MLIRContext *":$ctx)>,
    InterfaceMethod<"Whether a per-tensor f32 global scale comes along.",
      "bool", "hasGlobalScale">,
  ];
}

#endif // LOWP_INTERFACES_TD
