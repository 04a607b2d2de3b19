// RUN: not lowp-opt %s --pass-pipeline='builtin.module(func.func(lowp-to-loops{kc=0}))' 2>&1 | FileCheck %s --check-prefix=KC
// RUN: not lowp-opt %s --pass-pipeline='builtin.module(func.func(lowp-to-loops{parallel=maybe}))' 2>&1 | FileCheck %s --check-prefix=PAR
// KC: error: option 'kc' of lowp-to-loops: '0' is not accepted; expected an integer in 1..=1048576
// PAR: error: option 'parallel' of lowp-to-loops: 'maybe' is not accepted; expected true or false

func.func @f() {
  return
}
