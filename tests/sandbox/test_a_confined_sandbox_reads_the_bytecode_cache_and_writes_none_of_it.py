"""A confined sandbox imports through the grader's bytecode cache after its walls are up, and can neither change a file there nor add one: a later grade's processes, the expert's among them, import from it."""

from __future__ import annotations

import os
import py_compile
import subprocess
import sys
import textwrap

import pytest
from conftest import REPO

from pytest_nodus.grader import bytecode_files
from pytest_nodus.sandbox import landlock


@pytest.mark.skipif(landlock.abi_version() == 0, reason="this kernel has no Landlock: the cache is never offered")
def test_read_after_confinement_and_never_written(tmp_path):
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    cache = tmp_path / "cache"
    # A module in the sandbox's scratch whose cached bytecode is the grader's to say: a pyc
    # compiled from other code, under the source's own mtime and size. Importing it after
    # confinement answers from the cache, or from the source if the cache went unread.
    source = scratch / "probe_module.py"
    source.write_text("ANSWER = 'source'\n")
    stand_in = tmp_path / "stand_in.py"
    stand_in.write_text("ANSWER = 'cache'    \n")
    target = bytecode_files._target(str(cache), str(source))
    os.makedirs(os.path.dirname(target))
    py_compile.compile(str(stand_in), cfile=target, invalidation_mode=py_compile.PycInvalidationMode.TIMESTAMP)
    data = bytearray(open(target, "rb").read())
    info = os.stat(source)
    data[8:16] = (int(info.st_mtime) & 0xFFFFFFFF).to_bytes(4, "little") + (info.st_size & 0xFFFFFFFF).to_bytes(4, "little")
    open(target, "wb").write(bytes(data))
    before = open(target, "rb").read()
    probe = textwrap.dedent(f"""
        import os, sys, torch
        from pytest_nodus.sandbox.confine import confine
        confine({str(scratch)!r}, torch.device("cpu"))
        sys.path.insert(0, {str(scratch)!r})
        import probe_module
        print("import", probe_module.ANSWER)
        for label, path in (("change", {target!r}), ("add", os.path.join(sys.pycache_prefix, "planted.pyc"))):
            try:
                open(path, "wb").write(b"planted"); print(label, "written")
            except OSError:
                print(label, "refused")
    """)
    run = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=scratch, timeout=120,
                         env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin", "PYTHONPYCACHEPREFIX": str(cache),
                              "PYTHONDONTWRITEBYTECODE": "1"})
    verdicts = dict(line.split() for line in run.stdout.splitlines() if line)
    assert verdicts == {"import": "cache", "change": "refused", "add": "refused"}, run.stderr[-2000:]
    assert open(target, "rb").read() == before and not (cache / "planted.pyc").exists()
