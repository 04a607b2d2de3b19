#!/usr/bin/env bash
# The main job: installs what is missing, builds lowp in release mode, then compiles and runs
# an MXFP4 (E2M1 codes + E8M0 block-32 scales) scaled matmul on the CPU, checks it against
# the lowp-formats oracle and times it.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cargo build --release --locked -q -p lowp-run -p lowp-fmt
./target/release/lowp-fmt info f4e2m1 | head -6
./target/release/lowp-run --gen --m 1024 --n 1024 --k 1024 --lhs f4e2m1 --rhs f4e2m1 \
  --layout mx --packed --check --bench 10
