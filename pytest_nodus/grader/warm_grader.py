"""``pytest_nodus.WarmGrader``: grades one after another on a grading host, from a warm process.

    from pytest_nodus import WarmGrader
    with WarmGrader(device="cuda") as grader:      # one per GPU (CUDA_VISIBLE_DEVICES)
        for attempt in attempts:
            g = grader.grade("rmsnorm", attempt, sealed="sealed_fixtures")

The same grades as :func:`pytest_nodus.grade` (the same pytest command line, JSON and
:class:`Grade`), each in a fresh process forked from one that has already imported the
grader, with its sandboxes spawned before it was asked for (``grader/prefork.py``): what a
grading host pays once instead of in every grade. The caller's process still imports no
torch and holds no sandbox; the warm process dies with it.

One grade at a time per ``WarmGrader``: a host grading on several GPUs holds one per GPU.
The environment's variables are the warm process's, fixed when it starts.
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Sequence

from pytest_nodus.grader import api, bytecode, walls


class WarmGrader:
    """A warm grading process and the grades it runs. ``device``: auto, cuda or cpu, for
    every grade (the expert's sandbox is spawned ahead for it). ``attempts``: how many
    submission sandboxes each grade has spawned ahead (a batch's size; more are spawned as
    a grade needs them)."""

    def __init__(self, device: str = "auto", attempts: int = 1):
        self.device = device
        self._process = subprocess.Popen(
            [*walls.die_with_parent(), sys.executable, "-m", "pytest_nodus.grader.prefork", f"--device={device}",
             f"--attempts={attempts}"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            env=bytecode.process_environ(), bufsize=0)  # unbuffered: a reply read ahead into a buffer would hide from select

    def grade(self, env: str | Path, submission: str | Path | Sequence[str | Path], *,
              sealed: str | Path | None = None, reruns: int = 1, seed: int | None = None, against: str = "expert",
              pytest_args: Sequence[str] = (), timeout_s: float | None = None,
              one_run: bool = True) -> api.Grade | list[api.Grade]:
        """As :func:`pytest_nodus.grade`, on this grader's device."""
        return api._grade(self._run, env, submission, sealed=sealed, device=self.device, reruns=reruns, seed=seed,
                          against=against, pytest_args=pytest_args, timeout_s=timeout_s, one_run=one_run)

    def _run(self, args: list[str], cwd: str, timeout_s: float | None) -> tuple[int, str]:
        """pytest in a fresh fork of the warm process: (its exit status, its output)."""
        if self._process.poll() is not None:
            raise RuntimeError(f"the warm grading process has ended (status {self._process.returncode})")
        with tempfile.NamedTemporaryFile(prefix="nodus-warm-", suffix=".out", dir=cwd, delete=False) as out:
            output = Path(out.name)
        request = {"args": args, "cwd": cwd, "output": str(output)}
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        try:
            self._process.stdin.write((json.dumps(request) + "\n").encode())
            self._process.stdin.flush()
            pid = self._reply(None)["pid"]  # sent as the grade starts
            try:
                status = self._reply(deadline)["exit"]
            except subprocess.TimeoutExpired:
                # Its sandboxes die with it (their parent-death signal); the warm process reaps it.
                os.kill(pid, signal.SIGKILL)
                self._reply(None)
                raise subprocess.TimeoutExpired(["pytest", *args], timeout_s, output=_read(output)) from None
        except subprocess.TimeoutExpired:
            raise
        except BaseException:
            # Interrupted mid-grade (an exception in this thread, a broken pipe): the replies
            # still owed would answer the next request, so this grader ends with its grade.
            self._process.kill()
            raise
        return status, _read(output)

    @property
    def alive(self) -> bool:
        return self._process.poll() is None

    def _reply(self, deadline: float | None) -> dict:
        stdout = self._process.stdout
        if deadline is not None:
            ready, _, _ = select.select([stdout], [], [], max(0.0, deadline - time.monotonic()))
            if not ready:
                raise subprocess.TimeoutExpired("pytest", 0)
        line = stdout.readline()
        if not line:
            raise RuntimeError(f"the warm grading process ended mid-grade (status {self._process.wait()})")
        return json.loads(line)

    def close(self) -> None:
        """End the warm process (and the grade it holds ready, with its sandboxes)."""
        if self._process.poll() is None:
            self._process.stdin.close()
            try:
                self._process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
        self._process.stdout.close()

    def __enter__(self) -> WarmGrader:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _read(path: Path) -> str:
    try:
        return path.read_text(errors="replace")
    except FileNotFoundError:
        return ""


__all__ = ["WarmGrader"]
