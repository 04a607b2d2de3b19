#!/usr/bin/env bash
# One prepared device run (see /work/.library/device/METHOD.md): a preflight (the runner
# opens the GPU and passes one check, or the run stops at once with what it saw, leaving
# device time for another try), numerics (against the oracle, two seeds, 12 bundles at a
# time; FP8 per-tensor results also beside torch._scaled_mm on the same inputs,
# bench/vs_torch.py), then timing of lowp's GPU kernels one process per problem (its
# kernels share the inputs) beside the torch peers, then ptxas / cuobjdump facts
# (registers, spills, SASS tensor-core instructions) of the timed kernels and of the
# sm_100a ones (assembled only). Everything it runs was compiled here by
# bench/gpu-prep.sh into gpu-carry/ (kernel bundles and lowp-gpu-run, which links no LLVM):
#   bash bench/gpu-prep.sh
#   run(command="bash bench/gpu.sh", carry=["gpu-carry"], timeout_s=600)
# $OUT gets table.txt (each row appended as it is made: what a run cut short still brings
# back) and logs.tar.gz (every log, remade after each phase); stdout ends in a short table
# (failures, timings, peers).
# The device call's limit is 600 s: the phases share LOWP_GPU_BUDGET seconds (default
# 540), each leaving its successors' reserve; a bundle left out for time gets a "skipped"
# row.
set -u
RUNNER=${LOWP_GPU_RUN:-gpu-carry/lowp-gpu-run}
B=${LOWP_GPU_BUNDLES:-gpu-carry/bundles}
OUTDIR=${OUT:-out}
WORK=$(mktemp -d)
mkdir -p "$OUTDIR" "$WORK/check" "$WORK/sass"
# The driver's JIT cache: the numerics phase compiles most kernels once for the phases
# after it.
export CUDA_CACHE_PATH=$WORK/jit-cache CUDA_CACHE_MAXSIZE=4294967296
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,temperature.gpu --format=csv \
  > "$WORK/gpu.csv" 2>&1 || true
status=0
: > "$OUTDIR/table.txt"
BUDGET=${LOWP_GPU_BUDGET:-540}
row() { printf '%s\n' "$1" >> "$OUTDIR/table.txt"; }
pack() { cp "$OUTDIR/table.txt" "$WORK/"; tar -czf "$OUTDIR/logs.tar.gz" -C "$WORK" --exclude=jit-cache --exclude='*.cubin' . 2>/dev/null || true; }
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

# ---- preflight: one bundle, one seed. No device line means the runner could not open the
# GPU (driver, library, permissions): say what is there and stop.
first=$(bundles check | head -1)
pre=$(timeout 90 "$RUNNER" "$first" --seed 1 --check 2>&1)
printf '%s\n' "$pre" > "$WORK/preflight.log"
if ! grep -q '^device:' <<< "$pre"; then
  echo "PREFLIGHT FAILED: $RUNNER $first"
  printf '%s\n' "$pre" | tail -20
  nvidia-smi 2>&1 | head -20
  ls -l /usr/lib/x86_64-linux-gnu/libcuda* /usr/local/nvidia/lib64 2>&1 | head
  ldconfig -p | grep -i libcuda
  ldd "$RUNNER"
  pack
  exit 3
fi
row "preflight | $(grep -m1 '^device:' <<< "$pre") | $(grep -m1 -E '^check:' <<< "$pre") | ${SECONDS}s"

