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

A CUDA context opened in these namespaces still imports the grader's IPC memory and events
(measured on the H200: docs/sealing.md). A sandbox of another uid does not (the driver
refuses the import), which is why the sandbox keeps the grader's uid, without its
capabilities. Where ``unshare`` is missing or the kernel refuses (a container without user
namespaces), the sandbox starts without these walls and the grade's ``isolation`` list says
which ones held.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess

NETWORK = "network-namespace"
PROCESSES = "pid-namespace"
IPC = "ipc-namespace"
USER = "user-namespace"
NO_CAPABILITIES = "no-capabilities"
NO_NEW_PRIVS = "no-new-privs"

_DROP = ["--inh-caps=-all", "--bounding-set=-all", "--no-new-privs"]


@functools.cache
def prefix() -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(the command that starts a sandbox inside the walls, the walls it raises). Tried once
    per grader process: ``((), ())`` when this machine cannot raise them."""
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
    command = (unshare, *namespaces, setpriv, *_DROP)
    try:
        probe = subprocess.run([*command, "true"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return (), ()
    return (command, walls) if probe.returncode == 0 else ((), ())


def sandbox_pid(launcher_pid: int) -> int | None:
    """The sandbox's own pid (as the grader sees it) under its ``unshare`` launcher: the
    launcher's one child, which ``setpriv`` replaced with the sandbox."""
    try:
        with open(f"/proc/{launcher_pid}/task/{launcher_pid}/children") as f:
            children = [int(p) for p in f.read().split()]
    except (OSError, ValueError):
        return None
    return children[0] if len(children) == 1 else None
