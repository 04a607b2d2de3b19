#!/usr/bin/env bash
# One prepared device run (see /work/.library/device/METHOD.md): numerics first (against
# the oracle, two seeds; FP8 per-tensor results also beside torch._scaled_mm on the same
# inputs, bench/vs_torch.py), then timing of lowp's GPU kernels (FP8 wgmma pipelines,
# mma.sync, generic) beside the torch peers, then ptxas / cuobjdump facts (registers, spills, SASS tensor-core instructions) of
# the timed kernels and of the sm_100a ones (assembled only), a short table last. Everything it runs was compiled here by bench/gpu-prep.sh into
# gpu-carry/ (kernel bundles and lowp-gpu-run, which links no LLVM):
#   bash bench/gpu-prep.sh
#   run(command="bash bench/gpu.sh", carry=["gpu-carry"])
# Full logs go to $OUT (or ./out); the table is the end of stdout, and each row is also
# appended to $OUT/table.txt as it is made (what a run cut short still brings back).
# The device call's limit is 600 s: the phases share LOWP_GPU_BUDGET seconds (default
# 540), each leaving its successors' reserve (timing 150 s, peers 90 s, SASS 40 s); a
# bundle left out for time gets a "skipped" row.
set -u
RUNNER=${LOWP_GPU_RUN:-gpu-carry/lowp-gpu-run}
B=gpu-carry/bundles
OUTDIR=${OUT:-out}
mkdir -p "$OUTDIR"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,temperature.gpu --format=csv \
  > "$OUTDIR/gpu.csv" 2>&1 || true
status=0
table=()
: > "$OUTDIR/table.txt"
BUDGET=${LOWP_GPU_BUDGET:-540}
row() { table+=("$1"); printf '%s\n' "$1" >> "$OUTDIR/table.txt"; }
# The bundles of kind $1 (check, time): the wgmma kernels (auto's choice first), then
# mma.sync, the generic kernel last, so that a cut budget leaves out the least telling.
bundles() {
  local p
  for p in auto wgmma mma-sync generic; do
    compgen -G "$B/$1-$p-*" | sort
  done
}
# Seconds this phase may still spend, keeping $1 for the phases after it.
spare() { echo $((BUDGET - SECONDS - $1)); }
# The timeout for one call: $1, or less where the phase's spare time is shorter (0: skip).
within() { # want, reserve
  local s
  s=$(spare "$2")
  if [ "$s" -lt 5 ]; then echo 0; elif [ "$s" -lt "$1" ]; then echo "$s"; else echo "$1"; fi
}

# ---- numerics: every bundle check-*, two seeds, each with lowp-run --specials's values
# written in (infinities and NaN codes in both operands, the formats' largest magnitudes,
# a NaN block scale: the rest of the inputs stay random); the runner poisons the output,
# so an element a kernel does not write fails.
# Both seeds in one process: the driver compiles each kernel's PTX once.
for dir in $(bundles check); do
  t=$(within 30 280)
  if [ "$t" = 0 ]; then row "$(basename "$dir") | skipped (device budget)"; status=1; continue; fi
  # A kernel that deadlocks (an mbarrier phase wrong) costs 30 s, not the device budget.
  lines=$(timeout "$t" $RUNNER "$dir" --seed 1,2 --specials --check 2>&1 | tee -a "$OUTDIR/check.log" | grep -E '^check:|lowp-gpu-run:')
  if [ "$(grep -c '^check: PASS' <<< "$lines")" = 2 ]; then
    r=PASS
  else
    r="FAIL ($(grep -v '^check: PASS' <<< "$lines" | head -1))"
    [ -z "$lines" ] && r="FAIL (no result: timeout or crash)"
    status=1
  fi
  row "$(basename "$dir") seeds=1,2 specials | $r"
done

