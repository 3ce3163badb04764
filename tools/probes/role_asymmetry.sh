#!/usr/bin/env bash
# The expert graded as a trusted submission (its claims kept), with and without the
# submission's own uid: how much longer the expert's windows and stream times are than the
# submission's for the same code (medians over sizes, us), and the rewards. A grader that
# costs every role the same gives 0 us and rewards within +-0.02.
#   OUT=$OUT bash tools/probes/role_asymmetry.sh      (on the H200; ~4 min)
set -u
OUT=${OUT:-gpu-out}; mkdir -p "$OUT"
summary() { python3 - "$1" <<'PY'
import json, statistics as st, sys
g = json.load(open(sys.argv[1]))
window, stream = [], []
for s in g["sizes"]:
    calls = s.get("timed_calls")
    if calls:
        e, u = calls["expert"], calls["submission"]
        window.append(1e3 * (st.median(c["window_ms"] for c in e) - st.median(c["window_ms"] for c in u)))
        stream.append(1e3 * (st.median(c["t_stream_ms"] for c in e) - st.median(c["t_stream_ms"] for c in u)))
print(f"{sys.argv[1].rsplit('/', 1)[-1]:18s} rewards {[round(r, 3) for r in g['reruns']['rewards']]} "
      f"own-uid {'own-uid' in g['isolation']}  expert - submission: window {st.median(window):.2f} us, "
      f"t_stream {st.median(stream):.2f} us")
PY
}
grade() {  # name, in the tree at $2
  (cd "$2" && PYTHONPATH=$PWD python3 -m pytest env_suites/rmsnorm -q -p no:cacheprovider \
     --nodus-submission=expert/rmsnorm/expert_cuda.py --nodus-sealed=sealed_fixtures --nodus-trusted \
     --nodus-reruns=2 -k "public or hidden" --nodus-json="$OUT/$1.json" > "$OUT/$1.log" 2>&1)
  summary "$OUT/$1.json"
}
OUT=$(cd "$OUT" && pwd)
grade own_uid "$PWD"
# The same grader with the uid wall taken out, in a copy of the tree.
COPY=$(mktemp -d); cp -r pytest_nodus env_suites expert sealed_fixtures conftest.py pyproject.toml "$COPY"
python3 - "$COPY/pytest_nodus/grader/walls.py" <<'PY'
import sys
path = sys.argv[1]
text = open(path).read()
head = "def sandbox_uid(import_root: Path) -> int | None:\n"
assert head in text
open(path, "w").write(text.replace(head, head + "    return None  # the probe's variant: no uid of its own\n"))
PY
grade grader_uid "$COPY"
rm -rf "$COPY"
