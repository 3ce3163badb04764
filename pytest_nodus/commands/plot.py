"""Reward against measured speed: what the timer saw next to what was paid.

    nodus-plot GRADES.json... -o reward.png [--title TEXT]
    nodus-plot RUN/grades.jsonl... -o reward.png    # batches' summaries, one point per row

(``nodus-ray --png`` draws a batch's rows the same way.)

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

TITLE = "pytest-nodus: reward paid vs speed measured"


def group(name: str, status: str | None = None) -> str:
    """A grade's group by its file name; an attempt of a batch named otherwise is grouped by
    its verdict (``status``), so a pipeline's batch shows which attempts were paid."""
    name = name.removeprefix("attn_")  # attention grades of tools/gpu_check.sh
    for prefix, label in (("cheat_", "cheats"), ("correct_", "correct kernels"), ("solution", "solution"),
                          ("starting", "starting kernel"), ("expert", "expert as submission")):
        if name.startswith(prefix):
            return label
    if status is None:
        return "other"
    return "attempts, correct" if status == "correct" else "attempts, not correct"


Point = tuple  # (speedup, reward, name, status)


def _point(name: str, status: str, speedup, reward) -> Point | None:
    if reward is None:  # a correct CPU check: no reward to draw
        return None
    return (speedup or 1e-2, reward, name, status)  # crashed before any timing: the left edge


def points_from_grades(paths) -> dict[str, list[Point]]:
    """One point per grade document, grouped by its file name."""
    points: dict[str, list[Point]] = {}
    for path in map(Path, paths):
        grade = json.loads(path.read_text())
        if (point := _point(path.stem, grade["status"], grade["speedup"], grade["reward"])) is not None:
            points.setdefault(group(path.stem), []).append(point)
    return points


def points_from_rows(rows) -> dict[str, list[Point]]:
    """One point per attempt of a batch (``nodus-ray``'s rows), grouped by name, else verdict."""
    points: dict[str, list[Point]] = {}
    for row in rows:
        name = Path(row["attempt"]).stem
        if (point := _point(name, row["status"], row.get("speedup"), row["reward"])) is not None:
            points.setdefault(group(name, row["status"]), []).append(point)
    return points


def points_from_paths(paths) -> dict[str, list[Point]]:
    """Grade documents (``.json``) and batch summaries (``.jsonl``) together: a batch graded
    in several runs (gpu_check's runs of BATCH_ROOM) is drawn as one figure of every attempt."""
    paths = list(map(Path, paths))
    rows = [json.loads(line) for path in paths if path.suffix == ".jsonl"
            for line in path.read_text().splitlines() if line.strip()]
    points = points_from_grades([path for path in paths if path.suffix != ".jsonl"])
    for label, pts in points_from_rows(rows).items():
        points.setdefault(label, []).extend(pts)
    return points


STYLES = {"cheats": ("x", "red"), "correct kernels": ("o", "tab:blue"), "solution": ("*", "tab:green"),
          "starting kernel": ("s", "tab:orange"), "expert as submission": ("D", "black"), "other": (".", "grey"),
          "attempts, correct": ("o", "tab:blue"), "attempts, not correct": ("x", "red")}


def draw(points: dict[str, list[Point]], output: Path, title: str = TITLE, labels: bool = True) -> int:
    """Reward paid against speed measured, one marker per point; returns the points drawn.
    ``labels``: name each point (a batch of hundreds draws unlabelled)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(10, 6.5))
    xs = [p[0] for pts in points.values() for p in pts]
    line = [min(xs + [0.1]) / 1.5, max(xs + [4.0]) * 1.5]
    ax.plot(line, [math.log2(x) for x in line], color="grey", lw=1, ls="--", label="log2(speedup): honest kernels")
    ax.axhline(-24, color="red", lw=0.8, ls=":")
    for label, pts in points.items():
        marker, color = STYLES[label]
        ax.scatter([p[0] for p in pts], [p[1] for p in pts], marker=marker, color=color, s=60,
                   label=f"{label} ({len(pts)})", zorder=3)
    ax.set_xscale("log")
    ax.set_xlabel("speedup over the expert measured by the timer (geometric mean over timed sizes)")
    ax.set_ylabel("reward paid")
    ax.set_ylim(-26.5, 4)
    if labels:
        _label(ax, fig, points)
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=8, loc="center left")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(output, dpi=130)
    plt.close(fig)
    return len(xs)


# A 6.5 pt label's line height and average character width, in points.
LINE, CHAR_WIDTH = 8.0, 3.6


def _label(ax, fig, points: dict[str, list[Point]]) -> None:
    """Names each point, its label lifted a line at a time past the labels already placed, so
    that points close together (the cheats that crashed before any timing all sit at the
    floor's left edge) keep every name readable."""
    ax.autoscale_view()
    placed: list[tuple[float, float, float]] = []  # (left, bottom, right), in points
    for label, pts in points.items():
        for x, y, name, status in pts:
            short = name.removeprefix("attn_").removeprefix("cheat_").removeprefix("correct_")
            text = short if status == "correct" or label == "cheats" else f"{short} ({status})"
            left, bottom = ax.transData.transform((x, y)) * 72 / fig.dpi + (5, 3)
            right, lift = left + CHAR_WIDTH * len(text), 0.0
            while any(a < right and left < b and abs(bottom + lift - c) < LINE for a, c, b in placed):
                lift += LINE
            placed.append((left, bottom + lift, right))
            ax.annotate(text, (x, y), fontsize=6.5, xytext=(5, 3 + lift), textcoords="offset points")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("grades", nargs="+", type=Path)
    parser.add_argument("-o", "--output", type=Path, default=Path("reward.png"))
    parser.add_argument("--title", default=TITLE)
    args = parser.parse_args(argv)
    draw(points_from_paths(args.grades), args.output, args.title)
    print(args.output)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
