// RUN: lowp-opt %s --pass-pipeline='builtin.module(func.func(lowp-to-nvvm{chip=sm_90a kernel=wgmma-tma store-c=tma},cse))' | FileCheck %s
// RUN: lowp-opt %s --pass-pipeline='builtin.module(func.func(lowp-to-nvvm{chip=sm_90a kernel=wgmma-tma},cse))' | FileCheck %s --check-prefix=DIRECT
// RUN: lowp-opt %s --pass-pipeline='builtin.module(func.func(lowp-to-nvvm{chip=sm_90a kernel=wgmma-tma store-c=tma emulate=true},cse))' | FileCheck %s --check-prefix=EMU

// store-c=tma: the TMA block's C goes through shared memory. The host makes a third tensor
// map, of C (f32: boxes of 64 rows x 32 columns, 128 bytes, in the 128-byte swizzle); the
// block asks for 64 KiB more (198656 bytes: the ring's 132160 rounded to 1024, then two
// warpgroups' 32 KiB). Each consumer thread writes its runs of two results (scales
// applied) as 8-byte stores into its warpgroup's area at the swizzled place of (row,
// column) within the warpgroup's 64 x 128 (box column / 32, 8192 bytes a box), fences them
// for the async proxy, meets its warpgroup at named barrier 2 + warpgroup (128 threads);
// the warpgroup's first thread acquires C's map and stores the 4 boxes, origin (column,
// row) = (the block's first column + 32 b, the warpgroup's first row), as one bulk group,
// and waits for their read before the block ends. No st.global of C.
// CHECK-LABEL: func.func @tiles
// CHECK:         %[[CAST:.*]] = memref.cast %arg4 : memref<300x200xf32> to memref<*xf32>
// CHECK:         %[[MAP:.*]] = nvgpu.tma.create.descriptor %[[CAST]] box[%c64, %c32] : memref<*xf32> -> <tensor = memref<64x32xf32, 3>, swizzle = swizzle_128b
// CHECK:         %[[CMAP:.*]] = builtin.unrealized_conversion_cast %[[MAP]] : {{.*}} to !llvm.ptr
// CHECK:         gpu.launch {{.*}} threads({{.*}}) in (%{{.*}} = %c384, {{.*}} dynamic_shared_memory_size %c198656_i32
// CHECK:         nvvm.setmaxregister  increase 232
// CHECK:         %[[WG:.*]] = arith.divui %{{.*}}, %c128 : index
// CHECK:         %[[LANE:.*]] = arith.remui %{{.*}}, %c128 : index
// CHECK:         %[[ISSUER:.*]] = arith.cmpi eq, %[[LANE]], %c0 : index
// CHECK:         %[[ID:.*]] = arith.addi %c2_i32, %{{.*}} : i32
// CHECK:         %[[PART:.*]] = arith.addi %{{.*}}, %{{.*}} : index
// CHECK:         scf.if
// CHECK:           arith.divui %{{.*}}, %c32 : index
// CHECK:           arith.muli %{{.*}}, %c8192{{.*}} : index
// CHECK:           arith.shrui %{{.*}}, %c7 : index
// CHECK:           arith.xori
// CHECK:           llvm.store %{{.*}}, %{{.*}} {alignment = 8 : i64} : vector<2xi32>, !llvm.ptr<3>
// CHECK-COUNT-31:  llvm.store %{{.*}}, %{{.*}} {alignment = 8 : i64} : vector<2xi32>, !llvm.ptr<3>
// CHECK-NOT:       {{memref|vector}}.store
// CHECK:         nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}
// CHECK-NEXT:    %c128_i32 = arith.constant 128 : i32
// CHECK-NEXT:    nvvm.barrier id = %[[ID]] number_of_threads = %c128_i32
// CHECK:         scf.if %[[ISSUER]] {
// CHECK-NEXT:      nvvm.fence.proxy.acquire <gpu> %[[CMAP]], %c128_i32
// CHECK-COUNT-4:   nvvm.cp.async.bulk.tensor.global.shared.cta %[[CMAP]], %{{.*}}, box[%{{.*}}, %{{.*}}] : !llvm.ptr, <3>
// CHECK-NEXT:      nvvm.cp.async.bulk.commit.group
// CHECK-NEXT:    }
// CHECK-NEXT:    scf.if %[[ISSUER]] {
// CHECK-NEXT:      nvvm.cp.async.bulk.wait_group 0 {read}
// CHECK-NEXT:    }
// DIRECT-LABEL: func.func @tiles
// DIRECT-NOT:    xf32> to memref<*xf32>
// DIRECT:        dynamic_shared_memory_size %c132160_i32
// DIRECT-NOT:    nvvm.cp.async.bulk.tensor.global.shared.cta
// DIRECT:        vector.store %{{.*}}, %arg4[%{{.*}}, %{{.*}}] {alignment = 8 : i64} : memref<300x200xf32>, vector<2xf32>
// The emulation: the same staging into the buffer standing for shared memory (the block's
// 197632 bytes as 49408 words and a guard of 1024 past them, poisoned), then per warpgroup
// and box the 64 x 32 elements inside C read back from their swizzled places.
// EMU-LABEL: func.func @tiles
// EMU:         memref.alloca() {alignment = 64 : i64} : memref<50432xi32>
// EMU:         scf.for %{{.*}} = %c0 to %c64 step %c1 {
// EMU-NEXT:      scf.for %{{.*}} = %c0 to %c32 step %c1 {
func.func @tiles(%a: memref<300x416xf8E4M3FN>, %sa: memref<1x1xf32>, %b: memref<200x416xf8E5M2>,
                 %sb: memref<1x1xf32>, %c: memref<300x200xf32>) {
  lowp.scaled_matmul %a[%sa], %b[%sb] into %c layouts(#lowp.per_tensor, #lowp.per_tensor)
      : memref<300x416xf8E4M3FN>[memref<1x1xf32>], memref<200x416xf8E5M2>[memref<1x1xf32>] -> memref<300x200xf32>
  return
}

// bf16 C: boxes of 64 rows x 64 columns (still 128 bytes), two per warpgroup; a run of two
// results is one 4-byte word (the low half the first column's).
// CHECK-LABEL: func.func @halves
// CHECK:         nvgpu.tma.create.descriptor %{{.*}} box[%c64, %c64] : memref<*xbf16> -> <tensor = memref<64x64xbf16, 3>, swizzle = swizzle_128b
// CHECK:         dynamic_shared_memory_size %c165888_i32
// CHECK:         arith.bitcast %{{.*}} : bf16 to i16
// CHECK:         llvm.store %{{.*}}, %{{.*}} {alignment = 4 : i64} : i32, !llvm.ptr<3>
// CHECK:         nvvm.barrier id
// CHECK-COUNT-2: nvvm.cp.async.bulk.tensor.global.shared.cta
// CHECK-NEXT:    nvvm.cp.async.bulk.commit.group
func.func @halves(%a: memref<300x416xf8E4M3FN>, %sa: memref<1x1xf32>, %b: memref<200x416xf8E5M2>,
                  %sb: memref<1x1xf32>, %c: memref<300x200xbf16>) {
  lowp.scaled_matmul %a[%sa], %b[%sb] into %c layouts(#lowp.per_tensor, #lowp.per_tensor)
      : memref<300x416xf8E4M3FN>[memref<1x1xf32>], memref<200x416xf8E5M2>[memref<1x1xf32>] -> memref<300x200xbf16>
  return
}

// C's rows are 808 bytes, not whole 16 (TMA's strides): stored directly.
// CHECK-LABEL: func.func @ragged
// CHECK-NOT:     memref<*xf32>
// CHECK:         dynamic_shared_memory_size %c132160_i32
// CHECK-NOT:     nvvm.cp.async.bulk.tensor.global.shared.cta
// CHECK:         return
func.func @ragged(%a: memref<300x416xf8E4M3FN>, %sa: memref<1x1xf32>, %b: memref<202x416xf8E5M2>,
                  %sb: memref<1x1xf32>, %c: memref<300x202xf32>) {
  lowp.scaled_matmul %a[%sa], %b[%sb] into %c layouts(#lowp.per_tensor, #lowp.per_tensor)
      : memref<300x416xf8E4M3FN>[memref<1x1xf32>], memref<202x416xf8E5M2>[memref<1x1xf32>] -> memref<300x202xf32>
  return
}
