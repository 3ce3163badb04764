"""A batch of attempts on disk: which files it grades, and what it writes.

    <out>/<index>-<file stem>.json   each attempt's grade document (schema/grade.schema.json)
    <out>/grades.jsonl               one row per attempt (index, file, status, reward, speedup, flags)
    <out>/grades.png                 reward paid against speed measured, one dot per attempt

Shared by a batch graded in one pytest run (``--nodus-submission DIR``) and by ``nodus-ray``,
which fans attempts out over hosts: the same files, the same rows. Imports no torch: a Ray
driver uses it without a GPU stack.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Sequence

FLOOR = -24.0  # the reward of anything not correct (grader/reward.py); kept here so a driver imports no torch
ROWS = "grades.jsonl"
PICTURE = "grades.png"


def runs_of(files: list, room: int) -> list[list]:
    """``files`` in order, in as few runs of at most ``room`` as hold them, as even as they
    split (16 in runs of 3: 3 3 3 3 2 2): a run of one only where ``room`` is 1 or a single
    file is left (a batch's turns, grader/turns.py; a pipeline's runs of a pytest each)."""
    count = -(-len(files) // max(room, 1))
    runs, first = [], 0
    for left in range(count, 0, -1):
        size = -(-(len(files) - first) // left)
        runs.append(files[first:first + size])
        first += size
    return runs


def ran_out_beside_others(document: dict) -> bool:
    """Whether a batch's attempt raised a GPU out-of-memory error. The room of a batch
    assumes each attempt allocates at most the card's published budget, and nothing holds
    an attempt to it: one that takes more can run a batch-mate out of memory, which would
    then be graded as raising. Such an attempt is graded again alone, where only its own
    allocations count (a file that raises this on purpose gains a separate grade, nothing
    more)."""
    return any(f["code"] == "raised" and "OutOfMemoryError" in f["detail"] for f in document["flags"])


def attempt_files(paths: Sequence[str | Path]) -> list[Path]:
    """Kernel files, in order: each path a file, or a folder whose ``*.py`` files count (sorted)."""
    files: list[Path] = []
    for path in map(Path, paths):
        files += sorted(p for p in path.glob("*.py") if p.is_file()) if path.is_dir() else [path]
    return files


def document_name(index: int, attempt: Path) -> str:
    return f"{index}-{Path(attempt).stem}.json"


def row(index: int, attempt: Path, tries: int, document: dict | None, failure: str | None) -> dict[str, Any]:
    """An attempt's summary row; with no document (its grade never came back), at the floor."""
    if document is None:
        return {"index": index, "attempt": str(attempt), "status": "error", "reward": FLOOR, "speedup": None,
                "flags": [{"code": "no_result", "detail": failure}], "tries": tries, "wall_s": None}
    return {"index": index, "attempt": str(attempt), "status": document["status"], "reward": document["reward"],
            "speedup": document["speedup"], "flags": [{"code": f["code"], "detail": f["detail"]} for f in document["flags"]],
            "tries": tries, "wall_s": document.get("wall_s")}


def write_document(out_dir: Path, index: int, attempt: Path, document: dict) -> Path:
    Path(out_dir).mkdir(parents=True, exist_ok=True)
    path = Path(out_dir) / document_name(index, attempt)
    path.write_text(json.dumps(document, indent=1))
    return path


def write_rows(path: Path, rows: list[dict]) -> None:
    Path(path).write_text("".join(json.dumps(r) + "\n" for r in rows))


def draw_rows(path: Path, rows: list[dict], title: str) -> bool:
    """The batch's picture (``nodus-plot``'s drawing); False where matplotlib is not installed
    (it is an extra: the grade itself never needs it)."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    from pytest_nodus.commands import plot

    plot.draw(plot.points_from_rows(rows), Path(path), title=title, labels=len(rows) <= 40)
    return True


def terminal_lines(rows: list[dict], out: Path | None) -> list[str]:
    """The batch's lines in pytest's terminal summary: one per attempt."""
    width = max(len(Path(r["attempt"]).name) for r in rows)
    lines = [f"{'#':>3} {'attempt':<{width}} {'status':<8} {'reward':>8} {'speedup':>8}  flags"]
    for r in rows:
        paid = "-" if r["reward"] is None else f"{r['reward']:.3f}"
        speed = "-" if r["speedup"] is None else f"{r['speedup']:.3f}"
        codes = ",".join(sorted({f["code"] for f in r["flags"]})) or "-"
        lines.append(f"{r['index']:>3} {Path(r['attempt']).name:<{width}} {r['status']:<8} {paid:>8} {speed:>8}  {codes}")
    if out is not None:
        lines.append(f"grades, rows and picture: {out}/")
    return lines
