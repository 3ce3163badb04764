"""The roles of a grade's sandboxes.

``submission`` (or ``submission:<i>``, the i-th attempt of a batch), ``expert`` and
``baseline:<name>``; a sandbox's *process role* is the part before the colon, which is all the
sandbox itself is told. Imports nothing: the plugin names the roles before torch is imported
(``grader/standby.py``).
"""

from __future__ import annotations


def submission_roles(count: int) -> list[str]:
    """The roles of ``count`` submissions: ``submission`` alone, or one per attempt of a batch."""
    return ["submission"] if count == 1 else [f"submission:{i}" for i in range(count)]


def is_submission(role: str) -> bool:
    return role == "submission" or role.startswith("submission:")


def process_role(role: str) -> str:
    return role.split(":", 1)[0]
