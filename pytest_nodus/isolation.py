"""Grader side of the sandbox: start it, ask it one thing at a time, bound every wait.

The submission runs in a separate process (:mod:`pytest_nodus.sandbox`) started with a
scrubbed environment (no grader variables, no pytest state), its own scratch directory as
cwd, HOME and TMPDIR, and a copy of the kernel file: it never sees the submission's path,
the sealed directory or the report path. A call that does not answer within the
environment's time limit is a hang: the sandbox's whole process group is killed. A
sandbox that dies mid-call (exit, signal, CUDA error that kills the context) is reported
as such; the grade goes on with a fresh sandbox for the next size.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path

from pytest_nodus import transport

# Variables the sandbox may inherit; everything else (PYTEST_*, NODUS_*, CI secrets, the
# sealed path on a command line wrapper...) stays with the grader.
_INHERITED = ("PATH", "LANG", "LC_ALL", "LD_LIBRARY_PATH", "CUDA_HOME", "CUDA_PATH", "CUDA_VISIBLE_DEVICES",
              "NVIDIA_VISIBLE_DEVICES", "NCCL_NVLS_ENABLE", "TORCH_SYMM_MEM_DISABLE_MULTICAST",
              "NVSHMEM_DISABLE_NVLS", "TRITON_PTXAS_PATH", "OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")
_PROJECT_ROOT = Path(__file__).resolve().parent.parent


@dataclass
class SandboxFailure(Exception):
    """The sandbox did not answer as asked. ``status`` is the grade status it implies."""

    status: str  # "error", "timeout" or "flagged"
    code: str
    detail: str

    def __str__(self) -> str:
        return f"{self.code}: {self.detail}"


def adopt_orphans() -> bool:
    """Make this (the grader's) process the child subreaper of everything it starts, so a
    process that leaves a sandbox's tree (double fork, ``setsid``) is reparented here, not to
    init, and :func:`stray_processes` finds it. Linux only; False where refused."""
    import ctypes

    try:
        return ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0) == 0  # PR_SET_CHILD_SUBREAPER
    except (OSError, AttributeError):
        return False


def children(pid: int) -> set[int]:
    """Direct children of ``pid`` (all its threads')."""
    found = set()
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return found
    for tid in tasks:
        try:
            with open(f"/proc/{pid}/task/{tid}/children") as listing:
                found.update(int(c) for c in listing.read().split())
        except (OSError, ValueError):
            continue
    return found


def descendants(pid: int) -> set[int]:
    """Every live process below ``pid``."""
    found, pending = set(), [pid]
    while pending:
        for child in children(pending.pop()) - found:
            found.add(child)
            pending.append(child)
    return found


def describe_processes(pids) -> list[str]:
    """``pids`` as "pid (command) state", for a flag's detail."""
    described = []
    for child in sorted(pids):
        try:
            with open(f"/proc/{child}/stat") as stat:
                line = stat.read()
        except OSError:
            continue
        name, _, rest = line.partition(" ")[2].rpartition(")")
        described.append(f"{child} {name})" + (f" {rest.split()[0]}" if rest.split() else ""))
    return described


def living(pids) -> set[int]:
    """The ones of ``pids`` that still run: a zombie has ended and only waits to be reaped
    (its CPU time is the clock's business: pytest_nodus.clock._ended_between)."""
    return {pid for pid in pids if (fields := stat_fields(pid)) and fields[0] != "Z"}


def stray_processes(sandboxes) -> list[int]:
    """Processes reparented to the grader (:func:`adopt_orphans`) that are not one of its
    ``sandboxes``: started by a sandbox and detached from its tree. Killed and reaped here;
    returned so the grade can say so. Ended ones are only reaped."""
    known = {s.process.pid for s in sandboxes if s.process is not None}
    adopted = {pid: fields for pid, fields in _adopted().items() if pid not in known}
    strays = [pid for pid, fields in adopted.items() if fields[0] != "Z"]
    for pid in strays:
        for stray in [pid, *descendants(pid)]:
            try:
                os.kill(stray, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
    for pid in adopted:
        reap(pid)
    return strays


def ended_orphans(since_boot_ticks: int) -> list[int]:
    """Processes that left a sandbox's tree (reparented to the grader, outside its session,
    as :func:`stray_processes` finds them) and have already ended, started at or after
    ``since_boot_ticks`` (/proc's start-time unit). A worker detached and finished inside one
    call (tests/cheats/rmsnorm/orphaned_per_call.py) is alive for no check to find, and its
    CPU time goes to the grader that reaps it. Not reaped here: :func:`stray_processes` does."""
    return [pid for pid, fields in _adopted().items()
            if fields[0] == "Z" and len(fields) > 19 and int(fields[19]) >= since_boot_ticks]


def _adopted() -> dict[int, list[str]]:
    """The grader's children outside its own session, by pid, with their /proc stat fields:
    a sandbox starts its own session and nothing below it can join the grader's again,
    while a process some other code in this pytest started stays in the grader's session."""
    own_session = str(os.getsid(0))
    return {pid: fields for pid in sorted(children(os.getpid()))
            if len(fields := stat_fields(pid)) > 3 and fields[3] != own_session}


# How long the grader waits for a killed process to be gone. A SIGKILLed process normally
# ends at once; one stuck in the GPU driver's teardown must not stall the grader for good
# (while it holds the GPU lock, every other grade on that GPU would wait too).
REAP_TIMEOUT_S = 60.0


def reap(pid: int, timeout_s: float = REAP_TIMEOUT_S) -> bool:
    """Wait for the killed child ``pid`` to end and reap it, for at most ``timeout_s``.
    False if it has not ended by then (it is left as it is)."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            done, _ = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            return True  # not ours, or already reaped
        if done:
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)


def stat_fields(pid: int) -> list[str]:
    """The fields of /proc/<pid>/stat after the command name, so [0] is the state, [2] the
    process group, [3] the session, [13] and [14] reaped children's user and system ticks,
    [19] the start time in ticks since boot; [] once the process is gone."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return []


def _reap_group(pgid: int) -> None:
    """Reap the members of a killed sandbox's process group that were reparented to the
    grader (its child subreaper) when the sandbox itself ended first."""
    for pid in children(os.getpid()):
        fields = stat_fields(pid)
        if len(fields) > 2 and fields[2] == str(pgid):
            reap(pid)


def _scratch_root() -> str | None:
    shm = "/dev/shm"
    return shm if os.path.isdir(shm) and os.access(shm, os.W_OK) else None


class Sandbox:
    """One sandbox process running one kernel file (a submission or an expert)."""

    def __init__(self, kernel_path: Path, role: str, device: str, entry_point: str = "kernel",
                 startup_timeout_s: float = 300.0, audit: bool = True, cache_dir: Path | None = None,
                 unreadable_libraries: tuple[str, ...] = (), removed_kernels: dict | None = None,
                 removed_templates: tuple[str, ...] = (), unreadable_packages: tuple[str, ...] = ()):
        self.kernel_path = Path(kernel_path)
        self.role = role
        self.device = device
        self.entry_point = entry_point
        self.startup_timeout_s = startup_timeout_s
        self.audit = audit
        self.cache_dir = cache_dir  # persistent compile cache, for the trusted expert only
        self.unreadable_libraries = tuple(unreadable_libraries)  # a submission's only
        # fatbins to zero in the sandbox's memory (pytest_nodus.fatbin.forbidden_fatbins);
        # their library's file then becomes unreadable too, so no intact copy is left.
        self.removed_kernels = removed_kernels
        self.removed_templates = tuple(removed_templates)  # inductor template dirs (pytest_nodus.templates)
        self.unreadable_packages = tuple(unreadable_packages)  # top-level module names, a submission's only
        if removed_kernels and removed_kernels["spans"]:
            self.unreadable_libraries += (os.path.basename(removed_kernels["library"]),)
        self.process: subprocess.Popen | None = None
        self.arena = None  # grader-owned; must outlive the process that maps it
        self.clock = None  # the grader's clock for this sandbox's calls (pytest_nodus.clock)
        self.isolation = "none"
        self.removed_fatbins = 0  # fatbins this sandbox overwrote (pytest_nodus.fatbin), as it said
        self.scratch: Path | None = None

    # -- lifecycle --------------------------------------------------------------------
    def start(self, arena_capacity: int) -> None:
        """Start the process and give it an arena of ``arena_capacity`` bytes (``self.arena``)."""
        import torch

        from pytest_nodus import heap
        from pytest_nodus import transport as _transport
        from pytest_nodus.clock import FLAG_BYTES, GraderClock

        self.scratch = Path(tempfile.mkdtemp(prefix=f"nodus-{self.role}-", dir=_scratch_root()))
        arena_capacity = _transport.aligned(arena_capacity)  # keeps the flag word aligned
        # On the GPU the calls allocate from a heap in the arena, so the grader can read
        # their outputs where they were written (pytest_nodus.heap).
        heap_description = None
        heap_bytes = 0
        if self.device != "cpu":
            heap_bytes = heap.heap_bytes(arena_capacity // 2)  # the arena holds two calls' slots
            heap_description = {"library": str(heap.build()), "offset": arena_capacity, "bytes": heap_bytes}
        whole, arena_description = _transport.create_arena(torch.device(self.device),
                                                           arena_capacity + heap_bytes + FLAG_BYTES, self.scratch)
        self.clock = GraderClock(torch.device(self.device), whole)
        self.arena = whole[:arena_capacity]  # inputs and receipts; the heap and the flag bytes lie past it
        kernel_copy = self.scratch / "kernel_under_test.py"
        shutil.copyfile(self.kernel_path, kernel_copy)
        req_r, req_w = os.pipe()
        rep_r, rep_w = os.pipe()
        env = {k: os.environ[k] for k in _INHERITED if k in os.environ}
        caches = self.cache_dir or self.scratch
        env.update({
            "HOME": str(self.scratch), "TMPDIR": str(self.scratch), "PYTHONDONTWRITEBYTECODE": "1",
            "PYTHONPATH": str(_PROJECT_ROOT), "PYTHONUNBUFFERED": "1",
            "TRITON_CACHE_DIR": str(caches / "triton"), "TORCHINDUCTOR_CACHE_DIR": str(caches / "inductor"),
            "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "1"),
        })
        if self.role == "submission":
            # Compile in-process: no worker pool outliving a call for the thread census to see.
            env["TORCHINDUCTOR_COMPILE_THREADS"] = "1"
        if self.removed_kernels:
            # Removal works only on kernels not yet on the GPU: modules load on first launch.
            env["CUDA_MODULE_LOADING"] = "LAZY"
        if self.device == "cpu":
            env["TRITON_INTERPRET"] = "1"
            env["CUDA_VISIBLE_DEVICES"] = ""
        command = [sys.executable, "-m", "pytest_nodus.sandbox", "--requests-fd", str(req_r), "--replies-fd",
                   str(rep_w), "--kernel", str(kernel_copy), "--entry-point", self.entry_point,
                   "--device", self.device, "--scratch", str(self.scratch), "--role", self.role]
        if not self.audit:
            command.append("--no-audit")
        for prefix in self.unreadable_libraries:
            command += ["--unreadable-library", prefix]
        for name in self.unreadable_packages:
            command += ["--unreadable-package", name]
        for directory in self.removed_templates:
            command += ["--removed-templates", directory]
        self._log = open(self.scratch / "sandbox.log", "wb")
        self.process = subprocess.Popen(command, pass_fds=(req_r, rep_w), cwd=self.scratch, env=env,
                                        stdin=subprocess.DEVNULL, stdout=self._log, stderr=subprocess.STDOUT,
                                        start_new_session=True)
        os.close(req_r)
        os.close(rep_w)
        self.clock.pid = self.process.pid
        self._requests = Connection(req_w, readable=False)
        self._replies = Connection(rep_r, writable=False)
        transport.send_request(self._requests, {"op": "arena", "arena": arena_description,
                                                "clock": self.clock.handles(), "heap": heap_description,
                                                "remove": self.removed_kernels})
        hello = self._await_reply(self.startup_timeout_s, during="start-up")
        self.isolation = str(hello.get("isolation", "none"))
        self.removed_fatbins = int(hello.get("removed_fatbins") or 0)
        if not hello.get("ok"):
            error = hello.get("error") or {}
            raise SandboxFailure("error", "load_failed",
                                 f"{error.get('type', 'Error')}: {error.get('message', 'could not be loaded')}")

    def close(self) -> None:
        if self.process is not None and self.process.poll() is None:
            try:
                transport.send_request(self._requests, {"op": "exit"})
                self.process.wait(timeout=5)
            except (OSError, subprocess.TimeoutExpired):
                pass
        self._kill()
        self.arena = None
        self.clock = None
        if self.scratch is not None:
            shutil.rmtree(self.scratch, ignore_errors=True)
            self.scratch = None

    @property
    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def log_tail(self, limit: int = 2000) -> str:
        try:
            return (self.scratch / "sandbox.log").read_bytes()[-limit:].decode(errors="replace")
        except (OSError, TypeError):
            return ""

    # -- requests -----------------------------------------------------------------------
    def request(self, message: dict, timeout_s: float) -> dict:
        """Send one request and return its reply. Raises SandboxFailure."""
        self.send(message)
        return self.receive(timeout_s, during=f"a {message['op']}")

    def send(self, message: dict) -> None:
        if not self.alive:
            raise SandboxFailure("error", "sandbox_dead", "the sandbox is no longer running")
        if self._replies.poll(0):
            # Nothing may arrive unasked: a forged reply queued ahead of the real one.
            raise SandboxFailure("flagged", "protocol_violation", "the sandbox sent data nobody asked for")
        try:
            transport.send_request(self._requests, message)
        except OSError:
            raise self._death("a request") from None

    def receive(self, timeout_s: float, during: str) -> dict:
        """The next reply (a ``go`` has two: ``enqueued``, then the report)."""
        reply = self._await_reply(timeout_s, during=during)
        if "harness_error" in reply:
            raise SandboxFailure("error", "harness_error", str(reply["harness_error"])[:300])
        return reply

    def _await_reply(self, timeout_s: float, during: str) -> dict:
        deadline = time.monotonic() + timeout_s
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                self._kill()
                raise SandboxFailure("timeout", "timeout", f"no answer within {timeout_s:.0f} s during {during}")
            try:
                ready = self._replies.poll(min(remaining, 0.5))
            except (OSError, EOFError):
                raise self._death(during) from None
            if ready:
                try:
                    reply = transport.recv_reply(self._replies)
                except EOFError:
                    raise self._death(during) from None
                except transport.ProtocolError as exc:
                    self._kill()
                    raise SandboxFailure("flagged", "protocol_violation", str(exc)) from None
                return reply
            if not self.alive:
                raise self._death(during)

    def _death(self, during: str) -> SandboxFailure:
        try:
            code = self.process.wait(timeout=5) if self.process else None
        except subprocess.TimeoutExpired:  # alive but closed its end of the channel
            self._kill()
            return SandboxFailure("flagged", "protocol_violation", f"the sandbox closed its channel during {during}")
        self._kill()
        if code is not None and code < 0:
            name = signal.Signals(-code).name if -code in signal.Signals._value2member_map_ else str(-code)
            return SandboxFailure("error", "crashed", f"the sandbox died of {name} during {during}")
        return SandboxFailure("error", "process_exit", f"the sandbox exited (status {code}) during {during}")

    def _kill(self) -> None:
        if self.process is not None:
            # The whole process group, also when the sandbox itself has exited: processes the
            # submission started (tests/cheats/rmsnorm/forked_worker.py) must not outlive it.
            try:
                os.killpg(self.process.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                if self.process.poll() is None:
                    self.process.kill()
            try:
                self.process.wait(timeout=REAP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                # Stuck in teardown (the GPU driver): left behind rather than waited on forever.
                sys.stderr.write(f"pytest-nodus: sandbox {self.process.pid} did not end within "
                                 f"{REAP_TIMEOUT_S:.0f} s of SIGKILL; left behind\n")
            _reap_group(self.process.pid)
        for conn in ("_requests", "_replies"):
            c = getattr(self, conn, None)
            if c is not None and not c.closed:
                c.close()
        if getattr(self, "_log", None) is not None and not self._log.closed:
            self._log.close()
