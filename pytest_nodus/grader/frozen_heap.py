"""The grading process's imported objects set aside from Python's garbage collector.

A grade imports ~1500 modules (torch's among them): some 200,000 objects that live until the
process ends, and that every full collection walks again. Hypothesis runs one at its first
test, with a search of every object's referrers (``register_random``, for its own PRNG), and
pytest's unraisable-exception report runs five at the end (set to none for grades:
``grader/plugin.py``). ``gc.freeze`` moves every object alive now into a generation no
collection visits; what is created later is collected as before.

Two callers: the warm grading process, right before each fork (``grader/prefork.py``: the
CPython documentation's recipe for fork servers, which also keeps the collector from
touching, and so copying, the pages a grade shares with its parent), and a grade's fuzz,
before Hypothesis's first test, once the grader's imports are done (``grader/suite.py``).
At the end of a session a fresh process hands the objects back (``thaw``), so that the
interpreter's own teardown finds them where it expects them; a grade forked from the warm
process keeps them frozen: it ends without that teardown, and a collection over its
parent's objects would copy every page it shares with it. Runs only in the grader.
"""

from __future__ import annotations

import gc

_forked = False  # set in the warm process before it forks: its grades inherit it


def freeze() -> None:
    gc.freeze()


def freeze_for_fork() -> None:
    global _forked
    _forked = True
    gc.freeze()


def thaw() -> None:
    if not _forked:
        gc.unfreeze()


__all__ = ["freeze", "freeze_for_fork", "thaw"]
