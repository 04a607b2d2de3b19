// RUN: lowp-opt %s --split-input-file --verify-diagnostics --lowp-legalize-ptx-names | FileCheck %s

// Kernel-module symbols PTX cannot spell are renamed (other characters to _, a leading
// digit behind a _, a name already taken numbered), with a remark each; calls inside the
// module and launches outside follow; the module's own name and good names stay.
// CHECK-LABEL: func.func @host
// CHECK:       gpu.launch_func @layer.0_kernel::@layer_0_kernel
// CHECK:       gpu.launch_func @layer.0_kernel::@layer_0_kernel_1
// CHECK:       gpu.launch_func @layer.0_kernel::@_0k
// CHECK:       gpu.launch_func @good::@good
// CHECK:       gpu.module @layer.0_kernel
// CHECK:       func.func @helper_x(
// CHECK:       gpu.func @layer_0_kernel(
// CHECK:         call @helper_x(
// CHECK:       gpu.func @layer_0_kernel_1(
// CHECK:       gpu.func @_0k(
// CHECK:       gpu.module @good
// CHECK:       gpu.func @good(
module attributes {gpu.container_module} {
  func.func @host() {
    %c1 = arith.constant 1 : index
    gpu.launch_func @"layer.0_kernel"::@"layer.0_kernel" blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1)
    gpu.launch_func @"layer.0_kernel"::@"layer-0_kernel" blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1)
    gpu.launch_func @"layer.0_kernel"::@"0k" blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1)
    gpu.launch_func @good::@good blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1)
    return
  }
  gpu.module @"layer.0_kernel" {
    // expected-remark @below {{to @helper_x: PTX cannot spell the old name}}
    func.func @"helper.x"(%x: index) {
      return
    }
    // expected-remark @below {{to @layer_0_kernel:}}
    gpu.func @"layer.0_kernel"() kernel {
      %c0 = arith.constant 0 : index
      func.call @"helper.x"(%c0) : (index) -> ()
      gpu.return
    }
    // expected-remark @below {{to @layer_0_kernel_1:}}
    gpu.func @"layer-0_kernel"() kernel {
      gpu.return
    }
    // expected-remark @below {{to @_0k:}}
    gpu.func @"0k"() kernel {
      gpu.return
    }
  }
  gpu.module @good {
    gpu.func @good() kernel {
      gpu.return
    }
  }
}

// -----

// LLVM's intrinsic declarations keep their names; references by path in any attribute, in
// this module or another, follow a rename; an empty name becomes __.
// CHECK-LABEL: gpu.module @m
// CHECK:       llvm.func @llvm.nvvm.read.ptx.sreg.tid.x() -> i32
// CHECK:       func.func @h_x()
// CHECK:       gpu.func @__() kernel attributes {here = @h_x, path = @m::@h_x}
// CHECK:         llvm.call @llvm.nvvm.read.ptx.sreg.tid.x()
// CHECK:       gpu.module @n
// CHECK:       func.func @h_x() attributes {other = @m::@h_x}
module attributes {gpu.container_module} {
  gpu.module @m {
    llvm.func @llvm.nvvm.read.ptx.sreg.tid.x() -> i32
    // expected-remark @below {{to @h_x: PTX cannot spell the old name}}
    func.func @"h.x"() { return }
    // expected-remark @below {{to @__: PTX cannot spell the old name}}
    gpu.func @""() kernel attributes {here = @"h.x", path = @m::@"h.x"} {
      %t = llvm.call @llvm.nvvm.read.ptx.sreg.tid.x() : () -> i32
      gpu.return
    }
  }
  gpu.module @n {
    // expected-remark @below {{to @h_x: PTX cannot spell the old name}}
    func.func @"h.x"() attributes {other = @m::@"h.x"} { return }
  }
}

// -----

// Two modules of one name in two scopes: each launch follows its own module's rename (B's
// @m already has @a_b, so its @"a.b" becomes @a_b_1); references in arrays and
// dictionaries follow too; a defined function named llvm.* is no intrinsic: renamed.
// CHECK-LABEL: module @A
// CHECK:       gpu.launch_func @m::@a_b blocks
// CHECK-LABEL: module @B
// CHECK:       func.func @hostB() attributes {arr = [@m::@a_b_1], dict = {r = @m::@a_b_1}}
// CHECK:       gpu.launch_func @m::@a_b_1 blocks
// CHECK:       gpu.launch_func @m::@a_b blocks
// CHECK:       gpu.func @llvm_k()
module attributes {gpu.container_module} {
  module @A attributes {gpu.container_module} {
    func.func @hostA() {
      %c1 = arith.constant 1 : index
      gpu.launch_func @m::@"a.b" blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1)
      return
    }
    gpu.module @m {
      // expected-remark @below {{to @a_b: PTX cannot spell the old name}}
      gpu.func @"a.b"() kernel { gpu.return }
    }
  }
  module @B attributes {gpu.container_module} {
    func.func @hostB() attributes {arr = [@m::@"a.b"], dict = {r = @m::@"a.b"}} {
      %c1 = arith.constant 1 : index
      gpu.launch_func @m::@"a.b" blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1)
      gpu.launch_func @m::@a_b blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1)
      return
    }
    gpu.module @m {
      gpu.func @a_b() kernel { gpu.return }
      // expected-remark @below {{to @a_b_1: PTX cannot spell the old name}}
      gpu.func @"a.b"() kernel { gpu.return }
      // expected-remark @below {{to @llvm_k: PTX cannot spell the old name}}
      gpu.func @"llvm.k"() kernel { gpu.return }
    }
  }
}

// -----

// Longer paths follow too: from the top, @inner::@m::@"a.b" reaches the kernel module in
// @inner (and @"x.y"::@m its twin in @"x.y", a scope PTX never prints, so named as it is);
// a path whose scopes lead elsewhere (no @m in @other, a function where a module was
// named) stays as written.
// CHECK-LABEL: func.func @top() attributes
// CHECK-SAME:  deep = @inner::@m::@a_b
// CHECK-SAME:  dotted = @x.y::@m::@c_d
// CHECK-SAME:  elsewhere = @other::@m::@a.b
// CHECK-SAME:  notmodule = @inner::@f::@a.b
// CHECK:       gpu.launch_func @m::@a_b blocks
// CHECK:       gpu.func @a_b()
// CHECK:       gpu.func @c_d()
module attributes {gpu.container_module} {
  func.func @top() attributes {deep = @inner::@m::@"a.b", dotted = @"x.y"::@m::@"c.d", elsewhere = @other::@m::@"a.b", notmodule = @inner::@f::@"a.b"} {
    return
  }
  module @other {
  }
  module @inner attributes {gpu.container_module} {
    func.func @f() {
      %c1 = arith.constant 1 : index
      gpu.launch_func @m::@"a.b" blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1)
      return
    }
    gpu.module @m {
      // expected-remark @below {{to @a_b: PTX cannot spell the old name}}
      gpu.func @"a.b"() kernel { gpu.return }
    }
  }
  module @"x.y" {
    gpu.module @m {
      // expected-remark @below {{to @c_d: PTX cannot spell the old name}}
      gpu.func @"c.d"() kernel { gpu.return }
    }
  }
}
