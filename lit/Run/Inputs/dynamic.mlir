// Entries whose types leave sizes dynamic: lowp-run takes them from --m, --n, --k.

// M at run time (a serving batch): FP8 per-tensor.
func.func @dyn_m(%a: memref<?x256xf8E4M3FN>, %sa: memref<1x1xf32>, %b: memref<48x256xf8E4M3FN>,
                 %sb: memref<1x1xf32>, %c: memref<?x48xf32>) {
  lowp.scaled_matmul %a[%sa], %b[%sb] into %c layouts(#lowp.per_tensor, #lowp.per_tensor)
      : memref<?x256xf8E4M3FN>[memref<1x1xf32>], memref<48x256xf8E4M3FN>[memref<1x1xf32>] -> memref<?x48xf32>
  return
}

// Every size at run time: packed MXFP4 with a bias.
func.func @all_dynamic(%a: memref<?x?x!lowp.packed<f4E2M1FN>>, %sa: memref<?x?xf8E8M0FNU>,
                       %b: memref<?x?x!lowp.packed<f4E2M1FN>>, %sb: memref<?x?xf8E8M0FNU>,
                       %bias: memref<?xf32>, %c: memref<?x?xf32>) {
  lowp.scaled_matmul %a[%sa], %b[%sb] bias %bias into %c layouts(#lowp.mx<32>, #lowp.mx<32>)
      : memref<?x?x!lowp.packed<f4E2M1FN>>[memref<?x?xf8E8M0FNU>],
        memref<?x?x!lowp.packed<f4E2M1FN>>[memref<?x?xf8E8M0FNU>] bias memref<?xf32>
        -> memref<?x?xf32>
  return
}

// A dynamic M whose scales' rows are static: only M = 4 agrees with them.
func.func @fixed_scales(%a: memref<?x64xf8E5M2>, %sa: memref<4x2xf8E8M0FNU>, %b: memref<8x64xf8E4M3FN>,
                        %sb: memref<8x2xf8E8M0FNU>, %c: memref<?x8xf32>) {
  lowp.scaled_matmul %a[%sa], %b[%sb] into %c layouts(#lowp.mx<32>, #lowp.mx<32>)
      : memref<?x64xf8E5M2>[memref<4x2xf8E8M0FNU>], memref<8x64xf8E4M3FN>[memref<8x2xf8E8M0FNU>] -> memref<?x8xf32>
  return
}
