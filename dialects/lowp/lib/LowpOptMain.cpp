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
#include "llvm/Support/ErrorHandling.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/Signals.h"
#include "llvm/Support/raw_ostream.h"

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

void lowpInstallBadAllocHandler(void (*handler)(const char *reason)) {
  llvm::install_bad_alloc_error_handler(
      [](void *user, const char *reason, bool) {
        reinterpret_cast<void (*)(const char *)>(user)(reason);
      },
      reinterpret_cast<void *>(handler));
}

// MlirOptMain reads its input whole before parsing: a device (`/dev/zero`, or
// standard input from one that is not a terminal) would be read until memory
// ran out. As in lowp-run and lowp-translate, such an input is refused before
// it is opened.
static bool refuseDevice(llvm::StringRef input) {
  namespace fs = llvm::sys::fs;
  bool stdinput = input == "-";
  if (stdinput && llvm::sys::Process::StandardInIsUserInput())
    return false;
  fs::file_status status;
  std::error_code failed =
      stdinput ? fs::status(0, status) : fs::status(input, status);
  if (failed || (status.type() != fs::file_type::character_file &&
                 status.type() != fs::file_type::block_file))
    return false;
  // /dev/null ends at once: it reads as an empty module.
  fs::file_status null;
  if (!fs::status("/dev/null", null) && fs::equivalent(status, null))
    return false;
  llvm::errs() << "lowp-opt: '" << (stdinput ? "standard input" : input)
               << "' is a device, not a file: the module is read whole before "
                  "it is parsed\n";
  return true;
}

int lowpOptMain(int argc, char **argv, void (*armSignals)(void)) {
  // MlirOptMain's InitLLVM installs LLVM's crash report unless it is installed
  // already: install it here, so that the caller's handlers go in front of it.
  llvm::sys::PrintStackTraceOnErrorSignal(argc > 0 ? argv[0] : "lowp-opt");
  if (armSignals)
    armSignals();
  lowpRegisterAllUpstreamPasses();
  mlir::DialectRegistry registry;
  lowpRegisterAllDialects(wrap(&registry));
  auto [input, output] = mlir::registerAndParseCLIOptions(
      argc, argv, "lowp optimizer driver: MLIR with the lowp dialect and passes\n",
      registry);
  if (refuseDevice(input))
    return 1;
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, input, output, registry));
}
