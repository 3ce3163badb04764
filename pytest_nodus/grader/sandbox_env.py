"""The environment variables a sandbox starts with: a scrubbed few, never the grader's own.

Runs only in the grader. The sandbox's process inherits nothing else (no PYTEST_*, NODUS_*,
CI secrets, nor the sealed path a command line wrapper may have exported), so nothing the
grader knows reaches the submission through its environment.
"""

from __future__ import annotations

import os
from pathlib import Path

from pytest_nodus.grader import bytecode
from pytest_nodus.trusted.cudnn_plans import CACHE_VARIABLE

INHERITED = ("PATH", "LANG", "LC_ALL", "LD_LIBRARY_PATH", "CUDA_HOME", "CUDA_PATH", "CUDA_VISIBLE_DEVICES",
             "NVIDIA_VISIBLE_DEVICES", "NCCL_NVLS_ENABLE", "TORCH_SYMM_MEM_DISABLE_MULTICAST",
             "NVSHMEM_DISABLE_NVLS", "TRITON_PTXAS_PATH", "OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")
# Where ``pytest_nodus`` is importable from (a checkout's root, or site-packages).
IMPORT_ROOT = Path(__file__).resolve().parents[2]


def variables(scratch: Path, cache_dir: Path | None, uid: int | None, role: str) -> dict[str, str]:
    """The sandbox's whole environment at its spawn: its scratch as HOME and TMPDIR, its
    compile caches. What depends on the device or the environment comes later
    (:func:`launch_variables`)."""
    env = {k: os.environ[k] for k in INHERITED if k in os.environ}
    caches = cache_dir or scratch
    env.update({
        "HOME": str(scratch), "TMPDIR": str(scratch), "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONPATH": str(IMPORT_ROOT), "PYTHONUNBUFFERED": "1",
        "TRITON_CACHE_DIR": str(caches / "triton"), "TORCHINDUCTOR_CACHE_DIR": str(caches / "inductor"),
        "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "1"),
    })
    cached = bytecode.offered()
    if cached is not None:
        # The grader's bytecode of the libraries it imports: read, never written (grader/bytecode.py).
        env["PYTHONPYCACHEPREFIX"] = str(cached)
    if cache_dir is not None and role != "submission":
        # Where a trusted file keeps what it builds across grades besides the compilers' caches
        # (the cuDNN experts' plans: trusted/cudnn_plans.py). A submission never has one.
        env[CACHE_VARIABLE] = str(cache_dir)
    if uid is not None:
        # A uid with no passwd entry: getpass.getuser() (inductor's cache path) reads these first.
        env["USER"] = env["LOGNAME"] = f"nodus-{uid}"
    if role == "submission":
        # Compile in-process: no worker pool outliving a call for the thread census to see.
        env["TORCHINDUCTOR_COMPILE_THREADS"] = "1"
    return env


def launch_variables(device: str, removes_kernels: bool) -> dict[str, str]:
    """Variables the sandbox sets on itself from its first message, before it creates a device
    context, imports Triton or loads the kernel file: nothing reads them earlier (its spawn
    imports torch only, which reads neither)."""
    env = {}
    if removes_kernels:
        # Removal works only on kernels not yet on the GPU: modules load on first launch.
        env["CUDA_MODULE_LOADING"] = "LAZY"
    if device == "cpu":
        env["TRITON_INTERPRET"] = "1"
        env["CUDA_VISIBLE_DEVICES"] = ""
    return env
