#!/usr/bin/env bash
# NVIDIA's PTX assembler and SASS disassembler for the lit tests that assemble lowp's
# kernels, on a machine without a GPU:
# - ptxas (`REQUIRES: ptxas`): registers, spills and wgmma serialization (C75xx) as ptxas
#   reports them; one file of the nvidia-cuda-nvcc-cu12 wheel (pinned here).
# - nvdisasm (`REQUIRES: nvdisasm`): the SASS of what ptxas made, to see which tensor-core
#   instructions the kernels became (QGMMA, QMMA, UTCQMMA / UTCOMMA); one file of the
#   nvidia-cuda-nvdisasm wheel (13.x, the first published as a wheel; it reads 12.9's
#   sm_89 / sm_90a / sm_100a cubins).
# Both are taken out of their wheels into target/ptxas/bin. Best effort: where pip cannot
# fetch a wheel, says so and the tests that need the tool are reported unsupported.
# PTXAS=/path/to/ptxas or NVDISASM=/path/to/nvdisasm skips that one.
set -euo pipefail
cd "$(dirname "$0")/.."
DEST=target/ptxas/bin

# fetch <wheel==version> <file in the wheel> <name in $DEST>
fetch() {
  local wheel=$1 member=$2 name=$3 tmp
  [ -x "$DEST/$name" ] && return 0
  tmp=$(mktemp -d)
  if ! python3 -m pip download --quiet --no-deps --only-binary=:all: "$wheel" -d "$tmp" >"$tmp/log" 2>&1; then
    echo "$name: could not fetch $wheel (tests that need $name are skipped):" >&2
    tail -2 "$tmp/log" >&2
    rm -rf "$tmp"
    return 0
  fi
  mkdir -p "$DEST"
  python3 - "$tmp" "$member" "$DEST/$name" <<'PY'
import glob, os, sys, zipfile
wheel = glob.glob(os.path.join(sys.argv[1], "*.whl"))[0]
with zipfile.ZipFile(wheel) as z:
    data = z.read(sys.argv[2])
out = sys.argv[3]
with open(out + ".part", "wb") as f:
    f.write(data)
os.chmod(out + ".part", 0o755)
os.rename(out + ".part", out)
PY
  rm -rf "$tmp"
  "$DEST/$name" --version | tail -1
}

[ -n "${PTXAS:-}" ] || fetch nvidia-cuda-nvcc-cu12==12.9.86 nvidia/cuda_nvcc/bin/ptxas ptxas
[ -n "${NVDISASM:-}" ] || fetch nvidia-cuda-nvdisasm==13.5.37 nvidia/cu13/bin/nvdisasm nvdisasm
