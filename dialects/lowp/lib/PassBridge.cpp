//===- PassBridge.cpp - register Rust passes by name -------------*- C++ -*-===//
//
// MLIR's C API can build an external pass but cannot put one in the global
// registry, and its external passes have no options. This bridge does both: a
// Rust pass is described by a LowpPassSpec (argument, description, string
// options with defaults, callbacks) and registered with mlir::registerPass, so
// MlirOptMain's command line, --help and textual pipelines
// (`func.func(lowp-foo{opt=value})`) know it. Running it calls back into Rust
// with the operation and the option values; option values are validated by Rust
// when the pipeline is parsed.
//
//===----------------------------------------------------------------------===//

#include "lowp-c/Lowp.h"

#include "mlir/CAPI/IR.h"
#include "mlir/CAPI/Registration.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Support/TypeID.h"

#include <memory>
#include <mutex>
#include <string>
#include <vector>

using namespace mlir;

namespace {

/// An owned copy of a LowpPassSpec, alive for the whole process (pass
/// registrations are global and never removed).
struct RustPassInfo {
  std::string argument, name, description, opName;
  bool anyOp;
  struct Opt {
    std::string name, defaultValue, description;
    bool isFlag;
  };
  std::vector<Opt> options;
  std::vector<MlirDialectHandle> dependentDialects;
  void *userData;
  LowpPassRunFn run;
  LowpPassValidateFn validate;
  TypeID typeID;
};

TypeID allocateTypeID() {
  static TypeIDAllocator allocator;
  static std::mutex mutex;
  std::lock_guard<std::mutex> lock(mutex);
  return allocator.allocate();
}

void reportToTwine(void *ctx, MlirStringRef message) {
  static_cast<std::string *>(ctx)->append(message.data, message.length);
}

class RustPass : public Pass {
public:
  explicit RustPass(const RustPassInfo &info)
      : Pass(info.typeID, info.anyOp ? std::nullopt
                                     : std::optional<StringRef>(info.opName)),
        info(info) {
    for (const RustPassInfo::Opt &o : info.options)
      // A flag's value is optional: named alone it is set, as upstream's bool
      // options are (the command-line parser would otherwise print an
      // unlocated "requires a value!" and fail with an empty error).
      options.push_back(std::make_unique<Option<std::string>>(
          *this, o.name, llvm::cl::desc(o.description),
          llvm::cl::init(o.defaultValue),
          o.isFlag ? llvm::cl::ValueOptional : llvm::cl::ValueRequired));
  }
  RustPass(const RustPass &other) : RustPass(other.info) {}

  StringRef getName() const override { return info.name; }
  StringRef getArgument() const override { return info.argument; }
  StringRef getDescription() const override { return info.description; }

  void getDependentDialects(DialectRegistry &registry) const override {
    for (MlirDialectHandle handle : info.dependentDialects)
      mlirDialectHandleInsertDialect(handle, wrap(&registry));
  }

  LogicalResult initializeOptions(
      StringRef text,
      function_ref<LogicalResult(const Twine &)> errorHandler) override {
    // The command-line parser reports some failures ("requires a value!") on
    // stderr only, leaving the error it hands on empty: say what was refused.
    auto said = [&](const Twine &message) {
      std::string m = message.str();
      if (m.empty())
        m = "options '" + text.str() + "' of " + info.argument +
            ": every option but a flag takes a value (name=value)";
      return errorHandler(m);
    };
    if (failed(Pass::initializeOptions(text, said)))
      return failure();
    if (!info.validate)
      return success();
    std::vector<std::string> values = currentValues();
    std::vector<MlirStringRef> refs = toRefs(values);
    std::string message;
    if (info.validate(info.userData, refs.size(), refs.data(), reportToTwine,
                      &message) != 0)
      return errorHandler(message);
    return success();
  }

protected:
  bool canScheduleOn(RegisteredOperationName opName) const override {
    return info.anyOp || opName.getStringRef() == info.opName;
  }

  std::unique_ptr<Pass> clonePass() const override {
    return std::make_unique<RustPass>(*this);
  }

