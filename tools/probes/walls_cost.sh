#!/usr/bin/env bash
# What the kernel-held walls cost a grade in wall time: the same sealed grade by the grader as
# it is ("walls") and by a copy of it that raises none of them ("no_walls": no namespaces, no
# own uid, no cgroup, no seccomp filter; Landlock and everything in the harness stay), the two
# alternated RUNS times each so drift hits both alike. Prints each grade's wall and the phases
# the walls touch (sandbox start by stage, rest, teardown), then the medians per variant.
#   OUT=$OUT RUNS=2 bash tools/probes/walls_cost.sh rmsnorm [attention_backward ...]
# Each grade is the environment's solution, sealed, one rerun, alone on the machine.
set -u
OUT=${OUT:-walls-out}; mkdir -p "$OUT"; OUT=$(cd "$OUT" && pwd)
ROOT=$PWD
patch() {  # file, old, new: in the copy; fails loudly if the grader no longer reads so
  python3 - "$@" <<'PY'
import sys
path, old, new = sys.argv[1:]
text = open(path).read()
assert old in text, f"{path}: {old!r} not found"
open(path, "w").write(text.replace(old, new, 1))
PY
}
tree() {  # variant -> a copy of the tree graded by that variant of the grader
  local dir; dir=$(mktemp -d); chmod 755 "$dir"  # readable by the sandbox's own uid, as a checkout is
  cp -r "$ROOT"/{pytest_nodus,env_suites,expert,sealed_fixtures,conftest.py,pyproject.toml} "$dir"
  if [ "$1" = no_walls ]; then
    patch "$dir/pytest_nodus/grader/walls.py" '    unshare, setpriv = shutil.which("unshare"), shutil.which("setpriv")' \
      '    return (), ()  # the probe'"'"'s variant
    unshare, setpriv = shutil.which("unshare"), shutil.which("setpriv")'
    patch "$dir/pytest_nodus/grader/cgroup.py" '        where = home()
' '        return None  # the probe'"'"'s variant
        where = home()
'
    patch "$dir/pytest_nodus/sandbox/seccomp.py" '    if platform.machine() != "x86_64":' \
      '    if True:  # the probe'"'"'s variant'
  fi
  echo "$dir"
}
declare -A TREES=([walls]=$(tree walls) [no_walls]=$(tree no_walls))
for env in "${@:-rmsnorm}"; do
  for run in $(seq 1 "${RUNS:-2}"); do
    for variant in walls no_walls; do
      name="${env}_${variant}_$run"
      (cd "${TREES[$variant]}" && PYTHONPATH=$PWD python3 -m pytest "env_suites/$env" -q -p no:cacheprovider \
         --nodus-submission="expert/$env/solution.py" --nodus-sealed=sealed_fixtures \
         --nodus-json="$OUT/$name.json" > "$OUT/$name.log" 2>&1) || true
    done
  done
done
python3 - "$OUT" <<'PY'
import glob, json, os, statistics, sys
keys = ("wall", "start", "start_process", "start_arena", "start_confinement", "start_load", "rest", "teardown")
rows = {}
print(f"{'grade':28s} {'status':8s} " + " ".join(f"{k:>14s}" for k in keys) + "  isolation")
for path in sorted(glob.glob(os.path.join(sys.argv[1], "*.json"))):
    g = json.load(open(path))
    name = os.path.basename(path)[:-5]
    phases = g.get("phases") or {}
    figures = [phases.get(k, 0.0) / 1e3 for k in keys]
    rows.setdefault(name.rsplit("_", 1)[0], []).append(figures)
    print(f"{name:28s} {g['status']:8s} " + " ".join(f"{v:14.2f}" for v in figures)
          + "  " + ",".join(g.get("isolation") or []))
print("\nmedian s per grade")
for group, figures in rows.items():
    print(f"{group:28s} {'':8s} " + " ".join(f"{statistics.median(c):14.2f}" for c in zip(*figures)))
PY
rm -rf "${TREES[@]}"
