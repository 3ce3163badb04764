#!/usr/bin/env bash
# The expert graded as a trusted submission (its claims kept) by the grader as it is and by
# variants of it in copies of the tree: how much longer the expert's windows and stream
# times are than the submission's for the same code (medians over sizes, us), and the
# rewards. A grader that costs every role the same gives 0 us and rewards within +-0.02.
#   OUT=$OUT bash tools/probes/role_asymmetry.sh [VARIANT...]   (on the H200; ~80 s each)
# Variants: as_is; grader_uid (the submission without a uid of its own); twin (the
# submission's sandbox started as a second expert process: same uid, walls, environment);
# expert_first (the expert's sandbox, and so its CUDA context, created before the
# submission's); twin_expert_first; rest_both (the expert's sandbox frozen between its calls
# too); no_rest (no sandbox frozen between its calls, only while another is called);
# same_path and twin_same_path (the submission's calls handled as the expert's: no idle
# checks, output checks or rest); twin_same_path_swapped (as twin_same_path, each sandbox's
# calls recorded under the other's role); twin_same_path_expert_first; absorb (the harness
# runs an empty kernel between go and its start event: a handoff into its context lands
# before t_stream starts).
set -u
OUT=${OUT:-gpu-out}; mkdir -p "$OUT"; OUT=$(cd "$OUT" && pwd)
ROOT=$PWD
summary() { python3 - "$1" <<'PY'
import json, statistics as st, sys
g = json.load(open(sys.argv[1]))
window, stream, fixed = [], [], []
for s in g["sizes"]:
    calls = s.get("timed_calls")
    if calls:
        e, u = calls["expert"], calls["submission"]
        med = lambda cs, k: st.median(c[k] for c in cs)
        window.append(1e3 * (med(e, "window_ms") - med(u, "window_ms")))
        stream.append(1e3 * (med(e, "t_stream_ms") - med(u, "t_stream_ms")))
        fixed.append(1e3 * (st.median(c["window_ms"] - c["t_stream_ms"] for c in e)
                            - st.median(c["window_ms"] - c["t_stream_ms"] for c in u)))
parts = []
for s in g["sizes"]:
    calls = s.get("timed_calls")
    if calls and calls["expert"] and calls["expert"][0].get("window_parts_ms"):
        e, u = calls["expert"], calls["submission"]
        row = []
        for k in (0, 1):
            row.append(1e3 * (st.median(c["window_parts_ms"][k] for c in e) - st.median(c["window_parts_ms"][k] for c in u)))
        mid = lambda cs: st.median(c["window_ms"] - sum(c["window_parts_ms"]) - c["t_stream_ms"] for c in cs)
        row.append(1e3 * (mid(e) - mid(u)))
        parts.append(row)
if parts:
    print("  of the fixed cost (us): open to go %.2f, flag to close %.2f, go to flag less t_stream %.2f"
          % tuple(st.median(r[k] for r in parts) for k in range(3)))
taken = [1e3 * (s["overhead_ms"] - s["submission_overhead_ms"]) for s in g["sizes"]
         if s.get("overhead_ms") is not None and s.get("submission_overhead_ms") is not None]
if taken:
    print(f"  the submission's own fixed cost under the expert's by {st.median(taken):.2f} us (median over sizes)")
print(f"{sys.argv[1].rsplit('/', 1)[-1]:18s} rewards {[round(r, 3) for r in g['reruns']['rewards']]} "
      f"isolation {','.join(g['isolation'])}  expert - submission (us): window {st.median(window):.2f}, "
      f"t_stream {st.median(stream):.2f}, fixed cost {st.median(fixed):.2f}")
PY
}
patch() {  # file, old, new: in the copy; fails loudly if the grader no longer reads so
  python3 - "$@" <<'PY'
import sys
path, old, new = sys.argv[1:]
text = open(path).read()
assert old in text, f"{path}: {old!r} not found"
open(path, "w").write(text.replace(old, new, 1))
PY
}
variant() {  # name: grade the trusted expert with that variant of the grader
  local name=$1 tree
  tree=$(mktemp -d); cp -r "$ROOT"/{pytest_nodus,env_suites,expert,sealed_fixtures,conftest.py,pyproject.toml} "$tree"
  case $name in
    as_is) ;;
    grader_uid) patch "$tree/pytest_nodus/grader/walls.py" "def sandbox_uid(import_root: Path) -> int | None:
" "def sandbox_uid(import_root: Path) -> int | None:
    return None  # the probe's variant
" ;;
  esac
  case $name in twin|twin_expert_first)
    patch "$tree/pytest_nodus/grader/sandbox_pool.py" 'process_role = role.split(":", 1)[0]' \
      'process_role = "expert" if role == "submission" else role.split(":", 1)[0]' ;;
  esac
  case $name in expert_first|twin_expert_first|twin_same_path_expert_first)
    patch "$tree/pytest_nodus/grader/grading.py" '            submission = self.pool.get(env, "submission", size.dims)' \
      '            self.pool.get(env, "expert", size.dims)  # the probe'"'"'s variant
            submission = self.pool.get(env, "submission", size.dims)' ;;
  esac
  case $name in rest_both)
    patch "$tree/pytest_nodus/grader/grading.py" '        if submission:
            self._rest(sandbox, result, timed)' '        if submission:
            self._rest(sandbox, result, timed)
        else:
            sandbox.rest()  # the probe'"'"'s variant' ;;
  esac
  case $name in no_rest)
    patch "$tree/pytest_nodus/grader/sandbox_process.py" '        if self.cgroup is not None and not self.cgroup.frozen:
            self.cgroup.freeze()' '        pass  # the probe'"'"'s variant' ;;
  esac
  case $name in same_path|twin_same_path*)
    patch "$tree/pytest_nodus/grader/grading.py" '        submission = role == "submission"
' '        submission = False  # the probe'"'"'s variant
' ;;
  esac
  case $name in twin_same_path*)
    patch "$tree/pytest_nodus/grader/sandbox_pool.py" 'process_role = role.split(":", 1)[0]' \
      'process_role = "expert" if role == "submission" else role.split(":", 1)[0]' ;;
  esac
  case $name in twin_same_path_swapped)
    patch "$tree/pytest_nodus/grader/grading.py" '                        round_times[role] = call
' '                        round_times[{"expert": "submission", "submission": "expert"}[role]] = call  # the probe'"'"'s variant
' ;;
  esac
  case $name in absorb)
    patch "$tree/pytest_nodus/sandbox/harness.py" '            memory_ops.wait_geq(stream, go, int(message["call"]))  # the inputs exist from here on
' '            memory_ops.wait_geq(stream, go, int(message["call"]))  # the inputs exist from here on
            torch.cuda._sleep(1)  # the probe'"'"'s variant: a first kernel in the context before the start event
' ;;
  esac
  (cd "$tree" && PYTHONPATH=$PWD python3 -m pytest env_suites/rmsnorm -q -p no:cacheprovider \
     --nodus-submission=expert/rmsnorm/expert_cuda.py --nodus-sealed=sealed_fixtures --nodus-trusted \
     --nodus-reruns="${RERUNS:-2}" -k "public or hidden" --nodus-json="$OUT/$name.json" > "$OUT/$name.log" 2>&1)
  summary "$OUT/$name.json" || tail -5 "$OUT/$name.log"
  rm -rf "$tree"
}
[ $# -gt 0 ] || set -- as_is grader_uid
for name in "$@"; do variant "$name"; done
