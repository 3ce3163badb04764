"""Correct kernels pass, through the real plugin, with the report and JSON users rely on."""

from __future__ import annotations

import json
import math
import statistics
import subprocess
import sys

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import CORRECT, REPO
from pytest_nodus.report import SCHEMA_PATH

SOLUTION = REPO / "expert" / "rmsnorm" / "solution.py"
STARTING = REPO / "env_suites" / "rmsnorm" / "starting_kernel.py"
SCHEMA = json.loads(SCHEMA_PATH.read_text())


@pytest.mark.parametrize("submission", [SOLUTION, STARTING], ids=["solution", "starting_kernel"])
def test_correct_kernels_pass_three_sealed_reruns(grade, xdist, submission):
    result = grade(submission, "--nodus-reruns=3", xdist=xdist, sealed=True)
    document = result.document
    jsonschema.validate(document, SCHEMA)
    assert result.outcome.ret == 0, result.text
    assert document["status"] == "correct", document["flags"]
    assert document["reruns"]["statuses"] == ["correct"] * 3
    assert math.isfinite(document["reward"]) and document["reward"] > -24
    assert document["sealed"] is True and document["seed"] is None
    kinds = {s["kind"] for s in document["sizes"]}
    assert kinds == {"public", "hidden", "fuzz"}
    assert len([s for s in document["sizes"] if s["kind"] == "fuzz"]) == 3
    assert document["trusted"] is False
    assert {s["device"] for s in document["sizes"]} == {"cpu"}  # xdist workers say which device graded
    assert document["removed_fatbins"] == 0  # rmsnorm removes nothing, and the CPU has no fatbins


def test_hidden_sizes_stay_hidden(grade):
    result = grade(SOLUTION, sealed=True)
    hidden = [s for s in result.document["sizes"] if s["kind"] == "hidden"]
    assert hidden and all(s["dims"] is None and s["id"].startswith("hidden-") for s in hidden)
    sealed = json.loads((REPO / "sealed_fixtures" / "rmsnorm.json").read_text())["hidden_sizes"]["cpu"]
    for dims in sealed:
        label = "x".join(f"{k}{v}" for k, v in dims.items())
        assert label not in result.text


def test_each_timed_call_is_in_the_json_and_the_medians_come_from_them(grade):
    document = grade(SOLUTION, "-k", "public or fuzz").document
    jsonschema.validate(document, SCHEMA)
    timed = [s for s in document["sizes"] if s["kind"] == "public"]
    assert timed and all(s["timed_calls"] is None for s in document["sizes"] if s["kind"] == "fuzz")
    for size in timed:
        calls = size["timed_calls"]
        assert set(calls) == {"expert", "submission"}
        assert len(calls["expert"]) == len(calls["submission"]) == size["calls"] - 1  # the CPU plan: one warm-up
        # On the CPU both claims are the main thread's CPU time: the medians are theirs.
        assert all(c["t_stream_ms"] == c["t_call_ms"] and c["window_ms"] is not None for c in calls["submission"])
        assert size["t_submission_claimed_ms"] == statistics.median(c["t_stream_ms"] for c in calls["submission"])
        assert size["t_expert_ms"] == statistics.median(c["t_stream_ms"] for c in calls["expert"])


def test_a_grade_counted_again_from_its_json_gives_its_rewards(grade, tmp_path):
    """tools/recount.py reads timing-rule changes against recorded GPU grades; that is only
    worth anything if counting a grade's recorded calls again reproduces the grade."""
    document = grade(SOLUTION, "-k", "public", "--nodus-reruns=2").document
    path = tmp_path / "grade.json"
    path.write_text(json.dumps(document))
    out = subprocess.run([sys.executable, str(REPO / "tools" / "recount.py"), str(path)],
                         capture_output=True, text=True, check=True).stdout
    recorded, counted = out.splitlines()[0].split("rewards ")[1].split("  (")[0].split(" -> ")
    assert recorded.split() == [f"{r:.3f}" for r in document["reruns"]["rewards"]]
    assert counted == recorded, out
    assert len(out.splitlines()) == 1, out  # no size moved


