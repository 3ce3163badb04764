"""Claims held to the grader's clock: the arithmetic, then the clock through the real plugin."""

from __future__ import annotations

import json

import pytest

from conftest import REPO
from pytest_nodus import timing
from pytest_nodus.timing import CallTimes


def calls(claims, windows):
    return [CallTimes(t, t, w) for t, w in zip(claims, windows)]


def test_the_windows_fixed_cost_is_measured_on_the_expert_and_subtracted():
    expert = calls([1.0, 1.1, 0.9], [1.3, 1.4, 1.2])  # 0.3 ms of copies and flush around each call
    overhead = timing.clock_overhead(expert)
    assert overhead == pytest.approx(0.3)
    assert timing.grader_time_ms(calls([2.0] * 3, [2.3, 2.35, 2.3]), overhead) == pytest.approx(2.0)


@pytest.mark.parametrize("kind", ["cuda", "cpu"])
def test_a_claim_at_the_clock_passes_and_a_halved_one_is_forged(kind):
    assert timing.forged_time_flag(10.0, 10.0, kind) is None
    assert timing.forged_time_flag(10.0, 9.0, kind) is None  # a clock under the claim is never a forgery
    assert "forged" in timing.forged_time_flag(5.0, 10.0, kind)


def test_gpu_slack_is_the_larger_of_absolute_and_relative():
    slack_abs, slack_rel = timing.CLOCK_SLACK["cuda"]
    claim = 0.02
    assert timing.forged_time_flag(claim, claim * (1 + slack_rel) + slack_abs * 0.99, "cuda") is None
    assert timing.forged_time_flag(claim, claim * (1 + slack_rel) + slack_abs * 1.01, "cuda") is not None


# H200 run 40, the attention solution at hidden-1 (T16384 Hq8/1 D128 B64 W128), rerun 1:
# (t_stream, t_call, window) in ms. The expert's calls fix the sync latency L (0.32 ms) and
# the window's fixed cost (0.50 ms).
RUN40_EXPERT = [CallTimes(0.3521, 0.6758, 0.8542), CallTimes(0.3483, 0.6696, 0.8489),
                CallTimes(0.3698, 0.6939, 0.8723), CallTimes(0.4754, 0.8004, 0.9813)]
RUN40_ON_TIME = CallTimes(0.1977, 0.5180, 0.6975)  # the mark 0.32 ms before the synchronise's
RUN40_MARKED_LATE = CallTimes(0.5652, 0.6064, 0.7455)  # the mark 0.04 ms before it


def test_a_return_marked_late_is_counted_from_the_graders_window_and_the_synchronise():
    latency, overhead = timing.sync_latency(RUN40_EXPERT), timing.clock_overhead(RUN40_EXPERT)
    assert latency == pytest.approx(0.3239, abs=1e-4) and overhead == pytest.approx(0.5023, abs=1e-4)
    assert not timing.marked_late(RUN40_ON_TIME, overhead, "cuda")
    assert timing.call_time(RUN40_ON_TIME, latency, overhead, "cuda") == RUN40_ON_TIME.t_stream_ms
    assert timing.marked_late(RUN40_MARKED_LATE, overhead, "cuda")
    late = timing.call_time(RUN40_MARKED_LATE, latency, overhead, "cuda")
    # t_call - L (0.284 ms): over the window (0.243), far under the late mark (0.565).
    assert late == pytest.approx(RUN40_MARKED_LATE.t_call_ms - latency)
    assert RUN40_MARKED_LATE.grader_ms - overhead < late < 0.3


def test_a_late_mark_never_counts_under_the_window_nor_drops_work_left_running():
    latency, overhead = 0.32, 0.50
    # Marked late with nothing left running: the grader's window, not less.
    quiet = CallTimes(0.54, 0.56, overhead + 0.25)
    assert timing.call_time(quiet, latency, overhead, "cuda") == pytest.approx(0.25)
    # Marked late with 0.4 ms still running on another stream: the synchronise counts it.
    busy = CallTimes(0.60, 1.02, overhead + 0.25)
    assert timing.call_time(busy, latency, overhead, "cuda") == pytest.approx(0.70)


def test_a_window_under_its_fixed_cost_is_not_a_late_mark():
    # H200 run 41: a call that did next to nothing read -0.06 ms on the grader's window.
    tiny = CallTimes(0.0044, 0.3473, 0.6591 - 0.0608)
    assert not timing.marked_late(tiny, 0.6591, "cuda")
    assert timing.call_time(tiny, 0.41, 0.6591, "cuda") == pytest.approx(0.0044)


def test_on_the_cpu_a_late_mark_changes_nothing():
    # Claim and clock are CPU times there and t_call == t_stream, so the rule is moot.
    call = CallTimes(3.0, 3.0, 1.0)
    assert timing.call_time(call, 0.0, 0.1, "cpu") == 3.0


