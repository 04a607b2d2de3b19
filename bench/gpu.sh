#!/usr/bin/env bash
# One prepared device run (see /work/.library/device/METHOD.md): numerics first, then
# timing of lowp's GPU kernels (FP8 wgmma, mma.sync, generic) beside the torch peers, a short
# table last.
#
# Here (lowp-run links all of static MLIR: 266 MB, 177 MB stripped, 32 MB after xz -6, 44 s
# on 2 cores; a carry takes 64 MiB):
#   cargo build --release -p lowp-run && mkdir -p gpu-carry &&
#   strip -o gpu-carry/lowp-run target/release/lowp-run && xz -T2 -6 -f gpu-carry/lowp-run &&
#   cp ../shared/bench/torch_anchors.py gpu-carry/
# Device: run(command="bash bench/gpu.sh", carry=["gpu-carry"])
# Full logs go to $OUT (or ./out); the table is the end of stdout.
set -u
RUN=${LOWP_RUN:-gpu-carry/lowp-run}
OUTDIR=${OUT:-out}
mkdir -p "$OUTDIR"
if [ ! -x "$RUN" ] && [ -f "$RUN.xz" ]; then
  xz -dkc "$RUN.xz" > "$RUN" 2>/dev/null ||
    python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2],'wb'))" "$RUN.xz" "$RUN"
  chmod +x "$RUN"
fi
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,temperature.gpu --format=csv \
  > "$OUTDIR/gpu.csv" 2>&1 || true
status=0
table=()

# ---- numerics: every format family and layout, edge values, odd sizes; output poisoned
# with NaN by the runner, so an unwritten element fails.
checks=(
  "--m 48 --n 40 --k 128 --lhs f4e2m1 --rhs f4e2m1 --layout mx --packed --bias"
  "--m 33 --n 17 --k 96 --lhs f8e4m3 --rhs f8e5m2 --layout per_tensor --rhs-layout per_channel"
  "--m 16 --n 24 --k 64 --lhs f4e2m1 --rhs f4e2m1 --layout nvfp4+global --bf16"
  "--m 20 --n 12 --k 256 --lhs f6e2m3 --rhs f6e3m2 --layout mx --bias"
  "--m 9 --n 40 --k 384 --lhs f8e4m3 --rhs f8e4m3 --layout blockwise/1x128 --rhs-layout blockwise/128x128"
  "--m 64 --n 64 --k 64 --lhs f8e4m3 --rhs f4e2m1 --layout mx --specials"
  "--m 256 --n 256 --k 512 --lhs f4e3m0 --rhs f8e3m4 --layout mx"
  "--m 512 --n 384 --k 1024 --lhs f4e2m1 --rhs f4e2m1 --layout mx --packed"
)
for c in "${checks[@]}"; do
  for kernel in auto mma-sync generic; do
    for seed in 1 2; do
      [ $kernel = mma-sync ] && case "$c" in *f8e3m4*) continue ;; esac
      line=$($RUN --gen $c --seed $seed --target cuda --kernel $kernel --check 2>&1 \
        | tee -a "$OUTDIR/check.log" | tail -1)
      case "$line" in check:\ PASS*) r=PASS ;; *) r="FAIL ($line)"; status=1 ;; esac
      table+=("check $kernel | $c seed=$seed | $r")
    done
  done
done
# The FP8 kernels' ragged edges: K not a multiple of 4 (code-by-code loads), M and N not
# multiples of the tiles, 16-blocks (half-width K steps).
for c in "--m 130 --n 70 --k 250 --lhs f8e4m3 --rhs f8e5m2 --layout per_tensor" \
         "--m 65 --n 33 --k 18 --lhs f8e5m2 --rhs f8e5m2 --layout per_channel --bias" \
         "--m 100 --n 72 --k 96 --lhs f4e2m1 --rhs f6e3m2 --layout nvfp4 --rhs-layout mx"; do
  for kernel in wgmma mma-sync; do
    line=$($RUN --gen $c --target cuda --kernel $kernel --check 2>&1 | tee -a "$OUTDIR/check.log" | tail -1)
    case "$line" in check:\ PASS*) r=PASS ;; *) r="FAIL ($line)"; status=1 ;; esac
    table+=("check $kernel | $c | $r")
  done
done

# ---- timing: lowp's kernels (FP8 wgmma, FP8 mma.sync; generic, no tensor cores) and the
# peers at the same shapes.
shapes=(8192x8192x8192 4096x4096x4096 16x8192x8192)
for s in "${shapes[@]}"; do
  IFS=x read -r m n k <<< "$s"
  for f in "f4e2m1 --layout mx --packed" "f8e4m3 --layout per_tensor"; do
    for kernel in wgmma mma-sync generic; do
      [ "$s" = 8192x8192x8192 ] && [ $kernel = generic ] && continue
      line=$($RUN --gen --m $m --n $n --k $k --lhs ${f%% *} --rhs $f --target cuda \
        --kernel $kernel --bench 10 2>&1 | tee -a "$OUTDIR/bench.log" | tail -1)
      table+=("lowp $kernel | $s ${f%% *} | $line")
    done
  done
done
if python3 -c "import torch" 2>/dev/null; then
  python3 gpu-carry/torch_anchors.py --shapes "$(IFS=,; echo "${shapes[*]}")" \
    --json "$OUTDIR/torch.json" > "$OUTDIR/torch.log" 2>&1 || status=1
  while read -r l; do table+=("peer | $l"); done < <(tail -n 12 "$OUTDIR/torch.log")
else
  table+=("peer | torch not importable: no peer figures")
fi

echo "---- $(head -2 "$OUTDIR/gpu.csv" | tail -1)"
printf '%s\n' "${table[@]}"
exit $status
