#!/usr/bin/env bash
# A grader change, A/B: the same sealed grade by the grader at REF (a commit, checked out in a
# temporary worktree) and by this working tree, alternated RUNS times so drift hits both
# alike. Prints, per grade, the status and the phases a start-up change moves (seconds).
#   bash tools/probes/grade_ab.sh REF ENV [RUNS]     e.g.  grade_ab.sh bc4dc78 attention_backward 2
# The grade is the environment's solution, sealed, one rerun, alone on the machine.
set -eu
ref=$1; env=$2; runs=${3:-2}
root=$PWD
base=$(mktemp -d); json=$(mktemp)
trap 'git -C "$root" worktree remove --force "$base" >/dev/null 2>&1; rm -f "$json"' EXIT
git worktree add -f -q --detach "$base" "$ref"
for _ in $(seq "$runs"); do
  for tree in "$base" "$root"; do
    # From the tree's root: its own pytest_nodus is imported, whatever is installed.
    (cd "$tree" && python3 -m pytest "env_suites/$env" --nodus-submission="expert/$env/solution.py" \
       --nodus-sealed=sealed_fixtures -q -p no:cacheprovider --nodus-json="$json" >/dev/null 2>&1) || true
    python3 - "$([ "$tree" = "$root" ] && echo tree || echo "$ref")" "$json" <<'PY'
import json, sys
grade = json.load(open(sys.argv[2]))
phases = grade["phases"]
s = lambda name: f"{phases.get(name, 0.0) / 1e3:.2f}"
print(f"{sys.argv[1]:>10} {grade['status']:8} wall {s('wall')} startup {s('startup')} sandbox starts {s('start')} "
      f"(process {s('start_process')}, standby {s('start_standby')}, load {s('start_load')}) teardown {s('teardown')}")
PY
  done
done