def test_calls_the_clock_never_saw_are_left_out():
    assert timing.grader_time_ms(calls([1.0], [None]), 0.1) is None
    assert timing.clock_overhead(calls([1.0], [None])) is None


def test_an_honest_grade_reports_both_clocks_and_counts_the_larger(grade):
    result = grade(REPO / "expert" / "rmsnorm" / "solution.py")
    timed = [s for s in result.document["sizes"] if s["kind"] in ("public", "hidden")]
    assert timed and result.document["status"] == "correct", result.document["flags"]
    for size in timed:
        claimed, clock = size["t_submission_claimed_ms"], size["t_submission_grader_ms"]
        assert claimed > 0 and clock is not None and clock >= 0
        assert size["t_submission_ms"] == pytest.approx(max(claimed, clock))


def test_reaped_children_and_start_times_are_read_on_the_kernels_clocks():
    """The clock's two /proc readings for children that end inside a call: the CPU time of
    reaped children (cutime + cstime) grows by what a child burned once it is waited for, and
    a process's start time is on the same clock as ``boot_ticks`` (ended_orphans compares
    them)."""
    import os
    import subprocess
    import sys

    from pytest_nodus import clock, isolation

    before_ns, before_ticks = clock._reaped_children_ns(os.getpid()), clock.boot_ticks()
    child = subprocess.Popen([sys.executable, "-c", "import time\nt = time.process_time()\n"
                              "while time.process_time() - t < 0.1: pass\ntime.sleep(0.2)"])
    started = int(isolation.stat_fields(child.pid)[19])
    assert before_ticks <= started <= clock.boot_ticks()
    assert clock._reaped_children_ns(os.getpid()) == before_ns  # not reaped yet: not counted
    child.wait()
    assert clock._reaped_children_ns(os.getpid()) - before_ns >= 90_000_000  # its 0.1 s, to a tick


def test_a_child_counts_in_the_window_in_which_it_ended_not_where_it_was_reaped():
    """Run 33: a correct torch.compile kernel was flagged for 80 ms of children's CPU in a
    timed call. A child that ends earlier and is only waited for inside a window (a collected
    ``Popen`` reaps its zombie whenever the collector runs) must not count there; one that
    runs and ends inside the window counts even while nobody has waited for it."""
    import os
    import subprocess
    import sys
    import time

    from pytest_nodus import clock, isolation

    burn = "import time\nt = time.process_time()\nwhile time.process_time() - t < 0.1: pass"

    def zombie():
        child = subprocess.Popen([sys.executable, "-c", burn])
        while isolation.stat_fields(child.pid)[0] != "Z":
            time.sleep(0.01)
        return child

    before = zombie()  # ended before the window opens
    opened = clock._ended_children(os.getpid())
    assert isolation.living({before.pid}) == set()  # ended: not a live helper either
    before.wait()  # reaped inside the window
    assert clock._ended_between(opened, clock._ended_children(os.getpid())) == 0
    inside = zombie()  # runs and ends inside the window, not yet reaped
    assert clock._ended_between(opened, clock._ended_children(os.getpid())) >= 90_000_000
    inside.wait()
    assert clock._ended_between(opened, clock._ended_children(os.getpid())) >= 90_000_000


def test_the_gpu_lock_is_waited_for_within_a_bound_and_names_its_holder(tmp_path):
    """Run 31: a grader blocked inside CUDA while holding a GPU's lock, and every other grade
    on that GPU waited for good. The wait is bounded now; the one that gives up says who
    holds the lock, and the lock is taken as soon as it is free."""
    import os
    import threading
    import time

    import pytest

    from pytest_nodus import devices

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


def test_the_late_marks_of_h200_run_40_no_longer_cost_the_attention_solution_a_rerun():
    """Every timed call of run 40's attention solution, counted again: the rerun whose
    hidden-1 read 0.544 ms (6 of 10 calls marked late) reads near the window (0.22 ms), and
    no size of the other reruns, nor of rerun 1, moves otherwise."""
    grade = json.loads((REPO / "docs" / "h200" / "run40" / "attn_solution.json").read_text())
    for size in (s for s in grade["sizes"] if s["timed_calls"]):
        times = {role: [CallTimes.from_json(c) for c in calls] for role, calls in size["timed_calls"].items()}
        summary = timing.summarise(times, "cuda")
        assert summary.grader_ms == pytest.approx(size["t_submission_grader_ms"])
        if size["id"].startswith("hidden-1") and size["rerun"] == 1:
            assert size["t_submission_ms"] > 0.5
            assert summary.grader_ms < summary.submission_ms < 0.27
        else:
            assert summary.submission_ms == pytest.approx(size["t_submission_ms"], rel=0.01)
            assert summary.expert.median == pytest.approx(size["t_expert_ms"], rel=0.01)
