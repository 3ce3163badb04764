"""Attempts graded as Ray tasks across a cluster, one GPU per task, gathered into one row per
attempt in the attempts' order (``pip install pytest-nodus[ray]``).

    import ray
    from pytest_nodus.fanout.ray_grades import grade_attempts
    ray.init(address="auto")
    rows = grade_attempts("attention_backward", attempts, sealed="sealed_fixtures", device="cuda",
                          jsonl="grades.jsonl")

Each task receives its attempts' sources (one, or ``per_task`` of them), writes each under
the attempt's own file name in a scratch directory and grades them with
:func:`pytest_nodus.grade`: several attempts of a task are one batch against one expert run on
its GPU (``grader/rounds.py``). The environment (an installed name or a folder) and the sealed
folder are resolved on the worker, so every worker host needs the grader's checkout at the
same path. Ray places the tasks (``num_gpus=1`` on a GPU cluster); nothing here schedules.

With ``warm=True`` each worker process grades through a :class:`pytest_nodus.WarmGrader` it
keeps across its tasks (Ray reuses a worker for the tasks it places there): every grade
still a fresh process with fresh sandboxes, forked from a warm one (``grader/prefork.py``),
without the interpreter's, torch's and the sandboxes' start in each. The warm process dies
with its worker.

A task whose worker is lost (killed, out of memory, its node gone) is submitted again, up to
``retries`` times; past that each of its attempts' rows is at the floor with status ``error``
and code ``no_result``. A grade that ran is never retried, whatever its verdict, and a grader that
raised (a usage error: the same for every attempt) is reported, not retried. No attempt is
ever missing from the rows.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any, Sequence

from pytest_nodus.grader import batch_files
from pytest_nodus.grader.batch_files import FLOOR, attempt_files, row as _row  # noqa: F401  (re-exported)


# This worker process's warm grader (warm=True), and what it was started for: the device
# request, the GPU Ray gave the task (its CUDA_VISIBLE_DEVICES, fixed in the warm process's
# environment at its start) and the attempts per task.
_warm: dict = {}


def _warm_grader(device: str, attempts: int):
    from pytest_nodus.grader.warm_grader import WarmGrader

    key = (device, os.environ.get("CUDA_VISIBLE_DEVICES"), attempts)
    held = _warm.get("grader")
    if held is not None and (_warm["key"] != key or not held.alive):
        held.close()  # started for another GPU, or ended: one warm process per worker
        held = None
    if held is None:
        held = _warm["grader"] = WarmGrader(device=device, attempts=attempts)
        _warm["key"] = key
    return held


def _grade_chunk(env: str, names: Sequence[str], sources: Sequence[bytes], sealed: str | None, device: str,
                 reruns: int, pytest_args: Sequence[str], progress: str | None, indices: Sequence[int],
                 warm: bool = False) -> list[dict]:
    """The task: its attempts' grade documents, in order; several attempts are one batch (one
    expert run on this task's GPU). Its pid goes to ``progress`` first, per attempt, so an
    operator (or a test) can see which worker grades which attempt."""
    from pytest_nodus.grader.api import grade

    if progress:
        for index in indices:
            # Written aside and renamed: a reader that sees the file sees its pid.
            written = Path(progress) / f".{index}.pid.{os.getpid()}"
            written.write_text(str(os.getpid()))
            os.replace(written, Path(progress) / f"{index}.pid")
    with tempfile.TemporaryDirectory(prefix="nodus-ray-") as work:
        paths = []
        for index, name, source in zip(indices, names, sources):
            (Path(work) / str(index)).mkdir()  # two attempts may share a file name
            paths.append(Path(work) / str(index) / name)
            paths[-1].write_bytes(source)
        if warm:
            grades = _warm_grader(device, len(paths)).grade(env, paths, sealed=sealed, reruns=reruns,
                                                             pytest_args=pytest_args)
        else:
            grades = grade(env, paths, sealed=sealed, device=device, reruns=reruns, pytest_args=pytest_args)
        return [g.document for g in grades]


def _lost(exc: BaseException) -> bool:
    from ray import exceptions

    return isinstance(exc, (exceptions.WorkerCrashedError, exceptions.NodeDiedError, exceptions.ObjectLostError,
                            exceptions.OwnerDiedError, exceptions.LocalRayletDiedError))


def grade_attempts(env: str | Path, attempts: Sequence[str | Path], *, sealed: str | Path | None = None,
                   device: str = "auto", reruns: int = 1, pytest_args: Sequence[str] = (), retries: int = 1,
                   jsonl: str | Path | None = None, out_dir: str | Path | None = None,
                   progress_dir: str | Path | None = None, per_task: int = 1,
                   warm: bool = False) -> list[dict[str, Any]]:
    """One row per attempt (files, or folders of them), in order; ``jsonl`` gets them as JSON
    Lines and ``out_dir`` each full grade as ``<index>-<file stem>.json``. ``per_task``
    attempts share a task: a batch against one expert run on its GPU (a lost worker retries
    them all). ``warm``: each worker grades from a warm process it keeps across its tasks.
    Starts a local Ray instance if none is connected."""
    import ray

    if not ray.is_initialized():
        ray.init()
    files = attempt_files(attempts)
    gpus = 1 if device == "cuda" or (device == "auto" and ray.cluster_resources().get("GPU", 0) > 0) else 0
    # max_retries=0: a lost worker comes back here, where the retry is counted and bounded.
    task = ray.remote(num_gpus=gpus, max_retries=0)(_grade_chunk)
    env_ref = str(Path(env).resolve()) if Path(env).is_dir() else str(env)
    sealed_ref = str(Path(sealed).resolve()) if sealed else None
    progress = str(progress_dir) if progress_dir else None
    sources = [f.read_bytes() for f in files]
    step = max(1, per_task)
    chunks = [list(range(i, min(i + step, len(files)))) for i in range(0, len(files), step)]

    def submit(c: int):
        members = chunks[c]
        return task.remote(env_ref, [files[i].name for i in members], [sources[i] for i in members], sealed_ref,
                           device, reruns, list(pytest_args), progress, members, warm)

    pending = {submit(c): c for c in range(len(chunks))}
    tries = [1] * len(chunks)
    rows: list[dict | None] = [None] * len(files)
    while pending:
        done, _ = ray.wait(list(pending), num_returns=1)
        c = pending.pop(done[0])
        try:
            documents = ray.get(done[0])
        except Exception as exc:  # noqa: BLE001  every failure becomes a row or a retry
            if _lost(exc) and tries[c] <= retries:
                tries[c] += 1
                pending[submit(c)] = c
                continue
            why = "worker lost" if _lost(exc) else "the grader raised"
            for i in chunks[c]:
                rows[i] = _row(i, files[i], tries[c], None, f"{why} after {tries[c]} tries: {type(exc).__name__}: "
                                                            f"{str(exc).strip().splitlines()[-1][:300] if str(exc).strip() else ''}")
            continue
        for i, document in zip(chunks[c], documents):
            document["submission"]["path"] = str(files[i])  # not the worker's scratch copy
            rows[i] = _row(i, files[i], tries[c], document, None)
            if out_dir:
                batch_files.write_document(Path(out_dir), i, files[i], document)
    if jsonl:
        batch_files.write_rows(Path(jsonl), rows)
    return rows
