// RUN: lowp-opt %s --verify-diagnostics --lowp-legalize-ptx-names | FileCheck %s

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
