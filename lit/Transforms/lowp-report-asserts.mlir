// RUN: lowp-opt %s --split-input-file --verify-diagnostics --pass-pipeline='builtin.module(lowp-report-asserts)' | FileCheck %s

// Each cf.assert of host code becomes an scf.if on its negation that prints the located
// line to stderr (fd 2, through "%s") and calls _exit(1); in any region (here an scf.for
// body). A message that names the place (lowp-assert-shapes': "OP at LOC: what") reads
// "LOC: error: OP: what"; another "LOC: error: MESSAGE", a % in it printed as it is. An
// assert in a kernel module stays.
// CHECK-LABEL: func.func @host(
// CHECK-SAME:    %[[OK:[a-z0-9]*]]: i1
// CHECK:         %[[TRUE:.*]] = arith.constant true
// CHECK-NEXT:    %[[FAILED:.*]] = arith.xori %[[OK]], %[[TRUE]] : i1
// CHECK-NEXT:    scf.if %[[FAILED]] {
// CHECK-NEXT:      %[[LINE:.*]] = llvm.mlir.addressof @lowp_assert_message : !llvm.ptr
// CHECK-NEXT:      %[[FD:.*]] = llvm.mlir.constant(2 : i32) : i32
// CHECK-NEXT:      %[[FORMAT:.*]] = llvm.mlir.addressof @lowp_assert_format : !llvm.ptr
// CHECK-NEXT:      llvm.call @dprintf(%[[FD]], %[[FORMAT]], %[[LINE]]) vararg(!llvm.func<i32 (i32, ptr, ...)>) : (i32, !llvm.ptr, !llvm.ptr) -> i32
// CHECK-NEXT:      %[[ONE:.*]] = llvm.mlir.constant(1 : i32) : i32
// CHECK-NEXT:      llvm.call @_exit(%[[ONE]]) : (i32) -> ()
// CHECK-NEXT:    }
// CHECK:         scf.for
// CHECK:           arith.xori
// CHECK:           scf.if
// CHECK:             llvm.mlir.addressof @lowp_assert_message_1
// CHECK-NOT:     cf.assert
// CHECK:       gpu.module @kernels
// CHECK:         cf.assert %{{.*}}, "device"
// CHECK:       llvm.func @dprintf(i32, !llvm.ptr, ...) -> i32
// CHECK-NEXT:  llvm.func @_exit(i32)
// CHECK-NEXT:  llvm.mlir.global internal constant @lowp_assert_format("%s\00")
// CHECK-NEXT:  llvm.mlir.global internal constant @lowp_assert_message("here.mlir:7:5: error: lowp.scaled_matmul: rhs has another K than lhs\0A\00")
// CHECK-NEXT:  llvm.mlir.global internal constant @lowp_assert_message_1("{{.*}}lowp-report-asserts.mlir:[[# @LINE + 8]]:7: error: 100% sure\0A\00")
module attributes {gpu.container_module} {
  func.func @host(%ok: i1, %n: index) {
    cf.assert %ok, "lowp.scaled_matmul at here.mlir:7:5: rhs has another K than lhs" loc(#here)
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    scf.for %i = %c0 to %n step %c1 {
      %small = arith.cmpi ult, %i, %c1 : index
      cf.assert %small, "100% sure"
    }
    return
  }
  gpu.module @kernels {
    func.func @device(%ok: i1) {
      cf.assert %ok, "device"
      return
    }
  }
}
#here = loc("here.mlir":7:5)

// -----

// A module of no assert is left as it is.
// CHECK-LABEL: func.func @none()
// CHECK-NOT:   dprintf
module {
  func.func @none() {
    return
  }
}

// -----

// A function of the module named dprintf would be called for C's: refused.
module {
  // expected-error @+1 {{@dprintf takes the name of C's dprintf, which lowp-report-asserts calls as `!llvm.func<i32 (i32, ptr, ...)>` to stop the program with a message: rename it}}
  func.func @dprintf() {
    return
  }
  func.func @k(%ok: i1) {
    cf.assert %ok, "k"
    return
  }
}
