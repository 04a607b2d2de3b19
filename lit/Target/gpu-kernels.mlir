// lowp-translate on a module with GPU kernels: after lowp-gpu-generic-pipeline it runs the
// chip's kernel passes (NVVM + PTX ISA of the chip, or ROCDL) and prints every kernel,
// each after a comment naming its gpu.binary. Other emits and the host chip are refused.

// RUN: lowp-translate %s --pipeline='builtin.module(lowp-gpu-generic-pipeline)' --emit=ptx --chip=sm_90a | FileCheck %s --check-prefix=PTX
// RUN: lowp-translate %s --pipeline='builtin.module(lowp-gpu-generic-pipeline)' --emit=ptx --chip=sm_100a | FileCheck %s --check-prefix=BW
// RUN: lowp-translate %s --pipeline='builtin.module(lowp-gpu-generic-pipeline)' --emit=asm --chip=gfx942 | FileCheck %s --check-prefix=GCN
// RUN: not lowp-translate %s --pipeline='builtin.module(lowp-gpu-generic-pipeline)' --emit=llvm --chip=sm_90a 2>&1 | FileCheck %s --check-prefix=EMIT
// RUN: not lowp-translate %s --pipeline='builtin.module(lowp-gpu-generic-pipeline)' --emit=asm 2>&1 | FileCheck %s --check-prefix=HOST

// PTX:      // gpu.binary @e4m3_kernel
// PTX-NEXT: //
// PTX:      .version 8.4
// PTX:      .target sm_90a
// PTX:      .visible .entry e4m3_kernel(
// PTX:      mul.rn.f32
// PTX:      // gpu.binary @f6_kernel
// PTX:      .visible .entry f6_kernel(
// BW:       .version 8.8
// BW:       .target sm_100a
// GCN:      ; gpu.binary @e4m3_kernel
// GCN:      .amdgcn_target "amdgcn-amd-amdhsa--gfx942"
// GCN:      global_load_{{u?s?(byte|short|dword)}}
// GCN:      ; gpu.binary @f6_kernel
// EMIT: lowp-translate: the module holds GPU kernels (gpu.module): they are emitted as text, --emit=ptx (NVIDIA) or --emit=asm
// HOST: lowp-translate: the module holds GPU kernels (gpu.module): give a GPU --chip, not host

func.func @e4m3(%a: memref<32x64xf8E4M3FN>, %sa: memref<1x1xf32>,
                %b: memref<16x64xf8E4M3FN>, %sb: memref<16x1xf32>, %c: memref<32x16xf32>) {
  lowp.scaled_matmul %a[%sa], %b[%sb] into %c layouts(#lowp.per_tensor, #lowp.per_channel)
      : memref<32x64xf8E4M3FN>[memref<1x1xf32>], memref<16x64xf8E4M3FN>[memref<16x1xf32>]
        -> memref<32x16xf32>
  return
}

func.func @f6(%a: memref<8x64xf6E2M3FN>, %sa: memref<8x2xf8E8M0FNU>,
              %b: memref<8x64xf6E3M2FN>, %sb: memref<8x2xf8E8M0FNU>, %c: memref<8x8xbf16>) {
  lowp.scaled_matmul %a[%sa], %b[%sb] into %c layouts(#lowp.mx<32>, #lowp.mx<32>)
      : memref<8x64xf6E2M3FN>[memref<8x2xf8E8M0FNU>], memref<8x64xf6E3M2FN>[memref<8x2xf8E8M0FNU>]
        -> memref<8x8xbf16>
  return
}
