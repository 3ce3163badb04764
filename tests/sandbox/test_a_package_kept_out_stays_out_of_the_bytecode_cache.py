"""A package an environment keeps out cannot be imported through the grader's bytecode cache either: Python loads a cached module after only a look at its source's size and time, which Landlock allows, so the cache's copy is kept out with the source."""

from __future__ import annotations

import os
import shutil
import site
import textwrap
import uuid
from pathlib import Path

import pytest

from pytest_nodus.grader import bytecode, bytecode_files
from pytest_nodus.sandbox import landlock


@pytest.mark.skipif(landlock.abi_version() == 0, reason="this kernel has no Landlock: the cache is never offered")
def test_kept_out_package_and_module_stay_out_with_their_bytecode_cached(tmp_path, monkeypatch):
    from pytest_nodus.grader.sandbox_process import Sandbox

    name = f"nodus_fake_attention_{uuid.uuid4().hex[:8]}"
    where = Path(site.getsitepackages()[0])
    if not os.access(where, os.W_OK):
        pytest.skip(f"{where} is not writable here")
    (where / name).mkdir()
    (where / name / "__init__.py").write_text("VALUE = 7\n")
    (where / f"{name}_cuda.py").write_text("VALUE = 8\n")
    cache = tmp_path / "cache"
    sources = [str((where / name / "__init__.py").resolve()), str((where / f"{name}_cuda.py").resolve())]
    assert bytecode_files.compile_into(cache, sources, workers=1) == 2
    monkeypatch.setattr(bytecode, "offered", lambda: cache)
    kernel = tmp_path / "kernel.py"
    kernel.write_text(textwrap.dedent(f"""
        import importlib, sys
        print("prefix", sys.pycache_prefix)
        for module in ({name!r}, {name + "_cuda"!r}):
            try:
                print(module[-5:], "imported", importlib.import_module(module).VALUE)
            except (ImportError, OSError) as exc:
                print(module[-5:], "denied", type(exc).__name__)
        def kernel(x):
            return x
    """))
    logs = {}
    try:
        for label, packages in (("kept_out", (name, f"{name}_cuda")), ("control", ())):
            sandbox = Sandbox(kernel, "submission", "cpu", unreadable_packages=packages)
            try:
                sandbox.start(1 << 20)
                logs[label] = (sandbox.scratch / "sandbox.log").read_text()
            finally:
                sandbox.close()
    finally:
        shutil.rmtree(where / name)
        (where / f"{name}_cuda.py").unlink()
    assert f"prefix {cache}" in logs["control"], logs["control"]
    assert "denied" in logs["kept_out"] and "imported" not in logs["kept_out"], logs["kept_out"]
    assert "imported 7" in logs["control"] and "imported 8" in logs["control"], logs["control"]
