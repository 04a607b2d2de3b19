// add_one(p, n): p[i] += 1 for i < n. Compiled to add_one.ptx by
//   lowp-translate crates/lowp-runtime/tests/inputs/add_one.mlir --emit=ptx --chip=sm_89 -o crates/lowp-runtime/tests/inputs/add_one.ptx
// (the runtime's tests must not need LLVM, so the PTX is kept next to its source).
module {
  llvm.func @add_one(%p: !llvm.ptr<1>, %n: i32) attributes {nvvm.kernel} {
    %bid = nvvm.read.ptx.sreg.ctaid.x : i32
    %bdim = nvvm.read.ptx.sreg.ntid.x : i32
    %tid = nvvm.read.ptx.sreg.tid.x : i32
    %base = llvm.mul %bid, %bdim : i32
    %i = llvm.add %base, %tid : i32
    %in = llvm.icmp "ult" %i, %n : i32
    llvm.cond_br %in, ^body, ^done
  ^body:
    %q = llvm.getelementptr %p[%i] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, f32
    %v = llvm.load %q : !llvm.ptr<1> -> f32
    %one = llvm.mlir.constant(1.0 : f32) : f32
    %w = llvm.fadd %v, %one : f32
    llvm.store %w, %q : f32, !llvm.ptr<1>
    llvm.br ^done
  ^done:
    llvm.return
  }
}
