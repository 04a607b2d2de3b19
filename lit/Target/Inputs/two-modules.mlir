// Two top-level modules: MLIR reads them as one module holding both.
module {
  llvm.func @f() {
    llvm.return
  }
}
module {
  llvm.func @g() {
    llvm.return
  }
}
