#!/usr/bin/env bash
# Every test of lowp: installs what is missing, builds the tools, runs the Rust tests of the
# whole workspace, then the lit suite (LLVM 22's lit + FileCheck) over the built tools.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/ptxas.sh
cargo build --workspace --bins --locked
cargo test --workspace --locked
/usr/lib/llvm-22/bin/lit -sv lit
