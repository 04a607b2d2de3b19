#!/usr/bin/env bash
# One prepared device run (see /work/.library/device/METHOD.md): numerics first, then
# timing of lowp's GPU kernels (FP8 wgmma pipelines, mma.sync, generic) beside the torch peers, a
# short table last. Everything it runs was compiled here by bench/gpu-prep.sh into
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
  python3 gpu-carry/torch_anchors.py --shapes 8192x8192x8192,4096x4096x4096,16x8192x8192 \
    --json "$OUTDIR/torch.json" > "$OUTDIR/torch.log" 2>&1 || status=1
  while read -r l; do table+=("peer | $l"); done < <(tail -n 12 "$OUTDIR/torch.log")
else
  table+=("peer | torch not importable: no peer figures")
fi

echo "---- $(head -2 "$OUTDIR/gpu.csv" | tail -1)"
printf '%s\n' "${table[@]}"
exit $status
