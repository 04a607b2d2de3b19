// An NVVM intrinsic reached through llvm.call_intrinsic, in a kernel module.
module attributes {gpu.container_module} {
  gpu.module @kernels {
    llvm.func @lane() -> i32 {
      %0 = llvm.call_intrinsic "llvm.nvvm.read.ptx.sreg.laneid"() : () -> i32
      llvm.return %0 : i32
    }
  }
}
