"""A package kept out cannot be imported from any Python installation; a control can."""

from __future__ import annotations

import pytest
from conftest import kept_out_imports

from pytest_nodus.sandbox import landlock


def test_packages_are_found_in_other_python_installations(tmp_path):
    """An unreadable package (attention_backward's flash_attn, xformers, ...) is looked for in
    every Python installation, as a package directory or a module or extension file."""
    packages = tmp_path / "opt" / "venv" / "lib" / "python3.12" / "site-packages"
    for directory in ("fakeattn", "fakeattn-1.0.dist-info", "fakeattn_extra"):
        (packages / directory).mkdir(parents=True)
    (packages / "fakeattn_cuda.cpython-312-x86_64-linux-gnu.so").write_bytes(b"")
    (packages / "fakeattn_interface.py").write_text("")
    found = landlock.find_packages(("fakeattn", "fakeattn_cuda", "fakeattn_interface", "not_installed"),
                                   bases=(str(tmp_path / "opt" / "*" / "lib"),))
    assert found == sorted(str(packages / n) for n in ("fakeattn", "fakeattn_cuda.cpython-312-x86_64-linux-gnu.so",
                                                      "fakeattn_interface.py"))


@pytest.mark.skipif(landlock.abi_version() == 0, reason="this kernel has no Landlock")
def test_unreadable_packages_cannot_be_imported_and_the_control_can(tmp_path, site_packages):
    """A package the environment keeps out, installed where the sandbox may read (this
    Python's site-packages), cannot be imported by a submission, module or package, and
    the same sandbox without the rule imports both."""
    import uuid

    where, made = site_packages
    name = f"nodus_fake_attention_{uuid.uuid4().hex[:8]}"
    made += [where / name, where / f"{name}_cuda.py"]
    (where / name).mkdir()
    (where / name / "__init__.py").write_text("VALUE = 7\n")
    (where / f"{name}_cuda.py").write_text("VALUE = 8\n")
    logs = kept_out_imports(tmp_path, {"package": name, "module": f"{name}_cuda"}, (name, f"{name}_cuda"))
    assert "denied" in logs["kept_out"] and "imported" not in logs["kept_out"], logs["kept_out"]
    assert "imported 7" in logs["control"] and "imported 8" in logs["control"], logs["control"]
