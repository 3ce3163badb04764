"""The rmsnorm solution compiles one binary per launch shape (its ``_config`` and alignment),
whatever a size's row count or width within it: Triton specialises an integer argument on its
divisibility by 16, and a kernel specialised on M or on the width would build again at sizes
that run the same code, each build a first call the grade waits for. Captured as nodus-sm90
does, on meta tensors (pytest_nodus/commands/sm90.py)."""

from __future__ import annotations

from conftest import REPO

from pytest_nodus.commands import sm90
from pytest_nodus.grader.api import installed_environments
from pytest_nodus.grader.environment import load_hidden_sizes


def test_the_rmsnorm_solution_compiles_once_per_launch_shape():
    env = installed_environments()["rmsnorm"].load()
    sizes = [*env.profile("cuda").sizes, *load_hidden_sizes(REPO / "sealed_fixtures", env, "cuda")]
    module = sm90.load_for_the_gpu(REPO / "expert" / "rmsnorm" / "solution.py")
    by_shape: dict[tuple, set] = {}
    for dims in sizes:
        shape = (tuple(sorted(module._config(dims["N"]).items())), module._alignment(dims["N"]))
        binaries = sm90.variants(env, module, dims)
        assert binaries, f"{dims}: no launch captured"
        by_shape.setdefault(shape, binaries)
        assert binaries == by_shape[shape], f"{dims} needs a binary another size of its launch shape does not"
    # The sealed sizes span several row counts and widths per shape, or the test shows nothing.
    assert len(by_shape) < len(sizes)
