/*===- lowp-c/Lowp.h - C API of the lowp dialect ------------------*- C -*-===*\
|*                                                                            *|
|* The C ABI between the C++ dialect and Rust: dialect registration, type and *|
|* attribute constructors and accessors, the bridge that registers Rust       *|
|* passes by name, and the MlirOptMain entry point.                           *|
|*                                                                            *|
\*===----------------------------------------------------------------------===*/

#ifndef LOWP_C_LOWP_H
#define LOWP_C_LOWP_H

#include "mlir-c/IR.h"
#include "mlir-c/Support.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

MLIR_DECLARE_CAPI_DIALECT_REGISTRATION(Lowp, lowp);

/* Types. */
MLIR_CAPI_EXPORTED MlirType lowpMinifloatTypeGet(MlirContext ctx, unsigned expBits,
                                                 unsigned mantBits, int bias);
MLIR_CAPI_EXPORTED bool lowpTypeIsAMinifloat(MlirType type);
MLIR_CAPI_EXPORTED unsigned lowpMinifloatTypeGetExpBits(MlirType type);
MLIR_CAPI_EXPORTED unsigned lowpMinifloatTypeGetMantBits(MlirType type);
MLIR_CAPI_EXPORTED int lowpMinifloatTypeGetBias(MlirType type);
MLIR_CAPI_EXPORTED MlirType lowpPackedTypeGet(MlirType element);
MLIR_CAPI_EXPORTED bool lowpTypeIsAPacked(MlirType type);
MLIR_CAPI_EXPORTED MlirType lowpPackedTypeGetElement(MlirType type);
/* Bits of one code (0: not a code type); the integer type storing it. */
MLIR_CAPI_EXPORTED unsigned lowpCodeTypeGetWidth(MlirType type);
MLIR_CAPI_EXPORTED MlirType lowpCodeTypeGetStorageType(MlirType type);

/* Scale layouts. Kind: 0 per_tensor, 1 mx, 2 nvfp4, 3 per_channel, 4 blockwise,
 * -1 not a layout. */
MLIR_CAPI_EXPORTED MlirAttribute lowpPerTensorAttrGet(MlirContext ctx);
MLIR_CAPI_EXPORTED MlirAttribute lowpPerChannelAttrGet(MlirContext ctx);
MLIR_CAPI_EXPORTED MlirAttribute lowpMxAttrGet(MlirContext ctx, unsigned block);
MLIR_CAPI_EXPORTED MlirAttribute lowpNvfp4AttrGet(MlirContext ctx, unsigned block,
                                                  bool global);
MLIR_CAPI_EXPORTED MlirAttribute lowpBlockwiseAttrGet(MlirContext ctx,
                                                      unsigned tileRows,
                                                      unsigned tileCols);
MLIR_CAPI_EXPORTED int lowpScaleLayoutGetKind(MlirAttribute attr);
/* Parameters of a layout: block (mx, nvfp4), tile rows / cols (blockwise),
 * global (nvfp4). Zero / false where the kind has none. */
MLIR_CAPI_EXPORTED unsigned lowpScaleLayoutGetBlock(MlirAttribute attr);
MLIR_CAPI_EXPORTED unsigned lowpScaleLayoutGetTileRows(MlirAttribute attr);
MLIR_CAPI_EXPORTED unsigned lowpScaleLayoutGetTileCols(MlirAttribute attr);
MLIR_CAPI_EXPORTED bool lowpScaleLayoutHasGlobal(MlirAttribute attr);
/* Rounding: 0 round_up, 1 ocp_mx; -1 not a rounding attribute. */
MLIR_CAPI_EXPORTED MlirAttribute lowpRoundingAttrGet(MlirContext ctx, int rounding);
MLIR_CAPI_EXPORTED int lowpRoundingAttrGetValue(MlirAttribute attr);

/* Diagnostics the C API lacks: a remark at a location (a lowering choice the
 * user should know of, e.g. a format converted for a chip). */
MLIR_CAPI_EXPORTED void lowpEmitRemark(MlirLocation loc, MlirStringRef message);

