"""cuDNN execution plans kept across grades, for the trusted cuDNN experts.

Building a cuDNN SDPA graph's plan compiles its kernel at run time (NVRTC): an expert that
builds one graph per capacity of every shape spends seconds of each grade's first calls
there, every grade again, for the same plans. A plan built once is stored in the trusted
roles' cache (``NODUS_TRUSTED_CACHE``: the grader sets it for the expert and the baselines,
never for a submission, which can neither read nor write it) and loaded by later grades.
Graded as a (trusted, confined) submission, an expert file imports this module too: there
the variable is unset, and every plan is built.

A stored plan is the cuDNN backend's own serialization of the built plan, keyed by all it
depends on: the graph's description (every dimension, stride, data type and option the
expert passed), the GPU (name and compute capability) and the cuDNN backend and frontend
versions. Whatever goes wrong with one (missing, unreadable, written by another build, a
deserialize that raises) builds the plan as without a cache, and stores that: the cache can
only save time. A plan that loaded but computed wrongly would not pass unseen either: the
grader checks the expert's outputs at every call (``expert_failed``).

Outside a grade (``tools/bench_env.py``) the variable is unset and every plan is built.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path

CACHE_VARIABLE = "NODUS_TRUSTED_CACHE"


def versions() -> tuple:
    """What a stored plan is valid for besides its graph: the GPU and the cuDNN it was built by."""
    import cudnn
    import torch

    device = torch.cuda.current_device()
    return (torch.cuda.get_device_name(device), torch.cuda.get_device_capability(device),
            cudnn.backend_version(), cudnn.__version__)


def plan_path(root: str, description: tuple, built_by: tuple) -> Path:
    """Where, under the store ``root``, the plan of the graph ``description`` is kept for
    ``built_by`` (:func:`versions`)."""
    digest = hashlib.sha256(repr((description, built_by)).encode()).hexdigest()[:32]
    return Path(root) / "cudnn-plans" / f"{digest}.plan"


def build(declare, handle, description: tuple, heuristics: list):
    """A graph with a built plan: ``declare()`` gives a graph with its tensors and operations
    declared; its plan is loaded where a stored one deserializes, else built and stored. A
    failed load leaves its graph half-changed, so the build declares a fresh one."""
    root = os.environ.get(CACHE_VARIABLE)  # unset outside a grade, and for a submission
    path = plan_path(root, description, versions()) if root else None
    graph = declare()
    if path is not None:
        try:
            blob = path.read_bytes()
        except OSError:
            blob = b""
        if blob:
            try:
                graph.deserialize(handle, list(blob))  # byte values: what every frontend version takes
                return graph
            except Exception:  # noqa: BLE001  any failure to load means: build it (below)
                graph = declare()
    graph.validate()
    graph.build_operation_graph()
    graph.create_execution_plans(heuristics)
    graph.check_support()
    graph.build_plans()
    if path is not None:
        _store(path, graph)
    return graph


def _store(path: Path, graph) -> None:
    """Write the built plan where ``build`` looks for it: whole or not at all (a rename), so a
    grade beside this one never reads half a plan. A plan the backend cannot serialize, or a
    cache that cannot be written, is left unstored: the next grade builds it again."""
    partial = None
    try:
        blob = bytes(graph.serialize())
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=path.parent, delete=False) as out:
            partial = out.name
            out.write(blob)
        os.replace(partial, path)
    except Exception:  # noqa: BLE001
        if partial is not None:
            Path(partial).unlink(missing_ok=True)
