"""A launched sandbox starts up on its own (device context, arena, confinement) but loads its
kernel file only when the grader asks (``protocol.LOAD``, sent by ``Sandbox.ready``): a
batch's sandboxes start side by side while their files load one at a time, so that GPU work
a load leaves running is known to be that file's (``Grader.charge_load``)."""

from __future__ import annotations

import time

from pytest_nodus.grader.sandbox_process import Sandbox

MARKS_ITS_LOAD = '''
from pathlib import Path

Path("loaded").write_text("yes")  # the sandbox's cwd is its own scratch


def kernel(x):
    return x.clone()
'''


def test_the_file_waits_for_ready(tmp_path):
    kernel = tmp_path / "kernel.py"
    kernel.write_text(MARKS_ITS_LOAD)
    sandboxes = [Sandbox(kernel, "submission", "cpu") for _ in range(2)]
    try:
        for sandbox in sandboxes:
            sandbox.launch(1 << 20)  # both start up side by side
        time.sleep(8.0)  # past their start-ups on a loaded 2-core machine
        assert all(s.alive and not (s.scratch / "loaded").exists() for s in sandboxes)
        sandboxes[0].ready()
        assert (sandboxes[0].scratch / "loaded").exists()
        assert not (sandboxes[1].scratch / "loaded").exists()  # not yet asked
        sandboxes[1].ready()
        assert (sandboxes[1].scratch / "loaded").exists()
        assert all(s.stages_ms["start_load"] >= 0 for s in sandboxes)
    finally:
        for sandbox in sandboxes:
            sandbox.close()
