"""Run-time checks the sandbox makes around every call of the submission.

These run inside the submission's process, so each is a tripwire, not a proof: the
grader's structural defences (verification in its own process, fresh inputs, its own
clock, Landlock) do not depend on them. They name what a cheat did, so that a grade says
"patched time.perf_counter" rather than only "claimed time under the grader's clock".

- :class:`Integrity`: the timing and copy primitives the harness uses, captured before the
  submission is imported, must still be the same objects after each call; no tracer,
  profiler hook or torch function/dispatch mode may be left installed.
- :func:`poison_free_memory`: before each call, blocks the size of each expected output
  are allocated, filled with NaN and freed, so a ``torch.empty`` that is never written
  returns poison, not whatever the allocator held before.
- :class:`EscapeTripwire`: an audit hook (which Python cannot remove) that records every
  attempt to open or list a path outside the sandbox's allowed trees. Landlock already
  refuses those reads; the tripwire makes a refused attempt a flag even when the
  submission catches the error and falls back to honest work.
"""

from __future__ import annotations

import builtins
import inspect
import sys
import threading
import time

import torch

# (owner, attribute) pairs whose identity the harness relies on. Patching any of them is
# tampering, whatever the replacement does.
_WATCHED = [
    (time, "perf_counter"), (time, "perf_counter_ns"), (time, "monotonic"), (time, "monotonic_ns"),
    (time, "time"), (time, "time_ns"), (time, "process_time"), (time, "sleep"),
    (time, "thread_time"), (time, "thread_time_ns"),
    (torch, "empty"), (torch, "empty_like"), (torch, "equal"), (torch, "is_tensor"),
    (torch.Tensor, "copy_"), (torch.Tensor, "clone"), (torch.Tensor, "data_ptr"),
    (torch.Tensor, "untyped_storage"), (torch.Tensor, "fill_"), (torch.Tensor, "zero_"),
    (torch.Tensor, "__torch_function__"),
    (torch.cuda, "synchronize"), (torch.cuda, "Event"), (torch.cuda, "current_stream"),
    (torch.cuda, "default_stream"), (torch.cuda, "Stream"), (torch.cuda, "empty_cache"),
    (torch.cuda.Event, "record"), (torch.cuda.Event, "elapsed_time"),
    (torch.cuda.Event, "synchronize"), (torch.cuda.Event, "query"),
    (threading, "enumerate"), (threading, "Thread"),
    (builtins, "type"), (builtins, "isinstance"), (builtins, "len"), (builtins, "id"),
    (builtins, "float"), (builtins, "max"), (builtins, "min"), (builtins, "sorted"),
]


def _qualname(owner, attribute: str) -> str:
    return f"{getattr(owner, '__name__', type(owner).__name__)}.{attribute}"


class Integrity:
    """Identity snapshot of the harness's primitives and of the harness's own globals."""

    def __init__(self, *harness_modules) -> None:
        # getattr_static: a classmethod looked up with getattr is a new bound object each time.
        self._watched = [(o, a, inspect.getattr_static(o, a, None)) for o, a in _WATCHED]
        self._harness = [(vars(m), dict(vars(m))) for m in harness_modules]

    def violations(self) -> list[str]:
        found = [f"patched {_qualname(o, a)}" for o, a, original in self._watched
                 if inspect.getattr_static(o, a, None) is not original]
        changed = [k for now, then in self._harness for k, v in then.items() if now.get(k, v) is not v]
        found += [f"patched the harness's {k}" for k in changed]
        if sys.gettrace() is not None or sys.getprofile() is not None:
            found.append("installed a trace or profile hook")
        if getattr(threading, "_trace_hook", None) or getattr(threading, "_profile_hook", None):
            found.append("installed a thread trace or profile hook")
        if torch._C._len_torch_function_stack() or torch._C._len_torch_dispatch_stack():
            found.append("left a torch function or dispatch mode active")
        return found


def poison_free_memory(shapes_dtypes, device: torch.device) -> None:
    """Hand the allocator NaN-filled blocks of each output's size, then free them."""
    blocks = []
    for shape, dtype in shapes_dtypes:
        block = torch.empty(shape, dtype=dtype, device=device)
        block.fill_(float("nan") if dtype.is_floating_point else -1)
        blocks.append(block)
    del blocks


class EscapeTripwire:
    _EVENTS = {"open", "os.listdir", "os.scandir", "os.chdir", "os.walk", "glob.glob", "shutil.copyfile",
               "os.readlink"}
    # Signals to another process (the grader, most likely): Landlock's signal scope refuses
    # them; the record makes the attempt a flag even when the refusal is caught.
    _SIGNAL_EVENTS = {"os.kill", "os.killpg"}

    def __init__(self, allowed_roots) -> None:
        import os

        self._realpath = os.path.realpath
        self._roots = tuple(sorted({self._realpath(r).rstrip("/") + "/" for r in allowed_roots}))
        # /proc is readable (libraries need it) but other processes' entries are snooping.
        self._pid = os.getpid()
        self._own_proc = f"/proc/{self._pid}/"
        self.attempts: list[str] = []
        sys.addaudithook(self._hook)

    def _hook(self, event: str, args) -> None:
        if event in self._SIGNAL_EVENTS and args and args[0] not in (self._pid, 0, -self._pid):
            if len(self.attempts) < 20:
                self.attempts.append(f"{event} {args[0]} (signal {args[1] if len(args) > 1 else '?'})")
            return
        if event not in self._EVENTS or not args:
            return
        path = args[0]
        if isinstance(path, bytes):
            path = path.decode(errors="replace")
        if not isinstance(path, str) or not path:
            return
        resolved = self._realpath(path) + "/"
        parts = resolved.split("/")
        other_process = parts[1] == "proc" and parts[2].isdigit() and not resolved.startswith(self._own_proc)
        if (other_process or not resolved.startswith(self._roots)) and len(self.attempts) < 20:
            self.attempts.append(f"{event} {path[:120]}")

    def drain(self) -> list[str]:
        found, self.attempts = self.attempts, []
        return found
