"""The red-team corpus: every cheat scores exactly the floor, with the status and flag
that name what it did. Runs on the CPU (Triton interpreter) in CI; tools/gpu_check.sh
runs the same files on the H200 together with the GPU-only ones."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from conftest import CHEATS, REPO
from pytest_nodus.reward import FLOOR

# cheat file -> (status, flag codes of which at least one must be raised)
RMSNORM = {
    "cache_by_pointer": ("wrong", {"wrong_values"}),
    "cache_by_shape": ("wrong", {"wrong_values"}),
    "cache_by_sampled_content": ("wrong", {"wrong_values"}),
    "honest_first_calls": ("wrong", {"non_finite_output", "wrong_values"}),
    "fp8_round_trip": ("wrong", {"wrong_values"}),
    "half_rows": ("wrong", {"non_finite_output", "wrong_values"}),
    "empty_unwritten": ("wrong", {"non_finite_output", "wrong_values"}),
    "pow2_only": ("wrong", {"wrong_values"}),
    "mutate_input": ("flagged", {"input_mutated"}),
    "return_input": ("flagged", {"output_aliases_input"}),
    "return_input_view": ("flagged", {"output_aliases_input"}),
    "tensor_subclass": ("flagged", {"tensor_subclass"}),
    "patch_timer": ("flagged", {"grader_tampering"}),
    "sys_exit": ("error", {"raised"}),
    "os_exit": ("error", {"process_exit"}),
    "pytest_skip": ("error", {"raised"}),
    "infinite_loop": ("timeout", {"timeout"}),
    "read_sealed": ("flagged", {"sandbox_escape"}),
    "import_expert": ("flagged", {"sandbox_escape"}),
    "background_thread": ("flagged", {"background_thread", "output_changed_after_return"}),
    "forge_report": ("flagged", {"sandbox_escape"}),
    "lazy_proxy": ("wrong", {"wrong_output"}),
    "batch_and_skip": ("wrong", {"wrong_values"}),
    "untimed_prepare": ("wrong", {"wrong_values"}),
    "input_distribution_dispatch": ("wrong", {"wrong_values"}),
    "patch_harness_globals": ("flagged", {"grader_tampering"}),
    "kill_grader": ("flagged", {"sandbox_escape"}),
    # Its fp8 cast of the input overflows to NaN where a row is scaled past 448 (e4m3's
    # largest): a draw with such a row gives non-finite outputs, the others wrong values
    # (on the H200, run 29 flagged both, run 34 non_finite_output only).
    "flip_global_precision": ("wrong", {"wrong_values", "non_finite_output"}),
    # Leak canaries: honest only if they find a secret (test_leak_canaries_see_a_planted_secret).
    "seed_from_environment": ("wrong", {"wrong_values"}),
    "sizes_from_sys_modules": ("wrong", {"wrong_values"}),
    "seed_from_gc": ("wrong", {"wrong_values"}),
    "sizes_from_stack": ("wrong", {"wrong_values"}),
    # Rewrites the sandbox's reports from inside it; held to the grader's own clock.
    "forge_constant_time": ("flagged", {"forged_time"}),
    "forge_reported_time": ("flagged", {"forged_time"}),
    # Moves the work into a forked worker: on the CPU clock (the sandbox's children are
    # counted), and flagged, since a correct kernel runs no process during a call.
    "forked_worker": ("flagged", {"background_process"}),
    # Leaves the sandbox's process tree; the grader, its child subreaper, finds and kills it.
    "detached_daemon": ("flagged", {"sandbox_escape"}),
    # A process per call that has ended by the time anything is read: the children the
    # sandbox reaped count on its clock; one that detached and ended is found among the
    # grader's adopted children (or, still dying, as a stray). Both graded correct (-2.4,
    # -2.7 on the CPU) before.
    "spawned_per_call": ("flagged", {"background_process"}),
    "orphaned_per_call": ("flagged", {"background_process", "sandbox_escape"}),
}
# Only meaningful on a GPU (graded by tools/gpu_check.sh cheats on the H200); expected there:
GPU_ONLY = {
    "side_stream": ("flagged", {"pending_work"}),
    "event_fake_join": ("flagged", {"pending_work"}),
    "cuda_graph_stale_pointers": ("wrong", {"wrong_values"}),
    "gpu_hang": ("timeout", {"timeout"}),
    # On the CPU there is no copy left to skip either: graded as the kernel it runs, its
    # claim overruled by the clock (CPU slack is too wide to flag a lie this small).
    "skip_output_copy": ("flagged", {"forged_time"}),
}

# Known holes: cheats that still score above the floor. Each test is a strict xfail, so it
# fails the day the hole is closed (remove the marker then) and CI stays honest meanwhile.
KNOWN_HOLES = {
    # The kernel audit runs in the submission's process (the profiler sees only the process it
    # runs in), so the audit the sandbox reports can be rewritten from inside it. Needs a
    # vantage point outside that process (docs/h200/NOTES.md, Open).
    "rmsnorm_audit/strip_audit": ("flagged", {"forbidden_op"}),
}

ATTENTION = {
    "ignores_window": ("wrong", {"wrong_values"}),
    "ignores_documents": ("wrong", {"wrong_values"}),
    "ignores_gqa_grouping": ("wrong", {"wrong_values"}),
    "fp8_internally": ("wrong", {"wrong_values"}),
    "skips_last_document": ("wrong", {"wrong_values"}),
    "correct_only_at_d128": ("wrong", {"wrong_values"}),  # the CPU sizes have no 128-wide heads
    "sdpa_dense_case": ("flagged", {"forbidden_op"}),
    "zero_gradients": ("wrong", {"wrong_values"}),
    "decoy_triton_kernel": ("flagged", {"forbidden_op"}),  # on the H200: crashed, SIGABRT (run 27)
}
# Need the GPU; graded by tools/gpu_check.sh on the H200, with the verdict seen there.
ATTENTION_GPU_ONLY = {
    # cuDNN's libraries are unreadable to a submission's sandbox (Environment.
    # unreadable_libraries): both die in cuDNN's loader, fallback or not (runs 21, 28).
    # Without the GPU, cudnn_behind_fallback's fallback is an honest kernel.
    "cudnn_behind_fallback": ("error", {"crashed"}),
    "cudnn_audit_stripped": ("error", {"crashed"}),
    # torch's own attention kernels (libtorch_cuda) are removed from the submission's process
    # (Environment.removed_kernels): the flash launch raises "device kernel image is
    # invalid", the memory-efficient one aborts the sandbox (runs 26-28). Before, in run 21,
    # flash_audit_stripped was graded correct at 0.787x cuDNN, reward -0.35.
    "flash_audit_stripped": ("error", {"raised"}),
    "mem_efficient_audit_stripped": ("error", {"crashed"}),
    # Discards the pages that held the kernels, hoping the file refills them: they were
    # replaced by anonymous memory, which refills with zeros (run 28; tests/test_fatbin.py).
    "flash_pages_restored": ("error", {"raised"}),
    # FlexAttention's templates are stubs in the submission's inductor and their files are
    # unreadable (pytest_nodus.templates): inductor fails to lower the kernel (run 28).
    "flex_audit_stripped": ("error", {"raised"}),
}


def test_corpus_is_complete():
    on_disk = {p.stem for p in (CHEATS / "rmsnorm").glob("*.py")}
    assert on_disk == set(RMSNORM) | set(GPU_ONLY)
    assert {p.stem for p in (CHEATS / "attention_backward").glob("*.py")} == set(ATTENTION) | set(ATTENTION_GPU_ONLY)


def test_every_cheat_says_what_it_tries():
    """The corpus is read by people: each file opens with a "Cheat: ..." statement."""
    for path in CHEATS.glob("*/*.py"):
        first = path.read_text().splitlines()[0]
        assert first.startswith('"""Cheat: ') and len(first) > 20, path


