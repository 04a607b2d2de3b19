// Entries whose scaled matmul is written in tensor form: the operands read from the memref
// arguments (`bufferization.to_tensor ... restrict`), the result materialized into the
// last one. lowp-run bufferizes such a module on reading it, so the op runs in place on
// the arguments, as its memref form would.
func.func @mxfp4(%a: memref<40x48x!lowp.packed<f4E2M1FN>>, %sa: memref<40x3xf8E8M0FNU>,
                 %b: memref<24x48x!lowp.packed<f4E2M1FN>>, %sb: memref<24x3xf8E8M0FNU>,
                 %bias: memref<24xf32>, %c: memref<40x24xf32>) {
  %ta = bufferization.to_tensor %a restrict : memref<40x48x!lowp.packed<f4E2M1FN>> to tensor<40x48x!lowp.packed<f4E2M1FN>>
  %tsa = bufferization.to_tensor %sa restrict : memref<40x3xf8E8M0FNU> to tensor<40x3xf8E8M0FNU>
  %tb = bufferization.to_tensor %b restrict : memref<24x48x!lowp.packed<f4E2M1FN>> to tensor<24x48x!lowp.packed<f4E2M1FN>>
  %tsb = bufferization.to_tensor %sb restrict : memref<24x3xf8E8M0FNU> to tensor<24x3xf8E8M0FNU>
  %tbias = bufferization.to_tensor %bias restrict : memref<24xf32> to tensor<24xf32>
  %tc = bufferization.to_tensor %c restrict writable : memref<40x24xf32> to tensor<40x24xf32>
  %r = lowp.scaled_matmul %ta[%tsa], %tb[%tsb] bias %tbias into %tc layouts(#lowp.mx<32>, #lowp.mx<32>)
      : tensor<40x48x!lowp.packed<f4E2M1FN>>[tensor<40x3xf8E8M0FNU>],
        tensor<24x48x!lowp.packed<f4E2M1FN>>[tensor<24x3xf8E8M0FNU>] bias tensor<24xf32>
      -> tensor<40x24xf32>
  bufferization.materialize_in_destination %r in restrict writable %c
      : (tensor<40x24xf32>, memref<40x24xf32>) -> ()
  return
}

// The same op in its memref form, for comparison.
func.func @mxfp4_memref(%a: memref<40x48x!lowp.packed<f4E2M1FN>>, %sa: memref<40x3xf8E8M0FNU>,
                        %b: memref<24x48x!lowp.packed<f4E2M1FN>>, %sb: memref<24x3xf8E8M0FNU>,
                        %bias: memref<24xf32>, %c: memref<40x24xf32>) {
  lowp.scaled_matmul %a[%sa], %b[%sb] bias %bias into %c layouts(#lowp.mx<32>, #lowp.mx<32>)
      : memref<40x48x!lowp.packed<f4E2M1FN>>[memref<40x3xf8E8M0FNU>],
        memref<24x48x!lowp.packed<f4E2M1FN>>[memref<24x3xf8E8M0FNU>] bias memref<24xf32>
      -> memref<40x24xf32>
  return
}

// A tensor destination of its own (tensor.empty): the result lands in a buffer the
// entry allocates and then copies into its argument.
func.func @fp8_copied(%a: memref<16x64xf8E4M3FN>, %sa: memref<1x1xf32>,
                      %b: memref<8x64xf8E5M2>, %sb: memref<8x1xf32>, %c: memref<16x8xf32>) {
  %ta = bufferization.to_tensor %a restrict : memref<16x64xf8E4M3FN> to tensor<16x64xf8E4M3FN>
  %tsa = bufferization.to_tensor %sa restrict : memref<1x1xf32> to tensor<1x1xf32>
  %tb = bufferization.to_tensor %b restrict : memref<8x64xf8E5M2> to tensor<8x64xf8E5M2>
  %tsb = bufferization.to_tensor %sb restrict : memref<8x1xf32> to tensor<8x1xf32>
  %init = tensor.empty() : tensor<16x8xf32>
  %r = lowp.scaled_matmul %ta[%tsa], %tb[%tsb] into %init layouts(#lowp.per_tensor, #lowp.per_channel)
      : tensor<16x64xf8E4M3FN>[tensor<1x1xf32>], tensor<8x64xf8E5M2>[tensor<8x1xf32>] -> tensor<16x8xf32>
  bufferization.materialize_in_destination %r in restrict writable %c
      : (tensor<16x8xf32>, memref<16x8xf32>) -> ()
  return
}
