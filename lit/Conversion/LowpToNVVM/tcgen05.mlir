// RUN: lowp-opt %s --pass-pipeline='builtin.module(func.func(lowp-to-nvvm{chip=sm_100a},cse))' | FileCheck %s
// RUN: lowp-opt %s --pass-pipeline='builtin.module(func.func(lowp-to-nvvm{chip=sm_100a emulate=true},cse))' | FileCheck %s --check-prefix=EMU

// The sm_100a kernel (here MX with 64-blocks: no block-scaled kind reads them, so the
// scales go on D's partial sums): a CTA of 128 threads per 128 x 64 tile of C. Warp 0
// allocates 64 columns of tensor memory for D (its address through a workgroup slot), thread 0 sets up
// an mbarrier; per K step the threads store their words of A (128 x 32) and B (64 x 32)
// into workgroup memory, fence.proxy.async, barrier, thread 0 issues
// tcgen05.mma kind::f8f6f4 (the instruction descriptor 0x8100410 + types: F32 D, E4M3 A,
// E5M2 B, N 64, M 128; enable_input_d off on a segment's first step) and commits it to the
// mbarrier, the next step's loads, the wait on the phase, tcgen05.fence; at a segment's end
// each warp's tcgen05.ld of its rows of D and the promotion with the segment's scales,
// which every thread staged decoded (A's row t, B's column t % 64, loaded a step ahead) in
// a fifth buffer of 128 + 64 f32 with the step's words.
// Numerics: tests/integration/to_nvvm.rs (emulate=true, against the oracle).
// CHECK-LABEL: func.func @mxfp8
// CHECK:       gpu.launch {{.*}} threads(%{{.*}}) in (%{{.*}} = %c128, %{{.*}} = %c1, %{{.*}} = %c1)
// CHECK-SAME:    workgroup(%[[SA:.*]] : memref<1024xi32, #gpu.address_space<workgroup>>, %[[SB:.*]] : memref<512xi32, #gpu.address_space<workgroup>>, %{{.*}} : memref<1xi32, #gpu.address_space<workgroup>>, %{{.*}} : memref<1xi64, #gpu.address_space<workgroup>>, %[[SS:.*]] : memref<192xf32, #gpu.address_space<workgroup>>)
// CHECK:         nvvm.tcgen05.alloc %{{.*}}, %c64_i32 : !llvm.ptr<3>, i32
// CHECK-NEXT:    nvvm.tcgen05.relinquish_alloc_permit
// CHECK:         nvvm.mbarrier.init %{{.*}}, %c1_i32 : !llvm.ptr<3>, i32
// CHECK:       gpu.barrier
// CHECK:       scf.for %{{.*}} step %c32 iter_args(
// CHECK-NEXT:    gpu.barrier
// CHECK-COUNT-8: memref.store %{{.*}}, %[[SA]][%{{.*}}] : memref<1024xi32, #gpu.address_space<workgroup>>
// CHECK-COUNT-4: memref.store %{{.*}}, %[[SB]][%{{.*}}] : memref<512xi32, #gpu.address_space<workgroup>>
// CHECK:         memref.store %{{.*}}, %[[SS]][%{{.*}}] : memref<192xf32, #gpu.address_space<workgroup>>
// CHECK:         memref.store %{{.*}}, %[[SS]][%{{.*}}] : memref<192xf32, #gpu.address_space<workgroup>>
// CHECK-NEXT:    nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}
// CHECK-NEXT:    gpu.barrier
// CHECK:         scf.if
// CHECK-NEXT:      nvvm.tcgen05.mma %{{.*}}, %{{.*}}, %{{.*}}, %c135267344_i32, %{{.*}} {ctaGroup = #nvvm.cta_group<cta_1>, kind = #nvvm.tcgen05_mma_kind<f8f6f4>} : (!llvm.ptr<6>, i64, i64, i32, i1)
// CHECK-NEXT:      nvvm.tcgen05.commit %{{[0-9a-z_]+}} : !llvm.ptr<3>
// CHECK:         nvvm.mbarrier.try_wait.parity %{{.*}}, %{{.*}}, %c1000000_i32 : !llvm.ptr<3>, i32, i32
// CHECK-NEXT:    nvvm.tcgen05.fence <after>
// CHECK:         scf.if %{{.*}} -> (f32, f32,
// CHECK-NEXT:      nvvm.tcgen05.ld %{{.*}} {shape = #nvvm.tcgen05_ldst_shape<shape_32x32b>} : vector<64xi32>
// CHECK-NEXT:      nvvm.tcgen05.wait <load>
// CHECK-NOT:       memref<128x4xi8>
// CHECK-COUNT-65:  memref.load %[[SS]][%{{.*}}] : memref<192xf32, #gpu.address_space<workgroup>>
// CHECK-NOT:       memref<64x4xi8>
// A thread's registers are its row's columns: stored 4 at a time where C is 16-byte aligned.
// CHECK:       vector.store %{{.*}}, %arg4[%{{.*}}, %{{.*}}] {alignment = 16 : i64} : memref<128x64xf32>, vector<4xf32>
// CHECK:       } else {
// CHECK:       memref.store %{{.*}}, %arg4[%{{.*}}, %{{.*}}] : memref<128x64xf32>
// CHECK:       gpu.barrier
// CHECK:         nvvm.tcgen05.dealloc %{{.*}}, %c64_i32 : !llvm.ptr<6>, i32
// CHECK:       gpu.terminator

