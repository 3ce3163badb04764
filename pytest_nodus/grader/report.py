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

from pytest_nodus import __version__ as nodus_version
from pytest_nodus.grader import phases, reward

SCHEMA_VERSION = "2.7"
SCHEMA_PATH = Path(__file__).parent / "schema" / "grade.schema.json"

_SIZE_FIELDS = ("id", "kind", "rerun", "status", "dims", "error", "tolerance", "t_submission_ms", "t_expert_ms",
                "t_submission_iqr_ms", "t_expert_iqr_ms", "t_submission_grader_ms", "overhead_ms", "submission_overhead_ms", "speedup", "throughput", "throughput_unit",
                "expert_error", "t_baselines_ms", "baseline_errors", "baseline_notes", "calls", "calls_with_children", "idle_work_ms",
                "contended_rounds", "gpu_reserved_gib", "gpu_held_gib", "outputs_copied", "expert_outputs_copied", "timed_calls",
                "kernels", "waived_flags", "device", "phases", "reference_paths")


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
    basis = reward.basis(meta["device"]["kind"], meta.get("against", "expert"))
    rewards = [reward.paid(v, basis) for v in verdicts]
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
        "reward": _known(statistics.median, rewards) if status == "correct" else reward.FLOOR,
        "reward_basis": basis,
        "speedup": statistics.median(speedups) if speedups else None,
        "flags": flags,
        "sizes": [{k: r.get(k) for k in _SIZE_FIELDS} for r in sorted(results, key=_size_order)],
        "reruns": {"count": reruns, "rewards": rewards, "statuses": [v.status for v in verdicts],
                   "speedups": [v.speedup for v in verdicts],
                   "min": _known(min, rewards), "median": _known(statistics.median, rewards),
                   "max": _known(max, rewards)},
        "seed": meta.get("seed"),
        "wall_s": meta.get("wall_s"),
        "phases": phases.grade_phases(results, meta.get("wall_s"), meta.get("outside_sizes")),
        "not_graded": meta.get("not_graded", 0),
        "grader": meta["grader"],
    }
    return document


def _known(summary, values):
    """``summary`` of the values that are not None (a correct CPU check's rewards are); None if none is."""
    known = [v for v in values if v is not None]
    return summary(known) if known else None


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


# The throughput column is scaled per row so that no figure reads 0.0: an interpreted CPU
# kernel moves kilobytes per second where a GPU kernel moves terabytes.
_PREFIXES = ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"), (1.0, ""))


def throughput_text(value: float | None, unit: str) -> str:
    """``value`` in ``unit`` ("GB/s" or "TF/s") with the prefix that gives it 1-3 digits."""
    if value is None or not math.isfinite(value) or value <= 0:
        return "-"
    base = {"G": 1e9, "T": 1e12}[unit[0]]
    per_s = value * base
    scale, prefix = next(((f, p) for f, p in _PREFIXES if per_s >= f), _PREFIXES[-1])
    return f"{per_s / scale:.3g} {prefix}{unit[1:]}"


def speedup_text(value: float | None) -> str:
    if value is None:
        return "-"
    text = f"{value:#.3g}"  # three significant digits, trailing zeros kept ("1.00x")
    return f"{text.rstrip('.')}x"


def spread_text(median: float | None, iqr: float | None) -> str:
    """The interquartile range as a share of the median (needs four timed calls)."""
    if not median or iqr is None:
        return ""
    return f" ±{100 * iqr / median:.0f}%"


NOTES = {
    reward.CPU_CHECK: "CPU check: correctness on every size; the times compare the Triton interpreter with compiled "
                      "torch and rank nothing on a GPU, so a correct CPU grade has no reward",
    reward.VS_STARTING_KERNEL: "local check: timed against the environment's starting kernel (t_start), run the "
                               "same way; the speedup says how far the kernel has come and pays nothing",
}
SUMMARIES = {
    reward.CPU_CHECK: "correct: CPU check passed on every size, no reward (CPU speedup {speedup}, context only)",
    reward.VS_STARTING_KERNEL: "correct on every size: {speedup} the starting kernel's speed (local check, no reward)",
}


