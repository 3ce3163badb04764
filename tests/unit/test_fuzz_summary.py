"""The fuzz row keeps the fewest fatbins any example's sandbox removed."""

from __future__ import annotations



def test_fuzz_summary_keeps_the_fatbins_its_sandboxes_removed():
    # The JSON's removed_fatbins is the minimum over sizes; a summary that dropped the
    # examples' count read 0 for every grade with fuzzed sizes (H200, run 29).
    from types import SimpleNamespace

    from pytest_nodus.grader.results import SizeResult
    from pytest_nodus.grader.suite import GradeRunner

    def example(removed):
        result = SizeResult("fuzz-0", "fuzz", 0, {"T": 7}, isolation=["process", "landlock-abi7"], removed_fatbins=removed)
        result.status = "correct"
        return result

    runner = SimpleNamespace(grader=SimpleNamespace(device=SimpleNamespace(torch_name="cuda:0")))
    assert GradeRunner._fuzz_summary(runner, [example(119), example(119)], 0, None).removed_fatbins == 119
    assert GradeRunner._fuzz_summary(runner, [example(119), example(0)], 0, None).removed_fatbins == 0

