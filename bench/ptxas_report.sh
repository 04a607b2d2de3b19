#!/usr/bin/env bash
# ptxas facts of every bundle (here, no GPU needed): registers, spills and ptxas's wgmma
# serialization notes (C75xx), one line a kernel into gpu-carry/ptxas.txt, a summary last.
#   bash scripts/ptxas.sh && bash bench/ptxas_report.sh [bundle dir ...]
set -u
cd "$(dirname "$0")/.."
PTXAS=${PTXAS:-target/ptxas/bin/ptxas}
if [ ! -x "$PTXAS" ]; then
  echo "ptxas_report: no ptxas (bash scripts/ptxas.sh)" >&2
  exit 0
fi
dirs=("$@")
[ ${#dirs[@]} = 0 ] && dirs=(gpu-carry/bundles/*/)
out=gpu-carry/ptxas.txt
: > "$out"
for d in "${dirs[@]}"; do
  d=${d%/}
  [ -f "$d/kernel.ptx" ] || continue
  chip=$(sed -n 's/^chip = //p' "$d/launch.txt")
  log=$("$PTXAS" -arch="$chip" -v "$d/kernel.ptx" -o /dev/null 2>&1)
  rc=$?
  regs=$(grep -o 'Used [0-9]* registers' <<< "$log" | head -1 | cut -d' ' -f2)
  spill=$(grep -o '[0-9]* bytes spill stores' <<< "$log" | head -1 | cut -d' ' -f1)
  notes=$(grep -o 'C75[0-9][0-9]' <<< "$log" | sort -u | tr '\n' ' ')
  printf '%-52s %-7s rc=%s regs=%-3s spill=%-5s %s\n' "$(basename "$d")" "$chip" "$rc" \
    "${regs:--}" "${spill:--}" "$notes" >> "$out"
done
echo "ptxas ($("$PTXAS" --version | tail -1 | cut -d, -f1)): $(wc -l < "$out") kernels," \
  "$(grep -vc ' rc=0 ' "$out") not assembled, $(grep -c 'C75' "$out") serialized (C75xx)," \
  "$(grep -vc 'spill=0 ' "$out") spilling"
# The kernels that are not clean: not assembled, serialized or spilling.
grep -v ' rc=0 .* spill=0  *$' "$out" || true
