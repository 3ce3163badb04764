"""The walls the kernel keeps around a sandbox, raised before its first instruction runs.

Everything the sandbox process does itself (Landlock, tripwires, the audit) is set up by code
the submission later shares a process with. These walls are not: the sandbox is started as
the child of util-linux's ``unshare`` and ``setpriv``, so the kernel holds them from its
first instruction, and nothing inside can take them down:

- **network**: a network namespace of its own, holding only a loopback that is down. No
  socket of any family reaches the host: a datagram to 127.0.0.1 fails to send, and
  abstract unix sockets are per namespace too.
- **processes**: a PID namespace of its own, with its own /proc. The sandbox is pid 1 there
  and sees, signals, traces, renices and re-pins only what it started itself; not the
  grader, not the other sandboxes. When it dies, the kernel kills everything it started.
- **ipc**: its own System V IPC and POSIX message queues.
- **privilege**: no capabilities (an empty bounding set, none inheritable) and
  ``no_new_privs``: it can change no device-wide setting (GPU clocks and power limits need
  CAP_SYS_ADMIN) and gain nothing by exec. A grader that is not root first gives it a user
  namespace of its own, mapping only its own uid.
- **identity**: under a root grader the submission's sandbox runs as a uid of its own
  (:func:`sandbox_uid`), which owns its scratch and nothing else on the machine: no file
  of root's is its to write or chmod, no process of the grader's or the expert's is its to
  signal, and the cgroup files that count and freeze it are root's. The trusted sandboxes
  (expert, baselines) keep the grader's uid without its capabilities: they share a compile
  cache across grades. Its GPU memory crosses the uid boundary as a file descriptor
  (``shared/vmm.py``), which the driver honours where it refuses CUDA IPC handles.

Where ``unshare`` is missing or the kernel refuses (a container without user namespaces),
the sandbox starts without these walls, and where the Python it runs is not readable by
another uid (an interpreter under a 0700 home), without its own uid; the grade's
``isolation`` list says which walls held.
"""

from __future__ import annotations

import functools
import itertools
import os
import shutil
import subprocess
import sys
from pathlib import Path

NETWORK = "network-namespace"
PROCESSES = "pid-namespace"
IPC = "ipc-namespace"
USER = "user-namespace"
NO_CAPABILITIES = "no-capabilities"
NO_NEW_PRIVS = "no-new-privs"
OWN_UID = "own-uid"
# Not raised here: the submission's sandbox installs its seccomp filter itself, before the
# kernel file loads (sandbox/seccomp.py), and says so in its hello.
SECCOMP = "seccomp"

# Sandbox uids: far above those login.defs hands out (up to 60000) and the subordinate ranges
# of the first users (/etc/subuid: from 100000, 65536 each), so a sandbox's uid owns no file
# but its scratch; a block per grader process, by pid, so concurrent graders on one machine
# do not share them. 1024 per block: every attempt of a batch and each of its restarts gets
# a uid no other sandbox of the grade holds (the highest, 2**24 + 2**30, is far below 2**32).
UID_BASE = 1 << 24
_UIDS_PER_GRADER = 1024
_uid_sequence = itertools.count()

_DROP = ["--inh-caps=-all", "--bounding-set=-all", "--no-new-privs"]


@functools.cache
def _pdeathsig_supported() -> bool:
    """setpriv's ``--pdeathsig`` (util-linux 2.33 and later)."""
    setpriv = shutil.which("setpriv")
    return setpriv is not None and _runs([setpriv, "--pdeathsig", "keep", "true"])


def _drop() -> list[str]:
    # --pdeathsig keep: unshare's --kill-child is a parent-death signal, which the kernel
    # clears when the sandbox's uid changes; kept, the sandbox still dies with its launcher.
    return [*_DROP, *(["--pdeathsig", "keep"] if _pdeathsig_supported() else [])]


def die_with_parent() -> tuple[str, ...]:
    """A command prefix that makes the process die with the one that started it: a sandbox's
    launcher with its grader, a grade's pytest with its caller (``pytest_nodus.grade``). A
    grader killed mid-grade (a pipeline's timeout, the OOM killer, a lost Ray worker) must
    leave no grade or sandbox behind, frozen or running, holding its GPU memory. () where
    setpriv cannot. The signal follows the *thread* that started the process: the grader
    starts sandboxes from its one thread, and ``grade`` waits for its pytest in the thread
    that started it, so neither fires early."""
    return (shutil.which("setpriv"), "--pdeathsig", "KILL") if _pdeathsig_supported() else ()


