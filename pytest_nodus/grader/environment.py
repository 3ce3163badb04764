"""What an environment is: one kernel task, declared in one place.

An environment folder in ``env_suites/<name>/`` declares an :class:`Environment` in
``environment.py``: the kernel contract, how inputs are made from (size, seed), the
fp32/fp64 reference, the tolerance per output, its :class:`Cost` (FLOPs, bytes), one
:class:`Profile` per device kind (public sizes, the domain Hypothesis draws from, the
expert, limits), and what a submission may not use (``forbid``, as intent:
``grader/keepout.py``). Hidden sizes live apart, in ``sealed_fixtures/<name>.json``, and
are read only by the grader process.

Everything here runs in the grader process. Nothing in this module is ever imported by
the sandbox that runs a submission.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence

if TYPE_CHECKING:  # torch is imported lazily so that `pytest --help` stays fast
    import torch

    from pytest_nodus.grader.correctness import Tolerance
    from pytest_nodus.grader.keepout import Forbidden, KeepOut

Dims = Mapping[str, int]


@dataclass(frozen=True)
class TensorSpec:
    """One tensor of the contract. ``shape`` entries are ints, dim names or expressions
    of dims (``"B + 1"``, ``"min(B, T) + 1"``), so the grader knows every tensor's size
    before making it."""

    name: str
    dtype: str  # torch dtype name, e.g. "bfloat16"
    shape: tuple[str | int, ...]

    def concrete_shape(self, dims: Dims) -> tuple[int, ...]:
        names = {"__builtins__": {}, "min": min, "max": max, **dims}
        return tuple(d if isinstance(d, int) else int(eval(d, names)) for d in self.shape)

    def nbytes(self, dims: Dims) -> int:
        from pytest_nodus.shared.arena import tensor_nbytes

        return tensor_nbytes(self.concrete_shape(dims), self.dtype)

    @property
    def torch_dtype(self) -> "torch.dtype":
        import torch

        return getattr(torch, self.dtype)


@dataclass(frozen=True)
class ScalarSpec:
    """A Python scalar argument (float or int), passed by value on every call."""

    name: str
    kind: type = float


@dataclass(frozen=True)
class Contract:
    """The kernel's calling convention: ``kernel(*inputs) -> outputs``."""

    inputs: tuple[TensorSpec | ScalarSpec, ...]
    outputs: tuple[TensorSpec, ...]
    entry_point: str = "kernel"

    @property
    def signature(self) -> str:
        args = ", ".join(i.name for i in self.inputs)
        outs = ", ".join(o.name for o in self.outputs)
        return f"{self.entry_point}({args}) -> {outs}"

    @property
    def tensor_inputs(self) -> tuple[TensorSpec, ...]:
        return tuple(i for i in self.inputs if isinstance(i, TensorSpec))

    def call_bytes(self, dims: Dims) -> int:
        """Device memory one call's inputs and outputs take (what an arena must hold)."""
        return sum(t.nbytes(dims) for t in (*self.tensor_inputs, *self.outputs))


@dataclass(frozen=True)
class IntRange:
    """A size dimension drawn from [low, high]; Hypothesis favours awkward values."""

    low: int
    high: int


@dataclass(frozen=True)
class Choice:
    """A size dimension drawn from a fixed set of values (e.g. head dims)."""

    values: tuple[int, ...]


Dim = IntRange | Choice


@dataclass(frozen=True)
class SizeDomain:
    """The space of valid sizes: one entry per dim, plus a joint constraint."""

    dims: Mapping[str, Dim]
    constraint: Callable[[Dims], bool] = lambda dims: True
    constraint_text: str = ""  # the constraint in words, for the task card ("M * N <= 2^27")

    def contains(self, dims: Dims) -> bool:
        for name, dim in self.dims.items():
            value = dims.get(name)
            if value is None:
                return False
            if isinstance(dim, IntRange) and not dim.low <= value <= dim.high:
                return False
            if isinstance(dim, Choice) and value not in dim.values:
                return False
        return self.constraint(dims)

    def corners(self) -> list[Dims]:
        """Every combination of each dim's smallest and largest value, the joint constraint
        ignored: where a tensor's size only grows or only shrinks with each dim, its largest
        over the domain is at one of them (an upper bound, since a corner may lie outside)."""
        ends = [(name, (dim.low, dim.high) if isinstance(dim, IntRange) else (min(dim.values), max(dim.values)))
                for name, dim in self.dims.items()]
        out = [{}]
        for name, values in ends:
            out = [{**corner, name: v} for corner in out for v in dict.fromkeys(values)]
        return out


