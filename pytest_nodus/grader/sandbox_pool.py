"""The sandboxes of one grade: one per (role, environment), started on demand, kept for the grade.

Roles are ``submission`` (or ``submission:<i>``, the i-th attempt of a batch), ``expert`` and
``baseline:<name>``. Only a submission's sandbox is kept out of what its environment forbids
(``grader/keepout.py``); a trusted submission (``--nodus-trusted``: the expert graded against
itself, to calibrate the timer) is not. Every attempt of a batch has a sandbox of its own:
its own uid, cgroup and scratch.
"""

from __future__ import annotations

from pathlib import Path

import torch

from pytest_nodus.grader import gpu_ledger, inputs, phases, roles, standby
from pytest_nodus.grader.environment import Environment, load_timeout_s
from pytest_nodus.grader.processes import adopt_orphans, stray_processes
from pytest_nodus.grader.sandbox_process import Sandbox, SandboxFailure
from pytest_nodus.grader.sandbox_spawn import Spawned
from pytest_nodus.shared.arena import ALIGN

# Up to this much per call, an arena is sized for every size the fuzz could draw: the CPU
# domains' largest calls take 0.1-3.4 MiB; a GPU domain's run to GBs and keep the planned size.
FUZZ_ROOM_BYTES = 64 << 20


def gpu_budget(profile, role: str, process_role: str) -> int | None:
    """GPU memory bytes the wall holds a sandbox to: a submission's published budget; the
    expert's measured one where the environment declares it (the ledger reserves that and no
    more, so an expert past it would eat a batch-mate's room); none for baselines (context
    beside the reward, reserved nothing) or an expert with no figure (reserved the
    submissions' budget, unmeasured, so not held to it)."""
    submission, expert = gpu_ledger.budgets(profile)
    if process_role == "submission":
        return submission
    if role == "expert" and profile.expert_memory_gib is not None:
        return expert
    return None


