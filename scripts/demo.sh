#!/usr/bin/env bash
# The main job: installs what is missing, then shows the MXFP4 element grid and a
# quantize/dequantize round trip with its error.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cargo run --release --locked -q -p lowp-fmt -- demo mx f4e2m1