/* True for a dense_resource elements attribute whose blob is missing (a file without
 * its dialect_resources section, or one printed with elided attributes): translating it
 * to LLVM IR would read through a null blob. */
MLIR_CAPI_EXPORTED bool lowpAttributeIsMissingResource(MlirAttribute attr);

/* True for a dense_resource elements attribute of integers, floats or indices whose blob
 * holds another number of bytes than its static type takes (both returned): MLIR's
 * translation reads past the blob, or misreads it. */
MLIR_CAPI_EXPORTED bool lowpResourceSizeMismatch(MlirAttribute attr, int64_t *blobBytes,
                                                 int64_t *typeBytes);

/* Rust passes. A pass is described once, registered by name before MlirOptMain
 * parses its command line, and reachable from --pass-pipeline with options:
 * `builtin.module(func.func(lowp-expand-quantize{vectorize=false}))`. */
typedef struct {
  const char *name;
  const char *defaultValue;
  const char *description;
  /* Non-zero for a flag: named alone (`{emulate}`) it is set. */
  int isFlag;
} LowpPassOption;

/* Called once per operation the pass runs on, with the option values in the
 * order of the spec. Returns 0 on success; non-zero fails the pass (the callee
 * has emitted a diagnostic). May run on several threads at once. */
typedef int (*LowpPassRunFn)(void *userData, MlirOperation op, size_t numOptions,
                             const MlirStringRef *values);
/* Checks option values when a pipeline is parsed. Returns 0 when valid;
 * otherwise writes a message through `report` and returns non-zero. */
typedef int (*LowpPassValidateFn)(void *userData, size_t numOptions,
                                  const MlirStringRef *values,
                                  void (*report)(void *ctx, MlirStringRef message),
                                  void *reportCtx);

typedef struct {
  const char *argument;    /* e.g. "lowp-expand-quantize" */
  const char *name;        /* e.g. "LowpExpandQuantize" */
  const char *description;
  const char *opName;      /* operation it anchors on, NULL for any */
  size_t numOptions;
  const LowpPassOption *options;
  size_t numDependentDialects;
  const MlirDialectHandle *dependentDialects;
  void *userData;
  LowpPassRunFn run;
  LowpPassValidateFn validate;
} LowpPassSpec;

/* Registers a pass in MLIR's global registry (copies every string). Returns
 * false if the argument is already registered. */
MLIR_CAPI_EXPORTED bool lowpRegisterRustPass(const LowpPassSpec *spec);

/* Registers a named pass pipeline (`--lowp-cpu-pipeline`, or `lowp-cpu-pipeline` inside a
 * textual pipeline) that expands to `passes`, a textual pass list such as
 * "func.func(lowp-to-loops),lowp-lower-storage,...". Returns false, with a message through
 * `report`, if the list does not parse or the argument is taken. */
MLIR_CAPI_EXPORTED bool lowpRegisterPassPipeline(
    const char *argument, const char *description, const char *passes,
    void (*report)(void *ctx, MlirStringRef message), void *reportCtx);

/* Installs `handler` as LLVM's handler of failed allocations (`report_bad_alloc_error`:
 * LLVM's own buffers, such as an input read whole, past what memory holds), which by
 * default prints "LLVM ERROR: out of memory" and aborts. `handler` gets LLVM's reason and
 * must not return. */
MLIR_CAPI_EXPORTED void lowpInstallBadAllocHandler(void (*handler)(const char *reason));

/* MlirOptMain with every upstream dialect, extension and pass plus lowp. LLVM's crash
 * report is installed first, then `armSignals` (if not null) is called: handlers it
 * installs on top of LLVM's stay in front of them. */
MLIR_CAPI_EXPORTED int lowpOptMain(int argc, char **argv, void (*armSignals)(void));

/* Registers every upstream dialect and extension plus lowp into a registry, and
 * every upstream pass (idempotent). */
MLIR_CAPI_EXPORTED void lowpRegisterAllDialects(MlirDialectRegistry registry);
MLIR_CAPI_EXPORTED void lowpRegisterAllUpstreamPasses(void);

#ifdef __cplusplus
}
#endif

#endif /* LOWP_C_LOWP_H */
