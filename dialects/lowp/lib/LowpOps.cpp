//===- LowpOps.cpp - op verifiers --------------------------------*- C++ -*-===//
//
// The verifiers of the lowp ops. Every rule below produces a diagnostic at the
// op that names what was expected and what was found:
//
//  0. Operands are all memrefs or all tensors (a tensor form returns the new
//     values of its `into` operands; ODS checks ranks and element types), and
//     tensors have no encoding.
//  1. Code operands are rank-2 element codes (ODS); a packed operand
//     stores ceil(K / 2) bytes per row, so its logical K is twice its last dim.
//  2. Shapes agree: quantize/dequantize input and output are the same logical
//     shape; scaled_matmul is (M x K) x (N x K) -> M x N with one K; the bias has
//     N elements.
//  3. Scales agree with the layout: element type (f8E8M0FNU for MX, f8E4M3FN
//     for NVFP4, f32 otherwise) and shape ceil(rows / rowBlock) x
//     ceil(K / kBlock) (per-tensor 1x1, per-channel rows x 1); a partial last
//     block is the padded one.
//  4. A global scale is present exactly when the layout is #lowp.nvfp4<N, global>.
//  5. Format / layout pairs make sense: NVFP4 needs a 4-bit format; MX and NVFP4
//     scale OCP formats, not the FNUZ ones.
//  6. compute_scales' `format` is an element format, not packed storage.
//  7. storage_cast keeps shape and layout and yields the storage integer of its
//     codes (or of f8E8M0FNU scales).
//  8. scaled_matmul's f32 partial sums (one per scale block) hold every product
//     of two codes and a block's sum of them (lowp-formats' check_f32_products):
//     custom formats with wide exponent ranges can fail it.
//  9. Memref operands have a strided layout with contiguous rows, in the
//     default or a numbered memory space.
//
// Dynamic dimensions are checked at run time by lowp-assert-shapes (cf.assert
// before the op; the lowp pipelines run it first), not here.
//
// Also here: the destination-style, memory-effect and bufferization methods of
// compute_scales, quantize, dequantize and scaled_matmul. Their `into` operands
// are the DPS inits; on tensors each init has a result of its type, and
// bufferizing an op makes the same op on the inits' buffers.
//
//===----------------------------------------------------------------------===//

#include "lowp/LowpDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/PatternMatch.h"
#include "llvm/ADT/APFloat.h"

#include <cmath>

using namespace mlir;
using namespace mlir::lowp;

