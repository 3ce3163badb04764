"""What a submission may not use, declared as intent, and how the grader enforces each.

An environment says *what* is forbidden (``forbid=ATTENTION_LIBRARIES``, ``forbid=(CUDNN,)``,
``forbid=(ops(r"^aten::rms_norm$"),)``). Each :class:`Forbidden` here says *how*: the
grader maps it to every mechanism that applies, strongest first.

Mechanisms (one place documents them; ``docs/sealing.md`` says what each one proves):

``libraries``      shared-library file name prefixes the submission's sandbox may not read:
                   Landlock refuses to open them, so they cannot be loaded at all (the kernel's
                   word). Only libraries torch does not map at start-up can be kept out so.
``packages``       top-level Python modules whose installed files, in any Python on the
                   machine, the sandbox may not read: importing them fails, and their
                   extensions cannot be loaded by path. Nothing to do where not installed.
``torch_kernels``  regexes over the names of GPU kernels compiled into torch's own CUDA
                   library: the fatbins holding them are zeroed in the sandbox's memory before
                   the submission is imported and the file made unreadable (GPU only; a
                   pattern that matches nothing is an error, not a silent pass).
``templates``      inductor template directories (relative to ``torch/_inductor``) that the
                   sandbox's inductor gets stubs for, their files unreadable.
``audit``          regexes over op and kernel names the run-time audit flags (``forbidden_op``).
                   The audit runs in the submission's process, so it is a tripwire: alone it
                   keeps out only what the submission does not take care to hide.

Calling the expert's own ops is not forbidden by default: it earns a reward of about 0.
"""

from __future__ import annotations

from dataclasses import dataclass, fields


@dataclass(frozen=True)
class Forbidden:
    """One thing a submission may not use; the fields are the mechanisms that enforce it."""

    name: str
    audit: tuple[str, ...] = ()
    libraries: tuple[str, ...] = ()
    packages: tuple[str, ...] = ()
    torch_kernels: tuple[str, ...] = ()
    templates: tuple[str, ...] = ()


def ops(*patterns: str, name: str | None = None) -> Forbidden:
    """Named torch ops or kernels (regexes): the run-time audit is all that applies."""
    return Forbidden(name or "ops " + ", ".join(patterns), audit=tuple(patterns))


CUDNN = Forbidden("cuDNN", audit=(r"(?i)cudnn",),
                  # torch maps only cuDNN's loader at start-up (libcudnn.so.9); the engines
                  # are opened later, so the whole library family can be kept unreadable.
                  libraries=("libcudnn",))

TORCH_SDPA = Forbidden(
    "torch's SDPA attention kernels (FlashAttention-2, memory-efficient)",
    audit=(r"^aten::_scaled_dot_product", r"^aten::scaled_dot_product", r"(?i)flash_attn",
           r"(?i)efficient_attention", r"(?i)fmha"),
    # FlashAttention-2 (namespace pytorch_flash) and the cutlass memory-efficient kernels
    # (fmha_cutlass*): 119 fatbins, 1623 kernels of libtorch_cuda.so in torch 2.11 on sm_90.
    # Matmuls, softmax and the SDPA math path stay.
    torch_kernels=(r"pytorch_flash", r"fmha_cutlass"))

FLEX_ATTENTION = Forbidden("FlexAttention", audit=(r"(?i)flex_attention",),
                           # Its Triton kernels are generated in the caller's process from these.
                           templates=("kernel/flex/templates",))

ATTENTION_PACKAGES = Forbidden(
    "attention packages outside torch (FlashAttention-2/3, xFormers, TransformerEngine, FlashInfer)",
    audit=(r"(?i)flash_attn",),
    # Not cuDNN's frontend: its library is kept out by CUDNN, and a cheat that imports it
    # behind a fallback dies loading it, where an import error would let the fallback run.
    packages=("flash_attn", "flash_attn_2_cuda", "flash_attn_interface", "flash_attn_3", "flash_attn_3_cuda",
              "xformers", "transformer_engine", "transformer_engine_torch", "flashinfer"))

ATTENTION_LIBRARIES = (CUDNN, TORCH_SDPA, FLEX_ATTENTION, ATTENTION_PACKAGES)
"""Every attention library kernel, however reached."""


@dataclass(frozen=True)
class KeepOut:
    """The union of an environment's :class:`Forbidden` entries: what the grader enforces."""

    audit: tuple[str, ...] = ()
    libraries: tuple[str, ...] = ()
    packages: tuple[str, ...] = ()
    torch_kernels: tuple[str, ...] = ()
    templates: tuple[str, ...] = ()

    @classmethod
    def of(cls, forbidden) -> KeepOut:
        merged = {f.name: [] for f in fields(cls)}
        for entry in forbidden:
            for name, values in merged.items():
                values.extend(v for v in getattr(entry, name) if v not in values)
        return cls(**{name: tuple(values) for name, values in merged.items()})

    @property
    def audited(self) -> bool:
        """Both sandboxes run under the kernel audit. It costs host time on every launch, so
        an environment that forbids nothing is timed without it."""
        return bool(self.audit)
