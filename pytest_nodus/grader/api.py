"""The Python API for pipelines: ``pytest_nodus.grade(env, submission, ...) -> Grade``.

Each grade runs pytest underneath, in a process of its own (``python -m pytest``), exactly as
the command line does: the caller's process imports no torch, holds no sandbox and keeps no
state of the grade's. What comes back is the grade's JSON (``schema/grade.schema.json``),
typed: :class:`Grade`, with the raw document in ``Grade.document``.

    from pytest_nodus import grade
    g = grade("rmsnorm", "attempt.py", sealed="sealed_fixtures", device="cuda")
    if g.correct: pay(g.reward)

``env`` is an environment this installation carries (``pytest_nodus.environments`` entry
points) or the path of an environment's folder. Several submissions are graded as a batch:
one pytest run, every attempt against the same expert run and the same inputs, each with the
verdict its own grade would give (``grader/rounds.py``); ``one_run=False`` grades them one
after another instead. A batch larger than its GPU can hold at once (every attempt's sandbox
with its memory budget) is graded in runs of as many as fit, each against its own expert run,
and an attempt that ran out of GPU memory in its batch is graded again alone.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from pytest_nodus.grader import batch_files, bytecode, walls


@dataclass(frozen=True)
class Flag:
    size: str
    rerun: int
    code: str  # docs/grade.md lists every code
    detail: str


@dataclass(frozen=True)
class SizeGrade:
    id: str  # public-N:<dims>, hidden-N or fuzz
    kind: str
    rerun: int
    status: str
    error: float | None
    tolerance: float | None
    t_submission_ms: float | None
    t_expert_ms: float | None
    speedup: float | None


@dataclass(frozen=True)
class Grade:
    """One grade, typed; ``document`` is the whole JSON."""

    env: str
    submission: Path
    status: str  # correct, wrong, flagged, error, timeout (docs/grade.md)
    reward: float | None  # None for a correct grade that pays nothing (reward_basis)
    reward_basis: str
    speedup: float | None
    flags: tuple[Flag, ...]
    sizes: tuple[SizeGrade, ...]
    sealed: bool
    wall_s: float | None
    document: dict[str, Any]
    exit_status: int  # pytest's: 0 only when correct (a batch's run: only when every attempt is)
    output: str  # what pytest printed (the terminal report)

    @property
    def correct(self) -> bool:
        return self.status == "correct"

    @classmethod
    def from_document(cls, document: dict, exit_status: int = 0, output: str = "") -> Grade:
        sizes = tuple(SizeGrade(**{k: s.get(k) for k in SizeGrade.__dataclass_fields__}) for s in document["sizes"])
        return cls(env=document["env"]["name"], submission=Path(document["submission"]["path"]),
                   status=document["status"], reward=document["reward"],
                   reward_basis=document.get("reward_basis", "speed_vs_expert"), speedup=document["speedup"],
                   flags=tuple(Flag(**f) for f in document["flags"]), sizes=sizes, sealed=document["sealed"],
                   wall_s=document.get("wall_s"), document=document, exit_status=exit_status, output=output)


class GradeFailed(RuntimeError):
    """pytest ran but wrote no grade: a usage error (an option, an environment), said in ``output``."""

    def __init__(self, message: str, output: str):
        super().__init__(message)
        self.output = output


def installed_environments() -> dict[str, importlib.metadata.EntryPoint]:
    """The environments this installation carries: name -> the entry point of its declaration."""
    return {ep.name: ep for ep in importlib.metadata.entry_points(group="pytest_nodus.environments")}


def suite_folder(env: str | Path) -> Path:
    """An environment's folder: an installed environment's name, or a folder's path."""
    if Path(env).is_dir():
        return Path(env).resolve()
    entry = installed_environments().get(str(env))
    if entry is None:
        raise ValueError(f"no environment '{env}': neither an installed environment nor a folder")
    return Path(importlib.util.find_spec(entry.module).origin).parent