class SandboxPool:
    def __init__(self, submissions: Path | list[Path], device, audit: bool, expert_cache: Path | None, trusted: bool):
        files = [submissions] if isinstance(submissions, (str, Path)) else list(submissions)
        self.submissions = {role: Path(p) for role, p in zip(roles.submission_roles(len(files)), files)}
        self.device = device
        self.audit = audit
        self.expert_cache = expert_cache  # persistent compile caches of the trusted files
        self.trusted = trusted
        self.planned_dims: dict[str, list] = {}  # env name -> dims of every timed size
        # env name -> the file timed in the expert's place (--nodus-against=starting_kernel)
        self.yardsticks: dict[str, Path] = {}
        self._sandboxes: dict[tuple[str, str], Sandbox] = {}
        self._placers: dict[tuple[str, str], inputs.ArenaPlacer] = {}  # one per sandbox, over its arena
        self._drawn: dict[str, int] = {}  # env name -> bytes of the largest call its domain allows
        self._load_failures: dict[tuple[str, str], SandboxFailure] = {}
        self._launched: dict[tuple[str, str], Sandbox] = {}  # spawned by launch(), not yet waited for
        self._fatbins: dict[str, dict] = {}  # environment name -> fatbins removed from submissions
        # role -> a process spawned as pytest configured (grader/standby.py), for the role's first start
        self.standby: dict[str, Spawned] = {}
        # env -> a submission's call limit there, --nodus-call-timeout included (Grader.timeout)
        self.call_limit = lambda env: env.profile(device.kind).call_timeout_s

    def all(self):
        """The sandboxes started and ready: those a call freezes while another role runs."""
        return self._sandboxes.values()

    def started(self) -> list:
        """Every sandbox process the pool holds: ready, launched and still loading (the
        expert's, through the first round of a size), or spawned in standby. None of them is
        a process that left a sandbox's tree (``stray_processes``)."""
        return [*self._sandboxes.values(), *self._launched.values(), *self.standby.values()]

    def placer(self, role: str, env: Environment) -> inputs.ArenaPlacer:
        return self._placers[(role, env.name)]

    def close(self) -> None:
        # Every sandbox is stopped before any is waited for: each one's end (its device
        # context torn down) then overlaps the others' instead of adding up.
        every = [*self._sandboxes.values(), *self._launched.values()]
        for sandbox in every:
            sandbox.stop()
        for spawned in self.standby.values():
            spawned.stop()  # never needed (a grade that stopped early, or graded no size)
        for sandbox in every:
            sandbox.close()
        self._sandboxes.clear()
        self._launched.clear()
        standby.close(self.standby)
        stray_processes([])  # whatever a sandbox detached and no later call found: nothing outlives the grade

    def retire(self, leaving: list[str]) -> None:
        """Kill the sandboxes of the roles ``leaving`` (a batch's turn that ended: grader/turns.py),
        all stopped before any is waited for, as in :meth:`close`; a role's next start is a
        fresh one."""
        keys = {key for key in [*self._sandboxes, *self._launched] if key[0] in leaving}
        every = [box for key in keys for box in (self._sandboxes.pop(key, None), self._launched.pop(key, None)) if box]
        for sandbox in every:
            sandbox.stop()
        for sandbox in every:
            sandbox.close()
        for key in keys:
            self._placers.pop(key, None)

    def _arena_capacity(self, env: Environment, dims) -> int:
        """Room for two calls of the largest planned size (public and hidden) or of ``dims``,
        and of the largest size Hypothesis could draw where that is small (CPU domains): a
        fuzzed size past the arena restarts every sandbox."""
        planned = [*self.planned_dims.get(env.name, ()), dims]
        largest = max(env.contract.call_bytes(d) for d in planned)
        if env.name not in self._drawn:  # asked at every call: the domain's corners once
            corners = env.profile(self.device.kind).domain.corners() if self.device.kind in env.profiles else []
            self._drawn[env.name] = max((env.contract.call_bytes(d) for d in corners), default=0)
        if self._drawn[env.name] <= FUZZ_ROOM_BYTES:
            largest = max(largest, self._drawn[env.name])
        tensors = len(env.contract.tensor_inputs) + len(env.contract.outputs)
        return 2 * (largest + (tensors + 1) * ALIGN)

    def _removed_kernels(self, env: Environment) -> dict | None:
        """The fatbins of torch's CUDA library that hold kernels ``env`` removes from a
        submission's process (grader/fatbin_scan.py), found once per grade (and cached on
        disk per torch build). None when the environment removes nothing or off the GPU."""
        patterns = env.keep_out.torch_kernels
        if not patterns or self.device.kind != "cuda":
            return None
        if env.name not in self._fatbins:
            from pytest_nodus.grader import fatbin_scan

            library = fatbin_scan.loaded_library("libtorch_cuda")
            if library is None:
                raise RuntimeError("torch's CUDA library is not loaded: cannot remove kernels from submissions")
            cache = self.expert_cache.parent / "fatbins" if self.expert_cache else None
            major, minor = torch.cuda.get_device_capability(torch.device(self.device.torch_name))
            found = fatbin_scan.forbidden_fatbins(library, patterns, cache, gpu=f"sm_{major}{minor}")
            if not found["spans"]:
                # Stale patterns (a torch build whose kernels are named otherwise) must not
                # quietly let the kernels back in.
                raise RuntimeError(f"environment '{env.name}': no kernel of {library} matches torch_kernels {patterns}")
            self._fatbins[env.name] = found
        return self._fatbins[env.name]

    def get(self, env: Environment, role: str, dims, spent: dict | None = None) -> Sandbox:
        """The sandbox of ``role``, started (again, with a larger arena) when needed; the time a
        start took goes into ``spent`` (a size's phases: grader/phases.py)."""
        with phases.timed(spent if spent is not None else {}, "start"):
            sandbox = self._get(env, role, dims)
        if spent is not None and sandbox.stages_ms:
            for stage, ms in sandbox.stages_ms.items():
                phases.add(spent, stage, ms)
        sandbox.stages_ms = None  # counted once, at the size that started it
        return sandbox

    def launch(self, env: Environment, role: str, dims) -> None:
        """Spawn the sandbox :meth:`get` will need for ``role`` at ``dims``, without waiting
        for it: sandboxes launched one after the other start side by side (each start is
        mostly its interpreter's imports and its device context: seconds on the H200)."""
        key = (role, env.name)
        if key in self._load_failures or key in self._launched or self._usable(key, env, dims):
            return
        self._launched[key] = self._launch_new(env, role, dims)

    def _usable(self, key, env: Environment, dims) -> bool:
        sandbox = self._sandboxes.get(key)
        return sandbox is not None and sandbox.alive and sandbox.arena.numel() >= self._arena_capacity(env, dims)

    def _get(self, env: Environment, role: str, dims) -> Sandbox:
        key = (role, env.name)
        if key in self._load_failures:
            raise self._load_failures[key]  # a file that did not load will not load next time
        launched = self._launched.pop(key, None)
        if launched is not None and launched.arena.numel() < self._arena_capacity(env, dims):
            launched.close()  # launched for a smaller size: start again below
            launched = None
        if launched is None and self._usable(key, env, dims):
            return self._sandboxes[key]
        return self._ready(key, launched if launched is not None else self._launch_new(env, role, dims))

    def _launch_new(self, env: Environment, role: str, dims) -> Sandbox:
        sandbox, capacity = self._new(env, role, dims)
        try:
            sandbox.launch(capacity)
        except BaseException:  # the grader's own failure (its arena out of memory): nothing left behind
            sandbox.close()
            raise
        return sandbox

    def _new(self, env: Environment, role: str, dims) -> tuple[Sandbox, int]:
        """A sandbox for ``role`` (the one it replaces closed), not yet launched, and its arena's size."""
        key = (role, env.name)
        sandbox = self._sandboxes.pop(key, None)
        carried = None
        if sandbox is not None:
            if roles.is_submission(role):
                carried = sandbox.carry_caches()  # its next first calls load what it compiled
            sandbox.close()
        try:
            return self._replacement(env, role, dims, carried)
        except BaseException:
            if carried is not None:
                carried.discard()
            raise

    def _replacement(self, env: Environment, role: str, dims, carried) -> tuple[Sandbox, int]:
        capacity = self._arena_capacity(env, dims)
        if self.device.kind not in env.profiles:
            raise SandboxFailure("error", "expert_failed", f"environment '{env.name}' has no profile for {self.device.kind}")
        profile = env.profile(self.device.kind)
        if roles.is_submission(role):
            path = self.submissions[role]
        elif role == "expert":
            path = self.yardsticks.get(env.name, profile.expert)
        else:
            path = profile.baselines.get(role.split(":", 1)[1])
        if path is None:
            raise SandboxFailure("error", "expert_failed", f"environment '{env.name}' has no {role} for {self.device.kind}")
        process_role = roles.process_role(role)
        cache_dir = self.expert_cache if process_role != "submission" else None
        spawned = self.standby.pop(role, None)
        if spawned is not None and (not spawned.alive or spawned.cache_dir != cache_dir):
            spawned.close()  # died while waiting (or spawned for other caches): spawn afresh
            spawned = None
        kept_out = process_role == "submission" and not self.trusted
        keep_out = env.keep_out
        removed = self._removed_kernels(env) if kept_out else None
        sandbox = Sandbox(path, process_role, self.device.torch_name, env.contract.entry_point,
                          audit=self.audit and keep_out.audited and process_role != "baseline",
                          cache_dir=cache_dir,
                          unreadable_libraries=keep_out.libraries if kept_out else (),
                          unreadable_packages=keep_out.packages if kept_out else (),
                          removed_kernels=removed,
                          removed_templates=keep_out.templates if kept_out else (),
                          # The grader's own files hold no budget: only what it grades is limited.
                          limits=profile.sandbox_limits(self.device.kind) if process_role == "submission" else None,
                          gpu_budget=gpu_budget(profile, role, process_role),
                          spawned=spawned,
                          load_timeout_s=load_timeout_s(self.call_limit(env)) if process_role == "submission" else None)
        if carried is not None:
            if spawned is not None:
                carried.discard()  # spawned ahead, under a uid of its own
            else:
                sandbox.carried = carried
        # A process that leaves a sandbox's tree comes back here (stray_processes). Set at the
        # first start, not at construction: a grade that starts nothing changes nothing.
        adopt_orphans()
        return sandbox, capacity

    def _ready(self, key, sandbox: Sandbox) -> Sandbox:
        try:
            sandbox.ready()
        except SandboxFailure as failure:
            sandbox.close()
            if failure.code == "load_failed":
                self._load_failures[key] = failure
            raise
        except BaseException:
            sandbox.close()
            raise
        self._sandboxes[key] = sandbox
        self._placers[key] = inputs.ArenaPlacer(sandbox.arena)
        return sandbox


__all__ = ["SandboxPool"]
