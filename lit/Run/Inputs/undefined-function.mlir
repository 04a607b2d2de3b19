// An entry that calls a function the module only declares; another that does not.
func.func private @lowp_not_defined_anywhere(memref<4xf32>)

func.func @calls_missing(%a: memref<4xf32>) {
  func.call @lowp_not_defined_anywhere(%a) : (memref<4xf32>) -> ()
  return
}

func.func @calls_nothing(%a: memref<4xf32>) {
  return
}
