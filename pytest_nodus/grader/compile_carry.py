"""A submission's compile caches carried to its next sandbox within a grade.

Runs only in the grader. A submission's sandbox starts again within a grade when a size
needs a larger arena (a fuzzed size past the timed ones) or after a crash; its Triton and
inductor caches live in its scratch (``sandbox_env``), which the old sandbox's close removes,
so its next first call at every size would compile again: seconds per size for a kernel that
specialises on its shapes (docs/results/throughput.md).

The caches are the submission's own output and go back only to the same attempt's next
sandbox, which runs under the same uid (``sandbox_spawn.spawn(uid=...)``), so its files are
its own again: nothing crosses between attempts, and the grader never reads, copies or
changes the ownership of anything inside them. It moves each cache directory with one
``rename`` between scratches it made itself, on one file system: a rename moves a link as a
link, and never follows one.

The next sandbox gets its scratch at the same path as the last one (``spawn(scratch_at=...)``):
inductor writes absolute paths into what it caches (its autotuning's ``.best_config`` files
are opened by the path the compile stored), and under another path the next process would
open the old one, which its walls refuse: an honest compiled kernel raising, flagged as a
sandbox escape, at every size after a restart.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

CACHES = ("triton", "inductor")  # sandbox_env's TRITON_CACHE_DIR and TORCHINDUCTOR_CACHE_DIR, in the scratch
PATH_BOUND = ("inductor",)  # caches whose entries name files by their absolute path: valid at the same path only


class Carried:
    """The caches taken out of a closing sandbox's scratch, held until its next one spawns."""

    def __init__(self, uid: int | None, scratch: Path):
        self.uid = uid
        self.scratch = scratch  # where the next sandbox's scratch is made again
        self._held = Path(tempfile.mkdtemp(prefix="nodus-carried-", dir=scratch.parent))
        for name in CACHES:
            try:
                os.rename(scratch / name, self._held / name)
            except OSError:
                pass  # none made, or not a directory the rename can move: compiled afresh

    def successor(self) -> dict:
        """``spawn``'s arguments for the next sandbox: the same uid, the same scratch path."""
        return {"uid": self.uid, "scratch_at": self.scratch}

    def into(self, scratch: Path) -> None:
        """Into the new sandbox's scratch, before it runs anything; a cache bound to its old
        path only where the scratch is at that path again."""
        for name in CACHES:
            if name in PATH_BOUND and scratch != self.scratch:
                continue
            try:
                os.rename(self._held / name, scratch / name)
            except OSError:
                pass
        self.discard()

    def discard(self) -> None:
        shutil.rmtree(self._held, ignore_errors=True)


__all__ = ["CACHES", "Carried"]
