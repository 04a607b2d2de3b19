//===- LowpDialect.cpp - registration, types, attributes --------*- C++ -*-===//
//
// Registration of the lowp dialect, the custom syntax and verifiers of its types
// and attributes, and the ScaleLayoutAttrInterface of each layout. No lowering
// logic lives here: that is Rust's (crates/lowp-passes).
//
//===----------------------------------------------------------------------===//

#include "lowp/LowpDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::lowp;

#include "lowp/LowpDialect.cpp.inc"
#include "lowp/LowpEnums.cpp.inc"
#include "lowp/LowpInterfaces.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "lowp/LowpAttrs.cpp.inc"
#define GET_TYPEDEF_CLASSES
#include "lowp/LowpTypes.cpp.inc"

void LowpDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "lowp/LowpOps.cpp.inc"
      >();
  addTypes<
#define GET_TYPEDEF_LIST
#include "lowp/LowpTypes.cpp.inc"
      >();
  addAttributes<
#define GET_ATTRDEF_LIST
#include "lowp/LowpAttrs.cpp.inc"
      >();
}

//===----------------------------------------------------------------------===//
// Code types
//===----------------------------------------------------------------------===//

bool mlir::lowp::isCodeType(Type type) { return getCodeWidth(type) != 0; }

unsigned mlir::lowp::getCodeWidth(Type type) {
  return llvm::TypeSwitch<Type, unsigned>(type)
      .Case<Float8E4M3FNType, Float8E5M2Type, Float8E4M3FNUZType,
            Float8E5M2FNUZType>([](auto) { return 8; })
      .Case<Float6E2M3FNType, Float6E3M2FNType>([](auto) { return 6; })
      .Case<Float4E2M1FNType>([](auto) { return 4; })
      .Case<MinifloatType>([](MinifloatType t) { return t.getWidth(); })
      .Case<PackedType>(
          [](PackedType t) { return getCodeWidth(t.getElement()); })
      .Default([](Type) { return 0; });
}

IntegerType mlir::lowp::getStorageType(Type type) {
  // Every code, packed pair and E8M0 scale is stored in a byte, and read as one: an
  // iN load (N < 8) of a byte whose high bits are set is undefined in LLVM, while the
  // contract ignores the bits above a code's width.
  if (isa<PackedType, Float8E8M0FNUType>(type) || getCodeWidth(type))
    return IntegerType::get(type.getContext(), 8);
  return IntegerType();
}

Type mlir::lowp::getElementFormat(Type type) {
  if (auto packed = dyn_cast<PackedType>(type))
    return packed.getElement();
  return type;
}

//===----------------------------------------------------------------------===//
// MinifloatType: !lowp.mf<eXmY[, bias = B]>
//===----------------------------------------------------------------------===//

Type MinifloatType::parse(AsmParser &parser) {
  StringRef keyword;
  SMLoc loc = parser.getCurrentLocation();
  if (parser.parseLess() || parser.parseKeyword(&keyword))
    return {};
  unsigned e = 0, m = 0;
  StringRef rest = keyword;
  if (!rest.consume_front("e") || rest.consumeInteger(10, e) ||
      !rest.consume_front("m") || rest.consumeInteger(10, m) || !rest.empty()) {
    parser.emitError(loc, "expected a minifloat shape 'eXmY' (e.g. e3m0), found '")
        << keyword << "'";
    return {};
  }
  int bias = e == 0 || e > 30 ? 0 : (1 << (e - 1)) - 1;
  if (succeeded(parser.parseOptionalComma())) {
    int64_t b;
    if (parser.parseKeyword("bias") || parser.parseEqual() ||
        parser.parseInteger(b))
      return {};
    if (b < -128 || b > 127) {
      parser.emitError(loc, "bias must be in -128..127, found ") << b;
      return {};
    }
    bias = static_cast<int>(b);
  }
  if (parser.parseGreater())
    return {};
  return MinifloatType::getChecked(
      [&] { return parser.emitError(loc); }, parser.getContext(), e, m, bias);
}

void MinifloatType::print(AsmPrinter &printer) const {
  printer << "<e" << getExpBits() << "m" << getMantBits();
  if (getBias() != getIeeeBias())
    printer << ", bias = " << getBias();
  printer << ">";
}

