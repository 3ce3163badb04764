"""A package an environment keeps out cannot be imported through the grader's bytecode cache either: Python loads a cached module after only a look at its source's size and time, which Landlock allows, so the cache's copy is kept out with the source."""

from __future__ import annotations

import uuid

import pytest
from conftest import kept_out_imports

from pytest_nodus.grader import bytecode, bytecode_files
from pytest_nodus.sandbox import landlock


@pytest.mark.skipif(landlock.abi_version() == 0, reason="this kernel has no Landlock: the cache is never offered")
def test_kept_out_package_and_module_stay_out_with_their_bytecode_cached(tmp_path, monkeypatch, site_packages):
    where, made = site_packages
    name = f"nodus_fake_attention_{uuid.uuid4().hex[:8]}"
    made += [where / name, where / f"{name}_cuda.py"]
    (where / name).mkdir()
    (where / name / "__init__.py").write_text("VALUE = 7\n")
    (where / f"{name}_cuda.py").write_text("VALUE = 8\n")
    cache = tmp_path / "cache"
    sources = [str((where / name / "__init__.py").resolve()), str((where / f"{name}_cuda.py").resolve())]
    assert bytecode_files.compile_into(cache, sources, workers=1) == 2
    monkeypatch.setattr(bytecode, "offered", lambda: cache)
    logs = kept_out_imports(tmp_path, {"package": name, "module": f"{name}_cuda"}, (name, f"{name}_cuda"))
    assert f"prefix {cache}" in logs["control"], logs["control"]
    assert "denied" in logs["kept_out"] and "imported" not in logs["kept_out"], logs["kept_out"]
    assert "imported 7" in logs["control"] and "imported 8" in logs["control"], logs["control"]