def test_report_prints_table_and_reward(grade):
    result = grade(SOLUTION)
    result.outcome.stdout.fnmatch_lines([
        "*pytest-nodus grade*",
        "environment rmsnorm v1 | submission *solution.py (sha256 *) | cpu (*times are CPU times) | local check*",
        "size*kind*status*error/tolerance*t_sub ms*t_exp ms*speedup*GB/s",
        "public-0:M64xN256*public*correct*",
        "fuzz (8 calls)*fuzz*correct*",
        "reward -* (status correct, speedup *",
    ])
    assert "seed" in result.text and "--nodus-seed=" in result.text


def test_local_seed_reproduces_the_inputs(grade):
    # Same seed, same inputs: the worst error over every call repeats to the last bit.
    first = grade(SOLUTION, "--nodus-seed=1234", "-k", "public")
    second = grade(SOLUTION, "--nodus-seed=1234", "-k", "public")
    other = grade(SOLUTION, "--nodus-seed=99", "-k", "public")
    errors = [[s["error"] for s in g.document["sizes"]] for g in (first, second, other)]
    assert first.document["seed"] == 1234
    assert errors[0] == errors[1]
    assert errors[0] != errors[2]


def test_wrong_kernel_is_shrunk_to_a_small_failing_size(grade):
    result = grade(REPO / "tests" / "cheats" / "rmsnorm" / "fp8_round_trip.py")
    fuzz = next(s for s in result.document["sizes"] if s["kind"] == "fuzz")
    assert fuzz["status"] == "wrong"
    assert fuzz["dims"]["M"] * fuzz["dims"]["N"] <= 64, fuzz["dims"]  # shrunk from up to 32768 elements
    assert "smallest_failing_size" in {f["code"] for f in result.document["flags"]}


def test_false_positive_set_is_large_enough():
    assert len(list((CORRECT / "rmsnorm").glob("*.py"))) >= 10


@pytest.mark.parametrize("kernel", sorted(p.stem for p in (CORRECT / "rmsnorm").glob("*.py")))
def test_correct_kernel_styles_pass_three_sealed_reruns(grade, kernel):
    result = grade(CORRECT / "rmsnorm" / f"{kernel}.py", "--nodus-reruns=3", sealed=True)
    assert result.document["reruns"]["statuses"] == ["correct"] * 3, result.document["flags"]


def _worker_killer(pytester, nodeid_part: str) -> None:
    """A plugin, ``-p worker_killer``, that kills the xdist worker running the test whose
    node id contains ``nodeid_part``."""
    pytester.makepyfile(worker_killer=f"""
        import os

        def pytest_runtest_call(item):
            if {nodeid_part!r} in item.nodeid and os.environ.get("PYTEST_XDIST_WORKER"):
                os._exit(1)
    """)
    pytester.syspathinsert()


def test_a_worker_that_dies_counts_as_a_failed_size(grade, pytester):
    # The worker running public-1 dies: that size must fail the grade.
    _worker_killer(pytester, "public-1")
    result = grade(SOLUTION, "-p", "worker_killer", xdist=2)
    assert result.document["status"] == "error" and result.document["reward"] == -24
    died = [f for f in result.document["flags"] if f["code"] == "no_result"]
    assert [f["size"] for f in died] == ["public-1:M33xN1000"], result.document["flags"]


def test_a_size_lost_in_a_later_rerun_counts_against_that_rerun(grade, pytester):
    # Run 32: sizes of rerun 2 that produced no result were filed under rerun 0 with their
    # "r2-" prefix, so rerun 2 read correct over the sizes it had left.
    _worker_killer(pytester, "[r1-public-1")
    result = grade(SOLUTION, "-p", "worker_killer", "--nodus-reruns=2", "-k", "public", xdist=2)
    died = [(f["size"], f["rerun"]) for f in result.document["flags"] if f["code"] == "no_result"]
    assert died == [("public-1:M33xN1000", 1)], result.document["flags"]
    assert result.document["reruns"]["statuses"] == ["correct", "error"]


