"""The grader's bytecode cache holds the libraries a grade imports and its own package, never a file of the checkout a sandbox may not read (the suites, the experts, the hidden sizes)."""

from __future__ import annotations

import json
import sysconfig
from pathlib import Path

import torch
from conftest import REPO

from pytest_nodus.grader import bytecode, bytecode_files


def test_the_libraries_the_stdlib_and_the_grader_are_in_and_the_checkout_is_out():
    sources = bytecode_files.sources(bytecode.GRADE_EXTRAS, imported=("torch",))
    stdlib = Path(sysconfig.get_paths()["stdlib"]).resolve()
    assert str(Path(torch.__file__).resolve()) in sources
    assert str(stdlib / "json" / "__init__.py") in sources
    assert str(REPO / "pytest_nodus" / "sandbox" / "__main__.py") in sources
    outside = [s for s in sources if s.startswith(str(REPO) + "/") and not s.startswith(str(REPO / "pytest_nodus") + "/")]
    assert outside == []
    assert not any(s.startswith(str(stdlib / "test") + "/") for s in sources)


def test_pytest_nodus_dependencies_are_followed_through_their_own():
    names = {d.metadata["Name"].lower() for d in bytecode_files.distributions(bytecode.GRADE_EXTRAS)}
    assert {"torch", "triton", "numpy", "pytest", "hypothesis"} <= names
    # torch's own requirement, which torch.compile imports in the expert's sandbox
    assert "sympy" in names


def test_what_an_import_brings_in_undeclared_is_in_too():
    import importlib.metadata
    import sys

    names = {d.metadata["Name"] for d in bytecode_files.distributions((), imported=("torch",))}
    owners = importlib.metadata.packages_distributions()
    brought = {d for top in {m.split(".")[0] for m in list(sys.modules)} for d in owners.get(top, ())}
    assert brought and brought <= names


def test_a_requirement_of_an_extra_not_asked_for_is_left_out():
    lines = ["numpy>=1.26", "ray>=2.9; extra == 'ray'", "nvidia-cudnn-frontend>=1.30 ; extra == \"gpu\"",
             "colorama ; sys_platform == 'win32'"]
    assert bytecode_files._requirements(lines, ("gpu",)) == ["numpy", "nvidia-cudnn-frontend", "colorama"]


def test_the_marker_names_what_the_cache_was_filled_for(tmp_path):
    assert not bytecode.complete(tmp_path)
    (tmp_path / bytecode.MARKER).write_text(json.dumps({"key": "an older installation"}))
    assert not bytecode.complete(tmp_path)
    (tmp_path / bytecode.MARKER).write_text(json.dumps({"key": bytecode.key()}))
    assert bytecode.complete(tmp_path)
