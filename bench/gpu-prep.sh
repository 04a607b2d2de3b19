#!/usr/bin/env bash
# Prepare the one device run of bench/gpu.sh, here (no GPU needed): compile every kernel it
# runs to PTX with lowp-run --save-kernel, and build lowp-gpu-run (no LLVM linked, a few MB)
# into gpu-carry/, beside the peers' script.
#   bash bench/gpu-prep.sh && run(command="bash bench/gpu.sh", carry=["gpu-carry"])
# Bundle names: check-<kernel>-<n> (numerics, both seeds), time-<kernel>-<shape>-<format>,
# sass-<kernel>-<n> (only assembled: sm_100a).
set -eu
cd "$(dirname "$0")/.."
cargo build --release -p lowp-run -p lowp-gpu-run
RUN=target/release/lowp-run
rm -rf gpu-carry && mkdir -p gpu-carry/bundles
strip -o gpu-carry/lowp-gpu-run target/release/lowp-gpu-run
cp ../shared/bench/torch_anchors.py gpu-carry/ 2>/dev/null || echo "no torch_anchors.py: the peers are skipped"
cp bench/vs_torch.py gpu-carry/

save() { # name, flags...
  local name=$1; shift
  $RUN --gen "$@" --target cuda --save-kernel "gpu-carry/bundles/$name" > /dev/null
}
# save, where the kernel may refuse the op (exit 1, one line); a crash stops the preparation.
save_or_refuse() { # name, flags...
  save "$@" 2>/dev/null || {
    local rc=$?
    [ $rc -lt 128 ] || { echo "lowp-run crashed (exit $rc): $1"; exit 1; }
  }
}

