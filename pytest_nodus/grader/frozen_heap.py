"""The grading process's imported objects set aside from Python's garbage collector.

A grade imports ~1500 modules (torch's among them): some 200,000 objects that live until the
process ends, and that every full collection walks again. Hypothesis runs one at its first
test, with a search of every object's referrers (``register_random``, for its own PRNG), and
pytest's unraisable-exception report runs five at the end (set to none for grades:
``grader/plugin.py``). ``gc.freeze`` moves every object alive now into a generation no
collection visits; what is created later is collected as before.

Two callers: the warm grading process, right before each fork (``grader/prefork.py``: the
CPython documentation's recipe for fork servers, which also keeps the collector from
touching, and so copying, pages a grade shares with its parent), and a grade's fuzz, before
Hypothesis's first test, once the grader's imports are done (``grader/suite.py``). At the
end of a session the objects are handed back (``thaw``), so that the interpreter's own
teardown finds them where it expects them. Runs only in the grader.
"""

from __future__ import annotations

import gc


def freeze() -> None:
    gc.freeze()


def thaw() -> None:
    gc.unfreeze()


__all__ = ["freeze", "thaw"]
