#!/usr/bin/env bash
# One prepared device run (see /work/.library/device/METHOD.md): numerics first, then
# timing of lowp's GPU kernels (FP8 wgmma pipelines, mma.sync, generic) beside the torch
# peers, then ptxas / cuobjdump facts (registers, spills, SASS tensor-core instructions) of
# the timed kernels and of the sm_100a ones (assembled only), a short table last. Everything it runs was compiled here by bench/gpu-prep.sh into
# gpu-carry/ (kernel bundles and lowp-gpu-run, which links no LLVM):
#   bash bench/gpu-prep.sh
#   run(command="bash bench/gpu.sh", carry=["gpu-carry"])
# Full logs go to $OUT (or ./out); the table is the end of stdout.
set -u
RUNNER=${LOWP_GPU_RUN:-gpu-carry/lowp-gpu-run}
B=gpu-carry/bundles
OUTDIR=${OUT:-out}
mkdir -p "$OUTDIR"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,temperature.gpu --format=csv \
  > "$OUTDIR/gpu.csv" 2>&1 || true
status=0
table=()

# ---- numerics: every bundle check-*, two seeds; the runner poisons the output, so an
# element a kernel does not write fails.
for dir in "$B"/check-*; do
  for seed in 1 2; do
    # A kernel that deadlocks (an mbarrier phase wrong) costs 30 s, not the device budget.
    line=$(timeout 30 $RUNNER "$dir" --seed $seed --check 2>&1 | tee -a "$OUTDIR/check.log" | grep -E '^check:|lowp-gpu-run:' | tail -1)
    [ -z "$line" ] && line="no result (timeout or crash)"
    case "$line" in check:\ PASS*) r=PASS ;; *) r="FAIL ($line)"; status=1 ;; esac
    table+=("$(basename "$dir") seed=$seed | $r")
  done
done

# ---- timing: median of 10 launches (events), after one warm-up.
for dir in "$B"/time-*; do
  line=$(timeout 60 $RUNNER "$dir" --bench 10 2>&1 | tee -a "$OUTDIR/bench.log" | grep -E '^bench:|lowp-gpu-run:' | tail -1)
  [ -z "$line" ] && line="no result (timeout or crash)"
  table+=("$(basename "$dir") | $line")
done
if python3 -c "import torch" 2>/dev/null && [ -f gpu-carry/torch_anchors.py ]; then
  python3 gpu-carry/torch_anchors.py --shapes 8192x8192x8192,4096x4096x4096,16x8192x8192,16x4096x8192 \
    --json "$OUTDIR/torch.json" > "$OUTDIR/torch.log" 2>&1 || status=1
  while read -r l; do table+=("peer | $l"); done < <(tail -n 20 "$OUTDIR/torch.log")
else
  table+=("peer | torch not importable: no peer figures")
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
  timeout 180 bash -c 'ls -d "$0"/time-* "$0"/sass-* | xargs -P 16 -I{} bash -c "assemble {}"' "$B" || true
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
      table+=("sass $name | $regs | $spills | $ops${serial:+| $serial}")
    else
      table+=("sass $name | ptxas FAILED: $(grep -m1 -iE 'error|fatal' "$log" 2>/dev/null)")
      status=1
    fi
  done
else
  table+=("sass | no ptxas on this machine")
fi

echo "---- $(head -2 "$OUTDIR/gpu.csv" | tail -1)"
printf '%s\n' "${table[@]}"
exit $status
