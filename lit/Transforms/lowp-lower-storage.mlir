// RUN: lowp-opt %s -split-input-file -verify-diagnostics --lowp-lower-storage | FileCheck %s

// Memrefs of codes become memrefs of their storage integers; storage_cast disappears.
// CHECK-LABEL: func.func @retype
// CHECK-SAME:  (%[[Q:.*]]: memref<4x8xi8>, %[[S:.*]]: memref<4x1xi8>, %[[P:.*]]: memref<4x4xi8>, %{{.*}}: memref<4x8xi8>) -> memref<4x8xi8>
// CHECK-NOT:   lowp.storage_cast
// CHECK:       memref.load %[[Q]]
// CHECK:       memref.load %[[S]]
// CHECK:       memref.load %[[P]]
// CHECK:       return %[[Q]] : memref<4x8xi8>
func.func @retype(%q: memref<4x8x!lowp.mf<e3m0>>, %s: memref<4x1xf8E8M0FNU>,
                  %p: memref<4x4x!lowp.packed<f4E2M1FN>>, %f: memref<4x8xf8E4M3FN>) -> memref<4x8x!lowp.mf<e3m0>> {
  %c0 = arith.constant 0 : index
  %0 = lowp.storage_cast %q : memref<4x8x!lowp.mf<e3m0>> to memref<4x8xi8>
  %1 = lowp.storage_cast %s : memref<4x1xf8E8M0FNU> to memref<4x1xi8>
  %2 = lowp.storage_cast %p : memref<4x4x!lowp.packed<f4E2M1FN>> to memref<4x4xi8>
  %a = memref.load %0[%c0, %c0] : memref<4x8xi8>
  %b = memref.load %1[%c0, %c0] : memref<4x1xi8>
  %c = memref.load %2[%c0, %c0] : memref<4x4xi8>
  return %q : memref<4x8x!lowp.mf<e3m0>>
}

// -----

// Declarations and allocations are retyped too.
// CHECK-LABEL: func.func private @external(memref<?x16xi8>)
func.func private @external(memref<?x16xf6E2M3FN>)

// CHECK-LABEL: func.func @alloc
// CHECK:       %[[A:.*]] = memref.alloc() : memref<2x2xi8>
// CHECK:       memref.dealloc %[[A]] : memref<2x2xi8>
func.func @alloc() {
  %a = memref.alloc() : memref<2x2xf8E5M2>
  memref.dealloc %a : memref<2x2xf8E5M2>
  return
}

// -----

// A gpu.func's signature follows its arguments, as a func.func's does.
// CHECK-LABEL: gpu.func @kernel
// CHECK-SAME:  (%{{.*}}: memref<16x64xi8>, %{{.*}}: memref<16x32xi8>) kernel
module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @kernel(%a: memref<16x64xf8E4M3FN>, %b: memref<16x32x!lowp.packed<f4E2M1FN>>) kernel {
      gpu.return
    }
  }
}

// -----

// A lowp op not lowered: an error at it, before anything is retyped.
module {
  func.func @unlowered(%x: memref<4x64xf32>, %s: memref<4x2xf8E8M0FNU>, %q: memref<4x64xf4E2M1FN>) {
    // expected-error @below {{lowp.quantize: not lowered: lowp ops are lowered before their memrefs are retyped}}
    lowp.quantize %x[%s] layout #lowp.mx<32> into %q : memref<4x64xf32>[memref<4x2xf8E8M0FNU>] -> memref<4x64xf4E2M1FN>
    return
  }
}

// -----

