#!/usr/bin/env bash
# Every test of lowp: installs what is missing, then the Rust tests of the whole workspace.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cargo test --workspace --locked
