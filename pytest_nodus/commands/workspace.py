"""Write the workspace an agent is given for an environment, and nothing sealed.

    python -m pytest_nodus.workspace ENV DEST [--force]     (also: nodus-workspace ENV DEST)

ENV is an environment this installation carries: the ``pytest_nodus.environments`` entry
points, each the public part of one environment (``env_suites/<env>``: declaration, suite,
task card, starting kernel). DEST gets

- ``TASK.md``, the task card;
- ``kernel.py``, the starting kernel, for the agent to edit;
- ``public_sizes.json``, the public sizes and the domain fuzzed sizes are drawn from;
- ``check.sh``, the local check: the environment's suite, installed with the package, run on
  ``kernel.py`` at the public and fuzzed sizes and timed against the starting kernel
  (``--nodus-against=starting_kernel``), by the Python that wrote the workspace. It needs no
  checkout and no environment variable, and writes nothing into DEST.

Nothing sealed is within reach: hidden sizes, experts and solutions are not in the package
(``pyproject.toml``), and none of them is written here. A DEST that holds anything is refused
unless ``--force``, which writes the four files again (``kernel.py`` too).
"""

from __future__ import annotations

import argparse
import json
import shlex
import shutil
import sys
from pathlib import Path

from pytest_nodus.grader.api import installed_environments
from pytest_nodus.grader.environment import Choice, IntRange

FILES = ("TASK.md", "kernel.py", "public_sizes.json", "check.sh")

CHECK = """#!/usr/bin/env bash
# The local check of '{env}': kernel.py graded on the public and fuzzed sizes, timed against
# the starting kernel. Hidden sizes and the expert are the sealed grader's alone.
# Extra arguments go to pytest: --nodus-device=cpu, --nodus-seed=SEED (replay a run), -k public.
# No cache of pytest's (nor pytest-benchmark's, where installed) lands in the workspace.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
exec {python} -m pytest --pyargs {suite} -p no:cacheprovider -p no:benchmark --rootdir="$here" \\
    --nodus-submission="$here/kernel.py" --nodus-against=starting_kernel "$@"
"""


class WorkspaceError(Exception):
    """What the command refuses, in one line."""


def _domain(domain) -> dict:
    described = {}
    for name, dim in domain.dims.items():
        if isinstance(dim, IntRange):
            described[name] = {"low": dim.low, "high": dim.high}
        elif isinstance(dim, Choice):
            described[name] = {"values": list(dim.values)}
    if domain.constraint_text:
        described["constraint"] = domain.constraint_text
    return described


def write(env_name: str, dest: Path, force: bool = False) -> list[Path]:
    known = installed_environments()
    if env_name not in known:
        raise WorkspaceError(f"no environment '{env_name}' is installed (installed: {', '.join(sorted(known)) or 'none'})")
    entry = known[env_name]
    env = entry.load()
    folder = Path(sys.modules[entry.module].__file__).parent
    dest = Path(dest)
    if dest.exists() and (not dest.is_dir() or any(dest.iterdir())) and not force:
        raise WorkspaceError(f"{dest} is not empty: an agent's kernel.py may be there (--force writes over it)")
    dest.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(folder / "TASK.md", dest / "TASK.md")
    shutil.copyfile(folder / "starting_kernel.py", dest / "kernel.py")
    sizes = {
        "environment": env.name, "version": env.version, "signature": env.contract.signature,
        "public_sizes": {kind: [dict(d) for d in p.sizes] for kind, p in env.profiles.items()},
        "fuzzed_size_domain": {kind: _domain(p.domain) for kind, p in env.profiles.items()},
    }
    (dest / "public_sizes.json").write_text(json.dumps(sizes, indent=2) + "\n")
    check = dest / "check.sh"
    check.write_text(CHECK.format(env=env.name, python=shlex.quote(sys.executable),
                                  suite=entry.module.rsplit(".", 1)[0]))
    check.chmod(0o755)
    return [dest / name for name in FILES]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="nodus-workspace", description=__doc__.split("\n")[0])
    parser.add_argument("environment", help=f"one of: {', '.join(sorted(installed_environments()))}")
    parser.add_argument("dest", type=Path)
    parser.add_argument("--force", action="store_true", help="write over a workspace that exists")
    args = parser.parse_args(argv)
    try:
        written = write(args.environment, args.dest, args.force)
    except WorkspaceError as exc:
        parser.error(str(exc))
    for path in written:
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