@functools.cache
def _namespaces() -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(``unshare`` and ``setpriv`` up to the identity options, the walls they raise), tried
    once per grader process; ``((), ())`` when this machine cannot raise them."""
    unshare, setpriv = shutil.which("unshare"), shutil.which("setpriv")
    if unshare is None or setpriv is None:
        return (), ()
    # --kill-child: the sandbox dies with its unshare parent (the one the grader kills);
    # --mount-proc: /proc of the new PID namespace only.
    namespaces = ["--net", "--ipc", "--pid", "--fork", "--kill-child", "--mount-proc"]
    walls = (NETWORK, IPC, PROCESSES, NO_CAPABILITIES, NO_NEW_PRIVS)
    if os.geteuid() != 0:
        namespaces.insert(0, "--map-current-user")  # implies --user: the namespaces need it
        walls = (USER, *walls)
    command = (unshare, *namespaces, setpriv)
    return (command, walls) if _runs([*command, *_drop(), "true"]) else ((), ())


def _identity(uid: int) -> list[str]:
    return [f"--reuid={uid}", f"--regid={uid}", "--clear-groups"]


@functools.cache
def _other_uid_can_run(import_root: str) -> bool:
    """Whether a process of another uid can run this Python, find what a sandbox imports
    (torch, triton, this package), and start this Python again itself, as compilers a correct
    kernel runs do: not so for an interpreter in a 0700 home, which a virtualenv's link into
    that home can still launch once but not again from inside."""
    command, _ = _namespaces()
    if not command or os.geteuid() != 0:
        return False
    check = ("import importlib.util as u, subprocess, sys; sys.path.insert(0, sys.argv[1]); "
             "found = all(u.find_spec(m) for m in ('torch', 'triton', 'numpy', 'pytest_nodus.sandbox')); "
             "sys.exit(0 if found and subprocess.run([sys.executable, '-I', '-c', '']).returncode == 0 else 1)")
    return _runs([*command, *_identity(UID_BASE), *_drop(), sys.executable, "-I", "-c", check, import_root])


def _runs(command: list[str]) -> bool:
    try:
        probe = subprocess.run(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL, timeout=60, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return probe.returncode == 0


def sandbox_uid(import_root: Path) -> int | None:
    """A uid for a new submission sandbox, or None where it must keep the grader's: also when
    this user namespace maps no such uid (a container's map may end below it), where the
    sandbox's switch to it would fail at start-up and floor a correct kernel."""
    if not _other_uid_can_run(str(import_root)):
        return None
    uid = UID_BASE + (os.getpid() % (1 << 20)) * _UIDS_PER_GRADER + next(_uid_sequence) % _UIDS_PER_GRADER
    table = _uid_map()
    return uid if table is None or mapped(uid, table) else None


@functools.cache
def _uid_map() -> str | None:
    """This process's user namespace map; None without user namespaces to map through."""
    try:
        with open("/proc/self/uid_map") as f:
            return f.read()
    except OSError:
        return None


def mapped(uid: int, uid_map: str) -> bool:
    """Whether ``uid`` lies in one of ``/proc/self/uid_map``'s ranges (inside id, outside id, count)."""
    for line in uid_map.splitlines():
        fields = line.split()
        if len(fields) == 3 and int(fields[0]) <= uid < int(fields[0]) + int(fields[2]):
            return True
    return False


def prefix(uid: int | None = None) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(the command that starts a sandbox inside the walls, the walls it raises); ``uid``
    from :func:`sandbox_uid`, or None to keep the grader's."""
    command, walls = _namespaces()
    if not command:
        return (), ()
    if uid is None:
        return (*command, *_drop()), walls
    return (*command, *_identity(uid), *_drop()), (*walls, OWN_UID)


def sandbox_pid(launcher_pid: int) -> int | None:
    """The sandbox's own pid (as the grader sees it) under its ``unshare`` launcher: the
    launcher's one child, which ``setpriv`` replaced with the sandbox."""
    try:
        with open(f"/proc/{launcher_pid}/task/{launcher_pid}/children") as f:
            children = [int(p) for p in f.read().split()]
    except (OSError, ValueError):
        return None
    return children[0] if len(children) == 1 else None
