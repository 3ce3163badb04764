"""Sizes nobody chose: Hypothesis over the environment's size domain, and shrinking.

Only the dims are drawn (and the call's seed derives from the grade seed), never tensor
contents: tensors are made from the seed by the environment, so an example is cheap to
describe and to replay. Each dim favours the awkward values kernels get wrong (1, odd,
one off a power of two or a multiple of 64/128, the domain's ends) over the nice ones.

Local runs are seeded (the seed is printed and ``--nodus-seed`` replays it) and keep
Hypothesis's example database; sealed grades draw a fresh secret seed every grade and
write no database. A failing size is shown shrunk: Hypothesis shrinks fuzzed sizes, and
:func:`shrink` does the same greedily for a failing public size.
"""

from __future__ import annotations

from typing import Callable

from pytest_nodus.grader.environment import Choice, SizeDomain


def _awkward(low: int, high: int) -> list[int]:
    candidates = {low, low + 1, high, high - 1, 1, 2, 3, 7, 17}
    for power in range(4, 17):
        candidates.update({2**power - 1, 2**power + 1, 3 * 2 ** (power - 2) + 1})
    candidates.update({64 * k + 1 for k in (1, 3, 7)} | {128 * k - 1 for k in (1, 5, 9)})
    return sorted(c for c in candidates if low <= c <= high)


def size_strategy(domain: SizeDomain):
    from hypothesis import strategies as st

    def dim(spec):
        if isinstance(spec, Choice):
            return st.sampled_from(spec.values)
        return st.one_of(st.sampled_from(_awkward(spec.low, spec.high)), st.integers(spec.low, spec.high))

    return st.fixed_dictionaries({name: dim(spec) for name, spec in domain.dims.items()}).filter(domain.contains)


def _inside(spec, value: int) -> int:
    """The dim's value nearest ``value`` from below that the dim allows (its smallest if none)."""
    if isinstance(spec, Choice):
        return max((v for v in spec.values if v <= value), default=min(spec.values))
    return min(max(value, spec.low), spec.high)


def shrink(dims: dict, domain: SizeDomain, fails: Callable[[dict], bool], budget: int = 16) -> dict:
    """Greedy: move one dim at a time towards its smallest value while the size still fails.

    The domain's smallest size is tried first, in one trial: a kernel that fails at every
    size (a crash, a forbidden call, an output never written) fails there, where the greedy
    walk would spend a trial per dim at least, and each trial of a crashing kernel restarts
    its sandbox (seconds each on a GPU host). ``dims`` is returned where no trial fails."""
    smallest = {name: min(spec.values) if isinstance(spec, Choice) else spec.low for name, spec in domain.dims.items()}
    if budget > 0 and smallest != dims and domain.contains(smallest):
        budget -= 1
        if fails(smallest):
            return smallest
    current = dict(dims)
    # A public size may lie outside the fuzz's domain (the CPU's domain is small), where every
    # one-dim move stays outside: the walk starts from the size brought inside, if it fails there.
    inside = {name: _inside(spec, dims[name]) for name, spec in domain.dims.items()}
    if budget > 0 and not domain.contains(dims) and domain.contains(inside):
        budget -= 1
        if fails(inside):
            current = inside
    progress = True
    while progress and budget > 0:
        progress = False
        for name, spec in domain.dims.items():
            value = current[name]
            if isinstance(spec, Choice):
                options = sorted(v for v in spec.values if v < value)
            else:
                options = sorted({spec.low, (value + spec.low) // 2, value - 1} - {value})
                options = [v for v in options if spec.low <= v < value]
            for candidate in options:
                trial = {**current, name: candidate}
                if not domain.contains(trial):
                    continue
                budget -= 1
                if fails(trial):
                    current, progress = trial, True
                    break
                if budget <= 0:
                    return current
    return current
