//! `lowp-opt`: MLIR's `MlirOptMain` with every upstream dialect, extension and pass, plus the
//! lowp dialect and lowp's Rust passes (registered by name before the command line is
//! parsed). Everything `mlir-opt` accepts works: `-split-input-file`, `-verify-diagnostics`,
//! `--mlir-print-ir-after-all`, `--pass-pipeline=...`, `--help`.

use std::ffi::{c_char, CString};
use std::os::unix::ffi::OsStrExt;

fn main() {
    // (MLIR recurses once per level of the input's nesting: a deep stack.)
    let code = lowp_dialect::on_deep_stack(opt_main);
    std::process::exit(code);
}

fn opt_main() -> i32 {
    lowp_dialect::exit_on_llvm_fatal_error("lowp-opt");
    lowp_passes::register_passes();
    let args: Vec<CString> = std::env::args_os()
        .map(|a| CString::new(a.as_bytes()).unwrap_or_else(|_| CString::new("?").unwrap()))
        .collect();
    let mut argv: Vec<*mut c_char> = args.iter().map(|a| a.as_ptr() as *mut c_char).collect();
    argv.push(std::ptr::null_mut());
    // SAFETY: argv holds argc NUL-terminated strings (plus a final NULL) alive for the call.
    unsafe {
        lowp_dialect::ffi::lowpOptMain(
            args.len() as i32,
            argv.as_mut_ptr(),
            Some(lowp_dialect::deep_stack::arm),
        )
    }
}