@dataclass(frozen=True)
class Size:
    """One graded size. Hidden sizes get an id that does not reveal their dims."""

    kind: str  # "public", "hidden" or "fuzz"
    index: int
    dims: Mapping[str, int]

    @property
    def id(self) -> str:
        if self.kind == "hidden":
            return f"hidden-{self.index}"
        return f"{self.kind}-{self.index}:{dims_label(self.dims)}"

    @property
    def timed(self) -> bool:
        return self.kind in ("public", "hidden")


def dims_label(dims: Dims) -> str:
    return "x".join(f"{k}{v}" for k, v in dims.items())


@dataclass(frozen=True)
class Cost:
    """What one call of a size costs at least: the FLOPs and bytes a kernel cannot avoid.
    ``unit`` ("GB/s" or "TF/s") is the throughput the report shows. Both counts also set the
    physical floor, under which a time is impossible and flagged."""

    flops: Callable[[Dims], float]
    bytes: Callable[[Dims], float]
    unit: str = "GB/s"

    def floor_ms(self, dims: Dims, peak_bytes_per_s: float, peak_flops: float) -> float:
        """No kernel can be faster than moving its bytes or doing its FLOPs at peak."""
        return 1e3 * max(self.bytes(dims) / peak_bytes_per_s, self.flops(dims) / peak_flops)

    def throughput(self, dims: Dims, time_ms: float) -> float:
        if self.unit == "TF/s":
            return self.flops(dims) / (time_ms * 1e-3) / 1e12
        return self.bytes(dims) / (time_ms * 1e-3) / 1e9


# A sandbox's host memory by device kind: on the GPU a process holds torch, the CUDA context
# and the driver's pinned buffers besides the submission's own; the CPU sizes are small, and
# 4 GiB leaves torch and the Triton interpreter room over them.
HOST_MEMORY_GIB = {"cuda": 32.0, "cpu": 4.0}
# The least a submission's kernel file gets to import: a file may build ahead at import what it
# would otherwise build at its first call (a CUDA extension through nvcc takes tens of
# seconds), so it gets its call limit, and never less than this.
LOAD_TIMEOUT_FLOOR_S = 60.0


def load_timeout_s(call_timeout_s: float) -> float:
    """How long a submission's kernel file may take to import, given its call limit."""
    return max(call_timeout_s, LOAD_TIMEOUT_FLOOR_S)


@dataclass(frozen=True)
class Profile:
    """How an environment is graded on one kind of device ("cuda" or "cpu")."""

    sizes: tuple[Mapping[str, int], ...]  # the public sizes, timed
    domain: SizeDomain  # what Hypothesis draws from; hidden sizes must lie inside it too
    expert: Path  # the production kernel timed against, same contract
    call_timeout_s: float = 30.0  # a call slower than this is a hang: the sandbox is killed
    timing: tuple[int, int] | None = None  # (warm-up, timed) rounds; None: the grader's default
    fuzz_examples: int = 8  # Hypothesis examples per grade
    # Other production kernels timed beside the expert for context (--nodus-baselines), never
    # part of the reward. A baseline file may define ``prepare(*args)`` returning the
    # arguments of its ``kernel``: run before the clock starts.
    baselines: Mapping[str, Path] = field(default_factory=dict)
    # GPU memory (GiB) a submission may hold besides its inputs and outputs: workspaces,
    # caches, temporaries. Published on the task card. A grade reserves room for it before it
    # starts (grader/gpu_ledger.py), and the grader holds the submission to it
    # (grader/gpu_memory_wall.py): a kernel within it never meets a shortage that another
    # grade on the GPU caused.
    memory_gib: float = 8.0
    # The same for the expert: the most it was measured to hold (gpu_held_gib of the expert
    # graded --nodus-trusted over the sealed and fuzzed sizes) with headroom. Reserved for the
    # expert's sandbox and held by the same wall, past which a size is expert_failed (the
    # grader's loss, never the submission's). None: memory_gib, reserved but not held. A batch
    # reserves it once, beside each attempt's memory_gib.
    expert_memory_gib: float | None = None
    # Host memory (GiB; None: HOST_MEMORY_GIB for the device kind) and tasks (processes and
    # threads) a submission's sandbox may hold, all it starts included. Published on the task
    # card; held by the kernel where the grader can make limit cgroups (grader/cgroup_limits.py):
    # past them the sandbox is killed, or its fork refused.
    host_memory_gib: float | None = None
    max_tasks: int = 4096

    @property
    def expert_budget_gib(self) -> float:
        return self.memory_gib if self.expert_memory_gib is None else self.expert_memory_gib

    def sandbox_limits(self, kind: str) -> tuple[int, int]:
        """(host memory bytes, tasks) a submission's sandbox may hold on ``kind``."""
        gib = self.host_memory_gib if self.host_memory_gib is not None else HOST_MEMORY_GIB[kind]
        return int(gib * 2**30), self.max_tasks


