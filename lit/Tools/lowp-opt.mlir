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

// lowp's pipelines run on the module and take no options; asked otherwise they fail with
// the reason (they used to print MLIR's "did you intend to nest?" and exit 0).
// RUN: not lowp-opt %s --pass-pipeline='builtin.module(func.func(lowp-cpu-pipeline))' 2>&1 | FileCheck %s --check-prefix=NESTED
// NESTED: 'lowp-cpu-pipeline' runs on builtin.module, not nested under 'func.func'
// RUN: not lowp-opt %s --lowp-gpu-generic-pipeline=tile=8 2>&1 | FileCheck %s --check-prefix=OPTIONS
// OPTIONS: 'lowp-gpu-generic-pipeline' takes no options (given 'tile=8')

// A flag named alone is set (as upstream's bool options); another option named alone is
// refused, saying it takes a value.
// RUN: lowp-opt %s --pass-pipeline='builtin.module(func.func(lowp-to-nvvm{emulate}))' | FileCheck %s --check-prefix=FLAG
// FLAG: func.func @empty
// RUN: not lowp-opt %s --pass-pipeline='builtin.module(func.func(lowp-to-nvvm{chip}))' 2>&1 | FileCheck %s --check-prefix=BARE
// BARE: options 'chip' of lowp-to-nvvm: every option but a flag takes a value (name=value)

// An upstream pipeline nested under the wrong op hits LLVM's fatal-error path: one line
// and status 1, not "LLVM ERROR" and an abort.
// RUN: not lowp-opt %s --pass-pipeline='builtin.module(func.func(gpu-lower-to-nvvm-pipeline))' 2>&1 | FileCheck %s --check-prefix=FATAL
// FATAL: lowp-opt: error: LLVM stopped: Can't add pass 'GpuKernelOutliningPass'

func.func @empty() {
  return
}