// One inside a kernel, which no lowering takes.
module attributes {gpu.container_module} {
  gpu.module @m {
    gpu.func @k(%a: memref<8x64xf8E4M3FN>, %sa: memref<1x1xf32>, %b: memref<8x64xf8E4M3FN>, %sb: memref<1x1xf32>, %c: memref<8x8xf32>) kernel {
      // expected-error @below {{lowp.scaled_matmul: not lowered: it is inside a kernel (gpu.func)}}
      lowp.scaled_matmul %a[%sa], %b[%sb] into %c layouts(#lowp.per_tensor, #lowp.per_tensor)
          : memref<8x64xf8E4M3FN>[memref<1x1xf32>], memref<8x64xf8E4M3FN>[memref<1x1xf32>] -> memref<8x8xf32>
      gpu.return
    }
  }
}

// -----

// One in a nested module (a file of two top-level modules reads as one holding both): the
// pipeline's function passes never reached it.
module {
  module @second {
    func.func @f(%x: memref<4x64xf32>, %s: memref<4x2xf8E8M0FNU>, %q: memref<4x64xf4E2M1FN>) {
      // expected-error @below {{lowp.quantize: not lowered: it is in the nested module @second: the pipeline's function passes lower the functions of the module it runs on}}
      lowp.quantize %x[%s] layout #lowp.mx<32> into %q : memref<4x64xf32>[memref<4x2xf8E8M0FNU>] -> memref<4x64xf4E2M1FN>
      return
    }
  }
}

// -----

// An op that still computes on codes cannot be retyped.
// expected-error @below {{code-typed values are still computed on after retyping their memrefs to storage integers; lower the lowp ops first}}
module {
  func.func @load(%q: memref<4x64xf4E2M1FN>) -> f4E2M1FN {
    %c0 = arith.constant 0 : index
    // expected-error @below {{'memref.load' op failed to verify that result type matches element type of 'memref'}}
    %v = memref.load %q[%c0, %c0] : memref<4x64xf4E2M1FN>
    return %v : f4E2M1FN
  }
}

// -----

// A global of codes (a bufferized constant of codes) keeps its bytes as i8: a dense value
// element by element (f4E2M1FN 0.5, 1, -6, 1.5 = 1, 2, 15, 3), a splat as one byte
// (f8E4M3FN -448 = 0xfe).
// CHECK: memref.global "private" constant @codes : memref<1x4xi8> = dense<{{\[\[}}1, 2, 15, 3]]>
// CHECK: memref.global "private" constant @splat : memref<2x2xi8> = dense<-2>
// CHECK: memref.global "private" @uninitialized : memref<2x2xi8> = uninitialized
// CHECK-LABEL: func.func @globals
// CHECK: memref.get_global @codes : memref<1x4xi8>
memref.global "private" constant @codes : memref<1x4xf4E2M1FN> = dense<[[0.5, 1.0, -6.0, 1.5]]>
memref.global "private" constant @splat : memref<2x2xf8E4M3FN> = dense<-448.0>
memref.global "private" @uninitialized : memref<2x2xf8E4M3FN> = uninitialized
func.func @globals() -> memref<1x4xf4E2M1FN> {
  %g = memref.get_global @codes : memref<1x4xf4E2M1FN>
  return %g : memref<1x4xf4E2M1FN>
}

// -----

// A tensor of codes left beside the memrefs (a partial bufferization) is named.
func.func @tensor_left(%t: tensor<4x64xf8E4M3FN>) -> memref<4x64xf8E4M3FN> {
  // expected-error @below {{bufferization.to_buffer: a tensor of lowp codes (tensor<4x64xf8E4M3FN>) is left; lowp-lower-storage retypes memrefs: bufferize all of it first}}
  %m = bufferization.to_buffer %t : tensor<4x64xf8E4M3FN> to memref<4x64xf8E4M3FN>
  return %m : memref<4x64xf8E4M3FN>
}

// -----

// A function named after C's malloc (or free, aligned_alloc) in a module that allocates:
// the LLVM lowering would call an undefined @malloc_0.
// expected-error @below {{func.func: @malloc takes the name of C's malloc, which the module's memref.alloc and memref.dealloc (lowp-to-loops' buffers among them) are lowered to call: rename the function}}
func.func @malloc(%n: index) {
  %b = memref.alloc(%n) : memref<?xf32>
  memref.dealloc %b : memref<?xf32>
  return
}

// -----

// Without an allocation the name is the user's.
// CHECK-LABEL: func.func @free
func.func @free(%x: memref<4xi8>) {
  return
}

// -----

// expected-error @below {{func.func: @aligned_alloc takes the name of C's aligned_alloc}}
func.func private @aligned_alloc(i64, i64) -> i64
func.func @buffers(%n: index) {
  %b = memref.alloc(%n) : memref<?xf32>
  memref.dealloc %b : memref<?xf32>
  return
}
