"""The order of a round's calls rotates, so clock drift and a warm cache favour no role: one
submission alternates with the expert as a single grade always has, and in a batch every
role is called first (and last) equally often."""

from collections import Counter

from pytest_nodus.grader.rounds import call_order


def test_one_submission_alternates_with_the_expert():
    assert [call_order(["submission"], r) for r in range(4)] == [["submission", "expert"], ["expert", "submission"]] * 2


def test_a_batch_rotates_every_role_through_every_place():
    roles = ["submission:0", "submission:1", "submission:2"]
    rounds = [call_order(roles, r) for r in range(8)]
    assert all(sorted(order) == sorted([*roles, "expert"]) for order in rounds)
    for place in range(4):
        assert Counter(order[place] for order in rounds) == Counter({role: 2 for role in [*roles, "expert"]})