namespace {

bool isStatic(int64_t d) { return !ShapedType::isDynamic(d); }

/// Prints a dimension, `?` when dynamic.
std::string dimStr(int64_t d) {
  return isStatic(d) ? std::to_string(d) : std::string("?");
}

std::string shapeStr(int64_t r, int64_t c) { return dimStr(r) + "x" + dimStr(c); }

ShapedType shaped(Value v) { return cast<ShapedType>(v.getType()); }

/// The logical rows x K of a codes memref or tensor (packed: K = 2 * last dim).
std::pair<int64_t, int64_t> logicalShape(ShapedType codes) {
  int64_t rows = codes.getDimSize(0), k = codes.getDimSize(1);
  if (isa<PackedType>(codes.getElementType()) && isStatic(k))
    k *= 2;
  return {rows, k};
}

int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

/// Rule 5 (and 6 for `what`): does `format` make sense under `layout`?
LogicalResult verifyFormatLayout(Operation *op, StringRef what, Type format,
                                 ScaleLayoutAttrInterface layout) {
  Type element = getElementFormat(format);
  if (isa<Nvfp4Attr>(layout) && getCodeWidth(element) != 4)
    return op->emitOpError() << what << ": " << layout
                             << " scales 4-bit elements, found " << element
                             << " (" << getCodeWidth(element) << " bits)";
  if (isa<MxAttr, Nvfp4Attr>(layout) &&
      isa<Float8E4M3FNUZType, Float8E5M2FNUZType>(element))
    return op->emitOpError()
           << what << ": " << layout << " scales OCP formats; " << element
           << " is an AMD FNUZ format (use #lowp.per_tensor, "
              "#lowp.per_channel or #lowp.blockwise)";
  return success();
}

/// Rules 3 and 4 for one scaled tensor of logical shape rows x k.
LogicalResult verifyScales(Operation *op, StringRef what, int64_t rows,
                           int64_t k, ScaleLayoutAttrInterface layout,
                           Value scales, Value global) {
  auto scaleType = shaped(scales);
  Type want = layout.getScaleElementType(op->getContext());
  if (scaleType.getElementType() != want)
    return op->emitOpError() << what << " scales: " << layout
                             << " stores scales as " << want << ", found "
                             << scaleType.getElementType();
  int64_t rb = layout.getRowBlock(), kb = layout.getKBlock();
  int64_t wantRows =
      rb == 0 ? 1 : (isStatic(rows) ? ceilDiv(rows, rb) : ShapedType::kDynamic);
  int64_t wantCols =
      kb == 0 ? 1 : (isStatic(k) ? ceilDiv(k, kb) : ShapedType::kDynamic);
  int64_t gotRows = scaleType.getDimSize(0), gotCols = scaleType.getDimSize(1);
  bool rowsOk = !isStatic(wantRows) || !isStatic(gotRows) || wantRows == gotRows;
  bool colsOk = !isStatic(wantCols) || !isStatic(gotCols) || wantCols == gotCols;
  if (!rowsOk || !colsOk)
    return op->emitOpError()
           << what << " scales: " << layout << " over a " << shapeStr(rows, k)
           << " tensor needs " << shapeStr(wantRows, wantCols)
           << " scales, found " << shapeStr(gotRows, gotCols);
  if (layout.hasGlobalScale() && !global)
    return op->emitOpError() << what << ": " << layout
                             << " needs a global scale operand (memref<f32>)";
  if (!layout.hasGlobalScale() && global)
    return op->emitOpError() << what << ": " << layout
                             << " has no global scale, but one is given";
  return success();
}

/// The largest and the smallest positive magnitude of a format's codes.
std::pair<double, double> codeRange(Type format) {
  if (auto mf = dyn_cast<MinifloatType>(format)) {
    // All finite: the all-ones exponent field is a binade like any other.
    int m = mf.getMantBits(), top = (1 << mf.getExpBits()) - 1 - mf.getBias();
    return {std::ldexp(2.0 - std::ldexp(1.0, -m), top),
            std::ldexp(1.0, 1 - mf.getBias() - m)};
  }
  const llvm::fltSemantics &sem = cast<FloatType>(format).getFloatSemantics();
  return {llvm::APFloat::getLargest(sem).convertToDouble(),
          llvm::APFloat::getSmallest(sem).convertToDouble()};
}

/// Rule 8: products of `a` and `b` codes, and sums of `block` of them, within f32.
LogicalResult verifyF32Products(Operation *op, Type a, Type b, int64_t block) {
  auto [topA, stepA] = codeRange(a);
  auto [topB, stepB] = codeRange(b);
  double top = topA * topB, step = stepA * stepB;
  double f32Max = llvm::APFloat::getLargest(llvm::APFloat::IEEEsingle())
                      .convertToDouble();
  auto log2 = [](double x) { return std::lround(std::log2(x)); };
  if (step < std::ldexp(1.0, -149))
    return op->emitOpError()
           << "products of " << a << " and " << b << " codes go down to 2^"
           << log2(step)
           << ", below f32's smallest 2^-149: the f32 partial sums cannot hold them";
  if (top * double(block) > f32Max) {
    auto diag = op->emitOpError() << "products of " << a << " and " << b
                                  << " codes reach 2^" << log2(top);
    if (block > 1)
      diag << " (a sum of " << block << ", one scale block: 2^"
           << log2(top * double(block)) << ")";
    return diag << ", above f32's largest (2^128 - 2^104): the f32 partial "
                   "sums cannot hold them";
  }
  return success();
}

/// Rule 2 for same-shape tensors.
LogicalResult verifySameShape(Operation *op, StringRef a, int64_t ar,
                              int64_t ak, StringRef b, int64_t br, int64_t bk) {
  bool rowsOk = !isStatic(ar) || !isStatic(br) || ar == br;
  bool kOk = !isStatic(ak) || !isStatic(bk) || ak == bk;
  if (!rowsOk || !kOk)
    return op->emitOpError() << a << " is " << shapeStr(ar, ak) << " but " << b
                             << " is " << shapeStr(br, bk)
                             << " (logical shapes must match)";
  return success();
}

} // namespace

//===----------------------------------------------------------------------===//
// custom<Layout>: a scale layout attribute, with a diagnostic that lists them
//===----------------------------------------------------------------------===//

