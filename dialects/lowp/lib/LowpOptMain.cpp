//===- LowpOptMain.cpp - lowp-opt's MlirOptMain shim -------------*- C++ -*-===//
//
// Every upstream dialect, extension and pass plus lowp, handed to MlirOptMain.
// Rust passes are registered by the Rust main before it calls lowpOptMain.
//
//===----------------------------------------------------------------------===//

#include "lowp-c/Lowp.h"
#include "lowp/LowpDialect.h"

#include "mlir/CAPI/IR.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

#include <mutex>

void lowpRegisterAllDialects(MlirDialectRegistry registry) {
  mlir::DialectRegistry &r = *unwrap(registry);
  mlir::registerAllDialects(r);
  mlir::registerAllExtensions(r);
  // What gpu-module-to-binary needs to translate a gpu.module's body (as mlir-opt does).
  mlir::registerAllGPUToLLVMIRTranslations(r);
  r.insert<mlir::lowp::LowpDialect>();
}

void lowpRegisterAllUpstreamPasses() {
  static std::once_flag once;
  std::call_once(once, [] { mlir::registerAllPasses(); });
}

int lowpOptMain(int argc, char **argv) {
  lowpRegisterAllUpstreamPasses();
  mlir::DialectRegistry registry;
  lowpRegisterAllDialects(wrap(&registry));
  return mlir::asMainReturnCode(mlir::MlirOptMain(
      argc, argv, "lowp optimizer driver: MLIR with the lowp dialect and passes\n",
      registry));
}
