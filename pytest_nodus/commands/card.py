"""The task card's declared facts, generated from the environment's declaration.

    nodus-card env_suites/rmsnorm [--check]

A card (``TASK.md``) explains; the numbers a submission is held to (sizes, size domain,
tolerance, time limit, what is forbidden) come from ``environment.py`` and are written
between the markers below, so the two cannot disagree (``--check`` exits 1 if they do;
``tests/unit/test_task_cards.py`` runs it for every environment).
"""

from __future__ import annotations

import argparse
import importlib
import sys
from pathlib import Path

from pytest_nodus.grader.environment import load_timeout_s

BEGIN = "<!-- nodus:declared: generated from environment.py by nodus-card; do not edit by hand -->"
END = "<!-- /nodus:declared -->"
KINDS = {"cuda": "GPU", "cpu": "CPU (local mode)"}


def _dims(dims) -> str:
    return ", ".join(f"{k}={v}" for k, v in dims.items())


def _domain(domain) -> str:
    from pytest_nodus.grader.environment import IntRange

    parts = [f"{name} in [{d.low}, {d.high}]" if isinstance(d, IntRange) else
             f"{name} in {{{', '.join(str(v) for v in d.values)}}}" for name, d in domain.dims.items()]
    return "; ".join(parts) + (f"; {domain.constraint_text}" if domain.constraint_text else "")


def _tolerance(name: str, tol, scales) -> str:
    from pytest_nodus.grader.correctness import ElementwiseRelative, Normwise

    if isinstance(tol, ElementwiseRelative):
        return (f"`{name}`: every element |out - ref| / (|ref| + {tol.floor_fraction:g} rms(ref)) <= {tol.limit:g}")
    if isinstance(tol, Normwise):
        if not tol.floor_from:
            return f"`{name}`: ||out - ref|| / ||ref|| <= {tol.limit:g}"
        floor = tol.floor_from if tol.floor_from in scales else f"{tol.floor_from}_ref"
        what = f", where {floor} is {scales[floor]}" if floor in scales else ""
        fraction = "" if tol.floor_fraction == 1 else f"{tol.floor_fraction:g} "
        return f"`{name}`: ||out - ref|| / max(||ref||, {fraction}||{floor}||) <= {tol.limit:g}{what}"
    return f"`{name}`: {tol!r}"


def render(env) -> str:
    lines = [BEGIN, "", "| | " + " | ".join(KINDS[k] for k in env.profiles) + " |",
             "|---|" + "---|" * len(env.profiles)]
    rows = {
        "public sizes (timed)": lambda k, p: "<br>".join(_dims(d) for d in p.sizes),
        "fuzzed sizes": lambda k, p: _domain(p.domain),
        "time limit per call": lambda k, p: f"{p.call_timeout_s:g} s",
        "time limit for the kernel file's import": lambda k, p: f"{load_timeout_s(p.call_timeout_s):g} s",
        # Reserved per grade on a shared GPU (grader/gpu_ledger.py) and held by the grader's
        # reading of the driver (grader/gpu_memory_wall.py); a CPU grade reserves nothing.
        "GPU memory besides inputs and outputs": lambda k, p:
            f"up to {p.memory_gib:g} GiB (and 1 GiB for code)" if k == "cuda" else "-",
        # Held by the kernel where the grader can make limit cgroups (grader/cgroup_limits.py).
        "host memory and tasks (processes and threads), all the submission starts included": lambda k, p:
            f"up to {p.sandbox_limits(k)[0] / 2**30:g} GiB, {p.sandbox_limits(k)[1]} tasks",
    }
    for label, cell in rows.items():
        lines.append(f"| {label} | " + " | ".join(cell(k, p) for k, p in env.profiles.items()) + " |")
    lines += ["", "Tolerance (against an fp32 reference; NaN or inf anywhere fails):"]
    lines += [f"- {_tolerance(name, tol, env.error_scales)}" for name, tol in env.tolerance.items()]
    if env.rounded_reference is not None:
        from pytest_nodus.grader.correctness import ROUNDED_FACTOR

        lines += [f"- an output over its limit still passes within {ROUNDED_FACTOR:g}x the error of the same math "
                  "rounded where an honest kernel of these dtypes rounds, on the same inputs"]
    forbidden = "; ".join(f.name for f in env.forbid) or "nothing beyond the defaults"
    lines += ["", f"Forbidden: {forbidden}.", "", END]
    return "\n".join(lines)


def load(folder: Path):
    folder = Path(folder).resolve()
    sys.path.insert(0, str(folder.parents[1]))
    return importlib.import_module(f"{folder.parent.name}.{folder.name}.environment").ENVIRONMENT


def update(card: str, env) -> str:
    if BEGIN not in card or END not in card:
        raise ValueError("the card has no nodus:declared block")
    head, rest = card.split(BEGIN, 1)
    return head + render(env) + rest.split(END, 1)[1]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="nodus-card", description=__doc__.split("\n")[0])
    parser.add_argument("folder", type=Path, help="an environment folder (env_suites/<name>)")
    parser.add_argument("--check", action="store_true", help="exit 1 if TASK.md differs from the declaration")
    args = parser.parse_args(argv)
    path = args.folder / "TASK.md"
    card = path.read_text()
    fresh = update(card, load(args.folder))
    if args.check:
        if fresh != card:
            print(f"{path}: the declared block differs from environment.py (run nodus-card {args.folder})")
            return 1
        return 0
    path.write_text(fresh)
    return 0


if __name__ == "__main__":
    sys.exit(main())