LogicalResult
MinifloatType::verify(function_ref<InFlightDiagnostic()> emitError,
                      unsigned expBits, unsigned mantBits, int bias) {
  if (expBits == 0)
    return emitError() << "minifloat needs at least one exponent bit, found e"
                       << expBits << "m" << mantBits;
  // Each field first: their sum in 32 bits could wrap to a small width.
  if (expBits > 7 || mantBits > 7 || 1 + expBits + mantBits > 8)
    return emitError() << "minifloat e" << expBits << "m" << mantBits
                       << " needs " << 1 + uint64_t(expBits) + mantBits
                       << " bits, at most 8 fit a code";
  if (bias < -128 || bias > 127)
    return emitError() << "bias must be in -128..127, found " << bias;
  int top = ((1 << expBits) - 1) - bias;
  if (top > 127)
    return emitError() << "minifloat e" << expBits << "m" << mantBits
                       << " with bias " << bias << " reaches 2^" << top
                       << ", beyond f32 (at most 2^127)";
  int step = 1 - bias - static_cast<int>(mantBits);
  if (step > 104)
    return emitError() << "minifloat e" << expBits << "m" << mantBits
                       << " with bias " << bias << " has smallest step 2^"
                       << step << ", above 2^104";
  return success();
}

//===----------------------------------------------------------------------===//
// PackedType
//===----------------------------------------------------------------------===//

LogicalResult PackedType::verify(function_ref<InFlightDiagnostic()> emitError,
                                 Type element) {
  if (isa<PackedType>(element) || getCodeWidth(element) != 4)
    return emitError() << "!lowp.packed holds two 4-bit codes per byte; "
                          "expected f4E2M1FN or a 4-bit !lowp.mf, found "
                       << element;
  return success();
}

//===----------------------------------------------------------------------===//
// Scale layouts
//===----------------------------------------------------------------------===//

// The parameterless layouts: the name alone, anything after it refused.
template <typename Attr>
static Attribute parseBare(AsmParser &parser, StringRef name) {
  SMLoc loc = parser.getCurrentLocation();
  if (succeeded(parser.parseOptionalLess())) {
    parser.emitError(loc, "#lowp.") << name << " takes no parameters";
    return {};
  }
  return Attr::get(parser.getContext());
}

// A block size as written, signed and wide, so that `-1` or `2^40` is reported as
// itself: 1 to INT32_MAX (the op's block arithmetic is 32-bit signed).
static ParseResult parseBlockSize(AsmParser &parser, StringRef name,
                                  unsigned &block) {
  SMLoc loc = parser.getCurrentLocation();
  APInt value;
  if (parser.parseInteger(value))
    return failure();
  if (value.isNegative() || value.isZero() || value.getSignificantBits() > 32) {
    SmallString<24> written;
    value.toString(written, /*Radix=*/10, /*Signed=*/true);
    return parser.emitError(loc, "#lowp.")
           << name << " block size must be in 1.." << INT32_MAX << ", found "
           << written;
  }
  block = static_cast<unsigned>(value.getSExtValue());
  return success();
}

Attribute PerTensorAttr::parse(AsmParser &parser, Type) {
  return parseBare<PerTensorAttr>(parser, "per_tensor");
}
void PerTensorAttr::print(AsmPrinter &) const {}
Attribute PerChannelAttr::parse(AsmParser &parser, Type) {
  return parseBare<PerChannelAttr>(parser, "per_channel");
}
void PerChannelAttr::print(AsmPrinter &) const {}

int64_t PerTensorAttr::getKBlock() const { return 0; }
int64_t PerTensorAttr::getRowBlock() const { return 0; }
Type PerTensorAttr::getScaleElementType(MLIRContext *ctx) const {
  return Float32Type::get(ctx);
}
bool PerTensorAttr::hasGlobalScale() const { return false; }

int64_t PerChannelAttr::getKBlock() const { return 0; }
int64_t PerChannelAttr::getRowBlock() const { return 1; }
Type PerChannelAttr::getScaleElementType(MLIRContext *ctx) const {
  return Float32Type::get(ctx);
}
bool PerChannelAttr::hasGlobalScale() const { return false; }

Attribute MxAttr::parse(AsmParser &parser, Type) {
  SMLoc loc = parser.getCurrentLocation();
  unsigned block;
  if (parser.parseLess() || parseBlockSize(parser, "mx", block) ||
      parser.parseGreater())
    return {};
  return MxAttr::getChecked([&] { return parser.emitError(loc); },
                            parser.getContext(), block);
}

void MxAttr::print(AsmPrinter &printer) const {
  printer << "<" << getBlock() << ">";
}

