#!/usr/bin/env bash
# Install what lowp needs on a fresh Debian 12 machine; quick and silent when all is there.
#
# LLVM/MLIR 22 come from Debian's packages (bookworm-security carries 22.1); libclang is for
# bindgen in mlir-sys/tblgen; libomp runs the CPU kernels on threads; lld-22 links AMDGPU
# code objects. Not root and something
# missing: prints the exact apt-get line and exits 1.
set -euo pipefail

PKGS=(
  llvm-22-dev libmlir-22-dev mlir-22-tools llvm-22-tools libpolly-22-dev lld-22
  libclang-22-dev libomp-22-dev
  libzstd-dev libz3-dev libxml2-dev zlib1g-dev
  g++ python3
)

missing=()
for p in "${PKGS[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if ((${#missing[@]})); then
  line="apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends ${missing[*]}"
  if [ "$(id -u)" != 0 ]; then
    echo "setup: missing packages: ${missing[*]}" >&2
    echo "setup: run as root:  $line" >&2
    exit 1
  fi
  echo "setup: installing ${missing[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

if ! command -v cargo >/dev/null 2>&1; then
  echo "setup: cargo not found; install the stable Rust toolchain (rustup) first" >&2
  exit 1
fi

for tool in /usr/lib/llvm-22/bin/mlir-opt /usr/lib/llvm-22/bin/FileCheck /usr/lib/llvm-22/bin/lit; do
  if [ ! -x "$tool" ]; then
    echo "setup: $tool is missing after install" >&2
    exit 1
  fi
done
