"""A submission's process holds no file descriptor but its own channels: stdin on /dev/null,
its log (stdout and stderr) in its scratch, the request and reply pipes, and on a GPU the
driver's files. The socket its arena's descriptors crossed at its launch
(grader/sandbox_spawn.py) is closed before its kernel file loads, and nothing of the
grader's leaks through the spawn."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.grade

# Fails its own load, naming every descriptor it holds, unless each is one of its own.
KERNEL = '''
import os
import stat

held = {}
for name in os.listdir("/proc/self/fd"):
    fd = int(name)
    try:
        held[fd] = (os.readlink(f"/proc/self/fd/{fd}"), stat.S_IFMT(os.fstat(fd).st_mode))
    except OSError:
        pass  # the listing's own descriptor, closed by now
scratch = os.getcwd()
pipes = [fd for fd, (target, _) in held.items() if target.startswith("pipe:")]
foreign = {fd: target for fd, (target, kind) in held.items()
           if not (target == "/dev/null" and fd == 0)
           and not (fd in (1, 2) and target == os.path.join(scratch, "sandbox.log"))
           and not target.startswith("pipe:")
           and not target.startswith("/dev/nvidia") and not target.startswith("anon_inode:")}
if foreign or len(pipes) != 2:
    raise RuntimeError(f"descriptors not its own: {foreign}, pipes {pipes}")

import torch


def kernel(x, weight, eps):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * weight.float()).to(torch.bfloat16)
'''


def test_a_submission_holds_only_its_own_descriptors(grade, tmp_path):
    submission = tmp_path / "descriptors.py"
    submission.write_text(KERNEL)
    result = grade(submission)
    assert result.document["status"] == "correct", result.document["flags"]
