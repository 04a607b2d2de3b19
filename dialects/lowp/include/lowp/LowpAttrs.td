//===- LowpAttrs.td - lowp scale layout attributes ---------*- tablegen -*-===//
//
// The scale layouts (each implementing ScaleLayoutAttrInterface) and the scale
// rounding enum.
//
//===----------------------------------------------------------------------===//

#ifndef LOWP_ATTRS_TD
#define LOWP_ATTRS_TD

include "lowp/LowpDialect.td"
include "lowp/LowpInterfaces.td"
include "mlir/IR/EnumAttr.td"

class Lowp_LayoutAttr<string name, string mnemonic>
    : Lowp_Attr<name, mnemonic,
        [DeclareAttrInterfaceMethods<Lowp_ScaleLayoutAttrInterface>]>;

def Lowp_PerTensorAttr : Lowp_LayoutAttr<"PerTensor", "per_tensor"> {
  let summary = "one f32 scale for the whole tensor";
  let description = [{
    The scales are a `memref<1x1xf32>`.

    ```mlir
    #lowp.per_tensor
    ```
  }];
  // Parsed by hand: MLIR hands a dialect attribute its whole body, and the generated
  // parser of a parameterless attribute would leave `<...>` after the name unread.
  let hasCustomAssemblyFormat = 1;
}

def Lowp_PerChannelAttr : Lowp_LayoutAttr<"PerChannel", "per_channel"> {
  let summary = "one f32 scale per row";
  let description = [{
    One scale per row of the `rows x K` tensor: per output row for the left
    operand, per output column for the right one. The scales are a
    `memref<rows x 1 x f32>`.

    ```mlir
    #lowp.per_channel
    ```
  }];
  // Parsed by hand: MLIR hands a dialect attribute its whole body, and the generated
  // parser of a parameterless attribute would leave `<...>` after the name unread.
  let hasCustomAssemblyFormat = 1;
}

def Lowp_MxAttr : Lowp_LayoutAttr<"Mx", "mx"> {
  let summary = "OCP MX: one E8M0 scale per block of K";
  let description = [{
    One `f8E8M0FNU` scale per `block` consecutive elements along K (32 in the
    OCP MX v1.0 formats MXFP8 / MXFP6 / MXFP4). The scales are a
    `memref<rows x ceil(K / block) x f8E8M0FNU>`.

    ```mlir
    #lowp.mx<32>
    ```
  }];
  let parameters = (ins "unsigned":$block);
  // Parsed by hand: the block size is read signed, so `-1` is reported as written.
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
}

def Lowp_Nvfp4Attr : Lowp_LayoutAttr<"Nvfp4", "nvfp4"> {
  let summary = "NVFP4: one UE4M3 scale per block of K, optional f32 global";
  let description = [{
    One unsigned E4M3 scale (stored as `f8E4M3FN` with the sign clear) per
    `block` elements along K (16 in NVIDIA's NVFP4), optionally multiplied by a
    per-tensor f32 global scale passed as a `memref<f32>`.

    ```mlir
    #lowp.nvfp4<16>
    #lowp.nvfp4<16, global>
    ```
  }];
  let parameters = (ins "unsigned":$block, "bool":$global);
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
}

def Lowp_BlockwiseAttr : Lowp_LayoutAttr<"Blockwise", "blockwise"> {
  let summary = "2-D tiles with one f32 scale each";
  let description = [{
    One f32 scale per `rows x cols` tile (cols along K), DeepSeek style: `1x128`
    for activations, `128x128` for weights. The scales are a
    `memref<ceil(rows / tileRows) x ceil(K / tileCols) x f32>`.

    ```mlir
    #lowp.blockwise<1x128>
    #lowp.blockwise<128x128>
    ```
  }];
  let parameters = (ins "unsigned":$tileRows, "unsigned":$tileCols);
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
}

def Lowp_ScaleRounding : I32EnumAttr<"ScaleRounding", "how a computed scale is stored", [
    I32EnumAttrCase<"round_up", 0>,
    I32EnumAttrCase<"ocp_mx", 1>
  ]> {
  let cppNamespace = "::mlir::lowp";
  let genSpecializedAttr = 0;
}

def Lowp_ScaleRoundingAttr : EnumAttr<Lowp_Dialect, Lowp_ScaleRounding, "rounding"> {
  let summary = "scale rounding policy";
  let description = [{
    `round_up` (the default): `amax / max_finite` rounded up onto the scale
    dtype's grid, so the block maximum never clips. `ocp_mx`: the OCP MX v1.0
    rule `2^(floor(log2 amax) - emax_elem)`; the block maximum may saturate.

    ```mlir
    #lowp.rounding<ocp_mx>
    ```
  }];
  let assemblyFormat = "`<` $value `>`";
}

#endif // LOWP_ATTRS_TD
