"""The per-GPU lock is waited for within a bound and names its holder."""

from __future__ import annotations



def test_the_gpu_lock_is_waited_for_within_a_bound_and_names_its_holder(tmp_path):
    """Run 31: a grader blocked inside CUDA while holding a GPU's lock, and every other grade
    on that GPU waited for good. The wait is bounded now; the one that gives up says who
    holds the lock, and the lock is taken as soon as it is free."""
    import os
    import threading
    import time

    import pytest

    from pytest_nodus.grader import devices

    path = tmp_path / "pytest-nodus-gpu-test.lock"
    with devices.hold(path, wait_s=1):
        started = time.monotonic()
        with pytest.raises(devices.DeviceBusy, match=f"held by pid {os.getpid()} since"):
            with devices.hold(path, wait_s=0.3):  # a second open file: flock sees another holder
                pass
        assert 0.3 <= time.monotonic() - started < 2
    with devices.hold(path, wait_s=0.3):  # released: taken at once
        pass
    holder_done = threading.Event()

    def hold_briefly():
        with devices.hold(path, wait_s=1):
            holder_done.wait(0.2)

    thread = threading.Thread(target=hold_briefly)
    thread.start()
    time.sleep(0.05)
    with devices.hold(path, wait_s=5):  # waits out a short hold instead of failing
        assert not thread.is_alive()
    thread.join()

