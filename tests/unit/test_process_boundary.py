"""Which code runs in the submission's process is the folder it lives in.

``sandbox/`` (the submission's process) may import ``shared/`` and nothing else of the
package; ``shared/`` imports neither side; the package's ``__init__`` (run by both
processes) imports nothing of it at load. Every import counts, also one inside a function.
"""

from __future__ import annotations

import ast
import shutil
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "pytest_nodus"
ALLOWED = {"sandbox": ("pytest_nodus.sandbox", "pytest_nodus.shared"), "shared": ("pytest_nodus.shared",)}


def imported_modules(path: Path) -> list[tuple[int, str]]:
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found += [(node.lineno, f"{node.module}.{alias.name}") for alias in node.names]
    return found


def violations(package: Path) -> list[str]:
    found = []
    for room, allowed in ALLOWED.items():
        for path in sorted((package / room).rglob("*.py")):
            for line, module in imported_modules(path):
                if module.startswith("pytest_nodus") and not module.startswith(allowed):
                    found.append(f"{path.relative_to(package)}:{line} imports {module}")
    for line, module in imported_modules(package / "__init__.py"):
        if module.startswith("pytest_nodus"):
            found.append(f"__init__.py:{line} imports {module}")
    return found


def test_the_sandbox_and_the_shared_layer_import_nothing_of_the_grader():
    assert violations(PACKAGE) == []


def test_a_planted_sandbox_to_grader_import_is_found(tmp_path):
    copy = tmp_path / "pytest_nodus"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__"))
    harness = copy / "sandbox" / "harness.py"
    harness.write_text(harness.read_text() + "\n\ndef _late():\n    from pytest_nodus.grader import reward  # noqa\n")
    (copy / "shared" / "bits.py").write_text((copy / "shared" / "bits.py").read_text() + "\nimport pytest_nodus.sandbox.guard\n")
    found = violations(copy)
    assert any(v.startswith("sandbox/harness.py:") and v.endswith("imports pytest_nodus.grader.reward") for v in found)
    assert any(v.startswith("shared/bits.py:") and "pytest_nodus.sandbox.guard" in v for v in found)
