//===- LowpCAPI.cpp - C API of the lowp dialect ------------------*- C++ -*-===//
//
// Registration handle, type and attribute constructors and accessors for Rust.
//
//===----------------------------------------------------------------------===//

#include "lowp-c/Lowp.h"
#include "lowp/LowpDialect.h"

#include "mlir/CAPI/IR.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinDialect.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "mlir/CAPI/Registration.h"

using namespace mlir;
using namespace mlir::lowp;

MLIR_DEFINE_CAPI_DIALECT_REGISTRATION(Lowp, lowp, mlir::lowp::LowpDialect)

MlirType lowpMinifloatTypeGet(MlirContext ctx, unsigned expBits,
                              unsigned mantBits, int bias) {
  MLIRContext *context = unwrap(ctx);
  // Checked: an invalid shape gives a null type (and a diagnostic), not an abort.
  return wrap(MinifloatType::getChecked(
      [&] { return emitError(UnknownLoc::get(context)); }, context, expBits,
      mantBits, bias));
}

bool lowpTypeIsAMinifloat(MlirType type) {
  return isa<MinifloatType>(unwrap(type));
}
unsigned lowpMinifloatTypeGetExpBits(MlirType type) {
  return cast<MinifloatType>(unwrap(type)).getExpBits();
}
unsigned lowpMinifloatTypeGetMantBits(MlirType type) {
  return cast<MinifloatType>(unwrap(type)).getMantBits();
}
int lowpMinifloatTypeGetBias(MlirType type) {
  return cast<MinifloatType>(unwrap(type)).getBias();
}

MlirType lowpPackedTypeGet(MlirType element) {
  Type e = unwrap(element);
  return wrap(PackedType::getChecked(
      [&] { return emitError(UnknownLoc::get(e.getContext())); },
      e.getContext(), e));
}
bool lowpTypeIsAPacked(MlirType type) { return isa<PackedType>(unwrap(type)); }
MlirType lowpPackedTypeGetElement(MlirType type) {
  return wrap(cast<PackedType>(unwrap(type)).getElement());
}

unsigned lowpCodeTypeGetWidth(MlirType type) {
  return getCodeWidth(unwrap(type));
}
MlirType lowpCodeTypeGetStorageType(MlirType type) {
  return wrap(static_cast<Type>(getStorageType(unwrap(type))));
}

MlirAttribute lowpPerTensorAttrGet(MlirContext ctx) {
  return wrap(PerTensorAttr::get(unwrap(ctx)));
}
MlirAttribute lowpPerChannelAttrGet(MlirContext ctx) {
  return wrap(PerChannelAttr::get(unwrap(ctx)));
}
MlirAttribute lowpMxAttrGet(MlirContext ctx, unsigned block) {
  MLIRContext *context = unwrap(ctx);
  return wrap(MxAttr::getChecked(
      [&] { return emitError(UnknownLoc::get(context)); }, context, block));
}
MlirAttribute lowpNvfp4AttrGet(MlirContext ctx, unsigned block, bool global) {
  MLIRContext *context = unwrap(ctx);
  return wrap(Nvfp4Attr::getChecked(
      [&] { return emitError(UnknownLoc::get(context)); }, context, block,
      global));
}
MlirAttribute lowpBlockwiseAttrGet(MlirContext ctx, unsigned tileRows,
                                   unsigned tileCols) {
  MLIRContext *context = unwrap(ctx);
  return wrap(BlockwiseAttr::getChecked(
      [&] { return emitError(UnknownLoc::get(context)); }, context, tileRows,
      tileCols));
}

int lowpScaleLayoutGetKind(MlirAttribute attr) {
  Attribute a = unwrap(attr);
  if (isa<PerTensorAttr>(a))
    return 0;
  if (isa<MxAttr>(a))
    return 1;
  if (isa<Nvfp4Attr>(a))
    return 2;
  if (isa<PerChannelAttr>(a))
    return 3;
  if (isa<BlockwiseAttr>(a))
    return 4;
  return -1;
}

unsigned lowpScaleLayoutGetBlock(MlirAttribute attr) {
  Attribute a = unwrap(attr);
  if (auto mx = dyn_cast<MxAttr>(a))
    return mx.getBlock();
  if (auto nv = dyn_cast<Nvfp4Attr>(a))
    return nv.getBlock();
  return 0;
}
unsigned lowpScaleLayoutGetTileRows(MlirAttribute attr) {
  auto bw = dyn_cast<BlockwiseAttr>(unwrap(attr));
  return bw ? bw.getTileRows() : 0;
}
unsigned lowpScaleLayoutGetTileCols(MlirAttribute attr) {
  auto bw = dyn_cast<BlockwiseAttr>(unwrap(attr));
  return bw ? bw.getTileCols() : 0;
}
bool lowpScaleLayoutHasGlobal(MlirAttribute attr) {
  auto layout = dyn_cast<ScaleLayoutAttrInterface>(unwrap(attr));
  return layout && layout.hasGlobalScale();
}

MlirAttribute lowpRoundingAttrGet(MlirContext ctx, int rounding) {
  auto value = symbolizeScaleRounding(static_cast<uint32_t>(rounding));
  if (!value)
    return MlirAttribute{nullptr};
  return wrap(ScaleRoundingAttr::get(unwrap(ctx), *value));
}
int lowpRoundingAttrGetValue(MlirAttribute attr) {
  auto r = dyn_cast<ScaleRoundingAttr>(unwrap(attr));
  return r ? static_cast<int>(r.getValue()) : -1;
}

void lowpEmitRemark(MlirLocation loc, MlirStringRef message) {
  emitRemark(unwrap(loc), unwrap(message));
}

bool lowpAttributeIsMissingResource(MlirAttribute attr) {
  auto resource = dyn_cast<DenseResourceElementsAttr>(unwrap(attr));
  return resource && !resource.getRawHandle().getBlob();
}

bool lowpResourceSizeMismatch(MlirAttribute attr, int64_t *blobBytes,
                              int64_t *typeBytes) {
  auto resource = dyn_cast<DenseResourceElementsAttr>(unwrap(attr));
  if (!resource || !resource.getRawHandle().getBlob())
    return false;
  ShapedType type = resource.getType();
  Type element = type.getElementType();
  int64_t bits;
  if (auto integer = dyn_cast<IntegerType>(element))
    bits = integer.getWidth();
  else if (auto real = dyn_cast<FloatType>(element))
    bits = real.getWidth();
  else if (isa<IndexType>(element))
    bits = IndexType::kInternalStorageBitWidth;
  else
    return false;
  if (!type.hasStaticShape())
    return false;
  *typeBytes = type.getNumElements() * ((bits + 7) / 8);
  *blobBytes =
      static_cast<int64_t>(resource.getRawHandle().getBlob()->getData().size());
  return *blobBytes != *typeBytes;
}