@pytest.mark.parametrize("cheat", sorted(RMSNORM))
def test_rmsnorm_cheat_scores_the_floor(grade, xdist, cheat):
    status, codes = RMSNORM[cheat]
    result = grade(CHEATS / "rmsnorm" / f"{cheat}.py", "--nodus-call-timeout=3", xdist=xdist, sealed=True)
    assert result.document is not None, result.text
    assert result.document["reward"] == FLOOR
    assert result.document["status"] == status, result.document["flags"]
    assert result.codes & codes, result.document["flags"]
    assert result.outcome.ret != 0
    assert "reward 9.0000" not in result.text  # nothing the sandbox prints reaches the report


def _leaked_sandbox_processes() -> set[int]:
    """Processes running the sandbox's command line whose scratch directory is gone: their
    sandbox was closed (it kills its process group before it removes the directory), so they
    leaked. Other tests' live sandboxes (under xdist) still have theirs."""
    found = set()
    for entry in os.listdir("/proc"):
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as cmdline:
                argv = cmdline.read().split(b"\0")
        except (OSError, ValueError):
            continue
        if b"pytest_nodus.sandbox" in argv and b"--scratch" in argv:
            scratch = argv[argv.index(b"--scratch") + 1].decode()
            if not os.path.isdir(scratch):
                found.add(int(entry))
    return found


