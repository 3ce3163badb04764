"""At a fuzzed size a batch calls every attempt on the same inputs and computes the reference
once; an attempt that already hung is not called, and each attempt keeps its own record.

The reference of a large size costs more than the calls; a batch that made it per attempt
would pay for it N times for the same verdicts."""

from __future__ import annotations

import dataclasses

from conftest import FuzzGrader, FuzzSandbox
from pytest_nodus.grader import fuzzed_call
from env_suites.rmsnorm.environment import ENVIRONMENT

DIMS = {"M": 4, "N": 8}


class _Pool:
    def __init__(self):
        self.started = []

    def launch(self, env, role, dims):
        self.started.append(role)

    def get(self, env, role, dims, spent):
        return FuzzSandbox()


class _Grader(FuzzGrader):
    def __init__(self, roles, hung=()):
        super().__init__(roles, hung)
        self.pool, self.calls = _Pool(), []

    def call(self, env, sandbox, dims, fresh, references, result, role, timed):
        assert references is not None and not timed
        self.calls.append((role, fresh, references))
        if role == "submission:1":
            result.flag("wrong_values", "made up for the test")
        return None, references


def _counting_reference():
    made = []

    def reference(inputs):
        made.append(inputs)
        return ENVIRONMENT.reference(inputs)

    return dataclasses.replace(ENVIRONMENT, reference=reference), made


def test_every_attempt_sees_the_same_inputs_and_one_reference():
    env, made = _counting_reference()
    grader = _Grader(["submission:0", "submission:1", "submission:2"])
    results = fuzzed_call.check(grader, env, DIMS, "label", 0, 0, grader.roles)
    assert len(made) == 1
    assert [role for role, _, _ in grader.calls] == grader.roles
    assert all(fresh is made[0] for _, fresh, _ in grader.calls)
    assert len({id(references) for _, _, references in grader.calls}) == 1
    assert [r.status for r in results] == ["correct", "wrong", "correct"]
    # The shared work is in every attempt's record, as its own grade would have it.
    assert all(r.phases["reference"] == results[0].phases["reference"] > 0 for r in results)


def test_an_attempt_that_hung_is_not_called_again():
    env, made = _counting_reference()
    grader = _Grader(["submission:0", "submission:1"], hung=["submission:0"])
    hung, alive = fuzzed_call.check(grader, env, DIMS, "label", 0, 0, grader.roles)
    assert [role for role, _, _ in grader.calls] == ["submission:1"]
    assert grader.pool.started == ["submission:1"]
    assert hung.status == "timeout" and [f["code"] for f in hung.flags] == ["timeout"]
    assert alive.status == "wrong"


def test_one_attempts_inputs_are_those_of_its_own_grade():
    env, made = _counting_reference()
    alone = _Grader(["submission"])
    fuzzed_call.check(alone, env, DIMS, "label", 3, 0, alone.roles)
    batch = _Grader(["submission:0", "submission:1"])
    fuzzed_call.check(batch, env, DIMS, "label", 9, 0, batch.roles)  # another example number, same size
    assert all(a.equal(b) for a, b in zip(made[0].values(), made[1].values()) if hasattr(a, "equal"))