def grade(env: str | Path, submission: str | Path | Sequence[str | Path], *, sealed: str | Path | None = None,
          device: str = "auto", reruns: int = 1, seed: int | None = None, against: str = "expert",
          pytest_args: Sequence[str] = (), timeout_s: float | None = None, one_run: bool = True) -> Grade | list[Grade]:
    """Grade ``submission`` (one kernel file, or several: a list back, in order) against ``env``.

    ``sealed``: the folder of hidden sizes (a sealed grade). ``device``: auto, cuda or cpu.
    ``against``: expert, or starting_kernel for a local check. ``pytest_args`` go to pytest
    as they are (``-n 2``, ``--nodus-call-timeout=60``). Several files are one batch (no path of
    theirs may hold ':', the batch's separator) unless ``one_run`` is False. Raises
    :class:`GradeFailed` when pytest writes no grade (a usage error),
    ``subprocess.TimeoutExpired`` past ``timeout_s``."""
    return _grade(_fresh_process, env, submission, sealed=sealed, device=device, reruns=reruns, seed=seed,
                  against=against, pytest_args=pytest_args, timeout_s=timeout_s, one_run=one_run)


def _grade(runner, env, submission, *, one_run: bool, **options) -> Grade | list[Grade]:
    if not isinstance(submission, (str, Path)):
        files = [Path(one).resolve() for one in submission]
        if not one_run or len(files) == 1:
            return [_run(runner, env, [one], **options)[0] for one in files]
        grades = _run(runner, env, files, **options)  # more attempts than the GPU holds: in turns (grader/turns.py)
        # An attempt run out of GPU memory may owe it to a batch-mate over its budget: its grade
        # alone stands instead.
        return [_run(runner, env, [one], **options)[0] if batch_files.ran_out_beside_others(g.document) else g
                for one, g in zip(files, grades)]
    return _run(runner, env, [Path(submission).resolve()], **options)[0]


def _fresh_process(args: list[str], cwd: str, timeout_s: float | None) -> tuple[int, str]:
    """pytest in a process of its own: (its exit status, its output)."""
    run = subprocess.run([*walls.die_with_parent(), sys.executable, "-m", "pytest", *args], cwd=cwd,
                         env=bytecode.process_environ(), capture_output=True, text=True, timeout=timeout_s, stdin=subprocess.DEVNULL)
    return run.returncode, run.stdout + run.stderr


def _run(runner, env, files: list[Path], *, sealed, device, reruns, seed, against, pytest_args,
         timeout_s) -> list[Grade]:
    """One pytest run: a lone grade for one file, a batch's grades in order for several
    (pytest grades a batch of one file alone, and writes no batch folder for it)."""
    folder = suite_folder(env)
    batch = len(files) > 1
    with tempfile.TemporaryDirectory(prefix="nodus-api-") as work:
        report = Path(work) / ("grades" if batch else "grade.json")
        # --assert=plain: no verdict reads pytest's assertion introspection (the grade is the
        # JSON), and rewriting every module of its plugins' packages (hypothesis: ~100) costs
        # each run seconds wherever Python writes no bytecode cache to keep the rewrite in.
        args = [str(folder), "-p", "no:cacheprovider", "-q", "--assert=plain",
                f"--rootdir={work}", f"--nodus-submission={os.pathsep.join(str(f) for f in files)}",
                f"--nodus-json={report}", f"--nodus-device={device}", f"--nodus-reruns={reruns}",
                f"--nodus-against={against}", *([f"--nodus-sealed={Path(sealed).resolve()}"] if sealed else []),
                *([f"--nodus-seed={seed}"] if seed is not None else []), *pytest_args]
        returncode, output = runner(args, work, timeout_s)
        written = [report / batch_files.document_name(i, f) for i, f in enumerate(files)] if batch else [report]
        if not all(path.is_file() for path in written):
            last = next((line for line in reversed(output.splitlines()) if line.strip()), "no output")
            raise GradeFailed(f"pytest wrote no grade (exit status {returncode}): {last}", output)
        return [Grade.from_document(json.loads(path.read_text()), returncode, output) for path in written]
