//===- Lowp.td - everything of the lowp dialect ------------*- tablegen -*-===//
//
// The one file mlir-tblgen reads; each included file has one job.
//
//===----------------------------------------------------------------------===//

include "lowp/LowpDialect.td"
include "lowp/LowpInterfaces.td"
include "lowp/LowpTypes.td"
include "lowp/LowpAttrs.td"
include "lowp/LowpOps.td"
