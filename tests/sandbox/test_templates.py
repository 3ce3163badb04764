"""Removed inductor templates are stubs in the sandbox and their files unreadable."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import pytest
from conftest import REPO
from pytest_nodus.sandbox import landlock


@pytest.mark.skipif(landlock.abi_version() == 0, reason="this kernel has no Landlock")
def test_removed_inductor_templates_are_stubs_and_their_files_unreadable(tmp_path):
    """FlexAttention's templates (attention_backward's removed_templates): the submission's
    inductor renders them to nothing, their files cannot be read, and torch.compile of
    anything else still works (no false positive for an honest torch.compile user)."""
    from pytest_nodus.grader.sandbox_process import Sandbox

    kernel = tmp_path / "kernel.py"
    kernel.write_text(textwrap.dedent("""
        import os
        import torch
        import torch._inductor.kernel.flex.flex_attention as flex
        here = os.path.join(os.path.dirname(torch.__file__), "_inductor", "kernel", "flex", "templates")
        try:
            open(os.path.join(here, "flex_backwards.py.jinja")).read()
            print("template-file readable")
        except OSError:
            print("template-file denied")
        print("rendered-chars", len(flex.flex_attention_backward_template.template.render().strip()))
        print("compile-works", bool((torch.compile(lambda x: x * 2 + 1)(torch.ones(3)) == 3).all()))
        def kernel(x):
            return x
    """))
    sandbox = Sandbox(kernel, "submission", "cpu", removed_templates=("kernel/flex/templates",))
    try:
        sandbox.start(1 << 20)
        log = (sandbox.scratch / "sandbox.log").read_text()
    finally:
        sandbox.close()
    assert "template-file denied" in log and "rendered-chars 0" in log and "compile-works True" in log, log


def test_without_the_stubs_the_flex_template_is_real():
    """The check above can fail: unstubbed, the same render needs inductor's kernel context
    (``def_kernel``), where the stub renders to nothing."""
    out = subprocess.run([sys.executable, "-c", "import torch._inductor.kernel.flex.flex_attention as f; "
                          "f.flex_attention_backward_template.template.render()"],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode != 0 and "def_kernel" in out.stderr, out.stderr[-2000:]


def test_template_stubbing_refuses_what_it_cannot_do(tmp_path):
    """Fail closed: a directory inductor loads no template from (here an empty one), or one
    that does not exist, is refused instead of being reported as removed."""
    probe = textwrap.dedent(f"""
        from pytest_nodus.sandbox import templates
        for directory in ({str(tmp_path)!r}, {str(tmp_path / 'absent')!r}):
            try:
                templates.stub_out((directory,))
                print("accepted")
            except (RuntimeError, FileNotFoundError) as exc:
                print(type(exc).__name__)
    """)
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=REPO,
                         env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"}, timeout=300)
    assert out.stdout.split() == ["RuntimeError", "FileNotFoundError"], out.stderr[-2000:]

