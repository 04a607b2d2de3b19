//! docs/LowpDialect.md is what `scripts/gen-docs.sh` generates from the ODS today, and
//! docs/LowpPasses.md what it generates from lowp-passes (`LOWP_UPDATE_DOCS=1` rewrites it).

use std::process::Command;

#[test]
fn generated_dialect_docs_are_current() {
    let repo = lowp_tests::repo();
    let out = Command::new("/usr/lib/llvm-22/bin/mlir-tblgen")
        .args([
            "-gen-dialect-doc",
            "-dialect=lowp",
            "-I/usr/lib/llvm-22/include",
        ])
        .arg(format!(
            "-I{}",
            repo.join("dialects/lowp/include").display()
        ))
        .arg(repo.join("dialects/lowp/include/lowp/Lowp.td"))
        .output()
        .expect("mlir-tblgen runs (scripts/setup.sh installs it)");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let fresh = String::from_utf8(out.stdout).unwrap();
    let committed = std::fs::read_to_string(repo.join("docs/LowpDialect.md")).unwrap_or_default();
    assert!(
        fresh == committed,
        "docs/LowpDialect.md is stale: run `bash scripts/gen-docs.sh` and commit the result"
    );
}

#[test]
fn generated_pass_docs_are_current() {
    let path = lowp_tests::repo().join("docs/LowpPasses.md");
    let fresh = lowp_passes::docs::markdown();
    if std::env::var_os("LOWP_UPDATE_DOCS").is_some() {
        std::fs::write(&path, &fresh).unwrap();
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        fresh == committed,
        "docs/LowpPasses.md is stale: run `bash scripts/gen-docs.sh` and commit the result"
    );
}
