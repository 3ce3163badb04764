"""Attempts graded as Ray tasks across a cluster, one GPU per task, gathered into one row per
attempt in the attempts' order (``pip install pytest-nodus[ray]``).

    import ray
    from pytest_nodus.fanout.ray_grades import grade_attempts
    ray.init(address="auto")
    rows = grade_attempts("attention_backward", attempts, sealed="sealed_fixtures", device="cuda",
                          jsonl="grades.jsonl")

Each task receives its attempt's source, writes it under the attempt's own file name in a
scratch directory and grades it with :func:`pytest_nodus.grade`; the environment (an installed
name or a folder) and the sealed folder are resolved on the worker, so every worker host needs
the grader's checkout at the same path. Ray places the tasks (``num_gpus=1`` on a GPU
cluster); nothing here schedules.

A task whose worker is lost (killed, out of memory, its node gone) is submitted again, up to
``retries`` times; past that its attempt's row is at the floor with status ``error`` and code
``no_result``. A grade that ran is never retried, whatever its verdict, and a grader that
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


def _grade_one(env: str, name: str, source: bytes, sealed: str | None, device: str, reruns: int,
               pytest_args: Sequence[str], progress: str | None, index: int) -> dict:
    """The task: one attempt's grade document. Its pid goes to ``progress`` first, so an
    operator (or a test) can see which worker grades which attempt."""
    from pytest_nodus.grader.api import grade

    if progress:
        (Path(progress) / f"{index}.pid").write_text(str(os.getpid()))
    with tempfile.TemporaryDirectory(prefix="nodus-ray-") as work:
        path = Path(work) / name
        path.write_bytes(source)
        return grade(env, path, sealed=sealed, device=device, reruns=reruns, pytest_args=pytest_args).document


def _lost(exc: BaseException) -> bool:
    from ray import exceptions

    return isinstance(exc, (exceptions.WorkerCrashedError, exceptions.NodeDiedError, exceptions.ObjectLostError,
                            exceptions.OwnerDiedError, exceptions.LocalRayletDiedError))


def grade_attempts(env: str | Path, attempts: Sequence[str | Path], *, sealed: str | Path | None = None,
                   device: str = "auto", reruns: int = 1, pytest_args: Sequence[str] = (), retries: int = 1,
                   jsonl: str | Path | None = None, out_dir: str | Path | None = None,
                   progress_dir: str | Path | None = None) -> list[dict[str, Any]]:
    """One row per attempt (files, or folders of them), in order; ``jsonl`` gets them as JSON
    Lines and ``out_dir`` each full grade as ``<index>-<file stem>.json``. Starts a local Ray
    instance if none is connected."""
    import ray

    if not ray.is_initialized():
        ray.init()
    files = attempt_files(attempts)
    gpus = 1 if device == "cuda" or (device == "auto" and ray.cluster_resources().get("GPU", 0) > 0) else 0
    # max_retries=0: a lost worker comes back here, where the retry is counted and bounded.
    task = ray.remote(num_gpus=gpus, max_retries=0)(_grade_one)
    env_ref = str(Path(env).resolve()) if Path(env).is_dir() else str(env)
    sealed_ref = str(Path(sealed).resolve()) if sealed else None
    progress = str(progress_dir) if progress_dir else None
    sources = [f.read_bytes() for f in files]

    def submit(i: int):
        return task.remote(env_ref, files[i].name, sources[i], sealed_ref, device, reruns, list(pytest_args), progress, i)

    pending = {submit(i): i for i in range(len(files))}
    tries = [1] * len(files)
    rows: list[dict | None] = [None] * len(files)
    while pending:
        done, _ = ray.wait(list(pending), num_returns=1)
        i = pending.pop(done[0])
        try:
            document = ray.get(done[0])
        except Exception as exc:  # noqa: BLE001  every failure becomes a row or a retry
            if _lost(exc) and tries[i] <= retries:
                tries[i] += 1
                pending[submit(i)] = i
                continue
            why = "worker lost" if _lost(exc) else "the grader raised"
            rows[i] = _row(i, files[i], tries[i], None, f"{why} after {tries[i]} tries: {type(exc).__name__}: "
                                                        f"{str(exc).strip().splitlines()[-1][:300] if str(exc).strip() else ''}")
            continue
        document["submission"]["path"] = str(files[i])  # not the worker's scratch copy
        rows[i] = _row(i, files[i], tries[i], document, None)
        if out_dir:
            batch_files.write_document(Path(out_dir), i, files[i], document)
    if jsonl:
        batch_files.write_rows(Path(jsonl), rows)
    return rows