# ---- numerics: every format family and layout, edge values, odd sizes.
checks=(
  "--m 48 --n 40 --k 128 --lhs f4e2m1 --rhs f4e2m1 --layout mx --packed --bias"
  "--m 33 --n 17 --k 96 --lhs f8e4m3 --rhs f8e5m2 --layout per_tensor --rhs-layout per_channel"
  "--m 16 --n 24 --k 64 --lhs f4e2m1 --rhs f4e2m1 --layout nvfp4+global --bf16"
  "--m 20 --n 12 --k 256 --lhs f6e2m3 --rhs f6e3m2 --layout mx --bias"
  "--m 9 --n 40 --k 384 --lhs f8e4m3 --rhs f8e4m3 --layout blockwise/1x128 --rhs-layout blockwise/128x128"
  "--m 256 --n 256 --k 512 --lhs f4e3m0 --rhs f8e3m4 --layout mx"
  "--m 512 --n 384 --k 1024 --lhs f4e2m1 --rhs f4e2m1 --layout mx --packed"
  "--m 130 --n 70 --k 250 --lhs f8e4m3 --rhs f8e5m2 --layout per_tensor"
  "--m 65 --n 33 --k 18 --lhs f8e5m2 --rhs f8e5m2 --layout per_channel --bias"
  "--m 100 --n 72 --k 96 --lhs f4e2m1 --rhs f6e3m2 --layout nvfp4 --rhs-layout mx"
  "--m 33 --n 17 --k 96 --lhs f8e4m3fnuz --rhs f8e5m2fnuz --layout per_channel"
  "--m 256 --n 200 --k 4096 --lhs f8e4m3 --rhs f8e4m3 --layout per_tensor"
  "--m 300 --n 136 --k 672 --lhs f6e3m2 --rhs f4e2m1 --layout blockwise/1x128 --rhs-layout mx"
  "--m 16 --n 256 --k 2048 --lhs f8e4m3 --rhs f8e4m3 --layout per_tensor --bias"
  "--m 5 --n 200 --k 1152 --lhs f4e2m1 --rhs f4e2m1 --layout mx --packed"
  "--m 200 --n 136 --k 416 --lhs f4e2m1 --rhs f8e4m3 --layout mx --packed --bias"
  "--m 140 --n 72 --k 384 --lhs f8e5m2 --rhs f6e2m3 --layout per_channel --rhs-layout mx"
  "--m 256 --n 256 --k 512 --lhs f8e4m3 --rhs f8e5m2 --layout mx --bias"
  "--m 256 --n 136 --k 512 --lhs f4e2m1 --rhs f4e2m1 --layout nvfp4+global --packed --bias"
  "--m 16 --n 200 --k 1024 --lhs f4e2m1 --rhs f8e4m3 --layout nvfp4 --rhs-layout per_channel"
  "--m 200 --n 136 --k 512 --lhs f8e3m4 --rhs f8e4m3fnuz --layout per_channel --bias"
  "--m 40 --n 72 --k 256 --lhs f8e2m5 --rhs f8e5m2 --layout per_tensor"
  "--m 200 --n 136 --k 512 --lhs f8e3m4 --rhs f8e4m3fnuz --layout mx --rhs-layout blockwise/128x128 --bias"
  "--m 200 --n 136 --k 512 --lhs f8e5m2fnuz --rhs f8e6m1 --layout per_channel --bias"
  "--m 40 --n 72 --k 256 --lhs f8e7m0 --rhs f8e4m3 --layout mx"
  "--m 200 --n 136 --k 512 --lhs f8e5m2 --rhs f8e6m1 --layout per_channel --bias"
  "--m 40 --n 72 --k 256 --lhs f8e7m0 --rhs f8e5m2 --layout mx"
  "--m 130 --n 72 --k 256 --lhs f4e2m1 --rhs f8e4m3 --layout mx/8 --packed --bias"
  "--m 130 --n 72 --k 250 --lhs f8e3m4 --rhs f8e4m3 --layout mx --bias"
  "--m 40 --n 136 --k 200 --lhs f8e6m1 --rhs f8e5m2 --layout per_channel"
  # Shapes cuBLASLt takes (multiples of 16), for vs_torch.py: auto's TMA square block, and
  # its split pair of skinny blocks (16 x 8192: two blocks an SM).
  "--m 256 --n 256 --k 1024 --lhs f8e4m3 --rhs f8e4m3 --layout per_tensor --bias"
  "--m 192 --n 144 --k 4096 --lhs f8e5m2 --rhs f8e4m3 --layout per_tensor"
  "--m 16 --n 8192 --k 1024 --lhs f8e4m3 --rhs f8e5m2 --layout per_tensor --bias"
  "--m 16 --n 8192 --k 1024 --lhs f4e2m1 --rhs f4e2m1 --layout mx --packed"
  # DeepSeek's FP8 layout on the square block (B's scale one value over its 128 columns:
  # read once a stage, Kernel::uniform), and 64-row B blocks beside it (two a block).
  "--m 256 --n 384 --k 1024 --lhs f8e4m3 --rhs f8e4m3 --layout blockwise/1x128 --rhs-layout blockwise/128x128 --bias"
  "--m 256 --n 384 --k 1024 --lhs f8e4m3 --rhs f8e5m2 --layout blockwise/1x128 --rhs-layout blockwise/64x128"
  # The register-fed decode block's B scales in its ring (MX's 4 bytes a row and stage,
  # f32 1 x 32 blocks' 16) and its two stages an iteration on odd ranges (6 + 5 stages
  # split by shape; 5 not split).
  "--m 16 --n 136 --k 1408 --lhs f6e2m3 --rhs f6e3m2 --layout mx --bias"
  "--m 7 --n 72 --k 640 --lhs f4e2m1 --rhs f8e4m3 --layout mx --packed --rhs-layout blockwise/1x32"
  # MXFP4 with K not whole stages of 128 (gpt-oss's 2880: scale rows of 90 bytes, copied as
  # windows and settled before the folds read them, aff9fcd).
  "--m 136 --n 200 --k 2880 --lhs f4e2m1 --rhs f4e2m1 --layout mx --packed --bias"
)
i=0
for c in "${checks[@]}"; do
  # auto: the skinny wgmma block where M <= 64, the square one above; wgmma-skinny forces
  # the skinny one on the larger M too; wgmma-registers takes M <= 16 with K whole 128s.
  for kernel in auto wgmma-skinny wgmma-registers wgmma-specialized wgmma-tma mma-sync generic; do
    # shellcheck disable=SC2086
    save_or_refuse "check-$kernel-$i" $c --kernel $kernel
  done
  i=$((i + 1))
