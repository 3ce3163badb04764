#!/usr/bin/env bash
# All GPU grades and benchmarks in one call (the H200, through the device tool); prints a
# compact table last and leaves every JSON grade and log in $OUT/gpu-grades-<modes>.tar.gz.
#   bash tools/gpu_check.sh quick        # rmsnorm: solution and expert x3 reruns, starting kernel, side stream
#   bash tools/gpu_check.sh rmsnorm      # ... and the 10 correct styles
#   bash tools/gpu_check.sh cheats       # every cheat of both environments (two sizes each)
#   bash tools/gpu_check.sh attention    # attention: solution x3 (with the FlexAttention baseline),
#                                        # expert as submission, starting kernel
#   bash tools/gpu_check.sh gpu_cheats   # attention cheats and the GPU-only rmsnorm cheats
#   bash tools/gpu_check.sh baselines    # solution at the public sizes with the FlexAttention baseline
#   bash tools/gpu_check.sh stability    # the expert graded as a submission, 5 sealed reruns per environment
#   bash tools/gpu_check.sh bench        # attention benchmark table only
# Several modes run in order: bash tools/gpu_check.sh quick attention
# Wheels in .whl/ (nvidia-cudnn-frontend for the attention expert) are installed first.
set -u
OUT=${OUT:-gpu-out}; WORK=$(mktemp -d); mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir .whl/*.whl || exit 1
fi
grade() {  # env name submission [extra pytest args...]
  local env=$1 name=$2 sub=$3; shift 3
  local t0=$(date +%s.%N)
  timeout ${GRADE_TIMEOUT:-900} python3 -m pytest env_suites/$env -q -p no:cacheprovider --nodus-submission="$sub" \
      --nodus-json="$WORK/$name.json" "$@" > "$WORK/$name.log" 2>&1
  echo "$name rc=$? wall=$(python3 -c "print(round($(date +%s.%N)-$t0,1))")s"
}
export -f grade; export WORK
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader
export SEALED=--nodus-sealed=sealed_fixtures  # exported: xargs children grade sealed too
for MODE in "${@:-quick}"; do
  case $MODE in
  quick|rmsnorm)
    grade rmsnorm solution expert/rmsnorm/solution.py $SEALED --nodus-reruns=3
    grade rmsnorm expert_as_submission expert/rmsnorm/expert_cuda.py $SEALED --nodus-reruns=3
    grade rmsnorm starting_kernel env_suites/rmsnorm/starting_kernel.py $SEALED
    grade rmsnorm cheat_side_stream tests/cheats/rmsnorm/side_stream.py $SEALED -k "public or hidden-0"
    if [ "$MODE" = rmsnorm ]; then
      # False positives: every correct style must pass, 3 sealed reruns each (timed sizes; in
      # parallel, the per-GPU lock keeps timings exclusive).
      ls tests/correct/rmsnorm/*.py | xargs -P 4 -I{} bash -c \
        'f={}; grade rmsnorm correct_$(basename $f .py) $f $SEALED --nodus-reruns=3 -k "public or hidden"'
    fi ;;
  cheats)
    # Cheats in parallel: the per-GPU lock keeps their timings exclusive. Two sizes each.
    for env in rmsnorm attention_backward; do
      ls tests/cheats/$env/*.py | xargs -P 4 -I{} bash -c \
        "f={}; grade $env cheat_\$(basename \$f .py) \$f $SEALED --nodus-call-timeout=20 -k 'public-0 or hidden-0'"
    done ;;
  gpu_cheats)
    # The attention corpus and the GPU-only rmsnorm cheats (tests/test_cheats.py: GPU_ONLY).
    { ls tests/cheats/attention_backward/*.py | sed 's/^/attention_backward /'
      for n in side_stream event_fake_join cuda_graph_stale_pointers; do echo "rmsnorm tests/cheats/rmsnorm/$n.py"; done
    } | xargs -P 4 -L 1 bash -c 'grade $0 cheat_$(basename $1 .py) $1 '"$SEALED"' --nodus-call-timeout=60 -k "public-0 or hidden-0"' ;;
  stability)
    # The expert graded as a submission, 5 sealed reruns per environment: the reward's spread
    # when nothing differs but the run. (Attention's is flagged forbidden_op, cuDNN being
    # forbidden to submissions: read its per-rerun speedups from the JSON.)
    grade rmsnorm expert_x5 expert/rmsnorm/expert_cuda.py $SEALED --nodus-reruns=5
    grade attention_backward attn_expert_x5 expert/attention_backward/expert_cuda.py $SEALED --nodus-reruns=5 ;;
  baselines)
    grade attention_backward attn_solution_baselines expert/attention_backward/solution.py --nodus-baselines -k public ;;
  bench)
    timeout ${BENCH_TIMEOUT:-420} python3 tools/bench_attention.py --sealed sealed_fixtures --reps 5 2>&1 | tee "$WORK/bench_attention.txt" ;;
  attention)
    grade attention_backward attn_solution expert/attention_backward/solution.py $SEALED --nodus-reruns=3
    grade attention_backward attn_expert_as_submission expert/attention_backward/expert_cuda.py $SEALED
    grade attention_backward attn_starting_kernel env_suites/attention_backward/starting_kernel.py $SEALED ;;
  *) echo "unknown mode $MODE"; exit 2 ;;
  esac
done
# One archive per invocation, named by its modes: a second invocation in the same command
# must not overwrite the first's grades (it did in run 11).
tar czf "$OUT/gpu-grades-$(IFS=-; echo "${*:-quick}").tar.gz" -C "$WORK" .
python3 tools/grade_table.py "$WORK"/*.json