static ParseResult parseLayout(OpAsmParser &parser,
                               ScaleLayoutAttrInterface &layout) {
  SMLoc loc = parser.getCurrentLocation();
  Attribute attr;
  if (parser.parseAttribute(attr))
    return failure();
  layout = dyn_cast<ScaleLayoutAttrInterface>(attr);
  if (!layout)
    return parser.emitError(loc)
           << "expected a scale layout (#lowp.per_tensor, #lowp.per_channel, "
              "#lowp.mx<N>, #lowp.nvfp4<N[, global]>, #lowp.blockwise<RxC>), "
              "found "
           << attr;
  return success();
}

static void printLayout(OpAsmPrinter &printer, Operation *,
                        ScaleLayoutAttrInterface layout) {
  printer.printAttribute(layout);
}

// Every memref operand in a form the lowerings address: a strided layout whose last
// dimension is contiguous (rows are read and written as runs of elements), in the default
// or a numbered memory space. A permuted affine_map layout, or a named memory space, has
// no strided form; the passes would fail on it deep inside upstream conversions.
static LogicalResult verifyMemRefForms(Operation *op) {
  for (auto [i, v] : llvm::enumerate(op->getOperands())) {
    auto t = dyn_cast<MemRefType>(v.getType());
    if (!t)
      continue;
    if (!t.isStrided())
      return op->emitOpError() << "operand #" << i << " (" << t
                               << ") has a layout with no strided form";
    if (t.getRank() > 0 && !t.isLastDimUnitStride())
      return op->emitOpError() << "operand #" << i << " (" << t
                               << ") must be contiguous along its last dimension";
    if (Attribute space = t.getMemorySpace(); space && !isa<IntegerAttr>(space))
      return op->emitOpError() << "operand #" << i << " (" << t
                               << ") is in memory space " << space
                               << "; the default or a numbered one is expected";
  }
  return success();
}

// Rule 0: a tensor form returns what a memref form writes, so the two cannot mix.
static LogicalResult verifyOneForm(Operation *op) {
  std::optional<unsigned> tensor, memref;
  for (auto [i, v] : llvm::enumerate(op->getOperands())) {
    if (isa<TensorType>(v.getType()) && !tensor)
      tensor = i;
    if (isa<MemRefType>(v.getType()) && !memref)
      memref = i;
  }
  if (tensor && memref)
    return op->emitOpError()
           << "operand #" << *memref << " is a memref and operand #" << *tensor
           << " a tensor: operands are all memrefs (the op writes its `into` "
              "operands) or all tensors (it returns their new values)";
  // A tensor encoding (sparse storage, say) is no dense row-major array of codes.
  for (auto [i, v] : llvm::enumerate(op->getOperands()))
    if (auto t = dyn_cast<RankedTensorType>(v.getType()); t && t.getEncoding())
      return op->emitOpError()
             << "operand #" << i << " (" << t
             << ") has an encoding; the ops take dense tensors";
  return success();
}

static LogicalResult verifyForms(Operation *op) {
  return failure(failed(verifyOneForm(op)) || failed(verifyMemRefForms(op)));
}

LogicalResult ComputeScalesOp::verify() {
  if (failed(verifyForms(*this)))
    return failure();
  Type format = getFormat();
  if (isa<PackedType>(format))
    return emitOpError() << "format must be an element format, found packed "
                            "storage "
                         << format << " (use its element type)";
  if (failed(verifyFormatLayout(*this, "format", format, getLayout())))
    return failure();
  auto input = shaped(getInput());
  return verifyScales(*this, "output", input.getDimSize(0), input.getDimSize(1),
                      getLayout(), getScales(), getGlobal());
}

LogicalResult QuantizeOp::verify() {
  if (failed(verifyForms(*this)))
    return failure();
  auto input = shaped(getInput());
  auto [rows, k] = logicalShape(shaped(getOutput()));
  if (failed(verifySameShape(*this, "input", input.getDimSize(0),
                             input.getDimSize(1), "output", rows, k)) ||
      failed(verifyFormatLayout(*this, "output",
                                shaped(getOutput()).getElementType(),
                                getLayout())))
    return failure();
  return verifyScales(*this, "input", input.getDimSize(0), input.getDimSize(1),
                      getLayout(), getScales(), getGlobal());
}

