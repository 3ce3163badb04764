"""Children's CPU time is read on the kernel's clocks and billed to the window in which the child ended."""

from __future__ import annotations



def test_reaped_children_and_start_times_are_read_on_the_kernels_clocks():
    """The clock's two /proc readings for children that end inside a call: the CPU time of
    reaped children (cutime + cstime) grows by what a child burned once it is waited for, and
    a process's start time is on the same clock as ``boot_ticks`` (ended_orphans compares
    them)."""
    import os
    import subprocess
    import sys

    from pytest_nodus.grader import child_time, processes

    before_ns, before_ticks = child_time._reaped_children_ns(os.getpid()), child_time.boot_ticks()
    child = subprocess.Popen([sys.executable, "-c", "import time\nt = time.process_time()\n"
                              "while time.process_time() - t < 0.1: pass\ntime.sleep(0.2)"])
    started = int(processes.stat_fields(child.pid)[19])
    assert before_ticks <= started <= child_time.boot_ticks()
    assert child_time._reaped_children_ns(os.getpid()) == before_ns  # not reaped yet: not counted
    child.wait()
    assert child_time._reaped_children_ns(os.getpid()) - before_ns >= 90_000_000  # its 0.1 s, to a tick


def test_a_child_counts_in_the_window_in_which_it_ended_not_where_it_was_reaped():
    """Run 33: a correct torch.compile kernel was flagged for 80 ms of children's CPU in a
    timed call. A child that ends earlier and is only waited for inside a window (a collected
    ``Popen`` reaps its zombie whenever the collector runs) must not count there; one that
    runs and ends inside the window counts even while nobody has waited for it."""
    import os
    import subprocess
    import sys
    import time

    from pytest_nodus.grader import child_time, processes

    burn = "import time\nt = time.process_time()\nwhile time.process_time() - t < 0.1: pass"

    def zombie():
        child = subprocess.Popen([sys.executable, "-c", burn])
        while processes.stat_fields(child.pid)[0] != "Z":
            time.sleep(0.01)
        return child

    before = zombie()  # ended before the window opens
    opened = child_time.ended_children(os.getpid())
    assert processes.living({before.pid}) == set()  # ended: not a live helper either
    before.wait()  # reaped inside the window
    assert child_time.ended_between(opened, child_time.ended_children(os.getpid())) == 0
    inside = zombie()  # runs and ends inside the window, not yet reaped
    assert child_time.ended_between(opened, child_time.ended_children(os.getpid())) >= 90_000_000
    inside.wait()
    assert child_time.ended_between(opened, child_time.ended_children(os.getpid())) >= 90_000_000

