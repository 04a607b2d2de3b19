//===- LowpDialect.h - the lowp dialect in C++ ------------------*- C++ -*-===//
//
// Declarations generated from Lowp.td plus the few helpers the verifiers share.
//
//===----------------------------------------------------------------------===//

#ifndef LOWP_LOWPDIALECT_H
#define LOWP_LOWPDIALECT_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/Dialect/Bufferization/IR/BufferizableOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/DestinationStyleOpInterface.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

#include "lowp/LowpDialect.h.inc"
#include "lowp/LowpEnums.h.inc"
#include "lowp/LowpInterfaces.h.inc"

#define GET_ATTRDEF_CLASSES
#include "lowp/LowpAttrs.h.inc"
#define GET_TYPEDEF_CLASSES
#include "lowp/LowpTypes.h.inc"

namespace mlir::lowp {
/// True for a type that is an element code: one of the seven builtin small floats
/// lowp gives hardware semantics to, `!lowp.mf<...>`, or `!lowp.packed<...>`.
bool isCodeType(Type type);
/// Bits of one code of an element format (packed storage: the element's bits).
/// 0 for types that are not codes.
unsigned getCodeWidth(Type type);
/// The integer type a code type is stored as (iN for an N-bit format, i8 for packed
/// storage and for f8E8M0FNU scales), null for any other type.
IntegerType getStorageType(Type type);
/// The element format of a code type (the inner element of `!lowp.packed`).
Type getElementFormat(Type type);
} // namespace mlir::lowp

#define GET_OP_CLASSES
#include "lowp/LowpOps.h.inc"

#endif // LOWP_LOWPDIALECT_H