LogicalResult MxAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                             unsigned block) {
  if (block == 0)
    return emitError() << "#lowp.mx block size must be at least 1, found 0";
  // Sizes built (not parsed) past the op's 32-bit signed arithmetic.
  if (block > INT32_MAX)
    return emitError() << "#lowp.mx block size must be at most " << INT32_MAX
                       << ", found " << block;
  return success();
}
int64_t MxAttr::getKBlock() const { return getBlock(); }
int64_t MxAttr::getRowBlock() const { return 1; }
Type MxAttr::getScaleElementType(MLIRContext *ctx) const {
  return Float8E8M0FNUType::get(ctx);
}
bool MxAttr::hasGlobalScale() const { return false; }

Attribute Nvfp4Attr::parse(AsmParser &parser, Type) {
  SMLoc loc = parser.getCurrentLocation();
  unsigned block;
  bool global = false;
  if (parser.parseLess() || parseBlockSize(parser, "nvfp4", block))
    return {};
  if (succeeded(parser.parseOptionalComma())) {
    if (parser.parseKeyword("global"))
      return {};
    global = true;
  }
  if (parser.parseGreater())
    return {};
  return Nvfp4Attr::getChecked([&] { return parser.emitError(loc); },
                               parser.getContext(), block, global);
}

void Nvfp4Attr::print(AsmPrinter &printer) const {
  printer << "<" << getBlock();
  if (getGlobal())
    printer << ", global";
  printer << ">";
}

LogicalResult Nvfp4Attr::verify(function_ref<InFlightDiagnostic()> emitError,
                                unsigned block, bool) {
  if (block == 0)
    return emitError() << "#lowp.nvfp4 block size must be at least 1, found 0";
  // Sizes built (not parsed) past the op's 32-bit signed arithmetic.
  if (block > INT32_MAX)
    return emitError() << "#lowp.nvfp4 block size must be at most " << INT32_MAX
                       << ", found " << block;
  return success();
}
int64_t Nvfp4Attr::getKBlock() const { return getBlock(); }
int64_t Nvfp4Attr::getRowBlock() const { return 1; }
Type Nvfp4Attr::getScaleElementType(MLIRContext *ctx) const {
  return Float8E4M3FNType::get(ctx);
}
bool Nvfp4Attr::hasGlobalScale() const { return getGlobal(); }

// `ROWSxCOLS` through the dimension-list parser (which takes `0x128`, lexed as a hex
// integer, as 0 by 128), a leading minus read first so that `-1x128` is reported as written.
Attribute BlockwiseAttr::parse(AsmParser &parser, Type) {
  SMLoc loc = parser.getCurrentLocation();
  SmallVector<int64_t, 2> dims;
  if (parser.parseLess())
    return {};
  bool negative = succeeded(parser.parseOptionalMinus());
  if (parser.parseDimensionList(dims, /*allowDynamic=*/false,
                                /*withTrailingX=*/false) ||
      parser.parseGreater())
    return {};
  if (dims.size() != 2) {
    parser.emitError(loc, "expected a 2-D tile ROWSxCOLS (e.g. 1x128), found ")
        << dims.size() << " dimension(s)";
    return {};
  }
  if (negative)
    dims[0] = -dims[0];
  auto fits = [](int64_t side) { return side >= 1 && side <= INT32_MAX; };
  if (!fits(dims[0]) || !fits(dims[1])) {
    parser.emitError(loc, "#lowp.blockwise tile sides must be in 1..")
        << INT32_MAX << ", found " << dims[0] << "x" << dims[1];
    return {};
  }
  return BlockwiseAttr::getChecked([&] { return parser.emitError(loc); },
                                   parser.getContext(), dims[0], dims[1]);
}

void BlockwiseAttr::print(AsmPrinter &printer) const {
  printer << "<" << getTileRows() << "x" << getTileCols() << ">";
}

LogicalResult
BlockwiseAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                      unsigned tileRows, unsigned tileCols) {
  if (tileRows == 0 || tileCols == 0)
    return emitError() << "#lowp.blockwise tile must be at least 1x1, found "
                       << tileRows << "x" << tileCols;
  if (tileRows > INT32_MAX || tileCols > INT32_MAX)
    return emitError() << "#lowp.blockwise tile dimensions must be at most "
                       << INT32_MAX << ", found " << tileRows << "x" << tileCols;
  return success();
}
int64_t BlockwiseAttr::getKBlock() const { return getTileCols(); }
int64_t BlockwiseAttr::getRowBlock() const { return getTileRows(); }
Type BlockwiseAttr::getScaleElementType(MLIRContext *ctx) const {
  return Float32Type::get(ctx);
}
bool BlockwiseAttr::hasGlobalScale() const { return false; }
