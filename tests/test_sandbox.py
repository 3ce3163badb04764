"""The sandbox's confinement and the CPU path's Triton fixes, checked directly."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from conftest import REPO
from pytest_nodus import landlock


@pytest.mark.skipif(landlock.abi_version() == 0, reason="this kernel has no Landlock")
def test_landlock_confines_reads_writes_network_and_signals(tmp_path):
    probe = textwrap.dedent(f"""
        import os, socket, sys, site
        from pytest_nodus import landlock
        readable = ["/usr", "/lib", "/lib64", "/etc", "/proc", sys.prefix, sys.base_prefix] + site.getsitepackages()
        landlock.restrict(readable, [{str(tmp_path)!r}], ["/dev/null"])
        def attempt(label, action):
            try:
                action(); print(label, "allowed")
            except OSError:
                print(label, "denied")
        attempt("read-sealed", lambda: open({str(REPO / 'sealed_fixtures' / 'rmsnorm.json')!r}).read())
        attempt("read-expert", lambda: open({str(REPO / 'expert' / 'rmsnorm' / 'solution.py')!r}).read())
        attempt("write-outside", lambda: open("/tmp/nodus-escape-probe", "w"))
        attempt("write-scratch", lambda: open(os.path.join({str(tmp_path)!r}, "ok"), "w"))
        attempt("connect", lambda: socket.create_connection(("127.0.0.1", 9), timeout=1))
        attempt("signal-parent", lambda: os.kill(os.getppid(), 0))
    """)
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=REPO,
                         env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"}, timeout=120).stdout.split("\n")
    verdicts = dict(line.split() for line in out if line)
    assert verdicts["read-sealed"] == verdicts["read-expert"] == "denied"
    assert verdicts["write-outside"] == "denied" and verdicts["write-scratch"] == "allowed"
    if landlock.abi_version() >= 4:
        assert verdicts["connect"] == "denied"
    if landlock.abi_version() >= 6:
        assert verdicts["signal-parent"] == "denied"


@pytest.mark.skipif(landlock.abi_version() == 0, reason="this kernel has no Landlock")
def test_unreadable_library_cannot_be_loaded_and_the_rest_still_imports(tmp_path):
    """An environment's unreadable libraries (here a stand-in that nothing Python imports
    needs: ncurses' form, menu or panel library, or bzip2's) cannot be opened or dlopened;
    the directories carved around them still list and import."""
    probe = textwrap.dedent(f"""
        import ctypes, os, sys, site
        from pytest_nodus import landlock
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


def test_interpreter_bf16_arithmetic_matches_torch():
    kernel = textwrap.dedent("""
        import torch, triton, triton.language as tl
        from pytest_nodus import triton_interpreter
        triton_interpreter.install()

        @triton.jit
        def ops(x_ptr, y_ptr, out_ptr, cast_ptr, min_ptr, a_ptr, b_ptr, dot_ptr, N: tl.constexpr):
            i = tl.arange(0, N)
            x = tl.load(x_ptr + i); y = tl.load(y_ptr + i)
            tl.store(out_ptr + i, x * y + x)
            tl.store(cast_ptr + i, (x.to(tl.float32) * 3.0).to(tl.bfloat16))
            tl.store(min_ptr + i, tl.where(x < y, x, y))
            r = tl.arange(0, 16)
            a = tl.load(a_ptr + r[:, None] * 16 + r[None, :]); b = tl.load(b_ptr + r[:, None] * 16 + r[None, :])
            tl.store(dot_ptr + r[:, None] * 16 + r[None, :], tl.dot(a, b))

        g = torch.Generator().manual_seed(0)
        x, y = (torch.randn(64, generator=g).bfloat16() for _ in range(2))
        a, b = (torch.randn(16, 16, generator=g).bfloat16() for _ in range(2))
        out, cast, low = (torch.empty_like(x) for _ in range(3)); dot = torch.empty(16, 16)
        ops[(1,)](x, y, out, cast, low, a, b, dot, 64)
        assert torch.equal(out, x * y + x), "elementwise bf16"
        assert torch.equal(cast, (x.float() * 3).bfloat16()), "fp32 -> bf16 rounds to nearest even"
        assert torch.equal(low, torch.minimum(x, y)), "bf16 comparisons"
        assert torch.allclose(dot, a.float() @ b.float(), rtol=1e-5, atol=1e-5), "bf16 tl.dot"
        print("ok")
    """)
    result = subprocess.run([sys.executable, "-c", kernel], capture_output=True, text=True, cwd=REPO,
                            env={"PYTHONPATH": str(REPO), "TRITON_INTERPRET": "1", "PATH": "/usr/bin:/bin"},
                            timeout=300)
    assert result.stdout.strip() == "ok", result.stderr[-2000:]


