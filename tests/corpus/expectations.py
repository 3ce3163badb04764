"""The corpus's expected verdicts, read from each file's ``EXPECT`` (never by importing it).

A corpus file is a submission, so it is only ever run inside a sandbox; its declaration is
read here with ``ast``. ``python tests/corpus/expectations.py GRADE.json...`` checks grades
made on another device (``tools/gpu_check.sh cheats`` on the H200) against the files' "cuda"
entries and prints one line per grade, exiting non-zero on any mismatch.
"""

from __future__ import annotations

import ast
import json
import sys
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
CHEATS = REPO / "tests" / "cheats"
FLOOR = -24.0

# Where each corpus folder's environment suite lives, and the options its cheats are graded with.
SUITES = {
    # --nodus-fail-fast: a verdict is settled by the first failed size (the floor); the
    # rest of the suite would only cost CI time.
    # A call limit well under the CPU profile's 120 s, so that infinite_loop ends soon, yet
    # over what an honest interpreted call takes on the loaded 2-core CI machine: a kernel of
    # one program per row took over 3 s at the fuzz's 126 rows there.
    "rmsnorm": (REPO / "env_suites" / "rmsnorm", ("--nodus-call-timeout=10", "--nodus-fail-fast")),
    "attention_backward": (REPO / "env_suites" / "attention_backward", ("--nodus-fail-fast",)),
    "chunked_prefill": (REPO / "env_suites" / "chunked_prefill", ("--nodus-fail-fast",)),
    "moe_experts": (REPO / "env_suites" / "moe_experts", ("--nodus-fail-fast",)),
    "rmsnorm_audit": (REPO / "tests" / "envs" / "rmsnorm_audit" / "suite_rmsnorm_audit.py", ("--nodus-fail-fast",)),
}


@dataclass(frozen=True)
class Expected:
    path: Path
    env: str
    verdicts: dict  # device kind -> (status, flag codes of which at least one must be raised)
    known_hole: str | None

    @property
    def name(self) -> str:
        return f"{self.env}/{self.path.stem}"

    def matches(self, device: str, document: dict | None) -> str | None:
        """None when ``document`` is the expected verdict on ``device``; else why not."""
        if document is None:
            return "no grade"
        status, codes = self.verdicts[device]
        statuses = status if isinstance(status, tuple) else (status,)  # one, or any of several
        found = {f["code"] for f in document["flags"]}
        if document["reward"] != FLOOR:
            return f"reward {document['reward']} above the floor"
        if document["status"] not in statuses or not found & set(codes):
            return f"{document['status']} {sorted(found)}, expected {status} with one of {list(codes)}"
        return None


def read(path: Path) -> Expected:
    tree = ast.parse(path.read_text())
    values = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            if node.targets[0].id in ("EXPECT", "KNOWN_HOLE"):
                values[node.targets[0].id] = ast.literal_eval(node.value)
    if "EXPECT" not in values:
        raise ValueError(f"{path}: no EXPECT declaration")
    return Expected(path, path.parent.name, values["EXPECT"], values.get("KNOWN_HOLE"))


def corpus(device: str | None = None, env: str | None = None) -> list[Expected]:
    """Every cheat (optionally: expected on ``device``, of ``env``), by name."""
    found = [read(p) for p in sorted(CHEATS.glob("*/*.py"))]
    return [e for e in found if (device is None or device in e.verdicts) and (env is None or e.env == env)]


def main(paths: list[str]) -> int:
    by_name = {e.path.stem: e for e in corpus()}
    failed = 0
    for path in paths:
        name = Path(path).stem.removeprefix("cheat_")
        expected = by_name.get(name)
        if expected is None or "cuda" not in expected.verdicts:
            continue
        why = expected.matches("cuda", json.loads(Path(path).read_text()))
        failed += why is not None
        print(f"{expected.name:<48} {'as declared' if why is None else 'MISMATCH: ' + why}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
