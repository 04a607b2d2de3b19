#!/bin/bash
# Two builds of lowp-run alternated on one problem: the CPU figures of bench/NOTES.md on a
# noisy VM (single runs there spread 10-30%). Each round runs OLD then NEW with
# `--bench 5`; the sorted medians of each build print last.
#   cargo build --release -p lowp-run && cp target/release/lowp-run /tmp/lowp-run-old
#   (change, rebuild, cp target/release/lowp-run /tmp/lowp-run-new)
#   bash bench/ab.sh /tmp/lowp-run-old /tmp/lowp-run-new 3 --gen --m 4 --n 8192 \
#     --k 8192 --lhs f8e4m3 --rhs f8e4m3 --layout per_tensor
set -euo pipefail
if [ $# -lt 4 ]; then
  echo "usage: bench/ab.sh OLD NEW ROUNDS LOWP-RUN-ARGS..." >&2
  exit 2
fi
old=$1 new=$2 rounds=$3
shift 3
median() { "$@" --bench 5 | grep -o 'median_ms=[0-9.]*' | cut -d= -f2; }
o=() n=()
for _ in $(seq "$rounds"); do
  o+=("$(median "$old" "$@")")
  n+=("$(median "$new" "$@")")
done
echo "old: $(printf '%s\n' "${o[@]}" | sort -n | tr '\n' ' ')ms"
echo "new: $(printf '%s\n' "${n[@]}" | sort -n | tr '\n' ' ')ms"
