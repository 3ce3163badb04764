"""Write the workspace an agent is given for an environment, and nothing sealed.

    nodus-workspace rmsnorm DEST [--suites env_suites]

DEST gets the task card (``TASK.md``), the starting kernel as ``kernel.py``, the public
sizes and size domains (``public_sizes.json``), and ``check.sh``, the local check: the
public suite run against ``kernel.py`` by the grader installed on the machine
(``NODUS_ENV_SUITES`` points at its ``env_suites``). Hidden sizes, the expert, the
expert-reviewed solution and any seed stay with the grader; ``tests/test_workspace.py``
proves none of them appears in what is written.
"""

from __future__ import annotations

import argparse
import importlib
import json
import shutil
import sys
from pathlib import Path

from pytest_nodus.grader.environment import Choice, IntRange

CHECK = """#!/usr/bin/env bash
# Local check: the public sizes and fuzzed sizes of '{env}', graded against kernel.py.
# Hidden sizes are graded only by the sealed grader. Extra arguments go to pytest
# (e.g. --nodus-device=cpu, --nodus-seed=SEED to replay a run).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
suites="${{NODUS_ENV_SUITES:?set NODUS_ENV_SUITES to the env_suites directory of the grader installation}}"
exec python3 -m pytest "$suites/{env}" -p no:cacheprovider --nodus-submission="$here/kernel.py" "$@"
"""


def _domain(domain) -> dict:
    described = {}
    for name, dim in domain.dims.items():
        if isinstance(dim, IntRange):
            described[name] = {"low": dim.low, "high": dim.high}
        elif isinstance(dim, Choice):
            described[name] = {"values": list(dim.values)}
    return described


def write(env_name: str, dest: Path, suites: Path) -> list[Path]:
    folder = Path(suites) / env_name
    sys.path.insert(0, str(Path(suites).resolve().parent))
    env = importlib.import_module(f"{Path(suites).name}.{env_name}.environment").ENVIRONMENT
    dest = Path(dest)
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
    check.write_text(CHECK.format(env=env.name))
    check.chmod(0o755)
    return sorted(dest.iterdir())


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="nodus-workspace", description=__doc__.split("\n")[0])
    parser.add_argument("environment")
    parser.add_argument("dest", type=Path)
    parser.add_argument("--suites", type=Path, default=Path("env_suites"))
    args = parser.parse_args(argv)
    if not (args.suites / args.environment / "environment.py").is_file():
        parser.error(f"no environment '{args.environment}' under {args.suites}")
    for path in write(args.environment, args.dest, args.suites):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