def test_processes_a_submission_starts_die_with_its_sandbox(grade):
    """forked_worker leaves a worker process blocked on a pipe it holds both ends of: the
    grader kills the sandbox's whole process group when it closes the sandbox."""
    before = _leaked_sandbox_processes()
    result = grade(CHEATS / "rmsnorm" / "forked_worker.py", "-k", "public-0")
    assert result.document is not None, result.text
    assert "background_process" in result.codes
    leftover = _leaked_sandbox_processes() - before
    assert not leftover, f"processes started by the submission outlived the grade: {sorted(leftover)}"


@pytest.mark.xfail(strict=True, raises=AssertionError,
                   reason="open hole: the kernel audit the sandbox reports can be rewritten from inside it")
@pytest.mark.parametrize("cheat", sorted(KNOWN_HOLES))
def test_known_hole_scores_the_floor(grade, cheat):
    status, codes = KNOWN_HOLES[cheat]
    suite = CHEATS.parent / "envs" / "rmsnorm_audit" / "suite_rmsnorm_audit.py"
    result = grade(CHEATS / f"{cheat}.py", suite=suite)
    if result.document is None:  # pytest.fail, not assert: a broken grade must not pass as the known xfail
        pytest.fail(f"no grade: {result.text[-2000:]}")
    assert result.document["reward"] == FLOOR, (result.document["status"], result.document["reward"])
    assert result.document["status"] == status and result.codes & codes


@pytest.mark.parametrize("cheat", sorted(ATTENTION))
def test_attention_cheat_scores_the_floor(grade, xdist, cheat):
    status, codes = ATTENTION[cheat]
    result = grade(CHEATS / "attention_backward" / f"{cheat}.py", env="attention_backward", xdist=xdist, sealed=True)
    assert result.document is not None, result.text
    assert result.document["reward"] == FLOOR
    assert result.document["status"] == status, result.document["flags"]
    assert result.codes & codes, result.document["flags"]


def test_forbidden_op_is_found_at_run_time_however_reached(grade, xdist):
    suite = CHEATS.parent / "envs" / "rmsnorm_audit" / "suite_rmsnorm_audit.py"
    result = grade(CHEATS / "rmsnorm_audit" / "torch_rms_norm_fallback.py", suite=suite, xdist=xdist)
    assert result.document["reward"] == FLOOR
    assert result.document["status"] == "flagged"
    assert "forbidden_op" in result.codes, result.document["flags"]
    assert result.document["env"]["name"] == "rmsnorm_audit"


