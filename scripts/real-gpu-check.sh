#!/usr/bin/env bash
# The checks and benches to run on a machine with a real GPU (no Chromium needed), in one go, each
# step under its own time limit so that a slow one cannot eat the rest (a limit of 0 skips the step):
# the WebGPU tests with every mergekit parity case (every GPU result against the CPU reference or
# mergekit's), the studio bench's set through the CLI with every method, one in-memory tensor per
# method (merge-ratio), the synthetic bench with its stage times, and dawn.node's tick pacer against
# its own spinning loop (one small round trip, then the CLI on RAM and TIES), and with WIDE_LIMIT set a
# 7B-wide set in the engine's windows and in smaller ones (ninth round). Logs go to $OUT (default
# .bench/real-gpu). Needs node, npm's node_modules and a Vulkan loader (libvulkan1); with
# VK_ICD_FILENAMES unset, dawn.node takes the system's Vulkan driver (src/cli/node-gpu.ts).
set -uo pipefail
OUT=${OUT:-.bench/real-gpu}
mkdir -p "$OUT"
step() {
  local name=$1 limit=$2
  shift 2
  if [ "$limit" = 0 ]; then
    echo "== $name skipped"
    return 0
  fi
  echo "== $name (limit ${limit}s)"
  local started=$SECONDS
  timeout "$limit" "$@" >"$OUT/$name.log" 2>&1
  echo "   rc=$? in $((SECONDS - started)) s"
}
node --version
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader
step gpu-tests "${TESTS_LIMIT:-240}" env PARITY_ALL=1 PARITY_TABLE=1 node_modules/.bin/vitest run --project gpu
grep -aE 'Test Files|Tests |FAIL|×|^\| ' "$OUT/gpu-tests.log" | head -40
bench="node --import ./bin/register.mjs src/bench"
step cli-set "${CLI_SET_LIMIT:-200}" $bench/main.ts --cli-only --layers "${LAYERS:-8}" --vocab 32000 \
  --methods ram,ramplus,ramplus_tl,task_arithmetic,ties,dare_ties,breadcrumbs_ties
tail -n 14 "$OUT/cli-set.log"
step merge-ratio "${RATIO_LIMIT:-60}" $bench/merge-ratio.ts --log2 24 --repeats 6 \
  --methods ram,ramplus_tl,task_arithmetic,ties,dare_ties,breadcrumbs_ties
tail -n 12 "$OUT/merge-ratio.log"
# Each method without and then with the overlap across tensors (read-ahead, write-behind, tensors
# pipelined through the engine), three alternating runs each in one process: medians and every pair.
step synthetic "${SYNTH_LIMIT:-150}" $bench/main.ts --size-mb 500 --cpu-share 0.01 --overlap both \
  --repeat "${REPEAT:-3}" --methods ram,ramplus_tl,ties,dare_ties
grep -E '^\||^- |Adapter|Median|top-k|Peak' "$OUT/synthetic.log" | grep -v 'CPU reference'
# The pacer (src/cli/tick-pacing.ts) against dawn.node's spinning loop, where a round trip takes
# microseconds: its latency, then the CLI on RAM and TIES alternating both ways.
step round-trip "${TRIP_LIMIT:-60}" $bench/round-trip.ts --trips 1000 --rounds 3
tail -n 4 "$OUT/round-trip.log"
step dawn-ticks "${TICKS_LIMIT:-120}" $bench/main.ts --cli-only --layers "${LAYERS:-8}" --vocab 32000 \
  --dawn-ticks both --repeat 3 --methods ram,ties
tail -n 12 "$OUT/dawn-ticks.log"
# A 7B's widths (2 layers, 4.5 GiB, generated first) at the default memory budget: TIES and
# tensor-local RAM+ in the engine's windows, which read the MLP projections in part twice, then in
# the windows the CLI names for this budget, which read them once (docs/speed-log.md, ninth round). Skipped
# unless WIDE_LIMIT is set (the set takes minutes to write).
step wide "${WIDE_LIMIT:-0}" $bench/main.ts --cli-only --layers 2 --hidden 4096 --intermediate 11008 \
  --vocab 32000 --methods ram,ties,ramplus_tl
tail -n 8 "$OUT/wide.log"
step wide-windows "${WIDE_LIMIT:-0}" $bench/main.ts --cli-only --layers 2 --hidden 4096 --intermediate 11008 \
  --vocab 32000 --methods ram,ties,ramplus_tl --window-elements 3014656
tail -n 8 "$OUT/wide-windows.log"
