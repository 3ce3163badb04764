"""A sandbox's process, spawned inside its walls before the grader knows what it will run.

Spawning needs no torch on the grader's side, so the plugin spawns the sandboxes a grade
will need as pytest configures (``grader/standby.py``): their interpreters import torch
(seconds on the H200) while the grader imports its own and collects. What a sandbox will run
(the kernel file, the device, what is kept out, its limits, its arena) comes later, in its
first message (``Sandbox.launch``); until then it runs the sandbox's own imports and waits.

The walls are raised here, before its first instruction, exactly as for a sandbox spawned at
its launch: its launcher (``walls.prefix``), its own cgroup and limit cgroups entered by the
command itself (``cgroup.enter``), its own uid. The limits' values are written at the launch,
before that first message is sent: no line of a kernel file runs before they hold.

Runs only in the grader.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path
from typing import BinaryIO

from pytest_nodus.grader import sandbox_env, walls
from pytest_nodus.grader.cgroup import SandboxCgroup
from pytest_nodus.grader.cgroup_limits import SandboxLimits
from pytest_nodus.grader.processes import REAP_TIMEOUT_S, reap_group


@dataclass
class Spawned:
    """One spawned sandbox process, not yet told what to run."""

    role: str  # "submission", "expert" or "baseline"
    cache_dir: Path | None  # its compile caches (trusted roles), fixed in its environment at spawn
    process: subprocess.Popen  # its launcher where walls are raised, else the sandbox itself
    scratch: Path
    uid: int | None  # its own uid, or None for the grader's
    cgroup: SandboxCgroup | None
    limits: SandboxLimits | None  # entered; the values are written at the launch (SandboxLimits.hold)
    requests: Connection
    replies: Connection
    descriptors: socket.socket  # the grader's end: the arena's file descriptors cross it once
    log: BinaryIO
    at: float  # time.monotonic() at the spawn
    launcher: tuple[str, ...]
    raised: tuple[str, ...]  # the walls the launcher raised
    preload: tuple[str, ...] = ()  # the modules it imports before its launch (grader/standby.py)

    @property
    def alive(self) -> bool:
        return self.process.poll() is None

    def stop(self) -> None:
        """SIGKILL it and all it started, without waiting: a grade's sandboxes are all stopped
        first, so that their device contexts are torn down side by side."""
        if self.cgroup is not None:
            self.cgroup.kill()  # everything it started, wherever re-parented
        # The whole process group, also when the sandbox itself has exited: processes the
        # submission started (tests/cheats/rmsnorm/forked_worker.py) must not outlive it.
        try:
            os.killpg(self.process.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            if self.process.poll() is None:
                self.process.kill()

    def kill(self) -> None:
        """Stop it, wait for it, and close our ends of its channels."""
        self.stop()
        try:
            self.process.wait(timeout=REAP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            # Stuck in teardown (the GPU driver): left behind rather than waited on forever.
            sys.stderr.write(f"pytest-nodus: sandbox {self.process.pid} did not end within "
                             f"{REAP_TIMEOUT_S:.0f} s of SIGKILL; left behind\n")
        reap_group(self.process.pid)
        for channel in (self.requests, self.replies):
            if not channel.closed:
                channel.close()
        if not self.log.closed:
            self.log.close()

    def remove(self) -> None:
        """Once killed: its cgroups, its descriptor channel and its scratch."""
        self.descriptors.close()
        if self.cgroup is not None:
            self.cgroup.remove()
        if self.limits is not None:
            self.limits.remove()
        shutil.rmtree(self.scratch, ignore_errors=True)

    def close(self) -> None:
        """Kill it and remove what it held. Nothing of a sandbox needs a graceful exit: what
        it reports it has reported, and the kernel frees its memory and device context."""
        self.kill()
        self.remove()


def _scratch_root() -> str | None:
    shm = "/dev/shm"
    return shm if os.path.isdir(shm) and os.access(shm, os.W_OK) else None


def _make_scratch(role: str, at: Path | None) -> Path:
    """A new scratch directory (mode 0700), at ``at`` where that path is free again."""
    if at is not None:
        try:
            os.mkdir(at, 0o700)
            return at
        except OSError:
            pass  # taken since (or not removed): a fresh name, and the path-bound caches stay behind
    return Path(tempfile.mkdtemp(prefix=f"nodus-{role}-", dir=_scratch_root()))


def spawn(role: str, cache_dir: Path | None, preload: tuple[str, ...] = (), uid: int | None = None,
          scratch_at: Path | None = None) -> Spawned:
    """Spawn a sandbox of ``role`` inside its walls; it imports (torch, and ``preload``: a
    trusted role's slow modules, grader/standby.py), then waits for its first message.
    ``uid``: a submission's next sandbox within a grade runs under its last one's uid, whose
    compile caches it inherits, and ``scratch_at``: at its last one's scratch path, removed
    by then, which those caches name (grader/compile_carry.py); else a new one of each."""
    if preload and role == "submission":
        raise ValueError("a submission's sandbox imports nothing before its walls are all up")
    scratch = _make_scratch(role, scratch_at)
    # The submission runs as a uid of its own where it can (grader/walls.py): its scratch is its own.
    if uid is None and role == "submission":
        uid = walls.sandbox_uid(sandbox_env.IMPORT_ROOT)
    if uid is not None:
        os.chown(scratch, uid, uid)
    launcher, raised = walls.prefix(uid)
    own_cgroup = SandboxCgroup.create(role)
    # Only what is graded is limited: the grader's own files hold no budget.
    limits = SandboxLimits.create(role, own_cgroup=own_cgroup) if role == "submission" else None
    entered = [*(own_cgroup.enter() if own_cgroup else []), *(limits.enter() if limits else [])]
    req_r, req_w = os.pipe()
    rep_r, rep_w = os.pipe()
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    command = [*walls.die_with_parent(), *entered, *launcher, sys.executable, "-m", "pytest_nodus.sandbox",
               "--requests-fd", str(req_r), "--replies-fd", str(rep_w), "--descriptors-fd", str(theirs.fileno()),
               "--scratch", str(scratch), "--role", role, *(["--preload", ",".join(preload)] if preload else [])]
    log = open(scratch / "sandbox.log", "wb")
    at = time.monotonic()
    try:
        process = subprocess.Popen(command, pass_fds=(req_r, rep_w, theirs.fileno()), cwd=scratch,
                                   env=sandbox_env.variables(scratch, cache_dir, uid, role),
                                   stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                   start_new_session=True)
    except BaseException:
        for fd in (req_w, rep_r):
            os.close(fd)
        ours.close()
        log.close()
        if own_cgroup is not None:
            own_cgroup.remove()
        if limits is not None:
            limits.remove()
        shutil.rmtree(scratch, ignore_errors=True)
        raise
    finally:
        os.close(req_r)
        os.close(rep_w)
        theirs.close()
    return Spawned(role, cache_dir, process, scratch, uid, own_cgroup, limits,
                   Connection(req_w, readable=False), Connection(rep_r, writable=False), ours, log, at,
                   launcher, raised, preload)


__all__ = ["Spawned", "spawn"]
