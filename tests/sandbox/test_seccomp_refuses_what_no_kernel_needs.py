"""The sandbox's seccomp filter refuses the calls behind privilege escalations, on every
thread (those started before it too), and leaves what kernels and compilers use working:
threads, fork, subprocesses (glibc's clone3 falls back to clone), torch."""

from __future__ import annotations

import platform
import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.skipif(platform.machine() != "x86_64", reason="the filter's table is x86-64's")

PROBE = textwrap.dedent("""
    import ctypes, os, subprocess, threading
    import torch
    from pytest_nodus.sandbox import seccomp
    libc = ctypes.CDLL(None, use_errno=True)
    def errno_of(nr, *args):
        return "ok" if libc.syscall(nr, *args) >= 0 else os.strerror(ctypes.get_errno())
    started, later = threading.Event(), {}
    def early():  # a thread that existed before the filter
        started.wait()
        later["unshare"] = errno_of(272, 0x10000000)
    thread = threading.Thread(target=early)
    thread.start()
    print("installed|" + str(seccomp.install()))
    started.set()
    thread.join()
    print("early thread unshare|" + str(later["unshare"]))
    print("io_uring_setup|" + str(errno_of(425, 1, ctypes.create_string_buffer(120))))
    print("userfaultfd|" + str(errno_of(323, 0)))
    print("ptrace|" + str(errno_of(101, 0, 0, 0, 0)))
    print("clone3|" + str(errno_of(435, None, 0)))
    print("child unshare|" + str(subprocess.run(["unshare", "-U", "true"], capture_output=True).returncode != 0))
    print("getpid|" + str(errno_of(39)))
    print("subprocess|" + str(subprocess.run(["echo", "hi"], capture_output=True, text=True).stdout.strip()))
    pid = os.fork()
    if pid == 0:
        os._exit(7)
    print("fork|" + str(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])))
    print("torch|" + str(float(torch.arange(4.0).sum())))
""")


def test_the_filter_refuses_escalation_calls_and_keeps_ordinary_ones():
    run = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    seen = dict(line.split("|", 1) for line in run.stdout.splitlines())
    assert seen["installed"] == "True"
    for call in ("early thread unshare", "io_uring_setup", "userfaultfd", "ptrace"):
        assert seen[call] == "Operation not permitted", (call, seen[call])  # EPERM
    assert seen["clone3"] == "Function not implemented"  # ENOSYS
    assert seen["child unshare"] == "True"
    assert seen["getpid"] == "ok" and seen["subprocess"] == "hi" and seen["fork"] == "7" and seen["torch"] == "6.0"