# ---- the same inputs through torch._scaled_mm (cuBLASLt): every FP8 per-tensor check
# bundle's result beside the peer's, both against the oracle (bench/vs_torch.py).
if python3 -c "import torch" 2>/dev/null; then
  DUMP=$(mktemp -d)
  for dir in "$B"/check-*; do
    p="$dir/problem.txt"
    grep -qE '^lhs = f8e(4m3|5m2)$' "$p" && grep -qE '^rhs = f8e(4m3|5m2)$' "$p" \
      && grep -q '^lhs_layout = per_tensor$' "$p" && grep -q '^rhs_layout = per_tensor$' "$p" \
      || continue
    t=$(within 30 240)
    [ "$t" = 0 ] && continue
    timeout "$t" $RUNNER "$dir" --seed 1 --dump "$DUMP" >> "$OUTDIR/vs_torch.log" 2>&1
  done
  while read -r l; do row "$l"; done < <(python3 gpu-carry/vs_torch.py "$DUMP"/* 2>&1 | tee -a "$OUTDIR/vs_torch.log")
  rm -rf "$DUMP"
else
  row "vs_torch | torch not importable"
fi

# ---- timing: median of 10 launches (events), after one warm-up.
for dir in $(bundles time); do
  t=$(within 60 130)
  if [ "$t" = 0 ]; then row "$(basename "$dir") | skipped (device budget)"; continue; fi
  line=$(timeout "$t" $RUNNER "$dir" --bench 10 2>&1 | tee -a "$OUTDIR/bench.log" | grep -E '^bench:|lowp-gpu-run:' | tail -1)
  [ -z "$line" ] && line="no result (timeout or crash)"
  row "$(basename "$dir") | $line"
done
t=$(within 90 40)
if [ "$t" = 0 ]; then
  row "peer | skipped (device budget)"
elif python3 -c "import torch" 2>/dev/null && [ -f gpu-carry/torch_anchors.py ]; then
  timeout "$t" python3 gpu-carry/torch_anchors.py --shapes 8192x8192x8192,4096x4096x4096,16x8192x8192,16x4096x8192 \
    --json "$OUTDIR/torch.json" > "$OUTDIR/torch.log" 2>&1 || status=1
  while read -r l; do row "peer | $l"; done < <(tail -n 20 "$OUTDIR/torch.log")
else
  row "peer | torch not importable: no peer figures"
fi

# ---- SASS facts: the image's ptxas on every timed kernel (sm_90a) and on the sm_100a ones
# (assembled only), 16 at a time: registers, spills, the tensor-core instructions in SASS.
PTXAS=$(command -v ptxas || echo /usr/local/cuda/bin/ptxas)
CUOBJDUMP=$(command -v cuobjdump || echo /usr/local/cuda/bin/cuobjdump)
if [ -x "$PTXAS" ]; then
  mkdir -p "$OUTDIR/sass"
  assemble() { # bundle dir
    local name chip
    name=$(basename "$1")
    chip=$(sed -n 's/^chip = //p' "$1/launch.txt")
    "$PTXAS" -arch="$chip" -v "$1/kernel.ptx" -o "$OUTDIR/sass/$name.cubin" \
      > "$OUTDIR/sass/$name.log" 2>&1 && echo ok >> "$OUTDIR/sass/$name.log"
  }
  export -f assemble
  export PTXAS OUTDIR
  t=$(within 180 10)
  [ "$t" = 0 ] || timeout "$t" bash -c 'ls -d "$0"/time-* "$0"/sass-* | xargs -P 16 -I{} bash -c "assemble {}"' "$B" || true
  for dir in "$B"/time-* "$B"/sass-*; do
    name=$(basename "$dir")
    log="$OUTDIR/sass/$name.log"
    if [ -f "$log" ] && tail -1 "$log" | grep -q '^ok$'; then
      regs=$(grep -o 'Used [0-9]* registers' "$log" | head -1)
      spills=$(grep -o '[0-9]* bytes spill stores, [0-9]* bytes spill loads' "$log" | head -1)
      ops=$("$CUOBJDUMP" --dump-sass "$OUTDIR/sass/$name.cubin" 2>/dev/null \
        | grep -oE '\b(QGMMA|HGMMA|UTC[A-Z]*MMA|HMMA|WARPGROUP)[.A-Za-z0-9_]*' | sort | uniq -c \
        | awk '{printf "%s %s; ", $1, $2}')
      # ptxas serializes wgmma it cannot prove safe to overlap (and says why).
      serial=$(grep -m1 -io 'wgmma.mma_async instructions are serialized[^.]*' "$log")
      row "sass $name | $regs | $spills | $ops${serial:+| $serial}"
    else
      row "sass $name | ptxas FAILED or not run: $(grep -m1 -iE 'error|fatal' "$log" 2>/dev/null)"
      status=1
    fi
  done
else
  row "sass | no ptxas on this machine"
fi

echo "---- $(head -2 "$OUTDIR/gpu.csv" | tail -1)"
printf '%s\n' "${table[@]}"
exit $status
