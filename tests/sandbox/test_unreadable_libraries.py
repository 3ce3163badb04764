"""A library kept out cannot be loaded, wherever it is installed; the rest still imports."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import pytest
from conftest import REPO
from pytest_nodus.sandbox import landlock


@pytest.mark.skipif(landlock.abi_version() == 0, reason="this kernel has no Landlock")
def test_unreadable_library_cannot_be_loaded_and_the_rest_still_imports(tmp_path):
    """An environment's unreadable libraries (here a stand-in that nothing Python imports
    needs: ncurses' form, menu or panel library, or bzip2's) cannot be opened or dlopened;
    the directories carved around them still list and import."""
    probe = textwrap.dedent(f"""
        import ctypes, os, sys, site
        from pytest_nodus.sandbox import landlock
        found = []
        for prefix in ("libform.", "libmenu.", "libpanel.", "libbz2."):
            found = found or landlock.find_libraries([prefix])
        print("found", len(found))
        readable = ["/usr", "/lib", "/lib64", "/etc", "/proc", sys.prefix, sys.base_prefix] + site.getsitepackages()
        landlock.restrict(readable, [{str(tmp_path)!r}], ["/dev/null"], found)
        def attempt(label, action):
            try:
                action(); print(label, "allowed")
            except OSError:
                print(label, "denied")
        attempt("read-library", lambda: open(found[0], "rb").read(4))
        attempt("dlopen-library", lambda: ctypes.CDLL(found[-1]))
        attempt("list-its-directory", lambda: os.listdir(os.path.dirname(found[0])))
        attempt("read-a-neighbour", lambda: open("/etc/hostname").read())
        import hypothesis  # not imported before: its package is found in a carved directory
        print("import-after allowed")
    """)
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=REPO,
                         env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin:/sbin"}, timeout=120)
    verdicts = dict(line.split() for line in out.stdout.split("\n") if line)
    if verdicts.get("found") == "0":
        pytest.skip("no libz on this machine")
    assert verdicts["read-library"] == verdicts["dlopen-library"] == "denied", out
    assert verdicts["list-its-directory"] == verdicts["read-a-neighbour"] == verdicts["import-after"] == "allowed", out


def test_libraries_of_other_python_installations_are_found(tmp_path):
    """A copy of an unreadable library in another Python's packages (a venv under /opt, as on
    the H200 image, or a system Python's dist-packages) is looked for too."""
    venv_lib = tmp_path / "opt" / "torch" / ".venv" / "lib" / "python3.12" / "site-packages" / "torch" / "lib"
    system_lib = tmp_path / "usr" / "lib" / "python3" / "dist-packages" / "nvidia" / "cudnn" / "lib"
    unrelated = tmp_path / "usr" / "lib" / "elsewhere" / "lib"
    for directory in (venv_lib, system_lib, unrelated):
        directory.mkdir(parents=True)
    found = landlock.package_library_dirs((str(tmp_path / "opt" / "*" / "*" / "lib"), str(tmp_path / "usr" / "lib")))
    assert found == {str(venv_lib), str(system_lib)}

