//! Runs mlir-tblgen over `dialects/lowp` and compiles the dialect's C++ (registration,
//! verifiers, C API, the Rust-pass bridge, the MlirOptMain shim) against the same LLVM/MLIR
//! 22 whose static libraries mlir-sys links.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The tblgen generators run over `lowp/Lowp.td`, with the file each writes. (Interface
/// generators emit only the records of their main file: they read `LowpInterfaces.td`.)
const GENERATORS: &[(&[&str], &str)] = &[
    (
        &["-gen-dialect-decls", "-dialect=lowp"],
        "LowpDialect.h.inc",
    ),
    (
        &["-gen-dialect-defs", "-dialect=lowp"],
        "LowpDialect.cpp.inc",
    ),
    (
        &["-gen-typedef-decls", "-typedefs-dialect=lowp"],
        "LowpTypes.h.inc",
    ),
    (
        &["-gen-typedef-defs", "-typedefs-dialect=lowp"],
        "LowpTypes.cpp.inc",
    ),
    (
        &["-gen-attrdef-decls", "-attrdefs-dialect=lowp"],
        "LowpAttrs.h.inc",
    ),
    (
        &["-gen-attrdef-defs", "-attrdefs-dialect=lowp"],
        "LowpAttrs.cpp.inc",
    ),
    (&["-gen-attr-interface-decls"], "LowpInterfaces.h.inc"),
    (&["-gen-attr-interface-defs"], "LowpInterfaces.cpp.inc"),
    (&["-gen-enum-decls"], "LowpEnums.h.inc"),
    (&["-gen-enum-defs"], "LowpEnums.cpp.inc"),
    (&["-gen-op-decls"], "LowpOps.h.inc"),
    (&["-gen-op-defs"], "LowpOps.cpp.inc"),
];

fn main() {
    let prefix = PathBuf::from(
        std::env::var("MLIR_SYS_220_PREFIX").unwrap_or_else(|_| "/usr/lib/llvm-22".into()),
    );
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap());
    let dialect = manifest
        .join("../../dialects/lowp")
        .canonicalize()
        .unwrap_or_else(|e| {
            panic!("dialects/lowp not found next to crates/: {e}");
        });
    let td_include = dialect.join("include");
    let out = PathBuf::from(std::env::var("OUT_DIR").unwrap());
    let gen_dir = out.join("include/lowp");
    std::fs::create_dir_all(&gen_dir).unwrap();

    let tblgen = prefix.join("bin/mlir-tblgen");
    let llvm_include = prefix.join("include");
    for (args, file) in GENERATORS {
        let main = if file.starts_with("LowpInterfaces") {
            "lowp/LowpInterfaces.td"
        } else {
            "lowp/Lowp.td"
        };
        run_tblgen(
            &tblgen,
            args,
            &llvm_include,
            &td_include,
            main,
            &gen_dir.join(file),
        );
    }

    let mut build = cc::Build::new();
    build
        .cpp(true)
        .std("c++17")
        .include(&llvm_include)
        .include(out.join("include"))
        .include(&td_include)
        .define("NDEBUG", None)
        .define("_GNU_SOURCE", None)
        .define("__STDC_CONSTANT_MACROS", None)
        .define("__STDC_FORMAT_MACROS", None)
        .define("__STDC_LIMIT_MACROS", None)
        .flag("-fno-exceptions")
        .flag_if_supported("-Wno-unused-parameter")
        .flag_if_supported("-Wno-comment")
        .warnings(false);
    for file in [
        "LowpDialect.cpp",
        "LowpOps.cpp",
        "LowpCAPI.cpp",
        "PassBridge.cpp",
        "LowpOptMain.cpp",
    ] {
        build.file(dialect.join("lib").join(file));
    }
    build.compile("lowp_dialect_cxx");

    println!("cargo:rerun-if-changed={}", dialect.display());
    println!("cargo:rerun-if-env-changed=MLIR_SYS_220_PREFIX");
    // The dialect! macro reads the .td files through this include directory.
    println!("cargo:rustc-env=LOWP_TD_INCLUDE={}", td_include.display());
}

fn run_tblgen(
    tblgen: &Path,
    args: &[&str],
    llvm_include: &Path,
    td_include: &Path,
    main: &str,
    out: &Path,
) {
    let status = Command::new(tblgen)
        .args(args)
        .arg(format!("-I{}", llvm_include.display()))
        .arg(format!("-I{}", td_include.display()))
        .arg(td_include.join(main))
        .arg("-o")
        .arg(out)
        .status()
        .unwrap_or_else(|e| {
            panic!(
                "cannot run {}: {e} (run scripts/setup.sh)",
                tblgen.display()
            )
        });
    assert!(status.success(), "mlir-tblgen {args:?} failed on {main}");
}
