"""Helpers for the plugin's own tests: grade a submission file through the real plugin.

Every grade runs ``pytest env_suites/<env> --nodus-submission=...`` in a subprocess
(pytester), exactly as a pipeline would, and returns the parsed JSON grade.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
CHEATS = REPO / "tests" / "cheats"
CORRECT = REPO / "tests" / "correct"



def in_interpreter(script: str, payload) -> object:
    """Run ``script`` in a Python process of its own under Triton's interpreter, with the
    sandbox's bf16 fix installed first (Triton picks the interpreter as it decorates, so not in
    this process), ``payload`` as JSON in ``sys.argv[1]``; its last line of output, as JSON."""
    prelude = "from pytest_nodus.sandbox import triton_interpreter\ntriton_interpreter.install()\n"
    run = subprocess.run([sys.executable, "-c", prelude + script, json.dumps(payload)], cwd=REPO,
                         capture_output=True, text=True, timeout=900,
                         env={**os.environ, "TRITON_INTERPRET": "1", "PYTHONPATH": str(REPO)})
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout.splitlines()[-1])

class FuzzSandbox:
    """A sandbox stand-in for ``grader/fuzzed_call.py``: it finishes a size with no flags."""

    isolation, removed_fatbins = ["process"], 0

    def finish(self, timeout):
        return {"flags": []}

    def rest(self):
        pass


class FuzzGrader:
    """The grader's side ``fuzzed_call`` needs, on the CPU, with nothing to reserve or probe;
    a test adds its ``pool`` and ``call``."""

    def __init__(self, roles, hung=()):
        from pytest_nodus.grader import devices
        from pytest_nodus.grader.sandbox_process import SandboxFailure

        self.device = devices.Device("cpu", None, "cpu", None)
        self.gpu_wait_s, self.grade_seed, self.trusted, self.torch_device = 0, 7, False, "cpu"
        self.roles, self.expert_beside_fuzz = roles, False
        self.hung = {role: SandboxFailure("timeout", "timeout", "no answer") for role in hung}

    def reserve(self, env, dims, result):
        pass

    def timeout(self, env):
        return 1.0

    def charge_load(self, sandbox, role):
        pass  # the GPU's idle probe: nothing to probe on the CPU

    def charge_leftovers(self, sandbox, role):
        pass


@dataclass
class Grade:
    outcome: object  # pytester.RunResult
    document: dict | None

    @property
    def codes(self) -> set[str]:
        return {f["code"] for f in self.document["flags"]} if self.document else set()

    @property
    def text(self) -> str:
        return self.outcome.stdout.str() + self.outcome.stderr.str()


@pytest.fixture
def site_packages():
    """This Python's site-packages, for a test to install fake packages into (skipped where it
    is not writable), and a list of what it put there, removed after the test."""
    import shutil
    import site

    where = Path(site.getsitepackages()[0])
    if not os.access(where, os.W_OK):
        pytest.skip(f"{where} is not writable here (CI installs into a venv it owns)")
    made: list[Path] = []
    yield where, made
    for path in reversed(made):
        shutil.rmtree(path) if path.is_dir() else path.unlink(missing_ok=True)


IMPORT_PROBE = """
import importlib, sys
print("prefix", sys.pycache_prefix)
for label, module in MODULES.items():
    try:
        print(label, "imported", importlib.import_module(module).VALUE)
    except (ImportError, OSError) as exc:
        print(label, "denied", type(exc).__name__)
def kernel(x):
    return x
"""


def kept_out_imports(folder: Path, modules: dict[str, str], kept_out: tuple[str, ...]) -> dict[str, str]:
    """What a submission whose file imports ``modules`` (label -> module, each printing its
    ``VALUE``) says in a CPU sandbox with the packages ``kept_out`` unreadable, and in the
    same sandbox without the rule: the logs of ``kept_out`` and ``control``."""
    from pytest_nodus.grader.sandbox_process import Sandbox

    kernel = folder / "kernel.py"
    kernel.write_text(f"MODULES = {modules!r}\n" + IMPORT_PROBE)
    logs = {}
    for label, packages in (("kept_out", kept_out), ("control", ())):
        sandbox = Sandbox(kernel, "submission", "cpu", unreadable_packages=packages)
        try:
            sandbox.start(1 << 20)
            logs[label] = (sandbox.scratch / "sandbox.log").read_text()
        finally:
            sandbox.close()
    return logs


def solution_with_config(folder: Path, env: str, name: str, params: str, config: str) -> Path:
    """A copy of ``env``'s solution in ``folder`` whose ``_config(params)`` returns ``config``,
    an expression over ``base`` (the file's own ``_config``) and the params: a path of the
    solution switched on, as a tile sweep on the GPU switches it."""
    kernel = folder / f"solution_{name}.py"
    switch = f"\n_config = (lambda base: lambda {params}: {config})(_config)\n"
    kernel.write_text((REPO / "expert" / env / "solution.py").read_text() + switch)
    return kernel


@pytest.fixture
def grade(pytester):
    """grade(submission, env="rmsnorm", xdist=0, sealed=False, *extra) -> Grade."""

    def run(submission, *extra, env="rmsnorm", xdist=0, sealed=False, device="cpu", suite=None):
        json_path = pytester.path / "grade.json"
        args = [str(suite or REPO / "env_suites" / env), f"--rootdir={REPO}", "-p", "no:cacheprovider",
                f"--nodus-submission={submission}", f"--nodus-json={json_path}", f"--nodus-device={device}", *extra]
        if sealed:
            args.append(f"--nodus-sealed={REPO / 'sealed_fixtures'}")
        if xdist:
            args += ["-n", str(xdist)]
        outcome = pytester.runpytest_subprocess(*args, timeout=600)
        document = json.loads(json_path.read_text()) if json_path.exists() else None
        return Grade(outcome, document)

    return run


@pytest.fixture(params=[0, 2], ids=["plain", "xdist2"])
def xdist(request):
    """Every grading test runs once plainly and once under pytest-xdist -n 2."""
    return request.param


@pytest.fixture
def cgroup():
    """An empty sandbox cgroup (grader/cgroup.py), removed afterwards; skipped where none can be made."""
    from pytest_nodus.grader.cgroup import SandboxCgroup

    made = SandboxCgroup.create("test")
    if made is None:
        pytest.skip("no writable cgroup v2 hierarchy here (grader/cgroup.py falls back to per-process clocks)")
    yield made
    made.remove()


@pytest.fixture(scope="module")
def ray_cluster():
    """A local Ray instance on this machine's CPUs (2: two grades at once), for the fan-out tests."""
    import ray  # the test extra installs it

    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, object_store_memory=200 << 20)
    yield ray
    ray.shutdown()


def runs(pid: int, module: str) -> bool:
    """Whether the live process ``pid`` runs ``python -m module`` (by its command line)."""
    try:
        return module.encode() in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False


def descendants(root: int) -> set[int]:
    """Every live process below ``root``, from /proc."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(entry.name))
    found, todo = set(), [root]
    while todo:
        for child in children.get(todo.pop(), []):
            found.add(child)
            todo.append(child)
    return found