@pytest.mark.parametrize("graded_test, expected", [
    ("env_suites/e/test_e.py::T::test_size[public-1:M33xN1000]", ("public-1:M33xN1000", 0)),
    ("env_suites/e/test_e.py::T::test_size[r2-hidden-0]", ("hidden-0", 2)),
    ("env_suites/e/test_e.py::T::test_size[r12-public-0:T16384xHq16xW-1]", ("public-0:T16384xHq16xW-1", 12)),
    ("env_suites/e/test_e.py::T::test_fuzzed_sizes", ("fuzz", 0)),
    ("env_suites/e/test_e.py::T::test_fuzzed_sizes[r3]", ("fuzz", 3)),
], ids=["public", "hidden-rerun", "public-rerun", "fuzz", "fuzz-rerun"])  # ids with "::test_size[" would be graded
def test_graded_test_ids_name_their_size_and_rerun(graded_test, expected):
    from pytest_nodus.plugin import _graded_test

    assert _graded_test(graded_test) == expected


def test_the_graders_own_out_of_memory_is_named(grade, pytester):
    # The grader's allocation of fresh inputs fails at public-1 (as it did on a shared H200 in
    # run 32): that size is at the floor under its own code, the others are graded as usual.
    pytester.makepyfile(inputs_oom="""
        import torch
        from pytest_nodus import inputs

        real = inputs.make_inputs

        def make_inputs(env, dims, seed, device):
            if dict(dims) == {"M": 33, "N": 1000}:
                raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 1024.00 MiB.")
            return real(env, dims, seed, device)

        inputs.make_inputs = make_inputs
    """)
    pytester.syspathinsert()
    result = grade(SOLUTION, "-p", "inputs_oom", "-k", "public")
    document = result.document
    assert document["status"] == "error" and document["reward"] == -24
    assert [(f["size"], f["code"]) for f in document["flags"]] == [("public-1:M33xN1000", "grader_out_of_memory")]
    assert {s["id"]: s["status"] for s in document["sizes"]} == {"public-0:M64xN256": "correct",
                                                                "public-1:M33xN1000": "error"}


@pytest.mark.parametrize("timed_calls_with_a_child", [1, 2])
def test_a_child_process_in_one_timed_call_is_a_compiler_in_two_a_flag(grade, pytester, timed_calls_with_a_child):
    # Runs 33-34: torch.compile ran a child (50-80 ms) in one timed call at one to three sizes of a
    # correct kernel's first rerun. This kernel starts one in the first timed call at each
    # size (CPU plan: one warm-up call, three timed), or in the first two.
    kernel = pytester.makepyfile(child_kernel=f"""
        import subprocess
        import sys

        import torch

        _calls = {{}}
        _BURN = "import time\\nt = time.process_time()\\nwhile time.process_time() - t < 0.03: pass"

        def kernel(x, weight, eps):
            n = _calls[tuple(x.shape)] = _calls.get(tuple(x.shape), 0) + 1
            if 2 <= n < 2 + {timed_calls_with_a_child}:
                subprocess.run([sys.executable, "-c", _BURN], check=True)
            xf = x.float()
            return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * weight.float()).to(torch.bfloat16)
    """)
    document = grade(kernel, "-k", "public").document
    timed = [s for s in document["sizes"] if s["kind"] == "public"]
    assert [s["calls_with_children"] for s in timed] == [timed_calls_with_a_child] * len(timed), document["flags"]
    if timed_calls_with_a_child == 1:
        assert document["status"] == "correct", document["flags"]
    else:
        # (Two of the three CPU timings are the child's: the clock also overrules the claim.)
        assert "background_process" in {f["code"] for f in document["flags"]}, document["flags"]
        assert document["reward"] == -24


