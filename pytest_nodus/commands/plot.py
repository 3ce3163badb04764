"""Reward against measured speed: what the timer saw next to what was paid.

    nodus-plot GRADES.json... -o reward.png [--title TEXT]

Each JSON grade is one point: x is the geometric-mean speedup over the expert that the
timer measured (for a cheat too, so it sits where the timer would have credited it), y the
reward paid. Honest kernels lie on y = log2(x); cheats sit at the floor, however fast the
timer thought they were. Grades are grouped by file name: cheat_*, correct_*, solution,
starting_kernel, expert_as_submission.
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path


def group(name: str) -> str:
    name = name.removeprefix("attn_")  # attention grades of tools/gpu_check.sh
    for prefix, label in (("cheat_", "cheats"), ("correct_", "correct kernels"), ("solution", "solution"),
                          ("starting", "starting kernel"), ("expert", "expert as submission")):
        if name.startswith(prefix):
            return label
    return "other"


def main(argv=None) -> int:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    parser = argparse.ArgumentParser()
    parser.add_argument("grades", nargs="+", type=Path)
    parser.add_argument("-o", "--output", type=Path, default=Path("reward.png"))
    parser.add_argument("--title", default="pytest-nodus: reward paid vs speed measured")
    args = parser.parse_args(argv)
    points: dict[str, list] = {}
    for path in args.grades:
        grade = json.loads(path.read_text())
        if grade["reward"] is None:  # a correct CPU check: no reward to draw
            continue
        speedup = grade["speedup"] or 1e-2  # crashed before any timing: drawn at the left edge
        points.setdefault(group(path.stem), []).append((speedup, grade["reward"], path.stem, grade["status"]))
    fig, ax = plt.subplots(figsize=(10, 6.5))
    xs = [p[0] for pts in points.values() for p in pts]
    line = [min(xs + [0.1]) / 1.5, max(xs + [4.0]) * 1.5]
    ax.plot(line, [math.log2(x) for x in line], color="grey", lw=1, ls="--", label="log2(speedup): honest kernels")
    ax.axhline(-24, color="red", lw=0.8, ls=":")
    styles = {"cheats": ("x", "red"), "correct kernels": ("o", "tab:blue"), "solution": ("*", "tab:green"),
              "starting kernel": ("s", "tab:orange"), "expert as submission": ("D", "black"), "other": (".", "grey")}
    for label, pts in points.items():
        marker, color = styles[label]
        ax.scatter([p[0] for p in pts], [p[1] for p in pts], marker=marker, color=color, s=60, label=label, zorder=3)
        for x, y, name, status in pts:
            short = name.removeprefix("attn_").removeprefix("cheat_").removeprefix("correct_")
            ax.annotate(short if status == "correct" or label == "cheats" else f"{short} ({status})", (x, y),
                        fontsize=6.5, rotation=35 if y == -24 else 0, xytext=(3, 3), textcoords="offset points")
    ax.set_xscale("log")
    ax.set_xlabel("speedup over the expert measured by the timer (geometric mean over timed sizes)")
    ax.set_ylabel("reward paid")
    ax.set_ylim(-26.5, 4)
    ax.set_title(args.title, fontsize=10)
    ax.legend(fontsize=8, loc="center left")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(args.output, dpi=130)
    print(args.output)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