def test_audit_passes_a_correct_kernel(grade):
    suite = CHEATS.parent / "envs" / "rmsnorm_audit" / "suite_rmsnorm_audit.py"
    result = grade(CHEATS.parent / "correct" / "rmsnorm" / "torch_ops.py", suite=suite)
    assert result.document["status"] == "correct", result.document["flags"]
    assert any(s["kernels"] is None for s in result.document["sizes"])  # CPU: ops only, no device kernels


def test_trusted_grade_waives_forbidden_kernels_and_nothing_else(grade):
    """--nodus-trusted (calibration: the expert graded against itself) records forbidden
    kernels instead of scoring them, says so in the JSON and the report, and still floors
    every other cheat."""
    suite = CHEATS.parent / "envs" / "rmsnorm_audit" / "suite_rmsnorm_audit.py"
    trusted = grade(CHEATS / "rmsnorm_audit" / "torch_rms_norm_fallback.py", "--nodus-trusted", suite=suite)
    assert trusted.document["trusted"] is True
    assert trusted.document["status"] == "correct", trusted.document["flags"]
    assert trusted.document["reward"] > FLOOR
    waived = [w for s in trusted.document["sizes"] for w in (s["waived_flags"] or [])]
    assert waived and {w["code"] for w in waived} == {"forbidden_op"}
    assert "TRUSTED" in trusted.text and "waived (trusted) forbidden_op" in trusted.text
    mutating = grade(CHEATS / "rmsnorm" / "mutate_input.py", "--nodus-trusted", sealed=True)
    assert mutating.document["reward"] == FLOOR and "input_mutated" in mutating.codes


# What each leak canary looks for, planted in the function that calls it.
CANARY_PLANTS = {
    "seed_from_environment": "os.environ['NODUS_GRADE_SEED'] = '7'",
    "sizes_from_sys_modules": "sys.modules['leaky_grader'] = _module()",
    "seed_from_gc": "obj = types.SimpleNamespace(grade_seed=7)",
    "sizes_from_stack": "hidden_sizes = [{'M': 4, 'N': 64}]",
}
CANARY_DRIVER = """
import importlib.util, os, sys, types, torch
def _module():
    m = types.ModuleType('leaky_grader'); m.planned_dims = [{'M': 4}]; return m
spec = importlib.util.spec_from_file_location('canary', sys.argv[1])
canary = importlib.util.module_from_spec(spec); spec.loader.exec_module(canary)
x = torch.randn(4, 64).to(torch.bfloat16); w = torch.randn(64).to(torch.bfloat16)
def call():
    PLANT
    return canary.kernel(x, w, 1e-6)
out = call().float()
xf = x.float()
honest = (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-6) * w.float()).to(torch.bfloat16).float()
print('honest' if torch.allclose(out, honest) else 'guess')
"""


@pytest.mark.parametrize("canary", sorted(CANARY_PLANTS))
def test_leak_canaries_see_a_planted_secret(canary):
    """A canary that could not see a leak would score -24 for nothing: each must compute
    honestly once its secret is planted where it looks, and guess when nothing is there."""
    env = {"PATH": os.environ.get("PATH", ""), "PYTHONPATH": str(REPO)}
    seen = {}
    for planted in (False, True):
        driver = CANARY_DRIVER.replace("PLANT", CANARY_PLANTS[canary] if planted else "pass")
        run = subprocess.run([sys.executable, "-c", driver, str(CHEATS / "rmsnorm" / f"{canary}.py")], env=env,
                             capture_output=True, text=True, timeout=300)
        assert run.returncode == 0, run.stderr[-2000:]
        seen[planted] = run.stdout.strip()
    assert seen == {False: "guess", True: "honest"}
