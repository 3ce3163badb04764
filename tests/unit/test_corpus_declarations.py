"""Every corpus file says what it tries and declares its expected verdict beside its code."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "corpus"))

from expectations import CHEATS, SUITES, corpus, read  # noqa: E402

STATUSES = {"correct", "wrong", "error", "timeout", "flagged"}


def test_every_cheat_declares_a_floor_verdict_for_a_known_device():
    from pytest_nodus.grader.reward import FLAG_STATUS

    files = sorted(CHEATS.glob("*/*.py"))
    assert len(files) == len(corpus()) >= 60
    for path in files:
        expected = read(path)
        assert expected.env in SUITES, path
        assert expected.verdicts and set(expected.verdicts) <= {"cpu", "cuda"}, path
        for status, codes in expected.verdicts.values():
            statuses = status if isinstance(status, tuple) else (status,)
            assert statuses and set(statuses) <= STATUSES - {"correct"}, path
            assert codes and all(FLAG_STATUS.get(code) for code in codes), (path, codes)


def test_every_cheat_says_what_it_tries():
    """The corpus is read by people: each file opens with a "Cheat: ..." statement."""
    for path in CHEATS.glob("*/*.py"):
        first = path.read_text().splitlines()[0]
        assert first.startswith('"""Cheat: ') and len(first) > 20, path