@dataclass(frozen=True)
class Environment:
    """One kernel task. See the module docstring and README's "Adding an environment"."""

    name: str
    version: str
    contract: Contract
    # (dims, generator, device) -> {input name: tensor or scalar}; fresh values per call.
    make_inputs: Callable[[Dims, "torch.Generator", "torch.device"], dict[str, Any]]
    # inputs -> reference outputs in fp32 or fp64, in contract order, then the error_scales.
    reference: Callable[[dict[str, Any]], tuple["torch.Tensor", ...]]
    tolerance: Mapping[str, "Tolerance"]  # per output name
    cost: Cost
    profiles: Mapping[str, Profile]  # device kind -> Profile
    # What a submission may not use, as intent (grader/keepout.py: presets and mechanisms).
    forbid: tuple["Forbidden", ...] = ()
    # inputs -> the reference's math rounded where an honest kernel of the contract's dtypes
    # rounds (bf16 operands of its matmuls, bf16 outputs). An output that misses its limit
    # passes within correctness.ROUNDED_FACTOR of this computation's error on the same inputs.
    rounded_reference: Callable[[dict[str, Any]], tuple["torch.Tensor", ...]] | None = None
    # name -> what it measures (for the task card): magnitudes the reference returns after
    # the outputs, in this order, that a tolerance may measure errors against
    # (Normwise.floor_from); never compared. An output that is a sum of terms which cancel
    # has an honest rounding error set by its terms' size, not by its own value.
    error_scales: Mapping[str, str] = field(default_factory=dict)

    def profile(self, device_kind: str) -> Profile:
        if device_kind not in self.profiles:
            raise ValueError(f"environment '{self.name}' has no profile for device kind '{device_kind}'")
        return self.profiles[device_kind]

    @property
    def keep_out(self) -> "KeepOut":
        from pytest_nodus.grader.keepout import KeepOut

        return KeepOut.of(self.forbid)

    def derive(self, name: str, profiles: Mapping[str, Mapping[str, Any]] | None = None, **changes) -> "Environment":
        """A variant (test environments): ``changes`` to the environment's own fields or, for
        Profile fields, to every profile; ``profiles`` to one device kind's profile only."""
        import dataclasses

        profile_fields = {f.name for f in dataclasses.fields(Profile)}
        everywhere = {k: v for k, v in changes.items() if k in profile_fields}
        own = {k: v for k, v in changes.items() if k not in profile_fields}
        updated = {kind: dataclasses.replace(p, **everywhere, **(profiles or {}).get(kind, {}))
                   for kind, p in self.profiles.items()}
        return dataclasses.replace(self, name=name, profiles=updated, **own)


def load_hidden_sizes(sealed_dir: Path, env: Environment, device_kind: str) -> tuple[Mapping[str, int], ...]:
    """Read ``sealed_dir/<env>.json``. Raises ValueError with a one-line reason."""
    path = Path(sealed_dir) / f"{env.name}.json"
    if not path.is_file():
        raise ValueError(f"no hidden sizes for environment '{env.name}': {path} does not exist")
    try:
        data = json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path} is not valid JSON: {exc}") from None
    if data.get("environment") != env.name:
        raise ValueError(f"{path} is for environment {data.get('environment')!r}, not {env.name!r}")
    sizes = data.get("hidden_sizes", {}).get(device_kind)
    if not sizes:
        raise ValueError(f"{path} has no hidden sizes for device kind '{device_kind}'")
    domain = env.profile(device_kind).domain
    for dims in sizes:
        if not domain.contains(dims):
            raise ValueError(f"{path}: a hidden size lies outside the environment's size domain")
    return tuple(sizes)


def file_sha256(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def sizes_to_grade(
    env: Environment, device_kind: str, hidden: Sequence[Mapping[str, int]] = ()
) -> list[Size]:
    public = [Size("public", i, dict(d)) for i, d in enumerate(env.profile(device_kind).sizes)]
    return public + [Size("hidden", i, dict(d)) for i, d in enumerate(hidden)]
