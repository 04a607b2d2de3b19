// RUN: lowp-opt %s --split-input-file --verify-diagnostics --pass-pipeline='builtin.module(lowp-check-allocations)' | FileCheck %s

// Host calls of malloc and aligned_alloc go through checking functions that stop the
// program with the call's location and the size where they get null for a size above
// zero. Two calls at one location share a site string; a call in a kernel module (device
// code) and a call of a malloc declared with another type stay as they are; the module's
// own @lowp_alloc_site takes the name, so the new one is @lowp_alloc_site_1.
// CHECK-LABEL: llvm.func @f(
// CHECK-SAME:    %[[N:[a-z0-9]*]]: i64)
// CHECK:         %[[SITE:.*]] = llvm.mlir.addressof @lowp_alloc_site_1 : !llvm.ptr
// CHECK-NEXT:    %[[P:.*]] = llvm.call @lowp_checked_malloc(%[[N]], %[[SITE]]) : (i64, !llvm.ptr) -> !llvm.ptr
// CHECK-NEXT:    llvm.store %{{.*}}, %[[P]]
// CHECK:         %[[SITE2:.*]] = llvm.mlir.addressof @lowp_alloc_site_1 : !llvm.ptr
// CHECK-NEXT:    llvm.call @lowp_checked_malloc(%[[N]], %[[SITE2]])
// CHECK:         %[[SITE3:.*]] = llvm.mlir.addressof @lowp_alloc_site_2 : !llvm.ptr
// CHECK-NEXT:    %[[Q:.*]] = llvm.call @lowp_checked_aligned_alloc(%{{.*}}, %[[N]], %[[SITE3]]) : (i64, i64, !llvm.ptr) -> !llvm.ptr
// CHECK-NEXT:    llvm.call @free(%[[Q]])
// CHECK:       gpu.module @kernels
// CHECK:         llvm.call @malloc(
// CHECK:       llvm.func @dprintf(i32, !llvm.ptr, ...) -> i32
// CHECK-NEXT:  llvm.func @_exit(i32)
// CHECK-NEXT:  llvm.mlir.global internal constant @lowp_alloc_failed("%s: error: out of memory: allocating %llu bytes failed\0A\00")
// CHECK-NEXT:  llvm.mlir.global internal constant @lowp_alloc_site_1("lowp-check-allocations.mlir:39:10\00")
// CHECK-NEXT:  llvm.mlir.global internal constant @lowp_alloc_site_2("{{.*}}lowp-check-allocations.mlir:55:10\00")
// CHECK:       llvm.func internal @lowp_checked_malloc(%[[SIZE:.*]]: i64, %[[AT:.*]]: !llvm.ptr) -> !llvm.ptr {
// CHECK-NEXT:    %[[GOT:.*]] = llvm.call @malloc(%[[SIZE]]) : (i64) -> !llvm.ptr
// CHECK-NEXT:    %[[NULL:.*]] = llvm.mlir.zero : !llvm.ptr
// CHECK-NEXT:    %[[ZERO:.*]] = llvm.mlir.constant(0 : i64) : i64
// CHECK-NEXT:    %[[IS_NULL:.*]] = llvm.icmp "eq" %[[GOT]], %[[NULL]] : !llvm.ptr
// CHECK-NEXT:    %[[SOME:.*]] = llvm.icmp "ne" %[[SIZE]], %[[ZERO]] : i64
// CHECK-NEXT:    %[[FAILED:.*]] = llvm.and %[[IS_NULL]], %[[SOME]] : i1
// CHECK-NEXT:    llvm.cond_br %[[FAILED]], ^[[FAIL:.*]], ^[[OK:.*]]
// CHECK-NEXT:  ^[[OK]]:
// CHECK-NEXT:    llvm.return %[[GOT]] : !llvm.ptr
// CHECK-NEXT:  ^[[FAIL]]:
// CHECK-NEXT:    %[[STDERR:.*]] = llvm.mlir.constant(2 : i32) : i32
// CHECK-NEXT:    %[[FORMAT:.*]] = llvm.mlir.addressof @lowp_alloc_failed : !llvm.ptr
// CHECK-NEXT:    llvm.call @dprintf(%[[STDERR]], %[[FORMAT]], %[[AT]], %[[SIZE]]) vararg(!llvm.func<i32 (i32, ptr, ...)>) : (i32, !llvm.ptr, !llvm.ptr, i64) -> i32
// CHECK-NEXT:    %[[STATUS:.*]] = llvm.mlir.constant(1 : i32) : i32
// CHECK-NEXT:    llvm.call @_exit(%[[STATUS]]) : (i32) -> ()
// CHECK-NEXT:    llvm.unreachable
// CHECK:       llvm.func internal @lowp_checked_aligned_alloc(%{{.*}}: i64, %{{.*}}: i64, %{{.*}}: !llvm.ptr) -> !llvm.ptr {
// CHECK-NEXT:    llvm.call @aligned_alloc(
module attributes {gpu.container_module} {
  llvm.mlir.global internal constant @lowp_alloc_site("taken\00") {addr_space = 0 : i32}
  llvm.func @malloc(i64) -> !llvm.ptr
  llvm.func @aligned_alloc(i64, i64) -> !llvm.ptr
  llvm.func @free(!llvm.ptr)
  llvm.func @f(%n: i64) {
    %v = llvm.mlir.constant(1.0 : f32) : f32
    %0 = llvm.call @malloc(%n) : (i64) -> !llvm.ptr loc(#at)
    llvm.store %v, %0 : f32, !llvm.ptr
    %1 = llvm.call @malloc(%n) : (i64) -> !llvm.ptr loc(#at)
    %a = llvm.mlir.constant(64 : i64) : i64
    %2 = llvm.call @aligned_alloc(%a, %n) : (i64, i64) -> !llvm.ptr
    llvm.call @free(%2) : (!llvm.ptr) -> ()
    llvm.return
  }
  gpu.module @kernels {
    llvm.func @malloc(i64) -> !llvm.ptr
    llvm.func @g(%n: i64) {
      %0 = llvm.call @malloc(%n) : (i64) -> !llvm.ptr
      llvm.return
    }
  }
}
#at = loc("lowp-check-allocations.mlir":39:10)

// -----

// A module with no allocation is left as it is: nothing declared.
// CHECK-LABEL: llvm.func @none()
// CHECK-NOT:   dprintf
module {
  llvm.func @none() {
    llvm.return
  }
}

// -----

// A malloc of another type (the module's own declaration) is not C's: left unchecked, and
// nothing is added.
// CHECK-LABEL: llvm.func @h(
// CHECK:       llvm.call @malloc(%{{.*}}) : (i32) -> !llvm.ptr
// CHECK-NOT:   lowp_checked
module {
  llvm.func @malloc(i32) -> !llvm.ptr
  llvm.func @h(%n: i32) {
    %0 = llvm.call @malloc(%n) : (i32) -> !llvm.ptr
    llvm.return
  }
}

// -----

// A function of the module named _exit (or dprintf) would be called for C's: refused.
module {
  llvm.func @malloc(i64) -> !llvm.ptr
  // expected-error @+1 {{@_exit takes the name of C's _exit, which lowp-check-allocations calls as `!llvm.func<void (i32)>` to stop the program with a message: rename it}}
  llvm.func @_exit(%code: i32) {
    llvm.return
  }
  llvm.func @k(%n: i64) {
    %0 = llvm.call @malloc(%n) : (i64) -> !llvm.ptr
    llvm.return
  }
}
