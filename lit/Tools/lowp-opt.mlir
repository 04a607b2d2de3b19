// lowp-opt is mlir-opt with lowp: its --help lists lowp's passes next to upstream ones,
// and bad input is a located error with a non-zero exit.

// RUN: lowp-opt --help | FileCheck %s --check-prefix=HELP
// HELP-DAG: --lowp-expand-quantize
// HELP-DAG: --decode=<string>
// HELP-DAG: --lowp-lower-storage
// HELP-DAG: --convert-scf-to-cf
// HELP-DAG: --split-input-file

// RUN: not lowp-opt %S/Inputs/syntax-error.mlir 2>&1 | FileCheck %s --check-prefix=SYNTAX
// SYNTAX: syntax-error.mlir:3:{{[0-9]+}}: error:

// RUN: not lowp-opt %S/Inputs/unknown-op.mlir 2>&1 | FileCheck %s --check-prefix=UNKNOWN
// UNKNOWN: unknown-op.mlir:2:3: error: custom op 'lowp.frobnicate' is unknown

// RUN: not lowp-opt %s --pass-pipeline='builtin.module(lowp-no-such-pass)' 2>&1 | FileCheck %s --check-prefix=NOPASS
// NOPASS: 'lowp-no-such-pass' does not refer to a registered pass or pass pipeline

func.func @empty() {
  return
}