# ---- numerics: every bundle check-*, two seeds, each with lowp-run --specials's values
# written in (infinities and NaN codes in both operands, the formats' largest magnitudes,
# a NaN block scale: the rest of the inputs stay random); the runner poisons the output,
# so an element a kernel does not write fails. Both seeds in one process (the driver
# compiles each kernel's PTX once), 12 processes at a time; a kernel that deadlocks (an
# mbarrier phase wrong) costs 60 s of one slot. A bundle starts only before the deadline.
check_one() { # bundle dir, log name suffix, runner flags...
  local dir=$1 log now left
  log=$WORK/check/$(basename "$1")$2.log
  shift 2
  now=$(date +%s)
  left=$((DEADLINE - now))
  [ "$left" -ge 5 ] || return 0
  [ "$left" -le 60 ] || left=60
  timeout "$left" "$RUNNER" "$dir" "$@" --check > "$log" 2>&1
  echo "exit=$?" >> "$log"
}
export -f check_one
export RUNNER WORK
t=$(within 240 330)
DEADLINE=$(($(date +%s) + t))
export DEADLINE
bundles check | xargs -P 12 -I{} bash -c 'check_one "$1" "" --seed 1,2 --specials' _ {}
passes=0
fails=0
for dir in $(bundles check); do
  name=$(basename "$dir")
  log=$WORK/check/$name.log
  if [ ! -f "$log" ]; then row "$name | skipped (device budget)"; status=1; continue; fi
  lines=$(grep -E '^check:|^mismatches:|lowp-gpu-run:' "$log")
  if [ "$(grep -c '^check: PASS' <<< "$lines")" = 2 ]; then
    r=PASS
    passes=$((passes + 1))
  else
    r="FAIL ($(grep -v '^check: PASS' <<< "$lines" | head -2 | tr '\n' ' ')$(tail -1 "$log"))"
    [ -z "$lines" ] && r="FAIL (no result: $(tail -1 "$log"), timeout 124)"
    fails=$((fails + 1))
    status=1
  fi
  row "$name seeds=1,2 specials | $r"
done
row "numerics | $passes bundles PASS, $fails FAIL | ${SECONDS}s"
# The wgmma pipeline's MXFP4 x MXFP4 check bundles again, one seed, with K's last 64 zeros
# under E8M0's 2^-127 (K padded), whose blocks the pipeline folds, B anchored (76a25ad, and
# B's range without them since); 12 processes at a time, as above, until a deadline of
# their own.
padded=()
for dir in $(bundles check); do
  p="$dir/problem.txt"
  case "$(basename "$dir")" in *wgmma* | *auto*) ;; *) continue ;; esac
  grep -q '^lhs = f4e2m1$' "$p" && grep -q '^rhs = f4e2m1$' "$p" \
    && grep -q '^lhs_layout = mx$' "$p" && grep -q '^rhs_layout = mx$' "$p" \
    && [ "$(sed -n 's/^k = //p' "$p")" -ge 128 ] && padded+=("$dir")
done
t=$(within 60 300)
DEADLINE=$(($(date +%s) + t))
export DEADLINE
printf '%s\n' "${padded[@]}" | xargs -P 12 -I{} bash -c 'check_one "$1" -tail --seed 1 --zero-tail 64' _ {}
tail_pass=0
for dir in "${padded[@]}"; do
  log=$WORK/check/$(basename "$dir")-tail.log
  if [ -f "$log" ] && grep -q '^check: PASS' "$log"; then
    tail_pass=$((tail_pass + 1))
  else
    row "$(basename "$dir") zero-tail 64 | FAIL ($( [ -f "$log" ] && tail -1 "$log" || echo skipped))"
    status=1
  fi
done
row "zero-tail 64 | $tail_pass of ${#padded[@]} MXFP4 bundles PASS | ${SECONDS}s"
pack

