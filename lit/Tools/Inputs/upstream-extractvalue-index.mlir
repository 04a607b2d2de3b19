llvm.func @f(%c0: f32, %out: !llvm.ptr<1>) {
  %u = llvm.mlir.undef : !llvm.struct<(f32, f32, f32, f32)>
  %d0 = llvm.extractvalue %u[4294967297] : !llvm.struct<(f32, f32, f32, f32)>
  llvm.store %d0, %out : f32, !llvm.ptr<1>
  llvm.return
}
