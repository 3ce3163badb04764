"""Sandboxes spawned as pytest configures, so that their start-up overlaps the grader's.

A sandbox's interpreter spends most of its start importing torch (about 4 s on the H200:
docs/results/throughput.md), and so does the grading process as it collects the environment. Spawned
at configure (``grader/sandbox_spawn.py``: inside their walls, told only their role), the
sandboxes every grade starts (each attempt's, and the expert's unless ``--nodus-fail-fast``
starts it only once a submission has passed a call) import beside the grader, and the pool
launches each at its role's first size (``SandboxPool.standby``). One never needed is killed
when the session ends.

Only in the process that grades: not in an xdist controller (its workers spawn their own),
not when pytest only collects or prints its help. A warm grading host's grade
(``grader/prefork.py``) spawned its sandboxes earlier still, before it was asked for
(``spawn_ahead``): each grade takes those, its own, and spawns only what they lack.

On a GPU the expert's standby also imports torch.compile's modules (``TRUSTED_PRELOAD``):
the rmsnorm and MoE experts compile, and their files' load spent seconds importing dynamo
and inductor on the grade's wall (docs/results/throughput.md). The standby is spawned before the
environment is known, so a cuDNN expert imports them too, unused: CPU time on a grading
host's spare cores beside the grader's own start-up. Not on the CPU, whose experts do not
compile, and where the sandbox sets Triton's interpreter mode only once it is launched.
"""

from __future__ import annotations

import glob
import importlib.util
import os

from pytest_nodus.grader import roles
from pytest_nodus.grader.options import Options, expert_cache
from pytest_nodus.grader.sandbox_spawn import Spawned, spawn


def wanted(config, options: Options) -> list[str]:
    """The roles to spawn now: none where this process will grade nothing."""
    if options.submission is None or config.option.collectonly or getattr(config.option, "help", False):
        return []
    if not hasattr(config, "workerinput") and config.getoption("numprocesses", None):
        return []  # an xdist controller
    # The expert's process first, as when sandboxes were spawned at their launch: on the H200
    # which sandbox is created first moves the expert's fixed cost against the submission's
    # by up to a third of their 1-2 us difference (docs/timing.md), and that difference is a
    # head start for whichever role it favours.
    return [*([] if options.fail_fast else ["expert"]), *roles.submission_roles(len(options.submissions))]


# dynamo (torch.compile's tracer) and inductor's compile_fx: seconds of imports that a
# compiling expert's file otherwise pays in its load (figures: docs/results/throughput.md).
TRUSTED_PRELOAD = ("torch._dynamo", "torch._inductor.compile_fx")


def preload(process_role: str, device_request: str) -> tuple[str, ...]:
    """What a standby sandbox of ``process_role`` imports before it is launched."""
    if process_role == "submission" or device_request == "cpu":
        return ()
    if device_request == "cuda":
        return TRUSTED_PRELOAD
    return TRUSTED_PRELOAD if gpu_visible() else ()  # "auto": a guess at what devices.choose will pick


def gpu_visible(dev: str = "/dev", torch_dir: str | None = None, environ=None) -> bool:
    """Whether the grade will run on a GPU, guessed without importing torch: importing it here
    would hold every standby's spawn for the seconds the grader's own import takes, which is
    what the standby is there to overlap. CUDA needs an NVIDIA device node, a torch built
    with CUDA (its ``libtorch_cuda``) and a ``CUDA_VISIBLE_DEVICES`` that hides not every GPU.
    A wrong guess costs only the preload's CPU time, or its absence from the expert's load."""
    environ = os.environ if environ is None else environ
    visible = environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None and (not visible.strip() or visible.strip().startswith("-")):
        return False
    if not glob.glob(os.path.join(dev, "nvidia[0-9]*")):
        return False
    if torch_dir is None:
        spec = importlib.util.find_spec("torch")
        if spec is None or not spec.submodule_search_locations:
            return False
        torch_dir = spec.submodule_search_locations[0]
    return bool(glob.glob(os.path.join(torch_dir, "lib", "libtorch_cuda*")))


# Spawned before this process knew its grade (grader/prefork.py: a warm grading host's
# fork, waiting for its command line), for the grade to take as it configures.
_ahead: list[Spawned] = []


def spawn_ahead(device_request: str, attempts: int) -> None:
    """Spawn the sandboxes of a grade not yet asked for: the expert's and ``attempts``
    submissions'. A spawn that fails is left to the grade, which spawns again."""
    for role in ["expert", *roles.submission_roles(attempts)]:
        try:
            _ahead.append(_spawn(roles.process_role(role), device_request))
        except OSError:
            continue


def _spawn(process_role: str, device_request: str) -> Spawned:
    return spawn(process_role, expert_cache() if process_role != "submission" else None,
                 preload(process_role, device_request))


def _taken_ahead(process_role: str, device_request: str) -> Spawned | None:
    """One spawned ahead for ``process_role`` with the preload this grade's device asks for,
    still alive; None if there is none."""
    for spawned in _ahead:
        if spawned.role == process_role and spawned.preload == preload(process_role, device_request) and spawned.alive:
            _ahead.remove(spawned)
            return spawned
    return None


def spawn_for(config, options: Options) -> dict[str, Spawned]:
    """role -> its spawned process: one spawned ahead where there is one, else spawned now.
    A spawn that fails is left to the role's first size, which spawns again and reports what
    fails there. What was spawned ahead and is not needed is closed."""
    spawned = {}
    for role in wanted(config, options):
        process_role = roles.process_role(role)
        taken = _taken_ahead(process_role, options.device_request)
        if taken is not None:
            spawned[role] = taken
            continue
        try:
            spawned[role] = _spawn(process_role, options.device_request)
        except OSError:
            continue
    close_ahead()
    return spawned


def close_ahead() -> None:
    for process in _ahead:
        process.close()
    _ahead.clear()


def close(spawned: dict[str, Spawned]) -> None:
    for process in spawned.values():
        process.close()
    spawned.clear()


__all__ = ["TRUSTED_PRELOAD", "close", "close_ahead", "gpu_visible", "preload", "spawn_ahead", "spawn_for", "wanted"]