done
printf '%s\n' "${checks[@]}" > gpu-carry/bundles/checks.txt
# translate-ahead=on (unmeasured, off by default): the barrier pipeline's checks whose
# operands are translated, square and skinny, each thread translating stage s + 1 while
# stage s's instructions run.
i=0
for c in "${checks[@]}"; do
  case "$c" in
    *f4e*|*f6e*|*e3m4*|*e2m5*|*fnuz*|*e6m1*|*e7m0*)
      for kernel in wgmma wgmma-skinny; do
        # shellcheck disable=SC2086
        save_or_refuse "check-$kernel-ahead-$i" $c --kernel $kernel --translate-ahead on
      done ;;
  esac
  i=$((i + 1))
done
# The square MXFP4 block folds its E8M0 scales into the translated codes where a block's
# scales allow, with B anchored to one code where all of its block's allow (the generated
# ones do): the loop by rows and the per-32 one, which blocks whose scales do not allow
# still run, checked on their own.
for kernel in wgmma wgmma-specialized; do
  # shellcheck disable=SC2086
  save "check-$kernel-nofold-6" ${checks[6]} --kernel $kernel --fold-scales off
  # shellcheck disable=SC2086
  save "check-$kernel-rows-6" ${checks[6]} --kernel $kernel --fold-scales rows
  # NVFP4 x NVFP4 on the f16 route (codes times their UE4M3 scales as f16, k16 f16
  # instructions), 136 rows of B: the last tile's rows clamped.
  # shellcheck disable=SC2086
  save "check-$kernel-f16-18" ${checks[18]} --kernel $kernel --nvfp4 f16
  # E4M3 (per channel) beside NVFP4 on the f16 route: widened as stored, its scales in the
  # epilogue.
  save "check-$kernel-f16-w4a8" --m 256 --n 136 --k 512 --lhs f8e4m3 --rhs f4e2m1 \
    --layout per_channel --rhs-layout nvfp4+global --packed --bias --kernel $kernel --nvfp4 f16
done
# The split route (nvfp4=split; auto takes the f16 route for these) on every NVFP4 check
# line that the pipeline takes.
i=0
for c in "${checks[@]}"; do
  case "$c" in
    *nvfp4*)
      for kernel in wgmma wgmma-specialized; do
        # shellcheck disable=SC2086
        save_or_refuse "check-$kernel-split-$i" $c --kernel $kernel --nvfp4 split
      done ;;
  esac
  i=$((i + 1))
done
# The skinny block on the f16 route, split among a cluster (16 x 200: 4 blocks); and with
# NVFP4 A beside E4M3 B (check 19).
save "check-wgmma-f16-split-k" --m 16 --n 200 --k 1024 --lhs f4e2m1 --rhs f4e2m1 \
  --layout nvfp4 --rhs-layout nvfp4+global --packed --bias --kernel wgmma --nvfp4 f16
# shellcheck disable=SC2086
save "check-wgmma-f16-19" ${checks[19]} --kernel wgmma --nvfp4 f16

# A smaller ring (stages=4) and K split in 4 (8 at 4096 columns): four skinny blocks a
# multiprocessor instead of two.
save "check-wgmma-s4-split-mxfp4" --m 16 --n 8192 --k 1024 --lhs f4e2m1 --rhs f4e2m1 \
  --layout mx --packed --kernel wgmma --stages 4 --split-k 4
save "check-wgmma-s4-split-fp8" --m 16 --n 4096 --k 2048 --lhs f8e4m3 --rhs f8e5m2 \
  --layout per_tensor --bias --kernel wgmma --stages 4 --split-k 8

# persistent=on: TMA's square block, one block per SM looping over its tiles (the ring's
# turns carrying on across tiles): 187 tiles (55 blocks take two) and 384 (three each).
save "check-wgmma-tma-persistent-1" --m 2100 --n 1290 --k 416 --lhs f8e4m3 --rhs f8e5m2 \
  --layout per_tensor --kernel wgmma-tma --persistent on
save "check-wgmma-tma-persistent-2" --m 3000 --n 2000 --k 256 --lhs f8e5m2 --rhs f8e4m3 \
  --layout per_channel --bias --kernel wgmma-tma --persistent on

# store-c=tma: the warp-specialized square block's C staged in shared memory and stored by
# TMA: by tile (partial tiles, bias), bf16 C, persistent (187 tiles), and the block whose
# producers copy the stages (cp.async, per channel with a bias). The runner poisons C: an
# element no box writes fails.
save "check-wgmma-tma-store-1" --m 300 --n 200 --k 416 --lhs f8e4m3 --rhs f8e5m2 \
  --layout per_tensor --bias --kernel wgmma-tma --store-c tma
