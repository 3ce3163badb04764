"""A failing size is shrunk from the domain's smallest size first: a kernel that fails at
every size (a crash restarts its sandbox at each trial) costs one trial there; one that
passes there is shrunk dim by dim as before, one trial later; a smallest size outside the
domain's joint constraint is never tried; a size outside the domain is walked from the
nearest size inside it."""

from __future__ import annotations

from pytest_nodus.grader.environment import Choice, IntRange, SizeDomain
from pytest_nodus.grader.fuzz import shrink

DOMAIN = SizeDomain({"T": IntRange(1, 32768), "Hkv": IntRange(1, 16), "D": Choice((64, 128, 256)), "W": Choice((-1, 1024))})
FAILING = {"T": 16384, "Hkv": 4, "D": 128, "W": 1024}


def _counted(fails):
    trials = []

    def counted(dims):
        trials.append(dims)
        return fails(dims)
    return counted, trials


def test_a_kernel_failing_everywhere_is_shrunk_in_one_trial():
    fails, trials = _counted(lambda dims: True)
    assert shrink(FAILING, DOMAIN, fails) == {"T": 1, "Hkv": 1, "D": 64, "W": -1}
    assert len(trials) == 1


def test_a_kernel_correct_at_the_smallest_size_is_shrunk_dim_by_dim():
    fails, trials = _counted(lambda dims: dims["D"] == 128 and dims["T"] >= 100)  # wrong only at D 128, long
    smallest = shrink(FAILING, DOMAIN, fails)
    assert fails(smallest) and smallest["D"] == 128 and smallest["T"] < FAILING["T"] and smallest["Hkv"] == 1
    assert trials[0] == {"T": 1, "Hkv": 1, "D": 64, "W": -1}  # the corner, first, passed


def test_a_smallest_size_outside_the_joint_constraint_is_not_tried():
    domain = SizeDomain(DOMAIN.dims, constraint=lambda dims: dims["T"] >= 8 * dims["Hkv"])
    fails, trials = _counted(lambda dims: True)
    assert shrink(FAILING, domain, fails)["T"] >= 8
    assert all(domain.contains(t) for t in trials)



def test_a_size_outside_the_domain_is_walked_from_inside_it():
    # A CPU public size may lie outside the fuzz's small domain, where no one-dim move gets in.
    small = SizeDomain({"T": IntRange(1, 80), "D": Choice((16, 32))})
    fails, trials = _counted(lambda dims: dims["T"] >= 10)
    smallest = shrink({"T": 96, "D": 64}, small, fails)
    assert trials[:2] == [{"T": 1, "D": 16}, {"T": 80, "D": 32}]  # the corner passed; the size brought inside fails
    assert smallest["D"] == 16 and 10 <= smallest["T"] < 80
