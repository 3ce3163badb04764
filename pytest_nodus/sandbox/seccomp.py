"""A seccomp filter: the system calls a kernel has no use for, refused by the kernel for good.

Installed by the sandbox on all its threads (``SECCOMP_FILTER_FLAG_TSYNC``) after Landlock and
before the kernel file is imported (``sandbox/confine.py``); inherited by every thread and
process it starts, and no call can remove or loosen it. The other walls already keep the
sandbox from what these calls would reach (namespaces, no capabilities, Landlock:
``grader/walls.py``); this one takes away the kernel's own attack surface behind them, the
calls that Linux privilege escalations start from:

- new namespaces (``unshare``, ``setns``, ``clone`` with a namespace flag): an unprivileged
  user namespace hands its creator every capability inside it, and with them kernel code
  that is otherwise root's only (CVE-2022-0185, CVE-2023-0386, CVE-2023-32233 began there);
- ``io_uring``, ``bpf``, ``perf_event_open``, ``userfaultfd``, ``keyctl`` and friends: large
  interfaces with a history of privilege escalations (userfaultfd widens kernel races);
- tracing and other processes' memory (``ptrace``, ``process_vm_readv/writev``, ``kcmp``);
- mounts, modules, kexec, reboot, swap, clocks, ``open_by_handle_at``: the administrator's,
  refused without capabilities anyway.

Refused calls fail with EPERM, so a kernel that probes for them sees an ordinary error.
``clone3`` fails with ENOSYS, since its flags sit behind a pointer a filter cannot read:
glibc then falls back to ``clone``, whose flags it can. Only x86-64 has the table below; on
another architecture :func:`install` returns False and ``isolation`` lacks ``seccomp``.
"""

from __future__ import annotations

import ctypes
import errno
import platform
import struct

_AUDIT_ARCH_X86_64 = 0xC000003E
_X32_BIT = 0x40000000  # x86-64's x32 ABI: the same calls under other numbers; none is allowed
_NAMESPACE_FLAGS = 0x7E020000  # CLONE_NEWNS | NEWCGROUP | NEWUTS | NEWIPC | NEWUSER | NEWPID | NEWNET

_CLONE, _CLONE3, _SECCOMP = 56, 435, 317
_REFUSED = {  # x86-64 numbers (arch/x86/entry/syscalls/syscall_64.tbl)
    "ptrace": 101, "process_vm_readv": 310, "process_vm_writev": 311, "kcmp": 312,
    "unshare": 272, "setns": 308,
    "io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427,
    "bpf": 321, "perf_event_open": 298, "userfaultfd": 323,
    "keyctl": 250, "add_key": 248, "request_key": 249,
    "mount": 165, "umount2": 166, "pivot_root": 155, "chroot": 161, "open_tree": 428, "move_mount": 429,
    "fsopen": 430, "fsconfig": 431, "fsmount": 432, "fspick": 433, "mount_setattr": 442,
    "open_by_handle_at": 304, "name_to_handle_at": 303,
    "init_module": 175, "finit_module": 313, "delete_module": 176, "kexec_load": 246, "kexec_file_load": 320,
    "reboot": 169, "swapon": 167, "swapoff": 168, "acct": 163, "quotactl": 179,
    "settimeofday": 164, "clock_settime": 227, "clock_adjtime": 305, "adjtimex": 159,
}

# Classic BPF, as seccomp reads it (linux/filter.h, linux/seccomp.h).
_LD_W_ABS, _JEQ_K, _JGE_K, _AND_K, _RET_K = 0x20, 0x15, 0x35, 0x54, 0x06
_RET_ALLOW, _RET_ERRNO, _RET_KILL_PROCESS = 0x7FFF0000, 0x00050000, 0x80000000
_NR, _ARCH, _ARG0_LOW = 0, 4, 16  # offsets into struct seccomp_data (little-endian)
_SET_MODE_FILTER, _FLAG_TSYNC, _PR_SET_NO_NEW_PRIVS = 1, 1, 38


def program() -> list[tuple[int, int, int, int]]:
    """The filter as (code, jt, jf, k) instructions."""
    refuse = (_RET_K, 0, 0, _RET_ERRNO | errno.EPERM)
    allow = (_RET_K, 0, 0, _RET_ALLOW)
    numbers = sorted(_REFUSED.values())
    head = [
        (_LD_W_ABS, 0, 0, _ARCH),
        (_JEQ_K, 1, 0, _AUDIT_ARCH_X86_64),
        (_RET_K, 0, 0, _RET_KILL_PROCESS),  # a 32-bit call on x86-64: another table, none allowed
        (_LD_W_ABS, 0, 0, _NR),
        (_JGE_K, 0, 1, _X32_BIT),
        refuse,
        (_JEQ_K, 0, 1, _CLONE3),
        (_RET_K, 0, 0, _RET_ERRNO | errno.ENOSYS),
    ]
    # One test per refused number, each jumping to the refusal after the list on a match.
    tests = [(_JEQ_K, len(numbers) - i + 5, 0, nr) for i, nr in enumerate(numbers)]
    clone = [
        (_JEQ_K, 0, 4, _CLONE),  # anything else: allowed
        (_LD_W_ABS, 0, 0, _ARG0_LOW),  # clone's flags
        (_AND_K, 0, 0, _NAMESPACE_FLAGS),
        (_JEQ_K, 1, 0, 0),
        refuse,
        allow,
        refuse,  # the numbers' jump target
    ]
    return head + tests + clone


def install() -> bool:
    """Install the filter on every thread of this process. False where this architecture
    has no table here or the kernel refuses (then the grade's isolation says so)."""
    if platform.machine() != "x86_64":
        return False
    instructions = program()
    packed = b"".join(struct.pack("=HBBI", *i) for i in instructions)
    buffer = ctypes.create_string_buffer(packed, len(packed))

    class _Program(ctypes.Structure):  # struct sock_fprog
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

    fprog = _Program(len(instructions), ctypes.addressof(buffer))
    libc = ctypes.CDLL(None, use_errno=True)
    # A filter needs no_new_privs (the launcher set it too, where it could); harmless twice.
    if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        return False
    return libc.syscall(_SECCOMP, _SET_MODE_FILTER, _FLAG_TSYNC, ctypes.byref(fprog)) == 0