save "check-wgmma-tma-store-bf16" --m 200 --n 136 --k 288 --lhs f8e5m2 --rhs f8e4m3 \
  --layout per_channel --bf16 --kernel wgmma-tma --store-c tma
save "check-wgmma-tma-persistent-store" --m 2100 --n 1288 --k 416 --lhs f8e4m3 --rhs f8e5m2 \
  --layout per_tensor --kernel wgmma-tma --persistent on --store-c tma
save "check-wgmma-specialized-store" --m 256 --n 136 --k 384 --lhs f8e5m2 --rhs f8e4m3 \
  --layout per_channel --bias --kernel wgmma-specialized --store-c tma

# block-n=192: 128 x 192 square blocks (m64n192k32, one register set), by TMA (by tile and
# persistent: 153 tiles) and by the barrier pipeline (translated E2M1 beside E4M3).
save "check-wgmma-tma-n192" --m 300 --n 400 --k 416 --lhs f8e4m3 --rhs f8e5m2 \
  --layout per_tensor --kernel wgmma-tma --block-n 192
save "check-wgmma-tma-persistent-n192" --m 2100 --n 1700 --k 288 --lhs f8e4m3 --rhs f8e4m3 \
  --layout per_tensor --rhs-layout per_channel --bias --kernel wgmma-tma --persistent on --block-n 192
save "check-wgmma-n192-w4a8" --m 300 --n 400 --k 512 --lhs f8e4m3 --rhs f4e2m1 \
  --layout per_tensor --rhs-layout per_channel --packed --kernel wgmma --block-n 192

# translate-once=on: both MXFP4 operands translated once into E5M2 workspaces (DeepSeek's
# scale layout), the TMA block on them, the barrier pipeline for the tiles whose scales
# do not fold (gpu.sh's --specials: a NaN block scale sends its tiles there). Ragged tiles
# (200 x 136), codes one per byte, and a custom 4-bit format.
save "check-auto-once-1" --m 512 --n 384 --k 1024 --lhs f4e2m1 --rhs f4e2m1 --layout mx \
  --packed --translate-once on
save "check-auto-once-2" --m 200 --n 136 --k 384 --lhs f4e2m1 --rhs f4e2m1 --layout mx \
  --packed --bias --translate-once on
save "check-auto-once-3" --m 136 --n 256 --k 2048 --lhs f4e2m1 --rhs f4e2m1 --layout mx \
  --translate-once on
save "check-auto-once-4" --m 256 --n 256 --k 512 --lhs f4e3m0 --rhs f4e3m0 --layout mx \
  --packed --translate-once on
# FP6 (word arithmetic): E2M3 into E4M3, E3M2 into E5M2.
save "check-auto-once-5" --m 256 --n 200 --k 1024 --lhs f6e2m3 --rhs f6e3m2 --layout mx \
  --bias --translate-once on
# K not whole stages (the workspaces padded with zero codes): gpt-oss's 2880, and FP6 at 224.
save "check-auto-once-6" --m 136 --n 200 --k 2880 --lhs f4e2m1 --rhs f4e2m1 --layout mx \
  --packed --bias --translate-once on
save "check-auto-once-7" --m 256 --n 200 --k 224 --lhs f6e2m3 --rhs f6e3m2 --layout mx \
  --translate-once on

# Grids beyond 65535 rows of blocks, folded into z (lowp-fold-grid): the generic kernel's
# and mma.sync's 64-row tiles past their unfolded limit (4,194,240 rows).
save "check-generic-tall" --m 4200001 --n 8 --k 32 --lhs f8e4m3 --rhs f8e4m3 \
  --layout per_tensor --kernel generic
save "check-mma-sync-tall" --m 4200001 --n 8 --k 32 --lhs f8e4m3 --rhs f8e5m2 \
  --layout per_channel --kernel mma-sync

