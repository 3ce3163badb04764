"""A single-file module an environment keeps out cannot be imported through its bytecode in site-packages' ``__pycache__`` either: Python loads it after only a look at the source's size and time, which Landlock allows."""

from __future__ import annotations

import importlib.util
import py_compile
import uuid
from pathlib import Path

import pytest
from conftest import kept_out_imports

from pytest_nodus.grader import bytecode
from pytest_nodus.sandbox import landlock


@pytest.mark.skipif(landlock.abi_version() == 0, reason="this kernel has no Landlock")
def test_kept_out_module_with_bytecode_beside_it_stays_out(tmp_path, monkeypatch, site_packages):
    where, made = site_packages
    name = f"nodus_fake_attention_{uuid.uuid4().hex[:8]}_interface"
    source = where / f"{name}.py"
    beside = Path(importlib.util.cache_from_source(str(source)))
    made += [source, beside]
    source.write_text("VALUE = 9\n")
    py_compile.compile(str(source), cfile=str(beside), invalidation_mode=py_compile.PycInvalidationMode.TIMESTAMP)
    monkeypatch.setattr(bytecode, "offered", lambda: None)  # Python looks beside the source
    logs = kept_out_imports(tmp_path, {"module": name}, (name,))
    assert "module denied" in logs["kept_out"], logs["kept_out"]
    assert "module imported 9" in logs["control"], logs["control"]