# ---- the same inputs through torch._scaled_mm (cuBLASLt): every FP8 per-tensor check
# bundle's result beside the peer's, both against the oracle (bench/vs_torch.py).
if python3 -c "import torch" 2>/dev/null; then
  DUMP=$(mktemp -d)
  for dir in "$B"/check-*; do
    p="$dir/problem.txt"
    grep -qE '^lhs = f8e(4m3|5m2)$' "$p" && grep -qE '^rhs = f8e(4m3|5m2)$' "$p" \
      && grep -q '^lhs_layout = per_tensor$' "$p" && grep -q '^rhs_layout = per_tensor$' "$p" \
      || continue
    t=$(within 30 300)
    [ "$t" = 0 ] && continue
    timeout "$t" "$RUNNER" "$dir" --seed 1 --dump "$DUMP" >> "$WORK/vs_torch.log" 2>&1
  done
  while read -r l; do row "$l"; done < <(python3 gpu-carry/vs_torch.py "$DUMP"/* 2>&1 | tee -a "$WORK/vs_torch.log")
  rm -rf "$DUMP"
else
  row "vs_torch | torch not importable"
fi
pack

# ---- timing: median of 10 launches (events; 50 for 16 rows), after one warm-up; one process per problem
# (the kernels of one shape and format, in bundles' order), so that the inputs are made
# once. A problem whose process stops early (a launch error ends it) has its remaining
# kernels run one by one. The 16-row (decode) problems run again with --cold: the L2
# flushed before each timed launch, as their weights (32-64 MiB) mostly fit in its 60 MB.
declare -A members
order=()
for dir in $(bundles time); do
  key=$(grep -v '^roles' "$dir/problem.txt" | md5sum | cut -c1-16)
  [ -n "${members[$key]:-}" ] || order+=("$key")
  members[$key]="${members[$key]:-} $dir"
done
# Bench lines of a runner's output as "name | bench: ..." rows ($2 appended to the name).
bench_rows() { # log, suffix
  awk -v sfx="$2" '/^kernel: /{split($2, p, "/"); name=p[length(p)]}
    /^bench: /{print name sfx " | " $0}' "$1"
}
# The anchors' problems first (FP8 per tensor and MXFP4, square then decode), so that a
# cut budget leaves out the least telling.
rank() { # member dirs
  case "$*" in
    *-8192x8192x8192-f8e4m3\ * | *-8192x8192x8192-f8e4m3) echo 0 ;;
    *-4096x4096x4096-f8e4m3\ * | *-4096x4096x4096-f8e4m3) echo 1 ;;
    *-8192x8192x8192-f4e2m1\ * | *-8192x8192x8192-f4e2m1) echo 2 ;;
    *-16x8192x8192-f8e4m3\ * | *-16x8192x8192-f8e4m3) echo 3 ;;
    *-16x8192x8192-f4e2m1\ * | *-16x8192x8192-f4e2m1) echo 4 ;;
    *-16x4096x8192-f8e4m3\ * | *-16x4096x8192-f8e4m3 | *-16x4096x8192-f4e2m1*) echo 5 ;;
    *-4096x4096x4096-f4e2m1* | *-8192x8192x4096-f8e4m3* | *-8192x8192x16384-f8e4m3*) echo 6 ;;
    *x2880x2880-f4e2m1*) echo 6 ;;
    *) echo 7 ;;
  esac
}
mapfile -t order < <(for i in "${!order[@]}"; do
  echo "$(rank ${members[${order[$i]}]}) $i ${order[$i]}"
done | sort -n -k1,1 -k2,2 | cut -d' ' -f3)
for key in "${order[@]}"; do
  # shellcheck disable=SC2206
  dirs=(${members[$key]})
  m=$(sed -n 's/^m = //p' "${dirs[0]}/problem.txt")
  modes=("")
  runs=10
  # (The 16-row problems run for tens of microseconds: 50 launches for their medians.)
  [ "$m" = 16 ] && modes+=("--cold") && runs=50
  # (MXFP4 at 8192^3 again with K's last 192 zeros under E8M0's 2^-127, K = 8000 padded:
  # the wgmma pipeline folds those blocks, B anchored, where it went per 32 before
  # 76a25ad and by rows before B's range left them out.)
  case "${dirs[0]}" in *-8192x8192x8192-f4e2m1*) modes+=("--zero-tail 192") ;; esac
  for mode in "${modes[@]}"; do
    case "$mode" in
      "") sfx="" ;;
      --cold) sfx=" cold" ;;
      *) sfx=" zero-tail" ;;
    esac
    t=$(within $((30 + 10 * ${#dirs[@]})) 110)
    if [ "$t" = 0 ]; then
      for d in "${dirs[@]}"; do row "$(basename "$d")$sfx | skipped (device budget)"; done
      continue
    fi
    log=$WORK/bench-$key${sfx// /-}.log
    # shellcheck disable=SC2086
    timeout "$t" "$RUNNER" "${dirs[@]}" --bench $runs $mode > "$log" 2>&1
    cat "$log" >> "$WORK/bench.log"
    done_rows=$(bench_rows "$log" "$sfx")
    for d in "${dirs[@]}"; do
      name=$(basename "$d")
      r=$(grep -m1 "^$name$sfx | " <<< "$done_rows")
      if [ -z "$r" ]; then
        t=$(within 30 110)
        if [ "$t" = 0 ]; then row "$name$sfx | skipped (device budget)"; continue; fi
        # shellcheck disable=SC2086
        timeout "$t" "$RUNNER" "$d" --bench $runs $mode > "$log.one" 2>&1
        cat "$log.one" >> "$WORK/bench.log"
        r=$(bench_rows "$log.one" "$sfx")
        [ -n "$r" ] || r="$name$sfx | no result: $(tail -1 "$log.one")"
      fi
      row "$r"
    done
  done
done
pack
t=$(within 90 30)
if [ "$t" = 0 ]; then
  row "peer | skipped (device budget)"
elif python3 -c "import torch" 2>/dev/null && [ -f gpu-carry/torch_anchors.py ]; then
  timeout "$t" python3 gpu-carry/torch_anchors.py --shapes "${LOWP_PEER_SHAPES:-8192x8192x8192,4096x4096x4096,16x8192x8192,16x4096x8192}" \
    --json "$WORK/torch.json" > "$WORK/torch.log" 2>&1 || status=1
  while read -r l; do row "peer | $l"; done < <(tail -n 20 "$WORK/torch.log")
else
  row "peer | torch not importable: no peer figures"
fi
pack

# ---- SASS facts: the image's ptxas on every timed kernel (sm_90a) and on the sm_100a ones
# (assembled only), 16 at a time: registers, spills, the tensor-core instructions in SASS.
PTXAS=$(command -v ptxas || echo /usr/local/cuda/bin/ptxas)
CUOBJDUMP=$(command -v cuobjdump || echo /usr/local/cuda/bin/cuobjdump)
if [ -x "$PTXAS" ]; then
  assemble() { # bundle dir
    local name chip
    name=$(basename "$1")
    chip=$(sed -n 's/^chip = //p' "$1/launch.txt")
    "$PTXAS" -arch="$chip" -v "$1/kernel.ptx" -o "$WORK/sass/$name.cubin" \
      > "$WORK/sass/$name.log" 2>&1 && echo ok >> "$WORK/sass/$name.log"
  }
  export -f assemble
  export PTXAS
  t=$(within 180 5)
  [ "$t" = 0 ] || timeout "$t" bash -c 'ls -d "$0"/time-* "$0"/sass-* 2>/dev/null | xargs -P 16 -I{} bash -c "assemble {}"' "$B" || true
  "$PTXAS" --version | tail -1 > "$WORK/sass/ptxas-version.txt" 2>&1
  for dir in $(compgen -G "$B/time-*"; compgen -G "$B/sass-*"); do
    name=$(basename "$dir")
    log="$WORK/sass/$name.log"
    if [ -f "$log" ] && tail -1 "$log" | grep -q '^ok$'; then
      regs=$(grep -o 'Used [0-9]* registers' "$log" | head -1)
      spills=$(grep -o '[0-9]* bytes spill stores, [0-9]* bytes spill loads' "$log" | head -1)
      ops=$("$CUOBJDUMP" --dump-sass "$WORK/sass/$name.cubin" 2>/dev/null \
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
pack

# ---- the short table: the GPU, failures, timings, peers (all rows: $OUT/table.txt).
echo "---- $(head -2 "$WORK/gpu.csv" | tail -1) | ${SECONDS}s"
grep -E '^(preflight|numerics) ' "$OUTDIR/table.txt"
grep -E '\| (FAIL|skipped)|ptxas FAILED|no result' "$OUTDIR/table.txt" | cut -c1-300 | head -40
grep -vE '^(check-|time-|sass |preflight|numerics)' "$OUTDIR/table.txt"
grep -E '^time-' "$OUTDIR/table.txt" | sed 's/ | bench: median_ms=/ | /; s/ runs=[0-9]*//'
exit $status
