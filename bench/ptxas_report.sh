#!/usr/bin/env bash
# ptxas facts of every bundle (here, no GPU needed): registers, spills and ptxas's wgmma
# serialization notes (C75xx), and, where nvdisasm is there, the tensor-core instructions
# the SASS holds (QGMMA, QMMA, UTCQMMA / UTCOMMA: kind, shape and operand types, counted):
# one line a kernel into gpu-carry/ptxas.txt, a summary last.
#   bash scripts/ptxas.sh && bash bench/ptxas_report.sh [bundle dir ...]
set -u
cd "$(dirname "$0")/.."
PTXAS=${PTXAS:-target/ptxas/bin/ptxas}
NVDISASM=${NVDISASM:-target/ptxas/bin/nvdisasm}
if [ ! -x "$PTXAS" ]; then
  echo "ptxas_report: no ptxas (bash scripts/ptxas.sh)" >&2
  exit 0
fi
[ -x "$NVDISASM" ] || NVDISASM=
dirs=("$@")
[ ${#dirs[@]} = 0 ] && dirs=(gpu-carry/bundles/*/)
out=gpu-carry/ptxas.txt
: > "$out"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for d in "${dirs[@]}"; do
  d=${d%/}
  [ -f "$d/kernel.ptx" ] || continue
  chip=$(sed -n 's/^chip = //p' "$d/launch.txt")
  log=$("$PTXAS" -arch="$chip" -v "$d/kernel.ptx" -o "$tmp/k.cubin" 2>&1)
  rc=$?
  regs=$(grep -o 'Used [0-9]* registers' <<< "$log" | head -1 | cut -d' ' -f2)
  spill=$(grep -o '[0-9]* bytes spill stores' <<< "$log" | head -1 | cut -d' ' -f1)
  notes=$(grep -o 'C75[0-9][0-9]' <<< "$log" | sort -u | tr '\n' ' ')
  sass=
  if [ -n "$NVDISASM" ] && [ "$rc" = 0 ]; then
    "$NVDISASM" -c "$tmp/k.cubin" > "$tmp/k.sass" 2>/dev/null
    # A wgmma whose results nothing reads stays, as a placeholder writing RZ from no
    # operands (a stage past the end of a short K): counted apart.
    sass=$(grep -vE 'GMMA[.A-Za-z0-9_]* RZ, gdesc\[URZ\]' "$tmp/k.sass" \
      | grep -oE '\b(QGMMA|HGMMA|QMMA|HMMA|UTC[A-Z]*MMA)[.A-Za-z0-9_]*' | sort | uniq -c \
      | awk '{printf "%sx%s ", $1, $2}')
    dead=$(grep -cE 'GMMA[.A-Za-z0-9_]* RZ, gdesc\[URZ\]' "$tmp/k.sass")
    [ "$dead" = 0 ] || sass+="(+${dead} placeholders) "
    sass="sass: ${sass:-no tensor-core instruction}"
  fi
  printf '%-52s %-7s rc=%s regs=%-3s spill=%-5s %s%s\n' "$(basename "$d")" "$chip" "$rc" \
    "${regs:--}" "${spill:--}" "$notes" "$sass" >> "$out"
  rm -f "$tmp/k.cubin" "$tmp/k.sass"
done
echo "ptxas ($("$PTXAS" --version | tail -1 | cut -d, -f1)): $(wc -l < "$out") kernels," \
  "$(grep -vc ' rc=0 ' "$out") not assembled, $(grep -c 'C75' "$out") serialized (C75xx)," \
  "$(grep -vc 'spill=0 ' "$out") spilling"
# The kernels that are not clean: not assembled, serialized or spilling; and a tensor-core
# kernel (wgmma, mma.sync, tcgen05) whose SASS has no tensor-core instruction.
grep -v ' rc=0 .* spill=0  *\(sass: \|$\)' "$out" || true
grep -E '^[a-z]+-(auto|wgmma|mma-sync|tcgen05)[^ ]* .*no tensor-core instruction' "$out" || true
if [ -n "$NVDISASM" ]; then
  echo "SASS ($("$NVDISASM" --version | tail -1 | cut -d, -f1)), tensor-core instructions by kernel kind:"
  for kind in auto wgmma wgmma-specialized wgmma-tma mma-sync tcgen05 generic; do
    list=$(grep -E "^[a-z]+-$kind-" "$out" | grep -oE '[0-9]+x[A-Z][A-Z0-9.x_]+' | sed 's/^[0-9]*x//' | sort -u | tr '\n' ' ')
    if [ -n "$list" ]; then echo "  $kind: $list"; fi
  done
fi
