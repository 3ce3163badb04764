"""Print a compact table of JSON grades: one line per grade file, then per-size times.

    nodus-table GRADE.json...
"""

import json
import sys
from pathlib import Path

from pytest_nodus.grader.report import speedup_text, throughput_text


def main(paths=None):
    paths = sys.argv[1:] if paths is None else paths
    rows, trusted = [], False
    for path in paths:
        g = json.loads(Path(path).read_text())
        flags = ",".join(sorted({f["code"] for f in g["flags"]})) or "-"
        speed = f"{g['speedup']:.3f}" if g["speedup"] else "-"
        r = g["reruns"]
        trusted |= bool(g.get("trusted"))
        status = g["status"] + ("*" if g.get("trusted") else "")  # *: --nodus-trusted calibration
        paid = "none" if g["reward"] is None else f"{g['reward']:.3f}"  # none: a correct CPU check
        spread = " ".join("-" if r[k] is None else f"{r[k]:.3f}" for k in ("min", "median", "max"))
        rows.append(f"{Path(path).stem:<28} {status:<8} {paid:>8} {speed:>7} [{spread}] {g['wall_s']:>6.1f}s {flags}")
    print(f"{'grade':<28} {'status':<8} {'reward':>8} {'speedup':>7} [min median max] {'wall':>7} flags")
    print("\n".join(rows))
    if trusted:
        print("* trusted (--nodus-trusted): forbidden kernels waived, a calibration grade")
    for path in paths:
        g = json.loads(Path(path).read_text())
        timed = [s for s in g["sizes"] if s["t_submission_ms"] is not None]
        if not timed or Path(path).stem.startswith("cheat_"):
            continue
        speedups = g["reruns"].get("speedups")  # schema 1.1; absent in older grades
        per_rerun = f" (speedup per rerun: {', '.join(f'{x:.3f}' if x else '-' for x in speedups)})" \
            if speedups and len(speedups) > 1 else ""
        print(f"-- {Path(path).stem}{per_rerun}")
        for s in timed:
            baselines = "".join(f" | {k} {v:.4f} ms" for k, v in (s.get("t_baselines_ms") or {}).items())
            clock = s.get("t_submission_grader_ms")  # schema 1.3: the grader's own clock
            clock = f" clk {clock:.4f}" if clock is not None else ""
            print(f"   {s['id']:<24} r{s['rerun']} sub {s['t_submission_ms']:.4f} ms{clock} exp {s['t_expert_ms']:.4f} ms "
                  f"{speedup_text(s['speedup'])} {throughput_text(s['throughput'], s['throughput_unit'] or 'GB/s')} "
                  f"err {s['error']:.2e}{baselines}")


if __name__ == "__main__":
    main()