// EMU-LABEL: func.func @mxfp8
// EMU-NOT:   nvvm.tcgen05
// EMU:       memref.alloca() {alignment = 64 : i64} : memref<192xf32>
// EMU:       memref.alloca() {alignment = 64 : i64} : memref<8192xf32>
func.func @mxfp8(%a: memref<128x256xf8E4M3FN>, %sa: memref<128x4xf8E8M0FNU>,
                 %b: memref<64x256xf8E5M2>, %sb: memref<64x4xf8E8M0FNU>, %c: memref<128x64xf32>) {
  lowp.scaled_matmul %a[%sa], %b[%sb] into %c layouts(#lowp.mx<64>, #lowp.mx<64>)
      : memref<128x256xf8E4M3FN>[memref<128x4xf8E8M0FNU>], memref<64x256xf8E5M2>[memref<64x4xf8E8M0FNU>] -> memref<128x64xf32>
  return
}

// MX with 32-blocks on both sides: tcgen05.mma.block_scale kind::mxf8f6f4, the E8M0 scales
// applied by the MMA from tensor memory. 128 columns are allocated (D at 0-63, A's scale
// factors at 64-67, B's at 68-69); every 4 K steps each warp stores the next 4 steps' scale
// words into its 32 lanes (tcgen05.st 32x32b: x4 for A's 128 rows, column c holding row
// 32c + lane, x2 for B's 64 columns; byte j the scale of K step j) and waits for the
// stores before the barrier. The instruction descriptor is 0x8900400 (E4M3 A, E5M2 B, N 64,
// UE8M0 scales in bit 23, M 128) or'ed with the step's byte id for B (bits 4-5) and A (bits
// 29-30); D's partial sums are added to the accumulators every 128 of K.
// CHECK-LABEL: func.func @mx32
// CHECK:         nvvm.tcgen05.alloc %{{.*}}, %c128_i32 : !llvm.ptr<3>, i32
// CHECK:       scf.for %{{.*}} step %c32 iter_args(
// CHECK:         nvvm.fence.proxy
// CHECK:         scf.if %{{.*}} {
// CHECK:           nvvm.tcgen05.st %{{.*}}, %{{.*}} {shape = #nvvm.tcgen05_ldst_shape<shape_32x32b>} : vector<4xi32>
// CHECK:           nvvm.tcgen05.st %{{.*}}, %{{.*}} {shape = #nvvm.tcgen05_ldst_shape<shape_32x32b>} : vector<2xi32>
// CHECK-NEXT:      nvvm.tcgen05.wait <store>
// CHECK:         nvvm.tcgen05.fence <before>
// CHECK-NEXT:    gpu.barrier
// CHECK-NEXT:    nvvm.tcgen05.fence <after>
// CHECK:         arith.ori %c143655936_i32, %{{.*}} : i32
// CHECK:           nvvm.tcgen05.mma.block_scale %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {ctaGroup = #nvvm.cta_group<cta_1>, kind = #nvvm.block_scale_kind<mxf8f6f4>} : (!llvm.ptr<6>, i64, i64, i32, i1, !llvm.ptr<6>, !llvm.ptr<6>)
// CHECK-NEXT:      nvvm.tcgen05.commit
// CHECK:         nvvm.tcgen05.dealloc %{{.*}}, %c128_i32 : !llvm.ptr<6>, i32

// EMU-LABEL: func.func @mx32
// EMU-NOT:   nvvm.tcgen05
// EMU:       memref.alloca() {alignment = 64 : i64} : memref<1024xi32>
func.func @mx32(%a: memref<128x256xf8E4M3FN>, %sa: memref<128x8xf8E8M0FNU>,
                %b: memref<64x256xf8E5M2>, %sb: memref<64x8xf8E8M0FNU>, %c: memref<128x64xf32>) {
  lowp.scaled_matmul %a[%sa], %b[%sb] into %c layouts(#lowp.mx<32>, #lowp.mx<32>)
      : memref<128x256xf8E4M3FN>[memref<128x8xf8E8M0FNU>], memref<64x256xf8E5M2>[memref<64x8xf8E8M0FNU>] -> memref<128x64xf32>
  return
}

// E2M1 x E2M1, both MX with 32-blocks: kind::mxf4, 64 codes (32 bytes of packed E2M1) per
// row and MMA, so the K loop steps by 64 and each MMA takes two scale bytes: the
// descriptor 0x8900480 (E2M1 = 1 in the A and B type fields, N 64, UE8M0, M 128) or'ed
// with halfword 0 or 2 of the scale words.
// CHECK-LABEL: func.func @mxf4
// CHECK:       scf.for %{{.*}} step %c64 iter_args(
// CHECK:         arith.ori %c143656064_i32, %{{.*}} : i32
// CHECK:           nvvm.tcgen05.mma.block_scale {{.*}} {ctaGroup = #nvvm.cta_group<cta_1>, kind = #nvvm.block_scale_kind<mxf4>}
func.func @mxf4(%a: memref<128x128x!lowp.packed<f4E2M1FN>>, %sa: memref<128x8xf8E8M0FNU>,
                %b: memref<64x256xf4E2M1FN>, %sb: memref<64x8xf8E8M0FNU>, %c: memref<128x64xf32>) {
  lowp.scaled_matmul %a[%sa], %b[%sb] into %c layouts(#lowp.mx<32>, #lowp.mx<32>)
      : memref<128x128x!lowp.packed<f4E2M1FN>>[memref<128x8xf8E8M0FNU>], memref<64x256xf4E2M1FN>[memref<64x8xf8E8M0FNU>] -> memref<128x64xf32>
  return
}

// NVFP4 E2M1 x E2M1 (UE4M3 16-blocks, globals): kind::mxf4nvf4 with 16-blocks (block16,
// scale_vec 4X): K 64 per MMA, the 4 scales of a step in one word (ids 0), 8 + 4 scale
// words per lane stored every 128 of K (tcgen05.st x8 for A, x4 for B), each MMA's scale
// addresses at its step's words; descriptor 0x8100480 (bit 23 clear: UE4M3).
// CHECK-LABEL: func.func @nvfp4
// CHECK:       scf.for %{{.*}} step %c64 iter_args(
// CHECK:           nvvm.tcgen05.st %{{.*}}, %{{.*}} {shape = #nvvm.tcgen05_ldst_shape<shape_32x32b>} : vector<8xi32>
// CHECK:           nvvm.tcgen05.st %{{.*}}, %{{.*}} {shape = #nvvm.tcgen05_ldst_shape<shape_32x32b>} : vector<4xi32>
// CHECK:         arith.ori %c135267456_i32, %{{.*}} : i32
// CHECK:           nvvm.tcgen05.mma.block_scale {{.*}} {blockScale = #nvvm.tcgen05_mma_block_scale<block16>, ctaGroup = #nvvm.cta_group<cta_1>, kind = #nvvm.block_scale_kind<mxf4nvf4>}
func.func @nvfp4(%a: memref<128x128x!lowp.packed<f4E2M1FN>>, %sa: memref<128x16xf8E4M3FN>, %ga: memref<f32>,
                 %b: memref<64x128x!lowp.packed<f4E2M1FN>>, %sb: memref<64x16xf8E4M3FN>, %gb: memref<f32>, %c: memref<128x64xf32>) {
  lowp.scaled_matmul %a[%sa, %ga], %b[%sb, %gb] into %c layouts(#lowp.nvfp4<16, global>, #lowp.nvfp4<16, global>)
      : memref<128x128x!lowp.packed<f4E2M1FN>>[memref<128x16xf8E4M3FN>, memref<f32>], memref<64x128x!lowp.packed<f4E2M1FN>>[memref<64x16xf8E4M3FN>, memref<f32>] -> memref<128x64xf32>
  return
}

// Formats no FP8 type holds: kind::f16 on the half patterns of their fields, K 16 per MMA
// (the same 32 bytes of each row, two patterns a word), a remark. E3M4 beside E4M3: f16
// (types 0, the descriptor 0x8100010: F32 D, N 64, M 128); E6M1 beside E5M2: bf16 (types
// 1: 0x8100490), E5M2's infinities set to bf16's top exponent on the way in.
// CHECK-LABEL: func.func @f16_kind
// CHECK:       scf.for %{{.*}} step %c16 iter_args(
// CHECK:           nvvm.tcgen05.mma %{{.*}}, %{{.*}}, %{{.*}}, %c135266320_i32, %{{.*}} {ctaGroup = #nvvm.cta_group<cta_1>, kind = #nvvm.tcgen05_mma_kind<f16>} : (!llvm.ptr<6>, i64, i64, i32, i1)
// EMU-LABEL: func.func @f16_kind
// EMU-NOT:   nvvm.tcgen05
// EMU:       return
func.func @f16_kind(%a: memref<128x128x!lowp.mf<e3m4>>, %sa: memref<128x1xf32>,
                    %b: memref<64x128xf8E4M3FN>, %sb: memref<64x1xf32>, %c: memref<128x64xf32>) {
  lowp.scaled_matmul %a[%sa], %b[%sb] into %c layouts(#lowp.per_channel, #lowp.per_channel)
      : memref<128x128x!lowp.mf<e3m4>>[memref<128x1xf32>], memref<64x128xf8E4M3FN>[memref<64x1xf32>] -> memref<128x64xf32>
  return
}

// CHECK-LABEL: func.func @bf16_kind
// CHECK:       arith.addi %{{.*}}, %c262148_i32 : i32
// CHECK:       scf.for %{{.*}} step %c16 iter_args(
// CHECK:           nvvm.tcgen05.mma %{{.*}}, %{{.*}}, %{{.*}}, %c135267472_i32, %{{.*}} {ctaGroup = #nvvm.cta_group<cta_1>, kind = #nvvm.tcgen05_mma_kind<f16>} : (!llvm.ptr<6>, i64, i64, i32, i1)
func.func @bf16_kind(%a: memref<128x128x!lowp.mf<e6m1>>, %sa: memref<1x1xf32>,
                     %b: memref<64x128xf8E5M2>, %sb: memref<1x1xf32>, %c: memref<128x64xf32>) {
  lowp.scaled_matmul %a[%sa], %b[%sb] into %c layouts(#lowp.per_tensor, #lowp.per_tensor)
      : memref<128x128x!lowp.mf<e6m1>>[memref<1x1xf32>], memref<64x128xf8E5M2>[memref<1x1xf32>] -> memref<128x64xf32>
  return
}
