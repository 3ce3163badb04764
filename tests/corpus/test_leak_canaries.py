"""The leak canaries are not blind: each computes honestly once its secret is planted where it looks."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from conftest import CHEATS, REPO

from pytest_nodus.grader.cgroup import SandboxCgroup

pytestmark = pytest.mark.corpus


# What each leak canary looks for, planted in the function that calls it.
CANARY_PLANTS = {
    "seed_from_environment": "os.environ['NODUS_GRADE_SEED'] = '7'",
    "sizes_from_sys_modules": "sys.modules['leaky_grader'] = _module()",
    "seed_from_gc": "obj = types.SimpleNamespace(grade_seed=7)",
    "sizes_from_stack": "hidden_sizes = [{'M': 4, 'N': 64}]",
}


CANARY_DRIVER = """
import importlib.util, os, sys, types, torch
def _module():
    m = types.ModuleType('leaky_grader'); m.planned_dims = [{'M': 4}]; return m
spec = importlib.util.spec_from_file_location('canary', sys.argv[1])
canary = importlib.util.module_from_spec(spec); spec.loader.exec_module(canary)
x = torch.randn(4, 64).to(torch.bfloat16); w = torch.randn(64).to(torch.bfloat16)
def call():
    PLANT
    return canary.kernel(x, w, 1e-6)
out = call().float()
xf = x.float()
honest = (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-6) * w.float()).to(torch.bfloat16).float()
print('honest' if torch.allclose(out, honest) else 'guess')
"""


@pytest.mark.parametrize("canary", sorted(CANARY_PLANTS))
def test_leak_canaries_see_a_planted_secret(canary):
    """A canary that could not see a leak would score -24 for nothing: each must compute
    honestly once its secret is planted where it looks, and guess when nothing is there."""
    env = {"PATH": os.environ.get("PATH", ""), "PYTHONPATH": str(REPO)}
    seen = {}
    for planted in (False, True):
        driver = CANARY_DRIVER.replace("PLANT", CANARY_PLANTS[canary] if planted else "pass")
        run = subprocess.run([sys.executable, "-c", driver, str(CHEATS / "rmsnorm" / f"{canary}.py")], env=env,
                             capture_output=True, text=True, timeout=300)
        assert run.returncode == 0, run.stderr[-2000:]
        seen[planted] = run.stdout.strip()
    assert seen == {False: "guess", True: "honest"}



# Canaries of what the sandbox's walls hide (grader/walls.py, sandbox/confine.py): each must
# compute honestly outside a sandbox, where what it looks for is there to see. The unplanted
# half is not asserted here: concurrent grades' sandboxes and scratch would be seen as well.
WALL_PLANTS = {
    # Another process that looks like an expert's sandbox, for it to find and renice.
    # Planted once it runs its own command line: until its exec, /proc shows the parent's.
    "other_processes": "p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(120)', "
                       "'pytest_nodus.sandbox', '--role', 'expert'], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL); "
                       "[time.sleep(0.01) for _ in range(1000) "
                       "if b'--role' not in open(f'/proc/{p.pid}/cmdline', 'rb').read()]",
    # Another sandbox's scratch directory, holding its kernel file.
    "other_scratch": "d = tempfile.mkdtemp(prefix='nodus-canary-', dir='/dev/shm'); "
                     "open(os.path.join(d, 'kernel_under_test.py'), 'w').write('x = 1')",
    # The expert's compile caches, kept across grades, under the cache folder it names.
    "poison_compile_caches": "d = tempfile.mkdtemp(prefix='nodus-canary-'); "
                             "os.makedirs(os.path.join(d, 'pytest-nodus', 'expert', 'triton')); "
                             "os.environ['XDG_CACHE_HOME'] = d",
    # The grader's bytecode cache, as the prefix its imports read (a copy of torch's folder in it).
    "poison_bytecode_cache": "d = tempfile.mkdtemp(prefix='nodus-canary-'); "
                             "os.makedirs(d + os.path.dirname(os.path.realpath(torch.__file__))); sys.pycache_prefix = d",
    # What the trusted expert keeps across grades, under the cache folder it names.
    "read_expert_caches": "d = tempfile.mkdtemp(prefix='nodus-canary-'); "
                          "p = os.path.join(d, 'pytest-nodus', 'expert', 'cudnn-plans'); os.makedirs(p); "
                          "open(os.path.join(p, 'a.plan'), 'wb').write(b'M=4'); os.environ['XDG_CACHE_HOME'] = d",
    # A cgroup of its own below the one it runs in, which it can leave for its parent.
    "escape_cgroup": "d = os.path.join(canary._cgroup_dir()[1], 'nodus-canary-cgroup'); os.makedirs(d, exist_ok=True); "
                     "open(os.path.join(d, 'cgroup.procs'), 'w').write('0')",
}


@pytest.mark.parametrize("canary", sorted(WALL_PLANTS))
def test_wall_canaries_see_what_a_sandbox_hides(canary, tmp_path):
    if canary == "escape_cgroup":
        probe = SandboxCgroup.create("canary-probe")
        if probe is None:
            pytest.skip("no writable cgroup v2 hierarchy here: the grade's isolation lists no cgroup")
        probe.remove()
    driver = CANARY_DRIVER.replace("import importlib.util,", "import importlib.util, subprocess, tempfile, time,")
    driver = driver.replace("PLANT", WALL_PLANTS[canary] + "; planted.append(1)")
    driver = "planted = []\n" + driver
    run = subprocess.run([sys.executable, "-c", driver, str(CHEATS / "rmsnorm" / f"{canary}.py")],
                         env={"PATH": os.environ.get("PATH", ""), "PYTHONPATH": str(REPO)},
                         capture_output=True, text=True, timeout=300, start_new_session=True)
    subprocess.run(["pkill", "-f", "time.sleep(120)"], check=False)
    subprocess.run(f"rm -rf /dev/shm/nodus-canary-* {tempfile.gettempdir()}/nodus-canary-*", shell=True, check=False)
    for left in Path("/sys/fs/cgroup").glob("**/nodus-canary-cgroup"):
        left.rmdir()
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.strip() == "honest"