# ---- timing: FP8 per-tensor and MXFP4 at the anchors' shapes, each NVIDIA kernel (wgmma
# takes the skinny block at 16 rows, split-K in clusters of 2 at both decode shapes;
# wgmma-specialized is the square one there; wgmma-tma is TMA-fed, warp-specialized
# square above M = 64 (auto's choice for FP8 per tensor) and the skinny block at M = 16,
# FP8 only: MXFP4's packed codes are translated on the way in).
# The FP8 square block's cost a tile apart from its stages (the ring's fill, the
# epilogue's 64 KiB of f32 C, which no tensor work overlaps in a block per tile): auto's
# TMA block and the persistent one at K = 4096 and 16384 beside 8192 (time = stages x a
# + tiles x b).
for k in 4096 16384; do
  save "time-auto-8192x8192x$k-f8e4m3" --m 8192 --n 8192 --k $k --lhs f8e4m3 --rhs f8e4m3 \
    --layout per_tensor
  save "time-wgmma-tma-persistent-8192x8192x$k-f8e4m3" --m 8192 --n 8192 --k $k \
    --lhs f8e4m3 --rhs f8e4m3 --layout per_tensor --kernel wgmma-tma --persistent on
  save "time-wgmma-tma-persistent-store-8192x8192x$k-f8e4m3" --m 8192 --n 8192 --k $k \
    --lhs f8e4m3 --rhs f8e4m3 --layout per_tensor --kernel wgmma-tma --persistent on \
    --store-c tma
