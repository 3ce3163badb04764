#!/usr/bin/env bash
# All GPU grades and benchmarks in one call (the H200, through the device tool); prints a
# compact table last and leaves every JSON grade and log in $OUT/gpu-grades.tar.gz.
#   bash tools/gpu_check.sh            # reruns, starting kernel, side stream, correct kernel styles
#   bash tools/gpu_check.sh cheats     # ... and the whole cheat corpus
#   bash tools/gpu_check.sh quick      # solution, expert-as-submission, side stream only
set -u
OUT=${OUT:-gpu-out}; WORK=$(mktemp -d); mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
MODE=${1:-full}
grade() {  # name submission [extra pytest args...]
  local name=$1 sub=$2; shift 2
  local t0=$(date +%s.%N)
  python3 -m pytest env_suites/rmsnorm -q -p no:cacheprovider --nodus-submission="$sub" \
      --nodus-json="$WORK/$name.json" "$@" > "$WORK/$name.log" 2>&1
  echo "$name rc=$? wall=$(python3 -c "print(round($(date +%s.%N)-$t0,1))")s"
}
export -f grade; export WORK
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader
grade solution expert/rmsnorm/solution.py --nodus-sealed=sealed_fixtures --nodus-reruns=3
grade expert_as_submission expert/rmsnorm/expert_cuda.py --nodus-sealed=sealed_fixtures --nodus-reruns=3
grade cheat_side_stream tests/cheats/rmsnorm/side_stream.py --nodus-sealed=sealed_fixtures -k "public or hidden-0"
if [ "$MODE" != quick ]; then
  grade starting_kernel env_suites/rmsnorm/starting_kernel.py --nodus-sealed=sealed_fixtures
  # False positives: every correct style must pass (timed sizes; in parallel, the per-GPU
  # lock keeps timings exclusive).
  ls tests/correct/rmsnorm/*.py | xargs -P 4 -I{} bash -c \
    'f={}; grade correct_$(basename $f .py) $f --nodus-sealed=sealed_fixtures -k "public or hidden"'
fi
if [ "$MODE" = cheats ]; then
  # Cheats in parallel: the per-GPU lock keeps their timings exclusive. Two sizes each.
  ls tests/cheats/rmsnorm/*.py | grep -v side_stream | xargs -P 4 -I{} bash -c \
    'f={}; n=$(basename $f .py); grade cheat_$n $f --nodus-sealed=sealed_fixtures --nodus-call-timeout=10 -k "public-0 or hidden-0"'
fi
tar czf "$OUT/gpu-grades.tar.gz" -C "$WORK" .
python3 tools/grade_table.py "$WORK"/*.json