  void runOnOperation() override {
    std::vector<std::string> values = currentValues();
    std::vector<MlirStringRef> refs = toRefs(values);
    if (info.run(info.userData, wrap(getOperation()), refs.size(),
                 refs.data()) != 0)
      signalPassFailure();
  }

private:
  std::vector<std::string> currentValues() const {
    std::vector<std::string> values;
    for (const auto &o : options)
      values.push_back(o->getValue());
    return values;
  }
  static std::vector<MlirStringRef>
  toRefs(const std::vector<std::string> &values) {
    std::vector<MlirStringRef> refs;
    for (const std::string &v : values)
      refs.push_back(mlirStringRefCreate(v.data(), v.size()));
    return refs;
  }

  const RustPassInfo &info;
  std::vector<std::unique_ptr<Option<std::string>>> options;
};

std::vector<std::unique_ptr<RustPassInfo>> &registeredInfos() {
  static std::vector<std::unique_ptr<RustPassInfo>> infos;
  return infos;
}

} // namespace

bool lowpRegisterRustPass(const LowpPassSpec *spec) {
  static std::mutex mutex;
  std::lock_guard<std::mutex> lock(mutex);
  for (const auto &info : registeredInfos())
    if (info->argument == spec->argument)
      return false;
  auto info = std::make_unique<RustPassInfo>();
  info->argument = spec->argument;
  info->name = spec->name;
  info->description = spec->description;
  info->anyOp = spec->opName == nullptr;
  info->opName = spec->opName ? spec->opName : "";
  for (size_t i = 0; i < spec->numOptions; ++i)
    info->options.push_back({spec->options[i].name,
                             spec->options[i].defaultValue,
                             spec->options[i].description,
                             spec->options[i].isFlag != 0});
  info->dependentDialects.assign(spec->dependentDialects,
                                 spec->dependentDialects +
                                     spec->numDependentDialects);
  info->userData = spec->userData;
  info->run = spec->run;
  info->validate = spec->validate;
  info->typeID = allocateTypeID();
  const RustPassInfo &stable = *info;
  registeredInfos().push_back(std::move(info));
  registerPass([&stable] { return std::make_unique<RustPass>(stable); });
  return true;
}

bool lowpRegisterPassPipeline(const char *argument, const char *description,
                              const char *passes,
                              void (*report)(void *ctx, MlirStringRef message),
                              void *reportCtx) {
  static std::mutex mutex;
  static std::vector<std::unique_ptr<std::string>> strings;
  std::lock_guard<std::mutex> lock(mutex);
  auto keep = [](const char *s) -> const std::string & {
    strings.push_back(std::make_unique<std::string>(s));
    return *strings.back();
  };
  auto say = [&](const std::string &m) {
    report(reportCtx, mlirStringRefCreate(m.data(), m.size()));
    return false;
  };
  if (mlir::PassPipelineInfo::lookup(argument) || mlir::PassInfo::lookup(argument))
    return say(std::string("'") + argument + "' is already registered");
  // Check the list once now, so a broken pipeline is reported at registration.
  {
    mlir::OpPassManager probe("builtin.module");
    std::string error;
    llvm::raw_string_ostream os(error);
    if (mlir::failed(mlir::parsePassPipeline(passes, probe, os)))
      return say(std::string(argument) + ": " + error);
  }
  const std::string &text = keep(passes);
  const std::string &name = keep(argument);
  // The builder fails, with a reason, where the pipeline cannot be what was asked for:
  // options (it takes none), or a pass manager not on builtin.module (its passes are
  // written for the module; nested under func.func they would not be added, and the tool
  // would go on with the module unchanged).
  mlir::registerPassPipeline(
      name, keep(description),
      [&text, &name](mlir::OpPassManager &pm, llvm::StringRef options,
                     llvm::function_ref<mlir::LogicalResult(const llvm::Twine &)>
                         errorHandler) -> mlir::LogicalResult {
        if (!options.trim().empty())
          return errorHandler("'" + name + "' takes no options (given '" + options +
                              "')");
        if (pm.getOpAnchorName() != "builtin.module")
          return errorHandler("'" + name + "' runs on builtin.module, not nested under '" +
                              pm.getOpAnchorName() + "'");
        std::string error;
        llvm::raw_string_ostream os(error);
        if (mlir::failed(mlir::parsePassPipeline(text, pm, os)))
          return errorHandler("'" + name + "': " + error);
        return mlir::success();
      },
      [](llvm::function_ref<void(const mlir::detail::PassOptions &)>) {});
  return true;
}
