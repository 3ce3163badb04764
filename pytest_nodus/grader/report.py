"""What people and pipelines read: the terminal section and the JSON grade.

The JSON document is specified by ``schema/grade.schema.json`` (checked in, validated by
the tests); bump :data:`SCHEMA_VERSION` on any change a reader could notice.
"""

from __future__ import annotations

import json
import math
import statistics
from pathlib import Path
from typing import Any

from pytest_nodus.grader import reward

SCHEMA_VERSION = "2.2"
SCHEMA_PATH = Path(__file__).parent / "schema" / "grade.schema.json"

_SIZE_FIELDS = ("id", "kind", "rerun", "status", "dims", "error", "tolerance", "t_submission_ms", "t_expert_ms",
                "t_submission_iqr_ms", "t_expert_iqr_ms", "t_submission_grader_ms", "overhead_ms", "submission_overhead_ms", "speedup", "throughput", "throughput_unit",
                "expert_error", "t_baselines_ms", "baseline_errors", "baseline_notes", "calls", "calls_with_children", "idle_work_ms",
                "contended_rounds", "timed_calls",
                "kernels", "waived_flags", "device")


def build_grade(results: list[dict], meta: dict[str, Any], reruns: int) -> dict[str, Any]:
    """Fold per-size results (from every worker) into the grade document."""
    per_rerun = [[r for r in results if r.get("rerun", 0) == n] for n in range(reruns)]
    verdicts = [reward.verdict(rs) for rs in per_rerun]
    if meta.get("not_graded"):
        # A grade stopped at its first failure: a rerun it never reached has that failure's
        # status, not the "nothing graded" error an empty rerun would otherwise get.
        reached = reward.worst(v.status for v, rs in zip(verdicts, per_rerun) if rs)
        verdicts = [v if rs else reward.Verdict(reached, reward.FLOOR, None) for v, rs in zip(verdicts, per_rerun)]
    status = reward.worst(v.status for v in verdicts)
    rewards = [v.reward for v in verdicts]
    speedups = [v.speedup for v in verdicts if v.speedup]
    env = next((r["env"] for r in results if r.get("env")), meta.get("env") or {"name": None, "version": None})
    isolations = [r["isolation"] for r in results if r.get("isolation")]
    flags = []
    for r in results:
        for f in r.get("flags", []):
            entry = {"size": f.get("size", r["id"]), "rerun": r.get("rerun", 0), "code": f["code"], "detail": f["detail"]}
            if entry not in flags:
                flags.append(entry)
    document = {
        "schema_version": SCHEMA_VERSION,
        "env": env,
        "submission": meta["submission"],
        "device": meta["device"],
        "sealed": meta["sealed"],
        "trusted": bool(meta.get("trusted")),
        # The walls that held at every size.
        "isolation": [w for w in isolations[0] if all(w in i for i in isolations)] if isolations else [],
        # Fewest over the sizes: a grade is as sealed as its least sealed size.
        "removed_fatbins": min((r.get("removed_fatbins") or 0 for r in results if r.get("isolation")), default=0),
        "status": status,
        "reward": statistics.median(rewards) if status == "correct" else reward.FLOOR,
        "speedup": statistics.median(speedups) if speedups else None,
        "flags": flags,
        "sizes": [{k: r.get(k) for k in _SIZE_FIELDS} for r in sorted(results, key=_size_order)],
        "reruns": {"count": reruns, "rewards": rewards, "statuses": [v.status for v in verdicts],
                   "speedups": [v.speedup for v in verdicts],
                   "min": min(rewards), "median": statistics.median(rewards), "max": max(rewards)},
        "seed": meta.get("seed"),
        "wall_s": meta.get("wall_s"),
        "not_graded": meta.get("not_graded", 0),
        "grader": meta["grader"],
    }
    return document


def _size_order(r: dict) -> tuple:
    kind_rank = {"public": 0, "hidden": 1, "fuzz": 2}.get(r.get("kind"), 3)
    tail = r.get("id", "").split("-", 1)[-1].split(":")[0]
    return (r.get("rerun", 0), kind_rank, int(tail) if tail.isdigit() else 0, r.get("id", ""))


def write_json(document: dict, path: Path) -> None:
    Path(path).write_text(json.dumps(document, indent=2, allow_nan=False) + "\n")


def _fmt(value, spec: str, missing: str = "-") -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return missing
    return format(value, spec)


def terminal_lines(document: dict) -> list[str]:
    env = document["env"]
    sub = document["submission"]
    header = (f"environment {env['name']} v{env['version']} | submission {sub['path']} (sha256 {sub['sha256'][:12]}) | "
              f"{document['device']['description']} | {'sealed' if document['sealed'] else 'local check'} | "
              f"isolation {', '.join(document['isolation']) or 'none'}")
    if document.get("removed_fatbins"):
        header += f" | {document['removed_fatbins']} torch kernel fatbins removed"
    if document.get("trusted"):
        header += " | TRUSTED: forbidden kernels waived (calibration, never an agent's grade)"
    unit = next((s["throughput_unit"] for s in document["sizes"] if s.get("throughput_unit")), "GB/s")
    columns = f"{'size':<26} {'kind':<6} {'status':<8} {'error/tolerance':>17} {'t_sub ms':>10} {'t_exp ms':>10} " \
              f"{'speedup':>8} {unit:>9}"
    lines = [header, columns]
    reruns = document["reruns"]["count"]
    for s in document["sizes"]:
        name = s["id"] if reruns == 1 else f"{s['id']} r{s['rerun']}"
        if s["kind"] == "fuzz":
            name = f"{name} ({s['calls']} calls)"
        error = f"{_fmt(s['error'], '.2e')}/{_fmt(s['tolerance'], '.1e')}"
        lines.append(f"{name[:26]:<26} {s['kind']:<6} {s['status']:<8} {error:>17} {_fmt(s['t_submission_ms'], '.4f'):>10} "
                     f"{_fmt(s['t_expert_ms'], '.4f'):>10} {_fmt(s['speedup'], '.3f'):>7}x {_fmt(s['throughput'], '.1f'):>9}")
    for s in document["sizes"]:
        if s.get("t_baselines_ms") or s.get("baseline_notes"):
            name = s["id"] if reruns == 1 else f"{s['id']} r{s['rerun']}"
            timed = [f"{k} {v:.4f} ms vs expert {_fmt(s.get('t_expert_ms'), '.4f')} ms"
                     for k, v in (s.get("t_baselines_ms") or {}).items()]
            failed = [f"{k}: {v}" for k, v in (s.get("baseline_notes") or {}).items()]
            lines.append(f"baseline at {name[:26]} (context, not in the reward): {'; '.join(timed + failed)}")
    waived = [w for s in document["sizes"] for w in (s.get("waived_flags") or [])]
    for w in waived[:5]:
        lines.append(f"waived (trusted) {w['code']} at {w['size']}: {w['detail']}")
    for f in document["flags"][:20]:
        lines.append(f"flag {f['code']} at {f['size']}: {f['detail']}")
    if len(document["flags"]) > 20:
        lines.append(f"... and {len(document['flags']) - 20} more flags in the JSON")
    if reruns > 1:
        r = document["reruns"]
        lines.append(f"reruns {reruns}: reward min {r['min']:.3f} median {r['median']:.3f} max {r['max']:.3f}; "
                     f"statuses {', '.join(r['statuses'])}")
    speed = f", speedup {document['speedup']:.3f}x (geometric mean over timed sizes)" if document["speedup"] else ""
    lines.append(f"reward {document['reward']:.4f} (status {document['status']}{speed})")
    return lines