def test_a_size_that_waited_too_long_for_the_gpu_is_named(grade, pytester):
    # Another grade holds the GPU past --nodus-gpu-wait at public-1 (the CPU takes no lock,
    # so the lock's refusal is stood in for): that size is at the floor as gpu_busy.
    pytester.makepyfile(busy_gpu="""
        from pytest_nodus import devices

        real = devices.exclusive

        def exclusive(device, wait_s=devices.GPU_WAIT_S):
            if wait_s == 7 and getattr(exclusive, "calls", 0) == 1:
                raise devices.DeviceBusy(f"waited {wait_s:g} s for the GPU, held by pid 4242")
            exclusive.calls = getattr(exclusive, "calls", 0) + 1
            return real(device, wait_s)

        devices.exclusive = exclusive
    """)
    pytester.syspathinsert()
    document = grade(SOLUTION, "-p", "busy_gpu", "--nodus-gpu-wait=7", "-k", "public").document
    assert document["status"] == "error" and document["reward"] == -24
    assert [(f["size"], f["code"], f["detail"]) for f in document["flags"]] == [
        ("public-1:M33xN1000", "gpu_busy", "waited 7 s for the GPU, held by pid 4242")]


def test_a_failing_expert_is_not_blamed_on_the_submission(grade):
    suite = REPO / "tests" / "envs" / "rmsnorm_broken_expert" / "suite_rmsnorm_broken_expert.py"
    result = grade(SOLUTION, "-k", "public-0", suite=suite)
    assert result.document["status"] == "error"
    assert result.codes == {"expert_failed"}, result.document["flags"]


@pytest.mark.parametrize("submission", [REPO / "expert" / "attention_backward" / "solution.py",
                                        REPO / "env_suites" / "attention_backward" / "starting_kernel.py",
                                        CORRECT / "attention_backward" / "torch_dense.py"],
                         ids=["solution", "starting_kernel", "torch_dense"])
def test_attention_correct_kernels_pass(grade, submission):
    result = grade(submission, "--nodus-reruns=2", env="attention_backward", sealed=True)
    assert result.document["reruns"]["statuses"] == ["correct"] * 2, result.document["flags"]


def test_an_environment_without_an_expert_for_the_device_says_so():
    import dataclasses

    from env_suites.attention_backward.environment import ENVIRONMENT as ATTENTION
    from pytest_nodus import devices
    from pytest_nodus.grading import Grader
    from pytest_nodus.isolation import SandboxFailure

    ENVIRONMENT = dataclasses.replace(ATTENTION, expert={"cpu": ATTENTION.expert["cpu"]})  # CPU expert only
    grader = Grader(SOLUTION, devices.Device("cuda", 0, "no GPU needed: fails before any launch", None), grade_seed=1)
    with pytest.raises(SandboxFailure) as failure:
        grader._sandbox(ENVIRONMENT, "expert", ENVIRONMENT.public_sizes[0])
    assert failure.value.code == "expert_failed" and "no expert for cuda" in failure.value.detail


