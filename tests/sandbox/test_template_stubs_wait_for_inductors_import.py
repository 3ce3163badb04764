"""Stubbing inductor's templates imports nothing of inductor at the sandbox's start (~2 s a
sandbox would pay): the stub is in place when inductor is first imported, later, by the
submission or by torch's profiler, and before any kernel module reads a template."""

from __future__ import annotations

import subprocess
import sys
import textwrap

from conftest import REPO


def test_the_stub_waits_for_inductor_and_is_in_place_when_it_comes():
    probe = textwrap.dedent("""
        import sys
        import torch
        from pytest_nodus.sandbox import templates
        templates.stub_out(("kernel/flex/templates",))
        print("inductor-at-start", any(m.startswith("torch._inductor") for m in sys.modules))
        import torch._inductor.kernel.flex.flex_attention as flex
        print("rendered-chars", len(flex.flex_attention_backward_template.template.render().strip()))
        import inspect
        import torch._inductor.utils as utils
        print("source-readable", len(inspect.getsource(utils)) > 0)
    """)
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=REPO,
                         env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"}, timeout=300)
    assert out.stdout.split() == ["inductor-at-start", "False", "rendered-chars", "0", "source-readable", "True"], \
        out.stdout + out.stderr[-2000:]
