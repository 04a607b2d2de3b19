#!/usr/bin/env bash
# Regenerate docs/LowpDialect.md from the ODS in dialects/lowp and docs/LowpPasses.md from
# crates/lowp-passes (tests check both are current).
set -euo pipefail
cd "$(dirname "$0")/.."
TBLGEN=${MLIR_TBLGEN:-/usr/lib/llvm-22/bin/mlir-tblgen}
"$TBLGEN" -gen-dialect-doc -dialect=lowp -I/usr/lib/llvm-22/include -Idialects/lowp/include \
  dialects/lowp/include/lowp/Lowp.td -o docs/LowpDialect.md
echo "wrote docs/LowpDialect.md"
LOWP_UPDATE_DOCS=1 cargo test -q -p lowp-tests --test integration docs::generated_pass_docs_are_current >/dev/null
echo "wrote docs/LowpPasses.md"
