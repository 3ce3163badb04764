"""A single-file module an environment keeps out cannot be imported through its bytecode in site-packages' ``__pycache__`` either: Python loads it after only a look at the source's size and time, which Landlock allows."""

from __future__ import annotations

import importlib.util
import os
import py_compile
import site
import textwrap
import uuid
from pathlib import Path

import pytest

from pytest_nodus.grader import bytecode
from pytest_nodus.sandbox import landlock


@pytest.mark.skipif(landlock.abi_version() == 0, reason="this kernel has no Landlock")
def test_kept_out_module_with_bytecode_beside_it_stays_out(tmp_path, monkeypatch):
    from pytest_nodus.grader.sandbox_process import Sandbox

    name = f"nodus_fake_attention_{uuid.uuid4().hex[:8]}_interface"
    where = Path(site.getsitepackages()[0])
    if not os.access(where, os.W_OK):
        pytest.skip(f"{where} is not writable here")
    source = where / f"{name}.py"
    source.write_text("VALUE = 9\n")
    beside = importlib.util.cache_from_source(str(source))
    py_compile.compile(str(source), cfile=beside, invalidation_mode=py_compile.PycInvalidationMode.TIMESTAMP)
    monkeypatch.setattr(bytecode, "offered", lambda: None)  # Python looks beside the source
    kernel = tmp_path / "kernel.py"
    kernel.write_text(textwrap.dedent(f"""
        import importlib
        try:
            print("module imported", importlib.import_module({name!r}).VALUE)
        except (ImportError, OSError) as exc:
            print("module denied", type(exc).__name__)
        def kernel(x):
            return x
    """))
    logs = {}
    try:
        for label, packages in (("kept_out", (name,)), ("control", ())):
            sandbox = Sandbox(kernel, "submission", "cpu", unreadable_packages=packages)
            try:
                sandbox.start(1 << 20)
                logs[label] = (sandbox.scratch / "sandbox.log").read_text()
            finally:
                sandbox.close()
    finally:
        source.unlink()
        os.unlink(beside)
    assert "module denied" in logs["kept_out"], logs["kept_out"]
    assert "module imported 9" in logs["control"], logs["control"]