done
for s in 8192x8192x8192 4096x4096x4096 16x8192x8192 16x4096x8192; do
  IFS=x read -r m n k <<< "$s"
  for f in "f8e4m3 --layout per_tensor" "f4e2m1 --layout mx --packed"; do
    for kernel in auto wgmma wgmma-specialized wgmma-tma mma-sync generic; do
      [ "$s" = 8192x8192x8192 ] && [ $kernel = generic ] && continue
      [ $kernel = wgmma-tma ] && [ "${f%% *}" != f8e4m3 ] && continue
      # shellcheck disable=SC2086
      save "time-$kernel-$s-${f%% *}" --m $m --n $n --k $k --lhs ${f%% *} --rhs $f --kernel $kernel
    done
  done
  # wgmma-tma's square block (auto's for FP8 used as stored, per tensor) with B multicast
  # in clusters of 2: half the rate of unicast on the H200 (bench/NOTES.md, 2026-12-04).
  case $s in
    8192x8192x8192 | 4096x4096x4096)
      save "time-wgmma-tma-multicast-$s-f8e4m3" --m $m --n $n --k $k --lhs f8e4m3 --rhs f8e4m3 \
        --layout per_tensor --kernel wgmma-tma --multicast 2
      # (A deeper ring: whether the pair's coupling, each producer waiting for both blocks'
      # consumers, is what halves it.)
      save "time-wgmma-tma-multicast-s6-$s-f8e4m3" --m $m --n $n --k $k --lhs f8e4m3 \
        --rhs f8e4m3 --layout per_tensor --kernel wgmma-tma --multicast 2 --stages 6
      # Persistent (one block per SM looping over its tiles) against a block per tile, and
      # 128 x 192 blocks (block-n=192: a sixth fewer shared-memory bytes a product).
      save "time-wgmma-tma-persistent-$s-f8e4m3" --m $m --n $n --k $k --lhs f8e4m3 \
        --rhs f8e4m3 --layout per_tensor --kernel wgmma-tma --persistent on
      for kernel in wgmma-tma wgmma; do
        save "time-$kernel-n192-$s-f8e4m3" --m $m --n $n --k $k --lhs f8e4m3 --rhs f8e4m3 \
          --layout per_tensor --kernel $kernel --block-n 192
      done
      save "time-wgmma-tma-persistent-n192-$s-f8e4m3" --m $m --n $n --k $k --lhs f8e4m3 \
        --rhs f8e4m3 --layout per_tensor --kernel wgmma-tma --persistent on --block-n 192
      # A deeper ring for the block per tile (4 slots by default; 6: 192 KiB), whose
      # producer then runs further ahead of the boxes' latency.
      save "time-wgmma-tma-s6-$s-f8e4m3" --m $m --n $n --k $k --lhs f8e4m3 --rhs f8e4m3 \
        --layout per_tensor --kernel wgmma-tma --stages 6
      # C stored by TMA from shared memory (the warpgroups go on while it drains), by tile
      # and persistent.
      save "time-wgmma-tma-store-$s-f8e4m3" --m $m --n $n --k $k --lhs f8e4m3 \
        --rhs f8e4m3 --layout per_tensor --kernel wgmma-tma --store-c tma
      save "time-wgmma-tma-persistent-store-$s-f8e4m3" --m $m --n $n --k $k --lhs f8e4m3 \
        --rhs f8e4m3 --layout per_tensor --kernel wgmma-tma --persistent on --store-c tma
      # (5 slots and the 64 KiB area: 225 KiB, the most that fits; 6 store directly.)
      save "time-wgmma-tma-persistent-s5-store-$s-f8e4m3" --m $m --n $n --k $k \
        --lhs f8e4m3 --rhs f8e4m3 --layout per_tensor --kernel wgmma-tma --persistent on \
        --stages 5 --store-c tma
      # A deeper ring (6 slots: 192 KiB) for the producer to run further into the next tile
      # while the consumers store C.
      save "time-wgmma-tma-persistent-s6-$s-f8e4m3" --m $m --n $n --k $k --lhs f8e4m3 \
        --rhs f8e4m3 --layout per_tensor --kernel wgmma-tma --persistent on --stages 6
      # MXFP4 translated once (three launches: translation, TMA block, fallback), and the
      # TMA block alone on what the translation leaves (E5M2 in DeepSeek's scale layout).
      save "time-auto-once-$s-f4e2m1" --m $m --n $n --k $k --lhs f4e2m1 --rhs f4e2m1 \
        --layout mx --packed --translate-once on
      save "time-wgmma-tma-$s-once-gemm" --m $m --n $n --k $k --lhs f8e5m2 --rhs f8e5m2 \
        --layout blockwise/1x128 --rhs-layout blockwise/128x128 --kernel wgmma-tma
      save "time-auto-once-$s-f6e2m3" --m $m --n $n --k $k --lhs f6e2m3 --rhs f6e2m3 \
        --layout mx --translate-once on
      # MXFP4's square block without folding its scales (what promoting once a stage buys)
      # and folded by rows only (what anchoring B buys).
      for kernel in wgmma wgmma-specialized; do
        save "time-$kernel-nofold-$s-f4e2m1" --m $m --n $n --k $k --lhs f4e2m1 --rhs f4e2m1 \
          --layout mx --packed --kernel $kernel --fold-scales off
        save "time-$kernel-rows-$s-f4e2m1" --m $m --n $n --k $k --lhs f4e2m1 --rhs f4e2m1 \
          --layout mx --packed --kernel $kernel --fold-scales rows
      done
      # MXFP6 (E2M3, translated by word arithmetic): both stage and fold the scales, the
      # barrier pipeline with 3 stages, warp-specialized with 3 slots.
      for kernel in wgmma wgmma-specialized; do
        save "time-$kernel-$s-f6e2m3" --m $m --n $n --k $k --lhs f6e2m3 --rhs f6e2m3 \
          --layout mx --kernel $kernel
      done ;;
    # The skinny block folds MXFP4's scales too (B's rows anchored where they allow): per 32
    # against it, at both decode shapes.
    16x*)
      save "time-wgmma-nofold-$s-f4e2m1" --m $m --n $n --k $k --lhs f4e2m1 --rhs f4e2m1 \
        --layout mx --packed --kernel wgmma --fold-scales off ;;
  esac
  # Translating a stage ahead (translate-ahead=on) against auto's barrier pipeline.
  save "time-wgmma-ahead-$s-f4e2m1" --m $m --n $n --k $k --lhs f4e2m1 --rhs f4e2m1 \
    --layout mx --packed --kernel wgmma --translate-ahead on
  [ "$m" = 16 ] || save "time-wgmma-ahead-$s-f6e2m3" --m $m --n $n --k $k --lhs f6e2m3 \
    --rhs f6e2m3 --layout mx --kernel wgmma --translate-ahead on
  # DeepSeek's FP8 layout (A 1 x 128, B 128 x 128): one fma per accumulator a stage, as
  # per tensor's one add (the TMA consumer loop 265 instructions per two stages, per
  # tensor's 261); the FP8 GEMM behind any translation of MXFP4 done once, in a pass of its
  # own, would run at this rate.
  for kernel in auto wgmma-specialized wgmma-tma; do
    save "time-$kernel-$s-deepseek" --m $m --n $n --k $k --lhs f8e4m3 --rhs f8e4m3 \
      --layout blockwise/1x128 --rhs-layout blockwise/128x128 --kernel $kernel
  done
  # NVFP4 (E2M1 + UE4M3/16, global scales) by default (nvfp4=auto) on the f16 route: each
  # code times its block's scale as f16 into k16 f16 instructions summing whole stages (the
  # skinny block too, split-K at 16x4096x8192). And the split route (nvfp4=split): an
  # instruction per 16-block on split translated tiles, the scales staged where K is whole
  # stages (the barrier pipeline with 3 stages).
  for kernel in wgmma wgmma-specialized; do
    [ $kernel = wgmma-specialized ] && [ "$m" = 16 ] && continue
    save "time-$kernel-$s-nvfp4" --m $m --n $n --k $k --lhs f4e2m1 --rhs f4e2m1 \
      --layout nvfp4+global --packed --kernel $kernel
    save "time-$kernel-split-$s-nvfp4" --m $m --n $n --k $k --lhs f4e2m1 --rhs f4e2m1 \
      --layout nvfp4+global --packed --kernel $kernel --nvfp4 split
    # E4M3 activations (per tensor) beside NVFP4 weights, both routes.
    case $s in
      8192x8192x8192 | 16x8192x8192)
        for route in split f16; do
          save "time-$kernel-$route-$s-w4a8" --m $m --n $n --k $k --lhs f8e4m3 --rhs f4e2m1 \
            --layout per_tensor --rhs-layout nvfp4+global --packed --kernel $kernel --nvfp4 $route
        done ;;
    esac
  done