def test_a_sandbox_that_cannot_remove_its_kernels_refuses_to_serve(tmp_path):
    """Fail closed: if the fatbins the grader found cannot be overwritten (here, their
    library is not even loaded), the submission is never imported and the start fails."""
    from pytest_nodus.isolation import Sandbox, SandboxFailure

    kernel = tmp_path / "kernel.py"
    kernel.write_text("print('imported')\ndef kernel(x):\n    return x\n")
    absent = {"library": "/nonexistent/libnodus_absent.so", "section": [0, 64], "spans": [[0, 16]], "kernels": 1}
    sandbox = Sandbox(kernel, "submission", "cpu", removed_kernels=absent)
    try:
        with pytest.raises(SandboxFailure) as failure:
            sandbox.start(1 << 20)
        log = (sandbox.scratch / "sandbox.log").read_text()
    finally:
        sandbox.close()
    assert failure.value.code == "load_failed"
    assert "kernels could not be removed" in failure.value.detail and "is not loaded here" in failure.value.detail
    assert "imported" not in log


def test_without_removal_the_same_sandbox_serves(tmp_path):
    from pytest_nodus.isolation import Sandbox

    kernel = tmp_path / "kernel.py"
    kernel.write_text("def kernel(x):\n    return x\n")
    sandbox = Sandbox(kernel, "submission", "cpu")
    try:
        sandbox.start(1 << 20)
        assert sandbox.alive
    finally:
        sandbox.close()


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
def test_unreadable_packages_cannot_be_imported_and_the_control_can(tmp_path):
    """A package the environment keeps out, installed where the sandbox may read (this
    Python's site-packages), cannot be imported by a submission, module or package, and
    the same sandbox without the rule imports both."""
    import site
    import uuid

    from pytest_nodus.isolation import Sandbox

    name = f"nodus_fake_attention_{uuid.uuid4().hex[:8]}"
    where = Path(site.getsitepackages()[0])
    if not os.access(where, os.W_OK):
        pytest.skip(f"{where} is not writable here (CI installs into a venv it owns)")
    (where / name).mkdir()
    (where / name / "__init__.py").write_text("VALUE = 7\n")
    (where / f"{name}_cuda.py").write_text("VALUE = 8\n")
    kernel = tmp_path / "kernel.py"
    kernel.write_text(textwrap.dedent(f"""
        import importlib
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
    assert "denied" in logs["kept_out"] and "imported" not in logs["kept_out"], logs["kept_out"]
    assert "imported 7" in logs["control"] and "imported 8" in logs["control"], logs["control"]


@pytest.mark.skipif(landlock.abi_version() == 0, reason="this kernel has no Landlock")
def test_removed_inductor_templates_are_stubs_and_their_files_unreadable(tmp_path):
    """FlexAttention's templates (attention_backward's removed_templates): the submission's
    inductor renders them to nothing, their files cannot be read, and torch.compile of
    anything else still works (no false positive for an honest torch.compile user)."""
    from pytest_nodus.isolation import Sandbox

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
        from pytest_nodus import templates
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


def test_reaping_a_process_that_does_not_end_is_bounded():
    """The grader never waits for good on a process that will not end (one stuck in the GPU
    driver's teardown would otherwise stall it, holding the GPU lock)."""
    import signal
    import time

    from pytest_nodus.isolation import reap

    child = subprocess.Popen(["sleep", "30"])
    started = time.monotonic()
    assert reap(child.pid, timeout_s=0.3) is False  # still running: given up on, not waited for
    assert time.monotonic() - started < 5
    child.send_signal(signal.SIGKILL)
    assert reap(child.pid, timeout_s=10) is True
    child.returncode = -9  # reaped here, not by Popen
