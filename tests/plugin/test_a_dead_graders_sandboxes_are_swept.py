"""What a dead grader left in its sandboxes' cgroups (a process, frozen) is killed by the next
grader's start, and the cgroups removed: nothing a killed grade left can hold memory for good."""

import subprocess
import time

import pytest

from pytest_nodus.grader import cgroup

pytestmark = pytest.mark.grade


def test_the_next_grader_kills_what_a_dead_grader_left_frozen(tmp_path):
    home = cgroup.home()
    if home is None:
        pytest.skip("no writable cgroup v2 here: sandboxes run without cgroups (the grade's isolation says so)")
    dead = subprocess.Popen(["true"])
    dead.wait()  # a grader pid that is gone
    stale = home / f"nodus-{dead.pid}-0-submission"
    stale.mkdir()
    left = subprocess.Popen(["sh", "-c", f'echo $$ > "{stale}/cgroup.procs" && exec sleep 300'])
    try:
        deadline = time.monotonic() + 5
        while str(left.pid) not in (stale / "cgroup.procs").read_text():
            assert time.monotonic() < deadline
            time.sleep(0.01)
        (stale / "cgroup.freeze").write_text("1")
        cgroup._sweep(home)
        assert left.wait(timeout=5) == -9
        assert not stale.exists()
    finally:
        left.kill()
        if stale.exists():
            stale.rmdir()