done
# MXFP4 at gpt-oss's K (2880: 22.5 stages of 128), square and decode: its scales folded
# since aff9fcd (the per-32 loop before, fold-scales=off now).
for s in 8192x2880x2880 16x2880x2880; do
  IFS=x read -r m n k <<< "$s"
  save "time-auto-$s-f4e2m1" --m $m --n $n --k $k --lhs f4e2m1 --rhs f4e2m1 --layout mx --packed
  save "time-wgmma-nofold-$s-f4e2m1" --m $m --n $n --k $k --lhs f4e2m1 --rhs f4e2m1 \
    --layout mx --packed --kernel wgmma --fold-scales off
done
# translate-once at K = 2880: the workspaces padded to 2944 with zero codes (launch 2 on 23
# whole stages), beside auto above.
save "time-auto-once-8192x2880x2880-f4e2m1" --m 8192 --n 2880 --k 2880 --lhs f4e2m1 \
  --rhs f4e2m1 --layout mx --packed --translate-once on
# The skinny block's loop is latency-bound, not memory-bound (MXFP4 16 x 8192 x 8192: 35
# us, about 2000 clocks a stage for ~300 instructions a warp, 8 warps an SM in two blocks):
# a ring of 4 or 5 stages (MXFP4 46 / 52 KB, FP8 41 KB) leaves room for four blocks a
# multiprocessor, which K split in 4 (8 at 4096 columns) fills: twice the warps.
for s in 16x8192x8192 16x4096x8192; do
  IFS=x read -r m n k <<< "$s"
  sk=4
  [ "$n" = 4096 ] && sk=8
  for st in 4 5; do
    save "time-wgmma-s$st-$s-f4e2m1" --m $m --n $n --k $k --lhs f4e2m1 --rhs f4e2m1 \
      --layout mx --packed --kernel wgmma --stages $st --split-k $sk
  done
  save "time-wgmma-s4-$s-f8e4m3" --m $m --n $n --k $k --lhs f8e4m3 --rhs f8e4m3 \
    --layout per_tensor --kernel wgmma --stages 4 --split-k $sk
  save "time-wgmma-s4-ahead-$s-f4e2m1" --m $m --n $n --k $k --lhs f4e2m1 --rhs f4e2m1 \
    --layout mx --packed --kernel wgmma --stages 4 --split-k $sk --translate-ahead on
