func.func @f() {
  lowp.frobnicate
  return
}
