"""Grader side of the sandbox: start it, ask it one thing at a time, bound every wait.

The submission runs in a separate process (``pytest_nodus/sandbox/``) spawned inside its
walls (``grader/sandbox_spawn.py``) with a scrubbed environment (no grader variables, no
pytest state), its own scratch directory as cwd, HOME and TMPDIR, and a copy of the kernel
file: it never sees the submission's path, the sealed directory or the report path. A call that does not answer within the
environment's time limit is a hang: the sandbox's whole process group is killed. A
sandbox that dies mid-call (exit, signal, CUDA error that kills the context) is reported
as such; the grade goes on with a fresh sandbox for the next size.

:meth:`Sandbox.call` is the one owner of the call protocol on this side: arm, open the
grader's window, go, close it, and return one :class:`Reading`.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path

from pytest_nodus.grader import gpu_memory_wall, heap_build, kernel_errors, phases, sandbox_env, walls
from pytest_nodus.grader.arena_memory import create_arena
from pytest_nodus.grader.cgroup import CGROUP, SandboxCgroup
from pytest_nodus.grader.clock import GraderClock
from pytest_nodus.grader.compile_carry import Carried
from pytest_nodus.grader.gpu_memory_wall import GpuMemoryWall
from pytest_nodus.grader.idle_work import IdleWatch
from pytest_nodus.grader.reading import Reading
from pytest_nodus.grader.sandbox_spawn import Spawned, spawn
from pytest_nodus.shared import protocol
from pytest_nodus.shared.arena import FLAG_BYTES, aligned

@dataclass
class SandboxFailure(Exception):
    """The sandbox did not answer as asked. ``status`` is the grade status it implies."""

    status: str  # "error", "timeout" or "flagged"
    code: str
    detail: str

    def __str__(self) -> str:
        return f"{self.code}: {self.detail}"



class Sandbox:
    """One sandbox process running one kernel file (a submission or an expert)."""

    def __init__(self, kernel_path: Path, role: str, device: str, entry_point: str = "kernel",
                 startup_timeout_s: float = 300.0, audit: bool = True, cache_dir: Path | None = None,
                 unreadable_libraries: tuple[str, ...] = (), removed_kernels: dict | None = None,
                 removed_templates: tuple[str, ...] = (), unreadable_packages: tuple[str, ...] = (),
                 limits: tuple[int, int] | None = None, spawned: Spawned | None = None,
                 load_timeout_s: float | None = None, gpu_budget: int | None = None):
        self.kernel_path = Path(kernel_path)
        self.limit_values = limits  # (host memory bytes, tasks): grader/cgroup_limits.py
        self.gpu_budget = gpu_budget  # GPU memory bytes: sandbox_pool.gpu_budget (grader/gpu_memory_wall.py)
        self.gpu_wall: GpuMemoryWall | None = None
        self.role = role
        self.device = device
        self.entry_point = entry_point
        self.startup_timeout_s = startup_timeout_s
        # The kernel file's import: a submission's is limited as its calls are
        # (environment.load_timeout_s); the grader's own files get the start-up's.
        self.load_timeout_s = load_timeout_s if load_timeout_s is not None else startup_timeout_s
        self.audit = audit
        self.cache_dir = cache_dir  # persistent compile cache, for the trusted expert only
        self.unreadable_libraries = tuple(unreadable_libraries)  # a submission's only
        # fatbins to zero in the sandbox's memory (grader/fatbin_scan.py);
        # their library's file then becomes unreadable too, so no intact copy is left.
        self.removed_kernels = removed_kernels
        self.removed_templates = tuple(removed_templates)  # inductor template dirs (sandbox/templates.py)
        self.unreadable_packages = tuple(unreadable_packages)  # top-level module names, a submission's only
        if removed_kernels and removed_kernels["spans"]:
            self.unreadable_libraries += (os.path.basename(removed_kernels["library"]),)
        self.arena = None  # grader-owned; must outlive the process that maps it
        self._memory = None  # the arena's memory (grader/arena_memory.py), given back at close
        self.clock = None  # the grader's clock for this sandbox's calls (grader/clock.py)
        self.isolation: list[str] = []  # what held, for the grade (grader/walls.py, sandbox/confine.py)
        self.pid: int | None = None  # the sandbox's own pid; self.process is its launcher when walled
        self.idle = IdleWatch()  # what it ran between calls (grader/idle_work.py)
        self.removed_fatbins = 0  # fatbins this sandbox overwrote (sandbox/fatbin_removal.py), as it said
        self.stages_ms: dict[str, float] | None = None  # its start-up by stage (grader/phases.py), until taken
        self._launch_ms = 0.0  # the grader's own side of launch(): its device's first use, the arena
        # The compile caches of the sandbox this one replaces (grader/compile_carry.py); set
        # by the pool only where no standby was spawned ahead, under a uid of its own.
        self.carried: Carried | None = None
        # Its process, channels, scratch, cgroup and limits (grader/sandbox_spawn.py): None
        # until spawned or adopted, and again once closed.
        self._spawned: Spawned | None = None
        if spawned is not None:
            self._adopt(spawned)

    @property
    def process(self) -> subprocess.Popen | None:
        """Its launcher where walls are raised, else the sandbox itself."""
        return self._spawned.process if self._spawned else None

    @property
    def scratch(self) -> Path | None:
        return self._spawned.scratch if self._spawned else None

    @property
    def cgroup(self) -> SandboxCgroup | None:
        """Its CPU count, freeze and kill (grader/cgroup.py)."""
        return self._spawned.cgroup if self._spawned else None

    @property
    def limits(self):
        """Its memory and task limits (grader/cgroup_limits.py), a submission's only."""
        return self._spawned.limits if self._spawned else None

    # -- lifecycle --------------------------------------------------------------------
    def start(self, arena_capacity: int) -> None:
        """Start the process and give it an arena of ``arena_capacity`` bytes (``self.arena``)."""
        self.launch(arena_capacity)
        self.ready()

    def _adopt(self, spawned: Spawned) -> None:
        """Take over a spawned process (``grader/sandbox_spawn.py``), ours to close from now on."""
        if spawned.role != self.role or spawned.cache_dir != self.cache_dir:
            raise ValueError(f"a {spawned.role} sandbox spawned for {spawned.cache_dir} cannot run "
                             f"a {self.role} with caches in {self.cache_dir}")
        self._spawned = spawned
        self._requests, self._replies, self._log = spawned.requests, spawned.replies, spawned.log

    def launch(self, arena_capacity: int) -> None:
        """The first half of :meth:`start`: the process spawned (unless it was, ahead of the
        grade: ``grader/standby.py``), its limits written, the arena made and sent with
        what to run; it then starts on its own (device context, confinement) while the
        grader does other work, until :meth:`ready` lets the kernel file load and waits for it."""
        import torch

        began = time.perf_counter()
        if self._spawned is None:
            carried, self.carried = self.carried, None
            self._adopt(spawn(self.role, self.cache_dir, **(carried.successor() if carried else {})))
            if carried is not None:
                carried.into(self._spawned.scratch)  # before it runs anything
        spawned = self._spawned
        if self.limits is not None and self.limit_values:
            self.limits.hold(*self.limit_values)
        arena_capacity = aligned(arena_capacity)  # keeps the flag word aligned
        # On the GPU the calls allocate from a heap in the arena, so the grader can read
        # their outputs where they were written (grader/heap_build.py).
        heap_description, heap_bytes = None, 0
        if self.device != "cpu":
            heap_bytes = heap_build.heap_bytes(arena_capacity // 2)  # the arena holds two calls' slots
            heap_description = {"library": str(heap_build.build()), "offset": arena_capacity, "bytes": heap_bytes}
        self._memory = create_arena(torch.device(self.device), arena_capacity + heap_bytes + FLAG_BYTES,
                                    self.scratch, owner=spawned.uid)
        whole = self._memory.tensor
        self.clock = GraderClock(torch.device(self.device), whole)
        self.arena = whole[:arena_capacity]  # inputs and receipts; the heap and the flag bytes lie past it
        kernel_copy = self.scratch / protocol.KERNEL_FILE
        # A new file, never written through a link: the scratch is the sandbox's uid's to write.
        fd = os.open(kernel_copy, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
        with os.fdopen(fd, "wb") as copy:
            copy.write(self.kernel_path.read_bytes())
            if spawned.uid is not None:
                os.fchown(copy.fileno(), spawned.uid, spawned.uid)
        max_tasks = 0
        if self.limits is not None and self.limit_values and not self.limits.tasks_by_cgroup \
                and walls.OWN_UID in spawned.raised:
            max_tasks = self.limits.tasks  # RLIMIT_NPROC binds a uid of its own only
        descriptors = self._memory.pass_fds
        try:
            if descriptors:
                socket.send_fds(spawned.descriptors, [b"d"], list(descriptors))
        except OSError:
            raise self._death("its start") from None
        finally:
            self._memory.started()
            spawned.descriptors.close()
        self.send({"op": protocol.START, "arena": self._memory.description, "heap": heap_description,
                   "remove": self.removed_kernels, "descriptors": list(descriptors),
                   "environ": sandbox_env.launch_variables(self.device, bool(self.removed_kernels)),
                   "device": self.device, "kernel": str(kernel_copy), "entry_point": self.entry_point,
                   "audit": self.audit, "unreadable_libraries": list(self.unreadable_libraries),
                   "unreadable_packages": list(self.unreadable_packages),
                   "removed_templates": list(self.removed_templates), "max_tasks": max_tasks,
                   # A submission's file loads only when ready() asks (protocol.LOAD); the
                   # grader's own files load at once, beside the first round's calls.
                   "wait_for_load": self.role == "submission"})
        self._launch_ms = 1e3 * (time.perf_counter() - began)

    def ready(self) -> None:
        """The second half of :meth:`start`: wait for the launched process's start-up, let
        the kernel file load (``protocol.LOAD``), wait for the load, and read what held
        around it."""
        spawned, launcher, raised = self._spawned.at, self._spawned.launcher, self._spawned.raised
        staged = self._await_reply(self.startup_timeout_s, during=kernel_errors.STARTUP)
        staged_at = time.monotonic()
        self.pid = walls.sandbox_pid(self.process.pid) if launcher else self.process.pid
        if self.pid is None:
            self._kill()
            raise SandboxFailure("error", "harness_error", "the sandbox's launcher does not hold exactly one sandbox")
        # Before the kernel file loads: what the sandbox holds now is the grader's doing.
        self.gpu_wall = GpuMemoryWall.raise_for(self.device, self.gpu_budget, self.pid, self.cgroup)
        if self.role == "submission":
            self.send({"op": protocol.LOAD})  # only now: the pool loads a batch's files one at a time
        hello = self._await_reply(self.load_timeout_s, during="loading the kernel file")
        self.stages_ms = phases.stages(spawned, staged.get("marks"), staged_at, time.monotonic())
        self.stages_ms["start_grader"] = self._launch_ms
        self.clock.pid, self.clock.cgroup = self.pid, self.cgroup
        if self.limits is not None:
            self.limits.rlimit_tasks = hello.get("max_tasks") == self.limits.tasks
        confined = str(hello.get("isolation", ""))  # "trusted", or Landlock's "landlock-abiN", or "process"
        if confined.startswith("landlock") or walls.OWN_UID in raised:
            # Walls only while the sandbox cannot write cgroup files: a uid of its own cannot
            # write root's, and Landlock keeps it off /sys/fs/cgroup, where a process of the
            # grader's uid could move itself out or lift its limits.
            raised = (*raised, *([CGROUP] if self.cgroup else []), *(self.limits.labels if self.limits else []))
        self.isolation = ["trusted"] if confined == "trusted" else \
            ["process", *([confined] if confined.startswith("landlock") else []),
             *([walls.SECCOMP] if hello.get("seccomp") else []), *raised,
             *([gpu_memory_wall.LABEL] if self.gpu_wall else [])]
        self.removed_fatbins = int(hello.get("removed_fatbins") or 0)
        if not hello.get("ok"):
            raise SandboxFailure("error", "load_failed", kernel_errors.describe(hello.get("error"), self.kernel_path))

    def stop(self) -> None:
        """Kill it without waiting (:meth:`close` waits): frozen or not, SIGKILL ends it."""
        if self._spawned is not None:
            self._spawned.stop()

    def carry_caches(self) -> Carried | None:
        """Kill it and take its compile caches out of its scratch for its successor (a
        submission's, within the grade); then :meth:`close` it as usual."""
        if self._spawned is None:
            return None
        self._kill()
        return Carried(self._spawned.uid, self._spawned.scratch)

    def close(self) -> None:
        self._kill()
        self.arena = self.clock = None
        if self._memory is not None:
            self._memory.close()  # the sandbox is dead: nothing maps it any more
            self._memory = None
        if self._spawned is not None:
            self._spawned.remove()
        self._spawned = None

    @property
    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def log_tail(self, limit: int = 2000) -> str:
        try:
            return (self.scratch / "sandbox.log").read_bytes()[-limit:].decode(errors="replace")
        except (OSError, TypeError):
            return ""

    # -- one call -----------------------------------------------------------------------
    def call(self, layout: dict, scalars: dict, order: list, copies, receipts, timeout_s: float,
             phases_ms: dict | None = None, go_part: str = "go", timed: bool = True) -> Reading:
        """Arm, open the grader's window (behind the idle probe where ``timed``), go, close it.
        ``copies`` are the (arena view, pristine input) pairs the window writes; ``receipts`` the
        outputs' slots. Each part's wall time goes into ``phases_ms`` as ``calls_<part>``
        (grader/phases.py), the go as ``calls_<go_part>``. Raises SandboxFailure when the
        sandbox breaks the protocol, dies or hangs."""
        laps = phases.Laps(phases_ms, "calls_")
        reply = self.request({"op": protocol.CALL, "layout": layout, "scalars": scalars, "order": order}, timeout_s)
        held_ms = {"arm": laps.lap("arm")}  # the requests that run no kernel code (checks.held)
        if reply.get("ok") and reply.get("stage") != protocol.ARMED:
            raise SandboxFailure("flagged", "protocol_violation", "the sandbox did not arm the call")
        if not reply.get("ok"):
            return self._reading(reply, receipts, None)  # prepare failed (a trusted file): reported as it raised
        window_ms = None
        call_number = self.clock.open(copies, receipts, timed)
        try:
            self.clock.probed()
            laps.lap("open")
            self.send({"op": protocol.GO, "call": call_number})
            reply = self.receive(timeout_s, during="a call")
            laps.lap(go_part)
            if not reply.get("ok"):
                return self._reading(reply, receipts, None)  # the kernel raised
            if reply.get("stage") != protocol.ENQUEUED:
                raise SandboxFailure("flagged", "protocol_violation", "the sandbox reported a call it never enqueued")
            snapshot = self.clock.close(receipts, reply.get("outputs"))
            if not self.clock.cuda:
                self.send({"op": protocol.ACK})  # the outputs are read and the clock is closed
            laps.lap("close")
            reply = self.receive(timeout_s, during="a call's report")
            window_ms = self.clock.elapsed_ms(timeout_s)
            held_ms["report"] = laps.lap("report")
            if window_ms is None and self.clock.cuda:
                raise SandboxFailure("timeout", "timeout", f"the call did not finish on the GPU within {timeout_s:.0f} s")
            return self._reading(reply, snapshot, window_ms, held_ms)
        finally:
            if window_ms is None:
                self.clock.release()  # its flag will never be written: free the grader's stream

    def warm(self, layout: dict, scalars: dict, order: list) -> None:
        """Start a warm call (``protocol.WARM``) and return at once; ``warmed`` waits for it."""
        self.send({"op": protocol.WARM, "layout": layout, "scalars": scalars, "order": order})

    def warmed(self, timeout_s: float) -> dict:
        """The warm call's reply. Raises SandboxFailure where it died or hung."""
        return self.receive(timeout_s, during="a warm call")

    def finish(self, timeout_s: float, audit: bool = True) -> dict:
        """After a size: the late-write check and, with ``audit``, the kernel audit."""
        return self.request({"op": protocol.FINISH, "audit": audit}, timeout_s)

    def _reading(self, report: dict, outputs: list, window_ms: float | None, held_ms=None) -> Reading:
        clock = self.clock
        contended = clock.window_contended_ns() if window_ms is not None else 0
        parts = clock.parts_ms() if clock.cuda and window_ms is not None else None
        return Reading(report, outputs, window_ms, clock.helper_ms, clock.children_at_open, clock.opened_boot_ticks,
                       self.pid, clock, contended, parts, held_ms or {})

    # -- requests -----------------------------------------------------------------------
    def request(self, message: dict, timeout_s: float) -> dict:
        """Send one request and return its reply. Raises SandboxFailure."""
        self.send(message)
        return self.receive(timeout_s, during=f"a {message['op']}")

    def rest(self) -> None:
        """Freeze the sandbox until its next request: between its calls none of its threads
        runs, on a core or launching GPU work, while the grader checks, counts and times the
        others. Without a cgroup (``isolation`` lacks it) nothing is frozen."""
        if self.cgroup is not None and not self.cgroup.frozen:
            self.cgroup.freeze()

    def send(self, message: dict) -> None:
        if self.cgroup is not None and self.cgroup.frozen:
            self.cgroup.thaw()  # resting (rest) since its last reply: every request wakes it
        if not self.alive:
            raise SandboxFailure("error", "sandbox_dead", "the sandbox is no longer running")
        if self._replies.poll(0):
            # Nothing may arrive unasked: a forged reply queued ahead of the real one.
            raise SandboxFailure("flagged", "protocol_violation", "the sandbox sent data nobody asked for")
        try:
            protocol.send_request(self._requests, message)
        except OSError:
            raise self._death("a request") from None

    def receive(self, timeout_s: float, during: str) -> dict:
        """The next reply (a ``go`` has two: ``enqueued``, then the report)."""
        reply = self._await_reply(timeout_s, during=during)
        if protocol.HARNESS_ERROR in reply:
            raise SandboxFailure("error", "harness_error", str(reply[protocol.HARNESS_ERROR])[:300])
        return reply

    def _await_reply(self, timeout_s: float, during: str) -> dict:
        deadline = time.monotonic() + timeout_s
        tick = gpu_memory_wall.READ_EVERY_S if self.gpu_wall else 0.5
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                self._kill()
                raise SandboxFailure("timeout", "timeout", f"no answer within {timeout_s:.0f} s during {during}")
            try:
                ready = self._replies.poll(min(remaining, tick))
            except (OSError, EOFError):
                raise self._death(during) from None
            if ready:
                try:
                    reply = protocol.recv_reply(self._replies)
                except EOFError:
                    raise self._death(during) from None
                except protocol.ProtocolError as exc:
                    self._kill()
                    raise SandboxFailure("flagged", "protocol_violation", str(exc)) from None
                return reply
            if not self.alive:
                raise self._death(during)
            self.hold_gpu_memory(during)

    def hold_gpu_memory(self, during: str) -> None:
        """Kill it past its GPU memory budget: grader/gpu_memory_wall.py says when it is read."""
        if self.gpu_wall is not None and (breach := self.gpu_wall.breached()):
            self._kill()
            raise SandboxFailure("error", "over_limit", f"stopped during {during}: {breach}")

    def _death(self, during: str) -> SandboxFailure:
        try:
            code = self.process.wait(timeout=5) if self.process else None
        except subprocess.TimeoutExpired:  # alive but closed its end of the channel
            self._kill()
            return SandboxFailure("flagged", "protocol_violation", f"the sandbox closed its channel during {during}")
        self._kill()
        if self.limits is not None and (breach := self.limits.breached()):
            return SandboxFailure("error", "over_limit", f"the sandbox died during {during}: {breach}")
        if code is not None and code < 0:
            name = signal.Signals(-code).name if -code in signal.Signals._value2member_map_ else str(-code)
            return SandboxFailure("error", "crashed", f"the sandbox died of {name} during {during}")
        return SandboxFailure("error", "process_exit", kernel_errors.exit_detail(code, during, self.log_tail(kernel_errors.LOG_TAIL_CHARS)))

    def _kill(self) -> None:
        if self._spawned is not None:
            self._spawned.kill()
