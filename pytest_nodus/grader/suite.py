"""The tests every environment suite runs, and how a verdict becomes a pytest outcome.

An environment's test module is three lines::

    class TestRMSNorm(EnvironmentSuite):
        environment = ENVIRONMENT

``test_size`` is parametrized by the plugin over the public sizes (and the hidden ones
with ``--nodus-sealed``), ``test_fuzzed_sizes`` draws sizes with Hypothesis; both are
repeated per ``--nodus-reruns``. An environment may add its own tests to its class.
Each graded test attaches its verdict to the report (``user_properties``), which is how
results reach the controller under xdist.
"""

from __future__ import annotations

import itertools

import pytest

from pytest_nodus.grader import frozen_heap, phases, plain_import, reward
from pytest_nodus.grader.results import SizeResult

GRADED_MARKER = "nodus_graded"  # the tests whose verdicts make the grade
GRADED_PROPERTY = "nodus_graded"  # user property of a graded test's setup report: its size and rerun
RESULT_PROPERTY = "nodus_result"  # user property of its call report: the SizeResult as JSON
ATTEMPT_KEY = "nodus_attempt"  # in a batch, which attempt a recorded SizeResult belongs to


def name_graded_test(item, turns: list[list[int]]) -> None:
    """Name the size, rerun and (a batch's) attempts of a graded test in its reports from setup
    on: a worker that dies during the call (or a fixture that fails) still leaves the
    controller, which plans no turns of its own, knowing which size of whose is lost. Called
    before the test's fixtures are set up."""
    if item.get_closest_marker(GRADED_MARKER) is None:
        return
    callspec = getattr(item, "callspec", None)
    params = callspec.params if callspec is not None else {}
    size = params.get("nodus_size")
    item.user_properties.append((GRADED_PROPERTY, {"size": size.id if size is not None else "fuzz",
                                                   "rerun": int(params.get("nodus_rerun", 0)),
                                                   "attempts": turns[int(params.get("nodus_turn", 0))]}))


# Failures that can depend on the size, worth shrinking to the smallest size that still fails.
# A file that does not load, a hang or a cheat's flag is the same at every size.
SHRINKABLE = frozenset({"wrong_values", "non_finite_output", "wrong_shape", "wrong_dtype", "wrong_output",
                        "raised", "crashed"})
# Failures after which nothing else can be graded: the run stops at once and says so once.
STOPS_THE_GRADE = {"load_failed": "pytest-nodus: the kernel file did not load; no size can be graded"}


class _FatalFailure(BaseException):
    """Stops Hypothesis at once (no shrinking through hangs and crashes)."""


def _summary(result: SizeResult) -> str:
    lines = [f"{result.id}: {result.status}"]
    lines += [f"  [{f['code']}] {f['detail']}" for f in result.flags[:6]]
    return "\n".join(lines)