LogicalResult DequantizeOp::verify() {
  if (failed(verifyForms(*this)))
    return failure();
  auto output = shaped(getOutput());
  auto [rows, k] = logicalShape(shaped(getCodes()));
  if (failed(verifySameShape(*this, "codes", rows, k, "output",
                             output.getDimSize(0), output.getDimSize(1))) ||
      failed(verifyFormatLayout(*this, "codes",
                                shaped(getCodes()).getElementType(),
                                getLayout())))
    return failure();
  return verifyScales(*this, "codes", rows, k, getLayout(), getScales(),
                      getGlobal());
}

LogicalResult ScaledMatmulOp::verify() {
  if (failed(verifyForms(*this)))
    return failure();
  auto [m, ka] = logicalShape(shaped(getLhs()));
  auto [n, kb] = logicalShape(shaped(getRhs()));
  if (isStatic(ka) && isStatic(kb) && ka != kb)
    return emitOpError() << "lhs is " << shapeStr(m, ka) << " and rhs is "
                         << shapeStr(n, kb)
                         << ": K must match (rhs is N x K, K-last)";
  auto out = shaped(getOut());
  if (failed(verifySameShape(*this, "result", out.getDimSize(0),
                             out.getDimSize(1), "lhs x rhs^T", m, n)))
    return failure();
  if (Value bias = getBias()) {
    int64_t len = shaped(bias).getDimSize(0);
    if (isStatic(len) && isStatic(n) && len != n)
      return emitOpError() << "bias has " << len << " elements, expected N = "
                           << n;
  }
  Type lhs = shaped(getLhs()).getElementType();
  Type rhs = shaped(getRhs()).getElementType();
  if (failed(verifyFormatLayout(*this, "lhs", lhs, getLhsLayout())) ||
      failed(verifyFormatLayout(*this, "rhs", rhs, getRhsLayout())) ||
      failed(verifyScales(*this, "lhs", m, ka, getLhsLayout(), getLhsScales(),
                          getLhsGlobal())))
    return failure();
  if (failed(verifyScales(*this, "rhs", n, kb, getRhsLayout(), getRhsScales(),
                          getRhsGlobal())))
    return failure();
  // One partial sum covers the shorter of the two scale blocks (all of K for
  // per-tensor and per-channel scales); with neither known, one product.
  int64_t block = 0;
  for (int64_t b : {getLhsLayout().getKBlock(), getRhsLayout().getKBlock(),
                    isStatic(ka) ? ka : int64_t(0)})
    if (b > 0)
      block = block == 0 ? b : std::min(block, b);
  return verifyF32Products(*this, getElementFormat(lhs), getElementFormat(rhs),
                           std::max<int64_t>(block, 1));
}

//===----------------------------------------------------------------------===//
// Destination style, memory effects, bufferization
//===----------------------------------------------------------------------===//

MutableOperandRange ComputeScalesOp::getDpsInitsMutable() {
  return MutableOperandRange(*this, 1, getGlobal() ? 2 : 1);
}
MutableOperandRange QuantizeOp::getDpsInitsMutable() {
  return getOutputMutable();
}
MutableOperandRange DequantizeOp::getDpsInitsMutable() {
  return getOutputMutable();
}
MutableOperandRange ScaledMatmulOp::getDpsInitsMutable() {
  return getOutMutable();
}