def _row_name(s: dict, reruns: int) -> str:
    name = s["id"] if reruns == 1 else f"{s['id']} r{s['rerun']}"
    return f"{name} ({s['calls']} calls)" if s["kind"] == "fuzz" else name


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
    basis = document.get("reward_basis", reward.SPEED_VS_EXPERT)
    lines = [header] + ([NOTES[basis]] if basis in NOTES else [])
    other = "t_start ms" if basis == reward.VS_STARTING_KERNEL else "t_exp ms"
    reruns = document["reruns"]["count"]
    names = [_row_name(s, reruns) for s in document["sizes"]]
    width = max([len("size"), *map(len, names)])  # whole ids: a cut id hides the dims that tell sizes apart
    lines.append(f"{'size':<{width}} {'kind':<6} {'status':<8} {'error/tolerance':>17} {'t_sub ms':>15} "
                 f"{other:>15} {'speedup':>9} {'throughput':>11}")
    for name, s in zip(names, document["sizes"]):
        error = f"{_fmt(s['error'], '.2e')}/{_fmt(s['tolerance'], '.1e')}"
        t_sub = _fmt(s["t_submission_ms"], ".4g") + spread_text(s["t_submission_ms"], s.get("t_submission_iqr_ms"))
        t_exp = _fmt(s["t_expert_ms"], ".4g") + spread_text(s["t_expert_ms"], s.get("t_expert_iqr_ms"))
        lines.append(f"{name:<{width}} {s['kind']:<6} {s['status']:<8} {error:>17} {t_sub:>15} {t_exp:>15} "
                     f"{speedup_text(s['speedup']):>9} {throughput_text(s['throughput'], s.get('throughput_unit') or 'GB/s'):>11}")
    for name, s in zip(names, document["sizes"]):
        if s.get("t_baselines_ms") or s.get("baseline_notes"):
            timed = [f"{k} {v:.4f} ms vs expert {_fmt(s.get('t_expert_ms'), '.4f')} ms"
                     for k, v in (s.get("t_baselines_ms") or {}).items()]
            failed = [f"{k}: {v}" for k, v in (s.get("baseline_notes") or {}).items()]
            lines.append(f"baseline at {name} (context, not in the reward): {'; '.join(timed + failed)}")
    waived = [w for s in document["sizes"] for w in (s.get("waived_flags") or [])]
    for w in waived[:5]:
        lines.append(f"waived (trusted) {w['code']} at {w['size']}: {w['detail']}")
    for f in document["flags"][:20]:
        lines.append(f"flag {f['code']} at {f['size']}: {f['detail']}")
    if len(document["flags"]) > 20:
        lines.append(f"... and {len(document['flags']) - 20} more flags in the JSON")
    copied = [f"{n} {s['outputs_copied']}/{s['expert_outputs_copied']}" for n, s in zip(names, document["sizes"])
              if s.get("outputs_copied") or s.get("expert_outputs_copied")]
    if copied:  # a copy per call in the call's time: docs/timing.md says where it comes from
        lines.append(f"outputs copied inside the timed call (timed calls, submission/expert): {', '.join(copied[:6])}"
                     + (f" and {len(copied) - 6} more sizes" if len(copied) > 6 else ""))
    if document.get("not_graded"):
        lines.append(f"not graded: {document['not_graded']} test(s) after the grade stopped at its first failure")
    r = document["reruns"]
    if reruns > 1 and r["min"] is not None:
        lines.append(f"reruns {reruns}: reward min {r['min']:.3f} median {r['median']:.3f} max {r['max']:.3f}; "
                     f"statuses {', '.join(r['statuses'])}")
    elif reruns > 1:
        lines.append(f"reruns {reruns}: statuses {', '.join(r['statuses'])}")
    speed = f", speedup {speedup_text(document['speedup'])} (geometric mean over timed sizes)" if document["speedup"] else ""
    if document.get("phases", {}).get("wall"):
        lines.append(phases.line(document["phases"]))
    if document["reward"] is None:
        lines.append(SUMMARIES[basis].format(speedup=speedup_text(document["speedup"])))
    else:
        lines.append(f"reward {document['reward']:.4f} (status {document['status']}{speed})")
    return lines


def grader_versions() -> dict:
    """The versions a grade was made with: pytest-nodus's, torch's and Triton's."""
    import torch

    try:
        import triton

        triton_version = triton.__version__
    except ImportError:
        triton_version = None
    return {"version": nodus_version, "torch": torch.__version__, "triton": triton_version}
