// RUN: lowp-opt %s --split-input-file --verify-diagnostics --pass-pipeline='builtin.module(lowp-kernel-cluster-size)' | FileCheck %s

// A kernel launched in clusters of a constant size gets that size (convert-gpu-to-nvvm
// makes it nvvm.cluster_dim, PTX .reqnctapercluster); a kernel launched without clusters,
// and one whose cluster size is computed at run time, stay as they are.
// CHECK-LABEL: gpu.module @split
// CHECK:       gpu.func @split() kernel attributes {known_block_size = array<i32: 128, 1, 1>, known_cluster_size = array<i32: 4, 1, 1>}
// CHECK-LABEL: gpu.module @plain
// CHECK:       gpu.func @plain() kernel attributes {known_block_size = array<i32: 128, 1, 1>} {
// CHECK-LABEL: gpu.module @dynamic
// CHECK:       gpu.func @dynamic() kernel {
module attributes {gpu.container_module} {
  func.func @host(%n: index) {
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %c8 = arith.constant 8 : index
    %c128 = arith.constant 128 : index
    gpu.launch_func @split::@split clusters in (%c4, %c1, %c1) blocks in (%c8, %c1, %c1) threads in (%c128, %c1, %c1)
    gpu.launch_func @plain::@plain blocks in (%c8, %c1, %c1) threads in (%c128, %c1, %c1)
    gpu.launch_func @dynamic::@dynamic clusters in (%n, %c1, %c1) blocks in (%c8, %c1, %c1) threads in (%c128, %c1, %c1)
    return
  }
  gpu.module @split {
    gpu.func @split() kernel attributes {known_block_size = array<i32: 128, 1, 1>} {
      gpu.return
    }
  }
  gpu.module @plain {
    gpu.func @plain() kernel attributes {known_block_size = array<i32: 128, 1, 1>} {
      gpu.return
    }
  }
  gpu.module @dynamic {
    gpu.func @dynamic() kernel {
      gpu.return
    }
  }
}

// -----

// One kernel launched in clusters of two sizes: an error at the second launch.
module attributes {gpu.container_module} {
  func.func @host() {
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c4 = arith.constant 4 : index
    gpu.launch_func @k::@k clusters in (%c2, %c1, %c1) blocks in (%c4, %c1, %c1) threads in (%c1, %c1, %c1)
    // expected-error @+1 {{kernel @k::@k is launched in clusters of [2, 1, 1] and of [4, 1, 1]}}
    gpu.launch_func @k::@k clusters in (%c4, %c1, %c1) blocks in (%c4, %c1, %c1) threads in (%c1, %c1, %c1)
    return
  }
  gpu.module @k {
    gpu.func @k() kernel {
      gpu.return
    }
  }
}

// -----

// A constant cluster size of 0: refused (it would become a bare .explicitcluster in PTX).
module attributes {gpu.container_module} {
  func.func @host() {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    // expected-error @+1 {{kernel @k::@k is launched in clusters of [0, 1, 1]; each cluster dimension is at least 1}}
    gpu.launch_func @k::@k clusters in (%c0, %c1, %c1) blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1)
    return
  }
  gpu.module @k {
    gpu.func @k() kernel {
      gpu.return
    }
  }
}

// In PTX: lit/Target/ptx-wgmma-split-k.mlir (the pass runs first in
// lowp_passes::pipelines::nvvm_kernel_passes).