class GradeRunner:
    """Binds the worker's grader to one pytest item and its turn's attempts (indices into the
    batch's files: all of them unless the batch is graded in turns, grader/turns.py)."""

    def __init__(self, grader, node, options, attempts: list[int] | None = None):
        self.grader = grader
        self.node = node
        self.options = options
        self.attempts = list(range(len(grader.roles))) if attempts is None else list(attempts)

    @property
    def batch(self) -> bool:
        return len(self.grader.roles) > 1

    def _record(self, result: SizeResult, attempt: int) -> None:
        payload = result.as_json()
        if self.batch:
            payload[ATTEMPT_KEY] = attempt
        self.node.user_properties.append((RESULT_PROPERTY, payload))

    def _conclude(self, results: list[SizeResult]) -> None:
        """Record the turn's attempts' verdicts; the test fails when any attempt's does."""
        for attempt, result in zip(self.attempts, results):
            self._record(result, attempt)
        if not self.batch:
            self._stop_if_final({f["code"] for f in results[0].flags})
        failed = [(i, r) for i, r in zip(self.attempts, results) if r.status != "correct"]
        if failed:
            pytest.fail("\n".join((f"attempt {i} ({self.grader.pool.submissions[self.grader.roles[i]].name}): "
                                   if self.batch else "") + _summary(r) for i, r in failed), pytrace=False)

    def grade_size(self, env, size, rerun: int) -> list[SizeResult]:
        self.grader.take_turn(self.attempts)
        results = self.grader.grade_size(env, size, self.node.nodeid, rerun)
        for attempt, result in zip(self.attempts, results):
            codes = {f["code"] for f in result.flags}
            if result.status in ("wrong", "error") and size.kind == "public" and not self.options.sealed \
                    and codes <= SHRINKABLE:
                with phases.timed(result.phases, "shrink"):
                    smallest = self._smallest_failing(env, size.dims, rerun, attempt)
                if smallest is not None and smallest != dict(size.dims):
                    result.flags.append({"size": result.id, "code": "smallest_failing_size",
                                         "detail": f"also fails at {smallest} (shrunk)"})
        self._conclude(results)
        return results

    def _stop_if_final(self, codes) -> None:
        """Stop the run (under xdist, this worker) after a failure no other size can change.
        Never in a batch: one attempt's failure says nothing of the others'."""
        for code in sorted(codes & set(STOPS_THE_GRADE)):
            self.node.session.shouldstop = STOPS_THE_GRADE[code]

    def _smallest_failing(self, env, dims, rerun, attempt: int) -> dict | None:
        """The attempt's smallest failing size: shrunk from ``dims`` at its first failing
        public size, the same answer at every later one (``Grader.smallest_failing``)."""
        role = self.grader.roles[attempt]
        if role not in self.grader.smallest_failing:
            self.grader.smallest_failing[role] = self._shrink(env, dims, rerun, attempt)
        return self.grader.smallest_failing[role]

    def _shrink(self, env, dims, rerun, attempt: int):
        counter = itertools.count(10_000)

        def fails(trial):
            return self.grader.check_fuzzed(env, trial, self.node.nodeid + "/shrink", next(counter), rerun,
                                            [attempt])[0].status != "correct"

        from pytest_nodus.grader import fuzz

        return fuzz.shrink(dict(dims), env.profile(self.grader.device.kind).domain, fails)

    def fuzz_sizes(self, env, rerun: int) -> list[SizeResult]:
        """Each attempt's fuzzed sizes, drawn by Hypothesis from a seed of the grade's."""
        self.grader.take_turn(self.attempts)
        summaries = self._fuzz_batch(env, rerun) if self.batch else [self._fuzz_one(env, rerun)]
        self._conclude(summaries)
        return summaries

    def _hypothesis(self, env, rerun: int, check) -> str | None:
        """Run ``check(dims)`` over the environment's domain; what stopped it, if anything did."""
        plain_import.hypothesis()
        frozen_heap.freeze()  # before Hypothesis's first test walks every object (grader/frozen_heap.py)
        from hypothesis import HealthCheck, given, seed, settings

        from pytest_nodus.grader import fuzz, inputs

        profile = env.profile(self.grader.device.kind)
        run = settings(max_examples=profile.fuzz_examples, deadline=None, database=self.options.hypothesis_database,
                       suppress_health_check=list(HealthCheck), print_blob=not self.options.sealed)(
            given(dims=fuzz.size_strategy(profile.domain))(check))
        try:
            seed(inputs.call_seed(self.grader.grade_seed, self.node.nodeid + "/hypothesis", rerun))(run)()
        except _FatalFailure:
            return "stopped at the first hang or crash"
        except Exception as exc:  # noqa: BLE001  Hypothesis's own errors (Flaky...) are failures too
            return str(exc).splitlines()[0][:300] if str(exc) else type(exc).__name__
        return None

    def _fuzz_one(self, env, rerun: int) -> SizeResult:
        """One attempt: Hypothesis stops at its first failure and shrinks it."""
        examples: list[SizeResult] = []
        counter = itertools.count()

        def check(dims):
            result, = self.grader.check_fuzzed(env, dims, self.node.nodeid, next(counter), rerun)
            examples.append(result)
            if _fatal(result):
                raise _FatalFailure()
            assert result.status == "correct", _summary(result)

        return self._fuzz_summary(examples, rerun, self._hypothesis(env, rerun, check))

    def _fuzz_batch(self, env, rerun: int) -> list[SizeResult]:
        """Every attempt at every drawn size, on the same inputs and reference; an attempt
        leaves at its first failure, unshrunk. Hypothesis sees no failure, so it draws for
        every attempt the sizes that attempt's own grade would have drawn up to that failure:
        the verdicts are the separate grades'."""
        attempts = self.attempts
        examples: dict[int, list[SizeResult]] = {i: [] for i in attempts}
        counter = itertools.count()

        def check(dims):
            live = [i for i in attempts if all(r.status == "correct" for r in examples[i])]
            if live:
                for i, result in zip(live, self.grader.check_fuzzed(env, dims, self.node.nodeid, next(counter),
                                                                    rerun, live)):
                    examples[i].append(result)

        stopped = self._hypothesis(env, rerun, check)
        return [self._fuzz_summary(examples[i], rerun, stopped) for i in attempts]

    def _fuzz_summary(self, examples, rerun, failure) -> SizeResult:
        failed = [r for r in examples if r.status != "correct"]
        last = failed[-1] if failed else None  # Hypothesis replays the shrunk example last
        summary = SizeResult("fuzz", "fuzz", rerun, last.dims if last else None,
                             env=examples[0].env if examples else None,
                             isolation=examples[0].isolation if examples else None,
                             # The fewest any example's sandbox removed: the JSON's
                             # removed_fatbins is the minimum over sizes.
                             removed_fatbins=min((r.removed_fatbins or 0 for r in examples), default=None),
                             device=self.grader.device.torch_name)
        summary.calls = sum(r.calls for r in examples)
        for r in examples:
            for name, ms in r.phases.items():
                summary.phases[name] = summary.phases.get(name, 0.0) + ms
        # The row's error is the reported example's when one failed, so that the table and its
        # flag name the same figure; else the worst over the examples.
        for r in [last] if last is not None and last.error is not None else examples:
            if r.error is not None:
                summary.note_error(r.error, r.tolerance)
        for r in failed:
            for f in r.flags:
                # The reported example's size leads its details, except where the failure has
                # nothing to do with the size (a file that does not load fails at every size).
                sized = r is last and f["code"] not in SIZE_FREE_CODES
                summary.flag(f["code"], f"{r.dims}: {f['detail']}" if sized else f["detail"])
        if failure and not failed:
            summary.flag("fuzz_failed", failure)
        summary.status = reward.worst([r.status for r in examples] + [summary.status])
        return summary


SIZE_FREE_CODES = ("load_failed",)


def _fatal(result: SizeResult) -> bool:
    """A hang or crash: the next example would only cost another time limit."""
    return result.status in ("timeout", "error") and any(
        f["code"] in ("timeout", "load_failed", "crashed", "process_exit", "over_limit") for f in result.flags)


class EnvironmentSuite:
    """Subclass with ``environment = <Environment>``; see the module docstring."""

    environment = None

    @pytest.mark.nodus_graded
    def test_size(self, nodus_size, nodus_rerun, nodus_grade):
        nodus_grade.grade_size(self.environment, nodus_size, nodus_rerun)

    @pytest.mark.nodus_graded
    def test_fuzzed_sizes(self, nodus_rerun, nodus_grade):
        nodus_grade.fuzz_sizes(self.environment, nodus_rerun)
