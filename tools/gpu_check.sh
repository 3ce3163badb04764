#!/usr/bin/env bash
# All GPU grades and benchmarks in one call (the H200, through the device tool); prints a
# compact table last and leaves every JSON grade and log in $OUT/gpu-grades-<modes>.tar.gz.
#   bash tools/gpu_check.sh quick        # rmsnorm: solution and expert x3 reruns, starting kernel, side stream
#   bash tools/gpu_check.sh rmsnorm      # quick, then the correct styles
#   bash tools/gpu_check.sh styles       # the correct rmsnorm styles, 3 sealed reruns each
#   bash tools/gpu_check.sh cheats       # every cheat of every environment (two sizes each);
#                                        # CHEATS="rmsnorm/kill_grader ..." or CHEAT_ENVS="rmsnorm ..." for a subset
#   bash tools/gpu_check.sh gpu_cheats   # attention cheats and the GPU-only rmsnorm cheats
#   bash tools/gpu_check.sh attention    # attention: solution x3, expert as submission (trusted), starting kernel
#   bash tools/gpu_check.sh attention_solution  # attention: the solution x3 alone
#   bash tools/gpu_check.sh prefill      # chunked_prefill: expert as submission, solution x3, starting kernel, cheats
#   bash tools/gpu_check.sh prefill_expert  # chunked_prefill: the cuDNN expert as a trusted submission alone
#   bash tools/gpu_check.sh prefill_cheats  # chunked_prefill: its cheats alone
#   bash tools/gpu_check.sh prefill_solution  # chunked_prefill: solution x3 and the starting kernel
#   bash tools/gpu_check.sh plan_store   # the cuDNN experts' plans stored by one process, loaded by the next
#   bash tools/gpu_check.sh prefill_close  # chunked_prefill: expert as submission x3, the solution once (a warm
#                                        # host's wall), the cheats, the starting kernel, the solution x3,
#                                        # cuDNN and FlexAttention per sealed size
#   bash tools/gpu_check.sh moe          # moe_experts: expert as submission x3, solution x3, starting kernel, cheats;
#                                        # moe_expert, moe_solution (with the starting kernel), moe_cheats: one part;
#                                        # MOE_RERUNS=N (default 3) reruns of the solution
#   bash tools/gpu_check.sh baselines    # solution, sealed timed sizes, with the FlexAttention baseline;
#                                        # BASELINES_K="public" (or "hidden") for one half per GPU
#   bash tools/gpu_check.sh stability    # rmsnorm_stability + attention_stability: the expert graded as
#                                        # a submission, 5 sealed reruns per environment (STABILITY_RERUNS=N)
#   bash tools/gpu_check.sh bench        # attention benchmark, every kernel
#   bash tools/gpu_check.sh flex         # attention benchmark, cuDNN and FlexAttention only
#   bash tools/gpu_check.sh attention_styles  # the correct attention styles, 3 sealed reruns each
#   bash tools/gpu_check.sh walls        # which namespaces and uids keep CUDA IPC, the fd-exported arena (and its lifetime), the GPU gap probe,
#                                        # whether another process's persisting-L2 set-aside shrinks a process's L2,
#                                        # whether the idle probe reads the grader's own kernels beside it as idle
#   bash tools/gpu_check.sh cgroups      # which cgroup controllers the grader could hold a sandbox's memory and tasks with (seconds)
#   bash tools/gpu_check.sh tune         # chunked_prefill and moe_experts: expert and solution timed per
#                                        # sealed size outside the grader (tools/bench_env.py), one after the other
#   bash tools/gpu_check.sh prefill_tiles  # chunked_prefill solution: every _config candidate (PREFILL_TILES)
#                                        # timed per sealed size (PREFILL_SIZES), outside the grader
#   bash tools/gpu_check.sh attention_ds   # attention solution: dQ from stored dS against the split pair,
#                                        # and the KV-head chunks, every timed sealed size (kernel_profile)
#   bash tools/gpu_check.sh prefill_gluon  # chunked_prefill: the solution (Gluon at D >= 128) against cuDNN
#                                        # at every sealed size (PREFILL_SIZES), then profiled and swept
#                                        # (PREFILL_GLUON_VALUES: Gluon at D = 64, the overlap off)
#   bash tools/gpu_check.sh attention_dq   # attention solution: every tile candidate of the split pair's two kernels,
#                                        # every sealed size (tools/probes/attention_tiles.py)
#   bash tools/gpu_check.sh moe_tiles      # moe_experts solution: per-kernel profile and _config candidates
#                                        # (MOE_VALUES="EXPR;EXPR"), per size (MOE_SIZES), outside the grader
#   bash tools/gpu_check.sh moe_gemms      # grouped GEMMs by pointers / TMA / persistent / warp-specialised
#                                        # against torch._grouped_mm (tools/probes/moe_gemm_engine.py)
#   bash tools/gpu_check.sh rmsnorm_tiles  # rmsnorm solution: wide rows whole against chunked (RMSNORM_CHUNKS="BLOCK_N,warps[,from N] ..."), per size
#   bash tools/gpu_check.sh xdist        # rmsnorm solution sealed under -n <GPU count>: one worker per GPU
#   bash tools/gpu_check.sh batch_attention  # 16 attention attempts in batches of BATCH_ROOM (3) (BATCH_SEPARATE=1: each alone too;
#                                        # BATCH_TURNS=1: all 16 in one pytest run, in the grader's turns)
#   bash tools/gpu_check.sh batch_leftovers  # rmsnorm batch: two honest attempts beside three that leave GPU work running
#   bash tools/gpu_check.sh owed         # the runs still owed, on an H200: the moe expert as a trusted submission
#                                        # (its restarted sandbox's compile caches), the phases, the experts
#                                        # against themselves; the sealed batch against separate grades: owed_batch
#   bash tools/gpu_check.sh heap_growth  # cuda_graph_per_input's memory per call plain, under the output heap as the
#                                        # harness runs it, and with its pools and routes kept across calls; the moe
#                                        # expert plain and under the heap at hidden-1 (tools/probes/heap_pool_growth.py)
#   bash tools/gpu_check.sh heap_route   # what the heap's routes touch, graded: cuda_graph_per_input and the stream,
#                                        # thread and workspace styles (3 sealed reruns), the cheats of outputs,
#                                        # streams and memory (two sizes each), the moe expert as a trusted submission,
#                                        # the attention solution trusted (its claims kept) at public-2 and hidden-4
#   bash tools/gpu_check.sh expert_gap   # the attention expert against itself, 2 reruns at public-3 and hidden-0,
#                                        # its plans built in its own process, then loaded from the store
#   bash tools/gpu_check.sh warm         # back-to-back sealed grades: fresh processes against a warm grading
#                                        # process (WarmGrader), rmsnorm and attention (WARM_ENVS, WARM_RUNS)
#   bash tools/gpu_check.sh bytecode     # the grader's bytecode cache: imports and sealed rmsnorm grades without and with it
#   bash tools/gpu_check.sh profile      # cProfile of a warm host's sealed rmsnorm grade (the grading process)
#   bash tools/gpu_check.sh phases       # issue 24's walls: rmsnorm and attention solutions, sealed, one rerun, alone
#                                        # (PHASES_TWICE=1: each again on the warm host; PHASES_BEFORE=FILE: that
#                                        # attention file last, for an A/B of two solutions; PHASES_ONLY=rmsnorm
#                                        # or attention: that environment alone)
#   bash tools/gpu_check.sh attention_picks  # attention solution: each size's first call, its autotuners' picks
#                                        # and every candidate's time (tools/probes/attention_picks.py)
#   bash tools/gpu_check.sh call_memory  # the moe and attention experts' GPU memory per sealed size and at
#                                        # their domains' corners (tools/probes/call_memory.py --cuda)
#   bash tools/gpu_check.sh compile_ahead  # attention solution with COMPILE_AHEAD on, then as it is (first calls)
#   bash tools/gpu_check.sh gpu_memory_owners  # which processes NVML charges GPU memory to while a grade runs
#   bash tools/gpu_check.sh memory_wall  # the GPU memory wall: what NVML reads of a child's memory, the cheats
#                                        # of its class, and honest kernels near and within their budgets
#   bash tools/gpu_check.sh exact_references  # plain and tensor-core fp32 references per sealed size (prefill,
#                                        # attention), then both solutions graded (the tensor-core ones on)
# Several modes run in order: bash tools/gpu_check.sh quick attention
# RMSNORM_PARALLEL=N (default 4) grades N rmsnorm cheats at once in mode cheats.
# ATTENTION_PARALLEL=N grades N attention cheats at once (default 1); the grades' memory
# reservations decide how many of them run at once. FAULTHANDLER_S=N (default 240) dumps a
# grade's stacks into its log when one size runs longer.
# --gpu N first pins the whole invocation to GPU N (two invocations can then share a
# 2-GPU machine); NODUS_DEADLINE=<epoch s> makes grades that would start after it skip,
# and cuts the running one, so the archive and table still come back inside a time limit.
# Wheels in .whl/ (nvidia-cudnn-frontend for the attention expert) are installed first.
set -u
TAG=""
if [ "${1:-}" = --gpu ]; then export CUDA_VISIBLE_DEVICES=$2; TAG="gpu$2-"; shift 2; fi
OUT=${OUT:-gpu-out}; WORK=$(mktemp -d); mkdir -p "$OUT"
# Everything this prints is kept in the archive too: a device call returns only its output's tail.
exec > >(tee -a "$WORK/gpu_check.out") 2>&1
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD NODUS_DEADLINE=${NODUS_DEADLINE:-$(( $(date +%s) + 86400 ))}
if ls .whl/*.whl >/dev/null 2>&1; then  # flock: two invocations may start together
  flock /tmp/nodus-wheels.lock python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir \
    .whl/*.whl || exit 1
fi
grade() {  # env name submission [extra pytest args...]
  # Grades on one GPU reserve their memory before they start (grader/gpu_ledger.py): as many
  # run side by side as fit, the others wait (their gpu_wait phase).
  local env=$1 name=$2 sub=$3; shift 3
  local t0=$(date +%s.%N) left=$(( NODUS_DEADLINE - $(date +%s) ))
  if [ $left -lt 30 ]; then echo "$name skipped (deadline)"; return; fi
  # faulthandler: a size that runs past FAULTHANDLER_S dumps every thread's stack into the log.
  timeout $(( left < ${GRADE_TIMEOUT:-900} ? left : ${GRADE_TIMEOUT:-900} )) python3 -m pytest env_suites/$env -q -p no:cacheprovider \
      -o faulthandler_timeout=${FAULTHANDLER_S:-240} --nodus-submission="$sub" \
      --nodus-json="$WORK/$name.json" "$@" > "$WORK/$name.log" 2>&1
  echo "$name rc=$? wall=$(python3 -c "print(round($(date +%s.%N)-$t0,1))")s"
}
export -f grade; export WORK
styles() {
  # False positives: every correct style must pass, 3 sealed reruns each (timed sizes; in
  # parallel, the per-GPU lock keeps timings exclusive). Two at a time: more interleave under
  # the lock and all finish late together. STYLES="a b" grades only those (file stems).
  { if [ -n "${STYLES:-}" ]; then printf 'tests/correct/rmsnorm/%s.py\n' $STYLES; else ls tests/correct/rmsnorm/*.py; fi; } |
    xargs -P ${STYLES_PARALLEL:-2} -I{} bash -c \
    'f={}; grade rmsnorm correct_$(basename $f .py) $f $SEALED --nodus-reruns=3 -k "public or hidden"'
}
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader
# Whether the host keeps bytecode: where it does not, every grading process compiles its imports anew
# (docs/results/throughput.md, Hypothesis past the assertion rewriter).
python3 -c 'import sys, torch, pathlib; print("python", sys.version.split()[0], "torch", torch.__version__, "writes bytecode:", not sys.dont_write_bytecode, "torch has bytecode:", any((pathlib.Path(torch.__file__).parent / "__pycache__").glob("__init__.cpython-*.pyc")))'
# The grader's bytecode cache (grader/bytecode.py), filled before any grade and read by every
# grading process too, as a host's set-up would (README); BYTECODE_AHEAD=0 leaves it to the
# first grade's helper and the grading processes compiling their imports.
BYTECODE_DIR=$(python3 -m pytest_nodus.grader.bytecode --where)
if [ "${BYTECODE_AHEAD:-1}" = 1 ]; then
  t0=$(date +%s.%N); python3 -m pytest_nodus.grader.bytecode | tr '\n' ' '
  echo "(bytecode cache filled in $(python3 -c "print(round($(date +%s.%N)-$t0,1))") s)"
  export PYTHONPYCACHEPREFIX=$BYTECODE_DIR PYTHONDONTWRITEBYTECODE=1
fi
export SEALED=--nodus-sealed=sealed_fixtures  # exported: xargs children grade sealed too
# The trusted experts' cuDNN plan store (pytest_nodus/trusted/cudnn_plans.py, options.expert_cache).
PLAN_STORE="${XDG_CACHE_HOME:-$HOME/.cache}/pytest-nodus/expert/cudnn-plans"
for MODE in "${@:-quick}"; do
  case $MODE in
  quick|rmsnorm)
    grade rmsnorm solution expert/rmsnorm/solution.py $SEALED --nodus-reruns=3
    grade rmsnorm expert_as_submission expert/rmsnorm/expert_cuda.py $SEALED --nodus-reruns=3 --nodus-trusted
    grade rmsnorm starting_kernel env_suites/rmsnorm/starting_kernel.py $SEALED
    grade rmsnorm cheat_side_stream tests/cheats/rmsnorm/side_stream.py $SEALED -k "public or hidden-0"
    [ "$MODE" = rmsnorm ] && styles ;;
  styles) styles ;;
  attention_styles)
    # ATTENTION_STYLES_PARALLEL lanes (default 1): each grader holds up to ~22 GiB of GPU memory.
    # STYLES="torch_dense" grades only those (file stems).
    { if [ -n "${STYLES:-}" ]; then printf 'tests/correct/attention_backward/%s.py\n' $STYLES
      else ls tests/correct/attention_backward/*.py; fi; } | xargs -P ${ATTENTION_STYLES_PARALLEL:-1} -I{} bash -c \
      'f={}; grade attention_backward correct_$(basename $f .py) $f $SEALED --nodus-reruns=3 -k "public or hidden"' ;;
  walls)
    python3 tools/probe_walls_ipc.py 2>&1 | grep -v Warning
    python3 tools/probe_walls_vmm.py 2>&1 | grep -v Warning
    python3 tools/probes/vmm_lifetime.py 2>&1 | grep -v Warning
    python3 tools/probes/l2_set_aside.py 2>&1 | grep -v Warning
    python3 tools/probes/probe_beside_own_work.py 2>&1 | grep -v Warning ;;
  cgroups) python3 tools/probes/cgroup_layout.py ;;
  cheats)
    # Cheats in parallel: the per-GPU lock keeps their timings exclusive. Two sizes each.
    # Call limit: 20 s stops rmsnorm's infinite loop soon; attention's first call compiles.
    # CHEATS="rmsnorm/kill_grader attention_backward/zero_gradients" grades only those;
    # CHEAT_ENVS="rmsnorm attention_backward" only those environments' cheats.
    # Attention cheats one at a time by default (ATTENTION_PARALLEL): several attention
    # graders on one GPU can run it out of memory, which floors a size as grader_out_of_memory.
    # Cheats that keep the GPU busy between their calls run alone, after the others: beside
    # another grade they would stop its sizes as gpu_contended, not as its file declares.
    alone="gpu_work_left_when_frozen|gpu_hog_between_calls|spin_after_return|contend_with_the_experts_setup|contend_with_the_experts_choice"
    for env in rmsnorm:20:${RMSNORM_PARALLEL:-4} attention_backward:60:${ATTENTION_PARALLEL:-1} \
               chunked_prefill:60:${ATTENTION_PARALLEL:-1} moe_experts:60:${ATTENTION_PARALLEL:-1} \
               rmsnorm:20:1:alone moe_experts:60:1:alone; do
      IFS=: read -r name limit lanes only <<< "$env"
      [ -n "${CHEAT_ENVS:-}" ] && ! [[ " $CHEAT_ENVS " == *" $name "* ]] && continue
      { if [ -n "${CHEATS:-}" ]; then printf '%s\n' $CHEATS | grep "^$name/" | sed 's#^#tests/cheats/#; s#$#.py#'
        else ls tests/cheats/$name/*.py; fi; } | { if [ -n "$only" ]; then grep -E "/($alone)\.py$"; else grep -vE "/($alone)\.py$"; fi; } \
        | xargs -r -P $lanes -I{} bash -c \
        "f={}; grade $name cheat_\$(basename \$f .py) \$f $SEALED --nodus-call-timeout=$limit -k 'public-0 or hidden-0'"
    done ;;
  gpu_cheats)
    # The attention corpus (one at a time, as above) and the GPU-only rmsnorm cheats
    # (those whose EXPECT names cuda only), the two lanes side by side.
    ls tests/cheats/attention_backward/*.py | xargs -P ${ATTENTION_PARALLEL:-1} -I{} bash -c \
      'grade attention_backward cheat_$(basename {} .py) {} '"$SEALED"' --nodus-call-timeout=60 -k "public-0 or hidden-0"' &
    for n in side_stream event_fake_join cuda_graph_stale_pointers gpu_hang skip_output_copy; do echo tests/cheats/rmsnorm/$n.py; done |
      xargs -P 4 -I{} bash -c 'grade rmsnorm cheat_$(basename {} .py) {} '"$SEALED"' --nodus-call-timeout=60 -k "public-0 or hidden-0"'
    wait ;;
  stability|rmsnorm_stability|attention_stability)
    # The expert graded as a submission, 5 sealed reruns per environment: the reward's spread
    # when nothing differs but the run. Attention's expert runs cuDNN, which is forbidden to
    # submissions: --nodus-trusted waives that flag and lets it load cuDNN (and nothing else) for this calibration.
    # Its fuzzed sizes are left out: they take no part in the reward. STABILITY_RERUNS=N (5);
    # STABILITY_FRESH_PLANS=1 empties the trusted cuDNN plan store first, so that the expert
    # role builds its plans in its own process, as the submission does (expert_gap).
    n=${STABILITY_RERUNS:-5}
    [ -n "${STABILITY_FRESH_PLANS:-}" ] && rm -rf "$PLAN_STORE"
    [ "$MODE" != attention_stability ] && grade rmsnorm expert_x$n expert/rmsnorm/expert_cuda.py $SEALED --nodus-reruns=$n
    [ "$MODE" != rmsnorm_stability ] && grade attention_backward attn_expert_x$n expert/attention_backward/expert_cuda.py \
      $SEALED --nodus-reruns=$n --nodus-trusted -k "not fuzzed" ;;
  baselines)
    # Every timed size, sealed; fuzzed sizes have no baseline and are left out.
    # BASELINES_K="public" (or "hidden") grades a part, e.g. one part per GPU.
    grade attention_backward attn_solution_baselines${BASELINES_K:+_${BASELINES_K// /_}} expert/attention_backward/solution.py \
      $SEALED --nodus-baselines -k "${BASELINES_K:-not fuzzed}" ;;
  bench|flex)
    kernels=$([ "$MODE" = flex ] && echo cudnn,flex || echo cudnn,flex,solution,starting)
    left=$(( NODUS_DEADLINE - $(date +%s) )); limit=${BENCH_TIMEOUT:-420}
    timeout $(( left < limit ? left : limit )) python3 tools/bench_attention.py --sealed sealed_fixtures --reps 5 \
      --kernels $kernels ${BENCH_SIZES:+--only $BENCH_SIZES} 2>&1 | tee "$WORK/bench_$MODE.txt" ;;
  tune)
    # Alone on the GPU: a grade's untimed work beside it (compiles, fuzzed sizes) moves these figures.
    for env in chunked_prefill moe_experts; do
      left=$(( NODUS_DEADLINE - $(date +%s) )); [ $left -lt 30 ] && break
      timeout $left python3 tools/bench_env.py $env --sealed sealed_fixtures --reps 7 --kernels expert,solution \
        2>&1 | tee "$WORK/tune_$env.txt"
    done ;;
  prefill_tiles)
    # (BLOCK_M, BLOCK_N, warps, stages, TMA) per candidate; the sm_90a compile probe
    # (nodus-sm90) rules out those that spill or overflow shared memory.
    # BLOCK_N 128 at D = 256 needs 321 KiB of shared memory: it is not a candidate there.
    tiles=${PREFILL_TILES:-"128,64,8,2,0 128,64,8,3,1 128,128,8,2,0 128,128,8,3,1 64,64,4,3,1 64,64,4,2,0 64,32,4,2,0"}
    values=""
    for t in $tiles; do
      IFS=, read m n w s tma <<< "$t"
      values+="lambda d, page, device: dict(BLOCK_M=$m, BLOCK_N=$( [ $n = 128 ] && echo "(64 if d > 128 else 128)" || echo $n ), num_warps=$w, num_stages=$s, TMA=bool($tma));"
    done
    left=$(( NODUS_DEADLINE - $(date +%s) ))
    timeout $left python3 tools/probes/kernel_profile.py chunked_prefill --sealed sealed_fixtures --reps 3 \
      --only ${PREFILL_SIZES:-public-0,public-1,public-2,public-3,public-4,hidden-0,hidden-1,hidden-2,hidden-3,hidden-4} \
      --sweep _config --values "$values" 2>&1 | tee "$WORK/prefill_tiles.txt" ;;
  moe_tiles)
    left=$(( NODUS_DEADLINE - $(date +%s) ))
    B="lambda device, base=solution._config: dict(base(device),"
    timeout $left python3 tools/probes/kernel_profile.py moe_experts --sealed sealed_fixtures --reps 3 \
      --only ${MOE_SIZES:-public-0,public-1,public-2,hidden-0,hidden-1,hidden-2,hidden-3} --sweep _config \
      --values "${MOE_VALUES:-$B da=dict(BLOCK_N=64, BLOCK_K=64, num_warps=8, num_stages=4));$B weights=dict(BLOCK_N=128, BLOCK_K=64, num_warps=8, num_stages=4));$B up=dict(BLOCK_N=128, BLOCK_K=64, num_warps=8, num_stages=4))}" 2>&1 |
      tee "$WORK/moe_tiles.txt" ;;
  moe_gemms)
    for size in 16384,64,6,2048,1408,2 16384,128,8,2048,768,1; do
      python3 tools/probes/moe_gemm_engine.py --size $size --reps 20 2>&1 | grep -v '^    \|^#\|module\|%' ; done |
      tee "$WORK/moe_gemms.txt" ;;
  rmsnorm_tiles)
    # Rows of 8192 and more columns (a candidate's third field sets another threshold)
    # covered in chunks of BLOCK_N,warps, against the solution as it is.
    values="" chunks=${RMSNORM_CHUNKS:-"1024,16 2048,16 4096,16 2048,8 2048,16,4096"}
    for c in $chunks; do
      IFS=, read b w from <<< "$c"
      values+="lambda n, base=solution._config: dict(base(n), BLOCK_N=$b, CHUNKED=True, num_warps=$w) if n >= ${from:-8192} else base(n);"
    done
    left=$(( NODUS_DEADLINE - $(date +%s) ))
    timeout $left python3 tools/probes/kernel_profile.py rmsnorm --sealed sealed_fixtures --reps 5 \
      --only ${RMSNORM_SIZES:-public-2,public-3,public-4,hidden-0,hidden-2,hidden-3,hidden-5} --sweep _config \
      --values "$values" 2>&1 | tee "$WORK/rmsnorm_tiles.txt" ;;
  attention_ds)
    # dQ from stored dS tiles (DS_STORED, on at every head dim for the profile and the sweep's
    # default) against dQ by its own kernel (the split pair), with the number of KV-head chunks
    # (DS_MIN_CHUNKS) and the dS stores by TMA or from registers, every timed sealed size:
    # each variant timed and checked against cuDNN's outputs.
    left=$(( NODUS_DEADLINE - $(date +%s) ))
    timeout $left python3 tools/probes/kernel_profile.py attention_backward --sealed sealed_fixtures --reps 7 \
      --only ${ATTENTION_DS_SIZES:-public-0,public-1,public-2,public-3,hidden-0,hidden-1,hidden-2,hidden-3,hidden-4} \
      --set "DS_STORED_MIN_D=0" --sweep '*' --values "${ATTENTION_DS_VALUES:-DS_MIN_CHUNKS=2;DS_BY_TMA=False;DS_STORED=False}" 2>&1 |
      tee "$WORK/attention_ds.txt" ;;
  prefill_gluon)
    # The prefill solution's kernels: cuDNN against the solution as shipped at every size of
    # PREFILL_SIZES under a limit of its own (a barrier mistake hangs the GPU, not the host),
    # then profiled and swept (PREFILL_GLUON_VALUES: the Gluon kernel at D = 64 too, the
    # overlap off; GLUON_MIN_D=512 times the Triton kernel everywhere), each
    # output checked against cuDNN's.
    left=$(( NODUS_DEADLINE - $(date +%s) ))
    sizes=${PREFILL_SIZES:-public-0,public-1,public-2,public-3,public-4,hidden-0,hidden-1,hidden-2,hidden-3,hidden-4}
    timeout $(( left < ${PREFILL_BENCH_S:-240} ? left : ${PREFILL_BENCH_S:-240} )) python3 tools/bench_env.py \
      chunked_prefill --sealed sealed_fixtures --reps 5 --only $sizes --kernels expert,solution 2>&1 |
      tee "$WORK/prefill_gluon_bench.txt" &&
    timeout $(( NODUS_DEADLINE - $(date +%s) )) python3 tools/probes/kernel_profile.py chunked_prefill \
      --sealed sealed_fixtures --reps 5 --kernels expert,solution --only $sizes --sweep '*' \
      --values "${PREFILL_GLUON_VALUES:-GLUON_MIN_D=64;OVERLAP=False}" 2>&1 |
      tee "$WORK/prefill_gluon.txt" ;;
  attention_dq)
    left=$(( NODUS_DEADLINE - $(date +%s) ))
    timeout $left python3 tools/probes/attention_tiles.py --sealed sealed_fixtures --reps 5 \
      --kernels ${ATTENTION_DQ_KERNELS:-dkdv,dq} 2>&1 | tee "$WORK/attention_dq.txt" ;;
  call_memory)
    # What each expert holds past its inputs (the allocator's peak), to set the budgets the
    # ledger reserves it and the wall holds it to: every sealed size and the domain's largest
    # corners, which the fuzz may draw.
    left=$(( NODUS_DEADLINE - $(date +%s) ))
    timeout $left python3 tools/probes/call_memory.py moe_experts expert/moe_experts/expert_grouped_mm.py \
      --sealed sealed_fixtures --cuda --dims '{"T": 65536, "F": 1408}' --dims '{"T": 65536, "F": 1408, "E": 8}' \
      2>&1 | tee "$WORK/call_memory_moe.txt"
    left=$(( NODUS_DEADLINE - $(date +%s) ))
    timeout $left python3 tools/probes/call_memory.py attention_backward expert/attention_backward/expert_cuda.py \
      --sealed sealed_fixtures --cuda --dims '{"T": 65536, "Hq": 32, "Hkv": 32, "D": 256, "W": -1}' \
      2>&1 | tee "$WORK/call_memory_attention.txt" ;;
  attention_picks)
    left=$(( NODUS_DEADLINE - $(date +%s) ))
    timeout $left python3 tools/probes/attention_picks.py --sealed sealed_fixtures --reps 5 \
      ${PICKS_SOLUTION:+--solution $PICKS_SOLUTION} 2>&1 | tee "$WORK/attention_picks.txt" ;;
  batch_attention)
    # Issue 24: 16 attention attempts in batches, each against one expert run (the solution, the
    # starting kernel, the correct styles, 12 cheats), then, with BATCH_SEPARATE=1, each alone
    # with the same --nodus-seed to compare verdicts (local grades: a sealed one draws a secret
    # seed). BATCH_SEALED=1 grades both ways sealed instead (no shrinking: a pipeline's grades;
    # each sealed grade draws its own seed, so the verdicts, not the inputs, compare); BATCH_WARM=1
    # adds --nodus-warm-together (the attempts' first calls side by side). BATCH_K="-k expr"
    # grades the same sizes both ways (a whole grade per attempt does not fit one device
    # call); BATCH_PART=batch or separate runs one half (two calls on a warm machine);
    # BATCH_TURNS=1 grades the batch in one pytest run, in the grader's own turns.
    # BATCH_PRIME=1 first grades the solution alone (its grade kept apart as prime_solution), so
    # that the batch and the separate grades after it all meet a warm host (the grader's
    # Triton cache, the expert's cuDNN plans).
    seeding=$([ -n "${BATCH_SEALED:-}" ] && echo $SEALED || echo --nodus-seed=${BATCH_SEED:-7})
    [ -n "${BATCH_PRIME:-}" ] && grade attention_backward prime_solution expert/attention_backward/solution.py \
      $seeding ${BATCH_K:+-k "$BATCH_K"}
    folder=$WORK/attempts; mkdir -p $folder
    cp expert/attention_backward/solution.py $folder/solution.py
    cp env_suites/attention_backward/starting_kernel.py $folder/starting_kernel.py
    for f in tests/correct/attention_backward/*.py; do cp $f $folder/correct_$(basename $f); done
    for f in $(ls tests/cheats/attention_backward/*.py | head -12); do cp $f $folder/cheat_$(basename $f); done
    if [ -n "${BATCH_TURNS:-}" ] && [ "${BATCH_PART:-batch}" != separate ]; then
      # One pytest run for the 16: the grader splits them into turns of what the GPU holds
      # (grader/turns.py), the expert's sandbox and set-up shared by every turn.
      t0=$(date +%s.%N); left=$(( NODUS_DEADLINE - $(date +%s) ))
      timeout $left python3 -m pytest env_suites/attention_backward -p no:cacheprovider -v --durations=0 \
        --nodus-submission=$folder --nodus-json=$WORK/turns --nodus-call-timeout=60 \
        $seeding \
        $([ -n "${BATCH_WARM:-}" ] && echo --nodus-warm-together) ${BATCH_K:+-k "$BATCH_K"} > $WORK/turns.log 2>&1
      echo "one run rc=$?: $(grep -c 'turn[0-9]*\] \(PASSED\|FAILED\)' $WORK/turns.log) tests in turns"
      grep -A20 "pytest-nodus batch" $WORK/turns.log | head -22
      # Each turn is a test: its setup, call and teardown times show where a turn's wall goes.
      grep -E "^[0-9.]+s (setup|call|teardown) .*turn[0-9]+\]" $WORK/turns.log | head -30
      echo "batch of $(ls $folder | wc -l) in one run: wall=$(python3 -c "print(round($(date +%s.%N)-$t0,1))")s"
      [ -f $WORK/turns/grades.jsonl ] && python3 -m pytest_nodus.commands.plot $WORK/turns/grades.jsonl \
        -o $OUT/batch_attention_turns.png --title "pytest-nodus: $(ls $folder | wc -l) attention attempts graded in one run ($(nvidia-smi --query-gpu=name --format=csv,noheader | head -1))"
    elif [ "${BATCH_PART:-batch}" != separate ]; then
      # An H200 holds 3 attention attempts' sandboxes at once (docs/batch.md): runs of at most
      # BATCH_ROOM, as even as they split (16 in runs of 3: 3 3 3 3 2 2), so that no run is
      # one attempt, which pytest grades alone and writes no batch row for.
      t0=$(date +%s.%N); run=0
      python3 -c 'import sys; from pytest_nodus.grader.batch_files import runs_of
for run in runs_of(sys.argv[2:], int(sys.argv[1])): print(" ".join(run))' ${BATCH_ROOM:-3} $folder/*.py |
      while read -r files; do
        run=$((run + 1)); left=$(( NODUS_DEADLINE - $(date +%s) ))
        if [ $left -lt 30 ]; then echo "run $run skipped (deadline)"; continue; fi
        timeout $left python3 -m pytest env_suites/attention_backward -q -p no:cacheprovider \
          --nodus-submission=$(echo $files | tr ' ' ':') --nodus-json=$WORK/batch$run --nodus-call-timeout=60 \
          $seeding \
          $([ -n "${BATCH_WARM:-}" ] && echo --nodus-warm-together) ${BATCH_K:+-k "$BATCH_K"} \
          > $WORK/batch$run.log 2>&1
        echo "run $run rc=$?: $(echo $files | wc -w) attempts"; grep -A6 "pytest-nodus batch" $WORK/batch$run.log
      done
      echo "batch of $(ls $folder | wc -l) in runs of ${BATCH_ROOM:-3}: wall=$(python3 -c "print(round($(date +%s.%N)-$t0,1))")s"
      ls $WORK/batch*/grades.jsonl >/dev/null 2>&1 && cat $WORK/batch*/grades.jsonl > $WORK/batch_rows.jsonl &&
        python3 -m pytest_nodus.commands.plot $WORK/batch_rows.jsonl -o $OUT/batch_attention.png \
          --title "pytest-nodus: $(ls $folder | wc -l) attention attempts graded in batches ($(nvidia-smi --query-gpu=name --format=csv,noheader | head -1))"
    fi
    if [ -n "${BATCH_SEPARATE:-}" ] || [ "${BATCH_PART:-}" = separate ]; then
      t0=$(date +%s.%N)
      for f in $folder/*.py; do
        # BATCH_ALONE="stem ...": only those attempts alone (a sample, where the call's time is short).
        [ -n "${BATCH_ALONE:-}" ] && ! [[ " $BATCH_ALONE " == *" $(basename $f .py) "* ]] && continue
        grade attention_backward alone_$(basename $f .py) $f --nodus-call-timeout=60 \
          $seeding ${BATCH_K:+-k "$BATCH_K"}
      done
      echo "$(ls $WORK/alone_*.log 2>/dev/null | wc -l) separate grades: wall=$(python3 -c "print(round($(date +%s.%N)-$t0,1))")s"
    fi ;;
  batch_leftovers)
    # A batch whose cheats leave GPU work running after their calls (grader/grading.py,
    # Grader._leftovers): they are taken out as pending_work or gpu_contended, and the honest
    # attempts keep the verdict and about the reward they get alone (same seed, after).
    folder=$WORK/leftovers; mkdir -p $folder
    cp expert/rmsnorm/solution.py $folder/a_solution.py
    cp tests/correct/rmsnorm/torch_ops.py $folder/b_torch_ops.py
    for c in gpu_work_left_when_frozen contend_with_the_experts_setup spin_after_return; do
      cp tests/cheats/rmsnorm/$c.py $folder/cheat_$c.py
    done
    timeout 400 python3 -m pytest env_suites/rmsnorm -q -p no:cacheprovider --nodus-submission=$folder \
      --nodus-json=$WORK/batch_leftovers --nodus-seed=11 > $WORK/batch_leftovers.log 2>&1
    echo "batch rc=$?"; grep -A8 "pytest-nodus batch" $WORK/batch_leftovers.log
    python3 tools/probes/probe_beside_own_work.py 2>&1 | grep -v Warning  # what the batch's leftover probe assumes
    grade rmsnorm alone_solution expert/rmsnorm/solution.py --nodus-seed=11
    grade rmsnorm alone_torch_ops tests/correct/rmsnorm/torch_ops.py --nodus-seed=11 ;;
  owed)
    # The runs owed on an H200 (docs/results/moe_experts.md, docs/results/throughput.md): the
    # moe expert as a trusted submission under its card's 48 GiB budget (more than an H100
    # holds at hidden-1), then issue 24's walls and the experts against themselves. One device
    # call holds about this much: the batch is owed_batch, the warm grader's walls are warm,
    # the bytecode cache's effect is bytecode.
    bash "$0" moe_expert
    PHASES_TWICE=1 bash "$0" phases
    STABILITY_RERUNS=3 bash "$0" attention_stability rmsnorm_stability ;;
  warm)
    # A pipeline's back-to-back grades on one host, sealed: each in a fresh pytest process
    # (pytest_nodus.grade) against each forked from a warm grading process, its sandboxes
    # spawned ahead (pytest_nodus.WarmGrader), alternated after one fresh grade that warms the
    # host's caches (docs/throughput.md). WARM_ENVS, WARM_RUNS (pairs, default 2).
    for env in ${WARM_ENVS:-rmsnorm attention_backward}; do
      left=$(( NODUS_DEADLINE - $(date +%s) ))
      [ $left -lt 60 ] && { echo "warm $env skipped (deadline)"; continue; }
      timeout $left python3 tools/probes/warm_grade_time.py $env --runs ${WARM_RUNS:-2} --device cuda \
        --json-dir "$WORK/warm" 2>&1 |
        grep -v Warning | tee -a "$WORK/warm.txt"
    done ;;
  bytecode)
    # The grader's bytecode cache on this host: the imports of a sandbox, a trusted preload and
    # a grading process with and without it (tools/probes/bytecode_import_time.py), then sealed
    # rmsnorm grades with the cache removed just before (the grade's own helper refills it
    # after its end) and with it, alternated (BYTECODE_RUNS pairs, default 2).
    timeout $(( NODUS_DEADLINE - $(date +%s) )) python3 tools/probes/bytecode_import_time.py --runs 2 2>&1 |
      tee "$WORK/bytecode.txt"
    for run in $(seq ${BYTECODE_RUNS:-2}); do
      rm -rf "$BYTECODE_DIR"
      grade rmsnorm bytecode_without_$run expert/rmsnorm/solution.py $SEALED
      python3 -m pytest_nodus.grader.bytecode > /dev/null  # waits for the helper's lock, then finds it complete
      grade rmsnorm bytecode_with_$run expert/rmsnorm/solution.py $SEALED
    done
    for f in "$WORK"/bytecode_*.json; do
      [ -f "$f" ] && python3 -c "import json, sys; from pytest_nodus.grader import phases; d = json.load(open(sys.argv[1])); print(sys.argv[1].split('/')[-1][:-5], phases.line(d['phases']))" "$f"
    done | tee -a "$WORK/bytecode.txt" ;;
  profile)
    # Where the grading process's own time goes in a sealed rmsnorm grade on the GPU: cProfile
    # of a warm host's grade (the first grade warms the caches), its top functions by own time
    # and by cumulative time; the profile itself is in the archive.
    grade rmsnorm profile_warmup expert/rmsnorm/solution.py $SEALED
    timeout $(( NODUS_DEADLINE - $(date +%s) )) python3 -m cProfile -o $WORK/rmsnorm.prof -m pytest env_suites/rmsnorm \
      -q -p no:cacheprovider --nodus-submission=expert/rmsnorm/solution.py $SEALED --nodus-json=$WORK/profile.json \
      > $WORK/profile.log 2>&1
    python3 -c "import pstats; s = pstats.Stats('$WORK/rmsnorm.prof'); s.sort_stats('tottime').print_stats(25); s.sort_stats('cumulative').print_stats('pytest_nodus', 40)" 2>&1 |
      grep -v '^$' | cut -c1-170 | tee $WORK/profile.txt ;;
  owed_batch)
    # The sealed batch of 16 attention attempts at public-0 against each graded alone, on an
    # H200 (more attempts per turn than an H100's 3): issue 24's 5x (docs/batch.md).
    BATCH_PRIME=1 BATCH_SEALED=1 BATCH_TURNS=1 BATCH_WARM=1 BATCH_SEPARATE=1 BATCH_K="public-0" \
      bash "$0" batch_attention ;;
  heap_growth)
    left=$(( NODUS_DEADLINE - $(date +%s) ))
    timeout $left python3 tools/probes/heap_pool_growth.py --calls 16 --modes plain,heap,heap+kept 2>&1 | tee "$WORK/heap_growth.txt"
    # The moe expert's hold plain and under the heap at hidden-1, its most routes (T K).
    left=$(( NODUS_DEADLINE - $(date +%s) ))
    timeout $left python3 tools/probes/heap_pool_growth.py expert/moe_experts/expert_grouped_mm.py --env moe_experts \
      --sealed sealed_fixtures --size hidden-1 --calls 3 --modes plain,heap 2>&1 | tee -a "$WORK/heap_growth.txt" ;;
  heap_route)
    STYLES="cuda_graph_per_input streams_joined threads_joined workspace_reuse" styles
    for n in skip_output_copy side_stream background_thread empty_unwritten other_scratch hold_gpu_memory \
             cuda_graph_stale_pointers event_fake_join; do echo tests/cheats/rmsnorm/$n.py; done |
      xargs -P 4 -I{} bash -c 'grade rmsnorm cheat_$(basename {} .py) {} '"$SEALED"' --nodus-call-timeout=20 -k "public-0 or hidden-0"'
    grade rmsnorm cheat_gpu_work_left_when_frozen tests/cheats/rmsnorm/gpu_work_left_when_frozen.py $SEALED \
      --nodus-call-timeout=20 -k "public-0 or hidden-0"
    # Autograd's thread routed: the moe expert's gradients still read where autograd wrote them.
    grade moe_experts moe_expert_as_submission expert/moe_experts/expert_grouped_mm.py $SEALED --nodus-trusted \
      -k "not fuzzed"
    # The attention solution at its two largest sizes, where its buffers outgrow the heap, its
    # claims kept (trusted): each role's fixed cost per call shows whether renewing the heap's
    # pools reaches the timed window.
    grade attention_backward attn_solution_claims expert/attention_backward/solution.py $SEALED --nodus-trusted \
      --nodus-reruns=3 -k "public-2 or hidden-4" ;;
  expert_gap)
    # The attention expert graded against itself, at the two sizes where its first rerun reads
    # apart from the later ones (docs/results/attention_backward.md). Two sealed grades of two reruns
    # at those sizes: the expert role's cuDNN plans built in its own process (the plan store
    # emptied first), then loaded from the store the first grade filled. Speedup per size and
    # rerun, and each role's median call.
    rm -rf "$PLAN_STORE"
    grade attention_backward gap_plans_built expert/attention_backward/expert_cuda.py $SEALED --nodus-trusted \
      --nodus-reruns=2 -k "public-3 or hidden-0"
    grade attention_backward gap_plans_loaded expert/attention_backward/expert_cuda.py $SEALED --nodus-trusted \
      --nodus-reruns=2 -k "public-3 or hidden-0"
    python3 - $WORK/gap_plans_built.json $WORK/gap_plans_loaded.json <<'PY'
import json, os, statistics, sys
for path in sys.argv[1:]:
    if not os.path.exists(path):
        continue
    for s in json.load(open(path))["sizes"]:
        if s.get("speedup") is not None:
            calls = s["timed_calls"]
            med = {r: statistics.median(c["t_stream_ms"] for c in calls[r]) for r in ("expert", "submission")}
            print(f"{os.path.basename(path)[:-5]:18s} {s['id'][:10]} r{s['rerun']} {s['speedup']:.3f}x "
                  f"expert {med['expert']:.3f} ms submission {med['submission']:.3f} ms")
PY
    ;;
  phases)
    # One grade at a time, nothing beside them: their phases are issue 24's before/after figures.
    # PHASES_TWICE=1 grades each again at once: the second finds the host warm (the page cache,
    # the grader's Triton cache, the expert's compile cache), as a pipeline's grading host is
    # after its first grade; the submission compiles anew in its own sandbox either way.
    # PHASES_BEFORE=<file> then grades that attention file too, on the host as warm: an earlier
    # solution against today's, the compiles of each its own.
    for pass in 1 ${PHASES_TWICE:+2}; do
      suffix=$([ $pass = 2 ] && echo _warm)
      [ "${PHASES_ONLY:-rmsnorm}" = rmsnorm ] && grade rmsnorm phases_rmsnorm$suffix expert/rmsnorm/solution.py $SEALED
      [ "${PHASES_ONLY:-attention}" = attention ] && grade attention_backward phases_attention$suffix \
        expert/attention_backward/solution.py $SEALED
    done
    [ -n "${PHASES_BEFORE:-}" ] && grade attention_backward phases_attention_before "$PHASES_BEFORE" $SEALED ;;
  compile_ahead)
    # The attention solution with its autotuning candidates compiled side by side
    # (COMPILE_AHEAD), then as it is, one sealed rerun each, alone: calls_first is the figure.
    sed 's/^COMPILE_AHEAD = False/COMPILE_AHEAD = True/' expert/attention_backward/solution.py > $WORK/solution_ahead.py
    grep -q '^COMPILE_AHEAD = True' $WORK/solution_ahead.py || { echo "COMPILE_AHEAD not found"; exit 2; }
    grade attention_backward compile_ahead $WORK/solution_ahead.py $SEALED
    grade attention_backward compile_as_is expert/attention_backward/solution.py $SEALED ;;
  gpu_memory_owners)
    # The question a GPU memory wall needs answered first: does the driver charge each
    # sandbox's process its own bytes, under pids the grader can match to its sandboxes (it
    # runs them in pid namespaces of their own, the device in a container)? An attention grade
    # in the background, NVML's compute processes (nvidia-smi) and the process tree every 2 s.
    grade attention_backward owners_attention expert/attention_backward/solution.py $SEALED -k "public-1 or hidden-0" &
    gpid=$!
    while kill -0 $gpid 2>/dev/null; do
      { echo "== $(date +%T)"; nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv,noheader
        ps -eo pid,ppid,uid,rss,args --forest | grep -E "python|pytest" | grep -v grep | cut -c1-150
      } >> "$WORK/gpu_memory_owners.txt" 2>&1
      sleep 2
    done
    wait $gpid
    grep -A40 "^== " "$WORK/gpu_memory_owners.txt" | tail -80 ;;
  memory_wall)
    # The wall's reading (grader/gpu_memory_wall.py) from outside a child, its cheats (and the
    # dense attention cheats that held 24-35 GiB against a 16 GiB budget), then honest kernels
    # that must pass it: rmsnorm styles near the 2 GiB budget, each solution sealed once.
    python3 tools/probes/gpu_memory_reading.py 2>&1 | grep -v Warning | tee "$WORK/gpu_memory_reading.txt"
    printf 'tests/cheats/%s.py\n' rmsnorm/hold_gpu_memory rmsnorm/hold_gpu_memory_by_driver rmsnorm/gpu_memory_in_a_child |
      xargs -P 3 -I{} bash -c 'grade rmsnorm cheat_$(basename {} .py) {} '"$SEALED"' --nodus-call-timeout=20 -k "public-0 or hidden-0"'
    printf 'tests/cheats/%s.py\n' attention_backward/ignores_window attention_backward/fp8_internally attention_backward/ignores_documents |
      xargs -P 1 -I{} bash -c 'grade attention_backward cheat_$(basename {} .py) {} '"$SEALED"' --nodus-call-timeout=60 -k "public-0 or hidden-0"'
    STYLES="workspace_within_budget torch_ops workspace_reuse" styles
    grade rmsnorm wall_rmsnorm_solution expert/rmsnorm/solution.py $SEALED
    grade attention_backward wall_attention_solution expert/attention_backward/solution.py $SEALED
    grade chunked_prefill wall_prefill_solution expert/chunked_prefill/solution.py $SEALED ;;
  exact_references)
    # Agreement and seconds of the plain and the fused (Triton, tensor-core) references per
    # sealed size, then each solution graded, one rerun, alone: the grader cross-checks the
    # two at each shape's first call and keeps the faster, and the grades' inputs and
    # reference phases are the figures (docs/results/throughput.md).
    for env in chunked_prefill attention_backward; do
      python3 tools/probes/exact_references.py $env --sealed sealed_fixtures --require 1e-5 2>&1 |
        tee -a "$WORK/exact_references.txt"
    done
    grade chunked_prefill exact_prefill expert/chunked_prefill/solution.py $SEALED
    grade attention_backward exact_attention expert/attention_backward/solution.py $SEALED ;;
  xdist)
    # One worker per GPU (gwN takes GPU N): the grade and reward must match a plain run's.
    workers=$(python3 -c "import torch; print(torch.cuda.device_count())")
    grade rmsnorm solution_xdist expert/rmsnorm/solution.py $SEALED --nodus-reruns=2 -n $workers ;;
  prefill|prefill_expert|prefill_cheats|prefill_solution)
    # chunked_prefill: the expert as a trusted submission (cuDNN graded against itself), the
    # solution x3, the starting kernel, then its cheats (prefill_cheats: the cheats alone;
    # prefill_solution: the solution and the starting kernel alone).
    if [ "$MODE" != prefill_cheats ]; then
      [ "$MODE" != prefill_solution ] && grade chunked_prefill prefill_expert_as_submission \
        expert/chunked_prefill/expert_cuda.py $SEALED --nodus-trusted
      [ "$MODE" = prefill_expert ] && continue
      grade chunked_prefill prefill_solution expert/chunked_prefill/solution.py $SEALED --nodus-reruns=3
      grade chunked_prefill prefill_starting_kernel env_suites/chunked_prefill/starting_kernel.py $SEALED
      [ "$MODE" = prefill_solution ] && continue
    fi
    ls tests/cheats/chunked_prefill/*.py | xargs -P ${ATTENTION_PARALLEL:-1} -I{} bash -c \
      'grade chunked_prefill cheat_$(basename {} .py) {} '"$SEALED"' --nodus-call-timeout=60 -k "public-0 or hidden-0"' ;;
  plan_store)
    # Whether the cuDNN experts' stored plans load in a later process and compute the same.
    python3 tools/probes/cudnn_plan_store.py 2>&1 | tee "$WORK/plan_store.txt" ;;
  prefill_close)
    # What issue 21 still asks of the H200, in one call: the expert as a trusted submission, 3
    # sealed reruns (its fuzzed sizes take no part in the reward); one sealed rerun of the
    # solution after it, on a host whose grader caches that grade warmed (a grading host's
    # wall); the cheats; the starting kernel; the solution's 3 sealed reruns; then cuDNN and
    # FlexAttention per sealed size outside the grader,
    # each baseline's prepare outside its window as in a grade, until the deadline.
    grade chunked_prefill prefill_expert_x3 expert/chunked_prefill/expert_cuda.py $SEALED --nodus-trusted \
      --nodus-reruns=3 -k "not fuzzed"
    grade chunked_prefill prefill_solution_once expert/chunked_prefill/solution.py $SEALED
    ls tests/cheats/chunked_prefill/*.py | xargs -P ${ATTENTION_PARALLEL:-4} -I{} bash -c \
      'grade chunked_prefill cheat_$(basename {} .py) {} '"$SEALED"' --nodus-call-timeout=60 -k "public-0 or hidden-0"'
    grade chunked_prefill prefill_starting_kernel env_suites/chunked_prefill/starting_kernel.py $SEALED
    grade chunked_prefill prefill_solution_x3 expert/chunked_prefill/solution.py $SEALED --nodus-reruns=3
    left=$(( NODUS_DEADLINE - $(date +%s) - 20 ))
    [ $left -gt 30 ] && timeout $left python3 tools/bench_env.py chunked_prefill --sealed sealed_fixtures --reps 5 \
      --kernels expert,flex=expert/chunked_prefill/flex_attention_paged.py 2>&1 | tee "$WORK/bench_prefill_flex.txt" ;;
  moe|moe_expert|moe_solution|moe_cheats)
    # moe_experts: the expert as a trusted submission (eager or compiled grouped GEMM against
    # itself), the solution x3 and the starting kernel, then its cheats; each part alone fits
    # one device call.
    [ $MODE = moe ] || [ $MODE = moe_expert ] && grade moe_experts moe_expert_as_submission \
      expert/moe_experts/expert_grouped_mm.py $SEALED --nodus-trusted --nodus-reruns=3
    if [ $MODE = moe ] || [ $MODE = moe_solution ]; then
      grade moe_experts moe_solution expert/moe_experts/solution.py $SEALED --nodus-reruns=${MOE_RERUNS:-3}
      grade moe_experts moe_starting_kernel env_suites/moe_experts/starting_kernel.py $SEALED
    fi
    [ $MODE = moe ] || [ $MODE = moe_cheats ] && ls tests/cheats/moe_experts/*.py | xargs -P ${ATTENTION_PARALLEL:-1} -I{} \
      bash -c 'grade moe_experts cheat_$(basename {} .py) {} '"$SEALED"' --nodus-call-timeout=60 -k "public-0 or hidden-0"' ;;
  attention|attention_solution)
    grade attention_backward attn_solution expert/attention_backward/solution.py $SEALED --nodus-reruns=3
    [ "$MODE" = attention_solution ] && continue
    grade attention_backward attn_expert_as_submission expert/attention_backward/expert_cuda.py $SEALED --nodus-trusted
    grade attention_backward attn_starting_kernel env_suites/attention_backward/starting_kernel.py $SEALED ;;
  *) echo "unknown mode $MODE"; exit 2 ;;
  esac
done
# One archive per invocation, named by its modes: a second invocation in the same command
# must not overwrite the first's grades.
tar czf "$OUT/gpu-grades-$TAG$(IFS=-; echo "${*:-quick}").tar.gz" -C "$WORK" .
ls "$WORK"/*.json >/dev/null 2>&1 && python3 -m pytest_nodus.commands.table "$WORK"/*.json
# The walls' own readings per grade: what held, the most CPU run outside the harness between
# two calls (grader/idle_work.py), the most GPU memory the submission held past its start
# (grader/gpu_memory_wall.py), rounds timed again on a contended GPU (grader/gpu_idle.py),
# timed calls whose outputs were copied inside the call, submission/expert (docs/timing.md).
ls "$WORK"/*.json >/dev/null 2>&1 && python3 - "$WORK"/*.json <<'PY'
import json, os, sys
for path in sys.argv[1:]:
    g = json.load(open(path))
    idle = [s["idle_work_ms"] for s in g["sizes"] if s.get("idle_work_ms") is not None]
    held = [s["gpu_held_gib"] for s in g["sizes"] if s.get("gpu_held_gib") is not None]
    print(f"{os.path.basename(path)[:-5]:40s} idle_work_max={max(idle) if idle else None} "
          f"gpu_held_gib_max={max(held) if held else None} "
          f"contended_rounds={sum(s.get('contended_rounds') or 0 for s in g['sizes'])} wall={g.get('wall_s')} "
          f"outputs_copied={sum(s.get('outputs_copied') or 0 for s in g['sizes'])}/"
          f"{sum(s.get('expert_outputs_copied') or 0 for s in g['sizes'])} "
          f"isolation={','.join(g.get('isolation') or [])}")
    # A trusted submission keeps its claims: each role's fixed cost, median(window - t_stream)
    # in us per timed size, shows whether the window costs every role the same.
    fixed = []
    for s in g["sizes"]:
        calls = s.get("timed_calls") or {}
        if calls.get("submission") and calls["submission"][0]["t_stream_ms"] is not None:
            cost = {r: sorted(c["window_ms"] - c["t_stream_ms"] for c in calls[r]) for r in ("expert", "submission")}
            fixed.append(f"{s['id'][:10]} " + "/".join(f"{1e3 * v[len(v) // 2]:.1f}" for v in cost.values()))
    if fixed:
        print(f"  fixed cost us expert/submission: {'  '.join(fixed)}")
    # Where the wall went (s), the calls by part (grader/phases.py), and the calls' count.
    p = g.get("phases") or {}
    calls = sum(s.get("calls") or 0 for s in g["sizes"] if isinstance(s.get("calls"), int))
    print("  phases s: " + " ".join(f"{k}={v / 1e3:.2f}" for k, v in p.items()
                                    if isinstance(v, (int, float)) and k != "overhead_ratio") + f" submission_calls={calls}")
PY
# Cheats against the verdicts their files declare for the GPU (EXPECT["cuda"]).
ls "$WORK"/cheat_*.json >/dev/null 2>&1 && python3 tests/corpus/expectations.py "$WORK"/cheat_*.json