def test_baselines_are_context_never_the_verdict(grade, tmp_path):
    suite = REPO / "tests" / "envs" / "rmsnorm_baselines" / "suite_rmsnorm_baselines.py"
    sealed = json.loads((REPO / "sealed_fixtures" / "rmsnorm.json").read_text())  # rmsnorm's hidden sizes
    (tmp_path / "rmsnorm_baselines.json").write_text(json.dumps({**sealed, "environment": "rmsnorm_baselines"}))
    result = grade(SOLUTION, "--nodus-baselines", "-k", "public-0 or hidden-0", f"--nodus-sealed={tmp_path}",
                   suite=suite)
    assert result.document["status"] == "correct", result.document["flags"]
    (size,) = [s for s in result.document["sizes"] if s["kind"] == "public"]
    (hidden,) = [s for s in result.document["sizes"] if s["kind"] == "hidden"]
    # A baseline that failed is not tried again in the same grade (a hang would cost a time limit per size).
    assert hidden["baseline_notes"]["broken"] == "failed at an earlier size of this grade"
    assert set(hidden["t_baselines_ms"]) == {"eager", "prepared"}
    assert set(size["t_baselines_ms"]) == {"eager", "prepared"}
    assert all(t > 0 for t in size["t_baselines_ms"].values())
    # prepare() ran before the clock: handing over a finished result costs less than computing it.
    assert size["t_baselines_ms"]["prepared"] < size["t_baselines_ms"]["eager"]
    assert size["baseline_errors"]["eager"] < 1.0 and size["baseline_errors"]["prepared"] < 1.0
    assert "this baseline is broken at shape" in size["baseline_notes"]["broken"]
    assert "baseline at public-0" in result.text
    assert size["calls"] == 3  # the environment's own timing_rounds: 1 warm-up + 2 timed
    jsonschema.validate(result.document, SCHEMA)

    # A baseline's message at a hidden size keeps the size hidden, like any flag.
    result = grade(SOLUTION, "--nodus-baselines", "-k", "hidden-1", f"--nodus-sealed={tmp_path}", suite=suite)
    (hidden,) = [s for s in result.document["sizes"] if s["kind"] == "hidden"]
    note = hidden["baseline_notes"]["broken"]
    assert "this baseline is broken at shape" in note
    dims = sealed["hidden_sizes"]["cpu"][1]
    assert not any(str(v) in note for v in dims.values() if v >= 10), note


def test_baselines_are_off_unless_asked_for(grade):
    suite = REPO / "tests" / "envs" / "rmsnorm_baselines" / "suite_rmsnorm_baselines.py"
    result = grade(SOLUTION, "-k", "public-0", suite=suite)
    assert result.document["status"] == "correct"
    assert all(s["t_baselines_ms"] is None and s["baseline_notes"] is None for s in result.document["sizes"])



@given(tokens=st.integers(1, 65536), documents=st.integers(1, 64), data=st.data())
@settings(max_examples=200, deadline=None)
def test_the_cudnn_expert_prebuilds_a_graph_for_every_longest_document(tokens, documents, data):
    """No cuDNN graph may be built inside a timed call: whatever split of T into B documents
    a call draws, a prebuilt capacity must hold its longest document."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("expert_cuda", REPO / "expert" / "attention_backward" / "expert_cuda.py")
    expert = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(expert)
    documents = min(documents, tokens)
    longest = data.draw(st.integers(-(-tokens // documents), tokens - documents + 1))
    capacities = expert.capacities(tokens, documents)
    assert capacities == sorted(capacities) and capacities[-1] >= tokens
    chosen = min(c for c in capacities if c >= longest)
    # ... and not a wastefully large one: at most twice the longest document (or T itself).
    assert chosen < max(2 * longest, 128) or chosen == capacities[-1], (longest, capacities)
    assert len(capacities) <= 12


def test_fuzz_summary_keeps_the_fatbins_its_sandboxes_removed():
    # The JSON's removed_fatbins is the minimum over sizes; a summary that dropped the
    # examples' count read 0 for every grade with fuzzed sizes (H200, run 29).
    from types import SimpleNamespace

    from pytest_nodus.grading import SizeResult
    from pytest_nodus.suite import GradeRunner

    def example(removed):
        result = SizeResult("fuzz-0", "fuzz", 0, {"T": 7}, isolation="landlock-abi7", removed_fatbins=removed)
        result.status = "correct"
        return result

    runner = SimpleNamespace(grader=SimpleNamespace(device=SimpleNamespace(torch_name="cuda:0")))
    assert GradeRunner._fuzz_summary(runner, [example(119), example(119)], 0, None).removed_fatbins == 119
    assert GradeRunner._fuzz_summary(runner, [example(119), example(0)], 0, None).removed_fatbins == 0