namespace {

/// One result per tensor among the last `inits` operands (the inits), of its type.
LogicalResult inferInitTypes(ValueRange operands, size_t inits,
                             SmallVectorImpl<Type> &types) {
  if (operands.size() < inits)
    return failure();
  for (Value v : operands.take_back(inits))
    if (isa<TensorType>(v.getType()))
      types.push_back(v.getType());
  return success();
}

/// Memory effects of the memref form: its inputs are read, its inits written (in
/// full: a quantize or matmul result does not depend on what the init held).
template <typename OpT>
void bufferEffects(
    OpT op,
    SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>> &effects) {
  for (OpOperand &o : op->getOpOperands()) {
    if (!isa<MemRefType>(o.get().getType()))
      continue;
    if (op.isDpsInit(&o))
      effects.emplace_back(MemoryEffects::Write::get(), &o,
                           SideEffects::DefaultResource::get());
    else
      effects.emplace_back(MemoryEffects::Read::get(), &o,
                           SideEffects::DefaultResource::get());
  }
}

/// The same op on the operands' buffers; the tensor results become the inits'
/// buffers. The lowerings address rows as contiguous runs, so a buffer whose
/// last dimension may be strided (the fully dynamic layout one-shot-bufferize
/// gives function arguments and unknown values by default) is refused here,
/// where the options that avoid it can be named.
template <typename OpT>
LogicalResult
bufferizeInPlace(OpT op, RewriterBase &rewriter,
                 const bufferization::BufferizationOptions &options,
                 bufferization::BufferizationState &state) {
  SmallVector<Value> operands, results;
  for (OpOperand &o : op->getOpOperands()) {
    Value v = o.get();
    if (isa<TensorType>(v.getType())) {
      FailureOr<Value> buffer =
          bufferization::getBuffer(rewriter, v, options, state);
      if (failed(buffer))
        return failure();
      v = *buffer;
      auto memref = dyn_cast<MemRefType>(v.getType());
      if (memref && memref.getRank() > 0 && !memref.isLastDimUnitStride())
        return op->emitOpError()
               << "operand #" << o.getOperandNumber() << " bufferizes to "
               << memref
               << ", whose rows may not be contiguous; bufferize with "
                  "identity layouts (one-shot-bufferize{"
                  "function-boundary-type-conversion=identity-layout-map "
                  "unknown-type-conversion=identity-layout-map})";
      if (op.isDpsInit(&o))
        results.push_back(v);
    }
    operands.push_back(v);
  }
  rewriter.setInsertionPoint(op);
  OperationState replacement(op->getLoc(), op->getName(), operands, TypeRange{},
                             op->getAttrs());
  rewriter.create(replacement);
  bufferization::replaceOpWithBufferizedValues(rewriter, op, results);
  return success();
}

} // namespace

#define LOWP_DPS_METHODS(OP, INITS)                                            \
  LogicalResult OP::inferReturnTypes(                                          \
      MLIRContext *, std::optional<Location>, ValueRange operands,             \
      DictionaryAttr, OpaqueProperties, RegionRange,                           \
      SmallVectorImpl<Type> &types) {                                          \
    return inferInitTypes(operands, INITS, types);                             \
  }                                                                            \
  void OP::getEffects(                                                         \
      SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>>      \
          &effects) {                                                          \
    bufferEffects(*this, effects);                                             \
  }                                                                            \
  bool OP::bufferizesToMemoryRead(OpOperand &o,                                \
                                  const bufferization::AnalysisState &) {      \
    return !isDpsInit(&o);                                                     \
  }                                                                            \
  bool OP::bufferizesToMemoryWrite(OpOperand &o,                               \
                                   const bufferization::AnalysisState &) {     \
    return isDpsInit(&o);                                                      \
  }                                                                            \
  bufferization::AliasingValueList OP::getAliasingValues(                      \
      OpOperand &o, const bufferization::AnalysisState &) {                    \
    if (!isDpsInit(&o))                                                        \
      return {};                                                               \
    return {{getTiedOpResult(&o), bufferization::BufferRelation::Equivalent}}; \
  }                                                                            \
  LogicalResult OP::bufferize(                                                 \
      RewriterBase &rewriter,                                                  \
      const bufferization::BufferizationOptions &options,                      \
      bufferization::BufferizationState &state) {                              \
    return bufferizeInPlace(*this, rewriter, options, state);                  \
  }

// compute_scales: the scales and the optional global (every operand but the
// input); the others: their last operand.
LOWP_DPS_METHODS(ComputeScalesOp, operands.empty() ? 0 : operands.size() - 1)
LOWP_DPS_METHODS(QuantizeOp, 1)
LOWP_DPS_METHODS(DequantizeOp, 1)
LOWP_DPS_METHODS(ScaledMatmulOp, 1)

#undef LOWP_DPS_METHODS

LogicalResult StorageCastOp::verify() {
  auto source = cast<MemRefType>(getSource().getType());
  auto result = cast<MemRefType>(getResult().getType());
  Type element = source.getElementType();
  IntegerType storage = getStorageType(element);
  if (!storage)
    return emitOpError()
           << "source elements must be codes or f8E8M0FNU scales, found "
           << element;
  if (result.getElementType() != storage)
    return emitOpError() << "codes of " << element << " are stored as "
                         << storage << ", found " << result.getElementType();
  if (source.getShape() != result.getShape() ||
      source.getLayout() != result.getLayout() ||
      source.getMemorySpace() != result.getMemorySpace())
    return emitOpError() << "shape, layout and memory space must be kept: "
                         << source << " vs " << result;
  return success();
}

Value StorageCastOp::getViewSource() { return getSource(); }

#define GET_OP_CLASSES
#include "lowp/LowpOps.cpp.inc"
