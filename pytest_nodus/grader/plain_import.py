"""Hypothesis imported as Python imports it, past pytest's assertion rewriter.

pytest rewrites the ``assert`` statements of every module of a distribution that registers a
pytest plugin, and Hypothesis registers one: its 74 modules are parsed, rewritten and
compiled at their first import, then kept as bytecode beside them. Where the host writes no
bytecode (``PYTHONDONTWRITEBYTECODE``, a read-only site-packages: common in containers) that
happens again in every grading process, at its first fuzzed size: 0.9-1.0 s on a 2-core CI
machine (docs/results/throughput.md), a tenth of an rmsnorm grade's target. The grader reads no
Hypothesis assertion's message, so nothing is lost. Runs only in the grader.
"""

from __future__ import annotations

import importlib
import sys
import threading

# What the grader imports of Hypothesis (grader/fuzz.py, grader/suite.py, grader/options.py),
# all of it reached through the fuzz (suite.py), which calls :func:`hypothesis` first;
# importing the package and its strategies brings in nearly all the rest.
MODULES = ("hypothesis", "hypothesis.strategies", "hypothesis.configuration", "hypothesis.database")

_lock = threading.Lock()


def _rewriters() -> list[tuple[int, object]]:
    """(index, finder) of pytest's assertion rewriters on ``sys.meta_path``."""
    try:
        from _pytest.assertion.rewrite import AssertionRewritingHook
    except ImportError:  # no pytest here, or a pytest without the rewriter: nothing to bypass
        return []
    return [(i, f) for i, f in enumerate(sys.meta_path) if isinstance(f, AssertionRewritingHook)]


def hypothesis() -> None:
    """Import :data:`MODULES`, pytest's rewriters set aside meanwhile. Idempotent; a module
    already imported (rewritten or not) is left as it is."""
    if all(name in sys.modules for name in MODULES):
        return
    with _lock:
        hooks = _rewriters()
        for _, hook in hooks:
            sys.meta_path.remove(hook)
        try:
            for name in MODULES:
                importlib.import_module(name)
        finally:
            for index, hook in hooks:  # ascending: each goes back where it stood
                sys.meta_path.insert(index, hook)


__all__ = ["MODULES", "hypothesis"]
