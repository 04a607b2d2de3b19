#!/usr/bin/env bash
# NVIDIA's PTX assembler for the lit tests that assemble lowp's kernels (`REQUIRES: ptxas`):
# registers, spills and wgmma serialization (C75xx) as ptxas reports them, on a machine
# without a GPU. ptxas is one file of the nvidia-cuda-nvcc-cu12 wheel (pinned here), taken
# out of it into target/ptxas/bin. Best effort: where pip cannot fetch the wheel, says so
# and the tests that need ptxas are reported unsupported. PTXAS=/path/to/ptxas skips this.
set -euo pipefail
cd "$(dirname "$0")/.."
WHEEL=nvidia-cuda-nvcc-cu12==12.9.86
DEST=target/ptxas/bin
[ -n "${PTXAS:-}" ] && exit 0
[ -x "$DEST/ptxas" ] && exit 0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if ! python3 -m pip download --quiet --no-deps --only-binary=:all: "$WHEEL" -d "$tmp" >"$tmp/log" 2>&1; then
  echo "ptxas: could not fetch $WHEEL (tests that need ptxas are skipped):" >&2
  tail -2 "$tmp/log" >&2
  exit 0
fi
mkdir -p "$DEST"
python3 - "$tmp" "$DEST" <<'PY'
import glob, os, sys, zipfile
wheel = glob.glob(os.path.join(sys.argv[1], "*.whl"))[0]
with zipfile.ZipFile(wheel) as z:
    data = z.read("nvidia/cuda_nvcc/bin/ptxas")
out = os.path.join(sys.argv[2], "ptxas")
with open(out + ".part", "wb") as f:
    f.write(data)
os.chmod(out + ".part", 0o755)
os.rename(out + ".part", out)
PY
"$DEST/ptxas" --version | tail -1
