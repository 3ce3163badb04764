"""A sandbox's uid must be one the grader's user namespace maps: a container whose map ends
below it would make the sandbox's switch fail at start-up, flooring a correct kernel. Such
a sandbox keeps the grader's uid instead (its isolation then lacks own-uid)."""

from pytest_nodus.grader.walls import UID_BASE, mapped

FULL = "         0          0 4294967295\n"
SHORT = "         0          0      65536\n"  # a rootless container's map
SPLIT = "0 0 1000\n16777216 100000 65536\n"


def test_a_full_map_holds_every_sandbox_uid():
    assert mapped(UID_BASE, FULL) and mapped(UID_BASE + (1 << 30), FULL)


def test_a_short_map_holds_none():
    assert not mapped(UID_BASE, SHORT)


def test_each_range_counts_up_to_its_end_only():
    assert mapped(UID_BASE, SPLIT) and mapped(UID_BASE + 65535, SPLIT)
    assert not mapped(UID_BASE + 65536, SPLIT) and not mapped(5000, SPLIT)
