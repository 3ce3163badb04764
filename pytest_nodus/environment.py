"""What an environment is: one kernel task, declared in one place.

An environment folder in ``env_suites/<name>/`` declares an :class:`Environment` in
``environment.py``: the kernel contract, how inputs are made from (size, seed), the
fp32/fp64 reference, the tolerance per output, the public and CPU sizes, the size
domain that Hypothesis draws from, FLOP and byte counts per size, the expert kernel per
device, and the ops a submission may not run. Hidden sizes live apart, in
``sealed_fixtures/<name>.json``, and are read only by the grader process.

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

    from pytest_nodus.correctness import Tolerance

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
        from pytest_nodus.transport import tensor_nbytes

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
class Environment:
    """One kernel task. See the module docstring and README's "Adding an environment"."""

    name: str
    version: str
    contract: Contract
    # (dims, generator, device) -> {input name: tensor or scalar}; fresh values per call.
    make_inputs: Callable[[Dims, "torch.Generator", "torch.device"], dict[str, Any]]
    # inputs -> reference outputs in fp32 or fp64, in contract order.
    reference: Callable[[dict[str, Any]], tuple["torch.Tensor", ...]]
    tolerance: Mapping[str, "Tolerance"]  # per output name
    public_sizes: tuple[Mapping[str, int], ...]
    cpu_sizes: tuple[Mapping[str, int], ...]
    size_domain: SizeDomain
    cpu_size_domain: SizeDomain
    flops: Callable[[Dims], float]
    bytes_moved: Callable[[Dims], float]
    # device kind ("cuda" or "cpu") -> path of the expert kernel file (same contract).
    expert: Mapping[str, Path]
    # Regexes over op and kernel names a submission may not run (the expert's own, ...).
    # When non-empty, every call of both sandboxes runs under the kernel audit (the torch
    # profiler, on all streams). The audit costs host time on every launch, so an
    # environment that forbids nothing is timed without it.
    forbidden: tuple[str, ...] = ()
    # Shared-library file name prefixes (e.g. "libcudnn") the submission's sandbox may not
    # read: Landlock refuses to open them, so the library cannot be loaded at all. The audit
    # above is a claim of the submission's process; this is the kernel's word. Only
    # libraries torch does not load at start-up can be kept out this way (tools/gpu_check.sh
    # probes which are mapped).
    unreadable_libraries: tuple[str, ...] = ()
    # Top-level Python module names (e.g. "flash_attn", "xformers") whose installed files the
    # submission's sandbox may not read, wherever a Python on the machine has them: importing
    # them fails, and their extension libraries cannot be loaded by path either. Nothing to
    # do where they are not installed; a grading image that gains one stays sealed.
    unreadable_packages: tuple[str, ...] = ()
    # Regexes over the (mangled) names of GPU kernels compiled into torch's own CUDA library
    # (e.g. FlashAttention) that the submission's process may not run. Landlock cannot keep
    # that library out (torch maps it at import), so the sandbox overwrites every fatbin
    # holding such a kernel in its own mapping before the submission is imported, and the
    # file is made unreadable (pytest_nodus.fatbin). On the GPU only; a pattern that matches
    # no kernel is an error, not a silent pass.
    removed_kernels: tuple[str, ...] = ()
    # Directories of inductor's kernel templates (relative to torch/_inductor, e.g.
    # "kernel/flex/templates": FlexAttention) a submission may not generate kernels from:
    # the sandbox builds them from a stub and makes the files unreadable
    # (pytest_nodus.templates). On every device; a directory that does not exist is an error.
    removed_templates: tuple[str, ...] = ()
    # device kind -> {name: kernel file}: other production kernels timed beside the expert
    # for context (--nodus-baselines); never part of the reward. A baseline file may define
    # ``prepare(*args)`` returning the arguments of its ``kernel``: run before the clock
    # starts (e.g. a forward pass whose backward is the thing timed).
    baselines: Mapping[str, Mapping[str, Path]] = field(default_factory=dict)
    # device kind -> (warm-up rounds, timed rounds) where the grader's default plan does not suit.
    timing_rounds: Mapping[str, tuple[int, int]] = field(default_factory=dict)
    # A call slower than this is a hang: the sandbox is killed and the grade times out.
    call_timeout_s: float = 30.0
    cpu_call_timeout_s: float = 120.0
    # Which metric the report shows: "GB/s" (memory-bound) or "TF/s".
    throughput_unit: str = "GB/s"
    # Hypothesis examples per grade, per device kind.
    fuzz_examples: Mapping[str, int] = field(default_factory=lambda: {"cuda": 12, "cpu": 8})

    def sizes_for(self, device_kind: str) -> tuple[Mapping[str, int], ...]:
        return self.public_sizes if device_kind == "cuda" else self.cpu_sizes

    def domain_for(self, device_kind: str) -> SizeDomain:
        return self.size_domain if device_kind == "cuda" else self.cpu_size_domain

    def physical_floor_ms(self, dims: Dims, peak_bytes_per_s: float, peak_flops: float) -> float:
        """No kernel can be faster than moving its bytes or doing its FLOPs at peak."""
        return 1e3 * max(self.bytes_moved(dims) / peak_bytes_per_s, self.flops(dims) / peak_flops)

    def throughput(self, dims: Dims, time_ms: float) -> float:
        if self.throughput_unit == "TF/s":
            return self.flops(dims) / (time_ms * 1e-3) / 1e12
        return self.bytes_moved(dims) / (time_ms * 1e-3) / 1e9


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
    domain = env.domain_for(device_kind)
    for dims in sizes:
        if not domain.contains(dims):
            raise ValueError(f"{path}: a hidden size lies outside the environment's size domain")
    return tuple(sizes)


def file_sha256(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def sizes_to_grade(
    env: Environment, device_kind: str, hidden: Sequence[Mapping[str, int]] = ()
) -> list[Size]:
    public = [Size("public", i, dict(d)) for i, d in enumerate(env.sizes_for(device_kind))]
    return public + [Size("hidden", i, dict(d)) for i, d in enumerate(hidden)]
