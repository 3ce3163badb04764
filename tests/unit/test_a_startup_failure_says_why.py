"""A sandbox that dies before the kernel file loads ran only the harness's own code: the grade
quotes the end of its output, so a broken machine says why. Once the submission has loaded,
its output could carry what it saw (a hidden size's shapes) into the report: never quoted."""

from pytest_nodus.grader.kernel_errors import STARTUP, exit_detail

TRACEBACK = """Traceback (most recent call last):
  File "pytest_nodus/sandbox/__main__.py", line 96, in main
    arena = open_shared(first["arena"], device)
RuntimeError: CUDA driver error: out of memory
"""


def test_a_startup_exit_quotes_the_last_lines_of_the_sandbox_output():
    detail = exit_detail(1, STARTUP, TRACEBACK)
    assert detail.startswith("the sandbox exited (status 1) during start-up: ")
    assert "RuntimeError: CUDA driver error: out of memory" in detail
    assert "\n" not in detail


def test_an_exit_after_the_kernel_file_loads_quotes_nothing():
    detail = exit_detail(1, "a call", "hidden shape (4096, 2048)\n")
    assert detail == "the sandbox exited (status 1) during a call"


def test_a_silent_startup_exit_says_only_its_status():
    assert exit_detail(1, STARTUP, "  \n") == "the sandbox exited (status 1) during start-up"