done
# The register-fed decode block (kernel=wgmma-registers: B through each thread's registers
# into wgmma's A, no barrier a stage), split by shape (2 at 8192 columns, 4 at 4096) and
# one split more, beside the skinny block's rows above.
for s in 16x8192x8192 16x4096x8192; do
  IFS=x read -r m n k <<< "$s"
  more=4
  [ "$n" = 4096 ] && more=8
  save "time-wgmma-registers-$s-f4e2m1" --m $m --n $n --k $k --lhs f4e2m1 --rhs f4e2m1 \
    --layout mx --packed --kernel wgmma-registers
  save "time-wgmma-registers-k$more-$s-f4e2m1" --m $m --n $n --k $k --lhs f4e2m1 \
    --rhs f4e2m1 --layout mx --packed --kernel wgmma-registers --split-k $more
  save "time-wgmma-registers-$s-f8e4m3" --m $m --n $n --k $k --lhs f8e4m3 --rhs f8e4m3 \
    --layout per_tensor --kernel wgmma-registers
  save "time-wgmma-registers-$s-f6e2m3" --m $m --n $n --k $k --lhs f6e2m3 --rhs f6e2m3 \
    --layout mx --kernel wgmma-registers
done
# E3M4, which no FP8 type holds: the wgmma pipeline's f16 route (auto's choice on sm_90a
# unpacked; square, warp-specialized, skinny at 16 rows) and the f16 form
# of mma.sync (auto's elsewhere) against the generic decode kernel they replace.
for s in 8192x8192x8192 4096x4096x4096 16x8192x8192; do
  IFS=x read -r m n k <<< "$s"
  for kernel in wgmma wgmma-specialized mma-sync generic; do
    [ "$s" = 8192x8192x8192 ] && [ $kernel = generic ] && continue
    [ "$m" = 16 ] && [ $kernel = wgmma-specialized ] && continue
    save "time-$kernel-$s-f8e3m4" --m $m --n $n --k $k --lhs f8e3m4 --rhs f8e3m4 \
      --layout per_channel --kernel $kernel 2>/dev/null
  done
  # With MX scales: the f16 route's promotion per 32-block against mma.sync's.
  [ "$s" = 4096x4096x4096 ] && continue
  for kernel in wgmma mma-sync; do
    save "time-$kernel-$s-f8e3m4-mx" --m $m --n $n --k $k --lhs f8e3m4 --rhs f8e3m4 \
      --layout mx --kernel $kernel 2>/dev/null
  done
done
# E5M2 FNUZ (its exponent 31 finite), which only bf16 patterns hold: the pipeline's bf16
# route (auto's choice on sm_90a) and mma.sync's bf16 form against the generic kernel.
for s in 8192x8192x8192 16x8192x8192; do
  IFS=x read -r m n k <<< "$s"
  for kernel in wgmma mma-sync generic; do
    [ "$s" = 8192x8192x8192 ] && [ $kernel = generic ] && continue
    save "time-$kernel-$s-f8e5m2fnuz" --m $m --n $n --k $k --lhs f8e5m2fnuz \
      --rhs f8e5m2fnuz --layout per_channel --kernel $kernel 2>/dev/null
  done
done
# ---- assembled only (no Blackwell there): sm_100a's tcgen05 kinds, for ptxas -arch=sm_100a
# (the last two kind::f16, on f16 and bf16 patterns).
sass=(
  "f8e4m3 --rhs f8e4m3 --layout per_tensor"
  "f8e4m3 --rhs f8e5m2 --layout mx"
  "f6e2m3 --rhs f4e2m1 --layout mx"
  "f4e2m1 --rhs f4e2m1 --layout mx --packed"
  "f4e2m1 --rhs f4e2m1 --layout nvfp4+global --packed"
  "f8e3m4 --rhs f8e4m3 --layout per_channel"
  "f8e6m1 --rhs f8e5m2 --layout per_channel"
)
i=0
for f in "${sass[@]}"; do
  # shellcheck disable=SC2086
  save "sass-tcgen05-$i" --m 256 --n 256 --k 1024 --lhs $f --chip sm_100a --kernel tcgen05
  i=$((i + 1))
done
# No kernel may touch a wgmma's accumulators before the wait that retires them (a copy
# through a phi would read registers the tensor cores still write).
python3 bench/ptx_inflight.py gpu-carry/bundles/*/kernel.ptx
bash bench/ptxas_report.sh
du -sh gpu-carry
ls gpu-carry/bundles | wc -l
