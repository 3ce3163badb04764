"""Which kernel-held limits this host lets the grader put on a sandbox, read on the spot.

    python3 tools/probes/cgroup_layout.py

grader/cgroup_limits.py holds a sandbox's host memory and tasks with cgroup v1's memory and
pids controllers, or with v2's, enabled for the children of the grader's own cgroup once
its processes are moved into a leaf (``nodus-processes``), or tasks by RLIMIT_NPROC. This
prints what it has to work with: the mounts, the grader's own cgroup (the leaf, once a grade
ran), its controllers, whether it holds other processes, and whether a child can be made and
given the memory and pids controllers. It changes nothing it does not undo: the one child it
makes is removed, and a subtree_control it managed to widen is put back.
"""

from __future__ import annotations

import os
from pathlib import Path


def _read(path: Path) -> str:
    try:
        return path.read_text().strip()
    except OSError as exc:
        return f"<{type(exc).__name__}: {exc.strerror}>"


def main() -> int:
    mounts = [line.split() for line in Path("/proc/self/mountinfo").read_text().splitlines()]
    for fields in mounts:
        kind = fields[fields.index("-") + 1]
        if kind in ("cgroup", "cgroup2"):
            print(f"mount {kind:8s} {fields[4]}  {fields[-1]}")
    print("own cgroups:", _read(Path("/proc/self/cgroup")).replace("\n", " | "))
    v2 = next((f[4] for f in mounts if f[f.index("-") + 1] == "cgroup2"), None)
    own_line = next((line for line in _read(Path("/proc/self/cgroup")).splitlines() if line.startswith("0::")), None)
    if v2 is None or own_line is None:
        print("no cgroup v2 here")
        return 0
    own = Path(v2) / own_line.split("::", 1)[1].lstrip("/")
    print(f"own v2 cgroup: {own}  (the hierarchy's root: {own == Path(v2)})")
    for name in ("cgroup.controllers", "cgroup.subtree_control", "cgroup.type", "memory.max", "pids.max"):
        print(f"  {name}: {_read(own / name)}")
    procs = _read(own / "cgroup.procs").split()
    print(f"  processes in it: {len(procs)} (this one is {os.getpid()})")
    if own != Path(v2):
        print(f"  parent's subtree_control: {_read(own.parent / 'cgroup.subtree_control')}")
    before = _read(own / "cgroup.subtree_control")
    try:
        (own / "cgroup.subtree_control").write_text("+memory +pids")
        print("  +memory +pids in own subtree_control: accepted")
    except OSError as exc:
        print(f"  +memory +pids in own subtree_control: refused ({exc.strerror})")
    child = own / f"nodus-probe-{os.getpid()}"
    try:
        child.mkdir()
        print(f"  child made; its controllers: {_read(child / 'cgroup.controllers')}; "
              f"memory.max {_read(child / 'memory.max')}; pids.max {_read(child / 'pids.max')}")
        child.rmdir()
    except OSError as exc:
        print(f"  child: {exc.strerror}")
    if _read(own / "cgroup.subtree_control") != before:
        widened = set(_read(own / "cgroup.subtree_control").split()) - set(before.split())
        (own / "cgroup.subtree_control").write_text(" ".join(f"-{c}" for c in widened))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
